/* Brute-force references for the stage MILP tests (brute.h): enumerate every split and every
 * recompute count, price each stage by the costs or by an evaluator (the models), keep the
 * best that fits. Exponential: the tests keep their instances small (max_points). */
#include "brute.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stages_cuts.h"

/* The uniform split's counts (pp_stages_uniform's), reported when nothing fits. */
static void uniform_counts(const pp_stages_costs *c, int64_t *n, int64_t *r)
{
    pp_stages_result u;
    pp_stages_uniform(c, &u);
    for (int64_t j = 0; j < c->n_stages; j++) n[j] = u.stage_layers[j], r[j] = u.stage_recompute[j];
}

/* out (zeroed) from the split (n, r) with its stage times and memory: the evaluator's figures,
 * not the linear costs'. */
static void brute_result(const pp_stages_costs *c, const int64_t *n, const int64_t *r,
                         const double *t, const double *mem, bool found, pp_stages_result *out)
{
    double tmax = 0, tsum = 0;
    bool fits = true;
    out->n_stages = c->n_stages;
    for (int64_t j = 0; j < c->n_stages; j++) {
        out->stage_layers[j] = (int)n[j];
        out->stage_recompute[j] = (int)r[j];
        out->stage_time_s[j] = t[j];
        out->stage_mem_bytes[j] = mem[j];
        if (t[j] > tmax) tmax = t[j];
        tsum += t[j];
        if (mem[j] > c->mem_limit_bytes[j]) fits = false;
    }
    out->max_stage_time_s = tmax;
    out->pipeline_time_s = c->obj_max_weight * tmax + c->obj_sum_weight * tsum;
    out->fits = fits;
    out->status = found ? PP_STAGES_OPTIMAL : PP_STAGES_FALLBACK;
    if (!found) snprintf(out->warning, sizeof out->warning, "brute force: no split fits");
}

/* The split being enumerated and the best that fits (first found on ties). */
typedef struct {
    int64_t n[PP_MAX_STAGES], r[PP_MAX_STAGES];
    int64_t best_n[PP_MAX_STAGES], best_r[PP_MAX_STAGES];
    double best;
    bool found;
    int64_t evaluated;
} brute_track;

static void brute_leaf(brute_track *b, const pp_stages_costs *c, double tmax, double tsum, bool fits)
{
    b->evaluated++;
    double obj = c->obj_max_weight * tmax + c->obj_sum_weight * tsum;
    if (fits && (!b->found || obj < b->best)) {
        b->found = true;
        b->best = obj;
        memcpy(b->best_n, b->n, sizeof(int64_t) * (size_t)c->n_stages);
        memcpy(b->best_r, b->r, sizeof(int64_t) * (size_t)c->n_stages);
    }
}

typedef struct {
    const pp_stages_costs *c;
    const double *tab_t, *tab_m; /* [j][n][r], (hi+1)^2 per stage */
    int64_t stride;              /* (hmax + 1) */
    brute_track tr;
    int64_t suffix_lo[PP_MAX_STAGES + 1], suffix_hi[PP_MAX_STAGES + 1];
} brute_state;

static void brute_rec(brute_state *b, int64_t j, int64_t left, double tmax, double tsum, bool fits)
{
    const pp_stages_costs *c = b->c;
    if (j == c->n_stages) {
        brute_leaf(&b->tr, c, tmax, tsum, fits);
        return;
    }
    for (int64_t n = c->layers_min[j]; n <= c->layers_max[j]; n++) {
        int64_t rest = left - n;
        if (rest < b->suffix_lo[j + 1] || rest > b->suffix_hi[j + 1]) continue;
        int64_t rmax = c->allow_recompute ? n : 0;
        for (int64_t r = 0; r <= rmax; r++) {
            size_t k = (size_t)((j * b->stride + n) * b->stride + r);
            double t = b->tab_t[k], mem = b->tab_m[k];
            b->tr.n[j] = n;
            b->tr.r[j] = r;
            brute_rec(b, j + 1, rest, t > tmax ? t : tmax, tsum + t,
                      fits && mem <= c->mem_limit_bytes[j]);
        }
    }
}

