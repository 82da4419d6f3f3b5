/* What plan --probe measures and how it composes the step: see pp_probe_plan.h. */
#include "pp_probe_plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_calibrate.h"

static void append(char *dst, size_t n, const char *what)
{
    if (strstr(dst, what)) return;
    size_t k = strlen(dst);
    snprintf(dst + k, n - k, "%s%s", k ? "; " : "", what);
}

/* ------------------------------------------------------------------ what to measure */

/* The attention of the layer probe: heads of the model's head size (--head-dim where heads x head
 * size is not the hidden size), no CP. */
static bool heads_probeable(const pp_work *w, const pp_layout *l, char *why, size_t n)
{
    const pp_model *m = &w->model;
    if (l->cp > 1) return snprintf(why, n, "context-parallel layer"), false;
    if (m->head_dim < 8 || m->head_dim % 8) return snprintf(why, n, "head size"), false;
    if (m->hidden > 32768) return snprintf(why, n, "hidden above 32768"), false;
    return true;
}

/* The whole layer at the model's dense MLP (a dense model's layer, an MoE model's dense layers). */
static bool dense_probeable(const pp_work *w, const pp_layout *l, char *why, size_t n)
{
    const pp_model *m = &w->model;
    if (l->cp > 1) return snprintf(why, n, "context-parallel layer"), false;
    /* the layer probe runs GELU and SwiGLU MLPs */
    if (m->act != PP_ACT_GELU && m->act != PP_ACT_SWIGLU) return snprintf(why, n, "%s MLP", pp_act_names[m->act]), false;
    return heads_probeable(w, l, why, n);
}

static bool layer_probeable(const pp_work *w, const pp_layout *l, char *why, size_t n)
{
    if (w->model.experts > 1) return snprintf(why, n, "MoE layer"), false;
    return dense_probeable(w, l, why, n);
}

/* The collective group sizes the layout needs measured, and notes for what stays modelled. */
static void groups_of(const pp_work *w, const pp_layout *l, int local, pp_probe_plan *p)
{
    const int64_t gpn = w->gpus_per_node > 0 ? w->gpus_per_node : 1;
    /* MoE: the EP all-to-all (ranks etp apart in Megatron's expert grid) and the expert-TP gathers
     * (time.c layer_terms) read the all_to_all / all_gather / reduce_scatter rows of these sizes */
    const bool moe = pp_model_is_moe(&w->model);
    const int64_t etp = pp_layout_etp(l);
    int64_t want[PP_PROBE_GROUPS] = {l->tp, l->dp * l->cp, l->pp > 1 ? 2 : 1, moe ? l->ep : 1, moe ? etp : 1};
    const char *what[PP_PROBE_GROUPS] = {"TP", "DP", "PP send/recv", "EP all-to-all", "expert-TP"};
    for (int i = 0; i < PP_PROBE_GROUPS; i++) {
        int64_t g = want[i];
        if (g <= 1) continue;
        char note[160];
        /* the DP group strides over tp ranks: inside a node only when tp x dp x cp fits in it */
        bool intra = i == 0 || i == 4 ? g <= gpn : i == 1 ? l->tp * g <= gpn : i == 3 ? etp * g <= gpn : w->gpus <= gpn;
        if (!intra) {
            snprintf(note, sizeof note, "%s across nodes (network figures)", what[i]);
            append(p->modelled, sizeof p->modelled, note);
        } else if (g > local) {
            snprintf(note, sizeof note, "%s group of %lld > %d local GPUs", what[i], (long long)g, local);
            append(p->modelled, sizeof p->modelled, note);
        } else {
            bool dup = false;
            for (int j = 0; j < p->n_groups; j++) dup |= p->groups[j] == (int)g;
            if (!dup) p->groups[p->n_groups++] = (int)g;
        }
    }
}

static const char *part_name(const pp_work *w, int part)
{
    static const char *const names[PP_PROBE_PARTS] = {"layer", "attention (the layer without its MLP)",
                                                      "MLA attention", "MoE MLP"};
    return part == PP_PROBE_PART_LAYER && pp_model_is_moe(&w->model) ? "dense layers" : names[part];
}

/* The parts of the layout's layers to measure, and notes for what stays modelled (whole-layer notes
 * for dense models). */
