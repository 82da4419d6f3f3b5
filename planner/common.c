/* Errors, enum name tables and the layout rules shared by every module. */
#include "pp.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

const char *const pp_norm_names[PP_NORM_COUNT] = {"layernorm", "rmsnorm"};
const char *const pp_pos_names[PP_POS_COUNT] = {"learned", "rope", "alibi", "none"};
const char *const pp_dtype_names[PP_DT_COUNT] = {"fp32", "tf32", "fp16", "bf16", "fp8", "fp4"};
const char *const pp_framework_names[PP_FW_COUNT] = {"megatron", "deepspeed", "fsdp", "nanotron"};
const char *const pp_attention_names[PP_ATTN_COUNT] = {"flash", "unfused"};
const char *const pp_recompute_names[PP_RC_COUNT] = {"none", "selective", "full"};
const char *const pp_offload_names[PP_OFF_COUNT] = {"none", "optimizer", "params"};
const char *const pp_precision_names[PP_PREC_COUNT] = {"bf16", "fp16", "fp8", "mxfp8", "nvfp4"};
/* fp8: TransformerEngine's per-tensor FP8 on Hopper, 1 byte, the weight cast row-wise and
 * transposed (te/pytorch/module/base.py, the FP8 weight workspace).
 * mxfp8: OCP MX FP8, one E8M0 scale byte per 32 elements, 1 + 1/32 bytes; TE keeps a row-wise and
 * a column-wise copy, each with its own scales, because Blackwell's tensor cores take no FP8
 * transposes (transformer_engine/pytorch/tensor/mxfp8_tensor.py MXFP8Tensor: _rowwise_data,
 * _columnwise_data, _rowwise_scale_inv, _columnwise_scale_inv; MXFP8_BLOCK_SCALING_SIZE = 32 in
 * transformer_engine/pytorch/constants.py).
 * nvfp4: E2M1 elements two to a byte with one FP8 E4M3 scale per 16 elements (NVFP4_BLOCK_SCALING_SIZE = 16, constants.py), 0.5 + 1/16 bytes,
 * plus a per-tensor fp32 amax (negligible); row-wise and column-wise copies as mxfp8
 * (transformer_engine/pytorch/tensor/nvfp4_tensor.py NVFP4Tensor; transformer_engine/common/
 * recipe/__init__.py NVFP4BlockScaling: 16-element E4M3 scales and a per-tensor FP32 scale, the
 * tensor and its transpose each quantized from the high-precision input; its random Hadamard
 * transform, stochastic rounding and 2D weight quantization are not counted). */
const pp_precision_facts pp_precision_info[PP_PREC_COUNT] = {
    [PP_PREC_BF16] = {PP_DT_BF16, 2.0, 0.0, false},
    [PP_PREC_FP16] = {PP_DT_BF16, 2.0, 0.0, false},
    [PP_PREC_FP8] = {PP_DT_FP8, 1.0, 2.0, false},
    [PP_PREC_MXFP8] = {PP_DT_FP8, 1.0 + 1.0 / 32.0, 2.0, true},
    [PP_PREC_NVFP4] = {PP_DT_FP4, 0.5 + 1.0 / 16.0, 2.0, true},
};

bool pp_precision_quantized(pp_precision p)
{
    return (unsigned)p < PP_PREC_COUNT && pp_precision_info[p].gemm_dt != PP_DT_BF16;
}
const char *const pp_rc_module_names[PP_RCM_COUNT] = {"core_attn", "layernorm", "mla_up_proj",
                                                      "moe_act", "mlp", "moe", "shared_experts"};

unsigned pp_layout_rc_modules(const pp_layout *l)
{
    if (l->recompute != PP_RC_SELECTIVE) return 0;
    return l->recompute_modules ? l->recompute_modules : 1u << PP_RCM_CORE_ATTN;
}
const char *const pp_impl_names[PP_IMPL_COUNT] = {"te", "local"};
const char *const pp_dispatch_names[PP_DISPATCH_COUNT] = {"alltoall", "allgather", "flex"};
const char *const pp_adam_impl_names[PP_ADAM_COUNT] = {"fused", "foreach"};
const char *const pp_sdpa_backend_names[PP_SDPA_COUNT] = {"flash", "cudnn"};
const char *const pp_fp8_scaling_names[PP_FP8_SCALING_COUNT] = {"tensorwise", "rowwise"};
const char *const pp_eager_norm_names[PP_ENORM_COUNT] = {"fused", "composite", "composite-fp32"};

double pp_eager_norm_saved_bytes(const pp_stack *s)
{
    if (s->compile) return 0.0; /* Inductor fuses the norm: the rstd alone, as the fused kernel */
    /* measured on one H200 (tests/data/fsdp/rmsnorm.jsonl): the composite saves its fp32 upcast and
     * its bf16 normalized output, 6.00 bytes; KempnerForge's order the upcast and the fp32
     * normalized output, 8 (the live blocks of norm.py:25-26 in tests/data/kf's allocator
     * histories: 4 + 4 bytes an element) */
    switch (s->eager_norm) {
    case PP_ENORM_COMPOSITE: return 6.0;
    case PP_ENORM_COMPOSITE_FP32: return 8.0;
    default: return 0.0;
    }
}
const char *const pp_tp_vocab_names[PP_TPV_COUNT] = {"sharded", "gathered", "replicated"};
const char *const pp_te_attention_names[PP_TEATTN_COUNT] = {"cudnn", "flash2"};
const char *const pp_flex_backend_names[PP_FLEX_COUNT] = {"deepep", "hybridep"};
const char *const pp_ce_fusion_names[PP_CE_COUNT] = {"none", "native", "te"};
const char *const pp_cuda_graph_names[PP_CG_COUNT] = {"none", "attn", "mlp", "moe", "moe_router", "moe_preprocess",
                                                      "full_iteration"};

unsigned pp_stack_cuda_graphs(const pp_stack *s)
{
    return s->cuda_graphs & ~(1u << PP_CG_NONE);
}

pp_status pp_cuda_graphs_parse(const char *v, unsigned *bits, char *why, size_t n)
{
    char buf[128];
    unsigned b = 0;
    if (!v[0] || strlen(v) >= sizeof buf) {
        snprintf(why, n, "expects none, full_iteration or a comma-separated list of parts");
        return PP_ERR_INPUT;
    }
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int i = pp_name_lookup(pp_cuda_graph_names, PP_CG_COUNT, tok);
        if (i < 0) {
            snprintf(why, n, "unknown part '%s' (none, attn, mlp, moe, moe_router, moe_preprocess, full_iteration)", tok);
            return PP_ERR_INPUT;
        }
        b |= 1u << i;
    }
    *bits = b;
    return PP_OK;
}

void pp_cuda_graphs_str(unsigned bits, const char *sep, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
    bits &= ~(1u << PP_CG_NONE);
    if (!bits) {
        snprintf(buf, n, "none");
        return;
    }
    for (int i = 0; i < PP_CG_COUNT && k < n; i++)
        if (bits & (1u << i)) k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? sep : "", pp_cuda_graph_names[i]);
}

void pp_stack_init(pp_stack *s)
{
    memset(s, 0, sizeof *s);
    s->precision = PP_PREC_BF16;
    s->impl = PP_IMPL_TE;
    s->dispatcher = PP_DISPATCH_ALLTOALL;
    s->moe_imbalance = 1.0;
    s->loss = -1;
}

void pp_work_dropout(const pp_work *w, double *attention, double *hidden)
{
    if (w->stack.dropout_given) {
        *attention = w->stack.attention_dropout;
        *hidden = w->stack.hidden_dropout;
    } else {
        pp_model_dropout(&w->model, attention, hidden);
    }
}

void pp_stack_resolve(pp_work *w)
{
    pp_stack *s = &w->stack;
    pp_work_dropout(w, &s->attention_dropout, &s->hidden_dropout);
    s->impl = pp_work_impl(w);
    if (s->moe_imbalance < 1.0) s->moe_imbalance = 1.0;
}

