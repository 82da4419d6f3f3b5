/* harness.cu: device setup, timing, L2 flush, random inputs, cuBLASLt plans, GEMM checks. */
#include "harness.cuh"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if PP_HAVE_CUDNN
#include <cudnn.h>
#endif
#if PP_HAVE_NCCL
#include <nccl.h>
#endif

double pp_wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int pp_gpu_count(char *why, size_t n)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        /* without a driver the runtime says "driver version is insufficient": say what is missing */
        void *drv = e == cudaErrorInsufficientDriver ? dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) : NULL;
        if (e == cudaErrorInsufficientDriver && !drv)
            snprintf(why, n, "no NVIDIA driver is installed (libcuda.so.1 not found)");
        else
            snprintf(why, n, "%s", cudaGetErrorString(e));
        if (drv) dlclose(drv);
        return 0;
    }
    if (count < 1) snprintf(why, n, "the CUDA driver reports no device");
    return count;
}

int pp_alloc(void **p, size_t bytes)
{
    *p = NULL;
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 16);
    if (e != cudaSuccess) {
        *p = NULL;
        pp_probe_error(__FILE__, __LINE__, "cudaMalloc(%.3g GiB) failed: %s", (double)bytes / 1073741824.0,
                       cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- random inputs */

/* splitmix64 (Steele, Lea, Flood 2014): a good 64-bit mix of (seed, index). */
__device__ __forceinline__ unsigned long long pp_mix(unsigned long long z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* normal: base ignored, scale = sigma */
__global__ void pp_fill_kernel(void *p, size_t n, int t, float base, float scale, unsigned long long seed, int normal)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned long long z = pp_mix(seed * 0x632BE59BD9B4E019ull + i);
        float u = (float)(z >> 40) * (1.0f / 16777216.0f); /* [0, 1) */
        float v = base + scale * (2.0f * u - 1.0f);
        if (normal) {
            float u1 = ((float)((z >> 8) & 0xFFFFFFu) + 0.5f) * (1.0f / 16777216.0f); /* (0, 1) */
            v = scale * sqrtf(-2.0f * logf(u1)) * __cosf(6.2831853f * u);
        }
        switch (t) {
        case PP_F32: ((float *)p)[i] = v; break;
        case PP_BF16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v); break;
        case PP_F16: ((__half *)p)[i] = __float2half_rn(v); break;
        default: ((__nv_fp8_e4m3 *)p)[i] = __nv_fp8_e4m3(v); break;
        }
    }
}

static int launch_fill(pp_probe_ctx *c, void *p, size_t n, pp_elt t, float base, float scale,
                       unsigned long long seed, int normal)
{
    int blocks = c->prop.multiProcessorCount * 8;
    pp_fill_kernel<<<blocks, 256, 0, c->stream>>>(p, n, (int)t, base, scale, seed, normal);
    PP_LAUNCHED();
    return 0;
fail:
    return -1;
}

int pp_fill(pp_probe_ctx *c, void *p, size_t n, pp_elt t, float scale, unsigned long long seed)
{
    return launch_fill(c, p, n, t, 0.0f, scale, seed, 0);
}

int pp_fill_normal(pp_probe_ctx *c, void *p, size_t n, pp_elt t, float sigma, unsigned long long seed)
{
    return launch_fill(c, p, n, t, 0.0f, sigma, seed, 1);
}

int pp_fill_affine(pp_probe_ctx *c, void *p, size_t n, pp_elt t, float base, float scale, unsigned long long seed)
{
    return launch_fill(c, p, n, t, base, scale, seed, 0);
}

int pp_poison(pp_probe_ctx *c, void *p, size_t bytes)
{
    PP_CU(cudaMemsetAsync(p, 0xFF, bytes, c->stream));
    return 0;
fail:
    return -1;
}

