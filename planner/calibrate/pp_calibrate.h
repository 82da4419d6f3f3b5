/* Calibration of the time model on real training logs: `parplan calibrate LOG...`.
 *
 * 1. Megatron-LM logs are parsed (pp_mlog): the "elapsed time per iteration (ms)" lines and the
 *    per-rank "memory (MB)" reports in calibrate_runs.c; the arguments (the printed block or, for
 *    a log that lacks it, the command line it records or a launch script) by the one reader of
 *    Megatron arguments, pp_margs (megatron_args.c).
 * 2. Each run is rebuilt as a work and a layout (pp_calib_run, calibrate_runs.c) from
 *    pp_margs_read's model, layout and stack, plus the software behaviour the time model needs
 *    (overlap flags, fusions, dropout, attention implementation).
 * 3. A few efficiency factors of one software stack on one cluster (pp_calibration, stored in the
 *    hardware profile) are fitted by bounded least squares on log(predicted / measured), and the
 *    time model applies them whenever the work's profile carries them (time.c calls
 *    pp_calibration_apply_ctx / _layer). The fit is calibrate.c. */
#ifndef PP_CALIBRATE_H
#define PP_CALIBRATE_H

#include "pp.h"
#include "pp_margs.h"
#include "pp_profile.h"
#include "pp_time.h"

/* ------------------------------------------------------------------ logs */

typedef struct {
    int64_t rank, after;     /* "[Rank N] (after K iterations)" */
    double allocated_mib, max_allocated_mib, reserved_mib, max_reserved_mib;
} pp_mlog_mem;

typedef struct {
    char path[512];
    bool args_block;         /* arguments from the printed block (else from command-line flags) */
    pp_margs args;           /* the arguments (megatron_args.c) */
    int64_t *iter;           /* iteration numbers, in log order (first report of each) */
    double *iter_ms;
    int n_iter, cap_iter;
    pp_mlog_mem *mem;
    int n_mem, cap_mem;
} pp_mlog;

/* Parse a Megatron-LM log (text of len bytes; path names it in messages). A text without any
 * arguments block, iteration line or memory report is not an error here (see pp_calib_run_init);
 * malformed numbers in a recognised line are (PP_ERR_INPUT with line:col), and so is a printed
 * arguments block without its end (a cut log). */
pp_status pp_mlog_parse(pp_mlog *log, const char *text, size_t len, const char *path, pp_error *err);
/* Add the Megatron flags of a command line or launch script (pp_margs_parse_script: bash
 * variables, arrays, comments; torchrun's --nproc-per-node x --nnodes give the GPU count). Keys
 * already present (from the printed block) win. */
pp_status pp_mlog_add_flags(pp_mlog *log, const char *text, size_t len, const char *path, pp_error *err);
/* Read log_path, and args_path's flags when not NULL; a log with no printed arguments block falls
 * back to the flags of its "# cmd" / pretrain_*.py line. */
pp_status pp_mlog_load(pp_mlog *log, const char *log_path, const char *args_path, pp_error *err);
void pp_mlog_free(pp_mlog *log); /* accepts NULL */
/* Value of an argument, NULL when absent or printed as None. */
const char *pp_mlog_arg(const pp_mlog *log, const char *key);
/* Median elapsed ms of the iterations numbered above `warmup` (Megatron's first two iterations
 * include compilation and allocator growth); 0 when there is none. *n_used: how many. */
double pp_mlog_step_ms(const pp_mlog *log, int64_t warmup, int *n_used);
/* The last "max allocated" (MiB) reported by a rank; 0 when that rank reported none. */
double pp_mlog_max_alloc_mib(const pp_mlog *log, int64_t rank);

/* ------------------------------------------------------------------ runs */

#define PP_CALIB_WARMUP_ITERS 2

typedef struct {
    char name[128];          /* the log's file name without directories and .log */
    char path[512];
    pp_work work;
    pp_layout layout;        /* use pp_calib_run_layout(): it points at the stage arrays below */
    pp_time_opts opts;
    bool uneven;             /* stage_layers/stage_recompute hold an explicit split */
    int stage_layers[PP_MAX_STAGES], stage_recompute[PP_MAX_STAGES];
    bool vsplit;             /* vstage_layers holds the log's split by virtual stage */
    int vstage_layers[PP_MAX_VSTAGES];
    char stack[160];         /* "megatron local (no TE), unfused attention, no fusions" */
    double measured_step_s;  /* median after the warm-up */
    /* calibrate --probe-cache: the run's layer as parplan-probe measured it (0: not measured) */
    double probe_fwd_s, probe_fwdbwd_s;
    int iters_used;
    /* memory: measured max allocated per pipeline stage (largest over the stage's ranks that
     * printed one), MiB; 0 when no rank of the stage printed */
    int64_t n_stages;
    double stage_max_alloc_mib[PP_MAX_STAGES];
    bool oom;                /* FSDP CSV rows (pp_calib_fsdp_csv_load): the run ran out of memory */
    int64_t alloc_retries;   /* FSDP CSV rows: times the allocator freed its cache and retried (a
                                run at the edge of the memory: its time is the allocator's too) */
} pp_calib_run;

