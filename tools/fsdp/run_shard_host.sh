#!/usr/bin/env bash
# Device-side (four GPUs): the two passes of tools/fsdp/configs_shard_host.csv (3B rows; 8B rows cut
# to 16 layers), each row with one more step profiled; both passes' records in
# $OUT/fsdp_runs.jsonl.   bash tools/fsdp/run_shard_host.sh [deadline_s]
set -u
deadline=${1:-500}
out=${OUT:-/tmp/fsdp_out}
start=$(date +%s)
export CONFIGS=tools/fsdp/configs_shard_host.csv
pass() {  # dir rows train_args
  local left=$(( deadline - ($(date +%s) - start) ))
  (( left > 60 )) || { echo "shard host pass $1: skipped, ${left} s left"; return; }
  OUT="$out/$1" ONLY="$2" TRAIN_ARGS="$3" bash tools/fsdp/run_fsdp.sh "$left"
}
pass a s_3b_g2_s512,s_3b_g2_s1k,s_3b_g2_s2k,s_3b_g4_s512,s_3b_g4_s1k,s_3b_g4_s2k,s_3b_g4_s1k_full,s_3b_g4_s1k_acc2 "--profile --steps 10 --warmup 3"
pass b s_8b16_g2_s512,s_8b16_g4_s1k "--profile --steps 10 --warmup 3 --layers 16"
cat "$out"/[ab]/fsdp_runs.jsonl > "$out/fsdp_runs.jsonl" 2>/dev/null
