/* moe.cu: one Mixture-of-Experts MLP layer on one GPU, forward and forward+backward, bf16, as
 * Megatron-Core's MoELayer runs it (megatron/core/transformer/moe/moe_layer.py):
 *   router     logits = x Wr^T (TopKRouter, router.py), scores = softmax (or sigmoid), top-k
 *              (moe_utils.py topk_softmax_with_capacity: the top-k probabilities normalised)
 *   permute    the k copies of each token gathered into expert order (moe_utils.py permute; with
 *              expert parallelism the received chunks sorted by local expert, token_dispatcher.py
 *              MoEAlltoAllTokenDispatcher sort_chunks_by_idxs; the all-to-all itself is not timed)
 *   experts    SwiGLU MLPs: fc1 to 2*moe_ffn, silu(gate) * up, fc2 back to hidden, either one GEMM
 *              chain per expert at its token count (experts.py SequentialMLP, --moe-expert-impl
 *              loop) or grouped GEMMs over all local experts (TEGroupedMLP / GroupedMLP: cuBLAS
 *              cublasGemmGroupedBatchedEx where this cuBLAS has it, else cuBLASLt strided-batched
 *              GEMMs with the experts padded to the busiest one's count)
 *   unpermute  the expert outputs weighted by the router probabilities and summed back into
 *              token order (moe_utils.py unpermute), plus the shared expert's output
 *   shared     a dense SwiGLU MLP of shared_ffn on every token (shared_experts.py SharedExpertMLP)
 * The backward has every GEMM's dgrad and wgrad, the SwiGLU backward, the permutation's backward
 * (a gather-sum per token: the scatter-add of unpermute without probabilities, deterministic), the
 * unpermute backward (the probabilities' gradients: one dot product per token copy) and the
 * router's (normalisation and softmax/sigmoid backward, then its dgrad and wgrad GEMMs).
 *
 * Routing is fixed, not learned: token t's k experts are assigned by a cyclic sweep (each expert
 * gets a run of consecutive token visits, so a token's k experts are distinct) that gives every
 * expert T*K/E tokens (balanced, reproducible), or the busiest local expert X times the mean
 * (--imbalance). The router still computes its scores and a top-k selection (their cost), but the
 * weights used are the normalised scores at the assigned experts. With --ep N the rank holds E/N
 * experts: global expert g runs on local weights g mod (E/N) (what the rank computes for the token
 * copies balanced routing sends it: T*K rows), so the layer's arithmetic is that of pp_ref_moe with
 * L = E/N and the check covers the chunk sort too. The sweep puts a token's copies on distinct
 * local experts where it can (route.c): copies on one local expert make the output independent of
 * the router, whose gradient is then zero (the ep > 1 check's failure on the H200, NOTES.md).
 *
 * Every configuration (impl, ep, imbalance, router, shared) is first run at a small size and checked
 * against the double-precision CPU reference (ref.c pp_ref_moe, itself checked against finite
 * differences by probes-unit). The router and permutation kernels are in moe_kernels.cu. */
#include "harness.cuh"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if PP_HAVE_CUBLAS
#include <cublas_v2.h>
#endif

#include "moe_kernels.cuh"
#include "ref.h"

/* ================================================================ the shape */

typedef struct {
    int64_t T, h, E, K, F, S, ep;
    double imbalance;
    bool sigmoid;
    bool grouped;
} moe_shape;

enum { BK_LOOP = 0, BK_CUBLAS_GROUPED, BK_LT_BATCHED };
static const char *const backend_names[3] = {"cublaslt", "cublas_grouped", "cublaslt_batched"};

/* ================================================================ the layer */

enum { G_FC1 = 0, G_FC2, G_FC2_D, G_FC2_W, G_FC1_D, G_FC1_W, G_KINDS };

/* The local experts' GEMMs for one token count (the loop), or all of them (strided-batched). */
typedef struct {
    int64_t count;
    pp_gemm_plan g[G_KINDS];
} expert_plans;

#define MOE_MAX_COUNTS 8

#if PP_HAVE_CUBLAS
/* One grouped GEMM over the local experts (cublasGemmGroupedBatchedEx): experts of equal token
 * count form a group; the operand pointers are device arrays in the groups' order. */
typedef struct {
    int n_groups, n_problems;
    cublasOperation_t ta[MOE_MAX_COUNTS], tb[MOE_MAX_COUNTS];
    int m[MOE_MAX_COUNTS], n[MOE_MAX_COUNTS], k[MOE_MAX_COUNTS], lda[MOE_MAX_COUNTS], ldb[MOE_MAX_COUNTS],
        ldc[MOE_MAX_COUNTS], size[MOE_MAX_COUNTS];
    float alpha[MOE_MAX_COUNTS], beta[MOE_MAX_COUNTS];
    void **ptr; /* device: A[n_problems], B[n_problems], C[n_problems] */
} grouped_gemm;
#endif

typedef struct {
    moe_shape sh;
    pp_moe_route rt;
    int backend;
    int64_t L, R, rows;             /* local experts, token copies, expert-layout rows (padding included) */
    /* parameters and their gradients */
    bf16 *wr, *w1, *w2, *ws1, *ws2, *dwr, *dw1, *dw2, *dws1, *dws2;
    /* activations */
    bf16 *x, *logits, *xs, *xe, *u, *a, *ye, *ys, *us, *as, *yshared, *y;
    float *scores, *probs;
    int32_t *topk;
    /* gradients */
    bf16 *dy, *dys, *dye, *da, *du, *dxe, *dxs, *dx, *dlogits, *dus, *das;
    float *dp;
    /* maps on the device */
    int32_t *d_expert, *d_exp_src, *d_send_tok, *d_send_from_exp, *d_row_of;
    /* GEMMs */
    pp_gemm_plan router_f, router_d, router_w, sh_f1, sh_f2, sh_d2, sh_w2, sh_d1, sh_w1;
    expert_plans ep_plans[MOE_MAX_COUNTS];
    int n_counts;
#if PP_HAVE_CUBLAS
    cublasHandle_t blas;
    grouped_gemm gg[G_KINDS];
#endif
    pp_dev_list mem;
} moe;

#define MA(ptr, n, sz) PP_TRY(pp_dev_list_alloc(&M->mem, (void **)&(ptr), (size_t)(n) * (sz)))

