/* harness.cu: device setup, allocation and out-of-memory handling, busy GPUs, random inputs,
 * timing (L2 flush, repeats, the parts of a layer) and the probe context. The GEMM plans, SwiGLU
 * and the checks on the device are harness_ops.cu. */
#include "harness.cuh"

#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* ---------------------------------------------------------------- allocation and OOM */

static double alloc_cap_bytes;   /* $PARPLAN_PROBE_MAX_BYTES (0: none), set by pp_probe_open / nccl */
static double alloc_since_mark;  /* bytes pp_alloc handed out since pp_alloc_mark */
static double alloc_need_floor;  /* what the size is known to need (pp_alloc_need), 0 unknown */

static double free_bytes_now(void)
{
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return (double)fr;
}

void pp_cuda_fail(const char *file, int line, const char *call, cudaError_t e)
{
    if (e == cudaErrorMemoryAllocation) {
        /* not sticky, but cudaGetLastError() would return it at the next launch check: clear it */
        cudaGetLastError();
        pp_probe_error_oom(file, line, 0, free_bytes_now(), false, "%s failed: %s", call, cudaGetErrorString(e));
    } else {
        pp_probe_error(file, line, "%s failed: %s", call, cudaGetErrorString(e));
    }
}

void pp_cublas_fail(const char *file, int line, const char *call, cublasStatus_t st)
{
    if (st == CUBLAS_STATUS_ALLOC_FAILED) {
        cudaGetLastError();
        pp_probe_error_oom(file, line, 0, free_bytes_now(), false, "%s failed: %s", call, cublasLtGetStatusString(st));
    } else {
        pp_probe_error(file, line, "%s failed: %s", call, cublasLtGetStatusString(st));
    }
}

void pp_alloc_mark(void) { alloc_since_mark = alloc_need_floor = 0; }
void pp_alloc_need(double bytes) { alloc_need_floor = bytes; }
void pp_alloc_cap(double bytes) { alloc_cap_bytes = bytes > 0 ? bytes : 0; }

int pp_alloc(void **p, size_t bytes)
{
    *p = NULL;
    if (alloc_cap_bytes > 0 && (double)bytes > alloc_cap_bytes) {
        pp_probe_error_oom(__FILE__, __LINE__, (double)bytes, free_bytes_now(), true,
                           "a %.1f MiB buffer is over PARPLAN_PROBE_MAX_BYTES (%.0f bytes)", (double)bytes / 1048576.0,
                           alloc_cap_bytes);
        return -1;
    }
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 16);
    if (e != cudaSuccess) {
        *p = NULL;
        cudaGetLastError(); /* clear it (see pp_cuda_fail) */
        if (e == cudaErrorMemoryAllocation)
            pp_probe_error_oom(__FILE__, __LINE__, (double)bytes, free_bytes_now(), false, "cudaMalloc(%.3g GiB) failed: %s",
                               (double)bytes / 1073741824.0, cudaGetErrorString(e));
        else
            pp_probe_error(__FILE__, __LINE__, "cudaMalloc(%.3g GiB) failed: %s", (double)bytes / 1073741824.0,
                           cudaGetErrorString(e));
        return -1;
    }
    alloc_since_mark += (double)bytes;
    return 0;
}

int pp_oom_recover(pp_report *r, cudaStream_t s, int probe, const char *fmt, ...)
{
    double req = 0, fr = -1;
    bool capped = false;
    pp_oom_row row;
    va_list ap;
    if (!pp_probe_error_is_oom(&req, &fr, &capped)) return -1;
    /* what the size queued before the failure must finish before its buffers are freed */
    if (s) cudaStreamSynchronize(s);
    cudaGetLastError();
    memset(&row, 0, sizeof row);
    row.probe = probe;
    va_start(ap, fmt);
    vsnprintf(row.what, sizeof row.what, fmt, ap);
    va_end(ap);
    row.request_bytes = req;
    row.need_bytes = alloc_since_mark + req;
    if (row.need_bytes < alloc_need_floor) row.need_bytes = alloc_need_floor;
    row.free_bytes = fr;
    row.capped = capped;
    pp_report_add_oom(r, &row);
    pp_probe_error_clear();
    return 0;
}

