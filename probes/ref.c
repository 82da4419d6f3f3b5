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

int pp_ref_attention(int64_t b, int64_t s, int64_t heads, int64_t d, const double *q, const double *k,
                     const double *v, int64_t ld, double *o, const double *dout, double *dq, double *dk,
                     double *dv)
{
    const int64_t hq = heads * d;
    const double scale = 1 / sqrt((double)d);
    double *p = malloc((size_t)(s * s) * sizeof *p);
    double *dp = malloc((size_t)(s * s) * sizeof *dp);
    int rc = -1;
    if (!p || !dp) goto done;
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t hj = 0; hj < heads; hj++) {
            /* row i of q for this (batch, head): q + (bi*s + i)*ld + hj*d */
#define Q(i, c) q[((bi) * s + (i)) * ld + hj * d + (c)]
#define K(i, c) k[((bi) * s + (i)) * ld + hj * d + (c)]
#define V(i, c) v[((bi) * s + (i)) * ld + hj * d + (c)]
#define ROW(arr, i, c) arr[((bi) * s + (i)) * hq + hj * d + (c)]
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
                for (int64_t c = 0; c < d; c++) {
                    double acc = 0;
                    for (int64_t j = 0; j <= i; j++) acc += p[i * s + j] * V(j, c);
                    ROW(o, i, c) = acc;
                }
            }
            if (!dout) continue;
            /* dV = P^T dO; dP = dO V^T; dS = P (dP - rowsum(dP P)); dQ = scale dS K; dK = scale dS^T Q */
            for (int64_t j = 0; j < s; j++)
                for (int64_t c = 0; c < d; c++) {
                    double acc = 0;
                    for (int64_t i = j; i < s; i++) acc += p[i * s + j] * ROW(dout, i, c);
                    ROW(dv, j, c) = acc;
                }
            for (int64_t i = 0; i < s; i++) {
                double rs = 0;
                for (int64_t j = 0; j <= i; j++) {
                    double acc = 0;
                    for (int64_t c = 0; c < d; c++) acc += ROW(dout, i, c) * V(j, c);
                    dp[i * s + j] = acc;
                    rs += acc * p[i * s + j];
                }
                for (int64_t j = 0; j <= i; j++) dp[i * s + j] = p[i * s + j] * (dp[i * s + j] - rs) * scale;
            }
            for (int64_t i = 0; i < s; i++)
                for (int64_t c = 0; c < d; c++) {
                    double acc = 0;
                    for (int64_t j = 0; j <= i; j++) acc += dp[i * s + j] * K(j, c);
                    ROW(dq, i, c) = acc;
                }
            for (int64_t j = 0; j < s; j++)
                for (int64_t c = 0; c < d; c++) {
                    double acc = 0;
                    for (int64_t i = j; i < s; i++) acc += dp[i * s + j] * Q(i, c);
                    ROW(dk, j, c) = acc;
                }
#undef Q
#undef K
#undef V
#undef ROW
        }
    rc = 0;
done:
    free(p);
    free(dp);
    return rc;
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
