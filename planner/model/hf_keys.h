/* The keys of a Hugging Face config.json as the reader's files share them (hf_keys.c defines the
 * table and the reading; hf_config.c and hf_config_layers.c read through them); not installed.
 * One config is read through pp_hf_ctx: the parsed keys (pp_hf_cfg), which of them the file gives
 * (found[]) and the mapping they come from, so that errors point at the key's file:line:col.
 */
#ifndef PP_HF_KEYS_H
#define PP_HF_KEYS_H

#include "pp_yaml.h"

#include <stdbool.h>
#include <stdint.h>

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
} pp_hf_cfg;

/* The key table (pp_hf_keys, hf_keys.c) and its index enum from one list, so that they cannot
 * drift apart. The key macros (HSTR, HINT, ...) are defined where the table is. */
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
enum { HF_KEYS(HF_ENUM_ID) H_COUNT };
extern const pp_key pp_hf_keys[H_COUNT];

typedef struct pp_hf_ctx {
    pp_yaml *y;
    yaml_node_t *root;            /* the mapping the keys come from: text_config for gemma3, llama4 */
    yaml_node_t *found[H_COUNT];  /* value node of each key given (NULL: absent or null) */
    const pp_hf_cfg *c;
    const char *type;             /* model_type of the text model (gemma3_text for gemma3) */
    const struct pp_hf_ctx *outer; /* the wrapper config around text_config, or NULL */
} pp_hf_ctx;

static inline bool pp_hf_has(const pp_hf_ctx *h, int id) { return h->found[id] != NULL; }
static inline int64_t pp_hf_i64(const pp_hf_ctx *h, int id) { return *(const int64_t *)((const char *)h->c + pp_hf_keys[id].off); }
static inline double pp_hf_num(const pp_hf_ctx *h, int id) { return *(const double *)((const char *)h->c + pp_hf_keys[id].off); }
static inline bool pp_hf_bool(const pp_hf_ctx *h, int id, bool dflt)
{
    return pp_hf_has(h, id) ? *(const bool *)((const char *)h->c + pp_hf_keys[id].off) : dflt;
}

/* An error about the value of key id (at its value node). */
pp_status pp_hf_fail(const pp_hf_ctx *h, int id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The first of the alias keys given (hidden_size | n_embd | n_embed). Aliases given together
 * must agree (num_experts_per_tok and gpt-oss's experts_per_token). A required key that is
 * absent is an error at the mapping; one that is null, an error at the null. */
pp_status pp_hf_int(const pp_hf_ctx *h, const int *ids, int n, bool required, int64_t *out);
/* Read the keys of mapping map into c (zeroed first) and set h up to read them: the file's
 * top level ("config.json") or a wrapper's "text_config". Unknown keys are ignored; a null
 * value counts as absent. */
pp_status pp_hf_read(pp_yaml *y, yaml_node_t *map, pp_hf_cfg *c, pp_hf_ctx *h, const char *what);
/* pp_hf_int into out, returning its error from the calling function (which has h in scope). */
#define HF_INT(out, req, ...)                                                                  \
    do {                                                                                       \
        static const int ids_[] = {__VA_ARGS__};                                               \
        pp_status s_ = pp_hf_int(h, ids_, (int)(sizeof ids_ / sizeof ids_[0]), req, out);      \
        if (s_) return s_;                                                                     \
    } while (0)

#endif
