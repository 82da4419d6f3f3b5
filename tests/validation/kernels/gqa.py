#!/usr/bin/env python3
"""Grouped-query attention as torchtitan runs it since v0.2.2 (ff0829c10, 2026-01-27: K and V handed to
SDPA at their own heads with enable_gqa) against its earlier repeat_kv (K and V copied to the query
heads first, `--repeat-kv`), on two H200s: a torchtitan-style Llama (tools/fsdp/train.py
[--enable-gqa], Llama-3-8B's shape cut to 8 layers, FSDP2 over the two ranks; eager without AC,
compiled with op-level selective AC, compiled with full AC, CP 2; SDPA's flash and cuDNN kernels)
(tests/data/fsdp/runs_gqa.csv and tests/data/fsdp/gqa/, one device call, PyTorch 2.11, NCCL 2.28.9,
2026-11-30; configurations, predictions and the held-out pair written before the runs in
tools/fsdp/configs_gqa.csv).

TAP, through the binary (`parplan check` with the flags each row states; --repeat-kv for the runs
without --enable-gqa):
  - every run's step time within 5% of the prediction and its allocated peak within 2%, the held-out
    pair (g_s32k_full_c, gc_s16k_sel_c) marked;
  - what SDPA saves less with enable_gqa (the eager 16k run less its repeated twin) within 2% of
    what parplan prices;
  - the same GQA runs priced as repeated (--repeat-kv) miss their peaks by more than 2%: the
    default is what moved them;
  - the CP 2 run at 64k tokens is faster than the repeated CP 2 run of runs_cp.csv (an earlier call)
    and parplan prices it faster (the ring passes K and V at the KV width).
usage: gqa.py PARPLAN SOURCE_ROOT
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap_checks import check_json, each_predicted, fsdp_row_args, fsdp_table, report  # noqa: E402 (tests/validation/tap_checks.py)

HELD_OUT = ("g_s32k_full_c", "gc_s16k_sel_c")  # tools/fsdp/configs_gqa.csv, chosen before the runs
MIB = 1024.0 * 1024.0


def main():
    parplan, root = sys.argv[1], sys.argv[2]
    checks = []
    rows = fsdp_table(root, "runs_gqa.csv")
    pred, peak_pred = {}, {}
    by = {r["name"]: r for r in rows}
    for r, d, m, err, peak, perr in each_predicted(parplan, rows, lambda r: fsdp_row_args(root, r), 8, checks):
        name = r["name"]
        pred[name], peak_pred[name] = d["step_time_s"], peak
        tag = "held out, " if name in HELD_OUT else ""
        kv = "enable_gqa" if r["enable_gqa"] == "1" else "repeat_kv"
        checks.append((abs(err) <= 5.0, f"{name} ({tag}{kv}, SDPA {r['sdpa_backend']}, AC {r['ac']}, {r['seq']} tokens, "
                                        f"{'compiled' if r['compile'] == '1' else 'eager'}, cp {r['cp']}): predicted "
                                        f"{d['step_time_s']:.3f} s, measured {m:.3f} s, {err:+.1f}%"))
        checks.append((abs(perr) <= 2.0, f"{name}: allocated peak predicted {peak:.0f} MiB, measured "
                                         f"{float(r['max_alloc_mib']):.0f} MiB, {perr:+.2f}%"))
    rep, gqa = "r_s16k_none_e", "g_s16k_none_e"
    if rep in peak_pred and gqa in peak_pred:
        m = float(by[rep]["max_alloc_mib"]) - float(by[gqa]["max_alloc_mib"])
        p = peak_pred[rep] - peak_pred[gqa]
        checks.append((m > 0 and abs(p / m - 1) <= 0.02,
                       f"what enable_gqa saves without AC (K and V at 8 of 32 heads, 8 layers of 16k tokens): "
                       f"predicted {p:.0f} MiB, measured {m:.0f} MiB"))
    for name in ("g_s16k_none_e", "gc_s16k_none_e"):
        r = by.get(name)
        if not r:
            checks.append((False, f"{name}: not in runs_gqa.csv"))
            continue
        d = check_json(parplan, fsdp_row_args(root, r) + ["--repeat-kv"])
        if "peak_bytes" not in d:
            checks.append((False, f"{name} --repeat-kv: {d.get('error')}"))
            continue
        e = 100 * (d["peak_bytes"] / MIB / float(r["max_alloc_mib"]) - 1)
        checks.append((e > 2.0, f"{name} priced as repeated (--repeat-kv): peak {e:+.2f}%, beyond 2%"))
    cp_old = next((x for x in fsdp_table(root, "runs_cp.csv") if x["name"] == "cp2_s64k_c"), None)
    if cp_old and "g_cp2_s64k_c" in pred:
        d = check_json(parplan, fsdp_row_args(root, cp_old))
        m_old, m_new = float(cp_old["step_ms_median"]) / 1e3, float(by["g_cp2_s64k_c"]["step_ms_median"]) / 1e3
        if "step_time_s" in d:
            checks.append((m_new < m_old and pred["g_cp2_s64k_c"] < d["step_time_s"],
                           f"CP 2 at 64k tokens, K and V at their own heads against repeated (cp2_s64k_c, an earlier "
                           f"call): measured {1e3 * (m_new - m_old):+.0f} ms, priced {1e3 * (pred['g_cp2_s64k_c'] - d['step_time_s']):+.0f} ms"))
        else:
            checks.append((False, f"cp2_s64k_c: {d.get('error')}"))
    return report(checks)


if __name__ == "__main__":
    sys.exit(main())
