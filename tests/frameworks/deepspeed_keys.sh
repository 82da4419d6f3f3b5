#!/usr/bin/env bash
# launch --format deepspeed's ds_config.json against DeepSpeed's config definitions at 38327e07
# (v0.16.4+; tests/data/deepspeed/config_names.txt): the top level and the fp16/bf16 and
# activation_checkpointing sections against the constants deepspeed/runtime reads them by, the
# zero_optimization section and its offload sections against the pydantic models' fields and
# aliases (meson test launch-deepspeed-keys).
#   deepspeed_keys.sh PARPLAN SOURCE_ROOT
set -u
parplan=$1 src=$2
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pp-ds-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
w="--framework deepspeed --gpu h100-sxm --gpus-per-node 8 --gpus 16 --gbs 64"
cases=(
  "z0|--model gpt3-1.3b $w --mbs 4 --zero 0 --recompute none"
  "z1-fp16|--model llama3-8b $w --mbs 1 --zero 1 --precision fp16 --recompute full"
  "z2-offload-opt|--model llama3-8b $w --mbs 1 --zero 2 --offload optimizer --recompute full"
  "z3-offload-params|--model llama3-70b $w --mbs 1 --zero 3 --offload params --recompute full"
  "z3-tp|--model llama3-8b $w --mbs 2 --zero 3 --tp 2 --recompute selective"
)
. "$src/tests/frameworks/launch_cases.sh"
lc_write deepspeed ds_config.json "${cases[@]}"
m=deepspeed.runtime
out=$(python3 "$src/tests/frameworks/pyconfig_names.py" check-json "$src/tests/data/deepspeed/config_names.txt" \
    --section "=const:$m.constants:+const:$m.zero.config:ZERO_OPTIMIZATION+const:$m.activation_checkpointing.config:ACT_CHKPT" \
    --section "bf16=const:$m.constants:BFLOAT16_" --section "fp16=const:$m.constants:FP16_" \
    --section "zero_optimization=class:$m.zero.config:DeepSpeedZeroConfig" \
    --section "zero_optimization.offload_optimizer=class:$m.zero.offload_config:DeepSpeedZeroOffloadOptimizerConfig" \
    --section "zero_optimization.offload_param=class:$m.zero.offload_config:DeepSpeedZeroOffloadParamConfig" \
    --section "activation_checkpointing=const:$m.activation_checkpointing.config:ACT_CHKPT_" "${files[@]}")
lc_done "$out" $?
