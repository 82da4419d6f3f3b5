/* Uneven pipeline stages and per-stage recompute as a small MILP solved with GLPK.
 *
 * One layer kind. When every decoder layer is alike (and there are no MTP layers), a contiguous
 * assignment of L layers to p stages is fully described by the layer COUNT n_j of each stage
 * (stage 0 holds layers 0..n_0-1 and the embedding, stage p-1 the last n_{p-1} layers, the
 * output layer, the fp32 logits and the loss): any integer vector with sum n_j = L is contiguous
 * by construction. Per stage, r_j of the n_j layers are fully recomputed (Megatron
 * --recompute-granularity full --recompute-method block: the first r_j layers of the stage).
 *
 * Per stage j, with the coefficients of pp_stages_costs:
 *   time_j   = time_base_j + time_layer_j n_j + time_recompute_j r_j          (s per micro-batch)
 *   memory_j = mem_base_j + mem_layer_j n_j                           when r_j = 0
 *            = mem_rc_base_j + mem_rc_layer_j n_j - mem_recompute_saved_j r_j   when r_j >= 1
 * (two regimes: recomputing at all changes the transient working set and the allocator slack).
 * The step's pipeline time is the flow-shop makespan of m identical jobs,
 *   step = (m - 1) max_j time_j + sum_j time_j,
 * (exact for a forward-only pipeline; for a balanced 1F1B pipeline it is the usual (m + p - 1) t,
 * Narayanan et al. SC'21 sec. 2.2; time.c's pp_time_step uses the same) and the MILP minimises
 *   obj_max_weight T + obj_sum_weight sum_j time_j   s.t.   T >= time_j,  sum_j n_j = L,
 *   lo_j <= n_j <= hi_j,  0 <= r_j <= n_j,  z_j <= r_j <= hi_j z_j  (z_j = [r_j > 0], binary),
 *   mem_base_j + mem_layer_j n_j <= limit_j + M0_j z_j                          (regime 0)
 *   mem_rc_base_j + mem_rc_layer_j n_j - saved_j r_j <= limit_j + M1_j (1 - z_j) (regime 1)
 * with big-M constants that make the other regime's row slack. A stage whose memory is not linear
 * in each regime (convex max() terms: unfused attention, FSDP's foreach Adam) is priced instead
 * by a table of the fewest recomputed layers with which it fits for each layer count
 * (pp_stages_costs_tabulate; exact when memory grows with layers and does not grow with
 * recompute), and chooses its count with binaries y_jk = [n_j = k] (multiple choice):
 *   sum_k y_jk = 1,  n_j = sum_k k y_jk,  r_j >= sum_k rmin_j(k) y_jk.
 *
 * Layers of several kinds (by_kind: DeepSeek's dense first layers then MoE layers, Llama 4's
 * alternating dense and MoE layers, Gemma's and gpt-oss's windowed and full attention; or MTP
 * layers on the last stage). A stage's cost now depends on WHICH layers it holds, so the MILP
 * places cuts instead of counts. Kind k = pp_model_layer_kind (PP_LAYER_MOE | PP_LAYER_WINDOW
 * bits); layer i has kind k(i). Binaries, for the cuts c_0 = 0 <= c_1 <= ... <= c_p = L (stage j
 * holds layers [c_j, c_{j+1})) and the recompute ends d_j = c_j + r_j:
 *   U_ji = [i < c_j]   (layer i sits on a stage before j)   U_ji <= U_j,i-1,  U_ji <= U_j+1,i
 *   V_ji = [i < d_j]   (Megatron's block method: the FIRST r_j layers of stage j are
 *                       recomputed)                         U_ji <= V_ji <= U_j+1,i,  V_ji <= V_j,i-1
 * so that x_ji = U_j+1,i - U_ji = [layer i on stage j] and y_ji = V_ji - U_ji = [layer i on
 * stage j and recomputed]; both monotone systems are interval matrices, and a stage's layer and
 * recompute counts by kind are sums of them: n_jk = sum_{k(i)=k} x_ji, r_jk = sum_{k(i)=k} y_ji.
 * Then, exactly (no averaging over kinds; recomputed layers are priced by their own kind):
 *   time_j   = time_base_j + sum_k (kind_time_layer_jk n_jk + kind_time_recompute_jk r_jk) <= T
 *   memory_j = sum_k (kind_mem_layer_jk n_jk - kind_mem_saved_jk r_jk) + S_j(P_j, Q_j) <= limit_j
 * where P_j is the set of kinds on stage j and Q_j the set of kinds recomputed there (Q_j empty
 * is the first regime above, so the two regimes are the Q_j = {} and Q_j != {} cases) and
 * S_j(P, Q) (kind_mem_set_bytes) the rest: base, embedding (first stage), output layer, loss
 * and MTP layers (last stage), and the max() terms of the memory model, which depend only on
 * which kinds are present and recomputed (memory.c: the MoE or dense MLP working set, the
 * recompute working set of the largest recomputed kind). Presence indicators
 *   pres_jk in [0, 1]:  pres_jk >= x_ji (k(i) = k),  pres_jk <= n_jk   (= [n_jk > 0])
 *   rcp_jk  in [0, 1]:  rcp_jk >= y_ji (k(i) = k),   rcp_jk <= r_jk    (= [r_jk > 0])
 * select the row of the actual (P, Q) among one row per mix the stage can hold:
 *   sum_k (...) + S_j(P, Q) - (S_j(P, Q) - S_j,min) dev_j(P, Q) <= limit_j,
 *   dev_j(P, Q) = sum_{k in P} (1 - pres_jk) + sum_{k not in P} pres_jk + (the same for Q, rcp)
 * (dev = 0 exactly at the actual mix; any other row relaxes to the actual mix's, as S >= S_min).
 * A stage whose memory is not of this form (foreach Adam's max() with the activations, FSDP and
 * Megatron-local at short sequences) is priced by position instead (pp_stages_costs_tabulate_range:
 * the fewest recomputed layers rmin_j(f, n) with which each range [f, f + n) fits):
 *   V_j,f+rmin-1 + dev_j(f, n) >= 1,  dev_j(f, n) = (1 - U_j,f-1) + U_jf + (1 - U_j+1,f+n-1) + U_j+1,f+n
 * (dev_j(f, n) = 0 exactly when stage j is [f, f + n); a range that fits with no r: dev >= 1).
 * The time objective is the same as above. The embedding stays on stage 0 and the output layer,
 * loss and MTP layers on stage p-1 (time_base_j, S_j).
 * GLPK alone proves DeepSeek-V3-sized instances (61 layers, 16 stages) with recompute in no
 * reasonable time (the LP relaxation spreads recompute fractionally), so it gets help from a
 * dynamic programme over the cut positions on the MILP's own rows: each range's fewest fitting
 * recomputed layers (time grows with r), then for each max-time threshold T the least sum S(T)
 * in O(p L^2), thresholds from T* (the least max) upwards until w_max T + w_sum S* cannot win.
 * It hands GLPK an incumbent (its best split), T >= T*, sum_j time_j >= S*, the facets of the
 * lower convex hull of the points (T, S(T)) next to the optimum (valid for every split: S(.) is
 * a non-increasing step function above them), and fixes the cuts that no split as good as the
 * incumbent can use (a stage slower than (incumbent - w_sum S*) / w_max). GLPK then closes the
 * gap at the root: DeepSeek-V3 on 16 stages in a few ms. params.milp_only switches the help off
 * (tests: the formulation by itself, against brute force). Configurations the memory model
 * rejects after the solve (a recompute count above a table's rmin that does not fit) are
 * excluded by no-good rows, dev_j(f, n) + [r literals] >= 1, and the MILP solved again.
 * Interleaved schedules (vpp > 1) keep their fixed counts L/p: only the recompute ends are free,
 * and a rank's layers are priced as the contiguous block [j L/p, (j+1) L/p), as the memory and
 * time models do; Megatron's rank j really holds chunks j, j+p, ..., whose kinds mix differs
 * from that block (DeepSeek's dense layers are all in chunk 0 either way), so kinds make the
 * interleaved prices approximate.
 * All GLPK code is in stages.c, stages_milp.c (by counts) and stages_kinds.c (by kind); the
 * files and what they share: stages_internal.h. */
