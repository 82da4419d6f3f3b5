/* Unit tests of the step-time model (planner/cost/time.c):
 *   - its building blocks against the anchors measured on the lent GPUs
 *     (tests/data/anchors: H100 GEMMs at transformer shapes, GPT layer forward/backward,
 *     2 x H200 NCCL bus bandwidth), with the catalog's constants;
 *   - the published formulas it must reproduce exactly (model and hardware FLOPs);
 *   - the structure of a step: bubble (p-1)/m and (p-1)/(vm), recompute, DP overlap, sharded
 *     optimizer, TP across nodes, terms adding up, finite figures at 1e15 parameters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_profile.h"
#include "pp_time.h"
#include "tap.h"
#include "time_test.h"

/* ------------------------------------------------------------------ anchors (JSON lines) */

/* The number after "key": in a one-line JSON object; NAN when absent. */
static double jl_num(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p) return NAN;
    return strtod(p + strlen(pat), NULL);
}

static bool jl_is(const char *line, const char *key, const char *value)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\": \"%s\"", key, value);
    return strstr(line, pat) != NULL;
}

static FILE *anchors_open(const char *name)
{
    const char *dir = getenv("PARPLAN_DATA_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/anchors/%s", dir ? dir : "tests/data", name);
    FILE *f = fopen(path, "r");
    if (!f) printf("# cannot open %s\n", path);
    return f;
}

/* The anchors time each shape for a few milliseconds in a sweep that starts on a cool GPU: the
 * short-sweep fraction of the model (GEMM_SUSTAINED, 0.95), not the entry's training figure
 * (gemm_sustained, which test_sustained checks against the sweeps' last, h 8192, rows). */
static pp_gpu short_sweep(const pp_gpu *g)
{
    pp_gpu s = *g;
    s.gemm_sustained = 0;
    return s;
}

static void test_gemm_anchors(const pp_gpu *h100)
{
    FILE *f = anchors_open("h100_torch.jsonl");
    if (!tap_ok(f != NULL, "read h100_torch.jsonl")) return;
    pp_work w = {0};
    w.gpu = short_sweep(h100);
    tt_gpt(&w.model, 1, 1024, 8, 1024, 1024);
    w.gpus = w.gpus_per_node = w.gbs = 1;
    pp_time_ctx c;
    pp_time_ctx_init(&c, &w, NULL);
    char line[1024];
    double sum = 0, worst = 0;
    int n = 0, outliers = 0;
    while (fgets(line, sizeof line, f)) {
        if (!jl_is(line, "kind", "gemm_shape")) continue;
        double m = jl_num(line, "m"), nn = jl_num(line, "n"), k = jl_num(line, "k");
        double meas = jl_num(line, "tflops");
        double pred = pp_time_gemm_rate(&c, m, nn, k) / 1e12;
        double e = (pred - meas) / meas;
        /* The three h 2048 / tp 8 rows below 150 TFLOP/s (a twice larger GEMM ran at 700):
         * measurement outliers, reported but not scored. */
        bool outlier = meas < 150;
        printf("# gemm %6.0f x %6.0f x %6.0f  predicted %6.1f measured %6.1f TFLOP/s  %+6.1f%%%s\n", m, nn, k,
               pred, meas, 100 * e, outlier ? "  (outlier, not scored)" : "");
        if (outlier) {
            outliers++;
            continue;
        }
        sum += fabs(e);
        if (fabs(e) > worst) worst = fabs(e);
        n++;
    }
    fclose(f);
    double mape = n ? sum / n : NAN;
    printf("# GEMM curve vs anchors: MAPE %.1f%%, worst %.1f%% over %d shapes (%d outliers)\n", 100 * mape,
           100 * worst, n, outliers);
    tap_ok(n == 61 && outliers == 3, "61 scored GEMM shapes, 3 outliers (got %d, %d)", n, outliers);
    tap_ok(mape <= 0.07, "GEMM efficiency curve: MAPE %.1f%% <= 7%% on the H100 anchors", 100 * mape);
    tap_ok(worst <= 0.20, "GEMM efficiency curve: worst shape %.1f%% <= 20%%", 100 * worst);
    /* Shape dependence: a small-k GEMM is slower than a square one. */
    tap_ok(pp_time_gemm_rate(&c, 4096, 4096, 512) < 0.8 * pp_time_gemm_rate(&c, 8192, 8192, 8192),
           "k = 512 runs well below the large-GEMM rate");
    tap_near(pp_time_gemm_rate(&c, 8192, 8192, 8192), 0.95 * h100->gemm_eff * h100->peak_flops[PP_DT_BF16],
             1e-9, "short sweep: 8192^3 runs at 0.95 of the catalog's gemm_eff");
}

