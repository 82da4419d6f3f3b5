/* Memory model: per pipeline stage, what one rank holds at its allocator peak.
 *
 * Everything is a table or a sum of tables:
 *   - parameters: one entry per weight/bias with its tensor-parallel sharding (mem_params);
 *   - model state: bytes per parameter for weights, gradients and optimizer by framework, ZeRO
 *     stage / distributed optimizer and offload (pp_memory_state_per_param);
 *   - activations: one entry per tensor a transformer layer saves for its backward, with elements
 *     and bytes per element (pp_memory_layer_table); Korthikanti et al. 2022 (arXiv 2205.05198)
 *     table 2 is the sum of the entries it counts, e.g. s b h (34 + 5 a s / h) for GPT;
 *   - stage terms: embedding and batch data on the first stage, final norm, logits and loss on
 *     the last; in-flight micro-batches of the 1F1B / interleaved schedules;
 *   - transients: the largest short-lived working set on top of the stored activations (loss,
 *     attention, recompute of one layer, the optimizer step), plus persistent workspaces;
 *   - reserve: what a rank needs beyond the allocator peak (CUDA context, NCCL, slack).
 *
 * The Megatron figures follow Megatron-LM's code (megatron/core, local transformer
 * implementation) and were checked against real runs on 2 x H200 (tests/data/megatron/runs.csv,
 * tests/cost/memory/test_megatron_runs.c). "eager" below is Megatron's local implementation without
 * Transformer Engine or apex (--attention unfused): unfused attention, weight-gradient accumulation
 * in plain PyTorch ops and torch.optim.AdamW (foreach). --attention flash stands for the Transformer
 * Engine path (flash attention, fused wgrad accumulation, fused Adam). The MLP activation is fused
 * in both unless --no-bias-act-fusion (layer.c: Megatron's bias_activation_fusion is on by default
 * and runs without TE; measured on 4 x H100, tests/data/node4/h100).
 */
#include "pp_memory.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "memory_fsdp.h"
#include "pp_layer.h"

/* max of two finite figures, inlined (libm's fmax is a call; the search prices every candidate) */
static inline double mem_max(double a, double b) { return a > b ? a : b; }
static inline double mem_min(double a, double b) { return a < b ? a : b; }

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

/* ------------------------------------------------------------------ calibration constants
 * One set for every configuration; each says where it comes from. */

/* Device memory a process uses outside the PyTorch allocator with no communicator: CUDA context,
 * loaded kernel images, cuBLAS/cuBLASLt handles. Measured on H200 with PyTorch 2.11 + CUDA 13:
 * nvidia-smi memory.used minus torch max_memory_reserved was 2476 MiB in every one-GPU Megatron
 * run, and the OOM message of g27_b4 reports 2.42 GiB of non-PyTorch memory. */
static const double MEM_CONTEXT_BYTES = 2476.0 * MIB;
/* Memory the driver keeps back from the total it reports: nvidia-smi says 143771 MiB on the
 * H200, PyTorch's total_memory 139.80 GiB = 143155 MiB (616 MiB less; not measured on other
 * GPUs). Part of the reserve because capacity is the driver's total (models.d memory_mib). */
static const double MEM_DRIVER_BYTES = 616.0 * MIB;
/* NCCL buffers per communicator that a rank uses (ring/tree channels x buffers, p2p buffers).
 * Measured on 2 x H200 NVLink (smi minus max reserved, minus the context above): TP=2 +480 MiB
 * (one communicator), DP=2 +868 MiB (two: data-parallel and data+context-parallel groups),
 * PP=2 untied +1022 MiB (p2p + pipeline group), PP=2 tied +1508 MiB (+ embedding group).
 * 500 MiB per communicator fits all four within 70 MiB. */
static const double MEM_NCCL_COMM_BYTES = 500.0 * MIB;
/* MoE outside the allocator. One H200, no communicator: MoE runs left 2872 MiB where dense ones
 * left 2476 (tests/data/megatron/runs_moe*.csv: smi peak minus max reserved, 17 of 19 runs), the
 * kernels and handles the router and the token permutation load. The expert-parallel all-to-all
 * then connects every rank of the EP group to every other one: on 4 x H200 (tests/data/node4,
 * outside_mib) what was left beyond these and the communicators above was 549 MiB per peer at
 * EP 4 (three runs alike), 452-876 MiB at EP 2: 500 MiB per peer, as a communicator. Not measured
 * beyond EP 4, where NCCL's per-peer setup would not keep growing this way (DeepSeek-V3 trains
 * EP 64 on 80 GB): held at EP 4's three peers. */
static const double MEM_MOE_KERNELS_BYTES = 396.0 * MIB;
static const double MEM_NCCL_A2A_PEER_BYTES = 500.0 * MIB;
/* Caching-allocator slack at the peak. Without memory pressure the allocator keeps freed blocks
 * cached: max_memory_reserved - max_memory_allocated was 2-6% of the short-lived part of the peak
 * (max allocated minus the static allocation) for GPT shapes and 7-14% for the Llama shape in the
 * 2 x H200 runs. Near the capacity it releases its cached blocks and retries before it fails
 * (c10/cuda/CUDACachingAllocator.cpp: release_cached_blocks after a failed cudaMalloc), so a fit
 * needs less: d_s4k_b1 (tests/data/megatron/runs_moe.csv, Llama-3.2-3B shape with dropout,
 * seq 4096, one H200) peaked at 134717 MiB allocated with 2711 MiB of slack, 3.8% of its
 * short-lived 71963 MiB, and ran, where 12% would have called it out of memory. 4% is the slack
 * that counts towards the fit; the OOM runs were out of memory with no slack at all (peak plus
 * context and driver above the capacity). Full recompute frees and re-allocates one layer's
 * working set (its recomputed activations and their backward) once per layer, which leaves cached
 * but unused blocks of that size: measured 1.15x (gpt-2.7b, mbs 8) and 1.6x (llama-3b, mbs 2,
 * s 4096) that working set; kept as measured (no run near the capacity with full recompute). */
static const double MEM_SLACK_FRACTION = 0.04;
static const double MEM_SLACK_RECOMPUTE_SETS = 1.6;
/* Dropless MoE near the capacity: the routed token buffers change size every micro-batch, so the
 * caching allocator splits the blocks a repeated allocation would reuse, and the largest one of
 * the step, the fp32 logits of the loss, may find no free block of its size among the cached
 * ones. On 4 x H200 (tests/data/node4: q_ep2dp2_b4, 128 experts, EP 2, micro-batch 4) the step
 * failed allocating those logits (9.27 GiB) with 16.45 GiB reserved but unallocated, at 124.1 GiB
 * predicted (125.2 measured) of 139.8 usable. So for dropless MoE the last stage keeps room for
 * that block on top of the slack: the one-H200 MoE runs nearest their capacity (q_b2 at 0.955 of
 * it, 4.6 GiB of logits; m8_b4 at 0.915) still fit with it, and no dense run is charged. With
 * expandable segments (--expandable-segments) the allocator grows a segment instead. */
static const double MEM_MOE_LOGITS_BLOCKS = 1.0;
/* One CUDA graph of the whole iteration (Megatron --cuda-graph-impl full_iteration,
 * megatron/core/full_cuda_graph.py FullCudaGraphWrapper). torch.cuda.graph() empties the cache
 * before it captures, then every block the captured forward and backward allocate comes from the
 * graph's private pool, which the graph keeps for its replays and the allocator never releases.
 * Measured on one H200 (PyTorch 2.11, Megatron-LM d98e8a64 --transformer-impl local, Llama 3 8B
 * shape, tests/data/cudagraph/runs.csv, the allocator's segments by pool after every step):
 *   - the pool holds 1.107 x the iteration's short-lived peak (max allocated minus what stays
 *     allocated): 1.108 / 1.106 / 1.107 at 8 layers micro-batch 1 and 4 and 16 layers micro-batch 1
 *     (the calibrate half), 1.107 at 8 layers micro-batch 2 and 1.211 at 4 layers (held out);
 *   - the general pool keeps what the eager warm-up iterations left in segments that hold model
 *     state too (Adam's moments are created at the first step, into segments the activations had
 *     made), which empty_cache cannot return: 0.268 / 0.208 / 0.227 of the model state (calibrate),
 *     0.218 / 0.231 (distributed optimizer) / 0.274 (held out).
 * Both are charged as reserve in place of the eager slack: nothing of the pool can be released,
 * so a step that would fit eager with its cached blocks released may not capture. (check's note
 * prints these two; pp_memory.h) */
const double pp_mem_graph_pool_factor = 1.107;
const double pp_mem_graph_state_held = 0.234;
/* cuBLAS / cuBLASLt workspaces (PyTorch allocates them through its caching allocator) and the
 * small persistent tensors of a training step (loss scalars, RNG states, rotary tables).
 * Measured: the static allocation after an iteration minus the model state and the attention
 * buffer is 73 MiB (llama-3b) to 114 MiB (gpt-2.7b). */
