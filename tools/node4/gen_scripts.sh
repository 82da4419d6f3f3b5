#!/usr/bin/env bash
# Write the Megatron-LM launch scripts of a run list (dense_h200.csv, dense_h100.csv, moe.csv) with
# `parplan launch`, exactly as a user would, into tests/data/node4/scripts/<list>/NAME.sh.
#   bash tools/node4/gen_scripts.sh LIST.csv GPU [PARPLAN]     (GPU: h200 | h100-sxm)
set -euo pipefail
list=$1 gpu=$2 P=${3:-build/src/parplan}
dst=tests/data/node4/scripts/$(basename "$list" .csv)
rm -rf "$dst"
mkdir -p "$dst"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'name,command\n' > "$dst/commands.csv"
grep -v '^#' "$list" | tail -n +2 | while IFS=, read -r name slot gpus extra args; do
    # shellcheck disable=SC2086
    cmd="launch $args --gpu $gpu --gpus $gpus --gpus-per-node $gpus --attention unfused --launch-target device-local --format megatron"
    # shellcheck disable=SC2086
    "$P" $cmd -o "$tmp/$name" > /dev/null
    mv "$tmp/$name/pretrain_gpt.sh" "$dst/$name.sh"
    printf '%s,parplan %s\n' "$name" "$cmd" >> "$dst/commands.csv"
done
ls "$dst" | wc -l