static void test_layer_anchors(const pp_gpu *h100)
{
    FILE *f = anchors_open("h100_torch.jsonl");
    if (!tap_ok(f != NULL, "read h100_torch.jsonl")) return;
    char line[1024];
    double sum = 0;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (!jl_is(line, "kind", "layer")) continue;
        pp_work w = {0};
        w.gpu = short_sweep(h100);
        tt_gpt(&w.model, 1, (int64_t)jl_num(line, "h"), (int64_t)jl_num(line, "heads"),
               (int64_t)jl_num(line, "seq"), 50304);
        w.gpus = w.gpus_per_node = 1;
        w.gbs = (int64_t)jl_num(line, "mbs");
        w.attention = PP_ATTN_FLASH;
        pp_layout l;
        pp_layout_init(&l);
        l.mbs = w.gbs;
        l.dp = 1;
        /* The anchors' block: PyTorch SDPA flash (FlashAttention-2; on H100 about 0.42 of cuBLAS
         * forward and 0.27 backward, Dao 2023 fig. 7), no dropout, bf16 weights with fresh bf16
         * gradients (no fp32 accumulation buffer). */
        pp_time_opts o;
        pp_time_opts_default(&w, &o);
        o.flash_fwd_eff = 0.42;
        o.flash_bwd_eff = 0.27;
        o.dropout = false;
        o.grad_accum_bytes = 2.0; /* the bf16 gradient written once */
        pp_time_ctx c;
        pp_time_ctx_init(&c, &w, &o);
        pp_time_layer ly;
        pp_time_layer_get(&c, &l, &ly);
        double fwd = ly.fwd_compute_s * 1e3, fb = (ly.fwd_compute_s + ly.bwd_compute_s) * 1e3;
        double mf = jl_num(line, "fwd_ms"), mfb = jl_num(line, "fwdbwd_ms");
        double e1 = (fwd - mf) / mf, e2 = (fb - mfb) / mfb;
        printf("# layer h %5.0f mbs %2.0f  fwd %.3f vs %.3f ms (%+.1f%%)  fwd+bwd %.3f vs %.3f ms (%+.1f%%)\n",
               jl_num(line, "h"), jl_num(line, "mbs"), fwd, mf, 100 * e1, fb, mfb, 100 * e2);
        tap_ok(fabs(e1) <= 0.15 && fabs(e2) <= 0.15, "layer h %.0f: forward and forward+backward within 15%%",
               jl_num(line, "h"));
        sum += fabs(e1) + fabs(e2);
        n += 2;
    }
    fclose(f);
    double mape = n ? sum / n : NAN;
    printf("# GPT layer vs anchors: MAPE %.1f%% over %d values\n", 100 * mape, n);
    tap_ok(n == 10 && mape <= 0.08, "GPT layer times: MAPE %.1f%% <= 8%%", 100 * mape);
}

/* The entry's training rate (gemm_sustained) against the sweeps it comes from: the h 8192
 * transformer GEMMs (4096 tokens, TP 1-8), measured last in each sweep with the GPU at its power
 * cap, over the model's rate at gemm_sustained 1 (gemm_eff x peak on the shape curve). Four
 * sweeps: the anchors (PyTorch, lent H100), probe call 6 on the lent H100 (PyTorch in the same call,
 * tests/data/profiles/h100-sxm.torch.jsonl, and parplan-probe, h100-sxm.yaml) and probe call 4 on the
 * lent H200 (h200.yaml). probes/NOTES.md has the calls; docs/time-model.md the rest of the evidence. */
static double sweep_jsonl(const pp_time_ctx *c, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NAN;
    char line[1024];
    double sum = 0;
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (jl_is(line, "kind", "gemm_shape") && jl_num(line, "h") == 8192) {
            double m = jl_num(line, "m"), nn = jl_num(line, "n"), k = jl_num(line, "k");
            sum += jl_num(line, "tflops") * 1e12 / pp_time_gemm_rate(c, m, nn, k);
            n++;
        }
    fclose(f);
    return n == 16 ? sum / n : NAN;
}

/* A probe profile's transformer shapes are its 64 bf16 rows from h 2048's TP 1 qkv (4096 x 6144 x
 * 2048) on, h 2048, 4096, 5120, 8192 in that order (16 each, TP 1, 2, 4, 8 x qkv, proj, fc1,
 * fc2; the squares come before them): the last 16 are h 8192. */
static double sweep_profile(const pp_time_ctx *c, const char *path)
{
    pp_profile p;
    pp_error err;
    memset(&p, 0, sizeof p);
    if (pp_profile_load_file(&p, path, &err)) return NAN;
    const pp_prof_gemm *rows[64];
    int n = 0;
    int first = p.n_gemm;
    for (int i = 0; i < p.n_gemm && first == p.n_gemm; i++)
        if (p.gemm[i].dtype == PP_DT_BF16 && p.gemm[i].m == 4096 && p.gemm[i].n == 6144 && p.gemm[i].k == 2048) first = i;
    for (int i = first; i < p.n_gemm; i++)
        if (p.gemm[i].dtype == PP_DT_BF16 && p.gemm[i].m == 4096 && n < 64) rows[n++] = &p.gemm[i];
    double sum = 0;
    bool ok = n == 64 && rows[48]->n == 24576 && rows[48]->k == 8192; /* h 8192, TP 1, qkv */
    for (int i = 48; ok && i < 64; i++)
        sum += rows[i]->tflops * 1e12 / pp_time_gemm_rate(c, (double)rows[i]->m, (double)rows[i]->n, (double)rows[i]->k);
    pp_profile_free(&p);
    return ok ? sum / 16 : NAN;
}

