/* The transformer model: defaults, range checks and the per-tensor parameter table.
 *
 * Parameters are counted tensor by tensor (as llm.c's ParameterTensors does) rather than
 * with a closed form, so that every architectural variant (GQA, SwiGLU, MoE, untied output,
 * RMSNorm, no biases) is one row of a table. For the classic GPT shape (4h GELU MLP, biases,
 * LayerNorm, learned positions, tied output) the sum is exactly Narayanan et al., SC'21,
 * eq. 2: N = 12 L h^2 (1 + 13/(12h) + (V + s)/(12 L h)), plus the 2h of the final LayerNorm
 * that eq. 2 leaves out. tests/model checks both against published counts.
 */
#include "pp.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void pp_model_init(pp_model *m)
{
    memset(m, 0, sizeof *m);
    m->act = PP_ACT_GELU;
    m->norm = PP_NORM_LAYERNORM;
    m->pos = PP_POS_LEARNED;
    m->bias = true;
    m->tied = true;
}

const char *const pp_qk_norm_names[PP_QKNORM_COUNT] = {"none", "head", "full"};
const char *const pp_rope_scaling_names[PP_ROPE_SCALING_COUNT] = {"none", "linear", "llama3", "yarn"};
const char *const pp_router_score_names[PP_ROUTER_SCORE_COUNT] = {"softmax", "sigmoid"};
const char *const pp_router_balance_names[PP_BALANCE_COUNT] = {"none", "aux_loss", "seq_aux_loss",
                                                                "global_aux_loss", "sinkhorn"};
const char *const pp_tensor_scope_names[PP_TS_COUNT] = {"embedding", "layer", "dense", "moe",
                                                         "expert", "final", "output", "mtp"};

int64_t pp_model_q_width(const pp_model *m)
{
    if (m->kv_lora_rank > 0) return m->heads * (m->qk_nope_dim + m->qk_rope_dim);
    return m->heads * m->head_dim;
}

int64_t pp_model_v_head_dim(const pp_model *m)
{
    return m->kv_lora_rank > 0 ? m->v_head_dim : m->head_dim;
}

/* ------------------------------------------------------------------ parameter table */

/* Where the rows go: into a table (pp_model_tensors), or summed by scope and split
 * (pp_model_tensor_sums_get, what the cost models read for every layout of a search). */
typedef struct {
    pp_model_tensor *t;
    pp_model_tensor_sums *sums;
    int n;
} row_sink;

static inline void row_emit(row_sink *k, const char *name, const char *shape, int64_t count,
                            pp_tensor_scope sc, pp_tensor_split sp, int64_t kv)
{
    if (k->t) {
        k->t[k->n++] = (pp_model_tensor){name, shape, count, sc, sp, kv};
        return;
    }
    pp_model_tensor_sums *s = k->sums;
    double c = (double)count;
    s->count[sc][sp] += c - (double)kv;
    s->kv[sc] += (double)kv;
    if (sc >= PP_TS_LAYER && sc <= PP_TS_EXPERT && c > s->layer_largest[sp]) {
        s->layer_largest[sp] = c;
        if (sp == PP_SPLIT_HEADS) s->layer_largest_kv = (double)kv;
    }
}

