/* The FSDP2 memory terms (planner/cost/memory_fsdp.c) against hand-computed cases: the moment the peak
 * is at and its bytes, written out term by term here, for the Llama-3.2-3B and Llama-3-8B shapes
 * of tests/data/fsdp/runs.csv; the per-token activation tables; what sharding, HSDP, gradient
 * accumulation and the pipeline's no-sync accumulation change; and that the search's fast path
 * (pp_memory_worst_bytes) agrees with pp_memory_estimate. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "memory_fsdp.h"
#include "mem_shapes.h"
#include "tap.h"

#define MIB (1024.0 * 1024.0)

static pp_work work_of(bool big, int64_t seq, int64_t gpus, int64_t gbs)
{
    pp_work w;
    memset(&w, 0, sizeof w);
    mem_shape(&w.model, "llama-3b");
    if (big) {
        w.model.layers = 32, w.model.hidden = 4096, w.model.heads = 32, w.model.ffn = 14336;
        w.model.head_dim = 128;
    }
    w.model.seq = seq;
    mem_h200(&w.gpu);
    w.gpus = gpus;
    w.gpus_per_node = gpus < 8 ? gpus : 8;
    w.gbs = gbs;
    w.framework = PP_FW_FSDP;
    w.attention = PP_ATTN_FLASH;
    pp_stack_init(&w.stack);
    w.stack.repeat_kv = true; /* as tools/fsdp/train.py's runs (tests/data/fsdp) repeat K and V */
    return w;
}

static pp_layout layout_of(const pp_work *w, int64_t mbs, pp_recompute rc, int zero)
{
    pp_layout l;
    pp_layout_init(&l);
    l.mbs = mbs;
    l.recompute = rc;
    l.zero = zero;
    pp_error err;
    pp_layout_validate(w, &l, &err);
    return l;
}

/* The timeline of stage 0 of a one-stage layout. */
static void timeline(const pp_work *w, const pp_layout *l, pp_fsdp_ctx *c, pp_fsdp_timeline *t, pp_mem_stage *o)
{
    int64_t n_all[PP_LAYER_KINDS] = {0}, n_rc[PP_LAYER_KINDS] = {0};
    n_all[0] = w->model.layers;
    n_rc[0] = l->recompute == PP_RC_FULL ? w->model.layers : 0;
    pp_fsdp_ctx_init(w, l, c);
    memset(o, 0, sizeof *o);
    pp_fsdp_stage_eval(w, l, c, n_all, n_rc, true, true, 1.0, o, t);
}

