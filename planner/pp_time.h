/* Step-time model (issue 4): compute, recompute, TP/CP/EP collectives, PP send/recv and
 * bubble, DP gradient reduction with overlap, ZeRO-3 gathers, optimizer step. */
#ifndef PP_TIME_H
#define PP_TIME_H

#include "pp.h"

typedef struct {
    double step_time_s;      /* one optimizer step of the global batch */
    double compute_s;        /* forward + backward math on the critical path */
    double recompute_s;
    double tp_comm_s;
    double cp_comm_s;
    double ep_comm_s;
    double pp_comm_s;
    double bubble_s;
    double dp_comm_s;        /* exposed part of the gradient reduction */
    double zero_gather_s;
    double optimizer_s;
    double samples_per_s;
    double tokens_per_s;
    double model_flops;      /* per step, no recompute (Korthikanti eq. 7) */
    double model_tflops_per_gpu;
    double mfu;              /* against bf16 dense peak */
} pp_time_result;

/* Per-micro-batch times on one rank, the building blocks of the step (and of the ILP, issue 5):
 * one transformer layer forward/backward (TP collectives included), the extra forward of a fully
 * recomputed layer, the embedding (first stage) and output layer + loss (last stage), and one
 * pipeline send/recv of the activations. */
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

#endif
