#!/usr/bin/env bash
# `meson install` puts the binary, the catalog, the man page and the bash completion where they
# belong, and the installed binary finds its catalog from anywhere; the build-tree binary finds
# the source catalog. TAP on stdout.
#
#   install.sh MESON BUILD_ROOT SOURCE_ROOT PREFIX BINDIR DATADIR MANDIR
#
# The install goes to a temporary DESTDIR; the installed binary is run from / with
# PARPLAN_MODELS_DIR unset. To prove it reads the installed catalog (and not the source tree it
# was built from), a broken YAML file is then added to the installed catalog: the binary must
# now fail naming that file.
set -u
meson=$1 build=$2 src=$3 prefix=$4 bindir=$5 datadir=$6 mandir=$7
n=0 failed=0
ok() { # cond-status message
    n=$((n + 1))
    if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi
}
abs() { case $1 in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }

dest=$(mktemp -d "${TMPDIR:-/tmp}/pp-install-XXXXXX")
trap 'rm -rf "$dest"' EXIT
log=$("$meson" install -C "$build" --destdir "$dest" --no-rebuild --quiet 2>&1)
ok $? "meson install --destdir $dest"
[ -n "$log" ] && echo "$log" | sed 's/^/# /' | tail -5

bin="$dest$(abs "$bindir")/parplan"
man="$dest$(abs "$mandir")/man1/parplan.1"
comp="$dest$(abs "$datadir")/bash-completion/completions/parplan"
cat="$dest$(abs "$datadir")/parplan/models.d"
[ -x "$bin" ]; ok $? "binary installed at ${bin#"$dest"}"
[ -f "$man" ]; ok $? "man page installed at ${man#"$dest"}"
[ -f "$comp" ]; ok $? "bash completion installed at ${comp#"$dest"}"
src_models=$(ls "$src/models.d/models"/*.yaml 2>/dev/null | wc -l)
src_gpus=$(ls "$src/models.d/gpus"/*.yaml 2>/dev/null | wc -l)
inst_models=$(ls "$cat/models"/*.yaml 2>/dev/null | wc -l)
inst_gpus=$(ls "$cat/gpus"/*.yaml 2>/dev/null | wc -l)
[ "$src_models" -gt 0 ] && [ "$inst_models" = "$src_models" ] && [ "$inst_gpus" = "$src_gpus" ]
ok $? "catalog installed at ${cat#"$dest"} ($inst_models models, $inst_gpus GPUs; source $src_models, $src_gpus)"

if command -v man >/dev/null; then
    out=$(MANWIDTH=80 man -l "$man" 2>&1)
    echo "$out" | grep -q "parplan - plan the parallel layout"
    ok $? "installed man page renders"
fi
bash -c "source '$comp' && complete -p parplan" >/dev/null 2>&1
ok $? "installed completion registers for parplan"

# The installed binary, run from elsewhere, with no hint where the catalog is.
out=$(cd / && env -u PARPLAN_MODELS_DIR "$bin" models 2>&1)
rc=$?
ok $rc "installed binary: 'parplan models' from / exits 0"
echo "$out" | grep -q "gpt3-13b" && echo "$out" | grep -q "a100-80gb"
ok $? "installed binary lists the catalog"
out=$(cd / && env -u PARPLAN_MODELS_DIR "$bin" models --json 2>&1)
ok $? "installed binary: 'parplan models --json' exits 0"
cat > "$cat/models/zz-broken.yaml" <<'EOF'
name: zz-broken
layers: [not a number
EOF
out=$(cd / && env -u PARPLAN_MODELS_DIR "$bin" models 2>&1)
rc=$?
[ $rc = 2 ] && echo "$out" | grep -qF "$cat/models/zz-broken.yaml"
ok $? "installed binary reads the installed catalog (broken file there: exit $rc, '$(echo "$out" | head -1)')"
rm -f "$cat/models/zz-broken.yaml"

# The build-tree binary finds the source catalog.
out=$(cd / && env -u PARPLAN_MODELS_DIR "$build/src/parplan" models 2>&1)
ok $? "build-tree binary: 'parplan models' from / exits 0"
echo "$out" | grep -q "gpt3-13b"
ok $? "build-tree binary lists the catalog"

echo "1..$n"
[ $failed = 0 ]
