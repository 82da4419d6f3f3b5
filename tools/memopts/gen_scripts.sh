#!/usr/bin/env bash
# Here (no GPU): write the Megatron-LM launch script of each run of tools/memopts/runs.csv with
# parplan's launch --format megatron, into tests/data/memopts/scripts/NAME.sh.
#   bash tools/memopts/gen_scripts.sh     (from the repository root, after ninja -C build)
# On the device: SET=memopts bash tools/cudagraph/run.sh DEADLINE_S (.megatron/ carried).
# The work: Llama 3 8B's shape at 8 layers on one H200, Megatron-LM's local implementation (the
# lent GPUs have no Transformer Engine), every other default kept. The f* runs are Megatron-FSDP's
# buffers (--megatron-fsdp --zero, --fsdp-double-buffer, --fsdp-unit-size, --fsdp-grads-fp32), the v*
# runs the vocabulary's padding (--vocab-divisible-by) with GPT-2's 50257 tokens.
set -eu
parplan=${PARPLAN:-build/src/parplan}
base="--model llama3-8b --gpu h200 --gpus 1 --seq 4096 --tp 1 --pp 1 --recompute none --layers 8
      --mbs 1 --gbs 4 --framework megatron --impl local --attention unfused --launch-target device-local"
out=tests/data/memopts/scripts
mkdir -p "$out"
tail -n +2 tools/memopts/runs.csv | while IFS=, read -r name _split args; do
    # shellcheck disable=SC2086
    "$parplan" launch $base $args --format megatron -q > "$out/$name.sh" 2>/dev/null
    echo "$name: $(grep -c . "$out/$name.sh") lines"
done
