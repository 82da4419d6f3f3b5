#!/usr/bin/env python3
"""What torch's cross-entropy holds per logit (--loss upcast|bf16), from one H200: the allocator's
peaks while the loss is formed and through its backward, on the bf16 logits and on their fp32 copy
(tests/data/fsdp/loss_memory.jsonl, tools/fsdp/loss_memory.py; PyTorch 2.11, 2026-11-29). TAP:
  - memory_fsdp.c's FSDP_LOSS_* constants are the measured bytes per logit (to 0.05), at both sizes;
  - through the binary, a loss-bound FSDP run's peak moves by the measured difference when the loss
    is on the bf16 logits: (12 - 6) bytes x T x V at the loss backward.
usage: loss.py PARPLAN SOURCE_ROOT
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap_checks import check_json, constant, jsonl, report  # noqa: E402 (tests/validation/tap_checks.py)


def main():
    parplan, root = sys.argv[1], sys.argv[2]
    src = open(os.path.join(root, "planner/cost/memory_fsdp.c")).read()
    model = {k: constant(src, "FSDP_LOSS_%s" % k) for k in ("UPCAST_FWD", "UPCAST_BWD", "BF16_FWD", "BF16_BWD")}
    checks = [(all(v is not None for v in model.values()), f"memory_fsdp.c's loss constants: {model}")]
    rows = jsonl(root, "tests/data/fsdp/loss_memory.jsonl")
    checks.append((len(rows) == 4, f"{len(rows)} measurements (two losses at two sizes)"))
    for r in rows:
        k = r["kind"].upper()
        for part, key in (("FWD", "fwd_bytes_per_logit"), ("BWD", "bwd_bytes_per_logit")):
            want = model.get(f"{k}_{part}")
            got = r[key]
            checks.append((want is not None and abs(got - want) <= 0.05,
                           f"{r['kind']} at {r['tokens']} tokens, {part.lower()}: {got:.3f} bytes a logit measured, "
                           f"{want} priced"))
    # a loss-bound run: Llama-3-8B's shape cut to 4 layers on one H200, 2 x 8192 tokens, full AC (the
    # peak at the loss backward either way)
    base = ["--model", "llama3-8b", "--layers", "4", "--gpu", "h200", "--gpus", "1", "--framework", "fsdp",
            "--zero", "3", "--gbs", "2", "--mbs", "2", "--seq", "8192", "--recompute", "full"]
    d = {k: check_json(parplan, base + ["--loss", k]) for k in ("upcast", "bf16")}
    if all("stages" in v for v in d.values()):
        su, sb = d["upcast"]["stages"][0], d["bf16"]["stages"][0]
        n = 2 * 8192 * 128256.0
        want = (model["UPCAST_BWD"] - model["BF16_BWD"]) * n
        got = su["peak_bytes"] - sb["peak_bytes"]
        checks.append((su["peak_moment"] == sb["peak_moment"] == "loss backward" and abs(got - want) <= 1e-6 * want,
                       f"--loss bf16 lowers the loss-bound peak by {got / 2**30:.3f} GiB ({want / 2**30:.3f} by "
                       f"the measured bytes; at {su['peak_moment']} / {sb['peak_moment']})"))
    else:
        checks.append((False, f"parplan check: {d}"))
    return report(checks)


if __name__ == "__main__":
    sys.exit(main())
