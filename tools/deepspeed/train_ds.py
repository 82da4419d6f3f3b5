#!/usr/bin/env python3
"""One DeepSpeed ZeRO training run of a Hugging Face Llama (or Qwen3), as a Hugging Face user runs it, with its
memory and step time recorded (one JSON line appended to --out, rank 0).

The stack is the one users run, with its defaults:
  - transformers' LlamaForCausalLM built from a config (random weights), SDPA attention (transformers'
    default attn_implementation), its loss (loss_utils.ForCausalLMLoss: logits.float(), cross_entropy);
  - the model in fp32 as the Trainer hands it to DeepSpeed for ZeRO 1 and 2; under ZeRO 3 built inside
    deepspeed.zero.Init (HfDeepSpeedConfig, as from_config does with ZeRO 3 on), partitioned in bf16;
  - deepspeed.initialize with the config file as written (tools/deepspeed/configs/*.json: DeepSpeed's
    own defaults for every key not written; its "AdamW" optimizer is FusedAdam);
  - --ckpt: model.gradient_checkpointing_enable() (transformers' default kwargs: use_reentrant False).

Recorded per optimizer step: wall time (synchronised), torch.cuda.max_memory_allocated and
max_memory_reserved since the step began, the allocator's retries; after deepspeed.initialize the
allocated memory (the model states before Adam's state exists). The record also carries the run's
flags, so that tools/deepspeed/parse_runs.py can state it as `parplan check` flags.

  torchrun --nproc_per_node N tools/deepspeed/train_ds.py --config C.json [--shape S] --layers L --seq S --mbs B
           [--gas G] [--ckpt] [--steps K] --name NAME --out runs.jsonl
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist

# The shapes (--shape; --layers cuts them): Llama-3-8B (meta-llama/Meta-Llama-3-8B config.json) as
# transformers' LlamaForCausalLM, Qwen3-8B (Qwen/Qwen3-8B config.json: q_norm and k_norm) as its
# Qwen3ForCausalLM; parplan's catalog names them llama3-8b and qwen3-8b.
SHAPES = {
    "llama3-8b": ("LlamaConfig", "LlamaForCausalLM",
                  dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                       num_key_value_heads=8, max_position_embeddings=8192, rope_theta=500000.0,
                       rms_norm_eps=1e-5, tie_word_embeddings=False)),
    "qwen3-8b": ("Qwen3Config", "Qwen3ForCausalLM",
                 dict(vocab_size=151936, hidden_size=4096, intermediate_size=12288, num_attention_heads=32,
                      num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, rope_theta=1000000.0,
                      rms_norm_eps=1e-6, tie_word_embeddings=False)),
}


def _where(frames):
    """The first frame of the model, DeepSpeed or this script (file:line function), else torch's."""
    for key in ("/transformers/", "/deepspeed/", "train_ds.py"):
        for fr in frames:
            f = fr.get("filename", "")
            if key in f:
                return "%s:%d %s" % (f.split(key)[-1] if key != "train_ds.py" else "train_ds.py", fr["line"], fr["name"])
    for fr in frames:
        f = fr.get("filename", "")
        if "/torch/" in f:
            return "torch/%s:%d %s" % (f.split("/torch/")[-1], fr["line"], fr["name"])
    return "?"


