/* Memory model unit tests: the activation table against Korthikanti et al. 2022 table 2 (exact),
 * its GQA / SwiGLU / RMSNorm / no-dropout / flash variants, model-state bytes, parameter counts,
 * the schedules' in-flight micro-batches, recompute, and the agreement of the fast path
 * (pp_memory_worst_bytes) and the explicit-stage call (pp_memory_stage) with the full estimate. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mem_shapes.h"
#include "pp_memory.h"
#include "pp_remedy.h"
#include "tap.h"

static void work_gpt(pp_work *w, int64_t heads, int64_t hidden, int64_t layers, int64_t seq,
                     int64_t gpus, int64_t gbs)
{
    memset(w, 0, sizeof *w);
    mem_gpt(&w->model, "gpt", layers, hidden, heads);
    w->model.vocab = 51200;
    w->model.seq = seq;
    mem_h200(&w->gpu);
    w->gpus = gpus;
    w->gpus_per_node = 8;
    w->gbs = gbs;
    w->framework = PP_FW_MEGATRON;
    w->attention = PP_ATTN_UNFUSED;
}

static const pp_act_tensor *find(const pp_act_table *tb, const char *name)
{
    for (int i = 0; i < tb->n; i++)
        if (strcmp(tb->t[i].name, name) == 0) return &tb->t[i];
    return NULL;
}

/* Korthikanti et al. 2022, table 2, per layer (the table's L factor dropped), 16-bit. */
static void korthikanti(void)
{
    /* The GPT shapes of the paper's tables 3-5 (tests/data/validation/korthikanti_2022*.csv):
     * heads, hidden, layers, micro-batch; s = 2048, t = 8. */
    static const struct { const char *name; int64_t a, h, L, b; } M[] = {
        {"22B", 64, 6144, 48, 4}, {"175B", 96, 12288, 96, 1},
        {"530B", 128, 20480, 105, 1}, {"1T", 160, 25600, 128, 1},
    };
    for (size_t i = 0; i < sizeof M / sizeof M[0]; i++) {
        double s = 2048, b = (double)M[i].b, h = (double)M[i].h, a = (double)M[i].a, t = 8;
        (void)h;
        double sbh = s * b * h;
        pp_work w;
        work_gpt(&w, M[i].a, M[i].h, M[i].L, 2048, 8, 8);
        pp_layout l;
        pp_layout_init(&l);
        l.mbs = M[i].b;
        pp_act_table tb;
        /* The table's expressions with sbh multiplied out, so every term is an exact integer:
         * s b h (34 + 5 a s / h) = 34 sbh + 5 a s^2 b, and so on. */
        double attn = 5 * a * s * s * b;
        struct { const char *row; int64_t tp; bool sp; pp_recompute rc; double want; } R[] = {
            {"no parallelism", 1, false, PP_RC_NONE, 34 * sbh + attn},
            {"tensor parallel", 8, false, PP_RC_NONE, 10 * sbh + 24 * sbh / t + attn / t},
            {"tensor + sequence parallel", 8, true, PP_RC_NONE, 34 * sbh / t + attn / t},
            {"tensor parallel + selective", 8, false, PP_RC_SELECTIVE, 10 * sbh + 24 * sbh / t},
            {"tensor + sequence + selective", 8, true, PP_RC_SELECTIVE, 34 * sbh / t},
            {"full recompute", 1, false, PP_RC_FULL, 2 * sbh},
        };
        for (size_t k = 0; k < sizeof R / sizeof R[0]; k++) {
            l.tp = R[k].tp;
            l.sp = R[k].sp;
            pp_memory_layer_table(&w, &l, R[k].rc, &tb);
            tap_ok(tb.paper_bytes == R[k].want, "%s %s: table sums to %.0f bytes, paper %.0f",
                   M[i].name, R[k].row, tb.paper_bytes, R[k].want);
        }
        /* What the paper leaves out: the LayerNorm statistics, two fp32 per row and norm. */
        l.tp = 1;
        l.sp = false;
        pp_memory_layer_table(&w, &l, PP_RC_NONE, &tb);
        tap_ok(tb.bytes - tb.paper_bytes == 2 * 2 * 4 * s * b,
               "%s: beyond the paper only the norm statistics (%.0f bytes)", M[i].name,
               tb.bytes - tb.paper_bytes);
    }
}

