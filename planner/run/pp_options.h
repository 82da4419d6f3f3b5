/* Command-line options as tables that point at struct fields (git's parse-options style): a
 * command lists the option sets it takes, each a table of pp_option over one struct, and
 * pp_options_parse fills the fields, marks what was given and collects the positional
 * arguments. Unknown options, missing or malformed values and out-of-range numbers are
 * PP_ERR_INPUT naming the option; nothing is silently ignored. */
#ifndef PP_OPTIONS_H
#define PP_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pp.h"

typedef enum {
    PP_OPT_FLAG,    /* no value: bool field := true */
    PP_OPT_CLEAR,   /* no value: bool field := false ("--no-sp") */
    PP_OPT_SET,     /* no value: int field := set */
    PP_OPT_INT,     /* int64_t field in [min, max]; "1e6" accepted when exact */
    PP_OPT_NUM,     /* double field in [min, max] */
    PP_OPT_STR,     /* const char * field, non-empty */
    PP_OPT_ENUM,    /* int field := index of the value in names[] */
    PP_OPT_MODULES, /* unsigned field := bit set of names[] from a comma-separated list */
} pp_opt_kind;

typedef struct {
    const char *name;  /* long form with dashes: "--tp" */
    char short_name;   /* 'o' for -o, or 0 */
    pp_opt_kind kind;
    size_t offset;     /* of the field in the set's struct */
    int key;           /* index into the set's given[] (-1: not tracked) */
    double min, max;   /* PP_OPT_INT / PP_OPT_NUM */
    const char *const *names; /* PP_OPT_ENUM / PP_OPT_MODULES */
    int n_names;
    int set;           /* PP_OPT_SET's value */
    const char *help;  /* "N: tensor parallel" (the value's name, a colon, what it is) */
} pp_option;

/* One table over one struct: base is the struct, given (n_keys bytes, may be NULL) marks the
 * keys of the options given. */
typedef struct {
    const pp_option *opts;
    size_t n;
    void *base;
    unsigned char *given;
} pp_option_set;

/* Parse argv (after the subcommand) into the sets; the first matching option of the first set
 * that has it wins. Positional arguments (and everything after "--") are returned in pos (a
 * calloc'd array of argc + 1 pointers into argv that the caller frees) and npos. cmd names
 * the subcommand in messages. */
pp_status pp_options_parse(const pp_option_set *sets, int n_sets, const char *cmd, int argc,
                           char **argv, char ***pos, int *npos, pp_error *err);
/* The same, where an option of `others` (the program's other commands) is reported as not
 * applying to cmd rather than as unknown. */
pp_status pp_options_parse_cmd(const pp_option_set *sets, int n_sets, const pp_option_set *others,
                               int n_others, const char *cmd, int argc, char **argv, char ***pos,
                               int *npos, pp_error *err);

/* "  --tp                   N: tensor parallel", one line per option of the sets, in order;
 * an option listed in two sets is printed once. */
void pp_options_usage(FILE *f, const pp_option_set *sets, int n_sets);

#endif
