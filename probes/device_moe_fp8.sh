#!/bin/bash
# FP8 GEMMs, MoE layers and MLA blocks on one GPU (H200), in one device call:
#   bash probes/device_moe_fp8.sh [BUDGET_S]      (default 470: the whole script, build included)
# Run from the repository root of a fresh clone. Builds parplan-probe (a runnable .devbin/parplan-probe
# if there is one, else probes/build_device.sh with nvcc for Hopper only, else meson), then runs:
#   gemm      bf16 and fp8 at 2048/4096/8192^3 and the QKV/proj/FC1/FC2 shapes of hidden 4096 and
#             8192 at TP 1 and 2 (4096 tokens), and probes/torch_ref.py gemm_fp8 on the same shapes
#   moe       Mixtral-8x7B (h 4096, 8 experts top-2, ffn 14336; 4096 and 8192 tokens), DeepSeek-V3-like
#             (h 7168, 256 experts top-8, ffn 2048, shared 2048, sigmoid router, 4096 tokens, EP 32 and
#             64), Qwen3-30B-A3B-like (h 2048, 128 experts top-8, ffn 768; 4096, 8192 tokens), 8 experts
#             top-2 h 2048 ffn 5632 (2048/4096/8192 tokens) and 64 experts top-6 h 2048 ffn 1408 shared
#             2816 (4096/8192); every one with the loop and the grouped experts
#   mla       DeepSeek-V3 (h 7168, 128 heads, q_lora 1536, kv_lora 512, 128/64/128, seq 4096, TP 1/2/4/8)
#             and DeepSeek-V2-Lite (h 2048, 16 heads, q_lora 0)
# Every step has its own timeout and the whole a budget (a step that would not fit is skipped); a
# failing step does not stop the others. Writes under $OUT (7 files, no folders):
#   log.txt      every step's command, output (tables) and stderr, exit status and wall time
#   summary.txt  the tables of probes/device_summary.py (also printed at the end)
#   gemm.json, moe.json, mla.json  the merged profiles (parplan's loader reads them)
#   torch.jsonl  PyTorch's bf16/fp8 GEMMs in the same call
#   smi.csv      nvidia-smi clocks, power and temperature every 500 ms
set -u
budget=${1:-470}
case $budget in '' | *[!0-9]*) echo "usage: bash probes/device_moe_fp8.sh [BUDGET_S]" >&2; exit 2 ;; esac
out=${OUT:-/tmp/pp_out}
mkdir -p "$out"
work=$(mktemp -d /tmp/pp_moe_fp8.XXXXXX)
log=$out/log.txt
t_start=$(date +%s)
: >"$log"
: >"$work/steps.tsv"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# the CUDA libraries PyTorch ships as wheels (cuDNN, NCCL, cuBLAS) when the toolkit lacks them
sp=$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)
libdirs=$(find "$sp/nvidia" -name 'lib*.so*' 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="${libdirs}${LD_LIBRARY_PATH:-}"

left() { echo $((budget - ($(date +%s) - t_start))); }
# step NAME LIMIT_S CMD...: run it bounded by its limit and what is left of the budget, log it
step() {
    local name=$1 limit=$2 l t0 rc
    shift 2
    l=$(left)
    if [ "$l" -lt 20 ]; then
        echo "### $name: skipped, ${l} s of the budget left" >>"$log"
        printf '%s\tskip\t0\n' "$name" >>"$work/steps.tsv"
        return
    fi
    [ "$limit" -gt $((l - 10)) ] && limit=$((l - 10))
    echo "### $name (timeout $limit s): $*" >>"$log"
    t0=$(date +%s)
    timeout -k 5 "$limit" "$@" >>"$log" 2>&1
    rc=$?
    echo "### $name: exit $rc in $(($(date +%s) - t0)) s" >>"$log"
    printf '%s\t%s\t%s\n' "$name" "$rc" "$(($(date +%s) - t0))" >>"$work/steps.tsv"
}

{
    # the commit as this copy's git says (call 1's said 5c73056, older than the probes it ran), and a
    # hash of the probes' sources, which does not depend on the copy's .git
    src=$(cat probes/*.c probes/*.h probes/*.cu probes/*.cuh 2>/dev/null | sha256sum | cut -c1-12)
    echo "# device_moe_fp8.sh, $(date -u +%Y-%m-%dT%H:%M:%SZ), budget $budget s," \
        "commit $(git rev-parse --short HEAD 2>/dev/null), probes sources sha256 $src"
    nvidia-smi --query-gpu=index,name,memory.total,clocks.max.sm,power.limit,driver_version --format=csv,noheader
    command -v nvcc && nvcc --version | tail -1
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1
} >>"$log" 2>&1

# ---- build
B=""
if [ -x .devbin/parplan-probe ] && .devbin/parplan-probe --count >/dev/null 2>&1; then
    B=.devbin/parplan-probe
    echo "### build: the carried .devbin/parplan-probe runs, used as is" >>"$log"
else
    step build 200 env PP_GENCODE="-gencode=arch=compute_90a,code=sm_90a" sh probes/build_device.sh "$work/bd"
    if [ -x "$work/bd/parplan-probe" ]; then
        B=$work/bd/parplan-probe
    else
        # meson as pip installs it (the planner's libyaml and GLPK may be missing: then this fails too)
        meson=meson
        command -v meson >/dev/null 2>&1 || meson="python3 -m mesonbuild.mesonmain"
        step build-meson 200 sh -c "$meson setup $work/mb -Dcuda=enabled -Dmpi=disabled && ninja -C $work/mb probes/parplan-probe"
        [ -x "$work/mb/probes/parplan-probe" ] && B=$work/mb/probes/parplan-probe
    fi
fi
if [ -z "$B" ]; then
    echo "no parplan-probe could be built: see $log" | tee -a "$log"
else
    ldd "$B" | grep -E "cublas|cudnn|nccl" | sed 's/ (0x.*//' >>"$log"
fi

nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,memory.used --format=csv,noheader \
    -lms 500 >"$out/smi.csv" 2>/dev/null &
smi=$!

if [ -n "$B" ]; then
    # ---- GEMMs: the squares with the hidden-4096 shapes, then the hidden-8192 shapes alone
    step gemm-h4096 90 "$B" gemm --dtype bf16,fp8 --hidden 4096 --heads 32 --tp 1,2 --seq 4096 --mbs 1 -q \
        -o "$work/gemm-h4096.json"
    step gemm-h8192 90 env PARPLAN_PROBE_GEMM_SHAPES_ONLY=1 "$B" gemm --dtype bf16,fp8 --hidden 8192 --heads 64 \
        --tp 1,2 --seq 4096 --mbs 1 -q -o "$work/gemm-h8192.json"
fi
step torch-gemm-fp8 150 sh -c "python3 probes/torch_ref.py gemm_fp8 --hidden 4096,8192 --tp 1,2 --tokens 4096 >'$out/torch.jsonl'"
if [ -n "$B" ]; then
    # ---- MoE layers, both expert implementations (the default)
    step moe-mixtral 90 "$B" moe --hidden 4096 --experts 8 --topk 2 --moe-ffn 14336 --tokens 4096,8192 -q \
        -o "$work/moe-mixtral.json"
    step moe-deepseek-v3 90 "$B" moe --hidden 7168 --experts 256 --topk 8 --moe-ffn 2048 --shared-ffn 2048 \
        --router sigmoid --tokens 4096 --ep 32,64 -q -o "$work/moe-deepseek-v3.json"
    step moe-qwen3-30b-a3b 90 "$B" moe --hidden 2048 --experts 128 --topk 8 --moe-ffn 768 --tokens 4096,8192 -q \
        -o "$work/moe-qwen3.json"
    step moe-8e-top2 60 "$B" moe --hidden 2048 --experts 8 --topk 2 --moe-ffn 5632 --tokens 2048,4096,8192 -q \
        -o "$work/moe-8e.json"
    step moe-64e-top6 60 "$B" moe --hidden 2048 --experts 64 --topk 6 --moe-ffn 1408 --shared-ffn 2816 \
        --tokens 4096,8192 -q -o "$work/moe-64e.json"
    # ---- MLA blocks
    step mla-deepseek-v3 100 "$B" mla --hidden 7168 --heads 128 --q-lora-rank 1536 --kv-lora-rank 512 \
        --qk-nope-dim 128 --qk-rope-dim 64 --v-head-dim 128 --seq 4096 --mbs 1 --tp 1,2,4,8 -q \
        -o "$work/mla-deepseek-v3.json"
    step mla-deepseek-v2-lite 60 "$B" mla --hidden 2048 --heads 16 --q-lora-rank 0 --kv-lora-rank 512 \
        --qk-nope-dim 128 --qk-rope-dim 64 --v-head-dim 128 --seq 4096 --mbs 1 --tp 1 -q \
        -o "$work/mla-deepseek-v2-lite.json"
fi
kill "$smi" 2>/dev/null
wait "$smi" 2>/dev/null

# ---- the summary (always: it says which steps failed)
echo "### summary" >>"$log"
timeout -k 5 60 python3 probes/device_summary.py "$work" "$out" 2>>"$log" || echo "device_summary.py failed: see $log"
echo "total $(($(date +%s) - t_start)) s of the $budget s budget" | tee -a "$log" "$out/summary.txt"
rm -rf "$work"
