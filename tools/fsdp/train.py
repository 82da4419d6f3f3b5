#!/usr/bin/env python3
"""A small torchtitan-style Llama trained with PyTorch FSDP2, to measure memory and step time.

This is the measurement side of parplan's FSDP model validation: it builds the model the way
torchtitan's llama3 does (torchtitan/models/llama3/model/model.py), shards it the way torchtitan's
apply_fsdp does (torchtitan/models/llama3/infra/parallelize.py), trains a few steps on random
tokens, and prints one line

    FSDP_RESULT {json}

on rank 0 with the configuration, per-step times and the CUDA caching allocator's figures.
Launch it with torchrun, one process per GPU:

    torchrun --standalone --nproc_per_node 1 tools/fsdp/train.py --flavor 3B --mbs 1 --seq 8192

CPU smoke test (gloo, tiny model, two processes):

    torchrun --standalone --nproc_per_node 2 tools/fsdp/train.py --device cpu --flavor tiny

A CUDA out-of-memory error is a result, not a failure: the rank that hits it prints its
FSDP_RESULT line with "oom": true and the step (0 = set-up) and exits with status 0.
"""
import argparse
import contextlib
import datetime
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput,
                                               RowwiseParallel, SequenceParallel, loss_parallel,
                                               parallelize_module)
from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import alloc_history  # noqa: E402 (tools/alloc_history.py: the allocator history's replay)

try:  # public path since PyTorch 2.6
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
except ImportError:  # PyTorch 2.4-2.5 kept FSDP2 under _composable
    from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard

# Model shapes of torchtitan's llama3 flavors (torchtitan/models/llama3/__init__.py): "8B" is
# Llama-3-8B; "3B" is Llama-3.2-3B (as in parplan's catalog and tools/megatron/configs.csv), with
# the output layer untied like every torchtitan llama3 flavor. "tiny" is for CPU smoke tests.
FLAVORS = {
    "tiny": dict(dim=256, layers=2, heads=8, kv_heads=2, ffn=768, vocab=1024),
    "3B": dict(dim=3072, layers=28, heads=24, kv_heads=8, ffn=8192, vocab=128256),
    "8B": dict(dim=4096, layers=32, heads=32, kv_heads=8, ffn=14336, vocab=128256),
}
ROPE_THETA = 500000.0  # Llama 3 (torchtitan TransformerModelArgs.rope_theta for the flavors)
NORM_EPS = 1e-5
# The collective timeout: a rank whose peer died of OOM stops waiting after this instead of the
# default 10 minutes, so the driver's per-run budget is not spent on a hang. No collective in a
# healthy step of these models takes more than a few seconds.
COLLECTIVE_TIMEOUT = datetime.timedelta(seconds=90)


# ---------------------------------------------------------------------------------------------
# Model (mirrors torchtitan/models/llama3/model/model.py; RoPE scaling is left out: it only
# changes the frequency table, not the compute or the memory)


def rope_table(head_dim, seq, device=None):
    """Complex rotations e^{i t f} [seq, head_dim/2], as torchtitan's precompute_freqs_cis.

    Kept complex on purpose: FSDP2's MixedPrecisionPolicy casts floating-point forward inputs
    to bf16 (cast_forward_inputs), and a complex tensor is not floating point, so the table
    reaches every block in full precision as in torchtitan."""
    freqs = 1.0 / (ROPE_THETA ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    angles = torch.outer(torch.arange(seq, device=device).float(), freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rope(x, table):
    """Rotate x [b, s, heads, head_dim] in fp32 and return it in x's dtype (as torchtitan)."""
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    out = torch.view_as_real(xc * table[: x.shape[1]].view(1, x.shape[1], 1, -1)).flatten(3)
    return out.type_as(x)


def repeat_kv(x, n_rep):
    """[b, s, kv, d] -> [b, s, kv * n_rep, d], materialised as torchtitan's repeat_kv does, so
    SDPA (and the activation memory it saves) sees full-width K and V."""
    if n_rep == 1:
        return x
    b, s, kv, d = x.shape
    return x.unsqueeze(3).expand(b, s, kv, n_rep, d).reshape(b, s, kv * n_rep, d)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = c["heads"], c["kv_heads"], c["head_dim"]
        # --enable-gqa: torchtitan's model code since ff0829c10 (2026-01-27, "GQA without kv
        # repeats", in v0.2.2): K and V go to SDPA at their own heads with enable_gqa, not repeated
        self.enable_gqa = c.get("enable_gqa", False) and self.heads > self.kv_heads
        self.wq = nn.Linear(c["dim"], self.heads * self.head_dim, bias=False)
        self.wk = nn.Linear(c["dim"], self.kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(c["dim"], self.kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(self.heads * self.head_dim, c["dim"], bias=False)
        self.inner_attention = InnerAttention()

    def forward(self, x, table):
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, -1, self.head_dim)
        k = self.wk(x).view(b, s, -1, self.head_dim)
        v = self.wv(x).view(b, s, -1, self.head_dim)
        q, k = apply_rope(q, table), apply_rope(k, table)
        if self.enable_gqa:  # torchtitan v0.2.2 llama3 Attention.forward, attn_type "sdpa"
            out = self.inner_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), enable_gqa=True)
            return self.wo(out.transpose(1, 2).contiguous().view(b, s, -1))
        n_rep = self.heads // self.kv_heads
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
        out = self.inner_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        return self.wo(out.transpose(1, 2).contiguous().view(b, s, -1))


class InnerAttention(nn.Module):
    """SDPA as a module, as torchtitan's ScaledDotProductAttentionWrapper
    (torchtitan/models/attention.py, v0.2.2), so that context parallelism can wrap it (apply_cp)."""

    def forward(self, q, k, v, enable_gqa=False):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=enable_gqa)


