/* optimizer.cu: the time of one optimizer step, as mixed-precision training takes it.
 *
 * What is timed: ONE fused AdamW step over N parameters, per parameter the work of Megatron-LM's
 * Float16OptimizerWithFloat16Params and of its distributed optimizer (megatron/core/optimizer/
 * optimizer.py: step() runs the fp32 optimizer on the main params, then
 * _copy_main_params_to_model_params writes the bf16 model params) with the fused Adam kernel of
 * apex (csrc/multi_tensor_adam.cu, ADAM_MODE_1 = AdamW) or torch.optim.AdamW(fused=True):
 *   read  fp32 main param, fp32 main grad, fp32 exp_avg, fp32 exp_avg_sq    16 bytes
 *   write fp32 main param, fp32 exp_avg, fp32 exp_avg_sq                    12 bytes
 *   write bf16 model param (the copy the next forward reads)                  2 bytes
 * = 30 bytes per parameter. Megatron runs the bf16 copy as a second kernel (multi_tensor_scale);
 * fused here, the probe measures what HBM bandwidth allows for the 30 bytes: the floor of the
 * step, which the calibration's optimizer_scale (pp_profile.h) stretches to a stack's real one.
 *
 * AdamW with bias correction as apex writes it (Loshchilov & Hutter 2019, Algorithm 2):
 *   m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g^2
 *   p = p - lr (m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + wd p)
 * with Megatron-LM's GPT recipe values: lr 1e-4, betas 0.9/0.95, eps 1e-8, weight decay 0.1.
 * Before any timing the kernel is checked against a plain CPU reference (fp64) at 4099 parameters
 * (odd: the scalar tail after the float4 body runs too); a wrong kernel is reported, not timed.
 * Default sizes 1e8 and 1e9 parameters (--quick 1e7 and 1e8; --params N,...): a size that does not
 * fit the GPU's free memory is an "OOM at this size" row and is skipped. */
#include "harness.cuh"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PP_OPT_BYTES_PER_PARAM 30.0 /* see the top of the file */
#define PP_OPT_CHECK_N 4099         /* odd: 1024 float4 + a 3-element tail */
#define PP_OPT_CHECK_STEP 10        /* bias corrections well away from 0 and from 1 */

typedef struct {
    float lr, beta1, beta2, eps, wd;
    float bc1, bc2; /* 1 - beta1^t, 1 - beta2^t */
} pp_adamw;

static pp_adamw adamw_at(int step)
{
    pp_adamw h;
    h.lr = 1e-4f;
    h.beta1 = 0.9f;
    h.beta2 = 0.95f;
    h.eps = 1e-8f;
    h.wd = 0.1f;
    h.bc1 = (float)(1.0 - pow(0.9, step));
    h.bc2 = (float)(1.0 - pow(0.95, step));
    return h;
}

/* One parameter, in apex's order of operations (multi_tensor_adam.cu, ADAM_MODE_1). */
__device__ __forceinline__ float pp_adamw_one(float p, float g, float &m, float &v, const pp_adamw &h)
{
    m = h.beta1 * m + (1.0f - h.beta1) * g;
    v = h.beta2 * v + (1.0f - h.beta2) * g * g;
    float denom = sqrtf(v / h.bc2) + h.eps;
    float update = (m / h.bc1) / denom + h.wd * p;
    return p - h.lr * update;
}

/* Grid-stride over float4 groups (16-byte loads and stores, 8-byte bf16 stores), then the n % 4
 * tail one element per thread. In place on p, m, v; the bf16 copy to `model`. */
__global__ void pp_adamw_kernel(float *__restrict__ p, const float *__restrict__ g, float *__restrict__ m,
                                float *__restrict__ v, __nv_bfloat16 *__restrict__ model, size_t n, pp_adamw h)
{
    size_t n4 = n / 4, stride = (size_t)gridDim.x * blockDim.x;
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    float4 *p4 = (float4 *)p, *m4 = (float4 *)m, *v4 = (float4 *)v;
    const float4 *g4 = (const float4 *)g;
    uint2 *b4 = (uint2 *)model;
    for (size_t i = tid; i < n4; i += stride) {
        float4 pp = p4[i], gg = __ldcs(g4 + i), mm = m4[i], vv = v4[i];
        pp.x = pp_adamw_one(pp.x, gg.x, mm.x, vv.x, h);
        pp.y = pp_adamw_one(pp.y, gg.y, mm.y, vv.y, h);
        pp.z = pp_adamw_one(pp.z, gg.z, mm.z, vv.z, h);
        pp.w = pp_adamw_one(pp.w, gg.w, mm.w, vv.w, h);
        p4[i] = pp;
        m4[i] = mm;
        v4[i] = vv;
        __nv_bfloat162 lo = __floats2bfloat162_rn(pp.x, pp.y), hi = __floats2bfloat162_rn(pp.z, pp.w);
        uint2 out;
        memcpy(&out.x, &lo, 4);
        memcpy(&out.y, &hi, 4);
        __stcs(b4 + i, out);
    }
    for (size_t i = 4 * n4 + tid; i < n; i += stride) {
        float mm = m[i], vv = v[i];
        float pn = pp_adamw_one(p[i], g[i], mm, vv, h);
        p[i] = pn;
        m[i] = mm;
        v[i] = vv;
        model[i] = __float2bfloat16_rn(pn);
    }
}

