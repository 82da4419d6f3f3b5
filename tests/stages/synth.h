/* A small cost provider for the stage MILP tests, independent of planner/memory.c and time.c:
 * the published formulas of ../shared/reference/formulas.md, nothing calibrated.
 *   weights + grads + Adam: 18 bytes per parameter (Megatron bf16 + fp32 main grads + fp32 Adam),
 *   layer parameters 12 h^2 (GPT, Narayanan et al. SC'21 eq. 2), divided by t;
 *   activations per layer and micro-batch: 34 s b h / t (Korthikanti et al. 2022 table 2, TP + SP,
 *   flash attention so no 5as/h term); full recompute keeps 2 s b h / t (the layer input) and
 *   needs one layer's full activations while recomputing (the transient);
 *   stage j holds min(p - j, m) micro-batches in flight (1F1B);
 *   embedding V h / t parameters on the first stage, output layer V h / t (untied) and fp32 logits
 *   4 s b V / t twice (logits and their gradient) on the last stage;
 *   layer forward 24 b s h^2 + 4 b s^2 h FLOPs / t, backward twice that, recompute one forward;
 *   output layer 2 b s h V / t forward, at eff x peak. */
#ifndef PP_TEST_STAGES_SYNTH_H
#define PP_TEST_STAGES_SYNTH_H

#include <string.h>

#include "pp_stages.h"

typedef struct {
    int64_t layers, stages, microbatches;
    double hidden, seq, vocab, mbs, tp;
    double peak_flops, eff;
    double capacity_bytes, reserve_bytes;
    double p2p_gbs;
    bool allow_recompute;
} synth_work;

static inline void synth_costs(const synth_work *s, pp_stages_costs *c)
{
    memset(c, 0, sizeof *c);
    int64_t p = s->stages, L = s->layers, m = s->microbatches;
    double h = s->hidden, sq = s->seq, b = s->mbs, t = s->tp, V = s->vocab;
    double rate = s->peak_flops * s->eff;
    double layer_params = 12 * h * h / t;
    double act_layer = 34 * sq * b * h / t, act_input = 2 * sq * b * h / t;
    double fwd_flops = (24 * b * sq * h * h + 4 * b * sq * sq * h) / t;
    double out_flops = 2 * b * sq * h * V / t;
    double p2p_s = s->p2p_gbs > 0 ? 2 * sq * b * h / (s->p2p_gbs * 1e9) : 0;
    c->n_stages = p;
    c->layers = L;
    c->microbatches = m;
    c->obj_max_weight = (double)(m - 1);
    c->obj_sum_weight = 1;
    c->allow_recompute = s->allow_recompute;
    c->uniform_recompute = 0;
    for (int64_t j = 0; j < p; j++) {
        int64_t inflight = p - j < m ? p - j : m;
        c->layers_min[j] = 1;
        c->layers_max[j] = L - (p - 1);
        c->time_layer_s[j] = 3 * fwd_flops / rate;
        c->time_recompute_s[j] = fwd_flops / rate;
        c->time_base_s[j] = p > 1 ? 2 * p2p_s * ((j > 0) + (j < p - 1)) : 0;
        c->mem_base_bytes[j] = s->reserve_bytes;
        c->mem_layer_bytes[j] = 18 * layer_params + (double)inflight * act_layer;
        c->mem_recompute_saved_bytes[j] = (double)inflight * (act_layer - act_input);
        c->mem_limit_bytes[j] = s->capacity_bytes;
    }
    c->mem_base_bytes[0] += 18 * V * h / t;                     /* embedding */
    c->time_base_s[0] += 3 * (2 * b * sq * h) / (s->peak_flops * 0.05); /* gather, memory-bound */
    c->mem_base_bytes[p - 1] += 18 * V * h / t + 2 * 4 * sq * b * V / t; /* output + fp32 logits */
    c->time_base_s[p - 1] += 3 * out_flops / rate;
    /* With recompute: the same, plus one layer's full activations while recomputing it. */
    for (int64_t j = 0; j < p; j++) {
        c->mem_rc_base_bytes[j] = c->mem_base_bytes[j] + act_layer;
        c->mem_rc_layer_bytes[j] = c->mem_layer_bytes[j];
    }
}

/* The 30-layer / 4-stage / 256k-vocabulary case of issue 5: h 4096, s 4096, t 1, 16 micro-batches,
 * an 80 GB device (H100 bf16 at 60%). */
static inline void synth_work_256k(synth_work *s)
{
    memset(s, 0, sizeof *s);
    s->layers = 30, s->stages = 4, s->microbatches = 16;
    s->hidden = 4096, s->seq = 4096, s->vocab = 256000, s->mbs = 1, s->tp = 1;
    s->peak_flops = 989e12, s->eff = 0.6;
    s->capacity_bytes = 80e9, s->reserve_bytes = 3e9;
    s->p2p_gbs = 300;
    s->allow_recompute = false;
}

#endif
