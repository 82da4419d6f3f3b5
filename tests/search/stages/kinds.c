/* Stage MILP by layer kind (the cut formulation of pp_stages.h) on synthetic costs: GLPK's answer
 * against the positional brute force (brute_stages_range of brute.c: every contiguous split and
 * every recompute count, each stage priced by the kinds of the layers it holds), with and
 * without the DP's incumbent, bounds and cuts (params.milp_only: the formulation by itself);
 * dense-first, alternating, windowed and MTP patterns; recompute priced exactly per kind; costs
 * of one kind give the count formulation's optimum; excluded configurations; bad costs; the LP
 * dump. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "brute.h"
#include "pp_stages.h"
#include "synth.h"
#include "tap.h"
#define RNG_SEED 0x2545F4914F6CDD1Dull
#include "util.h"

static pp_stages_costs C, C1; /* large: static */
static pp_stages_result R, R0, B;

/* Random by_kind costs: kinds drawn from a random subset of the 4 (or a pattern), per-kind
 * coefficients in physical-looking ranges, and S_j(P, Q) an ARBITRARY function of the mix (not
 * monotone, not a max): the MILP's rows must select the actual mix's row exactly. */
static bool random_kind_costs(pp_stages_costs *c, int64_t p, int64_t L)
{
    pp_stages_costs_free(c);
    memset(c, 0, sizeof *c);
    c->n_stages = p;
    c->layers = L;
    c->microbatches = rng_int(1, 64);
    c->obj_max_weight = (double)(c->microbatches - 1);
    c->obj_sum_weight = 1;
    c->allow_recompute = rng_u() < 0.7;
    if (c->allow_recompute) c->uniform_recompute = rng_u() < 0.5 ? -1 : rng_int(0, 2);
    pp_error err = {0};
    if (pp_stages_costs_kinds_alloc(c, &err) != PP_OK) return false;
    unsigned subset = (unsigned)rng_int(1, PP_STAGES_KIND_SETS - 1);
    int pattern = (int)rng_int(0, 3);
    int64_t first = rng_int(1, 3), every = rng_int(2, 4);
    for (int64_t i = 0; i < L; i++) {
        int k;
        if (pattern == 0) { /* dense first, then MoE */
            k = i < first ? 0 : PP_LAYER_MOE;
        } else if (pattern == 1) { /* alternating */
            k = i % every == every - 1 ? PP_LAYER_MOE : 0;
        } else {
            do k = (int)rng_int(0, PP_LAYER_KINDS - 1);
            while (!(subset >> k & 1u));
        }
        c->layer_kind[i] = (int8_t)k;
    }
    double mem_total = 0;
    for (int64_t j = 0; j < p; j++) {
        c->layers_min[j] = 1;
        c->layers_max[j] = L - (p - 1);
        c->time_base_s[j] = 0.05 * rng_u();
        double base = 1e9 + 20e9 * rng_u();
        for (int k = 0; k < PP_LAYER_KINDS; k++) {
            c->kind_time_layer_s[j][k] = 0.01 + 0.03 * rng_u();
            c->kind_time_recompute_s[j][k] = c->kind_time_layer_s[j][k] * (0.2 + 0.2 * rng_u());
            c->kind_mem_layer_bytes[j][k] = 1e9 + 5e9 * rng_u();
            c->kind_mem_saved_bytes[j][k] = c->kind_mem_layer_bytes[j][k] * 0.6 * rng_u();
        }
        for (unsigned P = 0; P < PP_STAGES_KIND_SETS; P++)
            for (unsigned Q = 0; Q < PP_STAGES_KIND_SETS; Q++)
                c->kind_mem_set_bytes[pp_stages_set_index(j, P, Q)] = base + 3e9 * rng_u();
        mem_total += base + 3.5e9 * (double)L / (double)p;
    }
    double limit = mem_total / (double)p * (0.7 + 0.6 * rng_u());
    for (int64_t j = 0; j < p; j++) c->mem_limit_bytes[j] = limit;
    return true;
}

/* The least largest-stage memory over every contiguous split, every layer recomputed (all) or
 * none: a DP over (stage, first layer). */
