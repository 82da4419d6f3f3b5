#!/usr/bin/env python3
"""Parse the logs of tools/node4/run_node.sh into tests/data/node4/runs.csv and keep each log's
lines that matter in tests/data/node4/logs/NAME.log.

    python3 tools/node4/parse_node.py OUT_DIR LOGDIR...     (LOGDIR: node4_dense, node4_moe)

The kept log is what `parplan check --megatron-args` reads (the run header, Megatron's argument
dump, the "padded vocab" line), then every iteration and memory line and the exit line.
runs.csv has one row per (run, rank), columns:
  name, list           - the run and its run list (dense_h200, moe)
  gpus, rank, pp_stage - world size, global rank, its pipeline stage (rank // (world / pp))
  routing              - balanced (--moe-router-force-load-balancing), aux (learned router with
                         the aux loss), or - for dense models
  oom                  - 1 when the run ran out of GPU memory
  max_alloc_mib        - torch.cuda.max_memory_allocated over the run, the last report (MiB)
  max_reserved_mib     - torch.cuda.max_memory_reserved over the run
  smi_peak_mib         - the largest nvidia-smi memory.used of the rank's GPU during the run
  outside_mib          - smi_peak_mib - max_reserved_mib: memory outside PyTorch's allocator
  iter_ms_med          - median elapsed time per iteration of iterations 3.. (two warm-up)
  iter_ms_min, iters   - the fastest of those, and the iterations run
For OOM runs the memory and time columns are empty.
"""
import os
import re
import statistics
import sys

MEM = re.compile(r"\[Rank (\d+)\] \(after (\d+) iterations\) memory \(MB\) \| allocated: ([\d.]+) \| "
                 r"max allocated: ([\d.]+) \| reserved: ([\d.]+) \| max reserved: ([\d.]+)")
ITER = re.compile(r"iteration\s+(\d+)/\s*(\d+) \|.*elapsed time per iteration \(ms\): ([\d.]+)")
OOM = re.compile(r"OutOfMemoryError|CUDA out of memory")
KEEP = re.compile(r"^# |padded vocab|iteration\s+\d+/|memory \(MB\)|OutOfMemoryError|"
                  r"Theoretical memory|number of parameters")


def keep_lines(text):
    out, in_args = [], False
    for line in text.splitlines():
        if "------------------------ arguments ------------------------" in line:
            in_args = True
        if in_args or KEEP.search(line):
            out.append(line)
        if "end of arguments" in line:
            in_args = False
    return "\n".join(out) + "\n"


def smi_peaks(path):
    peaks = {}
    if os.path.exists(path):
        for line in open(path):
            p = [x.strip() for x in line.split(",")]
            if len(p) >= 3 and p[1].isdigit():
                try:
                    peaks[int(p[1])] = max(peaks.get(int(p[1]), 0.0), float(p[2]))
                except ValueError:
                    pass
    return peaks


def gpu_line(path):
    """'4 x NVIDIA H100 80GB HBM3 (81559 MiB), PyTorch 2.11.0+cu130' from run_node.sh's gpus.csv."""
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return "4 GPUs"
    gpus = [l.split(", ") for l in lines if re.match(r"\d+, ", l)]
    torch = next((l.split()[1] for l in lines if l.startswith("torch ")), "?")
    if not gpus:
        return "4 GPUs"
    return "%d x %s (%s), PyTorch %s" % (len(gpus), gpus[0][1], gpus[0][2], torch)


def arg(text, key):
    m = re.search(r"^\s*%s \.+ (\S+)" % key, text, re.M)
    return m.group(1) if m else None


def main():
    out, logdirs = sys.argv[1], sys.argv[2:]
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    rows = []
    gpu = None
    for d in logdirs:
        lst = next(f[:-4] for f in sorted(os.listdir(d)) if f.endswith(".csv") and f != "gpus.csv")
        order = [l.split(",")[0:2] for l in open(os.path.join(d, lst + ".csv"))
                 if l[0] != "#" and not l.startswith("name,")]
        if gpu is None:
            gpu = gpu_line(os.path.join(d, "gpus.csv"))
        for name, slot in order:
            # LIST/NAME: another list's script, run again (run_node.sh logs it as NAME.log); kept
            # here as NAME_<list> so that it cannot take the place of this list's own NAME
            rerun = "/" in name
            name = name.split("/")[-1]
            path = os.path.join(d, name + ".log")
            if rerun:
                name = name + "_" + lst.split("_")[-1]
            if not os.path.exists(path):
                continue
            text = open(path, errors="replace").read()
            with open(os.path.join(out, "logs", name + ".log"), "w") as f:
                f.write(keep_lines(text))
            world = int(arg(text, "world_size") or 1)
            pp = int(arg(text, "pipeline_model_parallel_size") or 1)
            experts = arg(text, "num_experts")
            routing = "-"
            if experts not in (None, "None"):
                routing = "balanced" if "force-load-balancing" in text.split("\n", 1)[0] else "aux"
            devs = [int(x) for x in re.search(r"# run \S+ slot \d+ gpus ([\d,]+)", text).group(1).split(",")]
            iters = [(int(i), float(t)) for i, n, t in ITER.findall(text)]
            timed = [t for i, t in iters if i >= 3]
            med = "%.1f" % statistics.median(timed) if timed else ""
            mn = "%.1f" % min(timed) if timed else ""
            oom = 1 if OOM.search(text) else 0
            last = {}
            for m in MEM.finditer(text):
                last[int(m.group(1))] = m
            peaks = smi_peaks(os.path.join(d, "smi_slot%s.csv" % slot))
            if oom or not last:
                rows.append([name, lst, world, "", "", routing, oom, "", "", "", "", "", "", len(iters)])
                continue
            for r in sorted(last):
                m = last[r]
                smi = peaks.get(devs[r]) if r < len(devs) else None
                res = float(m.group(6))
                rows.append([name, lst, world, r, r // (world // pp), routing, oom, m.group(4),
                             m.group(6), "%.0f" % smi if smi else "",
                             "%.0f" % (smi - res) if smi else "", med, mn, len(iters)])
    lists = ",".join(next(f[:-4] for f in sorted(os.listdir(d)) if f.endswith(".csv") and f != "gpus.csv")
                     for d in logdirs)
    print("# Megatron-LM runs on one node of %s, local transformer implementation, bf16, mock data; "
          "run lists tools/node4/{%s}.csv, scripts tests/data/node4/scripts/, parsed by "
          "tools/node4/parse_node.py (column meanings in its docstring). Memory in MiB." % (gpu, lists))
    print("name,list,gpus,rank,pp_stage,routing,oom,max_alloc_mib,max_reserved_mib,smi_peak_mib,"
          "outside_mib,iter_ms_med,iter_ms_min,iters")
    for r in rows:
        print(",".join(str(x) for x in r))


if __name__ == "__main__":
    main()
