"""Device side: pretrain_gpt.py under a shim that prints, after every train_step, the caching
allocator's segments summed by memory pool and stream (torch.cuda.memory_snapshot():
segment_pool_id (0, 0) is the general pool; a CUDA graph's private pool has its own id), so that
what a full-iteration CUDA graph adds to reserved memory can be told apart from the eager
iteration's cached blocks. run.sh copies this file as pretrain_gpt.py into a folder of its own and
points MEGATRON_LM there, with MEGATRON_REAL the real checkout; nothing else changes."""
import collections
import os
import runpy
import sys

real = os.environ["MEGATRON_REAL"]
sys.path.insert(0, real)

import torch  # noqa: E402
import megatron.training.training as training  # noqa: E402

_step = training.train_step
_it = [0]


def _summary(tag):
    agg = collections.defaultdict(lambda: [0, 0, 0])
    for s in torch.cuda.memory_snapshot():
        key = (str(s.get("segment_pool_id")), s.get("stream"))
        agg[key][0] += s["total_size"]
        agg[key][1] += s["allocated_size"]
        agg[key][2] += 1
    parts = " ; ".join(
        f"pool {k[0]} stream {k[1]}: reserved {v[0] / 2**20:.0f} allocated {v[1] / 2**20:.0f} segments {v[2]}"
        for k, v in sorted(agg.items())
    )
    print(
        f"PARPLAN_POOLS {tag} it {_it[0]} | {parts} | max_allocated {torch.cuda.max_memory_allocated() / 2**20:.0f}"
        f" reserved {torch.cuda.memory_reserved() / 2**20:.0f}",
        flush=True,
    )


def _wrapped(*a, **k):
    r = _step(*a, **k)
    _it[0] += 1
    torch.cuda.synchronize()
    _summary("after_step")
    return r


training.train_step = _wrapped
sys.argv[0] = os.path.join(real, "pretrain_gpt.py")
runpy.run_path(sys.argv[0], run_name="__main__")
