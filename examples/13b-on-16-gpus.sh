#!/bin/sh
# GPT-3 13B on 16 A100-80GB GPUs (2 nodes of 8): which parallel layout, why, and what the
# training run costs. The expected output is described in examples/README.md.
#
#   examples/13b-on-16-gpus.sh                 # parplan from $PARPLAN, else the build tree, else PATH
#   PARPLAN=/path/to/parplan examples/13b-on-16-gpus.sh
set -eu

here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${PARPLAN:-}" ]; then
    for p in "$here/../build/src/parplan" "$here/../builddir/src/parplan"; do
        if [ -x "$p" ]; then PARPLAN=$p; break; fi
    done
fi
PARPLAN=${PARPLAN:-parplan}

work="--model gpt3-13b --gpu a100-80gb --gpus 16 --gpus-per-node 8"

echo "== 1. Search: the 5 fastest layouts that fit, the pruning funnel, and why #1 wins"
# shellcheck disable=SC2086
"$PARPLAN" plan $work --top 5

echo
echo "== 2. The best layout's numbers (JSON, for scripts)"
# shellcheck disable=SC2086
best=$("$PARPLAN" plan $work --top 1 --json)
# the first candidate's field (after "candidates": the funnel has keys of the same names)
field() {
    printf '%s\n' "$best" | sed -n '/"candidates"/,$p' |
        sed -n "s/^ *\"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" | head -n 1
}
tp=$(field tp); pp=$(field pp); vpp=$(field vpp); mbs=$(field mbs); rc=$(field recompute)
dist=$(field dist_opt); sp=$(field sp)
flags="--tp $tp --pp $pp --vpp $vpp --mbs $mbs --recompute $rc"
[ "$dist" = true ] && flags="$flags --dist-opt"
[ "$sp" = true ] && flags="$flags --sp"
echo "best layout: $flags"

echo
echo "== 3. Time and cost to train on 260B tokens (20 tokens per parameter) at \$2 per GPU-hour"
# shellcheck disable=SC2086
"$PARPLAN" estimate $work $flags --tokens 260e9 --price-per-gpu-hour 2
