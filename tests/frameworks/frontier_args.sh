#!/usr/bin/env bash
# check --megatron-args on the arguments of frontier recipes (Megatron-LM's FP8 Llama 3 example: FP8
# parameters, the distributed optimizer, overlapped reduce and gathers; its Megatron-FSDP DeepSeek-V3
# example: the double buffer, NCCL user buffers, HybridEP; tests/data/megatron/frontier) names
# nothing that changes memory as not modelled, and reads what each file's "# expect:" line lists
# (meson test launch-frontier-args).
#   frontier_args.sh PARPLAN SOURCE_ROOT
set -u
parplan=$1 src=$2
n=0 bad=0
ok() { n=$((n + 1)); if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; bad=$((bad + 1)); fi; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pp-frontier-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for f in "$src"/tests/data/megatron/frontier/*.args; do
    # the cluster a file's "# cluster:" line names, else 8 H100
    cl=$(sed -n 's/^# cluster: //p' "$f")
    # shellcheck disable=SC2086
    "$parplan" check --megatron-args "$f" ${cl:---gpu h100-sxm --gpus 8} >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out") err=$(cat "$tmp/err")
    # 0 fits, 1 predicted out of memory (the FP8 example's own 8 x H100 layout is: 84.2 of 79.6 GiB), 2 an error
    [ "$rc" -le 1 ]
    ok $? "$(basename "$f"): check reads it (exit $rc)"
    ! grep -q "not modelled" <<<"$err"
    ok $? "$(basename "$f"): nothing named as not modelled ($(grep -o 'not modelled.*' <<<"$err" | head -c 200))"
    # what the file's "# expect:" line says check's stack line reads from it
    exp=$(sed -n 's/^# expect: //p' "$f")
    miss=""
    IFS=';' read -ra want <<<"$exp"
    for x in "${want[@]}"; do
        x=${x# }
        grep -qF -- "$x" <<<"$out" || miss="$miss [$x]"
    done
    [ -n "$exp" ] && [ -z "$miss" ]
    ok $? "$(basename "$f"): read as '$exp'${miss:+, missing:$miss}"
done
echo "1..$n"
[ "$bad" -eq 0 ] && [ "$n" -gt 0 ]