__global__ void pp_to_double_kernel(const void *p, size_t n, int t, double *out)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        switch (t) {
        case PP_F32: out[i] = ((const float *)p)[i]; break;
        case PP_BF16: out[i] = __bfloat162float(((const __nv_bfloat16 *)p)[i]); break;
        case PP_F16: out[i] = __half2float(((const __half *)p)[i]); break;
        default: out[i] = (float)((const __nv_fp8_e4m3 *)p)[i]; break;
        }
    }
}

int pp_to_host(pp_probe_ctx *c, const void *p, size_t n, pp_elt t, double *out)
{
    double *tmp = NULL;
    PP_TRY(pp_alloc((void **)&tmp, n * sizeof(double)));
    pp_to_double_kernel<<<c->prop.multiProcessorCount * 4, 256, 0, c->stream>>>(p, n, (int)t, tmp);
    PP_LAUNCHED();
    PP_CU(cudaMemcpyAsync(out, tmp, n * sizeof(double), cudaMemcpyDeviceToHost, c->stream));
    PP_CU(cudaStreamSynchronize(c->stream));
    cudaFree(tmp);
    return 0;
fail:
    cudaFree(tmp);
    return -1;
}

/* ---------------------------------------------------------------- timing */

/* Reads the whole flush buffer (16-byte loads): the L2 ends up holding clean lines of it, so the
 * next timed run starts cold and pays no write-back. The store never happens (the buffer is
 * zeroed) but keeps the loads alive. */
__global__ void pp_flush_kernel(const uint4 *p, size_t n, unsigned *sink)
{
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9E3779B9u) *sink = acc;
}