static void test_sustained(const pp_gpu *h100)
{
    pp_gpu h200;
    if (!tap_ok(tt_gpu("h200", &h200) == 0, "catalog GPU h200")) return;
    const char *dir = getenv("PARPLAN_DATA_DIR");
    if (!dir) dir = "tests/data";
    char path[3][1024];
    snprintf(path[0], sizeof path[0], "%s/anchors/h100_torch.jsonl", dir);
    snprintf(path[1], sizeof path[1], "%s/profiles/h100-sxm.torch.jsonl", dir);
    snprintf(path[2], sizeof path[2], "%s/profiles/h100-sxm.yaml", dir);
    char h200_path[1024];
    snprintf(h200_path, sizeof h200_path, "%s/profiles/h200.yaml", dir);
    pp_time_ctx c100, c200;
    pp_work w = {0};
    tt_gpt(&w.model, 1, 1024, 8, 1024, 1024);
    w.gpus = w.gpus_per_node = w.gbs = 1;
    w.gpu = *h100;
    w.gpu.gemm_sustained = 1.0;
    pp_time_ctx_init(&c100, &w, NULL);
    w.gpu = h200;
    w.gpu.gemm_sustained = 1.0;
    pp_time_ctx_init(&c200, &w, NULL);
    double f[4] = {sweep_jsonl(&c100, path[0]), sweep_jsonl(&c100, path[1]), sweep_profile(&c100, path[2]),
                   sweep_profile(&c200, h200_path)};
    static const char *const what[4] = {"anchors (H100)", "PyTorch, probe call 6 (H100)", "parplan-probe, call 6 (H100)",
                                         "parplan-probe, call 4 (H200)"};
    double mean = 0;
    bool all = true;
    for (int i = 0; i < 4; i++) {
        tap_diag("h 8192 GEMMs, %-30s %.3f of gemm_eff x peak", what[i], f[i]);
        all &= isfinite(f[i]) && f[i] > 0.8 && f[i] < 0.95;
        mean += f[i] / 4;
    }
    tap_ok(all, "four sweeps' h 8192 rows read, each between 0.80 and 0.95 of gemm_eff x peak");
    tap_near(h100->gemm_sustained, mean, 0.01, "h100-sxm gemm_sustained %.2f: the sweeps' mean %.3f",
             h100->gemm_sustained, mean);
    tap_ok(h200.gemm_sustained == h100->gemm_sustained, "h200 states the H100 SXM's figure (same die, same 700 W)");
    /* what the training figure does: 8192^3 at gemm_sustained x gemm_eff x peak */
    w.gpu = *h100;
    pp_time_ctx c;
    pp_time_ctx_init(&c, &w, NULL);
    tap_near(pp_time_gemm_rate(&c, 8192, 8192, 8192), h100->gemm_sustained * h100->gemm_eff * h100->peak_flops[PP_DT_BF16],
             1e-9, "8192^3 in a training run: gemm_sustained x gemm_eff x peak");
}

static void test_nccl_anchors(void)
{
    pp_gpu h200;
    if (!tap_ok(tt_gpu("h200", &h200) == 0, "catalog GPU h200")) return;
    FILE *f = anchors_open("h200x2_torch_nccl.jsonl");
    if (!tap_ok(f != NULL, "read h200x2_torch_nccl.jsonl")) return;
    pp_work w = {0};
    w.gpu = h200;
    tt_gpt(&w.model, 1, 1024, 8, 1024, 1024);
    w.gpus = w.gpus_per_node = 2;
    w.gbs = 2;
    pp_time_ctx c;
    pp_time_ctx_init(&c, &w, NULL);
    char line[1024];
    double sum = 0;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        pp_time_coll op;
        if (jl_is(line, "op", "all_reduce")) op = PP_TC_ALL_REDUCE;
        else if (jl_is(line, "op", "all_gather")) op = PP_TC_ALL_GATHER;
        else if (jl_is(line, "op", "reduce_scatter")) op = PP_TC_REDUCE_SCATTER;
        else if (jl_is(line, "op", "sendrecv")) op = PP_TC_SENDRECV;
        else continue;
        double bytes = jl_num(line, "bytes"), us = jl_num(line, "us");
        double pred = pp_time_collective_s(&c, op, 2, 2, bytes) * 1e6;
        double e = (pred - us) / us;
        bool scored = bytes >= 64.0 * 1048576;
        printf("# nccl %-14s %11.0f B  predicted %8.1f us measured %8.1f us  %+6.1f%%%s\n",
               op == PP_TC_ALL_REDUCE ? "all_reduce" : op == PP_TC_ALL_GATHER ? "all_gather"
               : op == PP_TC_REDUCE_SCATTER ? "reduce_scatter" : "sendrecv",
               bytes, pred, us, 100 * e, scored ? "" : "  (latency-bound size, not scored)");
        if (scored) {
            sum += fabs(e);
            n++;
        }
    }
    fclose(f);
    double mape = n ? sum / n : NAN;
    printf("# NCCL over NVLink (2 x H200), >= 64 MiB: MAPE %.1f%% over %d\n", 100 * mape, n);
    tap_ok(n >= 8 && mape <= 0.20, "collectives >= 64 MiB: MAPE %.1f%% <= 20%%", 100 * mape);
}

/* ------------------------------------------------------------------ formulas */

