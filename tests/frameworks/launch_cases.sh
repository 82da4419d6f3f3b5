# The harness the launch-format key checks share (sourced by bridge_check.sh, nemo_check.sh,
# deepspeed_keys.sh): write each case with `parplan launch`, expect the refusals, and fold a
# checker's TAP into one numbered stream. Uses $parplan and $tmp; counts in $n and $bad, and
# collects the written files in the array files.
n=0 bad=0 files=()

# lc_write FORMAT FILE "name|args"...: each case written into $tmp/name; FILE is collected
lc_write()
{
    local fmt=$1 file=$2 c name args
    shift 2
    for c in "$@"; do
        name=${c%%|*} args=${c#*|}
        n=$((n + 1))
        # shellcheck disable=SC2086
        if "$parplan" launch $args --format "$fmt" -o "$tmp/$name" -q 2>"$tmp/$name.err" &&
            { [[ $file != *.sh ]] || bash -n "$tmp/$name/$file"; }; then
            echo "ok $n - $name written"
            files+=("$tmp/$name/$file")
        else
            echo "not ok $n - $name written: $(head -c 300 "$tmp/$name.err")"; bad=$((bad + 1))
        fi
    done
}

# lc_refuse FORMAT "name|args"...: each case refused (exit status not 0), its reason printed
lc_refuse()
{
    local fmt=$1 c name args
    shift
    for c in "$@"; do
        name=${c%%|*} args=${c#*|}
        n=$((n + 1))
        # shellcheck disable=SC2086
        if "$parplan" launch $args --format "$fmt" -o "$tmp/$name" -q 2>"$tmp/$name.err"; then
            echo "not ok $n - $name refused"; bad=$((bad + 1))
        else
            echo "ok $n - $name refused: $(head -c 200 "$tmp/$name.err" | tr '\n' ' ')"
        fi
    done
}

# lc_done CHECKER_OUTPUT CHECKER_STATUS: the checker's lines renumbered after ours, the plan line,
# and the status (0 when every line passed)
lc_done()
{
    local line
    while IFS= read -r line; do
        case $line in
        "ok "*) n=$((n + 1)); echo "ok $n - ${line#* - }" ;;
        "not ok "*) n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - ${line#* - }" ;;
        esac
    done <<<"$1"
    echo "1..$n"
    [ "$bad" -eq 0 ] && [ "$2" -eq 0 ]
}
