/* Brute-force references for the stage MILP tests: every split and every recompute count,
 * enumerated and priced one by one (tests/search/stages/brute.c), against which the MILP's optimum is
 * checked. Test code only: the library does not carry them. */
#ifndef PP_TEST_STAGES_BRUTE_H
#define PP_TEST_STAGES_BRUTE_H

#include "pp_stages.h"

/* Every integer vector n (lo_j <= n_j <= hi_j, sum L) and every r_j in 0..n_j (0 when
 * recompute is not allowed); the lowest pipeline time that fits, first found on ties. eval
 * NULL: the linear costs (pp_stages_costs_eval); else eval(ctx, ...) for time and memory (e.g.
 * pp_stages_eval_model). *evaluated (optional) counts the points. PP_ERR_INPUT when more than
 * max_points points would be visited. Status OPTIMAL when something fits, else FALLBACK with
 * the uniform split. */
pp_status brute_stages(const pp_stages_costs *c, pp_stages_eval_fn eval, void *ctx,
                       int64_t max_points, pp_stages_result *out, int64_t *evaluated,
                       pp_error *err);

/* The positional reference (any costs, by_kind or not): every contiguous split (lo_j <= n_j <=
 * hi_j, sum L) and every r_j in 0..n_j (0 when recompute is not allowed), stage j starting after
 * the layers of stages 0..j-1; eval NULL: pp_stages_costs_eval_range, else eval(ctx, ...) (e.g.
 * pp_stages_eval_model_range). Otherwise as brute_stages. */
pp_status brute_stages_range(const pp_stages_costs *c, pp_stages_eval_range_fn eval, void *ctx,
                             int64_t max_points, pp_stages_result *out, int64_t *evaluated,
                             pp_error *err);

#endif
