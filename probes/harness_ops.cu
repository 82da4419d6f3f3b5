/* harness_ops.cu: the operations the probes share (harness.cuh) and their checks: cuBLASLt GEMM
 * plans (the heuristics' candidate algorithms; the caller picks one), the column-major
 * descriptions of a transformer's linear layers, SwiGLU forward and backward, and checking a
 * result on the device (a linear layer against its inputs, a buffer against a CPU reference, two
 * buffers' relative error). Device setup, allocation and timing are harness.cu. */
#include "harness.cuh"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- cuBLASLt */

static cudaDataType_t lt_type(pp_elt t)
{
    switch (t) {
    case PP_F32: return CUDA_R_32F;
    case PP_BF16: return CUDA_R_16BF;
    case PP_F16: return CUDA_R_16F;
    default: return CUDA_R_8F_E4M3;
    }
}

void pp_gemm_plan_free(pp_gemm_plan *p)
{
    if (p->op) cublasLtMatmulDescDestroy(p->op);
    if (p->la) cublasLtMatrixLayoutDestroy(p->la);
    if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
    if (p->lc) cublasLtMatrixLayoutDestroy(p->lc);
    if (p->ld) cublasLtMatrixLayoutDestroy(p->ld);
    memset(p, 0, sizeof *p);
}

static char gemm_why[256];
const char *pp_gemm_plan_why(void) { return gemm_why; }

/* Setting up a plan fails softly (return 1, reason in pp_gemm_plan_why): an epilogue or type this
 * cuBLASLt does not have here is for the caller to work around, not a runtime failure. */
#define PP_LT_SOFT(call)                                                                          \
    do {                                                                                          \
        cublasStatus_t s_ = (call);                                                               \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                        \
            snprintf(gemm_why, sizeof gemm_why, "%s: %s", #call, cublasLtGetStatusString(s_));    \
            goto fail;                                                                            \
        }                                                                                         \
    } while (0)

static int layout(cublasLtMatrixLayout_t *l, const pp_lt_layout *s, int batch, int64_t stride)
{
    PP_LT_SOFT(cublasLtMatrixLayoutCreate(l, lt_type(s->type), (uint64_t)s->rows, (uint64_t)s->cols, s->ld));
    if (batch > 1) {
        int32_t b = batch;
        PP_LT_SOFT(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b));
        PP_LT_SOFT(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                    sizeof stride));
    }
    return 0;
fail:
    return 1;
}

/* The plain-C image of a description, for gemm_rules.c. */
static pp_gemm_spec gemm_spec(const pp_gemm_desc *d)
{
    pp_gemm_spec s;
    memset(&s, 0, sizeof s);
    s.ta = d->ta != CUBLAS_OP_N, s.tb = d->tb != CUBLAS_OP_N;
    s.m = d->m, s.n = d->n, s.k = d->k;
    s.lda = d->lda, s.ldb = d->ldb, s.ldc = d->ldc, s.ldd = d->ldd;
    s.a_t = d->a_t, s.b_t = d->b_t, s.c_t = d->c_t;
    s.tf32 = d->tf32, s.fast_accum = d->fast_accum;
    s.scale_a = d->scale_a != NULL, s.scale_b = d->scale_b != NULL;
    s.epilogue = d->epilogue && d->epilogue != CUBLASLT_EPILOGUE_DEFAULT;
    s.has_c = d->C != NULL;
    s.beta = d->beta;
    return s;
}

int pp_gemm_plan_make(pp_probe_ctx *c, const pp_gemm_desc *d, int max_algos, pp_gemm_plan *p)
{
    cublasLtMatmulPreference_t pref = NULL;
    cublasComputeType_t ct = d->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    int32_t ta = d->ta, tb = d->tb;
    uint32_t epi = d->epilogue ? (uint32_t)d->epilogue : (uint32_t)CUBLASLT_EPILOGUE_DEFAULT;
    uint64_t ws = c->lt_ws_bytes;
    const pp_gemm_spec spec = gemm_spec(d);
    pp_lt_layout lay[4];
    int got = 0;
    memset(p, 0, sizeof *p);
    gemm_why[0] = 0;
    p->d = *d;
    if (max_algos > PP_GEMM_MAX_ALGOS) max_algos = PP_GEMM_MAX_ALGOS;
    if (max_algos < 1) max_algos = 1;
    /* the layouts, the C operand, and the rules cuBLASLt would otherwise answer with a bare
     * NOT_SUPPORTED (fp8: TN, 16-byte leading dimensions, no TF32, ...; gemm_rules.h) */
    if (pp_gemm_lt_layouts(&spec, lay, &p->c_arg, gemm_why, sizeof gemm_why)) goto fail;
    PP_LT_SOFT(cublasLtMatmulDescCreate(&p->op, ct, CUDA_R_32F));
    PP_LT_SOFT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    PP_LT_SOFT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (d->fast_accum) {
        int8_t fa = 1;
        PP_LT_SOFT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fa, sizeof fa));
    }
    /* per-tensor scales: device pointers to fp32 scalars (the compute type's), read at each run */
    if (d->scale_a)
        PP_LT_SOFT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &d->scale_a,
                                                  sizeof d->scale_a));
    if (d->scale_b)
        PP_LT_SOFT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &d->scale_b,
                                                  sizeof d->scale_b));
