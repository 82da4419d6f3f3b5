#!/usr/bin/env bash
# plan --probe on the MoE runs of tests/data/megatron/runs_moe_time.csv (Megatron-LM, local modules,
# one H200, tp1 pp1 dp1 ep1, mbs 1/2/4, seq 4096): each run's layout planned with --probe 1 on one
# H200, so that plan --probe's step time (the layer probe without its MLP, the moe probe's looped
# experts, the dense layer of moe-64fg, the optimizer sweep) can be set against Megatron's and the
# model's in one device call.
#
# Here, once (builds build-dev/devrun: the parplan of build/ and the shared libraries the GPU machines
# lack, libyaml and GLPK with their dependencies; build-dev/ is git-ignored, so it travels as carry):
#   bash tests/calibrate/device_moe_probe.sh --prepare [BUILD_DIR]
# On the device (one nvidia-h200; about 3 minutes, at most BUDGET_S, default 450):
#   run(kind nvidia-h200, carry [build-dev/devrun], timeout_s 540,
#       "bash tests/calibrate/device_moe_probe.sh 450")
# parplan-probe is built there (probes/build_device.sh, nvcc for Hopper only, a few seconds) unless a
# runnable .devbin/parplan-probe or $PARPLAN_PROBE is there. Without a GPU, for a dry run of the
# plumbing: PARPLAN_BIN=build/src/parplan PARPLAN_PROBE=tests/calibrate/fake-probe.sh FAKE_PROBE_GPUS=1
# OUT=/tmp/x bash tests/calibrate/device_moe_probe.sh
#
# Writes under $OUT (5 files):
#   summary.tsv      per run: Megatron's step (iter_ms_med), plan --probe's and the model's, their
#                    errors, and the measured parts (attention, MoE MLP, its experts, dense layer, ms)
#   probe-cache.yaml the measurements ($PARPLAN_CACHE), to replay here like tests/data/calibrate/probe
#   plans.tgz        each plan's JSON and stderr
#   log.txt          the commands, the build, every plan's exit status and time
#   smi.csv          nvidia-smi clocks, power and temperature every 500 ms
set -u
csv=tests/data/megatron/runs_moe_time.csv
prof=${PROFILE:-tests/data/profiles/h200-megatron-local-moe.yaml}  # the MoE-calibrated profile: the host pace of looped experts

if [ "${1:-}" = --prepare ]; then
    bd=${2:-build}
    dst=build-dev/devrun
    [ -x "$bd/src/parplan" ] || { echo "parplan: no $bd/src/parplan: build it first (ninja -C $bd)" >&2; exit 2; }
    rm -rf "$dst"
    mkdir -p "$dst/lib"
    cp "$bd/src/parplan" "$dst/parplan"
    # the planner's libraries and theirs, not glibc's (the machine has those)
    ldd "$bd/src/parplan" | awk '$3 ~ /^\// {print $3}' |
        grep -E 'lib(yaml|glpk|colamd|amd|ltdl|gmp|suitesparseconfig|z)[-.]' | while read -r f; do cp -L "$f" "$dst/lib/"; done
    ls "$dst" "$dst/lib"
    du -sh "$dst"
    exit 0
fi

