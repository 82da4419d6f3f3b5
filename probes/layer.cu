/* layer.cu: one transformer block of a TP shard, forward and forward+backward, bf16 (the layer of
 * ref.h: LayerNorm, QKV, causal attention, projection, residual, LayerNorm, MLP with GELU or
 * SwiGLU, residual). GEMMs are cuBLASLt with fused epilogues where the library has them (bias;
 * bias+GELU keeping its input; GELU gradient with the bias gradient; bias gradient of a weight
 * gradient), as Megatron/Transformer Engine fuse them; attention is cuDNN flash attention (or the
 * unfused path). Before timing, the same code runs at a small size and is compared with the CPU
 * reference (ref.c): a wrong layer is reported, not timed. The kernels of its own (LayerNorm,
 * epilogue fallbacks, the grouped-query attention copies) are in layer_kernels.cu. */
#include "attn.cuh"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layer_kernels.cuh"
#include "ref.h"

/* ================================================================ step trace */

/* PARPLAN_PROBE_TRACE=1: after timing, one forward+backward with an event after every step, the
 * step times printed on stderr (where the layer's time goes, to compare with the GEMM table). */
typedef struct {
    bool on;
    int n;
    cudaEvent_t ev[48];
    const char *name[48];
} pp_trace;
static pp_trace trace;
#define TRACE(c, label)                                                          \
    do {                                                                         \
        if (trace.on && trace.n < 48) {                                          \
            cudaEventRecord(trace.ev[trace.n], (c)->stream);                     \
            trace.name[trace.n++] = (label);                                     \
        }                                                                        \
    } while (0)

/* ================================================================ linear layers */

enum { EPI_NONE = 0, EPI_BIAS, EPI_GELU_AUX_BIAS, EPI_DGELU_BGRAD, EPI_BGRADB, EPI_DGELU, EPI_COUNT };

/* One GEMM of the layer with its epilogue, fused when cuBLASLt has it, else plain + kernels. */
typedef struct {
    int epi;
    bool fused;
    pp_gemm_plan plan;
    /* for the fallbacks (row-major views) */
    int64_t rows, cols;     /* output [rows, cols] of the forward linears: T x features */
    void *out;              /* D of the plain GEMM */
    int64_t ld_out;
    void *bias;             /* bias (fwd) or its gradient (bwd) */
    void *act;              /* GELU output when epi == EPI_GELU_AUX_BIAS (out holds its input) */
    int64_t ld_act;
    const void *gsrc;       /* BGRADB: the output gradient [rows, cols] (row-major, ld) to sum */
    int64_t g_rows, g_cols, g_ld;
} lin;

static const cublasLtEpilogue_t lt_epi[EPI_COUNT] = {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_BIAS,
                                                     CUBLASLT_EPILOGUE_GELU_AUX_BIAS, CUBLASLT_EPILOGUE_DGELU_BGRAD,
                                                     CUBLASLT_EPILOGUE_BGRADB, CUBLASLT_EPILOGUE_DGELU};

static int run_lin_plan(pp_probe_ctx *c, void *p) { return pp_gemm_plan_run(c, (const pp_gemm_plan *)p); }

/* PARPLAN_PROBE_AUTOTUNE=1: the fastest of the heuristics' first four algorithms (3 repeats each)
 * instead of the first, which is what PyTorch, Megatron and Transformer Engine run (the default). */
static int lin_pick(pp_probe_ctx *c, lin *L)
{
    double best = 0, ms = 0;
    int pick = 0;
    if (L->plan.n_algos < 2) return 0;
    for (int a = 0; a < L->plan.n_algos; a++) {
        L->plan.pick = a;
        PP_TRY(pp_time_ms_reps(c, run_lin_plan, &L->plan, false, 3, &ms));
        if (a == 0 || ms < best) {
            best = ms;
            pick = a;
        }
    }
    L->plan.pick = pick;
    return 0;
fail:
    return -1;
}

/* plain: no fused epilogue even where cuBLASLt has one (a GELU-gradient recipe below) */
static int lin_make_as(pp_probe_ctx *c, lin *L, pp_gemm_desc d, int epi, bool plain)
{
    int st, n_algos = getenv("PARPLAN_PROBE_AUTOTUNE") ? 4 : 1;
    L->epi = epi;
    d.epilogue = lt_epi[epi];
    st = plain ? 1 : pp_gemm_plan_make(c, &d, n_algos, &L->plan);
    if (st < 0) return -1;
    L->fused = st == 0;
    if (epi == EPI_NONE && !L->fused) goto none;
    if (L->fused) return lin_pick(c, L);
    if (!plain) {
        static bool noted[EPI_COUNT];
        static const char *const names[EPI_COUNT] = {"none", "BIAS", "GELU_AUX_BIAS", "DGELU_BGRAD", "BGRADB", "DGELU"};
        if (!noted[epi]) {
            noted[epi] = true;
            pp_report_note(c->rep, "layer: cuBLASLt epilogue %s not available here (%s): a separate kernel does it",
                           names[epi], pp_gemm_plan_why());
        }
    }
    /* plain GEMM: the GELU input goes where the epilogue would have kept it */
    d.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    if (epi == EPI_GELU_AUX_BIAS) {
        d.D = d.aux;
        d.ldd = d.ldc = d.ld_aux;
    }
    d.bias = d.aux = NULL;
    st = pp_gemm_plan_make(c, &d, n_algos, &L->plan);
    if (st < 0) return -1;
    if (st > 0) goto none;
    return lin_pick(c, L);
none:
    pp_probe_error(__FILE__, __LINE__, "no cuBLASLt plan for a layer GEMM (%lldx%lldx%lld): %s", (long long)d.m,
                   (long long)d.n, (long long)d.k, pp_gemm_plan_why());
    return -1;
}

static int lin_make(pp_probe_ctx *c, lin *L, pp_gemm_desc d, int epi) { return lin_make_as(c, L, d, epi, false); }

