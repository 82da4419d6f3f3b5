# bash completion for parplan(1)                                  -*- shell-script -*-
# Installed as $datadir/bash-completion/completions/parplan (meson install); to try it from a
# checkout: `source completions/parplan.bash`.
#
# Nothing here lists options by hand: the subcommands come from `parplan --help`, each
# subcommand's options from `parplan CMD --help` (the binary's own option table in src/cli.c),
# so the completion cannot drift from the binary. Values:
#   - enumerations from the help text ("--recompute none|selective|full", "--zero 0|1|2|3: ...");
#   - --model and --gpu: the catalog's names from `parplan models --json`, plus files;
#   - FILE / PATH / FILE.html arguments: files (FILE.html: *.html);
#   - --emit FORMAT: the formats of `parplan launch --format`;
#   - numbers (N, K, T, P, SECONDS): nothing;
#   - positional words from the usage line ("parplan probe [gemm|bandwidth|...]").
# The binary is the one being completed (`./build/src/parplan plan --<TAB>` asks that one); its
# answers are cached for the shell session.

declare -gA _parplan_cache 2>/dev/null || true

# Output of `BIN ARGS...`, cached by binary and arguments.
_parplan_run()
{
    local bin=$1
    shift
    local key="$bin|$*"
    if [[ -z ${_parplan_cache[$key]+set} ]]; then
        _parplan_cache[$key]=$("$bin" "$@" 2>/dev/null)
    fi
    printf '%s\n' "${_parplan_cache[$key]}"
}

# Subcommand names: the indented lines after "commands:" in `parplan --help`.
_parplan_commands()
{
    local line in=0
    while IFS= read -r line; do
        if [[ $line == commands:* ]]; then in=1; continue; fi
        [[ $in == 1 && -z $line ]] && break
        if [[ $in == 1 && $line =~ ^[[:space:]]+([a-z][a-z0-9-]*)[[:space:]] ]]; then
            printf '%s\n' "${BASH_REMATCH[1]}"
        fi
    done < <(_parplan_run "$1" --help)
}

# "option<TAB>value-spec" for every option of a subcommand; value-spec is "" for a flag, the
# enumeration "a|b|c", or the metavar (NAME|FILE, FILE, PATH, FILE.html, FORMAT, N, ...).
_parplan_options()
{
    local line opt short help tok
    while IFS= read -r line; do
        [[ $line =~ ^[[:space:]]+(-([a-zA-Z]),[[:space:]]+)?(--[a-z0-9-]+)[[:space:]]+(.*)$ ]] || continue
        short=${BASH_REMATCH[2]} opt=${BASH_REMATCH[3]} help=${BASH_REMATCH[4]}
        tok=${help%% *}
        if [[ $tok == *: ]]; then
            tok=${tok%:}
        elif [[ $tok != *'|'* ]]; then
            tok=
        fi
        printf '%s\t%s\n' "$opt" "$tok"
        [[ -n $short ]] && printf '%s\t%s\n' "-$short" "$tok"
    done < <(_parplan_run "$1" "$2" --help)
}

# Catalog names (models or gpus) from `parplan models --json`.
_parplan_names()
{
    local want=$1 bin=$2 tok section=
    while IFS= read -r tok; do
        case $tok in
        '"models"') section=models ;;
        '"gpus"') section=gpus ;;
        *)
            if [[ $section == "$want" && $tok =~ ^\"name\":[[:space:]]*\"(.*)\"$ ]]; then
                printf '%s\n' "${BASH_REMATCH[1]}"
            fi
            ;;
        esac
    done < <(_parplan_run "$bin" models --json | grep -o '"models"\|"gpus"\|"name": *"[^"]*"')
}

# Positional choices of a subcommand: "[a|b|c]" groups of lower-case words on its usage line.
_parplan_positionals()
{
    local usage group
    usage=$(_parplan_run "$1" "$2" --help | sed -n 's/^usage: //p')
    while [[ $usage =~ \[([a-z0-9-]+(\|[a-z0-9-]+)+)\](.*)$ ]]; do
        group=${BASH_REMATCH[1]}
        usage=${BASH_REMATCH[3]}
        printf '%s\n' ${group//|/ }
    done
}

_parplan()
{
    local cur prev words cword
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    cword=$COMP_CWORD
    # "--model=gp" arrives as "--model" "=" "gp" when '=' breaks words (the default).
    if [[ $cur == = ]]; then
        cur=
    elif [[ $prev == = ]] && ((cword >= 2)); then
        prev=${COMP_WORDS[cword - 2]}
    fi

    local bin=${COMP_WORDS[0]}
    bin=${bin/#\~/$HOME}
    if [[ $bin != */* ]]; then
        bin=$(type -P -- "$bin") || return 0
    fi
    [[ -x $bin ]] || return 0

    # The subcommand: the first word after the program that is not an option.
    local i cmd=
    for ((i = 1; i < cword; i++)); do
        if [[ ${COMP_WORDS[i]} != -* && ${COMP_WORDS[i]} != = ]]; then
            cmd=${COMP_WORDS[i]}
            break
        fi
    done
    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W '--help --version' -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$(_parplan_commands "$bin") help version" -- "$cur"))
        fi
        return 0
    fi

    # The value of the option before the cursor.
    local spec= found=0 line opt
    if [[ $prev == -* ]]; then
        while IFS=$'\t' read -r opt line; do
            if [[ $opt == "$prev" ]]; then
                spec=$line
                found=1
                break
            fi
        done < <(_parplan_options "$bin" "$cmd")
    fi
    if ((found)) && [[ -n $spec ]]; then
        case $spec in
        NAME\|FILE | NAME\|FILE\|ORG/NAME\[@REV\])
            local kind=models
            [[ $prev == --gpu ]] && kind=gpus
            COMPREPLY=($(compgen -W "$(_parplan_names "$kind" "$bin")" -- "$cur"))
            COMPREPLY+=($(compgen -f -- "$cur"))
            compopt -o filenames 2>/dev/null
            ;;
        FILE.html)
            COMPREPLY=($(compgen -f -X '!*.html' -- "$cur") $(compgen -d -- "$cur"))
            compopt -o filenames 2>/dev/null
            ;;
        FILE | PATH | DIR)
            COMPREPLY=($(compgen -f -- "$cur"))
            compopt -o filenames 2>/dev/null
            ;;
        FORMAT)
            local fmt
            fmt=$(_parplan_options "$bin" launch | sed -n 's/^--format\t//p')
            COMPREPLY=($(compgen -W "${fmt//|/ }" -- "$cur"))
            ;;
        *'|'*)
            COMPREPLY=($(compgen -W "${spec//|/ }" -- "$cur"))
            ;;
        *) # a number: nothing to offer
            COMPREPLY=()
            ;;
        esac
        return 0
    fi

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_parplan_options "$bin" "$cmd" | cut -f1)" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$(_parplan_positionals "$bin" "$cmd")" -- "$cur"))
    fi
    return 0
}

complete -F _parplan parplan