#if CUBLAS_VERSION >= 120800
    /* one fp32 scalar per tensor (CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, the default, said
     * explicitly as PyTorch's scaled_gemm does for tensor-wise scaling) */
    if (pp_gemm_spec_fp8(&spec)) {
        int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
        PP_LT_SOFT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof mode));
        PP_LT_SOFT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof mode));
    }
#endif
    if (epi != CUBLASLT_EPILOGUE_DEFAULT) {
        PP_LT_SOFT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        if (d->bias) {
            cudaDataType_t bt = lt_type(d->c_t);
            PP_LT_SOFT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &d->bias,
                                                      sizeof d->bias));
            PP_LT_SOFT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
        }
        if (d->aux) {
            PP_LT_SOFT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &d->aux,
                                                      sizeof d->aux));
            PP_LT_SOFT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &d->ld_aux,
                                                      sizeof d->ld_aux));
        }
    }
    if (layout(&p->la, &lay[0], d->batch, d->stride_a) || layout(&p->lb, &lay[1], d->batch, d->stride_b) ||
        layout(&p->lc, &lay[2], d->batch, d->stride_c) || layout(&p->ld, &lay[3], d->batch, d->stride_c))
        goto fail;
    PP_LT_SOFT(cublasLtMatmulPreferenceCreate(&pref));
    PP_LT_SOFT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    if (d->min_align_bytes > 0) {
        /* the heuristics assume 256-byte aligned operands unless told (cuBLASLt docs,
         * cublasLtMatmulPreferenceAttributes_t MIN_ALIGNMENT_*_BYTES) */
        uint32_t al = (uint32_t)d->min_align_bytes;
        PP_LT_SOFT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al, sizeof al));
        PP_LT_SOFT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al, sizeof al));
        PP_LT_SOFT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al, sizeof al));
        PP_LT_SOFT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al, sizeof al));
    }
    PP_LT_SOFT(cublasLtMatmulAlgoGetHeuristic(c->lt, p->op, p->la, p->lb, p->lc, p->ld, pref, max_algos, p->algos,
                                              &got));
    if (got < 1) {
        snprintf(gemm_why, sizeof gemm_why, "cuBLASLt heuristics returned no algorithm");
        goto fail;
    }
    p->n_algos = got;
    p->pick = 0;
    cublasLtMatmulPreferenceDestroy(pref);
    return 0;
fail:
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    pp_gemm_plan_free(p);
    return 1;
}

/* The C operand of one run: the caller's, else what the plan says (gemm_rules.h pp_c_arg). With
 * OTHER, A stands in: beta is 0, so C is never read (PyTorch's scaled_gemm passes its mat1 so). */
static const void *c_operand(const pp_gemm_plan *p, const void *A, const void *C, const void *D)
{
    if (C) return C;
    switch (p->c_arg) {
    case PP_C_ARG_OTHER: return A;
    case PP_C_ARG_NULL: return NULL;
    default: return D;
    }
}

static cublasStatus_t plan_matmul(pp_probe_ctx *c, const pp_gemm_plan *p, const void *A, const void *B, const void *C,
                                  void *D)
{
    const pp_gemm_desc *d = &p->d;
    return cublasLtMatmul(c->lt, p->op, &d->alpha, A, p->la, B, p->lb, &d->beta, c_operand(p, A, C, D), p->lc, D,
                          p->ld, &p->algos[p->pick].algo, c->lt_ws, c->lt_ws_bytes, c->stream);
}

int pp_gemm_plan_run_on(pp_probe_ctx *c, const pp_gemm_plan *p, const void *A, const void *B, const void *C, void *D)
{
    cublasStatus_t st = plan_matmul(c, p, A, B, C, D);
    if (st == CUBLAS_STATUS_SUCCESS) return 0;
    pp_cublas_fail(__FILE__, __LINE__, "cublasLtMatmul", st);
    return -1;
}

cublasStatus_t pp_gemm_plan_try(pp_probe_ctx *c, const pp_gemm_plan *p)
{
    return plan_matmul(c, p, p->d.A, p->d.B, p->d.C, p->d.D);
}

int pp_gemm_plan_run(pp_probe_ctx *c, const pp_gemm_plan *p)
{
    return pp_gemm_plan_run_on(c, p, p->d.A, p->d.B, p->d.C, p->d.D);
}