static const double MEM_WORKSPACE_BYTES = 96.0 * MIB;

/* ------------------------------------------------------------------ model state per parameter */

/* Unsharded bytes per parameter of the weights, gradients and optimizer state, sharded over
 * shard ranks as the stage says: ZeRO stage 1 (and Megatron's distributed optimizer) shards the
 * optimizer bytes, stage 2 also the gradients, stage 3 also the parameters; Megatron-FSDP's optim /
 * optim_grads / optim_grads_params and FSDP's FULL_SHARD / SHARD_GRAD_OP are the same stages. */
static void mem_state_shard(double weight_b, double grad_b, double opt_b, int zero, bool dist_opt, pp_offload off,
                            int64_t shard, pp_state_bytes *out)
{
    double d = shard > 0 ? (double)shard : 1.0;
    out->weights = zero >= 3 ? weight_b / d : weight_b;
    out->grads = zero >= 2 ? grad_b / d : grad_b;
    out->optimizer = zero >= 1 || dist_opt ? opt_b / d : opt_b;
    /* ZeRO-Offload keeps the optimizer state (and fp32 master) in host memory; params offload
     * (ZeRO-Infinity) also the 16-bit parameters. */
    if (off >= PP_OFF_OPTIMIZER) out->optimizer = 0;
    if (off >= PP_OFF_PARAMS) out->weights = 0;
}

void pp_memory_state_per_param(pp_framework fw, int zero, bool dist_opt, pp_offload off,
                               int64_t shard, pp_state_bytes *out)
{
    /* The framework's bytes per parameter (pp_frameworks: Megatron 2 + 4 + 12 = 18, Megatron's
     * theoretical_memory_usage.py; ZeRO's 2 + 2 + 12, Rajbhandari et al. 2020 sec. 3, table 1). */
    const pp_fw_row *r = pp_fw_get(fw);
    mem_state_shard(r->weight_bytes, r->grad_bytes, r->optimizer_bytes, zero, dist_opt, off, shard, out);
}

/* ------------------------------------------------------------------ shapes */

/* Eager PyTorch ops (Megatron's local modules, HF models under DeepSpeed/FSDP) against
 * TransformerEngine's fused kernels. */
static bool mem_eager(const pp_work *w) { return !pp_work_te(w); }

/* ------------------------------------------------------------------ parameters per rank */

typedef struct {
    double attn;         /* one layer's attention block (with its norms) on one rank */
    double dense_mlp;    /* one dense layer's MLP block */
    double moe_dense;    /* one MoE layer's norm, router and shared experts (not sharded by EP) */
    double moe_expert;   /* one MoE layer's routed experts on one rank */
    double embedding;    /* word (+ learned positions) on the first stage */
    double head;         /* final norm + output layer (or tied copy) on the last stage */
    double mtp_extra;    /* one MTP layer's projection and norms */
    double largest_layer_weight; /* largest weight inside a layer on a rank */
    double layer_total;  /* largest layer, unsharded, all experts (ZeRO-3 gathers) */
} mem_params;

/* Parameters of one layer of kind `kind` on one rank: the part reduced over dp x cp, and the
 * routed experts, reduced over the expert data-parallel group. */
static void mem_params_kind(const mem_params *p, int kind, double *dense, double *expert)
{
    bool moe = kind & PP_LAYER_MOE;
    *dense = p->attn + (moe ? p->moe_dense : p->dense_mlp);
    *expert = moe ? p->moe_expert : 0.0;
}

/* The per-rank figures of the model's parameter table (model.c, the one formula; layer.c splits
 * each row as the layout does). */
static void mem_params_get(const pp_work *w, const pp_layout *l, mem_params *p)
{
    pp_layer_rank_params rp;
    pp_layer_rank_params_get(w, l, false, &rp);
    const double *sc = rp.scope;
    p->attn = sc[PP_TS_LAYER];
    p->dense_mlp = sc[PP_TS_DENSE];
    p->moe_dense = sc[PP_TS_MOE];
    p->moe_expert = sc[PP_TS_EXPERT];
    p->largest_layer_weight = rp.layer_largest;
    p->embedding = sc[PP_TS_EMBED];
    p->head = sc[PP_TS_FINAL] + sc[PP_TS_OUTPUT] + rp.tied_copy;
    p->mtp_extra = sc[PP_TS_MTP];
    double dense_total = (p->attn + mem_max(p->dense_mlp, p->moe_dense)) * (double)l->tp;
    /* the word embedding unsharded: close enough for ZeRO-3 gathers */
    double word = (double)w->model.hidden * pp_layer_vocab(w, l);
    p->layer_total = mem_max(dense_total + rp.expert_global, word);
}

/* ------------------------------------------------------------------ activation table */

/* The saved tensors of a layer description kept under (rc, mods), as a table. */
static void mem_table_from(const pp_layer *ly, pp_recompute rc, unsigned mods, pp_act_table *tb)
{
    tb->n = 0; /* no memset: the search builds these tables for every candidate */
    tb->bytes = tb->paper_bytes = 0;
    const pp_layer_saved *one = &ly->full_input;
    int n = rc == PP_RC_FULL ? 1 : ly->n_saved;
    for (int i = 0; i < n && tb->n < PP_ACT_TENSORS_MAX; i++) {
        const pp_layer_saved *e = rc == PP_RC_FULL ? one : &ly->saved[i];
        if (rc != PP_RC_FULL && !pp_layer_saved_kept(ly, i, rc, mods)) continue;
        pp_act_tensor *t = &tb->t[tb->n++];
        *t = (pp_act_tensor){e->name, e->elems, e->bytes_per_elem, e->paper};
        tb->bytes += e->elems * e->bytes_per_elem;
        if (e->paper) tb->paper_bytes += e->elems * e->bytes_per_elem;
    }
}

void pp_memory_layer_table_kind(const pp_work *w, const pp_layout *l, int kind, pp_recompute rc,
                                pp_act_table *tb)
{
    pp_layer ly;
    pp_layer_build_parts(w, l, kind, PP_LAYER_SAVED, &ly);
    mem_table_from(&ly, rc, ly.saved_sel_mods, tb);
}

/* The table of the model's most common layer: its MoE layer for an MoE model. */
void pp_memory_layer_table(const pp_work *w, const pp_layout *l, pp_recompute rc, pp_act_table *tb)
{
    int kind = w->model.experts > 1 ? PP_LAYER_MOE : 0;
    if (pp_model_layer_is_window(&w->model, w->model.layers - 1)) kind |= PP_LAYER_WINDOW;
    pp_memory_layer_table_kind(w, l, kind, rc, tb);
}

/* Whether every stage's layers are of one kind (dense models; MoE models with every layer MoE
 * and no windows): then stage 0 and the last stage bound the others under a uniform split. */
static bool mem_uniform_kinds(const pp_model *m)
{
    if (m->window > 0 && m->window_full_every > 0) return false;
    if (m->experts <= 1) return true;
    return m->moe_first_dense == 0 && m->moe_every <= 1 && m->n_dense_layers == 0;
}

/* TransformerEngine's userbuffers for --tp-comm-overlap: Megatron-LM registers them once
 * (training/initialize.py _initialize_tp_communicators: initialize_ub(shape=[s b / cp, h])), one
 * buffer per overlapped GEMM of a layer, shared by every layer: TE's defaults overlap 12
 * (transformer_engine/pytorch/module/base.py initialize_ub, `methods`: the ring-exchange
 * all-gathers qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad; the pipelined reduce-scatters
 * proj_fprop, fc2_fprop; the bulk qkv_dgrad/wgrad, fc1_dgrad/wgrad; the external proj_wgrad,
 * fc2_wgrad), each of the full shape (comm_gemm_overlap.cpp CommOverlapBase::initialize and
 * CommOverlapP2PBase::initialize: an all-gather's p2p buffer is tp chunks of s b / (cp tp) rows),
 * registered with register_user_buffer_collective, outside PyTorch's allocator. In FP8 the 8 of
 * layers_all_gather_overlap hold 1-byte data (fp8_buf), the other 4 the 2-byte dtype. TE at
 * NVIDIA/TransformerEngine@d0067d0d; not measured (the lent GPUs run Megatron without TE). */
static double mem_userbuffer_bytes(const pp_work *w, const pp_layout *l, const pp_layer *y)
{
    if (!w->stack.tp_comm_overlap || l->tp < 2 || !l->sp || !pp_work_te(w)) return 0.0;
    double per = y->tokens * y->hidden; /* elements of one buffer: s b / cp x h */
    return pp_precision_quantized(w->stack.precision)
               ? (8.0 * pp_precision_info[w->stack.precision].elem_bytes + 4.0 * 2.0) * per
               : 12.0 * 2.0 * per;
}

/* ------------------------------------------------------------------ per-layout context */

