/* One resolved run: a work and a layout as the framework runs it (the stage split, per-stage
 * recompute as the framework can say it), with its memory per stage, its step time and its
 * verdict against the GPU's capacity. Every command that answers "what does this layout need and
 * how fast is it" builds one with pp_run_build and renders it: check's table and JSON, plan's
 * rows, estimate, the launch script's header, the HTML report. One figure each:
 *   need  = peak + reserved on the fullest stage (what "mem/GPU" means everywhere);
 *   peak  = the largest allocator peak over the stages (torch.cuda.max_memory_allocated of a
 *           real run's fullest rank; docs/cli.md's "peak_bytes");
 *   fits  = need <= capacity on every stage;
 *   within_margin = need <= capacity less the margin plan keeps free (pp_memory_plan_bytes). */
#ifndef PP_RUN_H
#define PP_RUN_H

#include <stdio.h>

#include "pp.h"
#include "pp_json.h"
#include "pp_memory.h"
#include "pp_remedy.h"
#include "pp_search.h"
#include "pp_time.h"

#define PP_RUN_MAX_NOTES 6

typedef struct {
    const pp_work *work;
    pp_layout layout;            /* stage_layers / stage_recompute point into the arrays below;
                                    vstage_layers at the caller's (it must outlive the run) */
    int stage_layers[PP_MAX_STAGES], stage_recompute[PP_MAX_STAGES];
    const char *stage_split;     /* "uniform", "ilp", "balanced" (an interleaved pipeline whose
                                    virtual stages do not divide the layers, pp_layout_vstage_layers),
                                    or the caller's name for a split it gave */
    pp_mem_result mem;
    pp_time_result time;
    double need_bytes;           /* peak + reserved of the fullest stage (mem.largest_stage) */
    double need_peak_bytes;      /* that stage's allocator peak */
    double need_reserved_bytes;  /* that stage's reserve */
    double peak_bytes;           /* the largest allocator peak over the stages */
    double capacity_bytes;
    double headroom_bytes;       /* capacity - need (negative: out of memory) */
    bool fits;
    bool within_margin;          /* need <= pp_memory_plan_bytes: what plan would propose */
    /* warnings and adjustments, one line each (without "parplan: warning: ") */
    char notes[PP_RUN_MAX_NOTES][640];
    int n_notes;
} pp_run;

typedef struct {
    const char *stages;     /* "uniform", "ilp", "auto", or NULL: the layout's own split (a file's or
                               a plan candidate's), else uniform */
    const char *given_split;/* the name of the layout's own split ("megatron-args", "plan") */
    const char *dump_ilp;   /* write the stage MILP there (CPLEX LP), or NULL */
} pp_run_opts;

/* Resolve l (validated against w) into r: the stage split, what the framework can express
 * (pp_framework_express), memory and time. r keeps a pointer to w. Bad input is PP_ERR_INPUT. */
pp_status pp_run_build(const pp_work *w, const pp_layout *l, const pp_run_opts *o, pp_run *r, pp_error *err);

/* The layout's keys, written into the JSON object being built ("tp", "pp", "dp", "vpp", "cp",
 * "ep", "etp", "mbs", "zero", "dist_opt", "sp", "recompute", "recompute_layers", "offload",
 * "replicate", "stage_layers"/"stage_recompute" for an uneven split of a pipeline without
 * interleaving, and for an interleaved one whose virtual stages differ, given or the balanced
 * default, "vstage_layers" (pp x vpp, Megatron's order) and "pipeline_layout" (Megatron's layout
 * string)): the one layout JSON writer, read by check ("layout": {...}) and plan (each candidate). */
void pp_layout_json_keys(pp_json *j, const pp_work *w, const pp_layout *l);
/* The run's figures: "fits", "within_margin", "capacity_bytes", "peak_bytes", "need_bytes",
 * "headroom_bytes", "step_time_s", "samples_per_s", "tokens_per_s", "model_tflops_per_gpu", "mfu". */
void pp_run_json_figures(pp_json *j, const pp_run *r);
/* The GPU as the run had it, where it differs from its catalog entry (--gpu-mem-gib, a power limit
 * below max_power_w from the entry or --gpu-power-w): one line each into notes (at most max);
 * returns how many. pp_run_build puts them first among the run's notes; plan prints them for its
 * whole search. */
int pp_run_gpu_notes(const pp_gpu *g, char (*notes)[640], int max);
/* The effective GPU as the object "gpu_effective": "name", "memory_bytes" (the usable capacity),
 * "entry_memory_bytes", "memory_from" ("entry" | "--gpu-mem-gib"), "max_power_w" (0: not stated),
 * "power_w", "power_from" ("entry" | "--gpu-power-w"), "gemm_power_factor" and "gemm_flops" (the
 * large-GEMM bf16 rate the time model scales: pp_gpu_gemm_flops). check, estimate and plan write it. */
