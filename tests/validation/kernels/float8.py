#!/usr/bin/env python3
"""torchao float8 end to end under FSDP2, as torchtitan's float8 recipes run it (tools/fsdp/train.py
--float8: every block linear a Float8Linear, the output layer filtered; tensorwise with the FSDP float8
all-gather and the scales precomputed each step, or rowwise; blocks and loss compiled, SDPA cuDNN, K and
V at their own heads), with bf16 twins, on two H200s (Llama-3-8B's shape at 8 layers, 16k-32k tokens,
FSDP2 over both or TP 2; tests/data/fsdp/runs_float8.csv and tests/data/fsdp/float8/, four device
calls, PyTorch 2.11, torchao
0.18, NCCL 2.28.9, 2026-11-30; runs, predictions and held-out rows written first in
tools/fsdp/configs_float8.csv).

TAP, through the binary (`parplan check` with the flags each row states):
  - the looked-at runs' steps within 2.5% (time.c's FP8_TORCHAO_CAST_X and FP8_ROWWISE_CAST_X were
    fitted on f8t_s16k_full, f8t_s16k_sel and f8r_s16k_full, the casts priced as not redone by a
    recompute), both recipes under TP 2 looked at within 5%
    (the tensorwise one with torchtitan's float8 TP plans, its casts on the sequence shard),
    the bf16 twins' within 7% (the TP 2 selective one -6.7%), the held-out runs' within 10% (with TE's
    cast bytes they were -7.6% to -14.5%);
  - allocated peaks within 2% under full and selective AC (float8 or not) and for the bf16 twin
    without AC; without AC the float8 peaks, 4.2 and 5.5 GiB under the bf16 twin's, within 1%: the
    compiled float8 block keeps neither norm's output nor w2's input and, with the FSDP float8
    all-gather, keeps the FFN's float8 weights (planner/cost/layer.c, build_saved_titan, from the
    saved-tensor reading tests/data/fsdp/float8/saved.jsonl; before it parplan was 11-15% over);
  - from the profiled steps: the two recipes' GEMM kernels within 1% of each other, and the rowwise
    casts (copy and elementwise kernels over the bf16 twin's) 1.5-2.5x the tensorwise ones, within
    20% of FP8_ROWWISE_CAST_X fitted end to end (2.00 in the kernels, 2.37 end to end; on one GPU's
    linears alone they were 3.5-4.5x: tests/data/fp8).
usage: float8.py PARPLAN SOURCE_ROOT
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap_checks import constant, each_predicted, fsdp_profiles, fsdp_row_args, fsdp_table, report  # noqa: E402 (tests/validation/tap_checks.py)

LOOKED_AT = ("f8t_s16k_full", "f8t_s16k_sel", "f8r_s16k_full")  # the fit's rows
HELD_OUT = ("f8t_s16k_none", "f8t_s32k_full", "f8r_s16k_sel", "f8r_s16k_none", "f8r_tp2_full",
            "f8t_tp2_full")  # configs_float8.csv
# f8t_s16k_none_h: f8t_s16k_none again with the allocator's history (a diagnostic of its peak)


def main():
    parplan, root = sys.argv[1], sys.argv[2]
    checks = []
    rows = fsdp_table(root, "runs_float8.csv")
    for r, d, m, err, peak, perr in each_predicted(parplan, rows, lambda r: fsdp_row_args(root, r), 17, checks):
        name, f8, ac = r["name"], r["float8"], r["ac"]
        if name in LOOKED_AT:
            bound, tag = 2.5, "looked at, the fit's"
        elif name.startswith("bf_"):
            bound, tag = 7.0, "bf16 twin"
        elif name in ("f8r_tp2_sel", "f8t_tp2_sel"):
            bound, tag = 5.0, "looked at"
        else:
            bound, tag = 10.0, "held out" if name in HELD_OUT else "held-out run again"
            if name == "f8t_s16k_none":  # -9.5% held out; then its profile gave EW_FSDP_FP8_NORM_BWD
                tag = "held out, then its profile fitted time.c's EW_FSDP_FP8_NORM_BWD"
        checks.append((abs(err) <= bound, f"{name} ({tag}, float8 {f8}, AC {ac}, TP {r['tp']}, {r['seq']} tokens): predicted "
                                          f"{d['step_time_s']:.3f} s, measured {m:.3f} s, {err:+.1f}% (within {bound:g}%)"))
        if f8 != "none" and ac == "none":
            # looked at: these misses (11-15% over) led to reading the saved tensors (saved.jsonl)
            checks.append((abs(perr) <= 1.0, f"{name} (looked at): allocated peak predicted {peak:.0f} MiB, measured "
                                             f"{float(r['max_alloc_mib']):.0f} MiB, {perr:+.2f}% (float8 without AC: "
                                             f"layer.c's compiled float8 block, within 1%)"))
        else:
            checks.append((abs(perr) <= 2.0, f"{name}: allocated peak predicted {peak:.0f} MiB, measured "
                                             f"{float(r['max_alloc_mib']):.0f} MiB, {perr:+.2f}%"))
    prof = fsdp_profiles(root, "float8/float8_runs.jsonl")
    need = ("bf_s16k_full", "f8t_s16k_full", "f8r_s16k_full")
    if all("kernel_ms_by_category" in prof.get(n, {}) for n in need):
        bf, tw, rw = (prof[n]["kernel_ms_by_category"] for n in need)
        g = rw["gemm"] / tw["gemm"]
        checks.append((abs(g - 1) <= 0.01, f"profiled GEMM kernels, rowwise over tensorwise: {g:.3f} "
                                           f"({rw['gemm']:.1f} / {tw['gemm']:.1f} ms)"))
        cast = {k: (v["copy"] + v["other"]) - (bf["copy"] + bf["other"]) for k, v in (("tw", tw), ("rw", rw))}
        x = cast["rw"] / cast["tw"]
        cx = constant(open(os.path.join(root, "planner/cost/time.c")).read(), "FP8_ROWWISE_CAST_X")
        checks.append((1.5 <= x <= 2.5 and cx is not None and abs(cx / x - 1) <= 0.2,
                       f"profiled casts over the bf16 twin: tensorwise {cast['tw']:.1f} ms, rowwise {cast['rw']:.1f} "
                       f"ms, {x:.2f}x; time.c FP8_ROWWISE_CAST_X {cx}"))
    else:
        checks.append((False, f"profiles of {', '.join(need)} in float8/float8_runs.jsonl"))
    return report(checks)


if __name__ == "__main__":
    sys.exit(main())