/* ---------------------------------------------------------------- busy GPUs (NVML, optional) */

/* NVML through dlopen (the driver ships libnvidia-ml.so.1; no header or link dependency): the free
 * memory, compute mode and processes of a GPU whose context cannot be created. Types as nvml.h
 * declares them (nvmlMemory_t, nvmlProcessInfo_v2_t). */
typedef struct { unsigned long long total, free, used; } pp_nvml_mem;
typedef struct { unsigned int pid; unsigned long long used; unsigned int gi, ci; } pp_nvml_proc;

/* Returns the number of holders (other processes; h up to cap) or -1 when NVML cannot say. */
static int nvml_info(int dev, double *free_b, double *total_b, int *mode, pp_gpu_holder *h, int cap)
{
    typedef int (*init_t)(void);
    typedef int (*byid_t)(const char *, void **);
    typedef int (*mem_t)(void *, pp_nvml_mem *);
    typedef int (*mode_t_)(void *, int *);
    typedef int (*procs_t)(void *, unsigned int *, pp_nvml_proc *);
    char bus[32];
    void *lib = NULL, *d = NULL;
    int n = -1;
    *mode = -1;
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, dev) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    lib = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return -1;
    init_t init = (init_t)dlsym(lib, "nvmlInit_v2");
    init_t shut = (init_t)dlsym(lib, "nvmlShutdown");
    byid_t byid = (byid_t)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    mem_t mem = (mem_t)dlsym(lib, "nvmlDeviceGetMemoryInfo");
    mode_t_ cmode = (mode_t_)dlsym(lib, "nvmlDeviceGetComputeMode");
    procs_t procs = (procs_t)dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (!procs) procs = (procs_t)dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v2");
    if (!init || !shut || !byid || init() != 0) goto out;
    if (byid(bus, &d) == 0) {
        pp_nvml_mem m;
        pp_nvml_proc pr[64];
        unsigned int k = 64;
        if (mem && mem(d, &m) == 0) {
            *free_b = (double)m.free;
            *total_b = (double)m.total;
        }
        if (cmode) cmode(d, mode);
        if (procs && procs(d, &k, pr) == 0) {
            n = 0;
            for (unsigned int i = 0; i < k && n < cap; i++) {
                if (pr[i].pid == (unsigned)getpid()) continue;
                h[n].pid = pr[i].pid;
                h[n].used_bytes = pr[i].used == ~0ull ? -1 : (double)pr[i].used;
                h[n].name[0] = 0;
                char path[64];
                snprintf(path, sizeof path, "/proc/%u/comm", pr[i].pid);
                FILE *f = fopen(path, "r");
                if (f) {
                    if (fgets(h[n].name, sizeof h[n].name, f)) h[n].name[strcspn(h[n].name, "\n")] = 0;
                    fclose(f);
                }
                n++;
            }
        }
    }
    shut();
out:
    dlclose(lib);
    return n;
}

int pp_gpu_claim(int dev, double need_bytes)
{
    cudaDeviceProp prop;
    char name[256] = "", reason[256] = "", line[1024];
    double fr = -1, tot = -1;
    int mode = -1, nh = -1;
    pp_gpu_holder h[8];
    cudaError_t e = cudaGetDeviceProperties(&prop, dev);
    if (e == cudaSuccess) snprintf(name, sizeof name, "%s", prop.name);
    else cudaGetLastError();
    /* the primary context: this is where an exclusive-process GPU held by another process, or one
     * without memory left for a context, fails */
    e = cudaSetDevice(dev);
    if (e == cudaSuccess) e = cudaFree(0);
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(reason, sizeof reason, "cannot create a CUDA context: %s", cudaGetErrorString(e));
        nh = nvml_info(dev, &fr, &tot, &mode, h, 8);
        pp_fmt_gpu_busy(line, sizeof line, dev, name, reason, fr, tot, 0, mode, h, nh);
        pp_probe_error(__FILE__, __LINE__, "%s", line);
        return -1;
    }
    {
        size_t f = 0, t = 0;
        e = cudaMemGetInfo(&f, &t);
        if (e != cudaSuccess) {
            pp_cuda_fail(__FILE__, __LINE__, "cudaMemGetInfo", e);
            return -1;
        }
        fr = (double)f;
        tot = (double)t;
    }
    if (fr < need_bytes) {
        double f2 = -1, t2 = -1;
        nh = nvml_info(dev, &f2, &t2, &mode, h, 8);
        pp_fmt_gpu_busy(line, sizeof line, dev, name, "too little free memory", fr, tot, need_bytes, mode, h, nh);
        pp_probe_error(__FILE__, __LINE__, "%s", line);
        return -1;
    }
    return 0;
}

