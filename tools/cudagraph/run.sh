#!/usr/bin/env bash
# Device side: run each script of tests/data/cudagraph/scripts (gen_scripts.sh) on one GPU, one
# after the other, with 9 iterations (Megatron captures the full-iteration graph after its 3
# warm-up steps, transformer_config.py cuda_graph_warmup_steps = 3) and memory logged every
# iteration (--log-memory-interval 1). nvidia-smi samples memory.used every 200 ms (what the
# process holds outside PyTorch's allocator too). A run is skipped when less than 100 s are left.
#   bash tools/cudagraph/run.sh DEADLINE_S [NAME...]   (from the repository root, .megatron/ carried)
# POOLS=1 runs pretrain_gpt.py under pools_shim.py (the allocator's segments by pool after each step).
# SET=memopts runs tests/data/memopts/scripts instead (tools/memopts: Megatron-FSDP's buffers and the
# vocabulary's padding).
# Writes $OUT/$SET.tgz (logs, smi samples, GPU inventory).
set -u
deadline=${1:-560}
shift
names=${*:-}
set_=${SET:-cudagraph}
out=${OUT:-/tmp/cudagraph_out}
logs=$out/$set_
mkdir -p "$logs"
t0=$SECONDS
export CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > "$logs/gpus.csv" 2>&1
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda, torch.cuda.device_count())" >> "$logs/gpus.csv" 2>&1
cat "$logs/gpus.csv"
make -C .megatron/megatron/core/datasets > "$logs/make.log" 2>&1
port=29600
mlm=$PWD/.megatron
if [ "${POOLS:-0}" = 1 ]; then
    mlm=$out/shim
    mkdir -p "$mlm"
    cp tools/cudagraph/pools_shim.py "$mlm/pretrain_gpt.py"
    export MEGATRON_REAL=$PWD/.megatron
fi
for script in tests/data/$set_/scripts/*.sh; do
    name=$(basename "$script" .sh)
    if [ -n "$names" ] && ! echo " $names " | grep -q " $name "; then continue; fi
    left=$((deadline - (SECONDS - t0)))
    if [ "$left" -lt 100 ]; then echo "$name: skipped ($left s left)"; continue; fi
    to=$((left - 10 < 200 ? left - 10 : 200))
    nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader,nounits -lms 200 > "$logs/$name.smi.csv" 2>/dev/null &
    smi=$!
    port=$((port + 1))
    s0=$SECONDS
    CUDA_VISIBLE_DEVICES=0 MEGATRON_LM=$mlm MASTER_PORT=$port \
        timeout -k 5 "$to" bash "$script" --train-iters 9 > "$logs/$name.log" 2>&1
    rc=$?
    kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
    echo "# exit $rc wall_s $((SECONDS - s0)) timeout_s $to" >> "$logs/$name.log"
    it=$(grep -c "elapsed time per iteration" "$logs/$name.log")
    mem=$(grep -o "max allocated: [0-9.]*" "$logs/$name.log" | tail -1)
    smimax=$(cut -d, -f2 "$logs/$name.smi.csv" | sort -n | tail -1)
    echo "$name: exit $rc after $((SECONDS - s0)) s, $it iterations, last $mem, smi max $smimax MiB"
done
tar czf "$out/$set_${POOLS:+_pools}.tgz" -C "$out" "$set_" && rm -rf "$logs" "$out/shim"
echo "done after $((SECONDS - t0)) s"