static void test_flops(void)
{
    pp_model m;
    tt_gpt(&m, 96, 12288, 96, 2048, 51200); /* GPT-3 175B */
    double B = 1536, s = 2048, L = 96, h = 12288, V = 51200;
    double model = 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));
    double hw = 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h));
    tap_near(pp_model_flops_per_step(&m, 1536), model, 1e-12, "model FLOPs = Korthikanti eq. 7");
    tap_near(pp_hardware_flops_per_step(&m, 1536, PP_RC_FULL), hw, 1e-12,
             "hardware FLOPs with full recompute = SC'21 eq. 3");
    tap_ok(pp_hardware_flops_per_step(&m, 1536, PP_RC_SELECTIVE) > model &&
               pp_hardware_flops_per_step(&m, 1536, PP_RC_SELECTIVE) < hw,
           "selective recompute: between model and full-recompute FLOPs");
    /* GQA + SwiGLU: 6 x (matmul params) x tokens + attention. */
    pp_model l;
    pp_model_init(&l);
    l.layers = 32;
    l.hidden = 4096;
    l.heads = 32;
    l.kv_heads = 8;
    l.seq = 8192;
    l.vocab = 128256;
    l.act = PP_ACT_SWIGLU;
    l.ffn = 14336;
    l.pos = PP_POS_ROPE;
    pp_error err = {0};
    pp_model_validate(&l, &err);
    double per_tok = 32 * (2 * (4096.0 * (4096 + 2 * 1024) + 4096.0 * 4096 + 3 * 4096.0 * 14336) +
                           4 * 8192.0 * 4096) + 2 * 4096.0 * 128256;
    tap_near(pp_model_flops_per_step(&l, 4), 3 * per_tok * 4 * 8192, 1e-12,
             "model FLOPs of a GQA/SwiGLU model (Llama-3-8B shape)");
}

/* ------------------------------------------------------------------ structure */

static pp_work gpt_work(const pp_gpu *g, int64_t L, int64_t h, int64_t a, int64_t gpus, int64_t gbs)
{
    pp_work w = {0};
    w.gpu = *g;
    tt_gpt(&w.model, L, h, a, 2048, 51200);
    w.gpus = gpus;
    w.gpus_per_node = 8;
    w.gbs = gbs;
    w.attention = PP_ATTN_FLASH;
    return w;
}

static pp_time_result step(const pp_work *w, pp_layout l, const pp_time_opts *o)
{
    pp_time_result r;
    memset(&r, 0, sizeof r);
    pp_error err = {0};
    if (pp_layout_validate(w, &l, &err) != PP_OK) {
        printf("# layout: %s\n", err.msg);
        r.step_time_s = NAN;
        return r;
    }
    pp_status st = o ? pp_time_estimate_opts(w, &l, o, &r, &err) : pp_time_estimate(w, &l, &r, &err);
    if (st != PP_OK) {
        printf("# time: %s\n", err.msg);
        r.step_time_s = NAN;
    }
    return r;
}

static double terms_sum(const pp_time_result *r)
{
    return r->compute_s + r->recompute_s + r->tp_comm_s + r->cp_comm_s + r->ep_comm_s + r->pp_comm_s +
           r->bubble_s + r->dp_comm_s + r->zero_gather_s + r->optimizer_s + r->offload_s + r->host_s;
}

