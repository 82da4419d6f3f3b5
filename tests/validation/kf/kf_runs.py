"""KempnerForge's own train.py on two H200 (tests/data/kf/runs.csv, tools/kf/run_kf.sh) against
`parplan check`, each run stated with the flags a user has:

    parplan check --model <KempnerForge's MoE model, --experts E> --layers L --gpu h200 --gpus 2
      --gbs 2b --mbs b --seq 4096 --framework fsdp --zero 3 --precision bf16 --recompute full
      --param-dtype bf16 --loss bf16 --eager-norm composite-fp32 --keep-logits --router-holds-recompute

(the published rows kf-09/kf-10 state the same stack). Checks, TAP:
  - every run's allocated peak within 3% (looked-at and held-out rows reported apart);
  - the same MoE runs without --router-holds-recompute miss by more than 15% (the term is what
    closes them: the test would pass without it otherwise);
  - step time within 20% per run (a regression bound); the 10% target printed, and where missed.
Diagnostic rows (aux 0: the routers' auxiliary loss left out, not KempnerForge's stack) are listed,
not checked.
    python3 kf_runs.py PARPLAN SOURCE_ROOT
"""
import csv
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap_checks import check_json, report  # noqa: E402 (tests/validation/tap_checks.py)

PEAK_BOUND = 0.03
WITHOUT_MIN = 0.15
STEP_BOUND = 0.20
STEP_TARGET = 0.10


def args_of(r, holds=True):
    g, e, b = int(r["gpus"]), int(r["experts"]), int(r["batch"])
    model = ["--model", "tests/data/published/models/kempner-moe-e8.yaml", "--experts", str(e)] if e else \
            ["--model", "tests/data/kf/models/kempner-dense-2048.yaml"]
    a = model + ["--layers", r["layers"], "--gpu", "h200", "--gpus", str(g), "--gpus-per-node", str(g),
                 "--gbs", str(b * g), "--mbs", str(b), "--seq", "4096", "--framework", "fsdp", "--zero", "3",
                 "--precision", "bf16", "--recompute", "full", "--param-dtype", "bf16", "--loss", "bf16",
                 "--eager-norm", "composite-fp32", "--keep-logits"]
    return a + (["--router-holds-recompute"] if holds else [])


def check(parplan, a):
    d = check_json(parplan, a)
    if "error" in d:
        raise RuntimeError("parplan check %s: %s" % (" ".join(a), d["error"]))
    return d["peak_bytes"] / 2**20, d["step_time_s"] * 1e3


def main():
    parplan, root = os.path.abspath(sys.argv[1]), sys.argv[2]
    with open(os.path.join(root, "tests/data/kf/runs.csv")) as f:
        rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
    os.chdir(root)  # the model paths of args_of are the repository's
    checks = []
    errs = {"0": [], "1": []}
    step_misses = []

    def ok(cond, text):
        checks.append((cond, text))

    for r in rows:
        if r["aux"] == "0":
            print("# %-26s diagnostic (auxiliary loss left out): peak %.0f MiB, not checked" % (r["name"], float(r["peak_mib"])))
            continue
        half = "held out" if r["held_out"] == "1" else "looked at"
        meas = float(r["peak_mib"])
        pk, st = check(parplan, args_of(r))
        e = pk / meas - 1
        errs[r["held_out"]].append(abs(e))
        ok(abs(e) <= PEAK_BOUND, "%s (%s): peak %.0f MiB, parplan %.0f (%+.1f%%, bound %.0f%%); %s" %
           (r["name"], half, meas, pk, 100 * e, 100 * PEAK_BOUND, r["peak_source"]))
        if int(r["experts"]) > 0:
            pk0, _ = check(parplan, args_of(r, holds=False))
            e0 = pk0 / meas - 1
            ok(e0 < -WITHOUT_MIN, "%s: without --router-holds-recompute parplan says %.0f MiB (%+.1f%%): more than "
               "%.0f%% short" % (r["name"], pk0, 100 * e0, 100 * WITHOUT_MIN))
        if r["step_ms"]:
            ms = float(r["step_ms"])
            es = st / ms - 1
            ok(abs(es) <= STEP_BOUND, "%s (%s): step %.0f ms, parplan %.0f (%+.1f%%, bound %.0f%%)" %
               (r["name"], half, ms, st, 100 * es, 100 * STEP_BOUND))
            if abs(es) > STEP_TARGET:
                step_misses.append("%s %+.1f%%" % (r["name"], 100 * es))
    for h, name in (("0", "looked at"), ("1", "held out")):
        if errs[h]:
            print("# peak, %s: %d runs, MAPE %.2f%%, worst %.2f%%" %
                  (name, len(errs[h]), 100 * sum(errs[h]) / len(errs[h]), 100 * max(errs[h])))
    if step_misses:
        print("# TARGET NOT MET: step time within %.0f%% per run: %s (the experts' Python loops and the .tolist()"
              " sync of KempnerForge's MoE are not priced)" % (100 * STEP_TARGET, ", ".join(step_misses)))
    return report(checks)


if __name__ == "__main__":
    sys.exit(main())
