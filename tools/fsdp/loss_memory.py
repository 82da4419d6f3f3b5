#!/usr/bin/env python3
"""What torch's cross-entropy holds per logit, on the bf16 logits and on their fp32 copy, on one GPU.

Run on a GPU machine from the repository root:
    OUT=/some/dir python3 tools/fsdp/loss_memory.py
It writes $OUT/loss_memory.jsonl (one JSON object per line) and prints the same lines.

The loss as the FSDP stacks run it on an output layer's logits (T tokens x V, bf16):
  upcast  torchtitan's cross_entropy_loss: F.cross_entropy(pred.float(), labels)
  bf16    F.cross_entropy(pred, labels) on the bf16 logits (NeMo AutoModel's MaskedCrossEntropy with
          fp32_upcast false; KempnerForge's default loss_fn "cross_entropy")
  upcast_compiled, bf16_compiled   the same under torch.compile: torchtitan compiles its
          cross_entropy_loss with the model since 2025-02 (components/loss.py build_cross_entropy_loss;
          compile.components defaults to ["model", "loss"]); measured on a second call, after the
          first has compiled it
The logits come from a bf16 matmul whose inputs require gradients, and the Python reference to them
is dropped once the loss is formed (torchtitan: "need to free pred before bwd"), so what remains is
what the loss itself keeps. Measured with the CUDA caching allocator's counters, less what the
matmul's operands and their gradients hold:
  fwd_bytes_per_logit  the allocated peak while the loss is formed, over T x V
  bwd_bytes_per_logit  the allocated peak during the backward up to the logits' gradient, over T x V
parplan prices these as memory_fsdp.c's loss_fwd / loss_bwd: upcast 10 / 12, bf16 4 / 6.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpubench import Jsonl  # noqa: E402 (tools/gpubench.py)

V = 128256  # Llama 3's vocabulary
H = 512     # a narrow output layer: its operands stay small beside the logits


_COMPILED = {}


def loss_fn(kind):
    """The loss a kind names (eager, or torch.compile of the same function, compiled once)."""
    if kind.endswith("_compiled"):
        if kind not in _COMPILED:
            _COMPILED[kind] = torch.compile(loss_fn(kind[:-len("_compiled")]))
        return _COMPILED[kind]
    if kind == "upcast":
        return lambda pred, labels: F.cross_entropy(pred.float(), labels)
    return lambda pred, labels: F.cross_entropy(pred, labels)


def one(kind, T):
    dev = "cuda"
    x = torch.randn(T, H, device=dev, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(V, H, device=dev, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, V, (T,), device=dev)
    # the operands' gradients, allocated once so that the backward's accumulation adds nothing new
    x.grad = torch.zeros_like(x)
    w.grad = torch.zeros_like(w)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    pred = x @ w.t()
    loss = loss_fn(kind)(pred, labels)
    del pred
    torch.cuda.synchronize()
    fwd_peak = torch.cuda.max_memory_allocated() - base
    held = torch.cuda.memory_allocated() - base
    torch.cuda.reset_peak_memory_stats()
    # the backward through the loss to the logits' gradient, then the matmul's (its outputs land in
    # the preallocated x.grad / w.grad)
    loss.backward()
    torch.cuda.synchronize()
    bwd_peak = torch.cuda.max_memory_allocated() - base
    n = float(T) * V
    row = {"kind": kind, "tokens": T, "vocab": V, "logits": n, "fwd_bytes_per_logit": fwd_peak / n,
           "held_after_fwd_bytes_per_logit": held / n, "bwd_bytes_per_logit": bwd_peak / n,
           "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    del x, w, labels, loss
    torch.cuda.empty_cache()
    return row


def main():
    out = Jsonl("loss_memory.jsonl")
    kinds = os.environ.get("KINDS", "upcast,bf16,upcast_compiled,bf16_compiled").split(",")
    for T in (8192, 16384):
        for kind in kinds:
            if kind.endswith("_compiled"):
                one(kind, T)  # compiles (a new shape recompiles); not recorded
            out.emit(one(kind, T))


if __name__ == "__main__":
    main()
