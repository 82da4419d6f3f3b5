#!/usr/bin/env python3
"""Extract the command-line option names that Megatron-LM's pretrain_gpt.py accepts, statically.

Why static: Megatron's parser module imports torch, which the build machines do not have. The
parser is built by megatron/training/arguments.py:add_megatron_arguments(), which calls one
_add_*_args(parser) function per group. Those functions add options two ways:
  1. literal  group.add_argument('--flag', ...)  calls;
  2. ArgumentGroupFactory(SomeConfigDataclass, exclude=[...]).build_group(parser, ...), which
     turns every dataclass field into an option (megatron/training/argument_utils.py):
       name  = '--' + field.replace('_', '-');
       bool fields whose default is not False become '--no-<name>' and '--disable-<name>';
       field(metadata={'argparse_meta': {'arg_names': [...]}}) overrides the names;
       fields in `exclude` or with init=False are skipped; base-class fields come first.
add_argument(..., action=argparse.BooleanOptionalAction) also accepts '--no-<flag>', and the
parser has argparse's own '--help'. This script walks the AST of those files (no import, no torch) and applies the same rules.
pretrain_gpt.py adds extra options only through add_modelopt_args, and only when the optional
nvidia-modelopt package is installed; those are not part of a standard install's parser and
are not listed (nor does parplan emit any of them). Options that exist only when an optional
package is present (e.g. Kitchen) are listed with --conditional, and left out by default.

Usage: extract_megatron_flags.py MEGATRON_ROOT [--commit SHA] [--conditional] > megatron_flags.txt
MEGATRON_ROOT is a folder holding megatron/ (a checkout or an export of NVIDIA/Megatron-LM).
This is parplan's own script; it contains no Megatron code.
"""
import argparse
import ast
import builtins
import os
import sys

ARGS_MODULE = "megatron.training.arguments"


