#!/usr/bin/env bash
# Device-side: the two passes of tools/fsdp/configs_host.csv (3B rows; 8B rows cut to 16 layers),
# each row with one more step profiled; the records of both in $OUT/fsdp_runs.jsonl.
#   bash tools/fsdp/run_host.sh [deadline_s]
set -u
deadline=${1:-500}
out=${OUT:-/tmp/fsdp_out}
start=$(date +%s)
export CONFIGS=tools/fsdp/configs_host.csv
pass() {  # dir rows train_args
  local left=$(( deadline - ($(date +%s) - start) ))
  (( left > 60 )) || { echo "host pass $1: skipped, ${left} s left"; return; }
  OUT="$out/$1" ONLY="$2" TRAIN_ARGS="$3" bash tools/fsdp/run_fsdp.sh "$left"
}
pass a h_3b_s512_e,h_3b_s1k_e,h_3b_s2k_e,h_3b_s4k_e,h_3b_s512_c,h_3b_s2k_c,h_3b_s1k_e_full,h_3b_s1k_e_acc2 "--profile --steps 12 --warmup 3"
pass b h_8b16_s512_e,h_8b16_s2k_e,h_8b16_s1k_c "--profile --steps 12 --warmup 3 --layers 16"
cat "$out"/[ab]/fsdp_runs.jsonl > "$out/fsdp_runs.jsonl" 2>/dev/null