static void parts_of(const pp_work *w, const pp_layout *l, pp_probe_plan *p)
{
    const pp_model *m = &w->model;
    char why[128], note[256];
    char *modelled = p->modelled;
    const size_t mn = sizeof p->modelled;
    p->kind_main = m->layers > 0 ? pp_model_layer_kind(m, m->layers - 1) : 0;
    p->kind_dense = -1;
    const bool moe = pp_model_is_moe(m), mla = pp_model_is_mla(m);
    if (moe) {
        int64_t counts[PP_LAYER_KINDS];
        pp_model_layer_counts(m, 0, m->layers, counts);
        int kd = p->kind_main & ~PP_LAYER_MOE;
        if (counts[kd] > 0) p->kind_dense = kd;
    }
    if (!moe && !mla) {
        if (layer_probeable(w, l, why, sizeof why)) {
            p->need[PP_PROBE_PART_LAYER] = true;
        } else {
            snprintf(note, sizeof note, "layer (%s: no layer probe)", why);
            append(modelled, mn, note);
        }
    } else if (l->cp > 1) {
        append(modelled, mn, "layer (context-parallel layer: no layer probe)");
    } else {
        if (mla) {
            if (pp_probe_mla_shape_of(w, l, &p->mla, why, sizeof why)) {
                p->need[PP_PROBE_PART_MLA] = true;
                append(modelled, mn, "the norms and residual adds around the MLA block");
            } else {
                snprintf(note, sizeof note, "MLA attention (%s: no mla probe)", why);
                append(modelled, mn, note);
            }
        } else if (heads_probeable(w, l, why, sizeof why)) {
            p->need[PP_PROBE_PART_ATTN] = true;
        } else {
            snprintf(note, sizeof note, "attention (%s: no layer probe)", why);
            append(modelled, mn, note);
        }
        if (moe) {
            if (pp_probe_moe_shape_of(w, l, &p->moe, why, sizeof why)) {
                p->need[PP_PROBE_PART_MOE] = true;
                if (p->moe.shared_modelled) {
                    snprintf(note, sizeof note, "shared experts (they run on %lld tokens, the probe's experts on %lld)",
                             (long long)(l->mbs * m->seq / (l->cp > 0 ? l->cp : 1)), (long long)p->moe.tokens);
                    append(modelled, mn, note);
                }
            } else {
                snprintf(note, sizeof note, "MoE MLP (%s: no moe probe)", why);
                append(modelled, mn, note);
            }
        }
        if (p->kind_dense >= 0) {
            if (!mla && dense_probeable(w, l, why, sizeof why)) {
                p->need[PP_PROBE_PART_LAYER] = true;
            } else if (mla) {
                append(modelled, mn, "the dense layers' MLP");
            } else {
                snprintf(note, sizeof note, "dense layers (%s: no layer probe)", why);
                append(modelled, mn, note);
            }
        }
    }
    const size_t kn = sizeof p->key[0];
    if (p->need[PP_PROBE_PART_LAYER]) pp_probe_cache_layer_key(w, l, p->key[PP_PROBE_PART_LAYER], kn);
    if (p->need[PP_PROBE_PART_ATTN]) pp_probe_cache_layer_key_ffn(w, l, 0, p->key[PP_PROBE_PART_ATTN], kn);
    if (p->need[PP_PROBE_PART_MLA]) pp_probe_cache_mla_key(w, &p->mla, p->key[PP_PROBE_PART_MLA], kn);
    if (p->need[PP_PROBE_PART_MOE]) pp_probe_cache_moe_key(&p->moe, p->key[PP_PROBE_PART_MOE], kn);
}

void pp_probe_plan_make(const pp_work *w, const pp_layout *l, int local_gpus, pp_probe_plan *p)
{
    memset(p, 0, sizeof *p);
    p->tp = l->tp;
    p->mbs = l->mbs;
    p->offloaded = l->offload != PP_OFF_NONE;
    groups_of(w, l, local_gpus, p);
    parts_of(w, l, p);
}

/* ------------------------------------------------------------------ the calls' arguments */

static void arg(pp_probe_call *c, const char *s)
{
    if (c->argc < PP_PROBE_CALL_ARGS - 1) snprintf(c->argv[c->argc++], sizeof c->argv[0], "%s", s);
}

static void arg_num(pp_probe_call *c, const char *flag, int64_t v)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)v);
    arg(c, flag);
    arg(c, num);
}

/* flag[i] v[i] for i < n */
static void args_num(pp_probe_call *c, const char *const *flag, const int64_t *v, int n)
{
    for (int i = 0; i < n; i++) arg_num(c, flag[i], v[i]);
}

/* "1,2,4": the values of a parplan-probe list option */
static const char *list_of(const int64_t *v, int n, char *buf, size_t bn)
{
    buf[0] = 0;
    for (int i = 0; i < n; i++) pp_strcatf(buf, bn, "%s%lld", i ? "," : "", (long long)v[i]);
    return buf;
}

static void call_start(pp_probe_call *c, pp_probe_call_kind kind, int part, const char *probe)
{
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->part = part;
    arg(c, probe);
}

static void call_nccl(pp_probe_call *c, int ranks)
{
    call_start(c, PP_PROBE_CALL_NCCL, -1, "nccl");
    arg_num(c, "--gpus", ranks);
    c->ranks = ranks;
    snprintf(c->consequence, sizeof c->consequence, " on %d GPUs: its collectives keep the model's figures", ranks);
}

/* The optimizer step: one call times a fused mixed-precision AdamW step (fp32 master weights,
 * grads and moments, the bf16 copy written back: Megatron's Float16Optimizer) at the sweep's sizes. */
static void call_optimizer(pp_probe_call *c)
{
    call_start(c, PP_PROBE_CALL_OPTIMIZER, -1, "optimizer");
    arg(c, "--params");
    arg(c, PP_PROBE_OPTIMIZER_SWEEP);
    snprintf(c->consequence, sizeof c->consequence, ": the optimizer step keeps the model's figure");
}

/* The layers of the model at micro-batch mbs and the TP sizes values[]: with an MLP of ffn (the
 * model's dense one), or without it (ffn 0: --no-mlp). */
static void call_layers(pp_probe_call *c, const pp_work *w, int part, int64_t mbs, int64_t ffn)
{
    const pp_model *m = &w->model;
    char tplist[128];
    list_of(c->values, c->n, tplist, sizeof tplist);
    c->kind = PP_PROBE_CALL_LAYER;
    c->part = part;
    c->mbs = mbs;
    c->ffn = ffn;
    const char *const flag[5] = {"--hidden", "--heads", "--kv-heads", "--seq", "--mbs"};
    const int64_t v[5] = {m->hidden, m->heads, m->kv_heads, m->seq, mbs};
    arg(c, "layer");
    args_num(c, flag, v, 5);
    if (ffn > 0) arg_num(c, "--ffn", ffn);
    /* heads wider than hidden / heads (Qwen3: 32 x 128 over 2048) */
    if (m->head_dim * m->heads != m->hidden) arg_num(c, "--head-dim", m->head_dim);
    if (ffn <= 0) arg(c, "--no-mlp");
    arg(c, "--tp");
    arg(c, tplist);
    /* the attention the work asks: unfused (Megatron's local implementation) is measured as such;
     * flash where cuDNN builds it, else the unfused path (noted in the outcome) */
    arg(c, "--attention");
    arg(c, w->attention == PP_ATTN_UNFUSED ? "unfused" : "auto");
    if (ffn > 0 && m->act == PP_ACT_SWIGLU) arg(c, "--swiglu");
    snprintf(c->consequence, sizeof c->consequence, " for mbs %lld, tp %s: those candidates keep the model's figures",
             (long long)mbs, tplist);
}

