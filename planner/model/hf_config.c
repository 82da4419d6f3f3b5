/* Hugging Face config.json: `--model path/to/config.json`.
 *
 * A config goes through the same libyaml document path and key tables as our schema
 * (loader.c): JSON is YAML 1.2 in the flow style. Unknown keys are ignored (configs carry dozens
 * of unrelated ones); a known key with the wrong type is an error at its file:line:col; `null`
 * counts as absent, except where a number is required, which is an error at the null. What a
 * key means is what transformers' configuration and modeling code for that model_type makes of
 * it (src/transformers/models/<type>/configuration_<type>.py, modeling_<type>.py: cited where
 * a rule comes from). A key that changes the model's shape in a way pp_model cannot represent
 * (a sliding window from layer n on, latent attention on a model type without it, experts on a
 * dense type, ...) is an error naming the key, never ignored; a key a config leaves out takes
 * the default of transformers' config class, as transformers itself does (Gemma 3's text_config
 * has no vocab_size).
 *
 * This file holds the decoder families (the Llama lineage, with their defaults) and the other
 * families (GPT-2, GPT-NeoX, OPT, BLOOM, Falcon, BERT), the norm and RoPE definition, validation
 * messages and the entry point. The key table and reading keys are in hf_keys.c; what varies by
 * layer (latent attention, experts, the router, windows) is in hf_config_layers.c.
 */
#include "hf_config_layers.h"

#include <stdio.h>
#include <string.h>

bool pp_hf_is_config(pp_yaml *y, yaml_node_t *root)
{
    static const char *const marks[] = {"model_type", "architectures", "hidden_size", "n_embd",
                                        "num_hidden_layers", "n_layer", "_name_or_path",
                                        "transformers_version"};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (pp_yaml_lookup(y, root, marks[i], true)) return true;
    return false;
}

/* The non-gated MLPs' activation, by its Hugging Face spelling (pp_activations). */
static pp_status hf_plain_act(const pp_hf_ctx *h, int id, const char *dflt, pp_act *out)
{
    const char *a = pp_hf_has(h, id) ? (const char *)h->c + pp_hf_keys[id].off : dflt;
    int act = pp_act_from_hf(a, false);
    if (act < 0) {
        char list[256] = "";
        size_t k = 0;
        for (int i = 0; i < PP_ACT_COUNT; i++)
            if (!pp_activations[i].gated && k < sizeof list)
                k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", k ? ", " : "", pp_activations[i].hf);
        return pp_hf_fail(h, id, "activation '%s' is not supported (%s)", a, list);
    }
    *out = (pp_act)act;
    return PP_OK;
}

/* Dropout as the config states it, in any of its spellings: attention_dropout (Llama lineage,
 * GPT-NeoX, OPT, BLOOM), attn_pdrop / resid_pdrop (GPT-2, Phi-3), attention_probs_dropout_prob /
 * hidden_dropout_prob (BERT), hidden_dropout (GPT-NeoX, BLOOM, Falcon), OPT's `dropout` (its
 * hidden dropout: OPTDecoderLayer applies it after attention and the MLP). When the file states
 * one of the two, the other is its config class's default (dflt_*); when it states neither,
 * the model says nothing (dropout_set false, pp_model_dropout's rule). */
static void hf_dropout(const pp_hf_ctx *h, pp_model *m, double dflt_attention, double dflt_hidden)
{
    static const int att[] = {H_ATTN_DROPOUT, H_ATTN_PDROP, H_ATTN_PROBS_DROPOUT};
    static const int hid[] = {H_HIDDEN_DROPOUT, H_RESID_PDROP, H_HIDDEN_DROPOUT_PROB, H_DROPOUT};
    m->attention_dropout = dflt_attention;
    m->hidden_dropout = dflt_hidden;
    for (int pass = 0; pass < 2; pass++) {
        const int *ids = pass ? hid : att;
        int n = pass ? 4 : 3;
        for (int i = 0; i < n; i++)
            if (pp_hf_has(h, ids[i])) {
                double v = *(const double *)((const char *)h->c + pp_hf_keys[ids[i]].off);
                *(pass ? &m->hidden_dropout : &m->attention_dropout) = v;
                m->dropout_set = true;
                break;
            }
    }
    if (!m->dropout_set) m->attention_dropout = m->hidden_dropout = 0;
}

/* The shape keys most families spell alike: hidden_size, the MLP size (ffn_id), heads, layers,
 * vocab_size, max_position_embeddings (vocab, max_pos: the config class's defaults, 0 when the
 * key is required). */
