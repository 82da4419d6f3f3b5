/* layer_kernels.cu: the layer probe's own kernels (layer_kernels.cuh): LayerNorm forward and
 * backward with the row in registers, GELU and bias epilogues, column sums, and the grouped-query
 * attention expand/reduce copies, each as the layer of ref.h computes it (ref.c checks them
 * through the whole layer). */
#include "layer_kernels.cuh"

#include <math.h>

#include "ref.h"

/* ================================================================ kernels */

__device__ __forceinline__ float pp_bsum(float v, float *red)
{
    for (int off = 16; off; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    __syncthreads(); /* red is reused by consecutive calls */
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    float r = 0;
    for (int i = 0; i < (int)(blockDim.x / 32); i++) r += red[i];
    return r;
}

/* LayerNorm forward, one block per row; the row stays in registers (two-pass mean and variance). */
__global__ void pp_ln_fwd_kernel(const bf16 *x, const bf16 *g, const bf16 *b, bf16 *y, float *mean, float *rstd,
                                 int64_t h)
{
    __shared__ float red[32];
    const int64_t nv = h / 8;
    const uint4 *xr = (const uint4 *)(x + (int64_t)blockIdx.x * h);
    float v[LN_MAXV][8];
    float s = 0;
#pragma unroll
    for (int u = 0; u < LN_MAXV; u++) {
        int64_t i = threadIdx.x + (int64_t)u * blockDim.x;
        if (i < nv) {
            pp_unpack8(xr[i], v[u]);
#pragma unroll
            for (int e = 0; e < 8; e++) s += v[u][e];
        }
    }
    const float mu = pp_bsum(s, red) / (float)h;
    float q = 0;
#pragma unroll
    for (int u = 0; u < LN_MAXV; u++) {
        int64_t i = threadIdx.x + (int64_t)u * blockDim.x;
        if (i < nv)
#pragma unroll
            for (int e = 0; e < 8; e++) q += (v[u][e] - mu) * (v[u][e] - mu);
    }
    const float rs = rsqrtf(pp_bsum(q, red) / (float)h + (float)PP_LN_EPS);
    if (threadIdx.x == 0) {
        mean[blockIdx.x] = mu;
        rstd[blockIdx.x] = rs;
    }
    uint4 *yr = (uint4 *)(y + (int64_t)blockIdx.x * h);
#pragma unroll
    for (int u = 0; u < LN_MAXV; u++) {
        int64_t i = threadIdx.x + (int64_t)u * blockDim.x;
        if (i < nv) {
            float gg[8], bb[8], o[8];
            pp_unpack8(((const uint4 *)g)[i], gg);
            pp_unpack8(((const uint4 *)b)[i], bb);
#pragma unroll
            for (int e = 0; e < 8; e++) o[e] = (v[u][e] - mu) * rs * gg[e] + bb[e];
            yr[i] = pp_pack8(o);
        }
    }
}

/* Sum of (a, b) over the tpr threads of a row group (tpr a multiple of 32, the same in the whole
 * block; every thread of the block calls it). */
__device__ __forceinline__ float2 pp_group_sum2(float2 v, float2 *red, int tpr)
{
    for (int off = 16; off; off >>= 1) {
        v.x += __shfl_xor_sync(0xffffffffu, v.x, off);
        v.y += __shfl_xor_sync(0xffffffffu, v.y, off);
    }
    if (tpr == 32) return v;
    const int wpg = tpr / 32, grp = threadIdx.x / tpr;
    __syncthreads(); /* red is reused by the previous row */
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    float2 s = make_float2(0, 0);
    for (int i = 0; i < wpg; i++) {
        s.x += red[grp * wpg + i].x;
        s.y += red[grp * wpg + i].y;
    }
    return s;
}

/* LayerNorm backward: dx = rstd (dxh - mean(dxh) - xh mean(dxh xh)) + dres, dxh = dy g.
 * tpr threads per row (each owning LN_MAXV 16-byte column vectors), R = blockDim / tpr rows at a
 * time, blocks looping over rows; dgamma/dbeta partials stay in registers, are summed over the
 * row groups in shared memory, and written per block to part [gridDim, 2h] for pp_ln_sum_kernel.
 * (A first version ran one 32-thread row per block on 2 blocks per SM: at h = 1024 two warps per SM
 * could not keep HBM busy, and the layer's backward lost 0.4 ms to it.) */
__global__ void pp_ln_bwd_kernel(const bf16 *dy, const bf16 *x, const float *mean, const float *rstd, const bf16 *g,
                                 const bf16 *dres, bf16 *dx, float *part, int64_t T, int64_t h, int tpr)
{
    extern __shared__ float acc[]; /* [2h] when R > 1 */
    __shared__ float2 red[32];
    const int R = blockDim.x / tpr, grp = threadIdx.x / tpr, lt = threadIdx.x % tpr;
    const int64_t nv = h / 8;
    float dg[LN_MAXV][8], db[LN_MAXV][8], gg[LN_MAXV][8];
#pragma unroll
    for (int u = 0; u < LN_MAXV; u++) {
        int64_t i = lt + (int64_t)u * tpr;
#pragma unroll
        for (int e = 0; e < 8; e++) dg[u][e] = db[u][e] = gg[u][e] = 0;
        if (i < nv) pp_unpack8(((const uint4 *)g)[i], gg[u]);
    }
    /* uniform trip count in the block (the group sums synchronise it) */
    for (int64_t base = (int64_t)blockIdx.x * R; base < T; base += (int64_t)gridDim.x * R) {
        const int64_t r = base + grp;
        const bool on = r < T;
        float xh[LN_MAXV][8], dxh[LN_MAXV][8];
        float2 m = make_float2(0, 0);
        const float mu = on ? mean[r] : 0.0f, rs = on ? rstd[r] : 0.0f;
#pragma unroll
        for (int u = 0; u < LN_MAXV; u++) {
            int64_t i = lt + (int64_t)u * tpr;
            if (on && i < nv) {
                float xv[8], dv[8];
                pp_unpack8(((const uint4 *)(x + r * h))[i], xv);
                pp_unpack8(((const uint4 *)(dy + r * h))[i], dv);
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    xh[u][e] = (xv[e] - mu) * rs;
                    dxh[u][e] = dv[e] * gg[u][e];
                    m.x += dxh[u][e];
                    m.y += dxh[u][e] * xh[u][e];
                    dg[u][e] += dv[e] * xh[u][e];
                    db[u][e] += dv[e];
                }
            }
        }
        m = pp_group_sum2(m, red, tpr);
        const float m1 = m.x / (float)h, m2 = m.y / (float)h;
        if (!on) continue;
        uint4 *dxr = (uint4 *)(dx + r * h);
        const uint4 *rr = dres ? (const uint4 *)(dres + r * h) : NULL;
#pragma unroll
        for (int u = 0; u < LN_MAXV; u++) {
            int64_t i = lt + (int64_t)u * tpr;
            if (i < nv) {
                float o[8], rv[8] = {0, 0, 0, 0, 0, 0, 0, 0};
                if (rr) pp_unpack8(rr[i], rv);
#pragma unroll
                for (int e = 0; e < 8; e++) o[e] = rs * (dxh[u][e] - m1 - xh[u][e] * m2) + rv[e];
                dxr[i] = pp_pack8(o);
            }
        }
    }
    float *pg = part + (int64_t)blockIdx.x * 2 * h, *pb = pg + h;
    if (R == 1) {
#pragma unroll
        for (int u = 0; u < LN_MAXV; u++) {
            int64_t i = lt + (int64_t)u * tpr;
            if (i < nv)
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    pg[i * 8 + e] = dg[u][e];
                    pb[i * 8 + e] = db[u][e];
                }
        }
        return;
    }
    for (int64_t j = threadIdx.x; j < 2 * h; j += blockDim.x) acc[j] = 0;
    __syncthreads();
