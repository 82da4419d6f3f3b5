#!/usr/bin/env bash
# Device-side (two GPUs): the two passes of tools/fsdp/configs_tp_host.csv (3B rows; 8B rows cut
# to 16 layers), each row with one more step profiled; both passes' records in
# $OUT/fsdp_runs.jsonl.   bash tools/fsdp/run_tp_host.sh [deadline_s]
set -u
deadline=${1:-500}
out=${OUT:-/tmp/fsdp_out}
start=$(date +%s)
export CONFIGS=tools/fsdp/configs_tp_host.csv
pass() {  # dir rows train_args
  local left=$(( deadline - ($(date +%s) - start) ))
  (( left > 60 )) || { echo "tp host pass $1: skipped, ${left} s left"; return; }
  OUT="$out/$1" ONLY="$2" TRAIN_ARGS="$3" bash tools/fsdp/run_fsdp.sh "$left"
}
pass a t_3b_s2k_e,t_3b_s4k_e,t_3b_s8k_e,t_3b_s4k_e_full,t_3b_s4k_e_acc2,t_3b_s2k_c "--profile --steps 10 --warmup 3"
pass b t_8b16_s4k_e,t_8b16_s8k_e_full "--profile --steps 10 --warmup 3 --layers 16"
cat "$out"/[ab]/fsdp_runs.jsonl > "$out/fsdp_runs.jsonl" 2>/dev/null
