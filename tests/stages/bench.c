/* Solve times of the stage MILP (issue 5) on the synthetic costs of synth.h, by pipeline depth.
 * Benchmark: reports rates, asserts only that each solve proved an optimum (or fell back with a
 * warning), never a wall-clock figure. */
#include <stdio.h>
#include <time.h>

#include "pp_stages.h"
#include "synth.h"
#include "tap.h"

static pp_stages_costs C;
static pp_stages_result R;

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
    return tap_done();
}