budget=${1:-450}
case $budget in '' | *[!0-9]*) echo "usage: bash tests/calibrate/device_moe_probe.sh [BUDGET_S] | --prepare [BUILD_DIR]" >&2; exit 2 ;; esac
out=${OUT:-/tmp/pp_out}
mkdir -p "$out"
work=$(mktemp -d /tmp/pp_moe_probe.XXXXXX)
mkdir -p "$work/plans"
log=$out/log.txt
t_start=$(date +%s)
: >"$log"
left() { echo $((budget - ($(date +%s) - t_start))); }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# the CUDA libraries PyTorch ships as wheels (cuDNN, NCCL, cuBLAS), and the carried planner libraries
sp=$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)
libdirs=$(find "$sp/nvidia" -name 'lib*.so*' 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="$PWD/build-dev/devrun/lib:${libdirs}${LD_LIBRARY_PATH:-}"
export PARPLAN_MODELS_DIR="$PWD/models.d" PARPLAN_CACHE="$work/probe-cache.yaml"
P=${PARPLAN_BIN:-build-dev/devrun/parplan}
{
    echo "# device_moe_probe.sh, $(date -u +%Y-%m-%dT%H:%M:%SZ), budget $budget s, commit $(git rev-parse --short HEAD 2>/dev/null)"
    nvidia-smi --query-gpu=index,name,memory.total,clocks.max.sm,power.limit,driver_version --format=csv,noheader 2>&1
    "$P" --version 2>&1 || ldd "$P" | grep "not found"
} >>"$log" 2>&1

# ---- parplan-probe
B=${PARPLAN_PROBE:-}
if [ -z "$B" ] && [ -x .devbin/parplan-probe ] && .devbin/parplan-probe --count >/dev/null 2>&1; then
    B=$PWD/.devbin/parplan-probe
fi
if [ -z "$B" ]; then
    echo "### build: probes/build_device.sh (sm_90a)" >>"$log"
    timeout -k 5 200 env PP_GENCODE="-gencode=arch=compute_90a,code=sm_90a" sh probes/build_device.sh "$work/bd" >>"$log" 2>&1
    echo "### build: exit $?" >>"$log"
    [ -x "$work/bd/parplan-probe" ] && B=$work/bd/parplan-probe
fi
if [ -z "$B" ] || ! "$B" --count >>"$log" 2>&1; then
    echo "no runnable parplan-probe: see $log" | tee -a "$log"
    exit 1
fi
export PARPLAN_PROBE=$B
ldd "$B" 2>/dev/null | grep -E "cublas|cudnn|nccl" | sed 's/ (0x.*//' >>"$log"

nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,memory.used --format=csv,noheader \
    -lms 500 >"$out/smi.csv" 2>/dev/null &
smi=$!

# ---- one plan --probe 1 per run, its layout fixed (the runs' columns: name,model,gpus,tp,pp,dp,vpp,
# mbs,gbs,seq,dist_opt,recompute,...,ep,iters,iter_ms_med)
grep -v '^#' "$csv" | tail -n +2 | while IFS=, read -r name model gpus tp pp dp vpp mbs gbs seq dopt rc _rest; do
    ep=$(echo "$_rest" | awk -F, '{print $(NF-2)}')
    l=$(left)
    if [ "$l" -lt 40 ]; then
        echo "### $name: skipped, $l s of the budget left" >>"$log"
        continue
    fi
    to=$((l - 20 < 150 ? l - 20 : 150))
    args=(plan --model "tests/data/megatron/models/$model.yaml" --gpu h200 --gpus "$gpus" --gpus-per-node "$gpus"
          --tp "$tp" --pp "$pp" --dp "$dp" --ep "$ep" --mbs "$mbs" --gbs "$gbs" --seq "$seq" --recompute "$rc"
          --attention unfused --impl local --profile "$prof" --probe 1 --probe-budget "$((to - 10))" --top 1 --json)
    [ "$dopt" = 1 ] && args+=(--dist-opt)
    [ "$vpp" -gt 1 ] 2>/dev/null && args+=(--vpp "$vpp")
    echo "### $name (timeout $to s): parplan ${args[*]}" >>"$log"
    t0=$(date +%s.%N)
    timeout -k 5 "$to" "$P" "${args[@]}" >"$work/plans/$name.json" 2>"$work/plans/$name.err"
    st=$?
    echo "### $name: exit $st in $(awk "BEGIN {printf \"%.1f\", $(date +%s.%N) - $t0}") s" >>"$log"
    tail -3 "$work/plans/$name.err" >>"$log"
done
kill "$smi" 2>/dev/null
wait "$smi" 2>/dev/null

# ---- the summary: Megatron's median step against plan --probe's and the model's
python3 - "$csv" "$work/plans" >"$out/summary.tsv" 2>>"$log" <<'EOF'
import csv, json, os, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith('#'))]
print("\t".join(["run", "model", "mbs", "megatron_ms", "probe_ms", "probe_err_pct", "model_ms", "model_err_pct",
                 "source", "attn_fwd_ms", "attn_fwdbwd_ms", "moe_fwd_ms", "moe_fwdbwd_ms", "expert_fwd_ms",
                 "expert_bwd_ms", "dense_fwd_ms", "dense_fwdbwd_ms", "layer_fwd_ms", "layer_fwdbwd_ms", "modelled"]))
ep = lambda a, b: "%+.1f" % (100.0 * (a / b - 1)) if a > 0 and b > 0 else "-"
for r in rows:
    meas = float(r["iter_ms_med"] or r["iter_ms"] or 0)
    try:
        c = json.load(open(os.path.join(sys.argv[2], r["name"] + ".json")))["candidates"][0]
    except Exception as e:
        print("\t".join([r["name"], r["model"], r["mbs"], "%.1f" % meas] + ["-"] * 16))
        continue
    pi = c.get("probe", {})
    parts = pi.get("parts", {})
    probe = 1e3 * c["step_time_s"] if c.get("source") == "probe" else 0
    model = 1e3 * pi.get("model_step_time_s", c["step_time_s"])
    f = lambda d, k: "%.4g" % d.get(k, 0)
    print("\t".join([r["name"], r["model"], r["mbs"], "%.1f" % meas, "%.1f" % probe if probe else "-", ep(probe, meas),
                     "%.1f" % model, ep(model, meas), c.get("source", "-"),
                     f(parts, "attention_fwd_ms"), f(parts, "attention_fwdbwd_ms"), f(parts, "moe_fwd_ms"),
                     f(parts, "moe_fwdbwd_ms"), f(parts, "expert_fwd_ms"), f(parts, "expert_bwd_ms"),
                     f(parts, "dense_layer_fwd_ms"), f(parts, "dense_layer_fwdbwd_ms"), f(pi, "layer_fwd_ms"),
                     f(pi, "layer_fwdbwd_ms"), pi.get("modelled", "-")]))
EOF
cat "$out/summary.tsv"
cp "$PARPLAN_CACHE" "$out/probe-cache.yaml" 2>/dev/null
tar czf "$out/plans.tgz" -C "$work" plans
echo "total $(($(date +%s) - t_start)) s of the $budget s budget" | tee -a "$log"
rm -rf "$work"