class FeedForward(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.w1 = nn.Linear(c["dim"], c["ffn"], bias=False)  # gate
        self.w3 = nn.Linear(c["dim"], c["ffn"], bias=False)  # up
        self.w2 = nn.Linear(c["ffn"], c["dim"], bias=False)  # down

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention_norm = nn.RMSNorm(c["dim"], eps=NORM_EPS)
        self.attention = Attention(c)
        self.ffn_norm = nn.RMSNorm(c["dim"], eps=NORM_EPS)
        self.feed_forward = FeedForward(c)
        # torchtitan's default (depth_init=True) shrinks the output projections with depth.
        self.out_std = 0.02 / (2 * (c["layer_id"] + 1)) ** 0.5

    def forward(self, x, table):
        h = x + self.attention(self.attention_norm(x), table)
        return h + self.feed_forward(self.ffn_norm(h))

    def init_weights(self):
        # torchtitan's Attention/FeedForward.init_weights: 0.02 for the input projections,
        # the depth-scaled std for the rest.
        for lin in (self.attention.wq, self.attention.wk, self.attention.wv, self.feed_forward.w1):
            nn.init.trunc_normal_(lin.weight, mean=0.0, std=0.02)
        for lin in (self.attention.wo, self.feed_forward.w2, self.feed_forward.w3):
            nn.init.trunc_normal_(lin.weight, mean=0.0, std=self.out_std)
        self.attention_norm.reset_parameters()
        self.ffn_norm.reset_parameters()


class Transformer(nn.Module):
    def __init__(self, c, seq):
        super().__init__()
        self.c, self.seq = c, seq
        self.tok_embeddings = nn.Embedding(c["vocab"], c["dim"])
        self.layers = nn.ModuleDict({str(i): Block(dict(c, layer_id=i)) for i in range(c["layers"])})
        self.norm = nn.RMSNorm(c["dim"], eps=NORM_EPS)
        self.output = nn.Linear(c["dim"], c["vocab"], bias=False)
        self.register_buffer("rope", rope_table(c["head_dim"], seq), persistent=False)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        for block in self.layers.values():
            h = block(h, self.rope)
        return self.output(self.norm(h))

    @torch.no_grad()
    def init_weights(self):
        """Called after to_empty(): the model is built on the meta device (torchtitan's
        flow), so nothing full-size is ever materialised before sharding."""
        self.rope = rope_table(self.c["head_dim"], self.seq, device=self.output.weight.device)
        nn.init.normal_(self.tok_embeddings.weight)
        for block in self.layers.values():
            block.init_weights()  # CheckpointWrapper forwards attribute look-ups to the block
        self.norm.reset_parameters()
        std = self.c["dim"] ** -0.5
        nn.init.trunc_normal_(self.output.weight, mean=0.0, std=std, a=-3 * std, b=3 * std)


def model_dims(args):
    c = dict(FLAVORS[args.flavor])
    for key in ("dim", "layers", "heads", "kv_heads", "ffn", "vocab"):
        if getattr(args, key) is not None:
            c[key] = getattr(args, key)
    if c["dim"] % c["heads"] or c["heads"] % c["kv_heads"]:
        sys.exit("train.py: dim must be a multiple of heads, and heads of kv_heads")
    c["head_dim"] = c["dim"] // c["heads"]
    c["enable_gqa"] = args.enable_gqa
    return c


def param_counts(c):
    """Analytic counts, checked against the built model in main()."""
    d, hd = c["dim"], c["head_dim"]
    attn = d * c["heads"] * hd * 2 + d * c["kv_heads"] * hd * 2
    block = attn + 3 * d * c["ffn"] + 2 * d
    emb = c["vocab"] * d
    return {"total": emb + c["layers"] * block + d + emb, "embedding": emb, "output": emb,
            "per_block": block}


# ---------------------------------------------------------------------------------------------
# Activation checkpointing (torchtitan/distributed/activation_checkpoint.py: apply_ac)

# Outputs op-level selective AC keeps instead of recomputing: torchtitan's _op_sac_save_list
# (torchtitan/models/llama3/infra/parallelize.py) restricted to the ops this model can run,
# plus the CPU flash kernel so the smoke test exercises the same decisions.
_SAC_SAVE_NAMES = (
    "mm",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_flash_attention_for_cpu",
    "max",  # torchtitan keeps it for float8 scaling; harmless here
)
SAC_SAVE = {getattr(torch.ops.aten, n).default for n in _SAC_SAVE_NAMES}


def selective_ac_context():
    """One checkpoint region (one block): save matmul and attention outputs except every second
    mm, recompute everything else (norms, RoPE, SiLU, products). The mm count is kept separately
    for the forward and for the recomputation, so both walk the same sequence of decisions; in
    a Llama block the saved mm outputs are wq, wv, w1 and w2 (wk, wo, w3 are recomputed).
    Same rule as torchtitan's _apply_op_sac (its mm_count policy)."""
    mm = torch.ops.aten.mm.default
    count = {"forward": 0, "recompute": 0}

    def policy(ctx, func, *args, **kwargs):
        if func == mm:
            mode = "recompute" if ctx.is_recompute else "forward"
            count[mode] += 1
            if count[mode] % 2 == 0:
                return CheckpointPolicy.PREFER_RECOMPUTE
        return CheckpointPolicy.MUST_SAVE if func in SAC_SAVE else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


def apply_ac(model, mode):
    """Wrap every block (non-reentrant checkpoint, the checkpoint_wrapper default).
    preserve_rng_state=False as torchtitan's default: the model has no dropout, so there is no
    random state to replay."""
    if mode == "none":
        return
    for name, block in list(model.layers.items()):
        if mode == "full":
            wrapped = checkpoint_wrapper(block, preserve_rng_state=False)
        else:
            wrapped = checkpoint_wrapper(block, context_fn=selective_ac_context,
                                         preserve_rng_state=False)
        model.layers[name] = wrapped


def apply_float8(model, recipe, shard_ranks, emulate=False):
    """torchtitan's Float8LinearConverter (torchtitan/components/quantization/float8.py, v0.2.2) on the
    model built on the meta device, before TP, AC, compile and FSDP: every linear but the output layer
    (its llama3 train configs' filter_fqns = ["output"]) swapped for torchao's Float8Linear. tensorwise:
    Float8LinearConfig(enable_fsdp_float8_all_gather=...) with the float8 all-gather wherever the
    parameters are sharded and the scales precomputed after each optimizer step (its docs/float8.md
    setup: enable_fsdp_float8_all_gather, precompute_float8_dynamic_scale_for_fsdp); rowwise: the
    recipe by name, Inductor's emulate_precision_casts on. emulate: torchao's emulation (a bf16 matmul
    of the dequantized casts), for a device whose _scaled_mm cannot run the recipe (the CPU's takes
    tensorwise scales only). Returns whether to precompute the scales."""
    import dataclasses
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    if recipe == "tensorwise":
        cfg = Float8LinearConfig(enable_fsdp_float8_all_gather=shard_ranks > 1, emulate=emulate)
    else:
        cfg = dataclasses.replace(Float8LinearConfig.from_recipe_name(recipe), emulate=emulate)
        import torch._inductor.config
        torch._inductor.config.emulate_precision_casts = True
    convert_to_float8_training(model, config=cfg, module_filter_fn=lambda mod, fqn: fqn != "output")
    return recipe == "tensorwise" and shard_ranks > 1


def apply_compile(model):
    """torchtitan's apply_compile (torchtitan/models/llama3/infra/parallelize.py): each block,
    its activation-checkpoint wrapper included, compiled in place with fullgraph=True, after AC
    and before FSDP. Inductor fuses the elementwise ops, which changes what backward keeps."""
    for block in model.layers.values():
        block.compile(fullgraph=True)


# ---------------------------------------------------------------------------------------------
# Tensor parallel (torchtitan/models/llama3/infra/parallelize.py: apply_tp), before AC and FSDP


def apply_tp(model, tp_mesh, float8_tensorwise=False):
    """torchtitan's plan with sequence parallel and loss parallel (its defaults): the residual
    stream is split along the sequence between blocks (norms run on S/tp tokens), all-gathered
    into each attention and MLP, whose wq/wk/wv/w1/w3 are column- and wo/w2 row-parallel; the
    output layer is column-parallel and the loss is computed on vocabulary shards. With float8
    tensorwise the block's styles are torchao's float8 ones (torchtitan v0.2.2 apply_tp,
    enable_float8_tensorwise_tp): the sequence-sharded input cast to float8 before its all-gather."""
    col, row, prep = ColwiseParallel, RowwiseParallel, PrepareModuleInput
    if float8_tensorwise:
        from torchao.float8.float8_tensor_parallel import (Float8ColwiseParallel, Float8RowwiseParallel,
                                                           PrepareFloat8ModuleInput)
        col, row, prep = Float8ColwiseParallel, Float8RowwiseParallel, PrepareFloat8ModuleInput
    parallelize_module(model, tp_mesh, {
        "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
        "norm": SequenceParallel(),
        "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1),
                                  use_local_output=False),
    })
    for block in model.layers.values():
        parallelize_module(block, tp_mesh, {
            "attention_norm": SequenceParallel(),
            "attention": prep(input_layouts=(Shard(1), None), desired_input_layouts=(Replicate(), None)),
            "attention.wq": col(),
            "attention.wk": col(),
            "attention.wv": col(),
            "attention.wo": row(output_layouts=Shard(1)),
            "ffn_norm": SequenceParallel(),
            "feed_forward": prep(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
            "feed_forward.w1": col(),
            "feed_forward.w2": row(output_layouts=Shard(1)),
            "feed_forward.w3": col(),
        })


# ---------------------------------------------------------------------------------------------
# Context parallel (torchtitan v0.2.2 torchtitan/distributed/context_parallel.py:
# apply_cp_to_attention_module, prepare_context_parallel_input), before AC, compile and FSDP


def apply_cp(model, cp_mesh):
    """Wrap every block's SDPA module in PyTorch's context-parallel style: its q, k, v become
    DTensors sharded along the sequence, and the DTensor dispatcher runs SDPA as the ring attention
    of torch/distributed/tensor/experimental/_context_parallel/_attention.py (K and V all-gathered
    once a pass, load-balanced causal steps merged in fp32 by their log-sum-exp, the key and value
    gradients passed round the ring in fp32)."""
    from torch.distributed.tensor.experimental._attention import (_ContextParallel,
                                                                  _enable_context_parallel_dispatcher)
    _enable_context_parallel_dispatcher()
    plan = _ContextParallel(seq_dim=2, attention_type=_ContextParallel.AttentionType.SDPA)
    for block in model.layers.values():
        parallelize_module(block.attention.inner_attention, cp_mesh, plan)


def cp_shard(cp_mesh, seq, buffers, seq_dims):
    """The rank's part of each buffer along its sequence dimension, head-tail load-balanced
    (each rank holds chunk r and chunk 2 cp - 1 - r of 2 cp), as torchtitan's cp_shard."""
    from torch.distributed.tensor.experimental._attention import (_context_parallel_shard,
                                                                  _HeadTailLoadBalancer)
    balancer = _HeadTailLoadBalancer(seq, cp_mesh.size(), cp_mesh.device_type)
    return _context_parallel_shard(cp_mesh, buffers, seq_dims, load_balancer=balancer)


# ---------------------------------------------------------------------------------------------
# FSDP2 (torchtitan/models/llama3/infra/parallelize.py: apply_fsdp)


def apply_fsdp(model, mesh, reshard_after_forward):
    """Shard the embedding, every block, the final norm + output together, then the root.

    reshard_after_forward=True is torchtitan's "default" policy without pipelining (ZeRO-3-like:
    each unit's bf16 parameters are freed after its forward and all-gathered again in backward),
    except that norm + output are never resharded, since backward needs them at once;
    False is its "never" policy (ZeRO-2-like: unsharded bf16 parameters live from forward to
    backward). Parameters stay fp32 and sharded; compute is bf16, gradients reduce in fp32."""
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    fully_shard(model.tok_embeddings, mesh=mesh, mp_policy=mp,
                reshard_after_forward=reshard_after_forward)
    for block in model.layers.values():
        fully_shard(block, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard_after_forward)
    fully_shard([model.norm, model.output], mesh=mesh, mp_policy=mp, reshard_after_forward=False)
    fully_shard(model, mesh=mesh, mp_policy=mp)


# ---------------------------------------------------------------------------------------------
# Measurement


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--name", default="", help="run name copied into the result")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--flavor", choices=sorted(FLAVORS), default="tiny")
    for key in ("dim", "layers", "heads", "kv_heads", "ffn", "vocab"):
        p.add_argument("--" + key.replace("_", "-"), type=int, help="override the flavor's " + key)
    p.add_argument("--mbs", type=int, default=1, help="local micro-batch per rank")
    p.add_argument("--seq", type=int, default=8192)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2, help="untimed first steps")
    p.add_argument("--ac", choices=("none", "full", "selective"), default="none")
    p.add_argument("--reshard-after-forward", choices=("true", "false"), default="true")
    p.add_argument("--tp", type=int, default=1,
                   help="tensor parallel (inner mesh dim, torchtitan's apply_tp); FSDP shards over "
                        "world / tp")
    p.add_argument("--cp", type=int, default=1,
                   help="context-parallel ranks: the sequence split over them (ring attention), the "
                        "parameters sharded over data-parallel x cp ranks as torchtitan's dp_shard_cp")
    p.add_argument("--replicate", type=int, default=1,
                   help="HSDP: replicas (outer mesh dim); shards = world / replicate")
    # torchtitan's default optimizer implementation is "fused" (torchtitan/config/job_config.py,
    # Optimizer.implementation).
    p.add_argument("--optimizer-impl", choices=("fused", "foreach"), default="fused")
    p.add_argument("--sdpa-backend", choices=("flash", "cudnn"), default="flash",
                   help="the one SDPA kernel allowed (cudnn: what torchtitan 0.2.x puts first)")
    p.add_argument("--clip", type=float, default=None, help="clip the grad norm to this value")
    p.add_argument("--float8", choices=("none", "tensorwise", "rowwise"), default="none",
                   help="torchao float8 training of the block linears as torchtitan's float8 converter applies it "
                        "(tensorwise: the FSDP float8 all-gather and precomputed scales; needs torchao)")
    p.add_argument("--enable-gqa", action="store_true",
                   help="K and V to SDPA at their own heads with enable_gqa (torchtitan v0.2.2 on), "
                        "not repeated to the query heads (torchtitan up to v0.2.1)")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile each block, its AC wrapper included, before FSDP "
                        "(torchtitan's apply_compile, fullgraph=True)")
    p.add_argument("--accum", type=int, default=1,
                   help="micro-batches per step (gradient accumulation; FSDP2 reduce-scatters "
                        "after each, as torchtitan does)")
    p.add_argument("--loss", choices=("upcast", "bf16"), default="upcast",
                   help="cross-entropy on logits.float() (torchtitan) or on the bf16 logits "
                        "(KempnerForge, NeMo AutoModel): parplan's --loss")
    p.add_argument("--compile-loss", action="store_true",
                   help="torch.compile the loss function, as torchtitan does with its model since 2025-02 "
                        "(build_cross_entropy_loss; compile.components defaults to [model, loss])")
    p.add_argument("--keep-logits", action="store_true",
                   help="keep the reference to the logits through the backward, as KempnerForge's "
                        "and NeMo AutoModel's loops do (torchtitan deletes it): parplan's --keep-logits")
    p.add_argument("--profile", action="store_true",
                   help="after the timed steps, one more step under torch.profiler (CUDA activity "
                        "only): the GPU's busy time and its kernels by category into the result "
                        "(rank 0), not counted in the median")
    p.add_argument("--memory-history", metavar="FILE", default=None,
                   help="rank 0 records the caching allocator's history (Python frames) from the "
                        "start and writes FILE: the allocated and reserved maxima, what was live and "
                        "what lay free in each stream's segments at the reserved maximum, and which "
                        "allocations grew the segments, by the line that made them (memory_history); "
                        "{name} in FILE becomes the run's --name")
    p.add_argument("--simulate-oom-at-step", type=int, default=None,
                   help="test knob: raise torch.OutOfMemoryError after that step's forward")
    args = p.parse_args(argv)
    if args.accum < 1:
        p.error("--accum must be at least 1")
    if args.steps <= args.warmup:
        p.error("--steps must exceed --warmup")
    if args.cp < 1 or args.seq % (2 * args.cp):
        p.error("--cp must be at least 1 and 2 x cp must divide --seq (head-tail chunks)")
    return args


