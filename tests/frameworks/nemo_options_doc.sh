#!/usr/bin/env bash
# docs/nemo-options.md against the frameworks' own key lists, and docs/cli.md against parplan's
# option table (meson test nemo-options-doc):
#   - every NeMo 1.x key of the first table is one NeMo v1.23.0's Megatron GPT accepts
#     (tests/data/nemo/nemo1_gpt_keys.txt);
#   - every Megatron-Bridge key of the second is a field path of its ConfigContainer
#     (tests/data/megatron_bridge/config_names.txt, through pyconfig_names.py check-overrides);
#   - every row's parplan column is flags of docs/cli.md, "not modelled" or "priced";
#   - every flag planner/run/request.c defines is in docs/cli.md.
#   nemo_options_doc.sh SOURCE_ROOT
set -u
src=$1
doc=$src/docs/nemo-options.md cli=$src/docs/cli.md
n=0 bad=0
ok() { n=$((n + 1)); if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; bad=$((bad + 1)); fi; }
rows() { # the table rows under heading $1: "key|parplan"
    awk -v h="$1" '/^## /{on = index($0, h) == 4} on && /^\| `/ {
        split($0, c, "|"); k = c[2]; p = c[3]; gsub(/[` ]/, "", k); gsub(/^ +| +$/, "", p); print k "|" p }' "$doc"
}
nemo=$(rows "NeMo 1.x") bridge=$(rows "Megatron-Bridge")
[ -n "$nemo" ] && [ -n "$bridge" ]
ok $? "both tables read ($(wc -l <<<"$nemo") NeMo keys, $(wc -l <<<"$bridge") Megatron-Bridge keys)"
missing=""
while IFS='|' read -r k p; do grep -qx "$k" "$src/tests/data/nemo/nemo1_gpt_keys.txt" || missing="$missing $k"; done <<<"$nemo"
[ -z "$missing" ]
ok $? "every NeMo key is NeMo v1.23.0's (not:${missing:- none})"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{ echo "OVERRIDES=("; while IFS='|' read -r k p; do echo "    $k=1"; done <<<"$bridge"; echo ")"; } >"$tmp/bridge.sh"
out=$(python3 "$src/tests/frameworks/pyconfig_names.py" check-overrides "$src/tests/data/megatron_bridge/config_names.txt" \
    megatron.bridge.training.config:ConfigContainer \
    --type model=megatron.bridge.models.gpt_provider:GPTModelProvider \
    --type peft=megatron.bridge.peft.lora:LoRA \
    --type mixed_precision=megatron.bridge.training.mixed_precision:MixedPrecisionConfig "$tmp/bridge.sh" 2>&1)
rc=$?
[ "$rc" -eq 0 ] && ! grep -q "^not ok" <<<"$out"
ok $? "every Megatron-Bridge key is a ConfigContainer field path ($(grep -c '^ok' <<<"$out") checked; $(grep '^not ok' <<<"$out" | head -3 | tr '\n' ' '))"
badp=""
while IFS='|' read -r k p; do
    case "$p" in
    "not modelled" | priced) continue ;;
    esac
    flags=$(grep -o -- '--[a-z0-9-]*' <<<"$p")
    [ -n "$flags" ] || { badp="$badp $k"; continue; }
    for f in $flags; do grep -q -- "$f\b" "$cli" || badp="$badp $k($f)"; done
done <<<"$nemo
$bridge"
[ -z "$badp" ]
ok $? "every row names docs/cli.md flags, 'not modelled' or 'priced' (not:${badp:- none})"
lacks=""
for f in $(grep -o '"--[a-z0-9-]*"' "$src/planner/run/request.c" | tr -d '"' | sort -u); do
    grep -q -- "$f\b" "$cli" || lacks="$lacks $f"
done
[ -z "$lacks" ]
ok $? "docs/cli.md names every flag of planner/run/request.c (not:${lacks:- none})"
echo "1..$n"
[ "$bad" -eq 0 ]
