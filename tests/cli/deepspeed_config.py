#!/usr/bin/env python3
"""check --deepspeed-config ds.json: a DeepSpeed config read as the flags it stands for (TAP).

  deepspeed_config.py        (PARPLAN: the binary)

Each config must give the same answer as the flags a user would type for it; flags beside it win;
what changes memory or time and is not modelled is named in one warning, keys DeepSpeed does not
define in another; bad values are errors at file:line:col."""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from taplib import ok, run, done  # noqa: E402
WORK = ['--model', 'llama3-8b', '--gpu', 'h100-sxm', '--gpus', '16', '--seq', '4096']


def answer(args):
    p = run(['check'] + WORK + args + ['--json', '-q'])
    try:
        d = json.loads(p.stdout)
    except ValueError:
        return None, p
    keep = ('layout', 'peak_bytes', 'need_bytes', 'step_time_s', 'fits')
    return {k: d.get(k) for k in keep} | {'precision': d.get('stack', {}).get('precision'),
                                          'framework': d.get('stack', {}).get('framework')}, p


def main():
    tmp = tempfile.mkdtemp(prefix='pp-ds-')

    def cfg(name, obj, raw=None):
        path = os.path.join(tmp, name)
        with open(path, 'w') as f:
            f.write(raw if raw is not None else json.dumps(obj, indent=2))
        return path

    try:
        a = cfg('a.json', {'train_batch_size': 256, 'train_micro_batch_size_per_gpu': 4, 'bf16': {'enabled': True},
                           'zero_optimization': {'stage': 2, 'offload_optimizer': {'device': 'cpu'},
                                                 'overlap_comm': True, 'contiguous_gradients': True},
                           'optimizer': {'type': 'AdamW', 'params': {'lr': 1e-4}}, 'gradient_clipping': 1.0,
                           'steps_per_print': 100})
        got, p = answer(['--deepspeed-config', a])
        want, _ = answer(['--framework', 'deepspeed', '--zero', '2', '--offload', 'optimizer', '--mbs', '4', '--gbs',
                          '256', '--precision', 'bf16'])
        ok(got is not None and got == want, 'stage 2, CPU offload, micro-batch 4, train_batch_size 256, bf16: the '
           'answer of the flags it stands for (%s)' % p.stderr.strip()[:200])
        ok('warning' not in p.stderr, 'a config of modelled and neutral keys only: no warning')

        b = cfg('b.json', {'train_micro_batch_size_per_gpu': 2, 'gradient_accumulation_steps': 4,
                           'fp16': {'enabled': True, 'loss_scale': 0}, 'zero_optimization': {'stage': 1}})
        got, p = answer(['--deepspeed-config', b, '--tp', '2'])
        ok(got is not None and got['layout']['gbs'] == 2 * 4 * 8 and got['precision'] == 'fp16' and
           got['layout']['zero'] == 1,
           'no train_batch_size: micro-batch 2 x accumulation 4 x 8 data-parallel ranks = %s, fp16, ZeRO 1'
           % ((got or {}).get('layout') or {}).get('gbs'))

        got, p = answer(['--deepspeed-config', a, '--zero', '1', '--mbs', '1'])
        ok(got is not None and got['layout']['zero'] == 1 and got['layout']['mbs'] == 1,
           'flags beside the config win (--zero 1 --mbs 1 over stage 2, micro-batch 4)')

        c = cfg('c.json', {'train_micro_batch_size_per_gpu': 'auto', 'train_batch_size': 'auto',
                           'bf16': {'enabled': 'auto'}, 'zero_optimization': {'stage': 3}})
        got, p = answer(['--deepspeed-config', c])
        ok(got is not None and got['layout']['mbs'] == 1 and got['layout']['zero'] == 3 and got['precision'] == 'bf16',
           '"auto" (the HF Trainer fills it in) is not given: parplan\'s defaults')

        d = cfg('d.json', {'bf16': {'enabled': True}, 'my_key': 1,
                           'zero_optimization': {'stage': 3, 'stage3_max_live_parameters': 1e9,
                                                 'reduce_bucket_size': 2e8, 'frobnicate': True},
                           'activation_checkpointing': {'partition_activations': True},
                           'optimizer': {'type': 'Lamb'}})
        p = run(['check'] + WORK + ['--deepspeed-config', d])
        lines = [x for x in p.stderr.split('\n') if 'warning' in x]
        nm = [x for x in lines if 'not modelled' in x]
        uk = [x for x in lines if 'does not define' in x]
        ok(len(nm) == 1 and all(k in nm[0] for k in ('stage3_max_live_parameters', 'reduce_bucket_size 200000000',
                                                    'partition_activations', 'optimizer.type Lamb')),
           'what changes memory or time and is not modelled: one warning naming each (%s)' % (nm[0][:200] if nm else ''))
        ok(len(uk) == 1 and 'my_key' in uk[0] and 'zero_optimization.frobnicate' in uk[0],
           'keys DeepSpeed does not define: one warning naming each')

        # zero_optimization.overlap_comm, read with DeepSpeed's default (runtime/zero/config.py
        # overlap_comm_valid: on for stage 3 only)
        for stage, ov, extra, what in [(2, None, ['--no-overlap'], 'stage 2 without overlap_comm: DeepSpeed\'s '
                                        'default, no overlap (--no-overlap)'),
                                       (3, None, [], 'stage 3 without overlap_comm: overlapped'),
                                       (1, True, [], 'stage 1 with overlap_comm true: overlapped'),
                                       (3, False, ['--no-overlap'], 'stage 3 with overlap_comm false: --no-overlap')]:
            z = {'stage': stage} | ({} if ov is None else {'overlap_comm': ov})
            f = cfg('ov%d%s.json' % (stage, ov), {'bf16': {'enabled': True}, 'train_micro_batch_size_per_gpu': 1,
                                                  'zero_optimization': z})
            got, p = answer(['--deepspeed-config', f])
            want, _ = answer(['--framework', 'deepspeed', '--zero', str(stage), '--mbs', '1', '--precision', 'bf16'] +
                             extra)
            ok(got is not None and got == want, '%s: the answer of the flags it stands for' % what)
        for name, raw, pat, what in [
                ('e1.json', '{"zero_optimization": {"stage": 5}, "bf16": {"enabled": true}}', 'e1.json:1:',
                 'a stage of 5: file:line:col'),
                ('e2.json', '{"zero_optimization": {"stage": 2}}', 'fp32', 'neither bf16 nor fp16: refused (fp32)'),
                ('e3.json', '{"bf16": {"enabled": true}, "zero_optimization": {"stage": 2, '
                            '"offload_param": {"device": "cpu"}}}', 'stage 3', 'offload_param below stage 3'),
                ('e4.json', '{"bf16": {"enabled": true}, "train_micro_batch_size_per_gpu": 1.5}', 'integer',
                 'a fractional micro-batch'),
                ('e5.json', '[1, 2]', 'e5.json:1:1', 'not an object: file:line:col'),
                ('e6.json', '{"bf16": {"enabled": true}, "zero_optimization": {"stage": 2, "overlap_comm": "yes"}}',
                 'e6.json:1:', 'overlap_comm "yes": file:line:col')]:
            path = cfg(name, None, raw)
            p = run(['check'] + WORK + ['--deepspeed-config', path])
            ok(p.returncode == 2 and pat in p.stderr and len(p.stderr.strip().split('\n')) == 1,
               '%s: exit 2, one line (%s)' % (what, p.stderr.strip()[:160]))
        p = run(['check'] + WORK + ['--deepspeed-config', a, '--framework', 'fsdp'])
        ok(p.returncode == 2 and '--framework deepspeed' in p.stderr, 'with --framework fsdp: refused')
        p = run(['plan'] + WORK + ['--deepspeed-config', a, '--json', '-q'])
        ok(p.returncode == 0, 'plan takes it too (the ZeRO stage, offload and micro-batch fixed)')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return done()


if __name__ == '__main__':
    sys.exit(main())
