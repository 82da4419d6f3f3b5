/* launch --format megatron-bridge: one bash script that runs Megatron-Bridge's recipe runner
 * (scripts/training/run_recipe.py) on a library recipe of the model's family with Hydra-style
 * KEY=VALUE ConfigContainer overrides for everything parplan priced (pp_launch.h).
 *
 * Target: NVIDIA-NeMo/Megatron-Bridge main at commit 067f987df03b8355b03192d88d70f1709fedf51a
 * (2026-08-22), which pins Megatron-LM 2a75ac12c54ba6a42b34024756820bf819a2e25f (3rdparty/Megatron-LM).
 * run_recipe.py --recipe NAME --mode pretrain --dataset mock, then `KEY=VALUE` overrides applied by
 * recipe_runner.apply_cli_overrides (omegaconf_utils.process_config_with_overrides): keys are
 * ConfigContainer field paths (training/config.py ConfigContainer: model, train, ddp, optimizer,
 * dataset, tokenizer, mixed_precision), the model's being Megatron-Core TransformerConfig fields
 * through GPTModelProvider. tests/data/megatron_bridge/config_names.txt is those commits' table
 * (tests/frameworks/pyconfig_names.py extract); launch-megatron-bridge-config-names checks every
 * key, the recipe and the mixed-precision preset against it.
 *
 * The base recipes (recipes/llama/llama3.py and recipes/qwen/qwen3.py aliases) build their model
 * from a Hugging Face config (AutoBridge) with SwiGLU, RMSNorm and RoPE: the shape overrides make
 * it this model's. Not written (refused, with --format megatron as the way): MoE, multi-latent
 * attention, windowed attention, other activations and norms, uneven pipeline stages, ZeRO and
 * offload, Megatron's precision-aware optimizer dtypes (torch dtypes, not override strings). */
#include "launch_common.h"

#include <string.h>

#define BAD(...) pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, __VA_ARGS__)

static pp_status mb_check(const pp_launch_params *p, pp_error *err)
{
    const pp_work *w = p->work;
    const pp_model *m = &w->model;
    const pp_layout *l = p->layout;
    if (p->target != PP_TARGET_STANDARD)
        return BAD("--launch-target %s applies to the megatron, torchrun and slurm formats",
                   pp_launch_target_names[p->target]);
    if (w->framework != PP_FW_MEGATRON) return BAD("--format megatron-bridge trains with Megatron-Core: --framework megatron");
    if ((l->zero > 0 && !w->stack.megatron_fsdp) || l->offload != PP_OFF_NONE)
        return BAD("Megatron-Bridge shards the optimizer with --dist-opt or Megatron-FSDP (--megatron-fsdp): ZeRO-%d / "
                   "--offload %s are not written", l->zero, pp_offload_names[l->offload]);
    if (w->stack.fsdp_grads_fp32)
        return BAD("--fsdp-grads-fp32: Megatron-FSDP's main-gradient dtype is a torch dtype in the recipe "
                   "(ddp.megatron_fsdp_main_grads_dtype), not an override (use --format megatron)");
    if (m->experts > 1 || pp_model_is_mla(m) || m->window > 0 || m->mtp_layers > 0)
        return BAD("model %s: MoE, multi-latent attention, windowed attention and MTP are not written as overrides of a "
                   "dense recipe (use --format megatron)", m->name);
    if (m->act != PP_ACT_SWIGLU || m->norm != PP_NORM_RMSNORM || m->pos != PP_POS_ROPE || m->bias ||
        m->qkv_bias)
        return BAD("model %s is %s, %s, %s%s: the Llama 3 and Qwen3 recipes are SwiGLU, RMSNorm, RoPE, no bias "
                   "(use --format megatron)", m->name, pp_act_names[m->act], pp_norm_names[m->norm],
                   pp_pos_names[m->pos], m->bias || m->qkv_bias ? ", biased" : "");
    if (l->pp > 1 && (!pp_launch_stages_even(w, l) || pp_layout_vstages_uneven(w, l)))
        return BAD("uneven pipeline stages are not written as overrides (use --format megatron)");
    const pp_stack *st = &w->stack;
    if (st->main_params_dtype != PP_OPT_FP32 || st->exp_avg_dtype != PP_OPT_FP32 || st->exp_avg_sq_dtype != PP_OPT_FP32)
        return BAD("Megatron's precision-aware optimizer dtypes are torch dtypes in the recipe, not overrides "
                   "(use --format megatron)");
    if (pp_work_dist_fused_adam(w))
        return BAD("NeMo 1.x's distributed_fused_adam (--distributed-fused-adam, --optimizer-dtype bf16) is not "
                   "Megatron-Bridge's optimizer (use --format nemo)");
    if (pp_precision_fp8_params(w->stack.precision) && !pp_work_fp8_params(w))
        return BAD("--precision %s: Megatron-Bridge's preset %s gathers quantized parameters (training/mixed_precision.py "
                   "fp8_param_gather / fp4_param_gather): add --fp8-param-gather, or use --format megatron",
                   pp_precision_names[w->stack.precision],
                   w->stack.precision == PP_PREC_FP8     ? "bf16_with_fp8_delayed_scaling_mixed"
                   : w->stack.precision == PP_PREC_MXFP8 ? "bf16_with_mxfp8_mixed"
                                                         : "bf16_with_nvfp4_mixed");
    if (w->stack.tp_comm_overlap && !l->sp) return BAD("--tp-comm-overlap needs --sp");
    return pp_launch_cluster_check(w, err);
}

