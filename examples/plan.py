#!/usr/bin/env python3
"""parplan from Python (pip install . at the repository root): plan a 70B model on 64 H100s,
check one layout, and rank what to rent for a token budget. Each call returns the document the
CLI's --json prints."""
import os

import parplan

here = os.path.dirname(os.path.abspath(__file__))

best = parplan.plan(model="llama3-70b", gpu="h100-sxm", gpus=64, gpus_per_node=8)["candidates"][0]
print("plan's #1 for llama3-70b on 64 x h100-sxm: %s, %.2f s per step" % (best["label"], best["step_time_s"]))

run = parplan.check(model="llama3-8b", gpu="h100-sxm", gpus=8, tp=2, dist_opt=True)
lo, hi = run["step_time_range_s"]
print("llama3-8b, tp 2 on 8 x h100-sxm: fits %s, %.1f s per step (%.1f-%.1f by the %s band)"
      % (run["fits"], run["step_time_s"], lo, hi, run["step_time_band"]["family"]))

rent = parplan.plan(model="llama3-70b", gpu=["a100-80gb", "h100-sxm", "h200"], gpus=[64, 128], tokens=1e12,
                    prices=os.path.join(here, "prices.yaml"))
for row in rent["rows"][:3]:
    print("%-10s x %4d: %6.1f days, $%.0f%s" % (row["gpu"], row["gpus"], row["days"], row["cost"],
                                                 "  (Pareto front)" if row["pareto"] else ""))

try:
    parplan.check(model="llama3-8b", gpu="h100-sxm", gpus=8, tp=3)
except parplan.Error as e:
    print("bad input raises parplan.Error:", e)
