#!/usr/bin/env python3
"""Device side: how a GEMM's time depends on its vocabulary-sized dimension being a multiple of 8,
for Megatron's output layer (logits = X W^T, W [V, h]; its data and weight gradients), bf16, with
torch.matmul on one GPU (cuBLAS as PyTorch calls it). Prints one CSV row per shape and pass:
    python3 tools/memopts/gemm_align.py > $OUT/gemm_align.csv
T tokens (micro-batch x sequence), h hidden, V the vocabulary dimension."""
import torch

T, H = 4096, 4096
VS = [50304, 50257, 50258, 50260, 50264, 50272, 51000, 128256, 128257, 128260, 151936, 151937]


def bench(f, reps=20):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        f()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) / reps


def main():
    dev = torch.device("cuda")
    print(f"# {torch.cuda.get_device_name(0)} torch {torch.__version__} cuda {torch.version.cuda}")
    print("V,pass,ms,tflops")
    x = torch.randn(T, H, device=dev, dtype=torch.bfloat16)
    for v in VS:
        w = torch.randn(v, H, device=dev, dtype=torch.bfloat16)
        g = torch.randn(T, v, device=dev, dtype=torch.bfloat16)
        flops = 2.0 * T * H * v
        for name, f in (("fwd", lambda: torch.matmul(x, w.t())),
                        ("dgrad", lambda: torch.matmul(g, w)),
                        ("wgrad", lambda: torch.matmul(g.t(), x))):
            ms = bench(f)
            print(f"{v},{name},{ms:.4f},{flops / ms / 1e9:.1f}")
        del w, g
        torch.cuda.empty_cache()


main()
