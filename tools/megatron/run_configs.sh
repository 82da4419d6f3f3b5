#!/usr/bin/env bash
# Device-side entry point: run the Megatron-LM configurations of configs.csv and pack the logs.
# Usage (from the repository root, .megatron/ carried): [ONLY=name,name] [CONFIGS=file.csv] [GPUS=n] bash tools/megatron/run_configs.sh [deadline_s]
# Writes $OUT/megatron_logs.tgz (one file back) and prints the driver's progress.
set -u
out=${OUT:-/tmp/megatron_out}
mkdir -p "$out/logs"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_DEVICE_MAX_CONNECTIONS=1
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > "$out/logs/gpus.csv" 2>&1
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.device_count())" >> "$out/logs/gpus.csv" 2>&1
python3 tools/megatron/run_configs.py --out "$out/logs" --deadline-s "${1:-480}" ${ONLY:+--only "$ONLY"} \
    ${CONFIGS:+--configs "$CONFIGS"} ${GPUS:+--gpus "$GPUS"}
rc=$?
tar czf "$out/megatron_logs.tgz" -C "$out" logs && rm -rf "$out/logs"
exit $rc