static void moe_free(moe *M)
{
    pp_gemm_plan *ps[9] = {&M->router_f, &M->router_d, &M->router_w, &M->sh_f1, &M->sh_f2,
                           &M->sh_d2,    &M->sh_w2,    &M->sh_d1,    &M->sh_w1};
    for (int i = 0; i < 9; i++) pp_gemm_plan_free(ps[i]);
    for (int i = 0; i < MOE_MAX_COUNTS; i++)
        for (int k = 0; k < G_KINDS; k++) pp_gemm_plan_free(&M->ep_plans[i].g[k]);
#if PP_HAVE_CUBLAS
    for (int k = 0; k < G_KINDS; k++) cudaFree(M->gg[k].ptr);
    if (M->blas) cublasDestroy(M->blas);
#endif
    pp_dev_list_free(&M->mem);
    pp_moe_route_free(&M->rt);
    memset(M, 0, sizeof *M);
}

/* The largest power of two up to 256 dividing every byte offset the expert GEMMs run at. */
static int expert_align(const moe *M)
{
    const int64_t h = M->sh.h, F = M->sh.F;
    int64_t all = 0;
    for (int64_t e = 0; e < M->L; e++) {
        const int64_t o = M->rt.off[e];
        all |= o * h * 2 | o * 2 * F * 2 | o * F * 2 | e * 2 * F * h * 2 | e * h * F * 2;
    }
    int al = 256;
    while (al > 2 && all % al) al /= 2;
    return al;
}

/* The description of one expert GEMM kind at local expert e with c rows (pointers at e's rows). */
static pp_gemm_desc expert_desc(const moe *M, int kind, int64_t e, int64_t c)
{
    const int64_t h = M->sh.h, F = M->sh.F, o = M->rt.off[e];
    const bf16 *w1 = M->w1 + e * 2 * F * h, *w2 = M->w2 + e * h * F;
    switch (kind) {
    case G_FC1: return pp_desc_fwd(M->xe + o * h, w1, M->u + o * 2 * F, c, 2 * F, h);
    case G_FC2: return pp_desc_fwd(M->a + o * F, w2, M->ye + o * h, c, h, F);
    case G_FC2_D: return pp_desc_dgrad(M->dye + o * h, w2, M->da + o * F, c, h, F);
    case G_FC2_W: return pp_desc_wgrad(M->dye + o * h, M->a + o * F, M->dw2 + e * h * F, c, h, F);
    case G_FC1_D: return pp_desc_dgrad(M->du + o * 2 * F, w1, M->dxe + o * h, c, 2 * F, h);
    default: return pp_desc_wgrad(M->du + o * 2 * F, M->xe + o * h, M->dw1 + e * 2 * F * h, c, 2 * F, h);
    }
}

static int plan_or_fail(pp_probe_ctx *c, pp_gemm_desc d, pp_gemm_plan *p, const char *what)
{
    int st = pp_gemm_plan_make(c, &d, 1, p);
    if (st > 0)
        pp_probe_error(__FILE__, __LINE__, "no cuBLASLt plan for the moe %s GEMM (%lldx%lldx%lld): %s", what,
                       (long long)d.m, (long long)d.n, (long long)d.k, pp_gemm_plan_why());
    return st ? -1 : 0;
}

static const char *const kind_names[G_KINDS] = {"fc1", "fc2", "fc2 dgrad", "fc2 wgrad", "fc1 dgrad", "fc1 wgrad"};

/* The loop's plans: one set per distinct token count. */
static int loop_plans(pp_probe_ctx *c, moe *M)
{
    const int al = expert_align(M);
    for (int64_t e = 0; e < M->L; e++) {
        const int64_t cnt = M->rt.count[e];
        int i;
        if (!cnt) continue;
        for (i = 0; i < M->n_counts; i++)
            if (M->ep_plans[i].count == cnt) break;
        if (i < M->n_counts) continue;
        if (M->n_counts == MOE_MAX_COUNTS) {
            pp_probe_error(__FILE__, __LINE__, "moe: more than %d distinct expert token counts", MOE_MAX_COUNTS);
            return -1;
        }
        expert_plans *P = &M->ep_plans[M->n_counts++];
        P->count = cnt;
        for (int k = 0; k < G_KINDS; k++) {
            pp_gemm_desc d = expert_desc(M, k, e, cnt);
            d.min_align_bytes = al;
            PP_TRY(plan_or_fail(c, d, &P->g[k], kind_names[k]));
        }
    }
    return 0;
fail:
    return -1;
}

/* The strided-batched plans: every local expert at cap rows (the layout is padded). */
static int batched_plans(pp_probe_ctx *c, moe *M)
{
    const int64_t h = M->sh.h, F = M->sh.F, cap = M->rt.cap;
    expert_plans *P = &M->ep_plans[0];
    M->n_counts = 1;
    P->count = cap;
    for (int k = 0; k < G_KINDS; k++) {
        pp_gemm_desc d = expert_desc(M, k, 0, cap);
        /* strides of A, B, C in the order of the description (pp_desc_*: fwd A=W B=X; dgrad A=W
         * B=dY; wgrad A=X B=dY) */
        const int64_t sw1 = 2 * F * h, sw2 = h * F, sx = cap * h, su = cap * 2 * F, sa = cap * F;
        switch (k) {
        case G_FC1: d.stride_a = sw1, d.stride_b = sx, d.stride_c = su; break;
        case G_FC2: d.stride_a = sw2, d.stride_b = sa, d.stride_c = sx; break;
        case G_FC2_D: d.stride_a = sw2, d.stride_b = sx, d.stride_c = sa; break;
        case G_FC2_W: d.stride_a = sa, d.stride_b = sx, d.stride_c = sw2; break;
        case G_FC1_D: d.stride_a = sw1, d.stride_b = su, d.stride_c = sx; break;
        default: d.stride_a = sx, d.stride_b = su, d.stride_c = sw1; break;
        }
        d.batch = (int)M->L;
        PP_TRY(plan_or_fail(c, d, &P->g[k], kind_names[k]));
    }
    return 0;
fail:
    return -1;
}

#if PP_HAVE_CUBLAS
/* The grouped GEMMs: experts ordered by token count (one group each), their operands' pointers
 * uploaded once. 0, 1 when this cuBLAS refuses the call (the caller falls back), -1 on failure. */
