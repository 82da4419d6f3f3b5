/* parplan calibrate LOG[:ARGS]... --gpu NAME [--profile BASE] [-o FILE] [--fit LIST]:
 * read real Megatron-LM training logs, rebuild each run, predict it with the time model, fit the
 * efficiency factors of that software stack on that cluster (planner/calibrate/calibrate.c), report the
 * error before, after and leave-one-out, and write them into a profile's `calibration:` section
 * that check/plan/estimate --profile then apply.
 *
 * A log that lacks Megatron's printed arguments block takes its arguments from its "# cmd" line,
 * or from a launch script named after a colon: run.log:run.sh. A log with no timed iteration after
 * the warm-up (a run that ran out of memory) is skipped with a warning line. A FILE.csv argument is
 * a table of PyTorch FSDP2 runs (tests/data/fsdp/runs.csv, format in pp_calibrate.h,
 * pp_calib_fsdp_csv_load): each timed row is one run of --framework fsdp. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "pp_calibrate.h"
#include "pp_probe_cache.h"
#include "pp_json.h"
#include "pp_memory.h"
#include "pp_yaml.h"

static const char *const fit_names[PP_CAL_COUNT] = {"gemm", "elementwise", "score", "layer", "optimizer",
                                                    "moe_layer", "expert"};

static pp_status parse_fit(const char *s, unsigned *mask, pp_error *err)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    *mask = 0;
    if (!strcmp(s, "none")) return PP_OK; /* evaluate the --profile's calibration, fit nothing */
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int i = pp_name_lookup(fit_names, PP_CAL_COUNT, tok);
        if (i < 0)
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                                "--fit expects none or a list of gemm,elementwise,score,layer,optimizer,moe_layer,expert, got '%s'", tok);
        *mask |= 1u << i;
    }
    if (!*mask) return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--fit needs at least one factor, or none");
    return PP_OK;
}

static const char *run_label(const pp_calib_run *r, char *buf, size_t n)
{
    pp_layout_label(&r->layout, buf, n);
    pp_strcatf(buf, n, " gbs%lld%s", (long long)r->work.gbs, r->uneven || r->vsplit ? " uneven" : "");
    return buf;
}

/* Predicted allocator peak of stage s (MiB), 0 when the memory model fails. */
static double predicted_peak_mib(const pp_calib_run *r, int64_t s, pp_mem_result *mem)
{
    pp_layout l = pp_calib_run_layout(r);
    pp_error e;
    if (pp_memory_estimate(&r->work, &l, mem, &e) != PP_OK || s >= mem->n_stages) return 0;
    return mem->stages[s].peak_bytes / 1048576.0;
}

/* Write the profile: the base profile's text without its `calibration:` section (or the two
 * required keys), then the new section; to a temporary file renamed over the target, so that an
 * interrupted run never leaves half a profile. Re-read afterwards to check it loads. */
