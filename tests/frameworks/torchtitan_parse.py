#!/usr/bin/env python3
"""Parse the configs of `parplan launch --format torchtitan` with torchtitan's own ConfigManager
(torchtitan 0.2.x: ConfigManager().parse_args(["--job.config_file", FILE]) builds its JobConfig
from the TOML and validates every key and type through tyro), then check that each value the file
sets is the value the JobConfig holds. TAP; exit 77 (skip) when torchtitan, torch or tyro cannot
be imported here.

    torchtitan_parse.py FILE.toml...
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torchtitan_keys import flatten  # noqa: E402  (dotted keys of a parsed TOML)


def main(files):
    try:
        import tomllib
        from torchtitan.config import ConfigManager
    except Exception as e:  # ImportError, or torch failing to load its libraries
        print(f"1..0 # SKIP torchtitan's ConfigManager cannot be imported here ({type(e).__name__}: {e})")
        sys.exit(77)
    n = failed = 0
    for path in files:
        n += 1
        try:
            cfg = ConfigManager().parse_args(["--job.config_file", path])
        except BaseException as e:  # tyro exits through SystemExit on a bad value
            failed += 1
            print(f"not ok {n} - {path}: torchtitan rejects it: {type(e).__name__}: {e}")
            continue
        with open(path, "rb") as f:
            doc = tomllib.load(f)
        wrong = []
        for key, value in flatten(doc):
            obj = cfg
            for part in key.split("."):
                obj = getattr(obj, part)
            if obj != value:
                wrong.append(f"{key}: file {value!r}, JobConfig {obj!r}")
        if wrong:
            failed += 1
            print(f"not ok {n} - {path}: {'; '.join(wrong)}")
        else:
            print(f"ok {n} - {path}: parsed by torchtitan's ConfigManager, every value as written")
    print(f"1..{n}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
