#!/usr/bin/env python3
"""The names a Python-configured framework defines, and a check of a generated config against them.

Frameworks that moved from config files to Python (torchtitan since pytorch/torchtitan PR #2386,
Megatron-Bridge's ConfigContainer) take configs as Python objects, so "every key parplan writes
exists" means: every module imported exists and defines the name imported, every keyword given to
a config class is one of its dataclass fields (its bases' included), every keyword given to a
function is one of its parameters, and every dotted override `a.b.c=v` is a field path.

  pyconfig_names.py extract GITDIR COMMIT PREFIX... > names.txt
      read every Python file under each PREFIX of the tree at COMMIT (git show, so a bare mirror
      works) with `ast`, and print the table:
        module M N           module M defines or imports the name N
        field  M:Q F         class Q of module M (Q dotted, e.g. Trainer.Config) has field F
        base   M:Q B         class Q of module M derives from B (as written in the source)
        const  M:N V         module M's constant N is the string V (a config key's name)
        param  M:Q P         function Q of module M takes parameter P (** noted as P=**)
  pyconfig_names.py check-py NAMES FILE.py...
      check a generated Python config module against the table (TAP)
  pyconfig_names.py check-json NAMES --section PATH=class:M:Q|const:M:PREFIX[+...] ... FILE.json...
      every key of each JSON section in the classes' fields or the modules' constants (TAP)
  pyconfig_names.py check-overrides NAMES ROOT [--type P=M:Q] [--value K=M] [--recipe M] FILE...
      check every KEY=VALUE line of the files' `OVERRIDES=(` ... `)` bash arrays: KEY's first part
      a field of ROOT (M:Q), each next part a field of that field's class (the annotation's class,
      resolved in the table, or --type's for a union) (TAP)

Only the standard library; no framework import (the test runs where torch is not installed).
"""
import ast
import re
import subprocess
import sys


# ------------------------------------------------------------------ extract

def git_files(gitdir, commit, prefixes):
    out = subprocess.run(["git", "-C", gitdir, "ls-tree", "-r", "--name-only", commit] + prefixes,
                         check=True, capture_output=True, text=True).stdout.split()
    return [p for p in out if p.endswith(".py") and "/tests/" not in p and "/experiments/" not in p]


def module_name(path):
    mod = path[:-3].replace("/", ".")
    if path.startswith("src/"):
        mod = mod[4:]
    if mod.endswith(".__init__"):
        mod = mod[: -len(".__init__")]
    return mod


def resolve_from(mod, is_pkg, node):
    """The absolute module of `from ... import` in module mod."""
    if node.level == 0:
        return node.module or ""
    parts = mod.split(".")
    if not is_pkg:
        parts = parts[:-1]
    if node.level > 1:
        parts = parts[: len(parts) - (node.level - 1)]
    base = ".".join(parts)
    return base + ("." + node.module if node.module else "")


