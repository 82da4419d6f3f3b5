/* parplan planner library: core types shared by every module.
 *
 * The planner never needs CUDA. Conventions (see README "House style"):
 *   - one prefix pp_, <object>_<verb> names, units in identifiers (_bytes, _flops, _s, _gbs);
 *   - functions return PP_OK (0) or a negative pp_status and fill a pp_error;
 *   - every _init/_load has a _free that accepts NULL.
 */
#ifndef PP_H
#define PP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PP_VERSION "0.1.0"

/* ------------------------------------------------------------------ errors */

typedef enum {
    PP_OK = 0,
    PP_ERR_INPUT = -1,   /* bad input: CLI exits 2 */
    PP_ERR_RUNTIME = -2, /* failure at run time (I/O, GPU, solver): CLI exits 1 */
    PP_ERR_NOMEM = -3,
} pp_status;

typedef struct {
    pp_status status;
    char file[512]; /* "" when the error is not about a file */
    int line, col;  /* 1-based; 0 when unknown */
    char msg[512];
} pp_error;

/* Fill err (if not NULL) and return status. file may be NULL. printf-style. */
pp_status pp_error_set(pp_error *err, pp_status status, const char *file, int line, int col,
                       const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* "file:line:col: msg" ("file:line: msg" when the column is unknown) or just "msg"; writes at
 * most n bytes. */
void pp_error_format(const pp_error *err, char *buf, size_t n);
/* Append printf-style text to the NUL-terminated buf of n bytes (truncated at its end). */
void pp_strcatf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Append one item of a ", "-separated list (the config readers' "not modelled" and "unknown" lists);
 * nothing once fewer than 8 bytes are left. */
void pp_strlistf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Human-readable sizes for tables: "12.3 GiB". */
const char *pp_fmt_bytes(double bytes, char *buf, size_t n);
/* The next line of text[0, len) from *pos: its start in *s and its length without the '\n' in *n;
 * *pos moves past it. False at the end of the text. (Readers of logs and scripts walk lines so.) */
static inline bool pp_line_next(const char *text, size_t len, size_t *pos, const char **s, size_t *n)
{
    if (*pos >= len) return false;
    size_t j = *pos;
    while (j < len && text[j] != '\n') j++;
    *s = text + *pos;
    *n = j - *pos;
    *pos = j + 1;
    return true;
}

/* ------------------------------------------------------------------ model */

/* The MLP's activation: one row each of pp_activations (activation.c), which every loader, reader,
 * launch writer and estimate reads. */
typedef enum { PP_ACT_GELU = 0, PP_ACT_SWIGLU, PP_ACT_RELU, PP_ACT_SQUARED_RELU, PP_ACT_COUNT } pp_act;
typedef enum { PP_NORM_LAYERNORM = 0, PP_NORM_RMSNORM, PP_NORM_COUNT } pp_norm;
typedef enum { PP_POS_LEARNED = 0, PP_POS_ROPE, PP_POS_ALIBI, PP_POS_NONE, PP_POS_COUNT } pp_pos;

extern const char *const pp_act_names[PP_ACT_COUNT];   /* pp_activations's names: "gelu", "swiglu", ... */

/* What an activation is to each framework and to the memory model (its name, models.d's
 * `activation:` and --activation, is pp_act_names'). */
typedef struct {
    bool gated;              /* a gated MLP: fc1 writes the gate and the linear halves (2f) */
    const char *hf;          /* the Hugging Face hidden_act spellings that name it, '|'-separated; a
                                gated row's are those of a gated family's hidden_act ("silu") */
    const char *megatron;    /* Megatron-LM's switch (its argparse dest with '-' for '_'); "" for its
                                default GELU; NULL: Megatron-LM has none */
    bool megatron_fusion;    /* Megatron has a bias-activation kernel for it (fusions/) */
    const char *megatron_unfuse; /* the switch that turns that off (written where there is none:
                                    Megatron's MLP refuses to fuse another activation) */
    const char *nemo;        /* NeMo's model.activation; NULL: none */
    const char *torchtitan;  /* torchtitan's Llama FeedForward runs it; NULL: it does not */
    /* Bytes per token and per f (the MLP's inner size on the rank) that the activation keeps for
     * its backward between fc1 and fc2, fc2's own input not counted: fused (Megatron's kernels)
     * and eager (plain PyTorch ops, Megatron's unfused path). */
    double saved_fused, saved_eager;
    const char *source;      /* where those facts are read from */
} pp_act_row;
extern const pp_act_row pp_activations[PP_ACT_COUNT];
/* The row of an activation (NULL outside the enum). */
const pp_act_row *pp_act_info(pp_act a);
/* The row whose hf spellings include s ("relu2"; "gelu*" in a row matches every spelling that
 * starts with gelu), -1 when none does; gated: among the gated rows (a gated family's
 * hidden_act) or the plain ones. */
int pp_act_from_hf(const char *s, bool gated);
extern const char *const pp_norm_names[PP_NORM_COUNT]; /* "layernorm", "rmsnorm" */
extern const char *const pp_pos_names[PP_POS_COUNT];   /* "learned", "rope", "alibi", "none" */

/* Per-head normalisation of queries and keys before attention. */
typedef enum { PP_QKNORM_NONE = 0, PP_QKNORM_HEAD, PP_QKNORM_FULL, PP_QKNORM_COUNT } pp_qk_norm;
extern const char *const pp_qk_norm_names[PP_QKNORM_COUNT]; /* "none", "head", "full" */

/* RoPE frequency scaling: none; linear position interpolation (Chen et al. 2023, arXiv:2306.15595;
 * transformers "linear"); Llama 3.1's per-band rule (transformers "llama3"); YaRN (Peng et al.
 * 2023, arXiv:2309.00071). */
typedef enum { PP_ROPE_SCALING_NONE = 0, PP_ROPE_SCALING_LINEAR, PP_ROPE_SCALING_LLAMA3, PP_ROPE_SCALING_YARN,
               PP_ROPE_SCALING_COUNT } pp_rope_scaling;
extern const char *const pp_rope_scaling_names[PP_ROPE_SCALING_COUNT]; /* "none", "linear", "llama3", "yarn" */
/* MoE router: the score function over the experts' logits, and the load-balancing loss (Megatron's
 * --moe-router-load-balancing-type names: Switch/GShard per micro-batch, DeepSeek-V2's per
 * sequence, over the global batch, Sinkhorn (BASE layers)). */
typedef enum { PP_ROUTER_SOFTMAX = 0, PP_ROUTER_SIGMOID, PP_ROUTER_SCORE_COUNT } pp_router_score;
extern const char *const pp_router_score_names[PP_ROUTER_SCORE_COUNT]; /* "softmax", "sigmoid" */
typedef enum { PP_BALANCE_NONE = 0, PP_BALANCE_AUX_LOSS, PP_BALANCE_SEQ_AUX_LOSS, PP_BALANCE_GLOBAL_AUX_LOSS,
               PP_BALANCE_SINKHORN, PP_BALANCE_COUNT } pp_router_balance;
extern const char *const pp_router_balance_names[PP_BALANCE_COUNT]; /* "none", "aux_loss", ... */

#define PP_MODEL_MAX_LIST 64 /* explicit layer lists (e.g. Qwen's mlp_only_layers) */

/* A decoder-only (or encoder) transformer. Shapes follow Megatron's names. Every field past
 * `topk` is zero for the classic dense GPT/Llama shapes, so a zeroed struct plus pp_model_init
 * is a plain dense model. */
typedef struct {
    char name[64];
    char family[32];        /* "gpt", "llama", "bloom", ... (informational) */
    int64_t layers;         /* L (decoder layers; MTP layers are apart, below) */
    int64_t hidden;         /* h */
    int64_t heads;          /* a */
    int64_t kv_heads;       /* g (= a for MHA) */
    int64_t head_dim;       /* d: query/key width per head; h / a unless given (Qwen3, Gemma) */
    int64_t ffn;            /* f: dense MLP inner size (4h for GPT, 11008 for Llama-2-7B) */
    int64_t vocab;          /* V (as trained, before any padding) */
    int64_t seq;            /* s: training sequence length (the pretraining recipe's; every memory
                               and time term uses it) */
    int64_t max_context;    /* the longest context the model serves (positions; Hugging Face
                               max_position_embeddings); seq when not given. Not s. */
    pp_act act;             /* swiglu = any gated MLP (SwiGLU, GeGLU): 3 h f weights */
    pp_norm norm;
    pp_pos pos;
    bool bias;              /* every linear layer has a bias (GPT-2/3, BLOOM): sets the three below */
    bool tied;              /* input embedding shared with the output layer */
    int64_t experts;        /* 0 or 1: dense; >1: routed experts per MoE layer */
    int64_t topk;           /* routed experts per token (MoE) */
    int64_t gbs;            /* default global batch (sequences); 0 = unset */
    double published_params; /* published total parameter count, 0 if none (for tests) */
    double published_active; /* published active parameters per token (MoE), 0 if none */
    char source[256];       /* where the shape comes from */

    /* --- attention details */
    bool qkv_bias;          /* q/k/v projection biases (Qwen2, gpt-oss) */
    bool out_bias;          /* attention output projection bias (gpt-oss) */
    bool mlp_bias;          /* dense and expert MLP biases (gpt-oss experts) */
    pp_qk_norm qk_norm;     /* Qwen3/Gemma 3: RMSNorm per head (2d weights); OLMo 2: over the
                               whole q and k widths */
    bool attn_sinks;        /* one learned sink logit per head (gpt-oss) */
    int64_t norms_per_layer; /* 2 (pre-norm); 4 with Gemma 2/3's extra post-norms; 0 = 2 */
    /* Sliding-window (or chunked) attention: windowed layers attend to `window` tokens. Layer i
     * is full attention when window_full_every > 0 and i % window_full_every ==
     * window_full_phase; every other layer is windowed (Mistral: window_full_every 0). */
    int64_t window;
    int64_t window_full_every, window_full_phase;
    /* Multi-head latent attention (DeepSeek-V2, arXiv 2405.04434 sec. 2.1): on when
     * kv_lora_rank > 0. q_lora_rank 0 means an uncompressed query projection. */
    int64_t q_lora_rank, kv_lora_rank, qk_nope_dim, qk_rope_dim, v_head_dim;

    /* --- Mixture of Experts */
    int64_t moe_ffn;        /* routed expert inner size (0: = ffn) */
    int64_t shared_experts; /* shared experts per MoE layer (informational: shared_ffn is the size) */
    int64_t shared_ffn;     /* total inner size of the shared experts (Megatron
                               --moe-shared-expert-intermediate-size); 0 = none */
    bool shared_gate;       /* sigmoid gate h -> 1 on the shared experts' output (Qwen2-MoE) */
    bool router_bias;       /* a bias per expert on the router: a learned one (gpt-oss) or the
                               expert-score correction bias (DeepSeek-V3: router_expert_bias) */
    /* Which layers are MoE: layer i is MoE when i >= moe_first_dense, i % moe_every ==
     * moe_phase (moe_every 0 = 1) and i is not in dense_layers. */
    int64_t moe_first_dense;
    int64_t moe_every, moe_phase;
    int64_t dense_layers[PP_MODEL_MAX_LIST];
    int64_t n_dense_layers;
    /* Multi-token prediction (DeepSeek-V3 sec. 2.2): extra layers on the last pipeline stage,
     * each a transformer layer (MoE when the last decoder layer is) plus a 2h -> h projection
     * and two norms; the embedding and output head are shared. Not in params_total. */
    int64_t mtp_layers;

    /* --- training defaults the model's own config states */
    bool dropout_set;       /* false: the file says nothing; see pp_stack */
    double attention_dropout, hidden_dropout;

    /* --- what else defines the model: no memory or time term uses these; the launch writers
     * carry them so that the framework builds this model and not another. Zero is "not given";
     * pp_model_validate fills the defaults noted. */
    double norm_eps;        /* epsilon of every LayerNorm/RMSNorm (default 1e-5) */
    double rope_theta;      /* RoPE base (position rope only; default 10000, RoFormer's) */
    double rope_local_theta; /* RoPE base of the windowed layers where it differs (Gemma 3); 0 = rope_theta */
    pp_rope_scaling rope_scaling;
    double rope_factor;     /* the scaling factor (linear, llama3, yarn) */
    int64_t rope_original_context; /* llama3, yarn: the context the base frequencies were trained at */
    double rope_low_freq, rope_high_freq; /* llama3: low_freq_factor, high_freq_factor (default 1, 4) */
    double yarn_beta_fast, yarn_beta_slow; /* yarn: correction range (default 32, 1) */
    double yarn_mscale, yarn_mscale_all_dim; /* yarn: attention temperature terms (DeepSeek; default 1, 0) */
    bool yarn_no_truncate;  /* yarn: the correction range is not rounded to integers (gpt-oss) */
    /* the MoE router (experts > 1 only) */
    pp_router_score router_score;
    bool router_raw_topk;   /* the top-k weights are the scores as the score function gave them over
                               all experts, not renormalised over the k (Hugging Face
                               norm_topk_prob false: DeepSeek-V2, Qwen2-MoE; Llama 4's top-1 sigmoid) */
    double router_scale;    /* the top-k weights' factor (routed_scaling_factor; default 1) */
    int64_t router_groups, router_group_topk; /* group-limited routing: experts in groups, tokens
                               routed within the top group_topk groups (DeepSeek-V3 sec. 2.1.2); 0 = none */
    bool router_expert_bias; /* aux-loss-free balancing: a per-expert bias added to the scores for
                               the top-k choice only (DeepSeek-V3 sec. 2.1.2; counted in router_bias) */
    pp_router_balance router_balance; /* the load-balancing loss */
    double router_aux_coef; /* its coefficient */
    double router_z_coef;   /* router z-loss coefficient (Zoph et al. 2022, ST-MoE); 0 = none */
} pp_model;

/* What differs between the layers of one model: the MLP (dense or MoE) and the attention span
 * (full or windowed). A kind is a bit set of these. */
enum { PP_LAYER_MOE = 1, PP_LAYER_WINDOW = 2, PP_LAYER_KINDS = 4 };
extern const char *const pp_layer_kind_names[PP_LAYER_KINDS]; /* "dense", "moe", ... */
bool pp_model_layer_is_moe(const pp_model *m, int64_t i);
bool pp_model_layer_is_window(const pp_model *m, int64_t i);
int pp_model_layer_kind(const pp_model *m, int64_t i);
/* Layers of each kind among decoder layers [first, first + n). */
void pp_model_layer_counts(const pp_model *m, int64_t first, int64_t n, int64_t out[PP_LAYER_KINDS]);
/* Whether every decoder layer from `first` on is of one kind: all of a dense model's without
 * windows, an MoE model's past its dense first layers when every later one is MoE. */
bool pp_model_one_kind_from(const pp_model *m, int64_t first);
/* Kind of the MTP layers (MoE when the last decoder layer is, full attention). */
int pp_model_mtp_kind(const pp_model *m);
/* Decoder layers whose MLP is MoE (the rest are dense). */
int64_t pp_model_moe_layers(const pp_model *m);
static inline bool pp_model_is_moe(const pp_model *m) { return m->experts > 1; }
static inline bool pp_model_is_mla(const pp_model *m) { return m->kv_lora_rank > 0; }
/* Routed expert inner size (moe_ffn, else ffn). */
static inline int64_t pp_model_expert_ffn(const pp_model *m) { return m->moe_ffn > 0 ? m->moe_ffn : m->ffn; }
/* Query width a*d and value width per head (MLA: v_head_dim; else d). */
int64_t pp_model_q_width(const pp_model *m);
int64_t pp_model_v_head_dim(const pp_model *m);
/* Attention dropout and hidden dropout the model trains with by its own file, or the rule for a
 * file that says nothing: GPT-2/3 and BLOOM lineage (linear biases) 0.1, else 0. */
void pp_model_dropout(const pp_model *m, double *attention, double *hidden);

/* Parameter counts (exact, from the per-tensor table in model.c). Per-layer parts are for one
 * layer of that kind; *_total fields sum over the model. MTP is counted apart. */
typedef struct {
    int64_t embedding;  /* word (+ learned position) embedding */
    int64_t attention;  /* one layer's attention block with its norms (every layer) */
    int64_t dense_mlp;  /* one dense layer's MLP with its norms */
    int64_t moe_shared; /* one MoE layer's router, shared experts and norms */
    int64_t expert;     /* one routed expert */
    int64_t per_layer;  /* one MoE layer with all experts (dense model: one layer) */
    int64_t layer_active; /* one MoE layer with top-k experts (dense model: one layer) */
    int64_t final_norm;
    int64_t output;     /* untied output layer (0 when tied) */
    int64_t dense_layers, moe_layers;
    int64_t attention_total, dense_mlp_total, moe_shared_total, experts_total;
    int64_t total;
    int64_t active;     /* parameters touched per token (MoE: top-k experts) */
    int64_t mtp_extra;  /* one MTP layer's projection and norms */
    int64_t mtp_total;  /* all MTP layers (layer + extras), not in total */
} pp_param_count;

void pp_model_init(pp_model *m); /* zero + defaults (kv_heads = heads etc. resolved later) */
/* Fill derived fields (kv_heads, head_dim, ffn defaults) and check ranges. */
pp_status pp_model_validate(pp_model *m, pp_error *err);
void pp_model_params(const pp_model *m, pp_param_count *out);

/* One row of the parameter table: name, shape formula, elements of one copy, how many copies
 * the model holds (the scope) and how tensor and expert parallelism split it (Megatron-Core's
 * layers; planner/cost/layer.c turns a row into the elements one rank holds). pp_model_tensors
 * lists them (parplan models). */
typedef enum { PP_TS_EMBED = 0, PP_TS_LAYER, PP_TS_DENSE, PP_TS_MOE, PP_TS_EXPERT, PP_TS_FINAL,
               PP_TS_OUTPUT, PP_TS_MTP, PP_TS_COUNT } pp_tensor_scope;
extern const char *const pp_tensor_scope_names[PP_TS_COUNT];
typedef enum {
    PP_SPLIT_REPLICATED = 0, /* every TP rank holds all of it (norms, row-parallel biases, the
                                router, MLA's down-projections) */
    PP_SPLIT_COLUMN,         /* column-parallel weight or bias: 1/tp per rank */
    PP_SPLIT_ROW,            /* row-parallel weight: 1/tp per rank */
    PP_SPLIT_HEADS,          /* by attention heads: the query part 1/tp, the `kv` elements of the
                                key/value heads 1/tp, one head per rank when tp exceeds them */
    PP_SPLIT_VOCAB,          /* vocabulary-parallel: 1/tp of the (padded) vocabulary */
    PP_SPLIT_EXPERT_TP,      /* one routed expert's weight, split over the expert TP */
    PP_SPLIT_EXPERT,         /* one routed expert's tensor held whole by its expert-TP ranks */
    PP_SPLIT_COUNT
} pp_tensor_split;
typedef struct {
    const char *name;
    const char *shape;
    int64_t count;
    pp_tensor_scope scope;
    pp_tensor_split split;
    int64_t kv; /* PP_SPLIT_HEADS: elements of count that belong to the key/value heads */
} pp_model_tensor;
#define PP_MODEL_MAX_TENSORS 48
int pp_model_tensors(const pp_model *m, pp_model_tensor *t); /* rows filled */
/* The same rows summed by scope and split in one pass (no table; the cost models read it for
 * every layout of a search): elements by (scope, split), of a PP_SPLIT_HEADS row its query part
 * there and its key/value part in kv; and over the decoder layer's scopes (attention, dense,
 * MoE, expert) the largest row of each split, with its key/value part for PP_SPLIT_HEADS. */
typedef struct {
    double count[PP_TS_COUNT][PP_SPLIT_COUNT];
    double kv[PP_TS_COUNT];
    double layer_largest[PP_SPLIT_COUNT];
    double layer_largest_kv;
} pp_model_tensor_sums;
void pp_model_tensor_sums_get(const pp_model *m, pp_model_tensor_sums *out);

/* ------------------------------------------------------------------ gpu */

typedef enum { PP_DT_FP32 = 0, PP_DT_TF32, PP_DT_FP16, PP_DT_BF16, PP_DT_FP8, PP_DT_FP4, PP_DT_COUNT } pp_dtype;
extern const char *const pp_dtype_names[PP_DT_COUNT];

typedef struct {
    char name[64];            /* catalog key, e.g. "a100-80gb" */
    char full_name[128];      /* e.g. "NVIDIA A100-SXM4-80GB" */
    double memory_bytes;      /* usable device memory (total HBM as the driver reports) */
    double mem_bw_gbs;        /* peak HBM bandwidth, GB/s (1e9) */
    double peak_flops[PP_DT_COUNT]; /* dense FLOP/s, 0 when unsupported */
    double nvlink_gbs;        /* intra-node bus bandwidth per GPU, unidirectional GB/s; 0 = none */
    double pcie_gbs;          /* PCIe unidirectional GB/s */
    int64_t gpus_per_node;    /* typical node size */
    int64_t nvlink_domain;    /* GPUs that share one NVLink network when more than a node's
                                 (GB200/GB300 NVL72: 72 across trays of 4); 0: the node's */
    double internode_gbs;     /* network bandwidth per GPU, unidirectional GB/s */
    double gemm_eff;          /* achievable fraction of bf16 peak for large GEMMs (catalog) */
    double gemm_sustained;    /* the fraction of the gemm_eff rate that large GEMMs hold in a training
                                 run, the GPU at its power limit; 0 = not stated (the time model's
                                 default, cost/time.c) */
    double fp4_eff;           /* the fraction of the fp4 (NVFP4) GEMM rate a training run's linear
                                 GEMMs hold against the fp8 ones' share of their peak (fitted on
                                 published runs); 0 = not stated (1) */
    double mxfp8_eff;         /* the same for MXFP8 against the fp8 rate; 0 = not stated (1) */
    double fp8_eff;           /* the same for per-tensor FP8 (--precision fp8) against the fp8 rate;
                                 0 = not stated (1) */
    double intra_latency_s;   /* per-collective-step latency inside a node */
    double inter_latency_s;   /* per-step latency across nodes */
    double max_power_w;       /* the board's maximum power limit (datasheet TDP), at which the
                                 entry's FLOP/s and gemm_eff hold; 0 = not stated */
    double power_w;           /* the power limit the GPU runs at (a variant's default limit, or
                                 --gpu-power-w); 0 = max_power_w */
    char source[256];
    /* The run's GPU where it differs from the entry (pp_request_resolve): --gpu-mem-gib replaces
     * memory_bytes (before --max-mem-frac takes its share), --gpu-power-w replaces power_w. */
    double entry_memory_bytes;  /* the entry's memory_bytes */
    double given_memory_bytes;  /* --gpu-mem-gib in bytes; 0 = not given */
    bool power_given;           /* power_w is --gpu-power-w's */
} pp_gpu;

void pp_gpu_init(pp_gpu *g);
pp_status pp_gpu_validate(pp_gpu *g, pp_error *err);

/* A power limit below the board's maximum lowers the clock the GPU sustains under dense
 * tensor-core load; memory bandwidth is left as the entry gives it. The curve and its source:
 * planner/model/gpu_power.c. */
#define PP_POWER_MIN_FRAC 0.4 /* the curve's lowest measured point, as a fraction of max_power_w */
/* Sustained dense GEMM throughput at frac x the maximum power, over the throughput at the
 * maximum (1 at frac >= 1); frac below PP_POWER_MIN_FRAC reads the lowest point. */
double pp_power_gemm_factor(double frac);
/* The factor of g at its power_w (1 when power_w is 0 or max_power_w is not stated). */
double pp_gpu_gemm_power_factor(const pp_gpu *g);
/* The large-GEMM rate of g in dtype dt (PP_DT_BF16 falls back to fp16 where bf16 is 0): the
 * dense peak x gemm_eff x the power limit's factor, FLOP/s. The time model's scale (cost/time.c). */
double pp_gpu_gemm_flops(const pp_gpu *g, pp_dtype dt);
/* Is power_w a limit g can run at: max_power_w stated, power_w in [PP_POWER_MIN_FRAC x
 * max_power_w, max_power_w]. The error names `what` (the flag or the YAML key). */
pp_status pp_gpu_power_check(const pp_gpu *g, double power_w, const char *what, pp_error *err);
/* One line for the notes: "GPU at 500 W of 700 W (<from>): dense GEMM throughput x0.90 (...)". */
void pp_gpu_power_describe(const pp_gpu *g, const char *from, char *buf, size_t n);

/* ------------------------------------------------------------------ work and layout */

typedef enum { PP_FW_MEGATRON = 0, PP_FW_DEEPSPEED, PP_FW_FSDP, PP_FW_NANOTRON, PP_FW_COUNT } pp_framework;
typedef enum { PP_ATTN_FLASH = 0, PP_ATTN_UNFUSED, PP_ATTN_COUNT } pp_attention;
typedef enum { PP_RC_NONE = 0, PP_RC_SELECTIVE, PP_RC_FULL, PP_RC_COUNT } pp_recompute;
typedef enum { PP_OFF_NONE = 0, PP_OFF_OPTIMIZER, PP_OFF_PARAMS, PP_OFF_COUNT } pp_offload;
extern const char *const pp_framework_names[PP_FW_COUNT];
extern const char *const pp_attention_names[PP_ATTN_COUNT];
extern const char *const pp_recompute_names[PP_RC_COUNT];
extern const char *const pp_offload_names[PP_OFF_COUNT];
/* Modules selective recompute recomputes (Megatron --recompute-modules; its default is
 * core_attn): the attention core; the norms' outputs (the linear layers' inputs); MLA's
 * up-projections (q, k, v per head); the experts' activation function (its output, fc2's
 * input); a dense MLP; the whole MoE block; the shared experts. */
typedef enum { PP_RCM_CORE_ATTN = 0, PP_RCM_LAYERNORM, PP_RCM_MLA_UP_PROJ, PP_RCM_MOE_ACT,
               PP_RCM_MLP, PP_RCM_MOE, PP_RCM_SHARED_EXPERTS, PP_RCM_COUNT } pp_rc_module;
extern const char *const pp_rc_module_names[PP_RCM_COUNT];
/* "Did you mean": the names of the table that name begins (case-insensitive), else the closest by
 * edit distance (within a third of its length, at least 2); "" when none is close. Into buf. */
const char *pp_did_you_mean(const char *name, const char *const *names, int n, char *buf, size_t len);
/* Index of name in a names table of n entries, or -1. */
int pp_name_lookup(const char *const *names, int n, const char *name);

struct pp_profile; /* measured hardware profile, profile.c */

/* The training stack: what the software does, as opposed to what the model is. Defaults
 * (pp_stack_init) are the current Megatron-Core recipe's: bf16, TransformerEngine, gradient
 * reduce and parameter gather overlapped with compute, no TP communication overlap, dropout as
 * the model's config says. */
typedef enum { PP_PREC_BF16 = 0, PP_PREC_FP16, PP_PREC_FP8, PP_PREC_MXFP8, PP_PREC_NVFP4, PP_PREC_COUNT } pp_precision;
/* What a precision does to the linear layers (TransformerEngine's recipes; common.c cites them).
 * gemm_dt: the dtype of their GEMMs (PP_DT_BF16: 16-bit, no casts); elem_bytes: bytes per element
 * of a quantized tensor, its scales included (2 for 16-bit); weight_copies: quantized copies of
 * each weight a step keeps (row-wise and column-wise); block_scaled: needs Blackwell's
 * block-scaled tensor cores (the GPU entry's fp4 rate stands for them). */
typedef struct {
    pp_dtype gemm_dt;
    double elem_bytes;
    double weight_copies;
    bool block_scaled;
} pp_precision_facts;
extern const pp_precision_facts pp_precision_info[PP_PREC_COUNT];
/* Do the linear layers of precision p run quantized GEMMs (fp8, mxfp8, nvfp4)? */
bool pp_precision_quantized(pp_precision p);
typedef enum { PP_IMPL_TE = 0, PP_IMPL_LOCAL, PP_IMPL_COUNT } pp_impl;
/* MoE token dispatch (Megatron --moe-token-dispatcher-type) and expert GEMMs. flex is Megatron's
 * flex dispatcher with its DeepEP or HybridEP backend (--moe-flex-dispatcher-backend), which sends a
 * token once per destination rank and, across nodes, once per destination node (time.c). */
typedef enum { PP_DISPATCH_ALLTOALL = 0, PP_DISPATCH_ALLGATHER, PP_DISPATCH_FLEX, PP_DISPATCH_COUNT } pp_dispatch;
extern const char *const pp_precision_names[PP_PREC_COUNT]; /* "bf16", "fp16", "fp8", "mxfp8", "nvfp4" */
extern const char *const pp_impl_names[PP_IMPL_COUNT];      /* "te", "local" */
extern const char *const pp_dispatch_names[PP_DISPATCH_COUNT]; /* "alltoall", "allgather", "flex" */
/* The flex dispatcher's library (Megatron --moe-flex-dispatcher-backend, default deepep): what its
 * communication buffers cost (cost/deepep.c); the time model prices both alike. */
typedef enum { PP_FLEX_DEEPEP = 0, PP_FLEX_HYBRIDEP, PP_FLEX_COUNT } pp_flex_backend;
extern const char *const pp_flex_backend_names[PP_FLEX_COUNT]; /* "deepep", "hybridep" */
/* torch.optim.AdamW under --framework fsdp: fused (one kernel per step, torchtitan's default) or
 * foreach (horizontally fused ops; sqrt(v) for the whole group at once). The Megatron and
 * DeepSpeed paths keep their own rules (memory.c). */
typedef enum { PP_ADAM_FUSED = 0, PP_ADAM_FOREACH, PP_ADAM_COUNT } pp_adam_impl;
extern const char *const pp_adam_impl_names[PP_ADAM_COUNT]; /* "fused", "foreach" */
/* --sdpa-backend: the kernel torch's scaled_dot_product_attention runs under --framework fsdp.
 * FlashAttention-2 is what parplan's FSDP runs and the published torchtitan runs before 2025-10
 * used; torchtitan since 6a3a9da95 (2025-10-09; torchtitan/models/common/attention.py) puts cuDNN
 * first with set_priority. */
typedef enum { PP_SDPA_FLASH = 0, PP_SDPA_CUDNN, PP_SDPA_COUNT } pp_sdpa_backend;
extern const char *const pp_sdpa_backend_names[PP_SDPA_COUNT]; /* "flash", "cudnn" */
/* --fp8-scaling: how torchao's float8 training scales the linear layers' operands under
 * --framework fsdp --precision fp8 (torchao/float8/config.py Float8LinearRecipeName): tensorwise
 * (one scale per tensor, cuBLAS's kernel, FSDP2's float8 all-gather) or rowwise (a scale per row
 * of each operand along each GEMM's contraction: every operand cast twice, once per axis; CUTLASS
 * or cuBLAS row-scaled kernels; bf16 all-gathers, enable_fsdp_float8_all_gather being tensorwise
 * only). torchtitan's Float8LinearConverter defaults to rowwise since 2026 (b5bcd76c). */
typedef enum { PP_FP8_TENSORWISE = 0, PP_FP8_ROWWISE, PP_FP8_SCALING_COUNT } pp_fp8_scaling;
extern const char *const pp_fp8_scaling_names[PP_FP8_SCALING_COUNT]; /* "tensorwise", "rowwise" */
/* --eager-norm: how eager PyTorch runs RMSNorm under --framework fsdp without --compile: fused
 * (F.rms_norm's CUDA kernel each way, PyTorch 2.8 on: pytorch/pytorch#153666) or composite (the ops
 * PyTorch 2.4-2.7's F.rms_norm decomposed into, which torchtitan's 2024 RMSNorm and ibm-fms's
 * LayerNormParameterized also ran: an fp32 upcast, pow, mean, rsqrt, two products; the upcast and
 * the normalized output saved for the backward), or composite-fp32 (the same ops with the weight
 * applied in fp32 before the cast back, KempnerForge's RMSNorm, kempnerforge/model/norm.py:22-27 at
 * 5666d0d1: `(norm * self.weight).to(dtype)`, which saves the fp32 normalized output for the
 * weight's gradient where the 2024 order saves the bf16 one). */
typedef enum { PP_ENORM_FUSED = 0, PP_ENORM_COMPOSITE, PP_ENORM_COMPOSITE_FP32, PP_ENORM_COUNT } pp_eager_norm;
extern const char *const pp_eager_norm_names[PP_ENORM_COUNT]; /* "fused", "composite", "composite-fp32" */
/* --tp-vocab: what FSDP2 + TP (DTensor's parallelize_module) does with the vocabulary's two ends.
 * sharded: torchtitan's plan (models/llama3/infra/parallelize.py apply_tp): the token embedding
 * RowwiseParallel over the vocabulary, the output layer ColwiseParallel with its logits kept
 * vocab-parallel for loss_parallel. gathered: torchtitan with parallelism.disable_loss_parallel:
 * the logits all-gathered to every TP rank (output_layouts Replicate) and the loss computed whole
 * on each. replicated: KempnerForge's plan (kempnerforge/distributed/tensor_parallel.py at 5666d0d1:
 * "Token embedding: Replicated", the output head ColwiseParallel(output_layouts=Replicate())): the
 * logits gathered as above and the embedding not split over TP at all. */
typedef enum { PP_TPV_SHARDED = 0, PP_TPV_GATHERED, PP_TPV_REPLICATED, PP_TPV_COUNT } pp_tp_vocab;
extern const char *const pp_tp_vocab_names[PP_TPV_COUNT]; /* "sharded", "gathered", "replicated" */
/* --te-attention: the kernel TransformerEngine's DotProductAttention runs under Megatron: cudnn
 * (its fused attention, which TE picks first on Hopper since v1.8: "Disabling FlashAttention to
 * give FusedAttention preference on Hopper+ for performance reasons") or flash2 (the flash-attn 2
 * package: TE's first choice up to v1.7, "FlashAttention > FusedAttention (cuDNN)", or wherever
 * NVTE_FUSED_ATTN=0, as NeMo-Framework-Launcher 24.01-24.07 set it). On Hopper FA2 runs at about
 * half cuDNN's rate (cost/time.c fsdp_sdpa). */
typedef enum { PP_TEATTN_CUDNN = 0, PP_TEATTN_FLASH2, PP_TEATTN_COUNT } pp_te_attention;
extern const char *const pp_te_attention_names[PP_TEATTN_COUNT]; /* "cudnn", "flash2" */
/* Megatron's cross-entropy (--cross-entropy-loss-fusion with --cross-entropy-fusion-impl): none is
 * tensor_parallel/cross_entropy.py (eager, in place on the fp32 copy of the logits), native is
 * fusions/fused_cross_entropy.py (jit_fuser functions: under torch.compile each returns a new fp32
 * tensor), te is TransformerEngine's parallel cross-entropy (memory.c). */
/* --cuda-graphs: what Megatron captures in CUDA graphs (--cuda-graph-impl, --cuda-graph-modules;
 * megatron/core/transformer/transformer_config.py cuda_graph_impl / cuda_graph_modules): per-layer
 * graphs of the named parts (local or transformer_engine) or one graph of the whole iteration
 * (full_iteration). "none" (the default) and full_iteration stand alone. */
typedef enum { PP_CG_NONE = 0, PP_CG_ATTN, PP_CG_MLP, PP_CG_MOE, PP_CG_MOE_ROUTER, PP_CG_MOE_PREPROCESS,
               PP_CG_FULL_ITERATION, PP_CG_COUNT } pp_cuda_graph_part;
extern const char *const pp_cuda_graph_names[PP_CG_COUNT];
/* the stack's captured parts without the none bit (0: no CUDA graphs), and as "a<sep>b" / "none" */
struct pp_stack;
unsigned pp_stack_cuda_graphs(const struct pp_stack *s);
void pp_cuda_graphs_str(unsigned bits, const char *sep, char *buf, size_t n);
/* "attn,moe_router" -> bits (a recipe's cuda_graphs); an unknown part is an error, its text in why */
pp_status pp_cuda_graphs_parse(const char *v, unsigned *bits, char *why, size_t n);
typedef enum { PP_CE_NONE = 0, PP_CE_NATIVE, PP_CE_TE, PP_CE_COUNT } pp_ce_fusion;
extern const char *const pp_ce_fusion_names[PP_CE_COUNT]; /* "none", "native", "te" */
/* The dtypes Megatron's precision-aware optimizer keeps its state in (arguments.py --main-params-dtype,
 * --exp-avg-dtype, --exp-avg-sq-dtype choices), and their bytes. */
typedef enum { PP_OPT_FP32 = 0, PP_OPT_FP16, PP_OPT_BF16, PP_OPT_FP8, PP_OPT_DTYPE_COUNT } pp_opt_dtype;
extern const char *const pp_opt_dtype_names[PP_OPT_DTYPE_COUNT]; /* "fp32", "fp16", "bf16", "fp8" */
extern const double pp_opt_dtype_bytes[PP_OPT_DTYPE_COUNT];
/* --finetune: full training of every weight, or LoRA (Hu et al. 2021, arXiv:2106.09685): the base
 * frozen, a rank-r adapter B A beside each targeted linear trained (Megatron-Bridge peft/lora.py). */
typedef enum { PP_FT_FULL = 0, PP_FT_LORA, PP_FT_COUNT } pp_finetune;
extern const char *const pp_finetune_names[PP_FT_COUNT]; /* "full", "lora" */
/* --lora-targets: the linears that get an adapter, as Megatron-Bridge's LoRA.target_modules names
 * them: all = linear_qkv, linear_proj, linear_fc1, linear_fc2 (its default, peft/lora.py:143-145);
 * attn = linear_qkv, linear_proj; mlp = linear_fc1, linear_fc2; qkv = linear_qkv alone (its
 * performance recipes for Llama 3 70B LoRA). */
typedef enum { PP_LORA_ALL = 0, PP_LORA_ATTN, PP_LORA_MLP, PP_LORA_QKV, PP_LORA_TARGETS_COUNT } pp_lora_targets;
extern const char *const pp_lora_target_names[PP_LORA_TARGETS_COUNT];
/* Megatron-Bridge's LoRA.dim default (peft/lora.py:146 at 067f987d) */
#define PP_LORA_DEFAULT_RANK 32
typedef struct pp_stack {
    pp_precision precision;
    bool dropout_given;        /* --dropout / --attention-dropout / --hidden-dropout were given */
    double attention_dropout;  /* resolved by pp_stack_resolve: the flags, else the model's */
    double hidden_dropout;
    bool no_overlap;           /* --no-overlap: DP gradient reduce and parameter gather after the
                                  backward (2021 Megatron, DeepSpeed pipeline engine); default overlapped */
    bool tp_comm_overlap;      /* --tp-comm-overlap (TE userbuffers) */
    pp_impl impl;              /* Megatron transformer implementation (--impl) */
    bool impl_given;
    pp_dispatch dispatcher;    /* --moe-dispatcher */
    pp_flex_backend flex_backend; /* --moe-flex-backend (with --moe-dispatcher flex) */
    bool grouped_gemm;         /* --moe-grouped-gemm (TE grouped GEMM; local runs SequentialMLP) */
    bool expandable_segments;  /* --expandable-segments: PyTorch's caching allocator with
                                  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, which grows
                                  segments instead of splitting cached blocks (no fragmentation
                                  room is kept for dropless MoE's logits block, memory.c) */
    bool grad_bf16;            /* --grad-reduce-bf16: Megatron's gradient buffer and reduction in
                                  bf16 (--grad-reduce-in-bf16; Megatron-Bridge recipes'
                                  grad_reduce_in_fp32 = False) instead of fp32 main_grads */
    bool ep_overlap;           /* --ep-overlap: the EP all-to-alls hidden behind another
                                  micro-batch's compute (Megatron --overlap-moe-expert-parallel-comm,
                                  DeepSeek-V3's DualPipe does the same) */
    double moe_capacity_factor; /* 0: dropless (Megatron's default); else tokens per expert cap */
    double moe_imbalance;      /* busiest expert's tokens over the mean (>= 1; default 1.0 for
                                  the time model; memory adds its own margin, memory.c) */
    pp_adam_impl optimizer_impl; /* --optimizer-impl: torch.optim.AdamW's implementation under
                                  --framework fsdp (torchtitan's Optimizer.implementation) */
    bool no_attention_mask;    /* --no-attention-mask: Megatron's dataloader builds no b x s x s
                                  attention mask (--no-create-attention-mask-in-dataloader; NeMo
                                  and Megatron-Bridge never build it) */
    bool optimizer_bf16;       /* --optimizer-dtype bf16: NeMo's distributed_fused_adam with dtype
                                  bf16 (Adam's moments in bf16; implies dist_fused_adam) */
    bool dist_fused_adam;      /* --distributed-fused-adam: NeMo 1.x's optim.name distributed_fused_adam
                                  (Apex DistributedFusedAdam) as the distributed optimizer; its
                                  state per parameter: pp_work_optimizer_bytes */
    bool precision_aware_opt;  /* --precision-aware-optimizer: Megatron's --use-precision-aware-optimizer
                                  (TE FusedAdam), also implied by a dtype below other than fp32 */
    bool fsdp_double_buffer;   /* --fsdp-double-buffer (with --megatron-fsdp): Megatron-FSDP's fixed pool
                                  of two FSDP units' gathered weights and gradients, held for the
                                  run (param_and_grad_buffer.py FixedPoolAllocator); Megatron's
                                  --use-nccl-ub turns it on */
    int64_t fsdp_unit_size;    /* --fsdp-unit-size N (with --megatron-fsdp): Megatron's
                                  --suggested-communication-unit-size, elements: the reduce-scatter
                                  queue's capacity and twice the all-gather prefetch; 0: its default */
    bool fsdp_grads_fp32;      /* --fsdp-grads-fp32 (with --megatron-fsdp): the main gradients in fp32
                                  (--megatron-fsdp-main-grads-dtype fp32); Megatron-FSDP's default is
                                  the compute weights' dtype since Megatron-LM b969f764 (2026-03) */
    bool megatron_fsdp;        /* --megatron-fsdp: Megatron-Core's FSDP (--use-megatron-fsdp): with
                                  --framework megatron, --zero 1|2|3 is its data-parallel sharding
                                  strategy optim | optim_grads | optim_grads_params */
    bool act_unfused;          /* --no-bias-act-fusion: Megatron's MLP activation unfused
                                  (--no-bias-swiglu-fusion, --no-bias-gelu-fusion: bias_activation_fusion
                                  off); its default fused SwiGLU saves only the fc1 output
                                  (fusions/fused_bias_swiglu.py), the eager glu() also silu(gate) and
                                  x_linear + offset (transformer/mlp.py); layer.c */
    pp_ce_fusion ce_fusion;    /* --cross-entropy-fusion: Megatron's loss implementation */
    unsigned cuda_graphs;      /* --cuda-graphs: bit set of pp_cuda_graph_part; 0 = none */
    int64_t cpu_offload_layers; /* --cpu-offload-layers: Megatron's --cpu-offloading-num-layers, the
                                  activations of the first N layers copied to host memory in the
                                  forward and back in the backward (TransformerEngine's
                                  get_cpu_offload_context, cpu_offload.py); 0 = none. Megatron allows
                                  it with pp 1 and no recompute only (transformer_config.py) */
    pp_sdpa_backend sdpa_backend; /* --sdpa-backend (fsdp): torch SDPA's kernel */
    pp_fp8_scaling fp8_scaling;   /* --fp8-scaling (fsdp, fp8): torchao's float8 recipe */
    pp_eager_norm eager_norm;     /* --eager-norm (fsdp, eager): RMSNorm's kernels */
    pp_tp_vocab tp_vocab;         /* --tp-vocab (fsdp, TP): the embedding's and the logits' TP split */
    pp_te_attention te_attention; /* --te-attention (megatron, TE): the attention kernel */
    bool no_sync_accum;        /* --no-sync-accumulation (fsdp): FSDP2's gradient sync off for all but the
                                  last micro-batch of a step (set_requires_gradient_sync(False):
                                  KempnerForge's maybe_no_sync); fp32 unsharded gradient
                                  accumulators held until the last backward, one reduce-scatter a
                                  step. torchtitan reduces every micro-batch */
    bool keep_logits;          /* --keep-logits (fsdp): the training loop holds the model's output logits
                                  through the backward (KempnerForge's `logits = model(...)`, NeMo
                                  AutoModel's `out`); torchtitan deletes them before it ("need to free
                                  pred before bwd") */
    bool repeat_kv;            /* --repeat-kv (fsdp): grouped-query K and V repeated to the query heads before
                                  SDPA, as torchtitan's repeat_kv did up to v0.2.1 (and KempnerForge,
                                  fms-fsdp); torchtitan since ff0829c10 (2026-01-27, v0.2.2) passes them at
                                  their own heads with enable_gqa: SDPA saves them at the KV width, no copy
                                  kernel, and the CP ring passes them narrow (layer.c) */
    bool compile_loss;         /* --compile-loss (fsdp): the loss function under torch.compile, as torchtitan
                                  compiles it with the model since 2025-02 (components/loss.py
                                  build_cross_entropy_loss; compile.components defaults to ["model",
                                  "loss"]): the fused cross-entropy keeps the bf16 logits and makes their
                                  bf16 gradient, 2 and 4 bytes a logit (memory_fsdp.c) */
    bool router_holds_recompute; /* --router-holds-recompute (fsdp, MoE, full AC): the MoE router stores a
                                  loss tensor on its module in the forward (KempnerForge's router.py:
                                  self.aux_loss, self.z_loss), so the activation-checkpoint recompute in
                                  the backward leaves its graph up to the router, the block's attention
                                  half and both norms, allocated until the block's next forward */
    bool expert_pad_loop;      /* --expert-pad-loop (fsdp, MoE): the routed experts' tokens are copied into
                                  and out of an (experts x busiest) buffer one expert at a time in Python,
                                  after a host sync of the counts (KempnerForge's packed experts,
                                  moe.py grouped_expert_forward_packed): that host time is the step's */
    int64_t vocab_divisible_by; /* --vocab-divisible-by: Megatron's --make-vocab-size-divisible-by, the
                                  vocabulary padded to a multiple of N x tp (training/vocab_utils.py
                                  calculate_padded_vocab_size); 0 = the framework's (pp_fw_row) */
    bool fp8_param_gather;     /* --fp8-param-gather (megatron, --precision fp8): the linear layers'
                                  weights kept and all-gathered in FP8 (arguments.py: "Keep the compute
                                  param in fp8 ... and perform the param all-gather in fp8"), no bf16
                                  copy beside TE's FP8 casts; Megatron-Bridge's FP8 precisions set it */
    /* Megatron's precision-aware optimizer (--use-precision-aware-optimizer, TE FusedAdam): the
     * dtypes of the main parameter copy and of Adam's two moments (zero: fp32, Megatron's) */
    pp_opt_dtype main_params_dtype, exp_avg_dtype, exp_avg_sq_dtype;
    bool param_bf16;           /* --param-dtype bf16 (--framework fsdp): the sharded parameters are
                                  bf16, so are their gradients and torch AdamW's m and v (zeros_like);
                                  NeMo AutoModel's from_config default (auto_model.py: torch_dtype
                                  "auto" -> torch.bfloat16). fp32: torchtitan's */
    int loss;                  /* --loss (--framework fsdp): a pp_loss from PP_LOSS_TORCH on; below
                                  it (pp_stack_init's -1): the framework's (pp_work_loss) */
    int cp_comm;               /* --cp-comm: 1 + a pp_cp_comm; 0 (a zeroed stack): the framework's
                                  (pp_work_cp_comm) */
    bool compile;              /* --compile: torch.compile of each block under --framework fsdp
                                  (torchtitan [compile], fms-fsdp use_torch_compile): Inductor
                                  fuses the block's elementwise ops and runs it as one graph */
    pp_finetune finetune;      /* --finetune (default full) */
    int64_t lora_rank;         /* --lora-rank (0: PP_LORA_DEFAULT_RANK under --finetune lora) */
    pp_lora_targets lora_targets; /* --lora-targets (default all) */
} pp_stack;
/* Bytes an element of the residual stream that one eager RMSNorm saves for the backward beyond
 * its output (0 fused: the rstd alone; memory_fsdp.c). */
double pp_eager_norm_saved_bytes(const pp_stack *s);
void pp_stack_init(pp_stack *s);

/* What a framework does by default that the cost models read, as data: one row per framework
 * (framework.c, each fact with its source). The cost models (planner/cost/) read these fields
 * through the work and never ask which framework runs; the stack (flags, recipe) switches the
 * options a framework has. */
/* The loss over the vocabulary, and what it holds per logit element at its peak (framework.c). */
typedef enum {
    PP_LOSS_VOCAB_PARALLEL = 0, /* Megatron tensor_parallel/cross_entropy.py, eager */
    PP_LOSS_NATIVE,             /* Megatron --cross-entropy-fusion-impl native, compiled */
    PP_LOSS_TE,                 /* TransformerEngine's parallel cross-entropy (Triton) */
    PP_LOSS_TORCH,              /* torch cross_entropy on logits.float() (Hugging Face, torchtitan) */
    PP_LOSS_TORCH_BF16,         /* torch cross_entropy on the bf16 logits (NeMo AutoModel's
                                   MaskedCrossEntropy with fp32_upcast: false) */
    PP_LOSS_CUT,                /* cut cross-entropy (Wijmans et al. 2024): the loss computed
                                   blockwise from the hidden states, no logits kept (NeMo
                                   AutoModel's FusedLinearCrossEntropy) */
    PP_LOSS_COUNT
} pp_loss;
extern const char *const pp_loss_names[PP_LOSS_COUNT];
typedef struct {
    const char *source;          /* where the row's facts come from */
    /* model state, bytes per parameter of bf16 mixed-precision Adam, unsharded */
    double weight_bytes;         /* the 16-bit weights */
    double grad_bytes;           /* the gradient buffer the optimizer reads (fp32 main_grad: 4) */
    double optimizer_bytes;      /* fp32 master copy + Adam m + v */
    bool grad_dtype_option;      /* the gradient buffer is 16-bit under --fp16 and --grad-reduce-bf16 */
    double grad_accum_bytes;     /* bytes moved per weight element and micro-batch to accumulate
                                    its gradient, fp32 gradient buffer */
    double grad_accum_bytes_16;  /* the same with a 16-bit gradient buffer */
    double reduce_bytes;         /* bytes per element the gradient reduction moves; 0: the
                                    gradient buffer's (pp_work_grad_bytes) */
    int64_t vocab_multiple;      /* the vocabulary is padded to a multiple of this x tp (1: none) */
    bool te_modules;             /* TransformerEngine's modules unless --impl local: fused norms
                                    into the linears, fused kernels, no eager weight-gradient copies */
    bool act_fusion;             /* the MLP activation is a fused kernel unless --no-bias-act-fusion */
    bool global_attn_buffer;     /* unfused attention reads its scores' input from a global buffer
                                    that stays allocated */
    bool dataloader_mask;        /* the dataloader builds a b x s x s attention mask unless
                                    --no-attention-mask */
    pp_loss loss;                /* the loss unless --cross-entropy-fusion says otherwise */
    int cp_comm;                 /* pp_cp_comm: how its context parallelism exchanges K and V */
    bool titan_block;            /* torchtitan's block: separate wq, wk, wv and w1, w3, its eager
                                    elementwise ops, SDPA's FlashAttention-2, the loss on
                                    logits.float() (not under MLA) */
    bool titan_kernels;          /* the step-time terms fitted to torchtitan's kernels: SDPA's
                                    FlashAttention-2, the loss on logits.float(), the embedding
                                    backward (time.c EW_FSDP_*, FSDP_FA2_*) */
    bool torchao_float8;         /* its FP8 is torchao's float8: Float8Linear under Inductor (the casts
                                    of time.c FP8_TORCHAO_CAST_X), under TP with tensorwise scaling
                                    torchtitan's float8 TP plans (casts on the sequence shard) */
    bool block_sharding;         /* FSDP2's fully_shard per block: parameters gathered and
                                    gradients reduce-scattered per block and micro-batch, memory
                                    in the step's timeline (memory_fsdp.c) */
    bool torch_adam;             /* torch.optim.AdamW, fused or foreach by --optimizer-impl */
    bool eager_foreach_adam;     /* with eager modules (--impl local) Adam is torch's foreach */
    bool p2p_scatter_gather;     /* pipeline sends split across the TP ranks */
    double zero_bucket_bytes;    /* ZeRO >= 1: one reduce bucket (memory.c counts how many a
                                    stage holds, and when) */
    bool hf_modules;             /* Hugging Face transformers' modules, eager: the RMSNorm as
                                    composite fp32 ops (LlamaRMSNorm), SiLU and the product as two
                                    kernels, RoPE by rotate_half (layer.c build_ew) */
    double grad_copy_bytes;      /* 16-bit gradients kept beside the gradient buffer the optimizer
                                    reads, bytes per parameter, never sharded (nanotron: the
                                    parameter's bf16 .grad beside its fp32 accumulator) */
    double ddp_bucket_bytes;     /* torch DDP's own 16-bit buckets, bytes per parameter: kept at
                                    ZeRO 0 with dp > 1 (the framework wraps the model in DDP then) */
    bool shard_all_reduce;       /* with the optimizer sharded (ZeRO-1) the gradients are still
                                    all-reduced whole, not reduce-scattered */
    bool zero_grads_step_only;   /* ZeRO 1/2 without pipeline stages: the 16-bit gradients exist from
                                    the backward to the optimizer step only (memory.c
                                    mem_ds_timeline), unless the step accumulates */
    bool zero_gather_exposed;    /* ZeRO 1/2 all-gathers the updated 16-bit partitions after the
                                    optimizer step: nothing hides it */
    double zero_copy_reduce_bytes;   /* ZeRO 2/3: bytes per parameter of the rank its own copies
                                        move at each micro-batch's reduction (time_step.c) */
    double zero_copy_reduce_bytes_1; /* ZeRO 1: the same, once a step */
    double zero_copy_step_bytes;     /* bytes per element of the rank's partition its copies move
                                        at the step (ZeRO 1) */
    double zero_copy_step_bytes_2;   /* the same under ZeRO 2/3 */
    double zero3_fetch_host_s;   /* ZeRO-3: host seconds per module fetch, forward, backward and
                                    recomputed forward (hf_modules counts the modules) */
    bool no_interleave;          /* its pipeline schedules have no virtual stages (--vpp) */
    bool full_recompute_only;    /* it recomputes whole layers only: no selective recompute, no
                                    --recompute-layers subset */
    bool no_offload;             /* it offloads nothing to the host (--offload) */
    int max_zero;                /* the highest ZeRO stage --zero may give */
    const char *zero_why;        /* why none above it (the error says it) */
} pp_fw_row;
extern const pp_fw_row pp_frameworks[PP_FW_COUNT];
const pp_fw_row *pp_fw_get(pp_framework f);

/* What is to be trained, on what. */
typedef struct {
    pp_model model;
    pp_gpu gpu;
    int64_t gpus;            /* total GPUs */
    int64_t gpus_per_node;
    int64_t gbs;             /* global batch in sequences */
    pp_framework framework;
    pp_attention attention;
    pp_stack stack;
    const struct pp_profile *profile; /* NULL: catalog efficiencies */
    double mem_margin_frac;  /* share of the GPU's memory plan keeps free: its search ranks only
                                layouts that need at most (1 - it) x capacity; check notes a layout
                                above it (pp_memory_plan_bytes; 0: none) */
} pp_work;
/* The dropout and implementation the models use, valid on a zeroed stack too: the stack's
 * dropout when given, else the model's (pp_model_dropout); --impl when given, else local for
 * unfused attention (the only stack that runs it in practice: Megatron's local modules) and
 * TransformerEngine for flash. */
void pp_work_dropout(const pp_work *w, double *attention, double *hidden);
pp_impl pp_work_impl(const pp_work *w);
/* The framework's row (pp_frameworks). */
const pp_fw_row *pp_work_fw(const pp_work *w);
/* The vocabulary's padding base: --vocab-divisible-by where given, else the framework's
 * (vocab_multiple; 1: none); the padded size is pp_layer_vocab's. */
int64_t pp_work_vocab_divisible_by(const pp_work *w);
/* TransformerEngine's modules run: the framework's (te_modules) unless --impl local. */
bool pp_work_te(const pp_work *w);
/* The MLP activation runs as eager torch ops: the framework fuses none, or --no-bias-act-fusion. */
bool pp_work_act_eager(const pp_work *w);
/* The gradient buffer is 16-bit: --fp16, or --grad-reduce-bf16 where the framework has it. */
bool pp_work_grads_16bit(const pp_work *w);
/* Bytes per parameter of the unsharded gradient buffer. */
double pp_work_grad_bytes(const pp_work *w);
/* The loss implementation: --cross-entropy-fusion, else the framework's. */
pp_loss pp_work_loss(const pp_work *w);
/* How context parallelism moves K and V (--cp-comm, else the framework's): p2p, TransformerEngine's
 * ring (Megatron's --cp-comm-type p2p, its default): each hop the rank's K and V at the KV heads'
 * width in 16 bits, and their gradients likewise; allgather, K and V all-gathered at their own width
 * and the gradients reduce-scattered (Llama 3's CP, Dubey et al. 2024 sec. 3.3.2; Megatron's
 * --cp-comm-type allgather), priced as the same bytes; torch, PyTorch's ring
 * (torch.distributed.tensor.experimental context_parallel, torchtitan's CP): K and V as SDPA sees
 * them, repeated to the query heads, and the key and value gradients passed round in fp32. */
typedef enum { PP_CPC_P2P = 0, PP_CPC_ALLGATHER, PP_CPC_TORCH, PP_CPC_COUNT } pp_cp_comm;
extern const char *const pp_cp_comm_names[PP_CPC_COUNT]; /* "p2p", "allgather", "torch" */
pp_cp_comm pp_work_cp_comm(const pp_work *w);
/* GPUs that reach each other over NVLink: the NVLink domain when it spans nodes (NVL72), else the
 * node. What the communication model and the search's TP placement count as "within a node". */
int64_t pp_work_nvlink_gpus(const pp_work *w);
/* LoRA: --finetune lora; its rank (the default where none was given). */
bool pp_work_lora(const pp_work *w);
double pp_work_lora_rank(const pp_work *w);
/* FP8 parameters: --fp8-param-gather (or a recipe's) under --precision fp8 or mxfp8. */
bool pp_work_fp8_params(const pp_work *w);
/* Whether --fp8-param-gather applies to precision p (fp8, mxfp8). */
bool pp_precision_fp8_params(pp_precision p);
/* Which Adam keeps the state: NeMo 1.x's Apex DistributedFusedAdam (--distributed-fused-adam or
 * --optimizer-dtype bf16); Megatron's precision-aware optimizer (--precision-aware-optimizer or a
 * state dtype other than fp32). */
bool pp_work_dist_fused_adam(const pp_work *w);
bool pp_work_precision_aware(const pp_work *w);
/* Bytes per parameter of the unsharded optimizer state: the one of these two that applies, else
 * the framework's. */
double pp_work_optimizer_bytes(const pp_work *w);
/* its parameter part: the fp32 master (4), its 16-bit remainders (2) or none (0) */
double pp_work_optimizer_master_bytes(const pp_work *w);
/* Megatron's local implementation given explicitly (--impl local, or a script's
 * --transformer-impl local): its norms are torch modules, which refuse sequence parallelism
 * (megatron/core/transformer/torch_norm.py). Unfused attention alone does not imply it: the 2021-22
 * Megatron with apex's fused LayerNorm ran sequence parallelism with unfused attention. */
bool pp_work_torch_norms(const pp_work *w);
/* Which norms of a layer are modules of their own, which --recompute-modules layernorm recomputes
 * (Megatron-Core gpt_layer_specs.py): TransformerEngine's spec fuses the input norm into the QKV
 * linear except under MLA, and the pre-MLP norm into fc1 except in MoE layers (the router needs
 * its output); Megatron's local spec and the other frameworks keep both. */
void pp_work_norm_modules(const pp_work *w, bool moe_layer, bool *input_norm, bool *mlp_norm);
/* Write those resolved values into w->stack (for printing and JSON). */
void pp_stack_resolve(pp_work *w);
/* One line: "stack: bf16, te, flash attention, dropout 0.1/0.1 (model), overlap on, ...". */
void pp_stack_describe(const pp_work *w, char *buf, size_t n);
/* Ranges and contradictions of the stack with the work (the error names the CLI flags): FP8
 * needs TransformerEngine; Megatron's local implementation has no flash attention, no TP
 * communication overlap and no grouped expert GEMM; --impl is Megatron's; dropout in [0, 1);
 * capacity factor >= 0; imbalance >= 1 and at most experts / topk. */
pp_status pp_stack_check(const pp_work *w, pp_error *err);

/* The largest global batch, in sequences, any input may give. Published runs use at most ~1e4
 * (Llama 3 405B: 16M tokens of 8192 = 2048; ../validation rows); 1e8 leaves four orders of
 * magnitude and keeps gbs x seq x layers within int64 and double's exact integers. */
#define PP_MAX_GBS 1e8
#define PP_MAX_STAGES 512
#define PP_MAX_VSTAGES 4096 /* virtual pipeline stages (pp x vpp) an explicit split may list */

/* One parallel layout. Zero-initialise, then set; pp_layout_init gives the defaults. */
typedef struct {
    int64_t tp, pp, dp, vpp, cp, ep, mbs;
    int64_t etp;             /* expert tensor parallel (Megatron --expert-tensor-parallel-size);
                                0 = tp. Experts use the grid tp*cp*dp = etp * ep * edp. */
    int zero;                /* ZeRO stage 0-3 (deepspeed / fsdp semantics) */
    bool dist_opt;           /* Megatron distributed optimizer (~ZeRO-1 of the optimizer state) */
    bool sp;                 /* sequence parallel */
    pp_recompute recompute;
    int64_t recompute_layers; /* full recompute: layers per stage recomputed; 0 = all */
    unsigned recompute_modules; /* selective: bit set of pp_rc_module; 0 = core_attn */
    pp_offload offload;
    int64_t replicate;       /* --replicate: HSDP replicas under --framework fsdp (torchtitan
                                data_parallel_replicate_degree); 0 or 1 = none. dp = replicate x
                                the ranks each parameter is sharded over. */
    /* Optional uneven pipeline (the stage ILP): NULL = uniform split.
     * stage_layers[i] layers on stage i (pp entries); stage_recompute[i] of them fully recomputed. */
    const int *stage_layers;
    const int *stage_recompute;
    /* Optional split by virtual stage, as the user or a Megatron file states it
     * (--pipeline-layout, --first-stage-layers / --last-stage-layers): the decoder layers of
     * virtual stage (model chunk) j of pipeline stage i at vstage_layers[j * pp + i], pp x vpp
     * entries in model order, which is Megatron's order (pipeline_parallel_layer_layout.py: the
     * layout list's entry v * pp + r is virtual stage v of rank r). NULL: the default split
     * (pp_layout_vstage_layers). The embedding is part of virtual stage 0 and the output layer,
     * the loss and the MTP layers of the last one, where Megatron builds them (pre_process and
     * post_process of the first and last model chunk): they cost memory and time there. Excludes
     * stage_layers and stage_recompute; with vpp 1 it is a per-stage split. */
    const int *vstage_layers;
} pp_layout;

void pp_layout_init(pp_layout *l); /* tp=pp=dp=vpp=cp=ep=mbs=1, rest 0 */
/* Fill dp from gpus when 0 and check every divisibility rule; the error names the flag. */
pp_status pp_layout_validate(const pp_work *w, pp_layout *l, pp_error *err);
/* What the framework's row says it cannot run (pp_fw_row max_zero, no_offload, no_interleave,
 * full_recompute_only): part of pp_layout_validate, and the search's check of its fixed fields. */
pp_status pp_layout_framework_check(const pp_work *w, const pp_layout *l, pp_error *err);
/* Layers on pipeline stage i under the layout: the explicit split's, else the sum of its virtual
 * stages' (pp_layout_vstage_layers), else the uniform split, which puts the remainder first. */
int64_t pp_layout_stage_layers(const pp_work *w, const pp_layout *l, int64_t stage);
/* The one answer to "how many decoder layers does virtual stage `chunk` of pipeline stage `stage`
 * hold" (chunk < vpp; with vpp 1 the stage's layers):
 *   - an explicit split (vstage_layers) says it; the ILP's per-stage counts (stage_layers) are
 *     spread over the stage's chunks, the remainder on the first ones;
 *   - L / (pp vpp) when that divides (Megatron's interleaved split);
 *   - otherwise the balanced split: the embedding, the loss and (when the last virtual stage can
 *     take them) each MTP layer count as one layer, and the pp vpp virtual stages in model order
 *     share the L + 2 (+ MTP) slots evenly, the first ones one more where they do not divide.
 *     That is torchtitan's default split (generate_llm_fqn_per_model_part, input and output
 *     weighted as one layer each), and Megatron's --account-for-embedding-in-pipeline-split
 *     --account-for-loss-in-pipeline-split wherever those divide (transformer_block.py,
 *     get_num_layers_to_build): 94 layers on pp 8 x vpp 4 is E+2 | 3 x 30 | 2+L, DeepSeek-V3's
 *     61 (+1 MTP) on 8 x 4 is Megatron-Bridge's 'Et|(tt|)*30mL'. Needs pp vpp <= L + 2. */
int64_t pp_layout_vstage_layers(const pp_work *w, const pp_layout *l, int64_t stage, int64_t chunk);
/* First decoder layer of that virtual stage (the layers of the virtual stages before it in model
 * order). */
int64_t pp_layout_vstage_first_layer(const pp_work *w, const pp_layout *l, int64_t stage, int64_t chunk);
/* Fully recomputed layers of that virtual stage under --recompute full: all of them, or with
 * --recompute-layers K (per pipeline stage, Megatron's block method: the first K / vpp of each
 * model chunk, rounded up as the launch writes it) at most that many. */
int64_t pp_layout_vstage_recompute(const pp_work *w, const pp_layout *l, int64_t stage, int64_t chunk);
/* An interleaved layout (vpp > 1) whose virtual stages are priced one by one: an explicit split,
 * or the balanced default where pp x vpp does not divide the layers. The memory and time models
 * then walk the schedule by model chunk (memory.c, time_step.c). */
bool pp_layout_vstages_uneven(const pp_work *w, const pp_layout *l);
/* An explicit vstage_layers split that equals the default split is dropped (NULL), so that a
 * layout has one form: the default needs no flag, and launch -> read back gives the same layout. */
void pp_layout_canonical(const pp_work *w, pp_layout *l);
/* Micro-batches per step per DP replica: gbs / (dp * mbs). */
int64_t pp_layout_microbatches(const pp_work *w, const pp_layout *l);
/* Ranks of a group of size n with stride `stride` (in Megatron's rank order tp, cp, ep/dp, pp)
 * that share a node of gpn GPUs: the layer's collectives (cost/layer.c) and their prices
 * (cost/time*.c) read it. */
int64_t pp_layout_group_per_node(int64_t n, int64_t stride, int64_t gpn);
/* Expert tensor parallel size (etp, or tp when 0) and the expert data-parallel size that the
 * experts' gradients and optimizer state are reduced and sharded over: tp*cp*dp / (etp * ep). */
int64_t pp_layout_etp(const pp_layout *l);
int64_t pp_layout_edp(const pp_layout *l);
/* The ranks FSDP2 shards over: the dense parameters' (*dense) and the routed experts' (*expert).
 * --zero 3 / 2: fully_shard over the data-parallel ranks (torchtitan folds CP into the FSDP mesh,
 * dp_shard_cp), HSDP within each of the --replicate groups; --zero 0 / 1: none (1). What the layer
 * description, the memory and the time model read. */
void pp_fsdp_shards(const pp_layout *l, double *dense, double *expert);

/* Whether FSDP2 all-gathers the linear weights in float8 (torchao's enable_fsdp_float8_all_gather,
 * which works with tensorwise scaling alone: torchao/float8/fsdp_utils.py) under --precision fp8
 * with the parameters sharded. What the layer description, the memory and the time model read. */
bool pp_fsdp_fp8_gather(const pp_work *w, const pp_layout *l);
/* Selective recompute's modules as a bit set (1 << PP_RCM_CORE_ATTN when none was given; 0 when
 * the layout's recompute is not selective). */
unsigned pp_layout_rc_modules(const pp_layout *l);
/* "tp2 pp1 dp8 mbs4 dist-opt sp selective" (sizes of 1 left out except tp, pp, dp, mbs; an uneven
 * split as " stages 21/19 rc 0/2", an explicit virtual-stage split as " vstages 1,2*30,0": the
 * layers of each virtual stage in model order, runs as N*k): the one label of a layout, in every
 * table and report. */
const char *pp_layout_label(const pp_layout *l, char *buf, size_t n);
/* First decoder layer of pipeline stage i (sum of the earlier stages' layers). An interleaved
 * stage's layers are not contiguous: the models price a uniform one as this block, and the
 * stages of pp_layout_vstages_uneven layouts chunk by chunk. */
int64_t pp_layout_stage_first_layer(const pp_work *w, const pp_layout *l, int64_t stage);

#endif
