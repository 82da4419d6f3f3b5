#!/usr/bin/env bash
# Device-side (two GPUs): the two passes of tools/fsdp/configs_ctp_host.csv (3B rows; 8B rows cut
# to 16 layers), each row with one more step profiled; both passes' records in
# $OUT/fsdp_runs.jsonl.   bash tools/fsdp/run_ctp_host.sh [deadline_s]
set -u
deadline=${1:-500}
out=${OUT:-/tmp/fsdp_out}
start=$(date +%s)
export CONFIGS=tools/fsdp/configs_ctp_host.csv
pass() {  # dir rows train_args
  local left=$(( deadline - ($(date +%s) - start) ))
  (( left > 60 )) || { echo "ctp host pass $1: skipped, ${left} s left"; return; }
  OUT="$out/$1" ONLY="$2" TRAIN_ARGS="$3" bash tools/fsdp/run_fsdp.sh "$left"
}
pass a c_3b_s1k,c_3b_s2k,c_3b_s4k,c_3b_s2k_full "--profile --steps 10 --warmup 3"
pass b c_8b16_s1k,c_8b16_s2k "--profile --steps 10 --warmup 3 --layers 16"
cat "$out"/[ab]/fsdp_runs.jsonl > "$out/fsdp_runs.jsonl" 2>/dev/null
