/* The kernels of the layer probe (layer.cu) that cuBLASLt and cuDNN do not provide: LayerNorm
 * forward and backward, the bias/GELU epilogues cuBLASLt lacks here, and the grouped-query
 * attention copies of Megatron-LM's local implementation. Defined in layer_kernels.cu; the layer
 * launches them on its stream. All tensors are row-major bf16. */
#ifndef PP_LAYER_KERNELS_CUH
#define PP_LAYER_KERNELS_CUH

#include "harness.cuh"

typedef __nv_bfloat16 bf16;

#define LN_MAXV 4 /* 16-byte vectors (8 bf16) per thread: rows up to 32 * 1024 wide */

/* LayerNorm forward, one block per row of h: y = (x - mean) rstd g + b, mean and rstd kept for the
 * backward. */
__global__ void pp_ln_fwd_kernel(const bf16 *x, const bf16 *g, const bf16 *b, bf16 *y, float *mean, float *rstd,
                                 int64_t h);
/* LayerNorm backward over T rows with tpr threads per row: dx (plus the residual's gradient dres)
 * and, per block, partial dgamma/dbeta rows in part [gridDim, 2h] for pp_ln_sum_kernel. */
__global__ void pp_ln_bwd_kernel(const bf16 *dy, const bf16 *x, const float *mean, const float *rstd, const bf16 *g,
                                 const bf16 *dres, bf16 *dx, float *part, int64_t T, int64_t h, int tpr);
/* dgamma, dbeta: the sums of the nblk partial rows; blocks of (32, 8) threads over 32 columns. */
__global__ void pp_ln_sum_kernel(const float *part, int nblk, int64_t h, float *dgamma, float *dbeta);
/* u += bias over [rows, cols]; with gelu, a = GELU(u) as well. */
__global__ void pp_bias_act_kernel(bf16 *u, int64_t ldu, const bf16 *bias, bf16 *a, int64_t lda, int64_t rows,
                                   int64_t cols, int gelu);
/* d *= GELU'(u) over n elements. */
__global__ void pp_dgelu_kernel(bf16 *d, const bf16 *u, int64_t n);
/* out[j] = the sum over rows of src[r, j] (a bias gradient). */
__global__ void pp_colsum_kernel(const bf16 *src, int64_t ld, int64_t rows, int64_t cols, bf16 *out);
/* Grouped-query attention: k and v of the packed QKV output copied to every head of their group
 * (expand), and the backward (reduce) summing the heads' gradients into their group; hqv, hkvv, dv
 * in 16-byte vectors. */
__global__ void pp_gqa_expand_kernel(const bf16 *__restrict__ g, bf16 *__restrict__ m, int64_t T, int hqv, int hkvv,
                                     int dv, int rep);
__global__ void pp_gqa_reduce_kernel(const bf16 *__restrict__ dm, bf16 *__restrict__ dg, int64_t T, int hqv, int hkvv,
                                     int dv, int rep);

#endif
