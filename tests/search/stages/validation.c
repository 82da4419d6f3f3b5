/* Stage MILP on costs from the memory model (pp_memory_stage) and the time model
 * (pp_time_parts_get), catalog models and GPUs:
 *   - per row: the MILP's pipeline time against brute force over every contiguous partition and
 *     recompute count priced by the models themselves (not the linear fit); error per row, MAPE;
 *   - the linear fit against the memory model at every (layers, recompute) point of each stage;
 *   - 30 layers / 4 stages / 256k vocabulary: the MILP split beats every uniform-ish split by the
 *     full step-time model (pp_time_estimate with the stages set) and fits by pp_memory_estimate;
 *   - a layout that fits only with per-stage recompute is found. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brute.h"
#include "pp_memory.h"
#include "pp_search.h"
#include "pp_stages.h"
#include "pp_time.h"
#include "tap.h"
#include "work.h"

static pp_stages_costs C;
static pp_stages_result R, B;
static pp_mem_result M;

typedef struct {
    const char *name, *model, *gpu;
    int64_t gpus, gbs, layers, vocab, seq;
    int64_t tp, pp, vpp, mbs;
    pp_recompute rc;
    bool dist_opt, sp;
    pp_framework fw;
    pp_attention attn;
    int zero;
} vcase;

/* Shapes shortened (layers) so that brute force can enumerate every split; devices and batch
 * chosen so that some rows need recompute on some stages. Unfused attention and FSDP make the
 * memory model non-linear (a max() of the working sets): those stages are priced by table. */
static const vcase cases[] = {
    {"llama3-8b L8 pp4 none", "llama3-8b", "h100-sxm", 4, 32, 8, 0, 0, 1, 4, 1, 1, PP_RC_NONE, false, false, PP_FW_MEGATRON, PP_ATTN_FLASH, 0},
    {"llama3-8b L8 pp4 full", "llama3-8b", "h100-sxm", 4, 32, 8, 0, 0, 1, 4, 1, 1, PP_RC_FULL, false, false, PP_FW_MEGATRON, PP_ATTN_FLASH, 0},
    {"llama3-8b L10 pp4 full s8k mbs2 40GB", "llama3-8b", "a100-40gb", 4, 32, 10, 0, 8192, 1, 4, 1, 2, PP_RC_FULL, false, false, PP_FW_MEGATRON, PP_ATTN_FLASH, 0},
    {"llama3-8b L12 pp4 full s8k 40GB", "llama3-8b", "a100-40gb", 4, 32, 12, 0, 8192, 1, 4, 1, 1, PP_RC_FULL, false, false, PP_FW_MEGATRON, PP_ATTN_FLASH, 0},
    {"gpt3-13b L12 tp2 pp4 full", "gpt3-13b", "a100-80gb", 8, 64, 12, 0, 0, 2, 4, 1, 1, PP_RC_FULL, false, true, PP_FW_MEGATRON, PP_ATTN_FLASH, 0},
    {"gpt3-13b L12 tp1 pp3 dist-opt mbs4 40GB", "gpt3-13b", "a100-40gb", 6, 48, 12, 0, 0, 1, 3, 1, 4, PP_RC_FULL, true, false, PP_FW_MEGATRON, PP_ATTN_FLASH, 0},
    {"gpt3-13b L12 tp2 pp4 unfused 40GB", "gpt3-13b", "a100-40gb", 8, 64, 12, 0, 0, 2, 4, 1, 2, PP_RC_FULL, false, true, PP_FW_MEGATRON, PP_ATTN_UNFUSED, 0},
    {"llama2-70b L10 tp8 pp2 full", "llama2-70b", "h100-sxm", 16, 64, 10, 0, 0, 8, 2, 1, 1, PP_RC_FULL, false, true, PP_FW_MEGATRON, PP_ATTN_FLASH, 0},
    {"llama3-8b L12 pp2 selective 80GB", "llama3-8b", "a100-80gb", 2, 16, 12, 0, 0, 1, 2, 1, 1, PP_RC_SELECTIVE, false, false, PP_FW_MEGATRON, PP_ATTN_FLASH, 0},
    {"llama3-8b L16 pp4 vpp2 full s8k 80GB", "llama3-8b", "a100-80gb", 4, 32, 16, 0, 8192, 1, 4, 2, 2, PP_RC_FULL, false, false, PP_FW_MEGATRON, PP_ATTN_FLASH, 0},
    {"mixtral L8 tp2 pp4 full", "mixtral-8x7b", "h100-sxm", 8, 32, 8, 0, 0, 2, 4, 1, 1, PP_RC_FULL, false, true, PP_FW_MEGATRON, PP_ATTN_FLASH, 0},
    {"gpt3-175b L12 tp8 pp4 full", "gpt3-175b", "a100-80gb", 32, 64, 12, 0, 0, 8, 4, 1, 1, PP_RC_FULL, true, true, PP_FW_MEGATRON, PP_ATTN_FLASH, 0},
    {"llama3-8b L10 pp4 fsdp s8k mbs2 40GB", "llama3-8b", "a100-40gb", 4, 32, 10, 0, 8192, 1, 4, 1, 2, PP_RC_FULL, false, false, PP_FW_FSDP, PP_ATTN_FLASH, 0},
    {"llama3-8b L10 pp2 deepspeed zero1 s8k", "llama3-8b", "a100-40gb", 4, 32, 10, 0, 8192, 1, 2, 1, 1, PP_RC_FULL, false, false, PP_FW_DEEPSPEED, PP_ATTN_FLASH, 1},
};

