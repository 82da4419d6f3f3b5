#!/usr/bin/env python3
"""--finetune lora through the built binary (`parplan check --json`), against hand-computed figures:
the adapter count (Megatron-Bridge peft/lora.py: A r x k and B n x r per targeted linear), the model
state of a stage (frozen base: weights alone; adapters: 2-byte weights, fp32 main gradients, 12 bytes
of optimizer state sharded over DP by the distributed optimizer), the saved activations and step
time below full training's, Megatron-Bridge's LoRA model FLOPs (frozen linears 2/3 of full
training's, attention cores in full), and full training's JSON without the LoRA keys.

usage: lora_check.py PARPLAN"""
import json
import subprocess
import sys

exe = sys.argv[1]
n = 0


def check(args):
    p = subprocess.run([exe, "check"] + args.split() + ["--json", "-q"], capture_output=True, text=True)
    if p.returncode not in (0, 1):
        sys.exit("parplan check %s: exit %d: %s" % (args, p.returncode, p.stderr))
    return json.loads(p.stdout)


def ok(cond, what):
    global n
    n += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n, what))


print("1..10")
# Llama 3 8B: h 4096, 32 heads of 128, 8 KV heads, ffn 14336 (gated), 32 layers, sequence 8192
h, q, kv, f, L, s = 4096, 4096, 1024, 14336, 32, 8192
base = "--model llama3-8b --gpu h100-sxm --gpus 8 --gbs 64 --tp 2 --dist-opt --sp"
full = check(base)
lora = check(base + " --finetune lora --lora-rank 16")
r = 16
per_layer = r * (h + q + 2 * kv) + r * (q + h) + r * (h + 2 * f) + r * (f + h)
ok(lora["stack"]["lora_params"] == per_layer * L,
   "lora_params %d = 16 x (qkv %d + proj %d + fc1 %d + fc2 %d) x 32 = %d" % (
       lora["stack"]["lora_params"], h + q + 2 * kv, q + h, h + 2 * f, f + h, per_layer * L))
ok("finetune" not in full["stack"] and "lora_params" not in full["stack"], "--finetune full: no LoRA keys in the JSON")
tp, dp = 2, 4
rank_adapters = per_layer * L / tp
bl, bf = lora["stages"][0]["breakdown"], full["stages"][0]["breakdown"]
ok(bl["grads"] == rank_adapters * 4, "grads %d = adapters on the rank %d x 4 (fp32 main_grad)" % (bl["grads"], rank_adapters))
ok(abs(bl["optimizer"] - rank_adapters * 12 / dp) < 1, "optimizer %d = adapters x 12 / dp 4" % bl["optimizer"])
ok(abs(bl["weights"] - bf["weights"] - rank_adapters * 2) < 1,
   "weights: full training's %d (the frozen base) + adapters x 2 = %d" % (bf["weights"], bl["weights"]))
# bf16, every linear targeted: each input is still saved (by the adapter's A, 16-bit, as the base
# saved it), and each B adds A's output, T x r 16-bit, per micro-batch in flight
fly = lora["stages"][0]["inflight"]
ok(bl["activations"] - bf["activations"] == L * 4 * s * r * 2 * fly,
   "activations: full training's + 32 layers x 4 adapters x T %d x r 16 x 2 bytes x %d in flight" % (s, fly))
ok(lora["step_time_s"] < full["step_time_s"],
   "step %.3f s below full training's %.3f s (no weight-gradient GEMMs)" % (lora["step_time_s"], full["step_time_s"]))
qkv = check(base + " --finetune lora --lora-targets qkv")
ok(qkv["stack"]["lora_params"] == 32 * (h + q + 2 * kv) * L and qkv["stack"]["lora_rank"] == 32
   and qkv["stages"][0]["breakdown"]["activations"] < bf["activations"],
   "--lora-targets qkv at the default rank 32: %d adapters; activations below full training's (the frozen "
   "fc1 and fc2 keep no input)" % qkv["stack"]["lora_params"])
# model FLOPs per step: full 3 F, LoRA 2 (F - A) + 3 A with A the attention cores' forward,
# 2 x 2 x s x (heads x head_dim) per token and layer (causal mask not discounted)
gbs = 64
tok = gbs * s
A = 4 * s * q * L * tok
ff = full["model_tflops_per_gpu"] * 1e12 * full["step_time_s"] * 8
fl = lora["model_tflops_per_gpu"] * 1e12 * lora["step_time_s"] * 8
ok(abs(fl - (2.0 / 3.0 * ff + A)) / fl < 1e-3,
   "LoRA model FLOPs %.4g = 2/3 x full %.4g + attention %.4g" % (fl, ff, A))
bad = subprocess.run([exe, "check"] + (base + " --lora-rank 8").split(), capture_output=True, text=True)
ok(bad.returncode == 2 and "--finetune lora" in bad.stderr, "--lora-rank without --finetune lora is refused")
