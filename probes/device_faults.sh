#!/bin/sh
# The probes under faults on the lent GPU machines (see NOTES.md "Faults").
#   probes/device_faults.sh        writes $OUT/faults.log (the transcript) and $OUT/oom-*.yaml
# Runs the carried .devbin/parplan-probe (probes/build_device.sh .devbin, or built here when it
# does not run), .devbin/pp_gpu_hog (nvcc tests/probes/gpu_hog.cu) and .devbin/faults_gpu (cc
# tests/probes/faults_gpu.c: the gpu-suite test itself). NVLink multicast stays off.
set -u
out=${OUT:-/tmp/pp_out}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
sp=$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)
libdirs=$(find "$sp/nvidia" -name 'lib*.so*' 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="${libdirs}${LD_LIBRARY_PATH:-}"
B=.devbin/parplan-probe
HOG=.devbin/pp_gpu_hog
now() { date +%s.%N; }
# one command: echo it, run it (bounded), its exit status and wall time
run() {
    echo
    echo "\$ $*"
    t0=$(now)
    timeout 120 "$@"
    rc=$?
    echo "[exit $rc, $(awk "BEGIN{printf \"%.1f\", $(now) - $t0}") s wall]"
}
{
    echo "# parplan-probe under faults, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "# NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE TORCH_SYMM_MEM_DISABLE_MULTICAST=$TORCH_SYMM_MEM_DISABLE_MULTICAST NVSHMEM_DISABLE_NVLS=$NVSHMEM_DISABLE_NVLS"
    nvidia-smi --query-gpu=index,name,memory.total,memory.used,compute_mode,driver_version --format=csv,noheader
    if ! "$B" --count >/dev/null 2>&1; then
        echo "carried binary does not run here:"; ldd "$B" | grep "not found"
        probes/build_device.sh /tmp/bd >/dev/null 2>&1 && B=/tmp/bd/parplan-probe
    fi
    ldd "$B" | grep -E "cublasLt|cudnn|nccl" | sed 's/ (0x.*//'
    echo "GPUs: $("$B" --count)"

    echo
    echo "## 1. OOM forced by the test cap: every buffer over 4 MiB fails as an allocation would"
    run env PARPLAN_PROBE_MAX_BYTES=4M "$B" gemm --quick -q -o "$out/oom-gemm.yaml"
    echo "# the profile's oom records:"
    sed -n '/^oom:/,/^notes:/p' "$out/oom-gemm.yaml"

    echo
    echo "## 2. real OOM: a ballast leaves 1 GiB; a Llama-like layer at TP 1 (~1.4 GB) and TP 8 (~0.35 GB)"
    run "$B" layer -q -o "$out/oom-layer.yaml" --hidden 4096 --heads 32 --seq 2048 --mbs 1 --tp 1,8 --mem-limit-gib 1
    sed -n '/^oom:/,/^notes:/p' "$out/oom-layer.yaml"

    echo
    echo "## 3. a hung collective on the GPU: rank 1 skips its first timing all_reduce; watchdog at 5 s"
    run env PARPLAN_PROBE_INJECT_HANG=1 "$B" nccl --quick -q --timeout-s 5
    echo
    echo "## 3a. a hang in the host: rank 1 skips the very first launch (before any connection)"
    run env PARPLAN_PROBE_INJECT_HANG=connect "$B" nccl --quick -q --timeout-s 5
    echo
    echo "## 3b. the GPUs right after: a clean nccl --quick, and the full sweep (compare tests/data/profiles/h200x2-nvlink.yaml)"
    run "$B" nccl --quick -q
    run "$B" nccl -q -o "$out/nccl-full.yaml"

    echo
    echo "## 4. a GPU that is not there"
    run "$B" gemm --quick --gpu-index 7

    echo
    echo "## 5. a busy GPU: pp_gpu_hog holds all but 256 MiB of GPU 0"
    rm -f /tmp/hogin
    mkfifo /tmp/hogin
    "$HOG" 0 256 </tmp/hogin >/tmp/hog.out 2>&1 &
    hog=$!
    exec 3>/tmp/hogin # it holds the memory until this closes
    for i in $(seq 1 100); do grep -q held /tmp/hog.out 2>/dev/null && break; sleep 0.1; done
    echo "pp_gpu_hog (pid $hog): $(cat /tmp/hog.out)"
    nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv,noheader
    run "$B" gemm --quick --gpu-index 0
    run "$B" nccl --quick
    exec 3>&-
    wait "$hog"
    echo "pp_gpu_hog let go (exit $?)"

    echo
    echo "## 6. the gpu-suite test (tests/probes/faults_gpu.c, built with cc)"
    t0=$(now)
    PARPLAN_PROBE_EXE=$B PARPLAN_GPU_HOG=$HOG timeout 300 .devbin/faults_gpu
    echo "[faults_gpu exit $?, $(awk "BEGIN{printf \"%.1f\", $(now) - $t0}") s wall]"
} 2>&1 | tee "$out/faults.log"
