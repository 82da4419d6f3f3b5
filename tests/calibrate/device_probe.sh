#!/usr/bin/env bash
# plan --probe on the lent 2 x H200 machine, as it was run:
#   run(kind nvidia-h200-x2, carry [build-cal/devrun, .devbin, .megatron],
#       "bash tests/calibrate/device_probe.sh 560 [NAMES]")
# NAMES (an extended regular expression, default all) picks the layouts and Megatron scripts;
# with NAMES the K = 8 timing is skipped unless K8=1.
# build-cal/devrun holds the parplan binary and the shared libraries the machine lacks (libyaml,
# GLPK); .devbin/parplan-probe is `probes/build_device.sh .devbin`; .megatron is the Megatron-LM
# snapshot of megatron-on-device.md (git-ignored, never committed).
#  1. time to probe: plan --probe 8 on GPT-3 1.3B and 6.7B from an empty cache, then again (cached);
#  2. every layout of tests/data/calibrate/probe/layouts.tsv: plan --probe 1 with the layout fixed
#     (its measured step, and the measurements into one cache: probe-cache.yaml);
#  3. the Megatron-LM runs of tests/data/calibrate/probe/scripts (recompute variants), each alone on
#     the machine, as long as the deadline allows;
#  4. PyTorch's fused AdamW on the optimizer probe's sizes (tests/calibrate/torch_adam.py).
# Writes $OUT/probe-cache.yaml, $OUT/timings.tsv and $OUT/device_probe.tgz (the plans as JSON +
# stderr, the K = 8 cache, the Megatron logs, torch_adam.txt): few files, as the device returns few.
set -u
out=${OUT:-/tmp/pp_out}
deadline=${1:-560}
names=${2:-.}
mkdir -p "$out/plans" "$out/megatron"
t0=$SECONDS
export CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
sp=$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)
libdirs=$(find "$sp/nvidia" -name 'lib*.so*' 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="$PWD/build-cal/devrun/lib:${libdirs}${LD_LIBRARY_PATH:-}"
export PARPLAN_PROBE="$PWD/.devbin/parplan-probe" PARPLAN_MODELS_DIR="$PWD/models.d"
P=build-cal/devrun/parplan
PROF=tests/data/profiles/h200x2-megatron-local.yaml
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | tee "$out/gpus.txt"
"$PARPLAN_PROBE" --count || { echo "parplan-probe does not run:"; ldd "$PARPLAN_PROBE" | grep "not found"; exit 1; }
(make -C .megatron/megatron/core/datasets >"$out/megatron/make.log" 2>&1 &)
printf 'what\tseconds\texit\n' >"$out/timings.tsv"
# 0. TRACE_LAYER="--hidden ...": that layer probe with its per-kernel trace (new kernels' first run)
if [ -n "${TRACE_LAYER:-}" ]; then
    mkdir -p "$out/plans"
    PARPLAN_PROBE_TRACE=1 timeout 120 "$PARPLAN_PROBE" layer $TRACE_LAYER >"$out/plans/trace_layer.txt" 2>&1
    echo "0. trace layer: exit $?"
    grep -E "WRONG|err|fwd|layer" "$out/plans/trace_layer.txt" | head -20
fi

timed() { # name, cache, then the plan's arguments
    local name=$1 cache=$2
    shift 2
    local s=$SECONDS t=$(date +%s.%N)
    PARPLAN_CACHE=$cache timeout 120 $P plan "$@" --json >"$out/plans/$name.json" 2>"$out/plans/$name.err"
    local rc=$?
    local dt=$(awk "BEGIN{print $(date +%s.%N) - $t}")
    printf '%s\t%s\t%s\n' "$name" "$dt" "$rc" >>"$out/timings.tsv"
    echo "$name: exit $rc, $dt s"
}
W="--gpu h200 --gpus 2 --gpus-per-node 2 --attention unfused --profile $PROF"

# 1. K = 8 from an empty cache, then the same again (everything from the cache)
if [ "$names" = . ] || [ "${K8:-0}" = 1 ]; then
timed k8-gpt1.3b "$out/k8-cache.yaml" --model gpt3-1.3b $W --gbs 16 --probe 8 --top 8
timed k8-gpt1.3b-again "$out/k8-cache.yaml" --model gpt3-1.3b $W --gbs 16 --probe 8 --top 8
timed k8-gpt6.7b "$out/k8-cache.yaml" --model gpt3-6.7b $W --gbs 16 --probe 8 --top 8
timed k8-llama3b "$out/k8-cache.yaml" --model llama3-8b --layers 28 --hidden 3072 --heads 24 --kv-heads 8 \
    --ffn 8192 --vocab 128256 --untied --seq 4096 $W --gbs 8 --probe 8 --top 8
fi
echo "1. done after $((SECONDS - t0)) s"

# 2. the layouts Megatron-LM ran
grep -v '^#' tests/data/calibrate/probe/layouts.tsv | while IFS=$'\t' read -r name ms src args; do
    echo "$name" | grep -Eq "$names" || continue
    g=$(echo "$args" | awk '{for (i = 1; i < NF; i++) if ($i == "--tp") t = $(i+1); else if ($i == "--pp") p = $(i+1); else if ($i == "--dp") d = $(i+1); print t * p * d}')
    gpn=$((g < 2 ? g : 2))
    timed "$name" "$out/probe-cache.yaml" $args --gpu h200 --gpus "$g" --gpus-per-node $gpn --attention unfused \
        --profile $PROF --probe 1 --top 1 --stages uniform
done
echo "2. done after $((SECONDS - t0)) s"

# 3. Megatron-LM recompute variants
port=29700
for s in tests/data/calibrate/probe/scripts/*.sh; do
    n=$(basename "$s" .sh)
    echo "$n" | grep -Eq "$names" || continue
    left=$((deadline - (SECONDS - t0)))
    if [ "$left" -lt 60 ]; then
        echo "$n: skipped, $left s left"
        continue
    fi
    to=$((left - 10 < 110 ? left - 10 : 110))
    start=$SECONDS
    port=$((port + 1))
    MEGATRON_LM=$PWD/.megatron MASTER_PORT=$port timeout -k 5 "$to" bash "$s" >"$out/megatron/$n.log" 2>&1
    rc=$?
    echo "# exit $rc wall_s $((SECONDS - start)) timeout_s $to" >>"$out/megatron/$n.log"
    echo "$n: exit $rc after $((SECONDS - start)) s"
    grep -E "elapsed time per iteration|max allocated" "$out/megatron/$n.log" | tail -2 | cut -c1-200
done

# 4. PyTorch's AdamW on the optimizer probe's sizes
timeout 60 python3 tests/calibrate/torch_adam.py 1e7 1e8 1e9 >"$out/torch_adam.txt" 2>&1
cat "$out/torch_adam.txt" | head -5
tar czf "$out/device_probe.tgz" -C "$out" plans megatron torch_adam.txt $(cd "$out" && ls k8-cache.yaml 2>/dev/null) &&
    rm -rf "$out/plans" "$out/megatron" "$out/torch_adam.txt" "$out/k8-cache.yaml"
echo "done after $((SECONDS - t0)) s"
