/* launch --format megatron, torchrun and slurm: the Megatron-LM argument list and the scripts that
 * run pretrain_gpt.py with it - plain torchrun, a torchrun c10d rendezvous run once per node, an
 * sbatch script (srun, one torchrun per node) - and pp_launch_megatron_args (pp_launch.h).
 *
 * Sources for the flag semantics (all checked against the Megatron-LM snapshot whose parser's
 * option list is tests/data/megatron_flags.txt):
 *  - megatron/training/arguments.py validate_args(): --num-layers must divide by pp unless a
 *    --pipeline-model-parallel-layout is given; --num-layers-per-virtual-pipeline-stage for the
 *    interleaved schedule; --overlap-param-gather needs --use-distributed-optimizer and
 *    --overlap-grad-reduce; --recompute-granularity selective takes no method; TP or CP on
 *    pre-Blackwell GPUs needs CUDA_DEVICE_MAX_CONNECTIONS=1; --optimizer-cpu-offload needs
 *    --use-precision-aware-optimizer.
 *  - megatron/core/transformer/pipeline_parallel_layer_layout.py: the layout string (written
 *    and read by pipeline_layout.c), and transformer_config.py / transformer_block.py for the
 *    --decoder-first/last-pipeline-num-layers and --account-for-*-in-pipeline-split splits that
 *    are written instead where they give the same split.
 *  - megatron/core/transformer/transformer_config.py: recompute_method block recomputes the
 *    first recompute_num_layers layers of each pipeline stage (each model chunk under vpp),
 *    uniform with 1 checkpoints every layer.
 *  - megatron/core/transformer/torch_norm.py: the torch LayerNorm/RMSNorm used without TE/apex
 *    asserts not sequence_parallel; dot_product_attention.py (local) asserts cp == 1. */
#include "launch_common.h"
#include "pp_layer.h"
#include "pp_pipeline.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD(...) pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, __VA_ARGS__)

/* ------------------------------------------------------------------ Megatron arguments */

enum {
    G_MODEL, G_PARALLEL, G_BATCH, G_MEMORY, G_PRECISION, G_DATA, G_TRAINING, G_CHECKPOINT,
    G_LOGGING, G_LOCAL, G_COUNT
};
static const char *const group_names[G_COUNT] = {
    "MODEL_ARGS", "PARALLEL_ARGS", "BATCH_ARGS", "MEMORY_ARGS", "PRECISION_ARGS", "DATA_ARGS",
    "TRAINING_ARGS", "CHECKPOINT_ARGS", "LOGGING_ARGS", "LOCAL_ARGS",
};
static const char *const group_titles[G_COUNT] = {
    "model shape",
    "parallel layout",
    "batch",
    "optimizer sharding, activation recompute, offload",
    "precision and communication overlap",
    "data and tokenizer",
    "optimizer and schedule (hyper-parameters: change freely)",
    "checkpoints",
    "logging",
    "Megatron-LM without Transformer Engine or apex (--launch-target device-local): only the switches\n"
    "# without which it cannot start there (persistent layer norm and gradient-accumulation fusion need\n"
    "# apex or TE, the masked-softmax and RoPE fusions their compiled kernels); every other default stays",
};

#define MG_MAX_ARGS 128
#define MG_MAX_NOTES 20

typedef struct {
    int group;
    char flag[64];
    char value[1100]; /* "" for a switch */
    bool raw;         /* value is a shell expression written as is (already quoted) */
} mg_arg;

typedef struct {
    mg_arg a[MG_MAX_ARGS];
    int n;
    char notes[MG_MAX_NOTES][400];
    int nnotes;
    bool overflow;
} mg_list;

static void mg_add(mg_list *g, int group, const char *flag, bool raw, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void mg_add(mg_list *g, int group, const char *flag, bool raw, const char *fmt, ...)
{
    if (g->n >= MG_MAX_ARGS) {
        g->overflow = true;
        return;
    }
    mg_arg *a = &g->a[g->n++];
    a->group = group;
    a->raw = raw;
    snprintf(a->flag, sizeof a->flag, "%s", flag);
    a->value[0] = 0;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(a->value, sizeof a->value, fmt, ap);
        va_end(ap);
        if (k < 0 || (size_t)k >= sizeof a->value) g->overflow = true;
    }
}