#ifndef PP_STAGES_H
#define PP_STAGES_H

#include "pp.h"
#include "pp_search.h"

/* The cost coefficients of the MILP. Filled from the memory and time models by
 * pp_stages_costs_from_model, or by hand (tests, synthetic instances). */
typedef struct {
    int64_t n_stages;                 /* p, 1..PP_MAX_STAGES */
    int64_t layers;                   /* L, >= sum of layers_min */
    int64_t microbatches;             /* m per step per DP replica (informational) */
    double obj_max_weight;            /* weight of max_j time_j: m - 1 (>= 0) */
    double obj_sum_weight;            /* weight of sum_j time_j: 1 (>= 0) */
    bool allow_recompute;             /* false: r_j = 0 everywhere */
    int64_t uniform_recompute;        /* the uniform reference split: -1 all layers, else min(K, n_j) */
    int64_t layers_min[PP_MAX_STAGES];/* >= 1 */
    int64_t layers_max[PP_MAX_STAGES];/* >= layers_min */
    double time_base_s[PP_MAX_STAGES];      /* embedding / output layer + loss / p2p per micro-batch */
    double time_layer_s[PP_MAX_STAGES];     /* forward + backward of one layer per micro-batch */
    double time_recompute_s[PP_MAX_STAGES]; /* extra forward of one fully recomputed layer */
    /* Memory (peak + reserved bytes) without recompute: base + layer n. */
    double mem_base_bytes[PP_MAX_STAGES];
    double mem_layer_bytes[PP_MAX_STAGES];  /* per layer, all in-flight micro-batches (>= 0) */
    /* With r >= 1 recomputed layers: rc_base + rc_layer n - saved r. */
    double mem_rc_base_bytes[PP_MAX_STAGES];
    double mem_rc_layer_bytes[PP_MAX_STAGES];        /* (>= 0) */
    double mem_recompute_saved_bytes[PP_MAX_STAGES]; /* per recomputed layer (>= 0) */
    double mem_limit_bytes[PP_MAX_STAGES];  /* device capacity */
    /* Stages priced by table instead (pp_stages_costs_tabulate): mem_table[j], and
     * mem_rmin[j * (layers + 1) + n] = the fewest recomputed layers with which stage j fits
     * with n layers, -1 when it does not fit at all. Owned: pp_stages_costs_free. */
    bool mem_table[PP_MAX_STAGES];
    int32_t *mem_rmin;
    /* Layers of several kinds (the cut formulation above): by_kind. time_base_s, time_layer_s
     * and time_recompute_s (the main kind's, informational), mem_limit_bytes and the bounds keep
     * their meaning; the other mem_* fields are unused and mem_table must be false. */
    bool by_kind;
    int8_t *layer_kind;  /* [layers]: kind of decoder layer i (0 .. PP_LAYER_KINDS-1); owned */
    double kind_time_layer_s[PP_MAX_STAGES][PP_LAYER_KINDS];     /* fwd + bwd, per micro-batch */
    double kind_time_recompute_s[PP_MAX_STAGES][PP_LAYER_KINDS]; /* extra forward (>= 0) */
    double kind_mem_layer_bytes[PP_MAX_STAGES][PP_LAYER_KINDS];  /* per layer of the kind */
    double kind_mem_saved_bytes[PP_MAX_STAGES][PP_LAYER_KINDS];  /* per recomputed layer */
    /* S_j(P, Q) = kind_mem_set_bytes[pp_stages_set_index(j, P, Q)]: the rest of stage j's
     * memory when the kinds of bit set P are on it and those of Q (a subset of P) recomputed;
     * must be finite for every mix the stage can hold within its bounds. Owned. */
    double *kind_mem_set_bytes;
    /* A stage whose memory is not of that form (FSDP's and Megatron-local's foreach Adam at
     * short sequences: a max() with the activations) is priced by position instead:
     * kind_table[j], and kind_rmin[pp_stages_rmin_index(c, j, first, layers)] = the fewest
     * recomputed layers with which stage j fits holding [first, first + layers), -1 when it
     * does not fit at all (pp_stages_costs_tabulate_range). Owned. */
    bool kind_table[PP_MAX_STAGES];
    int32_t *kind_rmin;
    /* Stage configurations the MILP must not choose (pp_stages_solve adds those the memory
     * model itself rejects): excluded[e] = {stage, first layer, layers, recomputed}. Owned. */
    int64_t n_excluded;
    int64_t (*excluded)[4];
} pp_stages_costs;
/* Frees mem_rmin and the by_kind arrays (accepts NULL). */
void pp_stages_costs_free(pp_stages_costs *c);

