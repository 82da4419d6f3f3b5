/* One transformer layer as one rank of a layout runs it for one micro-batch: its geometry, its
 * GEMMs, its attention core, its elementwise kernels, its collectives, the tensors it saves for
 * the backward and its parameters, built in one place (layer.c) and read by every estimate:
 * the memory model (memory.c, memory_fsdp.c), the step-time model (time.c) and the model FLOPs.
 * After calculon's Layer (Isaev et al., SC'23): one object per layer holding its FLOPs, bytes
 * and memory together.
 *
 * Fixed-size arrays, no allocation: the layout search builds one for every candidate. */
#ifndef PP_LAYER_H
#define PP_LAYER_H

#include "pp.h"
#include "pp_time.h" /* pp_time_coll: the collectives' operations */

/* With a layer kind (PP_LAYER_MOE | PP_LAYER_WINDOW bits): the MTP layer of that kind (DeepSeek-V3
 * sec. 2.2), the transformer layer plus its two input norms and the 2h -> h projection. */
#define PP_LAYER_MTP 4

/* Where a GEMM sits in the layer: the time model places the TP collectives beside these. */
typedef enum {
    PP_LB_ATTN_IN = 0, /* QKV (MLA: the down- and up-projections), column-parallel side */
    PP_LB_ATTN_OUT,    /* attention output projection, row-parallel */
    PP_LB_MLP_IN,      /* dense fc1 (gate and up) */
    PP_LB_MLP_OUT,     /* dense fc2 */
    PP_LB_ROUTER,      /* MoE router */
    PP_LB_SHARED,      /* shared experts (fc1 and fc2) */
    PP_LB_EXPERT,      /* routed experts (fc1 and fc2) */
    PP_LB_MTP,         /* the MTP layer's projection */
    PP_LB_COUNT
} pp_layer_block;

/* One GEMM shape: (m x k) x (k x n), `count` of them (one per local expert for the experts).
 * A linear layer's weight is n x k. */
typedef struct {
    const char *name;
    double m, n, k, count;
    pp_layer_block block;
    unsigned mods;  /* bit set of pp_rc_module: selective recompute of any of them re-runs it */
    bool fp8;       /* FP8-eligible: inside TransformerEngine's fp8 autocast (not the router) */
    bool bias;      /* the linear has a bias (an addmm, not an aten.mm) */
    bool sac_saved; /* torchtitan's op-level selective AC keeps its output (the titan variant) */
    bool frozen;    /* LoRA's frozen base: no weight gradient (backward = the data gradient) */
    bool adapter;   /* a LoRA adapter's A or B (trained; its weight is n x k on this rank) */
} pp_layer_gemm;

/* The attention core of the rank's heads (FlashAttention or Megatron's unfused path). */
typedef struct {
    double batch_heads;  /* micro-batch x heads on this rank */
    double queries;      /* queries of the rank's sequence shard: s / cp */
    double keys;         /* key length s (the unfused path computes every score) */
    double span;         /* keys a query can see: s, or the window when it is shorter */
    double keys_avg;     /* keys a query attends under the causal mask on average: s / 2, or
                            W (1 - W / 2s) for a window W < s */
    double qk_dim, v_dim; /* per head: query/key width (MLA: nope + rope) and value width */
    double scores;       /* elements of the score matrix (unfused): batch_heads x queries x keys */
    bool fused;
} pp_layer_attn;

/* Elementwise kernels by class; the time model's bytes per element (time.c, EW_*) are keyed by
 * class. The torchtitan classes are its eager block's ops (the titan variant). */
