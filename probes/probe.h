/* parplan-probe: measures GEMM, memory bandwidth, attention, a transformer layer and NCCL
 * collectives on the local GPUs and writes a hardware profile (schema:
 * docs/cli.md "Hardware profile") that `parplan check/plan --profile` read.
 *
 * This header is shared by the C parts (main.c, report.c, ref.c, mpi_glue.c) and the CUDA parts
 * (harness.cu and one .cu per probe). The planner library never includes it: the planner must
 * build and run without CUDA. */
#ifndef PP_PROBE_H
#define PP_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The optimizer probe comes before nccl: the single-GPU probes share one context, which
 * main.c closes before nccl drives its own devices. moe and mla (a model's Mixture-of-Experts MLP
 * and multi-head latent attention layers) are single-GPU probes too; `all` leaves them out (they
 * measure a model's layer, not the machine: name them). */
enum { PP_PROBE_GEMM = 0, PP_PROBE_BANDWIDTH, PP_PROBE_ATTENTION, PP_PROBE_LAYER, PP_PROBE_OPTIMIZER,
       PP_PROBE_MOE, PP_PROBE_MLA, PP_PROBE_NCCL, PP_PROBE_COUNT };
extern const char *const pp_probe_names[PP_PROBE_COUNT];
/* whether `all` (and no probe named) runs it */
bool pp_probe_in_all(int probe);

#define PP_PROBE_MAX_TP 8
#define PP_PROBE_MAX_PARAMS 8 /* --params sizes of the optimizer probe */
#define PP_PROBE_MAX_LIST 8   /* --tokens, --ep sizes of the moe probe */

/* The gemm probe's types, in the bit order of --dtype (pp_probe_opts.gemm_dtypes) */
enum { PP_GEMM_BF16 = 0, PP_GEMM_FP16, PP_GEMM_TF32, PP_GEMM_FP32, PP_GEMM_FP8, PP_GEMM_TYPES };
extern const char *const pp_gemm_dtype_names[PP_GEMM_TYPES];

/* What to measure (parsed by main.c). */
typedef struct {
    bool run[PP_PROBE_COUNT];
    const char *output;       /* -o FILE: YAML profile (JSON when FILE ends in .json); NULL: none */
    bool json;                /* --json: one JSON document on stdout instead of the table */
    bool quiet;               /* -q: no progress lines */
    bool quick;               /* --quick: small sizes and few repeats (tests, smoke runs) */
    int device;               /* --gpu-index N (--device N): the GPU of the single-GPU probes */
    int gpus;                 /* --gpus N: GPUs the nccl probe drives in one process (0: all) */
    /* Faults: the collective timeout, and the knobs that force an OOM or a hang (tests). */
    double timeout_s;         /* --timeout-s (or $PARPLAN_PROBE_TIMEOUT_S; default 30): a collective or
                               * communicator set-up that has not completed by then is aborted */
    double mem_limit_bytes;   /* --mem-limit-gib: > 0: after set-up a ballast allocation leaves only
                               * this much of each GPU free to the probes (forces real OOM, tests) */
    double max_alloc_bytes;   /* $PARPLAN_PROBE_MAX_BYTES: > 0: one probe buffer above it fails as an
                               * out-of-memory would (deterministic OOM on any GPU, tests) */
    char inject_hang[16];     /* $PARPLAN_PROBE_INJECT_HANG: "" none; "any", an op name or "connect":
                               * the last rank skips one launch (tests; see pp_parse_hang) */
    /* A model's shapes (--hidden ...). hidden == 0: the default shapes (those of the PyTorch
     * anchors in tests/data/anchors, so that the figures compare one to one). */
    int64_t hidden, heads, kv_heads, ffn, seq, mbs;
    bool swiglu;
    /* --no-mlp: the layer probe times the layer without its MLP (LayerNorm, QKV, attention,
     * projection and residual, the pre-MLP LayerNorm; the MLP's input gradient a random tensor):
     * the attention part of an MoE layer, whose MLP the moe probe measures (plan --probe) */
    bool no_mlp;
    /* --head-dim: the layer probe's head size where heads x head size is not the hidden size (Qwen3's
     * 32 heads of 128 over hidden 2048); 0: hidden / heads */
    int64_t head_dim;
    int attention;            /* --attention: 0 auto (flash where cuDNN builds it, else unfused), 1 flash
                               * only, 2 unfused only (the attention of Megatron's local implementation,
                               * plan --probe --attention unfused) */
    int64_t tp[PP_PROBE_MAX_TP];
    int n_tp;
    /* --params N[,N...]: the optimizer probe's sizes in parameters (n_params 0: its defaults) */
    double params[PP_PROBE_MAX_PARAMS];
    int n_params;
    /* --dtype LIST: the gemm probe's types, bit PP_GEMM_* set for each (0: all) */
    unsigned gemm_dtypes;
    /* moe (moe.cu): --experts E --topk K --moe-ffn F [--shared-ffn S] --tokens T[,T..] [--ep N[,N..]]
     * [--imbalance X] [--moe-impl loop|grouped|both] [--router softmax|sigmoid] (hidden: --hidden).
     * experts 0: the probe's default shapes. */
    int64_t experts, topk, moe_ffn, shared_ffn;
    int64_t tokens[PP_PROBE_MAX_LIST];
    int n_tokens;
    int64_t ep[PP_PROBE_MAX_LIST];
    int n_ep;
    double imbalance;         /* the busiest local expert's tokens / the mean; 0: 1 (balanced) */
    unsigned moe_impls;       /* bit 0 loop, bit 1 grouped; 0: both */
    int router;               /* 0 softmax, 1 sigmoid */
    /* mla (mla.cu): --q-lora-rank (0: a plain q projection) --kv-lora-rank --qk-nope-dim --qk-rope-dim
     * --v-head-dim; hidden, heads, seq, mbs and tp as above. kv_lora_rank 0: the probe's defaults. */
    int64_t q_lora_rank, kv_lora_rank, qk_nope_dim, qk_rope_dim, v_head_dim;
} pp_probe_opts;

/* ---------------------------------------------------------------- results */

typedef struct {
    char dtype[8];            /* bf16 fp16 tf32 fp32 fp8 */
    char op[8];               /* square, or qkv proj fc1 fc2 (a layer's GEMM) */
    int64_t hidden, tp;       /* the layer a transformer-shape GEMM belongs to (0 for square) */
    int64_t m, n, k;          /* tokens x out-features x in-features: 2mnk FLOPs */
    double us, tflops;
    double rel_err;           /* sampled check against an fp64 reference */
} pp_gemm_row;

typedef struct {
    char op[8];               /* copy, mul, memcpy */
    double bytes;             /* bytes read + written per run */
    double us, gbs;
} pp_bw_row;

typedef struct {
    char impl[8];             /* flash (fused) or unfused (GEMMs + softmax) */
    char backend[16];         /* cudnn, cublaslt */
    bool causal;
    int64_t b, s, heads, head_dim;
    double fwd_ms, fwdbwd_ms;
    double fwd_tflops, fwdbwd_tflops; /* 4*b*s^2*heads*head_dim (x3 with bwd) / time, no causal halving */
    double rel_err;           /* largest of O, dQ, dK, dV against the other implementation */
} pp_attn_row;

typedef struct {
    int64_t hidden, heads, seq, mbs, tp, ffn; /* ffn 0: the layer without its MLP (--no-mlp) */
    char act[8];              /* gelu, swiglu; none without the MLP */
    char attention[8];        /* flash, unfused */
    double fwd_ms, fwdbwd_ms;
    double fwd_tflops, fwdbwd_tflops; /* model FLOPs of the shard (24bsh^2 + 4bs^2h for GPT, /tp) */
    double check_err;         /* largest relative error of the small-size check against the CPU */
    int64_t kv_heads;         /* key/value heads (GQA groups) of the model; 0 or heads: multi-head */
} pp_layer_row;

typedef struct {
    char op[16];              /* all_reduce all_gather reduce_scatter sendrecv all_to_all */
    int64_t ranks;
    double bytes;             /* nccl-tests' size: all_gather the output, reduce_scatter the input */
    double us, algbw_gbs, busbw_gbs;
} pp_nccl_row;

/* One fused mixed-precision AdamW step over `params` parameters (optimizer.cu). */
typedef struct {
    double params;            /* parameters updated */
    double bytes_per_param;   /* HBM bytes read + written per parameter (30, see optimizer.cu) */
    double ms, gbs;           /* one step; effective GB/s = bytes_per_param * params / time */
    double check_err;         /* largest relative error of the small-size check against the CPU */
} pp_opt_row;

/* One Mixture-of-Experts MLP layer (moe.cu) on one GPU, Megatron-Core's order: router, permute,
 * experts (fc1, SwiGLU, fc2), unpermute; a shared expert on all tokens. */
enum { PP_MOE_ROUTER = 0, PP_MOE_PERMUTE, PP_MOE_FC1, PP_MOE_ACT, PP_MOE_FC2, PP_MOE_UNPERMUTE, PP_MOE_SHARED,
       PP_MOE_PARTS };
extern const char *const pp_moe_part_names[PP_MOE_PARTS];
typedef struct {
    int64_t hidden, experts, topk, moe_ffn, shared_ffn, tokens, ep;
    double imbalance;         /* busiest local expert / mean (1: balanced routing) */
    char impl[8];             /* loop (SequentialMLP), grouped (TEGroupedMLP / GroupedMLP) */
    char backend[24];         /* cublaslt (loop), cublas_grouped (cublasGemmGroupedBatchedEx), cublaslt_batched */
    char router[8];           /* softmax, sigmoid */
    int64_t local_experts, rows; /* experts this rank holds, token copies they get (T*K at balance) */
    double fwd_ms, fwdbwd_ms;
    double part_fwd_ms[PP_MOE_PARTS], part_bwd_ms[PP_MOE_PARTS]; /* each part's own time, medians */
    double expert_fwd_tflops, expert_fwdbwd_tflops; /* 6*rows*hidden*moe_ffn (x3) / (fc1 + fc2 time) */
    double check_err;         /* the small-size check against the CPU */
} pp_moe_row;

/* The moe probe's fixed routing and the row maps of its data movement (route.c, pure C: tested
 * without a GPU). Token t's K copies go to distinct global experts expert[t*K + j] by a cyclic
 * sweep: expert g takes count_g consecutive visits of the sweep "visit v = copy v / T of token
 * v mod T", count_g <= T, so no token twice; the experts take their runs in the order local expert
 * by local expert, each over the source ranks (run i: global expert (i mod ep) L + i / ep), so that
 * at balance a token's copies land on distinct local experts when L >= K. Balanced: count_g =
 * T*K/E (the remainder one more to the first); imbalance X > 1: the hot experts g mod L == 0
 * (local expert 0 of every EP rank) get round(X*T*K/E) and the rest share what is left. The rank
 * holds L = E/ep local experts; global expert g runs on local expert g mod L (the simulation of
 * expert parallelism: the rank computes, for the T*K copies balanced routing sends it, what the
 * owning ranks would).
 * Rows: R = T*K copies in send order (by global expert, tokens ascending: the permutation's output,
 * moe_utils.py permute) and in the expert layout (local expert e's count[e] rows from off[e],
 * [e][source rank] order: token_dispatcher.py sort_chunks_by_idxs); padded: every local expert gets
 * cap = max count rows (the strided-batched experts), the extra rows map to -1. */
typedef struct {
    int64_t T, K, E, ep, L, R, rows, cap;
    int32_t *expert;          /* [T*K] */
    int64_t *count, *off;     /* [L] */
    int32_t *exp_src;         /* [rows] expert-layout row <- token (ep 1) or send row (ep > 1); -1 padding */
    int32_t *send_tok;        /* [R] send row <- token */
    int32_t *send_from_exp;   /* [R] send row -> its expert-layout row (the unsort) */
    int32_t *row_of;          /* [T*K] copy -> the row unpermute reads: expert layout (ep 1) or send row */
} pp_moe_route;
/* 0, or -1 when out of memory or the shape is impossible (K > E, ep not dividing E, a count over T). */
int pp_moe_route_make(int64_t T, int64_t K, int64_t E, int64_t ep, double imbalance, bool padded, pp_moe_route *r);
void pp_moe_route_free(pp_moe_route *r); /* accepts NULL and a zeroed route */

/* One multi-head latent attention block of a TP shard (mla.cu), DeepSeek-V2/V3. */
enum { PP_MLA_Q = 0, PP_MLA_KV, PP_MLA_ROPE, PP_MLA_ATTN, PP_MLA_PROJ, PP_MLA_PARTS };
extern const char *const pp_mla_part_names[PP_MLA_PARTS];
typedef struct {
    int64_t hidden, heads, q_lora_rank, kv_lora_rank, qk_nope_dim, qk_rope_dim, v_head_dim, seq, mbs, tp;
    char attention[8];        /* flash (cuDNN), unfused */
    double fwd_ms, fwdbwd_ms;
    double fwd_tflops, fwdbwd_tflops; /* mla_fwd_flops (x3) / time, see mla.cu */
    double part_fwd_ms[PP_MLA_PARTS], part_bwd_ms[PP_MLA_PARTS];
    double check_err;
} pp_mla_row;

/* A size that ran out of GPU memory: reported ("OOM at this size") and skipped, the probe goes on. */
typedef struct {
    int probe;                /* PP_PROBE_* */
    char what[160];           /* "fp32 square m=2048 n=2048 k=2048" */
    double need_bytes;        /* held by this size when it failed + the refused request: needed at least */
    double request_bytes;     /* the allocation that failed (0: a library's own, size unknown) */
    double free_bytes;        /* the GPU's free memory when it failed; < 0 unknown */
    bool capped;              /* refused by $PARPLAN_PROBE_MAX_BYTES, not by the GPU */
} pp_oom_row;

typedef struct pp_report {
    /* the machine */
    char gpu[128];
    char measured[32];        /* ISO 8601 UTC */
    int sms, cc_major, cc_minor, gpu_count;
    double memory_bytes, l2_bytes;
    int driver_version, runtime_version, cublaslt_version, cudnn_version, nccl_version;
    /* figures */
    pp_gemm_row *gemm; int n_gemm, cap_gemm;
    pp_bw_row *bw; int n_bw, cap_bw;
    pp_attn_row *attn; int n_attn, cap_attn;
    pp_layer_row *layer; int n_layer, cap_layer;
    pp_nccl_row *nccl; int n_nccl, cap_nccl;
    pp_opt_row *opt; int n_opt, cap_opt;
    pp_moe_row *moe; int n_moe, cap_moe;
    pp_mla_row *mla; int n_mla, cap_mla;
    pp_oom_row *oom; int n_oom, cap_oom;
    /* wrong results (reported, not timed) and notes (skipped parts), one line each */
    char **fail; int n_fail, cap_fail;
    char **note; int n_note, cap_note;
    double probe_s[PP_PROBE_COUNT]; /* wall time of each probe */
} pp_report;

void pp_report_init(pp_report *r);
void pp_report_free(pp_report *r); /* accepts NULL */
/* Append a row. A row with a non-finite or non-positive figure is refused (-1): no NaN or inf is
 * ever printed. Return 0 on success, -1 on refusal or out of memory. */
int pp_report_add_gemm(pp_report *r, const pp_gemm_row *row);
int pp_report_add_bw(pp_report *r, const pp_bw_row *row);
int pp_report_add_attn(pp_report *r, const pp_attn_row *row);
int pp_report_add_layer(pp_report *r, const pp_layer_row *row);
int pp_report_add_nccl(pp_report *r, const pp_nccl_row *row);
int pp_report_add_opt(pp_report *r, const pp_opt_row *row);
/* Refused also when the shape does not hold together (topk > experts, ep not dividing experts,
 * heads not split by tp, a part time negative). */
int pp_report_add_moe(pp_report *r, const pp_moe_row *row);
int pp_report_add_mla(pp_report *r, const pp_mla_row *row);
/* An OOM row: refused (-1) without a probe index or description, or with a negative need. */
int pp_report_add_oom(pp_report *r, const pp_oom_row *row);
void pp_report_fail(pp_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pp_report_note(pp_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An fp8 gemm row's rate over the bf16 row of the same op and shape (0: not fp8, or no such row). */
double pp_report_fp8_speedup(const pp_report *r, int i);
/* The human table: '#'-headed sections, one row per measurement, whitespace-separated. */
int pp_report_write_table(const pp_report *r, FILE *f);
/* One part of it: probe -1 the header, PP_PROBE_* that probe's section, PP_PROBE_COUNT the notes
 * and wrong results (printed as each probe finishes). */
int pp_report_write_section(const pp_report *r, FILE *f, int probe);
/* The profile (cli.md schema, more keys welcome). */
int pp_report_write_yaml(const pp_report *r, FILE *f);
int pp_report_write_json(const pp_report *r, FILE *f);

/* nccl-tests' bus-bandwidth factors (nccl-tests doc/PERFORMANCE.md): busbw = algbw * factor.
 * all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; sendrecv 1.
 * Returns 0 for an unknown op or n < 1. */
double pp_nccl_busbw_factor(const char *op, int64_t ranks);

/* ---------------------------------------------------------------- faults, pure C */

/* Bytes, an integer with an optional binary suffix K, M, G (KiB, MiB, GiB): "4194304", "4M", "4MiB".
 * 0 ok, -1 malformed, zero, or above 2^50. */
int pp_parse_bytes(const char *s, double *out);
/* $PARPLAN_PROBE_INJECT_HANG: "" or "0": none (op[0] = 0); "1" or "any": the first timing launch of a
 * collective, after its check connected the ranks (a hang on the GPU: "any"); an op name (all_reduce
 * ... all_to_all): that op's; "connect": the very first launch, before any connection (a hang in
 * the host, inside NCCL). 0 ok, -1 anything else. */
int pp_parse_hang(const char *s, char *op, size_t n);
/* The one-line reports (no "parplan: " prefix, no trailing newline):
 *   "GPU 7 is not present (this machine has 2)"
 *   "collective all_reduce 1048576 bytes timed out after 5 s on GPUs 0,1 (GPU 0 still running it)..."
 *   "GPU 0 (NVIDIA H200) is busy: <reason>; 512 of 143771 MiB free, the probes need 1024 MiB; held by
 *    pid 123 (python3) 142000 MiB" */
void pp_fmt_gpu_missing(char *buf, size_t n, int index, int count);
void pp_fmt_timeout(char *buf, size_t n, const char *what, double bytes, double timeout_s, const int *gpus,
                    int n_gpus, const int *pending, int n_pending);
typedef struct {
    unsigned pid;
    double used_bytes;        /* < 0: not reported */
    char name[64];            /* /proc/PID/comm, "" when unknown */
} pp_gpu_holder;
/* compute_mode: NVML's (0 default, 2 prohibited, 3 exclusive-process; < 0 unknown). free/total < 0:
 * unknown. n_h < 0: the holders are unknown (no NVML); 0: none visible. */
void pp_fmt_gpu_busy(char *buf, size_t n, int index, const char *name, const char *reason, double free_bytes,
                     double total_bytes, double need_bytes, int compute_mode, const pp_gpu_holder *h, int n_h);

/* Relative L2 error sqrt(sum (a-b)^2 / sum b^2); inf if any value is not finite, 0 if both are 0. */
double pp_rel_l2(const double *a, const double *b, size_t n);

/* ---------------------------------------------------------------- error state */

/* A runtime failure (CUDA, library or allocation error) of the running probe: the first one is
 * kept (file:line and message) and reported by main.c as one line. */
void pp_probe_error(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *pp_probe_error_msg(void); /* "" when none */
void pp_probe_error_clear(void);
/* The same for an allocation failure (cudaErrorMemoryAllocation, CUBLAS_STATUS_ALLOC_FAILED, cuDNN's
 * DEVICE_ALLOCATION_FAILED, or the $PARPLAN_PROBE_MAX_BYTES cap): the probes turn it into an OOM row
 * for the size that hit it and go on. request_bytes 0 and free_bytes < 0 when unknown. */
void pp_probe_error_oom(const char *file, int line, double request_bytes, double free_bytes, bool capped,
                        const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Whether the first recorded error is an allocation failure (and its figures, any pointer may be NULL). */
bool pp_probe_error_is_oom(double *request_bytes, double *free_bytes, bool *capped);

/* ---------------------------------------------------------------- the GPU side */

/* Number of visible CUDA devices; 0 with a reason in why when there is none or no driver. */
int pp_gpu_count(char *why, size_t n);

/* Free GPU memory the probes need at least on each GPU they use (their set-up, a context's lazily
 * loaded kernels and the smallest sizes): below it the GPU is reported busy instead of measured. */
#define PP_PROBE_MIN_FREE_BYTES (1024.0 * 1048576.0)
/* Make device `dev` current, create its context and check that it is usable: not held by another
 * process in exclusive mode, at least need_bytes free. 0, or -1 with the busy line recorded
 * (pp_probe_error) naming the GPU, its free/total memory and the processes holding it (NVML). */
int pp_gpu_claim(int dev, double need_bytes);
/* --mem-limit-gib: allocate all but limit_bytes of dev's free memory (*ballast; NULL when there is
 * less than that free already). 0 or -1 (error recorded). A note says what was left. */
int pp_ballast_take(int dev, double limit_bytes, void **ballast, pp_report *r);

typedef struct pp_probe_ctx pp_probe_ctx;
/* Open the device opt->device, fill the report's machine fields. 0 or -1 (see pp_probe_error). */
int pp_probe_open(pp_probe_ctx **ctx, const pp_probe_opts *opt, pp_report *r);
void pp_probe_close(pp_probe_ctx *ctx); /* accepts NULL */

/* Each probe returns 0 when it ran (wrong results are in r->fail), -1 on a runtime failure. */
int pp_probe_gemm(pp_probe_ctx *ctx);
int pp_probe_bandwidth(pp_probe_ctx *ctx);
int pp_probe_attention(pp_probe_ctx *ctx);
int pp_probe_layer(pp_probe_ctx *ctx);
int pp_probe_optimizer(pp_probe_ctx *ctx);
int pp_probe_moe(pp_probe_ctx *ctx);
int pp_probe_mla(pp_probe_ctx *ctx);
/* NCCL drives its own devices (all local GPUs, or one per MPI rank), no ctx. */
int pp_probe_nccl(const pp_probe_opts *opt, pp_report *r);

/* ---------------------------------------------------------------- MPI (mpi_glue.c) */

/* Start MPI only when launched by mpirun (OMPI_/PMI_/PMIX_ variables). 0 ok. */
int pp_mpi_init(int *argc, char ***argv);
bool pp_mpi_active(void);
int pp_mpi_rank(void);
int pp_mpi_size(void);
int pp_mpi_local_rank(void);
int pp_mpi_bcast(void *buf, size_t bytes); /* from rank 0 */
double pp_mpi_max(double v);
double pp_mpi_sum(double v);
void pp_mpi_finalize(void);

#ifdef __cplusplus
}
#endif
#endif