static void variants(void)
{
    pp_work w;
    pp_layout l;
    pp_act_table tb;
    const pp_act_tensor *e;
    memset(&w, 0, sizeof w);
    mem_llama3b(&w.model);
    mem_h200(&w.gpu);
    w.gpus = 2;
    w.gbs = 8;
    w.framework = PP_FW_MEGATRON;
    pp_layout_init(&l);
    l.tp = 2;
    l.mbs = 2;
    double s = 4096, b = 2, h = 3072, a = 24, g = 8, d = 128, f = 8192, t = 2;

    /* GQA, local implementation: K and V are repeated to all query heads (repeat_interleave)
     * before the unfused kernel saves them. */
    w.attention = PP_ATTN_UNFUSED;
    pp_memory_layer_table(&w, &l, PP_RC_NONE, &tb);
    e = find(&tb, "attn.k");
    tap_ok(e && e->elems == s * b * a / t * d, "GQA unfused: saved K has all %g query heads", a / t);
    e = find(&tb, "attn.v");
    tap_ok(e && e->elems == s * b * a / t * d, "GQA unfused: saved V repeated too");
    tap_ok(find(&tb, "attn.qkv_out") == NULL, "GQA + RoPE: no view keeps the QKV output alive");
    /* No dropout (no biases): the softmax output alone, 2 a s^2 b / t. */
    e = find(&tb, "attn.softmax");
    tap_ok(e && e->elems * e->bytes_per_elem == 2 * a / t * s * s * b, "no dropout: 2as^2b/t");
    tap_ok(!find(&tb, "attn.dropout_mask") && !find(&tb, "attn.bda_mask") && !find(&tb, "mlp.bda_mask"),
           "no dropout: no masks");
    /* RMSNorm keeps one fp32 statistic per row. */
    e = find(&tb, "ln1.stats");
    tap_ok(e && e->elems * e->bytes_per_elem == 4 * s * b, "RMSNorm: 4 bytes per row");
    /* SwiGLU with Megatron's default bias_swiglu_fusion, local modules too (a jit_fuser function,
     * fusions/fused_bias_swiglu.py): the fc1 output 2f and the product, 6 s b f / t bytes. */
    double mlp = 0;
    for (int i = 0; i < tb.n; i++)
        if (strncmp(tb.t[i].name, "mlp.", 4) == 0 || strcmp(tb.t[i].name, "fc2.input") == 0)
            mlp += tb.t[i].elems * tb.t[i].bytes_per_elem;
    tap_ok(mlp == 6 * s * b * f / t, "SwiGLU fused (Megatron's default, local modules): 6 sbf/t bytes (%.0f)", mlp);
    /* --no-bias-act-fusion, eager (Megatron glu()): fc1 output 2f, silu(gate), the x_linear +
     * offset copy and the product: 10 s b f / t bytes. */
    w.stack.act_unfused = true;
    pp_memory_layer_table(&w, &l, PP_RC_NONE, &tb);
    mlp = 0;
    for (int i = 0; i < tb.n; i++)
        if (strncmp(tb.t[i].name, "mlp.", 4) == 0 || strcmp(tb.t[i].name, "fc2.input") == 0)
            mlp += tb.t[i].elems * tb.t[i].bytes_per_elem;
    tap_ok(mlp == 10 * s * b * f / t, "SwiGLU eager (--no-bias-act-fusion): 10 sbf/t bytes (%.0f)", mlp);
    w.stack.act_unfused = false;
    /* Flash (TE): K and V at the group count, fused SwiGLU 6 sbf/t, no s^2 tensor. */
    w.attention = PP_ATTN_FLASH;
    pp_memory_layer_table(&w, &l, PP_RC_NONE, &tb);
    e = find(&tb, "attn.k");
    tap_ok(e && e->elems == s * b * g / t * d, "GQA flash: K at %g groups", g / t);
    tap_ok(!find(&tb, "attn.softmax"), "flash: no s^2 tensor");
    mlp = 0;
    for (int i = 0; i < tb.n; i++)
        if (strncmp(tb.t[i].name, "mlp.", 4) == 0 || strcmp(tb.t[i].name, "fc2.input") == 0)
            mlp += tb.t[i].elems * tb.t[i].bytes_per_elem;
    tap_ok(mlp == 6 * s * b * f / t, "SwiGLU fused: 6 sbf/t bytes (%.0f)", mlp);
    /* GPT with flash: the paper's 34 s b h with the s^2 term gone. */
    work_gpt(&w, 32, 2560, 32, 2048, 1, 8);
    w.attention = PP_ATTN_FLASH;
    pp_layout_init(&l);
    pp_memory_layer_table(&w, &l, PP_RC_NONE, &tb);
    tap_ok(tb.paper_bytes == 34.0 * 2048 * 2560, "GPT flash: 34 sbh");
    (void)h;
}