typedef enum {
    PP_EW_NORM = 0,      /* LayerNorm / RMSNorm of the residual stream */
    PP_EW_BDA,           /* bias-dropout-add */
    PP_EW_GELU,          /* plain activation, per f-wide element */
    PP_EW_SWIGLU,        /* gated activation, per f-wide element */
    PP_EW_ROPE,          /* per rotated q/k element */
    PP_EW_QK_NORM,       /* QK-norm over the q and k widths */
    PP_EW_ROUTER,        /* per router logit: softmax, top-k, routing map */
    PP_EW_PERMUTE,       /* token permutation and its inverse, per routed element */
    PP_EW_PROB_SCALE,    /* eager experts: activation x router probability */
    PP_EW_FP8_CAST_IN,   /* forward: an FP8 GEMM's input cast (and transposed) */
    PP_EW_FP8_CAST_GRAD, /* backward: an FP8 GEMM's output gradient cast */
    PP_EW_T_NORM,        /* torchtitan: rms_norm */
    PP_EW_T_ADD,         /* torchtitan: residual add */
    PP_EW_T_GRAD_SUM,    /* torchtitan backward: the input-gradient sums of linears sharing an input */
    PP_EW_T_GELU,
    PP_EW_T_SWIGLU,
    PP_EW_T_ROPE,        /* torchtitan: RoPE in fp32 on complex numbers */
    PP_EW_T_REPEAT,      /* torchtitan: repeat_kv's copies */
    PP_EW_T_QK_NORM,
    PP_EW_T_FP8_NORM_BWD, /* torchtitan, torchao tensorwise float8 without AC: the backward's norms */
    PP_EW_HF_NORM,       /* Hugging Face's RMSNorm: x.float(), pow, mean, rsqrt, products, casts */
    PP_EW_CLASS_COUNT
} pp_layer_ew_class;

typedef struct {
    const char *name;
    pp_layer_ew_class cls;
    double elems;
    pp_layer_block block; /* PP_LB_EXPERT for the experts' activation; else the block it serves */
    unsigned mods;        /* selective recompute modules that re-run it */
} pp_layer_ew;

/* The parallel group a collective runs over. */
typedef enum { PP_LG_TP = 0, PP_LG_CP, PP_LG_EP, PP_LG_ETP, PP_LG_COUNT } pp_layer_group;

typedef struct {
    const char *name;
    pp_layer_group group;
    pp_time_coll op;
    double bytes;     /* all-reduce: the buffer; all-gather: the output; reduce-scatter: the
                         input; all-to-all: what leaves a rank; send/recv: one message */
    double count;     /* how many of them in the pass */
    int64_t ranks;    /* group size */
    int64_t stride;   /* rank distance of the group's members (Megatron's order tp, cp, ep/dp) */
    bool bwd;         /* backward pass (else forward) */
    pp_layer_block beside; /* the GEMM it precedes or follows (TP) */
    bool async;       /* runs beside that GEMM's backward by default (Megatron's asynchronous
                         TP input-gradient reduction and the SP input re-gather) */
    bool regather;    /* the SP backward's re-gather of a column-parallel layer's input */
    double net_bytes; /* PP_TC_DISPATCH: what crosses the network (bytes: what moves over NVLink) */
} pp_layer_coll;

/* One tensor saved for the backward (the activation table; memory.c prices it). */
typedef struct {
    const char *name;
    double elems;
    double bytes_per_elem;
    bool paper;          /* counted by Korthikanti et al. 2022, table 2 */
    unsigned drop_mods;  /* selective recompute of any of these modules does not store it */
} pp_layer_saved;

/* A working set one operation's backward allocates while it runs, on top of the tensors saved
 * for it, and frees before the next operation's backward (the memory models take the largest;
 * nothing else derives them). Per micro-batch on this rank. */
typedef struct {
    const char *name;
    double bytes;
    unsigned mods;       /* selective recompute modules whose re-run in the backward precedes it */
} pp_layer_transient;

/* One parameter tensor of the layer on this rank. */
typedef struct {
    const char *name;
    double elems;        /* on this rank (routed experts: all its local experts) */
    double global;       /* in the model (routed experts: all of them) */
    pp_tensor_scope scope; /* PP_TS_LAYER (attention block), DENSE, MOE, EXPERT, MTP */
    pp_tensor_split split;
    bool expert_dp;      /* gradients reduced over the expert data-parallel group (routed
                            experts); else over dp x cp */
} pp_layer_param;

#define PP_LAYER_MAX_GEMMS 16
#define PP_LAYER_MAX_EW 24
#define PP_LAYER_MAX_COLLS 16
#define PP_LAYER_MAX_SAVED 40
#define PP_LAYER_MAX_PARAMS 32
#define PP_LAYER_MAX_TRANSIENTS 4

/* Which parts pp_layer_build_parts fills (the geometry and the attention core always). */
enum {
    PP_LAYER_GEMMS = 1u << 0,
    PP_LAYER_EW = 1u << 1,
    PP_LAYER_COLLS = 1u << 2,
    PP_LAYER_SAVED = 1u << 3,
    PP_LAYER_PARAMS = 1u << 4,
    PP_LAYER_TRANSIENTS = 1u << 5, /* the backward working sets (built with the saved tensors) */
    PP_LAYER_ALL = 0x3f
};