def peak_live(snap, device):
    """What is allocated at the step's allocated maximum, by the line that allocated it (the replay
    is tools/alloc_history.py's)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import alloc_history
    ev = snap["device_traces"][device] if snap["device_traces"] else []
    r = alloc_history.replay(ev)
    mx = r["max_alloc"]
    live, _ = alloc_history.live_at(ev, mx[1], _where)
    by = alloc_history.group(live.values(), lambda b: b[2])
    return {"events": len(ev), "max_alloc_in_trace": mx[0], "at_event": mx[1],
            "live_by_line": [{"where": k, "bytes": v[0], "blocks": v[1]}
                             for k, v in sorted(by.items(), key=lambda kv: -kv[1][0])[:40]]}


def kernel_kinds(prof):
    """CUDA time of the profiled step by kernel kind, and the 40 longest kernels."""
    kinds = {"gemm": 0.0, "attention": 0.0, "nccl": 0.0, "optimizer": 0.0, "other": 0.0}
    top = []
    for e in prof.key_averages():
        t = e.device_time_total  # microseconds
        if t <= 0:
            continue
        n = e.key.lower()
        if "nccl" in n:
            k = "nccl"
        elif any(x in n for x in ("flash", "fmha", "cudnn", "attention", "sdpa")):
            k = "attention"
        elif any(x in n for x in ("gemm", "cutlass", "xmma", "nvjet", "sm90_", "cublas")):
            k = "gemm"
        elif any(x in n for x in ("adam", "multi_tensor")):
            k = "optimizer"
        else:
            k = "other"
        kinds[k] += t
        top.append((t, e.count, e.key[:120], k))
    top.sort(reverse=True)
    return {"us_by_kind": kinds, "top": [{"us": t, "count": c, "kernel": n, "kind": k} for t, c, n, k in top[:40]]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--shape", choices=sorted(SHAPES), default="llama3-8b")
    p.add_argument("--layers", type=int, required=True)
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--mbs", type=int, default=1)
    p.add_argument("--gas", type=int, default=1)
    p.add_argument("--ckpt", action="store_true")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--name", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--history", action="store_true",
                   help="record the allocator's history over step 3 and report what is live at its peak")
    p.add_argument("--profile", action="store_true", help="profile step 4's kernels (CUDA time by kind)")
    a = p.parse_args()

    import deepspeed
    import transformers
    from transformers.integrations import HfDeepSpeedConfig

    deepspeed.init_distributed()
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    with open(a.config) as f:
        ds = json.load(f)
    ds["train_micro_batch_size_per_gpu"] = a.mbs
    ds["gradient_accumulation_steps"] = a.gas
    ds.pop("train_batch_size", None)
    stage = ds.get("zero_optimization", {}).get("stage", 0)

    conf_name, model_name, shape = SHAPES[a.shape]
    model_cls = getattr(transformers, model_name)
    cfg = getattr(transformers, conf_name)(num_hidden_layers=a.layers, **shape)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    if stage == 3:
        keep = HfDeepSpeedConfig(ds)  # noqa: F841 (transformers reads ZeRO 3 from it while it lives)
        with deepspeed.zero.Init(config_dict_or_path=ds):
            model = model_cls(cfg)
    else:
        model = model_cls(cfg)  # fp32 on the host, as the Trainer passes it
    if a.ckpt:
        model.gradient_checkpointing_enable()
    model.config.use_cache = False
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=ds)
    torch.cuda.synchronize()
    init_alloc = torch.cuda.memory_allocated()
    init_reserved = torch.cuda.memory_reserved()

    g = torch.Generator(device="cuda").manual_seed(1234 + rank)
    steps = []
    kernels = history = None
    for step in range(a.steps):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        retries0 = torch.cuda.memory_stats().get("num_alloc_retries", 0)
        t0 = time.perf_counter()
        if a.history and step == 3:
            torch.cuda.memory._record_memory_history(max_entries=2000000, stacks="python")
        prof = None
        if a.profile and step == 4:
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
            prof.__enter__()
        for _ in range(a.gas):
            ids = torch.randint(0, cfg.vocab_size, (a.mbs, a.seq), device="cuda", generator=g)
            # the Trainer keeps the loss alone (Trainer.compute_loss returns outputs["loss"]): the
            # logits the model returns are freed before the backward
            loss = engine(input_ids=ids, labels=ids).loss
            engine.backward(loss)
            engine.step()
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        if prof is not None:
            prof.__exit__(None, None, None)
            kernels = kernel_kinds(prof)
        if a.history and step == 3:
            history = peak_live(torch.cuda.memory._snapshot(), torch.cuda.current_device())
            torch.cuda.memory._record_memory_history(enabled=None)
        free, total = torch.cuda.mem_get_info()
        steps.append(dict(step=step, step_s=dt, max_alloc=torch.cuda.max_memory_allocated(),
                          max_reserved=torch.cuda.max_memory_reserved(),
                          retries=torch.cuda.memory_stats().get("num_alloc_retries", 0) - retries0,
                          device_used=total - free, loss=float(loss.detach())))
    # the largest figure over ranks (ZeRO partitions can differ by a few elements)
    peak = torch.tensor([max(s["max_alloc"] for s in steps)], device="cuda", dtype=torch.float64)
    dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    if rank == 0:
        rec = dict(name=a.name, shape=a.shape, zero=stage, layers=a.layers, seq=a.seq, mbs=a.mbs, gas=a.gas, ckpt=a.ckpt,
                   world=world, config=os.path.basename(a.config), init_alloc=init_alloc,
                   init_reserved=init_reserved, peak_alloc_max_ranks=int(peak.item()), steps=steps,
                   gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                   deepspeed=deepspeed.__version__, transformers=transformers.__version__,
                   kernels=kernels, history=history)
        with open(a.out, "a") as f:
            f.write(json.dumps(rec) + "\n")
        last = steps[-3:]
        print(f"{a.name}: peak {rec['peak_alloc_max_ranks'] / 2**20:.0f} MiB, step "
              f"{sum(s['step_s'] for s in last) / len(last):.3f} s (mean of the last {len(last)})", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
