#!/bin/sh
# A stand-in for parplan-probe (tests of plan --probe without a GPU): answers --count, and writes a
# profile for `layer` (also --no-mlp), `nccl`, `optimizer`, `moe` and `mla` with figures from a formula,
# so that the plumbing (arguments, parsing, cache, composition, re-ranking, interruption) is tested exactly.
#   FAKE_PROBE_GPUS     visible GPUs (default 2; 0: none)
#   FAKE_PROBE_DEVICE   device name (default "NVIDIA H200")
#   FAKE_PROBE_LOG      append one line per measuring call: "layer mbs=B tp=LIST" (" no-mlp" added
#                       without the MLP, " ffn=F" with --ffn) / "nccl n=N" / "optimizer params=LIST" /
#                       "moe hidden=H experts=E topk=K moe_ffn=F shared_ffn=S tokens=LIST ep=N impl=I" /
#                       "mla hidden=H heads=A q=Q kv=C nope=N rope=R v=V seq=S mbs=B tp=LIST"
#   FAKE_PROBE_KILL_AT  on the measuring call number N (counted in the log), SIGINT the caller
#   FAKE_PROBE_FAIL_LAYER=1   the layer probe fails (exit 1, one line)
#   FAKE_PROBE_SLEEP    seconds every measuring call takes
#   FAKE_PROBE_OOM_TP   the layer at this TP size runs out of GPU memory: an `oom` record, no row
# Layer figures: fwd_ms = 24 b s h^2 / tp / 400 TFLOP/s (+ 0.1 ms), fwdbwd = 3 fwd; without the MLP
# 8 b s h^2 / tp / 400 TFLOP/s + 0.05 ms; busbw 300 GB/s;
# optimizer: one AdamW step over N parameters at 30 bytes each and 3 TB/s: ms = 30 N / 3e12 * 1e3;
# moe: experts 6 T K h F / 400 TFLOP/s + 0.004 ms per local expert (E / ep), shared 6 T h S / 400
# TFLOP/s, fwd = experts + shared + 0.03 ms, fwdbwd = 3 fwd; parts router, permute, unpermute 0.01 ms,
# fc1 / act / fc2 0.5 / 0.2 / 0.3 of the experts, shared, the backward's parts twice those;
# mla: fwd_ms = 10 b s h^2 / tp / 400 TFLOP/s + 0.05 ms, fwdbwd = 3 fwd.
set -eu
if [ "${1:-}" = "--count" ]; then
    echo "${FAKE_PROBE_GPUS:-2}"
    exit 0
fi
what="" out="" hidden=0 heads=0 seq=0 mbs=1 tps=1 gpus=2 params=100000000,1000000000 nomlp=0 ffn=""
experts=0 topk=0 moeffn=0 shared=0 tokens=4096 ep=1 impl=both q=0 kvr=512 nope=128 rope=64 vd=128 attn=auto
while [ $# -gt 0 ]; do
    case $1 in
    layer | nccl | optimizer | moe | mla) what=$1 ;;
    -o) out=$2; shift ;;
    --hidden) hidden=$2; shift ;;
    --heads) heads=$2; shift ;;
    --seq) seq=$2; shift ;;
    --mbs) mbs=$2; shift ;;
    --tp) tps=$2; shift ;;
    --gpus) gpus=$2; shift ;;
    --params) params=$2; shift ;;
    --ffn) ffn=$2; shift ;;
    --no-mlp) nomlp=1 ;;
    --experts) experts=$2; shift ;;
    --topk) topk=$2; shift ;;
    --moe-ffn) moeffn=$2; shift ;;
    --shared-ffn) shared=$2; shift ;;
    --tokens) tokens=$2; shift ;;
    --ep) ep=$2; shift ;;
    --moe-impl) impl=$2; shift ;;
    --q-lora-rank) q=$2; shift ;;
    --kv-lora-rank) kvr=$2; shift ;;
    --qk-nope-dim) nope=$2; shift ;;
    --qk-rope-dim) rope=$2; shift ;;
    --v-head-dim) vd=$2; shift ;;
    --attention) attn=$2; shift ;;
    --kv-heads | --head-dim) shift ;;
    -q | --swiglu) ;;
    *) echo "parplan: fake probe: unexpected argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
[ "${FAKE_PROBE_GPUS:-2}" -ge 1 ] || { echo "parplan: no CUDA GPU is visible (fake)" >&2; exit 1; }
log=${FAKE_PROBE_LOG:-/dev/null}
case $what in
layer)
    if [ $nomlp = 1 ]; then echo "layer mbs=$mbs tp=$tps no-mlp" >>"$log"; else echo "layer mbs=$mbs tp=$tps${ffn:+ ffn=$ffn}" >>"$log"; fi
    ;;
