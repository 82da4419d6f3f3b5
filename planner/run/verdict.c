/* plan's answer beyond its ranking: the rows folded into one where they differ only in VPP
 * within the model's band, and why #1 wins (which step-time terms cost each runner-up and the
 * best layout of each other shape, the headroom, FSDP2's allocator risk, the simpler layout
 * within the band). Built once here; plan's table, its JSON and its HTML report render it. */
#include "pp_run.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const pp_step_term_names[PP_TERM_COUNT] = {
    "compute", "recompute", "TP collectives", "CP exchange", "EP all-to-all", "PP send/recv",
    "pipeline bubble", "DP gradient reduction", "ZeRO-3 gathers", "optimizer step", "activation offload", "host's pace",
};

const char *const pp_step_term_keys[PP_TERM_COUNT] = {
    "compute_s", "recompute_s", "tp_comm_s", "cp_comm_s", "ep_comm_s", "pp_comm_s",
    "bubble_s", "dp_comm_s", "zero_gather_s", "optimizer_s", "offload_s", "host_s",
};

void pp_step_terms(const pp_time_result *t, double v[PP_TERM_COUNT])
{
    v[PP_TERM_COMPUTE] = t->compute_s;
    v[PP_TERM_RECOMPUTE] = t->recompute_s;
    v[PP_TERM_TP] = t->tp_comm_s;
    v[PP_TERM_CP] = t->cp_comm_s;
    v[PP_TERM_EP] = t->ep_comm_s;
    v[PP_TERM_PP] = t->pp_comm_s;
    v[PP_TERM_BUBBLE] = t->bubble_s;
    v[PP_TERM_DP] = t->dp_comm_s;
    v[PP_TERM_ZERO] = t->zero_gather_s;
    v[PP_TERM_OPT] = t->optimizer_s;
    v[PP_TERM_OFFLOAD] = t->offload_s;
    v[PP_TERM_HOST] = t->host_s;
}

/* ------------------------------------------------------------------ folded rows */

static bool same_but_vpp(const pp_layout *a, const pp_layout *b)
{
    pp_layout x = *a, y = *b;
    x.vpp = y.vpp = 1;
    x.vstage_layers = y.vstage_layers = NULL;
    char la[320], lb[320];
    return !strcmp(pp_layout_label(&x, la, sizeof la), pp_layout_label(&y, lb, sizeof lb));
}

static void fold_add(pp_plan_fold *f, int64_t vpp)
{
    if (f->n >= PP_PLAN_FOLD_MAX) return;
    int i = f->n++;
    for (; i > 0 && f->vpp[i - 1] > vpp; i--) f->vpp[i] = f->vpp[i - 1];
    f->vpp[i] = vpp;
}

void pp_plan_fold_rows(pp_search_candidate *cand, pp_search_result *r, pp_plan_fold *folds)
{
    int64_t kept = 0;
    for (int64_t i = 0; i < r->n; i++) {
        int64_t j = 0;
        for (; j < kept; j++)
            if (same_but_vpp(&cand[j].layout, &cand[i].layout) &&
                cand[i].time.step_time_s <= cand[j].time.step_time_s * (1 + PP_PLAN_TIE_FRACTION))
                break;
        if (j < kept) {
            fold_add(&folds[j], cand[i].layout.vpp);
            if (cand[i].time.step_time_s > folds[j].slowest_s) folds[j].slowest_s = cand[i].time.step_time_s;
            continue;
        }
        cand[kept] = cand[i];
        folds[kept] = (pp_plan_fold){.n = 0, .slowest_s = cand[i].time.step_time_s};
        fold_add(&folds[kept], cand[i].layout.vpp);
        kept++;
    }
    r->n = kept;
}

/* ------------------------------------------------------------------ why #1 wins */

/* "tp 4 (not 2), mbs 2 (not 4)": how b differs from a. A dense model has no expert grid: its
 * ETP follows TP and EP is 1, so neither is named for it. */
