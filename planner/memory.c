/* Memory model (issue 3): per pipeline stage, what one rank holds at its allocator peak.
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
 * tests/memory/test_megatron_runs.c). "eager" below is Megatron's local implementation without
 * Transformer Engine or apex (--attention unfused): unfused attention, SwiGLU and weight-gradient
 * accumulation in plain PyTorch ops and torch.optim.AdamW (foreach). --attention flash stands for
 * the Transformer Engine path (flash attention, fused SwiGLU, fused wgrad accumulation, fused Adam).
 */
#include "pp_memory.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
/* Caching-allocator slack at the peak: max_memory_reserved - max_memory_allocated relative to
 * the short-lived part of the peak (max allocated minus the static allocation). In the runs it
 * was 2-6% for GPT shapes and 7-14% for the Llama shape without recompute or with selective
 * recompute; 12% covers all rows but one (14%, 400 MiB more on a small pipeline stage). Full
 * recompute frees and re-allocates one layer's working set (its recomputed activations and their
 * backward) once per layer, which leaves cached but unused blocks of that size: beyond the 12%,
 * measured 1.15x (gpt-2.7b, mbs 8) and 1.6x (llama-3b, mbs 2, s 4096) that working set. */
static const double MEM_SLACK_FRACTION = 0.12;
static const double MEM_SLACK_RECOMPUTE_SETS = 1.6;
/* cuBLAS / cuBLASLt workspaces (PyTorch allocates them through its caching allocator) and the
 * small persistent tensors of a training step (loss scalars, RNG states, rotary tables).
 * Measured: the static allocation after an iteration minus the model state and the attention
 * buffer is 73 MiB (llama-3b) to 114 MiB (gpt-2.7b). */
static const double MEM_WORKSPACE_BYTES = 96.0 * MIB;
/* DeepSpeed ZeRO stage 1/2 gradient reduce bucket and stage 1-3 all-gather bucket:
 * reduce_bucket_size and allgather_bucket_size default to 5e8 elements (DeepSpeed config docs),
 * held in 16-bit. */
static const double MEM_DS_BUCKET_ELEMS = 5e8;

/* ------------------------------------------------------------------ model state per parameter */

void pp_memory_state_per_param(pp_framework fw, int zero, bool dist_opt, pp_offload off,
                               int64_t shard, pp_state_bytes *out)
{
    double d = shard > 0 ? (double)shard : 1.0;
    if (fw == PP_FW_MEGATRON) {
        /* Megatron bf16 (megatron/training/theoretical_memory_usage.py, docs dist_optimizer.md):
         * bf16 weight 2 + fp32 main grad 4 + fp32 main param 4 + Adam m 4 + v 4 = 18 bytes;
         * the distributed optimizer shards the 12 optimizer bytes: 6 + 12/d. */
        out->weights = 2;
        out->grads = 4;
        out->optimizer = dist_opt ? 12.0 / d : 12.0;
    } else {
        /* ZeRO paper (Rajbhandari et al. 2020, sec. 3 and table 1): mixed-precision Adam keeps
         * 2 (16-bit params) + 2 (16-bit grads) + K = 12 (fp32 params, m, v). Stage 1 shards the
         * optimizer, stage 2 also the gradients, stage 3 also the parameters. FSDP's
         * FULL_SHARD / SHARD_GRAD_OP map to stages 3 / 2 with the same byte counts. */
        out->weights = zero >= 3 ? 2.0 / d : 2.0;
        out->grads = zero >= 2 ? 2.0 / d : 2.0;
        out->optimizer = zero >= 1 ? 12.0 / d : 12.0;
    }
    /* ZeRO-Offload keeps the optimizer state (and fp32 master) in host memory; params offload
     * (ZeRO-Infinity) also the 16-bit parameters. */
    if (off >= PP_OFF_OPTIMIZER) out->optimizer = 0;
    if (off >= PP_OFF_PARAMS) out->weights = 0;
}

/* ------------------------------------------------------------------ shapes */

