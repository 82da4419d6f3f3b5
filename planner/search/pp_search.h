/* Layout search: enumerate DP x TP x PP x VPP x CP x EP x micro-batch x ZeRO /
 * distributed optimizer x SP x recompute for the work's GPUs and global batch, prune with the
 * divisibility and topology rules and the memory model (counting each reason), rank what is
 * left by the predicted step time (ties: more memory headroom first).
 *
 * The space is the cartesian product of one value list per dimension (a fixed dimension has one
 * value). Rules are checked in the loop nest as soon as their values are known, cheapest first
 * (divisibility, then memory, then time); a candidate is counted under the first rule it breaks
 * and a rule that prunes a whole subtree counts every candidate in it, so
 *   evaluated = sum(pruned) + fitting.
 * No allocation in the loops; the top K live in a fixed-size heap. */
#ifndef PP_SEARCH_H
#define PP_SEARCH_H

#include "pp.h"
#include "pp_time.h"

/* Fixed dimensions: the same bits as PP_FIX_* in src/cli.h (checked there at compile time). */
enum {
    PP_SEARCH_FIX_TP = 1 << 0, PP_SEARCH_FIX_PP = 1 << 1, PP_SEARCH_FIX_DP = 1 << 2,
    PP_SEARCH_FIX_VPP = 1 << 3, PP_SEARCH_FIX_CP = 1 << 4, PP_SEARCH_FIX_EP = 1 << 5,
    PP_SEARCH_FIX_MBS = 1 << 6, PP_SEARCH_FIX_ZERO = 1 << 7, PP_SEARCH_FIX_DIST_OPT = 1 << 8,
    PP_SEARCH_FIX_SP = 1 << 9, PP_SEARCH_FIX_RECOMPUTE = 1 << 10, PP_SEARCH_FIX_OFFLOAD = 1 << 11,
    PP_SEARCH_FIX_ETP = 1 << 12,
};

/* Why a candidate was dropped, in the order the rules are checked. */
typedef enum {
    PP_PRUNE_TP_SHAPE = 0, /* tp does not divide the heads, the KV heads or the FFN */
    PP_PRUNE_TP_NODE,      /* the TP group would leave the node (allow_cross_node_tp lifts it) */
    PP_PRUNE_GPUS,         /* tp x pp x cp does not divide the GPUs (or gives another fixed dp) */
    PP_PRUNE_CP,           /* sequence not divisible by 2 cp, or cp > 1 without flash attention */
    PP_PRUNE_EP,           /* ep does not divide the experts, or ep x etp the tp x cp x dp grid */
    PP_PRUNE_MOE,          /* MoE rules: TP > 1 needs sequence parallelism (Megatron-Core), expert
                              TP inside a node, etp dividing the expert FFN */
    PP_PRUNE_SP,           /* sequence parallel: the sequence shard seq/cp not divisible by tp, or
                              Megatron's local norm modules (pp_work_torch_norms) */
    PP_PRUNE_REDUNDANT,    /* same run as another candidate: sp with tp 1, sharding with dp x cp 1 */
    PP_PRUNE_PP_LAYERS,    /* more stages than layers */
    PP_PRUNE_GBS,          /* global batch not divisible by dp x mbs */
    PP_PRUNE_VPP,          /* interleaving: pp < 2, the micro-batches not a multiple of pp, or pp x
                              vpp not dividing the layers where no split by virtual stage is
                              searched (search.c says where the balanced one is) */
    PP_PRUNE_FRAMEWORK,    /* the framework cannot run it (DeepSpeed ZeRO-2/3 with PP) */
    PP_PRUNE_OOM,          /* the memory model: peak + reserved above the GPU's memory */
    PP_PRUNE_MARGIN,       /* fits, but inside the margin plan keeps free (pp_memory_plan_bytes) */
    PP_PRUNE_COUNT
} pp_prune_reason;
/* "tp_shape", "tp_cross_node", "gpus", "cp", "ep", "moe", "redundant", "pp_layers", "gbs", "vpp",
 * "framework", "oom", "margin": the keys of plan --json's "pruned". */
extern const char *const pp_prune_names[PP_PRUNE_COUNT];
/* One line each, for the human funnel. */
extern const char *const pp_prune_help[PP_PRUNE_COUNT];

typedef struct {
    pp_layout layout;          /* validated; uniform stages, the balanced split by virtual stage
                                  where pp x vpp does not divide the layers, or the fixed layout's
                                  split by virtual stage (its vstage_layers: the caller's array) */
    double peak_bytes;         /* allocator peak of the fullest rank */
    double worst_bytes;        /* its peak + reserved, the figure compared with capacity */
    double headroom_bytes;     /* capacity - worst_bytes (< 0: does not fit) */
    bool fits;
    pp_time_result time;
} pp_search_candidate;

typedef struct {
    pp_layout fixed_layout;    /* values of the fixed dimensions (the rest is ignored) */
    unsigned fixed;            /* PP_SEARCH_FIX_* */
    int64_t top;               /* K: candidates kept (1..PP_SEARCH_MAX_TOP) */
    bool allow_cross_node_tp;  /* let TP groups span nodes */
    const pp_time_opts *opts;  /* NULL: pp_time_opts_default */
    /* Optional: the best fitting candidate of each of the best `shapes_cap` distinct shapes
     * (tp, pp, dp, cp, ep), best first, for explaining the ranking ("why not tp 4?"). */
    pp_search_candidate *shapes;
    int64_t shapes_cap;
} pp_search_params;
#define PP_SEARCH_MAX_TOP 100000

void pp_search_params_init(pp_search_params *p); /* nothing fixed, top 5 */


typedef struct {
    int64_t evaluated;                /* size of the space */
    int64_t pruned[PP_PRUNE_COUNT];
    int64_t leaves;                   /* candidates checked one by one (memory model run) */
    int64_t fitting;                  /* passed every rule: timed and ranked */
    double search_time_s;
    int64_t n;                        /* candidates written to out[], best first */
    int64_t n_shapes;                 /* written to params->shapes[] */
    bool none_fit;                    /* nothing fits: out[] holds the smallest-memory OOM ones */
} pp_search_result;

/* Search w with params; out[] has room for params->top candidates. Best first: the fitting
 * candidates by step time (then headroom); when none fits, the OOM candidates that came
 * closest (by worst_bytes) so that the caller can say what would be needed.
 * Errors: bad params (PP_ERR_INPUT: a fixed value the framework cannot run, top out of range),
 * or a work the time model cannot use. */
pp_status pp_search_run(const pp_work *w, const pp_search_params *params, pp_search_candidate *out,
                        pp_search_result *res, pp_error *err);

/* Candidate order: a before b? (step time, then more headroom, then fewer GPUs per model
 * replica, for a stable order). */
bool pp_search_better(const pp_search_candidate *a, const pp_search_candidate *b);

#endif