typedef struct {
    float *p, *g, *m, *v;
    __nv_bfloat16 *model;
    size_t n;
    pp_adamw h;
} opt_bufs;

enum { THREADS = 256 };

static int run_step(pp_probe_ctx *c, void *arg)
{
    opt_bufs *b = (opt_bufs *)arg;
    size_t groups = (b->n + 3) / 4;
    size_t want = (groups + THREADS - 1) / THREADS, cap = (size_t)c->prop.multiProcessorCount * 16;
    unsigned blocks = (unsigned)(want < cap ? want : cap);
    pp_adamw_kernel<<<blocks ? blocks : 1, THREADS, 0, c->stream>>>(b->p, b->g, b->m, b->v, b->model, b->n, b->h);
    PP_LAUNCHED();
    return 0;
fail:
    return -1;
}

static void bufs_free(opt_bufs *b)
{
    cudaFree(b->p);
    cudaFree(b->g);
    cudaFree(b->m);
    cudaFree(b->v);
    cudaFree(b->model);
    memset(b, 0, sizeof *b);
}

/* Allocate and fill n parameters' state: weights U(-1, 1), grads U(-1e-2, 1e-2), exp_avg
 * U(-1e-3, 1e-3), exp_avg_sq in (0.5e-4, 1.5e-4) (positive, as a squared average is), the bf16
 * copy poisoned (NaN) so that an unwritten element fails the check. */
static int bufs_make(pp_probe_ctx *c, opt_bufs *b, size_t n, unsigned long long seed)
{
    memset(b, 0, sizeof *b);
    b->n = n;
    PP_TRY(pp_alloc((void **)&b->p, n * 4));
    PP_TRY(pp_alloc((void **)&b->g, n * 4));
    PP_TRY(pp_alloc((void **)&b->m, n * 4));
    PP_TRY(pp_alloc((void **)&b->v, n * 4));
    PP_TRY(pp_alloc((void **)&b->model, n * 2));
    PP_TRY(pp_fill(c, b->p, n, PP_F32, 1.0f, seed + 1));
    PP_TRY(pp_fill(c, b->g, n, PP_F32, 1e-2f, seed + 2));
    PP_TRY(pp_fill(c, b->m, n, PP_F32, 1e-3f, seed + 3));
    PP_TRY(pp_fill_affine(c, b->v, n, PP_F32, 1e-4f, 0.5e-4f, seed + 4));
    PP_TRY(pp_poison(c, b->model, n * 2));
    return 0;
fail:
    return -1;
}

/* bf16 round-to-nearest-even of a finite float, as __float2bfloat16_rn does. */
static double bf16_rne(double x)
{
    float f = (float)x;
    unsigned u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);
    u &= 0xFFFF0000u;
    memcpy(&f, &u, 4);
    return f;
}

/* The step at PP_OPT_CHECK_N parameters against fp64 on the CPU. Errors: exp_avg and exp_avg_sq
 * relative L2 (fp32 rounding: ~1e-7, tolerance 1e-5); the weight's change relative L2 against the
 * reference change (the new weight rounded to fp32 is off by up to 6e-8 |p| of a change of ~2e-5:
 * ~3e-3 at worst per element, tolerance 1e-2; a missing bias correction or weight decay moves it
 * by 25% or more); the bf16 copy exactly the rounding of the fp32 weight. *ok 1 or 0. */
