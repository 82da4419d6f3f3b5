/* parplan check WORK LAYOUT: per-stage memory breakdown (issue 3), fits or OOM per rank with the
 * reason and what would make it fit, and the predicted step time (issue 4's model).
 * JSON fields: docs/cli.md, "check". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pp_json.h"
#include "pp_launch.h"
#include "pp_stages.h"
#include "report.h"
#include "pp_memory.h"
#include "pp_time.h"

/* Byte counts are whole numbers in the JSON (the model's doubles carry fractions). */
static void kbytes(pp_json *j, const char *k, double v) { pp_json_knum(j, k, round(v)); }

static void check_json(const pp_cli *c, const pp_work *w, const pp_layout *l, const pp_mem_result *r,
                       const pp_time_result *t)
{
    pp_json j;
    pp_json_init(&j, stdout, true);
    pp_json_obj_begin(&j);
    pp_json_kstr(&j, "model", w->model.name);
    pp_json_kstr(&j, "gpu", w->gpu.name);
    pp_json_kint(&j, "gpus", w->gpus);
    pp_json_key(&j, "layout");
    pp_json_obj_begin(&j);
    pp_json_kint(&j, "tp", l->tp);
    pp_json_kint(&j, "pp", l->pp);
    pp_json_kint(&j, "dp", l->dp);
    pp_json_kint(&j, "vpp", l->vpp);
    pp_json_kint(&j, "cp", l->cp);
    pp_json_kint(&j, "ep", l->ep);
    pp_json_kint(&j, "etp", pp_layout_etp(l));
    pp_json_kint(&j, "mbs", l->mbs);
    pp_json_kint(&j, "gbs", w->gbs);
    pp_json_kint(&j, "zero", l->zero);
    pp_json_kbool(&j, "dist_opt", l->dist_opt);
    pp_json_kbool(&j, "sp", l->sp);
    pp_json_kstr(&j, "recompute", pp_recompute_names[l->recompute]);
    pp_json_kint(&j, "recompute_layers", l->recompute_layers);
    pp_json_kstr(&j, "offload", pp_offload_names[l->offload]);
    pp_json_kint(&j, "replicate", l->replicate > 1 ? l->replicate : 1);
    pp_json_kstr(&j, "framework", pp_framework_names[w->framework]);
    pp_json_kstr(&j, "attention", pp_attention_names[w->attention]);
    pp_json_kstr(&j, "stage_split", !l->stage_layers ? "uniform" : c->margs && c->margs->uneven && !c->stages ? "megatron-args" : "ilp");
    pp_json_obj_end(&j);
    pp_cli_stack_json(&j, c);
    pp_json_kbool(&j, "fits", r->fits);
    kbytes(&j, "capacity_bytes", r->capacity_bytes);
    kbytes(&j, "peak_bytes", r->peak_bytes);
    pp_json_kint(&j, "largest_stage", r->largest_stage);
    pp_json_key(&j, "why");
    if (r->fits) pp_json_null(&j);
    else pp_json_str(&j, r->why);
    pp_json_key(&j, "stages");
    pp_json_arr_begin(&j);
    for (int64_t i = 0; i < r->n_stages; i++) {
        const pp_mem_stage *s = &r->stages[i];
        pp_json_obj_begin(&j);
        pp_json_kint(&j, "stage", s->stage);
        pp_json_kint(&j, "layers", s->layers);
        pp_json_kint(&j, "recompute_layers", s->recompute_layers);
        pp_json_kint(&j, "inflight", s->inflight);
        kbytes(&j, "peak_bytes", s->peak_bytes);
        pp_json_kbool(&j, "fits", s->fits);
        if (s->peak_moment) pp_json_kstr(&j, "peak_moment", s->peak_moment);
        pp_json_key(&j, "breakdown");
        pp_json_obj_begin(&j);
        kbytes(&j, "weights", s->weights_bytes);
        kbytes(&j, "grads", s->grads_bytes);
        kbytes(&j, "optimizer", s->optimizer_bytes);
        kbytes(&j, "activations", s->activations_bytes);
        kbytes(&j, "transient", s->transient_bytes);
        kbytes(&j, "reserved", s->reserved_bytes);
        pp_json_obj_end(&j);
        pp_json_obj_end(&j);
    }
    pp_json_arr_end(&j);
    pp_json_knum(&j, "step_time_s", t->step_time_s);
    pp_json_knum(&j, "samples_per_s", t->samples_per_s);
    pp_json_knum(&j, "tokens_per_s", t->tokens_per_s);
    pp_json_knum(&j, "model_tflops_per_gpu", t->model_tflops_per_gpu);
    pp_json_knum(&j, "mfu", t->mfu);
    pp_json_obj_end(&j);
    pp_json_end(&j);
}

