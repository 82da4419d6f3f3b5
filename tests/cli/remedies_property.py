#!/usr/bin/env python3
"""Remedies that work, as a property over random layouts that do not fit (TAP).

For N random layouts (catalog models and GPUs, a fixed seed) that `parplan check` says do not
fit:
  - every remedy it prints is a complete `parplan check` command that, run as printed, exits 0
    and fits (0 exceptions);
  - where check answers "more GPUs" (no remedy on these GPUs), `parplan plan` on the same GPUs
    finds no layout either;
  - its min_gpus is a count at which `parplan plan` finds a layout, and the next smaller count
    (whole nodes, or half below one node) finds none (checked on the first MIN_CHECKS answers).

usage: remedies_property.py [N [--slow-ok SECONDS]]   (PARPLAN: the binary; default N 1000)
"""
import json
import os
import random
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

PARPLAN = os.environ.get("PARPLAN", "parplan")
SEED = 20261128
MIN_CHECKS = 12


# Each parplan run's limit (300 s; the slowest plain run seen takes 31 s). Under the sanitizers
# (parplan 4-20x slower, two tests at once) a slow run is not a fault they look for:
# `--slow-ok S` sets the limit to S and counts a run past it as not judged (printed);
# otherwise a run past the limit fails the test.
TIMEOUT_S = 300.0
SLOW_OK = False
slow = []


