#!/usr/bin/env python3
"""Eager RMSNorm, fused or composite (--eager-norm), from the kernels measured on one H200
(tests/data/fsdp/rmsnorm.jsonl, tools/fsdp/rmsnorm.py). TAP:
  - time.c's EW_FSDP_NORM_COMPOSITE_FWD / _BWD are the measured composite's bytes an element at the
    GPU's copy rate, averaged over the shapes, recomputed here from the file; every shape within 15%
    of the mean;
  - memory_fsdp.c's 6 bytes an element saved per composite norm is the measured figure, and the
    fused kernel saves (next to) nothing;
  - through the binary: a composite-norm eager run is slower than a fused one, and without
    recompute (the loss chunked, so the peak falls in a block's backward) holds 2 x 6 bytes per
    element of the residual stream per block more;
  - --eager-norm composite with --compile, or under --framework megatron, is an error.
usage: norm.py PARPLAN SOURCE_ROOT
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap_checks import check_json, constant, jsonl, report  # noqa: E402 (tests/validation/tap_checks.py)


def main():
    parplan, root = sys.argv[1], sys.argv[2]
    rows = jsonl(root, "tests/data/fsdp/rmsnorm.jsonl")
    time_c = open(os.path.join(root, "planner/cost/time.c")).read()
    common_c = open(os.path.join(root, "planner/common.c")).read()
    checks = []
    norm = [r for r in rows if r["kind"] == "norm"]
    comp = [r for r in norm if r["impl"] == "composite"]
    fused = [r for r in norm if r["impl"] == "fused"]
    checks.append((len(comp) >= 3 and len(comp) == len(fused), f"{len(comp)} shapes with both implementations"))
    for key, name in (("fwd_bytes_per_elem", "EW_FSDP_NORM_COMPOSITE_FWD"), ("bwd_bytes_per_elem", "EW_FSDP_NORM_COMPOSITE_BWD")):
        vals = [r[key] for r in comp]
        mean = sum(vals) / max(1, len(vals))
        c = constant(time_c, name)
        checks.append((c is not None and abs(c - mean) <= 0.05,
                       f"time.c {name} {c} is the measured mean {mean:.2f} ({', '.join(f'{v:.1f}' for v in vals)})"))
        checks.append((all(abs(v / mean - 1) <= 0.15 for v in vals), f"{key}: every shape within 15% of the mean"))
    saved = [r["saved_bytes_per_elem"] for r in comp]
    checks.append((all(abs(s - 6.0) < 0.01 for s in saved) and "case PP_ENORM_COMPOSITE: return 6.0;" in common_c,
                   f"composite saves {', '.join(f'{s:.3f}' for s in saved)} bytes an element; "
                   "pp_eager_norm_saved_bytes (common.c) counts 6 per norm"))
    checks.append((all(r["saved_bytes_per_elem"] < 0.01 for r in fused),
                   "the fused kernel saves under 0.01 bytes an element (its rstd)"))

    # Llama 3 8B on 8 GPUs, micro-batch 1 of 8192 tokens: 32 blocks, each 2 x 6 bytes x 8192 x 4096
    base = ["--model", "llama3-8b", "--gpu", "h200", "--gpus", "8", "--framework", "fsdp",
            "--zero", "3", "--seq", "8192", "--gbs", "8", "--mbs", "1", "--recompute", "none", "--loss", "cut"]
    out = {impl: check_json(parplan, base + ["--eager-norm", impl]) for impl in ("fused", "composite", "composite-fp32")}
    bad = [f"{impl}: parplan check failed: {d['error']}" for impl, d in out.items() if "error" in d]
    checks += [(False, msg) for msg in bad]
    if not bad:
        f, c = out["fused"], out["composite"]
        checks.append((c["step_time_s"] > f["step_time_s"],
                       f"composite step {c['step_time_s']:.3f} s over fused {f['step_time_s']:.3f} s "
                       f"(+{100 * (c['step_time_s'] / f['step_time_s'] - 1):.1f}%)"))
        want = 32 * 2 * 6.0 * 8192 * 4096
        got = c["peak_bytes"] - f["peak_bytes"]
        checks.append((abs(got / want - 1) <= 0.01,
                       f"composite peak {got / 2**30:.2f} GiB over fused (32 blocks x 2 norms x 6 bytes: "
                       f"{want / 2**30:.2f} GiB)"))
        # KempnerForge's order (the weight in fp32 before the cast): 8 bytes, read off its allocator
        # histories (tests/data/kf), not this table
        c8 = out["composite-fp32"]
        want8 = 32 * 2 * 8.0 * 8192 * 4096
        got8 = c8["peak_bytes"] - f["peak_bytes"]
        checks.append((abs(got8 / want8 - 1) <= 0.01,
                       f"composite-fp32 peak {got8 / 2**30:.2f} GiB over fused (32 blocks x 2 norms x 8 bytes: "
                       f"{want8 / 2**30:.2f} GiB)"))
        checks.append((c["stack"].get("eager_norm") == "composite" and "eager_norm" not in f["stack"],
                       "the JSON's stack states eager_norm composite only where given"))
    plain = ["check", "--model", "llama3-8b", "--gpu", "h200", "--gpus", "8", "--gbs", "8", "--mbs", "1"]
    for extra, why in ((["--framework", "fsdp", "--zero", "3", "--compile"], "--compile"),
                       (["--framework", "megatron"], "megatron")):
        p = subprocess.run([parplan] + plain + extra + ["--eager-norm", "composite"], capture_output=True, text=True)
        checks.append((p.returncode != 0 and "--eager-norm" in p.stderr,
                       f"--eager-norm composite with {why}: an error ({p.stderr.strip()[:120]})"))

    return report(checks)


if __name__ == "__main__":
    sys.exit(main())
