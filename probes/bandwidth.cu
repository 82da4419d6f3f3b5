/* bandwidth.cu: device memory bandwidth as the elementwise kernels of a training step see it.
 *   copy:   dst = src (16-byte loads and stores), GB/s = 2 * bytes / time
 *   mul:    c = a * b in fp32 (as torch.mul on fp32 tensors), GB/s = 12 bytes per element / time
 *   memcpy: cudaMemcpyAsync device to device, for reference
 * Arrays are far larger than the L2 (1 GiB, --quick 64 MiB), so no flush is needed. Results are
 * compared element by element after the timing runs. */
#include "harness.cuh"

#include <string.h>

/* U 16-byte loads in flight per thread before the stores (Little's law: HBM latency x bandwidth
 * needs several outstanding loads per thread at full occupancy). */
template <int U>
__global__ void pp_copy_kernel(const uint4 *__restrict__ src, uint4 *__restrict__ dst, size_t n)
{
    size_t base = (size_t)blockIdx.x * blockDim.x * U + threadIdx.x;
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
        size_t i = base + (size_t)u * blockDim.x;
        if (i < n) v[u] = __ldcs(src + i);
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
        size_t i = base + (size_t)u * blockDim.x;
        if (i < n) __stcs(dst + i, v[u]);
    }
}

template <int U>
__global__ void pp_mul_kernel(const float4 *__restrict__ a, const float4 *__restrict__ b, float4 *__restrict__ c,
                              size_t n)
{
    size_t base = (size_t)blockIdx.x * blockDim.x * U + threadIdx.x;
    float4 x[U], y[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
        size_t i = base + (size_t)u * blockDim.x;
        if (i < n) {
            x[u] = __ldcs(a + i);
            y[u] = __ldcs(b + i);
        }
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
        size_t i = base + (size_t)u * blockDim.x;
        if (i < n) __stcs(c + i, make_float4(x[u].x * y[u].x, x[u].y * y[u].y, x[u].z * y[u].z, x[u].w * y[u].w));
    }
}

/* Mismatch counts: copy compares words, mul recomputes the product (same IEEE multiply, exact). */
__global__ void pp_check_copy_kernel(const unsigned *a, const unsigned *b, size_t n, unsigned long long *bad)
{
    unsigned long long cnt = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        cnt += a[i] != b[i];
    if (cnt) atomicAdd(bad, cnt);
}

__global__ void pp_check_mul_kernel(const float *a, const float *b, const float *c, size_t n, unsigned long long *bad)
{
    unsigned long long cnt = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        cnt += __fmul_rn(a[i], b[i]) != c[i];
    if (cnt) atomicAdd(bad, cnt);
}

typedef struct {
    const void *a, *b;
    void *c;
    size_t n16; /* 16-byte vectors */
    int variant;
} bw_arg;

enum { THREADS = 256 };

static int run_copy(pp_probe_ctx *c, void *p)
{
    bw_arg *a = (bw_arg *)p;
    if (a->variant == 0) {
        unsigned blocks = (unsigned)((a->n16 + THREADS * 4 - 1) / (THREADS * 4));
        pp_copy_kernel<4><<<blocks, THREADS, 0, c->stream>>>((const uint4 *)a->a, (uint4 *)a->c, a->n16);
    } else if (a->variant == 1) {
        unsigned blocks = (unsigned)((a->n16 + THREADS * 8 - 1) / (THREADS * 8));
        pp_copy_kernel<8><<<blocks, THREADS, 0, c->stream>>>((const uint4 *)a->a, (uint4 *)a->c, a->n16);
    } else {
        PP_CU(cudaMemcpyAsync(a->c, a->a, a->n16 * 16, cudaMemcpyDeviceToDevice, c->stream));
    }
    PP_LAUNCHED();
    return 0;
fail:
    return -1;
}

static int run_mul(pp_probe_ctx *c, void *p)
{
    bw_arg *a = (bw_arg *)p;
    if (a->variant == 0) {
        unsigned blocks = (unsigned)((a->n16 + THREADS * 2 - 1) / (THREADS * 2));
        pp_mul_kernel<2><<<blocks, THREADS, 0, c->stream>>>((const float4 *)a->a, (const float4 *)a->b,
                                                             (float4 *)a->c, a->n16);
    } else {
        unsigned blocks = (unsigned)((a->n16 + THREADS * 4 - 1) / (THREADS * 4));
        pp_mul_kernel<4><<<blocks, THREADS, 0, c->stream>>>((const float4 *)a->a, (const float4 *)a->b,
                                                             (float4 *)a->c, a->n16);
    }
    PP_LAUNCHED();
    return 0;
fail:
    return -1;
}

static int count_bad(pp_probe_ctx *c, unsigned long long *dev_bad, unsigned long long *bad)
{
    PP_CU(cudaMemcpyAsync(bad, dev_bad, sizeof *bad, cudaMemcpyDeviceToHost, c->stream));
    PP_CU(cudaStreamSynchronize(c->stream));
    return 0;
fail:
    return -1;
}

