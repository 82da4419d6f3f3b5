#!/usr/bin/env python3
"""The loss compiled with the model (--compile-loss: torchtitan's default with compile since
2025-02, compile.components ["model", "loss"]), end to end: three runs of tools/fsdp/train.py
--compile --compile-loss on one and two H200s (Llama-3-8B's shape cut to 8 layers at 32k tokens,
full AC; and all 32 layers at 2 x 8192 tokens with selective AC, the layout of the published Trainy
H200 rows), the allocator's history recorded (tests/data/fsdp/runs_loss_compile.csv,
tests/data/fsdp/loss_compile/; one device call, PyTorch 2.11, 2026-11-30; predictions of the eager
loss written before the runs in tools/fsdp/configs_loss_compile.csv). Their eager-loss twins are
runs_reserved.csv's mh_g1_s32k_c and mh_dp2_s32k_c. And under TP's loss_parallel (two H200s, FSDP2 +
TP 2, 32k tokens: tests/data/fsdp/runs_loss_tp.csv, tests/data/fsdp/loss_tp/, the same call's
fourth pass), the loss eager and compiled: the compiled one's bytes a logit at its backward are read
off that run's allocator history (memory_fsdp.c FSDP_LOSS_COMPILED_PARALLEL_BWD), so its peak checks
the reading, and the eager twin checks the eager loss_parallel figures independently.

TAP, through the binary (`parplan check` with the flags each row states, --compile-loss included):
  - every run's allocated peak within 1%, its reserved peak (peak + cached_bytes) within 3%, its
    step within 8%;
  - against each eager-loss twin, what compiling the loss takes off the peak (within 1%) and off the
    step (within 30%: the 4 + 4 bytes a logit of time.c's EW_FSDP_CE_COMPILED_*, from the kernels'
    passes, against eager's 22 + 26);
  - the compute stream holds no freed-logits block at the reserved maximum (under 1 GiB free): the
    compiled loss keeps the logits to its backward, so memory_fsdp.c adds none; the eager TP run
    holds one of at least its logits' shard.
usage: loss_compile.py PARPLAN SOURCE_ROOT
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap_checks import check_json, each_predicted, fsdp_row_args, fsdp_table, report  # noqa: E402

MIB = 1024.0 * 1024.0
TWINS = {"lc_g1_s32k_c": "mh_g1_s32k_c", "lc_dp2_s32k_c": "mh_dp2_s32k_c"}


def table(root, name):
    return {r["name"]: r for r in fsdp_table(root, name)}


def args_of(root, r):
    return fsdp_row_args(root, r) + (["--expandable-segments"] if r["alloc"] == "expandable" else [])


def main():
    parplan, root = sys.argv[1], sys.argv[2]
    checks = []
    runs = table(root, "runs_loss_compile.csv")
    tp_runs = table(root, "runs_loss_tp.csv")
    runs.update(tp_runs)
    twins = table(root, "runs_reserved.csv")
    got = {}
    for r, d, meas, err, peak, perr in each_predicted(parplan, list(runs.values()), lambda r: args_of(root, r), 5,
                                                    checks):
        name = r["name"]
        got[name] = (d, meas, peak)
        res = (d["peak_bytes"] + d["stages"][0]["cached_bytes"]) / MIB
        rerr = 100.0 * (res / float(r["max_reserved_mib"]) - 1)
        checks.append((abs(perr) <= 1.0, f"{name}: allocated peak predicted {peak:.0f} MiB, measured "
                                         f"{float(r['max_alloc_mib']):.0f} MiB, {perr:+.2f}%"))
        checks.append((abs(rerr) <= 3.0, f"{name}: reserved peak predicted {res:.0f} MiB, measured "
                                         f"{float(r['max_reserved_mib']):.0f} MiB, {rerr:+.2f}%"))
        checks.append((abs(err) <= 8.0, f"{name}: step predicted {d['step_time_s']:.3f} s, measured {meas:.3f} s, "
                                        f"{err:+.1f}%"))
        with open(os.path.join(root, "tests/data/fsdp", "loss_tp" if name in tp_runs else "loss_compile",
                               name + ".json")) as f:
            h = json.load(f)
        free = [s["free"] for s in h["at_max_reserved_by_stream"] if s["stream"] == 0]
        free = free[0] if free else float("nan")
        if r["compile_loss"] == "1":
            checks.append((free < 2 ** 30, f"{name}: compute stream {free / 2**30:.2f} GiB free at the reserved "
                                           f"maximum (no freed-logits block)"))
        else:
            shard = 2.0 * int(r["mbs"]) * int(r["seq"]) * int(r["vocab"]) / int(r["tp"])
            checks.append((shard <= free <= shard + 2 * 2 ** 30,
                           f"{name}: compute stream {free / 2**30:.2f} GiB free at the reserved maximum, its freed "
                           f"bf16 logits' shard {shard / 2**30:.2f} GiB"))
    for name, twin in TWINS.items():
        t = twins.get(twin)
        if name not in got or t is None:
            checks.append((False, f"{name}: no run or no eager-loss twin {twin}"))
            continue
        d, meas, peak = got[name]
        de = check_json(parplan, fsdp_row_args(root, t) + ["--expandable-segments"])
        if "step_time_s" not in de:
            checks.append((False, f"{twin}: {de.get('error')}"))
            continue
        dp_pred = de["peak_bytes"] / MIB - peak
        dp_meas = float(t["max_alloc_mib"]) - float(runs[name]["max_alloc_mib"])
        ds_pred = de["step_time_s"] - d["step_time_s"]
        ds_meas = float(t["step_ms_median"]) / 1e3 - meas
        checks.append((abs(dp_pred / dp_meas - 1) <= 0.01,
                       f"{name} against {twin}: the compiled loss takes {dp_meas / 1024:.2f} GiB off the peak, "
                       f"priced {dp_pred / 1024:.2f}"))
        checks.append((ds_meas > 0 and abs(ds_pred / ds_meas - 1) <= 0.30,
                       f"{name} against {twin}: and {1e3 * ds_meas:.1f} ms off the step, priced {1e3 * ds_pred:.1f}"))
    return report(checks)


if __name__ == "__main__":
    sys.exit(main())
