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
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#define NC_MAX 16

/* Every NCCL call is checked. The communicators are blocking, as training frameworks run them: a
 * non-blocking one (ncclConfig_t.blocking = 0) launches every group from a new thread in NCCL 2.28,
 * which cost each collective ~190 us of host time on 2 x H200 and cut the 1-16 MiB busbw 2-10x
 * (measured, NOTES.md "Faults"). Hangs are caught instead by a deadline (--timeout-s) on every wait
 * and a watchdog thread (below). */
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
    size_t cap_send, cap_recv; /* bytes of each send / recv buffer (grown per size) */
    unsigned long long *bad[NC_MAX];
    void *ballast[NC_MAX];
    int sms;
    double timeout_s;
    char inject[16];  /* PARPLAN_PROBE_INJECT_HANG: "any", an op, or "connect" (see launch) */
    int inject_skip;  /* local index that skips it, -1 none (under MPI only the last rank has one) */
    bool injected;    /* it did skip one */
    bool aborted;     /* the communicators were aborted (timed out): they are gone */
} nc_ctx;

/* ---------------------------------------------------------------- watchdog */

/* Two ways a collective hangs, two ways out:
 *   - on the GPU (a peer never launched its part; the usual case once connections exist): the main
 *     thread never blocks there (nc_wait polls cudaStreamQuery), sees the deadline pass, calls
 *     ncclCommAbort on every communicator (the kernels end on NCCL's abort flag) and reports; the
 *     process then exits 1 in order, with the profile of what was measured;
 *   - in the host, inside a blocking NCCL call (set-up, or connecting to a peer that never comes):
 *     the watchdog thread, NC_GRACE_S past the deadline, prints the report, calls ncclCommAbort on
 *     every communicator itself and ends the process (_exit(1)); the main thread, should it wake
 *     up, waits for that end (or, woken inside freed NCCL state, ends it: on_fatal).
 * Whoever aborts, SIGALRM NC_LAST_S later prints the report and _exit(1)s if ncclCommAbort itself
 * never returns. */
#define NC_GRACE_S 1.0
#define NC_LAST_S 8
static pthread_mutex_t W_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    pthread_t th;
    bool started, quit, armed;
    double deadline;
    char what[200];
    double bytes;
    int abort_state;  /* 0 none, 1 under way, 2 done */
    bool by_watchdog; /* the watchdog aborted (under a blocked call): it reports and ends the process */
    nc_ctx *x;
} W;
static char W_line[800]; /* the report, "parplan: ... (probe nccl)\n", once written (for SIGALRM) */
static volatile sig_atomic_t W_line_len;

static double nc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ncclCommAbort never returned: the report (unless it was printed already) and the end */
static void on_alarm(int sig)
{
    (void)sig;
    if (W_line_len > 0) {
        ssize_t w = write(2, W_line, (size_t)W_line_len);
        (void)w;
    }
    _exit(1);
}

/* after a watchdog abort the blocked main thread may wake inside freed NCCL state: the report is
 * out, the process ends with 1 whatever happens there */
static void on_fatal(int sig)
{
    (void)sig;
    _exit(1);
}

static void timeout_line(nc_ctx *x, const char *what, double bytes, const bool *done, char *line, size_t n)
{
    int gpus[NC_MAX], pend[NC_MAX], np = 0;
    char head[600];
    for (int i = 0; i < x->n; i++) {
        gpus[i] = x->dev[i];
        if (done && !done[i]) pend[np++] = x->dev[i];
    }
    pp_fmt_timeout(head, sizeof head, what, bytes, x->timeout_s, gpus, x->n, pend, np);
    snprintf(line, n, "%s%s; ncclCommAbort on %s", head,
             x->injected ? " (PARPLAN_PROBE_INJECT_HANG: one rank skipped its launch)" : "",
             x->n == 1 ? "its communicator" : "every communicator");
}

/* ncclCommAbort on every communicator, once. line: the report not printed yet (SIGALRM prints it
 * should the abort never return; NULL: nothing to print). Called by the main thread after a watchdog
 * abort: it waits for the end of the process. */
