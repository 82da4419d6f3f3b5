/* Stage MILP by layer kind on costs from the memory model (pp_memory_stage_range) and the time
 * model (per-kind terms of pp_time_layer_get), for models whose layers differ: DeepSeek-V2-Lite
 * (one dense layer, then MoE), DeepSeek-V3 (3 dense, then MoE, one MTP layer on the last stage),
 * a Llama-4-Maverick-like model (dense and MoE layers alternate, every 4th layer global
 * attention), a Gemma-3-like one (5 windowed layers to 1 full) and a gpt-oss-like one (MoE,
 * windowed and full attention alternate); model files in tests/data/stages.
 *   - per row: the per-kind fit against the memory model (costs_from_model's check), the MILP's
 *     pipeline time against the positional brute force over every contiguous split and recompute
 *     count priced by the models themselves (pp_stages_eval_model_range), error per row;
 *   - agreement: pp_memory_estimate and pp_time_estimate with the MILP's split (layout
 *     stage_layers) give the MILP's per-stage memory and its pipeline time;
 *   - plan's refine on an MoE model: candidates re-evaluated with the full models. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brute.h"
#include "pp_load.h"
#include "pp_memory.h"
#include "pp_search.h"
#include "pp_stages.h"
#include "pp_time.h"
#include "tap.h"
#include "util.h"
#include "work.h"

static pp_stages_costs C;
static pp_stages_result R, B;
static pp_mem_result M;

/* A model file of tests/data/stages, or a catalog model; layers shortened when > 0. */
static bool kwork_make(pp_work *w, const char *model, const char *gpu, int64_t gpus, int64_t gbs,
                       int64_t layers, int64_t seq)
{
    if (strchr(model, '.')) {
        const char *src = getenv("PARPLAN_SOURCE_DIR");
        char path[1024];
        snprintf(path, sizeof path, "%s/tests/data/stages/%s", src ? src : ".", model);
        if (!work_make(w, "llama3-8b", gpu, gpus, gbs, 0, 0, 0)) return false;
        pp_error err = {0};
        pp_model_init(&w->model);
        if (pp_model_load_file(&w->model, path, &err) != PP_OK) {
            printf("# %s: %s\n", path, err.msg);
            return false;
        }
    } else if (!work_make(w, model, gpu, gpus, gbs, 0, 0, 0)) {
        return false;
    }
    pp_error err = {0};
    if (layers > 0) w->model.layers = layers;
    if (seq > 0) w->model.seq = seq;
    if (pp_model_validate(&w->model, &err) != PP_OK) {
        printf("# model: %s\n", err.msg);
        return false;
    }
    return true;
}

typedef struct {
    const char *name, *model, *gpu;
    int64_t gpus, gbs, layers, seq;
    int64_t tp, pp, vpp, ep, mbs;
    pp_recompute rc;
    bool sp;
    double mem_gb;            /* device memory set to this (0: the GPU's) */
    int64_t window, window_every; /* windowed attention added to a catalog model (0: none) */
    pp_attention attn;
    pp_framework fw;
    int zero;
} kcase;

/* Shortened (layers) so that brute force can enumerate every split; the device's memory set so
 * that some stages must recompute. */