static pp_status hf_shape(const pp_hf_ctx *h, int ffn_id, int64_t vocab, int64_t max_pos, pp_model *m)
{
    pp_status st;
    HF_INT(&m->hidden, true, H_HIDDEN_SIZE);
    if ((st = pp_hf_int(h, &ffn_id, 1, true, &m->ffn))) return st;
    HF_INT(&m->heads, true, H_NUM_HEADS);
    HF_INT(&m->layers, true, H_NUM_LAYERS);
    m->vocab = vocab;
    HF_INT(&m->vocab, vocab == 0, H_VOCAB);
    m->seq = max_pos;
    HF_INT(&m->seq, max_pos == 0, H_MAX_POS);
    m->max_context = m->seq; /* the training length is not in the file: the CLI asks for --seq */
    return PP_OK;
}

/* LayerNorm and the rest of the GPT lineage's choices. */
static void hf_gpt_like(pp_model *m, pp_pos pos, bool bias, bool tied)
{
    m->norm = PP_NORM_LAYERNORM;
    m->pos = pos;
    m->bias = bias;
    m->tied = tied;
}

/* ================================================================== the decoder families */

/* Defaults: the config classes' (configuration_<type>.py), rms_norm_eps and rope_theta last
 * (DeepseekV3Config's for kimi_k2). Layer patterns: the comments. */
static const pp_hf_family hf_families[] = {
    {"llama", MOE_NONE, WIN_NONE, HF_ATTN_BIAS_KEY | HF_MLP_BIAS_KEY, 0, 0, 0, false, 0, 0, 0, 1e-6, 1e4},
    /* MistralAttention, MixtralAttention, Phi3Attention pass config.sliding_window to every layer */
    {"mistral", MOE_NONE, WIN_ALL, 0, 0, 0, 0, false, 0, 0, 0, 1e-6, 1e4},
    {"mixtral", MOE_MIXTRAL, WIN_ALL, 0, 0, 0, 0, false, 0, 0, 0, 1e-5, 1e6},
    {"phi3", MOE_NONE, WIN_ALL, 0, 0, 0, 0, false, 0, 0, 0, 1e-5, 1e4},
    {"qwen2", MOE_NONE, WIN_QWEN, HF_QKV_BIAS, 0, 0, 0, false, 0, 0, 0, 1e-6, 1e4},
    {"qwen2_moe", MOE_QWEN2, WIN_QWEN2_MOE, HF_QKV_BIAS_KEY, 0, 0, 0, false, 0, 0, 0, 1e-6, 1e4},
    /* Qwen3Config: head_dim 128 */
    {"qwen3", MOE_NONE, WIN_QWEN, HF_ATTN_BIAS_KEY | HF_QKNORM_HEAD, 128, 0, 0, false, 0, 0, 0, 1e-6, 1e4},
    {"qwen3_moe", MOE_QWEN, WIN_QWEN3_MOE, HF_ATTN_BIAS_KEY | HF_QKNORM_HEAD, 0, 0, 0, false, 0, 0, 0, 1e-6, 1e4},
    /* GemmaConfig, Gemma2Config: head_dim 256, vocab 256000, 8192 positions, tied; Gemma 2's
     * layer_types default: sliding on even layers, full on odd ((i + 1) % 2 == 0) */
    {"gemma", MOE_NONE, WIN_NONE, HF_GEMMA | HF_ATTN_BIAS_KEY, 256, 256000, 8192, true, 0, 0, 0, 1e-6, 1e4},
    {"gemma2", MOE_NONE, WIN_TYPES, HF_GEMMA | HF_ATTN_BIAS_KEY | HF_NORMS4, 256, 256000, 8192, true, 4096, 2, 1, 1e-6, 1e4},
    /* Gemma3TextConfig: vocab 262208, 131072 positions, sliding_window 4096, full attention on
     * layer i when (i + 1) % sliding_window_pattern == 0 (pattern 6: five local, one global) */
    {"gemma3_text", MOE_NONE, WIN_TYPES, HF_GEMMA | HF_ATTN_BIAS_KEY | HF_NORMS4 | HF_QKNORM_HEAD | HF_WINDOW_PATTERN,
     256, 262208, 131072, true, 4096, 6, 5, 1e-6, 1e6},
    {"olmo2", MOE_NONE, WIN_NONE, HF_ATTN_BIAS_KEY | HF_QKNORM_FULL, 0, 0, 0, false, 0, 0, 0, 1e-5, 1e4},
    /* GptOssConfig: head_dim 64, attention_bias true, sliding_window 128 on even layers */
    {"gpt_oss", MOE_GPTOSS, WIN_TYPES, HF_ATTN_BIAS_KEY | HF_ATTN_BIAS_ON | HF_SINKS, 64, 0, 0, false, 128, 2, 1, 1e-5, 1.5e5},
    /* Llama4TextConfig: vocab 202048, 4096 * 32 positions, head_dim 128 */
    {"llama4_text", MOE_LLAMA4, WIN_LLAMA4, HF_ATTN_BIAS_KEY, 128, 202048, 131072, false, 0, 0, 0, 1e-5, 5e5},
    {"deepseek_v2", MOE_DEEPSEEK, WIN_NONE, HF_MLA, 0, 0, 0, false, 0, 0, 0, 1e-6, 1e4},
    {"deepseek_v3", MOE_DEEPSEEK, WIN_NONE, HF_MLA | HF_MTP, 0, 0, 0, false, 0, 0, 0, 1e-6, 1e4},
    /* Kimi K2 (moonshotai/Kimi-K2-*): DeepSeek-V3's architecture (its auto_map points at
     * DeepseekV3Config) under its own model_type */
    {"kimi_k2", MOE_DEEPSEEK, WIN_NONE, HF_MLA | HF_MTP, 0, 0, 0, false, 0, 0, 0, 1e-6, 1e4},
};
#define N_FAMILIES (sizeof hf_families / sizeof hf_families[0])