def ann_name(a):
    """The class an annotation names: X, X.Config, Annotated[X, ...], X | None, list[X] -> X."""
    if a is None:
        return None
    if isinstance(a, ast.Constant) and isinstance(a.value, str):
        try:
            a = ast.parse(a.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(a, ast.Subscript):
        head = ast.unparse(a.value)
        if head.endswith("Annotated"):
            s = a.slice
            return ann_name(s.elts[0] if isinstance(s, ast.Tuple) else s)
        return None
    if isinstance(a, ast.BinOp) and isinstance(a.op, ast.BitOr):
        left, right = ann_name(a.left), ann_name(a.right)
        return left if right in (None, "None") else right if left in (None, "None") else None
    if isinstance(a, (ast.Name, ast.Attribute)):
        return ast.unparse(a)
    return None


def extract(gitdir, commit, prefixes):
    rows = set()
    for path in git_files(gitdir, commit, prefixes):
        src = subprocess.run(["git", "-C", gitdir, "show", f"{commit}:{path}"], check=True,
                             capture_output=True, text=True).stdout
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        mod = module_name(path)
        is_pkg = path.endswith("__init__.py")

        def walk_class(node, qual):
            for b in node.bases:
                rows.add(("base", f"{mod}:{qual}", ast.unparse(b)))
            for st in node.body:
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                    if "ClassVar" in ast.unparse(st.annotation):
                        continue
                    rows.add(("field", f"{mod}:{qual}", st.target.id))
                    # a pydantic Field(alias="...") is read under its alias too (DeepSpeed's stage3_*)
                    if isinstance(st.value, ast.Call) and ast.unparse(st.value.func).endswith("Field"):
                        for k in st.value.keywords:
                            if k.arg == "alias" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str):
                                rows.add(("field", f"{mod}:{qual}", k.value.value))
                    t = ann_name(st.annotation)
                    if t and t != "None":
                        rows.add(("type", f"{mod}:{qual}.{st.target.id}", t))
                elif isinstance(st, ast.ClassDef):
                    walk_class(st, f"{qual}.{st.name}")
                elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    walk_func(st, f"{qual}.{st.name}")

        def walk_func(node, qual):
            a = node.args
            for p in a.posonlyargs + a.args + a.kwonlyargs:
                rows.add(("param", f"{mod}:{qual}", p.arg))
            if a.kwarg:
                rows.add(("param", f"{mod}:{qual}", "**"))

        for st in tree.body:
            if isinstance(st, ast.ClassDef):
                rows.add(("module", mod, st.name))
                walk_class(st, st.name)
            elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                rows.add(("module", mod, st.name))
                walk_func(st, st.name)
            elif isinstance(st, (ast.Assign, ast.AnnAssign)):
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                if isinstance(st, ast.Assign) and len(targets) == 1 and isinstance(targets[0], ast.Name) and \
                        isinstance(st.value, ast.Constant) and isinstance(st.value.value, str) and \
                        re.fullmatch(r"[A-Za-z0-9_]+", st.value.value):
                    rows.add(("const", f"{mod}:{targets[0].id}", st.value.value))
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            rows.add(("module", mod, n.id))
            elif isinstance(st, ast.ImportFrom):
                src_mod = resolve_from(mod, is_pkg, st)
                for n in st.names:
                    rows.add(("module", mod, n.asname or n.name))
                    rows.add(("alias", f"{mod}:{n.asname or n.name}", f"{src_mod}:{n.name}"))
            elif isinstance(st, ast.Import):
                for n in st.names:
                    rows.add(("module", mod, (n.asname or n.name).split(".")[0]))
    for r in sorted(rows):
        print(" ".join(r))


# ------------------------------------------------------------------ the table

class Names:
    def __init__(self, path):
        self.modules, self.fields, self.params, self.bases = {}, {}, {}, {}
        self.alias, self.types, self.classes, self.consts = {}, {}, {}, {}
        for line in open(path):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            kind, a, b = line.split(" ", 2)
            if kind == "module":
                self.modules.setdefault(a, set()).add(b)
            elif kind == "field":
                self.fields.setdefault(a, set()).add(b)
                self.classes.setdefault(a.split(":")[1], set()).add(a)
            elif kind == "param":
                self.params.setdefault(a, set()).add(b)
            elif kind == "base":
                self.bases.setdefault(a, []).append(b)
                self.classes.setdefault(a.split(":")[1], set()).add(a)
            elif kind == "alias":
                self.alias[a] = b
            elif kind == "type":
                self.types[a] = b
            elif kind == "const":
                self.consts.setdefault(a.split(":")[0], []).append((a.split(":", 1)[1], b))

    def defines(self, mod, name):
        return name in self.modules.get(mod, ())

    def origin(self, mod, name):
        """Follow re-exports: the module:name where name is defined."""
        seen = set()
        key = f"{mod}:{name}"
        while key in self.alias and key not in seen:
            seen.add(key)
            key = self.alias[key]
        return key

    def class_fields(self, key, depth=0):
        """Fields of class key (M:Q), with its bases' (resolved in its module, else by name)."""
        out = set(self.fields.get(key, ()))
        if depth > 12:
            return out
        mod, qual = key.split(":", 1)
        for b in self.bases.get(key, ()):
            head, _, rest = b.partition(".")
            cand = self.origin(mod, head)
            bkey = cand + ("." + rest if rest else "")
            if bkey not in self.fields and bkey not in self.bases:
                # a base named as written elsewhere: every class of that dotted name
                for k in self.classes.get(b, ()):
                    out |= self.class_fields(k, depth + 1)
                continue
            out |= self.class_fields(bkey, depth + 1)
        return out

    def is_class(self, key):
        return key in self.fields or key in self.bases


