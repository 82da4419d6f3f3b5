/* ref.c: plain CPU references (double) for the layer and attention probes. Written for clarity,
 * not speed: they run at check sizes (a few hundred tokens). */
#include "ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* GELU, tanh form (Hendrycks & Gimpel 2016, eq. in sec. 2; the form GPT-2 and cuBLASLt's GELU
 * epilogue use): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
#define GELU_C 0.7978845608028654 /* sqrt(2/pi) */
double pp_ref_gelu(double x)
{
    double u = GELU_C * (x + 0.044715 * x * x * x);
    return 0.5 * x * (1 + tanh(u));
}

double pp_ref_gelu_grad(double x)
{
    double u = GELU_C * (x + 0.044715 * x * x * x);
    double t = tanh(u);
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GELU_C * (1 + 3 * 0.044715 * x * x);
}

static double silu(double x) { return x / (1 + exp(-x)); }
static double silu_grad(double x)
{
    double sg = 1 / (1 + exp(-x));
    return sg * (1 + x * (1 - sg));
}

/* y[T, n] = x[T, k] W[n, k]^T + bias[n] (bias may be NULL) */
static void linear(const double *x, const float *w, const float *bias, int64_t T, int64_t n, int64_t k, double *y)
{
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < n; j++) {
            double acc = bias ? bias[j] : 0;
            const double *xr = x + t * k;
            const float *wr = w + j * k;
            for (int64_t i = 0; i < k; i++) acc += xr[i] * wr[i];
            y[t * n + j] = acc;
        }
}

/* Backward of linear: dx[T,k] = dy W (added to dx when accumulate), dW[n,k] = dy^T x, db = sum dy. */
static void linear_bwd(const double *x, const float *w, const double *dy, int64_t T, int64_t n, int64_t k,
                       double *dx, double *dw, double *db)
{
    if (dx) {
        for (int64_t t = 0; t < T; t++)
            for (int64_t i = 0; i < k; i++) {
                double acc = 0;
                for (int64_t j = 0; j < n; j++) acc += dy[t * n + j] * w[j * k + i];
                dx[t * k + i] = acc;
            }
    }
    if (dw) {
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < k; i++) {
                double acc = 0;
                for (int64_t t = 0; t < T; t++) acc += dy[t * n + j] * x[t * k + i];
                dw[j * k + i] = acc;
            }
    }
    if (db) {
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t t = 0; t < T; t++) acc += dy[t * n + j];
            db[j] = acc;
        }
    }
}

/* LayerNorm over rows of h (Ba et al. 2016, eq. 4): y = (x - mean) * rstd * g + b. */
static void ln_fwd(const double *x, const float *g, const float *b, int64_t T, int64_t h, double *y,
                   double *mean, double *rstd)
{
    for (int64_t t = 0; t < T; t++) {
        const double *xr = x + t * h;
        double mu = 0, var = 0;
        for (int64_t i = 0; i < h; i++) mu += xr[i];
        mu /= (double)h;
        for (int64_t i = 0; i < h; i++) var += (xr[i] - mu) * (xr[i] - mu);
        var /= (double)h;
        double rs = 1 / sqrt(var + PP_LN_EPS);
        mean[t] = mu;
        rstd[t] = rs;
        for (int64_t i = 0; i < h; i++) y[t * h + i] = (xr[i] - mu) * rs * g[i] + b[i];
    }
}

/* dx = rstd * (dxh - mean(dxh) - xh * mean(dxh * xh)), dxh = dy * g; dg = sum dy*xh; db = sum dy.
 * dx is added to (residual gradient already there). */
static void ln_bwd(const double *x, const float *g, const double *mean, const double *rstd, const double *dy,
                   int64_t T, int64_t h, double *dx, double *dg, double *db)
{
    if (dg) memset(dg, 0, (size_t)h * sizeof *dg);
    if (db) memset(db, 0, (size_t)h * sizeof *db);
    for (int64_t t = 0; t < T; t++) {
        double m1 = 0, m2 = 0;
        for (int64_t i = 0; i < h; i++) {
            double xh = (x[t * h + i] - mean[t]) * rstd[t];
            double dxh = dy[t * h + i] * g[i];
            m1 += dxh;
            m2 += dxh * xh;
            if (dg) dg[i] += dy[t * h + i] * xh;
            if (db) db[i] += dy[t * h + i];
        }
        m1 /= (double)h;
        m2 /= (double)h;
        for (int64_t i = 0; i < h; i++) {
            double xh = (x[t * h + i] - mean[t]) * rstd[t];
            double dxh = dy[t * h + i] * g[i];
            dx[t * h + i] += rstd[t] * (dxh - m1 - xh * m2);
        }
    }
}