/* Multimodal wrappers: the language model is text_config (Gemma3Config, Llama4Config). */
static const struct { const char *type, *text_type; } hf_wrappers[] = {
    {"gemma3", "gemma3_text"},
    {"llama4", "llama4_text"},
};
#define N_WRAPPERS (sizeof hf_wrappers / sizeof hf_wrappers[0])

/* The model types of the other families (hf_classic), for the unsupported-type message. */
static const char *const hf_classic_types[] = {"gpt2", "gpt_neox", "opt", "bloom", "falcon",
                                               "RefinedWebModel", "RefinedWeb", "bert", "nemotron"};
#define N_CLASSIC (sizeof hf_classic_types / sizeof hf_classic_types[0])

/* Keys of a feature the family does not have: an error rather than a model silently without
 * it. (Transformers ignores such keys; a file that has them was meant for another type.) */
static pp_status hf_foreign_keys(const pp_hf_ctx *h, const pp_hf_family *fam)
{
    static const int mla[] = {H_Q_LORA, H_KV_LORA, H_QK_NOPE, H_QK_ROPE, H_V_HEAD};
    static const int moe[] = {H_NUM_LOCAL_EXPERTS, H_NUM_EXPERTS, H_N_ROUTED, H_MOE_INTERMEDIATE,
                              H_SHARED_INTERMEDIATE, H_N_SHARED};
    if (!(fam->f & HF_MLA))
        for (size_t i = 0; i < sizeof mla / sizeof mla[0]; i++)
            if (pp_hf_has(h, mla[i]))
                return pp_hf_fail(h, mla[i], "multi-head latent attention is not part of model_type '%s' "
                                             "(deepseek_v2, deepseek_v3 and kimi_k2 have it)", h->type);
    if (fam->moe == MOE_NONE)
        for (size_t i = 0; i < sizeof moe / sizeof moe[0]; i++)
            if (pp_hf_has(h, moe[i]))
                return pp_hf_fail(h, moe[i], "model_type '%s' has no experts", h->type);
    if (pp_hf_has(h, H_NEXTN) && h->c->num_nextn_predict_layers > 0 && !(fam->f & HF_MTP))
        return pp_hf_fail(h, H_NEXTN, "multi-token prediction is not part of model_type '%s' (deepseek_v3 "
                                      "and kimi_k2 have it)", h->type);
    if (pp_hf_bool(h, H_ATTN_BIAS, false) && !(fam->f & HF_ATTN_BIAS_KEY))
        return pp_hf_fail(h, H_ATTN_BIAS, "model_type '%s' has no attention biases to turn on%s", h->type,
                          fam->f & HF_MLA ? " (the latent projections' biases are not modelled)" : "");
    if (pp_hf_bool(h, H_MLP_BIAS, false) && !(fam->f & HF_MLP_BIAS_KEY))
        return pp_hf_fail(h, H_MLP_BIAS, "model_type '%s' has no MLP biases to turn on", h->type);
    return PP_OK;
}

/* ================================================================== what else defines the model */

/* The norm epsilon (any of its spellings, else the config class's eps) and, for RoPE models, the
 * base (rope_theta; GPT-NeoX's rotary_emb_base; else theta) and rope_scaling as transformers'
 * modeling_rope_utils.py reads it: "type" is rope_type's older spelling; default, linear, llama3
 * and yarn are modelled (yarn: original_max_position_embeddings defaults to
 * max_position_embeddings, betas 32 and 1, truncate true); others (dynamic, longrope) are an error. */
