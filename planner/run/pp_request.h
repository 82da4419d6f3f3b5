/* A request: what the user asked for (WORK, model overrides, STACK, LAYOUT), as given, before
 * anything is loaded; and the one merge that turns it into the work and layout every command
 * plans from: the catalog (or a model/GPU file), a --megatron-args, --deepspeed-config or
 * --torchtitan-config file, and the flags given beside it, which override the file's.
 *
 * The command line fills a request through the option table pp_request_options (pp_options.h:
 * each entry points at a field); tests and tools fill one the same way (pp_request_parse), so a
 * figure printed by a test is the one the CLI prints for the same flags. */
#ifndef PP_REQUEST_H
#define PP_REQUEST_H

#include "pp.h"
#include "pp_load.h"
#include "pp_margs.h"
#include "pp_options.h"
#include "pp_profile.h"
#include "pp_recipe.h"
#include "pp_search.h"

/* One key per request option: request.given[key] is set when the option was given. */
typedef enum {
    PP_RQ_MODEL, PP_RQ_GPU, PP_RQ_PROFILE, PP_RQ_MEGATRON_ARGS, PP_RQ_DS_CONFIG, PP_RQ_TT_CONFIG, PP_RQ_GPUS, PP_RQ_GPN, PP_RQ_GBS,
    PP_RQ_FRAMEWORK, PP_RQ_ATTENTION, PP_RQ_MAX_MEM_FRAC, PP_RQ_GPU_MEM, PP_RQ_GPU_POWER,
    /* model overrides */
    PP_RQ_LAYERS, PP_RQ_HIDDEN, PP_RQ_HEADS, PP_RQ_KV_HEADS, PP_RQ_FFN, PP_RQ_VOCAB, PP_RQ_SEQ,
    PP_RQ_EXPERTS, PP_RQ_TOPK, PP_RQ_ACT, PP_RQ_NORM, PP_RQ_TIED, PP_RQ_BIAS,
    /* stack */
    PP_RQ_PRECISION, PP_RQ_DROPOUT, PP_RQ_ATTN_DROPOUT, PP_RQ_HIDDEN_DROPOUT, PP_RQ_NO_OVERLAP,
    PP_RQ_TP_COMM_OVERLAP, PP_RQ_IMPL, PP_RQ_DISPATCHER, PP_RQ_FLEX_BACKEND, PP_RQ_GROUPED_GEMM, PP_RQ_CAPACITY,
    PP_RQ_IMBALANCE, PP_RQ_EP_OVERLAP, PP_RQ_CUDA_GRAPHS, PP_RQ_CPU_OFFLOAD_LAYERS, PP_RQ_SDPA_BACKEND, PP_RQ_FP8_SCALING, PP_RQ_EAGER_NORM, PP_RQ_TP_VOCAB, PP_RQ_TE_ATTENTION, PP_RQ_GRAD_BF16, PP_RQ_OPTIMIZER_IMPL, PP_RQ_EXPANDABLE,
    PP_RQ_COMPILE, PP_RQ_NO_ATTN_MASK, PP_RQ_OPTIMIZER_DTYPE, PP_RQ_MEGATRON_FSDP, PP_RQ_ACT_UNFUSED,
    PP_RQ_CE_FUSION, PP_RQ_RECIPE, PP_RQ_PARAM_DTYPE, PP_RQ_LOSS, PP_RQ_FP8_PARAM_GATHER,
    PP_RQ_MAIN_PARAMS_DTYPE, PP_RQ_EXP_AVG_DTYPE, PP_RQ_EXP_AVG_SQ_DTYPE, PP_RQ_FINETUNE, PP_RQ_LORA_RANK,
    PP_RQ_LORA_TARGETS, PP_RQ_PRECISION_AWARE, PP_RQ_DIST_FUSED_ADAM, PP_RQ_VOCAB_DIVISIBLE_BY,
    PP_RQ_FSDP_DOUBLE_BUFFER, PP_RQ_FSDP_UNIT_SIZE, PP_RQ_FSDP_GRADS_FP32, PP_RQ_NO_SYNC_ACCUM,
    PP_RQ_KEEP_LOGITS, PP_RQ_REPEAT_KV, PP_RQ_NO_REPEAT_KV, PP_RQ_COMPILE_LOSS, PP_RQ_NO_COMPILE_LOSS, PP_RQ_CP_COMM, PP_RQ_ROUTER_HOLDS_RECOMPUTE, PP_RQ_EXPERT_PAD_LOOP,
    /* layout */
    PP_RQ_TP, PP_RQ_PP, PP_RQ_DP, PP_RQ_VPP, PP_RQ_CP, PP_RQ_EP, PP_RQ_ETP, PP_RQ_MBS, PP_RQ_ZERO,
    PP_RQ_DIST_OPT, PP_RQ_SP, PP_RQ_RECOMPUTE, PP_RQ_RECOMPUTE_LAYERS, PP_RQ_RECOMPUTE_MODULES,
    PP_RQ_OFFLOAD, PP_RQ_REPLICATE, PP_RQ_STAGES, PP_RQ_PIPELINE_LAYOUT, PP_RQ_FIRST_STAGE, PP_RQ_LAST_STAGE,
    PP_RQ_COUNT
} pp_request_key;

