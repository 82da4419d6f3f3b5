/* The table of Megatron-LM arguments (megatron_args.c) as its other readers use it: megatron_log.c
 * (argument dumps, recorded command lines) and megatron_config.c (the arguments in parplan's
 * terms). Not installed. */
#ifndef PP_MEGATRON_ARGS_H
#define PP_MEGATRON_ARGS_H

#include "margs_table.h"

/* The entry of a dest name, NULL when absent. */
pp_margs_kv *pp_margs_kv_find(const pp_margs *a, const char *key);
/* Set key = value as read from flag at line:col (replace = false: only when the key is absent). */
pp_status pp_margs_kv_set(pp_margs *a, const char *key, const char *flag, const char *value, bool unresolved,
                          int line, int col, bool replace, pp_error *err);
/* A script (or one command line) whose first line is line line0 of the file. */
pp_status pp_margs_parse_script_at(pp_margs *a, const char *text, size_t len, int line0, pp_error *err);
/* Whether entry k belongs in the unmodelled line (pp_margs_config.unmodelled), by the table: an
 * entry pp_margs_read did not use that changes memory or time (set off its neutral value; in a dump
 * any unknown argument that is set, on a command line any unknown flag), or a fused kernel
 * TransformerEngine runs by default switched off while te. *fusion: k is such a fusion switch. */
bool pp_margs_kv_unmodelled(const pp_margs *a, const pp_margs_kv *k, bool te, bool *fusion);
/* The table's rows (docs/megatron-options.md is written from them): its dest name ("prefix*" for
 * a family), its class ("read", "ignored", "not modelled", "fused kernel"), and the values that
 * change nothing (NULL: none). */
int pp_margs_table_n(void);
void pp_margs_table_row(int i, const char **key, const char **cls, const char **neutral);

#endif