static pp_status hf_definition(const pp_hf_ctx *h, double eps, double theta, pp_model *m)
{
    static const int eps_ids[] = {H_RMS_EPS, H_LN_EPS, H_LN_EPSILON, H_NORM_EPS};
    static const int theta_ids[] = {H_ROPE_THETA, H_ROTARY_BASE, H_ROPE_LOCAL};
    m->norm_eps = eps;
    for (int i = 3; i >= 0; i--)
        if (pp_hf_has(h, eps_ids[i])) m->norm_eps = pp_hf_num(h, eps_ids[i]);
    for (int i = 0; i < 4; i++) {
        int id = i < 3 && pp_hf_has(h, theta_ids[i]) && !(pp_hf_num(h, theta_ids[i]) > 0) ? theta_ids[i]
               : pp_hf_has(h, eps_ids[i]) && !(pp_hf_num(h, eps_ids[i]) > 0) ? eps_ids[i] : -1;
        if (id >= 0) return pp_hf_fail(h, id, "must be positive");
    }
    if (m->pos != PP_POS_ROPE) return PP_OK;
    m->rope_theta = pp_hf_has(h, H_ROPE_THETA) ? pp_hf_num(h, H_ROPE_THETA) : pp_hf_has(h, H_ROTARY_BASE) ? pp_hf_num(h, H_ROTARY_BASE) : theta;
    /* Gemma3TextConfig: the sliding layers' base rope_local_base_freq (10000), unscaled */
    if (!strcmp(h->type, "gemma3_text")) m->rope_local_theta = pp_hf_has(h, H_ROPE_LOCAL) ? pp_hf_num(h, H_ROPE_LOCAL) : 1e4;
    if (m->rope_local_theta == m->rope_theta) m->rope_local_theta = 0;
    const pp_hf_cfg *c = h->c;
    yaml_node_t *rs = h->found[H_ROPE_SCALING];
    bool oss = !rs && !strcmp(h->type, "gpt_oss"); /* GptOssConfig's default: yarn 32 over 4096, truncate false */
    if (!rs && !oss) return PP_OK;
#define RS_HAS(k) (oss ? false : (bool)(pp_yaml_lookup(h->y, rs, k, false) && !pp_yaml_is_null(pp_yaml_lookup(h->y, rs, k, false))))
    const char *type = oss ? "yarn" : RS_HAS("rope_type") ? c->rs_rope_type : RS_HAS("type") ? c->rs_type : "default";
    if (!strcmp(type, "default")) return PP_OK;
    int t = pp_name_lookup(pp_rope_scaling_names, PP_ROPE_SCALING_COUNT, type);
    if (t <= 0) return pp_hf_fail(h, H_ROPE_SCALING, "type '%s' is not modelled (default, linear, llama3, yarn are)", type);
    m->rope_scaling = (pp_rope_scaling)t;
    m->rope_factor = oss ? 32 : c->rs_factor;
    if (!(m->rope_factor > 0)) return pp_hf_fail(h, H_ROPE_SCALING, "'%s' needs a positive factor", type);
    if (m->rope_scaling == PP_ROPE_SCALING_LINEAR) return PP_OK;
    m->rope_original_context = oss ? 4096 : RS_HAS("original_max_position_embeddings") ? c->rs_original : m->max_context;
    if (m->rope_scaling == PP_ROPE_SCALING_LLAMA3) {
        if (!RS_HAS("low_freq_factor") || !RS_HAS("high_freq_factor") || !RS_HAS("original_max_position_embeddings"))
            return pp_hf_fail(h, H_ROPE_SCALING, "llama3 needs factor, low_freq_factor, high_freq_factor and "
                                                 "original_max_position_embeddings");
        m->rope_low_freq = c->rs_low;
        m->rope_high_freq = c->rs_high;
        return PP_OK;
    }
    m->yarn_beta_fast = RS_HAS("beta_fast") ? c->rs_beta_fast : 32;
    m->yarn_beta_slow = RS_HAS("beta_slow") ? c->rs_beta_slow : 1;
    m->yarn_mscale = RS_HAS("mscale") ? c->rs_mscale : 1;
    m->yarn_mscale_all_dim = RS_HAS("mscale_all_dim") ? c->rs_mscale_all_dim : 0;
    m->yarn_no_truncate = oss || (RS_HAS("truncate") && !c->rs_truncate);
#undef RS_HAS
    return PP_OK;
}