static int lin_run(pp_probe_ctx *c, lin *L)
{
    int blocks = c->prop.multiProcessorCount * 8;
    PP_TRY(pp_gemm_plan_run(c, &L->plan));
    if (L->fused) return 0;
    switch (L->epi) {
    case EPI_BIAS:
        pp_bias_act_kernel<<<blocks, 256, 0, c->stream>>>((bf16 *)L->out, L->ld_out, (const bf16 *)L->bias, NULL, 0,
                                                          L->rows, L->cols, 0);
        break;
    case EPI_GELU_AUX_BIAS:
        pp_bias_act_kernel<<<blocks, 256, 0, c->stream>>>((bf16 *)L->out, L->ld_out, (const bf16 *)L->bias,
                                                          (bf16 *)L->act, L->ld_act, L->rows, L->cols, 1);
        break;
    case EPI_DGELU_BGRAD:
        /* out = dA (rows x cols, contiguous) -> dU = dA gelu'(U) where U is act; bias grad = column sums */
        pp_dgelu_kernel<<<blocks, 256, 0, c->stream>>>((bf16 *)L->out, (const bf16 *)L->act, L->rows * L->cols);
        PP_LAUNCHED();
        pp_colsum_kernel<<<(unsigned)((L->cols + 255) / 256), 256, 0, c->stream>>>((const bf16 *)L->out, L->cols,
                                                                                  L->rows, L->cols, (bf16 *)L->bias);
        break;
    case EPI_DGELU:
        pp_dgelu_kernel<<<blocks, 256, 0, c->stream>>>((bf16 *)L->out, (const bf16 *)L->act, L->rows * L->cols);
        break;
    case EPI_BGRADB:
        pp_colsum_kernel<<<(unsigned)((L->g_cols + 255) / 256), 256, 0, c->stream>>>(
            (const bf16 *)L->gsrc, L->g_ld, L->g_rows, L->g_cols, (bf16 *)L->bias);
        break;
    default: break;
    }
    PP_LAUNCHED();
    return 0;
fail:
    return -1;
}

/* ================================================================ the layer */

typedef struct {
    int64_t b, s, h, heads, d, ffn; /* heads and ffn of the shard */
    bool swiglu, flash;
    int64_t kv;                     /* key/value heads (GQA groups) of the shard, dividing heads */
    bool no_mlp;                    /* --no-mlp: everything but the MLP (ffn 0); the MLP's input gradient
                                     * (dln2) is a random tensor, as the MoE MLP's dgrad would leave it */
} layer_shape;

typedef struct {
    layer_shape sh;
    int64_t T, hq, nqkv, n1;        /* nqkv = hq + 2 kv d: the QKV GEMM's width (3 hq for MHA) */
    bool gqa;                       /* kv < heads: the expand and reduce kernels run */
    /* parameters and their gradients */
    bf16 *g1, *be1, *wqkv, *bqkv, *wp, *bp, *g2, *be2, *w1, *b1, *w2, *b2;
    bf16 *dwqkv, *dbqkv, *dwp, *dbp, *dw1, *db1, *dw2, *db2;
    float *dg1, *dbe1, *dg2, *dbe2;
    /* activations; qkv [T, nqkv] is the QKV GEMM's output, qkv_mha [T, 3 hq] the attention's input
     * (the same buffer for MHA, the expand kernel's output for GQA) */
    bf16 *x, *ln1, *qkv, *qkv_mha, *o, *x1, *ln2, *u, *a, *y;
    float *mean1, *rstd1, *mean2, *rstd2, *stats;
    /* gradients of activations; dqkv_mha [T, 3 hq] the attention's (dq | dk | dv), dqkv [T, nqkv]
     * what the QKV dgrad and wgrad read (the same buffer for MHA, the reduce kernel's output for GQA) */
    bf16 *dy, *da, *du, *dln2, *dx1, *dO, *dqkv, *dqkv_mha, *dln1, *dx;
    float *part;
    int ln_blocks, ln_threads;      /* forward: one block of ln_threads per row */
    int lnb_blocks, lnb_threads;    /* backward: R = lnb_threads / ln_threads rows at a time */
    size_t lnb_smem;
    lin qkv_f, proj_f, fc1_f, fc2_f;
    lin fc2_d, fc2_w, fc1_d, fc1_w, proj_d, proj_w, qkv_d, qkv_w;
    pp_attn *attn;
    int gelu_recipe;                /* how the GELU gradient and db1 are computed (gelu_bwd_make) */
    pp_dev_list mem;
} layer;

static void layer_free(layer *L)
{
    pp_attn_free(L->attn);
    lin *ls[12] = {&L->qkv_f, &L->proj_f, &L->fc1_f, &L->fc2_f, &L->fc2_d, &L->fc2_w,
                   &L->fc1_d, &L->fc1_w, &L->proj_d, &L->proj_w, &L->qkv_d, &L->qkv_w};
    for (int i = 0; i < 12; i++) pp_gemm_plan_free(&ls[i]->plan);
    pp_dev_list_free(&L->mem);
    memset(L, 0, sizeof *L);
}

#define LA(ptr, n, sz) PP_TRY(pp_dev_list_alloc(&L->mem, (void **)&(ptr), (size_t)(n) * (sz)))

/* The GELU MLP's backward needs dU = (dY W2) gelu'(U) and db1 = column sums of dU. Three ways:
 *   0  fc2 dgrad with cuBLASLt's DGELU_BGRAD epilogue (both in one GEMM), fc1 wgrad plain;
 *   1  fc2 dgrad with the DGELU epilogue, db1 from the BGRADB epilogue of fc1's wgrad;
 *   2  fc2 dgrad plain, a GELU-gradient kernel, db1 from fc1's wgrad (BGRADB).
 * Recipe 0 looks best on paper but its GEMM ran 1.1-1.3 ms slower than the plain one on an H100
 * (cuBLASLt 13.1, trace in NOTES.md); the probe times the three once per shape and keeps the
 * fastest (recipe -1), and the check runs all three against the CPU. */
enum { GELU_RECIPES = 3 };
static int gelu_bwd_make(pp_probe_ctx *c, layer *L, int r, lin *d2, lin *w1)
{
    const int64_t T = L->T, h = L->sh.h, f = L->sh.ffn, n1 = L->n1;
    pp_gemm_desc d = pp_desc_dgrad(L->dy, L->w2, L->du, T, h, f);
    pp_gemm_desc w = pp_desc_wgrad(L->du, L->ln2, L->dw1, T, n1, h);
    d.aux = L->u;
    d.ld_aux = f;
    if (r == 0) d.bias = L->db1;
    PP_TRY(lin_make_as(c, d2, d, r == 0 ? EPI_DGELU_BGRAD : EPI_DGELU, r == 2));
    d2->rows = T, d2->cols = f, d2->out = L->du, d2->bias = L->db1, d2->act = L->u;
    if (r == 0) {
        PP_TRY(lin_make(c, w1, w, EPI_NONE));
    } else {
        w.bias = L->db1;
        PP_TRY(lin_make(c, w1, w, EPI_BGRADB));
        w1->bias = L->db1, w1->gsrc = L->du, w1->g_rows = T, w1->g_cols = n1, w1->g_ld = n1;
    }
    return 0;
fail:
    return -1;
}

typedef struct {
    lin *a, *b;
} lin_pair;
static int run_pair(pp_probe_ctx *c, void *p)
{
    lin_pair *q = (lin_pair *)p;
    PP_TRY(lin_run(c, q->a));
    return lin_run(c, q->b);
fail:
    return -1;
}