/* Every (n, r) point of every stage: the linear fit against the memory model. */
static double linear_fit_worst(const pp_work *w, const pp_layout *l, const pp_stages_costs *c)
{
    pp_stages_model_ctx ctx;
    pp_stages_model_ctx_init(&ctx, w, l);
    double worst = 0;
    for (int64_t j = 0; j < c->n_stages; j++)
        for (int64_t n = c->layers_min[j]; n <= c->layers_max[j]; n++)
            for (int64_t r = 0; r <= (c->allow_recompute ? n : 0); r++) {
                double got, lin;
                pp_stages_eval_model(&ctx, j, n, r, NULL, &got);
                if (c->mem_table[j]) continue;
                pp_stages_costs_eval(c, j, n, r, NULL, &lin);
                worst = fmax(worst, fabs(got - lin) / got);
            }
    return worst;
}

static void test_vs_brute(void)
{
    double ape_sum = 0;
    int rows = 0, with_rc = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const vcase *v = &cases[k];
        pp_work w;
        pp_layout l;
        bool ok = work_make(&w, v->model, v->gpu, v->gpus, v->gbs, v->layers, v->vocab, v->seq);
        w.framework = v->fw;
        w.attention = v->attn;
        if (!ok || !layout_make(&w, &l, v->tp, v->pp, v->vpp, v->mbs, v->rc, v->dist_opt, v->sp, v->zero)) {
            tap_ok(0, "%s: work or layout", v->name);
            continue;
        }
        pp_error err = {0};
        bool linear = false;
        char why[256] = "";
        pp_stages_costs_free(&C);
        if (pp_stages_costs_from_model(&w, &l, &C, &linear, why, sizeof why, &err) != PP_OK) {
            tap_ok(0, "%s: costs: %s", v->name, err.msg);
            continue;
        }
        /* Where the fit check calls the model linear it must be so at every point; where it
         * does not, the stage is tabulated (and the MILP stays exact: the brute force says). */
        double fit = linear_fit_worst(&w, &l, &C);
        int tables = 0;
        for (int64_t j = 0; j < l.pp; j++) tables += C.mem_table[j];
        tap_ok(fit < 1e-9, "%s: linear fit exact at every (layers, recompute) point of the %lld "
               "linear stages (worst %.2g); %d stage(s) by table%s%s", v->name,
               (long long)(l.pp - tables), fit, tables, why[0] ? ": " : "", why);
        if (pp_stages_solve(&w, &l, NULL, &R, &err) != PP_OK) {
            tap_ok(0, "%s: solve: %s", v->name, err.msg);
            continue;
        }
        pp_stages_model_ctx ctx;
        pp_stages_model_ctx_init(&ctx, &w, &l);
        int64_t pts = 0;
        if (brute_stages(&C, pp_stages_eval_model, &ctx, 50000000, &B, &pts, &err) != PP_OK) {
            tap_ok(0, "%s: brute: %s", v->name, err.msg);
            continue;
        }
        pp_stages_costs_free(&C);
        if (B.status != PP_STAGES_OPTIMAL) {
            tap_ok(R.status == PP_STAGES_FALLBACK && R.warning[0],
                   "%s: nothing fits (brute force, %lld points); the MILP falls back: %s", v->name,
                   (long long)pts, R.warning);
            continue;
        }
        double ape = fabs(R.pipeline_time_s - B.pipeline_time_s) / B.pipeline_time_s;
        ape_sum += ape;
        rows++;
        for (int64_t j = 0; j < l.pp; j++)
            if (R.stage_recompute[j] > 0) {
                with_rc++;
                break;
            }
        char split[256] = "";
        size_t off = 0;
        for (int64_t j = 0; j < l.pp && off < sizeof split - 16; j++)
            off += (size_t)snprintf(split + off, sizeof split - off, "%s%d/%d", j ? "," : "",
                                    R.stage_layers[j], R.stage_recompute[j]);
        /* The MILP's objective is time.c's pipeline term: moving to its split must change
         * pp_time_estimate's step by what the MILP predicts (up to the DP reduction of the end
         * stages, which follows their parameters: 1% of the step). */
        if (R.status == PP_STAGES_OPTIMAL) {
            pp_time_result tu, ti;
            pp_layout li = l;
            li.stage_layers = R.stage_layers, li.stage_recompute = R.stage_recompute;
            pp_time_estimate(&w, &l, &tu, &err);
            pp_time_estimate(&w, &li, &ti, &err);
            double d_model = ti.step_time_s - tu.step_time_s;
            double d_milp = R.pipeline_time_s - R.uniform_pipeline_time_s;
            tap_ok(fabs(d_model - d_milp) <= 0.01 * tu.step_time_s,
                   "%s: step-time change by pp_time_estimate %+.4g s, by the MILP %+.4g s", v->name,
                   d_model, d_milp);
        }
        tap_ok(R.status == PP_STAGES_OPTIMAL && R.fits && ape <= 1e-6,
               "%s: MILP %.6g s/step (layers/recompute %s, %.2f ms) vs brute force %.6g s/step "
               "(%lld points): error %.2g", v->name, R.pipeline_time_s, split, 1e3 * R.solve_time_s,
               B.pipeline_time_s, (long long)pts, ape);
    }
    tap_ok(rows >= 10 && with_rc >= 3, "%d rows compared, %d of them recompute on some stage", rows,
           with_rc);
    tap_diag("MAPE of the MILP's pipeline time against brute force over %d rows: %.3g%%", rows,
             rows ? 100 * ape_sum / rows : 0);
}

