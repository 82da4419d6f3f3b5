/* The probes' shared harness (CUDA side): device context, error macros, timing with CUDA events
 * (warm-up, median of repeats, L2 flushed between repeats), random inputs, cuBLASLt GEMM plans and
 * a sampled GEMM check. Internal to probes/; the C side sees only probe.h. */
#ifndef PP_HARNESS_CUH
#define PP_HARNESS_CUH

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include "probe.h"
#include "probe_config.h"

/* Every CUDA and library call is checked; the first failure is recorded (pp_probe_error) and the
 * function jumps to its one cleanup label `fail`. Locals are declared before the first macro. */
#define PP_CU(call)                                                                               \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess) {                                                                  \
            pp_cuda_fail(__FILE__, __LINE__, #call, e_);                                          \
            goto fail;                                                                            \
        }                                                                                         \
    } while (0)
#define PP_LAUNCHED() PP_CU(cudaGetLastError())
#define PP_LT(call)                                                                               \
    do {                                                                                          \
        cublasStatus_t s_ = (call);                                                               \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                        \
            pp_cublas_fail(__FILE__, __LINE__, #call, s_);                                        \
            goto fail;                                                                            \
        }                                                                                         \
    } while (0)
#define PP_TRY(call)                                                                              \
    do {                                                                                          \
        if ((call) != 0) goto fail;                                                               \
    } while (0)

/* Record a failed CUDA / cuBLASLt call: an allocation failure (cudaErrorMemoryAllocation,
 * CUBLAS_STATUS_ALLOC_FAILED) as an OOM (pp_probe_error_oom, the CUDA error state cleared), anything
 * else as a runtime failure. */
void pp_cuda_fail(const char *file, int line, const char *call, cudaError_t e);
void pp_cublas_fail(const char *file, int line, const char *call, cublasStatus_t s);

#define PP_MAX_REPS 64

/* Element types of probe buffers. */
typedef enum { PP_F32 = 0, PP_BF16, PP_F16, PP_E4M3 } pp_elt;
static inline size_t pp_elt_bytes(pp_elt t) { return t == PP_F32 ? 4 : t == PP_E4M3 ? 1 : 2; }

struct pp_probe_ctx {
    const pp_probe_opts *opt;
    pp_report *rep;
    int dev;
    cudaDeviceProp prop;
    cudaStream_t stream;
    cublasLtHandle_t lt;
    void *lt_ws;
    size_t lt_ws_bytes;
    void *flush;              /* read between timed repeats to evict L2 (clean lines: no write-back) */
    size_t flush_bytes;
    unsigned *flush_sink;
    cudaEvent_t ev[2 * PP_MAX_REPS];
    double target_ms;         /* work per measurement that pp_time_ms aims at (0: 150 ms) */
    int min_reps;             /* fewest timed repeats (0: 5) */
    double batch_us;          /* > 0: each timed repeat is enough back-to-back runs to last this long */
    void *dnn;                /* cudnnHandle_t, created on first use (attention.cu) */
    void *ballast;            /* --mem-limit-gib: the memory held back from the probes */
};

/* Enqueue one run of the measured work on c->stream. 0 or -1. */
typedef int (*pp_run_fn)(pp_probe_ctx *c, void *arg);

/* Warm up, pick a repeat count (about 150 ms of work, 5..64 repeats; --quick: 20 ms, 3..), time each
 * repeat with events (L2 flushed before each when flush), return the median in ms. */
int pp_time_ms(pp_probe_ctx *c, pp_run_fn fn, void *arg, bool flush, double *median_ms);
/* The same with a fixed number of repeats after one warm-up (autotuning candidates). */
int pp_time_ms_reps(pp_probe_ctx *c, pp_run_fn fn, void *arg, bool flush, int reps, double *median_ms);

/* Fill n elements with uniform random values in [-scale, scale) (a hash of seed and index: the same
 * on every run, different for every buffer given another seed). Never zeros: zeros hide unwritten
 * outputs and run faster than real data. */
int pp_fill(pp_probe_ctx *c, void *p, size_t n, pp_elt t, float scale, unsigned long long seed);
/* Fill with a constant (for LayerNorm gains: 1 + small noise is done with pp_fill_affine). */
int pp_fill_affine(pp_probe_ctx *c, void *p, size_t n, pp_elt t, float base, float scale, unsigned long long seed);
/* Normal(0, sigma) values (Box-Muller on the same hash), the distribution of torch.randn: the
 * power a GEMM draws, hence its clock, depends on the data, so the GEMM probe uses the anchors'. */
