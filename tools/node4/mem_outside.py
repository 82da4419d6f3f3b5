#!/usr/bin/env python3
"""Device memory outside PyTorch's caching allocator, step by step, as a training run builds it.

Each rank reads the device's used memory (cudaMemGetInfo: total - free) and the allocator's
reserved bytes after each step; the difference is what the allocator does not see: the CUDA
context, cuBLAS workspaces, NCCL communicators and their buffers. One line per rank:

    MEM_OUTSIDE {"world": 4, "rank": 0, "steps": [["context", bytes], ...]}

    torchrun --standalone --nproc_per_node W tools/node4/mem_outside.py

Steps: context (CUDA context + one small tensor), cublas (a bf16 GEMM: cuBLAS handle and
workspace), world (NCCL init + an all-reduce over all ranks), groups (every 2-rank group of a
2 x 2 grid, as TP x DP or EP x DP make them, and an all-to-all), p2p (send/recv to the
neighbours, as a pipeline does), big (a 1 GiB all-reduce, in case buffers grow with size).
"""
import json
import os

import torch
import torch.distributed as dist


def outside(dev):
    torch.cuda.synchronize(dev)
    free, total = torch.cuda.mem_get_info(dev)
    return (total - free) - torch.cuda.memory_reserved(dev)


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dev = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(dev)
    steps = []
    x = torch.ones(1024, device=dev)
    steps.append(["context", outside(dev)])
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    (a @ a).sum().item()
    steps.append(["cublas", outside(dev)])
    dist.init_process_group("nccl", device_id=dev)
    dist.all_reduce(x)
    steps.append(["world", outside(dev)])
    ngroups = 0
    if world >= 4:
        # rows and columns of a 2 x (world/2) grid: the TP and DP groups of tp 2, or EP and DP
        for ranks in [list(range(i, i + 2)) for i in range(0, world, 2)] + \
                     [list(range(i, world, 2)) for i in range(2)]:
            g = dist.new_group(ranks)
            ngroups += 1
            if rank in ranks:
                dist.all_reduce(x, group=g)
        dist.all_to_all_single(torch.empty_like(x), x)
    steps.append(["groups", outside(dev)])
    if world >= 2:
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        buf = torch.empty_like(x)
        ops = [dist.P2POp(dist.isend, x, nxt), dist.P2POp(dist.irecv, buf, prv)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()
    steps.append(["p2p", outside(dev)])
    big = torch.ones(1 << 29, device=dev, dtype=torch.bfloat16)
    dist.all_reduce(big)
    steps.append(["big", outside(dev)])
    print("MEM_OUTSIDE " + json.dumps({"world": world, "rank": rank, "groups": ngroups,
                                       "gpu": torch.cuda.get_device_name(dev),
                                       "torch": torch.__version__,
                                       "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                                       "steps": steps}), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
