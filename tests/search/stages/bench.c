/* Solve times of the stage MILP on the synthetic costs of synth.h, by pipeline depth;
 * then layers of several kinds (the cut formulation) at DeepSeek-V3's size (61 layers, 16
 * stages) and Llama 4 Maverick's (48 layers), synthetic and from the models (tests/data/stages).
 * Benchmark: reports rates, asserts only that each solve proved an optimum (or fell back with a
 * warning), never a wall-clock figure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pp_load.h"
#include "pp_stages.h"
#include "synth.h"
#include "tap.h"
#include "work.h"

static pp_stages_costs C;
static pp_stages_result R;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Synthetic by-kind instances: DeepSeek-V3-like (3 dense, 58 MoE, MTP 1) and Maverick-like
 * (alternating dense/MoE, every 4th layer global) on 16 and 8 stages; the device at 1.2x /
 * 0.9x / 0.8x the uniform split's largest stage without recompute (below 1 only recompute or an
 * uneven split fits). Each solved 20 times with the DP's help, once by GLPK alone (milp_only,
 * 2 s limit: what the DP's incumbent, bounds and cuts save). */
static void bench_kinds_synthetic(void)
{
    const struct { const char *name; int64_t L, p; synth_kinds k; } sh[] = {
        {"deepseek-v3-like", 61, 16, {3, 1, 0, 1, 2.5, 3.0, 1.3, 1.0}},
        {"maverick-like", 48, 16, {0, 2, 4, 0, 2.0, 8.0, 1.2, 0.7}},
        {"deepseek-v3-like", 61, 8, {3, 1, 0, 1, 2.5, 3.0, 1.3, 1.0}},
    };
    for (size_t a = 0; a < sizeof sh / sizeof sh[0]; a++)
        for (int tight = 0; tight < 3; tight++) {
            synth_work s;
            synth_work_256k(&s);
            s.layers = sh[a].L, s.stages = sh[a].p, s.microbatches = 4 * sh[a].p, s.hidden = 7168;
            s.tp = 1, s.vocab = 129280, s.allow_recompute = tight > 0, s.capacity_bytes = 1e15;
            synth_kind_costs(&s, &sh[a].k, &C);
            pp_stages_result U;
            pp_stages_uniform(&C, &U);
            double need = 0;
            for (int64_t j = 0; j < s.stages; j++) need = fmax(need, U.stage_mem_bytes[j]);
            s.capacity_bytes = need * (tight == 0 ? 1.2 : tight == 1 ? 0.9 : 0.8);
            synth_kind_costs(&s, &sh[a].k, &C);
            C.uniform_recompute = tight ? -1 : 0;
            pp_stages_params prm;
            pp_stages_params_init(&prm);
            int reps = 20, optimal = 0, fallback = 0;
            double tot = 0, worst = 0;
            for (int i = 0; i < reps; i++) {
                pp_error err = {0};
                if (pp_stages_solve_costs(&C, &prm, &R, &err) != PP_OK) break;
                tot += R.solve_time_s;
                worst = fmax(worst, R.solve_time_s);
                optimal += R.status == PP_STAGES_OPTIMAL;
                fallback += R.status == PP_STAGES_FALLBACK && R.warning[0];
            }
            double obj = R.pipeline_time_s, gain = R.uniform_fits ? 1 - R.pipeline_time_s / R.uniform_pipeline_time_s : 0;
            bool uniform_fits = R.uniform_fits;
            bool ok = optimal + fallback == reps;
            pp_stages_params bare = prm;
            bare.milp_only = true;
            bare.time_limit_ms = 2000;
            pp_error err = {0};
            pp_stages_solve_costs(&C, &bare, &R, &err);
            tap_ok(ok, "by kind, %s L=%lld p=%lld, device %.1fx, recompute %s: %d/%d optimal, mean "
                   "%.3f ms, worst %.3f ms; gain over uniform %.1f%%%s; GLPK alone: %s in %.1f ms%s",
                   sh[a].name, (long long)sh[a].L, (long long)sh[a].p,
                   tight == 0 ? 1.2 : tight == 1 ? 0.9 : 0.8, tight ? "on " : "off", optimal, reps,
                   1e3 * tot / reps, 1e3 * worst, 100 * gain, uniform_fits ? "" : " (uniform does not fit)",
                   pp_stages_status_names[R.status], 1e3 * R.solve_time_s,
                   R.status == PP_STAGES_OPTIMAL && fabs(R.pipeline_time_s - obj) > 1e-6 * obj
                       ? " (a different optimum!)" : "");
        }
}

/* From the models: DeepSeek-V3 (61 layers, MTP 1) and Maverick-like at 48 layers, pp 8 and 16,
 * recompute none and full: pp_stages_solve end to end (costs from the memory and time models,
 * their per-kind check, the MILP), 20 times each. */
