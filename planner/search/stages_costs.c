/* The cost tables of the stage MILP (pp_stages_costs, pp_stages.h): their validation, the
 * time and memory of a stage under them (by count, or by position for layers of several
 * kinds), pricing a stage by table (by count, or by position), and the uniform split. No GLPK
 * here: the MILPs that read these tables are in stages_milp.c and stages_kinds.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stages_internal.h"

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

void pp_stages_kind_mixes_find(const pp_stages_costs *c, int64_t j, const int64_t *lo,
                               const int64_t *hi, pp_stages_kind_mixes *mx)
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

void pp_stages_kind_counts(const pp_stages_costs *c, int64_t first, int64_t n, int64_t r,
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

bool pp_stages_kind_excluded(const pp_stages_costs *c, int64_t j, int64_t first, int64_t n,
                             int64_t r)
{
    for (int64_t e = 0; e < c->n_excluded; e++)
        if (c->excluded[e][0] == j && c->excluded[e][1] == first && c->excluded[e][2] == n &&
            c->excluded[e][3] == r)
            return true;
    return false;
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
    pp_stages_kind_mixes *mx = malloc(sizeof *mx);
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
        pp_stages_kind_mixes_find(c, j, lo, hi, mx);
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
        int32_t need = n >= 0 && n <= c->layers ? pp_stages_rmin_row(c, j)[n] : -1;
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
    pp_stages_kind_counts(c, first, n, r, nk, rk, &P, &Q);
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
        *mem_bytes = need >= 0 && r >= need && !pp_stages_kind_excluded(c, j, first, n, r)
                         ? c->mem_limit_bytes[j] : INFINITY;
        return;
    }
    *mem_bytes = isfinite(set) && !pp_stages_kind_excluded(c, j, first, n, r) ? mem + set : INFINITY;
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
    int32_t *row = pp_stages_rmin_row(c, j);
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

void pp_stages_result_fill(const pp_stages_costs *c, const int64_t *n, const int64_t *r,
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

void pp_stages_uniform_split(const pp_stages_costs *c, int64_t *n, int64_t *r)
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
    pp_stages_uniform_split(c, n, r);
    pp_stages_result_fill(c, n, r, out);
}