/* The MLA block of shape sh at the TP sizes values[]. */
static void call_mla(pp_probe_call *c, const pp_work *w, const pp_probe_mla_shape *sh)
{
    char tplist[128];
    list_of(c->values, c->n, tplist, sizeof tplist);
    c->kind = PP_PROBE_CALL_MLA;
    c->part = PP_PROBE_PART_MLA;
    c->mla = *sh;
    const char *const flag[9] = {"--hidden",      "--heads",      "--q-lora-rank", "--kv-lora-rank", "--qk-nope-dim",
                                 "--qk-rope-dim", "--v-head-dim", "--seq",         "--mbs"};
    const int64_t v[9] = {sh->hidden,      sh->heads,      sh->q_lora_rank, sh->kv_lora_rank, sh->qk_nope_dim,
                          sh->qk_rope_dim, sh->v_head_dim, sh->seq,         sh->mbs};
    arg(c, "mla");
    args_num(c, flag, v, 9);
    arg(c, "--tp");
    arg(c, tplist);
    arg(c, "--attention");
    arg(c, w->attention == PP_ATTN_UNFUSED ? "unfused" : "auto");
    snprintf(c->consequence, sizeof c->consequence,
             " for mbs %lld, tp %s: those candidates keep the model's attention figures", (long long)sh->mbs, tplist);
}

/* The MoE MLP of shape sh at the token counts values[]. */
static void call_moe(pp_probe_call *c, const pp_probe_moe_shape *sh)
{
    char toklist[160];
    list_of(c->values, c->n, toklist, sizeof toklist);
    c->kind = PP_PROBE_CALL_MOE;
    c->part = PP_PROBE_PART_MOE;
    c->moe = *sh;
    const char *const flag[6] = {"--hidden", "--experts", "--topk", "--moe-ffn", "--ep", "--shared-ffn"};
    const int64_t v[6] = {sh->hidden, sh->experts, sh->topk, sh->moe_ffn, sh->ep, sh->shared_ffn};
    arg(c, "moe");
    args_num(c, flag, v, sh->shared_ffn > 0 ? 6 : 5);
    arg(c, "--tokens");
    arg(c, toklist);
    arg(c, "--moe-impl");
    arg(c, sh->grouped ? "grouped" : "loop");
    snprintf(c->consequence, sizeof c->consequence,
             " for %lld tokens per rank (%s): those candidates keep the model's MoE figures", (long long)c->values[0],
             toklist);
}

/* ------------------------------------------------------------------ the session */

static bool failed_key(const pp_probe_session *s, const char *key)
{
    for (int i = 0; i < s->n_failed; i++)
        if (!strcmp(s->failed[i], key)) return true;
    return false;
}

static bool failed_oom(const pp_probe_session *s, const char *key)
{
    for (int i = 0; i < s->n_failed; i++)
        if (!strcmp(s->failed[i], key)) return s->failed_oom[i];
    return false;
}

static void fail_key(pp_probe_session *s, const char *key, bool oom)
{
    if (s->n_failed >= PP_PROBE_FAILED) return;
    snprintf(s->failed[s->n_failed], sizeof s->failed[0], "%.191s", key);
    s->failed_oom[s->n_failed++] = oom;
}

void pp_probe_session_start(pp_probe_session *s, const pp_work *w, const pp_probe_plan *plans, int n,
                            const char *gpu)
{
    memset(s, 0, sizeof *s);
    s->w = w;
    s->plans = plans;
    s->n = n;
    snprintf(s->gpu, sizeof s->gpu, "%s", gpu);
}

void pp_probe_session_device(pp_probe_session *s, const char *device)
{
    if (!device[0] || s->device_known) return;
    snprintf(s->gpu, sizeof s->gpu, "%s", device);
    s->device_known = true;
}

enum { STAGE_NCCL = 0, STAGE_OPTIMIZER, STAGE_PARTS, STAGE_DONE };

void pp_probe_session_begin(pp_probe_session *s, int k, pp_probe_outcome *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->modelled, sizeof out->modelled, "%s", s->plans[k].modelled);
    s->k = k;
    s->out = out;
    s->stage = STAGE_NCCL;
    s->i = 0;
    s->pending = false;
    s->got_experts = false;
    memset(s->got, 0, sizeof s->got);
    memset(s->ent, 0, sizeof s->ent);
    memset(&s->ent_experts, 0, sizeof s->ent_experts);
}

/* Part p of candidate k as the cache holds it now (after its call, if it needed one), or a note
 * saying why it stays modelled. */
static void take_part(pp_probe_session *s, const pp_probe_cache *cache, int p)
{
    const pp_probe_plan *pl = &s->plans[s->k];
    const char *key = pl->key[p];
    const pp_probe_cache_entry *e = pp_probe_cache_get(cache, s->gpu, key);
    if (e) {
        s->got[p] = true;
        s->ent[p] = *e;
        if (p == PP_PROBE_PART_MOE) {
            char ek[PP_PROBE_KEY];
            snprintf(ek, sizeof ek, "%.180s experts", key);
            const pp_probe_cache_entry *x = pp_probe_cache_get(cache, s->gpu, ek);
            if ((s->got_experts = x != NULL)) s->ent_experts = *x;
        }
        return;
    }
    char note[256];
    const char *what = part_name(s->w, p);
    if (failed_oom(s, key)) snprintf(note, sizeof note, "%s (out of GPU memory in the probe at this size)", what);
    else if (failed_key(s, key)) snprintf(note, sizeof note, "%s (the probe failed)", what);
    else if (s->out_of_budget) snprintf(note, sizeof note, "%s (--probe-budget spent)", what);
    else snprintf(note, sizeof note, "%s (the probe returned no figure for this shape)", what);
    append(s->out->modelled, sizeof s->out->modelled, note);
}

