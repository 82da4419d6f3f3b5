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
/* "file:line:col: msg" or just "msg"; writes at most n bytes. */
void pp_error_format(const pp_error *err, char *buf, size_t n);

/* ------------------------------------------------------------------ model */

typedef enum { PP_ACT_GELU = 0, PP_ACT_SWIGLU, PP_ACT_RELU, PP_ACT_COUNT } pp_act;
typedef enum { PP_NORM_LAYERNORM = 0, PP_NORM_RMSNORM, PP_NORM_COUNT } pp_norm;
typedef enum { PP_POS_LEARNED = 0, PP_POS_ROPE, PP_POS_ALIBI, PP_POS_NONE, PP_POS_COUNT } pp_pos;

extern const char *const pp_act_names[PP_ACT_COUNT];   /* "gelu", "swiglu", "relu" */
extern const char *const pp_norm_names[PP_NORM_COUNT]; /* "layernorm", "rmsnorm" */
extern const char *const pp_pos_names[PP_POS_COUNT];   /* "learned", "rope", "alibi", "none" */

/* A decoder-only (or encoder) transformer. Shapes follow Megatron's names. */
typedef struct {
    char name[64];
    char family[32];        /* "gpt", "llama", "bloom", ... (informational) */
    int64_t layers;         /* L */
    int64_t hidden;         /* h */
    int64_t heads;          /* a */
    int64_t kv_heads;       /* g (= a for MHA) */
    int64_t head_dim;       /* usually h / a */
    int64_t ffn;            /* f: MLP inner size (4h for GPT, 11008 for Llama-2-7B) */
    int64_t vocab;          /* V (as trained, before any padding) */
    int64_t seq;            /* s: training sequence length */
    pp_act act;
    pp_norm norm;
    pp_pos pos;
    bool bias;              /* linear-layer biases */
    bool tied;              /* input embedding shared with the output layer */
    int64_t experts;        /* 0 or 1: dense; >1: MoE with that many experts per layer */
    int64_t topk;           /* experts per token (MoE) */
    int64_t gbs;            /* default global batch (sequences); 0 = unset */
    double published_params; /* published total parameter count, 0 if none (for tests) */
    char source[256];       /* where the shape comes from */
} pp_model;

/* Parameter counts (exact, from the per-tensor table in model.c). */
typedef struct {
    int64_t embedding;  /* word (+ learned position) embedding */
    int64_t per_layer;  /* one transformer layer, all experts */
    int64_t layer_active; /* one layer, only top-k experts (MoE) */
    int64_t final_norm;
    int64_t output;     /* untied output layer (0 when tied) */
    int64_t total;
    int64_t active;     /* parameters touched per token (MoE: top-k experts) */
} pp_param_count;

void pp_model_init(pp_model *m); /* zero + defaults (kv_heads = heads etc. resolved later) */
/* Fill derived fields (kv_heads, head_dim, ffn defaults) and check ranges. */
pp_status pp_model_validate(pp_model *m, pp_error *err);
void pp_model_params(const pp_model *m, pp_param_count *out);

/* ------------------------------------------------------------------ gpu */

typedef enum { PP_DT_FP32 = 0, PP_DT_TF32, PP_DT_FP16, PP_DT_BF16, PP_DT_FP8, PP_DT_COUNT } pp_dtype;
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
    double internode_gbs;     /* network bandwidth per GPU, unidirectional GB/s */
    double gemm_eff;          /* achievable fraction of bf16 peak for large GEMMs (catalog) */
    double intra_latency_s;   /* per-collective-step latency inside a node */
    double inter_latency_s;   /* per-step latency across nodes */
    char source[256];
} pp_gpu;

void pp_gpu_init(pp_gpu *g);
pp_status pp_gpu_validate(pp_gpu *g, pp_error *err);

/* ------------------------------------------------------------------ work and layout */

typedef enum { PP_FW_MEGATRON = 0, PP_FW_DEEPSPEED, PP_FW_FSDP, PP_FW_COUNT } pp_framework;
typedef enum { PP_ATTN_FLASH = 0, PP_ATTN_UNFUSED, PP_ATTN_COUNT } pp_attention;
typedef enum { PP_RC_NONE = 0, PP_RC_SELECTIVE, PP_RC_FULL, PP_RC_COUNT } pp_recompute;
typedef enum { PP_OFF_NONE = 0, PP_OFF_OPTIMIZER, PP_OFF_PARAMS, PP_OFF_COUNT } pp_offload;
extern const char *const pp_framework_names[PP_FW_COUNT];
extern const char *const pp_attention_names[PP_ATTN_COUNT];
extern const char *const pp_recompute_names[PP_RC_COUNT];
extern const char *const pp_offload_names[PP_OFF_COUNT];
/* Index of name in a names table of n entries, or -1. */
int pp_name_lookup(const char *const *names, int n, const char *name);

struct pp_profile; /* measured hardware profile, profile.c */

/* What is to be trained, on what. */
typedef struct {
    pp_model model;
    pp_gpu gpu;
    int64_t gpus;            /* total GPUs */
    int64_t gpus_per_node;
    int64_t gbs;             /* global batch in sequences */
    pp_framework framework;
    pp_attention attention;
    const struct pp_profile *profile; /* NULL: catalog efficiencies */
} pp_work;

#define PP_MAX_STAGES 512

/* One parallel layout. Zero-initialise, then set; pp_layout_init gives the defaults. */
typedef struct {
    int64_t tp, pp, dp, vpp, cp, ep, mbs;
    int zero;                /* ZeRO stage 0-3 (deepspeed / fsdp semantics) */
    bool dist_opt;           /* Megatron distributed optimizer (~ZeRO-1 of the optimizer state) */
    bool sp;                 /* sequence parallel */
    pp_recompute recompute;
    int64_t recompute_layers; /* full recompute: layers per stage recomputed; 0 = all */
    pp_offload offload;
    /* Optional uneven pipeline (ILP, issue 5): NULL = uniform split.
     * stage_layers[i] layers on stage i (pp entries); stage_recompute[i] of them fully recomputed. */
    const int *stage_layers;
    const int *stage_recompute;
} pp_layout;

void pp_layout_init(pp_layout *l); /* tp=pp=dp=vpp=cp=ep=mbs=1, rest 0 */
/* Fill dp from gpus when 0 and check every divisibility rule; the error names the flag. */
pp_status pp_layout_validate(const pp_work *w, pp_layout *l, pp_error *err);
/* Layers on pipeline stage i under the layout (uniform split puts the remainder first). */
int64_t pp_layout_stage_layers(const pp_work *w, const pp_layout *l, int64_t stage);
/* Micro-batches per step per DP replica: gbs / (dp * mbs). */
int64_t pp_layout_microbatches(const pp_work *w, const pp_layout *l);

#endif
