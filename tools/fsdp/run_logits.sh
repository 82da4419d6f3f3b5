#!/usr/bin/env bash
# Device-side: the four passes of tools/fsdp/configs_logits.csv (each its own train.py flags),
# through run_passes.sh.   bash tools/fsdp/run_logits.sh [deadline_s]
CONFIGS=tools/fsdp/configs_logits.csv exec bash tools/fsdp/run_passes.sh "${1:-500}" \
  lg_3b_s4k_b2_bf16 "--loss bf16" \
  lg_3b_s4k_b2_bf16_keep,lg_3b_s4k_b1_none_bf16_keep "--loss bf16 --keep-logits" \
  lg_3b_s4k_b2_up_keep "--keep-logits" \
  lg_l8_s8k_b2_bf16_keep "--loss bf16 --keep-logits --layers 8"
