#!/usr/bin/env python3
"""CPU checks of train.py's activation checkpointing, without torch.distributed.

1. Selective AC decides what torchtitan's op-level policy decides: in each block the outputs of
   wq, wv, w1, w2 (the odd-numbered mm) and of SDPA are saved, wk, wo, w3 and all other ops are
   recomputed, and the recomputation walks the same decisions as the forward.
2. AC changes nothing numerically: loss and gradients with none, full and selective AC agree.

    python3 tools/fsdp/check_ac.py      # prints "N passed, 0 failed"; exit status 1 on a failure
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train  # noqa: E402

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def build(ac):
    args = train.parse_args(["--device", "cpu", "--flavor", "tiny", "--seq", "32", "--ac", ac])
    c = train.model_dims(args)
    torch.manual_seed(0)
    model = train.Transformer(c, args.seq)
    model.init_weights()
    train.apply_ac(model, ac)
    return model, c


def loss_and_grads(model, c):
    g = torch.Generator().manual_seed(7)
    tokens = torch.randint(0, c["vocab"], (2, 33), generator=g)
    logits = model(tokens[:, :-1])
    loss = F.cross_entropy(logits.flatten(0, 1).float(), tokens[:, 1:].flatten(0, 1))
    loss.backward()
    # Parameter names differ once blocks are wrapped; compare by position.
    return loss.item(), [p.grad.clone() for p in model.parameters()]


def main():
    # 1. Record every decision of the selective policy.
    decisions = []
    real = train.create_selective_checkpoint_contexts

    def recording(policy):
        def wrapped(ctx, func, *args, **kwargs):
            d = policy(ctx, func, *args, **kwargs)
            decisions.append((ctx.is_recompute, func, d))
            return d
        return real(wrapped)

    train.create_selective_checkpoint_contexts = recording
    try:
        model, c = build("selective")
        loss_and_grads(model, c)
    finally:
        train.create_selective_checkpoint_contexts = real

    save = torch.utils.checkpoint.CheckpointPolicy.MUST_SAVE
    mm = torch.ops.aten.mm.default
    fwd = [(f, d) for r, f, d in decisions if not r]
    rec = [(f, d) for r, f, d in decisions if r]
    mm_fwd = [d == save for f, d in fwd if f == mm]
    # 7 mm per block (wq wk wv wo w1 w3 w2), 2 blocks; odd ones saved.
    check(mm_fwd == [True, False] * 3 + [True] + [True, False] * 3 + [True],
          f"forward mm decisions {mm_fwd}")
    sdpa = [d == save for f, d in fwd if "scaled_dot_product" in str(f)]
    check(len(sdpa) == 2 and all(sdpa), f"SDPA saved in both blocks: {sdpa}")
    others = [f for f, d in fwd if d == save and f != mm and "scaled_dot_product" not in str(f)]
    check(not others, f"nothing else saved: {others}")
    # The recomputation asks the policy about the same ops in the same order and must get the
    # same answers (a saved output is taken from the cache by position, so a counter out of
    # step would hand back the wrong tensor). Non-reentrant checkpoint stops recomputing once
    # the tensors backward needs exist (early stop), so each block's recomputation is a prefix
    # of its forward; the blocks are alike, so their reverse order does not matter.
    nf, nr = len(fwd) // 2, len(rec) // 2
    check(0 < nr <= nf and rec[:nr] == fwd[:nr] and rec[nr:] == fwd[nf:nf + nr],
          f"recompute decisions are not a prefix of the forward's ({len(rec)} vs {len(fwd)})")

    # 2. Numerics are unchanged by AC.
    ref_loss, ref_grads = loss_and_grads(*build("none"))
    for ac in ("full", "selective"):
        loss, grads = loss_and_grads(*build(ac))
        check(abs(loss - ref_loss) < 1e-6, f"{ac}: loss {loss} vs {ref_loss}")
        same = all(torch.allclose(a, b, rtol=1e-5, atol=1e-7) for a, b in zip(grads, ref_grads))
        check(same, f"{ac}: gradients differ from no AC")

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
