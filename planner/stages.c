/* Uneven pipeline stages and per-stage recompute: the MILP of pp_stages.h, solved with GLPK.
 * All of parplan's GLPK code is in this file.
 *
 * Why counts are enough: the transformer layers of a decoder are identical, so which layers a
 * stage holds only matters through how many it holds; stage j holds the layers
 * n_0 + ... + n_{j-1} .. n_0 + ... + n_j - 1, which is contiguous for any integer n with
 * sum n_j = L. The embedding is on the first stage and the output layer + loss on the last
 * (Megatron's placement; its --pipeline-model-parallel-layout also allows empty stages, which
 * pp_layout_validate does not: every stage holds at least one layer here).
 *
 * Units inside the MILP: milliseconds and GiB, so that the coefficients are O(1)-O(1e3)
 * rather than 1e-3 s and 1e10 bytes (GLPK's tolerances are absolute-ish, 1e-7 scaled). */
#include "pp_stages.h"

#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pp_memory.h"
#include "pp_time.h"

const char *const pp_stages_mode_names[PP_STAGES_MODE_COUNT] = {"uniform", "ilp", "auto"};
const char *const pp_stages_status_names[PP_STAGES_STATUS_COUNT] = {"uniform", "optimal", "fallback"};

#define MS_PER_S 1e3
#define BYTES_PER_GIB 1073741824.0
/* The memory rows are tightened by this much so that a solution GLPK accepts within its
 * feasibility tolerance (1e-7 relative) still fits when re-checked in exact arithmetic. */
#define MEM_MARGIN_GIB (4096.0 / BYTES_PER_GIB)

void pp_stages_params_init(pp_stages_params *p)
{
    memset(p, 0, sizeof *p);
    p->mode = PP_STAGES_MODE_ILP;
    p->time_limit_ms = 2000;
    p->min_gain = 0.002;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------------ costs */

#define COSTS_BAD(...) pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, __VA_ARGS__)

void pp_stages_costs_free(pp_stages_costs *c)
{
    if (!c) return;
    free(c->mem_rmin);
    c->mem_rmin = NULL;
}

static int32_t *rmin_row(const pp_stages_costs *c, int64_t j)
{
    return c->mem_rmin + (size_t)j * (size_t)(c->layers + 1);
}

pp_status pp_stages_costs_validate(const pp_stages_costs *c, pp_error *err)
{
    if (!c) return COSTS_BAD("stage costs: none given");
    int64_t p = c->n_stages;
    if (p < 1 || p > PP_MAX_STAGES)
        return COSTS_BAD("stage costs: %lld stages, expected 1 to %d", (long long)p, PP_MAX_STAGES);
    if (c->layers < 1 || c->layers > 1000000)
        return COSTS_BAD("stage costs: %lld layers, expected 1 to 1000000", (long long)c->layers);
    if (!isfinite(c->obj_max_weight) || !isfinite(c->obj_sum_weight) || c->obj_max_weight < 0 ||
        c->obj_sum_weight < 0 || c->obj_max_weight + c->obj_sum_weight <= 0)
        return COSTS_BAD("stage costs: objective weights must be finite, >= 0 and not both 0");
    if (c->uniform_recompute < -1)
        return COSTS_BAD("stage costs: uniform_recompute %lld (-1 all, else >= 0)",
                         (long long)c->uniform_recompute);
    if (!c->allow_recompute && c->uniform_recompute != 0)
        return COSTS_BAD("stage costs: uniform_recompute %lld without allow_recompute",
                         (long long)c->uniform_recompute);
    int64_t lo_sum = 0, hi_sum = 0;
    for (int64_t j = 0; j < p; j++) {
        if (c->layers_min[j] < 1 || c->layers_max[j] < c->layers_min[j] ||
            c->layers_max[j] > c->layers)
            return COSTS_BAD("stage costs: stage %lld layer bounds [%lld, %lld] (need 1 <= min <= "
                             "max <= %lld)", (long long)j, (long long)c->layers_min[j],
                             (long long)c->layers_max[j], (long long)c->layers);
        lo_sum += c->layers_min[j];
        hi_sum += c->layers_max[j];
        if (c->mem_table[j] && !c->mem_rmin)
            return COSTS_BAD("stage costs: stage %lld is priced by table but there is none", (long long)j);
        const struct { const char *name; double v; bool nonneg; } f[] = {
            {"time_base_s", c->time_base_s[j], true},
            {"time_layer_s", c->time_layer_s[j], true},
            {"time_recompute_s", c->time_recompute_s[j], true},
            {"mem_base_bytes", c->mem_base_bytes[j], false},
            {"mem_layer_bytes", c->mem_layer_bytes[j], true},
            {"mem_rc_base_bytes", c->mem_rc_base_bytes[j], false},
            {"mem_rc_layer_bytes", c->mem_rc_layer_bytes[j], true},
            {"mem_recompute_saved_bytes", c->mem_recompute_saved_bytes[j], true},
            {"mem_limit_bytes", c->mem_limit_bytes[j], true},
        };
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++)
            if (!isfinite(f[k].v) || (f[k].nonneg && f[k].v < 0) || fabs(f[k].v) > 1e18)
                return COSTS_BAD("stage costs: stage %lld %s = %g (must be finite%s)", (long long)j,
                                 f[k].name, f[k].v, f[k].nonneg ? " and >= 0" : "");
    }
    if (lo_sum > c->layers || hi_sum < c->layers)
        return COSTS_BAD("stage costs: %lld layers do not fit the stage bounds (%lld to %lld)",
                         (long long)c->layers, (long long)lo_sum, (long long)hi_sum);
    return PP_OK;
}

void pp_stages_costs_eval(const pp_stages_costs *c, int64_t j, int64_t n, int64_t r,
                          double *time_s, double *mem_bytes)
{
    if (time_s)
        *time_s = c->time_base_s[j] + c->time_layer_s[j] * (double)n +
                  c->time_recompute_s[j] * (double)r;
    if (!mem_bytes) return;
    if (c->mem_table[j]) {
        int32_t need = n >= 0 && n <= c->layers ? rmin_row(c, j)[n] : -1;
        *mem_bytes = need >= 0 && r >= need ? c->mem_limit_bytes[j] : INFINITY;
    } else if (r <= 0) {
        *mem_bytes = c->mem_base_bytes[j] + c->mem_layer_bytes[j] * (double)n;
    } else {
        *mem_bytes = c->mem_rc_base_bytes[j] + c->mem_rc_layer_bytes[j] * (double)n -
                     c->mem_recompute_saved_bytes[j] * (double)r;
    }
}

