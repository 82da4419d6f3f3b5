#!/usr/bin/env bash
# launch --format megatron-bridge against Megatron-Bridge at 067f987d and the Megatron-Core it pins
# (meson test launch-megatron-bridge-config-names): every override key a field path of
# ConfigContainer (the model's through GPTModelProvider, the dataset's through GPTDatasetConfig),
# the mixed-precision preset a registered one, the recipe one the library exports
# (tests/data/megatron_bridge/config_names.txt; LoRA's peft.* through peft/lora.py LoRA), each
# script valid bash; and the layouts it cannot
# express refused with a reason.
#   bridge_check.sh PARPLAN SOURCE_ROOT
set -u
parplan=$1 src=$2
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pp-bridge-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
w="--gpu h100-sxm --gpus-per-node 8"
cases=(
  "8b-tp2-pp2|--model llama3-8b $w --gpus 16 --gbs 128 --mbs 1 --tp 2 --pp 2 --sp --dist-opt --recompute selective --recipe megatron-bridge"
  "8b-fp8|--model llama3-8b $w --gpus 8 --gbs 64 --mbs 1 --tp 1 --dist-opt --recompute none --precision fp8 --fp8-param-gather"
  "70b-vpp-full|--model llama3-70b $w --gpus 64 --gbs 128 --mbs 1 --tp 4 --pp 4 --vpp 5 --sp --dist-opt --recompute full --no-overlap"
  "70b-block|--model llama3-70b $w --gpus 64 --gbs 128 --mbs 1 --tp 8 --pp 2 --sp --dist-opt --recompute full --recompute-layers 10 --grad-reduce-bf16"
  "qwen3-8b-cp2|--model qwen3-8b $w --gpus 16 --gbs 64 --mbs 1 --tp 2 --cp 2 --sp --dist-opt --recompute selective --recipe megatron-core-te"
  "8b-local|--model llama3-8b $w --gpus 8 --gbs 32 --mbs 2 --tp 2 --recompute full --recipe megatron-lm-local"
  "70b-lora-qkv|--model llama3-70b $w --gpus 8 --gbs 32 --seq 4096 --mbs 1 --tp 2 --pp 4 --vpp 20 --sp --dist-opt --recompute none --precision fp8 --fp8-param-gather --tp-comm-overlap --grad-reduce-bf16 --finetune lora --lora-targets qkv"
  "8b-mxfp8|--model llama3-8b --gpu b200 --gpus-per-node 8 --gpus 8 --gbs 64 --mbs 1 --tp 1 --dist-opt --recompute none --precision mxfp8 --fp8-param-gather"
  "8b-lora-all|--model llama3-8b $w --gpus 8 --gbs 64 --mbs 1 --tp 1 --dist-opt --recompute none --finetune lora --lora-rank 16"
  "8b-nvfp4-params|--model llama3-8b --gpu b200 --gpus-per-node 8 --gpus 8 --gbs 64 --mbs 1 --tp 1 --dist-opt --recompute none --precision nvfp4 --fp8-param-gather"
  "8b-full-iteration-graph|--model llama3-8b $w --gpus 8 --gbs 64 --mbs 1 --tp 1 --dist-opt --recompute none --cuda-graphs full_iteration"
  "8b-precision-aware|--model llama3-8b $w --gpus 8 --gbs 64 --mbs 1 --tp 1 --dist-opt --recompute none --precision-aware-optimizer --cross-entropy-fusion te"
  "70b-megatron-fsdp|--model llama3-70b --gpu gb200 --gpus 64 --gbs 256 --seq 8192 --mbs 2 --tp 1 --megatron-fsdp --zero 3 --fsdp-double-buffer --fsdp-unit-size 800000000 --cpu-offload-layers 40 --precision fp8 --fp8-param-gather --grad-reduce-bf16 --no-attention-mask --cross-entropy-fusion te --recompute none"
  "8b-megatron-fsdp-optim-grads|--model llama3-8b $w --gpus 8 --gbs 64 --mbs 1 --tp 1 --megatron-fsdp --zero 2 --recompute none"
)
refused=(
  "moe|--model qwen3-30b-a3b $w --gpus 8 --gbs 32 --mbs 1 --ep 8 --dist-opt --recompute full"
  "fp8-no-param-gather|--model llama3-8b $w --gpus 8 --gbs 64 --mbs 1 --dist-opt --recompute none --precision fp8"
  "mxfp8-no-param-gather|--model llama3-8b --gpu b200 --gpus-per-node 8 --gpus 8 --gbs 64 --mbs 1 --dist-opt --recompute none --precision mxfp8"
  "nvfp4-fp4-params|--model llama3-8b --gpu b200 --gpus-per-node 8 --gpus 8 --gbs 64 --mbs 1 --dist-opt --recompute none --precision nvfp4"
  "mxfp8-hopper|--model llama3-8b $w --gpus 8 --gbs 64 --mbs 1 --dist-opt --recompute none --precision mxfp8"
  "gelu|--model gpt3-13b $w --gpus 8 --gbs 64 --mbs 1 --tp 8 --sp --dist-opt --recompute full"
  "zero-without-megatron-fsdp|--model llama3-8b $w --gpus 8 --gbs 64 --mbs 1 --zero 1 --recompute none"
  "megatron-fsdp-fp32-grads|--model llama3-8b $w --gpus 8 --gbs 64 --mbs 1 --megatron-fsdp --zero 3 --fsdp-grads-fp32 --recompute none"
)
. "$src/tests/frameworks/launch_cases.sh"
lc_write megatron-bridge launch_megatron_bridge.sh "${cases[@]}"
lc_refuse megatron-bridge "${refused[@]}"
names=$src/tests/data/megatron_bridge/config_names.txt
out=$(python3 "$src/tests/frameworks/pyconfig_names.py" check-overrides "$names" \
    megatron.bridge.training.config:ConfigContainer \
    --type model=megatron.bridge.models.gpt_provider:GPTModelProvider \
    --type dataset=megatron.bridge.training.config:GPTDatasetConfig \
    --type peft=megatron.bridge.peft.lora:LoRA \
    --value mixed_precision=megatron.bridge.training.mixed_precision \
    --recipe megatron.bridge.recipes.llama.llama3 --recipe megatron.bridge.recipes.qwen.qwen3 "${files[@]}")
lc_done "$out" $?
