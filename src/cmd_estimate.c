/* parplan estimate: time and cost to train on a token budget with one layout, from
 * the layout's predicted throughput: steps = tokens / (gbs x seq), time = steps x step time,
 * GPU-hours = time x GPUs, cost = GPU-hours x price. Without layout flags (or a --megatron-args
 * file) the layout is plan's #1. A layout that does not fit is not priced as if it ran: the
 * verdict and the remedies (check's), exit status 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pp_json.h"
#include "pp_run.h"

int pp_cmd_estimate(pp_cli *c)
{
    pp_error err = {0};
    if (c->npos) {
        pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0, "estimate takes no positional argument, got '%s'", c->pos[0]);
        return pp_cli_fail(&err);
    }
    if (!(c->tokens > 0)) {
        pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0, "--tokens is required (e.g. --tokens 300e9)");
        return pp_cli_fail(&err);
    }
    /* without layout flags the layout is plan's: the default one (dp = all GPUs) is not checked */
    pp_status st = pp_cli_work(c, pp_request_fixed(&c->rq) != 0 || c->rq.megatron_args, &err);
    if (st != PP_OK) return pp_cli_fail(&err);
    const pp_work *w = &c->work;
    pp_run *run = calloc(1, sizeof *run);
    if (!run) {
        pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        return pp_cli_fail(&err);
    }
    /* no layout given: plan's #1 (the search check's remedies and plan share) */
    bool from_plan = !c->fixed && !c->margs;
    pp_layout chosen = c->layout;
    pp_run_plan_pick *pick = NULL;
    if (from_plan) {
        pick = calloc(1, sizeof *pick);
        st = pick ? pp_run_plan_best(w, pick, &err) : pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        if (st != PP_OK) {
            free(pick);
            free(run);
            return pp_cli_fail(&err);
        }
        if (pick->any) chosen = pick->best.layout; /* none fits: the closest, judged below */
    }
    /* the same run check resolves: --stages, a --megatron-args file's stages, else uniform */
    pp_run_opts ro = {.stages = c->stages, .given_split = from_plan ? "plan" : "megatron-args"};
    st = pp_run_build(w, &chosen, &ro, run, &err);
    if (st != PP_OK) {
        free(run);
        free(pick);
        return pp_cli_fail(&err);
    }
    if (!run->fits) {
        /* not priced as if it ran: the verdict and what makes it fit */
        pp_cli_remedies *rr = calloc(1, sizeof *rr);
        int rc = 1;
        if (!rr || pp_cli_remedies_find(c, &chosen, rr, &err) != PP_OK) {
            if (!rr) pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            rc = pp_cli_fail(&err);
        } else if (c->json) {
            pp_json j;
            pp_json_init(&j, stdout, true);
            pp_json_obj_begin(&j);
            pp_json_kstr(&j, "model", w->model.name);
            pp_json_kint(&j, "gpus", w->gpus);
            pp_json_knum(&j, "tokens", c->tokens);
            pp_json_key(&j, "days");
            pp_json_null(&j);
            pp_json_key(&j, "cost");
            pp_json_null(&j);
            pp_json_kstr(&j, "why", run->mem.why);
            pp_run_json_figures(&j, run);
            pp_cli_remedies_json(&j, c, rr);
            pp_json_obj_end(&j);
            pp_json_end(&j);
        } else {
            char lab[256], need[32], cap[32];
            printf("parplan estimate: %s on %lld x %s, %s%s: DOES NOT FIT (needs %s of %s per GPU); no time or cost "
                   "for a run that would not start\nwhy: %s\n",
                   w->model.name, (long long)w->gpus, w->gpu.name, pp_layout_label(&run->layout, lab, sizeof lab),
                   from_plan ? " (plan's closest)" : "", pp_fmt_bytes(run->need_bytes, need, sizeof need),
                   pp_fmt_bytes(run->capacity_bytes, cap, sizeof cap), run->mem.why);
            pp_cli_remedies_print(stdout, c, rr);
        }
        if (rc == 1)
            fprintf(stderr, "parplan: %s does not fit: no training time or cost (what would fit is on stdout)\n",
                    from_plan ? "no layout on these GPUs" : "the layout");
        free(rr);
        free(run);
        free(pick);
        return rc;
    }
    const pp_layout *l = &run->layout;
    const pp_time_result *t = &run->time;
    pp_train_cost tc;
    pp_train_cost_get(w, t->step_time_s, c->tokens, c->price_per_gpu_hour, &tc);
    const double tokens_per_step = tc.tokens_per_step, steps = tc.steps, train_s = tc.train_s;
    const double gpu_hours = tc.gpu_hours, cost = tc.cost;
    const bool priced = c->price_per_gpu_hour > 0;

    if (c->json) {
        pp_json j;
        pp_json_init(&j, stdout, true);
        pp_json_obj_begin(&j);
        pp_json_kstr(&j, "model", w->model.name);
        pp_json_kint(&j, "seq", w->model.seq);
        pp_json_kint(&j, "gbs", w->gbs);
        pp_json_knum(&j, "tokens", c->tokens);
        pp_json_knum(&j, "tokens_per_step", tokens_per_step);
        pp_json_kstr(&j, "layout_from", from_plan ? "plan" : "flags");
        pp_json_knum(&j, "steps", steps);
        pp_json_knum(&j, "train_time_s", train_s);
        pp_json_knum(&j, "days", train_s / 86400.0);
        pp_band_json(&j, w, "days_range", train_s / 86400.0);
        pp_json_knum(&j, "gpu_hours", gpu_hours);
        pp_json_kint(&j, "gpus", w->gpus);
        pp_json_key(&j, "price_per_gpu_hour");
        if (priced) pp_json_num(&j, c->price_per_gpu_hour);
        else pp_json_null(&j);
        pp_json_key(&j, "cost");
        if (priced) pp_json_num(&j, cost);
        else pp_json_null(&j);
        if (priced) pp_band_json(&j, w, "cost_range", cost);
        else {
            pp_json_key(&j, "cost_range");
            pp_json_null(&j);
        }
        pp_run_json_figures(&j, run);
        pp_gpu_json_effective(&j, &w->gpu);
        pp_json_obj_end(&j);
        pp_json_end(&j);
    } else {
        char lab[256], a[48], b[48], c2[48], d[48];
        printf("parplan estimate: %s on %s x %s, %s%s, global batch %s x %s tokens\n", w->model.name,
               pp_fmt_num((double)w->gpus, 6, a, sizeof a), w->gpu.name, pp_layout_label(l, lab, sizeof lab),
               from_plan ? " (plan's #1)" : "",
               pp_fmt_num((double)w->gbs, 6, b, sizeof b), pp_fmt_num((double)w->model.seq, 6, c2, sizeof c2));
        printf("  tokens            %s (%s steps of %s tokens)\n", pp_fmt_num(c->tokens, 4, a, sizeof a),
               pp_fmt_num(steps, 12, b, sizeof b), pp_fmt_num(tokens_per_step, 12, c2, sizeof c2));
        printf("  step time         %s   (%s samples/s, %s tokens/s)\n", pp_fmt_duration(t->step_time_s, a, sizeof a),
               pp_fmt_num(t->samples_per_s, 4, b, sizeof b), pp_fmt_num(t->tokens_per_s, 4, c2, sizeof c2));
        printf("  model TFLOP/s     %.1f per GPU, MFU %.1f%%\n", t->model_tflops_per_gpu, 100 * t->mfu);
        char band[64];
        printf("  time to train     %s (%s s; %s days by the %s band)\n", pp_fmt_duration(train_s, a, sizeof a),
               pp_fmt_num(train_s, 4, b, sizeof b), pp_band_text(w, train_s / 86400.0, 1, band, sizeof band),
               pp_band_for(w)->name);
        printf("  GPU-hours         %s\n", pp_fmt_num(gpu_hours, 4, a, sizeof a));
        if (priced)
            printf("  cost              %s at %s per GPU-hour (%s by the band)\n", pp_fmt_num(cost, 4, a, sizeof a),
                   pp_fmt_num(c->price_per_gpu_hour, 4, d, sizeof d), pp_band_text(w, cost, 0, band, sizeof band));
        char need[32], pk[32], rs[32], cap[32];
        printf("  memory            %s per GPU (peak %s + reserved %s) of %s: %s\n",
               pp_fmt_bytes(run->need_bytes, need, sizeof need), pp_fmt_bytes(run->need_peak_bytes, pk, sizeof pk),
               pp_fmt_bytes(run->need_reserved_bytes, rs, sizeof rs),
               pp_fmt_bytes(run->capacity_bytes, cap, sizeof cap), run->fits ? "fits" : "DOES NOT FIT");
    }
    if (!c->quiet)
        for (int i = 0; i < run->n_notes; i++) fprintf(stderr, "parplan: warning: %s\n", run->notes[i]);
    free(run);
    free(pick);
    return 0;
}