pp_status pp_stages_costs_tabulate(pp_stages_costs *c, int64_t j, pp_stages_eval_fn eval,
                                   void *ctx, pp_error *err)
{
    if (!c || !eval || j < 0 || j >= c->n_stages || c->layers < 1 || c->layers > 1000000)
        return COSTS_BAD("stage table: bad arguments");
    if ((double)c->n_stages * (double)(c->layers + 1) > 5e7)
        return COSTS_BAD("stage table: %lld stages x %lld layers is too large to tabulate",
                         (long long)c->n_stages, (long long)c->layers);
    if (!c->mem_rmin) {
        c->mem_rmin = malloc(sizeof(int32_t) * (size_t)c->n_stages * (size_t)(c->layers + 1));
        if (!c->mem_rmin) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory (stage table)");
        for (size_t k = 0; k < (size_t)c->n_stages * (size_t)(c->layers + 1); k++) c->mem_rmin[k] = -1;
    }
    int32_t *row = rmin_row(c, j);
    for (int64_t n = 0; n <= c->layers; n++) row[n] = -1;
    double cap = c->mem_limit_bytes[j];
    /* Memory grows with n and, for r >= 1, does not grow with r: the fewest r that fits is
     * non-decreasing in n, so one sweep with a moving r is enough. */
    bool plain = true; /* r = 0 still fits */
    int64_t r = 1;
    for (int64_t n = c->layers_min[j]; n <= c->layers_max[j]; n++) {
        double t, mem;
        pp_status st;
        if (plain) {
            if ((st = eval(ctx, j, n, 0, &t, &mem)) != PP_OK)
                return pp_error_set(err, st, NULL, 0, 0, "stage table: stage %lld, %lld layers: "
                                    "evaluation failed", (long long)j, (long long)n);
            if (mem <= cap) {
                row[n] = 0;
                continue;
            }
            plain = false;
        }
        if (!c->allow_recompute) break;
        for (; r <= n; r++) {
            if ((st = eval(ctx, j, n, r, &t, &mem)) != PP_OK)
                return pp_error_set(err, st, NULL, 0, 0, "stage table: stage %lld, %lld layers, "
                                    "%lld recomputed: evaluation failed", (long long)j,
                                    (long long)n, (long long)r);
            if (mem <= cap) break;
        }
        if (r > n) break; /* does not fit even fully recomputed: nor will more layers */
        row[n] = (int32_t)r;
    }
    c->mem_table[j] = true;
    return PP_OK;
}

/* Fill out's per-stage figures for the split (n, r) under the costs. */
static void result_fill(const pp_stages_costs *c, const int64_t *n, const int64_t *r,
                        pp_stages_result *out)
{
    double tmax = 0, tsum = 0;
    bool fits = true;
    out->n_stages = c->n_stages;
    for (int64_t j = 0; j < c->n_stages; j++) {
        double t, mem;
        pp_stages_costs_eval(c, j, n[j], r[j], &t, &mem);
        out->stage_layers[j] = (int)n[j];
        out->stage_recompute[j] = (int)r[j];
        out->stage_time_s[j] = t;
        out->stage_mem_bytes[j] = mem;
        if (t > tmax) tmax = t;
        tsum += t;
        if (!(mem <= c->mem_limit_bytes[j])) fits = false;
    }
    out->max_stage_time_s = tmax;
    out->pipeline_time_s = c->obj_max_weight * tmax + c->obj_sum_weight * tsum;
    out->fits = fits;
}

static void uniform_split(const pp_stages_costs *c, int64_t *n, int64_t *r)
{
    int64_t L = c->layers, p = c->n_stages;
    for (int64_t j = 0; j < p; j++) {
        n[j] = L / p + (j < L % p ? 1 : 0); /* as pp_layout_stage_layers: remainder first */
        if (c->uniform_recompute == -1)
            r[j] = n[j];
        else
            r[j] = c->uniform_recompute < n[j] ? c->uniform_recompute : n[j];
    }
}

void pp_stages_uniform(const pp_stages_costs *c, pp_stages_result *out)
{
    memset(out, 0, sizeof *out);
    int64_t n[PP_MAX_STAGES], r[PP_MAX_STAGES];
    uniform_split(c, n, r);
    result_fill(c, n, r, out);
}

/* ------------------------------------------------------------------ GLPK model */

/* Column indices of the MILP (1-based, GLPK's convention; 0: absent). */
typedef struct {
    int col_T;
    int col_n[PP_MAX_STAGES], col_r[PP_MAX_STAGES], col_z[PP_MAX_STAGES];
} milp_index;

static void name_set(char *buf, size_t n, const char *what, int64_t j)
{
    snprintf(buf, n, "%s_%lld", what, (long long)j);
}

static int row_add(glp_prob *P, const char *what, int64_t j, int type, double lb, double ub, int len,
                   const int *ind, const double *val)
{
    char name[64];
    int row = glp_add_rows(P, 1);
    if (j >= 0) name_set(name, sizeof name, what, j);
    else snprintf(name, sizeof name, "%s", what);
    glp_set_row_name(P, row, name);
    glp_set_row_bnds(P, row, type, lb, ub);
    glp_set_mat_row(P, row, len, ind, val);
    return row;
}

static int col_add(glp_prob *P, const char *what, int64_t j, int kind, int type, double lb,
                   double ub, double obj)
{
    char name[64];
    int col = glp_add_cols(P, 1);
    if (j >= 0) name_set(name, sizeof name, what, j);
    else snprintf(name, sizeof name, "%s", what);
    glp_set_col_name(P, col, name);
    glp_set_col_kind(P, col, kind);
    if (kind != GLP_BV) glp_set_col_bnds(P, col, type, lb, ub);
    glp_set_obj_coef(P, col, obj);
    return col;
}

/* The multiple-choice rows of a table stage: y_k = [n_j = k] over the counts that fit. */
static bool milp_table_stage(glp_prob *P, const pp_stages_costs *c, const milp_index *ix, int64_t j)
{
    const int32_t *row = rmin_row(c, j);
    int64_t lo = c->layers_min[j], hi = c->layers_max[j], k_n = hi - lo + 1;
    int *ind = malloc(sizeof(int) * (size_t)(k_n + 2));
    double *one = malloc(sizeof(double) * (size_t)(k_n + 2));
    double *kval = malloc(sizeof(double) * (size_t)(k_n + 2));
    double *rval = malloc(sizeof(double) * (size_t)(k_n + 2));
    if (!ind || !one || !kval || !rval) {
        free(ind), free(one), free(kval), free(rval);
        return false;
    }
    int len = 0;
    for (int64_t k = lo; k <= hi; k++) {
        if (row[k] < 0) continue;
        char name[64];
        snprintf(name, sizeof name, "y_%lld_%lld", (long long)j, (long long)k);
        int col = glp_add_cols(P, 1);
        glp_set_col_name(P, col, name);
        glp_set_col_kind(P, col, GLP_BV);
        len++;
        ind[len] = col;
        one[len] = 1.0;
        kval[len] = -(double)k;
        rval[len] = -(double)row[k];
    }
    /* sum_k y_k = 1 (no column: nothing fits, the MILP is infeasible as it should be) */
    row_add(P, "pick", j, GLP_FX, 1.0, 1.0, len, ind, one);
    /* n_j - sum_k k y_k = 0 */
    ind[len + 1] = ix->col_n[j];
    kval[len + 1] = 1.0;
    row_add(P, "n_of_y", j, GLP_FX, 0.0, 0.0, len + 1, ind, kval);
    /* r_j - sum_k rmin(k) y_k >= 0 */
    if (c->allow_recompute) {
        ind[len + 1] = ix->col_r[j];
        rval[len + 1] = 1.0;
        row_add(P, "r_of_y", j, GLP_LO, 0.0, 0.0, len + 1, ind, rval);
    }
    free(ind), free(one), free(kval), free(rval);
    return true;
}

