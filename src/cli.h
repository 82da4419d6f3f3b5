/* The command line: one option table shared by every subcommand (cli.c), the subcommands
 * (cmd_*.c). Contract: docs/cli.md. */
#ifndef PP_CLI_H
#define PP_CLI_H

#include <stdio.h>

#include "pp.h"
#include "pp_json.h"
#include "pp_load.h"
#include "pp_margs.h"
#include "pp_profile.h"
#include "pp_request.h"
#include "pp_run.h"
#include "pp_search.h"

/* Layout flags the user gave explicitly (plan keeps them fixed while searching the rest): the
 * search's bits (pp_request_fixed). */
enum {
    PP_FIX_TP = PP_SEARCH_FIX_TP, PP_FIX_PP = PP_SEARCH_FIX_PP, PP_FIX_DP = PP_SEARCH_FIX_DP,
    PP_FIX_VPP = PP_SEARCH_FIX_VPP, PP_FIX_CP = PP_SEARCH_FIX_CP, PP_FIX_EP = PP_SEARCH_FIX_EP,
    PP_FIX_MBS = PP_SEARCH_FIX_MBS, PP_FIX_ZERO = PP_SEARCH_FIX_ZERO, PP_FIX_DIST_OPT = PP_SEARCH_FIX_DIST_OPT,
    PP_FIX_SP = PP_SEARCH_FIX_SP, PP_FIX_RECOMPUTE = PP_SEARCH_FIX_RECOMPUTE,
    PP_FIX_OFFLOAD = PP_SEARCH_FIX_OFFLOAD, PP_FIX_ETP = PP_SEARCH_FIX_ETP,
};

/* One command line: the request (the library's WORK / model / STACK / LAYOUT options, as given),
 * the subcommand's own options, and what pp_cli_work resolves. Each command's option table
 * (cli.c) points at these fields. */
typedef struct {
    const char *argv0;
    const char *cmd;          /* subcommand */
    int argc;                 /* the arguments after the subcommand, as given (remedies rebuild the */
    char **argv;              /* command line from them) */
    pp_request rq;            /* as given */
    bool json;                /* --json */
    bool help;                /* --help / -h */
    bool quiet;               /* -q */
    /* the request's strings, for the commands that read them before resolving */
    const char *model_arg, *gpu_arg, *profile_arg, *megatron_args, *stages;
    /* resolved by pp_cli_work (before it: the layout and stack the flags give) */
    pp_catalog cat;
    pp_work work;
    pp_layout layout;
    unsigned fixed;           /* PP_FIX_* */
    pp_margs_config *margs;   /* --megatron-args: what the file says (owns the layout's stage arrays) */
    int *split;               /* --pipeline-layout / --first|last-stage-layers: owns layout.vstage_layers */
    pp_profile profile;
    bool have_profile;
    pp_recipe recipe;         /* --recipe, when have_recipe */
    bool have_recipe;
    unsigned char recipe_src[PP_RF_COUNT]; /* pp_recipe_src of each recipe field */
    /* subcommand options */
    int64_t top;              /* plan --top K (default 5) */
    int64_t probe_k;          /* plan --probe K (0: none) */
    double probe_budget_s;    /* plan --probe-budget */
    const char *format;       /* launch --format */
    const char *emit;         /* plan --emit FORMAT */
    const char *output;       /* -o / --output */
    const char *launch_target;/* launch / plan --emit: --launch-target standard|device-local */
    int64_t train_iters;      /* launch / plan --emit: --train-iters N (0: the target's default) */
    const char *report;       /* --report FILE.html */
    const char *dump_ilp;     /* --dump-ilp FILE */
    double tokens;            /* estimate --tokens */
    double price_per_gpu_hour;/* estimate --price-per-gpu-hour */
    const char *price_spec;   /* plan --price-per-gpu-hour P|GPU=P,GPU=P */
    const char *prices_file;  /* plan --prices FILE */
    bool allow_cross_node_tp; /* plan --allow-cross-node-tp */
    bool no_fold;             /* plan --no-fold: every VPP variant its own row */
    bool allow_seq_change;    /* check/estimate --allow-seq-change: remedies may shorten --seq */
    const char *fit;          /* calibrate --fit LIST */
    const char *probe_cache;  /* calibrate --probe-cache FILE: the logs' layers as measured */
    int npos;                 /* positional arguments after the subcommand */
    char **pos;
} pp_cli;

/* Parse argv (after the subcommand name). Unknown flags, missing or malformed values are
 * PP_ERR_INPUT with the flag named. Does not load anything. */
pp_status pp_cli_parse(pp_cli *c, const char *cmd, int argc, char **argv, pp_error *err);
/* Load the catalog, resolve --model (+ inline overrides) and --gpu, the cluster and batch,
 * and --profile into c->work. needs_layout: also validate c->layout against it. */
