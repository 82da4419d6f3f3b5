/* Unit tests of the layout search (planner/search/search.c):
 *   - the rules against brute force: with memory out of the way, the ranked candidates are
 *     exactly the layouts of the value lists that pp_layout_validate accepts and that the
 *     topology and redundancy rules keep;
 *   - the funnel adds up (evaluated = sum of pruned + fitting);
 *   - the ranking: best first, each figure equal to pp_time_estimate / pp_memory_worst_bytes;
 *   - fixed dimensions, cross-node TP, nothing fitting, bad parameters;
 *   - 13B on 16 A100-80GB: an answer a Megatron expert would sign. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_memory.h"
#include "pp_search.h"
#include "pp_time.h"
#include "tap.h"
#include "time_test.h"

static int64_t sum_pruned(const pp_search_result *r)
{
    int64_t s = 0;
    for (int i = 0; i < PP_PRUNE_COUNT; i++) s += r->pruned[i];
    return s;
}

static void divisors(int64_t n, int64_t *out, int *k)
{
    *k = 0;
    for (int64_t d = 1; d <= n; d++)
        if (n % d == 0) out[(*k)++] = d;
}

/* Brute force over the same value lists: count the layouts the rules keep. */
static int64_t brute_count(const pp_work *w, bool allow_cross)
{
    int64_t tps[256], pps[256], cps[256], mbss[256], vpps[256], eps[256];
    int ntp, npp, ncp, nmbs, nvpp, nep;
    divisors(w->gpus, tps, &ntp);
    divisors(w->gpus, pps, &npp);
    divisors(w->gpus, cps, &ncp);
    divisors(w->gbs, mbss, &nmbs);
    divisors(w->model.layers, vpps, &nvpp);
    /* and the uneven interleavings the search tries (search.c): vpp 2, 4, 8 */
    for (int64_t v = 2; v <= 8; v *= 2)
        if (w->model.layers % v) vpps[nvpp++] = v;
    if (w->model.experts > 1) {
        divisors(w->model.experts, eps, &nep);
        int k = 0;
        for (int i = 0; i < nep; i++)
            if (eps[i] <= w->gpus) eps[k++] = eps[i];
        nep = k;
    } else {
        eps[0] = 1;
        nep = 1;
    }
    int zeros[4], nz = 0;
    bool dist[4];
    if (w->framework == PP_FW_MEGATRON) {
        zeros[nz] = 0, dist[nz++] = false;
        zeros[nz] = 0, dist[nz++] = true;
    } else if (w->framework == PP_FW_DEEPSPEED) {
        for (int z = 0; z < 4; z++) zeros[nz] = z, dist[nz++] = false;
    } else {
        zeros[nz] = 0, dist[nz++] = false;
        zeros[nz] = 2, dist[nz++] = false;
        zeros[nz] = 3, dist[nz++] = false;
    }
    int64_t count = 0;
    for (int a = 0; a < ntp; a++)
        for (int b = 0; b < npp; b++)
            for (int c = 0; c < ncp; c++)
                for (int e = 0; e < nep; e++)
                  for (int et = 0; et < (w->model.experts > 1 ? 2 : 1); et++)
                    for (int d = 0; d < nmbs; d++)
                        for (int v = 0; v < nvpp; v++)
                            for (int sp = 0; sp < 2; sp++)
                                for (int rc = 0; rc < PP_RC_COUNT; rc++)
                                    for (int o = 0; o < nz; o++) {
                                        pp_layout l;
                                        pp_layout_init(&l);
                                        l.tp = tps[a];
                                        l.pp = pps[b];
                                        l.cp = cps[c];
                                        l.ep = eps[e];
                                        l.etp = et; /* 0: = tp; 1: whole experts per rank */
                                        if (et == 1 && tps[a] == 1) continue; /* the same run as etp 0 */
                                        l.mbs = mbss[d];
                                        l.vpp = vpps[v];
                                        l.sp = sp;
                                        l.recompute = (pp_recompute)rc;
                                        l.zero = zeros[o];
                                        l.dist_opt = dist[o];
                                        pp_error err;
                                        if (pp_layout_validate(w, &l, &err) != PP_OK) continue;
                                        /* topology and redundancy rules of the search */
                                        if (!allow_cross && (l.tp > w->gpus_per_node || w->gpus_per_node % l.tp))
                                            continue;
                                        if (w->model.experts > 1 &&
                                            (pp_layout_etp(&l) > w->gpus_per_node ||
                                             w->gpus_per_node % pp_layout_etp(&l)))
                                            continue;
                                        if (l.cp > 1 && w->attention != PP_ATTN_FLASH) continue;
                                        if ((l.zero > 0 || l.dist_opt) && l.dp * l.cp == 1) continue;
                                        /* interleaving where pp x vpp does not divide the layers
                                         * (validate takes the balanced split): searched only with
                                         * vpp 2, 4 or 8 on a pp without uniform interleaving */
                                        int64_t L = w->model.layers;
                                        if (l.vpp > 1 && L % (l.pp * l.vpp) &&
                                            (!(L % l.pp || L == l.pp) || (l.vpp != 2 && l.vpp != 4 && l.vpp != 8)))
                                            continue;
                                        count++;
                                    }
    return count;
}

