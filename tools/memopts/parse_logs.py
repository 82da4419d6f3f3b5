#!/usr/bin/env python3
"""Here: the measured figures of the memopts runs (tools/cudagraph/run.sh under SET=memopts, its
logs kept in tests/data/memopts/logs.tar.xz) into tests/data/memopts/runs.csv, one row per run of
tools/memopts/runs.csv. Nothing was fitted on these runs: every row is a check (split "check").
    python3 tools/memopts/parse_logs.py [LOGS.tar.xz] > tests/data/memopts/runs.csv
Columns (MiB, PyTorch's allocator figures of Megatron's per-iteration memory line unless said):
  max_allocated_mib   max allocated after the last iteration
  persistent_mib      allocated after the last iteration (model state, buffers, what the step keeps)
  reserved_mib        max reserved after the last iteration
  smi_max_mib         nvidia-smi memory.used, highest 200 ms sample (the whole process)
  step_ms             median elapsed time per iteration of iterations 6-9
  padded_vocab        the vocabulary Megatron built (its " > padded vocab ... (new size: P)" line)
  fsdp_groups         Megatron-FSDP's parameter groups as it logs them ("FSDP_UNIT" lines), 0 without
"""
import csv
import re
import statistics
import sys
import tarfile

MEM = re.compile(r"memory \(MB\) \| allocated: ([\d.]+) \| max allocated: ([\d.]+) \| reserved: ([\d.]+) \| max reserved: ([\d.]+)")
BASE = ("--model llama3-8b --gpu h200 --gpus 1 --seq 4096 --tp 1 --pp 1 --recompute none --layers 8 "
        "--mbs 1 --gbs 4 --framework megatron --impl local --attention unfused")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/data/memopts/logs.tar.xz"
    tar = tarfile.open(path)
    files = {m.name.split("/")[-1]: m for m in tar.getmembers() if m.isfile()}

    def read(name):
        return tar.extractfile(files[name]).read().decode(errors="replace")

    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["name", "split", "log", "parplan_args", "iterations", "max_allocated_mib", "persistent_mib",
                  "reserved_mib", "smi_max_mib", "step_ms", "padded_vocab", "fsdp_groups"])
    for r in csv.DictReader(open("tools/memopts/runs.csv")):
        name = r["name"]
        text = read(name + ".log")
        mem = MEM.findall(text)
        times = [float(x) for x in re.findall(r"elapsed time per iteration \(ms\): ([\d.]+)", text)]
        smi = max(float(l.split(",")[1]) for l in read(name + ".smi.csv").splitlines() if "," in l)
        vocab = re.search(r"padded vocab \(size: \d+\) with \d+ dummy tokens \(new size: (\d+)\)", text)
        alloc, maxalloc, _, maxres = (float(x) for x in mem[-1])
        step = round(statistics.median(times[5:9]), 2) if len(times) >= 9 else ""
        out.writerow([name, r["split"], name + ".log", BASE + " " + r["parplan_args"], len(times), round(maxalloc, 2),
                      round(alloc, 2), round(maxres), round(smi), step, vocab.group(1) if vocab else "",
                      len(re.findall(r"\[FSDP_UNIT [^\]]*\] Group", text))])


main()