static double least_need(const pp_stages_costs *c, bool all)
{
    int64_t p = c->n_stages, L = c->layers;
    double *best = malloc(sizeof(double) * (size_t)(p + 1) * (size_t)(L + 1));
    if (!best) return INFINITY;
    for (int64_t f = 0; f <= L; f++) best[p * (L + 1) + f] = f == L ? 0 : INFINITY;
    for (int64_t j = p - 1; j >= 0; j--)
        for (int64_t f = 0; f <= L; f++) {
            double b = INFINITY;
            for (int64_t n = 1; f + n <= L; n++) {
                double mem;
                pp_stages_costs_eval_range(c, j, f, n, all ? n : 0, NULL, &mem);
                b = fmin(b, fmax(mem, best[(j + 1) * (L + 1) + f + n]));
            }
            best[j * (L + 1) + f] = b;
        }
    double r = best[0];
    free(best);
    return r;
}

/* A device between the least memory any split needs with every layer recomputed (frac 0) and
 * without recompute (frac 1): below 1 only recompute makes it fit. */
static void capacity_between(synth_work *s, const synth_kinds *kk, double frac)
{
    s->capacity_bytes = 1e15;
    s->allow_recompute = true;
    synth_kind_costs(s, kk, &C);
    double need0 = least_need(&C, false), need1 = least_need(&C, true);
    s->capacity_bytes = need1 + frac * (need0 - need1);
}

/* MILP (with the DP, and GLPK alone) against brute force on c; true when all three agree. */
static bool check_vs_brute(const pp_stages_costs *c, const char *label, bool verbose, int64_t max_points)
{
    pp_stages_params prm, bare;
    pp_stages_params_init(&prm);
    pp_stages_params_init(&bare);
    bare.milp_only = true;
    bare.time_limit_ms = 20000;
    pp_error err = {0};
    int64_t pts = 0;
    if (pp_stages_solve_costs(c, &prm, &R, &err) != PP_OK ||
        pp_stages_solve_costs(c, &bare, &R0, &err) != PP_OK ||
        brute_stages_range(c, NULL, NULL, max_points, &B, &pts, &err) != PP_OK) {
        tap_diag("%s: %s", label, err.msg);
        return false;
    }
    bool ok;
    if (B.status == PP_STAGES_OPTIMAL) {
        ok = R.status == PP_STAGES_OPTIMAL && R0.status == PP_STAGES_OPTIMAL && R.fits && R0.fits &&
             split_valid(c, &R) && split_valid(c, &R0) &&
             fabs(R.pipeline_time_s - B.pipeline_time_s) <= 1e-6 * B.pipeline_time_s &&
             fabs(R0.pipeline_time_s - B.pipeline_time_s) <= 1e-6 * B.pipeline_time_s;
    } else {
        pp_stages_result U;
        pp_stages_uniform(c, &U);
        ok = R.status == PP_STAGES_FALLBACK && R0.status == PP_STAGES_FALLBACK && R.warning[0] &&
             !R.fits && R.stage_layers[0] == U.stage_layers[0];
    }
    if (!ok || verbose) {
        char s1[256], s2[256];
        split_str(&R, s1, sizeof s1);
        split_str(&B, s2, sizeof s2);
        tap_diag("%s: MILP %s %.9g s/step (%s, %.2f ms; GLPK alone %s %.9g, %.2f ms) brute force "
                 "%s %.9g (%s, %lld points)%s", label, pp_stages_status_names[R.status],
                 R.pipeline_time_s, s1, 1e3 * R.solve_time_s, pp_stages_status_names[R0.status],
                 R0.pipeline_time_s, 1e3 * R0.solve_time_s, pp_stages_status_names[B.status],
                 B.pipeline_time_s, s2, (long long)pts, ok ? "" : "  <-- DIFFERENT");
    }
    return ok;
}

static void test_random_vs_brute(void)
{
    int agree = 0, n = 0, feasible = 0, rc = 0;
    for (int k = 0; k < 300; k++) {
        int64_t p = rng_int(1, 4), L = rng_int(p, 10);
        if (!random_kind_costs(&C, p, L)) continue;
        char label[64];
        snprintf(label, sizeof label, "random %d p=%lld L=%lld", k, (long long)p, (long long)L);
        agree += check_vs_brute(&C, label, false, 10000000);
        n++;
        feasible += B.status == PP_STAGES_OPTIMAL;
        for (int64_t j = 0; j < p && B.status == PP_STAGES_OPTIMAL; j++)
            if (B.stage_recompute[j] > 0) {
                rc++;
                break;
            }
    }
    tap_ok(n == 300 && agree == n,
           "300 random instances by kind (p 1-4, L <= 10, S an arbitrary function of the mix): "
           "MILP == GLPK alone == brute force on %d (%d feasible, %d of them recompute somewhere)",
           agree, feasible, rc);
    tap_ok(feasible >= 100 && n - feasible >= 10 && rc >= 30,
           "the random set has feasible (%d), infeasible (%d) and recomputing (%d) instances",
           feasible, n - feasible, rc);
}

