#!/usr/bin/env python3
"""Records of the FSDP2 runs of tools/fsdp/train.py, and their table tests/data/fsdp/runs.csv.

Two sub-commands, one parser of the FSDP_RESULT lines:

  collect  (device side, called by run_fsdp.sh after each launch) reads one launch's log, picks
           its result (rank 0's line; the lowest rank's when only another rank reported, as
           when that rank alone ran out of memory), adds the launch's exit status, seconds and
           outcome, appends one JSON line to --jsonl and prints a one-line progress summary.
  csv      (afterwards) turns fsdp_runs.jsonl, or a directory / .tgz of logs, into the CSV:

    python3 tools/fsdp/parse_runs.py csv fsdp_runs.jsonl -o tests/data/fsdp/runs.csv
    python3 tools/fsdp/parse_runs.py csv fsdp_logs.tgz -o tests/data/fsdp/runs.csv

Columns of the CSV (memory in MiB = 2^20 bytes, from the CUDA caching allocator of rank 0
unless said otherwise; empty where the run did not get that far or ran on CPU):
  name                 row of tools/fsdp/configs.csv
  status               ok | oom (torch.OutOfMemoryError, caught) | timeout | error |
                       skipped (deadline, too few GPUs, or a smaller mbs of the same sweep ran
                       out of memory: see reason)
  reason               why a run was skipped or failed (the error's last line)
  expect               the hand estimate written in configs.csv (fit | edge | oom)
  gpus, replicate, shard      ranks; HSDP replicas; ranks each parameter is sharded over
  tp                          tensor-parallel ranks (2-D FSDP2 + TP)
  cp                          context-parallel ranks (ring attention; the sequence split over them)
  compile_loss                1: the loss function under torch.compile (train.py --compile-loss)
  sdpa_backend                SDPA's kernel the run pinned (train.py --sdpa-backend: flash or cudnn)
  float8                      torchao float8 recipe of the block linears (train.py --float8): none,
                              tensorwise (FSDP float8 all-gather) or rowwise
  enable_gqa                  1: K and V to SDPA at their own heads (train.py --enable-gqa, torchtitan
                              v0.2.2 on); 0: repeated to the query heads first (torchtitan to v0.2.1)
  flavor, dim, layers, heads, kv_heads, ffn, vocab, params   model shape, total parameters
  mbs, seq, ac, reshard_after_forward, optimizer   the configuration (optimizer = AdamW impl)
  oom_step             step that ran out of memory (0 = set-up, 1 = first step)
  alloc_after_setup_mib   torch.cuda.memory_allocated() once the model is sharded and
                       initialised and the optimizer built: the sharded fp32 parameters (AdamW
                       allocates its state lazily, in the first step)
  alloc_after_step1_mib   torch.cuda.memory_allocated() at the end of step 1: sharded fp32
                       parameters, gradients (kept until the next step's zero_grad, as in
                       torchtitan) and AdamW state
  max_alloc_mib        torch.cuda.max_memory_allocated() over the whole run (set-up included,
                       never reset); for an OOM run, the peak reached before the failure
  max_reserved_mib     torch.cuda.max_memory_reserved() over the whole run
  max_alloc_mib_ranks  largest max_alloc_mib over all ranks (uneven ranks show here)
  device_used_mib      largest (total - free) of cudaMemGetInfo read after each step: the
                       reservation plus the CUDA context and NCCL buffers, what nvidia-smi shows
  alloc_retries        the allocator's num_alloc_retries (freed its cache and retried a
                       cudaMalloc: a sign of running at the edge)
  peak_step            first step after which max_alloc reached its final value (1 = the peak
                       was set in the first step)
  step_ms_median       median wall time of the timed steps (after --warmup), synchronized
  step_ms_min          fastest timed step
  tokens_per_s         global tokens per second at the median step
  tokens_per_s_per_gpu  per rank
  model_tflops_per_gpu  torchtitan's convention: (6 x non-embedding params + 12 L H Q T) x
                       tokens / step time; causal attention not discounted
  setup_s              process start to model + optimizer built (rank 0)
  wall_s               launch wall time as seen by run_fsdp.sh (torchrun start to exit)
  loss_first, loss_last  sanity: random tokens give about ln(vocab) = 11.76 for V=128256
  gpu, torch           device name, PyTorch version
  alloc                expandable (PYTORCH_ALLOC_CONF=expandable_segments:True) | default
  compile              1: torch.compile of each block (train.py --compile, torchtitan's compile)
  accum                micro-batches per step (gradient accumulation)
"""
import argparse
import csv
import io
import json
import os
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = "FSDP_RESULT "
MIB = 2 ** 20
OOM_TEXT = ("OutOfMemoryError", "CUDA out of memory")


