/* Causal self-attention, forward and backward, bf16, for the attention and layer probes.
 *   flash:   cuDNN's fused flash attention (the SDPA graph of the cuDNN frontend, built through the
 *            backend C API, so no C++ frontend is needed), what PyTorch's cuDNN SDPA runs on Hopper;
 *   unfused: cuBLASLt batched GEMMs (Q K^T, P V and their gradients) and softmax kernels, the path
 *            of --attention unfused (Megatron without flash attention).
 * Layout: tokens in rows (b*s rows, batch-major), head j of q, k, v at columns j*d of a row; the
 * row strides are given, so q, k, v can sit in one packed QKV activation [b*s, 3*heads*d]. */
#ifndef PP_ATTN_CUH
#define PP_ATTN_CUH

#include "harness.cuh"

typedef struct {
    int64_t b, s, heads, d;
    int64_t ld_qkv;   /* row stride (elements) of q and dq; of k, v, dk, dv too where ld_k, ld_v are 0 */
    int64_t ld_o;     /* row stride of o and do */
    /* Multi-head latent attention (DeepSeek-V2, Liu et al. 2024, sec. 2.1): the value (and output)
     * head size differs from the query/key one (d_qk 192, d_v 128). 0: d. Head j of v, o at j*dv. */
    int64_t dv;
    int64_t ld_k, ld_v; /* row strides of k and dk, of v and dv when they are apart from q; 0: ld_qkv */
} pp_attn_shape;

typedef struct {
    const void *q, *k, *v; /* bf16 */
    void *o;               /* bf16 */
    float *stats;          /* [b, heads, s] log-sum-exp (flash only) */
    const void *dout;      /* bf16 */
    void *dq, *dk, *dv;    /* bf16, ld_qkv */
} pp_attn_io;

typedef struct pp_attn pp_attn;

/* Build the plans for these buffers. 0 ok, 1 not available here (why says what), -1 error. */
int pp_attn_create(pp_probe_ctx *c, const pp_attn_shape *sh, bool flash, const pp_attn_io *io, pp_attn **out,
                   char *why, size_t why_n);
int pp_attn_fwd(pp_probe_ctx *c, pp_attn *a);
int pp_attn_bwd(pp_probe_ctx *c, pp_attn *a); /* needs the forward's o (and stats) */
void pp_attn_free(pp_attn *a);               /* accepts NULL */
const char *pp_attn_backend(const pp_attn *a);
/* 2 * b * s^2 * heads * (d + dv) (4 b s^2 heads d when dv = d): the attention FLOPs of the forward
 * as Korthikanti et al. 2022 count them (no causal halving, the convention of the anchors'
 * 24bsh^2 + 4bs^2h); Q K^T takes d, P V takes dv. */
double pp_attn_fwd_flops(const pp_attn_shape *sh);

#endif