#define PP_STAGES_KIND_SETS (1 << PP_LAYER_KINDS) /* bit sets of kinds */
static inline size_t pp_stages_set_index(int64_t stage, unsigned kinds_on, unsigned kinds_recomputed)
{
    return ((size_t)stage * PP_STAGES_KIND_SETS + kinds_on) * PP_STAGES_KIND_SETS + kinds_recomputed;
}
static inline size_t pp_stages_rmin_index(const pp_stages_costs *c, int64_t stage, int64_t first,
                                           int64_t layers)
{
    return ((size_t)stage * (size_t)(c->layers + 1) + (size_t)first) * (size_t)(c->layers + 1) +
           (size_t)layers;
}
/* Allocate layer_kind and kind_mem_set_bytes (S = NAN everywhere) for by_kind costs whose
 * n_stages and layers are set; sets by_kind. */
pp_status pp_stages_costs_kinds_alloc(pp_stages_costs *c, pp_error *err);

typedef enum {
    PP_STAGES_MODE_UNIFORM = 0, /* the uniform split (remainder on the first stages) */
    PP_STAGES_MODE_ILP,         /* the MILP's optimum; fallback to uniform with a warning */
    PP_STAGES_MODE_AUTO,        /* the MILP's optimum when it beats uniform by min_gain, or when
                                   only it fits; else uniform (plan's default) */
    PP_STAGES_MODE_COUNT
} pp_stages_mode;
extern const char *const pp_stages_mode_names[PP_STAGES_MODE_COUNT]; /* "uniform","ilp","auto" */

