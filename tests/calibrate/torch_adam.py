"""PyTorch's figure for the optimizer probe: one mixed-precision AdamW step the way
Megatron-LM runs it with torch's fused kernel (torch.optim.AdamW(fused=True) over the fp32 main
parameters and gradients, then the copy of the main parameters into the bf16 model parameters),
timed with CUDA events on the same sizes as `parplan-probe optimizer`. Prints one '#'-headed table
and a JSON line per size. Run on the device: python3 tests/calibrate/torch_adam.py 1e8 1e9"""
import json
import sys

import torch


def one(n, reps=20):
    p = torch.randn(n, device="cuda", dtype=torch.float32)
    p.grad = torch.randn_like(p)
    model = torch.empty(n, device="cuda", dtype=torch.bfloat16)
    opt = torch.optim.AdamW([p], lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, fused=True)

    def step():
        opt.step()
        model.copy_(p)  # Megatron: _copy_main_params_to_model_params

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        step()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    ms = times[len(times) // 2]
    # bytes: AdamW reads p, g, m, v and writes p, m, v (28 B); the copy reads p, writes bf16 (6 B)
    return {"params": n, "ms": ms, "bytes_per_param": 34, "gbs": 34 * n / (ms * 1e-3) / 1e9,
            "torch": torch.__version__, "device": torch.cuda.get_device_name()}


if __name__ == "__main__":
    sizes = [int(float(a)) for a in sys.argv[1:]] or [100_000_000, 1_000_000_000]
    print("# %12s %10s %10s" % ("params", "ms", "GB/s"))
    rows = []
    for n in sizes:
        r = one(n)
        rows.append(r)
        print("  %12d %10.3f %10.1f" % (r["params"], r["ms"], r["gbs"]))
        torch.cuda.empty_cache()
    for r in rows:
        print(json.dumps(r))
