#!/usr/bin/env python3
"""The tree's include structure, checked (TAP on stdout; exit status 1 when a check fails).

  includes.py SOURCE_ROOT [--list]

1. Rooms. src/ (the command line) and the rooms of planner/ (planner/meson.build) are ordered
       src, planner/run, planner/search, planner/calibrate, planner/frameworks, planner/cost,
       planner/model, planner (the root: pp.h, common.c, pattern.c, json.c)
   and a room may include headers of its own and of the rooms listed after it, never of one
   listed before it (the planner never includes src/; model/ never includes cost/ ...). Checked
   for every #include "..." of a .c or .h file in those rooms.

2. Circles between files, over src/, planner/, probes/, tests/ and fuzz/. File A uses file B when
   A refers to (calls, or reads) a function or variable that B defines, declared in a header that
   A reads (directly or through other headers); a header's names are looked up among the .c and
   .cu files of the header's own tree (planner, src, probes, tests, fuzz). Two files that use each
   other form a circle, as do longer loops: neither can be read, tested or moved without the
   other. What a shared header holds for several files (types, macros, inline helpers, the
   declarations of each) ties no file to another by itself; only the uses do.

Declarations and definitions are found by a light C reader (comments, strings and preprocessor
lines set aside, top-level statements split at ';' and braces; uses are looked for in macros too),
which is enough for this tree's style: one declaration per statement, the function name right
before its parameter list. --list prints every use A -> B with the header and names behind it,
for a reader who wants the whole picture rather than the verdict."""
import os
import re
import sys

ROOMS = ['src', 'planner/run', 'planner/search', 'planner/calibrate', 'planner/frameworks',
         'planner/cost', 'planner/model', 'planner']
TREES = ['src', 'planner', 'probes', 'tests', 'fuzz']
SOURCE = ('.c', '.cu')
HEADER = ('.h', '.cuh')
ATTRIBUTE = re.compile(r'__attribute__\s*\(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\)')
KEYWORDS = {'if', 'for', 'while', 'switch', 'return', 'sizeof', 'defined', '__attribute__',
            '_Static_assert', 'static_assert', '__declspec', 'alignof', '_Alignof', 'typeof'}


def tree_files(root):
    out = []
    for top in TREES:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(x for x in dirs if not x.startswith('.'))
            for f in sorted(files):
                if f.endswith(SOURCE + HEADER):
                    out.append(os.path.relpath(os.path.join(d, f), root))
    return out


def room_of(path):
    """The room of a file (longest listed prefix), or None outside the rooms."""
    d = os.path.dirname(path)
    for r in sorted(ROOMS, key=len, reverse=True):
        if d == r or (r != 'planner' and d.startswith(r + '/')):
            return r
    return None


def strip_c(text, keep_pp=False):
    """Text without comments, string and character literals (kept as empty quotes) and, unless
    keep_pp, preprocessor lines (continuations included); newlines kept so that line numbers hold."""
    out, i, n = [], 0, len(text)
    bol = True
    while i < n:
        c = text[i]
        if bol and c in ' \t':
            out.append(c); i += 1; continue
        if bol and c == '#' and not keep_pp:
            while i < n and text[i] != '\n':
                if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
                    out.append('\n'); i += 2; continue
                if text.startswith('/*', i):
                    # a comment that starts on the directive's line may end lines later: all of
                    # it goes with the directive (else its text is read as code)
                    j = text.find('*/', i + 2)
                    j = n if j < 0 else j + 2
                    out.append('\n' * text.count('\n', i, j)); i = j; continue
                i += 1
            continue
        bol = False
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append('\n' * text.count('\n', i, j)); i = j; continue
        if text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j; continue
        if c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + c); i = j + 1; continue
        if c == '\n':
            bol = True
        out.append(c); i += 1
    return ''.join(out)


