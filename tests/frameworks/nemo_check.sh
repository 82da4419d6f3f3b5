#!/usr/bin/env bash
# launch --format nemo (legacy NeMo 1.x) against the keys NeMo v1.23.0 accepts, with Megatron-Core
# 0.5.0's TransformerConfig fields (tests/data/nemo/nemo1_gpt_keys.txt; meson test
# launch-nemo-keys); and what Megatron-Core 0.5.0 has no field for refused with the reason.
#   nemo_check.sh PARPLAN SOURCE_ROOT
set -u
parplan=$1 src=$2
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pp-nemo-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
w="--gpu h100-sxm --gpus-per-node 8"
cases=(
  "8b-tp2-pp2|--model llama3-8b $w --gpus 16 --gbs 128 --mbs 1 --tp 2 --pp 2 --sp --dist-opt --recompute selective"
  "70b-vpp-block|--model llama3-70b $w --gpus 64 --gbs 128 --mbs 1 --tp 4 --pp 4 --vpp 5 --sp --dist-opt --recompute full --recompute-layers 10 --optimizer-dtype bf16 --grad-reduce-bf16"
  "gpt3-fp8-overlap|--model gpt3-13b $w --gpus 16 --gbs 64 --mbs 1 --tp 4 --sp --dist-opt --recompute full --precision fp8 --tp-comm-overlap --dropout 0.1 --no-bias-act-fusion"
  "mixtral-allgather|--model mixtral-8x7b $w --gpus 16 --gbs 64 --mbs 1 --ep 8 --dist-opt --recompute full --moe-dispatcher allgather --moe-grouped-gemm"
  "fp16-no-dist-opt|--model llama2-7b $w --gpus 8 --gbs 64 --mbs 2 --tp 2 --sp --recompute none --precision fp16"
)
refused=(
  "qwen3-qk-norm|--model qwen3-8b $w --gpus 8 --gbs 64 --mbs 1 --tp 2 --sp --dist-opt"
  "mixtral-alltoall|--model mixtral-8x7b $w --gpus 16 --gbs 64 --mbs 1 --ep 8 --dist-opt --recompute full"
  "deepseek-mla|--model deepseek-v3 $w --gpus 256 --gbs 512 --mbs 1 --pp 8 --ep 32 --dist-opt --recompute full"
)
. "$src/tests/frameworks/launch_cases.sh"
lc_write nemo nemo_overrides.yaml "${cases[@]}"
lc_refuse nemo "${refused[@]}"
out=$(python3 "$src/tests/frameworks/nemo1_keys.py" check "$src/tests/data/nemo/nemo1_gpt_keys.txt" "${files[@]}")
lc_done "$out" $?