/* Everything the per-stage arithmetic needs, computed once per (work, layout): the search calls
 * pp_memory_worst_bytes for every candidate, so stages cost O(kinds) each. Layer kinds differ in
 * their MLP (dense or MoE); windowed attention stores what full attention stores, so the
 * window bit shares the table of its MLP kind. */
typedef struct {
    mem_params par;
    pp_state_bytes st;        /* dense parameters */
    pp_state_bytes st_expert; /* routed experts (sharded over the expert data-parallel group) */
    double layer_bytes[2][PP_RC_COUNT]; /* stored per layer per micro-batch: [moe][recompute] */
    double attn_work;   /* the attention core's backward working set (layer.c's record) */
    double bwd_work[2]; /* the largest backward working set of one layer: [moe] (layer.c) */
    double wgrad;       /* eager: 16-bit weight gradient before it is added to main_grad */
    double workspace;   /* persistent: cuBLAS, attention input buffer */
    double fp8_weight_per_param; /* FP8: cached 8-bit weight copies per layer parameter */
    double embed_act;   /* first stage, per micro-batch */
    double data;        /* batch tensors per micro-batch (first and last stage) */
    double head_act;    /* last stage, per micro-batch: final norm and output layer inputs */
    double loss_work;   /* last stage: logits and loss working set */
    double frag_block;  /* last stage: room kept for the fp32 logits block (dropless MoE) */
    double frag_attn;   /* every stage: room kept for one unfused attention-probability block */
    double mtp_act;     /* last stage, per micro-batch: the MTP layers' extra saved tensors */
    double opt_work_per_param; /* optimizer-step temporaries per parameter on the rank */
    double lora_layer;  /* LoRA: one layer's adapter parameters on this rank (0: full training) */
    double zero_gather; /* ZeRO-3 / FSDP gathered parameters of the layers in flight */
    double mfsdp_fixed; /* Megatron-FSDP's double buffer, held for the run */
    pp_mem_mfsdp mfsdp; /* what Megatron-FSDP's buffers hold (pp_memory_mfsdp) */
    double ds_buckets;  /* DeepSpeed reduce buckets */
    double reserve_fixed;
    double offload_bytes; /* --cpu-offload-layers: the first N layers' stored bytes per micro-batch,
                             in host memory between their forward and backward */
    int64_t m;          /* micro-batches per step per replica */
    pp_fsdp_ctx fsdp;   /* --framework fsdp: FSDP2's own model (memory_fsdp.c) */
} mem_ctx;

/* Megatron-FSDP's communication buffers (megatron/core/distributed/fsdp/src/megatron_fsdp at
 * Megatron-LM d98e8a64). Its unit is one transformer layer on the rank (mcore_fsdp_adapter.py
 * fsdp_unit_modules: TransformerLayer, MoETransformerLayer; TP- and EP-local), U parameters.
 *   - optim_grads_params (--zero 3) gathers a unit's weights before its forward and backward into
 *     a buffer of its own over dp > 1 (at dp 1 none: measured, below), and prefetches the units after
 *     it until the prefetched count reaches half the communication unit S (all-gather
 *     suggested_AG_prefetch_size = S // 2): 1 + ceil(S / 2 / U) units held, freed after use;
 *   - optim_grads and optim_grads_params reduce-scatter each unit's gradients out of an unsharded
 *     bucket over dp > 1 (grad buffer distributed only where the group has more than one rank);
 *     the queue keeps up to S elements (wait_for_previous_grad_reduce). At the stage's peak, the
 *     start of the backward, one unit's bucket is filling; under full recompute the layers'
 *     stored bytes are too small to make room for the queue, which then holds min(S / U, layers - 1)
 *     more;
 *   - S is --suggested-communication-unit-size, else max(1e9, 2 U) (megatron_fsdp.py:420-441,
 *     the "cap" is a floor) under optim_grads_params and 1e9 otherwise;
 *   - --fsdp-double-buffer (FixedPoolAllocator): two units' weights and two units' gradients in
 *     buffers made once and held for the run (utils.py GlobalMemoryBuffer), prefetch and queue
 *     capped at two units.
 * Weights at the compute dtype (FP8 parameters: the precision's copies, pp_precision_info);
 * gradients at pp_work_grad_bytes (the weights' dtype by default). */
static void mem_mfsdp_buffers(const pp_work *w, const pp_layout *l, mem_ctx *c, int64_t shard)
{
    const pp_stack *s = &w->stack;
    const mem_params *p = &c->par;
    const double U = p->attn + mem_max(p->dense_mlp, p->moe_dense + p->moe_expert);
    c->zero_gather = 0.0;
    memset(&c->mfsdp, 0, sizeof c->mfsdp);
    if (!(U > 0) || l->zero < 2) return;
    const double S = s->fsdp_unit_size > 0 ? (double)s->fsdp_unit_size : l->zero >= 3 ? mem_max(1e9, 2.0 * U) : 1e9;
    const int64_t stage_layers = (w->model.layers + l->pp - 1) / l->pp;
    const double more = stage_layers > 1 ? (double)(stage_layers - 1) : 0.0;
    const double wbytes = pp_work_fp8_params(w) ? pp_precision_info[s->precision].weight_copies *
                                                      pp_precision_info[s->precision].elem_bytes
                                                : pp_work_fw(w)->weight_bytes;
    const double gbytes = pp_work_grad_bytes(w);
    /* at dp 1 nothing is gathered or reduce-scattered: tests/data/memopts f0-f3 (optim,
     * optim_grads_params, double-buffered, S = 2e9) allocate the same to 0.01 MiB. A layer's
     * routed experts go over the expert data-parallel group, priced here as the dense group's. */
    if (shard <= 1) return;
    const double wb = l->zero >= 3 ? wbytes : 0.0; /* optim_grads keeps its weights unsharded */
    pp_mem_mfsdp *o = &c->mfsdp;
    o->unit_params = U;
    o->comm_unit = S;
    o->held = s->fsdp_double_buffer;
    o->units_weights = wb > 0 ? (o->held ? 2.0 : 1.0 + mem_min(ceil(S / 2.0 / U), more)) : 0.0;
    o->units_grads = o->held ? 2.0 : 1.0 + (l->recompute == PP_RC_FULL ? mem_min(floor(S / U), more) : 0.0);
    o->weights_bytes = o->units_weights * U * wb;
    o->grads_bytes = o->units_grads * U * gbytes;
    if (o->held) c->mfsdp_fixed = o->weights_bytes + o->grads_bytes;
    else c->zero_gather = o->weights_bytes + o->grads_bytes;
}

