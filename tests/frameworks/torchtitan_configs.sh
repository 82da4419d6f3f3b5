#!/usr/bin/env bash
# Writes `parplan launch --format FORMAT` configs (torchtitan-toml: torchtitan.toml; torchtitan:
# parplan_torchtitan.py; each with launch_torchtitan.sh) for a spread of layouts into OUTDIR (one
# directory per case), checks that each script is valid bash, and prints the config paths. Cases
# marked toml-only are ones the current torchtitan cannot express: format torchtitan must refuse
# them with a reason. Used by the torchtitan tests in meson.build:
#   torchtitan_configs.sh PARPLAN SOURCE_ROOT OUTDIR [FORMAT]
set -eu
parplan=$1 src=$2 out=$3 fmt=${4:-torchtitan-toml}
mkdir -p "$out"
# An HF config.json (LlamaForCausalLM, the 3B shape): hf_assets_path becomes its folder.
mkdir -p "$out/hf-llama-3b"
cat > "$out/hf-llama-3b/config.json" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 3072,
 "intermediate_size": 8192, "num_attention_heads": 24, "num_hidden_layers": 28,
 "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
 "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": false,
 "hidden_act": "silu", "attention_bias": false, "mlp_bias": false, "torch_dtype": "bfloat16"}
JSON
w="--framework fsdp --gpu h200"
cases=(
  "one-gpu-3b|--model $src/tests/data/fsdp/models/llama-3.2-3b.yaml $w --gpus 1 --gbs 1 --mbs 1 --seq 8192 --zero 3 --recompute none"
  "8b-tp2-sel|--model llama3-8b $w --gpus 16 --gpus-per-node 8 --gbs 32 --mbs 1 --tp 2 --zero 3 --recompute selective"
  "8b-tp2-compile-asynctp|--model llama3-8b $w --gpus 16 --gpus-per-node 8 --gbs 32 --mbs 1 --tp 2 --zero 3 --recompute selective --compile --tp-comm-overlap"
  "70b-pp4-vpp2|--model llama3-70b $w --gpus 64 --gpus-per-node 8 --gbs 256 --mbs 1 --tp 8 --pp 4 --vpp 2 --zero 2 --recompute full"
  "8b-hsdp|--model llama3-8b $w --gpus 16 --gpus-per-node 8 --gbs 64 --mbs 2 --replicate 2 --zero 3 --recompute full --optimizer-impl foreach"
  "8b-cp2-offload|--model llama3-8b $w --gpus 8 --gbs 8 --mbs 1 --cp 2 --zero 3 --offload optimizer --recompute full"
  "toml-only:8b-every2nd|--model llama3-8b $w --gpus 8 --gbs 8 --mbs 1 --zero 3 --recompute full --recompute-layers 16"
  "8b-ddp|--model llama3-8b --framework fsdp --gpu h200 --gpus 8 --gbs 8 --mbs 1 --zero 0 --recompute full"
  "hf-3b|--model $out/hf-llama-3b/config.json $w --gpus 8 --gbs 16 --mbs 2 --zero 2 --recompute selective"
  "8b-fp8-rowwise|--model llama3-8b $w --gpus 8 --gbs 8 --mbs 1 --zero 3 --recompute selective --precision fp8 --fp8-scaling rowwise --compile"
  "toml-only:8b-fp8|--model llama3-8b $w --gpus 8 --gbs 8 --mbs 1 --zero 3 --recompute selective --precision fp8"
  "py-only:8b-chunked-loss|--model llama3-8b $w --gpus 8 --gbs 16 --mbs 2 --zero 3 --recompute none --loss cut"
  "py-only:qwen3-8b-pp2|--model qwen3-8b $w --gpus 16 --gpus-per-node 8 --gbs 64 --mbs 1 --pp 2 --zero 3 --recompute full"
)
config=torchtitan.toml
[ "$fmt" = torchtitan ] && config=parplan_torchtitan.py
for c in "${cases[@]}"; do
    name=${c%%|*} args=${c#*|} only=
    case $name in toml-only:* | py-only:*) only=${name%%:*} name=${name#*:} ;; esac
    if { [ "$only" = toml-only ] && [ "$fmt" = torchtitan ]; } || { [ "$only" = py-only ] && [ "$fmt" != torchtitan ]; }; then
        # shellcheck disable=SC2086
        if "$parplan" launch $args --format "$fmt" -o "$out/$name" -q 2>"$out/$name.err"; then
            [ "$only" = py-only ] && continue  # the legacy format may write it or not
            echo "launch --format $fmt wrote $name, which it cannot express" >&2; exit 1
        fi
        [ "$only" = py-only ] || grep -q "torchtitan" "$out/$name.err" || { cat "$out/$name.err" >&2; exit 1; }
        continue
    fi
    # shellcheck disable=SC2086
    "$parplan" launch $args --format "$fmt" -o "$out/$name" -q
    bash -n "$out/$name/launch_torchtitan.sh"
    echo "$out/$name/$config"
done
