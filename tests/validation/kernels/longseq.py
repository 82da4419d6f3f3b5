#!/usr/bin/env python3
"""Long sequences on one GPU: a torchtitan-style Llama (tools/fsdp/train.py, Llama-3-8B's shape cut
to 8 layers, full activation checkpointing, SDPA's flash kernel) at 8k-49k tokens, compiled per
block and eager, on one H200 at its 700 W limit (tests/data/fsdp/runs_longseq.csv, one device call,
PyTorch 2.11, 2026-11-29; configurations and the predictions written before the runs in
tools/fsdp/configs_longseq.csv).

It asks whether the step time grows with the sequence as parplan prices it: attention's share of a
step goes from about an eighth at 8k tokens to over half at 49k, so a wrong attention rate, or a
wrong per-query-block cost (time.c fsdp_sdpa's s0), shows as an error that moves with the length.
The published torchtitan rows at 32k-262k (tests/data/published/runs.csv tt2412-04..07, -15..-18)
run 10-36% slower than predicted, more so the longer the sequence; these runs separate one GPU's
kernels from the rest of those runs (the 500 W limit of their H100s, float8, the exchange).

TAP, through the binary (`parplan check` with the flags each row states):
  - every run's step time within 10% of the prediction, and its allocator peak within 2%;
  - the errors at 8k-49k (compiled) spread by at most 3 points: the growth with the sequence is
    priced;
  - the GPU ran the steps at its power limit (tests/data/fsdp/longseq_power.csv, nvidia-smi every
    250 ms, with the driver's timestamps in longseq_driver.log): median draw above 90% of the limit
    and the SM clock below its 1980 MHz maximum, which is why a lower limit slows these kernels
    (planner/model/gpu_power.c).
usage: longseq.py PARPLAN SOURCE_ROOT
"""
import datetime
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap_checks import each_predicted, fsdp_run_args, fsdp_table, report  # noqa: E402 (tests/validation/tap_checks.py)

H200_MAX_SM_MHZ = 1980  # nvidia-smi's clocks.max.sm on the lent H200 (idle samples of the power file read 1980)


def rows(root):
    return fsdp_table(root, "runs_longseq.csv")


def args_of(root, r):
    """The `parplan check` flags that state the run (tools/fsdp/configs_longseq.csv's header)."""
    return fsdp_run_args(root, r["flavor"], int(r["gpus"]), int(r["mbs"]), int(r["seq"]), r["ac"],
                         reshard=r["reshard_after_forward"] == "true", compile=r["compile"] == "1", layers=r["layers"])


def power_by_run(root):
    """{run name: (median W, limit W, median SM MHz)} over the samples at full utilisation in the
    second half of each run's interval (its steps, after set-up and compilation)."""
    samples = []
    with open(os.path.join(root, "tests/data/fsdp/longseq_power.csv")) as f:
        for line in f:
            p = [x.strip() for x in line.split(",")]
            if len(p) < 6 or p[0].startswith("timestamp"):
                continue
            t = datetime.datetime.strptime(p[0], "%Y/%m/%d %H:%M:%S.%f")
            samples.append((t, float(p[1].split()[0]), float(p[2].split()[0]), float(p[3].split()[0]),
                            float(p[5].split()[0])))
    events = []
    with open(os.path.join(root, "tests/data/fsdp/longseq_driver.log")) as f:
        for line in f:
            events.append((datetime.datetime.strptime(line[:19], "%Y/%m/%d %H:%M:%S"), line[20:].split()))
    out = {}
    for (t0, _), (t1, words) in zip(events, events[1:]):
        if len(words) < 2 or words[0] != "fsdp" or not words[1].endswith(":"):
            continue
        busy = [s for s in samples if t0 < s[0] <= t1 and s[4] >= 95]
        busy = busy[len(busy) // 2:]
        if busy:
            out[words[1][:-1]] = (statistics.median(s[1] for s in busy), busy[0][2],
                                  statistics.median(s[3] for s in busy))
    return out


def main():
    parplan, root = sys.argv[1], sys.argv[2]
    checks = []
    errs = {}
    runs = rows(root)
    for r, d, meas, err, peak, perr in each_predicted(parplan, runs, lambda r: args_of(root, r), 6, checks):
        if r["compile"] == "1":
            errs[int(r["seq"])] = err
        checks.append((abs(err) <= 10.0, f"{r['name']} ({r['seq']} tokens, {'compiled' if r['compile'] == '1' else 'eager'}): "
                                         f"predicted {d['step_time_s']:.3f} s, measured {meas:.3f} s, {err:+.1f}%"))
        checks.append((abs(perr) <= 2.0, f"{r['name']}: peak predicted {peak:.0f} MiB, measured {float(r['max_alloc_mib']):.0f} "
                                         f"MiB, {perr:+.1f}%"))
    if len(errs) == 4:
        spread = max(errs.values()) - min(errs.values())
        checks.append((spread <= 3.0, "compiled, 8k-49k tokens: the errors " +
                       ", ".join(f"{s // 1024}k {e:+.1f}%" for s, e in sorted(errs.items())) +
                       f" spread {spread:.1f} points (<= 3): the growth with the sequence is priced"))
    pw = power_by_run(root)
    checks.append((len(pw) == len(runs), f"power samples for {len(pw)} of {len(runs)} runs"))
    for name, (w, limit, mhz) in sorted(pw.items()):
        checks.append((w >= 0.9 * limit and mhz < H200_MAX_SM_MHZ,
                       f"{name}: median {w:.0f} W of its {limit:.0f} W limit, SM clock median {mhz:.0f} MHz "
                       f"(maximum {H200_MAX_SM_MHZ}): at the power limit"))
    return report(checks)


if __name__ == "__main__":
    sys.exit(main())
