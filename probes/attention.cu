/* attention.cu: the attention probe: causal attention forward and forward+backward (attn.cu) at
 * the shapes asked for, fused (cuDNN flash) and unfused, each first checked at a small size
 * against the CPU reference (ref.c) and then timed. */
#include "attn.cuh"

#include <stdlib.h>
#include <string.h>

#include "ref.h"

/* A bf16 buffer p advanced by elems elements. */
#define OFF(p, elems) ((void *)((char *)(p) + (size_t)(elems) * 2))

/* ================================================================ the probe */

typedef struct {
    int64_t b, s, heads, d;
} attn_job;

/* Buffers of one shape: packed qkv [T, 3hq], o [T, hq], dout [T, hq], dqkv [T, 3hq], stats. */
typedef struct {
    pp_attn_shape sh;
    void *qkv, *o, *dout, *dqkv;
    float *stats;
} attn_bufs;

static void bufs_free(attn_bufs *x)
{
    cudaFree(x->qkv);
    cudaFree(x->o);
    cudaFree(x->dout);
    cudaFree(x->dqkv);
    cudaFree(x->stats);
    memset(x, 0, sizeof *x);
}

static int bufs_alloc(pp_probe_ctx *c, attn_bufs *x, int64_t b, int64_t s, int64_t H, int64_t d, unsigned long long seed)
{
    const int64_t T = b * s, hq = H * d;
    memset(x, 0, sizeof *x);
    x->sh.b = b;
    x->sh.s = s;
    x->sh.heads = H;
    x->sh.d = d;
    x->sh.ld_qkv = 3 * hq;
    x->sh.ld_o = hq;
    PP_TRY(pp_alloc(&x->qkv, (size_t)(T * 3 * hq) * 2));
    PP_TRY(pp_alloc(&x->o, (size_t)(T * hq) * 2));
    PP_TRY(pp_alloc(&x->dout, (size_t)(T * hq) * 2));
    PP_TRY(pp_alloc(&x->dqkv, (size_t)(T * 3 * hq) * 2));
    PP_TRY(pp_alloc((void **)&x->stats, (size_t)(b * H * s) * 4));
    PP_TRY(pp_fill(c, x->qkv, (size_t)(T * 3 * hq), PP_BF16, 1.0f, seed));
    PP_TRY(pp_fill(c, x->dout, (size_t)(T * hq), PP_BF16, 1.0f, seed + 1));
    return 0;
fail:
    bufs_free(x);
    return -1;
}

static pp_attn_io bufs_io(const attn_bufs *x)
{
    const int64_t hq = x->sh.heads * x->sh.d;
    pp_attn_io io;
    io.q = x->qkv;
    io.k = OFF(x->qkv, hq);
    io.v = OFF(x->qkv, 2 * hq);
    io.o = x->o;
    io.stats = x->stats;
    io.dout = x->dout;
    io.dq = x->dqkv;
    io.dk = OFF(x->dqkv, hq);
    io.dv = OFF(x->dqkv, 2 * hq);
    return io;
}

static int run_fwd(pp_probe_ctx *c, void *a) { return pp_attn_fwd(c, (pp_attn *)a); }
static int run_fwdbwd(pp_probe_ctx *c, void *a)
{
    PP_TRY(pp_attn_fwd(c, (pp_attn *)a));
    return pp_attn_bwd(c, (pp_attn *)a);
fail:
    return -1;
}