static void nc_abort_all(nc_ctx *x, bool from_watchdog, const char *line)
{
    pthread_mutex_lock(&W_mu);
    if (W.abort_state) {
        bool theirs = W.by_watchdog && !from_watchdog;
        pthread_mutex_unlock(&W_mu);
        for (;;) {
            pthread_mutex_lock(&W_mu);
            int st = W.abort_state;
            pthread_mutex_unlock(&W_mu);
            if (st == 2 && !theirs) return;
            usleep(10000); /* a watchdog abort ends the process: wait for it */
        }
    }
    W.abort_state = 1;
    W.by_watchdog = from_watchdog;
    pthread_mutex_unlock(&W_mu);
    W_line_len = 0;
    if (line && *line) {
        snprintf(W_line, sizeof W_line, "parplan: %s, which did not return within %d s (probe nccl)\n", line, NC_LAST_S);
        W_line_len = (sig_atomic_t)strlen(W_line);
    }
    signal(SIGALRM, on_alarm);
    alarm(NC_LAST_S);
    for (int i = 0; i < x->n; i++) {
        if (!x->comm[i]) continue;
        cudaSetDevice(x->dev[i]);
        ncclCommAbort(x->comm[i]);
        x->comm[i] = NULL;
    }
    alarm(0);
    x->aborted = true;
    pthread_mutex_lock(&W_mu);
    W.abort_state = 2;
    pthread_mutex_unlock(&W_mu);
}

static void *nc_watchdog(void *arg)
{
    (void)arg;
    for (;;) {
        usleep(50000);
        pthread_mutex_lock(&W_mu);
        if (W.quit) {
            pthread_mutex_unlock(&W_mu);
            return NULL;
        }
        bool go = W.armed && nc_now() > W.deadline + NC_GRACE_S && W.abort_state == 0;
        char line[700] = "";
        if (go) timeout_line(W.x, W.what, W.bytes, NULL, line, sizeof line);
        nc_ctx *x = W.x;
        pthread_mutex_unlock(&W_mu);
        if (!go) continue;
        /* the main thread is blocked in an NCCL call past its deadline: report, abort under it, end */
        fprintf(stderr, "parplan: %s (probe nccl)\n", line);
        fflush(stderr);
        signal(SIGSEGV, on_fatal);
        signal(SIGBUS, on_fatal);
        signal(SIGABRT, on_fatal);
        nc_abort_all(x, true, NULL);
        _exit(1);
    }
}

static int watch_start(nc_ctx *x)
{
    W.x = x;
    W.quit = W.armed = W.by_watchdog = false;
    W.abort_state = 0;
    if (pthread_create(&W.th, NULL, nc_watchdog, NULL)) {
        pp_probe_error(__FILE__, __LINE__, "cannot start the NCCL watchdog thread");
        return -1;
    }
    W.started = true;
    return 0;
}

static void watch_stop(void)
{
    if (!W.started) return;
    pthread_mutex_lock(&W_mu);
    W.quit = true;
    pthread_mutex_unlock(&W_mu);
    pthread_join(W.th, NULL);
    W.started = false;
}

/* what / bytes: the collective (bytes > 0) or the step ("NCCL communicator set-up") waited for */
static void watch_arm(nc_ctx *x, const char *what, double bytes)
{
    pthread_mutex_lock(&W_mu);
    W.armed = true;
    W.deadline = nc_now() + x->timeout_s;
    snprintf(W.what, sizeof W.what, "%s", what);
    W.bytes = bytes;
    pthread_mutex_unlock(&W_mu);
}

static void watch_disarm(void)
{
    pthread_mutex_lock(&W_mu);
    W.armed = false;
    pthread_mutex_unlock(&W_mu);
}

static bool watch_expired(void)
{
    pthread_mutex_lock(&W_mu);
    bool e = W.armed && (nc_now() > W.deadline || W.abort_state);
    pthread_mutex_unlock(&W_mu);
    return e;
}

/* The deadline passed with the main thread polling: abort, record the report (main.c prints it). */
static int nc_timed_out(nc_ctx *x, const bool *done)
{
    char line[700];
    pthread_mutex_lock(&W_mu);
    timeout_line(x, W.what, W.bytes, done, line, sizeof line);
    pthread_mutex_unlock(&W_mu);
    nc_abort_all(x, false, line);
    pp_probe_error_clear(); /* whatever the aborted calls answered is a consequence */
    pp_probe_error(__FILE__, __LINE__, "%s", line);
    return -1;
}

/* Wait for every rank's stream, within the armed deadline (cudaStreamSynchronize could wait for ever
 * on a collective that a peer never joins). */