typedef struct {
    /* WORK */
    const char *model, *gpu, *profile, *megatron_args, *recipe, *deepspeed_config, *torchtitan_config;
    int64_t gpus, gpus_per_node, gbs;
    int framework, attention; /* pp_framework, pp_attention */
    double max_mem_frac;      /* 0: not given (all of the usable memory) */
    double gpu_mem_gib;       /* --gpu-mem-gib: the GPU memory the run had, over the entry's */
    double gpu_power_w;       /* --gpu-power-w: the power limit the run had, over the entry's */
    /* model overrides (applied over the resolved model) */
    int64_t layers, hidden, heads, kv_heads, ffn, vocab, seq, experts, topk;
    int act, norm, tied, bias; /* pp_act, pp_norm, 0/1 */
    /* STACK */
    int precision;            /* pp_precision */
    double dropout, attention_dropout, hidden_dropout;
    bool no_overlap, tp_comm_overlap, grouped_gemm, ep_overlap, grad_bf16, expandable_segments, compile;
    bool no_attention_mask, megatron_fsdp, act_unfused, fp8_param_gather, precision_aware_opt, dist_fused_adam;
    int main_params_dtype, exp_avg_dtype, exp_avg_sq_dtype; /* pp_opt_dtype_names */
    int impl, dispatcher, optimizer_impl; /* pp_impl, pp_dispatch, pp_adam_impl */
    int flex_backend;                     /* pp_flex_backend */
    int ce_fusion;            /* pp_ce_fusion */
    int sdpa_backend;         /* pp_sdpa_backend */
    int cp_comm;              /* pp_cp_comm */
    int fp8_scaling;          /* pp_fp8_scaling */
    int eager_norm;           /* pp_eager_norm */
    int tp_vocab;             /* pp_tp_vocab */
    int te_attention;         /* pp_te_attention */
    int optimizer_dtype;      /* 0 fp32, 1 bf16 */
    int param_dtype;          /* 0 fp32, 1 bf16 */
    int loss;                 /* pp_torch_loss_names: pp_loss PP_LOSS_TORCH + it */
    int finetune, lora_targets; /* pp_finetune, pp_lora_targets */
    int64_t lora_rank;
    int64_t cpu_offload_layers;
    int64_t vocab_divisible_by;
    int64_t fsdp_unit_size;
    bool fsdp_double_buffer, fsdp_grads_fp32, no_sync_accum, keep_logits, repeat_kv, no_repeat_kv, compile_loss, no_compile_loss,
        router_holds_recompute, expert_pad_loop;
    double capacity_factor, moe_imbalance;
    /* LAYOUT */
    int64_t tp, pp, dp, vpp, cp, ep, etp, mbs, recompute_layers, replicate;
    int zero, recompute, offload; /* 0-3, pp_recompute, pp_offload */
    bool dist_opt, sp;
    unsigned recompute_modules;
    unsigned cuda_graphs;       /* bit set of pp_cuda_graph_part */
    int stages;               /* index into uniform|ilp|auto when given[PP_RQ_STAGES] */
    /* the pipeline split by virtual stage (pp_pipeline.h): Megatron's layout string, or the
     * first / last stage's layers */
    const char *pipeline_layout;
    int64_t first_stage_layers, last_stage_layers;
    unsigned char given[PP_RQ_COUNT];
    char *owned;              /* pp_request_parse_line's copy of its line (the strings point into it) */
} pp_request;

/* The option table of every request option, in --help order. */
extern const pp_option pp_request_options[];
extern const size_t pp_request_n_options;
/* The entry named name ("--tp"), or NULL. */
const pp_option *pp_request_option(const char *name);

void pp_request_init(pp_request *r); /* nothing given, defaults as the CLI's */
void pp_request_free(pp_request *r); /* accepts NULL; frees what pp_request_parse_line kept */
/* Layout flags the request gives explicitly: the search keeps them fixed (PP_SEARCH_FIX_*; a
 * pipeline split fixes pp and vpp). */
unsigned pp_request_fixed(const pp_request *r);
/* The layout the flags give (defaults where they give nothing); no file, no validation. */
pp_layout pp_request_layout(const pp_request *r);
/* --stages as given ("uniform", "ilp", "auto"), or NULL: the command's default. */
const char *pp_request_stages(const pp_request *r);

/* What the merge produced: the work and layout (with the file's uneven stages, if any), the
 * loaded --megatron-args file and profile it points into, and the warnings a command prints. */
typedef struct {
    pp_work work;
    pp_layout layout;
    unsigned fixed;               /* pp_request_fixed */
    pp_margs_config *margs;       /* NULL without --megatron-args; owns layout's stage arrays */
    int *split;                   /* the split --pipeline-layout / --first-stage-layers /
                                     --last-stage-layers give (PP_MAX_VSTAGES entries, or NULL):
                                     layout.vstage_layers points here */
    pp_profile profile;
    bool have_profile;
    pp_recipe recipe;             /* --recipe, when have_recipe */
    bool have_recipe;
    unsigned char src[PP_RF_COUNT]; /* pp_recipe_src: where each recipe field's value came from */
    char warnings[3][768];        /* one line each, without "parplan: warning: " */
    int n_warnings;
} pp_resolved;

/* Merge the request into out (pp_resolved_free it): catalog models and GPUs from cat (loaded),
 * --megatron-args, the flags over the file's, the stack check, the profile; needs_layout
 * validates the layout against the work. Bad input is PP_ERR_INPUT naming the flag (or the
 * file, with its line). quiet leaves the warnings out. */
pp_status pp_request_resolve(const pp_request *r, const pp_catalog *cat, bool needs_layout, bool quiet,
                             pp_resolved *out, pp_error *err);
void pp_resolved_free(pp_resolved *res); /* accepts NULL */

/* Parse flags (argv, or one string split at spaces by pp_request_parse_line) into r: only
 * the request's options; anything else is an error. For tests and tools that describe a run with
 * the options a user has. */
pp_status pp_request_parse(pp_request *r, int argc, char **argv, pp_error *err);
pp_status pp_request_parse_line(pp_request *r, const char *line, pp_error *err);

#endif