void pp_stack_describe(const pp_work *w, char *buf, size_t n)
{
    const pp_stack *s = &w->stack;
    const char *drop_src = s->dropout_given ? "given" : w->model.dropout_set ? "model" : "assumed";
    double ad = 0, hd = 0;
    pp_work_dropout(w, &ad, &hd); /* valid on a stack pp_stack_resolve has not filled */
    bool meg = w->framework == PP_FW_MEGATRON;
    int k = snprintf(buf, n, "stack: %s, %s, %s%s%s attention, dropout %.2g/%.2g (%s), overlap %s, "
                     "tp-comm-overlap %s",
                     pp_precision_names[s->precision], pp_framework_names[w->framework],
                     meg ? pp_impl_names[pp_work_impl(w)] : "", meg ? " " : "",
                     pp_attention_names[w->attention], ad, hd,
                     drop_src, s->no_overlap ? "off" : "on", s->tp_comm_overlap ? "on" : "off");
    if (k > 0 && (size_t)k < n && s->grad_bf16)
        k += snprintf(buf + k, n - (size_t)k, ", bf16 gradients");
    if (k > 0 && (size_t)k < n && s->megatron_fsdp)
        k += snprintf(buf + k, n - (size_t)k, ", Megatron-FSDP%s%s", s->fsdp_double_buffer ? " double-buffered" : "",
                      s->fsdp_grads_fp32 ? " with fp32 gradients" : "");
    if (k > 0 && (size_t)k < n && s->megatron_fsdp && s->fsdp_unit_size > 0)
        k += snprintf(buf + k, n - (size_t)k, " (unit %lld)", (long long)s->fsdp_unit_size);
    if (k > 0 && (size_t)k < n && s->optimizer_bf16)
        k += snprintf(buf + k, n - (size_t)k, ", bf16 optimizer state");
    if (k > 0 && (size_t)k < n && s->no_attention_mask)
        k += snprintf(buf + k, n - (size_t)k, ", no dataloader mask");
    if (k > 0 && (size_t)k < n && meg && s->act_unfused)
        k += snprintf(buf + k, n - (size_t)k, ", unfused bias-activation");
    if (k > 0 && (size_t)k < n && meg && s->ce_fusion != PP_CE_NONE)
        k += snprintf(buf + k, n - (size_t)k, ", %s fused cross-entropy", pp_ce_fusion_names[s->ce_fusion]);
    if (k > 0 && (size_t)k < n && s->compile)
        k += snprintf(buf + k, n - (size_t)k, ", torch.compile");
    if (k > 0 && (size_t)k < n && s->sdpa_backend == PP_SDPA_CUDNN)
        k += snprintf(buf + k, n - (size_t)k, ", SDPA cuDNN");
    if (k > 0 && (size_t)k < n && s->fp8_scaling == PP_FP8_ROWWISE)
        k += snprintf(buf + k, n - (size_t)k, ", rowwise float8");
    if (k > 0 && (size_t)k < n && s->eager_norm != PP_ENORM_FUSED)
        k += snprintf(buf + k, n - (size_t)k, ", composite RMSNorm%s",
                      s->eager_norm == PP_ENORM_COMPOSITE_FP32 ? " (fp32 weight)" : "");
    if (k > 0 && (size_t)k < n && s->tp_vocab != PP_TPV_SHARDED)
        k += snprintf(buf + k, n - (size_t)k, ", %s", s->tp_vocab == PP_TPV_GATHERED ? "logits gathered over TP"
                                                                                     : "vocabulary replicated over TP");
    if (k > 0 && (size_t)k < n && s->te_attention == PP_TEATTN_FLASH2)
        k += snprintf(buf + k, n - (size_t)k, ", TE's FlashAttention-2");
    if (k > 0 && (size_t)k < n && pp_stack_cuda_graphs(s)) {
        char parts[128];
        pp_cuda_graphs_str(s->cuda_graphs, ",", parts, sizeof parts);
        k += snprintf(buf + k, n - (size_t)k, ", CUDA graphs %s", parts);
    }
    if (k > 0 && (size_t)k < n && s->cpu_offload_layers > 0)
        k += snprintf(buf + k, n - (size_t)k, ", activations of %lld layers offloaded to the host",
                      (long long)s->cpu_offload_layers);
    if (k > 0 && (size_t)k < n && s->vocab_divisible_by > 0 && s->vocab_divisible_by != pp_work_fw(w)->vocab_multiple)
        k += snprintf(buf + k, n - (size_t)k, ", vocabulary padded to a multiple of %lld x tp",
                      (long long)s->vocab_divisible_by);
    if (k > 0 && (size_t)k < n && pp_work_fp8_params(w))
        k += snprintf(buf + k, n - (size_t)k, ", %s parameters",
                      s->precision == PP_PREC_NVFP4 ? "NVFP4" : s->precision == PP_PREC_MXFP8 ? "MXFP8" : "FP8");
    bool dtypes = s->main_params_dtype != PP_OPT_FP32 || s->exp_avg_dtype != PP_OPT_FP32 ||
                  s->exp_avg_sq_dtype != PP_OPT_FP32;
    if (k > 0 && (size_t)k < n && dtypes)
        k += snprintf(buf + k, n - (size_t)k, ", optimizer state %s/%s/%s", pp_opt_dtype_names[s->main_params_dtype],
                      pp_opt_dtype_names[s->exp_avg_dtype], pp_opt_dtype_names[s->exp_avg_sq_dtype]);
    else if (k > 0 && (size_t)k < n && pp_work_precision_aware(w))
        k += snprintf(buf + k, n - (size_t)k, ", precision-aware optimizer");
    if (k > 0 && (size_t)k < n && s->dist_fused_adam)
        k += snprintf(buf + k, n - (size_t)k, ", distributed_fused_adam");
    if (k > 0 && (size_t)k < n && s->param_bf16)
        k += snprintf(buf + k, n - (size_t)k, ", bf16 parameters and AdamW state");
    if (k > 0 && (size_t)k < n && s->loss >= PP_LOSS_TORCH && s->loss < PP_LOSS_COUNT)
        k += snprintf(buf + k, n - (size_t)k, ", loss %s", pp_loss_names[s->loss]);
    if (k > 0 && (size_t)k < n && s->no_sync_accum)
        k += snprintf(buf + k, n - (size_t)k, ", gradient sync on the last micro-batch only");
    if (k > 0 && (size_t)k < n && s->keep_logits)
        k += snprintf(buf + k, n - (size_t)k, ", logits held through the backward");
    if (k > 0 && (size_t)k < n && s->cp_comm > 0 && s->cp_comm <= PP_CPC_COUNT)
        k += snprintf(buf + k, n - (size_t)k, ", CP %s", pp_cp_comm_names[s->cp_comm - 1]);
    if (k > 0 && (size_t)k < n && s->compile_loss)
        k += snprintf(buf + k, n - (size_t)k, ", loss compiled");
    if (k > 0 && (size_t)k < n && s->repeat_kv && w->model.kv_heads < w->model.heads)
        k += snprintf(buf + k, n - (size_t)k, ", K and V repeated to the query heads");
    if (k > 0 && (size_t)k < n && s->router_holds_recompute && w->model.experts > 1)
        k += snprintf(buf + k, n - (size_t)k, ", recompute held by the router");
    if (k > 0 && (size_t)k < n && s->expert_pad_loop && w->model.experts > 1)
        k += snprintf(buf + k, n - (size_t)k, ", experts padded in Python");
    if (k > 0 && (size_t)k < n && s->expandable_segments)
        k += snprintf(buf + k, n - (size_t)k, ", expandable segments");
    if (k > 0 && (size_t)k < n && pp_work_lora(w))
        k += snprintf(buf + k, n - (size_t)k, ", LoRA rank %.0f on %s (base frozen)", pp_work_lora_rank(w),
                      pp_lora_target_names[s->lora_targets]);
    if (k > 0 && (size_t)k < n && w->model.experts > 1)
        snprintf(buf + k, n - (size_t)k, ", MoE %s%s%s dispatch, %s experts%s", pp_dispatch_names[s->dispatcher],
                 s->dispatcher == PP_DISPATCH_FLEX ? " " : "",
                 s->dispatcher == PP_DISPATCH_FLEX ? pp_flex_backend_names[s->flex_backend] : "",
                 s->grouped_gemm ? "grouped" : "looped",
                 s->moe_capacity_factor > 0 ? ", capacity factor" : ", dropless");
}

#define STACK_BAD(...) pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, __VA_ARGS__)

