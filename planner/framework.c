/* What each framework does by default, as a table (pp_fw_row in pp.h): the cost models read these
 * fields and never branch on the framework. A new framework is a new row (and its enum value and
 * name in pp.h and common.c); a stack that differs from its framework in a default is a recipe
 * (recipes.d) or a flag, not a new row. */
#include "pp.h"

const char *const pp_opt_dtype_names[PP_OPT_DTYPE_COUNT] = {"fp32", "fp16", "bf16", "fp8"};
const double pp_opt_dtype_bytes[PP_OPT_DTYPE_COUNT] = {4.0, 2.0, 2.0, 1.0};
const char *const pp_finetune_names[PP_FT_COUNT] = {"full", "lora"};
const char *const pp_lora_target_names[PP_LORA_TARGETS_COUNT] = {"all", "attn", "mlp", "qkv"};
const char *const pp_loss_names[PP_LOSS_COUNT] = {"vocab-parallel", "native", "te", "upcast", "bf16", "cut"};

const pp_fw_row pp_frameworks[PP_FW_COUNT] = {
    [PP_FW_MEGATRON] = {
        .source = "NVIDIA/Megatron-LM: training/theoretical_memory_usage.py and docs dist_optimizer.md (18 B "
                  "per parameter: bf16 weight 2, fp32 main_grad 4, fp32 main param + Adam m, v 12); "
                  "core/distributed/param_and_grad_buffer.py (grad_dtype = param.dtype unless "
                  "grad_reduce_in_fp32: --fp16, --grad-reduce-in-bf16); training/vocab_utils.py "
                  "(--make-vocab-size-divisible-by 128 x TP); gpt_layer_specs.py (TE spec); "
                  "fusions/fused_bias_swiglu.py, fused_bias_gelu.py; parallel_state.get_global_memory_buffer; "
                  "arguments.py create_attention_mask_in_dataloader; tensor_parallel/cross_entropy.py; "
                  "core/pipeline_parallel/p2p_communication.py (scatter-gather over TP)",
        .weight_bytes = 2.0,
        .grad_bytes = 4.0,
        .optimizer_bytes = 12.0,
        .grad_dtype_option = true,
        /* the fused wgrad GEMM reads and writes the main_grad: fp32 8, 16-bit 4 */
        .grad_accum_bytes = 8.0,
        .grad_accum_bytes_16 = 4.0,
        .reduce_bytes = 0.0,
        .vocab_multiple = 128,
        .te_modules = true,
        .act_fusion = true,
        .global_attn_buffer = true,
        .dataloader_mask = true,
        .loss = PP_LOSS_VOCAB_PARALLEL,
        .cp_comm = PP_CPC_P2P, /* TransformerEngine's ring, --cp-comm-type p2p (arguments.py default) */
        .titan_block = false,
        .titan_kernels = false,
        .torchao_float8 = false,
        .block_sharding = false,
        .torch_adam = false,
        /* without apex (--impl local on the lent machines) Megatron's Adam is torch's foreach */
        .eager_foreach_adam = true,
        .p2p_scatter_gather = true,
        .zero_bucket_bytes = 0.0,
        .max_zero = 3, /* --zero with --megatron-fsdp only (common.c says so) */
    },
    [PP_FW_DEEPSPEED] = {
        .source = "ZeRO (Rajbhandari et al. 2020, sec. 3, table 1: 2 + 2 + 12 B per parameter); DeepSpeed "
                  "config docs (reduce_bucket_size, allgather_bucket_size 5e8 elements, 16-bit); "
                  "runtime/bf16_optimizer.py (bf16 grad written, read back, added into fp32); "
                  "runtime/pipe/engine.py (whole tensor sent from every TP rank); Hugging Face models "
                  "(eager modules, cross_entropy on logits.float()); DeepSpeed 0.19.8 with transformers 5.17 "
                  "measured on two H200s (tests/data/deepspeed)",
        .weight_bytes = 2.0,
        .grad_bytes = 2.0,
        .optimizer_bytes = 12.0,
        .grad_dtype_option = false,
        /* BF16 optimizer: 2 + 2 + 8; fp16 optimizer: read + write of the fp16 grads, 4 */
        .grad_accum_bytes = 12.0,
        .grad_accum_bytes_16 = 4.0,
        .reduce_bytes = 0.0,
        .vocab_multiple = 1,
        .te_modules = false,
        .act_fusion = false,
        .global_attn_buffer = false,
        .dataloader_mask = false,
        .loss = PP_LOSS_TORCH,
        .cp_comm = PP_CPC_P2P, /* Megatron-DeepSpeed's CP rides on Megatron's TE ring */
        .titan_block = false,
        .titan_kernels = false,
        .torchao_float8 = false,
        .block_sharding = false,
        .torch_adam = false,
        .eager_foreach_adam = false, /* DeepSpeed's FusedAdam */
        .p2p_scatter_gather = false,
        /* one bucket of reduce_bucket_size 5e8 16-bit elements (runtime/zero/config.py's
         * default; memory.c counts how many a stage holds) */
        .zero_bucket_bytes = 5e8 * 2.0,
        .hf_modules = true,
        /* DeepSpeed 0.19's ZeRO engine (runtime/zero/stage_1_and_2.py, stage3.py), measured on two
         * H200s with transformers' Llama (tests/data/deepspeed, tools/deepspeed/train_ds.py):
         * ZeRO 1 and 2 free the 16-bit gradients at the step (free_grad_in_param_list) and
         * release the buckets and the partition at the backward's end (_release_ipg_buffers);
         * both reduce with all-reduce kernels (reduce_gradients, average_tensor) and all-gather
         * the updated partitions after the step (all_gather_dp_groups), before the next forward. */
        .shard_all_reduce = true,
        .zero_grads_step_only = true,
        .zero_gather_exposed = true,
        /* Its own copies, counted per element (not fitted): at each reduction every parameter of
         * the rank goes into its bucket (copy_ 2 + 2) and is divided by the data-parallel size
         * there (2 + 2), 8; stage 1 flattens the buckets and copies the reduced gradients back
         * out (buffered_reduce_fallback, 4 + 4 more: 12, once a step). At the step each element of
         * the partition: the flat copy of its gradients (2 + 2), their fp32 cast (2 + 4), the
         * gradient norm's read (2; get_grad_norm_direct), the fp32 master's cast back into the
         * 16-bit partition (4 + 2): 18; stages 2 and 3 first copied the partition's reduced
         * gradients out of the bucket (copy_grads_in_partition, 2 + 2): 22. In the ZeRO-1 run
         * those kernels (bucket memcpys, the division, the norms, casts, concatenations) took
         * about 16 ms of the 185 ms step; the count gives 14.5 ms at the copy rate. */
        .zero_copy_reduce_bytes = 8.0,
        .zero_copy_reduce_bytes_1 = 12.0,
        .zero_copy_step_bytes = 18.0,
        .zero_copy_step_bytes_2 = 22.0,
        /* ZeRO-3's parameter coordinator on the host, per module it fetches before the module runs
         * and releases after (partitioned_param_coordinator.py fetch_sub_module,
         * release_sub_module; parameter_offload.py's hooks on every module): fitted on the one
         * calibrate ZeRO-3 run (z3_l8_b1: 150 fetches, its step 72 ms above the model without
         * it); the split was chosen before the runs, the held-out ZeRO-3 runs test it. */
        .zero3_fetch_host_s = 0.48e-3,
        .max_zero = 3,
    },
    [PP_FW_FSDP] = {
        .source = "PyTorch FSDP2 (torch/distributed/fsdp/_fully_shard) as torchtitan runs it: "
                  "models/llama3/infra/parallelize.py (fully_shard per block, MixedPrecisionPolicy "
                  "bf16 params, fp32 reduce), models/llama3/model (wq, wk, wv, w1, w3; SDPA), "
                  "config/job_config.py (torch AdamW, implementation fused); ZeRO's byte counts for "
                  "FULL_SHARD / SHARD_GRAD_OP (stages 3 / 2)",
        .weight_bytes = 2.0,
        .grad_bytes = 2.0,
        .optimizer_bytes = 12.0,
        .grad_dtype_option = false,
        /* FSDP2's per-micro-batch copies are priced per parameter in the step (time_step.c) */
        .grad_accum_bytes = 0.0,
        .grad_accum_bytes_16 = 0.0,
        /* MixedPrecisionPolicy(reduce_dtype=torch.float32) reduce-scatters fp32 */
        .reduce_bytes = 4.0,
        .vocab_multiple = 1,
        .te_modules = false,
        .act_fusion = false,
        .global_attn_buffer = false,
        .dataloader_mask = false,
        .loss = PP_LOSS_TORCH,
        .cp_comm = PP_CPC_TORCH, /* torchtitan's CP is torch's context_parallel ring */
        .titan_block = true,
        .titan_kernels = true,
        .torchao_float8 = true, /* torchtitan's quantize.linear.float8 converter (torchao Float8Linear) */
        .block_sharding = true,
        .torch_adam = true,
        .eager_foreach_adam = true,
        .p2p_scatter_gather = false,
        .zero_bucket_bytes = 0.0,
        .max_zero = 3,
    },
    [PP_FW_NANOTRON] = {
        .source = "huggingface/nanotron@2411b022 (2026-04-07): src/nanotron/helpers.py:390-407 "
                  "(accumulate_grad_in_fp32: FP32GradientAccumulator; grad_buckets_named_params = all "
                  "parameters), optim/gradient_accumulator.py:95 (fp32 master copy of the optimizer's "
                  "parameters), :174 (fp32 gradient buffer of every parameter, not sharded by ZeRO-1), "
                  ":226 (the bf16 .grad freed after the backward), helpers.py:359-366 (torch AdamW, fused "
                  "by torch_adam_is_fused: m, v in the fp32 master's dtype), helpers.py:409-415 "
                  "(ZeroDistributedOptimizer: zero_stage > 0 shards the optimizer over dp), "
                  "trainer.py:1093 (when to wrap in DDP; @9055c664, 2025-02, the benchmarks' commit, :786: "
                  "dp > 1 and not ZeRO-1 with fp32 accumulation), trainer.py:1156-1161 (torch DDP, 25 MB "
                  "buckets, bf16), models/llama.py:205 (GLU act(gate) * up, eager), :290 "
                  "(flash_attn_varlen_func), :729 (TritonRMSNorm), :901 and :993 (logits cast to fp32, "
                  "vocab-sharded cross-entropy), config/config.py:312 (make_vocab_size_divisible_by 1)",
        .weight_bytes = 2.0,
        /* fp32 accumulator (gradient_accumulator.py:174), unsharded at ZeRO 0 and 1 */
        .grad_bytes = 4.0,
        /* fp32 master (gradient_accumulator.py:95) + AdamW m, v of it, sharded at ZeRO 1 */
        .optimizer_bytes = 12.0,
        .grad_dtype_option = false,
        /* autograd writes the bf16 .grad (2), the accumulator reads it and reads and writes the fp32
         * buffer (gradient_accumulator.py:222 fp32_grad.add_(half_param.grad)): 2 + 2 + 8 */
        .grad_accum_bytes = 12.0,
        .grad_accum_bytes_16 = 4.0,
        /* the fp32 buffer is all-reduced (gradient_accumulator.py:156; the DDP hook's
         * all_reduce_coalesced of the fp32 buffers, :383) */
        .reduce_bytes = 4.0,
        .vocab_multiple = 1,
        .te_modules = false,
        .act_fusion = false,
        .global_attn_buffer = false,
        .dataloader_mask = false,
        /* Megatron's vocab-parallel algorithm ported (tensor_parallel/functional.py:31) on the
         * logits cast to fp32 (llama.py:901) */
        .loss = PP_LOSS_VOCAB_PARALLEL,
        .cp_comm = PP_CPC_P2P, /* no CP of its own: the TE ring's bytes */
        .titan_block = false,
        .titan_kernels = false,
        .torchao_float8 = false,
        .block_sharding = false,
        .torch_adam = true,
        .eager_foreach_adam = false, /* torch_adam_is_fused: true in every example config */
        .p2p_scatter_gather = false, /* pipeline_parallel/p2p.py sends each rank's tensor whole */
        .zero_bucket_bytes = 0.0,
        /* the bf16 .grad of every parameter, live from the backward until the accumulator adds it
         * into the fp32 buffer and frees it (gradient_accumulator.py:206-226); under DDP (ZeRO 0,
         * dp > 1) its bf16 buckets besides (trainer.py:1156: gradient_as_bucket_view off) */
        .grad_copy_bytes = 2.0,
        .ddp_bucket_bytes = 2.0,
        /* trainer.py:652 sync_gradients_across_dp(reduce_scatter=False): "instead we run all_reduce"
         * of the fp32 buffer, then ZeroDistributedOptimizer all-gathers the updated bf16 shards */
        .shard_all_reduce = true,
        /* parallel/pipeline_parallel/engine.py:175, 235: AllForwardAllBackward and
         * OneForwardOneBackward, no interleaving (parplan prices 1F1B: the example configs' pp_engine) */
        .no_interleave = true,
        /* parallelism_config.py:35 recompute_layer, one flag: every layer under
         * CheckpointFunction (models/llama.py:766-774) */
        .full_recompute_only = true,
        .no_offload = true, /* no training-time offload in src/nanotron (inherit_from_other_optimizer.py:15 only loads a state dict through the host) */
        .max_zero = 1,
        .zero_why = "nanotron's zero_stage is 0 or 1 (optim/zero.py:150-160: ZeroDistributedOptimizer shards the "
                    "optimizer state only; the fp32 gradient accumulator keeps every parameter's gradient)",
    },
};