/* ------------------------------------------------------------------ bound and incumbent */

/* The fewest recomputed layers with which stage j holds n layers under the MILP's own memory
 * rows (margin included), -1 when none. Rounded towards fewer (1e-9) so that the bound below
 * stays a lower bound whatever the rounding. */
static int64_t stage_rmin(const pp_stages_costs *c, int64_t j, int64_t n)
{
    if (c->mem_table[j]) return rmin_row(c, j)[n];
    double cap = c->mem_limit_bytes[j] / BYTES_PER_GIB - MEM_MARGIN_GIB;
    double m0 = (c->mem_base_bytes[j] + c->mem_layer_bytes[j] * (double)n) / BYTES_PER_GIB;
    if (m0 <= cap + 1e-9) return 0;
    if (!c->allow_recompute) return -1;
    double need = (c->mem_rc_base_bytes[j] + c->mem_rc_layer_bytes[j] * (double)n) / BYTES_PER_GIB - cap;
    if (need <= 1e-9) return 1;
    double s1 = c->mem_recompute_saved_bytes[j] / BYTES_PER_GIB;
    if (s1 <= 0) return -1;
    double r = ceil(need / s1 - 1e-9);
    if (r < 1) r = 1;
    return r <= (double)n ? (int64_t)r : -1;
}

static double stage_time_ms(const pp_stages_costs *c, int64_t j, int64_t n, int64_t r)
{
    return (c->time_base_s[j] + c->time_layer_s[j] * (double)n + c->time_recompute_s[j] * (double)r) *
           MS_PER_S;
}

/* The bound and incumbent of split_bound. */
typedef struct {
    bool ok;        /* t_star_ms is a valid lower bound on T */
    double t_star_ms;
    bool have_split;/* hn, hr: a split the MILP admits with max stage time t_star_ms */
    int64_t hn[PP_MAX_STAGES], hr[PP_MAX_STAGES];
} split_hint;

/* Stage times (ms) of the admissible counts: tab[off[j] + n - lo_j] = time_j(n, rmin_j(n)), or
 * +inf when stage j cannot hold n layers. */
typedef struct {
    const pp_stages_costs *c;
    double *tab;
    size_t off[PP_MAX_STAGES + 1];
} stage_times;

/* Can every stage keep its time <= T (ms) with a layer count of its own, the counts summing to
 * L? Necessary conditions only (each stage's admissible counts may have holes): sum of the
 * largest admissible counts >= L >= sum of the smallest. */