class Memory:
    """CUDA caching-allocator figures; all None on CPU."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"
        self.device = device

    def stats(self):
        if not self.cuda:
            return {"allocated": None, "reserved": None, "max_allocated": None,
                    "max_reserved": None, "device_used": None, "alloc_retries": None}
        free, total = torch.cuda.mem_get_info(self.device)
        s = torch.cuda.memory_stats(self.device)
        return {"allocated": torch.cuda.memory_allocated(self.device),
                "reserved": torch.cuda.memory_reserved(self.device),
                "max_allocated": torch.cuda.max_memory_allocated(self.device),
                "max_reserved": torch.cuda.max_memory_reserved(self.device),
                "device_used": total - free,
                "alloc_retries": s.get("num_alloc_retries", 0)}

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize(self.device)


def describe(args, c, world, device):
    counts = param_counts(c)
    r = {
        "name": args.name, "flavor": args.flavor,
        **{k: c[k] for k in ("dim", "layers", "heads", "kv_heads", "head_dim", "ffn", "vocab")},
        "params_total": counts["total"], "params_embedding": counts["embedding"],
        "params_output": counts["output"], "params_per_block": counts["per_block"],
        "world_size": world, "replicate": args.replicate,
        "shard": world // args.replicate // args.tp, "tp": args.tp, "cp": args.cp,
        "mbs": args.mbs, "seq": args.seq,
        "global_batch": world // args.tp // args.cp * args.mbs * args.accum,
        "ac": args.ac, "reshard_after_forward": args.reshard_after_forward == "true",
        "compile": args.compile, "compile_loss": args.compile_loss, "enable_gqa": args.enable_gqa,
        "float8": args.float8, "accum": args.accum, "loss_kind": args.loss,
        "keep_logits": args.keep_logits,
        "optimizer": "AdamW", "optimizer_impl": args.optimizer_impl,
        "lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.1, "clip": args.clip,
        "master_dtype": "float32", "param_dtype": "bfloat16", "reduce_dtype": "float32",
        "loss_dtype": "float32",
        "sdpa_backend": args.sdpa_backend if device.type == "cuda" else "cpu-default",
        "steps": args.steps, "warmup": args.warmup,
        "device": device.type, "torch": torch.__version__,
        "cuda": torch.version.cuda, "gpu_name": None, "gpu_total_bytes": None,
    }
    if device.type == "cuda":
        prop = torch.cuda.get_device_properties(device)
        r["gpu_name"], r["gpu_total_bytes"] = prop.name, prop.total_memory
        r["gpu_sms"] = prop.multi_processor_count
        v = torch.cuda.nccl.version()
        r["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    r["alloc_conf"] = (os.environ.get("PYTORCH_ALLOC_CONF")
                       or os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))
    # torchtitan's MFU convention (get_dense_model_nparams_and_flops): 6 x non-embedding params
    # + 12 L H Q T for attention, causal sparsity not discounted.
    r["model_flops_per_token"] = (6 * (counts["total"] - counts["embedding"])
                                  + 12 * c["layers"] * c["heads"] * c["head_dim"] * args.seq)
    return r


# Kernel categories of the profiled step, by name (first match wins).
PROFILE_CATEGORIES = (
    ("nccl", ("nccl",)),
    ("attention", ("flash", "fmha", "attention")),
    ("optimizer", ("adam", "multi_tensor")),
    ("gemm", ("gemm", "nvjet", "sm90_xmma", "cutlass", "cublas")),
    ("copy", ("memcpy", "memset", "copy", "cat", "split")),
)


def profile_summary(prof, wall_ms):
    """The GPU's side of one profiled step: its busy time (the union of every kernel's and
    copy's interval, the NCCL stream included, and without NCCL), the kernels' summed time by
    category, and the longest kernels. Wall time minus busy time is when the GPU waited."""
    spans, compute, cats, top = [], [], {}, {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        a, b = e.time_range.start, e.time_range.end
        if b <= a:
            continue
        name = e.name.lower()
        cat = next((k for k, keys in PROFILE_CATEGORIES if any(x in name for x in keys)), "other")
        spans.append((a, b))
        if cat != "nccl":
            compute.append((a, b))
        cats[cat] = cats.get(cat, 0.0) + (b - a)
        n, t = top.get(e.name[:100], (0, 0.0))
        top[e.name[:100]] = (n + 1, t + (b - a))

    def union_us(iv):
        iv.sort()
        total, end = 0.0, None
        for a, b in iv:
            if end is None or a > end:
                total += b - a
                end = b
            elif b > end:
                total += b - end
                end = b
        return total

    return {
        "wall_ms": round(wall_ms, 3),
        "busy_ms": round(union_us(spans) / 1e3, 3),
        "compute_busy_ms": round(union_us(compute) / 1e3, 3),
        "kernel_ms_by_category": {k: round(v / 1e3, 3) for k, v in sorted(cats.items())},
        "kernels": sum(n for n, _ in top.values()),
        "top": [[k, n, round(t / 1e3, 3)] for k, (n, t) in
                sorted(top.items(), key=lambda kv: -kv[1][1])[:25]],
    }


def cross_entropy_upcast(pred, labels):
    """torchtitan's cross_entropy_loss (torchtitan/components/loss.py): the loss on logits.float()."""
    return F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))


