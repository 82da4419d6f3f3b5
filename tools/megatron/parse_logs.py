#!/usr/bin/env python3
"""Parse the logs of tools/megatron/run_configs.py into tests/data/megatron/runs.csv.

One row per (launch, reporting rank). Megatron prints memory only on data-parallel rank 0, so a
DP=2 run has one row, a TP=2 or PP=2 run two. Columns:
  name, model, gpus, tp, pp, dp, vpp, mbs, gbs, seq, dist_opt, recompute  - the configuration
  rank, pp_stage                       - reporting rank and its pipeline stage (Megatron orders
                                         ranks tp fastest, then dp, then pp: rank // (tp * dp))
  oom                                  - 1 when the launch ran out of GPU memory
  alloc_mib                            - allocated after the last reported iteration (static state)
  max_alloc_mib                        - torch.cuda.max_memory_allocated over the run (the peak)
  max_reserved_mib                     - torch.cuda.max_memory_reserved
  smi_peak_mib                         - largest nvidia-smi memory.used on that GPU during the slot
  megatron_est_mib                     - Megatron's "Theoretical memory footprints" total (rank 0)
  iter_ms                              - elapsed time per iteration of the last iteration
  tflops_per_gpu                       - Megatron's reported throughput of the last iteration
  ep, iters                            - expert parallel size and iterations run (configs_moe.csv)
  iter_ms_med                          - median elapsed time of iterations 3.. (2 warm-up)
For OOM launches the memory columns are empty (the run died before reporting).

    python3 tools/megatron/parse_logs.py LOGDIR [CONFIGS.csv] > tests/data/megatron/runs.csv
"""
import csv
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

MEM = re.compile(r"\[Rank (\d+)\] \(after (\d+) iterations\) memory \(MB\) \| allocated: ([\d.]+) \| "
                 r"max allocated: ([\d.]+) \| reserved: ([\d.]+) \| max reserved: ([\d.]+)")
EST = re.compile(r"Theoretical memory footprints: weight and optimizer=([\d.]+) MB, "
                 r"activation=([\d.]+) MB, total=([\d.]+) MB")
ITER = re.compile(r"iteration\s+(\d+)/\s*\d+ \|.*elapsed time per iteration \(ms\): ([\d.]+)"
                  r"(?: \| throughput per GPU \(TFLOP/s/GPU\): ([\d.]+))?")
OOM = re.compile(r"OutOfMemoryError|CUDA out of memory")


def read_configs(path=None):
    with open(path or os.path.join(HERE, "configs.csv")) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def smi_peaks(logdir, slot):
    """Largest memory.used (MiB) per GPU index over the slot."""
    peaks = {}
    path = os.path.join(logdir, f"smi_slot{slot}.csv")
    if not os.path.exists(path):
        return peaks
    for line in open(path):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 2 or not parts[0].isdigit():
            continue
        i, used = int(parts[0]), float(parts[1])
        peaks[i] = max(peaks.get(i, 0.0), used)
    return peaks


def gpu_of_rank(logtext, rank):
    m = re.search(r"# gpus ([\d,]+)", logtext)
    devs = [int(x) for x in m.group(1).split(",")] if m else [rank]
    return devs[rank] if rank < len(devs) else rank


def main():
    logdir = sys.argv[1]
    configs = sys.argv[2] if len(sys.argv) > 2 else None
    cols = ["name", "model", "gpus", "tp", "pp", "dp", "vpp", "mbs", "gbs", "seq", "dist_opt",
            "recompute", "rank", "pp_stage", "oom", "alloc_mib", "max_alloc_mib",
            "max_reserved_mib", "smi_peak_mib", "megatron_est_mib", "iter_ms", "tflops_per_gpu", "ep", "iters", "iter_ms_med"]
    w = csv.writer(sys.stdout, lineterminator="\n")
    gpus = "one NVIDIA H200" if configs else "2 x NVIDIA H200"
    print(f"# Real Megatron-LM runs on {gpus} (143771 MiB each), PyTorch 2.11, local "
          "transformer implementation, bf16; configurations in "
          f"tools/megatron/{os.path.basename(configs or 'configs.csv')}, "
          "logs parsed by tools/megatron/parse_logs.py. Memory in MiB (PyTorch allocator figures).")
    w.writerow(cols)
    for c in read_configs(configs):
        path = os.path.join(logdir, c["name"] + ".log")
        if not os.path.exists(path):
            continue  # not run (skipped slot)
        text = open(path, errors="replace").read()
        oom = 1 if OOM.search(text) else 0
        last = {}
        for m in MEM.finditer(text):
            rank = int(m.group(1))
            last[rank] = m  # the last report carries the max over the whole run
        est = EST.findall(text)
        est_total = est[-1][2] if est else ""
        iters = ITER.findall(text)
        iter_ms = iters[-1][1] if iters else ""
        tflops = iters[-1][2] if iters else ""
        timed = sorted(float(t) for i, t, _ in iters if int(i) >= 3)
        med = ""
        if timed:
            k = len(timed)
            med = f"{(timed[k // 2] if k % 2 else (timed[k // 2 - 1] + timed[k // 2]) / 2):.1f}"
        extra = [c.get("ep") or "1", c.get("iters") or "3"]
        base = [c["name"], c["model"], c["gpus"], c["tp"], c["pp"], c["dp"], c.get("vpp", "1") or "1",
                c["mbs"], c["gbs"], c["seq"], c["dist_opt"], c["recompute"]]
        exit_ok = re.search(r"# exit 0 ", text) is not None
        if oom or not last:
            if not oom and not exit_ok:
                print(f"warning: {c['name']}: no memory report and no OOM", file=sys.stderr)
                continue
            w.writerow(base + [0, 0, oom, "", "", "", "", est_total, "", ""] + extra + [""])
            continue
        peaks = smi_peaks(logdir, c["slot"])
        tp, dp = int(c["tp"]), int(c["dp"])
        for rank in sorted(last):
            m = last[rank]
            smi = peaks.get(gpu_of_rank(text, rank), "")
            w.writerow(base + [rank, rank // (tp * dp), oom, m.group(3), m.group(4), m.group(6),
                               smi, est_total if rank == 0 else "", iter_ms, tflops] + extra + [med])
    return 0


if __name__ == "__main__":
    sys.exit(main())
