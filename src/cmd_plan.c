/* parplan plan: search the layouts, prune (with reasons), rank by predicted step time, and
 * render the verdict (why the best beats the runners-up: planner/run/verdict.c) as a table,
 * JSON and the HTML report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pp_json.h"
#include "pp_launch.h"
#include "pp_pipeline.h"
#include "pp_memory.h"
#include "pp_search.h"
#include "pp_stages.h"
#include "pp_run.h"
#include "pp_time.h"
#include "plan_probe.h"
#include "report.h"

/* The search's fixed-dimension bits are the CLI's (compared as ints: two anonymous enums). */
_Static_assert((int)PP_SEARCH_FIX_TP == (int)PP_FIX_TP &&
                   (int)PP_SEARCH_FIX_PP == (int)PP_FIX_PP &&
                   (int)PP_SEARCH_FIX_DP == (int)PP_FIX_DP &&
                   (int)PP_SEARCH_FIX_VPP == (int)PP_FIX_VPP &&
                   (int)PP_SEARCH_FIX_CP == (int)PP_FIX_CP &&
                   (int)PP_SEARCH_FIX_EP == (int)PP_FIX_EP &&
                   (int)PP_SEARCH_FIX_MBS == (int)PP_FIX_MBS &&
                   (int)PP_SEARCH_FIX_ZERO == (int)PP_FIX_ZERO &&
                   (int)PP_SEARCH_FIX_DIST_OPT == (int)PP_FIX_DIST_OPT &&
                   (int)PP_SEARCH_FIX_SP == (int)PP_FIX_SP &&
                   (int)PP_SEARCH_FIX_RECOMPUTE == (int)PP_FIX_RECOMPUTE &&
                   (int)PP_SEARCH_FIX_OFFLOAD == (int)PP_FIX_OFFLOAD &&
                   (int)PP_SEARCH_FIX_ETP == (int)PP_FIX_ETP,
               "PP_SEARCH_FIX_* must match PP_FIX_*");

/* 12.3k, 4.5M */
static const char *fmt_rate(double v, char *buf, size_t n)
{
    if (v >= 1e9) snprintf(buf, n, "%.2fG", v / 1e9);
    else if (v >= 1e6) snprintf(buf, n, "%.2fM", v / 1e6);
    else if (v >= 1e4) snprintf(buf, n, "%.1fk", v / 1e3);
    else snprintf(buf, n, "%.1f", v);
    return buf;
}

/* ------------------------------------------------------------------ output */

/* The last rule of the funnel that removed layouts (not memory): why none passed the rules. */
static int last_rule(const pp_search_result *r)
{
    int last = -1;
    for (int i = 0; i < PP_PRUNE_COUNT; i++)
        if (r->pruned[i] && i != PP_PRUNE_OOM && i != PP_PRUNE_MARGIN) last = i;
    return last;
}

/* "of 80.0 GiB; plan keeps 12% free: up to 70.4 GiB" (no margin: "of 80.0 GiB") */
static const char *capacity_words(const pp_work *w, char *buf, size_t n)
{
    char cap[32], plan[32];
    pp_fmt_bytes(w->gpu.memory_bytes, cap, sizeof cap);
    if (pp_memory_plan_bytes(w) < w->gpu.memory_bytes)
        snprintf(buf, n, "of %s, filled up to %s: a %.0f%% margin, --max-mem-frac sets it", cap,
                 pp_fmt_bytes(pp_memory_plan_bytes(w), plan, sizeof plan), 100 * w->mem_margin_frac);
    else
        snprintf(buf, n, "of %s", cap);
    return buf;
}

/* ------------------------------------------------------------------ folded rows */

/* The rows folded into each shown row (pp_plan_fold_rows); NULL: nothing folded. */
static pp_plan_fold *plan_folds;