/* The rows of the table. m must be validated (derived fields set). */
static void model_rows(const pp_model *m, row_sink *k)
{
    const int64_t h = m->hidden, V = m->vocab, s = m->seq, f = m->ffn;
    const int64_t fe = pp_model_expert_ffn(m), E = m->experts > 1 ? m->experts : 0;
    const int64_t a = m->heads, d = m->head_dim;
    const int64_t q = pp_model_q_width(m);      /* query width (= h for the usual shapes) */
    const int64_t kv = m->kv_heads * m->head_dim; /* key and value width each (GQA: g * d) */
    const bool ln = m->norm == PP_NORM_LAYERNORM; /* LayerNorm has a bias, RMSNorm has not */
    const int64_t nw = ln ? 2 : 1;                /* elements per normalised feature */
    const int64_t extra_norms = m->norms_per_layer > 2 ? (m->norms_per_layer - 2) / 2 : 0;
    const bool gated = pp_act_info(m->act) && pp_act_info(m->act)->gated;
    /* `bias` (every linear layer) implies the three part flags, also on a model not yet
     * validated. */
    const bool qkv_bias = m->qkv_bias || m->bias, out_bias = m->out_bias || m->bias;
    const bool mlp_bias = m->mlp_bias || m->bias;
#define ROWS(nm, sh, c, sc, sp, kvp) row_emit(k, nm, sh, (c), sc, sp, kvp)
#define ROW(nm, sh, c, sc, sp) ROWS(nm, sh, c, sc, sp, 0)
    ROW("wte", "V*h", V * h, PP_TS_EMBED, PP_SPLIT_VOCAB);
    if (m->pos == PP_POS_LEARNED) ROW("wpe", "s*h", s * h, PP_TS_EMBED, PP_SPLIT_REPLICATED);
    /* Attention block: its pre-norm (and Gemma's post-norm), projections, QK-norm, sinks. */
    ROW("ln1", ln ? "2h" : "h", nw * h, PP_TS_LAYER, PP_SPLIT_REPLICATED);
    if (extra_norms) ROW("ln1_post", ln ? "2h" : "h", nw * h * extra_norms, PP_TS_LAYER, PP_SPLIT_REPLICATED);
    if (m->kv_lora_rank > 0) {
        /* MLA (DeepSeek-V2 eq. 9-13): low-rank query (optional) and joint KV compression, the
         * decoupled RoPE key shared by all heads, up-projections to a (nope + rope) and a v. */
        const int64_t nope = m->qk_nope_dim, rope = m->qk_rope_dim, vd = m->v_head_dim;
        const int64_t ql = m->q_lora_rank, kvl = m->kv_lora_rank;
        if (ql > 0) {
            ROW("q_down", "h*q_lora", h * ql, PP_TS_LAYER, PP_SPLIT_REPLICATED);
            ROW("q_down_norm", "q_lora", ql, PP_TS_LAYER, PP_SPLIT_REPLICATED);
            ROW("q_up", "q_lora*a*(nope+rope)", ql * q, PP_TS_LAYER, PP_SPLIT_COLUMN);
        } else {
            ROW("q_proj", "h*a*(nope+rope)", h * q, PP_TS_LAYER, PP_SPLIT_COLUMN);
        }
        ROW("kv_down", "h*(kv_lora+rope)", h * (kvl + rope), PP_TS_LAYER, PP_SPLIT_REPLICATED);
        ROW("kv_down_norm", "kv_lora", kvl, PP_TS_LAYER, PP_SPLIT_REPLICATED);
        ROW("kv_up", "kv_lora*a*(nope+v)", kvl * a * (nope + vd), PP_TS_LAYER, PP_SPLIT_COLUMN);
        ROW("proj.weight", "a*v*h", a * vd * h, PP_TS_LAYER, PP_SPLIT_ROW);
    } else {
        ROWS("qkv.weight", "h*(a*d + 2*g*d)", h * (q + 2 * kv), PP_TS_LAYER, PP_SPLIT_HEADS, h * 2 * kv);
        if (qkv_bias) ROWS("qkv.bias", "a*d + 2*g*d", q + 2 * kv, PP_TS_LAYER, PP_SPLIT_HEADS, 2 * kv);
        ROW("proj.weight", "a*d*h", q * h, PP_TS_LAYER, PP_SPLIT_ROW);
    }
    if (out_bias) ROW("proj.bias", "h", h, PP_TS_LAYER, PP_SPLIT_REPLICATED);
    if (m->qk_norm == PP_QKNORM_HEAD) ROW("qk_norm", "2*d", 2 * d, PP_TS_LAYER, PP_SPLIT_REPLICATED);
    if (m->qk_norm == PP_QKNORM_FULL) ROWS("qk_norm", "a*d + g*d", q + kv, PP_TS_LAYER, PP_SPLIT_HEADS, kv);
    if (m->attn_sinks) ROW("sinks", "a", a, PP_TS_LAYER, PP_SPLIT_COLUMN);
    /* MLP block of a dense layer. */
    ROW("ln2", ln ? "2h" : "h", nw * h, PP_TS_DENSE, PP_SPLIT_REPLICATED);
    if (extra_norms) ROW("ln2_post", ln ? "2h" : "h", nw * h * extra_norms, PP_TS_DENSE, PP_SPLIT_REPLICATED);
    if (gated) {
        /* Gated MLP (Shazeer 2020): gate and up h->f, down f->h. */
        ROW("fc_gate_up.weight", "2*h*f", 2 * h * f, PP_TS_DENSE, PP_SPLIT_COLUMN);
        if (mlp_bias) ROW("fc_gate_up.bias", "2*f", 2 * f, PP_TS_DENSE, PP_SPLIT_COLUMN);
    } else {
        ROW("fc1.weight", "h*f", h * f, PP_TS_DENSE, PP_SPLIT_COLUMN);
        if (mlp_bias) ROW("fc1.bias", "f", f, PP_TS_DENSE, PP_SPLIT_COLUMN);
    }
    ROW("fc2.weight", "f*h", f * h, PP_TS_DENSE, PP_SPLIT_ROW);
    if (mlp_bias) ROW("fc2.bias", "h", h, PP_TS_DENSE, PP_SPLIT_REPLICATED);
    if (E > 0) {
        /* MLP block of an MoE layer: norm, router, shared experts (one dense MLP of the summed
         * size, as Megatron builds them), routed experts. */
        ROW("moe.ln2", ln ? "2h" : "h", nw * h, PP_TS_MOE, PP_SPLIT_REPLICATED);
        if (extra_norms) ROW("moe.ln2_post", ln ? "2h" : "h", nw * h * extra_norms, PP_TS_MOE, PP_SPLIT_REPLICATED);
        ROW("router.weight", "h*E", h * E, PP_TS_MOE, PP_SPLIT_REPLICATED);
        if (m->router_bias) ROW("router.bias", "E", E, PP_TS_MOE, PP_SPLIT_REPLICATED);
        if (m->shared_ffn > 0) {
            const int64_t fs = m->shared_ffn;
            ROW("shared.fc1", gated ? "2*h*fs" : "h*fs", (gated ? 2 : 1) * h * fs, PP_TS_MOE, PP_SPLIT_COLUMN);
            ROW("shared.fc2", "fs*h", fs * h, PP_TS_MOE, PP_SPLIT_ROW);
            if (m->shared_gate) ROW("shared.gate", "h", h, PP_TS_MOE, PP_SPLIT_REPLICATED);
        }
        ROW("expert.fc1", gated ? "2*h*fe" : "h*fe", (gated ? 2 : 1) * h * fe, PP_TS_EXPERT, PP_SPLIT_EXPERT_TP);
        if (mlp_bias)
            ROW("expert.fc1.bias", gated ? "2*fe" : "fe", (gated ? 2 : 1) * fe, PP_TS_EXPERT, PP_SPLIT_EXPERT_TP);
        ROW("expert.fc2", "fe*h", fe * h, PP_TS_EXPERT, PP_SPLIT_EXPERT_TP);
        if (mlp_bias) ROW("expert.fc2.bias", "h", h, PP_TS_EXPERT, PP_SPLIT_EXPERT);
    }
    ROW("ln_f", ln ? "2h" : "h", nw * h, PP_TS_FINAL, PP_SPLIT_REPLICATED);
    if (!m->tied) ROW("lm_head.weight", "V*h", V * h, PP_TS_OUTPUT, PP_SPLIT_VOCAB);
    if (m->mtp_layers > 0) {
        /* DeepSeek-V3 MTP module: RMSNorm of the hidden state and of the next token's
         * embedding, the 2h -> h projection, and its own final norm before the shared head. */
        ROW("mtp.norms", "3h", 3 * nw * h, PP_TS_MTP, PP_SPLIT_REPLICATED);
        ROW("mtp.eh_proj", "2h*h", 2 * h * h, PP_TS_MTP, PP_SPLIT_COLUMN);
    }
#undef ROW
#undef ROWS
}

