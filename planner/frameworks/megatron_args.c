/* The table of Megatron-LM arguments (see pp_margs.h): the key/value store every reader fills,
 * the documented table of what parplan reads, ignores and cannot model, and a command line's flags
 * turned into the table's dest names. The other readers: shell.c (the shell reading of a script),
 * megatron_log.c (training logs, and pp_margs_load), pylist.c (list expressions),
 * megatron_config.c (the arguments in parplan's terms).
 *
 * Sources: megatron/training/arguments.py (the dest= of flags, deprecated spellings);
 * megatron/training/argument_utils.py ArgumentGroupFactory: a dataclass bool that defaults to
 * True becomes --no-X / --disable-X with dest X. */
#include "megatron_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shell.h"

/* ------------------------------------------------------------------ the table of arguments */

void pp_margs_init(pp_margs *a, const char *path)
{
    memset(a, 0, sizeof *a);
    snprintf(a->path, sizeof a->path, "%s", path ? path : "");
}

void pp_margs_free(pp_margs *a)
{
    if (!a) return;
    for (int i = 0; i < a->n; i++) free(a->kv[i].value);
    free(a->kv);
    a->kv = NULL;
    a->n = a->cap = 0;
}

pp_margs_kv *pp_margs_kv_find(const pp_margs *a, const char *key)
{
    for (int i = 0; i < a->n; i++)
        if (!strcmp(a->kv[i].key, key)) return &a->kv[i];
    return NULL;
}

const char *pp_margs_get(const pp_margs *a, const char *key)
{
    const pp_margs_kv *k = pp_margs_kv_find(a, key);
    if (!k || !k->value || !k->value[0] || !strcmp(k->value, "None")) return NULL;
    return k->value;
}

pp_status pp_margs_kv_set(pp_margs *a, const char *key, const char *flag, const char *value, bool unresolved,
                          int line, int col, bool replace, pp_error *err)
{
    pp_margs_kv *k = pp_margs_kv_find(a, key);
    if (k && !replace) return PP_OK;
    char *v = strdup(value ? value : "");
    if (!v) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (!k) {
        if (a->n == a->cap) {
            int nc = a->cap ? 2 * a->cap : 64;
            pp_margs_kv *p = realloc(a->kv, (size_t)nc * sizeof *p);
            if (!p) {
                free(v);
                return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            }
            a->kv = p;
            a->cap = nc;
        }
        k = &a->kv[a->n++];
        memset(k, 0, sizeof *k);
        snprintf(k->key, sizeof k->key, "%s", key);
    } else {
        free(k->value);
    }
    snprintf(k->flag, sizeof k->flag, "%s", flag ? flag : key);
    k->value = v;
    k->unresolved = unresolved;
    k->line = line;
    k->col = col;
    return PP_OK;
}

pp_status pp_margs_add(pp_margs *a, const char *key, const char *value, int line, pp_error *err)
{
    return pp_margs_kv_set(a, key, key, value, false, line, 0, false, err);
}

/* ------------------------------------------------------------------ what parplan reads, ignores, cannot model */

typedef enum {
    K_READ,        /* read by pp_margs_read (the model, layout and stack) */
    K_IGNORE,      /* does not change memory or step time: logging, paths, data, schedule, seeds */
    K_UNMODELLED,  /* changes memory or time, not modelled: named unless it has its neutral value */
    K_FUSION,      /* a fused kernel TransformerEngine runs by default: named when off with TE */
} key_class;

typedef struct {
    const char *key;   /* a dest name; "prefix*" matches every key that starts with prefix */
    key_class cls;
    const char *neutral; /* K_UNMODELLED: the value(s) that change nothing, '|'-separated */
} key_def;

/* The documented table. A dump lists all ~850 arguments with their values: an argument in none
 * of these rows is named when its value is set (not None/False/0/[]); on a command line every
 * flag in none of these rows is named (parplan does not know what it does). */
