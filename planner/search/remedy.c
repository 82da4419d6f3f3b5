/* Remedies (pp_remedy.h): the layouts nearest to one that does not fit which do, on the same GPUs.
 * Every combination of up to max_changes knobs is tried, each knob over the values the search
 * itself would try (powers of two inside their bounds), the rest of the layout kept; a candidate
 * is kept when it validates and its fullest stage's peak + reserve fits the GPU (the verdict check
 * prints). No allocation: the best max_out live in a small sorted array. */
#include "pp_pipeline.h"
#include "pp_remedy.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pp_memory.h"
#include "pp_time.h"

const char *const pp_knob_names[PP_KNOB_COUNT] = {"tp", "pp", "vpp", "cp", "ep", "mbs", "recompute",
                                                  "sharding", "offload", "act_offload", "seq"};

void pp_remedy_opts_init(pp_remedy_opts *o)
{
    o->max_changes = 3;
    o->max_out = 5;
    o->allow_seq = false;
}

#define MAXV 12 /* values of one knob */

typedef struct {
    const pp_work *w;
    const pp_layout *l;
    const pp_remedy_opts *o;
    int64_t vals[PP_KNOB_COUNT][MAXV];
    int nv[PP_KNOB_COUNT];
    pp_remedy *out;
    int n;
    pp_work wseq; /* the work at a shorter sequence (PP_KNOB_SEQ) or another --cpu-offload-layers */
} rm_ctx;

/* Sharding as one value: Megatron's distributed optimizer (0/1) or the ZeRO stage. */
static bool megatron_dist_opt(const pp_work *w) { return w->framework == PP_FW_MEGATRON && !w->stack.megatron_fsdp; }
static int64_t sharding_of(const pp_work *w, const pp_layout *l)
{
    return megatron_dist_opt(w) ? (l->dist_opt ? 1 : 0) : l->zero;
}

/* The values each knob may take other than the layout's own. */
static void knob_values(rm_ctx *c)
{
    const pp_work *w = c->w;
    const pp_layout *l = c->l;
    const pp_model *m = &w->model;
    const int64_t gpn = w->gpus_per_node > 0 ? w->gpus_per_node : 1;
#define ADD(k, v) (c->nv[k] < MAXV ? (void)(c->vals[k][c->nv[k]++] = (v)) : (void)0)
    for (int64_t t = 1; t <= gpn && t <= m->heads && t <= w->gpus; t *= 2)
        if (t != l->tp) ADD(PP_KNOB_TP, t);
    for (int64_t p = 1; p <= m->layers && p <= w->gpus && p <= 128; p *= 2)
        if (p != l->pp) ADD(PP_KNOB_PP, p);
    for (int64_t v = 1; v <= 8; v *= 2)
        if (v != l->vpp) ADD(PP_KNOB_VPP, v);
    if (w->attention == PP_ATTN_FLASH)
        for (int64_t x = 1; x <= 16 && x <= w->gpus; x *= 2)
            if (x != l->cp) ADD(PP_KNOB_CP, x);
    if (pp_model_is_moe(m))
        for (int64_t e = 1; e <= m->experts && e <= w->gpus; e *= 2)
            if (e != l->ep) ADD(PP_KNOB_EP, e);
    for (int64_t b = l->mbs / 2; b >= 1; b /= 2) ADD(PP_KNOB_MBS, b);
    for (int r = 0; r < PP_RC_COUNT; r++)
        if (r != (int)l->recompute || l->recompute_layers || l->recompute_modules) ADD(PP_KNOB_RECOMPUTE, r);
    int64_t sh = sharding_of(w, l), shmax = megatron_dist_opt(w) ? 1 : 3;
    for (int64_t s = 0; s <= shmax; s++)
        if (s != sh) ADD(PP_KNOB_SHARDING, s);
    /* offload as each framework runs it: Megatron the optimizer (--optimizer-cpu-offload; not the
     * parameters), DeepSpeed either, FSDP2 all of it (CPUOffloadPolicy: one switch) */
    for (int f = 0; f < PP_OFF_COUNT; f++) {
        if (f == (int)l->offload) continue;
        if (f == PP_OFF_PARAMS && w->framework == PP_FW_MEGATRON) continue;
        if (f == PP_OFF_OPTIMIZER && w->framework == PP_FW_FSDP) continue;
        ADD(PP_KNOB_OFFLOAD, f);
    }
    /* Megatron's activation offloading (--cpu-offload-layers; pp 1 and no recompute, which the
     * layout's check asks for): a quarter, half or three quarters of the layers, as Megatron-Bridge's
     * performance configs offload 20-40 of Llama 3 70B's 80 (llama3_workload_base_configs.py), where
     * the stack takes it (pp_stack_check: Megatron, no per-layer CUDA graphs) */
    pp_work wo = *w;
    for (int64_t q = 1; q <= 3; q++) {
        wo.stack.cpu_offload_layers = q * m->layers / 4;
        pp_error e;
        if (wo.stack.cpu_offload_layers > 0 && wo.stack.cpu_offload_layers != w->stack.cpu_offload_layers &&
            pp_stack_check(&wo, &e) == PP_OK)
            ADD(PP_KNOB_ACT_OFFLOAD, wo.stack.cpu_offload_layers);
    }
    if (c->o->allow_seq)
        for (int64_t s = m->seq / 2; s >= 512 && s >= m->seq / 16; s /= 2) ADD(PP_KNOB_SEQ, s);
#undef ADD
}