void pp_gpu_json_effective(pp_json *j, const pp_gpu *g);
/* The step's terms (pp_step_terms, keys pp_step_term_keys) as the object "breakdown". */
void pp_run_json_breakdown(pp_json *j, const pp_time_result *t);

/* plan's answer, the one check's remedies, estimate and plan give: the search's best
 * PP_PLAN_WINDOW, each with the stage split plan sets (pp_stages_refine, "auto"), then each as
 * check resolves it (pp_run_plan_resolve) and the window re-ranked. */
#define PP_PLAN_WINDOW 32
/* The window cand[0..r->n) as check resolves each (pp_run_build with its own split): what the
 * framework can express (Megatron's one recompute count for every stage) is applied and
 * re-priced, so a row's figures are check's, and the window is re-ranked by them; a candidate
 * pushed past the margin leaves it when others fit (r->n, r->none_fit updated). */
pp_status pp_run_plan_resolve(const pp_work *w, pp_search_candidate *cand, pp_search_result *r, pp_error *err);
typedef struct {
    pp_search_candidate best; /* plan's #1 (or the closest when none fits); its layout's stage
                                 split points into the arrays below: do not copy the struct */
    int stage_layers[PP_MAX_STAGES], stage_recompute[PP_MAX_STAGES];
    bool any;                 /* the search left a candidate (fitting or not) */
    bool fits;                /* best fits within the margin w keeps (w->mem_margin_frac) */
} pp_run_plan_pick;
pp_status pp_run_plan_best(const pp_work *w, pp_run_plan_pick *out, pp_error *err);

/* How sure: the band validation measured for a work's stack and GPU (band.c): the 5th and 95th
 * percentile of (predicted / published - 1) over the calibrate half of the published runs of its
 * family. A figure v (a step time, days, cost: all proportional to it) lies in
 * [v / (1 + err_hi), v / (1 + err_lo)] (pp_band_range). */
typedef enum {
    PP_BAND_MEGATRON_DENSE = 0, PP_BAND_FSDP_DENSE, PP_BAND_MOE, PP_BAND_BLACKWELL_DENSE, PP_BAND_BLACKWELL_MOE,
    PP_BAND_UNSEEN, PP_BAND_COUNT
} pp_band;
typedef struct {
    const char *name;     /* "megatron-dense", "fsdp-dense", "moe", "unseen" */
    double err_lo, err_hi;
    int calibrate_rows;   /* the published runs it was built from (0: none, the widest) */
} pp_band_row;
pp_band pp_band_family(const pp_work *w);
const pp_band_row *pp_band_for(const pp_work *w);
void pp_band_range(const pp_band_row *b, double v, double *lo, double *hi);
/* JSON: "key": [low, high] of figure v; "step_time_band": {"family", "err_lo", "err_hi",
 * "calibrate_rows"}.
 * Text: "low-high" with digits decimals. */
void pp_band_json(pp_json *j, const pp_work *w, const char *key, double v);
void pp_band_json_row(pp_json *j, const pp_work *w);
const char *pp_band_text(const pp_work *w, double v, int digits, char *buf, size_t n);

/* Time and cost to train on a token budget at a step time: steps = ceil(tokens / (gbs x seq)),
 * time = steps x step time, GPU-hours = time x GPUs, cost = GPU-hours x price (0 without a
 * price). What estimate prints and plan's table of GPUs to rent ranks. */
typedef struct {
    double tokens_per_step, steps, train_s, days, gpu_hours, cost;
} pp_train_cost;
void pp_train_cost_get(const pp_work *w, double step_time_s, double tokens, double price_per_gpu_hour,
                       pp_train_cost *out);

/* What makes a layout that does not fit fit, the one answer check, estimate and plan give:
 *   - the nearest layouts on these GPUs (pp_remedies_find: up to three changed knobs);
 *   - else plan's #1 on these GPUs (pp_run_plan_best without plan's margin: it fits), as a remedy
 *     that changes what it changes (from_plan);
 *   - else the smallest GPU count (whole nodes; powers of two below one node) at which plan finds
 *     a layout, and its #1: min_gpus, plan finding none at the count one node fewer. The counts
 *     are walked with the search alone (milliseconds each); plan, whose stage MILP can only add
 *     layouts, is asked at the count found and below it. */