/* The call that measures part p of candidate k, with the same part of the later candidates that
 * differ only in tp (layer, MLA) or in tokens per rank (MoE) and are not in the cache. */
static void part_call(const pp_probe_session *s, const pp_probe_cache *cache, int p, pp_probe_call *c)
{
    const pp_probe_plan *pk = &s->plans[s->k];
    memset(c, 0, sizeof *c);
    for (int j = s->k; j < s->n && c->n < PP_PROBE_CALL_BATCH; j++) {
        const pp_probe_plan *pj = &s->plans[j];
        if (!pj->need[p] || pp_probe_cache_get(cache, s->gpu, pj->key[p]) || failed_key(s, pj->key[p])) continue;
        int64_t v;
        if (p == PP_PROBE_PART_MOE) {
            const pp_probe_moe_shape *a = &pj->moe, *b = &pk->moe;
            if (a->hidden != b->hidden || a->experts != b->experts || a->topk != b->topk || a->moe_ffn != b->moe_ffn ||
                a->shared_ffn != b->shared_ffn || a->ep != b->ep || a->grouped != b->grouped)
                continue;
            v = a->tokens;
        } else {
            if (pj->mbs != pk->mbs) continue;
            v = pj->tp;
        }
        bool dup = false;
        for (int t = 0; t < c->n; t++) dup |= c->values[t] == v;
        if (dup) continue;
        snprintf(c->keys[c->n], sizeof c->keys[0], "%s", pj->key[p]);
        c->values[c->n++] = v;
    }
    if (p == PP_PROBE_PART_MOE) call_moe(c, &pk->moe);
    else if (p == PP_PROBE_PART_MLA) call_mla(c, s->w, &pk->mla);
    else call_layers(c, s->w, p, pk->mbs, p == PP_PROBE_PART_LAYER ? s->w->model.ffn : 0);
}

/* The candidate's outcome from the parts taken in. */
static void finish(pp_probe_session *s)
{
    const pp_probe_plan *pl = &s->plans[s->k];
    pp_probe_outcome *in = s->out;
    const pp_probe_cache_entry *ent = s->ent;
    for (int p = PP_PROBE_PARTS - 1; p >= 0; p--)
        if (s->got[p]) snprintf(in->device, sizeof in->device, "%s", ent[p].gpu);
    if (!pl->need[PP_PROBE_PART_ATTN] && !pl->need[PP_PROBE_PART_MLA] && !pl->need[PP_PROBE_PART_MOE]) {
        /* a dense model: its layer, measured whole */
        if (s->got[PP_PROBE_PART_LAYER]) {
            in->probed = true;
            in->layer_fwd_ms = ent[PP_PROBE_PART_LAYER].a;
            in->layer_fwdbwd_ms = ent[PP_PROBE_PART_LAYER].b;
            snprintf(in->attention, sizeof in->attention, "%.15s", ent[PP_PROBE_PART_LAYER].note);
        }
        return;
    }
    if (!s->got[PP_PROBE_PART_ATTN] && !s->got[PP_PROBE_PART_MLA] && !s->got[PP_PROBE_PART_MOE]) return;
    /* an MoE or MLA layer: its parts, composed by pp_probe_compose */
    in->probed = in->composed = true;
    const int pa = s->got[PP_PROBE_PART_MLA]     ? PP_PROBE_PART_MLA
                   : s->got[PP_PROBE_PART_ATTN]  ? PP_PROBE_PART_ATTN
                   : s->got[PP_PROBE_PART_LAYER] ? PP_PROBE_PART_LAYER
                                                 : -1;
    if (pa >= 0) snprintf(in->attention, sizeof in->attention, "%.15s", ent[pa].note);
    if (pa == PP_PROBE_PART_MLA || pa == PP_PROBE_PART_ATTN) {
        in->attn_mla = pa == PP_PROBE_PART_MLA;
        in->attn_fwd_ms = ent[pa].a;
        in->attn_fwdbwd_ms = ent[pa].b;
    }
    if (s->got[PP_PROBE_PART_MOE]) {
        const pp_probe_cache_entry *e = &ent[PP_PROBE_PART_MOE];
        in->moe_fwd_ms = e->a;
        in->moe_fwdbwd_ms = e->b;
        in->moe_shared = pl->moe.shared_ffn > 0;
        snprintf(in->moe_impl, sizeof in->moe_impl, "%s", pl->moe.grouped ? "grouped" : "loop");
        in->expert_fwd_ms = s->got_experts ? s->ent_experts.a : e->a;
        in->expert_bwd_ms = s->got_experts ? s->ent_experts.b : e->b - e->a;
    }
    if (s->got[PP_PROBE_PART_LAYER]) {
        in->dense_fwd_ms = ent[PP_PROBE_PART_LAYER].a;
        in->dense_fwdbwd_ms = ent[PP_PROBE_PART_LAYER].b;
    }
}

bool pp_probe_session_next(pp_probe_session *s, const pp_probe_cache *cache, pp_probe_call *call)
{
    const pp_probe_plan *pl = &s->plans[s->k];
    if (s->stage == STAGE_NCCL) {
        /* the collectives, until the budget is spent */
        while (s->i < pl->n_groups && !s->out_of_budget) {
            char mk[32];
            int g = pl->groups[s->i++];
            snprintf(mk, sizeof mk, "nccl n%d", g);
            if (pp_probe_cache_get(cache, s->gpu, mk)) continue;
            call_nccl(call, g);
            return true;
        }
        s->stage = STAGE_OPTIMIZER;
    }
    if (s->stage == STAGE_OPTIMIZER) {
        /* the optimizer step: one sweep per GPU, cached */
        s->stage = STAGE_PARTS;
        s->i = 0;
        if (!pl->offloaded && !s->opt_failed && !s->out_of_budget &&
            !pp_probe_cache_get(cache, s->gpu, "optimizer sweep")) {
            call_optimizer(call);
            return true;
        }
    }
    if (s->stage == STAGE_PARTS) {
        if (s->pending) {
            take_part(s, cache, s->i++);
            s->pending = false;
        }
        for (; s->i < PP_PROBE_PARTS; s->i++) {
            const int p = s->i;
            if (!pl->need[p]) continue;
            const char *key = pl->key[p];
            if (!pp_probe_cache_get(cache, s->gpu, key) && !s->out_of_budget && !failed_key(s, key)) {
                part_call(s, cache, p, call);
                s->pending = true;
                return true;
            }
            take_part(s, cache, p);
        }
        finish(s);
        s->stage = STAGE_DONE;
    }
    return false;
}