static void knob_set(const rm_ctx *c, pp_layout *v, int k, int64_t x)
{
    switch ((pp_knob)k) {
    case PP_KNOB_TP: v->tp = x; break;
    case PP_KNOB_PP: v->pp = x; break;
    case PP_KNOB_VPP: v->vpp = x; break;
    case PP_KNOB_CP: v->cp = x; break;
    case PP_KNOB_EP: v->ep = x; break;
    case PP_KNOB_MBS: v->mbs = x; break;
    case PP_KNOB_RECOMPUTE:
        v->recompute = (pp_recompute)x;
        v->recompute_layers = 0;
        v->recompute_modules = 0;
        break;
    case PP_KNOB_SHARDING:
        if (megatron_dist_opt(c->w)) v->dist_opt = x != 0;
        else v->zero = (int)x;
        break;
    case PP_KNOB_OFFLOAD:
        v->offload = (pp_offload)x;
        /* Megatron offloads the distributed optimizer's state (--optimizer-cpu-offload needs it) */
        if (x == PP_OFF_OPTIMIZER && megatron_dist_opt(c->w)) v->dist_opt = true;
        break;
    default: break;
    }
}

static bool same_layout(const pp_layout *a, const pp_layout *b)
{
    return a->tp == b->tp && a->pp == b->pp && a->dp == b->dp && a->vpp == b->vpp && a->cp == b->cp &&
           a->ep == b->ep && a->mbs == b->mbs && a->zero == b->zero && a->dist_opt == b->dist_opt &&
           a->sp == b->sp && a->recompute == b->recompute && a->recompute_layers == b->recompute_layers &&
           a->recompute_modules == b->recompute_modules && a->offload == b->offload;
}

/* a before b: fewer changes, then faster, then more headroom */
static bool better(const pp_remedy *a, const pp_remedy *b)
{
    if (a->n_changed != b->n_changed) return a->n_changed < b->n_changed;
    if (a->step_time_s != b->step_time_s) return a->step_time_s < b->step_time_s;
    return a->need_bytes < b->need_bytes;
}

static void keep(rm_ctx *c, const pp_remedy *r)
{
    for (int i = 0; i < c->n; i++)
        if (c->out[i].seq == r->seq && c->out[i].cpu_offload_layers == r->cpu_offload_layers &&
            same_layout(&c->out[i].layout, &r->layout)) {
            if (better(r, &c->out[i])) c->out[i] = *r;
            return;
        }
    int cap = c->o->max_out;
    if (c->n == cap && !better(r, &c->out[cap - 1])) return;
    int i = c->n < cap ? c->n++ : cap - 1;
    while (i > 0 && better(r, &c->out[i - 1])) {
        c->out[i] = c->out[i - 1];
        i--;
    }
    c->out[i] = *r;
}

/* A candidate: validate (with sequence parallelism where TP > 1 and it validates), price its
 * memory, and keep it when it fits. */