static const key_def key_table[] = {
    /* ---- read: model */
    {"num_layers", K_READ, NULL}, {"hidden_size", K_READ, NULL}, {"num_attention_heads", K_READ, NULL},
    {"group_query_attention", K_READ, NULL}, {"num_query_groups", K_READ, NULL}, {"kv_channels", K_READ, NULL},
    {"ffn_hidden_size", K_READ, NULL}, {"vocab_size", K_READ, NULL}, {"padded_vocab_size", K_READ, NULL},
    {"seq_length", K_READ, NULL}, /* the activations' switches (--swiglu, ...): their rows in activation.c */
    {"normalization", K_READ, NULL}, {"position_embedding_type", K_READ, NULL},
    {"use_rotary_position_embeddings", K_READ, NULL}, {"add_position_embedding", K_READ, NULL},
    {"untie_embeddings_and_output_weights", K_READ, NULL}, {"add_bias_linear", K_READ, NULL},
    {"add_qkv_bias", K_READ, NULL}, {"qk_layernorm", K_READ, NULL}, {"num_experts", K_READ, NULL},
    {"moe_router_topk", K_READ, NULL}, {"moe_ffn_hidden_size", K_READ, NULL},
    {"moe_shared_expert_intermediate_size", K_READ, NULL}, {"moe_shared_expert_gate", K_READ, NULL},
    {"moe_router_enable_expert_bias", K_READ, NULL}, {"moe_layer_freq", K_READ, NULL},
    {"multi_latent_attention", K_READ, NULL}, {"q_lora_rank", K_READ, NULL}, {"kv_lora_rank", K_READ, NULL},
    {"qk_head_dim", K_READ, NULL}, {"qk_pos_emb_head_dim", K_READ, NULL}, {"v_head_dim", K_READ, NULL},
    {"mtp_num_layers", K_READ, NULL}, {"window_size", K_READ, NULL}, {"window_attn_skip_freq", K_READ, NULL},
    {"softmax_type", K_READ, NULL}, {"max_position_embeddings", K_READ, NULL}, {"layernorm_epsilon", K_READ, NULL},
    {"rotary_base", K_READ, NULL}, {"rope_type", K_READ, NULL}, {"use_rope_scaling", K_READ, NULL},
    {"rope_scaling_factor", K_READ, NULL}, {"rotary_seq_len_interpolation_factor", K_READ, NULL},
    {"rotary_scaling_factor", K_READ, NULL}, {"mscale", K_READ, NULL}, {"mscale_all_dim", K_READ, NULL},
    {"yarn_original_max_position_embeddings", K_READ, NULL}, {"yarn_beta_fast", K_READ, NULL},
    {"yarn_beta_slow", K_READ, NULL}, {"yarn_correction_range_round_to_int", K_READ, NULL},
    {"moe_router_score_function", K_READ, NULL}, {"moe_router_pre_softmax", K_READ, NULL},
    {"moe_router_topk_scaling_factor", K_READ, NULL}, {"moe_router_num_groups", K_READ, NULL},
    {"moe_router_group_topk", K_READ, NULL}, {"moe_router_load_balancing_type", K_READ, NULL},
    {"moe_aux_loss_coeff", K_READ, NULL}, {"moe_z_loss_coeff", K_READ, NULL},
    /* ---- read: layout and cluster */
    {"tensor_model_parallel_size", K_READ, NULL}, {"pipeline_model_parallel_size", K_READ, NULL},
    {"context_parallel_size", K_READ, NULL}, {"expert_model_parallel_size", K_READ, NULL},
    {"expert_tensor_parallel_size", K_READ, NULL}, {"micro_batch_size", K_READ, NULL},
    {"global_batch_size", K_READ, NULL}, {"num_virtual_stages_per_pipeline_rank", K_READ, NULL},
    {"virtual_pipeline_model_parallel_size", K_READ, NULL}, {"num_layers_per_virtual_pipeline_stage", K_READ, NULL},
    {"use_distributed_optimizer", K_READ, NULL}, {"sequence_parallel", K_READ, NULL},
    {"recompute_granularity", K_READ, NULL}, {"recompute_method", K_READ, NULL},
    {"recompute_num_layers", K_READ, NULL}, {"recompute_modules", K_READ, NULL},
    {"pipeline_model_parallel_layout", K_READ, NULL}, {"decoder_first_pipeline_num_layers", K_READ, NULL},
    {"decoder_last_pipeline_num_layers", K_READ, NULL}, {"world_size", K_READ, NULL}, {"gpus_per_node", K_READ, NULL},
    {"data_parallel_size", K_READ, NULL}, {"optimizer_cpu_offload", K_READ, NULL},
    {"tensor_parallel_num_weight_shards", K_READ, NULL}, {"expert_tensor_parallel_num_weight_shards", K_READ, NULL},
    {"optimizer_offload_fraction", K_READ, NULL},
    /* ---- read: the stack */
    {"bf16", K_READ, NULL}, {"fp16", K_READ, NULL}, {"fp8", K_READ, NULL}, {"attention_dropout", K_READ, NULL},
    {"hidden_dropout", K_READ, NULL}, {"transformer_impl", K_READ, NULL}, {"attention_backend", K_READ, NULL},
    {"overlap_grad_reduce", K_READ, NULL}, {"overlap_param_gather", K_READ, NULL},
    {"overlap_p2p_comm", K_READ, NULL}, {"tp_comm_overlap", K_READ, NULL},
    {"moe_token_dispatcher_type", K_READ, NULL}, {"moe_grouped_gemm", K_READ, NULL},
    {"moe_expert_capacity_factor", K_READ, NULL}, {"accumulate_allreduce_grads_in_fp32", K_READ, NULL},
    {"grad_reduce_in_bf16", K_READ, NULL}, {"expandable_segments", K_READ, NULL},
    {"bias_gelu_fusion", K_READ, NULL}, {"bias_swiglu_fusion", K_READ, NULL},
    {"cross_entropy_loss_fusion", K_READ, NULL}, {"cross_entropy_fusion_impl", K_READ, NULL},
    /* ---- fused kernels: TransformerEngine's defaults; the time model assumes them with TE */
    {"gradient_accumulation_fusion", K_FUSION, NULL},
    /* bias_dropout_fusion changes no saved tensor: the same peak with it on and off, dropout 0 and
     * 0.1 (tests/data/node4/h100: l1_def / l1_nobda, l1_do_def / l1_do_nobda) */
    {"bias_dropout_fusion", K_FUSION, NULL},
    {"masked_softmax_fusion", K_FUSION, NULL}, {"apply_rope_fusion", K_FUSION, NULL},
    /* ---- not modelled: they change memory or time */
    {"fp8_param_gather", K_READ, NULL}, {"fp4_param_gather", K_READ, NULL}, {"use_precision_aware_optimizer", K_READ, NULL},
    {"fp4", K_READ, NULL}, {"fp4_recipe", K_READ, NULL}, {"fp8_recipe", K_READ, NULL},
    {"first_last_layers_bf16", K_UNMODELLED, "False"}, {"fp32_residual_connection", K_UNMODELLED, "False"},
    {"main_grads_dtype", K_READ, NULL}, {"main_params_dtype", K_READ, NULL},
    {"exp_avg_dtype", K_READ, NULL}, {"exp_avg_sq_dtype", K_READ, NULL},
    {"optimizer", K_UNMODELLED, "adam|adamw"}, {"use_layer_wise_distributed_optimizer", K_UNMODELLED, "False"},
    {"num_distributed_optimizer_instances", K_UNMODELLED, "1"},
    {"overlap_param_gather_with_optimizer_step", K_UNMODELLED, "False"},
    {"ddp_bucket_size", K_UNMODELLED, "None"}, {"ddp_num_buckets", K_UNMODELLED, "None"},
    {"use_torch_fsdp2", K_UNMODELLED, "False"}, {"use_megatron_fsdp", K_READ, NULL},
    {"distribute_saved_activations", K_UNMODELLED, "False"}, {"cpu_offloading_num_layers", K_READ, NULL},
    {"fine_grained_activation_offloading", K_UNMODELLED, "False"}, {"offload_modules", K_UNMODELLED, "None"},
    {"moe_layer_recompute", K_UNMODELLED, "False"}, {"moe_shared_expert_overlap", K_UNMODELLED, "False"},
    {"overlap_moe_expert_parallel_comm", K_READ, NULL}, {"delay_wgrad_compute", K_UNMODELLED, "False"},
    {"moe_enable_deepep", K_READ, NULL}, {"moe_pad_expert_input_to_capacity", K_UNMODELLED, "False"},
    {"moe_latent_size", K_UNMODELLED, "None"}, {"moe_expert_rank_capacity_factor", K_UNMODELLED, "None"},
    {"cp_comm_type", K_UNMODELLED, "p2p|['p2p']"}, {"hierarchical_context_parallel_sizes", K_UNMODELLED, "None"},
    {"hybrid_context_parallel", K_UNMODELLED, "False"},
    {"account_for_embedding_in_pipeline_split", K_READ, NULL},
    {"account_for_loss_in_pipeline_split", K_READ, NULL},
    {"enable_cuda_graph", K_READ, NULL}, {"cuda_graph_impl", K_READ, NULL},
    {"external_cuda_graph", K_READ, NULL},
    /* torch.cuda.empty_cache() after the forward-backward (level 1) and after the optimizer step
     * (level 2), training.py train_step: the allocated peak, which parplan predicts, comes inside
     * the forward-backward and is the same; only the cached memory between steps shrinks (a few
     * cudaMallocs a step to grow it back). Megatron-LM's FP8 Llama 3 example sets level 1. */
    {"empty_unused_memory_level", K_IGNORE, NULL},
    {"deterministic_mode", K_UNMODELLED, "False"}, {"variable_seq_lengths", K_UNMODELLED, "False"},
    {"mlp_chunks_for_training", K_UNMODELLED, "1"}, {"make_vocab_size_divisible_by", K_READ, NULL},
    {"hybrid_override_pattern", K_UNMODELLED, "None"}, {"hybrid_layer_pattern", K_UNMODELLED, "None"},
    {"is_hybrid_model", K_UNMODELLED, "False"}, {"heterogeneous_layers_config_path", K_UNMODELLED, "None"},
    {"heterogeneous_layers_config_encoded_json", K_UNMODELLED, "None"},
    {"experimental_attention_variant", K_UNMODELLED, "None"}, {"linear_attention_freq", K_UNMODELLED, "None"},
    {"enable_mhc_connections", K_UNMODELLED, "False"}, {"attention_output_gate", K_UNMODELLED, "False"},
    {"qk_l2_norm", K_UNMODELLED, "False"}, {"spec", K_UNMODELLED, "None"}, {"yaml_cfg", K_UNMODELLED, "None"},
    {"use_checkpoint_args", K_UNMODELLED, "False"}, {"rampup_batch_size", K_UNMODELLED, "None"},
    {"gtp_weight_remat_size", K_UNMODELLED, "1"}, {"expert_gtp_weight_remat_size", K_UNMODELLED, "1"},
    /* ---- the launch script's environment ("env:NAME", env_families), TransformerEngine at
     * NVIDIA/TransformerEngine@d0067d0d. Read: PyTorch's allocator (expandable segments); TE's
     * attention backends (attention/dot_product_attention/utils.py get_attention_backend:
     * NVTE_FLASH_ATTN and NVTE_FUSED_ATTN both 0 leave TE's unfused attention, which keeps the
     * scores). Not modelled: deterministic fused attention (dot_product_attention.py: its own
     * backward kernels); FP8 attention's backward in FP8 (backends.py); NCCL's NVLink SHARP
     * buffers (the reserve parplan measured has none: its device scripts set NCCL_NVLS_ENABLE=0)
     * and the size of its staging buffers (4 MiB by default). Ignored: the allocator's bookkeeping
     * of tensors used by asynchronous collectives (TORCH_NCCL_AVOID_RECORD_STREAMS and its older
     * name: PyTorch stashes them whatever the value since 2.7, "TORCH_NCCL_AVOID_RECORD_STREAMS is
     * the default now, this environment variable is thus deprecated", ProcessGroupNCCL.cpp; the
     * variable is gone from PyTorch's code since pytorch/pytorch#194701, 2026-08), SM margins, QK layer scaling, the unfused backend's own switch, TE's v1 CPU
     * offload (offloading is named itself when on), debug and compile switches, userbuffers'
     * timeouts and multicast switch, NCCL's and NVSHMEM's transport, topology and logging
     * settings, CUDA's connection count. */
    {"env:PYTORCH_CUDA_ALLOC_CONF", K_READ, NULL}, {"env:PYTORCH_ALLOC_CONF", K_READ, NULL},
    {"env:NVTE_FLASH_ATTN", K_READ, NULL}, {"env:NVTE_FUSED_ATTN", K_READ, NULL},
    {"env:NVTE_ALLOW_NONDETERMINISTIC_ALGO", K_UNMODELLED, "1"}, {"env:NVTE_FP8_DPA_BWD", K_UNMODELLED, "1"},
    {"env:NCCL_NVLS_ENABLE", K_UNMODELLED, "0"}, {"env:NCCL_BUFFSIZE", K_UNMODELLED, "4194304"},
    {"env:TORCH_NCCL_AVOID_RECORD_STREAMS", K_IGNORE, NULL}, {"env:NCCL_AVOID_RECORD_STREAMS", K_IGNORE, NULL},
    {"env:NVTE_FWD_LAYERNORM_SM_MARGIN", K_IGNORE, NULL}, {"env:NVTE_BWD_LAYERNORM_SM_MARGIN", K_IGNORE, NULL},
    {"env:NVTE_INF_LAYERNORM_SM_MARGIN", K_IGNORE, NULL}, {"env:NVTE_APPLY_QK_LAYER_SCALING", K_IGNORE, NULL},
    {"env:NVTE_UNFUSED_ATTN", K_IGNORE, NULL}, {"env:NVTE_CPU_OFFLOAD_V1", K_IGNORE, NULL},
    {"env:NVTE_DEBUG*", K_IGNORE, NULL}, {"env:NVTE_TORCH_COMPILE", K_IGNORE, NULL},
    {"env:NVTE_NVTX_ENABLED", K_IGNORE, NULL}, {"env:UB_*", K_IGNORE, NULL}, {"env:NCCL_*", K_IGNORE, NULL},
    {"env:TORCH_NCCL_*", K_IGNORE, NULL}, {"env:TORCH_SYMM_MEM_*", K_IGNORE, NULL}, {"env:NVSHMEM_*", K_IGNORE, NULL},
    {"env:CUDA_DEVICE_MAX_CONNECTIONS", K_IGNORE, NULL},
    /* ---- ignored: no effect on memory or step time (or too small to model) */
    /* the model's definition beyond what parplan represents (pp.h) */
    {"rotary_percent", K_UNMODELLED, "1.0|1"}, {"rotary_interleaved", K_UNMODELLED, "False"},
    {"no_rope_freq", K_UNMODELLED, "None"},
    {"no_persist_layer_norm", K_IGNORE, NULL}, {"persist_layer_norm", K_IGNORE, NULL},
    {"params_dtype", K_IGNORE, NULL},
    {"mrope_section", K_IGNORE, NULL},
    {"layernorm_zero_centered_gamma", K_IGNORE, NULL}, {"apply_residual_connection_post_layernorm", K_IGNORE, NULL},
    {"attention_softmax_in_fp32", K_IGNORE, NULL}, {"apply_query_key_layer_scaling", K_IGNORE, NULL},
    {"use_flash_attn", K_IGNORE, NULL}, {"openai_gelu", K_IGNORE, NULL}, {"quick_geglu", K_IGNORE, NULL},
    {"init_method_std", K_IGNORE, NULL}, {"init_method_xavier_uniform", K_IGNORE, NULL},
    {"embedding_init_method_std", K_IGNORE, NULL}, {"perform_initialization", K_IGNORE, NULL},
    {"use_cpu_initialization", K_IGNORE, NULL}, {"init_model_with_meta_device", K_IGNORE, NULL},
    {"data_parallel_random_init", K_IGNORE, NULL}, {"use_mcore_models", K_IGNORE, NULL},
    {"deprecated_use_mcore_models", K_IGNORE, NULL}, {"use_legacy_models", K_IGNORE, NULL},
    {"async_tensor_model_parallel_allreduce", K_IGNORE, NULL}, {"gradient_reduce_div_fusion", K_IGNORE, NULL},
    {"ddp_average_in_collective", K_IGNORE, NULL}, {"ddp_pad_buckets_for_high_nccl_busbw", K_IGNORE, NULL},
    {"align_grad_reduce", K_IGNORE, NULL}, {"align_param_gather", K_IGNORE, NULL},
    {"overlap_p2p_comm_warmup_flush", K_IGNORE, NULL}, {"microbatch_group_size_per_vp_stage", K_IGNORE, NULL},
    {"transformer_pipeline_model_parallel_size", K_IGNORE, NULL}, {"encoder_num_layers", K_IGNORE, NULL},
    {"encoder_seq_length", K_IGNORE, NULL}, {"decoder_num_layers", K_IGNORE, NULL},
    {"decoder_seq_length", K_IGNORE, NULL}, {"create_attention_mask_in_dataloader", K_READ, NULL},
    {"clone_scatter_output_in_embedding", K_IGNORE, NULL}, {"calculate_per_token_loss", K_IGNORE, NULL},
    {"use_te_activation_func", K_IGNORE, NULL}, {"te_rng_tracker", K_IGNORE, NULL},
    {"moe_router_dtype", K_IGNORE, NULL}, {"moe_router_bias_update_rate", K_IGNORE, NULL},
    {"moe_router_force_load_balancing", K_IGNORE, NULL}, {"moe_router_fusion", K_IGNORE, NULL},
    {"moe_permute_fusion", K_IGNORE, NULL}, {"moe_token_drop_policy", K_IGNORE, NULL},
    /* --enable-experimental gates the fused MoE permutation beside --moe-permute-fusion
     * (token_dispatcher.py:651, 1415 is_experimental_enabled), a fused kernel priced as the other */
    {"enable_experimental", K_IGNORE, NULL},
    {"moe_input_jitter_eps", K_IGNORE, NULL}, {"moe_per_layer_logging", K_IGNORE, NULL},
    {"moe_router_padding_for_fp8", K_IGNORE, NULL}, {"moe_router_padding_for_quantization", K_IGNORE, NULL},
    {"moe_use_upcycling", K_IGNORE, NULL}, {"moe_upcycling_granularity", K_IGNORE, NULL},
    {"moe_apply_probs_on_input", K_IGNORE, NULL}, {"moe_use_legacy_grouped_gemm", K_IGNORE, NULL},
    {"moe_dispatch_fwd_dtype", K_IGNORE, NULL}, {"moe_combine_bwd_dtype", K_IGNORE, NULL},
    {"mtp_loss_scaling_factor", K_IGNORE, NULL}, {"use_tp_pp_dp_mapping", K_IGNORE, NULL},
    {"nccl_ub", K_READ, NULL}, {"use_sharp", K_IGNORE, NULL}, {"sharp_enabled_group", K_IGNORE, NULL},
    {"nccl_communicator_config_path", K_IGNORE, NULL}, {"high_priority_stream_groups", K_IGNORE, NULL},
    {"manual_gc", K_IGNORE, NULL}, {"manual_gc_interval", K_IGNORE, NULL}, {"manual_gc_eval", K_IGNORE, NULL},
    {"activation_offload_fraction", K_IGNORE, NULL}, {"data_parallel_sharding_strategy", K_READ, NULL},
    /* Megatron-FSDP: its double buffer (nccl_ub and the max pool turn it on), communication unit and
     * main gradients' dtype are read (memory.c), its gradient communication dtype where it is the
     * main gradients' (no buffer of its own); the rest of its memory options are named */
    {"fsdp_double_buffer", K_READ, NULL}, {"megatron_fsdp_max_pool_double_buffer", K_READ, NULL},
    {"suggested_communication_unit_size", K_READ, NULL}, {"megatron_fsdp_main_grads_dtype", K_READ, NULL},
    {"megatron_fsdp_main_params_dtype", K_UNMODELLED, "fp32|torch.float32"},
    {"megatron_fsdp_grad_comm_dtype", K_READ, NULL},
    {"fsdp_db_use_persist_buf_on_alloc_fail", K_UNMODELLED, "False"},
    {"keep_fp8_transpose_cache", K_UNMODELLED, "False"},
    {"megatron_fsdp_enable_fine_grained_param_gather", K_UNMODELLED, "False"},
    /* the NCCL registration of the buffers the double buffer holds: no bytes of its own */
    {"fsdp_manual_registration", K_IGNORE, NULL},
    {"outer_dp_sharding_strategy", K_IGNORE, NULL}, {"torch_fsdp2_reshard_after_forward", K_IGNORE, NULL},
    {"_is_global_batch_size_explicitly_specified", K_IGNORE, NULL}, {"rank", K_IGNORE, NULL},
    {"local_rank", K_IGNORE, NULL}, {"consumed_train_samples", K_IGNORE, NULL},
    {"consumed_valid_samples", K_IGNORE, NULL}, {"skipped_train_samples", K_IGNORE, NULL},
    {"iteration", K_IGNORE, NULL}, {"iter_per_epoch", K_IGNORE, NULL}, {"seed", K_IGNORE, NULL},
    {"clip_grad", K_IGNORE, NULL}, {"weight_decay", K_IGNORE, NULL}, {"start_weight_decay", K_IGNORE, NULL},
    {"end_weight_decay", K_IGNORE, NULL}, {"weight_decay_incr_style", K_IGNORE, NULL},
    {"hysteresis", K_IGNORE, NULL}, {"initial_loss_scale", K_IGNORE, NULL}, {"min_loss_scale", K_IGNORE, NULL},
    {"loss_scale", K_IGNORE, NULL}, {"loss_scale_window", K_IGNORE, NULL}, {"head_lr_mult", K_IGNORE, NULL},
    {"mock_data", K_IGNORE, NULL}, {"split", K_IGNORE, NULL}, {"merge_file", K_IGNORE, NULL},
    {"vocab_file", K_IGNORE, NULL}, {"vocab_extra_ids", K_IGNORE, NULL}, {"pad_vocab_size", K_IGNORE, NULL},
    {"no_load_optim", K_IGNORE, NULL}, {"no_load_rng", K_IGNORE, NULL}, {"no_save_optim", K_IGNORE, NULL},
    {"no_save_rng", K_IGNORE, NULL}, {"load", K_IGNORE, NULL}, {"pretrained_checkpoint", K_IGNORE, NULL},
    {"finetune", K_IGNORE, NULL}, {"auto_detect_ckpt_format", K_IGNORE, NULL}, {"use_dist_ckpt", K_IGNORE, NULL},
    {"train_iters", K_IGNORE, NULL}, {"train_samples", K_IGNORE, NULL}, {"num_workers", K_IGNORE, NULL},
    {"eod_mask_loss", K_IGNORE, NULL}, {"reset_position_ids", K_IGNORE, NULL},
    {"reset_attention_mask", K_IGNORE, NULL}, {"short_seq_prob", K_IGNORE, NULL},
    {"distributed_backend", K_IGNORE, NULL}, {"distributed_timeout_minutes", K_IGNORE, NULL},
    {"use_gloo_process_groups", K_IGNORE, NULL}, {"enable_one_logger", K_IGNORE, NULL},
    {"optimizer_cuda_graph", K_IGNORE, NULL}, {"cuda_graph_warmup_steps", K_IGNORE, NULL},
    {"cuda_graph_scope", K_READ, NULL}, {"cuda_graph_modules", K_READ, NULL},
    {"check_for_nan_in_loss_and_grad", K_IGNORE, NULL}, {"barrier_with_L1_time", K_IGNORE, NULL},
    {"use_mup", K_IGNORE, NULL}, {"num_layers_at_start_in_bf16", K_IGNORE, NULL},
    {"num_layers_at_end_in_bf16", K_IGNORE, NULL}, {"recompute_modules_deprecated", K_IGNORE, NULL},
    {"use_pytorch_profiler", K_IGNORE, NULL}, {"timing_log_level", K_IGNORE, NULL},
    {"timing_log_option", K_IGNORE, NULL}, {"decrease_batch_size_if_needed", K_IGNORE, NULL},
    {"use_tokenizer_model_from_checkpoint_args", K_IGNORE, NULL}, {"save_tokenizer_assets", K_IGNORE, NULL},
    {"strict_fsdp_dtensor_load", K_IGNORE, NULL}, {"mmap_bin_files", K_IGNORE, NULL},
    {"offset_sampling_seed_by_dp_rank", K_IGNORE, NULL}, {"pin_cpu_grads", K_IGNORE, NULL},
    {"pin_cpu_params", K_IGNORE, NULL}, {"use_mamba_mem_eff_path", K_IGNORE, NULL},
    {"use_layer_wise_param_layout", K_IGNORE, NULL}, {"megatron_fsdp_version", K_IGNORE, NULL},
    {"kv_channels_deprecated", K_IGNORE, NULL}, {"qk_clip", K_IGNORE, NULL},
    {"tp_comm_overlap_cfg", K_IGNORE, NULL}, {"tp_comm_bootstrap_backend", K_IGNORE, NULL},
    {"replication_factor", K_IGNORE, NULL}, {"max_tokens_to_oom", K_IGNORE, NULL},
    {"memory_snapshot_path", K_IGNORE, NULL}, {"mid_level_dataset_surplus", K_IGNORE, NULL},
    {"classes_fraction", K_IGNORE, NULL}, {"data_per_class_fraction", K_IGNORE, NULL},
    {"dataloader_type", K_IGNORE, NULL}, {"sample_rate", K_IGNORE, NULL}, {"patch_dim", K_IGNORE, NULL},
    {"num_channels", K_IGNORE, NULL}, {"num_classes", K_IGNORE, NULL}, {"mask_factor", K_IGNORE, NULL},
    {"mask_prob", K_IGNORE, NULL}, {"mask_type", K_IGNORE, NULL}, {"query_in_block_prob", K_IGNORE, NULL},
    {"relative_attention_num_buckets", K_IGNORE, NULL}, {"relative_attention_max_distance", K_IGNORE, NULL},
    {"mlp_chunks_for_prefill", K_IGNORE, NULL}, {"min_offloaded_tensor_size", K_IGNORE, NULL},
    {"refit_method", K_IGNORE, NULL}, {"num_dataset_builder_threads", K_IGNORE, NULL}, {"sgd_momentum", K_IGNORE, NULL}, {"swin_backbone_type", K_IGNORE, NULL},
    {"exit_signal", K_IGNORE, NULL}, {"exit_interval", K_IGNORE, NULL}, {"exit_duration_in_mins", K_IGNORE, NULL},
    {"exit_signal_handler", K_IGNORE, NULL}, {"exit_on_missing_checkpoint", K_IGNORE, NULL},
    {"profile", K_IGNORE, NULL}, {"profile_ranks", K_IGNORE, NULL}, {"record_memory_history", K_IGNORE, NULL},
    {"record_shapes", K_IGNORE, NULL}, {"fp8_margin", K_IGNORE, NULL},
    {"fp8_interval", K_IGNORE, NULL}, {"fp8_amax_history_len", K_IGNORE, NULL},
    {"fp8_amax_compute_algo", K_IGNORE, NULL}, {"fp8_wgrad", K_IGNORE, NULL},
    {"fp16_lm_cross_entropy", K_IGNORE, NULL}, {"logit_dtype", K_IGNORE, NULL},
    {"moe_flex_dispatcher_backend", K_READ, NULL}, {"moe_hybridep_num_sms_preprocessing", K_IGNORE, NULL},
    {"mtp_detach_heads", K_IGNORE, NULL}, {"mtp_standalone", K_IGNORE, NULL},
    /* prefixes: families of arguments about logging, checkpoints, data, tokenizers, inference,
     * other models' options, fault tolerance and profiling */
    {"log_*", K_IGNORE, NULL}, {"logging_level", K_IGNORE, NULL}, {"tensorboard*", K_IGNORE, NULL},
    {"wandb_*", K_IGNORE, NULL},
    {"save*", K_IGNORE, NULL}, {"ckpt_*", K_IGNORE, NULL}, {"dist_ckpt*", K_IGNORE, NULL},
    {"non_persistent_*", K_IGNORE, NULL}, {"async_*", K_IGNORE, NULL}, {"data_*", K_IGNORE, NULL},
    {"train_data_path", K_IGNORE, NULL}, {"valid_data_path", K_IGNORE, NULL}, {"test_data_path", K_IGNORE, NULL},
    {"per_split_data_args_path", K_IGNORE, NULL}, {"dataloader_*", K_IGNORE, NULL},
    {"tokenizer_*", K_IGNORE, NULL}, {"null_tokenizer_*", K_IGNORE, NULL}, {"tiktoken_*", K_IGNORE, NULL},
    {"eval_*", K_IGNORE, NULL}, {"lr*", K_IGNORE, NULL}, {"min_lr", K_IGNORE, NULL}, {"decoupled_*", K_IGNORE, NULL},
    {"override_opt_param_scheduler", K_IGNORE, NULL}, {"use_checkpoint_opt_param_scheduler", K_IGNORE, NULL},
    {"adam_*", K_IGNORE, NULL}, {"lion_*", K_IGNORE, NULL}, {"muon_*", K_IGNORE, NULL}, {"mup_*", K_IGNORE, NULL},
    {"adlr_*", K_IGNORE, NULL}, {"app_tag_*", K_IGNORE, NULL}, {"one_logger*", K_IGNORE, NULL},
    {"straggler_*", K_IGNORE, NULL}, {"rerun_*", K_IGNORE, NULL}, {"fault_injector_*", K_IGNORE, NULL},
    {"error_injection_*", K_IGNORE, NULL}, {"inprocess_*", K_IGNORE, NULL}, {"ft_*", K_IGNORE, NULL},
    {"enable_ft_package", K_IGNORE, NULL}, {"calc_ft_timeouts", K_IGNORE, NULL}, {"flight_recorder_*", K_IGNORE, NULL},
    {"profile_*", K_IGNORE, NULL}, {"pytorch_profiler_*", K_IGNORE, NULL}, {"nvtx_ranges", K_IGNORE, NULL},
    {"inference_*", K_IGNORE, NULL}, {"rl_*", K_IGNORE, NULL}, {"grpo_*", K_IGNORE, NULL}, {"langrl_*", K_IGNORE, NULL},
    {"dino_*", K_IGNORE, NULL}, {"fim_*", K_IGNORE, NULL}, {"bert_*", K_IGNORE, NULL}, {"biencoder_*", K_IGNORE, NULL},
    {"ict_*", K_IGNORE, NULL}, {"retriever_*", K_IGNORE, NULL}, {"vision_*", K_IGNORE, NULL}, {"img_*", K_IGNORE, NULL},
    {"titles_data_path", K_IGNORE, NULL}, {"evidence_data_path", K_IGNORE, NULL}, {"block_data_path", K_IGNORE, NULL},
    {"indexer_*", K_IGNORE, NULL}, {"embedding_path", K_IGNORE, NULL}, {"output_bert_embeddings", K_IGNORE, NULL},
    {"mamba_*", K_IGNORE, NULL}, {"linear_key_*", K_IGNORE, NULL}, {"linear_value_*", K_IGNORE, NULL},
    {"linear_num_*", K_IGNORE, NULL}, {"linear_conv_*", K_IGNORE, NULL}, {"gdp_*", K_IGNORE, NULL},
    {"dsa_*", K_IGNORE, NULL}, {"mhc_*", K_IGNORE, NULL}, {"kitchen_*", K_IGNORE, NULL}, {"batch_invariant*", K_IGNORE, NULL},
    {"logits_*", K_IGNORE, NULL}, {"megatron_fsdp_*", K_IGNORE, NULL}, {"moe_paged_stash*", K_IGNORE, NULL},
    {"moe_hybridep_*", K_IGNORE, NULL}, {"moe_routing_trace_*", K_IGNORE, NULL}, {"qk_clip_*", K_IGNORE, NULL},
    {"yarn_*", K_IGNORE, NULL}, {"tp_comm_bulk_*", K_IGNORE, NULL}, {"tp_comm_overlap_ag", K_IGNORE, NULL},
    {"tp_comm_overlap_rs*", K_IGNORE, NULL}, {"tp_comm_split_*", K_IGNORE, NULL}, {"sft*", K_IGNORE, NULL},
    {"trust_remote_code", K_IGNORE, NULL}, {"use_one_sent_docs", K_IGNORE, NULL}, {"special_tokens", K_IGNORE, NULL},
    {"metadata_path", K_IGNORE, NULL}, {"object_storage_cache_path", K_IGNORE, NULL}, {"otel_*", K_IGNORE, NULL},
    {"config_logger_dir", K_IGNORE, NULL}, {"test_mode", K_IGNORE, NULL}, {"full_validation", K_IGNORE, NULL},
    {"multiple_validation_sets", K_IGNORE, NULL}, {"validation_set_names", K_IGNORE, NULL},
    {"phase_transition_iterations", K_IGNORE, NULL}, {"skip_train", K_IGNORE, NULL},
    {"iterations_to_skip", K_IGNORE, NULL},
};
#define N_KEY_TABLE (sizeof key_table / sizeof key_table[0])

