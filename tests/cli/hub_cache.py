#!/usr/bin/env python3
"""Hugging Face Hub ids (--model ORG/NAME[@REV]) from a local Hub cache built here, offline (TAP).

  hub_cache.py            (PARPLAN: the binary; PARPLAN_SOURCE_DIR: the source tree)

The cache is huggingface_hub's layout (planner/model/hub.c): models--ORG--NAME/refs/REV holds a
commit, snapshots/COMMIT/config.json links into blobs/. Each id is checked against the same
config.json given as a file: check's JSON must be the same but for the model's name."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

PARPLAN = os.environ.get('PARPLAN', 'parplan')
SRC = os.environ.get('PARPLAN_SOURCE_DIR', '.')
CONFIG = os.path.join(SRC, 'tests', 'data', 'hf', 'Qwen3-8B.config.json')
COMMIT = '0123456789abcdef0123456789abcdef01234567'
TAGGED = 'fedcba9876543210fedcba9876543210fedcba98'
LAYOUT = ['--gpu', 'h100-sxm', '--gpus', '8', '--seq', '4096', '--tp', '2', '--mbs', '1', '--dist-opt']

n = 0
failed = 0


def ok(cond, what):
    global n, failed
    n += 1
    if not cond:
        failed += 1
    print('%s %d - %s' % ('ok' if cond else 'not ok', n, what))


def run(args, env):
    e = {k: v for k, v in os.environ.items() if not k.startswith(('HF_', 'XDG_CACHE'))}
    e['HOME'] = env.pop('HOME', '/nonexistent-home')
    e.update(env)
    return subprocess.run([PARPLAN] + args, capture_output=True, text=True, env=e, timeout=120)


def cache(root, org, name, refs):
    """A Hub cache under root for ORG/NAME: each ref -> commit, each commit's config.json a link
    to one blob (as huggingface_hub writes it)."""
    repo = os.path.join(root, 'models--%s--%s' % (org, name))
    os.makedirs(os.path.join(repo, 'blobs'), exist_ok=True)
    blob = os.path.join(repo, 'blobs', 'a1b2c3')
    shutil.copyfile(CONFIG, blob)
    for ref, commit in refs.items():
        snap = os.path.join(repo, 'snapshots', commit)
        os.makedirs(snap, exist_ok=True)
        link = os.path.join(snap, 'config.json')
        if not os.path.exists(link):
            os.symlink(os.path.relpath(blob, snap), link)
        if ref:
            os.makedirs(os.path.join(repo, 'refs'), exist_ok=True)
            with open(os.path.join(repo, 'refs', ref), 'w') as f:
                f.write(commit)  # huggingface_hub writes it without a newline


def doc(p):
    try:
        d = json.loads(p.stdout)
    except ValueError:
        return None
    d.pop('model', None)  # the name: the file's _name_or_path against the id's NAME
    d.pop('remedies', None)  # their commands repeat --model as given
    return d


def main():
    tmp = tempfile.mkdtemp(prefix='pp-hub-')
    try:
        hub = os.path.join(tmp, 'hub')
        cache(hub, 'Qwen', 'Qwen3-8B', {'main': COMMIT, 'v1.0': TAGGED})
        ref = run(['check', '--model', CONFIG] + LAYOUT + ['--json', '-q'], {})
        want = doc(ref)
        ok(want is not None and ref.returncode == 0, 'check of the config.json file gives JSON (status %d)' % ref.returncode)

        p = run(['check', '--model', 'Qwen/Qwen3-8B'] + LAYOUT + ['--json', '-q'], {'HF_HUB_CACHE': hub})
        ok(doc(p) == want and p.returncode == ref.returncode,
           'HF_HUB_CACHE, refs/main: the same answer as the file (%s)' % p.stderr.strip()[:200])
        ok(json.loads(p.stdout or '{}').get('model') == 'Qwen3-8B', "the model's name is the id's NAME")
        p = run(['check', '--model', 'Qwen/Qwen3-8B@' + COMMIT] + LAYOUT + ['--json', '-q'], {'HF_HUB_CACHE': hub})
        ok(doc(p) == want, '@COMMIT: snapshots/COMMIT read directly (%s)' % p.stderr.strip()[:200])
        p = run(['check', '--model', 'Qwen/Qwen3-8B@v1.0'] + LAYOUT + ['--json', '-q'], {'HF_HUB_CACHE': hub})
        ok(doc(p) == want, '@TAG: refs/TAG names the snapshot (%s)' % p.stderr.strip()[:200])

        # HF_HOME/hub, then ~/.cache/huggingface/hub
        home = os.path.join(tmp, 'hfhome')
        cache(os.path.join(home, 'hub'), 'Qwen', 'Qwen3-8B', {'main': COMMIT})
        p = run(['check', '--model', 'Qwen/Qwen3-8B'] + LAYOUT + ['--json', '-q'], {'HF_HOME': home})
        ok(doc(p) == want, 'HF_HOME/hub searched (%s)' % p.stderr.strip()[:200])
        user = os.path.join(tmp, 'user')
        cache(os.path.join(user, '.cache', 'huggingface', 'hub'), 'Qwen', 'Qwen3-8B', {'main': COMMIT})
        p = run(['check', '--model', 'Qwen/Qwen3-8B'] + LAYOUT + ['--json', '-q'], {'HOME': user})
        ok(doc(p) == want, '~/.cache/huggingface/hub searched (%s)' % p.stderr.strip()[:200])
        p = run(['check', '--model', 'Qwen/Qwen3-8B'] + LAYOUT + ['--json', '-q'],
                {'HF_HUB_CACHE': os.path.join(tmp, 'empty'), 'HOME': user})
        ok(doc(p) == want, 'an empty HF_HUB_CACHE falls through to the next cache')

        # not cached: one line, the caches searched, the command that fetches it; exit 2
        p = run(['check', '--model', 'meta-llama/Llama-2-13b-hf'] + LAYOUT, {'HF_HUB_CACHE': hub})
        lines = p.stderr.strip().split('\n')
        ok(p.returncode == 2 and len(lines) == 1 and 'not in the local Hugging Face cache' in lines[0] and
           os.path.join(hub, 'models--meta-llama--Llama-2-13b-hf') in lines[0] and
           'huggingface-cli download meta-llama/Llama-2-13b-hf config.json' in lines[0] and not p.stdout,
           'not cached: exit 2, one line naming the cache searched and the fetch command: %s' % lines[0][:300])
        p = run(['check', '--model', 'Qwen/Qwen3-8B@v2'] + LAYOUT, {'HF_HUB_CACHE': hub})
        ok(p.returncode == 2 and '--revision v2' in p.stderr, 'an unknown revision: the fetch command names it')
        bad = os.path.join(tmp, 'bad')
        cache(bad, 'Qwen', 'Qwen3-8B', {})
        os.makedirs(os.path.join(bad, 'models--Qwen--Qwen3-8B', 'refs'))
        with open(os.path.join(bad, 'models--Qwen--Qwen3-8B', 'refs', 'main'), 'w') as f:
            f.write('not-a-commit\n')
        p = run(['check', '--model', 'Qwen/Qwen3-8B'] + LAYOUT, {'HF_HUB_CACHE': bad})
        ok(p.returncode == 2 and 'does not name a commit' in p.stderr, 'a ref that is not a commit is an error')

        # a path is still a path, and plan takes an id too
        p = run(['check', '--model', 'no/such.json'] + LAYOUT, {'HF_HUB_CACHE': hub})
        ok(p.returncode == 2 and 'cannot open' in p.stderr, 'ORG/NAME.json is a file path, not an id')
        p = run(['plan', '--model', 'Qwen/Qwen3-8B', '--gpu', 'h100-sxm', '--gpus', '8', '--seq', '4096', '--json'],
                {'HF_HUB_CACHE': hub})
        ok(p.returncode == 0 and json.loads(p.stdout or '{}').get('model') == 'Qwen3-8B', 'plan --model ORG/NAME')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print('1..%d' % n)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