static int gelu_bwd_choose(pp_probe_ctx *c, layer *L, int recipe)
{
    lin d2[GELU_RECIPES], w1[GELU_RECIPES];
    double best = 0, ms = 0;
    int pick = recipe, rc = -1;
    memset(d2, 0, sizeof d2);
    memset(w1, 0, sizeof w1);
    if (recipe < 0) {
        /* realistic operands for the trial runs (the forward overwrites them) */
        PP_TRY(pp_fill(c, L->u, (size_t)(L->T * L->n1), PP_BF16, 2.0f, 77));
        for (int r = 0; r < GELU_RECIPES; r++) {
            lin_pair q = {&d2[r], &w1[r]};
            PP_TRY(gelu_bwd_make(c, L, r, &d2[r], &w1[r]));
            PP_TRY(pp_time_ms_reps(c, run_pair, &q, false, 3, &ms));
            if (r == 0 || ms < best) {
                best = ms;
                pick = r;
            }
        }
    } else {
        PP_TRY(gelu_bwd_make(c, L, recipe, &d2[recipe], &w1[recipe]));
    }
    L->fc2_d = d2[pick];
    L->fc1_w = w1[pick];
    memset(&d2[pick], 0, sizeof d2[pick]);
    memset(&w1[pick], 0, sizeof w1[pick]);
    L->gelu_recipe = pick;
    rc = 0;
fail:
    for (int r = 0; r < GELU_RECIPES; r++) {
        pp_gemm_plan_free(&d2[r].plan);
        pp_gemm_plan_free(&w1[r].plan);
    }
    return rc;
}

/* Allocate, initialise (random, unit-variance activations), build GEMM and attention plans.
 * 0 ok, 1 attention unavailable in the asked mode (why), -1 error. */
