/* parplan launch: the launch config of one layout (frameworks/launch*.c). Also pp_launch_emit,
 * which plan --emit FORMAT calls for its best layout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pp_json.h"
#include "pp_launch.h"
#include "pp_run.h"

static pp_status format_lookup(const char *name, pp_launch_format *fmt, pp_error *err)
{
    if (!name)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "--format is required: " PP_LAUNCH_FORMAT_LIST);
    int i = pp_name_lookup(pp_launch_format_names, PP_LAUNCH_COUNT, name);
    if (i < 0)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "--format expects " PP_LAUNCH_FORMAT_LIST ", got '%s'", name);
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

int pp_launch_emit(pp_cli *c, const pp_work *w, const pp_layout *l, const char *format, const char *stages)
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
    /* The run check resolves for the same layout: the script's layout and its header's figures
     * are that run's (stage split, recompute as the framework says it, peak and reserve of the
     * fullest stage). */
    pp_run *run = calloc(1, sizeof *run);
    if (!run) {
        pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        return pp_cli_fail(&err);
    }
    pp_run_opts ro = {.stages = stages, .given_split = "plan"};
    st = pp_run_build(w, l, &ro, run, &err);
    if (st != PP_OK) {
        free(run);
        return pp_cli_fail(&err);
    }
    p.work = w;
    p.layout = &run->layout;
    p.train_iters = c->train_iters;
    p.peak_bytes = run->need_peak_bytes;
    p.reserved_bytes = run->need_reserved_bytes;
    p.capacity_bytes = run->capacity_bytes;
    p.step_time_s = run->time.step_time_s;
    p.samples_per_s = run->time.samples_per_s;
    if (c->model_arg && !strncmp(w->model.source, "Hugging Face config.json", 24)) p.hf_config_path = c->model_arg;
    st = pp_launch_write(fmt, &p, c->output ? NULL : stdout, c->output, &err);
    if (st != PP_OK) {
        free(run);
        return pp_cli_fail(&err);
    }
    if (!c->quiet) {
        for (int i = 0; i < run->n_notes; i++) fprintf(stderr, "parplan: warning: %s\n", run->notes[i]);
        if (!run->fits)
            fprintf(stderr, "parplan: warning: the layout is predicted not to fit (%s); writing the config anyway\n",
                    run->mem.why[0] ? run->mem.why : "out of memory");
    }
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
        char path[1024];
        for (const char *const *f = pp_launch_files(fmt); *f; f++)
            fprintf(stderr, " %s", pp_path_join(c->output, *f, path, sizeof path));
        fprintf(stderr, "\n");
    }
    free(run);
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
    return pp_launch_emit(c, &c->work, &c->layout, c->format, c->stages);
}
