/* parplan-probe: measures GEMM, memory bandwidth, attention, a transformer layer and NCCL
 * collectives on the local GPUs and writes a hardware profile (schema:
 * ../shared/reference/cli.md "Hardware profile") that `parplan check/plan --profile` read.
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

enum { PP_PROBE_GEMM = 0, PP_PROBE_BANDWIDTH, PP_PROBE_ATTENTION, PP_PROBE_LAYER, PP_PROBE_NCCL,
       PP_PROBE_COUNT };
extern const char *const pp_probe_names[PP_PROBE_COUNT];

#define PP_PROBE_MAX_TP 8

/* What to measure (parsed by main.c). */
typedef struct {
    bool run[PP_PROBE_COUNT];
    const char *output;       /* -o FILE: YAML profile (JSON when FILE ends in .json); NULL: none */
    bool json;                /* --json: one JSON document on stdout instead of the table */
    bool quiet;               /* -q: no progress lines */
    bool quick;               /* --quick: small sizes and few repeats (tests, smoke runs) */
    int device;               /* --device N: the GPU of the single-GPU probes */
    int gpus;                 /* --gpus N: GPUs the nccl probe drives in one process (0: all) */
    /* A model's shapes (--hidden ...). hidden == 0: the default shapes (those of the PyTorch
     * anchors in ../shared/anchors, so that the figures compare one to one). */
    int64_t hidden, heads, kv_heads, ffn, seq, mbs;
    bool swiglu;
    int64_t tp[PP_PROBE_MAX_TP];
    int n_tp;
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
    int64_t hidden, heads, seq, mbs, tp, ffn;
    char act[8];              /* gelu, swiglu */
    char attention[8];        /* flash, unfused */
    double fwd_ms, fwdbwd_ms;
    double fwd_tflops, fwdbwd_tflops; /* model FLOPs of the shard (24bsh^2 + 4bs^2h for GPT, /tp) */
    double check_err;         /* largest relative error of the small-size check against the CPU */
} pp_layer_row;

typedef struct {
    char op[16];              /* all_reduce all_gather reduce_scatter sendrecv all_to_all */
    int64_t ranks;
    double bytes;             /* nccl-tests' size: all_gather the output, reduce_scatter the input */
    double us, algbw_gbs, busbw_gbs;
} pp_nccl_row;

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
void pp_report_fail(pp_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pp_report_note(pp_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

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

/* Relative L2 error sqrt(sum (a-b)^2 / sum b^2); inf if any value is not finite, 0 if both are 0. */
double pp_rel_l2(const double *a, const double *b, size_t n);

/* ---------------------------------------------------------------- error state */

/* A runtime failure (CUDA, library or allocation error) of the running probe: the first one is
 * kept (file:line and message) and reported by main.c as one line. */
void pp_probe_error(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *pp_probe_error_msg(void); /* "" when none */
void pp_probe_error_clear(void);

/* ---------------------------------------------------------------- the GPU side */

/* Number of visible CUDA devices; 0 with a reason in why when there is none or no driver. */
int pp_gpu_count(char *why, size_t n);

typedef struct pp_probe_ctx pp_probe_ctx;
/* Open the device opt->device, fill the report's machine fields. 0 or -1 (see pp_probe_error). */
int pp_probe_open(pp_probe_ctx **ctx, const pp_probe_opts *opt, pp_report *r);
void pp_probe_close(pp_probe_ctx *ctx); /* accepts NULL */

/* Each probe returns 0 when it ran (wrong results are in r->fail), -1 on a runtime failure. */
int pp_probe_gemm(pp_probe_ctx *ctx);
int pp_probe_bandwidth(pp_probe_ctx *ctx);
int pp_probe_attention(pp_probe_ctx *ctx);
int pp_probe_layer(pp_probe_ctx *ctx);
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
