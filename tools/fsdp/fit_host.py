#!/usr/bin/env python3
"""The host's time of an FSDP2 step, fitted on real runs (planner/cost/time_step.c, FSDP_HOST_*,
FSDP_TP_HOST_*). No GPU, no PyTorch:

    python3 tools/fsdp/fit_host.py PARPLAN [--check]      (from the repository root)

The model: the Python host issues a step in
    H = H_step + m x (H_mb + n x (h_block + r x h_recompute))
seconds (m micro-batches, n blocks, r = 1 where the block's forward runs again under recompute),
and the step takes the soft maximum of the GPU's time G and H: (G^k + H^k)^(1/k). G is parplan's
step less its breakdown's host_s (`parplan check ... --json`), so the fit reads the GPU's side from
the model as it is. Two fits, on looked-at rows only (held-out rows, marked "# held out" in the
configs files before the runs, are printed, not fitted):
  1. FSDP2 (no TP, or compiled TP), tests/data/fsdp/runs_host.csv: the four host figures solve the
     host-bound rows (G under 0.75 of the step) by least squares; k is the grid value that fits
     all looked-at rows best;
  2. eager TP (DTensor blocks): h_block and h_recompute on a 0.5 ms grid, H_step, H_mb and k from
     the first fit, over tests/data/fsdp/runs_tp_host.csv, runs_2gpu.csv and
     tests/data/node4/fsdp_runs.csv (two machines);
  3. compiled TP the same way, over runs_ctp_host.csv, runs_tp_host.csv and runs_2gpu.csv.
--check: exit 1 unless time_step.c holds these figures (at the precision it writes them)."""
import csv
import math
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests/validation"))
from tap_checks import check_json, fsdp_run_args  # noqa: E402 (a train.py run's parplan flags, one place)

WHOLE = {"3B": 28, "8B": 32}


def held_out(configs):
    """The names a configs file marks held out (the comment line above the row)."""
    names, marked = set(), False
    if not configs:
        return names
    for line in open(os.path.join(ROOT, configs)):
        if line.startswith("#"):
            marked = line.startswith("# held out")
            continue
        if marked:
            names.add(line.split(",")[0])
        marked = False
    return names


KINDS = ("fsdp", "eager_tp", "compiled_tp")


def rows(parplan, table, configs, kind):
    """The table's runs of one kind (KINDS: no TP; eager TP; compiled TP) that ran, with the GPU's
    side G of parplan's step."""
    held = held_out(configs)
    for r in csv.DictReader(l for l in open(os.path.join(ROOT, table)) if not l.startswith("#")):
        if r["status"] != "ok" or (r.get("alloc_retries") or "0") != "0":
            continue
        tp, comp = int(r.get("tp") or 1), r.get("compile") == "1"
        if KINDS[0 if tp == 1 else 2 if comp else 1] != kind:
            continue
        acc, layers = int(r.get("accum") or 1), int(r["layers"])
        d = check_json(parplan, fsdp_run_args(ROOT, r["flavor"], int(r["gpus"]), int(r["mbs"]), int(r["seq"]), r["ac"],
                                              tp=tp, reshard=r["reshard_after_forward"] != "false", compile=comp,
                                              layers=layers if layers != WHOLE[r["flavor"]] else None, accum=acc,
                                              replicate=int(r.get("replicate") or 1)))
        yield dict(name=r["name"], table=os.path.basename(table), G=d["step_time_s"] - d["breakdown"].get("host_s", 0.0),
                   step=float(r["step_ms_median"]) / 1e3, held=r["name"] in held, m=acc, n=layers,
                   rc=0 if r["ac"] == "none" else 1)


def solve(a, b):
    """Least squares a x = b (normal equations, Gauss-Jordan with partial pivoting)."""
    k = len(a[0])
    m = [[sum(r[i] * r[j] for r in a) for j in range(k)] + [sum(r[i] * y for r, y in zip(a, b))] for i in range(k)]
    for i in range(k):
        p = max(range(i, k), key=lambda j: abs(m[j][i]))
        m[i], m[p] = m[p], m[i]
        for j in range(k):
            if j != i:
                f = m[j][i] / m[i][i]
                m[j] = [x - f * y for x, y in zip(m[j], m[i])]
    return [m[i][k] / m[i][i] for i in range(k)]


def host(x, r):
    h_step, h_mb, h_blk, h_rc = x
    return h_step + r["m"] * (h_mb + r["n"] * (h_blk + r["rc"] * h_rc))