static void mg_note(mg_list *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mg_note(mg_list *g, const char *fmt, ...)
{
    if (g->nnotes >= MG_MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->notes[g->nnotes++], sizeof g->notes[0], fmt, ap);
    va_end(ap);
}

#define ARG(grp, flag) mg_add(g, grp, flag, false, NULL)
#define ARGV(grp, flag, ...) mg_add(g, grp, flag, false, __VA_ARGS__)
#define ARGRAW(grp, flag, ...) mg_add(g, grp, flag, true, __VA_ARGS__)

/* A 0/1 layer pattern as the Python list expression Megatron's --moe-layer-freq and
 * --window-attn-skip-freq evaluate (arguments.py moe_freq_type): a leading run and a repeated
 * period when the pattern has one ("[0]*3+[1]*58", "[1,1,1,0]*12"), else its runs
 * ("[0]*2+[1]*5+[0]*1+..."). The list is as long as the layers. */
static void pattern_expr(const bool *p, int64_t n, char *out, size_t cap)
{
    size_t k = 0;
#define PUT(...) (k += (size_t)snprintf(out + k, k < cap ? cap - k : 0, __VA_ARGS__))
    int64_t lead = 1;
    while (lead < n && p[lead] == p[0]) lead++;
    for (int64_t f = 0; f <= lead && f < n; f += lead ? lead : 1) {
        int64_t rest = n - f;
        for (int64_t per = 1; per <= 16 && per <= rest; per++) {
            bool ok = true;
            for (int64_t i = f; i < n && ok; i++) ok = p[i] == p[f + (i - f) % per];
            if (!ok || rest / per < 2) continue;
            if (f) PUT("[%d]*%lld+", p[0] ? 1 : 0, (long long)f);
            PUT("[");
            for (int64_t i = 0; i < per; i++) PUT("%s%d", i ? "," : "", p[f + i] ? 1 : 0);
            PUT("]*%lld", (long long)(rest / per));
            if (rest % per) {
                PUT("+[");
                for (int64_t i = 0; i < rest % per; i++) PUT("%s%d", i ? "," : "", p[f + i] ? 1 : 0);
                PUT("]");
            }
            return;
        }
        if (!lead) break;
    }
    for (int64_t i = 0; i < n;) {
        int64_t j = i;
        while (j < n && p[j] == p[i]) j++;
        PUT("%s[%d]*%lld", i ? "+" : "", p[i] ? 1 : 0, (long long)(j - i));
        i = j;
    }
#undef PUT
}

/* The model's MoE layers (1) and windowed layers (1), for the two patterns above. */
static bool *layer_pattern(const pp_model *m, bool window)
{
    bool *p = malloc((size_t)(m->layers > 0 ? m->layers : 1) * sizeof *p);
    if (!p) return NULL;
    for (int64_t i = 0; i < m->layers; i++)
        p[i] = window ? pp_model_layer_is_window(m, i) : pp_model_layer_is_moe(m, i);
    return p;
}

/* Can Megatron-LM's command line express the work and layout? Shared by the Megatron-based
 * formats (megatron, torchrun, slurm). */
static pp_status megatron_check(const pp_launch_params *p, pp_error *err)
{
    const pp_work *w = p->work;
    const pp_model *m = &w->model;
    const pp_layout *l = p->layout;
    if (l->zero > 0 && !w->stack.megatron_fsdp)
        return BAD("Megatron-LM has no ZeRO-%d option here: use --dist-opt (framework megatron) "
                   "or --format deepspeed", l->zero);
    if (!pp_activations[m->act].megatron)
        return BAD("Megatron-LM's command line has no %s MLP: model %s", pp_act_names[m->act], m->name);
    if (m->pos == PP_POS_ALIBI)
        return BAD("Megatron-LM's GPT has no ALiBi position embedding: model %s (use --format nemo "
                   "or deepspeed)", m->name);
    if (l->offload == PP_OFF_PARAMS)
        return BAD("Megatron-LM does not offload parameters: use --offload optimizer, or ZeRO-3 "
                   "with --format deepspeed");
    if (l->offload == PP_OFF_OPTIMIZER && !l->dist_opt)
        return BAD("Megatron's --optimizer-cpu-offload works on the distributed optimizer: add --dist-opt");
    const pp_stack *s = &w->stack;
    /* MoE with TP needs SP: pp_layout_validate says so for every command. */
    if (s->tp_comm_overlap && !l->sp)
        return BAD("--tp-comm-overlap needs --sp (arguments.py validate_args)");
    if (pp_work_dist_fused_adam(w))
        return BAD("NeMo 1.x's distributed_fused_adam (--distributed-fused-adam, --optimizer-dtype bf16) is not "
                   "Megatron-LM's optimizer (use --format nemo, or --precision-aware-optimizer for Megatron's 16-bit "
                   "state)");
    if (s->ep_overlap && l->pp > 1 && l->vpp < 2)
        return BAD("--ep-overlap with --pp %lld needs --vpp: Megatron overlaps the all-to-alls of interleaved "
                   "micro-batches (transformer_config.py, overlap_moe_expert_parallel_comm)", (long long)l->pp);
    if (s->no_overlap && l->vpp > 1 && l->pp < 3)
        return BAD("--no-overlap with --vpp %lld needs --pp of at least 3: Megatron's interleaved schedule without "
                   "p2p overlap refuses 2 stages (arguments.py validate_args)", (long long)l->vpp);
    if (s->ce_fusion == PP_CE_TE)
        return BAD("--cross-entropy-fusion te: Megatron-LM refuses --cross-entropy-fusion-impl te (arguments.py "
                   "validate_args: \"disabled due to stability issues\"); use native");
    if (p->target == PP_TARGET_DEVICE_LOCAL) {
        if (pp_model_is_mla(m))
            return BAD("multi-latent attention needs Transformer Engine (Megatron's local DotProductAttention fails "
                       "with it), which --launch-target device-local lacks");
        if (pp_precision_quantized(s->precision))
            return BAD("--precision %s needs Transformer Engine, which --launch-target device-local lacks",
                       pp_precision_names[s->precision]);
        if (s->tp_comm_overlap)
            return BAD("--tp-comm-overlap needs Transformer Engine, which --launch-target device-local lacks");
        if (s->grouped_gemm)
            return BAD("--moe-grouped-gemm needs Transformer Engine, which --launch-target device-local lacks");
        if (s->dispatcher == PP_DISPATCH_FLEX && pp_model_is_moe(m))
            return BAD("--moe-dispatcher flex needs DeepEP or HybridEP, which --launch-target device-local lacks");
        if (s->impl_given && s->impl == PP_IMPL_TE)
            return BAD("--impl te: --launch-target device-local runs Megatron's local implementation");
        if (l->sp)
            return BAD("--sp: sequence parallelism fails with the torch LayerNorm of "
                       "--launch-target device-local (needs Transformer Engine or apex)");
        if (l->cp > 1)
            return BAD("--cp %lld: context parallelism needs Transformer Engine attention, which "
                       "--launch-target device-local lacks", (long long)l->cp);
        if (l->offload == PP_OFF_OPTIMIZER)
            return BAD("--offload optimizer: Megatron's CPU optimizer offload needs Transformer "
                       "Engine, which --launch-target device-local lacks");
        /* Megatron's CheckpointWithoutOutput (tensor_parallel/random.py), which the layernorm
         * module's recompute runs through, calls Transformer Engine's FP8GlobalStateManager even in
         * bf16: without TE the first step fails (NameError), as two scripts did on the lent H200. */
        if (l->recompute_modules & (1u << PP_RCM_LAYERNORM))
            return BAD("--recompute-modules layernorm needs Transformer Engine installed (Megatron's "
                       "CheckpointWithoutOutput calls it even in bf16), which --launch-target device-local lacks");
    }
    if (l->vpp > 1 && l->pp < 2) return BAD("--vpp %lld needs --pp of at least 2", (long long)l->vpp);
    return pp_launch_cluster_check(w, err);
}

/* The shortest decimal that reads back as v (argparse's float() and parplan's reader). */
static const char *num_repr(double v, char *buf, size_t n)
{
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, n, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

/* RoPE's base and scaling. Megatron-LM: arguments.py --rotary-base (an integer), --use-rope-scaling
 * (rotary_pos_embedding.py _apply_scaling: Llama 3.1's bands 1 and 4 over 8192 positions, fixed;
 * pretrain_gpt.py's gpt_config_from_args passes no --rope-scaling-factor, so the factor is
 * GPTModel's 8), --rotary-seq-len-interpolation-factor (linear, an integer), --position-embedding-
 * type yarn with --rotary-scaling-factor, --yarn-original-max-position-embeddings, --yarn-beta-fast/
 * -slow, --mscale, --mscale-all-dim, --no-yarn-correction-range-round-to-int (argument_utils.py
 * _apply_yarn_config_from_args); multi-latent attention reads --rope-type (default yarn), the
 * factor (default 1: plain RoPE) and the mscales, and fixes the original length 4096 and betas 32
 * and 1 (MLATransformerConfig, which also refuses --rope-type rope with the default RoPE fusion). */
static void rope_args(mg_list *g, const pp_model *m)
{
    char a[40], b[40];
    bool mla = pp_model_is_mla(m);
    const double f = m->rope_factor;
    if (m->rope_theta > 0 && m->rope_theta == floor(m->rope_theta) && m->rope_theta < 1e15)
        ARGV(G_MODEL, "--rotary-base", "%.0f", m->rope_theta);
    else if (m->rope_theta > 0)
        mg_note(g, "RoPE base %g: Megatron's --rotary-base takes an integer: not written", m->rope_theta);
    if (m->rope_local_theta > 0 && m->rope_local_theta != m->rope_theta)
        mg_note(g, "the windowed layers' RoPE base %g (Gemma 3) has no Megatron flag: every layer gets --rotary-base, "
                   "and --rotary-seq-len-interpolation-factor if written", m->rope_local_theta);
    switch (m->rope_scaling) {
    case PP_ROPE_SCALING_NONE: /* MLA: its default yarn of factor 1 is plain RoPE */
        break;
    case PP_ROPE_SCALING_LINEAR:
        if (!mla && f == floor(f) && f >= 1) ARGV(G_MODEL, "--rotary-seq-len-interpolation-factor", "%.0f", f);
        else mg_note(g, "linear RoPE scaling x%g: Megatron's --rotary-seq-len-interpolation-factor takes an integer and "
                        "no latent attention: not written", f);
        break;
    case PP_ROPE_SCALING_LLAMA3:
        if (mla) {
            mg_note(g, "llama3 RoPE scaling with latent attention has no Megatron flag: not written");
            break;
        }
        ARG(G_MODEL, "--use-rope-scaling");
        ARGV(G_MODEL, "--rope-scaling-factor", "%s", num_repr(f, a, sizeof a));
        if (f != 8 || m->rope_low_freq != 1 || m->rope_high_freq != 4 || m->rope_original_context != 8192)
            mg_note(g, "llama3 RoPE scaling x%g over bands %g-%g of %lld positions: pretrain_gpt.py scales x8 over 1-4 of "
                       "8192 whatever --rope-scaling-factor says (gpt_config_from_args, rotary_pos_embedding.py)", f,
                    m->rope_low_freq, m->rope_high_freq, (long long)m->rope_original_context);
        break;
    case PP_ROPE_SCALING_YARN:
        if (mla) ARGV(G_MODEL, "--rope-type", "%s", "yarn");
        ARGV(G_MODEL, "--rotary-scaling-factor", "%s", num_repr(f, a, sizeof a));
        if (!mla) {
            ARGV(G_MODEL, "--yarn-original-max-position-embeddings", "%lld", (long long)m->rope_original_context);
            ARGV(G_MODEL, "--yarn-beta-fast", "%s", num_repr(m->yarn_beta_fast, a, sizeof a));
            ARGV(G_MODEL, "--yarn-beta-slow", "%s", num_repr(m->yarn_beta_slow, b, sizeof b));
            if (m->yarn_no_truncate) ARG(G_MODEL, "--no-yarn-correction-range-round-to-int");
        } else if (m->rope_original_context != 4096 || m->yarn_beta_fast != 32 || m->yarn_beta_slow != 1 ||
                   m->yarn_no_truncate) {
            mg_note(g, "YaRN of latent attention over %lld positions, betas %g/%g%s: Megatron fixes 4096 and 32/1, "
                       "truncated (MLATransformerConfig)", (long long)m->rope_original_context, m->yarn_beta_fast,
                    m->yarn_beta_slow, m->yarn_no_truncate ? ", not truncated" : "");
        }
        ARGV(G_MODEL, "--mscale", "%s", num_repr(m->yarn_mscale, a, sizeof a));
        ARGV(G_MODEL, "--mscale-all-dim", "%s", num_repr(m->yarn_mscale_all_dim, b, sizeof b));
        break;
    case PP_ROPE_SCALING_COUNT:
        break;
    }
}

/* The router (megatron/core/transformer/moe/moe_utils.py topk_routing_with_score_function): softmax
 * after the top-k (the default) renormalises the k weights, before it (--moe-router-pre-softmax)
 * keeps the scores over all experts; sigmoid scores are renormalised when k > 1; the factor,
 * group-limited routing, the aux-loss-free expert bias (sigmoid only: transformer_config.py), the
 * balancing loss and the z-loss. */
static void router_args(mg_list *g, const pp_model *m)
{
    char a[40];
    ARGV(G_MODEL, "--moe-router-score-function", "%s", pp_router_score_names[m->router_score]);
    if (m->router_score == PP_ROUTER_SOFTMAX && (m->router_raw_topk || m->topk == 1)) {
        ARG(G_MODEL, "--moe-router-pre-softmax");
        if (!m->router_raw_topk)
            mg_note(g, "top-1 softmax renormalised over its one expert (weight 1): Megatron refuses it "
                       "(transformer_config.py); --moe-router-pre-softmax written");
    } else if (m->router_score == PP_ROUTER_SIGMOID && m->router_raw_topk != (m->topk == 1)) {
        mg_note(g, "sigmoid top-%lld weights %s: Megatron renormalises them exactly when k > 1 (moe_utils.py)",
                (long long)m->topk, m->router_raw_topk ? "as scored" : "renormalised");
    }
    if (m->router_scale > 0 && m->router_scale != 1)
        ARGV(G_MODEL, "--moe-router-topk-scaling-factor", "%s", num_repr(m->router_scale, a, sizeof a));
    if (m->router_groups > 0) {
        ARGV(G_MODEL, "--moe-router-num-groups", "%lld", (long long)m->router_groups);
        ARGV(G_MODEL, "--moe-router-group-topk", "%lld", (long long)m->router_group_topk);
    }
    if (m->router_expert_bias) ARG(G_MODEL, "--moe-router-enable-expert-bias");
    ARGV(G_MODEL, "--moe-router-load-balancing-type", "%s", pp_router_balance_names[m->router_balance]);
    ARGV(G_MODEL, "--moe-aux-loss-coeff", "%s", num_repr(m->router_aux_coef, a, sizeof a));
    if (m->router_z_coef > 0) ARGV(G_MODEL, "--moe-z-loss-coeff", "%s", num_repr(m->router_z_coef, a, sizeof a));
}

static pp_status megatron_build(const pp_launch_params *p, mg_list *g, pp_error *err)
{
    const pp_work *w = p->work;
    const pp_model *m = &w->model;
    const pp_layout *l = p->layout;
    bool local = p->target == PP_TARGET_DEVICE_LOCAL;
    memset(g, 0, sizeof *g);
    pp_status st = megatron_check(p, err);
    if (st != PP_OK) return st;

    /* -- model shape */
    ARGV(G_MODEL, "--num-layers", "%lld", (long long)m->layers);
    ARGV(G_MODEL, "--hidden-size", "%lld", (long long)m->hidden);
    ARGV(G_MODEL, "--num-attention-heads", "%lld", (long long)m->heads);
    if (m->kv_heads > 0 && m->kv_heads != m->heads) {
        ARG(G_MODEL, "--group-query-attention");
        ARGV(G_MODEL, "--num-query-groups", "%lld", (long long)m->kv_heads);
    }
    if (!pp_model_is_mla(m) && m->head_dim > 0 && m->heads > 0 && m->head_dim * m->heads != m->hidden)
        ARGV(G_MODEL, "--kv-channels", "%lld", (long long)m->head_dim);
    ARGV(G_MODEL, "--ffn-hidden-size", "%lld", (long long)m->ffn);
    if (pp_activations[m->act].megatron[0]) ARG(G_MODEL, pp_activations[m->act].megatron);
    ARGV(G_MODEL, "--normalization", "%s", m->norm == PP_NORM_RMSNORM ? "RMSNorm" : "LayerNorm");
    char eps[40];
    if (m->norm_eps > 0) ARGV(G_MODEL, "--norm-epsilon", "%s", num_repr(m->norm_eps, eps, sizeof eps));
    bool yarn = m->pos == PP_POS_ROPE && m->rope_scaling == PP_ROPE_SCALING_YARN && !pp_model_is_mla(m);
    ARGV(G_MODEL, "--position-embedding-type", "%s",
         m->pos == PP_POS_ROPE ? (yarn ? "yarn" : "rope") : m->pos == PP_POS_NONE ? "none" : "learned_absolute");
    if (m->pos == PP_POS_ROPE) rope_args(g, m);
    if (!m->tied) ARG(G_MODEL, "--untie-embeddings-and-output-weights");
    /* Megatron's linear biases (--disable-bias-linear off) are every linear layer's and the MoE
     * router's (router.py), and experts have them only at expert TP 1 (transformer_config.py) */
    bool moe = pp_model_is_moe(m), biases = m->bias && !(moe && pp_layout_etp(l) > 1);
    if (!biases) ARG(G_MODEL, "--disable-bias-linear");
    if (!biases && m->qkv_bias) ARG(G_MODEL, "--add-qkv-bias");
    if (m->bias && !biases)
        mg_note(g, "Megatron has expert biases only at expert TP 1 (transformer_config.py): --etp %lld written without "
                   "the linear biases but q/k/v's", (long long)pp_layout_etp(l));
    else if (!m->bias && (m->out_bias || m->mlp_bias))
        mg_note(g, "the model has biases on the attention output or the MLPs only: Megatron's command line has "
                   "them on every linear layer or none (--disable-bias-linear written)");
    if (moe && biases && !m->router_bias)
        mg_note(g, "Megatron's router has a bias with the linear biases (router.py); the model's has none");
    else if (moe && !biases && m->router_bias && !m->router_expert_bias)
        mg_note(g, "the model's router bias needs Megatron's linear biases: not written");
    if (m->qk_norm != PP_QKNORM_NONE) ARG(G_MODEL, "--qk-layernorm");
    if (m->qk_norm == PP_QKNORM_FULL)
        mg_note(g, "the model normalises q and k over their whole width (OLMo 2); Megatron's --qk-layernorm "
                   "normalises per head");
    if (m->attn_sinks) ARGV(G_MODEL, "--softmax-type", "%s", "learnable");
    if (m->norms_per_layer > 2)
        mg_note(g, "the model's extra post-norms (Gemma) have no Megatron GPT flag: not written");
    /* dropout: the stack's, else the model's own (pp_work_dropout); written always, since
     * Megatron's default is 0.1 */
    double attn_drop = 0, hidden_drop = 0;
    pp_work_dropout(w, &attn_drop, &hidden_drop);
    char pa[32], ph[32];
    ARGV(G_MODEL, "--attention-dropout", "%s", pp_launch_prob(attn_drop, pa, sizeof pa));
    ARGV(G_MODEL, "--hidden-dropout", "%s", pp_launch_prob(hidden_drop, ph, sizeof ph));
    /* the training length, and the model's context (arguments.py: at least the training length) */
    ARGV(G_MODEL, "--seq-length", "%lld", (long long)m->seq);
    ARGV(G_MODEL, "--max-position-embeddings", "%lld", (long long)(m->max_context > m->seq ? m->max_context : m->seq));
    if (m->max_context > 0 && m->max_context < m->seq)
        mg_note(g, "training at %lld tokens, past the model's context %lld: --max-position-embeddings %lld written "
                   "(Megatron needs it at least --seq-length)", (long long)m->seq, (long long)m->max_context, (long long)m->seq);
    else if (m->pos == PP_POS_LEARNED && m->max_context > m->seq)
        mg_note(g, "Megatron's position table has %lld rows; the prediction counts the %lld trained", (long long)m->max_context,
                (long long)m->seq);
    if (pp_model_is_mla(m)) {
        /* DeepSeek-V2 MLA (Megatron's MLATransformerConfig): qk_head_dim is the no-RoPE part */
        ARG(G_MODEL, "--multi-latent-attention");
        if (m->q_lora_rank > 0) ARGV(G_MODEL, "--q-lora-rank", "%lld", (long long)m->q_lora_rank);
        ARGV(G_MODEL, "--kv-lora-rank", "%lld", (long long)m->kv_lora_rank);
        ARGV(G_MODEL, "--qk-head-dim", "%lld", (long long)m->qk_nope_dim);
        ARGV(G_MODEL, "--qk-pos-emb-head-dim", "%lld", (long long)m->qk_rope_dim);
        ARGV(G_MODEL, "--v-head-dim", "%lld", (long long)m->v_head_dim);
    }
    if (m->mtp_layers > 0) ARGV(G_MODEL, "--mtp-num-layers", "%lld", (long long)m->mtp_layers);
    char pat[4096];
    if (m->window > 0) {
        /* Transformer Engine's (left, right) window: causal, `window` tokens back */
        ARGV(G_MODEL, "--window-size", "%lld,0", (long long)m->window);
        if (m->window_full_every > 0) {
            /* utils.py is_layer_window_attention: an integer N makes 1-based layer n full when
             * n % N == 0, i.e. 0-based phase N - 1; any other phase as the list (1 = windowed) */
            if (m->window_full_phase == m->window_full_every - 1) {
                ARGV(G_MODEL, "--window-attn-skip-freq", "%lld", (long long)m->window_full_every);
            } else {
                bool *pt = layer_pattern(m, true);
                if (!pt) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
                pattern_expr(pt, m->layers, pat, sizeof pat);
                free(pt);
                ARGV(G_MODEL, "--window-attn-skip-freq", "%s", pat);
            }
        }
    }
    if (pp_model_is_moe(m)) {
        const pp_stack *s = &w->stack;
        ARGV(G_MODEL, "--num-experts", "%lld", (long long)m->experts);
        ARGV(G_MODEL, "--moe-router-topk", "%lld", (long long)(m->topk > 0 ? m->topk : 1));
        ARGV(G_MODEL, "--moe-ffn-hidden-size", "%lld", (long long)pp_model_expert_ffn(m));
        if (m->shared_ffn > 0)
            ARGV(G_MODEL, "--moe-shared-expert-intermediate-size", "%lld", (long long)m->shared_ffn);
        if (m->shared_gate) ARG(G_MODEL, "--moe-shared-expert-gate");
        router_args(g, m);
        bool *pt = layer_pattern(m, false);
        if (!pt) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        bool all = true;
        for (int64_t i = 0; i < m->layers; i++) all &= pt[i];
        if (!all) {
            pattern_expr(pt, m->layers, pat, sizeof pat);
            ARGV(G_MODEL, "--moe-layer-freq", "%s", pat);
        }
        free(pt);
        ARGV(G_MODEL, "--moe-token-dispatcher-type", "%s", pp_dispatch_names[s->dispatcher]);
        if (s->dispatcher == PP_DISPATCH_FLEX) /* arguments.py --moe-flex-dispatcher-backend */
            ARGV(G_MODEL, "--moe-flex-dispatcher-backend", "%s", pp_flex_backend_names[s->flex_backend]);
        if (s->grouped_gemm) ARG(G_MODEL, "--moe-grouped-gemm");
        if (s->ep_overlap) ARG(G_MODEL, "--overlap-moe-expert-parallel-comm");
        if (s->moe_capacity_factor > 0)
            ARGV(G_MODEL, "--moe-expert-capacity-factor", "%.6g", s->moe_capacity_factor);
    }
    /* activation offloading (arguments.py --cpu-offloading-num-layers; validate_args turns
     * cpu_offloading on for N > 0) */
    if (w->stack.cpu_offload_layers > 0)
        ARGV(G_MODEL, "--cpu-offloading-num-layers", "%lld", (long long)w->stack.cpu_offload_layers);
    /* CUDA graphs (arguments.py --cuda-graph-impl, --cuda-graph-modules nargs='+'): one graph of the
     * iteration, or Transformer Engine's per-layer graphs of the named parts */
    const unsigned cg = pp_stack_cuda_graphs(&w->stack);
    if (cg & (1u << PP_CG_FULL_ITERATION)) {
        /* validate_args refuses the NaN check inside the captured iteration (Megatron-LM d98e8a64
         * arguments.py:1235-1237: "--no-check-for-nan-in-loss-and-grad should be set with
         * --cuda-graph-impl=full_iteration") */
        ARGV(G_MODEL, "--cuda-graph-impl", "%s", "full_iteration");
        ARG(G_MODEL, "--no-check-for-nan-in-loss-and-grad");
    } else if (cg) {
        char parts[128];
        pp_cuda_graphs_str(cg, " ", parts, sizeof parts); /* nargs='+': the parts as separate words */
        ARGV(G_MODEL, "--cuda-graph-impl", "%s", "transformer_engine");
        ARGRAW(G_MODEL, "--cuda-graph-modules", "%s", parts);
    }

    /* -- parallel layout */
    ARGV(G_PARALLEL, "--tensor-model-parallel-size", "%lld", (long long)l->tp);
    ARGV(G_PARALLEL, "--pipeline-model-parallel-size", "%lld", (long long)l->pp);
    bool even = pp_launch_stages_even(w, l);
    pp_pipeline_flags pf;
    if (l->pp > 1 && pp_layout_vstages_uneven(w, l) && pp_pipeline_split_flags(w, l, &pf)) {
        /* an interleaved split Megatron's own flags make (pp_pipeline.h): the first/last stage
         * sizes or the account-for flags, with the virtual stages per rank */
        ARGV(G_PARALLEL, "--num-virtual-stages-per-pipeline-rank", "%lld", (long long)l->vpp);
        if (pf.first) ARGV(G_PARALLEL, "--decoder-first-pipeline-num-layers", "%lld", (long long)pf.first);
        if (pf.last) ARGV(G_PARALLEL, "--decoder-last-pipeline-num-layers", "%lld", (long long)pf.last);
        if (pf.account_embedding) ARG(G_PARALLEL, "--account-for-embedding-in-pipeline-split");
        if (pf.account_loss) ARG(G_PARALLEL, "--account-for-loss-in-pipeline-split");
    } else if (l->pp > 1 && (!even || pp_layout_vstages_uneven(w, l))) {
        /* any other uneven split (the ILP's, a remainder, a given layout): Megatron takes the
         * layout string and derives vpp from its length */
        char lay[4096];
        st = pp_pipeline_layout_format(w, l, lay, sizeof lay, err);
        if (st != PP_OK) return st;
        ARGV(G_PARALLEL, "--pipeline-model-parallel-layout", "%s", lay);
    } else if (l->vpp > 1) {
        ARGV(G_PARALLEL, "--num-layers-per-virtual-pipeline-stage", "%lld",
             (long long)(m->layers / (l->pp * l->vpp)));
    }
    ARGV(G_PARALLEL, "--context-parallel-size", "%lld", (long long)l->cp);
    if (m->experts > 1) {
        ARGV(G_PARALLEL, "--expert-model-parallel-size", "%lld", (long long)l->ep);
        ARGV(G_PARALLEL, "--expert-tensor-parallel-size", "%lld", (long long)pp_layout_etp(l));
    }
    if (l->sp) ARG(G_PARALLEL, "--sequence-parallel");

    /* -- batch */
    ARGV(G_BATCH, "--micro-batch-size", "%lld", (long long)l->mbs);
    ARGV(G_BATCH, "--global-batch-size", "%lld", (long long)w->gbs);

    /* -- optimizer sharding, recompute, offload */
    if (l->dist_opt) ARG(G_MEMORY, "--use-distributed-optimizer");
    if (w->stack.megatron_fsdp && l->zero > 0) {
        /* Megatron-FSDP (docs/source/api-guide/custom_fsdp.md): its sharding strategy, on top of the
         * distributed optimizer it requires, without the fused main_grad accumulation */
        static const char *const strategies[] = {"no_shard", "optim", "optim_grads", "optim_grads_params"};
        ARG(G_MEMORY, "--use-megatron-fsdp");
        ARGV(G_MEMORY, "--data-parallel-sharding-strategy", "%s", strategies[l->zero]);
        ARG(G_MEMORY, "--use-distributed-optimizer");
        ARG(G_MEMORY, "--no-gradient-accumulation-fusion");
        /* validate_args: "Megatron-FSDP requires the `fsdp_dtensor` checkpointing format" (even
         * with no checkpoint saved) */
        ARGV(G_MEMORY, "--ckpt-format", "%s", "fsdp_dtensor");
        if (w->stack.fsdp_double_buffer) ARG(G_MEMORY, "--fsdp-double-buffer");
        if (w->stack.fsdp_unit_size > 0)
            ARGV(G_MEMORY, "--suggested-communication-unit-size", "%lld", (long long)w->stack.fsdp_unit_size);
        if (w->stack.fsdp_grads_fp32) ARGV(G_MEMORY, "--megatron-fsdp-main-grads-dtype", "%s", "fp32");
    }
    if (l->recompute == PP_RC_SELECTIVE) {
        ARGV(G_MEMORY, "--recompute-granularity", "%s", "selective");
        if (l->recompute_modules && l->recompute_modules != 1u << PP_RCM_CORE_ATTN) {
            /* argparse nargs='*': the module names as separate words (plain identifiers) */
            char mods[160] = "";
            for (int i = 0; i < PP_RCM_COUNT; i++)
                if (l->recompute_modules & (1u << i))
                    snprintf(mods + strlen(mods), sizeof mods - strlen(mods), "%s%s", mods[0] ? " " : "",
                             pp_rc_module_names[i]);
            ARGRAW(G_MEMORY, "--recompute-modules", "%s", mods);
        }
    } else if (l->recompute == PP_RC_FULL) {
        int64_t kmax = 0;
        bool all = true, same = true;
        int64_t k0 = pp_launch_stage_recompute(w, l, 0);
        for (int64_t i = 0; i < l->pp; i++) {
            int64_t k = pp_launch_stage_recompute(w, l, i);
            if (k > kmax) kmax = k;
            if (k != pp_layout_stage_layers(w, l, i)) all = false;
            if (k != k0) same = false;
        }
        if (kmax == 0) {
            mg_note(g, "recompute full with 0 layers on every stage: no recompute flags emitted");
        } else if (all) {
            ARGV(G_MEMORY, "--recompute-granularity", "%s", "full");
            ARGV(G_MEMORY, "--recompute-method", "%s", "uniform");
            ARGV(G_MEMORY, "--recompute-num-layers", "%d", 1);
        } else {
            /* block: the first K layers of each stage (of each model chunk under vpp) */
            int64_t per_chunk = (kmax + l->vpp - 1) / l->vpp;
            ARGV(G_MEMORY, "--recompute-granularity", "%s", "full");
            ARGV(G_MEMORY, "--recompute-method", "%s", "block");
            ARGV(G_MEMORY, "--recompute-num-layers", "%lld", (long long)per_chunk);
            if (!same)
                mg_note(g, "Megatron recomputes the same number of layers on every stage: the plan's "
                           "per-stage counts differ, so every stage recomputes %lld (the largest); "
                           "stages planned with fewer use less memory and more time than predicted",
                        (long long)kmax);
            if (l->vpp > 1 && kmax % l->vpp)
                mg_note(g, "with %lld virtual stages, block recompute applies per model chunk: %lld "
                           "per chunk = %lld per stage (planned %lld)",
                        (long long)l->vpp, (long long)per_chunk, (long long)(per_chunk * l->vpp),
                        (long long)kmax);
        }
    }
    if (l->offload == PP_OFF_OPTIMIZER) {
        ARG(G_MEMORY, "--optimizer-cpu-offload");
        ARGV(G_MEMORY, "--optimizer-offload-fraction", "%s", "1.0");
        ARG(G_MEMORY, "--use-precision-aware-optimizer");
    }

    /* -- precision, overlap */
    const pp_stack *s = &w->stack;
    ARG(G_PRECISION, s->precision == PP_PREC_FP16 ? "--fp16" : "--bf16");
    if (s->precision == PP_PREC_FP8) {
        /* Transformer Engine FP8: E4M3 forward, E5M2 gradients ("hybrid"); delayed scaling is
         * Megatron's default recipe (Blackwell GPUs can use --fp8-recipe mxfp8) */
        ARGV(G_PRECISION, "--fp8-format", "%s", "hybrid");
        ARGV(G_PRECISION, "--fp8-recipe", "%s", "delayed");
    } else if (s->precision == PP_PREC_MXFP8) {
        /* MXFP8: E4M3 everywhere with E8M0 block scales (transformer_config.py fp8_recipe
         * 'mxfp8', "for Blackwell architecture only"; Megatron-Bridge's bf16_with_mxfp8_mixed
         * sets fp8 "e4m3") */
        ARGV(G_PRECISION, "--fp8-format", "%s", "e4m3");
        ARGV(G_PRECISION, "--fp8-recipe", "%s", "mxfp8");
    } else if (s->precision == PP_PREC_NVFP4) {
        /* NVFP4: transformer_config.py fp4 ('e2m1', flag --fp4-format) and fp4_recipe 'nvfp4' */
        ARGV(G_PRECISION, "--fp4-format", "%s", "e2m1");
        ARGV(G_PRECISION, "--fp4-recipe", "%s", "nvfp4");
    }
    /* Megatron overlaps nothing unless asked (arguments.py): --no-overlap writes no overlap flag,
     * and turns the interleaved schedule's send/recv overlap (on by default) off */
    if (!s->no_overlap) {
        if (l->dp * l->cp > 1) ARG(G_PRECISION, "--overlap-grad-reduce");
        if (l->dist_opt && l->dp > 1) ARG(G_PRECISION, "--overlap-param-gather");
    } else if (l->vpp > 1) {
        ARG(G_PRECISION, "--no-overlap-p2p-communication");
    }
    if (s->tp_comm_overlap) ARG(G_PRECISION, "--tp-comm-overlap");
    if (s->grad_bf16) ARG(G_PRECISION, "--grad-reduce-in-bf16");
    /* quantized parameters: FP8 and MXFP8 --fp8-param-gather, NVFP4 --fp4-param-gather
     * (transformer_config.py fp4_param) */
    if (pp_work_fp8_params(w))
        ARG(G_PRECISION, w->stack.precision == PP_PREC_NVFP4 ? "--fp4-param-gather" : "--fp8-param-gather");
    if (pp_work_precision_aware(w)) {
        if (l->offload != PP_OFF_OPTIMIZER) ARG(G_PRECISION, "--use-precision-aware-optimizer"); /* above otherwise */
        ARGV(G_PRECISION, "--main-params-dtype", "%s", pp_opt_dtype_names[s->main_params_dtype]);
        ARGV(G_PRECISION, "--exp-avg-dtype", "%s", pp_opt_dtype_names[s->exp_avg_dtype]);
        ARGV(G_PRECISION, "--exp-avg-sq-dtype", "%s", pp_opt_dtype_names[s->exp_avg_sq_dtype]);
    }
    /* Megatron's bias-activation fusion is on by default (arguments.py); argument_utils.py reads
     * bias_swiglu_fusion for a SwiGLU MLP and bias_gelu_fusion otherwise */
    /* an activation without a Megatron bias kernel needs its switch even by default (mlp.py refuses to
     * fuse it: pp_activations) */
    if (s->act_unfused || !pp_activations[m->act].megatron_fusion)
        ARG(G_PRECISION, pp_activations[m->act].megatron_unfuse);
    if (s->ce_fusion != PP_CE_NONE) {
        ARG(G_PRECISION, "--cross-entropy-loss-fusion");
        ARGV(G_PRECISION, "--cross-entropy-fusion-impl", "%s", pp_ce_fusion_names[s->ce_fusion]);
    }
    if (s->no_attention_mask) ARG(G_DATA, "--no-create-attention-mask-in-dataloader");
    /* The implementation the prediction assumed (pp_work_impl: --impl, else local for unfused
     * attention), so that the script read back predicts the same. */
    bool local_impl = pp_work_impl(w) == PP_IMPL_LOCAL;
    if (!local && local_impl) ARGV(G_PRECISION, "--transformer-impl", "%s", "local");
    else if (!local && w->attention == PP_ATTN_UNFUSED) ARGV(G_PRECISION, "--attention-backend", "%s", "unfused");
    /* --te-attention flash2: TE's flash-attn path (language_module.py _set_attention_backend:
     * NVTE_FLASH_ATTN=1, NVTE_FUSED_ATTN=0) */
    else if (!local && s->te_attention == PP_TEATTN_FLASH2) ARGV(G_PRECISION, "--attention-backend", "%s", "flash");

    /* -- data */
    if (local) {
        ARG(G_DATA, "--mock-data");
        ARGV(G_DATA, "--tokenizer-type", "%s", "NullTokenizer");
        ARGV(G_DATA, "--vocab-size", "%lld", (long long)m->vocab);
    } else {
        ARGRAW(G_DATA, "--data-path", "%s", "\"${DATA_PATH:?set DATA_PATH to a Megatron .bin/.idx prefix}\"");
        ARGV(G_DATA, "--split", "%s", "99,1,0");
        ARGRAW(G_DATA, "--tokenizer-type", "%s", "\"${TOKENIZER_TYPE:-HuggingFaceTokenizer}\"");
        ARGRAW(G_DATA, "--tokenizer-model", "%s", "\"${TOKENIZER_MODEL:?set TOKENIZER_MODEL (a tokenizer with the model vocabulary)}\"");
        const int64_t div = pp_work_vocab_divisible_by(w);
        mg_note(g, "vocabulary %lld comes from the tokenizer; Megatron pads it to a multiple of "
                   "%lld x tp = %lld (%.0f)",
                (long long)m->vocab, (long long)div, (long long)(div * l->tp), pp_layer_vocab(w, l));
    }

    /* the vocabulary's padding base where it is not Megatron's default 128 (arguments.py
     * --make-vocab-size-divisible-by; vocab_utils.py calculate_padded_vocab_size) */
    if (w->stack.vocab_divisible_by > 0 && w->stack.vocab_divisible_by != 128)
        ARGV(G_DATA, "--make-vocab-size-divisible-by", "%lld", (long long)w->stack.vocab_divisible_by);

    /* -- optimizer schedule */
    if (p->train_iters > 0) ARGV(G_TRAINING, "--train-iters", "%lld", (long long)p->train_iters);
    else if (local) ARGV(G_TRAINING, "--train-iters", "%d", 5);
    else ARGRAW(G_TRAINING, "--train-iters", "%s", "\"${TRAIN_ITERS:?set TRAIN_ITERS (optimizer steps)}\"");
    ARGRAW(G_TRAINING, "--lr", "%s", "\"${LR:-3.0e-4}\"");
    ARGRAW(G_TRAINING, "--min-lr", "%s", "\"${MIN_LR:-3.0e-5}\"");
    ARGV(G_TRAINING, "--lr-decay-style", "%s", "cosine");
    ARGV(G_TRAINING, "--lr-warmup-fraction", "%s", "0.01");
    ARGV(G_TRAINING, "--weight-decay", "%s", "0.1");
    ARGV(G_TRAINING, "--clip-grad", "%s", "1.0");
    ARGV(G_TRAINING, "--adam-beta1", "%s", "0.9");
    ARGV(G_TRAINING, "--adam-beta2", "%s", "0.95");
    ARGV(G_TRAINING, "--init-method-std", "%s", "0.02");

    /* -- checkpoints */
    if (!local) {
        ARGRAW(G_CHECKPOINT, "--save", "%s", "\"${CHECKPOINT_DIR:-checkpoints}\"");
        ARGRAW(G_CHECKPOINT, "--load", "%s", "\"${CHECKPOINT_DIR:-checkpoints}\"");
        ARGRAW(G_CHECKPOINT, "--save-interval", "%s", "\"${SAVE_INTERVAL:-1000}\"");
        if (!(w->stack.megatron_fsdp && l->zero > 0)) ARGV(G_CHECKPOINT, "--ckpt-format", "%s", "torch_dist");
    }

    /* -- logging */
    ARGV(G_LOGGING, "--log-interval", "%d", local ? 1 : 10);
    ARG(G_LOGGING, "--log-throughput");
    ARGV(G_LOGGING, "--eval-interval", "%d", 1000);
    ARGV(G_LOGGING, "--eval-iters", "%d", local ? 0 : 10);
    /* the allocator figures (max allocated) after every iteration, for comparing with the plan */
    if (local) ARGV(G_LOGGING, "--log-memory-interval", "%d", 1);

    /* -- no Transformer Engine, no apex (megatron-on-device.md) */
    if (local) {
        ARGV(G_LOCAL, "--transformer-impl", "%s", "local");
        ARG(G_LOCAL, "--no-persist-layer-norm");
        ARG(G_LOCAL, "--no-masked-softmax-fusion");
        ARG(G_LOCAL, "--no-gradient-accumulation-fusion");
        if (m->pos == PP_POS_ROPE) ARG(G_LOCAL, "--no-rope-fusion");
        /* Megatron's other default fusions stay on: bias_swiglu_fusion / bias_gelu_fusion and
         * bias_dropout_fusion are jit_fuser functions (megatron/core/jit.py: torch.compile on this
         * PyTorch), which run without TE or apex and change what backward keeps
         * (megatron/core/fusions/fused_bias_swiglu.py). Switching them off would measure a stack
         * users do not run. */
        if (w->attention == PP_ATTN_FLASH)
            mg_note(g, "device-local runs Megatron's unfused local attention; the prediction above "
                       "assumes flash attention (predict with --attention unfused to compare)");
    }
    if (g->overflow) return pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0, "launch: argument list overflow");
    return PP_OK;
}

/* Shell word: plain when safe, else single-quoted. */
static void sh_word(pp_sbuf *b, const char *s)
{
    bool plain = *s != 0;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              strchr("._/:,=+-@%", *c)))
            plain = false;
    if (plain) {
        pp_sbuf_printf(b, "%s", s);
        return;
    }
    pp_sbuf_printf(b, "'");
    for (const char *c = s; *c; c++) {
        if (*c == '\'') pp_sbuf_printf(b, "'\\''");
        else pp_sbuf_printf(b, "%c", *c);
    }
    pp_sbuf_printf(b, "'");
}

