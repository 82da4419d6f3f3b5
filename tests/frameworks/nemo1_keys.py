#!/usr/bin/env python3
"""The keys NeMo 1.x's Megatron GPT accepts, and a check of `launch --format nemo` against them.

  nemo1_keys.py extract NEMO_GIT TAG MEGATRON_GIT MCORE_TAG > keys.txt   (needs PyYAML; run once)
      the key paths NeMo TAG accepts in a Megatron GPT config:
        - every key path of its language-modeling example configs
          (examples/nlp/language_modeling/conf/*.yaml: megatron_gpt_config.yaml and the model
          families' configs, which NeMo's own users merge overrides into);
        - model.X for every `cfg.get('X'` / `self.cfg.get('X'` the Megatron GPT model reads
          (megatron_base_model.py, megatron_gpt_model.py);
        - model.X for every field of Megatron-Core's TransformerConfig and ModelParallelConfig at
          MCORE_TAG, the version NeMo TAG pins (requirements/requirements_nlp.txt): NeMo copies any
          model key of a TransformerConfig field into it (megatron_base_model.py
          build_transformer_config: `elif field.name in cfg`);
        - model.optim.X for the distributed optimizer's dtypes (nemo/core/optim/distributed_adam.py) and
          store_params (megatron_base_model.py setup_optimization).
  nemo1_keys.py check KEYS FILE.yaml...
      every key path of the written YAML overrides (two-space indented `key: value` lines) is in
      the list (TAP). Only the standard library.
"""
import ast
import re
import subprocess
import sys


def show(git, rev, path):
    return subprocess.run(["git", "-C", git, "show", f"{rev}:{path}"], check=True, capture_output=True,
                          text=True).stdout


def ls(git, rev, prefix):
    out = subprocess.run(["git", "-C", git, "ls-tree", "--name-only", rev, prefix], check=True,
                         capture_output=True, text=True).stdout
    return out.split()


def yaml_paths(node, prefix, out):
    if isinstance(node, dict):
        for k, v in node.items():
            p = f"{prefix}.{k}" if prefix else str(k)
            out.add(p)
            yaml_paths(v, p, out)


def dataclass_fields(src, cls):
    tree = ast.parse(src)
    for n in ast.walk(tree):
        if isinstance(n, ast.ClassDef) and n.name == cls:
            return [s.target.id for s in n.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
    return []


def extract(nemo, tag, mcore, mtag):
    import yaml  # only for extraction

    keys = set()
    conf = "examples/nlp/language_modeling/conf/"
    for path in ls(nemo, tag, conf):
        if path.endswith(".yaml"):
            try:
                yaml_paths(yaml.safe_load(show(nemo, tag, path)), "", keys)
            except yaml.YAMLError:
                pass
    for path in ("nemo/collections/nlp/models/language_modeling/megatron_base_model.py",
                 "nemo/collections/nlp/models/language_modeling/megatron_gpt_model.py"):
        for m in re.finditer(r"cfg\.get\(\s*['\"]([A-Za-z0-9_]+)['\"]", show(nemo, tag, path)):
            keys.add("model." + m.group(1))
    for path, cls in (("megatron/core/transformer/transformer_config.py", "TransformerConfig"),
                      ("megatron/core/model_parallel_config.py", "ModelParallelConfig")):
        for f in dataclass_fields(show(mcore, mtag, path), cls):
            keys.add("model." + f)
    # the Apex optimizer's dtypes, and store_params, which megatron_base_model.py setup_optimization
    # reads from the optim config before choosing it (`'store_params' not in optim_config`)
    for k in ("dtype", "grad_sync_dtype", "param_sync_dtype", "store_params"):
        keys.add("model.optim." + k)
    print(f"# NeMo {tag} Megatron GPT config keys (with Megatron-Core {mtag}'s TransformerConfig fields), from")
    print(f"#   tests/frameworks/nemo1_keys.py extract NEMO_GIT {tag} MEGATRON_LM_GIT {mtag}")
    for k in sorted(keys):
        print(k)


def yaml_keys(path):
    """Key paths of a simple block YAML: `key:` lines nested by indentation, comments dropped."""
    stack, out = [], []
    for ln, line in enumerate(open(path), 1):
        s = line.split("#", 1)[0].rstrip()
        if not s.strip():
            continue
        m = re.match(r"^( *)([A-Za-z0-9_]+):", s)
        if not m:
            out.append((ln, None, s.strip()))
            continue
        depth = len(m.group(1)) // 2
        stack = stack[:depth] + [m.group(2)]
        out.append((ln, ".".join(stack), None))
    return out


def check(keys_path, files):
    keys = {l.strip() for l in open(keys_path) if l.strip() and not l.startswith("#")}
    n = failed = 0
    for f in files:
        for ln, key, bad in yaml_keys(f):
            n += 1
            ok = key is not None and key in keys
            failed += not ok
            what = key if key is not None else f"not a key line: {bad}"
            print(f"{'ok' if ok else 'not ok'} {n} - {f}:{ln}: {what}")
    print(f"1..{n}")
    return 1 if failed or n == 0 else 0


if __name__ == "__main__":
    a = sys.argv
    if len(a) == 6 and a[1] == "extract":
        extract(a[2], a[3], a[4], a[5])
        sys.exit(0)
    if len(a) >= 4 and a[1] == "check":
        sys.exit(check(a[2], a[3:]))
    sys.stderr.write(__doc__)
    sys.exit(2)