int pp_ref_attention_ex(int64_t b, int64_t s, int64_t heads, int64_t d, int64_t dv, const double *q, int64_t ldq,
                        const double *k, int64_t ldk, const double *v, int64_t ldv, double *o, const double *dout,
                        double *dq, double *dk, double *dvo)
{
    const int64_t hq = heads * d, hv = heads * dv;
    const double scale = 1 / sqrt((double)d);
    double *p = malloc((size_t)(s * s) * sizeof *p);
    double *dp = malloc((size_t)(s * s) * sizeof *dp);
    int rc = -1;
    if (!p || !dp) goto done;
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t hj = 0; hj < heads; hj++) {
            /* row i of q for this (batch, head): q + (bi*s + i)*ldq + hj*d */
#define Q(i, c) q[((bi) * s + (i)) * ldq + hj * d + (c)]
#define K(i, c) k[((bi) * s + (i)) * ldk + hj * d + (c)]
#define V(i, c) v[((bi) * s + (i)) * ldv + hj * dv + (c)]
#define ROWQ(arr, i, c) arr[((bi) * s + (i)) * hq + hj * d + (c)]
#define ROWV(arr, i, c) arr[((bi) * s + (i)) * hv + hj * dv + (c)]
            for (int64_t i = 0; i < s; i++) {
                double mx = -INFINITY;
                for (int64_t j = 0; j <= i; j++) {
                    double acc = 0;
                    for (int64_t c = 0; c < d; c++) acc += Q(i, c) * K(j, c);
                    p[i * s + j] = acc * scale;
                    if (p[i * s + j] > mx) mx = p[i * s + j];
                }
                double sum = 0;
                for (int64_t j = 0; j <= i; j++) {
                    p[i * s + j] = exp(p[i * s + j] - mx);
                    sum += p[i * s + j];
                }
                for (int64_t j = 0; j <= i; j++) p[i * s + j] /= sum;
                for (int64_t j = i + 1; j < s; j++) p[i * s + j] = 0;
                for (int64_t c = 0; c < dv; c++) {
                    double acc = 0;
                    for (int64_t j = 0; j <= i; j++) acc += p[i * s + j] * V(j, c);
                    ROWV(o, i, c) = acc;
                }
            }
            if (!dout) continue;
            /* dV = P^T dO; dP = dO V^T; dS = P (dP - rowsum(dP P)); dQ = scale dS K; dK = scale dS^T Q */
            for (int64_t j = 0; j < s; j++)
                for (int64_t c = 0; c < dv; c++) {
                    double acc = 0;
                    for (int64_t i = j; i < s; i++) acc += p[i * s + j] * ROWV(dout, i, c);
                    ROWV(dvo, j, c) = acc;
                }
            for (int64_t i = 0; i < s; i++) {
                double rs = 0;
                for (int64_t j = 0; j <= i; j++) {
                    double acc = 0;
                    for (int64_t c = 0; c < dv; c++) acc += ROWV(dout, i, c) * V(j, c);
                    dp[i * s + j] = acc;
                    rs += acc * p[i * s + j];
                }
                for (int64_t j = 0; j <= i; j++) dp[i * s + j] = p[i * s + j] * (dp[i * s + j] - rs) * scale;
            }
            for (int64_t i = 0; i < s; i++)
                for (int64_t c = 0; c < d; c++) {
                    double acc = 0;
                    for (int64_t j = 0; j <= i; j++) acc += dp[i * s + j] * K(j, c);
                    ROWQ(dq, i, c) = acc;
                }
            for (int64_t j = 0; j < s; j++)
                for (int64_t c = 0; c < d; c++) {
                    double acc = 0;
                    for (int64_t i = j; i < s; i++) acc += dp[i * s + j] * Q(i, c);
                    ROWQ(dk, j, c) = acc;
                }
#undef Q
#undef K
#undef V
#undef ROWQ
#undef ROWV
        }
    rc = 0;
done:
    free(p);
    free(dp);
    return rc;
}

int pp_ref_attention(int64_t b, int64_t s, int64_t heads, int64_t d, const double *q, const double *k,
                     const double *v, int64_t ld, double *o, const double *dout, double *dq, double *dk,
                     double *dv)
{
    return pp_ref_attention_ex(b, s, heads, d, d, q, ld, k, ld, v, ld, o, dout, dq, dk, dv);
}

