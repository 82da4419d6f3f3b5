/* mla.cu: DeepSeek-V2/V3 multi-head latent attention of one TP shard, forward and forward+backward,
 * bf16, as Megatron-Core's MLASelfAttention runs it (megatron/core/transformer/multi_latent_attention.py;
 * Liu et al. 2024, DeepSeek-V2, sec. 2.1.2-2.1.3, eqs. 9-19):
 *   q     x -> q_lora_rank (linear_q_down_proj), RMSNorm (q_layernorm), -> heads*(nope + rope)
 *         (linear_q_up_proj); q_lora_rank 0: one projection hidden -> heads*(nope + rope) (linear_q_proj)
 *   kv    x -> kv_lora_rank + rope (linear_kv_down_proj: the latent and the decoupled rope key shared
 *         by all heads), RMSNorm on the latent (kv_layernorm), -> heads*(nope + v) (linear_kv_up_proj)
 *   rope  RoPE on q's rope part and on the shared rope key; Q = [q_nope | q_rope], K = [k_nope | k_rope]
 *         (the rope key copied to every head), V copied out of kv (Megatron makes query, key and
 *         value contiguous for the attention: "TE can only accept contiguous tensors for MLA")
 *   attn  causal attention with d_qk = nope + rope (192) and d_v (128), scale 1/sqrt(d_qk): cuDNN's
 *         fused flash attention when it builds this graph (cuDNN >= 9.10 on Hopper takes d_qk != d_v),
 *         else the unfused cuBLASLt GEMMs + softmax (attn.cu; the row says which)
 *   proj  heads*v -> hidden (linear_proj, row-parallel)
 * TP: the heads split (q_up, kv_up column-parallel, proj row-parallel); the down projections are not
 * split (Megatron's TELinear parallel_mode 'duplicated'): each rank runs them whole. The
 * collectives of TP are not in the probe. The backward has every GEMM's dgrad and wgrad, both
 * RMSNorm backwards (gains' gradients in fp32), the rope/assembly backward (the rope key's gradient
 * summed over the heads) and the attention's.
 *
 * Each shape's configuration is first run at a small size (the timed head sizes, two heads, h 128)
 * and compared with the double-precision CPU reference (ref.c pp_ref_mla, checked against finite
 * differences by probes-unit). */
#include "attn.cuh"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

typedef __nv_bfloat16 bf16;

/* ================================================================ kernels */

/* RMSNorm forward, one warp per row of n (16-byte vectors), rows of x at stride ldx: y [T, n] =
 * x rstd g, rstd = 1/sqrt(mean(x^2) + eps) kept for the backward. */