/* The RMSNorm, RoPE, gated-MLP decoders (LLaMA, Touvron et al. 2023, and its descendants). */
static pp_status hf_decoder(const pp_hf_ctx *h, const pp_hf_family *fam, pp_model *m)
{
    pp_status st = hf_shape(h, H_INTERMEDIATE, fam->vocab, fam->max_pos, m);
    if (st) return st;
    m->kv_heads = m->heads;
    HF_INT(&m->kv_heads, false, H_NUM_KV_HEADS);
    m->head_dim = fam->head_dim;
    if (!(fam->f & HF_MLA)) HF_INT(&m->head_dim, false, H_HEAD_DIM);
    /* A gated MLP has 3 h f weights whatever its nonlinearity (GeGLU counts as SwiGLU). Gemma
     * spells it hidden_activation (Gemma2Config, Gemma3TextConfig), gelu_pytorch_tanh. */
    int act_id = pp_hf_has(h, H_HIDDEN_ACTIVATION) ? H_HIDDEN_ACTIVATION : H_HIDDEN_ACT;
    const char *a = pp_hf_has(h, act_id) ? (const char *)h->c + pp_hf_keys[act_id].off
                                      : fam->f & HF_GEMMA ? "gelu_pytorch_tanh" : "silu";
    /* a gated family's activation is its gated row (silu, swish); GeGLU (gelu*) is counted as SwiGLU */
    int act = pp_act_from_hf(a, true);
    if (act < 0 && pp_act_from_hf(a, false) == PP_ACT_GELU) act = PP_ACT_SWIGLU;
    if (act < 0) return pp_hf_fail(h, act_id, "'%s' is not supported (%s, gelu*)", a, pp_activations[PP_ACT_SWIGLU].hf);
    m->act = (pp_act)act;
    m->norm = PP_NORM_RMSNORM;
    m->pos = PP_POS_ROPE;
    m->bias = false;
    /* tie_word_embeddings: the text model's, else the wrapper's, else the class default */
    m->tied = pp_hf_bool(h, H_TIE, h->outer ? pp_hf_bool(h->outer, H_TIE, fam->tied) : fam->tied);
    if ((st = hf_foreign_keys(h, fam))) return st;
    bool attn_bias = (fam->f & HF_ATTN_BIAS_KEY) && pp_hf_bool(h, H_ATTN_BIAS, fam->f & HF_ATTN_BIAS_ON);
    m->qkv_bias = attn_bias || (fam->f & HF_QKV_BIAS) || ((fam->f & HF_QKV_BIAS_KEY) && pp_hf_bool(h, H_QKV_BIAS, true));
    m->out_bias = attn_bias;
    m->mlp_bias = (fam->f & HF_MLP_BIAS_KEY) && pp_hf_bool(h, H_MLP_BIAS, false);
    m->qk_norm = fam->f & HF_QKNORM_HEAD ? PP_QKNORM_HEAD : fam->f & HF_QKNORM_FULL ? PP_QKNORM_FULL : PP_QKNORM_NONE;
    m->norms_per_layer = fam->f & HF_NORMS4 ? 4 : 2;
    m->attn_sinks = fam->f & HF_SINKS;
    if ((fam->f & HF_MLA) && (st = pp_hf_mla(h, m))) return st;
    if ((st = pp_hf_moe(h, fam, m))) return st;
    /* biases on every linear layer but the output (gpt-oss, as GPT-2): Megatron's --add-bias-linear */
    m->bias = m->qkv_bias && m->out_bias && m->mlp_bias;
    if ((st = pp_hf_router(h, fam, m)) || (st = hf_definition(h, fam->eps, fam->theta, m))) return st;
    if ((st = pp_hf_window(h, fam, m))) return st;
    hf_dropout(h, m, 0, 0); /* their config classes: attention_dropout 0.0, no hidden dropout */
    return PP_OK;
}

/* ================================================================== the other families */