int pp_model_tensors(const pp_model *m, pp_model_tensor *t)
{
    row_sink k = {t, NULL, 0};
    model_rows(m, &k);
    return k.n;
}

void pp_model_tensor_sums_get(const pp_model *m, pp_model_tensor_sums *out)
{
    memset(out, 0, sizeof *out);
    row_sink k = {NULL, out, 0};
    model_rows(m, &k);
}

void pp_model_params(const pp_model *m, pp_param_count *out)
{
    memset(out, 0, sizeof *out);
    pp_model_tensor t[PP_MODEL_MAX_TENSORS];
    int n = pp_model_tensors(m, t);
    for (int i = 0; i < n; i++) {
        int64_t c = t[i].count;
        switch (t[i].scope) {
        case PP_TS_EMBED: out->embedding += c; break;
        case PP_TS_LAYER: out->attention += c; break;
        case PP_TS_DENSE: out->dense_mlp += c; break;
        case PP_TS_MOE: out->moe_shared += c; break;
        case PP_TS_EXPERT: out->expert += c; break;
        case PP_TS_FINAL: out->final_norm += c; break;
        case PP_TS_OUTPUT: out->output += c; break;
        case PP_TS_MTP: out->mtp_extra += c; break;
        case PP_TS_COUNT: break;
        }
    }
    out->moe_layers = pp_model_moe_layers(m);
    out->dense_layers = m->layers - out->moe_layers;
    const int64_t E = m->experts > 1 ? m->experts : 0, k = m->experts > 1 ? m->topk : 0;
    const int64_t moe_layer = out->attention + out->moe_shared + E * out->expert;
    const int64_t moe_active = out->attention + out->moe_shared + k * out->expert;
    const int64_t dense_layer = out->attention + out->dense_mlp;
    out->per_layer = out->moe_layers > 0 ? moe_layer : dense_layer;
    out->layer_active = out->moe_layers > 0 ? moe_active : dense_layer;
    out->attention_total = m->layers * out->attention;
    out->dense_mlp_total = out->dense_layers * out->dense_mlp;
    out->moe_shared_total = out->moe_layers * out->moe_shared;
    out->experts_total = out->moe_layers * E * out->expert;
    int64_t rest = out->embedding + out->final_norm + out->output;
    out->total = out->attention_total + out->dense_mlp_total + out->moe_shared_total +
                 out->experts_total + rest;
    out->active = out->attention_total + out->dense_mlp_total + out->moe_shared_total +
                  out->moe_layers * k * out->expert + rest;
    bool mtp_moe = pp_model_mtp_kind(m) & PP_LAYER_MOE;
    out->mtp_total = m->mtp_layers * ((mtp_moe ? moe_layer : dense_layer) + out->mtp_extra);
}