__global__ void pp_rms_fwd_kernel(const uint4 *x, int64_t ldxv, const uint4 *g, uint4 *y, float *rstd, int64_t T, int nv)
{
    const int lane = threadIdx.x % 32;
    const int64_t t = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (t >= T) return;
    float ss = 0, v[8], gg[8];
    for (int i = lane; i < nv; i += 32) {
        pp_unpack8(x[t * ldxv + i], v);
#pragma unroll
        for (int e = 0; e < 8; e++) ss += v[e] * v[e];
    }
    for (int off = 16; off; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
    const float rs = rsqrtf(ss / (float)(nv * 8) + (float)PP_RMS_EPS);
    if (lane == 0) rstd[t] = rs;
    for (int i = lane; i < nv; i += 32) {
        pp_unpack8(x[t * ldxv + i], v);
        pp_unpack8(g[i], gg);
#pragma unroll
        for (int e = 0; e < 8; e++) v[e] *= rs * gg[e];
        y[t * nv + i] = pp_pack8(v);
    }
}

/* RMSNorm backward, one warp per row: dx = rstd (dy g - xh mean(dy g xh)), xh = x rstd (dx rows at
 * ldx, the layout of x); dgamma += sum_rows dy xh, summed per block in shared memory then added to
 * dgamma (fp32, zeroed by the caller) with one atomic per column per block. */
__global__ void pp_rms_bwd_kernel(const uint4 *x, int64_t ldxv, const uint4 *g, const float *rstd, const uint4 *dy,
                                  uint4 *dx, float *dgamma, int64_t T, int nv)
{
    extern __shared__ float dg[]; /* [nv * 8] */
    const int lane = threadIdx.x % 32, warps = blockDim.x / 32;
    for (int i = threadIdx.x; i < nv * 8; i += blockDim.x) dg[i] = 0;
    __syncthreads();
    for (int64_t t = (int64_t)blockIdx.x * warps + threadIdx.x / 32; t < T; t += (int64_t)gridDim.x * warps) {
        float m = 0, xv[8], gv[8], dv[8], o[8];
        const float rs = rstd[t];
        for (int i = lane; i < nv; i += 32) {
            pp_unpack8(x[t * ldxv + i], xv);
            pp_unpack8(g[i], gv);
            pp_unpack8(dy[t * nv + i], dv);
#pragma unroll
            for (int e = 0; e < 8; e++) m += dv[e] * gv[e] * xv[e] * rs;
        }
        for (int off = 16; off; off >>= 1) m += __shfl_xor_sync(0xffffffffu, m, off);
        m /= (float)(nv * 8);
        for (int i = lane; i < nv; i += 32) {
            pp_unpack8(x[t * ldxv + i], xv);
            pp_unpack8(g[i], gv);
            pp_unpack8(dy[t * nv + i], dv);
#pragma unroll
            for (int e = 0; e < 8; e++) {
                const float xh = xv[e] * rs;
                o[e] = rs * (dv[e] * gv[e] - xh * m);
                atomicAdd(&dg[i * 8 + e], dv[e] * xh);
            }
            dx[t * ldxv + i] = pp_pack8(o);
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < nv * 8; i += blockDim.x) atomicAdd(&dgamma[i], dg[i]);
}

/* RoPE angle of pair i (of dr/2) at position pos: pos * 10000^(-2i/dr) (Su et al. 2021). */
__device__ __forceinline__ void pp_rope_cs(int64_t pos, int i, int dr, float *c, float *s)
{
    float th = (float)pos * exp2f(-2.0f * (float)i / (float)dr * 13.287712379549449f); /* log2(10000) */
    sincosf(th, s, c); /* not __sincosf: angles reach the sequence length in radians */
}

/* Element r of the rotated rope vector x[0..dr) (rotate-half pairs (i, i + dr/2)); dir -1: inverse. */
__device__ __forceinline__ float pp_rope_at(const bf16 *x, int r, int dr, int64_t pos, float dir)
{
    const int half = dr / 2, i = r < half ? r : r - half;
    float c, s;
    pp_rope_cs(pos, i, dr, &c, &s);
    s *= dir;
    const float a = __bfloat162float(x[i]), b = __bfloat162float(x[i + half]);
    return r < half ? a * c - b * s : b * c + a * s;
}

/* Assemble the attention's inputs, a block per token: Q [T, H*dq] (q's rope part rotated), K
 * [T, H*dq] (k_nope from kv, the shared rope key rotated), V [T, H*dv] (from kv). dq = dn + dr. */
__global__ void pp_mla_rope_fwd_kernel(const bf16 *q, const bf16 *ckv, const bf16 *kv, bf16 *Q, bf16 *K, bf16 *V,
                                       int64_t T, int64_t s, int H, int dn, int dr, int dv, int kvr)
{
    const int dq = dn + dr, nkv = H * (dn + dv), ckw = kvr + dr;
    for (int64_t t = blockIdx.x; t < T; t += gridDim.x) {
        const int64_t pos = t % s;
        for (int i = threadIdx.x; i < H * dq; i += blockDim.x) {
            const int j = i / dq, r = i % dq;
            const bf16 *qh = q + t * H * dq + j * dq;
            Q[t * H * dq + i] = r < dn ? qh[r] : __float2bfloat16_rn(pp_rope_at(qh + dn, r - dn, dr, pos, 1.0f));
            K[t * H * dq + i] = r < dn ? kv[t * nkv + j * (dn + dv) + r]
                                       : __float2bfloat16_rn(pp_rope_at(ckv + t * ckw + kvr, r - dn, dr, pos, 1.0f));
        }
        for (int i = threadIdx.x; i < H * dv; i += blockDim.x) {
            const int j = i / dv, r = i % dv;
            V[t * H * dv + i] = kv[t * nkv + j * (dn + dv) + dn + r];
        }
    }
}

/* Its backward, a block per token: dq (the rope part rotated back), dkv = [dK_nope | dV] per head,
 * and the shared rope key's gradient (dckv's last dr columns) summed over the heads. */
__global__ void pp_mla_rope_bwd_kernel(const bf16 *dQ, const bf16 *dK, const bf16 *dV, bf16 *dq, bf16 *dkv, bf16 *dckv,
                                       int64_t T, int64_t s, int H, int dn, int dr, int dv, int kvr)
{
    const int dqw = dn + dr, nkv = H * (dn + dv), ckw = kvr + dr;
    for (int64_t t = blockIdx.x; t < T; t += gridDim.x) {
        const int64_t pos = t % s;
        for (int i = threadIdx.x; i < H * dqw; i += blockDim.x) {
            const int j = i / dqw, r = i % dqw;
            const bf16 *gh = dQ + t * H * dqw + j * dqw;
            dq[t * H * dqw + i] = r < dn ? gh[r] : __float2bfloat16_rn(pp_rope_at(gh + dn, r - dn, dr, pos, -1.0f));
            if (r < dn) dkv[t * nkv + j * (dn + dv) + r] = dK[t * H * dqw + i];
        }
        for (int i = threadIdx.x; i < H * dv; i += blockDim.x) {
            const int j = i / dv, r = i % dv;
            dkv[t * nkv + j * (dn + dv) + dn + r] = dV[t * H * dv + i];
        }
        for (int r = threadIdx.x; r < dr; r += blockDim.x) {
            float acc = 0;
            for (int j = 0; j < H; j++) acc += pp_rope_at(dK + t * H * dqw + j * dqw + dn, r, dr, pos, -1.0f);
            dckv[t * ckw + kvr + r] = __float2bfloat16_rn(acc);
        }
    }
}

/* ================================================================ the block */

typedef struct {
    int64_t b, s, h, H, qr, kvr, dn, dr, dv; /* H: the shard's heads */
    bool flash;
} mla_shape;

typedef struct {
    mla_shape sh;
    int64_t T, nq, nkv, ckw, qin;
    /* parameters and gradients (gains' gradients fp32) */
    bf16 *wdq, *gq, *wuq, *wdkv, *gkv, *wukv, *wo, *dwdq, *dwuq, *dwdkv, *dwukv, *dwo;
    float *dgq, *dgkv;
    /* activations */
    bf16 *x, *cq, *cqn, *q, *ckv, *c, *kv, *Q, *K, *V, *O, *y;
    float *rq, *rkv, *stats;
    /* gradients */
    bf16 *dy, *dO, *dQ, *dK, *dV, *dq, *dkv, *dc, *dckv, *dcqn, *dcq, *dx;
    pp_gemm_plan qd_f, qu_f, kvd_f, kvu_f, o_f, o_d, o_w, kvu_d, kvu_w, kvd_d, kvd_w, qu_d, qu_w, qd_d, qd_w;
    pp_attn *attn;
    int rms_blocks;
    pp_dev_list mem;
} mla;

#define AA(ptr, n, sz) PP_TRY(pp_dev_list_alloc(&A->mem, (void **)&(ptr), (size_t)(n) * (sz)))

static void mla_free(mla *A)
{
    pp_gemm_plan *ps[15] = {&A->qd_f, &A->qu_f, &A->kvd_f, &A->kvu_f, &A->o_f, &A->o_d,  &A->o_w, &A->kvu_d,
                            &A->kvu_w, &A->kvd_d, &A->kvd_w, &A->qu_d, &A->qu_w, &A->qd_d, &A->qd_w};
    pp_attn_free(A->attn);
    for (int i = 0; i < 15; i++) pp_gemm_plan_free(ps[i]);
    pp_dev_list_free(&A->mem);
    memset(A, 0, sizeof *A);
}

static int mla_plan(pp_probe_ctx *c, pp_gemm_desc d, pp_gemm_plan *p, const char *what)
{
    int st = pp_gemm_plan_make(c, &d, 1, p);
    if (st > 0)
        pp_probe_error(__FILE__, __LINE__, "no cuBLASLt plan for the mla %s GEMM (%lldx%lldx%lld): %s", what,
                       (long long)d.m, (long long)d.n, (long long)d.k, pp_gemm_plan_why());
    return st ? -1 : 0;
}

/* 0 ok, 1 the attention is unavailable in the asked mode (why), -1 error. */
static int mla_init(pp_probe_ctx *c, mla *A, const mla_shape *sh, unsigned long long seed, char *why, size_t why_n)
{
    int64_t T, h, H, qr, kvr, dn, dr, dv, nq, nkv, ckw, qin;
    memset(A, 0, sizeof *A);
    A->sh = *sh;
    T = A->T = sh->b * sh->s;
    h = sh->h, H = sh->H, qr = sh->qr, kvr = sh->kvr, dn = sh->dn, dr = sh->dr, dv = sh->dv;
    nq = A->nq = H * (dn + dr);
    nkv = A->nkv = H * (dn + dv);
    ckw = A->ckw = kvr + dr;
    qin = A->qin = qr ? qr : h;
    if (qr) {
        AA(A->wdq, qr * h, 2); AA(A->gq, qr, 2); AA(A->dwdq, qr * h, 2); AA(A->dgq, qr, 4);
        AA(A->cq, T * qr, 2); AA(A->cqn, T * qr, 2); AA(A->rq, T, 4); AA(A->dcqn, T * qr, 2); AA(A->dcq, T * qr, 2);
    }
    AA(A->wuq, nq * qin, 2); AA(A->wdkv, ckw * h, 2); AA(A->gkv, kvr, 2); AA(A->wukv, nkv * kvr, 2);
    AA(A->wo, h * H * dv, 2);
    AA(A->dwuq, nq * qin, 2); AA(A->dwdkv, ckw * h, 2); AA(A->dgkv, kvr, 4); AA(A->dwukv, nkv * kvr, 2);
    AA(A->dwo, h * H * dv, 2);
    AA(A->x, T * h, 2); AA(A->q, T * nq, 2); AA(A->ckv, T * ckw, 2); AA(A->c, T * kvr, 2); AA(A->rkv, T, 4);
    AA(A->kv, T * nkv, 2); AA(A->Q, T * nq, 2); AA(A->K, T * nq, 2); AA(A->V, T * H * dv, 2);
    AA(A->O, T * H * dv, 2); AA(A->y, T * h, 2); AA(A->stats, sh->b * H * sh->s, 4);
    AA(A->dy, T * h, 2); AA(A->dO, T * H * dv, 2); AA(A->dQ, T * nq, 2); AA(A->dK, T * nq, 2);
    AA(A->dV, T * H * dv, 2); AA(A->dq, T * nq, 2); AA(A->dkv, T * nkv, 2); AA(A->dc, T * kvr, 2);
    AA(A->dckv, T * ckw, 2); AA(A->dx, T * h, 2);
    A->rms_blocks = c->prop.multiProcessorCount * 2;
    /* unit-variance activations, nn.Linear-like weights, RMSNorm gains 1 + noise */
    PP_TRY(pp_fill(c, A->x, (size_t)(T * h), PP_BF16, 1.0f, seed + 1));
    PP_TRY(pp_fill(c, A->dy, (size_t)(T * h), PP_BF16, 1.0f, seed + 2));
    if (qr) {
        PP_TRY(pp_fill(c, A->wdq, (size_t)(qr * h), PP_BF16, (float)sqrt(3.0 / (double)h), seed + 3));
        PP_TRY(pp_fill_affine(c, A->gq, (size_t)qr, PP_BF16, 1.0f, 0.1f, seed + 4));
    }
    PP_TRY(pp_fill(c, A->wuq, (size_t)(nq * qin), PP_BF16, (float)sqrt(3.0 / (double)qin), seed + 5));
    PP_TRY(pp_fill(c, A->wdkv, (size_t)(ckw * h), PP_BF16, (float)sqrt(3.0 / (double)h), seed + 6));
    PP_TRY(pp_fill_affine(c, A->gkv, (size_t)kvr, PP_BF16, 1.0f, 0.1f, seed + 7));
    PP_TRY(pp_fill(c, A->wukv, (size_t)(nkv * kvr), PP_BF16, (float)sqrt(3.0 / (double)kvr), seed + 8));
    PP_TRY(pp_fill(c, A->wo, (size_t)(h * H * dv), PP_BF16, (float)sqrt(3.0 / (double)(H * dv)), seed + 9));
    /* forward GEMMs */
    if (qr) {
        PP_TRY(mla_plan(c, pp_desc_fwd(A->x, A->wdq, A->cq, T, qr, h), &A->qd_f, "q down"));
        PP_TRY(mla_plan(c, pp_desc_fwd(A->cqn, A->wuq, A->q, T, nq, qr), &A->qu_f, "q up"));
    } else {
        PP_TRY(mla_plan(c, pp_desc_fwd(A->x, A->wuq, A->q, T, nq, h), &A->qu_f, "q"));
    }
    PP_TRY(mla_plan(c, pp_desc_fwd(A->x, A->wdkv, A->ckv, T, ckw, h), &A->kvd_f, "kv down"));
    PP_TRY(mla_plan(c, pp_desc_fwd(A->c, A->wukv, A->kv, T, nkv, kvr), &A->kvu_f, "kv up"));
    PP_TRY(mla_plan(c, pp_desc_fwd(A->O, A->wo, A->y, T, h, H * dv), &A->o_f, "proj"));
    /* backward GEMMs; the q path's dgrad adds into the kv path's dx (beta 1) */
    PP_TRY(mla_plan(c, pp_desc_dgrad(A->dy, A->wo, A->dO, T, h, H * dv), &A->o_d, "proj dgrad"));
    PP_TRY(mla_plan(c, pp_desc_wgrad(A->dy, A->O, A->dwo, T, h, H * dv), &A->o_w, "proj wgrad"));
    PP_TRY(mla_plan(c, pp_desc_dgrad(A->dkv, A->wukv, A->dc, T, nkv, kvr), &A->kvu_d, "kv up dgrad"));
    PP_TRY(mla_plan(c, pp_desc_wgrad(A->dkv, A->c, A->dwukv, T, nkv, kvr), &A->kvu_w, "kv up wgrad"));
    PP_TRY(mla_plan(c, pp_desc_dgrad(A->dckv, A->wdkv, A->dx, T, ckw, h), &A->kvd_d, "kv down dgrad"));
    PP_TRY(mla_plan(c, pp_desc_wgrad(A->dckv, A->x, A->dwdkv, T, ckw, h), &A->kvd_w, "kv down wgrad"));
    {
        pp_gemm_desc d = qr ? pp_desc_dgrad(A->dcq, A->wdq, A->dx, T, qr, h) : pp_desc_dgrad(A->dq, A->wuq, A->dx, T, nq, h);
        d.C = A->dx;
        d.beta = 1;
        if (qr) {
            PP_TRY(mla_plan(c, pp_desc_dgrad(A->dq, A->wuq, A->dcqn, T, nq, qr), &A->qu_d, "q up dgrad"));
            PP_TRY(mla_plan(c, pp_desc_wgrad(A->dq, A->cqn, A->dwuq, T, nq, qr), &A->qu_w, "q up wgrad"));
            PP_TRY(mla_plan(c, d, &A->qd_d, "q down dgrad"));
            PP_TRY(mla_plan(c, pp_desc_wgrad(A->dcq, A->x, A->dwdq, T, qr, h), &A->qd_w, "q down wgrad"));
        } else {
            PP_TRY(mla_plan(c, d, &A->qu_d, "q dgrad"));
            PP_TRY(mla_plan(c, pp_desc_wgrad(A->dq, A->x, A->dwuq, T, nq, h), &A->qu_w, "q wgrad"));
        }
    }
    /* the attention on Q, K [T, H*(dn+dr)] and V, O [T, H*dv] */
    {
        pp_attn_shape ash;
        pp_attn_io io;
        memset(&ash, 0, sizeof ash);
        ash.b = sh->b;
        ash.s = sh->s;
        ash.heads = H;
        ash.d = dn + dr;
        ash.dv = dv;
        ash.ld_qkv = nq;
        ash.ld_k = nq;
        ash.ld_v = H * dv;
        ash.ld_o = H * dv;
        io.q = A->Q;
        io.k = A->K;
        io.v = A->V;
        io.o = A->O;
        io.stats = A->stats;
        io.dout = A->dO;
        io.dq = A->dQ;
        io.dk = A->dK;
        io.dv = A->dV;
        int st = pp_attn_create(c, &ash, sh->flash, &io, &A->attn, why, why_n);
        if (st) return st;
    }
    return 0;
fail:
    return -1;
}

static unsigned token_blocks(pp_probe_ctx *c, int64_t T)
{
    int64_t want = (int64_t)c->prop.multiProcessorCount * 16;
    return (unsigned)(T < want ? T : want);
}

static int rms_fwd(pp_probe_ctx *c, const bf16 *x, int64_t ldx, const bf16 *g, bf16 *y, float *rstd, int64_t T,
                   int64_t n)
{
    pp_rms_fwd_kernel<<<(unsigned)((T + 3) / 4), 128, 0, c->stream>>>((const uint4 *)x, ldx / 8, (const uint4 *)g,
                                                                      (uint4 *)y, rstd, T, (int)(n / 8));
    PP_LAUNCHED();
    return 0;
fail:
    return -1;
}

static int rms_bwd(pp_probe_ctx *c, const mla *A, const bf16 *x, int64_t ldx, const bf16 *g, const float *rstd,
                   const bf16 *dy, bf16 *dx, float *dgamma, int64_t n)
{
    PP_CU(cudaMemsetAsync(dgamma, 0, (size_t)n * sizeof(float), c->stream));
    pp_rms_bwd_kernel<<<A->rms_blocks, 256, (size_t)n * sizeof(float), c->stream>>>(
        (const uint4 *)x, ldx / 8, (const uint4 *)g, rstd, (const uint4 *)dy, (uint4 *)dx, dgamma, A->T, (int)(n / 8));
    PP_LAUNCHED();
    return 0;
fail:
    return -1;
}

static int mla_fwd(pp_probe_ctx *c, void *arg)
{
    mla *A = (mla *)arg;
    const mla_shape *sh = &A->sh;
    const int64_t T = A->T;
    if (sh->qr) {
        PP_TRY(pp_gemm_plan_run(c, &A->qd_f));
        PP_TRY(rms_fwd(c, A->cq, sh->qr, A->gq, A->cqn, A->rq, T, sh->qr));
    }
    PP_TRY(pp_gemm_plan_run(c, &A->qu_f));
    pp_parts_mark(c, PP_MLA_Q);
    PP_TRY(pp_gemm_plan_run(c, &A->kvd_f));
    PP_TRY(rms_fwd(c, A->ckv, A->ckw, A->gkv, A->c, A->rkv, T, sh->kvr));
    PP_TRY(pp_gemm_plan_run(c, &A->kvu_f));
    pp_parts_mark(c, PP_MLA_KV);
    pp_mla_rope_fwd_kernel<<<token_blocks(c, T), 256, 0, c->stream>>>(A->q, A->ckv, A->kv, A->Q, A->K, A->V, T, sh->s,
                                                                        (int)sh->H, (int)sh->dn, (int)sh->dr,
                                                                        (int)sh->dv, (int)sh->kvr);
    PP_LAUNCHED();
    pp_parts_mark(c, PP_MLA_ROPE);
    PP_TRY(pp_attn_fwd(c, A->attn));
    pp_parts_mark(c, PP_MLA_ATTN);
    PP_TRY(pp_gemm_plan_run(c, &A->o_f));
    pp_parts_mark(c, PP_MLA_PROJ);
    return 0;
fail:
    return -1;
}

static int mla_bwd(pp_probe_ctx *c, mla *A)
{
    const mla_shape *sh = &A->sh;
    const int64_t T = A->T;
    const int P = PP_MLA_PARTS;
    PP_TRY(pp_gemm_plan_run(c, &A->o_d));
    PP_TRY(pp_gemm_plan_run(c, &A->o_w));
    pp_parts_mark(c, P + PP_MLA_PROJ);
    PP_TRY(pp_attn_bwd(c, A->attn));
    pp_parts_mark(c, P + PP_MLA_ATTN);
    pp_mla_rope_bwd_kernel<<<token_blocks(c, T), 256, 0, c->stream>>>(A->dQ, A->dK, A->dV, A->dq, A->dkv, A->dckv, T,
                                                                        sh->s, (int)sh->H, (int)sh->dn, (int)sh->dr,
                                                                        (int)sh->dv, (int)sh->kvr);
    PP_LAUNCHED();
    pp_parts_mark(c, P + PP_MLA_ROPE);
    /* kv: up dgrad/wgrad, the latent's RMSNorm backward (into dckv's first kvr columns), down */
    PP_TRY(pp_gemm_plan_run(c, &A->kvu_d));
    PP_TRY(pp_gemm_plan_run(c, &A->kvu_w));
    PP_TRY(rms_bwd(c, A, A->ckv, A->ckw, A->gkv, A->rkv, A->dc, A->dckv, A->dgkv, sh->kvr));
    PP_TRY(pp_gemm_plan_run(c, &A->kvd_d));
    PP_TRY(pp_gemm_plan_run(c, &A->kvd_w));
    pp_parts_mark(c, P + PP_MLA_KV);
    /* q: up (or the one projection), RMSNorm, down; its dgrad adds into dx */
    PP_TRY(pp_gemm_plan_run(c, &A->qu_d));
    PP_TRY(pp_gemm_plan_run(c, &A->qu_w));
    if (sh->qr) {
        PP_TRY(rms_bwd(c, A, A->cq, sh->qr, A->gq, A->rq, A->dcqn, A->dcq, A->dgq, sh->qr));
        PP_TRY(pp_gemm_plan_run(c, &A->qd_d));
        PP_TRY(pp_gemm_plan_run(c, &A->qd_w));
    }
    pp_parts_mark(c, P + PP_MLA_Q);
    return 0;
fail:
    return -1;
}

static int mla_fwdbwd(pp_probe_ctx *c, void *arg)
{
    PP_TRY(mla_fwd(c, arg));
    return mla_bwd(c, (mla *)arg);
fail:
    return -1;
}

/* Model FLOPs of the shard's forward: the GEMMs 2 T (h qr + qr nq (or h nq) + h (kvr + dr) + kvr nkv
 * + H dv h) and the attention 2 b s^2 H (dn + dr + dv) (Q K^T over d_qk, P V over d_v; no causal
 * halving, the convention of the layer probe); fwd+bwd counts 3x. */
static double mla_fwd_flops(const mla *A)
{
    const mla_shape *sh = &A->sh;
    const double T = (double)A->T, h = (double)sh->h, H = (double)sh->H;
    double g = (sh->qr ? h * (double)sh->qr + (double)sh->qr * (double)A->nq : h * (double)A->nq) +
               h * (double)A->ckw + (double)sh->kvr * (double)A->nkv + H * (double)sh->dv * h;
    return 2 * T * g + 2.0 * (double)sh->b * (double)sh->s * (double)sh->s * H * (double)(sh->dn + sh->dr + sh->dv);
}

/* ================================================================ check against the CPU */

/* The block at b 2, s 128, two heads of the timed head sizes, h 128, latent ranks 64 (q 64 when the
 * timed one compresses q), against pp_ref_mla: y, dx and every weight's and gain's gradient. 0, 1
 * when the attention is unavailable (why), -1 on failure. */
static int mla_check(pp_probe_ctx *c, const mla_shape *big, double *err, char *which, size_t which_n, char *why,
                     size_t why_n)
{
    mla A;
    mla_shape sh;
    float *hw[8] = {NULL}, *hdy = NULL;
    double *y = NULL, *gr[8] = {NULL};
    int rc = -1, st;
    int64_t T, h, H, nq, nkv, ckw, qin, qr, kvr, dv;
    memset(&A, 0, sizeof A);
    *err = INFINITY;
    which[0] = 0;
    sh = *big;
    sh.b = 2, sh.s = 128, sh.h = 128, sh.H = 2, sh.qr = big->qr ? 64 : 0, sh.kvr = 64;
    st = mla_init(c, &A, &sh, 0xC0FFEEull, why, why_n);
    if (st) {
        rc = st;
        goto fail;
    }
    T = A.T, h = sh.h, H = sh.H, nq = A.nq, nkv = A.nkv, ckw = A.ckw, qin = A.qin, qr = sh.qr, kvr = sh.kvr, dv = sh.dv;
    PP_TRY(pp_poison(c, A.y, (size_t)(T * h) * 2));
    PP_TRY(pp_poison(c, A.dx, (size_t)(T * h) * 2));
    PP_TRY(pp_poison(c, A.dwuq, (size_t)(nq * qin) * 2));
    PP_TRY(pp_poison(c, A.dwdkv, (size_t)(ckw * h) * 2));
    PP_TRY(mla_fwdbwd(c, &A));
    PP_CU(cudaStreamSynchronize(c->stream));
    {
        /* x, then the weights in pp_ref_mla_weights order: wdq, gq, wuq, wdkv, gkv, wukv, wo */
        const void *src[8] = {A.x, A.wdq, A.gq, A.wuq, A.wdkv, A.gkv, A.wukv, A.wo};
        const int64_t n[8] = {T * h, qr * h, qr, nq * qin, ckw * h, kvr, nkv * kvr, h * H * dv};
        for (int i = 0; i < 8; i++) {
            if (!n[i]) continue;
            PP_TRY(pp_to_host_floats(c, src[i], (size_t)n[i], PP_BF16, &hw[i]));
        }
        for (int i = 0; i < 8; i++)
            if (!(gr[i] = (double *)calloc((size_t)(n[i] ? n[i] : 1), sizeof(double)))) goto nomem;
    }
    if (!(y = (double *)calloc((size_t)(T * h), sizeof *y))) goto nomem;
    {
        pp_ref_mla_shape rs = {sh.b, sh.s, h, H, qr, kvr, sh.dn, sh.dr, dv};
        pp_ref_mla_weights w = {hw[1], hw[2], hw[3], hw[4], hw[5], hw[6], hw[7]};
        pp_ref_mla_grads g = {gr[0], qr ? gr[1] : NULL, qr ? gr[2] : NULL, gr[3], gr[4], gr[5], gr[6], gr[7]};
        PP_TRY(pp_to_host_floats(c, A.dy, (size_t)(T * h), PP_BF16, &hdy));
        if (pp_ref_mla(&rs, &w, hw[0], hdy, y, &g)) goto nomem;
    }
    *err = 0;
    PP_TRY(pp_check_worst(c, A.y, PP_BF16, y, (size_t)(T * h), "y", err, which, which_n));
    PP_TRY(pp_check_worst(c, A.dx, PP_BF16, gr[0], (size_t)(T * h), "dx", err, which, which_n));
    if (qr) {
        PP_TRY(pp_check_worst(c, A.dwdq, PP_BF16, gr[1], (size_t)(qr * h), "dWdq", err, which, which_n));
        PP_TRY(pp_check_worst(c, A.dgq, PP_F32, gr[2], (size_t)qr, "dgamma_q", err, which, which_n));
    }
    PP_TRY(pp_check_worst(c, A.dwuq, PP_BF16, gr[3], (size_t)(nq * qin), qr ? "dWuq" : "dWq", err, which, which_n));
    PP_TRY(pp_check_worst(c, A.dwdkv, PP_BF16, gr[4], (size_t)(ckw * h), "dWdkv", err, which, which_n));
    PP_TRY(pp_check_worst(c, A.dgkv, PP_F32, gr[5], (size_t)kvr, "dgamma_kv", err, which, which_n));
    PP_TRY(pp_check_worst(c, A.dwukv, PP_BF16, gr[6], (size_t)(nkv * kvr), "dWukv", err, which, which_n));
    PP_TRY(pp_check_worst(c, A.dwo, PP_BF16, gr[7], (size_t)(h * H * dv), "dWo", err, which, which_n));
    rc = 0;
    goto fail;
nomem:
    pp_probe_error(__FILE__, __LINE__, "out of memory");
fail:
    mla_free(&A);
    free(hdy);
    for (int i = 0; i < 8; i++) {
        free(hw[i]);
        free(gr[i]);
    }
    free(y);
    return rc;
}

/* ================================================================ the probe */

typedef struct {
    int64_t hidden, heads, qr, kvr, dn, dr, dv, seq, mbs, tp;
} mla_job;

static int build_jobs(const pp_probe_opts *o, mla_job *jobs, int cap)
{
    int n = 0;
    if (!o->hidden) {
        /* DeepSeek-V2-Lite's attention (q_lora_rank 0); --quick: a narrow one with its head sizes */
        mla_job q = {1024, 4, 256, 128, 128, 64, 128, 512, 1, 1};
        mla_job lite = {2048, 16, 0, 512, 128, 64, 128, 4096, 1, 1};
        jobs[n++] = o->quick ? q : lite;
        return n;
    }
    for (int i = 0; i < o->n_tp && n < cap; i++) {
        mla_job j = {o->hidden, o->heads, o->q_lora_rank, o->kv_lora_rank, o->qk_nope_dim, o->qk_rope_dim,
                     o->v_head_dim, o->seq ? o->seq : 4096, o->mbs ? o->mbs : 1, o->tp[i]};
        jobs[n++] = j;
    }
    return n;
}

/* One job: the check of its configuration (q compressed or not, head sizes, attention) once, then
 * the block timed. 0 (a row, a note or a wrong result), -1 on a failure (an OOM among them). */
static int mla_one(pp_probe_ctx *c, const mla_job *j, int ji, int checked[2][2], double check_err[2][2], mla *A)
{
    mla_shape sh;
    double ms_f = 0, ms_fb = 0, err = 0, parts[2 * PP_MLA_PARTS];
    char why[512] = "", which[32] = "";
    const int attn = c->opt->attention;
    const int qi = j->qr > 0;
    int st = 1;
    bool flash = true;
    memset(&sh, 0, sizeof sh);
    sh.b = j->mbs, sh.s = j->seq, sh.h = j->hidden, sh.H = j->heads / j->tp, sh.qr = j->qr, sh.kvr = j->kvr;
    sh.dn = j->dn, sh.dr = j->dr, sh.dv = j->dv;
    /* flash when cuDNN builds the d_qk != d_v graph (at the check's size and at this one), else
     * unfused; --attention picks one */
    for (int attempt = attn == 2 ? 1 : 0; attempt < (attn == 1 ? 1 : 2) && st; attempt++) {
        flash = attempt == 0;
        sh.flash = flash;
        int *ck = &checked[qi][flash];
        if (*ck == 0) {
            st = mla_check(c, &sh, &err, which, sizeof which, why, sizeof why);
            if (st < 0) return -1;
            if (st > 0) {
                pp_report_note(c->rep, "mla: %s attention unavailable for d_qk %lld, d_v %lld (%s)",
                               flash ? "flash" : "unfused", (long long)(sh.dn + sh.dr), (long long)sh.dv, why);
                *ck = -1;
            } else if (!(err <= 5e-2)) {
                /* bf16 through ~12 roundings, as the dense layer's check: 5e-2 */
                pp_report_fail(c->rep, "mla (q_lora_rank %s, %s attention): %s off the CPU reference by %.3g",
                               qi ? "> 0" : "0", flash ? "flash" : "unfused", which, err);
                *ck = -1;
            } else {
                *ck = 1;
                check_err[qi][flash] = err;
            }
        }
        st = 1;
        if (*ck != 1) continue;
        /* the size itself: what its buffers take is counted from here */
        pp_alloc_mark();
        st = mla_init(c, A, &sh, 0xBEEF00ull + (unsigned long long)ji, why, sizeof why);
        if (st < 0) return -1;
        if (st > 0) {
            pp_report_note(c->rep, "mla hidden=%lld tp=%lld: %s attention unavailable at this size (%s)",
                           (long long)j->hidden, (long long)j->tp, flash ? "flash" : "unfused", why);
            mla_free(A);
        }
    }
    if (st) return 0; /* neither attention: the notes say why */
    PP_TRY(pp_time_ms(c, mla_fwd, A, true, &ms_f));
    PP_TRY(pp_time_ms(c, mla_fwdbwd, A, true, &ms_fb));
    st = pp_parts_time(c, mla_fwdbwd, A, 2 * PP_MLA_PARTS, c->opt->quick ? 3 : 5, parts);
    if (st < 0) goto fail;
    if (st > 0) memset(parts, 0, sizeof parts); /* not reached: the block marks 10 times */
    {
        pp_mla_row row;
        const double fl = mla_fwd_flops(A);
        memset(&row, 0, sizeof row);
        row.hidden = j->hidden, row.heads = j->heads, row.q_lora_rank = j->qr, row.kv_lora_rank = j->kvr;
        row.qk_nope_dim = j->dn, row.qk_rope_dim = j->dr, row.v_head_dim = j->dv;
        row.seq = j->seq, row.mbs = j->mbs, row.tp = j->tp;
        snprintf(row.attention, sizeof row.attention, "%s", flash ? "flash" : "unfused");
        row.fwd_ms = ms_f;
        row.fwdbwd_ms = ms_fb;
        row.fwd_tflops = fl / (ms_f * 1e-3) / 1e12;
        row.fwdbwd_tflops = 3 * fl / (ms_fb * 1e-3) / 1e12;
        for (int k = 0; k < PP_MLA_PARTS; k++) {
            row.part_fwd_ms[k] = parts[k];
            row.part_bwd_ms[k] = parts[PP_MLA_PARTS + k];
        }
        row.check_err = check_err[qi][flash];
        if (pp_report_add_mla(c->rep, &row)) pp_report_fail(c->rep, "mla: no valid time");
    }
    return 0;
fail:
    return -1;
}

int pp_probe_mla(pp_probe_ctx *c)
{
    mla_job jobs[PP_PROBE_MAX_TP];
    int n_jobs = build_jobs(c->opt, jobs, PP_PROBE_MAX_TP), rc = -1;
    int checked[2][2];
    double check_err[2][2];
    mla A;
    memset(&A, 0, sizeof A);
    memset(checked, 0, sizeof checked);
    memset(check_err, 0, sizeof check_err);
    c->target_ms = 60;
    for (int ji = 0; ji < n_jobs; ji++) {
        const mla_job *j = &jobs[ji];
        pp_alloc_mark();
        if (mla_one(c, j, ji, checked, check_err, &A) &&
            pp_oom_recover(c->rep, c->stream, PP_PROBE_MLA, "hidden=%lld heads=%lld q_lora=%lld kv_lora=%lld seq=%lld "
                           "mbs=%lld tp=%lld", (long long)j->hidden, (long long)j->heads, (long long)j->qr,
                           (long long)j->kvr, (long long)j->seq, (long long)j->mbs, (long long)j->tp))
            goto fail;
        mla_free(&A);
    }
    rc = 0;
fail:
    mla_free(&A);
    c->target_ms = 0;
    return rc;
}
