#!/usr/bin/env python3
"""What torch's cross-entropy holds per logit (--loss upcast|bf16, eager and under torch.compile:
--compile-loss), from one H200: the allocator's peaks while the loss is formed and through its
backward, on the bf16 logits and on their fp32 copy (tests/data/fsdp/loss_memory.jsonl,
tools/fsdp/loss_memory.py; PyTorch 2.11, 2026-11-30, the eager rows as on 2026-11-29). TAP:
  - memory_fsdp.c's FSDP_LOSS_* constants are the measured bytes per logit (to 0.05), at both sizes;
  - through the binary, a loss-bound FSDP run's peak moves by the measured difference when the loss
    is on the bf16 logits: (12 - 6) bytes x T x V at the loss backward; and when it is compiled:
    (12 - 4) bytes x T x V.
usage: loss.py PARPLAN SOURCE_ROOT
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap_checks import check_json, constant, jsonl, report  # noqa: E402 (tests/validation/tap_checks.py)


def main():
    parplan, root = sys.argv[1], sys.argv[2]
    src = open(os.path.join(root, "planner/cost/memory_fsdp.c")).read()
    model = {k: constant(src, "FSDP_LOSS_%s" % k) for k in ("UPCAST_FWD", "UPCAST_BWD", "BF16_FWD", "BF16_BWD",
                                                            "COMPILED_FWD", "COMPILED_BWD")}
    # both losses compiled are one fused kernel each way on the bf16 logits: one pair of figures
    for k in ("UPCAST_COMPILED", "BF16_COMPILED"):
        model[k + "_FWD"], model[k + "_BWD"] = model["COMPILED_FWD"], model["COMPILED_BWD"]
    checks = [(all(v is not None for v in model.values()), f"memory_fsdp.c's loss constants: {model}")]
    rows = jsonl(root, "tests/data/fsdp/loss_memory.jsonl")
    checks.append((len(rows) == 8, f"{len(rows)} measurements (two losses, eager and compiled, at two sizes)"))
    for r in rows:
        k = r["kind"].upper()
        for part, key in (("FWD", "fwd_bytes_per_logit"), ("BWD", "bwd_bytes_per_logit")):
            want = model.get(f"{k}_{part}")
            got = r[key]
            checks.append((want is not None and abs(got - want) <= 0.05,
                           f"{r['kind']} at {r['tokens']} tokens, {part.lower()}: {got:.3f} bytes a logit measured, "
                           f"{want} priced"))
    # a loss-bound run: Llama-3-8B's shape cut to 4 layers on one H200, 2 x 8192 tokens, full AC (the
    # peak at the loss backward either way); compiled, the loss sets the peak only where it outweighs a
    # block more: one layer, 4 x 8192 tokens
    def lowered(layers, mbs, kinds, what, base_bwd, other_bwd):
        a = ["--model", "llama3-8b", "--layers", str(layers), "--gpu", "h200", "--gpus", "1", "--framework", "fsdp",
             "--zero", "3", "--gbs", str(mbs), "--mbs", str(mbs), "--seq", "8192", "--recompute", "full"]
        d0, d1 = (check_json(parplan, a + k) for k in kinds)
        if "stages" not in d0 or "stages" not in d1:
            return (False, f"parplan check ({what}): {d0.get('error')} {d1.get('error')}")
        s0, s1 = d0["stages"][0], d1["stages"][0]
        want = (model[base_bwd] - model[other_bwd]) * mbs * 8192 * 128256.0
        got = s0["peak_bytes"] - s1["peak_bytes"]
        return (s0["peak_moment"] == s1["peak_moment"] == "loss backward" and abs(got - want) <= 1e-6 * want,
                f"{what} lowers the loss-bound peak by {got / 2**30:.3f} GiB ({want / 2**30:.3f} by the measured "
                f"bytes; at {s0['peak_moment']} / {s1['peak_moment']})")

    checks.append(lowered(4, 2, (["--loss", "upcast"], ["--loss", "bf16"]), "--loss bf16", "UPCAST_BWD", "BF16_BWD"))
    checks.append(lowered(1, 4, (["--loss", "upcast"], ["--loss", "upcast", "--compile-loss"]), "--compile-loss",
                          "UPCAST_BWD", "COMPILED_BWD"))
    return report(checks)


if __name__ == "__main__":
    sys.exit(main())