static void check_table(const pp_cli *c, const pp_work *w, const pp_layout *l, const pp_mem_result *r,
                        const pp_time_result *t)
{
    char b[12][24];
    printf("parplan check: %s on %lld x %s (%s), %s attention\n", w->model.name, (long long)w->gpus,
           w->gpu.name, pp_framework_names[w->framework], pp_attention_names[w->attention]);
    printf("layout: tp %lld pp %lld dp %lld vpp %lld cp %lld ep %lld etp %lld, mbs %lld, gbs %lld, "
           "%lld micro-batches; %s%s%s, recompute %s",
           (long long)l->tp, (long long)l->pp, (long long)l->dp, (long long)l->vpp, (long long)l->cp,
           (long long)l->ep, (long long)pp_layout_etp(l), (long long)l->mbs, (long long)w->gbs,
           (long long)pp_layout_microbatches(w, l),
           l->dist_opt ? "distributed optimizer" : l->zero ? "ZeRO stage " : "no optimizer sharding",
           (!l->dist_opt && l->zero) ? (const char *[]){"", "1", "2", "3"}[l->zero] : "",
           l->sp ? ", sequence parallel" : "", pp_recompute_names[l->recompute]);
    if (l->recompute == PP_RC_FULL && l->recompute_layers)
        printf(" (%lld layers per stage)", (long long)l->recompute_layers);
    if (l->offload) printf(", offload %s", pp_offload_names[l->offload]);
    if (l->replicate > 1) printf(", HSDP %lld replicas of %lld shards", (long long)l->replicate,
                                 (long long)(l->dp / l->replicate));
    printf("\n");
    pp_cli_stack_line(stdout, c);
    printf("\n");
    printf("%5s %6s %4s %5s %10s %10s %10s %11s %10s %10s %10s %10s  %s\n", "stage", "layers",
           "rc", "in-fl", "weights", "grads", "optimizer", "activations", "transient", "peak",
           "reserved", "total", "fits");
    for (int64_t i = 0; i < r->n_stages; i++) {
        const pp_mem_stage *s = &r->stages[i];
        printf("%5lld %6lld %4lld %5lld %10s %10s %10s %11s %10s %10s %10s %10s  %s%s\n",
               (long long)s->stage, (long long)s->layers, (long long)s->recompute_layers,
               (long long)s->inflight, pp_fmt_bytes(s->weights_bytes, b[0], sizeof b[0]),
               pp_fmt_bytes(s->grads_bytes, b[1], sizeof b[1]),
               pp_fmt_bytes(s->optimizer_bytes, b[2], sizeof b[2]),
               pp_fmt_bytes(s->activations_bytes, b[3], sizeof b[3]),
               pp_fmt_bytes(s->transient_bytes, b[4], sizeof b[4]),
               pp_fmt_bytes(s->peak_bytes, b[5], sizeof b[5]),
               pp_fmt_bytes(s->reserved_bytes, b[6], sizeof b[6]),
               pp_fmt_bytes(s->peak_bytes + s->reserved_bytes, b[7], sizeof b[7]),
               s->fits ? "yes" : "NO", i == r->largest_stage ? "  <- largest" : "");
    }
    const pp_mem_stage *big = &r->stages[r->largest_stage];
    printf("\n%s: largest stage %lld needs %s (peak %s + reserved %s) of %s per GPU\n",
           r->fits ? "fits" : "OUT OF MEMORY", (long long)r->largest_stage,
           pp_fmt_bytes(big->peak_bytes + big->reserved_bytes, b[8], sizeof b[8]),
           pp_fmt_bytes(big->peak_bytes, b[9], sizeof b[9]),
           pp_fmt_bytes(big->reserved_bytes, b[10], sizeof b[10]),
           pp_fmt_bytes(r->capacity_bytes, b[11], sizeof b[11]));
    if (big->peak_moment) printf("peak at: %s (FSDP2's step timeline)\n", big->peak_moment);
    if (!r->fits) printf("why: %s\n", r->why);
    printf("step time %.3f s, %.2f samples/s, %.0f tokens/s, %.1f model TFLOP/s per GPU, MFU %.1f%%\n",
           t->step_time_s, t->samples_per_s, t->tokens_per_s, t->model_tflops_per_gpu,
           100.0 * t->mfu);
}

