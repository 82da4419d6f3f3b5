#!/usr/bin/env bash
# Device side of the launch configs' proof (lent 2 x H200, from the repository root,
# .megatron/ carried):
#  1. every generated Megatron command line (tests/data/launch/scripts*/*.sh and the validation
#     layouts dumped to $PARPLAN_CHECK_SCRIPTS) goes through Megatron-LM's own parse_args and
#     validate_args (tools/launch/megatron_parse_check.py);
#  2. the generated scripts in tests/data/launch/scripts run for real, one after the other,
#     each under its own timeout, as long as the deadline allows.
# Writes $OUT/launch_logs.tgz. Parse it with tools/launch/parse_real_runs.py.
#   [SCRIPTS=tests/data/launch/scripts_moe] bash tools/launch/real_runs.sh [deadline_s]
set -u
out=${OUT:-/tmp/launch_out}
logs=$out/logs
mkdir -p "$logs" "$out/args"
deadline=${1:-280}
scripts=${SCRIPTS:-tests/data/launch/scripts}
t0=$SECONDS
export CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > "$logs/gpus.csv" 2>&1
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.device_count())" >> "$logs/gpus.csv" 2>&1
make -C .megatron/megatron/core/datasets > "$logs/make.log" 2>&1
echo "setup done after $((SECONDS - t0)) s"

for s in "$scripts"/*.sh "${PARPLAN_CHECK_SCRIPTS:-build-launch/launch_scripts}"/*.sh; do
    [ -f "$s" ] || continue
    bash tests/frameworks/capture_args.sh "$s" "$out/args/$(basename "$s" .sh).args" 2>> "$logs/capture.log"
done
timeout 100 python3 tools/launch/megatron_parse_check.py --megatron .megatron --args-dir "$out/args" \
    --flags tests/data/megatron_flags.txt --out "$logs" > "$logs/parse_check.log" 2>&1
echo "parse check exit $? after $((SECONDS - t0)) s"
grep -E "^runtime parser|^parsed" "$logs/parse_check.log"

port=29600
for s in "$scripts"/*.sh; do
    n=$(basename "$s" .sh)
    left=$((deadline - (SECONDS - t0)))
    if [ "$left" -lt 50 ]; then
        echo "$n: skipped, $left s left"
        continue
    fi
    to=$((left - 10 < 85 ? left - 10 : 85))
    start=$SECONDS
    port=$((port + 1))
    MEGATRON_LM=$PWD/.megatron MASTER_PORT=$port timeout -k 5 "$to" bash "$s" > "$logs/$n.log" 2>&1
    rc=$?
    echo "# exit $rc wall_s $((SECONDS - start)) timeout_s $to" >> "$logs/$n.log"
    echo "$n: exit $rc after $((SECONDS - start)) s"
    grep -E "elapsed time per iteration|max allocated" "$logs/$n.log" | tail -3 | cut -c1-220
done
tar czf "$out/launch_logs.tgz" -C "$out" logs args && rm -rf "$out/logs" "$out/args"
echo "done after $((SECONDS - t0)) s"
