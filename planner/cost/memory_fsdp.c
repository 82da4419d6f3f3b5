/* Memory of PyTorch FSDP2 training as torchtitan runs it (--framework fsdp), per pipeline stage.
 *
 * What is trained (torchtitan/models/llama3/infra/parallelize.py, apply_fsdp; the measurement
 * harness tools/fsdp/train.py does the same): fully_shard on the token embedding, on every
 * decoder block and on [final norm, output] together, then on the root;
 * MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32); AdamW (fused by default,
 * torchtitan's Optimizer.implementation); SDPA (flash), eager RMSNorm / RoPE / SwiGLU; the loss
 * on logits.float(). What a rank holds, and when:
 *
 *   - the sharded fp32 parameters, 4 B per parameter / shard, always;
 *   - AdamW's m and v, 8 B / shard, created at the first optimizer step (torch/optim/adamw.py,
 *     _init_group: zeros_like), so from step 2 on they are there for the whole step;
 *   - the sharded fp32 gradients (reduce-scatter outputs, reduce_dtype fp32), 4 B / shard:
 *     optimizer.zero_grad(set_to_none=True) frees them at the start of a step, so the forward
 *     and the loss run without gradients, and the backward creates them block by block while it
 *     releases the blocks' activations;
 *   - unsharded bf16 parameters of the groups being computed: with reshard_after_forward (FSDP2's
 *     default, --zero 3) a block is all-gathered for its forward and again for its backward,
 *     where the next one is prefetched (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py:
 *     pre_backward -> _backward_prefetch); without it (--zero 2, torchtitan's "never") every
 *     block's bf16 copy lives from its forward to its post-backward. [norm, output] is never
 *     resharded after forward (torchtitan: backward needs it at once);
 *   - per group in the backward (_fsdp_param_group.py post_backward, _fsdp_collectives.py
 *     foreach_reduce): the bf16 unsharded gradients, the fp32 reduce-scatter input they are copied
 *     into (then freed), the reduce-scatter output; the previous group's reduce-scatter input is
 *     kept until the next group's reduction starts (comm_ctx.reduce_scatter_state);
 *   - the activations each block saves (tables below), the loss (bf16 logits, their fp32 copy,
 *     the fp32 log-softmax it saves; in its backward the fp32 gradients in and out), and the
 *     working set of the block whose backward runs (with activation checkpointing its forward is
 *     recomputed first);
 *   - the optimizer step: fused AdamW has no temporaries; foreach AdamW allocates sqrt(v) for the
 *     whole parameter group (torch/optim/adam.py _multi_tensor_adam: torch._foreach_sqrt), 4 B /
 *     shard.
 *
 * The allocator peak is the largest of the moments in memory_fsdp.h, not a sum of the largest
 * terms. Checked against 15 real FSDP2 runs on one H200 (tests/data/fsdp/runs.csv) and 7 held
 * out whose predictions were committed first (runs_holdout.csv; tests/cost/memory/test_fsdp_runs.c). Not measured: several ranks (sharding, HSDP, TP, CP, PP),
 * float8, MoE and MLA under FSDP, CPU offload; their terms follow the same sources. */
#include "memory_fsdp.h"
#include "pp_layer.h"

#include <math.h>
#include <string.h>

/* What torch's cross-entropy holds per logit, bytes: at the log-softmax (the logits, their fp32
 * copy and the fp32 log-softmax it saves) and in its backward (the saved output, nll_loss's
 * gradient and the input gradient), on logits.float() (torchtitan) and on the bf16 logits (--loss
 * bf16). Measured exactly on one H200 (tools/fsdp/loss_memory.py, tests/data/fsdp/loss_memory.jsonl:
 * 10.000 / 12.000 and 4.000 / 6.000 at 1.05G and 2.1G logits; checked by
 * tests/validation/kernels/loss.py). FSDP_LOSS_PARALLEL_EXP: DTensor's vocab-parallel log-softmax
 * backward forms exp(output) as a tensor of its own (torch/distributed/tensor/parallel/loss.py),
 * measured on 4 x H200 (tests/data/node4/fsdp_runs.csv, FSDP2 + TP 2: 2004 and 4009 MiB above 12
 * bytes per logit at 525M and 1050M logits a rank). */
#define FSDP_LOSS_UPCAST_FWD 10.0
#define FSDP_LOSS_UPCAST_BWD 12.0
#define FSDP_LOSS_BF16_FWD 4.0
#define FSDP_LOSS_BF16_BWD 6.0
#define FSDP_LOSS_PARALLEL_EXP 4.0
/* The same loss under torch.compile (--compile-loss; torchtitan compiles its cross_entropy_loss with
 * the model since 2025-02): Inductor fuses the upcast, log-softmax and nll_loss, keeps the bf16
 * logits for the backward and makes their bf16 gradient in one pass, on logits.float() and on the
 * bf16 logits alike. Measured on one H200 (tests/data/fsdp/loss_memory.jsonl, upcast_compiled and
 * bf16_compiled: 2.000 / 4.000 bytes a logit at 1.05G and 2.1G logits; the logits stay allocated
 * from the loss forward to its backward, so nothing is freed ahead of the backward). */
