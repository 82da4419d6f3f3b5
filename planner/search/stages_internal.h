/* What the files of the stage split (pp_stages.h) share; not installed.
 *   stages.c        the entry points: a costs table solved with GLPK (either formulation), the
 *                   LP dump, the solve from the models, apply, the gain bound, plan's refine
 *   stages_costs.c  the cost tables: validation, evaluation, pricing by table (by count and by
 *                   position), the uniform split
 *   stages_model.c  the cost tables from the memory and time models; the model evaluators
 *   stages_milp.c   the MILP by layer counts (one layer kind)
 *   stages_kinds.c  the MILP by layer kind (the cut formulation)
 * All of parplan's GLPK code is in stages.c, stages_milp.c and stages_kinds.c.
 *
 * Units inside the MILP: milliseconds and GiB, so that the coefficients are O(1)-O(1e3)
 * rather than 1e-3 s and 1e10 bytes (GLPK's tolerances are absolute-ish, 1e-7 scaled). */
#ifndef PP_STAGES_INTERNAL_H
#define PP_STAGES_INTERNAL_H

#include <glpk.h>

#include "pp_stages.h"
#include "stages_cuts.h"

#define MS_PER_S 1e3
#define BYTES_PER_GIB 1073741824.0
/* The memory rows are tightened by this much so that a solution GLPK accepts within its
 * feasibility tolerance (1e-7 relative) still fits when re-checked in exact arithmetic. */
#define MEM_MARGIN_GIB (4096.0 / BYTES_PER_GIB)

/* Bad costs (COSTS_BAD) or a bad layout or call (MODEL_BAD): PP_ERR_INPUT into err. */
#define COSTS_BAD(...) pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, __VA_ARGS__)
#define MODEL_BAD(...) pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, __VA_ARGS__)

/* Stage j's row of mem_rmin: by layer count, the fewest recomputed layers that fit. */
static inline int32_t *pp_stages_rmin_row(const pp_stages_costs *c, int64_t j)
{
    return c->mem_rmin + (size_t)j * (size_t)(c->layers + 1);
}

/* Ascending doubles, for qsort. */
static inline int pp_stages_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ------------------------------------------------------------------ stages_costs.c */

/* The kind mixes (P, Q) stage j can hold within the cut ranges lo/hi: P the kinds of its
 * layers, Q those of its first r (recomputed) layers, for every start, length and r; with the
 * shortest (then least r) and the longest (then most r) configuration holding each. */
typedef struct {
    bool seen[PP_STAGES_KIND_SETS][PP_STAGES_KIND_SETS];
    int64_t f[PP_STAGES_KIND_SETS][PP_STAGES_KIND_SETS], n[PP_STAGES_KIND_SETS][PP_STAGES_KIND_SETS],
        r[PP_STAGES_KIND_SETS][PP_STAGES_KIND_SETS];
    int64_t f2[PP_STAGES_KIND_SETS][PP_STAGES_KIND_SETS], n2[PP_STAGES_KIND_SETS][PP_STAGES_KIND_SETS],
        r2[PP_STAGES_KIND_SETS][PP_STAGES_KIND_SETS];
    unsigned kinds; /* union of every P */
} pp_stages_kind_mixes;
void pp_stages_kind_mixes_find(const pp_stages_costs *c, int64_t j, const int64_t *lo,
                               const int64_t *hi, pp_stages_kind_mixes *mx);

/* Layers and recomputed layers of each kind, and the kind sets, of [first, first + n) with the
 * first r recomputed. */
void pp_stages_kind_counts(const pp_stages_costs *c, int64_t first, int64_t n, int64_t r,
                           int64_t nk[PP_LAYER_KINDS], int64_t rk[PP_LAYER_KINDS], unsigned *P,
                           unsigned *Q);
/* Whether stage j holding [first, first + n) with r recomputed is an excluded configuration. */
bool pp_stages_kind_excluded(const pp_stages_costs *c, int64_t j, int64_t first, int64_t n,
                             int64_t r);

