/* A small, safe reading of bash (no command is run): the Megatron-LM command of a launch script or
 * command line, with the script's variables, arrays and arithmetic expanded. What it reads is said
 * in pp_margs.h (pp_margs_parse_script). The internal interface between shell.c and
 * megatron_args.c; not installed. */
#ifndef PP_SHELL_H
#define PP_SHELL_H

#include "pp.h"

/* One word after expansion, with where its text was written (an array element keeps the line of
 * its definition, so an error points there). */
typedef struct {
    char *s;
    bool unresolved; /* holds a variable, command or arithmetic the script does not define */
    int line, col;
} pp_sh_word;

typedef struct {
    pp_sh_word *w;
    int n, cap;
} pp_sh_words;

/* The command that runs Megatron: of the commands with --flags, one that runs a pretrain_*.py
 * script or gives --num-layers wins over another *.py command, which wins over bare --flag lines
 * (those add up). */
typedef struct {
    pp_sh_words args;      /* the words after the *.py word, or the bare --flag lines */
    int score;             /* 0: none found; 1 bare --flag lines; 2 a *.py command; 3 pretrain_*.py
                              or --num-layers */
    int line;              /* where the command starts */
    char program[64];      /* the *.py's base name ("" for bare --flag lines) */
    int64_t nproc, nnodes; /* the launcher's --nproc-per-node and --nnodes, 0 unknown */
    pp_sh_words env;       /* the script's upper-case variables as "NAME=value", each once (its last
                              assignment), where it was assigned: the environment the process may
                              inherit (the caller picks the names it knows: megatron_args.c) */
} pp_sh_command;

/* Read text (its first line is line line0 of the file path) into cmd. PP_ERR_INPUT with line:col
 * for bad shell syntax (an unterminated quote); cmd is then empty. Free cmd in either case. */
pp_status pp_sh_command_find(const char *text, size_t len, int line0, const char *path, pp_sh_command *cmd,
                             pp_error *err);
void pp_sh_command_free(pp_sh_command *cmd); /* accepts NULL */

#endif
