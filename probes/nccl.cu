/* nccl.cu: NCCL collectives over message sizes: all_reduce, all_gather, reduce_scatter, sendrecv
 * and all_to_all, fp32, sum. sendrecv is one-way point to point, as a pipeline stage sends its
 * activations: rank r of the first half sends to r + n/2 (with 2 GPUs, 0 -> 1; across two nodes,
 * node to node). A first version used nccl-tests' ring (every rank sends and receives at once: both
 * directions between 2 GPUs), which read 20-30% under the one-way PyTorch anchor at 16-256 MiB.
 * algbw = bytes / time and busbw = algbw * the nccl-tests factor (pp_nccl_busbw_factor), with
 * bytes counted as nccl-tests does (all_gather: the output, reduce_scatter: the input).
 * One process drives all local GPUs (ncclCommInitAll) unless started by mpirun, where each rank
 * drives one GPU (ncclCommInitRank with an id broadcast over MPI), so the probe spans nodes.
 * Every size is checked before it is timed: inputs are small integers, so sums are exact. */
#include "harness.cuh"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if PP_HAVE_NCCL
#include <nccl.h>

#define NC_MAX 16

#define PP_NC(call)                                                                               \
    do {                                                                                          \
        ncclResult_t r_ = (call);                                                                 \
        if (r_ != ncclSuccess) {                                                                  \
            pp_probe_error(__FILE__, __LINE__, "%s failed: %s", #call, ncclGetErrorString(r_));   \
            goto fail;                                                                            \
        }                                                                                         \
    } while (0)

enum { OP_ALL_REDUCE, OP_ALL_GATHER, OP_REDUCE_SCATTER, OP_SENDRECV, OP_ALL_TO_ALL, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"all_reduce", "all_gather", "reduce_scatter", "sendrecv", "all_to_all"};

typedef struct {
    int n;           /* GPUs this process drives */
    int nranks;      /* all ranks */
    int rank0;       /* global rank of local index 0 */
    int dev[NC_MAX];
    ncclComm_t comm[NC_MAX];
    cudaStream_t st[NC_MAX];
    cudaEvent_t e0[NC_MAX], e1[NC_MAX];
    float *send[NC_MAX], *recv[NC_MAX];
    unsigned long long *bad[NC_MAX];
    int sms;
} nc_ctx;

__device__ __forceinline__ float pp_nc_val(int r, size_t i)
{
    return (float)((int)((i * 7 + (size_t)r * 13) % 61) - 30);
}

__global__ void pp_nc_fill_kernel(float *p, size_t n, int r)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = pp_nc_val(r, i);
}

/* count: elements of the output to check; cnt: per-rank (all_gather, reduce_scatter) or per-peer
 * (all_to_all) chunk */
__global__ void pp_nc_check_kernel(const float *out, size_t count, size_t cnt, int op, int r, int n,
                                   unsigned long long *bad)
{
    unsigned long long b = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        float want = 0;
        switch (op) {
        case OP_ALL_REDUCE:
            for (int q = 0; q < n; q++) want += pp_nc_val(q, i);
            break;
        case OP_ALL_GATHER: want = pp_nc_val((int)(i / cnt), i % cnt); break;
        case OP_REDUCE_SCATTER:
            for (int q = 0; q < n; q++) want += pp_nc_val(q, (size_t)r * cnt + i);
            break;
        case OP_SENDRECV: want = pp_nc_val(r - n / 2, i); break;
        default: want = pp_nc_val((int)(i / cnt), (size_t)r * cnt + i % cnt); break;
        }
        b += out[i] != want;
    }
    if (b) atomicAdd(bad, b);
}

/* Per-rank element counts of an op of `bytes` (nccl-tests' size). */
static void op_counts(int op, double bytes, int n, size_t *send_cnt, size_t *recv_cnt, size_t *chunk)
{
    size_t total = (size_t)(bytes / 4);
    *chunk = 0;
    switch (op) {
    case OP_ALL_REDUCE: *send_cnt = *recv_cnt = total; break;
    case OP_ALL_GATHER: *chunk = total / n; *send_cnt = *chunk; *recv_cnt = total; break;
    case OP_REDUCE_SCATTER: *chunk = total / n; *send_cnt = total; *recv_cnt = *chunk; break;
    case OP_SENDRECV: *send_cnt = *recv_cnt = total; break;
    default: *chunk = total / n; *send_cnt = *recv_cnt = total; break;
    }
}

