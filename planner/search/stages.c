/* Uneven pipeline stages and per-stage recompute: the MILP of pp_stages.h, solved with GLPK.
 * All of parplan's GLPK code is in this file.
 *
 * Why counts are enough for a model of one layer kind: its decoder layers are identical, so
 * which layers a stage holds only matters through how many it holds; stage j holds the layers
 * n_0 + ... + n_{j-1} .. n_0 + ... + n_j - 1, which is contiguous for any integer n with
 * sum n_j = L. The embedding is on the first stage and the output layer + loss on the last
 * (Megatron's placement; its --pipeline-model-parallel-layout also allows empty stages, which
 * pp_layout_validate does not: every stage holds at least one layer here). Layers of several
 * kinds (or MTP layers) make which layers matter: the cut formulation of pp_stages.h (section
 * "the cut formulation (by kind)" below) prices every layer by its kind; the result is still a
 * vector of counts, the positions following from them.
 *
 * Units inside the MILP: milliseconds and GiB, so that the coefficients are O(1)-O(1e3)
 * rather than 1e-3 s and 1e10 bytes (GLPK's tolerances are absolute-ish, 1e-7 scaled). */
#include "pp_stages.h"
#include "stages_cuts.h"

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
    free(c->layer_kind);
    free(c->kind_mem_set_bytes);
    free(c->kind_rmin);
    free(c->excluded);
    c->layer_kind = NULL;
    c->kind_mem_set_bytes = NULL;
    c->kind_rmin = NULL;
    memset(c->kind_table, 0, sizeof c->kind_table);
    c->excluded = NULL;
    c->n_excluded = 0;
    c->by_kind = false;
}

/* The cut formulation has L binaries per cut: beyond this many layers it is not built. */
#define KIND_MAX_LAYERS 4096

pp_status pp_stages_costs_kinds_alloc(pp_stages_costs *c, pp_error *err)
{
    if (!c || c->n_stages < 1 || c->n_stages > PP_MAX_STAGES || c->layers < 1 ||
        c->layers > KIND_MAX_LAYERS)
        return COSTS_BAD("stage costs by kind: %lld stages and %lld layers (1 to %d stages, 1 to "
                         "%d layers)", c ? (long long)c->n_stages : 0LL,
                         c ? (long long)c->layers : 0LL, PP_MAX_STAGES, KIND_MAX_LAYERS);
    free(c->layer_kind);
    free(c->kind_mem_set_bytes);
    size_t sets = pp_stages_set_index(c->n_stages, 0, 0);
    c->layer_kind = calloc((size_t)c->layers, sizeof *c->layer_kind);
    c->kind_mem_set_bytes = malloc(sizeof(double) * sets);
    if (!c->layer_kind || !c->kind_mem_set_bytes) {
        free(c->layer_kind);
        free(c->kind_mem_set_bytes);
        c->layer_kind = NULL;
        c->kind_mem_set_bytes = NULL;
        return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory (stage costs by kind)");
    }
    for (size_t k = 0; k < sets; k++) c->kind_mem_set_bytes[k] = NAN;
    c->by_kind = true;
    return PP_OK;
}

void pp_stages_cut_bounds(const pp_stages_costs *c, int64_t *lo, int64_t *hi)
{
    int64_t p = c->n_stages, L = c->layers, min_before = 0, max_before = 0, min_after = 0,
            max_after = 0;
    for (int64_t j = 0; j < p; j++) min_after += c->layers_min[j], max_after += c->layers_max[j];
    for (int64_t j = 0; j <= p; j++) {
        int64_t a = min_before > L - max_after ? min_before : L - max_after;
        int64_t b = max_before < L - min_after ? max_before : L - min_after;
        lo[j] = j == 0 ? 0 : j == p ? L : a;
        hi[j] = j == 0 ? 0 : j == p ? L : b;
        if (j < p) {
            min_before += c->layers_min[j], max_before += c->layers_max[j];
            min_after -= c->layers_min[j], max_after -= c->layers_max[j];
        }
    }
}

/* The kind mixes (P, Q) stage j can hold within the cut ranges lo/hi: P the kinds of its
 * layers, Q those of its first r (recomputed) layers, for every start, length and r; with the
 * shortest (then least r) and the longest (then most r) configuration holding each. */
typedef struct {
    bool seen[PP_STAGES_KIND_SETS][PP_STAGES_KIND_SETS];
    int64_t f[PP_STAGES_KIND_SETS][PP_STAGES_KIND_SETS], n[PP_STAGES_KIND_SETS][PP_STAGES_KIND_SETS],
        r[PP_STAGES_KIND_SETS][PP_STAGES_KIND_SETS];
    int64_t f2[PP_STAGES_KIND_SETS][PP_STAGES_KIND_SETS], n2[PP_STAGES_KIND_SETS][PP_STAGES_KIND_SETS],
        r2[PP_STAGES_KIND_SETS][PP_STAGES_KIND_SETS];
    unsigned kinds; /* union of every P */
} kind_mixes;

