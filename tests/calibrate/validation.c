/* Calibration, validation: the calibration on the real Megatron-LM runs of tests/data (2 x H200,
 * Megatron-Core 0.20 `--transformer-impl local`, unfused attention, no fusions): 16 runs of the
 * memory helper (tests/data/megatron, GPT 2.7B/6.7B and Llama-3.2-3B shapes, DP/TP/PP, selective
 * and full recompute) and 5 runs of the launch helper (tests/data/launch, GPT-3 1.3B DP2/TP2/PP2 and
 * TinyLlama TP2 / uneven PP2 with block recompute). Prints the error of every run and the MAPE:
 *   1. fit on all 21, with leave-one-out (each run predicted by a fit without it);
 *   2. train/test split by source: fit on the 16 memory-helper runs, predict the 5 launch runs,
 *      whose models (GPT 1.3B, TinyLlama) and batches none of the 16 has.
 * argv[1]: the directory the megatron logs were extracted to. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_calibrate.h"
#include "pp_load.h"
#include "tap.h"

static const char *const megatron_logs[] = {
    "g27_b1", "g27_b2", "g27_b3", "g27_b8_full", "g27_b8_sel", "g27_dp2_b2", "g67_dp2_do_b1", "g67_pp2_b1",
    "g67_tp2_b1", "l3_s2k_b1", "l3_s2k_b4", "l3_s4k_b1", "l3_s4k_b2_sel", "l3_s4k_dp2_do_b2_full", "l3_s4k_pp2_b1",
    "l3_s4k_tp2_b2_sel",
};
#define N_MEG (int)(sizeof megatron_logs / sizeof megatron_logs[0])
static const char *const launch_runs[] = {
    "r1-gpt1.3b-dp2", "r2-gpt1.3b-tp2", "r3-gpt1.3b-pp2", "r4-tinyllama-pp2-uneven-rc", "r5-tinyllama-tp2-distopt",
};
#define N_LAUNCH 5

static int load(pp_calib_run *runs, const char *dir, const pp_gpu *gpu)
{
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    if (!src) src = ".";
    int n = 0;
    for (int i = 0; i < N_MEG + N_LAUNCH; i++) {
        char lp[1024], ap[1024];
        const char *argsp = NULL;
        if (i < N_MEG) {
            snprintf(lp, sizeof lp, "%s/%s.log", dir, megatron_logs[i]);
        } else {
            snprintf(lp, sizeof lp, "%s/tests/data/launch/logs/%s.log", src, launch_runs[i - N_MEG]);
            snprintf(ap, sizeof ap, "%s/tests/data/launch/scripts/%s.sh", src, launch_runs[i - N_MEG]);
            argsp = ap;
        }
        pp_mlog log;
        pp_error err = {0};
        if (pp_mlog_load(&log, lp, argsp, &err) || pp_calib_run_init(&runs[n], &log, gpu, &err)) {
            tap_ok(0, "%s: %s", lp, err.msg);
            if (log.path[0]) pp_mlog_free(&log);
            continue;
        }
        pp_mlog_free(&log);
        n++;
    }
    return n;
}

static void print_rows(const pp_calib_run *runs, int n, const pp_calib_result *r, const char *what)
{
    tap_diag("%s: %-28s %10s %10s %8s %10s %8s %10s %8s", what, "run", "meas. ms", "model ms", "err", "calib. ms",
             "err", "LOO ms", "err");
    for (int i = 0; i < n; i++) {
        double m = r->measured_s[i];
        tap_diag("%s: %-28s %10.1f %10.1f %+7.1f%% %10.1f %+7.1f%% %10.1f %+7.1f%%", what, runs[i].name, m * 1e3,
                 r->before_s[i] * 1e3, 100 * (r->before_s[i] / m - 1), r->after_s[i] * 1e3,
                 100 * (r->after_s[i] / m - 1), r->loo_s ? r->loo_s[i] * 1e3 : 0,
                 r->loo_s ? 100 * (r->loo_s[i] / m - 1) : 0);
    }
    tap_diag("%s: MAPE model %.2f%% (max %.1f%%), calibrated %.2f%% (max %.1f%%), leave-one-out %.2f%% (max %.1f%%)",
             what, r->mape_before, r->max_abs_before, r->mape_after, r->max_abs_after, r->mape_loo, r->max_abs_loo);
    tap_diag("%s: factors gemm %.4g, elementwise %.4g, score_bytes %.4g, layer_overhead %.4g us, optimizer %.4g", what,
             r->cal.gemm_scale, r->cal.elementwise_scale, r->cal.score_bytes, r->cal.layer_overhead_s * 1e6,
             r->cal.optimizer_scale);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MEGATRON_LOG_DIR\n", argv[0]);
        return 2;
    }
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    char gp[1024];
    snprintf(gp, sizeof gp, "%s/models.d/gpus/h200.yaml", src ? src : ".");
    pp_gpu gpu;
    pp_error err = {0};
    if (pp_gpu_load_file(&gpu, gp, &err)) {
        tap_ok(0, "h200 loads: %s", err.msg);
        return tap_done();
    }
    static pp_calib_run runs[N_MEG + N_LAUNCH];
    int n = load(runs, argv[1], &gpu);
    tap_ok(n == N_MEG + N_LAUNCH, "all %d real runs rebuilt from their logs (%d)", N_MEG + N_LAUNCH, n);
    if (n != N_MEG + N_LAUNCH) return tap_done();

    /* 1. all 21, default factors (gemm, score, layer, optimizer: the runs use unfused attention) */
    pp_calib_params p;
    pp_calib_params_init(&p);
    p.fit_mask = pp_calib_default_mask(runs, n);
    tap_ok(p.fit_mask == ((1u << PP_CAL_GEMM) | (1u << PP_CAL_SCORE) | (1u << PP_CAL_LAYER) | (1u << PP_CAL_OPTIMIZER)),
           "default factors for unfused attention: gemm, score, layer, optimizer");
    pp_calib_result all;
    pp_status st = pp_calib_fit(runs, n, NULL, &p, &all, &err);
    tap_ok(st == PP_OK, "fit on all 21 (%s)", err.msg);
    if (st) return tap_done();
    print_rows(runs, n, &all, "all");
    /* The uncalibrated model is 40-54% fast on every run (the stack runs unfused kernels the model
     * prices as fused ones); 45.8% when this was written: +-5 points leaves room for the time
     * model's own refinements, not for a different story. */
    tap_near(all.mape_before, 45.8, 5.0 / 45.8, "uncalibrated MAPE about 45.8%%");
    tap_ok(all.mape_after < 3.0, "calibrated MAPE %.2f%% < 3%% (1.9%% when written)", all.mape_after);
    tap_ok(all.max_abs_after < 6.0, "calibrated worst run %.1f%% < 6%%", all.max_abs_after);
    tap_ok(all.mape_loo >= 0 && all.mape_loo < 3.5, "leave-one-out MAPE %.2f%% < 3.5%% (2.5%% when written)",
           all.mape_loo);
    tap_ok(all.max_abs_loo < 8.0, "leave-one-out worst run %.1f%% < 8%%", all.max_abs_loo);
    /* the factors say something physical and stay inside their bounds */
    /* gemm_scale over the catalog H200's training rate (gemm_sustained 0.88, a GPU held at its power
     * cap): these host-bound runs leave the GPU below its cap, so their GEMMs run faster, at about
     * a short sweep's rate (0.95 / 0.88 = 1.08); 1.14 when written */
    tap_ok(all.cal.gemm_scale > 0.8 && all.cal.gemm_scale < 1.25, "gemm_scale %.3g near 1: cuBLAS through torch "
                                                                  "reaches the GEMM curve", all.cal.gemm_scale);
    tap_ok(all.cal.score_bytes > 10 && all.cal.layer_overhead_s > 50e-6 && all.cal.optimizer_scale > 1.5,
           "the unfused stack costs more per score (%.3g B), per layer (%.3g us) and per optimizer step (x%.3g)",
           all.cal.score_bytes, all.cal.layer_overhead_s * 1e6, all.cal.optimizer_scale);
    /* every factor set by the fit, none fitted ones neutral */
    tap_ok(all.cal.elementwise_scale == 1.0, "elementwise_scale not fitted by default: stays 1");

    /* ranking of the three GPT-3 1.3B launch layouts (same model, same batch): DP2 < TP2 < PP2 */
    int r1 = N_MEG, r2 = N_MEG + 1, r3 = N_MEG + 2;
    tap_ok(all.measured_s[r1] < all.measured_s[r2] && all.measured_s[r2] < all.measured_s[r3] &&
               all.after_s[r1] < all.after_s[r2] && all.after_s[r2] < all.after_s[r3],
           "GPT-3 1.3B: measured and calibrated both rank DP2 < TP2 < PP2");

    /* 2. train on the 16 memory-helper runs, test on the 5 launch runs */
    pp_calib_result train;
    st = pp_calib_fit(runs, N_MEG, NULL, &p, &train, &err);
    tap_ok(st == PP_OK, "fit on the 16 memory-helper runs (%s)", err.msg);
    if (st) return tap_done();
    print_rows(runs, N_MEG, &train, "train");
    pp_profile prof;
    memset(&prof, 0, sizeof prof);
    prof.calibration = train.cal;
    double ape_before = 0, ape_after = 0, worst = 0;
    for (int i = N_MEG; i < n; i++) {
        double b = 0, a = 0, m = runs[i].measured_step_s;
        pp_calib_predict(&runs[i], NULL, NULL, &b, &err);
        pp_calib_predict(&runs[i], &prof, &train.cal, &a, &err);
        tap_diag("test: %-28s meas %8.1f ms, model %8.1f (%+.1f%%), calibrated on the 16 %8.1f (%+.1f%%)", runs[i].name,
                 m * 1e3, b * 1e3, 100 * (b / m - 1), a * 1e3, 100 * (a / m - 1));
        ape_before += fabs(b / m - 1);
        ape_after += fabs(a / m - 1);
        if (fabs(a / m - 1) > worst) worst = fabs(a / m - 1);
        tap_ok(fabs(a / m - 1) < 0.15, "test %s: calibrated prediction within 15%% (%+.1f%%)", runs[i].name,
               100 * (a / m - 1));
    }
    ape_before *= 100.0 / N_LAUNCH;
    ape_after *= 100.0 / N_LAUNCH;
    tap_diag("test: MAPE model %.2f%% -> calibrated on the other source %.2f%% (worst %.1f%%)", ape_before, ape_after,
             100 * worst);
    tap_near(ape_before, 46.4, 5.0 / 46.4, "held-out launch runs: uncalibrated MAPE about 46.4%%");
    tap_ok(ape_after < 10.0, "held-out launch runs: calibrated MAPE %.2f%% < 10%% (7.1%% when written)", ape_after);
    /* 3. the committed profile (tests/data/profiles/h200x2-megatron-local.yaml, fitted on these 21
     * runs: in-sample, the split above is the out-of-sample figure) predicts each within 15% */
    char pp[1024];
    snprintf(pp, sizeof pp, "%s/tests/data/profiles/h200x2-megatron-local.yaml", src ? src : ".");
    pp_profile committed;
    st = pp_profile_load_file(&committed, pp, &err);
    tap_ok(st == PP_OK && committed.calibration.present, "the committed H200 calibration loads (%s)", err.msg);
    if (st == PP_OK) {
        double sum = 0, mx = 0;
        int within = 0;
        for (int i = 0; i < n; i++) {
            double a = 0;
            pp_calib_predict(&runs[i], &committed, &committed.calibration, &a, &err);
            double e = fabs(a / runs[i].measured_step_s - 1);
            sum += e;
            if (e > mx) mx = e;
            within += e < 0.15;
        }
        tap_diag("committed profile: MAPE %.2f%%, worst %.1f%%", 100 * sum / n, 100 * mx);
        tap_ok(within == n, "committed profile: all %d runs within 15%% (worst %.1f%%)", n, 100 * mx);
        pp_profile_free(&committed);
    }
    pp_calib_result_free(&all);
    pp_calib_result_free(&train);
    return tap_done();
}
