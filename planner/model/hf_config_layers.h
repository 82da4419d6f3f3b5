/* The layer-level readers of a Hugging Face config.json (hf_config_layers.c) as the families'
 * reader (hf_config.c) calls them, and the family description both read; not installed.
 */
#ifndef PP_HF_CONFIG_LAYERS_H
#define PP_HF_CONFIG_LAYERS_H

#include "hf_keys.h"

/* Mixture of Experts: how a family spells it (the readers in pp_hf_moe). */
typedef enum { MOE_NONE, MOE_MIXTRAL, MOE_QWEN, MOE_QWEN2, MOE_DEEPSEEK, MOE_LLAMA4, MOE_GPTOSS } pp_hf_moe_kind;
/* Sliding or chunked attention: which layers and how the family says so (pp_hf_window). */
typedef enum { WIN_NONE, WIN_ALL, WIN_QWEN, WIN_QWEN3_MOE, WIN_QWEN2_MOE, WIN_TYPES, WIN_LLAMA4 } pp_hf_win_kind;

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
    pp_hf_moe_kind moe;
    pp_hf_win_kind win;
    unsigned f;
    /* transformers' config-class defaults for keys configs leave out (0: the key is required) */
    int64_t head_dim, vocab, max_pos;
    bool tied;
    int64_t window, every, phase; /* WIN_TYPES: default window and full-attention layers */
    double eps, theta;            /* rms_norm_eps, rope_theta */
} pp_hf_family;

/* DeepSeek-V3 and its descendants (multi-token prediction, the V3 router). */
static inline bool pp_hf_is_deepseek_v3(const pp_hf_family *fam) { return fam->f & HF_MTP; }

/* hf_config_layers.c, called by the decoder families' reader in this order. */
/* Multi-head latent attention's ranks and head sizes (DeepseekV3Attention). */
pp_status pp_hf_mla(const pp_hf_ctx *h, pp_model *m);
/* The routed and shared experts and which layers are MoE, as each family spells it. */
pp_status pp_hf_moe(const pp_hf_ctx *h, const pp_hf_family *fam, pp_model *m);
/* The router as each family's modeling code runs it (score function, top-k, balancing). */
pp_status pp_hf_router(const pp_hf_ctx *h, const pp_hf_family *fam, pp_model *m);
/* Sliding or chunked attention: the window and which layers attend fully. */
pp_status pp_hf_window(const pp_hf_ctx *h, const pp_hf_family *fam, pp_model *m);

#endif
