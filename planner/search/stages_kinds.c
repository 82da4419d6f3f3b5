/* The MILP of pp_stages.h by layer kind (the cut formulation), built for GLPK: per cut, one
 * binary per layer (U: the cut's position, V: the recompute end), presence indicators, one
 * memory row per kind mix (or rows by position for a stage priced by table), no-good rows for
 * excluded configurations; and the dynamic programme over the cut positions that hands GLPK
 * its incumbent, the bounds T* and S*, the hull cuts and the narrowed cut ranges. */
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stages_internal.h"

/* One stage's coefficients in the MILP's units: ms, GiB, the limit less the margin. */
typedef struct {
    double t_base, t_layer[PP_LAYER_KINDS], t_rc[PP_LAYER_KINDS];
    double m_layer[PP_LAYER_KINDS], m_saved[PP_LAYER_KINDS], cap;
    const double *set; /* S_j(P, Q) in bytes at set[P * PP_STAGES_KIND_SETS + Q] */
} kind_stage;

static void kind_stage_get(const pp_stages_costs *c, int64_t j, kind_stage *ks)
{
    ks->t_base = c->time_base_s[j] * MS_PER_S;
    for (int k = 0; k < PP_LAYER_KINDS; k++) {
        ks->t_layer[k] = c->kind_time_layer_s[j][k] * MS_PER_S;
        ks->t_rc[k] = c->kind_time_recompute_s[j][k] * MS_PER_S;
        ks->m_layer[k] = c->kind_mem_layer_bytes[j][k] / BYTES_PER_GIB;
        ks->m_saved[k] = c->kind_mem_saved_bytes[j][k] / BYTES_PER_GIB;
    }
    ks->cap = c->mem_limit_bytes[j] / BYTES_PER_GIB - MEM_MARGIN_GIB;
    ks->set = c->kind_mem_set_bytes + pp_stages_set_index(j, 0, 0);
}

/* Stage times (ms) of every admissible (stage, first layer, layers) with the fewest recomputed
 * layers that fit by the MILP's own rows (margin included, rounded towards fitting by 1e-9 GiB
 * so that the bounds below stay lower bounds), +inf where none fits; the recompute count in r.
 * Time grows with recompute, so the fewest that fit is a stage's fastest choice. */
typedef struct {
    const pp_stages_costs *c;
    int64_t lo[PP_MAX_STAGES + 1], hi[PP_MAX_STAGES + 1]; /* cut ranges of the table */
    size_t off[PP_MAX_STAGES + 1];
    double *t;
    int32_t *r;
} kind_table;

static size_t kind_at(const kind_table *T, int64_t j, int64_t f, int64_t n)
{
    const pp_stages_costs *c = T->c;
    return T->off[j] + (size_t)(f - T->lo[j]) * (size_t)(c->layers_max[j] - c->layers_min[j] + 1) +
           (size_t)(n - c->layers_min[j]);
}

/* Beyond this many (stage, start, count) entries the DP is skipped (GLPK alone). */
#define KIND_TABLE_MAX 4000000

/* 1: filled; 0: too large for the DP; -1: out of memory. */
static int kind_table_fill(kind_table *T)
{
    const pp_stages_costs *c = T->c;
    int64_t p = c->n_stages;
    size_t cells = 0;
    for (int64_t j = 0; j < p; j++) {
        T->off[j] = cells;
        cells += (size_t)(T->hi[j] - T->lo[j] + 1) * (size_t)(c->layers_max[j] - c->layers_min[j] + 1);
        if (cells > KIND_TABLE_MAX) return 0;
    }
    T->off[p] = cells;
    T->t = malloc(sizeof(double) * (cells ? cells : 1));
    T->r = malloc(sizeof(int32_t) * (cells ? cells : 1));
    if (!T->t || !T->r) return -1;
    for (size_t k = 0; k < cells; k++) T->t[k] = INFINITY, T->r[k] = -1;
    for (int64_t j = 0; j < p; j++) {
        kind_stage ks;
        kind_stage_get(c, j, &ks);
        for (int64_t f = T->lo[j]; f <= T->hi[j]; f++) {
            int64_t nmin = c->layers_min[j], nmax = c->layers_max[j];
            if (T->lo[j + 1] - f > nmin) nmin = T->lo[j + 1] - f;
            if (T->hi[j + 1] - f < nmax) nmax = T->hi[j + 1] - f;
            double lin = 0, t0 = ks.t_base;
            unsigned P = 0;
            for (int64_t n = 1; n <= nmax; n++) {
                int k = c->layer_kind[f + n - 1];
                lin += ks.m_layer[k], t0 += ks.t_layer[k], P |= 1u << k;
                if (n < nmin) continue;
                double rc_t = 0, rc_m = 0;
                unsigned Q = 0;
                /* by table: the fewest r that fit (none below), then what is not excluded */
                int64_t r0 = c->kind_table[j] ? c->kind_rmin[pp_stages_rmin_index(c, j, f, n)] : 0;
                if (r0 < 0) continue;
                for (int64_t r = 0; r <= (c->allow_recompute ? n : 0); r++) {
                    if (r > 0) {
                        int kr = c->layer_kind[f + r - 1];
                        rc_t += ks.t_rc[kr], rc_m += ks.m_saved[kr], Q |= 1u << kr;
                    }
                    if (r < r0) continue;
                    double set = ks.set[P * PP_STAGES_KIND_SETS + Q];
                    if (!c->kind_table[j] &&
                        (!isfinite(set) || lin - rc_m + set / BYTES_PER_GIB > ks.cap + 1e-9))
                        continue;
                    if (c->n_excluded && pp_stages_kind_excluded(c, j, f, n, r)) continue;
                    size_t at = kind_at(T, j, f, n);
                    T->t[at] = t0 + rc_t;
                    T->r[at] = (int32_t)r;
                    break;
                }
            }
        }
    }
    return 1;
}