/* The uniform split (pp_layout_stage_layers' rule) with uniform_recompute. */
void pp_stages_uniform_split(const pp_stages_costs *c, int64_t *n, int64_t *r);
/* Fill out's per-stage figures for the split (n, r) under the costs. */
void pp_stages_result_fill(const pp_stages_costs *c, const int64_t *n, const int64_t *r,
                           pp_stages_result *out);

/* ------------------------------------------------------------------ stages_model.c */

/* The time side of the costs for the uniform layout l (memset first; mem_limit_bytes 1e18
 * until the memory side sets it); by_kind costs when the model needs the cut formulation. */
pp_status pp_stages_costs_time_fill(const pp_work *w, const pp_layout *l, pp_stages_costs *c,
                                    pp_error *err);
/* peak + reserved of stage j holding decoder layers [first, first + n), the first r fully
 * recomputed, by the memory model (pp_memory_stage_range). */
double pp_stages_mem_at(const pp_work *w, const pp_layout *l, int64_t j, int64_t first,
                        int64_t n, int64_t r);

/* ------------------------------------------------------------------ the MILP */

/* A split handed to GLPK at its first heuristic call (glp_ios_heur_sol), so that the search
 * starts with a bound to prune against. */
typedef struct {
    double *x;  /* column values, 1-based */
    bool ready, given;
    int64_t work_limit;   /* stop GLPK (glp_ios_terminate) past this many simplex iterations x
                             stages; 0: none */
    int64_t n_stages;
    bool stopped;         /* the limit stopped it */
} pp_stages_incumbent;

/* Add a column named what (what_j when j >= 0); binaries take no bounds. Its index. */
int pp_stages_col_add(glp_prob *P, const char *what, int64_t j, int kind, int type, double lb,
                      double ub, double obj);

/* stages_milp.c. Column indices of the MILP by counts (1-based, GLPK's convention; 0: absent). */
typedef struct {
    int col_T;
    int col_n[PP_MAX_STAGES], col_r[PP_MAX_STAGES], col_z[PP_MAX_STAGES];
} pp_stages_milp_index;
/* The MILP of pp_stages.h by layer counts for c (validated), with T >= T* (the least max stage
 * time of any split it admits). With inc (a solve): inc->x (allocated here; the caller frees
 * it) holds the greedy split at T*, inc->ready when there is one. NULL when out of memory. */
glp_prob *pp_stages_milp_build(const pp_stages_costs *c, pp_stages_milp_index *ix,
                               pp_stages_incumbent *inc);
/* The split (n, r) of GLPK's integer solution. */
void pp_stages_milp_split(const pp_stages_costs *c, glp_prob *P, const pp_stages_milp_index *ix,
                          int64_t *n, int64_t *r);

/* stages_kinds.c. The cut MILP's columns. */
typedef struct pp_stages_kind_index pp_stages_kind_index;
/* The cut MILP of pp_stages.h for by_kind costs c (validated): with the DP's cut ranges,
 * bounds, hull cuts and incumbent, or over the bounds' cut ranges alone (milp_only). *x
 * receives its columns (pp_stages_kind_index_free; NULL when no problem is built). With inc (a
 * solve): inc->x (allocated here; the caller frees it) holds the DP's best split, inc->ready
 * when there is one. With none_fits: *none_fits says that the DP proved that no split fits by
 * the rows, and no problem is built then; without (the LP dump) it is built anyway. NULL when
 * out of memory or none fits. */
glp_prob *pp_stages_kind_build(const pp_stages_costs *c, bool milp_only, pp_stages_kind_index **x,
                               pp_stages_incumbent *inc, bool *none_fits);
/* The split (n, r) of GLPK's integer solution. */
void pp_stages_kind_split(const pp_stages_costs *c, glp_prob *P, const pp_stages_kind_index *x,
                          int64_t *n, int64_t *r);
void pp_stages_kind_index_free(pp_stages_kind_index *x); /* accepts NULL */

#endif