bool pp_work_torch_norms(const pp_work *w)
{
    return pp_work_fw(w)->te_modules && w->stack.impl_given && w->stack.impl == PP_IMPL_LOCAL;
}

pp_impl pp_work_impl(const pp_work *w)
{
    if (w->stack.impl_given) return w->stack.impl;
    return w->attention == PP_ATTN_UNFUSED ? PP_IMPL_LOCAL : PP_IMPL_TE;
}

void pp_work_norm_modules(const pp_work *w, bool moe_layer, bool *input_norm, bool *mlp_norm)
{
    bool te_spec = pp_work_te(w);
    *input_norm = !te_spec || w->model.kv_lora_rank > 0;
    *mlp_norm = !te_spec || moe_layer;
}

const pp_fw_row *pp_fw_get(pp_framework f)
{
    /* an out-of-range value cannot come from a request (the names table checks it) */
    return &pp_frameworks[(unsigned)f < PP_FW_COUNT ? f : PP_FW_MEGATRON];
}

const pp_fw_row *pp_work_fw(const pp_work *w) { return pp_fw_get(w->framework); }

int64_t pp_work_vocab_divisible_by(const pp_work *w)
{
    return w->stack.vocab_divisible_by > 0 ? w->stack.vocab_divisible_by : pp_work_fw(w)->vocab_multiple;
}