/* " [vpp 1,2,4,5,10 within 0.4%]" for a folded row, "" otherwise */
static const char *fold_words(int64_t i, const pp_search_candidate *k, char *buf, size_t n)
{
    buf[0] = 0;
    if (!plan_folds || plan_folds[i].n < 2) return buf;
    const pp_plan_fold *f = &plan_folds[i];
    size_t len = (size_t)snprintf(buf, n, " [vpp ");
    for (int v = 0; v < f->n && len < n; v++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", v ? "," : "", (long long)f->vpp[v]);
    if (len < n)
        snprintf(buf + len, n - len, " within %.1f%%]", 100 * (f->slowest_s / k->time.step_time_s - 1));
    return buf;
}

static void print_table(FILE *f, const pp_cli *c, const pp_search_candidate *cand,
                        const pp_search_result *r, const pp_search_candidate *shapes)
{
    const pp_work *w = &c->work;
    pp_cli_work_line(f, "plan", w);
    pp_cli_stack_line(f, c);
    char gpu_notes[2][640]; /* the GPU as the run has it (--gpu-mem-gib, a power limit) */
    for (int i = 0, n = pp_run_gpu_notes(&w->gpu, gpu_notes, 2); i < n; i++) fprintf(f, "gpu: %s\n", gpu_notes[i]);
    char nb[48];
    fprintf(f, "searched %s layouts in %.1f ms: ", pp_fmt_num((double)r->evaluated, 15, nb, sizeof nb),
            r->search_time_s * 1e3);
    if (r->n == 0) {
        /* nothing passed the rules: the last rule of the funnel removed the last layouts */
        int last = last_rule(r);
        fprintf(f, "none passes the rules; the last to go fell to '%s' (%s)\n\n", last >= 0 ? pp_prune_names[last] : "?",
                last >= 0 ? pp_prune_help[last] : "?");
    } else if (r->none_fit) {
        fprintf(f, "%s pass the rules, NONE fits in memory%s: the %lld closest are shown\n\n",
                pp_fmt_num((double)r->leaves, 15, nb, sizeof nb),
                pp_memory_plan_bytes(w) < w->gpu.memory_bytes ? " with the margin plan keeps" : "", (long long)r->n);
    } else {
        fprintf(f, "%s fit in memory; the best %lld by predicted step time\n\n",
                pp_fmt_num((double)r->fitting, 15, nb, sizeof nb), (long long)r->n);
    }
    /* the layout column as wide as its longest label (uneven stages make long ones) */
    int width = 44;
    for (int64_t i = 0; i < r->n; i++) {
        char lab[320];
        char fw[160];
        int len = (int)strlen(pp_layout_label(&cand[i].layout, lab, sizeof lab)) +
                  (int)strlen(fold_words(i, &cand[i], fw, sizeof fw));
        if (len > width) width = len;
    }
    fprintf(f, " #  %-*s %10s %9s %10s %9s %9s %6s\n", width, "layout", "mem/GPU", "step s", "samples/s",
            "tokens/s", "TFLOP/s", "MFU");
    for (int64_t i = 0; i < r->n; i++) {
        const pp_search_candidate *k = &cand[i];
        char lab[320], row[480], fw[160], mem[32], tok[32], st[32], sps[32];
        snprintf(row, sizeof row, "%s%s", pp_layout_label(&k->layout, lab, sizeof lab), fold_words(i, k, fw, sizeof fw));
        fprintf(f, "%2lld  %-*s %10s %9s %10s %9s %9.1f %5.1f%%%s\n", (long long)(i + 1), width,
                row, pp_fmt_bytes(k->worst_bytes, mem, sizeof mem),
                pp_fmt_num(k->time.step_time_s, 4, st, sizeof st), pp_fmt_num(k->time.samples_per_s, 4, sps, sizeof sps),
                fmt_rate(k->time.tokens_per_s, tok, sizeof tok), k->time.model_tflops_per_gpu, 100 * k->time.mfu,
                k->fits ? "" : k->worst_bytes <= w->gpu.memory_bytes ? "  margin" : "  OOM");
    }
    const pp_band_row *bd = pp_band_for(w);
    double flo, fhi; /* the band as factors of the prediction */
    pp_band_range(bd, 1.0, &flo, &fhi);
    char bw[96];
    if (bd->calibrate_rows) snprintf(bw, sizeof bw, "error on %d published runs", bd->calibrate_rows);
    else snprintf(bw, sizeof bw, "error of any family: no published run of this stack or GPU");
    fprintf(f, "(mem/GPU: peak + reserved on the fullest GPU, %s;\n TFLOP/s: model FLOPs per GPU, no "
               "recompute; MFU against %.0f TFLOP/s;\n step s: within %+.0f%% to %+.0f%% by the %s band, the 5th to "
               "95th percentile %s)\n",
            capacity_words(w, (char[160]){0}, 160),
            (w->gpu.peak_flops[PP_DT_BF16] > 0 ? w->gpu.peak_flops[PP_DT_BF16] : w->gpu.peak_flops[PP_DT_FP16]) / 1e12,
            100 * (flo - 1), 100 * (fhi - 1), bd->name, bw);
    /* rows whose pp x vpp does not divide the layers: the balanced split by virtual stage, which the
     * label does not show (pp_layout_vstage_layers) */
    char rows[160] = "", lay[512] = "";
    for (int64_t i = 0; i < r->n; i++) {
        const pp_layout *l = &cand[i].layout;
        if (l->vstage_layers || !pp_layout_vstages_uneven(w, l)) continue;
        pp_strcatf(rows, sizeof rows, "%s#%lld", rows[0] ? ", " : "", (long long)(i + 1));
        pp_error le = {0};
        if (!lay[0] && pp_pipeline_layout_format(w, l, lay, sizeof lay, &le) != PP_OK) snprintf(lay, sizeof lay, "?");
    }
    if (rows[0])
        fprintf(f, "(%s: pp x vpp does not divide the %lld layers: the balanced split by virtual stage, the embedding and "
                   "the loss counted as one layer each; the first is --pipeline-layout '%s')\n",
                rows, (long long)w->model.layers, lay);

    if (r->n > 0) {
        const pp_time_result *t = &cand[0].time;
        char ep[48] = "";
        if (pp_model_is_moe(&w->model)) snprintf(ep, sizeof ep, " + EP %.3g", t->ep_comm_s);
        char off[48] = "";
        if (t->offload_s > 0) snprintf(off, sizeof off, " + offload %.3g", t->offload_s);
        if (t->host_s > 0)
            snprintf(off + strlen(off), sizeof off - strlen(off), " + host %.3g", t->host_s);
        fprintf(f, "\n#1 step %.4g s = compute %.3g + recompute %.3g + TP %.3g + CP %.3g%s + "
                   "PP send/recv %.3g + bubble %.3g + DP %.3g + ZeRO %.3g + optimizer %.3g%s\n",
                t->step_time_s, t->compute_s, t->recompute_s, t->tp_comm_s, t->cp_comm_s, ep,
                t->pp_comm_s, t->bubble_s, t->dp_comm_s, t->zero_gather_s, t->optimizer_s, off);
    }

    fprintf(f, "\npruning funnel (each layout counted under the first rule it breaks):\n");
    fprintf(f, "  %14lld  layouts in the space (tp x cp%s x mbs x sp x pp x vpp x recompute x "
               "optimizer sharding)\n",
            (long long)r->evaluated, pp_model_is_moe(&w->model) ? " x ep x etp" : "");
    int64_t left = r->evaluated;
    for (int i = 0; i < PP_PRUNE_COUNT; i++) {
        if (!r->pruned[i]) continue;
        left -= r->pruned[i];
        fprintf(f, "- %14lld  %-14s %s\n", (long long)r->pruned[i], pp_prune_names[i], pp_prune_help[i]);
    }
    fprintf(f, "= %14lld  fit and were ranked\n", (long long)left);
    if (!r->none_fit) {
        pp_plan_verdict v;
        pp_plan_verdict_get(w, cand, r->n, shapes, r->n_shapes, &v);
        pp_plan_verdict_print(f, &v);
    }
}

/* Nothing fits on these GPUs: the smallest count at which the search finds a layout
 * (pp_run_remedies_find; 0: not searched). */
static pp_run_remedies plan_min;

/* plan --probe: what was measured per listed candidate; NULL without --probe. */
static const pp_probe_outcome *plan_probe_info;
static int64_t plan_probe_n;

static void print_json(const pp_cli *c, const pp_search_candidate *cand, const pp_search_result *r, const pp_work *w,
                       const pp_search_candidate *shapes)
{
    pp_json j;
    pp_json_init(&j, stdout, true);
    pp_json_obj_begin(&j);
    pp_json_kstr(&j, "model", w->model.name);
    pp_json_kstr(&j, "gpu", w->gpu.name);
    pp_json_kint(&j, "gpus", w->gpus);
    pp_json_kint(&j, "gpus_per_node", w->gpus_per_node);
    pp_json_kint(&j, "seq", w->model.seq);
    pp_json_kint(&j, "gbs", w->gbs);
    pp_band_json_row(&j, w);
    pp_json_kint(&j, "evaluated", r->evaluated);
    pp_json_key(&j, "pruned");
    pp_json_obj_begin(&j);
    for (int i = 0; i < PP_PRUNE_COUNT; i++) pp_json_kint(&j, pp_prune_names[i], r->pruned[i]);
    pp_json_obj_end(&j);
    pp_json_kint(&j, "fitting", r->fitting);
    pp_json_kint(&j, "leaves", r->leaves);
    pp_json_knum(&j, "search_time_s", r->search_time_s);
    pp_json_knum(&j, "capacity_bytes", w->gpu.memory_bytes);
    /* nothing fits: the smallest GPU count at which plan finds a layout (null: it did not search) */
    pp_json_key(&j, "min_gpus");
    if (plan_min.min_gpus > 0) pp_json_num(&j, (double)plan_min.min_gpus);
    else pp_json_null(&j);
    pp_gpu_json_effective(&j, &w->gpu);
    pp_cli_stack_json(&j, c);
    pp_json_key(&j, "candidates");
    pp_json_arr_begin(&j);
    for (int64_t i = 0; i < r->n; i++) {
        const pp_search_candidate *k = &cand[i];
        const pp_layout *l = &k->layout;
        const pp_time_result *t = &k->time;
        pp_json_obj_begin(&j);
        pp_layout_json_keys(&j, w, l);
        /* the row as a user reads it and as the layout flags that state it */
        char lab[320], args[512];
        pp_json_kstr(&j, "label", pp_layout_label(l, lab, sizeof lab));
        pp_layout_args(w, l, args, sizeof args);
        pp_json_kstr(&j, "args", args);
        /* the rows folded into this one (same layout but VPP, within the model's band) */
        if (plan_folds && plan_folds[i].n >= 2) {
            pp_json_key(&j, "folded");
            pp_json_obj_begin(&j);
            pp_json_key(&j, "vpp");
            pp_json_arr_begin(&j);
            for (int v = 0; v < plan_folds[i].n; v++) pp_json_int(&j, plan_folds[i].vpp[v]);
            pp_json_arr_end(&j);
            pp_json_knum(&j, "slowest_step_time_s", plan_folds[i].slowest_s);
            pp_json_knum(&j, "band", PP_PLAN_TIE_FRACTION);
            pp_json_obj_end(&j);
        }
        pp_json_knum(&j, "peak_bytes", round(k->peak_bytes));
        pp_json_knum(&j, "need_bytes", round(k->worst_bytes));
        pp_json_knum(&j, "headroom_bytes", round(k->headroom_bytes));
        /* fits: in the GPU (check's verdict); within_margin: what plan ranks (pp_memory_plan_bytes) */
        pp_json_kbool(&j, "fits", k->worst_bytes <= w->gpu.memory_bytes);
        pp_json_kbool(&j, "within_margin", k->fits);
        pp_json_knum(&j, "step_time_s", t->step_time_s);
        pp_band_json(&j, w, "step_time_range_s", t->step_time_s);
        pp_json_knum(&j, "samples_per_s", t->samples_per_s);
        pp_json_knum(&j, "tokens_per_s", t->tokens_per_s);
        pp_json_knum(&j, "model_tflops_per_gpu", t->model_tflops_per_gpu);
        pp_json_knum(&j, "mfu", t->mfu);
        pp_run_json_breakdown(&j, t);
        const pp_probe_outcome *pi = plan_probe_info && i < plan_probe_n ? &plan_probe_info[i] : NULL;
        pp_json_kstr(&j, "source", pi && pi->probed ? "probe" : "model");
        if (pi && pi->model_step_s > 0) {
            pp_json_key(&j, "probe");
            pp_json_obj_begin(&j);
            pp_json_kbool(&j, "measured", pi->probed);
            if (pi->probed) {
                pp_json_knum(&j, "layer_fwd_ms", pi->layer_fwd_ms);
                pp_json_knum(&j, "layer_fwdbwd_ms", pi->layer_fwdbwd_ms);
                pp_json_knum(&j, "stack_layer_fwd_ms", pi->stack_layer_fwd_ms);
                pp_json_knum(&j, "stack_layer_bwd_ms", pi->stack_layer_bwd_ms);
                pp_json_knum(&j, "optimizer_step_ms", pi->optimizer_ms);
                pp_json_kstr(&j, "attention", pi->attention);
                pp_json_kstr(&j, "device", pi->device);
                pp_json_kbool(&j, "cached", pi->cached);
                if (pi->composed) {
                    /* an MoE / MLA layer composed of parts measured apart (0: not measured) */
                    pp_json_key(&j, "parts");
                    pp_json_obj_begin(&j);
                    pp_json_kstr(&j, "attention_probe", pi->attn_mla ? "mla" : "layer --no-mlp");
                    pp_json_knum(&j, "attention_fwd_ms", pi->attn_fwd_ms);
                    pp_json_knum(&j, "attention_fwdbwd_ms", pi->attn_fwdbwd_ms);
                    pp_json_kstr(&j, "moe_impl", pi->moe_impl);
                    pp_json_knum(&j, "moe_fwd_ms", pi->moe_fwd_ms);
                    pp_json_knum(&j, "moe_fwdbwd_ms", pi->moe_fwdbwd_ms);
                    pp_json_knum(&j, "expert_fwd_ms", pi->expert_fwd_ms);
                    pp_json_knum(&j, "expert_bwd_ms", pi->expert_bwd_ms);
                    pp_json_kbool(&j, "moe_shared", pi->moe_shared);
                    pp_json_knum(&j, "host_fwd_ms", pi->host_fwd_ms);
                    pp_json_knum(&j, "host_bwd_ms", pi->host_bwd_ms);
                    pp_json_knum(&j, "modelled_fwd_ms", pi->rest_fwd_ms);
                    pp_json_knum(&j, "modelled_bwd_ms", pi->rest_bwd_ms);
                    pp_json_knum(&j, "dense_layer_fwd_ms", pi->dense_fwd_ms);
                    pp_json_knum(&j, "dense_layer_fwdbwd_ms", pi->dense_fwdbwd_ms);
                    pp_json_obj_end(&j);
                }
            }
            pp_json_knum(&j, "model_step_time_s", pi->model_step_s);
            pp_json_kstr(&j, "modelled", pi->modelled);
            pp_json_obj_end(&j);
        }
        pp_json_obj_end(&j);
    }
    pp_json_arr_end(&j);
    /* why #1 wins (the table's closing lines; null when nothing fits) */
    pp_plan_verdict v;
    pp_plan_verdict_get(w, cand, r->none_fit ? 0 : r->n, shapes, r->n_shapes, &v);
    pp_json_key(&j, "why");
    pp_plan_verdict_json(&j, &v);
    pp_json_obj_end(&j);
    pp_json_end(&j);
}

/* ------------------------------------------------------------------ uneven stages */

/* The stage MILP on the head of the ranking: --stages auto (plan's default) takes an
 * uneven split or per-stage recompute where it is faster or is the only one that fits, ilp
 * wherever it solved, uniform never. pp_stages_refine solves only candidates whose bound
 * (pp_stages_gain_bound) can still reach the top `want`: measured 1.2x the search alone on
 * 13B / 16 A100 (tests/search/stages bench_plan). stage_mem holds 2 x n rows: layers then recompute. */
static pp_status plan_stages(pp_cli *c, pp_search_candidate *cand, pp_search_result *r, int64_t want,
                             int (*stage_mem)[PP_MAX_STAGES], pp_error *err)
{
    const char *mode = c->stages ? c->stages : "auto";
    pp_stages_refine_stats rs;
    pp_status st = pp_stages_refine(&c->work, cand, r->n, want, mode, stage_mem, stage_mem + r->n, &rs, err);
    if (st != PP_OK) return st;
    if (rs.warning[0] && !c->quiet) fprintf(stderr, "parplan: warning: stages: %s\n", rs.warning);
    r->n = rs.n; /* duplicates dropped */
    r->none_fit = r->n == 0 || !cand[0].fits; /* the MILP can make the closest OOM layout fit */
    r->search_time_s += rs.time_s;
    if (c->dump_ilp) {
        if (r->n > 0 && cand[0].layout.pp > 1) {
            pp_layout l = cand[0].layout;
            st = pp_stages_dump_lp(&c->work, &l, c->dump_ilp, err);
        } else if (!c->quiet) {
            fprintf(stderr, "parplan: warning: --dump-ilp: the best layout has no pipeline, no stage "
                            "MILP to write\n");
        }
    }
    return st;
}

/* ------------------------------------------------------------------ the resolved runs */

/* ------------------------------------------------------------------ HTML report */

static pp_status plan_report(const pp_cli *c, const pp_search_candidate *cand, const pp_search_result *r,
                             const pp_search_candidate *shapes, pp_error *err)
{
    const pp_work *w = &c->work;
    pp_report rep;
    char title[256], lab[160];
    snprintf(title, sizeof title, "parplan plan: %s on %lld x %s", w->model.name, (long long)w->gpus, w->gpu.name);
    pp_status st = pp_report_open(&rep, c->report, title, err);
    if (st != PP_OK) return st;
    char v_gpus[128], v_batch[64], v_best[160], v_time[64];
    snprintf(v_gpus, sizeof v_gpus, "%lld x %s, %lld per node", (long long)w->gpus, w->gpu.name,
             (long long)w->gpus_per_node);
    snprintf(v_batch, sizeof v_batch, "%lld sequences of %lld tokens", (long long)w->gbs, (long long)w->model.seq);
    snprintf(v_best, sizeof v_best, "%s", r->n ? pp_layout_label(&cand[0].layout, lab, sizeof lab) : "none");
    snprintf(v_time, sizeof v_time, "%.4g s per step (%.1f%% MFU)", r->n ? cand[0].time.step_time_s : 0,
             r->n ? 100 * cand[0].time.mfu : 0);
    const char *keys[] = {"model", "GPUs", "global batch", "framework", "best layout", "predicted"};
    const char *vals[] = {w->model.name, v_gpus, v_batch, pp_framework_names[w->framework], v_best, v_time};
    pp_report_summary(&rep, "Work and verdict", keys, vals, 6);
    /* funnel: what is left after each rule */
    const char *names[PP_PRUNE_COUNT + 1];
    const char *notes[PP_PRUNE_COUNT + 1];
    int64_t counts[PP_PRUNE_COUNT + 1];
    int nf = 0;
    names[nf] = "enumerated";
    notes[nf] = "tp x cp x ep x mbs x sp x pp x vpp x recompute x optimizer sharding";
    counts[nf++] = r->evaluated;
    int64_t left = r->evaluated;
    for (int i = 0; i < PP_PRUNE_COUNT; i++) {
        if (!r->pruned[i]) continue;
        left -= r->pruned[i];
        names[nf] = pp_prune_names[i];
        notes[nf] = pp_prune_help[i];
        counts[nf++] = left;
    }
    pp_report_funnel(&rep, names, notes, counts, nf);
    if (r->n > 0) {
        int n = r->n < 64 ? (int)r->n : 64;
        pp_report_point pts[64];
        const char *labels[64];
        pp_time_result times[64];
        char (*buf)[160] = calloc((size_t)n, sizeof *buf);
        if (buf) {
            for (int i = 0; i < n; i++) {
                labels[i] = pp_layout_label(&cand[i].layout, buf[i], sizeof buf[i]);
                pts[i] = (pp_report_point){labels[i], cand[i].headroom_bytes, cand[i].time.samples_per_s};
                times[i] = cand[i].time;
            }
            pp_report_candidates(&rep, pts, n, 0);
            pp_report_step_breakdown(&rep, labels, times, n);
            free(buf);
        }
        pp_mem_result *mem = calloc(1, sizeof *mem);
        pp_error e2 = {0};
        if (mem && pp_memory_estimate(w, &cand[0].layout, mem, &e2) == PP_OK)
            pp_report_memory_stages(&rep, mem, w->gpu.name);
        free(mem);
    }
    if (r->n > 0 && !r->none_fit) { /* why #1 wins, as the table ends */
        pp_plan_verdict v;
        pp_plan_verdict_get(w, cand, r->n, shapes, r->n_shapes, &v);
        char *text = NULL;
        size_t len = 0;
        FILE *ms = open_memstream(&text, &len);
        if (ms) {
            pp_plan_verdict_print(ms, &v);
            const char *head = "\nwhy #1 wins:\n"; /* the section's heading says it */
            if (fclose(ms) == 0 && text)
                pp_report_text(&rep, "Why #1 wins", strncmp(text, head, strlen(head)) ? text : text + strlen(head));
        }
        free(text);
    }
    return pp_report_close(&rep, err);
}

int pp_cmd_plan(pp_cli *c)
{
    pp_error err = {0};
    pp_search_candidate *cand = NULL, *shapes = NULL;
    int (*stage_mem)[PP_MAX_STAGES] = NULL;
    int rc = 0;
    /* the cheap checks first: nothing is printed for a bad command line */
    if (c->npos) {
        pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0, "plan takes no positional argument, got '%s'", c->pos[0]);
        return pp_cli_fail(&err);
    }
    if (c->emit && pp_name_lookup(pp_launch_format_names, PP_LAUNCH_COUNT, c->emit) < 0) {
        pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0,
                     "--emit expects " PP_LAUNCH_FORMAT_LIST ", got '%s'", c->emit);
        return pp_cli_fail(&err);
    }
    if (c->emit && c->json && !c->output) {
        pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0,
                     "--json with --emit needs -o DIR (the launch config would share stdout)");
        return pp_cli_fail(&err);
    }
    pp_status st = pp_cli_work(c, false, &err);
    if (st != PP_OK) return pp_cli_fail(&err);
    /* --probe: a GPU and parplan-probe are needed; say so before searching */
    pp_plan_probe_env probe_env;
    pp_probe_outcome *probe_info = NULL;
    pp_plan_fold *folds = NULL;
    if (c->probe_k > 0 && (rc = pp_plan_probe_check(c, &probe_env))) return rc;
    int64_t want = c->probe_k > c->top ? c->probe_k : c->top; /* candidates searched for */

    pp_search_params p;
    pp_search_params_init(&p);
    p.fixed_layout = c->layout;
    p.fixed = c->fixed;
    bool stages_uniform = c->stages && !strcmp(c->stages, "uniform");
    p.top = stages_uniform || want >= PP_PLAN_WINDOW ? want : PP_PLAN_WINDOW;
    p.allow_cross_node_tp = c->allow_cross_node_tp;
    cand = calloc((size_t)p.top, sizeof *cand);
    p.shapes_cap = 8;
    p.shapes = shapes = calloc((size_t)p.shapes_cap, sizeof *shapes);
    stage_mem = calloc(2 * (size_t)p.top, sizeof *stage_mem);
    if (!cand || !shapes || !stage_mem) {
        pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        return pp_cli_fail(&err);
    }
    pp_search_result r;
    st = pp_search_run(&c->work, &p, cand, &r, &err);
    if (st != PP_OK) {
        rc = pp_cli_fail(&err);
        goto done;
    }
    if (r.n > 0) {
        st = plan_stages(c, cand, &r, want, stage_mem, &err);
        if (st == PP_OK) st = pp_run_plan_resolve(&c->work, cand, &r, &err);
        if (st != PP_OK) {
            rc = pp_cli_fail(&err);
            goto done;
        }
    }
    if (c->probe_k > 0 && !r.none_fit && r.n > 0) {
        if (!(probe_info = calloc((size_t)want, sizeof *probe_info))) {
            pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            rc = pp_cli_fail(&err);
            goto done;
        }
        if ((rc = pp_plan_probe_run(c, &probe_env, cand, r.n, probe_info))) goto done;
        plan_probe_info = probe_info;
        plan_probe_n = r.n < c->probe_k ? r.n : c->probe_k;
    }
    /* without probes (whose figures are per row), VPP variants within the band fold into one row */
    plan_folds = NULL;
    if (c->probe_k == 0 && !r.none_fit && r.n > 1 && !c->no_fold) {
        if (!(folds = calloc((size_t)r.n, sizeof *folds))) {
            pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            rc = pp_cli_fail(&err);
            goto done;
        }
        pp_plan_fold_rows(cand, &r, folds);
        plan_folds = folds;
    }
    if (r.n > c->top) r.n = c->top; /* --probe searched for more */
    memset(&plan_min, 0, sizeof plan_min);
    if (r.n > 0 && r.none_fit && !(cand[0].worst_bytes <= c->work.gpu.memory_bytes)) {
        st = pp_run_remedies_find(&c->work, &cand[0].layout, false, &plan_min, &err);
        if (st != PP_OK) {
            rc = pp_cli_fail(&err);
            goto done;
        }
    }
    if (c->report) {
        st = plan_report(c, cand, &r, shapes, &err);
        if (st != PP_OK) {
            rc = pp_cli_fail(&err);
            goto done;
        }
    }
    /* With --emit and no -o the launch config owns stdout: the table goes to stderr. */
    bool emit_stdout = c->emit && !c->output;
    if (c->json && !emit_stdout) print_json(c, cand, &r, &c->work, shapes);
    else if (!c->quiet || !c->emit) print_table(emit_stdout ? stderr : stdout, c, cand, &r, shapes);
    if (probe_info && !(c->json && !emit_stdout) && (!c->quiet || !c->emit))
        pp_plan_probe_print(emit_stdout ? stderr : stdout, cand, plan_probe_n < r.n ? plan_probe_n : r.n, probe_info);

    if (r.n == 0) {
        int last = last_rule(&r);
        fprintf(stderr, "parplan: no layout satisfies the rules for %lld GPUs and global batch %lld: the last "
                        "layouts fell to '%s' (%s; see the pruning funnel)\n",
                (long long)c->work.gpus, (long long)c->work.gbs, last >= 0 ? pp_prune_names[last] : "?",
                last >= 0 ? pp_prune_help[last] : "?");
        rc = 1;
        goto done;
    }
    if (r.none_fit) {
        char need[32], have[32], lab[160];
        bool in_gpu = cand[0].worst_bytes <= c->work.gpu.memory_bytes;
        char more[400], lab2[160];
        if (plan_min.min_gpus > 0)
            snprintf(more, sizeof more, "the smallest GPU count at which plan finds a layout is %lld: %s",
                     (long long)plan_min.min_gpus, pp_layout_label(&plan_min.min_pick.best.layout, lab2, sizeof lab2));
        else if (plan_min.min_gpus < 0)
            snprintf(more, sizeof more, "no count up to %lld GPUs has one: a smaller global batch or a shorter "
                     "sequence", (long long)plan_min.min_gpus_searched);
        else
            snprintf(more, sizeof more, "more GPUs");
        fprintf(stderr, "parplan: no layout fits in %s per GPU%s; the closest (%s) needs %s (%s)\n",
                pp_fmt_bytes(pp_memory_plan_bytes(&c->work), have, sizeof have),
                pp_memory_plan_bytes(&c->work) < c->work.gpu.memory_bytes ? " (the margin plan keeps)" : "",
                pp_layout_label(&cand[0].layout, lab, sizeof lab),
                pp_fmt_bytes(cand[0].worst_bytes, need, sizeof need),
                in_gpu ? "it fits the whole GPU: --max-mem-frac 1 plans with all of it" : more);
        rc = 1;
        goto done;
    }
    if (c->emit) {
        /* One JSON document on stdout: plan's. The launch files go to -o DIR. */
        bool json = c->json;
        c->json = false;
        rc = pp_launch_emit(c, &c->work, &cand[0].layout, c->emit, NULL);
        c->json = json;
    }
done:
    free(cand);
    free(shapes);
    free(stage_mem);
    free(probe_info);
    free(folds);
    plan_folds = NULL;
    plan_probe_info = NULL;
    return rc;
}