static int launch(nc_ctx *x, int op, double bytes)
{
    size_t sc, rc, ch;
    op_counts(op, bytes, x->nranks, &sc, &rc, &ch);
    PP_NC(ncclGroupStart());
    for (int i = 0; i < x->n; i++) {
        int r = x->rank0 + i;
        switch (op) {
        case OP_ALL_REDUCE:
            PP_NC(ncclAllReduce(x->send[i], x->recv[i], sc, ncclFloat, ncclSum, x->comm[i], x->st[i]));
            break;
        case OP_ALL_GATHER: PP_NC(ncclAllGather(x->send[i], x->recv[i], ch, ncclFloat, x->comm[i], x->st[i])); break;
        case OP_REDUCE_SCATTER:
            PP_NC(ncclReduceScatter(x->send[i], x->recv[i], ch, ncclFloat, ncclSum, x->comm[i], x->st[i]));
            break;
        case OP_SENDRECV: {
            int half = x->nranks / 2;
            if (r < half) PP_NC(ncclSend(x->send[i], sc, ncclFloat, r + half, x->comm[i], x->st[i]));
            else if (r < 2 * half) PP_NC(ncclRecv(x->recv[i], rc, ncclFloat, r - half, x->comm[i], x->st[i]));
            break;
        }
        default:
            for (int q = 0; q < x->nranks; q++) {
                PP_NC(ncclSend(x->send[i] + (size_t)q * ch, ch, ncclFloat, q, x->comm[i], x->st[i]));
                PP_NC(ncclRecv(x->recv[i] + (size_t)q * ch, ch, ncclFloat, q, x->comm[i], x->st[i]));
            }
            break;
        }
    }
    PP_NC(ncclGroupEnd());
    return 0;
fail:
    return -1;
}

static int sync_all(nc_ctx *x)
{
    for (int i = 0; i < x->n; i++) {
        PP_CU(cudaSetDevice(x->dev[i]));
        PP_CU(cudaStreamSynchronize(x->st[i]));
    }
    return 0;
fail:
    return -1;
}

/* Check one op at one size on every rank: 0 right, 1 wrong, -1 error. */
static int check_op(nc_ctx *x, int op, double bytes, unsigned long long *wrong)
{
    size_t sc, rc, ch;
    unsigned long long total = 0;
    op_counts(op, bytes, x->nranks, &sc, &rc, &ch);
    for (int i = 0; i < x->n; i++) {
        PP_CU(cudaSetDevice(x->dev[i]));
        pp_nc_fill_kernel<<<x->sms * 4, 256, 0, x->st[i]>>>(x->send[i], sc, x->rank0 + i);
        PP_LAUNCHED();
        PP_CU(cudaMemsetAsync(x->recv[i], 0xFF, rc * 4, x->st[i]));
        PP_CU(cudaMemsetAsync(x->bad[i], 0, sizeof(unsigned long long), x->st[i]));
    }
    PP_TRY(sync_all(x));
    PP_TRY(launch(x, op, bytes));
    for (int i = 0; i < x->n; i++) {
        unsigned long long b = 0;
        int r = x->rank0 + i;
        /* one-way sendrecv: only the receiving half has a result */
        size_t count = op == OP_SENDRECV && (r < x->nranks / 2 || r >= 2 * (x->nranks / 2)) ? 0 : rc;
        PP_CU(cudaSetDevice(x->dev[i]));
        pp_nc_check_kernel<<<x->sms * 4, 256, 0, x->st[i]>>>(x->recv[i], count, ch, op, r, x->nranks, x->bad[i]);
        PP_LAUNCHED();
        PP_CU(cudaMemcpyAsync(&b, x->bad[i], sizeof b, cudaMemcpyDeviceToHost, x->st[i]));
        PP_CU(cudaStreamSynchronize(x->st[i]));
        total += b;
    }
    *wrong = (unsigned long long)pp_mpi_sum((double)total);
    return *wrong ? 1 : 0;
fail:
    return -1;
}