pp_status pp_stack_check(const pp_work *w, pp_error *err)
{
    const pp_stack *s = &w->stack;
    /* FP8 GEMMs need FP8 tensor cores (Hopper and later): the catalog gives the GPU's FP8 peak, 0
     * where it has none (A100, V100) */
    if (s->precision == PP_PREC_FP8 && w->gpu.name[0] && !(w->gpu.peak_flops[PP_DT_FP8] > 0))
        return STACK_BAD("--precision fp8: GPU %s has no FP8 tensor cores (FP8 training needs Hopper or later); "
                         "use --precision bf16", w->gpu.name);
    /* MXFP8 and NVFP4 need Blackwell's block-scaled tensor cores: the catalog's fp4 rate, 0 on
     * Hopper and older (TE refuses the recipes there: transformer_engine/pytorch/fp8.py
     * check_mxfp8_support / check_nvfp4_support, compute capability 10.0 or later) */
    if ((unsigned)s->precision < PP_PREC_COUNT && pp_precision_info[s->precision].block_scaled && w->gpu.name[0] &&
        !(w->gpu.peak_flops[PP_DT_FP4] > 0))
        return STACK_BAD("--precision %s: GPU %s has no block-scaled (MX/NVFP4) tensor cores; %s training needs "
                         "Blackwell (b200, b300, gb200, gb300); use --precision fp8 or bf16",
                         pp_precision_names[s->precision], w->gpu.name, pp_precision_names[s->precision]);
    if ((unsigned)s->precision < PP_PREC_COUNT && pp_precision_info[s->precision].block_scaled &&
        w->framework != PP_FW_MEGATRON)
        return STACK_BAD("--precision %s is modelled as TransformerEngine's recipe under Megatron-Core (--framework "
                         "megatron), not --framework %s",
                         pp_precision_names[s->precision], pp_framework_names[w->framework]);
    const pp_model *m = &w->model;
    double ad = 0, hd = 0;
    pp_work_dropout(w, &ad, &hd);
    if (!(ad >= 0 && ad < 1) || !(hd >= 0 && hd < 1))
        return STACK_BAD("--attention-dropout and --hidden-dropout must be in [0, 1), got %g and %g", ad, hd);
    if ((unsigned)s->precision >= PP_PREC_COUNT || (unsigned)s->impl >= PP_IMPL_COUNT ||
        (unsigned)s->dispatcher >= PP_DISPATCH_COUNT)
        return STACK_BAD("the training stack has an unknown precision, implementation or dispatcher");
    if (!(s->moe_capacity_factor >= 0 && s->moe_capacity_factor <= 1000))
        return STACK_BAD("--capacity-factor must be between 0 (dropless) and 1000, got %g", s->moe_capacity_factor);
    if (!(s->moe_imbalance >= 1 && s->moe_imbalance <= 100000))
        return STACK_BAD("--moe-imbalance must be at least 1 (the busiest expert over the mean), got %g",
                         s->moe_imbalance);
    /* The busiest expert gets at most every token once: E / topk times its fair share. */
    if (pp_model_is_moe(m) && m->topk > 0 && s->moe_imbalance > (double)m->experts / (double)m->topk)
        return STACK_BAD("--moe-imbalance %g is more than experts / topk = %lld / %lld (every token on the busiest expert)",
                         s->moe_imbalance, (long long)m->experts, (long long)m->topk);
    if (s->impl_given && w->framework != PP_FW_MEGATRON)
        return STACK_BAD("--impl is Megatron-LM's transformer implementation: not with --framework %s",
                         pp_framework_names[w->framework]);
    if (s->grad_bf16 && (w->framework != PP_FW_MEGATRON || s->precision == PP_PREC_FP16))
        return STACK_BAD("--grad-reduce-bf16 is Megatron's bf16 gradient buffer: with --framework megatron "
                         "and --precision bf16 or fp8 (fp16 gradients are 16-bit already)");
    if (s->no_attention_mask && w->framework != PP_FW_MEGATRON)
        return STACK_BAD("--no-attention-mask is about Megatron's dataloader mask: with --framework megatron, not %s",
                         pp_framework_names[w->framework]);
    if (s->megatron_fsdp && w->framework != PP_FW_MEGATRON)
        return STACK_BAD("--megatron-fsdp is Megatron-Core's FSDP: with --framework megatron, not %s "
                         "(--framework fsdp is PyTorch's FSDP2)", pp_framework_names[w->framework]);
    if ((s->fsdp_double_buffer || s->fsdp_unit_size || s->fsdp_grads_fp32) && !s->megatron_fsdp)
        return STACK_BAD("--%s is Megatron-FSDP's: with --megatron-fsdp",
                         s->fsdp_double_buffer ? "fsdp-double-buffer" : s->fsdp_unit_size ? "fsdp-unit-size" : "fsdp-grads-fp32");
    if (s->fsdp_unit_size < 0) return STACK_BAD("--fsdp-unit-size must be positive");
    if (s->no_sync_accum && w->framework != PP_FW_FSDP)
        return STACK_BAD("--no-sync-accumulation is PyTorch FSDP2's gradient sync (set_requires_gradient_sync): with "
                         "--framework fsdp, not %s", pp_framework_names[w->framework]);
    if (s->keep_logits && w->framework != PP_FW_FSDP)
        return STACK_BAD("--keep-logits is about a PyTorch FSDP2 training loop's reference to the logits: with "
                         "--framework fsdp, not %s", pp_framework_names[w->framework]);
    if (s->repeat_kv && w->framework != PP_FW_FSDP)
        return STACK_BAD("--repeat-kv is about a PyTorch model's attention before SDPA (torchtitan up to v0.2.1): with "
                         "--framework fsdp, not %s", pp_framework_names[w->framework]);
    if (s->compile_loss && w->framework != PP_FW_FSDP)
        return STACK_BAD("--compile-loss is torch.compile of a PyTorch training loop's loss function: with "
                         "--framework fsdp, not %s", pp_framework_names[w->framework]);
    if (pp_work_cp_comm(w) == PP_CPC_TORCH && w->framework != PP_FW_FSDP)
        return STACK_BAD("--cp-comm torch is PyTorch's context_parallel ring (torchtitan): with --framework fsdp, "
                         "not %s", pp_framework_names[w->framework]);
    if (s->compile_loss && pp_work_loss(w) == PP_LOSS_CUT)
        return STACK_BAD("--compile-loss with --loss cut: cut cross-entropy forms no logits to compile a loss over "
                         "(leave one out)");
    if (s->router_holds_recompute && w->framework != PP_FW_FSDP)
        return STACK_BAD("--router-holds-recompute is about a PyTorch MoE router under torch.utils.checkpoint: with "
                         "--framework fsdp, not %s", pp_framework_names[w->framework]);
    if (s->expert_pad_loop && w->framework != PP_FW_FSDP)
        return STACK_BAD("--expert-pad-loop is about a PyTorch MoE layer's Python loops: with --framework fsdp, not %s",
                         pp_framework_names[w->framework]);
    if (s->optimizer_bf16 && w->framework != PP_FW_MEGATRON)
        return STACK_BAD("--optimizer-dtype bf16 is NeMo's distributed_fused_adam (Megatron models): with --framework "
                         "megatron, not %s", pp_framework_names[w->framework]);
    if ((unsigned)s->ce_fusion >= PP_CE_COUNT)
        return STACK_BAD("the training stack has an unknown cross-entropy implementation");
    if (s->act_unfused && w->framework != PP_FW_MEGATRON)
        return STACK_BAD("--no-bias-act-fusion is Megatron's bias-activation fusion: with --framework megatron, not %s",
                         pp_framework_names[w->framework]);
    if (s->ce_fusion != PP_CE_NONE && w->framework != PP_FW_MEGATRON)
        return STACK_BAD("--cross-entropy-fusion is Megatron's fused cross-entropy: with --framework megatron, not %s",
                         pp_framework_names[w->framework]);
    if ((unsigned)s->sdpa_backend >= PP_SDPA_COUNT) return STACK_BAD("the training stack has an unknown SDPA backend");
    if ((unsigned)s->fp8_scaling >= PP_FP8_SCALING_COUNT) return STACK_BAD("the training stack has an unknown FP8 scaling");
    if ((unsigned)s->eager_norm >= PP_ENORM_COUNT) return STACK_BAD("the training stack has an unknown eager norm");
    if ((unsigned)s->tp_vocab >= PP_TPV_COUNT) return STACK_BAD("the training stack has an unknown TP vocabulary split");
    if (s->tp_vocab != PP_TPV_SHARDED && w->framework != PP_FW_FSDP)
        return STACK_BAD("--tp-vocab %s is FSDP2 + TP's plan for the embedding and the logits: with --framework fsdp, "
                         "not %s (Megatron's are vocab-parallel)", pp_tp_vocab_names[s->tp_vocab],
                         pp_framework_names[w->framework]);
    if ((unsigned)s->te_attention >= PP_TEATTN_COUNT) return STACK_BAD("the training stack has an unknown TE attention");
    if (s->te_attention != PP_TEATTN_CUDNN) {
        if (w->framework != PP_FW_MEGATRON)
            return STACK_BAD("--te-attention %s is TransformerEngine's attention under Megatron: with --framework megatron, "
                             "not %s (FSDP2's is --sdpa-backend)", pp_te_attention_names[s->te_attention],
                             pp_framework_names[w->framework]);
        if (s->impl == PP_IMPL_LOCAL || w->attention == PP_ATTN_UNFUSED)
            return STACK_BAD("--te-attention %s is a fused kernel of TransformerEngine: not with %s",
                             pp_te_attention_names[s->te_attention],
                             s->impl == PP_IMPL_LOCAL ? "--impl local" : "--attention unfused");
    }
    if (s->eager_norm != PP_ENORM_FUSED) {
        if (w->framework != PP_FW_FSDP)
            return STACK_BAD("--eager-norm %s is eager PyTorch's RMSNorm: with --framework fsdp, not %s",
                             pp_eager_norm_names[s->eager_norm], pp_framework_names[w->framework]);
        if (s->compile)
            return STACK_BAD("--eager-norm %s with --compile: Inductor fuses the block's RMSNorm ops into "
                             "one kernel each way, as the fused norm runs (leave --eager-norm out)",
                             pp_eager_norm_names[s->eager_norm]);
        if (w->model.norm != PP_NORM_RMSNORM)
            return STACK_BAD("--eager-norm %s is RMSNorm's; model %s uses %s, which torch runs fused",
                             pp_eager_norm_names[s->eager_norm], w->model.name, pp_norm_names[w->model.norm]);
    }
    if (s->fp8_scaling != PP_FP8_TENSORWISE && (w->framework != PP_FW_FSDP || s->precision != PP_PREC_FP8))
        return STACK_BAD("--fp8-scaling %s is torchao's float8 recipe: with --framework fsdp --precision fp8, not %s %s "
                         "(Megatron's FP8 is per-tensor: --precision fp8; its blocks of 32: mxfp8)",
                         pp_fp8_scaling_names[s->fp8_scaling], pp_framework_names[w->framework],
                         pp_precision_names[s->precision]);
    if ((unsigned)s->flex_backend >= PP_FLEX_COUNT) return STACK_BAD("the training stack has an unknown flex backend");
    if (s->flex_backend != PP_FLEX_DEEPEP && s->dispatcher != PP_DISPATCH_FLEX)
        return STACK_BAD("--moe-flex-backend %s is the flex dispatcher's library: with --moe-dispatcher flex, not %s",
                         pp_flex_backend_names[s->flex_backend], pp_dispatch_names[s->dispatcher]);
    if (s->sdpa_backend != PP_SDPA_FLASH && w->framework != PP_FW_FSDP)
        return STACK_BAD("--sdpa-backend is torch's scaled_dot_product_attention kernel under --framework fsdp, not %s "
                         "(Megatron's attention is --impl and --attention)", pp_framework_names[w->framework]);
    const unsigned cg = s->cuda_graphs, cg_none = 1u << PP_CG_NONE, cg_full = 1u << PP_CG_FULL_ITERATION;
    if (cg >> PP_CG_COUNT) return STACK_BAD("--cuda-graphs: unknown part");
    if (cg && w->framework != PP_FW_MEGATRON)
        return STACK_BAD("--cuda-graphs is Megatron's (--cuda-graph-impl): with --framework megatron, not %s",
                         pp_framework_names[w->framework]);
    if (((cg & cg_none) && cg != cg_none) || ((cg & cg_full) && cg != cg_full))
        return STACK_BAD("--cuda-graphs: none and full_iteration stand alone (Megatron's full_iteration takes no "
                         "--cuda-graph-modules)");
    /* arguments.py --cuda-graph-modules: "moe_preprocess ... must be used together with moe_router" */
    if ((cg & (1u << PP_CG_MOE_PREPROCESS)) && !(cg & (1u << PP_CG_MOE_ROUTER)))
        return STACK_BAD("--cuda-graphs: moe_preprocess needs moe_router (Megatron's --cuda-graph-modules)");
    if ((cg & (1u << PP_CG_MOE)) && (cg & (1u << PP_CG_MOE_ROUTER)))
        return STACK_BAD("--cuda-graphs: moe captures the whole MoE part; moe_router and moe_preprocess are parts of it");
    /* Megatron's layer-wise activation offloading (transformer_config.py __post_init__ at d98e8a64:
     * "CPU offloading can be done only for layers less than num_layers"; "CUDA graphs not supported
     * with CPU offloading" unless full_iteration); its pipeline and recompute limits are the layout's */
    if (s->cpu_offload_layers < 0) return STACK_BAD("--cpu-offload-layers must not be negative");
    if (s->cpu_offload_layers > 0) {
        if (w->framework != PP_FW_MEGATRON)
            return STACK_BAD("--cpu-offload-layers is Megatron's (--cpu-offloading-num-layers): with --framework "
                             "megatron, not %s", pp_framework_names[w->framework]);
        if (s->cpu_offload_layers >= m->layers)
            return STACK_BAD("--cpu-offload-layers %lld: Megatron offloads fewer layers than the model's %lld "
                             "(the last layer stays on the GPU)", (long long)s->cpu_offload_layers,
                             (long long)m->layers);
        if (cg && cg != cg_none && cg != cg_full)
            return STACK_BAD("--cpu-offload-layers does not combine with per-layer --cuda-graphs (Megatron: "
                             "\"CUDA graphs not supported with CPU offloading\" unless full_iteration)");
    }
    if (s->vocab_divisible_by < 0) return STACK_BAD("--vocab-divisible-by must be positive");
    if (s->vocab_divisible_by > 0 && w->framework != PP_FW_MEGATRON)
        return STACK_BAD("--vocab-divisible-by is Megatron's vocabulary padding (--make-vocab-size-divisible-by): with "
                         "--framework megatron, not %s", pp_framework_names[w->framework]);
    if (s->fp8_param_gather && w->framework != PP_FW_MEGATRON)
        return STACK_BAD("--fp8-param-gather is Megatron's (TransformerEngine FP8 parameters): with --framework megatron, "
                         "not %s", pp_framework_names[w->framework]);
    if ((unsigned)s->main_params_dtype > PP_OPT_FP16 || (unsigned)s->exp_avg_dtype >= PP_OPT_DTYPE_COUNT ||
        (unsigned)s->exp_avg_sq_dtype >= PP_OPT_DTYPE_COUNT)
        return STACK_BAD("the training stack has an unknown optimizer dtype");
    bool precision_aware = pp_work_precision_aware(w);
    if (precision_aware && w->framework != PP_FW_MEGATRON)
        return STACK_BAD("--precision-aware-optimizer / --main-params-dtype / --exp-avg-dtype / --exp-avg-sq-dtype are "
                         "Megatron's precision-aware optimizer: with --framework megatron, not %s",
                         pp_framework_names[w->framework]);
    if (s->dist_fused_adam && w->framework != PP_FW_MEGATRON)
        return STACK_BAD("--distributed-fused-adam is NeMo 1.x's optimizer (Megatron models): with --framework "
                         "megatron, not %s", pp_framework_names[w->framework]);
    if (precision_aware && pp_work_dist_fused_adam(w))
        return STACK_BAD("NeMo's distributed_fused_adam (--distributed-fused-adam, --optimizer-dtype bf16) and Megatron's "
                         "precision-aware optimizer (--precision-aware-optimizer, --main-params-dtype, --exp-avg-dtype, "
                         "--exp-avg-sq-dtype) are two optimizers: give one");
    if (s->param_bf16 && w->framework != PP_FW_FSDP)
        return STACK_BAD("--param-dtype is the dtype of FSDP2's sharded parameters: with --framework fsdp, not %s "
                         "(Megatron: --optimizer-dtype)", pp_framework_names[w->framework]);
    if (s->loss >= PP_LOSS_COUNT)
        return STACK_BAD("the training stack has an unknown loss implementation");
    if (s->loss >= PP_LOSS_TORCH && w->framework != PP_FW_FSDP)
        return STACK_BAD("--loss is the loss of PyTorch's FSDP training: with --framework fsdp, not %s "
                         "(Megatron: --cross-entropy-fusion)", pp_framework_names[w->framework]);
    if (s->compile && w->framework != PP_FW_FSDP)
        return STACK_BAD("--compile is torch.compile of PyTorch's FSDP training: with --framework fsdp, not %s",
                         pp_framework_names[w->framework]);
    /* --tp-comm-overlap: TransformerEngine's userbuffers under Megatron; torchtitan's async TP
     * (parallelism.enable_async_tensor_parallel) under fsdp, which torchtitan runs only compiled */
    if (s->tp_comm_overlap && w->framework == PP_FW_FSDP && !s->compile)
        return STACK_BAD("--tp-comm-overlap with --framework fsdp is torchtitan's async TP, which needs --compile");
    if (s->tp_comm_overlap && w->framework != PP_FW_MEGATRON && w->framework != PP_FW_FSDP)
        return STACK_BAD("--tp-comm-overlap is Megatron-LM's (TransformerEngine userbuffers) or torchtitan's async TP: "
                         "not with --framework %s", pp_framework_names[w->framework]);
    if ((unsigned)s->finetune >= PP_FT_COUNT || (unsigned)s->lora_targets >= PP_LORA_TARGETS_COUNT || s->lora_rank < 0)
        return STACK_BAD("the training stack has an unknown fine-tuning mode, LoRA target set or rank");
    if (s->finetune != PP_FT_LORA && (s->lora_rank > 0 || s->lora_targets != PP_LORA_ALL))
        return STACK_BAD("--lora-rank and --lora-targets describe LoRA adapters: with --finetune lora");
    /* LoRA is modelled as Megatron-Bridge runs it (peft/lora.py over Megatron-Core): the FSDP and
     * DeepSpeed memory and step models keep every parameter trainable, and routed experts' adapters
     * (grouped-expert LoRA) are not described */
    if (s->finetune == PP_FT_LORA && w->framework != PP_FW_MEGATRON)
        return STACK_BAD("--finetune lora is modelled for Megatron-Bridge's LoRA (--framework megatron), not --framework %s",
                         pp_framework_names[w->framework]);
    if (s->finetune == PP_FT_LORA && pp_model_is_moe(m))
        return STACK_BAD("--finetune lora: adapters on routed experts (Megatron-Bridge's grouped-expert LoRA) are not "
                         "modelled; %s is an MoE model", m->name);
    if (s->finetune == PP_FT_LORA && (s->megatron_fsdp || pp_model_is_mla(m)))
        return STACK_BAD("--finetune lora is modelled for Megatron-Core's DDP and distributed optimizer on standard "
                         "attention (not Megatron-FSDP, not multi-latent attention)");
    if (w->framework != PP_FW_MEGATRON) return PP_OK;
    pp_impl impl = pp_work_impl(w);
    if (impl != PP_IMPL_LOCAL) return PP_OK;
    const char *why = s->impl_given ? "--impl local" : "--attention unfused (Megatron's local implementation; add --impl te for TransformerEngine's unfused attention)";
    if (pp_precision_quantized(s->precision))
        return STACK_BAD("--precision %s needs TransformerEngine: not with %s", pp_precision_names[s->precision], why);
    if (s->impl_given && w->attention == PP_ATTN_FLASH)
        return STACK_BAD("--attention flash: Megatron's local implementation has no flash attention "
                         "(megatron/core/transformer/dot_product_attention.py is unfused); use --impl te or --attention unfused");
    if (s->tp_comm_overlap)
        return STACK_BAD("--tp-comm-overlap needs TransformerEngine (userbuffers): not with %s", why);
    if (s->grouped_gemm)
        return STACK_BAD("--moe-grouped-gemm needs TransformerEngine: Megatron's local implementation runs the experts "
                         "one by one (SequentialMLP, megatron/core/models/backends.py); not with %s", why);
    return PP_OK;
}