typedef struct {
    pp_remedy r[PP_REMEDY_MAX];
    int n;
    bool from_plan;
    int64_t min_gpus;          /* 0: not searched (a remedy was found), -1: none up to the limit */
    int64_t min_gpus_searched; /* the largest count tried */
    pp_run_plan_pick plan;     /* plan's #1 on these GPUs (r[0] when from_plan) */
    pp_run_plan_pick min_pick; /* plan's #1 at min_gpus (min_pick.best) */
} pp_run_remedies;
/* allow_seq: a shorter sequence may be one of the changes. */
pp_status pp_run_remedies_find(const pp_work *w, const pp_layout *l, bool allow_seq, pp_run_remedies *out,
                               pp_error *err);

/* ------------------------------------------------------------------ plan's verdict (verdict.c) */

/* The model's band: layouts closer than this in predicted step time are a tie for the model
 * (the time model's step MAPE on the published A100 tables is 4.5-9%, tests/cost/time): plan
 * folds VPP variants within it and names the simplest layout within it. */
#define PP_PLAN_TIE_FRACTION 0.02

/* The step's terms: what plan compares two layouts by and the JSON "breakdown" reports. */
typedef enum {
    PP_TERM_COMPUTE = 0, PP_TERM_RECOMPUTE, PP_TERM_TP, PP_TERM_CP, PP_TERM_EP, PP_TERM_PP,
    PP_TERM_BUBBLE, PP_TERM_DP, PP_TERM_ZERO, PP_TERM_OPT, PP_TERM_OFFLOAD, PP_TERM_HOST, PP_TERM_COUNT
} pp_step_term;
extern const char *const pp_step_term_names[PP_TERM_COUNT]; /* as plan's verdict says them */
extern const char *const pp_step_term_keys[PP_TERM_COUNT];  /* the JSON "breakdown" keys */
void pp_step_terms(const pp_time_result *t, double v[PP_TERM_COUNT]);

/* Rows that differ only in VPP and lie within the band of each other are one choice for the
 * user: they fold into the fastest of them (which stays the row, so plan's #1 stays estimate's
 * and launch's), which names the others. */
#define PP_PLAN_FOLD_MAX 16
typedef struct {
    int n;                          /* rows folded in, this one included */
    int64_t vpp[PP_PLAN_FOLD_MAX];  /* their VPP, ascending */
    double slowest_s;               /* the slowest folded row's step time */
} pp_plan_fold;
/* Fold cand[0..r->n) in place (ranked, all fitting); folds[i] describes row i afterwards. */
void pp_plan_fold_rows(pp_search_candidate *cand, pp_search_result *r, pp_plan_fold *folds);

typedef struct {
    int term;           /* pp_step_term */
    char label[64];     /* its name for this layout ("EP all-to-all across 2 nodes") */
    double delta_s, other_s, best_s;
} pp_verdict_term;

/* #1 against one other layout: a runner-up (rank 2, 3) or the best of another shape (rank 0). */
typedef struct {
    int rank;
    char label[160];    /* the other layout */
    char diff[256];     /* how it differs: "tp 4 (not 2), mbs 2 (not 4)" */
    double slower_s, slower_frac;
    bool same_time;     /* the same predicted step: #1 wins on memory */
    double freer_bytes; /* then: how much more #1 leaves free */
    int n_cost;
    pp_verdict_term cost[2]; /* the terms that cost it the most (the second when > 5% of it) */
    int save;           /* the term that saves it the most (> 5% of the difference), or -1 */
    double save_s;
} pp_verdict_cmp;

typedef struct {
    bool valid;         /* a #1 to explain */
    int n_cmp, n_shapes; /* comparisons: the runners-up first, then n_shapes other shapes */
    pp_verdict_cmp cmp[5];
    double need_bytes, headroom_bytes, capacity_bytes, peak_frac;
    bool fsdp_tight;    /* FSDP2 near the capacity (pp_memory_fsdp_tight) */
    bool has_simpler;   /* a simpler layout within the band of #1 */
    char simpler[160];
    double simpler_frac;
} pp_plan_verdict;

/* Why c[0] wins over c[1..3) and the best layouts of other shapes (shapes[0..n_shapes), the
 * search's best of each parallel shape). */
void pp_plan_verdict_get(const pp_work *w, const pp_search_candidate *c, int64_t n,
                         const pp_search_candidate *shapes, int64_t n_shapes, pp_plan_verdict *out);
/* The verdict as plan's table ends ("why #1 wins:" ...) and the HTML report shows it. */
void pp_plan_verdict_print(FILE *f, const pp_plan_verdict *v);
/* The verdict as plan's JSON "why" value (null when there is no #1). */
void pp_plan_verdict_json(pp_json *j, const pp_plan_verdict *v);

#endif
