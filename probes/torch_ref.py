#!/usr/bin/env python3
"""PyTorch figures on the machine at hand, for comparing parplan-probe with the framework on the
same GPU (the anchors in tests/data/anchors were measured on other machines of the same kinds, and
have no attention rows and no single-GPU H200 rows).

Measures, with CUDA events, warm-up and the median of repeats (no L2 flush: as the anchors):
  gemm      bf16/fp16/tf32/fp32 8192^3 (torch.matmul)
  gemm_shape the anchors' transformer GEMMs, F.linear in bf16 (4096 tokens, h 2048..8192, TP 1..8)
  bandwidth copy (y.copy_(x), fp32, 1 GiB) and mul (torch.mul(a, b, out=c), fp32)
  attention F.scaled_dot_product_attention(is_causal=True), bf16, q/k/v as transposed views of
            [b, s, heads, d] (as a GPT block makes them), default backend and each of cuDNN and
            flash forced, forward and forward+backward
  layer     a GPT block (LayerNorm, QKV, SDPA causal, projection, GELU MLP 4h, residuals) in bf16,
            forward and forward+backward, TFLOP/s = (24bsh^2 + 4bs^2h) x (1 or 3) / time
  attention_long  the same at 16k-64k tokens, causal and the non-causal blocks of a context-parallel
            ring step (not part of the default set)
  attention_headdim  the same at equal work with heads of 128 and of 64 (not part of the default set)
  gemm_fp8  FP8 against bf16 at the squares 2048/4096/8192 and the transformer shapes of
            `parplan-probe gemm --dtype bf16,fp8 --hidden H --heads H/128 --tp T --seq TOKENS`
            (QKV 3h/tp x h, proj h x h/tp, FC1 4h/tp x h, FC2 h x 4h/tp at TOKENS tokens):
            torch._scaled_mm on e4m3 operands with per-tensor fp32 scales of 1.0, bf16 out, fast
            accumulation (the probe's and Transformer Engine's forward GEMM), against F.linear in
            bf16 on the same shapes (not part of the default set)
Prints one JSON object per line (the anchors' format) on stdout.

usage: python3 probes/torch_ref.py [gemm] [gemm_shape] [bandwidth] [attention] [layer] [gemm_fp8] [attention_long] [attention_headdim]
                                   [--hidden 4096,8192] [--tp 1,2] [--tokens 4096]
       (default: all but gemm_fp8, attention_long and attention_headdim; --hidden/--tp/--tokens shape gemm_fp8)
"""
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


def bench_ms(fn, warm=3, reps=10):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


def emit(**kv):
    print(json.dumps(kv), flush=True)