/* Megatron's dropout defaults (--attention-dropout / --hidden-dropout 0.1) are kept by the
 * GPT-2/3 and BLOOM lineage of models, which have linear biases; the Llama lineage (no biases)
 * trains without dropout. pp_model has no dropout field, so this is the rule. */
static bool mem_dropout(const pp_model *m) { return m->bias; }

/* Vocabulary as the framework stores it: Megatron pads to a multiple of 128 x TP
 * (--make-vocab-size-divisible-by 128, megatron/training/vocab_utils.py). */
static double mem_vocab(const pp_work *w, const pp_layout *l)
{
    double v = (double)w->model.vocab;
    if (w->framework == PP_FW_MEGATRON) {
        double mul = 128.0 * (double)l->tp;
        v = ceil(v / mul) * mul;
    }
    return v;
}

static bool mem_eager(const pp_work *w)
{
    return w->framework != PP_FW_MEGATRON || w->attention == PP_ATTN_UNFUSED;
}

/* KV heads on one TP rank: Megatron replicates KV heads when tp exceeds them. */
static double mem_kv_heads_rank(const pp_model *m, int64_t tp)
{
    return m->kv_heads >= tp ? (double)m->kv_heads / (double)tp : 1.0;
}

static double mem_ffn(const pp_model *m) { return (double)m->ffn; }

/* ------------------------------------------------------------------ parameters per rank */

typedef struct {
    double layer_dense;  /* one layer without routed experts, on one rank */
    double layer_expert; /* routed experts of one layer on one rank */
    double embedding;    /* word (+ learned positions) on the first stage */
    double head;         /* final norm + output layer (or tied copy) on the last stage */
    double largest;      /* largest single tensor on a rank (elements) */
    double largest_layer_weight; /* largest weight inside a layer on a rank */
    double layer_total;  /* one layer, unsharded, all experts (ZeRO-3 gathers) */
} mem_params;

static void mem_params_get(const pp_work *w, const pp_layout *l, mem_params *p)
{
    const pp_model *m = &w->model;
    double h = (double)m->hidden, t = (double)l->tp, d = (double)m->head_dim;
    double aq = (double)m->heads / t, gk = mem_kv_heads_rank(m, l->tp), f = mem_ffn(m);
    double V = mem_vocab(w, l);
    double bias = m->bias ? 1.0 : 0.0;
    double norm = m->norm == PP_NORM_LAYERNORM ? 2.0 : 1.0; /* weight (+ bias) */
    double gate = m->act == PP_ACT_SWIGLU ? 2.0 : 1.0;
    /* Per-tensor table of one layer on one rank: {elements, sharded by TP}. Column-parallel
     * (QKV, FC1) weights and biases and row-parallel (proj, FC2) weights are split; row-parallel
     * biases and norms are replicated (megatron/core/tensor_parallel/layers.py). */
    double qkv_w = h * (aq + 2 * gk) * d, qkv_b = bias * (aq + 2 * gk) * d;
    double proj_w = aq * d * h, proj_b = bias * h;
    double fc1_w = h * gate * f / t, fc1_b = bias * gate * f / t;
    double fc2_w = f / t * h, fc2_b = bias * h;
    double norms = 2 * norm * h;
    double mlp = fc1_w + fc1_b + fc2_w + fc2_b;
    p->layer_dense = qkv_w + qkv_b + proj_w + proj_b + norms;
    p->layer_expert = 0;
    if (m->experts > 1) {
        /* Routed experts: experts / ep per rank, each split by the expert TP (= tp); router
         * h x E replicated. */
        double per_rank = (double)m->experts / (double)l->ep;
        p->layer_expert = per_rank * mlp;
        p->layer_dense += h * (double)m->experts;
    } else {
        p->layer_dense += mlp;
    }
    double word = V * h / t;
    double pos = m->pos == PP_POS_LEARNED ? (double)m->seq * h : 0.0;
    p->embedding = word + pos;
    /* Untied: own output layer. Tied with pp > 1: Megatron keeps a copy of the word embedding on
     * the last stage (megatron/core/models/common/language_module). Tied with pp = 1: shared. */
    double out = (!m->tied || l->pp > 1) ? word : 0.0;
    p->head = norm * h + out;
    p->largest = fmax(word, fmax(qkv_w, fmax(fc1_w, fc2_w)));
    p->largest_layer_weight = fmax(qkv_w, fmax(fc1_w, fmax(fc2_w, proj_w)));
    p->layer_total = (p->layer_dense + p->layer_expert) * t; /* close enough for ZeRO-3 gathers */
}

