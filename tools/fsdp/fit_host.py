#!/usr/bin/env python3
"""The host's time of an FSDP2 step, fitted on the looked-at rows of tests/data/fsdp/runs_host.csv.

    python3 tools/fsdp/fit_host.py        (from the repository root; no GPU, no PyTorch)

The model (planner/cost/time_step.c, FSDP_HOST_*): the Python host issues a step in
    H = H_step + m x (H_mb + n x (h_block + r x h_recompute))
seconds (m micro-batches, n blocks, r = 1 where the block's forward runs again under recompute),
and the step takes the soft maximum of the GPU's time G and H: (G^k + H^k)^(1/k).
G is parplan's prediction without the host, the one written in tools/fsdp/configs_host.csv before
the runs. The four host figures solve the host-bound rows (G under 0.75 of the step) by least
squares; k is the grid value that fits the other looked-at rows best. Held-out rows are read
only to print their errors."""
import csv
import math
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CONFIGS = os.path.join(ROOT, "tools/fsdp/configs_host.csv")
RUNS = os.path.join(ROOT, "tests/data/fsdp/runs_host.csv")
BLOCKS = {"3B": 28, "8B": 16}  # the 8B rows ran --layers 16


def configs():
    """name -> (GPU-only prediction s, held out), from the comments written before the runs."""
    out, pred, held = {}, None, False
    for line in open(CONFIGS):
        if line.startswith("#"):
            m = re.search(r"predicted ([0-9.]+) s", line)
            if m:
                pred, held = float(m.group(1)), line.startswith("# held out")
            continue
        name = line.split(",")[0]
        if pred is not None and name not in ("name", ""):
            out[name] = (pred, held)
        pred, held = None, False
    return out


def rows():
    cfg = configs()
    for r in csv.DictReader(l for l in open(RUNS) if not l.startswith("#")):
        if r["status"] != "ok":
            continue
        g, held = cfg[r["name"]]
        yield dict(name=r["name"], G=g, step=float(r["step_ms_median"]) / 1e3, held=held,
                   m=int(r["accum"]), n=BLOCKS[r["flavor"]], rc=1 if r["ac"] == "full" else 0)


def solve(a, b):
    """Least squares a x = b (normal equations, Gaussian elimination)."""
    k = len(a[0])
    ata = [[sum(r[i] * r[j] for r in a) for j in range(k)] for i in range(k)]
    atb = [sum(r[i] * y for r, y in zip(a, b)) for i in range(k)]
    for i in range(k):
        p = max(range(i, k), key=lambda j: abs(ata[j][i]))
        ata[i], ata[p], atb[i], atb[p] = ata[p], ata[i], atb[p], atb[i]
        for j in range(k):
            if j != i and ata[i][i]:
                f = ata[j][i] / ata[i][i]
                ata[j] = [x - f * y for x, y in zip(ata[j], ata[i])]
                atb[j] -= f * atb[i]
    return [atb[i] / ata[i][i] for i in range(k)]


def host(x, r):
    h_step, h_mb, h_blk, h_rc = x
    return h_step + r["m"] * (h_mb + r["n"] * (h_blk + r["rc"] * h_rc))


def step(x, k, r):
    g, h = r["G"], host(x, r)
    return max(g, h) if k == math.inf else (g ** k + h ** k) ** (1 / k)


def main():
    rs = list(rows())
    look = [r for r in rs if not r["held"]]
    bound = [r for r in look if r["G"] < 0.75 * r["step"]]
    x = solve([[1, r["m"], r["m"] * r["n"], r["m"] * r["n"] * r["rc"]] for r in bound], [r["step"] for r in bound])
    grid = [2, 3, 4, 5, 6, 8, 10, 12, 16, math.inf]
    err = {k: sum(math.log(step(x, k, r) / r["step"]) ** 2 for r in look) for k in grid}
    k = min(grid, key=lambda q: err[q])
    print(f"host-bound looked-at rows: {len(bound)}; H_step {x[0]*1e3:.1f} ms, H_mb {x[1]*1e3:.1f} ms, "
          f"h_block {x[2]*1e3:.2f} ms, h_recompute {x[3]*1e3:.2f} ms; k {k}")
    for r in rs:
        p = step(x, k, r)
        print(f"  {r['name']:18s} {'held out' if r['held'] else 'looked':8s} G {r['G']*1e3:6.1f} host "
              f"{host(x, r)*1e3:6.1f} -> {p*1e3:6.1f} ms, measured {r['step']*1e3:6.1f} ({100*(p/r['step']-1):+5.1f}%; "
              f"GPU alone {100*(r['G']/r['step']-1):+5.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