static void layout_diff(const pp_layout *a, const pp_layout *b, bool moe, char *buf, size_t n)
{
    struct { const char *name; int64_t va, vb; } d[] = {
        {"tp", a->tp, b->tp}, {"pp", a->pp, b->pp}, {"dp", a->dp, b->dp}, {"vpp", a->vpp, b->vpp},
        {"cp", a->cp, b->cp}, {"ep", a->ep, b->ep}, {"etp", pp_layout_etp(a), pp_layout_etp(b)},
        {"mbs", a->mbs, b->mbs}, {"zero", a->zero, b->zero},
    };
    size_t k = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof d / sizeof d[0] && k < n; i++)
        if (d[i].va != d[i].vb && (moe || (strcmp(d[i].name, "ep") && strcmp(d[i].name, "etp"))))
            k += (size_t)snprintf(buf + k, n - k, "%s%s %lld (not %lld)", k ? ", " : "", d[i].name,
                                  (long long)d[i].vb, (long long)d[i].va);
    if (a->dist_opt != b->dist_opt && k < n)
        k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "",
                              b->dist_opt ? "distributed optimizer" : "no distributed optimizer");
    if (a->sp != b->sp && k < n)
        k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "",
                              b->sp ? "sequence parallel" : "no sequence parallel");
    if (a->recompute != b->recompute && k < n)
        k += (size_t)snprintf(buf + k, n - k, "%srecompute %s (not %s)", k ? ", " : "",
                              pp_recompute_names[b->recompute], pp_recompute_names[a->recompute]);
    if (!k) snprintf(buf, n, "the same sizes");
}

/* The name of step-time term i for layout l: the EP all-to-all says when its group leaves the
 * node (Megatron's expert grid puts the etp ranks of an expert innermost, then the ep ranks). */
static void term_label(int i, const pp_layout *l, int64_t gpn, char *buf, size_t n)
{
    int64_t span = pp_layout_etp(l) * l->ep;
    if (i == PP_TERM_EP && gpn > 0 && span > gpn)
        snprintf(buf, n, "%s across %lld nodes", pp_step_term_names[i], (long long)(span / gpn));
    else
        snprintf(buf, n, "%s", pp_step_term_names[i]);
}

/* Why `best` beats `other`: the two terms that cost `other` the most, and the one that saves it
 * the most; a second cost and the saving are named when they exceed 5% of the difference. */
static void compare(const pp_search_candidate *best, const pp_search_candidate *other, int rank, int64_t gpn,
                    bool moe, pp_verdict_cmp *o)
{
    memset(o, 0, sizeof *o);
    o->rank = rank;
    pp_layout_label(&other->layout, o->label, sizeof o->label);
    layout_diff(&best->layout, &other->layout, moe, o->diff, sizeof o->diff);
    double v1[PP_TERM_COUNT], vk[PP_TERM_COUNT], dt = other->time.step_time_s - best->time.step_time_s;
    pp_step_terms(&best->time, v1);
    pp_step_terms(&other->time, vk);
    o->slower_s = dt;
    o->slower_frac = dt / best->time.step_time_s;
    o->save = -1;
    if (dt <= 1e-9 * best->time.step_time_s) {
        o->same_time = true;
        o->freer_bytes = best->headroom_bytes - other->headroom_bytes;
        return;
    }
    int worst1 = -1, worst2 = -1, save = -1;
    for (int i = 0; i < PP_TERM_COUNT; i++) {
        double d = vk[i] - v1[i];
        if (d > 0 && (worst1 < 0 || d > vk[worst1] - v1[worst1])) {
            worst2 = worst1;
            worst1 = i;
        } else if (d > 0 && (worst2 < 0 || d > vk[worst2] - v1[worst2])) {
            worst2 = i;
        }
        if (d < 0 && (save < 0 || d < vk[save] - v1[save])) save = i;
    }
    int w[2] = {worst1, worst2 >= 0 && vk[worst2] - v1[worst2] > 0.05 * dt ? worst2 : -1};
    for (int k = 0; k < 2 && w[k] >= 0; k++) {
        pp_verdict_term *t = &o->cost[o->n_cost++];
        t->term = w[k];
        term_label(w[k], &other->layout, gpn, t->label, sizeof t->label);
        t->delta_s = vk[w[k]] - v1[w[k]];
        t->other_s = vk[w[k]];
        t->best_s = v1[w[k]];
    }
    if (save >= 0 && v1[save] - vk[save] > 0.05 * dt) {
        o->save = save;
        o->save_s = v1[save] - vk[save];
    }
}

