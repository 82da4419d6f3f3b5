/* The MILP of pp_stages.h by layer counts (one layer kind, no MTP layers), built for GLPK: the
 * columns and rows, the bound T* on the max stage time and the greedy incumbent at it.
 *
 * Why counts are enough for a model of one layer kind: its decoder layers are identical, so
 * which layers a stage holds only matters through how many it holds; stage j holds the layers
 * n_0 + ... + n_{j-1} .. n_0 + ... + n_j - 1, which is contiguous for any integer n with
 * sum n_j = L. The embedding is on the first stage and the output layer + loss on the last
 * (Megatron's placement; its --pipeline-model-parallel-layout also allows empty stages, which
 * pp_layout_validate does not: every stage holds at least one layer here). Layers of several
 * kinds (or MTP layers) make which layers matter: the cut formulation of pp_stages.h
 * (stages_kinds.c) prices every layer by its kind; the result is still a vector of counts, the
 * positions following from them. */
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stages_internal.h"

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

int pp_stages_col_add(glp_prob *P, const char *what, int64_t j, int kind, int type, double lb,
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
static bool milp_table_stage(glp_prob *P, const pp_stages_costs *c, const pp_stages_milp_index *ix,
                             int64_t j)
{
    const int32_t *row = pp_stages_rmin_row(c, j);
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
    if (c->mem_table[j]) return pp_stages_rmin_row(c, j)[n];
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
    qsort(ts, k, sizeof ts[0], pp_stages_cmp_double);
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
static glp_prob *milp_build(const pp_stages_costs *c, const split_hint *hint,
                            pp_stages_milp_index *ix)
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
    ix->col_T = pp_stages_col_add(P, "T", -1, GLP_CV, GLP_LO, t_star, 0.0, c->obj_max_weight);
    double obj_const_ms = 0;
    for (int64_t j = 0; j < p; j++) {
        double lo = (double)c->layers_min[j], hi = (double)c->layers_max[j];
        /* GLPK rejects a double bound with lb == ub (GLP_EBOUND): fix it instead. */
        ix->col_n[j] = pp_stages_col_add(P, "n", j, GLP_IV, lo == hi ? GLP_FX : GLP_DB, lo, hi,
                                         c->obj_sum_weight * c->time_layer_s[j] * MS_PER_S);
        ix->col_r[j] = pp_stages_col_add(P, "r", j, GLP_IV, c->allow_recompute ? GLP_DB : GLP_FX,
                                         0.0, c->allow_recompute ? hi : 0.0,
                                         c->obj_sum_weight * c->time_recompute_s[j] * MS_PER_S);
        if (c->allow_recompute && !c->mem_table[j])
            ix->col_z[j] = pp_stages_col_add(P, "z", j, GLP_BV, 0, 0.0, 1.0, 0.0);
        obj_const_ms += c->obj_sum_weight * c->time_base_s[j] * MS_PER_S;
    }
    /* The constant sum of time_base as a column fixed at 1: glp_write_lp writes an objective
     * constant only as a comment, so glpsol --lp would report a different optimum. */
    pp_stages_col_add(P, "one", -1, GLP_CV, GLP_FX, 1.0, 1.0, obj_const_ms);

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

/* Column values of the greedy split for glp_ios_heur_sol: T, n, r, z, y, one. */
static void incumbent_fill(const pp_stages_costs *c, const split_hint *h, glp_prob *P,
                           const pp_stages_milp_index *ix, pp_stages_incumbent *inc)
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


glp_prob *pp_stages_milp_build(const pp_stages_costs *c, pp_stages_milp_index *ix,
                               pp_stages_incumbent *inc)
{
    split_hint *hint = malloc(sizeof *hint);
    if (hint) split_bound(c, hint);
    else if (inc) return NULL; /* a solve needs the hint (its incumbent); the LP dump does not */
    glp_prob *P = milp_build(c, hint, ix);
    if (P && inc) {
        inc->x = calloc((size_t)glp_get_num_cols(P) + 1, sizeof(double));
        if (inc->x) incumbent_fill(c, hint, P, ix, inc);
    }
    free(hint);
    return P;
}

void pp_stages_milp_split(const pp_stages_costs *c, glp_prob *P, const pp_stages_milp_index *ix,
                          int64_t *n, int64_t *r)
{
    for (int64_t j = 0; j < c->n_stages; j++) {
        n[j] = llround(glp_mip_col_val(P, ix->col_n[j]));
        r[j] = llround(glp_mip_col_val(P, ix->col_r[j]));
    }
}