static pp_work make_work(const pp_gpu *g, int64_t L, int64_t h, int64_t a, int64_t seq, int64_t gpus,
                         int64_t gbs)
{
    pp_work w = {0};
    w.gpu = *g;
    tt_gpt(&w.model, L, h, a, seq, 51200);
    w.gpus = gpus;
    w.gpus_per_node = 8;
    w.gbs = gbs;
    w.attention = PP_ATTN_FLASH;
    return w;
}

static void test_rules_vs_brute(const pp_gpu *a100)
{
    pp_gpu big = *a100;
    big.memory_bytes = 1e18; /* nothing runs out of memory: every rule but memory is tested */
    struct {
        const char *name;
        pp_work w;
        bool cross;
    } cases[4];
    cases[0].name = "GPT L24 h2048 on 16 GPUs, megatron";
    cases[0].w = make_work(&big, 24, 2048, 16, 2048, 16, 64);
    cases[0].cross = false;
    cases[1].name = "GPT L12 h768 on 12 GPUs, deepspeed, cross-node TP allowed";
    cases[1].w = make_work(&big, 12, 768, 12, 1024, 12, 48);
    cases[1].w.framework = PP_FW_DEEPSPEED;
    cases[1].cross = true;
    cases[2].name = "GPT L8 h1024 on 8 GPUs, fsdp, unfused attention";
    cases[2].w = make_work(&big, 8, 1024, 8, 512, 8, 32);
    cases[2].w.framework = PP_FW_FSDP;
    cases[2].w.attention = PP_ATTN_UNFUSED;
    cases[2].cross = false;
    cases[3].name = "MoE L4 h512 8 experts top-2 on 8 GPUs";
    cases[3].w = make_work(&big, 4, 512, 8, 256, 8, 16);
    cases[3].w.model.experts = 8;
    cases[3].w.model.topk = 2;
    cases[3].cross = false;
    for (int i = 0; i < 4; i++) {
        pp_work *w = &cases[i].w;
        pp_error err = {0};
        pp_model_validate(&w->model, &err);
        pp_search_params p;
        pp_search_params_init(&p);
        p.top = PP_SEARCH_MAX_TOP;
        p.allow_cross_node_tp = cases[i].cross;
        pp_search_candidate *out = calloc(PP_SEARCH_MAX_TOP, sizeof *out);
        pp_search_result r;
        pp_status st = pp_search_run(w, &p, out, &r, &err);
        int64_t brute = brute_count(w, cases[i].cross);
        tap_ok(st == PP_OK && r.fitting == brute && r.n == brute,
               "%s: search keeps %lld layouts, brute force %lld", cases[i].name, (long long)r.fitting,
               (long long)brute);
        tap_ok(r.evaluated == sum_pruned(&r) + r.fitting && r.pruned[PP_PRUNE_OOM] == 0,
               "%s: funnel adds up (%lld = %lld pruned + %lld)", cases[i].name, (long long)r.evaluated,
               (long long)sum_pruned(&r), (long long)r.fitting);
        int bad = 0;
        for (int64_t k = 0; k < r.n; k++) {
            pp_layout l = out[k].layout;
            if (pp_layout_validate(w, &l, &err) != PP_OK) bad++;
            if (k && pp_search_better(&out[k], &out[k - 1])) bad++;
        }
        tap_ok(bad == 0, "%s: every candidate valid, best first", cases[i].name);
        free(out);
    }
}