typedef struct {
    int kind;            /* PP_LAYER_MOE | PP_LAYER_WINDOW | PP_LAYER_MTP bits as built */
    bool moe, window, mla, mtp;
    bool titan;          /* torchtitan's eager block (--framework fsdp, not MLA): separate wq,
                            wk, wv and w1, w3 projections, its elementwise classes */
    bool glu;
    /* --- geometry */
    double tp, cp, mbs;
    double hidden;
    double seq;          /* s (keys) */
    double tokens;       /* T = mbs x seq / cp: the rank's sequence shard */
    double tokens_routed;       /* the router's tokens on this rank (SP: T / tp) */
    double expert_tokens_mean;  /* token copies the rank's experts receive on average */
    double expert_tokens;       /* the same on the busiest rank (imbalance, capacity factor) */
    double rep;          /* share of a residual-stream (h-wide) tensor on this rank: 1/tp under
                            sequence parallelism, else 1 */
    double rep_titan;    /* the same for torchtitan, whose TP always shards the norms' rows */
    double heads, kv_heads;     /* per rank (KV heads replicated when tp exceeds them) */
    double head_dim, v_head_dim;
    double q_width, kv_width, v_width; /* heads x head_dim, kv_heads x head_dim, heads x v_head_dim */
    double ffn;          /* dense MLP inner size on this rank: f / tp */
    double expert_ffn;   /* routed expert inner size on this rank: f_e / etp */
    double shared_ffn;   /* shared experts' inner size on this rank: f_s / tp */
    double experts, topk, ep, etp, local_experts;
    /* --- work */
    int n_gemm, n_ew, n_coll, n_saved, n_param;
    pp_layer_gemm gemm[PP_LAYER_MAX_GEMMS];
    pp_layer_attn attn;
    pp_layer_ew ew[PP_LAYER_MAX_EW];
    pp_layer_coll coll[PP_LAYER_MAX_COLLS];
    /* --- memory: the saved tensors (no recompute), and under full recompute the checkpointed
     * layer input alone */
    pp_layer_saved saved[PP_LAYER_MAX_SAVED];
    pp_layer_saved full_input;
    double saved_bytes, saved_paper_bytes; /* sums over saved[] (no recompute) */
    double mtp_saved_bytes;   /* what the model's MTP layer of this kind saves on top of it */
    unsigned saved_sel_mods;  /* the layout's selective recompute modules (core_attn if none) */
    double saved_sel_bytes;   /* the sum of what they keep */
    double bwd_resident_extra_bytes; /* the titan block's own backward holds saved_bytes + this: what
                                        a compiled float8 block recomputes there instead of keeping,
                                        less the weights it kept (build_saved_titan) */
    /* --- the backward's working sets, and the largest of them */
    int n_transient;
    pp_layer_transient transient[PP_LAYER_MAX_TRANSIENTS];
    double bwd_work_bytes;    /* max over transient[] */
    double attn_work_bytes;   /* the attention core's (re-run first under selective recompute) */
    /* --- parameters on this rank, and their sums */
    pp_layer_param param[PP_LAYER_MAX_PARAMS];
    double params_attn;   /* attention block with its norms (scope PP_TS_LAYER) */
    double params_mlp;    /* dense MLP, or the MoE block's norms, router and shared experts */
    double params_expert; /* the routed experts on this rank */
    double params_expert_global; /* all routed experts of the layer */
    double params_mtp;    /* the MTP layer's norms and projection (PP_LAYER_MTP) */
    double largest_weight; /* largest weight on this rank (one expert's for the experts) */
} pp_layer;

/* Build the description of one layer of kind `kind` (PP_LAYER_MOE | PP_LAYER_WINDOW, and
 * PP_LAYER_MTP for the MTP layer) for layout l (validated). A MoE bit on a dense model and a
 * window bit on a model without windows are ignored. */
void pp_layer_build(const pp_work *w, const pp_layout *l, int kind, pp_layer *out);
/* The same, filling only the parts asked for (PP_LAYER_GEMMS | ...): the memory model's fast
 * path needs the saved tensors alone (and the parameter sums, pp_layer_rank_params_get). */
void pp_layer_build_parts(const pp_work *w, const pp_layout *l, int kind, unsigned parts,
                          pp_layer *out);