static int layer_init(pp_probe_ctx *c, layer *L, const layer_shape *sh, unsigned long long seed, int recipe,
                      char *why, size_t why_n)
{
    int64_t T, h, hq, nqkv, n1, f;
    int st = 0;
    memset(L, 0, sizeof *L);
    L->sh = *sh;
    T = L->T = sh->b * sh->s;
    h = sh->h;
    hq = L->hq = sh->heads * sh->d;
    if (sh->kv < 1 || sh->kv > sh->heads || sh->heads % sh->kv) {
        pp_probe_error(__FILE__, __LINE__, "layer: %lld kv heads do not divide %lld heads", (long long)sh->kv,
                       (long long)sh->heads);
        return -1;
    }
    L->gqa = sh->kv < sh->heads;
    nqkv = L->nqkv = hq + 2 * sh->kv * sh->d;
    f = sh->no_mlp ? 0 : sh->ffn;
    n1 = L->n1 = sh->swiglu ? 2 * f : f;
    if (h % 8 || hq % 8 || f % 8 || h / 8 > 4 * 1024 || (!sh->no_mlp && f < 8)) {
        pp_probe_error(__FILE__, __LINE__, "layer: hidden, heads*head_dim and ffn must be multiples of 8 (hidden <= 32768)");
        return -1;
    }
    if (L->gqa && (sh->d % 8 || 3 * hq / 8 > INT32_MAX)) {
        pp_probe_error(__FILE__, __LINE__, "layer: grouped-query attention needs a head size that is a multiple of 8");
        return -1;
    }
    LA(L->g1, h, 2); LA(L->be1, h, 2); LA(L->g2, h, 2); LA(L->be2, h, 2);
    LA(L->wqkv, nqkv * h, 2); LA(L->bqkv, nqkv, 2); LA(L->wp, h * hq, 2); LA(L->bp, h, 2);
    LA(L->dwqkv, nqkv * h, 2); LA(L->dbqkv, nqkv, 2); LA(L->dwp, h * hq, 2); LA(L->dbp, h, 2);
    if (!sh->no_mlp) {
        LA(L->w1, n1 * h, 2); LA(L->b1, n1, 2); LA(L->w2, h * f, 2); LA(L->b2, h, 2);
        LA(L->dw1, n1 * h, 2); LA(L->db1, n1, 2); LA(L->dw2, h * f, 2); LA(L->db2, h, 2);
        LA(L->u, T * n1, 2); LA(L->a, T * f, 2); LA(L->y, T * h, 2);
        LA(L->da, T * f, 2); LA(L->du, T * n1, 2);
    }
    LA(L->dg1, h, 4); LA(L->dbe1, h, 4); LA(L->dg2, h, 4); LA(L->dbe2, h, 4);
    LA(L->x, T * h, 2); LA(L->ln1, T * h, 2); LA(L->qkv, T * nqkv, 2); LA(L->o, T * hq, 2);
    LA(L->x1, T * h, 2); LA(L->ln2, T * h, 2);
    LA(L->mean1, T, 4); LA(L->rstd1, T, 4); LA(L->mean2, T, 4); LA(L->rstd2, T, 4);
    LA(L->stats, sh->b * sh->heads * sh->s, 4);
    LA(L->dy, T * h, 2); LA(L->dln2, T * h, 2); LA(L->dx1, T * h, 2);
    LA(L->dO, T * hq, 2); LA(L->dqkv, T * nqkv, 2); LA(L->dln1, T * h, 2); LA(L->dx, T * h, 2);
    L->qkv_mha = L->qkv;
    L->dqkv_mha = L->dqkv;
    if (L->gqa) {
        LA(L->qkv_mha, T * 3 * hq, 2);
        LA(L->dqkv_mha, T * 3 * hq, 2);
    }
    {
        int thr = (int)((h / 8 + LN_MAXV - 1) / LN_MAXV);
        thr = (thr + 31) / 32 * 32;
        if (thr < 32) thr = 32;
        L->ln_threads = thr;
        L->ln_blocks = (int)T;
        /* backward: 256-thread blocks (several rows each when a row needs fewer threads), 4 blocks
         * per SM: 1024 threads with 8-12 16-byte loads in flight each per SM */
        int64_t R = thr >= 256 ? 1 : 256 / thr, want = 4 * (int64_t)c->prop.multiProcessorCount;
        L->lnb_threads = (int)(R * thr);
        L->lnb_blocks = (int)((T + R - 1) / R < want ? (T + R - 1) / R : want);
        L->lnb_smem = R > 1 ? (size_t)(2 * h) * sizeof(float) : 0;
        if (L->lnb_smem > 48 * 1024) {
            pp_probe_error(__FILE__, __LINE__, "layer: LayerNorm backward needs %zu bytes of shared memory", L->lnb_smem);
            return -1;
        }
    }
    LA(L->part, (int64_t)L->lnb_blocks * 2 * h, 4);

    /* init: uniform with the variance of nn.Linear's default scale family (unit-variance outputs) */
    PP_TRY(pp_fill(c, L->x, (size_t)(T * h), PP_BF16, 1.0f, seed + 1));
    PP_TRY(pp_fill(c, L->dy, (size_t)(T * h), PP_BF16, 1.0f, seed + 2));
    PP_TRY(pp_fill_affine(c, L->g1, (size_t)h, PP_BF16, 1.0f, 0.1f, seed + 3));
    PP_TRY(pp_fill(c, L->be1, (size_t)h, PP_BF16, 0.1f, seed + 4));
    PP_TRY(pp_fill_affine(c, L->g2, (size_t)h, PP_BF16, 1.0f, 0.1f, seed + 5));
    PP_TRY(pp_fill(c, L->be2, (size_t)h, PP_BF16, 0.1f, seed + 6));
    PP_TRY(pp_fill(c, L->wqkv, (size_t)(nqkv * h), PP_BF16, (float)sqrt(3.0 / (double)h), seed + 7));
    PP_TRY(pp_fill(c, L->bqkv, (size_t)nqkv, PP_BF16, 0.1f, seed + 8));
    PP_TRY(pp_fill(c, L->wp, (size_t)(h * hq), PP_BF16, (float)sqrt(3.0 / (double)hq), seed + 9));
    PP_TRY(pp_fill(c, L->bp, (size_t)h, PP_BF16, 0.1f, seed + 10));
    if (sh->no_mlp) {
        /* the gradient the MLP's input would get back (its dgrad's output) */
        PP_TRY(pp_fill(c, L->dln2, (size_t)(T * h), PP_BF16, 1.0f, seed + 15));
    } else {
        PP_TRY(pp_fill(c, L->w1, (size_t)(n1 * h), PP_BF16, (float)sqrt(3.0 / (double)h), seed + 11));
        PP_TRY(pp_fill(c, L->b1, (size_t)n1, PP_BF16, 0.1f, seed + 12));
        PP_TRY(pp_fill(c, L->w2, (size_t)(h * f), PP_BF16, (float)sqrt(3.0 / (double)f), seed + 13));
        PP_TRY(pp_fill(c, L->b2, (size_t)h, PP_BF16, 0.1f, seed + 14));
    }

    /* forward GEMMs */
    {
        pp_gemm_desc d = pp_desc_fwd(L->ln1, L->wqkv, L->qkv, T, nqkv, h);
        d.bias = L->bqkv;
        PP_TRY(lin_make(c, &L->qkv_f, d, EPI_BIAS));
        L->qkv_f.rows = T, L->qkv_f.cols = nqkv, L->qkv_f.out = L->qkv, L->qkv_f.ld_out = nqkv, L->qkv_f.bias = L->bqkv;
    }
    {
        pp_gemm_desc d = pp_desc_fwd(L->o, L->wp, L->x1, T, h, hq);
        d.bias = L->bp;
        d.C = L->x; /* residual: x1 = x + o Wp^T + bp */
        d.beta = 1;
        PP_TRY(lin_make(c, &L->proj_f, d, EPI_BIAS));
        L->proj_f.rows = T, L->proj_f.cols = h, L->proj_f.out = L->x1, L->proj_f.ld_out = h, L->proj_f.bias = L->bp;
    }
    if (sh->no_mlp) {
        /* no MLP GEMMs: their plans stay zeroed (layer_free accepts that) */
    } else if (!sh->swiglu) {
        pp_gemm_desc d = pp_desc_fwd(L->ln2, L->w1, L->a, T, f, h);
        d.bias = L->b1;
        d.aux = L->u;
        d.ld_aux = f;
        PP_TRY(lin_make(c, &L->fc1_f, d, EPI_GELU_AUX_BIAS));
        L->fc1_f.rows = T, L->fc1_f.cols = f, L->fc1_f.out = L->u, L->fc1_f.ld_out = f, L->fc1_f.bias = L->b1;
        L->fc1_f.act = L->a, L->fc1_f.ld_act = f;
    } else {
        pp_gemm_desc d = pp_desc_fwd(L->ln2, L->w1, L->u, T, n1, h);
        d.bias = L->b1;
        PP_TRY(lin_make(c, &L->fc1_f, d, EPI_BIAS));
        L->fc1_f.rows = T, L->fc1_f.cols = n1, L->fc1_f.out = L->u, L->fc1_f.ld_out = n1, L->fc1_f.bias = L->b1;
    }
    if (!sh->no_mlp) {
        pp_gemm_desc d = pp_desc_fwd(L->a, L->w2, L->y, T, h, f);
        d.bias = L->b2;
        d.C = L->x1;
        d.beta = 1;
        PP_TRY(lin_make(c, &L->fc2_f, d, EPI_BIAS));
        L->fc2_f.rows = T, L->fc2_f.cols = h, L->fc2_f.out = L->y, L->fc2_f.ld_out = h, L->fc2_f.bias = L->b2;
    }
    /* backward GEMMs */
    if (sh->no_mlp) {
        /* none for the MLP */
    } else if (!sh->swiglu) {
        PP_TRY(gelu_bwd_choose(c, L, recipe));
    } else {
        pp_gemm_desc d = pp_desc_dgrad(L->dy, L->w2, L->da, T, h, f);
        PP_TRY(lin_make(c, &L->fc2_d, d, EPI_NONE));
    }
    if (!sh->no_mlp) {
        pp_gemm_desc d = pp_desc_wgrad(L->dy, L->a, L->dw2, T, h, f);
        d.bias = L->db2;
        PP_TRY(lin_make(c, &L->fc2_w, d, EPI_BGRADB));
        L->fc2_w.bias = L->db2, L->fc2_w.gsrc = L->dy, L->fc2_w.g_rows = T, L->fc2_w.g_cols = h, L->fc2_w.g_ld = h;
    }
    if (!sh->no_mlp) {
        pp_gemm_desc d = pp_desc_dgrad(L->du, L->w1, L->dln2, T, n1, h);
        PP_TRY(lin_make(c, &L->fc1_d, d, EPI_NONE));
    }
    if (sh->swiglu && !sh->no_mlp) {
        pp_gemm_desc d = pp_desc_wgrad(L->du, L->ln2, L->dw1, T, n1, h);
        d.bias = L->db1;
        PP_TRY(lin_make(c, &L->fc1_w, d, EPI_BGRADB));
        L->fc1_w.bias = L->db1, L->fc1_w.gsrc = L->du, L->fc1_w.g_rows = T, L->fc1_w.g_cols = n1, L->fc1_w.g_ld = n1;
    }
    {
        pp_gemm_desc d = pp_desc_dgrad(L->dx1, L->wp, L->dO, T, h, hq);
        PP_TRY(lin_make(c, &L->proj_d, d, EPI_NONE));
    }
    {
        pp_gemm_desc d = pp_desc_wgrad(L->dx1, L->o, L->dwp, T, h, hq);
        d.bias = L->dbp;
        PP_TRY(lin_make(c, &L->proj_w, d, EPI_BGRADB));
        L->proj_w.bias = L->dbp, L->proj_w.gsrc = L->dx1, L->proj_w.g_rows = T, L->proj_w.g_cols = h, L->proj_w.g_ld = h;
    }
    {
        pp_gemm_desc d = pp_desc_dgrad(L->dqkv, L->wqkv, L->dln1, T, nqkv, h);
        PP_TRY(lin_make(c, &L->qkv_d, d, EPI_NONE));
    }
    {
        pp_gemm_desc d = pp_desc_wgrad(L->dqkv, L->ln1, L->dwqkv, T, nqkv, h);
        d.bias = L->dbqkv;
        PP_TRY(lin_make(c, &L->qkv_w, d, EPI_BGRADB));
        L->qkv_w.bias = L->dbqkv, L->qkv_w.gsrc = L->dqkv, L->qkv_w.g_rows = T, L->qkv_w.g_cols = nqkv,
        L->qkv_w.g_ld = nqkv;
    }
    /* attention on the packed multi-head QKV [T, 3 hq] (for GQA the expanded copy) */
    {
        pp_attn_shape ash;
        pp_attn_io io;
        memset(&ash, 0, sizeof ash);
        ash.b = sh->b;
        ash.s = sh->s;
        ash.heads = sh->heads;
        ash.d = sh->d;
        ash.ld_qkv = 3 * hq;
        ash.ld_o = hq;
        io.q = L->qkv_mha;
        io.k = L->qkv_mha + hq;
        io.v = L->qkv_mha + 2 * hq;
        io.o = L->o;
        io.stats = L->stats;
        io.dout = L->dO;
        io.dq = L->dqkv_mha;
        io.dk = L->dqkv_mha + hq;
        io.dv = L->dqkv_mha + 2 * hq;
        st = pp_attn_create(c, &ash, sh->flash, &io, &L->attn, why, why_n);
        if (st) return st;
    }
    return 0;
fail:
    return -1;
}