typedef struct {
    pp_stages_mode mode;
    int time_limit_ms;   /* GLPK tm_lim, a backstop; default 60000 */
    int64_t work_limit;  /* simplex iterations (root LP and branch and bound) x stages before GLPK
                            is stopped with the best split it has: the same answer on any machine
                            and under any load (a wall-clock limit is not); 0: none; default
                            300000 (0.3 to 3 s on one 2020s core) */
    double min_gain;     /* auto: relative pipeline-time gain needed to leave uniform; default 0.002 */
    bool milp_only;      /* by_kind costs: GLPK alone, without the DP's incumbent, bounds, cut
                            ranges and hull cuts (tests: the formulation by itself); default off */
} pp_stages_params;
void pp_stages_params_init(pp_stages_params *p);

typedef enum {
    PP_STAGES_UNIFORM = 0, /* uniform split, as asked (or auto found no gain) */
    PP_STAGES_OPTIMAL,     /* the layout is the MILP's: GLPK's proven optimum (ilp_optimal), or
                              at its time limit the best split it found (warning says so) */
    PP_STAGES_FALLBACK,    /* no integer solution (infeasible, time limit with none found,
                              non-linear model): uniform, warning says why */
    PP_STAGES_STATUS_COUNT
} pp_stages_status;
extern const char *const pp_stages_status_names[PP_STAGES_STATUS_COUNT]; /* "uniform","optimal","fallback" */