static void mem_ctx_init(const pp_work *w, const pp_layout *l, mem_ctx *c)
{
    const pp_model *m = &w->model;
    if (pp_work_fw(w)->block_sharding) {
        /* FSDP2 holds different things at different moments of the step: memory_fsdp.c. */
        c->m = pp_layout_microbatches(w, l);
        if (c->m < 1) c->m = 1;
        c->offload_bytes = 0; /* Megatron's option: none under FSDP2 (common.c refuses it) */
        pp_fsdp_ctx_init(w, l, &c->fsdp);
        return;
    }
    /* The layer descriptions (layer.c): a dense layer and, for an MoE model, an MoE layer;
     * windowed attention stores what full attention stores, so the window bit shares them. */
    pp_layer ly[2];
    int nk = m->experts > 1 ? 2 : 1;
    /* A model whose layers are all MoE needs no dense table (its MoE one stands in). */
    bool all_moe = nk > 1 && mem_uniform_kinds(m);
    for (int moe = all_moe ? 1 : 0; moe < nk; moe++)
        pp_layer_build_parts(w, l, moe ? PP_LAYER_MOE : 0, PP_LAYER_SAVED | PP_LAYER_TRANSIENTS, &ly[moe]);
    const pp_layer *lk[2] = {&ly[all_moe ? 1 : 0], &ly[nk - 1]}; /* by kind: [moe] */
    mem_params_get(w, l, &c->par);
    /* The stack's bytes per parameter over the framework's: Megatron's gradient buffer has the
     * parameters' dtype with --fp16 and with --grad-reduce-in-bf16 (param_and_grad_buffer.py:
     * grad_dtype = param.dtype unless grad_reduce_in_fp32), 2 bytes, not the fp32 main_grad's 4
     * (pp_work_grad_bytes); Megatron's precision-aware optimizer and NeMo 1.x's
     * distributed_fused_adam keep the state pp_work_optimizer_bytes says. */
    const pp_fw_row *fr = pp_work_fw(w);
    const double wb = fr->weight_bytes, gb = pp_work_grad_bytes(w);
    const double ob = pp_work_optimizer_bytes(w);
    int64_t shard = l->dp * l->cp, eshard = pp_layout_edp(l);
    mem_state_shard(wb, gb, ob, l->zero, l->dist_opt, l->offload, shard, &c->st);
    mem_state_shard(wb, gb, ob, l->zero, l->dist_opt, l->offload, eshard, &c->st_expert);
    /* 16-bit gradients beside the buffer the optimizer reads, never sharded (pp_fw_row:
     * grad_copy_bytes; DDP's buckets where the framework wraps in DDP, ZeRO 0 and dp > 1) */
    double copy_b = fr->grad_copy_bytes + (l->zero == 0 && l->dp * l->cp > 1 ? fr->ddp_bucket_bytes : 0.0);
    c->st.grads += copy_b;
    c->st_expert.grads += copy_b;
    /* LoRA (--finetune lora): the frozen base keeps its weights alone (Megatron-Core's DDP makes
     * gradient buffers, and the optimizer state, only for parameters that require gradients:
     * distributed/distributed_data_parallel.py); each layer's adapters carry the full state above,
     * 1/tp of them on this rank (layer.c). */
    c->lora_layer = pp_layer_lora_params(w) / (double)l->tp;
    for (int moe = 0; moe < 2; moe++) {
        const pp_layer *y = lk[moe];
        c->layer_bytes[moe][PP_RC_NONE] = pp_layer_saved_bytes(y, PP_RC_NONE, 0, NULL);
        c->layer_bytes[moe][PP_RC_FULL] = pp_layer_saved_bytes(y, PP_RC_FULL, 0, NULL);
        c->layer_bytes[moe][PP_RC_SELECTIVE] =
            l->recompute == PP_RC_SELECTIVE ? pp_layer_saved_bytes(y, PP_RC_SELECTIVE, y->saved_sel_mods, NULL)
                                            : c->layer_bytes[moe][PP_RC_NONE];
    }
    /* Megatron's CPU offloading (TransformerEngine cpu_offload.py DefaultOffloadSynchronizer at
     * v2.10): layers 0 .. N-1 offload everything they save for the backward but parameters, and
     * each must be on the host before layer L - N + i runs its forward, "to ensure that activation
     * memory usage is equal to (num_layers - num_offloaded_layers) * T"; with pp 1 (the layout's
     * check) the stage is the model and one micro-batch is in flight */
    c->offload_bytes = 0;
    if (w->stack.cpu_offload_layers > 0) {
        int64_t cnt[PP_LAYER_KINDS];
        pp_model_layer_counts(m, 0, w->stack.cpu_offload_layers, cnt);
        for (int k = 0; k < PP_LAYER_KINDS; k++)
            c->offload_bytes += (double)cnt[k] * c->layer_bytes[k & PP_LAYER_MOE ? 1 : 0][PP_RC_NONE];
    }
    const pp_layer *y0 = lk[0]; /* the geometry, the same in every kind */
    double b = y0->mbs, sb = y0->tokens, h = y0->hidden, t = y0->tp, rep = y0->rep;
    double V = pp_layer_vocab(w, l);
    bool eager = mem_eager(w), unfused = !y0->attn.fused;
    /* hidden dropout keeps a mask after each bias-dropout-add and the embedding (pp_work_dropout:
     * the flags, else the model's file, else the rule for files that say nothing) */
    double adr, hdr;
    pp_work_dropout(w, &adr, &hdr);
    const bool hdrop = hdr > 0;
    c->m = pp_layout_microbatches(w, l);
    if (c->m < 1) c->m = 1;

    /* The backward's working sets: the layer descriptions' records (layer.c, build_transients). */
    c->attn_work = y0->attn_work_bytes;
    for (int moe = 0; moe < 2; moe++) c->bwd_work[moe] = lk[moe]->bwd_work_bytes;
    c->wgrad = eager ? 2.0 * c->par.largest_layer_weight : 0.0;
    /* Megatron's unfused attention takes its baddbmm input from a global buffer that stays
     * allocated (parallel_state.get_global_memory_buffer, "mpu"): b (a/t) s^2 16-bit. */
    c->workspace = MEM_WORKSPACE_BYTES + (unfused && fr->global_attn_buffer ? 2.0 * y0->attn.scores : 0.0);
    /* The unfused attention's probabilities are the step's largest short-lived blocks (b a/t s^2,
     * 16-bit), allocated and freed per layer while the stored activations of the layers before
     * fill the segments around them. Near the capacity one such block may find no free run of its
     * size among partly used segments: on one H200 (tests/data/cudagraph g6_eager_b5, Llama 3 8B
     * shape, 8 layers, micro-batch 5) the second step failed asking for 5.00 GiB, one such block,
     * with 9.26 GiB reserved but unallocated, where the 4% slack had left it 4.1 GiB to spare. So
     * every stage keeps room for one block, as the dropless MoE logits' rule above (the larger of
     * the two where both apply: q_b2, the MoE run nearest its capacity that ran, fits with one
     * and not with both). Expandable segments grow a segment instead. */
    c->frag_attn = unfused && !w->stack.expandable_segments ? 2.0 * y0->attn.scores : 0.0;
    /* FP8 (TransformerEngine): every FP8 linear layer caches its weight cast to 8 bits, row-wise
     * for the forward and column-wise (transposed) for the data-gradient GEMM on Hopper, across
     * the micro-batches of a step (te/pytorch/module/base.py, the FP8 weight workspace). */
    /* MXFP8 and NVFP4 keep both copies too, each at its bytes per element with the scales
     * (common.c pp_precision_info). */
    c->fp8_weight_per_param =
        pp_precision_info[w->stack.precision].weight_copies * pp_precision_info[w->stack.precision].elem_bytes;
    /* --fp8-param-gather: the linear weights are FP8 tensors (TE fp8_model_init): their 8-bit data
     * and, on Hopper, the transposed copy for the data-gradient GEMM, 2 bytes where the bf16 weight
     * and its two casts were 4 (the weight's 2 stand in the model state; no casts on top). */
    /* MXFP8 parameters: both copies at 1 + 1/32 bytes, 0.0625 above the 2 the weight stands for;
     * NVFP4 parameters (--fp4-param-gather): both at 0.5 + 1/16, 0.875 below it. */
    if (pp_work_fp8_params(w)) c->fp8_weight_per_param -= pp_work_fw(w)->weight_bytes;

    /* Batch tensors held per micro-batch: tokens, labels, position ids (int64), loss mask (fp32)
     * and Megatron's dataloader attention mask (b x s x s bool, on by default: arguments.py
     * --no-create-attention-mask-in-dataloader turns it off; NeMo and Megatron-Bridge do not build
     * it, their attention takes the causal mask from the fused kernel). */
    bool mask = fr->dataloader_mask && !w->stack.no_attention_mask;
    c->data = 36.0 * sb + (mask ? b * y0->seq * y0->seq : 0.0);
    /* Embedding: the int64 ids for its backward are in data; its dropout keeps a mask. */
    c->embed_act = hdrop ? sb * h * rep : 0.0;
    /* Final norm input + stats and the output layer input (16-bit). */
    c->head_act = 2.0 * sb * h * rep + 4.0 * sb * rep * (m->norm == PP_NORM_LAYERNORM ? 2 : 1) +
                  2.0 * sb * h * rep;
    /* Logits and loss. Megatron (vocab-parallel cross entropy, tensor_parallel/cross_entropy.py):
     * 16-bit logits plus their fp32 copy (.float()), which the loss turns into the softmax it
     * saves: 6 bytes x s b V/t at the loss; in the backward the fp32 gradient and its 16-bit
     * cast (6), then the 16-bit gradient with the output layer's 16-bit weight gradient (eager).
     * Hugging Face models (deepspeed; transformers' loss_utils.ForCausalLMLoss: logits.float(),
     * then cross_entropy): the 16-bit logits and their fp32 upcast with the fp32 log-softmax it
     * saves, 10 bytes at the loss's forward; in its backward the saved log-softmax, nll_loss's fp32
     * gradient and log_softmax's fp32 input gradient, 12 bytes (the Trainer keeps the loss alone,
     * Trainer.compute_loss, so the 16-bit logits are gone by then; --keep-logits: a loop that
     * holds the model's output keeps them, 14). Measured on two H200s with transformers 5.17
     * (tests/data/deepspeed, the allocator's history at the peak: three fp32 logit-sized blocks,
     * 6,012 MiB for 4096 tokens of a 128,256 vocabulary).
     * --cross-entropy-fusion native (fusions/fused_cross_entropy.py): the same steps as jit_fuser
     * functions, which under torch.compile return new tensors where the eager path works in place
     * (torch.exp(..., out=)): the fp32 copy and the fp32 exp_logits it saves, 10 bytes. Measured
     * on one H100 (tests/data/node4/h100 l1_cef against l1_def): +2,005 MiB = 4 x s b V, on the
     * loss's moment. te (TransformerEngine's parallel cross-entropy, a Triton kernel that writes
     * the gradient into the logits during the forward): the 16-bit logits only; not measured. */
    double logits = sb * V / t;
    c->frag_block = m->experts > 1 && w->stack.moe_capacity_factor <= 0 && !w->stack.expandable_segments
                        ? MEM_MOE_LOGITS_BLOCKS * 4.0 * logits : 0.0;
    pp_loss loss = pp_work_loss(w);
    if (loss == PP_LOSS_TORCH) {
        c->loss_work = (w->stack.keep_logits ? 14.0 : 12.0) * logits;
    } else {
        double wg = eager ? 2.0 * V * h / t : 0.0;
        double at_loss = loss == PP_LOSS_NATIVE ? 10.0 : loss == PP_LOSS_TE ? 2.0 : 6.0;
        c->loss_work = mem_max(at_loss * logits, 2.0 * logits + wg);
    }
    /* MTP (DeepSeek-V3 sec. 2.2; megatron/core/transformer/multi_token_prediction.py): each MTP
     * layer keeps its transformer layer's tensors, the normalised inputs and the projection
     * input (its description's), and its own loss's saved fp32 softmax until the backward. Not
     * measured (MTP needs TransformerEngine on the lent machines). */
    c->mtp_act = 0;
    if (m->mtp_layers > 0) {
        int mk = pp_model_mtp_kind(m) & PP_LAYER_MOE ? 1 : 0;
        c->mtp_act = (double)m->mtp_layers *
                     (c->layer_bytes[mk][PP_RC_NONE] + lk[mk]->mtp_saved_bytes + 4.0 * logits);
    }
    /* Optimizer step. torch.optim.AdamW with foreach (Megatron without TE/apex, FSDP) allocates
     * sqrt(v) for the whole parameter group at once (torch/optim/adam.py,
     * _multi_tensor_adam: torch._foreach_sqrt): 4 bytes per parameter it updates. Fused Adam
     * (TE, apex, DeepSpeed) has no such temporary. Offloaded optimizers step on the host. */
    bool foreach_adam = fr->eager_foreach_adam && eager;
    double opt_shard = 1.0;
    if (l->dist_opt || l->zero >= 1) opt_shard = (double)shard;
    c->opt_work_per_param = (foreach_adam && l->offload == PP_OFF_NONE) ? 4.0 / opt_shard : 0.0;
    /* Megatron-FSDP with 16-bit main gradients hands the optimizer an fp32 copy of its gradient
     * shard (param_and_grad_buffer.py update_main_grads: optimizer_grad.to(param.dtype), the main
     * weights' fp32), made at the step and dropped with the next zero_grad; not with the
     * precision-aware optimizer's decoupled gradients (training.py megatron_fsdp_use_decoupled_grad).
     * Measured on one H200 (tests/data/memopts f0 against f4): the step's peak is the state, this
     * copy and foreach Adam's sqrt(v), 4 + 4 bytes a parameter, to 0.01 MiB. */
    if (w->stack.megatron_fsdp && pp_work_grads_16bit(w) && !pp_work_precision_aware(w))
        c->opt_work_per_param += 4.0 / opt_shard;
    /* ZeRO-3 / FSDP FULL_SHARD: the layer being computed and the prefetched next one are
     * gathered in 16-bit, parameters and gradients: DeepSpeed's estimate uses
     * 4 x largest layer (formulas.md). Megatron-FSDP: its own units (mem_mfsdp_buffers). */
    c->zero_gather = l->zero >= 3 ? 4.0 * c->par.layer_total : 0.0;
    c->mfsdp_fixed = 0.0;
    if (w->stack.megatron_fsdp) mem_mfsdp_buffers(w, l, c, shard);
    /* Gradient reduction buffers. Megatron's DDP reduces in place in its contiguous fp32 grad
     * buffer (all-reduce; with the distributed optimizer a reduce-scatter into that buffer and an
     * all-gather into the bf16 parameter buffer, megatron/core/distributed/
     * param_and_grad_buffer.py): nothing allocated; NCCL's own staging buffers are in the
     * reserve. DeepSpeed (fr->zero_bucket_bytes: one bucket of reduce_bucket_size 16-bit
     * elements): ZeRO-3 allocates its reduce bucket once, at initialisation, and holds it
     * (runtime/zero/stage3.py:782); ZeRO 1 and 2 fill one bucket, two with overlap_comm (the
     * double buffer, stage_1_and_2.py setup_buckets), from the backward's first gradient and
     * release them at its end (_release_ipg_buffers): mem_ds_timeline places them. Measured
     * with DeepSpeed 0.19.8 on two H200s (tests/data/deepspeed: the ZeRO-3 run's allocation
     * after deepspeed.initialize holds the 954 MiB bucket). */
    c->ds_buckets = 0.0;
    if (l->zero >= 3) c->ds_buckets = fr->zero_bucket_bytes;
    else if (l->zero >= 1) c->ds_buckets = (w->stack.no_overlap ? 1.0 : 2.0) * fr->zero_bucket_bytes;

    /* Reserve beyond the allocator: context, driver, NCCL communicators in use. Megatron creates
     * a communicator per process group it uses: tensor-parallel; pipeline p2p + pipeline group
     * (+ the embedding group for tied weights); data-parallel + data/context-parallel; context;
     * expert model-parallel, expert tensor-parallel and expert data-parallel. */
    int comms = 0;
    if (l->tp > 1) comms += 1;
    if (l->pp > 1) comms += 2 + (m->tied ? 1 : 0);
    if (l->dp * l->cp > 1) comms += 2;
    if (l->cp > 1) comms += 1;
    if (m->experts > 1) {
        if (l->ep > 1) comms += 1;
        if (pp_layout_etp(l) > 1 && pp_layout_etp(l) != l->tp) comms += 1;
        if (pp_layout_edp(l) > 1 && pp_layout_edp(l) != l->dp * l->cp) comms += 1;
    }
    double peers = m->experts > 1 && l->ep > 1 ? (double)(l->ep - 1 < 3 ? l->ep - 1 : 3) : 0.0;
    /* the flex dispatcher's DeepEP or HybridEP buffers (deepep.c) */
    double flex = pp_flex_layout_bytes(w, l);
    c->reserve_fixed = MEM_CONTEXT_BYTES + MEM_DRIVER_BYTES + comms * MEM_NCCL_COMM_BYTES +
                       (m->experts > 1 ? MEM_MOE_KERNELS_BYTES : 0.0) + peers * MEM_NCCL_A2A_PEER_BYTES +
                       mem_userbuffer_bytes(w, l, y0) + flex;
}

