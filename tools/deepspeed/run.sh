#!/usr/bin/env bash
# Device-side: the DeepSpeed runs of tools/deepspeed/runs.csv (the split given, or ONLY=name,name) one
# after another on this machine's GPUs within DEADLINE_S seconds, each with torchrun; records in
# $OUT/ds_runs.jsonl, each run's log in $OUT/logs/. The wheels (.whl/ds: deepspeed built without
# ops, its pure-Python needs) must be installed first (PYTHONPATH).
#   SPLIT=calibrate bash tools/deepspeed/run.sh DEADLINE_S
set -u
deadline=$1
out=${OUT:-/tmp/ds_out}
mkdir -p "$out/logs"
start=$(date +%s)
nproc=${NPROC:-$(python3 -c 'import torch; print(torch.cuda.device_count())')}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
# DeepSpeed's JIT builder (FusedAdam) cannot read an arch such as 9.0a (op_builder/builder.py sorts
# the list as integers): name the GPUs' plain arch.
export TORCH_CUDA_ARCH_LIST=${DS_ARCH:-$(python3 -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability())')}
grep -v '^#' tools/deepspeed/runs.csv | tail -n +2 | while IFS=, read -r name config shape layers seq mbs gas ckpt split; do
  if [ -n "${ONLY:-}" ]; then [[ ",$ONLY," == *",$name,"* ]] || continue
  elif [ -n "${SPLIT:-}" ] && [ "$split" != "$SPLIT" ]; then continue; fi
  left=$(( deadline - ($(date +%s) - start) ))
  if (( left < 90 )); then echo "$name: skipped, ${left} s left"; continue; fi
  ck=""; [ "$ckpt" = 1 ] && ck="--ckpt"
  echo "== $name ($(date +%T), ${left} s left)"
  timeout $(( left - 10 )) torchrun --standalone --nproc_per_node "$nproc" tools/deepspeed/train_ds.py \
    --config "tools/deepspeed/configs/$config" --shape "$shape" --layers "$layers" --seq "$seq" --mbs "$mbs" --gas "$gas" $ck \
    --steps "${STEPS:-6}" ${TRAIN_ARGS:-} --name "$name" --out "$out/ds_runs.jsonl" > "$out/logs/$name.log" 2>&1
  echo "   rc $? $(grep -E '^[a-z0-9_]+: peak' "$out/logs/$name.log" || tail -3 "$out/logs/$name.log")"
done
