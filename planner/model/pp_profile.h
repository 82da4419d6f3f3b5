/* Measured hardware profile (written by `parplan probe`, read by check/plan --profile).
 * Schema: docs/cli.md "Hardware profile"; its sections and keys: pp_profile_schema.h. */
#ifndef PP_PROFILE_H
#define PP_PROFILE_H

#include "pp.h"
#include "pp_profile_schema.h"

typedef struct { pp_dtype dtype; int64_t m, n, k; double tflops; } pp_prof_gemm;
typedef struct { int flash; int64_t b, s, heads, head_dim; double fwd_tflops, fwdbwd_tflops; } pp_prof_attn;
/* kv_heads: the layer's key/value heads (GQA groups), = heads for multi-head attention (the
 * record's optional `kv_heads` key). no_mlp: the layer without its MLP (`activation:
 * none`, parplan-probe layer --no-mlp: the attention part of an MoE layer). */
typedef struct {
    int64_t hidden, heads, seq, mbs, tp;
    double fwd_ms, fwdbwd_ms;
    int64_t kv_heads;
    bool no_mlp;
} pp_prof_layer;
typedef enum { PP_COLL_ALL_REDUCE = 0, PP_COLL_ALL_GATHER, PP_COLL_REDUCE_SCATTER,
               PP_COLL_SENDRECV, PP_COLL_ALL_TO_ALL, PP_COLL_COUNT } pp_coll;
extern const char *const pp_coll_names[PP_COLL_COUNT];
typedef struct { pp_coll op; int64_t ranks; double bytes; double busbw_gbs; } pp_prof_nccl;
/* One fused mixed-precision AdamW step (`parplan-probe optimizer`, probes/optimizer.cu): `params`
 * parameters updated in `ms`, bytes_per_param HBM bytes each (30: fp32 weight, grad, exp_avg,
 * exp_avg_sq read; weight and moments written back and the bf16 copy written, as Megatron-LM's
 * Float16OptimizerWithFloat16Params does), gbs = bytes_per_param * params / time. */
typedef struct { double params, bytes_per_param, ms, gbs; } pp_prof_optimizer;

/* One Mixture-of-Experts MLP layer measured on one GPU (`parplan-probe moe`, probes/moe.cu): the
 * rank's part of a layer of `experts` experts (top-`topk` routing, SwiGLU experts of moe_ffn, a
 * shared expert of shared_ffn or 0) at `tokens` tokens, with `ep`-way expert parallelism (the rank
 * holds experts/ep of them; the all-to-all is not in it), the experts run as a loop of GEMMs
 * (Megatron's SequentialMLP) or a grouped GEMM (TEGroupedMLP). imbalance: the busiest local expert's
 * tokens over the mean (1: balanced routing). Parts in pp_prof_moe_part_names order, each part's own
 * time; 0 when the record has no parts. */
#define PP_PROF_MOE_PARTS PP_PROFILE_MOE_PARTS
extern const char *const pp_prof_moe_part_names[PP_PROF_MOE_PARTS];
typedef struct {
    int64_t hidden, experts, topk, moe_ffn, shared_ffn, tokens, ep;
    double imbalance;
    int grouped;                        /* impl: 0 loop, 1 grouped */
    int sigmoid;                        /* router score function: 0 softmax, 1 sigmoid */
    double fwd_ms, fwdbwd_ms;
    double expert_fwd_tflops, expert_fwdbwd_tflops; /* 0 when absent */
    double fwd_parts_ms[PP_PROF_MOE_PARTS], bwd_parts_ms[PP_PROF_MOE_PARTS];
} pp_prof_moe;

/* One multi-head latent attention block of a TP shard (`parplan-probe mla`, probes/mla.cu,
 * DeepSeek-V2/V3): q_lora_rank 0 is a plain query projection; flash: cuDNN's fused attention ran
 * (else the unfused GEMMs + softmax). Parts in pp_prof_mla_part_names order; 0 when absent. */
#define PP_PROF_MLA_PARTS PP_PROFILE_MLA_PARTS
extern const char *const pp_prof_mla_part_names[PP_PROF_MLA_PARTS];
typedef struct {
    int64_t hidden, heads, q_lora_rank, kv_lora_rank, qk_nope_dim, qk_rope_dim, v_head_dim, seq, mbs, tp;
    int flash;
    double fwd_ms, fwdbwd_ms, fwd_tflops, fwdbwd_tflops;
    double fwd_parts_ms[PP_PROF_MLA_PARTS], bwd_parts_ms[PP_PROF_MLA_PARTS];
} pp_prof_mla;

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
    /* MoE layers: + moe_layer_overhead_s per MoE layer and micro-batch forward (x2 backward:
     * router, dispatcher, the host sync for the token counts) and + expert_overhead_s per local
     * expert (a host-driven GEMM chain per expert in Megatron's SequentialMLP). Neutral: 0, 0. */
    double moe_layer_overhead_s, expert_overhead_s;
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
    pp_prof_optimizer *optimizer; int n_optimizer; /* `optimizer:` records, in file order */
    pp_prof_moe *moe; int n_moe;        /* `moe:` records, in file order */
    pp_prof_mla *mla; int n_mla;        /* `mla:` records, in file order */
    pp_calibration calibration;         /* `calibration:` section; present = false without it */
    /* `probe_calibration:` (calibrate --probe-cache): the same factors fitted with the logs' layers
     * measured by parplan-probe instead of modelled; plan --probe adds them to what it measures.
     * The model's calibration absorbs the model's own errors (its GEMM curve, its elementwise
     * traffic), which do not belong on top of a measurement. */
    pp_calibration probe_calibration;
} pp_profile;

pp_status pp_profile_load_file(pp_profile *p, const char *path, pp_error *err);
void pp_profile_free(pp_profile *p); /* accepts NULL; frees the arrays, not p */

/* Queries used by the time model. Return 0 when the profile has nothing usable. */
/* Achieved TFLOP/s for a GEMM (m,n,k), interpolated in log(flops) over measured shapes. */
double pp_profile_gemm_tflops(const pp_profile *p, pp_dtype dt, int64_t m, int64_t n, int64_t k);
/* Bus bandwidth (GB/s) for a collective of `bytes` over `ranks`, interpolated in log(bytes). */
double pp_profile_busbw_gbs(const pp_profile *p, pp_coll op, int64_t ranks, double bytes);
/* Seconds of one optimizer step over `params` parameters (one GPU's shard), from the `optimizer`
 * records: linear in params between the two records around it (the step streams its state once:
 * time is an affine function of size, launch overhead being the intercept, so linear is exact for
 * such a function and does not bend it as log-log would); below the smallest or above the largest
 * record, params / (that record's params per second): the bandwidth-bound rate of the nearest
 * measurement, never a clamped time (a step over 10x the parameters takes ~10x as long).
 * Records of equal size are averaged. -1 when the profile has no optimizer records (or p is NULL,
 * or params is not a positive finite number): the caller keeps its model's figure. */
double pp_profile_optimizer_s(const pp_profile *p, double params);

#endif