# ------------------------------------------------------------------ checks

class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, what):
        self.n += 1
        if not cond:
            self.failed += 1
        print(f"{'ok' if cond else 'not ok'} {self.n} - {what}")

    def done(self):
        print(f"1..{self.n}")
        return 1 if self.failed or self.n == 0 else 0


def check_py(names, files):
    tap = Tap()
    for f in files:
        tree = ast.parse(open(f).read(), filename=f)
        local = {}  # local name -> "module:Name" or ("module", M)
        for st in ast.walk(tree):
            if isinstance(st, ast.ImportFrom) and st.level == 0:
                for n in st.names:
                    tap.ok(names.defines(st.module, n.name), f"{f}: from {st.module} import {n.name}")
                    local[n.asname or n.name] = names.origin(st.module, n.name)
            elif isinstance(st, ast.Import):
                for n in st.names:
                    tap.ok(n.name in names.modules, f"{f}: import {n.name}")
                    local[n.asname or n.name] = ("module", n.name)
        for node in ast.walk(tree):
            # mod.name read from an imported module (a private builder or table of a model file)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    isinstance(local.get(node.value.id), tuple):
                mod = local[node.value.id][1]
                tap.ok(names.defines(mod, node.attr), f"{f}:{node.lineno}: {mod}.{node.attr} exists")
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call) or not call.keywords:
                continue
            target = resolve_callee(names, local, call.func)
            what = ast.unparse(call.func)
            if target is None:
                continue  # a local function or a builtin (dict, list): not the framework's
            if names.is_class(target):
                fields = names.class_fields(target)
                for k in call.keywords:
                    if k.arg is not None:
                        tap.ok(k.arg in fields, f"{f}:{call.lineno}: {what}({k.arg}=...) is a field of {target}")
            elif target in names.params:
                params = names.params[target]
                for k in call.keywords:
                    if k.arg is not None:
                        tap.ok(k.arg in params or "**" in params,
                               f"{f}:{call.lineno}: {what}({k.arg}=...) is a parameter of {target}")
            else:
                tap.ok(False, f"{f}:{call.lineno}: {what} is neither a class nor a function in the table ({target})")
    return tap.done()


