#!/usr/bin/env python3
"""torchao float8 training recipes on one GPU: what rowwise scaling costs against tensorwise and bf16.

Run on a GPU machine from the repository root, with torchao importable (carried as a wheel):
    OUT=/some/dir python3 tools/fp8/fp8_linear.py
It writes $OUT/fp8_linear.jsonl (one JSON object per line) and prints the same lines.

Two parts:
  gemm   torch._scaled_mm with per-tensor scales (torchao's tensorwise recipe) and with per-row x
         per-column fp32 scales (its rowwise recipe), against a bf16 torch.mm, at the three GEMMs of
         each linear layer below: forward (tokens x in -> out), input gradient (tokens x out -> in),
         weight gradient (out x tokens -> in). Operands are row-major A and column-major B, as
         torchao's Float8Linear passes them; use_fast_accum both ways.
  block  the linear layers of one Llama block as a rank of torchtitan's runs holds them (q, k, v from
         the block input; o from q; w1, w3 from the o output; w2 from silu(w1) * w3), converted with
         torchao.float8.convert_to_float8_training(Float8LinearConfig.from_recipe_name(recipe)) and
         compiled with torch.compile as torchtitan compiles each block; forward + backward timed.
         The block time less the GEMM part's times is what the recipe's casts (amax, scale, cast,
         transposes) cost after Inductor fused them.

Shapes (per rank):
  8b_tp8   Llama 3.1 8B, TP 8, local batch 12 x 8192 tokens (torchtitan's async-TP benchmark, 2025-06:
           tests/data/published/runs.csv ttatp-07..12)
  70b_tp8  Llama 3.1 70B, TP 8, local batch 16 x 8192 (ttatp-01..06)
  8b_fsdp  Llama 3.1 8B, no TP, local batch 2 x 8192 (tt2412-01..03)
"""
import os
import sys
import time

import torch
import torch._dynamo
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpubench import Jsonl, bench_ms  # noqa: E402 (tools/gpubench.py)

# Nine blocks compile the same Block.forward; past Dynamo's default limit of 8 recompiles the ninth
# would run eager.
torch._dynamo.config.recompile_limit = 64

T0 = time.time()
BUDGET_S = float(os.environ.get("FP8_BUDGET_S", "500"))
_out = Jsonl("fp8_linear.jsonl")
emit = _out.emit