static void test_structure(const pp_gpu *a100)
{
    /* 175B on 64 GPUs, tp 8 pp 8: the bubble is (p-1)/m of the pipeline's work. */
    pp_work w = gpt_work(a100, 96, 12288, 96, 64, 64);
    pp_layout l;
    pp_layout_init(&l);
    l.tp = 8;
    l.pp = 8;
    l.mbs = 1;
    l.sp = true;
    pp_time_result r = step(&w, l, NULL);
    double work = r.compute_s + r.recompute_s + r.tp_comm_s;
    tap_near(r.bubble_s / work, 7.0 / 64, 0.10, "1F1B bubble = (p-1)/m of the stage work");
    tap_near(terms_sum(&r), r.step_time_s, 1e-9, "the terms add up to the step time");
    l.vpp = 3;
    pp_time_result ri = step(&w, l, NULL);
    tap_near(ri.bubble_s / work, 7.0 / (3 * 64), 0.10, "interleaved bubble = (p-1)/(v m)");
    tap_ok(ri.step_time_s < r.step_time_s, "interleaving shortens the step (%.3f < %.3f s)", ri.step_time_s,
           r.step_time_s);

    /* Recompute: full adds about one forward per layer; selective much less. */
    l.vpp = 1;
    l.recompute = PP_RC_FULL;
    pp_time_result rf = step(&w, l, NULL);
    l.recompute = PP_RC_SELECTIVE;
    pp_time_result rs = step(&w, l, NULL);
    tap_ok(rf.recompute_s > 0.25 * rf.compute_s && rf.recompute_s < 0.40 * rf.compute_s,
           "full recompute costs about a third of forward+backward (%.3f of %.3f s)", rf.recompute_s, rf.compute_s);
    tap_ok(rs.recompute_s > 0 && rs.recompute_s < 0.2 * rf.recompute_s,
           "selective recompute (attention core, flash) costs a fraction of full (%.3f vs %.3f s)",
           rs.recompute_s, rf.recompute_s);

    /* DP: overlap hides part of the reduction; the distributed optimizer divides the step. */
    pp_work wd = gpt_work(a100, 40, 5120, 40, 64, 512);
    pp_layout d;
    pp_layout_init(&d);
    d.tp = 4;
    d.mbs = 1;
    pp_time_opts o;
    pp_time_opts_default(&wd, &o);
    pp_time_result ov = step(&wd, d, &o);
    o.overlap_grad_reduce = false;
    pp_time_result no = step(&wd, d, &o);
    tap_ok(no.dp_comm_s > 0 && ov.dp_comm_s < no.dp_comm_s,
           "overlapped gradient reduction exposes less (%.3f < %.3f s)", ov.dp_comm_s, no.dp_comm_s);
    d.dist_opt = true;
    pp_time_result dist = step(&wd, d, NULL);
    tap_near(dist.optimizer_s, ov.optimizer_s / 16, 0.02, "distributed optimizer: optimizer step / dp");
    tap_near(terms_sum(&dist), dist.step_time_s, 1e-9, "terms add up (dist-opt)");

    /* TP that leaves the node: the same layer with 16 TP ranks over two nodes spends far more on
     * its collectives than 8 inside one. */
    pp_work wt = gpt_work(a100, 96, 12288, 96, 16, 16);
    pp_time_ctx c;
    pp_time_ctx_init(&c, &wt, NULL);
    double intra = pp_time_collective_s(&c, PP_TC_ALL_REDUCE, 8, 8, 1e8);
    double cross = pp_time_collective_s(&c, PP_TC_ALL_REDUCE, 16, 8, 1e8);
    double spread = pp_time_collective_s(&c, PP_TC_ALL_REDUCE, 16, 1, 1e8);
    tap_ok(cross > intra && spread > 4 * intra,
           "all-reduce of 100 MB: 8 in a node %.2f ms, 16 over 2 nodes %.2f ms, 16 over 16 nodes %.2f ms",
           intra * 1e3, cross * 1e3, spread * 1e3);
    pp_layout t8, t16;
    pp_layout_init(&t8);
    t8.tp = 8;
    t8.dp = 2;
    t8.mbs = 1;
    t16 = t8;
    t16.tp = 16;
    t16.dp = 1;
    pp_time_layer y8, y16;
    pp_time_layer_get(&c, &t8, &y8);
    pp_time_layer_get(&c, &t16, &y16);
    tap_ok(y16.fwd_tp_s > 1.3 * y8.fwd_tp_s && y16.fwd_tp_s > 0.5 * y16.fwd_compute_s,
           "tp 16 across nodes: TP comm %.2f ms vs %.2f ms at tp 8, compute %.2f ms", y16.fwd_tp_s * 1e3,
           y8.fwd_tp_s * 1e3, y16.fwd_compute_s * 1e3);

    /* ZeRO-3 (DeepSpeed): per-micro-batch gathers appear; ZeRO-1 has none. */
    pp_work wz = gpt_work(a100, 32, 4096, 32, 16, 256);
    wz.framework = PP_FW_DEEPSPEED;
    pp_layout z;
    pp_layout_init(&z);
    z.mbs = 2;
    z.zero = 3;
    pp_time_result z3 = step(&wz, z, NULL);
    z.zero = 1;
    pp_time_result z1 = step(&wz, z, NULL);
    tap_ok(z3.zero_gather_s >= 0 && z1.zero_gather_s == 0 && z3.step_time_s >= z1.step_time_s,
           "ZeRO-3 costs at least ZeRO-1 (%.3f vs %.3f s, gathers %.3f s)", z3.step_time_s, z1.step_time_s,
           z3.zero_gather_s);

    /* pp_time_parts_get: with one stage the step is m x (L x (fwd + bwd) + embed + output)
     * plus the DP and optimizer terms. */
    pp_work wp = gpt_work(a100, 24, 2048, 16, 8, 64);
    pp_layout p1;
    pp_layout_init(&p1);
    p1.mbs = 2;
    pp_time_result rp = step(&wp, p1, NULL);
    pp_layout_validate(&wp, &p1, &(pp_error){0});
    pp_time_parts parts;
    pp_time_parts_get(&wp, &p1, &parts);
    double m = 64.0 / (8 * 2);
    double pipe = m * (24 * (parts.layer_fwd_s + parts.layer_bwd_s) + parts.embed_fwd_s + parts.embed_bwd_s +
                       parts.output_fwd_s + parts.output_bwd_s);
    tap_near(pipe + rp.dp_comm_s + rp.optimizer_s + rp.zero_gather_s, rp.step_time_s, 1e-9,
             "pp_time_parts_get composes the step");
    tap_ok(parts.p2p_s == 0 && parts.layer_recompute_s == parts.layer_fwd_s, "parts: no p2p at pp 1; recompute = fwd");

    /* Huge: 1e15 parameters on 1e6 GPUs stay finite. */
    pp_work wh = {0};
    wh.gpu = *a100;
    tt_gpt(&wh.model, 10000, 100000, 1000, 4096, 100000);
    wh.gpus = 1000000;
    wh.gpus_per_node = 8;
    wh.gbs = 1000000;
    pp_layout hl;
    pp_layout_init(&hl);
    hl.tp = 8;
    hl.pp = 1000;
    hl.mbs = 1;
    hl.dist_opt = true;
    pp_time_result rh = step(&wh, hl, NULL);
    tap_ok(isfinite(rh.step_time_s) && rh.step_time_s > 0 && isfinite(rh.mfu) && rh.mfu > 0 && rh.mfu < 1,
           "1e15 parameters on 1e6 GPUs: step %.4g s, MFU %.3f", rh.step_time_s, rh.mfu);
}