void pp_probe_session_failed(pp_probe_session *s, const pp_probe_call *call)
{
    if (call->kind == PP_PROBE_CALL_NCCL) {
        char note[96];
        snprintf(note, sizeof note, "collectives over %d GPUs (the probe failed)", call->ranks);
        append(s->out->modelled, sizeof s->out->modelled, note);
    } else if (call->kind == PP_PROBE_CALL_OPTIMIZER) {
        s->opt_failed = true;
    } else {
        for (int t = 0; t < call->n; t++) fail_key(s, call->keys[t], false);
    }
}

/* ------------------------------------------------------------------ reading a call's profile */

static pp_status put(pp_probe_session *s, pp_probe_cache *cache, const char *key, double a, double b, const char *note,
                     pp_error *err)
{
    pp_probe_cache_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.gpu, sizeof e.gpu, "%s", s->gpu);
    snprintf(e.key, sizeof e.key, "%s", key);
    e.a = a;
    e.b = b;
    snprintf(e.note, sizeof e.note, "%s", note);
    return pp_probe_cache_put(cache, &e, err);
}

/* The sizes the probe reported out of GPU memory (its `oom` records, found by their `what`):
 * not asked again in this plan, and a warning each. */
static void ooms_of(pp_probe_session *s, const pp_probe_call *c, const pp_profile *p, const char *text,
                    pp_probe_warnings *warn)
{
    const pp_work *w = s->w;
    const pp_model *m = &w->model;
    const char *dev = p->gpu[0] ? p->gpu : "this GPU";
    for (int t = 0; text && t < c->n && s->n_failed < PP_PROBE_FAILED; t++) {
        char what[240], key[PP_PROBE_KEY];
        if (c->kind == PP_PROBE_CALL_LAYER) {
            snprintf(what, sizeof what, "what: \"hidden=%lld heads=%lld seq=%lld mbs=%lld tp=%lld ", (long long)m->hidden,
                     (long long)m->heads, (long long)m->seq, (long long)c->mbs, (long long)c->values[t]);
        } else if (c->kind == PP_PROBE_CALL_MLA) {
            const pp_probe_mla_shape *sh = &c->mla;
            snprintf(what, sizeof what,
                     "what: \"hidden=%lld heads=%lld q_lora=%lld kv_lora=%lld seq=%lld mbs=%lld tp=%lld\"",
                     (long long)sh->hidden, (long long)sh->heads, (long long)sh->q_lora_rank,
                     (long long)sh->kv_lora_rank, (long long)sh->seq, (long long)sh->mbs, (long long)c->values[t]);
        } else {
            const pp_probe_moe_shape *sh = &c->moe;
            snprintf(what, sizeof what,
                     "what: \"hidden=%lld experts=%lld topk=%lld moe_ffn=%lld shared_ffn=%lld tokens=%lld "
                     "ep=%lld %s\"",
                     (long long)sh->hidden, (long long)sh->experts, (long long)sh->topk, (long long)sh->moe_ffn,
                     (long long)sh->shared_ffn, (long long)c->values[t], (long long)sh->ep,
                     sh->grouped ? "grouped" : "loop");
        }
        if (!strstr(text, what)) continue;
        char *line = warn->n < PP_PROBE_CALL_BATCH ? warn->line[warn->n++] : NULL;
        const size_t ln = sizeof warn->line[0];
        if (c->kind == PP_PROBE_CALL_LAYER) {
            pp_layout lt;
            pp_layout_init(&lt);
            lt.tp = c->values[t];
            lt.mbs = c->mbs;
            pp_probe_cache_layer_key_ffn(w, &lt, c->ffn, key, sizeof key);
            if (line)
                snprintf(line, ln, "the layer%s at tp %lld, mbs %lld ran out of GPU memory on %s in the probe: "
                                   "those candidates keep the model's figures",
                         c->ffn > 0 ? "" : " without its MLP", (long long)c->values[t], (long long)c->mbs, dev);
        } else if (c->kind == PP_PROBE_CALL_MLA) {
            pp_probe_mla_shape st = c->mla;
            st.tp = c->values[t];
            pp_probe_cache_mla_key(w, &st, key, sizeof key);
            if (line)
                snprintf(line, ln, "the MLA block at tp %lld, mbs %lld ran out of GPU memory on %s in the probe: "
                                   "those candidates keep the model's figures",
                         (long long)c->values[t], (long long)c->mla.mbs, dev);
        } else {
            pp_probe_moe_shape st = c->moe;
            st.tokens = c->values[t];
            pp_probe_cache_moe_key(&st, key, sizeof key);
            if (line)
                snprintf(line, ln, "the MoE MLP at %lld tokens per rank ran out of GPU memory on %s in the probe: "
                                   "those candidates keep the model's figures",
                         (long long)c->values[t], dev);
        }
        fail_key(s, key, true);
    }
}