/* The GQA expand (forward) or reduce (backward) kernel of the layer: a block per row, up to
 * 16 per SM's worth of rows at once, 128 threads over the row's 16-byte vectors. */
static int gqa_launch(pp_probe_ctx *c, layer *L, bool bwd)
{
    const int64_t T = L->T, want = (int64_t)c->prop.multiProcessorCount * 16;
    const int hqv = (int)(L->hq / 8), hkvv = (int)(L->sh.kv * L->sh.d / 8), dv = (int)(L->sh.d / 8);
    const int rep = (int)(L->sh.heads / L->sh.kv);
    const unsigned blocks = (unsigned)(T < want ? T : want);
    if (bwd)
        pp_gqa_reduce_kernel<<<blocks, 128, 0, c->stream>>>(L->dqkv_mha, L->dqkv, T, hqv, hkvv, dv, rep);
    else
        pp_gqa_expand_kernel<<<blocks, 128, 0, c->stream>>>(L->qkv, L->qkv_mha, T, hqv, hkvv, dv, rep);
    PP_LAUNCHED();
    return 0;
fail:
    return -1;
}

static int layer_fwd(pp_probe_ctx *c, void *arg)
{
    layer *L = (layer *)arg;
    const int64_t T = L->T, h = L->sh.h;
    TRACE(c, "start");
    pp_ln_fwd_kernel<<<(unsigned)T, L->ln_threads, 0, c->stream>>>(L->x, L->g1, L->be1, L->ln1, L->mean1, L->rstd1, h);
    PP_LAUNCHED();
    TRACE(c, "ln1");
    PP_TRY(lin_run(c, &L->qkv_f));
    TRACE(c, "qkv");
    if (L->gqa) {
        PP_TRY(gqa_launch(c, L, false));
        TRACE(c, "qkv.expand");
    }
    PP_TRY(pp_attn_fwd(c, L->attn));
    TRACE(c, "attn");
    PP_TRY(lin_run(c, &L->proj_f));
    TRACE(c, "proj");
    pp_ln_fwd_kernel<<<(unsigned)T, L->ln_threads, 0, c->stream>>>(L->x1, L->g2, L->be2, L->ln2, L->mean2, L->rstd2, h);
    PP_LAUNCHED();
    TRACE(c, "ln2");
    if (L->sh.no_mlp) return 0; /* ln2 is the MLP's input */
    PP_TRY(lin_run(c, &L->fc1_f));
    if (L->sh.swiglu) {
        PP_TRY(pp_swiglu_fwd(c, L->u, L->a, T, L->sh.ffn));
    }
    TRACE(c, "fc1");
    PP_TRY(lin_run(c, &L->fc2_f));
    TRACE(c, "fc2");
    return 0;
fail:
    return -1;
}

static int layer_bwd(pp_probe_ctx *c, layer *L)
{
    const int64_t T = L->T, h = L->sh.h;
    if (!L->sh.no_mlp) {
        /* (without the MLP, dln2 holds the gradient its dgrad would have written) */
        PP_TRY(lin_run(c, &L->fc2_d));
        if (L->sh.swiglu) {
            PP_TRY(pp_swiglu_bwd(c, L->da, L->u, L->du, T, L->sh.ffn));
        }
        TRACE(c, "fc2.dgrad");
        PP_TRY(lin_run(c, &L->fc2_w));
        TRACE(c, "fc2.wgrad");
        PP_TRY(lin_run(c, &L->fc1_d));
        TRACE(c, "fc1.dgrad");
        PP_TRY(lin_run(c, &L->fc1_w));
        TRACE(c, "fc1.wgrad");
    }
    pp_ln_bwd_kernel<<<L->lnb_blocks, L->lnb_threads, L->lnb_smem, c->stream>>>(
        L->dln2, L->x1, L->mean2, L->rstd2, L->g2, L->dy, L->dx1, L->part, T, h, L->ln_threads);
    PP_LAUNCHED();
    pp_ln_sum_kernel<<<(unsigned)((h + 31) / 32), dim3(32, 8), 0, c->stream>>>(L->part, L->lnb_blocks, h, L->dg2,
                                                                               L->dbe2);
    PP_LAUNCHED();
    TRACE(c, "ln2.bwd");
    PP_TRY(lin_run(c, &L->proj_d));
    TRACE(c, "proj.dgrad");
    PP_TRY(lin_run(c, &L->proj_w));
    TRACE(c, "proj.wgrad");
    PP_TRY(pp_attn_bwd(c, L->attn));
    TRACE(c, "attn.bwd");
    if (L->gqa) {
        PP_TRY(gqa_launch(c, L, true));
        TRACE(c, "qkv.reduce");
    }
    PP_TRY(lin_run(c, &L->qkv_d));
    TRACE(c, "qkv.dgrad");
    PP_TRY(lin_run(c, &L->qkv_w));
    TRACE(c, "qkv.wgrad");
    pp_ln_bwd_kernel<<<L->lnb_blocks, L->lnb_threads, L->lnb_smem, c->stream>>>(
        L->dln1, L->x, L->mean1, L->rstd1, L->g1, L->dx1, L->dx, L->part, T, h, L->ln_threads);
    PP_LAUNCHED();
    pp_ln_sum_kernel<<<(unsigned)((h + 31) / 32), dim3(32, 8), 0, c->stream>>>(L->part, L->lnb_blocks, h, L->dg1,
                                                                               L->dbe1);
    PP_LAUNCHED();
    TRACE(c, "ln1.bwd");
    return 0;
fail:
    return -1;
}

