#!/usr/bin/env python3
"""Host-link copy rate on one GPU, as Megatron's activation offloading uses it (TransformerEngine
cpu_offload.py: tensors copied to pinned host buffers on a side stream in the forward, back in the
backward). Prints one JSON line per case: bytes, direction, seconds per copy (probes/torch_ref.py bench_ms:
the median of 10 after 3 warm-ups), GB/s; and the same copies run beside a bf16 GEMM loop on the default stream (the
overlapped case the offload relies on): the GEMM loop alone, one copy alone, and four copies beside the loop.

usage: python3 tools/hostlink/copy_bw.py > OUT.jsonl"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "probes"))
from torch_ref import bench_ms  # noqa: E402  (median of CUDA-event timings after warm-ups)


def timed(fn, reps=10):
    return bench_ms(fn, warm=3, reps=reps) / 1e3


def main():
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(0)
    side = torch.cuda.Stream()
    for mib in (64, 256, 1024, 4096):
        n = mib * 1024 * 1024 // 2
        g = torch.empty(n, dtype=torch.bfloat16, device=dev)
        h = torch.empty(n, dtype=torch.bfloat16, pin_memory=True)
        d2h = timed(lambda: h.copy_(g, non_blocking=True))
        h2d = timed(lambda: g.copy_(h, non_blocking=True))
        for d, t in (("d2h", d2h), ("h2d", h2d)):
            print(json.dumps({"gpu": name, "case": "copy", "dir": d, "bytes": 2 * n, "s": t,
                              "gbs": 2 * n / t / 1e9, "torch": torch.__version__}), flush=True)
        del g, h
    # beside compute: 4096^3 bf16 GEMMs on the default stream, 1 GiB copies on a side stream
    x = torch.randn(8192, 8192, dtype=torch.bfloat16, device=dev)
    y = torch.randn(8192, 8192, dtype=torch.bfloat16, device=dev)
    n = 1024 * 1024 * 1024 // 2
    g = torch.empty(n, dtype=torch.bfloat16, device=dev)
    h = torch.empty(n, dtype=torch.bfloat16, pin_memory=True)

    def gemms():
        for _ in range(20):
            torch.mm(x, y)

    alone = timed(gemms, reps=5)
    copy_alone = timed(lambda: h.copy_(g, non_blocking=True), reps=5)

    def both():
        with torch.cuda.stream(side):
            for _ in range(4):
                h.copy_(g, non_blocking=True)
        gemms()
        torch.cuda.current_stream().wait_stream(side)

    t_both = timed(both, reps=5)
    print(json.dumps({"gpu": name, "case": "beside_gemm", "gemm_s": alone, "copy_s": copy_alone,
                      "copies": 4, "bytes": 2 * n, "both_s": t_both, "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