def cross_entropy_bf16(pred, labels):
    """The loss on the bf16 logits (--loss bf16)."""
    return F.cross_entropy(pred.flatten(0, 1), labels.flatten(0, 1))


def step_mark(device):
    """A 512-byte allocation at each step's start: memory_history finds the steps by it."""
    return torch.empty(128, device=device)


def _where(frames):
    """The innermost frame in this file, else the innermost frame of PyTorch's or inductor's code."""
    for fr in frames:
        if fr.get("filename", "").endswith("tools/fsdp/train.py"):
            return "train.py:%d %s" % (fr["line"], fr["name"])
    for fr in frames:
        f = fr.get("filename", "")
        if "/torch/" in f or "torchinductor" in f:
            return "%s:%d %s" % (f.split("/torch/")[-1].split("/")[-1] if "torchinductor" in f
                                 else f.split("/torch/")[-1], fr["line"], fr["name"])
    return "?"


def memory_history(device):
    """Replay the allocator's trace (torch.cuda.memory._snapshot()["device_traces"]; the replay is
    tools/alloc_history.py's): allocated and reserved memory, per stream. Reports the maxima, the
    state at each, and every growth of the reserved memory with the allocation that caused it."""
    snap = torch.cuda.memory._snapshot()
    ev = snap["device_traces"][device.index] if snap["device_traces"] else []
    r = alloc_history.replay(ev, is_mark=lambda fr: any(f.get("name") == "step_mark" for f in fr))
    max_alloc, max_res, marks = r["max_alloc"], r["max_res"], r["marks"]
    growth = [dict(g, by=_where(g.pop("frames"))) for g in r["growth"]]
    # the state at the reserved maximum: live blocks by stream and by the line that made them
    live, res2 = alloc_history.live_at(ev, max_res[1], _where)
    by_stream = {}
    for size, st, _, _ in live.values():
        by_stream[st] = by_stream.get(st, 0) + size
    by_where = alloc_history.group(live.values(), lambda b: b[2])
    grouped = {}
    for g in growth:
        k = (g["by"], g["stream"])
        x = grouped.setdefault(k, {"by": g["by"], "stream": g["stream"], "bytes": 0, "times": 0,
                                   "first_step": g["step"], "last_step": g["step"]})
        x["bytes"] += g["bytes"]
        x["times"] += 1
        x["last_step"] = g["step"]
    return {
        "events": len(ev), "step_marks": marks,
        "max_allocated_bytes": max_alloc[0], "max_allocated_event": max_alloc[1],
        "reserved_at_max_allocated_bytes": max_alloc[2],
        "max_reserved_bytes": max_res[0], "max_reserved_event": max_res[1],
        "allocated_at_max_reserved_bytes": max_res[2],
        "at_max_reserved_by_stream": [{"stream": st, "reserved": r, "allocated": by_stream.get(st, 0),
                                       "free": r - by_stream.get(st, 0)} for st, r in sorted(res2.items())],
        "at_max_reserved_live_by_line": [{"where": k, "bytes": v[0], "blocks": v[1]} for k, v in
                                         sorted(by_where.items(), key=lambda kv: -kv[1][0])[:30]],
        "growth_by_line": sorted(grouped.values(), key=lambda x: -x["bytes"])[:40],
        "growth_after_step1": [{k: g[k] for k in ("event", "bytes", "stream", "by", "alloc_bytes", "allocated", "step")}
                               for g in growth if g["step"] >= 2][:60],
    }