int pp_probe_bandwidth(pp_probe_ctx *c)
{
    size_t bytes = c->opt->quick ? ((size_t)64 << 20) : ((size_t)1 << 30);
    void *a = NULL, *b = NULL, *d = NULL;
    unsigned long long *dev_bad = NULL, bad = 0;
    int rc = -1;
    bw_arg arg;
    double ms = 0, best = 0;
    const char *names[3] = {"copy", "copy", "memcpy"};
    pp_bw_row row;
    pp_alloc_mark();
    pp_alloc_need(3.0 * (double)bytes);
    if (pp_alloc(&a, bytes) || pp_alloc(&b, bytes) || pp_alloc(&d, bytes)) {
        /* the one size does not fit: a row saying so, not a failure */
        if (pp_oom_recover(c->rep, c->stream, PP_PROBE_BANDWIDTH, "three %.0f MiB arrays", (double)bytes / 1048576.0))
            goto fail;
        rc = 0;
        goto fail;
    }
    PP_TRY(pp_alloc((void **)&dev_bad, sizeof *dev_bad));
    PP_TRY(pp_fill(c, a, bytes / 4, PP_F32, 1.0f, 101));
    PP_TRY(pp_fill(c, b, bytes / 4, PP_F32, 1.0f, 102));

    /* copy: two unroll depths, keep the faster; memcpy apart */
    memset(&arg, 0, sizeof arg);
    arg.a = a;
    arg.c = d;
    arg.n16 = bytes / 16;
    for (int v = 0; v < 3; v++) {
        arg.variant = v;
        PP_TRY(pp_poison(c, d, bytes));
        PP_TRY(pp_time_ms(c, run_copy, &arg, false, &ms));
        PP_CU(cudaMemsetAsync(dev_bad, 0, sizeof *dev_bad, c->stream));
        pp_check_copy_kernel<<<c->prop.multiProcessorCount * 8, 256, 0, c->stream>>>(
            (const unsigned *)a, (const unsigned *)d, bytes / 4, dev_bad);
        PP_LAUNCHED();
        PP_TRY(count_bad(c, dev_bad, &bad));
        if (bad) {
            pp_report_fail(c->rep, "bandwidth %s (variant %d): %llu of %zu words wrong", names[v], v, bad, bytes / 4);
            continue;
        }
        if (v < 2 && (best == 0 || ms < best)) best = ms;
        if (v == 2) {
            memset(&row, 0, sizeof row);
            snprintf(row.op, sizeof row.op, "memcpy");
            row.bytes = 2.0 * (double)bytes;
            row.us = 1e3 * ms;
            row.gbs = row.bytes / (ms * 1e-3) / 1e9;
            pp_report_add_bw(c->rep, &row);
        }
    }
    if (best > 0) {
        memset(&row, 0, sizeof row);
        snprintf(row.op, sizeof row.op, "copy");
        row.bytes = 2.0 * (double)bytes;
        row.us = 1e3 * best;
        row.gbs = row.bytes / (best * 1e-3) / 1e9;
        pp_report_add_bw(c->rep, &row);
    }

    /* mul: c = a * b over bytes/2 per array (three arrays) */
    best = 0;
    arg.a = a;
    arg.b = b;
    arg.c = d;
    arg.n16 = bytes / 2 / 16;
    for (int v = 0; v < 2; v++) {
        arg.variant = v;
        PP_TRY(pp_poison(c, d, bytes / 2));
        PP_TRY(pp_time_ms(c, run_mul, &arg, false, &ms));
        PP_CU(cudaMemsetAsync(dev_bad, 0, sizeof *dev_bad, c->stream));
        pp_check_mul_kernel<<<c->prop.multiProcessorCount * 8, 256, 0, c->stream>>>(
            (const float *)a, (const float *)b, (const float *)d, bytes / 2 / 4, dev_bad);
        PP_LAUNCHED();
        PP_TRY(count_bad(c, dev_bad, &bad));
        if (bad) {
            pp_report_fail(c->rep, "bandwidth mul (variant %d): %llu of %zu products wrong", v, bad, bytes / 8);
            continue;
        }
        if (best == 0 || ms < best) best = ms;
    }
    if (best > 0) {
        memset(&row, 0, sizeof row);
        snprintf(row.op, sizeof row.op, "mul");
        row.bytes = 3.0 * (double)(bytes / 2);
        row.us = 1e3 * best;
        row.gbs = row.bytes / (best * 1e-3) / 1e9;
        pp_report_add_bw(c->rep, &row);
    }
    rc = 0;
fail:
    cudaFree(a);
    cudaFree(b);
    cudaFree(d);
    cudaFree(dev_bad);
    return rc;
}