/* Megatron's flex dispatcher (DeepEP, HybridEP): the expected number of distinct ranks of its
 * group of n ranks (etp x ep, per_node of them on each node) that receive one token, and of
 * distinct other nodes (0 when the group is on one node), with the model's top-k routing spread
 * uniformly over the experts (forced balance) within group-limited routing's groups. */
void pp_layer_dispatch_fanout(const pp_work *w, const pp_layout *l, int64_t per_node, double *ranks,
                              double *other_nodes);

/* The tokens a rank's router (and the dispatcher after it) sees per micro-batch: the rank's
 * sequence shard mbs x seq / cp, split over TP under sequence parallelism (pp_layer.tokens_routed). */
double pp_layer_tokens_routed(const pp_work *w, const pp_layout *l);

/* The token copies the rank's experts receive per micro-batch for T tokens of its sequence
 * shard on the busiest rank (the one rule the memory and time models share), and the mean in
 * *mean when not NULL. */
double pp_layer_expert_tokens(const pp_work *w, const pp_layout *l, double T, double *mean);

/* Bytes the layer stores for its backward under recompute mode rc; `mods` are selective
 * recompute's modules (rc == PP_RC_SELECTIVE; the layout's are ly->saved_sel_mods, summed at
 * build time). paper_bytes (optional): those of Korthikanti's table 2. */
double pp_layer_saved_bytes(const pp_layer *ly, pp_recompute rc, unsigned mods, double *paper_bytes);
/* Whether saved tensor i is stored under (rc, mods). */
bool pp_layer_saved_kept(const pp_layer *ly, int i, pp_recompute rc, unsigned mods);

/* The GEMMs of one layer of kind `kind` for layout l: (m, n, k, count) of each, what the probes
 * time. Writes at most max of them; returns how many the layer has. */
int pp_layer_gemm_shapes(const pp_work *w, const pp_layout *l, int kind, pp_layer_gemm *out, int max);

/* Every row of the model's parameter table (model.c, pp_model_tensors: the one formula) as one
 * rank of layout l holds it, with the sums by scope: the layer's blocks (PP_TS_LAYER, DENSE,
 * MOE, EXPERT: all the rank's experts of one layer), and outside the layers the embedding
 * (first stage), the final norm and the untied output layer (last stage), one MTP layer's
 * norms and projection. One pass per layout; `rows` false: the sums alone (the memory model's
 * fast path), row[] is left empty. */
typedef struct {
    int n;
    pp_layer_param row[PP_MODEL_MAX_TENSORS];
    double scope[PP_TS_COUNT];   /* elements on this rank by scope */
    double layer_largest;        /* largest tensor of a decoder layer on this rank (one expert's) */
    double expert_global;        /* all routed experts of one MoE layer */
    double word;                 /* the word embedding */
    double tied_copy;            /* tied embeddings under PP: the word embedding's copy on the
                                    last stage (megatron/core/models/common/language_module) */
} pp_layer_rank_params;
void pp_layer_rank_params_get(const pp_work *w, const pp_layout *l, bool rows, pp_layer_rank_params *out);

/* LoRA (--finetune lora): the adapter parameters of one dense layer in the model (A: r x k and
 * B: n x r per targeted linear; Megatron-Bridge splits both over TP, so a rank holds 1/tp). */
double pp_layer_lora_params(const pp_work *w);

/* Vocabulary as the framework stores it: Megatron pads to a multiple of N x TP
 * (--make-vocab-size-divisible-by N, default 128, megatron/training/vocab_utils.py); N is the
 * stack's --vocab-divisible-by where given. */
double pp_layer_vocab(const pp_work *w, const pp_layout *l);
/* The TP ranks the token embedding is split over: tp, or 1 where FSDP2 + TP leaves it whole on
 * every rank (--tp-vocab replicated, KempnerForge's plan). */
double pp_layer_embed_tp(const pp_work *w, const pp_layout *l);
/* Whether the loss runs vocab-parallel over TP (Megatron's cross-entropy, torchtitan's
 * loss_parallel), not on logits gathered whole to every TP rank (--tp-vocab gathered|replicated). */
bool pp_layer_loss_parallel(const pp_work *w, const pp_layout *l);

/* Forward FLOPs per token of the whole model (GEMMs at one rank's full width, the published
 * convention: the causal mask is not discounted; top-k experts), and of its attention cores
 * alone in *attn_core. */
double pp_layer_model_fwd_flops_per_token(const pp_model *m, double *attn_core);

#endif