/* An activation's Megatron switch ("--squared-relu", pp_activations) is argument dest (squared_relu):
 * the reader reads each row's (megatron_config.c), so the rows are the table's for them. */
static bool act_switch_is(const char *sw, const char *dest)
{
    if (!sw || strncmp(sw, "--", 2) || !sw[2]) return false;
    for (sw += 2; *sw && *dest; sw++, dest++)
        if (*dest != (*sw == '-' ? '_' : *sw)) return false;
    return !*sw && !*dest;
}

static const key_def act_read = {"", K_READ, NULL};

/* The activations with a Megatron switch, in row order: the n-th's index, or -1. */
static int act_with_switch(int n)
{
    for (int a = 0; a < PP_ACT_COUNT; a++) {
        const char *sw = pp_activations[a].megatron;
        if (sw && sw[0] && n-- == 0) return a;
    }
    return -1;
}

int pp_margs_table_n(void)
{
    int n = 0;
    while (act_with_switch(n) >= 0) n++;
    return (int)N_KEY_TABLE + n;
}

void pp_margs_table_row(int i, const char **key, const char **cls, const char **neutral)
{
    static const char *const names[] = {"read", "ignored", "not modelled", "fused kernel"};
    int a = i >= (int)N_KEY_TABLE ? act_with_switch(i - (int)N_KEY_TABLE) : -1;
    if (a >= 0) {
        *key = pp_activations[a].megatron + 2, *cls = names[K_READ], *neutral = NULL;
        return;
    }
    const key_def *d = &key_table[i >= 0 && i < (int)N_KEY_TABLE ? i : 0];
    *key = d->key;
    *cls = names[d->cls];
    *neutral = d->neutral;
}

