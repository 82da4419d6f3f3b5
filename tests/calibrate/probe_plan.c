/* What plan --probe asks parplan-probe for, and the step it composes (planner/calibrate/probe_plan.c),
 * without a GPU or a process: each call the session asks for is answered with a profile built here
 * from fixed figures, as the probe would write it.
 *   dense TP2 (gpt3-1.3b on 2 GPUs): the collectives, the optimizer sweep, the layer at tp 2 and 1 in
 *     one call; the second candidate from the cache; the step exactly +1 ms per layer and micro-batch
 *     when the measured layer is 1 ms longer;
 *   MoE EP2 (moe-64fg on 2 GPUs): the dense layers, the layer without its MLP and the MoE MLP apart,
 *     the layer composed of them with nothing left to the model;
 *   MLA (deepseek-v2-lite on 8 GPUs, EP 8): the mla and moe probes, the norms and the dense layers'
 *     MLP left to the model;
 *   groups across nodes or larger than the local GPUs: modelled, with the reason;
 *   a probe that fails, one out of GPU memory, the budget spent: the parts stay modelled, say why,
 *     and are not asked again. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_calibrate.h"
#include "pp_load.h"
#include "pp_probe_plan.h"
#include "tap.h"

static pp_catalog cat;

/* Layer figures the fake probe answers: fwd_ms = LAYER_MS / tp (the layer without its MLP:
 * ATTN_MS / tp), fwdbwd = 3 fwd; MLA block MLA_MS / tp; MoE MLP MOE_MS whole, its experts' fc1, act,
 * fc2 1.0, 0.5, 1.5 ms forward and twice that backward. */
#define LAYER_MS 10.0
#define ATTN_MS 4.0
#define MLA_MS 2.0
#define MOE_MS 5.0

/* model: a catalog name, or a file of tests/data/megatron/models */
static bool work_of(pp_work *w, const char *model, int64_t gpus, int64_t per_node, int64_t gbs)
{
    pp_error err = {0};
    memset(w, 0, sizeof *w);
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/megatron/models/%s", src && *src ? src : ".", model);
    pp_status st = strstr(model, ".yaml") ? pp_model_load_file(&w->model, path, &err)
                                          : pp_model_resolve(&w->model, &cat, model, &err);
    if (st != PP_OK) return tap_ok(false, "%s (%s)", model, err.msg), false;
    const pp_gpu *g = pp_catalog_gpu(&cat, "h200");
    if (!g) return tap_ok(false, "catalog h200"), false;
    w->gpu = *g;
    w->gpus = gpus;
    w->gpus_per_node = per_node;
    w->gbs = gbs;
    w->framework = PP_FW_MEGATRON;
    pp_stack_init(&w->stack);
    pp_stack_resolve(w);
    return true;
}

static bool layout_of(const pp_work *w, pp_layout *l, int64_t tp, int64_t pp, int64_t dp, int64_t ep, int64_t mbs)
{
    pp_error err = {0};
    pp_layout_init(l);
    l->tp = tp, l->pp = pp, l->dp = dp, l->ep = ep, l->mbs = mbs;
    l->sp = tp > 1;
    if (pp_layout_validate(w, l, &err) == PP_OK) return true;
    return tap_ok(false, "%s tp%lld pp%lld dp%lld ep%lld (%s)", w->model.name, (long long)tp, (long long)pp,
                  (long long)dp, (long long)ep, err.msg),
           false;
}

/* "layer --hidden 2048 ...": the call's arguments after parplan-probe */
static const char *call_text(const pp_probe_call *c, char *buf, size_t n)
{
    buf[0] = 0;
    for (int i = 0; i < c->argc; i++) pp_strcatf(buf, n, "%s%s", i ? " " : "", c->argv[i]);
    return buf;
}

/* The profile parplan-probe would write for call c (see the figures above); rows: room for it. */
typedef struct {
    pp_profile p;
    pp_prof_nccl nccl[20];
    pp_prof_optimizer opt[3];
    pp_prof_layer layer[PP_PROBE_CALL_BATCH];
    pp_prof_mla mla[PP_PROBE_CALL_BATCH];
    pp_prof_moe moe[PP_PROBE_CALL_BATCH];
} fake_profile;

