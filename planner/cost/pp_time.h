/* Step-time model: compute, recompute, TP/CP/EP collectives, PP send/recv and
 * bubble, DP gradient reduction with overlap, ZeRO-3 gathers, optimizer step.
 * Formulas, constants and their sources are in time.c; docs/time-model.md is the overview. */
#ifndef PP_TIME_H
#define PP_TIME_H

#include "pp.h"
#include "pp_profile.h"

typedef struct {
    double step_time_s;      /* one optimizer step of the global batch */
    /* The terms below add up to step_time_s. Per-micro-batch terms are those of the slowest
     * pipeline stage times the micro-batches; bubble_s is the rest of the pipeline time. */
    double compute_s;        /* forward + backward math on the critical path */
    double recompute_s;
    double tp_comm_s;        /* exposed TP collectives */
    double cp_comm_s;
    double ep_comm_s;
    double pp_comm_s;
    double bubble_s;
    double offload_s;        /* compute stalled on activation offloading (--cpu-offload-layers) */
    double host_s;           /* the GPU waiting for FSDP2's Python host (short sequences) */
    double dp_comm_s;        /* exposed part of the gradient reduction (+ param gather) */
    double zero_gather_s;    /* exposed ZeRO-3/FSDP per-micro-batch gathers and scatters */
    double optimizer_s;
    double optimizer_params; /* parameters the fullest rank's optimizer step updates (its shard) */
    double optimizer_measured_s; /* the measured step optimizer_s was read from (ctx.measured_optimizer),
                                  * before the calibration's scale; 0: modelled */
    double samples_per_s;
    double tokens_per_s;
    double model_flops;      /* per step, no recompute (Korthikanti eq. 7) */
    double model_tflops_per_gpu;
    double mfu;              /* against bf16 dense peak */
} pp_time_result;

/* Per-micro-batch times on one rank, the building blocks of the step (and of the stage MILP):
 * one transformer layer forward/backward (TP collectives included), the extra forward of a fully
 * recomputed layer, the embedding (first stage) and output layer + loss (last stage), and one
 * pipeline send/recv of the activations.
 * layer_bwd_s includes selective recomputation when the layout asks for it; layer_recompute_s is
 * always the cost of fully recomputing one layer (whatever the layout's recompute), so that the
 * ILP can choose how many layers of each stage to recompute. */
typedef struct {
    double layer_fwd_s, layer_bwd_s, layer_recompute_s;
    double embed_fwd_s, embed_bwd_s;
    double output_fwd_s, output_bwd_s;
    double p2p_s;
} pp_time_parts;
void pp_time_parts_get(const pp_work *w, const pp_layout *l, pp_time_parts *out);

pp_status pp_time_estimate(const pp_work *w, const pp_layout *l, pp_time_result *out, pp_error *err);
/* Model FLOPs of one step of gbs sequences (72 B L s h^2 (1 + s/6h + V/12Lh) generalised to
 * GQA/SwiGLU/MoE: 6 x active params x tokens + attention). */
double pp_model_flops_per_step(const pp_model *m, int64_t gbs);
/* The same under LoRA (--finetune lora), as Megatron-Bridge counts it: frozen linears forward and
 * data gradient (2 x forward), attention cores 3 x forward, adapters not counted. */
double pp_lora_model_flops_per_step(const pp_model *m, int64_t gbs);
/* Hardware FLOPs of one step: model FLOPs plus the recomputed forward (Narayanan et al. SC'21
 * eq. 3 for full recompute: 96 B L s h^2 (1 + s/6h + V/16Lh); selective adds the attention
 * core's forward). Used to convert published hardware TFLOP/s. */
double pp_hardware_flops_per_step(const pp_model *m, int64_t gbs, pp_recompute rc);

/* ------------------------------------------------------------------ software behaviour */

/* What the training framework overlaps. These are facts about the software version, not fitted
 * constants: pp_time_opts_default gives current Megatron-Core / DeepSpeed / FSDP behaviour;
 * the validation tests set them per published setup (e.g. SC'21 Megatron had no grad overlap). */
