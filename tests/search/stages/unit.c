/* Stage MILP on synthetic costs: the GLPK answer against brute force over every
 * contiguous partition and recompute count, the 256k-vocabulary case against every uniform-ish
 * split, a case that fits only with per-stage recompute, the fallbacks, the LP dump. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "brute.h"
#include "pp_stages.h"
#include "synth.h"
#include "tap.h"
#include "util.h"

static pp_stages_costs C; /* large: static */
static pp_stages_result R, B;

/* Random instance: per-stage random coefficients in physical-looking ranges. */
static void random_costs(pp_stages_costs *c, int64_t p, int64_t L)
{
    memset(c, 0, sizeof *c);
    c->n_stages = p;
    c->layers = L;
    c->microbatches = rng_int(1, 64);
    c->obj_max_weight = (double)(c->microbatches - 1);
    c->obj_sum_weight = 1;
    c->allow_recompute = rng_u() < 0.7;
    double mem_total = 0;
    for (int64_t j = 0; j < p; j++) {
        c->layers_min[j] = 1;
        c->layers_max[j] = L - (p - 1);
        c->time_layer_s[j] = 0.01 + 0.02 * rng_u();
        c->time_recompute_s[j] = c->time_layer_s[j] * (0.2 + 0.2 * rng_u());
        c->time_base_s[j] = 0.05 * rng_u();
        c->mem_base_bytes[j] = 1e9 + 20e9 * rng_u();
        c->mem_layer_bytes[j] = 1e9 + 5e9 * rng_u();
        c->mem_recompute_saved_bytes[j] = c->mem_layer_bytes[j] * 0.6 * rng_u();
        /* With recompute: a transient (sometimes none) and a slightly different slope (the
         * allocator slack fraction changes with recompute in memory.c). */
        c->mem_rc_base_bytes[j] = c->mem_base_bytes[j] + (rng_u() < 0.3 ? 0 : 0.5e9 * rng_u());
        c->mem_rc_layer_bytes[j] = c->mem_layer_bytes[j] * (0.9 + 0.2 * rng_u());
        mem_total += c->mem_base_bytes[j] + c->mem_layer_bytes[j] * (double)L / (double)p;
    }
    /* Limit around the average stage need: some instances are tight, some infeasible. */
    double limit = mem_total / (double)p * (0.7 + 0.6 * rng_u());
    for (int64_t j = 0; j < p; j++) c->mem_limit_bytes[j] = limit;
    if (c->allow_recompute) c->uniform_recompute = rng_u() < 0.5 ? -1 : rng_int(0, 2);
}

static void test_random_vs_brute(void)
{
    int n_cases = 0, agree = 0, feasible = 0, infeasible = 0, fallback_ok = 0;
    double max_rel = 0, solve_max_s = 0;
    for (int k = 0; k < 300; k++) {
        int64_t p = rng_int(1, 4), L = rng_int(p, 10);
        random_costs(&C, p, L);
        pp_stages_params prm;
        pp_stages_params_init(&prm);
        pp_error err = {0};
        int64_t pts = 0;
        if (pp_stages_solve_costs(&C, &prm, &R, &err) != PP_OK ||
            brute_stages(&C, NULL, NULL, 10000000, &B, &pts, &err) != PP_OK) {
            tap_ok(0, "random %d: solve/brute error: %s", k, err.msg);
            continue;
        }
        n_cases++;
        if (R.solve_time_s > solve_max_s) solve_max_s = R.solve_time_s;
        if (B.status == PP_STAGES_OPTIMAL) {
            feasible++;
            double rel = fabs(R.pipeline_time_s - B.pipeline_time_s) / B.pipeline_time_s;
            if (rel > max_rel) max_rel = rel;
            bool ok = R.status == PP_STAGES_OPTIMAL && R.fits && split_valid(&C, &R) && rel <= 1e-6;
            if (ok) agree++;
            else
                tap_diag("random %d p=%lld L=%lld: ilp %s %.9g fits %d, brute %.9g (%lld points)", k,
                         (long long)p, (long long)L, pp_stages_status_names[R.status],
                         R.pipeline_time_s, R.fits, B.pipeline_time_s, (long long)pts);
        } else {
            infeasible++;
            /* Nothing fits: the MILP must say so and fall back to uniform with a warning. */
            bool ok = R.status == PP_STAGES_FALLBACK && R.warning[0] && !R.fits;
            pp_stages_result U;
            pp_stages_uniform(&C, &U);
            for (int64_t j = 0; j < p; j++)
                if (R.stage_layers[j] != U.stage_layers[j]) ok = false;
            if (ok) agree++, fallback_ok++;
            else
                tap_diag("random %d infeasible: ilp status %s warning '%s'", k,
                         pp_stages_status_names[R.status], R.warning);
        }
    }
    tap_ok(agree == n_cases && n_cases == 300,
           "300 random instances (p 1-4, L <= 10): MILP == brute force on all (%d agree; %d "
           "feasible, %d infeasible -> fallback)", agree, feasible, infeasible);
    tap_ok(feasible >= 100 && infeasible >= 10, "the random set has both feasible (%d) and "
           "infeasible (%d) instances", feasible, infeasible);
    tap_diag("max relative objective difference %.3g; slowest solve %.3f ms", max_rel,
             1e3 * solve_max_s);
}