static void test_larger_vs_brute(void)
{
    int agree = 0, n = 0;
    for (int k = 0; k < 20; k++) {
        if (!random_kind_costs(&C, 5, 13)) continue;
        C.allow_recompute = k % 2 == 0;
        C.uniform_recompute = 0;
        char label[64];
        snprintf(label, sizeof label, "p5 L13 %d", k);
        agree += check_vs_brute(&C, label, false, 200000000);
        n++;
    }
    tap_ok(agree == 20 && n == 20, "20 instances by kind p=5 L=13 (half with recompute): MILP == "
           "GLPK alone == brute force (%d)", agree);
}

/* Patterned instances from synth.h (h 6144, t 2, 16 micro-batches, 3-4 stages of 14-18
 * layers): a device with room for an uneven split without recompute, then two on which only
 * recompute makes any split fit (capacity_between 0.6 and 0.2). */
static void test_patterns(void)
{
    const struct { const char *name; synth_kinds k; int64_t L, p; } pat[] = {
        {"dense-first (3 dense, DeepSeek-V3-like, MTP 1)", {3, 1, 0, 1, 2.2, 6.0, 1.3, 1.0}, 16, 4},
        {"dense-first (1 dense, DeepSeek-V2-Lite-like)", {1, 1, 0, 0, 1.8, 4.0, 1.3, 1.0}, 16, 4},
        {"alternating dense/MoE (Maverick-like)", {0, 2, 0, 0, 2.0, 8.0, 1.2, 1.0}, 16, 4},
        {"alternating + windows 3:1 (Maverick-like)", {0, 2, 4, 0, 2.0, 8.0, 1.2, 0.7}, 16, 4},
        {"windowed 5:1 (Gemma-3-like)", {0, 0, 6, 0, 1.0, 1.0, 1.0, 0.6}, 18, 3},
        {"one kind + MTP 2", {0, 1, 0, 2, 1.5, 3.0, 1.2, 1.0}, 14, 4},
    };
    int agree = 0, n = 0, uneven = 0;
    for (size_t a = 0; a < sizeof pat / sizeof pat[0]; a++)
        for (int tight = 0; tight < 3; tight++) {
            synth_work s;
            synth_work_256k(&s);
            s.layers = pat[a].L, s.stages = pat[a].p, s.hidden = 6144, s.vocab = 128000, s.seq = 4096;
            s.microbatches = 16, s.tp = 2, s.allow_recompute = true;
            /* no recompute: room for an uneven split; with: 60% and 25% of the way from the
             * uniform split's need with every layer recomputed to its need with none */
            capacity_between(&s, &pat[a].k, tight == 0 ? 1.1 : tight == 1 ? 0.6 : 0.2);
            s.allow_recompute = tight > 0;
            if (!synth_kind_costs(&s, &pat[a].k, &C)) continue;
            C.uniform_recompute = tight ? -1 : 0;
            char label[160];
            snprintf(label, sizeof label, "%s, %s", pat[a].name,
                     tight == 0 ? "no recompute" : tight == 1 ? "recompute, tight" : "recompute, tighter");
            agree += check_vs_brute(&C, label, true, 200000000);
            n++;
            for (int64_t j = 1; j < s.stages && R.status == PP_STAGES_OPTIMAL; j++)
                if (R.stage_layers[j] != R.stage_layers[0]) {
                    uneven++;
                    break;
                }
        }
    tap_ok(agree == n && n == 18, "18 patterned instances (dense-first, alternating, windowed, MTP; "
           "with and without recompute): MILP == GLPK alone == brute force (%d); %d uneven", agree,
           uneven);
}

/* By-kind costs whose layers are all of one kind and whose S does not depend on the mix are
 * the count formulation's costs: same optimum. */