/* Can stages 0..p-1 cover the layers with every stage time <= thr? fw[j * (L+1) + c]: stages
 * 0..j-1 can end at cut c. */
static bool kind_reach(const kind_table *T, double thr, bool *fw)
{
    const pp_stages_costs *c = T->c;
    int64_t p = c->n_stages, L1 = c->layers + 1;
    memset(fw, 0, sizeof(bool) * (size_t)(p + 1) * (size_t)L1);
    fw[0] = true;
    for (int64_t j = 0; j < p; j++)
        for (int64_t f = T->lo[j]; f <= T->hi[j]; f++) {
            if (!fw[j * L1 + f]) continue;
            for (int64_t n = c->layers_min[j]; n <= c->layers_max[j]; n++) {
                if (f + n < T->lo[j + 1] || f + n > T->hi[j + 1]) continue;
                double t = T->t[kind_at(T, j, f, n)];
                if (t <= thr && t < INFINITY) fw[(j + 1) * L1 + f + n] = true; /* inf: no fit */
            }
        }
    return fw[p * L1 + c->layers];
}

/* bw[j * (L+1) + c]: stages j..p-1 can cover [c, L) with every stage time <= thr. */
static void kind_reach_back(const kind_table *T, double thr, bool *bw)
{
    const pp_stages_costs *c = T->c;
    int64_t p = c->n_stages, L1 = c->layers + 1;
    memset(bw, 0, sizeof(bool) * (size_t)(p + 1) * (size_t)L1);
    bw[p * L1 + c->layers] = true;
    for (int64_t j = p - 1; j >= 0; j--)
        for (int64_t f = T->lo[j]; f <= T->hi[j]; f++)
            for (int64_t n = c->layers_min[j]; n <= c->layers_max[j]; n++) {
                if (f + n < T->lo[j + 1] || f + n > T->hi[j + 1]) continue;
                double t = T->t[kind_at(T, j, f, n)];
                if (t <= thr && t < INFINITY && bw[(j + 1) * L1 + f + n]) {
                    bw[j * L1 + f] = true;
                    break;
                }
            }
}

/* The least sum of stage times (ms) over splits whose stage times are all <= thr, and that
 * split (n, r, its max stage time); false when none. best/from: (p+1)(L+1) scratch. */
static bool kind_min_sum(const kind_table *T, double thr, double *best, int64_t *from, int64_t *n,
                         int64_t *r, double *sum_ms, double *max_ms)
{
    const pp_stages_costs *c = T->c;
    int64_t p = c->n_stages, L = c->layers, L1 = L + 1;
    for (size_t k = 0; k < (size_t)(p + 1) * (size_t)L1; k++) best[k] = INFINITY;
    best[0] = 0;
    for (int64_t j = 0; j < p; j++)
        for (int64_t f = T->lo[j]; f <= T->hi[j]; f++) {
            double b = best[j * L1 + f];
            if (!isfinite(b)) continue;
            for (int64_t k = c->layers_min[j]; k <= c->layers_max[j]; k++) {
                if (f + k < T->lo[j + 1] || f + k > T->hi[j + 1]) continue;
                double t = T->t[kind_at(T, j, f, k)];
                if (!(t <= thr) || !(t < INFINITY) || !(b + t < best[(j + 1) * L1 + f + k])) continue;
                best[(j + 1) * L1 + f + k] = b + t;
                from[(j + 1) * L1 + f + k] = f;
            }
        }
    if (!isfinite(best[p * L1 + L])) return false;
    *sum_ms = best[p * L1 + L];
    *max_ms = 0;
    for (int64_t j = p - 1, e = L; j >= 0; j--) {
        int64_t f = from[(j + 1) * L1 + e];
        n[j] = e - f;
        size_t at = kind_at(T, j, f, n[j]);
        r[j] = T->r[at];
        if (T->t[at] > *max_ms) *max_ms = T->t[at];
        e = f;
    }
    return true;
}

/* What the DP gives the MILP: cut ranges (the bounds', then narrowed to the splits that can be
 * as good as the incumbent), the lower bounds T* (least max stage time) and S* (least sum), the
 * incumbent (the DP's best split: optimal for the rows unless the thresholds ran out) and the
 * hull cuts. */
typedef struct {
    int64_t lo[PP_MAX_STAGES + 1], hi[PP_MAX_STAGES + 1];
    bool table;      /* the DP ran (else GLPK alone, over the bounds' cut ranges) */
    bool any;        /* some split fits by the rows (false only when the DP says so) */
    double t_star_ms, s_star_ms;
    bool have_split;
    int64_t hn[PP_MAX_STAGES], hr[PP_MAX_STAGES];
    double obj_ms;
    /* Cuts sum_j time_j - slope T >= rhs (ms): facets of the lower convex hull of the points
     * (T, S(T)), S(T) the least sum with every stage time <= T, next to the optimum. */
    int n_facets;
    double facet_slope[2], facet_rhs[2];
} kind_hint;