static int layer_fwdbwd(pp_probe_ctx *c, void *arg)
{
    PP_TRY(layer_fwd(c, arg));
    return layer_bwd(c, (layer *)arg);
fail:
    return -1;
}

static int layer_trace(pp_probe_ctx *c, layer *L)
{
    int rc = -1;
    float ms = 0;
    memset(&trace, 0, sizeof trace);
    for (int i = 0; i < 48; i++) PP_CU(cudaEventCreate(&trace.ev[i]));
    trace.on = true;
    PP_TRY(layer_fwdbwd(c, L));
    trace.on = false;
    PP_CU(cudaStreamSynchronize(c->stream));
    fprintf(stderr, "layer trace h=%lld heads=%lld", (long long)L->sh.h, (long long)L->sh.heads);
    if (L->gqa) fprintf(stderr, " kv=%lld", (long long)L->sh.kv);
    fprintf(stderr, " s=%lld b=%lld gelu-recipe %d (ms):", (long long)L->sh.s, (long long)L->sh.b, L->gelu_recipe);
    for (int i = 1; i < trace.n; i++) {
        PP_CU(cudaEventElapsedTime(&ms, trace.ev[i - 1], trace.ev[i]));
        fprintf(stderr, " %s %.3f", trace.name[i], ms);
    }
    fprintf(stderr, "\n");
    rc = 0;
fail:
    trace.on = false;
    for (int i = 0; i < 48; i++)
        if (trace.ev[i]) cudaEventDestroy(trace.ev[i]);
    memset(&trace, 0, sizeof trace);
    return rc;
}

/* Model FLOPs of the shard's forward: 2 T (h nqkv + hq h + h n1 + f h) + 4 b s^2 hq, nqkv =
 * (heads + 2 kv) d (GQA's narrower K and V; the expand copy does no FLOPs); GPT at tp 1:
 * 24 b s h^2 + 4 b s^2 h (Korthikanti et al. 2022, eq. 7 without the logits). */
static double layer_fwd_flops(const layer *L)
{
    const double T = (double)L->T, h = (double)L->sh.h, hq = (double)L->hq;
    return 2 * T * (h * (double)L->nqkv + hq * h + h * (double)L->n1 + (double)L->sh.ffn * h) +
           4.0 * (double)L->sh.b * (double)L->sh.s * (double)L->sh.s * hq;
}

/* ================================================================ check against the CPU */

/* The layer at b 2, s 128, two heads of the timed head size (GQA: four heads in two kv groups, so
 * that the expand and reduce kernels are checked too), against pp_ref_layer. */
