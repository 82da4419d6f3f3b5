#!/usr/bin/env python3
"""No issue numbers in code files (TAP on stdout; exit status 1 when one is found).

  issue_refs.py SOURCE_ROOT

A comment (or a message) that points at the tracker ("issue N", "Issue #N", "(issue N)") tells a
reader nothing: the reader has the code, not the tracker. Say what the code does and why, and
give the source of a formula (a paper, a table, a file of the framework). Checked: the C, CUDA,
Python and shell files and the meson files under src/, planner/, probes/, tests/, tools/, fuzz/,
doc/ and models.d/. A citation of another project's tracker is written as its address
(github.com/OWNER/REPO/issues/N), which this check lets through."""
import os
import re
import sys

TREES = ['src', 'planner', 'probes', 'tests', 'tools', 'fuzz', 'doc', 'models.d']
CODE = ('.c', '.h', '.cu', '.cuh', '.py', '.sh')
NAMES = ('meson.build', 'meson_options.txt')
# "issue" or "issues", then optional blanks and '#', then a digit; not inside an address (/issues/N)
ISSUE = re.compile(r'(?<![/\w])[Ii]ssues?[ \t]*#?[ \t]*[0-9]')


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = sys.argv[1]
    found, files = [], 0
    for top in TREES:
        for d, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(x for x in dirs if not x.startswith('.'))
            for name in sorted(names):
                if not (name.endswith(CODE) or name in NAMES):
                    continue
                path = os.path.join(d, name)
                files += 1
                with open(path, errors='replace') as f:
                    for i, line in enumerate(f, 1):
                        if ISSUE.search(line):
                            found.append('%s:%d: %s' % (os.path.relpath(path, root), i, line.strip()))
    for f in found:
        print('# ' + f)
    print('%s 1 - no issue numbers in the %d code files (say what and why instead)'
          % ('not ok' if found else 'ok', files))
    print('1..1')
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