/* FSDP2 runs recorded as a CSV table (tests/data/fsdp/runs.csv, written by
 * tools/fsdp/parse_runs.py): `#` comment lines, a header, one row per launch. The columns read
 * (others are ignored, in any order): name, status (ok | oom | ...), gpus, replicate, dim, layers,
 * heads, kv_heads, ffn, vocab (a torchtitan Llama-3 shape: SwiGLU, RMSNorm, RoPE, untied, no
 * bias, no dropout), mbs, seq, ac (none | selective | full), reshard_after_forward (true: --zero
 * 3, false: --zero 2), optimizer (fused | foreach), step_ms_median, max_alloc_mib, alloc_retries
 * (empty: 0). Each row is
 * one step of mbs sequences per rank on gpus ranks of `gpu` (--framework fsdp, flash attention).
 * Rows whose status is neither ok nor oom are skipped. *runs is allocated (free() it); an OOM
 * row has oom set and no measured step. */
pp_status pp_calib_fsdp_csv_load(const char *path, const pp_gpu *gpu, pp_calib_run **runs, int *n,
                                 pp_error *err);

/* Rebuild the run from a parsed log: gpu is the cluster's GPU (the logs do not name it).
 * PP_ERR_INPUT when an argument the model needs is missing or malformed, or the log has no
 * iteration after the warm-up (the error says which). */
pp_status pp_calib_run_init(pp_calib_run *run, pp_mlog *log, const pp_gpu *gpu, pp_error *err);
/* The run's layout with its stage arrays attached (copy it; do not keep it past the run). */
pp_layout pp_calib_run_layout(const pp_calib_run *run);

/* ------------------------------------------------------------------ the fit */

/* The fitted factors (pp_calibration, in pp_profile.h) in a fixed order. */
enum { PP_CAL_GEMM = 0, PP_CAL_ELEMENTWISE, PP_CAL_SCORE, PP_CAL_LAYER, PP_CAL_OPTIMIZER,
       PP_CAL_MOE_LAYER, PP_CAL_EXPERT, PP_CAL_COUNT };
extern const char *const pp_cal_names[PP_CAL_COUNT]; /* the YAML keys */

/* Predicted step time of a run with the base profile (may be NULL) and a calibration (may be
 * NULL: the uncalibrated model). */
pp_status pp_calib_predict(const pp_calib_run *run, const pp_profile *base, const pp_calibration *cal,
                           double *step_s, pp_error *err);

typedef struct {
    unsigned fit_mask;       /* 1 << PP_CAL_*: the factors fitted (others stay neutral) */
    int max_iters;           /* Levenberg-Marquardt iterations (default 200) */
} pp_calib_params;
void pp_calib_params_init(pp_calib_params *p); /* every factor, 200 iterations */
/* The factors the runs can determine: gemm, layer and optimizer always; score_bytes when some run
 * used unfused attention (else it has no effect), elementwise_scale otherwise. With unfused
 * attention elementwise_scale is left out: it is nearly collinear with score_bytes and
 * layer_overhead_s (on the 21 H200 logs of tests/data the fit pushes it to its bound while the
 * leave-one-out error stays the same, 2.5%). */
unsigned pp_calib_default_mask(const pp_calib_run *runs, int n);

typedef struct {
    int n;
    double *measured_s, *before_s, *after_s, *loo_s; /* per run; loo_s NULL when n < 3 */
    double mape_before, mape_after, mape_loo;        /* percent; mape_loo < 0 when not computed */
    double max_abs_before, max_abs_after, max_abs_loo;
    pp_calibration cal;
} pp_calib_result;

/* Fit on the runs, then refit with each run left out to predict it (leave-one-out), so that
 * mape_loo says how well the factors generalise to a layout they were not fitted on. */
pp_status pp_calib_fit(const pp_calib_run *runs, int n, const pp_profile *base, const pp_calib_params *p,
                       pp_calib_result *res, pp_error *err);
void pp_calib_result_free(pp_calib_result *res); /* accepts NULL */

/* ------------------------------------------------------------------ use by the time model */


/* Neutral factors (gemm 1, elementwise 1, score 0, layer 0, optimizer 1), present = false. */
void pp_calibration_init(pp_calibration *cal);

