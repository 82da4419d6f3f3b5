/* parplan launch: the launch config of one layout (issue 6). Also pp_launch_emit, which
 * plan --emit FORMAT calls for its best layout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pp_json.h"
#include "pp_launch.h"
#include "pp_memory.h"
#include "pp_stages.h"
#include "pp_time.h"

static pp_status format_lookup(const char *name, pp_launch_format *fmt, pp_error *err)
{
    if (!name)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "--format is required: megatron|torchrun|slurm|deepspeed|nemo|torchtitan");
    int i = pp_name_lookup(pp_launch_format_names, PP_LAUNCH_COUNT, name);
    if (i < 0)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "--format expects megatron|torchrun|slurm|deepspeed|nemo|torchtitan, got '%s'", name);
    *fmt = (pp_launch_format)i;
    return PP_OK;
}

static pp_status target_lookup(const char *name, pp_launch_target *t, pp_error *err)
{
    if (!name) {
        *t = PP_TARGET_STANDARD;
        return PP_OK;
    }
    int i = pp_name_lookup(pp_launch_target_names, PP_TARGET_COUNT, name);
    if (i < 0)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "--launch-target expects standard|device-local, got '%s'", name);
    *t = (pp_launch_target)i;
    return PP_OK;
}

/* Predictions for the comment: the memory and time models. A model that fails at run time
 * leaves the figure "not predicted" with a warning; bad input is an error. The warnings are
 * collected in warn (printed once the config is written: a layout the format refuses is one
 * error line, not a warning and an error). */
static pp_status predict(const pp_work *w, const pp_layout *l, pp_launch_params *p, bool quiet,
                         char *warn, size_t warn_n, pp_error *err)
{
    FILE *ws = fmemopen(warn, warn_n, "w");
    if (ws) setvbuf(ws, NULL, _IONBF, 0);
    FILE *out = ws ? ws : stderr;
    pp_mem_result *mem = calloc(1, sizeof *mem);
    if (!mem) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    pp_error e = {0};
    pp_status st = pp_memory_estimate(w, l, mem, &e);
    if (st == PP_OK) {
        p->peak_bytes = mem->peak_bytes;
        p->capacity_bytes = mem->capacity_bytes;
        if (mem->largest_stage >= 0 && mem->largest_stage < mem->n_stages)
            p->reserved_bytes = mem->stages[mem->largest_stage].reserved_bytes;
        if (!mem->fits && !quiet)
            fprintf(out, "parplan: warning: the layout is predicted not to fit (%s); writing the "
                         "config anyway\n", mem->why[0] ? mem->why : "out of memory");
    } else if (st == PP_ERR_INPUT) {
        free(mem);
        *err = e;
        if (ws) fclose(ws);
        return st;
    } else if (!quiet) {
        fprintf(out, "parplan: warning: no memory prediction (%s)\n", e.msg);
    }
    free(mem);
    pp_time_result t;
    memset(&t, 0, sizeof t);
    e = (pp_error){0};
    st = pp_time_estimate(w, l, &t, &e);
    if (st == PP_OK) {
        p->step_time_s = t.step_time_s;
        p->samples_per_s = t.samples_per_s;
    } else if (st == PP_ERR_INPUT) {
        *err = e;
        if (ws) fclose(ws);
        return st;
    } else if (!quiet) {
        fprintf(out, "parplan: warning: no step-time prediction (%s)\n", e.msg);
    }
    if (ws) fclose(ws);
    return PP_OK;
}

int pp_launch_emit(pp_cli *c, const pp_work *w, const pp_layout *l, const char *format)
{
    pp_error err = {0};
    pp_launch_format fmt;
    pp_launch_params p;
    pp_launch_params_init(&p);
    pp_status st = format_lookup(format, &fmt, &err);
    if (st == PP_OK) st = target_lookup(c->launch_target, &p.target, &err);
    if (st == PP_OK && c->json && !c->output)
        st = pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0,
                          "--json needs -o DIR (the launch config itself goes to stdout otherwise)");
    if (st != PP_OK) return pp_cli_fail(&err);
    p.work = w;
    p.layout = l;
    p.train_iters = c->train_iters;
    char warn[2048] = "";
    if (c->model_arg && !strncmp(w->model.source, "Hugging Face config.json", 24)) p.hf_config_path = c->model_arg;
    st = predict(w, l, &p, c->quiet, warn, sizeof warn, &err);
    if (st == PP_OK) st = pp_launch_write(fmt, &p, c->output ? NULL : stdout, c->output, &err);
    if (st != PP_OK) return pp_cli_fail(&err);
    fputs(warn, stderr);
    if (c->json) {
        pp_json j;
        pp_json_init(&j, stdout, true);
        pp_json_obj_begin(&j);
        pp_json_kstr(&j, "format", pp_launch_format_names[fmt]);
        pp_json_kstr(&j, "target", pp_launch_target_names[p.target]);
        pp_json_kstr(&j, "output", c->output);
        pp_json_key(&j, "files");
        pp_json_arr_begin(&j);
        for (const char *const *f = pp_launch_files(fmt); *f; f++) pp_json_str(&j, *f);
        pp_json_arr_end(&j);
        pp_json_key(&j, "peak_bytes");
        if (p.peak_bytes >= 0) pp_json_num(&j, p.peak_bytes);
        else pp_json_null(&j);
        pp_json_key(&j, "step_time_s");
        if (p.step_time_s >= 0) pp_json_num(&j, p.step_time_s);
        else pp_json_null(&j);
        pp_json_key(&j, "samples_per_s");
        if (p.samples_per_s >= 0) pp_json_num(&j, p.samples_per_s);
        else pp_json_null(&j);
        pp_json_obj_end(&j);
        pp_json_end(&j);
    } else if (c->output && !c->quiet) {
        fprintf(stderr, "parplan: wrote");
        for (const char *const *f = pp_launch_files(fmt); *f; f++)
            fprintf(stderr, " %s/%s", c->output, *f);
        fprintf(stderr, "\n");
    }
    return 0;
}

int pp_cmd_launch(pp_cli *c)
{
    pp_error err = {0};
    pp_launch_format fmt;
    pp_launch_target target;
    /* the cheap checks first, so that a bad --format is reported before any loading */
    if (format_lookup(c->format, &fmt, &err) != PP_OK) return pp_cli_fail(&err);
    if (target_lookup(c->launch_target, &target, &err) != PP_OK) return pp_cli_fail(&err);
    if (c->npos) {
        pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0, "launch takes no positional argument, got '%s'",
                     c->pos[0]);
        return pp_cli_fail(&err);
    }
    if (pp_cli_work(c, true, &err) != PP_OK) return pp_cli_fail(&err);
    static int stage_layers[PP_MAX_STAGES], stage_recompute[PP_MAX_STAGES];
    if (c->stages && strcmp(c->stages, "uniform") != 0) {
        pp_stages_result *res = calloc(1, sizeof *res);
        if (!res) {
            pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            return pp_cli_fail(&err);
        }
        pp_status st = pp_stages_apply(&c->work, &c->layout, c->stages, NULL, stage_layers,
                                       stage_recompute, res, &err);
        if (st == PP_OK && res->warning[0] && !c->quiet)
            fprintf(stderr, "parplan: warning: %s\n", res->warning);
        free(res);
        if (st != PP_OK) return pp_cli_fail(&err);
    }
    return pp_launch_emit(c, &c->work, &c->layout, c->format);
}
