/* CPU references in double precision. The layer and attention probes run their GPU code at a small
 * size on random inputs and compare it with these (relative L2 error); the unit tests check these
 * against finite differences, so that a wrong reference cannot bless a wrong kernel. */
#ifndef PP_REF_H
#define PP_REF_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One transformer block of a TP shard, GPT order (Megatron's ParallelTransformerLayer):
 *   a  = LN1(x);  qkv = a Wqkv^T + bqkv;  o = causal softmax(q k^T / sqrt(d)) v
 *   x1 = x + o Wproj^T + bproj;  c = LN2(x1);  u = c W1^T + b1
 *   y  = x1 + act(u) W2^T + b2,   act = GELU (tanh form, as cuBLASLt's epilogue and GPT-2) or
 *                                 SwiGLU (u = [gate | up], act = silu(gate) * up)
 * Shapes (row-major): x, y [b*s, h]; Wqkv [(heads + 2*kv)*d, h] (q | k | v: head j of q at
 * columns j*d, kv group i of k at heads*d + i*d, of v at (heads + kv)*d + i*d); Wproj [h, heads*d];
 * W1 [f or 2f, h]; W2 [h, f]. LayerNorm eps 1e-5.
 * Grouped-query attention (kv = kv_heads < heads, Ainslie et al. 2023), as Megatron-LM's local
 * DotProductAttention runs it: k and v are expanded to the full heads before the attention (head j
 * reads kv group j / (heads/kv), key.repeat_interleave(heads/kv, dim=2)); the gradient of a group's
 * k and v is the sum over its heads (the autograd of repeat_interleave). */
typedef struct {
    int64_t b, s, h, heads, head_dim, ffn;
    bool swiglu;
    int64_t kv_heads;         /* key/value heads (GQA groups), dividing heads; 0: heads (multi-head) */
} pp_ref_shape;

typedef struct {
    const float *ln1_g, *ln1_b, *wqkv, *bqkv, *wproj, *bproj, *ln2_g, *ln2_b, *w1, *b1, *w2, *b2;
} pp_ref_weights;

/* Gradients of sum(y * dy); any pointer may be NULL. Sizes as the weights. */
typedef struct {
    double *dx, *dln1_g, *dln1_b, *dwqkv, *dbqkv, *dwproj, *dbproj, *dln2_g, *dln2_b, *dw1, *db1, *dw2, *db2;
} pp_ref_grads;

#define PP_LN_EPS 1e-5

/* y [b*s*h]; when dy != NULL also the gradients. Returns 0, or -1 when out of memory or when
 * kv_heads is negative, above heads or does not divide heads. */
int pp_ref_layer(const pp_ref_shape *sh, const pp_ref_weights *w, const float *x, const float *dy, double *y,
                 pp_ref_grads *g);

/* Causal attention alone, BSHD layout with row strides: q, k, v, o rows of `ld` elements per token,
 * head j at columns j*d. o [b*s, heads*d]. With dout != NULL: dq, dk, dv (same layout as o). */
int pp_ref_attention(int64_t b, int64_t s, int64_t heads, int64_t d, const double *q, const double *k,
                     const double *v, int64_t ld, double *o, const double *dout, double *dq, double *dk,
                     double *dv);

double pp_ref_gelu(double x);
double pp_ref_gelu_grad(double x);

#ifdef __cplusplus
}
#endif
#endif