/* Step time and fit of a split by the full models. */
static bool split_eval(const pp_work *w, const pp_layout *l0, const int *n, const int *r,
                       double *step_s, bool *fits)
{
    pp_layout l = *l0;
    l.stage_layers = n;
    l.stage_recompute = r;
    pp_error err = {0};
    pp_time_result t;
    if (pp_layout_validate(w, &l, &err) != PP_OK || pp_time_estimate(w, &l, &t, &err) != PP_OK ||
        pp_memory_estimate(w, &l, &M, &err) != PP_OK) {
        printf("# split_eval: %s\n", err.msg);
        return false;
    }
    *step_s = t.step_time_s;
    *fits = M.fits;
    return true;
}

/* 30 layers, 4 stages, 256k vocabulary: a Llama-3-8B shape with 30 layers and a
 * 256000-token (untied) vocabulary, tp 2 x pp 4 on 8 H100 80 GB, 16 micro-batches. */
static void test_256k(void)
{
    pp_work w;
    pp_layout l;
    if (!work_make(&w, "llama3-8b", "h100-sxm", 8, 16, 30, 256000, 0) ||
        !layout_make(&w, &l, 2, 4, 1, 1, PP_RC_NONE, false, true, 0)) {
        tap_ok(0, "256k: work or layout");
        return;
    }
    pp_error err = {0};
    int n[PP_MAX_STAGES], r[PP_MAX_STAGES];
    pp_stages_result res;
    pp_status st = pp_stages_apply(&w, &l, "ilp", NULL, n, r, &res, &err);
    tap_ok(st == PP_OK && res.status == PP_STAGES_OPTIMAL && l.stage_layers == n,
           "256k: apply(ilp) sets an uneven split (%s) %s", pp_stages_status_names[res.status],
           err.msg);
    if (st != PP_OK || !l.stage_layers) return;
    tap_diag("256k: MILP split %d,%d,%d,%d, solve %.2f ms", n[0], n[1], n[2], n[3],
             1e3 * res.solve_time_s);
    double ilp_step = 0;
    bool ilp_fits = false;
    split_eval(&w, &l, n, r, &ilp_step, &ilp_fits);
    tap_ok(ilp_fits, "256k: the MILP split fits by pp_memory_estimate (peak %.1f GB of %.1f)",
           M.peak_bytes / 1e9, M.capacity_bytes / 1e9);
    double best = INFINITY;
    int zero[4] = {0, 0, 0, 0}, n_fit = 0;
    for (int a = 7; a <= 8; a++)
        for (int b = 7; b <= 8; b++)
            for (int c = 7; c <= 8; c++)
                for (int d = 7; d <= 8; d++) {
                    if (a + b + c + d != 30) continue;
                    int u[4] = {a, b, c, d};
                    double s;
                    bool f;
                    if (split_eval(&w, &l, u, zero, &s, &f)) {
                        tap_diag("256k: uniform-ish %d,%d,%d,%d: %.4f s/step%s", a, b, c, d, s,
                                 f ? "" : " (does not fit)");
                        if (s < best) best = s;
                        n_fit += f;
                    }
                }
    tap_ok(n_fit > 0, "256k: %d of the 6 uniform-ish splits fit too (a fair comparison)", n_fit);
    tap_ok(ilp_step < best * 0.95,
           "256k: MILP split %.4f s/step is faster than every uniform-ish split (best %.4f) by "
           "%.1f%% (>= 5%%)", ilp_step, best, 100 * (1 - ilp_step / best));
    /* The MILP's pipeline term must move the step-time model's figure by what it predicts (the
     * rest of the step, DP reduction of the end stages, moves a little with the split). */
    pp_layout lu = l;
    lu.stage_layers = NULL, lu.stage_recompute = NULL;
    pp_time_result tu;
    pp_time_estimate(&w, &lu, &tu, &err);
    tap_near(ilp_step - tu.step_time_s, res.pipeline_time_s - res.uniform_pipeline_time_s, 0.02,
             "256k: the MILP's predicted saving (s/step) is what pp_time_estimate sees");
}