void pp_ref_linear(const double *x, const double *w, int64_t m, int64_t n, int64_t k, double scale, double *y)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t q = 0; q < k; q++) acc += x[i * k + q] * w[j * k + q];
            y[i * n + j] = scale * acc;
        }
}

int pp_ref_layer(const pp_ref_shape *sh, const pp_ref_weights *w, const float *x, const float *dy, double *y,
                 pp_ref_grads *g)
{
    const int64_t T = sh->b * sh->s, h = sh->h, d = sh->head_dim, hq = sh->heads * d, f = sh->ffn;
    const int64_t kv = sh->kv_heads ? sh->kv_heads : sh->heads;
    const int64_t n1 = sh->swiglu ? 2 * f : f;
    int rc = -1;
    double *xd = NULL, *a = NULL, *m1 = NULL, *r1 = NULL, *qkv = NULL, *qkvm = NULL, *o = NULL, *x1 = NULL,
           *c = NULL, *m2 = NULL, *r2 = NULL, *u = NULL, *act = NULL, *dyd = NULL, *dact = NULL, *du = NULL,
           *dc = NULL, *dx1 = NULL, *d_o = NULL, *dqkv = NULL, *da = NULL;
    if (kv < 1 || kv > sh->heads || sh->heads % kv) return -1;
    /* hkv: width of k (and of v) in the QKV GEMM's output, nqkv: that output's width (3 hq for MHA);
     * rep: heads per kv group */
    const int64_t hkv = kv * d, nqkv = hq + 2 * hkv, rep = sh->heads / kv;
#define ALLOC(p, n) if (!((p) = calloc((size_t)(n), sizeof *(p)))) goto done
    ALLOC(xd, T * h); ALLOC(a, T * h); ALLOC(m1, T); ALLOC(r1, T); ALLOC(qkv, T * nqkv); ALLOC(qkvm, T * 3 * hq);
    ALLOC(o, T * hq); ALLOC(x1, T * h); ALLOC(c, T * h); ALLOC(m2, T); ALLOC(r2, T); ALLOC(u, T * n1);
    ALLOC(act, T * f);
    for (int64_t i = 0; i < T * h; i++) xd[i] = x[i];

    ln_fwd(xd, w->ln1_g, w->ln1_b, T, h, a, m1, r1);
    linear(a, w->wqkv, w->bqkv, T, nqkv, h, qkv);
    /* qkvm [T, 3 hq]: the multi-head layout the attention reads; q copied, head j of k and v from kv
     * group j / rep (an exact copy: with kv == heads, qkvm == qkv) */
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < sh->heads; j++)
            for (int64_t e = 0; e < d; e++) {
                const double *src = qkv + t * nqkv;
                double *dst = qkvm + t * 3 * hq;
                dst[j * d + e] = src[j * d + e];
                dst[hq + j * d + e] = src[hq + (j / rep) * d + e];
                dst[2 * hq + j * d + e] = src[hq + hkv + (j / rep) * d + e];
            }
    if (pp_ref_attention(sh->b, sh->s, sh->heads, d, qkvm, qkvm + hq, qkvm + 2 * hq, 3 * hq, o, NULL, NULL,
                         NULL, NULL))
        goto done;
    linear(o, w->wproj, w->bproj, T, h, hq, x1);
    for (int64_t i = 0; i < T * h; i++) x1[i] += xd[i];
    ln_fwd(x1, w->ln2_g, w->ln2_b, T, h, c, m2, r2);
    linear(c, w->w1, w->b1, T, n1, h, u);
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < f; j++)
            act[t * f + j] = sh->swiglu ? silu(u[t * n1 + j]) * u[t * n1 + f + j] : pp_ref_gelu(u[t * n1 + j]);
    linear(act, w->w2, w->b2, T, h, f, y);
    for (int64_t i = 0; i < T * h; i++) y[i] += x1[i];
    if (!dy) {
        rc = 0;
        goto done;
    }

    ALLOC(dyd, T * h); ALLOC(dact, T * f); ALLOC(du, T * n1); ALLOC(dc, T * h); ALLOC(dx1, T * h);
    ALLOC(d_o, T * hq); ALLOC(dqkv, T * nqkv); ALLOC(da, T * h);
    for (int64_t i = 0; i < T * h; i++) dyd[i] = dy[i];
    /* MLP */
    linear_bwd(act, w->w2, dyd, T, h, f, dact, g ? g->dw2 : NULL, g ? g->db2 : NULL);
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < f; j++) {
            double dA = dact[t * f + j];
            if (sh->swiglu) {
                double gt = u[t * n1 + j], up = u[t * n1 + f + j];
                du[t * n1 + j] = dA * up * silu_grad(gt);
                du[t * n1 + f + j] = dA * silu(gt);
            } else {
                du[t * n1 + j] = dA * pp_ref_gelu_grad(u[t * n1 + j]);
            }
        }
    linear_bwd(c, w->w1, du, T, n1, h, dc, g ? g->dw1 : NULL, g ? g->db1 : NULL);
    memcpy(dx1, dyd, (size_t)(T * h) * sizeof *dx1); /* residual */
    ln_bwd(x1, w->ln2_g, m2, r2, dc, T, h, dx1, g ? g->dln2_g : NULL, g ? g->dln2_b : NULL);
    /* attention block */
    linear_bwd(o, w->wproj, dx1, T, h, hq, d_o, g ? g->dwproj : NULL, g ? g->dbproj : NULL);
    {
        /* dq, dk, dv land in dqkv with its row stride: compute with a temporary per part */
        double *tq = NULL, *tk = NULL, *tv = NULL;
        tq = calloc((size_t)(T * hq), sizeof *tq);
        tk = calloc((size_t)(T * hq), sizeof *tk);
        tv = calloc((size_t)(T * hq), sizeof *tv);
        double *tmp_o = calloc((size_t)(T * hq), sizeof *tmp_o);
        int arc = (tq && tk && tv && tmp_o)
                      ? pp_ref_attention(sh->b, sh->s, sh->heads, d, qkvm, qkvm + hq, qkvm + 2 * hq, 3 * hq, tmp_o,
                                         d_o, tq, tk, tv)
                      : -1;
        /* dq as is; dk and dv of kv group i: the sum over its heads i*rep .. i*rep + rep - 1 */
        if (!arc)
            for (int64_t t = 0; t < T; t++) {
                for (int64_t j = 0; j < hq; j++) dqkv[t * nqkv + j] = tq[t * hq + j];
                for (int64_t i = 0; i < kv; i++)
                    for (int64_t e = 0; e < d; e++) {
                        double sk = 0, sv = 0;
                        for (int64_t r = 0; r < rep; r++) {
                            sk += tk[t * hq + (i * rep + r) * d + e];
                            sv += tv[t * hq + (i * rep + r) * d + e];
                        }
                        dqkv[t * nqkv + hq + i * d + e] = sk;
                        dqkv[t * nqkv + hq + hkv + i * d + e] = sv;
                    }
            }
        free(tq);
        free(tk);
        free(tv);
        free(tmp_o);
        if (arc) goto done;
    }
    linear_bwd(a, w->wqkv, dqkv, T, nqkv, h, da, g ? g->dwqkv : NULL, g ? g->dbqkv : NULL);
    if (g && g->dx) {
        memcpy(g->dx, dx1, (size_t)(T * h) * sizeof *g->dx);
        ln_bwd(xd, w->ln1_g, m1, r1, da, T, h, g->dx, g->dln1_g, g->dln1_b);
    } else if (g && (g->dln1_g || g->dln1_b)) {
        double *tmp = calloc((size_t)(T * h), sizeof *tmp);
        if (!tmp) goto done;
        ln_bwd(xd, w->ln1_g, m1, r1, da, T, h, tmp, g->dln1_g, g->dln1_b);
        free(tmp);
    }
    rc = 0;