int pp_cmd_check(pp_cli *c)
{
    pp_error err = {0};
    if (c->npos) {
        pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0, "check takes no positional argument, got '%s'",
                     c->pos[0]);
        return pp_cli_fail(&err);
    }
    pp_status st = pp_cli_work(c, true, &err);
    if (st != PP_OK) return pp_cli_fail(&err);
    /* --stages ilp|auto: the stage MILP's split (issue 5); uniform by default, or the uneven
     * stages a --megatron-args file gives (its --pipeline-model-parallel-layout). */
    static int stage_layers[PP_MAX_STAGES], stage_recompute[PP_MAX_STAGES];
    bool file_stages = c->layout.stage_layers && !c->stages;
    pp_stages_result *sres = calloc(1, sizeof *sres);
    if (!sres) {
        pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        return pp_cli_fail(&err);
    }
    if (!file_stages)
        st = pp_stages_apply(&c->work, &c->layout, c->stages, c->dump_ilp, stage_layers, stage_recompute,
                             sres, &err);
    if (st == PP_OK && sres->warning[0] && !c->quiet)
        fprintf(stderr, "parplan: warning: %s\n", sres->warning);
    free(sres);
    if (st != PP_OK) return pp_cli_fail(&err);
    const pp_work *w = &c->work;
    const pp_layout *l = &c->layout;
    /* Dropless routing over several expert-parallel ranks sends the busiest rank more than its
     * share; the peak is priced at the --moe-imbalance the user states (1: balanced, which is
     * exact for EP 1 and was measured there, but not for EP > 1, which no run here measured). */
    if (w->model.experts > 1 && l->ep > 1 && w->stack.moe_imbalance <= 1.0 &&
        w->stack.moe_capacity_factor <= 0 && !c->quiet)
        fprintf(stderr, "parplan: warning: dropless MoE over %lld EP ranks priced with balanced routing; "
                        "--moe-imbalance X adds the margin for a busiest rank that gets X times its share\n",
                (long long)l->ep);
    pp_mem_result *r = calloc(1, sizeof *r);
    if (!r) {
        pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        return pp_cli_fail(&err);
    }
    int rc = 0;
    st = pp_memory_estimate(w, l, r, &err);
    pp_time_result t;
    if (st == PP_OK) st = pp_time_estimate(w, l, &t, &err);
    if (st != PP_OK) {
        rc = pp_cli_fail(&err);
        goto done;
    }
    /* FSDP2 near the capacity (pp_memory_fsdp_tight): a warning, the model has no retry cost */
    if (r->fits && !c->quiet && pp_memory_fsdp_tight(w, r->peak_bytes, r->capacity_bytes))
        fprintf(stderr, "parplan: warning: allocator peak %.1f GiB is %.0f%% of the %.1f GiB usable: "
                        "PyTorch's caching allocator may free its cache and retry (2 of 6 such FSDP2 runs "
                        "measured on H200 did, 35-45%% slower steps); a smaller micro-batch or more "
                        "recompute leaves room\n",
                r->peak_bytes / 1073741824.0, 100.0 * r->peak_bytes / r->capacity_bytes,
                r->capacity_bytes / 1073741824.0);
    if (c->report) {
        int tgt = c->launch_target ? pp_name_lookup(pp_launch_target_names, PP_TARGET_COUNT, c->launch_target) : 0;
        pp_report_page pg = {.work = w, .layout = l, .time = &t, .mem = r, .launch_format = -1,
                             .launch_target = tgt > 0 ? (pp_launch_target)tgt : PP_TARGET_STANDARD,
                             .train_iters = c->train_iters};
        st = pp_report_write_page(c->report, "check", &pg, &err);
        if (st != PP_OK) {
            rc = pp_cli_fail(&err);
            goto done;
        }
    }
    if (c->json) check_json(c, w, l, r, &t);
    else check_table(c, w, l, r, &t);
done:
    free(r);
    return rc;
}