class Extractor:
    def __init__(self, root):
        self.root = root
        self.trees = {}
        self.warnings = []

    # ------------------------------------------------------------- modules
    def module_path(self, mod):
        base = os.path.join(self.root, *mod.split("."))
        for p in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(p):
                return p
        return None

    def tree(self, mod):
        if mod not in self.trees:
            p = self.module_path(mod)
            if p is None:
                raise SystemExit("extract_megatron_flags: module %s not found under %s" % (mod, self.root))
            with open(p, encoding="utf-8") as f:
                self.trees[mod] = ast.parse(f.read(), p)
        return self.trees[mod]

    @staticmethod
    def absolute(mod, level, name):
        """Resolve a relative import 'from ..x import y' seen in module mod."""
        if level == 0:
            return name
        pkg = mod.split(".")
        # a module's package is its name less the last part (an __init__ is its own package,
        # but every module we resolve relative imports in is a plain module or __init__.py)
        drop = level
        parts = pkg[:-drop] if drop <= len(pkg) else []
        return ".".join(parts + ([name] if name else []))

    def imports_in(self, mod, body):
        """name -> (module, original name) for every 'from X import a as b' in body."""
        out = {}
        is_pkg = (self.module_path(mod) or "").endswith("__init__.py")
        for node in body:
            if isinstance(node, ast.ImportFrom):
                level = node.level
                target_mod = mod if not is_pkg else mod + ".__init__"
                src = self.absolute(target_mod, level, node.module or "")
                for a in node.names:
                    out[a.asname or a.name] = (src, a.name)
            elif isinstance(node, ast.Try):
                out.update(self.imports_in(mod, node.body))
        return out

    def resolve_class(self, mod, name, local_imports=None, depth=0):
        """(module, ClassDef) of class `name` as visible in module mod."""
        if depth > 20:
            raise SystemExit("extract_megatron_flags: import cycle resolving %s" % name)
        t = self.tree(mod)
        for node in t.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return mod, node
        imps = dict(self.imports_in(mod, t.body))
        if local_imports:
            imps.update(local_imports)
        if name in imps:
            src, orig = imps[name]
            if self.module_path(src) is None:
                # 'from pkg import submodule'-style or a package re-export
                raise SystemExit("extract_megatron_flags: cannot resolve %s from %s" % (name, src))
            return self.resolve_class(src, orig, None, depth + 1)
        raise SystemExit("extract_megatron_flags: class %s not found in %s" % (name, mod))

    # ------------------------------------------------------------- dataclass fields
    @staticmethod
    def unwrap_optional(ann):
        """Optional[X], Union[X, None], X | None -> X; returns the inner annotation AST."""
        if isinstance(ann, ast.Subscript):
            base = ann.value
            bname = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
            if bname == "Optional":
                return ann.slice
            if bname == "Union":
                elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
                if len(elts) == 2 and isinstance(elts[1], ast.Constant) and elts[1].value is None:
                    return elts[0]
        if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
            if isinstance(ann.right, ast.Constant) and ann.right.value is None:
                return ann.left
        return ann

    @staticmethod
    def is_bool(ann):
        return isinstance(ann, ast.Name) and ann.id == "bool"

    @staticmethod
    def is_pseudo_field(ann):
        """ClassVar[...] and InitVar[...] are not dataclass fields."""
        a = ann.value if isinstance(ann, ast.Subscript) else ann
        n = a.attr if isinstance(a, ast.Attribute) else getattr(a, "id", "")
        return n in ("ClassVar", "InitVar")

    def literal(self, node):
        try:
            return ast.literal_eval(node)
        except Exception:
            return None

    def class_fields(self, mod, cls, depth=0):
        """Ordered dict name -> field info, base classes first (dataclasses.fields order)."""
        fields = {}
        t = self.tree(mod)
        local = self.imports_in(mod, t.body)
        for b in cls.bases:
            bname = b.id if isinstance(b, ast.Name) else (b.attr if isinstance(b, ast.Attribute) else None)
            if bname is None or bname in ("Generic", "ABC") or bname in vars(builtins):
                continue
            try:
                bmod, bcls = self.resolve_class(mod, bname)
            except SystemExit:
                self.warnings.append("base %s of %s not resolved (treated as no fields)" % (bname, cls.name))
                continue
            for k, v in self.class_fields(bmod, bcls, depth + 1).items():
                fields[k] = v
        for node in cls.body:
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            if self.is_pseudo_field(node.annotation):
                continue
            name = node.target.id
            info = {"ann": node.annotation, "default": ("missing",), "init": True, "arg_names": None,
                    "where": "%s.%s" % (mod, cls.name)}
            v = node.value
            is_field_call = (isinstance(v, ast.Call) and
                             ((isinstance(v.func, ast.Name) and v.func.id == "field") or
                              (isinstance(v.func, ast.Attribute) and v.func.attr == "field")))
            if is_field_call:
                for kw in v.keywords:
                    if kw.arg == "default":
                        info["default"] = ("value", kw.value)
                    elif kw.arg == "default_factory":
                        info["default"] = ("factory", kw.value)
                    elif kw.arg == "init":
                        info["init"] = self.literal(kw.value) is not False
                    elif kw.arg == "metadata":
                        info["arg_names"] = self.meta_arg_names(kw.value, name, mod)
            elif v is not None:
                info["default"] = ("value", v)
            if name in fields:
                # a subclass redefinition keeps the base position, with the new definition
                fields[name] = info
            else:
                fields[name] = info
        return fields

    def meta_arg_names(self, node, name, mod):
        if not isinstance(node, ast.Dict):
            self.warnings.append("%s.%s: metadata is not a dict literal" % (mod, name))
            return None
        for k, v in zip(node.keys, node.values):
            if isinstance(k, ast.Constant) and k.value == "argparse_meta":
                if not isinstance(v, ast.Dict):
                    self.warnings.append("%s.%s: argparse_meta is not a dict literal" % (mod, name))
                    return None
                for k2, v2 in zip(v.keys, v.values):
                    if isinstance(k2, ast.Constant) and k2.value == "arg_names":
                        names = self.literal(v2)
                        if not isinstance(names, (list, tuple)):
                            self.warnings.append("%s.%s: arg_names not literal" % (mod, name))
                            return None
                        return list(names)
        return None

    def field_flags(self, name, info):
        if info["arg_names"] is not None:
            return info["arg_names"]
        flag = "--" + name.replace("_", "-")
        ann = self.unwrap_optional(info["ann"])
        if self.is_bool(ann):
            kind, val = info["default"][0], info["default"][-1]
            default_false = kind == "value" and isinstance(val, ast.Constant) and val.value is False
            if not default_false:
                return ["--no-" + name.replace("_", "-"), "--disable-" + name.replace("_", "-")]
        return [flag]

    def factory_flags(self, mod, cls_name, exclude, local_imports):
        cmod, cls = self.resolve_class(mod, cls_name, local_imports)
        out = []
        for name, info in self.class_fields(cmod, cls).items():
            if name in exclude or not info["init"]:
                continue
            for fl in self.field_flags(name, info):
                out.append((fl, "%s field %s" % (info["where"], name)))
        return out

    # ------------------------------------------------------------- the parser functions
    def function_flags(self, mod, fn, funcs, seen, conditional):
        """Flags added by function fn (recursing into module-level helpers it calls)."""
        if fn.name in seen:
            return []
        seen.add(fn.name)
        flags = []
        local_imports = self.imports_in(mod, [n for n in ast.walk(fn) if isinstance(n, ast.ImportFrom)])
        list_vars = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                val = self.literal(n.value)
                if isinstance(val, (list, tuple)):
                    list_vars[n.targets[0].id] = list(val)

        def visit(node, cond):
            if isinstance(node, (ast.If, ast.Try)) and node is not fn:
                # options added only under a condition (optional packages)
                for child in ast.iter_child_nodes(node):
                    visit(child, True if isinstance(node, ast.If) else cond)
                return
            if isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Attribute) and f.attr == "add_argument":
                    # argparse.BooleanOptionalAction also adds '--no-<name>' for each '--<name>'
                    boolopt = any(kw.arg == "action" and isinstance(kw.value, ast.Attribute) and
                                  kw.value.attr == "BooleanOptionalAction" for kw in node.keywords)
                    for a in node.args:
                        if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-"):
                            flags.append((a.value, "%s:%d" % (fn.name, node.lineno), cond))
                            if boolopt and a.value.startswith("--"):
                                flags.append(("--no-" + a.value[2:], "%s:%d (BooleanOptionalAction)" %
                                              (fn.name, node.lineno), cond))
                elif isinstance(f, ast.Name) and f.id == "ArgumentGroupFactory":
                    cls_name = node.args[0].id if node.args and isinstance(node.args[0], ast.Name) else None
                    if cls_name is None:
                        raise SystemExit("extract_megatron_flags: ArgumentGroupFactory with a non-name class at %s:%d" % (fn.name, node.lineno))
                    exclude = []
                    for kw in node.keywords:
                        if kw.arg == "exclude":
                            if isinstance(kw.value, ast.Name):
                                exclude = list_vars.get(kw.value.id)
                                if exclude is None:
                                    raise SystemExit("extract_megatron_flags: exclude=%s not a literal list" % kw.value.id)
                            else:
                                exclude = self.literal(kw.value)
                                if exclude is None:
                                    raise SystemExit("extract_megatron_flags: exclude not literal at %s:%d" % (fn.name, node.lineno))
                    for fl, where in self.factory_flags(mod, cls_name, set(exclude), local_imports):
                        flags.append((fl, where, cond))
                elif isinstance(f, ast.Name) and f.id in funcs:
                    flags.extend(self.function_flags(mod, funcs[f.id], funcs, seen, cond))
            for child in ast.iter_child_nodes(node):
                visit(child, cond)

        for stmt in fn.body:
            visit(stmt, conditional)
        return flags

    def extract(self):
        t = self.tree(ARGS_MODULE)
        funcs = {n.name: n for n in t.body if isinstance(n, ast.FunctionDef)}
        if "add_megatron_arguments" not in funcs:
            raise SystemExit("extract_megatron_flags: add_megatron_arguments() not found")
        return self.function_flags(ARGS_MODULE, funcs["add_megatron_arguments"], funcs, set(), False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root")
    ap.add_argument("--commit", default="")
    ap.add_argument("--conditional", action="store_true",
                    help="also list options added only when an optional package is present")
    ap.add_argument("--where", action="store_true", help="print where each option comes from")
    a = ap.parse_args()
    ex = Extractor(a.root)
    flags = ex.extract()
    # argparse's own option: ArgumentParser(add_help=True), as in parse_args()
    seen = {"--help": "argparse (add_help)"}
    for fl, where, cond in flags:
        if cond and not a.conditional:
            continue
        if fl in seen:
            # argparse would refuse a duplicate option string: the extraction is wrong
            raise SystemExit("extract_megatron_flags: %s added twice (%s and %s)" % (fl, seen[fl], where))
        seen[fl] = where
    for w in ex.warnings:
        print("extract_megatron_flags: warning: " + w, file=sys.stderr)
    print("# Option names accepted by Megatron-LM pretrain_gpt.py (add_megatron_arguments),")
    print("# extracted by tools/launch/extract_megatron_flags.py from NVIDIA/Megatron-LM%s." %
          (" " + a.commit if a.commit else ""))
    print("# One option per line; data for parplan's launch tests, not Megatron code.")
    for fl in sorted(seen):
        print(fl + ("\t" + seen[fl] if a.where else ""))
    print("extract_megatron_flags: %d options" % len(seen), file=sys.stderr)


if __name__ == "__main__":
    main()
