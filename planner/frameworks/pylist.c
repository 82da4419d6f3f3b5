/* Python list expressions, the small language of Megatron-LM's --moe-layer-freq and
 * --window-attn-skip-freq (megatron/training/arguments.py moe_freq_type: "([0]*1+[1]*7)",
 * "[0,1,1]*4"), evaluated without eval(): pp_margs_list_expr (pp_margs.h). */
#include "margs_table.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MARGS_MAX_LIST 100000 /* entries of a list expression */

/* moe_freq_type's language: expr = term ('+' term)*, term = factor ('*' factor)*,
 * factor = INT | '[' [expr (',' expr)*] ']' | '(' expr ')'. A value is an integer or a list. */
typedef struct {
    const char *s;
    size_t p;
    int64_t *buf; /* list storage: values are [off, off+n) slices of buf */
    size_t n, cap;
    char *msg;
    size_t msg_n;
    int depth;
} lx;

typedef struct {
    bool list;
    int64_t v;        /* the integer */
    size_t off, len;  /* the list: buf[off .. off+len) */
} lx_val;

static bool lx_fail(lx *x, const char *m)
{
    if (x->msg && !x->msg[0]) snprintf(x->msg, x->msg_n, "%s", m);
    return false;
}

static void lx_ws(lx *x)
{
    while (x->s[x->p] == ' ' || x->s[x->p] == '\t') x->p++;
}

static bool lx_push(lx *x, int64_t v)
{
    if (x->n >= 8 * (size_t)MARGS_MAX_LIST) return lx_fail(x, "the expression builds more than 800000 entries");
    if (x->n == x->cap) {
        size_t nc = x->cap ? 2 * x->cap : 64;
        int64_t *b = realloc(x->buf, nc * sizeof *b);
        if (!b) return lx_fail(x, "out of memory");
        x->buf = b;
        x->cap = nc;
    }
    x->buf[x->n++] = v;
    return true;
}

static bool lx_expr(lx *x, lx_val *out);

static bool lx_factor(lx *x, lx_val *out)
{
    lx_ws(x);
    if (++x->depth > 64) return lx_fail(x, "nested too deep");
    char c = x->s[x->p];
    bool ok = true;
    if (isdigit((unsigned char)c) || c == '-') {
        char *end = NULL;
        errno = 0;
        long long v = strtoll(x->s + x->p, &end, 10);
        if (end == x->s + x->p || errno == ERANGE || v < -1000000000LL || v > 1000000000LL) {
            x->depth--;
            return lx_fail(x, "expected an integer");
        }
        x->p = (size_t)(end - x->s);
        *out = (lx_val){false, v, 0, 0};
    } else if (c == '(') {
        x->p++;
        ok = lx_expr(x, out);
        lx_ws(x);
        if (ok && x->s[x->p] != ')') ok = lx_fail(x, "expected ')'");
        if (ok) x->p++;
    } else if (c == '[') {
        x->p++;
        /* The elements are evaluated first (an element may itself be an expression), then copied
         * in order to the end of buf as the list's slice. */
        size_t start = x->n;
        int64_t tmp[256];
        size_t nt = 0;
        lx_ws(x);
        if (x->s[x->p] != ']') {
            for (;;) {
                lx_val e;
                if (!lx_expr(x, &e)) {
                    x->depth--;
                    return false;
                }
                if (e.list) {
                    x->depth--;
                    return lx_fail(x, "a list inside a list");
                }
                if (nt < sizeof tmp / sizeof tmp[0]) {
                    tmp[nt++] = e.v;
                } else {
                    x->depth--;
                    return lx_fail(x, "more than 256 literal entries (write a repetition: [1]*N)");
                }
                lx_ws(x);
                if (x->s[x->p] == ',') {
                    x->p++;
                    lx_ws(x);
                    if (x->s[x->p] == ']') break; /* Python's trailing comma */
                    continue;
                }
                break;
            }
        }
        if (x->s[x->p] != ']') {
            x->depth--;
            return lx_fail(x, "expected ',' or ']'");
        }
        x->p++;
        start = x->n;
        for (size_t i = 0; i < nt; i++)
            if (!lx_push(x, tmp[i])) {
                x->depth--;
                return false;
            }
        *out = (lx_val){true, 0, start, nt};
    } else {
        ok = lx_fail(x, c ? "unexpected character" : "unexpected end");
    }
    x->depth--;
    return ok;
}

static bool lx_term(lx *x, lx_val *out)
{
    if (!lx_factor(x, out)) return false;
    for (;;) {
        lx_ws(x);
        if (x->s[x->p] != '*') return true;
        x->p++;
        lx_val r;
        if (!lx_factor(x, &r)) return false;
        if (!out->list && !r.list) {
            double v = (double)out->v * (double)r.v;
            if (fabs(v) > 1e15) return lx_fail(x, "number too large");
            out->v *= r.v;
            continue;
        }
        if (out->list && r.list) return lx_fail(x, "a list times a list");
        lx_val l = out->list ? *out : r;
        int64_t k = out->list ? r.v : out->v;
        if (k < 0) k = 0;
        if ((double)l.len * (double)k > MARGS_MAX_LIST) return lx_fail(x, "the list is longer than 100000 entries");
        size_t start = x->n;
        for (int64_t i = 0; i < k; i++)
            for (size_t j = 0; j < l.len; j++)
                if (!lx_push(x, x->buf[l.off + j])) return false;
        *out = (lx_val){true, 0, start, (size_t)k * l.len};
    }
}

static bool lx_expr(lx *x, lx_val *out)
{
    if (!lx_term(x, out)) return false;
    for (;;) {
        lx_ws(x);
        if (x->s[x->p] != '+') return true;
        x->p++;
        lx_val r;
        if (!lx_term(x, &r)) return false;
        if (out->list != r.list) return lx_fail(x, "a list plus an integer");
        if (!out->list) {
            out->v += r.v;
            continue;
        }
        size_t start = x->n;
        for (size_t j = 0; j < out->len; j++)
            if (!lx_push(x, x->buf[out->off + j])) return false;
        for (size_t j = 0; j < r.len; j++)
            if (!lx_push(x, x->buf[r.off + j])) return false;
        *out = (lx_val){true, 0, start, out->len + r.len};
    }
}

pp_status pp_margs_list_expr(const char *s, int64_t *out, int max, int *n, int64_t *value, int *col,
                             char *msg, size_t msg_n)
{
    lx x = {s ? s : "", 0, NULL, 0, 0, msg, msg_n, 0};
    if (msg && msg_n) msg[0] = 0;
    *n = 0;
    *value = 0;
    if (col) *col = 0;
    lx_val v;
    bool ok = lx_expr(&x, &v);
    lx_ws(&x);
    if (ok && x.s[x.p]) ok = lx_fail(&x, "unexpected text after the expression");
    if (ok && v.list && v.len > (size_t)max) {
        snprintf(msg, msg_n, "the list has %zu entries, more than %d", v.len, max);
        ok = false;
    }
    if (!ok) {
        if (col) *col = (int)x.p + 1;
        free(x.buf);
        return PP_ERR_INPUT;
    }
    if (v.list) {
        for (size_t i = 0; i < v.len; i++) out[i] = x.buf[v.off + i];
        *n = (int)v.len;
    } else {
        *value = v.v;
    }
    free(x.buf);
    return PP_OK;
}