def gemm():
    n = 8192
    for name, dt, tf32 in (("bf16", torch.bfloat16, False), ("fp16", torch.float16, False),
                           ("tf32", torch.float32, True), ("fp32", torch.float32, False)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(n, n, device="cuda", dtype=dt)
        b = torch.randn(n, n, device="cuda", dtype=dt)
        ms = bench_ms(lambda: a @ b, reps=10 if name not in ("fp32",) else 5)
        emit(kind="gemm", dtype=name, m=n, n=n, k=n, tflops=2 * n ** 3 / ms / 1e9)
    torch.backends.cuda.matmul.allow_tf32 = False


def gemm_shape():
    """the anchors' transformer GEMMs: F.linear(x [4096, k], W [n, k]) in bf16, TP split"""
    for h in (2048, 4096, 5120, 8192):
        for tp in (1, 2, 4, 8):
            for op, n, k in (("qkv", 3 * h // tp, h), ("proj", h, h // tp), ("fc1", 4 * h // tp, h),
                             ("fc2", h, 4 * h // tp)):
                x = torch.randn(4096, k, device="cuda", dtype=torch.bfloat16)
                w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
                ms = bench_ms(lambda: F.linear(x, w))
                emit(kind="gemm_shape", h=h, tp=tp, op=op, m=4096, k=k, n=n, us=ms * 1e3,
                     tflops=2 * 4096 * n * k / ms / 1e9)


def bandwidth():
    x = torch.rand(1 << 28, device="cuda")
    y = torch.empty_like(x)
    ms = bench_ms(lambda: y.copy_(x))
    emit(kind="bandwidth", op="copy", gbs=2 * x.numel() * 4 / ms / 1e6)
    a = torch.rand(1 << 27, device="cuda")
    b = torch.rand(1 << 27, device="cuda")
    c = torch.empty_like(a)
    ms = bench_ms(lambda: torch.mul(a, b, out=c))
    emit(kind="bandwidth", op="mul", gbs=3 * a.numel() * 4 / ms / 1e6)


ATTN_SHAPES = [(16, 1024, 16, 64), (8, 2048, 16, 128), (4, 2048, 32, 128), (2, 4096, 32, 128),
               (1, 8192, 32, 128)]


def attention():
    attention_rows([(b, s, h, d, True) for b, s, h, d in ATTN_SHAPES], warm=3, reps=10, tag_causal=False)


# Long sequences (torchtitan's context-parallel rows run 16k-64k-token chunks): causal at s, and
# the non-causal blocks a ring step of context parallelism computes (q and kv chunks of s tokens)
ATTN_LONG = [(1, 16384, 32, 128, True), (1, 32768, 32, 128, True), (1, 65536, 32, 128, True),
             (1, 16384, 32, 128, False), (1, 32768, 32, 128, False)]


def attention_long():
    attention_rows(ATTN_LONG)


def attention_rows(shapes, warm=2, reps=5, tag_causal=True):
    """SDPA at each (b, s, heads, head_dim, causal) with each backend; tag_causal: the rows say
    "causal" (the default set's rows, all causal, never did)"""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = [("default", None), ("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)]
    for b, s, h, d, causal in shapes:
        qkv = torch.randn(b, s, 3, h, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        do = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
        flops = 4.0 * b * s * s * h * d  # every score counted, as ATTN_SHAPES' rows
        for name, be in backends:
            def fwd():
                q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

            def fwdbwd():
                o = fwd()
                o.backward(do)
            try:
                if be is None:
                    t_f, t_fb = bench_ms(fwd, warm=warm, reps=reps), bench_ms(fwdbwd, warm=warm, reps=reps)
                else:
                    with sdpa_kernel([be]):
                        t_f, t_fb = bench_ms(fwd, warm=warm, reps=reps), bench_ms(fwdbwd, warm=warm, reps=reps)
            except RuntimeError as e:
                emit(kind="attention", backend=name, b=b, s=s, heads=h, head_dim=d,
                     **({"causal": causal} if tag_causal else {}), error=str(e)[:120])
                continue
            emit(kind="attention", backend=name, b=b, s=s, heads=h, head_dim=d,
                 **({"causal": causal} if tag_causal else {}), fwd_ms=t_f,
                 fwdbwd_ms=t_fb, fwd_tflops=flops / t_f / 1e9, fwdbwd_tflops=3 * flops / t_fb / 1e9)
        del qkv, do
        torch.cuda.empty_cache()


# Head width at equal work: 32 heads of 128 against 64 heads of 64 (gpt-oss's attention shape)
ATTN_HEADDIM = [(2, 4096, 32, 128, True), (2, 4096, 64, 64, True), (1, 8192, 32, 128, True),
                (1, 8192, 64, 64, True)]


def attention_headdim():
    attention_rows(ATTN_HEADDIM)


class Block(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.ln2 = nn.LayerNorm(h)
        self.fc1 = nn.Linear(h, 4 * h)
        self.fc2 = nn.Linear(4 * h, h)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, h // self.heads).unbind(2)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.proj(o.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


LAYER_SHAPES = [(1024, 16, 1024, 16), (2048, 16, 2048, 8), (4096, 32, 2048, 4), (5120, 40, 2048, 4),
                (8192, 64, 2048, 2)]


def layer():
    for h, heads, s, b in LAYER_SHAPES:
        m = Block(h, heads).cuda().to(torch.bfloat16)
        x = torch.randn(b, s, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        dy = torch.randn(b, s, h, device="cuda", dtype=torch.bfloat16)

        def fwdbwd():
            m(x).backward(dy)
        with torch.no_grad():
            t_f = bench_ms(lambda: m(x))
        t_fb = bench_ms(fwdbwd)
        fl = 24.0 * b * s * h * h + 4.0 * b * s * s * h
        emit(kind="layer", h=h, heads=heads, seq=s, mbs=b, fwd_ms=t_f, fwdbwd_ms=t_fb,
             fwd_tflops=fl / t_f / 1e9, fwdbwd_tflops=3 * fl / t_fb / 1e9)
        del m, x, dy
        torch.cuda.empty_cache()


def fp8_shapes(hiddens, tps):
    """(op, h, tp, n, k): the squares (h 0) and the probe's model-mode transformer shapes"""
    out = [("square", 0, 0, n, n) for n in (2048, 4096, 8192)]
    for h in hiddens:
        for tp in tps:
            out += [("qkv", h, tp, 3 * h // tp, h), ("proj", h, tp, h, h // tp), ("fc1", h, tp, 4 * h // tp, h),
                    ("fc2", h, tp, h, 4 * h // tp)]
    return out


def gemm_fp8(hiddens, tps, tokens):
    one = torch.ones((), device="cuda", dtype=torch.float32)
    for op, h, tp, n, k in fp8_shapes(hiddens, tps):
        m = n if op == "square" else tokens
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        ms = bench_ms(lambda: F.linear(x, w))
        emit(kind="gemm_fp8", dtype="bf16", op=op, h=h, tp=tp, m=m, n=n, k=k, us=ms * 1e3,
             tflops=2 * m * n * k / ms / 1e9)
        # _scaled_mm wants the first operand row-major and the second column-major: w8.t() is
        try:
            x8, w8 = x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
            ms = bench_ms(lambda: torch._scaled_mm(x8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                                   use_fast_accum=True))
        except (RuntimeError, AttributeError, TypeError) as e:
            emit(kind="gemm_fp8", dtype="fp8", op=op, h=h, tp=tp, m=m, n=n, k=k, error=str(e)[:160])
            continue
        emit(kind="gemm_fp8", dtype="fp8", op=op, h=h, tp=tp, m=m, n=n, k=k, us=ms * 1e3,
             tflops=2 * m * n * k / ms / 1e9)
        del x, w, x8, w8
    torch.cuda.empty_cache()


def int_list(s):
    return [int(v) for v in s.split(",") if v]


def main():
    ap = argparse.ArgumentParser(description="PyTorch's figures on this GPU, one JSON object per line")
    known = ["gemm", "gemm_shape", "bandwidth", "attention", "layer", "gemm_fp8", "attention_long",
             "attention_headdim"]
    # (no `choices`: argparse < 3.12 checks an empty nargs="*" default against them and fails)
    ap.add_argument("parts", nargs="*", help=" ".join(known))
    ap.add_argument("--hidden", type=int_list, default=[4096, 8192], help="gemm_fp8: hidden sizes")
    ap.add_argument("--tp", type=int_list, default=[1, 2], help="gemm_fp8: TP sizes")
    ap.add_argument("--tokens", type=int, default=4096, help="gemm_fp8: tokens (m) of the transformer shapes")
    a = ap.parse_args()
    for p in a.parts:
        if p not in known:
            ap.error(f"unknown part {p!r} (choose from {', '.join(known)})")
    parts = a.parts or known[:-3]
    emit(kind="env", gpu=torch.cuda.get_device_name(), torch=torch.__version__,
         cudnn=torch.backends.cudnn.version(), cuda=torch.version.cuda)
    for p in parts:
        if p == "gemm_fp8":
            gemm_fp8(a.hidden, a.tp, a.tokens)
            continue
        {"gemm": gemm, "gemm_shape": gemm_shape, "bandwidth": bandwidth, "attention": attention,
         "layer": layer, "attention_long": attention_long, "attention_headdim": attention_headdim}[p]()


if __name__ == "__main__":
    main()
