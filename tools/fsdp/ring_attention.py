#!/usr/bin/env python3
"""One rank's kernels of PyTorch's context-parallel ring attention, on one GPU
(tests/data/fsdp/ring_attention.jsonl).

Run on a GPU machine from the repository root:
    OUT=/some/dir python3 tools/fsdp/ring_attention.py
It writes $OUT/ring_attention.jsonl (one JSON object per line) and prints the same lines.

torch.distributed.tensor.experimental context_parallel (the ring that torchtitan's CP runs) gives a
rank L = S / cp tokens of the sequence, load-balanced as two halves, and walks cp steps: step 0 its
own keys (causal), then at step i the keys of another rank: all queries against the first half of
those keys where i <= rank, else the second half of the queries against all of them (non-causal,
half a block each). Each step's output is merged into an fp32 accumulator by its log-sum-exp
(_SDPAMerger: out -= sigmoid(lse_b - lse) * (out - out_b); lse -= logsigmoid(lse - lse_b)); the
backward calls the flash backward per step against the merged output and adds each step's
gradients into fp32 accumulators. The send/recv of keys, values and their gradients is not run
(one GPU): this measures the compute a rank does, to set beside one causal call over the whole
sequence (what the time model prices, divided by cp).

Shapes: Llama 3 8B under torchtitan of 2024-12 (32 query heads, keys and values repeated to 32
heads before SDPA, head dim 128), L = 32768 tokens a rank, cp 1, 2, 4, 8; the rank in the middle of
the ring (its steps split between the two kinds).
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpubench import Jsonl, bench_ms  # noqa: E402 (tools/gpubench.py)

_out = Jsonl("ring_attention.jsonl")
emit = _out.emit
FLASH = torch.ops.aten._scaled_dot_product_flash_attention
FLASH_BWD = torch.ops.aten._scaled_dot_product_flash_attention_backward


def fwd_call(q, k, v, causal):
    """out, lse, cum_seq_q, cum_seq_k, max_q, max_k, philox seed, offset, debug mask"""
    return FLASH(q, k, v, 0.0, causal, False)


def ring(q, k, v, cp, rank, go):
    """Forward and backward of one rank's ring; returns (fwd_fn, bwd_fn)."""
    L = q.shape[2]
    h = L // 2
    steps = []
    for i in range(cp):
        if i == 0:
            steps.append((slice(None), slice(None), True))
        elif i <= rank:
            steps.append((slice(None), slice(0, h), False))
        else:
            steps.append((slice(h, None), slice(None), False))
    state = {}

    def forward():
        out = None
        lse = None
        saved = []
        for qs, ks, causal in steps:
            r = fwd_call(q[:, :, qs], k[:, :, ks], v[:, :, ks], causal)
            bo, bl = r[0].float(), r[1].unsqueeze(-1)
            saved.append(r)
            if out is None:
                out, lse = bo, bl
                continue
            o, l_ = out[:, :, qs], lse[:, :, qs]
            o = o - torch.sigmoid(bl - l_) * (o - bo)
            l_ = l_ - F.logsigmoid(l_ - bl)
            out[:, :, qs] = o
            lse[:, :, qs] = l_
        state["out"] = out.to(q.dtype)
        state["lse"] = lse.squeeze(-1).contiguous()
        state["saved"] = saved

    def backward():
        dq = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
        dk = torch.zeros(k.shape, dtype=torch.float32, device=q.device)
        dv = torch.zeros(v.shape, dtype=torch.float32, device=q.device)
        out, lse = state["out"], state["lse"]
        for (qs, ks, causal), r in zip(steps, state["saved"]):
            g = FLASH_BWD(go[:, :, qs], q[:, :, qs], k[:, :, ks], v[:, :, ks], out[:, :, qs],
                          lse[:, :, qs].contiguous(), r[2], r[3], r[4], r[5], 0.0, causal, r[6], r[7])
            dq[:, :, qs] += g[0].float()
            dk[:, :, ks] += g[1].float()
            dv[:, :, ks] += g[2].float()

    return forward, backward


def main():
    emit({"kind": "env", "gpu": torch.cuda.get_device_name(), "torch": torch.__version__})
    L, H, D = 32768, 32, 128
    torch.manual_seed(0)
    q = torch.randn(1, H, L, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn_like(q)
    v = torch.randn_like(q)
    go = torch.randn_like(q)
    # one causal call over the rank's L tokens: the reference the others are set against
    f0 = bench_ms(lambda: fwd_call(q, k, v, True), iters=5, warm=2)
    for cp in (1, 2, 4, 8):
        rank = cp // 2
        fwd, bwd = ring(q, k, v, cp, rank, go)
        f_ms = bench_ms(fwd, iters=5, warm=2)
        fwd()
        b_ms = bench_ms(bwd, iters=3, warm=1)
        emit({"kind": "ring", "cp": cp, "rank": rank, "tokens_per_rank": L, "heads": H, "head_dim": D,
              "fwd_ms": f_ms, "bwd_ms": b_ms, "causal_L_fwd_ms": f0,
              "fwd_over_cp_causal": f_ms / (cp * f0)})
    # one causal call over cp x L tokens, divided by cp (what an ideal ring would cost a rank), to 4 x L
    for cp in (2, 4):
        S = cp * L
        qq = torch.randn(1, H, S, D, device="cuda", dtype=torch.bfloat16)
        kk, vv = torch.randn_like(qq), torch.randn_like(qq)
        t = bench_ms(lambda: fwd_call(qq, kk, vv, True), iters=3, warm=1)
        emit({"kind": "causal_full", "tokens": S, "fwd_ms": t, "per_rank_fwd_ms": t / cp})
        del qq, kk, vv
        torch.cuda.empty_cache()
    emit({"kind": "done"})


if __name__ == "__main__":
    main()