static int nc_wait(nc_ctx *x)
{
    bool done[NC_MAX] = {false};
    for (;;) {
        bool all = true;
        for (int i = 0; i < x->n; i++) {
            if (done[i]) continue;
            cudaSetDevice(x->dev[i]);
            cudaError_t e = cudaStreamQuery(x->st[i]);
            if (e == cudaSuccess) {
                done[i] = true;
            } else if (e == cudaErrorNotReady) {
                all = false;
            } else {
                pp_cuda_fail(__FILE__, __LINE__, "cudaStreamQuery", e);
                return -1;
            }
        }
        for (int i = 0; i < x->n; i++) {
            ncclResult_t ae = ncclSuccess;
            if (x->comm[i] && ncclCommGetAsyncError(x->comm[i], &ae) == ncclSuccess && ae != ncclSuccess) {
                pp_probe_error(__FILE__, __LINE__, "NCCL on GPU %d: %s (%s)", x->dev[i], ncclGetErrorString(ae),
                               ncclGetLastError(x->comm[i]));
                return -1;
            }
        }
        if (all) return 0;
        if (watch_expired()) return nc_timed_out(x, done);
        usleep(50);
    }
}

/* ---------------------------------------------------------------- data and checks */

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

/* Enqueue one collective on every local rank (blocking communicators: ncclGroupEnd returns once it is
 * enqueued; nc_wait waits for it under the deadline). timed: a timing launch, after the op's check
 * (its connections exist): where the injected GPU-side hang happens. */