/* Parallel dimensions in use: fewer is simpler to run and to debug. */
static int complexity(const pp_layout *l)
{
    return (l->tp > 1) + 2 * (l->pp > 1) + (l->vpp > 1) + 2 * (l->cp > 1) + 2 * (l->ep > 1) +
           (l->recompute != PP_RC_NONE) + (l->zero >= 3) + (l->offload != PP_OFF_NONE);
}

static bool same_shape(const pp_layout *a, const pp_layout *b)
{
    return a->tp == b->tp && a->pp == b->pp && a->dp == b->dp && a->cp == b->cp && a->ep == b->ep &&
           pp_layout_etp(a) == pp_layout_etp(b);
}

void pp_plan_verdict_get(const pp_work *w, const pp_search_candidate *c, int64_t n,
                         const pp_search_candidate *shapes, int64_t n_shapes, pp_plan_verdict *out)
{
    memset(out, 0, sizeof *out);
    if (n < 1) return;
    out->valid = true;
    const int64_t gpn = w->gpus_per_node;
    const bool moe = pp_model_is_moe(&w->model);
    for (int64_t k = 1; k < n && k < 3; k++) compare(&c[0], &c[k], (int)k + 1, gpn, moe, &out->cmp[out->n_cmp++]);
    /* The best of other parallel shapes, when the top of the table is variations of one. */
    for (int64_t i = 0; i < n_shapes && out->n_shapes < 3; i++) {
        if (same_shape(&shapes[i].layout, &c[0].layout)) continue;
        bool listed = false;
        for (int64_t k = 1; k < n && k < 3; k++) listed |= same_shape(&shapes[i].layout, &c[k].layout);
        if (listed) continue;
        compare(&c[0], &shapes[i], 0, gpn, moe, &out->cmp[out->n_cmp++]);
        out->n_shapes++;
    }
    out->need_bytes = c[0].worst_bytes;
    out->headroom_bytes = c[0].headroom_bytes;
    out->capacity_bytes = c[0].worst_bytes + c[0].headroom_bytes;
    out->peak_frac = c[0].peak_bytes / out->capacity_bytes;
    out->fsdp_tight = pp_memory_fsdp_tight(w, c[0].peak_bytes, out->capacity_bytes);
    /* Near ties: the simplest layout within the model's band of #1. */
    const pp_search_candidate *simple = &c[0];
    double limit = c[0].time.step_time_s * (1 + PP_PLAN_TIE_FRACTION);
    for (int64_t k = 1; k < n; k++)
        if (c[k].time.step_time_s <= limit && complexity(&c[k].layout) < complexity(&simple->layout)) simple = &c[k];
    for (int64_t i = 0; i < n_shapes; i++)
        if (shapes[i].time.step_time_s <= limit && complexity(&shapes[i].layout) < complexity(&simple->layout))
            simple = &shapes[i];
    if (simple != &c[0]) {
        out->has_simpler = true;
        pp_layout_label(&simple->layout, out->simpler, sizeof out->simpler);
        out->simpler_frac = simple->time.step_time_s / c[0].time.step_time_s - 1;
    }
}

