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

#include "gemm_rules.h"
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

/* 16-byte vectors of 8 bf16 (rows of a multiple of 8 elements) to and from fp32. */
__device__ __forceinline__ void pp_unpack8(uint4 u, float *f)
{
    const __nv_bfloat162 *h = (const __nv_bfloat162 *)&u;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 v = __bfloat1622float2(h[i]);
        f[2 * i] = v.x;
        f[2 * i + 1] = v.y;
    }
}

__device__ __forceinline__ uint4 pp_pack8(const float *f)
{
    uint4 u;
    __nv_bfloat162 *h = (__nv_bfloat162 *)&u;
#pragma unroll
    for (int i = 0; i < 4; i++) h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
    return u;
}

/* splitmix64 (Steele, Lea, Flood 2014): a good 64-bit mix of (seed, index): the
 * random inputs (pp_fill) and the rows a GEMM check samples (pp_check_linear). */
__device__ __forceinline__ unsigned long long pp_mix(unsigned long long z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

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
    void *dnn;                /* cudnnHandle_t, created on first use (attn.cu) */
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
    /* fp8 per-tensor scaling (cuBLASLt docs, cublasLtMatmulDescAttributes_t: A_SCALE_POINTER and
     * B_SCALE_POINTER, device fp32 scalars multiplied into the product; NULL: 1), as Transformer
     * Engine's delayed and current per-tensor scaling pass them */
    const float *scale_a, *scale_b;
    /* > 0: the least alignment (bytes) of A, B, C and D when the plan runs on other buffers
     * (pp_gemm_plan_run_on at row offsets, the MoE experts); 0: cuBLASLt's default of 256 */
    int min_align_bytes;
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
    /* what cublasLtMatmul gets as C when the run passes none (gemm_rules.h; pp_gemm_lt_layouts sets
     * it, a caller may set another fp8 choice: OTHER passes A, NULL passes NULL) */
    pp_c_arg c_arg;
    pp_gemm_desc d;
} pp_gemm_plan;

/* Ask the heuristics (workspace c->lt_ws_bytes) for up to max_algos algorithms. Returns 0 when at
 * least one was found, 1 when the library has none for this problem or refuses its description,
 * or the description breaks a rule of gemm_rules.h (e.g. an epilogue it does not support here, an
 * fp8 GEMM that is not TN: callers fall back; the reason is in pp_gemm_plan_why()). */
int pp_gemm_plan_make(pp_probe_ctx *c, const pp_gemm_desc *d, int max_algos, pp_gemm_plan *p);
const char *pp_gemm_plan_why(void);
int pp_gemm_plan_run(pp_probe_ctx *c, const pp_gemm_plan *p);
/* The same plan on other buffers of the same shapes and alignment (per-batch offsets). C NULL: the
 * plan's c_arg says what goes. */
int pp_gemm_plan_run_on(pp_probe_ctx *c, const pp_gemm_plan *p, const void *A, const void *B, const void *C, void *D);
/* pp_gemm_plan_run that records nothing: cuBLASLt's status (the fp8 check tries its C choices). */
cublasStatus_t pp_gemm_plan_try(pp_probe_ctx *c, const pp_gemm_plan *p);
void pp_gemm_plan_free(pp_gemm_plan *p); /* accepts zeroed plans */

/* A bf16 GEMM, D = op(A) op(B), column-major, no epilogue, alpha 1 (the base of the ones below and of
 * the unfused attention's). */
pp_gemm_desc pp_desc_bf16(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, const void *A,
                          int64_t lda, const void *B, int64_t ldb, void *D, int64_t ldd);

/* The device buffers of one layer, freed together (layer, moe and mla probes): up to
 * PP_DEV_LIST_MAX allocations through pp_alloc (so an OOM is an OOM row). */