bool pp_work_te(const pp_work *w) { return pp_work_fw(w)->te_modules && pp_work_impl(w) != PP_IMPL_LOCAL; }

bool pp_work_act_eager(const pp_work *w) { return !pp_work_fw(w)->act_fusion || w->stack.act_unfused; }

bool pp_work_grads_16bit(const pp_work *w)
{
    /* Megatron-FSDP keeps its main gradients in the compute weights' dtype unless told otherwise
     * (megatron_fsdp/param_and_grad_buffer.py _resolve_group_grad_dtype: "grad.dtype == param.dtype";
     * --megatron-fsdp-main-grads-dtype auto; Megatron-LM b969f764, 2026-03-02, before which
     * grad_reduce_in_fp32 made them fp32) */
    if (w->stack.megatron_fsdp) return !w->stack.fsdp_grads_fp32;
    return w->stack.precision == PP_PREC_FP16 || (pp_work_fw(w)->grad_dtype_option && w->stack.grad_bf16);
}

double pp_work_grad_bytes(const pp_work *w) { return pp_work_grads_16bit(w) ? 2.0 : pp_work_fw(w)->grad_bytes; }

int64_t pp_work_nvlink_gpus(const pp_work *w)
{
    int64_t gpn = w->gpus_per_node > 0 ? w->gpus_per_node : 1;
    return w->gpu.nvlink_domain > gpn ? w->gpu.nvlink_domain : gpn;
}