static int grouped_plans(pp_probe_ctx *c, moe *M, char *why, size_t why_n)
{
    cublasStatus_t st;
    void **host = NULL;
    int rc = -1;
    st = cublasCreate(&M->blas);
    if (st != CUBLAS_STATUS_SUCCESS) {
        snprintf(why, why_n, "cublasCreate: %d", (int)st);
        return 1;
    }
    if (cublasSetStream(M->blas, c->stream) != CUBLAS_STATUS_SUCCESS ||
        cublasSetWorkspace(M->blas, c->lt_ws, c->lt_ws_bytes) != CUBLAS_STATUS_SUCCESS) {
        snprintf(why, why_n, "cublasSetStream/SetWorkspace failed");
        return 1;
    }
    host = (void **)malloc(3 * (size_t)M->L * sizeof *host);
    if (!host) {
        pp_probe_error(__FILE__, __LINE__, "out of memory");
        return -1;
    }
    for (int k = 0; k < G_KINDS; k++) {
        grouped_gemm *G = &M->gg[k];
        int64_t counts[MOE_MAX_COUNTS];
        memset(G, 0, sizeof *G);
        for (int64_t e = 0; e < M->L; e++) {
            int i;
            if (!M->rt.count[e]) continue;
            for (i = 0; i < G->n_groups; i++)
                if (counts[i] == M->rt.count[e]) break;
            if (i == G->n_groups) {
                if (G->n_groups == MOE_MAX_COUNTS) {
                    pp_probe_error(__FILE__, __LINE__, "moe: more than %d distinct expert token counts", MOE_MAX_COUNTS);
                    goto fail;
                }
                counts[G->n_groups++] = M->rt.count[e];
            }
        }
        for (int i = 0; i < G->n_groups; i++) {
            pp_gemm_desc d;
            int64_t first = -1;
            for (int64_t e = 0; e < M->L; e++)
                if (M->rt.count[e] == counts[i]) {
                    if (first < 0) first = e;
                    d = expert_desc(M, k, e, counts[i]);
                    host[G->n_problems] = (void *)d.A;
                    host[M->L + G->n_problems] = (void *)d.B;
                    host[2 * M->L + G->n_problems] = d.D;
                    G->n_problems++;
                    G->size[i]++;
                }
            d = expert_desc(M, k, first, counts[i]);
            G->ta[i] = d.ta, G->tb[i] = d.tb;
            G->m[i] = (int)d.m, G->n[i] = (int)d.n, G->k[i] = (int)d.k;
            G->lda[i] = (int)d.lda, G->ldb[i] = (int)d.ldb, G->ldc[i] = (int)d.ldc;
            G->alpha[i] = 1.0f, G->beta[i] = 0.0f;
        }
        /* pack A | B | C contiguously for this kind */
        memmove(host + G->n_problems, host + M->L, (size_t)G->n_problems * sizeof *host);
        memmove(host + 2 * G->n_problems, host + 2 * M->L, (size_t)G->n_problems * sizeof *host);
        PP_TRY(pp_alloc((void **)&G->ptr, 3 * (size_t)G->n_problems * sizeof(void *)));
        PP_CU(cudaMemcpy(G->ptr, host, 3 * (size_t)G->n_problems * sizeof(void *), cudaMemcpyHostToDevice));
        /* one trial call: this cuBLAS may not take bf16 grouped GEMMs (CUBLAS_STATUS_NOT_SUPPORTED) */
        st = cublasGemmGroupedBatchedEx(M->blas, G->ta, G->tb, G->m, G->n, G->k, G->alpha,
                                        (const void *const *)G->ptr, CUDA_R_16BF, G->lda,
                                        (const void *const *)(G->ptr + G->n_problems), CUDA_R_16BF, G->ldb, G->beta,
                                        G->ptr + 2 * G->n_problems, CUDA_R_16BF, G->ldc, G->n_groups, G->size,
                                        CUBLAS_COMPUTE_32F);
        if (st != CUBLAS_STATUS_SUCCESS) {
            if (st == CUBLAS_STATUS_ALLOC_FAILED) {
                pp_cublas_fail(__FILE__, __LINE__, "cublasGemmGroupedBatchedEx", st);
                goto fail;
            }
            snprintf(why, why_n, "cublasGemmGroupedBatchedEx (bf16, %s): status %d", kind_names[k], (int)st);
            rc = 1;
            goto fail;
        }
    }
    rc = 0;
fail:
    free(host);
    return rc;
}

static int grouped_run(pp_probe_ctx *c, moe *M, int k)
{
    grouped_gemm *G = &M->gg[k];
    (void)c;
    PP_LT(cublasGemmGroupedBatchedEx(M->blas, G->ta, G->tb, G->m, G->n, G->k, G->alpha, (const void *const *)G->ptr,
                                     CUDA_R_16BF, G->lda, (const void *const *)(G->ptr + G->n_problems), CUDA_R_16BF,
                                     G->ldb, G->beta, G->ptr + 2 * G->n_problems, CUDA_R_16BF, G->ldc, G->n_groups,
                                     G->size, CUBLAS_COMPUTE_32F));
    return 0;
fail:
    return -1;
}
#endif

/* Run expert GEMM `kind` on local expert e (the loop). */
static int expert_run(pp_probe_ctx *c, moe *M, int kind, int64_t e)
{
    const int64_t cnt = M->rt.count[e];
    const expert_plans *P = NULL;
    for (int i = 0; i < M->n_counts; i++)
        if (M->ep_plans[i].count == cnt) P = &M->ep_plans[i];
    if (!cnt) return 0;
    if (!P) {
        pp_probe_error(__FILE__, __LINE__, "moe: no plan for %lld tokens", (long long)cnt);
        return -1;
    }
    pp_gemm_desc d = expert_desc(M, kind, e, cnt);
    return pp_gemm_plan_run_on(c, &P->g[kind], d.A, d.B, NULL, d.D);
}

/* Run expert GEMM `kind` on every local expert at once (grouped or strided-batched). */
static int experts_run_all(pp_probe_ctx *c, moe *M, int kind)
{
#if PP_HAVE_CUBLAS
    if (M->backend == BK_CUBLAS_GROUPED) return grouped_run(c, M, kind);
#endif
    return pp_gemm_plan_run(c, &M->ep_plans[0].g[kind]);
}

/* The expert GEMMs alone (no activation, no marks), for their TFLOP/s: the forward's fc1 and fc2, or
 * the backward's four, per expert (the loop) or grouped. */
static int experts_gemms(pp_probe_ctx *c, moe *M, const int *kinds, int n)
{
    if (M->backend == BK_LOOP) {
        for (int64_t e = 0; e < M->L; e++)
            for (int i = 0; i < n; i++) PP_TRY(expert_run(c, M, kinds[i], e));
    } else {
        for (int i = 0; i < n; i++) PP_TRY(experts_run_all(c, M, kinds[i]));
    }
    return 0;
fail:
    return -1;
}