static const key_def *key_lookup(const char *key)
{
    for (int a = 0; a < PP_ACT_COUNT; a++)
        if (act_switch_is(pp_activations[a].megatron, key)) return &act_read;
    for (size_t i = 0; i < N_KEY_TABLE; i++)
        if (!strchr(key_table[i].key, '*') && !strcmp(key_table[i].key, key)) return &key_table[i];
    for (size_t i = 0; i < N_KEY_TABLE; i++) {
        const char *star = strchr(key_table[i].key, '*');
        if (star && !strncmp(key, key_table[i].key, (size_t)(star - key_table[i].key))) return &key_table[i];
    }
    return NULL;
}

static bool key_known(const char *key)
{
    const key_def *d = key_lookup(key);
    return d && !strchr(d->key, '*');
}

/* The entry's value reads as "unset": None, False, 0, empty. */
static bool value_off(const char *v)
{
    return !v || !v[0] || !strcmp(v, "None") || !strcmp(v, "False") || !strcmp(v, "0") || !strcmp(v, "0.0") ||
           !strcmp(v, "[]") || !strcmp(v, "()") || !strcmp(v, "{}") || !strcmp(v, "''");
}

static bool value_neutral(const char *v, const char *neutral)
{
    if (!neutral) return value_off(v);
    const char *p = neutral;
    while (*p) {
        const char *e = strchr(p, '|');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (strlen(v ? v : "None") == l && !strncmp(v ? v : "None", p, l)) return true;
        if (!e) break;
        p = e + 1;
    }
    return !strcmp(neutral, "None") && value_off(v);
}

