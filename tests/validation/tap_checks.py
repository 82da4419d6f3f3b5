"""What the Python validation scripts that read device measurements share: a measurement file's
JSON lines, a C #define's value from a source file, the `parplan check` flags of a run of
tools/fsdp/train.py, `parplan check --json` run and parsed, and the TAP report of (ok, message)
checks."""
import csv
import json
import os
import re
import subprocess


def jsonl(root, rel):
    """The JSON objects of the file rel under the source root, one a line."""
    with open(os.path.join(root, rel)) as f:
        return [json.loads(line) for line in f if line.strip()]


def constant(src, name):
    """The number a `#define NAME value` gives in src, or None."""
    m = re.search(r"#define\s+%s\s+([0-9.]+)" % name, src)
    return float(m.group(1)) if m else None


def fsdp_run_args(root, flavor, gpus, mbs, seq, ac, tp=1, reshard=True, compile=False, layers=None, accum=1,
                  replicate=1, cp=1, repeat_kv=True):
    """The `parplan check` flags that state a run of tools/fsdp/train.py on H200s (its flavor 8B is the
    catalog's llama3-8b, 3B the committed Llama-3.2-3B file; layers: its --layers override; accum its
    micro-batches a step; replicate its HSDP replicas; repeat_kv: K and V repeated to the query heads,
    as train.py's model did in every run without --enable-gqa); the C replays' twin is rp_fsdp_check
    (tests/validation/node4/replay_common.c)."""
    model = "llama3-8b" if flavor == "8B" else os.path.join(root, "tests/data/fsdp/models/llama-3.2-3b.yaml")
    a = ["--model", model] + (["--layers", str(layers)] if layers else []) + [
        "--gpu", "h200", "--gpus", str(gpus), "--gpus-per-node", str(gpus), "--framework", "fsdp",
        "--zero", "3" if reshard else "2", "--gbs", str(gpus // tp // cp * mbs * accum), "--mbs", str(mbs),
        "--seq", str(seq), "--recompute", ac]
    return (a + (["--tp", str(tp)] if tp > 1 else []) + (["--compile"] if compile else []) +
            (["--replicate", str(replicate)] if replicate > 1 else []) + (["--cp", str(cp)] if cp > 1 else []) +
            (["--repeat-kv"] if repeat_kv else []))


def fsdp_profiles(root, records):
    """{run name: the profiled step's summary (train.py profile_summary)} from the runs' records
    (tools/fsdp/run_fsdp.sh's fsdp_runs.jsonl, a file under tests/data/fsdp)."""
    return {r["name"]: r["profile"] for r in jsonl(root, os.path.join("tests/data/fsdp", records))
            if r.get("profile")}


def fsdp_table(root, name):
    """The rows of a tools/fsdp/parse_runs.py table under tests/data/fsdp (its '#' lines skipped)."""
    with open(os.path.join(root, "tests/data/fsdp", name)) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def fsdp_row_args(root, r):
    """fsdp_run_args for a row of a tools/fsdp/parse_runs.py table (tests/data/fsdp/runs_*.csv);
    its micro-batches, TP and CP ranks (CP ranks share a sample) from the row's columns."""
    a = fsdp_run_args(root, r["flavor"], int(r["gpus"]), int(r["mbs"]), int(r["seq"]), r["ac"],
                      tp=int(r.get("tp") or 1), reshard=r["reshard_after_forward"] == "true",
                      compile=r.get("compile") == "1", layers=r.get("layers"),
                      accum=int(r.get("accum") or 1), cp=int(r.get("cp") or 1),
                      repeat_kv=r.get("enable_gqa") != "1")
    a += ["--compile-loss"] if r.get("compile_loss") == "1" else []
    f8 = r.get("float8") or "none"  # train.py --float8: torchao's recipe of the block linears
    a += [] if f8 == "none" else ["--precision", "fp8"] + (["--fp8-scaling", "rowwise"] if f8 == "rowwise" else [])
    return a + (["--sdpa-backend", "cudnn"] if r.get("sdpa_backend") == "cudnn" else [])


def each_predicted(parplan, runs, args_of, n, checks):
    """The runs of a device table against `parplan check`: appends to checks that all n ran and any
    run parplan could not state, and yields (row, prediction JSON, measured step s, step error %,
    predicted allocated peak MiB, peak error %) for the others. args_of(row) gives the flags."""
    checks.append((len(runs) == n and all(r["status"] == "ok" for r in runs), f"{len(runs)} runs, all ran"))
    for r in runs:
        d, meas, err, peak, perr = step_and_peak(parplan, args_of(r), r)
        if meas is None:
            checks.append((False, f"{r['name']}: {d.get('error')}"))
            continue
        yield r, d, meas, err, peak, perr


def step_and_peak(parplan, args, r):
    """`parplan check` of a run's flags against its row: (prediction JSON, measured step s, step error %,
    predicted allocated peak MiB, peak error %), or (prediction JSON with its error, None, ...)."""
    d = check_json(parplan, args)
    if "step_time_s" not in d:
        return d, None, None, None, None
    meas = float(r["step_ms_median"]) / 1e3
    peak = d["peak_bytes"] / (1024.0 * 1024.0)
    return d, meas, 100.0 * (d["step_time_s"] / meas - 1), peak, 100.0 * (peak / float(r["max_alloc_mib"]) - 1)


def check_json(parplan, args, command="check"):
    """`parplan COMMAND --json ARGS` (check unless told) parsed, or {"error": its stderr's start} where
    it gave no JSON."""
    p = subprocess.run([parplan, command, "--json"] + args, capture_output=True, text=True)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"error": p.stderr.strip()[:200]}


def report(checks):
    """Print the checks as TAP; the exit status (0 when every check holds)."""
    for i, (ok, msg) in enumerate(checks, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {msg}")
    print(f"1..{len(checks)}")
    return 0 if all(ok for ok, _ in checks) else 1