static pp_status absorb_layers(pp_probe_session *s, const pp_probe_call *c, const pp_profile *p, const char *text,
                               pp_probe_cache *cache, pp_error *err)
{
    const pp_work *w = s->w;
    const pp_model *m = &w->model;
    /* which attention the probe's layer ran: flash unless it noted that cuDNN had none */
    const char *attn = w->attention == PP_ATTN_UNFUSED ? "unfused" : "flash";
    if (text && strstr(text, "flash attention unavailable")) attn = "unfused";
    for (int i = 0; i < p->n_layer; i++) {
        const pp_prof_layer *r = &p->layer[i];
        if (r->hidden != m->hidden || r->heads != m->heads || r->seq != m->seq || r->mbs != c->mbs ||
            r->no_mlp != (c->ffn <= 0))
            continue;
        pp_layout l;
        pp_layout_init(&l);
        l.tp = r->tp;
        l.mbs = c->mbs;
        char key[PP_PROBE_KEY];
        pp_probe_cache_layer_key_ffn(w, &l, c->ffn, key, sizeof key);
        pp_status st = put(s, cache, key, r->fwd_ms, r->fwdbwd_ms, attn, err);
        if (st) return st;
    }
    return PP_OK;
}

static pp_status absorb_mla(pp_probe_session *s, const pp_probe_call *c, const pp_profile *p, pp_probe_cache *cache,
                            pp_error *err)
{
    const pp_probe_mla_shape *sh = &c->mla;
    for (int i = 0; i < p->n_mla; i++) {
        const pp_prof_mla *r = &p->mla[i];
        if (r->hidden != sh->hidden || r->heads != sh->heads || r->q_lora_rank != sh->q_lora_rank ||
            r->kv_lora_rank != sh->kv_lora_rank || r->seq != sh->seq || r->mbs != sh->mbs)
            continue;
        pp_probe_mla_shape st = *sh;
        st.tp = r->tp;
        char key[PP_PROBE_KEY];
        pp_probe_cache_mla_key(s->w, &st, key, sizeof key);
        pp_status rc = put(s, cache, key, r->fwd_ms, r->fwdbwd_ms, r->flash ? "flash" : "unfused", err);
        if (rc) return rc;
    }
    return PP_OK;
}

/* Cached per token count: the layer, and its routed experts' own parts (fc1, activation, fc2; the
 * whole layer when the probe could not time its parts) for the host's pace. */
static pp_status absorb_moe(pp_probe_session *s, const pp_probe_call *c, const pp_profile *p, pp_probe_cache *cache,
                            pp_error *err)
{
    const pp_probe_moe_shape *sh = &c->moe;
    const char *impl = sh->grouped ? "grouped" : "loop";
    for (int i = 0; i < p->n_moe; i++) {
        const pp_prof_moe *r = &p->moe[i];
        if (r->hidden != sh->hidden || r->experts != sh->experts || r->topk != sh->topk || r->moe_ffn != sh->moe_ffn ||
            r->shared_ffn != sh->shared_ffn || r->ep != sh->ep || r->grouped != (int)sh->grouped)
            continue;
        pp_probe_moe_shape st = *sh;
        st.tokens = r->tokens;
        char key[PP_PROBE_KEY];
        pp_probe_cache_moe_key(&st, key, sizeof key);
        pp_status rc = put(s, cache, key, r->fwd_ms, r->fwdbwd_ms, impl, err);
        if (rc) return rc;
        /* the experts' parts: each part's own median (probes/NOTES.md), capped by the whole */
        double ef = r->fwd_parts_ms[2] + r->fwd_parts_ms[3] + r->fwd_parts_ms[4];
        double eb = r->bwd_parts_ms[2] + r->bwd_parts_ms[3] + r->bwd_parts_ms[4];
        double bwd = r->fwdbwd_ms - r->fwd_ms > 0 ? r->fwdbwd_ms - r->fwd_ms : 0;
        size_t kl = strlen(key);
        snprintf(key + kl, sizeof key - kl, " experts");
        if ((rc = put(s, cache, key, ef > 0 && ef < r->fwd_ms ? ef : r->fwd_ms, eb > 0 && eb < bwd ? eb : bwd, impl,
                      err)))
            return rc;
    }
    return PP_OK;
}

static pp_status absorb_nccl(pp_probe_session *s, const pp_probe_call *c, const pp_profile *p, pp_probe_cache *cache,
                             pp_error *err)
{
    char key[PP_PROBE_KEY];
    for (int i = 0; i < p->n_nccl; i++) {
        const pp_prof_nccl *r = &p->nccl[i];
        snprintf(key, sizeof key, "nccl %s n%lld b%.0f", pp_coll_names[r->op], (long long)r->ranks, r->bytes);
        pp_status st = put(s, cache, key, r->busbw_gbs, 0, "", err);
        if (st) return st;
    }
    /* the sweep of this size is complete (even if NCCL measured nothing usable) */
    snprintf(key, sizeof key, "nccl n%d", c->ranks);
    return put(s, cache, key, p->n_nccl, 0, "", err);
}

static pp_status absorb_optimizer(pp_probe_session *s, const pp_profile *p, pp_probe_cache *cache, pp_error *err)
{
    char key[PP_PROBE_KEY];
    for (int i = 0; i < p->n_optimizer; i++) {
        snprintf(key, sizeof key, "optimizer p%.0f", p->optimizer[i].params);
        pp_status st = put(s, cache, key, p->optimizer[i].ms, p->optimizer[i].bytes_per_param, "", err);
        if (st) return st;
    }
    return put(s, cache, "optimizer sweep", p->n_optimizer, 0, "", err);
}

pp_status pp_probe_session_absorb(pp_probe_session *s, const pp_probe_call *call, const pp_profile *p,
                                  const char *text, pp_probe_cache *cache, pp_probe_warnings *warn, pp_error *err)
{
    warn->n = 0;
    switch (call->kind) {
    case PP_PROBE_CALL_NCCL: return absorb_nccl(s, call, p, cache, err);
    case PP_PROBE_CALL_OPTIMIZER: return absorb_optimizer(s, p, cache, err);
    case PP_PROBE_CALL_LAYER: ooms_of(s, call, p, text, warn); return absorb_layers(s, call, p, text, cache, err);
    case PP_PROBE_CALL_MLA: ooms_of(s, call, p, text, warn); return absorb_mla(s, call, p, cache, err);
    case PP_PROBE_CALL_MOE: ooms_of(s, call, p, text, warn); return absorb_moe(s, call, p, cache, err);
    }
    return PP_OK;
}