static const kcase cases[] = {
    {"deepseek-v2-lite pp4 full mbs2 40GB", "deepseek-v2-lite.yaml", "a100-40gb", 32, 256, 0, 0, 1, 4, 1, 8, 2, PP_RC_FULL, false, 0, 0, 0, PP_ATTN_FLASH, PP_FW_MEGATRON, 0},
    {"deepseek-v2-lite pp4 full mbs2 34GB", "deepseek-v2-lite.yaml", "a100-40gb", 32, 256, 0, 0, 1, 4, 1, 8, 2, PP_RC_FULL, false, 34, 0, 0, PP_ATTN_FLASH, PP_FW_MEGATRON, 0},
    {"deepseek-v2-lite pp4 none mbs1 40GB", "deepseek-v2-lite.yaml", "a100-40gb", 32, 256, 0, 0, 1, 4, 1, 8, 1, PP_RC_NONE, false, 0, 0, 0, PP_ATTN_FLASH, PP_FW_MEGATRON, 0},
    {"deepseek-v2-lite pp3 selective mbs2", "deepseek-v2-lite.yaml", "a100-80gb", 24, 240, 0, 0, 1, 3, 1, 8, 2, PP_RC_SELECTIVE, false, 0, 0, 0, PP_ATTN_FLASH, PP_FW_MEGATRON, 0},
    {"deepseek-v3 L16 pp4 full 40GB (MTP)", "deepseek-v3.yaml", "h100-sxm", 256, 256, 16, 0, 1, 4, 1, 64, 1, PP_RC_FULL, false, 40, 0, 0, PP_ATTN_FLASH, PP_FW_MEGATRON, 0},
    {"deepseek-v3 L16 pp4 none (MTP)", "deepseek-v3.yaml", "h100-sxm", 256, 256, 16, 0, 1, 4, 1, 64, 1, PP_RC_NONE, false, 0, 0, 0, PP_ATTN_FLASH, PP_FW_MEGATRON, 0},
    {"deepseek-v3 L16 pp4 vpp2 full 62GB (MTP)", "deepseek-v3.yaml", "h100-sxm", 256, 256, 16, 0, 1, 4, 2, 64, 1, PP_RC_FULL, false, 62, 0, 0, PP_ATTN_FLASH, PP_FW_MEGATRON, 0},
    {"maverick-like L24 tp2 pp4 full 44GB", "maverick-like.yaml", "h100-sxm", 256, 256, 0, 0, 2, 4, 1, 32, 1, PP_RC_FULL, true, 44, 0, 0, PP_ATTN_FLASH, PP_FW_MEGATRON, 0},
    {"maverick-like L24 tp2 pp4 none", "maverick-like.yaml", "h100-sxm", 256, 256, 0, 0, 2, 4, 1, 32, 1, PP_RC_NONE, true, 0, 0, 0, PP_ATTN_FLASH, PP_FW_MEGATRON, 0},
    {"gemma-like llama3-8b L12 w1024 5:1 pp3 full s8k 40GB", "llama3-8b", "a100-40gb", 3, 48, 12, 8192, 1, 3, 1, 1, 1, PP_RC_FULL, false, 0, 1024, 6, PP_ATTN_FLASH, PP_FW_MEGATRON, 0},
    {"gpt-oss-like mixtral L8 w4096 1:1 tp2 pp4 full s8k", "mixtral-8x7b", "h100-sxm", 8, 32, 8, 8192, 2, 4, 1, 1, 1, PP_RC_FULL, true, 0, 4096, 2, PP_ATTN_FLASH, PP_FW_MEGATRON, 0},
    {"deepseek-v2-lite L16 pp4 full unfused 30GB", "deepseek-v2-lite.yaml", "a100-40gb", 32, 256, 16, 0, 1, 4, 1, 8, 1, PP_RC_FULL, false, 30, 0, 0, PP_ATTN_UNFUSED, PP_FW_MEGATRON, 0},
    {"deepseek-v2-lite L16 pp4 full fsdp zero1 20GB", "deepseek-v2-lite.yaml", "a100-40gb", 32, 256, 16, 0, 1, 4, 1, 8, 1, PP_RC_FULL, false, 20, 0, 0, PP_ATTN_FLASH, PP_FW_FSDP, 1},
    /* Short sequences: the optimizer step's foreach-Adam temporaries outgrow the activations
     * (memory.c's max(working set, optimizer - activations)), not of the per-kind form: the
     * stages are priced by position. */
    {"deepseek-v2-lite L16 pp4 full fsdp zero1 s512 13.3GB", "deepseek-v2-lite.yaml", "a100-40gb", 32, 256, 16, 512, 1, 4, 1, 8, 1, PP_RC_FULL, false, 13.3, 0, 0, PP_ATTN_FLASH, PP_FW_FSDP, 1},
    {"deepseek-v2-lite L16 pp4 full unfused s1024 15GB", "deepseek-v2-lite.yaml", "a100-40gb", 32, 256, 16, 1024, 1, 4, 1, 8, 1, PP_RC_FULL, false, 15, 0, 0, PP_ATTN_UNFUSED, PP_FW_MEGATRON, 0},
};

