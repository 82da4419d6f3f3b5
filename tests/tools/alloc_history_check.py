#!/usr/bin/env python3
"""tools/alloc_history.py (the allocator history's replay that tools/fsdp/train.py --memory-history and
tools/kf/sitecustomize.py read their peaks from) on a made-up history whose figures are worked out by
hand below. TAP. usage: alloc_history_check.py SOURCE_ROOT"""
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "tools"))
import alloc_history  # noqa: E402

F = lambda line, name="f": [{"filename": "x.py", "line": line, "name": name}]  # noqa: E731
EV = [
    {"action": "segment_alloc", "size": 1000, "stream": 0},                                   # 0  reserved 1000
    {"action": "alloc", "addr": 1, "size": 400, "stream": 0, "frames": F(1, "step_mark")},    # 1  400, mark: growth 1000
    {"action": "alloc", "addr": 2, "size": 500, "stream": 0, "frames": F(2)},                 # 2  900
    {"action": "free_requested", "addr": 1, "size": 400, "stream": 0},                        # 3  not yet free
    {"action": "free_completed", "addr": 1, "size": 400, "stream": 0},                        # 4  500
    {"action": "segment_map", "size": 2000, "stream": 7},                                     # 5  reserved 3000
    {"action": "alloc", "addr": 3, "size": 1800, "stream": 7, "frames": F(3)},                # 6  2300: growth 2000
    {"action": "alloc", "addr": 4, "size": 300, "stream": 0, "frames": F(2, "step_mark")},    # 7  2600, mark
    {"action": "free_completed", "addr": 3, "size": 1800, "stream": 7},                       # 8  800
    {"action": "segment_unmap", "size": 2000, "stream": 7},                                   # 9  reserved 1000
    {"action": "alloc", "addr": 5, "size": 100, "stream": 0, "frames": F(4)},                 # 10 900
]


def main():
    r = alloc_history.replay(EV, is_mark=lambda fr: any(f["name"] == "step_mark" for f in fr))
    live, res = alloc_history.live_at(EV, r["max_alloc"][1], lambda fr: "x.py:%d" % fr[0]["line"])
    groups = alloc_history.group(live.values(), lambda b: b[2])
    checks = [
        (r["max_alloc"] == (2600, 7, 3000), f"allocated maximum 2600 at event 7 with 3000 reserved: {r['max_alloc']}"),
        (r["max_res"] == (3000, 6, 2300), f"reserved maximum 3000, read at the allocation of event 6: {r['max_res']}"),
        (r["marks"] == [1, 7], f"step marks at events 1 and 7: {r['marks']}"),
        ([(g["event"], g["bytes"], g["stream"], g["step"]) for g in r["growth"]] == [(1, 1000, 0, 1), (6, 2000, 7, 1)],
         "two growths: 1000 on stream 0 taken by event 1's allocation (the first mark's), 2000 on stream 7 by "
         "event 6's"),
        (sorted(live) == [2, 3, 4] and res == {0: 1000, 7: 2000}, f"live after event 7: blocks 2, 3, 4; reserved "
                                                                  f"1000 + 2000 by stream: {sorted(live)}, {res}"),
        (groups == {"x.py:2": [800, 2, 2, 7], "x.py:3": [1800, 1, 6, 6]},
         f"grouped by line: x.py:2 800 bytes in 2 blocks (events 2-7), x.py:3 1800: {groups}"),
        (alloc_history.replay([])["max_alloc"] == (0, -1, 0), "an empty history: no maximum"),
    ]
    for i, (ok, msg) in enumerate(checks, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {msg}")
    print(f"1..{len(checks)}")
    return 0 if all(ok for ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
