#!/usr/bin/env bash
# Device-side: tools/fsdp/saved_tensors.py's reading of what a compiled block keeps for its backward,
# for each argument set given (one torchrun launch each, two ranks), into $OUT/saved.jsonl (the
# SAVED_RESULT lines) and $OUT/saved_logs/ (each launch's log).
#   bash tools/fsdp/run_saved.sh "--float8 tensorwise" "--float8 rowwise --tp 2" ...
set -u
out=${OUT:-/tmp/saved_out}
mkdir -p "$out/saved_logs"
: > "$out/saved.jsonl"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PYTORCH_ALLOC_CONF=${PYTORCH_ALLOC_CONF:-expandable_segments:True}
i=0
for a in "$@"; do
  i=$((i + 1))
  log="$out/saved_logs/$i.log"
  echo "# $a" > "$log"
  # shellcheck disable=SC2086 # each argument set is split into its flags on purpose
  timeout 240 torchrun --standalone --nproc_per_node 2 tools/fsdp/saved_tensors.py $a >> "$log" 2>&1
  echo "saved $i ($a): exit $?"
  grep '^SAVED_RESULT ' "$log" | sed 's/^SAVED_RESULT //' >> "$out/saved.jsonl"
done
