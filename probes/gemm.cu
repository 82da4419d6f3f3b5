/* gemm.cu: cuBLASLt GEMMs in bf16, fp16, tf32, fp32 (and fp8 e4m3 where the GPU has it, cc >= 8.9)
 * at square sizes and at the sharded GEMMs of transformer layers (QKV, projection, FC1, FC2 for
 * each TP size; bf16 and fp8), in nn.Linear's layout: D[m, n] = X[m, k] W[n, k]^T with m tokens,
 * which is cuBLAS's "TN" (the fast layout on Hopper, and the one fp8 requires).
 * Every GEMM is checked (sampled fp64 reference) before it is timed; a wrong one is reported.
 *
 * FP8 as Transformer Engine runs a Linear's forward GEMM with per-tensor scaling (delayed or current
 * scaling recipes): A and B in CUDA_R_8F_E4M3, each with a device fp32 scale
 * (CUBLASLT_MATMUL_DESC_A_SCALE_POINTER / B_SCALE_POINTER: the product is multiplied by both; 1.0
 * here, the values being N(0, 1) already in e4m3's range), D in bf16, CUBLAS_COMPUTE_32F with
 * CUBLASLT_MATMUL_DESC_FAST_ACCUM (TE's forward GEMMs; its backward ones split the accumulator).
 * cuBLASLt's requirements for FP8 (cuBLAS docs, cublasLtMatmul(), "To use FP8 kernels"): A
 * transposed and B not ("TN") on Ada and Hopper, 16-byte aligned pointers and leading dimensions
 * (multiples of 16 one-byte elements), fp32 scale type; a shape that breaks them is left out with a
 * note (gemm_rules.c, unit-tested). No C of its own: beta is 0 and cublasLtMatmul gets a C that is
 * not D (cuBLASLt 13 refuses C == D for fp8 with CUBLAS_STATUS_NOT_SUPPORTED after a successful
 * heuristic query: gemm_rules.c; device call 1 of device_moe_fp8.sh, tests/data/probes). Each scale
 * has its own 256-byte aligned slot, as PyTorch's separate scale tensors. Before the first fp8 GEMM
 * a small one (64 x 80 x 256, scales 0.5 and 4) is compared with a host reference computed from the
 * same e4m3 inputs (ref.c pp_ref_linear); it also picks the C operand cuBLASLt takes (A standing in
 * for C, else NULL). A cuBLASLt refusal of an fp8 GEMM is a note, not the end of the probe.
 *
 * Timing follows the protocol of the PyTorch anchors (tests/data/anchors): torch.randn-like inputs,
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

#include "ref.h"

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

/* --dtype: whether this type is asked for (no list: all) */
static bool type_wanted(const pp_probe_opts *o, int t)
{
    return !o->gemm_dtypes || (o->gemm_dtypes >> t) & 1u;
}

/* cuBLASLt's FP8 kernels want every dimension a multiple of 16 (16-byte rows of e4m3) */
static bool fp8_shape_ok(const gemm_job *j) { return pp_gemm_fp8_dims_ok(j->m, j->n, j->k); }

/* The transformer-shape GEMMs of one layer shard in every asked type that has them: bf16 (the
 * anchors' rows) and fp8 (the same shapes, for the ratio); fp8 shapes cuBLASLt cannot run are
 * counted in *skipped. */
static int add_layer_types(const pp_probe_opts *o, bool fp8, gemm_job *jobs, int n, int cap, int64_t tokens,
                           int64_t h, int64_t heads, int64_t kv_heads, int64_t ffn, bool swiglu, int64_t tp,
                           int *skipped)
{
    if (type_wanted(o, T_BF16)) n = add_layer_jobs(jobs, n, cap, T_BF16, tokens, h, heads, kv_heads, ffn, swiglu, tp);
    if (fp8 && type_wanted(o, T_FP8)) {
        int first = n;
        n = add_layer_jobs(jobs, n, cap, T_FP8, tokens, h, heads, kv_heads, ffn, swiglu, tp);
        for (int i = first; i < n; i++)
            if (!fp8_shape_ok(&jobs[i])) {
                (*skipped)++;
                jobs[i--] = jobs[--n];
            }
    }
    return n;
}

