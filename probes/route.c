/* route.c: the moe probe's fixed routing and row maps (probe.h pp_moe_route). Pure C, so that the
 * unit tests check it without a GPU: every copy lands in one row, a token's experts are distinct,
 * the counts are balanced or as imbalanced as asked. */
#include "probe.h"

#include <stdlib.h>
#include <string.h>

void pp_moe_route_free(pp_moe_route *r)
{
    if (!r) return;
    free(r->expert);
    free(r->count);
    free(r->off);
    free(r->exp_src);
    free(r->send_tok);
    free(r->send_from_exp);
    free(r->row_of);
    memset(r, 0, sizeof *r);
}

/* Global expert counts: balanced, or the hot experts (g mod L == 0) X times the mean and the rest
 * sharing what is left evenly. -1 when a count would exceed T (a token twice in one expert). */
static int route_counts(int64_t T, int64_t K, int64_t E, int64_t L, double imbalance, int64_t *c)
{
    const int64_t TK = T * K, N = E / L;
    if (imbalance <= 1.0 || N == E) {
        for (int64_t g = 0; g < E; g++) c[g] = TK / E + (g < TK % E);
    } else {
        int64_t hot = (int64_t)(imbalance * (double)TK / (double)E + 0.5);
        int64_t rest = TK - N * hot, cold = E - N, i = 0;
        if (rest < 0) return -1;
        for (int64_t g = 0; g < E; g++) {
            if (g % L == 0) {
                c[g] = hot;
            } else {
                c[g] = rest / cold + (i < rest % cold);
                i++;
            }
        }
    }
    for (int64_t g = 0; g < E; g++)
        if (c[g] > T) return -1;
    return 0;
}

int pp_moe_route_make(int64_t T, int64_t K, int64_t E, int64_t ep, double imbalance, bool padded, pp_moe_route *r)
{
    const int64_t TK = T * K;
    int64_t *cg = NULL, *send_off = NULL, *fill = NULL, v = 0;
    int rc = -1;
    memset(r, 0, sizeof *r);
    if (T < 1 || K < 1 || E < 1 || K > E || ep < 1 || E % ep || TK > INT32_MAX) return -1;
    r->T = T, r->K = K, r->E = E, r->ep = ep, r->L = E / ep, r->R = TK;
    cg = calloc((size_t)E, sizeof *cg);
    send_off = calloc((size_t)E + 1, sizeof *send_off);
    fill = calloc((size_t)E, sizeof *fill);
    r->expert = calloc((size_t)TK, sizeof *r->expert);
    r->count = calloc((size_t)r->L, sizeof *r->count);
    r->off = calloc((size_t)r->L, sizeof *r->off);
    r->send_tok = calloc((size_t)TK, sizeof *r->send_tok);
    r->send_from_exp = calloc((size_t)TK, sizeof *r->send_from_exp);
    r->row_of = calloc((size_t)TK, sizeof *r->row_of);
    if (!cg || !send_off || !fill || !r->expert || !r->count || !r->off || !r->send_tok || !r->send_from_exp ||
        !r->row_of)
        goto done;
    if (route_counts(T, K, E, r->L, imbalance, cg)) goto done;
    /* the cyclic sweep: visit v is copy v / T of token v mod T; the experts take their runs of
     * visits in sweep order: run i is global expert (i mod ep) L + i / ep, i.e. local expert by
     * local expert, each over the source ranks (ep 1: expert i). A token's copies are T visits
     * apart, about L/K local experts at balance: with L >= K they meet K distinct local weight
     * sets. Run i = g instead (the first version) put all of a token's copies on one local expert
     * whenever L divides E/K (the moe check's 8 experts top-2 at ep 2, DeepSeek-V3's 256 top-8 at
     * ep 32): the normalised probabilities then sum to 1 on one expert's output, the router has no
     * gradient, and the check compared the GPU's fp32 rounding with a zero dWrouter. */
    for (int64_t i = 0; i < E; i++) {
        const int64_t g = (i % ep) * r->L + i / ep;
        for (int64_t c = 0; c < cg[g]; c++, v++) r->expert[(v % T) * K + v / T] = (int32_t)g;
    }
    for (int64_t g = 0; g < E; g++) send_off[g + 1] = send_off[g] + cg[g];
    /* send order: by global expert, tokens ascending (scanning the tokens in order fills it so) */
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < K; j++) {
            const int64_t g = r->expert[t * K + j], row = send_off[g] + fill[g]++;
            r->send_tok[row] = (int32_t)t;
            r->row_of[t * K + j] = (int32_t)row;
        }
    /* local expert e holds global experts s*L + e of every source rank s, in [e][s] order */
    for (int64_t e = 0; e < r->L; e++)
        for (int64_t s = 0; s < ep; s++) r->count[e] += cg[s * r->L + e];
    for (int64_t e = 0; e < r->L; e++) r->cap = r->count[e] > r->cap ? r->count[e] : r->cap;
    for (int64_t e = 0, o = 0; e < r->L; e++) {
        r->off[e] = padded ? e * r->cap : o;
        o += r->count[e];
    }
    r->rows = padded ? r->L * r->cap : TK;
    if (!(r->exp_src = malloc((size_t)r->rows * sizeof *r->exp_src))) goto done;
    for (int64_t i = 0; i < r->rows; i++) r->exp_src[i] = -1;
    for (int64_t e = 0; e < r->L; e++) {
        int64_t k = r->off[e];
        for (int64_t s = 0; s < ep; s++) {
            const int64_t g = s * r->L + e;
            for (int64_t i = 0; i < cg[g]; i++, k++) {
                const int64_t srow = send_off[g] + i;
                r->exp_src[k] = ep > 1 ? (int32_t)srow : r->send_tok[srow];
                r->send_from_exp[srow] = (int32_t)k;
            }
        }
    }
    /* ep 1: unpermute and the permutation's backward read the expert layout directly */
    if (ep == 1)
        for (int64_t i = 0; i < TK; i++) r->row_of[i] = r->send_from_exp[r->row_of[i]];
    rc = 0;
done:
    free(cg);
    free(send_off);
    free(fill);
    if (rc) pp_moe_route_free(r);
    return rc;
}