/* ------------------------------------------------------------------ activation table */

static void act_add(pp_act_table *tb, const char *name, double elems, double bytes, bool paper)
{
    if (elems <= 0 || tb->n >= PP_ACT_TENSORS_MAX) return;
    pp_act_tensor *e = &tb->t[tb->n++];
    e->name = name;
    e->elems = elems;
    e->bytes_per_elem = bytes;
    e->paper = paper;
    tb->bytes += elems * bytes;
    if (paper) tb->paper_bytes += elems * bytes;
}

void pp_memory_layer_table(const pp_work *w, const pp_layout *l, pp_recompute rc, pp_act_table *tb)
{
    const pp_model *m = &w->model;
    tb->n = 0; /* no memset: the search builds these tables for every candidate */
    tb->bytes = tb->paper_bytes = 0;
    double b = (double)l->mbs, s = (double)m->seq / (double)l->cp, sk = (double)m->seq;
    double h = (double)m->hidden, t = (double)l->tp, d = (double)m->head_dim;
    double aq = (double)m->heads / t, gk = mem_kv_heads_rank(m, l->tp), f = mem_ffn(m) / t;
    double sb = s * b;
    /* Tensors outside the TP region (norm inputs, linear inputs, dropout masks) are replicated
     * on every TP rank, or split by t under sequence parallelism (Korthikanti sec. 4.2.2). */
    double rep = l->sp ? 1.0 / t : 1.0;
    bool eager = mem_eager(w), drop = mem_dropout(m);
    bool unfused = w->attention == PP_ATTN_UNFUSED;
    double stats = m->norm == PP_NORM_LAYERNORM ? 2.0 : 1.0; /* mean + rstd, or rstd (fp32) */

    if (rc == PP_RC_FULL) {
        /* Full recompute keeps only the layer input (checkpoint), Korthikanti table 2: 2sbh. */
        act_add(tb, "layer.input", sb * h * rep, 2, true);
        return;
    }
    act_add(tb, "ln1.input", sb * h * rep, 2, true);
    act_add(tb, "ln1.stats", sb * rep * stats, 4, false);
    act_add(tb, "qkv.input", sb * h * rep, 2, true);

    /* Q, K, V as the attention kernel saves them. */
    if (unfused) {
        /* Megatron DotProductAttention: the QKV output [s,b,g,(a/g+2)d] is split into views.
         * Q is a new tensor when RoPE rotates it or when grouped heads force a copy in the
         * reshape; K and V are new when GQA repeats them (repeat_interleave) or, for K, RoPE
         * rotates it. baddbmm saves Q and K, bmm saves V; any saved view keeps the whole QKV
         * output alive. */
        bool rope = m->pos == PP_POS_ROPE, grouped = aq != gk;
        bool q_new = rope || (grouped && gk > 1), k_new = grouped || rope, v_new = grouped;
        act_add(tb, "attn.q", q_new ? sb * aq * d : 0, 2, true);
        act_add(tb, "attn.k", k_new ? sb * (grouped ? aq : gk) * d : 0, 2, true);
        act_add(tb, "attn.v", v_new ? sb * aq * d : 0, 2, true);
        if (!q_new || !k_new || !v_new) act_add(tb, "attn.qkv_out", sb * (aq + 2 * gk) * d, 2, true);
        if (rc != PP_RC_SELECTIVE) {
            /* Scores -> masked_fill_ (in place) -> softmax (saves its output) -> dropout (mask,
             * 1 byte) -> bmm (saves the dropped probabilities). 5 as^2 b in the paper. */
            double ss = b * aq * s * sk;
            act_add(tb, "attn.softmax", ss, 2, true);
            if (drop) {
                act_add(tb, "attn.dropout_mask", ss, 1, true);
                act_add(tb, "attn.dropout_out", ss, 2, true);
            }
        }
    } else {
        /* Flash attention (TE): saves q, k, v at their own head counts, the output (also the
         * projection input, below) and the fp32 log-sum-exp per row; no s^2 tensor. */
        act_add(tb, "attn.q", sb * aq * d, 2, true);
        act_add(tb, "attn.k", sb * gk * d, 2, true);
        act_add(tb, "attn.v", sb * gk * d, 2, true);
        act_add(tb, "attn.lse", b * aq * s, 4, false);
    }
    act_add(tb, "proj.input", sb * aq * d, 2, true);
    if (drop) act_add(tb, "attn.bda_mask", sb * h * rep, 1, true);
    act_add(tb, "ln2.input", sb * h * rep, 2, true);
    act_add(tb, "ln2.stats", sb * rep * stats, 4, false);

    /* MLP. MoE: each token visits topk experts; per rank the expert tensors of about
     * s b topk tokens, plus the router logits (fp32) and the permuted tokens. */
    double k = 1.0;
    if (m->experts > 1) {
        k = (double)(m->topk > 0 ? m->topk : 1);
        act_add(tb, "moe.router", sb * rep * (double)m->experts, 4, false);
        act_add(tb, "moe.dispatch", sb * rep * k * h, 2, false);
    }
    act_add(tb, "fc1.input", sb * h * rep, 2, true);
    if (m->act == PP_ACT_SWIGLU) {
        /* fc1 output holds gate and linear halves (2f). Fused SwiGLU (TE / bias_swiglu_impl)
         * saves only that; Megatron's eager glu() also keeps silu(gate) and the copy made by
         * `x_linear + glu_linear_offset` (megatron/core/transformer/mlp.py), both saved by the
         * product. */
        act_add(tb, "mlp.fc1_out", k * sb * 2 * f, 2, true);
        if (eager) {
            act_add(tb, "mlp.silu_out", k * sb * f, 2, true);
            act_add(tb, "mlp.linear_offset", k * sb * f, 2, true);
        }
    } else {
        act_add(tb, "mlp.act_input", k * sb * f, 2, true); /* GeLU input: 8sbh for f = 4h */
    }
    act_add(tb, "fc2.input", k * sb * f, 2, true);
    if (drop) act_add(tb, "mlp.bda_mask", sb * h * rep, 1, true);
}

