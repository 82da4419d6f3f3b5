#!/usr/bin/env python3
"""parplan's predictions for the runs of tools/deepspeed/runs.csv, appended to
tests/data/deepspeed/predictions.csv for the rows it does not have yet (the rows there stay as
they were committed: a held-out run's prediction is written before its device call).

  python3 tools/deepspeed/predict.py PARPLAN [SPLIT]

Each run as `parplan check` flags (the user's): the model and its layer cut, two H200s, the
sequence, micro-batch, global batch (micro-batch x accumulation x 2 ranks), the run's DeepSpeed
config file and the recompute (gradient checkpointing: full)."""
import csv
import json
import os
import shlex
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PRED = os.path.join(ROOT, "tests", "data", "deepspeed", "predictions.csv")


def run_args(r):
    mbs, gas = int(r["mbs"]), int(r["gas"])
    return (f"--model {r['shape']} --layers {r['layers']} --gpu h200 --gpus 2 --seq {r['seq']} --mbs {mbs} "
            f"--gbs {mbs * gas * 2} --deepspeed-config tools/deepspeed/configs/{r['config']} "
            f"--recompute {'full' if r['ckpt'] == '1' else 'none'}")


def main():
    parplan, split = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None
    with open(os.path.join(ROOT, "tools", "deepspeed", "runs.csv")) as f:
        runs = list(csv.DictReader(l for l in f if not l.startswith("#")))
    have = []
    if os.path.exists(PRED):
        with open(PRED) as f:
            have = list(csv.DictReader(f))
    names = {r["name"] for r in have}
    for r in runs:
        if r["name"] in names or (split and r["split"] != split):
            continue
        args = run_args(r)
        out = subprocess.run([parplan, "check", "--json", "-q"] + shlex.split(args), capture_output=True, text=True,
                             cwd=ROOT)
        d = json.loads(out.stdout)
        have.append(dict(name=r["name"], split=r["split"], parplan_args=args,
                         pred_peak_mib=round(d["peak_bytes"] / 2**20), pred_step_s=round(d["step_time_s"], 4)))
        print(have[-1])
    with open(PRED, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["name", "split", "parplan_args", "pred_peak_mib", "pred_step_s"])
        w.writeheader()
        w.writerows(have)


if __name__ == "__main__":
    main()
