/* moe_kernels.cu: the moe probe's own kernels (moe_kernels.cuh): the router forward (softmax or
 * sigmoid scores, a warp top-k, the normalised probabilities at the assigned experts) and
 * backward, and the token permutation's gather, unpermute and their backward, as Megatron-Core's
 * router.py and moe_utils.py compute them (moe.cu's header gives the sources). */
#include "moe_kernels.cuh"

#include <math.h>

__device__ __forceinline__ float pp_warp_sum(float v)
{
    for (int off = 16; off; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

/* One warp per token: scores (fp32) over the E logits, the top-k selection over them (the router's
 * work; written to topk, which the fixed routing does not read), and the probabilities at the
 * assigned experts, normalised over the k (Megatron: softmax, or sigmoid with k > 1). k <= 32. */
__global__ void pp_moe_router_fwd_kernel(const bf16 *logits, const int32_t *experts, int64_t T, int E, int K,
                                         int sigmoid, float *scores, float *probs, int32_t *topk)
{
    const int lane = threadIdx.x % 32;
    const int64_t t = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (t >= T) return;
    const bf16 *l = logits + t * E;
    float *s = scores + t * E;
    float mx = -INFINITY, sum = 0;
    for (int e = lane; e < E; e += 32) mx = fmaxf(mx, __bfloat162float(l[e]));
    for (int off = 16; off; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    for (int e = lane; e < E; e += 32) {
        float v = __bfloat162float(l[e]);
        v = sigmoid ? 1.0f / (1.0f + __expf(-v)) : __expf(v - mx);
        s[e] = v;
        sum += v;
    }
    sum = pp_warp_sum(sum);
    if (!sigmoid)
        for (int e = lane; e < E; e += 32) s[e] /= sum;
    /* top-k: k rounds of a warp argmax over the lane's own scores, the chosen ones skipped */
    int chosen[32];
    for (int r = 0; r < K; r++) {
        float best = -INFINITY;
        int bi = E;
        for (int e = lane; e < E; e += 32) {
            bool taken = false;
            for (int q = 0; q < r; q++) taken |= chosen[q] == e;
            if (!taken && (s[e] > best || (s[e] == best && e < bi))) {
                best = s[e];
                bi = e;
            }
        }
        for (int off = 16; off; off >>= 1) {
            float ob = __shfl_xor_sync(0xffffffffu, best, off);
            int oi = __shfl_xor_sync(0xffffffffu, bi, off);
            if (ob > best || (ob == best && oi < bi)) {
                best = ob;
                bi = oi;
            }
        }
        chosen[r] = bi;
        if (lane == 0) topk[t * K + r] = bi;
    }
    __syncwarp();
    float sa = lane < K ? s[experts[t * K + lane]] : 0.0f;
    float ssel = pp_warp_sum(sa);
    if (lane < K) probs[t * K + lane] = (sigmoid && K == 1) ? sa : sa / ssel;
}

/* One warp per token: the router's backward from the probabilities' gradients dp [T, K] to the
 * logits' (bf16, the router GEMMs' input): through the normalisation, then softmax or sigmoid. */
__global__ void pp_moe_router_bwd_kernel(const float *scores, const float *probs, const float *dp,
                                         const int32_t *experts, int64_t T, int E, int K, int sigmoid, bf16 *dlogits)
{
    const int lane = threadIdx.x % 32;
    const int64_t t = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (t >= T) return;
    const float *s = scores + t * E;
    bf16 *dl = dlogits + t * E;
    const bool norm = !sigmoid || K > 1;
    int a = lane < K ? experts[t * K + lane] : 0;
    float sa = lane < K ? s[a] : 0.0f, p = lane < K ? probs[t * K + lane] : 0.0f, g = lane < K ? dp[t * K + lane] : 0.0f;
    float ssel = pp_warp_sum(sa), pdp = pp_warp_sum(p * g);
    float ds = norm ? (g - pdp) / ssel : g;
    float dot = sigmoid ? 0.0f : pp_warp_sum(lane < K ? ds * sa : 0.0f);
    for (int e = lane; e < E; e += 32) dl[e] = __float2bfloat16_rn(sigmoid ? 0.0f : -s[e] * dot);
    __syncwarp();
    if (lane < K) dl[a] = __float2bfloat16_rn(sigmoid ? ds * sa * (1.0f - sa) : sa * (ds - dot));
}

/* dst[r] = src[map[r]] for every row r with map[r] >= 0 (16-byte vectors; hv per row). */
__global__ void pp_moe_gather_kernel(uint4 *dst, const uint4 *src, const int32_t *map, int64_t rows, int hv)
{
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        int32_t m = map[r];
        if (m < 0) continue;
        for (int v = threadIdx.x; v < hv; v += blockDim.x) dst[r * hv + v] = src[(int64_t)m * hv + v];
    }
}

/* y[t] = shared[t] + sum_j p[t, j] * buf[row_of[t*K + j]] (fp32 sums, one rounding). */
__global__ void pp_moe_unpermute_kernel(uint4 *y, const uint4 *buf, const int32_t *row_of, const float *probs,
                                        const uint4 *shared, int64_t T, int K, int hv)
{
    for (int64_t t = blockIdx.x; t < T; t += gridDim.x)
        for (int v = threadIdx.x; v < hv; v += blockDim.x) {
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, x[8];
            if (shared) pp_unpack8(shared[t * hv + v], acc);
            for (int j = 0; j < K; j++) {
                float p = probs[t * K + j];
                pp_unpack8(buf[(int64_t)row_of[t * K + j] * hv + v], x);
#pragma unroll
                for (int e = 0; e < 8; e++) acc[e] += p * x[e];
            }
            y[t * hv + v] = pp_pack8(acc);
        }
}

/* The unpermute's backward, a block per token: dbuf[row] = p dy[t] for each of its k rows, and
 * dp[t, j] = <dy[t], buf[row]> (block reduction). k <= 32, blockDim 128. */
__global__ void pp_moe_unpermute_bwd_kernel(const uint4 *dy, const uint4 *buf, const int32_t *row_of,
                                            const float *probs, uint4 *dbuf, float *dp, int64_t T, int K, int hv)
{
    __shared__ float red[4][32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int64_t t = blockIdx.x; t < T; t += gridDim.x) {
        float dot[32];
        for (int j = 0; j < K; j++) dot[j] = 0;
        for (int v = threadIdx.x; v < hv; v += blockDim.x) {
            float g[8], x[8], o[8];
            pp_unpack8(dy[t * hv + v], g);
            for (int j = 0; j < K; j++) {
                const int64_t r = row_of[t * K + j];
                const float p = probs[t * K + j];
                pp_unpack8(buf[r * hv + v], x);
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    dot[j] += g[e] * x[e];
                    o[e] = p * g[e];
                }
                dbuf[r * hv + v] = pp_pack8(o);
            }
        }
        for (int j = 0; j < K; j++) {
            float d = pp_warp_sum(dot[j]);
            if (lane == 0) red[warp][j] = d;
        }
        __syncthreads();
        if (threadIdx.x < K) {
            float d = 0;
            for (int w = 0; w < (int)(blockDim.x / 32); w++) d += red[w][threadIdx.x];
            dp[t * K + threadIdx.x] = d;
        }
        __syncthreads();
    }
}

/* The permutation's backward: dx[t] = sum_j dbuf[row_of[t*K + j]] (a gather-sum per token). */
__global__ void pp_moe_permute_bwd_kernel(uint4 *dx, const uint4 *dbuf, const int32_t *row_of, int64_t T, int K,
                                          int hv)
{
    for (int64_t t = blockIdx.x; t < T; t += gridDim.x)
        for (int v = threadIdx.x; v < hv; v += blockDim.x) {
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, x[8];
            for (int j = 0; j < K; j++) {
                pp_unpack8(dbuf[(int64_t)row_of[t * K + j] * hv + v], x);
#pragma unroll
                for (int e = 0; e < 8; e++) acc[e] += x[e];
            }
            dx[t * hv + v] = pp_pack8(acc);
        }
}