static void test_one_kind_is_count(void)
{
    int agree = 0;
    for (int k = 0; k < 40; k++) {
        synth_work s;
        synth_work_256k(&s);
        s.layers = rng_int(6, 14), s.stages = rng_int(2, 4), s.allow_recompute = k % 2;
        s.capacity_bytes = 40e9 + 40e9 * rng_u();
        s.seq = 2048;
        pp_stages_costs_free(&C1);
        synth_costs(&s, &C1);
        if (s.allow_recompute) C1.uniform_recompute = -1;
        pp_stages_costs_free(&C);
        C = C1; /* the count costs (no owned arrays yet) */
        pp_error err = {0};
        pp_stages_costs_kinds_alloc(&C, &err);
        for (int64_t j = 0; j < s.stages; j++) {
            C.kind_time_layer_s[j][0] = C1.time_layer_s[j];
            C.kind_time_recompute_s[j][0] = C1.time_recompute_s[j];
            C.kind_mem_layer_bytes[j][0] = C1.mem_layer_bytes[j];
            C.kind_mem_saved_bytes[j][0] = C1.mem_recompute_saved_bytes[j];
            C.kind_mem_set_bytes[pp_stages_set_index(j, 1, 0)] = C1.mem_base_bytes[j];
            C.kind_mem_set_bytes[pp_stages_set_index(j, 1, 1)] = C1.mem_rc_base_bytes[j];
        }
        pp_stages_solve_costs(&C1, NULL, &R0, &err);
        pp_stages_solve_costs(&C, NULL, &R, &err);
        bool ok = R.status == R0.status &&
                  (R.status != PP_STAGES_OPTIMAL ||
                   fabs(R.pipeline_time_s - R0.pipeline_time_s) <= 1e-9 * R0.pipeline_time_s);
        agree += ok;
        if (!ok)
            tap_diag("one kind %d: by kind %s %.9g, by count %s %.9g", k,
                     pp_stages_status_names[R.status], R.pipeline_time_s,
                     pp_stages_status_names[R0.status], R0.pipeline_time_s);
    }
    tap_ok(agree == 40, "40 instances of one kind: the cut formulation == the count formulation (%d)",
           agree);
}

/* Recomputed layers are priced by their own kind (no averaging): the MILP's per-stage time and
 * memory equal a layer-by-layer sum over the stage's layers, the first r at their kind's
 * recompute; and how far pricing them by the stage's costliest kind would be off. */
static void test_recompute_exact(void)
{
    synth_work s;
    synth_work_256k(&s);
    s.layers = 16, s.stages = 4, s.hidden = 6144, s.vocab = 128000, s.microbatches = 16, s.tp = 2;
    s.allow_recompute = true;
    synth_kinds kk = {0, 2, 0, 1, 2.2, 6.0, 1.3, 1.0}; /* alternating dense / MoE */
    pp_error err = {0};
    double worst_t = 0, worst_m = 0, costliest = 0;
    /* the first device, from roomy to tight, on which some stage recomputes a mix of kinds */
    for (double frac = 0.9; frac > 0 && !(costliest > 1e-3); frac -= 0.05) {
    capacity_between(&s, &kk, frac);
    synth_kind_costs(&s, &kk, &C);
    pp_stages_solve_costs(&C, NULL, &R, &err);
    worst_t = worst_m = costliest = 0;
    for (int64_t j = 0, first = 0; j < 4 && R.status == PP_STAGES_OPTIMAL; first += R.stage_layers[j], j++) {
        double t = C.time_base_s[j], mem = 0, t_costly = C.time_base_s[j], rc_max = 0;
        unsigned P = 0, Q = 0;
        for (int64_t i = first; i < first + R.stage_layers[j]; i++) {
            int k = C.layer_kind[i];
            t += C.kind_time_layer_s[j][k];
            mem += C.kind_mem_layer_bytes[j][k];
            P |= 1u << k;
            if (i < first + R.stage_recompute[j]) {
                t += C.kind_time_recompute_s[j][k];
                mem -= C.kind_mem_saved_bytes[j][k];
                Q |= 1u << k;
            }
            t_costly += C.kind_time_layer_s[j][k];
        }
        for (int k = 0; k < PP_LAYER_KINDS; k++)
            if (P >> k & 1u) rc_max = fmax(rc_max, C.kind_time_recompute_s[j][k]);
        t_costly += rc_max * (double)R.stage_recompute[j];
        mem += C.kind_mem_set_bytes[pp_stages_set_index(j, P, Q)];
        worst_t = fmax(worst_t, fabs(t - R.stage_time_s[j]) / t);
        worst_m = fmax(worst_m, fabs(mem - R.stage_mem_bytes[j]) / mem);
        costliest = fmax(costliest, (t_costly - t) / t);
    }
    }
    char sp[256];
    split_str(&R, sp, sizeof sp);
    tap_ok(R.status == PP_STAGES_OPTIMAL && costliest > 1e-3 && worst_t <= 1e-12 && worst_m <= 1e-12,
           "recomputed layers priced by their own kind (%s, split %s): the MILP's stage time and "
           "memory == the layer-by-layer sum (worst %.2g, %.2g); pricing every recomputed layer "
           "at the stage's costliest kind would overstate a stage's time by up to %.2f%% here",
           pp_stages_status_names[R.status], sp, worst_t, worst_m, 100 * costliest);
}

