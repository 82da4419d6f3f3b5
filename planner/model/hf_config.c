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
 */
#include "pp_yaml.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define HF_MAX_LAYER_LIST 1024 /* entries of moe_layers, no_rope_layers, layer_types */

/* Every config.json key we read. */
typedef struct {
    char model_type[64], arch[96], name_or_path[128], hidden_act[48], activation_function[48],
        hidden_activation[48];
    int64_t hidden_size, n_embd, n_embed, intermediate_size, n_inner, ffn_dim, ffn_hidden_size,
        intermediate_size_mlp, num_attention_heads, n_head, num_key_value_heads, num_kv_heads,
        n_head_kv, head_dim, num_hidden_layers, n_layer, vocab_size, max_position_embeddings,
        n_positions, n_ctx, seq_length, word_embed_proj_dim;
    /* Mixture of Experts: three spellings of the expert count, two of top-k */
    int64_t num_local_experts, num_experts, n_routed_experts, num_experts_per_tok,
        experts_per_token, moe_intermediate_size, shared_expert_intermediate_size,
        n_shared_experts, first_k_dense_replace, moe_layer_freq, decoder_sparse_step,
        interleave_moe_layer_step;
    int64_t mlp_only_layers[PP_MODEL_MAX_LIST], n_mlp_only_layers;
    int64_t moe_layers[HF_MAX_LAYER_LIST], n_moe_layers;
    /* multi-head latent attention, multi-token prediction */
    int64_t q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim,
        num_nextn_predict_layers;
    /* sliding and chunked attention */
    int64_t sliding_window, max_window_layers, sliding_window_pattern, attention_chunk_size,
        no_rope_layer_interval;
    int64_t no_rope_layers[HF_MAX_LAYER_LIST], n_no_rope_layers;
    double rms_norm_eps, layer_norm_eps, layer_norm_epsilon, norm_eps, rotary_pct, rope_theta, rotary_emb_base,
        rope_local_base_freq;
    /* rope_scaling {type | rope_type, factor, original_max_position_embeddings, ...} */
    char rs_type[32], rs_rope_type[32];
    int64_t rs_original;
    double rs_factor, rs_low, rs_high, rs_beta_fast, rs_beta_slow, rs_mscale, rs_mscale_all_dim;
    bool rs_truncate;
    /* the MoE router */
    char scoring_func[32], topk_method[32];
    double routed_scaling_factor, router_aux_loss_coef, aux_loss_alpha, router_z_loss_coef;
    int64_t n_group, topk_group;
    bool norm_topk_prob, seq_aux;
    double attention_dropout, hidden_dropout, attn_pdrop, resid_pdrop, hidden_dropout_prob,
        attention_probs_dropout_prob, dropout;
    bool tie_word_embeddings, use_parallel_residual, new_decoder_architecture, multi_query,
        parallel_attn, bias, alibi, attention_bias, mlp_bias, do_layer_norm_before, enable_bias,
        qkv_bias, use_sliding_window;
} hf_cfg;

#define HSTR(k, f) {k, PP_KEY_STR, offsetof(hf_cfg, f), 0, 0, 0, sizeof(((hf_cfg *)0)->f), NULL, 0, false, NULL, 0, 0}
#define HSTRSEQ(k, f) {k, PP_KEY_STRSEQ, offsetof(hf_cfg, f), 0, 0, 0, sizeof(((hf_cfg *)0)->f), NULL, 0, false, NULL, 0, 0}
#define HINT(k, lo) {#k, PP_KEY_INT, offsetof(hf_cfg, k), lo, 1e9, 0, 0, NULL, 0, false, NULL, 0, 0}
#define HNUM(k) {#k, PP_KEY_NUM, offsetof(hf_cfg, k), 0, 1e9, 1, 0, NULL, 0, false, NULL, 0, 0}
/* A probability: [0, 1) (the schema's own bound for attention_dropout, hidden_dropout). */
#define HDROP(k) {#k, PP_KEY_NUM, offsetof(hf_cfg, k), 0, 0.999, 1, 0, NULL, 0, false, NULL, 0, 0}
#define HBOOL(k) {#k, PP_KEY_BOOL, offsetof(hf_cfg, k), 0, 0, 0, 0, NULL, 0, false, NULL, 0, 0}
#define HSEQ(k, hi, cap) {#k, PP_KEY_INTSEQ, offsetof(hf_cfg, k), 0, hi, 0, cap, NULL, 0, false, NULL, 0, offsetof(hf_cfg, n_##k)}
#define HANY(k) {#k, PP_KEY_ANY, 0, 0, 0, 0, 0, NULL, 0, false, NULL, 0, 0} /* read from its node */
#define HRS(k, f, t, hi) {k, t, offsetof(hf_cfg, f), 0, hi, 1, t == PP_KEY_STR ? sizeof(((hf_cfg *)0)->f) : 0, NULL, 0, false, NULL, 0, 0}

#define HMAP(k, sub) {#k, PP_KEY_MAP, 0, 0, 0, 0, 0, NULL, 0, false, sub, (int)(sizeof sub / sizeof sub[0]), 0}

/* rope_scaling's keys (transformers modeling_rope_utils.py: "type" is the older spelling). */
static const pp_key hf_rope_keys[] = {
    HRS("type", rs_type, PP_KEY_STR, 0), HRS("rope_type", rs_rope_type, PP_KEY_STR, 0),
    HRS("factor", rs_factor, PP_KEY_NUM, 1e6), HRS("original_max_position_embeddings", rs_original, PP_KEY_INT, 1e9),
    HRS("low_freq_factor", rs_low, PP_KEY_NUM, 1e6), HRS("high_freq_factor", rs_high, PP_KEY_NUM, 1e6),
    HRS("beta_fast", rs_beta_fast, PP_KEY_NUM, 1e6), HRS("beta_slow", rs_beta_slow, PP_KEY_NUM, 1e6),
    HRS("mscale", rs_mscale, PP_KEY_NUM, 1e6), HRS("mscale_all_dim", rs_mscale_all_dim, PP_KEY_NUM, 1e6),
    HRS("truncate", rs_truncate, PP_KEY_BOOL, 0),
};

