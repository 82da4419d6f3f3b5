#!/usr/bin/env python3
"""Where the step goes on two H200s: one profiled step of each FSDP2 / TP run
(tests/data/fsdp/two_gpu/profile.jsonl, tools/fsdp/train.py --profile, CUDA activity only; PyTorch
2.11, 2026-11-29), beside parplan's price of the same run. TAP:
  - at 1024 tokens a rank (Llama-3.2-3B's shape, no AC) the GPU is busy for under 60% of the step,
    eager or compiled alike; parplan's GPU part of the step (the step less the breakdown's host_s) is
    within 25% of that busy time, and its step, with FSDP2's host (time_step.c FSDP_HOST_*, fitted on
    other runs: tests/data/fsdp/runs_host.csv), within 15% of the measured one;
  - at 8192 tokens the GPU is busy for over 90% of the step, and parplan is within 8% of the step;
  - the same per-rank work with a second GPU: the GEMMs take over 1.3x as long while FSDP2's NCCL
    kernels run beside them (their SMs and memory traffic), where the model prices no contention;
  - AdamW's fused kernels take about twice as long a parameter on FSDP2 shards over two ranks as
    unsharded or under TP (what the model prices: one rate).
usage: fsdp_profile.py PARPLAN SOURCE_ROOT
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap_checks import check_json, fsdp_run_args, jsonl, report  # noqa: E402 (tests/validation/tap_checks.py)

def predicted(parplan, root, r):
    """parplan's step and, of it, the GPU's wait for FSDP2's host (s; None where check failed)."""
    args = fsdp_run_args(root, r["flavor"], r["world_size"], r["mbs"], r["seq"], r["ac"], tp=r["tp"],
                         compile=r["compile"])
    d = check_json(parplan, args)
    return d.get("step_time_s"), (d.get("breakdown") or {}).get("host_s", 0.0)



def main():
    parplan, root = sys.argv[1], sys.argv[2]
    rows = {r["name"]: r for r in jsonl(root, "tests/data/fsdp/two_gpu/profile.jsonl")}
    checks = [(len(rows) == 8 and all("busy_ms" in r["profile"] for r in rows.values()),
               f"{len(rows)} profiled runs, each with its GPU busy time")]
    if not checks[0][0]:
        return report(checks)
    p = {k: r["profile"] for k, r in rows.items()}
    for name in ("p_l3b_s1k_b1_none", "p_l3b_s1k_b1_none_c"):
        busy, wall = p[name]["busy_ms"], p[name]["wall_ms"]
        pred, host = predicted(parplan, root, rows[name])
        gpu = None if pred is None else pred - host
        med = rows[name]["step_ms_median"]
        checks.append((busy / wall < 0.6, f"{name}: the GPU busy {busy:.1f} of {wall:.1f} ms ({busy / wall:.0%})"))
        checks.append((gpu is not None and abs(1e3 * gpu / busy - 1) <= 0.25,
                       f"{name}: parplan's GPU part {1e3 * (gpu or 0):.1f} ms against the GPU's busy {busy:.1f} ms"))
        checks.append((pred is not None and abs(1e3 * pred / med - 1) <= 0.15,
                       f"{name}: parplan's step {1e3 * (pred or 0):.1f} ms (the host's wait {1e3 * host:.1f}) against the "
                       f"step's median {med:.1f} ms"))
    r8 = rows["p_l3b_s8k_b1_none"]
    busy, wall = p["p_l3b_s8k_b1_none"]["busy_ms"], p["p_l3b_s8k_b1_none"]["wall_ms"]
    pred = predicted(parplan, root, r8)[0]
    checks.append((busy / wall > 0.9, f"p_l3b_s8k_b1_none: the GPU busy {busy:.1f} of {wall:.1f} ms ({busy / wall:.0%})"))
    checks.append((pred is not None and abs(1e3 * pred / r8["step_ms_median"] - 1) <= 0.08,
                   f"p_l3b_s8k_b1_none: parplan's step {1e3 * (pred or 0):.1f} ms, measured {r8['step_ms_median']:.1f} ms"))
    one, two = p["p_l3b_s1k_b1_none"], p["p_l3b_2g_s1k_b1_none"]
    g1, g2 = one["kernel_ms_by_category"]["gemm"], two["kernel_ms_by_category"]["gemm"]
    checks.append((g2 / g1 > 1.3 and two["kernel_ms_by_category"].get("nccl", 0) > 0.5 * two["wall_ms"],
                   f"the same GEMMs a rank: {g1:.1f} ms on one GPU, {g2:.1f} ms beside {two['kernel_ms_by_category']['nccl']:.0f} "
                   f"ms of NCCL kernels on two ({g2 / g1:.2f}x)"))

    def adam_ps_per_param(name):
        return 1e9 * p[name]["kernel_ms_by_category"]["optimizer"] / rows[name]["params_local"]

    plain = [adam_ps_per_param(n) for n in ("p_l3b_s1k_b1_none", "p_l3b_tp2_s8k_b1_none", "p_l8b_tp2_s8k_b1_full")]
    shard = [adam_ps_per_param(n) for n in ("p_l3b_2g_s1k_b1_none", "p_l8b_2g_s2k_b1_full", "p_l8b_2g_s8k_b1_full")]
    ratio = min(shard) / max(plain)
    checks.append((1.6 <= ratio <= 2.4,
                   f"fused AdamW: {', '.join('%.1f' % x for x in plain)} ps a parameter unsharded or under TP, "
                   f"{', '.join('%.1f' % x for x in shard)} on FSDP2 shards over two ranks ({ratio:.2f}x at least)"))
    return report(checks)


if __name__ == "__main__":
    sys.exit(main())