static int check_step(pp_probe_ctx *c, double *err, int *ok)
{
    const size_t n = PP_OPT_CHECK_N;
    opt_bufs b;
    double *h = NULL, *out = NULL, *ref = NULL;
    double e_m = 0, e_v = 0, e_p = 0;
    size_t bad_bf16 = 0;
    int rc = -1;
    memset(&b, 0, sizeof b);
    *ok = 0;
    *err = INFINITY;
    h = (double *)malloc(4 * n * sizeof *h);       /* p g m v before */
    out = (double *)malloc(5 * n * sizeof *out);   /* p m v model after (GPU), p delta */
    ref = (double *)malloc(4 * n * sizeof *ref);   /* p m v after, p delta (CPU) */
    if (!h || !out || !ref) {
        pp_probe_error(__FILE__, __LINE__, "out of memory");
        goto fail;
    }
    PP_TRY(bufs_make(c, &b, n, 0x0A7E00ull));
    b.h = adamw_at(PP_OPT_CHECK_STEP);
    PP_TRY(pp_to_host(c, b.p, n, PP_F32, h));
    PP_TRY(pp_to_host(c, b.g, n, PP_F32, h + n));
    PP_TRY(pp_to_host(c, b.m, n, PP_F32, h + 2 * n));
    PP_TRY(pp_to_host(c, b.v, n, PP_F32, h + 3 * n));
    PP_TRY(run_step(c, &b));
    PP_TRY(pp_to_host(c, b.p, n, PP_F32, out));
    PP_TRY(pp_to_host(c, b.m, n, PP_F32, out + n));
    PP_TRY(pp_to_host(c, b.v, n, PP_F32, out + 2 * n));
    PP_TRY(pp_to_host(c, b.model, n, PP_BF16, out + 3 * n));
    {
        /* the reference, written out plainly in fp64 (the hyper-parameters as the fp32 the GPU has) */
        const double lr = 1e-4f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f;
        const double bc1 = 1.0 - pow(b1, PP_OPT_CHECK_STEP), bc2 = 1.0 - pow(b2, PP_OPT_CHECK_STEP);
        for (size_t i = 0; i < n; i++) {
            double p = h[i], g = h[n + i], m = h[2 * n + i], v = h[3 * n + i];
            m = b1 * m + (1 - b1) * g;
            v = b2 * v + (1 - b2) * g * g;
            double p_new = p - lr * ((m / bc1) / (sqrt(v / bc2) + eps) + wd * p);
            ref[i] = p_new;
            ref[n + i] = m;
            ref[2 * n + i] = v;
            ref[3 * n + i] = p_new - p;        /* the change the reference makes */
            out[4 * n + i] = out[i] - p;       /* the change the GPU made */
            if (!(out[3 * n + i] == bf16_rne(out[i]))) bad_bf16++;
        }
    }
    e_m = pp_rel_l2(out + n, ref + n, n);
    e_v = pp_rel_l2(out + 2 * n, ref + 2 * n, n);
    e_p = pp_rel_l2(out + 4 * n, ref + 3 * n, n);
    *err = fmax(e_m, fmax(e_v, e_p));
    if (!(e_m < 1e-5) || !(e_v < 1e-5) || !(e_p < 1e-2) || bad_bf16) {
        pp_report_fail(c->rep,
                       "optimizer (fused AdamW, %zu params): off the CPU reference: exp_avg %.3g, exp_avg_sq %.3g, "
                       "weight change %.3g; %zu bf16 copies wrong",
                       n, e_m, e_v, e_p, bad_bf16);
    } else {
        *ok = 1;
    }
    rc = 0;
fail:
    bufs_free(&b);
    free(h);
    free(out);
    free(ref);
    return rc;
}

/* One size: allocate, time, row. An allocation failure is left recorded for pp_oom_recover. */
static int time_size(pp_probe_ctx *c, double params, double check_err, opt_bufs *b)
{
    size_t n = (size_t)params;
    double ms = 0, footprint = 18.0 * params; /* bytes held: 4 fp32 arrays + the bf16 copy */
    pp_opt_row row;
    PP_TRY(bufs_make(c, b, n, 0x0A7E10ull));
    b->h = adamw_at(PP_OPT_CHECK_STEP);
    /* every repeat updates the same state again: values stay finite (|change| <= ~lr per step).
     * A state that fits in the L2 many times over is flushed between repeats (a real step finds
     * its state cold: the forward and backward ran in between). */
    PP_TRY(pp_time_ms(c, run_step, b, footprint < 4.0 * (double)c->prop.l2CacheSize, &ms));
    memset(&row, 0, sizeof row);
    row.params = params;
    row.bytes_per_param = PP_OPT_BYTES_PER_PARAM;
    row.ms = ms;
    row.gbs = PP_OPT_BYTES_PER_PARAM * params / (ms * 1e-3) / 1e9;
    row.check_err = check_err;
    if (pp_report_add_opt(c->rep, &row)) pp_report_fail(c->rep, "optimizer %.0f params: no valid time", params);
    return 0;
fail:
    return -1;
}

int pp_probe_optimizer(pp_probe_ctx *c)
{
    const double defaults[2] = {1e8, 1e9}, quick[2] = {1e7, 1e8};
    const double *sizes = c->opt->n_params ? c->opt->params : (c->opt->quick ? quick : defaults);
    int n_sizes = c->opt->n_params ? c->opt->n_params : 2, ok = 0, rc = -1;
    double check_err = 0;
    opt_bufs b;
    memset(&b, 0, sizeof b);
    PP_TRY(check_step(c, &check_err, &ok));
    if (!ok) return 0; /* reported in r->fail: a wrong kernel is not timed */
    for (int i = 0; i < n_sizes; i++) {
        pp_alloc_mark();
        pp_alloc_need(18.0 * sizes[i]);
        if (time_size(c, sizes[i], check_err, &b)) {
            /* out of memory at this size: a row saying so, its buffers freed, on to the next */
            if (pp_oom_recover(c->rep, c->stream, PP_PROBE_OPTIMIZER, "fused AdamW params=%.0f", sizes[i])) goto fail;
        }
        bufs_free(&b);
    }
    rc = 0;
fail:
    bufs_free(&b);
    return rc;
}
