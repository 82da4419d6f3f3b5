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
n=0 bad=0 files=()
for c in "${cases[@]}"; do
    name=${c%%|*} args=${c#*|}
    n=$((n + 1))
    # shellcheck disable=SC2086
    if "$parplan" launch $args --format nemo -o "$tmp/$name" -q 2>"$tmp/$name.err"; then
        echo "ok $n - $name written"
        files+=("$tmp/$name/nemo_overrides.yaml")
    else
        echo "not ok $n - $name written: $(head -c 300 "$tmp/$name.err")"; bad=$((bad + 1))
    fi
done
for c in "${refused[@]}"; do
    name=${c%%|*} args=${c#*|}
    n=$((n + 1))
    # shellcheck disable=SC2086
    if "$parplan" launch $args --format nemo -o "$tmp/$name" -q 2>"$tmp/$name.err"; then
        echo "not ok $n - $name refused"; bad=$((bad + 1))
    else
        echo "ok $n - $name refused: $(head -c 200 "$tmp/$name.err" | tr '\n' ' ')"
    fi
done
out=$(python3 "$src/tests/frameworks/nemo1_keys.py" check "$src/tests/data/nemo/nemo1_gpt_keys.txt" "${files[@]}")
rc=$?
while IFS= read -r line; do
    case $line in
    "ok "*) n=$((n + 1)); echo "ok $n - ${line#* - }" ;;
    "not ok "*) n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - ${line#* - }" ;;
    esac
done <<<"$out"
echo "1..$n"
[ "$bad" -eq 0 ] && [ "$rc" -eq 0 ]
