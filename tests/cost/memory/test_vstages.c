/* Memory and step time per stage of an uneven interleaved split, against arithmetic done by hand
 * from the model's own per-layer figures (its activation table, its layer times): the GPT-2.7B
 * shape of the real runs (mem_shapes.h) cut to 6 layers (8 for the uniform reference) on
 * pp 2 x vpp 2, one GPU per stage, 4 micro-batches of 1 sequence.
 *
 * The balanced split of 6 layers (pp_layout_vstage_layers): the 6 layers, the embedding and the
 * loss are 8 slots over the 4 virtual stages, 2 each; the embedding takes one of virtual stage 0's
 * and the loss one of virtual stage 3's: layers [1, 2, 2, 1] in model order. Rank 0 holds virtual
 * stages 0 and 2 (its chunks hold 1 and 2 layers), rank 1 holds 1 and 3 (2 and 1).
 *
 * Activations (Megatron's interleaved schedule, schedules.py): m = 4 micro-batches, so each rank
 * runs T = m v = 8 chunk forwards; forward k runs chunk (k mod 4) / 2 (0 0 1 1 0 0 1 1), backward
 * k chunk 1 minus that (1 1 0 0 ...); rank r warms up with W = (p - r - 1) 2 + (v - 1) p forwards.
 *   rank 0: W = 4: after the warm-up 1+1+2+2 = 6 layer-micro-batches held; then forward 4 (+1) 7,
 *           backward 0 (-2) 5; forward 5 (+1) 6, backward 1 (-2) 4; forward 6 (+2) 6, backward 2
 *           (-1) 5; forward 7 (+2) 7: at most 7. Uniform (8 layers, 2 per chunk): (W + 1) x 2 = 10.
 *   rank 1: W = 2: 2+2 = 4; forward 2 (+1) 5, backward 0 (-1) 4; forward 3 (+1) 5, -1 4;
 *           forward 4 (+2) 6, backward 2 (-2) 4; forward 5 (+2) 6: at most 6. Uniform: 3 x 2 = 6.
 * The stage-level terms (batch data, the embedding's and the loss's) are per micro-batch in
 * flight, ceil((W + 1) / v): 3 and 2 in both layouts. So against the uniform 8-layer run (the same
 * shapes, hence the same per-layer table B = pp_memory_layer_table's bytes):
 *   activations rank 0 = uniform rank 0 - 3 B, rank 1 = uniform rank 1.
 * The given split 'Et|t*3|t*2|L' = [1, 3, 2, 0]: rank 0 the same chunks as above; rank 1 chunks
 * [3, 0]: W = 2, 3+3 = 6; forward 2 (+0) 6, backward 0 (-0); forward 3 (+0); forward 4 (+3) 9,
 * backward 2 (-3) 6: at most 9 = uniform rank 1 + 3 B.
 *
 * Step time (time_step.c): with one GPU per stage a layer costs t = its forward + backward compute
 * per micro-batch (pp_time_layer_get), the embedding E and the output layer + loss O theirs. The
 * balanced chunks cost [t + E, 2t, 2t, t + O], the stages 3t + E and 3t + O; the bubble is
 * (p - 1) x the slowest chunk = max(t + E, 2t, t + O), compute m x the slower stage = 4 (3t +
 * max(E, O)). The given split: chunks [t + E, 3t, 2t, O]: the same stages, bubble max(t + E, 3t, O).
 * Uniform 8 layers: (p - 1) / v x the mean stage = (8t + E + O) / 4. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mem_shapes.h"
#include "pp_memory.h"
#include "pp_time.h"
#include "tap.h"

static void work(pp_work *w, int64_t layers)
{
    memset(w, 0, sizeof *w);
    mem_shape(&w->model, "gpt-2.7b");
    w->model.layers = layers;
    mem_h200(&w->gpu);
    w->gpus = 2;
    w->gpus_per_node = 2;
    w->gbs = 4;
    w->framework = PP_FW_MEGATRON;
    w->attention = PP_ATTN_FLASH;
    pp_stack_init(&w->stack);
}

static pp_layout layout(void)
{
    pp_layout l;
    pp_layout_init(&l);
    l.pp = 2;
    l.vpp = 2;
    return l;
}

static bool near(double a, double b, double rel) { return fabs(a - b) <= rel * fmax(fabs(a), fabs(b)); }

int main(void)
{
    pp_work w6, w8;
    work(&w6, 6);
    work(&w8, 8);
    pp_layout bal = layout(), uni = layout(), giv = layout();
    static const int given[4] = {1, 3, 2, 0};
    giv.vstage_layers = given;
    pp_error e = {0};
    tap_ok(pp_layout_validate(&w6, &bal, &e) == PP_OK && pp_layout_validate(&w8, &uni, &e) == PP_OK &&
               pp_layout_validate(&w6, &giv, &e) == PP_OK,
           "the three layouts validate (%s)", e.msg);
    int64_t split[4];
    for (int k = 0; k < 4; k++) split[k] = pp_layout_vstage_layers(&w6, &bal, k % 2, k / 2);
    tap_ok(split[0] == 1 && split[1] == 2 && split[2] == 2 && split[3] == 1,
           "balanced split of 6 layers on 2 x 2: [%lld, %lld, %lld, %lld] = [1, 2, 2, 1]", (long long)split[0],
           (long long)split[1], (long long)split[2], (long long)split[3]);
    tap_ok(pp_layout_stage_layers(&w6, &bal, 0) == 3 && pp_layout_stage_layers(&w6, &bal, 1) == 3 &&
               pp_layout_vstage_first_layer(&w6, &bal, 0, 1) == 3 && pp_layout_vstage_first_layer(&w6, &bal, 1, 1) == 5,
           "stages of 3 layers; rank 0's second chunk starts at layer 3, rank 1's at layer 5");

    /* memory */
    static pp_mem_result mb, mu, mg;
    bool ok = pp_memory_estimate(&w6, &bal, &mb, &e) == PP_OK && pp_memory_estimate(&w8, &uni, &mu, &e) == PP_OK &&
              pp_memory_estimate(&w6, &giv, &mg, &e) == PP_OK;
    tap_ok(ok, "memory estimates (%s)", e.msg);
    pp_act_table tb;
    pp_memory_layer_table(&w6, &bal, PP_RC_NONE, &tb);
    double B = tb.bytes;
    double d0 = mu.stages[0].activations_bytes - mb.stages[0].activations_bytes;
    double d1 = mu.stages[1].activations_bytes - mb.stages[1].activations_bytes;
    tap_ok(B > 0 && near(d0, 3 * B, 1e-12), "balanced rank 0 holds 7 layer-micro-batches, uniform 10: %.0f = 3 x %.0f bytes",
           d0, B);
    tap_ok(fabs(d1) <= 1e-9 * B, "balanced rank 1 holds 6, uniform 6: difference %.3g bytes", d1);
    tap_ok(mb.stages[0].inflight == 3 && mb.stages[1].inflight == 2 && mu.stages[0].inflight == 3 &&
               mu.stages[1].inflight == 2,
           "micro-batches in flight 3 and 2 in both (%lld %lld / %lld %lld)", (long long)mb.stages[0].inflight,
           (long long)mb.stages[1].inflight, (long long)mu.stages[0].inflight, (long long)mu.stages[1].inflight);
    double g1 = mg.stages[1].activations_bytes - mu.stages[1].activations_bytes;
    tap_ok(near(g1, 3 * B, 1e-12) && mg.stages[0].activations_bytes == mb.stages[0].activations_bytes,
           "given 'Et|t*3|t*2|L': rank 1 holds 9 = uniform + 3 x B (%.0f), rank 0 as balanced", g1);
    double wl0 = mu.stages[0].weights_bytes - mb.stages[0].weights_bytes;
    double wl1 = mu.stages[1].weights_bytes - mb.stages[1].weights_bytes;
    tap_ok(wl0 > 0 && near(wl0, wl1, 1e-12) && mg.stages[1].weights_bytes == mb.stages[1].weights_bytes,
           "each stage holds one layer less than uniform (%.0f = %.0f bytes of weights); the given split's rank 1 "
           "(3 + 0 layers) weighs as the balanced one's (2 + 1)", wl0, wl1);

    /* step time */
    pp_time_ctx c;
    pp_time_ctx_init(&c, &w6, NULL);
    pp_time_layer ly;
    pp_time_layer_get(&c, &bal, &ly);
    double t = ly.fwd_compute_s + ly.bwd_compute_s, E = ly.embed_fwd_s + ly.embed_bwd_s;
    double O = ly.output_fwd_s + ly.output_bwd_s;
    tap_ok(ly.fwd_tp_s + ly.bwd_tp_s + ly.embed_tp_s + ly.output_tp_s == 0 && t > 0 && E > 0 && O > 0,
           "one GPU per stage: no TP collectives; t %.4g s, E %.4g s, O %.4g s per micro-batch", t, E, O);
    pp_time_result rb, ru, rg;
    ok = pp_time_estimate(&w6, &bal, &rb, &e) == PP_OK && pp_time_estimate(&w8, &uni, &ru, &e) == PP_OK &&
         pp_time_estimate(&w6, &giv, &rg, &e) == PP_OK;
    tap_ok(ok, "time estimates (%s)", e.msg);
    double bub = fmax(fmax(t + E, 2 * t), t + O);
    tap_ok(near(rb.bubble_s, bub, 1e-9), "balanced: bubble = max(t+E, 2t, t+O) = %.6g s (model %.6g)", bub, rb.bubble_s);
    double comp = 4 * (3 * t + fmax(E, O));
    tap_ok(near(rb.compute_s, comp, 1e-9), "balanced: compute = 4 (3t + max(E, O)) = %.6g s (model %.6g)", comp,
           rb.compute_s);
    double bubg = fmax(fmax(t + E, 3 * t), O);
    tap_ok(near(rg.bubble_s, bubg, 1e-9) && near(rg.compute_s, comp, 1e-9),
           "given: bubble = max(t+E, 3t, O) = %.6g s (model %.6g), the same compute", bubg, rg.bubble_s);
    double bubu = (8 * t + E + O) / 4;
    tap_ok(near(ru.bubble_s, bubu, 1e-9), "uniform 8 layers: bubble = (8t + E + O) / 4 = %.6g s (model %.6g)", bubu,
           ru.bubble_s);
    return tap_done();
}