/* Small-size check against the CPU reference: O and dQ, dK, dV; returns the largest relative error. */
static int check_small(pp_probe_ctx *c, bool flash, int64_t d, double *err, char *why, size_t why_n)
{
    const int64_t b = 2, s = 128, H = 2, T = b * s, hq = H * d;
    attn_bufs x;
    pp_attn *a = NULL;
    double *qkv = NULL, *o = NULL, *dout = NULL, *dqkv = NULL, *ro = NULL, *rq = NULL, *rk = NULL, *rv = NULL,
           *g = NULL;
    int rc = -1, st = 0;
    pp_attn_io io;
    memset(&x, 0, sizeof x);
    *err = INFINITY;
    PP_TRY(bufs_alloc(c, &x, b, s, H, d, 7 + (unsigned long long)d));
    io = bufs_io(&x);
    st = pp_attn_create(c, &x.sh, flash, &io, &a, why, why_n);
    if (st) {
        rc = st;
        goto fail;
    }
    PP_TRY(pp_poison(c, x.o, (size_t)(T * hq) * 2));
    PP_TRY(pp_poison(c, x.dqkv, (size_t)(T * 3 * hq) * 2));
    PP_TRY(pp_attn_fwd(c, a));
    PP_TRY(pp_attn_bwd(c, a));
    qkv = (double *)malloc((size_t)(T * 3 * hq) * sizeof(double));
    dqkv = (double *)malloc((size_t)(T * 3 * hq) * sizeof(double));
    o = (double *)malloc((size_t)(T * hq) * sizeof(double));
    dout = (double *)malloc((size_t)(T * hq) * sizeof(double));
    ro = (double *)malloc((size_t)(T * hq) * sizeof(double));
    rq = (double *)malloc((size_t)(T * hq) * sizeof(double));
    rk = (double *)malloc((size_t)(T * hq) * sizeof(double));
    rv = (double *)malloc((size_t)(T * hq) * sizeof(double));
    g = (double *)malloc((size_t)(T * hq) * sizeof(double));
    if (!qkv || !dqkv || !o || !dout || !ro || !rq || !rk || !rv || !g) {
        pp_probe_error(__FILE__, __LINE__, "out of memory");
        goto fail;
    }
    PP_TRY(pp_to_host(c, x.qkv, (size_t)(T * 3 * hq), PP_BF16, qkv));
    PP_TRY(pp_to_host(c, x.dqkv, (size_t)(T * 3 * hq), PP_BF16, dqkv));
    PP_TRY(pp_to_host(c, x.o, (size_t)(T * hq), PP_BF16, o));
    PP_TRY(pp_to_host(c, x.dout, (size_t)(T * hq), PP_BF16, dout));
    if (pp_ref_attention(b, s, H, d, qkv, qkv + hq, qkv + 2 * hq, 3 * hq, ro, dout, rq, rk, rv)) {
        pp_probe_error(__FILE__, __LINE__, "out of memory");
        goto fail;
    }
    {
        double e = pp_rel_l2(o, ro, (size_t)(T * hq));
        const double *ref[3] = {rq, rk, rv};
        for (int part = 0; part < 3; part++) {
            for (int64_t t = 0; t < T; t++)
                for (int64_t j = 0; j < hq; j++) g[t * hq + j] = dqkv[t * 3 * hq + part * hq + j];
            double ep = pp_rel_l2(g, ref[part], (size_t)(T * hq));
            if (!(ep <= e)) e = ep;
        }
        *err = e;
    }
    rc = 0;
fail:
    pp_attn_free(a);
    bufs_free(&x);
    free(qkv); free(dqkv); free(o); free(dout); free(ro); free(rq); free(rk); free(rv); free(g);
    return rc;
}

static int build_jobs(const pp_probe_opts *o, attn_job *jobs, int cap)
{
    int n = 0;
    if (o->quick) {
        attn_job q[2] = {{2, 256, 4, 64}, {1, 512, 2, 128}};
        for (int i = 0; i < 2; i++) jobs[n++] = q[i];
        return n;
    }
    if (o->hidden) {
        int64_t d = o->hidden / o->heads, s = o->seq ? o->seq : 2048, b = o->mbs ? o->mbs : 1;
        for (int i = 0; i < o->n_tp && n < cap; i++) {
            attn_job j = {b, s, o->heads / o->tp[i], d};
            jobs[n++] = j;
        }
        return n;
    }
    /* the attention of the anchors' layers (h 1024 and 2048, 4096) and longer sequences */
    attn_job def[5] = {{16, 1024, 16, 64}, {8, 2048, 16, 128}, {4, 2048, 32, 128}, {2, 4096, 32, 128},
                       {1, 8192, 32, 128}};
    for (int i = 0; i < 5 && n < cap; i++) jobs[n++] = def[i];
    return n;
}

/* One shape: the CPU checks of its head size once, both implementations cross-checked, then timed.
 * 0 (rows, notes or wrong results), -1 on a failure (an OOM among them: the caller reports the size
 * and goes on). The caller frees x, y and impl. */