static void try_layout(rm_ctx *c, pp_layout v, unsigned changed, int n_changed, int64_t seq, int64_t off)
{
    const pp_work *w = c->w;
    if (seq != w->model.seq || off != w->stack.cpu_offload_layers) {
        c->wseq = *w;
        c->wseq.model.seq = seq;
        c->wseq.stack.cpu_offload_layers = off;
        w = &c->wseq;
    }
    v.dp = 0;
    v.stage_layers = v.stage_recompute = NULL;
    if (v.pp != c->l->pp || v.vpp != c->l->vpp) v.vstage_layers = NULL;
    if (v.pp == 1) v.vpp = 1;
    for (int pass = 0; pass < 2; pass++) {
        pp_layout x = v;
        /* TP changed: sequence parallelism with it first (what Megatron users run with TP) */
        if (changed & (1u << PP_KNOB_TP)) x.sp = pass == 0 && x.tp > 1;
        else if (pass) break;
        pp_error e;
        if (pp_layout_validate(w, &x, &e) != PP_OK) continue;
        /* a change that changes nothing is not a remedy: sharding over one data-parallel rank,
         * virtual stages of one pipeline stage */
        if ((changed & (1u << PP_KNOB_SHARDING)) && x.dp * x.cp <= 1) return;
        if ((changed & (1u << PP_KNOB_VPP)) && x.pp <= 1) return;
        double need = pp_memory_worst_bytes(w, &x, NULL);
        if (!(need <= w->gpu.memory_bytes)) continue;
        pp_time_result t;
        if (pp_time_estimate(w, &x, &t, &e) != PP_OK || !isfinite(t.step_time_s)) continue;
        pp_remedy r = {x, seq, off, changed, n_changed, need, t.step_time_s};
        keep(c, &r);
        return;
    }
}

/* Knobs from k on, with `left` changes still allowed. */
static void walk(rm_ctx *c, pp_layout v, int k, int left, unsigned changed, int n_changed, int64_t seq, int64_t off)
{
    if (k == PP_KNOB_COUNT) {
        if (n_changed > 0) try_layout(c, v, changed, n_changed, seq, off);
        return;
    }
    walk(c, v, k + 1, left, changed, n_changed, seq, off); /* this knob as it is */
    if (!left) return;
    for (int i = 0; i < c->nv[k]; i++) {
        pp_layout x = v;
        int64_t s = seq, o = off;
        if (k == PP_KNOB_SEQ) s = c->vals[k][i];
        else if (k == PP_KNOB_ACT_OFFLOAD) o = c->vals[k][i];
        else knob_set(c, &x, k, c->vals[k][i]);
        walk(c, x, k + 1, left - 1, changed | (1u << k), n_changed + 1, s, o);
    }
}

int pp_remedies_find(const pp_work *w, const pp_layout *l, const pp_remedy_opts *o, pp_remedy *out)
{
    pp_remedy_opts def;
    if (!o) {
        pp_remedy_opts_init(&def);
        o = &def;
    }
    rm_ctx c;
    memset(&c, 0, sizeof c);
    pp_remedy_opts oo = *o;
    if (oo.max_out < 1) oo.max_out = 1;
    if (oo.max_out > PP_REMEDY_MAX) oo.max_out = PP_REMEDY_MAX;
    if (oo.max_changes < 1) oo.max_changes = 1;
    if (oo.max_changes > 3) oo.max_changes = 3;
    c.w = w, c.l = l, c.o = &oo, c.out = out;
    knob_values(&c);
    /* fewest changes first: a remedy of one change is never crowded out by two-change ones */
    const int64_t off = w->stack.cpu_offload_layers;
    for (int k = 1; k <= oo.max_changes && c.n == 0; k++) walk(&c, *l, 0, k, 0, 0, w->model.seq, off);
    /* then the next size too, for choice, while room is left */
    if (c.n > 0 && c.n < oo.max_out && c.out[0].n_changed < oo.max_changes)
        walk(&c, *l, 0, c.out[0].n_changed + 1, 0, 0, w->model.seq, off);
    return c.n;
}

void pp_remedy_layout_args(const pp_work *w, const pp_remedy *r, char *buf, size_t n)
{
    pp_layout_args(w, &r->layout, buf, n);
    size_t k = strlen(buf);
    if (r->seq != w->model.seq && k < n) k += (size_t)snprintf(buf + k, n - k, " --seq %lld", (long long)r->seq);
    if (r->cpu_offload_layers != w->stack.cpu_offload_layers && k < n)
        snprintf(buf + k, n - k, " --cpu-offload-layers %lld", (long long)r->cpu_offload_layers);
}