/* Excluded configurations are honoured by the MILP and the brute force alike. */
static void test_excluded(void)
{
    int agree = 0, n = 0;
    for (int k = 0; k < 40; k++) {
        if (!random_kind_costs(&C, rng_int(2, 4), rng_int(5, 9))) continue;
        for (int e = 0; e < 3; e++) {
            pp_error err = {0};
            pp_stages_solve_costs(&C, NULL, &R, &err);
            if (R.status != PP_STAGES_OPTIMAL) break;
            /* exclude the optimum's first recomputing stage (else stage 0) and solve again */
            int64_t j = 0, first = 0;
            for (int64_t a = 0, f = 0; a < C.n_stages; f += R.stage_layers[a], a++)
                if (R.stage_recompute[a] > 0) {
                    j = a, first = f;
                    break;
                }
            int64_t (*x)[4] = realloc(C.excluded, sizeof *x * (size_t)(C.n_excluded + 1));
            if (!x) break;
            C.excluded = x;
            x[C.n_excluded][0] = j, x[C.n_excluded][1] = first;
            x[C.n_excluded][2] = R.stage_layers[j], x[C.n_excluded][3] = R.stage_recompute[j];
            C.n_excluded++;
            char label[64];
            snprintf(label, sizeof label, "excluded %d.%d", k, e);
            agree += check_vs_brute(&C, label, false, 10000000);
            n++;
        }
    }
    tap_ok(agree == n && n >= 25, "%d solves with 1-3 excluded stage configurations: MILP == GLPK "
           "alone == brute force (%d)", n, agree);
}

static pp_status dummy_eval(void *ctx, int64_t j, int64_t n, int64_t r, double *t, double *m)
{
    (void)ctx, (void)j, (void)n, (void)r;
    if (t) *t = 0;
    if (m) *m = 0;
    return PP_OK;
}

static void test_bad_costs(void)
{
    synth_work s;
    synth_work_256k(&s);
    s.layers = 12;
    synth_kinds kk = {2, 1, 0, 0, 2.0, 4.0, 1.2, 1.0};
    pp_error err = {0};
    synth_kind_costs(&s, &kk, &C);
    C.layer_kind[3] = 7;
    tap_ok(pp_stages_solve_costs(&C, NULL, &R, &err) == PP_ERR_INPUT && strstr(err.msg, "kind"),
           "a layer kind out of range is rejected: %s", err.msg);
    synth_kind_costs(&s, &kk, &C);
    C.kind_mem_set_bytes[pp_stages_set_index(1, 3, 0)] = NAN; /* dense + MoE, nothing recomputed */
    tap_ok(pp_stages_solve_costs(&C, NULL, &R, &err) == PP_ERR_INPUT && strstr(err.msg, "kind_mem_set"),
           "a mix the stage can hold without its S is rejected: %s", err.msg);
    synth_kind_costs(&s, &kk, &C);
    C.kind_mem_set_bytes[pp_stages_set_index(3, 1, 0)] = NAN; /* dense alone: the last stage cannot */
    memset(&err, 0, sizeof err);
    tap_ok(pp_stages_solve_costs(&C, NULL, &R, &err) == PP_OK,
           "a mix the stage cannot hold needs no S (%s)", err.msg[0] ? err.msg : "accepted");
    synth_kind_costs(&s, &kk, &C);
    C.kind_time_recompute_s[2][1] = -1;
    tap_ok(pp_stages_solve_costs(&C, NULL, &R, &err) == PP_ERR_INPUT &&
               strstr(err.msg, "kind_time_recompute_s"),
           "a negative per-kind time is rejected: %s", err.msg);
    synth_kind_costs(&s, &kk, &C);
    C.mem_table[0] = true;
    tap_ok(pp_stages_solve_costs(&C, NULL, &R, &err) == PP_ERR_INPUT, "a table stage with costs by "
           "kind is rejected: %s", err.msg);
    C.mem_table[0] = false;
    tap_ok(pp_stages_costs_tabulate(&C, 0, dummy_eval, NULL, &err) == PP_ERR_INPUT,
           "tabulating costs by kind is refused: %s", err.msg);
    free(C.layer_kind);
    C.layer_kind = NULL;
    tap_ok(pp_stages_solve_costs(&C, NULL, &R, &err) == PP_ERR_INPUT && strstr(err.msg, "alloc"),
           "costs by kind without their arrays are rejected: %s", err.msg);
    synth_kind_costs(&s, &kk, &C);
    C.excluded = calloc(1, sizeof *C.excluded);
    C.n_excluded = 1;
    C.excluded[0][0] = 9;
    tap_ok(pp_stages_solve_costs(&C, NULL, &R, &err) == PP_ERR_INPUT && strstr(err.msg, "excluded"),
           "an excluded configuration out of range is rejected: %s", err.msg);
    pp_stages_costs_free(&C);
    synth_costs(&s, &C);
    C.excluded = calloc(1, sizeof *C.excluded);
    C.n_excluded = 1;
    tap_ok(pp_stages_solve_costs(&C, NULL, &R, &err) == PP_ERR_INPUT, "excluded configurations on "
           "count costs are rejected: %s", err.msg);
    pp_stages_costs_free(&C);
    C.n_stages = 2, C.layers = 5000;
    tap_ok(pp_stages_costs_kinds_alloc(&C, &err) == PP_ERR_INPUT, "5000 layers by kind are refused: %s",
           err.msg);
}