/* A measured profile replaces the catalog's GEMM curve. */
static void test_profile(const pp_gpu *h100)
{
    pp_prof_gemm g[2] = {{PP_DT_BF16, 4096, 4096, 4096, 500.0}, {PP_DT_BF16, 8192, 8192, 8192, 600.0}};
    pp_profile p;
    memset(&p, 0, sizeof p);
    snprintf(p.gpu, sizeof p.gpu, "test");
    p.gemm = g;
    p.n_gemm = 2;
    pp_work w = {0};
    w.gpu = *h100;
    tt_gpt(&w.model, 1, 1024, 8, 1024, 1024);
    w.gpus = w.gpus_per_node = w.gbs = 1;
    w.profile = &p;
    pp_time_ctx c;
    pp_time_ctx_init(&c, &w, NULL);
    double r = pp_time_gemm_rate(&c, 8192, 8192, 8192) / 1e12;
    tap_near(r, 600.0, 0.02, "--profile: a measured GEMM shape is used as measured (%.1f TFLOP/s)", r);
}

/* A power limit below the board's maximum (planner/model/gpu_power.c): the curve's points as its
 * comment tabulates them (the mean of the Zeus NSDI'23 BERT traces on V100, A40 and RTX 6000), the
 * interpolation between them, and the time model scaling the tensor-core rates only. */
static void test_power_limit(const pp_gpu *h100)
{
    static const double frac[] = {0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};
    static const double speed[] = {0.450, 0.653, 0.810, 0.897, 0.946, 0.980, 1.0};
    int bad = 0;
    for (int i = 0; i < 7; i++)
        if (fabs(pp_power_gemm_factor(frac[i]) - speed[i]) > 1e-12) {
            tap_diag("at %.1f of the maximum: %.4f, want %.3f", frac[i], pp_power_gemm_factor(frac[i]), speed[i]);
            bad++;
        }
    tap_ok(bad == 0, "power curve: its 7 points from 0.4 to 1.0 of the maximum");
    /* 500 of 700 W (the Grand Teton H100): 0.897 + (0.946 - 0.897) x 0.1429 / 0.1 = 0.9040 */
    tap_near(pp_power_gemm_factor(500.0 / 700.0), 0.9040, 1e-4, "500 of 700 W: x%.4f (linear between 0.7 and 0.8)",
             pp_power_gemm_factor(500.0 / 700.0));
    tap_ok(pp_power_gemm_factor(1.0) == 1.0 && pp_power_gemm_factor(1.2) == 1.0, "at or above the maximum: x1");
    bool rising = true;
    for (double f = 0.4; f < 1.0; f += 0.01) rising &= pp_power_gemm_factor(f + 0.01) > pp_power_gemm_factor(f);
    tap_ok(rising, "the curve rises from 0.4 to 1.0");

    pp_gpu g = *h100;
    tap_ok(g.max_power_w == 700 && pp_gpu_gemm_power_factor(&g) == 1.0, "h100-sxm: max_power_w 700, no limit: x1");
    pp_error err;
    tap_ok(pp_gpu_power_check(&g, 800, "--gpu-power-w", &err) == PP_ERR_INPUT && strstr(err.msg, "--gpu-power-w 800 W is above"),
           "800 W on a 700 W board: %s", err.msg);
    tap_ok(pp_gpu_power_check(&g, 250, "--gpu-power-w", &err) == PP_ERR_INPUT && strstr(err.msg, "measured from 40%"),
           "250 W (36%%): below the curve: %s", err.msg);
    tap_ok(pp_gpu_power_check(&g, 280, "--gpu-power-w", &err) == PP_OK, "280 W (40%%) is the lowest accepted");
    pp_gpu nomax = g;
    nomax.max_power_w = 0;
    tap_ok(pp_gpu_power_check(&nomax, 500, "gpu_power_w", &err) == PP_ERR_INPUT && strstr(err.msg, "needs the GPU's max_power_w"),
           "no max_power_w: %s", err.msg);

    pp_work w = {0};
    w.gpu = *h100;
    tt_gpt(&w.model, 1, 4096, 32, 2048, 50257);
    w.gpus = w.gpus_per_node = w.gbs = 1;
    pp_time_ctx full, capped;
    pp_time_ctx_init(&full, &w, NULL);
    w.gpu.power_w = 500;
    pp_time_ctx_init(&capped, &w, NULL);
    double want = h100->gemm_sustained * h100->gemm_eff * h100->peak_flops[PP_DT_BF16] *
                  pp_power_gemm_factor(500.0 / 700.0);
    tap_near(pp_time_gemm_rate(&capped, 8192, 8192, 8192), want, 1e-9,
             "500 W: 8192^3 at gemm_sustained x gemm_eff x peak x 0.904 (%.1f TFLOP/s)", want / 1e12);
    tap_ok(capped.mem_rate == full.mem_rate && capped.peak_flops == full.peak_flops,
           "500 W: memory bandwidth and the MFU's peak unchanged");
    tap_near(capped.flash_fwd_rate / full.flash_fwd_rate, pp_power_gemm_factor(500.0 / 700.0), 1e-12,
             "500 W: attention (tensor cores) takes the same factor");
    w.stack.precision = PP_PREC_FP8;
    pp_time_ctx_init(&capped, &w, NULL);
    tap_near(capped.gemm_rate_fp8, h100->gemm_eff * h100->peak_flops[PP_DT_FP8] * pp_power_gemm_factor(500.0 / 700.0),
             1e-9, "500 W: the FP8 rate takes the factor too");
}