def read_configs(path):
    with open(path) as f:
        return {r["name"]: r for r in csv.DictReader(l for l in f if not l.startswith("#"))}


def results_in(text):
    """All FSDP_RESULT objects of a log, in order."""
    out = []
    for line in text.splitlines():
        i = line.find(MARK)
        if i >= 0:
            try:
                out.append(json.loads(line[i + len(MARK):]))
            except json.JSONDecodeError:
                pass  # a line cut by a kill
    return out


def pick(results):
    """Rank 0's result, else the lowest rank's; an OOM report wins over a clean one from a
    rank that did not run out, because the launch as a whole did."""
    if not results:
        return None
    ooms = [r for r in results if r.get("oom")]
    pool = ooms or results
    return min(pool, key=lambda r: r.get("rank", 0))


def last_error_line(text):
    for line in reversed(text.splitlines()):
        s = line.strip()
        if s and ("Error" in s or "error" in s) and not s.startswith("File "):
            return s[:300]
    return ""


def record_from_log(name, text, rc=None, wall_s=None, timeout_s=None):
    res = pick(results_in(text))
    launch = {"rc": rc, "wall_s": wall_s, "timeout_s": timeout_s}
    if res is not None:
        launch["status"] = "oom" if res.get("oom") else "ok"
        if res.get("name") and res["name"] != name:
            launch["status"], launch["reason"] = "error", f"result names {res['name']}"
    elif rc in (124, 137):
        launch["status"], launch["reason"] = "timeout", f"killed after {timeout_s} s"
    elif any(t in text for t in OOM_TEXT):
        # Out of memory outside the caught region (e.g. in NCCL set-up): still an OOM verdict.
        launch["status"], launch["reason"] = "oom", "out of memory outside the step loop"
    else:
        launch["status"], launch["reason"] = "error", last_error_line(text) or f"exit {rc}"
    rec = dict(res or {"name": name})
    rec["name"] = name
    rec["launch"] = launch
    return rec


def mib(x):
    return "" if x is None else f"{x / MIB:.1f}"


def progress(rec):
    l = rec["launch"]
    bits = [f"{rec['name']}: {l['status']}", f"rc={l.get('rc')}", f"{l.get('wall_s')} s"]
    if rec.get("max_allocated_bytes") is not None:
        bits.append(f"peak {rec['max_allocated_bytes'] / MIB:.0f} MiB")
    if rec.get("step_ms_median") is not None:
        bits.append(f"median {rec['step_ms_median']:.1f} ms")
    if l.get("reason"):
        bits.append(l["reason"])
    return "fsdp " + ", ".join(bits)


def cmd_collect(a):
    text = open(a.log, errors="replace").read()
    rec = record_from_log(a.name, text, a.rc, a.wall_s, a.timeout_s)
    with open(a.jsonl, "a") as f:
        f.write(json.dumps(rec, sort_keys=True) + "\n")
    print(progress(rec), flush=True)


def load_records(path):
    """From fsdp_runs.jsonl, a directory of NAME.log files, or a .tgz of one."""
    if path.endswith(".jsonl"):
        with open(path) as f:
            return [json.loads(l) for l in f if l.strip()]
    logs = {}
    if os.path.isdir(path):
        for fn in sorted(os.listdir(path)):
            if fn.endswith(".log"):
                logs[fn[:-4]] = open(os.path.join(path, fn), errors="replace").read()
    else:
        with tarfile.open(path) as t:
            for m in t.getmembers():
                if m.isfile() and m.name.endswith(".log"):
                    logs[os.path.basename(m.name)[:-4]] = (
                        t.extractfile(m).read().decode(errors="replace"))
    return [record_from_log(n, text) for n, text in logs.items()]