# name: (tokens M, hidden, q width, k/v width, ffn width), per rank
SHAPES = {
    "8b_tp8": (12 * 8192, 4096, 4096 // 8, 1024 // 8, 14336 // 8),
    "70b_tp8": (16 * 8192, 8192, 8192 // 8, 1024 // 8, 28672 // 8),
    "8b_fsdp": (2 * 8192, 4096, 4096, 1024, 14336),
}


def linears(shape):
    M, h, q, kv, f = shape
    # (name, in, out, count): the block's linear layers
    return [("wq", h, q, 1), ("wkv", h, kv, 2), ("wo", q, h, 1), ("w13", h, f, 2), ("w2", f, h, 1)]


E4M3 = torch.float8_e4m3fn


def gemm_part(name, shape):
    M = shape[0]
    dev = "cuda"
    tot = {"bf16": 0.0, "tensorwise": 0.0, "tensorwise_fast": 0.0, "rowwise": 0.0, "rowwise_fast": 0.0}
    for lname, k, n, count in linears(shape):
        # (role, rows out, contraction, cols out)
        for role, r, c, o in (("fwd", M, k, n), ("dgrad", M, n, k), ("wgrad", n, M, k)):
            a = torch.randn(r, c, device=dev, dtype=torch.bfloat16)
            b = torch.randn(o, c, device=dev, dtype=torch.bfloat16)
            a8, b8 = a.to(E4M3), b.to(E4M3)
            one = torch.tensor(1.0, device=dev)
            sa = torch.ones(r, 1, device=dev, dtype=torch.float32)
            sb = torch.ones(1, o, device=dev, dtype=torch.float32)
            row = {"kind": "gemm", "shape": name, "linear": lname, "role": role, "m": r, "k": c, "n": o,
                   "count": count, "flops": 2.0 * r * c * o}
            row["bf16_ms"] = bench_ms(lambda: torch.mm(a, b.t()))
            for fast in (False, True):
                for recipe, (sa_, sb_) in (("tensorwise", (one, one)), ("rowwise", (sa, sb))):
                    key = recipe + ("_fast" if fast else "")
                    try:
                        row[key + "_ms"] = bench_ms(
                            lambda: torch._scaled_mm(a8, b8.t(), scale_a=sa_, scale_b=sb_,
                                                     out_dtype=torch.bfloat16, use_fast_accum=fast))
                    except Exception as ex:  # noqa: BLE001
                        row[key + "_error"] = repr(ex)[:300]
            for key in tot:
                if key + "_ms" in row:
                    tot[key] += count * row[key + "_ms"]
            emit(row)
            del a, b, a8, b8
    emit({"kind": "gemm_total", "shape": name, **{k + "_ms": v for k, v in tot.items()}})


class Block(nn.Module):
    def __init__(self, h, q, kv, f):
        super().__init__()
        self.wq = nn.Linear(h, q, bias=False)
        self.wk = nn.Linear(h, kv, bias=False)
        self.wv = nn.Linear(h, kv, bias=False)
        self.wo = nn.Linear(q, h, bias=False)
        self.w1 = nn.Linear(h, f, bias=False)
        self.w3 = nn.Linear(h, f, bias=False)
        self.w2 = nn.Linear(f, h, bias=False)

    def forward(self, x):
        q, k, v = self.wq(x), self.wk(x), self.wv(x)
        y = self.wo(q)
        z = self.w2(F.silu(self.w1(y)) * self.w3(y))
        return z, k, v


def block_part(name, shape, recipe):
    M, h, q, kv, f = shape
    torch.manual_seed(0)
    blk = Block(h, q, kv, f).to("cuda", torch.bfloat16)
    if recipe != "bf16":
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training
        convert_to_float8_training(blk, config=Float8LinearConfig.from_recipe_name(recipe))
    cblk = torch.compile(blk)
    x = torch.randn(M, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    gz = torch.randn(M, h, device="cuda", dtype=torch.bfloat16)
    gk = torch.randn(M, kv, device="cuda", dtype=torch.bfloat16)
    gv = torch.randn(M, kv, device="cuda", dtype=torch.bfloat16)

    def step():
        for p in blk.parameters():
            p.grad = None
        x.grad = None
        z, k, v = cblk(x)
        torch.autograd.backward([z, k, v], [gz, gk, gv])

    def fwd():
        with torch.no_grad():
            cblk(x)

    t = time.time()
    step()
    torch.cuda.synchronize()
    compile_s = time.time() - t
    torch.cuda.reset_peak_memory_stats()
    ms = bench_ms(step, iters=10, warm=3)
    peak = torch.cuda.max_memory_allocated() / 2**30
    emit({"kind": "block", "shape": name, "recipe": recipe, "fwdbwd_ms": ms, "compile_s": compile_s,
          "peak_gib": peak, "m": M, "h": h, "q": q, "kv": kv, "f": f})
    del blk, cblk, x, gz, gk, gv
    torch.cuda.empty_cache()


def main():
    import torchao
    emit({"kind": "env", "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
          "torchao": torchao.__version__, "cuda": torch.version.cuda,
          "cublaslt": getattr(torch.backends.cuda, "preferred_blas_library", lambda: None)().__str__()})
    for name, shape in SHAPES.items():
        try:
            gemm_part(name, shape)
        except Exception as ex:  # noqa: BLE001
            emit({"kind": "error", "part": "gemm", "shape": name, "error": repr(ex)[:500]})
    for name, shape in SHAPES.items():
        for recipe in ("bf16", "tensorwise", "rowwise"):
            if time.time() - T0 > BUDGET_S:
                emit({"kind": "skipped", "shape": name, "recipe": recipe, "why": "time budget"})
                continue
            try:
                block_part(name, shape, recipe)
            except Exception as ex:  # noqa: BLE001
                emit({"kind": "error", "part": "block", "shape": name, "recipe": recipe, "error": repr(ex)[:800]})
    emit({"kind": "done", "elapsed_s": time.time() - T0})


if __name__ == "__main__":
    main()