/* Larger instances: p = 6, L = 14 (still enumerable: ~10^6 points with recompute off). */
static void test_larger_vs_brute(void)
{
    int agree = 0, n = 0;
    for (int k = 0; k < 20; k++) {
        random_costs(&C, 6, 14);
        C.allow_recompute = k % 2 == 0;
        C.uniform_recompute = 0;
        pp_error err = {0};
        if (pp_stages_solve_costs(&C, NULL, &R, &err) != PP_OK ||
            brute_stages(&C, NULL, NULL, 100000000, &B, NULL, &err) != PP_OK) {
            tap_ok(0, "p6 L14 %d: %s", k, err.msg);
            continue;
        }
        n++;
        bool ok = B.status == PP_STAGES_OPTIMAL
                      ? R.status == PP_STAGES_OPTIMAL && split_valid(&C, &R) &&
                            fabs(R.pipeline_time_s - B.pipeline_time_s) <= 1e-6 * B.pipeline_time_s
                      : R.status == PP_STAGES_FALLBACK;
        agree += ok;
        if (!ok)
            tap_diag("p6 L14 %d: ilp %s %.9g brute %s %.9g", k, pp_stages_status_names[R.status],
                     R.pipeline_time_s, pp_stages_status_names[B.status], B.pipeline_time_s);
    }
    tap_ok(agree == 20 && n == 20, "20 instances p=6 L=14 (half with recompute): MILP == brute force (%d)",
           agree);
}

/* The 30-layer, 4-stage, 256k-vocabulary case. Uniform-ish = per-stage counts that differ by at
 * most one (every arrangement of 8,8,7,7). The MILP must beat all of them and fit. */
static void test_256k(void)
{
    synth_work s;
    synth_work_256k(&s);
    synth_costs(&s, &C);
    pp_error err = {0};
    tap_ok(pp_stages_solve_costs(&C, NULL, &R, &err) == PP_OK && R.status == PP_STAGES_OPTIMAL,
           "256k: MILP optimal (%s)", err.msg);
    tap_ok(R.fits, "256k: MILP split fits");
    tap_diag("256k: MILP split %d,%d,%d,%d stage times %.1f %.1f %.1f %.1f ms, pipeline %.3f s, "
             "solve %.2f ms", R.stage_layers[0], R.stage_layers[1], R.stage_layers[2],
             R.stage_layers[3], 1e3 * R.stage_time_s[0], 1e3 * R.stage_time_s[1],
             1e3 * R.stage_time_s[2], 1e3 * R.stage_time_s[3], R.pipeline_time_s,
             1e3 * R.solve_time_s);
    double best_uniformish = INFINITY;
    int n_uniformish = 0;
    for (int a = 7; a <= 8; a++)
        for (int b = 7; b <= 8; b++)
            for (int c = 7; c <= 8; c++)
                for (int d = 7; d <= 8; d++) {
                    if (a + b + c + d != 30) continue;
                    int n[4] = {a, b, c, d};
                    double tmax = 0, tsum = 0;
                    bool fits = true;
                    for (int j = 0; j < 4; j++) {
                        double t, mem;
                        pp_stages_costs_eval(&C, j, n[j], 0, &t, &mem);
                        tmax = fmax(tmax, t);
                        tsum += t;
                        fits = fits && mem <= C.mem_limit_bytes[j];
                    }
                    double obj = C.obj_max_weight * tmax + C.obj_sum_weight * tsum;
                    n_uniformish++;
                    if (fits && obj < best_uniformish) best_uniformish = obj;
                }
    tap_ok(n_uniformish == 6, "256k: 6 uniform-ish arrangements of 8,8,7,7");
    tap_ok(R.pipeline_time_s < best_uniformish * 0.95,
           "256k: MILP %.3f s/step beats the best uniform-ish split %.3f s/step by >= 5%% (%.1f%%)",
           R.pipeline_time_s, best_uniformish, 100 * (1 - R.pipeline_time_s / best_uniformish));
    tap_ok(R.stage_layers[3] < R.stage_layers[1] && R.stage_layers[3] < R.stage_layers[2],
           "256k: the last stage (output layer) gets fewer layers than the middle ones");
    {
        double tmax = 0, tsum = 0;
        const int n[4] = {8, 8, 7, 7};
        for (int j = 0; j < 4; j++) {
            double t;
            pp_stages_costs_eval(&C, j, n[j], 0, &t, NULL);
            tmax = fmax(tmax, t);
            tsum += t;
        }
        tap_near(R.uniform_pipeline_time_s, C.obj_max_weight * tmax + tsum, 1e-12,
                 "256k: the uniform comparison is the 8,8,7,7 split");
    }
    brute_stages(&C, NULL, NULL, 100000000, &B, NULL, &err);
    tap_near(R.pipeline_time_s, B.pipeline_time_s, 1e-6, "256k: MILP == brute force");
}