void pp_plan_verdict_print(FILE *f, const pp_plan_verdict *v)
{
    if (!v->valid) return;
    char gib[32], cap[32], room[32];
    fprintf(f, "\nwhy #1 wins:\n");
    for (int i = 0; i < v->n_cmp; i++) {
        const pp_verdict_cmp *o = &v->cmp[i];
        if (o->rank == 0 && i == v->n_cmp - v->n_shapes) fprintf(f, "  the best layouts of other shapes:\n");
        char name[200];
        if (o->rank) snprintf(name, sizeof name, "#%d", o->rank);
        else snprintf(name, sizeof name, "  %s", o->label);
        if (o->same_time) {
            fprintf(f, "  %s (%s): the same predicted step time; #1 leaves %s more memory free.\n", name, o->diff,
                    pp_fmt_bytes(o->freer_bytes, gib, sizeof gib));
            continue;
        }
        fprintf(f, "  %s (%s) is %.3g s per step slower (%.1f%%):", name, o->diff, o->slower_s, 100.0 * o->slower_frac);
        if (o->n_cost > 0)
            fprintf(f, " %s %+.3g s (%.3g vs %.3g)", o->cost[0].label, o->cost[0].delta_s, o->cost[0].other_s,
                    o->cost[0].best_s);
        if (o->n_cost > 1) fprintf(f, ", %s %+.3g s", o->cost[1].label, o->cost[1].delta_s);
        if (o->save >= 0) fprintf(f, "; it saves %.3g s of %s", o->save_s, pp_step_term_names[o->save]);
        fprintf(f, ".\n");
    }
    fprintf(f, "  #1 needs %s per GPU (peak + reserved) of %s: %s headroom.\n",
            pp_fmt_bytes(v->need_bytes, gib, sizeof gib), pp_fmt_bytes(v->capacity_bytes, cap, sizeof cap),
            pp_fmt_bytes(v->headroom_bytes, room, sizeof room));
    if (v->fsdp_tight)
        fprintf(f, "  note: its allocator peak is %.0f%% of the memory; FSDP2 runs above %.0f%% had PyTorch's "
                   "allocator free its cache and retry in 2 of 6 measured (35-45%% slower steps): "
                   "`--max-mem-frac %.2f` keeps room.\n",
                100.0 * v->peak_frac, 100.0 * PP_FSDP_RETRY_FRAC, PP_FSDP_RETRY_FRAC);
    if (v->has_simpler)
        fprintf(f, "  note: %s is within %.1f%% of #1, closer than the model's accuracy (5-10%% on published "
                   "runs); it is the simpler layout to run.\n",
                v->simpler, 100.0 * v->simpler_frac);
}

static void term_json(pp_json *j, const char *label, double delta_s)
{
    pp_json_obj_begin(j);
    pp_json_kstr(j, "term", label);
    pp_json_knum(j, "delta_s", delta_s);
    pp_json_obj_end(j);
}

void pp_plan_verdict_json(pp_json *j, const pp_plan_verdict *v)
{
    if (!v->valid) {
        pp_json_null(j);
        return;
    }
    pp_json_obj_begin(j);
    for (int part = 0; part < 2; part++) {
        pp_json_key(j, part ? "other_shapes" : "runners_up");
        pp_json_arr_begin(j);
        for (int i = 0; i < v->n_cmp; i++) {
            const pp_verdict_cmp *o = &v->cmp[i];
            if ((o->rank == 0) != (part == 1)) continue;
            pp_json_obj_begin(j);
            if (o->rank) pp_json_kint(j, "rank", o->rank);
            pp_json_kstr(j, "label", o->label);
            pp_json_kstr(j, "differs", o->diff);
            pp_json_knum(j, "slower_s", o->slower_s);
            pp_json_knum(j, "slower_fraction", o->slower_frac);
            if (o->same_time) pp_json_knum(j, "more_free_bytes_on_1", round(o->freer_bytes));
            pp_json_key(j, "costs");
            pp_json_arr_begin(j);
            for (int k = 0; k < o->n_cost; k++) term_json(j, o->cost[k].label, o->cost[k].delta_s);
            pp_json_arr_end(j);
            pp_json_key(j, "saves");
            if (o->save >= 0) term_json(j, pp_step_term_names[o->save], -o->save_s);
            else pp_json_null(j);
            pp_json_obj_end(j);
        }
        pp_json_arr_end(j);
    }
    pp_json_knum(j, "need_bytes", round(v->need_bytes));
    pp_json_knum(j, "headroom_bytes", round(v->headroom_bytes));
    pp_json_kbool(j, "fsdp_allocator_risk", v->fsdp_tight);
    pp_json_knum(j, "tie_band", PP_PLAN_TIE_FRACTION);
    pp_json_key(j, "simpler_within_band");
    if (v->has_simpler) {
        pp_json_obj_begin(j);
        pp_json_kstr(j, "label", v->simpler);
        pp_json_knum(j, "slower_fraction", v->simpler_frac);
        pp_json_obj_end(j);
    } else {
        pp_json_null(j);
    }
    pp_json_obj_end(j);
}
