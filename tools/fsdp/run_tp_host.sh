#!/usr/bin/env bash
# Device-side (two GPUs): the two passes of tools/fsdp/configs_tp_host.csv (3B rows; 8B rows cut
# to 16 layers), each row with one more step profiled, through run_passes.sh.
#   bash tools/fsdp/run_tp_host.sh [deadline_s]
CONFIGS=tools/fsdp/configs_tp_host.csv exec bash tools/fsdp/run_passes.sh "${1:-500}" \
  t_3b_s2k_e,t_3b_s4k_e,t_3b_s8k_e,t_3b_s4k_e_full,t_3b_s4k_e_acc2,t_3b_s2k_c "--profile --steps 10 --warmup 3" \
  t_8b16_s4k_e,t_8b16_s8k_e_full "--profile --steps 10 --warmup 3 --layers 16"
