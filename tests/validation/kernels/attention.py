#!/usr/bin/env python3
"""TransformerEngine's FlashAttention-2 under Megatron (--te-attention flash2). TE up to v1.7 ran
the flash-attn 2 package before its cuDNN attention, and so does any TE where NVTE_FUSED_ATTN=0 (as
NeMo-Framework-Launcher 24.01-24.07 set it); on Hopper FA2 runs at the rates time.c measured for
PyTorch's FA2 (fsdp_sdpa), about half cuDNN's. TAP, through the binary:
  - on an H100 (a Hopper-class peak), flash2 is slower than cudnn, the more so at longer sequences
    (attention's share grows);
  - on an A100 the two price alike (the fused attention's defaults are FA2's there);
  - launch --format megatron writes --attention-backend flash, and reading that script back prices
    the same step;
  - --te-attention flash2 under --framework fsdp, or with --impl local, is an error.
usage: attention.py PARPLAN SOURCE_ROOT
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap_checks import check_json, report  # noqa: E402 (tests/validation/tap_checks.py)


def main():
    parplan = sys.argv[1]
    checks = []
    base = ["--model", "llama3-8b", "--gpus", "8", "--framework", "megatron", "--mbs", "1", "--tp", "2"]
    ratio = {}
    for seq, gbs in ((4096, 16), (32768, 4)):
        d = {k: check_json(parplan, base + ["--gpu", "h100-sxm", "--seq", str(seq), "--gbs", str(gbs), "--cp", "2" if seq > 8192 else "1",
                                       "--te-attention", k]) for k in ("cudnn", "flash2")}
        if any("error" in v for v in d.values()):
            checks.append((False, f"h100 seq {seq}: {d}"))
            continue
        ratio[seq] = d["flash2"]["step_time_s"] / d["cudnn"]["step_time_s"]
        checks.append((ratio[seq] > 1.0, f"h100, {seq} tokens: flash2 {d['flash2']['step_time_s']:.3f} s over cudnn "
                                         f"{d['cudnn']['step_time_s']:.3f} s (x{ratio[seq]:.3f})"))
        checks.append((d["flash2"]["stack"].get("te_attention") == "flash2" and "te_attention" not in d["cudnn"]["stack"],
                       f"h100, {seq} tokens: the JSON's stack states te_attention flash2 only where given"))
    if len(ratio) == 2:
        checks.append((ratio[32768] > ratio[4096], f"the longer sequence loses more ({ratio[32768]:.3f} > {ratio[4096]:.3f})"))
    d = {k: check_json(parplan, base + ["--gpu", "a100-80gb", "--seq", "4096", "--gbs", "16", "--te-attention", k])
         for k in ("cudnn", "flash2")}
    ok = all("step_time_s" in v for v in d.values()) and d["flash2"]["step_time_s"] == d["cudnn"]["step_time_s"]
    checks.append((ok, "a100: flash2 and cudnn price alike (FA2 is the fused attention's default there)"))

    with tempfile.TemporaryDirectory() as tmp:
        args = base + ["--gpu", "h100-sxm", "--seq", "8192", "--gbs", "8", "--te-attention", "flash2"]
        p = subprocess.run([parplan, "launch"] + args + ["--format", "megatron", "-o", tmp, "-q"], capture_output=True, text=True)
        script = os.path.join(tmp, "pretrain_gpt.sh")
        text = open(script).read() if p.returncode == 0 and os.path.exists(script) else ""
        checks.append(("--attention-backend flash" in text, "launch --format megatron writes --attention-backend flash"))
        # the script's tokenizer gives the vocabulary: stated, as a user would
        back = check_json(parplan, ["--gpu", "h100-sxm", "--gpus", "8", "--vocab", "128256", "--megatron-args", script]) \
            if text else {}
        want = check_json(parplan, args)
        checks.append((back.get("stack", {}).get("te_attention") == "flash2" and
                       back.get("step_time_s") == want.get("step_time_s"),
                       f"the script read back: te_attention {back.get('stack', {}).get('te_attention')}, step "
                       f"{back.get('step_time_s')} s as given {want.get('step_time_s')} s"))
    for extra, why in ((["--framework", "fsdp"], "fsdp"), (["--impl", "local"], "--impl local")):
        a = [x for x in base if x not in ("--framework", "megatron")] + extra + ["--gpu", "h100-sxm", "--gbs", "8"]
        p = subprocess.run([parplan, "check"] + a + ["--te-attention", "flash2"], capture_output=True, text=True)
        checks.append((p.returncode != 0 and "--te-attention" in p.stderr,
                       f"--te-attention flash2 with {why}: an error ({p.stderr.strip()[:120]})"))
    return report(checks)


if __name__ == "__main__":
    sys.exit(main())