/* Upper bounds: far beyond any real model, low enough that no product overflows int64
 * once the total (checked in double below) is under PP_MODEL_MAX_PARAMS. */
#define PP_MODEL_MAX_DIM 10000000.0     /* hidden, heads, head_dim, ffn, layers */
#define PP_MODEL_MAX_VOCAB 100000000.0
#define PP_MODEL_MAX_SEQ 100000000.0
#define PP_MODEL_MAX_EXPERTS 100000.0
#define PP_MODEL_MAX_PARAMS 1e16        /* house rule: no overflow up to 1e15 parameters */

#define BAD(...) pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, __VA_ARGS__)

static pp_status check_range(const char *field, int64_t v, double lo, double hi, pp_error *err)
{
    if ((double)v < lo || (double)v > hi)
        return BAD("%s must be between %.0f and %.0f, got %lld", field, lo, hi, (long long)v);
    return PP_OK;
}

/* The fields that define the model beyond its shapes (pp.h): defaults for what is not given,
 * ranges, and what needs what. Defaults: norm epsilon 1e-5 (torch.nn.LayerNorm's and Megatron's
 * --norm-epsilon); RoPE base 10000 (Su et al. 2021, RoFormer; every transformers config class's);
 * the context the model serves, seq; Llama 3.1's bands 1 and 4 and YaRN's betas 32 and 1 and
 * mscale 1 (Peng et al. 2023; transformers modeling_rope_utils.py); router factor 1. */
