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

#include "memory_fsdp.h"

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

/* Dropout as the stack says (pp_work_dropout: the flags, else the model's file, else the rule for
 * files that say nothing). Attention dropout keeps a mask and a copy of the probabilities (unfused
 * attention); hidden dropout keeps a mask after each bias-dropout-add and the embedding. */
static void mem_dropout_get(const pp_work *w, bool *attn, bool *hidden)
{
    double a, h;
    pp_work_dropout(w, &a, &h);
    *attn = a > 0;
    *hidden = h > 0;
}

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

/* Eager PyTorch ops (Megatron's local modules, HF models under DeepSpeed/FSDP) against
 * TransformerEngine's fused kernels. */
static bool mem_eager(const pp_work *w)
{
    return w->framework != PP_FW_MEGATRON || pp_work_impl(w) == PP_IMPL_LOCAL;
}

/* KV heads on one TP rank: Megatron replicates KV heads when tp exceeds them. */
static double mem_kv_heads_rank(const pp_model *m, int64_t tp)
{
    return m->kv_heads >= tp ? (double)m->kv_heads / (double)tp : 1.0;
}

/* Tokens one rank's routed experts process per micro-batch, for T tokens of its sequence shard
 * (T = b s / cp): every token goes to topk experts; with TP the tokens are sequence-parallel
 * (T / tp per rank) and an expert-TP group of etp ranks works on the same tokens (Megatron's
 * alltoall dispatcher gathers them over the expert-TP group, token_dispatcher.py), so a rank
 * receives T k etp / tp copies on average. A dropless router with EP > 1 gives some ranks more:
 * `imbalance` x the mean; a capacity factor caps each expert at cf x its mean share. */
static double mem_moe_tokens(const pp_work *w, const pp_layout *l, double T)
{
    const pp_model *m = &w->model;
    double k = (double)(m->topk > 0 ? m->topk : 1);
    double tokens = T * k * (double)pp_layout_etp(l) / (double)l->tp;
    double imb = l->ep > 1 ? w->stack.moe_imbalance : 1.0;
    if (imb < 1.0) imb = 1.0;
    if (w->stack.moe_capacity_factor > 0) imb = w->stack.moe_capacity_factor;
    return tokens * imb;
}

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