/* A 16-layer h 4096 model at sequence 8192 on 4 stages: stage 0 holds 4 micro-batches. The device
 * is set 10% below the least memory any split needs without recompute, so only recompute makes
 * it fit; the MILP must find a split that recomputes on the early stages only and is faster
 * than any split with the same recompute count on every stage (Megatron's global
 * --recompute-num-layers). */
static void test_recompute_only(void)
{
    synth_work s;
    synth_work_256k(&s);
    s.layers = 16, s.vocab = 32000, s.seq = 8192, s.tp = 1;
    s.allow_recompute = false;
    s.capacity_bytes = 1e15;
    synth_costs(&s, &C);
    double least = INFINITY; /* min over splits of the largest stage, no recompute */
    for (int64_t a = 1; a <= 13; a++)
        for (int64_t b = 1; a + b <= 14; b++)
            for (int64_t c = 1; a + b + c <= 15; c++) {
                int64_t n[4] = {a, b, c, 16 - a - b - c};
                double worst = 0;
                for (int j = 0; j < 4; j++) {
                    double mem;
                    pp_stages_costs_eval(&C, j, n[j], 0, NULL, &mem);
                    worst = fmax(worst, mem);
                }
                least = fmin(least, worst);
            }
    s.capacity_bytes = 0.9 * least;
    synth_costs(&s, &C);
    tap_diag("recompute case: device %.1f GB (least need without recompute %.1f GB)",
             s.capacity_bytes / 1e9, least / 1e9);
    pp_error err = {0};
    brute_stages(&C, NULL, NULL, 100000000, &B, NULL, &err);
    tap_ok(B.status == PP_STAGES_FALLBACK, "recompute case: no split fits without recompute "
           "(brute force: %s)", pp_stages_status_names[B.status]);
    s.allow_recompute = true;
    synth_costs(&s, &C);
    C.uniform_recompute = -1;
    pp_stages_solve_costs(&C, NULL, &R, &err);
    tap_ok(R.status == PP_STAGES_OPTIMAL && R.fits, "recompute case: MILP finds a split that fits (%s)",
           pp_stages_status_names[R.status]);
    tap_diag("recompute case: layers %d,%d,%d,%d recompute %d,%d,%d,%d, mem %.1f %.1f %.1f %.1f GB",
             R.stage_layers[0], R.stage_layers[1], R.stage_layers[2], R.stage_layers[3],
             R.stage_recompute[0], R.stage_recompute[1], R.stage_recompute[2], R.stage_recompute[3],
             R.stage_mem_bytes[0] / 1e9, R.stage_mem_bytes[1] / 1e9, R.stage_mem_bytes[2] / 1e9,
             R.stage_mem_bytes[3] / 1e9);
    bool differ = false;
    for (int j = 1; j < 4; j++) differ |= R.stage_recompute[j] != R.stage_recompute[0];
    tap_ok(differ, "recompute case: the recompute counts differ between stages");
    tap_ok(R.stage_recompute[0] > R.stage_recompute[3],
           "recompute case: stage 0 (4 in flight) recomputes more than stage 3 (1 in flight)");
    brute_stages(&C, NULL, NULL, 100000000, &B, NULL, &err);
    tap_near(R.pipeline_time_s, B.pipeline_time_s, 1e-6, "recompute case: MILP == brute force");
    /* Best with one recompute count K on every stage, r_j = min(K, n_j) (Megatron's global
     * --recompute-num-layers with --recompute-method block), over every split n. */
    double best_global = INFINITY;
    int64_t L = C.layers;
    for (int64_t K = 0; K <= L; K++)
        for (int64_t a = 1; a <= L - 3; a++)
            for (int64_t b = 1; a + b <= L - 2; b++)
                for (int64_t c = 1; a + b + c <= L - 1; c++) {
                    int64_t n[4] = {a, b, c, L - a - b - c};
                    double tmax = 0, tsum = 0;
                    bool fits = true;
                    for (int j = 0; j < 4; j++) {
                        double t, mem;
                        pp_stages_costs_eval(&C, j, n[j], K < n[j] ? K : n[j], &t, &mem);
                        tmax = fmax(tmax, t);
                        tsum += t;
                        fits = fits && mem <= C.mem_limit_bytes[j];
                    }
                    double obj = C.obj_max_weight * tmax + C.obj_sum_weight * tsum;
                    if (fits && obj < best_global) best_global = obj;
                }
    tap_ok(R.pipeline_time_s < best_global * 0.999,
           "recompute case: per-stage recompute %.3f s/step beats the best global count %.3f s/step",
           R.pipeline_time_s, best_global);
}