#define FSDP_LOSS_COMPILED_FWD 2.0
#define FSDP_LOSS_COMPILED_BWD 4.0
/* Compiled under TP's loss_parallel (DTensor's vocab-parallel log-softmax traced by Inductor), the
 * fusion is partial: at the loss backward of a two-H200 FSDP2 + TP 2 run, 8 bytes a logit of the
 * rank's shard in the loss's own blocks and the 2 of the bf16 logits it keeps
 * (tests/data/fsdp/loss_tp/lt_tp2_s32k_cl.json, the allocator's history; the eager twin held its
 * 12 + 4). Its forward is not measured apart: priced as the eager loss's 10, which ties the
 * backward's. */
#define FSDP_LOSS_COMPILED_PARALLEL_BWD 10.0

#define MIB (1024.0 * 1024.0)

/* ------------------------------------------------------------------ calibration constants */

/* Device memory outside the PyTorch allocator of a torchtitan-style process: CUDA context, kernel
 * images, cuBLAS handles, NCCL's world-size-1 communicator. Measured on H200 (PyTorch 2.11,
 * CUDA 13): device used (cudaMemGetInfo after each step) minus max_memory_reserved was 1308.8
 * MiB in all 13 completed runs of tests/data/fsdp/runs.csv (Megatron-LM's process takes 2476,
 * memory.c: it loads more kernels). */
static const double FSDP_CONTEXT_BYTES = 1309.0 * MIB;
/* What the driver keeps back from the total that capacity is taken from (memory.c, H200). */
static const double FSDP_DRIVER_BYTES = 616.0 * MIB;
/* NCCL buffers per communicator a rank uses (memory.c: measured 500 MiB per communicator on
 * 2 x H200 with Megatron's groups); FSDP2 uses the shard group's, HSDP adds the replicate
 * group's, TP, CP and PP their own. Not measured with FSDP2. */
static const double FSDP_NCCL_COMM_BYTES = 500.0 * MIB;
/* Allocator slack that counts towards a fit: the fraction of the short-lived part of the peak
 * (peak minus parameters, optimizer state and workspaces) calibrated on Megatron-LM near the
 * capacity (memory.c, MEM_SLACK_FRACTION). With expandable segments (torchtitan's
 * PYTORCH_ALLOC_CONF=expandable_segments:True, as in the runs) the allocator keeps freed pages
 * mapped while it can: max_memory_reserved - max_memory_allocated was 25 MiB (foreach AdamW, the
 * peak at the end of the step) to 17.0 GiB in the runs, but under pressure it unmaps them and
 * retries before it fails: l8b_s4k_b1_full_nors ran with 10 retries and 124.6 GiB allocated,
 * l8b_s8k_b1_full with 124.6 GiB allocated and 138.0 GiB reserved of 139.8. The runs bound the
 * slack only from above (17.2 GiB between the 8B runs' peak + context and the capacity). */
static const double FSDP_SLACK_FRACTION = 0.04;
/* cuBLAS / cuBLASLt workspaces, allocated through the caching allocator and kept. Measured: the
 * allocation at the end of step 1 minus 16 B per parameter minus the RoPE table is 63.6-63.9 MiB
 * in every run (both models, both sequence lengths): two 32 MiB workspaces on Hopper. */
static const double FSDP_WORKSPACE_BYTES = 64.0 * MIB;

const char *const pp_fsdp_moment_names[PP_FSDP_AT_COUNT] = {
    "loss forward", "loss backward", "backward of the stage's last block",
    "backward of the stage's first block", "last gradient reduce-scatter", "optimizer step",
};

/* ------------------------------------------------------------------ per (work, layout) */

/* Whether a linear layer's output (layer.c's titan GEMMs) is among the tensors a block keeps
 * without AC: w1 and w3 (SiLU's and the product's inputs), wq and wk unless RoPE replaces them,
 * wk and wv unless repeat_kv does; not wo and w2 (their outputs go into the residual sum). */
static bool fsdp_out_in_none(const char *name, bool rope, bool repeat)
{
    if (!strcmp(name, "wq")) return !rope;
    if (!strcmp(name, "wk")) return !rope && !repeat;
    if (!strcmp(name, "wv")) return !repeat;
    return !strcmp(name, "w1") || !strcmp(name, "w3");
}

/* Stored activations of one dense (non-MLA) block per micro-batch on one rank, for each
 * recompute mode, and what it holds while its backward runs: the layer description's titan
 * variant (torchtitan's block: its geometry and its seven linears). */