static void test_ranking(const pp_gpu *a100)
{
    pp_work w = make_work(a100, 40, 5120, 40, 2048, 16, 1024); /* GPT-3 13B shape */
    pp_search_params p;
    pp_search_params_init(&p);
    p.top = 20;
    pp_search_candidate out[20];
    pp_search_result r;
    pp_error err = {0};
    pp_status st = pp_search_run(&w, &p, out, &r, &err);
    if (!tap_ok(st == PP_OK && r.n == 20, "13B/16: 20 candidates (%s)", err.msg)) return;
    int bad_time = 0, bad_mem = 0, bad_order = 0;
    for (int k = 0; k < r.n; k++) {
        pp_time_result t;
        pp_time_estimate(&w, &out[k].layout, &t, &err);
        if (fabs(t.step_time_s - out[k].time.step_time_s) > 1e-9 * t.step_time_s) bad_time++;
        double peak = 0, worst = pp_memory_worst_bytes(&w, &out[k].layout, &peak);
        if (worst != out[k].worst_bytes || peak != out[k].peak_bytes || !out[k].fits ||
            worst > w.gpu.memory_bytes)
            bad_mem++;
        if (k && out[k].time.step_time_s < out[k - 1].time.step_time_s * (1 - 1e-9)) bad_order++;
    }
    tap_ok(bad_time == 0, "candidate step times equal pp_time_estimate");
    tap_ok(bad_mem == 0, "candidate memory equals pp_memory_worst_bytes and fits");
    tap_ok(bad_order == 0, "ranked by step time");
    tap_ok(r.evaluated == sum_pruned(&r) + r.fitting, "funnel adds up");
    tap_ok(r.search_time_s > 0 && r.search_time_s < 5, "search time measured (%.2f ms)", r.search_time_s * 1e3);

    /* What a Megatron expert would sign for 13B on 2 nodes of 8 A100-80GB: TP inside the node
     * (2 or 4: 40 heads), at most 2 pipeline stages, the optimizer sharded over DP, model
     * FLOPs utilisation in the range A100s reach (40-70%). */
    const pp_layout *b = &out[0].layout;
    printf("# 13B/16 best: tp %lld pp %lld dp %lld vpp %lld mbs %lld dist-opt %d sp %d recompute %s, "
           "%.2f s, MFU %.3f\n",
           (long long)b->tp, (long long)b->pp, (long long)b->dp, (long long)b->vpp, (long long)b->mbs,
           b->dist_opt, b->sp, pp_recompute_names[b->recompute], out[0].time.step_time_s, out[0].time.mfu);
    tap_ok((b->tp == 2 || b->tp == 4) && b->pp <= 2 && b->dist_opt && b->cp == 1,
           "13B/16: TP 2-4 inside the node, PP <= 2, distributed optimizer");
    tap_ok(b->tp == 1 || b->sp, "13B/16: sequence parallel with TP");
    tap_ok(out[0].time.mfu > 0.40 && out[0].time.mfu < 0.75, "13B/16: MFU %.3f in 0.40-0.75", out[0].time.mfu);

    /* Shapes: one per (tp, pp, dp, cp, ep), best first, the first being #1's. */
    pp_search_candidate shapes[6];
    p.top = 5;
    p.shapes = shapes;
    p.shapes_cap = 6;
    pp_search_result r2;
    pp_search_run(&w, &p, out, &r2, &err);
    int dup = 0;
    for (int i = 0; i < r2.n_shapes; i++)
        for (int j = 0; j < i; j++)
            if (shapes[i].layout.tp == shapes[j].layout.tp && shapes[i].layout.pp == shapes[j].layout.pp &&
                shapes[i].layout.cp == shapes[j].layout.cp && shapes[i].layout.ep == shapes[j].layout.ep)
                dup++;
    tap_ok(r2.n_shapes == 6 && dup == 0 && shapes[0].time.step_time_s == out[0].time.step_time_s &&
               shapes[0].layout.tp == out[0].layout.tp && shapes[0].layout.pp == out[0].layout.pp,
           "shapes: %lld distinct, the first is #1's", (long long)r2.n_shapes);
}

