#!/usr/bin/env python3
"""Here: the measured figures of the CUDA-graph runs (run.sh's logs, kept in
tests/data/cudagraph/logs.tar.xz) into tests/data/cudagraph/runs.csv, one row per run of
tools/cudagraph/runs.csv, with its split: the full-iteration runs the graph pool's two constants
(planner/cost/memory.c) were fitted on (calibrate: g1, g8, g9, chosen before fitting) and the
others (holdout); eager runs are the reference.
    python3 tools/cudagraph/parse_logs.py [LOGS.tar.xz] > tests/data/cudagraph/runs.csv
A run's log is NAME.log (run under POOLS=1: the allocator's segments by pool after every step) or
else run1_NAME.log (the first call, without the shim). Columns (MiB, PyTorch's allocator figures
of Megatron's per-iteration memory line unless said):
  max_allocated_mib   max allocated after the last iteration (or at the OOM: allocated + the request)
  persistent_mib      allocated after the last iteration (model state, buffers)
  reserved_mib        max reserved after the last iteration
  graph_pool_mib      the CUDA graph's private pool (segment_pool_id other than (0, 0)), reserved
  general_cached_mib  the general pool's reserved but unallocated memory after the last iteration
  smi_max_mib         nvidia-smi memory.used, highest 200 ms sample (the whole process)
  step_ms             median elapsed time per iteration of iterations 6-9 (after the capture at 4)
  oom                 1 when the run stopped with torch.OutOfMemoryError
"""
import csv
import io
import re
import statistics
import sys
import tarfile

MEM = re.compile(r"memory \(MB\) \| allocated: ([\d.]+) \| max allocated: ([\d.]+) \| reserved: ([\d.]+) \| max reserved: ([\d.]+)")
POOLS = re.compile(r"PARPLAN_POOLS after_step it (\d+) \| (.*) \| max_allocated")
SEG = re.compile(r"pool \((\d+), (\d+)\) stream (\d+): reserved (\d+) allocated (\d+) segments (\d+)")
OOM = re.compile(r"Tried to allocate ([\d.]+) GiB.*?Of the allocated memory ([\d.]+) GiB is allocated by PyTorch, and ([\d.]+) GiB is reserved")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/data/cudagraph/logs.tar.xz"
    tar = tarfile.open(path)
    files = {m.name.split("/")[-1]: m for m in tar.getmembers() if m.isfile()}

    def read(name):
        return tar.extractfile(files[name]).read().decode(errors="replace")

    runs = list(csv.DictReader(open("tools/cudagraph/runs.csv")))
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["name", "split", "log", "parplan_args", "iterations", "max_allocated_mib", "persistent_mib",
                  "reserved_mib", "graph_pool_mib", "general_cached_mib", "smi_max_mib", "step_ms", "oom",
                  "oom_request_mib", "oom_unallocated_mib"])
    base = ("--model llama3-8b --gpu h200 --gpus 1 --seq 4096 --tp 1 --pp 1 --recompute none "
            "--framework megatron --impl local --attention unfused")
    for r in runs:
        name = r["name"]
        log = name + ".log" if name + ".log" in files else "run1_" + name + ".log"
        text = read(log)
        mem = MEM.findall(text)
        times = [float(x) for x in re.findall(r"elapsed time per iteration \(ms\): ([\d.]+)", text)]
        smi_name = log[:-4] + ".smi.csv"
        smi = max(float(l.split(",")[1]) for l in read(smi_name).splitlines() if "," in l)
        pool = cached = ""
        pools = POOLS.findall(text)
        if pools:
            p = sum(int(s[3]) for s in SEG.findall(pools[-1][1]) if (s[0], s[1]) != ("0", "0"))
            g = SEG.findall(pools[-1][1])
            cached = sum(int(s[3]) - int(s[4]) for s in g if (s[0], s[1]) == ("0", "0"))
            pool = p
        oom = OOM.search(text.replace("\n", " "))
        alloc, maxalloc, _, maxres = (float(x) for x in mem[-1])
        req = unalloc = ""
        if oom:
            req = round(float(oom.group(1)) * 1024)
            unalloc = round(float(oom.group(3)) * 1024)
            maxalloc = float(oom.group(2)) * 1024 + req
        step = statistics.median(times[5:9]) if len(times) >= 9 else ""
        out.writerow([name, r["split"], log, base + " " + r["parplan_args"], len(times), round(maxalloc, 1), round(alloc, 1),
                      round(maxres), pool, cached, round(smi), step, 1 if oom else 0, req, unalloc])


main()
