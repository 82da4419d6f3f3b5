"""check's notes about what the stack does to memory (stderr 'parplan: warning: ...'): each said where
it applies, once, and not where it does not. TAP."""
import sys

sys.path.insert(0, __import__('os').path.dirname(__file__))
from taplib import ok, run, done  # noqa: E402

QWEN = ['check', '--model', 'qwen3-30b-a3b', '--gpu', 'gb200', '--gpus', '8', '--gbs', '512', '--seq', '4096',
        '--ep', '8', '--mbs', '4', '--dist-opt', '--moe-grouped-gemm']
LLAMA = ['check', '--model', 'llama3-70b', '--gpu', 'gb200', '--gpus', '64', '--tp', '2', '--sp', '--pp', '4',
         '--vpp', '5', '--mbs', '1', '--gbs', '128', '--seq', '8192', '--dist-opt', '--precision', 'nvfp4',
         '--fp8-param-gather']


def notes(args):
    r = run(args)
    return r.returncode, [l for l in r.stderr.splitlines() if l.startswith('parplan: warning: ')]


rc, w = notes(QWEN + ['--moe-dispatcher', 'flex', '--moe-flex-backend', 'hybridep'])
ok(rc in (0, 1) and sum('HybridEP buffers: 0.57 GiB in the reserve' in l for l in w) == 1,
   'flex + hybridep: the HybridEP buffers named once with their size (%s)' % w)
rc, w = notes(QWEN + ['--moe-dispatcher', 'flex'])
ok(any("DeepEP buffers: 0.12 GiB" in l and '--moe-flex-backend hybridep' in l for l in w),
   'flex alone: DeepEP buffers, and how to say HybridEP (%s)' % w)
rc, w = notes(QWEN)
ok(not any('buffers' in l for l in w), 'alltoall: no flex note')
rc, w = notes(QWEN + ['--cuda-graphs', 'full_iteration'])
ok(sum('full-iteration CUDA graph' in l and 'private pool' in l for l in w) == 1,
   'full_iteration: the graph pool in the reserve, said once')
rc, w = notes(QWEN + ['--cuda-graphs', 'attn,moe_router,moe_preprocess'])
ok(any('per-layer CUDA graphs are priced for time only' in l for l in w) and
   not any('private pool' in l for l in w), 'per-layer graphs: priced for time only, said')
rc, w = notes(LLAMA + ['--tp-comm-overlap'])
ok(sum('--tp-comm-overlap with --precision nvfp4' in l for l in w) == 1,
   'nvfp4 with TP overlap: Megatron-Bridge runs it without, said once')
rc, w = notes(LLAMA)
ok(not any('nvfp4' in l for l in w), 'nvfp4 without TP overlap: no note')
L8 = ['check', '--model', 'llama3-8b', '--gpu', 'h100-sxm', '--gpus', '8', '--tp', '2', '--vocab', '50257']
rc, w = notes(L8 + ['--vocab-divisible-by', '1'])
ok(sum('vocabulary shard (25129 rows a rank) is not a multiple of 8' in l and '7.0x' in l for l in w) == 1,
   '50257 tokens padded to 50258 at tp 2: the odd shard and its slow GEMMs said once (%s)' % w)
rc, w = notes(L8)
ok(not any('vocabulary shard' in l for l in w), "Megatron's default padding (50432): no note")
MF = ['check', '--model', 'llama3-8b', '--gpu', 'h100-sxm', '--gpus', '8', '--megatron-fsdp']
rc, w = notes(MF + ['--zero', '3'])
ok(sum("holds 4 layers' gathered weights (1.63 GiB) and 1 gradient bucket (0.41 GiB)" in l for l in w) == 1,
   'Megatron-FSDP over dp 8: 1 + ceil(5e8 / 218M) = 4 layers gathered and one bucket, said once (%s)' % w)
rc, w = notes(MF + ['--zero', '3', '--fsdp-double-buffer'])
ok(any("double buffer holds 2 layers' weights and 2 layers' gradients, 1.63 GiB" in l for l in w),
   'the double buffer: 2 + 2 layers held for the run (%s)' % w)
rc, w = notes(['check', '--model', 'llama3-8b', '--gpu', 'h200', '--gpus', '1', '--gbs', '4', '--seq', '4096',
               '--megatron-fsdp', '--zero', '3'])
ok(any('one data-parallel rank gathers and reduce-scatters nothing' in l for l in w), 'Megatron-FSDP at dp 1: nothing')
rc, w = notes(MF[:-1] + ['--dist-opt'])
ok(not any('Megatron-FSDP' in l for l in w), 'the distributed optimizer: no Megatron-FSDP note')
sys.exit(done())
