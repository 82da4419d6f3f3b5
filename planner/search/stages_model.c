/* The stage MILP's cost tables from parplan's own models: times from the time model
 * (pp_time_parts_get, per kind pp_time_layer_get), memory fitted per stage from the memory model
 * (pp_memory_stage, pp_memory_stage_range) and checked against it, a stage where the fit fails
 * priced by table instead; and the evaluators that run the models for one stage. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_memory.h"
#include "pp_time.h"
#include "stages_internal.h"

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
        recompute_s[k] = fwd - y.recompute_less_s;
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

/* The time side of the costs, from pp_time_parts_get: per micro-batch, a layer costs forward +
 * backward (TP collectives included, selective recompute inside the backward when the layout
 * asks for it), a fully recomputed layer one more forward; the first stage adds the embedding,
 * the last the output layer + loss; every stage of a pipeline pays 2 p2p exchanges per
 * micro-batch (activations forward, gradients backward), as time.c's pp_time_step does, so that
 * the objective is its pipeline term exactly:
 *   1F1B:        (m - 1) (max_j t_j + 2 p2p) + sum_j (t_j + 2 p2p)
 *   interleaved: m (max_j t_j + 2 p2p) + (p - 1) / v (mean_j t_j + 2 p2p)  (SC'21 sec. 2.2.2). */
pp_status pp_stages_costs_time_fill(const pp_work *w, const pp_layout *l, pp_stages_costs *c,
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

double pp_stages_mem_at(const pp_work *w, const pp_layout *l, int64_t j, int64_t first,
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
    if (c && pp_stages_costs_time_fill(w, &lu, c, NULL) == PP_OK) {
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
    if (mem_bytes) *mem_bytes = pp_stages_mem_at(ctx->w, ctx->l, stage, first, layers, recompute);
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
    double got = pp_stages_mem_at(w, l, j, f, n, r), lin;
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
    pp_stages_kind_mixes *mx = malloc(sizeof *mx);
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
                pp_stages_mem_at(w, l, j, i1[k], n + 1, 0) - pp_stages_mem_at(w, l, j, i1[k], n, 0);
            if (c->allow_recompute)
                c->kind_mem_saved_bytes[j][k] = pp_stages_mem_at(w, l, j, i1[k], n + 1, n) -
                                                pp_stages_mem_at(w, l, j, i1[k], n + 1, n + 1);
        }
        pp_stages_kind_mixes_find(c, j, lo, hi, mx);
        for (unsigned P = 0; P < PP_STAGES_KIND_SETS; P++)
            for (unsigned Q = 0; Q < PP_STAGES_KIND_SETS; Q++) {
                if (!mx->seen[P][Q]) continue;
                int64_t f = mx->f[P][Q], n = mx->n[P][Q], r = mx->r[P][Q];
                int64_t nk[PP_LAYER_KINDS], rk[PP_LAYER_KINDS];
                unsigned P2, Q2;
                pp_stages_kind_counts(c, f, n, r, nk, rk, &P2, &Q2);
                double part = 0;
                for (int k = 0; k < PP_LAYER_KINDS; k++)
                    part += c->kind_mem_layer_bytes[j][k] * (double)nk[k] -
                            c->kind_mem_saved_bytes[j][k] * (double)rk[k];
                c->kind_mem_set_bytes[pp_stages_set_index(j, P, Q)] =
                    pp_stages_mem_at(w, l, j, f, n, r) - part;
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
    pp_status st = pp_stages_costs_time_fill(w, &lu, c, err);
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