static pp_status write_profile(const char *out, const char *base_path, const pp_gpu *gpu, const char *section,
                               const pp_calibration *cal, const pp_calib_run *runs, int n, pp_error *err)
{
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out, (long)getpid());
    FILE *f = fopen(tmp, "w");
    char *text = NULL;
    size_t len = 0;
    pp_status st = PP_OK;
    if (!f) return pp_error_set(err, PP_ERR_RUNTIME, out, 0, 0, "cannot write: %s", strerror(errno));
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    if (base_path) {
        if ((st = pp_yaml_read_file(base_path, &text, &len, err))) goto fail;
        bool skip = false;
        for (size_t i = 0; i < len;) {
            size_t j = i;
            while (j < len && text[j] != '\n') j++;
            const char *s = text + i;
            size_t k = j - i;
            bool top = k > 0 && s[0] != ' ' && s[0] != '\t' && s[0] != '#' && s[0] != '-';
            size_t sl = strlen(section);
            if (top) skip = k > sl && !strncmp(s, section, sl) && s[sl] == ':';
            if (!skip) {
                fwrite(s, 1, k, f);
                fputc('\n', f);
            }
            i = j + 1;
        }
    } else {
        fprintf(f, "# Written by parplan calibrate: no measured records, the catalog's figures for %s with\n"
                   "# the calibration below.\n",
                gpu->name);
        fprintf(f, "gpu: \"%s\"\nmeasured: \"%s\"\n", gpu->full_name[0] ? gpu->full_name : gpu->name, date);
    }
    fprintf(f, "%s:\n", section);
    fprintf(f, "  gemm_scale: %.6g\n  elementwise_scale: %.6g\n  score_bytes: %.6g\n  layer_overhead_us: %.6g\n"
               "  optimizer_scale: %.6g\n  moe_layer_overhead_us: %.6g\n  expert_overhead_us: %.6g\n",
            cal->gemm_scale, cal->elementwise_scale, cal->score_bytes, cal->layer_overhead_s * 1e6,
            cal->optimizer_scale, cal->moe_layer_overhead_s * 1e6, cal->expert_overhead_s * 1e6);
    fprintf(f, "  runs: %lld\n  mape_before_pct: %.4g\n  mape_after_pct: %.4g\n", (long long)cal->runs,
            cal->mape_before, cal->mape_after);
    if (cal->mape_loo >= 0) fprintf(f, "  mape_loo_pct: %.4g\n", cal->mape_loo);
    fprintf(f, "  stack: \"%s\"\n  fitted: \"%s\"\n  logs:\n", cal->stack, date);
    for (int i = 0; i < n; i++) fprintf(f, "    - \"%s\"\n", runs[i].name);
    if (fclose(f)) {
        f = NULL;
        st = pp_error_set(err, PP_ERR_RUNTIME, out, 0, 0, "cannot write: %s", strerror(errno));
        goto fail;
    }
    f = NULL;
    pp_profile check;
    if ((st = pp_profile_load_file(&check, tmp, err))) goto fail;
    pp_profile_free(&check);
    if (rename(tmp, out)) {
        st = pp_error_set(err, PP_ERR_RUNTIME, out, 0, 0, "cannot write: %s", strerror(errno));
        goto fail;
    }
    free(text);
    return PP_OK;
fail:
    if (f) fclose(f);
    remove(tmp);
    free(text);
    return st;
}

/* calibrate --probe-cache FILE: the measured layer of every run (PP_ERR_INPUT naming the first that
 * has none), and the base for the fit: the base profile (or none) with its probe_calibration as
 * the calibration in effect and the cache's optimizer sweep as its optimizer records. */
static pp_status probe_base(const char *path, const pp_gpu *gpu, pp_calib_run *runs, int n, const pp_profile *base,
                            pp_profile *out, pp_prof_optimizer **opt_out, pp_error *err)
{
    pp_probe_cache pc;
    memset(&pc, 0, sizeof pc);
    pp_status st = PP_OK;
    const char *g = gpu->full_name[0] ? gpu->full_name : gpu->name;
    if ((st = pp_probe_cache_load(&pc, path, err))) return st;
    for (int i = 0; i < n; i++) {
        char key[192];
        pp_layout l = pp_calib_run_layout(&runs[i]);
        const pp_model *m = &runs[i].work.model;
        if (pp_model_is_moe(m) || pp_model_is_mla(m)) {
            /* plan --probe measures their layers in parts (pp_time_layer_compose); the cache's whole
             * layer under this key would be an MoE model's dense layer, not its MoE one */
            st = pp_error_set(err, PP_ERR_INPUT, path, 0, 0,
                              "%s is an %s model: --probe-cache fits on layers measured whole (dense models)",
                              runs[i].name, pp_model_is_moe(m) ? "MoE" : "MLA");
            goto done;
        }
        pp_probe_cache_layer_key(&runs[i].work, &l, key, sizeof key);
        const pp_probe_cache_entry *e = pp_probe_cache_get(&pc, g, key);
        if (!e || !(e->a > 0) || !(e->b > 0)) {
            st = pp_error_set(err, PP_ERR_INPUT, path, 0, 0,
                              "no measured layer for %s (\"%s\" on \"%s\"): measure it with plan --probe on that GPU",
                              runs[i].name, key, g);
            goto done;
        }
        runs[i].probe_fwd_s = e->a * 1e-3;
        runs[i].probe_fwdbwd_s = e->b * 1e-3;
    }
    if (base) {
        *out = *base; /* shallow: base keeps its arrays */
        out->calibration = base->probe_calibration;
    } else {
        memset(out, 0, sizeof *out);
        pp_calibration_init(&out->calibration);
    }
    st = pp_probe_cache_optimizer_rows(&pc, g, opt_out, &out->n_optimizer, err);
    out->optimizer = *opt_out;
done:
    pp_probe_cache_free(&pc);
    return st;
}