typedef struct {
    bool overlap_grad_reduce;  /* DP reduction during the last backward (Megatron
                                  --overlap-grad-reduce, DeepSpeed overlap_comm, FSDP) */
    bool overlap_param_gather; /* dist-opt/ZeRO-1,2: param all-gather during the next forward */
    bool tp_comm_overlap;      /* TP all-gather/reduce-scatter hidden behind the GEMMs
                                  (Megatron --tp-comm-overlap, Transformer Engine userbuffers) */
    bool overlap_p2p;          /* interleaved schedule: extra send/recv overlapped with compute */
    double grad_reduce_bytes;  /* bytes per gradient element in the DP reduction (Megatron bf16:
                                  4, fp32 main grads; DeepSpeed/FSDP: 2) */
    double grad_accum_bytes;   /* HBM bytes per weight element per micro-batch to accumulate its
                                  gradient (Megatron fused fp32 main_grad: 8) */
    double flash_fwd_eff;      /* fused attention FLOP/s as a fraction of the large-GEMM rate */
    double flash_bwd_eff;      /* (backward counted as 2x the forward FLOPs) */
    bool p2p_scatter_gather;   /* PP send/recv split across the TP ranks (Megatron) */
    bool dropout;              /* hidden and attention dropout kernels (Megatron's default 0.1) */
} pp_time_opts;
void pp_time_opts_default(const pp_work *w, pp_time_opts *o);
pp_status pp_time_estimate_opts(const pp_work *w, const pp_layout *l, const pp_time_opts *o,
                                pp_time_result *out, pp_error *err);

/* ------------------------------------------------------------------ fast path (search) */

/* Everything about the work that does not depend on the layout, computed once. */
typedef struct {
    const pp_work *w;
    pp_time_opts opts;
    double peak_flops;        /* bf16 (else fp16) dense peak, FLOP/s */
    double gemm_rate;         /* large-GEMM FLOP/s: peak x gemm_eff x the power limit's factor */
    double gemm_shape_c;      /* shape constant of the GEMM efficiency curve (elements) */
    double gemm_norm;         /* 1 + 3c/8192: the curve is 1 at 8192^3 */
    /* FP8 (--precision fp8): the transformer layers' linear GEMMs run on the FP8 tensor cores
     * (the same curve at the FP8 rate); attention, the router and the output layer stay 16-bit. */
    bool fp8;
    double gemm_rate_fp8, gemm_shape_c_fp8, gemm_norm_fp8;
    double mem_rate;          /* achieved elementwise bytes/s */
    double flash_fwd_rate, flash_bwd_rate; /* achieved FLOP/s of fused attention */
    double nvlink_bw, net_bw; /* achieved bus bandwidth inside a node / per GPU across nodes, B/s */
    double lat_intra_s, lat_inter_s;
    /* parameters (elements), unsharded */
    double kind_dense_params[PP_LAYER_KINDS];  /* one layer of kind k without its routed experts */
    double kind_expert_params[PP_LAYER_KINDS]; /* its routed experts (0 for a dense layer) */
    double mtp_extra_params;  /* one MTP layer's projection and norms */
    double embed_params, final_params, output_params;
    double lora_layer_params; /* LoRA: one layer's adapters (the only trained parameters); 0 otherwise */
    double model_flops;       /* per step */
    /* The optimizer step from the profile's `optimizer` records (parplan-probe optimizer) where it
     * has them, instead of the memory-bound formula. Off after pp_time_ctx_init: only measured
     * steps (pp_time_step_measured, plan --probe) read it, so an analytic plan does not move
     * with whether its profile carries an optimizer sweep. */
    bool measured_optimizer;
} pp_time_ctx;

/* The per-micro-batch terms of one transformer layer of one kind on one rank. */
typedef struct {
    double fwd_compute_s, fwd_tp_s, fwd_cp_s, fwd_ep_s;
    double bwd_compute_s, bwd_tp_s, bwd_cp_s, bwd_ep_s;
    double sel_recompute_s;   /* selective recompute (attention core) of one layer */
    double recompute_less_s;  /* what recomputing the layer costs less than its forward again: in a
                                 compiled block torchao's float8 casts it does not redo, and the
                                 no-AC backward's norm kernels it spares (tensorwise) */
} pp_time_terms;

/* One transformer layer (and the first/last stage extras) for one micro-batch on one rank,
 * split by what the time is spent on. Depends only on tp, cp, ep, etp, mbs, sp and the work.
 * The first ten fields are the terms of the model's main layer kind (`kind_main`: the kind of
 * its last decoder layer, MoE for an MoE model); callers that measure a layer replace them.
 * `kind[k]` holds the terms of every other kind present (a dense first layer, windowed
 * attention); pp_time_step reads the fields above for kind_main and kind[k] for the others. */