pp_gemm_desc pp_desc_bf16(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, const void *A,
                          int64_t lda, const void *B, int64_t ldb, void *D, int64_t ldd)
{
    pp_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.ta = ta;
    d.tb = tb;
    d.m = m;
    d.n = n;
    d.k = k;
    d.A = A;
    d.lda = lda;
    d.B = B;
    d.ldb = ldb;
    d.D = D;
    d.ldc = d.ldd = ldd;
    d.a_t = d.b_t = d.c_t = PP_BF16;
    d.alpha = 1;
    return d;
}

pp_gemm_desc pp_desc_fwd(const void *X, const void *W, void *Y, int64_t T, int64_t n, int64_t k)
{
    return pp_desc_bf16(CUBLAS_OP_T, CUBLAS_OP_N, n, T, k, W, k, X, k, Y, n);
}

pp_gemm_desc pp_desc_dgrad(const void *dY, const void *W, void *dX, int64_t T, int64_t n, int64_t k)
{
    return pp_desc_bf16(CUBLAS_OP_N, CUBLAS_OP_N, k, T, n, W, k, dY, n, dX, k);
}

pp_gemm_desc pp_desc_wgrad(const void *dY, const void *X, void *dW, int64_t T, int64_t n, int64_t k)
{
    return pp_desc_bf16(CUBLAS_OP_N, CUBLAS_OP_T, k, n, T, X, k, dY, n, dW, k);
}

/* ---------------------------------------------------------------- SwiGLU */

__device__ __forceinline__ float pp_silu_f(float x) { return x / (1.0f + __expf(-x)); }

__global__ void pp_swiglu_fwd_kernel(const __nv_bfloat16 *u, __nv_bfloat16 *a, int64_t T, int64_t f)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < T * f; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = i / f, j = i % f;
        float g = __bfloat162float(u[t * 2 * f + j]), up = __bfloat162float(u[t * 2 * f + f + j]);
        a[i] = __float2bfloat16_rn(pp_silu_f(g) * up);
    }
}

__global__ void pp_swiglu_bwd_kernel(const __nv_bfloat16 *da, const __nv_bfloat16 *u, __nv_bfloat16 *du, int64_t T,
                                     int64_t f)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < T * f; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = i / f, j = i % f;
        float g = __bfloat162float(u[t * 2 * f + j]), up = __bfloat162float(u[t * 2 * f + f + j]);
        float d = __bfloat162float(da[i]);
        float sg = 1.0f / (1.0f + __expf(-g));
        du[t * 2 * f + j] = __float2bfloat16_rn(d * up * sg * (1.0f + g * (1.0f - sg)));
        du[t * 2 * f + f + j] = __float2bfloat16_rn(d * g * sg);
    }
}

int pp_swiglu_fwd(pp_probe_ctx *c, const void *u, void *a, int64_t T, int64_t f)
{
    pp_swiglu_fwd_kernel<<<c->prop.multiProcessorCount * 8, 256, 0, c->stream>>>((const __nv_bfloat16 *)u,
                                                                                 (__nv_bfloat16 *)a, T, f);
    PP_LAUNCHED();
    return 0;
fail:
    return -1;
}

int pp_swiglu_bwd(pp_probe_ctx *c, const void *da, const void *u, void *du, int64_t T, int64_t f)
{
    pp_swiglu_bwd_kernel<<<c->prop.multiProcessorCount * 8, 256, 0, c->stream>>>(
        (const __nv_bfloat16 *)da, (const __nv_bfloat16 *)u, (__nv_bfloat16 *)du, T, f);
    PP_LAUNCHED();
    return 0;
fail:
    return -1;
}

/* ---------------------------------------------------------------- GEMM check */

__device__ __forceinline__ double pp_ld(const void *p, size_t i, int t)
{
    switch (t) {
    case PP_F32: return ((const float *)p)[i];
    case PP_BF16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case PP_F16: return __half2float(((const __half *)p)[i]);
    default: return (float)((const __nv_fp8_e4m3 *)p)[i];
    }
}

/* One warp per sample: lanes stride over k (coalesced rows), fp64 accumulation, warp reduction. */
__global__ void pp_check_linear_kernel(const void *X, int xt, const void *W, int wt, const void *D, int dt,
                                       int64_t m, int64_t n, int64_t k, int samples, unsigned long long seed,
                                       double *ref, double *got)
{
    int w = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32), lane = threadIdx.x % 32;
    if (w >= samples) return;
    unsigned long long z = pp_mix(seed + (unsigned long long)w);
    int64_t i = (int64_t)(z % (unsigned long long)m), j = (int64_t)((z >> 32) % (unsigned long long)n);
    double acc = 0;
    for (int64_t q = lane; q < k; q += 32) acc += pp_ld(X, (size_t)(i * k + q), xt) * pp_ld(W, (size_t)(j * k + q), wt);
    for (int off = 16; off; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) {
        ref[w] = acc;
        got[w] = pp_ld(D, (size_t)(i * n + j), dt);
    }
}

