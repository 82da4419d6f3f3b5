#!/usr/bin/env bash
# Device-side: the two passes of tools/fsdp/configs_host.csv (3B rows; 8B rows cut to 16 layers),
# each row with one more step profiled, through run_passes.sh.   bash tools/fsdp/run_host.sh [deadline_s]
CONFIGS=tools/fsdp/configs_host.csv exec bash tools/fsdp/run_passes.sh "${1:-500}" \
  h_3b_s512_e,h_3b_s1k_e,h_3b_s2k_e,h_3b_s4k_e,h_3b_s512_c,h_3b_s2k_c,h_3b_s1k_e_full,h_3b_s1k_e_acc2 "--profile --steps 12 --warmup 3" \
  h_8b16_s512_e,h_8b16_s2k_e,h_8b16_s1k_c "--profile --steps 12 --warmup 3 --layers 16"
