#!/usr/bin/env python3
"""SDPA's two kernels under --framework fsdp against real training steps (tests/data/fsdp/sdpa/runs.csv:
tools/fsdp/train.py on one lent H200, each configuration with FlashAttention-2 and with cuDNN pinned).
The cuDNN constants of planner/cost/time.c were fitted on kernel timings alone
(tests/data/profiles/h200.torch.jsonl), not on these steps: every step within 10% of `parplan check
ARGS`, and for each configuration the step's cuDNN / flash ratio within 3 points of the measured one.

usage: sdpa_runs.py PARPLAN SOURCE_ROOT"""
import csv
import json
import os
import shlex
import subprocess
import sys


def main():
    exe, root = os.path.abspath(sys.argv[1]), sys.argv[2]
    with open(os.path.join(root, "tests/data/fsdp/sdpa/runs.csv"), newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    pred = {}
    configs = sorted(set(r["name"].rsplit("_", 1)[0] for r in rows))
    print("1..%d" % (len(rows) + len(configs)))
    k = 0
    for r in rows:
        k += 1
        p = subprocess.run([exe, "check"] + shlex.split(r["parplan_args"]) + ["--json", "-q"], cwd=root,
                           capture_output=True, text=True)
        try:
            ms = 1e3 * float(json.loads(p.stdout)["step_time_s"])
        except (ValueError, KeyError, TypeError):
            print("not ok %d - %s: exit %d, no usable JSON: %s" % (k, r["name"], p.returncode, p.stderr[:200]))
            continue
        meas = float(r["step_ms"])
        pred[r["name"]] = (ms, meas)
        err = 100.0 * (ms / meas - 1)
        print("%s %d - %s: predicted %.1f ms, measured %.1f ms, error %+.1f%% (bound 10%%)" % (
            "ok" if abs(err) <= 10 else "not ok", k, r["name"], ms, meas, err))
    for c in configs:
        k += 1
        f, d = pred.get(c + "_flash"), pred.get(c + "_cudnn")
        if not f or not d:
            print("not ok %d - %s: both kernels' rows needed" % (k, c))
            continue
        rp, rm = d[0] / f[0], d[1] / f[1]
        print("%s %d - %s: cuDNN / flash step %.3f predicted, %.3f measured (within 0.03)" % (
            "ok" if abs(rp - rm) <= 0.03 else "not ok", k, c, rp, rm))


if __name__ == "__main__":
    main()