void pp_strcatf(char *buf, size_t n, const char *fmt, ...)
{
    size_t k = strlen(buf);
    if (k + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + k, n - k, fmt, ap);
    va_end(ap);
}

void pp_strlistf(char *buf, size_t n, const char *fmt, ...)
{
    size_t k = strlen(buf);
    if (k + 8 >= n) return;
    if (k) k += (size_t)snprintf(buf + k, n - k, ", ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + k, n - k, fmt, ap);
    va_end(ap);
}

pp_status pp_error_set(pp_error *err, pp_status status, const char *file, int line, int col,
                       const char *fmt, ...)
{
    if (!err) return status;
    err->status = status;
    snprintf(err->file, sizeof err->file, "%s", file ? file : "");
    err->line = line;
    err->col = col;
    char raw[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    /* An error is one line: control characters from user input (a key holding a newline, say)
     * are written as C escapes so the message cannot span lines or move the cursor. */
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)raw; *p && o + 5 < sizeof err->msg; p++) {
        if (*p >= 0x20 && *p != 0x7f) {
            err->msg[o++] = (char)*p;
        } else if (*p == '\n' || *p == '\t' || *p == '\r') {
            err->msg[o++] = '\\';
            err->msg[o++] = *p == '\n' ? 'n' : *p == '\t' ? 't' : 'r';
        } else {
            o += (size_t)snprintf(err->msg + o, sizeof err->msg - o, "\\x%02x", *p);
        }
    }
    err->msg[o] = 0;
    return status;
}

