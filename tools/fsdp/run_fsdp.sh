#!/usr/bin/env bash
# Device-side driver: run the rows of tools/fsdp/configs.csv one after another, each as its own
# torchrun launch of tools/fsdp/train.py under its own timeout, within a total deadline.
#
#   [ONLY=name,name] bash tools/fsdp/run_fsdp.sh [deadline_s]      (from the repository root)
#
# Writes $OUT/fsdp_runs.jsonl (one record per row: the run's FSDP_RESULT plus the launch's exit
# status, seconds and outcome, or why it was skipped) and $OUT/fsdp_logs.tgz (every launch's
# log, the GPU inventory), and prints one progress line per row.
# Rows needing more GPUs than are visible are skipped; so is a row whose micro-batch is larger
# than one that already ran out of memory in the same sweep (same everything but mbs).
# Knobs for the CPU smoke test (tools/fsdp/smoke_cpu.sh): CONFIGS=file, DEVICE=cpu (gloo, two
# ranks available), TRAIN_ARGS="extra train.py flags for every launch".
set -u
deadline=${1:-520}
out=${OUT:-/tmp/fsdp_out}
configs=${CONFIGS:-tools/fsdp/configs.csv}
device=${DEVICE:-cuda}
start=$(date +%s)
logs="$out/fsdp_logs"
jsonl="$out/fsdp_runs.jsonl"
rm -rf "$logs"
mkdir -p "$logs"
: > "$jsonl"
# NVLink SHARP / multicast off (this workplace's GPU notes); unbuffered so a killed launch
# still leaves its last lines in the log.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
# torchtitan's run_train.sh launches with expandable segments, which keeps the allocator's
# fragmentation (reserved minus allocated) small: the edge runs depend on it.
export PYTORCH_ALLOC_CONF=${PYTORCH_ALLOC_CONF:-expandable_segments:True}
RESERVE_S=15   # kept back at the end for packing the logs
MIN_RUN_S=40   # a launch needs ~20-30 s of start-up: with less left, skip the row
RUN_CAP_S=150  # no row should take more than ~60 s; a hang must not eat the whole budget

if [ "$device" = cuda ]; then
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > "$logs/gpus.txt" 2>&1
  ngpu=$(python3 -c 'import torch; print(torch.cuda.device_count())')
else
  ngpu=2
fi
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' >> "$logs/gpus.txt" 2>&1
echo "fsdp driver: $ngpu $device device(s), deadline ${deadline} s, configs $configs"

skip() {  # name reason
  printf '{"name": "%s", "launch": {"status": "skipped", "reason": "%s"}}\n' "$1" "$2" >> "$jsonl"
  echo "fsdp $1: skipped, $2"
}

declare -A oom_mbs  # sweep key -> smallest mbs that ran out of memory
while IFS=, read -r -u 3 name gpus flavor mbs seq ac raf opt rep _expect tp alloc comp accum cp _; do
  [[ -z "$name" || "$name" == \#* || "$name" == name ]] && continue
  [[ -n "${ONLY:-}" && ",$ONLY," != *",$name,"* ]] && continue
  if (( gpus > ngpu )); then skip "$name" "needs $gpus GPUs, $ngpu visible"; continue; fi
  tp=${tp:-1} alloc=${alloc:-expandable} comp=${comp:-0} accum=${accum:-1} cp=${cp:-1}
  # the allocator as the row states it: torchtitan's expandable segments, or PyTorch's default
  case $alloc in
    expandable) conf=expandable_segments:True ;;
    default) conf= ;;
    *) echo "fsdp $name: alloc must be expandable or default, not '$alloc'" >&2; exit 2 ;;
  esac
  extra=
  [[ "$comp" == 1 ]] && extra="--compile"
  key="$gpus|$flavor|$seq|$ac|$raf|$opt|$rep|$tp|$alloc|$comp|$accum|$cp"
  if [[ -n "${oom_mbs[$key]:-}" ]] && (( mbs > oom_mbs[$key] )); then
    skip "$name" "mbs ${oom_mbs[$key]} of this sweep ran out of memory"; continue
  fi
  left=$(( deadline - ($(date +%s) - start) - RESERVE_S ))
  if (( left < MIN_RUN_S )); then skip "$name" "deadline (${left} s left)"; continue; fi
  limit=$(( left < RUN_CAP_S ? left : RUN_CAP_S ))
  t0=$(date +%s)
  # timeout signals the whole process group, so torchrun's workers go too; stdin from
  # /dev/null keeps the launch away from the configs being read on fd 3.
  # shellcheck disable=SC2086
  PYTORCH_ALLOC_CONF=$conf timeout -k 10 "$limit" python3 -m torch.distributed.run --standalone --nproc_per_node "$gpus" \
    tools/fsdp/train.py --name "$name" --device "$device" --flavor "$flavor" --mbs "$mbs" \
    --seq "$seq" --ac "$ac" --reshard-after-forward "$raf" --optimizer-impl "$opt" \
    --replicate "$rep" --tp "$tp" --cp "$cp" --accum "$accum" $extra ${TRAIN_ARGS:-} > "$logs/$name.log" 2>&1 < /dev/null
  rc=$?
  line=$(python3 tools/fsdp/parse_runs.py collect --log "$logs/$name.log" --name "$name" \
         --rc "$rc" --wall-s $(( $(date +%s) - t0 )) --timeout-s "$limit" --jsonl "$jsonl")
  echo "$line"
  if [[ "$line" == "fsdp $name: oom,"* ]]; then
    if [[ -z "${oom_mbs[$key]:-}" ]] || (( mbs < oom_mbs[$key] )); then oom_mbs[$key]=$mbs; fi
  fi
done 3< "$configs"

cp "$jsonl" "$logs/"
tar czf "$out/fsdp_logs.tgz" -C "$out" fsdp_logs && rm -rf "$logs"
echo "fsdp driver: done in $(( $(date +%s) - start )) s; $(grep -c . "$jsonl") records in $jsonl"