static void state(void)
{
    pp_state_bytes s;
    pp_memory_state_per_param(PP_FW_MEGATRON, 0, false, PP_OFF_NONE, 8, &s);
    tap_ok(s.weights + s.grads + s.optimizer == 18, "Megatron: 18 bytes per parameter");
    pp_memory_state_per_param(PP_FW_MEGATRON, 0, true, PP_OFF_NONE, 8, &s);
    tap_ok(s.weights + s.grads == 6 && s.optimizer == 12.0 / 8, "Megatron dist-opt: 6 + 12/d");
    pp_memory_state_per_param(PP_FW_DEEPSPEED, 0, false, PP_OFF_NONE, 4, &s);
    tap_ok(s.weights + s.grads + s.optimizer == 16, "ZeRO stage 0: 16 bytes");
    pp_memory_state_per_param(PP_FW_DEEPSPEED, 2, false, PP_OFF_NONE, 4, &s);
    tap_ok(s.weights == 2 && s.grads == 0.5 && s.optimizer == 3, "ZeRO-2: 2 + 14/d");
    pp_memory_state_per_param(PP_FW_DEEPSPEED, 3, false, PP_OFF_NONE, 4, &s);
    tap_ok(s.weights + s.grads + s.optimizer == 4, "ZeRO-3: 16/d");
    pp_memory_state_per_param(PP_FW_DEEPSPEED, 2, false, PP_OFF_OPTIMIZER, 4, &s);
    tap_ok(s.optimizer == 0 && s.weights == 2, "ZeRO-Offload: optimizer on the host");
}

/* gpt-2.7b on one GPU: weights are 2 bytes x the exact parameter count of Megatron's model
 * (50304-token padded vocabulary, learned positions, biases, tied): 2,651,673,600. */
static void params(void)
{
    pp_work w;
    memset(&w, 0, sizeof w);
    mem_shape(&w.model, "gpt-2.7b");
    mem_h200(&w.gpu);
    w.gpus = 1;
    w.gbs = 2;
    w.framework = PP_FW_MEGATRON;
    w.attention = PP_ATTN_UNFUSED;
    pp_layout l;
    pp_layout_init(&l);
    pp_error err = {0};
    tap_ok(pp_layout_validate(&w, &l, &err) == PP_OK, "gpt-2.7b layout valid");
    static pp_mem_result r;
    tap_ok(pp_memory_estimate(&w, &l, &r, &err) == PP_OK, "estimate");
    tap_ok(r.stages[0].weights_bytes == 2.0 * 2651673600.0, "gpt-2.7b: %.0f parameters",
           r.stages[0].weights_bytes / 2);
    tap_ok(r.stages[0].optimizer_bytes == 12.0 * 2651673600.0, "12 optimizer bytes each");
    /* llama-3b untied: 3,606,752,256 parameters (Llama-3.2-3B shape with its own output layer). */
    mem_shape(&w.model, "llama-3b");
    tap_ok(pp_memory_estimate(&w, &l, &r, &err) == PP_OK, "estimate llama-3b");
    tap_ok(r.stages[0].weights_bytes == 2.0 * 3606752256.0, "llama-3b: %.0f parameters",
           r.stages[0].weights_bytes / 2);
}