/* torchtitan's attention (torch SDPA under --framework fsdp: FlashAttention-2, or cuDNN with
 * --sdpa-backend cudnn) on the lent H200 against PyTorch's own timing of it:
 * tests/data/profiles/h200.torch.jsonl (the rows FSDP_FA2_* and FSDP_CUDNN_* were fitted on: s
 * 2048-8192), h200.attention_long.jsonl and h200.attention_headdim.jsonl (PyTorch 2.11, cuDNN 9.19,
 * measured later with probes/torch_ref.py attention_long attention / attention_headdim: the short
 * shapes again, and causal s 16384-65536, beyond the fitted range). Causal rows of 128-dim heads;
 * forward + backward within 10% each, the forward reported. */
/* One H200 of the catalog under --framework fsdp, one sequence a step, the model GPT-shaped (tt_gpt);
 * false (a TAP failure) when the catalog has no h200. */
static bool fsdp_h200_work(pp_work *w, int64_t layers, int64_t hidden, int64_t heads, int64_t seq, int64_t vocab)
{
    memset(w, 0, sizeof *w);
    if (!tap_ok(tt_gpu("h200", &w->gpu) == 0, "catalog GPU h200")) return false;
    tt_gpt(&w->model, layers, hidden, heads, seq, vocab);
    w->framework = PP_FW_FSDP;
    w->attention = PP_ATTN_FLASH;
    pp_stack_init(&w->stack);
    w->gpus = w->gpus_per_node = w->gbs = 1;
    return true;
}

static void test_sdpa_fsdp_h200(pp_sdpa_backend backend)
{
    pp_work w;
    if (!fsdp_h200_work(&w, 1, 4096, 32, 8192, 50257)) return;
    w.stack.sdpa_backend = backend;
    pp_time_ctx c;
    pp_time_ctx_init(&c, &w, NULL);
    static const char *const files[] = {"h200.torch.jsonl", "h200.attention_long.jsonl", "h200.attention_headdim.jsonl"};
    const char *dir = getenv("PARPLAN_DATA_DIR"), *name = pp_sdpa_backend_names[backend];
    int n = 0, n_long = 0, bad = 0;
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        char path[1024], line[1024];
        snprintf(path, sizeof path, "%s/profiles/%s", dir ? dir : "tests/data", files[i]);
        FILE *f = fopen(path, "r");
        if (!tap_ok(f != NULL, "read %s", path)) continue;
        while (fgets(line, sizeof line, f)) {
            if (!jl_is(line, "kind", "attention") || !jl_is(line, "backend", name) || strstr(line, "\"causal\": false") ||
                jl_num(line, "head_dim") != 128 || isnan(jl_num(line, "fwdbwd_ms")))
                continue;
            double b = jl_num(line, "b"), sq = jl_num(line, "s"), h = jl_num(line, "heads"), d = jl_num(line, "head_dim");
            double fwd, bwd;
            pp_time_flash_s(&c, b * h, sq, sq / 2.0, d, d, &fwd, &bwd);
            double ef = 1e3 * fwd / jl_num(line, "fwd_ms") - 1, efb = 1e3 * (fwd + bwd) / jl_num(line, "fwdbwd_ms") - 1;
            tap_diag("%s %s b %g s %g heads %g: forward %+.1f%%, forward + backward %+.1f%%", name, files[i], b, sq, h,
                     100 * ef, 100 * efb);
            if (fabs(efb) > 0.10) bad++;
            if (fabs(efb) > fabs(worst)) worst = efb;
            n++;
            n_long += sq >= 16384;
        }
        fclose(f);
    }
    tap_ok(n >= 11 && n_long == 3 && bad == 0,
           "SDPA %s under fsdp on the H200: forward + backward within 10%% on %d rows (%d at 16k-64k tokens; "
           "worst %+.1f%%)", name, n, n_long, 100 * worst);
}

/* FSDP2's host (time_step.c FSDP_HOST_*): a 3B-shaped model (28 blocks) on one H200 at 1024 tokens,
 * where the host's 28 + 38.6 + 28 x 4.58 ms is longer than the GPU's work: the step is the soft
 * maximum (G^6 + H^6)^(1/6), host_s the difference, the terms still add up; full recompute adds
 * 3.33 ms a block; eager TP's DTensor blocks 18.5 ms each, compiled TP's 8.0; a long sequence
 * leaves the GPU the bottleneck. The constants' fit and its check on real runs: node4-runs. */