pp_status pp_cli_work(pp_cli *c, bool needs_layout, pp_error *err);
/* Load only the catalog (models). */
pp_status pp_cli_catalog(pp_cli *c, pp_error *err);
void pp_cli_free(pp_cli *c); /* accepts NULL */
/* Print "parplan: msg (where)" to stderr; returns the exit status (2 input, 1 runtime). */
int pp_cli_fail(const pp_error *err);

/* The command line: argv as main gets it; the exit status (entry.c). */
int pp_cli_main(int argc, char **argv);

/* Subcommands: return the process exit status. */
int pp_cmd_models(pp_cli *c);
int pp_cmd_check(pp_cli *c);
int pp_cmd_plan(pp_cli *c);
int pp_cmd_estimate(pp_cli *c);
int pp_cmd_launch(pp_cli *c);
int pp_cmd_probe(pp_cli *c);
int pp_cmd_calibrate(pp_cli *c); /* cmd_calibrate.c: fit the time model to real training logs */
/* plan over GPU types and counts (--gpu A,B --gpus N,M --tokens T): what to rent, by days and
 * cost. argv after "plan"; pre_quiet / pre_json: -q / --json given before the command. Defined
 * in cmd_rent.c. */
bool pp_rent_wanted(int argc, char **argv);
int pp_cmd_rent(const char *argv0, int argc, char **argv, bool pre_quiet, bool pre_json);
/* Path of parplan-probe ($PARPLAN_PROBE, beside this executable, ../probes/, ../libexec/, the
 * libexecdir); false with the places tried. Defined in cmd_probe.c. */
bool pp_probe_find(const char *argv0, char *out, size_t n, char *tried, size_t tried_n);
/* Write the launch config of layout l (validated against w) in format `format` (a
 * pp_launch_format_names entry), as the resolved run of l (pp_run_build with `stages`: NULL
 * keeps l's own split) says it: the layout and the header's figures; --launch-target,
 * --train-iters, -o DIR and --json from c; stdout when no -o. For launch and plan --emit.
 * Returns the exit status (errors printed). Defined in cmd_launch.c. */
int pp_launch_emit(pp_cli *c, const pp_work *w, const pp_layout *l, const char *format, const char *stages);

/* The training stack check and plan assumed: one line (pp_stack_describe, and the
 * --megatron-args file), and the "stack" (and "megatron_args") objects of their JSON. */
/* "parplan CMD: MODEL on N x GPU (K nodes of G), global batch B x S tokens, FRAMEWORK, ATTN attention":
 * the first line of check's and plan's tables. */
void pp_cli_work_line(FILE *f, const char *command, const pp_work *w);
void pp_cli_stack_line(FILE *f, const pp_cli *c);
void pp_cli_stack_json(pp_json *j, const pp_cli *c);

/* What makes the layout of c (priced as run) fit, each remedy a complete `parplan check` command
 * rebuilt from c's own command line (its WORK and stack flags, the remedy's layout in full) and
 * verified by running it through the same resolution and pricing before it is shown; one that
 * does not fit when run is left out (counted in *unverified). remedies.c. */
typedef struct {
    pp_run_remedies rm;
    char command[PP_REMEDY_MAX][2048];
    bool verified[PP_REMEDY_MAX];
    int unverified;
} pp_cli_remedies;
pp_status pp_cli_remedies_find(pp_cli *c, const pp_layout *l, pp_cli_remedies *out, pp_error *err);
/* Printed under check's (and estimate's) verdict; as "remedies", "min_gpus" and "min_gpus_best" in
 * their JSON. */
void pp_cli_remedies_print(FILE *f, const pp_cli *c, const pp_cli_remedies *rr);
void pp_cli_remedies_json(pp_json *j, const pp_cli *c, const pp_cli_remedies *rr);

/* The option of cmd named name (long, or -c): a request option (*request) or the command's own;
 * NULL when none. */
const pp_option *pp_cli_option(const char *cmd, const char *name, bool *request);

/* The option lines that apply to cmd, for --help. */
void pp_cli_usage_options(FILE *f, const char *cmd);

/* Numbers as people write them: `sig` significant digits, thousands separators, no exponent
 * between 1e-4 and 1e15 ("54,960", "0.0312", "1.466"). */
const char *pp_fmt_num(double v, int sig, char *buf, size_t n);
/* A duration in the unit that reads best: "51.43 s", "15.3 h", "12.4 days". */
const char *pp_fmt_duration(double s, char *buf, size_t n);
/* "dir/file" without a doubled slash when dir ends with one. */
const char *pp_path_join(const char *dir, const char *file, char *buf, size_t n);

#endif