static void mg_arg_write(pp_sbuf *b, const mg_arg *a)
{
    pp_sbuf_printf(b, "%s", a->flag);
    if (a->value[0]) {
        pp_sbuf_printf(b, " ");
        if (a->raw) pp_sbuf_printf(b, "%s", a->value);
        else sh_word(b, a->value);
    }
}

pp_status pp_launch_megatron_args(const pp_launch_params *p, char *buf, size_t n, pp_error *err)
{
    mg_list *g = malloc(sizeof *g);
    if (!g) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    pp_sbuf b = {0};
    pp_status st = megatron_build(p, g, err);
    if (st == PP_OK) {
        for (int i = 0; i < g->n; i++) {
            if (i) pp_sbuf_printf(&b, " ");
            mg_arg_write(&b, &g->a[i]);
        }
        if (b.oom) st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        else if (b.len + 1 > n)
            st = pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0, "launch: buffer of %zu bytes too small", n);
        else memcpy(buf, b.s ? b.s : "", b.len + 1);
    }
    pp_sbuf_free(&b);
    free(g);
    return st;
}

static void write_arrays(pp_sbuf *b, const mg_list *g)
{
    for (int grp = 0; grp < G_COUNT; grp++) {
        int count = 0;
        for (int i = 0; i < g->n; i++) count += g->a[i].group == grp;
        if (!count) continue;
        pp_sbuf_printf(b, "# %s\n%s=(\n", group_titles[grp], group_names[grp]);
        for (int i = 0; i < g->n; i++) {
            if (g->a[i].group != grp) continue;
            pp_sbuf_printf(b, "    ");
            mg_arg_write(b, &g->a[i]);
            pp_sbuf_printf(b, "\n");
        }
        pp_sbuf_printf(b, ")\n");
    }
}