static int layer_check(pp_probe_ctx *c, const layer_shape *big, int recipe, double *err, char *which, size_t which_n,
                       char *why, size_t why_n)
{
    layer L;
    layer_shape sh;
    pp_ref_shape rs;
    pp_ref_weights w;
    pp_ref_grads g;
    float *hx = NULL, *hdy = NULL, *hw[12] = {NULL};
    double *y = NULL, *dx = NULL, *dwqkv = NULL, *dw1 = NULL, *dw2 = NULL, *dwp = NULL, *dg1 = NULL, *db1 = NULL,
           *db2 = NULL, *dbqkv = NULL;
    int rc = -1, st = 0;
    int64_t T, h, hq, nqkv, n1, f;
    memset(&L, 0, sizeof L);
    memset(&g, 0, sizeof g);
    *err = INFINITY;
    which[0] = 0;
    sh.b = 2;
    sh.s = 128;
    sh.heads = big->kv < big->heads ? 4 : 2;
    sh.kv = 2;
    sh.d = big->d;
    sh.h = 2 * big->d;
    sh.ffn = big->swiglu ? 3 * sh.h : 4 * sh.h;
    sh.swiglu = big->swiglu;
    sh.flash = big->flash;
    /* the whole layer, also for a --no-mlp size: its attention, norms and residuals are the same
     * kernels, and the reference has them only with an MLP */
    sh.no_mlp = false;
    st = layer_init(c, &L, &sh, 0xC0FFEEull, recipe, why, why_n);
    if (st) {
        rc = st;
        goto fail;
    }
    T = L.T, h = sh.h, hq = L.hq, nqkv = L.nqkv, n1 = L.n1, f = sh.ffn;
    /* poison every output, run forward and backward once */
    PP_TRY(pp_poison(c, L.y, (size_t)(T * h) * 2));
    PP_TRY(pp_poison(c, L.dx, (size_t)(T * h) * 2));
    PP_TRY(pp_poison(c, L.dwqkv, (size_t)(nqkv * h) * 2));
    PP_TRY(pp_poison(c, L.dw1, (size_t)(n1 * h) * 2));
    PP_TRY(pp_poison(c, L.dw2, (size_t)(h * f) * 2));
    PP_TRY(pp_poison(c, L.dwp, (size_t)(h * hq) * 2));
    PP_TRY(pp_poison(c, L.db1, (size_t)n1 * 2));
    PP_TRY(pp_poison(c, L.dg1, (size_t)h * 4));
    PP_TRY(pp_poison(c, L.db2, (size_t)h * 2));
    PP_TRY(pp_poison(c, L.dbqkv, (size_t)nqkv * 2));
    PP_TRY(layer_fwdbwd(c, &L));
    PP_CU(cudaStreamSynchronize(c->stream));
    /* the CPU gets exactly the bf16 values the GPU used */
    {
        const void *src[12] = {L.g1, L.be1, L.wqkv, L.bqkv, L.wp, L.bp, L.g2, L.be2, L.w1, L.b1, L.w2, L.b2};
        const int64_t n[12] = {h, h, nqkv * h, nqkv, h * hq, h, h, h, n1 * h, n1, h * f, h};
        for (int i = 0; i < 12; i++) PP_TRY(pp_to_host_floats(c, src[i], (size_t)n[i], PP_BF16, &hw[i]));
        PP_TRY(pp_to_host_floats(c, L.x, (size_t)(T * h), PP_BF16, &hx));
        PP_TRY(pp_to_host_floats(c, L.dy, (size_t)(T * h), PP_BF16, &hdy));
    }
    w.ln1_g = hw[0], w.ln1_b = hw[1], w.wqkv = hw[2], w.bqkv = hw[3], w.wproj = hw[4], w.bproj = hw[5];
    w.ln2_g = hw[6], w.ln2_b = hw[7], w.w1 = hw[8], w.b1 = hw[9], w.w2 = hw[10], w.b2 = hw[11];
    rs.b = sh.b, rs.s = sh.s, rs.h = h, rs.heads = sh.heads, rs.head_dim = sh.d, rs.ffn = f, rs.swiglu = sh.swiglu;
    rs.kv_heads = sh.kv;
    y = (double *)calloc((size_t)(T * h), sizeof *y);
    dx = (double *)calloc((size_t)(T * h), sizeof *dx);
    dwqkv = (double *)calloc((size_t)(nqkv * h), sizeof *dwqkv);
    dw1 = (double *)calloc((size_t)(n1 * h), sizeof *dw1);
    dw2 = (double *)calloc((size_t)(h * f), sizeof *dw2);
    dwp = (double *)calloc((size_t)(h * hq), sizeof *dwp);
    dg1 = (double *)calloc((size_t)h, sizeof *dg1);
    db1 = (double *)calloc((size_t)n1, sizeof *db1);
    db2 = (double *)calloc((size_t)h, sizeof *db2);
    dbqkv = (double *)calloc((size_t)nqkv, sizeof *dbqkv);
    if (!y || !dx || !dwqkv || !dw1 || !dw2 || !dwp || !dg1 || !db1 || !db2 || !dbqkv) {
        pp_probe_error(__FILE__, __LINE__, "out of memory");
        goto fail;
    }
    g.dx = dx, g.dwqkv = dwqkv, g.dw1 = dw1, g.dw2 = dw2, g.dwproj = dwp, g.dln1_g = dg1, g.db1 = db1;
    g.db2 = db2, g.dbqkv = dbqkv;
    if (pp_ref_layer(&rs, &w, hx, hdy, y, &g)) {
        pp_probe_error(__FILE__, __LINE__, "out of memory");
        goto fail;
    }
    *err = 0;
    PP_TRY(pp_check_worst(c, L.y, PP_BF16, y, (size_t)(T * h), "y", err, which, which_n));
    PP_TRY(pp_check_worst(c, L.dx, PP_BF16, dx, (size_t)(T * h), "dx", err, which, which_n));
    PP_TRY(pp_check_worst(c, L.dwqkv, PP_BF16, dwqkv, (size_t)(nqkv * h), "dWqkv", err, which, which_n));
    PP_TRY(pp_check_worst(c, L.dwp, PP_BF16, dwp, (size_t)(h * hq), "dWproj", err, which, which_n));
    PP_TRY(pp_check_worst(c, L.dw1, PP_BF16, dw1, (size_t)(n1 * h), "dW1", err, which, which_n));
    PP_TRY(pp_check_worst(c, L.dw2, PP_BF16, dw2, (size_t)(h * f), "dW2", err, which, which_n));
    PP_TRY(pp_check_worst(c, L.db1, PP_BF16, db1, (size_t)n1, "db1", err, which, which_n));
    PP_TRY(pp_check_worst(c, L.dg1, PP_F32, dg1, (size_t)h, "dgamma1", err, which, which_n));
    PP_TRY(pp_check_worst(c, L.db2, PP_BF16, db2, (size_t)h, "db2", err, which, which_n));
    PP_TRY(pp_check_worst(c, L.dbqkv, PP_BF16, dbqkv, (size_t)nqkv, "dbqkv", err, which, which_n));
    rc = 0;
fail:
    layer_free(&L);
    free(hx);
    free(hdy);
    for (int i = 0; i < 12; i++) free(hw[i]);
    free(y); free(dx); free(dwqkv); free(dw1); free(dw2); free(dwp); free(dg1); free(db1); free(db2); free(dbqkv);
    return rc;
}

/* ================================================================ the probe */

typedef struct {
    int64_t hidden, heads, seq, mbs, tp, ffn;
    bool swiglu;
    int64_t kv_heads;               /* the model's (all shards'); = heads for MHA */
    bool no_mlp;                    /* --no-mlp (ffn 0) */
    int64_t head_dim;               /* --head-dim; 0: hidden / heads */
} layer_job;

static int build_jobs(const pp_probe_opts *o, layer_job *jobs, int cap)
{
    int n = 0;
    if (o->quick) {
        layer_job j = {512, 4, 256, 2, 1, o->no_mlp ? 0 : 2048, false, 4, o->no_mlp, 0};
        jobs[n++] = j;
        return n;
    }
    if (o->hidden) {
        for (int i = 0; i < o->n_tp && n < cap; i++) {
            layer_job j = {o->hidden, o->heads, o->seq ? o->seq : 2048, o->mbs ? o->mbs : 1, o->tp[i],
                           o->no_mlp ? 0 : o->ffn ? o->ffn : 4 * o->hidden, o->swiglu,
                           o->kv_heads ? o->kv_heads : o->heads, o->no_mlp, o->head_dim};
            jobs[n++] = j;
        }
        return n;
    }
    /* the anchors' GPT layers (h100_torch.jsonl "layer" rows) */
    layer_job def[5] = {{1024, 16, 1024, 16, 1, 4096, false, 16, false, 0},
                        {2048, 16, 2048, 8, 1, 8192, false, 16, false, 0},
                        {4096, 32, 2048, 4, 1, 16384, false, 32, false, 0},
                        {5120, 40, 2048, 4, 1, 20480, false, 40, false, 0},
                        {8192, 64, 2048, 2, 1, 32768, false, 64, false, 0}};
    for (int i = 0; i < 5 && n < cap; i++) {
        jobs[n] = def[i];
        if (o->no_mlp) jobs[n].ffn = 0, jobs[n].no_mlp = true;
        n++;
    }
    return n;
}

/* One job: the CPU check of its (head size, activation, attention) once, then the layer at its size
 * timed. 0 (a row, a note or a wrong result), -1 on a failure (an OOM among them: the caller reports
 * the size and goes on). L is freed by the caller. */