void pp_error_format(const pp_error *err, char *buf, size_t n)
{
    if (!err || !n) return;
    if (err->file[0] && err->line > 0 && err->col > 0)
        snprintf(buf, n, "%s:%d:%d: %s", err->file, err->line, err->col, err->msg);
    else if (err->file[0] && err->line > 0)
        snprintf(buf, n, "%s:%d: %s", err->file, err->line, err->msg);
    else if (err->file[0])
        snprintf(buf, n, "%s: %s", err->file, err->msg);
    else
        snprintf(buf, n, "%s", err->msg);
}

int pp_name_lookup(const char *const *names, int n, const char *name)
{
    if (!name) return -1;
    for (int i = 0; i < n; i++)
        if (names[i] && strcmp(names[i], name) == 0) return i;
    return -1;
}

void pp_layout_init(pp_layout *l)
{
    memset(l, 0, sizeof *l);
    l->tp = l->pp = l->vpp = l->cp = l->ep = l->mbs = 1;
    l->dp = 0; /* 0: derived from the GPU count */
}

int64_t pp_layout_group_per_node(int64_t n, int64_t stride, int64_t gpn)
{
    if (stride >= gpn) return 1;
    int64_t k = gpn / stride;
    return k < n ? k : n;
}

int64_t pp_layout_microbatches(const pp_work *w, const pp_layout *l)
{
    int64_t per = l->dp * l->mbs;
    return per > 0 ? w->gbs / per : 0;
}

int64_t pp_layout_etp(const pp_layout *l) { return l->etp > 0 ? l->etp : l->tp; }

int64_t pp_layout_edp(const pp_layout *l)
{
    int64_t e = pp_layout_etp(l) * (l->ep > 0 ? l->ep : 1);
    int64_t g = l->tp * l->cp * (l->dp > 0 ? l->dp : 1);
    return e > 0 && g >= e ? g / e : 1;
}

void pp_fsdp_shards(const pp_layout *l, double *dense, double *expert)
{
    const double R = l->replicate > 1 ? (double)l->replicate : 1.0;
    *dense = l->zero >= 2 ? fmax(1.0, (double)(l->dp * l->cp) / R) : 1.0;
    *expert = l->zero >= 2 ? fmax(1.0, (double)pp_layout_edp(l) / R) : 1.0;
}

bool pp_fsdp_fp8_gather(const pp_work *w, const pp_layout *l)
{
    double shard, expert;
    pp_fsdp_shards(l, &shard, &expert);
    return w->stack.precision == PP_PREC_FP8 && w->stack.fp8_scaling == PP_FP8_TENSORWISE && shard > 1;
}

int64_t pp_layout_stage_first_layer(const pp_work *w, const pp_layout *l, int64_t stage)
{
    if (l->vstage_layers || pp_layout_vstages_uneven(w, l)) return pp_layout_vstage_first_layer(w, l, stage, 0);
    if (l->stage_layers) {
        int64_t f = 0;
        for (int64_t i = 0; i < stage; i++) f += l->stage_layers[i];
        return f;
    }
    int64_t L = w->model.layers, p = l->pp, r = L % p;
    return stage * (L / p) + (stage < r ? stage : r);
}

int64_t pp_layout_stage_layers(const pp_work *w, const pp_layout *l, int64_t stage)
{
    if (l->stage_layers) return l->stage_layers[stage];
    if (l->vstage_layers || pp_layout_vstages_uneven(w, l)) {
        int64_t n = 0;
        for (int64_t j = 0; j < (l->vpp > 1 ? l->vpp : 1); j++) n += pp_layout_vstage_layers(w, l, stage, j);
        return n;
    }
    int64_t L = w->model.layers, p = l->pp;
    return L / p + (stage < L % p ? 1 : 0);
}