bool pp_work_lora(const pp_work *w)
{
    return w->stack.finetune == PP_FT_LORA;
}

double pp_work_lora_rank(const pp_work *w)
{
    return (double)(w->stack.lora_rank > 0 ? w->stack.lora_rank : PP_LORA_DEFAULT_RANK);
}

bool pp_precision_fp8_params(pp_precision p)
{
    /* --fp8-param-gather keeps TE's quantized weights as the parameters: FP8 (Hopper's delayed or
     * tensorwise recipes) and MXFP8, whose Megatron-Bridge preset sets it (training/
     * mixed_precision.py bf16_with_mxfp8_mixed: fp8_param_gather = True), and NVFP4, where it is
     * Megatron's --fp4-param-gather (transformer_config.py fp4_param), which Megatron-Bridge's
     * bf16_with_nvfp4_mixed sets (mixed_precision.py: fp4_param_gather = True). */
    return p == PP_PREC_FP8 || p == PP_PREC_MXFP8 || p == PP_PREC_NVFP4;
}

bool pp_work_fp8_params(const pp_work *w)
{
    return w->stack.fp8_param_gather && pp_precision_fp8_params(w->stack.precision);
}

bool pp_work_dist_fused_adam(const pp_work *w)
{
    return w->stack.dist_fused_adam || w->stack.optimizer_bf16;
}