int pp_check_linear(pp_probe_ctx *c, const void *X, pp_elt xt, const void *W, pp_elt wt, const void *D, pp_elt dt,
                    int64_t m, int64_t n, int64_t k, int samples, double *rel_err)
{
    double *dev = NULL, *host = NULL;
    int rc = -1;
    *rel_err = INFINITY;
    host = (double *)malloc(2 * (size_t)samples * sizeof(double));
    if (!host) {
        pp_probe_error(__FILE__, __LINE__, "out of memory");
        goto fail;
    }
    PP_TRY(pp_alloc((void **)&dev, 2 * (size_t)samples * sizeof(double)));
    pp_check_linear_kernel<<<(samples * 32 + 255) / 256, 256, 0, c->stream>>>(
        X, xt, W, wt, D, dt, m, n, k, samples, 0x5EEDull + (unsigned long long)(m * 31 + n * 17 + k), dev,
        dev + samples);
    PP_LAUNCHED();
    PP_CU(cudaMemcpyAsync(host, dev, 2 * (size_t)samples * sizeof(double), cudaMemcpyDeviceToHost, c->stream));
    PP_CU(cudaStreamSynchronize(c->stream));
    *rel_err = pp_rel_l2(host + samples, host, (size_t)samples);
    rc = 0;
fail:
    cudaFree(dev);
    free(host);
    return rc;
}

int pp_to_host_floats(pp_probe_ctx *c, const void *p, size_t n, pp_elt t, float **out)
{
    double *tmp = (double *)malloc(n * sizeof(double));
    *out = (float *)malloc(n * sizeof(float));
    if (!tmp || !*out) {
        pp_probe_error(__FILE__, __LINE__, "out of memory");
        goto fail;
    }
    PP_TRY(pp_to_host(c, p, n, t, tmp));
    for (size_t i = 0; i < n; i++) (*out)[i] = (float)tmp[i];
    free(tmp);
    return 0;
fail:
    free(tmp);
    free(*out);
    *out = NULL;
    return -1;
}

int pp_check_worst(pp_probe_ctx *c, const void *dev, pp_elt t, const double *ref, size_t n, const char *what,
                   double *worst, char *which, size_t which_n)
{
    double *got = (double *)malloc(n * sizeof(double)), e;
    if (!got) {
        pp_probe_error(__FILE__, __LINE__, "out of memory");
        return -1;
    }
    if (pp_to_host(c, dev, n, t, got)) {
        free(got);
        return -1;
    }
    e = pp_rel_l2(got, ref, n);
    free(got);
    if (!(e <= *worst)) {
        *worst = e;
        snprintf(which, which_n, "%s", what);
    }
    return 0;
}

/* ---------------------------------------------------------------- device relative error */

__global__ void pp_rel_err_kernel(const void *a, const void *b, size_t n, int t, double *acc)
{
    double num = 0, den = 0, bad = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double x = pp_ld(a, i, t), y = pp_ld(b, i, t);
        if (!isfinite(x) || !isfinite(y)) bad += 1;
        else {
            num += (x - y) * (x - y);
            den += y * y;
        }
    }
    for (int off = 16; off; off >>= 1) {
        num += __shfl_down_sync(0xffffffffu, num, off);
        den += __shfl_down_sync(0xffffffffu, den, off);
        bad += __shfl_down_sync(0xffffffffu, bad, off);
    }
    if (threadIdx.x % 32 == 0) {
        atomicAdd(acc, num);
        atomicAdd(acc + 1, den);
        atomicAdd(acc + 2, bad);
    }
}

int pp_rel_err_dev(pp_probe_ctx *c, const void *a, const void *b, size_t n, pp_elt t, double *err)
{
    double *acc = NULL, h[3] = {0, 0, 0};
    *err = INFINITY;
    PP_TRY(pp_alloc((void **)&acc, 3 * sizeof(double)));
    PP_CU(cudaMemsetAsync(acc, 0, 3 * sizeof(double), c->stream));
    pp_rel_err_kernel<<<c->prop.multiProcessorCount * 4, 256, 0, c->stream>>>(a, b, n, (int)t, acc);
    PP_LAUNCHED();
    PP_CU(cudaMemcpyAsync(h, acc, sizeof h, cudaMemcpyDeviceToHost, c->stream));
    PP_CU(cudaStreamSynchronize(c->stream));
    cudaFree(acc);
    if (h[2] > 0) *err = INFINITY;
    else if (h[1] == 0) *err = h[0] == 0 ? 0 : INFINITY;
    else *err = sqrt(h[0] / h[1]);
    return 0;
fail:
    cudaFree(acc);
    return -1;
}
