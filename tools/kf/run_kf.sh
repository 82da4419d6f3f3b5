#!/usr/bin/env bash
# Device-side driver: run the rows of tools/kf/configs.csv with KempnerForge's own scripts/train.py
# (through tools/kf/train_nosave.py, which only drops its checkpoint saves)
# (its tree unpacked in .kf/, git-ignored: `git -C <KempnerForge clone at 5666d0d16153> archive HEAD
# kempnerforge scripts configs pyproject.toml | tar -x -C .kf`), each as its own torchrun launch,
# with the arguments of its moe_packed benchmark (benchmarks/moe_packed/moe_packed_bench.sh:
# MOE_MODEL_BASE, TRAIN, TRAIN_COMMON; expandable segments as its srun exports them).
#
#   [ONLY=name,name] bash tools/kf/run_kf.sh [deadline_s]      (from the repository root)
#
# Writes $OUT/kf/<name>.log (the launch's output: KempnerForge's "[step N] ... mem=... step_time=..."
# lines), $OUT/kf/<name>/peak.<rank>.json (max allocated / reserved bytes, tools/kf/sitecustomize.py)
# and, for rows with snap 1, $OUT/kf/<name>.snap.json (what was live at rank 0's allocated peak).
set -u
deadline=${1:-540}
out=${OUT:-/tmp/kf_out}/kf
configs=${CONFIGS:-tools/kf/configs.csv}
root=$(pwd)
start=$(date +%s)
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
# torchrun sets 1; KempnerForge's srun gives each rank 4 CPUs (PyTorch then uses 4): the model is built
# and initialised on the CPU, 100-200 s per launch at 1 thread
export OMP_NUM_THREADS=4
export PYTHONPATH="$root/tools/kf:$root/.kf"
ngpu=$(python3 -c 'import torch; print(torch.cuda.device_count())')
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
} > "$out/gpus.txt" 2>&1
echo "kf driver: $ngpu GPU(s), deadline ${deadline} s"
model_base="--model.dim=2048 --model.n_heads=16 --model.n_kv_heads=4 --model.vocab_size=128256 --model.ffn_dim_multiplier=1.3 --model.max_seq_len=4096 --model.rope_theta=500000.0 --model.moe_top_k=2 --model.moe_frequency=1 --model.moe_router=softmax_topk --model.moe_aux_loss_weight=0.01 --model.moe_capacity_factor=0.0"
train="--train.seed=42 --train.grad_clip_norm=1.0 --optimizer.lr=3e-4 --optimizer.fused=true --scheduler.warmup_steps=5"
common="--metrics.log_interval=1 --metrics.enable_wandb=false --metrics.enable_tensorboard=false --checkpoint.interval=99999"
while IFS=, read -r -u 3 name gpus experts layers batch steps snap aux _rest; do
  [[ -z "$name" || "$name" == \#* || "$name" == name ]] && continue
  [[ -n "${ONLY:-}" && ",$ONLY," != *",$name,"* ]] && continue
  left=$(( deadline - ($(date +%s) - start) ))
  if (( gpus > ngpu )); then echo "kf $name: skipped, needs $gpus GPUs"; continue; fi
  if (( left < 60 )); then echo "kf $name: skipped, ${left} s left"; continue; fi
  packed="--model.moe_packed_experts=true"
  (( experts == 0 )) && packed=""
  snapenv=()
  (( snap == 1 )) && snapenv=(KF_SNAP="$out/$name.snap.json")
  (( aux == 0 )) && snapenv+=(KF_NO_AUX=1)
  t0=$(date +%s)
  (cd "$out" && env KF_PEAK_OUT="$out/$name" "${snapenv[@]}" timeout $(( left - 10 < 240 ? left - 10 : 240 )) \
    torchrun --standalone --nproc_per_node="$gpus" "$root/tools/kf/train_nosave.py" "$root/.kf/scripts/train.py" "$root/.kf/configs/train/debug.toml" \
      $model_base --model.n_layers="$layers" --model.num_experts="$experts" $packed $train \
      --train.max_steps="$steps" --train.batch_size="$batch" --train.seq_len=4096 --train.grad_accum_steps=1 \
      --train.compile_model=false --train.mixed_precision=bf16 --train.activation_checkpointing=full \
      --distributed.tp=1 --distributed.ep=1 --distributed.dp_shard="$gpus" $common) > "$out/$name.log" 2>&1
  rc=$?
  echo "kf $name: exit $rc after $(( $(date +%s) - t0 )) s; $(grep -o '\[step [0-9]*\].*' "$out/$name.log" | tail -1)"
done 3< "$configs"