#undef ALLOC
done:
    free(xd); free(a); free(m1); free(r1); free(qkv); free(qkvm); free(o); free(x1); free(c); free(m2); free(r2);
    free(u); free(act); free(dyd); free(dact); free(du); free(dc); free(dx1); free(d_o); free(dqkv); free(da);
    return rc;
}

/* ================================================================ Mixture of Experts */

/* One SwiGLU MLP on one token: u = W1 x [2F], act = silu(u_gate) * u_up [F], o = W2 act [h]. */
static void mlp_fwd(const float *w1, const float *w2, const double *x, int64_t h, int64_t F, double *u, double *act,
                    double *o)
{
    linear(x, w1, NULL, 1, 2 * F, h, u);
    for (int64_t c = 0; c < F; c++) act[c] = silu(u[c]) * u[F + c];
    linear(act, w2, NULL, 1, h, F, o);
}

/* Its backward for an output gradient go [h]: dW1 += du x^T, dW2 += go act^T (either may be NULL),
 * dx += W1^T du. u and act from mlp_fwd; du, dact scratch [2F], [F]. */
static void mlp_bwd(const float *w1, const float *w2, const double *x, const double *u, const double *act,
                    const double *go, int64_t h, int64_t F, double *dw1, double *dw2, double *dx, double *du,
                    double *dact)
{
    for (int64_t c = 0; c < F; c++) {
        double acc = 0;
        for (int64_t r = 0; r < h; r++) acc += w2[r * F + c] * go[r];
        dact[c] = acc;
    }
    if (dw2)
        for (int64_t r = 0; r < h; r++)
            for (int64_t c = 0; c < F; c++) dw2[r * F + c] += go[r] * act[c];
    for (int64_t c = 0; c < F; c++) {
        du[c] = dact[c] * u[F + c] * silu_grad(u[c]);
        du[F + c] = dact[c] * silu(u[c]);
    }
    if (dw1)
        for (int64_t r = 0; r < 2 * F; r++)
            for (int64_t i = 0; i < h; i++) dw1[r * h + i] += du[r] * x[i];
    for (int64_t i = 0; i < h; i++) {
        double acc = 0;
        for (int64_t r = 0; r < 2 * F; r++) acc += w1[r * h + i] * du[r];
        dx[i] += acc;
    }
}

