#!/usr/bin/env python3
"""plan's verdict, "why #1 wins", is one answer in three renderings (TAP on stdout).

  plan_why.py       (PARPLAN: the binary; PARPLAN_SOURCE_DIR: the source tree)

For a dense, an MoE and an FSDP2 plan: every runner-up and other shape of --json's "why" is a line
of the table's "why #1 wins" with the same layout, difference, seconds and costly terms; the
headroom line and the simpler-layout note agree; the HTML report (--report) holds the same lines;
and a plan where nothing fits has "why": null and no such section."""
import html
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from taplib import ok, run, done  # noqa: E402

CASES = [
    ('gpt3-13b on 16 A100', ['--model', 'gpt3-13b', '--gpu', 'a100-80gb', '--gpus', '16', '--gpus-per-node', '8']),
    ('mixtral-8x7b on 32 H100', ['--model', 'mixtral-8x7b', '--gpu', 'h100-sxm', '--gpus', '32',
                                 '--gpus-per-node', '8']),
    ('llama3-8b FSDP2 on 8 H200', ['--model', 'llama3-8b', '--gpu', 'h200', '--gpus', '8', '--framework', 'fsdp']),
]


def g3(x):
    return '%.3g' % x


def why_lines(text):
    i = text.find('\nwhy #1 wins:\n')
    return text[i + len('\nwhy #1 wins:\n'):].splitlines() if i >= 0 else None


def check(name, args):
    t = run(['plan'] + args)
    j = run(['plan'] + args + ['--json'])
    try:
        d = json.loads(j.stdout)
    except ValueError:
        d = None
    if not ok(t.returncode == 0 and d is not None, '%s: plan answers as text and JSON (%s)' % (name, t.stderr.strip()[:200])):
        return
    lines = why_lines(t.stdout)
    why = d.get('why')
    if not ok(lines is not None and isinstance(why, dict), '%s: the table says why #1 wins and JSON has "why"' % name):
        return
    cmps = [('#%d' % c['rank'], c) for c in why['runners_up']] + [('  ' + c['label'], c) for c in why['other_shapes']]
    ok(len(cmps) >= 1, '%s: at least one comparison (%d)' % (name, len(cmps)))
    for head, c in cmps:
        want = '  %s (%s)' % (head, c['differs'])
        line = next((x for x in lines if x.startswith(want)), None)
        good = line is not None
        if good and c['slower_s'] > 0 and 'same predicted step time' not in line:
            good = (' is %s s per step slower (%.1f%%)' % (g3(c['slower_s']), 100 * c['slower_fraction'])) in line
            for k in c['costs']:
                good = good and ('%s %+.3g s' % (k['term'], k['delta_s'])) in line
            if c['saves']:
                good = good and ('it saves %s s of %s' % (g3(-c['saves']['delta_s']), c['saves']['term'])) in line
        ok(good, '%s: JSON\'s %s is the table\'s line%s' % (name, head.strip(), '' if good else ' (%r)' % line))
    c0 = d['candidates'][0]
    ok(any(x.startswith('  #1 needs ') for x in lines) and abs(why['need_bytes'] - c0['need_bytes']) <= 1 and
       abs(why['headroom_bytes'] - c0['headroom_bytes']) <= 1,
       '%s: the headroom line and JSON name #1\'s need and headroom' % name)
    simpler = why['simpler_within_band']
    note = next((x for x in lines if 'it is the simpler layout to run' in x), None)
    ok((simpler is None) == (note is None) and (simpler is None or ('note: %s is within' % simpler['label']) in note),
       '%s: the simpler layout within the band, the same in both (%s)' % (name, simpler and simpler['label']))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'plan.html')
        r = run(['plan'] + args + ['--report', path])
        page = html.unescape(open(path).read()) if r.returncode == 0 and os.path.exists(path) else ''
        body = [x for x in lines if x.strip()]
        missing = [x for x in body if x not in page]
        ok(page and 'Why #1 wins' in page and not missing,
           '%s: the HTML report holds the same %d lines%s' % (name, len(body), (' (missing %r)' % missing[0]) if missing else ''))


def main():
    for name, args in CASES:
        check(name, args)
    # nothing fits: no verdict anywhere
    args = ['--model', 'llama3-405b', '--gpu', 'a100-80gb', '--gpus', '8', '--gpus-per-node', '8']
    j = run(['plan'] + args + ['--json'])
    try:
        d = json.loads(j.stdout)
    except ValueError:
        d = {}
    ok('why' in d and d['why'] is None, 'llama3-405b on 8 A100 (nothing fits): "why" is null')
    t = run(['plan'] + args)
    ok('why #1 wins' not in t.stdout, 'llama3-405b on 8 A100: the table has no verdict')
    return done()


if __name__ == '__main__':
    sys.exit(main())
