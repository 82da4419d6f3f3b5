#!/bin/sh
# How the committed profiles were measured on the lent GPU machines (see NOTES.md):
#   probes/device_run.sh TAG [PROBES...]   writes $OUT/TAG.yaml, TAG-table.txt, TAG-err.txt,
#                                          TAG-cudnn.log, TAG-torch.jsonl
# Runs parplan-probe (the binary carried in .devbin/, or one built here by build_device.sh),
# then probes/torch_ref.py for PyTorch's figures on the same GPU. NVLink multicast stays off.
set -u
tag=$1
shift
out=${OUT:-/tmp/pp_out}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=index,name,memory.total,clocks.max.sm,clocks.sm,driver_version --format=csv,noheader
# the CUDA libraries PyTorch ships as wheels (cuDNN, NCCL, cuBLAS) when the toolkit lacks them
sp=$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)
libdirs=$(find "$sp/nvidia" -name 'lib*.so*' 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="${libdirs}${LD_LIBRARY_PATH:-}"
B=.devbin/parplan-probe
if ! "$B" --count >/dev/null 2>&1; then
    echo "carried binary does not run here:"; ldd "$B" | grep "not found"
    probes/build_device.sh /tmp/bd && B=/tmp/bd/parplan-probe
fi
ldd "$B" | grep -E "cublasLt|cudnn|nccl" | sed 's/ (0x.*//'
# where each layer's time goes (stderr), see NOTES.md
export PARPLAN_PROBE_TRACE=1
# clocks, power and temperature every 250 ms while the probes run (the GEMM figures depend on them)
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 250 \
    >"$out/$tag-smi.csv" 2>/dev/null &
smi=$!
t0=$(date +%s.%N)
timeout 400 "$B" "$@" -o "$out/$tag.yaml" >"$out/$tag-table.txt" 2>"$out/$tag-err.txt"
rc=$?
t1=$(date +%s.%N)
kill "$smi" 2>/dev/null
echo "parplan-probe $* : exit $rc, $(awk "BEGIN{print $t1 - $t0}") s wall"
tail -c 2500 "$out/$tag-err.txt"
# the layer again with autotuned GEMMs (not the profile: frameworks run the heuristic's first)
if [ "${PP_AUTOTUNE:-1}" = 1 ]; then
    PARPLAN_PROBE_AUTOTUNE=1 timeout 200 "$B" layer -q >"$out/$tag-autotune.txt" 2>&1
    echo "autotuned layer exit $?"
fi
unset PARPLAN_PROBE_TRACE
if [ "${PP_TORCH:-1}" = 1 ]; then
    timeout 300 python3 probes/torch_ref.py ${PP_TORCH_PARTS:-} >"$out/$tag-torch.jsonl" 2>"$out/$tag-torch-err.txt"
    echo "torch_ref exit $?"
    tail -c 600 "$out/$tag-torch-err.txt"
fi
