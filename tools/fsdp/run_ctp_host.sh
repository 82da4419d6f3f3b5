#!/usr/bin/env bash
# Device-side (two GPUs): the two passes of tools/fsdp/configs_ctp_host.csv (3B rows; 8B rows cut
# to 16 layers), each row with one more step profiled, through run_passes.sh.
#   bash tools/fsdp/run_ctp_host.sh [deadline_s]
CONFIGS=tools/fsdp/configs_ctp_host.csv exec bash tools/fsdp/run_passes.sh "${1:-500}" \
  c_3b_s1k,c_3b_s2k,c_3b_s4k,c_3b_s2k_full "--profile --steps 10 --warmup 3" \
  c_8b16_s1k,c_8b16_s2k "--profile --steps 10 --warmup 3 --layers 16"