static void fsdp_dense_tables(const pp_work *w, const pp_layer *ly, pp_fsdp_ctx *c)
{
    const pp_model *m = &w->model;
    const double T = ly->tokens, h = ly->hidden, aq = ly->heads, hq = ly->q_width;
    /* torchtitan's TP shards the norms' rows (SequenceParallel on attention_norm, ffn_norm and
     * norm, apply_tp): the residual stream is split t ways between the blocks. */
    const double hr = h * ly->rep_titan;
    const bool rope = m->pos == PP_POS_ROPE, repeat = ly->kv_heads < aq && w->stack.repeat_kv;

    /* torchtitan's op-level selective AC keeps the outputs of SDPA and of the mms the layer
     * description marks (sac_saved: every other aten.mm); with TP the reduce-scatter outputs
     * too (_c10d_functional.reduce_scatter_tensor is in _op_sac_save_list). In a Llama block
     * that keeps wq, wv, w1, w2 and the attention output. The checkpoint's input is kept by the
     * non-reentrant checkpoint. */
    double sel = 2 * hr + 2 * hq + 4 * aq, sel_extra = 0;
    for (int i = 0; i < ly->n_gemm; i++) {
        const pp_layer_gemm *g = &ly->gemm[i];
        if (!g->sac_saved) continue;
        /* --compile: the partitioner keeps what the backward reads; w2's output only enters the
         * residual sum, so the compiled block does not keep it where eager SAC does (MUST_SAVE).
         * Measured: 2h bytes per token less (e3_sel_b4_cmp against the model's eager SAC,
         * tests/data/node4/h100 fsdp_runs.csv). */
        if (w->stack.compile && !strcmp(g->name, "w2")) continue;
        sel += 2 * g->n;
        if (!fsdp_out_in_none(g->name, rope, repeat)) sel_extra += 2 * g->n;
    }
    if (ly->tp > 1) { /* wo's and w2's reduce-scatter outputs */
        sel += 2 * 2 * hr;
        sel_extra += 2 * 2 * hr;
    }
    c->act[0][PP_RC_NONE] = ly->saved_bytes; /* the description's saved tensors (titan variant) */
    /* --eager-norm composite: each of the block's two RMSNorms saves its fp32 upcast and its bf16
     * normalized output, 6 bytes an element (composite-fp32: 8), where the fused kernel saves the
     * rstd alone (pp_eager_norm_saved_bytes); recomputed under AC */
    c->act[0][PP_RC_NONE] += 2 * pp_eager_norm_saved_bytes(&w->stack) * T * hr;
    c->act[0][PP_RC_SELECTIVE] = T * sel;
    c->act[0][PP_RC_FULL] = pp_layer_saved_bytes(ly, PP_RC_FULL, 0, NULL); /* the checkpointed input */
    /* During a block's backward its forward tensors are there again (recomputed under AC; the
     * selective cache adds the saved outputs that the plain forward does not keep). */
    const double own = c->act[0][PP_RC_NONE] + ly->bwd_resident_extra_bytes;
    c->resident[0][PP_RC_NONE] = own;
    c->resident[0][PP_RC_FULL] = own;
    c->resident[0][PP_RC_SELECTIVE] = own + T * sel_extra;
    /* Backward working set on top: the largest of the layer's records (layer.c). */
    c->bwd_work[0] = ly->bwd_work_bytes;
}

/* The bytes a layer description saves under each recompute mode (Megatron's table: it stands in
 * for the layers torchtitan's block does not describe, MLA and MoE). */
static void fsdp_saved(const pp_layer *ly, double act[PP_RC_COUNT])
{
    for (int rc = 0; rc < PP_RC_COUNT; rc++)
        act[rc] = pp_layer_saved_bytes(ly, (pp_recompute)rc, ly->saved_sel_mods, NULL);
}

void pp_fsdp_sync(const pp_work *w, const pp_layout *l, int64_t mb, bool *params_kept, bool *grads_unsynced)
{
    *params_kept = l->pp > 1 && mb > 1;
    *grads_unsynced = mb > 1 && (l->pp > 1 || w->stack.no_sync_accum);
}