/* Median-free timing as nccl-tests: iters back-to-back collectives between events on every rank,
 * the slowest rank's time over iters. */
static int time_op(nc_ctx *x, int op, double bytes, int iters, double *us)
{
    double worst = 0;
    for (int i = 0; i < x->n; i++) {
        PP_CU(cudaSetDevice(x->dev[i]));
        PP_CU(cudaEventRecord(x->e0[i], x->st[i]));
    }
    for (int it = 0; it < iters; it++) PP_TRY(launch(x, op, bytes));
    for (int i = 0; i < x->n; i++) {
        PP_CU(cudaSetDevice(x->dev[i]));
        PP_CU(cudaEventRecord(x->e1[i], x->st[i]));
    }
    PP_TRY(sync_all(x));
    for (int i = 0; i < x->n; i++) {
        float ms = 0;
        PP_CU(cudaEventElapsedTime(&ms, x->e0[i], x->e1[i]));
        if (ms > worst) worst = ms;
    }
    worst = pp_mpi_max(worst);
    *us = 1e3 * worst / iters;
    return 0;
fail:
    return -1;
}

static void nc_free(nc_ctx *x)
{
    for (int i = 0; i < x->n; i++) {
        cudaSetDevice(x->dev[i]);
        if (x->st[i]) cudaStreamSynchronize(x->st[i]);
        if (x->comm[i]) ncclCommDestroy(x->comm[i]);
        cudaFree(x->send[i]);
        cudaFree(x->recv[i]);
        cudaFree(x->bad[i]);
        if (x->e0[i]) cudaEventDestroy(x->e0[i]);
        if (x->e1[i]) cudaEventDestroy(x->e1[i]);
        if (x->st[i]) cudaStreamDestroy(x->st[i]);
    }
    memset(x, 0, sizeof *x);
}