static pp_status hf_classic(const pp_hf_ctx *h, const char *mt, pp_model *m)
{
    pp_status st;
    if (!strcmp(mt, "gpt2")) {
        /* GPT-2 (Radford et al. 2019): n_inner null means 4h; GPT2Config dropouts 0.1. */
        HF_INT(&m->hidden, true, H_N_EMBD);
        HF_INT(&m->layers, true, H_N_LAYER);
        HF_INT(&m->heads, true, H_N_HEAD);
        HF_INT(&m->vocab, true, H_VOCAB);
        HF_INT(&m->seq, true, H_N_POSITIONS, H_N_CTX);
        HF_INT(&m->ffn, false, H_N_INNER);
        if ((st = hf_plain_act(h, H_ACT_FN, "gelu_new", &m->act))) return st;
        hf_gpt_like(m, PP_POS_LEARNED, true, pp_hf_bool(h, H_TIE, true));
        hf_dropout(h, m, 0.1, 0.1);
    } else if (!strcmp(mt, "gpt_neox")) {
        /* GPT-NeoX (Black et al. 2022): rotary on rotary_pct of each head (no parameters),
         * parallel residual (same tensors), untied output, biases everywhere. */
        if ((st = hf_shape(h, H_INTERMEDIATE, 0, 0, m))) return st;
        if ((st = hf_plain_act(h, H_HIDDEN_ACT, "gelu", &m->act))) return st;
        hf_gpt_like(m, PP_POS_ROPE, pp_hf_bool(h, H_ATTN_BIAS, true), pp_hf_bool(h, H_TIE, false));
        hf_dropout(h, m, 0, 0);
    } else if (!strcmp(mt, "opt")) {
        /* OPT (Zhang et al. 2022): learned positions with 2 offset rows (2h, not counted);
         * OPTConfig: dropout 0.1, attention_dropout 0.0. */
        if ((st = hf_shape(h, H_FFN_DIM, 0, 0, m))) return st;
        if (pp_hf_has(h, H_WORD_EMBED_PROJ) && h->c->word_embed_proj_dim != m->hidden)
            return pp_hf_fail(h, H_WORD_EMBED_PROJ, "%lld differs from hidden_size %lld; projected "
                              "embeddings (opt-350m) are not modelled",
                              (long long)h->c->word_embed_proj_dim, (long long)m->hidden);
        if ((st = hf_plain_act(h, H_ACT_FN, "relu", &m->act))) return st;
        hf_gpt_like(m, PP_POS_LEARNED, pp_hf_bool(h, H_ENABLE_BIAS, true), pp_hf_bool(h, H_TIE, true));
        hf_dropout(h, m, 0, 0.1);
    } else if (!strcmp(mt, "bloom")) {
        /* BLOOM (BigScience 2022): ALiBi, 4h GELU, embedding LayerNorm (2h, not counted).
         * config.json has no sequence length: BLOOM was trained on 2048 (paper, sec. 3.5). */
        HF_INT(&m->hidden, true, H_HIDDEN_SIZE, H_N_EMBED);
        HF_INT(&m->layers, true, H_N_LAYER, H_NUM_LAYERS);
        HF_INT(&m->heads, true, H_N_HEAD, H_NUM_HEADS);
        HF_INT(&m->vocab, true, H_VOCAB);
        m->seq = 2048;
        HF_INT(&m->seq, false, H_SEQ_LENGTH);
        m->act = PP_ACT_GELU;
        hf_gpt_like(m, PP_POS_ALIBI, true, pp_hf_bool(h, H_TIE, true));
        hf_dropout(h, m, 0, 0);
    } else if (!strcmp(mt, "nemotron")) {
        /* Nemotron-4 (NVIDIA 2024, arXiv:2406.11704 Table 1; transformers NemotronConfig): a plain
         * MLP with squared ReLU (hidden_act relu2), LayerNorm1P (a LayerNorm with its bias), RoPE on
         * part of each head (partial_rotary_factor: no parameters), GQA, no biases, untied; the
         * config class's defaults: vocabulary 256000, 4096 positions, head_dim hidden / heads. */
        if ((st = hf_shape(h, H_INTERMEDIATE, 256000, 4096, m))) return st;
        m->kv_heads = m->heads;
        HF_INT(&m->kv_heads, false, H_NUM_KV_HEADS);
        HF_INT(&m->head_dim, false, H_HEAD_DIM);
        if ((st = hf_plain_act(h, H_HIDDEN_ACT, "relu2", &m->act))) return st;
        hf_gpt_like(m, PP_POS_ROPE, false, pp_hf_bool(h, H_TIE, false));
        m->qkv_bias = m->out_bias = pp_hf_bool(h, H_ATTN_BIAS, false);
        m->mlp_bias = pp_hf_bool(h, H_MLP_BIAS, false);
        hf_dropout(h, m, 0, 0);
    } else if (!strcmp(mt, "bert")) {
        /* BERT (Devlin et al. 2019): counted as the encoder stack; the token-type embedding
         * (2h), embedding LayerNorm (2h) and pooler (h^2 + h) are not in the table. */
        if ((st = hf_shape(h, H_INTERMEDIATE, 0, 0, m))) return st;
        if ((st = hf_plain_act(h, H_HIDDEN_ACT, "gelu", &m->act))) return st;
        hf_gpt_like(m, PP_POS_LEARNED, true, true);
        hf_dropout(h, m, 0.1, 0.1);
    } else {
        /* Falcon (Almazrouei et al. 2023): multi-query (7B) or grouped KV (40B, 180B), no
         * biases, 4h GELU MLP, parallel attention. Falcon-7B has one LayerNorm per layer
         * where we count two (2h per layer, < 0.01%). Trained on 2048 tokens. */
        HF_INT(&m->hidden, true, H_HIDDEN_SIZE);
        HF_INT(&m->heads, true, H_NUM_HEADS, H_N_HEAD);
        HF_INT(&m->layers, true, H_NUM_LAYERS, H_N_LAYER);
        HF_INT(&m->vocab, true, H_VOCAB);
        m->seq = 2048;
        HF_INT(&m->seq, false, H_MAX_POS);
        HF_INT(&m->ffn, false, H_FFN_HIDDEN);
        if (pp_hf_bool(h, H_NEW_DECODER, false)) {
            HF_INT(&m->kv_heads, true, H_NUM_KV_HEADS_F, H_N_HEAD_KV);
        } else if (pp_hf_bool(h, H_MULTI_QUERY, true)) {
            m->kv_heads = 1;
        } else {
            m->kv_heads = m->heads;
        }
        m->act = PP_ACT_GELU;
        hf_gpt_like(m, pp_hf_bool(h, H_ALIBI, false) ? PP_POS_ALIBI : PP_POS_ROPE, pp_hf_bool(h, H_BIAS, false),
                    pp_hf_bool(h, H_TIE, true));
        hf_dropout(h, m, 0, 0);
    }
    /* BertConfig layer_norm_eps 1e-12; the others' 1e-5 (OPT: torch.nn.LayerNorm's default) */
    return hf_definition(h, strcmp(mt, "bert") ? 1e-5 : 1e-12, 1e4, m);
}