static void bench_kinds_models(void)
{
    if (!work_catalog()) {
        printf("ok %d - # SKIP no catalog\n", ++tap_n);
        return;
    }
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    const struct { const char *file; int64_t layers, pp, ep, tp, gpus; bool sp; } mc[] = {
        {"deepseek-v3.yaml", 0, 16, 64, 1, 1024, false},
        {"deepseek-v3.yaml", 0, 8, 64, 1, 512, false},
        {"maverick-like.yaml", 48, 16, 32, 2, 1024, true},
    };
    for (size_t a = 0; a < sizeof mc / sizeof mc[0]; a++)
        for (int rc = 0; rc < 2; rc++) {
            pp_work w;
            if (!work_make(&w, "llama3-8b", "h100-sxm", mc[a].gpus, 1024, 0, 0, 0)) continue;
            char path[1024];
            snprintf(path, sizeof path, "%s/tests/data/stages/%s", src ? src : ".", mc[a].file);
            pp_error err = {0};
            pp_model_init(&w.model);
            if (pp_model_load_file(&w.model, path, &err) != PP_OK) {
                tap_ok(0, "%s: %s", path, err.msg);
                continue;
            }
            if (mc[a].layers) w.model.layers = mc[a].layers;
            pp_model_validate(&w.model, &err);
            pp_layout l;
            pp_layout_init(&l);
            l.pp = mc[a].pp, l.ep = mc[a].ep, l.tp = mc[a].tp, l.sp = mc[a].sp, l.dist_opt = true;
            l.recompute = rc ? PP_RC_FULL : PP_RC_NONE;
            if (pp_layout_validate(&w, &l, &err) != PP_OK) {
                tap_ok(0, "%s: layout: %s", mc[a].file, err.msg);
                continue;
            }
            int reps = 20, optimal = 0;
            double tot = 0, worst = 0, glpk = 0;
            for (int i = 0; i < reps; i++) {
                double t0 = now_s();
                if (pp_stages_solve(&w, &l, NULL, &R, &err) != PP_OK) break;
                double dt = now_s() - t0;
                tot += dt;
                worst = fmax(worst, dt);
                glpk += R.solve_time_s;
                optimal += R.status == PP_STAGES_OPTIMAL || (R.status == PP_STAGES_FALLBACK && R.warning[0]);
            }
            tap_ok(optimal == reps, "by kind from the models, %s (%lld layers) pp %lld recompute %s: "
                   "%s, end to end mean %.2f ms, worst %.2f ms (the MILP %.2f ms of it); pipeline "
                   "%.3f s/step vs uniform %.3f s/step%s", mc[a].file, (long long)w.model.layers,
                   (long long)l.pp, rc ? "full" : "none", pp_stages_status_names[R.status],
                   1e3 * tot / reps, 1e3 * worst, 1e3 * glpk / reps, R.pipeline_time_s,
                   R.uniform_pipeline_time_s, R.uniform_fits ? "" : " (does not fit)");
        }
}

int main(void)
{
    const struct { int64_t p, L; } sizes[] = {
        /* realistic depths (PP <= 64, L <= 128), then synthetic extremes to show the limit */
        {2, 32}, {4, 30}, {4, 32}, {8, 64}, {16, 96}, {16, 126}, {32, 128}, {64, 128},
        {64, 256}, {128, 512},
    };
    for (int rc = 0; rc <= 1; rc++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            synth_work s;
            synth_work_256k(&s);
            s.stages = sizes[k].p, s.layers = sizes[k].L, s.microbatches = 4 * sizes[k].p;
            s.hidden = 8192, s.tp = 8, s.vocab = 128256, s.allow_recompute = rc;
            s.capacity_bytes = rc ? 40e9 : 80e9;
            synth_costs(&s, &C);
            if (rc) C.uniform_recompute = -1;
            pp_stages_params prm;
            pp_stages_params_init(&prm);
            int reps = sizes[k].p <= 16 ? 50 : sizes[k].p <= 64 ? 5 : 2, optimal = 0, fallback = 0;
            double tot = 0, worst = 0;
            for (int i = 0; i < reps; i++) {
                pp_error err = {0};
                if (pp_stages_solve_costs(&C, &prm, &R, &err) != PP_OK) break;
                tot += R.solve_time_s;
                if (R.solve_time_s > worst) worst = R.solve_time_s;
                optimal += R.status == PP_STAGES_OPTIMAL;
                fallback += R.status == PP_STAGES_FALLBACK && R.warning[0];
            }
            tap_ok(optimal + fallback == reps,
                   "p=%3lld L=%4lld recompute %s: %d/%d optimal, mean %.3f ms, worst %.3f ms "
                   "(%.0f solves/s), gain over uniform %.1f%%%s",
                   (long long)sizes[k].p, (long long)sizes[k].L, rc ? "on " : "off", optimal, reps,
                   1e3 * tot / reps, 1e3 * worst, reps / tot,
                   R.uniform_fits ? 100 * (1 - R.pipeline_time_s / R.uniform_pipeline_time_s) : 0.0,
                   R.uniform_fits ? "" : " (uniform does not fit)");
        }
    bench_kinds_synthetic();
    bench_kinds_models();
    pp_stages_costs_free(&C);
    if (work_cat_loaded) pp_catalog_free(&work_cat);
    return tap_done();
}
