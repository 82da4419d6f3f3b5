#!/usr/bin/env python3
"""check --torchtitan-config job_config.json: a torchtitan run's saved config (Trainer.Config.to_dict,
torchtitan main b5bcd76c) read as the flags it stands for (TAP).

  torchtitan_config.py       (PARPLAN: the binary)

The example tests/data/torchtitan/llama3_8b.json (its keys' sources: llama3_8b.md beside it) must give
the same answer as the flags a user would type for it; flags beside it win; what changes memory or
time and is not modelled is named in one warning, keys torchtitan does not define in another; bad
values are errors with the file's name (file:line:col where one key is at fault)."""
import copy
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from taplib import ok, run, done  # noqa: E402
EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data', 'torchtitan', 'llama3_8b.json')
WORK = ['--gpu', 'h100-sxm', '--gpus', '16']
# what the example stands for on 16 GPUs: shard degree -1 is the rest (16), reshard "default"
# without PP is ZeRO 3, 8192 tokens of max_context_length 8192 one sequence, the step's tokens
# (-1) micro-batch x 16 ranks, float32 storage, SelectiveAC, fused AdamW, cross-entropy upcast
FLAGS = ['--model', 'llama3-8b', '--framework', 'fsdp', '--tp', '1', '--pp', '1', '--cp', '1', '--ep', '1',
         '--dp', '16', '--zero', '3', '--seq', '8192', '--mbs', '1', '--gbs', '16', '--param-dtype', 'fp32',
         '--recompute', 'selective', '--optimizer-impl', 'fused', '--loss', 'cut']


def doc(args, cmd='check'):
    p = run([cmd] + WORK + args + ['--json', '-q'])
    try:
        return json.loads(p.stdout), p
    except ValueError:
        return None, p