void pp_fsdp_ctx_init(const pp_work *w, const pp_layout *l, pp_fsdp_ctx *c)
{
    memset(c, 0, sizeof *c);
    const pp_model *m = &w->model;
    /* --zero 0 / 1: no sharding (torchtitan's DDP), priced as FSDP2 over one rank keeping its bf16
     * copies */
    pp_fsdp_shards(l, &c->shard, &c->expert_shard);
    c->reshard = l->zero >= 3;
    int64_t mb = pp_layout_microbatches(w, l);
    /* torch.distributed.pipelining (stage.py, backward_maybe_with_nosync) turns FSDP's gradient
     * sync and reshard-after-backward off for all but the last micro-batch: the stage keeps its
     * unsharded bf16 parameters and fp32 unsharded gradient accumulators (FSDPParam
     * to_accumulated_grad_if_needed: reduce dtype) until the last backward. torchtitan's gradient
     * accumulation without PP reduce-scatters every micro-batch into the sharded gradients;
     * --no-sync-accumulation turns the gradient sync alone off (set_requires_gradient_sync(False):
     * the accumulators, not the parameters, stay unsharded). */
    pp_fsdp_sync(w, l, mb, &c->nosync, &c->nosync_grads);
    c->accumulate = l->pp == 1 && mb > 1 && !c->nosync_grads;
    c->offload = l->offload != PP_OFF_NONE;
    /* float8 (torchao through torchtitan's quantize.linear.float8 converter, tensorwise scaling
     * with enable_fsdp_float8_all_gather when the parameters are sharded): a block's linear
     * weights are all-gathered and held unsharded in fp8, 1 byte. Rowwise scaling gathers bf16
     * (pp_fsdp_fp8_gather). Measured end to end on two H200s (tests/data/fsdp/runs_float8.csv, 8
     * Llama-3-8B layers, compiled): under full and selective AC the allocated peaks of both recipes
     * within 1.7% (their moment is the loss's, where the gathered weights are few); without AC the
     * float8 runs held 4.2 and 5.5 GiB less than their bf16 twin, which this does not price (11-15%
     * high; checked by the fsdp-float8 test). */
    bool fp8 = w->stack.precision == PP_PREC_FP8;
    bool fp8_gather = pp_fsdp_fp8_gather(w, l);
    c->copy_bytes = fp8_gather ? 1.0 : 2.0;

    /* Parameters per rank: model.c's table split as the layout splits it (layer.c). */
    pp_layer_rank_params rp;
    pp_layer_rank_params_get(w, l, false, &rp);
    const double *sc = rp.scope;
    c->blk_params[0] = sc[PP_TS_LAYER] + sc[PP_TS_DENSE];
    c->blk_params[1] = c->blk_params[0];
    if (m->experts > 1) {
        c->blk_params[1] = sc[PP_TS_LAYER] + sc[PP_TS_MOE];
        c->blk_expert[1] = sc[PP_TS_EXPERT];
    }
    c->embed_params = sc[PP_TS_EMBED];
    /* Untied output layer (vocab-parallel under TP); a tied one is the embedding's, counted on
     * the last stage as well when the pipeline splits them. */
    c->head_params = sc[PP_TS_FINAL] + sc[PP_TS_OUTPUT] + rp.tied_copy;

    /* The layers: the layer description's titan variant (torchtitan's block), or for MLA
     * Megatron's. */
    pp_layer ly;
    pp_layer_build_parts(w, l, 0, PP_LAYER_GEMMS | PP_LAYER_SAVED | PP_LAYER_TRANSIENTS, &ly);
    const double h = ly.hidden, T = ly.tokens, t = ly.tp, rep = ly.rep_titan;
    const double V = (double)m->vocab;
    if (ly.mla) {
        /* MLA: Megatron's eager table stands in; not measured under FSDP. */
        fsdp_saved(&ly, c->act[0]);
        for (int rc = 0; rc < PP_RC_COUNT; rc++) c->resident[0][rc] = c->act[0][PP_RC_NONE];
        c->bwd_work[0] = ly.bwd_work_bytes;
    } else {
        fsdp_dense_tables(w, &ly, c);
    }
    /* --router-holds-recompute: a router that stores a loss tensor on its module in the forward
     * (KempnerForge kempnerforge/model/router.py:68 `self.aux_loss = ...`, :71 z_loss, at 5666d0d1)
     * stores it again when torch.utils.checkpoint re-runs the block in the backward; that tensor's
     * graph is the recompute's, and it keeps what the recompute saved up to the router (the same
     * tensors the backward reads: non-reentrant checkpoint's recomputation hook stores each saved
     * tensor for the backward and returns it to the graph being built), so they stay allocated
     * until the block's next forward replaces the attribute: both norms' saved tensors, the
     * attention's, the router's input. The experts' are freed as usual. Measured
     * on two H200 (tests/data/kf, tools/kf/run_kf.sh): at the backward's last block every other
     * block's norm and attention tensors were live (the allocator history), 0.94 GiB a block at
     * 16384 tokens of width 2048, with and without the auxiliary loss in the loss; the dense twin
     * holds none. Priced from the titan block's saved tensors before the MLP (layer.c). */
    if (w->stack.router_holds_recompute && m->experts > 1 && !ly.mla) {
        for (int i = 0; i < ly.n_saved; i++) {
            const char *nm = ly.saved[i].name;
            if (!strncmp(nm, "attention_norm.", 15) || !strncmp(nm, "attn.", 5) || !strncmp(nm, "qk_norm.", 8) ||
                !strncmp(nm, "ffn_norm.", 9))
                c->router_held += ly.saved[i].elems * ly.saved[i].bytes_per_elem;
        }
        c->router_held += 2 * pp_eager_norm_saved_bytes(&w->stack) * T * h * rep;
    }
    if (m->experts > 1) {
        /* MoE layers: Megatron's eager table (router, permuted tokens, expert MLPs) stands in for
         * torchtitan's MoE; not measured under FSDP. */
        pp_layer moe;
        pp_layer_build_parts(w, l, PP_LAYER_MOE, PP_LAYER_SAVED | PP_LAYER_TRANSIENTS, &moe);
        fsdp_saved(&moe, c->act[1]);
        for (int rc = 0; rc < PP_RC_COUNT; rc++) c->resident[1][rc] = c->act[1][PP_RC_NONE];
        c->bwd_work[1] = moe.bwd_work_bytes;
    } else {
        memcpy(c->act[1], c->act[0], sizeof c->act[0]);
        memcpy(c->resident[1], c->resident[0], sizeof c->resident[0]);
        c->bwd_work[1] = c->bwd_work[0];
    }
    /* fp8 GEMMs cast their operands: the weight and its transpose for the backward (unless
     * all-gathered in fp8, where only the transpose is new) and the input and output gradient,
     * one byte each, for the block's largest linear layer at a time. Not measured apart (the peaks
     * of tests/data/fsdp/runs_float8.csv fall at the loss). */
    if (fp8) {
        double f = ly.ffn, widest = fmax(h, f);
        double big = h * f; /* w1, w3 or w2 */
        /* rowwise scaling holds the operand cast along its other axis too, one byte more per
         * element of the widest: on one H200 (tests/data/fp8/fp8_linear.jsonl) a compiled Llama
         * block's peak rose 0.44 GiB over tensorwise at 8B TP 8 (this term: 0.38), 1.14 GiB at
         * 70B TP 8 (1.00) and 0.71 GiB at 8B without TP (0.22: short there) */
        double operand_bytes = w->stack.fp8_scaling == PP_FP8_ROWWISE ? 3.0 : 2.0;
        c->fp8_work[0] = c->fp8_work[1] = (fp8_gather ? 1.0 : 2.0) * big + operand_bytes * T * widest;
    }

    /* Last stage: the final norm's input (the last block's output) and rstd, the output layer's
     * input all-gathered over TP. First and last: the int64 token ids and labels. */
    double stats = m->norm == PP_NORM_LAYERNORM ? 8.0 : 4.0;
    c->head_act = T * (2 * h * rep + stats * rep + 2 * h);
    c->data = 16.0 * T;
    /* The loss (torchtitan cross_entropy_loss: F.cross_entropy(pred.flatten(0, 1).float(), ...)),
     * vocab-parallel under TP (loss_parallel). Forward, at the log-softmax: the bf16 logits, their
     * fp32 copy and the fp32 log-softmax it saves, 10 bytes per logit. The bf16 logits are freed
     * before the backward (torchtitan's train step: "need to free pred before bwd"); in the
     * log-softmax backward its saved output, nll_loss's fp32 gradient and the fp32 input gradient:
     * 12 bytes, the larger. Measured to the MiB on every loss-bound run. */
    /* --tp-vocab gathered|replicated: the logits all-gathered whole to every TP rank and the loss
     * a plain F.cross_entropy on them there (the shard the output layer wrote is freed once
     * gathered: the all-gather's backward needs no input). */
    const bool loss_parallel = pp_layer_loss_parallel(w, l);
    double logits = loss_parallel ? T * V / t : T * V;
    c->loss_fwd = FSDP_LOSS_UPCAST_FWD * logits;
    c->loss_bwd = FSDP_LOSS_UPCAST_BWD * logits;
    /* Under TP, loss_parallel's log-softmax is DTensor's own: its exp(output) on top */
    if (loss_parallel) c->loss_bwd = (FSDP_LOSS_UPCAST_BWD + FSDP_LOSS_PARALLEL_EXP) * logits;
    /* --loss bf16 (NeMo AutoModel's MaskedCrossEntropy, fp32_upcast: false; KempnerForge's
     * cross_entropy): the same steps on the bf16 logits, half the bytes of each fp32 tensor: 4 at
     * the log-softmax (logits and the log-softmax it saves), 6 in its backward (8 under TP, by the
     * same halving of DTensor's exp). --loss cut (cut cross-entropy, Wijmans et al. 2024,
     * cut_cross_entropy.linear_cross_entropy): the logits are formed a block at a time in on-chip
     * memory and never stored; not measured. */
    pp_loss loss = pp_work_loss(w);
    if (loss == PP_LOSS_TORCH_BF16) {
        c->loss_fwd = FSDP_LOSS_BF16_FWD * logits;
        c->loss_bwd = (FSDP_LOSS_BF16_BWD + (loss_parallel ? FSDP_LOSS_PARALLEL_EXP / 2.0 : 0.0)) * logits;
    } else if (loss == PP_LOSS_CUT) {
        c->loss_fwd = c->loss_bwd = 0.0;
    }
    /* --compile-loss (under TP's loss_parallel, the partial fusion's figures) */
    if (w->stack.compile_loss && loss != PP_LOSS_CUT) {
        c->loss_fwd = (loss_parallel ? FSDP_LOSS_UPCAST_FWD : FSDP_LOSS_COMPILED_FWD) * logits;
        c->loss_bwd = (loss_parallel ? FSDP_LOSS_COMPILED_PARALLEL_BWD : FSDP_LOSS_COMPILED_BWD) * logits;
    }
    /* --keep-logits: a training loop that keeps its reference to the model's output through the
     * backward holds the bf16 logits, 2 bytes each, from the loss backward to the backward's end
     * (KempnerForge scripts/train.py:819-850 at 5666d0d1: `logits = model(...)` lives until the
     * next micro-batch's forward returns; NeMo AutoModel recipes/llm/train_ft.py: `out` until
     * after `.backward()`). The loss's own bytes above were measured with them freed, as torchtitan
     * does. At the loss forward they are counted already; at the optimizer step AutoModel has
     * dropped them, and KempnerForge's step is below its backward. Checked on KempnerForge's
     * published peaks (tests/data/published/runs.csv kf-01..08) and on one H200
     * (tests/data/fsdp/keep_logits.jsonl). Cut cross-entropy forms no logits to keep. */
    c->held_logits = w->stack.keep_logits && loss != PP_LOSS_CUT ? 2.0 * logits : 0.0;
    /* The bf16 logits torchtitan frees before the loss backward: a block the upcast backward's fp32
     * tensors are too large to reuse (cached_bytes below). */
    c->logits_hole = !w->stack.keep_logits && !w->stack.compile_loss && loss == PP_LOSS_TORCH ? 2.0 * logits : 0.0;
    /* --param-dtype bf16: the sharded parameters, their gradients (FSDP2 casts the fp32
     * reduce-scatter output to the parameter's dtype) and torch AdamW's m and v (zeros_like) are
     * bf16: 2 + 2 + 4 bytes per parameter of the shard, not 4 + 4 + 8. */
    c->state_bytes = w->stack.param_bf16 ? 2.0 : 4.0;
    /* The embedding backward (embedding_dense_backward) sums the token rows in fp32 partial
     * segments before writing the bf16 weight gradient. */
    c->embed_bwd_work = 4.0 * T * h;
    /* RoPE: torchtitan's freqs_cis, complex64 [seq, head_dim / 2], a buffer of every rank. */
    c->persistent = FSDP_WORKSPACE_BYTES +
                    (m->pos == PP_POS_ROPE ? 4.0 * (double)m->seq * (double)m->head_dim : 0.0);
    c->opt_temp_per_param = (w->stack.optimizer_impl == PP_ADAM_FOREACH && !c->offload) ? c->state_bytes : 0.0;

    int comms = 0;
    if (c->shard > 1) comms++;
    if (l->replicate > 1) comms++;
    if (l->tp > 1) comms++;
    if (l->cp > 1) comms++;
    if (l->pp > 1) comms++;
    /* DeepEP dispatch (--moe-dispatcher flex; NeMo AutoModel's "TE + DeepEP"): its buffers over the
     * EP group (pp_deepep_buffer_bytes) */
    double deepep = pp_flex_layout_bytes(w, l);
    c->reserve_fixed = FSDP_CONTEXT_BYTES + FSDP_DRIVER_BYTES + comms * FSDP_NCCL_COMM_BYTES + deepep;
}

