#!/usr/bin/env bash
# Device-side (four GPUs): the two passes of tools/fsdp/configs_shard_host.csv (3B rows; 8B rows cut
# to 16 layers), each row with one more step profiled, through run_passes.sh.
#   bash tools/fsdp/run_shard_host.sh [deadline_s]
CONFIGS=tools/fsdp/configs_shard_host.csv exec bash tools/fsdp/run_passes.sh "${1:-500}" \
  s_3b_g2_s512,s_3b_g2_s1k,s_3b_g2_s2k,s_3b_g4_s512,s_3b_g4_s1k,s_3b_g4_s2k,s_3b_g4_s1k_full,s_3b_g4_s1k_acc2 "--profile --steps 10 --warmup 3" \
  s_8b16_g2_s512,s_8b16_g4_s1k "--profile --steps 10 --warmup 3 --layers 16"