def main():
    tmp = tempfile.mkdtemp(prefix='pp-tt-')
    with open(EXAMPLE) as f:
        base = json.load(f)

    def cfg(name, obj=None, raw=None, **edits):
        o = copy.deepcopy(base if obj is None else obj)
        for sec, kv in edits.items():
            # a policy or loss is its class's whole dict; the sections are merged key by key
            o[sec] = kv if sec in ('activation_checkpoint', 'loss') else {**o[sec], **kv}
        path = os.path.join(tmp, name)
        with open(path, 'w') as f:
            f.write(raw if raw is not None else json.dumps(o, indent=2))
        return path

    try:
        got, p = doc(['--torchtitan-config', EXAMPLE])
        want, _ = doc(FLAGS)
        ok(got is not None and got == want, 'the llama3 8B example: the same --json document as the flags it stands '
           'for (%s)' % p.stderr.strip()[:200])
        got, p = doc(['--torchtitan-config', EXAMPLE, '--tokens', '1e9'], 'estimate')
        want, _ = doc(FLAGS + ['--tokens', '1e9'], 'estimate')
        ok(got is not None and got == want, 'estimate: the same document as the flags')
        p = run(['check'] + WORK + ['--torchtitan-config', EXAMPLE])
        nm = [x for x in p.stderr.split('\n') if 'not modelled' in x]
        ok(p.returncode == 0 and len(nm) == 1 and 'num_chunks' not in nm[0] and 'disable_cuda_graphs' in nm[0]
           and 'does not define' not in p.stderr,
           'the example: one not-modelled warning (CUDA graphs; the chunked loss read as --loss cut), no unknown key')

        got, p = doc(['--torchtitan-config', EXAMPLE, '--zero', '2', '--mbs', '2', '--seq', '4096', '--dp', '8',
                      '--tp', '2'])
        lay = (got or {}).get('layout') or {}
        ok(lay.get('zero') == 2 and lay.get('mbs') == 2 and lay.get('dp') == 8 and lay.get('tp') == 2 and
           lay.get('sp') is True, 'flags beside the file win (--zero 2 --mbs 2 --dp 8 --tp 2; sequence parallel from '
           'the file)')

        hsdp = cfg('hsdp.json', parallelism={'data_parallel_shard_degree': 4, 'data_parallel_replicate_degree': 2,
                                             'tensor_parallel_degree': 2, 'fsdp_reshard_after_forward': 'never'},
                   training={'num_tokens_per_microbatch_per_dp_rank': 16384, 'num_tokens_per_train_step': 262144,
                             'enable_cpu_offload': True, 'dtype': 'bfloat16', 'disable_cuda_graphs': True},
                   compile={'enable': True, 'enable_async_tensor_parallel': True},
                   activation_checkpoint={'preserve_rng_state': True, 'determinism_check': 'default', 'debug': False},
                   loss={'global_vocab_size': 128256})
        got, p = doc(['--torchtitan-config', hsdp])
        want, _ = doc(['--model', 'llama3-8b', '--framework', 'fsdp', '--tp', '2', '--sp', '--pp', '1', '--cp', '1',
                       '--ep', '1', '--dp', '8', '--replicate', '2', '--zero', '2', '--seq', '8192', '--mbs', '2',
                       '--gbs', '32', '--offload', 'params', '--param-dtype', 'bf16', '--compile', '--compile-loss',
                       '--tp-comm-overlap', '--recompute', 'full', '--optimizer-impl', 'fused', '--loss', 'upcast'])
        ok(got is not None and got == want and 'warning' not in p.stderr,
           'HSDP 4x2, TP 2, reshard never, offload, bf16 storage, compile (model and loss, the default components) with '
           'async TP, FullAC, plain cross-entropy: the flags\' document, no warning (%s)' % p.stderr.strip()[:200])
        model_only = cfg('model_only.json', compile={'enable': True, 'components': ['model']})
        got, p = doc(['--torchtitan-config', model_only])
        stack = (got or {}).get('stack') or {}
        ok(got is not None and stack.get('compile') is True and 'compile_loss' not in stack,
           'compile.components ["model"]: the blocks compiled, the loss eager')

        pp = cfg('pp.json', parallelism={'pipeline_parallel_degree': 2, 'pipeline_parallel_schedule': 'Interleaved1F1B',
                                         'num_pp_microbatches': 8})
        got, p = doc(['--torchtitan-config', pp])
        lay = (got or {}).get('layout') or {}
        ok(lay.get('vpp') == 2 and lay.get('vstage_layers') == [8, 9, 8, 7] and lay.get('zero') == 2 and
           lay.get('gbs') == 8 * 8, 'Interleaved1F1B on 2 ranks: 2 virtual stages, torchtitan\'s split 8/9/8/7 '
           '(embedding and output one layer each), reshard "default" under PP is ZeRO 2, gbs 1 x 8 x 8 = %s'
           % lay.get('gbs'))

        o = copy.deepcopy(base)
        o['my_key'] = 1
        o['parallelism']['frobnicate'] = True
        o['debug']['deterministic'] = True
        o['optimizer']['param_groups'][0]['optimizer_name'] = 'DistMuon'
        o['activation_checkpoint'] = {'memory_budget': 0.5, 'preserve_rng_state': True}
        d = cfg('d.json', o)
        p = run(['check'] + WORK + ['--torchtitan-config', d, '--compile'])
        lines = [x for x in p.stderr.split('\n') if 'warning' in x]
        nm = [x for x in lines if 'not modelled' in x]
        uk = [x for x in lines if 'does not define' in x]
        ok(len(nm) == 1 and all(k in nm[0] for k in ('debug.deterministic', 'DistMuon', 'memory_budget 0.5')),
           'what changes memory or time and is not modelled: one warning naming each (%s)' % (nm[0][:200] if nm else ''))
        ok(len(uk) == 1 and 'my_key' in uk[0] and 'parallelism.frobnicate' in uk[0],
           'keys Trainer.Config does not define: one warning naming each')

        for name, obj, raw, pat, what in [
                ('e1.json', None, '{"parallelism": {"tensor_parallel_degree": "two"}, "model_spec": {"name": "llama3", '
                 '"flavor": "8B"}}', r'e1.json:1:', 'a degree that is not a number: file:line:col'),
                ('e2.json', None, '{"model_spec": {"name": "llama3", "flavor": "8B"}, "training": {"dtype": "float32", '
                 '"mixed_precision_param": "float32"}}', 'fp32', 'float32 training: refused'),
                ('e3.json', None, '{"model_spec": {"name": "llama3", "flavor": "8B"}, "training": '
                 '{"num_tokens_per_microbatch_per_dp_rank": 10000, "max_context_length": 4096}}', 'e3.json:1:',
                 'tokens not a whole number of sequences: file:line:col'),
                ('e4.json', None, '{"model_spec": {"name": "mymodel", "flavor": "7B"}}', '--model',
                 'an unknown flavor: --model required'),
                ('e5.json', None, '[1, 2]', 'e5.json:1:1', 'not an object: file:line:col'),
                ('e6.json', None, '{"model_spec": {"name": "llama3", "flavor": "8B"}, "parallelism": '
                 '{"fsdp_reshard_after_forward": "sometimes"}}', 'e6.json:1:.*never', 'a bad reshard policy')]:
            path = cfg(name, obj, raw)
            p = run(['check'] + WORK + ['--torchtitan-config', path])
            ok(p.returncode == 2 and re.search(pat, p.stderr) and len(p.stderr.strip().split('\n')) == 1,
               '%s: exit 2, one line (%s)' % (what, p.stderr.strip()[:160]))
        p = run(['check', '--gpu', 'h100-sxm', '--torchtitan-config', EXAMPLE])
        ok(p.returncode == 2 and 'data_parallel_shard_degree' in p.stderr and '--gpus' in p.stderr,
           'shard degree -1 without --gpus: refused, naming both')
        p = run(['check'] + WORK + ['--torchtitan-config', EXAMPLE, '--framework', 'megatron'])
        ok(p.returncode == 2 and '--framework fsdp' in p.stderr, 'with --framework megatron: refused')
        p = run(['check'] + WORK + ['--torchtitan-config', EXAMPLE, '--deepspeed-config', EXAMPLE])
        ok(p.returncode == 2 and 'two runs' in p.stderr, 'with --deepspeed-config: refused')
        p = run(['plan'] + WORK + ['--torchtitan-config', EXAMPLE, '--json', '-q'])
        ok(p.returncode == 0, 'plan takes it too (the file\'s layout fixed)')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return done()


if __name__ == '__main__':
    sys.exit(main())
