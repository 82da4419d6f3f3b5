#!/bin/sh
# Why some transformer-shape GEMMs read under the anchors (NOTES.md): the kernel each side runs and
# its SM clock, by Nsight Compute (clock control off: the card as found), for one shape (h 2048,
# TP 2, QKV: 4096 x 3072 x 2048), parplan-probe's cuBLASLt call against PyTorch's F.linear.
out=${OUT:-/tmp/pp_out}
sp=$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)
export LD_LIBRARY_PATH="$(find "$sp/nvidia" -name 'lib*.so*' | xargs -r -n1 dirname | sort -u | tr '\n' ':')${LD_LIBRARY_PATH:-}"
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
m=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__throughput.avg.pct_of_peak_sustained_elapsed
PARPLAN_PROBE_GEMM_SHAPES_ONLY=1 timeout 120 "$ncu" --clock-control none --metrics $m -k 'regex:gemm|nvjet|sm90|xmma' \
    --launch-skip 2 --launch-count 6 --csv .devbin/parplan-probe gemm --hidden 2048 --heads 16 --tp 2 --seq 4096 \
    --mbs 1 -q >"$out/diag-ours.csv" 2>&1
timeout 120 "$ncu" --clock-control none --metrics $m -k 'regex:gemm|nvjet|sm90|xmma' --launch-skip 2 --launch-count 6 \
    --csv python3 -c "
import torch, torch.nn.functional as F
x = torch.randn(4096, 2048, device='cuda', dtype=torch.bfloat16)
w = torch.randn(3072, 2048, device='cuda', dtype=torch.bfloat16)
for _ in range(12): F.linear(x, w)
torch.cuda.synchronize()" >"$out/diag-torch.csv" 2>&1
for f in ours torch; do
    echo "== $f"; grep -E '"(gpu__time|sm__cycles|sm__throughput)' "$out/diag-$f.csv" | awk -F'","' '{print $5 " | " $(NF-2) " = " $NF}' | cut -c1-160 | head -9
done
