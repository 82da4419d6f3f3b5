#!/bin/sh
# plan --probe on the lent 2 x H200 machine (issue 8), as it was run:
#   run(kind nvidia-h200-x2, carry [build-cal/devrun, .devbin], "sh tests/calibrate/device_probe.sh")
# build-cal/devrun holds the parplan binary and its shared libraries (the machine has no libyaml or
# GLPK); .devbin/parplan-probe is the probes helper's binary. Writes under $OUT: the plans as JSON,
# their stderr, the probe cache, and timings.
set -u
out=${OUT:-/tmp/pp_out}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
sp=$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)
libdirs=$(find "$sp/nvidia" -name 'lib*.so*' 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="$PWD/build-cal/devrun/lib:${libdirs}${LD_LIBRARY_PATH:-}"
export PARPLAN_PROBE="$PWD/.devbin/parplan-probe" PARPLAN_MODELS_DIR="$PWD/models.d" PARPLAN_CACHE="$out/probe-cache.yaml"
P=build-cal/devrun/parplan
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
"$PARPLAN_PROBE" --count || { echo "parplan-probe does not run:"; ldd "$PARPLAN_PROBE" | grep "not found"; }
W="--gpu h200 --gpus 2 --gpus-per-node 2 --attention unfused"
start=$(date +%s)
t() { # name, then the plan's arguments (skipped once 140 s are spent: the call's limit is 180)
    name=$1
    shift
    if [ $(($(date +%s) - start)) -gt 140 ]; then
        echo "$name: skipped (time)"
        return
    fi
    t0=$(date +%s.%N)
    timeout 60 $P plan "$@" --json >"$out/$name.json" 2>"$out/$name.err"
    rc=$?
    echo "$name: exit $rc, $(awk "BEGIN{print $(date +%s.%N) - $t0}") s"
    tail -c 400 "$out/$name.err"
}
# 1. K = 8 best of GPT-3 1.3B on 2 GPUs (time to probe), then the same again (all from the cache)
t plan8 --model gpt3-1.3b $W --gbs 16 --probe 8 --top 8
t plan8-again --model gpt3-1.3b $W --gbs 16 --probe 8 --top 8
# 2. the layouts real Megatron-LM ran (tests/data/launch r1-r3, tests/data/megatron g67_*)
F="--vpp 1 --cp 1 --recompute none"
t r1 --model gpt3-1.3b $W --gbs 16 --tp 1 --pp 1 --dp 2 --mbs 4 --dist-opt $F --probe 1 --top 1
t r2 --model gpt3-1.3b $W --gbs 16 --tp 2 --pp 1 --dp 1 --mbs 4 $F --probe 1 --top 1
t r3 --model gpt3-1.3b $W --gbs 16 --tp 1 --pp 2 --dp 1 --mbs 2 $F --probe 1 --top 1
t g67tp2 --model gpt3-6.7b $W --gbs 2 --tp 2 --pp 1 --dp 1 --mbs 1 $F --probe 1 --top 1
t g67pp2 --model gpt3-6.7b $W --gbs 4 --tp 1 --pp 2 --dp 1 --mbs 1 $F --probe 1 --top 1
t g67dp2 --model gpt3-6.7b $W --gbs 4 --tp 1 --pp 1 --dp 2 --mbs 1 --dist-opt $F --probe 1 --top 1
ls -la "$out"