static void kind_mixes_find(const pp_stages_costs *c, int64_t j, const int64_t *lo, const int64_t *hi,
                            kind_mixes *mx)
{
    memset(mx, 0, sizeof *mx);
    for (int64_t f = lo[j]; f <= hi[j]; f++) {
        int64_t nmin = c->layers_min[j], nmax = c->layers_max[j];
        if (lo[j + 1] - f > nmin) nmin = lo[j + 1] - f;
        if (hi[j + 1] - f < nmax) nmax = hi[j + 1] - f;
        if (nmin > nmax) continue;
        /* The prefix's kinds change at most PP_LAYER_KINDS times: Q takes those values only. */
        int64_t at[PP_LAYER_KINDS + 1];
        unsigned qm[PP_LAYER_KINDS + 1];
        int nq = 1;
        at[0] = 0, qm[0] = 0;
        unsigned pm = 0;
        for (int64_t n = 1; n <= nmax; n++) {
            unsigned m2 = pm | 1u << c->layer_kind[f + n - 1];
            if (m2 != pm) at[nq] = n, qm[nq] = m2, nq++;
            pm = m2;
            if (n < nmin) continue;
            mx->kinds |= pm;
            for (int q = 0; q < (c->allow_recompute ? nq : 1); q++) {
                unsigned Q = qm[q];
                int64_t r_short = at[q], r_long = q + 1 < nq ? at[q + 1] - 1 : n;
                if (!c->allow_recompute) r_long = 0;
                if (!mx->seen[pm][Q]) {
                    mx->seen[pm][Q] = true;
                    mx->f[pm][Q] = f, mx->n[pm][Q] = n, mx->r[pm][Q] = r_short;
                    mx->f2[pm][Q] = f, mx->n2[pm][Q] = n, mx->r2[pm][Q] = r_long;
                    continue;
                }
                if (n < mx->n[pm][Q]) mx->f[pm][Q] = f, mx->n[pm][Q] = n, mx->r[pm][Q] = r_short;
                if (n > mx->n2[pm][Q] || (n == mx->n2[pm][Q] && r_long > mx->r2[pm][Q]))
                    mx->f2[pm][Q] = f, mx->n2[pm][Q] = n, mx->r2[pm][Q] = r_long;
            }
        }
    }
}

/* Layers and recomputed layers of each kind, and the kind sets, of [first, first + n) with the
 * first r recomputed. */
static void kind_counts(const pp_stages_costs *c, int64_t first, int64_t n, int64_t r,
                        int64_t nk[PP_LAYER_KINDS], int64_t rk[PP_LAYER_KINDS], unsigned *P,
                        unsigned *Q)
{
    memset(nk, 0, sizeof(int64_t) * PP_LAYER_KINDS);
    memset(rk, 0, sizeof(int64_t) * PP_LAYER_KINDS);
    *P = *Q = 0;
    for (int64_t i = first; i < first + n && i < c->layers; i++) {
        int k = c->layer_kind[i];
        nk[k]++;
        *P |= 1u << k;
        if (i < first + r) rk[k]++, *Q |= 1u << k;
    }
}

static bool kind_excluded(const pp_stages_costs *c, int64_t j, int64_t first, int64_t n, int64_t r)
{
    for (int64_t e = 0; e < c->n_excluded; e++)
        if (c->excluded[e][0] == j && c->excluded[e][1] == first && c->excluded[e][2] == n &&
            c->excluded[e][3] == r)
            return true;
    return false;
}

static int32_t *rmin_row(const pp_stages_costs *c, int64_t j)
{
    return c->mem_rmin + (size_t)j * (size_t)(c->layers + 1);
}