bool pp_layout_vstages_uneven(const pp_work *w, const pp_layout *l)
{
    if (l->vpp < 2 || l->stage_layers) return false;
    return l->vstage_layers || (l->pp > 0 && w->model.layers % (l->pp * l->vpp));
}

/* The balanced split's MTP slots: the MTP layers count as layers of the last virtual stage when
 * its share of the slots can hold them beside the loss, else not at all. */
static int64_t vstage_mtp_slots(const pp_work *w, int64_t n_vstages)
{
    int64_t L = w->model.layers, mtp = w->model.mtp_layers > 0 ? w->model.mtp_layers : 0;
    return (L + 2 + mtp) / n_vstages >= 1 + mtp ? mtp : 0;
}

int64_t pp_layout_vstage_layers(const pp_work *w, const pp_layout *l, int64_t stage, int64_t chunk)
{
    int64_t p = l->pp, v = l->vpp > 1 ? l->vpp : 1, L = w->model.layers;
    if (l->vstage_layers) return l->vstage_layers[chunk * p + stage];
    if (v == 1) return pp_layout_stage_layers(w, l, stage);
    if (l->stage_layers) {
        int64_t n = l->stage_layers[stage];
        return n / v + (chunk < n % v ? 1 : 0);
    }
    int64_t N = p * v;
    if (L % N == 0) return L / N;
    /* balanced: S slots (the layers, the embedding, the loss, the MTP layers that fit) over the
     * N virtual stages in model order, the first S % N of them one more */
    int64_t mtp = vstage_mtp_slots(w, N), S = L + 2 + mtp, k = chunk * p + stage;
    int64_t slots = S / N + (k < S % N ? 1 : 0);
    return slots - (k == 0 ? 1 : 0) - (k == N - 1 ? 1 + mtp : 0);
}

int64_t pp_layout_vstage_first_layer(const pp_work *w, const pp_layout *l, int64_t stage, int64_t chunk)
{
    int64_t p = l->pp, v = l->vpp, k = chunk * p + stage, f = 0, L = w->model.layers;
    if (!l->vstage_layers && v > 1 && !l->stage_layers) {
        int64_t N = p * v;
        if (L % N == 0) return k * (L / N); /* uniform */
        /* balanced: the slots before virtual stage k less the embedding's (the loss and the
         * MTP layers are in the last one) */
        int64_t S = L + 2 + vstage_mtp_slots(w, N), q = S / N, r = S % N;
        return k == 0 ? 0 : k * q + (k < r ? k : r) - 1;
    }
    for (int64_t i = 0; i < k; i++) f += pp_layout_vstage_layers(w, l, i % p, i / p);
    return f;
}

int64_t pp_layout_vstage_recompute(const pp_work *w, const pp_layout *l, int64_t stage, int64_t chunk)
{
    if (l->recompute != PP_RC_FULL) return 0;
    int64_t n = pp_layout_vstage_layers(w, l, stage, chunk), v = l->vpp > 1 ? l->vpp : 1;
    int64_t k = l->recompute_layers > 0 ? (l->recompute_layers + v - 1) / v : n;
    return k < n ? k : n;
}

void pp_layout_canonical(const pp_work *w, pp_layout *l)
{
    if (!l->vstage_layers) return;
    pp_layout d = *l;
    d.vstage_layers = NULL;
    int64_t v = l->vpp > 1 ? l->vpp : 1;
    /* the default of a non-dividing interleaved split must be one the layout can have */
    if (v > 1 && l->pp * v > w->model.layers + 2 && w->model.layers % (l->pp * v)) return;
    for (int64_t k = 0; k < l->pp * v; k++)
        if (pp_layout_vstage_layers(w, &d, k % l->pp, k / l->pp) != l->vstage_layers[k]) return;
    l->vstage_layers = NULL;
}

#define LAYOUT_BAD(...) pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, __VA_ARGS__)

pp_status pp_layout_framework_check(const pp_work *w, const pp_layout *l, pp_error *err)
{
    if (l->zero > pp_work_fw(w)->max_zero)
        return LAYOUT_BAD("--zero %d: --framework %s has ZeRO stages 0-%d: %s", l->zero, pp_framework_names[w->framework],
                          pp_work_fw(w)->max_zero, pp_work_fw(w)->zero_why ? pp_work_fw(w)->zero_why : "");
    if (l->offload != PP_OFF_NONE && pp_work_fw(w)->no_offload)
        return LAYOUT_BAD("--offload %s: --framework %s offloads nothing to the host", pp_offload_names[l->offload],
                          pp_framework_names[w->framework]);
    if (l->vpp > 1 && pp_work_fw(w)->no_interleave)
        return LAYOUT_BAD("--vpp %lld: --framework %s has no interleaved pipeline schedule", (long long)l->vpp,
                          pp_framework_names[w->framework]);
    if (pp_work_fw(w)->full_recompute_only && (l->recompute == PP_RC_SELECTIVE || l->recompute_layers > 0))
        return LAYOUT_BAD("--framework %s recomputes every layer or none (--recompute full|none): no selective "
                          "recompute, no --recompute-layers", pp_framework_names[w->framework]);
    return PP_OK;
}

