#!/usr/bin/env python3
"""CPU smoke test of the FSDP2 harness: every code path of train.py, run_fsdp.sh and
parse_runs.py on a tiny model, two gloo ranks, no GPU. Needs a python3 with PyTorch on PATH
(torchrun is started as python3 -m torch.distributed.run); takes about two minutes.

    python3 tools/fsdp/smoke_cpu.py        # prints "N passed, M failed"; exit 1 on a failure
"""
import csv
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import parse_runs  # noqa: E402

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what, flush=True)


def launch(nproc, *flags):
    """One torchrun launch of train.py on CPU; returns (exit status, results by rank, log)."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           "--nproc_per_node", str(nproc), os.path.join(HERE, "train.py"), "--device", "cpu",
           "--flavor", "tiny", "--seq", "64", "--mbs", "2", "--steps", "4", "--warmup", "1",
           *flags]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    log = p.stdout + p.stderr
    res = {r["rank"]: r for r in parse_runs.results_in(log)}
    return p.returncode, res, log


def finite(xs):
    return bool(xs) and all(math.isfinite(x) for x in xs)


def train_paths():
    rc, res, log = launch(2, "--name", "base")
    base = res.get(0)
    check(rc == 0 and base is not None, f"base run: rc {rc}, result {bool(base)}\n{log[-2000:]}")
    if base is None:
        return
    check(list(res) == [0], "only rank 0 reports a clean run")
    check(base["oom"] is False and base["world_size"] == 2 and base["shard"] == 2
          and base["replicate"] == 1, "base configuration fields")
    check(len(base["step_ms"]) == 4 and base["step_ms_median"] > 0 and finite(base["loss"]),
          f"base steps and losses: {base['step_ms']} {base['loss']}")
    check([r["rank"] for r in base["ranks"]] == [0, 1], "every rank's figures gathered")
    check(base["params_local"] * 2 >= base["params_total"] >= base["params_local"],
          "each rank holds about half the parameters")
    check(base["name"] == "base" and base["flavor"] == "tiny" and base["optimizer_impl"] == "fused",
          "name, flavor, default optimizer")

    # Activation checkpointing and resharding change memory, never the numbers.
    for flags in (("--ac", "full"), ("--ac", "selective"), ("--reshard-after-forward", "false"),
                  ("--ac", "selective", "--reshard-after-forward", "false")):
        rc, res, log = launch(2, *flags)
        r = res.get(0)
        check(rc == 0 and r is not None and r["loss"] == base["loss"],
              f"{flags}: rc {rc}, loss {r and r['loss']} vs {base['loss']}\n{log[-1500:]}")

    rc, res, log = launch(2, "--replicate", "2")
    r = res.get(0)
    check(rc == 0 and r is not None and r["replicate"] == 2 and r["shard"] == 1
          and finite(r["loss"]), f"HSDP replicate 2: rc {rc}\n{log[-1500:]}")

    rc, res, log = launch(2, "--optimizer-impl", "foreach", "--clip", "1.0")
    r = res.get(0)
    check(rc == 0 and r is not None and r["optimizer_impl"] == "foreach" and r["clip"] == 1.0
          and finite(r["loss"]), f"foreach + clip: rc {rc}\n{log[-1500:]}")

    rc, res, log = launch(1, "--ac", "full")
    r = res.get(0)
    check(rc == 0 and r is not None and r["world_size"] == 1 and finite(r["loss"]),
          f"one rank: rc {rc}\n{log[-1500:]}")

    rc, res, log = launch(2, "--simulate-oom-at-step", "2")
    check(rc == 0 and sorted(res) == [0, 1], f"simulated OOM: rc {rc}, ranks {sorted(res)}")
    check(all(r["oom"] and r["oom_step"] == 2 and len(r["step_ms"]) == 1 for r in res.values()),
          "simulated OOM reported by both ranks at step 2 after one good step")

    rc, res, log = launch(2, "--replicate", "3")
    check(rc != 0 and not res, "replicate that does not divide the world size is refused")


def driver(tmp, configs, deadline, env_extra):
    out = os.path.join(tmp, "out")
    env = dict(os.environ, OUT=out, CONFIGS=configs, DEVICE="cpu", **env_extra)
    p = subprocess.run(["bash", os.path.join(HERE, "run_fsdp.sh"), str(deadline)], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=600)
    recs = {}
    jsonl = os.path.join(out, "fsdp_runs.jsonl")
    if os.path.exists(jsonl):
        recs = {r["name"]: r for r in parse_runs.load_records(jsonl)}
    return p, out, recs


def status(recs, name):
    return recs.get(name, {}).get("launch", {}).get("status")


def driver_paths(tmp):
    configs = os.path.join(tmp, "configs.csv")
    with open(configs, "w") as f:
        f.write("# smoke rows\nname,gpus,flavor,mbs,seq,ac,reshard_after_forward,optimizer,"
                "replicate,expect\n"
                "s_none_b1,1,tiny,1,64,none,true,fused,1,fit\n"
                "s_sel_b2,2,tiny,2,64,selective,false,fused,1,fit\n"
                "s_sel_b4,2,tiny,4,64,selective,false,fused,1,fit\n"
                "s_hsdp,2,tiny,1,64,full,true,foreach,2,fit\n"
                "s_four,4,tiny,1,64,none,true,fused,1,fit\n")
    step_args = {"TRAIN_ARGS": "--steps 3 --warmup 1"}

    p, out, recs = driver(tmp, configs, 400, step_args)
    check(p.returncode == 0, f"driver exit {p.returncode}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    for n in ("s_none_b1", "s_sel_b2", "s_sel_b4", "s_hsdp"):
        check(status(recs, n) == "ok", f"driver row {n}: {recs.get(n, {}).get('launch')}")
    check(status(recs, "s_four") == "skipped", "a 4-rank row is skipped with 2 ranks")
    check(sum(l.startswith("fsdp s_") for l in p.stdout.splitlines()) == 5,
          "one progress line per row")
    check(os.path.exists(os.path.join(out, "fsdp_logs.tgz")), "logs packed")

    # The table, from the records and from the packed logs.
    table = os.path.join(tmp, "runs.csv")
    parse_runs.main(["csv", os.path.join(out, "fsdp_runs.jsonl"), "-o", table,
                    "--configs", configs])
    with open(table) as f:
        first = f.readline()
        rows = {r["name"]: r for r in csv.DictReader(f)}
    check(first.startswith("# Real PyTorch FSDP2 runs"), "table starts with its provenance")
    check(set(rows) == {"s_none_b1", "s_sel_b2", "s_sel_b4", "s_hsdp", "s_four"},
          f"table rows {sorted(rows)}")
    r = rows.get("s_hsdp", {})
    check(r.get("status") == "ok" and r.get("replicate") == "2" and r.get("shard") == "1"
          and r.get("optimizer") == "foreach" and float(r.get("step_ms_median") or 0) > 0,
          f"HSDP row {r}")
    check(rows.get("s_four", {}).get("status") == "skipped"
          and rows.get("s_four", {}).get("expect") == "fit", "skipped row keeps its config")
    parse_runs.main(["csv", os.path.join(out, "fsdp_logs.tgz"), "-o", table + ".2",
                    "--configs", configs])
    with open(table + ".2") as f:
        f.readline()
        rows2 = {r["name"]: r for r in csv.DictReader(f)}
    check(rows2.get("s_sel_b2", {}).get("step_ms_median") == rows["s_sel_b2"]["step_ms_median"],
          "the table from the logs agrees with the one from the records")

    # A sweep that runs out of memory skips its larger micro-batches.
    p, out, recs = driver(tmp, configs, 400,
                          {"ONLY": "s_sel_b2,s_sel_b4", "TRAIN_ARGS": "--simulate-oom-at-step 1"})
    check(status(recs, "s_sel_b2") == "oom" and status(recs, "s_sel_b4") == "skipped"
          and "ran out of memory" in recs["s_sel_b4"]["launch"]["reason"],
          f"sweep skip after OOM: {[recs.get(n, {}).get('launch') for n in ('s_sel_b2', 's_sel_b4')]}")
    check(set(recs) == {"s_sel_b2", "s_sel_b4"}, "ONLY selects rows")

    # A launch that overruns is killed at its limit; the next row no longer fits the deadline.
    p, out, recs = driver(tmp, configs, 60,
                          {"ONLY": "s_none_b1,s_sel_b2", "TRAIN_ARGS": "--steps 1000000 --warmup 1"})
    check(status(recs, "s_none_b1") == "timeout", f"overrun: {recs.get('s_none_b1')}")
    check(status(recs, "s_sel_b2") == "skipped"
          and "deadline" in recs["s_sel_b2"]["launch"]["reason"], "deadline skip")


def main():
    r = subprocess.run([sys.executable, os.path.join(HERE, "check_ac.py")], capture_output=True,
                       text=True)
    check(r.returncode == 0, f"check_ac.py: {r.stdout}{r.stderr}")
    train_paths()
    with tempfile.TemporaryDirectory() as tmp:
        driver_paths(tmp)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