static pp_status validate_definition(pp_model *m, pp_error *err)
{
    if (m->max_context == 0) m->max_context = m->seq;
    if (m->max_context < 0 || (double)m->max_context > PP_MODEL_MAX_SEQ)
        return BAD("max_context must be between 1 and %.0f, got %lld", PP_MODEL_MAX_SEQ, (long long)m->max_context);
    if (m->norm_eps == 0) m->norm_eps = 1e-5;
    if (!isfinite(m->norm_eps) || m->norm_eps <= 0 || m->norm_eps >= 1)
        return BAD("norm_eps must be in (0, 1), got %g", m->norm_eps);
    if ((unsigned)m->rope_scaling >= PP_ROPE_SCALING_COUNT) return BAD("rope_scaling is not one of none|linear|llama3|yarn");
    bool rope = m->pos == PP_POS_ROPE, yarn = m->rope_scaling == PP_ROPE_SCALING_YARN;
    bool llama3 = m->rope_scaling == PP_ROPE_SCALING_LLAMA3;
    if (!rope && (m->rope_theta || m->rope_local_theta || m->rope_scaling || m->rope_factor || m->rope_original_context))
        return BAD("rope_theta, rope_local_theta and the rope scaling keys need position rope");
    if (rope && m->rope_theta == 0) m->rope_theta = 10000;
    if (!isfinite(m->rope_theta) || m->rope_theta < 0 || m->rope_theta > 1e12 || !isfinite(m->rope_local_theta) ||
        m->rope_local_theta < 0 || m->rope_local_theta > 1e12)
        return BAD("rope_theta and rope_local_theta must be between 0 and 1e12");
    if (!m->rope_scaling && (m->rope_factor || m->rope_original_context || m->rope_low_freq || m->rope_high_freq))
        return BAD("rope_factor and rope_original_context need rope_scaling");
    if (m->rope_scaling && (!isfinite(m->rope_factor) || m->rope_factor <= 0 || m->rope_factor > 1e6))
        return BAD("rope_factor must be in (0, 1e6] with rope_scaling %s, got %g", pp_rope_scaling_names[m->rope_scaling],
                   m->rope_factor);
    if (!llama3 && (m->rope_low_freq || m->rope_high_freq))
        return BAD("rope_low_freq and rope_high_freq need rope_scaling llama3");
    if (!yarn && (m->yarn_beta_fast || m->yarn_beta_slow || m->yarn_mscale || m->yarn_mscale_all_dim || m->yarn_no_truncate))
        return BAD("the yarn_ keys need rope_scaling yarn");
    if ((llama3 || yarn) && m->rope_original_context < 1)
        return BAD("rope_original_context must be given with rope_scaling %s", pp_rope_scaling_names[m->rope_scaling]);
    if (m->rope_original_context < 0 || (double)m->rope_original_context > PP_MODEL_MAX_SEQ)
        return BAD("rope_original_context must be between 0 and %.0f", PP_MODEL_MAX_SEQ);
    if (llama3) {
        if (m->rope_low_freq == 0) m->rope_low_freq = 1;
        if (m->rope_high_freq == 0) m->rope_high_freq = 4;
        if (!(m->rope_low_freq > 0 && m->rope_high_freq > m->rope_low_freq && m->rope_high_freq < 1e6))
            return BAD("rope_low_freq and rope_high_freq must be 0 < low < high, got %g and %g", m->rope_low_freq,
                       m->rope_high_freq);
    }
    if (yarn) {
        if (m->yarn_beta_fast == 0) m->yarn_beta_fast = 32;
        if (m->yarn_beta_slow == 0) m->yarn_beta_slow = 1;
        if (m->yarn_mscale == 0) m->yarn_mscale = 1;
        if (!(m->yarn_beta_fast > 0 && m->yarn_beta_fast < 1e6 && m->yarn_beta_slow > 0 && m->yarn_beta_slow < 1e6 &&
              m->yarn_mscale > 0 && m->yarn_mscale < 1e6 && m->yarn_mscale_all_dim >= 0 && m->yarn_mscale_all_dim < 1e6))
            return BAD("yarn_beta_fast, yarn_beta_slow and yarn_mscale must be in (0, 1e6), yarn_mscale_all_dim in [0, 1e6)");
    }
    /* the router */
    if ((unsigned)m->router_score >= PP_ROUTER_SCORE_COUNT) return BAD("router_score is not one of softmax|sigmoid");
    if ((unsigned)m->router_balance >= PP_BALANCE_COUNT)
        return BAD("router_balance is not one of none|aux_loss|seq_aux_loss|global_aux_loss|sinkhorn");
    if (m->router_scale == 0) m->router_scale = 1;
    if (!isfinite(m->router_scale) || m->router_scale <= 0 || m->router_scale > 1e6 || !isfinite(m->router_aux_coef) ||
        m->router_aux_coef < 0 || m->router_aux_coef > 1e6 || !isfinite(m->router_z_coef) || m->router_z_coef < 0 ||
        m->router_z_coef > 1e6)
        return BAD("router_scale must be in (0, 1e6], router_aux_coef and router_z_coef in [0, 1e6]");
    if (m->experts <= 1 && (m->router_score || m->router_raw_topk || m->router_scale != 1 || m->router_groups ||
                            m->router_group_topk || m->router_expert_bias || m->router_balance ||
                            m->router_aux_coef || m->router_z_coef))
        return BAD("the router keys need experts > 1");
    if (m->router_aux_coef > 0 && (m->router_balance == PP_BALANCE_NONE || m->router_balance == PP_BALANCE_SINKHORN))
        return BAD("router_aux_coef %g needs router_balance aux_loss, seq_aux_loss or global_aux_loss", m->router_aux_coef);
    if (m->router_groups < 0 || m->router_group_topk < 0 || (m->router_groups > 0) != (m->router_group_topk > 0))
        return BAD("router_groups and router_group_topk are given together");
    if (m->router_groups > 0 && (m->experts % m->router_groups || m->router_group_topk > m->router_groups))
        return BAD("router_groups %lld must divide the %lld experts and be at least router_group_topk %lld",
                   (long long)m->router_groups, (long long)m->experts, (long long)m->router_group_topk);
    if (m->router_expert_bias && (m->router_score != PP_ROUTER_SIGMOID || !m->router_bias))
        return BAD("router_expert_bias needs router_score sigmoid and router_bias (DeepSeek-V3 sec. 2.1.2)");
    return PP_OK;
}