pp_status pp_layout_validate(const pp_work *w, pp_layout *l, pp_error *err)
{
    const pp_model *m = &w->model;
    struct { const char *flag; int64_t v; } sizes[] = {
        {"--tp", l->tp}, {"--pp", l->pp}, {"--vpp", l->vpp}, {"--cp", l->cp},
        {"--ep", l->ep}, {"--mbs", l->mbs},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].v < 1 || sizes[i].v > 1000000)
            return LAYOUT_BAD("%s must be between 1 and 1000000, got %lld", sizes[i].flag,
                              (long long)sizes[i].v);
    if (w->gpus < 1) return LAYOUT_BAD("--gpus must be at least 1");
    int64_t mp = l->tp * l->pp * l->cp;
    if (w->gpus % mp)
        return LAYOUT_BAD("tp*pp*cp = %lld does not divide --gpus %lld", (long long)mp,
                          (long long)w->gpus);
    if (l->dp == 0) l->dp = w->gpus / mp;
    if (l->dp < 1 || l->dp * mp != w->gpus)
        return LAYOUT_BAD("tp*pp*cp*dp = %lld x %lld must equal --gpus %lld", (long long)mp,
                          (long long)l->dp, (long long)w->gpus);
    if (m->heads % l->tp)
        return LAYOUT_BAD("--tp %lld does not divide the %lld attention heads", (long long)l->tp,
                          (long long)m->heads);
    if (m->kv_heads % l->tp && l->tp % m->kv_heads)
        return LAYOUT_BAD("--tp %lld and the %lld KV heads: neither divides the other",
                          (long long)l->tp, (long long)m->kv_heads);
    if (pp_model_moe_layers(m) < m->layers && m->ffn % l->tp)
        return LAYOUT_BAD("--tp %lld does not divide the FFN size %lld", (long long)l->tp,
                          (long long)m->ffn);
    if (l->pp > m->layers)
        return LAYOUT_BAD("--pp %lld is more than the %lld layers", (long long)l->pp,
                          (long long)m->layers);
    if (l->vpp > 1) {
        if (l->pp < 2) return LAYOUT_BAD("--vpp %lld needs --pp of at least 2", (long long)l->vpp);
        /* Not dividing: the balanced split (pp_layout_vstage_layers), one slot at least per
         * virtual stage. */
        if (!l->vstage_layers && !l->stage_layers && m->layers % (l->pp * l->vpp) &&
            (l->pp * l->vpp > PP_MAX_VSTAGES || l->pp > PP_MAX_STAGES))
            return LAYOUT_BAD("--pp %lld x --vpp %lld: at most %d stages and %d virtual stages where they do not "
                              "divide the layers", (long long)l->pp, (long long)l->vpp, PP_MAX_STAGES, PP_MAX_VSTAGES);
        if (!l->vstage_layers && !l->stage_layers && m->layers % (l->pp * l->vpp) &&
            l->pp * l->vpp > m->layers + 2)
            return LAYOUT_BAD("--pp %lld x --vpp %lld = %lld virtual stages: more than the %lld layers with the "
                              "embedding and the loss (give fewer, or --pipeline-layout with empty stages)",
                              (long long)l->pp, (long long)l->vpp, (long long)(l->pp * l->vpp),
                              (long long)m->layers);
    }
    if (l->vstage_layers) {
        int64_t nv = l->pp * (l->vpp > 1 ? l->vpp : 1), sum = 0;
        if (l->stage_layers || l->stage_recompute)
            return LAYOUT_BAD("a split by virtual stage excludes per-stage layer counts");
        if (nv > PP_MAX_VSTAGES || l->pp > PP_MAX_STAGES)
            return LAYOUT_BAD("--pp %lld x --vpp %lld: at most %d stages and %d virtual stages in an explicit split",
                              (long long)l->pp, (long long)l->vpp, PP_MAX_STAGES, PP_MAX_VSTAGES);
        for (int64_t k = 0; k < nv; k++) {
            if (l->vstage_layers[k] < 0) return LAYOUT_BAD("virtual stage %lld has a negative layer count", (long long)k);
            sum += l->vstage_layers[k];
        }
        if (sum != m->layers)
            return LAYOUT_BAD("the pipeline split holds %lld layers, the model has %lld", (long long)sum,
                              (long long)m->layers);
    }
    if (l->cp > 1 && m->seq % (2 * l->cp))
        return LAYOUT_BAD("--cp %lld: sequence %lld is not divisible by 2*cp", (long long)l->cp,
                          (long long)m->seq);
    if (l->ep > 1) {
        if (m->experts <= 1) return LAYOUT_BAD("--ep %lld needs a model with experts", (long long)l->ep);
        if (m->experts % l->ep)
            return LAYOUT_BAD("--ep %lld does not divide the %lld experts", (long long)l->ep,
                              (long long)m->experts);
    }
    if (l->etp < 0 || l->etp > 1000000) return LAYOUT_BAD("--etp must be between 1 and 1000000");
    if (l->etp > 0 && m->experts <= 1 && l->etp != l->tp)
        return LAYOUT_BAD("--etp %lld needs a model with experts", (long long)l->etp);
    if (m->experts > 1) {
        /* Megatron-Core's MoE parallel folding: the experts of a pipeline stage use the grid
         * tp*cp*dp = etp * ep * edp (megatron/core/parallel_state.py, initialize_model_parallel:
         * expert_tensor_parallel_size x expert_model_parallel_size must divide the
         * tensor x context x data-parallel world of a stage). */
        int64_t etp = pp_layout_etp(l), grid = l->tp * l->cp * l->dp;
        if (grid % (etp * l->ep))
            return LAYOUT_BAD("--ep %lld x --etp %lld = %lld must divide tp*cp*dp = %lld",
                              (long long)l->ep, (long long)etp, (long long)(etp * l->ep),
                              (long long)grid);
        if (pp_model_expert_ffn(m) % etp)
            return LAYOUT_BAD("--etp %lld does not divide the expert FFN size %lld", (long long)etp,
                              (long long)pp_model_expert_ffn(m));
        if (m->shared_ffn % l->tp)
            return LAYOUT_BAD("--tp %lld does not divide the shared-expert FFN size %lld",
                              (long long)l->tp, (long long)m->shared_ffn);
        /* Megatron-Core raises at the first forward of an MoE layer with TP > 1 and no sequence
         * parallelism (seen on the lent H200s with 2026-08 Megatron-LM). */
        if (w->framework == PP_FW_MEGATRON && l->tp > 1 && !l->sp)
            return LAYOUT_BAD("MoE with --tp %lld needs --sp: Megatron refuses to train MoE layers under "
                              "tensor parallelism without sequence parallelism "
                              "(megatron/core/transformer/moe/moe_layer.py, MoELayer.forward)",
                              (long long)l->tp);
    }
    /* LoRA's frozen base is modelled unsharded (Megatron-Core's DDP or distributed optimizer):
     * ZeRO-2/3 and offload would shard or move weights without gradients, which is not described */
    if (pp_work_lora(w) && (l->zero >= 2 || l->offload != PP_OFF_NONE))
        return LAYOUT_BAD("--finetune lora is modelled with Megatron's DDP or distributed optimizer (--zero 0|1, "
                          "--dist-opt), not --zero %d or --offload", l->zero);
    if (l->sp && l->tp < 2) return LAYOUT_BAD("--sp needs --tp of at least 2");
    /* Sequence parallelism scatters the [s/cp, b, h] activations along the sequence over the TP
     * ranks (megatron/core/tensor_parallel/mappings.py: "First dimension of the tensor should be
     * divisible by tensor parallel size"). */
    if (l->sp && (m->seq / (l->cp > 0 ? l->cp : 1)) % l->tp)
        return LAYOUT_BAD("--sp: the sequence shard %lld (sequence %lld / cp %lld) is not divisible by --tp %lld",
                          (long long)(m->seq / (l->cp > 0 ? l->cp : 1)), (long long)m->seq, (long long)l->cp,
                          (long long)l->tp);
    /* Megatron's local (torch) norm modules refuse sequence parallelism
     * (megatron/core/transformer/torch_norm.py asserts on config.sequence_parallel). */
    if (l->sp && pp_work_torch_norms(w))
        return LAYOUT_BAD("--sp needs Transformer Engine's norms: Megatron's local implementation (--impl local) "
                          "refuses sequence parallelism (megatron/core/transformer/torch_norm.py)");
    if (l->zero < 0 || l->zero > 3) return LAYOUT_BAD("--zero must be 0, 1, 2 or 3");
    if (l->zero > 0 && l->dist_opt) return LAYOUT_BAD("--zero and --dist-opt exclude each other");
    if (pp_work_fp8_params(w) && !l->dist_opt && l->zero < 1)
        return LAYOUT_BAD("--fp8-param-gather needs the distributed optimizer: give --dist-opt (Megatron's "
                          "arguments.py asserts it), or --megatron-fsdp with --zero");
    if (l->zero > 0 && w->framework == PP_FW_MEGATRON && !w->stack.megatron_fsdp)
        return LAYOUT_BAD("--zero %d is DeepSpeed/FSDP; with --framework megatron use --dist-opt (or --megatron-fsdp)",
                          l->zero);
    if (w->stack.megatron_fsdp && l->zero < 1)
        return LAYOUT_BAD("--megatron-fsdp shards with --zero 1|2|3 (Megatron-FSDP's data-parallel sharding strategy "
                          "optim | optim_grads | optim_grads_params)");
    if (l->dist_opt && w->framework != PP_FW_MEGATRON)
        return LAYOUT_BAD("--dist-opt is Megatron's; with --framework %s use --zero 1",
                          pp_framework_names[w->framework]);
    if (pp_layout_framework_check(w, l, err) != PP_OK) return PP_ERR_INPUT;
    if (l->zero >= 2 && l->pp > 1 && w->framework == PP_FW_DEEPSPEED)
        return LAYOUT_BAD("DeepSpeed does not combine ZeRO stage %d with pipeline parallelism", l->zero);
    if (l->replicate < 0) return LAYOUT_BAD("--replicate must be at least 1");
    if (l->replicate > 1) {
        /* HSDP (FSDP2 on a 2-D mesh, torchtitan data_parallel_replicate_degree): parameters are
         * sharded within each replica group and replicated across them. */
        if (w->framework != PP_FW_FSDP)
            return LAYOUT_BAD("--replicate %lld is HSDP: only with --framework fsdp", (long long)l->replicate);
        if (l->zero < 2)
            return LAYOUT_BAD("--replicate %lld shards within each replica: needs --zero 2 or 3", (long long)l->replicate);
        if (l->dp % l->replicate)
            return LAYOUT_BAD("--replicate %lld does not divide the %lld data-parallel ranks (--dp)",
                              (long long)l->replicate, (long long)l->dp);
    }
    if (l->recompute_layers < 0) return LAYOUT_BAD("--recompute-layers must not be negative");
    if (w->stack.ep_overlap && w->framework == PP_FW_MEGATRON) {
        /* Megatron-Core's EP all-to-all overlap (transformer_config.py __post_init__). */
        if (l->ep < 2) return LAYOUT_BAD("--ep-overlap needs --ep of at least 2");
        if (w->stack.dispatcher == PP_DISPATCH_ALLGATHER)
            return LAYOUT_BAD("--ep-overlap needs the alltoall or flex dispatcher");
        if (l->recompute == PP_RC_FULL) return LAYOUT_BAD("--ep-overlap does not combine with --recompute full");
        /* (Megatron also wants --vpp with pp > 1; DeepSeek's DualPipe overlaps without it: the
         * Megatron launch writer refuses that case, the models price both.) */
    }
    if (l->recompute_modules && l->recompute != PP_RC_SELECTIVE)
        return LAYOUT_BAD("--recompute-modules needs --recompute selective");
    if (l->recompute_modules >> PP_RCM_COUNT) return LAYOUT_BAD("--recompute-modules: unknown module");
    if ((l->recompute_modules & (1u << PP_RCM_MLA_UP_PROJ)) && m->kv_lora_rank == 0)
        return LAYOUT_BAD("--recompute-modules mla_up_proj needs a model with multi-latent attention");
    if ((l->recompute_modules & ((1u << PP_RCM_MOE_ACT) | (1u << PP_RCM_MOE))) && m->experts <= 1)
        return LAYOUT_BAD("--recompute-modules moe_act and moe need a model with experts");
    /* Megatron-Core (transformer_config.py __post_init__): "moe_act in recompute_modules is only
     * supported with moe_grouped_gemm". */
    if ((l->recompute_modules & (1u << PP_RCM_MOE_ACT)) && !w->stack.grouped_gemm)
        return LAYOUT_BAD("--recompute-modules moe_act needs --moe-grouped-gemm (Megatron recomputes the "
                          "expert activation only in its grouped-GEMM experts)");
    if ((l->recompute_modules & (1u << PP_RCM_SHARED_EXPERTS)) && m->shared_ffn == 0)
        return LAYOUT_BAD("--recompute-modules shared_experts needs a model with shared experts");
    if (l->recompute_layers > 0 && l->recompute != PP_RC_FULL)
        return LAYOUT_BAD("--recompute-layers needs --recompute full");
    /* transformer_config.py __post_init__ (d98e8a64): "Currently there is no support for Pipeline
     * parallelism with CPU offloading"; "CPU offloading does not work when activation recomputation
     * is enabled" */
    if (w->stack.cpu_offload_layers > 0 && l->pp > 1)
        return LAYOUT_BAD("--cpu-offload-layers needs --pp 1 (Megatron has no CPU offloading with pipeline parallelism)");
    if (w->stack.cpu_offload_layers > 0 && l->recompute != PP_RC_NONE)
        return LAYOUT_BAD("--cpu-offload-layers needs --recompute none (Megatron refuses CPU offloading with "
                          "activation recomputation)");
    int64_t per_stage_max = (m->layers + l->pp - 1) / l->pp;
    if (l->recompute_layers > per_stage_max)
        return LAYOUT_BAD("--recompute-layers %lld is more than the %lld layers of a stage",
                          (long long)l->recompute_layers, (long long)per_stage_max);
    if (w->gbs < 1) return LAYOUT_BAD("--gbs must be at least 1");
    if (w->gbs % (l->dp * l->mbs))
        return LAYOUT_BAD("--gbs %lld is not divisible by dp x mbs = %lld x %lld", (long long)w->gbs,
                          (long long)l->dp, (long long)l->mbs);
    int64_t mb = pp_layout_microbatches(w, l);
    if (l->vpp > 1 && mb % l->pp)
        return LAYOUT_BAD("the interleaved schedule needs micro-batches (%lld) divisible by --pp %lld",
                          (long long)mb, (long long)l->pp);
    if (l->stage_layers) {
        int64_t sum = 0;
        for (int64_t i = 0; i < l->pp; i++) {
            if (l->stage_layers[i] < 1) return LAYOUT_BAD("stage %lld has no layers", (long long)i);
            sum += l->stage_layers[i];
        }
        if (sum != m->layers)
            return LAYOUT_BAD("the stages hold %lld layers, the model has %lld", (long long)sum,
                              (long long)m->layers);
    }
    return PP_OK;
}