static void fake_answer(const pp_work *w, const pp_probe_call *c, int64_t oom_tp, fake_profile *f)
{
    memset(f, 0, sizeof *f);
    snprintf(f->p.gpu, sizeof f->p.gpu, "NVIDIA H200");
    const pp_model *m = &w->model;
    if (c->kind == PP_PROBE_CALL_NCCL) {
        static const double bytes[4] = {1048576, 16777216, 268435456, 1073741824};
        for (int op = 0; op < PP_COLL_COUNT; op++)
            for (int b = 0; b < 4; b++) f->nccl[f->p.n_nccl++] = (pp_prof_nccl){(pp_coll)op, c->ranks, bytes[b], 300};
        f->p.nccl = f->nccl;
    } else if (c->kind == PP_PROBE_CALL_OPTIMIZER) {
        /* one AdamW step at 30 bytes per parameter and 3 TB/s */
        const double params[3] = {1e7, 1e8, 1e9};
        for (int i = 0; i < 3; i++)
            f->opt[f->p.n_optimizer++] = (pp_prof_optimizer){params[i], 30, 30 * params[i] / 3e12 * 1e3, 3000};
        f->p.optimizer = f->opt;
    } else if (c->kind == PP_PROBE_CALL_LAYER) {
        for (int t = 0; t < c->n; t++) {
            if (c->values[t] == oom_tp) continue; /* reported in an `oom` record instead */
            double fwd = (c->ffn > 0 ? LAYER_MS : ATTN_MS) / (double)c->values[t];
            f->layer[f->p.n_layer++] = (pp_prof_layer){m->hidden, m->heads, m->seq, c->mbs, c->values[t], fwd,
                                                       3 * fwd, m->kv_heads, c->ffn <= 0};
        }
        f->p.layer = f->layer;
    } else if (c->kind == PP_PROBE_CALL_MLA) {
        for (int t = 0; t < c->n; t++) {
            pp_prof_mla *r = &f->mla[f->p.n_mla++];
            const pp_probe_mla_shape *s = &c->mla;
            const double fwd = MLA_MS / (double)c->values[t];
            *r = (pp_prof_mla){.hidden = s->hidden, .heads = s->heads, .q_lora_rank = s->q_lora_rank,
                               .kv_lora_rank = s->kv_lora_rank, .qk_nope_dim = s->qk_nope_dim,
                               .qk_rope_dim = s->qk_rope_dim, .v_head_dim = s->v_head_dim, .seq = s->seq,
                               .mbs = s->mbs, .tp = c->values[t], .flash = 1, .fwd_ms = fwd, .fwdbwd_ms = 3 * fwd};
        }
        f->p.mla = f->mla;
    } else {
        for (int t = 0; t < c->n; t++) {
            pp_prof_moe *r = &f->moe[f->p.n_moe++];
            const pp_probe_moe_shape *s = &c->moe;
            *r = (pp_prof_moe){.hidden = s->hidden, .experts = s->experts, .topk = s->topk, .moe_ffn = s->moe_ffn,
                               .shared_ffn = s->shared_ffn, .tokens = c->values[t], .ep = s->ep, .imbalance = 1,
                               .grouped = s->grouped, .fwd_ms = MOE_MS, .fwdbwd_ms = 3 * MOE_MS};
            const double parts[3] = {1.0, 0.5, 1.5};
            for (int i = 0; i < 3; i++) r->fwd_parts_ms[2 + i] = parts[i], r->bwd_parts_ms[2 + i] = 2 * parts[i];
        }
        f->p.moe = f->moe;
    }
}

/* Run candidate k of the session: every call answered by the fake probe, or failed when fail_kind
 * matches; the layer at tp oom_tp (0: none) out of GPU memory, in an `oom` record of the profile's
 * text. The calls made, "; "-separated. */
