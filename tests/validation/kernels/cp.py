#!/usr/bin/env python3
"""Context parallelism on two H200s: a torchtitan-style Llama (tools/fsdp/train.py --cp, Llama-3-8B's
shape cut to 8 layers, full activation checkpointing, SDPA's flash kernel) with PyTorch's ring
attention (torch.distributed.tensor.experimental's _ContextParallel around the SDPA module, as
torchtitan v0.2.2 wraps it; head-tail load balance; K and V all-gathered once a pass, the key and
value gradients passed round the ring in fp32), FSDP2 over the two ranks
(tests/data/fsdp/runs_cp.csv and tests/data/fsdp/cp/, one device call, PyTorch 2.11, NCCL 2.28.9,
2026-11-30; configurations, predictions and the held-out pair written before the runs in
tools/fsdp/configs_cp.csv); and on the torchtitan-compile recipe's whole stack, SDPA's cuDNN backend
and the loss compiled (tests/data/fsdp/runs_cp_cudnn.csv, cp_cudnn/, a later call;
tools/fsdp/configs_cp_cudnn.csv, its 96k run held out).

TAP, through the binary (`parplan check` with the flags each row states):
  - every run's step time within 5% of the prediction and its allocated peak within 2%, the
    held-out pair (96k and 128k tokens) reported apart;
  - what CP adds to a step (the 64k-token CP 2 run less its no-CP twin at the same 32k tokens a
    rank) within 15% of what parplan prices it at;
  - the profiled CP step is GPU-bound (busy at least 97% of its wall time): the ring's exchange
    runs on the GPU beside the attention, not as host waits.
usage: cp.py PARPLAN SOURCE_ROOT
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap_checks import check_json, each_predicted, fsdp_profiles, fsdp_row_args, fsdp_table, report  # noqa: E402 (tests/validation/tap_checks.py)

HELD_OUT = ("cp2_s96k_c", "cp2_s128k_c", "cpc2_s96k_c")  # tools/fsdp/configs_cp*.csv, chosen before the runs


# (runs table, records with the profiles, the CP run and its no-CP twin, n runs): the flash
# backend with the eager loss, and the torchtitan-compile recipe's stack (cuDNN, the loss compiled)
TABLES = (("runs_cp.csv", "cp/cp_runs.jsonl", "cp2_s64k_c", "dp2_s32k_c", 5),
          ("runs_cp_cudnn.csv", "cp_cudnn/cpc_runs.jsonl", "cpc2_s64k_c", "dpc2_s32k_c", 3))


def main():
    parplan, root = sys.argv[1], sys.argv[2]
    checks = []
    for table, records, cp_run, twin_run, n in TABLES:
        pred, meas = {}, {}
        for r, d, m, err, peak, perr in each_predicted(parplan, fsdp_table(root, table), lambda r: fsdp_row_args(root, r), n,
                                                       checks):
            name = r["name"]
            pred[name], meas[name] = d["step_time_s"], m
            tag = "held out, " if name in HELD_OUT else ""
            kind = f"cp {r['cp']}" if int(r["cp"] or 1) > 1 else "no CP"
            checks.append((abs(err) <= 5.0, f"{name} ({tag}{kind}, SDPA {r['sdpa_backend']}, {r['seq']} tokens, "
                                            f"{'compiled' if r['compile'] == '1' else 'eager'}): predicted "
                                            f"{pred[name]:.3f} s, measured {meas[name]:.3f} s, {err:+.1f}%"))
            checks.append((abs(perr) <= 2.0, f"{name}: allocated peak predicted {peak:.0f} MiB, measured "
                                             f"{float(r['max_alloc_mib']):.0f} MiB, {perr:+.2f}%"))
        if cp_run in pred and twin_run in pred:
            p = pred[cp_run] - pred[twin_run]
            m = meas[cp_run] - meas[twin_run]
            checks.append((abs(p / m - 1) <= 0.15,
                           f"{table}: what CP 2 adds at 32k tokens a rank (twice the keys each query attends, the "
                           f"ring): predicted {p:.3f} s, measured {m:.3f} s, {100 * (p / m - 1):+.1f}% (within 15%)"))
            # the same run priced with TransformerEngine's ring bytes (GQA width, 16-bit gradients)
            r = next(x for x in fsdp_table(root, table) if x["name"] == cp_run)
            d = check_json(parplan, fsdp_row_args(root, r) + ["--cp-comm", "p2p"])
            if "step_time_s" in d:
                p2 = d["step_time_s"] - pred[twin_run]
                checks.append((p2 < p and (m - p2) > (m - p),
                               f"{table}: priced with TE's ring bytes (--cp-comm p2p) CP adds {p2:.3f} s, "
                               f"{100 * (p2 / m - 1):+.1f}%: the torch ring's fp32 query-width gradients close it"))
            else:
                checks.append((False, f"{cp_run} --cp-comm p2p: {d.get('error')}"))
        prof = fsdp_profiles(root, records)
        p = prof.get(cp_run)
        if p is None:
            checks.append((False, f"{cp_run}: no profiled step in tests/data/fsdp/{records}"))
            continue
        nccl_only = p["busy_ms"] - p["compute_busy_ms"]
        twin = prof.get(twin_run)
        twin_only = twin["busy_ms"] - twin["compute_busy_ms"] if twin else float("nan")
        checks.append((p["busy_ms"] >= 0.97 * p["wall_ms"],
                       f"{cp_run}'s profiled step: GPU busy {p['busy_ms']:.0f} of {p['wall_ms']:.0f} ms "
                       f"(>= 97%); NCCL alone on the GPU {nccl_only:.0f} ms (no-CP twin {twin_only:.0f} ms)"))
    return report(checks)


if __name__ == "__main__":
    sys.exit(main())