int pp_ballast_take(int dev, double limit_bytes, void **ballast, pp_report *r)
{
    size_t fr = 0, tot = 0;
    *ballast = NULL;
    PP_CU(cudaSetDevice(dev));
    PP_CU(cudaMemGetInfo(&fr, &tot));
    if ((double)fr > limit_bytes) {
        /* all but the limit; the allocator's granularity (2 MiB pages, its own bookkeeping) may refuse
         * the exact figure: step down 64 MiB at a time */
        double want = (double)fr - limit_bytes;
        for (int i = 0; i < 32 && want > 0 && !*ballast; i++, want -= 64.0 * 1048576.0) {
            if (cudaMalloc(ballast, (size_t)want) != cudaSuccess) {
                *ballast = NULL;
                cudaGetLastError();
            }
        }
        if (!*ballast) {
            pp_probe_error(__FILE__, __LINE__, "--mem-limit-gib: could not hold back %.0f MiB of GPU %d",
                           ((double)fr - limit_bytes) / 1048576.0, dev);
            return -1;
        }
        PP_CU(cudaMemGetInfo(&fr, &tot));
    }
    if (r)
        pp_report_note(r, "--mem-limit-gib %.3g: %.0f MiB of GPU %d left to the probes (a test of OOM handling: "
                          "these figures are not a profile)",
                       limit_bytes / 1073741824.0, (double)fr / 1048576.0, dev);
    return 0;
fail:
    return -1;
}

/* ---------------------------------------------------------------- random inputs */

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
    /* busy (exclusive-process and held, or too little free memory): one line naming it */
    PP_TRY(pp_gpu_claim(c->dev, PP_PROBE_MIN_FREE_BYTES));
    PP_CU(cudaGetDeviceProperties(&c->prop, c->dev));
    PP_CU(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    for (int i = 0; i < 2 * PP_MAX_REPS; i++) PP_CU(cudaEventCreate(&c->ev[i]));
    PP_LT(cublasLtCreate(&c->lt));
    /* 32 MiB as PyTorch gives cuBLASLt on Hopper (CUBLASLT_WORKSPACE_SIZE default since 2.3) */
    c->lt_ws_bytes = 32u << 20;
    alloc_cap_bytes = 0; /* the set-up is not a size: the test cap starts after it */
    PP_TRY(pp_alloc(&c->lt_ws, c->lt_ws_bytes));
    /* twice the L2, at least 64 MiB */
    c->flush_bytes = (size_t)c->prop.l2CacheSize * 2;
    if (c->flush_bytes < (64u << 20)) c->flush_bytes = 64u << 20;
    c->flush_bytes &= ~(size_t)15;
    PP_TRY(pp_alloc(&c->flush, c->flush_bytes));
    PP_TRY(pp_alloc((void **)&c->flush_sink, 16));
    PP_CU(cudaMemsetAsync(c->flush, 0, c->flush_bytes, c->stream));
    PP_CU(cudaStreamSynchronize(c->stream));
    if (opt->mem_limit_bytes > 0) PP_TRY(pp_ballast_take(c->dev, opt->mem_limit_bytes, &c->ballast, r));
    alloc_cap_bytes = opt->max_alloc_bytes;
    if (opt->max_alloc_bytes > 0)
        pp_report_note(r, "PARPLAN_PROBE_MAX_BYTES=%.0f: larger buffers fail as out of memory (a test of OOM "
                          "handling: these figures are not a profile)",
                       opt->max_alloc_bytes);

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
    cudaFree(c->ballast);
    if (c->stream) cudaStreamDestroy(c->stream);
    free(c);
}