int pp_probe_nccl(const pp_probe_opts *o, pp_report *r)
{
    nc_ctx x;
    int count = 0, rc = -1;
    char why[256];
    /* 64 KiB .. 1 GiB by factors of 4: the anchors' sizes (1 MiB .. 1 GiB) and two small ones */
    static const double sizes_full[] = {65536, 262144, 1048576, 4194304, 16777216, 67108864, 268435456, 1073741824};
    static const double sizes_quick[] = {1048576, 16777216};
    const double *sizes = o->quick ? sizes_quick : sizes_full;
    int n_sizes = o->quick ? 2 : 8;
    const double max_total = 2147483648.0; /* all_gather/reduce_scatter totals up to 2 GiB */
    size_t send_max = 0, recv_max = 0;
    memset(&x, 0, sizeof x);
    count = pp_gpu_count(why, sizeof why);
    if (pp_mpi_active()) {
        ncclUniqueId id;
        x.n = 1;
        x.nranks = pp_mpi_size();
        x.rank0 = pp_mpi_rank();
        x.dev[0] = count > 0 ? pp_mpi_local_rank() % count : 0;
        if (x.nranks < 2) {
            pp_report_note(r, "nccl: one MPI rank, no collective to measure");
            x.n = 0;
            return 0;
        }
        if (x.rank0 == 0) PP_NC(ncclGetUniqueId(&id));
        if (pp_mpi_bcast(&id, sizeof id)) {
            pp_probe_error(__FILE__, __LINE__, "MPI_Bcast of the NCCL id failed");
            goto fail;
        }
        PP_CU(cudaSetDevice(x.dev[0]));
        PP_NC(ncclCommInitRank(&x.comm[0], x.nranks, id, x.rank0));
    } else {
        x.n = o->gpus > 0 && o->gpus < count ? o->gpus : count;
        if (x.n > NC_MAX) x.n = NC_MAX;
        x.nranks = x.n;
        if (x.n < 2) {
            pp_report_note(r, "nccl: %d GPU visible, no collective to measure (several GPUs, or mpirun -np N "
                              "across nodes, are needed)", x.n);
            x.n = 0;
            return 0;
        }
        for (int i = 0; i < x.n; i++) x.dev[i] = i;
        PP_NC(ncclCommInitAll(x.comm, x.n, x.dev));
    }
    for (int si = 0; si < n_sizes; si++) {
        for (int op = 0; op < OP_COUNT; op++) {
            size_t sc, rcn, ch;
            double bytes = sizes[si];
            if (op == OP_ALL_GATHER || op == OP_REDUCE_SCATTER) {
                bytes *= x.nranks;
                if (bytes > max_total) continue;
            }
            op_counts(op, bytes, x.nranks, &sc, &rcn, &ch);
            if (sc * 4 > send_max) send_max = sc * 4;
            if (rcn * 4 > recv_max) recv_max = rcn * 4;
        }
    }
    for (int i = 0; i < x.n; i++) {
        cudaDeviceProp prop;
        PP_CU(cudaSetDevice(x.dev[i]));
        PP_CU(cudaGetDeviceProperties(&prop, x.dev[i]));
        x.sms = prop.multiProcessorCount;
        PP_CU(cudaStreamCreateWithFlags(&x.st[i], cudaStreamNonBlocking));
        PP_CU(cudaEventCreate(&x.e0[i]));
        PP_CU(cudaEventCreate(&x.e1[i]));
        PP_TRY(pp_alloc((void **)&x.send[i], send_max));
        PP_TRY(pp_alloc((void **)&x.recv[i], recv_max));
        PP_TRY(pp_alloc((void **)&x.bad[i], sizeof(unsigned long long)));
    }
    for (int op = 0; op < OP_COUNT; op++) {
        for (int si = 0; si < n_sizes; si++) {
            double bytes = sizes[si], us = 0;
            unsigned long long wrong = 0;
            int iters = 0, st = 0;
            if (op == OP_ALL_GATHER || op == OP_REDUCE_SCATTER) {
                bytes *= x.nranks;
                if (bytes > max_total) continue;
            }
            if (op == OP_ALL_TO_ALL && ((size_t)(bytes / 4)) % (size_t)x.nranks) continue;
            st = check_op(&x, op, bytes, &wrong);
            if (st < 0) goto fail;
            if (st > 0) {
                pp_report_fail(r, "nccl %s %.0f bytes over %d ranks: %llu elements wrong", op_names[op], bytes,
                               x.nranks, wrong);
                continue;
            }
            /* warm-up, then enough iterations for ~50 ms (--quick ~10 ms) */
            PP_TRY(time_op(&x, op, bytes, 5, &us));
            iters = us > 0 ? (int)((o->quick ? 1e4 : 5e4) / us) : 20;
            if (iters < 5) iters = 5;
            if (iters > 200) iters = 200;
            iters = (int)pp_mpi_max((double)iters); /* every rank must run the same count */
            PP_TRY(time_op(&x, op, bytes, iters, &us));
            {
                pp_nccl_row row;
                memset(&row, 0, sizeof row);
                snprintf(row.op, sizeof row.op, "%s", op_names[op]);
                row.ranks = x.nranks;
                row.bytes = bytes;
                row.us = us;
                row.algbw_gbs = bytes / (us * 1e-6) / 1e9;
                row.busbw_gbs = row.algbw_gbs * pp_nccl_busbw_factor(op_names[op], x.nranks);
                if (pp_report_add_nccl(r, &row)) pp_report_fail(r, "nccl %s: no valid time", op_names[op]);
            }
        }
    }
    rc = 0;
fail:
    nc_free(&x);
    return rc;
}

#else /* !PP_HAVE_NCCL */

int pp_probe_nccl(const pp_probe_opts *o, pp_report *r)
{
    (void)o;
    pp_report_note(r, "nccl: this parplan-probe was built without NCCL");
    return 0;
}

#endif