/* At most this many max-time thresholds are tried above T* (each an O(p L^2) DP), and at most
 * KIND_DP_WORK table cells visited over all of them: past that the incumbent is the best split
 * found and GLPK proves (or improves) it alone. */
#define KIND_DP_THRESHOLDS 2000
#define KIND_DP_WORK 1e8

/* The facets of the lower convex hull of the points (t[i], s[i]) (t increasing, s not
 * increasing) next to the vertex that minimises wm t + ws s. Valid for every split with max
 * stage time T and sum S: S >= S(T) >= the hull at T, and each facet is not increasing, so it
 * lies below the step function S(.) between the points and below S* past the last one. */
static void kind_hull_cuts(kind_hint *h, const double *t, const double *s, size_t n, double wm,
                           double ws)
{
    size_t hull[KIND_DP_THRESHOLDS + 1], k = 0;
    for (size_t i = 0; i < n; i++) {
        /* Andrew's monotone chain, lower hull: drop the last point while it is not below the
         * segment from the one before it to point i */
        while (k >= 2) {
            size_t a = hull[k - 2], b = hull[k - 1];
            double cross = (t[b] - t[a]) * (s[i] - s[a]) - (s[b] - s[a]) * (t[i] - t[a]);
            if (cross > 0) break;
            k--;
        }
        hull[k++] = i;
    }
    size_t v = 0;
    for (size_t i = 1; i < k; i++)
        if (wm * t[hull[i]] + ws * s[hull[i]] < wm * t[hull[v]] + ws * s[hull[v]]) v = i;
    h->n_facets = 0;
    for (int side = 0; side < 2; side++) {
        if ((side == 0 && v == 0) || (side == 1 && v + 1 >= k)) continue;
        size_t a = hull[side == 0 ? v - 1 : v], b = hull[side == 0 ? v : v + 1];
        double slope = (s[b] - s[a]) / (t[b] - t[a]);
        if (!(slope <= 0) || !isfinite(slope)) continue;
        double rhs = s[a] - slope * t[a];
        /* loosened by more than the rounding of a different summation order */
        h->facet_slope[h->n_facets] = slope;
        h->facet_rhs[h->n_facets] = rhs - 1e-9 * (fabs(s[a]) + fabs(slope * t[a])) - 1e-9;
        h->n_facets++;
    }
}

/* The DP of pp_stages.h over the cut positions into h; false when out of memory. */
static bool kind_hint_get(const pp_stages_costs *c, kind_hint *h)
{
    int64_t p = c->n_stages, L1 = c->layers + 1;
    memset(h, 0, sizeof *h);
    pp_stages_cut_bounds(c, h->lo, h->hi);
    h->any = true;
    kind_table T = {.c = c};
    memcpy(T.lo, h->lo, sizeof T.lo);
    memcpy(T.hi, h->hi, sizeof T.hi);
    size_t grid = (size_t)(p + 1) * (size_t)L1;
    bool *fw = NULL, *bw = NULL;
    double *best = NULL, *ts = NULL;
    double pt_t[KIND_DP_THRESHOLDS + 1], pt_s[KIND_DP_THRESHOLDS + 1];
    int64_t *from = NULL;
    bool ok = false;
    int filled = kind_table_fill(&T);
    if (filled <= 0) {
        ok = filled == 0; /* too large: GLPK alone over the bounds' cut ranges */
        goto done;
    }
    fw = malloc(sizeof(bool) * grid);
    bw = malloc(sizeof(bool) * grid);
    best = malloc(sizeof(double) * grid);
    from = malloc(sizeof(int64_t) * grid);
    ts = malloc(sizeof(double) * (T.off[p] ? T.off[p] : 1));
    if (!fw || !bw || !best || !from || !ts) goto done;
    ok = true;
    h->table = true;
    size_t k = 0;
    for (size_t a = 0; a < T.off[p]; a++)
        if (isfinite(T.t[a])) ts[k++] = T.t[a];
    if (!k || !kind_reach(&T, INFINITY, fw)) {
        h->any = false; /* no split fits by the rows */
        goto done;
    }
    qsort(ts, k, sizeof ts[0], pp_stages_cmp_double);
    size_t u = 0;
    for (size_t a = 0; a < k; a++)
        if (!u || ts[a] != ts[u - 1]) ts[u++] = ts[a];
    size_t lo = 0, hi = u - 1; /* feasible(ts[hi]) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (kind_reach(&T, ts[mid], fw)) hi = mid;
        else lo = mid + 1;
    }
    h->t_star_ms = ts[hi];
    int64_t n[PP_MAX_STAGES], r[PP_MAX_STAGES];
    double sum, mx;
    kind_min_sum(&T, INFINITY, best, from, n, r, &h->s_star_ms, &mx);
    /* The objective's optimum over thresholds T >= T*: at T the least sum S(T) (non-increasing
     * in T); stop once w_max T + w_sum S* cannot beat the best found. */
    double wm = c->obj_max_weight, ws = c->obj_sum_weight;
    h->obj_ms = INFINITY;
    if (wm <= 0) {
        memcpy(h->hn, n, sizeof(int64_t) * (size_t)p);
        memcpy(h->hr, r, sizeof(int64_t) * (size_t)p);
        h->obj_ms = ws * h->s_star_ms;
    } else {
        size_t a = hi, tries = 0, npt = 0;
        size_t most = (size_t)fmin(KIND_DP_THRESHOLDS, fmax(1.0, KIND_DP_WORK / (double)T.off[p]));
        for (; a < u && tries < most; a++, tries++) {
            if (wm * ts[a] + ws * h->s_star_ms >= h->obj_ms) break;
            if (!kind_min_sum(&T, ts[a], best, from, n, r, &sum, &mx)) continue;
            pt_t[npt] = ts[a], pt_s[npt] = sum, npt++;
            double obj = wm * mx + ws * sum;
            if (obj < h->obj_ms) {
                h->obj_ms = obj;
                memcpy(h->hn, n, sizeof(int64_t) * (size_t)p);
                memcpy(h->hr, r, sizeof(int64_t) * (size_t)p);
            }
        }
        /* Past the last threshold tried, S(T) >= S* (the least sum of all). */
        if (a < u) pt_t[npt] = ts[a], pt_s[npt] = h->s_star_ms, npt++;
        kind_hull_cuts(h, pt_t, pt_s, npt, wm, ws);
    }
    h->have_split = isfinite(h->obj_ms);
    if (!h->have_split || wm <= 0) goto done;
    /* Any split at least as good as the incumbent has every stage time <= T_ub: keep the cuts
     * that such splits can reach from both ends. */
    double t_ub = (h->obj_ms - ws * h->s_star_ms) / wm;
    t_ub = t_ub * (1 + 1e-9) + 1e-9;
    kind_reach(&T, t_ub, fw);
    kind_reach_back(&T, t_ub, bw);
    for (int64_t j = 1; j < p; j++) {
        int64_t a = -1, b = -1;
        for (int64_t cut = T.lo[j]; cut <= T.hi[j]; cut++)
            if (fw[j * L1 + cut] && bw[j * L1 + cut]) {
                if (a < 0) a = cut;
                b = cut;
            }
        if (a >= 0) h->lo[j] = a, h->hi[j] = b; /* (always: the incumbent's cut is there) */
    }
done:
    free(T.t);
    free(T.r);
    free(fw);
    free(bw);
    free(best);
    free(from);
    free(ts);
    return ok;
}

