#!/bin/sh
# The probes are built from one list of sources (probes/sources.txt), read by meson.build and by
# probes/build_device.sh, the nvcc-only build for the GPU machines.
#   build_device_test.sh SOURCE_DIR sources   every .c and .cu in probes/ is on the list, and each
#                                             listed file exists (no GPU, no nvcc needed)
#   build_device_test.sh SOURCE_DIR build     build_device.sh builds parplan-probe for Hopper, and
#                                             it answers --version and --help; skipped (77) where
#                                             nvcc is not found
set -u
src=$1 what=$2
list=$src/probes/sources.txt
case $what in
sources)
    bad=0
    for f in "$src"/probes/*.c "$src"/probes/*.cu; do
        b=$(basename "$f")
        if ! grep -q " $b\$" "$list"; then
            echo "probes/$b is not in probes/sources.txt (meson.build and build_device.sh build from that list)"
            bad=1
        fi
    done
    while read -r part f; do
        case $part in c | probe) ;; *) echo "probes/sources.txt: '$part $f' is not 'c FILE' or 'probe FILE'"; bad=1 ;; esac
        [ -f "$src/probes/$f" ] || { echo "probes/sources.txt lists $f, which is not in probes/"; bad=1; }
    done < "$list"
    [ $bad = 0 ] && echo "probes/sources.txt: $(wc -l < "$list") sources, every one of probes/ listed"
    exit $bad
    ;;
build)
    nvcc=${NVCC:-$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })}
    if [ -z "$nvcc" ]; then
        echo "no nvcc: skipped"
        exit 77
    fi
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
    if ! NVCC=$nvcc PP_GENCODE="-gencode=arch=compute_90a,code=sm_90a" sh "$src/probes/build_device.sh" "$out" > "$out/log" 2>&1; then
        cat "$out/log"
        echo "build_device.sh failed"
        exit 1
    fi
    "$out/parplan-probe" --version || { echo "the built parplan-probe does not run"; exit 1; }
    "$out/parplan-probe" --help | grep -q "^usage: parplan-probe" || { echo "parplan-probe --help: no usage line"; exit 1; }
    echo "build_device.sh built $out/parplan-probe with $nvcc"
    ;;
*)
    echo "usage: build_device_test.sh SOURCE_DIR sources|build" >&2
    exit 2
    ;;
esac
