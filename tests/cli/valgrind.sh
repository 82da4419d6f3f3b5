#!/bin/sh
# The CLI tests with parplan under valgrind (suite 'valgrind'): memcheck errors or
# definite/indirect leaks make valgrind exit 1 and print on stderr, which fails the case (the
# bad-input cases want exit 2 and one stderr line; the overflow runs want exit 0 and a clean
# stderr). The two TAP streams are merged into one.
# usage: valgrind.sh VALGRIND BAD_INPUT_EXE OVERFLOW_EXE CASES_FILE DATA_DIR
set -u
vg=$1 bad=$2 over=$3 cases=$4 data=$5
PARPLAN_WRAPPER="$vg -q --error-exitcode=1 --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect"
export PARPLAN_WRAPPER
# valgrind runs parplan 20-50x slower and needs more memory than the plain bounds.
export PARPLAN_TEST_TIMEOUT_S=${PARPLAN_VALGRIND_TIMEOUT_S:-120}
export PARPLAN_TEST_RSS_MIB=${PARPLAN_VALGRIND_RSS_MIB:-2048}
export PARPLAN_TEST_NO_RLIMIT=1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$bad" "$cases" "$data" >"$tmp/bad.tap" 2>&1; rc1=$?
"$over" >"$tmp/over.tap" 2>&1; rc2=$?
awk -v rc1="$rc1" -v rc2="$rc2" '
    /^(not )?ok [0-9]+/ { n++; sub(/^ok [0-9]+/, "ok " n); sub(/^not ok [0-9]+/, "not ok " n); print; next }
    /^1\.\.[0-9]+/ { next }
    /^Bail out!/ { print "not ok " ++n " - " FILENAME ": " $0; next }
    { print }
    END {
        if (rc1 > 1) print "not ok " ++n " - bad_input runner exited " rc1
        if (rc2 > 1) print "not ok " ++n " - overflow runner exited " rc2
        print "1.." n
    }' "$tmp/bad.tap" "$tmp/over.tap"
[ "$rc1" = 0 ] && [ "$rc2" = 0 ]