def emit(result):
    print("FSDP_RESULT " + json.dumps(result, sort_keys=True), flush=True)


def main(argv=None):
    args = parse_args(argv)
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if world % args.replicate:
        sys.exit(f"train.py: --replicate {args.replicate} does not divide world size {world}")
    if world % args.tp or (args.tp > 1 and args.replicate > 1):
        sys.exit(f"train.py: --tp {args.tp} must divide world size {world} (and not with HSDP)")
    if world % args.cp or (args.cp > 1 and (args.tp > 1 or args.replicate > 1)):
        sys.exit(f"train.py: --cp {args.cp} must divide world size {world} (and not with TP or HSDP)")
    if args.device == "cuda":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        # Pin one attention kernel (flash unless --sdpa-backend cudnn), so every run uses the same kernel, and so a shape it cannot take
        # fails loudly instead of falling back to the math kernel, whose S x S scores would
        # change the memory being measured. (torchtitan's SDPA wrapper puts cuDNN attention
        # first when it is available; flash and cuDNN both keep only O(S) per head.)
        torch.backends.cuda.enable_flash_sdp(args.sdpa_backend == "flash")
        torch.backends.cuda.enable_mem_efficient_sdp(False)
        torch.backends.cuda.enable_math_sdp(False)
        torch.backends.cuda.enable_cudnn_sdp(args.sdpa_backend == "cudnn")
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", timeout=COLLECTIVE_TIMEOUT)
    tp_mesh = cp_mesh = None
    if args.cp > 1:
        # torchtitan's mesh: FSDP shards over data-parallel x cp ranks (dp_shard_cp), the ring
        # runs over the cp ranks (consecutive ranks, the inner dimension)
        mesh2 = init_device_mesh(device.type, (world // args.cp, args.cp), mesh_dim_names=("dp_shard", "cp"))
        mesh, cp_mesh = mesh2[("dp_shard", "cp")]._flatten("dp_shard_cp"), mesh2["cp"]
    elif args.tp > 1:
        mesh2 = init_device_mesh(device.type, (world // args.tp, args.tp),
                                 mesh_dim_names=("dp_shard", "tp"))
        mesh, tp_mesh = mesh2["dp_shard"], mesh2["tp"]
    elif args.replicate > 1:
        mesh = init_device_mesh(device.type, (args.replicate, world // args.replicate),
                                mesh_dim_names=("dp_replicate", "dp_shard"))
    else:
        mesh = init_device_mesh(device.type, (world,), mesh_dim_names=("dp_shard",))

    if args.memory_history and rank == 0 and device.type == "cuda":
        torch.cuda.memory._record_memory_history(max_entries=3_000_000, stacks="python")
    c = model_dims(args)
    result = describe(args, c, world, device)
    result["rank"] = rank
    mem = Memory(device)
    step, step_ms, losses, peaks = 0, [], [], []
    after1 = None
    t_start = time.perf_counter()
    try:
        torch.manual_seed(0)
        with torch.device("meta"):
            model = Transformer(c, args.seq)
        precompute = False
        if args.float8 != "none":
            precompute = apply_float8(model, args.float8, world // args.tp // args.replicate,
                                      emulate=device.type == "cpu")
        if tp_mesh is not None:
            apply_tp(model, tp_mesh, float8_tensorwise=args.float8 == "tensorwise")
        if cp_mesh is not None:
            apply_cp(model, cp_mesh)
        apply_ac(model, args.ac)
        if args.compile:
            apply_compile(model)
        apply_fsdp(model, mesh, args.reshard_after_forward == "true")
        model.to_empty(device=device)
        model.init_weights()
        built = sum(p.numel() for p in model.parameters())  # DTensor numel is the global size
        if built != result["params_total"]:
            raise AssertionError(f"built {built} parameters, expected {result['params_total']}")
        result["params_local"] = sum(p.to_local().numel() for p in model.parameters())
        if cp_mesh is not None:
            # the rank's rotations, in the order of its tokens (torchtitan shards the positions)
            model.rope = cp_shard(cp_mesh, args.seq, [model.rope], [0])[0]
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8,
                                      weight_decay=0.1, fused=args.optimizer_impl == "fused",
                                      foreach=args.optimizer_impl == "foreach")
        mem.sync()
        result["setup_s"] = round(time.perf_counter() - t_start, 3)
        result["allocated_after_setup_bytes"] = mem.stats()["allocated"]
        # a different batch per data-parallel rank; the TP (CP) ranks of one group share theirs
        gen = torch.Generator(device=device).manual_seed(1234 + rank // args.tp // args.cp)
        loss_ctx = loss_parallel if tp_mesh is not None else contextlib.nullcontext
        loss_fn = cross_entropy_upcast if args.loss == "upcast" else cross_entropy_bf16
        if args.compile_loss:
            loss_fn = torch.compile(loss_fn)

        prof = None
        for step in range(1, args.steps + 1 + (1 if args.profile else 0)):
            mem.sync()
            if step > args.steps:
                prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
                prof.start()
            t0 = time.perf_counter()
            # torchtitan's train_step order: zero_grad first, so a step's gradients stay
            # allocated until the next step begins (and are part of allocated_after_step1).
            _mark = step_mark(device) if args.memory_history else None  # noqa: F841 (memory_history's steps)
            optimizer.zero_grad(set_to_none=True)
            for _ in range(args.accum):
                tokens = torch.randint(0, c["vocab"], (args.mbs, args.seq + 1), generator=gen,
                                       device=device)
                inputs, labels = tokens[:, :-1], tokens[:, 1:]
                if cp_mesh is not None:
                    inputs, labels = cp_shard(cp_mesh, args.seq, [inputs.contiguous(), labels.contiguous()], [1, 1])
                with loss_ctx():
                    logits = model(inputs)
                    loss = loss_fn(logits, labels)
                    # torchtitan frees the bf16 logits before backward ("need to free pred
                    # before bwd to avoid peaking memory", torchtitan/train.py
                    # forward_backward_step); KempnerForge's loop keeps `logits` until the next
                    # micro-batch's forward returns (--keep-logits). The loss of each micro-batch
                    # is scaled by the accumulation steps, as its gradient accumulation does.
                    if not args.keep_logits:
                        del logits
                    if args.simulate_oom_at_step == step:
                        raise torch.OutOfMemoryError(f"simulated out-of-memory at step {step}")
                    (loss / args.accum).backward()
            if hasattr(loss, "full_tensor"):
                loss = loss.full_tensor()
            if args.clip is not None:
                nn.utils.clip_grad_norm_(model.parameters(), args.clip, foreach=True)
            optimizer.step()
            if precompute:  # torchtitan's post-optimizer hook of the float8 converter
                from torchao.float8 import precompute_float8_dynamic_scale_for_fsdp
                precompute_float8_dynamic_scale_for_fsdp(model)
            losses.append(loss.item())  # also a host sync
            mem.sync()
            if prof is not None:
                wall_ms = (time.perf_counter() - t0) * 1e3
                prof.stop()
                try:
                    result["profile"] = profile_summary(prof, wall_ms)
                except Exception as e:  # a profiler API change must not lose the run
                    result["profile"] = {"wall_ms": round(wall_ms, 3), "error": repr(e)[:300]}
                break
            step_ms.append(round((time.perf_counter() - t0) * 1e3, 3))
            s = mem.stats()
            peaks.append(s["max_allocated"])
            if step == 1:
                after1 = s
            result["device_used_max_bytes"] = max(result.get("device_used_max_bytes") or 0,
                                                  s["device_used"] or 0) or None
            if rank == 0:
                gib = f"{s['max_allocated'] / 2**30:.2f} GiB peak" if mem.cuda else ""
                print(f"step {step}: {step_ms[-1]:.1f} ms, loss {losses[-1]:.4f} {gib}", flush=True)
    except torch.OutOfMemoryError as e:
        # Report from whichever rank ran out; the others may be blocked in a collective and
        # are ended by the collective timeout or the driver's timeout.
        s = mem.stats()
        result.update(oom=True, oom_step=step, oom_message=str(e).strip().splitlines()[0][:300],
                      step_ms=step_ms, loss=[round(x, 5) for x in losses],
                      peak_allocated_after_step=peaks,
                      max_allocated_bytes=s["max_allocated"], max_reserved_bytes=s["max_reserved"],
                      allocated_after_step1_bytes=after1 and after1["allocated"],
                      alloc_retries=s["alloc_retries"],
                      wall_s=round(time.perf_counter() - t_start, 3))
        emit(result)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # skip destroy_process_group: a peer may never answer

    s = mem.stats()
    timed = step_ms[args.warmup:]
    median_ms = statistics.median(timed)
    tokens_per_step = world // args.tp // args.cp * args.mbs * args.accum * args.seq
    per_gpu = args.mbs * args.accum * args.seq / args.tp / args.cp
    result.update(
        oom=False, oom_step=None, step_ms=step_ms, step_ms_median=median_ms,
        tokens_per_s=round(tokens_per_step / (median_ms / 1e3), 1),
        tokens_per_s_per_gpu=round(per_gpu / (median_ms / 1e3), 1),
        model_tflops_per_gpu=round(result["model_flops_per_token"] * per_gpu / (median_ms / 1e3) / 1e12, 2),
        loss=[round(x, 5) for x in losses],
        max_allocated_bytes=s["max_allocated"], max_reserved_bytes=s["max_reserved"],
        allocated_after_step1_bytes=after1["allocated"],
        reserved_after_step1_bytes=after1["reserved"],
        peak_allocated_after_step=peaks, alloc_retries=s["alloc_retries"],
        wall_s=round(time.perf_counter() - t_start, 3),
    )
    # Every rank's figures, so uneven ranks are visible (all_gather_object works on gloo and
    # NCCL; it is the only collective here that is not FSDP's own).
    mine = {"rank": rank, "max_allocated_bytes": s["max_allocated"],
            "max_reserved_bytes": s["max_reserved"],
            "allocated_after_step1_bytes": after1["allocated"],
            "device_used_max_bytes": result.get("device_used_max_bytes"),
            "step_ms_median": median_ms}
    ranks = [None] * world
    dist.all_gather_object(ranks, mine)
    result["ranks"] = ranks
    if args.memory_history and rank == 0 and device.type == "cuda":
        try:
            with open(args.memory_history.replace("{name}", args.name), "w") as f:
                json.dump(memory_history(device), f, indent=1)
        except Exception as e:  # a diagnostic must not lose the run's result
            result["memory_history_error"] = repr(e)[:300]
    if rank == 0:
        emit(result)
    dist.destroy_process_group()
    # Leave without interpreter finalisation: with gloo (the CPU smoke test, PyTorch 2.11) a
    # process group still referenced by the device mesh can be torn down during finalisation
    # while its worker thread wants the GIL, which aborts the process ("terminate called
    # without an active exception") after a good run.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
