#!/usr/bin/env python3
"""How an H200's tensor-core clock follows its power at its own 700 W limit (tools/power/power_curve.py,
tests/data/power/h200_mma.jsonl; PyTorch 2.11, Triton 3.6, 2026-11-29; no setting changed), against the
power curve planner/model/gpu_power.c prices a lower limit with. TAP:
  - the MMA kernel's throughput follows the clock: TFLOP/s per busy SM per MHz within 3% over every phase;
  - below the limit the board draws P0 + n p(1980) (a straight line in the busy SMs, residuals < 2%);
  - at the limit, p(f) = (P - P0) / n falls as a power of the clock, the exponent between 2.5 and 4;
  - the factor that law gives a 500 W limit of 700 (the Grand Teton H100's) is within 0.035 of the
    binary's (`check --gpu h100-96gb-gt500w`, gpu_effective.gemm_power_factor).
usage: power.py PARPLAN SOURCE_ROOT
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap_checks import check_json, jsonl, report  # noqa: E402 (tests/validation/tap_checks.py)


def line(xs, ys):
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def main():
    parplan, root = sys.argv[1], sys.argv[2]
    rows = jsonl(root, "tests/data/power/h200_mma.jsonl")
    mma = [r for r in rows if r["phase"].startswith("mma_")]
    checks = [(len(mma) >= 12, f"{len(mma)} MMA phases")]
    per = [r["tflops"] / (r["sms_busy"] * r["sm_mhz"]) for r in mma]
    spread = max(per) / min(per) - 1
    checks.append((spread <= 0.03, f"throughput per SM per MHz within {100 * spread:.1f}% over the phases (<= 3%)"))
    free = [r for r in mma if r["sm_mhz"] >= 1980 and r["sms_busy"] >= 16]
    p0, p1980 = line([r["sms_busy"] for r in free], [r["power_w"] for r in free])
    worst = max(abs(r["power_w"] - (p0 + p1980 * r["sms_busy"])) / r["power_w"] for r in free)
    checks.append((worst < 0.02, f"below the limit: {p0:.1f} + {p1980:.3f} W a busy SM at 1980 MHz "
                                 f"({len(free)} phases, worst residual {100 * worst:.1f}%)"))
    capped = [r for r in mma if r["sm_mhz"] < 1980]
    pts = [(r["sm_mhz"], (r["power_w"] - p0) / r["sms_busy"]) for r in capped] + [(1980.0, p1980)]
    _, alpha = line([math.log(f) for f, _ in pts], [math.log(q) for _, q in pts])
    checks.append((2.5 <= alpha <= 4.0 and len(capped) >= 4,
                   f"at the limit ({len(capped)} phases, {min(f for f, _ in pts):.0f}-1980 MHz): p(f) ~ f^{alpha:.2f}"))
    full = max(mma, key=lambda r: r["sms_busy"])
    draw = full["power_w"]  # what the board holds at its 700 W limit
    factor = ((500.0 - (full["limit_w"] - draw)) - p0) / (draw - p0)
    factor = factor ** (1.0 / alpha)
    d = check_json(parplan, ["--model", "llama3-8b", "--gpu", "h100-96gb-gt500w", "--gpus", "8", "--framework", "fsdp",
                             "--zero", "3", "--gbs", "8", "--mbs", "1", "--seq", "8192"])
    have = d.get("gpu_effective", {}).get("gemm_power_factor")
    checks.append((have is not None and abs(have - factor) <= 0.035,
                   f"500 of 700 W: {factor:.3f} of the clock by the measured law, {have} priced (gpu_power.c)"))
    return report(checks)


if __name__ == "__main__":
    sys.exit(main())
