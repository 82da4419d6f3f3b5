/* The cut ranges of a stage split: where each stage can start under the costs' layer bounds.
 * Defined in stages_costs.c; used by the stage files (stages_internal.h) and by the tests'
 * positional brute force (tests/search/stages/brute.c), which enumerates the same ranges. Not
 * installed. */
#ifndef PP_STAGES_CUTS_H
#define PP_STAGES_CUTS_H

#include "pp_stages.h"

/* Range of the cut c_j (first layer of stage j; c_0 = 0, c_p = L) that the layer bounds allow:
 * lo[j] <= c_j <= hi[j], j = 0..p (p + 1 entries each). */
void pp_stages_cut_bounds(const pp_stages_costs *c, int64_t *lo, int64_t *hi);

#endif
