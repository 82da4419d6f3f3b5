#!/usr/bin/env python3
"""The answers the README and examples/README.md state are generated, not typed: every block

    <!-- parplan-output: ARGS -->
    ```
    ...what `parplan ARGS` prints...
    ```

is compared with what the binary prints for ARGS today (the search time, the only figure that
varies from run to run, is masked). PARPLAN_UPDATE_DOCS=1 rewrites the blocks instead. A block
that shows a layout OUT OF MEMORY must show remedies, and each remedy's `parplan check` command,
run again, must fit.
TAP on stdout.    doc_blocks.py PARPLAN SOURCE_DIR FILE..."""
import os
import re
import shlex
import subprocess
import sys

MARK = re.compile(r"<!-- parplan-output: (.*?) -->\n```[a-z]*\n(.*?)```", re.S)
VOLATILE = re.compile(r"in \d+(\.\d+)? ms")


def run(parplan, src, args):
    p = subprocess.run([parplan] + shlex.split(args), cwd=src, capture_output=True, text=True, timeout=120)
    return p.stdout


def main():
    parplan, src, files = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3:]
    update = os.environ.get("PARPLAN_UPDATE_DOCS") == "1"
    n = bad = 0
    for rel in files:
        path = os.path.join(src, rel)
        text = open(path).read()
        out_parts, pos = [], 0
        for m in MARK.finditer(text):
            args, stated = m.group(1), m.group(2)
            got = run(parplan, src, args)
            n += 1
            same = VOLATILE.sub("in T ms", got) == VOLATILE.sub("in T ms", stated)
            if not same and not update:
                bad += 1
                a, b = stated.splitlines(), got.splitlines()
                first = next((i for i in range(max(len(a), len(b)))
                              if i >= len(a) or i >= len(b) or VOLATILE.sub("", a[i]) != VOLATILE.sub("", b[i])), 0)
                print(f"not ok {n} - {rel}: `parplan {args}` prints what the file states")
                print(f"# line {first + 1}: stated {a[first] if first < len(a) else '(end)'!r}")
                print(f"#          prints {b[first] if first < len(b) else '(end)'!r}")
                print("# PARPLAN_UPDATE_DOCS=1 meson test -C build report-doc-blocks rewrites the blocks")
            else:
                print(f"ok {n} - {rel}: `parplan {args}` prints what the file states")
            # a block that shows a layout out of memory shows remedies that work: each printed
            # `parplan check ...` command, run again, fits (exit 0)
            if "OUT OF MEMORY" in got:
                cmds = [l.strip() for l in got.splitlines() if l.strip().startswith("parplan check ")]
                n += 1
                failed = []
                for cmd in cmds:
                    p = subprocess.run([parplan] + shlex.split(cmd)[1:], cwd=src, capture_output=True,
                                       text=True, timeout=120)
                    if p.returncode != 0:
                        failed.append(cmd)
                if cmds and not failed:
                    print(f"ok {n} - {rel}: `parplan {args}` is out of memory; its {len(cmds)} remedies fit when run")
                else:
                    bad += 1
                    print(f"not ok {n} - {rel}: `parplan {args}` is out of memory; {len(cmds)} remedies, "
                          f"{len(failed)} do not fit when run")
                    for cmd in failed:
                        print(f"# {cmd}")
            out_parts.append(text[pos:m.start(2)])
            out_parts.append(got)
            pos = m.end(2)
        out_parts.append(text[pos:])
        if update:
            open(path, "w").write("".join(out_parts))
    print(f"1..{n}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