/* Columns of the cut MILP (1-based; 0: the variable is fixed, see kind_u / kind_v);
 * pp_stages_kind_index outside this file. */
typedef struct pp_stages_kind_index {
    int64_t p, L;
    bool rc;
    int64_t lo[PP_MAX_STAGES + 1], hi[PP_MAX_STAGES + 1]; /* cut ranges (the hint's) */
    int col_T, col_one;
    int *u; /* [(p + 1) L]: U_ji = [i < c_j] */
    int *v; /* [p L]: V_ji = [i < d_j], d_j = c_j + r_j */
    int pres[PP_MAX_STAGES][PP_LAYER_KINDS], rcp[PP_MAX_STAGES][PP_LAYER_KINDS];
    double pres_fix[PP_MAX_STAGES][PP_LAYER_KINDS]; /* where pres has no column */
} kind_index;

/* A column, or a constant where col is 0. */
typedef struct {
    int col;
    double val;
} kref;

static kref kind_u(const kind_index *x, int64_t j, int64_t i)
{
    if (j <= 0) return (kref){0, 0.0};
    if (j >= x->p || i < x->lo[j]) return (kref){0, 1.0};
    if (i >= x->hi[j]) return (kref){0, 0.0};
    return (kref){x->u[j * x->L + i], 0.0};
}

static kref kind_v(const kind_index *x, int64_t j, int64_t i)
{
    if (!x->rc) return kind_u(x, j, i); /* d_j = c_j */
    if (i < x->lo[j]) return (kref){0, 1.0};
    if (i >= x->hi[j + 1]) return (kref){0, 0.0};
    return (kref){x->v[j * x->L + i], 0.0};
}

static kref kind_pres(const kind_index *x, int64_t j, int k)
{
    return x->pres[j][k] ? (kref){x->pres[j][k], 0.0} : (kref){0, x->pres_fix[j][k]};
}

static kref kind_rcp(const kind_index *x, int64_t j, int k)
{
    return x->rcp[j][k] ? (kref){x->rcp[j][k], 0.0} : (kref){0, 0.0};
}

/* A row being summed: coefficients merged by column (GLPK refuses duplicates), constants
 * moved to the bounds. */
typedef struct {
    int n;
    int *ind, *pos; /* pos[col]: its index in ind, 0 when absent */
    double *val;
    double cst;
} lrow;

static bool lrow_init(lrow *r, int ncol)
{
    memset(r, 0, sizeof *r);
    r->ind = malloc(sizeof(int) * (size_t)(ncol + 1));
    r->pos = calloc((size_t)ncol + 1, sizeof(int));
    r->val = malloc(sizeof(double) * (size_t)(ncol + 1));
    return r->ind && r->pos && r->val;
}

static void lrow_free(lrow *r)
{
    free(r->ind), free(r->pos), free(r->val);
}

static void lrow_add(lrow *r, kref x, double a)
{
    if (a == 0) return;
    if (!x.col) {
        r->cst += a * x.val;
        return;
    }
    int at = r->pos[x.col];
    if (!at) {
        at = ++r->n;
        r->pos[x.col] = at;
        r->ind[at] = x.col;
        r->val[at] = 0;
    }
    r->val[at] += a;
}