/* The one label of a layout (pp.h). */
const char *pp_layout_label(const pp_layout *l, char *buf, size_t n)
{
    if (!n) return buf;
    buf[0] = 0;
    pp_strcatf(buf, n, "tp%lld pp%lld dp%lld", (long long)l->tp, (long long)l->pp, (long long)l->dp);
    if (l->vpp > 1) pp_strcatf(buf, n, " vpp%lld", (long long)l->vpp);
    if (l->cp > 1) pp_strcatf(buf, n, " cp%lld", (long long)l->cp);
    if (l->ep > 1) pp_strcatf(buf, n, " ep%lld", (long long)l->ep);
    if (l->etp > 0 && l->etp != l->tp) pp_strcatf(buf, n, " etp%lld", (long long)l->etp);
    pp_strcatf(buf, n, " mbs%lld", (long long)l->mbs);
    if (l->zero > 0) pp_strcatf(buf, n, " zero%d", l->zero);
    if (l->dist_opt) pp_strcatf(buf, n, " dist-opt");
    if (l->sp) pp_strcatf(buf, n, " sp");
    if (l->recompute > PP_RC_NONE && l->recompute < PP_RC_COUNT) pp_strcatf(buf, n, " %s", pp_recompute_names[l->recompute]);
    if (l->recompute == PP_RC_FULL && l->recompute_layers > 0) pp_strcatf(buf, n, "(%lld)", (long long)l->recompute_layers);
    if (l->offload > PP_OFF_NONE && l->offload < PP_OFF_COUNT) pp_strcatf(buf, n, " offload=%s", pp_offload_names[l->offload]);
    if (l->replicate > 1) pp_strcatf(buf, n, " hsdp%lld", (long long)l->replicate);
    if (l->vstage_layers) {
        /* an explicit split: the layers of each virtual stage, runs as N*k ("vstages 1,2*30,0") */
        int64_t nv = l->pp * (l->vpp > 1 ? l->vpp : 1);
        pp_strcatf(buf, n, " vstages ");
        for (int64_t k = 0; k < nv;) {
            int64_t run = 1;
            while (k + run < nv && l->vstage_layers[k + run] == l->vstage_layers[k]) run++;
            pp_strcatf(buf, n, "%s%d", k ? "," : "", l->vstage_layers[k]);
            if (run > 1) pp_strcatf(buf, n, "*%lld", (long long)run);
            k += run;
        }
    }
    if (l->stage_layers) {
        /* uneven stages: "stages 21/19" (+ "rc 0/2" when some are recomputed) */
        pp_strcatf(buf, n, " stages ");
        for (int64_t i = 0; i < l->pp; i++) pp_strcatf(buf, n, "%s%d", i ? "/" : "", l->stage_layers[i]);
        bool any = false;
        for (int64_t i = 0; l->stage_recompute && i < l->pp; i++) any |= l->stage_recompute[i] > 0;
        if (any) {
            pp_strcatf(buf, n, " rc ");
            for (int64_t i = 0; i < l->pp; i++) pp_strcatf(buf, n, "%s%d", i ? "/" : "", l->stage_recompute[i]);
        }
    }
    return buf;
}

/* Levenshtein distance, case-insensitive, capped at cap + 1. */
static int edit_distance(const char *a, const char *b, int cap)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return cap + 1;
    int prev[65], cur[65];
    for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        int best = cur[0];
        for (size_t j = 1; j <= lb; j++) {
            int sub = prev[j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            if (cur[j] < best) best = cur[j];
        }
        if (best > cap) return cap + 1;
        memcpy(prev, cur, (lb + 1) * sizeof prev[0]);
    }
    return prev[lb];
}

const char *pp_did_you_mean(const char *name, const char *const *names, int n, char *buf, size_t len)
{
    buf[0] = 0;
    if (!name || !name[0]) return buf;
    size_t ln = strlen(name);
    /* names the given one begins (case-insensitive): "h100" -> h100-sxm, h100-pcie */
    for (int i = 0; i < n; i++)
        if (names[i] && strlen(names[i]) > ln && !strncasecmp(names[i], name, ln))
            pp_strcatf(buf, len, "%s%s", buf[0] ? ", " : "", names[i]);
    if (buf[0]) return buf;
    /* else the closest within a third of the length (at least 2 edits) */
    int cap = (int)ln / 3 > 2 ? (int)ln / 3 : 2, best = cap + 1;
    for (int i = 0; i < n; i++) {
        if (!names[i]) continue;
        int d = edit_distance(name, names[i], cap);
        if (d < best) {
            best = d;
            snprintf(buf, len, "%s", names[i]);
        } else if (d == best && d <= cap) {
            pp_strcatf(buf, len, ", %s", names[i]);
        }
    }
    return buf;
}

const char *pp_fmt_bytes(double bytes, char *buf, size_t n)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int i = 0;
    double v = bytes;
    while (fabs(v) >= 1024 && i < 5) {
        v /= 1024;
        i++;
    }
    if (!isfinite(v)) snprintf(buf, n, "?");
    else snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
    return buf;
}