def includes(text):
    """The quoted #include names of a file, with their line numbers."""
    return [(m.group(1), text.count('\n', 0, m.start()) + 1)
            for m in re.finditer(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', text, re.M)]


def statements(code):
    """Top-level statements: (text, ends_with) where ends_with is ';' or '{' (a body follows)."""
    out, depth, start = [], 0, 0
    paren = 0
    for i, c in enumerate(code):
        if c == '(':
            paren += 1
        elif c == ')':
            paren -= 1
        elif c == '{':
            if depth == 0 and paren == 0:
                out.append((code[start:i], '{'))
            depth += 1
        elif c == '}':
            depth -= 1
            if depth == 0:
                start = i + 1
        elif c == ';' and depth == 0 and paren == 0:
            out.append((code[start:i], ';'))
            start = i + 1
    return out


def head_name(stmt):
    """The name a statement declares or defines: the identifier before its first top-level '(' (a
    function), else the last identifier before '[' or '=' (a variable). None for what is neither."""
    s = ' '.join(ATTRIBUTE.sub(' ', stmt).split())
    if not s or re.match(r'^(typedef|struct|union|enum)\b[^(]*$', s) or s.startswith('typedef'):
        return None, False
    m = re.search(r'([A-Za-z_]\w*)\s*\(', s)
    if m and m.group(1) not in KEYWORDS and '=' not in s[:m.start()]:
        if re.search(r'\(\s*\*', s[:m.end() + 2]) and s[m.end():].lstrip().startswith('*'):
            return None, False   # a function pointer variable
        return m.group(1), True
    m = re.match(r'^(.*?)([A-Za-z_]\w*)\s*(\[[^=]*\])?\s*(=.*)?$', s)
    if m and m.group(2) not in KEYWORDS and m.group(1).strip():
        return m.group(2), False
    return None, False


def declared(code):
    """Names a header declares for others to define: function prototypes and extern variables
    (not static, not inline: those live in the header itself)."""
    names = set()
    for st, end in statements(code):
        if end != ';':
            continue
        words = st.split()
        if not words or 'static' in words or 'inline' in words or '__forceinline__' in words:
            continue
        name, fn = head_name(st)
        if name and (fn or 'extern' in words):
            names.add(name)
    return names


def defined(code):
    """Names a .c file defines with external linkage: function bodies and initialised or plain
    global variables that are neither static nor extern."""
    names = set()
    for st, end in statements(code):
        words = st.split()
        if not words or 'static' in words or 'extern' in words or words[0] == 'typedef':
            continue
        name, fn = head_name(st)
        if not name:
            continue
        if fn and end == '{':
            names.add(name)
        elif not fn and (end == ';' or st.rstrip().endswith('=')):  # int x; int x = 1; T x[] = {..};
            names.add(name)
    return names


class Tree:
    def __init__(self, root):
        self.root = root
        self.files = tree_files(root)
        self.text = {f: open(os.path.join(root, f), errors='replace').read() for f in self.files}
        # C++ linkage blocks (#ifdef __cplusplus / extern "C" { / #endif) would hide a header's
        # declarations inside braces: they are dropped before the statements are read.
        cpp = re.compile(r'^[ \t]*#[ \t]*ifdef[ \t]+__cplusplus\b.*?^[ \t]*#[ \t]*endif.*?$', re.M | re.S)
        self.code = {f: strip_c(cpp.sub(lambda m: '\n' * m.group(0).count('\n'), t))
                     for f, t in self.text.items()}
        self.refs = {f: set(re.findall(r'[A-Za-z_]\w*', strip_c(t, keep_pp=True))) for f, t in self.text.items()}
        self.by_name = {}
        for f in self.files:
            self.by_name.setdefault(os.path.basename(f), []).append(f)
        self.incs = {f: [(self.resolve(f, n), n, line) for n, line in includes(self.text[f])]
                     for f in self.files}

    def top(self, f):
        return f.split('/', 1)[0]

    def resolve(self, src, name):
        """The file an #include "name" of src reads: beside src, else the one of that name in the
        same tree (the build's include directories are the tree's folders), else anywhere."""
        p = os.path.normpath(os.path.join(os.path.dirname(src), name))
        if p in self.text:
            return p
        cands = self.by_name.get(os.path.basename(name), [])
        same = [c for c in cands if self.top(c) == self.top(src)]
        if src.startswith('src/') or src.startswith('tests/') or src.startswith('fuzz/'):
            same = same or [c for c in cands if c.startswith('planner/')]
        if len(same) == 1:
            return same[0]
        return cands[0] if len(cands) == 1 else None

    def closure(self, f):
        """Headers f reads, directly or through other headers."""
        seen, todo = set(), [h for h, _, _ in self.incs[f] if h]
        while todo:
            h = todo.pop()
            if h in seen:
                continue
            seen.add(h)
            todo.extend(x for x, _, _ in self.incs.get(h, []) if x)
        return seen

    def deps(self):
        """{A: {B: [(header, name), ...]}} over the .c/.cu files."""
        defs = {f: defined(self.code[f]) for f in self.files if f.endswith(SOURCE)}
        where = {}
        for f, names in defs.items():
            for n in names:
                where.setdefault((self.top(f), n), set()).add(f)
        decl = {h: declared(self.code[h]) for h in self.files if h.endswith(HEADER)}
        out = {}
        for a in defs:
            used = self.refs[a] - defs[a]
            for h in sorted(self.closure(a)):
                for n in sorted(decl.get(h, set()) & used):
                    for b in where.get((self.top(h), n), ()):
                        if b != a:
                            out.setdefault(a, {}).setdefault(b, []).append((h, n))
        return out


def cycles(deps):
    """Strongly connected components of more than one file (Tarjan), each sorted."""
    index, low, on, stack, comps = {}, {}, set(), [], []
    nodes = sorted(set(deps) | {b for v in deps.values() for b in v})
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(deps.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return sorted(comps)


def why(deps, a, b):
    hs = {}
    for h, n in deps[a][b]:
        hs.setdefault(h, []).append(n)
    return '; '.join('%s (%s)' % (h, ', '.join(ns[:4] + (['...'] if len(ns) > 4 else [])))
                     for h, ns in sorted(hs.items()))


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    t = Tree(sys.argv[1])
    n, failed = 0, 0

    def ok(cond, msg):
        nonlocal n, failed
        n += 1
        failed += not cond
        print('%s %d - %s' % ('ok' if cond else 'not ok', n, msg))

    # 1. rooms
    order = {r: i for i, r in enumerate(ROOMS)}
    bad = []
    for f in t.files:
        r = room_of(f)
        if r is None:
            continue
        for h, name, line in t.incs[f]:
            hr = room_of(h) if h else None
            if hr is not None and order[hr] < order[r]:
                bad.append('%s:%d includes "%s" of %s/, a room listed before %s/' % (f, line, name, hr, r))
    for b in bad:
        print('# ' + b)
    ok(not bad, 'rooms: every include of src/ and planner/ goes to its own room or one listed after '
       'it (%s)' % ' > '.join(r.split('/')[-1] if r != 'planner' else 'root' for r in ROOMS))

    # 2. circles
    deps = t.deps()
    comps = cycles(deps)
    for comp in comps:
        print('# circle: ' + ' <-> '.join(comp))
        for a in comp:
            for b in comp:
                if b in deps.get(a, {}):
                    print('#   %s -> %s: %s' % (a, b, why(deps, a, b)))
    ok(not comps, 'circles: no two files (nor a longer loop) use each other (%d files, %d uses)'
       % (len([f for f in t.files if f.endswith(SOURCE)]), sum(len(v) for v in deps.values())))
    if '--list' in sys.argv:
        for a in sorted(deps):
            for b in sorted(deps[a]):
                print('# %s -> %s: %s' % (a, b, why(deps, a, b)))
    print('1..%d' % n)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