static void write_array_refs(pp_sbuf *b, const mg_list *g)
{
    for (int grp = 0; grp < G_COUNT; grp++) {
        int count = 0;
        for (int i = 0; i < g->n; i++) count += g->a[i].group == grp;
        if (count) pp_sbuf_printf(b, " \\\n    \"${%s[@]}\"", group_names[grp]);
    }
    pp_sbuf_printf(b, " \\\n    \"$@\"\n");
}

static void write_env(pp_sbuf *b, const pp_launch_params *p)
{
    if (p->work->stack.megatron_fsdp && p->layout->zero > 0) {
        /* validate_args: "FSDP requires CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset" */
        pp_sbuf_printf(b, "# Megatron-FSDP requires CUDA_DEVICE_MAX_CONNECTIONS unset or above 1 (validate_args).\n"
                          "unset CUDA_DEVICE_MAX_CONNECTIONS\n");
    } else {
        pp_sbuf_printf(b, "# Megatron-LM needs one CUDA connection per device so that TP/CP communication and\n"
                          "# compute kernels are issued in order (validate_args asserts it for TP or CP > 1).\n");
        pp_sbuf_printf(b, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n");
    }
    if (p->work->stack.expandable_segments)
        pp_sbuf_printf(b, "# PyTorch's allocator grows segments instead of splitting cached blocks (--expandable-segments)\n"
                          "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n");
    if (p->target == PP_TARGET_DEVICE_LOCAL)
        pp_sbuf_printf(b, "# NVLink multicast off (not available on the lent machines)\n"
                     "export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1\n");
    char dir[600];
    if (p->megatron_dir) {
        pp_sbuf_printf(b, "MEGATRON_LM=${MEGATRON_LM:-");
        pp_launch_sanitize(p->megatron_dir, dir, sizeof dir, false);
        sh_word(b, dir);
        pp_sbuf_printf(b, "}\n");
    } else {
        pp_sbuf_printf(b, "MEGATRON_LM=${MEGATRON_LM:-.}   # the Megatron-LM checkout holding pretrain_gpt.py\n");
    }
}

static void write_notes(pp_sbuf *b, const mg_list *g)
{
    for (int i = 0; i < g->nnotes; i++) pp_sbuf_printf(b, "# note: %s\n", g->notes[i]);
}

pp_status pp_launch_megatron_script(pp_launch_format fmt, const pp_launch_params *p, pp_sbuf *b, pp_error *err)
{
    mg_list *g = malloc(sizeof *g);
    if (!g) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    pp_status st = megatron_build(p, g, err);
    if (st != PP_OK) {
        free(g);
        return st;
    }
    const pp_work *w = p->work;
    int64_t nodes = pp_launch_nodes(w), gpn = pp_launch_gpus_per_node(w);
    char job[64];
    if (fmt == PP_LAUNCH_SLURM) {
        pp_launch_sanitize(w->model.name, job, sizeof job, true);
        pp_sbuf_printf(b, "#!/bin/bash\n");
        pp_sbuf_printf(b, "#SBATCH --job-name=parplan-%s\n", job[0] ? job : "train");
        pp_sbuf_printf(b, "#SBATCH --nodes=%lld\n", (long long)nodes);
        pp_sbuf_printf(b, "#SBATCH --ntasks-per-node=1\n");
        pp_sbuf_printf(b, "#SBATCH --gpus-per-node=%lld\n", (long long)gpn);
        pp_sbuf_printf(b, "#SBATCH --exclusive\n");
    } else {
        pp_sbuf_printf(b, "#!/usr/bin/env bash\n");
    }
    pp_launch_header_write(b, "#", fmt, p);
    write_notes(b, g);
    if (fmt == PP_LAUNCH_MEGATRON && nodes > 1)
        pp_sbuf_printf(b, "# Run on every node (NODE_RANK 0..%lld); torchrun starts %lld processes per node.\n",
                  (long long)(nodes - 1), (long long)gpn);
    else if (fmt == PP_LAUNCH_MEGATRON)
        pp_sbuf_printf(b, "# Run on the node; torchrun starts %lld processes.\n", (long long)gpn);
    else if (fmt == PP_LAUNCH_TORCHRUN)
        pp_sbuf_printf(b, "# Run once on every node; the c10d rendezvous at MASTER_ADDR:MASTER_PORT gathers the "
                     "%lld nodes.\n", (long long)nodes);
    else
        pp_sbuf_printf(b, "# Submit with sbatch; srun starts one torchrun per node, which rendezvous at the first node.\n");
    pp_sbuf_printf(b, "set -euo pipefail\n\n");
    write_env(b, p);
    pp_sbuf_printf(b, "GPUS_PER_NODE=%lld\nNNODES=%lld\n", (long long)gpn, (long long)nodes);
    if (fmt == PP_LAUNCH_MEGATRON) {
        if (nodes > 1)
            pp_sbuf_printf(b, "NODE_RANK=${NODE_RANK:?set NODE_RANK (0..%lld) on each node}\n"
                         "MASTER_ADDR=${MASTER_ADDR:?set MASTER_ADDR to node 0}\n",
                      (long long)(nodes - 1));
        else
            pp_sbuf_printf(b, "NODE_RANK=0\nMASTER_ADDR=${MASTER_ADDR:-localhost}\n");
        pp_sbuf_printf(b, "MASTER_PORT=${MASTER_PORT:-6000}\n\n");
    } else if (fmt == PP_LAUNCH_TORCHRUN) {
        if (nodes > 1) pp_sbuf_printf(b, "MASTER_ADDR=${MASTER_ADDR:?set MASTER_ADDR to the rendezvous host}\n");
        else pp_sbuf_printf(b, "MASTER_ADDR=${MASTER_ADDR:-localhost}\n");
        /* the same id on every node (a per-process value would split the rendezvous) */
        pp_launch_sanitize(w->model.name, job, sizeof job, true);
        pp_sbuf_printf(b, "MASTER_PORT=${MASTER_PORT:-29500}\nRDZV_ID=${RDZV_ID:-parplan-%s}\n\n",
                  job[0] ? job : "train");
    } else {
        pp_sbuf_printf(b, "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
                     "MASTER_PORT=${MASTER_PORT:-29500}\n\n");
    }
    write_arrays(b, g);
    pp_sbuf_printf(b, "\n");
    if (fmt == PP_LAUNCH_MEGATRON) {
        pp_sbuf_printf(b, "torchrun --nproc-per-node \"$GPUS_PER_NODE\" --nnodes \"$NNODES\" --node-rank \"$NODE_RANK\" \\\n"
                     "    --master-addr \"$MASTER_ADDR\" --master-port \"$MASTER_PORT\" \\\n"
                     "    \"$MEGATRON_LM/pretrain_gpt.py\"");
    } else if (fmt == PP_LAUNCH_TORCHRUN) {
        pp_sbuf_printf(b, "torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" \\\n"
                     "    --rdzv-id \"$RDZV_ID\" --rdzv-backend c10d --rdzv-endpoint \"$MASTER_ADDR:$MASTER_PORT\" \\\n"
                     "    \"$MEGATRON_LM/pretrain_gpt.py\"");
    } else {
        pp_sbuf_printf(b, "srun --kill-on-bad-exit=1 --ntasks-per-node=1 \\\n"
                     "    torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" \\\n"
                     "    --rdzv-id \"$SLURM_JOB_ID\" --rdzv-backend c10d --rdzv-endpoint \"$MASTER_ADDR:$MASTER_PORT\" \\\n"
                     "    \"$MEGATRON_LM/pretrain_gpt.py\"");
    }
    write_array_refs(b, g);
    free(g);
    return PP_OK;
}
