#!/usr/bin/env python3
"""Launch the real Megatron-LM runs of tools/megatron/configs.csv on the lent GPU machine.

Device-side script (memory-model validation). It runs from the repository root with a
Megatron-LM snapshot in .megatron/ (git-ignored, carried), following
docs/megatron-on-device.md: local transformer implementation, no TE/apex, mock
data, bf16. Launches that share a slot run at the same time, each on its own GPU
(CUDA_VISIBLE_DEVICES), so two one-GPU configurations cost one launch time. Every launch has its
own timeout, and slots are skipped once the deadline is near so that the logs always come back.
Per slot, nvidia-smi samples the device memory in use (to calibrate the reserve beyond the
PyTorch allocator: CUDA context, NCCL buffers, allocator slack).

    python3 tools/megatron/run_configs.py --out $OUT/logs [--deadline-s 520] [--dry-run]

Parse the logs into tests/data/megatron/runs.csv with tools/megatron/parse_logs.py.
"""
import argparse
import csv
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MEGATRON = os.path.join(ROOT, ".megatron")

# Model shapes (Megatron flags). Vocabulary sizes are given unpadded; Megatron pads them to a
# multiple of 128 x TP (--make-vocab-size-divisible-by, default 128).
MODELS = {
    "gpt-2.7b": ["--num-layers", "32", "--hidden-size", "2560", "--num-attention-heads", "32",
                 "--vocab-size", "50257"],
    "gpt-6.7b": ["--num-layers", "32", "--hidden-size", "4096", "--num-attention-heads", "32",
                 "--vocab-size", "50257"],
    "llama-3b": ["--num-layers", "28", "--hidden-size", "3072", "--num-attention-heads", "24",
                 "--group-query-attention", "--num-query-groups", "8", "--ffn-hidden-size", "8192",
                 "--swiglu", "--normalization", "RMSNorm", "--position-embedding-type", "rope",
                 "--no-rope-fusion", "--untie-embeddings-and-output-weights",
                 "--disable-bias-linear", "--attention-dropout", "0.0", "--hidden-dropout", "0.0",
                 "--vocab-size", "128256"],
    # Llama-3.2-3B shape with Megatron's default dropout (0.1 attention and hidden): the run that
    # ran out of memory where the bias-free rule assumed no dropout.
    "llama-3b-drop": ["--num-layers", "28", "--hidden-size", "3072", "--num-attention-heads", "24",
                      "--group-query-attention", "--num-query-groups", "8",
                      "--ffn-hidden-size", "8192", "--swiglu", "--normalization", "RMSNorm",
                      "--position-embedding-type", "rope", "--no-rope-fusion",
                      "--untie-embeddings-and-output-weights", "--disable-bias-linear",
                      "--attention-dropout", "0.1", "--hidden-dropout", "0.1",
                      "--vocab-size", "128256"],
    # Qwen3-4B shape (Qwen/Qwen3-4B config.json): head_dim 128 with 32 heads over hidden 2560
    # (query width 4096 != hidden), QK-norm, GQA 8, tied embeddings.
    "qwen3-4b": ["--num-layers", "36", "--hidden-size", "2560", "--num-attention-heads", "32",
                 "--group-query-attention", "--num-query-groups", "8", "--kv-channels", "128",
                 "--qk-layernorm", "--ffn-hidden-size", "9728", "--swiglu",
                 "--normalization", "RMSNorm", "--position-embedding-type", "rope",
                 "--no-rope-fusion", "--disable-bias-linear", "--attention-dropout", "0.0",
                 "--hidden-dropout", "0.0", "--vocab-size", "151936"],
    # Mixtral-shaped small MoE: 8 experts, top-2, every layer MoE, GQA.
    "moe-8x": ["--num-layers", "12", "--hidden-size", "2048", "--num-attention-heads", "16",
               "--group-query-attention", "--num-query-groups", "4", "--ffn-hidden-size", "5632",
               "--num-experts", "8", "--moe-router-topk", "2", "--moe-ffn-hidden-size", "5632",
               "--moe-token-dispatcher-type", "alltoall", "--swiglu",
               "--normalization", "RMSNorm", "--position-embedding-type", "rope",
               "--no-rope-fusion", "--untie-embeddings-and-output-weights",
               "--disable-bias-linear", "--attention-dropout", "0.0", "--hidden-dropout", "0.0",
               "--vocab-size", "32000"],
    # Fine-grained MoE in DeepSeek-V2-Lite's proportions (MHA instead of MLA, which needs TE):
    # a dense first layer (FFN 10944), 64 routed experts of 1408, top-6, 2 shared experts (2816).
    "moe-64fg": ["--num-layers", "8", "--hidden-size", "2048", "--num-attention-heads", "16",
                 "--ffn-hidden-size", "10944", "--num-experts", "64", "--moe-router-topk", "6",
                 "--moe-ffn-hidden-size", "1408", "--moe-shared-expert-intermediate-size", "2816",
                 "--moe-layer-freq", "([0]*1+[1]*7)", "--moe-token-dispatcher-type", "alltoall",
                 "--swiglu", "--normalization", "RMSNorm", "--position-embedding-type", "rope",
                 "--no-rope-fusion", "--untie-embeddings-and-output-weights",
                 "--disable-bias-linear", "--attention-dropout", "0.0", "--hidden-dropout", "0.0",
                 "--vocab-size", "102400"],
    # 16 experts of 1408, top-4, a shared expert of 2816: between the coarse and fine shapes.
    "moe-16x": ["--num-layers", "12", "--hidden-size", "2048", "--num-attention-heads", "16",
                "--group-query-attention", "--num-query-groups", "4", "--ffn-hidden-size", "5632",
                "--num-experts", "16", "--moe-router-topk", "4", "--moe-ffn-hidden-size", "1408",
                "--moe-shared-expert-intermediate-size", "2816",
                "--moe-token-dispatcher-type", "alltoall", "--swiglu",
                "--normalization", "RMSNorm", "--position-embedding-type", "rope",
                "--no-rope-fusion", "--untie-embeddings-and-output-weights",
                "--disable-bias-linear", "--attention-dropout", "0.0", "--hidden-dropout", "0.0",
                "--vocab-size", "32000"],
    # Qwen3-30B-A3B's layer (Qwen/Qwen3-30B-A3B config.json) on 8 layers: 128 experts of 768,
    # top-8, head_dim 128 over hidden 2048, 32 heads, 4 KV heads, QK-norm.
    "moe-128q": ["--num-layers", "8", "--hidden-size", "2048", "--num-attention-heads", "32",
                 "--group-query-attention", "--num-query-groups", "4", "--kv-channels", "128",
                 "--qk-layernorm", "--ffn-hidden-size", "6144", "--num-experts", "128",
                 "--moe-router-topk", "8", "--moe-ffn-hidden-size", "768",
                 "--moe-token-dispatcher-type", "alltoall", "--swiglu",
                 "--normalization", "RMSNorm", "--position-embedding-type", "rope",
                 "--no-rope-fusion", "--untie-embeddings-and-output-weights",
                 "--disable-bias-linear", "--attention-dropout", "0.0", "--hidden-dropout", "0.0",
                 "--vocab-size", "151936"],
}