static int flush_l2(pp_probe_ctx *c)
{
    pp_flush_kernel<<<c->prop.multiProcessorCount * 4, 512, 0, c->stream>>>((const uint4 *)c->flush,
                                                                              c->flush_bytes / 16, c->flush_sink);
    PP_LAUNCHED();
    return 0;
fail:
    return -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int time_reps(pp_probe_ctx *c, pp_run_fn fn, void *arg, bool flush, int reps, int batch, double *median_ms)
{
    double t[PP_MAX_REPS];
    float ms = 0;
    if (reps > PP_MAX_REPS) reps = PP_MAX_REPS;
    if (batch < 1) batch = 1;
    for (int i = 0; i < reps; i++) {
        if (flush) PP_TRY(flush_l2(c));
        PP_CU(cudaEventRecord(c->ev[2 * i], c->stream));
        for (int b = 0; b < batch; b++) PP_TRY(fn(c, arg));
        PP_CU(cudaEventRecord(c->ev[2 * i + 1], c->stream));
    }
    PP_CU(cudaStreamSynchronize(c->stream));
    for (int i = 0; i < reps; i++) {
        PP_CU(cudaEventElapsedTime(&ms, c->ev[2 * i], c->ev[2 * i + 1]));
        t[i] = ms / batch;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    *median_ms = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    return 0;
fail:
    return -1;
}

int pp_time_ms_reps(pp_probe_ctx *c, pp_run_fn fn, void *arg, bool flush, int reps, double *median_ms)
{
    *median_ms = 0;
    PP_TRY(fn(c, arg));
    return time_reps(c, fn, arg, flush, reps < 1 ? 1 : reps, 1, median_ms);
fail:
    return -1;
}

int pp_time_ms(pp_probe_ctx *c, pp_run_fn fn, void *arg, bool flush, double *median_ms)
{
    float ms = 0;
    int reps = 0, batch = 1, min_reps = c->opt->quick ? 3 : (c->min_reps > 0 ? c->min_reps : 5);
    double target_ms = c->opt->quick ? 20 : (c->target_ms > 0 ? c->target_ms : 150);
    *median_ms = 0;
    /* warm-up: module load, heuristics caches, clocks ramping up (two runs, then one timed for the
     * repeat count, as the anchors' three warm-ups) */
    PP_TRY(fn(c, arg));
    PP_TRY(fn(c, arg));
    PP_CU(cudaStreamSynchronize(c->stream));
    PP_CU(cudaEventRecord(c->ev[0], c->stream));
    PP_TRY(fn(c, arg));
    PP_CU(cudaEventRecord(c->ev[1], c->stream));
    PP_CU(cudaEventSynchronize(c->ev[1]));
    PP_CU(cudaEventElapsedTime(&ms, c->ev[0], c->ev[1]));
    reps = ms > 0 ? (int)ceil(target_ms / ms) : PP_MAX_REPS;
    if (reps < min_reps) reps = min_reps;
    if (reps > PP_MAX_REPS) reps = PP_MAX_REPS;
    if (ms < 1.0) /* short work: a few more warm-ups so that the clocks are up */
        for (int i = 0; i < 3; i++) PP_TRY(fn(c, arg));
    /* short kernels: time back-to-back runs as a training step issues them, not each one between
     * two events (the event pair and a starved launch queue added ~10 us to a 70 us GEMM) */
    if (c->batch_us > 0 && ms > 0 && !flush) {
        batch = (int)ceil(c->batch_us * 1e-3 / ms);
        if (batch > 64) batch = 64;
        if (batch < 1) batch = 1;
        reps = (int)ceil(target_ms / (ms * batch));
        if (reps < min_reps) reps = min_reps;
        if (reps > PP_MAX_REPS) reps = PP_MAX_REPS;
    }
    return time_reps(c, fn, arg, flush, reps, batch, median_ms);
fail:
    return -1;
}

/* ---------------------------------------------------------------- context */

int pp_probe_open(pp_probe_ctx **out, const pp_probe_opts *opt, pp_report *r)
{
    pp_probe_ctx *c = (pp_probe_ctx *)calloc(1, sizeof *c);
    int ver = 0;
    time_t now = time(NULL);
    struct tm tmv;
    *out = NULL;
    if (!c) {
        pp_probe_error(__FILE__, __LINE__, "out of memory");
        return -1;
    }
    c->opt = opt;
    c->rep = r;
    c->dev = opt->device;
    PP_CU(cudaSetDevice(c->dev));
    PP_CU(cudaGetDeviceProperties(&c->prop, c->dev));
    PP_CU(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    for (int i = 0; i < 2 * PP_MAX_REPS; i++) PP_CU(cudaEventCreate(&c->ev[i]));
    PP_LT(cublasLtCreate(&c->lt));
    /* 32 MiB as PyTorch gives cuBLASLt on Hopper (CUBLASLT_WORKSPACE_SIZE default since 2.3) */
    c->lt_ws_bytes = 32u << 20;
    PP_TRY(pp_alloc(&c->lt_ws, c->lt_ws_bytes));
    /* twice the L2, at least 64 MiB */
    c->flush_bytes = (size_t)c->prop.l2CacheSize * 2;
    if (c->flush_bytes < (64u << 20)) c->flush_bytes = 64u << 20;
    c->flush_bytes &= ~(size_t)15;
    PP_TRY(pp_alloc(&c->flush, c->flush_bytes));
    PP_TRY(pp_alloc((void **)&c->flush_sink, 16));
    PP_CU(cudaMemsetAsync(c->flush, 0, c->flush_bytes, c->stream));
    PP_CU(cudaStreamSynchronize(c->stream));

    snprintf(r->gpu, sizeof r->gpu, "%s", c->prop.name);
    gmtime_r(&now, &tmv);
    strftime(r->measured, sizeof r->measured, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    r->sms = c->prop.multiProcessorCount;
    r->cc_major = c->prop.major;
    r->cc_minor = c->prop.minor;
    r->memory_bytes = (double)c->prop.totalGlobalMem;
    r->l2_bytes = (double)c->prop.l2CacheSize;
    cudaGetDeviceCount(&r->gpu_count);
    cudaDriverGetVersion(&ver);
    r->driver_version = ver;
    cudaRuntimeGetVersion(&ver);
    r->runtime_version = ver;
    r->cublaslt_version = (int)cublasLtGetVersion();
#if PP_HAVE_CUDNN
    r->cudnn_version = (int)cudnnGetVersion();
#endif
#if PP_HAVE_NCCL
    ncclGetVersion(&ver);
    r->nccl_version = ver;
#endif
    *out = c;
    return 0;
fail:
    pp_probe_close(c);
    return -1;
}

void pp_probe_close(pp_probe_ctx *c)
{
    if (!c) return;
    if (c->stream) cudaStreamSynchronize(c->stream);
#if PP_HAVE_CUDNN
    if (c->dnn) cudnnDestroy((cudnnHandle_t)c->dnn);
#endif
    for (int i = 0; i < 2 * PP_MAX_REPS; i++)
        if (c->ev[i]) cudaEventDestroy(c->ev[i]);
    if (c->lt) cublasLtDestroy(c->lt);
    cudaFree(c->lt_ws);
    cudaFree(c->flush);
    cudaFree(c->flush_sink);
    if (c->stream) cudaStreamDestroy(c->stream);
    free(c);
}

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

static int layout(cublasLtMatrixLayout_t *l, pp_elt t, int64_t rows, int64_t cols, int64_t ld, int batch,
                  int64_t stride)
{
    PP_LT_SOFT(cublasLtMatrixLayoutCreate(l, lt_type(t), (uint64_t)rows, (uint64_t)cols, ld));
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

int pp_gemm_plan_make(pp_probe_ctx *c, const pp_gemm_desc *d, int max_algos, pp_gemm_plan *p)
{
    cublasLtMatmulPreference_t pref = NULL;
    cublasComputeType_t ct = d->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    int32_t ta = d->ta, tb = d->tb;
    uint32_t epi = d->epilogue ? (uint32_t)d->epilogue : (uint32_t)CUBLASLT_EPILOGUE_DEFAULT;
    uint64_t ws = c->lt_ws_bytes;
    int got = 0;
    memset(p, 0, sizeof *p);
    gemm_why[0] = 0;
    p->d = *d;
    if (max_algos > PP_GEMM_MAX_ALGOS) max_algos = PP_GEMM_MAX_ALGOS;
    if (max_algos < 1) max_algos = 1;
    PP_LT_SOFT(cublasLtMatmulDescCreate(&p->op, ct, CUDA_R_32F));
    PP_LT_SOFT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    PP_LT_SOFT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (d->fast_accum) {
        int8_t fa = 1;
        PP_LT_SOFT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fa, sizeof fa));
    }
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
    {
        int64_t ar = d->ta == CUBLAS_OP_N ? d->m : d->k, ac = d->ta == CUBLAS_OP_N ? d->k : d->m;
        int64_t br = d->tb == CUBLAS_OP_N ? d->k : d->n, bc = d->tb == CUBLAS_OP_N ? d->n : d->k;
        if (layout(&p->la, d->a_t, ar, ac, d->lda, d->batch, d->stride_a) ||
            layout(&p->lb, d->b_t, br, bc, d->ldb, d->batch, d->stride_b) ||
            layout(&p->lc, d->c_t, d->m, d->n, d->ldc, d->batch, d->stride_c) ||
            layout(&p->ld, d->c_t, d->m, d->n, d->ldd, d->batch, d->stride_c))
            goto fail;
    }
    PP_LT_SOFT(cublasLtMatmulPreferenceCreate(&pref));
    PP_LT_SOFT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
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

int pp_gemm_plan_run_on(pp_probe_ctx *c, const pp_gemm_plan *p, const void *A, const void *B, const void *C, void *D)
{
    const pp_gemm_desc *d = &p->d;
    PP_LT(cublasLtMatmul(c->lt, p->op, &d->alpha, A, p->la, B, p->lb, &d->beta, C ? C : D, p->lc, D, p->ld,
                         &p->algos[p->pick].algo, c->lt_ws, c->lt_ws_bytes, c->stream));
    return 0;
fail:
    return -1;
}

int pp_gemm_plan_run(pp_probe_ctx *c, const pp_gemm_plan *p)
{
    return pp_gemm_plan_run_on(c, p, p->d.A, p->d.B, p->d.C, p->d.D);
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