/* The key table and its index enum from one list, so that they cannot drift apart. */
#define HF_KEYS(X)                                                                               \
    X(H_MODEL_TYPE, HSTR("model_type", model_type)) X(H_ARCH, HSTRSEQ("architectures", arch))                 \
    X(H_NAME, HSTR("_name_or_path", name_or_path)) X(H_HIDDEN_ACT, HSTR("hidden_act", hidden_act))            \
    X(H_ACT_FN, HSTR("activation_function", activation_function))                                             \
    X(H_HIDDEN_ACTIVATION, HSTR("hidden_activation", hidden_activation))                                      \
    X(H_HIDDEN_SIZE, HINT(hidden_size, 1)) X(H_N_EMBD, HINT(n_embd, 1)) X(H_N_EMBED, HINT(n_embed, 1))        \
    X(H_INTERMEDIATE, HINT(intermediate_size, 1)) X(H_N_INNER, HINT(n_inner, 1))                              \
    X(H_FFN_DIM, HINT(ffn_dim, 1)) X(H_FFN_HIDDEN, HINT(ffn_hidden_size, 1))                                  \
    X(H_INTERMEDIATE_MLP, HINT(intermediate_size_mlp, 1)) X(H_NUM_HEADS, HINT(num_attention_heads, 1))        \
    X(H_N_HEAD, HINT(n_head, 1)) X(H_NUM_KV_HEADS, HINT(num_key_value_heads, 1))                              \
    X(H_NUM_KV_HEADS_F, HINT(num_kv_heads, 1)) X(H_N_HEAD_KV, HINT(n_head_kv, 1))                             \
    X(H_HEAD_DIM, HINT(head_dim, 1)) X(H_NUM_LAYERS, HINT(num_hidden_layers, 1))                              \
    X(H_N_LAYER, HINT(n_layer, 1)) X(H_VOCAB, HINT(vocab_size, 1))                                            \
    X(H_MAX_POS, HINT(max_position_embeddings, 1)) X(H_N_POSITIONS, HINT(n_positions, 1))                     \
    X(H_N_CTX, HINT(n_ctx, 1)) X(H_SEQ_LENGTH, HINT(seq_length, 1))                                           \
    X(H_WORD_EMBED_PROJ, HINT(word_embed_proj_dim, 1)) X(H_NUM_LOCAL_EXPERTS, HINT(num_local_experts, 0))     \
    X(H_NUM_EXPERTS, HINT(num_experts, 0)) X(H_N_ROUTED, HINT(n_routed_experts, 0))                           \
    X(H_EXPERTS_PER_TOK, HINT(num_experts_per_tok, 0)) X(H_EXPERTS_PER_TOKEN, HINT(experts_per_token, 0))     \
    X(H_MOE_INTERMEDIATE, HINT(moe_intermediate_size, 1))                                                     \
    X(H_SHARED_INTERMEDIATE, HINT(shared_expert_intermediate_size, 0))                                        \
    X(H_N_SHARED, HINT(n_shared_experts, 0)) X(H_FIRST_K_DENSE, HINT(first_k_dense_replace, 0))               \
    X(H_MOE_LAYER_FREQ, HINT(moe_layer_freq, 1)) X(H_SPARSE_STEP, HINT(decoder_sparse_step, 1))               \
    X(H_INTERLEAVE, HINT(interleave_moe_layer_step, 1))                                                       \
    X(H_MLP_ONLY, HSEQ(mlp_only_layers, 1e9, PP_MODEL_MAX_LIST))                                              \
    X(H_MOE_LAYERS, HSEQ(moe_layers, 1e9, HF_MAX_LAYER_LIST)) X(H_Q_LORA, HINT(q_lora_rank, 1))               \
    X(H_KV_LORA, HINT(kv_lora_rank, 1)) X(H_QK_NOPE, HINT(qk_nope_head_dim, 1))                               \
    X(H_QK_ROPE, HINT(qk_rope_head_dim, 1)) X(H_V_HEAD, HINT(v_head_dim, 1))                                  \
    X(H_NEXTN, HINT(num_nextn_predict_layers, 0)) X(H_SLIDING_WINDOW, HINT(sliding_window, 0))                \
    X(H_USE_SLIDING, HBOOL(use_sliding_window)) X(H_MAX_WINDOW_LAYERS, HINT(max_window_layers, 0))            \
    X(H_WINDOW_PATTERN, HINT(sliding_window_pattern, 1)) X(H_CHUNK, HINT(attention_chunk_size, 1))            \
    X(H_NO_ROPE_LAYERS, HSEQ(no_rope_layers, 1, HF_MAX_LAYER_LIST))                                           \
    X(H_NO_ROPE_INTERVAL, HINT(no_rope_layer_interval, 1)) X(H_LAYER_TYPES, HANY(layer_types))                \
    X(H_TEXT_CONFIG, HANY(text_config)) X(H_RMS_EPS, HNUM(rms_norm_eps)) X(H_LN_EPS, HNUM(layer_norm_eps))    \
    X(H_LN_EPSILON, HNUM(layer_norm_epsilon)) X(H_ROTARY_PCT, HNUM(rotary_pct))                               \
    X(H_NORM_EPS, HNUM(norm_eps)) X(H_ROPE_THETA, HNUM(rope_theta)) X(H_ROTARY_BASE, HNUM(rotary_emb_base))   \
    X(H_ROPE_LOCAL, HNUM(rope_local_base_freq)) X(H_ROPE_SCALING, HMAP(rope_scaling, hf_rope_keys))           \
    X(H_SCORING, HSTR("scoring_func", scoring_func)) X(H_TOPK_METHOD, HSTR("topk_method", topk_method))       \
    X(H_NORM_TOPK, HBOOL(norm_topk_prob)) X(H_ROUTED_SCALE, HNUM(routed_scaling_factor))                      \
    X(H_N_GROUP, HINT(n_group, 0)) X(H_TOPK_GROUP, HINT(topk_group, 0))                                       \
    X(H_AUX_COEF, HNUM(router_aux_loss_coef)) X(H_AUX_ALPHA, HNUM(aux_loss_alpha))                            \
    X(H_SEQ_AUX, HBOOL(seq_aux)) X(H_Z_COEF, HNUM(router_z_loss_coef))                                        \
    X(H_ATTN_DROPOUT, HDROP(attention_dropout)) X(H_HIDDEN_DROPOUT, HDROP(hidden_dropout))                    \
    X(H_ATTN_PDROP, HDROP(attn_pdrop)) X(H_RESID_PDROP, HDROP(resid_pdrop))                                   \
    X(H_HIDDEN_DROPOUT_PROB, HDROP(hidden_dropout_prob))                                                      \
    X(H_ATTN_PROBS_DROPOUT, HDROP(attention_probs_dropout_prob)) X(H_DROPOUT, HDROP(dropout))                 \
    X(H_TIE, HBOOL(tie_word_embeddings)) X(H_PARALLEL_RESIDUAL, HBOOL(use_parallel_residual))                 \
    X(H_NEW_DECODER, HBOOL(new_decoder_architecture)) X(H_MULTI_QUERY, HBOOL(multi_query))                    \
    X(H_PARALLEL_ATTN, HBOOL(parallel_attn)) X(H_BIAS, HBOOL(bias)) X(H_ALIBI, HBOOL(alibi))                  \
    X(H_ATTN_BIAS, HBOOL(attention_bias)) X(H_MLP_BIAS, HBOOL(mlp_bias)) X(H_QKV_BIAS, HBOOL(qkv_bias))       \
    X(H_LN_BEFORE, HBOOL(do_layer_norm_before)) X(H_ENABLE_BIAS, HBOOL(enable_bias))

#define HF_ENUM_ID(id, def) id,
#define HF_KEY_DEF(id, def) def,
enum { HF_KEYS(HF_ENUM_ID) H_COUNT };
static const pp_key hf_keys[] = {HF_KEYS(HF_KEY_DEF)};
_Static_assert(H_COUNT <= PP_YAML_MAX_KEYS, "hf_keys is longer than a key table may be");

bool pp_hf_is_config(pp_yaml *y, yaml_node_t *root)
{
    static const char *const marks[] = {"model_type", "architectures", "hidden_size", "n_embd",
                                        "num_hidden_layers", "n_layer", "_name_or_path",
                                        "transformers_version"};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (pp_yaml_lookup(y, root, marks[i], true)) return true;
    return false;
}

/* ================================================================== reading keys */

typedef struct hf_ctx {
    pp_yaml *y;
    yaml_node_t *root;            /* the mapping the keys come from: text_config for gemma3, llama4 */
    yaml_node_t *found[H_COUNT];  /* value node of each key given (NULL: absent or null) */
    const hf_cfg *c;
    const char *type;             /* model_type of the text model (gemma3_text for gemma3) */
    const struct hf_ctx *outer;   /* the wrapper config around text_config, or NULL */
} hf_ctx;

static bool hf_has(const hf_ctx *h, int id) { return h->found[id] != NULL; }
static int64_t hf_i64(const hf_ctx *h, int id) { return *(const int64_t *)((const char *)h->c + hf_keys[id].off); }

static bool hf_bool(const hf_ctx *h, int id, bool dflt)
{
    return hf_has(h, id) ? *(const bool *)((const char *)h->c + hf_keys[id].off) : dflt;
}