bool pp_margs_kv_unmodelled(const pp_margs *a, const pp_margs_kv *k, bool te, bool *fusion)
{
    const key_def *d = key_lookup(k->key);
    *fusion = d && d->cls == K_FUSION;
    if (k->used && !*fusion) return false;
    bool show = false;
    if (!d) show = a->source == PP_MARGS_DUMP ? !value_off(k->value) : true;
    else if (d->cls == K_UNMODELLED) show = !value_neutral(k->value, d->neutral);
    else if (d->cls == K_FUSION) show = te && !strcmp(k->value ? k->value : "", "False");
    /* Megatron-FSDP runs without the fused weight-gradient accumulation (arguments.py warns it is
     * unverified there; Megatron-Bridge's configs turn it off "to avoid functional errors",
     * llama3_llm_pretrain.py), as parplan models and writes it */
    const char *mf = pp_margs_get(a, "use_megatron_fsdp");
    if (show && !strcmp(k->key, "gradient_accumulation_fusion") && mf && strcmp(mf, "False")) show = false;
    return show;
}

/* ------------------------------------------------------------------ flags to dest names */

/* Flags whose dest is not their name (arguments.py dest=, deprecated spellings). value: the
 * stored value, NULL to keep the one given. */
static const struct { const char *flag, *key, *value; } flag_alias[] = {
    {"--disable-bias-linear", "add_bias_linear", "False"},
    {"--no-overlap-p2p-communication", "overlap_p2p_comm", "False"},
    {"--no-rope-fusion", "apply_rope_fusion", "False"},
    {"--no-position-embedding", "add_position_embedding", "False"},
    {"--no-async-tensor-model-parallel-allreduce", "async_tensor_model_parallel_allreduce", "False"},
    {"--use-nccl-ub", "nccl_ub", NULL},
    {"--fp8-format", "fp8", NULL},
    {"--fp4-format", "fp4", NULL},
    {"--norm-epsilon", "layernorm_epsilon", NULL},
    {"--output-logit-dtype", "logit_dtype", NULL},
    {"--apply-layernorm-1p", "layernorm_zero_centered_gamma", "True"},
    {"--recompute-activations", "recompute_granularity", "selective"},
    {"--checkpoint-activations", "recompute_granularity", "full"},
    {"--model-parallel-size", "tensor_model_parallel_size", NULL},
    {"--microbatch-group-size-per-virtual-pipeline-stage", "microbatch_group_size_per_vp_stage", NULL},
    {"--virtual-pipeline-model-parallel-size", "virtual_pipeline_model_parallel_size", NULL},
};

