#!/bin/sh
# A stand-in for parplan-probe (tests of plan --probe without a GPU): answers --count, and writes a
# profile for `layer`, `nccl` and `optimizer` with figures from a formula, so that the plumbing (arguments,
# parsing, cache, composition, re-ranking, interruption) is tested exactly.
#   FAKE_PROBE_GPUS     visible GPUs (default 2; 0: none)
#   FAKE_PROBE_DEVICE   device name (default "NVIDIA H200")
#   FAKE_PROBE_LOG      append one line per measuring call: "layer mbs=B tp=LIST" / "nccl n=N" /
#                       "optimizer params=LIST"
#   FAKE_PROBE_KILL_AT  on the measuring call number N (counted in the log), SIGINT the caller
#   FAKE_PROBE_FAIL_LAYER=1   the layer probe fails (exit 1, one line)
#   FAKE_PROBE_SLEEP    seconds every measuring call takes
#   FAKE_PROBE_OOM_TP   the layer at this TP size runs out of GPU memory: an `oom` record, no row
# Layer figures: fwd_ms = 24 b s h^2 / tp / 400 TFLOP/s (+ 0.1 ms), fwdbwd = 3 fwd; busbw 300 GB/s;
# optimizer: one AdamW step over N parameters at 30 bytes each and 3 TB/s: ms = 30 N / 3e12 * 1e3.
set -eu
if [ "${1:-}" = "--count" ]; then
    echo "${FAKE_PROBE_GPUS:-2}"
    exit 0
fi
what="" out="" hidden=0 heads=0 seq=0 mbs=1 tps=1 gpus=2 params=100000000,1000000000
while [ $# -gt 0 ]; do
    case $1 in
    layer | nccl | optimizer) what=$1 ;;
    -o) out=$2; shift ;;
    --hidden) hidden=$2; shift ;;
    --heads) heads=$2; shift ;;
    --seq) seq=$2; shift ;;
    --mbs) mbs=$2; shift ;;
    --tp) tps=$2; shift ;;
    --gpus) gpus=$2; shift ;;
    --params) params=$2; shift ;;
    --kv-heads | --ffn | --attention) shift ;;
    -q | --swiglu) ;;
    *) echo "parplan: fake probe: unexpected argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
[ "${FAKE_PROBE_GPUS:-2}" -ge 1 ] || { echo "parplan: no CUDA GPU is visible (fake)" >&2; exit 1; }
log=${FAKE_PROBE_LOG:-/dev/null}
case $what in
layer) echo "layer mbs=$mbs tp=$tps" >>"$log" ;;
optimizer) echo "optimizer params=$params" >>"$log" ;;
*) echo "nccl n=$gpus" >>"$log" ;;
esac
if [ -n "${FAKE_PROBE_KILL_AT:-}" ] && [ "$(wc -l <"$log")" -ge "$FAKE_PROBE_KILL_AT" ]; then
    kill -INT "$PPID"
    exit 130
fi
[ -z "${FAKE_PROBE_SLEEP:-}" ] || sleep "$FAKE_PROBE_SLEEP"
if [ "$what" = layer ] && [ "${FAKE_PROBE_FAIL_LAYER:-0}" = 1 ]; then
    echo "parplan: out of memory (fake) (probe layer)" >&2
    exit 1
fi
dev=${FAKE_PROBE_DEVICE:-NVIDIA H200}
{
    echo "gpu: \"$dev\""
    echo "measured: \"2026-01-01T00:00:00Z\""
    if [ "$what" = layer ]; then
        rows=$(for t in $(echo "$tps" | tr ',' ' '); do
            [ "$t" = "${FAKE_PROBE_OOM_TP:-}" ] && continue
            awk -v b="$mbs" -v s="$seq" -v h="$hidden" -v a="$heads" -v t="$t" 'BEGIN {
                f = 24 * b * s * h * h / t / 400e12 * 1e3 + 0.1
                printf "  - {hidden: %d, heads: %d, seq: %d, mbs: %d, tp: %d, fwd_ms: %.6f, fwdbwd_ms: %.6f}\n", h, a, s, b, t, f, 3 * f
            }'
        done)
        if [ -n "$rows" ]; then echo "layer:"; echo "$rows"; else echo "layer: []"; fi
    elif [ "$what" = optimizer ]; then
        echo "optimizer:"
        for n in $(echo "$params" | tr ',' ' '); do
            awk -v n="$n" 'BEGIN {
                ms = 30 * n / 3.0e12 * 1e3
                printf "  - {params: %.0f, bytes_per_param: 30, ms: %.9g, gbs: %.9g}\n", n, ms, 30 * n / (ms * 1e-3) / 1e9
            }'
        done
    else
        echo "nccl:"
        for op in all_reduce all_gather reduce_scatter sendrecv; do
            for bytes in 1048576 16777216 268435456 1073741824; do
                echo "  - {op: $op, ranks: $gpus, bytes: $bytes, busbw_gbs: 300.0}"
            done
        done
    fi
    if [ "$what" = layer ] && [ -n "${FAKE_PROBE_OOM_TP:-}" ] && echo ",$tps," | grep -q ",$FAKE_PROBE_OOM_TP,"; then
        echo "oom:"
        echo "  - {probe: \"layer\", what: \"hidden=$hidden heads=$heads seq=$seq mbs=$mbs tp=$FAKE_PROBE_OOM_TP gelu\", oom: true, need_bytes: 1073741824}"
    fi
    echo "notes: [\"fake probe\"]"
} >"$out"