/* A layout that fits only with per-stage recompute: Llama-2-13B (40 layers) on 8 A100 40 GB,
 * tp 2 x pp 4, mbs 2, sequence 4096, 32 micro-batches. */
static void test_recompute_only(void)
{
    pp_work w;
    pp_layout l;
    if (!work_make(&w, "llama2-13b", "a100-40gb", 8, 64, 0, 0, 4096) ||
        !layout_make(&w, &l, 2, 4, 1, 2, PP_RC_NONE, false, true, 0)) {
        tap_ok(0, "recompute case: work or layout");
        return;
    }
    pp_error err = {0};
    pp_stages_costs_free(&C);
    pp_stages_costs_from_model(&w, &l, &C, NULL, NULL, 0, &err);
    pp_stages_model_ctx ctx;
    pp_stages_model_ctx_init(&ctx, &w, &l);
    int64_t pts = 0;
    brute_stages(&C, pp_stages_eval_model, &ctx, 50000000, &B, &pts, &err);
    tap_ok(B.status == PP_STAGES_FALLBACK,
           "recompute case: no split fits without recompute (brute force over the memory model, "
           "%lld splits: %s)", (long long)pts, pp_stages_status_names[B.status]);
    pp_stages_costs_free(&C);
    l.recompute = PP_RC_FULL;
    int n[PP_MAX_STAGES], r[PP_MAX_STAGES];
    pp_stages_result res;
    pp_stages_apply(&w, &l, "auto", NULL, n, r, &res, &err);
    tap_ok(res.status == PP_STAGES_OPTIMAL && res.fits && l.stage_recompute == r,
           "recompute case: auto finds a split with per-stage recompute that fits (%s, %.2f ms)",
           pp_stages_status_names[res.status], 1e3 * res.solve_time_s);
    if (!l.stage_recompute) return;
    tap_diag("recompute case: layers %d,%d,%d,%d recompute %d,%d,%d,%d", n[0], n[1], n[2], n[3],
             r[0], r[1], r[2], r[3]);
    bool differ = false;
    for (int j = 1; j < 4; j++) differ |= r[j] != r[0];
    tap_ok(differ && r[0] > r[3], "recompute case: the counts differ, stage 0 (4 in flight) "
           "recomputes more than stage 3");
    double step;
    bool fits;
    split_eval(&w, &l, n, r, &step, &fits);
    tap_ok(fits, "recompute case: it fits by pp_memory_estimate too");
    /* What Megatron can do without per-stage counts: the uniform split with one
     * --recompute-num-layers K on every stage (K = 0: all). The best K that fits. */
    double best_k = INFINITY;
    int64_t kbest = -1;
    for (int64_t K = 0; K <= 10; K++) {
        pp_layout lk = l;
        lk.stage_layers = NULL, lk.stage_recompute = NULL;
        lk.recompute_layers = K;
        pp_time_result tk;
        if (pp_layout_validate(&w, &lk, &err) != PP_OK || pp_time_estimate(&w, &lk, &tk, &err) != PP_OK ||
            pp_memory_estimate(&w, &lk, &M, &err) != PP_OK || !M.fits)
            continue;
        if (tk.step_time_s < best_k) best_k = tk.step_time_s, kbest = K;
    }
    tap_ok(step < best_k, "recompute case: %.3f s/step, faster than the best uniform split with a "
           "global recompute count (K = %lld: %.3f s/step)", step, (long long)kbest, best_k);
}