/* ================================================================== validation messages */

/* Which config key a pp_model_validate message is about: the message starts with the field. */
static const struct {
    const char *field;
    int ids[4]; /* -1 ends */
} hf_field_keys[] = {
    {"layers", {H_NUM_LAYERS, H_N_LAYER, -1}},
    {"hidden", {H_HIDDEN_SIZE, H_N_EMBD, H_N_EMBED, -1}},
    {"heads", {H_NUM_HEADS, H_N_HEAD, -1}},
    {"kv_heads", {H_NUM_KV_HEADS, H_NUM_KV_HEADS_F, H_N_HEAD_KV, -1}},
    {"head_dim", {H_HEAD_DIM, -1}},
    {"ffn", {H_INTERMEDIATE_MLP, H_INTERMEDIATE, H_FFN_DIM, H_N_INNER}},
    {"vocab", {H_VOCAB, -1}},
    {"seq", {H_MAX_POS, H_N_POSITIONS, H_N_CTX, H_SEQ_LENGTH}},
    {"experts", {H_NUM_LOCAL_EXPERTS, H_NUM_EXPERTS, H_N_ROUTED, -1}},
    {"topk", {H_EXPERTS_PER_TOK, H_EXPERTS_PER_TOKEN, -1}},
    {"window", {H_SLIDING_WINDOW, H_CHUNK, -1}},
    {"kv_lora_rank", {H_KV_LORA, -1}},
    {"q_lora_rank", {H_Q_LORA, -1}},
    {"qk_nope_dim", {H_QK_NOPE, -1}},
    {"qk_rope_dim", {H_QK_ROPE, -1}},
    {"v_head_dim", {H_V_HEAD, -1}},
    {"moe_ffn", {H_MOE_INTERMEDIATE, H_INTERMEDIATE, -1}},
    {"shared_ffn", {H_SHARED_INTERMEDIATE, H_N_SHARED, -1}},
    {"shared_experts", {H_N_SHARED, -1}},
    {"moe_first_dense", {H_FIRST_K_DENSE, H_MOE_LAYERS, -1}},
    {"moe_every", {H_MOE_LAYER_FREQ, H_SPARSE_STEP, H_INTERLEAVE, H_MOE_LAYERS}},
    {"mtp_layers", {H_NEXTN, -1}},
    {"norm_eps", {H_RMS_EPS, H_LN_EPS, H_LN_EPSILON, H_NORM_EPS}},
    {"rope_factor", {H_ROPE_SCALING, -1}},
    {"rope_low_freq", {H_ROPE_SCALING, -1}},
    {"yarn_beta_fast", {H_ROPE_SCALING, -1}},
    {"router_groups", {H_N_GROUP, H_TOPK_GROUP, -1}},
    {"router_expert_bias", {H_SCORING, -1}},
};

/* The key behind a pp_model_validate message (-1: none given, the message is about the file). */
static int hf_validate_key(const pp_hf_ctx *h, const char *msg)
{
    /* "hidden 100 is not divisible by heads 7": the divisor; "the MoE layer pattern leaves no
     * MoE layer": the keys of the pattern. */
    static const int pattern[] = {H_SPARSE_STEP, H_MLP_ONLY, H_FIRST_K_DENSE, H_MOE_LAYER_FREQ,
                                  H_INTERLEAVE, H_MOE_LAYERS};
    const char *field = strstr(msg, "not divisible by heads") ? "heads" : NULL;
    if (strstr(msg, "leaves no MoE layer"))
        for (size_t i = 0; i < sizeof pattern / sizeof pattern[0]; i++)
            if (pp_hf_has(h, pattern[i])) return pattern[i];
    for (size_t i = 0; i < sizeof hf_field_keys / sizeof hf_field_keys[0]; i++) {
        size_t l = strlen(hf_field_keys[i].field);
        if (field ? strcmp(field, hf_field_keys[i].field)
                  : strncmp(msg, hf_field_keys[i].field, l) || (msg[l] != ' ' && msg[l] != ':'))
            continue;
        for (int j = 0; j < 4 && hf_field_keys[i].ids[j] >= 0; j++)
            if (pp_hf_has(h, hf_field_keys[i].ids[j])) return hf_field_keys[i].ids[j];
        break;
    }
    return -1;
}