# Flags every launch gets (megatron-on-device.md), plus: no fused bias-GELU/SwiGLU/dropout-add
# (they go through torch.compile: slow start, and eager ops keep the saved tensors the model
# table lists), memory reported after every iteration.
COMMON = ["--transformer-impl", "local", "--no-persist-layer-norm", "--no-masked-softmax-fusion",
          "--no-gradient-accumulation-fusion", "--no-bias-gelu-fusion", "--no-bias-swiglu-fusion",
          "--no-bias-dropout-fusion", "--mock-data", "--tokenizer-type", "NullTokenizer",
          "--eval-iters", "0", "--eval-interval", "1000", "--log-interval", "1",
          "--log-memory-interval", "1", "--log-throughput", "--bf16", "--lr", "1e-4"]

ENV = {"CUDA_DEVICE_MAX_CONNECTIONS": "1", "NCCL_NVLS_ENABLE": "0",
       "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1",
       "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "4"}


def read_configs(path):
    with open(path) as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    for r in rows:
        r.setdefault("vpp", "1")
        r["ep"] = r.get("ep") or "1"
        r["iters"] = r.get("iters") or "3"
        for k in ("slot", "gpus", "tp", "pp", "dp", "mbs", "gbs", "seq", "dist_opt", "vpp", "ep",
                  "iters"):
            r[k] = int(r[k])
        if r["tp"] * r["pp"] * r["dp"] != r["gpus"]:
            raise SystemExit(f"{r['name']}: tp*pp*dp != gpus")
        if r["gbs"] % (r["dp"] * r["mbs"]):
            raise SystemExit(f"{r['name']}: gbs not divisible by dp*mbs")
    return rows


def megatron_args(r):
    a = list(MODELS[r["model"]]) + list(COMMON)
    a += ["--seq-length", str(r["seq"]), "--max-position-embeddings", str(r["seq"]),
          "--micro-batch-size", str(r["mbs"]), "--global-batch-size", str(r["gbs"]),
          "--tensor-model-parallel-size", str(r["tp"]),
          "--pipeline-model-parallel-size", str(r["pp"]), "--train-iters", str(r["iters"])]
    if r["ep"] > 1:
        a += ["--expert-model-parallel-size", str(r["ep"])]
    if r["vpp"] > 1:
        a += ["--num-virtual-stages-per-pipeline-rank", str(r["vpp"])]
    if r["dist_opt"]:
        a.append("--use-distributed-optimizer")
    if r["recompute"] == "selective":
        a += ["--recompute-granularity", "selective"]
    elif r["recompute"] == "full":
        a += ["--recompute-granularity", "full", "--recompute-method", "uniform",
              "--recompute-num-layers", "1"]
    elif r["recompute"] != "none":
        raise SystemExit(f"{r['name']}: bad recompute {r['recompute']}")
    return a


def launch_cmd(r, first_gpu, port):
    devs = ",".join(str(first_gpu + i) for i in range(r["gpus"]))
    cmd = ["torchrun", "--nproc_per_node", str(r["gpus"]), "--master_port", str(port),
           "pretrain_gpt.py"] + megatron_args(r)
    return devs, cmd


CHECK = r"""
import json, sys
sys.argv = ["pretrain_gpt.py"]
from megatron.training.arguments import parse_args
bad = 0
for name, args in json.load(open(sys.argv_file)).items():
    sys.argv = ["pretrain_gpt.py"] + args
    try:
        parse_args()
        print("args ok", name)
    except BaseException as e:
        print("args BAD", name, e)
        bad += 1
sys.exit(1 if bad else 0)
"""


def check_args(rows, out):
    """Parse every launch's arguments with Megatron's own parser in one process (~15 s) before
    spending a launch on each: an unknown flag fails here, not twelve times."""
    import json
    path = os.path.join(out, "args.json")
    with open(path, "w") as f:
        json.dump({r["name"]: megatron_args(r) for r in rows}, f)
    code = CHECK.replace("sys.argv_file", repr(path))
    with open(os.path.join(out, "args_check.log"), "w") as log:
        rc = subprocess.run([sys.executable, "-c", code], cwd=MEGATRON, stdout=log,
                            stderr=subprocess.STDOUT, timeout=120,
                            env=dict(os.environ, **ENV)).returncode
    print(open(os.path.join(out, "args_check.log")).read()[-3000:], flush=True)
    return rc == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default=os.path.join(HERE, "configs.csv"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--deadline-s", type=float, default=520)
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated config names")
    ap.add_argument("--dry-run", action="store_true")
    opt = ap.parse_args()
    t0 = time.time()
    rows = read_configs(opt.configs)
    if opt.only:
        keep = set(opt.only.split(","))
        rows = [r for r in rows if r["name"] in keep]
    slots = {}
    for r in rows:
        slots.setdefault(r["slot"], []).append(r)
    os.makedirs(opt.out, exist_ok=True)
    if not opt.dry_run:
        # Build the dataset index helper once, before launches run side by side.
        subprocess.run(["make", "-C", os.path.join(MEGATRON, "megatron/core/datasets")],
                       stdout=open(os.path.join(opt.out, "make.log"), "w"),
                       stderr=subprocess.STDOUT)
    if not opt.dry_run and not check_args(rows, opt.out):
        print("argument check failed: see args_check.log", flush=True)
        return 1
    port = 29500
    for slot in sorted(slots):
        group = slots[slot]
        if sum(r["gpus"] for r in group) > opt.gpus:
            print(f"slot {slot}: needs more than {opt.gpus} GPUs, skipped", flush=True)
            continue
        left = opt.deadline_s - (time.time() - t0)
        if left < 75:
            print(f"slot {slot}: {left:.0f} s left, skipped: "
                  + " ".join(r["name"] for r in group), flush=True)
            continue
        timeout = min(170, left - 10)
        procs, gpu = [], 0
        smi = None
        if not opt.dry_run:
            smi = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=index,memory.used,memory.total",
                 "--format=csv,noheader,nounits", "-lms", "250"],
                stdout=open(os.path.join(opt.out, f"smi_slot{slot}.csv"), "w"),
                stderr=subprocess.DEVNULL)
        for r in group:
            devs, cmd = launch_cmd(r, gpu, port)
            port += 1
            gpu += r["gpus"]
            env = dict(os.environ, **ENV, CUDA_VISIBLE_DEVICES=devs)
            line = f"CUDA_VISIBLE_DEVICES={devs} " + " ".join(shlex.quote(c) for c in cmd)
            print(f"slot {slot} {r['name']}: {line}", flush=True)
            if opt.dry_run:
                continue
            log = open(os.path.join(opt.out, f"{r['name']}.log"), "w")
            log.write(f"# config {r}\n# gpus {devs}\n# cmd {line}\n")
            log.flush()
            p = subprocess.Popen(["timeout", "-k", "5", str(int(timeout))] + cmd, cwd=MEGATRON,
                                 env=env, stdout=log, stderr=subprocess.STDOUT)
            procs.append((r, p, log, time.time()))
        for r, p, log, ts in procs:
            rc = p.wait()
            log.write(f"\n# exit {rc} wall_s {time.time() - ts:.1f}\n")
            log.close()
            print(f"slot {slot} {r['name']}: exit {rc} after {time.time() - ts:.0f} s", flush=True)
        if smi:
            smi.terminate()
            smi.wait()
    print(f"done in {time.time() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
