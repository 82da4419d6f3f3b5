/* Uneven pipeline stages and per-stage recompute (pp_stages.h): the entry points. A costs table
 * solved with GLPK (pp_stages_solve_costs: the uniform split, the MILP of either formulation,
 * GLPK's run with the incumbent, the answer re-checked in exact arithmetic), the LP dump, the
 * solve from the models with the memory model's own check of the chosen stages
 * (pp_stages_solve), the one call for check and plan (pp_stages_apply), the gain bound, and
 * plan's refine step. The cost tables are in stages_costs.c and stages_model.c, the two MILPs
 * in stages_milp.c (by layer counts) and stages_kinds.c (by layer kind). */
#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pp_memory.h"
#include "pp_time.h"
#include "stages_internal.h"

const char *const pp_stages_mode_names[PP_STAGES_MODE_COUNT] = {"uniform", "ilp", "auto"};
const char *const pp_stages_status_names[PP_STAGES_STATUS_COUNT] = {"uniform", "optimal", "fallback"};

void pp_stages_params_init(pp_stages_params *p)
{
    memset(p, 0, sizeof *p);
    p->mode = PP_STAGES_MODE_ILP;
    p->time_limit_ms = 60000;
    p->work_limit = 100000;
    p->min_gain = 0.002;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------------ a costs table */

static const char *glpk_ret_name(int ret)
{
    switch (ret) {
    case 0: return "ok";
    case GLP_EBOUND: return "incorrect bounds";
    case GLP_EROOT: return "no optimal LP basis at the root";
    case GLP_ENOPFS: return "no primal feasible solution (nothing fits)";
    case GLP_ENODFS: return "LP relaxation unbounded";
    case GLP_EFAIL: return "solver failure";
    case GLP_EMIPGAP: return "stopped at the MIP gap";
    case GLP_ETMLIM: return "time limit reached";
    case GLP_ESTOP: return "stopped";
    case GLP_EITLIM: return "iteration limit reached";
    default: return "unknown return";
    }
}

static const char *glpk_status_name(int st)
{
    switch (st) {
    case GLP_OPT: return "optimal";
    case GLP_FEAS: return "feasible, optimality not proven";
    case GLP_NOFEAS: return "no integer feasible solution";
    case GLP_UNDEF: return "undefined";
    default: return "unknown";
    }
}

static void incumbent_cb(glp_tree *T, void *info)
{
    pp_stages_incumbent *inc = info;
    /* The work limit: simplex iterations (all of the search's LPs) times stages, a count that is
     * the same on every machine and under valgrind, where a wall-clock limit gives a split that
     * depends on the machine's load; plan's answer must not. */
    if (inc->work_limit > 0 && !inc->stopped &&
        (int64_t)glp_get_it_cnt(glp_ios_get_prob(T)) * inc->n_stages > inc->work_limit) {
        inc->stopped = true;
        glp_ios_terminate(T);
        return;
    }
    if (glp_ios_reason(T) == GLP_IHEUR && inc->ready && !inc->given) {
        inc->given = true;
        glp_ios_heur_sol(T, inc->x); /* GLPK checks it; a rejected one only costs time */
    }
}

pp_status pp_stages_dump_lp_costs(const pp_stages_costs *c, const char *path, pp_error *err)
{
    pp_status st = pp_stages_costs_validate(c, err);
    if (st != PP_OK) return st;
    if (!path || !path[0]) return COSTS_BAD("--dump-ilp needs a file name");
    int term = glp_term_out(GLP_OFF); /* glp_write_lp prints "Writing problem data..." */
    glp_prob *P;
    if (c->by_kind) {
        pp_stages_kind_index *kx;
        P = pp_stages_kind_build(c, false, &kx, NULL, NULL);
        pp_stages_kind_index_free(kx);
    } else {
        pp_stages_milp_index ix;
        P = pp_stages_milp_build(c, &ix, NULL);
    }
    if (!P) {
        st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory building the stage MILP");
        goto done;
    }
    if (glp_write_lp(P, NULL, path) != 0)
        st = pp_error_set(err, PP_ERR_RUNTIME, path, 0, 0, "cannot write the stage MILP (CPLEX LP)");
done:
    if (P) glp_delete_prob(P);
    glp_term_out(term);
    return st;
}

/* Whether stage j fits holding n layers with some count of them recomputed (the MILP's memory
 * rows: base + layer n without recompute; rc_base + rc_layer n - saved r with 1 <= r <= n). */
static bool stage_fits_n(const pp_stages_costs *c, int64_t j, int64_t n)
{
    double lim = c->mem_limit_bytes[j];
    if (c->mem_table[j]) return c->mem_rmin[j * (c->layers + 1) + n] >= 0;
    if (c->mem_base_bytes[j] + c->mem_layer_bytes[j] * (double)n <= lim) return true;
    if (!c->allow_recompute || n < 1) return false;
    double saved = c->mem_recompute_saved_bytes[j] * (double)n; /* r = n saves the most */
    return c->mem_rc_base_bytes[j] + c->mem_rc_layer_bytes[j] * (double)n - saved <= lim;
}

/* A proof that no split fits, without the solver: some stage fits no layer count in its bounds,
 * or the counts each stage can hold cannot sum to L. Where no split fits, GLPK's branch and
 * bound can spend its whole time limit proving it (seconds on a plan whose window has no fitting
 * layout); this answers in O(p L). Sound, not complete: the MILP still decides the rest. */
static bool stages_none_fits(const pp_stages_costs *c)
{
    int64_t lo_sum = 0, hi_sum = 0;
    for (int64_t j = 0; j < c->n_stages; j++) {
        int64_t lo = -1, hi = -1;
        for (int64_t n = c->layers_min[j]; n <= c->layers_max[j] && n <= c->layers; n++)
            if (stage_fits_n(c, j, n)) {
                if (lo < 0) lo = n;
                hi = n;
            }
        if (lo < 0) return true;
        lo_sum += lo;
        hi_sum += hi;
    }
    return c->layers < lo_sum || c->layers > hi_sum;
}

pp_status pp_stages_solve_costs(const pp_stages_costs *c, const pp_stages_params *params,
                                pp_stages_result *out, pp_error *err)
{
    pp_stages_params defaults;
    if (!params) {
        pp_stages_params_init(&defaults);
        params = &defaults;
    }
    pp_status st = pp_stages_costs_validate(c, err);
    if (st != PP_OK) return st;
    if (params->mode < 0 || params->mode >= PP_STAGES_MODE_COUNT)
        return COSTS_BAD("stage split mode %d unknown", (int)params->mode);
    if (params->time_limit_ms < 1) return COSTS_BAD("stage MILP time limit must be >= 1 ms");
    if (!isfinite(params->min_gain) || params->min_gain < 0 || params->min_gain >= 1)
        return COSTS_BAD("stage split min_gain %g must be in [0, 1)", params->min_gain);

    memset(out, 0, sizeof *out);
    pp_stages_result uni;
    pp_stages_uniform(c, &uni);
    *out = uni;
    out->status = PP_STAGES_UNIFORM;
    out->uniform_pipeline_time_s = uni.pipeline_time_s;
    out->uniform_fits = uni.fits;
    if (params->mode == PP_STAGES_MODE_UNIFORM) return PP_OK;

    double t0 = now_s();
    int term = glp_term_out(GLP_OFF);
    /* The incumbent: the greedy split at T* (stages_milp.c; by_kind the DP's best split,
     * stages_kinds.c), handed to GLPK at its first heuristic call so that the search starts with
     * a bound to prune against. The callback needs the original problem's columns, so the MIP
     * presolver is off and the LP relaxation is solved first by the simplex method (its own
     * presolver on). */
    pp_stages_incumbent inc;
    memset(&inc, 0, sizeof inc);
    pp_stages_milp_index ix;
    pp_stages_kind_index *kx = NULL; /* by_kind: the cut MILP's columns */
    /* by_kind: the DP proved that no split fits by the rows; else the bound below */
    bool none_fits = !c->by_kind && stages_none_fits(c);
    glp_prob *P = none_fits  ? NULL
                  : c->by_kind ? pp_stages_kind_build(c, params->milp_only, &kx, &inc, &none_fits)
                               : pp_stages_milp_build(c, &ix, &inc);
    if (!P && !none_fits) {
        glp_term_out(term);
        return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory building the stage MILP");
    }
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.presolve = GLP_ON;
    sm.tm_lim = params->time_limit_ms;
    inc.work_limit = params->work_limit;
    inc.n_stages = c->n_stages > 0 ? c->n_stages : 1;
    if (params->work_limit > 0) {
        int64_t it = params->work_limit / inc.n_stages;
        sm.it_lim = it < INT_MAX ? (int)(it > 0 ? it : 1) : INT_MAX;
    }
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_OFF;
    parm.tm_lim = params->time_limit_ms;
    parm.mip_gap = 0.0;     /* the proven optimum, not within a gap */
    parm.cb_func = incumbent_cb;
    parm.cb_info = &inc;
    int ret, mst;
    /* The cut MILP mixes GiB rows with 0/1 columns and ms times: scale it (glpsol does) */
    if (P && c->by_kind) glp_scale_prob(P, GLP_SF_AUTO);
    int lp_ret = none_fits ? GLP_ENOPFS : glp_simplex(P, &sm);
    if (none_fits) {
        ret = GLP_ENOPFS;
        mst = GLP_NOFEAS;
    } else if (lp_ret == 0 && glp_get_status(P) == GLP_OPT) {
        /* one time limit for both: what the simplex left */
        double left_ms = params->time_limit_ms - 1e3 * (now_s() - t0);
        parm.tm_lim = left_ms > 1 ? (int)left_ms : 1;
        ret = glp_intopt(P, &parm);
        mst = glp_mip_status(P);
    } else {
        /* The LP relaxation has no optimum: nothing fits (or the simplex failed or ran out of
         * time: its return says which). */
        ret = lp_ret == 0 ? GLP_ENOPFS : lp_ret;
        mst = GLP_NOFEAS;
    }
    free(inc.x);
    out->ilp_ran = true;
    out->glpk_ret = ret;
    out->glpk_mip_status = mst;
    int64_t n[PP_MAX_STAGES], r[PP_MAX_STAGES];
    /* which limit stopped GLPK, in the words both warnings below use ("" when none did) */
    char lim[96] = "";
    if (ret == GLP_ETMLIM) snprintf(lim, sizeof lim, "its %.0f ms limit reached", (double)params->time_limit_ms);
    if (ret == GLP_ESTOP || ret == GLP_EITLIM)
        snprintf(lim, sizeof lim, "its work limit reached (%lld simplex iterations x stages)",
                 (long long)params->work_limit);
    bool proven = ret == 0 && mst == GLP_OPT;
    /* At the work (or time) limit with an integer solution (GLP_FEAS: the incumbent, at least
     * as good as the greedy split handed in) that split is used: better than the uniform one,
     * which the solver has beaten or which does not fit (e.g. 52 stages with a recompute count
     * each: the min-max objective leaves a gap GLPK does not close in seconds). */
    bool optimal = proven || ((ret == GLP_ETMLIM || ret == GLP_ESTOP) && mst == GLP_FEAS);
    if (optimal && c->by_kind) pp_stages_kind_split(c, P, kx, n, r);
    else if (optimal) pp_stages_milp_split(c, P, &ix, n, r);
    pp_stages_kind_index_free(kx);
    if (P) glp_delete_prob(P);
    glp_term_out(term);
    out->solve_time_s = now_s() - t0;

    pp_stages_result ilp;
    memset(&ilp, 0, sizeof ilp);
    if (optimal) {
        /* Re-check GLPK's answer in exact arithmetic: integral, in bounds, summing to L, fits. */
        int64_t sum = 0;
        for (int64_t j = 0; j < c->n_stages; j++) {
            sum += n[j];
            if (n[j] < c->layers_min[j] || n[j] > c->layers_max[j] || r[j] < 0 || r[j] > n[j])
                optimal = false;
        }
        if (sum != c->layers) optimal = false;
        if (optimal) {
            pp_stages_result_fill(c, n, r, &ilp);
            if (!ilp.fits) optimal = false;
        }
        if (!optimal)
            snprintf(out->warning, sizeof out->warning,
                     "stage MILP: GLPK's optimum does not check out in exact arithmetic; "
                     "using the uniform split");
    } else {
        /* A proof that no stage split fits changes no answer (the uniform split does not fit
         * either, and the verdict says so): kept, but moot (not printed). Anything else may have:
         * what, and the time limit only where GLPK reached it. */
        bool infeasible = (ret == 0 && mst == GLP_NOFEAS) || ret == GLP_ENOPFS;
        snprintf(out->warning, sizeof out->warning,
                 "stage MILP gave no integer optimum (GLPK: %s; status: %s%s%s); using the uniform split",
                 infeasible ? "no stage split fits in memory" : glpk_ret_name(ret), glpk_status_name(mst),
                 lim[0] ? "; " : "", lim);
        out->warning_moot = infeasible;
    }
    if (!optimal) {
        out->status = PP_STAGES_FALLBACK;
        return PP_OK;
    }
    out->ilp_optimal = proven;
    out->ilp_pipeline_time_s = ilp.pipeline_time_s;
    bool take = params->mode == PP_STAGES_MODE_ILP ||
                (!uni.fits && ilp.fits) ||
                ilp.pipeline_time_s < uni.pipeline_time_s * (1.0 - params->min_gain);
    if (!take) return PP_OK; /* auto: uniform is as good */
    if (!proven)
        snprintf(out->warning, sizeof out->warning,
                 "stage MILP: %s; the best split found is used (optimality not proven)", lim);
    /* Keep the uniform comparison and the solver's record, take the MILP's split. */
    memcpy(out->stage_layers, ilp.stage_layers, sizeof out->stage_layers);
    memcpy(out->stage_recompute, ilp.stage_recompute, sizeof out->stage_recompute);
    memcpy(out->stage_time_s, ilp.stage_time_s, sizeof out->stage_time_s);
    memcpy(out->stage_mem_bytes, ilp.stage_mem_bytes, sizeof out->stage_mem_bytes);
    out->max_stage_time_s = ilp.max_stage_time_s;
    out->pipeline_time_s = ilp.pipeline_time_s;
    out->fits = ilp.fits;
    out->status = PP_STAGES_OPTIMAL;
    return PP_OK;
}

/* ------------------------------------------------------------------ from the models */

/* pp_stages_solve re-solves at most this many times, excluding one more rejected stage
 * configuration each time, before it falls back to the uniform split. */
#define KIND_EXCLUDE_ROUNDS 64

static pp_status costs_exclude(pp_stages_costs *c, int64_t j, int64_t first, int64_t n, int64_t r,
                               pp_error *err)
{
    int64_t (*x)[4] = realloc(c->excluded, sizeof *x * (size_t)(c->n_excluded + 1));
    if (!x) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory (stage costs)");
    c->excluded = x;
    x[c->n_excluded][0] = j, x[c->n_excluded][1] = first, x[c->n_excluded][2] = n,
    x[c->n_excluded][3] = r;
    c->n_excluded++;
    return PP_OK;
}

pp_status pp_stages_solve(const pp_work *w, const pp_layout *l, const pp_stages_params *params,
                          pp_stages_result *out, pp_error *err)
{
    pp_stages_params defaults;
    if (!params) {
        pp_stages_params_init(&defaults);
        params = &defaults;
    }
    pp_stages_costs *c = calloc(1, sizeof *c);
    if (!c) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory (stage costs)");
    pp_layout lu = *l;
    lu.stage_layers = NULL;
    lu.stage_recompute = NULL;
    pp_stages_model_ctx ctx;
    pp_stages_model_ctx_init(&ctx, w, &lu);
    double solve_s = 0;
    pp_status st = pp_stages_costs_from_model(w, l, c, NULL, NULL, 0, err);
    /* Solve; a chosen stage the memory model itself rejects (a kink the fit check missed) is
     * tabulated and the MILP solved again: each round tabulates one more stage. By kind, a
     * stage by position whose table admits a configuration the model rejects (a recompute
     * count above the fewest that fit) has that configuration excluded; at most
     * KIND_EXCLUDE_ROUNDS rounds. */
    int rounds = c->by_kind ? KIND_EXCLUDE_ROUNDS : (int)c->n_stages;
    for (int round = 0; st == PP_OK && round <= rounds; round++) {
        st = pp_stages_solve_costs(c, params, out, err);
        if (st != PP_OK) break;
        solve_s += out->solve_time_s;
        out->solve_time_s = solve_s;
        int64_t bad = -1, bad_first = 0;
        bool fits = true;
        for (int64_t j = 0, first = 0; j < c->n_stages; first += out->stage_layers[j], j++) {
            out->stage_mem_bytes[j] = pp_stages_mem_at(w, &lu, j, first, out->stage_layers[j],
                                                   out->stage_recompute[j]);
            if (out->stage_mem_bytes[j] > c->mem_limit_bytes[j]) {
                fits = false;
                if (bad < 0 && !c->mem_table[j]) bad = j, bad_first = first;
            }
        }
        out->fits = fits;
        if (out->status != PP_STAGES_OPTIMAL || fits) break;
        if (c->by_kind && round < rounds) {
            /* a stage by position fits by its table for r >= rmin: this r is a hole above it */
            if (c->kind_table[bad])
                st = costs_exclude(c, bad, bad_first, out->stage_layers[bad],
                                   out->stage_recompute[bad], err);
            else
                st = pp_stages_costs_tabulate_range(c, bad, pp_stages_eval_model_range, &ctx, err);
            continue;
        }
        if (bad < 0 || c->by_kind) {
            /* Every failing stage is tabulated already: the table disagrees with the model,
             * which only a memory model that shrinks with layers can cause. */
            pp_stages_params uni = *params;
            uni.mode = PP_STAGES_MODE_UNIFORM;
            pp_stages_result keep = *out;
            st = pp_stages_solve_costs(c, &uni, out, err);
            if (st != PP_OK) break;
            out->ilp_ran = keep.ilp_ran;
            out->solve_time_s = solve_s;
            out->glpk_ret = keep.glpk_ret;
            out->glpk_mip_status = keep.glpk_mip_status;
            out->status = PP_STAGES_FALLBACK;
            snprintf(out->warning, sizeof out->warning,
                     "stage MILP: its split does not fit by the memory model itself%s; using the "
                     "uniform split", c->by_kind ? " after excluding the configurations it rejected" : "");
            for (int64_t j = 0, first = 0; j < c->n_stages; first += out->stage_layers[j], j++)
                out->stage_mem_bytes[j] = pp_stages_mem_at(w, &lu, j, first, out->stage_layers[j],
                                                       out->stage_recompute[j]);
            break;
        }
        st = pp_stages_costs_tabulate(c, bad, pp_stages_eval_model, &ctx, err);
    }
    if (st == PP_OK && out->status != PP_STAGES_OPTIMAL) {
        /* Uniform or fallback: the memory model's figures for the uniform split. */
        bool fits = true;
        for (int64_t j = 0, first = 0; j < c->n_stages; first += out->stage_layers[j], j++) {
            out->stage_mem_bytes[j] = pp_stages_mem_at(w, &lu, j, first, out->stage_layers[j],
                                                   out->stage_recompute[j]);
            fits = fits && out->stage_mem_bytes[j] <= c->mem_limit_bytes[j];
        }
        out->fits = fits;
    }
    pp_stages_costs_free(c);
    free(c);
    return st;
}

pp_status pp_stages_dump_lp(const pp_work *w, const pp_layout *l, const char *path, pp_error *err)
{
    pp_stages_costs *c = calloc(1, sizeof *c);
    if (!c) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory (stage costs)");
    pp_status st = pp_stages_costs_from_model(w, l, c, NULL, NULL, 0, err);
    if (st == PP_OK) st = pp_stages_dump_lp_costs(c, path, err);
    pp_stages_costs_free(c);
    free(c);
    return st;
}

void pp_stages_gain_bound(const pp_work *w, const pp_layout *l, double *max_gain_s,
                          double *lower_bound_s)
{
    if (max_gain_s) *max_gain_s = 0;
    if (lower_bound_s) *lower_bound_s = 0;
    pp_stages_costs *c = calloc(1, sizeof *c);
    if (!c) return;
    pp_layout lu = *l;
    lu.stage_layers = NULL;
    lu.stage_recompute = NULL;
    if (pp_stages_costs_time_fill(w, &lu, c, NULL) != PP_OK) {
        pp_stages_costs_free(c);
        free(c);
        return;
    }
    /* Any split: sum_j t_j >= W (no recompute) and max_j t_j >= max(W / p, t_j(lo_j, 0)). */
    double W = 0, tmax = 0;
    if (c->by_kind) {
        /* Every layer at its kind's time (the same on every stage), each stage at least its
         * base and lo_j layers of the cheapest kind. */
        double cheapest = INFINITY;
        for (int64_t i = 0; i < c->layers; i++) {
            double t = c->kind_time_layer_s[0][c->layer_kind[i]];
            W += t;
            cheapest = fmin(cheapest, t);
        }
        for (int64_t j = 0; j < c->n_stages; j++) {
            W += c->time_base_s[j];
            tmax = fmax(tmax, c->time_base_s[j] + cheapest * (double)c->layers_min[j]);
        }
    }
    for (int64_t j = 0; j < c->n_stages && !c->by_kind; j++) {
        W += c->time_base_s[j] + c->time_layer_s[j] * (double)c->layers_min[j];
        double tj = c->time_base_s[j] + c->time_layer_s[j] * (double)c->layers_min[j];
        if (tj > tmax) tmax = tj;
    }
    int64_t lo_sum = 0;
    for (int64_t j = 0; j < c->n_stages; j++) lo_sum += c->layers_min[j];
    if (!c->by_kind) /* the same per-layer time everywhere */
        W += c->time_layer_s[0] * (double)(c->layers - lo_sum);
    if (W / (double)c->n_stages > tmax) tmax = W / (double)c->n_stages;
    double lb = c->obj_max_weight * tmax + c->obj_sum_weight * W;
    pp_stages_result *u = malloc(sizeof *u);
    if (u) {
        pp_stages_uniform(c, u);
        if (max_gain_s) *max_gain_s = u->pipeline_time_s > lb ? u->pipeline_time_s - lb : 0;
        free(u);
    }
    if (lower_bound_s) *lower_bound_s = lb;
    pp_stages_costs_free(c);
    free(c);
}

pp_status pp_stages_apply(const pp_work *w, pp_layout *l, const char *mode, const char *dump_path,
                          int stage_layers[], int stage_recompute[], pp_stages_result *res,
                          pp_error *err)
{
    if (!w || !l) return MODEL_BAD("stage split: no work or layout");
    int mi = mode ? pp_name_lookup(pp_stages_mode_names, PP_STAGES_MODE_COUNT, mode)
                  : PP_STAGES_MODE_UNIFORM;
    if (mi < 0) return MODEL_BAD("--stages expects uniform|ilp|auto, got '%s'", mode);
    l->stage_layers = NULL;
    l->stage_recompute = NULL;
    pp_status st = PP_OK;
    /* A split by virtual stage (given, or the balanced one of an interleaved pipeline whose
     * virtual stages do not divide the layers) is not the MILP's to change: it stands. */
    bool split = l->vstage_layers || pp_layout_vstages_uneven(w, l);
    if (dump_path && split)
        return MODEL_BAD("--dump-ilp: the layout's split by virtual stage stands, there is no stage ILP to write");
    if (dump_path) {
        st = pp_stages_dump_lp(w, l, dump_path, err);
        if (st != PP_OK) return st;
    }
    if (mi == PP_STAGES_MODE_UNIFORM || split) {
        /* Nothing to solve: the caller's layout stands (never an error here). */
        if (res) {
            memset(res, 0, sizeof *res);
            res->status = PP_STAGES_UNIFORM;
            res->n_stages = l->pp;
            for (int64_t j = 0; j < l->pp && j < PP_MAX_STAGES; j++) {
                res->stage_layers[j] = (int)pp_layout_stage_layers(w, l, j);
                res->stage_recompute[j] = l->recompute != PP_RC_FULL ? 0
                    : l->recompute_layers > 0 && l->recompute_layers < res->stage_layers[j]
                        ? (int)l->recompute_layers : res->stage_layers[j];
            }
            if (split && mi != PP_STAGES_MODE_UNIFORM)
                snprintf(res->warning, sizeof res->warning,
                         "--stages %s: the split by virtual stage (%s) stands; the stage ILP splits only pipelines "
                         "it can re-cut", pp_stages_mode_names[mi],
                         l->vstage_layers ? "as given" : "the balanced one where pp x vpp does not divide the layers");
        }
        return PP_OK;
    }
    if (mi != PP_STAGES_MODE_UNIFORM && (!stage_layers || !stage_recompute))
        return MODEL_BAD("stage split: no arrays for the stages");
    pp_stages_result *r = res ? res : malloc(sizeof *r);
    if (!r) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory (stage split)");
    pp_stages_params prm;
    pp_stages_params_init(&prm);
    prm.mode = (pp_stages_mode)mi;
    st = pp_stages_solve(w, l, &prm, r, err);
    if (st == PP_OK && r->status == PP_STAGES_OPTIMAL) {
        for (int64_t j = 0; j < l->pp; j++) {
            stage_layers[j] = r->stage_layers[j];
            stage_recompute[j] = r->stage_recompute[j];
        }
        l->stage_layers = stage_layers;
        l->stage_recompute = stage_recompute;
    }
    if (!res) free(r);
    return st;
}

/* ------------------------------------------------------------------ plan */

/* Same run: every size and option, and the same stage split. */
static bool layout_same(const pp_layout *a, const pp_layout *b)
{
    if (a->tp != b->tp || a->pp != b->pp || a->dp != b->dp || a->vpp != b->vpp || a->cp != b->cp ||
        a->ep != b->ep || a->mbs != b->mbs || a->zero != b->zero || a->dist_opt != b->dist_opt ||
        a->sp != b->sp || a->recompute != b->recompute || a->recompute_layers != b->recompute_layers ||
        a->offload != b->offload)
        return false;
    if (!a->stage_layers != !b->stage_layers || !a->stage_recompute != !b->stage_recompute ||
        !a->vstage_layers != !b->vstage_layers)
        return false;
    for (int64_t k = 0; a->vstage_layers && k < a->pp * (a->vpp > 1 ? a->vpp : 1); k++)
        if (a->vstage_layers[k] != b->vstage_layers[k]) return false;
    for (int64_t j = 0; a->stage_layers && j < a->pp; j++)
        if (a->stage_layers[j] != b->stage_layers[j]) return false;
    for (int64_t j = 0; a->stage_recompute && j < a->pp; j++)
        if (a->stage_recompute[j] != b->stage_recompute[j]) return false;
    return true;
}

static bool refine_before(const pp_search_candidate *a, const pp_search_candidate *b)
{
    if (a->fits != b->fits) return a->fits;
    if (!a->fits) return a->worst_bytes < b->worst_bytes;
    return pp_search_better(a, b);
}

/* The top-th best fitting step time among cand[0..n), INFINITY when fewer fit. */
static double refine_cutoff(const pp_search_candidate *cand, int64_t n, int64_t top)
{
    double *s = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!s) return INFINITY;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if (cand[i].fits) s[k++] = cand[i].time.step_time_s;
    double cut = INFINITY;
    if (k >= top && top > 0) {
        qsort(s, (size_t)k, sizeof s[0], pp_stages_cmp_double);
        cut = s[top - 1];
    }
    free(s);
    return cut;
}

