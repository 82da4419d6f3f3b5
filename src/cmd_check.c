/* parplan check WORK LAYOUT: per-stage memory breakdown (the memory model, cost/memory.c), fits or
 * OOM per rank with the reason and what would make it fit, and the predicted step time (the
 * step-time model, cost/time.c).
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

#define GIB (1024.0 * 1024.0 * 1024.0)
#include "pp_run.h"
#include "pp_time.h"

static void check_json(const pp_cli *c, const pp_run *run, const pp_cli_remedies *rr)
{
    const pp_work *w = run->work;
    const pp_layout *l = &run->layout;
    const pp_mem_result *r = &run->mem;
    pp_json j;
    pp_json_init(&j, stdout, true);
    pp_json_obj_begin(&j);
    pp_json_kstr(&j, "model", w->model.name);
    pp_json_kstr(&j, "gpu", w->gpu.name);
    pp_gpu_json_effective(&j, &w->gpu);
    pp_json_kint(&j, "gpus", w->gpus);
    pp_json_kint(&j, "seq", w->model.seq);
    pp_json_key(&j, "layout");
    pp_json_obj_begin(&j);
    pp_layout_json_keys(&j, w, l);
    pp_json_kint(&j, "gbs", w->gbs);
    pp_json_kstr(&j, "framework", pp_framework_names[w->framework]);
    pp_json_kstr(&j, "attention", pp_attention_names[w->attention]);
    pp_json_kstr(&j, "stage_split", run->stage_split);
    pp_json_obj_end(&j);
    pp_cli_stack_json(&j, c);
    pp_run_json_figures(&j, run);
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
        pp_json_knum(&j, "peak_bytes", round(s->peak_bytes));
        pp_json_kbool(&j, "fits", s->fits);
        if (s->peak_moment) pp_json_kstr(&j, "peak_moment", s->peak_moment);
        if (s->peak_moment) pp_json_knum(&j, "cached_bytes", s->cached_bytes);
        pp_json_key(&j, "breakdown");
        pp_json_obj_begin(&j);
        pp_json_knum(&j, "weights", round(s->weights_bytes));
        pp_json_knum(&j, "grads", round(s->grads_bytes));
        pp_json_knum(&j, "optimizer", round(s->optimizer_bytes));
        pp_json_knum(&j, "activations", round(s->activations_bytes));
        pp_json_knum(&j, "transient", round(s->transient_bytes));
        pp_json_knum(&j, "reserved", round(s->reserved_bytes));
        pp_json_obj_end(&j);
        pp_json_obj_end(&j);
    }
    pp_json_arr_end(&j);
    pp_run_json_breakdown(&j, &run->time);
    if (rr) pp_cli_remedies_json(&j, c, rr);
    pp_json_obj_end(&j);
    pp_json_end(&j);
}

static void check_table(const pp_cli *c, const pp_run *run, const pp_cli_remedies *rr)
{
    const pp_work *w = run->work;
    const pp_layout *l = &run->layout;
    const pp_mem_result *r = &run->mem;
    const pp_time_result *t = &run->time;
    char b[12][24];
    pp_cli_work_line(stdout, "check", w);
    printf("layout: tp %lld pp %lld dp %lld vpp %lld cp %lld ep %lld etp %lld, mbs %lld, "
           "%lld micro-batches; %s%s%s, recompute %s",
           (long long)l->tp, (long long)l->pp, (long long)l->dp, (long long)l->vpp, (long long)l->cp,
           (long long)l->ep, (long long)pp_layout_etp(l), (long long)l->mbs,
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
    if (big->peak_moment) {
        printf("peak at: %s (FSDP2's step timeline)\n", big->peak_moment);
        printf("allocator: about %.1f GiB reserved at the peak when memory is not short (%.1f GiB cached beyond the "
               "allocated peak; freed and retried near the capacity)\n",
               (big->peak_bytes + big->cached_bytes) / GIB, big->cached_bytes / GIB);
    }
    if (!r->fits) printf("why: %s\n", r->why);
    if (rr) pp_cli_remedies_print(stdout, c, rr);
    char band[64];
    printf("%s %.3f s (%s s), %.2f samples/s, %.0f tokens/s, %.1f model TFLOP/s per GPU, MFU %.1f%%\n",
           r->fits ? "step time" : "step time were it to fit (it does not)", t->step_time_s,
           pp_band_text(&c->work, t->step_time_s, t->step_time_s < 10 ? 3 : 1, band, sizeof band), t->samples_per_s,
           t->tokens_per_s, t->model_tflops_per_gpu, 100.0 * t->mfu);
    /* FSDP2's Python host setting the pace (time_step.c, FSDP_HOST_*): said where it adds a tenth */
    if (t->host_s > 0.1 * t->step_time_s)
        printf("host: the GPU waits %.3f s of the step for FSDP2's Python (its own work %.3f s); more tokens a "
               "micro-batch use it better\n", t->host_s, t->step_time_s - t->host_s);
    const pp_band_row *bd = pp_band_for(&c->work);
    double flo, fhi; /* the band as factors of the prediction */
    pp_band_range(bd, 1.0, &flo, &fhi);
    if (bd->calibrate_rows)
        printf("(the step time's band: %+.0f%% to %+.0f%%, 5th to 95th percentile of the error on the %d published %s "
               "runs parplan was checked on)\n", 100 * (flo - 1), 100 * (fhi - 1), bd->calibrate_rows, bd->name);
    else
        printf("(the step time's band is the widest: no published run of this stack or GPU was checked)\n");
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
    pp_run *run = calloc(1, sizeof *run);
    if (!run) {
        pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        return pp_cli_fail(&err);
    }
    /* --stages ilp|auto: the stage MILP's split; uniform by default, or the uneven stages a
     * --megatron-args file gives (its --pipeline-model-parallel-layout) */
    pp_run_opts ro = {.stages = c->stages, .dump_ilp = c->dump_ilp,
                      .given_split = c->split && c->layout.vstage_layers == c->split ? "flags" : "megatron-args"};
    int rc = 0;
    st = pp_run_build(&c->work, &c->layout, &ro, run, &err);
    if (st != PP_OK) {
        rc = pp_cli_fail(&err);
        goto done;
    }
    if (!c->quiet)
        for (int i = 0; i < run->n_notes; i++) fprintf(stderr, "parplan: warning: %s\n", run->notes[i]);
    if (c->report) {
        int tgt = c->launch_target ? pp_name_lookup(pp_launch_target_names, PP_TARGET_COUNT, c->launch_target) : 0;
        pp_report_page pg = {.work = &c->work, .layout = &run->layout, .time = &run->time, .mem = &run->mem,
                             .launch_format = -1,
                             .launch_target = tgt > 0 ? (pp_launch_target)tgt : PP_TARGET_STANDARD,
                             .train_iters = c->train_iters};
        st = pp_report_write_page(c->report, "check", &pg, &err);
        if (st != PP_OK) {
            rc = pp_cli_fail(&err);
            goto done;
        }
    }
    /* what makes it fit: remedies, each run before it is shown */
    pp_cli_remedies *rr = NULL;
    if (!run->fits) {
        rr = calloc(1, sizeof *rr);
        if (!rr || pp_cli_remedies_find(c, &c->layout, rr, &err) != PP_OK) {
            if (!rr) pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            free(rr);
            rc = pp_cli_fail(&err);
            goto done;
        }
    }
    if (c->json) check_json(c, run, rr);
    else check_table(c, run, rr);
    free(rr);
    rc = run->fits ? 0 : 1; /* exit status: 0 fits, 1 does not, 2 bad input (pp_cli_fail) */
done:
    free(run);
    return rc;
}
