/* gemm.cu: cuBLASLt GEMMs in bf16, fp16, tf32, fp32 (and fp8 e4m3 where the GPU has it, cc >= 8.9)
 * at square sizes and at the sharded GEMMs of transformer layers (QKV, projection, FC1, FC2 for
 * each TP size), in nn.Linear's layout: D[m, n] = X[m, k] W[n, k]^T with m tokens, which is
 * cuBLAS's "TN" (the fast layout on Hopper, and the one fp8 requires).
 * Every GEMM is checked (sampled fp64 reference) before it is timed; a wrong one is reported.
 *
 * Timing follows the protocol of the PyTorch anchors (../shared/anchors): torch.randn-like inputs,
 * the cuBLASLt heuristic's first algorithm (what PyTorch and Megatron run), three warm-ups, then
 * about 15 ms of repeats (at least 10), each between two events, median, with the operands left
 * in the L2 between repeats as in a training step's back-to-back kernels. The event pair costs a
 * short GEMM ~10 us (ncu: 68.5 us kernel, 78 us timed at 4096x3072x2048); batches of back-to-back
 * launches (PARPLAN_PROBE_GEMM_BATCH_US) remove that but run the card hotter: see NOTES.md. A longer, or an L2-flushed,
 * measurement of the same kernel reads lower (sustained power limit, cold L2): see NOTES.md. The
 * layer probe measures the GEMMs in their real mix. */
#include "harness.cuh"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *dtype;
    pp_elt in, out;
    bool tf32, fast_accum;
    double tol; /* relative L2 error allowed over the samples */
} gemm_type;

/* Tolerances: outputs rounded to bf16 carry 2^-9 relative error, fp16 2^-11; tf32 rounds the inputs
 * to 10-bit mantissas (about 1e-3 on a random dot product); fp32 accumulates in fp32. */
static const gemm_type types[] = {
    {"bf16", PP_BF16, PP_BF16, false, false, 1e-2},
    {"fp16", PP_F16, PP_F16, false, false, 1e-2},
    {"tf32", PP_F32, PP_F32, true, false, 5e-3},
    {"fp32", PP_F32, PP_F32, false, false, 1e-4},
    {"fp8", PP_E4M3, PP_BF16, false, true, 2e-2},
};
enum { T_BF16, T_FP16, T_TF32, T_FP32, T_FP8, T_COUNT };

typedef struct {
    int type;
    const char *op;
    int64_t hidden, tp, m, n, k;
} gemm_job;

static int run_plan(pp_probe_ctx *c, void *arg) { return pp_gemm_plan_run(c, (const pp_gemm_plan *)arg); }

/* Transformer-layer GEMMs of one TP shard (Megatron's column/row-parallel split, Shoeybi et al.
 * 2019 sec. 3): QKV and FC1 split their outputs, projection and FC2 their inputs. */
static int add_layer_jobs(gemm_job *jobs, int n, int cap, int type, int64_t tokens, int64_t h, int64_t heads,
                          int64_t kv_heads, int64_t ffn, bool swiglu, int64_t tp)
{
    int64_t d = h / heads;
    int64_t qkv = (heads + 2 * kv_heads) * d / tp, hq = heads * d / tp, f = ffn / tp;
    gemm_job js[4] = {
        {type, "qkv", h, tp, tokens, qkv, h},
        {type, "proj", h, tp, tokens, h, hq},
        {type, "fc1", h, tp, tokens, swiglu ? 2 * f : f, h},
        {type, "fc2", h, tp, tokens, h, f},
    };
    for (int i = 0; i < 4 && n < cap; i++) jobs[n++] = js[i];
    return n;
}

