#!/usr/bin/env python3
"""The DeepSpeed device runs as one table, tests/data/deepspeed/runs.csv (test deepspeed-runs):
per run its split, parplan's flags for it (tools/deepspeed/predict.py's), the allocated peak (the
largest torch.cuda.max_memory_allocated over the ranks and the steps, MiB) and the step time (the
median of steps 1-5; step 0 builds the optimizer state and the kernels).

  python3 tools/deepspeed/parse_runs.py

The calibrate runs' peaks come from calibrate/ds_runs.jsonl, which ran the loop as the Trainer does
(the model's output dropped but for the loss); their step times from calibrate/ds_runs_first.jsonl,
the same runs before that change and without the profiler (keeping the 16-bit logits moved the
peak by their 1,002 MiB and no kernel)."""
import csv
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from predict import run_args  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "deepspeed")


def load(rel):
    with open(os.path.join(DATA, rel)) as f:
        return {r["name"]: r for r in map(json.loads, f)}


def main():
    with open(os.path.join(DATA, "..", "..", "..", "tools", "deepspeed", "runs.csv")) as f:
        runs = list(csv.DictReader(l for l in f if not l.startswith("#")))
    mem, first = load("calibrate/ds_runs.jsonl"), load("calibrate/ds_runs_first.jsonl")
    held = {**load("holdout/ds_runs.jsonl"), **load("holdout2/ds_runs.jsonl")}
    out = []
    for r in runs:
        if r["split"] == "calibrate":
            pk, st, src = mem[r["name"]], first[r["name"]], "calibrate/ds_runs.jsonl (peak), ds_runs_first.jsonl (step)"
        else:
            pk = st = held[r["name"]]
            src = "%s/ds_runs.jsonl" % r["split"]
        steps = [s["step_s"] for s in st["steps"][1:]]
        out.append(dict(name=r["name"], split=r["split"], parplan_args=run_args(r),
                        peak_mib="%.0f" % (pk["peak_alloc_max_ranks"] / 2**20),
                        step_s="%.4f" % statistics.median(steps), source=src))
    with open(os.path.join(DATA, "runs.csv"), "w", newline="") as f:
        f.write("# DeepSpeed ZeRO on two H200s (tools/deepspeed: DeepSpeed 0.19.8, transformers 5.17, PyTorch 2.11),\n"
                "# written by tools/deepspeed/parse_runs.py; test deepspeed-runs checks parplan against it.\n")
        w = csv.DictWriter(f, fieldnames=list(out[0].keys()))
        w.writeheader()
        w.writerows(out)
    print("%d runs" % len(out))


if __name__ == "__main__":
    main()
