#!/usr/bin/env python3
"""What to rent: plan --gpu A,B,... --gpus N,M,... --tokens T (TAP on stdout).

  rent.py            (PARPLAN: the binary; PARPLAN_SOURCE_DIR: the source tree)

Each row must be what `estimate` says for that GPU type and count (plan's #1, the same days,
GPU-hours and cost: one function prices both), the ranking and the Pareto front must follow from
the rows, bad input is exit 2 with one line, and --report draws one point per option (rendered
by headless Chromium where it is installed). The elapsed time is printed, not judged."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from taplib import SRC, ok, run, close, done  # noqa: E402
PRICES = os.path.join(SRC, 'examples', 'prices.yaml')
GPUS = ['a100-80gb', 'h100-sxm', 'h200', 'b200']
COUNTS = [64, 128, 256, 512]
SPEC = 'a100-80gb=1.3,h100-sxm=3,h200=4,b200=6'
WORK = ['--model', 'llama3-70b', '--tokens', '1e12']

def main():
    p = run(['plan'] + WORK + ['--gpu', ','.join(GPUS), '--gpus', ','.join(map(str, COUNTS)),
                               '--price-per-gpu-hour', SPEC, '--json', '-q'])
    try:
        d = json.loads(p.stdout)
    except ValueError:
        d = None
    ok(p.returncode == 0 and d is not None, 'plan over 4 GPU types x 4 counts answers (%s)' % p.stderr.strip()[:200])
    if d is None:
        done()
        return 1
    rows = d['rows']
    print('# 4 x 4 planned and priced in %.2f s' % d['elapsed_s'])
    ok(len(rows) == 16 and sorted((r['gpu'], r['gpus']) for r in rows) ==
       sorted((g, c) for g in GPUS for c in COUNTS), 'one row per GPU type and count')
    fit = [r for r in rows if r['fits']]
    ok(len(fit) == 16, '%d of 16 options fit (llama3-70b fits on 64 of each)' % len(fit))
    ok(all(fit[i]['cost'] <= fit[i + 1]['cost'] for i in range(len(fit) - 1)), 'ranked by cost')
    # the Pareto front by brute force: no other row both faster and cheaper
    want = [not any(o is not r and o['days'] <= r['days'] and o['cost'] <= r['cost'] and
                    (o['days'] < r['days'] or o['cost'] < r['cost']) for o in fit) for r in fit]
    ok([r['pareto'] for r in fit] == want, 'the Pareto front is the rows no other beats on days and cost')
    # each row is estimate's answer (plan's #1 priced by the same function)
    bad = []
    for r in fit:
        price = dict(kv.split('=') for kv in SPEC.split(','))[r['gpu']]
        e = run(['estimate'] + WORK + ['--gpu', r['gpu'], '--gpus', str(r['gpus']), '--price-per-gpu-hour', price,
                                       '--json', '-q'])
        try:
            ed = json.loads(e.stdout)
        except ValueError:
            ed = {}
        if not (close(ed.get('days'), r['days']) and close(ed.get('cost'), r['cost']) and
                close(ed.get('gpu_hours'), r['gpu_hours']) and close(ed.get('step_time_s'), r['step_time_s'])):
            bad.append('%s x %d: estimate %s days %s, rent %s days %s' % (r['gpu'], r['gpus'], ed.get('days'),
                                                                         ed.get('cost'), r['days'], r['cost']))
    ok(not bad, 'every row is what estimate gives for that GPU and count (%s)' % '; '.join(bad[:3]))

    # the example prices file: marked as an example with its date and source
    p = run(['plan'] + WORK + ['--gpu', 'a100-80gb,h100-sxm,h200', '--gpus', '64', '--prices', PRICES])
    ok(p.returncode == 0 and 'EXAMPLE prices, not quotes' in p.stdout and '2026-05' in p.stdout,
       'the shipped prices are marked as examples, with their date')
    p = run(['plan'] + WORK + ['--gpu', 'a100-80gb,b200', '--gpus', '64', '--prices', PRICES])
    ok(p.returncode == 2 and 'no price for b200' in p.stderr and len(p.stderr.strip().split('\n')) == 1,
       'a GPU the prices do not name: exit 2, one line')
    # without prices: ranked by days, the front over GPU-hours
    p = run(['plan'] + WORK + ['--gpu', 'h100-sxm,h200', '--gpus', '64,128', '--json', '-q'])
    dd = json.loads(p.stdout or '{}')
    rr = dd.get('rows', [])
    ok(dd.get('ranked_by') == 'days' and all(rr[i]['days'] <= rr[i + 1]['days'] for i in range(len(rr) - 1)) and
       all(r['cost'] is None for r in rr), 'without prices: ranked by days, no cost')
    # a count that is not whole nodes is a row that says why, not a failure
    p = run(['plan'] + WORK + ['--gpu', 'h100-sxm', '--gpus', '64,12', '--json', '-q'])
    rr = json.loads(p.stdout or '{}').get('rows', [])
    odd = [r for r in rr if r['gpus'] == 12]
    ok(p.returncode == 0 and odd and not odd[0]['fits'] and 'whole number of nodes' in (odd[0]['why'] or ''),
       'a count of 12 on nodes of 8: a row that says why')

    for args, pat, what in [
            (['--gpu', 'h100-sxm,h200', '--gpus', '64'], '--tokens', 'a GPU list without --tokens'),
            (['--gpu', 'h100-sxm,hx100', '--gpus', '64', '--tokens', '1e12'], 'unknown GPU', 'an unknown GPU'),
            (['--gpu', 'h100-sxm,', '--gpus', '64', '--tokens', '1e12'], 'empty item', 'an empty item'),
            (['--gpu', 'h100-sxm', '--gpus', '64,128', '--tokens', '1e12', '--prices', PRICES,
              '--price-per-gpu-hour', '2'], 'not both', 'two kinds of prices'),
            (['--gpu', 'h100-sxm', '--gpus', '64,128', '--tokens', '1e12', '--price-per-gpu-hour', 'h100-sxm=x'],
             'GPU=P', 'a malformed price')]:
        p = run(['plan', '--model', 'llama3-70b'] + args)
        ok(p.returncode == 2 and pat in p.stderr and len(p.stderr.strip().split('\n')) == 1 and not p.stdout,
           '%s: exit 2, one line (%s)' % (what, p.stderr.strip()[:160]))
    tmp = tempfile.mkdtemp(prefix='pp-rent-')
    try:
        bad_prices = os.path.join(tmp, 'p.yaml')
        with open(bad_prices, 'w') as f:
            f.write("date: '2026-05'\nsource: x\nexample: true\nprices:\n  h100-sxm: 3\nfoo: 1\n")
        p = run(['plan'] + WORK + ['--gpu', 'h100-sxm', '--gpus', '64,128', '--prices', bad_prices])
        ok(p.returncode == 2 and 'p.yaml:6:' in p.stderr and 'foo' in p.stderr,
           'an unknown key in a prices file: file:line:col (%s)' % p.stderr.strip()[:160])

        html = os.path.join(tmp, 'rent.html')
        p = run(['plan'] + WORK + ['--gpu', 'h100-sxm,h200', '--gpus', '64,128', '--price-per-gpu-hour', SPEC,
                                   '--report', html, '-q'])
        page = open(html).read() if os.path.exists(html) else ''
        ok(p.returncode == 0 and page.count('<circle class="option') == 4 and '<svg' in page and 'days to train' in page,
           '--report: one point per option on a days-against-cost chart')
        chrome = next((shutil.which(b) for b in ('chromium', 'chromium-browser', 'google-chrome') if shutil.which(b)), None)
        png = os.path.join(tmp, 'rent.png')
        if chrome:
            subprocess.run([chrome, '--headless', '--no-sandbox', '--disable-gpu', '--screenshot=' + png,
                            '--window-size=1000,600', 'file://' + html], capture_output=True, timeout=120)
        ok(chrome is None or (os.path.exists(png) and os.path.getsize(png) > 5000),
           'the chart renders in headless Chromium', skip=None if chrome else 'no Chromium installed')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return done()


if __name__ == '__main__':
    sys.exit(main())