def run(args):
    try:
        p = subprocess.run([PARPLAN] + args, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        slow.append(" ".join(args))
        return 124, "", "timed out after %.0f s" % TIMEOUT_S
    return p.returncode, p.stdout, p.stderr


def catalog():
    rc, out, err = run(["models", "--json"])
    if rc != 0:
        raise SystemExit("Bail out! parplan models --json: " + err)
    d = json.loads(out)
    return d["models"], d["gpus"]


def random_case(rng, models, gpus):
    """(work args, layout args) of one random run; the CLI rejects what does not divide."""
    m = rng.choice(models)
    g = rng.choice(gpus)
    n = rng.choice([1, 2, 4, 8, 8, 16, 16, 32, 64, 128, 256])
    work = ["--model", m["name"], "--gpu", g["name"], "--gpus", str(n)]
    fw = rng.choices(["megatron", "deepspeed", "fsdp"], [6, 2, 2])[0]
    if fw != "megatron":
        work += ["--framework", fw]
    if rng.random() < 0.15:
        work += ["--seq", str(rng.choice([8192, 16384, 32768]))]
    tp = rng.choice([t for t in (1, 2, 4, 8) if t <= n])
    pp = rng.choice([p for p in (1, 2, 4, 8, 16) if tp * p <= n])
    lay = ["--tp", str(tp), "--pp", str(pp), "--mbs", str(rng.choice([1, 1, 2, 4])),
           "--recompute", rng.choice(["none", "selective", "full"])]
    if fw == "megatron":
        if rng.random() < 0.5:
            lay.append("--dist-opt")
        if tp > 1 and rng.random() < 0.7:
            lay.append("--sp")
        if m.get("experts", 0) > 1 and rng.random() < 0.6:
            ep = rng.choice([e for e in (1, 2, 4, 8) if e <= m["experts"]])
            lay += ["--ep", str(ep)]
    else:
        lay += ["--zero", str(rng.choice([0, 1, 2, 3]))]
    return work, lay


def check(work, lay):
    rc, out, err = run(["check"] + work + lay + ["--json"])
    if rc == 124 and not out:
        return None  # past the time limit: counted in `slow`
    if rc == 2 or not out:
        return None  # bad input (the layout does not divide, the framework refuses it)
    return rc, json.loads(out)


def verify_remedy(cmd):
    toks = shlex.split(cmd)
    if toks[:2] != ["parplan", "check"]:
        return False, "not a parplan check command"
    rc, out, err = run(toks[1:] + ["--json"])
    if rc == 124 and not out:
        return None, "timed out"  # counted in `slow`
    if rc != 0 or not out:
        return False, "exit %d: %s" % (rc, err.strip()[:300])
    d = json.loads(out)
    return d["fits"] is True, "fits=%s need %s" % (d["fits"], d["need_bytes"])


def plan_finds(work, gpus=None):
    w = list(work)
    if gpus is not None:
        w[w.index("--gpus") + 1] = str(gpus)
    rc, out, err = run(["plan"] + w + ["--top", "1", "-q"])
    return None if rc == 124 else rc == 0  # None: past the time limit (counted in `slow`)


def main():
    global TIMEOUT_S, SLOW_OK
    target = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    if len(sys.argv) > 3 and sys.argv[2] == "--slow-ok":
        TIMEOUT_S, SLOW_OK = float(sys.argv[3]), True
    models, gpus = catalog()
    gpn = {g["name"]: g["gpus_per_node"] for g in gpus}
    t0 = time.time()
    rng = random.Random(SEED)
    cases = [random_case(rng, models, gpus) for _ in range(target * 12)]

    # the checks, in parallel, until `target` that do not fit
    nofit = []
    with ThreadPoolExecutor(max_workers=4) as ex:
        for start in range(0, len(cases), 256):
            batch = cases[start:start + 256]
            for (work, lay), res in zip(batch, ex.map(lambda c: check(*c), batch)):
                if res and res[0] == 1 and res[1]["fits"] is False:
                    nofit.append((work, lay, res[1]))
            if len(nofit) >= target:
                break
    nofit = nofit[:target]
    t = 0
    t += 1
    ok = len(nofit) >= target
    print("%s %d - %d random layouts that do not fit (seed %d, %d drawn)" %
          ("ok" if ok else "not ok", t, len(nofit), SEED, len(cases)))
    print("# %.0f s" % (time.time() - t0))

    # every remedy command fits when run
    jobs = [(i, r["command"]) for i, (_, _, d) in enumerate(nofit) for r in d["remedies"]]
    with ThreadPoolExecutor(max_workers=4) as ex:
        results = list(ex.map(lambda j: verify_remedy(j[1]), jobs))
    bad = [(jobs[k][1], why) for k, (good, why) in enumerate(results) if good is False]
    with_remedy = sum(1 for _, _, d in nofit if d["remedies"])
    t += 1
    print("%s %d - %d remedy commands from %d of the checks: every one fits when run (%d exceptions)" %
          ("ok" if not bad and jobs else "not ok", t, len(jobs), with_remedy, len(bad)))
    for cmd, why in bad[:10]:
        print("# %s -> %s" % (cmd, why))
    print("# %.0f s" % (time.time() - t0))

    # "more GPUs" only where plan finds nothing on these GPUs
    more = [(work, d) for work, _, d in nofit if not d["remedies"]]
    works = sorted({tuple(w) for w, _ in more})  # plan's answer depends on the work alone
    with ThreadPoolExecutor(max_workers=4) as ex:
        found = list(ex.map(lambda w: plan_finds(list(w)), works))
    wrong = [" ".join(works[k]) for k, f in enumerate(found) if f]
    t += 1
    print("%s %d - %d checks (%d works) answer more GPUs; plan finds a layout on the same GPUs for %d of them" %
          ("ok" if not wrong else "not ok", t, len(more), len(works), len(wrong)))
    for w in wrong[:10]:
        print("# plan finds a layout: %s" % w)
    print("# %.0f s" % (time.time() - t0))

    # min_gpus: plan finds a layout there, and none at the next smaller count
    seen, bad_min, n_min = set(), [], 0
    for work, d in more:
        if not d.get("min_gpus") or n_min >= MIN_CHECKS:
            continue
        key = tuple(work[:work.index("--gpus")] + work[work.index("--gpus") + 2:])
        if key in seen:
            continue
        seen.add(key)
        n_min += 1
        mg = int(d["min_gpus"])
        node = gpn[work[work.index("--gpu") + 1]]
        smaller = mg - node if mg > node else mg // 2
        at = plan_finds(work, mg)
        below = smaller >= 1 and smaller > int(work[work.index("--gpus") + 1]) and plan_finds(work, smaller)
        if at is None or below is None:
            continue  # past the time limit (counted in `slow`)
        if not at or below:
            bad_min.append("%s: min_gpus %d (plan finds one there: %s; at %d: %s)" %
                           (" ".join(work), mg, at, smaller, below))
    t += 1
    print("%s %d - min_gpus of %d checks: plan finds a layout there and none one node fewer (%d wrong)" %
          ("ok" if not bad_min and n_min else "not ok", t, n_min, len(bad_min)))
    for b in bad_min:
        print("# " + b)
    print("# %.0f s" % (time.time() - t0))
    t += 1
    print("%s %d - %d parplan runs past the %g s limit%s" %
          ("ok" if not slow or SLOW_OK else "not ok", t, len(slow), TIMEOUT_S,
           " (not judged: --slow-ok)" if slow and SLOW_OK else ""))
    for cmd in slow[:10]:
        print("# slow: parplan " + cmd)
    print("1..%d" % t)


if __name__ == "__main__":
    main()