/* Scores of one token's logits: softmax over all E (fp64, max-subtracted) or sigmoid. */
static void moe_scores(const double *l, int64_t E, bool sigmoid, double *s)
{
    if (sigmoid) {
        for (int64_t e = 0; e < E; e++) s[e] = 1 / (1 + exp(-l[e]));
        return;
    }
    double mx = -INFINITY, sum = 0;
    for (int64_t e = 0; e < E; e++) mx = l[e] > mx ? l[e] : mx;
    for (int64_t e = 0; e < E; e++) sum += (s[e] = exp(l[e] - mx));
    for (int64_t e = 0; e < E; e++) s[e] /= sum;
}

int pp_ref_moe(const pp_ref_moe_shape *sh, const pp_ref_moe_weights *w, const int32_t *experts, const float *x,
               const float *dy, double *y, pp_ref_moe_grads *g)
{
    const int64_t T = sh->T, h = sh->h, E = sh->E, K = sh->K, F = sh->F, S = sh->S, L = sh->L;
    const int64_t FM = F > S ? F : S;
    /* the top-k weights are normalised except for a single sigmoid choice (Megatron: topk > 1) */
    const bool norm = !sh->sigmoid || K > 1;
    int rc = -1;
    double *xt = NULL, *l = NULL, *sc = NULL, *p = NULL, *u = NULL, *act = NULL, *o = NULL, *dyt = NULL, *go = NULL,
           *du = NULL, *dact = NULL, *dp = NULL, *ds = NULL, *dl = NULL, *dxt = NULL;
    if (T < 1 || h < 1 || E < 1 || K < 1 || K > E || F < 1 || S < 0 || L < 1 || E % L) return -1;
    for (int64_t i = 0; i < T * K; i++)
        if (experts[i] < 0 || experts[i] >= E) return -1;
#define ALLOC(ptr, n) if (!((ptr) = calloc((size_t)(n), sizeof *(ptr)))) goto done
    ALLOC(xt, h); ALLOC(l, E); ALLOC(sc, E); ALLOC(p, K); ALLOC(u, 2 * FM); ALLOC(act, FM); ALLOC(o, h);
    ALLOC(dyt, h); ALLOC(go, h); ALLOC(du, 2 * FM); ALLOC(dact, FM); ALLOC(dp, K); ALLOC(ds, E); ALLOC(dl, E);
    ALLOC(dxt, h);
#undef ALLOC
    if (g) {
        if (g->dwr) memset(g->dwr, 0, (size_t)(E * h) * sizeof(double));
        if (g->dw1) memset(g->dw1, 0, (size_t)(L * 2 * F * h) * sizeof(double));
        if (g->dw2) memset(g->dw2, 0, (size_t)(L * h * F) * sizeof(double));
        if (g->dws1 && S) memset(g->dws1, 0, (size_t)(2 * S * h) * sizeof(double));
        if (g->dws2 && S) memset(g->dws2, 0, (size_t)(h * S) * sizeof(double));
    }
    for (int64_t t = 0; t < T; t++) {
        const int32_t *a = experts + t * K;
        double ssel = 0;
        for (int64_t i = 0; i < h; i++) xt[i] = x[t * h + i];
        linear(xt, w->wr, NULL, 1, E, h, l);
        moe_scores(l, E, sh->sigmoid, sc);
        for (int64_t j = 0; j < K; j++) ssel += sc[a[j]];
        for (int64_t j = 0; j < K; j++) p[j] = norm ? sc[a[j]] / ssel : sc[a[j]];
        double *yt = y + t * h;
        for (int64_t i = 0; i < h; i++) yt[i] = 0;
        if (dy) {
            for (int64_t i = 0; i < h; i++) {
                dyt[i] = dy[t * h + i];
                dxt[i] = 0;
            }
        }
        for (int64_t j = 0; j < K; j++) {
            const int64_t e = a[j] % L;
            const float *w1 = w->w1 + e * 2 * F * h, *w2 = w->w2 + e * h * F;
            mlp_fwd(w1, w2, xt, h, F, u, act, o);
            for (int64_t i = 0; i < h; i++) yt[i] += p[j] * o[i];
            if (!dy) continue;
            double dot = 0;
            for (int64_t i = 0; i < h; i++) {
                dot += dyt[i] * o[i];
                go[i] = p[j] * dyt[i];
            }
            dp[j] = dot;
            mlp_bwd(w1, w2, xt, u, act, go, h, F, g && g->dw1 ? g->dw1 + e * 2 * F * h : NULL,
                    g && g->dw2 ? g->dw2 + e * h * F : NULL, dxt, du, dact);
        }
        if (S) {
            mlp_fwd(w->ws1, w->ws2, xt, h, S, u, act, o);
            for (int64_t i = 0; i < h; i++) yt[i] += o[i];
            if (dy)
                mlp_bwd(w->ws1, w->ws2, xt, u, act, dyt, h, S, g ? g->dws1 : NULL, g ? g->dws2 : NULL, dxt, du, dact);
        }
        if (!dy) continue;
        /* router: through the normalisation of the chosen scores, then softmax or sigmoid */
        double pdp = 0, dot = 0;
        for (int64_t j = 0; j < K; j++) pdp += p[j] * dp[j];
        for (int64_t e = 0; e < E; e++) ds[e] = 0;
        for (int64_t j = 0; j < K; j++) ds[a[j]] += norm ? (dp[j] - pdp) / ssel : dp[j];
        for (int64_t e = 0; e < E; e++) dot += ds[e] * sc[e];
        for (int64_t e = 0; e < E; e++)
            dl[e] = sh->sigmoid ? ds[e] * sc[e] * (1 - sc[e]) : sc[e] * (ds[e] - dot);
        for (int64_t e = 0; e < E; e++) {
            for (int64_t i = 0; i < h; i++) {
                if (g && g->dwr) g->dwr[e * h + i] += dl[e] * xt[i];
                dxt[i] += w->wr[e * h + i] * dl[e];
            }
        }
        if (g && g->dx)
            for (int64_t i = 0; i < h; i++) g->dx[t * h + i] = dxt[i];
    }
    rc = 0;
done:
    free(xt); free(l); free(sc); free(p); free(u); free(act); free(o); free(dyt); free(go); free(du); free(dact);
    free(dp); free(ds); free(dl); free(dxt);
    return rc;
}

