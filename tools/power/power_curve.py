#!/usr/bin/env python3
"""How a Hopper GPU's tensor-core clock follows its power, measured without touching its settings.

Run on a GPU machine from the repository root (no power limit is changed: the GPU runs at the
limit it has):
    OUT=/some/dir python3 tools/power/power_curve.py        (PHASES=mma|gemm: one sweep only)
It writes $OUT/power_curve.jsonl (one JSON object a phase) and prints the same lines.

The idea: a kernel that keeps every SM it runs on busy with tensor-core MMAs (a Triton tl.dot on
tiles held on chip, so no memory traffic) draws a fixed power per busy SM at a given clock. With n
SMs busy the board draws P = P0 + n p(f). Few SMs leave the board under its limit and the clock at
its maximum: those phases give P0 and p at the maximum clock (a straight line in n). Many SMs push
the board to its limit, where the firmware lowers the clock until P meets it: there
p(f) = (limit - P0) / n, one point of the per-SM power curve at each clock the phases reach. That
curve, the thing a lower limit moves along, is what gpu_power.c needs for Hopper.

Phases, each about PHASE_S seconds of back-to-back launches, with nvidia-smi read every ~100 ms in a
thread: the MMA kernel on n = 1 .. all SMs (one CTA an SM); a GEMM main loop (A and B streamed from
memory through tl.dot, as a GEMM kernel runs) on n SMs likewise, whose heavier draw pushes the
clock lower at the limit; then a cuBLAS bf16 GEMM (8192^3) and
PyTorch's flash attention (causal, 8 x 8192 tokens, 32 heads of 128) over the whole GPU, to place
real kernels on the same curve. Each phase records the medians of power and SM clock over its
samples after the first second, and the achieved TFLOP/s.
"""
import os
import statistics
import subprocess
import sys
import threading
import time

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpubench import Jsonl  # noqa: E402 (tools/gpubench.py)

PHASE_S = float(os.environ.get("POWER_PHASE_S", "4"))
BM, BN, BK = 128, 128, 64


@triton.jit
def mma_spin(a_ptr, b_ptr, out_ptr, iters, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # one tile of A and of B, loaded once; the loop is the tensor cores alone
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(iters):
        acc = tl.dot(a, b, acc)
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, tl.sum(acc))


