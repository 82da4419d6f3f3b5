#!/usr/bin/env bash
# Device side: plan --probe for an FSDP2 workload on a node of 4 GPUs, then the top K of its
# answer launched with tools/fsdp/train.py (plan_to_fsdp.py), so that the probe's ranking can be
# set against the measured steps. No profile: the probes alone measure this GPU.
#   bash tools/node4/run_fsdp_probe.sh DEADLINE_S [K]   (carry build-dev/devrun:
#                                                     tests/calibrate/device_moe_probe.sh --prepare)
# Writes $OUT/fsdp_probe.tgz (plan JSON + stderr, probe cache, configs, log) and run_fsdp.sh's
# $OUT/fsdp_runs.jsonl and $OUT/fsdp_logs.tgz.
set -u
deadline=${1:-540} k=${2:-5}
out=${OUT:-/tmp/node4_out}
w=$out/fsdp_probe
mkdir -p "$w"
t0=$SECONDS
. tools/node4/device_env.sh
s=$SECONDS
PP_GENCODE="-gencode=arch=compute_90a,code=sm_90a" timeout -k 5 200 sh probes/build_device.sh "$w/bd" > "$w/build.log" 2>&1
echo "probe build: exit $? in $((SECONDS - s)) s" | tee -a "$log"
export PARPLAN_PROBE=$w/bd/parplan-probe
s=$SECONDS
timeout -k 5 240 "$P" plan --framework fsdp --model llama3-8b --seq 4096 --gbs 16 --gpu "$gpu" --gpus 4 \
    --gpus-per-node 4 --pp 1 --cp 1 --probe "$k" --top "$k" --json > "$w/plan.json" 2> "$w/plan.err"
echo "plan --probe $k: exit $? in $((SECONDS - s)) s" | tee -a "$log"
tail -5 "$w/plan.err"
python3 tools/node4/plan_to_fsdp.py "$w/plan.json" 8B "$k" > "$w/configs.csv" 2>> "$log"
cat "$w/configs.csv"
cp "$PARPLAN_CACHE" "$w/" 2>/dev/null
rm -rf "$w/bd"
tar czf "$out/fsdp_probe.tgz" -C "$out" fsdp_probe
left=$((deadline - (SECONDS - t0)))
CONFIGS=$w/configs.csv bash tools/fsdp/run_fsdp.sh "$left"
tar czf "$out/fsdp_probe.tgz" -C "$out" fsdp_probe && rm -rf "$w"
echo "all done after $((SECONDS - t0)) s"