/* The by_kind part of pp_stages_costs_validate (the rest is checked already). */
static pp_status costs_kinds_validate(const pp_stages_costs *c, pp_error *err)
{
    int64_t p = c->n_stages;
    if (!c->layer_kind || !c->kind_mem_set_bytes)
        return COSTS_BAD("stage costs by kind: no layer kinds or memory sets "
                         "(pp_stages_costs_kinds_alloc)");
    if (c->layers > KIND_MAX_LAYERS)
        return COSTS_BAD("stage costs by kind: %lld layers, at most %d", (long long)c->layers,
                         KIND_MAX_LAYERS);
    for (int64_t i = 0; i < c->layers; i++)
        if (c->layer_kind[i] < 0 || c->layer_kind[i] >= PP_LAYER_KINDS)
            return COSTS_BAD("stage costs by kind: layer %lld has kind %d (0 to %d)", (long long)i,
                             (int)c->layer_kind[i], PP_LAYER_KINDS - 1);
    for (int64_t e = 0; e < c->n_excluded; e++) {
        const int64_t *x = c->excluded[e];
        if (x[0] < 0 || x[0] >= p || x[1] < 0 || x[2] < 1 || x[1] + x[2] > c->layers || x[3] < 0 ||
            x[3] > x[2])
            return COSTS_BAD("stage costs by kind: excluded configuration %lld is out of range",
                             (long long)e);
    }
    int64_t lo[PP_MAX_STAGES + 1], hi[PP_MAX_STAGES + 1];
    pp_stages_cut_bounds(c, lo, hi);
    kind_mixes *mx = malloc(sizeof *mx);
    if (!mx) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory (stage costs)");
    pp_status st = PP_OK;
    for (int64_t j = 0; j < p && st == PP_OK; j++) {
        if (c->mem_table[j]) {
            st = COSTS_BAD("stage costs by kind: stage %lld is priced by a count table (by kind: "
                           "kind_table)", (long long)j);
            break;
        }
        if (c->kind_table[j] && !c->kind_rmin) {
            st = COSTS_BAD("stage costs by kind: stage %lld is priced by position but there is no "
                           "table", (long long)j);
            break;
        }
        for (int k = 0; k < PP_LAYER_KINDS; k++) {
            const struct { const char *name; double v; bool nonneg; } f[] = {
                {"kind_time_layer_s", c->kind_time_layer_s[j][k], true},
                {"kind_time_recompute_s", c->kind_time_recompute_s[j][k], true},
                {"kind_mem_layer_bytes", c->kind_mem_layer_bytes[j][k], false},
                {"kind_mem_saved_bytes", c->kind_mem_saved_bytes[j][k], false},
            };
            for (size_t a = 0; a < sizeof f / sizeof f[0] && st == PP_OK; a++)
                if (!isfinite(f[a].v) || (f[a].nonneg && f[a].v < 0) || fabs(f[a].v) > 1e18)
                    st = COSTS_BAD("stage costs: stage %lld %s[%d] = %g (must be finite%s)",
                                   (long long)j, f[a].name, k, f[a].v, f[a].nonneg ? " and >= 0" : "");
        }
        /* Every mix the stage can hold needs its S: a missing one would leave it unpriced. */
        if (c->kind_table[j]) continue;
        kind_mixes_find(c, j, lo, hi, mx);
        for (unsigned P = 0; P < PP_STAGES_KIND_SETS && st == PP_OK; P++)
            for (unsigned Q = 0; Q < PP_STAGES_KIND_SETS && st == PP_OK; Q++) {
                double v = c->kind_mem_set_bytes[pp_stages_set_index(j, P, Q)];
                if (mx->seen[P][Q] && (!isfinite(v) || fabs(v) > 1e18))
                    st = COSTS_BAD("stage costs: stage %lld kind_mem_set_bytes for kinds 0x%x "
                                   "(0x%x recomputed) = %g (must be finite)", (long long)j, P, Q, v);
            }
    }
    free(mx);
    return st;
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
    if (c->n_excluded && !c->by_kind)
        return COSTS_BAD("stage costs: excluded configurations are for costs by kind only");
    return c->by_kind ? costs_kinds_validate(c, err) : PP_OK;
}