@triton.jit
def gemm_spin(a_ptr, b_ptr, out_ptr, K, reps, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # a GEMM main loop as cuBLAS runs one: each CTA streams its own rows of A and the shared B from
    # memory through the tensor cores, K / BK tiles, reps times over
    pid = tl.program_id(0)
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    a_base = a_ptr + (pid * BM + rm)[:, None] * K
    for _ in range(reps):
        for k in tl.range(0, K, BK, num_stages=3):
            a = tl.load(a_base + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
            acc = tl.dot(a, b, acc)
    tl.store(out_ptr + pid, tl.sum(acc))


class Sampler:
    """nvidia-smi's power draw, SM clock and limit, read in a loop in a thread."""

    def __init__(self):
        self.samples = []  # (time, watts, MHz, limit watts)
        self.stop = False
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        q = ["nvidia-smi", "--query-gpu=power.draw,clocks.sm,power.limit", "--format=csv,noheader,nounits", "-i", "0"]
        while not self.stop:
            t = time.time()
            try:
                p, f, lim = [float(x) for x in subprocess.run(q, capture_output=True, text=True).stdout.split(",")]
                self.samples.append((t, p, f, lim))
            except (ValueError, OSError):
                pass
            time.sleep(max(0.0, 0.1 - (time.time() - t)))

    def window(self, t0, t1):
        return [s for s in self.samples if t0 <= s[0] <= t1]


def phase(sampler, name, fn, flops_per_call, extra):
    fn()
    torch.cuda.synchronize()
    t0 = time.time()
    calls = 0
    ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ev0.record()
    while time.time() - t0 < PHASE_S:
        for _ in range(4):
            fn()
        calls += 4
        torch.cuda.synchronize()
    ev1.record()
    torch.cuda.synchronize()
    t1 = time.time()
    gpu_s = ev0.elapsed_time(ev1) / 1e3
    w = sampler.window(t0 + 1.0, t1)
    row = {"phase": name, "samples": len(w), "seconds": round(t1 - t0, 3),
           "tflops": flops_per_call * calls / gpu_s / 1e12 if gpu_s > 0 else None}
    if w:
        row.update({"power_w": statistics.median(s[1] for s in w), "sm_mhz": statistics.median(s[2] for s in w),
                    "power_min_w": min(s[1] for s in w), "power_max_w": max(s[1] for s in w),
                    "sm_mhz_min": min(s[2] for s in w), "sm_mhz_max": max(s[2] for s in w),
                    "limit_w": statistics.median(s[3] for s in w)})
    row.update(extra)
    time.sleep(1.0)  # let the board settle between phases
    return row


def main():
    out = Jsonl("power_curve.jsonl")
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    sms = props.multi_processor_count
    sampler = Sampler()
    sampler.t.start()
    time.sleep(2.0)
    idle = sampler.window(time.time() - 1.5, time.time())
    out.emit({"phase": "idle", "power_w": statistics.median(s[1] for s in idle) if idle else None,
              "sm_mhz": statistics.median(s[2] for s in idle) if idle else None, "gpu": props.name, "sms": sms,
              "torch": torch.__version__, "triton": triton.__version__})

    a = torch.randn(BM, BK, device=dev, dtype=torch.bfloat16) * 0.01
    b = torch.randn(BK, BN, device=dev, dtype=torch.bfloat16) * 0.01
    res = torch.empty(sms, device=dev, dtype=torch.float32)
    iters = 20000  # about 10-20 ms a launch on one SM
    flop_tile = 2.0 * BM * BN * BK * iters
    mma_ns = {1, 2, 4, 8, 16, 24, 32, 48, 64, 80, 96, 104, 112, 120, 128, sms}
    if os.environ.get("PHASES", "all") == "gemm":
        mma_ns = set()
    for n in sorted(mma_ns):
        if n > sms:
            continue
        def fn(n=n):
            mma_spin[(n,)](a, b, res, iters, BM=BM, BN=BN, BK=BK, num_warps=8)
        out.emit(phase(sampler, f"mma_{n}", fn, flop_tile * n, {"sms_busy": n}))

    # the GEMM main loop on n SMs: the same count, with memory traffic (PHASES=mma skips it)
    if os.environ.get("PHASES", "all") != "mma":
        K = 16384
        ga = torch.randn(sms * BM, K, device=dev, dtype=torch.bfloat16) * 0.01
        gb = torch.randn(K, BN, device=dev, dtype=torch.bfloat16) * 0.01
        reps = 8
        for n in sorted({8, 16, 32, 48, 64, 80, 96, 112, 124, sms}):
            def gfn(n=n):
                gemm_spin[(n,)](ga, gb, res, K, reps, BM=BM, BN=BN, BK=BK, num_warps=8)
            out.emit(phase(sampler, f"gemm_{n}", gfn, 2.0 * BM * BN * K * reps * n, {"sms_busy": n}))
        del ga, gb
    x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    y = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    out.emit(phase(sampler, "cublas_gemm_8192", lambda: torch.mm(x, y), 2.0 * 8192 ** 3, {"sms_busy": sms}))
    del x, y
    q = torch.randn(8, 32, 8192, 128, device=dev, dtype=torch.bfloat16)
    k = torch.randn_like(q)
    v = torch.randn_like(q)

    def attn():
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
            F.scaled_dot_product_attention(q, k, v, is_causal=True)
    out.emit(phase(sampler, "flash_attn_fwd_8k", attn, 4.0 * 8 * 32 * 8192 * 8192 * 128 / 2, {"sms_busy": sms}))
    sampler.stop = True


if __name__ == "__main__":
    main()