#pragma unroll
    for (int u = 0; u < LN_MAXV; u++) {
        int64_t i = lt + (int64_t)u * tpr;
        if (i < nv)
#pragma unroll
            for (int e = 0; e < 8; e++) {
                atomicAdd(&acc[i * 8 + e], dg[u][e]);
                atomicAdd(&acc[h + i * 8 + e], db[u][e]);
            }
    }
    __syncthreads();
    for (int64_t j = threadIdx.x; j < 2 * h; j += blockDim.x) pg[j] = acc[j];
}

/* dgamma[j], dbeta[j] = sums over the nblk partial rows: 32 columns a block, 8 row lanes. */
__global__ void pp_ln_sum_kernel(const float *part, int nblk, int64_t h, float *dgamma, float *dbeta)
{
    __shared__ float sg[8][33], sb[8][33];
    const int64_t j = (int64_t)blockIdx.x * 32 + threadIdx.x;
    float a = 0, b = 0;
    if (j < h)
        for (int k = threadIdx.y; k < nblk; k += 8) {
            a += part[(int64_t)k * 2 * h + j];
            b += part[(int64_t)k * 2 * h + h + j];
        }
    sg[threadIdx.y][threadIdx.x] = a;
    sb[threadIdx.y][threadIdx.x] = b;
    __syncthreads();
    if (threadIdx.y == 0 && j < h) {
        for (int k = 1; k < 8; k++) {
            a += sg[k][threadIdx.x];
            b += sb[k][threadIdx.x];
        }
        dgamma[j] = a;
        dbeta[j] = b;
    }
}

