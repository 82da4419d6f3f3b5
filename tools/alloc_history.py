"""Replays of the CUDA caching allocator's history, one device's event list as
torch.cuda.memory._snapshot()["device_traces"][device] records it (torch.cuda.memory._record_memory_history):
each event a dict with "action", "addr", "size", "stream" and, where recorded, "frames".

    replay(events, is_mark=None) -> the allocated and reserved maxima, the step marks, the growths
    live_at(events, upto, where) -> the blocks live after event `upto` and the reserved bytes per stream

Allocated memory moves with "alloc" and "free_completed" (a free the allocator has completed, after the
streams that used the block are done with it); reserved memory with "segment_alloc" (and "segment_map"
for expandable segments) less "segment_free" ("segment_unmap"). Used by tools/fsdp/train.py
(--memory-history) and tools/kf/sitecustomize.py (KF_SNAP); checked on a made-up history by
tests/tools/alloc_history_check.py (test alloc-history). No torch import: the events are plain data.
"""

GROW = ("segment_alloc", "segment_map")
SHRINK = ("segment_free", "segment_unmap")


def replay(events, is_mark=None):
    """One pass over the events. Returns a dict:
      max_alloc      (bytes, event, reserved then): the allocated maximum, first reached
      max_res        (bytes, event, allocated then): the reserved maximum, read at allocations (after
                     the one that grew it)
      marks          the events of the allocations whose frames is_mark(frames) accepts (step marks)
      growth         every growth of the reserved memory with the allocation that caused it: dicts of
                     event, bytes, stream, frames, alloc_bytes, allocated, step (marks seen before it)
    """
    marks, growth = [], []
    alloc = res = 0
    live = {}
    max_alloc = (0, -1, 0)
    max_res = (0, -1, 0)
    pending = None
    for i, e in enumerate(events):
        a, size, st = e["action"], e.get("size", 0), e.get("stream", 0)
        if a == "alloc":
            fr = e.get("frames", [])
            live[e["addr"]] = size
            alloc += size
            if is_mark is not None and is_mark(fr):
                marks.append(i)
            if pending is not None:
                growth.append({"event": i, "bytes": pending[0], "stream": pending[1], "frames": fr,
                               "alloc_bytes": size, "allocated": alloc, "step": len(marks)})
                pending = None
        elif a == "free_completed" and e["addr"] in live:
            alloc -= live.pop(e["addr"])
        elif a in GROW:
            res += size
            pending = (size, st) if pending is None else (pending[0] + size, st)
        elif a in SHRINK:
            res -= size
        if alloc > max_alloc[0]:
            max_alloc = (alloc, i, res)
        if a == "alloc" and res > max_res[0]:
            max_res = (res, i, alloc)
    return {"max_alloc": max_alloc, "max_res": max_res, "marks": marks, "growth": growth}


def live_at(events, upto, where):
    """The state after event `upto`: ({addr: (size, stream, where(frames), event)} of the blocks
    allocated and not freed, {stream: reserved bytes})."""
    live, res = {}, {}
    for i, e in enumerate(events[:upto + 1]):
        a, st = e["action"], e.get("stream", 0)
        if a == "alloc":
            live[e["addr"]] = (e["size"], st, where(e.get("frames", [])), i)
        elif a == "free_completed":
            live.pop(e["addr"], None)
        elif a in GROW:
            res[st] = res.get(st, 0) + e["size"]
        elif a in SHRINK:
            res[st] = res.get(st, 0) - e["size"]
    return live, res


def group(blocks, key):
    """Blocks (live_at's values) summed by key(block): {k: [bytes, blocks, first event, last event]}."""
    out = {}
    for b in blocks:
        g = out.setdefault(key(b), [0, 0, b[3], b[3]])
        g[0] += b[0]
        g[1] += 1
        g[2], g[3] = min(g[2], b[3]), max(g[3], b[3])
    return out