void pp_layout_args(const pp_work *w, const pp_layout *l, char *buf, size_t n)
{
    size_t k = 0;
#define PUT(...) (k += (size_t)snprintf(buf + (k < n ? k : n), k < n ? n - k : 0, __VA_ARGS__))
    PUT("--tp %lld --pp %lld --dp %lld --vpp %lld --cp %lld", (long long)l->tp, (long long)l->pp, (long long)l->dp,
        (long long)l->vpp, (long long)l->cp);
    if (pp_model_is_moe(&w->model)) {
        PUT(" --ep %lld", (long long)l->ep);
        if (l->etp) PUT(" --etp %lld", (long long)l->etp);
    }
    PUT(" --mbs %lld", (long long)l->mbs);
    if (l->dist_opt) PUT(" --dist-opt");
    if (l->zero) PUT(" --zero %d", l->zero);
    PUT(" %s", l->sp ? "--sp" : "--no-sp");
    PUT(" --recompute %s", pp_recompute_names[l->recompute]);
    if (l->recompute_layers) PUT(" --recompute-layers %lld", (long long)l->recompute_layers);
    if (l->recompute_modules) {
        PUT(" --recompute-modules ");
        int first = 1;
        for (int i = 0; i < PP_RCM_COUNT; i++)
            if (l->recompute_modules & (1u << i)) PUT("%s%s", first ? "" : ",", pp_rc_module_names[i]), first = 0;
    }
    if (l->offload) PUT(" --offload %s", pp_offload_names[l->offload]);
    if (l->replicate > 1) PUT(" --replicate %lld", (long long)l->replicate);
    /* a split of its own (plan's stage MILP, a given one): Megatron's layout string, quoted for
     * the shell ('|'), and the one count of fully recomputed layers every stage has */
    if (l->pp > 1 && (l->stage_layers || l->vstage_layers)) {
        char lay[1024];
        pp_error le = {0};
        if (pp_pipeline_layout_format(w, l, lay, sizeof lay, &le) == PP_OK) PUT(" --pipeline-layout '%s'", lay);
    }
    if (l->recompute == PP_RC_FULL && !l->recompute_layers && l->stage_layers && l->stage_recompute) {
        bool same = true, partial = false;
        for (int64_t i = 0; i < l->pp; i++) {
            same &= l->stage_recompute[i] == l->stage_recompute[0];
            partial |= l->stage_recompute[i] < l->stage_layers[i];
        }
        if (same && partial) PUT(" --recompute-layers %d", l->stage_recompute[0]);
    }
#undef PUT
}

void pp_remedy_changes(const pp_work *w, const pp_remedy *r, char *buf, size_t n)
{
    const pp_layout *l = &r->layout;
    size_t k = 0;
    buf[0] = 0;
#define PUT(...) (k += (size_t)snprintf(buf + (k < n ? k : n), k < n ? n - k : 0, __VA_ARGS__))
    for (int i = 0; i < PP_KNOB_COUNT; i++) {
        if (!(r->changed & (1u << i))) continue;
        if (k) PUT(", ");
        switch ((pp_knob)i) {
        case PP_KNOB_TP: PUT("--tp %lld%s", (long long)l->tp, l->sp ? " --sp" : ""); break;
        case PP_KNOB_PP: PUT("--pp %lld", (long long)l->pp); break;
        case PP_KNOB_VPP: PUT("--vpp %lld", (long long)l->vpp); break;
        case PP_KNOB_CP: PUT("--cp %lld", (long long)l->cp); break;
        case PP_KNOB_EP: PUT("--ep %lld", (long long)l->ep); break;
        case PP_KNOB_MBS: PUT("--mbs %lld", (long long)l->mbs); break;
        case PP_KNOB_RECOMPUTE: PUT("--recompute %s", pp_recompute_names[l->recompute]); break;
        case PP_KNOB_SHARDING:
            if (megatron_dist_opt(w)) PUT("%s", l->dist_opt ? "--dist-opt" : "no --dist-opt");
            else PUT("--zero %d", l->zero);
            break;
        case PP_KNOB_OFFLOAD: PUT("--offload %s", pp_offload_names[l->offload]); break;
        case PP_KNOB_ACT_OFFLOAD: PUT("--cpu-offload-layers %lld", (long long)r->cpu_offload_layers); break;
        case PP_KNOB_SEQ: PUT("--seq %lld", (long long)r->seq); break;
        default: break;
        }
    }
#undef PUT
}