static int run_expert_gemms_fwd(pp_probe_ctx *c, void *arg)
{
    static const int kinds[2] = {G_FC1, G_FC2};
    return experts_gemms(c, (moe *)arg, kinds, 2);
}

static int run_expert_gemms_bwd(pp_probe_ctx *c, void *arg)
{
    static const int kinds[4] = {G_FC2_D, G_FC2_W, G_FC1_D, G_FC1_W};
    return experts_gemms(c, (moe *)arg, kinds, 4);
}

static unsigned row_blocks(pp_probe_ctx *c, int64_t rows)
{
    int64_t want = (int64_t)c->prop.multiProcessorCount * 16;
    return (unsigned)(rows < want ? rows : want);
}

static int moe_fwd(pp_probe_ctx *c, void *arg)
{
    moe *M = (moe *)arg;
    const moe_shape *sh = &M->sh;
    const int hv = (int)(sh->h / 8);
    const int64_t T = sh->T, F = sh->F;
    /* router: GEMM, scores, top-k, probabilities */
    PP_TRY(pp_gemm_plan_run(c, &M->router_f));
    pp_moe_router_fwd_kernel<<<(unsigned)((T + 3) / 4), 128, 0, c->stream>>>(
        M->logits, M->d_expert, T, (int)sh->E, (int)sh->K, sh->sigmoid, M->scores, M->probs, M->topk);
    PP_LAUNCHED();
    pp_parts_mark(c, PP_MOE_ROUTER);
    /* permute: tokens into send order, then (ep > 1) the received chunks into local-expert order */
    if (sh->ep > 1) {
        pp_moe_gather_kernel<<<row_blocks(c, M->R), 128, 0, c->stream>>>((uint4 *)M->xs, (const uint4 *)M->x,
                                                                         M->d_send_tok, M->R, hv);
        PP_LAUNCHED();
        pp_moe_gather_kernel<<<row_blocks(c, M->rows), 128, 0, c->stream>>>((uint4 *)M->xe, (const uint4 *)M->xs,
                                                                            M->d_exp_src, M->rows, hv);
    } else {
        pp_moe_gather_kernel<<<row_blocks(c, M->rows), 128, 0, c->stream>>>((uint4 *)M->xe, (const uint4 *)M->x,
                                                                            M->d_exp_src, M->rows, hv);
    }
    PP_LAUNCHED();
    pp_parts_mark(c, PP_MOE_PERMUTE);
    /* experts */
    if (M->backend == BK_LOOP) {
        for (int64_t e = 0; e < M->L; e++) {
            const int64_t o = M->rt.off[e], cnt = M->rt.count[e];
            if (!cnt) continue;
            PP_TRY(expert_run(c, M, G_FC1, e));
            pp_parts_mark(c, PP_MOE_FC1);
            PP_TRY(pp_swiglu_fwd(c, M->u + o * 2 * F, M->a + o * F, cnt, F));
            pp_parts_mark(c, PP_MOE_ACT);
            PP_TRY(expert_run(c, M, G_FC2, e));
            pp_parts_mark(c, PP_MOE_FC2);
        }
    } else {
        PP_TRY(experts_run_all(c, M, G_FC1));
        pp_parts_mark(c, PP_MOE_FC1);
        PP_TRY(pp_swiglu_fwd(c, M->u, M->a, M->rows, F));
        pp_parts_mark(c, PP_MOE_ACT);
        PP_TRY(experts_run_all(c, M, G_FC2));
        pp_parts_mark(c, PP_MOE_FC2);
    }
    /* shared expert on every token */
    if (sh->S) {
        PP_TRY(pp_gemm_plan_run(c, &M->sh_f1));
        PP_TRY(pp_swiglu_fwd(c, M->us, M->as, T, sh->S));
        PP_TRY(pp_gemm_plan_run(c, &M->sh_f2));
        pp_parts_mark(c, PP_MOE_SHARED);
    }
    /* unpermute: (ep > 1) back into send order, then the weighted sum into token order (+ shared) */
    if (sh->ep > 1) {
        pp_moe_gather_kernel<<<row_blocks(c, M->R), 128, 0, c->stream>>>((uint4 *)M->ys, (const uint4 *)M->ye,
                                                                         M->d_send_from_exp, M->R, hv);
        PP_LAUNCHED();
    }
    pp_moe_unpermute_kernel<<<row_blocks(c, T), 128, 0, c->stream>>>(
        (uint4 *)M->y, (const uint4 *)(sh->ep > 1 ? M->ys : M->ye), M->d_row_of, M->probs,
        sh->S ? (const uint4 *)M->yshared : NULL, T, (int)sh->K, hv);
    PP_LAUNCHED();
    pp_parts_mark(c, PP_MOE_UNPERMUTE);
    return 0;
fail:
    return -1;
}