static void test_fsdp_host(void)
{
    pp_work w;
    if (!fsdp_h200_work(&w, 28, 3072, 24, 1024, 128256)) return;
    pp_layout l;
    pp_layout_init(&l);
    l.mbs = 1, l.zero = 3;
    pp_time_result r;
    pp_error err;
    const double H = 28.0e-3 + 38.6e-3 + 28 * 4.58e-3;
    bool ok = pp_layout_validate(&w, &l, &err) == PP_OK && pp_time_estimate(&w, &l, &r, &err) == PP_OK;
    if (!ok) tap_diag("fsdp host: %s", err.msg);
    double G = r.step_time_s - r.host_s;
    tap_ok(ok && r.host_s > 0 && fabs(r.step_time_s - pow(pow(G, 6) + pow(H, 6), 1.0 / 6)) < 1e-9 &&
               fabs(terms_sum(&r) - r.step_time_s) < 1e-9 * r.step_time_s,
           "fsdp, 28 blocks at 1024 tokens: the host's %.1f ms beside the GPU's %.1f ms make %.1f ms (host_s %.1f), the "
           "terms add up", 1e3 * H, 1e3 * G, 1e3 * r.step_time_s, 1e3 * r.host_s);
    l.recompute = PP_RC_FULL;
    ok = pp_time_estimate(&w, &l, &r, &err) == PP_OK;
    G = r.step_time_s - r.host_s;
    tap_ok(ok && fabs(r.step_time_s - pow(pow(G, 6) + pow(H + 28 * 3.33e-3, 6), 1.0 / 6)) < 1e-9,
           "full recompute: 3.33 ms a block more of the host's (%.1f ms)", 1e3 * r.step_time_s);
    l.recompute = PP_RC_NONE;
    w.gpus = w.gpus_per_node = 2;
    l.tp = 2;
    ok = pp_time_estimate(&w, &l, &r, &err) == PP_OK;
    G = r.step_time_s - r.host_s;
    tap_ok(ok && fabs(r.step_time_s - pow(pow(G, 6) + pow(28.0e-3 + 38.6e-3 + 28 * 18.5e-3, 6), 1.0 / 6)) < 1e-9,
           "eager TP 2: the DTensor blocks' 18.5 ms each (%.1f ms)", 1e3 * r.step_time_s);
    w.stack.compile = true;
    ok = pp_time_estimate(&w, &l, &r, &err) == PP_OK;
    G = r.step_time_s - r.host_s;
    tap_ok(ok && fabs(r.step_time_s - pow(pow(G, 6) + pow(28.0e-3 + 38.6e-3 + 28 * 8.0e-3, 6), 1.0 / 6)) < 1e-9,
           "compiled TP 2: its blocks' 8.0 ms each (%.1f ms)", 1e3 * r.step_time_s);
    w.stack.compile = false;
    w.gpus = w.gpus_per_node = 1;
    l.tp = 1;
    w.model.seq = 8192;
    w.gbs = 4;
    l.mbs = 4;
    ok = pp_time_estimate(&w, &l, &r, &err) == PP_OK;
    tap_ok(ok && r.host_s < 0.01 * r.step_time_s, "4 x 8192 tokens: the GPU sets the pace (host_s %.2f%% of %.3f s)",
           100 * r.host_s / r.step_time_s, r.step_time_s);
}

/* torchao float8 in a compiled block (the fsdp framework row's torchao_float8), tensorwise without TP:
 * one layer's time terms are the same whatever the layout's recompute (plan reuses them across
 * recompute modes and sharding: search.c), and what a recompute redoes is read from them: its casts
 * are not redone (full recompute costs the forward less recompute_less_s), and a recomputed layer
 * is spared the no-AC backward's norm kernels (EW_FSDP_FP8_NORM_BWD), so full recompute adds less
 * than a forward and selective AC is cheaper than no AC by more than its recompute costs. */
static void test_float8_recompute(void)
{
    pp_work w;
    if (!fsdp_h200_work(&w, 8, 4096, 32, 8192, 128256)) return;
    w.stack.compile = true;
    w.stack.precision = PP_PREC_FP8;
    w.stack.fp8_scaling = PP_FP8_TENSORWISE;
    w.gpus = w.gpus_per_node = w.gbs = 2;
    pp_layout l;
    pp_layout_init(&l);
    l.mbs = 1, l.zero = 3, l.dp = 2;
    pp_time_ctx c;
    pp_time_ctx_init(&c, &w, NULL);
    pp_time_layer y[PP_RC_COUNT];
    for (int rc = 0; rc < PP_RC_COUNT; rc++) {
        l.recompute = (pp_recompute)rc;
        pp_time_layer_get(&c, &l, &y[rc]);
    }
    tap_ok(!memcmp(&y[PP_RC_NONE], &y[PP_RC_FULL], sizeof y[0]) && !memcmp(&y[PP_RC_NONE], &y[PP_RC_SELECTIVE], sizeof y[0]),
           "float8 tensorwise, compiled: one layer's time terms the same for every recompute");
    tap_ok(y[0].recompute_less_s > 0 && y[0].recompute_less_s < y[0].fwd_compute_s,
           "float8 tensorwise, compiled: a recompute costs %.2f ms less than the forward's %.2f ms",
           1e3 * y[0].recompute_less_s, 1e3 * y[0].fwd_compute_s);
    w.stack.precision = PP_PREC_BF16;
    pp_time_ctx_init(&c, &w, NULL);
    pp_time_layer b;
    pp_time_layer_get(&c, &l, &b);
    tap_ok(b.recompute_less_s == 0, "bf16: a recompute redoes the whole forward");
}

int main(void)
{
    pp_gpu a100, h100;
    if (tt_gpu("a100-80gb", &a100) || tt_gpu("h100-sxm", &h100)) {
        tap_ok(0, "catalog GPUs a100-80gb and h100-sxm");
        return tap_done();
    }
    test_gemm_anchors(&h100);
    test_layer_anchors(&h100);
    test_sustained(&h100);
    test_nccl_anchors();
    test_flops();
    test_structure(&a100);
    test_profile(&h100);
    test_power_limit(&h100);
    test_sdpa_fsdp_h200(PP_SDPA_FLASH);
    test_sdpa_fsdp_h200(PP_SDPA_CUDNN);
    test_fsdp_host();
    test_float8_recompute();
    return tap_done();
}
