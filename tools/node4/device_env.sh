# Sourced by the device-side scripts that run plan --probe on the node (run_probe_fsdp.sh,
# run_fsdp_probe.sh), from the repository root, with $w their work folder: the environment of the
# lent machines (NVLink multicast off, the CUDA libraries PyTorch ships as wheels, the carried planner
# libraries of build-dev/devrun), the probe cache in $w, the GPU inventory in $w/log.txt, and
# P (the carried parplan) and gpu (h200, or h100-sxm on GPUs under 100 GB) for the plans.
export CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
sp=$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)
libdirs=$(find "$sp/nvidia" -name 'lib*.so*' 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="$PWD/build-dev/devrun/lib:${libdirs}${LD_LIBRARY_PATH:-}"
export PARPLAN_MODELS_DIR="$PWD/models.d" PARPLAN_CACHE="$w/probe-cache.yaml"
P=build-dev/devrun/parplan
log=$w/log.txt
nvidia-smi --query-gpu=index,name,memory.total,clocks.max.sm,power.limit,driver_version --format=csv,noheader | tee "$log"
mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
gpu=h200
[ "${mib:-0}" -lt 100000 ] && gpu=h100-sxm