/* ------------------------------------------------------------------ measured layers (plan --probe) */

/* What pp_time_step_measured put on top of the measurement. */
typedef struct {
    double stack_fwd_s, stack_bwd_s; /* added per layer and micro-batch for the stack (cal's terms) */
    double optimizer_meas_s;         /* measured optimizer step over the rank's shard (0: modelled) */
} pp_time_measured;

/* The step of layout l when one transformer layer of it was measured (fwd_s, fwdbwd_s: forward,
 * and forward + backward, on one GPU, by parplan-probe layer): the time model's schedule (pipeline,
 * bubble, TP/PP/DP communication, embedding and output layer) with the measured layer in place of
 * the modelled one, plus the software stack's own costs that a CUDA probe does not run, from `cal`
 * (the per-layer overhead: kernel launches, Python dispatch; the extra HBM passes of an unfused
 * attention's separate mask / softmax / dropout kernels). When w's profile has optimizer records
 * (parplan-probe optimizer), the optimizer step is read from them x cal's optimizer_scale.
 * cal's gemm_scale applies to the modelled GEMMs only (embedding, output layer); NULL or absent:
 * nothing added. Used by plan --probe (probe_plan.c pp_probe_compose) and by calibrate --probe-cache. */
void pp_time_step_measured(const pp_work *w, const pp_layout *l, const pp_time_opts *o, const pp_calibration *cal,
                           double fwd_s, double fwdbwd_s, pp_time_result *out, pp_time_measured *info);
/* The same with a measured layer per kind (fwdbwd_s[k] > 0: kind k measured, forward fwd_s[k]):
 * each measured kind takes its figure plus the stack's terms; the kinds not measured move by the
 * main kind's measured/modelled ratio (pp_time_layer_rescale_kinds), or keep the model's figure
 * when the main kind was not measured. info's stack terms are the main kind's. */
void pp_time_step_measured_kinds(const pp_work *w, const pp_layout *l, const pp_time_opts *o,
                                 const pp_calibration *cal, const double fwd_s[PP_LAYER_KINDS],
                                 const double fwdbwd_s[PP_LAYER_KINDS], pp_time_result *out, pp_time_measured *info);

/* What plan --probe measured of one layer kind on one rank, seconds per micro-batch (forward, and
 * forward + backward; 0: not measured). Each measured part replaces the time model's figure of the
 * same part (pp_time_layer_compose). */
typedef struct {
    double layer_fwd_s, layer_fwdbwd_s; /* the whole layer (parplan-probe layer at the kind's MLP) */
    double attn_fwd_s, attn_fwdbwd_s;   /* the layer without its MLP: norms, attention, projection and
                                         * residual adds (parplan-probe layer --no-mlp) */
    double mla_fwd_s, mla_fwdbwd_s;     /* the MLA block: projections, RoPE, attention; not its norms
                                         * and residual adds (parplan-probe mla) */
    double moe_fwd_s, moe_fwdbwd_s;     /* the MoE MLP: router, permutation, the rank's routed
                                         * experts, unpermute, and the shared experts when moe_shared
                                         * (parplan-probe moe) */
    double expert_fwd_s, expert_bwd_s;  /* of which the routed experts' GEMMs and activation */
    bool moe_shared;
} pp_layer_measured;

typedef struct {
    double fwd_s, fwdbwd_s;             /* the kind's layer: the measured parts + the model's rest */
    double modelled_fwd_s, modelled_bwd_s; /* that rest (the model's figure of what was not measured) */
    double host_fwd_s, host_bwd_s;      /* added to the measured experts for the host's pace */
    bool measured;                      /* some part was measured */
} pp_layer_composed;

/* Layer kind `kind` of layout l with the measured parts of `meas` in place of the model's figures
 * of the same parts: a whole measured layer is taken as it is; otherwise the model's layer (without
 * cal's per-layer stack terms, which pp_time_step_measured_kinds adds) minus the model's figure of
 * each measured part plus the measurement. The model's parts come from the model itself on variants
 * of the work's model: the layer without its MLP (experts and FFN 0), with a dense MLP of the shared
 * experts' size, and for MLA the norms and residual adds alone (no heads, no latent ranks). The MoE
 * part gets the host's pace of a calibrated stack (cal's moe_layer_overhead_s and, looped,
 * expert_overhead_s per local expert; time.c layer_terms' max over the expert part) where that is
 * slower than the measured experts. */
void pp_time_layer_compose(const pp_work *w, const pp_layout *l, const pp_time_opts *o, const pp_calibration *cal,
                           int kind, const pp_layer_measured *meas, pp_layer_composed *out);

#endif
