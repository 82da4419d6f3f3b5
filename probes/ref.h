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

/* The same with value heads of another size (multi-head latent attention: d_qk 192, d_v 128) and
 * a row stride per tensor: q, k rows of ldq, ldk (head j at j*d), v rows of ldv (head j at j*dv);
 * o, dout, dv [b*s, heads*dv]; dq, dk [b*s, heads*d]. Scale 1/sqrt(d). pp_ref_attention is this
 * with dv = d and one stride. */
int pp_ref_attention_ex(int64_t b, int64_t s, int64_t heads, int64_t d, int64_t dv, const double *q, int64_t ldq,
                        const double *k, int64_t ldk, const double *v, int64_t ldv, double *o, const double *dout,
                        double *dq, double *dk, double *dvo);

/* y[m, n] = scale * x[m, k] w[n, k]^T (nn.Linear's layout; the fp8 GEMM check: x and w hold the
 * e4m3 values, scale the product of the per-tensor scales). */
void pp_ref_linear(const double *x, const double *w, int64_t m, int64_t n, int64_t k, double scale, double *y);

/* One Mixture-of-Experts MLP layer as Megatron-Core runs it (moe.cu; megatron/core/transformer/moe:
 * router.py TopKRouter, moe_utils.py topk_softmax_with_capacity, experts.py SequentialMLP):
 *   l = x Wr^T [T, E];  s = softmax(l) (over all E) or sigmoid(l)
 *   token t goes to experts a[t*K + j], j < K (given: the probe's routing), with weights
 *   p_j = s[a_j] / sum_i s[a_i] (Megatron normalises the top-k probabilities; sigmoid with K = 1: s)
 *   y_t = sum_j p_j * MLP_{a_j mod L}(x_t) + shared(x_t),  MLP(x) = W2 (silu(W1g x) * W1u x),
 *   W1 = [W1g; W1u] [2F, h], W2 [h, F]; shared the same with S (none when S == 0).
 * L local weight sets: L = E, or E/ep when the probe simulates expert parallelism (global expert g
 * then runs on local weights g mod L: what the rank computes for the tokens it is sent).
 * Weights: wr [E, h], w1 [L, 2F, h], w2 [L, h, F], ws1 [2S, h], ws2 [h, S]. Gradients of
 * sum(y * dy); any may be NULL. 0, or -1 when out of memory or an expert index is out of range. */
typedef struct {
    int64_t T, h, E, K, F, S, L;
    bool sigmoid;
} pp_ref_moe_shape;
typedef struct {
    const float *wr, *w1, *w2, *ws1, *ws2;
} pp_ref_moe_weights;
typedef struct {
    double *dx, *dwr, *dw1, *dw2, *dws1, *dws2;
} pp_ref_moe_grads;
int pp_ref_moe(const pp_ref_moe_shape *sh, const pp_ref_moe_weights *w, const int32_t *experts, const float *x,
               const float *dy, double *y, pp_ref_moe_grads *g);

/* Multi-head latent attention, DeepSeek-V2 (Liu et al. 2024, sec. 2.1.2-2.1.3, eqs. 9-19) as
 * Megatron-Core's MLASelfAttention runs it (megatron/core/transformer/multi_latent_attention.py),
 * one TP shard of `heads` heads, RMSNorm on both latents (eps 1e-6), causal, scale 1/sqrt(dn + dr):
 *   q  = RMSNorm(x Wdq^T) Wuq^T            [T, heads*(dn + dr)]   (qr == 0: q = x Wuq^T, Wuq [.., h])
 *   ckv = x Wdkv^T                         [T, kvr + dr]; c = RMSNorm(ckv[:, :kvr]); kr = RoPE(ckv[:, kvr:])
 *   kv = c Wukv^T                          [T, heads*(dn + dv)], head j = [k_nope | v]
 *   Q_j = [q_j,nope | RoPE(q_j,rope)], K_j = [k_j,nope | kr] (kr shared by the heads), V_j = v_j
 *   y  = attention(Q, K, V) Wo^T           Wo [h, heads*dv]
 * RoPE on dr dims, rotate-half pairs (i, i + dr/2), angle pos * 10000^(-2i/dr), pos = t mod s
 * (Megatron's apply_rotary_pos_emb, not interleaved). Gradients of sum(y * dy), any may be NULL. */
#define PP_RMS_EPS 1e-6
typedef struct {
    int64_t b, s, h, heads, qr, kvr, dn, dr, dv;
} pp_ref_mla_shape;
typedef struct {
    const float *wdq, *gq, *wuq, *wdkv, *gkv, *wukv, *wo;
} pp_ref_mla_weights;
typedef struct {
    double *dx, *dwdq, *dgq, *dwuq, *dwdkv, *dgkv, *dwukv, *dwo;
} pp_ref_mla_grads;
int pp_ref_mla(const pp_ref_mla_shape *sh, const pp_ref_mla_weights *w, const float *x, const float *dy, double *y,
               pp_ref_mla_grads *g);

double pp_ref_gelu(double x);
double pp_ref_gelu_grad(double x);

#ifdef __cplusplus
}
#endif
#endif