def step(x, k, r):
    g, h = r["G"], host(x, r)
    return max(g, h) if k == math.inf else (g ** k + h ** k) ** (1 / k)


def show(x, k, rs):
    for r in rs:
        p = step(x, k, r)
        print(f"  {r['table']:18s} {r['name']:26s} {'held out' if r['held'] else 'looked':8s} G {r['G']*1e3:7.1f} "
              f"host {host(x, r)*1e3:7.1f} -> {p*1e3:7.1f} ms, measured {r['step']*1e3:7.1f} "
              f"({100*(p/r['step']-1):+5.1f}%; GPU alone {100*(r['G']/r['step']-1):+5.1f}%)")


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    parplan = os.path.abspath(argv[1])
    fsdp = list(rows(parplan, "tests/data/fsdp/runs_host.csv", "tools/fsdp/configs_host.csv", "fsdp"))
    look = [r for r in fsdp if not r["held"]]
    bound = [r for r in look if r["G"] < 0.75 * r["step"]]
    x = solve([[1, r["m"], r["m"] * r["n"], r["m"] * r["n"] * r["rc"]] for r in bound], [r["step"] for r in bound])
    grid = [2, 3, 4, 5, 6, 8, 10, 12, 16, math.inf]
    k = min(grid, key=lambda q: sum(math.log(step(x, q, r) / r["step"]) ** 2 for r in look))
    print(f"FSDP2: {len(bound)} host-bound looked-at rows of {len(look)}: H_step {x[0]*1e3:.1f} ms, H_mb {x[1]*1e3:.1f} ms, "
          f"h_block {x[2]*1e3:.2f} ms, h_recompute {x[3]*1e3:.2f} ms; k {k}")
    show(x, k, fsdp)
    tables = {"eager_tp": (("tests/data/fsdp/runs_tp_host.csv", "tools/fsdp/configs_tp_host.csv"),
                           ("tests/data/fsdp/runs_2gpu.csv", "tools/fsdp/configs_2gpu.csv"),
                           ("tests/data/node4/fsdp_runs.csv", None)),
              "compiled_tp": (("tests/data/fsdp/runs_ctp_host.csv", "tools/fsdp/configs_ctp_host.csv"),
                              ("tests/data/fsdp/runs_tp_host.csv", "tools/fsdp/configs_tp_host.csv"),
                              ("tests/data/fsdp/runs_2gpu.csv", "tools/fsdp/configs_2gpu.csv"))}
    fits = {}
    for kind, tabs in tables.items():
        rs = [r for t, c in tabs for r in rows(parplan, t, c, kind)]
        tlook = [r for r in rs if not r["held"]]
        best = None
        for hb in range(2, 80):
            for hr in range(0, 40):
                y = [x[0], x[1], hb * 0.5e-3, hr * 0.5e-3]
                e = sum(math.log(step(y, k, r) / r["step"]) ** 2 for r in tlook)
                if best is None or e < best[0]:
                    best = (e, y)
        fits[kind] = y = best[1]
        print(f"{kind.replace('_', ' ')}: {len(tlook)} looked-at rows: h_block {y[2]*1e3:.1f} ms, h_recompute {y[3]*1e3:.1f} ms")
        show(y, k, rs)
    if "--check" in argv:
        src = open(os.path.join(ROOT, "planner/cost/time_step.c")).read()
        want = {"FSDP_HOST_STEP_S": f"{x[0]*1e3:.1f}e-3", "FSDP_HOST_MB_S": f"{x[1]*1e3:.1f}e-3",
                "FSDP_HOST_BLOCK_S": f"{x[2]*1e3:.2f}e-3", "FSDP_HOST_RECOMPUTE_S": f"{x[3]*1e3:.2f}e-3",
                "FSDP_HOST_K": f"{k:.1f}"}
        for kind, name in (("eager_tp", "FSDP_TP_HOST"), ("compiled_tp", "FSDP_CTP_HOST")):
            want[name + "_BLOCK_S"] = f"{fits[kind][2]*1e3:.1f}e-3"
            want[name + "_RECOMPUTE_S"] = f"{fits[kind][3]*1e3:.1f}e-3"
        bad = [f"{n} {v} (time_step.c: {m.group(1) if m else 'absent'})" for n, v in want.items()
               for m in [re.search(r"#define " + n + r" (\S+)", src)] if not m or m.group(1) != v]
        print("time_step.c holds this fit" if not bad else "time_step.c differs from this fit: " + "; ".join(bad))
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
