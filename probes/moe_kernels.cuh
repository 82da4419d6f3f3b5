/* The kernels of the moe probe (moe.cu): the router's scores, top-k and probabilities with their
 * backward, and the permutation of token copies into expert order and back (gather, unpermute
 * with the router's weights, and their backward). Defined in moe_kernels.cu; rows move as 16-byte
 * vectors of 8 bf16 (hv per row). */
#ifndef PP_MOE_KERNELS_CUH
#define PP_MOE_KERNELS_CUH

#include "harness.cuh"

typedef __nv_bfloat16 bf16;

/* One warp per token: scores (fp32) over the E logits, the top-k selection over them (the router's
 * work; written to topk, which the fixed routing does not read), and the probabilities at the
 * assigned experts, normalised over the k (Megatron: softmax, or sigmoid with k > 1). k <= 32. */
__global__ void pp_moe_router_fwd_kernel(const bf16 *logits, const int32_t *experts, int64_t T, int E, int K,
                                         int sigmoid, float *scores, float *probs, int32_t *topk);
/* One warp per token: the router's backward from the probabilities' gradients dp [T, K] to the
 * logits' (bf16, the router GEMMs' input): through the normalisation, then softmax or sigmoid. */
__global__ void pp_moe_router_bwd_kernel(const float *scores, const float *probs, const float *dp,
                                         const int32_t *experts, int64_t T, int E, int K, int sigmoid, bf16 *dlogits);
/* dst[r] = src[map[r]] for every row r with map[r] >= 0 (16-byte vectors; hv per row). */
__global__ void pp_moe_gather_kernel(uint4 *dst, const uint4 *src, const int32_t *map, int64_t rows, int hv);
/* y[t] = shared[t] + sum_j p[t, j] * buf[row_of[t*K + j]] (fp32 sums, one rounding). */
__global__ void pp_moe_unpermute_kernel(uint4 *y, const uint4 *buf, const int32_t *row_of, const float *probs,
                                        const uint4 *shared, int64_t T, int K, int hv);
/* The unpermute's backward, a block per token: dbuf[row] = p dy[t] for each of its k rows, and
 * dp[t, j] = <dy[t], buf[row]> (block reduction). k <= 32, blockDim 128. */
__global__ void pp_moe_unpermute_bwd_kernel(const uint4 *dy, const uint4 *buf, const int32_t *row_of,
                                            const float *probs, uint4 *dbuf, float *dp, int64_t T, int K, int hv);
/* The permutation's backward: dx[t] = sum_j dbuf[row_of[t*K + j]] (a gather-sum per token). */
__global__ void pp_moe_permute_bwd_kernel(uint4 *dx, const uint4 *dbuf, const int32_t *row_of, int64_t T, int K,
                                          int hv);

#endif