/* Add sum + cst within [lb, ub] (GLP_UP, GLP_LO, GLP_DB or GLP_FX) and clear the row. A row
 * left with no column is kept (GLPK reports it infeasible when its constant breaks it). */
static void lrow_emit(glp_prob *P, lrow *r, const char *name, int type, double lb, double ub)
{
    /* Sums that cancel (a layer's time entering one stage and leaving the next) leave
     * rounding residues of 1e-15; they only slow the simplex down. */
    double big = 0;
    for (int t = 1; t <= r->n; t++) big = fmax(big, fabs(r->val[t]));
    int m = 0;
    for (int t = 1; t <= r->n; t++) {
        r->pos[r->ind[t]] = 0;
        if (fabs(r->val[t]) > 1e-12 * big) r->ind[++m] = r->ind[t], r->val[m] = r->val[t];
    }
    int row = glp_add_rows(P, 1);
    glp_set_row_name(P, row, name);
    if (type == GLP_DB && lb == ub) type = GLP_FX; /* GLPK refuses a double bound lb == ub */
    glp_set_row_bnds(P, row, type, lb - r->cst, ub - r->cst);
    glp_set_mat_row(P, row, m, r->ind, r->val);
    r->n = 0;
    r->cst = 0;
}

/* x_ji = [layer i on stage j] and y_ji = [layer i on stage j and recomputed], times a. */
static void lrow_add_on(lrow *r, const kind_index *x, int64_t j, int64_t i, double a)
{
    lrow_add(r, kind_u(x, j + 1, i), a);
    lrow_add(r, kind_u(x, j, i), -a);
}

static void lrow_add_rc(lrow *r, const kind_index *x, int64_t j, int64_t i, double a)
{
    lrow_add(r, kind_v(x, j, i), a);
    lrow_add(r, kind_u(x, j, i), -a);
}

/* dev(range) = how many of the literals "stage j is [f, f + n)" fail: c_j = f (U_j,f-1 = 1,
 * U_jf = 0) and c_j+1 = f + n; 0 exactly for that range, >= 1 for any other. */
static void lrow_add_range_dev(lrow *r, const kind_index *x, int64_t j, int64_t f, int64_t n,
                               double a)
{
    const kref one = {0, 1.0};
    if (f > 0) lrow_add(r, one, a), lrow_add(r, kind_u(x, j, f - 1), -a);
    if (f < x->L) lrow_add(r, kind_u(x, j, f), a);
    lrow_add(r, one, a), lrow_add(r, kind_u(x, j + 1, f + n - 1), -a);
    if (f + n < x->L) lrow_add(r, kind_u(x, j + 1, f + n), a);
}

/* A stage priced by position (kind_table): for each range it can hold, r_j >= rmin, i.e.
 * V_j,f+rmin-1 = 1, unless the stage is another range; a range that fits with no r is
 * excluded. */
static void kind_table_rows(glp_prob *P, const pp_stages_costs *c, const kind_index *x, int64_t j,
                            lrow *row)
{
    char name[48];
    for (int64_t f = x->lo[j]; f <= x->hi[j]; f++)
        for (int64_t n = c->layers_min[j]; n <= c->layers_max[j]; n++) {
            if (f + n < x->lo[j + 1] || f + n > x->hi[j + 1]) continue;
            int32_t rm = c->kind_rmin[pp_stages_rmin_index(c, j, f, n)];
            if (rm == 0) continue;
            lrow_add_range_dev(row, x, j, f, n, 1.0);
            if (rm > 0) lrow_add(row, kind_v(x, j, f + rm - 1), 1.0);
            snprintf(name, sizeof name, "tab_%lld_%lld_%lld", (long long)j, (long long)f, (long long)n);
            lrow_emit(P, row, name, GLP_LO, 1.0, 0.0);
        }
}

/* Build the cut MILP of pp_stages.h over the hint's cut ranges, with T >= T* and
 * sum_j time_j >= S* when the DP ran. NULL when out of memory. */