COLUMNS = ["name", "status", "reason", "expect", "gpus", "replicate", "shard", "flavor", "dim",
           "layers", "heads", "kv_heads", "ffn", "vocab", "params", "mbs", "seq", "ac",
           "reshard_after_forward", "optimizer", "oom_step", "alloc_after_setup_mib",
           "alloc_after_step1_mib",
           "max_alloc_mib", "max_reserved_mib", "max_alloc_mib_ranks", "device_used_mib",
           "alloc_retries", "peak_step", "step_ms_median", "step_ms_min", "tokens_per_s",
           "tokens_per_s_per_gpu", "model_tflops_per_gpu", "setup_s", "wall_s", "loss_first",
           "loss_last", "gpu", "torch", "tp", "alloc", "compile", "accum", "loss_kind", "keep_logits", "cp",
           "compile_loss", "sdpa_backend", "enable_gqa", "float8"]


def row(rec, cfg):
    g = rec.get
    launch = g("launch", {})
    timed = (g("step_ms") or [])[g("warmup") or 0:] if g("oom") is False else []
    peaks = [p for p in (g("peak_allocated_after_step") or []) if p is not None]
    ranks = [r["max_allocated_bytes"] for r in (g("ranks") or [])
             if r.get("max_allocated_bytes") is not None]
    loss = g("loss") or []
    # Fields a run reports itself win; the configs row fills in runs that reported nothing.
    r = {
        "name": rec["name"], "status": launch.get("status", ""), "reason": launch.get("reason", ""),
        "expect": cfg.get("expect", ""),
        "gpus": g("world_size", cfg.get("gpus", "")),
        "replicate": g("replicate", cfg.get("replicate", "")), "shard": g("shard", ""),
        "tp": g("tp", cfg.get("tp") or 1),
        "flavor": g("flavor", cfg.get("flavor", "")),
        "dim": g("dim", ""), "layers": g("layers", ""), "heads": g("heads", ""),
        "kv_heads": g("kv_heads", ""), "ffn": g("ffn", ""), "vocab": g("vocab", ""),
        "params": g("params_total", ""), "mbs": g("mbs", cfg.get("mbs", "")),
        "seq": g("seq", cfg.get("seq", "")), "ac": g("ac", cfg.get("ac", "")),
        "reshard_after_forward": (str(g("reshard_after_forward")).lower()
                                  if g("reshard_after_forward") is not None
                                  else cfg.get("reshard_after_forward", "")),
        "optimizer": g("optimizer_impl", cfg.get("optimizer", "")),
        "oom_step": "" if g("oom_step") is None else g("oom_step"),
        "alloc_after_setup_mib": mib(g("allocated_after_setup_bytes")),
        "alloc_after_step1_mib": mib(g("allocated_after_step1_bytes")),
        "max_alloc_mib": mib(g("max_allocated_bytes")),
        "max_reserved_mib": mib(g("max_reserved_bytes")),
        "max_alloc_mib_ranks": mib(max(ranks)) if ranks else "",
        "device_used_mib": mib(g("device_used_max_bytes")),
        "alloc_retries": "" if g("alloc_retries") is None else g("alloc_retries"),
        "peak_step": (peaks.index(peaks[-1]) + 1) if peaks else "",
        "step_ms_median": g("step_ms_median") if g("step_ms_median") is not None else "",
        "step_ms_min": min(timed) if timed else "",
        "tokens_per_s": g("tokens_per_s", ""), "tokens_per_s_per_gpu": g("tokens_per_s_per_gpu", ""),
        "model_tflops_per_gpu": g("model_tflops_per_gpu", ""),
        "setup_s": g("setup_s", ""), "wall_s": "" if launch.get("wall_s") is None else launch["wall_s"],
        "loss_first": f"{loss[0]:.4f}" if loss else "", "loss_last": f"{loss[-1]:.4f}" if loss else "",
        "gpu": g("gpu_name") or (g("device") or ""), "torch": g("torch", ""),
        # the allocator as the run had it (run_fsdp.sh's alloc column), torch.compile of each block,
        # micro-batches per step; records from before these existed ran expandable, eager, one
        "alloc": ("expandable" if "expandable_segments:True" in (g("alloc_conf") or "") else "default")
                 if "alloc_conf" in rec else cfg.get("alloc", "expandable"),
        "compile": int(bool(g("compile", int(cfg.get("compile") or 0)))),
        "accum": g("accum", int(cfg.get("accum") or 1)),
        # the loss on logits.float() or the bf16 logits, and whether the loop kept the logits
        # through the backward (train.py --loss, --keep-logits); earlier records: upcast, freed
        "loss_kind": g("loss_kind", "upcast"),
        "keep_logits": int(bool(g("keep_logits", False))),
        "cp": g("cp", int(cfg.get("cp") or 1)),
        "compile_loss": int(bool(g("compile_loss", False))),
        "sdpa_backend": g("sdpa_backend", "flash"),
        "enable_gqa": int(bool(g("enable_gqa", False))),
        "float8": g("float8", "none"),
    }
    return r