/* ================================================================ multi-head latent attention */

/* RMSNorm over rows of n (Zhang & Sennrich 2019): y = x * rstd * g, rstd = 1/sqrt(mean(x^2) + eps);
 * x rows at stride ldx. */
static void rms_fwd(const double *x, int64_t ldx, const float *g, int64_t T, int64_t n, double *y, double *rstd)
{
    for (int64_t t = 0; t < T; t++) {
        double ms = 0;
        for (int64_t i = 0; i < n; i++) ms += x[t * ldx + i] * x[t * ldx + i];
        rstd[t] = 1 / sqrt(ms / (double)n + PP_RMS_EPS);
        for (int64_t i = 0; i < n; i++) y[t * n + i] = x[t * ldx + i] * rstd[t] * g[i];
    }
}

/* dx = rstd (dxh - xh mean(dxh xh)), dxh = dy g, xh = x rstd; dg = sum dy xh. dx rows at ldx. */
static void rms_bwd(const double *x, int64_t ldx, const float *g, const double *rstd, const double *dy, int64_t T,
                    int64_t n, double *dx, double *dg)
{
    if (dg) memset(dg, 0, (size_t)n * sizeof *dg);
    for (int64_t t = 0; t < T; t++) {
        double m = 0;
        for (int64_t i = 0; i < n; i++) m += dy[t * n + i] * g[i] * x[t * ldx + i] * rstd[t];
        m /= (double)n;
        for (int64_t i = 0; i < n; i++) {
            double xh = x[t * ldx + i] * rstd[t];
            dx[t * ldx + i] = rstd[t] * (dy[t * n + i] * g[i] - xh * m);
            if (dg) dg[i] += dy[t * n + i] * xh;
        }
    }
}

