#!/usr/bin/env python3
"""torchtitan's TOML job-config keys: extract them from torchtitan's config dataclasses, and check
the configs `parplan launch --format torchtitan` writes against them.

    torchtitan_keys.py extract JOB_CONFIG_PY VERSION > tests/data/torchtitan/job_config_keys.txt
    torchtitan_keys.py check KEYS_FILE FILE.toml...

extract reads torchtitan/config/job_config.py of a released torchtitan (0.2.x: the last series
that reads TOML files through --job.config_file) with the ast module, without importing it (it
needs torch): every field of JobConfig, and of the dataclasses its fields are, recursively, as
`section.key<TAB>annotation`. To refresh the list:

    pip download torchtitan==0.2.2 --no-deps -d /tmp/tt && unzip -q /tmp/tt/*.whl -d /tmp/tt/whl
    python3 tests/frameworks/torchtitan_keys.py extract /tmp/tt/whl/torchtitan/config/job_config.py 0.2.2 \\
        > tests/data/torchtitan/job_config_keys.txt

check parses each TOML file (tomllib, Python 3.11+; exit 77 without it) and fails on a key that
is not in the list, or a value whose type the annotation does not admit (int, float, str, bool,
lists, None, Literal choices). Prints TAP.
"""
import ast
import sys


def dataclasses_of(tree):
    out = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        if not any((isinstance(d, ast.Name) and d.id == "dataclass") or
                   (isinstance(d, ast.Call) and getattr(d.func, "id", "") == "dataclass")
                   for d in node.decorator_list):
            continue
        fields = []
        for st in node.body:
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                fields.append((st.target.id, ast.unparse(st.annotation)))
        out[node.name] = fields
    return out


def walk(classes, cls, prefix, rows):
    for name, ann in classes[cls]:
        key = f"{prefix}.{name}" if prefix else name
        if ann in classes:
            walk(classes, ann, key, rows)
        else:
            rows.append((key, ann))


def cmd_extract(path, version):
    tree = ast.parse(open(path).read())
    classes = dataclasses_of(tree)
    rows = []
    walk(classes, "JobConfig", "", rows)
    print(f"# torchtitan {version} JobConfig keys, from torchtitan/config/job_config.py of the released "
          f"package (PyPI torchtitan=={version}), extracted by tests/frameworks/torchtitan_keys.py extract.")
    print("# One key a line: TOML table path and key, a tab, the field's type annotation. Not torchtitan's "
          "code: its names and types only, to check the configs parplan writes.")
    for key, ann in rows:
        print(f"{key}\t{ann}")


def load_keys(path):
    keys = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        k, ann = line.rstrip("\n").split("\t", 1)
        keys[k] = ann
    return keys


def flatten(d, prefix=""):
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict):
            yield from flatten(v, key)
        else:
            yield key, v


def admits(ann, value):
    """Whether a TOML value fits a Python annotation string (the forms job_config.py uses)."""
    node = ast.parse(ann, mode="eval").body
    return admits_node(node, value)


def admits_node(node, value):
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return admits_node(node.left, value) or admits_node(node.right, value)
    if isinstance(node, ast.Constant) and node.value is None:
        return value is None
    if isinstance(node, ast.Name):
        t = {"int": int, "float": (int, float), "str": str, "bool": bool}.get(node.id)
        if t is None:
            return True  # a type this check does not know: accept
        if node.id in ("int", "float") and isinstance(value, bool):
            return False
        return isinstance(value, t)
    if isinstance(node, ast.Subscript):
        base = ast.unparse(node.value)
        if base == "Literal":
            choices = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return any(isinstance(c, ast.Constant) and c.value == value for c in choices)
        if base == "list":
            return isinstance(value, list) and all(admits_node(node.slice, v) for v in value)
    return True


def cmd_check(keys_path, files):
    try:
        import tomllib
    except ImportError:
        print("1..0 # SKIP no tomllib (Python 3.11+)")
        sys.exit(77)
    keys = load_keys(keys_path)
    n = failed = 0
    for path in files:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
        bad = []
        count = 0
        for key, value in flatten(doc):
            count += 1
            if key not in keys:
                bad.append(f"{key}: not a torchtitan key")
            elif not admits(keys[key], value):
                bad.append(f"{key} = {value!r}: not a {keys[key]}")
        n += 1
        if bad:
            failed += 1
            print(f"not ok {n} - {path}: {count} keys, {len(bad)} wrong: {'; '.join(bad)}")
        else:
            print(f"ok {n} - {path}: all {count} keys are torchtitan's, values of their types")
    print(f"1..{n}")
    sys.exit(1 if failed else 0)


def main(argv):
    if len(argv) == 4 and argv[1] == "extract":
        cmd_extract(argv[2], argv[3])
    elif len(argv) >= 4 and argv[1] == "check":
        cmd_check(argv[2], argv[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
