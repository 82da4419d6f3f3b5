/* What the stage MILP costs `parplan plan` on GPT-3 13B / 16 A100-80GB (2 nodes): the search
 * alone (pp_search_run, top 5), against the search with a wider window (top 32) followed by the
 * MILP (auto) on the candidates that can still enter the top 5 — visited best first, skipped when
 * their step time minus pp_stages_gain_bound cannot beat the 5th best (the cutoff tightens as the
 * MILP improves candidates) — and, for scale, the MILP on every candidate of the window.
 * Benchmark: reports times and ratios, asserts only the bookkeeping (never wall-clock). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pp_memory.h"
#include "pp_search.h"
#include "pp_stages.h"
#include "pp_time.h"
#include "tap.h"
#include "work.h"

#define TOP_K 5
#define WINDOW 32
#define REPS 20

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static pp_search_candidate cand[WINDOW];
static int stage_n[WINDOW][PP_MAX_STAGES], stage_r[WINDOW][PP_MAX_STAGES];
static pp_stages_result RES;

int main(void)
{
    pp_work w;
    if (!work_make(&w, "gpt3-13b", "a100-80gb", 16, 1024, 0, 0, 0)) return tap_skip_all("no catalog");
    pp_search_params sp;
    pp_search_params_init(&sp);
    pp_search_result sr;
    pp_error err = {0};

    /* (a) the search alone, top 5 */
    sp.top = TOP_K;
    double t0 = now_s();
    for (int i = 0; i < REPS; i++)
        if (pp_search_run(&w, &sp, cand, &sr, &err) != PP_OK) return tap_ok(0, "search: %s", err.msg), tap_done();
    double t_search = (now_s() - t0) / REPS;
    double best_uniform = sr.n ? cand[0].time.step_time_s : INFINITY;

    /* (b) wider window + pp_stages_refine (auto) */
    pp_stages_refine_stats rs = {0};
    double t_win = 0, t_wide = 0;
    int64_t nw = 0;
    for (int rep = 0; rep < REPS; rep++) {
        sp.top = WINDOW;
        t0 = now_s();
        pp_search_run(&w, &sp, cand, &sr, &err);
        double t1 = now_s();
        nw = sr.n;
        if (pp_stages_refine(&w, cand, nw, TOP_K, "auto", stage_n, stage_r, &rs, &err) != PP_OK)
            return tap_ok(0, "refine: %s", err.msg), tap_done();
        double t2 = now_s();
        t_wide += t1 - t0;
        t_win += t2 - t1;
    }
    t_wide /= REPS, t_win /= REPS;
    double best_ilp = nw ? cand[0].time.step_time_s : INFINITY;

    /* (c) for scale: the MILP on every pipelined candidate of the window */
    sp.top = WINDOW;
    pp_search_run(&w, &sp, cand, &sr, &err);
    int all = 0;
    t0 = now_s();
    for (int64_t i = 0; i < sr.n; i++) {
        pp_layout l = cand[i].layout;
        if (l.pp < 2 && l.recompute != PP_RC_FULL) continue;
        pp_stages_solve(&w, &l, NULL, &RES, &err);
        all++;
    }
    double t_all = now_s() - t0;

    tap_ok(sr.evaluated > 0 && nw == WINDOW, "13B / 16 A100-80GB: search (top %d) %.2f ms over %lld "
           "layouts; with a %d-wide window %.2f ms", TOP_K, 1e3 * t_search, (long long)sr.evaluated,
           WINDOW, 1e3 * t_wide);
    tap_ok(rs.solved + rs.skipped <= WINDOW,
           "MILP where it can win: %lld solved, %lld skipped by the bound, %lld improved, %.2f ms; "
           "plan search x%.2f (search + window + MILP vs search alone)", (long long)rs.solved,
           (long long)rs.skipped, (long long)rs.improved, 1e3 * t_win, (t_wide + t_win) / t_search);
    tap_ok(best_ilp <= best_uniform * (1 + 1e-12), "best step %.4f s (uniform best %.4f s)", best_ilp,
           best_uniform);
    tap_diag("MILP on all %d pipelined candidates of the window: %.2f ms (x%.2f of the search)", all,
             1e3 * t_all, (t_wide + t_all) / t_search);
    pp_catalog_free(&work_cat);
    return tap_done();
}