/* ------------------------------------------------------------------ composing */

pp_status pp_probe_profile_make(const pp_probe_cache *cache, const char *gpu, const pp_profile *base,
                                pp_probe_profile *out, pp_error *err)
{
    memset(out, 0, sizeof *out);
    if (base) out->p = *base;
    int nb = base ? base->n_nccl : 0;
    pp_prof_nccl *arr = calloc((size_t)(cache->n + nb + 1), sizeof *arr);
    if (!arr) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    int n = 0;
    for (int i = 0; i < cache->n; i++) {
        const pp_probe_cache_entry *e = &cache->e[i];
        char op[32];
        long long ranks;
        double bytes;
        if (strcmp(e->gpu, gpu) || sscanf(e->key, "nccl %31s n%lld b%lf", op, &ranks, &bytes) != 3) continue;
        int o = pp_name_lookup(pp_coll_names, PP_COLL_COUNT, op);
        if (o < 0 || !(e->a > 0)) continue;
        arr[n++] = (pp_prof_nccl){(pp_coll)o, ranks, bytes, e->a};
    }
    int measured = n;
    for (int i = 0; i < nb; i++) {
        bool have = false;
        for (int j = 0; j < measured; j++) have |= arr[j].op == base->nccl[i].op && arr[j].ranks == base->nccl[i].ranks;
        if (!have) arr[n++] = base->nccl[i];
    }
    out->p.nccl = out->nccl = arr;
    out->p.n_nccl = n;
    /* the measured optimizer steps (only these: the base profile's would describe another run) */
    out->p.optimizer = NULL;
    out->p.n_optimizer = 0;
    pp_status st = pp_probe_cache_optimizer_rows(cache, gpu, &out->optimizer, &out->p.n_optimizer, err);
    out->p.optimizer = out->optimizer;
    return st;
}

void pp_probe_profile_free(pp_probe_profile *p)
{
    if (!p) return;
    free(p->nccl);
    free(p->optimizer);
    memset(p, 0, sizeof *p);
}

/* The probe's layer (`parplan-probe layer`) runs fused kernels as TransformerEngine does: cuBLASLt
 * GEMMs, flash attention, one kernel per norm, activation and RoPE. torchtitan's eager block
 * (--framework fsdp) makes more passes over memory than that (RoPE in fp32 complex numbers,
 * repeat_kv's copies, SiLU and the product apart: layer.c's titan variant). So the probe says how
 * fast this GPU runs that reference layer, and the model says how much longer the stack's own
 * layer takes than the reference on the same GPU: the stack's layer is the measurement times the
 * model's ratio of the two. Without it plan --probe put every FSDP2 candidate 15-26% fast on
 * 4 x H100 (tests/data/node4/h100/fsdp_probe). Returns false where there is no such ratio. */
static bool stack_layer_ratio(const pp_work *w, const pp_layout *l, double *fwd_ratio, double *fwdbwd_ratio)
{
    pp_work ref = *w, own = *w;
    ref.profile = own.profile = NULL; /* one set of rates for both: only their ratio is read */
    ref.framework = PP_FW_MEGATRON;
    ref.attention = PP_ATTN_FLASH;
    ref.stack.impl = PP_IMPL_TE;
    ref.stack.impl_given = true;
    ref.stack.compile = ref.stack.tp_comm_overlap = false;
    ref.stack.act_unfused = false;
    pp_time_ctx cr, co;
    pp_time_ctx_init(&cr, &ref, NULL);
    pp_time_ctx_init(&co, &own, NULL);
    pp_time_layer lr, lo;
    pp_time_layer_get(&cr, l, &lr);
    pp_time_layer_get(&co, l, &lo);
    if (!(lr.fwd_compute_s > 0) || !(lr.fwd_compute_s + lr.bwd_compute_s > 0)) return false;
    *fwd_ratio = lo.fwd_compute_s / lr.fwd_compute_s;
    *fwdbwd_ratio = (lo.fwd_compute_s + lo.bwd_compute_s) / (lr.fwd_compute_s + lr.bwd_compute_s);
    return isfinite(*fwd_ratio) && isfinite(*fwdbwd_ratio) && *fwd_ratio > 0 && *fwdbwd_ratio > 0;
}