typedef struct {
    double fwd_compute_s, fwd_tp_s, fwd_cp_s, fwd_ep_s;
    double bwd_compute_s, bwd_tp_s, bwd_cp_s, bwd_ep_s;
    double sel_recompute_s;   /* selective recompute (attention core) of one layer */
    double recompute_less_s;  /* what recomputing the layer costs less than its forward again */
    double embed_fwd_s, embed_bwd_s, output_fwd_s, output_bwd_s;
    double embed_tp_s, output_tp_s; /* their TP collectives (included in the fields above) */
    double p2p_bytes;         /* activations sent per stage boundary per micro-batch, per rank */
    double p2p_gather_s;      /* intra-node all-gather after a scatter-gather send (no SP) */
    double offload_bytes;     /* --cpu-offload-layers: the offloaded layers' stored bytes per
                                 micro-batch (pp_memory_offload_bytes); 0 without it */
    int kind_main;
    unsigned kinds_present;   /* bit k set: the model has layers (or MTP layers) of kind k */
    pp_time_terms kind[PP_LAYER_KINDS];
} pp_time_layer;
/* The terms of kind k (the main fields for kind_main). */
void pp_time_layer_terms(const pp_time_layer *ly, int k, pp_time_terms *out);
/* Scale every kind's compute terms (fwd, bwd, selective recompute) by the main kind's
 * measured/modelled ratio after a caller replaced the main fields with a measurement. */
void pp_time_layer_rescale_kinds(pp_time_layer *ly, double fwd_ratio, double bwd_ratio);

void pp_time_ctx_init(pp_time_ctx *c, const pp_work *w, const pp_time_opts *o);
void pp_time_layer_get(const pp_time_ctx *c, const pp_layout *l, pp_time_layer *out);
/* The step of a validated layout from its layer times (no checks, no allocation). */
void pp_time_step(const pp_time_ctx *c, const pp_layout *l, const pp_time_layer *ly,
                  pp_time_result *out);

/* Building blocks, exposed for tests. */
typedef enum { PP_TC_ALL_REDUCE = 0, PP_TC_ALL_GATHER, PP_TC_REDUCE_SCATTER, PP_TC_ALL_TO_ALL,
               PP_TC_SENDRECV, PP_TC_DISPATCH } pp_time_coll;
/* Time of one collective of `bytes` (all-reduce: the buffer; all-gather: the output;
 * reduce-scatter: the input) over n ranks of which per_node share a node. */
double pp_time_collective_s(const pp_time_ctx *c, pp_time_coll op, int64_t n, int64_t per_node,
                            double bytes);
/* One dispatch or combine of Megatron's flex dispatcher (DeepEP, HybridEP) over n ranks of which
 * per_node share a node: nvl_bytes leave the rank over NVLink, net_bytes over its NIC, both at
 * once (pp_layer_dispatch_fanout gives the counts). */
double pp_time_dispatch_s(const pp_time_ctx *c, int64_t n, int64_t per_node, double nvl_bytes, double net_bytes);
/* Achieved FLOP/s of an (m x k) x (k x n) bf16 GEMM. */
double pp_time_gemm_rate(const pp_time_ctx *c, double m, double n, double k);
/* The fused attention core of one micro-batch (flash kernels: causal queries attend keys_avg keys
 * each; torchtitan's FlashAttention-2 on Hopper with its per-query-block cost), forward and
 * backward seconds */
/* The output layer's GEMMs over an aligned vocabulary shard's time, forward and backward, for the
 * layout's 16-bit shard of pp_layer_vocab / tp rows (1 where it is a multiple of 8; time.c
 * LOGITS_MISALIGNED, measured); returns the shard's rows. */
int64_t pp_time_logits_misaligned(const pp_work *w, const pp_layout *l, double *fwd_x, double *bwd_x);
void pp_time_flash_s(const pp_time_ctx *c, double batch_heads, double queries, double keys_avg, double qk_dim,
                     double v_dim, double *fwd_s, double *bwd_s);
/* What a collective of `comm` seconds run beside `window` seconds of compute leaves exposed
 * (what is not hidden, and the hidden part's cost to the compute it runs beside). */
double pp_time_behind(double comm, double window);

/* Called by pp_time_ctx_init and pp_time_layer_get (time.c) when the work's profile carries a
 * calibration: scale the rates, then add the per-layer terms. */
void pp_calibration_apply_ctx(const pp_calibration *cal, pp_time_ctx *c);
void pp_calibration_apply_layer(const pp_calibration *cal, const pp_time_ctx *c, const pp_layout *l,
                                pp_time_layer *ly);

#endif