static glp_prob *kind_build(const pp_stages_costs *c, const kind_hint *h, kind_index *x)
{
    int64_t p = c->n_stages, L = c->layers;
    const int8_t *kd = c->layer_kind;
    x->p = p, x->L = L, x->rc = c->allow_recompute;
    memcpy(x->lo, h->lo, sizeof x->lo);
    memcpy(x->hi, h->hi, sizeof x->hi);
    x->u = calloc((size_t)(p + 1) * (size_t)L, sizeof(int));
    x->v = calloc((size_t)p * (size_t)L, sizeof(int));
    pp_stages_kind_mixes *mx = malloc(sizeof *mx);
    lrow row = {0}, sum = {0};
    glp_prob *P = glp_create_prob();
    if (!x->u || !x->v || !mx || !P) goto fail;
    glp_set_prob_name(P, "parplan_stages_by_kind");
    glp_set_obj_name(P, "pipeline_ms");
    glp_set_obj_dir(P, GLP_MIN);
    char name[48];

    /* Columns: T, one, U, V, pres, rcp. */
    double t_star = h->table ? h->t_star_ms * (1 - 1e-9) : 0.0;
    x->col_T = pp_stages_col_add(P, "T", -1, GLP_CV, GLP_LO, t_star, 0.0, c->obj_max_weight);
    int col_one = pp_stages_col_add(P, "one", -1, GLP_CV, GLP_FX, 1.0, 1.0, 0.0);
    x->col_one = col_one;
    for (int64_t j = 1; j < p; j++)
        for (int64_t i = h->lo[j]; i < h->hi[j]; i++) {
            snprintf(name, sizeof name, "u_%lld_%lld", (long long)j, (long long)i);
            x->u[j * L + i] = pp_stages_col_add(P, name, -1, GLP_BV, 0, 0.0, 1.0, 0.0);
        }
    for (int64_t j = 0; j < p && x->rc; j++)
        for (int64_t i = h->lo[j]; i < h->hi[j + 1]; i++) {
            snprintf(name, sizeof name, "v_%lld_%lld", (long long)j, (long long)i);
            x->v[j * L + i] = pp_stages_col_add(P, name, -1, GLP_BV, 0, 0.0, 1.0, 0.0);
        }
    for (int64_t j = 0; j < p; j++) {
        unsigned may = 0, sure = 0; /* kinds that may / must sit on stage j */
        for (int64_t i = h->lo[j]; i < h->hi[j + 1]; i++) may |= 1u << kd[i];
        for (int64_t i = h->hi[j]; i < h->lo[j + 1]; i++) sure |= 1u << kd[i];
        for (int k = 0; k < PP_LAYER_KINDS && !c->kind_table[j]; k++) {
            x->pres_fix[j][k] = sure >> k & 1u;
            if ((may >> k & 1u) && !(sure >> k & 1u)) {
                snprintf(name, sizeof name, "pres_%lld_%d", (long long)j, k);
                x->pres[j][k] = pp_stages_col_add(P, name, -1, GLP_CV, GLP_DB, 0.0, 1.0, 0.0);
            }
            if (x->rc && (may >> k & 1u)) {
                snprintf(name, sizeof name, "rcp_%lld_%d", (long long)j, k);
                x->rcp[j][k] = pp_stages_col_add(P, name, -1, GLP_CV, GLP_DB, 0.0, 1.0, 0.0);
            }
        }
    }
    int ncol = glp_get_num_cols(P);
    if (!lrow_init(&row, ncol) || !lrow_init(&sum, ncol)) goto fail;
    const kref one = {0, 1.0};

    /* Cuts in order (U_ji <= U_j+1,i) and monotone in i (U_ji <= U_j,i-1). */
    for (int64_t j = 0; j < p; j++)
        for (int64_t i = 0; i < L; i++) {
            kref a = kind_u(x, j, i), b = kind_u(x, j + 1, i);
            if (!a.col && !b.col) continue;
            lrow_add(&row, a, 1.0), lrow_add(&row, b, -1.0);
            snprintf(name, sizeof name, "ord_%lld_%lld", (long long)j, (long long)i);
            lrow_emit(P, &row, name, GLP_UP, 0.0, 0.0);
        }
    for (int64_t j = 1; j < p; j++)
        for (int64_t i = h->lo[j] > 0 ? h->lo[j] : 1; i < h->hi[j]; i++) {
            kref prev = kind_u(x, j, i - 1);
            if (!prev.col) continue; /* U_j,i-1 = 1 */
            lrow_add(&row, kind_u(x, j, i), 1.0), lrow_add(&row, prev, -1.0);
            snprintf(name, sizeof name, "mono_%lld_%lld", (long long)j, (long long)i);
            lrow_emit(P, &row, name, GLP_UP, 0.0, 0.0);
        }
    /* Layer counts within the bounds. */
    for (int64_t j = 0; j < p; j++) {
        /* outside [lo_j, hi_j+1) layer i is on stage j for no cut in range */
        for (int64_t i = h->lo[j]; i < h->hi[j + 1]; i++) lrow_add_on(&row, x, j, i, 1.0);
        snprintf(name, sizeof name, "count_%lld", (long long)j);
        lrow_emit(P, &row, name, GLP_DB, (double)c->layers_min[j], (double)c->layers_max[j]);
    }
    /* Recompute ends: U_ji <= V_ji <= U_j+1,i, V monotone in i. */
    for (int64_t j = 0; j < p && x->rc; j++)
        for (int64_t i = h->lo[j]; i < h->hi[j + 1]; i++) {
            kref v = kind_v(x, j, i);
            lrow_add(&row, v, 1.0), lrow_add(&row, kind_u(x, j, i), -1.0);
            snprintf(name, sizeof name, "vlo_%lld_%lld", (long long)j, (long long)i);
            lrow_emit(P, &row, name, GLP_LO, 0.0, 0.0);
            lrow_add(&row, v, 1.0), lrow_add(&row, kind_u(x, j + 1, i), -1.0);
            snprintf(name, sizeof name, "vhi_%lld_%lld", (long long)j, (long long)i);
            lrow_emit(P, &row, name, GLP_UP, 0.0, 0.0);
            kref prev = kind_v(x, j, i - 1 >= 0 ? i - 1 : 0);
            if (i == 0 || !prev.col) continue;
            lrow_add(&row, v, 1.0), lrow_add(&row, prev, -1.0);
            snprintf(name, sizeof name, "vmono_%lld_%lld", (long long)j, (long long)i);
            lrow_emit(P, &row, name, GLP_UP, 0.0, 0.0);
        }
    /* Presence: pres_jk = [n_jk > 0], rcp_jk = [r_jk > 0]. */
    for (int64_t j = 0; j < p; j++)
        for (int k = 0; k < PP_LAYER_KINDS; k++) {
            for (int rc = 0; rc < 2; rc++) {
                kref ind = rc ? kind_rcp(x, j, k) : kind_pres(x, j, k);
                if (!ind.col) continue;
                for (int64_t i = h->lo[j]; i < h->hi[j + 1]; i++) {
                    if (kd[i] != k) continue;
                    lrow_add(&row, ind, 1.0);
                    if (rc) lrow_add_rc(&row, x, j, i, -1.0);
                    else lrow_add_on(&row, x, j, i, -1.0);
                    snprintf(name, sizeof name, "%s_%lld_%lld", rc ? "rl" : "pl", (long long)j, (long long)i);
                    lrow_emit(P, &row, name, GLP_LO, 0.0, 0.0);
                }
                lrow_add(&row, ind, 1.0);
                for (int64_t i = h->lo[j]; i < h->hi[j + 1]; i++) {
                    if (kd[i] != k) continue;
                    if (rc) lrow_add_rc(&row, x, j, i, -1.0);
                    else lrow_add_on(&row, x, j, i, -1.0);
                }
                snprintf(name, sizeof name, "%s_%lld_%d", rc ? "ru" : "pu", (long long)j, k);
                lrow_emit(P, &row, name, GLP_UP, 0.0, 0.0);
            }
        }
    /* Time: time_j <= T; the objective's sum. */
    for (int64_t j = 0; j < p; j++) {
        kind_stage ks;
        kind_stage_get(c, j, &ks);
        for (int pass = 0; pass < 2; pass++) {
            lrow *to = pass ? &sum : &row;
            lrow_add(to, one, ks.t_base);
            for (int64_t i = h->lo[j]; i < h->hi[j + 1]; i++) {
                lrow_add_on(to, x, j, i, ks.t_layer[kd[i]]);
                if (x->rc) lrow_add_rc(to, x, j, i, ks.t_rc[kd[i]]);
            }
        }
        lrow_add(&row, (kref){x->col_T, 0.0}, -1.0);
        snprintf(name, sizeof name, "time_%lld", (long long)j);
        lrow_emit(P, &row, name, GLP_UP, 0.0, 0.0);
    }
    /* The objective: w_max T (set above) + w_sum sum_j time_j, its constant on "one". */
    for (int t = 1; t <= sum.n; t++)
        glp_set_obj_coef(P, sum.ind[t], c->obj_sum_weight * sum.val[t]);
    glp_set_obj_coef(P, col_one, c->obj_sum_weight * sum.cst);
    if (h->table) {
        /* sum_j time_j >= S*: a valid cut the LP relaxation cannot see. */
        for (int t = 1; t <= sum.n; t++) lrow_add(&row, (kref){sum.ind[t], 0.0}, sum.val[t]);
        row.cst = sum.cst;
        lrow_emit(P, &row, "sum_time", GLP_LO, h->s_star_ms * (1 - 1e-9), 0.0);
        /* and sum_j time_j - slope T >= rhs from the DP's S(T) (kind_hull_cuts) */
        for (int f = 0; f < h->n_facets; f++) {
            for (int t = 1; t <= sum.n; t++) lrow_add(&row, (kref){sum.ind[t], 0.0}, sum.val[t]);
            lrow_add(&row, (kref){x->col_T, 0.0}, -h->facet_slope[f]);
            row.cst = sum.cst;
            snprintf(name, sizeof name, "hull_%d", f);
            lrow_emit(P, &row, name, GLP_LO, h->facet_rhs[f], 0.0);
        }
    }
    /* Memory: one row per mix (P, Q) the stage can hold, relaxed by the deviation from it. */
    for (int64_t j = 0; j < p; j++) {
        if (c->kind_table[j]) {
            kind_table_rows(P, c, x, j, &row);
            continue;
        }
        kind_stage ks;
        kind_stage_get(c, j, &ks);
        pp_stages_kind_mixes_find(c, j, h->lo, h->hi, mx);
        double smin = INFINITY;
        for (unsigned P1 = 0; P1 < PP_STAGES_KIND_SETS; P1++)
            for (unsigned Q1 = 0; Q1 < PP_STAGES_KIND_SETS; Q1++)
                if (mx->seen[P1][Q1]) smin = fmin(smin, ks.set[P1 * PP_STAGES_KIND_SETS + Q1]);
        for (unsigned P1 = 0; P1 < PP_STAGES_KIND_SETS; P1++)
            for (unsigned Q1 = 0; Q1 < PP_STAGES_KIND_SETS; Q1++) {
                if (!mx->seen[P1][Q1]) continue;
                double s = ks.set[P1 * PP_STAGES_KIND_SETS + Q1] / BYTES_PER_GIB;
                double big = s - smin / BYTES_PER_GIB;
                for (int64_t i = h->lo[j]; i < h->hi[j + 1]; i++) {
                    lrow_add_on(&row, x, j, i, ks.m_layer[kd[i]]);
                    if (x->rc) lrow_add_rc(&row, x, j, i, -ks.m_saved[kd[i]]);
                }
                lrow_add(&row, one, s);
                for (int k = 0; big > 0 && k < PP_LAYER_KINDS; k++) {
                    if (!(mx->kinds >> k & 1u)) continue;
                    kref a = kind_pres(x, j, k), b = kind_rcp(x, j, k);
                    /* dev += [k in P] (1 - pres) + [k not in P] pres, the same for Q */
                    if (P1 >> k & 1u) lrow_add(&row, one, -big), lrow_add(&row, a, big);
                    else lrow_add(&row, a, -big);
                    if (!x->rc) continue;
                    if (Q1 >> k & 1u) lrow_add(&row, one, -big), lrow_add(&row, b, big);
                    else lrow_add(&row, b, -big);
                }
                snprintf(name, sizeof name, "mem_%lld_%u_%u", (long long)j, P1, Q1);
                lrow_emit(P, &row, name, GLP_UP, 0.0, ks.cap);
            }
    }
    /* Excluded configurations (no-good rows): stage j is not [f, f + n) with r recomputed. */
    for (int64_t e = 0; e < c->n_excluded; e++) {
        int64_t j = c->excluded[e][0], f = c->excluded[e][1], n = c->excluded[e][2],
                r = c->excluded[e][3];
        /* literals that hold for the configuration: X = 1 (add 1 - X) or X = 0 (add X) */
        lrow_add_range_dev(&row, x, j, f, n, 1.0);
        if (r > 0) lrow_add(&row, one, 1.0), lrow_add(&row, kind_v(x, j, f + r - 1), -1.0);
        if (f + r < L) lrow_add(&row, kind_v(x, j, f + r), 1.0);
        snprintf(name, sizeof name, "excl_%lld", (long long)e);
        lrow_emit(P, &row, name, GLP_LO, 1.0, 0.0);
    }
    lrow_free(&row);
    lrow_free(&sum);
    free(mx);
    return P;
fail:
    lrow_free(&row);
    lrow_free(&sum);
    free(mx);
    if (P) glp_delete_prob(P);
    return NULL;
}