pp_status pp_model_validate(pp_model *m, pp_error *err)
{
    pp_status st;
    if ((unsigned)m->act >= PP_ACT_COUNT) return BAD("activation is not one of parplan's (pp_activations)");
    if ((unsigned)m->norm >= PP_NORM_COUNT) return BAD("norm is not one of layernorm|rmsnorm");
    if ((unsigned)m->pos >= PP_POS_COUNT) return BAD("position is not one of learned|rope|alibi|none");
    if ((st = check_range("layers", m->layers, 1, PP_MODEL_MAX_DIM, err))) return st;
    if ((st = check_range("hidden", m->hidden, 1, PP_MODEL_MAX_DIM, err))) return st;
    if ((st = check_range("heads", m->heads, 1, PP_MODEL_MAX_DIM, err))) return st;
    if ((st = check_range("vocab", m->vocab, 1, PP_MODEL_MAX_VOCAB, err))) return st;
    if ((st = check_range("seq", m->seq, 1, PP_MODEL_MAX_SEQ, err))) return st;
    if (m->kv_heads == 0) m->kv_heads = m->heads; /* MHA unless told otherwise */
    if ((st = check_range("kv_heads", m->kv_heads, 1, (double)m->heads, err))) return st;
    if (m->heads % m->kv_heads)
        return BAD("kv_heads %lld does not divide heads %lld", (long long)m->kv_heads,
                   (long long)m->heads);
    /* MLA: queries and keys are nope + rope wide per head (DeepSeek-V2 eq. 14-17). */
    if (m->head_dim == 0 && m->kv_lora_rank > 0) m->head_dim = m->qk_nope_dim + m->qk_rope_dim;
    if (m->head_dim == 0) {
        if (m->hidden % m->heads)
            return BAD("hidden %lld is not divisible by heads %lld (give head_dim explicitly)",
                       (long long)m->hidden, (long long)m->heads);
        m->head_dim = m->hidden / m->heads;
    }
    if ((st = check_range("head_dim", m->head_dim, 1, PP_MODEL_MAX_DIM, err))) return st;
    if (m->ffn == 0) {
        if (pp_activations[m->act].gated)
            /* LLaMA (Touvron et al. 2023, sec. 2.2) keeps the MLP's parameters at 8h^2:
             * f = 2/3 * 4h, rounded up to a multiple of 256 (11008 for h = 4096). */
            m->ffn = ((8 * m->hidden / 3 + 255) / 256) * 256;
        else
            m->ffn = 4 * m->hidden; /* GPT-2/3, Megatron: 4h (Vaswani et al. 2017) */
    }
    if ((st = check_range("ffn", m->ffn, 1, PP_MODEL_MAX_DIM, err))) return st;
    if ((st = check_range("experts", m->experts, 0, PP_MODEL_MAX_EXPERTS, err))) return st;
    if (m->experts > 1) {
        if (m->topk < 1) return BAD("topk must be at least 1 for a model with %lld experts",
                                    (long long)m->experts);
        if (m->topk > m->experts)
            return BAD("topk %lld is more than the %lld experts", (long long)m->topk,
                       (long long)m->experts);
    } else if (m->topk > 1) {
        return BAD("topk %lld needs experts > 1", (long long)m->topk);
    }
    if ((st = check_range("topk", m->topk, 0, PP_MODEL_MAX_EXPERTS, err))) return st;
    if (m->bias) m->qkv_bias = m->out_bias = m->mlp_bias = true;
    if ((unsigned)m->qk_norm >= PP_QKNORM_COUNT) return BAD("qk_norm is not one of none|head|full");
    if (m->norms_per_layer == 0) m->norms_per_layer = 2;
    if (m->norms_per_layer != 2 && m->norms_per_layer != 4)
        return BAD("norms_per_layer must be 2 or 4, got %lld", (long long)m->norms_per_layer);
    if ((st = check_range("window", m->window, 0, PP_MODEL_MAX_SEQ, err))) return st;
    if ((st = check_range("window_full_every", m->window_full_every, 0, PP_MODEL_MAX_DIM, err))) return st;
    if ((st = check_range("window_full_phase", m->window_full_phase, 0,
                          m->window_full_every > 0 ? (double)m->window_full_every - 1 : 0, err)))
        return st;
    if (m->window == 0 && m->window_full_every > 0)
        return BAD("window_full_every %lld needs a window", (long long)m->window_full_every);
    /* MLA */
    if ((st = check_range("kv_lora_rank", m->kv_lora_rank, 0, PP_MODEL_MAX_DIM, err))) return st;
    if ((st = check_range("q_lora_rank", m->q_lora_rank, 0, PP_MODEL_MAX_DIM, err))) return st;
    if ((st = check_range("qk_nope_dim", m->qk_nope_dim, 0, PP_MODEL_MAX_DIM, err))) return st;
    if ((st = check_range("qk_rope_dim", m->qk_rope_dim, 0, PP_MODEL_MAX_DIM, err))) return st;
    if ((st = check_range("v_head_dim", m->v_head_dim, 0, PP_MODEL_MAX_DIM, err))) return st;
    if (m->kv_lora_rank > 0) {
        if (m->qk_nope_dim < 1 || m->qk_rope_dim < 1 || m->v_head_dim < 1)
            return BAD("kv_lora_rank %lld (MLA) needs qk_nope_dim, qk_rope_dim and v_head_dim",
                       (long long)m->kv_lora_rank);
        if (m->kv_heads != m->heads)
            return BAD("kv_heads %lld: multi-latent attention has one key/value per head (%lld)",
                       (long long)m->kv_heads, (long long)m->heads);
    } else if (m->q_lora_rank || m->qk_nope_dim || m->qk_rope_dim || m->v_head_dim) {
        return BAD("q_lora_rank, qk_nope_dim, qk_rope_dim and v_head_dim need kv_lora_rank (MLA)");
    }
    /* MoE */
    if ((st = check_range("moe_ffn", m->moe_ffn, 0, PP_MODEL_MAX_DIM, err))) return st;
    if ((st = check_range("shared_ffn", m->shared_ffn, 0, PP_MODEL_MAX_DIM, err))) return st;
    if ((st = check_range("shared_experts", m->shared_experts, 0, PP_MODEL_MAX_EXPERTS, err))) return st;
    if ((st = check_range("moe_first_dense", m->moe_first_dense, 0, (double)m->layers, err))) return st;
    if ((st = check_range("moe_every", m->moe_every, 0, PP_MODEL_MAX_DIM, err))) return st;
    if ((st = check_range("moe_phase", m->moe_phase, 0,
                          m->moe_every > 1 ? (double)m->moe_every - 1 : 0, err)))
        return st;
    if ((st = check_range("mtp_layers", m->mtp_layers, 0, 64, err))) return st;
    if (m->n_dense_layers < 0 || m->n_dense_layers > PP_MODEL_MAX_LIST)
        return BAD("dense_layers holds at most %d layers", PP_MODEL_MAX_LIST);
    for (int64_t i = 0; i < m->n_dense_layers; i++)
        if (m->dense_layers[i] < 0 || m->dense_layers[i] >= m->layers)
            return BAD("dense_layers: layer %lld is not one of the %lld layers",
                       (long long)m->dense_layers[i], (long long)m->layers);
    if (m->experts <= 1 && (m->moe_ffn || m->shared_ffn || m->shared_experts || m->moe_first_dense ||
                            m->moe_every > 1 || m->n_dense_layers || m->shared_gate || m->router_bias))
        return BAD("moe_ffn, shared experts and the MoE layer pattern need experts > 1");
    if (m->shared_experts > 0 && m->shared_ffn == 0)
        return BAD("shared_experts %lld needs shared_ffn (their total inner size)",
                   (long long)m->shared_experts);
    if (m->experts > 1) {
        int64_t moe = 0;
        for (int64_t i = 0; i < m->layers && moe == 0; i++) moe += pp_model_layer_is_moe(m, i);
        if (!moe) return BAD("experts %lld: the MoE layer pattern leaves no MoE layer", (long long)m->experts);
    }
    /* dropout */
    if (!isfinite(m->attention_dropout) || m->attention_dropout < 0 || m->attention_dropout >= 1 ||
        !isfinite(m->hidden_dropout) || m->hidden_dropout < 0 || m->hidden_dropout >= 1)
        return BAD("attention_dropout and hidden_dropout must be in [0, 1)");
    if (!isfinite(m->published_active) || m->published_active < 0 ||
        m->published_active > PP_MODEL_MAX_PARAMS)
        return BAD("published_active must be between 0 and %g", PP_MODEL_MAX_PARAMS);
    if ((st = check_range("gbs", m->gbs, 0, PP_MAX_GBS, err))) return st;
    if ((st = validate_definition(m, err))) return st;
    if (!isfinite(m->published_params) || m->published_params < 0 ||
        m->published_params > PP_MODEL_MAX_PARAMS)
        return BAD("published_params must be between 0 and %g", PP_MODEL_MAX_PARAMS);

    /* The total in double first: the int64 table below cannot overflow after this. An upper
     * bound of every row: attention (MLA or not), dense MLP, shared experts, experts. */
    double h = (double)m->hidden, f = (double)m->ffn, d = (double)m->head_dim;
    double fe = (double)pp_model_expert_ffn(m), a = (double)m->heads;
    double E = m->experts > 1 ? (double)m->experts : 1.0;
    double mla = (double)m->qk_nope_dim + (double)m->qk_rope_dim + (double)m->v_head_dim;
    double attn = h * d * (a * 2 + (double)m->kv_heads * 2) +
                  ((double)m->q_lora_rank + (double)m->kv_lora_rank + h) * (a * mla + h + mla);
    double layer = attn + 3.0 * h * f + E * 3.0 * (h + 1) * (fe + 1) +
                   3.0 * (h + 1) * ((double)m->shared_ffn + 1) + h * E + 16.0 * h + 3.0 * f + E;
    double total = ((double)m->layers + (double)m->mtp_layers) * layer +
                   2.0 * (double)m->vocab * h + (double)m->seq * h + 4.0 * h * h;
    if (total > PP_MODEL_MAX_PARAMS)
        return BAD("the model has about %.3g parameters, more than the %g supported", total,
                   PP_MODEL_MAX_PARAMS);
    return PP_OK;
}