pp_status brute_stages(const pp_stages_costs *c, pp_stages_eval_fn eval, void *ctx,
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
        st = pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "brute force over %.3g points exceeds "
                          "the limit %lld", points, (long long)max_points);
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
    if (evaluated) *evaluated = b->tr.evaluated;

    memset(out, 0, sizeof *out);
    int64_t un[PP_MAX_STAGES], ur[PP_MAX_STAGES];
    uniform_counts(c, un, ur);
    /* The figures come from the tables (eval's), not from the linear costs. */
    const int64_t *fn = b->tr.found ? b->tr.best_n : un, *fr = b->tr.found ? b->tr.best_r : ur;
    double t[PP_MAX_STAGES], mem[PP_MAX_STAGES];
    for (int64_t j = 0; j < p; j++) {
        if (fr[j] <= (c->allow_recompute ? fn[j] : 0) && fn[j] >= c->layers_min[j] &&
            fn[j] <= c->layers_max[j]) {
            size_t k = (size_t)((j * stride + fn[j]) * stride + fr[j]);
            t[j] = tab_t[k], mem[j] = tab_m[k];
        } else if (eval) {
            st = eval(ctx, j, fn[j], fr[j], &t[j], &mem[j]);
            if (st != PP_OK) goto done;
        } else {
            pp_stages_costs_eval(c, j, fn[j], fr[j], &t[j], &mem[j]);
        }
    }
    brute_result(c, fn, fr, t, mem, b->tr.found, out);
done:
    free(ways);
    free(tab_t);
    free(tab_m);
    free(b);
    return st;
}

/* The positional reference: stage j starts where stage j-1 ends, so its cost is looked up by
 * (j, first layer, layers, recompute). */
typedef struct {
    const pp_stages_costs *c;
    int64_t lo[PP_MAX_STAGES + 1], hi[PP_MAX_STAGES + 1]; /* cut ranges */
    size_t off[PP_MAX_STAGES + 1];
    const double *tab_t, *tab_m;
    brute_track tr;
} brute_range_state;

/* Index of (j, f, n, r): stage j's block holds (f - lo_j) x (n - min_j) x (r in 0..max_j). */
static size_t brute_range_at(const brute_range_state *b, int64_t j, int64_t f, int64_t n, int64_t r)
{
    const pp_stages_costs *c = b->c;
    size_t cnt = (size_t)(c->layers_max[j] - c->layers_min[j] + 1), rs = (size_t)(c->layers_max[j] + 1);
    return b->off[j] + ((size_t)(f - b->lo[j]) * cnt + (size_t)(n - c->layers_min[j])) * rs + (size_t)r;
}

static void brute_range_rec(brute_range_state *b, int64_t j, int64_t f, double tmax, double tsum,
                            bool fits)
{
    const pp_stages_costs *c = b->c;
    if (j == c->n_stages) {
        brute_leaf(&b->tr, c, tmax, tsum, fits);
        return;
    }
    for (int64_t n = c->layers_min[j]; n <= c->layers_max[j]; n++) {
        if (f + n < b->lo[j + 1] || f + n > b->hi[j + 1]) continue;
        for (int64_t r = 0; r <= (c->allow_recompute ? n : 0); r++) {
            size_t k = brute_range_at(b, j, f, n, r);
            double t = b->tab_t[k], mem = b->tab_m[k];
            b->tr.n[j] = n;
            b->tr.r[j] = r;
            brute_range_rec(b, j + 1, f + n, t > tmax ? t : tmax, tsum + t,
                            fits && mem <= c->mem_limit_bytes[j]);
        }
    }
}