static void test_fallbacks(void)
{
    synth_work s;
    synth_work_256k(&s);
    s.capacity_bytes = 20e9; /* the embedding alone is 18.9 GB + 3 GB reserve */
    synth_costs(&s, &C);
    pp_error err = {0};
    pp_stages_solve_costs(&C, NULL, &R, &err);
    tap_ok(R.status == PP_STAGES_FALLBACK && strstr(R.warning, "fits"),
           "infeasible: fallback with warning '%s'", R.warning);
    tap_ok(R.stage_layers[0] == 8 && R.stage_layers[1] == 8 && R.stage_layers[2] == 7 &&
               R.stage_layers[3] == 7 && !R.fits,
           "infeasible: uniform split 8,8,7,7 (remainder first), reported as not fitting");

    /* Auto keeps uniform when the MILP cannot beat it: identical stages, L divisible by p. */
    memset(&C, 0, sizeof C);
    C.n_stages = 4, C.layers = 16, C.microbatches = 8, C.obj_max_weight = 7, C.obj_sum_weight = 1;
    for (int j = 0; j < 4; j++) {
        C.layers_min[j] = 1, C.layers_max[j] = 13;
        C.time_layer_s[j] = 0.01, C.mem_layer_bytes[j] = 1e9, C.mem_limit_bytes[j] = 80e9;
    }
    pp_stages_params prm;
    pp_stages_params_init(&prm);
    prm.mode = PP_STAGES_MODE_AUTO;
    pp_stages_solve_costs(&C, &prm, &R, &err);
    tap_ok(R.status == PP_STAGES_UNIFORM && R.ilp_optimal && R.stage_layers[0] == 4 &&
               R.stage_layers[3] == 4,
           "auto: uniform kept when the MILP finds nothing better (status %s)",
           pp_stages_status_names[R.status]);
    prm.mode = PP_STAGES_MODE_UNIFORM;
    pp_stages_solve_costs(&C, &prm, &R, &err);
    tap_ok(R.status == PP_STAGES_UNIFORM && !R.ilp_ran, "uniform mode: the MILP is not run");

    /* Time limit: a 1 ms limit on a 256-stage instance with recompute must not hang; it either
     * proves the optimum in time or falls back with a warning naming the limit. */
    random_costs(&C, 256, 3000);
    for (int j = 0; j < 256; j++) C.mem_limit_bytes[j] *= 1.5;
    C.allow_recompute = true;
    C.uniform_recompute = -1;
    prm.mode = PP_STAGES_MODE_ILP;
    prm.time_limit_ms = 1;
    pp_stages_solve_costs(&C, &prm, &R, &err);
    tap_ok((R.status == PP_STAGES_OPTIMAL && R.fits) ||
               (R.status == PP_STAGES_FALLBACK && R.warning[0]),
           "1 ms limit on 256 stages: %s in %.1f ms (glp_intopt %d, status %d) %s",
           pp_stages_status_names[R.status], 1e3 * R.solve_time_s, R.glpk_ret, R.glpk_mip_status,
           R.warning);

    /* The work limit, not the clock, stops GLPK: the same instance solved twice, the second
     * time with the clock slowed to a crawl by a busy neighbour or valgrind, gives the same
     * split. Here: the same 256-stage instance twice with a small work limit (the clock's own
     * limit far away), and each answer either the proven optimum or the best found, named. */
    prm.time_limit_ms = 600000;
    prm.work_limit = 100000;
    pp_stages_solve_costs(&C, &prm, &R, &err);
    B = R;
    pp_stages_solve_costs(&C, &prm, &R, &err);
    bool same = R.status == B.status && R.ilp_optimal == B.ilp_optimal && R.glpk_ret == B.glpk_ret;
    for (int j = 0; j < 256 && same; j++)
        same = R.stage_layers[j] == B.stage_layers[j] && R.stage_recompute[j] == B.stage_recompute[j];
    tap_ok(same && (R.ilp_optimal || strstr(R.warning, "work limit")),
           "work limit 100000 on 256 stages: the same split twice (%s, glp_intopt %d, %.1f ms) %s",
           pp_stages_status_names[R.status], R.glpk_ret, 1e3 * R.solve_time_s, R.warning);
}

