"""Loaded by every Python of a tools/kf/run_kf.sh launch (PYTHONPATH=tools/kf): records what
KempnerForge's own log does not, without touching its code.

KF_PEAK_OUT=dir   at exit each rank writes dir/peak.<rank>.json: torch.cuda.max_memory_allocated
                  and max_memory_reserved in bytes (the log prints GB to one decimal).
KF_SNAP=file      rank 0 records the allocator's history (Python frames only) from start-up and at
                  exit replays it: the allocated peak, and the blocks live at that moment grouped
                  by the innermost frame in kempnerforge/ or torch/ that made them (file:line),
                  largest first, written to file as JSON.
"""
import atexit
import json
import os

# torchrun sets RANK in its workers only: the launcher itself records nothing
_rank = os.environ.get("RANK")


def _peak():
    import torch
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return
    d = os.environ["KF_PEAK_OUT"]
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "peak.%s.json" % _rank), "w") as f:
        json.dump({"rank": int(_rank), "max_alloc_bytes": torch.cuda.max_memory_allocated(),
                   "max_reserved_bytes": torch.cuda.max_memory_reserved()}, f)


def _where(frames):
    """The innermost frame of KempnerForge's code, else the innermost of torch's."""
    for want in ("kempnerforge/", "scripts/train.py"):
        for fr in frames:
            if want in fr.get("filename", ""):
                return "%s:%d %s" % (fr["filename"].split(".kf/")[-1], fr["line"], fr["name"])
    for fr in frames:
        if "/torch/" in fr.get("filename", ""):
            return "%s:%d %s" % (fr["filename"].split("/torch/")[-1], fr["line"], fr["name"])
    return "?"


def _snap():
    import sys
    import torch
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import alloc_history  # tools/alloc_history.py: the allocator history's replay
    s = torch.cuda.memory._snapshot()
    ev = s["device_traces"][0] if s["device_traces"] else []
    peak, peak_i, _ = alloc_history.replay(ev)["max_alloc"]
    # the blocks live at the peak, by the line that made them
    live, _ = alloc_history.live_at(ev, peak_i, _where)
    top = sorted(alloc_history.group(live.values(), lambda b: b[2]).items(), key=lambda kv: -kv[1][0])
    out = {"events": len(ev), "peak_bytes": peak, "peak_event": peak_i,
           "peak_made_by": _where(ev[peak_i].get("frames", [])) if peak_i >= 0 else None,
           "live_at_peak": [{"where": k, "bytes": v[0], "blocks": v[1], "first_event": v[2], "last_event": v[3]}
                            for k, v in top[:40]],
           # where each step's forward, backward and optimizer began (event index), from the
           # allocations KempnerForge's step makes at train.py:808 (input ids), 844-850 (loss,
           # backward) and 869 (optimizer.step)
           "marks": [{"i": i, "where": _where(e.get("frames", []))} for i, e in enumerate(ev)
                     if e["action"] == "alloc" and _where(e.get("frames", [])).startswith(
                         ("scripts/train.py:808", "scripts/train.py:850", "scripts/train.py:869"))][:60]}
    with open(os.environ["KF_SNAP"], "w") as f:
        json.dump(out, f, indent=1)


if _rank is not None and os.environ.get("KF_PEAK_OUT"):
    atexit.register(_peak)
if os.environ.get("KF_SNAP") and _rank == "0":
    try:
        import torch
        torch.cuda.memory._record_memory_history(max_entries=4_000_000, stacks="python")
        atexit.register(_snap)
    except Exception as exc:  # a diagnostic: the run itself must go on
        print("kf sitecustomize: no memory history:", exc)