void pp_stages_kind_index_free(kind_index *x)
{
    if (!x) return;
    free(x->u);
    free(x->v);
    free(x);
}

/* The incumbent's column values: the DP's split. */
static void kind_incumbent_fill(const pp_stages_costs *c, const kind_hint *h, const kind_index *x,
                                pp_stages_incumbent *inc)
{
    if (!h->have_split) return;
    int64_t p = c->n_stages, L = c->layers, first = 0;
    double tmax = 0;
    for (int64_t j = 0; j < p; j++) {
        int64_t n = h->hn[j], r = h->hr[j];
        kind_stage ks;
        kind_stage_get(c, j, &ks);
        double t = ks.t_base;
        unsigned P = 0, Q = 0;
        for (int64_t i = first; i < first + n; i++) {
            t += ks.t_layer[c->layer_kind[i]] + (i < first + r ? ks.t_rc[c->layer_kind[i]] : 0);
            P |= 1u << c->layer_kind[i];
            if (i < first + r) Q |= 1u << c->layer_kind[i];
        }
        tmax = fmax(tmax, t);
        for (int64_t i = 0; i < L; i++) {
            if (j > 0 && x->u[j * L + i]) inc->x[x->u[j * L + i]] = i < first;
            if (x->rc && x->v[j * L + i]) inc->x[x->v[j * L + i]] = i < first + r;
        }
        for (int k = 0; k < PP_LAYER_KINDS; k++) {
            if (x->pres[j][k]) inc->x[x->pres[j][k]] = P >> k & 1u;
            if (x->rcp[j][k]) inc->x[x->rcp[j][k]] = Q >> k & 1u;
        }
        first += n;
    }
    inc->x[x->col_T] = tmax;
    inc->x[x->col_one] = 1.0;
    inc->ready = true;
}