/* pp_memory_estimate on a split with per-stage counts, some of them 0 under --recompute full,
 * must agree with the per-stage figures the MILP used. */
static void test_estimate_agrees(void)
{
    pp_work w;
    pp_layout l;
    if (!work_make(&w, "llama2-13b", "a100-80gb", 8, 64, 0, 0, 5120) ||
        !layout_make(&w, &l, 2, 4, 1, 4, PP_RC_FULL, false, true, 0)) {
        tap_ok(0, "agreement: work or layout");
        return;
    }
    pp_error err = {0};
    int n[PP_MAX_STAGES], r[PP_MAX_STAGES];
    pp_stages_result res;
    pp_stages_apply(&w, &l, "ilp", NULL, n, r, &res, &err);
    if (!l.stage_layers) {
        tap_ok(0, "agreement: the MILP gave no split (%s)", res.warning);
        return;
    }
    tap_diag("agreement: layers %d,%d,%d,%d recompute %d,%d,%d,%d", n[0], n[1], n[2], n[3], r[0],
             r[1], r[2], r[3]);
    pp_memory_estimate(&w, &l, &M, &err);
    double worst = 0;
    int64_t at = -1;
    for (int64_t j = 0; j < 4; j++) {
        double e = fabs(M.stages[j].peak_bytes + M.stages[j].reserved_bytes - res.stage_mem_bytes[j]) /
                   res.stage_mem_bytes[j];
        if (e > worst) worst = e, at = j;
    }
    bool zero_rc = false, some_rc = false;
    for (int j = 0; j < 4; j++) zero_rc |= r[j] == 0, some_rc |= r[j] > 0;
    tap_ok(zero_rc && some_rc, "agreement: the split mixes recomputing and plain stages");
    tap_ok(worst <= 1e-9, "agreement: pp_memory_estimate with the stages == the MILP's per-stage "
           "memory (worst %.2g at stage %lld)", worst, (long long)at);
}

/* plan's use: pp_search_run over the 256k case's work (--pp 4), then pp_stages_refine (auto). */
static pp_search_candidate plan_cand[32];
static int plan_n[32][PP_MAX_STAGES], plan_r[32][PP_MAX_STAGES];