static int run_candidate(pp_probe_session *s, int k, pp_probe_cache *cache, pp_probe_outcome *out, char *calls,
                         size_t cn, int fail_kind, int64_t oom_tp, pp_probe_warnings *warn)
{
    pp_probe_call c;
    char buf[2048];
    int n = 0;
    calls[0] = 0;
    if (warn) warn->n = 0;
    pp_probe_session_begin(s, k, out);
    while (pp_probe_session_next(s, cache, &c)) {
        n++;
        pp_strcatf(calls, cn, "%s%s", calls[0] ? "; " : "", call_text(&c, buf, sizeof buf));
        if ((int)c.kind == fail_kind) {
            pp_probe_session_failed(s, &c);
            continue;
        }
        fake_profile f;
        char text[512] = "";
        fake_answer(s->w, &c, oom_tp, &f);
        const pp_model *m = &s->w->model;
        if (oom_tp && c.kind == PP_PROBE_CALL_LAYER)
            snprintf(text, sizeof text,
                     "oom:\n  - {probe: \"layer\", what: \"hidden=%lld heads=%lld seq=%lld mbs=%lld tp=%lld gelu\", "
                     "oom: true, need_bytes: 1073741824}\n",
                     (long long)m->hidden, (long long)m->heads, (long long)m->seq, (long long)c.mbs, (long long)oom_tp);
        pp_probe_session_device(s, f.p.gpu);
        pp_probe_warnings wn;
        pp_error err = {0};
        if (pp_probe_session_absorb(s, &c, &f.p, text, cache, &wn, &err) != PP_OK)
            tap_ok(false, "absorb %s (%s)", c.argv[0], err.msg);
        if (warn && wn.n) *warn = wn;
    }
    return n;
}

/* Layout l alone, with local GPUs here, every call answered: its plan, the calls made ("; "-separated,
 * their count returned), the cache they filled (from empty) and the outcome. */
static int probe_alone(const pp_work *w, const pp_layout *l, int local, pp_probe_plan *p, pp_probe_cache *cache,
                       pp_probe_outcome *out, char *calls, size_t cn)
{
    pp_probe_session s;
    pp_probe_plan_make(w, l, local, p);
    memset(cache, 0, sizeof *cache);
    pp_probe_session_start(&s, w, p, 1, "NVIDIA H200");
    return run_candidate(&s, 0, cache, out, calls, cn, -1, 0, NULL);
}

static const char *sweep_call = "optimizer --params " PP_PROBE_OPTIMIZER_SWEEP;

/* The composed step (true) and the profile it was composed with (the caller frees it). */
static bool compose(const pp_work *w, const pp_probe_cache *cache, const pp_layout *l, const pp_probe_plan *p,
                    pp_probe_outcome *out, pp_probe_profile *prof, pp_time_result *t)
{
    pp_error err = {0};
    if (pp_probe_profile_make(cache, "NVIDIA H200", NULL, prof, &err) != PP_OK)
        return tap_ok(false, "profile of the cache (%s)", err.msg), false;
    return pp_probe_compose(w, &prof->p, l, p, out, t);
}