optimizer) echo "optimizer params=$params" >>"$log" ;;
moe) echo "moe hidden=$hidden experts=$experts topk=$topk moe_ffn=$moeffn shared_ffn=$shared tokens=$tokens ep=$ep impl=$impl" >>"$log" ;;
mla) echo "mla hidden=$hidden heads=$heads q=$q kv=$kvr nope=$nope rope=$rope v=$vd seq=$seq mbs=$mbs tp=$tps" >>"$log" ;;
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
if [ "$what" = moe ] && [ "${FAKE_PROBE_FAIL_MOE:-0}" = 1 ]; then
    echo "parplan: wrong result (fake) (probe moe)" >&2
    exit 1
fi
dev=${FAKE_PROBE_DEVICE:-NVIDIA H200}
{
    echo "gpu: \"$dev\""
    echo "measured: \"2026-01-01T00:00:00Z\""
    if [ "$what" = layer ]; then
        rows=$(for t in $(echo "$tps" | tr ',' ' '); do
            [ "$t" = "${FAKE_PROBE_OOM_TP:-}" ] && continue
            awk -v b="$mbs" -v s="$seq" -v h="$hidden" -v a="$heads" -v t="$t" -v nomlp="$nomlp" 'BEGIN {
                if (nomlp) f = 8 * b * s * h * h / t / 400e12 * 1e3 + 0.05
                else f = 24 * b * s * h * h / t / 400e12 * 1e3 + 0.1
                printf "  - {hidden: %d, heads: %d, seq: %d, mbs: %d, tp: %d, fwd_ms: %.6f, fwdbwd_ms: %.6f%s}\n", h, a, s, b, t, f, 3 * f, nomlp ? ", activation: none" : ""
            }'
        done)
        if [ -n "$rows" ]; then echo "layer:"; echo "$rows"; else echo "layer: []"; fi
    elif [ "$what" = moe ]; then
        echo "moe:"
        for T in $(echo "$tokens" | tr ',' ' '); do
            for g in loop grouped; do
                [ "$impl" = both ] || [ "$impl" = $g ] || continue
                awk -v T="$T" -v h="$hidden" -v E="$experts" -v K="$topk" -v F="$moeffn" -v S="$shared" -v ep="$ep" -v g=$g 'BEGIN {
                    x = 6 * T * K * h * F / 400e12 * 1e3 + 0.004 * E / ep
                    sh = 6 * T * h * S / 400e12 * 1e3
                    f = x + sh + 0.03
                    printf "  - {hidden: %d, experts: %d, topk: %d, moe_ffn: %d, shared_ffn: %d, tokens: %d, ep: %d, imbalance: 1, impl: %s, router: softmax, fwd_ms: %.6f, fwdbwd_ms: %.6f, ", h, E, K, F, S, T, ep, g, f, 3 * f
                    printf "fwd_parts_ms: {router: 0.01, permute: 0.01, fc1: %.6f, act: %.6f, fc2: %.6f, unpermute: 0.01, shared: %.6f}, ", 0.5 * x, 0.2 * x, 0.3 * x, sh
                    printf "bwd_parts_ms: {router: 0.02, permute: 0.02, fc1: %.6f, act: %.6f, fc2: %.6f, unpermute: 0.02, shared: %.6f}}\n", x, 0.4 * x, 0.6 * x, 2 * sh
                }'
            done
        done
    elif [ "$what" = mla ]; then
        echo "mla:"
        for t in $(echo "$tps" | tr ',' ' '); do
            awk -v b="$mbs" -v s="$seq" -v h="$hidden" -v a="$heads" -v t="$t" -v q="$q" -v c="$kvr" -v n="$nope" -v r="$rope" -v v="$vd" -v at="$attn" 'BEGIN {
                f = 10 * b * s * h * h / t / 400e12 * 1e3 + 0.05
                printf "  - {hidden: %d, heads: %d, q_lora_rank: %d, kv_lora_rank: %d, qk_nope_dim: %d, qk_rope_dim: %d, v_head_dim: %d, seq: %d, mbs: %d, tp: %d, attention: %s, fwd_ms: %.6f, fwdbwd_ms: %.6f}\n", h, a, q, c, n, r, v, s, b, t, at == "unfused" ? "unfused" : "flash", f, 3 * f
            }'
        done
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
        for op in all_reduce all_gather reduce_scatter sendrecv all_to_all; do
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
