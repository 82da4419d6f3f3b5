/* Memory model: per pipeline stage weights, grads, optimizer, activations, transients and the
 * reserve beyond the allocator peak. Formulas and sources are in memory.c. */
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
    const char *peak_moment;   /* --framework fsdp: the moment of the step the peak is at
                                  (memory_fsdp.c); NULL for the other frameworks */
    double cached_bytes;       /* --framework fsdp: what the caching allocator keeps reserved but
                                  unallocated at the peak when memory is not short
                                  (max_memory_reserved - max_memory_allocated; memory_fsdp.c: per
                                  stream, the sharded gradients, the all-gather buffers and the
                                  freed logits' block at the loss backward). It
                                  does not count towards the fit: near the capacity the allocator
                                  frees it and retries. 0 for the other frameworks (not modelled
                                  apart from the slack in reserved_bytes) */
} pp_mem_stage;

typedef struct {
    int64_t n_stages;
    pp_mem_stage stages[PP_MAX_STAGES];
    double capacity_bytes;
    double peak_bytes;      /* max over stages of peak_bytes */
    int64_t largest_stage;  /* stage whose peak + reserved is largest */
    bool fits;
    char why[512];          /* when !fits: one line, why and what would make it fit */
} pp_mem_result;

/* One stage with an explicit layer count and fully recomputed layer count (the stage split's
 * MILP, search/stages*.c, prices uneven splits with it). recompute_layers is exact (0: none fully
 * recomputed, whatever l->recompute says; the other layers are selective when l->recompute is
 * selective).
 * stage selects the embedding (first), the output layer and loss (last) and the in-flight
 * micro-batches of the schedule. The layout is validated. */
void pp_memory_stage(const pp_work *w, const pp_layout *l, int64_t stage, int64_t layers,
                     int64_t recompute_layers, pp_mem_stage *out);
/* The same for decoder layers [first, first + layers): the kinds of those layers (dense, MoE)
 * are priced each by its own table; the first recompute_layers of them are fully recomputed. */
void pp_memory_stage_range(const pp_work *w, const pp_layout *l, int64_t stage, int64_t first,
                           int64_t layers, int64_t recompute_layers, pp_mem_stage *out);

/* One tensor of the per-layer activation table: what one transformer layer keeps for its
 * backward pass for one micro-batch on one rank (memory.c lists them and says where each comes
 * from). The stored bytes of a layer are the sum of elems x bytes_per_elem. */
typedef struct {
    const char *name;
    double elems;
    double bytes_per_elem;
    bool paper; /* counted by Korthikanti et al. 2022, table 2 (false: e.g. norm statistics) */
} pp_act_tensor;

#define PP_ACT_TENSORS_MAX 40
typedef struct {
    int n;
    pp_act_tensor t[PP_ACT_TENSORS_MAX];
    double bytes;       /* sum over the table */
    double paper_bytes; /* sum over the tensors the paper counts */
} pp_act_table;

/* The table of one layer of kind `kind` (PP_LAYER_MOE | PP_LAYER_WINDOW bits) under recompute
 * mode rc (PP_RC_FULL: the checkpointed layer input). */
void pp_memory_layer_table_kind(const pp_work *w, const pp_layout *l, int kind, pp_recompute rc,
                                pp_act_table *out);
/* The same for the model's most common layer (its MoE layer for an MoE model). */
void pp_memory_layer_table(const pp_work *w, const pp_layout *l, pp_recompute rc, pp_act_table *out);

/* Model-state bytes per parameter on one rank (weights, gradients, optimizer) for the
 * framework's mixed-precision Adam under ZeRO stage / distributed optimizer over shard ranks,
 * offload as given. The ZeRO paper's table 1 is params x the sum. */
typedef struct {
    double weights, grads, optimizer;
} pp_state_bytes;
void pp_memory_state_per_param(pp_framework fw, int zero, bool dist_opt, pp_offload off,
                               int64_t shard, pp_state_bytes *out);

/* Full per-stage breakdown (check, report). */
pp_status pp_memory_estimate(const pp_work *w, const pp_layout *l, pp_mem_result *out, pp_error *err);
/* --cpu-offload-layers: the stored activations of the offloaded layers per micro-batch (what goes
 * to host memory and comes back each micro-batch; the peak leaves them out); 0 without it. */