bool pp_probe_compose(const pp_work *w, const pp_profile *prof, const pp_layout *l, const pp_probe_plan *plan,
                      pp_probe_outcome *in, pp_time_result *t)
{
    if (!in->probed) return false;
    /* The software stack's own costs, which a CUDA probe does not run (kernel launches, Python
     * dispatch, an unfused attention's separate kernels), come from the profile's calibration
     * fitted on top of measured layers (`calibrate --probe-cache`: probe_calibration), else from
     * its calibration of the model (whose GEMM and elementwise factors also absorbed the model's
     * own errors: about +5% on the H200 logs of tests/data/calibrate/probe). */
    const pp_calibration *cal = prof->probe_calibration.present ? &prof->probe_calibration
                                : prof->calibration.present     ? &prof->calibration
                                                                : NULL;
    /* The host's pace of looped experts (moe_layer_overhead_s, expert_overhead_s) is Python issuing
     * kernels, which the probe (issuing from C) never sees; a probe calibration fitted on dense
     * layers has none, so the model calibration's figures are taken, as fitted on the stack's MoE
     * logs. Without them plan --probe put tests/data/calibrate/probe-moe's ten one-H200 Megatron
     * runs 15-72% fast. */
    pp_calibration cal_moe;
    bool moe_from_model = false;
    if (cal == &prof->probe_calibration && prof->calibration.present && !(cal->moe_layer_overhead_s > 0) &&
        !(cal->expert_overhead_s > 0) &&
        (prof->calibration.moe_layer_overhead_s > 0 || prof->calibration.expert_overhead_s > 0)) {
        cal_moe = *cal;
        cal_moe.moe_layer_overhead_s = prof->calibration.moe_layer_overhead_s;
        cal_moe.expert_overhead_s = prof->calibration.expert_overhead_s;
        moe_from_model = true;
    }
    pp_work wp = *w;
    wp.profile = prof;
    pp_time_opts o;
    pp_time_opts_default(&wp, &o);
    double fwd[PP_LAYER_KINDS] = {0}, fwdbwd[PP_LAYER_KINDS] = {0};
    if (!in->composed) {
        fwd[plan->kind_main] = in->layer_fwd_ms * 1e-3;
        fwdbwd[plan->kind_main] = in->layer_fwdbwd_ms * 1e-3;
        double rf, rfb;
        if (w->framework == PP_FW_FSDP && stack_layer_ratio(w, l, &rf, &rfb)) {
            fwd[plan->kind_main] *= rf;
            fwdbwd[plan->kind_main] *= rfb;
            char note[128];
            snprintf(note, sizeof note, "torchtitan's block against the probe's fused layer (x%.2f forward, x%.2f "
                     "forward+backward)", rf, rfb);
            append(in->modelled, sizeof in->modelled, note);
        }
    } else {
        /* MoE / MLA: the measured parts in place of the model's (pp_time_layer_compose), for the
         * main kind and for the dense layers of the same attention span */
        pp_layer_measured mm;
        memset(&mm, 0, sizeof mm);
        if (in->attn_mla) mm.mla_fwd_s = in->attn_fwd_ms * 1e-3, mm.mla_fwdbwd_s = in->attn_fwdbwd_ms * 1e-3;
        else mm.attn_fwd_s = in->attn_fwd_ms * 1e-3, mm.attn_fwdbwd_s = in->attn_fwdbwd_ms * 1e-3;
        pp_layer_measured md = mm;
        mm.moe_fwd_s = in->moe_fwd_ms * 1e-3;
        mm.moe_fwdbwd_s = in->moe_fwdbwd_ms * 1e-3;
        mm.expert_fwd_s = in->expert_fwd_ms * 1e-3;
        mm.expert_bwd_s = in->expert_bwd_ms * 1e-3;
        mm.moe_shared = in->moe_shared;
        pp_layer_composed lc;
        pp_time_layer_compose(&wp, l, &o, moe_from_model ? &cal_moe : cal, plan->kind_main, &mm, &lc);
        if (lc.measured) {
            fwd[plan->kind_main] = lc.fwd_s;
            fwdbwd[plan->kind_main] = lc.fwdbwd_s;
        }
        in->layer_fwd_ms = lc.fwd_s * 1e3;
        in->layer_fwdbwd_ms = lc.fwdbwd_s * 1e3;
        in->rest_fwd_ms = lc.modelled_fwd_s * 1e3;
        in->rest_bwd_ms = lc.modelled_bwd_s * 1e3;
        in->host_fwd_ms = lc.host_fwd_s * 1e3;
        in->host_bwd_ms = lc.host_bwd_s * 1e3;
        if (lc.host_fwd_s + lc.host_bwd_s > 0)
            append(in->modelled, sizeof in->modelled,
                   moe_from_model ? "the host's pace of the looped experts (the model's calibration)"
                                  : "the host's pace of the looped experts (calibration)");
        if (plan->kind_dense >= 0) {
            md.layer_fwd_s = in->dense_fwd_ms * 1e-3;
            md.layer_fwdbwd_s = in->dense_fwdbwd_ms * 1e-3;
            pp_time_layer_compose(&wp, l, &o, cal, plan->kind_dense, &md, &lc);
            if (lc.measured) {
                fwd[plan->kind_dense] = lc.fwd_s;
                fwdbwd[plan->kind_dense] = lc.fwdbwd_s;
            } else {
                append(in->modelled, sizeof in->modelled, "dense layers (the MoE layer's measured/modelled ratio)");
            }
        }
        if (!(fwdbwd[plan->kind_main] > 0)) {
            /* no part of the main layer was measured: it keeps the model's figures */
            in->probed = false;
            return false;
        }
    }
    pp_time_result r;
    pp_time_measured mi;
    pp_time_step_measured_kinds(&wp, l, &o, cal, fwd, fwdbwd, &r, &mi);
    if (!isfinite(r.step_time_s) || r.step_time_s <= 0) {
        in->probed = false;
        append(in->modelled, sizeof in->modelled, "step (the measured figures gave no finite time)");
        return false;
    }
    in->stack_layer_fwd_ms = mi.stack_fwd_s * 1e3;
    in->stack_layer_bwd_ms = mi.stack_bwd_s * 1e3;
    in->optimizer_ms = mi.optimizer_meas_s * 1e3;
    *t = r;
    if (!(mi.optimizer_meas_s > 0)) append(in->modelled, sizeof in->modelled, "optimizer");
    append(in->modelled, sizeof in->modelled, "embedding and output layer");
    if (cal)
        append(in->modelled, sizeof in->modelled,
               cal == &prof->probe_calibration
                   ? "the stack's per-layer overhead and optimizer scale (probe calibration)"
                   : "the stack's per-layer overhead and optimizer scale (the model's calibration)");
    if (in->attention[0] && strcmp(in->attention, pp_attention_names[w->attention])) {
        char note[96];
        snprintf(note, sizeof note, "the probe's layer ran %s attention, the work asks %s", in->attention,
                 pp_attention_names[w->attention]);
        append(in->modelled, sizeof in->modelled, note);
    }
    return true;
}