pp_status pp_stages_refine(const pp_work *w, pp_search_candidate *cand, int64_t n, int64_t top,
                           const char *mode, int (*stage_layers)[PP_MAX_STAGES],
                           int (*stage_recompute)[PP_MAX_STAGES], pp_stages_refine_stats *stats,
                           pp_error *err)
{
    pp_stages_refine_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    stats->n = n;
    if (!w || (n > 0 && (!cand || !stage_layers || !stage_recompute)) || n < 0 || top < 1)
        return MODEL_BAD("stage refine: bad arguments");
    const char *m = mode ? mode : "auto";
    int mi = pp_name_lookup(pp_stages_mode_names, PP_STAGES_MODE_COUNT, m);
    if (mi < 0) return MODEL_BAD("--stages expects uniform|ilp|auto, got '%s'", m);
    if (mi == PP_STAGES_MODE_UNIFORM || n == 0) return PP_OK;
    double t0 = now_s();
    pp_stages_result *res = malloc(sizeof *res);
    if (!res) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory (stage refine)");
    pp_status st = PP_OK;
    double cutoff = refine_cutoff(cand, n, top);
    /* auto takes a split only within plan's margin (below): the MILP is asked for one within it,
     * so that it neither spends its time limit on splits that would not be taken nor misses a
     * slower one that would */
    pp_work wplan = *w;
    wplan.gpu.memory_bytes = pp_memory_plan_bytes(w);
    wplan.mem_margin_frac = 0;
    for (int64_t i = 0; i < n; i++) {
        pp_search_candidate *k = &cand[i];
        pp_layout l = k->layout;
        l.stage_layers = NULL;
        l.stage_recompute = NULL;
        if (l.pp < 2 && l.recompute != PP_RC_FULL) continue; /* nothing to choose */
        if (l.vstage_layers || pp_layout_vstages_uneven(w, &l)) continue; /* a split by virtual stage stands */
        if (l.pp > PP_MAX_STAGES) continue;
        double gain = 0;
        pp_stages_gain_bound(w, &l, &gain, NULL);
        /* No split of this candidate, fitting or not as it stands, is faster than its step time
         * less the bound: where that cannot beat the cutoff, the MILP could change no answer. */
        if (k->time.step_time_s - gain >= cutoff) {
            stats->skipped++;
            continue;
        }
        st = pp_stages_apply(mi == PP_STAGES_MODE_AUTO ? &wplan : w, &l, m, NULL, stage_layers[i], stage_recompute[i],
                             res, err);
        if (st != PP_OK) break;
        stats->solved++;
        if (res->warning[0] && !res->warning_moot && !stats->warning[0])
            snprintf(stats->warning, sizeof stats->warning, "%s", res->warning);
        if (!l.stage_layers) continue;
        pp_time_result t;
        st = pp_time_estimate(w, &l, &t, err);
        if (st != PP_OK) break;
        double peak = 0, worst = pp_memory_worst_bytes(w, &l, &peak);
        /* ilp takes the MILP's split as check does (fits the GPU); auto, only within plan's margin */
        bool fits = worst <= (mi == PP_STAGES_MODE_ILP ? w->gpu.memory_bytes : pp_memory_plan_bytes(w));
        bool take = mi == PP_STAGES_MODE_ILP ? fits || !k->fits
                                             : fits && (!k->fits || t.step_time_s < k->time.step_time_s);
        if (!take) continue;
        if (fits && (!k->fits || t.step_time_s < k->time.step_time_s)) stats->improved++;
        if (l.recompute == PP_RC_FULL) {
            /* Full recompute of no layer at all is recompute none: say so (the launch flags
             * follow), and let the duplicate of the none candidate go below. */
            bool any = false;
            for (int64_t j = 0; j < l.pp; j++) any |= l.stage_recompute[j] > 0;
            if (!any) l.recompute = PP_RC_NONE, l.recompute_layers = 0;
            /* One stage recomputing nothing is the plain layout: without the arrays, so that the
             * duplicate below is found (it was listed twice, once as "stages 28") */
            if (!any && l.pp == 1) l.stage_layers = l.stage_recompute = NULL;
        }
        k->layout = l;
        k->time = t;
        k->peak_bytes = peak;
        k->worst_bytes = worst;
        k->headroom_bytes = w->gpu.memory_bytes - worst;
        k->fits = fits;
        cutoff = refine_cutoff(cand, n, top);
    }
    free(res);
    /* Insertion sort: n is the search's window (tens). */
    for (int64_t i = 1; i < n; i++) {
        pp_search_candidate x = cand[i];
        int64_t j = i;
        while (j > 0 && refine_before(&x, &cand[j - 1])) {
            cand[j] = cand[j - 1];
            j--;
        }
        cand[j] = x;
    }
    /* The same run twice (e.g. full recompute that recomputes nothing): keep the first. */
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        bool dup = false;
        for (int64_t j = 0; j < kept && !dup; j++) dup = layout_same(&cand[j].layout, &cand[i].layout);
        if (!dup) cand[kept++] = cand[i];
    }
    stats->n = kept;
    stats->time_s = now_s() - t0;
    return st;
}

