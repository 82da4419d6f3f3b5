#!/usr/bin/env bash
# Device-side: one run list in passes, each pass its rows with its own train.py flags (a --layers
# cut, --profile, a loss), run by run_fsdp.sh one after another within one deadline. Pass i writes
# $OUT/<a, b, c, ...>/ (its fsdp_runs.jsonl and fsdp_logs.tgz); then every pass's records are
# gathered in $OUT/fsdp_runs.jsonl. A pass with a minute or less left is skipped.
#   CONFIGS=tools/fsdp/configs_X.csv bash tools/fsdp/run_passes.sh DEADLINE_S ROWS FLAGS [ROWS FLAGS ...]
# (ROWS: the pass's names, comma-separated, as run_fsdp.sh's ONLY; FLAGS: its TRAIN_ARGS)
set -u
: "${CONFIGS:?set CONFIGS to the run list}"
deadline=$1
shift
out=${OUT:-/tmp/fsdp_out}
mkdir -p "$out"
start=$(date +%s)
dirs=(a b c d e f g h)
i=0
while (( $# >= 2 )); do
  dir=${dirs[$i]}
  left=$(( deadline - ($(date +%s) - start) ))
  if (( left > 60 )); then
    OUT="$out/$dir" ONLY="$1" TRAIN_ARGS="$2" bash tools/fsdp/run_fsdp.sh "$left"
  else
    echo "pass $dir of $CONFIGS: skipped, ${left} s left"
  fi
  shift 2
  i=$((i + 1))
done
cat "$out"/[a-h]/fsdp_runs.jsonl > "$out/fsdp_runs.jsonl" 2>/dev/null