static int launch(nc_ctx *x, int op, double bytes, bool timed)
{
    size_t sc, rc, ch;
    int skip = -1;
    op_counts(op, bytes, x->nranks, &sc, &rc, &ch);
    /* fault injection (tests): the last rank does not launch this op once, so the others wait: on the
     * GPU at the op's first timing launch ("any" or an op name), or in the host at the very first
     * launch, before any connection exists ("connect") */
    if (x->inject[0] && x->inject_skip >= 0 &&
        (!strcmp(x->inject, "connect") || (timed && (!strcmp(x->inject, "any") || !strcmp(x->inject, op_names[op]))))) {
        skip = x->inject_skip;
        x->inject[0] = 0;
        x->injected = true;
    }
    PP_NC(ncclGroupStart());
    for (int i = 0; i < x->n; i++) {
        int r = x->rank0 + i;
        if (i == skip) continue;
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
    /* a call that failed because the communicators were aborted: report the timeout */
    if (watch_expired()) return nc_timed_out(x, NULL);
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
    watch_arm(x, op_names[op], bytes);
    PP_TRY(nc_wait(x));
    PP_TRY(launch(x, op, bytes, false));
    for (int i = 0; i < x->n; i++) {
        int r = x->rank0 + i;
        /* one-way sendrecv: only the receiving half has a result */
        size_t count = op == OP_SENDRECV && (r < x->nranks / 2 || r >= 2 * (x->nranks / 2)) ? 0 : rc;
        PP_CU(cudaSetDevice(x->dev[i]));
        pp_nc_check_kernel<<<x->sms * 4, 256, 0, x->st[i]>>>(x->recv[i], count, ch, op, r, x->nranks, x->bad[i]);
        PP_LAUNCHED();
    }
    PP_TRY(nc_wait(x));
    watch_disarm();
    for (int i = 0; i < x->n; i++) {
        unsigned long long b = 0;
        PP_CU(cudaSetDevice(x->dev[i]));
        PP_CU(cudaMemcpy(&b, x->bad[i], sizeof b, cudaMemcpyDeviceToHost));
        total += b;
    }
    *wrong = (unsigned long long)pp_mpi_sum((double)total);
    return *wrong ? 1 : 0;
fail:
    watch_disarm();
    return -1;
}

/* Median-free timing as nccl-tests: iters back-to-back collectives between events on every rank,
 * the slowest rank's time over iters. */
static int time_op(nc_ctx *x, int op, double bytes, int iters, double *us)
{
    double worst = 0;
    watch_arm(x, op_names[op], bytes);
    for (int i = 0; i < x->n; i++) {
        PP_CU(cudaSetDevice(x->dev[i]));
        PP_CU(cudaEventRecord(x->e0[i], x->st[i]));
    }
    for (int it = 0; it < iters; it++) PP_TRY(launch(x, op, bytes, true));
    for (int i = 0; i < x->n; i++) {
        PP_CU(cudaSetDevice(x->dev[i]));
        PP_CU(cudaEventRecord(x->e1[i], x->st[i]));
    }
    PP_TRY(nc_wait(x));
    watch_disarm();
    for (int i = 0; i < x->n; i++) {
        float ms = 0;
        PP_CU(cudaEventElapsedTime(&ms, x->e0[i], x->e1[i]));
        if (ms > worst) worst = ms;
    }
    worst = pp_mpi_max(worst);
    *us = 1e3 * worst / iters;
    return 0;
fail:
    watch_disarm();
    return -1;
}

/* Buffers for one size: grown (freed and allocated again) when a size needs more; a size that does
 * not fit is an OOM row (pp_oom_recover), the buffers freed. */
static void bufs_free(nc_ctx *x)
{
    for (int i = 0; i < x->n; i++) {
        cudaSetDevice(x->dev[i]);
        cudaFree(x->send[i]);
        cudaFree(x->recv[i]);
        x->send[i] = x->recv[i] = NULL;
    }
    x->cap_send = x->cap_recv = 0;
}

static int bufs_grow(nc_ctx *x, size_t send_bytes, size_t recv_bytes)
{
    if (send_bytes <= x->cap_send && recv_bytes <= x->cap_recv) return 0;
    if (send_bytes < x->cap_send) send_bytes = x->cap_send;
    if (recv_bytes < x->cap_recv) recv_bytes = x->cap_recv;
    bufs_free(x);
    for (int i = 0; i < x->n; i++) {
        PP_CU(cudaSetDevice(x->dev[i]));
        PP_TRY(pp_alloc((void **)&x->send[i], send_bytes));
        PP_TRY(pp_alloc((void **)&x->recv[i], recv_bytes));
    }
    x->cap_send = send_bytes;
    x->cap_recv = recv_bytes;
    return 0;
fail:
    bufs_free(x);
    return -1;
}

static void nc_free(nc_ctx *x)
{
    bool drained = true;
    if (x->aborted) {
        /* the aborted kernels end on NCCL's abort flag; freeing under a running one would block */
        double t0 = nc_now();
        for (int i = 0; i < x->n; i++) {
            cudaSetDevice(x->dev[i]);
            while (x->st[i] && cudaStreamQuery(x->st[i]) == cudaErrorNotReady && nc_now() - t0 < 5) usleep(1000);
            if (x->st[i] && cudaStreamQuery(x->st[i]) == cudaErrorNotReady) drained = false;
        }
        cudaGetLastError();
    } else if (x->n) {
        /* every stream drained (within the deadline), then the communicators destroyed */
        watch_arm(x, "NCCL communicator clean-up", 0);
        for (int i = 0; i < x->n; i++)
            if (x->st[i] && x->comm[i]) {
                cudaSetDevice(x->dev[i]);
                cudaStreamSynchronize(x->st[i]);
            }
        for (int i = 0; i < x->n; i++) {
            if (!x->comm[i]) continue;
            cudaSetDevice(x->dev[i]);
            ncclCommDestroy(x->comm[i]);
            x->comm[i] = NULL;
        }
        watch_disarm();
    }
    for (int i = 0; i < x->n; i++) {
        cudaSetDevice(x->dev[i]);
        if (drained) {
            cudaFree(x->send[i]);
            cudaFree(x->recv[i]);
            cudaFree(x->bad[i]);
            cudaFree(x->ballast[i]);
        }
        if (x->e0[i]) cudaEventDestroy(x->e0[i]);
        if (x->e1[i]) cudaEventDestroy(x->e1[i]);
        if (x->st[i]) cudaStreamDestroy(x->st[i]);
    }
    watch_stop();
    memset(x, 0, sizeof *x);
}

/* Communicators: one process on its local GPUs (ncclCommInitAll), or one GPU per MPI rank
 * (ncclCommInitRank, the id broadcast over MPI). A set-up that blocks past --timeout-s (a peer that
 * never comes) is ended by the watchdog. */
static int comms_init(nc_ctx *x)
{
    watch_arm(x, "NCCL communicator set-up", 0);
    if (pp_mpi_active()) {
        ncclUniqueId id;
        if (x->rank0 == 0) PP_NC(ncclGetUniqueId(&id));
        if (pp_mpi_bcast(&id, sizeof id)) {
            pp_probe_error(__FILE__, __LINE__, "MPI_Bcast of the NCCL id failed");
            goto fail;
        }
        PP_CU(cudaSetDevice(x->dev[0]));
        PP_NC(ncclCommInitRank(&x->comm[0], x->nranks, id, x->rank0));
    } else {
        PP_NC(ncclCommInitAll(x->comm, x->n, x->dev));
    }
    watch_disarm();
    return 0;
fail:
    watch_disarm();
    return -1;
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
    memset(&x, 0, sizeof x);
    x.timeout_s = o->timeout_s > 0 ? o->timeout_s : 30;
    x.inject_skip = -1;
    count = pp_gpu_count(why, sizeof why);
    if (pp_mpi_active()) {
        x.n = 1;
        x.nranks = pp_mpi_size();
        x.rank0 = pp_mpi_rank();
        x.dev[0] = count > 0 ? pp_mpi_local_rank() % count : 0;
        if (x.nranks < 2) {
            pp_report_note(r, "nccl: one MPI rank, no collective to measure");
            x.n = 0;
            return 0;
        }
        if (o->inject_hang[0] && x.rank0 == x.nranks - 1) x.inject_skip = 0;
    } else {
        x.n = o->gpus > 0 ? o->gpus : count; /* main.c refused --gpus above the count */
        if (x.n > NC_MAX) x.n = NC_MAX;
        x.nranks = x.n;
        x.rank0 = 0;
        if (x.n < 2) {
            pp_report_note(r, "nccl: %d GPU visible, no collective to measure (several GPUs, or mpirun -np N "
                              "across nodes, are needed)", x.n);
            x.n = 0;
            return 0;
        }
        for (int i = 0; i < x.n; i++) x.dev[i] = i;
        if (o->inject_hang[0]) x.inject_skip = x.n - 1;
    }
    snprintf(x.inject, sizeof x.inject, "%s", o->inject_hang);
    if (x.inject[0])
        pp_report_note(r, "nccl: PARPLAN_PROBE_INJECT_HANG=%s: rank %d skips %s%s (a test of the --timeout-s watchdog)",
                       x.inject, x.nranks - 1,
                       !strcmp(x.inject, "connect") ? "its first launch, before any connection (a hang in the host)"
                                                    : "the first timing launch of ",
                       !strcmp(x.inject, "connect") ? "" : !strcmp(x.inject, "any") ? "a collective" : x.inject);
    /* busy GPUs are named before NCCL takes them */
    for (int i = 0; i < x.n; i++) PP_TRY(pp_gpu_claim(x.dev[i], PP_PROBE_MIN_FREE_BYTES));
    PP_TRY(watch_start(&x));
    PP_TRY(comms_init(&x));
    for (int i = 0; i < x.n; i++) {
        cudaDeviceProp prop;
        PP_CU(cudaSetDevice(x.dev[i]));
        PP_CU(cudaGetDeviceProperties(&prop, x.dev[i]));
        x.sms = prop.multiProcessorCount;
        PP_CU(cudaStreamCreateWithFlags(&x.st[i], cudaStreamNonBlocking));
        PP_CU(cudaEventCreate(&x.e0[i]));
        PP_CU(cudaEventCreate(&x.e1[i]));
        PP_TRY(pp_alloc((void **)&x.bad[i], sizeof(unsigned long long)));
        if (o->mem_limit_bytes > 0) PP_TRY(pp_ballast_take(x.dev[i], o->mem_limit_bytes, &x.ballast[i], r));
    }
    pp_alloc_cap(o->max_alloc_bytes);
    for (int op = 0; op < OP_COUNT; op++) {
        for (int si = 0; si < n_sizes; si++) {
            double bytes = sizes[si], us = 0;
            unsigned long long wrong = 0;
            int iters = 0, st = 0;
            size_t sc, rcn, ch;
            if (op == OP_ALL_GATHER || op == OP_REDUCE_SCATTER) {
                bytes *= x.nranks;
                if (bytes > max_total) continue;
            }
            if (op == OP_ALL_TO_ALL && ((size_t)(bytes / 4)) % (size_t)x.nranks) continue;
            op_counts(op, bytes, x.nranks, &sc, &rcn, &ch);
            pp_alloc_mark();
            pp_alloc_need((double)(sc + rcn) * 4.0);
            if (bufs_grow(&x, sc * 4, rcn * 4)) {
                /* this size does not fit (on some rank): an OOM row, on to the next one */
                if (pp_oom_recover(r, 0, PP_PROBE_NCCL, "%s %.0f bytes over %d ranks (per GPU)", op_names[op], bytes,
                                   x.nranks))
                    goto fail;
                continue;
            }
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
    pp_alloc_cap(0);
    /* after a failure the communicators may be in any state: abort them rather than finalize */
    if (rc && !x.aborted && x.n) nc_abort_all(&x, false, pp_probe_error_msg());
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