typedef struct {
    pp_stages_status status;
    int64_t n_stages;
    int stage_layers[PP_MAX_STAGES];
    int stage_recompute[PP_MAX_STAGES];
    double stage_time_s[PP_MAX_STAGES];    /* per micro-batch, linear model */
    double stage_mem_bytes[PP_MAX_STAGES]; /* peak + reserved; the memory model's own figure
                                              after pp_stages_solve, the linear model otherwise */
    double max_stage_time_s;
    double pipeline_time_s;       /* obj_max_weight max + obj_sum_weight sum, s per step */
    bool fits;                    /* every stage within its limit */
    /* The uniform split under the same costs, for comparison. */
    double uniform_pipeline_time_s;
    bool uniform_fits;
    /* The MILP (when it ran). */
    bool ilp_ran;
    bool ilp_optimal;             /* GLPK proved the split optimal (not just the best found) */
    double ilp_pipeline_time_s;   /* its optimum (also set when auto keeps uniform) */
    double solve_time_s;          /* wall time of building + glp_intopt */
    int glpk_ret;                 /* glp_intopt's return */
    int glpk_mip_status;          /* glp_mip_status after it */
    char warning[512];            /* "" when none; printed by the CLI as a warning */
    bool warning_moot;            /* the warning changes no answer (GLPK proved that no split fits:
                                     the uniform one does not either, and the verdict says so): not
                                     printed */
} pp_stages_result;

/* A stage evaluator for pp_stages_costs_tabulate (e.g. pp_stages_eval_model): time (s per
 * micro-batch) and memory (peak + reserved bytes) of stage `stage` holding `layers` layers of
 * which `recompute` fully recomputed. */
typedef pp_status (*pp_stages_eval_fn)(void *ctx, int64_t stage, int64_t layers, int64_t recompute,
                                       double *time_s, double *mem_bytes);

/* A stage evaluator by position for pp_stages_costs_tabulate_range (e.g.
 * pp_stages_eval_model_range): stage `stage` holding layers [first, first + layers), the first
 * `recompute` of them fully recomputed. */
typedef pp_status (*pp_stages_eval_range_fn)(void *ctx, int64_t stage, int64_t first,
                                             int64_t layers, int64_t recompute, double *time_s,
                                             double *mem_bytes);

/* Check a costs table (finite, signs, bounds); PP_ERR_INPUT names the bad field. */
pp_status pp_stages_costs_validate(const pp_stages_costs *c, pp_error *err);
/* Time and memory of one stage under the costs. A table stage has no memory figure: mem is its
 * limit when (layers, recompute) fits by the table, +inf when not. by_kind costs: the stage is
 * taken to start where the uniform split's stage starts (use pp_stages_costs_eval_range). */
void pp_stages_costs_eval(const pp_stages_costs *c, int64_t stage, int64_t layers, int64_t recompute,
                          double *time_s, double *mem_bytes);
/* The same for stage `stage` holding layers [first, first + layers), the first `recompute` of
 * them fully recomputed (first is ignored by costs of one kind). A mix with no S_j or an
 * excluded configuration has memory +inf. */
void pp_stages_costs_eval_range(const pp_stages_costs *c, int64_t stage, int64_t first,
                                int64_t layers, int64_t recompute, double *time_s,
                                double *mem_bytes);
/* The uniform split (pp_layout_stage_layers' rule) with uniform_recompute, into out. */
void pp_stages_uniform(const pp_stages_costs *c, pp_stages_result *out);

