/* demo_report: a report page from synthetic data, to look at the charts (render.sh) until plan
 * and check produce real ones, and to stress the layout: many stages, OOM, long hostile names.
 *
 *   demo_report OUT.html [--stages N] [--oom] [--points N] [--name MODEL] [--layouts N] [--page plan|check]
 *
 * --page writes the whole page of `parplan plan|check --report` (pp_report_write_page) from the
 * same data; without it the sections are called one by one.
 *
 * The numbers are made up but shaped like a 1F1B pipeline: stage i holds (pp - i) micro-batches
 * of activations, the first stage carries the embedding and the last the output layer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

static unsigned long long demo_rng = 88172645463325252ULL;
/* xorshift64: deterministic, so the page is the same on every run. */
static double demo_uniform(void)
{
    demo_rng ^= demo_rng << 13;
    demo_rng ^= demo_rng >> 7;
    demo_rng ^= demo_rng << 17;
    return (double)(demo_rng >> 11) / 9007199254740992.0;
}

#define GIB 1073741824.0

/* Best first: faster, then roomier. */
static int cand_cmp(const void *a, const void *b)
{
    const pp_search_candidate *p = a, *q = b;
    if (p->time.step_time_s != q->time.step_time_s) return p->time.step_time_s < q->time.step_time_s ? -1 : 1;
    return p->headroom_bytes > q->headroom_bytes ? -1 : p->headroom_bytes < q->headroom_bytes;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *name = "gpt3-175b", *page = NULL;
    int n_stages = 8, n_points = 400, n_layouts = 5;
    int oom = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--stages") && i + 1 < argc) n_stages = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--points") && i + 1 < argc) n_points = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--layouts") && i + 1 < argc) n_layouts = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--name") && i + 1 < argc) name = argv[++i];
        else if (!strcmp(argv[i], "--oom")) oom = 1;
        else if (!strcmp(argv[i], "--page") && i + 1 < argc && (!strcmp(argv[i + 1], "plan") || !strcmp(argv[i + 1], "check")))
            page = argv[++i];
        else if (argv[i][0] != '-' && !path) path = argv[i];
        else {
            fprintf(stderr, "usage: demo_report OUT.html [--stages N] [--oom] [--points N] [--name MODEL] [--layouts N] [--page plan|check]\n");
            return 2;
        }
    }
    if (!path || n_stages < 1 || n_stages > PP_MAX_STAGES || n_points < 0 || n_layouts < 1 || n_layouts > 64) {
        fprintf(stderr, "usage: demo_report OUT.html [--stages 1..%d] [--oom] [--points N] [--name MODEL] [--layouts 1..64]\n",
                PP_MAX_STAGES);
        return 2;
    }
    int layers = 96;
    /* Memory: tp 8, pp n_stages, dist-opt over dp 16, selective recompute. */
    static pp_mem_result mem;
    memset(&mem, 0, sizeof mem);
    mem.n_stages = n_stages;
    mem.capacity_bytes = 80.0 * GIB;
    mem.fits = true;
    double per_layer_w = 175e9 / 96 / 8 * 2; /* bf16 weights of one layer on one TP rank */
    for (int s = 0; s < n_stages; s++) {
        pp_mem_stage *st = &mem.stages[s];
        st->stage = s;
        st->layers = layers / n_stages + (s < layers % n_stages);
        st->inflight = n_stages - s;
        double extra_w = (s == 0 || s == n_stages - 1) ? 51200.0 * 12288 / 8 * 2 : 0; /* embedding / output */
        st->weights_bytes = st->layers * per_layer_w + extra_w;
        st->grads_bytes = 2 * st->weights_bytes;             /* fp32 main grads */
        st->optimizer_bytes = 6 * st->weights_bytes / 16;    /* 12 bytes/param over dp 16 */
        /* Stage 0 holds about 40 GiB (90 GiB with --oom); later stages less, as 1F1B holds fewer. */
        st->activations_bytes = (oom ? 90.0 : 40.0) * GIB * st->inflight / n_stages * st->layers /
                                ((double)layers / n_stages);
        st->transient_bytes = (s == n_stages - 1 ? 3.1 : 1.2) * GIB;
        st->reserved_bytes = 3.5 * GIB;
        st->peak_bytes = st->weights_bytes + st->grads_bytes + st->optimizer_bytes + st->activations_bytes +
                         st->transient_bytes;
        st->fits = st->peak_bytes + st->reserved_bytes <= mem.capacity_bytes;
        if (!st->fits) mem.fits = false;
        if (st->peak_bytes > mem.peak_bytes) mem.peak_bytes = st->peak_bytes, mem.largest_stage = s;
    }
    if (!mem.fits)
        snprintf(mem.why, sizeof mem.why,
                 "Stage 0 holds %d micro-batches of activations: --recompute full or --pp %d would fit.", n_stages,
                 n_stages * 2);

    /* Candidates: throughput falls as headroom grows (more recompute, more sharding). */
    pp_report_point *pts = calloc((size_t)(n_points ? n_points : 1), sizeof *pts);
    char (*plabels)[64] = calloc((size_t)(n_points ? n_points : 1), sizeof *plabels);
    if (!pts || !plabels) return 1;
    int chosen = -1;
    double best = -1;
    for (int i = 0; i < n_points; i++) {
        double room = -4 + 60 * pow(demo_uniform(), 1.3);
        double thr = 105 - 0.9 * room - 38 * demo_uniform() * demo_uniform();
        pts[i].headroom_bytes = room * GIB;
        pts[i].samples_per_s = thr;
        snprintf(plabels[i], sizeof plabels[i], "tp%d pp%d dp%d mbs%d%s", 1 << (i % 4), 1 << (i % 5),
                 1024 / ((1 << (i % 4)) * (1 << (i % 5))), 1 + i % 3, i % 2 ? " selective" : " full");
        pts[i].label = plabels[i];
        if (room >= 4 && thr > best) best = thr, chosen = i;
    }

    /* Funnel. */
    const char *fnames[] = {"enumerated", "divisibility rules", "TP inside a node", "fits in memory",
                            "within 15% of the best", "shown (--top 5)"};
    int64_t fcounts[] = {48384, 12672, 6336, 1530, 214, 5};

    /* Step breakdown of the best layouts. */
    pp_time_result *t = calloc((size_t)n_layouts, sizeof *t);
    char (*tl)[64] = calloc((size_t)n_layouts, sizeof *tl);
    const char **tlabels = calloc((size_t)n_layouts, sizeof *tlabels);
    if (!t || !tl || !tlabels) return 1;
    for (int i = 0; i < n_layouts; i++) {
        pp_time_result *x = &t[i];
        x->compute_s = 11.8 + 0.35 * i;
        x->recompute_s = i % 2 ? 0.9 : 0.25;
        x->tp_comm_s = 1.6 + 0.2 * (i % 3);
        x->cp_comm_s = 0;
        x->pp_comm_s = 0.18;
        x->bubble_s = 1.4 / (1 + (i % 2));
        x->dp_comm_s = 0.35 + 0.1 * i;
        x->optimizer_s = 0.12;
        x->step_time_s = x->compute_s + x->recompute_s + x->tp_comm_s + x->pp_comm_s + x->bubble_s + x->dp_comm_s +
                         x->optimizer_s;
        if (i == 2) x->step_time_s -= 0.3; /* overlap: the step mark shows */
        if (i == 3) x->step_time_s += 0.8; /* unaccounted: "other" */
        x->samples_per_s = 1536 / x->step_time_s;
        x->tokens_per_s = x->samples_per_s * 2048;
        x->model_flops = 72.0 * 1536 * 96 * 2048 * 12288.0 * 12288 * (1 + 2048 / (6 * 12288.0) + 51200 / (12 * 96 * 12288.0));
        x->model_tflops_per_gpu = x->model_flops / x->step_time_s / 1024 / 1e12;
        x->mfu = x->model_tflops_per_gpu / 312;
        pp_layout l;
        pp_layout_init(&l);
        l.tp = 8;
        l.pp = i % 2 ? 16 : 8;
        l.dp = 1024 / (l.tp * l.pp);
        l.vpp = i == 1 ? 2 : 1;
        l.mbs = 1 + (i % 2);
        l.dist_opt = true;
        l.sp = true;
        l.recompute = i % 2 ? PP_RC_FULL : PP_RC_SELECTIVE;
        pp_layout_label(&l, tl[i], sizeof tl[i]);
        tlabels[i] = tl[i];
    }

    /* The work, for the launch script of the best layout (as `parplan launch --format megatron`
     * writes it) and for --page. */
    pp_work w;
    memset(&w, 0, sizeof w);
    snprintf(w.model.name, sizeof w.model.name, "%s", name);
    w.model.layers = 96, w.model.hidden = 12288, w.model.heads = 96, w.model.kv_heads = 96;
    w.model.head_dim = 128, w.model.ffn = 4 * 12288, w.model.vocab = 51200, w.model.seq = 2048;
    w.model.bias = w.model.tied = true;
    snprintf(w.gpu.name, sizeof w.gpu.name, "a100-80gb");
    snprintf(w.gpu.full_name, sizeof w.gpu.full_name, "NVIDIA A100-SXM4-80GB");
    w.gpu.memory_bytes = 80 * GIB;
    w.gpu.gpus_per_node = 8;
    w.gpus = 1024, w.gpus_per_node = 8, w.gbs = 1536;
    pp_layout best_l;
    pp_layout_init(&best_l);
    best_l.tp = 8, best_l.pp = n_stages, best_l.dp = 1024 / (8 * n_stages), best_l.mbs = 1;
    best_l.dist_opt = true, best_l.sp = true, best_l.recompute = PP_RC_SELECTIVE;
    pp_error err = {0};
    int rc = 0;

    if (page) {
        /* The page `plan --report` / `check --report` writes, from the same data. */
        pp_search_candidate *cand = calloc((size_t)(n_points ? n_points : 1), sizeof *cand);
        if (!cand) return 1;
        int nc = 0;
        for (int i = 0; i < n_points; i++) {
            pp_search_candidate *c = &cand[nc++];
            pp_layout_init(&c->layout);
            c->layout.tp = 1 << (i % 4), c->layout.pp = 1 << (i % 5), c->layout.mbs = 1 + i % 3;
            c->layout.dp = 1024 / (c->layout.tp * c->layout.pp);
            c->layout.recompute = i % 2 ? PP_RC_SELECTIVE : PP_RC_FULL;
            c->layout.dist_opt = true;
            c->headroom_bytes = pts[i].headroom_bytes;
            c->worst_bytes = mem.capacity_bytes - c->headroom_bytes;
            c->peak_bytes = c->worst_bytes - 3.5 * GIB;
            c->fits = c->headroom_bytes >= 0;
            c->time = t[i % n_layouts];
            c->time.step_time_s = 1536 / pts[i].samples_per_s;
            double k = c->time.step_time_s / t[i % n_layouts].step_time_s;
            c->time.compute_s *= k, c->time.recompute_s *= k, c->time.tp_comm_s *= k, c->time.pp_comm_s *= k;
            c->time.bubble_s *= k, c->time.dp_comm_s *= k, c->time.optimizer_s *= k;
            c->time.samples_per_s = pts[i].samples_per_s;
            c->time.tokens_per_s = c->time.samples_per_s * 2048;
            c->time.model_tflops_per_gpu = t[0].model_flops / c->time.step_time_s / 1024 / 1e12;
            c->time.mfu = c->time.model_tflops_per_gpu / 312;
            if (!c->fits) nc--; /* the search drops what does not fit */
        }
        qsort(cand, (size_t)nc, sizeof *cand, cand_cmp);
        pp_search_result res;
        memset(&res, 0, sizeof res);
        res.evaluated = 48384;
        res.pruned[PP_PRUNE_GPUS] = 35712;
        res.pruned[PP_PRUNE_TP_NODE] = 6336;
        res.pruned[PP_PRUNE_GBS] = 1200;
        res.pruned[PP_PRUNE_OOM] = 5136 - nc;
        res.fitting = nc;
        res.n = nc;
        res.search_time_s = 0.42;
        pp_report_page pg = {.work = &w, .mem = &mem, .launch_format = -1};
        if (!strcmp(page, "plan")) {
            pg.cand = cand, pg.n_cand = nc, pg.search = &res, pg.top = 5;
        } else {
            pg.layout = &best_l, pg.time = &t[0];
        }
        if (pp_report_write_page(path, page, &pg, &err) != PP_OK) {
            fprintf(stderr, "demo_report: %s (%s)\n", err.msg, err.file);
            rc = 1;
        }
        free(cand);
        goto done;
    }

    char title[256];
    snprintf(title, sizeof title, "parplan plan: %s on 1024 x a100-80gb", name);
    pp_report r;
    if (pp_report_open(&r, path, title, &err) != PP_OK) {
        fprintf(stderr, "demo_report: %s (%s)\n", err.msg, err.file);
        return 1;
    }
    char step_s[64], thr_s[64], mfu_s[64];
    snprintf(step_s, sizeof step_s, "%.2f s", t[0].step_time_s);
    snprintf(thr_s, sizeof thr_s, "%.1f samples/s (%.0f tokens/s)", t[0].samples_per_s, t[0].tokens_per_s);
    snprintf(mfu_s, sizeof mfu_s, "%.1f%% (%.0f TFLOP/s per GPU)", 100 * t[0].mfu, t[0].model_tflops_per_gpu);
    const char *keys[] = {"model", "GPU", "cluster", "global batch", "framework", "best layout", "step time",
                          "throughput", "MFU", "memory"};
    const char *vals[] = {name, "a100-80gb (NVIDIA A100-SXM4-80GB, 80 GiB)", "1024 GPUs, 128 nodes of 8",
                          "1536 sequences of 2048 tokens", "megatron", tlabels[0], step_s, thr_s, mfu_s,
                          mem.fits ? "fits on every stage" : "does not fit"};
    pp_report_summary(&r, "Summary", keys, vals, 10);
    pp_report_memory_stages(&r, &mem, "a100-80gb");
    pp_report_candidates(&r, pts, n_points, chosen);
    pp_report_funnel(&r, fnames, NULL, fcounts, 6);
    pp_report_step_breakdown(&r, tlabels, t, n_layouts);
    pp_launch_params lp;
    pp_launch_params_init(&lp);
    lp.work = &w;
    lp.layout = &best_l;
    lp.peak_bytes = mem.peak_bytes;
    lp.reserved_bytes = mem.stages[0].reserved_bytes;
    lp.capacity_bytes = mem.capacity_bytes;
    lp.step_time_s = t[0].step_time_s;
    lp.samples_per_s = t[0].samples_per_s;
    pp_report_launch(&r, PP_LAUNCH_MEGATRON, &lp);
    if (pp_report_close(&r, &err) != PP_OK) {
        fprintf(stderr, "demo_report: %s (%s)\n", err.msg, err.file);
        rc = 1;
    }
done:
    free(pts);
    free(plabels);
    free(t);
    free(tl);
    free(tlabels);
    return rc;
}
