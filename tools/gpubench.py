"""What the one-GPU measurement scripts under tools/ share: a JSON-lines writer under $OUT and a
CUDA-event timer (best of three runs of `iters` calls, after `warm` calls)."""
import json
import os

import torch


class Jsonl:
    """One JSON object a line into $OUT/NAME (printed as well)."""

    def __init__(self, name):
        out = os.environ.get("OUT", ".")
        os.makedirs(out, exist_ok=True)
        self._f = open(os.path.join(out, name), "w")

    def emit(self, d):
        s = json.dumps(d)
        self._f.write(s + "\n")
        self._f.flush()
        print(s, flush=True)


def bench_ms(fn, iters=20, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    best = None
    for _ in range(3):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(iters):
            fn()
        e.record()
        torch.cuda.synchronize()
        ms = s.elapsed_time(e) / iters
        best = ms if best is None else min(best, ms)
    return best