void pp_stages_kind_split(const pp_stages_costs *c, glp_prob *P, const kind_index *x, int64_t *n,
                          int64_t *r)
{
    int64_t p = c->n_stages, L = c->layers, cut[PP_MAX_STAGES + 1];
    for (int64_t j = 0; j <= p; j++) {
        cut[j] = x->lo[j];
        for (int64_t i = x->lo[j]; j > 0 && j < p && i < x->hi[j]; i++)
            cut[j] += llround(glp_mip_col_val(P, x->u[j * L + i]));
    }
    for (int64_t j = 0; j < p; j++) {
        n[j] = cut[j + 1] - cut[j];
        int64_t d = x->lo[j];
        for (int64_t i = x->lo[j]; x->rc && i < x->hi[j + 1]; i++)
            d += llround(glp_mip_col_val(P, x->v[j * L + i]));
        r[j] = x->rc ? d - cut[j] : 0;
    }
}

glp_prob *pp_stages_kind_build(const pp_stages_costs *c, bool milp_only, kind_index **xp,
                               pp_stages_incumbent *inc, bool *none_fits)
{
    kind_hint *kh = malloc(sizeof *kh);
    kind_index *kx = calloc(1, sizeof *kx);
    glp_prob *P = NULL;
    if (none_fits) *none_fits = false;
    if (kh && kx && milp_only) {
        memset(kh, 0, sizeof *kh); /* the bounds' cut ranges, no DP */
        pp_stages_cut_bounds(c, kh->lo, kh->hi);
        P = kind_build(c, kh, kx);
    } else if (kh && kx && kind_hint_get(c, kh)) {
        if (none_fits) *none_fits = !kh->any;
        if (!none_fits || kh->any) P = kind_build(c, kh, kx);
    }
    if (P && inc) {
        inc->x = calloc((size_t)glp_get_num_cols(P) + 1, sizeof(double));
        if (inc->x) kind_incumbent_fill(c, kh, kx, inc);
    }
    free(kh);
    if (!P) {
        pp_stages_kind_index_free(kx);
        kx = NULL;
    }
    *xp = kx;
    return P;
}