void pp_stages_costs_eval(const pp_stages_costs *c, int64_t j, int64_t n, int64_t r,
                          double *time_s, double *mem_bytes)
{
    if (c->by_kind) {
        /* No position given: the uniform split's start of stage j. */
        int64_t first = 0;
        for (int64_t a = 0; a < j; a++) first += c->layers / c->n_stages + (a < c->layers % c->n_stages);
        pp_stages_costs_eval_range(c, j, first, n, r, time_s, mem_bytes);
        return;
    }
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

void pp_stages_costs_eval_range(const pp_stages_costs *c, int64_t j, int64_t first, int64_t n,
                                int64_t r, double *time_s, double *mem_bytes)
{
    if (!c->by_kind) {
        pp_stages_costs_eval(c, j, n, r, time_s, mem_bytes);
        return;
    }
    int64_t nk[PP_LAYER_KINDS], rk[PP_LAYER_KINDS];
    unsigned P, Q;
    kind_counts(c, first, n, r, nk, rk, &P, &Q);
    double t = c->time_base_s[j], mem = 0;
    for (int k = 0; k < PP_LAYER_KINDS; k++) {
        t += c->kind_time_layer_s[j][k] * (double)nk[k] + c->kind_time_recompute_s[j][k] * (double)rk[k];
        mem += c->kind_mem_layer_bytes[j][k] * (double)nk[k] - c->kind_mem_saved_bytes[j][k] * (double)rk[k];
    }
    double set = c->kind_mem_set_bytes[pp_stages_set_index(j, P, Q)];
    if (time_s) *time_s = t;
    if (!mem_bytes) return;
    if (c->kind_table[j]) {
        /* no memory figure: the limit when it fits by the table, +inf when not */
        int32_t need = first >= 0 && n >= 0 && first + n <= c->layers
                           ? c->kind_rmin[pp_stages_rmin_index(c, j, first, n)] : -1;
        *mem_bytes = need >= 0 && r >= need && !kind_excluded(c, j, first, n, r)
                         ? c->mem_limit_bytes[j] : INFINITY;
        return;
    }
    *mem_bytes = isfinite(set) && !kind_excluded(c, j, first, n, r) ? mem + set : INFINITY;
}

pp_status pp_stages_costs_tabulate(pp_stages_costs *c, int64_t j, pp_stages_eval_fn eval,
                                   void *ctx, pp_error *err)
{
    if (!c || !eval || j < 0 || j >= c->n_stages || c->layers < 1 || c->layers > 1000000)
        return COSTS_BAD("stage table: bad arguments");
    if (c->by_kind)
        return COSTS_BAD("stage table: costs by kind are priced by position, not by table");
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

pp_status pp_stages_costs_tabulate_range(pp_stages_costs *c, int64_t j,
                                         pp_stages_eval_range_fn eval, void *ctx, pp_error *err)
{
    if (!c || !eval || !c->by_kind || j < 0 || j >= c->n_stages || c->layers < 1 ||
        c->layers > KIND_MAX_LAYERS)
        return COSTS_BAD("stage table by position: bad arguments (costs by kind and an evaluator)");
    size_t cells = pp_stages_rmin_index(c, c->n_stages, 0, 0);
    if ((double)cells > 5e7)
        return COSTS_BAD("stage table: %lld stages x %lld^2 ranges is too large to tabulate",
                         (long long)c->n_stages, (long long)c->layers + 1);
    if (!c->kind_rmin) {
        c->kind_rmin = malloc(sizeof(int32_t) * cells);
        if (!c->kind_rmin) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory (stage table)");
        for (size_t k = 0; k < cells; k++) c->kind_rmin[k] = -1;
    }
    int64_t lo[PP_MAX_STAGES + 1], hi[PP_MAX_STAGES + 1];
    pp_stages_cut_bounds(c, lo, hi);
    double cap = c->mem_limit_bytes[j];
    for (int64_t f = lo[j]; f <= hi[j]; f++)
        for (int64_t n = c->layers_min[j]; n <= c->layers_max[j]; n++) {
            if (f + n < lo[j + 1] || f + n > hi[j + 1]) continue;
            int32_t *at = &c->kind_rmin[pp_stages_rmin_index(c, j, f, n)];
            *at = -1;
            for (int64_t r = 0; r <= (c->allow_recompute ? n : 0); r++) {
                double t, mem;
                pp_status st = eval(ctx, j, f, n, r, &t, &mem);
                if (st != PP_OK)
                    return pp_error_set(err, st, NULL, 0, 0, "stage table: stage %lld, layers "
                                        "%lld..%lld, %lld recomputed: evaluation failed",
                                        (long long)j, (long long)f, (long long)(f + n - 1), (long long)r);
                if (mem <= cap) {
                    *at = (int32_t)r;
                    break;
                }
            }
        }
    c->kind_table[j] = true;
    return PP_OK;
}

/* Fill out's per-stage figures for the split (n, r) under the costs. */
static void result_fill(const pp_stages_costs *c, const int64_t *n, const int64_t *r,
                        pp_stages_result *out)
{
    double tmax = 0, tsum = 0;
    bool fits = true;
    out->n_stages = c->n_stages;
    int64_t first = 0;
    for (int64_t j = 0; j < c->n_stages; j++) {
        double t, mem;
        pp_stages_costs_eval_range(c, j, first, n[j], r[j], &t, &mem);
        first += n[j];
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

/* ------------------------------------------------------------------ the cut formulation (by kind) */

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
                    if (c->n_excluded && kind_excluded(c, j, f, n, r)) continue;
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
    qsort(ts, k, sizeof ts[0], cmp_double);
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

/* Columns of the cut MILP (1-based; 0: the variable is fixed, see kind_u / kind_v). */
typedef struct {
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
    kind_mixes *mx = malloc(sizeof *mx);
    lrow row = {0}, sum = {0};
    glp_prob *P = glp_create_prob();
    if (!x->u || !x->v || !mx || !P) goto fail;
    glp_set_prob_name(P, "parplan_stages_by_kind");
    glp_set_obj_name(P, "pipeline_ms");
    glp_set_obj_dir(P, GLP_MIN);
    char name[48];

    /* Columns: T, one, U, V, pres, rcp. */
    double t_star = h->table ? h->t_star_ms * (1 - 1e-9) : 0.0;
    x->col_T = col_add(P, "T", -1, GLP_CV, GLP_LO, t_star, 0.0, c->obj_max_weight);
    int col_one = col_add(P, "one", -1, GLP_CV, GLP_FX, 1.0, 1.0, 0.0);
    x->col_one = col_one;
    for (int64_t j = 1; j < p; j++)
        for (int64_t i = h->lo[j]; i < h->hi[j]; i++) {
            snprintf(name, sizeof name, "u_%lld_%lld", (long long)j, (long long)i);
            x->u[j * L + i] = col_add(P, name, -1, GLP_BV, 0, 0.0, 1.0, 0.0);
        }
    for (int64_t j = 0; j < p && x->rc; j++)
        for (int64_t i = h->lo[j]; i < h->hi[j + 1]; i++) {
            snprintf(name, sizeof name, "v_%lld_%lld", (long long)j, (long long)i);
            x->v[j * L + i] = col_add(P, name, -1, GLP_BV, 0, 0.0, 1.0, 0.0);
        }
    for (int64_t j = 0; j < p; j++) {
        unsigned may = 0, sure = 0; /* kinds that may / must sit on stage j */
        for (int64_t i = h->lo[j]; i < h->hi[j + 1]; i++) may |= 1u << kd[i];
        for (int64_t i = h->hi[j]; i < h->lo[j + 1]; i++) sure |= 1u << kd[i];
        for (int k = 0; k < PP_LAYER_KINDS && !c->kind_table[j]; k++) {
            x->pres_fix[j][k] = sure >> k & 1u;
            if ((may >> k & 1u) && !(sure >> k & 1u)) {
                snprintf(name, sizeof name, "pres_%lld_%d", (long long)j, k);
                x->pres[j][k] = col_add(P, name, -1, GLP_CV, GLP_DB, 0.0, 1.0, 0.0);
            }
            if (x->rc && (may >> k & 1u)) {
                snprintf(name, sizeof name, "rcp_%lld_%d", (long long)j, k);
                x->rcp[j][k] = col_add(P, name, -1, GLP_CV, GLP_DB, 0.0, 1.0, 0.0);
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
        kind_mixes_find(c, j, h->lo, h->hi, mx);
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

static void kind_index_free(kind_index *x)
{
    if (!x) return;
    free(x->u);
    free(x->v);
    free(x);
}

/* The incumbent's column values: the DP's split. */
static void kind_incumbent_fill(const pp_stages_costs *c, const kind_hint *h, const kind_index *x,
                                incumbent *inc)
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

/* The split of GLPK's integer solution. */
static void kind_extract(const pp_stages_costs *c, glp_prob *P, const kind_index *x, int64_t *n,
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

pp_status pp_stages_dump_lp_costs(const pp_stages_costs *c, const char *path, pp_error *err)
{
    pp_status st = pp_stages_costs_validate(c, err);
    if (st != PP_OK) return st;
    if (!path || !path[0]) return COSTS_BAD("--dump-ilp needs a file name");
    int term = glp_term_out(GLP_OFF); /* glp_write_lp prints "Writing problem data..." */
    milp_index ix;
    glp_prob *P = NULL;
    if (c->by_kind) {
        kind_hint *kh = malloc(sizeof *kh);
        kind_index *kx = calloc(1, sizeof *kx);
        if (kh && kx && kind_hint_get(c, kh)) P = kind_build(c, kh, kx);
        free(kh);
        kind_index_free(kx);
    } else {
        split_hint *hint = malloc(sizeof *hint);
        if (hint) split_bound(c, hint);
        P = milp_build(c, hint, &ix);
        free(hint);
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
    split_hint *hint = NULL;
    kind_hint *kh = NULL;   /* by_kind: the DP over cut positions */
    kind_index *kx = NULL;
    glp_prob *P = NULL;
    bool none_fits = false; /* by_kind: the DP proved that no split fits by the rows */
    if (c->by_kind) {
        kh = malloc(sizeof *kh);
        kx = calloc(1, sizeof *kx);
        if (kh && kx && params->milp_only) {
            memset(kh, 0, sizeof *kh); /* the bounds' cut ranges, no DP */
            pp_stages_cut_bounds(c, kh->lo, kh->hi);
            P = kind_build(c, kh, kx);
        } else if (kh && kx && kind_hint_get(c, kh)) {
            none_fits = !kh->any;
            if (!none_fits) P = kind_build(c, kh, kx);
        }
    } else {
        hint = malloc(sizeof *hint);
        if (hint) split_bound(c, hint);
        P = hint ? milp_build(c, hint, &ix) : NULL;
    }
    if (!P && !none_fits) {
        free(hint);
        free(kh);
        kind_index_free(kx);
        glp_term_out(term);
        return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory building the stage MILP");
    }
    /* The incumbent: the greedy split at T* (split_bound; by_kind the DP's best split), handed
     * to GLPK at its first heuristic call so that the search starts with a bound to prune
     * against. The callback needs the original problem's columns, so the MIP presolver is off
     * and the LP relaxation is solved first by the simplex method (its own presolver on). */
    incumbent inc;
    memset(&inc, 0, sizeof inc);
    if (P) inc.x = calloc((size_t)glp_get_num_cols(P) + 1, sizeof(double));
    if (inc.x && c->by_kind) kind_incumbent_fill(c, kh, kx, &inc);
    else if (inc.x) incumbent_fill(c, hint, P, &ix, &inc);
    free(hint);
    free(kh);
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.presolve = GLP_ON;
    sm.tm_lim = params->time_limit_ms;
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
    bool optimal = ret == 0 && mst == GLP_OPT;
    if (optimal && c->by_kind) {
        kind_extract(c, P, kx, n, r);
    } else if (optimal) {
        for (int64_t j = 0; j < c->n_stages; j++) {
            n[j] = llround(glp_mip_col_val(P, ix.col_n[j]));
            r[j] = llround(glp_mip_col_val(P, ix.col_r[j]));
        }
    }
    kind_index_free(kx);
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
/* Whether the model needs the cut formulation: decoder layers of more than one kind, or MTP
 * layers (their cost sits on the last stage, and the count formulation's models do not see
 * them). A model of one kind without MTP keeps the count formulation, unchanged. */
static bool model_by_kind(const pp_model *m)
{
    int64_t counts[PP_LAYER_KINDS];
    pp_model_layer_counts(m, 0, m->layers, counts);
    int kinds = 0;
    for (int k = 0; k < PP_LAYER_KINDS; k++) kinds += counts[k] > 0;
    return kinds > 1 || m->mtp_layers > 0;
}

/* Per-micro-batch time of one layer of each kind (fwd + bwd, with selective recompute when the
 * layout asks for it) and of its recompute (one more forward): time.c's stage_eval per kind,
 * from pp_time_layer_get's per-kind terms (0 for kinds the model does not have). */
static void time_kinds_get(const pp_work *w, const pp_layout *l, double layer_s[PP_LAYER_KINDS],
                           double recompute_s[PP_LAYER_KINDS])
{
    pp_time_ctx tc;
    pp_time_ctx_init(&tc, w, NULL);
    pp_time_layer ly;
    pp_time_layer_get(&tc, l, &ly);
    for (int k = 0; k < PP_LAYER_KINDS; k++) {
        layer_s[k] = recompute_s[k] = 0;
        if (!(ly.kinds_present & (1u << k))) continue;
        pp_time_terms y;
        pp_time_layer_terms(&ly, k, &y);
        double fwd = y.fwd_compute_s + y.fwd_tp_s + y.fwd_cp_s + y.fwd_ep_s;
        double bwd = y.bwd_compute_s + y.bwd_tp_s + y.bwd_cp_s + y.bwd_ep_s +
                     (l->recompute == PP_RC_SELECTIVE ? y.sel_recompute_s : 0);
        layer_s[k] = fwd + bwd;
        recompute_s[k] = fwd;
    }
}

/* The by_kind time side: each layer's kind, per-kind layer and recompute times on every stage,
 * and on the last stage the MTP layers (never recomputed: Megatron's recompute covers the
 * decoder block) with one more pass through the shared output layer and loss each (time.c's
 * stage_eval). */
static pp_status costs_time_kinds(const pp_work *w, const pp_layout *l, pp_stages_costs *c,
                                  pp_error *err)
{
    const pp_model *m = &w->model;
    pp_status st = pp_stages_costs_kinds_alloc(c, err);
    if (st != PP_OK) return st;
    for (int64_t i = 0; i < c->layers; i++) c->layer_kind[i] = (int8_t)pp_model_layer_kind(m, i);
    double kt[PP_LAYER_KINDS], kr[PP_LAYER_KINDS];
    time_kinds_get(w, l, kt, kr);
    for (int k = 0; k < PP_LAYER_KINDS; k++)
        if (!isfinite(kt[k]) || kt[k] < 0 || !isfinite(kr[k]) || kr[k] < 0)
            return pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0, "the time model gave a bad "
                                "per-micro-batch time for layers of kind %s (%g, %g)",
                                pp_layer_kind_names[k], kt[k], kr[k]);
    for (int64_t j = 0; j < c->n_stages; j++)
        for (int k = 0; k < PP_LAYER_KINDS; k++) {
            c->kind_time_layer_s[j][k] = kt[k];
            c->kind_time_recompute_s[j][k] = kr[k];
        }
    if (m->mtp_layers > 0) {
        pp_time_parts tp;
        pp_time_parts_get(w, l, &tp);
        double mtp = (double)m->mtp_layers;
        c->time_base_s[c->n_stages - 1] +=
            mtp * (kt[pp_model_mtp_kind(m)] + tp.output_fwd_s + tp.output_bwd_s);
    }
    return PP_OK;
}

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
    return model_by_kind(&w->model) ? costs_time_kinds(w, l, c, err) : PP_OK;
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

/* The same for the stage holding decoder layers [first, first + n) (pp_memory_stage_range). */
static double stage_mem_at(const pp_work *w, const pp_layout *l, int64_t j, int64_t first,
                           int64_t n, int64_t r)
{
    pp_mem_stage ms;
    memset(&ms, 0, sizeof ms);
    pp_memory_stage_range(w, l, j, first, n, r, &ms);
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
    time_kinds_get(w, &lu, ctx->kind_time_layer_s, ctx->kind_time_recompute_s);
    pp_stages_costs_free(c);
    free(c);
}

pp_status pp_stages_eval_model_range(void *vctx, int64_t stage, int64_t first, int64_t layers,
                                     int64_t recompute, double *time_s, double *mem_bytes)
{
    const pp_stages_model_ctx *ctx = vctx;
    if (!ctx || !ctx->w || !ctx->l || stage < 0 || stage >= ctx->l->pp || layers < 0 ||
        recompute < 0 || recompute > layers || first < 0 || first + layers > ctx->w->model.layers)
        return PP_ERR_INPUT;
    if (time_s) {
        int64_t n[PP_LAYER_KINDS], r[PP_LAYER_KINDS];
        pp_model_layer_counts(&ctx->w->model, first, layers, n);
        pp_model_layer_counts(&ctx->w->model, first, recompute, r);
        double t = ctx->time_base_s[stage];
        for (int k = 0; k < PP_LAYER_KINDS; k++)
            t += ctx->kind_time_layer_s[k] * (double)n[k] + ctx->kind_time_recompute_s[k] * (double)r[k];
        *time_s = t;
    }
    if (mem_bytes) *mem_bytes = stage_mem_at(ctx->w, ctx->l, stage, first, layers, recompute);
    return PP_OK;
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

/* Stage j's memory by the costs against the memory model at [f, f + n) with r recomputed;
 * false (and why) when they differ beyond rounding. */
static bool kind_fit_check(const pp_work *w, const pp_layout *l, const pp_stages_costs *c,
                           int64_t j, int64_t f, int64_t n, int64_t r, char *why, size_t why_n)
{
    double got = stage_mem_at(w, l, j, f, n, r), lin;
    pp_stages_costs_eval_range(c, j, f, n, r, NULL, &lin);
    if (isfinite(got) && fabs(got - lin) <= 1e-9 * fabs(got) + 1.0) return true;
    if (why && why_n)
        snprintf(why, why_n, "stage %lld: the memory model is not of the per-kind form (layers "
                 "%lld..%lld, %lld recomputed: %.6g GB, the fit says %.6g GB); priced by position",
                 (long long)j, (long long)f, (long long)(f + n - 1), (long long)r, got / 1e9,
                 lin / 1e9);
    return false;
}

/* The by_kind memory side, per stage j, from pp_memory_stage_range:
 *   slope of kind k: the memory of [i1, i2] less that of [i1, i2) with i1 < i2 the kind's first
 *     two layers (the added layer changes no kind set); 0 for a kind with one layer, whose count
 *     is then its presence, folded into S;
 *   saved per recomputed layer of kind k: [i1, i2] with i2 - i1 recomputed less with one more;
 *   S_j(P, Q): the memory of the shortest range holding the mix less the slopes' part;
 * then checked at the longest range of each mix and at every start with the least, middle and
 * most layers and 0, 1, half and all recomputed. The memory model is of this form when its
 * only non-linear terms are max() terms over the kinds present and recomputed (memory.c's
 * transient working sets); FSDP's or Megatron-local's foreach Adam adds a max() with the
 * activations, which it is not: such a stage is priced by position instead (kind_table, from
 * the memory model at every range; kind_fit_check names the first). */
static pp_status costs_mem_kinds(const pp_work *w, const pp_layout *l, pp_stages_costs *c,
                                 double cap, bool *linear, char *why, size_t why_n, pp_error *err)
{
    int64_t p = c->n_stages, L = c->layers;
    int64_t lo[PP_MAX_STAGES + 1], hi[PP_MAX_STAGES + 1];
    pp_stages_cut_bounds(c, lo, hi);
    int64_t i1[PP_LAYER_KINDS], i2[PP_LAYER_KINDS];
    for (int k = 0; k < PP_LAYER_KINDS; k++) i1[k] = i2[k] = -1;
    for (int64_t i = 0; i < L; i++) {
        int k = c->layer_kind[i];
        if (i1[k] < 0) i1[k] = i;
        else if (i2[k] < 0) i2[k] = i;
    }
    kind_mixes *mx = malloc(sizeof *mx);
    if (!mx) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory (stage costs)");
    pp_stages_model_ctx ctx;
    pp_stages_model_ctx_init(&ctx, w, l);
    bool fit_all = true;
    for (int64_t j = 0; j < p; j++) {
        c->mem_limit_bytes[j] = cap;
        for (int k = 0; k < PP_LAYER_KINDS; k++) {
            c->kind_mem_layer_bytes[j][k] = c->kind_mem_saved_bytes[j][k] = 0;
            if (i2[k] < 0) continue;
            int64_t n = i2[k] - i1[k];
            c->kind_mem_layer_bytes[j][k] =
                stage_mem_at(w, l, j, i1[k], n + 1, 0) - stage_mem_at(w, l, j, i1[k], n, 0);
            if (c->allow_recompute)
                c->kind_mem_saved_bytes[j][k] = stage_mem_at(w, l, j, i1[k], n + 1, n) -
                                                stage_mem_at(w, l, j, i1[k], n + 1, n + 1);
        }
        kind_mixes_find(c, j, lo, hi, mx);
        for (unsigned P = 0; P < PP_STAGES_KIND_SETS; P++)
            for (unsigned Q = 0; Q < PP_STAGES_KIND_SETS; Q++) {
                if (!mx->seen[P][Q]) continue;
                int64_t f = mx->f[P][Q], n = mx->n[P][Q], r = mx->r[P][Q];
                int64_t nk[PP_LAYER_KINDS], rk[PP_LAYER_KINDS];
                unsigned P2, Q2;
                kind_counts(c, f, n, r, nk, rk, &P2, &Q2);
                double part = 0;
                for (int k = 0; k < PP_LAYER_KINDS; k++)
                    part += c->kind_mem_layer_bytes[j][k] * (double)nk[k] -
                            c->kind_mem_saved_bytes[j][k] * (double)rk[k];
                c->kind_mem_set_bytes[pp_stages_set_index(j, P, Q)] = stage_mem_at(w, l, j, f, n, r) - part;
            }
        /* The check. */
        char w1[256] = "";
        bool fit = true;
        for (unsigned P = 0; P < PP_STAGES_KIND_SETS && fit; P++)
            for (unsigned Q = 0; Q < PP_STAGES_KIND_SETS && fit; Q++)
                if (mx->seen[P][Q])
                    fit = kind_fit_check(w, l, c, j, mx->f2[P][Q], mx->n2[P][Q], mx->r2[P][Q], w1,
                                         sizeof w1);
        for (int64_t f = lo[j]; f <= hi[j] && fit; f++) {
            int64_t nmin = c->layers_min[j], nmax = c->layers_max[j];
            if (lo[j + 1] - f > nmin) nmin = lo[j + 1] - f;
            if (hi[j + 1] - f < nmax) nmax = hi[j + 1] - f;
            if (nmin > nmax) continue;
            int64_t ns[3] = {nmin, nmin + (nmax - nmin) / 2, nmax};
            for (int a = 0; a < 3 && fit; a++) {
                int64_t n = ns[a], rs[4] = {0, 1, n / 2, n};
                for (int b = 0; b < (c->allow_recompute ? 4 : 1) && fit; b++)
                    if (rs[b] <= n) fit = kind_fit_check(w, l, c, j, f, n, rs[b], w1, sizeof w1);
            }
        }
        if (!fit && fit_all && why && why_n) snprintf(why, why_n, "%s", w1);
        fit_all = fit_all && fit;
        if (!fit) {
            pp_status st = pp_stages_costs_tabulate_range(c, j, pp_stages_eval_model_range, &ctx, err);
            if (st != PP_OK) {
                free(mx);
                return st;
            }
        }
    }
    free(mx);
    if (linear) *linear = fit_all;
    return PP_OK;
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
    if (c->by_kind) return costs_mem_kinds(w, &lu, c, cap, linear, why, why_n, err);
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
            out->stage_mem_bytes[j] = stage_mem_at(w, &lu, j, first, out->stage_layers[j],
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
                out->stage_mem_bytes[j] = stage_mem_at(w, &lu, j, first, out->stage_layers[j],
                                                       out->stage_recompute[j]);
            break;
        }
        st = pp_stages_costs_tabulate(c, bad, pp_stages_eval_model, &ctx, err);
    }
    if (st == PP_OK && out->status != PP_STAGES_OPTIMAL) {
        /* Uniform or fallback: the memory model's figures for the uniform split. */
        bool fits = true;
        for (int64_t j = 0, first = 0; j < c->n_stages; first += out->stage_layers[j], j++) {
            out->stage_mem_bytes[j] = stage_mem_at(w, &lu, j, first, out->stage_layers[j],
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
    if (costs_time_fill(w, &lu, c, NULL) != PP_OK) {
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