/* Micro-batch-layers of activations held by stage i (in units of "one layer of one
 * micro-batch" and "one micro-batch" for the stage-level terms). 1F1B: stage i keeps p - i
 * micro-batches in flight (Narayanan et al. 2021, sec. 2.2); interleaved with v chunks: Megatron
 * warms up (p - i - 1) * 2 + (v - 1) * p chunk forwards, so (that + 1) chunks of L/(p v) layers
 * are held (megatron/core/pipeline_parallel/schedules.py); both capped by what the step has. */
static double mem_inflight_chunks(const pp_layout *l, int64_t m, int64_t stage, double *mb_out)
{
    int64_t p = l->pp, v = l->vpp > 1 ? l->vpp : 1;
    double chunks, mbs;
    if (p <= 1) {
        chunks = 1;
        mbs = 1;
    } else if (v == 1) {
        chunks = (double)(p - stage < m ? p - stage : m);
        mbs = chunks;
    } else {
        int64_t warm = (p - stage - 1) * 2 + (v - 1) * p;
        int64_t held = warm + 1, total = m * v;
        if (held > total) held = total;
        chunks = (double)held / (double)v; /* in units of whole-stage micro-batches */
        mbs = ceil(chunks);
    }
    if (mb_out) *mb_out = mbs;
    return chunks;
}

/* An interleaved stage whose virtual stages differ (pp_layout_vstages_uneven): its layers of
 * each kind over its model chunks (each chunk a contiguous range of decoder layers of its own) and
 * what it holds at the fullest moment of the schedule. */
typedef struct {
    int64_t layers, rc_layers;
    int64_t n_all[PP_LAYER_KINDS], n_rc[PP_LAYER_KINDS];
    double held_bytes;  /* stored layer activations at the fullest moment (not FSDP) */
    double held_layers; /* FSDP: the same in layer-micro-batches (one layer of one micro-batch = 1) */
} mem_vshape;

/* The fullest moment of Megatron's interleaved 1F1B on stage `stage` for model chunks of
 * different sizes (megatron/core/pipeline_parallel/schedules.py: forward k runs model chunk
 * (k mod p v) / p of micro-batch group k / (p v) (get_schedule_table with the default group of p
 * micro-batches), backward k chunk v - 1 minus that; (p - stage - 1) x 2 + (v - 1) x p warm-up
 * forwards, then a forward and a backward each, m v of each in the step). A forward's chunk
 * activations are held until its backward: the largest sum of a[chunk] over the forwards run but
 * not backwarded, right after a forward: H(j) = F(W + 1 + j) - B(j) in the steady state (F, B:
 * the first n forwards' and backwards' sums), or F(T) when the warm-up is the whole step. With
 * equal chunks this is (warm-up + 1) chunks, capped by the step: mem_inflight_chunks' count.
 * H repeats with period p v (each period runs every chunk p times both ways) and is linear
 * between the steps where the forward's or the backward's chunk changes, so its largest value is
 * at one of those O(v) steps. pre[c]: the sum of a[0 .. c). */
