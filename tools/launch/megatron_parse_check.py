#!/usr/bin/env python3
"""Check parplan's generated Megatron command lines with Megatron-LM's own parser (device side).

Megatron's parser module imports torch, so this runs where torch is (the lent GPU machine),
from the repository root with a Megatron-LM snapshot carried in .megatron/:
  1. builds the parser as pretrain_gpt.py does (add_megatron_arguments) and writes every option
     string to OUT/megatron_flags_runtime.txt, then compares it with the statically extracted
     list (tests/data/megatron_flags.txt): options missing from either side are printed;
  2. for every ARGS_DIR/*.args (the NUL-separated arguments that tests/frameworks/capture_args.sh
     captured from a generated script) runs parse_args() with WORLD_SIZE set to the layout's
     world size, then validate_args(), and writes one row per command to OUT/parse_check.csv.

    python3 tools/launch/megatron_parse_check.py --megatron .megatron --args-dir DIR
        --flags tests/data/megatron_flags.txt --out OUT
"""
import argparse
import contextlib
import csv
import glob
import io
import os
import sys


def load_flags(path):
    with open(path) as f:
        return {line.split()[0] for line in f if line.strip() and not line.startswith("#")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--megatron", required=True)
    ap.add_argument("--args-dir", required=True)
    ap.add_argument("--flags", required=True)
    ap.add_argument("--out", required=True)
    opt = ap.parse_args()
    sys.path.insert(0, os.path.abspath(opt.megatron))
    os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "1")
    from megatron.training.arguments import add_megatron_arguments, parse_args, validate_args

    parser = argparse.ArgumentParser(allow_abbrev=False)
    add_megatron_arguments(parser)
    runtime = sorted({s for a in parser._actions for s in a.option_strings if s.startswith("--")})
    with open(os.path.join(opt.out, "megatron_flags_runtime.txt"), "w") as f:
        f.write("\n".join(runtime) + "\n")
    static = load_flags(opt.flags)
    only_runtime = sorted(set(runtime) - static)
    only_static = sorted(static - set(runtime))
    print(f"runtime parser: {len(runtime)} options; static list: {len(static)}; "
          f"only in runtime: {len(only_runtime)} {only_runtime[:20]}; "
          f"only in static: {len(only_static)} {only_static[:20]}", flush=True)

    rows = []
    for path in sorted(glob.glob(os.path.join(opt.args_dir, "*.args"))):
        name = os.path.basename(path)[:-5]
        with open(path, "rb") as f:
            argv = [a.decode() for a in f.read().split(b"\0") if a]
        with open(path + ".world") as f:
            world = f.read().strip()
        os.environ["WORLD_SIZE"] = world
        os.environ["RANK"] = "0"
        sys.argv = ["pretrain_gpt.py"] + argv
        row = {"name": name, "world": world, "n_args": len(argv), "parse": "", "validate": "",
               "message": ""}
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                args = parse_args()
            row["parse"] = "ok"
        except BaseException as e:  # argparse exits on an unknown flag
            row["parse"] = "FAIL"
            row["message"] = (err.getvalue().strip().splitlines() or [repr(e)])[-1][:300]
            rows.append(row)
            print(row, flush=True)
            continue
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                validate_args(args, {})
            row["validate"] = "ok"
        except BaseException as e:
            row["validate"] = "FAIL"
            row["message"] = f"{type(e).__name__}: {e}".replace("\n", " ")[:300]
        rows.append(row)
        print(row, flush=True)
    with open(os.path.join(opt.out, "parse_check.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["name", "world", "n_args", "parse", "validate", "message"])
        w.writeheader()
        w.writerows(rows)
    bad = sum(r["parse"] != "ok" for r in rows)
    print(f"parsed {len(rows)} command lines: {bad} rejected by Megatron's parser, "
          f"{sum(r['validate'] == 'ok' for r in rows)} pass validate_args", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