static bool case_make(const kcase *v, pp_work *w, pp_layout *l)
{
    if (!kwork_make(w, v->model, v->gpu, v->gpus, v->gbs, v->layers, v->seq)) return false;
    w->attention = v->attn;
    w->framework = v->fw;
    if (v->mem_gb > 0) w->gpu.memory_bytes = v->mem_gb * 1e9;
    if (v->window > 0) {
        w->model.window = v->window;
        w->model.window_full_every = v->window_every;
        w->model.window_full_phase = v->window_every - 1;
    }
    pp_layout_init(l);
    l->tp = v->tp, l->pp = v->pp, l->vpp = v->vpp, l->ep = v->ep, l->mbs = v->mbs;
    l->recompute = v->rc, l->sp = v->sp, l->dist_opt = v->fw == PP_FW_MEGATRON, l->zero = v->zero;
    pp_error err = {0};
    if (pp_layout_validate(w, l, &err) != PP_OK) {
        printf("# %s: layout: %s\n", v->name, err.msg);
        return false;
    }
    return true;
}

/* The pipeline term of pp_time_estimate: the step less what does not depend on the split's
 * stage times (DP reduction, ZeRO gathers, optimizer), and FSDP2's host wait, which the MILP leaves out (it
 * is the slowest stage's blocks' host time, and counts only where their GPU work is short). */
static double pipeline_of(const pp_time_result *t)
{
    return t->step_time_s - t->dp_comm_s - t->zero_gather_s - t->optimizer_s - t->host_s;
}

static void test_vs_brute(void)
{
    double ape_sum = 0;
    int rows = 0, with_rc = 0, exact = 0, uneven = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const kcase *v = &cases[k];
        pp_work w;
        pp_layout l;
        if (!case_make(v, &w, &l)) {
            tap_ok(0, "%s: work or layout", v->name);
            continue;
        }
        pp_error err = {0};
        bool linear = false;
        char why[512] = "";
        pp_stages_costs_free(&C);
        if (pp_stages_costs_from_model(&w, &l, &C, &linear, why, sizeof why, &err) != PP_OK) {
            tap_ok(0, "%s: costs: %s", v->name, err.msg);
            continue;
        }
        int64_t counts[PP_LAYER_KINDS];
        pp_model_layer_counts(&w.model, 0, w.model.layers, counts);
        char kinds[128] = "";
        for (int q = 0, off = 0; q < PP_LAYER_KINDS; q++)
            if (counts[q])
                off += snprintf(kinds + off, sizeof kinds - (size_t)off, "%s%lld %s", off ? ", " : "",
                                (long long)counts[q], pp_layer_kind_names[q]);
        tap_ok(C.by_kind, "%s: %lld layers (%s; %lld MTP): priced by kind; memory of the per-kind "
               "form at every checked range: %s%s%s", v->name, (long long)w.model.layers, kinds,
               (long long)w.model.mtp_layers, linear ? "yes" : "no", why[0] ? ": " : "", why);
        exact += linear;
        if (pp_stages_solve(&w, &l, NULL, &R, &err) != PP_OK) {
            tap_ok(0, "%s: solve: %s", v->name, err.msg);
            continue;
        }
        pp_stages_model_ctx ctx;
        pp_stages_model_ctx_init(&ctx, &w, &l);
        int64_t pts = 0;
        if (brute_stages_range(&C, pp_stages_eval_model_range, &ctx, 60000000, &B, &pts, &err) != PP_OK) {
            tap_ok(0, "%s: brute: %s", v->name, err.msg);
            continue;
        }
        if (B.status != PP_STAGES_OPTIMAL) {
            tap_ok(R.status == PP_STAGES_FALLBACK && R.warning[0],
                   "%s: nothing fits (brute force, %lld points); the MILP falls back: %s", v->name,
                   (long long)pts, R.warning);
            continue;
        }
        double ape = fabs(R.pipeline_time_s - B.pipeline_time_s) / B.pipeline_time_s;
        char s1[256], s2[256];
        split_str(&R, s1, sizeof s1);
        split_str(&B, s2, sizeof s2);
        rows++;
        ape_sum += ape;
        for (int64_t j = 0; j < l.pp; j++)
            if (R.stage_recompute[j] > 0) {
                with_rc++;
                break;
            }
        for (int64_t j = 1; j < l.pp; j++)
            if (R.stage_layers[j] != R.stage_layers[0]) {
                uneven++;
                break;
            }
        /* The MILP's per-stage figures are the models' at its split: memory by
         * pp_memory_estimate, the pipeline term by pp_time_estimate (interleaved: its extra
         * p2p of the model chunks is not in the MILP, as today: within 1%). */
        if (R.status == PP_STAGES_OPTIMAL) {
            pp_layout li = l;
            li.stage_layers = R.stage_layers, li.stage_recompute = R.stage_recompute;
            pp_time_result ti;
            bool ok = pp_time_estimate(&w, &li, &ti, &err) == PP_OK &&
                      pp_memory_estimate(&w, &li, &M, &err) == PP_OK;
            double worst = 0;
            for (int64_t j = 0; ok && j < l.pp; j++)
                worst = fmax(worst, fabs(M.stages[j].peak_bytes + M.stages[j].reserved_bytes -
                                         R.stage_mem_bytes[j]) / R.stage_mem_bytes[j]);
            double dt = fabs(pipeline_of(&ti) - R.pipeline_time_s) / R.pipeline_time_s;
            tap_ok(ok && worst <= 1e-12 && M.fits && dt <= (l.vpp > 1 ? 1e-2 : 1e-9),
                   "%s: with the MILP's split, pp_memory_estimate == its stage memory (worst %.2g, "
                   "fits %d) and pp_time_estimate's pipeline term == its objective (%.2g)",
                   v->name, worst, M.fits, dt);
        }
        tap_ok(R.status == PP_STAGES_OPTIMAL && R.fits && ape <= 1e-6,
               "%s: MILP %.6g s/step (%s, %.2f ms) vs brute force %.6g s/step (%s, %lld points): "
               "error %.2g; uniform %.6g s/step%s", v->name, R.pipeline_time_s, s1,
               1e3 * R.solve_time_s, B.pipeline_time_s, s2, (long long)pts, ape,
               R.uniform_pipeline_time_s, R.uniform_fits ? "" : " (does not fit)");
    }
    tap_ok(rows >= 10 && with_rc >= 4 && uneven >= 6,
           "%d rows compared, %d recompute on some stage, %d uneven; %d of the %d models' memory of "
           "the per-kind form", rows, with_rc, uneven, exact, (int)(sizeof cases / sizeof cases[0]));
    tap_diag("MAPE of the MILP's pipeline time against brute force over %d rows: %.3g%%", rows,
             rows ? 100 * ape_sum / rows : 0);
}