static bool bound_feasible(const stage_times *st, double T, int64_t *nmin, int64_t *nmax)
{
    const pp_stages_costs *c = st->c;
    int64_t smin = 0, smax = 0;
    double lim = T * (1 + 1e-12);
    for (int64_t j = 0; j < c->n_stages; j++) {
        int64_t lo = -1, hi = -1, base = c->layers_min[j];
        const double *t = st->tab + st->off[j];
        int64_t cnt = (int64_t)(st->off[j + 1] - st->off[j]);
        for (int64_t i = 0; i < cnt; i++) {
            if (!(t[i] <= lim)) continue;
            if (lo < 0) lo = base + i;
            hi = base + i;
        }
        if (lo < 0) return false;
        if (nmin) nmin[j] = lo;
        if (nmax) nmax[j] = hi;
        smin += lo;
        smax += hi;
    }
    return smin <= c->layers && smax >= c->layers;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Beyond this many (stage, count) pairs the hint is skipped (GLPK alone): absurd shapes only. */
#define HINT_MAX_PAIRS 20000000

/* T*: the least max stage time (ms) of any split the MILP admits, by bisection over the stage
 * times that can occur. A valid lower bound on T (the MILP's optimum has max_j time_j >= T*),
 * given to GLPK as T's lower bound: it closes most of the LP relaxation's gap on the max term,
 * which integrality makes wide. Also a greedy split at T* (the incumbent handed to GLPK): counts
 * from their smallest admissible value upwards, one layer at a time where it costs least. */
static void split_bound(const pp_stages_costs *c, split_hint *h)
{
    int64_t p = c->n_stages;
    memset(h, 0, sizeof *h);
    stage_times st = {.c = c};
    size_t pairs = 0;
    for (int64_t j = 0; j < p; j++) {
        st.off[j] = pairs;
        pairs += (size_t)(c->layers_max[j] - c->layers_min[j] + 1);
    }
    st.off[p] = pairs;
    if (pairs > HINT_MAX_PAIRS) return;
    st.tab = malloc(sizeof(double) * pairs);
    double *ts = malloc(sizeof(double) * pairs);
    int64_t *nmin = malloc(sizeof(int64_t) * (size_t)p), *nmax = malloc(sizeof(int64_t) * (size_t)p);
    if (!st.tab || !ts || !nmin || !nmax) goto done;
    size_t k = 0;
    for (int64_t j = 0; j < p; j++)
        for (int64_t n = c->layers_min[j]; n <= c->layers_max[j]; n++) {
            int64_t r = stage_rmin(c, j, n);
            double t = r >= 0 ? stage_time_ms(c, j, n, r) : INFINITY;
            st.tab[st.off[j] + (size_t)(n - c->layers_min[j])] = t;
            if (r >= 0) ts[k++] = t;
        }
    if (!k) goto done;
    qsort(ts, k, sizeof ts[0], cmp_double);
    if (!bound_feasible(&st, ts[k - 1], NULL, NULL)) goto done;
    size_t lo = 0, hi = k - 1; /* feasible(ts[hi]) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (bound_feasible(&st, ts[mid], NULL, NULL)) hi = mid;
        else lo = mid + 1;
    }
    h->t_star_ms = ts[hi];
    h->ok = true;
    /* Greedy split at T*. */
    double lim = ts[hi] * (1 + 1e-12);
    bound_feasible(&st, ts[hi], nmin, nmax);
    int64_t left = c->layers;
    for (int64_t j = 0; j < p; j++) {
        h->hn[j] = nmin[j];
        h->hr[j] = stage_rmin(c, j, nmin[j]);
        left -= nmin[j];
    }
    while (left > 0) {
        int64_t best = -1;
        double best_d = INFINITY;
        for (int64_t j = 0; j < p; j++) {
            if (h->hn[j] >= nmax[j]) continue;
            double t1 = st.tab[st.off[j] + (size_t)(h->hn[j] + 1 - c->layers_min[j])];
            double t0 = st.tab[st.off[j] + (size_t)(h->hn[j] - c->layers_min[j])];
            if (!(t1 <= lim)) continue;
            if (t1 - t0 < best_d) best_d = t1 - t0, best = j;
        }
        if (best < 0) goto done; /* a hole in some stage's counts: no incumbent */
        h->hn[best]++;
        h->hr[best] = stage_rmin(c, best, h->hn[best]);
        left--;
    }
    h->have_split = true;
done:
    free(st.tab);
    free(ts);
    free(nmin);
    free(nmax);
}

/* Build the MILP of pp_stages.h for c (already validated), with T >= hint->t_star_ms when the
 * hint has a bound. NULL when out of memory. */
static glp_prob *milp_build(const pp_stages_costs *c, const split_hint *hint, milp_index *ix)
{
    int64_t p = c->n_stages;
    glp_prob *P = glp_create_prob();
    if (!P) return NULL;
    glp_set_prob_name(P, "parplan_stages");
    glp_set_obj_name(P, "pipeline_ms");
    glp_set_obj_dir(P, GLP_MIN);
    memset(ix, 0, sizeof *ix);

    /* Columns: T, then per stage n_j, r_j (and z_j for a linear stage with recompute). */
    /* T >= T* (split_bound): a valid cut that GLPK's LP relaxation cannot see (integrality). */
    double t_star = hint && hint->ok ? hint->t_star_ms * (1 - 1e-9) : 0.0;
    ix->col_T = col_add(P, "T", -1, GLP_CV, GLP_LO, t_star, 0.0, c->obj_max_weight);
    double obj_const_ms = 0;
    for (int64_t j = 0; j < p; j++) {
        double lo = (double)c->layers_min[j], hi = (double)c->layers_max[j];
        /* GLPK rejects a double bound with lb == ub (GLP_EBOUND): fix it instead. */
        ix->col_n[j] = col_add(P, "n", j, GLP_IV, lo == hi ? GLP_FX : GLP_DB, lo, hi,
                               c->obj_sum_weight * c->time_layer_s[j] * MS_PER_S);
        ix->col_r[j] = col_add(P, "r", j, GLP_IV, c->allow_recompute ? GLP_DB : GLP_FX, 0.0,
                               c->allow_recompute ? hi : 0.0,
                               c->obj_sum_weight * c->time_recompute_s[j] * MS_PER_S);
        if (c->allow_recompute && !c->mem_table[j])
            ix->col_z[j] = col_add(P, "z", j, GLP_BV, 0, 0.0, 1.0, 0.0);
        obj_const_ms += c->obj_sum_weight * c->time_base_s[j] * MS_PER_S;
    }
    /* The constant sum of time_base as a column fixed at 1: glp_write_lp writes an objective
     * constant only as a comment, so glpsol --lp would report a different optimum. */
    col_add(P, "one", -1, GLP_CV, GLP_FX, 1.0, 1.0, obj_const_ms);

    int ind[8];
    double val[8];
    {
        /* sum_j n_j = L */
        int *sind = malloc(sizeof(int) * (size_t)(p + 1));
        double *sval = malloc(sizeof(double) * (size_t)(p + 1));
        if (!sind || !sval) {
            free(sind), free(sval);
            glp_delete_prob(P);
            return NULL;
        }
        for (int64_t j = 0; j < p; j++) {
            sind[j + 1] = ix->col_n[j];
            sval[j + 1] = 1.0;
        }
        row_add(P, "layers", -1, GLP_FX, (double)c->layers, (double)c->layers, (int)p, sind, sval);
        free(sind), free(sval);
    }
    for (int64_t j = 0; j < p; j++) {
        double hi = (double)c->layers_max[j];
        /* time_j <= T:  t_layer n_j + t_rc r_j - T <= -t_base   (ms) */
        ind[1] = ix->col_n[j], val[1] = c->time_layer_s[j] * MS_PER_S;
        ind[2] = ix->col_r[j], val[2] = c->time_recompute_s[j] * MS_PER_S;
        ind[3] = ix->col_T, val[3] = -1.0;
        row_add(P, "time", j, GLP_UP, 0.0, -c->time_base_s[j] * MS_PER_S, 3, ind, val);
        if (c->allow_recompute) {
            /* r_j <= n_j */
            ind[1] = ix->col_r[j], val[1] = 1.0;
            ind[2] = ix->col_n[j], val[2] = -1.0;
            row_add(P, "rc_le_n", j, GLP_UP, 0.0, 0.0, 2, ind, val);
        }
        if (c->mem_table[j]) {
            if (!milp_table_stage(P, c, ix, j)) {
                glp_delete_prob(P);
                return NULL;
            }
            continue;
        }
        /* Memory in GiB, tightened by MEM_MARGIN_GIB. */
        double cap = c->mem_limit_bytes[j] / BYTES_PER_GIB - MEM_MARGIN_GIB;
        double a0 = c->mem_base_bytes[j] / BYTES_PER_GIB, b0 = c->mem_layer_bytes[j] / BYTES_PER_GIB;
        if (!c->allow_recompute) {
            /* a0 + b0 n <= cap */
            ind[1] = ix->col_n[j], val[1] = b0;
            row_add(P, "mem", j, GLP_UP, 0.0, cap - a0, 1, ind, val);
            continue;
        }
        double a1 = c->mem_rc_base_bytes[j] / BYTES_PER_GIB, b1 = c->mem_rc_layer_bytes[j] / BYTES_PER_GIB;
        double s1 = c->mem_recompute_saved_bytes[j] / BYTES_PER_GIB;
        /* Big-M: the most either regime's row can exceed cap over the stage's range (n <= hi,
         * r >= 0), so that the row of the regime not chosen is always slack. */
        double M0 = fmax(0.0, a0 + b0 * hi - cap), M1 = fmax(0.0, a1 + b1 * hi - cap);
        /* regime 0: b0 n - M0 z <= cap - a0 */
        ind[1] = ix->col_n[j], val[1] = b0;
        ind[2] = ix->col_z[j], val[2] = -M0;
        row_add(P, "mem", j, GLP_UP, 0.0, cap - a0, 2, ind, val);
        /* regime 1: b1 n - s1 r + M1 z <= cap - a1 + M1 */
        ind[1] = ix->col_n[j], val[1] = b1;
        ind[2] = ix->col_r[j], val[2] = -s1;
        ind[3] = ix->col_z[j], val[3] = M1;
        row_add(P, "mem_rc", j, GLP_UP, 0.0, cap - a1 + M1, 3, ind, val);
        /* z_j = [r_j > 0]:  z_j <= r_j <= hi z_j */
        ind[1] = ix->col_r[j], val[1] = 1.0;
        ind[2] = ix->col_z[j], val[2] = -hi;
        row_add(P, "rc_on", j, GLP_UP, 0.0, 0.0, 2, ind, val);
        ind[1] = ix->col_z[j], val[1] = 1.0;
        ind[2] = ix->col_r[j], val[2] = -1.0;
        row_add(P, "rc_off", j, GLP_UP, 0.0, 0.0, 2, ind, val);
    }
    return P;
}

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

typedef struct {
    double *x;  /* column values, 1-based */
    bool ready, given;
} incumbent;

/* Column values of the greedy split for glp_ios_heur_sol: T, n, r, z, y, one. */
static void incumbent_fill(const pp_stages_costs *c, const split_hint *h, glp_prob *P,
                           const milp_index *ix, incumbent *inc)
{
    if (!h->have_split) return;
    double tmax = 0;
    for (int64_t j = 0; j < c->n_stages; j++) {
        tmax = fmax(tmax, stage_time_ms(c, j, h->hn[j], h->hr[j]));
        inc->x[ix->col_n[j]] = (double)h->hn[j];
        inc->x[ix->col_r[j]] = (double)h->hr[j];
        if (ix->col_z[j]) inc->x[ix->col_z[j]] = h->hr[j] > 0;
    }
    inc->x[ix->col_T] = tmax;
    int ncol = glp_get_num_cols(P);
    for (int k = 1; k <= ncol; k++) {
        const char *name = glp_get_col_name(P, k);
        long long j, n;
        if (name && sscanf(name, "y_%lld_%lld", &j, &n) == 2) inc->x[k] = h->hn[j] == n;
        else if (name && !strcmp(name, "one")) inc->x[k] = 1.0;
    }
    inc->ready = true;
}

static void incumbent_cb(glp_tree *T, void *info)
{
    incumbent *inc = info;
    if (glp_ios_reason(T) == GLP_IHEUR && !inc->given) {
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
    milp_index ix;
    split_hint *hint = malloc(sizeof *hint);
    if (hint) split_bound(c, hint);
    glp_prob *P = milp_build(c, hint, &ix);
    free(hint);
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
    milp_index ix;
    split_hint *hint = malloc(sizeof *hint);
    if (hint) split_bound(c, hint);
    glp_prob *P = hint ? milp_build(c, hint, &ix) : NULL;
    if (!P) {
        free(hint);
        glp_term_out(term);
        return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory building the stage MILP");
    }
    /* The incumbent: the greedy split at T* (split_bound), handed to GLPK at its first
     * heuristic call so that the search starts with a bound to prune against. The callback
     * needs the original problem's columns, so the MIP presolver is off and the LP relaxation
     * is solved first by the simplex method (its own presolver on). */
    incumbent inc;
    memset(&inc, 0, sizeof inc);
    inc.x = calloc((size_t)glp_get_num_cols(P) + 1, sizeof(double));
    if (inc.x) incumbent_fill(c, hint, P, &ix, &inc);
    free(hint);
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.presolve = GLP_ON;
    sm.tm_lim = params->time_limit_ms;
    int lp_ret = glp_simplex(P, &sm);
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_OFF;
    parm.tm_lim = params->time_limit_ms;
    parm.mip_gap = 0.0;     /* the proven optimum, not within a gap */
    if (inc.ready) {
        parm.cb_func = incumbent_cb;
        parm.cb_info = &inc;
    }
    int ret, mst;
    if (lp_ret == 0 && glp_get_status(P) == GLP_OPT) {
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
    bool optimal = ret == 0 && mst == GLP_OPT;
    if (optimal) {
        for (int64_t j = 0; j < c->n_stages; j++) {
            n[j] = llround(glp_mip_col_val(P, ix.col_n[j]));
            r[j] = llround(glp_mip_col_val(P, ix.col_r[j]));
        }
    }
    glp_delete_prob(P);
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
            result_fill(c, n, r, &ilp);
            if (!ilp.fits) optimal = false;
        }
        if (!optimal)
            snprintf(out->warning, sizeof out->warning,
                     "stage MILP: GLPK's optimum does not check out in exact arithmetic; "
                     "using the uniform split");
    } else {
        const char *why = ret == 0 && mst == GLP_NOFEAS ? "no stage split fits in memory"
                          : ret == GLP_ENOPFS          ? "no stage split fits in memory"
                                                       : glpk_ret_name(ret);
        snprintf(out->warning, sizeof out->warning,
                 "stage MILP gave no integer optimum (GLPK: %s; status: %s, %.0f ms limit); "
                 "using the uniform split", why, glpk_status_name(mst), (double)params->time_limit_ms);
    }
    if (!optimal) {
        out->status = PP_STAGES_FALLBACK;
        return PP_OK;
    }
    out->ilp_optimal = true;
    out->ilp_pipeline_time_s = ilp.pipeline_time_s;
    bool take = params->mode == PP_STAGES_MODE_ILP ||
                (!uni.fits && ilp.fits) ||
                ilp.pipeline_time_s < uni.pipeline_time_s * (1.0 - params->min_gain);
    if (!take) return PP_OK; /* auto: uniform is as good */
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

/* ------------------------------------------------------------------ brute force */

typedef struct {
    const pp_stages_costs *c;
    const double *tab_t, *tab_m; /* [j][n][r], (hi+1)^2 per stage */
    int64_t stride;              /* (hmax + 1) */
    int64_t n[PP_MAX_STAGES], r[PP_MAX_STAGES];
    int64_t best_n[PP_MAX_STAGES], best_r[PP_MAX_STAGES];
    double best;
    bool found;
    int64_t evaluated;
    int64_t suffix_lo[PP_MAX_STAGES + 1], suffix_hi[PP_MAX_STAGES + 1];
} brute_state;

static void brute_rec(brute_state *b, int64_t j, int64_t left, double tmax, double tsum, bool fits)
{
    const pp_stages_costs *c = b->c;
    if (j == c->n_stages) {
        b->evaluated++;
        double obj = c->obj_max_weight * tmax + c->obj_sum_weight * tsum;
        if (fits && (!b->found || obj < b->best)) {
            b->found = true;
            b->best = obj;
            memcpy(b->best_n, b->n, sizeof(int64_t) * (size_t)c->n_stages);
            memcpy(b->best_r, b->r, sizeof(int64_t) * (size_t)c->n_stages);
        }
        return;
    }
    for (int64_t n = c->layers_min[j]; n <= c->layers_max[j]; n++) {
        int64_t rest = left - n;
        if (rest < b->suffix_lo[j + 1] || rest > b->suffix_hi[j + 1]) continue;
        int64_t rmax = c->allow_recompute ? n : 0;
        for (int64_t r = 0; r <= rmax; r++) {
            size_t k = (size_t)((j * b->stride + n) * b->stride + r);
            double t = b->tab_t[k], mem = b->tab_m[k];
            b->n[j] = n;
            b->r[j] = r;
            brute_rec(b, j + 1, rest, t > tmax ? t : tmax, tsum + t,
                      fits && mem <= c->mem_limit_bytes[j]);
        }
    }
}

pp_status pp_stages_brute(const pp_stages_costs *c, pp_stages_eval_fn eval, void *ctx,
                          int64_t max_points, pp_stages_result *out, int64_t *evaluated,
                          pp_error *err)
{
    pp_status st = pp_stages_costs_validate(c, err);
    if (st != PP_OK) return st;
    int64_t p = c->n_stages, L = c->layers;
    /* Count the points first: ways[j][k] = number of (n, r) for stages j.. holding k layers. */
    double *ways = calloc((size_t)(p + 1) * (size_t)(L + 1), sizeof(double));
    double *tab_t = NULL, *tab_m = NULL;
    brute_state *b = NULL;
    if (!ways) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory (brute force)");
    ways[(size_t)p * (size_t)(L + 1) + 0] = 1;
    for (int64_t j = p - 1; j >= 0; j--)
        for (int64_t k = 0; k <= L; k++) {
            double s = 0;
            for (int64_t n = c->layers_min[j]; n <= c->layers_max[j] && n <= k; n++)
                s += (double)(c->allow_recompute ? n + 1 : 1) *
                     ways[(size_t)(j + 1) * (size_t)(L + 1) + (size_t)(k - n)];
            ways[(size_t)j * (size_t)(L + 1) + (size_t)k] = s;
        }
    double points = ways[L];
    if (points > (double)max_points) {
        st = COSTS_BAD("brute force over %.3g points exceeds the limit %lld", points,
                       (long long)max_points);
        goto done;
    }
    int64_t hmax = 0;
    for (int64_t j = 0; j < p; j++)
        if (c->layers_max[j] > hmax) hmax = c->layers_max[j];
    int64_t stride = hmax + 1;
    size_t cells = (size_t)p * (size_t)stride * (size_t)stride;
    tab_t = malloc(sizeof(double) * cells);
    tab_m = malloc(sizeof(double) * cells);
    b = calloc(1, sizeof *b);
    if (!tab_t || !tab_m || !b) {
        st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory (brute force)");
        goto done;
    }
    for (int64_t j = 0; j < p; j++)
        for (int64_t n = c->layers_min[j]; n <= c->layers_max[j]; n++)
            for (int64_t r = 0; r <= (c->allow_recompute ? n : 0); r++) {
                size_t k = (size_t)((j * stride + n) * stride + r);
                if (eval) {
                    st = eval(ctx, j, n, r, &tab_t[k], &tab_m[k]);
                    if (st != PP_OK) {
                        pp_error_set(err, st, NULL, 0, 0, "brute force: stage %lld, %lld layers, "
                                     "%lld recomputed: evaluation failed", (long long)j,
                                     (long long)n, (long long)r);
                        goto done;
                    }
                } else {
                    pp_stages_costs_eval(c, j, n, r, &tab_t[k], &tab_m[k]);
                }
            }
    b->c = c;
    b->tab_t = tab_t;
    b->tab_m = tab_m;
    b->stride = stride;
    b->suffix_lo[p] = b->suffix_hi[p] = 0;
    for (int64_t j = p - 1; j >= 0; j--) {
        b->suffix_lo[j] = b->suffix_lo[j + 1] + c->layers_min[j];
        b->suffix_hi[j] = b->suffix_hi[j + 1] + c->layers_max[j];
    }
    brute_rec(b, 0, L, 0.0, 0.0, true);
    if (evaluated) *evaluated = b->evaluated;

    memset(out, 0, sizeof *out);
    int64_t un[PP_MAX_STAGES], ur[PP_MAX_STAGES];
    uniform_split(c, un, ur);
    /* The figures come from the tables (eval's), not from the linear costs. */
    const int64_t *fn = b->found ? b->best_n : un, *fr = b->found ? b->best_r : ur;
    double tmax = 0, tsum = 0;
    bool fits = true;
    out->n_stages = p;
    for (int64_t j = 0; j < p; j++) {
        double t, mem;
        if (fr[j] <= (c->allow_recompute ? fn[j] : 0) && fn[j] >= c->layers_min[j] &&
            fn[j] <= c->layers_max[j]) {
            size_t k = (size_t)((j * stride + fn[j]) * stride + fr[j]);
            t = tab_t[k], mem = tab_m[k];
        } else if (eval) {
            st = eval(ctx, j, fn[j], fr[j], &t, &mem);
            if (st != PP_OK) goto done;
        } else {
            pp_stages_costs_eval(c, j, fn[j], fr[j], &t, &mem);
        }
        out->stage_layers[j] = (int)fn[j];
        out->stage_recompute[j] = (int)fr[j];
        out->stage_time_s[j] = t;
        out->stage_mem_bytes[j] = mem;
        if (t > tmax) tmax = t;
        tsum += t;
        if (mem > c->mem_limit_bytes[j]) fits = false;
    }
    out->max_stage_time_s = tmax;
    out->pipeline_time_s = c->obj_max_weight * tmax + c->obj_sum_weight * tsum;
    out->fits = fits;
    out->status = b->found ? PP_STAGES_OPTIMAL : PP_STAGES_FALLBACK;
    if (!b->found) snprintf(out->warning, sizeof out->warning, "brute force: no split fits");
done:
    free(ways);
    free(tab_t);
    free(tab_m);
    free(b);
    return st;
}

/* ------------------------------------------------------------------ from the models */

#define MODEL_BAD(...) pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, __VA_ARGS__)

/* The time side of the costs, from pp_time_parts_get: per micro-batch, a layer costs forward +
 * backward (TP collectives included, selective recompute inside the backward when the layout
 * asks for it), a fully recomputed layer one more forward; the first stage adds the embedding,
 * the last the output layer + loss; every stage of a pipeline pays 2 p2p exchanges per
 * micro-batch (activations forward, gradients backward), as time.c's pp_time_step does, so that
 * the objective is its pipeline term exactly:
 *   1F1B:        (m - 1) (max_j t_j + 2 p2p) + sum_j (t_j + 2 p2p)
 *   interleaved: m (max_j t_j + 2 p2p) + (p - 1) / v (mean_j t_j + 2 p2p)  (SC'21 sec. 2.2.2). */
static pp_status costs_time_fill(const pp_work *w, const pp_layout *l, pp_stages_costs *c,
                                 pp_error *err)
{
    memset(c, 0, sizeof *c);
    int64_t p = l->pp, L = w->model.layers, v = l->vpp > 0 ? l->vpp : 1;
    if (p < 1 || p > PP_MAX_STAGES)
        return MODEL_BAD("--pp %lld: the stage MILP handles 1 to %d stages", (long long)p,
                         PP_MAX_STAGES);
    if (L < p) return MODEL_BAD("--pp %lld is more than the %lld layers", (long long)p, (long long)L);
    int64_t m = pp_layout_microbatches(w, l);
    if (m < 1) return MODEL_BAD("the stage MILP needs a validated layout (no micro-batches)");
    pp_time_parts tp;
    pp_time_parts_get(w, l, &tp);
    const double parts[] = {tp.layer_fwd_s, tp.layer_bwd_s, tp.layer_recompute_s, tp.embed_fwd_s,
                            tp.embed_bwd_s, tp.output_fwd_s, tp.output_bwd_s, tp.p2p_s};
    for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++)
        if (!isfinite(parts[k]) || parts[k] < 0)
            return pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0,
                                "the time model gave a bad per-micro-batch time (part %zu: %g)", k,
                                parts[k]);
    c->n_stages = p;
    c->layers = L;
    c->microbatches = m;
    if (v > 1) {
        c->obj_max_weight = (double)m;
        c->obj_sum_weight = (double)(p - 1) / (double)(v * p);
    } else {
        c->obj_max_weight = (double)(m - 1);
        c->obj_sum_weight = 1.0;
    }
    c->allow_recompute = l->recompute == PP_RC_FULL;
    c->uniform_recompute = l->recompute != PP_RC_FULL ? 0 : l->recompute_layers > 0 ? l->recompute_layers : -1;
    double p2p = p > 1 ? 2.0 * tp.p2p_s : 0.0;
    for (int64_t j = 0; j < p; j++) {
        if (v > 1) {
            /* Interleaved: every rank holds v chunks of L/(p v) layers (pp_layout_validate);
             * only the recompute counts are free. */
            c->layers_min[j] = c->layers_max[j] = L / p;
        } else {
            c->layers_min[j] = 1;
            c->layers_max[j] = L - (p - 1);
        }
        c->time_layer_s[j] = tp.layer_fwd_s + tp.layer_bwd_s;
        c->time_recompute_s[j] = tp.layer_recompute_s;
        c->time_base_s[j] = p2p + (j == 0 ? tp.embed_fwd_s + tp.embed_bwd_s : 0) +
                            (j == p - 1 ? tp.output_fwd_s + tp.output_bwd_s : 0);
        c->mem_limit_bytes[j] = 1e18; /* set by the memory side */
    }
    return PP_OK;
}

