#!/usr/bin/env python3
"""Turn the device logs of tools/launch/real_runs.sh into tests/data/launch/real_runs.csv.

Per generated script (tests/data/launch/scripts/NAME.sh, log NAME.log): did it run (exit 0 and
5 iterations logged), the elapsed time per iteration (median of iterations 3-5; 1-2 are
warm-up), and Megatron's "max allocated" (torch.cuda.max_memory_allocated, MiB) of each rank
that prints it (data-parallel rank 0 of every model-parallel rank). Each prediction row of
PRED (gen_real_runs --predict) becomes one CSV row next to the measurements, with the errors.
Also copies the log lines that matter into LOGS_OUT/NAME.log (small logs for the repository).

    python3 tools/launch/parse_real_runs.py --logs DIR --pred pred.csv --scripts tests/data/launch/scripts
        --commands commands.csv --out tests/data/launch/real_runs.csv --logs-out tests/data/launch/logs
"""
import argparse
import csv
import os
import re
import statistics

ITER = re.compile(r"iteration\s+(\d+)/\s*(\d+) \|.*elapsed time per iteration \(ms\): ([0-9.]+)")
MEM = re.compile(r"\[Rank (\d+)\] \(after (\d+) iterations\) memory \(MB\) \| allocated: ([0-9.]+) \| "
                 r"max allocated: ([0-9.]+) \| reserved: ([0-9.]+) \| max reserved: ([0-9.]+)")
EXIT = re.compile(r"^# exit (\d+) wall_s (\d+)")
KEEP = re.compile(r"iteration\s+\d+/|memory \(MB\)|^# |Theoretical memory|number of parameters|"
                  r"Parse pipeline|PP rank|Error|error:|Traceback")


def parse_log(path):
    iters, mem, rc, wall = {}, {}, None, None
    kept = []
    with open(path, errors="replace") as f:
        for line in f:
            m = ITER.search(line)
            if m:
                iters[int(m.group(1))] = float(m.group(3))
            m = MEM.search(line)
            if m:
                rank, it = int(m.group(1)), int(m.group(2))
                mem[rank] = (it, float(m.group(4)), float(m.group(6)))  # last seen: max allocated, max reserved
            m = EXIT.search(line)
            if m:
                rc, wall = int(m.group(1)), int(m.group(2))
            if KEEP.search(line):
                kept.append(line.rstrip("\n")[:400])
    return iters, mem, rc, wall, kept


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logs", required=True)
    ap.add_argument("--pred", required=True)
    ap.add_argument("--scripts", required=True)
    ap.add_argument("--commands", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--logs-out", required=True)
    opt = ap.parse_args()
    preds = list(csv.DictReader(open(opt.pred)))
    cmds = {r["name"]: r["command"] for r in csv.DictReader(open(opt.commands))}
    os.makedirs(opt.logs_out, exist_ok=True)
    rows = []
    for script in sorted(os.listdir(opt.scripts)):
        name = script[:-3]
        log = os.path.join(opt.logs, name + ".log")
        iters, mem, rc, wall, kept = parse_log(log) if os.path.exists(log) else ({}, {}, None, None, [])
        with open(os.path.join(opt.logs_out, name + ".log"), "w") as f:
            f.write("\n".join(kept) + "\n")
        steady = [iters[i] for i in (3, 4, 5) if i in iters]
        ran = rc == 0 and len(iters) >= 5
        step_ms = statistics.median(steady) if len(steady) == 3 else None
        alloc = {r: v[1] for r, v in mem.items()}
        for p in (p for p in preds if p["name"] == name):
            row = {"name": name, "script": f"tests/data/launch/scripts/{script}", "command": cmds.get(name, ""),
                   "ran": "yes" if ran else "no", "exit": rc, "wall_s": wall,
                   "iter_ms_1_to_5": " ".join(f"{iters[i]:.1f}" for i in sorted(iters)),
                   "step_ms_median_3_5": f"{step_ms:.1f}" if step_ms else "",
                   "max_allocated_mib_rank0": f"{alloc[0]:.2f}" if 0 in alloc else "",
                   "max_allocated_mib_rank1": f"{alloc[1]:.2f}" if 1 in alloc else "",
                   "predicted_for": p["predicted_for"]}
            pp = "pp2" in name
            pred_r = [float(p["predicted_peak_bytes_stage0"]),
                      float(p["predicted_peak_bytes_stage1"] if pp else p["predicted_peak_bytes_stage0"])]
            row["predicted_peak_mib_rank0"] = f"{pred_r[0] / 2**20:.2f}"
            row["predicted_peak_mib_rank1"] = f"{pred_r[1] / 2**20:.2f}"
            for r in (0, 1):
                row[f"peak_error_pct_rank{r}"] = (f"{100 * (pred_r[r] / 2**20 - alloc[r]) / alloc[r]:+.1f}"
                                                  if r in alloc else "")
            row["predicted_step_ms"] = f"{1000 * float(p['predicted_step_s']):.1f}"
            row["step_error_pct"] = (f"{100 * (1000 * float(p['predicted_step_s']) - step_ms) / step_ms:+.1f}"
                                     if step_ms else "")
            rows.append(row)
    fields = ["name", "predicted_for", "ran", "exit", "wall_s", "iter_ms_1_to_5", "step_ms_median_3_5",
              "predicted_step_ms", "step_error_pct", "max_allocated_mib_rank0", "predicted_peak_mib_rank0",
              "peak_error_pct_rank0", "max_allocated_mib_rank1", "predicted_peak_mib_rank1",
              "peak_error_pct_rank1", "script", "command"]
    with open(opt.out, "w", newline="") as f:
        f.write("# Real Megatron-LM runs of parplan-generated launch scripts, 2 x H200, 5 iterations.\n"
                "# Measured: 'elapsed time per iteration' (median of iterations 3-5) and 'max allocated'\n"
                "# (torch.cuda.max_memory_allocated, MiB) per printing rank; DP rank 1 of r1 is a replica and does\n"
                "# not print. Predicted: parplan's memory and time models (gen_real_runs --predict); one row per\n"
                "# prediction variant (see tests/data/launch/README.md). Errors: (predicted - measured) / measured.\n")
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    for r in rows:
        print(r["name"], r["predicted_for"], r["ran"], r["step_ms_median_3_5"], r["predicted_step_ms"],
              r["step_error_pct"], r["max_allocated_mib_rank0"], r["predicted_peak_mib_rank0"],
              r["peak_error_pct_rank0"], r["max_allocated_mib_rank1"], r["predicted_peak_mib_rank1"],
              r["peak_error_pct_rank1"])


if __name__ == "__main__":
    main()
