#!/usr/bin/env bash
# launch --format torchtitan against torchtitan's job config (meson tests launch-torchtitan-keys
# and launch-torchtitan-parse):
#   torchtitan_check.sh keys PARPLAN SOURCE_ROOT    every key and value type in the committed key
#                                                   list (tests/data/torchtitan/job_config_keys.txt)
#   torchtitan_check.sh parse PARPLAN SOURCE_ROOT   parsed by torchtitan's ConfigManager (skips, 77,
#                                                   where torchtitan cannot be imported)
#   torchtitan_check.sh names PARPLAN SOURCE_ROOT   launch --format torchtitan's Python config modules:
#                                                   every import, keyword and parameter in the table of
#                                                   torchtitan at b5bcd76c (tests/data/torchtitan/
#                                                   config_names.txt), and compiled by python3
# TAP on stdout (from the Python checker); exit 77 without python3.
set -u
mode=$1 parplan=$2 src=$3
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pp-titan-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fmt=torchtitan-toml
[ "$mode" = names ] && fmt=torchtitan
files=$(bash "$src/tests/frameworks/torchtitan_configs.sh" "$parplan" "$src" "$tmp" "$fmt") || {
    echo "not ok 1 - parplan launch --format $fmt wrote every case"; echo "1..1"; exit 1; }
# shellcheck disable=SC2086
case $mode in
keys) python3 "$src/tests/frameworks/torchtitan_keys.py" check "$src/tests/data/torchtitan/job_config_keys.txt" $files ;;
parse) python3 "$src/tests/frameworks/torchtitan_parse.py" $files ;;
names)
    for f in $files; do
        python3 -m py_compile "$f" || { echo "not ok 1 - $f compiles"; echo "1..1"; exit 1; }
        # Trainer.Config refuses CUDA graphs with pipeline parallelism (trainer.py _validate_cuda_graphs)
        if grep -q 'pipeline_parallel_degree=[2-9]' "$f" && ! grep -q 'disable_cuda_graphs=True' "$f"; then
            echo "not ok 1 - $f: pipeline parallelism without disable_cuda_graphs=True"; echo "1..1"; exit 1
        fi
    done
    python3 "$src/tests/frameworks/pyconfig_names.py" check-py "$src/tests/data/torchtitan/config_names.txt" $files ;;
*) echo "usage: $0 keys|parse|names PARPLAN SOURCE_ROOT" >&2; exit 2 ;;
esac