/* ------------------------------------------------------------------ one stage */

static double parts_sum(const pp_fsdp_parts *p)
{
    return p->weights + p->grads + p->optimizer + p->activations + p->transient;
}

void pp_fsdp_stage_eval(const pp_work *w, const pp_layout *l, const pp_fsdp_ctx *c,
                        const int64_t n_all[PP_LAYER_KINDS], const int64_t n_rc[PP_LAYER_KINDS],
                        bool first_stage, bool last_stage, double chunks, pp_mem_stage *o,
                        pp_fsdp_timeline *tl)
{
    const pp_model *m = &w->model;
    pp_recompute rc_mode = l->recompute == PP_RC_SELECTIVE ? PP_RC_SELECTIVE : PP_RC_NONE;
    double P = 0, PE = 0, A = 0, blk = 0, blk_store = 0, top_extra = 0, bot_extra = 0, R = 0;
    for (int k = 0; k < PP_LAYER_KINDS; k++) {
        double n = (double)n_all[k], r = (double)n_rc[k];
        if (n <= 0) continue;
        int moe = (k & PP_LAYER_MOE) && m->experts > 1 ? 1 : 0;
        P += n * c->blk_params[moe];
        PE += n * c->blk_expert[moe];
        A += (n - r) * c->act[moe][rc_mode] + r * c->act[moe][PP_RC_FULL];
        blk = fmax(blk, c->blk_params[moe] + c->blk_expert[moe]);
        /* The stage's last block is one of the n - r not fully recomputed unless all are; its
         * first block is fully recomputed when any is (the first r of a stage, memory.c). */
        pp_recompute top = r >= n ? PP_RC_FULL : rc_mode, bot = r > 0 ? PP_RC_FULL : rc_mode;
        double work = c->bwd_work[moe] + c->fp8_work[moe];
        top_extra = fmax(top_extra, c->resident[moe][top] - c->act[moe][top] + work);
        bot_extra = fmax(bot_extra, c->resident[moe][bot] - c->act[moe][bot] + work);
        blk_store = fmax(blk_store, c->act[moe][bot]);
        if (moe) R += r; /* recomputed MoE blocks: what --router-holds-recompute leaves */
    }
    /* --router-holds-recompute: every recomputed MoE block whose backward has run holds its
     * tensors up to the router (pp_fsdp_ctx_init) until its next forward: at the first block's
     * backward all the others, after it all of them, through the optimizer step. */
    const double rh_bottom = R > 1 ? (R - 1) * c->router_held : 0.0, rh_after = R * c->router_held;
    double P_blocks = P;
    if (first_stage) {
        P += c->embed_params;
        A += c->data;
    }
    if (last_stage) {
        P += c->head_params;
        A += c->head_act + (first_stage ? 0.0 : c->data);
    }
    const double S = c->shard, SE = c->expert_shard;
    const double Ps = P / S + PE / SE;                     /* parameters of the rank's shard */
    const double sb = c->state_bytes;                      /* fp32 4, or bf16 2 */
    const double master = c->offload ? 0.0 : sb * Ps;
    const double G = c->offload ? 0.0 : sb * Ps;           /* every sharded gradient */
    const double MV = c->offload ? 0.0 : 2.0 * sb * Ps;
    const double cb = c->copy_bytes;
    const double Ub = cb * blk;                            /* one block unsharded */
    const double Ublocks = cb * (P_blocks + PE);
    const double Ue = first_stage ? 2.0 * c->embed_params : 0.0;
    const double Uh = last_stage ? 2.0 * c->head_params : 0.0;
    const double gbuf = S > 1 ? Ub : 0.0;                  /* an all-gather output being copied out */
    const double others = chunks > 1 ? (chunks - 1.0) * A : 0.0; /* 1F1B: micro-batches in flight */
    const double accum = c->accumulate ? G : 0.0;
    /* PP without gradient sync: every group unsharded and its fp32 accumulator, after the
     * first micro-batch's backward, for the rest of the step's forwards and backwards. */
    const double ns_w = c->nosync ? Ublocks + Ue + Uh : 0.0;
    const double ns_g = c->nosync_grads ? 4.0 * (P + PE) : 0.0;
    /* Unsharded copies held at the end of the forward: every block and the embedding without
     * reshard_after_forward, [norm, output] always. */
    const double held_fwd = (c->reshard ? 0.0 : Ublocks + Ue) + Uh;

    pp_fsdp_timeline local;
    pp_fsdp_timeline *t = tl ? tl : &local;
    memset(t, 0, sizeof *t);
    pp_fsdp_parts *p;

    if (last_stage) {
        p = &t->at[PP_FSDP_AT_LOSS_FORWARD];
        p->weights = master + fmax(held_fwd, ns_w);
        p->grads = accum + ns_g;
        p->optimizer = MV;
        p->activations = others + A;
        p->transient = c->persistent + c->loss_fwd;
        t->at[PP_FSDP_AT_LOSS_BACKWARD] = *p;
        /* the compiled loss's backward counts the logits it saved (FSDP_LOSS_COMPILED_BWD): a kept
         * reference adds nothing there, and holds them after it */
        t->at[PP_FSDP_AT_LOSS_BACKWARD].transient =
            c->persistent + c->loss_bwd + (w->stack.compile_loss ? 0.0 : c->held_logits);
    }
    const double held = last_stage ? c->held_logits : 0.0;
    /* The first block to run its backward: [norm, output] has reduced its gradients (its
     * reduce-scatter input is still held), the block is unsharded with the next prefetched
     * (without reshard_after_forward every block still is), its activations are there again
     * with its working set and its bf16 weight gradients. */
    p = &t->at[PP_FSDP_AT_BACKWARD_TOP];
    double held_bwd = c->reshard ? 2.0 * Ub + gbuf : Ublocks + Ue + gbuf;
    p->weights = master + fmax(held_bwd, ns_w);
    p->grads = (c->accumulate ? G : (last_stage ? sb * c->head_params / S : 0.0)) + ns_g;
    p->optimizer = MV;
    p->activations = others + A - (last_stage ? c->head_act : 0.0) + top_extra;
    p->transient = c->persistent + 2.0 * blk + (last_stage ? 4.0 * c->head_params : 0.0) + held;
    /* The stage's first block: the others have reduced their gradients and resharded (reshard
     * after backward is on in both policies); the embedding is prefetched on the first stage;
     * the reduce-scatter input of the block above is still held. */
    p = &t->at[PP_FSDP_AT_BACKWARD_BOTTOM];
    p->weights = master + fmax(Ub + Ue + gbuf, ns_w);
    p->grads = (c->accumulate ? G : G - sb * blk / S - (first_stage ? sb * c->embed_params / S : 0.0)) + ns_g;
    if (p->grads < 0) p->grads = 0;
    p->optimizer = MV;
    p->activations = others + (first_stage ? c->data : 0.0) + blk_store + bot_extra + rh_bottom;
    p->transient = c->persistent + 2.0 * blk + 4.0 * blk + held;
    /* The last reduction: the embedding on the first stage, else the stage's first block. Its
     * copy-in (bf16 gradients, or the fp32 accumulator under PP, into the fp32 reduce-scatter
     * input) then the reduce-scatter (input and output, the output being the new sharded
     * gradient); on the first stage before that, the embedding backward itself (its bf16
     * gradient, the fp32 partial sums, block 0's reduce-scatter input still held). */
    p = &t->at[PP_FSDP_AT_REDUCE_LAST];
    double Pg = first_stage ? c->embed_params : blk;
    double gin = c->nosync_grads ? 4.0 : 2.0;
    double red = fmax(4.0 * Pg, gin * Pg + 4.0 * Pg - 4.0 * Pg / S);
    if (first_stage)
        red = fmax(red, 2.0 * Pg + c->embed_bwd_work + 4.0 * blk - 4.0 * Pg / S);
    p->weights = master;
    p->grads = G;
    p->optimizer = MV;
    p->activations = rh_after;
    p->transient = c->persistent + red + held;
    /* optimizer.step(): fused AdamW works in place; foreach allocates sqrt(v). */
    p = &t->at[PP_FSDP_AT_OPTIMIZER];
    p->weights = master;
    p->grads = G;
    p->optimizer = MV;
    p->activations = rh_after;
    p->transient = c->persistent + c->opt_temp_per_param * Ps;

    double peak = -1;
    for (int i = 0; i < PP_FSDP_AT_COUNT; i++) {
        if (!last_stage && (i == PP_FSDP_AT_LOSS_FORWARD || i == PP_FSDP_AT_LOSS_BACKWARD)) continue;
        t->bytes[i] = parts_sum(&t->at[i]);
        if (t->bytes[i] > peak) {
            peak = t->bytes[i];
            t->peak_at = (pp_fsdp_moment)i;
        }
    }
    const pp_fsdp_parts *pk = &t->at[t->peak_at];
    o->weights_bytes = pk->weights;
    o->grads_bytes = pk->grads;
    o->optimizer_bytes = pk->optimizer;
    o->activations_bytes = pk->activations;
    o->transient_bytes = pk->transient;
    o->peak_bytes = peak;
    o->peak_moment = pp_fsdp_moment_names[t->peak_at];
    double shortlived = peak - master - MV - c->persistent;
    o->reserved_bytes = c->reserve_fixed + FSDP_SLACK_FRACTION * (shortlived > 0 ? shortlived : 0.0);
    /* What the caching allocator keeps reserved beyond the peak when memory is not short, by the
     * stream whose cache holds it (c10/cuda/CUDACachingAllocator.cpp: a freed block is reused only
     * by an allocation on the stream it was allocated on). Read off the allocator's own history
     * at its reserved maximum (train.py --memory-history, tests/data/fsdp/reserved: one and two
     * H200s, 8k-64k tokens, the maximum at the loss backward in every run):
     *  - the reduce-scatter stream: FSDP2 allocates the sharded gradients there
     *    (_fsdp_collectives.py foreach_reduce), and zero_grad(set_to_none) frees them at the
     *    step's start into that stream's cache: G (one micro-batch a step; with accumulation they
     *    are allocated at the peak);
     *  - the all-gather stream, with more than one shard: the first group's all-gather input and
     *    output (the embedding on the first stage, 16-bit) and the next block's output, prefetched
     *    behind it; none on one GPU, which gathers nothing;
     *  - the compute stream: the bf16 logits, freed before the loss backward (torchtitan's "free
     *    pred before bwd"), leave a block the backward's larger fp32 tensors cannot use, so the
     *    loss backward grows the reservation by that much over what it allocates (upcast loss;
     *    the bf16 loss's gradients fit the block, --keep-logits does not free it).
     * Against the 28 runs without allocator retries of tests/data/node4 (2k-32k tokens, 4 x H100,
     * 2-4 x H200) and the 16 of tests/data/fsdp runs_longseq / runs_cp / runs_reserved(_default)
     * (8k-96k tokens): tests/validation/node4/replay_h100.c, tests/validation/kernels/reserved.py.
     * Under PyTorch's default allocator the two-GPU run there kept no freed-logits block (+8%). */
    const double ag_stream = S > 1 ? (1.0 + 1.0 / S) * (first_stage ? Ue : Ub) + Ub : 0.0;
    o->cached_bytes = (c->accumulate || c->nosync_grads || c->offload ? 0.0 : G) + ag_stream;
    if (last_stage && c->logits_hole > 0) {
        double over = t->bytes[PP_FSDP_AT_LOSS_BACKWARD] + c->logits_hole - peak;
        if (over > 0) o->cached_bytes += over;
    }
    o->fits = o->peak_bytes + o->reserved_bytes <= w->gpu.memory_bytes;
}

bool pp_memory_fsdp_tight(const pp_work *w, double peak_bytes, double capacity_bytes)
{
    return pp_work_fw(w)->block_sharding && capacity_bytes > 0 && peak_bytes > PP_FSDP_RETRY_FRAC * capacity_bytes;
}
