#!/usr/bin/env python3
"""The end of probes/device_moe_fp8.sh: merge the per-step profiles (parplan-probe -o X.json) into one
profile per probe, join the GEMMs with PyTorch's figures from the same call (probes/torch_ref.py
gemm_fp8) and print the summary tables.

usage: python3 probes/device_summary.py WORKDIR OUTDIR
  WORKDIR  holds steps.tsv (name, exit status, seconds) and gemm-*.json, moe-*.json, mla-*.json
  OUTDIR   gets gemm.json, moe.json, mla.json (profiles the planner's loader reads) and summary.txt;
           torch.jsonl is read from there
Only the standard library: the GPU machine may have nothing else.
"""
import glob
import json
import os
import sys

LISTS = ("gemm", "attention", "layer", "nccl", "optimizer", "moe", "mla", "oom", "notes")
MOE_NAMES = {(4096, 8, 2): "Mixtral-8x7B", (7168, 256, 8): "DeepSeek-V3-like", (2048, 128, 8): "Qwen3-30B-A3B-like",
             (2048, 8, 2): "8e top-2 h2048", (2048, 64, 6): "64e top-6 h2048"}
MOE_PARTS = ("router", "permute", "fc1", "act", "fc2", "unpermute", "shared")
MLA_PARTS = ("q", "kv", "rope", "attn", "proj")


def load_docs(pattern):
    docs = []
    for path in sorted(glob.glob(pattern)):
        try:
            with open(path) as f:
                docs.append(json.load(f))
        except (OSError, ValueError) as e:
            docs.append({"notes": [f"{os.path.basename(path)}: unreadable ({e})"]})
    return docs


def merge(docs):
    """one profile: the first document's machine fields, every list concatenated"""
    out = {}
    for d in docs:
        for k, v in d.items():
            if k in LISTS:
                out.setdefault(k, []).extend(v)
            elif k not in out:
                out[k] = v
    return out


def write(path, doc):
    if doc.get("gpu") is None:  # no step wrote a profile: nothing to merge
        return
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def fmt(v, spec=".1f"):
    return "-" if v is None else format(v, spec)


def ratio(a, b):
    return a / b if a and b else None


def gemm_table(gemm, torch_rows, say):
    say("## GEMM: fp8 (e4m3, per-tensor scales, bf16 out) against bf16, TFLOP/s; PyTorch in the same call")
    # keyed by the op too: the 4096^3 square and hidden 4096's TP-1 projection share m, n, k (call 1's
    # summary showed the projection's PyTorch figures on the square's row)
    tr = {}
    for r in torch_rows:
        if r.get("kind") == "gemm_fp8" and "tflops" in r:
            tr[(r["dtype"], r.get("op", "?"), r["m"], r["n"], r["k"])] = r["tflops"]
    rows = {}
    for g in gemm:
        key = (g.get("op", "?"), g["m"], g["n"], g["k"])
        rows.setdefault(key, {})[g["dtype"]] = g["tflops"]
        rows[key]["tp"] = g.get("tp", 0)
    say(f"{'op':<6} {'tp':>2} {'m':>6} {'n':>6} {'k':>6} {'bf16':>7} {'fp8':>7} {'fp8/bf16':>8} "
        f"{'torch_bf16':>10} {'torch_fp8':>9} {'ours/torch bf16':>15} {'ours/torch fp8':>14}")
    for (op, m, n, k), v in sorted(rows.items(), key=lambda kv: (kv[0][0] != "square", kv[1]["tp"], kv[0])):
        b, f8 = v.get("bf16"), v.get("fp8")
        tb, tf = tr.get(("bf16", op, m, n, k)), tr.get(("fp8", op, m, n, k))
        say(f"{op:<6} {v['tp']:>2} {m:>6} {n:>6} {k:>6} {fmt(b):>7} {fmt(f8):>7} {fmt(ratio(f8, b), '.2f'):>8} "
            f"{fmt(tb):>10} {fmt(tf):>9} {fmt(ratio(b, tb), '.3f'):>15} {fmt(ratio(f8, tf), '.3f'):>14}")
    errs = [r for r in torch_rows if r.get("kind") == "gemm_fp8" and "error" in r]
    for r in errs[:3]:
        say(f"  torch fp8 {r['op']} {r['m']}x{r['n']}x{r['k']}: {r['error']}")


def parts_str(d, names):
    return " ".join(f"{n} {d.get(n, 0):.3f}" for n in names)