int pp_cmd_calibrate(pp_cli *c)
{
    pp_error err = {0};
    pp_calib_run *runs = NULL;
    pp_profile base;
    bool have_base = false;
    pp_calib_result res;
    pp_prof_optimizer *popt = NULL;
    pp_mem_result *mem = NULL;
    int rc = 0, n = 0;
    memset(&res, 0, sizeof res);
    pp_calib_params params;
    pp_calib_params_init(&params);
    if (c->fit && parse_fit(c->fit, &params.fit_mask, &err)) return pp_cli_fail(&err);
    if (c->npos < 1) {
        fprintf(stderr, "parplan: give Megatron-LM logs to calibrate on (parplan calibrate --help)\n");
        return 2;
    }
    /* before the logs are read: a missing cache would otherwise load as an empty one */
    if (c->probe_cache && access(c->probe_cache, R_OK)) {
        pp_error_set(&err, PP_ERR_INPUT, c->probe_cache, 0, 0, "--probe-cache: cannot read: %s", strerror(errno));
        return pp_cli_fail(&err);
    }
    if (pp_cli_catalog(c, &err)) return pp_cli_fail(&err);
    if (c->profile_arg) {
        if (pp_profile_load_file(&base, c->profile_arg, &err)) return pp_cli_fail(&err);
        have_base = true;
    }
    pp_gpu gpu;
    if (c->gpu_arg) {
        if (pp_gpu_resolve(&gpu, &c->cat, c->gpu_arg, &err)) goto fail;
    } else {
        /* the base profile names the device as the driver does: find it in the catalog */
        bool found = false;
        for (int i = 0; have_base && i < c->cat.n_gpus && !found; i++)
            if (c->cat.gpus[i].full_name[0] && !strcmp(c->cat.gpus[i].full_name, base.gpu)) {
                gpu = c->cat.gpus[i];
                found = true;
            }
        if (!found) {
            pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0, "--gpu is required: the logs do not name the GPU%s",
                         have_base ? " and the profile's is not in the catalog" : "");
            goto fail;
        }
    }
    runs = calloc((size_t)c->npos, sizeof *runs);
    mem = calloc(1, sizeof *mem);
    if (!runs || !mem) {
        pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        goto fail;
    }
    int cap = c->npos;
    for (int i = 0; i < c->npos; i++) {
        size_t plen = strlen(c->pos[i]);
        if (plen > 4 && !strcmp(c->pos[i] + plen - 4, ".csv")) {
            /* FSDP2 runs (tests/data/fsdp/runs.csv format, pp_calib_fsdp_csv_load): every timed row */
            pp_calib_run *rows = NULL;
            int nr = 0;
            if (pp_calib_fsdp_csv_load(c->pos[i], &gpu, &rows, &nr, &err)) goto fail;
            pp_calib_run *grown = realloc(runs, (size_t)(cap + nr) * sizeof *runs);
            if (!grown) {
                free(rows);
                pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
                goto fail;
            }
            runs = grown;
            cap += nr;
            for (int k = 0; k < nr; k++) {
                if (rows[k].oom) {
                    fprintf(stderr, "parplan: warning: skipped %s: it ran out of memory (no step time)\n", rows[k].name);
                    continue;
                }
                if (rows[k].alloc_retries > 0) {
                    /* freeing the allocator's cache and retrying costs device synchronisations and
                     * page remapping the time model does not have: not the stack's pace */
                    fprintf(stderr, "parplan: warning: skipped %s: the allocator retried %lld times (at the edge of "
                                    "the memory)\n", rows[k].name, (long long)rows[k].alloc_retries);
                    continue;
                }
                if (n > 0 && strcmp(rows[k].stack, runs[0].stack)) {
                    pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0,
                                 "calibrate fits one software stack at a time: %s ran '%s', %s ran '%s'", runs[0].name,
                                 runs[0].stack, rows[k].name, rows[k].stack);
                    free(rows);
                    goto fail;
                }
                runs[n++] = rows[k];
            }
            free(rows);
            continue;
        }
        /* LOG or LOG:ARGS (a name with a colon that exists as a file is a log) */
        char logp[1024];
        const char *argsp = NULL;
        snprintf(logp, sizeof logp, "%s", c->pos[i]);
        char *colon = strrchr(logp, ':');
        if (colon && access(logp, R_OK) != 0) {
            *colon = 0;
            argsp = c->pos[i] + (colon - logp) + 1;
        }
        pp_mlog log;
        if (pp_mlog_load(&log, logp, argsp, &err)) goto fail;
        int used = 0;
        pp_mlog_step_ms(&log, PP_CALIB_WARMUP_ITERS, &used);
        if (used == 0) {
            fprintf(stderr, "parplan: warning: skipped %s: no timed iteration after the %d warm-up ones (%d in all: "
                            "not a training log, or the run stopped early, e.g. out of memory)\n",
                    logp, PP_CALIB_WARMUP_ITERS, log.n_iter);
            pp_mlog_free(&log);
            continue;
        }
        pp_status st = pp_calib_run_init(&runs[n], &log, &gpu, &err);
        pp_mlog_free(&log);
        if (st) goto fail;
        if (n > 0 && strcmp(runs[n].stack, runs[0].stack)) {
            pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0,
                         "calibrate fits one software stack at a time: %s ran '%s', %s ran '%s'", runs[0].name,
                         runs[0].stack, runs[n].name, runs[n].stack);
            goto fail;
        }
        n++;
    }
    if (n == 0) {
        pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0, "none of the %d logs has a timed iteration after the warm-up",
                     c->npos);
        goto fail;
    }
    if (!c->fit) params.fit_mask = pp_calib_default_mask(runs, n);
    /* On measured layers gemm_scale would only scale the modelled embedding and output GEMMs, a few
     * percent of a step: not identified by step times (on the 19 H200 logs the fit pushes it to
     * its bound, 2, for 0.5% less error in-sample and none left out). Not fitted by default. */
    if (!c->fit && c->probe_cache) params.fit_mask &= ~(1u << PP_CAL_GEMM);
    /* --probe-cache: every run's layer as parplan-probe measured it (and the optimizer sweep) */
    pp_profile pbase;
    const pp_profile *fit_base = have_base ? &base : NULL;
    if (c->probe_cache) {
        if ((rc = probe_base(c->probe_cache, &gpu, runs, n, have_base ? &base : NULL, &pbase, &popt, &err))) goto fail;
        fit_base = &pbase;
    }
    if (pp_calib_fit(runs, n, fit_base, &params, &res, &err)) goto fail;

    const pp_calibration *cal = &res.cal;
    if (c->json) {
        pp_json j;
        pp_json_init(&j, stdout, true);
        pp_json_obj_begin(&j);
        pp_json_kstr(&j, "gpu", gpu.name);
        pp_json_kstr(&j, "stack", cal->stack);
        pp_json_kint(&j, "runs", n);
        pp_json_knum(&j, "mape_before_pct", res.mape_before);
        pp_json_knum(&j, "mape_after_pct", res.mape_after);
        if (res.mape_loo >= 0) pp_json_knum(&j, "mape_loo_pct", res.mape_loo);
        pp_json_knum(&j, "max_error_before_pct", res.max_abs_before);
        pp_json_knum(&j, "max_error_after_pct", res.max_abs_after);
        if (res.mape_loo >= 0) pp_json_knum(&j, "max_error_loo_pct", res.max_abs_loo);
        pp_json_key(&j, "calibration");
        pp_json_obj_begin(&j);
        pp_json_knum(&j, "gemm_scale", cal->gemm_scale);
        pp_json_knum(&j, "elementwise_scale", cal->elementwise_scale);
        pp_json_knum(&j, "score_bytes", cal->score_bytes);
        pp_json_knum(&j, "layer_overhead_us", cal->layer_overhead_s * 1e6);
        pp_json_knum(&j, "optimizer_scale", cal->optimizer_scale);
        pp_json_knum(&j, "moe_layer_overhead_us", cal->moe_layer_overhead_s * 1e6);
        pp_json_knum(&j, "expert_overhead_us", cal->expert_overhead_s * 1e6);
        pp_json_key(&j, "fitted");
        pp_json_arr_begin(&j);
        for (int k = 0; k < PP_CAL_COUNT; k++)
            if (params.fit_mask & (1u << k)) pp_json_str(&j, fit_names[k]);
        pp_json_arr_end(&j);
        pp_json_obj_end(&j);
        pp_json_key(&j, "logs");
        pp_json_arr_begin(&j);
        for (int i = 0; i < n; i++) {
            const pp_calib_run *r = &runs[i];
            char lab[160];
            pp_json_obj_begin(&j);
            pp_json_kstr(&j, "name", r->name);
            pp_json_kstr(&j, "layout", run_label(r, lab, sizeof lab));
            pp_json_kint(&j, "gpus", r->work.gpus);
            pp_json_kint(&j, "iterations_timed", r->iters_used);
            pp_json_knum(&j, "measured_step_s", r->measured_step_s);
            pp_json_knum(&j, "predicted_before_s", res.before_s[i]);
            pp_json_knum(&j, "predicted_after_s", res.after_s[i]);
            if (res.loo_s) pp_json_knum(&j, "predicted_loo_s", res.loo_s[i]);
            pp_json_key(&j, "stages");
            pp_json_arr_begin(&j);
            for (int64_t s = 0; s < r->n_stages; s++) {
                pp_json_obj_begin(&j);
                pp_json_kint(&j, "stage", s);
                if (r->stage_max_alloc_mib[s] > 0) pp_json_knum(&j, "max_allocated_mib", r->stage_max_alloc_mib[s]);
                double pm = predicted_peak_mib(r, s, mem);
                if (pm > 0) pp_json_knum(&j, "predicted_peak_mib", pm);
                pp_json_obj_end(&j);
            }
            pp_json_arr_end(&j);
            pp_json_obj_end(&j);
        }
        pp_json_arr_end(&j);
        if (c->output) pp_json_kstr(&j, "profile", c->output);
        pp_json_obj_end(&j);
        pp_json_end(&j);
    } else {
        printf("parplan calibrate: %d run%s on %s (%s); step time = median of the iterations after the first %d\n\n",
               n, n == 1 ? "" : "s", gpu.name, cal->stack, PP_CALIB_WARMUP_ITERS);
        printf("%-28s %-34s %9s %9s %7s %9s %7s %9s %7s %10s %10s\n", "log", "layout", "meas. ms", "model ms", "err",
               "calib. ms", "err", "LOO ms", "err", "maxalloc0", "pred. MiB");
        for (int i = 0; i < n; i++) {
            const pp_calib_run *r = &runs[i];
            char lab[160], loo[16] = "-", looe[16] = "-";
            double ms = r->measured_step_s * 1e3;
            if (res.loo_s) {
                snprintf(loo, sizeof loo, "%.1f", res.loo_s[i] * 1e3);
                snprintf(looe, sizeof looe, "%+.1f%%", 100 * (res.loo_s[i] / r->measured_step_s - 1));
            }
            printf("%-28.28s %-34.34s %9.1f %9.1f %+6.1f%% %9.1f %+6.1f%% %9s %7s %10.0f %10.0f\n", r->name,
                   run_label(r, lab, sizeof lab), ms, res.before_s[i] * 1e3,
                   100 * (res.before_s[i] / r->measured_step_s - 1), res.after_s[i] * 1e3,
                   100 * (res.after_s[i] / r->measured_step_s - 1), loo, looe, r->stage_max_alloc_mib[0],
                   predicted_peak_mib(r, 0, mem));
        }
        printf("\nstep-time MAPE: model %.1f%% (max %.1f%%) -> calibrated %.1f%% (max %.1f%%)", res.mape_before,
               res.max_abs_before, res.mape_after, res.max_abs_after);
        if (res.mape_loo >= 0)
            printf("; leave-one-out %.1f%% (max %.1f%%): each log predicted by a fit without it", res.mape_loo,
                   res.max_abs_loo);
        printf("\nfactors: gemm_scale %.3g, elementwise_scale %.3g, score_bytes %.3g, layer_overhead_us %.3g, "
               "optimizer_scale %.3g, moe_layer_overhead_us %.3g, expert_overhead_us %.3g (fitted:",
               cal->gemm_scale, cal->elementwise_scale, cal->score_bytes, cal->layer_overhead_s * 1e6,
               cal->optimizer_scale, cal->moe_layer_overhead_s * 1e6, cal->expert_overhead_s * 1e6);
        for (int k = 0; k < PP_CAL_COUNT; k++)
            if (params.fit_mask & (1u << k)) printf(" %s", fit_names[k]);
        printf("%s)\n", params.fit_mask ? "" : " none, the --profile's calibration");
        printf("(maxalloc0: measured max allocated of stage 0, MiB; pred.: the memory model's peak, not fitted)\n");
    }
    if (c->output) {
        if (write_profile(c->output, c->profile_arg, &gpu, c->probe_cache ? "probe_calibration" : "calibration", cal,
                          runs, n, &err))
            goto fail;
        if (!c->json && !c->quiet) printf("wrote %s (use it with --profile)\n", c->output);
    }
    goto done;
fail:
    rc = pp_cli_fail(&err);
done:
    pp_calib_result_free(&res);
    free(popt);
    if (have_base) pp_profile_free(&base);
    free(runs);
    free(mem);
    return rc;
}
