#!/usr/bin/env bash
# check --megatron-args on the arguments of a frontier recipe (Megatron-LM's FP8 Llama 3 example:
# FP8 parameters, the distributed optimizer, overlapped reduce and gathers; tests/data/megatron/
# frontier) names nothing that changes memory as not modelled, and reads the FP8 parameters and
# the bf16 gradient reduction (meson test launch-frontier-args).
#   frontier_args.sh PARPLAN SOURCE_ROOT
set -u
parplan=$1 src=$2
n=0 bad=0
ok() { n=$((n + 1)); if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; bad=$((bad + 1)); fi; }
for f in "$src"/tests/data/megatron/frontier/*.args; do
    err=$("$parplan" check --megatron-args "$f" --gpu h100-sxm --gpus 8 2>&1 >/dev/null)
    rc=$?
    out=$("$parplan" check --megatron-args "$f" --gpu h100-sxm --gpus 8 2>/dev/null)
    # 0 fits, 1 predicted out of memory (the example's own 8 x H100 layout is: 84.2 of 79.6 GiB), 2 an error
    [ "$rc" -le 1 ]
    ok $? "$(basename "$f"): check reads it (exit $rc)"
    ! grep -q "not modelled" <<<"$err"
    ok $? "$(basename "$f"): nothing named as not modelled ($(grep -o 'not modelled.*' <<<"$err" | head -c 200))"
    grep -q "FP8 parameters" <<<"$out" && grep -q "bf16 gradients" <<<"$out"
    ok $? "$(basename "$f"): FP8 parameters and bf16 gradients read"
done
echo "1..$n"
[ "$bad" -eq 0 ] && [ "$n" -gt 0 ]