static void test_fixed_and_topology(const pp_gpu *a100)
{
    pp_work w = make_work(a100, 40, 5120, 40, 2048, 16, 1024);
    pp_search_params p;
    pp_search_params_init(&p);
    p.top = 50;
    p.fixed = PP_SEARCH_FIX_TP | PP_SEARCH_FIX_RECOMPUTE;
    p.fixed_layout.tp = 4;
    p.fixed_layout.recompute = PP_RC_SELECTIVE;
    pp_search_candidate out[50];
    pp_search_result r, full;
    pp_error err = {0};
    pp_search_run(&w, &p, out, &r, &err);
    int bad = 0;
    for (int k = 0; k < r.n; k++) bad += out[k].layout.tp != 4 || out[k].layout.recompute != PP_RC_SELECTIVE;
    tap_ok(r.n > 0 && bad == 0, "--tp 4 --recompute selective fixed: every candidate has them");
    pp_search_params_init(&p);
    p.top = 1;
    pp_search_run(&w, &p, out, &full, &err);
    tap_ok(r.evaluated * 5 * 3 == full.evaluated, "fixing tp (5 values) and recompute (3) shrinks the space 15x (%lld vs %lld)",
           (long long)r.evaluated, (long long)full.evaluated);

    /* TP across nodes: off by default; allowed, it is searched and loses to TP inside a node. */
    pp_work w2 = make_work(a100, 32, 8192, 64, 2048, 32, 256);
    pp_search_params_init(&p);
    p.top = 1;
    p.fixed = PP_SEARCH_FIX_TP;
    p.fixed_layout.tp = 16;
    pp_search_run(&w2, &p, out, &r, &err);
    tap_ok(r.fitting == 0 && r.pruned[PP_PRUNE_TP_NODE] == r.evaluated,
           "tp 16 on 8-GPU nodes: pruned as tp_cross_node (%lld)", (long long)r.pruned[PP_PRUNE_TP_NODE]);
    p.allow_cross_node_tp = true;
    pp_search_run(&w2, &p, out, &r, &err);
    double t16 = r.n ? out[0].time.step_time_s : NAN, tp16_comm = r.n ? out[0].time.tp_comm_s : NAN;
    p.fixed_layout.tp = 8;
    pp_search_run(&w2, &p, out, &r, &err);
    double t8 = r.n ? out[0].time.step_time_s : NAN, tp8_comm = r.n ? out[0].time.tp_comm_s : NAN;
    tap_ok(t16 > t8 && tp16_comm > 1.5 * tp8_comm,
           "allowed, cross-node tp 16 is slower: best %.2f s (TP %.2f s) vs tp 8 %.2f s (TP %.2f s)", t16,
           tp16_comm, t8, tp8_comm);
}

static void test_none_fit_and_errors(const pp_gpu *a100)
{
    pp_work w = make_work(a100, 96, 12288, 96, 2048, 8, 64); /* 175B on 8 GPUs: cannot fit */
    pp_search_params p;
    pp_search_params_init(&p);
    p.top = 3;
    pp_search_candidate out[3];
    pp_search_result r;
    pp_error err = {0};
    pp_status st = pp_search_run(&w, &p, out, &r, &err);
    tap_ok(st == PP_OK && r.none_fit && r.fitting == 0 && r.n == 3 && !out[0].fits &&
               out[0].worst_bytes <= out[1].worst_bytes && out[0].worst_bytes > w.gpu.memory_bytes,
           "175B on 8 GPUs: nothing fits; the 3 closest, smallest first (%.0f GiB)",
           out[0].worst_bytes / 1073741824.0);
    tap_ok(r.pruned[PP_PRUNE_OOM] > 0 && r.evaluated == sum_pruned(&r), "all pruned, %lld for memory",
           (long long)r.pruned[PP_PRUNE_OOM]);

    p.top = 0;
    tap_ok(pp_search_run(&w, &p, out, &r, &err) == PP_ERR_INPUT, "top 0 is bad input (%s)", err.msg);
    p.top = 3;
    p.fixed = PP_SEARCH_FIX_ZERO;
    p.fixed_layout.zero = 2;
    tap_ok(pp_search_run(&w, &p, out, &r, &err) == PP_ERR_INPUT && strstr(err.msg, "--zero"),
           "--zero with megatron is bad input (%s)", err.msg);
}

int main(void)
{
    pp_gpu a100;
    if (tt_gpu("a100-80gb", &a100)) {
        tap_ok(0, "catalog GPU a100-80gb");
        return tap_done();
    }
    test_rules_vs_brute(&a100);
    test_ranking(&a100);
    test_fixed_and_topology(&a100);
    test_none_fit_and_errors(&a100);
    return tap_done();
}