/* ------------------------------------------------------------------ per-layout context */

/* Everything the per-stage arithmetic needs, computed once per (work, layout): the search calls
 * pp_memory_worst_bytes for every candidate, so stages cost O(1) each. */
typedef struct {
    mem_params par;
    pp_state_bytes st;        /* dense parameters */
    pp_state_bytes st_expert; /* routed experts (sharded over the expert data-parallel group) */
    double layer_bytes[PP_RC_COUNT]; /* stored per layer per micro-batch, by recompute mode */
    double attn_work;   /* working set of one layer's attention (scores / their gradients) */
    double mlp_work;    /* working set of one layer's MLP backward */
    double wgrad;       /* eager: 16-bit weight gradient before it is added to main_grad */
    double workspace;   /* persistent: cuBLAS, attention input buffer */
    double embed_act;   /* first stage, per micro-batch */
    double data;        /* batch tensors per micro-batch (first and last stage) */
    double head_act;    /* last stage, per micro-batch: final norm and output layer inputs */
    double loss_work;   /* last stage: logits and loss working set */
    double opt_work_per_param; /* optimizer-step temporaries per parameter on the rank */
    double zero_gather; /* ZeRO-3 / FSDP gathered parameters of the layers in flight */
    double ds_buckets;  /* DeepSpeed reduce / all-gather buckets */
    double reserve_fixed;
    int64_t m;          /* micro-batches per step per replica */
} mem_ctx;