int pp_dev_list_alloc(pp_dev_list *l, void **p, size_t bytes)
{
    *p = NULL;
    if (l->n >= PP_DEV_LIST_MAX) {
        pp_probe_error(__FILE__, __LINE__, "more than %d buffers in one layer", PP_DEV_LIST_MAX);
        return -1;
    }
    if (pp_alloc(p, bytes)) return -1;
    l->p[l->n++] = *p;
    return 0;
}

void pp_dev_list_free(pp_dev_list *l)
{
    for (int i = 0; i < l->n; i++) cudaFree(l->p[i]);
    l->n = 0;
}

/* ---------------------------------------------------------------- parts of a layer */

#define PP_PARTS_REPS 9
#define PP_PARTS_MARKS 2048 /* marks in one run: a loop over 256 local experts marks ~1600 */
static struct {
    bool on, counting, overflow;
    int rep, n_marks[PP_PARTS_REPS];
    int *part;          /* [reps][PP_PARTS_MARKS + 1] */
    cudaEvent_t *ev;    /* [reps][PP_PARTS_MARKS + 1] */
} parts;

void pp_parts_mark(pp_probe_ctx *c, int part)
{
    const int r = parts.rep;
    if (!parts.on) return;
    if (parts.n_marks[r] >= PP_PARTS_MARKS) {
        parts.overflow = true;
        return;
    }
    const int k = ++parts.n_marks[r];
    if (parts.counting) return;
    parts.part[r * (PP_PARTS_MARKS + 1) + k] = part;
    cudaEventRecord(parts.ev[r * (PP_PARTS_MARKS + 1) + k], c->stream);
}

int pp_parts_time(pp_probe_ctx *c, pp_run_fn fn, void *arg, int n_parts, int reps, double *part_ms)
{
    const int W = PP_PARTS_MARKS + 1;
    double t[PP_PARTS_REPS];
    float ms = 0;
    int rc = -1, n_ev = 0, marks = 0;
    if (reps > PP_PARTS_REPS) reps = PP_PARTS_REPS;
    if (reps < 1) reps = 1;
    if (n_parts > PP_PARTS_MAX) n_parts = PP_PARTS_MAX;
    memset(&parts, 0, sizeof parts);
    /* one untimed run counts the marks: events for those only */
    parts.ev = (cudaEvent_t *)calloc((size_t)(reps * W), sizeof *parts.ev);
    parts.part = (int *)calloc((size_t)(reps * W), sizeof *parts.part);
    if (!parts.ev || !parts.part) {
        pp_probe_error(__FILE__, __LINE__, "out of memory");
        goto fail;
    }
    parts.on = parts.counting = true;
    PP_TRY(fn(c, arg)); /* warm, counting the marks (no events) */
    parts.on = parts.counting = false;
    marks = parts.n_marks[0];
    PP_CU(cudaStreamSynchronize(c->stream));
    if (parts.overflow) {
        rc = 1;
        goto fail;
    }
    for (int r = 0; r < reps; r++)
        for (int k = 0; k <= marks; k++) {
            PP_CU(cudaEventCreate(&parts.ev[r * W + k]));
            n_ev++;
        }
    memset(parts.n_marks, 0, sizeof parts.n_marks);
    parts.on = true;
    for (int r = 0; r < reps; r++) {
        parts.rep = r;
        PP_CU(cudaEventRecord(parts.ev[r * W], c->stream));
        PP_TRY(fn(c, arg));
    }
    parts.on = false;
    PP_CU(cudaStreamSynchronize(c->stream));
    for (int p = 0; p < n_parts; p++) {
        for (int r = 0; r < reps; r++) {
            t[r] = 0;
            for (int k = 1; k <= parts.n_marks[r] && k <= marks; k++) {
                if (parts.part[r * W + k] != p) continue;
                PP_CU(cudaEventElapsedTime(&ms, parts.ev[r * W + k - 1], parts.ev[r * W + k]));
                t[r] += ms;
            }
        }
        qsort(t, (size_t)reps, sizeof t[0], cmp_double);
        part_ms[p] = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    }
    rc = 0;
fail:
    parts.on = false;
    if (parts.ev)
        for (int i = 0; i < reps * W && n_ev > 0; i++)
            if (parts.ev[i]) {
                cudaEventDestroy(parts.ev[i]);
                n_ev--;
            }
    free(parts.ev);
    free(parts.part);
    memset(&parts, 0, sizeof parts);
    return rc;
}