static void test_dense_tp2(void)
{
    pp_work w;
    pp_layout l[3];
    /* gpt3-1.3b (24 layers, hidden 2048, seq 2048) on 2 H200 of one node, 8 micro-batches of 2 */
    if (!work_of(&w, "gpt3-1.3b", 2, 8, 16) || !layout_of(&w, &l[0], 2, 1, 1, 1, 2) ||
        !layout_of(&w, &l[1], 1, 1, 2, 1, 2) || !layout_of(&w, &l[2], 2, 1, 1, 1, 1))
        return;
    pp_probe_plan p[3];
    for (int k = 0; k < 3; k++) pp_probe_plan_make(&w, &l[k], 2, &p[k]);
    tap_ok(p[0].n_groups == 1 && p[0].groups[0] == 2 && p[0].need[PP_PROBE_PART_LAYER] && !p[0].need[PP_PROBE_PART_MOE] &&
               !p[0].modelled[0],
           "dense tp2: the TP pair's collectives and the layer, nothing modelled beforehand ('%s')", p[0].modelled);
    tap_ok(!strcmp(p[0].key[PP_PROBE_PART_LAYER], "layer h2048 a16 g16 f8192 s2048 b2 t2 gelu flash"),
           "its layer's cache key: %s", p[0].key[PP_PROBE_PART_LAYER]);
    pp_probe_session s;
    pp_probe_cache cache;
    memset(&cache, 0, sizeof cache);
    pp_probe_session_start(&s, &w, p, 3, "NVIDIA H200");
    pp_probe_outcome out[3];
    char calls[4096];
    int n = run_candidate(&s, 0, &cache, &out[0], calls, sizeof calls, -1, 0, NULL);
    char want[4096];
    snprintf(want, sizeof want,
             "nccl --gpus 2; %s; layer --hidden 2048 --heads 16 --kv-heads 16 --seq 2048 --mbs 2 --ffn 8192 --tp 2,1 "
             "--attention auto",
             sweep_call);
    tap_ok(n == 3 && !strcmp(calls, want), "dense tp2: 3 calls, the tp1 candidate's layer in the same call: %s", calls);
    tap_ok(out[0].probed && !out[0].composed && out[0].layer_fwd_ms == LAYER_MS / 2 &&
               out[0].layer_fwdbwd_ms == 3 * LAYER_MS / 2 && !strcmp(out[0].attention, "flash") &&
               !strcmp(out[0].device, "NVIDIA H200") && !out[0].modelled[0],
           "dense tp2: the layer measured (%.3g / %.3g ms, %s attention on %s), nothing modelled yet",
           out[0].layer_fwd_ms, out[0].layer_fwdbwd_ms, out[0].attention, out[0].device);
    n = run_candidate(&s, 1, &cache, &out[1], calls, sizeof calls, -1, 0, NULL);
    tap_ok(n == 0 && out[1].probed && out[1].layer_fwd_ms == LAYER_MS,
           "tp1 dp2: nothing more to measure (DP pair: the same 2-GPU sweep), its layer %.3g ms", out[1].layer_fwd_ms);
    n = run_candidate(&s, 2, &cache, &out[2], calls, sizeof calls, -1, 0, NULL);
    tap_ok(n == 1 && strstr(calls, "layer ") && strstr(calls, "--mbs 1") && strstr(calls, "--tp 2 "),
           "tp2 mbs1: another micro-batch, another layer call (%s)", calls);

    /* composing: the time model's step with the measured layer in place of the modelled one */
    pp_time_result t, t1, direct;
    pp_probe_profile prof;
    bool ok = compose(&w, &cache, &l[0], &p[0], &out[0], &prof, &t);
    tap_ok(ok && out[0].probed && out[0].optimizer_ms > 0 && !strstr(out[0].modelled, "optimizer") &&
               !strcmp(out[0].modelled, "embedding and output layer"),
           "composed: the optimizer step measured (%.4g ms); modelled: %s", out[0].optimizer_ms, out[0].modelled);
    tap_ok(prof.p.n_nccl == 20 && prof.p.n_optimizer == 3, "the profile of the cache: 20 collectives, 3 optimizer steps");
    pp_work wp = w;
    wp.profile = &prof.p;
    pp_time_opts o;
    pp_time_opts_default(&wp, &o);
    double f[PP_LAYER_KINDS] = {0}, fb[PP_LAYER_KINDS] = {0};
    f[p[0].kind_main] = LAYER_MS / 2 * 1e-3, fb[p[0].kind_main] = 3 * LAYER_MS / 2 * 1e-3;
    pp_time_measured mi;
    pp_time_step_measured_kinds(&wp, &l[0], &o, NULL, f, fb, &direct, &mi);
    tap_near(t.step_time_s, direct.step_time_s, 1e-12, "the step is the time model's with the measured layer (%.6g s)",
             t.step_time_s);
    /* 24 layers x 8 micro-batches x 15 ms = 2.88 s of layers; the optimizer step over the rank's half
     * of the parameters 6.6 ms; the embedding, the output layer and TP's collectives the model's
     * (the output GEMMs at the catalog H200's training rate, gemm_sustained, over the vocabulary as
     * Megatron pads it) */
    tap_near(t.step_time_s, 2.951768, 1e-6, "dense tp2, the fake measurements: step %.7g s", t.step_time_s);
    pp_probe_profile_free(&prof);
    /* the layer 1 ms longer (forward + backward): 24 layers x 8 micro-batches = +192 ms */
    out[0].layer_fwdbwd_ms += 1;
    compose(&w, &cache, &l[0], &p[0], &out[0], &prof, &t1);
    tap_near(t1.step_time_s - t.step_time_s, 0.192, 1e-9, "the measured layer +1 ms: the step +192 ms");
    pp_probe_profile_free(&prof);
    pp_probe_cache_free(&cache);

    /* one call per micro-batch: on 4 GPUs, tp 2 at mbs 2 and tp 4 at mbs 1 are two layer calls */
    if (!work_of(&w, "gpt3-1.3b", 4, 8, 16) || !layout_of(&w, &l[0], 2, 1, 2, 1, 2) ||
        !layout_of(&w, &l[1], 4, 1, 1, 1, 1))
        return;
    for (int k = 0; k < 2; k++) pp_probe_plan_make(&w, &l[k], 4, &p[k]);
    memset(&cache, 0, sizeof cache);
    pp_probe_session_start(&s, &w, p, 2, "NVIDIA H200");
    run_candidate(&s, 0, &cache, &out[0], calls, sizeof calls, -1, 0, NULL);
    char later[4096];
    n = run_candidate(&s, 1, &cache, &out[1], later, sizeof later, -1, 0, NULL);
    tap_ok(strstr(calls, "--mbs 2 --ffn 8192 --tp 2 --attention") && n == 2 && strstr(later, "nccl --gpus 4") &&
               strstr(later, "--mbs 1 --ffn 8192 --tp 4 --attention"),
           "tp2 mbs2 then tp4 mbs1: %s; then %s", calls, later);
    pp_probe_cache_free(&cache);
}

