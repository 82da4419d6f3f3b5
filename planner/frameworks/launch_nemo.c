/* launch --format nemo, the legacy format: NeMo 1.x (Megatron GPT) YAML overrides, trainer.* and
 * model.* (pp_launch.h). The keys are those NeMo v1.23.0 (the last 1.x release) accepts: its
 * examples/nlp/language_modeling/conf YAML files, the model keys megatron_gpt_model.py reads, and the
 * TransformerConfig fields of the Megatron-Core it pins (0.5.0, requirements_nlp.txt), which
 * build_transformer_config copies from the model config (tests/data/nemo/nemo1_gpt_keys.txt,
 * tests/frameworks/nemo1_keys.py; test launch-nemo-keys). What Megatron-Core 0.5.0 has no field
 * for is refused (MLA, MTP, QK norm, per-layer windows and MoE layers, shared experts, expert
 * sizes or TP of their own, the all-to-all dispatcher, capacity factors, fused cross-entropy).
 * NVIDIA's current stack, NeMo 2's successor Megatron-Bridge, is --format megatron-bridge
 * (launch_bridge.c). */
#include "launch_common.h"

#define BAD(...) pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, __VA_ARGS__)

pp_status pp_launch_nemo(const pp_launch_params *p, pp_sbuf *b, pp_error *err)
{
    const pp_work *w = p->work;
    const pp_model *m = &w->model;
    const pp_layout *l = p->layout;
    if (l->zero > 0)
        return BAD("NeMo's Megatron GPT shards the optimizer with --dist-opt (distributed_fused_adam), "
                   "not ZeRO-%d", l->zero);
    if (l->offload != PP_OFF_NONE)
        return BAD("--offload %s: NeMo's Megatron GPT config has no offload setting",
                   pp_offload_names[l->offload]);
    const pp_stack *stk = &w->stack;
    if (!pp_activations[m->act].nemo) return BAD("NeMo's model config has no %s MLP: model %s", pp_act_names[m->act], m->name);
    if (stk->tp_comm_overlap && !l->sp) return BAD("--tp-comm-overlap needs --sp");
    if (stk->cpu_offload_layers > 0)
        return BAD("--cpu-offload-layers: this NeMo 1.x config does not write CPU offloading (use --format megatron "
                   "or megatron-bridge)");
    if (pp_stack_cuda_graphs(stk))
        return BAD("--cuda-graphs: this NeMo 1.x config does not write CUDA graphs (use --format megatron)");
    /* not written: the NeMo 1.x keys for these are not checked against its config here */
    if (pp_work_fp8_params(w))
        return BAD("--fp8-param-gather: this NeMo 1.x config does not write FP8 parameters (use --format megatron)");
    if (pp_work_precision_aware(w))
        return BAD("Megatron's precision-aware optimizer (--precision-aware-optimizer, --main-params-dtype, "
                   "--exp-avg-dtype, --exp-avg-sq-dtype): NeMo 1.x's distributed_fused_adam has one dtype "
                   "(--optimizer-dtype bf16); use --format megatron");
    if (l->pp > 1 && !pp_launch_stages_even(w, l))
        return BAD("NeMo's config splits layers evenly over the %lld pipeline stages: uneven stages "
                   "(%s) cannot be written (use --format megatron)",
                   (long long)l->pp, l->stage_layers ? "from the ILP" : l->vstage_layers ? "as given"
                                                                     : "layers not divisible by --pp");
    /* NeMo 1.x asserts that each stage's layers divide over its model chunks
     * (megatron_base_model.py: "Make sure the number of model chunks is the same across all
     * pipeline stages") and its config has no layout string. */
    if (l->pp > 1 && pp_layout_vstages_uneven(w, l))
        return BAD("NeMo's config splits each pipeline stage's layers evenly over its %lld model chunks: the uneven "
                   "virtual stages (%s) cannot be written (use --format megatron)",
                   (long long)l->vpp, l->vstage_layers ? "as given" : "pp x vpp does not divide the layers");
    /* Megatron-Core 0.5.0 (NeMo 1.23's) has no field for these */
    const char *no = NULL;
    if (pp_model_is_mla(m)) no = "multi-latent attention";
    else if (m->mtp_layers > 0) no = "MTP layers";
    else if (m->qk_norm != PP_QKNORM_NONE) no = "QK norm";
    else if (m->window > 0 && m->window_full_every > 0) no = "windowed and full-attention layers mixed";
    else if (stk->ce_fusion != PP_CE_NONE) no = "a fused cross-entropy";
    if (!no && m->experts > 1) {
        bool all = true;
        for (int64_t i = 0; i < m->layers; i++) all &= pp_model_layer_is_moe(m, i);
        if (!all) no = "dense and MoE layers mixed";
        else if (m->shared_ffn > 0 || m->shared_gate) no = "shared experts";
        else if (m->router_bias) no = "an expert-bias router";
        else if (pp_model_expert_ffn(m) != m->ffn) no = "an expert FFN size of its own";
        else if (pp_layout_etp(l) != l->tp) no = "an expert TP other than the TP";
        else if (stk->dispatcher != PP_DISPATCH_ALLGATHER) no = "the all-to-all or flex dispatcher (--moe-dispatcher allgather)";
        else if (stk->moe_capacity_factor > 0) no = "an expert capacity factor";
    }
    if (no)
        return BAD("NeMo 1.x (1.23, Megatron-Core 0.5.0) has no setting for %s: model %s (use --format megatron-bridge "
                   "or megatron)", no, m->name);
    pp_status st = pp_launch_cluster_check(w, err);
    if (st != PP_OK) return st;
    int64_t nodes = pp_launch_nodes(w), gpn = pp_launch_gpus_per_node(w);
    pp_launch_header_write(b, "#", PP_LAUNCH_NEMO, p);
    pp_sbuf_printf(b, "# Legacy format: NeMo 1.x Megatron GPT (megatron_gpt_config.yaml); for Megatron-Bridge (NeMo 2's\n"
                 "# successor) use --format megatron-bridge. Merge these overrides into the config, or\n"
                 "# pass each key as a Hydra override, e.g. trainer.devices=%lld model.tensor_model_parallel_size=%lld\n",
              (long long)gpn, (long long)l->tp);
    pp_sbuf_printf(b, "trainer:\n");
    pp_sbuf_printf(b, "  devices: %lld\n", (long long)gpn);
    pp_sbuf_printf(b, "  num_nodes: %lld\n", (long long)nodes);
    pp_sbuf_printf(b, "  precision: %s\n", stk->precision == PP_PREC_FP16 ? "16-mixed" : "bf16-mixed");
    pp_sbuf_printf(b, "  accumulate_grad_batches: 1  # NeMo accumulates global_batch_size / (micro x dp) = %lld itself\n",
              (long long)pp_layout_microbatches(w, l));
    pp_sbuf_printf(b, "model:\n");
    pp_sbuf_printf(b, "  mcore_gpt: true\n");
    pp_sbuf_printf(b, "  micro_batch_size: %lld\n", (long long)l->mbs);
    pp_sbuf_printf(b, "  global_batch_size: %lld\n", (long long)w->gbs);
    pp_sbuf_printf(b, "  tensor_model_parallel_size: %lld\n", (long long)l->tp);
    pp_sbuf_printf(b, "  pipeline_model_parallel_size: %lld\n", (long long)l->pp);
    if (l->vpp > 1) pp_sbuf_printf(b, "  virtual_pipeline_model_parallel_size: %lld\n", (long long)l->vpp);
    else pp_sbuf_printf(b, "  virtual_pipeline_model_parallel_size: null\n");
    pp_sbuf_printf(b, "  context_parallel_size: %lld\n", (long long)l->cp);
    if (m->experts > 1) {
        pp_sbuf_printf(b, "  expert_model_parallel_size: %lld\n", (long long)l->ep);
    }
    pp_sbuf_printf(b, "  sequence_parallel: %s\n", l->sp ? "true" : "false");
    pp_sbuf_printf(b, "  encoder_seq_length: %lld\n", (long long)m->seq);
    pp_sbuf_printf(b, "  max_position_embeddings: %lld\n", (long long)m->seq);
    /* megatron_gpt_config.yaml make_vocab_size_divisible_by (128 there) */
    if (stk->vocab_divisible_by > 0 && stk->vocab_divisible_by != 128)
        pp_sbuf_printf(b, "  make_vocab_size_divisible_by: %lld\n", (long long)stk->vocab_divisible_by);
    pp_sbuf_printf(b, "  num_layers: %lld\n", (long long)m->layers);
    pp_sbuf_printf(b, "  hidden_size: %lld\n", (long long)m->hidden);
    pp_sbuf_printf(b, "  ffn_hidden_size: %lld\n", (long long)m->ffn);
    pp_sbuf_printf(b, "  num_attention_heads: %lld\n", (long long)m->heads);
    if (m->kv_heads > 0 && m->kv_heads != m->heads)
        pp_sbuf_printf(b, "  num_query_groups: %lld\n", (long long)m->kv_heads);
    else pp_sbuf_printf(b, "  num_query_groups: null\n");
    if (!pp_model_is_mla(m) && m->head_dim > 0 && m->head_dim * m->heads != m->hidden)
        pp_sbuf_printf(b, "  kv_channels: %lld\n", (long long)m->head_dim);
    pp_sbuf_printf(b, "  normalization: %s\n", m->norm == PP_NORM_RMSNORM ? "rmsnorm" : "layernorm");
    pp_sbuf_printf(b, "  activation: %s\n", pp_activations[m->act].nemo);
    pp_sbuf_printf(b, "  bias: %s\n", m->bias ? "true" : "false");
    if (!m->bias && m->qkv_bias) pp_sbuf_printf(b, "  add_qkv_bias: true\n");
    double attn_drop = 0, hidden_drop = 0;
    pp_work_dropout(w, &attn_drop, &hidden_drop);
    char pa[32], ph[32];
    pp_sbuf_printf(b, "  hidden_dropout: %s\n  attention_dropout: %s\n", pp_launch_prob(hidden_drop, ph, sizeof ph),
              pp_launch_prob(attn_drop, pa, sizeof pa));
    /* TransformerEngine, FP8 and TP communication overlap (NeMo 1.x model keys) */
    pp_sbuf_printf(b, "  transformer_engine: %s\n", pp_work_impl(w) == PP_IMPL_TE ? "true" : "false");
    if (stk->precision == PP_PREC_FP8) pp_sbuf_printf(b, "  fp8: true\n  fp8_hybrid: true\n");
    if (stk->tp_comm_overlap) pp_sbuf_printf(b, "  ub_tp_comm_overlap: true\n");
    /* NeMo 1.x's Megatron-Core path leaves the kernel to TE's environment (NeMo-Framework-Launcher
     * 24.01-24.07 conf/config.yaml env_vars: NVTE_FUSED_ATTN: 0) */
    if (stk->te_attention == PP_TEATTN_FLASH2)
        pp_sbuf_printf(b, "  # --te-attention flash2: run with NVTE_FUSED_ATTN=0 in the environment (the launcher's env_vars)\n");
    /* Megatron's TransformerConfig keys, which NeMo's model config passes through */
    if (stk->act_unfused) pp_sbuf_printf(b, "  bias_activation_fusion: false\n");
    if (m->window > 0) {
        pp_sbuf_printf(b, "  window_size: [%lld, 0]\n", (long long)m->window);
    }
    pp_sbuf_printf(b, "  position_embedding_type: %s\n",
              m->pos == PP_POS_ROPE ? "rope" : m->pos == PP_POS_ALIBI ? "alibi"
              : m->pos == PP_POS_NONE ? "none" : "learned_absolute");
    pp_sbuf_printf(b, "  share_embeddings_and_output_weights: %s\n", m->tied ? "true" : "false");
    if (m->experts > 1) {
        pp_sbuf_printf(b, "  num_moe_experts: %lld\n", (long long)m->experts);
        pp_sbuf_printf(b, "  moe_router_topk: %lld\n", (long long)(m->topk > 0 ? m->topk : 1));
        pp_sbuf_printf(b, "  moe_grouped_gemm: %s\n", stk->grouped_gemm ? "true" : "false");
    }
    if (l->recompute == PP_RC_SELECTIVE) {
        pp_sbuf_printf(b, "  activations_checkpoint_granularity: selective\n");
        pp_sbuf_printf(b, "  activations_checkpoint_method: null\n");
        pp_sbuf_printf(b, "  activations_checkpoint_num_layers: null\n");
    } else if (l->recompute == PP_RC_FULL) {
        int64_t kmax = 0;
        bool all = true;
        for (int64_t i = 0; i < l->pp; i++) {
            int64_t k = pp_launch_stage_recompute(w, l, i);
            if (k > kmax) kmax = k;
            if (k != pp_layout_stage_layers(w, l, i)) all = false;
        }
        pp_sbuf_printf(b, "  activations_checkpoint_granularity: full\n");
        if (all) {
            pp_sbuf_printf(b, "  activations_checkpoint_method: uniform\n");
            pp_sbuf_printf(b, "  activations_checkpoint_num_layers: 1\n");
        } else {
            pp_sbuf_printf(b, "  activations_checkpoint_method: block\n");
            pp_sbuf_printf(b, "  activations_checkpoint_num_layers: %lld\n",
                      (long long)((kmax + l->vpp - 1) / l->vpp));
        }
    } else {
        pp_sbuf_printf(b, "  activations_checkpoint_granularity: null\n");
        pp_sbuf_printf(b, "  activations_checkpoint_method: null\n");
        pp_sbuf_printf(b, "  activations_checkpoint_num_layers: null\n");
    }
    pp_sbuf_printf(b, "  optim:\n");
    pp_sbuf_printf(b, "    name: %s\n", l->dist_opt ? "distributed_fused_adam" : "fused_adam");
    if (l->dist_opt) {
        bool ov = l->dp > 1 && !stk->no_overlap;
        pp_sbuf_printf(b, "    overlap_grad_sync: %s\n", ov ? "true" : "false");
        pp_sbuf_printf(b, "    overlap_param_sync: %s\n", ov ? "true" : "false");
        if (stk->optimizer_bf16) pp_sbuf_printf(b, "    dtype: bf16  # --optimizer-dtype bf16\n");
        /* NeMo keeps no fp32 parameter copy by default (megatron_base_model.py setup_optimization:
         * store_param_remainders for fp32 state over bf16 weights); a layout priced with Megatron's
         * distributed optimizer (fp32 main parameters) asks for the copy, so the run is the plan */
        if (!pp_work_dist_fused_adam(w))
            pp_sbuf_printf(b, "    store_params: true  # fp32 parameter copy as priced (--distributed-fused-adam: NeMo's "
                              "default, 16-bit remainders)\n");
        if (stk->grad_bf16) pp_sbuf_printf(b, "    grad_sync_dtype: bf16  # --grad-reduce-bf16\n");
    }
    return PP_OK;
}
