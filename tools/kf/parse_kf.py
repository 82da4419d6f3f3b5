"""Gather tools/kf/run_kf.sh's output into tests/data/kf/runs.csv (one row per run that finished).

    python3 tools/kf/parse_kf.py tests/data/kf/call1 tests/data/kf/call2 -o tests/data/kf/runs.csv

Step time: the median of KempnerForge's own step_time over the run's steps from the third on (the
first two carry the allocator's and the kernels' warm-up; 12-step runs only). Peak: rank 0's
torch.cuda.max_memory_allocated in MiB from tools/kf/sitecustomize.py's peak.0.json or the
allocator history's replay where the device call returned them, else the largest "mem=" of the log
(GiB to one decimal, as KempnerForge prints it). Rows and held-out marks: tools/kf/configs.csv.
"""
import argparse
import csv
import json
import os
import re
import statistics

STEP = re.compile(r"\[step (\d+)\] loss=\S+ .*mem=([\d.]+)/[\d.]+GB \| step_time=([\d.]+)s")


def configs(path):
    with open(path) as f:
        rows = [l for l in f if not l.startswith("#")]
    return {r["name"]: r for r in csv.DictReader(rows)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("calls", nargs="+")
    ap.add_argument("-o", required=True)
    ap.add_argument("--configs", default="tools/kf/configs.csv")
    a = ap.parse_args()
    cfg = configs(a.configs)
    out = []
    for call in a.calls:
        for fn in sorted(os.listdir(call)):
            if not fn.endswith(".log"):
                continue
            name = fn[:-4]
            steps = []
            with open(os.path.join(call, fn)) as f:
                for line in f:
                    m = STEP.search(line)
                    if m:
                        steps.append((int(m.group(1)), float(m.group(2)), float(m.group(3))))
            c = cfg[name]
            if not steps or steps[-1][0] < int(c["steps"]):
                continue  # did not finish
            peak_mib, src = max(s[1] for s in steps) * 1024.0, "log (GiB, one decimal)"
            pj = os.path.join(call, name, "peak.0.json")
            sj = os.path.join(call, name + ".snap.json")
            if os.path.exists(pj):
                peak_mib, src = json.load(open(pj))["max_alloc_bytes"] / 2**20, "peak.0.json"
            elif os.path.exists(sj):
                peak_mib, src = json.load(open(sj))["peak_bytes"] / 2**20, "allocator history"
            timed = [s[2] for s in steps if s[0] >= 3]
            step_ms = statistics.median(timed) * 1e3 if len(steps) >= 12 else None
            out.append({"name": name, "call": os.path.basename(call.rstrip("/")), "gpus": c["gpus"],
                        "experts": c["experts"], "layers": c["layers"], "batch": c["batch"],
                        "aux": c["aux"] if "aux" in c else "1", "held_out": c["held_out"],
                        "steps": steps[-1][0], "step_ms": "" if step_ms is None else "%.1f" % step_ms,
                        "peak_mib": "%.1f" % peak_mib, "peak_source": src})
    with open(a.o, "w") as f:
        f.write("# KempnerForge's own train.py on two H200 (tools/kf/run_kf.sh; configs and predictions made before\n"
                "# the calls: tools/kf/configs.csv; logs: tests/data/kf/call1, call2). aux 0: a diagnostic (the\n"
                "# routers' auxiliary loss left out of the loss), not KempnerForge's stack.\n")
        w = csv.DictWriter(f, fieldnames=list(out[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(out)


if __name__ == "__main__":
    main()