/* An error about the value of key id (at its value node). */
static pp_status hf_fail(const hf_ctx *h, int id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static pp_status hf_fail(const hf_ctx *h, int id, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pp_yaml_error(h->y, h->found[id] ? h->found[id] : h->root, "key '%s': %s", hf_keys[id].key, msg);
}

/* The first of the alias keys given (hidden_size | n_embd | n_embed). Aliases given together
 * must agree (num_experts_per_tok and gpt-oss's experts_per_token). A required key that is
 * absent is an error at the mapping; one that is null, an error at the null. */
static pp_status hf_int(const hf_ctx *h, const int *ids, int n, bool required, int64_t *out)
{
    int first = -1;
    for (int i = 0; i < n; i++) {
        if (!hf_has(h, ids[i])) continue;
        if (first < 0) {
            first = ids[i];
            *out = hf_i64(h, first);
        } else if (hf_i64(h, ids[i]) != *out) {
            return hf_fail(h, ids[i], "%lld disagrees with '%s' %lld", (long long)hf_i64(h, ids[i]),
                           hf_keys[first].key, (long long)*out);
        }
    }
    if (first >= 0 || !required) return PP_OK;
    char names[200] = "";
    for (int i = 0; i < n; i++) {
        yaml_node_t *v = pp_yaml_lookup(h->y, h->root, hf_keys[ids[i]].key, false);
        if (v && pp_yaml_is_null(v))
            return pp_yaml_error(h->y, v, "key '%s': null where a number is needed (model_type '%s')",
                                 hf_keys[ids[i]].key, h->type);
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s'%s'", i ? " or " : "", hf_keys[ids[i]].key);
    }
    return pp_yaml_error(h->y, h->root, "config.json (model_type '%s'): missing required key %s",
                         h->type, names);
}

#define HF_INT(out, req, ...)                                                                  \
    do {                                                                                       \
        static const int ids_[] = {__VA_ARGS__};                                               \
        pp_status s_ = hf_int(h, ids_, (int)(sizeof ids_ / sizeof ids_[0]), req, out);         \
        if (s_) return s_;                                                                     \
    } while (0)

/* GELU variants and ReLU of the non-gated MLPs. */
static pp_status hf_plain_act(const hf_ctx *h, int id, const char *dflt, pp_act *out)
{
    const char *a = hf_has(h, id) ? (const char *)h->c + hf_keys[id].off : dflt;
    if (!strncmp(a, "gelu", 4)) *out = PP_ACT_GELU;
    else if (!strcmp(a, "relu")) *out = PP_ACT_RELU;
    else return hf_fail(h, id, "activation '%s' is not supported (gelu*, relu)", a);
    return PP_OK;
}

/* Dropout as the config states it, in any of its spellings: attention_dropout (Llama lineage,
 * GPT-NeoX, OPT, BLOOM), attn_pdrop / resid_pdrop (GPT-2, Phi-3), attention_probs_dropout_prob /
 * hidden_dropout_prob (BERT), hidden_dropout (GPT-NeoX, BLOOM, Falcon), OPT's `dropout` (its
 * hidden dropout: OPTDecoderLayer applies it after attention and the MLP). When the file states
 * one of the two, the other is its config class's default (dflt_*); when it states neither,
 * the model says nothing (dropout_set false, pp_model_dropout's rule). */
static void hf_dropout(const hf_ctx *h, pp_model *m, double dflt_attention, double dflt_hidden)
{
    static const int att[] = {H_ATTN_DROPOUT, H_ATTN_PDROP, H_ATTN_PROBS_DROPOUT};
    static const int hid[] = {H_HIDDEN_DROPOUT, H_RESID_PDROP, H_HIDDEN_DROPOUT_PROB, H_DROPOUT};
    m->attention_dropout = dflt_attention;
    m->hidden_dropout = dflt_hidden;
    for (int pass = 0; pass < 2; pass++) {
        const int *ids = pass ? hid : att;
        int n = pass ? 4 : 3;
        for (int i = 0; i < n; i++)
            if (hf_has(h, ids[i])) {
                double v = *(const double *)((const char *)h->c + hf_keys[ids[i]].off);
                *(pass ? &m->hidden_dropout : &m->attention_dropout) = v;
                m->dropout_set = true;
                break;
            }
    }
    if (!m->dropout_set) m->attention_dropout = m->hidden_dropout = 0;
}

/* ================================================================== layer patterns */

/* Full attention at layers i % every == phase, windowed elsewhere: fit a per-layer list to that
 * (every 0: all windowed). Returns false when no (every, phase) gives the list; *window_on is
 * false when no layer is windowed. */
static bool window_fit(const bool *windowed, int64_t n, int64_t *every, int64_t *phase, bool *window_on)
{
    int64_t first_full = -1, n_full = 0;
    for (int64_t i = 0; i < n; i++)
        if (!windowed[i]) {
            if (first_full < 0) first_full = i;
            n_full++;
        }
    *window_on = n_full < n;
    *every = *phase = 0;
    if (n_full == 0 || n_full == n) return true;
    for (int64_t p = first_full + 1; p <= n; p++) {
        bool ok = p >= 2;
        for (int64_t i = 0; i < n && ok; i++) ok = windowed[i] == (i % p != first_full);
        if (ok) {
            *every = p;
            *phase = first_full;
            return true;
        }
    }
    return false;
}

static pp_status window_set(const hf_ctx *h, int id, const bool *windowed, int64_t n, int64_t window,
                            pp_model *m)
{
    bool on;
    if (!window_fit(windowed, n, &m->window_full_every, &m->window_full_phase, &on))
        return hf_fail(h, id, "this mix of full and windowed layers is not modelled (full attention "
                              "on every n-th layer, windowed elsewhere, is)");
    m->window = on ? window : 0;
    return PP_OK;
}

/* layer_types (transformers >= 4.53 writes it into every config with mixed attention): one of
 * full_attention, sliding_attention, chunked_attention per layer; its length is
 * num_hidden_layers (configuration_utils.layer_type_validation). */
static pp_status hf_layer_types(const hf_ctx *h, int64_t layers, bool *windowed)
{
    const yaml_node_t *v = h->found[H_LAYER_TYPES];
    if (v->type != YAML_SEQUENCE_NODE)
        return hf_fail(h, H_LAYER_TYPES, "expected a sequence of strings, got %s", pp_yaml_node_kind(v));
    int64_t n = v->data.sequence.items.top - v->data.sequence.items.start;
    if (n != layers)
        return hf_fail(h, H_LAYER_TYPES, "%lld entries for %lld layers (num_hidden_layers)", (long long)n,
                       (long long)layers);
    for (int64_t i = 0; i < n; i++) {
        yaml_node_t *e = yaml_document_get_node(&h->y->doc, v->data.sequence.items.start[i]);
        const char *s = e && e->type == YAML_SCALAR_NODE && !pp_yaml_is_null(e) ? (const char *)e->data.scalar.value : NULL;
        if (s && !strcmp(s, "full_attention")) windowed[i] = false;
        else if (s && (!strcmp(s, "sliding_attention") || !strcmp(s, "chunked_attention"))) windowed[i] = true;
        else
            return pp_yaml_error(h->y, e ? e : v, "key 'layer_types': entry %lld is not one of "
                                 "full_attention, sliding_attention, chunked_attention (other kinds "
                                 "of layer are not modelled)", (long long)i);
    }
    return PP_OK;
}

/* Layers that are MoE as a list (Llama 4's moe_layers): fit moe_first_dense, moe_every,
 * moe_phase and the exceptions (dense_layers), fewest exceptions first. */
static pp_status moe_fit(const hf_ctx *h, int id, const int64_t *idx, int64_t n, pp_model *m)
{
    bool moe[HF_MAX_LAYER_LIST] = {false};
    int64_t L = m->layers, first = L;
    if (L > HF_MAX_LAYER_LIST) return hf_fail(h, id, "a list of MoE layers for more than %d layers is not supported", HF_MAX_LAYER_LIST);
    for (int64_t i = 0; i < n; i++) {
        if (idx[i] >= L)
            return hf_fail(h, id, "layer %lld is not one of the %lld layers", (long long)idx[i], (long long)L);
        moe[idx[i]] = true;
        if (idx[i] < first) first = idx[i];
    }
    int64_t best = -1, best_exc = PP_MODEL_MAX_LIST + 1;
    for (int64_t every = 1; every <= L && best_exc > 0; every++) {
        int64_t exc = 0;
        bool ok = true;
        for (int64_t i = first; i < L && ok; i++) {
            bool cand = i % every == first % every;
            if (moe[i] && !cand) ok = false;
            if (cand && !moe[i]) exc++;
        }
        if (ok && exc < best_exc) {
            best = every;
            best_exc = exc;
        }
    }
    if (best < 0)
        return hf_fail(h, id, "this set of MoE layers is not modelled (MoE every n-th layer from a "
                              "first one, with at most %d dense exceptions, is)", PP_MODEL_MAX_LIST);
    m->moe_first_dense = first;
    m->moe_every = best;
    m->moe_phase = first % best;
    m->n_dense_layers = 0;
    for (int64_t i = first; i < L; i++)
        if (i % best == first % best && !moe[i]) m->dense_layers[m->n_dense_layers++] = i;
    return PP_OK;
}

/* The shape keys most families spell alike: hidden_size, the MLP size (ffn_id), heads, layers,
 * vocab_size, max_position_embeddings (vocab, max_pos: the config class's defaults, 0 when the
 * key is required). */
static pp_status hf_shape(const hf_ctx *h, int ffn_id, int64_t vocab, int64_t max_pos, pp_model *m)
{
    pp_status st;
    HF_INT(&m->hidden, true, H_HIDDEN_SIZE);
    if ((st = hf_int(h, &ffn_id, 1, true, &m->ffn))) return st;
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

/* Mixture of Experts: how a family spells it (the readers in hf_moe). */
typedef enum { MOE_NONE, MOE_MIXTRAL, MOE_QWEN, MOE_QWEN2, MOE_DEEPSEEK, MOE_LLAMA4, MOE_GPTOSS } hf_moe_kind;
/* Sliding or chunked attention: which layers and how the family says so (hf_window). */
typedef enum { WIN_NONE, WIN_ALL, WIN_QWEN, WIN_QWEN3_MOE, WIN_QWEN2_MOE, WIN_TYPES, WIN_LLAMA4 } hf_win_kind;

enum {
    HF_QKV_BIAS = 1u << 0,       /* q/k/v biases with no key (Qwen2Attention: bias=True) */
    HF_QKV_BIAS_KEY = 1u << 1,   /* q/k/v biases by `qkv_bias`, default true (Qwen2MoeConfig) */
    HF_ATTN_BIAS_KEY = 1u << 2,  /* `attention_bias` gives q/k/v/o biases (LlamaAttention, ...) */
    HF_ATTN_BIAS_ON = 1u << 3,   /* ... and defaults to true (GptOssConfig) */
    HF_MLP_BIAS_KEY = 1u << 4,   /* `mlp_bias` gives MLP biases (LlamaMLP) */
    HF_QKNORM_HEAD = 1u << 5,    /* RMSNorm(head_dim) on q and k (Qwen3Attention, Gemma3Attention) */
    HF_QKNORM_FULL = 1u << 6,    /* RMSNorm over all heads' q and k (Olmo2Attention) */
    HF_NORMS4 = 1u << 7,         /* pre- and post-norm around attention and MLP (Gemma 2, 3) */
    HF_GEMMA = 1u << 8,          /* hidden_activation, GeGLU (gelu_pytorch_tanh) by default */
    HF_MLA = 1u << 9,            /* multi-head latent attention (DeepSeek-V2 sec. 2.1) */
    HF_MTP = 1u << 10,           /* num_nextn_predict_layers (DeepSeek-V3 sec. 2.2) */
    HF_SINKS = 1u << 11,         /* a learned sink logit per head (GptOssAttention.sinks) */
    HF_WINDOW_PATTERN = 1u << 12, /* sliding_window_pattern: full every n-th layer (Gemma 3) */
};

typedef struct {
    const char *type;
    hf_moe_kind moe;
    hf_win_kind win;
    unsigned f;
    /* transformers' config-class defaults for keys configs leave out (0: the key is required) */
    int64_t head_dim, vocab, max_pos;
    bool tied;
    int64_t window, every, phase; /* WIN_TYPES: default window and full-attention layers */
    double eps, theta;            /* rms_norm_eps, rope_theta */
} hf_family;

/* Defaults: the config classes' (configuration_<type>.py), rms_norm_eps and rope_theta last
 * (DeepseekV3Config's for kimi_k2). Layer patterns: the comments. */
static const hf_family hf_families[] = {
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
                                               "RefinedWebModel", "RefinedWeb", "bert"};
#define N_CLASSIC (sizeof hf_classic_types / sizeof hf_classic_types[0])

static bool hf_is_deepseek_v3(const hf_family *fam) { return fam->f & HF_MTP; }

/* Keys of a feature the family does not have: an error rather than a model silently without
 * it. (Transformers ignores such keys; a file that has them was meant for another type.) */
static pp_status hf_foreign_keys(const hf_ctx *h, const hf_family *fam)
{
    static const int mla[] = {H_Q_LORA, H_KV_LORA, H_QK_NOPE, H_QK_ROPE, H_V_HEAD};
    static const int moe[] = {H_NUM_LOCAL_EXPERTS, H_NUM_EXPERTS, H_N_ROUTED, H_MOE_INTERMEDIATE,
                              H_SHARED_INTERMEDIATE, H_N_SHARED};
    if (!(fam->f & HF_MLA))
        for (size_t i = 0; i < sizeof mla / sizeof mla[0]; i++)
            if (hf_has(h, mla[i]))
                return hf_fail(h, mla[i], "multi-head latent attention is not part of model_type '%s' "
                                          "(deepseek_v2, deepseek_v3 and kimi_k2 have it)", h->type);
    if (fam->moe == MOE_NONE)
        for (size_t i = 0; i < sizeof moe / sizeof moe[0]; i++)
            if (hf_has(h, moe[i]))
                return hf_fail(h, moe[i], "model_type '%s' has no experts", h->type);
    if (hf_has(h, H_NEXTN) && h->c->num_nextn_predict_layers > 0 && !(fam->f & HF_MTP))
        return hf_fail(h, H_NEXTN, "multi-token prediction is not part of model_type '%s' (deepseek_v3 "
                                   "and kimi_k2 have it)", h->type);
    if (hf_bool(h, H_ATTN_BIAS, false) && !(fam->f & HF_ATTN_BIAS_KEY))
        return hf_fail(h, H_ATTN_BIAS, "model_type '%s' has no attention biases to turn on%s", h->type,
                       fam->f & HF_MLA ? " (the latent projections' biases are not modelled)" : "");
    if (hf_bool(h, H_MLP_BIAS, false) && !(fam->f & HF_MLP_BIAS_KEY))
        return hf_fail(h, H_MLP_BIAS, "model_type '%s' has no MLP biases to turn on", h->type);
    return PP_OK;
}

static pp_status hf_mla(const hf_ctx *h, pp_model *m)
{
    /* DeepseekV3Attention: q_a_proj h -> q_lora_rank (+ q_a_layernorm) -> q_b_proj, or q_proj
     * when q_lora_rank is null (DeepSeek-V2-Lite); kv_a_proj_with_mqa h -> kv_lora_rank +
     * qk_rope_head_dim, kv_a_layernorm, kv_b_proj -> heads (qk_nope + v); o_proj heads v -> h.
     * head_dim is left to pp_model_validate (nope + rope): a config's head_dim is the RoPE
     * width there (qk_rope_head_dim), not the query width. */
    HF_INT(&m->kv_lora_rank, true, H_KV_LORA);
    HF_INT(&m->q_lora_rank, false, H_Q_LORA);
    HF_INT(&m->qk_nope_dim, true, H_QK_NOPE);
    HF_INT(&m->qk_rope_dim, true, H_QK_ROPE);
    HF_INT(&m->v_head_dim, true, H_V_HEAD);
    m->head_dim = 0;
    return PP_OK;
}

/* Routed experts (ids: the spellings of the count); fewer than 2 is not a MoE layer. */
static pp_status hf_experts(const hf_ctx *h, const int *ids, int n, pp_model *m)
{
    pp_status st = hf_int(h, ids, n, true, &m->experts);
    if (st) return st;
    if (m->experts < 2) {
        int id = ids[0];
        for (int i = 0; i < n; i++)
            if (hf_has(h, ids[i])) id = ids[i];
        return hf_fail(h, id, "%lld: a MoE layer needs at least 2 experts", (long long)m->experts);
    }
    HF_INT(&m->topk, true, H_EXPERTS_PER_TOK, H_EXPERTS_PER_TOKEN);
    return PP_OK;
}

static pp_status hf_moe(const hf_ctx *h, const hf_family *fam, pp_model *m)
{
    static const int local[] = {H_NUM_LOCAL_EXPERTS};
    static const int qwen[] = {H_NUM_EXPERTS, H_NUM_LOCAL_EXPERTS}; /* Qwen3MoeConfig.attribute_map */
    static const int deepseek[] = {H_N_ROUTED};
    pp_status st;
    switch (fam->moe) {
    case MOE_NONE:
        return PP_OK;
    case MOE_MIXTRAL: /* MixtralSparseMoeBlock: num_local_experts experts of intermediate_size */
        return hf_experts(h, local, 1, m);
    case MOE_GPTOSS:
        /* GptOssMLP: router Linear(h, E) with bias; GptOssExperts: gate_up_proj (E, h, 2f) and
         * down_proj (E, f, h), each with a bias; f = intermediate_size. No dense layer. */
        if ((st = hf_experts(h, local, 1, m))) return st;
        m->moe_ffn = m->ffn;
        m->router_bias = m->mlp_bias = true;
        return PP_OK;
    case MOE_QWEN:
    case MOE_QWEN2:
        /* Qwen2MoeDecoderLayer / Qwen3MoeDecoderLayer: layer i is MoE when it is not in
         * mlp_only_layers and num_experts > 0 and (i + 1) % decoder_sparse_step == 0; the
         * others are a dense MLP of intermediate_size. num_experts 0 is a dense model. */
        HF_INT(&m->experts, true, H_NUM_EXPERTS, H_NUM_LOCAL_EXPERTS);
        if (m->experts == 0) {
            m->topk = 0;
            return PP_OK;
        }
        if ((st = hf_experts(h, qwen, 2, m))) return st;
        HF_INT(&m->moe_ffn, true, H_MOE_INTERMEDIATE);
        m->moe_every = 1;
        HF_INT(&m->moe_every, false, H_SPARSE_STEP);
        m->moe_phase = m->moe_every - 1;
        for (int64_t i = 0; i < h->c->n_mlp_only_layers; i++) {
            if (h->c->mlp_only_layers[i] >= m->layers)
                return hf_fail(h, H_MLP_ONLY, "layer %lld is not one of the %lld layers",
                               (long long)h->c->mlp_only_layers[i], (long long)m->layers);
            m->dense_layers[i] = h->c->mlp_only_layers[i];
        }
        m->n_dense_layers = h->c->n_mlp_only_layers;
        if (fam->moe == MOE_QWEN2) {
            /* Qwen2MoeSparseMoeBlock: one shared expert of shared_expert_intermediate_size with a
             * sigmoid gate Linear(h, 1, bias=False) (shared_expert_gate). */
            HF_INT(&m->shared_ffn, true, H_SHARED_INTERMEDIATE);
            m->shared_experts = m->shared_ffn > 0;
            m->shared_gate = m->shared_ffn > 0;
        }
        return PP_OK;
    case MOE_DEEPSEEK:
        /* DeepseekV2MoE / DeepseekV3MoE: n_routed_experts experts of moe_intermediate_size;
         * shared_experts one MLP of moe_intermediate_size * n_shared_experts; dense layers
         * (intermediate_size) where i < first_k_dense_replace or i % moe_layer_freq != 0
         * (DeepSeek's modeling_deepseek.py DecoderLayer; transformers leaves moe_layer_freq
         * out, every released config has 1). DeepseekV3TopkRouter keeps an
         * e_score_correction_bias per expert (aux-loss-free balancing, DeepSeek-V3 sec. 2.1.2),
         * stored in the checkpoint: the router bias. */
        if ((st = hf_experts(h, deepseek, 1, m))) return st;
        HF_INT(&m->moe_ffn, true, H_MOE_INTERMEDIATE);
        HF_INT(&m->shared_experts, false, H_N_SHARED);
        m->shared_ffn = m->shared_experts * m->moe_ffn;
        HF_INT(&m->moe_first_dense, false, H_FIRST_K_DENSE);
        m->moe_every = 1;
        HF_INT(&m->moe_every, false, H_MOE_LAYER_FREQ);
        m->moe_phase = 0;
        m->router_bias = hf_is_deepseek_v3(fam);
        if (hf_is_deepseek_v3(fam)) HF_INT(&m->mtp_layers, false, H_NEXTN);
        return PP_OK;
    case MOE_LLAMA4:
        /* Llama4TextMoe: num_local_experts experts and one shared expert, both of
         * intermediate_size, router Linear(h, E, bias=False); the other layers are a dense
         * MLP of intermediate_size_mlp. MoE layers: moe_layers, else every
         * interleave_moe_layer_step-th from step - 1 (Llama4TextConfig). */
        if ((st = hf_experts(h, local, 1, m))) return st;
        m->moe_ffn = m->ffn;
        m->shared_experts = 1;
        m->shared_ffn = m->ffn;
        HF_INT(&m->ffn, true, H_INTERMEDIATE_MLP);
        if (hf_has(h, H_MOE_LAYERS) && h->c->n_moe_layers == 0) { /* moe_layers []: every layer dense */
            m->experts = m->topk = m->moe_ffn = m->shared_experts = m->shared_ffn = 0;
            return PP_OK;
        }
        if (hf_has(h, H_MOE_LAYERS)) return moe_fit(h, H_MOE_LAYERS, h->c->moe_layers, h->c->n_moe_layers, m);
        m->moe_every = 1;
        HF_INT(&m->moe_every, false, H_INTERLEAVE);
        m->moe_phase = m->moe_every - 1;
        return PP_OK;
    }
    return PP_OK;
}

/* Qwen2/Qwen3 with use_sliding_window: layer_types, else windowed from max_window_layers on
 * (Qwen2Config, Qwen3Config: i >= max_window_layers, default 28); Qwen2-MoE: even layers below
 * max_window_layers (Qwen2MoeConfig). Representable: none, all, or (Qwen2-MoE) all even. */
static pp_status hf_window_qwen(const hf_ctx *h, const hf_family *fam, pp_model *m)
{
    if (!hf_bool(h, H_USE_SLIDING, false)) return PP_OK;
    int64_t window = 0;
    HF_INT(&window, true, H_SLIDING_WINDOW);
    if (fam->win == WIN_QWEN3_MOE) { /* Qwen3MoeAttention: config.sliding_window on every layer */
        m->window = window;
        return PP_OK;
    }
    bool windowed[HF_MAX_LAYER_LIST];
    if (hf_has(h, H_LAYER_TYPES)) {
        if (m->layers > HF_MAX_LAYER_LIST) return hf_fail(h, H_LAYER_TYPES, "more than %d layers", HF_MAX_LAYER_LIST);
        pp_status st = hf_layer_types(h, m->layers, windowed);
        return st ? st : window_set(h, H_LAYER_TYPES, windowed, m->layers, window, m);
    }
    int64_t mwl = 28;
    HF_INT(&mwl, false, H_MAX_WINDOW_LAYERS);
    if (fam->win == WIN_QWEN2_MOE) {
        int64_t last_even = (m->layers - 1) / 2 * 2;
        if (mwl == 0) return PP_OK;
        if (mwl <= last_even)
            return hf_fail(h, H_MAX_WINDOW_LAYERS, "%lld: sliding window on the even layers below it "
                           "and not above is not modelled (all or none are)", (long long)mwl);
        m->window = window;
        m->window_full_every = m->layers > 1 ? 2 : 0;
        m->window_full_phase = m->layers > 1 ? 1 : 0;
        return PP_OK;
    }
    if (mwl >= m->layers) return PP_OK;
    if (mwl > 0)
        return hf_fail(h, H_MAX_WINDOW_LAYERS, "%lld: full attention on the first %lld layers and a "
                       "sliding window above is not modelled (all or none windowed are)",
                       (long long)mwl, (long long)mwl);
    m->window = window;
    return PP_OK;
}

static pp_status hf_window(const hf_ctx *h, const hf_family *fam, pp_model *m)
{
    bool windowed[HF_MAX_LAYER_LIST];
    int64_t window = fam->window;
    pp_status st;
    switch (fam->win) {
    case WIN_NONE:
        return PP_OK;
    case WIN_ALL: /* sliding_window null: full attention */
        HF_INT(&m->window, false, H_SLIDING_WINDOW);
        return PP_OK;
    case WIN_QWEN:
    case WIN_QWEN2_MOE:
    case WIN_QWEN3_MOE:
        return hf_window_qwen(h, fam, m);
    case WIN_TYPES:
        HF_INT(&window, false, H_SLIDING_WINDOW);
        if (hf_has(h, H_LAYER_TYPES)) break;
        m->window = window;
        m->window_full_every = fam->every;
        m->window_full_phase = fam->phase;
        if (fam->f & HF_WINDOW_PATTERN) {
            int64_t p = fam->every;
            HF_INT(&p, false, H_WINDOW_PATTERN);
            m->window_full_every = p > 1 ? p : 0;
            m->window_full_phase = p > 1 ? p - 1 : 0;
            if (p == 1) m->window = 0; /* (i + 1) % 1 == 0: every layer is global */
        }
        return PP_OK;
    case WIN_LLAMA4: {
        /* Llama4TextAttention: the RoPE layers (no_rope_layers[i] == 1) attend within chunks of
         * attention_chunk_size (null: no chunking); the NoPE layers, one in
         * no_rope_layer_interval (default 4: i % 4 == 3), attend to everything. A chunk is
         * modelled as a window of its size. */
        yaml_node_t *chunk = pp_yaml_lookup(h->y, h->root, "attention_chunk_size", false);
        if (chunk && pp_yaml_is_null(chunk)) return PP_OK;
        window = 8192;
        HF_INT(&window, false, H_CHUNK);
        if (hf_has(h, H_LAYER_TYPES)) break;
        if (hf_has(h, H_NO_ROPE_LAYERS)) {
            if (h->c->n_no_rope_layers < m->layers)
                return hf_fail(h, H_NO_ROPE_LAYERS, "%lld entries for %lld layers",
                               (long long)h->c->n_no_rope_layers, (long long)m->layers);
            for (int64_t i = 0; i < m->layers; i++) windowed[i] = h->c->no_rope_layers[i] == 1;
            return window_set(h, H_NO_ROPE_LAYERS, windowed, m->layers, window, m);
        }
        int64_t every = 4;
        HF_INT(&every, false, H_NO_ROPE_INTERVAL);
        m->window = every > 1 ? window : 0;
        m->window_full_every = every > 1 ? every : 0;
        m->window_full_phase = every > 1 ? every - 1 : 0;
        return PP_OK;
    }
    }
    /* layer_types given (WIN_TYPES, WIN_LLAMA4) */
    if (m->layers > HF_MAX_LAYER_LIST) return hf_fail(h, H_LAYER_TYPES, "more than %d layers", HF_MAX_LAYER_LIST);
    if ((st = hf_layer_types(h, m->layers, windowed))) return st;
    return window_set(h, H_LAYER_TYPES, windowed, m->layers, window, m);
}

/* ================================================================== what else defines the model */

static double hf_num(const hf_ctx *h, int id) { return *(const double *)((const char *)h->c + hf_keys[id].off); }

/* The norm epsilon (any of its spellings, else the config class's eps) and, for RoPE models, the
 * base (rope_theta; GPT-NeoX's rotary_emb_base; else theta) and rope_scaling as transformers'
 * modeling_rope_utils.py reads it: "type" is rope_type's older spelling; default, linear, llama3
 * and yarn are modelled (yarn: original_max_position_embeddings defaults to
 * max_position_embeddings, betas 32 and 1, truncate true); others (dynamic, longrope) are an error. */
static pp_status hf_definition(const hf_ctx *h, double eps, double theta, pp_model *m)
{
    static const int eps_ids[] = {H_RMS_EPS, H_LN_EPS, H_LN_EPSILON, H_NORM_EPS};
    static const int theta_ids[] = {H_ROPE_THETA, H_ROTARY_BASE, H_ROPE_LOCAL};
    m->norm_eps = eps;
    for (int i = 3; i >= 0; i--)
        if (hf_has(h, eps_ids[i])) m->norm_eps = hf_num(h, eps_ids[i]);
    for (int i = 0; i < 4; i++) {
        int id = i < 3 && hf_has(h, theta_ids[i]) && !(hf_num(h, theta_ids[i]) > 0) ? theta_ids[i]
               : hf_has(h, eps_ids[i]) && !(hf_num(h, eps_ids[i]) > 0) ? eps_ids[i] : -1;
        if (id >= 0) return hf_fail(h, id, "must be positive");
    }
    if (m->pos != PP_POS_ROPE) return PP_OK;
    m->rope_theta = hf_has(h, H_ROPE_THETA) ? hf_num(h, H_ROPE_THETA) : hf_has(h, H_ROTARY_BASE) ? hf_num(h, H_ROTARY_BASE) : theta;
    /* Gemma3TextConfig: the sliding layers' base rope_local_base_freq (10000), unscaled */
    if (!strcmp(h->type, "gemma3_text")) m->rope_local_theta = hf_has(h, H_ROPE_LOCAL) ? hf_num(h, H_ROPE_LOCAL) : 1e4;
    if (m->rope_local_theta == m->rope_theta) m->rope_local_theta = 0;
    const hf_cfg *c = h->c;
    yaml_node_t *rs = h->found[H_ROPE_SCALING];
    bool oss = !rs && !strcmp(h->type, "gpt_oss"); /* GptOssConfig's default: yarn 32 over 4096, truncate false */
    if (!rs && !oss) return PP_OK;
#define RS_HAS(k) (oss ? false : (bool)(pp_yaml_lookup(h->y, rs, k, false) && !pp_yaml_is_null(pp_yaml_lookup(h->y, rs, k, false))))
    const char *type = oss ? "yarn" : RS_HAS("rope_type") ? c->rs_rope_type : RS_HAS("type") ? c->rs_type : "default";
    if (!strcmp(type, "default")) return PP_OK;
    int t = pp_name_lookup(pp_rope_scaling_names, PP_ROPE_SCALING_COUNT, type);
    if (t <= 0) return hf_fail(h, H_ROPE_SCALING, "type '%s' is not modelled (default, linear, llama3, yarn are)", type);
    m->rope_scaling = (pp_rope_scaling)t;
    m->rope_factor = oss ? 32 : c->rs_factor;
    if (!(m->rope_factor > 0)) return hf_fail(h, H_ROPE_SCALING, "'%s' needs a positive factor", type);
    if (m->rope_scaling == PP_ROPE_SCALING_LINEAR) return PP_OK;
    m->rope_original_context = oss ? 4096 : RS_HAS("original_max_position_embeddings") ? c->rs_original : m->max_context;
    if (m->rope_scaling == PP_ROPE_SCALING_LLAMA3) {
        if (!RS_HAS("low_freq_factor") || !RS_HAS("high_freq_factor") || !RS_HAS("original_max_position_embeddings"))
            return hf_fail(h, H_ROPE_SCALING, "llama3 needs factor, low_freq_factor, high_freq_factor and "
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

/* The router as each family's modeling code runs it. Score function: DeepseekV2MoEGate's
 * scoring_func (softmax), DeepseekV3TopkRouter's and Llama4Router's sigmoid, softmax elsewhere.
 * Top-k weights renormalised: always in MixtralSparseMoeBlock and GptOssTopKRouter (a softmax over
 * the top-k logits), by norm_topk_prob in Qwen2-MoE, Qwen3-MoE and DeepSeek (config defaults false,
 * false, V2 false, V3 true), never in Llama4Router (the sigmoid of the top-k logits). DeepSeek:
 * routed_scaling_factor (V2 1.0, V3 2.5), groups n_group / topk_group (V3: 8 / 4; V2 only with
 * topk_method group_limited_greedy; one group is no limit), the e_score_correction_bias of V3
 * (aux-loss-free balancing), aux_loss_alpha with seq_aux (V2 0.001, true; V3's class has neither).
 * The others: transformers' load_balancing_loss_func (Switch's) with router_aux_loss_coef (0.001;
 * GptOssConfig 0.9). router_z_loss_coef where a config gives it. */
static pp_status hf_router(const hf_ctx *h, const hf_family *fam, pp_model *m)
{
    const hf_cfg *c = h->c;
    bool ds = fam->moe == MOE_DEEPSEEK, v3 = hf_is_deepseek_v3(fam);
    if (m->experts <= 1) return PP_OK;
    const char *sf = ds && hf_has(h, H_SCORING) ? c->scoring_func : v3 || fam->moe == MOE_LLAMA4 ? "sigmoid" : "softmax";
    int score = pp_name_lookup(pp_router_score_names, PP_ROUTER_SCORE_COUNT, sf);
    if (score < 0) return hf_fail(h, H_SCORING, "'%s' is not supported (softmax, sigmoid)", sf);
    m->router_score = (pp_router_score)score;
    bool norm = fam->moe == MOE_MIXTRAL || fam->moe == MOE_GPTOSS || v3;
    if (fam->moe == MOE_QWEN || fam->moe == MOE_QWEN2 || ds) norm = hf_bool(h, H_NORM_TOPK, norm);
    m->router_raw_topk = !norm;
    m->router_z_coef = hf_has(h, H_Z_COEF) ? hf_num(h, H_Z_COEF) : 0;
    if (!ds) {
        m->router_balance = PP_BALANCE_AUX_LOSS;
        m->router_aux_coef = hf_has(h, H_AUX_COEF) ? hf_num(h, H_AUX_COEF) : fam->moe == MOE_GPTOSS ? 0.9 : 0.001;
        return PP_OK;
    }
    m->router_scale = hf_has(h, H_ROUTED_SCALE) ? hf_num(h, H_ROUTED_SCALE) : v3 ? 2.5 : 1.0;
    int64_t ng = v3 ? 8 : 0, tg = v3 ? 4 : 0;
    HF_INT(&ng, false, H_N_GROUP);
    HF_INT(&tg, false, H_TOPK_GROUP);
    if ((!v3 && (!hf_has(h, H_TOPK_METHOD) || strcmp(c->topk_method, "group_limited_greedy"))) || ng <= 1) ng = tg = 0;
    m->router_groups = ng;
    m->router_group_topk = tg;
    m->router_expert_bias = v3;
    if (!v3 || hf_has(h, H_AUX_ALPHA)) {
        m->router_balance = hf_bool(h, H_SEQ_AUX, true) ? PP_BALANCE_SEQ_AUX_LOSS : PP_BALANCE_AUX_LOSS;
        m->router_aux_coef = hf_has(h, H_AUX_ALPHA) ? hf_num(h, H_AUX_ALPHA) : 0.001;
    }
    return PP_OK;
}

/* The RMSNorm, RoPE, gated-MLP decoders (LLaMA, Touvron et al. 2023, and its descendants). */
static pp_status hf_decoder(const hf_ctx *h, const hf_family *fam, pp_model *m)
{
    pp_status st = hf_shape(h, H_INTERMEDIATE, fam->vocab, fam->max_pos, m);
    if (st) return st;
    m->kv_heads = m->heads;
    HF_INT(&m->kv_heads, false, H_NUM_KV_HEADS);
    m->head_dim = fam->head_dim;
    if (!(fam->f & HF_MLA)) HF_INT(&m->head_dim, false, H_HEAD_DIM);
    /* A gated MLP has 3 h f weights whatever its nonlinearity (GeGLU counts as SwiGLU). Gemma
     * spells it hidden_activation (Gemma2Config, Gemma3TextConfig), gelu_pytorch_tanh. */
    int act_id = hf_has(h, H_HIDDEN_ACTIVATION) ? H_HIDDEN_ACTIVATION : H_HIDDEN_ACT;
    const char *a = hf_has(h, act_id) ? (const char *)h->c + hf_keys[act_id].off
                                      : fam->f & HF_GEMMA ? "gelu_pytorch_tanh" : "silu";
    if (strcmp(a, "silu") && strcmp(a, "swish") && strncmp(a, "gelu", 4))
        return hf_fail(h, act_id, "'%s' is not supported (silu, gelu*)", a);
    m->act = PP_ACT_SWIGLU;
    m->norm = PP_NORM_RMSNORM;
    m->pos = PP_POS_ROPE;
    m->bias = false;
    /* tie_word_embeddings: the text model's, else the wrapper's, else the class default */
    m->tied = hf_bool(h, H_TIE, h->outer ? hf_bool(h->outer, H_TIE, fam->tied) : fam->tied);
    if ((st = hf_foreign_keys(h, fam))) return st;
    bool attn_bias = (fam->f & HF_ATTN_BIAS_KEY) && hf_bool(h, H_ATTN_BIAS, fam->f & HF_ATTN_BIAS_ON);
    m->qkv_bias = attn_bias || (fam->f & HF_QKV_BIAS) || ((fam->f & HF_QKV_BIAS_KEY) && hf_bool(h, H_QKV_BIAS, true));
    m->out_bias = attn_bias;
    m->mlp_bias = (fam->f & HF_MLP_BIAS_KEY) && hf_bool(h, H_MLP_BIAS, false);
    m->qk_norm = fam->f & HF_QKNORM_HEAD ? PP_QKNORM_HEAD : fam->f & HF_QKNORM_FULL ? PP_QKNORM_FULL : PP_QKNORM_NONE;
    m->norms_per_layer = fam->f & HF_NORMS4 ? 4 : 2;
    m->attn_sinks = fam->f & HF_SINKS;
    if ((fam->f & HF_MLA) && (st = hf_mla(h, m))) return st;
    if ((st = hf_moe(h, fam, m))) return st;
    /* biases on every linear layer but the output (gpt-oss, as GPT-2): Megatron's --add-bias-linear */
    m->bias = m->qkv_bias && m->out_bias && m->mlp_bias;
    if ((st = hf_router(h, fam, m)) || (st = hf_definition(h, fam->eps, fam->theta, m))) return st;
    if ((st = hf_window(h, fam, m))) return st;
    hf_dropout(h, m, 0, 0); /* their config classes: attention_dropout 0.0, no hidden dropout */
    return PP_OK;
}

/* ================================================================== the other families */

static pp_status hf_classic(const hf_ctx *h, const char *mt, pp_model *m)
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
        hf_gpt_like(m, PP_POS_LEARNED, true, hf_bool(h, H_TIE, true));
        hf_dropout(h, m, 0.1, 0.1);
    } else if (!strcmp(mt, "gpt_neox")) {
        /* GPT-NeoX (Black et al. 2022): rotary on rotary_pct of each head (no parameters),
         * parallel residual (same tensors), untied output, biases everywhere. */
        if ((st = hf_shape(h, H_INTERMEDIATE, 0, 0, m))) return st;
        if ((st = hf_plain_act(h, H_HIDDEN_ACT, "gelu", &m->act))) return st;
        hf_gpt_like(m, PP_POS_ROPE, hf_bool(h, H_ATTN_BIAS, true), hf_bool(h, H_TIE, false));
        hf_dropout(h, m, 0, 0);
    } else if (!strcmp(mt, "opt")) {
        /* OPT (Zhang et al. 2022): learned positions with 2 offset rows (2h, not counted);
         * OPTConfig: dropout 0.1, attention_dropout 0.0. */
        if ((st = hf_shape(h, H_FFN_DIM, 0, 0, m))) return st;
        if (hf_has(h, H_WORD_EMBED_PROJ) && h->c->word_embed_proj_dim != m->hidden)
            return hf_fail(h, H_WORD_EMBED_PROJ, "%lld differs from hidden_size %lld; projected "
                           "embeddings (opt-350m) are not modelled",
                           (long long)h->c->word_embed_proj_dim, (long long)m->hidden);
        if ((st = hf_plain_act(h, H_ACT_FN, "relu", &m->act))) return st;
        hf_gpt_like(m, PP_POS_LEARNED, hf_bool(h, H_ENABLE_BIAS, true), hf_bool(h, H_TIE, true));
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
        hf_gpt_like(m, PP_POS_ALIBI, true, hf_bool(h, H_TIE, true));
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
        if (hf_bool(h, H_NEW_DECODER, false)) {
            HF_INT(&m->kv_heads, true, H_NUM_KV_HEADS_F, H_N_HEAD_KV);
        } else if (hf_bool(h, H_MULTI_QUERY, true)) {
            m->kv_heads = 1;
        } else {
            m->kv_heads = m->heads;
        }
        m->act = PP_ACT_GELU;
        hf_gpt_like(m, hf_bool(h, H_ALIBI, false) ? PP_POS_ALIBI : PP_POS_ROPE, hf_bool(h, H_BIAS, false),
                    hf_bool(h, H_TIE, true));
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
static int hf_validate_key(const hf_ctx *h, const char *msg)
{
    /* "hidden 100 is not divisible by heads 7": the divisor; "the MoE layer pattern leaves no
     * MoE layer": the keys of the pattern. */
    static const int pattern[] = {H_SPARSE_STEP, H_MLP_ONLY, H_FIRST_K_DENSE, H_MOE_LAYER_FREQ,
                                  H_INTERLEAVE, H_MOE_LAYERS};
    const char *field = strstr(msg, "not divisible by heads") ? "heads" : NULL;
    if (strstr(msg, "leaves no MoE layer"))
        for (size_t i = 0; i < sizeof pattern / sizeof pattern[0]; i++)
            if (hf_has(h, pattern[i])) return pattern[i];
    for (size_t i = 0; i < sizeof hf_field_keys / sizeof hf_field_keys[0]; i++) {
        size_t l = strlen(hf_field_keys[i].field);
        if (field ? strcmp(field, hf_field_keys[i].field)
                  : strncmp(msg, hf_field_keys[i].field, l) || (msg[l] != ' ' && msg[l] != ':'))
            continue;
        for (int j = 0; j < 4 && hf_field_keys[i].ids[j] >= 0; j++)
            if (hf_has(h, hf_field_keys[i].ids[j])) return hf_field_keys[i].ids[j];
        break;
    }
    return -1;
}

/* ================================================================== entry point */

static const hf_family *hf_family_find(const char *type)
{
    for (size_t i = 0; i < N_FAMILIES; i++)
        if (!strcmp(hf_families[i].type, type)) return &hf_families[i];
    return NULL;
}

static pp_status hf_unsupported(const hf_ctx *h, const char *mt)
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
    return hf_fail(h, H_MODEL_TYPE, "'%s' is not supported (%s)", mt, list);
}

static pp_status hf_read(pp_yaml *y, yaml_node_t *map, hf_cfg *c, hf_ctx *h, const char *what)
{
    memset(c, 0, sizeof *c);
    h->y = y;
    h->root = map;
    h->c = c;
    return pp_yaml_map(y, map, hf_keys, H_COUNT, c, PP_YAML_IGNORE_UNKNOWN | PP_YAML_NULL_ABSENT,
                       h->found, what);
}

pp_status pp_hf_model_load(pp_yaml *y, yaml_node_t *root, pp_model *m)
{
    hf_cfg outer_c, text_c; /* about 17 KiB each (the layer lists) */
    hf_ctx outer = {0}, text = {0};
    pp_status st = hf_read(y, root, &outer_c, &outer, "config.json");
    if (st) return st;
    if (!hf_has(&outer, H_MODEL_TYPE))
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

    const hf_ctx *h = &outer;
    const hf_family *fam = hf_family_find(mt);
    for (size_t i = 0; i < N_WRAPPERS && !fam; i++) {
        if (strcmp(mt, hf_wrappers[i].type)) continue;
        /* The language model of Gemma3ForConditionalGeneration / Llama4ForConditionalGeneration
         * is text_config (the vision tower is not counted: see tests/loader/params.c). */
        yaml_node_t *tc = outer.found[H_TEXT_CONFIG];
        if (!tc) {
            yaml_node_t *v = pp_yaml_lookup(y, root, "text_config", false);
            if (v) return pp_yaml_error(y, v, "key 'text_config': null where a mapping is needed (model_type '%s')", mt);
            return pp_yaml_error(y, root, "config.json (model_type '%s'): missing required key 'text_config'", mt);
        }
        if (tc->type != YAML_MAPPING_NODE)
            return hf_fail(&outer, H_TEXT_CONFIG, "expected a mapping, got %s", pp_yaml_node_kind(tc));
        if ((st = hf_read(y, tc, &text_c, &text, "text_config"))) return st;
        text.type = hf_wrappers[i].text_type;
        text.outer = &outer;
        if (hf_has(&text, H_MODEL_TYPE) && strcmp(text_c.model_type, text.type))
            return hf_fail(&text, H_MODEL_TYPE, "'%s' inside a '%s' config (expected '%s')",
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
        return pp_yaml_error(y, pp_yaml_lookup(y, h->root, hf_keys[id].key, true), "config.json: key '%s': %s",
                             hf_keys[id].key, verr.msg);
    }
    return PP_OK;
}