/* ================================================================== entry point */

static const pp_hf_family *hf_family_find(const char *type)
{
    for (size_t i = 0; i < N_FAMILIES; i++)
        if (!strcmp(hf_families[i].type, type)) return &hf_families[i];
    return NULL;
}

static pp_status hf_unsupported(const pp_hf_ctx *h, const char *mt)
{
    char list[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < N_FAMILIES + N_WRAPPERS + N_CLASSIC; i++) {
        const char *t = i < N_FAMILIES ? hf_families[i].type
                      : i < N_FAMILIES + N_WRAPPERS ? hf_wrappers[i - N_FAMILIES].type
                                                    : hf_classic_types[i - N_FAMILIES - N_WRAPPERS];
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", t);
        if (used >= sizeof list) break;
    }
    return pp_hf_fail(h, H_MODEL_TYPE, "'%s' is not supported (%s)", mt, list);
}

pp_status pp_hf_model_load(pp_yaml *y, yaml_node_t *root, pp_model *m)
{
    pp_hf_cfg outer_c, text_c; /* about 17 KiB each (the layer lists) */
    pp_hf_ctx outer = {0}, text = {0};
    pp_status st = pp_hf_read(y, root, &outer_c, &outer, "config.json");
    if (st) return st;
    if (!pp_hf_has(&outer, H_MODEL_TYPE))
        return pp_yaml_error(y, root, "config.json: missing required key 'model_type'");
    const char *mt = outer_c.model_type;
    outer.type = mt;
    snprintf(m->family, sizeof m->family, "%.*s", (int)sizeof m->family - 1, mt);
    if (outer_c.name_or_path[0]) {
        const char *slash = strrchr(outer_c.name_or_path, '/');
        snprintf(m->name, sizeof m->name, "%.*s", (int)sizeof m->name - 1,
                 slash && slash[1] ? slash + 1 : outer_c.name_or_path);
    }
    snprintf(m->source, sizeof m->source, "Hugging Face config.json (%s)", outer_c.arch[0] ? outer_c.arch : mt);

    const pp_hf_ctx *h = &outer;
    const pp_hf_family *fam = hf_family_find(mt);
    for (size_t i = 0; i < N_WRAPPERS && !fam; i++) {
        if (strcmp(mt, hf_wrappers[i].type)) continue;
        /* The language model of Gemma3ForConditionalGeneration / Llama4ForConditionalGeneration
         * is text_config (the vision tower is not counted: see tests/model/params.c). */
        yaml_node_t *tc = outer.found[H_TEXT_CONFIG];
        if (!tc) {
            yaml_node_t *v = pp_yaml_lookup(y, root, "text_config", false);
            if (v) return pp_yaml_error(y, v, "key 'text_config': null where a mapping is needed (model_type '%s')", mt);
            return pp_yaml_error(y, root, "config.json (model_type '%s'): missing required key 'text_config'", mt);
        }
        if (tc->type != YAML_MAPPING_NODE)
            return pp_hf_fail(&outer, H_TEXT_CONFIG, "expected a mapping, got %s", pp_yaml_node_kind(tc));
        if ((st = pp_hf_read(y, tc, &text_c, &text, "text_config"))) return st;
        text.type = hf_wrappers[i].text_type;
        text.outer = &outer;
        if (pp_hf_has(&text, H_MODEL_TYPE) && strcmp(text_c.model_type, text.type))
            return pp_hf_fail(&text, H_MODEL_TYPE, "'%s' inside a '%s' config (expected '%s')",
                              text_c.model_type, mt, text.type);
        fam = hf_family_find(text.type);
        h = &text;
    }
    if (fam)
        st = hf_decoder(h, fam, m);
    else if (pp_name_lookup(hf_classic_types, (int)N_CLASSIC, mt) >= 0)
        st = hf_classic(h, mt, m);
    else
        st = hf_unsupported(h, mt);
    if (st) return st;

    pp_error verr;
    if ((st = pp_model_validate(m, &verr))) {
        int id = hf_validate_key(h, verr.msg);
        if (id < 0) return pp_yaml_error(y, h->root, "config.json: %s", verr.msg);
        return pp_yaml_error(y, pp_yaml_lookup(y, h->root, pp_hf_keys[id].key, true), "config.json: key '%s': %s",
                             pp_hf_keys[id].key, verr.msg);
    }
    return PP_OK;
}