static void schedules(void)
{
    pp_work w;
    work_gpt(&w, 32, 4096, 32, 2048, 4, 8);
    pp_layout l;
    pp_layout_init(&l);
    l.pp = 4;
    pp_error err = {0};
    tap_ok(pp_layout_validate(&w, &l, &err) == PP_OK, "pp 4 layout valid");
    static pp_mem_result r;
    pp_memory_estimate(&w, &l, &r, &err);
    tap_ok(r.stages[0].inflight == 4 && r.stages[1].inflight == 3 && r.stages[2].inflight == 2 &&
               r.stages[3].inflight == 1,
           "1F1B: stage i holds p - i micro-batches (4 3 2 1)");
    double one_f1b = r.stages[1].activations_bytes;
    w.gbs = 2;
    pp_layout_validate(&w, &l, &err);
    pp_memory_estimate(&w, &l, &r, &err);
    tap_ok(r.stages[0].inflight == 2 && r.stages[1].inflight == 2, "1F1B with 2 micro-batches: at most 2");
    /* Interleaved, v = 2: Megatron warms up (p - i - 1) * 2 + (v - 1) p chunks; a middle stage
     * (i = 1) holds 9 chunks of L/(pv) layers = 4.5 stage-micro-batches, against 3 for 1F1B. */
    w.gbs = 8;
    l.vpp = 2;
    tap_ok(pp_layout_validate(&w, &l, &err) == PP_OK, "vpp 2 layout valid");
    pp_memory_estimate(&w, &l, &r, &err);
    tap_near(r.stages[1].activations_bytes / one_f1b, 4.5 / 3.0, 1e-12,
             "interleaved stage 1: 1.5 x the 1F1B activations");
    /* Stage 0: p (1 + (p - 1)/(p v)) = 5.5 stage-micro-batches (Korthikanti sec. 4.2.3). */
    pp_layout l1 = l;
    l1.vpp = 1;
    static pp_mem_result r1;
    pp_memory_estimate(&w, &l1, &r1, &err);
    pp_act_table tb;
    pp_memory_layer_table(&w, &l, PP_RC_NONE, &tb);
    double layer = tb.bytes * 8; /* 8 layers per stage */
    tap_near((r.stages[0].activations_bytes - r1.stages[0].activations_bytes) / layer, 5.5 - 4.0,
             0.005, "interleaved stage 0: 5.5 vs 4 stage-micro-batches (batch tensors aside)");
}

