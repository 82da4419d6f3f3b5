/* A small cost provider for the stage MILP tests, independent of planner/cost/memory.c and time.c:
 * the published formulas of docs/formulas.md, nothing calibrated.
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

#include <math.h>
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

/* The per-rank quantities of the formulas above. */
typedef struct {
    double rate, layer_params, act_layer, act_input, fwd_flops, out_flops;
} synth_terms;

static inline synth_terms synth_terms_get(const synth_work *s)
{
    double h = s->hidden, sq = s->seq, b = s->mbs, t = s->tp, V = s->vocab;
    return (synth_terms){
        .rate = s->peak_flops * s->eff,
        .layer_params = 12 * h * h / t,
        .act_layer = 34 * sq * b * h / t,
        .act_input = 2 * sq * b * h / t,
        .fwd_flops = (24 * b * sq * h * h + 4 * b * sq * sq * h) / t,
        .out_flops = 2 * b * sq * h * V / t,
    };
}

static inline void synth_costs(const synth_work *s, pp_stages_costs *c)
{
    memset(c, 0, sizeof *c);
    int64_t p = s->stages, L = s->layers, m = s->microbatches;
    double h = s->hidden, sq = s->seq, b = s->mbs, t = s->tp, V = s->vocab;
    synth_terms st = synth_terms_get(s);
    double rate = st.rate, layer_params = st.layer_params, act_layer = st.act_layer;
    double act_input = st.act_input, fwd_flops = st.fwd_flops, out_flops = st.out_flops;
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

/* The 30-layer / 4-stage / 256k-vocabulary case, the base the stage tests and benchmarks vary:
 * h 4096, s 4096, t 1, 16 micro-batches, an 80 GB device (H100 bf16 at 60%). */
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

/* Layers of several kinds on top of synth_costs (by_kind costs): layer i is MoE when
 * i >= first_dense and i % moe_every == moe_every - 1 (moe_every 0: never), windowed when
 * window_every > 0 and i % window_every != window_every - 1 (Gemma 3: 5 windowed, 1 full);
 * mtp MTP layers (MoE) sit on the last stage.
 *   MoE layer: moe_time x the dense layer's time (routing, all-to-all, expert GEMMs),
 *     moe_params x its parameters on the rank (experts sharded by EP) and moe_act x its
 *     activations (routed token copies), and a larger MLP working set (2x);
 *   windowed layer: window_time x the time (attention FLOPs over the window), same memory;
 *   the stage's working set: the largest MLP working set present (MoE or dense), plus, when it
 *   recomputes, the largest recomputed layer's full activations (memory.c's recompute set);
 *   an MTP layer: one MoE layer's state and activations and one more output layer pass. */
typedef struct {
    int64_t first_dense, moe_every, window_every, mtp;
    double moe_time, moe_params, moe_act, window_time;
} synth_kinds;

static inline int synth_layer_kind(const synth_kinds *k, int64_t i)
{
    int kind = 0;
    if (k->moe_every > 0 && i >= k->first_dense && i % k->moe_every == k->moe_every - 1)
        kind |= PP_LAYER_MOE;
    if (k->window_every > 0 && i % k->window_every != k->window_every - 1) kind |= PP_LAYER_WINDOW;
    return kind;
}

static inline bool synth_kind_costs(const synth_work *s, const synth_kinds *kk, pp_stages_costs *c)
{
    pp_stages_costs_free(c);
    synth_costs(s, c);
    pp_error err = {0};
    if (pp_stages_costs_kinds_alloc(c, &err) != PP_OK) return false;
    int64_t p = s->stages, m = s->microbatches, L = s->layers;
    synth_terms st = synth_terms_get(s);
    double rate = st.rate, layer_params = st.layer_params, act_layer = st.act_layer;
    double act_input = st.act_input, fwd_flops = st.fwd_flops, out_flops = st.out_flops;
    /* the MLP backward's working set: 2 16-bit tensors of the 4h-wide inner activation */
    double mlp_work = 2 * s->seq * s->mbs * 4 * s->hidden / s->tp * 2;
    for (int64_t i = 0; i < L; i++) c->layer_kind[i] = (int8_t)synth_layer_kind(kk, i);
    for (int64_t j = 0; j < p; j++) {
        double inflight = (double)(p - j < m ? p - j : m);
        for (int k = 0; k < PP_LAYER_KINDS; k++) {
            bool moe = k & PP_LAYER_MOE, win = k & PP_LAYER_WINDOW;
            double tf = fwd_flops / rate * (moe ? kk->moe_time : 1) * (win ? kk->window_time : 1);
            double act = act_layer * (moe ? kk->moe_act : 1);
            c->kind_time_layer_s[j][k] = 3 * tf;
            c->kind_time_recompute_s[j][k] = tf;
            c->kind_mem_layer_bytes[j][k] = 18 * layer_params * (moe ? kk->moe_params : 1) + inflight * act;
            c->kind_mem_saved_bytes[j][k] = inflight * (act - act_input);
        }
        double base = c->mem_base_bytes[j];
        if (j == p - 1 && kk->mtp > 0) {
            double mtp = (double)kk->mtp;
            base += mtp * (18 * layer_params * kk->moe_params + act_layer * kk->moe_act);
            c->time_base_s[j] += mtp * (3 * fwd_flops / rate * kk->moe_time + 3 * out_flops / rate);
        }
        for (unsigned P = 1; P < PP_STAGES_KIND_SETS; P++)
            for (unsigned Q = 0; Q < PP_STAGES_KIND_SETS; Q++) {
                if ((Q & P) != Q) continue;
                bool any_moe = (P & 1u << PP_LAYER_MOE) || (P & 1u << (PP_LAYER_MOE | PP_LAYER_WINDOW)) ||
                               (j == p - 1 && kk->mtp > 0);
                double work = mlp_work * (any_moe ? 2 : 1), rc = 0;
                for (int k = 0; k < PP_LAYER_KINDS; k++)
                    if (Q >> k & 1u) rc = fmax(rc, act_layer * (k & PP_LAYER_MOE ? kk->moe_act : 1));
                c->kind_mem_set_bytes[pp_stages_set_index(j, P, Q)] = base + work + rc;
            }
    }
    return true;
}

#endif