/* "--num-layers" -> "num_layers"; "--no-X" / "--disable-X" -> X = False when X is a dest parplan
 * knows (ArgumentGroupFactory's store_false flags), else no_X = True. */
static void flag_dest(const char *flag, char *key, size_t kn, const char **value)
{
    for (size_t i = 0; i < sizeof flag_alias / sizeof flag_alias[0]; i++)
        if (!strcmp(flag, flag_alias[i].flag)) {
            snprintf(key, kn, "%s", flag_alias[i].key);
            if (flag_alias[i].value) *value = flag_alias[i].value;
            return;
        }
    size_t k = 0;
    for (const char *p = flag + 2; *p && k + 1 < kn; p++) key[k++] = *p == '-' ? '_' : *p;
    key[k] = 0;
    const char *rest = !strncmp(key, "no_", 3) ? key + 3 : !strncmp(key, "disable_", 8) ? key + 8 : NULL;
    if (rest && !key_known(key) && key_known(rest) && !strcmp(*value, "True")) {
        memmove(key, rest, strlen(rest) + 1);
        *value = "False";
    }
}

/* The words after pretrain_*.py into the table: --flag value..., --flag=value, switches. */
static pp_status args_to_table(pp_margs *a, const pp_sh_words *w, pp_error *err)
{
    for (int i = 0; i < w->n;) {
        const pp_sh_word *f = &w->w[i];
        if (strncmp(f->s, "--", 2) || !f->s[2]) {
            i++; /* a stray word before any flag: argparse would refuse it; nothing to read */
            continue;
        }
        char flag[96];
        const char *eq = strchr(f->s, '=');
        size_t fl = eq ? (size_t)(eq - f->s) : strlen(f->s);
        if (fl >= sizeof flag)
            return pp_error_set(err, PP_ERR_INPUT, a->path, f->line, f->col, "a flag of more than 95 characters: '%.40s...'",
                                f->s);
        memcpy(flag, f->s, fl);
        flag[fl] = 0;
        /* the value: after '=', or the next words up to the next flag (nargs='+' options) */
        char *val = NULL;
        size_t vn = 0;
        bool unres = eq ? f->unresolved : false;
        int j = i + 1;
        if (eq) {
            val = strdup(eq + 1);
            vn = val ? strlen(val) : 0;
        } else {
            for (; j < w->n && (strncmp(w->w[j].s, "--", 2) || !w->w[j].s[2]); j++) {
                size_t l = strlen(w->w[j].s);
                char *p = realloc(val, vn + l + 2);
                if (!p) {
                    free(val);
                    return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
                }
                val = p;
                if (vn) val[vn++] = ' ';
                memcpy(val + vn, w->w[j].s, l + 1);
                vn += l;
                unres |= w->w[j].unresolved;
            }
        }
        if (eq && !val) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        const char *v = val ? val : "True";
        char key[96];
        flag_dest(flag, key, sizeof key, &v);
        /* argparse: the last occurrence of a flag wins */
        pp_status st = pp_margs_kv_set(a, key, flag, v, unres, f->line, f->col, true, err);
        free(val);
        if (st) return st;
        i = eq ? i + 1 : j;
    }
    return PP_OK;
}

