#!/usr/bin/env bash
# One device call (tests/data/fsdp/sdpa/runs.csv): tools/fsdp/train.py on one GPU, three configurations, each
# with FlashAttention-2 and with cuDNN pinned as the SDPA kernel; logs and FSDP_RESULT lines under $OUT.
# Run from the repository root: bash tools/fsdp/sdpa_runs.sh
set -u
export PYTORCH_ALLOC_CONF=expandable_segments:True PYTHONUNBUFFERED=1
for cfg in "l8b_s8k_b1_full 8B 8192 full" "l3b_s8k_b1_none 3B 8192 none" "l3b_s16k_b1_full 3B 16384 full"; do
  set -- $cfg
  for be in flash cudnn; do
    timeout -k 10 240 python3 -m torch.distributed.run --standalone --nproc_per_node 1 tools/fsdp/train.py --name "${1}_$be" --flavor $2 --seq $3 --mbs 1 --ac $4 --steps 8 --warmup 3 --sdpa-backend $be > $OUT/${1}_$be.log 2>&1
    echo "${1}_$be rc $?"; grep FSDP_RESULT $OUT/${1}_$be.log | cut -c1-40
  done
done
grep -h FSDP_RESULT $OUT/*.log > $OUT/results.jsonl
