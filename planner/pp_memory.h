/* Memory model: per pipeline stage weights, grads, optimizer, activations, transients and the
 * reserve beyond the allocator peak (issue 3). Formulas and sources are in memory.c. */
#ifndef PP_MEMORY_H
#define PP_MEMORY_H

#include "pp.h"

typedef struct {
    int64_t stage;
    int64_t layers;            /* transformer layers on this stage */
    int64_t recompute_layers;  /* of them fully recomputed */
    int64_t inflight;          /* micro-batches whose activations are held (1F1B / interleaved) */
    double weights_bytes;
    double grads_bytes;        /* incl. fp32 main-grad buffers */
    double optimizer_bytes;    /* fp32 master weights + Adam m, v (sharded as the layout says) */
    double activations_bytes;  /* stored for backward, all in-flight micro-batches */
    double transient_bytes;    /* short-lived peak on top (recompute of a layer, logits bwd, buckets) */
    double reserved_bytes;     /* beyond the allocator peak: context, NCCL/cuBLAS workspaces, slack */
    double peak_bytes;         /* allocator peak = weights+grads+optimizer+activations+transient */
    bool fits;                 /* peak + reserved <= capacity */
} pp_mem_stage;

typedef struct {
    int64_t n_stages;
    pp_mem_stage stages[PP_MAX_STAGES];
    double capacity_bytes;
    double peak_bytes;      /* max over stages of peak_bytes */
    int64_t largest_stage;  /* stage whose peak + reserved is largest */
    bool fits;
    char why[256];          /* when !fits: one line, why and what would make it fit */
} pp_mem_result;

/* Full per-stage breakdown (check, report). */
pp_status pp_memory_estimate(const pp_work *w, const pp_layout *l, pp_mem_result *out, pp_error *err);
/* Fast path for the search: the largest (peak + reserved) over stages, no breakdown, no error
 * reporting (the layout is already validated). Writes the allocator peak of that stage to
 * *peak_bytes when not NULL. Must agree with pp_memory_estimate. */
double pp_memory_worst_bytes(const pp_work *w, const pp_layout *l, double *peak_bytes);

#endif