/* The environment families a launch script's variables are taken from ("env:NAME" in the table;
 * the script's other variables are its own: paths, ports, argument arrays). */
static const char *const env_families[] = {
    "NVTE_", "UB_", "NCCL_", "TORCH_NCCL_", "TORCH_SYMM_MEM_", "NVSHMEM_",
    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "CUDA_DEVICE_MAX_CONNECTIONS",
};

/* One "NAME=value" of the script's environment: "env:NAME" when NAME is of a family above; PyTorch's
 * allocator configuration with expandable_segments:True also as the stack's expandable_segments. */
static pp_status env_add(pp_margs *a, const pp_sh_word *v, pp_error *err)
{
    const char *eq = strchr(v->s, '=');
    size_t k = eq ? (size_t)(eq - v->s) : 0;
    bool known = false;
    for (size_t i = 0; i < sizeof env_families / sizeof env_families[0] && k; i++) {
        size_t n = strlen(env_families[i]);
        known |= env_families[i][n - 1] == '_' ? k > n && !strncmp(v->s, env_families[i], n)
                                                : k == n && !strncmp(v->s, env_families[i], n);
    }
    if (!known) return PP_OK;
    char key[96], name[90];
    if (k >= sizeof name) return PP_OK; /* no setting parplan knows has a name this long */
    snprintf(name, sizeof name, "%.*s", (int)k, v->s);
    snprintf(key, sizeof key, "env:%s", name);
    pp_status st = pp_margs_kv_set(a, key, name, eq + 1, v->unresolved, v->line, v->col, true, err);
    if (st == PP_OK && (!strcmp(name, "PYTORCH_CUDA_ALLOC_CONF") || !strcmp(name, "PYTORCH_ALLOC_CONF")) &&
        (strstr(eq + 1, "expandable_segments:True") || strstr(eq + 1, "expandable_segments:true")))
        st = pp_margs_kv_set(a, "expandable_segments", name, "true", false, v->line, v->col, false, err);
    return st;
}