/* peak + reserved of stage j with n layers, r of them fully recomputed, by the memory model
 * (the layout's stage_layers / stage_recompute are not read: the counts are explicit). */
static double stage_mem(const pp_work *w, const pp_layout *l, int64_t j, int64_t n, int64_t r)
{
    pp_mem_stage ms;
    memset(&ms, 0, sizeof ms);
    pp_memory_stage(w, l, j, n, r, &ms);
    return ms.peak_bytes + ms.reserved_bytes;
}

void pp_stages_model_ctx_init(pp_stages_model_ctx *ctx, const pp_work *w, const pp_layout *l)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->w = w;
    ctx->l = l;
    pp_stages_costs *c = calloc(1, sizeof *c);
    pp_layout lu = *l;
    lu.stage_layers = NULL;
    lu.stage_recompute = NULL;
    if (c && costs_time_fill(w, &lu, c, NULL) == PP_OK) {
        ctx->time_layer_s = c->time_layer_s[0];
        ctx->time_recompute_s = c->time_recompute_s[0];
        memcpy(ctx->time_base_s, c->time_base_s, sizeof ctx->time_base_s);
    }
    free(c);
}

pp_status pp_stages_eval_model(void *vctx, int64_t stage, int64_t layers, int64_t recompute,
                               double *time_s, double *mem_bytes)
{
    const pp_stages_model_ctx *ctx = vctx;
    if (!ctx || !ctx->w || !ctx->l || stage < 0 || stage >= ctx->l->pp || layers < 0 ||
        recompute < 0 || recompute > layers)
        return PP_ERR_INPUT;
    if (time_s)
        *time_s = ctx->time_base_s[stage] + ctx->time_layer_s * (double)layers +
                  ctx->time_recompute_s * (double)recompute;
    if (mem_bytes) *mem_bytes = stage_mem(ctx->w, ctx->l, stage, layers, recompute);
    return PP_OK;
}

