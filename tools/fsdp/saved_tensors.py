#!/usr/bin/env python3
"""What each block of train.py's model keeps from its forward for its backward, tensor by tensor.

The model, its float8 conversion, TP, AC, per-block compile and FSDP2 are train.py's (torchtitan's
order: float8, TP, AC, compile, FSDP). One forward is run under torch.autograd.graph's saved-tensor
hooks, entered around each block; once the model's forward is done (FSDP2 has resharded), every
storage a block saved that is still allocated and is not a parameter or buffer is counted. Prints
one JSON line on rank 0:

    SAVED_RESULT {"float8": ..., "tp": ..., "shard": ..., "tokens": ..., "blocks": [
        {"bytes_per_token": ..., "tensors": [[count, shape, dtype, bytes], ...]}, ...]}

It reads what the compiled graph (torch/_functorch/partitioners.py's min-cut) decides to keep, which
parplan's saved-tensor list (planner/cost/layer.c, build_saved_titan) states. On the CPU (gloo) it runs without a GPU:

    torchrun --standalone --nproc_per_node 2 tools/fsdp/saved_tensors.py --device cpu --float8 tensorwise
    torchrun --standalone --nproc_per_node 2 tools/fsdp/saved_tensors.py --float8 rowwise --tp 2

On the CPU the rowwise recipe is emulated (a bf16 matmul of its dequantized casts), which keeps the same
activations as _scaled_mm but not the same weights.
"""
import argparse
import collections
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train as T  # noqa: E402 (the model and its parallelisms, as measured)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--flavor", choices=sorted(T.FLAVORS), default="8B")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--vocab", type=int, default=1024, help="a small vocabulary: the blocks are what is read")
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--float8", choices=("none", "tensorwise", "rowwise"), default="none")
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--ac", choices=("none", "full", "selective"), default="none")
    p.add_argument("--eager", action="store_true", help="no torch.compile of the blocks")
    p.add_argument("--repeat-kv", action="store_true", help="torchtitan to v0.2.1's repeat_kv (default: enable_gqa)")
    return p.parse_args()


def plain(t):
    """The plain tensors that hold t's memory: a DTensor's local shard, a tensor subclass's inner
    tensors (torchao's float8 payload and scale, its weight wrapper's bf16 tensor)."""
    t = t.to_local() if hasattr(t, "to_local") else t
    if hasattr(t, "__tensor_flatten__"):
        names, _ = t.__tensor_flatten__()
        return [x for n in names for x in plain(getattr(t, n))]
    return [t]


def main():
    args = parse_args()
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if args.device == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    shard = world // args.tp
    mesh2 = init_device_mesh(device.type, (shard, args.tp), mesh_dim_names=("dp_shard", "tp"))
    c = dict(T.FLAVORS[args.flavor], layers=args.layers, vocab=args.vocab)
    c["head_dim"] = c["dim"] // c["heads"]
    c["enable_gqa"] = not args.repeat_kv
    torch.manual_seed(0)
    with torch.device("meta"):
        model = T.Transformer(c, args.seq)
    precompute = False
    if args.float8 != "none":
        # the CPU's _scaled_mm takes tensorwise scales only; emulation (a bf16 matmul of the
        # dequantized casts) keeps the activations a compiled block saves but not the weights: the
        # FSDP float8 all-gather's weights kept with _scaled_mm are not kept emulated
        precompute = T.apply_float8(model, args.float8, shard, emulate=device.type == "cpu" and args.float8 == "rowwise")
    if args.tp > 1:
        T.apply_tp(model, mesh2["tp"], float8_tensorwise=args.float8 == "tensorwise")
    T.apply_ac(model, args.ac)
    if not args.eager:
        T.apply_compile(model)
    T.apply_fsdp(model, mesh2["dp_shard"], True)  # over one rank too, as train.py: its bf16 policy
    model.to_empty(device=device)
    model.init_weights()

    saved = {}  # block name -> tensors it saved

    def forward(self, tokens):  # Transformer.forward, each block under the hooks (outside its compiled call)
        h = self.tok_embeddings(tokens)
        for name, block in self.layers.items():
            with torch.autograd.graph.saved_tensors_hooks(lambda t, n=name: (saved[n].append(t), t)[1], lambda t: t):
                h = block(h, self.rope)
        return self.output(self.norm(h))

    model.forward = forward.__get__(model)
    fixed = {x.untyped_storage().data_ptr() for t in list(model.parameters()) + list(model.buffers()) for x in plain(t)}
    tokens = torch.randint(0, args.vocab, (1, args.seq), device=device)
    blocks = []
    for it in range(2):  # the second forward: compiled, scales precomputed
        saved = {name: [] for name in model.layers}
        out = model(tokens)
        if it == 1:
            seen = set(fixed)
            for name in model.layers:
                rows, total = collections.Counter(), 0
                for x in (x for t in saved[name] for x in plain(t)):
                    st = x.untyped_storage()
                    if st.nbytes() == 0 or st.data_ptr() in seen:  # freed (FSDP2's resharded parameters)
                        continue
                    seen.add(st.data_ptr())
                    total += st.nbytes()
                    rows[(tuple(x.shape), str(x.dtype).replace("torch.", ""), st.nbytes())] += 1
                tensors = sorted(([n, list(k[0]), k[1], k[2]] for k, n in rows.items()), key=lambda r: -r[0] * r[3])
                blocks.append({"bytes_per_token": total / args.seq, "tensors": tensors})
        out.full_tensor().float().sum().backward() if hasattr(out, "full_tensor") else out.float().sum().backward()
        if precompute:
            from torchao.float8 import precompute_float8_dynamic_scale_for_fsdp
            precompute_float8_dynamic_scale_for_fsdp(model)
    if rank == 0:
        print("SAVED_RESULT " + json.dumps({
            "flavor": args.flavor, "float8": args.float8, "tp": args.tp, "shard": shard, "ac": args.ac,
            "compile": not args.eager, "enable_gqa": not args.repeat_kv, "tokens": args.seq,
            "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
            "torch": torch.__version__, "blocks": blocks}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
