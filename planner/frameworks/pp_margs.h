/* Megatron-LM arguments: one reader for every place parplan meets them (--megatron-args of check,
 * plan, estimate and launch; the logs of `parplan calibrate`).
 *
 * Three inputs give the same table of arguments, keyed by Megatron's argparse dest names
 * (num_layers, add_bias_linear, ...):
 *   - a Megatron-LM command line or launch script (pp_margs_parse_script): a small, safe reading of
 *     bash (no command is run): variables and arrays defined in the script (NAME=v, NAME=( ... ),
 *     NAME+=( ... ), export/declare/local), $VAR ${VAR} ${VAR:-default} "${ARR[@]}" and $((...))
 *     integer arithmetic, quotes, comments, line continuations, here-documents skipped. The
 *     arguments are the words after the first `*.py` word of a command (pretrain_gpt.py ...), or,
 *     with no such command, the commands that are bare --flag lists. The launcher's
 *     --nproc-per-node x --nnodes (torchrun, python -m torch.distributed.run) give the GPU count.
 *     Conditionals and loops are not evaluated: every assignment counts, in the order written.
 *   - the argument dump of a training log (pp_margs_parse_log): Megatron prints
 *     "---- arguments ----", then "  name ....... value" per argument, then "---- end of arguments
 *     ----" (megatron/training/arguments.py, _print_args); a log without one may record its command
 *     line as "# cmd ..." (tools/megatron/run_configs.py) or echo the pretrain_*.py line.
 * pp_margs_read turns the table into parplan's model, layout and training stack; what it cannot
 * model is named (pp_margs_config.unmodelled), never dropped: see the tables in megatron_args.c.
 *
 * The files: megatron_args.c (the table, flags to dest names, scripts), shell.c and shell_lex.c
 * (the reading of bash), megatron_log.c (logs, pp_margs_load), pylist.c (pp_margs_list_expr),
 * megatron_config.c (pp_margs_read). The table and its readers are declared in margs_table.h,
 * which the files that fill the table include instead of this header. */
#ifndef PP_MARGS_H
#define PP_MARGS_H

#include "margs_table.h"

/* Which layout and stack fields the arguments set (a script that leaves --tensor-model-parallel-
 * size out still sets tp = 1: Megatron's default). */
enum {
    PP_MARGS_HAS_WORLD = 1 << 0,  /* world size: the log's, or the launcher's GPU count */
    PP_MARGS_HAS_GPN = 1 << 1,    /* GPUs per node (torchrun --nproc-per-node) */
    PP_MARGS_HAS_DP = 1 << 2,     /* the log's data-parallel size */
};

#define PP_MARGS_MAX_UNMODELLED 1536

/* What the arguments say, in parplan's terms. */
typedef struct {
    pp_model model;
    pp_layout layout;            /* use pp_margs_config_layout(): the stage arrays below */
    bool uneven;                 /* stage_layers from --pipeline-model-parallel-layout or
                                    --decoder-first/last-pipeline-num-layers (no interleaving) */
    int stage_layers[PP_MAX_STAGES], stage_recompute[PP_MAX_STAGES];
    bool vsplit;                 /* vstage_layers: the same for an interleaved pipeline, and
                                    --account-for-embedding/loss-in-pipeline-split (pp_pipeline.h) */
    int vstage_layers[PP_MAX_VSTAGES];
    pp_stack stack;
    pp_framework framework;      /* megatron */
    pp_attention attention;      /* local implementation or --attention-backend unfused: unfused */
    int64_t gbs;                 /* --global-batch-size (Megatron's default: mbs x dp) */
    int64_t world_size, gpus_per_node, dp; /* 0 when the input does not say (has) */
    unsigned has;                /* PP_MARGS_HAS_* */
    /* The software facts the time model's options need beyond the stack (calibrate's runs):
     * Megatron's defaults when absent. */
    bool overlap_grad_reduce, overlap_param_gather, overlap_p2p_comm;
    bool grad_accum_fusion;      /* gradient_accumulation_fusion (fused wgrad into main_grad) */
    bool grad_reduce_fp32;       /* accumulate_allreduce_grads_in_fp32 (bf16: on) */
    char impl_name[32];          /* "local", "transformer_engine" */
    bool need_vocab;             /* no vocabulary in the input (a script with a real tokenizer): the
                                    caller supplies model.vocab, then validates the model */
    char overlap_note[320];      /* pp_margs_config_overlap: a partial overlap, or "" */
    /* Arguments that change memory or time and that parplan does not model, one line:
     * "--fp8-param-gather, --moe-layer-recompute, ..." ("" when none). */
    char unmodelled[PP_MARGS_MAX_UNMODELLED];
    int n_unmodelled;
} pp_margs_config;

/* Read the model, layout and stack (marks the entries it reads). PP_ERR_INPUT with file:line:col
 * for a missing shape argument, a malformed number, an unknown value (--normalization Foo) and
 * contradictory arguments (--fp16 --bf16). The layout is not validated against a GPU count
 * here (pp_layout_validate does that); the model is (pp_model_validate) unless need_vocab. */
pp_status pp_margs_read(pp_margs *a, pp_margs_config *c, pp_error *err);
/* The layout with its stage arrays attached (copy it; do not keep it past c). */
pp_layout pp_margs_config_layout(const pp_margs_config *c);
/* Set c->stack.no_overlap for the layout l (dp known): Megatron overlaps the gradient reduce and
 * the parameter gather only when asked, the interleaved schedule's send/recv unless told not to;
 * the stack's one switch is on when all that there is to overlap is. A partial overlap is named
 * in c->overlap_note. pp_margs_read calls it with the dp it knows (else assuming dp > 1). */
void pp_margs_config_overlap(pp_margs_config *c, const pp_layout *l);

#endif