def moe_table(moe, say):
    say("## MoE layer (bf16, one GPU), ms; exp_tf: the expert GEMMs' TFLOP/s timed alone; "
        "loop/grp: the loop's fwd+bwd over the grouped one's")
    say(f"{'model':<19} {'tokens':>6} {'ep':>3} {'impl':<7} {'backend':<16} {'fwd_ms':>8} {'fb_ms':>8} "
        f"{'exp_tf':>7} {'exp_fbtf':>8} {'loop/grp':>8}")
    grouped = {}
    for m in moe:
        if m.get("impl") == "grouped":
            grouped[(m["hidden"], m["experts"], m["topk"], m["moe_ffn"], m["tokens"], m.get("ep", 1))] = m["fwdbwd_ms"]
    for m in moe:
        name = MOE_NAMES.get((m["hidden"], m["experts"], m["topk"]), f"h{m['hidden']} e{m['experts']} k{m['topk']}")
        key = (m["hidden"], m["experts"], m["topk"], m["moe_ffn"], m["tokens"], m.get("ep", 1))
        lg = ratio(m["fwdbwd_ms"], grouped.get(key)) if m.get("impl") == "loop" else None
        say(f"{name:<19} {m['tokens']:>6} {m.get('ep', 1):>3} {m['impl']:<7} {m.get('backend', '?'):<16} "
            f"{m['fwd_ms']:>8.3f} {m['fwdbwd_ms']:>8.3f} {fmt(m.get('expert_fwd_tflops')):>7} "
            f"{fmt(m.get('expert_fwdbwd_tflops')):>8} {fmt(lg, '.2f'):>8}")
        say(f"    fwd: {parts_str(m.get('fwd_parts_ms', {}), MOE_PARTS)}")
        say(f"    bwd: {parts_str(m.get('bwd_parts_ms', {}), MOE_PARTS)}")


def mla_table(mla, say):
    say("## MLA block (bf16, a TP shard), ms and model TFLOP/s")
    say(f"{'hidden':>6} {'heads':>5} {'q_lora':>6} {'kv_lora':>7} {'tp':>2} {'attn':<7} {'fwd_ms':>8} {'fb_ms':>8} "
        f"{'fwd_tf':>7} {'fb_tf':>7}")
    for m in mla:
        say(f"{m['hidden']:>6} {m['heads']:>5} {m['q_lora_rank']:>6} {m['kv_lora_rank']:>7} {m['tp']:>2} "
            f"{m['attention']:<7} {m['fwd_ms']:>8.3f} {m['fwdbwd_ms']:>8.3f} {m['fwd_tflops']:>7.1f} "
            f"{m['fwdbwd_tflops']:>7.1f}")
        say(f"    fwd: {parts_str(m.get('fwd_parts_ms', {}), MLA_PARTS)}")
        say(f"    bwd: {parts_str(m.get('bwd_parts_ms', {}), MLA_PARTS)}")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: device_summary.py WORKDIR OUTDIR")
    work, out = sys.argv[1], sys.argv[2]
    lines = []

    def say(s=""):
        print(s)
        lines.append(s)

    docs = {k: merge(load_docs(os.path.join(work, f"{k}-*.json"))) for k in ("gemm", "moe", "mla")}
    for k, d in docs.items():
        write(os.path.join(out, f"{k}.json"), d)
    torch_rows = []
    try:
        with open(os.path.join(out, "torch.jsonl")) as f:
            for line in f:
                try:
                    torch_rows.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    say("# device_moe_fp8 summary")
    env = next((d for d in docs.values() if d.get("gpu")), {})
    if env:
        say(f"# {env.get('gpu')}, {env.get('tool')}, {json.dumps(env.get('env', {}))}")
    tenv = next((r for r in torch_rows if r.get("kind") == "env"), None)
    if tenv:
        say(f"# torch {tenv.get('torch')} CUDA {tenv.get('cuda')} cuDNN {tenv.get('cudnn')}")
    say()
    say("## steps")
    try:
        with open(os.path.join(work, "steps.tsv")) as f:
            for line in f:
                name, rc, secs = (line.rstrip("\n").split("\t") + ["", "", ""])[:3]
                say(f"{name:<28} exit {rc:>4} {secs:>6} s")
    except OSError:
        say("(no steps.tsv)")
    say()
    gemm_table(docs["gemm"].get("gemm", []), torch_rows, say)
    say()
    moe_table(docs["moe"].get("moe", []), say)
    say()
    mla_table(docs["mla"].get("mla", []), say)
    say()
    say("## notes, wrong results and sizes out of memory")
    for k in ("gemm", "moe", "mla"):
        for n in docs[k].get("notes", []):
            say(n)
        for o in docs[k].get("oom", []):
            say(f"{k}: OOM {o.get('what')} (needs >= {o.get('need_bytes', 0) / 2**30:.1f} GiB)")
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
