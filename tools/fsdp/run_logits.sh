#!/usr/bin/env bash
# Device-side: the four passes of tools/fsdp/configs_logits.csv (each its own train.py flags),
# one after another within the deadline; each pass's $OUT/<pass>/fsdp_runs.jsonl, then all of them
# in $OUT/fsdp_runs.jsonl.   bash tools/fsdp/run_logits.sh [deadline_s]
set -u
deadline=${1:-500}
out=${OUT:-/tmp/fsdp_out}
start=$(date +%s)
export CONFIGS=tools/fsdp/configs_logits.csv
pass() {  # dir rows train_args
  local left=$(( deadline - ($(date +%s) - start) ))
  (( left > 60 )) || { echo "logits pass $1: skipped, ${left} s left"; return; }
  OUT="$out/$1" ONLY="$2" TRAIN_ARGS="$3" bash tools/fsdp/run_fsdp.sh "$left"
}
pass a lg_3b_s4k_b2_bf16 "--loss bf16"
pass b lg_3b_s4k_b2_bf16_keep,lg_3b_s4k_b1_none_bf16_keep "--loss bf16 --keep-logits"
pass c lg_3b_s4k_b2_up_keep "--keep-logits"
pass d lg_l8_s8k_b2_bf16_keep "--loss bf16 --keep-logits --layers 8"
cat "$out"/[abcd]/fsdp_runs.jsonl > "$out/fsdp_runs.jsonl" 2>/dev/null
