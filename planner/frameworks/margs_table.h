/* The table of Megatron-LM arguments (pp_margs) and the readers that fill it: a command line or
 * launch script (megatron_args.c, with shell.c), a training log (megatron_log.c), and the small
 * list language of some arguments (pylist.c). What the table means in parplan's terms
 * (pp_margs_read, megatron_config.c) is declared in pp_margs.h, which includes this header; the
 * files that fill the table read only this one, so that they never depend on the file that
 * interprets it. See pp_margs.h for the inputs and their formats.
 */
#ifndef PP_MARGS_TABLE_H
#define PP_MARGS_TABLE_H

#include "pp.h"

typedef enum {
    PP_MARGS_NONE = 0, /* nothing found (pp_margs_parse_log on a log without arguments) */
    PP_MARGS_SCRIPT,   /* a command line or launch script */
    PP_MARGS_DUMP,     /* the argument dump of a training log */
} pp_margs_source;

typedef struct {
    char key[96];      /* Megatron's dest name: "num_layers" */
    char flag[96];     /* as written: "--num-layers", "--no-rope-fusion"; the dest for a dump */
    char *value;       /* "True" for a switch; several values joined by one space */
    bool unresolved;   /* the value uses a variable or command the script does not define */
    int line, col;     /* where it was read (1-based) */
    bool used;         /* read by pp_margs_read */
} pp_margs_kv;

typedef struct {
    char path[512];
    pp_margs_source source;
    pp_margs_kv *kv;
    int n, cap;
    int line;          /* the dump's first line, or the line of the command that ran Megatron */
    int dump_last;     /* the dump's last line ("end of arguments"), 0 without a dump */
    char program[64];  /* a script: the *.py its arguments go to ("" for a bare flag list) */
    /* The tokenizer's vocabulary as a log reports it after the dump (" > padded vocab (size: V)
     * with K dummy tokens (new size: P)"): V, or 0. The dump prints padded_vocab_size None. */
    int64_t log_vocab;
} pp_margs;

void pp_margs_init(pp_margs *a, const char *path);
void pp_margs_free(pp_margs *a); /* accepts NULL */

/* A command line or launch script. Not finding any Megatron argument is not an error here
 * (a->source stays NONE); bad shell syntax (an unterminated quote) and malformed flags are
 * PP_ERR_INPUT with line:col. Keys already in a (an earlier dump) are kept. */
pp_status pp_margs_parse_script(pp_margs *a, const char *text, size_t len, pp_error *err);
/* A training log: its argument dump, else its recorded command line; nothing found is not an
 * error. A dump without its end line (a cut log) is. */
pp_status pp_margs_parse_log(pp_margs *a, const char *text, size_t len, pp_error *err);
/* --megatron-args FILE|-: read the file ("-": standard input), as a log when it holds an argument
 * dump or a "# cmd" line, else as a script; no Megatron argument at all is an error. */
pp_status pp_margs_load(pp_margs *a, const char *path, pp_error *err);

/* The value of a dest name, NULL when absent or printed as None. */
const char *pp_margs_get(const pp_margs *a, const char *key);
/* Add key = value unless the key is there (a dump read first wins over a script). */
pp_status pp_margs_add(pp_margs *a, const char *key, const char *value, int line, pp_error *err);

/* The small language of Megatron's --moe-layer-freq and --window-attn-skip-freq
 * (arguments.py moe_freq_type: Python list expressions such as "([0]*1+[1]*7)", "[0,1,1]*4"):
 * integers, [a, b, ...] lists, + (concatenation or addition), * (repetition or product),
 * parentheses; evaluated without eval(). An integer fills *value and leaves *n = 0; a list fills
 * out[0..*n) (at most max entries). PP_ERR_INPUT with the column (1-based) on bad input. */
pp_status pp_margs_list_expr(const char *s, int64_t *out, int max, int *n, int64_t *value, int *col,
                             char *msg, size_t msg_n);

#endif