static int build_jobs(const pp_probe_opts *o, bool fp8, gemm_job *jobs, int cap)
{
    int n = 0;
    /* square sizes: the anchors' 8192^3 in every type; smaller ones where they are cheap */
    static const int64_t sq_full[] = {2048, 4096, 8192};
    static const int64_t sq_quick[] = {1024, 2048};
    const int64_t *sq = o->quick ? sq_quick : sq_full;
    int nsq = o->quick ? 2 : 3;
    /* PARPLAN_PROBE_GEMM_SHAPES_ONLY=1 (diagnostics, e.g. under ncu): only the transformer shapes */
    for (int t = 0; t < T_COUNT && !getenv("PARPLAN_PROBE_GEMM_SHAPES_ONLY"); t++) {
        if (t == T_FP8 && !fp8) continue;
        if (o->quick && (t == T_FP16 || t == T_TF32)) continue;
        for (int i = 0; i < nsq; i++) {
            /* fp32 and tf32 are slow: only the largest size (the anchors' one) */
            if ((t == T_FP32 || t == T_TF32) && i != nsq - 1) continue;
            if (n < cap) {
                gemm_job j = {t, "square", 0, 0, sq[i], sq[i], sq[i]};
                jobs[n++] = j;
            }
        }
    }
    if (o->hidden) {
        int64_t kv = o->kv_heads ? o->kv_heads : o->heads;
        int64_t ffn = o->ffn ? o->ffn : 4 * o->hidden;
        int64_t tokens = (o->seq ? o->seq : 2048) * (o->mbs ? o->mbs : 1);
        for (int i = 0; i < o->n_tp; i++)
            n = add_layer_jobs(jobs, n, cap, T_BF16, tokens, o->hidden, o->heads, kv, ffn, o->swiglu, o->tp[i]);
    } else {
        /* the anchors' shapes: GPT layers (ffn 4h, MHA, 128-wide heads), 4096 tokens, TP 1..8 */
        static const int64_t hs_full[] = {2048, 4096, 5120, 8192};
        static const int64_t tps_full[] = {1, 2, 4, 8};
        static const int64_t hs_quick[] = {1024};
        static const int64_t tps_quick[] = {1, 2};
        const int64_t *hs = o->quick ? hs_quick : hs_full, *tps = o->quick ? tps_quick : tps_full;
        int nh = o->quick ? 1 : 4, nt = o->quick ? 2 : 4;
        for (int i = 0; i < nh; i++)
            for (int j = 0; j < nt; j++)
                n = add_layer_jobs(jobs, n, cap, T_BF16, o->quick ? 1024 : 4096, hs[i], hs[i] / 128, hs[i] / 128,
                                   4 * hs[i], false, tps[j]);
    }
    return n;
}

/* The operand buffers, grown to the largest size measured so far (a size that does not fit frees
 * them: the next one allocates afresh). filled: the type whose random inputs X and W hold (-1 none). */
typedef struct {
    void *X, *W, *D;
    size_t cap_x, cap_w, cap_d;
    int filled;
} gemm_bufs;

static void bufs_free(gemm_bufs *b)
{
    cudaFree(b->X);
    cudaFree(b->W);
    cudaFree(b->D);
    memset(b, 0, sizeof *b);
    b->filled = -1;
}

static int grow(void **p, size_t *cap, size_t want, int *filled)
{
    if (want <= *cap) return 0;
    cudaFree(*p);
    *p = NULL;
    *cap = 0;
    *filled = -1;
    PP_TRY(pp_alloc(p, want));
    *cap = want;
    return 0;
fail:
    return -1;
}

/* Plan, check and time one GEMM: 0 (a row, a wrong result or a note), -1 on a failure (an OOM
 * among them: the caller reports the size and goes on). */
static int gemm_one(pp_probe_ctx *c, const gemm_job *j, gemm_bufs *b, bool autotune)
{
    const gemm_type *t = &types[j->type];
    size_t xb = (size_t)(j->m * j->k) * pp_elt_bytes(t->in);
    size_t wb = (size_t)(j->n * j->k) * pp_elt_bytes(t->in);
    size_t db = (size_t)(j->m * j->n) * pp_elt_bytes(t->out);
    pp_gemm_plan plan;
    pp_gemm_desc d;
    double err = 0, ms = 0, best_ms = 0;
    int st = 0, best = 0, rc = -1;
    memset(&plan, 0, sizeof plan);
    PP_TRY(grow(&b->X, &b->cap_x, xb, &b->filled));
    PP_TRY(grow(&b->W, &b->cap_w, wb, &b->filled));
    PP_TRY(grow(&b->D, &b->cap_d, db, &b->filled));
    if (b->filled != j->type) {
        /* N(0, 1) as torch.randn: sums of k products stay far from fp16's range, fp8 saturates at 448.
         * The values are a hash of (seed, index): the same whatever the buffer's size. */
        PP_TRY(pp_fill_normal(c, b->X, b->cap_x / pp_elt_bytes(t->in), t->in, 1.0f, 11 + (unsigned long long)j->type));
        PP_TRY(pp_fill_normal(c, b->W, b->cap_w / pp_elt_bytes(t->in), t->in, 1.0f, 23 + (unsigned long long)j->type));
        b->filled = j->type;
    }
    memset(&d, 0, sizeof d);
    d.ta = CUBLAS_OP_T;
    d.tb = CUBLAS_OP_N;
    d.m = j->n;
    d.n = j->m;
    d.k = j->k;
    d.A = b->W;
    d.lda = j->k;
    d.B = b->X;
    d.ldb = j->k;
    d.C = NULL;
    d.D = b->D;
    d.ldc = d.ldd = j->n;
    d.a_t = d.b_t = t->in;
    d.c_t = t->out;
    d.tf32 = t->tf32;
    d.fast_accum = t->fast_accum;
    d.alpha = 1.0f;
    d.beta = 0.0f;
    st = pp_gemm_plan_make(c, &d, autotune ? 8 : 1, &plan);
    if (st < 0) goto fail;
    if (st > 0) {
        pp_report_note(c->rep, "gemm %s %lldx%lldx%lld: no cuBLASLt plan (%s)", t->dtype, (long long)j->m,
                       (long long)j->n, (long long)j->k, pp_gemm_plan_why());
        rc = 0;
        goto fail;
    }
    /* PARPLAN_PROBE_GEMM_AUTOTUNE=1: the fastest of the heuristics' first eight (5 repeats each) */
    for (int a = 0; autotune && a < plan.n_algos; a++) {
        plan.pick = a;
        PP_TRY(pp_time_ms_reps(c, run_plan, &plan, false, 5, &ms));
        if (a == 0 || ms < best_ms) {
            best_ms = ms;
            best = a;
        }
    }
    plan.pick = best;
    /* check on a poisoned output */
    PP_TRY(pp_poison(c, b->D, db));
    PP_TRY(run_plan(c, &plan));
    PP_TRY(pp_check_linear(c, b->X, t->in, b->W, t->in, b->D, t->out, j->m, j->n, j->k, 256, &err));
    if (!(err <= t->tol)) {
        pp_report_fail(c->rep, "gemm %s %s m=%lld n=%lld k=%lld: relative error %.3g > %.3g", t->dtype, j->op,
                       (long long)j->m, (long long)j->n, (long long)j->k, err, t->tol);
        rc = 0;
        goto fail;
    }
    PP_TRY(pp_time_ms(c, run_plan, &plan, false, &ms));
    {
        pp_gemm_row row;
        memset(&row, 0, sizeof row);
        snprintf(row.dtype, sizeof row.dtype, "%s", t->dtype);
        snprintf(row.op, sizeof row.op, "%s", j->op);
        row.hidden = j->hidden;
        row.tp = j->tp;
        row.m = j->m;
        row.n = j->n;
        row.k = j->k;
        row.us = 1e3 * ms;
        row.tflops = 2.0 * (double)j->m * (double)j->n * (double)j->k / (ms * 1e-3) / 1e12;
        row.rel_err = err;
        if (pp_report_add_gemm(c->rep, &row))
            pp_report_fail(c->rep, "gemm %s %s: no valid time (%g ms)", t->dtype, j->op, ms);
    }
    rc = 0;
fail:
    pp_gemm_plan_free(&plan);
    return rc;
}