/* The linear fit of stage j against the model at the ends and middle of its range. */
static bool stage_fit_check(const pp_work *w, const pp_layout *l, const pp_stages_costs *c,
                            int64_t j, char *why, size_t why_n)
{
    int64_t lo = c->layers_min[j], hi = c->layers_max[j];
    int64_t ns[4] = {lo, lo + 1 <= hi ? lo + 1 : hi, lo + (hi - lo) / 2, hi};
    for (int a = 0; a < 4; a++) {
        int64_t n = ns[a];
        int64_t rs[5] = {0, 1, 2, n / 2, n};
        for (int k = 0; k < (c->allow_recompute ? 5 : 1); k++) {
            int64_t r = rs[k];
            if (r > n || (k > 0 && r == 0)) continue;
            double got = stage_mem(w, l, j, n, r), lin;
            pp_stages_costs_eval(c, j, n, r, NULL, &lin);
            /* Same arithmetic, other order: agree to rounding. */
            if (!isfinite(got) || fabs(got - lin) > 1e-9 * fabs(got) + 1.0) {
                if (why && why_n)
                    snprintf(why, why_n,
                             "stage %lld: the memory model is not linear in its layers and "
                             "recompute (%lld layers, %lld recomputed: %.6g GB, the fit says "
                             "%.6g GB); priced by table", (long long)j, (long long)n, (long long)r,
                             got / 1e9, lin / 1e9);
                return false;
            }
        }
    }
    return true;
}