static double mem_vs_sum(const double *pre, int64_t v, int64_t p, int64_t n, bool backward)
{
    int64_t P = p * v, rem = n % P, c = rem / p, part = rem % p;
    double A = pre[v], s = (double)(n / P) * (double)p * A;
    if (!backward) return s + (double)p * pre[c] + (double)part * (pre[c + 1] - pre[c]);
    return s + (double)p * (A - pre[v - c]) + (double)part * (pre[v - c] - pre[v - c - 1]);
}

static double mem_vstage_peak(int64_t p, int64_t v, int64_t m, int64_t stage, const double *pre)
{
    int64_t P = p * v, T = m * v, W = (p - stage - 1) * 2 + (v - 1) * p;
    if (W >= T) return mem_vs_sum(pre, v, p, T, false);
    int64_t J = T - W < P ? T - W : P;
    double h = mem_vs_sum(pre, v, p, W + 1, false), best = h;
    /* step j adds forward W + 1 + j (chunk cf, fo steps into its run of p) and drops backward j
     * (chunk v - 1 - cb, bo steps into its run) */
    int64_t fpos = (W + 1) % P, cf = fpos / p, fo = fpos % p, cb = 0, bo = 0;
    for (int64_t j = 0; j < J - 1;) {
        int64_t step = p - fo < p - bo ? p - fo : p - bo;
        if (step > J - 1 - j) step = J - 1 - j;
        h += (double)step * ((pre[cf + 1] - pre[cf]) - (pre[v - cb] - pre[v - cb - 1]));
        if (h > best) best = h;
        j += step;
        if ((fo += step) == p) fo = 0, cf = cf + 1 == v ? 0 : cf + 1;
        if ((bo += step) == p) bo = 0, cb = cb + 1 == v ? 0 : cb + 1;
    }
    return best;
}

static void mem_stage_core(const pp_work *w, const pp_layout *l, const mem_ctx *c, int64_t stage, int64_t layers,
                           int64_t rc_layers, const int64_t n_all[PP_LAYER_KINDS], const int64_t n_rc[PP_LAYER_KINDS],
                           const mem_vshape *vs, pp_mem_stage *o);

/* A stage holding layers [first, first + layers) of which the first rc_layers are fully
 * recomputed (Megatron's block method recomputes the first K layers of a stage). */
static void mem_stage_eval(const pp_work *w, const pp_layout *l, const mem_ctx *c, int64_t stage,
                           int64_t first, int64_t layers, int64_t rc_layers, pp_mem_stage *o)
{
    /* rc_layers is the exact count of fully recomputed layers (Megatron's block method); the
     * other layers follow the layout: selective, or nothing recomputed. */
    if (rc_layers > layers) rc_layers = layers;
    if (rc_layers < 0) rc_layers = 0;
    int64_t n_rc[PP_LAYER_KINDS], n_all[PP_LAYER_KINDS];
    pp_model_layer_counts(&w->model, first, rc_layers, n_rc);
    pp_model_layer_counts(&w->model, first, layers, n_all);
    mem_stage_core(w, l, c, stage, layers, rc_layers, n_all, n_rc, NULL, o);
}

/* Stored bytes per micro-batch of n_all layers of each kind, n_rc of them fully recomputed. */
static double mem_layers_bytes(const pp_layout *l, const mem_ctx *c, const int64_t n_all[PP_LAYER_KINDS],
                               const int64_t n_rc[PP_LAYER_KINDS])
{
    pp_recompute rc = l->recompute == PP_RC_SELECTIVE ? PP_RC_SELECTIVE : PP_RC_NONE;
    double bytes = 0;
    for (int k = 0; k < PP_LAYER_KINDS; k++) {
        int moe = k & PP_LAYER_MOE ? 1 : 0;
        double r = (double)n_rc[k];
        bytes += ((double)n_all[k] - r) * c->layer_bytes[moe][rc] + r * c->layer_bytes[moe][PP_RC_FULL];
    }
    return bytes;
}

/* The layers and the first decoder layer of every virtual stage of an explicit split, in model
 * order (k < pp x vpp): once per layout, so that a stage's chunks cost O(vpp) (the balanced split
 * has them in closed form: pp_layout_vstage_first_layer). */
static void mem_vstage_firsts(const pp_work *w, const pp_layout *l, int64_t *firsts, int64_t *counts)
{
    int64_t at = 0;
    for (int64_t k = 0; k < l->pp * l->vpp; k++) {
        firsts[k] = at;
        counts[k] = pp_layout_vstage_layers(w, l, k % l->pp, k / l->pp);
        at += counts[k];
    }
}

/* A stage of an uneven interleaved split, chunk by chunk (pp_layout_vstage_layers: the layers,
 * pp_layout_vstage_recompute: the first ones of each chunk fully recomputed); firsts and counts
 * from mem_vstage_firsts, or NULL. */
static void mem_vshape_get(const pp_work *w, const pp_layout *l, const mem_ctx *c, int64_t stage,
                           const int64_t *firsts, const int64_t *counts, mem_vshape *vs)
{
    memset(vs, 0, sizeof *vs);
    int64_t v = l->vpp, p = l->pp;
    double pa[PP_MAX_VSTAGES + 1], pb[PP_MAX_VSTAGES + 1]; /* prefix sums of the chunks' bytes, layers */
    pa[0] = pb[0] = 0;
    for (int64_t j = 0; j < v; j++) {
        int64_t first = firsts ? firsts[j * p + stage] : pp_layout_vstage_first_layer(w, l, stage, j);
        int64_t n = counts ? counts[j * p + stage] : pp_layout_vstage_layers(w, l, stage, j);
        int64_t r = l->recompute == PP_RC_FULL ? pp_layout_vstage_recompute(w, l, stage, j) : 0;
        int64_t ca[PP_LAYER_KINDS], cr[PP_LAYER_KINDS];
        pp_model_layer_counts(&w->model, first, n, ca);
        pp_model_layer_counts(&w->model, first, r, cr);
        for (int q = 0; q < PP_LAYER_KINDS; q++) {
            vs->n_all[q] += ca[q];
            vs->n_rc[q] += cr[q];
        }
        vs->layers += n;
        vs->rc_layers += r;
        pa[j + 1] = pa[j] + (pp_work_fw(w)->block_sharding ? 0.0 : mem_layers_bytes(l, c, ca, cr));
        pb[j + 1] = pb[j] + (double)n;
    }
    if (pp_work_fw(w)->block_sharding) vs->held_layers = mem_vstage_peak(p, v, c->m, stage, pb);
    else vs->held_bytes = mem_vstage_peak(p, v, c->m, stage, pa);
}

static void mem_stage_eval_v(const pp_work *w, const pp_layout *l, const mem_ctx *c, int64_t stage,
                             const int64_t *firsts, const int64_t *counts, pp_mem_stage *o)
{
    mem_vshape vs;
    mem_vshape_get(w, l, c, stage, firsts, counts, &vs);
    mem_stage_core(w, l, c, stage, vs.layers, vs.rc_layers, vs.n_all, vs.n_rc, &vs, o);
}

/* ZeRO 1 and 2 without pipeline stages as DeepSpeed runs them (the row's zero_grads_step_only;
 * runtime/zero/stage_1_and_2.py, DeepSpeed 0.19): the 16-bit gradients exist only from the
 * backward to the optimizer step. The step frees
 * them (free_grad_in_param_list) and the backward's epilogue releases the reduce buckets and the
 * gradient partition (_release_ipg_buffers), so at the next forward and loss, where the stored
 * activations peak, no gradient is held unless gradient accumulation keeps the earlier
 * micro-batches' (stage 1: every parameter's .grad; stage 2: the rank's partition). Measured on
 * two H200s (tests/data/deepspeed, Llama-3-8B's shape cut to 8 layers): ZeRO 1 and ZeRO 2 peak
 * at the same 33,811 MiB, at the loss's backward, with no gradient allocated. Under ZeRO-3 the
 * gradient partition is a buffer held from initialisation (stage3.py grad_partitions_flat_buffer),
 * and the pipeline engine accumulates over its micro-batches: both keep the resident model. */
static bool mem_ds_grads_transient(const pp_work *w, const pp_layout *l)
{
    return pp_work_fw(w)->zero_grads_step_only && (l->zero == 1 || l->zero == 2) && l->pp == 1 &&
           l->offload == PP_OFF_NONE && !l->dist_opt;
}