static void mem_params_get(const pp_work *w, const pp_layout *l, mem_params *p)
{
    const pp_model *m = &w->model;
    double h = (double)m->hidden, t = (double)l->tp, d = (double)m->head_dim;
    double aq = (double)m->heads / t, gk = mem_kv_heads_rank(m, l->tp), f = (double)m->ffn;
    double V = mem_vocab(w, l);
    double norm = m->norm == PP_NORM_LAYERNORM ? 2.0 : 1.0; /* weight (+ bias) */
    double norms_half = (double)(m->norms_per_layer > 2 ? m->norms_per_layer : 2) / 2.0;
    double gate = m->act == PP_ACT_SWIGLU ? 2.0 : 1.0;
    double mb = (m->mlp_bias || m->bias) ? 1.0 : 0.0;
    /* Per-tensor table of one layer on one rank: column-parallel (QKV, FC1) weights and biases and
     * row-parallel (proj, FC2) weights are split by TP; row-parallel biases and norms are
     * replicated (megatron/core/tensor_parallel/layers.py). */
    double attn_w;
    if (m->kv_lora_rank > 0) {
        /* MLA (megatron/core/transformer/multi_latent_attention.py): the down-projections
         * (h -> q_lora, h -> kv_lora + rope) and their norms are replicated over TP (linear_q_down
         * and linear_kv_down are not split); the up-projections are column-parallel, the output
         * projection row-parallel. */
        double nope = (double)m->qk_nope_dim, rope = (double)m->qk_rope_dim, vd = (double)m->v_head_dim;
        double ql = (double)m->q_lora_rank, kvl = (double)m->kv_lora_rank;
        double q = ql > 0 ? h * ql + ql + ql * aq * (nope + rope) : h * aq * (nope + rope);
        attn_w = q + h * (kvl + rope) + kvl + kvl * aq * (nope + vd) + aq * vd * h;
        p->largest_layer_weight = fmax(fmax(ql * aq * (nope + rope), kvl * aq * (nope + vd)), aq * vd * h);
    } else {
        double qkv_w = h * (aq + 2 * gk) * d, proj_w = aq * d * h;
        attn_w = qkv_w + ((m->qkv_bias || m->bias) ? (aq + 2 * gk) * d : 0.0) + proj_w;
        p->largest_layer_weight = fmax(qkv_w, proj_w);
    }
    if (m->out_bias || m->bias) attn_w += h;
    if (m->qk_norm == PP_QKNORM_HEAD) attn_w += 2 * d;
    if (m->qk_norm == PP_QKNORM_FULL) attn_w += (aq + gk) * d;
    if (m->attn_sinks) attn_w += aq;
    p->attn = attn_w + norms_half * norm * h;
    /* A gated or plain MLP of inner size ff split `split` ways. */
#define MLP_W(ff, split) (h * gate * (ff) / (split) + mb * gate * (ff) / (split) + (ff) / (split) * h + mb * h)
    p->dense_mlp = MLP_W(f, t) + norms_half * norm * h;
    p->largest_layer_weight = fmax(p->largest_layer_weight, h * gate * f / t);
    p->moe_dense = p->moe_expert = 0;
    double expert_total = 0;
    if (m->experts > 1) {
        /* Routed experts: experts / ep per rank, each split by the expert TP; router h x E
         * replicated; shared experts one dense MLP of shared_ffn split by TP
         * (megatron/core/transformer/moe/shared_experts.py). */
        double fe = (double)pp_model_expert_ffn(m), etp = (double)pp_layout_etp(l);
        double E = (double)m->experts;
        double shared = m->shared_ffn > 0 ? MLP_W((double)m->shared_ffn, t) + (m->shared_gate ? h : 0) : 0.0;
        p->moe_dense = norms_half * norm * h + h * E + (m->router_bias ? E : 0.0) + shared;
        p->moe_expert = E / (double)l->ep * MLP_W(fe, etp);
        expert_total = E * MLP_W(fe, 1.0);
        p->largest_layer_weight = fmax(p->largest_layer_weight, h * gate * fe / etp);
    }
#undef MLP_W
    double word = V * h / t;
    double pos = m->pos == PP_POS_LEARNED ? (double)m->seq * h : 0.0;
    p->embedding = word + pos;
    /* Untied: own output layer. Tied with pp > 1: Megatron keeps a copy of the word embedding on
     * the last stage (megatron/core/models/common/language_module). Tied with pp = 1: shared. */
    double out = (!m->tied || l->pp > 1) ? word : 0.0;
    p->head = norm * h + out;
    p->mtp_extra = m->mtp_layers > 0 ? 3.0 * norm * h + 2.0 * h * h / t : 0.0;
    double dense_total = (p->attn + fmax(p->dense_mlp, p->moe_dense)) * t;
    p->layer_total = fmax(dense_total + expert_total, word * t); /* close enough for ZeRO-3 gathers */
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

/* The MLP block of a layer: a dense gated/plain MLP of inner size f_r per rank on `tokens`
 * tokens, as Megatron's MLP saves it (megatron/core/transformer/mlp.py). `prefix` names the rows;
 * `scaled`: the experts' output is multiplied by the router probabilities inside the MLP
 * (per_token_scale), which in the eager path keeps the activation's output for that product. */
static void act_mlp(pp_act_table *tb, const pp_model *m, bool eager, double tokens, double f_r,
                    double lin_bytes, bool scaled, bool act_recomputed, const char *const names[5])
{
    if (act_recomputed) {
        /* Selective recompute of the activation (Megatron's moe_act): only its input, the fc1
         * output, is kept; the rest is recomputed in the backward. */
        act_add(tb, names[0], tokens * (m->act == PP_ACT_SWIGLU ? 2 : 1) * f_r, 2, true);
        return;
    }
    if (m->act == PP_ACT_SWIGLU) {
        /* fc1 output holds gate and linear halves (2f). Fused SwiGLU (TE / bias_swiglu_impl)
         * saves only that; Megatron's eager glu() also keeps silu(gate) and the copy made by
         * `x_linear + glu_linear_offset` (megatron/core/transformer/mlp.py), both saved by the
         * product. */
        act_add(tb, names[0], tokens * 2 * f_r, 2, true);
        if (eager) {
            act_add(tb, names[1], tokens * f_r, 2, true);
            act_add(tb, names[2], tokens * f_r, 2, true);
        }
    } else {
        act_add(tb, names[0], tokens * f_r, 2, true); /* GeLU input: 8sbh for f = 4h */
    }
    if (scaled && eager) act_add(tb, names[3], tokens * f_r, 2, false);
    act_add(tb, names[4], tokens * f_r, lin_bytes, true);
}

void pp_memory_layer_table_kind(const pp_work *w, const pp_layout *l, int kind, pp_recompute rc,
                                pp_act_table *tb)
{
    const pp_model *m = &w->model;
    tb->n = 0; /* no memset: the search builds these tables for every candidate */
    tb->bytes = tb->paper_bytes = 0;
    double b = (double)l->mbs, s = (double)m->seq / (double)l->cp, sk = (double)m->seq;
    double h = (double)m->hidden, t = (double)l->tp, d = (double)m->head_dim;
    double aq = (double)m->heads / t, gk = mem_kv_heads_rank(m, l->tp), f = (double)m->ffn / t;
    double sb = s * b;
    /* Tensors outside the TP region (norm inputs, linear inputs, dropout masks) are replicated
     * on every TP rank, or split by t under sequence parallelism (Korthikanti sec. 4.2.2). */
    double rep = l->sp ? 1.0 / t : 1.0;
    bool eager = mem_eager(w), adrop, hdrop;
    mem_dropout_get(w, &adrop, &hdrop);
    bool unfused = w->attention == PP_ATTN_UNFUSED;
    bool moe = (kind & PP_LAYER_MOE) && m->experts > 1;
    double stats = m->norm == PP_NORM_LAYERNORM ? 2.0 : 1.0; /* mean + rstd, or rstd (fp32) */
    /* Selective recompute: what its modules recompute is not stored (their inputs are). */
    unsigned mods = rc != PP_RC_SELECTIVE ? 0
                    : l->recompute_modules ? l->recompute_modules : 1u << PP_RCM_CORE_ATTN;
    bool rc_core = mods & (1u << PP_RCM_CORE_ATTN), rc_norm = mods & (1u << PP_RCM_LAYERNORM);
    bool rc_up = mods & (1u << PP_RCM_MLA_UP_PROJ), rc_act = mods & (1u << PP_RCM_MOE_ACT);
    bool rc_mlp = mods & (1u << PP_RCM_MLP), rc_moe = mods & (1u << PP_RCM_MOE);
    bool rc_shared = mods & (1u << PP_RCM_SHARED_EXPERTS);
    /* Megatron recomputes a norm only where it is a module of its own (transformer_layer.py: not
     * an IdentityOp; pp_work_norm_modules). */
    bool norm_in, norm_mlp;
    pp_work_norm_modules(w, moe, &norm_in, &norm_mlp);
    bool rc_norm_in = rc_norm && norm_in, rc_norm_mlp = rc_norm && norm_mlp;
    /* FP8 (TransformerEngine): the inputs of the FP8 GEMMs are saved cast to 8 bits for the
     * weight gradient (te/pytorch/module/linear.py saves the quantized input); norms, attention
     * and the activation functions keep 16-bit tensors. */
    double lin = w->stack.precision == PP_PREC_FP8 ? 1.0 : 2.0;

    if (rc == PP_RC_FULL) {
        /* Full recompute keeps only the layer input (checkpoint), Korthikanti table 2: 2sbh. */
        act_add(tb, "layer.input", sb * h * rep, 2, true);
        return;
    }
    act_add(tb, "ln1.input", sb * h * rep, 2, true);
    act_add(tb, "ln1.stats", sb * rep * stats, 4, false);
    if (m->kv_lora_rank > 0) {
        /* MLA (Megatron MLASelfAttention): the down-projections see the full hidden state; their
         * outputs are normalised and up-projected per TP rank. Saved: the shared input, the
         * latents (norm inputs) and normalised latents (up-projection inputs), q and k with the
         * RoPE part appended per head, v, and the output. */
        double ql = (double)m->q_lora_rank, kvl = (double)m->kv_lora_rank;
        double rope = (double)m->qk_rope_dim, vd = (double)m->v_head_dim;
        if (!rc_norm_in) act_add(tb, "mla.input", sb * h * rep, lin, true);
        if (ql > 0) {
            act_add(tb, "mla.q_latent", sb * ql, 2, false);
            act_add(tb, "mla.q_latent_norm", sb * ql, lin, false);
        }
        act_add(tb, "mla.kv_latent", sb * (kvl + rope), 2, false);
        act_add(tb, "mla.kv_latent_norm", sb * kvl, lin, false);
        if (!rc_up) {
            act_add(tb, "attn.q", sb * aq * d, 2, true);
            act_add(tb, "attn.k", sb * aq * d, 2, true);
            act_add(tb, "attn.v", sb * aq * vd, 2, true);
        }
        if (unfused) {
            if (!rc_core) {
                double ss = b * aq * s * sk;
                act_add(tb, "attn.softmax", ss, 2, true);
                if (adrop) {
                    act_add(tb, "attn.dropout_mask", ss, 1, true);
                    act_add(tb, "attn.dropout_out", ss, 2, true);
                }
            }
        } else {
            act_add(tb, "attn.lse", b * aq * s, 4, false);
        }
        act_add(tb, "proj.input", sb * aq * vd, lin, true);
    } else {
        if (!rc_norm_in) act_add(tb, "qkv.input", sb * h * rep, lin, true);
        /* Q, K, V as the attention kernel saves them. */
        if (unfused) {
            /* Megatron DotProductAttention: the QKV output [s,b,g,(a/g+2)d] is split into views.
             * Q is a new tensor when RoPE rotates it or when grouped heads force a copy in the
             * reshape; K and V are new when GQA repeats them (repeat_interleave) or, for K, RoPE
             * rotates it. baddbmm saves Q and K, bmm saves V; any saved view keeps the whole QKV
             * output alive, and so does QK-norm, which saves the q and k views it normalises. */
            bool rope = m->pos == PP_POS_ROPE, grouped = aq != gk;
            bool q_new = rope || (grouped && gk > 1), k_new = grouped || rope, v_new = grouped;
            act_add(tb, "attn.q", q_new ? sb * aq * d : 0, 2, true);
            act_add(tb, "attn.k", k_new ? sb * (grouped ? aq : gk) * d : 0, 2, true);
            act_add(tb, "attn.v", v_new ? sb * aq * d : 0, 2, true);
            if (!q_new || !k_new || !v_new || m->qk_norm != PP_QKNORM_NONE)
                act_add(tb, "attn.qkv_out", sb * (aq + 2 * gk) * d, 2, true);
            if (!rc_core) {
                /* Scores -> masked_fill_ (in place) -> softmax (saves its output) -> dropout (mask,
                 * 1 byte) -> bmm (saves the dropped probabilities). 5 as^2 b in the paper. */
                double ss = b * aq * s * sk;
                act_add(tb, "attn.softmax", ss, 2, true);
                if (adrop) {
                    act_add(tb, "attn.dropout_mask", ss, 1, true);
                    act_add(tb, "attn.dropout_out", ss, 2, true);
                }
            }
        } else {
            /* Flash attention (TE): saves q, k, v at their own head counts, the output (also the
             * projection input, below) and the fp32 log-sum-exp per row; no s^2 tensor. With
             * QK-norm the normalised q and k are what it saves; the norms keep their inputs. */
            act_add(tb, "attn.q", sb * aq * d, 2, true);
            act_add(tb, "attn.k", sb * gk * d, 2, true);
            act_add(tb, "attn.v", sb * gk * d, 2, true);
            act_add(tb, "attn.lse", b * aq * s, 4, false);
            if (m->qk_norm != PP_QKNORM_NONE) act_add(tb, "attn.qk_norm_input", sb * (aq + gk) * d, 2, false);
        }
        if (m->qk_norm != PP_QKNORM_NONE) act_add(tb, "attn.qk_norm_stats", sb * (aq + gk), 4, false);
        act_add(tb, "proj.input", sb * aq * d, lin, true);
    }
    if (hdrop) act_add(tb, "attn.bda_mask", sb * h * rep, 1, true);
    act_add(tb, "ln2.input", sb * h * rep, 2, true);
    act_add(tb, "ln2.stats", sb * rep * stats, 4, false);
    if (!rc_norm_mlp) act_add(tb, "fc1.input", sb * h * rep, lin, true); /* the router's input too (MoE) */

    if (!moe) {
        static const char *const dn[5] = {"mlp.fc1_out", "mlp.silu_out", "mlp.linear_offset", "",
                                          "fc2.input"};
        if (!rc_mlp) act_mlp(tb, m, eager, sb, f, lin, false, false, dn);
    } else if (!rc_moe) {
        /* MoE (megatron/core/transformer/moe): router logits (16-bit) and their fp32 softmax
         * over the experts for the local tokens; the permuted token copies each rank's experts
         * receive (the experts' fc1 input, views of one tensor); per received token the expert
         * MLP's tensors at f/etp, the router probability it is scaled by (fp32), and the int64
         * indices that undo the permutation; shared experts run as a dense MLP on every token. */
        double E = (double)m->experts, k = (double)(m->topk > 0 ? m->topk : 1);
        double Tl = sb * rep;                 /* tokens routed on this rank */
        double Tr = mem_moe_tokens(w, l, sb); /* token copies its experts receive */
        double fe = (double)pp_model_expert_ffn(m) / (double)pp_layout_etp(l);
        act_add(tb, "moe.router_logits", Tl * E, 2, false);
        act_add(tb, "moe.router_probs", Tl * E, 4, false);
        act_add(tb, "moe.permute_index", Tl * k, 8, false);
        act_add(tb, "moe.expert_input", Tr * h, lin, false);
        act_add(tb, "moe.token_probs", Tr, 4, false);
        static const char *const en[5] = {"moe.fc1_out", "moe.silu_out", "moe.linear_offset",
                                          "moe.act_out", "moe.fc2_input"};
        act_mlp(tb, m, eager, Tr, fe, lin, true, rc_act, en);
        if (m->shared_ffn > 0 && !rc_shared) {
            static const char *const sn[5] = {"shared.fc1_out", "shared.silu_out",
                                              "shared.linear_offset", "", "shared.fc2_input"};
            act_mlp(tb, m, eager, sb, (double)m->shared_ffn / t, lin, false, false, sn);
            if (m->shared_gate) act_add(tb, "shared.gate", Tl, 2, false);
        }
    }
    if (hdrop) act_add(tb, "mlp.bda_mask", sb * h * rep, 1, true);
}

/* The table of the model's most common layer: its MoE layer for an MoE model. */
void pp_memory_layer_table(const pp_work *w, const pp_layout *l, pp_recompute rc, pp_act_table *tb)
{
    int kind = w->model.experts > 1 ? PP_LAYER_MOE : 0;
    if (pp_model_layer_is_window(&w->model, w->model.layers - 1)) kind |= PP_LAYER_WINDOW;
    pp_memory_layer_table_kind(w, l, kind, rc, tb);
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
    double attn_work;   /* working set of one layer's attention (scores / their gradients) */
    double mlp_work[2]; /* working set of one layer's MLP backward: [moe] */
    double wgrad;       /* eager: 16-bit weight gradient before it is added to main_grad */
    double workspace;   /* persistent: cuBLAS, attention input buffer */
    double fp8_weight_per_param; /* FP8: cached 8-bit weight copies per layer parameter */
    double embed_act;   /* first stage, per micro-batch */
    double data;        /* batch tensors per micro-batch (first and last stage) */
    double head_act;    /* last stage, per micro-batch: final norm and output layer inputs */
    double loss_work;   /* last stage: logits and loss working set */
    double mtp_act;     /* last stage, per micro-batch: the MTP layers' extra saved tensors */
    double opt_work_per_param; /* optimizer-step temporaries per parameter on the rank */
    double zero_gather; /* ZeRO-3 / FSDP gathered parameters of the layers in flight */
    double ds_buckets;  /* DeepSpeed reduce / all-gather buckets */
    double reserve_fixed;
    int64_t m;          /* micro-batches per step per replica */
    pp_fsdp_ctx fsdp;   /* --framework fsdp: FSDP2's own model (memory_fsdp.c) */
} mem_ctx;

static void mem_ctx_init(const pp_work *w, const pp_layout *l, mem_ctx *c)
{
    const pp_model *m = &w->model;
    if (w->framework == PP_FW_FSDP) {
        /* FSDP2 holds different things at different moments of the step: memory_fsdp.c. */
        c->m = pp_layout_microbatches(w, l);
        if (c->m < 1) c->m = 1;
        pp_fsdp_ctx_init(w, l, &c->fsdp);
        return;
    }
    mem_params_get(w, l, &c->par);
    int64_t shard = l->dp * l->cp;
    pp_memory_state_per_param(w->framework, l->zero, l->dist_opt, l->offload, shard, &c->st);
    int64_t eshard = pp_layout_edp(l);
    pp_memory_state_per_param(w->framework, l->zero, l->dist_opt, l->offload,
                              eshard > 0 ? eshard : 1, &c->st_expert);
    /* Megatron's gradient buffer has the parameters' dtype with --fp16 and with
     * --grad-reduce-in-bf16 (param_and_grad_buffer.py: grad_dtype = param.dtype unless
     * grad_reduce_in_fp32): 2 bytes, not the fp32 main_grad's 4. */
    if (w->framework == PP_FW_MEGATRON &&
        (w->stack.precision == PP_PREC_FP16 || w->stack.grad_bf16))
        c->st.grads = c->st_expert.grads = 2.0;
    pp_act_table tb;
    int nk = m->experts > 1 ? 2 : 1;
    for (int moe = 0; moe < nk; moe++)
        for (int rc = 0; rc < PP_RC_COUNT; rc++) {
            if (rc == PP_RC_SELECTIVE && l->recompute != PP_RC_SELECTIVE) continue; /* unused */
            pp_memory_layer_table_kind(w, l, moe ? PP_LAYER_MOE : 0, (pp_recompute)rc, &tb);
            c->layer_bytes[moe][rc] = tb.bytes;
        }
    for (int moe = 0; moe < 2; moe++) {
        if (moe >= nk) memcpy(c->layer_bytes[moe], c->layer_bytes[0], sizeof c->layer_bytes[0]);
        if (l->recompute != PP_RC_SELECTIVE)
            c->layer_bytes[moe][PP_RC_SELECTIVE] = c->layer_bytes[moe][PP_RC_NONE];
    }
    double b = (double)l->mbs, s = (double)m->seq / (double)l->cp, sk = (double)m->seq;
    double h = (double)m->hidden, t = (double)l->tp, sb = s * b;
    double rep = l->sp ? 1.0 / t : 1.0;
    double aq = (double)m->heads / t, f = (double)m->ffn / t;
    double V = mem_vocab(w, l);
    bool eager = mem_eager(w), unfused = w->attention == PP_ATTN_UNFUSED;
    bool mega = w->framework == PP_FW_MEGATRON;
    bool adrop, hdrop;
    mem_dropout_get(w, &adrop, &hdrop);
    c->m = pp_layout_microbatches(w, l);
    if (c->m < 1) c->m = 1;

    /* Attention working set of one layer, in b (a/t) s^2 16-bit tensors on top of what is
     * stored. Forward: the scores live until the attention forward returns (1). Backward: the
     * softmax backward holds the gradients of the probabilities and of the scores (2) while the
     * saved probabilities are still alive; with dropout the bmm backward has already released the
     * dropped probabilities and the mask before (net 1). Measured: GPT (dropout) pipeline stage 0
     * +0.2% with 1, Llama (none) -1.7% with 1 and -0.6% with 2. */
    c->attn_work = unfused ? 2.0 * b * aq * s * sk * (adrop ? 1.0 : 2.0) : 0.0;
    /* MLP backward: gradient of the FC2 input and of the activation input, 16-bit. MoE: the
     * same per received token copy at the expert width, and the gradient of the received tokens
     * (the all-to-all / permutation backward). */
    double glu = m->act == PP_ACT_SWIGLU ? 3.0 : 2.0;
    c->mlp_work[0] = 2.0 * sb * f * glu;
    c->mlp_work[1] = c->mlp_work[0];
    if (m->experts > 1) {
        double Tr = mem_moe_tokens(w, l, sb);
        double fe = (double)pp_model_expert_ffn(m) / (double)pp_layout_etp(l);
        c->mlp_work[1] = 2.0 * Tr * fe * glu + 2.0 * 2.0 * Tr * h;
    }
    c->wgrad = eager ? 2.0 * c->par.largest_layer_weight : 0.0;
    /* Megatron's unfused attention takes its baddbmm input from a global buffer that stays
     * allocated (parallel_state.get_global_memory_buffer, "mpu"): b (a/t) s^2 16-bit. */
    c->workspace = MEM_WORKSPACE_BYTES + (unfused && mega ? 2.0 * b * aq * s * sk : 0.0);
    /* FP8 (TransformerEngine): every FP8 linear layer caches its weight cast to 8 bits, row-wise
     * for the forward and column-wise (transposed) for the data-gradient GEMM on Hopper, across
     * the micro-batches of a step (te/pytorch/module/base.py, the FP8 weight workspace). */
    c->fp8_weight_per_param = w->stack.precision == PP_PREC_FP8 ? 2.0 : 0.0;

    /* Batch tensors held per micro-batch: tokens, labels, position ids (int64), loss mask (fp32)
     * and Megatron's dataloader attention mask (b x s x s bool, on by default). */
    c->data = 36.0 * sb + (mega ? b * sk * sk : 0.0);
    /* Embedding: the int64 ids for its backward are in data; its dropout keeps a mask. */
    c->embed_act = hdrop ? sb * h * rep : 0.0;
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
    /* MTP (DeepSeek-V3 sec. 2.2; megatron/core/transformer/multi_token_prediction.py): each MTP
     * layer keeps its transformer layer's tensors, the two normalised inputs and the projection
     * input (2h wide), and its own loss's saved fp32 softmax until the backward. Not measured
     * (MTP needs TransformerEngine on the lent machines). */
    c->mtp_act = 0;
    if (m->mtp_layers > 0) {
        int mk = pp_model_mtp_kind(m) & PP_LAYER_MOE ? 1 : 0;
        c->mtp_act = (double)m->mtp_layers *
                     (c->layer_bytes[mk][PP_RC_NONE] + 2.0 * sb * h * rep * 4.0 + 4.0 * logits);
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
    c->zero_gather = (!mega && l->zero >= 3) ? 4.0 * c->par.layer_total : 0.0;
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

/* A stage holding layers [first, first + layers) of which the first rc_layers are fully
 * recomputed (Megatron's block method recomputes the first K layers of a stage). */
static void mem_stage_eval(const pp_work *w, const pp_layout *l, const mem_ctx *c, int64_t stage,
                           int64_t first, int64_t layers, int64_t rc_layers, pp_mem_stage *o)
{
    memset(o, 0, sizeof *o);
    const pp_model *m = &w->model;
    bool first_stage = stage == 0, last = stage == l->pp - 1;
    const mem_params *p = &c->par;
    /* rc_layers is the exact count of fully recomputed layers (Megatron's block method); the
     * other layers follow the layout: selective, or nothing recomputed. */
    if (rc_layers > layers) rc_layers = layers;
    if (rc_layers < 0) rc_layers = 0;
    o->stage = stage;
    o->layers = layers;
    o->recompute_layers = rc_layers;
    int64_t n_rc[PP_LAYER_KINDS], n_all[PP_LAYER_KINDS];
    pp_model_layer_counts(m, first, rc_layers, n_rc);
    pp_model_layer_counts(m, first, layers, n_all);
    int64_t mtp = last ? m->mtp_layers : 0;
    int mtp_kind = pp_model_mtp_kind(m);
    if (w->framework == PP_FW_FSDP) {
        double fsdp_mbs;
        double fsdp_chunks = mem_inflight_chunks(l, c->m, stage, &fsdp_mbs);
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
            recompute_set = fmax(recompute_set, c->layer_bytes[moe][rc] - c->layer_bytes[moe][PP_RC_FULL] +
                                                    fmax(c->attn_work, c->mlp_work[moe]) + c->wgrad);
    }
    dense += (double)mtp * p->mtp_extra;
    o->weights_bytes = dense * c->st.weights + expert * c->st_expert.weights +
                       (dense + expert - (first_stage ? p->embedding : 0.0) - (last ? p->head : 0.0)) *
                           c->fp8_weight_per_param;
    o->grads_bytes = dense * c->st.grads + expert * c->st_expert.grads;
    o->optimizer_bytes = dense * c->st.optimizer + expert * c->st_expert.optimizer;

    /* Stored activations. */
    double mbs_held;
    double chunks = mem_inflight_chunks(l, c->m, stage, &mbs_held);
    o->inflight = (int64_t)mbs_held;
    double stage_mb = (first_stage || last ? c->data : 0.0) + (first_stage ? c->embed_act : 0.0) +
                      (last ? c->mtp_act : 0.0);
    /* The last stage runs forward then backward for one micro-batch at a time. */
    o->activations_bytes = chunks * per_mb + mbs_held * stage_mb + (last ? c->head_act : 0.0);

    /* Transient: the largest working set on top of the stored activations. */
    bool has_moe = n_all[PP_LAYER_MOE] + n_all[PP_LAYER_MOE | PP_LAYER_WINDOW] > 0 ||
                   (mtp > 0 && (mtp_kind & PP_LAYER_MOE));
    double mlp_work = has_moe ? c->mlp_work[1] : c->mlp_work[0];
    if (n_all[0] + n_all[PP_LAYER_WINDOW] > 0) mlp_work = fmax(mlp_work, c->mlp_work[0]);
    double work = c->attn_work + c->wgrad;
    work = fmax(work, mlp_work + c->wgrad);
    /* Recompute of one layer during its backward, then that layer's backward working set. */
    work = fmax(work, recompute_set);
    if (l->recompute == PP_RC_SELECTIVE) { /* attention core recomputed in the backward */
        int moe = has_moe ? 1 : 0;
        work = fmax(work, c->layer_bytes[moe][PP_RC_NONE] - c->layer_bytes[moe][PP_RC_SELECTIVE] +
                              c->attn_work + c->wgrad);
    }
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

/* Whether every stage's layers are of one kind (dense models; MoE models with every layer MoE
 * and no windows): then stage 0 and the last stage bound the others under a uniform split. */
static bool mem_uniform_kinds(const pp_model *m)
{
    if (m->window > 0 && m->window_full_every > 0) return false;
    if (m->experts <= 1) return true;
    return m->moe_first_dense == 0 && m->moe_every <= 1 && m->n_dense_layers == 0;
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
    bool uniform = !l->stage_layers && !l->stage_recompute;
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
        mem_stage_eval(w, l, &c, i, pp_layout_stage_first_layer(w, l, i), layers, rc, s);
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