static int moe_bwd(pp_probe_ctx *c, moe *M)
{
    const moe_shape *sh = &M->sh;
    const int hv = (int)(sh->h / 8);
    const int64_t T = sh->T, F = sh->F;
    const int P = PP_MOE_PARTS; /* backward parts are marked P + part */
    /* unpermute: the rows' gradients (send order for ep > 1, then into the expert layout) and dp */
    pp_moe_unpermute_bwd_kernel<<<row_blocks(c, T), 128, 0, c->stream>>>(
        (const uint4 *)M->dy, (const uint4 *)(sh->ep > 1 ? M->ys : M->ye), M->d_row_of, M->probs,
        (uint4 *)(sh->ep > 1 ? M->dys : M->dye), M->dp, T, (int)sh->K, hv);
    PP_LAUNCHED();
    if (sh->ep > 1) {
        pp_moe_gather_kernel<<<row_blocks(c, M->rows), 128, 0, c->stream>>>((uint4 *)M->dye, (const uint4 *)M->dys,
                                                                            M->d_exp_src, M->rows, hv);
        PP_LAUNCHED();
    }
    pp_parts_mark(c, P + PP_MOE_UNPERMUTE);
    /* experts */
    if (M->backend == BK_LOOP) {
        for (int64_t e = 0; e < M->L; e++) {
            const int64_t o = M->rt.off[e], cnt = M->rt.count[e];
            if (!cnt) continue;
            PP_TRY(expert_run(c, M, G_FC2_D, e));
            PP_TRY(expert_run(c, M, G_FC2_W, e));
            pp_parts_mark(c, P + PP_MOE_FC2);
            PP_TRY(pp_swiglu_bwd(c, M->da + o * F, M->u + o * 2 * F, M->du + o * 2 * F, cnt, F));
            pp_parts_mark(c, P + PP_MOE_ACT);
            PP_TRY(expert_run(c, M, G_FC1_D, e));
            PP_TRY(expert_run(c, M, G_FC1_W, e));
            pp_parts_mark(c, P + PP_MOE_FC1);
        }
    } else {
        PP_TRY(experts_run_all(c, M, G_FC2_D));
        PP_TRY(experts_run_all(c, M, G_FC2_W));
        pp_parts_mark(c, P + PP_MOE_FC2);
        PP_TRY(pp_swiglu_bwd(c, M->da, M->u, M->du, M->rows, F));
        pp_parts_mark(c, P + PP_MOE_ACT);
        PP_TRY(experts_run_all(c, M, G_FC1_D));
        PP_TRY(experts_run_all(c, M, G_FC1_W));
        pp_parts_mark(c, P + PP_MOE_FC1);
    }
    /* permute: (ep > 1) back into send order, then each token's k rows summed into dx */
    if (sh->ep > 1) {
        pp_moe_gather_kernel<<<row_blocks(c, M->R), 128, 0, c->stream>>>((uint4 *)M->dxs, (const uint4 *)M->dxe,
                                                                         M->d_send_from_exp, M->R, hv);
        PP_LAUNCHED();
    }
    pp_moe_permute_bwd_kernel<<<row_blocks(c, T), 128, 0, c->stream>>>(
        (uint4 *)M->dx, (const uint4 *)(sh->ep > 1 ? M->dxs : M->dxe), M->d_row_of, T, (int)sh->K, hv);
    PP_LAUNCHED();
    pp_parts_mark(c, P + PP_MOE_PERMUTE);
    /* router: logits' gradients, then dx += dlogits Wr and dWr */
    pp_moe_router_bwd_kernel<<<(unsigned)((T + 3) / 4), 128, 0, c->stream>>>(
        M->scores, M->probs, M->dp, M->d_expert, T, (int)sh->E, (int)sh->K, sh->sigmoid, M->dlogits);
    PP_LAUNCHED();
    PP_TRY(pp_gemm_plan_run(c, &M->router_d));
    PP_TRY(pp_gemm_plan_run(c, &M->router_w));
    pp_parts_mark(c, P + PP_MOE_ROUTER);
    /* shared expert: its dgrad adds into dx */
    if (sh->S) {
        PP_TRY(pp_gemm_plan_run(c, &M->sh_d2));
        PP_TRY(pp_gemm_plan_run(c, &M->sh_w2));
        PP_TRY(pp_swiglu_bwd(c, M->das, M->us, M->dus, T, sh->S));
        PP_TRY(pp_gemm_plan_run(c, &M->sh_d1));
        PP_TRY(pp_gemm_plan_run(c, &M->sh_w1));
        pp_parts_mark(c, P + PP_MOE_SHARED);
    }
    return 0;
fail:
    return -1;
}

static int moe_fwdbwd(pp_probe_ctx *c, void *arg)
{
    PP_TRY(moe_fwd(c, arg));
    return moe_bwd(c, (moe *)arg);
fail:
    return -1;
}

static int upload_i32(moe *M, int32_t **dev, const int32_t *host, int64_t n)
{
    PP_TRY(pp_dev_list_alloc(&M->mem, (void **)dev, (size_t)n * sizeof(int32_t)));
    PP_CU(cudaMemcpy(*dev, host, (size_t)n * sizeof(int32_t), cudaMemcpyHostToDevice));
    return 0;
fail:
    return -1;
}

/* Allocate, initialise, route and plan. backend: BK_LOOP, or the grouped ones (BK_CUBLAS_GROUPED
 * falls back to BK_LT_BATCHED when cuBLAS refuses: *note says why). 0 or -1. */