#define PP_DEV_LIST_MAX 64
typedef struct {
    void *p[PP_DEV_LIST_MAX];
    int n;
} pp_dev_list;
int pp_dev_list_alloc(pp_dev_list *l, void **p, size_t bytes);
void pp_dev_list_free(pp_dev_list *l); /* accepts a zeroed list */

/* Column-major descriptions of the row-major linear layers of a transformer (X [T, k], W [n, k],
 * contiguous rows, bf16, nn.Linear's layout), as the layer, MoE and MLA probes run them:
 *   fwd   Y = X W^T  : TN, m = n, n = T, k = k
 *   dgrad dX = dY W  : NN, m = k, n = T, k = n
 *   wgrad dW = dY^T X: NT, m = k, n = n, k = T */
pp_gemm_desc pp_desc_fwd(const void *X, const void *W, void *Y, int64_t T, int64_t n, int64_t k);
pp_gemm_desc pp_desc_dgrad(const void *dY, const void *W, void *dX, int64_t T, int64_t n, int64_t k);
pp_gemm_desc pp_desc_wgrad(const void *dY, const void *X, void *dW, int64_t T, int64_t n, int64_t k);

/* SwiGLU (Shazeer 2020) on u [T, 2f] = [gate | up] (Megatron's fc1 output, chunked in two):
 * a [T, f] = silu(gate) * up; backward du from da. bf16, fp32 math. */
int pp_swiglu_fwd(pp_probe_ctx *c, const void *u, void *a, int64_t T, int64_t f);
int pp_swiglu_bwd(pp_probe_ctx *c, const void *da, const void *u, void *du, int64_t T, int64_t f);

/* Where a layer's time goes: events recorded between its parts while it runs (pp_parts_mark, a
 * no-op unless pp_parts_time is measuring), `reps` runs after a warm one, the median of each part.
 * Parts are named by index (0..n-1); the run marks the end of a stretch of part i with
 * pp_parts_mark(c, i): the time since the previous mark counts to part i, and a part marked several
 * times in one run (a loop over experts) sums its stretches. The marks cost the host a few us each:
 * a run of many short kernels reads slower in its parts than in a whole-run timing. 0, 1 when a
 * run marks more than 2048 times (no parts), -1 on failure. */
#define PP_PARTS_MAX 32
int pp_parts_time(pp_probe_ctx *c, pp_run_fn fn, void *arg, int n_parts, int reps, double *part_ms);
void pp_parts_mark(pp_probe_ctx *c, int part);

/* Sampled check of a row-major GEMM D[i, j] = sum_k X[i, k] W[j, k] (the layout of nn.Linear:
 * X [m, k], W [n, k], D [m, n], leading dimension k, k and n): `samples` random (i, j) pairs in fp64,
 * relative L2 error over them; a non-finite output gives inf. */
int pp_check_linear(pp_probe_ctx *c, const void *X, pp_elt xt, const void *W, pp_elt wt, const void *D, pp_elt dt,
                    int64_t m, int64_t n, int64_t k, int samples, double *rel_err);

/* The small-size checks against the CPU references (layer, moe, mla): n device elements of type t
 * into a malloc'ed float array (*out, NULL on failure; bf16 converts exactly), and the relative L2
 * error of n device elements against a reference, kept in *worst (with what in which) when it is
 * the largest so far. 0 or -1. */
int pp_to_host_floats(pp_probe_ctx *c, const void *p, size_t n, pp_elt t, float **out);
int pp_check_worst(pp_probe_ctx *c, const void *dev, pp_elt t, const double *ref, size_t n, const char *what,
                   double *worst, char *which, size_t which_n);

/* Relative L2 error sqrt(sum (a-b)^2 / sum b^2) of two device arrays of type t (fp64 sums on the
 * device); inf when a value is not finite. */
int pp_rel_err_dev(pp_probe_ctx *c, const void *a, const void *b, size_t n, pp_elt t, double *err);

/* Milliseconds of wall time since an arbitrary origin (progress lines). */
double pp_wall_s(void);

#endif