/* A memory that is not linear: the max of two linear pieces in each regime (like memory.c's
 * max(working set, optimizer temporaries - activations) with FSDP), as the ground truth. */
typedef struct {
    const pp_stages_costs *c;
    double opt_base[PP_MAX_STAGES], opt_layer[PP_MAX_STAGES];
} convex_ctx;

static pp_status convex_eval(void *vctx, int64_t j, int64_t n, int64_t r, double *time_s, double *mem)
{
    const convex_ctx *x = vctx;
    double lin;
    pp_stages_costs_eval(x->c, j, n, r, time_s, &lin);
    if (mem) *mem = fmax(lin, x->opt_base[j] + x->opt_layer[j] * (double)n);
    return PP_OK;
}

static void test_table_vs_brute(void)
{
    static convex_ctx X;
    int agree = 0, n_cases = 0, tabled = 0;
    for (int k = 0; k < 120; k++) {
        int64_t p = rng_int(1, 4), L = rng_int(p, 10);
        random_costs(&C, p, L);
        X.c = &C;
        pp_error err = {0};
        bool ok = true;
        for (int64_t j = 0; j < p; j++) {
            /* the second piece overtakes the first somewhere in the range on most stages */
            X.opt_layer[j] = C.mem_layer_bytes[j] * (1.2 + rng_u());
            X.opt_base[j] = C.mem_base_bytes[j] - X.opt_layer[j] * (double)L * rng_u() * 0.5;
            if (rng_u() < 0.7) {
                ok = ok && pp_stages_costs_tabulate(&C, j, convex_eval, &X, &err) == PP_OK;
                tabled++;
            } else {
                X.opt_base[j] = -1e18, X.opt_layer[j] = 0; /* linear stage: no second piece */
            }
        }
        if (!ok || pp_stages_solve_costs(&C, NULL, &R, &err) != PP_OK ||
            brute_stages(&C, convex_eval, &X, 10000000, &B, NULL, &err) != PP_OK) {
            tap_ok(0, "table %d: %s", k, err.msg);
            pp_stages_costs_free(&C);
            continue;
        }
        n_cases++;
        bool good;
        if (B.status == PP_STAGES_OPTIMAL) {
            /* R's objective from the costs; its memory by the ground truth */
            bool fits = R.status == PP_STAGES_OPTIMAL && split_valid(&C, &R);
            for (int64_t j = 0; fits && j < p; j++) {
                double mem;
                convex_eval(&X, j, R.stage_layers[j], R.stage_recompute[j], NULL, &mem);
                fits = mem <= C.mem_limit_bytes[j];
            }
            good = fits && fabs(R.pipeline_time_s - B.pipeline_time_s) <= 1e-6 * B.pipeline_time_s;
        } else {
            good = R.status == PP_STAGES_FALLBACK;
        }
        agree += good;
        if (!good)
            tap_diag("table %d p=%lld L=%lld: ilp %s %.9g, brute %s %.9g", k, (long long)p,
                     (long long)L, pp_stages_status_names[R.status], R.pipeline_time_s,
                     pp_stages_status_names[B.status], B.pipeline_time_s);
        pp_stages_costs_free(&C);
    }
    tap_ok(agree == n_cases && n_cases == 120,
           "120 random instances with convex (max of two pieces) memory, %d stages by table: MILP "
           "== brute force over the true memory (%d agree)", tabled, agree);
}