static int moe_init(pp_probe_ctx *c, moe *M, const moe_shape *sh, int backend, unsigned long long seed, char *note,
                    size_t note_n)
{
    const int64_t T = sh->T, h = sh->h, E = sh->E, K = sh->K, F = sh->F, S = sh->S;
    int64_t L;
    bool padded;
    memset(M, 0, sizeof *M);
    note[0] = 0;
retry:
    M->sh = *sh;
    M->backend = backend;
    L = M->L = E / sh->ep;
    /* the strided-batched experts need one count: pad every expert to the busiest one's */
    padded = backend == BK_LT_BATCHED;
    if (pp_moe_route_make(sh->T, sh->K, sh->E, sh->ep, sh->imbalance, padded, &M->rt)) {
        pp_probe_error(__FILE__, __LINE__, "out of memory (moe routing)");
        goto fail;
    }
    M->R = M->rt.R;
    M->rows = M->rt.rows;
    MA(M->wr, E * h, 2); MA(M->w1, L * 2 * F * h, 2); MA(M->w2, L * h * F, 2);
    MA(M->dwr, E * h, 2); MA(M->dw1, L * 2 * F * h, 2); MA(M->dw2, L * h * F, 2);
    MA(M->x, T * h, 2); MA(M->logits, T * E, 2); MA(M->xe, M->rows * h, 2); MA(M->u, M->rows * 2 * F, 2);
    MA(M->a, M->rows * F, 2); MA(M->ye, M->rows * h, 2); MA(M->y, T * h, 2);
    MA(M->scores, T * E, 4); MA(M->probs, T * K, 4); MA(M->topk, T * K, 4);
    MA(M->dy, T * h, 2); MA(M->dye, M->rows * h, 2); MA(M->da, M->rows * F, 2); MA(M->du, M->rows * 2 * F, 2);
    MA(M->dxe, M->rows * h, 2); MA(M->dx, T * h, 2); MA(M->dlogits, T * E, 2); MA(M->dp, T * K, 4);
    if (sh->ep > 1) {
        MA(M->xs, M->R * h, 2); MA(M->ys, M->R * h, 2); MA(M->dys, M->R * h, 2); MA(M->dxs, M->R * h, 2);
    }
    if (S) {
        MA(M->ws1, 2 * S * h, 2); MA(M->ws2, h * S, 2); MA(M->dws1, 2 * S * h, 2); MA(M->dws2, h * S, 2);
        MA(M->us, T * 2 * S, 2); MA(M->as, T * S, 2); MA(M->yshared, T * h, 2);
        MA(M->dus, T * 2 * S, 2); MA(M->das, T * S, 2);
    }
    PP_TRY(upload_i32(M, &M->d_expert, M->rt.expert, T * K));
    PP_TRY(upload_i32(M, &M->d_exp_src, M->rt.exp_src, M->rows));
    PP_TRY(upload_i32(M, &M->d_row_of, M->rt.row_of, T * K));
    if (sh->ep > 1) {
        PP_TRY(upload_i32(M, &M->d_send_tok, M->rt.send_tok, M->R));
        PP_TRY(upload_i32(M, &M->d_send_from_exp, M->rt.send_from_exp, M->R));
    }
    /* padding rows stay zero (never written): zero rows in, zero out, zero gradients; an expert
     * without tokens keeps a zero weight gradient */
    PP_CU(cudaMemsetAsync(M->xe, 0, (size_t)(M->rows * h) * 2, c->stream));
    PP_CU(cudaMemsetAsync(M->dye, 0, (size_t)(M->rows * h) * 2, c->stream));
    PP_CU(cudaMemsetAsync(M->dw1, 0, (size_t)(L * 2 * F * h) * 2, c->stream));
    PP_CU(cudaMemsetAsync(M->dw2, 0, (size_t)(L * h * F) * 2, c->stream));
    /* unit-variance activations, nn.Linear-like weights (uniform, variance 1/fan_in) */
    PP_TRY(pp_fill(c, M->x, (size_t)(T * h), PP_BF16, 1.0f, seed + 1));
    PP_TRY(pp_fill(c, M->dy, (size_t)(T * h), PP_BF16, 1.0f, seed + 2));
    PP_TRY(pp_fill(c, M->wr, (size_t)(E * h), PP_BF16, (float)sqrt(3.0 / (double)h), seed + 3));
    PP_TRY(pp_fill(c, M->w1, (size_t)(L * 2 * F * h), PP_BF16, (float)sqrt(3.0 / (double)h), seed + 4));
    PP_TRY(pp_fill(c, M->w2, (size_t)(L * h * F), PP_BF16, (float)sqrt(3.0 / (double)F), seed + 5));
    if (S) {
        PP_TRY(pp_fill(c, M->ws1, (size_t)(2 * S * h), PP_BF16, (float)sqrt(3.0 / (double)h), seed + 6));
        PP_TRY(pp_fill(c, M->ws2, (size_t)(h * S), PP_BF16, (float)sqrt(3.0 / (double)S), seed + 7));
    }
    /* router and shared expert GEMMs (the dgrads accumulate into dx: beta 1 over the permutation's) */
    {
        pp_gemm_desc d = pp_desc_dgrad(M->dlogits, M->wr, M->dx, T, E, h);
        d.C = M->dx;
        d.beta = 1;
        PP_TRY(plan_or_fail(c, pp_desc_fwd(M->x, M->wr, M->logits, T, E, h), &M->router_f, "router"));
        PP_TRY(plan_or_fail(c, d, &M->router_d, "router dgrad"));
        PP_TRY(plan_or_fail(c, pp_desc_wgrad(M->dlogits, M->x, M->dwr, T, E, h), &M->router_w, "router wgrad"));
    }
    if (S) {
        pp_gemm_desc d = pp_desc_dgrad(M->dus, M->ws1, M->dx, T, 2 * S, h);
        d.C = M->dx;
        d.beta = 1;
        PP_TRY(plan_or_fail(c, pp_desc_fwd(M->x, M->ws1, M->us, T, 2 * S, h), &M->sh_f1, "shared fc1"));
        PP_TRY(plan_or_fail(c, pp_desc_fwd(M->as, M->ws2, M->yshared, T, h, S), &M->sh_f2, "shared fc2"));
        PP_TRY(plan_or_fail(c, pp_desc_dgrad(M->dy, M->ws2, M->das, T, h, S), &M->sh_d2, "shared fc2 dgrad"));
        PP_TRY(plan_or_fail(c, pp_desc_wgrad(M->dy, M->as, M->dws2, T, h, S), &M->sh_w2, "shared fc2 wgrad"));
        PP_TRY(plan_or_fail(c, d, &M->sh_d1, "shared fc1 dgrad"));
        PP_TRY(plan_or_fail(c, pp_desc_wgrad(M->dus, M->x, M->dws1, T, 2 * S, h), &M->sh_w1, "shared fc1 wgrad"));
    }
    if (backend == BK_LOOP) PP_TRY(loop_plans(c, M));
    else if (backend == BK_LT_BATCHED) PP_TRY(batched_plans(c, M));
#if PP_HAVE_CUBLAS
    else {
        int st = grouped_plans(c, M, note, note_n);
        if (st < 0) goto fail;
        if (st > 0) {
            /* this cuBLAS has no bf16 grouped GEMM here: cuBLASLt strided-batched instead */
            char why[160];
            snprintf(why, sizeof why, "%s", note);
            moe_free(M);
            snprintf(note, note_n, "%s: the grouped experts run as cuBLASLt strided-batched GEMMs", why);
            backend = BK_LT_BATCHED;
            goto retry;
        }
    }
#endif
    PP_CU(cudaStreamSynchronize(c->stream));
    return 0;
fail:
    return -1;
}

/* ================================================================ check against the CPU */

/* The layer at T 128, h 64, 8 experts top-2, moe_ffn 32 (shared 48 when the timed one has a shared
 * expert), ep 2 when the timed ep > 1 (4 local experts: the chunk sort), imbalance 2 when the
 * timed one is imbalanced, the timed router and backend, forward+backward once, against pp_ref_moe:
 * y, dx, dWr, dW1, dW2 (and the shared expert's). */