/* Price stage `stage` by table from eval's memory (peak + reserved <= mem_limit_bytes): for each
 * layer count the fewest recomputed layers that fit (0 only when recompute is not allowed).
 * Assumes what the memory models do: memory grows with layers and does not grow with more
 * recomputed layers (r >= 1); sweeps in O(layers) evaluations. Allocates mem_rmin. */
pp_status pp_stages_costs_tabulate(pp_stages_costs *c, int64_t stage, pp_stages_eval_fn eval,
                                   void *ctx, pp_error *err);
/* The same by position for by_kind costs: for every range [first, first + layers) the stage can
 * hold, the fewest recomputed layers that fit by eval's memory (kind_rmin, kind_table[stage]).
 * Exact for "r < rmin does not fit"; a larger r that does not fit either (memory need not fall
 * with r when recomputing reaches a costlier kind) is left to the caller to exclude
 * (pp_stages_solve does when the MILP picks one). O(ranges x rmin) evaluations. */
pp_status pp_stages_costs_tabulate_range(pp_stages_costs *c, int64_t stage,
                                         pp_stages_eval_range_fn eval, void *ctx, pp_error *err);

/* Coefficients from the memory model (pp_memory_stage) and the time model (pp_time_parts_get) for
 * the layout l (its stage_layers / stage_recompute are ignored). The memory model is fitted per
 * regime from a few points per stage and checked at others (ends and middle of the range, r in
 * {0, 1, 2, n/2, n}); a stage where it is not linear is tabulated instead: *linear is then false
 * and why names the first such stage (informational: the MILP stays exact). Free with
 * pp_stages_costs_free.
 * A model with layers of several kinds or MTP layers gets by_kind costs: per-kind times from
 * pp_time_layer_get (pp_time_layer_terms), per-kind memory slopes from pp_memory_stage_range
 * at two layers of the kind (a kind with one layer folds its slope into S), S_j(P, Q) at the
 * shortest range holding each mix, all checked at other ranges (the longest of each mix; every
 * start at a few lengths and recompute counts); where the check fails *linear is false and
 * pp_stages_solve excludes, one by one, the chosen configurations that the memory model
 * rejects. */
pp_status pp_stages_costs_from_model(const pp_work *w, const pp_layout *l, pp_stages_costs *c,
                                     bool *linear, char *why, size_t why_n, pp_error *err);

/* The core: solve the MILP for costs c (GLPK, presolve on, tm_lim). Never fails on an
 * infeasible or unsolved MILP: the result is then PP_STAGES_FALLBACK with a warning.
 * Errors: bad costs (PP_ERR_INPUT), out of memory. */
pp_status pp_stages_solve_costs(const pp_stages_costs *c, const pp_stages_params *params,
                                pp_stages_result *out, pp_error *err);
/* Write the MILP for c in CPLEX LP format (glpsol --lp FILE solves it; times in ms, memory in
 * GiB, objective = pipeline time per step in ms; its constant is a column "one" fixed at 1). */
pp_status pp_stages_dump_lp_costs(const pp_stages_costs *c, const char *path, pp_error *err);

/* The same from the models for layout l: costs_from_model, then solve; the chosen stages are
 * re-evaluated with the memory model itself (stage_mem_bytes); a stage that does not fit there
 * (its linear fit missed a kink between the checked points) is tabulated (by_kind: that stage
 * configuration is excluded) and the MILP solved again. params NULL: defaults (mode ilp). */
pp_status pp_stages_solve(const pp_work *w, const pp_layout *l, const pp_stages_params *params,
                          pp_stages_result *out, pp_error *err);
pp_status pp_stages_dump_lp(const pp_work *w, const pp_layout *l, const char *path, pp_error *err);