/* DeepSeek-V3 in full (61 layers: 3 dense + 58 MoE, MTP 1) on 16 stages, 1024 H100: the MILP's
 * split against the uniform one by the full models, and the agreement of both estimates. */
static void test_deepseek_v3(void)
{
    pp_work w;
    if (!kwork_make(&w, "deepseek-v3.yaml", "h100-sxm", 1024, 1024, 0, 0)) {
        tap_ok(0, "deepseek-v3: work");
        return;
    }
    for (int rc = 0; rc < 2; rc++) {
        pp_layout l;
        pp_layout_init(&l);
        l.pp = 16, l.ep = 64, l.dist_opt = true, l.recompute = rc ? PP_RC_FULL : PP_RC_NONE;
        pp_error err = {0};
        if (pp_layout_validate(&w, &l, &err) != PP_OK) {
            tap_ok(0, "deepseek-v3: layout %s", err.msg);
            return;
        }
        pp_layout lu = l;
        pp_time_result tu, ti;
        pp_time_estimate(&w, &lu, &tu, &err);
        pp_memory_estimate(&w, &lu, &M, &err);
        bool uni_fits = M.fits;
        int n[PP_MAX_STAGES], r[PP_MAX_STAGES];
        pp_stages_result res;
        pp_status st = pp_stages_apply(&w, &l, "ilp", NULL, n, r, &res, &err);
        char s1[512];
        split_str(&res, s1, sizeof s1);
        if (st != PP_OK || !l.stage_layers) {
            tap_ok(0, "deepseek-v3 recompute %s: no split (%s %s)", rc ? "full" : "none", err.msg,
                   res.warning);
            continue;
        }
        pp_time_estimate(&w, &l, &ti, &err);
        pp_memory_estimate(&w, &l, &M, &err);
        double worst = 0;
        for (int64_t j = 0; j < 16; j++)
            worst = fmax(worst, fabs(M.stages[j].peak_bytes + M.stages[j].reserved_bytes -
                                     res.stage_mem_bytes[j]) / res.stage_mem_bytes[j]);
        tap_ok(res.status == PP_STAGES_OPTIMAL && M.fits && worst <= 1e-12 &&
                   fabs(pipeline_of(&ti) - res.pipeline_time_s) <= 1e-9 * res.pipeline_time_s,
               "deepseek-v3 61 layers pp16 recompute %s: MILP split %s in %.2f ms fits by "
               "pp_memory_estimate (stage memory equal, worst %.2g) and pp_time_estimate's "
               "pipeline term == its objective", rc ? "full" : "none", s1, 1e3 * res.solve_time_s,
               worst);
        if (uni_fits)
            tap_ok(ti.step_time_s <= tu.step_time_s, "deepseek-v3 recompute %s: step %.3f s with "
                   "the MILP's split, %.3f s uniform (%.1f%% faster)", rc ? "full" : "none",
                   ti.step_time_s, tu.step_time_s, 100 * (1 - ti.step_time_s / tu.step_time_s));
        else
            tap_ok(1, "deepseek-v3 recompute %s: step %.3f s with the MILP's split; the uniform "
                   "split (%.3f s) does not fit", rc ? "full" : "none", ti.step_time_s, tu.step_time_s);
    }
}