int pp_probe_gemm(pp_probe_ctx *c)
{
    enum { CAP = 256 };
    gemm_job *jobs = (gemm_job *)calloc(CAP, sizeof *jobs);
    gemm_bufs b;
    int n_jobs = 0, rc = -1;
    bool fp8 = c->prop.major * 10 + c->prop.minor >= 89;
    bool autotune = getenv("PARPLAN_PROBE_GEMM_AUTOTUNE") != NULL;
    memset(&b, 0, sizeof b);
    b.filled = -1;
    if (!jobs) {
        pp_probe_error(__FILE__, __LINE__, "out of memory");
        goto fail;
    }
    n_jobs = build_jobs(c->opt, fp8, jobs, CAP);
    if (!fp8) pp_report_note(c->rep, "gemm: no fp8 on compute capability %d.%d (needs 8.9+)", c->prop.major, c->prop.minor);
    if (autotune)
        pp_report_note(c->rep, "gemm: the fastest of cuBLASLt's first 8 heuristic algorithms per shape "
                               "(PARPLAN_PROBE_GEMM_AUTOTUNE); the default is the first, as PyTorch runs");
    c->target_ms = 15;
    c->min_reps = 10;
    /* PARPLAN_PROBE_GEMM_BATCH_US=500: time batches of back-to-back launches instead (NOTES.md) */
    c->batch_us = getenv("PARPLAN_PROBE_GEMM_BATCH_US") ? atof(getenv("PARPLAN_PROBE_GEMM_BATCH_US")) : 0;
    for (int i = 0; i < n_jobs; i++) {
        const gemm_job *j = &jobs[i];
        /* what this size needs: its three operands (those held from a smaller size count too) */
        pp_alloc_mark();
        pp_alloc_need((double)(j->m * j->k + j->n * j->k) * (double)pp_elt_bytes(types[j->type].in) +
                      (double)(j->m * j->n) * (double)pp_elt_bytes(types[j->type].out));
        if (gemm_one(c, j, &b, autotune) == 0) continue;
        /* out of memory at this size: a row saying so, the buffers freed, on to the next size */
        if (pp_oom_recover(c->rep, c->stream, PP_PROBE_GEMM, "%s %s m=%lld n=%lld k=%lld", types[j->type].dtype, j->op,
                           (long long)j->m, (long long)j->n, (long long)j->k))
            goto fail;
        bufs_free(&b);
    }
    rc = 0;
fail:
    bufs_free(&b);
    free(jobs);
    c->target_ms = 0;
    c->min_reps = 0;
    c->batch_us = 0;
    return rc;
}