/* Context and evaluator running the real models for one stage (ctx: pp_stages_model_ctx). */
typedef struct {
    const pp_work *w;
    const pp_layout *l;
    double time_layer_s, time_recompute_s; /* filled by pp_stages_model_ctx_init */
    double time_base_s[PP_MAX_STAGES];
    /* Per kind (time.c's per-kind layer terms; every stage alike): */
    double kind_time_layer_s[PP_LAYER_KINDS], kind_time_recompute_s[PP_LAYER_KINDS];
} pp_stages_model_ctx;
void pp_stages_model_ctx_init(pp_stages_model_ctx *ctx, const pp_work *w, const pp_layout *l);
/* By count: the stage starts where the layout's (uniform) split starts it. */
pp_status pp_stages_eval_model(void *ctx, int64_t stage, int64_t layers, int64_t recompute,
                               double *time_s, double *mem_bytes);
/* By position: memory by pp_memory_stage_range, time by each layer's own kind (the MTP layers,
 * output layer and loss in the last stage's base). */
pp_status pp_stages_eval_model_range(void *ctx, int64_t stage, int64_t first, int64_t layers,
                                     int64_t recompute, double *time_s, double *mem_bytes);

/* Upper bound on what any split can save on the pipeline time of the uniform split (s per step),
 * from the time model alone (no GLPK, no memory model): uniform - (w_max max(W/p, t_first(1),
 * t_last(1)) + w_sum W) with W the total work without recompute. plan skips the MILP for a
 * candidate whose uniform step time minus this bound cannot beat the current best. When the
 * uniform split does not fit, compare the bound on the ILP's step time instead:
 * *lower_bound_s = that lower bound on the pipeline time (s per step). */
void pp_stages_gain_bound(const pp_work *w, const pp_layout *l, double *max_gain_s,
                          double *lower_bound_s);

/* One call for check and plan. mode: "uniform", "ilp", "auto" or NULL (uniform). dump_path
 * (optional): write the MILP there first (even for uniform). On PP_STAGES_OPTIMAL fills
 * stage_layers/stage_recompute (PP_MAX_STAGES each, caller-owned, must outlive l) and points
 * l->stage_layers / l->stage_recompute at them; otherwise sets both to NULL (uniform).
 * res (optional) receives the details, res->warning the fallback reason. */
pp_status pp_stages_apply(const pp_work *w, pp_layout *l, const char *mode, const char *dump_path,
                          int stage_layers[], int stage_recompute[], pp_stages_result *res,
                          pp_error *err);

/* plan: refine the search's candidates (best first, as pp_search_run returns them) with the
 * stage MILP. mode "uniform" (nothing), "ilp" (take the MILP's split wherever it solved) or
 * "auto"/NULL (take it when the step time improves, or when only it fits). Candidates are
 * visited best first; one whose step time minus pp_stages_gain_bound cannot beat the top-th
 * best fitting step is skipped (the cutoff tightens as candidates improve). A refined
 * candidate's layout points at row i of stage_layers / stage_recompute (n rows, caller-owned,
 * must outlive cand); its time, memory, headroom and fits are re-evaluated with
 * pp_time_estimate and pp_memory_worst_bytes (full recompute of no layer becomes recompute
 * none); cand is re-sorted (fitting first, then pp_search_better; not fitting by memory) and
 * duplicates (the same run) are dropped: cand[0..stats->n) are the candidates left. */
typedef struct {
    int64_t n;                      /* candidates left in cand (duplicates dropped) */
    int64_t solved, skipped, improved;
    double time_s;
    char warning[512]; /* the first MILP fallback's warning, "" if none */
} pp_stages_refine_stats;
pp_status pp_stages_refine(const pp_work *w, pp_search_candidate *cand, int64_t n, int64_t top,
                           const char *mode, int (*stage_layers)[PP_MAX_STAGES],
                           int (*stage_recompute)[PP_MAX_STAGES], pp_stages_refine_stats *stats,
                           pp_error *err);

#endif