/* ------------------------------------------------------------------ GPU */

void pp_gpu_init(pp_gpu *g) { memset(g, 0, sizeof *g); }

pp_status pp_gpu_validate(pp_gpu *g, pp_error *err)
{
    struct { const char *field; double v, lo, hi; } r[] = {
        /* memory: 1 GiB .. 1 PiB; bandwidths in GB/s; FLOP/s up to 1e18 (1 EFLOP/s) */
        {"memory_bytes", g->memory_bytes, 1073741824.0, 1125899906842624.0},
        {"mem_bw_gbs", g->mem_bw_gbs, 1, 1e6},
        {"nvlink_gbs", g->nvlink_gbs, 0, 1e6},
        {"pcie_gbs", g->pcie_gbs, 0.1, 1e5},
        {"internode_gbs", g->internode_gbs, 0, 1e6},
        {"gemm_eff", g->gemm_eff, 0.01, 1},
        {"intra_latency_us", g->intra_latency_s * 1e6, 0, 1e6},
        {"inter_latency_us", g->inter_latency_s * 1e6, 0, 1e6},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (!isfinite(r[i].v) || r[i].v < r[i].lo || r[i].v > r[i].hi)
            return BAD("%s must be between %g and %g, got %g", r[i].field, r[i].lo, r[i].hi, r[i].v);
    for (int i = 0; i < PP_DT_COUNT; i++)
        if (!isfinite(g->peak_flops[i]) || g->peak_flops[i] < 0 || g->peak_flops[i] > 1e18)
            return BAD("flops.%s must be between 0 and 1e6 TFLOP/s", pp_dtype_names[i]);
    if (g->peak_flops[PP_DT_BF16] <= 0 && g->peak_flops[PP_DT_FP16] <= 0)
        return BAD("flops: bf16 or fp16 must be given (the planner trains in 16-bit)");
    if (g->gpus_per_node < 1 || g->gpus_per_node > 1000000)
        return BAD("gpus_per_node must be between 1 and 1000000, got %lld",
                   (long long)g->gpus_per_node);
    /* 0: not stated (the time model's default); a stated fraction as the loader's range */
    if (!isfinite(g->gemm_sustained) || (g->gemm_sustained != 0 && (g->gemm_sustained < 0.5 || g->gemm_sustained > 1)))
        return BAD("gemm_sustained must be between 0.5 and 1, got %g", g->gemm_sustained);
    if (!isfinite(g->max_power_w) || g->max_power_w < 0 || g->max_power_w > 1e5)
        return BAD("max_power_w must be between 1 and 100000 W, got %g", g->max_power_w);
    /* a variant's lower default limit: the same range as --gpu-power-w (gpu_power.c) */
    if (g->power_w != 0) return pp_gpu_power_check(g, g->power_w, "gpu_power_w", err);
    return PP_OK;
}