static int layer_one(pp_probe_ctx *c, const layer_job *j, int ji, int checked[8][2][2], double check_err[8][2][2],
                     layer *L)
{
    layer_shape sh;
    double ms_f = 0, ms_fb = 0, err = 0;
    int st = 0, di = 0;
    bool flash = true;
    char why[512], which[64] = "";
    sh.b = j->mbs;
    sh.s = j->seq;
    sh.h = j->hidden;
    sh.heads = j->heads / j->tp;
    sh.d = j->head_dim ? j->head_dim : j->hidden / j->heads;
    sh.ffn = j->ffn / j->tp;
    sh.swiglu = j->swiglu;
    sh.kv = j->kv_heads / j->tp;
    sh.no_mlp = j->no_mlp;
    /* checks kept per head size (other sizes: every time) and per MHA (0-3) or GQA (4-7) */
    di = (sh.d == 64 ? 0 : sh.d == 128 ? 1 : sh.d == 256 ? 2 : 3) + (sh.kv < sh.heads ? 4 : 0);
    /* flash attention when cuDNN builds it for this shape, else the unfused path; --attention
     * flash|unfused asks for one of them only */
    const int attn = c->opt->attention;
    for (int attempt = attn == 2 ? 1 : 0; attempt < (attn == 1 ? 1 : 2); attempt++) {
        flash = attempt == 0;
        sh.flash = flash;
        int *ck = &checked[di][j->swiglu][flash];
        if (*ck == 0 || di % 4 == 3) {
            /* every GELU-gradient recipe the timing may pick, each against the CPU */
            err = 0;
            /* (without the MLP one recipe checks the attention path the size times) */
            for (int r = 0; r < (j->swiglu || j->no_mlp ? 1 : GELU_RECIPES); r++) {
                double e = 0;
                char w1[32];
                st = layer_check(c, &sh, j->swiglu ? -1 : r, &e, w1, sizeof w1, why, sizeof why);
                if (st) break;
                if (!(e <= err)) {
                    err = e;
                    snprintf(which, sizeof which, "%s (recipe %d)", w1, r);
                }
            }
            if (st < 0) return -1;
            if (st > 0) {
                pp_report_note(c->rep, "layer: %s attention unavailable (%s)", flash ? "flash" : "unfused", why);
                *ck = -1;
                continue;
            }
            /* bf16 activations, weights and gradients through ~10 roundings: about 1e-2 */
            if (!(err <= 5e-2)) {
                pp_report_fail(c->rep, "layer (head_dim %lld, %s, %s attention%s): %s off the CPU reference by %.3g",
                               (long long)sh.d, j->swiglu ? "swiglu" : "gelu", flash ? "flash" : "unfused",
                               sh.kv < sh.heads ? ", grouped-query" : "", which, err);
                *ck = -1;
                continue;
            }
            *ck = 1;
            check_err[di][j->swiglu][flash] = err;
        }
        if (*ck == 1) break;
    }
    if (checked[di][j->swiglu][flash] != 1) return 0;
    /* the size: what its buffers take is counted from here (the check's are freed) */
    pp_alloc_mark();
    st = layer_init(c, L, &sh, 0xBEEF00ull + (unsigned long long)ji, -1, why, sizeof why);
    if (st < 0) return -1;
    if (st > 0) {
        pp_report_note(c->rep, "layer hidden=%lld: attention unavailable at this size (%s)", (long long)j->hidden, why);
        return 0;
    }
    PP_TRY(pp_time_ms(c, layer_fwd, L, true, &ms_f));
    PP_TRY(pp_time_ms(c, layer_fwdbwd, L, true, &ms_fb));
    if (getenv("PARPLAN_PROBE_TRACE")) PP_TRY(layer_trace(c, L));
    {
        pp_layer_row row;
        double fl = layer_fwd_flops(L);
        memset(&row, 0, sizeof row);
        row.hidden = j->hidden;
        row.heads = j->heads;
        row.seq = j->seq;
        row.mbs = j->mbs;
        row.tp = j->tp;
        row.ffn = j->ffn;
        row.kv_heads = j->kv_heads;
        snprintf(row.act, sizeof row.act, "%s", j->no_mlp ? "none" : j->swiglu ? "swiglu" : "gelu");
        snprintf(row.attention, sizeof row.attention, "%s", flash ? "flash" : "unfused");
        row.fwd_ms = ms_f;
        row.fwdbwd_ms = ms_fb;
        row.fwd_tflops = fl / (ms_f * 1e-3) / 1e12;
        row.fwdbwd_tflops = 3 * fl / (ms_fb * 1e-3) / 1e12;
        row.check_err = check_err[di][j->swiglu][flash];
        if (pp_report_add_layer(c->rep, &row)) pp_report_fail(c->rep, "layer: no valid time");
    }
    return 0;
fail:
    return -1;
}

int pp_probe_layer(pp_probe_ctx *c)
{
    layer_job jobs[16];
    int n_jobs = build_jobs(c->opt, jobs, 16), rc = -1;
    layer L;
    /* checked (head size and MHA/GQA, act, attention) combinations: 0 unchecked, 1 ok, -1 wrong or
     * unavailable */
    int checked[8][2][2];
    double check_err[8][2][2];
    memset(&L, 0, sizeof L);
    memset(checked, 0, sizeof checked);
    memset(check_err, 0, sizeof check_err);
    c->target_ms = 60;
    for (int ji = 0; ji < n_jobs; ji++) {
        const layer_job *j = &jobs[ji];
        if (j->heads % j->tp || j->ffn % j->tp || (!j->head_dim && j->hidden % j->heads)) {
            pp_report_note(c->rep, "layer hidden=%lld heads=%lld tp=%lld: heads, ffn and hidden do not split evenly",
                           (long long)j->hidden, (long long)j->heads, (long long)j->tp);
            continue;
        }
        /* Megatron-LM splits the kv groups over TP (num_query_groups / tp per rank, an error when it
         * does not divide) */
        if (j->kv_heads < 1 || j->heads % j->kv_heads || j->kv_heads % j->tp) {
            pp_report_note(c->rep, "layer hidden=%lld heads=%lld kv_heads=%lld tp=%lld: the kv heads do not divide "
                           "the heads or do not split over tp", (long long)j->hidden, (long long)j->heads,
                           (long long)j->kv_heads, (long long)j->tp);
            continue;
        }
        pp_alloc_mark();
        if (layer_one(c, j, ji, checked, check_err, &L)) {
            /* out of memory at this size (its check or the layer itself): a row saying so, its buffers
             * freed, on to the next size */
            if (pp_oom_recover(c->rep, c->stream, PP_PROBE_LAYER, "hidden=%lld heads=%lld seq=%lld mbs=%lld tp=%lld %s",
                               (long long)j->hidden, (long long)j->heads, (long long)j->seq, (long long)j->mbs,
                               (long long)j->tp, j->swiglu ? "swiglu" : "gelu"))
                goto fail;
        }
        layer_free(&L);
    }
    rc = 0;
fail:
    layer_free(&L);
    c->target_ms = 0;
    return rc;
}