static void recompute_and_agreement(void)
{
    pp_work w;
    work_gpt(&w, 32, 4096, 32, 2048, 8, 64);
    pp_layout l;
    pp_layout_init(&l);
    l.pp = 4;
    l.tp = 2;
    l.recompute = PP_RC_FULL;
    l.recompute_layers = 3;
    pp_error err = {0};
    tap_ok(pp_layout_validate(&w, &l, &err) == PP_OK, "recompute-layers layout valid");
    static pp_mem_result r;
    pp_memory_estimate(&w, &l, &r, &err);
    pp_act_table full, ck;
    pp_memory_layer_table(&w, &l, PP_RC_NONE, &full);
    pp_memory_layer_table(&w, &l, PP_RC_FULL, &ck);
    const pp_mem_stage *s2 = &r.stages[2];
    tap_ok(s2->recompute_layers == 3, "stage 2 recomputes 3 layers");
    tap_near(s2->activations_bytes, 2 * (3 * ck.bytes + 5 * full.bytes), 1e-12,
             "stage 2 (2 in flight): 3 checkpointed + 5 stored layers");
    /* pp_memory_stage with the same counts gives the same stage; an explicit 0 recomputes none. */
    pp_mem_stage one;
    pp_memory_stage(&w, &l, 2, 8, 3, &one);
    tap_ok(one.peak_bytes == s2->peak_bytes && one.reserved_bytes == s2->reserved_bytes,
           "pp_memory_stage agrees with pp_memory_estimate");
    pp_memory_stage(&w, &l, 2, 8, 0, &one);
    tap_near(one.activations_bytes, 2 * 8 * full.bytes, 1e-12, "explicit 0: no layer recomputed");
    /* The fast path equals the largest peak + reserve of the full breakdown, across layouts,
     * uneven splits included. */
    static const int uneven[4] = {6, 9, 9, 8};
    static const int uneven_rc[4] = {6, 0, 2, 0};
    int bad = 0, n = 0;
    for (int rc = 0; rc < PP_RC_COUNT; rc++)
        for (int64_t pp = 1; pp <= 8; pp *= 2)
            for (int64_t mbs = 1; mbs <= 4; mbs *= 2)
                for (int un = 0; un < 2; un++) {
                    pp_layout v;
                    pp_layout_init(&v);
                    v.pp = pp;
                    v.mbs = mbs;
                    v.recompute = (pp_recompute)rc;
                    if (un) {
                        if (pp != 4) continue;
                        v.stage_layers = uneven;
                        v.stage_recompute = rc == PP_RC_FULL ? uneven_rc : NULL;
                    }
                    if (pp_layout_validate(&w, &v, &err) != PP_OK) continue;
                    pp_memory_estimate(&w, &v, &r, &err);
                    double worst = 0, peak = 0, fast_peak;
                    for (int64_t i = 0; i < r.n_stages; i++)
                        if (r.stages[i].peak_bytes + r.stages[i].reserved_bytes > worst) {
                            worst = r.stages[i].peak_bytes + r.stages[i].reserved_bytes;
                            peak = r.stages[i].peak_bytes;
                        }
                    double fast = pp_memory_worst_bytes(&w, &v, &fast_peak);
                    n++;
                    if (fast != worst || fast_peak != peak) bad++;
                }
    tap_ok(n > 20 && bad == 0, "pp_memory_worst_bytes == estimate's largest stage (%d of %d differ)",
           bad, n);
}

static void verdicts(void)
{
    pp_work w;
    memset(&w, 0, sizeof w);
    mem_shape(&w.model, "gpt-2.7b");
    mem_h200(&w.gpu);
    w.gpus = 1;
    w.gbs = 8;
    w.framework = PP_FW_MEGATRON;
    w.attention = PP_ATTN_UNFUSED;
    pp_layout l;
    pp_layout_init(&l);
    l.mbs = 4;
    pp_error err = {0};
    pp_layout_validate(&w, &l, &err);
    static pp_mem_result r;
    pp_memory_estimate(&w, &l, &r, &err);
    tap_ok(!r.fits && r.largest_stage == 0, "gpt-2.7b mbs 4 on one H200: does not fit");
    tap_ok(strstr(r.why, "stage 0") != NULL, "why names the stage: %s", r.why);
    /* what makes it fit: the remedy search's one-change layouts (search/remedy.c) */
    pp_remedy rem[PP_REMEDY_MAX];
    int nrem = pp_remedies_find(&w, &l, NULL, rem);
    bool sel = false, mbs2 = false, one = nrem > 0;
    for (int i = 0; i < nrem; i++) {
        one = one && rem[i].n_changed <= rem[0].n_changed;
        sel |= rem[i].changed == (1u << PP_KNOB_RECOMPUTE) && rem[i].layout.recompute == PP_RC_SELECTIVE;
        mbs2 |= rem[i].changed == (1u << PP_KNOB_MBS) && rem[i].layout.mbs == 2;
        tap_ok(rem[i].need_bytes <= w.gpu.memory_bytes, "remedy %d fits (%.1f GiB)", i, rem[i].need_bytes / 1073741824.0);
    }
    tap_ok(nrem > 0 && rem[0].n_changed == 1 && sel && mbs2,
           "remedies: one change each, --recompute selective and --mbs 2 among them (%d)", nrem);
    l.mbs = 2;
    pp_memory_estimate(&w, &l, &r, &err);
    tap_ok(r.fits && r.why[0] == 0, "mbs 2 fits, no why");
    /* Nothing overflows or turns non-finite at 1e6 GPUs and a huge model. */
    w.model.layers = 1000;
    w.model.hidden = 65536;
    w.model.heads = 512;
    w.model.kv_heads = 512;
    w.model.head_dim = 128;
    w.model.ffn = 4 * 65536;
    w.gpus = 1000000;
    w.gbs = 1000000;
    pp_layout_init(&l);
    l.tp = 8;
    l.pp = 125;
    l.dist_opt = true;
    tap_ok(pp_layout_validate(&w, &l, &err) == PP_OK, "huge layout valid (%s)", err.msg);
    pp_memory_estimate(&w, &l, &r, &err);
    bool finite = true;
    for (int64_t i = 0; i < r.n_stages; i++)
        finite = finite && isfinite(r.stages[i].peak_bytes) && isfinite(r.stages[i].reserved_bytes) &&
                 r.stages[i].peak_bytes > 0;
    tap_ok(finite, "huge model on 1e6 GPUs: every stage finite and positive");
}