/* A script (or one command line) at line offset line0 of the file. */
pp_status pp_margs_parse_script_at(pp_margs *a, const char *text, size_t len, int line0, pp_error *err)
{
    pp_sh_command c;
    pp_status st = pp_sh_command_find(text, len, line0, a->path, &c, err);
    if (st == PP_OK && c.score > 0) {
        /* Keys already in the table (a dump read first) win: read into a scratch table. */
        pp_margs t;
        pp_margs_init(&t, a->path);
        st = args_to_table(&t, &c.args, err);
        for (int i = 0; st == PP_OK && i < t.n; i++) {
            pp_margs_kv *k = &t.kv[i];
            st = pp_margs_kv_set(a, k->key, k->flag, k->value, k->unresolved, k->line, k->col, false, err);
        }
        pp_margs_free(&t);
        if (st == PP_OK && c.nproc > 0) {
            char v[32];
            snprintf(v, sizeof v, "%lld", (long long)(c.nproc * (c.nnodes > 0 ? c.nnodes : 1)));
            st = pp_margs_kv_set(a, "world_size", "--nproc-per-node x --nnodes", v, false, c.line, 0, false, err);
            snprintf(v, sizeof v, "%lld", (long long)c.nproc);
            if (st == PP_OK) st = pp_margs_kv_set(a, "gpus_per_node", "--nproc-per-node", v, false, c.line, 0, false, err);
        }
        for (int i = 0; st == PP_OK && i < c.env.n; i++) st = env_add(a, &c.env.w[i], err);
        if (st == PP_OK && a->source == PP_MARGS_NONE) {
            a->source = PP_MARGS_SCRIPT;
            a->line = c.line;
            snprintf(a->program, sizeof a->program, "%s", c.program);
        }
    }
    pp_sh_command_free(&c);
    return st;
}

pp_status pp_margs_parse_script(pp_margs *a, const char *text, size_t len, pp_error *err)
{
    return pp_margs_parse_script_at(a, text, len, 1, err);
}