def resolve_callee(names, local, func):
    """module:Qual of the framework's class or function a call names, or None for local names."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name) or func.id not in local:
        return None
    parts.append(func.id)
    parts.reverse()
    root = local[parts[0]]
    if isinstance(root, tuple):  # a module: mod.Name.Sub
        mod = root[1]
        if len(parts) < 2:
            return None
        key = names.origin(mod, parts[1])
        rest = parts[2:]
    else:
        key, rest = root, parts[1:]
    return key + ("." + ".".join(rest) if rest else "")


def field_class(names, key, field):
    """The class (M:Q) of field `field` of class key, from its annotation, bases included."""
    todo, seen = [key], set()
    while todo:
        k = todo.pop()
        if k in seen:
            continue
        seen.add(k)
        t = names.types.get(f"{k}.{field}")
        if t:
            mod = k.split(":", 1)[0]
            head, _, rest = t.partition(".")
            return names.origin(mod, head) + ("." + rest if rest else "")
        mod = k.split(":", 1)[0]
        for b in names.bases.get(k, ()):
            head, _, rest = b.partition(".")
            todo.append(names.origin(mod, head) + ("." + rest if rest else ""))
    return None


def check_overrides(names, root, args):
    """args: [--type PATH=M:Q]... [--value KEY=MODULE]... [--recipe MODULE...]... FILE...

    --type: the class of a field whose annotation is a union (ConfigContainer.model);
    --value: KEY's value must be a name MODULE defines (a registered preset);
    --recipe: `--recipe NAME` in the file must be defined by one of these modules."""
    types, values, recipe_mods, files = {}, {}, [], []
    it = iter(args)
    for a in it:
        if a == "--type":
            k, v = next(it).split("=", 1)
            types[k] = v
        elif a == "--value":
            k, v = next(it).split("=", 1)
            values[k] = v
        elif a == "--recipe":
            recipe_mods.append(next(it))
        else:
            files.append(a)
    tap = Tap()
    key_re = re.compile(r"^\s*([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*)=(\S*)\s*$")
    for f in files:
        inside = False
        for ln, line in enumerate(open(f), 1):
            for m in re.finditer(r"--recipe\s+([A-Za-z0-9_]+)", line):
                if recipe_mods:
                    tap.ok(any(names.defines(mod, m.group(1)) for mod in recipe_mods),
                           f"{f}:{ln}: recipe {m.group(1)} is defined by {' or '.join(recipe_mods)}")
            if re.match(r"^\s*OVERRIDES=\(\s*$", line):
                inside = True
                continue
            if inside and line.strip() == ")":
                inside = False
                continue
            if not inside or line.lstrip().startswith("#"):
                continue
            m = key_re.match(line)
            if not m:
                tap.ok(False, f"{f}:{ln}: an override is KEY=VALUE: {line.strip()}")
                continue
            key, value = m.group(1), m.group(2)
            path = key.split(".")
            cls, ok, why = root, True, ""
            for i, part in enumerate(path):
                fields = names.class_fields(cls) if cls else set()
                if part not in fields:
                    ok, why = False, f"{part} is not a field of {cls}"
                    break
                if i + 1 < len(path):
                    sub = ".".join(path[: i + 1])
                    cls = types.get(sub) or field_class(names, cls, part)
                    if cls is None:
                        ok, why = False, f"the class of {sub} is not known"
                        break
            tap.ok(ok, f"{f}:{ln}: {key}" + (f" ({why})" if why else ""))
            if key in values:
                tap.ok(names.defines(values[key], value), f"{f}:{ln}: {key}={value} is defined by {values[key]}")
        tap.ok(not inside, f"{f}: the OVERRIDES list is closed")
    return tap.done()


def json_allowed(names, spec):
    """The keys a JSON section may hold: class:M:Q (its fields, aliases and bases' included) or
    const:M:PREFIX (the string values of M's constants named PREFIX...)."""
    kind, rest = spec.split(":", 1)
    if kind == "class":
        return names.class_fields(rest)
    mod, prefix = rest.rsplit(":", 1)
    return {v for n, v in names.consts.get(mod, ()) if n.startswith(prefix)}


def check_json(names, args):
    """args: --section PATH=SPEC ... FILE.json...: every key of section PATH ("" the top level)
    is allowed by SPEC (json_allowed); sections a file holds that no --section names fail. Keys
    starting with "_" are comments (JSON has none; DeepSpeed reads keys by name)."""
    import json
    specs, files = {}, []
    it = iter(args)
    for a in it:
        if a == "--section":
            k, v = next(it).split("=", 1)
            specs.setdefault(k, set()).update(*(json_allowed(names, x) for x in v.split("+")))
        else:
            files.append(a)
    tap = Tap()

    def walk(f, obj, path):
        for k, v in obj.items():
            if k.startswith("_"):
                continue
            full = f"{path}.{k}" if path else k
            allowed = specs.get(path)
            tap.ok(allowed is not None and k in allowed,
                   f"{f}: {full}" + ("" if allowed is not None else f" (section {path or 'top'} not checked)"))
            if isinstance(v, dict):
                walk(f, v, full)

    for f in files:
        walk(f, json.load(open(f)), "")
    return tap.done()


def main(argv):
    if len(argv) >= 4 and argv[1] == "extract":
        extract(argv[2], argv[3], argv[4:])
        return 0
    if len(argv) >= 4 and argv[1] == "check-py":
        return check_py(Names(argv[2]), argv[3:])
    if len(argv) >= 4 and argv[1] == "check-json":
        return check_json(Names(argv[2]), argv[3:])
    if len(argv) >= 5 and argv[1] == "check-overrides":
        return check_overrides(Names(argv[2]), argv[3], argv[4:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
