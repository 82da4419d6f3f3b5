/* Measured hardware profile (written by `parplan probe`, read by check/plan --profile).
 * Schema: ../shared/reference/cli.md "Hardware profile". */
#ifndef PP_PROFILE_H
#define PP_PROFILE_H

#include "pp.h"

typedef struct { pp_dtype dtype; int64_t m, n, k; double tflops; } pp_prof_gemm;
typedef struct { int flash; int64_t b, s, heads, head_dim; double fwd_tflops, fwdbwd_tflops; } pp_prof_attn;
typedef struct { int64_t hidden, heads, seq, mbs, tp; double fwd_ms, fwdbwd_ms; } pp_prof_layer;
typedef enum { PP_COLL_ALL_REDUCE = 0, PP_COLL_ALL_GATHER, PP_COLL_REDUCE_SCATTER,
               PP_COLL_SENDRECV, PP_COLL_ALL_TO_ALL, PP_COLL_COUNT } pp_coll;
extern const char *const pp_coll_names[PP_COLL_COUNT];
typedef struct { pp_coll op; int64_t ranks; double bytes; double busbw_gbs; } pp_prof_nccl;

/* Efficiency factors of one software stack on one cluster, fitted by `parplan calibrate` on
 * real training logs (calibrate.c) and applied by the time model when present (time.c):
 *   GEMM time / gemm_scale, elementwise and other memory-bound bytes x elementwise_scale,
 *   + score_bytes HBM bytes per attention score and pass (unfused attention only),
 *   + layer_overhead_s per layer and micro-batch forward (x2 backward: kernel launches, Python),
 *   optimizer step x optimizer_scale.
 * Neutral values: 1, 1, 0, 0, 1. The rest documents the fit. */
typedef struct {
    bool present;
    double gemm_scale, elementwise_scale, score_bytes, layer_overhead_s, optimizer_scale;
    int64_t runs;                       /* logs fitted */
    double mape_before, mape_after, mape_loo; /* percent, on those logs; mape_loo < 0: not computed */
    char stack[160];                    /* software the logs ran ("megatron local, unfused attention") */
    char fitted[64];                    /* ISO date */
} pp_calibration;

typedef struct pp_profile {
    char gpu[128];
    char measured[64];
    pp_prof_gemm *gemm; int n_gemm;
    double copy_gbs, mul_gbs;
    pp_prof_attn *attn; int n_attn;
    pp_prof_layer *layer; int n_layer;
    pp_prof_nccl *nccl; int n_nccl;
    pp_calibration calibration;         /* `calibration:` section; present = false without it */
} pp_profile;

pp_status pp_profile_load_file(pp_profile *p, const char *path, pp_error *err);
void pp_profile_free(pp_profile *p); /* accepts NULL; frees the arrays, not p */

/* Queries used by the time model. Return 0 when the profile has nothing usable. */
/* Achieved TFLOP/s for a GEMM (m,n,k), interpolated in log(flops) over measured shapes. */
double pp_profile_gemm_tflops(const pp_profile *p, pp_dtype dt, int64_t m, int64_t n, int64_t k);
/* Bus bandwidth (GB/s) for a collective of `bytes` over `ranks`, interpolated in log(bytes). */
double pp_profile_busbw_gbs(const pp_profile *p, pp_coll op, int64_t ranks, double bytes);

#endif