static int build_jobs(const pp_probe_opts *o, bool fp8, gemm_job *jobs, int cap, int *fp8_skipped)
{
    int n = 0;
    /* square sizes: the anchors' 8192^3 in every type; smaller ones where they are cheap */
    static const int64_t sq_full[] = {2048, 4096, 8192};
    static const int64_t sq_quick[] = {1024, 2048};
    const int64_t *sq = o->quick ? sq_quick : sq_full;
    int nsq = o->quick ? 2 : 3;
    /* PARPLAN_PROBE_GEMM_SHAPES_ONLY=1 (diagnostics, e.g. under ncu): only the transformer shapes */
    for (int t = 0; t < T_COUNT && !getenv("PARPLAN_PROBE_GEMM_SHAPES_ONLY"); t++) {
        if ((t == T_FP8 && !fp8) || !type_wanted(o, t)) continue;
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
            n = add_layer_types(o, fp8, jobs, n, cap, tokens, o->hidden, o->heads, kv, ffn, o->swiglu, o->tp[i],
                                fp8_skipped);
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
                n = add_layer_types(o, fp8, jobs, n, cap, o->quick ? 1024 : 4096, hs[i], hs[i] / 128, hs[i] / 128,
                                    4 * hs[i], false, tps[j], fp8_skipped);
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

/* The fp8 per-tensor scales live in one device buffer, each in its own 256-byte slot (cudaMalloc's
 * alignment), as PyTorch's separate one-element scale tensors: slot 0 the weight's, 1 the
 * activation's. */
#define SCALE_SLOT_FLOATS 64

/* What the fp8 check found cuBLASLt takes as C when there is none (gemm_rules.h pp_c_arg). */
static pp_c_arg fp8_c_arg = PP_C_ARG_OTHER;

/* Device scales {w, x} into their slots. */
static int scales_upload(pp_probe_ctx *c, float *dev, float w, float x)
{
    float host[2 * SCALE_SLOT_FLOATS];
    memset(host, 0, sizeof host);
    host[0] = w;
    host[SCALE_SLOT_FLOATS] = x;
    PP_CU(cudaMemcpyAsync(dev, host, sizeof host, cudaMemcpyHostToDevice, c->stream));
    PP_CU(cudaStreamSynchronize(c->stream));
    return 0;
fail:
    return -1;
}

/* The GEMM of nn.Linear in type t on X [m, k], W [n, k] into D [m, n], per-tensor scales for fp8
 * (the two slots of `scales`). */
static pp_gemm_desc linear_desc(const gemm_type *t, int64_t m, int64_t n, int64_t k, const void *X, const void *W,
                                void *D, const float *scales)
{
    pp_gemm_desc d = pp_desc_fwd(X, W, D, m, n, k);
    d.a_t = d.b_t = t->in;
    d.c_t = t->out;
    d.tf32 = t->tf32;
    d.fast_accum = t->fast_accum;
    if (t->in == PP_E4M3) {
        d.scale_a = scales;                     /* A is W (the weight's scale) */
        d.scale_b = scales + SCALE_SLOT_FLOATS; /* B is X (the activation's) */
    }
    return d;
}

/* FP8 against the host: a small GEMM on e4m3 inputs with scales 0.5 (weight) and 4 (activation),
 * the reference in double from the very e4m3 values the GPU read (they convert to double exactly).
 * Tolerance 1e-2 relative L2: the output is rounded to bf16 (2^-9 relative at most, ~1.1e-3 rms),
 * the fp32 (fast) accumulation of 256 products of O(1) values adds ~1e-5; a wrong layout, a scale
 * left out (a factor 0.5, 2 or 4) or unwritten output is O(1). The C operand: A standing in for it
 * (PyTorch's choice), else NULL (XLA's); the one cuBLASLt runs is kept in fp8_c_arg for the timed
 * GEMMs. 0 with *err set, 1 when cuBLASLt has no plan or refuses both (why in `why`), -1 on a
 * failure (an OOM among them). */
static int fp8_check_small(pp_probe_ctx *c, double *err, char *why, size_t why_n)
{
    const int64_t m = 64, n = 80, k = 256;
    const gemm_type *t = &types[T_FP8];
    const double scale_w = 0.5, scale_x = 4.0;
    static const pp_c_arg tries[2] = {PP_C_ARG_OTHER, PP_C_ARG_NULL};
    static const char *const try_names[2] = {"C = A (not D)", "C = NULL"};
    void *X = NULL, *W = NULL, *D = NULL;
    float *scales = NULL;
    double *hx = NULL, *hw = NULL, *hd = NULL, *ref = NULL;
    pp_gemm_plan plan;
    pp_gemm_desc d;
    cublasStatus_t lt = CUBLAS_STATUS_SUCCESS;
    int rc = -1, st = 0, ok = -1;
    memset(&plan, 0, sizeof plan);
    *err = INFINITY;
    why[0] = 0;
    PP_TRY(pp_alloc(&X, (size_t)(m * k)));
    PP_TRY(pp_alloc(&W, (size_t)(n * k)));
    PP_TRY(pp_alloc(&D, (size_t)(m * n) * 2));
    PP_TRY(pp_alloc((void **)&scales, 2 * SCALE_SLOT_FLOATS * sizeof(float)));
    PP_TRY(scales_upload(c, scales, (float)scale_w, (float)scale_x));
    PP_TRY(pp_fill_normal(c, X, (size_t)(m * k), PP_E4M3, 1.0f, 101));
    PP_TRY(pp_fill_normal(c, W, (size_t)(n * k), PP_E4M3, 1.0f, 103));
    d = linear_desc(t, m, n, k, X, W, D, scales);
    st = pp_gemm_plan_make(c, &d, 1, &plan);
    if (st) {
        snprintf(why, why_n, "no cuBLASLt plan: %s", pp_gemm_plan_why());
        rc = st;
        goto fail;
    }
    for (int i = 0; i < 2 && ok < 0; i++) {
        PP_TRY(pp_poison(c, D, (size_t)(m * n) * 2));
        plan.c_arg = tries[i];
        lt = pp_gemm_plan_try(c, &plan);
        if (lt == CUBLAS_STATUS_SUCCESS) {
            ok = i;
        } else if (lt == CUBLAS_STATUS_ALLOC_FAILED) {
            pp_cublas_fail(__FILE__, __LINE__, "cublasLtMatmul (fp8 check)", lt);
            goto fail;
        } else {
            size_t used = strlen(why);
            snprintf(why + used, why_n - used, "%scublasLtMatmul with %s: %s", used ? "; " : "", try_names[i],
                     cublasLtGetStatusString(lt));
        }
    }
    if (ok < 0) {
        rc = 1;
        goto fail;
    }
    fp8_c_arg = tries[ok];
    if (ok > 0) pp_report_note(c->rep, "gemm fp8: %s; runs with %s", why, try_names[ok]);
    hx = (double *)malloc((size_t)(m * k) * sizeof(double));
    hw = (double *)malloc((size_t)(n * k) * sizeof(double));
    hd = (double *)malloc((size_t)(m * n) * sizeof(double));
    ref = (double *)malloc((size_t)(m * n) * sizeof(double));
    if (!hx || !hw || !hd || !ref) {
        pp_probe_error(__FILE__, __LINE__, "out of memory");
        goto fail;
    }
    PP_TRY(pp_to_host(c, X, (size_t)(m * k), PP_E4M3, hx));
    PP_TRY(pp_to_host(c, W, (size_t)(n * k), PP_E4M3, hw));
    PP_TRY(pp_to_host(c, D, (size_t)(m * n), PP_BF16, hd));
    pp_ref_linear(hx, hw, m, n, k, scale_w * scale_x, ref);
    *err = pp_rel_l2(hd, ref, (size_t)(m * n));
    rc = 0;
fail:
    pp_gemm_plan_free(&plan);
    cudaFree(X);
    cudaFree(W);
    cudaFree(D);
    cudaFree(scales);
    free(hx);
    free(hw);
    free(hd);
    free(ref);
    return rc;
}

/* Plan, check and time one GEMM: 0 (a row, a wrong result or a note), -1 on a failure (an OOM
 * among them: the caller reports the size and goes on). scales: the fp8 per-tensor scales
 * (device, 1.0 each, in their slots); an fp8 GEMM cuBLASLt refuses to run is a note. */
static int gemm_one(pp_probe_ctx *c, const gemm_job *j, gemm_bufs *b, bool autotune, const float *scales)
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
    d = linear_desc(t, j->m, j->n, j->k, b->X, b->W, b->D, scales);
    st = pp_gemm_plan_make(c, &d, autotune ? 8 : 1, &plan);
    if (st < 0) goto fail;
    if (st > 0) {
        pp_report_note(c->rep, "gemm %s %lldx%lldx%lld: no cuBLASLt plan (%s)", t->dtype, (long long)j->m,
                       (long long)j->n, (long long)j->k, pp_gemm_plan_why());
        rc = 0;
        goto fail;
    }
    if (t->in == PP_E4M3) {
        /* the C operand the check found, and one trial run: a refusal is a note */
        cublasStatus_t lt;
        plan.c_arg = fp8_c_arg;
        lt = pp_gemm_plan_try(c, &plan);
        if (lt == CUBLAS_STATUS_ALLOC_FAILED) {
            pp_cublas_fail(__FILE__, __LINE__, "cublasLtMatmul", lt);
            goto fail;
        }
        if (lt != CUBLAS_STATUS_SUCCESS) {
            pp_report_note(c->rep, "gemm fp8 %s %lldx%lldx%lld: cublasLtMatmul: %s (not measured)", j->op,
                           (long long)j->m, (long long)j->n, (long long)j->k, cublasLtGetStatusString(lt));
            rc = 0;
            goto fail;
        }
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
    int n_jobs = 0, rc = -1, fp8_skipped = 0;
    bool fp8 = c->prop.major * 10 + c->prop.minor >= 89;
    bool fp8_ok = false, fp8_checked = false;
    bool autotune = getenv("PARPLAN_PROBE_GEMM_AUTOTUNE") != NULL;
    float *scales = NULL;
    char why[384];
    memset(&b, 0, sizeof b);
    b.filled = -1;
    if (!jobs) {
        pp_probe_error(__FILE__, __LINE__, "out of memory");
        goto fail;
    }
    n_jobs = build_jobs(c->opt, fp8, jobs, CAP, &fp8_skipped);
    if (!fp8 && type_wanted(c->opt, T_FP8))
        pp_report_note(c->rep, "gemm: no fp8 on compute capability %d.%d (needs 8.9+)", c->prop.major, c->prop.minor);
    if (fp8_skipped)
        pp_report_note(c->rep, "gemm: %d fp8 shapes left out: cuBLASLt's FP8 kernels need every dimension a multiple "
                               "of 16", fp8_skipped);
    /* the fp8 per-tensor scales (weight, activation): 1.0 on the device, read by every fp8 GEMM */
    PP_TRY(pp_alloc((void **)&scales, 2 * SCALE_SLOT_FLOATS * sizeof(float)));
    PP_TRY(scales_upload(c, scales, 1.0f, 1.0f));
    if (autotune)
        pp_report_note(c->rep, "gemm: the fastest of cuBLASLt's first 8 heuristic algorithms per shape "
                               "(PARPLAN_PROBE_GEMM_AUTOTUNE); the default is the first, as PyTorch runs");
    c->target_ms = 15;
    c->min_reps = 10;
    /* PARPLAN_PROBE_GEMM_BATCH_US=500: time batches of back-to-back launches instead (NOTES.md) */
    c->batch_us = getenv("PARPLAN_PROBE_GEMM_BATCH_US") ? atof(getenv("PARPLAN_PROBE_GEMM_BATCH_US")) : 0;
    for (int i = 0; i < n_jobs; i++) {
        const gemm_job *j = &jobs[i];
        if (j->type == T_FP8 && !fp8_checked) {
            double err = 0;
            int st = fp8_check_small(c, &err, why, sizeof why);
            fp8_checked = true;
            if (st < 0) goto fail;
            if (st > 0) pp_report_note(c->rep, "gemm fp8: the check GEMM does not run (%s): fp8 not measured", why);
            else if (!(err <= 1e-2))
                pp_report_fail(c->rep, "gemm fp8 64x80x256 (scales 0.5, 4): relative error %.3g > 0.01 against the "
                                       "host reference: fp8 not measured", err);
            else
                fp8_ok = true;
        }
        if (j->type == T_FP8 && !fp8_ok) continue;
        /* what this size needs: its three operands (those held from a smaller size count too) */
        pp_alloc_mark();
        pp_alloc_need((double)(j->m * j->k + j->n * j->k) * (double)pp_elt_bytes(types[j->type].in) +
                      (double)(j->m * j->n) * (double)pp_elt_bytes(types[j->type].out));
        if (gemm_one(c, j, &b, autotune, scales) == 0) continue;
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
    cudaFree(scales);
    c->target_ms = 0;
    c->min_reps = 0;
    c->batch_us = 0;
    return rc;
}
