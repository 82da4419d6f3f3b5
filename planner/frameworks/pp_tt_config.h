/* A torchtitan run's saved config (--torchtitan-config job_config.json, torchtitan_config.c): the
 * JSON Trainer.Config.to_dict writes when debug.save_config_file is set (torchtitan/trainer.py:201,
 * torchtitan main b5bcd76c), read as the facts parplan models. The request applies them under the
 * flags (a flag given beside it wins). A key the file leaves out has torchtitan's default
 * (torchtitan/config/configs.py). */
#ifndef PP_TT_CONFIG_H
#define PP_TT_CONFIG_H

#include "pp.h"

typedef enum { PP_TT_RESHARD_DEFAULT = 0, PP_TT_RESHARD_ALWAYS, PP_TT_RESHARD_NEVER } pp_tt_reshard;

typedef struct {
    char path[512];
    char name[64], flavor[64]; /* model_spec.name, model_spec.flavor; "" when absent */
    const char *catalog;       /* the catalog model of that name and flavor, or NULL */
    int64_t layers, dim, vocab; /* model_spec.model: len(layers), dim, vocab_size; 0 when absent */
    /* parallelism */
    int64_t shard;             /* data_parallel_shard_degree; -1: the rest of the GPUs */
    int64_t replicate, tp, pp, cp, ep;
    int reshard;               /* pp_tt_reshard (fsdp_reshard_after_forward) */
    bool sp;                   /* enable_sequence_parallel */
    int64_t vpp;               /* virtual stages per pipeline rank the schedule and split give */
    char *pipeline_layout;     /* the stage split as --pipeline-layout (malloc'd), or NULL */
    int64_t microbatches;      /* num_pp_microbatches */
    /* training */
    int64_t seq;               /* max_context_length */
    int64_t mb_tokens;         /* num_tokens_per_microbatch_per_dp_rank */
    int64_t step_tokens;       /* num_tokens_per_train_step; -1: torchtitan's default */
    int mb_line, mb_col, step_line, step_col; /* where those two are, for errors */
    bool offload;              /* enable_cpu_offload: FSDP2's CPUOffloadPolicy */
    bool param_bf16;           /* dtype bfloat16: sharded parameters, gradients and AdamW state in bf16 */
    /* the stack */
    int recompute;             /* pp_recompute; -1: not one parplan models (named in unmodelled) */
    bool compile, compile_loss, async_tp;
    int optimizer_impl;        /* pp_adam_impl; -1: not given or not modelled */
    int loss;                  /* --loss index (0 upcast); -1: not one parplan models */
    char unmodelled[1536];     /* what changes memory or time and is not modelled, ", "-separated */
    char unknown[768];         /* keys Trainer.Config does not define there */
} pp_tt_config;

/* PP_ERR_INPUT with file:line:col for wrong types and values; unknown keys are listed, not
 * refused. c is set up even on error: pp_tt_config_free it. */
pp_status pp_tt_config_load_string(pp_tt_config *c, const char *text, size_t len, const char *path, pp_error *err);
pp_status pp_tt_config_load_file(pp_tt_config *c, const char *path, pp_error *err);
void pp_tt_config_free(pp_tt_config *c); /* accepts NULL */

#endif