static int attn_one(pp_probe_ctx *c, const attn_job *j, int ji, bool small_ok[2][2], bool small_done[2][2],
                    attn_bufs *x, attn_bufs *y, pp_attn *impl[2])
{
    const int64_t T = j->b * j->s, hq = j->heads * j->d;
    double ms_f[2] = {0, 0}, ms_fb[2] = {0, 0}, cross = 0;
    bool have[2] = {false, false};
    int di = j->d == 128;
    char why[512];
    /* the CPU check once per (implementation, head size) */
    for (int f = 0; f < 2; f++) {
        if (small_done[f][di]) continue;
        double err = 0;
        int st = check_small(c, f == 1, j->d, &err, why, sizeof why);
        if (st < 0) goto fail;
        small_done[f][di] = true;
        if (st > 0) {
            pp_report_note(c->rep, "attention %s (head_dim %lld) unavailable: %s", f ? "flash" : "unfused",
                           (long long)j->d, why);
            continue;
        }
        if (!(err <= 2e-2)) {
            pp_report_fail(c->rep, "attention %s head_dim %lld: relative error %.3g against the CPU reference",
                           f ? "flash" : "unfused", (long long)j->d, err);
            continue;
        }
        small_ok[f][di] = true;
    }
    pp_alloc_mark(); /* the size's own buffers from here */
    PP_TRY(bufs_alloc(c, x, j->b, j->s, j->heads, j->d, 1000 + (unsigned long long)ji));
    PP_TRY(bufs_alloc(c, y, j->b, j->s, j->heads, j->d, 1000 + (unsigned long long)ji));
    for (int f = 0; f < 2; f++) {
        attn_bufs *bx = f ? x : y;
        pp_attn_io io = bufs_io(bx);
        if (!small_ok[f][di]) continue;
        int st = pp_attn_create(c, &bx->sh, f == 1, &io, &impl[f], why, sizeof why);
        if (st < 0) goto fail;
        if (st > 0) {
            pp_report_note(c->rep, "attention %s b=%lld s=%lld heads=%lld: %s", f ? "flash" : "unfused",
                           (long long)j->b, (long long)j->s, (long long)j->heads, why);
            continue;
        }
        PP_TRY(pp_poison(c, bx->o, (size_t)(T * hq) * 2));
        PP_TRY(pp_poison(c, bx->dqkv, (size_t)(T * 3 * hq) * 2));
        PP_TRY(run_fwdbwd(c, impl[f]));
        have[f] = true;
    }
    /* cross-check at this size: same inputs (same seed), two implementations */
    if (have[0] && have[1]) {
        double eo = 0, eg = 0;
        PP_TRY(pp_rel_err_dev(c, x->o, y->o, (size_t)(T * hq), PP_BF16, &eo));
        PP_TRY(pp_rel_err_dev(c, x->dqkv, y->dqkv, (size_t)(T * 3 * hq), PP_BF16, &eg));
        cross = eo > eg ? eo : eg;
        if (!(cross <= 3e-2)) {
            pp_report_fail(c->rep, "attention b=%lld s=%lld heads=%lld d=%lld: flash and unfused differ by %.3g",
                           (long long)j->b, (long long)j->s, (long long)j->heads, (long long)j->d, cross);
            have[0] = have[1] = false;
        }
    }
    for (int f = 0; f < 2; f++) {
        if (!have[f]) continue;
        PP_TRY(pp_time_ms(c, run_fwd, impl[f], true, &ms_f[f]));
        PP_TRY(pp_time_ms(c, run_fwdbwd, impl[f], true, &ms_fb[f]));
        pp_attn_row row;
        memset(&row, 0, sizeof row);
        snprintf(row.impl, sizeof row.impl, "%s", f ? "flash" : "unfused");
        snprintf(row.backend, sizeof row.backend, "%s", pp_attn_backend(impl[f]));
        row.causal = true;
        row.b = j->b;
        row.s = j->s;
        row.heads = j->heads;
        row.head_dim = j->d;
        row.fwd_ms = ms_f[f];
        row.fwdbwd_ms = ms_fb[f];
        {
            double fl = pp_attn_fwd_flops(&x->sh);
            row.fwd_tflops = fl / (ms_f[f] * 1e-3) / 1e12;
            row.fwdbwd_tflops = 3 * fl / (ms_fb[f] * 1e-3) / 1e12;
        }
        row.rel_err = cross;
        if (pp_report_add_attn(c->rep, &row)) pp_report_fail(c->rep, "attention: no valid time");
    }
    return 0;
fail:
    return -1;
}

int pp_probe_attention(pp_probe_ctx *c)
{
    attn_job jobs[16];
    int n_jobs = build_jobs(c->opt, jobs, 16), rc = -1;
    attn_bufs x, y; /* y: the second implementation's outputs, for the cross-check */
    pp_attn *impl[2] = {NULL, NULL};
    bool small_ok[2][2] = {{false, false}, {false, false}}; /* [flash][d == 128] */
    bool small_done[2][2] = {{false, false}, {false, false}};
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    c->target_ms = 100;
    for (int ji = 0; ji < n_jobs; ji++) {
        const attn_job *j = &jobs[ji];
        pp_alloc_mark();
        if (attn_one(c, j, ji, small_ok, small_done, &x, &y, impl) &&
            pp_oom_recover(c->rep, c->stream, PP_PROBE_ATTENTION, "b=%lld s=%lld heads=%lld head_dim=%lld",
                           (long long)j->b, (long long)j->s, (long long)j->heads, (long long)j->d))
            goto fail;
        /* this size's buffers and plans, measured or out of memory */
        pp_attn_free(impl[0]);
        pp_attn_free(impl[1]);
        impl[0] = impl[1] = NULL;
        bufs_free(&x);
        bufs_free(&y);
    }
    rc = 0;
fail:
    pp_attn_free(impl[0]);
    pp_attn_free(impl[1]);
    bufs_free(&x);
    bufs_free(&y);
    c->target_ms = 0;
    return rc;
}