static int moe_check(pp_probe_ctx *c, const moe_shape *big, int backend, double *err, char *which, size_t which_n,
                     char *note, size_t note_n)
{
    moe M;
    moe_shape sh;
    float *hx = NULL, *hdy = NULL, *hwr = NULL, *hw1 = NULL, *hw2 = NULL, *hws1 = NULL, *hws2 = NULL;
    double *y = NULL, *dx = NULL, *dwr = NULL, *dw1 = NULL, *dw2 = NULL, *dws1 = NULL, *dws2 = NULL;
    int rc = -1;
    int64_t T, h, E, F, S, L;
    memset(&M, 0, sizeof M);
    *err = INFINITY;
    which[0] = 0;
    memset(&sh, 0, sizeof sh);
    sh.T = 128, sh.h = 64, sh.E = 8, sh.K = 2, sh.F = 32, sh.S = big->S ? 48 : 0;
    sh.ep = big->ep > 1 ? 2 : 1;
    sh.imbalance = big->imbalance > 1 ? 2 : 1;
    sh.sigmoid = big->sigmoid;
    sh.grouped = big->grouped;
    T = sh.T, h = sh.h, E = sh.E, F = sh.F, S = sh.S, L = E / sh.ep;
    PP_TRY(moe_init(c, &M, &sh, backend, 0xC0FFEEull, note, note_n));
    PP_TRY(pp_poison(c, M.y, (size_t)(T * h) * 2));
    PP_TRY(pp_poison(c, M.dx, (size_t)(T * h) * 2));
    PP_TRY(pp_poison(c, M.dwr, (size_t)(E * h) * 2));
    PP_TRY(moe_fwdbwd(c, &M));
    PP_CU(cudaStreamSynchronize(c->stream));
    PP_TRY(pp_to_host_floats(c, M.x, (size_t)(T * h), PP_BF16, &hx));
    PP_TRY(pp_to_host_floats(c, M.dy, (size_t)(T * h), PP_BF16, &hdy));
    PP_TRY(pp_to_host_floats(c, M.wr, (size_t)(E * h), PP_BF16, &hwr));
    PP_TRY(pp_to_host_floats(c, M.w1, (size_t)(L * 2 * F * h), PP_BF16, &hw1));
    PP_TRY(pp_to_host_floats(c, M.w2, (size_t)(L * h * F), PP_BF16, &hw2));
    if (S) {
        PP_TRY(pp_to_host_floats(c, M.ws1, (size_t)(2 * S * h), PP_BF16, &hws1));
        PP_TRY(pp_to_host_floats(c, M.ws2, (size_t)(h * S), PP_BF16, &hws2));
    }
    y = (double *)calloc((size_t)(T * h), sizeof *y);
    dx = (double *)calloc((size_t)(T * h), sizeof *dx);
    dwr = (double *)calloc((size_t)(E * h), sizeof *dwr);
    dw1 = (double *)calloc((size_t)(L * 2 * F * h), sizeof *dw1);
    dw2 = (double *)calloc((size_t)(L * h * F), sizeof *dw2);
    dws1 = (double *)calloc((size_t)(2 * (S ? S : 1) * h), sizeof *dws1);
    dws2 = (double *)calloc((size_t)(h * (S ? S : 1)), sizeof *dws2);
    if (!y || !dx || !dwr || !dw1 || !dw2 || !dws1 || !dws2) {
        pp_probe_error(__FILE__, __LINE__, "out of memory");
        goto fail;
    }
    {
        pp_ref_moe_shape rs = {T, h, E, sh.K, F, S, L, sh.sigmoid};
        pp_ref_moe_weights w = {hwr, hw1, hw2, hws1, hws2};
        pp_ref_moe_grads g = {dx, dwr, dw1, dw2, S ? dws1 : NULL, S ? dws2 : NULL};
        if (pp_ref_moe(&rs, &w, M.rt.expert, hx, hdy, y, &g)) {
            pp_probe_error(__FILE__, __LINE__, "moe: the CPU reference failed (out of memory)");
            goto fail;
        }
    }
    *err = 0;
    PP_TRY(pp_check_worst(c, M.y, PP_BF16, y, (size_t)(T * h), "y", err, which, which_n));
    PP_TRY(pp_check_worst(c, M.dx, PP_BF16, dx, (size_t)(T * h), "dx", err, which, which_n));
    PP_TRY(pp_check_worst(c, M.dwr, PP_BF16, dwr, (size_t)(E * h), "dWrouter", err, which, which_n));
    PP_TRY(pp_check_worst(c, M.dw1, PP_BF16, dw1, (size_t)(L * 2 * F * h), "dW1", err, which, which_n));
    PP_TRY(pp_check_worst(c, M.dw2, PP_BF16, dw2, (size_t)(L * h * F), "dW2", err, which, which_n));
    if (S) {
        PP_TRY(pp_check_worst(c, M.dws1, PP_BF16, dws1, (size_t)(2 * S * h), "dWshared1", err, which, which_n));
        PP_TRY(pp_check_worst(c, M.dws2, PP_BF16, dws2, (size_t)(h * S), "dWshared2", err, which, which_n));
    }
    rc = 0;
fail:
    moe_free(&M);
    free(hx); free(hdy); free(hwr); free(hw1); free(hw2); free(hws1); free(hws2);
    free(y); free(dx); free(dwr); free(dw1); free(dw2); free(dws1); free(dws2);
    return rc;
}

/* ================================================================ the probe */

typedef struct {
    int64_t hidden, experts, topk, moe_ffn, shared_ffn, tokens, ep;
    bool grouped;
} moe_job;

static int build_jobs(const pp_probe_opts *o, moe_job *jobs, int cap)
{
    int n = 0;
    const unsigned impls = o->moe_impls ? o->moe_impls : 3;
    if (!o->hidden) {
        /* a small Mixtral-like and a fine-grained DeepSeek-MoE-16B-like layer (NOTES.md) */
        moe_job q = {512, 8, 2, 512, 0, 1024, 1, false};
        moe_job def[2] = {{2048, 8, 2, 5632, 0, 4096, 1, false}, {2048, 64, 6, 1408, 2816, 4096, 1, false}};
        for (int i = 0; i < (o->quick ? 1 : 2); i++)
            for (int g = 0; g < 2 && n < cap; g++)
                if (impls >> g & 1u) {
                    jobs[n] = o->quick ? q : def[i];
                    jobs[n++].grouped = g == 1;
                }
        return n;
    }
    for (int ti = 0; ti < (o->n_tokens ? o->n_tokens : 1); ti++)
        for (int ei = 0; ei < (o->n_ep ? o->n_ep : 1); ei++)
            for (int g = 0; g < 2 && n < cap; g++)
                if (impls >> g & 1u) {
                    moe_job j = {o->hidden, o->experts, o->topk, o->moe_ffn, o->shared_ffn,
                                 o->n_tokens ? o->tokens[ti] : 4096, o->n_ep ? o->ep[ei] : 1, g == 1};
                    jobs[n++] = j;
                }
    return n;
}