/* TransformerEngine's userbuffers (--tp-comm-overlap, memory.c mem_userbuffer_bytes): a reserve
 * outside the allocator of 12 buffers of s b / cp x h, 2 bytes each in bf16, 8 of them 1 byte in
 * FP8; none without sequence parallelism, at tp 1 or with Megatron's local implementation. */
static void userbuffers(void)
{
    pp_work w;
    work_gpt(&w, 32, 4096, 32, 2048, 8, 64);
    pp_stack_init(&w.stack);
    w.attention = PP_ATTN_FLASH;
    pp_layout l;
    pp_layout_init(&l);
    l.tp = 4, l.dp = 2, l.sp = true, l.mbs = 2;
    const double N = 2.0 * 2048 * 4096; /* elements of one buffer */
    pp_mem_stage off, on;
    pp_memory_stage(&w, &l, 0, 32, 0, &off);
    w.stack.tp_comm_overlap = true;
    pp_memory_stage(&w, &l, 0, 32, 0, &on);
    tap_near(on.reserved_bytes - off.reserved_bytes, 24.0 * N, 1e-9,
             "tp 4 SP, bf16: userbuffers reserve 12 x 2 bytes x s b h (%.0f MiB)", 24.0 * N / 1048576);
    tap_ok(on.peak_bytes == off.peak_bytes, "the allocator peak is unchanged");
    w.stack.precision = PP_PREC_FP8;
    pp_memory_stage(&w, &l, 0, 32, 0, &on);
    w.stack.tp_comm_overlap = false;
    pp_memory_stage(&w, &l, 0, 32, 0, &off);
    tap_near(on.reserved_bytes - off.reserved_bytes, 16.0 * N, 1e-9, "FP8: 8 one-byte and 4 two-byte buffers");
    w.stack.precision = PP_PREC_BF16;
    l.sp = false;
    pp_memory_stage(&w, &l, 0, 32, 0, &off);
    w.stack.tp_comm_overlap = true;
    pp_memory_stage(&w, &l, 0, 32, 0, &on);
    tap_ok(on.reserved_bytes == off.reserved_bytes, "without SP: no userbuffers (Megatron overlaps only with SP)");
    l.sp = true;
    w.stack.impl = PP_IMPL_LOCAL;
    w.stack.impl_given = true;
    pp_memory_stage(&w, &l, 0, 32, 0, &on);
    w.stack.tp_comm_overlap = false;
    pp_memory_stage(&w, &l, 0, 32, 0, &off);
    tap_ok(on.reserved_bytes == off.reserved_bytes, "local implementation: no userbuffers (they are TE's)");
}

int main(void)
{
    korthikanti();
    variants();
    state();
    params();
    schedules();
    recompute_and_agreement();
    verdicts();
    userbuffers();
    return tap_done();
}
