#!/usr/bin/env python3
"""Eager RMSNorm on one GPU: PyTorch's fused kernel against the composite of ops that eager
stacks ran before it (tests/data/fsdp/rmsnorm.jsonl).

Run on a GPU machine from the repository root:
    OUT=/some/dir python3 tools/fsdp/rmsnorm.py
It writes $OUT/rmsnorm.jsonl (one JSON object per line) and prints the same lines.

Implementations, each forward and forward + backward (gradients of the input and the weight), bf16:
  fused      torch.nn.functional.rms_norm: since PyTorch 2.8 one fused CUDA kernel each way
             (pytorch/pytorch#153666, aten::_fused_rms_norm)
  composite  the ops torchtitan's RMSNorm ran in 2024 (norm_type "rmsnorm": _norm(x.float()).type_as(x)
             * weight with _norm(x) = x * rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)), which are
             also PyTorch 2.4-2.7's F.rms_norm (CompositeImplicitAutograd: upcast, pow, mean, add,
             rsqrt, mul, type_as, mul by the weight) and ibm-fms's LayerNormParameterized with
             use_high_precision_pow
  copy       a bf16 copy of the input (read 2 + write 2 bytes an element): the GPU's copy rate, to
             express the others in bytes an element
Each line also holds the bytes the forward leaves saved for the backward (memory allocated after a
forward with grad, less before, less the output), per element.
"""
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpubench import Jsonl, bench_ms  # noqa: E402 (tools/gpubench.py)

_out = Jsonl("rmsnorm.jsonl")
emit = _out.emit


EPS = 1e-6


def fused(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, EPS)


def composite(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).type_as(x) * w


IMPLS = {"fused": fused, "composite": composite}
# (tokens, hidden): Llama 3 8B at 2 x 8192 and 1 x 8192 tokens, 70B at 8192, Llama 2 7B / 13B at 2 x 4096
SHAPES = [(16384, 4096), (8192, 4096), (8192, 8192), (8192, 5120)]


def main():
    emit({"kind": "env", "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
          "fused_op": hasattr(torch.ops.aten, "_fused_rms_norm")})
    for T, h in SHAPES:
        n = T * h
        x = torch.randn(T, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        w = torch.randn(h, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        g = torch.randn(T, h, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(g)
        copy_ms = bench_ms(lambda: y.copy_(g))
        emit({"kind": "copy", "tokens": T, "hidden": h, "ms": copy_ms, "gbs": 4.0 * n / copy_ms / 1e6})
        for name, fn in IMPLS.items():
            def fwd():
                with torch.no_grad():
                    fn(x, w)

            def fwdbwd():
                x.grad = None
                w.grad = None
                fn(x, w).backward(g)

            f_ms = bench_ms(fwd)
            fb_ms = bench_ms(fwdbwd)
            x.grad = None
            w.grad = None
            torch.cuda.synchronize()
            before = torch.cuda.memory_allocated()
            out = fn(x, w)
            torch.cuda.synchronize()
            saved = torch.cuda.memory_allocated() - before - out.numel() * out.element_size()
            del out
            # bytes an element at the copy's rate (the copy moves 4 bytes an element)
            emit({"kind": "norm", "impl": name, "tokens": T, "hidden": h, "fwd_ms": f_ms, "fwdbwd_ms": fb_ms,
                  "bwd_ms": fb_ms - f_ms, "fwd_bytes_per_elem": 4.0 * f_ms / copy_ms,
                  "bwd_bytes_per_elem": 4.0 * (fb_ms - f_ms) / copy_ms, "saved_bytes_per_elem": saved / n})
        del x, w, g, y
        torch.cuda.empty_cache()
    emit({"kind": "done"})


if __name__ == "__main__":
    t0 = time.time()
    main()
    print("elapsed", time.time() - t0)