/* The largest of three moments of a ZeRO 1/2 step (mem_ds_grads_transient), the
 * stage's breakdown becoming what is allocated there:
 *   - the loss's backward: the stored activations and the working set, with the gradients of
 *     earlier micro-batches when the step accumulates (c->m > 1; stage 1 keeps its buckets too);
 *   - the end of the backward: the gradients (stage 1: whole; stage 2: the partition) and the
 *     reduce buckets (c->ds_buckets);
 *   - the optimizer step: the partition's 16-bit gradients, their flat copy and its fp32 cast for
 *     the fp32 master partition (`flatten(averaged_gradients)`, then
 *     `single_grad_partition = flat_grad_partition.to(fp32)`), 2 + 2 + 4 bytes a partition
 *     element; under stage 1 the other ranks' gradients are freed first
 *     (free_grad_in_param_list), the whole 16-bit gradient being the larger before that. */
static void mem_ds_timeline(const pp_layout *l, const mem_ctx *c, pp_mem_stage *o, double work, double opt)
{
    const double G = o->grads_bytes; /* stage 1: the whole 16-bit gradient; stage 2: the partition */
    const double shard = (double)(l->dp * l->cp > 0 ? l->dp * l->cp : 1);
    /* accumulation: the earlier micro-batches' gradients, and under stage 1 the reduce buckets,
     * which every backward's gradient hooks allocate (process_gradients -> setup_buckets) and
     * stage 1 releases only at the step's last backward (reduce_gradients' epilogue); measured on
     * the ZeRO-1 run with two micro-batches a step (z1_l8_b1_g2: -2.46% without them, a run held
     * out when this was written, looked at since) */
    const double held = c->m > 1 ? G + (l->zero == 1 ? c->ds_buckets : 0.0) : 0.0;
    const double fixed = c->workspace + c->mfsdp_fixed;
    double at_loss = held + o->activations_bytes + fixed + mem_max(work, opt - o->activations_bytes);
    double at_end = G + c->ds_buckets + fixed;
    double part = l->zero == 1 ? G / shard : G; /* the rank's partition, 16-bit */
    double at_step = mem_max(G, 4.0 * part) + fixed + opt;
    if (at_loss >= at_end && at_loss >= at_step) {
        o->grads_bytes = held;
        o->transient_bytes = at_loss - held - o->activations_bytes;
    } else {
        double top = mem_max(at_end, at_step);
        o->grads_bytes = G;
        o->activations_bytes = 0;
        o->transient_bytes = top - G;
    }
}

/* The stage's figures from its layers of each kind (n_all, n_rc fully recomputed) and, for an
 * uneven interleaved split, what the schedule holds (vs; NULL: the in-flight count of
 * mem_inflight_chunks times the stage's layers). */
static void mem_stage_core(const pp_work *w, const pp_layout *l, const mem_ctx *c, int64_t stage, int64_t layers,
                           int64_t rc_layers, const int64_t n_all[PP_LAYER_KINDS], const int64_t n_rc[PP_LAYER_KINDS],
                           const mem_vshape *vs, pp_mem_stage *o)
{
    memset(o, 0, sizeof *o);
    const pp_model *m = &w->model;
    bool first_stage = stage == 0, last = stage == l->pp - 1;
    const mem_params *p = &c->par;
    o->stage = stage;
    o->layers = layers;
    o->recompute_layers = rc_layers;
    int64_t mtp = last ? m->mtp_layers : 0;
    int mtp_kind = pp_model_mtp_kind(m);
    if (pp_work_fw(w)->block_sharding) {
        double fsdp_mbs;
        double fsdp_chunks = mem_inflight_chunks(l, c->m, stage, &fsdp_mbs);
        if (vs) fsdp_chunks = layers > 0 ? vs->held_layers / (double)layers : 1.0;
        o->inflight = (int64_t)fsdp_mbs;
        pp_fsdp_stage_eval(w, l, &c->fsdp, n_all, n_rc, first_stage, last, fsdp_chunks, o, NULL);
        return;
    }

    /* Model state. */
    double dense = (first_stage ? p->embedding : 0.0) + (last ? p->head : 0.0), expert = 0;
    pp_recompute rc = l->recompute == PP_RC_SELECTIVE ? PP_RC_SELECTIVE : PP_RC_NONE;
    double per_mb = 0, recompute_set = 0;
    for (int k = 0; k < PP_LAYER_KINDS; k++) {
        double n = (double)n_all[k] + (k == mtp_kind ? (double)mtp : 0.0);
        if (n <= 0) continue;
        double dk, ek;
        mem_params_kind(p, k, &dk, &ek);
        dense += n * dk;
        expert += n * ek;
        int moe = k & PP_LAYER_MOE ? 1 : 0;
        double r = (double)n_rc[k];
        per_mb += ((double)n_all[k] - r) * c->layer_bytes[moe][rc] + r * c->layer_bytes[moe][PP_RC_FULL];
        if (r > 0)
            recompute_set = mem_max(recompute_set, c->layer_bytes[moe][rc] - c->layer_bytes[moe][PP_RC_FULL] +
                                                    c->bwd_work[moe] + c->wgrad);
    }
    dense += (double)mtp * p->mtp_extra;
    o->weights_bytes = dense * c->st.weights + expert * c->st_expert.weights +
                       (dense + expert - (first_stage ? p->embedding : 0.0) - (last ? p->head : 0.0)) *
                           c->fp8_weight_per_param;
    o->grads_bytes = dense * c->st.grads + expert * c->st_expert.grads;
    o->optimizer_bytes = dense * c->st.optimizer + expert * c->st_expert.optimizer;
    if (c->lora_layer > 0) {
        /* LoRA: the base weights as above (16-bit, or FP8 under --fp8-param-gather), its
         * gradients and optimizer state gone; the stage's adapters with theirs */
        double adapters = (double)layers * c->lora_layer;
        o->weights_bytes += adapters * c->st.weights;
        o->grads_bytes = adapters * c->st.grads;
        o->optimizer_bytes = adapters * c->st.optimizer;
        dense = adapters; /* what the optimizer step updates */
        expert = 0;
    }

    /* Stored activations. */
    double mbs_held;
    double chunks = mem_inflight_chunks(l, c->m, stage, &mbs_held);
    o->inflight = (int64_t)mbs_held;
    double stage_mb = (first_stage || last ? c->data : 0.0) + (first_stage ? c->embed_act : 0.0) +
                      (last ? c->mtp_act : 0.0);
    /* The last stage runs forward then backward for one micro-batch at a time. */
    o->activations_bytes = (vs ? vs->held_bytes : chunks * per_mb) + mbs_held * stage_mb + (last ? c->head_act : 0.0) -
                           c->offload_bytes;

    /* Transient: the largest working set on top of the stored activations. */
    bool has_moe = n_all[PP_LAYER_MOE] + n_all[PP_LAYER_MOE | PP_LAYER_WINDOW] > 0 ||
                   (mtp > 0 && (mtp_kind & PP_LAYER_MOE));
    double work = has_moe ? c->bwd_work[1] : c->bwd_work[0];
    if (n_all[0] + n_all[PP_LAYER_WINDOW] > 0) work = mem_max(work, c->bwd_work[0]);
    work += c->wgrad;
    /* Recompute of one layer during its backward, then that layer's backward working set. */
    work = mem_max(work, recompute_set);
    if (l->recompute == PP_RC_SELECTIVE) { /* attention core recomputed in the backward */
        int moe = has_moe ? 1 : 0;
        work = mem_max(work, c->layer_bytes[moe][PP_RC_NONE] - c->layer_bytes[moe][PP_RC_SELECTIVE] +
                              c->attn_work + c->wgrad);
    }
    if (last) work = mem_max(work, c->loss_work);
    work += c->zero_gather;
    /* The optimizer step runs with no activations held. */
    double opt = (dense + expert) * c->opt_work_per_param;
    double fixed = c->workspace + c->ds_buckets + c->mfsdp_fixed;
    o->transient_bytes = fixed + mem_max(work, opt - o->activations_bytes);
    if (mem_ds_grads_transient(w, l)) mem_ds_timeline(l, c, o, work, opt);
    o->peak_bytes = o->weights_bytes + o->grads_bytes + o->optimizer_bytes + o->activations_bytes +
                    o->transient_bytes;
    double shortlived = o->activations_bytes + o->transient_bytes - c->workspace;
    if (pp_stack_cuda_graphs(&w->stack) & (1u << PP_CG_FULL_ITERATION)) /* the graph's pool */
        o->reserved_bytes = c->reserve_fixed + (pp_mem_graph_pool_factor - 1.0) * shortlived +
                            pp_mem_graph_state_held * (o->weights_bytes + o->grads_bytes + o->optimizer_bytes);
    else
        o->reserved_bytes = c->reserve_fixed + MEM_SLACK_FRACTION * shortlived +
                            MEM_SLACK_RECOMPUTE_SETS * recompute_set + mem_max(last ? c->frag_block : 0.0, c->frag_attn);
    double cap = w->gpu.memory_bytes;
    o->fits = o->peak_bytes + o->reserved_bytes <= cap;
}

