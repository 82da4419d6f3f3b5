"""TAP for the CLI's Python tests: ok() prints one numbered line, done() the plan and the status."""
import os
import subprocess

PARPLAN = os.environ.get('PARPLAN', 'parplan')
SRC = os.environ.get('PARPLAN_SOURCE_DIR', '.')

n = 0
failed = 0


def ok(cond, what, skip=None):
    global n, failed
    n += 1
    if skip:
        print('ok %d - %s # SKIP %s' % (n, what, skip))
        return True
    if not cond:
        failed += 1
    print('%s %d - %s' % ('ok' if cond else 'not ok', n, what))
    return bool(cond)


def run(args, timeout=600):
    return subprocess.run([PARPLAN] + args, capture_output=True, text=True, timeout=timeout)


def close(a, b, tol=1e-9):
    return a is not None and b is not None and abs(a - b) <= tol * max(1.0, abs(b))


def done():
    print('1..%d' % n)
    return 1 if failed else 0