pp_status pp_stages_costs_from_model(const pp_work *w, const pp_layout *l, pp_stages_costs *c,
                                     bool *linear, char *why, size_t why_n, pp_error *err)
{
    if (!w || !l || !c) return MODEL_BAD("stage costs: no work, layout or costs");
    /* The models see a uniform layout: the split being priced is given per call. */
    pp_layout lu = *l;
    lu.stage_layers = NULL;
    lu.stage_recompute = NULL;
    pp_status st = costs_time_fill(w, &lu, c, err);
    if (st != PP_OK) return st;
    /* The capacity the memory model checks against. */
    pp_mem_result *mr = malloc(sizeof *mr);
    if (!mr) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory (stage costs)");
    st = pp_memory_estimate(w, &lu, mr, err);
    double cap = mr->capacity_bytes;
    free(mr);
    if (st != PP_OK) return st;
    if (!isfinite(cap) || cap <= 0)
        return pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0, "the memory model gave capacity %g", cap);

    if (linear) *linear = true;
    if (why && why_n) why[0] = 0;
    pp_stages_model_ctx ctx;
    pp_stages_model_ctx_init(&ctx, w, &lu);
    for (int64_t j = 0; j < c->n_stages; j++) {
        int64_t lo = c->layers_min[j], hi = c->layers_max[j];
        c->mem_limit_bytes[j] = cap;
        /* Regime 0: a0 + b0 n from two layer counts (one when the count is fixed). */
        double m1 = stage_mem(w, &lu, j, lo, 0);
        double b0 = hi > lo ? stage_mem(w, &lu, j, lo + 1, 0) - m1 : 0.0;
        c->mem_layer_bytes[j] = b0;
        c->mem_base_bytes[j] = m1 - b0 * (double)lo;
        /* Regime 1: a1 + b1 n - s r from (n2, 1), (n2, 2), (n2 + 1, 1). */
        bool fit = b0 >= 0;
        if (fit && c->allow_recompute) {
            int64_t n2 = lo >= 2 ? lo : 2;
            if (n2 > hi) {
                fit = false; /* too few layers to fit the recompute slope: tabulate */
            } else {
                double f1 = stage_mem(w, &lu, j, n2, 1), f2 = stage_mem(w, &lu, j, n2, 2);
                double b1 = n2 + 1 <= hi ? stage_mem(w, &lu, j, n2 + 1, 1) - f1 : 0.0;
                c->mem_recompute_saved_bytes[j] = f1 - f2;
                c->mem_rc_layer_bytes[j] = b1;
                c->mem_rc_base_bytes[j] = f1 - b1 * (double)n2 + (f1 - f2);
                fit = b1 >= 0 && f1 - f2 >= 0;
            }
        }
        char w1[256] = "";
        if (fit) fit = stage_fit_check(w, &lu, c, j, w1, sizeof w1);
        else snprintf(w1, sizeof w1, "stage %lld: memory does not grow with layers or recompute "
                      "as a linear fit needs; priced by table", (long long)j);
        if (fit) continue;
        /* Keep the table well-formed for pp_stages_costs_validate; the MILP ignores them. */
        c->mem_layer_bytes[j] = fmax(c->mem_layer_bytes[j], 0);
        c->mem_rc_layer_bytes[j] = fmax(c->mem_rc_layer_bytes[j], 0);
        c->mem_recompute_saved_bytes[j] = fmax(c->mem_recompute_saved_bytes[j], 0);
        st = pp_stages_costs_tabulate(c, j, pp_stages_eval_model, &ctx, err);
        if (st != PP_OK) return st;
        if (linear && *linear && why && why_n) snprintf(why, why_n, "%s", w1);
        if (linear) *linear = false;
    }
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
     * tabulated and the MILP solved again: each round tabulates one more stage. */
    for (int round = 0; st == PP_OK && round <= c->n_stages; round++) {
        st = pp_stages_solve_costs(c, params, out, err);
        if (st != PP_OK) break;
        solve_s += out->solve_time_s;
        out->solve_time_s = solve_s;
        int64_t bad = -1;
        bool fits = true;
        for (int64_t j = 0; j < c->n_stages; j++) {
            out->stage_mem_bytes[j] = stage_mem(w, &lu, j, out->stage_layers[j], out->stage_recompute[j]);
            if (out->stage_mem_bytes[j] > c->mem_limit_bytes[j]) {
                fits = false;
                if (bad < 0 && !c->mem_table[j]) bad = j;
            }
        }
        out->fits = fits;
        if (out->status != PP_STAGES_OPTIMAL || fits) break;
        if (bad < 0) {
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
                     "stage MILP: its split does not fit by the memory model itself; using the "
                     "uniform split");
            for (int64_t j = 0; j < c->n_stages; j++)
                out->stage_mem_bytes[j] = stage_mem(w, &lu, j, out->stage_layers[j], out->stage_recompute[j]);
            break;
        }
        st = pp_stages_costs_tabulate(c, bad, pp_stages_eval_model, &ctx, err);
    }
    if (st == PP_OK && out->status != PP_STAGES_OPTIMAL) {
        /* Uniform or fallback: the memory model's figures for the uniform split. */
        bool fits = true;
        for (int64_t j = 0; j < c->n_stages; j++) {
            out->stage_mem_bytes[j] = stage_mem(w, &lu, j, out->stage_layers[j], out->stage_recompute[j]);
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
    if (costs_time_fill(w, &lu, c, NULL) != PP_OK) {
        free(c);
        return;
    }
    /* Any split: sum_j t_j >= W (no recompute) and max_j t_j >= max(W / p, t_j(lo_j, 0)). */
    double W = 0, tmax = 0;
    for (int64_t j = 0; j < c->n_stages; j++) {
        W += c->time_base_s[j] + c->time_layer_s[j] * (double)c->layers_min[j];
        double tj = c->time_base_s[j] + c->time_layer_s[j] * (double)c->layers_min[j];
        if (tj > tmax) tmax = tj;
    }
    int64_t lo_sum = 0;
    for (int64_t j = 0; j < c->n_stages; j++) lo_sum += c->layers_min[j];
    W += c->time_layer_s[0] * (double)(c->layers - lo_sum); /* the same per-layer time everywhere */
    if (W / (double)c->n_stages > tmax) tmax = W / (double)c->n_stages;
    double lb = c->obj_max_weight * tmax + c->obj_sum_weight * W;
    pp_stages_result *u = malloc(sizeof *u);
    if (u) {
        pp_stages_uniform(c, u);
        if (max_gain_s) *max_gain_s = u->pipeline_time_s > lb ? u->pipeline_time_s - lb : 0;
        free(u);
    }
    if (lower_bound_s) *lower_bound_s = lb;
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
    if (dump_path) {
        st = pp_stages_dump_lp(w, l, dump_path, err);
        if (st != PP_OK) return st;
    }
    if (mi == PP_STAGES_MODE_UNIFORM) {
        /* Nothing to solve: the caller's uniform layout stands (never an error here). */
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
    if (!a->stage_layers != !b->stage_layers || !a->stage_recompute != !b->stage_recompute) return false;
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
        qsort(s, (size_t)k, sizeof s[0], cmp_double);
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
    for (int64_t i = 0; i < n; i++) {
        pp_search_candidate *k = &cand[i];
        pp_layout l = k->layout;
        l.stage_layers = NULL;
        l.stage_recompute = NULL;
        if (l.pp < 2 && l.recompute != PP_RC_FULL) continue; /* nothing to choose */
        if (l.pp > PP_MAX_STAGES) continue;
        double gain = 0;
        pp_stages_gain_bound(w, &l, &gain, NULL);
        if (k->fits && k->time.step_time_s - gain >= cutoff) {
            stats->skipped++;
            continue;
        }
        st = pp_stages_apply(w, &l, m, NULL, stage_layers[i], stage_recompute[i], res, err);
        if (st != PP_OK) break;
        stats->solved++;
        if (res->warning[0] && !stats->warning[0])
            snprintf(stats->warning, sizeof stats->warning, "%s", res->warning);
        if (!l.stage_layers) continue;
        pp_time_result t;
        st = pp_time_estimate(w, &l, &t, err);
        if (st != PP_OK) break;
        double peak = 0, worst = pp_memory_worst_bytes(w, &l, &peak);
        bool fits = worst <= w->gpu.memory_bytes;
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