/* First layer of stage i for a stage priced with an explicit layer count (the ILP): the
 * layout's split when it has one, else the uniform split's. */
static int64_t mem_stage_first(const pp_work *w, const pp_layout *l, int64_t stage)
{
    return pp_layout_stage_first_layer(w, l, stage);
}

void pp_memory_stage(const pp_work *w, const pp_layout *l, int64_t stage, int64_t layers,
                     int64_t recompute_layers, pp_mem_stage *out)
{
    mem_ctx c;
    mem_ctx_init(w, l, &c);
    mem_stage_eval(w, l, &c, stage, mem_stage_first(w, l, stage), layers, recompute_layers, out);
}

void pp_memory_stage_range(const pp_work *w, const pp_layout *l, int64_t stage, int64_t first,
                           int64_t layers, int64_t recompute_layers, pp_mem_stage *out)
{
    mem_ctx c;
    mem_ctx_init(w, l, &c);
    mem_stage_eval(w, l, &c, stage, first, layers, recompute_layers, out);
}

/* Layers and fully recomputed layers of stage i under the layout: --recompute full recomputes
 * --recompute-layers of each stage's layers, all of them when that is 0. */
static void mem_stage_shape(const pp_work *w, const pp_layout *l, int64_t i, int64_t *layers,
                            int64_t *rc)
{
    *layers = pp_layout_stage_layers(w, l, i);
    if (l->stage_recompute) *rc = l->stage_recompute[i];
    else if (l->recompute == PP_RC_FULL)
        *rc = l->recompute_layers > 0 && l->recompute_layers < *layers ? l->recompute_layers : *layers;
    else *rc = 0;
}

double pp_memory_worst_bytes(const pp_work *w, const pp_layout *l, double *peak_bytes)
{
    mem_ctx c;
    mem_ctx_init(w, l, &c);
    double worst = -1, worst_peak = 0;
    /* Uniform split of one layer kind: stage 0 (most layers, most in flight, embedding) and the
     * last stage (loss) bound all others, whose terms are each no larger than stage 0's. Uneven
     * splits (ILP) and mixed layer kinds are checked stage by stage. */
    int64_t n = l->pp;
    if (pp_layout_vstages_uneven(w, l)) {
        /* chunk by chunk. The balanced split: a middle stage holds no more layers in any chunk
         * than the stage before it (the extra slots go to the first virtual stages) and no more
         * micro-batches in flight, so where both hold layers of one kind only (all of them past
         * an MoE model's dense first layers) the one before bounds it. */
        int64_t firsts[PP_MAX_VSTAGES], counts[PP_MAX_VSTAGES];
        bool given = l->vstage_layers != NULL;
        if (given) mem_vstage_firsts(w, l, firsts, counts);
        for (int64_t i = 0; i < n; i++) {
            if (!given && i > 1 && i < n - 1 &&
                pp_model_one_kind_from(&w->model, pp_layout_vstage_first_layer(w, l, i - 1, 0)))
                continue;
            pp_mem_stage s;
            mem_stage_eval_v(w, l, &c, i, given ? firsts : NULL, given ? counts : NULL, &s);
            if (s.peak_bytes + s.reserved_bytes > worst) {
                worst = s.peak_bytes + s.reserved_bytes;
                worst_peak = s.peak_bytes;
            }
        }
        if (peak_bytes) *peak_bytes = worst_peak;
        return worst;
    }
    bool uniform = !l->stage_layers && !l->stage_recompute && !l->vstage_layers;
    bool skip = uniform && mem_uniform_kinds(&w->model);
    /* Mixed kinds under a uniform split: a middle stage holding the same layers of each kind as
     * the middle stage before it holds no more micro-batches than that one (1F1B and the
     * interleaved schedule keep fewer in flight further down the pipeline), so it is no fuller. */
    int64_t prev[PP_LAYER_KINDS] = {-1, -1, -1, -1};
    for (int64_t i = 0; i < n; i++) {
        if (skip && i > 0 && i < n - 1) continue;
        int64_t layers, rc;
        mem_stage_shape(w, l, i, &layers, &rc);
        int64_t first = pp_layout_stage_first_layer(w, l, i);
        if (uniform && !skip && i > 0 && i < n - 1) {
            int64_t cnt[PP_LAYER_KINDS];
            pp_model_layer_counts(&w->model, first, layers, cnt);
            if (!memcmp(cnt, prev, sizeof cnt)) continue;
            memcpy(prev, cnt, sizeof cnt);
        }
        pp_mem_stage s;
        mem_stage_eval(w, l, &c, i, first, layers, rc, &s);
        double need = s.peak_bytes + s.reserved_bytes;
        if (need > worst) {
            worst = need;
            worst_peak = s.peak_bytes;
        }
    }
    if (peak_bytes) *peak_bytes = worst_peak;
    return worst;
}

/* ------------------------------------------------------------------ full estimate */

static const char *mem_gib(double bytes, char *buf, size_t n)
{
    snprintf(buf, n, "%.1f GiB", bytes / GIB);
    return buf;
}

double pp_memory_offload_bytes(const pp_work *w, const pp_layout *l)
{
    if (w->stack.cpu_offload_layers <= 0 || pp_work_fw(w)->block_sharding) return 0;
    mem_ctx c;
    mem_ctx_init(w, l, &c);
    return c.offload_bytes;
}

void pp_memory_mfsdp(const pp_work *w, const pp_layout *l, pp_mem_mfsdp *out)
{
    memset(out, 0, sizeof *out);
    if (!w->stack.megatron_fsdp || pp_work_fw(w)->block_sharding) return;
    mem_ctx c;
    mem_ctx_init(w, l, &c);
    *out = c.mfsdp;
}

double pp_memory_plan_bytes(const pp_work *w)
{
    double m = w->mem_margin_frac > 0 && w->mem_margin_frac < 1 ? w->mem_margin_frac : 0;
    return w->gpu.memory_bytes * (1 - m);
}

/* Append printf-style to a NUL-terminated buffer of n bytes (truncating). */
static void mem_append(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void mem_append(char *buf, size_t n, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, n - used, fmt, ap);
    va_end(ap);
}

/* One line: why the worst stage does not fit. */
static void mem_explain(const pp_mem_result *r, char *why, size_t n)
{
    const pp_mem_stage *s = &r->stages[r->largest_stage];
    char a[32], b[32], c1[32], d[32], e[32];
    double state = s->weights_bytes + s->grads_bytes + s->optimizer_bytes;
    why[0] = 0;
    mem_append(why, n, "stage %lld needs %s + %s reserve of %s (model state %s, activations %s for "
               "%lld micro-batch(es) in flight)",
               (long long)s->stage, mem_gib(s->peak_bytes, a, sizeof a),
               mem_gib(s->reserved_bytes, b, sizeof b), mem_gib(r->capacity_bytes, c1, sizeof c1),
               mem_gib(state, d, sizeof d),
               mem_gib(s->activations_bytes + s->transient_bytes, e, sizeof e), (long long)s->inflight);
    /* what would make it fit is the remedy search's (search/remedy.c, run.c): the layouts nearest
     * to this one that fit, which check and estimate print under this line */
}

pp_status pp_memory_estimate(const pp_work *w, const pp_layout *l, pp_mem_result *out, pp_error *err)
{
    memset(out, 0, sizeof *out);
    if (l->pp < 1 || l->pp > PP_MAX_STAGES)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--pp %lld: at most %d stages",
                            (long long)l->pp, PP_MAX_STAGES);
    if (!(w->gpu.memory_bytes > 0))
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "GPU %s has no memory size", w->gpu.name);
    mem_ctx c;
    mem_ctx_init(w, l, &c);
    out->n_stages = l->pp;
    out->capacity_bytes = w->gpu.memory_bytes;
    out->fits = true;
    double worst = -1;
    bool by_chunk = pp_layout_vstages_uneven(w, l);
    int64_t firsts[PP_MAX_VSTAGES], counts[PP_MAX_VSTAGES];
    if (by_chunk) mem_vstage_firsts(w, l, firsts, counts);
    for (int64_t i = 0; i < l->pp; i++) {
        int64_t layers, rc;
        pp_mem_stage *s = &out->stages[i];
        if (by_chunk) {
            mem_stage_eval_v(w, l, &c, i, firsts, counts, s);
        } else {
            mem_stage_shape(w, l, i, &layers, &rc);
            mem_stage_eval(w, l, &c, i, pp_layout_stage_first_layer(w, l, i), layers, rc, s);
        }
        if (s->peak_bytes > out->peak_bytes) out->peak_bytes = s->peak_bytes;
        if (s->peak_bytes + s->reserved_bytes > worst) {
            worst = s->peak_bytes + s->reserved_bytes;
            out->largest_stage = i;
        }
        if (!s->fits) out->fits = false;
    }
    if (!out->fits) mem_explain(out, out->why, sizeof out->why);
    return PP_OK;
}