/* expert GEMM FLOPs of the forward: fc1 2*rows*h*2F + fc2 2*rows*F*h */
static double expert_fwd_flops(const moe *M)
{
    return 6.0 * (double)M->R * (double)M->sh.h * (double)M->sh.F;
}

/* One job: its configuration's check once, then the layer at its size timed (whole fwd and fwd+bwd,
 * then the parts). 0 (a row, a note or a wrong result), -1 on a failure (an OOM among them). */
static int moe_one(pp_probe_ctx *c, const moe_job *j, int ji, int checked[64], double check_err[64], moe *M)
{
    moe_shape sh;
    double ms_f = 0, ms_fb = 0, ms_gf = 0, ms_gb = 0, parts[2 * PP_MOE_PARTS];
    char note[256] = "", which[32] = "";
    int key = 0, st = 0, backend = j->grouped ? (PP_HAVE_CUBLAS ? BK_CUBLAS_GROUPED : BK_LT_BATCHED) : BK_LOOP;
    memset(&sh, 0, sizeof sh);
    sh.T = j->tokens, sh.h = j->hidden, sh.E = j->experts, sh.K = j->topk, sh.F = j->moe_ffn, sh.S = j->shared_ffn;
    sh.ep = j->ep;
    sh.imbalance = c->opt->imbalance > 1 ? c->opt->imbalance : 1;
    sh.sigmoid = c->opt->router == 1;
    sh.grouped = j->grouped;
    /* checks kept per (impl, ep > 1, imbalanced, sigmoid, shared) */
    key = (int)j->grouped | (sh.ep > 1) << 1 | (sh.imbalance > 1) << 2 | (int)sh.sigmoid << 3 | (sh.S > 0) << 4;
    if (!checked[key]) {
        double err = 0;
        PP_TRY(moe_check(c, &sh, backend, &err, which, sizeof which, note, sizeof note));
        if (note[0]) pp_report_note(c->rep, "moe: %s", note);
        /* bf16 activations, weights and gradients through ~10 roundings (the dense layer's 5e-2) */
        if (!(err <= 5e-2)) {
            pp_report_fail(c->rep, "moe (%s, ep %s, %s, %s router%s): %s off the CPU reference by %.3g",
                           j->grouped ? "grouped" : "loop", sh.ep > 1 ? "> 1" : "1",
                           sh.imbalance > 1 ? "imbalanced" : "balanced", sh.sigmoid ? "sigmoid" : "softmax",
                           sh.S ? ", shared expert" : "", which, err);
            checked[key] = -1;
        } else {
            checked[key] = 1;
            check_err[key] = err;
        }
    }
    if (checked[key] != 1) return 0;
    pp_alloc_mark();
    PP_TRY(moe_init(c, M, &sh, backend, 0xBEEF00ull + (unsigned long long)ji, note, sizeof note));
    PP_TRY(pp_time_ms(c, moe_fwd, M, true, &ms_f));
    PP_TRY(pp_time_ms(c, moe_fwdbwd, M, true, &ms_fb));
    PP_TRY(pp_time_ms(c, run_expert_gemms_fwd, M, true, &ms_gf));
    PP_TRY(pp_time_ms(c, run_expert_gemms_bwd, M, true, &ms_gb));
    st = pp_parts_time(c, moe_fwdbwd, M, 2 * PP_MOE_PARTS, c->opt->quick ? 3 : 5, parts);
    if (st < 0) goto fail;
    if (st > 0) {
        memset(parts, 0, sizeof parts);
        pp_report_note(c->rep, "moe %lld experts on this rank: too many steps to time their parts", (long long)M->L);
    }
    {
        pp_moe_row row;
        const double fl = expert_fwd_flops(M);
        memset(&row, 0, sizeof row);
        row.hidden = j->hidden, row.experts = j->experts, row.topk = j->topk, row.moe_ffn = j->moe_ffn;
        row.shared_ffn = j->shared_ffn, row.tokens = j->tokens, row.ep = j->ep, row.imbalance = sh.imbalance;
        snprintf(row.impl, sizeof row.impl, "%s", j->grouped ? "grouped" : "loop");
        snprintf(row.backend, sizeof row.backend, "%s", backend_names[M->backend]);
        snprintf(row.router, sizeof row.router, "%s", sh.sigmoid ? "sigmoid" : "softmax");
        row.local_experts = M->L;
        row.rows = M->R;
        row.fwd_ms = ms_f;
        row.fwdbwd_ms = ms_fb;
        for (int k = 0; k < PP_MOE_PARTS; k++) {
            row.part_fwd_ms[k] = parts[k];
            row.part_bwd_ms[k] = parts[PP_MOE_PARTS + k];
        }
        /* the expert GEMMs timed alone (no activation, no part marks) */
        row.expert_fwd_tflops = fl / (ms_gf * 1e-3) / 1e12;
        row.expert_fwdbwd_tflops = 3 * fl / ((ms_gf + ms_gb) * 1e-3) / 1e12;
        row.check_err = check_err[key];
        if (pp_report_add_moe(c->rep, &row)) pp_report_fail(c->rep, "moe: no valid time");
    }
    return 0;
fail:
    return -1;
}

int pp_probe_moe(pp_probe_ctx *c)
{
    moe_job jobs[PP_PROBE_MAX_LIST * PP_PROBE_MAX_LIST * 2];
    int n_jobs = build_jobs(c->opt, jobs, (int)(sizeof jobs / sizeof jobs[0])), rc = -1;
    int checked[64];
    double check_err[64];
    moe M;
    memset(&M, 0, sizeof M);
    memset(checked, 0, sizeof checked);
    memset(check_err, 0, sizeof check_err);
    c->target_ms = 60;
    for (int ji = 0; ji < n_jobs; ji++) {
        const moe_job *j = &jobs[ji];
        pp_alloc_mark();
        if (moe_one(c, j, ji, checked, check_err, &M) &&
            pp_oom_recover(c->rep, c->stream, PP_PROBE_MOE, "hidden=%lld experts=%lld topk=%lld moe_ffn=%lld "
                           "shared_ffn=%lld tokens=%lld ep=%lld %s", (long long)j->hidden, (long long)j->experts,
                           (long long)j->topk, (long long)j->moe_ffn, (long long)j->shared_ffn, (long long)j->tokens,
                           (long long)j->ep, j->grouped ? "grouped" : "loop"))
            goto fail;
        moe_free(&M);
    }
    rc = 0;
fail:
    moe_free(&M);
    c->target_ms = 0;
    return rc;
}