static void test_moe_ep2(void)
{
    pp_work w;
    pp_layout l;
    /* moe-64fg (8 layers, the first dense; 64 experts of 1408, top-6, shared experts of 2816) on 2
     * H200, 2 micro-batches of 1 */
    if (!work_of(&w, "moe-64fg.yaml", 2, 8, 4) || !layout_of(&w, &l, 1, 1, 2, 2, 1)) return;
    pp_probe_plan p;
    pp_probe_cache cache;
    pp_probe_outcome out;
    char calls[4096], want[4096];
    int n = probe_alone(&w, &l, 2, &p, &cache, &out, calls, sizeof calls);
    tap_ok(p.n_groups == 1 && p.groups[0] == 2 && p.kind_dense >= 0 && !p.moe.shared_modelled && !p.modelled[0],
           "moe ep2 dp2: one 2-GPU sweep (DP and EP pairs), the dense layers apart, the shared experts measured");
    snprintf(want, sizeof want,
             "nccl --gpus 2; %s; "
             "layer --hidden 2048 --heads 16 --kv-heads 16 --seq 4096 --mbs 1 --ffn 10944 --tp 1 --attention auto --swiglu; "
             "layer --hidden 2048 --heads 16 --kv-heads 16 --seq 4096 --mbs 1 --no-mlp --tp 1 --attention auto; "
             "moe --hidden 2048 --experts 64 --topk 6 --moe-ffn 1408 --ep 2 --shared-ffn 2816 --tokens 4096 --moe-impl loop",
             sweep_call);
    tap_ok(n == 5 && !strcmp(calls, want), "moe ep2: the dense layer, the layer without its MLP, the MoE MLP: %s", calls);
    tap_ok(out.probed && out.composed && !out.attn_mla && out.attn_fwd_ms == ATTN_MS && out.moe_fwd_ms == MOE_MS &&
               out.moe_shared && out.expert_fwd_ms == 3.0 && out.expert_bwd_ms == 6.0 && out.dense_fwd_ms == LAYER_MS &&
               !strcmp(out.moe_impl, "loop"),
           "the parts: attention %.3g, MoE MLP %.3g (experts %.3g / %.3g), dense layers %.3g ms", out.attn_fwd_ms,
           out.moe_fwd_ms, out.expert_fwd_ms, out.expert_bwd_ms, out.dense_fwd_ms);
    pp_time_result t;
    pp_probe_profile prof;
    bool ok = compose(&w, &cache, &l, &p, &out, &prof, &t);
    tap_ok(ok && fabs(out.layer_fwd_ms - (ATTN_MS + MOE_MS)) < 1e-9 &&
               fabs(out.layer_fwdbwd_ms - 3 * (ATTN_MS + MOE_MS)) < 1e-9 && fabs(out.rest_fwd_ms) < 1e-9 &&
               out.host_fwd_ms == 0,
           "the MoE layer is attention + MoE MLP (%.6g / %.6g ms), the model's rest 0", out.layer_fwd_ms,
           out.layer_fwdbwd_ms);
    /* 2 micro-batches x (the dense layer's 30 ms + 7 MoE layers x 27 ms) = 438 ms of layers; the
     * optimizer step, the EP all-to-all and the DP reduction at 300 GB/s, the embedding and output layer
     * (its GEMMs at the catalog H200's training rate, gemm_sustained) */
    tap_near(t.step_time_s, 0.5043417, 1e-6, "moe ep2, the fake measurements: step %.7g s (modelled: %s)",
             t.step_time_s, out.modelled);
    pp_probe_profile_free(&prof);
    pp_probe_cache_free(&cache);
}