bool pp_work_precision_aware(const pp_work *w)
{
    const pp_stack *s = &w->stack;
    return s->precision_aware_opt || s->main_params_dtype != PP_OPT_FP32 || s->exp_avg_dtype != PP_OPT_FP32 ||
           s->exp_avg_sq_dtype != PP_OPT_FP32;
}

double pp_work_optimizer_bytes(const pp_work *w)
{
    const pp_stack *s = &w->stack;
    double moments = pp_work_dist_fused_adam(w) ? 2.0 * (s->optimizer_bf16 ? 2.0 : 4.0)
                     : pp_work_precision_aware(w) ? pp_opt_dtype_bytes[s->exp_avg_dtype] + pp_opt_dtype_bytes[s->exp_avg_sq_dtype]
                                                  : 8.0; /* fp32 m and v */
    return pp_work_optimizer_master_bytes(w) + moments;
}

double pp_work_optimizer_master_bytes(const pp_work *w)
{
    const pp_stack *s = &w->stack;
    /* 16-bit parameters: bf16 under every precision but fp16 (the FP8 and FP4 recipes keep bf16
     * weights beside their casts) */
    bool bf16 = s->precision != PP_PREC_FP16;
    if (pp_work_dist_fused_adam(w)) {
        /* NeMo 1.x (megatron_base_model.py setup_optimization, r2.0.0 lines 790-812): Adam's
         * moments in optim.dtype (fp32 unless --optimizer-dtype bf16); the parameter copy
         * (store_params) only with FP8 parameters or where the optimizer dtype differs from the
         * model's, and for fp32 state over a bf16 model only the 16 low bits the bf16 parameter
         * lacks (store_param_remainders; Apex distributed_fused_adam.py) */
        double d = s->optimizer_bf16 ? 2.0 : 4.0;
        if (pp_work_fp8_params(w)) return d;
        if (s->optimizer_bf16) return bf16 ? 0.0 : d;
        return bf16 ? 2.0 : d;
    }
    if (!pp_work_precision_aware(w)) return pp_work_fw(w)->optimizer_bytes - 8.0; /* the framework's fp32 master */
    /* TE FusedAdam of the precision-aware optimizer (megatron/core/optimizer/__init__.py):
     * master_weight_dtype, exp_avg_dtype, exp_avg_sq_dtype. fp32 main parameters over bf16 ones are
     * kept as their 16-bit remainders (optimizer_config.py store_param_remainders, default True
     * from TE 2.1; distrib_optimizer.py: master_param int16 "if store_param_remainders and bf16"),
     * except with FP8 parameters of a recipe other than delayed scaling, whose fp32 master copy
     * Megatron keeps itself (optimizer_config.py use_precision_aware_optimizer_no_fp8_or_ds_fp8;
     * --precision fp8 is the delayed recipe, Megatron's default) */
    double main = pp_opt_dtype_bytes[s->main_params_dtype];
    bool mcore_master = pp_work_fp8_params(w) && s->precision != PP_PREC_FP8;
    if (s->main_params_dtype == PP_OPT_FP32 && bf16 && !mcore_master) main = 2.0;
    return main;
}

const char *const pp_cp_comm_names[PP_CPC_COUNT] = {"p2p", "allgather", "torch"};

pp_cp_comm pp_work_cp_comm(const pp_work *w)
{
    if (w->stack.cp_comm > 0 && w->stack.cp_comm <= PP_CPC_COUNT) return (pp_cp_comm)(w->stack.cp_comm - 1);
    return (pp_cp_comm)pp_work_fw(w)->cp_comm;
}

pp_loss pp_work_loss(const pp_work *w)
{
    if (w->stack.loss >= PP_LOSS_TORCH && w->stack.loss < PP_LOSS_COUNT) return (pp_loss)w->stack.loss;
    switch (w->stack.ce_fusion) {
    case PP_CE_NATIVE: return PP_LOSS_NATIVE;
    case PP_CE_TE: return PP_LOSS_TE;
    default: return pp_work_fw(w)->loss;
    }
}
