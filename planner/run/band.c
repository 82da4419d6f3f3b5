/* How sure a step time is (pp_run.h, pp_band_for): the band validation measured, as a table.
 *
 * Each row is the 5th and 95th percentile of the step-time error e = predicted / published - 1
 * over the calibrate half of the published runs (tests/data/published/runs.csv, 85 rows stated
 * with the flags a user types), by the family the run falls in here (pp_band_family), with linear
 * interpolation between order statistics. A prediction p then says the run takes between
 * p / (1 + e_hi) and p / (1 + e_lo). The holdout half was not read to build it: the test
 * `published-runs` recomputes every row from the calibrate half (and fails when the table has
 * drifted from the model) and reports how often the band holds the holdout run (target: 80%).
 * Megatron on Blackwell has two families of its own, from the calibrate halves of the Megatron-Bridge
 * tables: dense on GB200/GB300 (tests/data/published/blackwell.csv) and MoE on B200, B300, GB200
 * and GB300 (blackwell_moe.csv), recomputed by `published-blackwell` and `published-blackwell-moe`.
 * Where the model has seen no published run (DeepSpeed, a GPU with no rows, dense on B200/B300)
 * the band is the widest of the families. */
#include "pp_run.h"

#include <string.h>

static const pp_band_row bands[PP_BAND_COUNT] = {
    [PP_BAND_MEGATRON_DENSE] = {"megatron-dense", -0.1075, 0.1184, 36},
    [PP_BAND_FSDP_DENSE] = {"fsdp-dense", -0.2207, 0.0922, 34},
    [PP_BAND_MOE] = {"moe", -0.5534, 0.3288, 15},
    [PP_BAND_BLACKWELL_DENSE] = {"blackwell-dense", -0.1277, 0.1089, 26},
    [PP_BAND_BLACKWELL_MOE] = {"blackwell-moe", -0.3506, 0.2881, 55},
    [PP_BAND_UNSEEN] = {"unseen", -0.5534, 0.3288, 0},
};

/* The GPUs the published runs ran on (the --gpu of runs.csv's parplan_args). */
static const char *const seen_gpus[] = {"h100-sxm", "h100-96gb-gt500w", "h200", "a100-80gb", "h800"};

/* The Blackwell GPUs of the Megatron-Bridge tables, and those of them its dense rows ran on. */
static const char *const blackwell_gpus[] = {"b200", "b300", "gb200", "gb300"};
static const char *const blackwell_dense_gpus[] = {"gb200", "gb300"};

static bool name_in(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(name, list[i])) return true;
    return false;
}

pp_band pp_band_family(const pp_work *w)
{
    if (w->framework == PP_FW_MEGATRON && name_in(w->gpu.name, blackwell_gpus, 4)) {
        if (pp_model_is_moe(&w->model)) return PP_BAND_BLACKWELL_MOE;
        return name_in(w->gpu.name, blackwell_dense_gpus, 2) ? PP_BAND_BLACKWELL_DENSE : PP_BAND_UNSEEN;
    }
    bool seen = false;
    for (size_t i = 0; i < sizeof seen_gpus / sizeof seen_gpus[0]; i++)
        seen |= !strcmp(w->gpu.name, seen_gpus[i]);
    if (!seen || w->framework == PP_FW_DEEPSPEED) return PP_BAND_UNSEEN;
    if (pp_model_is_moe(&w->model)) return PP_BAND_MOE;
    if (w->framework == PP_FW_FSDP || w->stack.megatron_fsdp) return PP_BAND_FSDP_DENSE;
    return PP_BAND_MEGATRON_DENSE;
}

const pp_band_row *pp_band_for(const pp_work *w) { return &bands[pp_band_family(w)]; }

void pp_band_range(const pp_band_row *b, double v, double *lo, double *hi)
{
    *lo = v / (1.0 + b->err_hi);
    *hi = v / (1.0 + b->err_lo);
}