static void test_mla(void)
{
    pp_work w;
    pp_layout l;
    /* deepseek-v2-lite (27 layers, the first dense; MLA, kv rank 512, no q rank) on 8 H200, EP 8 */
    if (!work_of(&w, "deepseek-v2-lite", 8, 8, 32) || !layout_of(&w, &l, 1, 1, 8, 8, 1)) return;
    pp_probe_plan p;
    pp_probe_cache cache;
    pp_probe_outcome out;
    char calls[4096], want[4096];
    int n = probe_alone(&w, &l, 8, &p, &cache, &out, calls, sizeof calls);
    tap_ok(p.need[PP_PROBE_PART_MLA] && p.need[PP_PROBE_PART_MOE] && !p.need[PP_PROBE_PART_ATTN] &&
               !p.need[PP_PROBE_PART_LAYER] &&
               !strcmp(p.modelled, "the norms and residual adds around the MLA block; the dense layers' MLP"),
           "mla: the MLA block and the MoE MLP; modelled: %s", p.modelled);
    snprintf(want, sizeof want,
             "nccl --gpus 8; %s; "
             "mla --hidden 2048 --heads 16 --q-lora-rank 0 --kv-lora-rank 512 --qk-nope-dim 128 --qk-rope-dim 64 "
             "--v-head-dim 128 --seq 4096 --mbs 1 --tp 1 --attention auto; "
             "moe --hidden 2048 --experts 64 --topk 6 --moe-ffn 1408 --ep 8 --shared-ffn 2816 --tokens 4096 --moe-impl loop",
             sweep_call);
    tap_ok(n == 4 && !strcmp(calls, want), "mla ep8: %s", calls);
    pp_time_result t;
    pp_probe_profile prof;
    bool ok = compose(&w, &cache, &l, &p, &out, &prof, &t);
    double norms = out.layer_fwd_ms - (MLA_MS + MOE_MS);
    tap_ok(ok && out.attn_mla && norms > 0 && norms < 0.05 * out.layer_fwd_ms && fabs(out.rest_fwd_ms - norms) < 1e-9,
           "the MLA layer: block + MoE MLP + the model's norms (%.4g ms of %.4g)", norms, out.layer_fwd_ms);
    tap_ok(strstr(out.modelled, "the dense layers' MLP") && strstr(out.modelled, "embedding and output layer"),
           "modelled: %s", out.modelled);
    pp_probe_profile_free(&prof);
    pp_probe_cache_free(&cache);
}

static void test_groups(void)
{
    pp_work w;
    pp_layout l;
    /* llama3-8b on 16 H200, 8 per node, 4 of them here */
    if (!work_of(&w, "llama3-8b", 16, 8, 64)) return;
    pp_probe_plan p;
    if (layout_of(&w, &l, 4, 1, 4, 1, 1)) {
        pp_probe_plan_make(&w, &l, 4, &p);
        tap_ok(p.n_groups == 1 && p.groups[0] == 4 && !strcmp(p.modelled, "DP across nodes (network figures)"),
               "tp4 dp4 over two nodes: TP measured on 4 GPUs; modelled: %s", p.modelled);
    }
    if (layout_of(&w, &l, 8, 2, 1, 1, 1)) {
        pp_probe_plan_make(&w, &l, 4, &p);
        tap_ok(p.n_groups == 0 &&
                   !strcmp(p.modelled, "TP group of 8 > 4 local GPUs; PP send/recv across nodes (network figures)"),
               "tp8 pp2: no collective measured; modelled: %s", p.modelled);
    }
    if (layout_of(&w, &l, 2, 1, 8, 1, 1)) {
        l.cp = 2, l.dp = 4;
        pp_probe_plan_make(&w, &l, 4, &p);
        tap_ok(!p.need[PP_PROBE_PART_LAYER] && p.n_groups == 1 && p.groups[0] == 2 &&
                   strstr(p.modelled, "DP across nodes") &&
                   strstr(p.modelled, "layer (context-parallel layer: no layer probe)"),
               "tp2 cp2 dp4: the CP layer is not probed; modelled: %s", p.modelled);
    }
}

