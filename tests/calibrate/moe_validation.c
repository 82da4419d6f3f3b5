/* MoE step times: `parplan calibrate` of the MoE factors (moe_layer_overhead_us, expert_overhead_us)
 * on real Megatron-LM MoE runs on one H200 (tests/data/megatron/runs_moe_time.csv and runs_moe.csv:
 * `--transformer-impl local`, experts as SequentialMLP, alltoall dispatcher, EP 1; 8 experts top-2,
 * 16 top-4 with a shared expert, 64 top-6 with shared experts and a dense first layer, 128 top-8
 * with QK-norm; micro-batch 1, 2 and 4), on top of the dense factors fitted on the dense runs
 * (tests/data/profiles/h200x2-megatron-local.yaml). A user's commands:
 *   parplan calibrate TRAIN.log... --gpu h200 --profile tests/data/profiles/h200x2-megatron-local.yaml \
 *       --fit moe_layer,expert -o tests/data/profiles/h200-megatron-local-moe.yaml
 *   parplan calibrate HELD_OUT.log... --gpu h200 --profile tests/data/profiles/h200-megatron-local-moe.yaml --fit none
 * Train: five of the ten-iteration runs; held out: the other five and the seven MoE runs of the
 * first list (five iterations, still settling). Prints every run's error; asserts the held-out
 * MAPE target (15%) and the ranking of the layouts that train the same batch.
 * argv[1], argv[2]: the directories the two log archives were extracted to. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_calibrate.h"
#include "pp_load.h"
#include "tap.h"

static const char *const train_logs[] = {"t_m8_b1", "t_fg_b1", "t_q_b2", "t_m16_b2", "t_m8_b4"};
static const char *const test_logs[] = {"t_m8_b1_m4", "t_m8_b2", "t_q_b1", "t_m16_b1", "t_fg_b2"};
static const char *const first_logs[] = {"m8_b1", "m8_b2", "m8_b4", "fg_b1", "fg_b2", "q_b1", "q_b2"};
#define N_TRAIN 5
#define N_TEST 5
#define N_FIRST 7

static int load(pp_calib_run *runs, const char *dir, const char *const *names, int n, const pp_gpu *gpu)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        char lp[1024];
        snprintf(lp, sizeof lp, "%s/%s.log", dir, names[i]);
        pp_mlog log;
        pp_error err = {0};
        if (pp_mlog_load(&log, lp, NULL, &err) || pp_calib_run_init(&runs[k], &log, gpu, &err)) {
            tap_ok(0, "%s: %s", lp, err.msg);
            if (log.path[0]) pp_mlog_free(&log);
            continue;
        }
        pp_mlog_free(&log);
        k++;
    }
    return k;
}

/* Predict runs[0..n) with prof; print each; return the MAPE (percent). */
static double predict(const pp_calib_run *runs, int n, const pp_profile *prof, const char *what, double *pred,
                      double *worst)
{
    double sum = 0;
    *worst = 0;
    for (int i = 0; i < n; i++) {
        double b = 0, a = 0, m = runs[i].measured_step_s;
        pp_error err = {0};
        pp_calib_predict(&runs[i], prof, NULL, &b, &err);
        pp_calib_predict(&runs[i], prof, &prof->calibration, &a, &err);
        pred[i] = a;
        double e = a / m - 1;
        tap_diag("%s: %-12s %-24s meas %7.1f ms, uncalibrated %7.1f (%+.1f%%), calibrated %7.1f (%+.1f%%)", what,
                 runs[i].name, runs[i].stack, m * 1e3, b * 1e3, 100 * (b / m - 1), a * 1e3, 100 * e);
        sum += fabs(e);
        if (fabs(e) > *worst) *worst = fabs(e);
    }
    *worst *= 100;
    return 100 * sum / n;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MOE_TIME_LOG_DIR MOE_LOG_DIR\n", argv[0]);
        return 2;
    }
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    if (!src) src = ".";
    char path[1024];
    pp_gpu gpu;
    pp_error err = {0};
    snprintf(path, sizeof path, "%s/models.d/gpus/h200.yaml", src);
    if (pp_gpu_load_file(&gpu, path, &err)) {
        tap_ok(0, "h200 loads: %s", err.msg);
        return tap_done();
    }
    static pp_calib_run train[N_TRAIN], test[N_TEST + N_FIRST];
    int nt = load(train, argv[1], train_logs, N_TRAIN, &gpu);
    int nh = load(test, argv[1], test_logs, N_TEST, &gpu);
    nh += load(test + nh, argv[2], first_logs, N_FIRST, &gpu);
    tap_ok(nt == N_TRAIN && nh == N_TEST + N_FIRST, "the %d MoE runs rebuilt from their logs (%d + %d)",
           N_TRAIN + N_TEST + N_FIRST, nt, nh);
    if (nt != N_TRAIN || nh != N_TEST + N_FIRST) return tap_done();
    for (int i = 0; i < nt; i++)
        tap_ok(train[i].work.model.experts > 1, "%s read as an MoE model (%lld experts)", train[i].name,
               (long long)train[i].work.model.experts);

    /* the dense base profile, then the fit of the two MoE factors on the training runs */
    snprintf(path, sizeof path, "%s/tests/data/profiles/h200x2-megatron-local.yaml", src);
    pp_profile base;
    if (pp_profile_load_file(&base, path, &err) || !base.calibration.present) {
        tap_ok(0, "the dense calibration loads: %s", err.msg);
        return tap_done();
    }
    pp_calib_params p;
    pp_calib_params_init(&p);
    p.fit_mask = (1u << PP_CAL_MOE_LAYER) | (1u << PP_CAL_EXPERT);
    pp_calib_result fit;
    pp_status st = pp_calib_fit(train, nt, &base, &p, &fit, &err);
    tap_ok(st == PP_OK, "fit of the MoE factors on %d runs (%s)", nt, err.msg);
    if (st) return tap_done();
    tap_diag("train: MAPE uncalibrated %.1f%% -> calibrated %.1f%% (max %.1f%%), leave-one-out %.1f%%",
             fit.mape_before, fit.mape_after, fit.max_abs_after, fit.mape_loo);
    tap_diag("factors: moe_layer_overhead %.0f us, expert_overhead %.0f us per layer and micro-batch "
             "(forward 1/3, backward 2/3)", fit.cal.moe_layer_overhead_s * 1e6, fit.cal.expert_overhead_s * 1e6);
    tap_ok(fit.cal.gemm_scale == base.calibration.gemm_scale &&
               fit.cal.layer_overhead_s == base.calibration.layer_overhead_s,
           "the dense factors are the base profile's (only the MoE factors were fitted)");
    /* Megatron's SequentialMLP drives each expert's GEMM chain from Python: the host, not the
     * GPU, paces the 64- and 128-expert layers (hundreds of us per expert, not the 24 kernel
     * launches' ~0.1 ms of the uncalibrated floor). */
    tap_ok(fit.cal.expert_overhead_s > 200e-6 && fit.cal.expert_overhead_s < 2e-3,
           "expert_overhead %.0f us: a Python-driven GEMM chain per expert", fit.cal.expert_overhead_s * 1e6);
    tap_ok(fit.mape_after < 15.0, "in sample: calibrated MAPE %.1f%% < 15%%", fit.mape_after);

    /* the committed profile is this fit */
    snprintf(path, sizeof path, "%s/tests/data/profiles/h200-megatron-local-moe.yaml", src);
    pp_profile prof;
    st = pp_profile_load_file(&prof, path, &err);
    tap_ok(st == PP_OK && prof.calibration.present, "the committed MoE calibration loads (%s)", err.msg);
    if (st) return tap_done();
    tap_ok(fabs(prof.calibration.expert_overhead_s / fit.cal.expert_overhead_s - 1) < 0.01 &&
               fabs(prof.calibration.moe_layer_overhead_s / fit.cal.moe_layer_overhead_s - 1) < 0.01,
           "h200-megatron-local-moe.yaml holds this fit (expert %.0f us, layer %.0f us)",
           prof.calibration.expert_overhead_s * 1e6, prof.calibration.moe_layer_overhead_s * 1e6);

    double pred[N_TEST + N_FIRST], worst = 0;
    double mape10 = predict(test, N_TEST, &prof, "held out (10 iterations)", pred, &worst);
    tap_diag("held out, 10-iteration runs: MAPE %.1f%% (worst %.1f%%)", mape10, worst);
    double mape_all = predict(test, nh, &prof, "held out (all)", pred, &worst);
    tap_diag("held out, all %d runs: MAPE %.1f%% (worst %.1f%%)", nh, mape_all, worst);
    /* Issue target: held-out step-time MAPE at most 15% with the calibrated profile. The first
     * list's runs timed 3 iterations after a 2-iteration warm-up and were still speeding up (q_b2
     * ran at 1699 ms where the same configuration ran 2145 ms in the 10-iteration list). */
    tap_ok(mape_all <= 15.0, "held-out MAPE %.1f%% <= 15%% (issue target)", mape_all);
    tap_ok(mape10 <= 10.0, "held-out 10-iteration runs: MAPE %.1f%% <= 10%%", mape10);
    /* The layouts that train the same batch (t_m8_b1_m4: 4 micro-batches of 1; t_m8_b2: 2 of 2,
     * 16% apart): ranked as Megatron ran them. */
    tap_ok((test[0].measured_step_s > test[1].measured_step_s) == (pred[0] > pred[1]),
           "8 experts, 4 sequences per step: mbs 2 (%.0f ms) vs mbs 1 (%.0f ms) ranked as measured (%.0f vs %.0f)",
           pred[1] * 1e3, pred[0] * 1e3, test[1].measured_step_s * 1e3, test[0].measured_step_s * 1e3);
    pp_profile_free(&prof);
    pp_profile_free(&base);
    pp_calib_result_free(&fit);
    return tap_done();
}
