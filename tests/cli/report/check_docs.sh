#!/usr/bin/env bash
# The man page, --help and the bash completion agree with the binary. TAP on stdout.
#
#   check_docs.sh PARPLAN SOURCE_ROOT
#
#   - every subcommand of `parplan --help` has a --help with its options and an example that
#     starts with "parplan CMD";
#   - every option of every `parplan CMD --help` is in doc/parplan.1, and every subcommand;
#   - the man page formats without a groff warning (when groff is there);
#   - the completion offers, for "parplan CMD --", exactly the options of `parplan CMD --help`,
#     and the right values after --model, --gpu, --recompute, --format, --emit, --zero, --tp,
#     --model=, and the probe kinds.
set -u
parplan=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") src=$2
man="$src/doc/parplan.1"
n=0 failed=0
ok() { # cond-status message
    n=$((n + 1))
    if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi
}
diag() { sed 's/^/# /'; }

cmds=$("$parplan" --help | awk '/^commands:/{f=1;next} f&&/^$/{exit} f{print $1}')
[ "$(echo $cmds)" = "models check plan launch probe estimate calibrate" ]
ok $? "subcommands: $(echo $cmds)"

manpage=$(cat "$man")
for c in $cmds; do
    help=$("$parplan" "$c" --help)
    ok $? "parplan $c --help exits 0"
    echo "$help" | grep -A1 '^example:' | tail -1 | grep -q "^  parplan $c "
    ok $? "parplan $c --help has an example"
    opts=$(echo "$help" | sed -n 's/^ *\(-[a-zA-Z], \)\{0,1\}\(--[a-z0-9-]*\).*/\2/p')
    [ -n "$opts" ]
    ok $? "parplan $c --help lists $(echo "$opts" | wc -l) options"
    missing=
    for o in $opts; do
        troff=${o//-/\\-}
        grep -qF -- "$troff" <<<"$manpage" || missing="$missing $o"
    done
    [ -z "$missing" ]
    ok $? "man page documents every option of $c${missing:+ (missing:$missing)}"
    grep -q "^\.SY \"parplan $c\"" <<<"$manpage"
    ok $? "man page synopsis has $c"
done

if command -v groff >/dev/null; then
    warn=$(groff -man -Tutf8 -ww -z "$man" 2>&1)
    [ -z "$warn" ]
    ok $? "man page formats without warnings"
    [ -n "$warn" ] && echo "$warn" | head -5 | diag
fi

# ---------------------------------------------------------------- completion
# shellcheck source=/dev/null
source "$src/completions/parplan.bash"
comp() { # words... (the last is the word being completed) -> sorted candidates, one a line
    COMP_WORDS=("$parplan" "$@")
    COMP_CWORD=$#
    COMP_LINE="${COMP_WORDS[*]}"
    COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    _parplan 2>/dev/null
    printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort
}
expect() { # "want (space separated)" words...
    local want=$1
    shift
    local got
    got=$(comp "$@" | tr '\n' ' ' | sed 's/ $//')
    want=$(echo $want | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')
    [ "$got" = "$want" ]
    ok $? "complete 'parplan $*' -> '$want'${got:+ (got '$got')}"
}

complete -p parplan >/dev/null 2>&1
ok $? "completion registers for parplan"
expect "plan probe" p
expect "check" ch
expect "--help --version" --
for c in $cmds; do
    want=$("$parplan" "$c" --help | sed -n 's/^ *\(-[a-zA-Z]\), \(--[a-z0-9-]*\).*/\1 \2/p; s/^ *\(--[a-z0-9-]*\).*/\1/p' | tr '\n' ' ')
    expect "$(echo $want | tr ' ' '\n' | grep -- '^--')" "$c" --
done
expect "--model" plan --mod
expect "none selective full" check --recompute ''
expect "megatron deepspeed nemo torchrun slurm torchtitan torchtitan-toml megatron-bridge" launch --format ''
expect "megatron deepspeed nemo torchrun slurm torchtitan torchtitan-toml megatron-bridge" plan --emit ''
expect "standard device-local" launch --launch-target ''
expect "0 1 2 3" check --zero ''
expect "uniform ilp auto" plan --stages ''
expect "" check --tp ''
expect "gemm bandwidth attention layer optimizer nccl all moe mla" probe ''
expect "bandwidth" probe ba
expect "moe mla" probe m
# Catalog names (from `parplan models --json`) and files.
if "$parplan" models --json >/dev/null 2>&1; then
    got=$(cd / && comp plan --model gpt3-1)
    echo "$got" | grep -qx gpt3-13b && echo "$got" | grep -qx gpt3-1.3b && ! echo "$got" | grep -qx a100-80gb
    ok $? "complete 'parplan plan --model gpt3-1' -> catalog models ($(echo $got))"
    got=$(cd / && comp check --gpu h10)
    echo "$got" | grep -qx h100-sxm && ! echo "$got" | grep -q gpt
    ok $? "complete 'parplan check --gpu h10' -> catalog GPUs ($(echo $got))"
    got=$(cd / && comp plan --model = gpt3-17)
    [ "$got" = gpt3-175b ]
    ok $? "complete 'parplan plan --model=gpt3-17' -> gpt3-175b ($got)"
else
    echo "# parplan models --json fails: catalog names not checked"
    ok 1 "parplan models --json works (needed for catalog names)"
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pp-comp-XXXXXX")
touch "$tmp/a.html" "$tmp/b.txt"
got=$(comp check --report "$tmp/")
[ "$got" = "$tmp/a.html" ]
ok $? "complete 'check --report DIR/' -> *.html only ($got)"
got=$(comp plan --model "$tmp/b")
[ "$got" = "$tmp/b.txt" ]
ok $? "complete '--model FILE' -> files ($got)"
rm -rf "$tmp"

echo "1..$n"
[ $failed = 0 ]