/* Time limit: GLPK alone on a 61-layer, 16-stage instance with a 1 ms limit either proves the
 * optimum or falls back to uniform with a warning naming the limit. */
static void test_time_limit(void)
{
    synth_work s;
    synth_work_256k(&s);
    s.layers = 61, s.stages = 16, s.microbatches = 64, s.hidden = 7168, s.tp = 1, s.vocab = 129280;
    s.allow_recompute = true;
    synth_kinds kk = {3, 1, 0, 1, 2.5, 3.0, 1.3, 1.0};
    capacity_between(&s, &kk, 0.5);
    synth_kind_costs(&s, &kk, &C);
    C.uniform_recompute = -1;
    pp_stages_params prm;
    pp_stages_params_init(&prm);
    prm.milp_only = true;
    prm.time_limit_ms = 1;
    pp_error err = {0};
    pp_stages_solve_costs(&C, &prm, &R, &err);
    tap_ok((R.status == PP_STAGES_OPTIMAL && R.fits) ||
               (R.status == PP_STAGES_FALLBACK && strstr(R.warning, "limit")),
           "1 ms limit, GLPK alone, 61 layers on 16 stages: %s in %.1f ms %s",
           pp_stages_status_names[R.status], 1e3 * R.solve_time_s, R.warning);
}

/* glpsol --lp on the by-kind dump finds the library's optimum. */
static void test_dump(const char *glpsol)
{
    synth_work s;
    synth_work_256k(&s);
    s.layers = 16, s.stages = 4, s.hidden = 6144, s.vocab = 128000, s.microbatches = 16, s.tp = 2;
    s.allow_recompute = true;
    synth_kinds kk = {3, 1, 0, 1, 2.2, 6.0, 1.3, 1.0};
    capacity_between(&s, &kk, 0.5);
    synth_kind_costs(&s, &kk, &C);
    pp_error err = {0};
    glpsol_run g;
    glpsol_check(glpsol, &C, &g, &err);
    tap_ok(g.dumped, "by-kind dump written (%s)", err.msg);
    pp_stages_solve_costs(&C, NULL, &R, &err);
    glpsol_tap(&g, R.pipeline_time_s, "by-kind");
}

int main(int argc, char **argv)
{
    test_random_vs_brute();
    test_larger_vs_brute();
    test_patterns();
    test_one_kind_is_count();
    test_recompute_exact();
    test_excluded();
    test_bad_costs();
    test_time_limit();
    test_dump(argc > 1 ? argv[1] : NULL);
    pp_stages_costs_free(&C);
    pp_stages_costs_free(&C1);
    return tap_done();
}
