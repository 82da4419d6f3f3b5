#!/bin/sh
# Build parplan-probe with nvcc alone (no meson), for a machine that has the CUDA toolkit but not
# meson or the planner's dependencies (libyaml, GLPK): the lent GPU machines. The libraries are
# looked for next to nvcc, then in a Python environment's nvidia-* wheels (PyTorch ships cuDNN,
# NCCL and cuBLAS that way).
#   probes/build_device.sh [OUTDIR]     -> OUTDIR/parplan-probe (default build-device/)
set -eu
src=$(cd "$(dirname "$0")" && pwd)
out=${1:-build-device}
mkdir -p "$out"
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
root=$(dirname "$(dirname "$nvcc")")

# directories holding lib$1.so*, first match wins
find_lib() {
    for d in "$root/lib64" "$root/lib" "$root/targets/x86_64-linux/lib" /usr/lib/x86_64-linux-gnu; do
        ls "$d"/lib"$1".so* >/dev/null 2>&1 && { echo "$d"; return; }
    done
    py=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null || true)
    for sp in $py; do
        d=$(ls -d "$sp"/nvidia/*/lib 2>/dev/null | while read -r x; do ls "$x"/lib"$1".so* >/dev/null 2>&1 && echo "$x"; done | head -1)
        [ -n "$d" ] && { echo "$d"; return; }
    done
}
find_inc() {
    for d in "$root/include" "$root/targets/x86_64-linux/include"; do
        [ -f "$d/$1" ] && { echo "$d"; return; }
    done
    py=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null || true)
    for sp in $py; do
        f=$(ls "$sp"/nvidia/*/include/"$1" 2>/dev/null | head -1)
        [ -n "$f" ] && { dirname "$f"; return; }
    done
}

libs="" incs="" rpath="" have_cudnn=0 have_nccl=0 have_cublas=0
for l in cublasLt cudnn nccl cublas; do
    d=$(find_lib $l)
    case $l in cublasLt) h=cublasLt.h ;; cudnn) h=cudnn.h ;; nccl) h=nccl.h ;; cublas) h=cublas_api.h ;; esac
    i=$(find_inc $h)
    if [ -n "$d" ] && [ -n "$i" ]; then
        so=$(ls "$d"/lib$l.so* | head -1)
        libs="$libs $so"
        incs="$incs -I$i"
        rpath="$rpath -Xlinker -rpath=$d"
        [ $l = cudnn ] && have_cudnn=1
        [ $l = nccl ] && have_nccl=1
        # the moe probe's grouped experts: cublasGemmGroupedBatchedEx (cuBLAS >= 12.5)
        [ $l = cublas ] && grep -q cublasGemmGroupedBatchedEx "$i/cublas_api.h" && have_cublas=1
        echo "build_device: $l: $so" >&2
    elif [ $l = cublasLt ]; then
        echo "build_device: cuBLASLt not found" >&2
        exit 1
    else
        echo "build_device: $l not found, built without it" >&2
    fi
done
cat >"$out/probe_config.h" <<EOF
#define PP_VERSION "0.1.0"
#define PP_HAVE_CUDNN $have_cudnn
#define PP_HAVE_NCCL $have_nccl
#define PP_HAVE_MPI 0
#define PP_HAVE_CUBLAS $have_cublas
EOF
# PP_GENCODE: the architectures (default Hopper and Ampere; the device script builds Hopper only)
flags="-std=c++17 -O2 -lineinfo --expt-relaxed-constexpr ${PP_GENCODE:--gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_80,code=sm_80}"
# the sources: sources.txt, the one list meson.build reads too ("c FILE" and "probe FILE" lines)
objs="" pids=""
while read -r _part f; do
    [ -n "$f" ] || continue
    o="$out/${f%.*}.o"
    case $f in
    *.cu) "$nvcc" $flags -I"$src" -I"$out" $incs -c "$src/$f" -o "$o" & ;;
    *.c) cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DPP_PROBE_VERSION='"0.1.0"' -I"$src" -I"$out" \
        -c "$src/$f" -o "$o" & ;;
    *) echo "build_device: $src/sources.txt: $f is neither .c nor .cu" >&2; exit 1 ;;
    esac
    pids="$pids $!"
    objs="$objs $o"
done < "$src/sources.txt"
# every compile must succeed: wait on each (a bare wait returns 0 whatever they returned)
for p in $pids; do wait "$p" || { echo "build_device: a compile failed" >&2; exit 1; }; done
"$nvcc" -o "$out/parplan-probe" $objs $libs $rpath -ldl -lm
echo "build_device: $out/parplan-probe" >&2