pp_status pp_launch_bridge(const pp_launch_params *p, pp_sbuf *b, pp_error *err)
{
    const pp_work *w = p->work;
    const pp_model *m = &w->model;
    const pp_layout *l = p->layout;
    const pp_stack *stk = &w->stack;
    pp_status st = mb_check(p, err);
    if (st != PP_OK) return st;
    bool qwen = m->qk_norm != PP_QKNORM_NONE, lora = pp_work_lora(w);
    /* LoRA: the family's PEFT recipe (recipes/llama/llama3.py, recipes/qwen/qwen3.py *_peft_config:
     * default_peft_config("lora"), SQuAD packed to the sequence length), run by run_recipe.py
     * --mode lora (load_recipe(..., peft_scheme="lora")) on a fine-tuning dataset */
    const char *recipe = lora ? (qwen ? "qwen3_8b_peft_config" : "llama3_8b_peft_config")
                              : (qwen ? "qwen3_8b_pretrain_config" : "llama3_8b_pretrain_config");
    char job[96];
    pp_launch_sanitize(m->name, job, sizeof job, true);

    char text[1024];
    pp_launch_sbatch(w, job, text, sizeof text);
    pp_sbuf_printf(b, "%s", text);
    pp_launch_header_write(b, "#", PP_LAUNCH_MEGATRON_BRIDGE, p);
    pp_sbuf_printf(b, "# Megatron-Bridge at commit 067f987d (2026-08-22; Megatron-LM 2a75ac12): its recipe runner on\n"
                      "# the %s recipe (%s), every field parplan priced given as a ConfigContainer override.\n"
                      "# Run it with bash on every node from a Megatron-Bridge checkout (BRIDGE_DIR), or submit it\n"
                      "# with sbatch (srun starts one torchrun per node).\n",
                   recipe, qwen ? "recipes/qwen/qwen3.py" : "recipes/llama/llama3.py");
    pp_sbuf_printf(b, "set -euo pipefail\n\nBRIDGE_DIR=${BRIDGE_DIR:-.}\n");
    const bool mfsdp = stk->megatron_fsdp && l->zero > 0;
    if (mfsdp) /* ConfigContainer._validate_and_apply_megatron_fsdp_v1_configs asserts it (training/config.py) */
        pp_sbuf_printf(b, "# Megatron-FSDP requires CUDA_DEVICE_MAX_CONNECTIONS unset or above 1.\n"
                          "unset CUDA_DEVICE_MAX_CONNECTIONS\n");
    int64_t steps = p->train_iters > 0 ? p->train_iters : 1000;

    pp_sbuf_printf(b, "OVERRIDES=(\n");
    /* the shape, over the recipe's Hugging Face model (TransformerConfig fields) */
    pp_sbuf_printf(b, "    model.num_layers=%lld\n    model.hidden_size=%lld\n    model.ffn_hidden_size=%lld\n",
                   (long long)m->layers, (long long)m->hidden, (long long)m->ffn);
    pp_sbuf_printf(b, "    model.num_attention_heads=%lld\n    model.num_query_groups=%lld\n",
                   (long long)m->heads, (long long)(m->kv_heads > 0 ? m->kv_heads : m->heads));
    pp_sbuf_printf(b, "    model.kv_channels=%lld\n",
                   (long long)(m->head_dim > 0 ? m->head_dim : m->hidden / m->heads));
    if (m->rope_theta > 0) pp_sbuf_printf(b, "    model.rotary_base=%.9g\n", m->rope_theta);
    pp_sbuf_printf(b, "    model.share_embeddings_and_output_weights=%s\n", m->tied ? "true" : "false");
    /* the recipes' NullTokenizer: its vocabulary is the model's (padded by Megatron as it pads) */
    pp_sbuf_printf(b, "    tokenizer.vocab_size=%lld\n", (long long)m->vocab);
    if (stk->vocab_divisible_by > 0 && stk->vocab_divisible_by != 128) /* gpt_provider.py make_vocab_size_divisible_by */
        pp_sbuf_printf(b, "    model.make_vocab_size_divisible_by=%lld\n", (long long)stk->vocab_divisible_by);
    pp_sbuf_printf(b, "    model.seq_length=%lld\n    dataset.seq_length=%lld\n", (long long)m->seq, (long long)m->seq);
    double attn_drop = 0, hidden_drop = 0;
    pp_work_dropout(w, &attn_drop, &hidden_drop);
    char pa[32], ph[32];
    pp_sbuf_printf(b, "    model.hidden_dropout=%s\n    model.attention_dropout=%s\n",
                   pp_launch_prob(hidden_drop, ph, sizeof ph), pp_launch_prob(attn_drop, pa, sizeof pa));
    /* the layout */
    pp_sbuf_printf(b, "    model.tensor_model_parallel_size=%lld\n    model.sequence_parallel=%s\n", (long long)l->tp,
                   l->sp ? "true" : "false");
    pp_sbuf_printf(b, "    model.pipeline_model_parallel_size=%lld\n", (long long)l->pp);
    if (l->vpp > 1) pp_sbuf_printf(b, "    model.virtual_pipeline_model_parallel_size=%lld\n", (long long)l->vpp);
    else pp_sbuf_printf(b, "    model.virtual_pipeline_model_parallel_size=null\n");
    pp_sbuf_printf(b, "    model.context_parallel_size=%lld\n", (long long)l->cp);
    pp_sbuf_printf(b, "    train.micro_batch_size=%lld\n    train.global_batch_size=%lld\n    train.train_iters=%lld\n",
                   (long long)l->mbs, (long long)w->gbs, (long long)steps);
    if (l->recompute == PP_RC_SELECTIVE) {
        pp_sbuf_printf(b, "    model.recompute_granularity=selective\n");
    } else if (l->recompute == PP_RC_FULL) {
        int64_t k = pp_launch_stage_recompute(w, l, 0);
        bool all = k == pp_layout_stage_layers(w, l, 0);
        pp_sbuf_printf(b, "    model.recompute_granularity=full\n    model.recompute_method=%s\n"
                          "    model.recompute_num_layers=%lld\n",
                       all ? "uniform" : "block", (long long)(all ? 1 : (k + l->vpp - 1) / l->vpp));
    } else {
        pp_sbuf_printf(b, "    model.recompute_granularity=null\n");
    }
    /* the stack: implementation, fusions, precision, optimizer sharding and overlap */
    pp_sbuf_printf(b, "    model.transformer_impl=%s\n", pp_work_impl(w) == PP_IMPL_TE ? "transformer_engine" : "local");
    if (stk->te_attention == PP_TEATTN_FLASH2) /* TransformerConfig.attention_backend (AttnBackend) */
        pp_sbuf_printf(b, "    model.attention_backend=flash\n");
    if (stk->act_unfused) pp_sbuf_printf(b, "    model.bias_activation_fusion=false\n");
    if (stk->ce_fusion != PP_CE_NONE)
        pp_sbuf_printf(b, "    model.cross_entropy_loss_fusion=true\n    model.cross_entropy_fusion_impl=%s\n",
                       pp_ce_fusion_names[stk->ce_fusion]);
    else pp_sbuf_printf(b, "    model.cross_entropy_loss_fusion=false\n");
    if (stk->tp_comm_overlap) pp_sbuf_printf(b, "    model.tp_comm_overlap=true\n");
    if (stk->cpu_offload_layers > 0) /* as its performance scripts set it (utils/overrides.py _set_recompute_overrides) */
        pp_sbuf_printf(b, "    model.cpu_offloading=true\n    model.cpu_offloading_weights=false\n"
                          "    model.cpu_offloading_num_layers=%lld\n", (long long)stk->cpu_offload_layers);
    const unsigned cg = pp_stack_cuda_graphs(stk);
    if (cg) { /* TransformerConfig cuda_graph_impl / cuda_graph_modules (transformer_config.py) */
        char parts[128];
        if (cg & (1u << PP_CG_FULL_ITERATION)) {
            /* ConfigContainer.validate refuses the NaN check under a full-iteration graph
             * (Megatron-Bridge 067f987d training/config.py:1508-1513) */
            pp_sbuf_printf(b, "    model.cuda_graph_impl=full_iteration\n"
                              "    rerun_state_machine.check_for_nan_in_loss=false\n");
        } else {
            pp_cuda_graphs_str(cg, ",", parts, sizeof parts);
            pp_sbuf_printf(b, "    model.cuda_graph_impl=transformer_engine\n    model.cuda_graph_modules=[%s]\n", parts);
        }
    }
    pp_sbuf_printf(b, "    mixed_precision=%s\n",
                   stk->precision == PP_PREC_FP8     ? "bf16_with_fp8_delayed_scaling_mixed"
                   : stk->precision == PP_PREC_MXFP8 ? "bf16_with_mxfp8_mixed"
                   : stk->precision == PP_PREC_NVFP4 ? "bf16_with_nvfp4_mixed"
                   : stk->precision == PP_PREC_FP16 ? "fp16_mixed"
                                                    : "bf16_mixed");
    const bool dopt = l->dist_opt || mfsdp; /* Megatron-FSDP runs on the distributed optimizer */
    pp_sbuf_printf(b, "    ddp.use_distributed_optimizer=%s\n    optimizer.use_distributed_optimizer=%s\n",
                   dopt ? "true" : "false", dopt ? "true" : "false");
    if (mfsdp) {
        /* as Megatron-Bridge's performance scripts turn it on (scripts/performance/utils/overrides.py
         * _set_megatron_fsdp_overrides: the strategy, no average_in_collective), without the fused
         * wgrad accumulation as its Llama 3 70B configs and parplan's model run it */
        static const char *const strategies[] = {"no_shard", "optim", "optim_grads", "optim_grads_params"};
        pp_sbuf_printf(b, "    ddp.use_megatron_fsdp=true\n    ddp.data_parallel_sharding_strategy=%s\n"
                          "    ddp.average_in_collective=false\n    model.gradient_accumulation_fusion=false\n",
                       strategies[l->zero]);
        if (stk->fsdp_double_buffer) pp_sbuf_printf(b, "    ddp.fsdp_double_buffer=true\n");
        if (stk->fsdp_unit_size > 0)
            pp_sbuf_printf(b, "    ddp.suggested_communication_unit_size=%lld\n", (long long)stk->fsdp_unit_size);
    }
    bool ov = l->dp > 1 && !stk->no_overlap;
    pp_sbuf_printf(b, "    ddp.overlap_grad_reduce=%s\n    ddp.overlap_param_gather=%s\n", ov ? "true" : "false",
                   ov && dopt ? "true" : "false");
    pp_sbuf_printf(b, "    ddp.grad_reduce_in_fp32=%s\n", stk->grad_bf16 ? "false" : "true");
    if (pp_work_precision_aware(w)) pp_sbuf_printf(b, "    optimizer.use_precision_aware_optimizer=true\n");
    if (lora) {
        /* peft/lora.py LoRA: dim (the rank) and target_modules (Megatron-Core's linear names) */
        static const char *const targets[PP_LORA_TARGETS_COUNT] = {
            [PP_LORA_ALL] = "[linear_qkv,linear_proj,linear_fc1,linear_fc2]",
            [PP_LORA_ATTN] = "[linear_qkv,linear_proj]",
            [PP_LORA_MLP] = "[linear_fc1,linear_fc2]",
            [PP_LORA_QKV] = "[linear_qkv]"};
        pp_sbuf_printf(b, "    peft.dim=%.0f\n    peft.target_modules=%s\n", pp_work_lora_rank(w),
                       targets[stk->lora_targets]);
    }
    pp_sbuf_printf(b, ")\n\n");

    pp_launch_rdzv(w, job, text, sizeof text);
    pp_sbuf_printf(b, "%s", text);
    pp_sbuf_printf(b, "${LAUNCHER[@]+\"${LAUNCHER[@]}\"} torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" \\\n"
                      "    --rdzv-id \"$RDZV_ID\" --rdzv-backend c10d --rdzv-endpoint \"$MASTER_ADDR:$MASTER_PORT\" \\\n"
                      "    \"$BRIDGE_DIR/scripts/training/run_recipe.py\" --recipe %s --mode %s --dataset %s \\\n"
                      "    \"${OVERRIDES[@]}\" \"$@\"\n",
                   recipe, lora ? "lora" : "pretrain", lora ? "squad" : "mock");
    return PP_OK;
}