double pp_memory_offload_bytes(const pp_work *w, const pp_layout *l);
/* Megatron-FSDP's communication buffers on a rank (memory.c mem_mfsdp_buffers): layers of
 * unit_params parameters each, weights gathered and gradient buckets at the stage's peak; held:
 * the double buffer's, made once for the run. All zero without --megatron-fsdp or at dp 1. */
typedef struct {
    double unit_params, units_weights, units_grads, weights_bytes, grads_bytes, comm_unit;
    bool held;
} pp_mem_mfsdp;
void pp_memory_mfsdp(const pp_work *w, const pp_layout *l, pp_mem_mfsdp *out);
/* Fast path for the search: the largest (peak + reserved) over stages, no breakdown, no error
 * reporting (the layout is already validated). Writes the allocator peak of that stage to
 * *peak_bytes when not NULL. Must agree with pp_memory_estimate. */
double pp_memory_worst_bytes(const pp_work *w, const pp_layout *l, double *peak_bytes);

/* FSDP2 near the capacity: with the allocator peak above PP_FSDP_RETRY_FRAC of the usable memory,
 * PyTorch's caching allocator freed its cache and retried (cudaFree, retry) in 2 of the 6 one-H200
 * runs of tests/data/fsdp (runs.csv, runs_holdout.csv) above it (85-87%); their steps were 35-45%
 * slower than the model says. Which runs retry depends on fragmentation the model does not track:
 * check and plan warn, nothing is pruned (--max-mem-frac does that). */
#define PP_FSDP_RETRY_FRAC 0.85
bool pp_memory_fsdp_tight(const pp_work *w, double peak_bytes, double capacity_bytes);

/* The margin plan keeps free when --max-mem-frac is not given (pp_work.mem_margin_frac), as a
 * share of the GPU's memory. What it has to cover, measured:
 *   - the memory model's worst under-prediction on runs it was not fitted to: -4.0% of the need
 *     (Qwen3-8B, full recompute, seq 8192, TP 2 PP 2 VPP 3 on 4 x H200: tests/data/node4);
 *   - memory outside the allocator that varies from run to run: NCCL's communicators took 558 to
 *     840 MiB on the same H200s (tests/data/node4/probe/mem_outside.txt), 0.2% of the GPU;
 *   - PyTorch's caching allocator freeing its cache and retrying (35-45% slower steps): 2 of the 6
 *     one-H200 FSDP2 runs did, all of them at a predicted need of 88.9% of the GPU (and none of
 *     those below it: tests/data/fsdp/runs.csv, runs_holdout.csv).
 * 12% keeps every layout plan proposes below the need at which the retries began, with the
 * model's worst error on top of the other two. Megatron runs measured up to 97.8% of the GPU ran
 * (tests/data/node4): `--max-mem-frac 0.98` plans that close, and any --max-mem-frac replaces
 * this margin (the fraction given is then all the margin). */
#define PP_MEM_MARGIN_DEFAULT 0.12
/* The memory plan may fill: capacity x (1 - w->mem_margin_frac). */
double pp_memory_plan_bytes(const pp_work *w);

/* One CUDA graph of the whole iteration (--cuda-graphs full_iteration): its private pool over the
 * iteration's short-lived peak, and the share of the model state the general pool keeps in partly
 * used segments; both in the reserve (memory.c, measured: tests/data/cudagraph). */
extern const double pp_mem_graph_pool_factor, pp_mem_graph_state_held;

/* DeepEP's normal-mode NVLink + RDMA buffers per rank for an expert-parallel group of `ranks`
 * (deepep.c): tokens of hidden_bytes each, num_sms SMs (Megatron's default PP_DEEPEP_SMS). */
#define PP_DEEPEP_SMS 20
double pp_deepep_buffer_bytes(int64_t ranks, double hidden_bytes, int num_sms);
/* The same for a layout: 0 unless MoE with --moe-dispatcher flex. */
double pp_flex_layout_bytes(const pp_work *w, const pp_layout *l);
/* HybridEP's buffers for `tokens` per rank and micro-batch over `ranks` (deepep.c) */
double pp_hybridep_buffer_bytes(double tokens, int64_t ranks, int64_t domain_ranks, double local_experts,
                                double hidden);

#endif