int main(void)
{
    const double P3 = 3606752256.0, P8 = 8030261248.0; /* parameters, tools/fsdp/train.py */
    const double V = 128256, WS = 64 * MIB;            /* vocabulary, cuBLAS workspaces */
    pp_fsdp_ctx c;
    pp_fsdp_timeline t;
    pp_mem_stage o;

    /* 3B, seq 8192, micro-batch 1, no AC, --zero 3: the peak is the log-softmax backward. */
    pp_work w = work_of(false, 8192, 1, 1);
    pp_layout l = layout_of(&w, 1, PP_RC_NONE, 3);
    timeline(&w, &l, &c, &t, &o);
    double T = 8192, h = 3072, f = 8192, a = 24, kv = 1024;
    double blk_none = 16 * h + 8 * f + 4 * a + 8; /* bytes per token: 114792 */
    tap_ok(blk_none == 114792 && fabs(c.act[0][PP_RC_NONE] - T * blk_none) < 1, "3B block without AC: %.0f B/token",
           c.act[0][PP_RC_NONE] / T);
    double want = 4 * P3 + 8 * P3              /* fp32 parameters, AdamW m and v */
                  + WS + 4.0 * 8192 * 128      /* workspaces, RoPE table (complex64 [s, d/2]) */
                  + 2 * (V * h + h)            /* [norm, output] unsharded in bf16 */
                  + 28 * T * blk_none          /* every block's activations */
                  + T * (2 * h + 4 + 2 * h)    /* final norm input, rstd, output-layer input */
                  + 16 * T                     /* token ids and labels */
                  + 12 * T * V;                /* log-softmax output, its gradient in and out */
    tap_ok(t.peak_at == PP_FSDP_AT_LOSS_BACKWARD, "3B none: peak at the %s", pp_fsdp_moment_names[t.peak_at]);
    tap_near(o.peak_bytes, want, 1e-9, "3B none: loss-backward peak by hand (%.1f MiB)", want / MIB);
    tap_ok(t.bytes[PP_FSDP_AT_LOSS_BACKWARD] - t.bytes[PP_FSDP_AT_LOSS_FORWARD] == 2 * T * V,
           "loss backward = loss forward - bf16 logits (freed) + the fp32 gradient pair: +2 B/logit");
    tap_ok(t.at[PP_FSDP_AT_LOSS_BACKWARD].grads == 0, "no gradient exists in the forward and the loss (zero_grad)");
    double sum = 0;
    const pp_fsdp_parts *pk = &t.at[t.peak_at];
    sum = pk->weights + pk->grads + pk->optimizer + pk->activations + pk->transient;
    tap_ok(sum == o.peak_bytes && o.weights_bytes == pk->weights && o.transient_bytes == pk->transient,
           "the breakdown adds up to the peak");
    double mx = 0;
    for (int i = 0; i < PP_FSDP_AT_COUNT; i++) mx = fmax(mx, t.bytes[i]);
    tap_ok(mx == o.peak_bytes, "the peak is the largest moment, not a sum");

    /* --zero 2: every block's and the embedding's bf16 copy held to the backward. */
    pp_layout l2 = layout_of(&w, 1, PP_RC_NONE, 2);
    pp_fsdp_timeline t2;
    pp_mem_stage o2;
    timeline(&w, &l2, &c, &t2, &o2);
    double blk_params = (2 * h * h + 2 * h * kv) + 3 * h * f + 2 * h; /* wq, wo, wk, wv, w1-3, norms */
    tap_near(t2.bytes[PP_FSDP_AT_LOSS_BACKWARD] - t.bytes[PP_FSDP_AT_LOSS_BACKWARD], 2 * (28 * blk_params + V * h),
             1e-12, "zero 2 - zero 3 at the loss = 2 B x (blocks + embedding)");

    /* Selective (torchtitan's op-level SAC): block input, wq, wv, SDPA out + lse, w1, w2 outputs. */
    pp_layout ls = layout_of(&w, 1, PP_RC_SELECTIVE, 3);
    timeline(&w, &ls, &c, &t, &o);
    tap_ok(fabs(c.act[0][PP_RC_SELECTIVE] / T - (8 * h + 2 * kv + 2 * f + 4 * a)) < 1e-6,
           "3B selective: 8h + 2kv + 2f + 4a = %.0f B/token", c.act[0][PP_RC_SELECTIVE] / T);
    tap_ok(fabs(c.act[0][PP_RC_FULL] / T - 2 * h) < 1e-6, "full AC: the block input, 2h B/token");

    /* 8B, seq 4096, full AC: the peak is the embedding's reduce-scatter (16 B/param + its fp32
     * reduce-scatter input). */
    pp_work w8 = work_of(true, 4096, 1, 1);
    pp_layout l8 = layout_of(&w8, 1, PP_RC_FULL, 3);
    timeline(&w8, &l8, &c, &t, &o);
    want = 16 * P8 + WS + 4.0 * 4096 * 128 + 4 * V * 4096;
    tap_ok(t.peak_at == PP_FSDP_AT_REDUCE_LAST, "8B full: peak at the %s", pp_fsdp_moment_names[t.peak_at]);
    tap_near(o.peak_bytes, want, 1e-9, "8B full: 16 B/param + 4 B x embedding by hand (%.1f MiB)", want / MIB);
    tap_ok(t.bytes[PP_FSDP_AT_BACKWARD_BOTTOM] < o.peak_bytes && t.bytes[PP_FSDP_AT_BACKWARD_TOP] < o.peak_bytes,
           "8B full: inside the backward below the end (%.0f, %.0f < %.0f MiB)", t.bytes[PP_FSDP_AT_BACKWARD_TOP] / MIB,
           t.bytes[PP_FSDP_AT_BACKWARD_BOTTOM] / MIB, o.peak_bytes / MIB);

    /* foreach AdamW: sqrt(v) for every parameter at the step. */
    pp_work wf = work_of(false, 4096, 1, 1);
    wf.stack.optimizer_impl = PP_ADAM_FOREACH;
    pp_layout lf = layout_of(&wf, 1, PP_RC_FULL, 3);
    timeline(&wf, &lf, &c, &t, &o);
    tap_ok(t.peak_at == PP_FSDP_AT_OPTIMIZER, "foreach: peak at the %s", pp_fsdp_moment_names[t.peak_at]);
    tap_near(o.peak_bytes, 20 * P3 + WS + 4.0 * 4096 * 128, 1e-9, "foreach: 20 B/param at the step");

    /* Sharding over 8 ranks: the state shrinks 8 ways, the activations and the loss do not. */
    pp_work w8r = work_of(false, 8192, 8, 8);
    pp_layout ld = layout_of(&w8r, 1, PP_RC_NONE, 3);
    pp_fsdp_timeline td;
    pp_mem_stage od;
    timeline(&w8r, &ld, &c, &td, &od);
    timeline(&w, &l, &c, &t, &o);
    tap_ok(td.at[PP_FSDP_AT_OPTIMIZER].optimizer == 8 * P3 / 8 && td.at[PP_FSDP_AT_OPTIMIZER].grads == 4 * P3 / 8,
           "dp 8: m, v and gradients / 8");
    tap_ok(td.at[PP_FSDP_AT_LOSS_BACKWARD].activations == t.at[PP_FSDP_AT_LOSS_BACKWARD].activations,
           "dp 8: activations unchanged");
    /* HSDP: 8 ranks as 2 replicas of 4 shards. */
    pp_layout lh = ld;
    lh.replicate = 2;
    timeline(&w8r, &lh, &c, &td, &od);
    tap_ok(c.shard == 4 && td.at[PP_FSDP_AT_OPTIMIZER].optimizer == 8 * P3 / 4, "HSDP 2 x 4: sharded over 4");
    /* float8 (torchao, float8 all-gather when sharded): the blocks' unsharded copies in 1 byte. */
    pp_layout lz = layout_of(&w8r, 1, PP_RC_NONE, 2);
    pp_fsdp_timeline tz;
    timeline(&w8r, &lz, &c, &tz, &od);
    double bf16_held = tz.at[PP_FSDP_AT_LOSS_BACKWARD].weights;
    w8r.stack.precision = PP_PREC_FP8;
    timeline(&w8r, &lz, &c, &tz, &od);
    tap_near(bf16_held - tz.at[PP_FSDP_AT_LOSS_BACKWARD].weights, 28 * blk_params, 1e-12,
             "fp8, zero 2, dp 8: the held block copies take 1 B/param less");
    w8r.stack.precision = PP_PREC_BF16;
    /* Gradient accumulation (4 micro-batches): the sharded gradients live through the forwards. */
    pp_work wa = work_of(false, 8192, 1, 4);
    pp_layout la = layout_of(&wa, 1, PP_RC_NONE, 3);
    timeline(&wa, &la, &c, &t, &o);
    tap_ok(t.at[PP_FSDP_AT_LOSS_BACKWARD].grads == 4 * P3, "accumulation: 4 B/param of gradients at the loss");

    /* --no-sync-accumulation over dp 4 (4 micro-batches): FSDP2's gradient sync off until the last
     * micro-batch keeps every parameter's fp32 unsharded accumulator (4 B/param) through the later
     * forwards where the synced accumulation keeps the sharded gradients (4 B/param over 4); the
     * parameters reshard as before. */
    pp_work wn = work_of(false, 8192, 4, 16);
    pp_layout ln = layout_of(&wn, 1, PP_RC_NONE, 3);
    pp_fsdp_timeline tn;
    pp_mem_stage on;
    timeline(&wn, &ln, &c, &t, &o);
    wn.stack.no_sync_accum = true;
    timeline(&wn, &ln, &c, &tn, &on);
    tap_ok(c.nosync_grads && !c.nosync && !c.accumulate, "--no-sync-accumulation: unsharded gradients, sharded parameters");
    tap_near(tn.at[PP_FSDP_AT_LOSS_BACKWARD].grads, 4 * P3, 1e-12, "--no-sync-accumulation: 4 B/param of fp32 accumulators "
             "at the loss (%.2f GiB; synced: %.2f)", tn.at[PP_FSDP_AT_LOSS_BACKWARD].grads / 1073741824.0,
             t.at[PP_FSDP_AT_LOSS_BACKWARD].grads / 1073741824.0);
    tap_near(t.at[PP_FSDP_AT_LOSS_BACKWARD].grads, 4 * P3 / 4, 1e-12, "synced accumulation: the sharded gradients");
    tap_ok(tn.at[PP_FSDP_AT_LOSS_BACKWARD].weights == t.at[PP_FSDP_AT_LOSS_BACKWARD].weights,
           "--no-sync-accumulation: the parameters held alike");

    /* --keep-logits (3B, seq 8192, micro-batch 1): the loop's reference holds the bf16 logits, 2 B
     * each, at the loss backward and every backward moment after it; the loss forward counts them
     * already, and the optimizer step is left as it was; cut cross-entropy forms none to hold. */
    {
        pp_work wk = work_of(false, 8192, 1, 1);
        pp_layout lk = layout_of(&wk, 1, PP_RC_NONE, 3);
        pp_fsdp_timeline tf, tk;
        pp_mem_stage of, ok_;
        timeline(&wk, &lk, &c, &tf, &of);
        wk.stack.keep_logits = true;
        timeline(&wk, &lk, &c, &tk, &ok_);
        const pp_fsdp_moment held[] = {PP_FSDP_AT_LOSS_BACKWARD, PP_FSDP_AT_BACKWARD_TOP, PP_FSDP_AT_BACKWARD_BOTTOM,
                                       PP_FSDP_AT_REDUCE_LAST};
        bool all = true;
        for (size_t i = 0; i < sizeof held / sizeof *held; i++)
            all = all && fabs(tk.bytes[held[i]] - tf.bytes[held[i]] - 2 * 8192 * V) < 1;
        tap_ok(all, "--keep-logits: 2 B x 8192 x 128256 = %.0f MiB more at the loss backward and after it",
               2 * 8192 * V / MIB);
        tap_ok(tk.bytes[PP_FSDP_AT_LOSS_FORWARD] == tf.bytes[PP_FSDP_AT_LOSS_FORWARD] &&
                   tk.bytes[PP_FSDP_AT_OPTIMIZER] == tf.bytes[PP_FSDP_AT_OPTIMIZER],
               "--keep-logits: the loss forward and the optimizer step unchanged");
        tap_ok(fabs(ok_.peak_bytes - of.peak_bytes - 2 * 8192 * V) < 1, "--keep-logits: the peak (%s) 2 B a logit higher",
               ok_.peak_moment);
        wk.stack.loss = PP_LOSS_CUT;
        timeline(&wk, &lk, &c, &tk, &ok_);
        tap_ok(c.held_logits == 0, "--keep-logits with --loss cut: no logits to hold");
    }

    /* --compile-loss (3B, seq 8192, micro-batch 1): the compiled loss holds 2 B a logit at its forward
     * and 4 at its backward (the eager loss on logits.float(): 10 and 12), so the loss moments drop by
     * 8 B a logit and nothing else moves; a kept reference adds nothing at the loss backward (the
     * compiled loss counts the logits it saved) and 2 B after it; the allocator keeps no freed-logits
     * block. */
    {
        pp_work wk = work_of(false, 8192, 1, 1);
        pp_layout lk = layout_of(&wk, 1, PP_RC_NONE, 3);
        pp_fsdp_timeline te, tc;
        pp_mem_stage oe, oc;
        timeline(&wk, &lk, &c, &te, &oe);
        const double hole = c.logits_hole;
        wk.stack.compile_loss = true;
        timeline(&wk, &lk, &c, &tc, &oc);
        tap_near(c.loss_fwd, 2 * 8192 * V, 1e-12, "--compile-loss: 2 B a logit at the loss forward");
        tap_near(c.loss_bwd, 4 * 8192 * V, 1e-12, "--compile-loss: 4 B a logit at the loss backward");
        tap_ok(fabs(te.bytes[PP_FSDP_AT_LOSS_BACKWARD] - tc.bytes[PP_FSDP_AT_LOSS_BACKWARD] - 8 * 8192 * V) < 1 &&
                   te.bytes[PP_FSDP_AT_OPTIMIZER] == tc.bytes[PP_FSDP_AT_OPTIMIZER] &&
                   te.bytes[PP_FSDP_AT_BACKWARD_BOTTOM] == tc.bytes[PP_FSDP_AT_BACKWARD_BOTTOM],
               "--compile-loss: the loss backward 8 B a logit lower, the backward and the optimizer step unchanged");
        tap_ok(hole == 2 * 8192 * V && c.logits_hole == 0,
               "the eager loss leaves the freed bf16 logits' block (%.0f MiB), the compiled one none", hole / MIB);
        pp_fsdp_timeline tk;
        wk.stack.keep_logits = true;
        timeline(&wk, &lk, &c, &tk, &oc);
        tap_ok(tk.bytes[PP_FSDP_AT_LOSS_BACKWARD] == tc.bytes[PP_FSDP_AT_LOSS_BACKWARD] &&
                   fabs(tk.bytes[PP_FSDP_AT_BACKWARD_TOP] - tc.bytes[PP_FSDP_AT_BACKWARD_TOP] - 2 * 8192 * V) < 1,
               "--compile-loss --keep-logits: nothing more at the loss backward, 2 B a logit after it");
    }

    /* --router-holds-recompute (3B made MoE: 8 experts of 8192, top-2; seq 8192, micro-batch 1, full
     * AC): each recomputed MoE block leaves its titan tensors up to the router allocated, so the
     * first block's backward holds the other L - 1 blocks' and the last reduce-scatter and the
     * optimizer step all L; the moments before are unchanged. The held bytes per block: both
     * norms' outputs and rstd, q, k, v (repeated), the attention output and its lse, the MLP norm's
     * input; and per norm 6 (composite) or 8 (composite-fp32) bytes an element more. */
    {
        pp_work wm = work_of(false, 8192, 1, 1);
        wm.model.experts = 8, wm.model.topk = 2, wm.model.moe_ffn = 8192;
        pp_layout lm = layout_of(&wm, 1, PP_RC_FULL, 3);
        int64_t n_all[PP_LAYER_KINDS] = {0}, n_rc[PP_LAYER_KINDS] = {0};
        n_all[PP_LAYER_MOE] = n_rc[PP_LAYER_MOE] = wm.model.layers;
        const double L = (double)wm.model.layers, Tm = 8192, hm = 3072, hq = 3072, heads = 24;
        pp_fsdp_timeline t0, t1;
        pp_mem_stage o0, o1;
        pp_fsdp_ctx c0, c1;
        pp_fsdp_ctx_init(&wm, &lm, &c0);
        pp_fsdp_stage_eval(&wm, &lm, &c0, n_all, n_rc, true, true, 1.0, &o0, &t0);
        tap_ok(c0.router_held == 0, "without --router-holds-recompute nothing is held");
        wm.stack.router_holds_recompute = true;
        pp_fsdp_ctx_init(&wm, &lm, &c1);
        pp_fsdp_stage_eval(&wm, &lm, &c1, n_all, n_rc, true, true, 1.0, &o1, &t1);
        double want = Tm * (2 * hm + 4 + 4 * 2 * hq + 4 * heads + 2 * hm + 4 + 2 * hm);
        tap_near(c1.router_held, want, 1e-9, "--router-holds-recompute: %.1f MiB a block (the titan tensors up to the "
                 "router)", want / MIB);
        tap_near(t1.bytes[PP_FSDP_AT_BACKWARD_BOTTOM] - t0.bytes[PP_FSDP_AT_BACKWARD_BOTTOM], (L - 1) * want, 1e-9,
                 "--router-holds-recompute: the first block's backward holds the other %.0f blocks'", L - 1);
        tap_ok(fabs(t1.bytes[PP_FSDP_AT_REDUCE_LAST] - t0.bytes[PP_FSDP_AT_REDUCE_LAST] - L * want) < 1 &&
                   fabs(t1.bytes[PP_FSDP_AT_OPTIMIZER] - t0.bytes[PP_FSDP_AT_OPTIMIZER] - L * want) < 1,
               "--router-holds-recompute: all %.0f blocks' after the backward, through the optimizer step", L);
        tap_ok(t1.bytes[PP_FSDP_AT_LOSS_FORWARD] == t0.bytes[PP_FSDP_AT_LOSS_FORWARD] &&
                   t1.bytes[PP_FSDP_AT_BACKWARD_TOP] == t0.bytes[PP_FSDP_AT_BACKWARD_TOP],
               "--router-holds-recompute: the loss and the last block's backward unchanged");
        wm.stack.eager_norm = PP_ENORM_COMPOSITE;
        pp_fsdp_ctx_init(&wm, &lm, &c1);
        tap_near(c1.router_held - want, 2 * 6.0 * Tm * hm, 1e-9, "--eager-norm composite: 6 B an element a norm more held");
        wm.stack.eager_norm = PP_ENORM_COMPOSITE_FP32;
        pp_fsdp_ctx_init(&wm, &lm, &c1);
        tap_near(c1.router_held - want, 2 * 8.0 * Tm * hm, 1e-9,
                 "--eager-norm composite-fp32 (KempnerForge's order): 8 B an element a norm more held");
        /* without AC no block is recomputed: nothing to hold */
        pp_layout ln0 = layout_of(&wm, 1, PP_RC_NONE, 3);
        int64_t n_none[PP_LAYER_KINDS] = {0};
        pp_fsdp_ctx_init(&wm, &ln0, &c1);
        pp_fsdp_stage_eval(&wm, &ln0, &c1, n_all, n_none, true, true, 1.0, &o1, &t1);
        tap_ok(t1.at[PP_FSDP_AT_OPTIMIZER].activations == 0, "--router-holds-recompute without AC: nothing held");
    }

    /* PP 2 with 8 micro-batches: the stage's unsharded fp32 accumulators and bf16 copies. */
    pp_work wp = work_of(false, 8192, 2, 8);
    pp_layout lp;
    pp_layout_init(&lp);
    lp.pp = 2, lp.mbs = 1, lp.zero = 3;
    pp_error err;
    tap_ok(pp_layout_validate(&wp, &lp, &err) == PP_OK, "pp 2 layout valid");
    static pp_mem_result r;
    tap_ok(pp_memory_estimate(&wp, &lp, &r, &err) == PP_OK, "pp 2 estimate");
    pp_fsdp_ctx_init(&wp, &lp, &c);
    tap_ok(c.nosync && r.stages[0].peak_moment && r.stages[1].peak_moment, "pp 2: no-sync accumulation, moments named");
    tap_ok(r.stages[0].grads_bytes >= 4.0 * (14 * c.blk_params[0] + c.embed_params),
           "pp 2 stage 0: the unsharded fp32 accumulators (%.1f GiB)", r.stages[0].grads_bytes / 1073741824.0);

    /* The search's fast path agrees with the full estimate. */
    struct { int64_t gpus, tp, pp, vpp, mbs, gbs, rep; int zero; pp_recompute rc; } cases[] = {
        {1, 1, 1, 1, 1, 1, 0, 3, PP_RC_NONE}, {8, 2, 1, 1, 2, 16, 0, 3, PP_RC_SELECTIVE},
        {8, 1, 4, 1, 1, 32, 0, 2, PP_RC_FULL}, {8, 1, 4, 7, 1, 32, 0, 3, PP_RC_NONE},
        {16, 1, 1, 1, 1, 16, 4, 3, PP_RC_FULL}, {8, 1, 1, 1, 1, 8, 0, 0, PP_RC_NONE},
    };
    int agree = 0, n = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < n; i++) {
        pp_work wc = work_of(false, 8192, cases[i].gpus, cases[i].gbs);
        pp_layout lc;
        pp_layout_init(&lc);
        lc.tp = cases[i].tp, lc.pp = cases[i].pp, lc.vpp = cases[i].vpp, lc.mbs = cases[i].mbs;
        lc.replicate = cases[i].rep, lc.zero = cases[i].zero, lc.recompute = cases[i].rc;
        if (pp_layout_validate(&wc, &lc, &err) != PP_OK) {
            tap_diag("case %d invalid: %s", i, err.msg);
            continue;
        }
        pp_memory_estimate(&wc, &lc, &r, &err);
        double worst = 0, peak = 0;
        for (int64_t s = 0; s < r.n_stages; s++) worst = fmax(worst, r.stages[s].peak_bytes + r.stages[s].reserved_bytes);
        double fast = pp_memory_worst_bytes(&wc, &lc, &peak);
        agree += fabs(fast - worst) <= 1e-6 * worst;
    }
    tap_ok(agree == n, "pp_memory_worst_bytes = the estimate's largest peak + reserve (%d/%d layouts)", agree, n);
    return tap_done();
}
