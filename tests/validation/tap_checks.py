"""What the Python validation scripts that read device measurements share: a measurement file's
JSON lines, a C #define's value from a source file, `parplan check --json` run and parsed, and the
TAP report of (ok, message) checks."""
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


def check_json(parplan, args):
    """`parplan check --json ARGS` parsed, or {"error": its stderr's start} where it gave no JSON."""
    p = subprocess.run([parplan, "check", "--json"] + args, capture_output=True, text=True)
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