static void test_bad_costs(void)
{
    synth_work s;
    synth_work_256k(&s);
    pp_error err = {0};
    synth_costs(&s, &C);
    C.time_layer_s[2] = NAN;
    tap_ok(pp_stages_solve_costs(&C, NULL, &R, &err) == PP_ERR_INPUT && strstr(err.msg, "time_layer_s"),
           "NaN cost rejected: %s", err.msg);
    synth_costs(&s, &C);
    C.layers_min[1] = 0;
    tap_ok(pp_stages_solve_costs(&C, NULL, &R, &err) == PP_ERR_INPUT, "stage with 0 layers rejected: %s",
           err.msg);
    synth_costs(&s, &C);
    C.n_stages = PP_MAX_STAGES + 1;
    tap_ok(pp_stages_solve_costs(&C, NULL, &R, &err) == PP_ERR_INPUT, "too many stages rejected: %s",
           err.msg);
    synth_costs(&s, &C);
    for (int j = 0; j < 4; j++) C.layers_max[j] = 5;
    tap_ok(pp_stages_solve_costs(&C, NULL, &R, &err) == PP_ERR_INPUT, "bounds below L rejected: %s",
           err.msg);
    synth_costs(&s, &C);
    tap_ok(brute_stages(&C, NULL, NULL, 10, &B, NULL, &err) == PP_ERR_INPUT,
           "brute force refuses past its point limit: %s", err.msg);
    tap_ok(pp_stages_dump_lp_costs(&C, "/nonexistent-dir/x.lp", &err) == PP_ERR_RUNTIME,
           "dump to an unwritable path is a runtime error: %s", err.msg);
    pp_stages_params prm;
    pp_stages_params_init(&prm);
    prm.time_limit_ms = 0;
    tap_ok(pp_stages_solve_costs(&C, &prm, &R, &err) == PP_ERR_INPUT, "time limit 0 rejected: %s",
           err.msg);
    pp_stages_params_init(&prm);
    prm.min_gain = NAN;
    tap_ok(pp_stages_solve_costs(&C, &prm, &R, &err) == PP_ERR_INPUT, "NaN min_gain rejected: %s",
           err.msg);
    C.mem_table[2] = true; /* no table given */
    tap_ok(pp_stages_solve_costs(&C, NULL, &R, &err) == PP_ERR_INPUT, "table stage without a table "
           "rejected: %s", err.msg);
    C.mem_table[2] = false;
    pp_work w;
    memset(&w, 0, sizeof w);
    pp_layout l;
    pp_layout_init(&l);
    int n[PP_MAX_STAGES], r[PP_MAX_STAGES];
    tap_ok(pp_stages_apply(&w, &l, "fast", NULL, n, r, NULL, &err) == PP_ERR_INPUT &&
               strstr(err.msg, "uniform|ilp"),
           "unknown --stages mode rejected: %s", err.msg);
    tap_ok(pp_stages_apply(&w, &l, "uniform", NULL, n, r, NULL, &err) == PP_OK && !l.stage_layers,
           "uniform mode leaves the layout uniform without running anything");
    tap_ok(pp_stages_refine(&w, NULL, 3, 5, "auto", NULL, NULL, NULL, &err) == PP_ERR_INPUT,
           "refine without candidates rejected: %s", err.msg);
}

/* glpsol --lp FILE on the dump must find the same optimum. glpsol's path is argv[1]. */
static void test_dump(const char *glpsol)
{
    synth_work s;
    synth_work_256k(&s);
    s.capacity_bytes = 60e9;
    s.allow_recompute = true;
    synth_costs(&s, &C);
    pp_error err = {0};
    glpsol_run g;
    glpsol_check(glpsol, &C, &g, &err);
    tap_ok(g.dumped, "dump written (%s)", err.msg);
    pp_stages_solve_costs(&C, NULL, &R, &err);
    glpsol_tap(&g, R.pipeline_time_s, "count");
}

int main(int argc, char **argv)
{
    test_random_vs_brute();
    test_larger_vs_brute();
    test_256k();
    test_recompute_only();
    test_table_vs_brute();
    test_fallbacks();
    test_bad_costs();
    test_dump(argc > 1 ? argv[1] : NULL);
    return tap_done();
}