int pp_fill_normal(pp_probe_ctx *c, void *p, size_t n, pp_elt t, float sigma, unsigned long long seed);
/* Poison with 0xFF bytes (NaN in bf16/fp16/fp32) so that an unwritten output fails its check. */
int pp_poison(pp_probe_ctx *c, void *p, size_t bytes);
/* Copy n device elements of type t to host doubles. */
int pp_to_host(pp_probe_ctx *c, const void *p, size_t n, pp_elt t, double *out);
/* Device allocation that records the failure; *p is NULL on failure. A failure for want of memory
 * (or a buffer over $PARPLAN_PROBE_MAX_BYTES) is recorded as an OOM. */
int pp_alloc(void **p, size_t bytes);
/* Start counting what pp_alloc hands out for one size (what an OOM row says the size needed). */
void pp_alloc_mark(void);
/* What the size is known to need in all (buffers kept from a smaller size included), when the probe
 * can say: the OOM row reports the larger of this and what was handed out + the refused request. */
void pp_alloc_need(double bytes);
/* $PARPLAN_PROBE_MAX_BYTES for the buffers allocated from now on (0: no cap). */
void pp_alloc_cap(double bytes);
/* After a size failed: when the recorded error is an OOM, add its row ("OOM at this size", the
 * description printf-style) to the report, wait for stream s (may be 0), clear the CUDA and the
 * probe error state and return 0: the caller frees the size's buffers and goes on. Otherwise -1 (a
 * real failure: the caller stops). */
int pp_oom_recover(pp_report *r, cudaStream_t s, int probe, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---------------------------------------------------------------- cuBLASLt */

/* Column-major D[m x n] = alpha op(A)[m x k] op(B)[k x n] + beta C (+ epilogue), batched. */
typedef struct {
    cublasOperation_t ta, tb;
    int64_t m, n, k;
    const void *A, *B, *C;
    void *D;
    int64_t lda, ldb, ldc, ldd;
    pp_elt a_t, b_t, c_t;    /* D has C's type */
    bool tf32;               /* fp32 inputs on the tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32) */
    bool fast_accum;         /* fp8: CUBLASLT_MATMUL_DESC_FAST_ACCUM */
    float alpha, beta;
    int batch;               /* 0 or 1: not batched */
    int64_t stride_a, stride_b, stride_c;
    cublasLtEpilogue_t epilogue; /* CUBLASLT_EPILOGUE_DEFAULT when 0 */
    void *bias;              /* bias (input) or bias gradient (output), type c_t */
    void *aux;               /* GELU input (GELU_AUX_BIAS output, DGELU input), type c_t */
    int64_t ld_aux;
} pp_gemm_desc;

#define PP_GEMM_MAX_ALGOS 8
typedef struct {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    cublasLtMatmulHeuristicResult_t algos[PP_GEMM_MAX_ALGOS];
    int n_algos, pick;
    pp_gemm_desc d;
} pp_gemm_plan;

/* Ask the heuristics (workspace c->lt_ws_bytes) for up to max_algos algorithms. Returns 0 when at
 * least one was found, 1 when the library has none for this problem or refuses its description
 * (e.g. an epilogue it does not support here: callers fall back; the reason is in
 * pp_gemm_plan_why()). */
int pp_gemm_plan_make(pp_probe_ctx *c, const pp_gemm_desc *d, int max_algos, pp_gemm_plan *p);
const char *pp_gemm_plan_why(void);
int pp_gemm_plan_run(pp_probe_ctx *c, const pp_gemm_plan *p);
/* The same plan on other buffers of the same shapes and alignment (per-batch offsets). */
int pp_gemm_plan_run_on(pp_probe_ctx *c, const pp_gemm_plan *p, const void *A, const void *B, const void *C, void *D);
void pp_gemm_plan_free(pp_gemm_plan *p); /* accepts zeroed plans */

/* Sampled check of a row-major GEMM D[i, j] = sum_k X[i, k] W[j, k] (the layout of nn.Linear:
 * X [m, k], W [n, k], D [m, n], leading dimension k, k and n): `samples` random (i, j) pairs in fp64,
 * relative L2 error over them; a non-finite output gives inf. */
int pp_check_linear(pp_probe_ctx *c, const void *X, pp_elt xt, const void *W, pp_elt wt, const void *D, pp_elt dt,
                    int64_t m, int64_t n, int64_t k, int samples, double *rel_err);

/* Relative L2 error sqrt(sum (a-b)^2 / sum b^2) of two device arrays of type t (fp64 sums on the
 * device); inf when a value is not finite. */
int pp_rel_err_dev(pp_probe_ctx *c, const void *a, const void *b, size_t n, pp_elt t, double *err);

/* Milliseconds of wall time since an arbitrary origin (progress lines). */
double pp_wall_s(void);

#endif