/* Rotary embedding (Su et al. 2021) of dr values at position pos, rotate-half pairs (i, i + dr/2);
 * dir -1 applies the inverse rotation (the backward of a rotation is its transpose). */
static void rope(double *v, int64_t dr, int64_t pos, int dir)
{
    const int64_t half = dr / 2;
    for (int64_t i = 0; i < half; i++) {
        double th = (double)pos * pow(10000.0, -2.0 * (double)i / (double)dr);
        double cs = cos(th), sn = dir * sin(th), a = v[i], b = v[i + half];
        v[i] = a * cs - b * sn;
        v[i + half] = b * cs + a * sn;
    }
}

int pp_ref_mla(const pp_ref_mla_shape *sh, const pp_ref_mla_weights *w, const float *x, const float *dy, double *y,
               pp_ref_mla_grads *g)
{
    const int64_t T = sh->b * sh->s, h = sh->h, H = sh->heads, qr = sh->qr, kvr = sh->kvr, dn = sh->dn,
                  dr = sh->dr, dv = sh->dv;
    const int64_t dq = dn + dr, nq = H * dq, nkv = H * (dn + dv), ckw = kvr + dr;
    int rc = -1;
    double *xd = NULL, *cq = NULL, *cqn = NULL, *rq = NULL, *q = NULL, *ckv = NULL, *c = NULL, *rkv = NULL,
           *kv = NULL, *Q = NULL, *K = NULL, *V = NULL, *O = NULL, *dyd = NULL, *dO = NULL, *dQ = NULL, *dK = NULL,
           *dV = NULL, *dqv = NULL, *dkv = NULL, *dc = NULL, *dckv = NULL, *dcqn = NULL, *dcq = NULL, *tmp = NULL;
    if (T < 1 || H < 1 || kvr < 1 || dn < 0 || dr < 2 || dr % 2 || dr > 512 || dv < 1 || qr < 0) return -1;
#define ALLOC(ptr, n) if (!((ptr) = calloc((size_t)(n), sizeof *(ptr)))) goto done
    ALLOC(xd, T * h); ALLOC(cq, T * (qr ? qr : 1)); ALLOC(cqn, T * (qr ? qr : 1)); ALLOC(rq, T); ALLOC(q, T * nq);
    ALLOC(ckv, T * ckw); ALLOC(c, T * kvr); ALLOC(rkv, T); ALLOC(kv, T * nkv); ALLOC(Q, T * nq); ALLOC(K, T * nq);
    ALLOC(V, T * H * dv); ALLOC(O, T * H * dv);
    for (int64_t i = 0; i < T * h; i++) xd[i] = x[i];
    /* query: down, RMSNorm, up (or one projection) */
    if (qr) {
        linear(xd, w->wdq, NULL, T, qr, h, cq);
        rms_fwd(cq, qr, w->gq, T, qr, cqn, rq);
        linear(cqn, w->wuq, NULL, T, nq, qr, q);
    } else {
        linear(xd, w->wuq, NULL, T, nq, h, q);
    }
    /* key/value: down to the latent and the shared rope key, RMSNorm on the latent, up */
    linear(xd, w->wdkv, NULL, T, ckw, h, ckv);
    rms_fwd(ckv, ckw, w->gkv, T, kvr, c, rkv);
    linear(c, w->wukv, NULL, T, nkv, kvr, kv);
    for (int64_t t = 0; t < T; t++) {
        double kr[512];
        for (int64_t i = 0; i < dr; i++) kr[i] = ckv[t * ckw + kvr + i];
        rope(kr, dr, t % sh->s, 1);
        for (int64_t j = 0; j < H; j++) {
            double *qt = Q + t * nq + j * dq, *kt = K + t * nq + j * dq;
            const double *kvt = kv + t * nkv + j * (dn + dv);
            for (int64_t i = 0; i < dq; i++) qt[i] = q[t * nq + j * dq + i];
            rope(qt + dn, dr, t % sh->s, 1);
            for (int64_t i = 0; i < dn; i++) kt[i] = kvt[i];
            for (int64_t i = 0; i < dr; i++) kt[dn + i] = kr[i];
            for (int64_t i = 0; i < dv; i++) V[t * H * dv + j * dv + i] = kvt[dn + i];
        }
    }
    if (pp_ref_attention_ex(sh->b, sh->s, H, dq, dv, Q, nq, K, nq, V, H * dv, O, NULL, NULL, NULL, NULL)) goto done;
    linear(O, w->wo, NULL, T, h, H * dv, y);
    if (!dy) {
        rc = 0;
        goto done;
    }
#define ALLOC(ptr, n) if (!((ptr) = calloc((size_t)(n), sizeof *(ptr)))) goto done
    ALLOC(dyd, T * h); ALLOC(dO, T * H * dv); ALLOC(dQ, T * nq); ALLOC(dK, T * nq); ALLOC(dV, T * H * dv);
    ALLOC(dqv, T * nq); ALLOC(dkv, T * nkv); ALLOC(dc, T * kvr); ALLOC(dckv, T * ckw); ALLOC(tmp, T * h);
    ALLOC(dcqn, T * (qr ? qr : 1)); ALLOC(dcq, T * (qr ? qr : 1));
#undef ALLOC
    for (int64_t i = 0; i < T * h; i++) dyd[i] = dy[i];
    linear_bwd(O, w->wo, dyd, T, h, H * dv, dO, g ? g->dwo : NULL, NULL);
    if (pp_ref_attention_ex(sh->b, sh->s, H, dq, dv, Q, nq, K, nq, V, H * dv, O, dO, dQ, dK, dV)) goto done;
    /* undo the assembly: q's rope part rotated back; k's nope and v into kv's layout; the rope key's
     * gradient summed over the heads that share it */
    for (int64_t t = 0; t < T; t++) {
        double *dkr = dckv + t * ckw + kvr;
        for (int64_t j = 0; j < H; j++) {
            double *dqt = dqv + t * nq + j * dq, kr[512];
            for (int64_t i = 0; i < dq; i++) dqt[i] = dQ[t * nq + j * dq + i];
            rope(dqt + dn, dr, t % sh->s, -1);
            for (int64_t i = 0; i < dn; i++) dkv[t * nkv + j * (dn + dv) + i] = dK[t * nq + j * dq + i];
            for (int64_t i = 0; i < dv; i++) dkv[t * nkv + j * (dn + dv) + dn + i] = dV[t * H * dv + j * dv + i];
            for (int64_t i = 0; i < dr; i++) kr[i] = dK[t * nq + j * dq + dn + i];
            rope(kr, dr, t % sh->s, -1);
            for (int64_t i = 0; i < dr; i++) dkr[i] += kr[i];
        }
    }
    linear_bwd(c, w->wukv, dkv, T, nkv, kvr, dc, g ? g->dwukv : NULL, NULL);
    rms_bwd(ckv, ckw, w->gkv, rkv, dc, T, kvr, dckv, g ? g->dgkv : NULL);
    linear_bwd(xd, w->wdkv, dckv, T, ckw, h, g ? g->dx : NULL, g ? g->dwdkv : NULL, NULL);
    if (qr) {
        linear_bwd(cqn, w->wuq, dqv, T, nq, qr, dcqn, g ? g->dwuq : NULL, NULL);
        rms_bwd(cq, qr, w->gq, rq, dcqn, T, qr, dcq, g ? g->dgq : NULL);
        linear_bwd(xd, w->wdq, dcq, T, qr, h, tmp, g ? g->dwdq : NULL, NULL);
    } else {
        linear_bwd(xd, w->wuq, dqv, T, nq, h, tmp, g ? g->dwuq : NULL, NULL);
    }
    if (g && g->dx)
        for (int64_t i = 0; i < T * h; i++) g->dx[i] += tmp[i];
    rc = 0;
done:
    free(xd); free(cq); free(cqn); free(rq); free(q); free(ckv); free(c); free(rkv); free(kv); free(Q); free(K);
    free(V); free(O); free(dyd); free(dO); free(dQ); free(dK); free(dV); free(dqv); free(dkv); free(dc); free(dckv);
    free(dcqn); free(dcq); free(tmp);
    return rc;
}