static void test_refine(void)
{
    pp_work w;
    if (!work_make(&w, "llama3-8b", "h100-sxm", 8, 16, 30, 256000, 0)) {
        tap_ok(0, "refine: work");
        return;
    }
    pp_search_params sp;
    pp_search_params_init(&sp);
    sp.top = 32;
    /* pp fixed at 4 (plan --pp 4): unfixed, pp 1 wins on this work and there is nothing to split;
     * vpp fixed at 1: 30 layers on 4 stages would also be searched interleaved with the balanced
     * split by virtual stage, which the stage MILP leaves as it is */
    sp.fixed = PP_SEARCH_FIX_PP | PP_SEARCH_FIX_VPP;
    sp.fixed_layout.pp = 4;
    sp.fixed_layout.vpp = 1;
    pp_search_result sr;
    pp_error err = {0};
    if (pp_search_run(&w, &sp, plan_cand, &sr, &err) != PP_OK || sr.n < 5) {
        tap_ok(0, "refine: search: %s", err.msg);
        return;
    }
    double uniform_best = plan_cand[0].time.step_time_s;
    pp_stages_refine_stats rs;
    pp_status st = pp_stages_refine(&w, plan_cand, sr.n, 5, NULL, plan_n, plan_r, &rs, &err);
    tap_ok(st == PP_OK && rs.solved > 0 && rs.improved > 0,
           "refine: %lld solved, %lld skipped, %lld improved in %.2f ms %s", (long long)rs.solved,
           (long long)rs.skipped, (long long)rs.improved, 1e3 * rs.time_s, err.msg);
    const pp_search_candidate *b = &plan_cand[0];
    tap_ok(b->fits && b->layout.stage_layers && b->time.step_time_s < uniform_best,
           "refine: the best candidate now has uneven stages and is faster (%.4f s vs %.4f s "
           "uniform)", b->time.step_time_s, uniform_best);
    bool sorted = true;
    for (int64_t i = 1; i < rs.n; i++)
        if (plan_cand[i].fits && plan_cand[i - 1].fits &&
            plan_cand[i].time.step_time_s < plan_cand[i - 1].time.step_time_s * (1 - 1e-9))
            sorted = false;
    tap_ok(sorted, "refine: candidates re-sorted by step time");
    /* full recompute of no layer became recompute none, and its duplicate went */
    int dups = 0, full_without = 0;
    for (int64_t i = 0; i < rs.n; i++) {
        const pp_layout *a = &plan_cand[i].layout;
        if (a->recompute == PP_RC_FULL && a->stage_recompute) {
            bool any = false;
            for (int64_t j = 0; j < a->pp; j++) any |= a->stage_recompute[j] > 0;
            full_without += !any;
        }
        for (int64_t k = 0; k < i; k++) {
            const pp_layout *b2 = &plan_cand[k].layout;
            bool same = a->tp == b2->tp && a->pp == b2->pp && a->dp == b2->dp && a->vpp == b2->vpp &&
                        a->cp == b2->cp && a->mbs == b2->mbs && a->dist_opt == b2->dist_opt &&
                        a->sp == b2->sp && a->recompute == b2->recompute && a->zero == b2->zero &&
                        !a->stage_layers == !b2->stage_layers;
            for (int64_t j = 0; same && a->stage_layers && j < a->pp; j++)
                same = a->stage_layers[j] == b2->stage_layers[j] &&
                       a->stage_recompute[j] == b2->stage_recompute[j];
            dups += same;
        }
    }
    tap_ok(dups == 0 && full_without == 0 && rs.n < sr.n,
           "refine: no duplicate runs left (%lld of %lld kept), no full recompute of 0 layers",
           (long long)rs.n, (long long)sr.n);
    if (b->layout.stage_layers) {
        pp_time_result t;
        pp_time_estimate(&w, &b->layout, &t, &err);
        tap_near(t.step_time_s, b->time.step_time_s, 1e-12,
                 "refine: the candidate's time is pp_time_estimate of its layout with the stages");
        pp_layout chk = b->layout;
        tap_ok(pp_layout_validate(&w, &chk, &err) == PP_OK, "refine: the layout validates (%s)",
               err.msg);
    }
}

int main(void)
{
    if (!work_catalog()) return tap_skip_all("no models.d catalog");
    test_vs_brute();
    test_256k();
    test_recompute_only();
    test_estimate_agrees();
    test_refine();
    pp_stages_costs_free(&C);
    pp_catalog_free(&work_cat);
    return tap_done();
}
