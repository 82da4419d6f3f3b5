#!/usr/bin/env python3
"""Device side: causal attention's sustained rate against a large bf16 GEMM's on one GPU, torch's
scaled_dot_product_attention by backend (FlashAttention-2, cuDNN fused attention), head dim 128,
32 heads, batch 1, sequence 4096-65536. FLOPs as parplan counts them (time.c pp_time_flash_s):
forward 2 x heads x queries x keys_avg x (qk_dim + v_dim) with keys_avg = (s + 1) / 2, backward twice
the forward. Prints CSV: backend, seq, fwd_ms, bwd_ms, fwd_tflops, bwd_tflops, over the GEMM's rate.
    python3 tools/memopts/attn_rate.py > $OUT/attn_rate.csv"""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def timed(f, reps):
    for _ in range(2):
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
    dev = "cuda"
    x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    gemm_ms = timed(lambda: x @ x, 20)
    gemm = 2 * 8192**3 / gemm_ms / 1e9
    print(f"# {torch.cuda.get_device_name(0)} torch {torch.__version__} cudnn {torch.backends.cudnn.version()}")
    print(f"# bf16 GEMM 8192^3: {gemm:.1f} TFLOP/s")
    print("backend,seq,fwd_ms,bwd_ms,fwd_tflops,bwd_tflops,fwd_over_gemm,bwd_over_gemm")
    H, D = 32, 128
    for name, be in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        for s in (4096, 8192, 16384, 32768, 65536):
            q, k, v = (torch.randn(1, H, s, D, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
            fl = 2.0 * H * s * (s + 1) / 2 * (2 * D)
            reps = max(3, int(2e13 / fl))
            try:
                with sdpa_kernel(be):
                    fwd = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), reps)
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    g = torch.randn_like(o)

                    def fb():
                        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                        out.backward(g)
                    both = timed(fb, reps)
            except RuntimeError as e:
                print(f"# {name} {s}: {str(e)[:120]}")
                continue
            bwd = both - fwd
            ft, bt = fl / fwd / 1e9, 2 * fl / bwd / 1e9
            print(f"{name},{s},{fwd:.3f},{bwd:.3f},{ft:.1f},{bt:.1f},{ft / gemm:.3f},{bt / gemm:.3f}")
            del q, k, v, o, g
            torch.cuda.empty_cache()


main()