def cmd_csv(a):
    recs = load_records(a.input)
    configs = read_configs(a.configs)
    # One row per configured name, in configs.csv order; a name run twice keeps its last record.
    by_name = {}
    for rec in recs:
        by_name[rec["name"]] = rec
    order = [n for n in configs if n in by_name] + sorted(n for n in by_name if n not in configs)
    gpus = sorted({r.get("gpu_name") for r in recs if r.get("gpu_name")})
    torches = sorted({r.get("torch") for r in recs if r.get("torch")})
    buf = io.StringIO()
    buf.write(f"# Real PyTorch FSDP2 runs of tools/fsdp/train.py (a torchtitan-style Llama: "
              f"fully_shard per block, bf16 compute, fp32 sharded params and reduce, AdamW) on "
              f"{', '.join(gpus) or 'CPU'}, PyTorch {', '.join(torches) or '?'}. Configurations "
              f"in {os.path.relpath(a.configs, os.path.dirname(os.path.dirname(HERE)))}; launched by tools/fsdp/run_fsdp.sh; this table by "
              f"tools/fsdp/parse_runs.py csv (column meanings in its docstring and "
              f"tools/fsdp/README.md). Memory in MiB from the CUDA caching allocator of rank 0; "
              f"step time is the median of the timed steps after warm-up, with "
              f"torch.cuda.synchronize around each step.\n")
    w = csv.DictWriter(buf, COLUMNS, lineterminator="\n")
    w.writeheader()
    for n in order:
        w.writerow(row(by_name[n], configs.get(n, {})))
    if a.output in (None, "-"):
        sys.stdout.write(buf.getvalue())
    else:
        os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
        with open(a.output, "w") as f:
            f.write(buf.getvalue())


def main(argv=None):
    p = argparse.ArgumentParser(description="records and table of the FSDP2 runs")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect", help="one launch's log -> a line of fsdp_runs.jsonl")
    c.add_argument("--log", required=True)
    c.add_argument("--name", required=True)
    c.add_argument("--rc", type=int, required=True)
    c.add_argument("--wall-s", type=int, required=True)
    c.add_argument("--timeout-s", type=int, required=True)
    c.add_argument("--jsonl", required=True)
    t = sub.add_parser("csv", help="fsdp_runs.jsonl, or logs (directory or .tgz) -> CSV")
    t.add_argument("input")
    t.add_argument("-o", "--output", help="CSV path (default: standard output)")
    t.add_argument("--configs", default=os.path.join(HERE, "configs.csv"),
                   help="the run list the records came from (fills in rows that reported "
                        "nothing, and the expect column)")
    a = p.parse_args(argv)
    {"collect": cmd_collect, "csv": cmd_csv}[a.cmd](a)


if __name__ == "__main__":
    main()
