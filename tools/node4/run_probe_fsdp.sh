#!/usr/bin/env bash
# Device side, third call on a node of 4 GPUs: memory outside the allocator, plan --probe on the
# node for the dense and the MoE workload of dense_*.csv / moe.csv, then the FSDP2 runs of
# tools/fsdp/configs_node4.csv until the deadline.
#   bash tools/node4/run_probe_fsdp.sh DEADLINE_S     (carry build-dev/devrun: device_moe_probe.sh --prepare)
# Writes $OUT/node4_probe.tgz (mem_outside.txt, plans as JSON + stderr, probe cache, log) and
# run_fsdp.sh's $OUT/fsdp_runs.jsonl and $OUT/fsdp_logs.tgz.
set -u
deadline=${1:-420}
out=${OUT:-/tmp/node4_out}
w=$out/node4_probe
mkdir -p "$w/plans"
t0=$SECONDS
. tools/node4/device_env.sh
( timeout -k 5 200 env PP_GENCODE="-gencode=arch=compute_90a,code=sm_90a" sh probes/build_device.sh "$w/bd" > "$w/build.log" 2>&1; echo "build exit $?" >> "$w/build.log" ) &
build=$!

# 1. memory outside PyTorch's allocator, by world size
for n in 1 2 4; do
    timeout 90 torchrun --standalone --nproc_per_node $n tools/node4/mem_outside.py 2>&1 | grep -E "MEM_OUTSIDE|Error" >> "$w/mem_outside.txt"
done
echo "mem_outside done after $((SECONDS - t0)) s"; grep -c MEM_OUTSIDE "$w/mem_outside.txt"

# 2. plan --probe 8 on the node
wait $build
tail -2 "$w/build.log"
export PARPLAN_PROBE=$w/bd/parplan-probe
"$PARPLAN_PROBE" --count >> "$log" 2>&1 || echo "parplan-probe does not run" | tee -a "$log"
W="--gpu $gpu --gpus 4 --gpus-per-node 4 --attention unfused --impl local --probe 8 --top 8 --json"
plan() { # name, then the plan's arguments
    local name=$1; shift
    local s=$SECONDS
    timeout -k 5 150 "$P" plan "$@" > "$w/plans/$name.json" 2> "$w/plans/$name.err"
    echo "plan $name: exit $? in $((SECONDS - s)) s" | tee -a "$log"
}
plan dense --model llama3-8b --seq 4096 --gbs 8 $W --profile tests/data/profiles/h200x2-megatron-local.yaml
plan moe --model tests/data/megatron/models/moe-8x.yaml --seq 4096 --gbs 16 $W --profile tests/data/profiles/h200-megatron-local-moe.yaml
cp "$PARPLAN_CACHE" "$w/" 2>/dev/null
rm -rf "$w/bd"
tar czf "$out/node4_probe.tgz" -C "$out" node4_probe
echo "probe part done after $((SECONDS - t0)) s"

# 3. FSDP2 runs to the deadline
left=$((deadline - (SECONDS - t0)))
CONFIGS=tools/fsdp/configs_node4.csv bash tools/fsdp/run_fsdp.sh "$left"
tar czf "$out/node4_probe.tgz" -C "$out" node4_probe && rm -rf "$w"
echo "all done after $((SECONDS - t0)) s"
