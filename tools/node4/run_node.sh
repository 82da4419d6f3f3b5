#!/usr/bin/env bash
# Device side: run the Megatron-LM launch scripts of one run list on a node of 4 GPUs.
#   bash tools/node4/run_node.sh LIST DEADLINE_S     (from the repository root, .megatron/ carried)
# LIST is dense (dense_h200.csv, or dense_h100.csv on GPUs under 100 GB) or moe (moe.csv); the
# scripts are tests/data/node4/scripts/<list>/NAME.sh, written by gen_scripts.sh. Rows sharing a slot
# start together, each on its own GPUs (CUDA_VISIBLE_DEVICES). Per slot, nvidia-smi samples
# memory.used every 250 ms (memory outside PyTorch's allocator: CUDA context, NCCL). A slot is
# skipped when less than 70 s are left, so the logs always come back.
# Writes $OUT/node4_<list>.tgz (the logs, smi samples, GPU inventory) and prints one line per run.
set -u
list=${1:?list: dense or moe} deadline=${2:-540}
out=${OUT:-/tmp/node4_out}
logs=$out/node4_$list
mkdir -p "$logs"
t0=$SECONDS
export CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > "$logs/gpus.csv" 2>&1
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.device_count())" >> "$logs/gpus.csv" 2>&1
cat "$logs/gpus.csv"
mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
csv=tools/node4/$list.csv
if [ "$list" = dense ]; then
    if [ "${mib:-0}" -lt 100000 ]; then csv=tools/node4/dense_h100.csv; else csv=tools/node4/dense_h200.csv; fi
fi
scripts=tests/data/node4/scripts/$(basename "$csv" .csv)
echo "list $csv, scripts $scripts, deadline $deadline s"
cp "$csv" "$logs/"
make -C .megatron/megatron/core/datasets > "$logs/make.log" 2>&1
port=29500
for slot in $(grep -v '^#' "$csv" | tail -n +2 | cut -d, -f2 | sort -un); do
    left=$((deadline - (SECONDS - t0)))
    names=$(grep -v '^#' "$csv" | tail -n +2 | awk -F, -v s="$slot" '$2 == s {print $1}' | tr '\n' ' ')
    if [ "$left" -lt 70 ]; then
        echo "slot $slot: skipped ($left s left): $names"
        continue
    fi
    to=$((left - 10 < 160 ? left - 10 : 160))
    nvidia-smi --query-gpu=timestamp,index,memory.used --format=csv,noheader,nounits -lms 250 \
        > "$logs/smi_slot$slot.csv" 2>/dev/null &
    smi=$!
    gpu=0
    pids=()
    while IFS=, read -r name s gpus extra args; do
        [ "$s" = "$slot" ] || continue
        # LIST/NAME: the script another list's run started (the same run again, on other GPUs)
        script=$scripts/$name.sh
        case $name in */*) script=tests/data/node4/scripts/$name.sh; name=${name##*/} ;; esac
        devs=$(seq -s, "$gpu" $((gpu + gpus - 1)))
        gpu=$((gpu + gpus))
        port=$((port + 1))
        {
            echo "# run $name slot $slot gpus $devs extra '$extra'"
            echo "# script $script"
        } > "$logs/$name.log"
        (
            s0=$SECONDS
            # shellcheck disable=SC2086
            CUDA_VISIBLE_DEVICES=$devs MEGATRON_LM=$PWD/.megatron MASTER_PORT=$port \
                timeout -k 5 "$to" bash "$script" $extra >> "$logs/$name.log" 2>&1
            rc=$?
            echo "# exit $rc wall_s $((SECONDS - s0)) timeout_s $to" >> "$logs/$name.log"
            it=$(grep -c "elapsed time per iteration" "$logs/$name.log")
            mem=$(grep -m1 -o "max allocated: [0-9.]*" "$logs/$name.log" | tail -1)
            oom=$(grep -c -E "OutOfMemoryError|CUDA out of memory" "$logs/$name.log")
            echo "slot $slot $name: exit $rc after $((SECONDS - s0)) s, $it iteration lines, $mem, oom lines $oom"
        ) &
        pids+=($!)
    done < <(grep -v '^#' "$csv" | tail -n +2)
    wait "${pids[@]}"
    kill "$smi" 2>/dev/null
    wait "$smi" 2>/dev/null
done
tar czf "$out/node4_$list.tgz" -C "$out" "node4_$list" && rm -rf "$logs"
echo "done after $((SECONDS - t0)) s"