static void mem_ctx_init(const pp_work *w, const pp_layout *l, mem_ctx *c)
{
    const pp_model *m = &w->model;
    mem_params_get(w, l, &c->par);
    int64_t shard = l->dp * l->cp;
    pp_memory_state_per_param(w->framework, l->zero, l->dist_opt, l->offload, shard, &c->st);
    int64_t eshard = l->ep > 0 ? shard / l->ep : shard;
    pp_memory_state_per_param(w->framework, l->zero, l->dist_opt, l->offload,
                              eshard > 0 ? eshard : 1, &c->st_expert);
    pp_act_table tb;
    for (int rc = 0; rc < PP_RC_COUNT; rc++) {
        if (rc == PP_RC_SELECTIVE && l->recompute != PP_RC_SELECTIVE) continue; /* unused */
        pp_memory_layer_table(w, l, (pp_recompute)rc, &tb);
        c->layer_bytes[rc] = tb.bytes;
    }
    if (l->recompute != PP_RC_SELECTIVE) c->layer_bytes[PP_RC_SELECTIVE] = c->layer_bytes[PP_RC_NONE];
    double b = (double)l->mbs, s = (double)m->seq / (double)l->cp, sk = (double)m->seq;
    double h = (double)m->hidden, t = (double)l->tp, sb = s * b;
    double rep = l->sp ? 1.0 / t : 1.0;
    double aq = (double)m->heads / t, f = mem_ffn(m) / t;
    double V = mem_vocab(w, l);
    bool eager = mem_eager(w), unfused = w->attention == PP_ATTN_UNFUSED;
    bool mega = w->framework == PP_FW_MEGATRON;
    c->m = pp_layout_microbatches(w, l);
    if (c->m < 1) c->m = 1;

    /* Attention working set of one layer, in b (a/t) s^2 16-bit tensors on top of what is
     * stored. Forward: the scores live until the attention forward returns (1). Backward: the
     * softmax backward holds the gradients of the probabilities and of the scores (2) while the
     * saved probabilities are still alive; with dropout the bmm backward has already released the
     * dropped probabilities and the mask before (net 1). Measured: GPT (dropout) pipeline stage 0
     * +0.2% with 1, Llama (none) -1.7% with 1 and -0.6% with 2. */
    c->attn_work = unfused ? 2.0 * b * aq * s * sk * (mem_dropout(m) ? 1.0 : 2.0) : 0.0;
    /* MLP backward: gradient of the FC2 input and of the activation input, 16-bit. */
    c->mlp_work = 2.0 * sb * f * (m->act == PP_ACT_SWIGLU ? 3.0 : 2.0);
    if (m->experts > 1) c->mlp_work *= (double)(m->topk > 0 ? m->topk : 1);
    c->wgrad = eager ? 2.0 * c->par.largest_layer_weight : 0.0;
    /* Megatron's unfused attention takes its baddbmm input from a global buffer that stays
     * allocated (parallel_state.get_global_memory_buffer, "mpu"): b (a/t) s^2 16-bit. */
    c->workspace = MEM_WORKSPACE_BYTES + (unfused && mega ? 2.0 * b * aq * s * sk : 0.0);

    bool drop = mem_dropout(m);
    /* Batch tensors held per micro-batch: tokens, labels, position ids (int64), loss mask (fp32)
     * and Megatron's dataloader attention mask (b x s x s bool, on by default). */
    c->data = 36.0 * sb + (mega ? b * sk * sk : 0.0);
    /* Embedding: the int64 ids for its backward are in data; its dropout keeps a mask. */
    c->embed_act = drop ? sb * h * rep : 0.0;
    /* Final norm input + stats and the output layer input (16-bit). */
    c->head_act = 2.0 * sb * h * rep + 4.0 * sb * rep * (m->norm == PP_NORM_LAYERNORM ? 2 : 1) +
                  2.0 * sb * h * rep;
    /* Logits and loss. Megatron (vocab-parallel cross entropy, tensor_parallel/cross_entropy.py):
     * 16-bit logits plus their fp32 copy (.float()), which the loss turns into the softmax it
     * saves: 6 bytes x s b V/t at the loss; in the backward the fp32 gradient and its 16-bit
     * cast (6), then the 16-bit gradient with the output layer's 16-bit weight gradient (eager).
     * Hugging Face models (deepspeed/fsdp): 16-bit logits kept as output, fp32 upcast and the
     * fp32 log-softmax saved by the loss: 10 bytes. */
    double logits = sb * V / t;
    if (mega) {
        double wg = eager ? 2.0 * V * h / t : 0.0;
        c->loss_work = fmax(6.0 * logits, 2.0 * logits + wg);
    } else {
        c->loss_work = 10.0 * logits;
    }
    /* Optimizer step. torch.optim.AdamW with foreach (Megatron without TE/apex, FSDP) allocates
     * sqrt(v) for the whole parameter group at once (torch/optim/adam.py,
     * _multi_tensor_adam: torch._foreach_sqrt): 4 bytes per parameter it updates. Fused Adam
     * (TE, apex, DeepSpeed) has no such temporary. Offloaded optimizers step on the host. */
    bool foreach_adam = (mega && eager) || w->framework == PP_FW_FSDP;
    double opt_shard = 1.0;
    if ((mega && l->dist_opt) || (!mega && l->zero >= 1)) opt_shard = (double)shard;
    c->opt_work_per_param = (foreach_adam && l->offload == PP_OFF_NONE) ? 4.0 / opt_shard : 0.0;
    /* ZeRO-3 / FSDP FULL_SHARD: the layer being computed and the prefetched next one are
     * gathered in 16-bit, parameters and gradients: DeepSpeed's estimate uses
     * 4 x largest layer (formulas.md). */
    c->zero_gather = (!mega && l->zero >= 3) ? 4.0 * fmax(c->par.layer_total, c->par.embedding * t)
                                             : 0.0;
    /* Gradient reduction buffers. Megatron's DDP reduces in place in its contiguous fp32 grad
     * buffer (all-reduce; with the distributed optimizer a reduce-scatter into that buffer and an
     * all-gather into the bf16 parameter buffer, megatron/core/distributed/
     * param_and_grad_buffer.py): nothing allocated; NCCL's own staging buffers are in the
     * reserve. DeepSpeed ZeRO 1-3 copies gradients into a reduce bucket and gathers parameters
     * through an all-gather bucket. */
    c->ds_buckets = 0.0;
    if (w->framework == PP_FW_DEEPSPEED && l->zero >= 1) c->ds_buckets = 2.0 * MEM_DS_BUCKET_ELEMS * 2.0;

    /* Reserve beyond the allocator: context, driver, NCCL communicators in use. Megatron creates
     * a communicator per process group it uses: tensor-parallel; pipeline p2p + pipeline group
     * (+ the embedding group for tied weights); data-parallel + data/context-parallel; context;
     * expert. */
    int comms = 0;
    if (l->tp > 1) comms += 1;
    if (l->pp > 1) comms += 2 + (m->tied ? 1 : 0);
    if (l->dp * l->cp > 1) comms += 2;
    if (l->cp > 1) comms += 1;
    if (l->ep > 1) comms += 1;
    c->reserve_fixed = MEM_CONTEXT_BYTES + MEM_DRIVER_BYTES + comms * MEM_NCCL_COMM_BYTES;
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

static void mem_stage_eval(const pp_work *w, const pp_layout *l, const mem_ctx *c, int64_t stage,
                           int64_t layers, int64_t rc_layers, pp_mem_stage *o)
{
    memset(o, 0, sizeof *o);
    bool first = stage == 0, last = stage == l->pp - 1;
    const mem_params *p = &c->par;
    /* rc_layers is the exact count of fully recomputed layers (Megatron's block method); the
     * other layers follow the layout: selective, or nothing recomputed. */
    if (rc_layers > layers) rc_layers = layers;
    if (rc_layers < 0) rc_layers = 0;
    o->stage = stage;
    o->layers = layers;
    o->recompute_layers = rc_layers;

    /* Model state. */
    double dense = (double)layers * p->layer_dense + (first ? p->embedding : 0.0) +
                   (last ? p->head : 0.0);
    double expert = (double)layers * p->layer_expert;
    o->weights_bytes = dense * c->st.weights + expert * c->st_expert.weights;
    o->grads_bytes = dense * c->st.grads + expert * c->st_expert.grads;
    o->optimizer_bytes = dense * c->st.optimizer + expert * c->st_expert.optimizer;

    /* Stored activations. */
    double mbs_held;
    double chunks = mem_inflight_chunks(l, c->m, stage, &mbs_held);
    o->inflight = (int64_t)mbs_held;
    pp_recompute rc = l->recompute == PP_RC_SELECTIVE ? PP_RC_SELECTIVE : PP_RC_NONE;
    double per_mb = (double)(layers - rc_layers) * c->layer_bytes[rc] +
                    (double)rc_layers * c->layer_bytes[PP_RC_FULL];
    double stage_mb = (first || last ? c->data : 0.0) + (first ? c->embed_act : 0.0);
    /* The last stage runs forward then backward for one micro-batch at a time. */
    o->activations_bytes = chunks * per_mb + mbs_held * stage_mb + (last ? c->head_act : 0.0);

    /* Transient: the largest working set on top of the stored activations. */
    double work = c->attn_work + c->wgrad;
    work = fmax(work, c->mlp_work + c->wgrad);
    /* Recompute of one layer during its backward, then that layer's backward working set. */
    double recompute_set = rc_layers > 0 ? c->layer_bytes[rc] - c->layer_bytes[PP_RC_FULL] +
                                               fmax(c->attn_work, c->mlp_work) + c->wgrad
                                         : 0.0;
    work = fmax(work, recompute_set);
    if (l->recompute == PP_RC_SELECTIVE) /* attention core recomputed in the backward */
        work = fmax(work, c->layer_bytes[PP_RC_NONE] - c->layer_bytes[PP_RC_SELECTIVE] +
                              c->attn_work + c->wgrad);
    if (last) work = fmax(work, c->loss_work);
    work += c->zero_gather;
    /* The optimizer step runs with no activations held. */
    double opt = (dense + expert) * c->opt_work_per_param;
    double fixed = c->workspace + c->ds_buckets;
    o->transient_bytes = fixed + fmax(work, opt - o->activations_bytes);
    o->peak_bytes = o->weights_bytes + o->grads_bytes + o->optimizer_bytes + o->activations_bytes +
                    o->transient_bytes;
    double shortlived = o->activations_bytes + o->transient_bytes - c->workspace;
    o->reserved_bytes = c->reserve_fixed + MEM_SLACK_FRACTION * shortlived +
                        MEM_SLACK_RECOMPUTE_SETS * recompute_set;
    double cap = w->gpu.memory_bytes;
    o->fits = o->peak_bytes + o->reserved_bytes <= cap;
}

void pp_memory_stage(const pp_work *w, const pp_layout *l, int64_t stage, int64_t layers,
                     int64_t recompute_layers, pp_mem_stage *out)
{
    mem_ctx c;
    mem_ctx_init(w, l, &c);
    mem_stage_eval(w, l, &c, stage, layers, recompute_layers, out);
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
    /* Uniform split: stage 0 (most layers, most in flight, embedding) and the last stage
     * (loss) bound all others, whose terms are each no larger than stage 0's. Uneven splits
     * (ILP) are checked stage by stage. */
    int64_t n = l->pp;
    for (int64_t i = 0; i < n; i++) {
        if (!l->stage_layers && !l->stage_recompute && i > 0 && i < n - 1) continue;
        int64_t layers, rc;
        mem_stage_shape(w, l, i, &layers, &rc);
        pp_mem_stage s;
        mem_stage_eval(w, l, &c, i, layers, rc, &s);
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

/* Try one change of the layout; true when it validates and fits. */
static bool mem_variant_fits(const pp_work *w, pp_layout *v)
{
    pp_error e;
    v->stage_layers = NULL;
    v->stage_recompute = NULL;
    if (pp_layout_validate(w, v, &e) != PP_OK) return false;
    return pp_memory_worst_bytes(w, v, NULL) <= w->gpu.memory_bytes;
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

/* One line: why the worst stage does not fit and which single changes would make it fit. */
static void mem_explain(const pp_work *w, const pp_layout *l, const pp_mem_result *r, char *why,
                        size_t n)
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
    int fixes = 0;
#define MEM_FIX(...)                                                         \
    do {                                                                     \
        mem_append(why, n, "%s", fixes++ ? ", " : "; would fit with ");      \
        mem_append(why, n, __VA_ARGS__);                                     \
    } while (0)
    pp_layout v;
    if (l->recompute != PP_RC_SELECTIVE && l->recompute != PP_RC_FULL) {
        v = *l;
        v.recompute = PP_RC_SELECTIVE;
        if (mem_variant_fits(w, &v)) MEM_FIX("--recompute selective");
    }
    if (l->recompute != PP_RC_FULL || l->recompute_layers > 0) {
        v = *l;
        v.recompute = PP_RC_FULL;
        v.recompute_layers = 0;
        if (mem_variant_fits(w, &v)) MEM_FIX("--recompute full");
    }
    for (int64_t mb = l->mbs / 2; mb >= 1; mb /= 2) {
        v = *l;
        v.mbs = mb;
        if (mem_variant_fits(w, &v)) {
            MEM_FIX("--mbs %lld", (long long)mb);
            break;
        }
        if (mb == 1) break;
    }
    if (w->framework == PP_FW_MEGATRON && !l->dist_opt && l->dp * l->cp > 1) {
        v = *l;
        v.dist_opt = true;
        if (mem_variant_fits(w, &v)) MEM_FIX("--dist-opt");
    }
    if (w->framework != PP_FW_MEGATRON && l->zero < 3 && l->dp * l->cp > 1) {
        for (int z = l->zero + 1; z <= 3; z++) {
            v = *l;
            v.zero = z;
            if (mem_variant_fits(w, &v)) {
                MEM_FIX("--zero %d", z);
                break;
            }
        }
    }
    for (int64_t f = 2; f <= 8; f *= 2) {
        v = *l;
        v.tp = l->tp * f;
        v.dp = 0;
        if (mem_variant_fits(w, &v)) {
            MEM_FIX("--tp %lld", (long long)v.tp);
            break;
        }
    }
    for (int64_t f = 2; f <= 16; f *= 2) {
        v = *l;
        v.pp = l->pp * f;
        v.dp = 0;
        v.vpp = 1;
        if (mem_variant_fits(w, &v)) {
            MEM_FIX("--pp %lld", (long long)v.pp);
            break;
        }
    }
#undef MEM_FIX
    if (!fixes)
        mem_append(why, n, "; no single change of recompute, micro-batch, optimizer sharding, TP or "
                           "PP makes it fit: more GPUs");
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
    for (int64_t i = 0; i < l->pp; i++) {
        int64_t layers, rc;
        mem_stage_shape(w, l, i, &layers, &rc);
        pp_mem_stage *s = &out->stages[i];
        mem_stage_eval(w, l, &c, i, layers, rc, s);
        if (s->peak_bytes > out->peak_bytes) out->peak_bytes = s->peak_bytes;
        if (s->peak_bytes + s->reserved_bytes > worst) {
            worst = s->peak_bytes + s->reserved_bytes;
            out->largest_stage = i;
        }
        if (!s->fits) out->fits = false;
    }
    if (!out->fits) mem_explain(w, l, out, out->why, sizeof out->why);
    return PP_OK;
}