__device__ __forceinline__ float pp_gelu(float x)
{
    const float c = 0.7978845608028654f;
    return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float pp_gelu_grad(float x)
{
    const float c = 0.7978845608028654f;
    float t = tanhf(c * (x + 0.044715f * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * c * (1.0f + 3.0f * 0.044715f * x * x);
}

/* Fallbacks for epilogues cuBLASLt lacks here, and the SwiGLU parts it never fuses. Row-major
 * [rows, cols] with leading dimensions. */
__global__ void pp_bias_act_kernel(bf16 *u, int64_t ldu, const bf16 *bias, bf16 *a, int64_t lda, int64_t rows,
                                   int64_t cols, int gelu)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * cols;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / cols, j = i % cols;
        float v = __bfloat162float(u[r * ldu + j]) + __bfloat162float(bias[j]);
        u[r * ldu + j] = __float2bfloat16_rn(v);
        if (gelu) a[r * lda + j] = __float2bfloat16_rn(pp_gelu(__bfloat162float(u[r * ldu + j])));
    }
}

__global__ void pp_dgelu_kernel(bf16 *d, const bf16 *u, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        d[i] = __float2bfloat16_rn(__bfloat162float(d[i]) * pp_gelu_grad(__bfloat162float(u[i])));
}

/* column sums of src [rows, cols] (ld) into out[cols]: one thread per column, rows in order */
__global__ void pp_colsum_kernel(const bf16 *src, int64_t ld, int64_t rows, int64_t cols, bf16 *out)
{
    int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (j >= cols) return;
    float s = 0;
    for (int64_t r = 0; r < rows; r++) s += __bfloat162float(src[r * ld + j]);
    out[j] = __float2bfloat16_rn(s);
}

/* Grouped-query attention (kv groups of rep = heads/kv heads), as Megatron-LM's local
 * implementation runs it (megatron/core/transformer/dot_product_attention.py): the QKV GEMM writes
 * g [T, hq + 2 hkv] (q | k | v: head j of q at columns j*d, group i of k at hq + i*d, of v at
 * hq + hkv + i*d; hq = heads*d, hkv = kv*d), then key.repeat_interleave(rep, dim=2) and the same
 * for value copy k and v to the full heads, and the attention runs multi-head on m [T, 3 hq]
 * (q | k | v, head j at j*d). The query is copied as well: Megatron's reshape of the query view of
 * the packed QKV output copies it. Both kernels move 16-byte vectors (8 bf16; d % 8 == 0), blocks
 * striding over rows (T) and threads over a row's vectors, so that the index arithmetic stays in
 * 32 bits per row.
 *
 * expand: m[t, j*d + e] = g[t, j*d + e]; m[t, hq + j*d + e] = g[t, hq + (j/rep)*d + e]; v likewise. */
__global__ void pp_gqa_expand_kernel(const bf16 *__restrict__ g, bf16 *__restrict__ m, int64_t T, int hqv, int hkvv,
                                     int dv, int rep)
{
    const int ngv = hqv + 2 * hkvv, nmv = 3 * hqv; /* 16-byte vectors per row of g and of m */
    for (int64_t t = blockIdx.x; t < T; t += gridDim.x) {
        const uint4 *src = (const uint4 *)g + t * ngv;
        uint4 *dst = (uint4 *)m + t * nmv;
        for (int v = threadIdx.x; v < nmv; v += blockDim.x) {
            const int part = v / hqv, w = v - part * hqv; /* 0 q, 1 k, 2 v; vector within the part */
            const int head = w / dv, e = w - head * dv;
            dst[v] = src[part == 0 ? w : hqv + (part - 1) * hkvv + (head / rep) * dv + e];
        }
    }
}

/* reduce, the backward of expand (the autograd of repeat_interleave, then of the split of the
 * packed QKV): dg[t, q part] = dm[t, q part]; dg[t, hq + i*d + e] = sum over r < rep of
 * dm[t, hq + (i*rep + r)*d + e], v likewise; fp32 accumulation, one rounding to bf16. */
__global__ void pp_gqa_reduce_kernel(const bf16 *__restrict__ dm, bf16 *__restrict__ dg, int64_t T, int hqv, int hkvv,
                                     int dv, int rep)
{
    const int ngv = hqv + 2 * hkvv, nmv = 3 * hqv;
    for (int64_t t = blockIdx.x; t < T; t += gridDim.x) {
        const uint4 *src = (const uint4 *)dm + t * nmv;
        uint4 *dst = (uint4 *)dg + t * ngv;
        for (int v = threadIdx.x; v < ngv; v += blockDim.x) {
            if (v < hqv) {
                dst[v] = src[v];
                continue;
            }
            const int part = (v - hqv) / hkvv, w = v - hqv - part * hkvv; /* 0 k, 1 v */
            const int grp = w / dv, e = w - grp * dv;
            const uint4 *s0 = src + hqv * (1 + part) + grp * rep * dv + e;
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, x[8];
            for (int r = 0; r < rep; r++) {
                pp_unpack8(s0[r * dv], x);
#pragma unroll
                for (int k = 0; k < 8; k++) acc[k] += x[k];
            }
            dst[v] = pp_pack8(acc);
        }
    }
}