pp_status brute_stages_range(const pp_stages_costs *c, pp_stages_eval_range_fn eval, void *ctx,
                             int64_t max_points, pp_stages_result *out, int64_t *evaluated,
                             pp_error *err)
{
    pp_status st = pp_stages_costs_validate(c, err);
    if (st != PP_OK) return st;
    int64_t p = c->n_stages, L = c->layers, L1 = L + 1;
    brute_range_state *b = calloc(1, sizeof *b);
    double *ways = calloc((size_t)(p + 1) * (size_t)L1, sizeof(double));
    double *tab_t = NULL, *tab_m = NULL;
    if (!b || !ways) {
        st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory (brute force)");
        goto done;
    }
    b->c = c;
    pp_stages_cut_bounds(c, b->lo, b->hi);
    /* Count the points first: ways[j][f] = (n, r) choices for stages j.. starting at layer f. */
    ways[p * L1 + L] = 1;
    for (int64_t j = p - 1; j >= 0; j--)
        for (int64_t f = b->lo[j]; f <= b->hi[j]; f++) {
            double s = 0;
            for (int64_t n = c->layers_min[j]; n <= c->layers_max[j]; n++)
                if (f + n >= b->lo[j + 1] && f + n <= b->hi[j + 1])
                    s += (double)(c->allow_recompute ? n + 1 : 1) * ways[(j + 1) * L1 + f + n];
            ways[j * L1 + f] = s;
        }
    if (ways[0] > (double)max_points) {
        st = pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "brute force over %.3g points exceeds "
                          "the limit %lld", ways[0], (long long)max_points);
        goto done;
    }
    size_t cells = 0;
    for (int64_t j = 0; j < p; j++) {
        b->off[j] = cells;
        cells += (size_t)(b->hi[j] - b->lo[j] + 1) *
                 (size_t)(c->layers_max[j] - c->layers_min[j] + 1) * (size_t)(c->layers_max[j] + 1);
    }
    b->off[p] = cells;
    tab_t = malloc(sizeof(double) * (cells ? cells : 1));
    tab_m = malloc(sizeof(double) * (cells ? cells : 1));
    if (!tab_t || !tab_m) {
        st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory (brute force)");
        goto done;
    }
    for (int64_t j = 0; j < p; j++)
        for (int64_t f = b->lo[j]; f <= b->hi[j]; f++)
            for (int64_t n = c->layers_min[j]; n <= c->layers_max[j]; n++) {
                if (f + n < b->lo[j + 1] || f + n > b->hi[j + 1] || !(ways[j * L1 + f] > 0))
                    continue;
                for (int64_t r = 0; r <= (c->allow_recompute ? n : 0); r++) {
                    size_t k = brute_range_at(b, j, f, n, r);
                    if (!eval) {
                        pp_stages_costs_eval_range(c, j, f, n, r, &tab_t[k], &tab_m[k]);
                        continue;
                    }
                    st = eval(ctx, j, f, n, r, &tab_t[k], &tab_m[k]);
                    if (st != PP_OK) {
                        pp_error_set(err, st, NULL, 0, 0, "brute force: stage %lld, layers %lld.."
                                     "%lld, %lld recomputed: evaluation failed", (long long)j,
                                     (long long)f, (long long)(f + n - 1), (long long)r);
                        goto done;
                    }
                }
            }
    b->tab_t = tab_t;
    b->tab_m = tab_m;
    brute_range_rec(b, 0, 0, 0.0, 0.0, true);
    if (evaluated) *evaluated = b->tr.evaluated;

    memset(out, 0, sizeof *out);
    int64_t un[PP_MAX_STAGES], ur[PP_MAX_STAGES];
    uniform_counts(c, un, ur);
    const int64_t *fn = b->tr.found ? b->tr.best_n : un, *fr = b->tr.found ? b->tr.best_r : ur;
    double t[PP_MAX_STAGES], mem[PP_MAX_STAGES];
    for (int64_t j = 0, f = 0; j < p; f += fn[j], j++) {
        if (eval) st = eval(ctx, j, f, fn[j], fr[j], &t[j], &mem[j]);
        else pp_stages_costs_eval_range(c, j, f, fn[j], fr[j], &t[j], &mem[j]);
        if (st != PP_OK) goto done;
    }
    brute_result(c, fn, fr, t, mem, b->tr.found, out);
done:
    free(ways);
    free(tab_t);
    free(tab_m);
    free(b);
    return st;
}

