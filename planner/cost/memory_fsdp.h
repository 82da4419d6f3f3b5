/* Memory of PyTorch FSDP2 (fully_shard) training as torchtitan runs it: the internal interface
 * between memory.c (which calls it for --framework fsdp) and memory_fsdp.c (the model, its
 * sources and constants). Not installed; tests include it to check the timeline terms. */
#ifndef PP_MEMORY_FSDP_H
#define PP_MEMORY_FSDP_H

#include "pp_memory.h"

/* The moments of a training step at which a rank's allocator can reach its peak. FSDP2 frees
 * gradients at zero_grad and creates them block by block in the backward while the activations
 * are released block by block, so the peak is the largest of these, not a sum. */
typedef enum {
    PP_FSDP_AT_LOSS_FORWARD = 0, /* the loss's log-softmax: every activation, the bf16 logits,
                                    their fp32 copy and the log-softmax output */
    PP_FSDP_AT_LOSS_BACKWARD,    /* the log-softmax backward: its output, the gradients in and out */
    PP_FSDP_AT_BACKWARD_TOP,     /* the backward of the stage's last block (the first one run) */
    PP_FSDP_AT_BACKWARD_BOTTOM,  /* the backward of its first block */
    PP_FSDP_AT_REDUCE_LAST,      /* the last gradient reduce-scatter of the backward */
    PP_FSDP_AT_OPTIMIZER,        /* optimizer.step() */
    PP_FSDP_AT_COUNT
} pp_fsdp_moment;
/* "loss forward", "loss backward", "backward (last block)", ... */
extern const char *const pp_fsdp_moment_names[PP_FSDP_AT_COUNT];

/* What one rank holds at one moment, by the pp_mem_stage categories. */
typedef struct {
    double weights;     /* sharded parameters (fp32, or bf16) + unsharded 16-bit (fp8) copies held */
    double grads;       /* sharded gradients present (+ unsharded accumulations under PP) */
    double optimizer;   /* AdamW m and v */
    double activations; /* saved for the backward, all micro-batches in flight */
    double transient;   /* loss and block working sets, reduce-scatter buffers, workspaces,
                           optimizer temporaries */
} pp_fsdp_parts;

typedef struct {
    pp_fsdp_parts at[PP_FSDP_AT_COUNT];
    double bytes[PP_FSDP_AT_COUNT]; /* sum of the parts; 0 for a moment the stage does not have */
    pp_fsdp_moment peak_at;
} pp_fsdp_timeline;

/* Per (work, layout), computed once (the search prices many stages with it). Sizes are per
 * rank: element counts after tensor parallelism, before FSDP sharding. */
typedef struct {
    double shard;            /* ranks a dense parameter is sharded over (dp x cp / replicate) */
    double expert_shard;     /* the same for routed experts (expert data-parallel / replicate) */
    bool reshard;            /* reshard_after_forward of the blocks (--zero 3) */
    bool nosync;             /* PP with several micro-batches: unsharded parameters and accumulation */
    bool nosync_grads;       /* unsharded fp32 accumulation: PP's, or --no-sync-accumulation */
    bool accumulate;         /* several micro-batches without PP: sharded grads live across them */
    bool offload;            /* CPUOffloadPolicy: sharded state on the host */
    double copy_bytes;       /* bytes per element of an unsharded block weight (2 bf16, 1 fp8) */
    double blk_params[2];    /* one decoder block [dense, moe]: its non-expert parameters */
    double blk_expert[2];    /* its routed experts on this rank */
    double embed_params, head_params;
    double act[2][PP_RC_COUNT];      /* stored per block per micro-batch [moe][recompute] */
    double resident[2][PP_RC_COUNT]; /* held while the block's backward runs (recompute included) */
    double bwd_work[2];      /* working set of one block's backward on top */
    double head_act, data, loss_fwd, loss_bwd, embed_bwd_work;
    double held_logits;      /* --keep-logits: the bf16 logits the loop holds through the backward */
    double logits_hole;      /* the freed bf16 logits, a free block the loss backward cannot use */
    double router_held;      /* --router-holds-recompute: what one recomputed MoE block leaves allocated
                                (its saved tensors up to the router) until its next forward */
    double persistent;       /* cuBLAS workspaces, RoPE table */
    double opt_temp_per_param;
    double state_bytes;      /* bytes of a sharded parameter, of its gradient and of each AdamW
                                moment: 4 (fp32), 2 under --param-dtype bf16 */
    double fp8_work[2];      /* fp8 casts of one block's weights (not all-gathered in fp8) */
    double reserve_fixed;    /* CUDA context, driver, NCCL communicators */
} pp_fsdp_ctx;

void pp_fsdp_ctx_init(const pp_work *w, const pp_layout *l, pp_fsdp_ctx *c);

/* FSDP2's gradient sync over a step of mb micro-batches (memory_fsdp.c says why): under PP
 * (torch.distributed.pipelining) the parameters stay unsharded and the gradients unsynced until
 * the last micro-batch; --no-sync-accumulation leaves the gradients unsynced alone. What both the
 * memory and the time model read. */
void pp_fsdp_sync(const pp_work *w, const pp_layout *l, int64_t mb, bool *params_kept, bool *grads_unsynced);

/* One stage: n_all[k] decoder layers of kind k, n_rc[k] of them fully recomputed, the first
 * and/or last stage, `chunks` stage-micro-batches of activations in flight (1F1B). Fills o
 * (breakdown at the peak moment, reserved, fits) and, when tl is not NULL, every moment. */
void pp_fsdp_stage_eval(const pp_work *w, const pp_layout *l, const pp_fsdp_ctx *c,
                        const int64_t n_all[PP_LAYER_KINDS], const int64_t n_rc[PP_LAYER_KINDS],
                        bool first_stage, bool last_stage, double chunks, pp_mem_stage *o,
                        pp_fsdp_timeline *tl);

#endif