/* A probe that fails, a layer out of GPU memory, the budget spent. */
static void test_faults(void)
{
    pp_work w;
    pp_layout l[2];
    if (!work_of(&w, "gpt3-1.3b", 2, 8, 16) || !layout_of(&w, &l[0], 2, 1, 1, 1, 2) ||
        !layout_of(&w, &l[1], 1, 1, 2, 1, 2))
        return;
    pp_probe_plan p[2];
    for (int k = 0; k < 2; k++) pp_probe_plan_make(&w, &l[k], 2, &p[k]);
    pp_probe_session s;
    pp_probe_cache cache;
    memset(&cache, 0, sizeof cache);
    pp_probe_outcome out;
    char calls[4096];
    /* the layer probe fails: both candidates' layers stay modelled, and are not asked again */
    pp_probe_session_start(&s, &w, p, 2, "NVIDIA H200");
    run_candidate(&s, 0, &cache, &out, calls, sizeof calls, PP_PROBE_CALL_LAYER, 0, NULL);
    tap_ok(!out.probed && !strcmp(out.modelled, "layer (the probe failed)"), "layer probe failed: %s", out.modelled);
    int n = run_candidate(&s, 1, &cache, &out, calls, sizeof calls, -1, 0, NULL);
    tap_ok(n == 0 && !out.probed && !strcmp(out.modelled, "layer (the probe failed)"),
           "the tp1 layer was in the failed call: not asked again (%d calls)", n);
    pp_probe_cache_free(&cache);
    /* the collectives fail: noted, the layer still measured */
    memset(&cache, 0, sizeof cache);
    pp_probe_session_start(&s, &w, p, 2, "NVIDIA H200");
    run_candidate(&s, 0, &cache, &out, calls, sizeof calls, PP_PROBE_CALL_NCCL, 0, NULL);
    tap_ok(out.probed && !strcmp(out.modelled, "collectives over 2 GPUs (the probe failed)"), "nccl failed: %s",
           out.modelled);
    pp_probe_cache_free(&cache);
    /* the layer at tp 2 out of GPU memory (the probe's `oom` record): a warning, modelled, not asked
     * again; tp 1 measured */
    memset(&cache, 0, sizeof cache);
    pp_probe_session_start(&s, &w, p, 2, "NVIDIA H200");
    pp_probe_warnings warn;
    run_candidate(&s, 0, &cache, &out, calls, sizeof calls, -1, 2, &warn);
    tap_ok(warn.n == 1 && !strcmp(warn.line[0], "the layer at tp 2, mbs 2 ran out of GPU memory on NVIDIA H200 in the "
                                                 "probe: those candidates keep the model's figures"),
           "out of memory at tp 2: %s", warn.n ? warn.line[0] : "(no warning)");
    tap_ok(!out.probed && !strcmp(out.modelled, "layer (out of GPU memory in the probe at this size)"),
           "tp2 modelled: %s", out.modelled);
    n = run_candidate(&s, 1, &cache, &out, calls, sizeof calls, -1, 0, NULL);
    tap_ok(n == 0 && out.probed, "tp1 measured in the same call");
    pp_probe_cache_free(&cache);
    /* the budget spent before the layer: modelled, saying so */
    memset(&cache, 0, sizeof cache);
    pp_probe_session_start(&s, &w, p, 2, "NVIDIA H200");
    pp_probe_session_begin(&s, 0, &out);
    pp_probe_call c;
    n = 0;
    while (pp_probe_session_next(&s, &cache, &c)) {
        n++;
        s.out_of_budget = true; /* not run */
    }
    tap_ok(n == 1 && c.kind == PP_PROBE_CALL_NCCL && !out.probed && !strcmp(out.modelled, "layer (--probe-budget spent)"),
           "budget spent at the first call: nothing more asked; modelled: %s", out.modelled);
    pp_probe_cache_free(&cache);
}

int main(void)
{
    char dir[1024];
    pp_error err = {0};
    if (pp_catalog_find_dir(NULL, dir, sizeof dir, &err) != PP_OK || pp_catalog_load(&cat, dir, &err) != PP_OK) {
        tap_ok(false, "catalog (%s)", err.msg);
        return tap_done();
    }
    test_dense_tp2();
    test_moe_ep2();
    test_mla();
    test_groups();
    test_faults();
    pp_catalog_free(&cat);
    return tap_done();
}
