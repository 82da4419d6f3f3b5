#!/usr/bin/env bash
# Here (no GPU): write the Megatron-LM launch script of each run of runs.csv with parplan's
# launch --format megatron, into tests/data/cudagraph/scripts/NAME.sh.
#   bash tools/cudagraph/gen_scripts.sh     (from the repository root, after ninja -C build)
# The work: Llama 3 8B's shape at 4-16 layers (--layers, per run) on one H200, Megatron-LM's local
# implementation (the lent GPUs have no Transformer Engine), every other default kept.
set -eu
base="--model llama3-8b --gpu h200 --gpus 1 --seq 4096 --tp 1 --pp 1 --recompute none
      --framework megatron --impl local --attention unfused --launch-target device-local"
out=tests/data/cudagraph/scripts
mkdir -p "$out"
tail -n +2 tools/cudagraph/runs.csv | while IFS=, read -r name _split args; do
    # shellcheck disable=SC2086
    build/src/parplan launch $base $args --format megatron -q > "$out/$name.sh" 2>/dev/null
    echo "$name: $(grep -c . "$out/$name.sh") lines"
done
