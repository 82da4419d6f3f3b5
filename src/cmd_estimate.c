/* parplan estimate: time and cost to train on a token budget with one layout (issue 4), from
 * the layout's predicted throughput: steps = tokens / (gbs x seq), time = steps x step time,
 * GPU-hours = time x GPUs, cost = GPU-hours x price. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pp_json.h"
#include "pp_memory.h"
#include "pp_time.h"

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
    pp_status st = pp_cli_work(c, true, &err);
    if (st != PP_OK) return pp_cli_fail(&err);
    const pp_work *w = &c->work;
    const pp_layout *l = &c->layout;

    pp_time_result t;
    st = pp_time_estimate(w, l, &t, &err);
    if (st != PP_OK) return pp_cli_fail(&err);
    /* Memory: a layout that does not fit still gets its estimate, with a warning. */
    pp_mem_result *mem = calloc(1, sizeof *mem);
    if (!mem) {
        pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        return pp_cli_fail(&err);
    }
    pp_error merr = {0};
    bool have_mem = pp_memory_estimate(w, l, mem, &merr) == PP_OK;

    const double tokens_per_step = (double)w->gbs * (double)w->model.seq;
    const double steps = ceil(c->tokens / tokens_per_step);
    const double train_s = steps * t.step_time_s;
    const double gpu_hours = train_s * (double)w->gpus / 3600.0;
    const bool priced = c->price_per_gpu_hour > 0;
    const double cost = gpu_hours * c->price_per_gpu_hour;

    if (c->json) {
        pp_json j;
        pp_json_init(&j, stdout, true);
        pp_json_obj_begin(&j);
        pp_json_knum(&j, "tokens", c->tokens);
        pp_json_knum(&j, "tokens_per_step", tokens_per_step);
        pp_json_knum(&j, "steps", steps);
        pp_json_knum(&j, "step_time_s", t.step_time_s);
        pp_json_knum(&j, "samples_per_s", t.samples_per_s);
        pp_json_knum(&j, "tokens_per_s", t.tokens_per_s);
        pp_json_knum(&j, "model_tflops_per_gpu", t.model_tflops_per_gpu);
        pp_json_knum(&j, "mfu", t.mfu);
        pp_json_knum(&j, "train_time_s", train_s);
        pp_json_knum(&j, "days", train_s / 86400.0);
        pp_json_knum(&j, "gpu_hours", gpu_hours);
        pp_json_kint(&j, "gpus", w->gpus);
        pp_json_key(&j, "price_per_gpu_hour");
        if (priced) pp_json_num(&j, c->price_per_gpu_hour);
        else pp_json_null(&j);
        pp_json_key(&j, "cost");
        if (priced) pp_json_num(&j, cost);
        else pp_json_null(&j);
        pp_json_key(&j, "fits");
        if (have_mem) pp_json_bool(&j, mem->fits);
        else pp_json_null(&j);
        pp_json_key(&j, "peak_bytes");
        if (have_mem) pp_json_num(&j, mem->peak_bytes);
        else pp_json_null(&j);
        pp_json_obj_end(&j);
        pp_json_end(&j);
    } else {
        char tok[64];
        printf("parplan estimate: %s on %lld x %s, tp %lld pp %lld dp %lld mbs %lld, global batch %lld\n",
               w->model.name, (long long)w->gpus, w->gpu.name, (long long)l->tp, (long long)l->pp,
               (long long)l->dp, (long long)l->mbs, (long long)w->gbs);
        snprintf(tok, sizeof tok, "%.4g", c->tokens);
        printf("  tokens            %s (%.0f steps of %.0f tokens)\n", tok, steps, tokens_per_step);
        printf("  step time         %.4g s   (%.4g samples/s, %.4g tokens/s)\n", t.step_time_s,
               t.samples_per_s, t.tokens_per_s);
        printf("  model TFLOP/s     %.1f per GPU, MFU %.1f%%\n", t.model_tflops_per_gpu, 100 * t.mfu);
        printf("  time to train     %.2f days (%.4g hours)\n", train_s / 86400.0, train_s / 3600.0);
        printf("  GPU-hours         %.4g\n", gpu_hours);
        if (priced)
            printf("  cost              %.4g at %.4g per GPU-hour\n", cost, c->price_per_gpu_hour);
        if (have_mem) {
            char pk[32], cap[32];
            printf("  memory            %s peak of %s per GPU: %s\n",
                   pp_fmt_bytes(mem->peak_bytes, pk, sizeof pk),
                   pp_fmt_bytes(mem->capacity_bytes, cap, sizeof cap), mem->fits ? "fits" : "DOES NOT FIT");
        }
    }
    if (have_mem && !mem->fits && !c->quiet)
        fprintf(stderr, "parplan: warning: the layout is predicted not to fit in memory (%s)\n",
                mem->why[0] ? mem->why : "out of memory");
    if (!have_mem && !c->quiet)
        fprintf(stderr, "parplan: warning: no memory prediction (%s)\n", merr.msg);
    free(mem);
    return 0;
}