/* plan's use on an MoE model: search with --pp 4 fixed, then pp_stages_refine (auto). */
static pp_search_candidate plan_cand[32];
static int plan_n[32][PP_MAX_STAGES], plan_r[32][PP_MAX_STAGES];

static void test_refine(void)
{
    pp_work w;
    if (!kwork_make(&w, "deepseek-v2-lite.yaml", "a100-40gb", 32, 256, 0, 0)) {
        tap_ok(0, "refine: work");
        return;
    }
    pp_search_params sp;
    pp_search_params_init(&sp);
    sp.top = 32;
    /* vpp fixed at 1: 27 layers on 4 stages would also be searched interleaved with the balanced
     * split by virtual stage, which the stage MILP leaves as it is */
    sp.fixed = PP_SEARCH_FIX_PP | PP_SEARCH_FIX_VPP;
    sp.fixed_layout.pp = 4;
    sp.fixed_layout.vpp = 1;
    pp_search_result sr;
    pp_error err = {0};
    if (pp_search_run(&w, &sp, plan_cand, &sr, &err) != PP_OK || sr.n < 1) {
        tap_ok(0, "refine: search: %s (%lld candidates)", err.msg, (long long)sr.n);
        return;
    }
    pp_stages_refine_stats rs;
    pp_status st = pp_stages_refine(&w, plan_cand, sr.n, 5, NULL, plan_n, plan_r, &rs, &err);
    tap_ok(st == PP_OK && rs.solved > 0, "refine (deepseek-v2-lite, pp 4): %lld solved, %lld "
           "skipped, %lld improved in %.2f ms %s", (long long)rs.solved, (long long)rs.skipped,
           (long long)rs.improved, 1e3 * rs.time_s, err.msg);
    int checked = 0, agree = 0;
    for (int64_t i = 0; i < rs.n; i++) {
        const pp_search_candidate *b = &plan_cand[i];
        if (!b->layout.stage_layers) continue;
        checked++;
        pp_time_result t;
        pp_time_estimate(&w, &b->layout, &t, &err);
        double worst = pp_memory_worst_bytes(&w, &b->layout, NULL);
        agree += fabs(t.step_time_s - b->time.step_time_s) <= 1e-12 * t.step_time_s &&
                 worst == b->worst_bytes;
    }
    tap_ok(agree == checked, "refine: the %d candidates with uneven stages carry the full models' "
           "step time and memory of their layouts (%d agree)", checked, agree);
}

int main(void)
{
    if (!work_catalog()) return tap_skip_all("no models.d catalog");
    test_vs_brute();
    test_deepseek_v3();
    test_refine();
    pp_stages_costs_free(&C);
    pp_catalog_free(&work_cat);
    return tap_done();
}
