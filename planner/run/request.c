/* The request (pp_request.h): its option table and the one merge of catalog, --megatron-args
 * and flags into the work and layout every command plans from. */
#include "pp_request.h"
#include "pp_memory.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_ds_config.h"
#include "pp_pipeline.h"
#include "pp_tt_config.h"

/* Upper bounds: no count beyond these is meaningful, and they keep products within int64. */
#define MAX_GPUS 10000000.0
#define MAX_DIM 100000000.0

static const char *const zero_names[] = {"0", "1", "2", "3"};
static const char *const stages_names[] = {"uniform", "ilp", "auto"};
static const char *const optimizer_dtype_names[] = {"fp32", "bf16"};
/* --loss: pp_loss from PP_LOSS_TORCH on (pp_loss_names' spellings) */
static const char *const pp_torch_loss_names[] = {"upcast", "bf16", "cut"};
_Static_assert(PP_LOSS_TORCH + 3 == PP_LOSS_COUNT, "--loss names every torch loss");

#define F(field) offsetof(pp_request, field)
#define INT(n, f, k, lo, hi, h) {n, 0, PP_OPT_INT, F(f), k, lo, hi, NULL, 0, 0, h}
#define NUM(n, f, k, lo, hi, h) {n, 0, PP_OPT_NUM, F(f), k, lo, hi, NULL, 0, 0, h}
#define STR(n, f, k, h) {n, 0, PP_OPT_STR, F(f), k, 0, 0, NULL, 0, 0, h}
#define ENUM(n, f, k, names, cnt, h) {n, 0, PP_OPT_ENUM, F(f), k, 0, 0, names, cnt, 0, h}
#define FLAG(n, f, k, h) {n, 0, PP_OPT_FLAG, F(f), k, 0, 0, NULL, 0, 0, h}
#define SET(n, f, k, v, h) {n, 0, PP_OPT_SET, F(f), k, 0, 0, NULL, 0, v, h}

const pp_option pp_request_options[] = {
    STR("--model", model, PP_RQ_MODEL,
        "NAME|FILE|ORG/NAME[@REV]: catalog name, model YAML, HF config.json, or a Hugging Face Hub id read "
        "from the local Hub cache (HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub)"),
    STR("--gpu", gpu, PP_RQ_GPU, "NAME|FILE: catalog GPU or GPU YAML"),
    /* the GPU as the run had it, where it differs from the entry: the memory size (1 GiB to
     * 100,000 GiB) and the board power limit (checked against the entry's max_power_w once the
     * GPU is known, planner/model/gpu_power.c) */
    NUM("--gpu-mem-gib", gpu_mem_gib, PP_RQ_GPU_MEM, 1, 100000,
        "G: the GPU's memory in GiB as the run had it (overrides the entry's capacity)"),
    NUM("--gpu-power-w", gpu_power_w, PP_RQ_GPU_POWER, 1, 100000,
        "W: the GPU's power limit (at most the entry's max_power_w): lowers dense GEMM throughput"),
    STR("--profile", profile, PP_RQ_PROFILE, "FILE: hardware profile from `parplan probe`"),
    INT("--gpus", gpus, PP_RQ_GPUS, 1, MAX_GPUS, "N: total GPUs"),
    INT("--gpus-per-node", gpus_per_node, PP_RQ_GPN, 1, 1024, "N: GPUs per node (default: the GPU's)"),
    INT("--gbs", gbs, PP_RQ_GBS, 1, PP_MAX_GBS, "N: global batch in sequences"),
    ENUM("--framework", framework, PP_RQ_FRAMEWORK, pp_framework_names, PP_FW_COUNT, ""),
    ENUM("--attention", attention, PP_RQ_ATTENTION, pp_attention_names, PP_ATTN_COUNT, ""),
    INT("--layers", layers, PP_RQ_LAYERS, 1, 1000000, "N: override the model's layers"),
    INT("--hidden", hidden, PP_RQ_HIDDEN, 1, MAX_DIM, "N: hidden size"),
    INT("--heads", heads, PP_RQ_HEADS, 1, 1000000, "N: attention heads"),
    INT("--kv-heads", kv_heads, PP_RQ_KV_HEADS, 1, 1000000, "N: KV heads (GQA groups)"),
    INT("--ffn", ffn, PP_RQ_FFN, 1, MAX_DIM, "N: MLP inner size"),
    INT("--vocab", vocab, PP_RQ_VOCAB, 1, MAX_DIM, "N: vocabulary"),
    INT("--seq", seq, PP_RQ_SEQ, 1, MAX_DIM, "N: sequence length"),
    SET("--swiglu", act, PP_RQ_ACT, PP_ACT_SWIGLU, "SwiGLU MLP"),
    SET("--gelu", act, PP_RQ_ACT, PP_ACT_GELU, "GELU MLP"),
    ENUM("--activation", act, PP_RQ_ACT, pp_act_names, PP_ACT_COUNT,
         "the MLP's activation (pp_activations; --swiglu, --gelu say two of them)"),
    SET("--untied", tied, PP_RQ_TIED, 0, "separate output layer"),
    SET("--tied", tied, PP_RQ_TIED, 1, "output layer shares the embedding"),
    SET("--rmsnorm", norm, PP_RQ_NORM, PP_NORM_RMSNORM, "RMSNorm"),
    SET("--layernorm", norm, PP_RQ_NORM, PP_NORM_LAYERNORM, "LayerNorm"),
    SET("--no-bias", bias, PP_RQ_BIAS, 0, "no linear-layer biases"),
    INT("--experts", experts, PP_RQ_EXPERTS, 1, 100000, "N: MoE experts per layer"),
    INT("--topk", topk, PP_RQ_TOPK, 1, 100000, "N: experts per token"),
    STR("--recipe", recipe, PP_RQ_RECIPE,
        "NAME|FILE: the training stack as data (recipes.d: megatron-core-te, megatron-lm-local, megatron-bridge, "
        "torchtitan, torchtitan-compile, torchtitan-float8, nemo-automodel, deepspeed-zero, nanotron); each stack flag overrides one of its fields"),
    STR("--deepspeed-config", deepspeed_config, PP_RQ_DS_CONFIG,
        "FILE: ZeRO stage, offload, micro-batch, accumulation and precision from a DeepSpeed config (ds_config.json); "
        "--framework deepspeed; flags beside it override"),
    STR("--torchtitan-config", torchtitan_config, PP_RQ_TT_CONFIG,
        "FILE: model, layout, batch and stack from a torchtitan run's saved config (debug.save_config_file: "
        "Trainer.Config.to_dict JSON); --framework fsdp; flags beside it override"),
    STR("--megatron-args", megatron_args, PP_RQ_MEGATRON_ARGS,
        "FILE: model, layout and stack from a Megatron-LM command line, launch script or training log "
        "('-': stdin); the flags given beside it override it"),
    ENUM("--precision", precision, PP_RQ_PRECISION, pp_precision_names, PP_PREC_COUNT,
         "training precision (default bf16)"),
    /* dropout is a probability: [0, 1) as in torch.nn.Dropout (p = 1 zeroes everything) */
    NUM("--dropout", dropout, PP_RQ_DROPOUT, 0, 0.999, "P: attention and hidden dropout (default: the model's)"),
    NUM("--attention-dropout", attention_dropout, PP_RQ_ATTN_DROPOUT, 0, 0.999, "P: attention dropout (overrides --dropout)"),
    NUM("--hidden-dropout", hidden_dropout, PP_RQ_HIDDEN_DROPOUT, 0, 0.999, "P: hidden dropout (overrides --dropout)"),
    FLAG("--no-overlap", no_overlap, PP_RQ_NO_OVERLAP,
         "no DP gradient-reduce, parameter-gather or pipeline overlap (2021 Megatron, DeepSpeed's pipeline engine)"),
    FLAG("--tp-comm-overlap", tp_comm_overlap, PP_RQ_TP_COMM_OVERLAP,
         "TP collectives hidden behind the GEMMs (TransformerEngine userbuffers, with --sp; fsdp: torchtitan's async TP)"),
    ENUM("--impl", impl, PP_RQ_IMPL, pp_impl_names, PP_IMPL_COUNT,
         "Megatron-LM transformer implementation (default te; local with --attention unfused)"),
    ENUM("--moe-dispatcher", dispatcher, PP_RQ_DISPATCHER, pp_dispatch_names, PP_DISPATCH_COUNT,
         "MoE token dispatch (default alltoall; flex: Megatron's DeepEP/HybridEP "
         "dispatcher, a token once per rank and node)"),
    ENUM("--moe-flex-backend", flex_backend, PP_RQ_FLEX_BACKEND, pp_flex_backend_names, PP_FLEX_COUNT,
         "the flex dispatcher's library (Megatron --moe-flex-dispatcher-backend; default deepep): its buffers in "
         "the reserve"),
    FLAG("--moe-grouped-gemm", grouped_gemm, PP_RQ_GROUPED_GEMM, "MoE experts as one grouped GEMM (TransformerEngine)"),
    NUM("--max-mem-frac", max_mem_frac, PP_RQ_MAX_MEM_FRAC, 0.05, 1,
        "X: a layout fits when peak + reserved <= X of the GPU's memory (default: fits in all of it, and plan "
        "proposes only layouts within 0.88 of it)"),
    /* 0 is dropless; a factor caps each expert at factor x its fair share of the tokens */
    NUM("--capacity-factor", capacity_factor, PP_RQ_CAPACITY, 0, 1000, "X: MoE expert capacity factor (0: dropless, the default)"),
    NUM("--moe-imbalance", moe_imbalance, PP_RQ_IMBALANCE, 1, 100000,
        "X: tokens of the busiest expert over the mean (>= 1, default 1)"),
    FLAG("--expandable-segments", expandable_segments, PP_RQ_EXPANDABLE,
         "PyTorch's allocator with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (less fragmentation)"),
    FLAG("--grad-reduce-bf16", grad_bf16, PP_RQ_GRAD_BF16,
         "Megatron's gradient buffer and reduction in bf16 (--grad-reduce-in-bf16), not fp32"),
    FLAG("--ep-overlap", ep_overlap, PP_RQ_EP_OVERLAP,
         "EP all-to-alls overlapped with another micro-batch's compute (Megatron --overlap-moe-expert-parallel-comm)"),
    {"--cuda-graphs", 0, PP_OPT_MODULES, F(cuda_graphs), PP_RQ_CUDA_GRAPHS, 0, 0, pp_cuda_graph_names, PP_CG_COUNT, 0,
     "LIST: what Megatron captures in CUDA graphs: none (default), full_iteration, or per-layer parts "
     "attn,mlp,moe,moe_router,moe_preprocess (--cuda-graph-impl, --cuda-graph-modules)"},
    INT("--cpu-offload-layers", cpu_offload_layers, PP_RQ_CPU_OFFLOAD_LAYERS, 0, 1000000,
        "N: Megatron's activation CPU offloading (--cpu-offloading-num-layers): the first N layers' activations "
        "go to host memory in the forward and come back for the backward; needs --pp 1, no recompute"),
    INT("--vocab-divisible-by", vocab_divisible_by, PP_RQ_VOCAB_DIVISIBLE_BY, 1, 1000000,
        "N: Megatron pads the vocabulary to a multiple of N x tp (--make-vocab-size-divisible-by; default 128)"),
    FLAG("--no-attention-mask", no_attention_mask, PP_RQ_NO_ATTN_MASK,
         "Megatron's dataloader builds no b x s x s attention mask (--no-create-attention-mask-in-dataloader; NeMo)"),
    ENUM("--optimizer-dtype", optimizer_dtype, PP_RQ_OPTIMIZER_DTYPE, optimizer_dtype_names, 2,
         "Adam's state dtype (megatron; bf16: NeMo's distributed_fused_adam with dtype bf16)"),
    FLAG("--megatron-fsdp", megatron_fsdp, PP_RQ_MEGATRON_FSDP,
         "Megatron-Core's FSDP (--use-megatron-fsdp): with --framework megatron, --zero 1|2|3 shards "
         "optimizer | + gradients | + parameters"),
    FLAG("--fsdp-double-buffer", fsdp_double_buffer, PP_RQ_FSDP_DOUBLE_BUFFER,
         "Megatron-FSDP's fixed buffers of two units' gathered weights and gradients (--fsdp-double-buffer; "
         "--use-nccl-ub turns it on)"),
    INT("--fsdp-unit-size", fsdp_unit_size, PP_RQ_FSDP_UNIT_SIZE, 1, 1000000000000LL,
        "N: Megatron-FSDP's --suggested-communication-unit-size (elements): all-gather prefetch N / 2, "
        "reduce-scatter queue N (default: max(1e9, 2 x a layer's parameters))"),
    FLAG("--fsdp-grads-fp32", fsdp_grads_fp32, PP_RQ_FSDP_GRADS_FP32,
         "Megatron-FSDP's main gradients in fp32 (--megatron-fsdp-main-grads-dtype fp32; default: the weights' bf16)"),
    FLAG("--no-sync-accumulation", no_sync_accum, PP_RQ_NO_SYNC_ACCUM,
         "FSDP2's gradient sync off for the step's accumulation micro-batches (set_requires_gradient_sync(False)): "
         "fp32 unsharded gradients held until the last backward, one reduce-scatter a step (fsdp)"),
    FLAG("--keep-logits", keep_logits, PP_RQ_KEEP_LOGITS,
         "the training loop holds the logits through the backward (KempnerForge, NeMo AutoModel; torchtitan "
         "deletes them first): 2 bytes a logit more from the loss backward on (fsdp)"),
    FLAG("--repeat-kv", repeat_kv, PP_RQ_REPEAT_KV,
         "grouped-query K and V repeated to the query heads before SDPA (torchtitan up to v0.2.1, KempnerForge, "
         "fms-fsdp; torchtitan v0.2.2 on passes them with enable_gqa): SDPA saves them at the query width (fsdp)"),
    FLAG("--no-repeat-kv", no_repeat_kv, PP_RQ_NO_REPEAT_KV,
         "K and V to SDPA at their own heads under a recipe that repeats them (the kempnerforge recipe on a fork "
         "that passes enable_gqa) (fsdp)"),
    FLAG("--compile-loss", compile_loss, PP_RQ_COMPILE_LOSS,
         "the loss under torch.compile (torchtitan since 2025-02 with compile on: compile.components [model, loss]): "
         "the fused cross-entropy holds 2 bytes a logit and 4 in its backward, not 10 and 12 (fsdp)"),
    FLAG("--no-compile-loss", no_compile_loss, PP_RQ_NO_COMPILE_LOSS,
         "the loss eager under a recipe that compiles it (torchtitan before 2025-02, or compile.components "
         "without loss) (fsdp)"),
    FLAG("--router-holds-recompute", router_holds_recompute, PP_RQ_ROUTER_HOLDS_RECOMPUTE,
         "the MoE router stores its loss on its module (KempnerForge): under full AC each block's recomputed "
         "attention half and norms stay allocated from its backward to its next forward (fsdp)"),
    FLAG("--expert-pad-loop", expert_pad_loop, PP_RQ_EXPERT_PAD_LOOP,
         "the experts' tokens padded in and out one expert at a time in Python after a host sync (KempnerForge's "
         "packed experts): that host time added to every pass of every MoE layer (fsdp)"),
    FLAG("--no-bias-act-fusion", act_unfused, PP_RQ_ACT_UNFUSED,
         "Megatron's MLP activation unfused (--no-bias-swiglu-fusion / --no-bias-gelu-fusion; on by default)"),
    ENUM("--cross-entropy-fusion", ce_fusion, PP_RQ_CE_FUSION, pp_ce_fusion_names, PP_CE_COUNT,
         "Megatron's loss (--cross-entropy-loss-fusion --cross-entropy-fusion-impl; default none)"),
    ENUM("--sdpa-backend", sdpa_backend, PP_RQ_SDPA_BACKEND, pp_sdpa_backend_names, PP_SDPA_COUNT,
         "torch SDPA's kernel under --framework fsdp (default flash: FlashAttention-2; cudnn: what torchtitan "
         "picks first since 2025-10)"),
    ENUM("--fp8-scaling", fp8_scaling, PP_RQ_FP8_SCALING, pp_fp8_scaling_names, PP_FP8_SCALING_COUNT,
         "torchao's float8 recipe under --framework fsdp --precision fp8 (default tensorwise, with the float8 "
         "all-gather; rowwise: every operand cast along both axes, bf16 all-gathers, torchtitan's current default)"),
    ENUM("--eager-norm", eager_norm, PP_RQ_EAGER_NORM, pp_eager_norm_names, PP_ENORM_COUNT,
         "eager PyTorch's RMSNorm under --framework fsdp without --compile (default fused: F.rms_norm's kernel, "
         "PyTorch 2.8 on; composite: PyTorch 2.4-2.7's ops, torchtitan's 2024 RMSNorm, ibm-fms's; composite-fp32: "
         "the weight applied in fp32 before the cast back, KempnerForge's RMSNorm)"),
    ENUM("--tp-vocab", tp_vocab, PP_RQ_TP_VOCAB, pp_tp_vocab_names, PP_TPV_COUNT,
         "the vocabulary's ends under --framework fsdp with TP (default sharded: torchtitan's embedding and "
         "vocab-parallel loss; gathered: its disable_loss_parallel, the logits gathered to every TP rank; "
         "replicated: KempnerForge's, the logits gathered and the embedding not split)"),
    ENUM("--te-attention", te_attention, PP_RQ_TE_ATTENTION, pp_te_attention_names, PP_TEATTN_COUNT,
         "TransformerEngine's attention kernel under Megatron (default cudnn: its fused attention, TE 1.8 on; "
         "flash2: the flash-attn 2 package, TE up to 1.7 or NVTE_FUSED_ATTN=0)"),
    ENUM("--param-dtype", param_dtype, PP_RQ_PARAM_DTYPE, optimizer_dtype_names, 2,
         "the sharded parameters' dtype, and so their gradients' and AdamW's state (fsdp; "
         "bf16: NeMo AutoModel's default; fp32: torchtitan's)"),
    ENUM("--cp-comm", cp_comm, PP_RQ_CP_COMM, pp_cp_comm_names, PP_CPC_COUNT,
         "how context parallelism moves K and V: p2p (TransformerEngine's ring, Megatron's default), allgather "
         "(Llama 3's; Megatron --cp-comm-type allgather), torch (torch's ring, torchtitan's: K and V at the query "
         "heads, fp32 gradients; the fsdp default)"),
    ENUM("--loss", loss, PP_RQ_LOSS, pp_torch_loss_names, 3,
         "the loss (fsdp): cross_entropy on logits.float() (torchtitan), on the bf16 logits "
         "(NeMo AutoModel's MaskedCrossEntropy, fp32_upcast false), or cut cross-entropy (no logits kept)"),
    FLAG("--fp8-param-gather", fp8_param_gather, PP_RQ_FP8_PARAM_GATHER,
         "megatron, --precision fp8|mxfp8: the linear weights kept and all-gathered in FP8 (Megatron --fp8-param-gather)"),
    FLAG("--precision-aware-optimizer", precision_aware_opt, PP_RQ_PRECISION_AWARE,
         "megatron: Megatron's --use-precision-aware-optimizer (TE FusedAdam; fp32 main parameters kept as "
         "16-bit remainders of the bf16 ones)"),
    FLAG("--distributed-fused-adam", dist_fused_adam, PP_RQ_DIST_FUSED_ADAM,
         "megatron, --dist-opt: NeMo 1.x's distributed_fused_adam (Apex) as the distributed optimizer"),
    ENUM("--main-params-dtype", main_params_dtype, PP_RQ_MAIN_PARAMS_DTYPE, pp_opt_dtype_names, 2,
         "the optimizer's main parameters (megatron --use-precision-aware-optimizer)"),
    ENUM("--exp-avg-dtype", exp_avg_dtype, PP_RQ_EXP_AVG_DTYPE, pp_opt_dtype_names, PP_OPT_DTYPE_COUNT,
         "Adam's first moment (megatron --use-precision-aware-optimizer)"),
    ENUM("--exp-avg-sq-dtype", exp_avg_sq_dtype, PP_RQ_EXP_AVG_SQ_DTYPE, pp_opt_dtype_names, PP_OPT_DTYPE_COUNT,
         "Adam's second moment (megatron --use-precision-aware-optimizer)"),
    ENUM("--finetune", finetune, PP_RQ_FINETUNE, pp_finetune_names, PP_FT_COUNT,
         "full: every weight trained (default); lora: the base frozen, LoRA adapters trained (Megatron-Bridge PEFT)"),
    INT("--lora-rank", lora_rank, PP_RQ_LORA_RANK, 1, 65536,
        "R: the LoRA adapters' rank (with --finetune lora; default 32, Megatron-Bridge's LoRA dim)"),
    ENUM("--lora-targets", lora_targets, PP_RQ_LORA_TARGETS, pp_lora_target_names, PP_LORA_TARGETS_COUNT,
         "the linears with adapters (with --finetune lora): all (default: qkv, proj, fc1, fc2), attn (qkv, proj), "
         "mlp (fc1, fc2), qkv"),
    FLAG("--compile", compile, PP_RQ_COMPILE,
         "torch.compile of each block (--framework fsdp: torchtitan [compile], fms-fsdp use_torch_compile)"),
    INT("--tp", tp, PP_RQ_TP, 1, 1000000, "N: tensor parallel"),
    INT("--pp", pp, PP_RQ_PP, 1, 1000000, "N: pipeline parallel"),
    INT("--dp", dp, PP_RQ_DP, 1, MAX_GPUS, "N: data parallel (default gpus/(tp*pp*cp))"),
    INT("--vpp", vpp, PP_RQ_VPP, 1, 1000000, "N: virtual stages per rank (interleaved)"),
    INT("--cp", cp, PP_RQ_CP, 1, 1000000, "N: context parallel"),
    INT("--ep", ep, PP_RQ_EP, 1, 1000000, "N: expert parallel"),
    INT("--etp", etp, PP_RQ_ETP, 1, 1000000, "N: expert tensor parallel (default: --tp)"),
    INT("--mbs", mbs, PP_RQ_MBS, 1, 1000000, "N: micro-batch size"),
    ENUM("--zero", zero, PP_RQ_ZERO, zero_names, 4, "ZeRO stage (deepspeed/fsdp; nanotron 0|1)"),
    FLAG("--dist-opt", dist_opt, PP_RQ_DIST_OPT, "Megatron's distributed optimizer"),
    FLAG("--sp", sp, PP_RQ_SP, "sequence parallel"),
    {"--no-sp", 0, PP_OPT_CLEAR, F(sp), PP_RQ_SP, 0, 0, NULL, 0, 0, "no sequence parallel (plan: do not search it)"},
    ENUM("--recompute", recompute, PP_RQ_RECOMPUTE, pp_recompute_names, PP_RC_COUNT,
         "(fsdp: selective is torchtitan's op-level SAC)"),
    INT("--recompute-layers", recompute_layers, PP_RQ_RECOMPUTE_LAYERS, 0, 1000000, "K: layers per stage fully recomputed"),
    {"--recompute-modules", 0, PP_OPT_MODULES, F(recompute_modules), PP_RQ_RECOMPUTE_MODULES, 0, 0,
     pp_rc_module_names, PP_RCM_COUNT, 0,
     "LIST: what selective recompute recomputes: core_attn,layernorm,mla_up_proj,moe_act,mlp,moe,shared_experts "
     "(default core_attn)"},
    ENUM("--offload", offload, PP_RQ_OFFLOAD, pp_offload_names, PP_OFF_COUNT, ""),
    ENUM("--optimizer-impl", optimizer_impl, PP_RQ_OPTIMIZER_IMPL, pp_adam_impl_names, PP_ADAM_COUNT,
         "torch AdamW under --framework fsdp (default fused, torchtitan's)"),
    INT("--replicate", replicate, PP_RQ_REPLICATE, 1, MAX_GPUS,
        "N: HSDP replicas (--framework fsdp): shard over dp/N ranks, replicate N ways"),
    ENUM("--stages", stages, PP_RQ_STAGES, stages_names, 3, "pipeline stage split (plan: auto)"),
    STR("--pipeline-layout", pipeline_layout, PP_RQ_PIPELINE_LAYOUT,
        "STR: the layers of each virtual stage as Megatron's --pipeline-model-parallel-layout: stages split by '|', "
        "E embedding, t layer, m MTP layer, L loss, (..)*N and x*N repeat, e.g. 'Et|(tt|)*30mL' (sets --vpp)"),
    INT("--first-stage-layers", first_stage_layers, PP_RQ_FIRST_STAGE, 1, 1000000,
        "N: layers of the first pipeline stage, the rest even (Megatron --decoder-first-pipeline-num-layers)"),
    INT("--last-stage-layers", last_stage_layers, PP_RQ_LAST_STAGE, 1, 1000000,
        "N: layers of the last pipeline stage, the rest even (Megatron --decoder-last-pipeline-num-layers)"),
};
const size_t pp_request_n_options = sizeof pp_request_options / sizeof pp_request_options[0];

const pp_option *pp_request_option(const char *name)
{
    for (size_t i = 0; i < pp_request_n_options; i++)
        if (!strcmp(pp_request_options[i].name, name)) return &pp_request_options[i];
    return NULL;
}

void pp_request_init(pp_request *r)
{
    memset(r, 0, sizeof *r);
    r->framework = PP_FW_MEGATRON;
    r->attention = PP_ATTN_FLASH;
    r->precision = PP_PREC_BF16;
    r->impl = PP_IMPL_TE;
    r->dispatcher = PP_DISPATCH_ALLTOALL;
    r->moe_imbalance = 1.0;
    r->tp = r->pp = r->vpp = r->cp = r->ep = r->mbs = 1;
    r->act = r->norm = r->tied = r->bias = -1;
}

void pp_request_free(pp_request *r)
{
    if (!r) return;
    free(r->owned);
    r->owned = NULL;
}

const char *pp_request_stages(const pp_request *r)
{
    return r->given[PP_RQ_STAGES] ? stages_names[r->stages] : NULL;
}

unsigned pp_request_fixed(const pp_request *r)
{
    static const struct { int key; unsigned bit; } map[] = {
        {PP_RQ_TP, PP_SEARCH_FIX_TP}, {PP_RQ_PP, PP_SEARCH_FIX_PP}, {PP_RQ_DP, PP_SEARCH_FIX_DP}, {PP_RQ_VPP, PP_SEARCH_FIX_VPP},
        {PP_RQ_CP, PP_SEARCH_FIX_CP}, {PP_RQ_EP, PP_SEARCH_FIX_EP}, {PP_RQ_MBS, PP_SEARCH_FIX_MBS}, {PP_RQ_ZERO, PP_SEARCH_FIX_ZERO},
        {PP_RQ_DIST_OPT, PP_SEARCH_FIX_DIST_OPT}, {PP_RQ_SP, PP_SEARCH_FIX_SP}, {PP_RQ_RECOMPUTE, PP_SEARCH_FIX_RECOMPUTE},
        {PP_RQ_OFFLOAD, PP_SEARCH_FIX_OFFLOAD}, {PP_RQ_ETP, PP_SEARCH_FIX_ETP},
    };
    unsigned f = 0;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (r->given[map[i].key]) f |= map[i].bit;
    if (r->given[PP_RQ_PIPELINE_LAYOUT] || r->given[PP_RQ_FIRST_STAGE] || r->given[PP_RQ_LAST_STAGE])
        f |= PP_SEARCH_FIX_PP | PP_SEARCH_FIX_VPP;
    return f;
}

pp_layout pp_request_layout(const pp_request *r)
{
    pp_layout l;
    pp_layout_init(&l);
    l.tp = r->tp, l.pp = r->pp, l.dp = r->dp, l.vpp = r->vpp, l.cp = r->cp, l.ep = r->ep;
    l.etp = r->etp, l.mbs = r->mbs, l.zero = r->zero, l.dist_opt = r->dist_opt, l.sp = r->sp;
    l.recompute = (pp_recompute)r->recompute;
    l.recompute_layers = r->recompute_layers;
    l.recompute_modules = r->recompute_modules;
    l.offload = (pp_offload)r->offload;
    l.replicate = r->replicate;
    return l;
}

static bool any_override(const pp_request *r)
{
    return r->layers || r->hidden || r->heads || r->kv_heads || r->ffn || r->vocab || r->seq ||
           r->experts || r->topk || r->act >= 0 || r->norm >= 0 || r->tied >= 0 || r->bias >= 0;
}

static void apply_overrides(const pp_request *o, pp_model *m)
{
    if (o->layers) m->layers = o->layers;
    if (o->hidden) {
        m->hidden = o->hidden;
        m->head_dim = 0; /* re-derived from hidden / heads */
    }
    if (o->heads) {
        if (m->kv_heads == m->heads && !o->kv_heads) m->kv_heads = o->heads;
        m->heads = o->heads;
        m->head_dim = 0;
    }
    if (o->kv_heads) m->kv_heads = o->kv_heads;
    if (o->ffn) m->ffn = o->ffn;
    if (o->vocab) m->vocab = o->vocab;
    if (o->seq) m->seq = o->seq;
    if (o->experts) m->experts = o->experts;
    if (o->topk) m->topk = o->topk;
    if (o->act >= 0) {
        if ((pp_act)o->act != m->act && !o->ffn) m->ffn = 0; /* default for the new MLP */
        m->act = (pp_act)o->act;
    }
    if (o->norm >= 0) m->norm = (pp_norm)o->norm;
    if (o->tied >= 0) m->tied = o->tied;
    if (o->bias >= 0) m->bias = o->bias;
}

static pp_status margs_load(const char *path, pp_margs_config **out, pp_error *err)
{
    pp_margs a;
    pp_status st = pp_margs_load(&a, path, err);
    if (st) return st;
    *out = calloc(1, sizeof **out);
    if (!*out) {
        pp_margs_free(&a);
        return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    st = pp_margs_read(&a, *out, err);
    pp_margs_free(&a);
    return st;
}

/* The file's layout with the layout flags given beside it on top. */
static void margs_layout(const pp_request *r, const pp_margs_config *mc, pp_layout *l)
{
    pp_layout cl = pp_request_layout(r);
    *l = pp_margs_config_layout(mc);
    const unsigned char *g = r->given;
    if (g[PP_RQ_TP]) l->tp = cl.tp;
    if (g[PP_RQ_PP]) l->pp = cl.pp;
    if (g[PP_RQ_DP]) l->dp = cl.dp;
    if (g[PP_RQ_VPP]) l->vpp = cl.vpp;
    if (g[PP_RQ_CP]) l->cp = cl.cp;
    if (g[PP_RQ_EP]) l->ep = cl.ep;
    if (g[PP_RQ_ETP]) l->etp = cl.etp;
    if (g[PP_RQ_MBS]) l->mbs = cl.mbs;
    if (g[PP_RQ_ZERO]) l->zero = cl.zero;
    if (g[PP_RQ_DIST_OPT]) l->dist_opt = cl.dist_opt;
    if (g[PP_RQ_SP]) l->sp = cl.sp;
    if (g[PP_RQ_RECOMPUTE]) l->recompute = cl.recompute;
    if (g[PP_RQ_OFFLOAD]) l->offload = cl.offload;
    if (g[PP_RQ_RECOMPUTE_LAYERS]) l->recompute_layers = cl.recompute_layers;
    if (g[PP_RQ_RECOMPUTE_MODULES]) l->recompute_modules = cl.recompute_modules;
    if (g[PP_RQ_REPLICATE]) l->replicate = cl.replicate;
    if (l->recompute != PP_RC_FULL) l->recompute_layers = 0;
    /* the file's uneven stages hold while its pipeline and recompute do; its split by virtual
     * stage while its pipeline does and no flag states another */
    if (l->stage_layers && (g[PP_RQ_PP] || g[PP_RQ_VPP] || g[PP_RQ_RECOMPUTE] || g[PP_RQ_RECOMPUTE_LAYERS] ||
                            g[PP_RQ_PIPELINE_LAYOUT] || g[PP_RQ_FIRST_STAGE] || g[PP_RQ_LAST_STAGE]))
        l->stage_layers = l->stage_recompute = NULL;
    if (l->vstage_layers && (g[PP_RQ_PP] || g[PP_RQ_VPP]))
        l->vstage_layers = NULL;
}

/* --pipeline-layout, or --first-stage-layers / --last-stage-layers: the split into out->split,
 * l->vstage_layers pointing at it (the layout string also sets l->vpp). The model's layers and
 * l->pp (flags over the file's) are known. */
static pp_status split_from_flags(const pp_request *r, const pp_work *w, pp_layout *l, pp_resolved *out,
                                  pp_error *err)
{
    const unsigned char *g = r->given;
    bool fl = g[PP_RQ_FIRST_STAGE] || g[PP_RQ_LAST_STAGE];
    if (g[PP_RQ_PIPELINE_LAYOUT] && fl)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "--pipeline-layout and --%s-stage-layers exclude each other (Megatron refuses a layout "
                            "string beside the other pipeline layout arguments)", g[PP_RQ_FIRST_STAGE] ? "first" : "last");
    if (l->pp > PP_MAX_STAGES)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--pp %lld: at most %d stages", (long long)l->pp, PP_MAX_STAGES);
    out->split = malloc(PP_MAX_VSTAGES * sizeof *out->split);
    if (!out->split) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    const pp_model *m = &w->model;
    if (g[PP_RQ_PIPELINE_LAYOUT]) {
        int64_t vpp = 1;
        pp_status st = pp_pipeline_layout_parse(r->pipeline_layout, l->pp, m->layers, m->mtp_layers, out->split,
                                                PP_MAX_VSTAGES, &vpp, err);
        if (st != PP_OK) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            return pp_error_set(err, st, NULL, 0, err->col, "--pipeline-layout: %s", msg);
        }
        if (l->pp == 1 && vpp > 1)
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                                "--pipeline-layout has %lld stages: give --pp (the pipeline stages it spreads them over)",
                                (long long)vpp);
        if (g[PP_RQ_VPP] && r->vpp != vpp)
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                                "--vpp %lld, but --pipeline-layout has %lld stages over --pp %lld: %lld virtual stages "
                                "per rank (leave --vpp out: the layout sets it)",
                                (long long)r->vpp, (long long)(vpp * l->pp), (long long)l->pp, (long long)vpp);
        l->vpp = vpp;
    } else {
        pp_pipeline_flags f = {r->first_stage_layers, r->last_stage_layers, false, false};
        if (l->pp < 2)
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--%s-stage-layers needs --pp of at least 2",
                                g[PP_RQ_FIRST_STAGE] ? "first" : "last");
        pp_status st = pp_pipeline_split_megatron(m->layers, l->pp, l->vpp, &f, "--first-stage-layers",
                                                  "--last-stage-layers", out->split, err);
        if (st != PP_OK) return st;
    }
    l->stage_layers = l->stage_recompute = NULL;
    l->vstage_layers = out->split;
    return PP_OK;
}

/* The stack the flags give, over base (the file's, or the defaults). */
static void stack_merge(const pp_request *r, pp_stack *s, bool from_file, pp_framework fw)
{
    const unsigned char *g = r->given;
    if (g[PP_RQ_PRECISION]) s->precision = (pp_precision)r->precision;
    if (g[PP_RQ_NO_OVERLAP]) s->no_overlap = true;
    if (g[PP_RQ_TP_COMM_OVERLAP]) s->tp_comm_overlap = true;
    if (g[PP_RQ_IMPL]) s->impl = (pp_impl)r->impl, s->impl_given = true;
    if (g[PP_RQ_DISPATCHER]) s->dispatcher = (pp_dispatch)r->dispatcher;
    if (g[PP_RQ_FLEX_BACKEND]) s->flex_backend = (pp_flex_backend)r->flex_backend;
    if (g[PP_RQ_GROUPED_GEMM]) s->grouped_gemm = true;
    if (g[PP_RQ_CAPACITY]) s->moe_capacity_factor = r->capacity_factor;
    if (g[PP_RQ_IMBALANCE]) s->moe_imbalance = r->moe_imbalance;
    if (g[PP_RQ_EP_OVERLAP]) s->ep_overlap = true;
    if (g[PP_RQ_CUDA_GRAPHS]) s->cuda_graphs = r->cuda_graphs;
    if (g[PP_RQ_CPU_OFFLOAD_LAYERS]) s->cpu_offload_layers = r->cpu_offload_layers;
    if (g[PP_RQ_VOCAB_DIVISIBLE_BY]) s->vocab_divisible_by = r->vocab_divisible_by;
    if (g[PP_RQ_SDPA_BACKEND]) s->sdpa_backend = (pp_sdpa_backend)r->sdpa_backend;
    if (g[PP_RQ_FP8_SCALING]) s->fp8_scaling = (pp_fp8_scaling)r->fp8_scaling;
    if (g[PP_RQ_EAGER_NORM]) s->eager_norm = (pp_eager_norm)r->eager_norm;
    if (g[PP_RQ_TP_VOCAB]) s->tp_vocab = (pp_tp_vocab)r->tp_vocab;
    if (g[PP_RQ_TE_ATTENTION]) s->te_attention = (pp_te_attention)r->te_attention;
    if (g[PP_RQ_GRAD_BF16]) s->grad_bf16 = true;
    if (g[PP_RQ_EXPANDABLE]) s->expandable_segments = true;
    if (g[PP_RQ_OPTIMIZER_IMPL]) s->optimizer_impl = (pp_adam_impl)r->optimizer_impl;
    if (g[PP_RQ_COMPILE]) s->compile = true;
    if (g[PP_RQ_ACT_UNFUSED]) s->act_unfused = true;
    if (g[PP_RQ_CE_FUSION]) s->ce_fusion = (pp_ce_fusion)r->ce_fusion;
    if (g[PP_RQ_NO_ATTN_MASK]) s->no_attention_mask = true;
    if (g[PP_RQ_MEGATRON_FSDP]) s->megatron_fsdp = true;
    if (g[PP_RQ_FSDP_DOUBLE_BUFFER]) s->fsdp_double_buffer = true;
    if (g[PP_RQ_FSDP_UNIT_SIZE]) s->fsdp_unit_size = r->fsdp_unit_size;
    if (g[PP_RQ_FSDP_GRADS_FP32]) s->fsdp_grads_fp32 = true;
    if (g[PP_RQ_NO_SYNC_ACCUM]) s->no_sync_accum = true;
    if (g[PP_RQ_KEEP_LOGITS]) s->keep_logits = true;
    if (g[PP_RQ_REPEAT_KV]) s->repeat_kv = true;
    if (g[PP_RQ_NO_REPEAT_KV]) s->repeat_kv = false;
    if (g[PP_RQ_COMPILE_LOSS]) s->compile_loss = true;
    if (g[PP_RQ_NO_COMPILE_LOSS]) s->compile_loss = false;
    if (g[PP_RQ_ROUTER_HOLDS_RECOMPUTE]) s->router_holds_recompute = true;
    if (g[PP_RQ_EXPERT_PAD_LOOP]) s->expert_pad_loop = true;
    if (g[PP_RQ_OPTIMIZER_DTYPE]) s->optimizer_bf16 = r->optimizer_dtype == 1;
    if (g[PP_RQ_PARAM_DTYPE]) s->param_bf16 = r->param_dtype == 1;
    if (g[PP_RQ_FP8_PARAM_GATHER]) s->fp8_param_gather = true;
    if (g[PP_RQ_PRECISION_AWARE]) s->precision_aware_opt = true;
    if (g[PP_RQ_DIST_FUSED_ADAM]) s->dist_fused_adam = true;
    if (g[PP_RQ_MAIN_PARAMS_DTYPE]) s->main_params_dtype = (pp_opt_dtype)r->main_params_dtype;
    if (g[PP_RQ_EXP_AVG_DTYPE]) s->exp_avg_dtype = (pp_opt_dtype)r->exp_avg_dtype;
    if (g[PP_RQ_EXP_AVG_SQ_DTYPE]) s->exp_avg_sq_dtype = (pp_opt_dtype)r->exp_avg_sq_dtype;
    if (g[PP_RQ_LOSS]) s->loss = PP_LOSS_TORCH + r->loss;
    if (g[PP_RQ_CP_COMM]) s->cp_comm = 1 + r->cp_comm;
    if (g[PP_RQ_FINETUNE]) s->finetune = (pp_finetune)r->finetune;
    if (g[PP_RQ_LORA_RANK]) s->lora_rank = r->lora_rank;
    if (g[PP_RQ_LORA_TARGETS]) s->lora_targets = (pp_lora_targets)r->lora_targets;
    /* --framework deepspeed|fsdp over a Megatron file: Megatron's implementation and its TE
     * userbuffers do not carry over (a conversion, not a contradiction) */
    if (from_file && g[PP_RQ_FRAMEWORK] && fw != PP_FW_MEGATRON) {
        if (!g[PP_RQ_IMPL]) s->impl_given = false, s->impl = PP_IMPL_TE;
        if (!g[PP_RQ_TP_COMM_OVERLAP]) s->tp_comm_overlap = false;
    }
}

/* The recipe fields Megatron's argument reader (megatron_config.c read_stack) sets from a run's
 * arguments, and the flag that sets each field. */
#define RF_BIT(f) (UINT64_C(1) << PP_RF_##f)
#define MARGS_FIELDS                                                                                   \
    (RF_BIT(FRAMEWORK) | RF_BIT(IMPL) | RF_BIT(ATTENTION) | RF_BIT(PRECISION) | RF_BIT(BIAS_ACT_FUSION) | \
     RF_BIT(CE_FUSION) | RF_BIT(EXPANDABLE) | RF_BIT(GRAD_BF16) | RF_BIT(ATTN_MASK) | RF_BIT(OVERLAP) |    \
     RF_BIT(TP_COMM_OVERLAP) | RF_BIT(DISPATCHER) | RF_BIT(GROUPED_GEMM) | RF_BIT(FP8_PARAM_GATHER) |      \
     RF_BIT(MAIN_PARAMS_DTYPE) | RF_BIT(EXP_AVG_DTYPE) | RF_BIT(EXP_AVG_SQ_DTYPE) |                        \
     RF_BIT(PRECISION_AWARE) | RF_BIT(CUDA_GRAPHS) | RF_BIT(FLEX_BACKEND) | RF_BIT(VOCAB_DIVISIBLE_BY))
static const pp_request_key field_flag[PP_RF_COUNT] = {
    [PP_RF_FRAMEWORK] = PP_RQ_FRAMEWORK, [PP_RF_IMPL] = PP_RQ_IMPL, [PP_RF_ATTENTION] = PP_RQ_ATTENTION,
    [PP_RF_PRECISION] = PP_RQ_PRECISION, [PP_RF_BIAS_ACT_FUSION] = PP_RQ_ACT_UNFUSED,
    [PP_RF_CE_FUSION] = PP_RQ_CE_FUSION, [PP_RF_EXPANDABLE] = PP_RQ_EXPANDABLE, [PP_RF_COMPILE] = PP_RQ_COMPILE,
    [PP_RF_GRAD_BF16] = PP_RQ_GRAD_BF16, [PP_RF_ATTN_MASK] = PP_RQ_NO_ATTN_MASK, [PP_RF_OVERLAP] = PP_RQ_NO_OVERLAP,
    [PP_RF_TP_COMM_OVERLAP] = PP_RQ_TP_COMM_OVERLAP, [PP_RF_OPTIMIZER_DTYPE] = PP_RQ_OPTIMIZER_DTYPE,
    [PP_RF_OPTIMIZER_IMPL] = PP_RQ_OPTIMIZER_IMPL, [PP_RF_DISPATCHER] = PP_RQ_DISPATCHER,
    [PP_RF_GROUPED_GEMM] = PP_RQ_GROUPED_GEMM, [PP_RF_PARAM_DTYPE] = PP_RQ_PARAM_DTYPE, [PP_RF_LOSS] = PP_RQ_LOSS,
    [PP_RF_FP8_PARAM_GATHER] = PP_RQ_FP8_PARAM_GATHER, [PP_RF_EXP_AVG_DTYPE] = PP_RQ_EXP_AVG_DTYPE,
    [PP_RF_EXP_AVG_SQ_DTYPE] = PP_RQ_EXP_AVG_SQ_DTYPE, [PP_RF_MAIN_PARAMS_DTYPE] = PP_RQ_MAIN_PARAMS_DTYPE,
    [PP_RF_PRECISION_AWARE] = PP_RQ_PRECISION_AWARE, [PP_RF_DIST_FUSED_ADAM] = PP_RQ_DIST_FUSED_ADAM,
    [PP_RF_CUDA_GRAPHS] = PP_RQ_CUDA_GRAPHS, [PP_RF_SDPA_BACKEND] = PP_RQ_SDPA_BACKEND,
    [PP_RF_FLEX_BACKEND] = PP_RQ_FLEX_BACKEND, [PP_RF_VOCAB_DIVISIBLE_BY] = PP_RQ_VOCAB_DIVISIBLE_BY,
    [PP_RF_NO_SYNC_ACCUM] = PP_RQ_NO_SYNC_ACCUM, [PP_RF_FP8_SCALING] = PP_RQ_FP8_SCALING,
    [PP_RF_EAGER_NORM] = PP_RQ_EAGER_NORM, [PP_RF_TE_ATTENTION] = PP_RQ_TE_ATTENTION,
    [PP_RF_TP_VOCAB] = PP_RQ_TP_VOCAB, [PP_RF_KEEP_LOGITS] = PP_RQ_KEEP_LOGITS, [PP_RF_COMPILE_LOSS] = PP_RQ_COMPILE_LOSS,
    [PP_RF_ROUTER_HOLDS_RECOMPUTE] = PP_RQ_ROUTER_HOLDS_RECOMPUTE, [PP_RF_EXPERT_PAD_LOOP] = PP_RQ_EXPERT_PAD_LOOP,
    [PP_RF_REPEAT_KV] = PP_RQ_REPEAT_KV,
};

/* The boolean fields a recipe may set true that a flag of their own turns off again: the field,
 * its flag, the negating flag, and their spellings. */
static const struct {
    pp_recipe_field field;
    pp_request_key on, off;
    const char *on_name, *off_name;
} field_negations[] = {
    {PP_RF_COMPILE_LOSS, PP_RQ_COMPILE_LOSS, PP_RQ_NO_COMPILE_LOSS, "--compile-loss", "--no-compile-loss"},
    {PP_RF_REPEAT_KV, PP_RQ_REPEAT_KV, PP_RQ_NO_REPEAT_KV, "--repeat-kv", "--no-repeat-kv"},
};
#define N_NEGATIONS ((int)(sizeof field_negations / sizeof field_negations[0]))

/* Where each recipe field's value came from: a flag (or its negation) over the file's arguments
 * over the recipe over parplan's default. */
static void recipe_sources(const pp_request *r, pp_resolved *out)
{
    for (int f = 0; f < PP_RF_COUNT; f++) {
        pp_recipe_src s = PP_SRC_DEFAULT;
        if (out->have_recipe && (out->recipe.set >> f) & 1u) s = PP_SRC_RECIPE;
        if (out->margs && (MARGS_FIELDS >> f) & 1u && !(f == PP_RF_FRAMEWORK && out->have_recipe)) s = PP_SRC_MARGS;
        if (r->given[field_flag[f]]) s = PP_SRC_FLAG;
        for (int i = 0; i < N_NEGATIONS; i++)
            if (field_negations[i].field == (pp_recipe_field)f && r->given[field_negations[i].off]) s = PP_SRC_FLAG;
        out->src[f] = (unsigned char)s;
    }
}

static void warn(pp_resolved *out, bool quiet, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#include <stdarg.h>
static void warn(pp_resolved *out, bool quiet, const char *fmt, ...)
{
    if (quiet || out->n_warnings >= (int)(sizeof out->warnings / sizeof out->warnings[0])) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->warnings[out->n_warnings++], sizeof out->warnings[0], fmt, ap);
    va_end(ap);
}

static pp_status request_resolve(const pp_request *r, const pp_catalog *cat, bool needs_layout, bool quiet,
                                 pp_resolved *out, pp_error *err);

static pp_status tt_resolve(const pp_request *r, const pp_catalog *cat, bool needs_layout, bool quiet,
                            pp_resolved *out, pp_error *err);

/* --deepspeed-config FILE: what the file says, under the flags (a flag beside it wins); the
 * global batch from train_batch_size, else micro-batch x accumulation x data-parallel ranks. */
pp_status pp_request_resolve(const pp_request *r, const pp_catalog *cat, bool needs_layout, bool quiet,
                             pp_resolved *out, pp_error *err)
{
    if (r->torchtitan_config) return tt_resolve(r, cat, needs_layout, quiet, out, err);
    if (!r->deepspeed_config) return request_resolve(r, cat, needs_layout, quiet, out, err);
    memset(out, 0, sizeof *out);
    const unsigned char *g = r->given;
    if (r->megatron_args)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--deepspeed-config and --megatron-args describe two runs: "
                            "give one");
    if (g[PP_RQ_FRAMEWORK] && r->framework != PP_FW_DEEPSPEED)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--deepspeed-config is DeepSpeed's: --framework deepspeed, not %s",
                            pp_framework_names[r->framework]);
    pp_ds_config *dc = calloc(1, sizeof *dc);
    pp_request *rr = calloc(1, sizeof *rr);
    pp_status st = !dc || !rr ? pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory")
                              : pp_ds_config_load_file(dc, r->deepspeed_config, err);
    if (st != PP_OK) goto done;
    *rr = *r;
    unsigned char *rg = rr->given;
    rr->framework = PP_FW_DEEPSPEED, rg[PP_RQ_FRAMEWORK] = 1;
    if (dc->zero >= 0 && !g[PP_RQ_ZERO]) rr->zero = dc->zero, rg[PP_RQ_ZERO] = 1;
    if (dc->offload > PP_OFF_NONE && !g[PP_RQ_OFFLOAD]) rr->offload = dc->offload, rg[PP_RQ_OFFLOAD] = 1;
    if (dc->mbs && !g[PP_RQ_MBS]) rr->mbs = dc->mbs, rg[PP_RQ_MBS] = 1;
    if (dc->precision >= 0 && !g[PP_RQ_PRECISION]) rr->precision = dc->precision, rg[PP_RQ_PRECISION] = 1;
    /* overlap_comm: the reduction of the gradients (ZeRO 1 and 2) or the parameters' gathers and
     * reductions (ZeRO 3) beside the backward; DeepSpeed's default is on for stage 3 only
     * (runtime/zero/config.py overlap_comm_valid), so a ZeRO 1/2 config that does not say so runs
     * without it (measured: tests/data/deepspeed) */
    int zero_now = rg[PP_RQ_ZERO] ? (int)rr->zero : 0;
    bool overlap = dc->overlap_comm >= 0 ? dc->overlap_comm == 1 : zero_now == 3;
    if (!overlap && !g[PP_RQ_NO_OVERLAP]) rr->no_overlap = true, rg[PP_RQ_NO_OVERLAP] = 1;
    if (!g[PP_RQ_GBS] && dc->gbs) {
        rr->gbs = dc->gbs;
    } else if (!g[PP_RQ_GBS] && dc->gas && rr->mbs > 0 && r->gpus > 0) {
        int64_t mp = (r->tp > 0 ? r->tp : 1) * (r->pp > 0 ? r->pp : 1) * (r->cp > 0 ? r->cp : 1);
        int64_t dp = r->dp > 0 ? r->dp : r->gpus / mp;
        rr->gbs = rr->mbs * dc->gas * (dp > 0 ? dp : 1);
    }
    if (rr->gbs && !g[PP_RQ_GBS]) rg[PP_RQ_GBS] = 1;
    st = request_resolve(rr, cat, needs_layout, quiet, out, err);
    if (st == PP_OK && dc->unmodelled[0])
        warn(out, quiet, "%s: not modelled (they change memory or time): %s", r->deepspeed_config, dc->unmodelled);
    if (st == PP_OK && dc->unknown[0])
        warn(out, quiet, "%s: keys DeepSpeed's config does not define, not read: %s", r->deepspeed_config, dc->unknown);
done:
    free(dc);
    free(rr);
    return st;
}

/* --torchtitan-config FILE (pp_tt_config.h): the saved run under the flags (a flag beside it
 * wins). torchtitan is parplan's fsdp framework; its mesh maps as launch_torchtitan.c writes it
 * the other way: dp = shard x replicate (HSDP --replicate when both shard and replicate), the
 * reshard policy the ZeRO stage (distributed/fsdp.py:129: "default" reshards unless pipelined),
 * no sharding (shard degree 1) ZeRO 0; micro-batch and global batch from the token counts over
 * max_context_length (trainer.py:416: the step's tokens default to micro-batch x pipeline
 * micro-batches x data-parallel ranks). */
static pp_status tt_resolve(const pp_request *r, const pp_catalog *cat, bool needs_layout, bool quiet,
                            pp_resolved *out, pp_error *err)
{
    memset(out, 0, sizeof *out);
    const unsigned char *g = r->given;
    const char *path = r->torchtitan_config;
    if (r->megatron_args || r->deepspeed_config)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--torchtitan-config and --%s describe two runs: give one",
                            r->megatron_args ? "megatron-args" : "deepspeed-config");
    if (g[PP_RQ_FRAMEWORK] && r->framework != PP_FW_FSDP)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--torchtitan-config is torchtitan's (PyTorch FSDP2): "
                            "--framework fsdp, not %s", pp_framework_names[r->framework]);
    pp_tt_config *tc = calloc(1, sizeof *tc);
    pp_request *rr = calloc(1, sizeof *rr);
    pp_status st = !tc || !rr ? pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory")
                              : pp_tt_config_load_file(tc, path, err);
    if (st != PP_OK) goto done;
    *rr = *r;
    unsigned char *rg = rr->given;
    rr->framework = PP_FW_FSDP, rg[PP_RQ_FRAMEWORK] = 1;
    bool inline_model = r->layers && r->hidden && r->heads && r->vocab && r->seq;
    if (!r->model && !inline_model) {
        if (!tc->catalog) {
            st = pp_error_set(err, PP_ERR_INPUT, path, 0, 0, tc->name[0] ? "model_spec %s flavor %s is not a model parplan "
                              "knows by its torchtitan name (llama3 8B/70B/405B, qwen3 8B/32B/30B-A3B/235B-A22B): give "
                              "--model" : "%s%sthe file has no model_spec: give --model", tc->name, tc->flavor);
            goto done;
        }
        rr->model = tc->catalog, rg[PP_RQ_MODEL] = 1;
    }
    if (!g[PP_RQ_TP]) rr->tp = tc->tp, rg[PP_RQ_TP] = 1;
    if (!g[PP_RQ_PP]) rr->pp = tc->pp, rg[PP_RQ_PP] = 1;
    if (!g[PP_RQ_CP]) rr->cp = tc->cp, rg[PP_RQ_CP] = 1;
    if (!g[PP_RQ_EP]) rr->ep = tc->ep, rg[PP_RQ_EP] = 1;
    /* torchtitan's tensor parallelism is sequence parallel unless enable_sequence_parallel is off */
    if (!g[PP_RQ_SP] && rr->tp > 1) rr->sp = tc->sp, rg[PP_RQ_SP] = 1;
    int64_t R = g[PP_RQ_REPLICATE] ? r->replicate : tc->replicate, S = tc->shard;
    if (g[PP_RQ_DP]) {
        S = r->dp % R ? 0 : r->dp / R;
    } else if (S < 0) {
        /* -1: the ranks left after replicate, TP, PP and CP (configs.py:133) */
        int64_t rest = R * rr->tp * rr->pp * rr->cp;
        if (!r->gpus) {
            st = pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "parallelism.data_parallel_shard_degree is -1 (the rest of "
                              "the GPUs): give --gpus (or --dp)");
            goto done;
        }
        if (r->gpus % rest) {
            st = pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "parallelism.data_parallel_shard_degree -1: --gpus %lld is "
                              "not a multiple of replicate x tp x pp x cp = %lld", (long long)r->gpus, (long long)rest);
            goto done;
        }
        S = r->gpus / rest;
    }
    if (!g[PP_RQ_DP]) rr->dp = S * R, rg[PP_RQ_DP] = 1;
    if (!g[PP_RQ_REPLICATE] && S > 1 && R > 1) rr->replicate = R, rg[PP_RQ_REPLICATE] = 1;
    if (!g[PP_RQ_ZERO]) {
        rr->zero = S == 1 ? 0 : tc->reshard == PP_TT_RESHARD_NEVER ? 2 : tc->reshard == PP_TT_RESHARD_ALWAYS ? 3
                 : rr->pp > 1 ? 2 : 3;
        rg[PP_RQ_ZERO] = 1;
    }
    if (tc->offload && !g[PP_RQ_OFFLOAD]) rr->offload = PP_OFF_PARAMS, rg[PP_RQ_OFFLOAD] = 1;
    if (!g[PP_RQ_SEQ]) rr->seq = tc->seq, rg[PP_RQ_SEQ] = 1;
    if (!g[PP_RQ_MBS]) {
        if (tc->mb_tokens % tc->seq) {
            st = pp_error_set(err, PP_ERR_INPUT, path, tc->mb_line, tc->mb_col, "torchtitan config: "
                              "training.num_tokens_per_microbatch_per_dp_rank %lld is not a whole number of "
                              "max_context_length %lld sequences: give --mbs", (long long)tc->mb_tokens, (long long)tc->seq);
            goto done;
        }
        rr->mbs = tc->mb_tokens / tc->seq, rg[PP_RQ_MBS] = 1;
    }
    /* the pipeline's split and virtual stages hold while no flag states another pipeline */
    if (!g[PP_RQ_PP] && !g[PP_RQ_VPP] && !g[PP_RQ_PIPELINE_LAYOUT] && !g[PP_RQ_FIRST_STAGE] && !g[PP_RQ_LAST_STAGE]) {
        if (tc->pipeline_layout) rr->pipeline_layout = tc->pipeline_layout, rg[PP_RQ_PIPELINE_LAYOUT] = 1;
        else if (tc->vpp > 1) rr->vpp = tc->vpp, rg[PP_RQ_VPP] = 1;
    }
    if (!g[PP_RQ_GBS]) {
        if (tc->step_tokens > 0) {
            if (tc->step_tokens % tc->seq) {
                st = pp_error_set(err, PP_ERR_INPUT, path, tc->step_line, tc->step_col, "torchtitan config: "
                                  "training.num_tokens_per_train_step %lld is not a whole number of max_context_length "
                                  "%lld sequences: give --gbs", (long long)tc->step_tokens, (long long)tc->seq);
                goto done;
            }
            rr->gbs = tc->step_tokens / tc->seq;
        } else {
            rr->gbs = rr->mbs * (rr->pp > 1 ? tc->microbatches : 1) * rr->dp;
        }
        rg[PP_RQ_GBS] = 1;
    }
    /* the stack: what the file states (not the precision: a float8 run's file is a bf16 run's) */
    if (!g[PP_RQ_PARAM_DTYPE]) rr->param_dtype = tc->param_bf16, rg[PP_RQ_PARAM_DTYPE] = 1;
    if (tc->compile && !g[PP_RQ_COMPILE]) rr->compile = true, rg[PP_RQ_COMPILE] = 1;
    if (tc->compile_loss && !g[PP_RQ_COMPILE_LOSS] && !g[PP_RQ_NO_COMPILE_LOSS])
        rr->compile_loss = true, rg[PP_RQ_COMPILE_LOSS] = 1;
    if (tc->async_tp && rr->tp > 1 && !g[PP_RQ_TP_COMM_OVERLAP]) rr->tp_comm_overlap = true, rg[PP_RQ_TP_COMM_OVERLAP] = 1;
    if (tc->recompute >= 0 && !g[PP_RQ_RECOMPUTE]) rr->recompute = tc->recompute, rg[PP_RQ_RECOMPUTE] = 1;
    if (tc->optimizer_impl >= 0 && !g[PP_RQ_OPTIMIZER_IMPL]) rr->optimizer_impl = tc->optimizer_impl, rg[PP_RQ_OPTIMIZER_IMPL] = 1;
    if (tc->loss >= 0 && !g[PP_RQ_LOSS]) rr->loss = tc->loss, rg[PP_RQ_LOSS] = 1;
    st = request_resolve(rr, cat, needs_layout, quiet, out, err);
    if (st != PP_OK && rr->pipeline_layout && !g[PP_RQ_PIPELINE_LAYOUT] && !strncmp(err->msg, "--pipeline-layout", 17)) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg + 17);
        st = pp_error_set(err, st, path, 0, 0, "the pipeline split (module_fqns_per_model_part, or torchtitan's split) "
                          "'%s'%s", rr->pipeline_layout, msg);
        goto done;
    }
    if (st != PP_OK) goto done;
    /* the model the flavor names is the file's: its size must be the catalog entry's */
    const pp_model *m = &out->work.model;
    if (rr->model == tc->catalog && !g[PP_RQ_LAYERS] && !g[PP_RQ_HIDDEN] && !g[PP_RQ_VOCAB] &&
        ((tc->layers && tc->layers != m->layers) || (tc->dim && tc->dim != m->hidden) ||
         (tc->vocab && tc->vocab != m->vocab))) {
        st = pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "model_spec.model (%lld layers, dim %lld, vocab %lld) is not "
                          "catalog model %s of flavor %s %s (%lld layers, hidden %lld, vocab %lld): give --model",
                          (long long)tc->layers, (long long)tc->dim, (long long)tc->vocab, m->name, tc->name, tc->flavor,
                          (long long)m->layers, (long long)m->hidden, (long long)m->vocab);
        pp_resolved_free(out);
        goto done;
    }
    if (tc->unmodelled[0])
        warn(out, quiet, "%s: not modelled (they change memory or time): %s", path, tc->unmodelled);
    if (tc->unknown[0]) warn(out, quiet, "%s: keys torchtitan's Trainer.Config does not define, not read: %s", path, tc->unknown);
done:
    pp_tt_config_free(tc);
    free(tc);
    free(rr);
    return st;
}

static pp_status request_resolve(const pp_request *r, const pp_catalog *cat, bool needs_layout, bool quiet,
                                 pp_resolved *out, pp_error *err)
{
    memset(out, 0, sizeof *out);
    const unsigned char *g = r->given;
    for (int i = 0; i < N_NEGATIONS; i++)
        if (g[field_negations[i].on] && g[field_negations[i].off])
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s and %s: give one", field_negations[i].on_name,
                                field_negations[i].off_name);
    pp_work *w = &out->work;
    w->framework = (pp_framework)r->framework;
    w->attention = (pp_attention)r->attention;
    pp_stack_init(&w->stack);
    out->layout = pp_request_layout(r);
    out->fixed = pp_request_fixed(r);
    pp_status st;
    if (r->recipe) {
        /* the recipe over parplan's defaults; the file's arguments and the flags go over it */
        st = pp_recipe_resolve(&out->recipe, cat ? cat->dir : NULL, r->recipe, err);
        if (st != PP_OK) return st;
        out->have_recipe = true;
        if (g[PP_RQ_FRAMEWORK] && (pp_framework)r->framework != out->recipe.framework)
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--framework %s: recipe %s is %s's",
                                pp_framework_names[r->framework], out->recipe.name,
                                pp_framework_names[out->recipe.framework]);
        pp_recipe_apply(&out->recipe, w);
        if (g[PP_RQ_ATTENTION]) w->attention = (pp_attention)r->attention;
    }
    if (r->megatron_args) {
        st = margs_load(r->megatron_args, &out->margs, err);
        if (st != PP_OK) return st;
    }
    pp_margs_config *mc = out->margs;
    if (r->model) {
        st = pp_model_resolve(&w->model, cat, r->model, err);
        if (st != PP_OK) return st;
    } else if (mc) {
        w->model = mc->model;
        if (mc->need_vocab && !r->vocab)
            return pp_error_set(err, PP_ERR_INPUT, r->megatron_args, 0, 0,
                                "the Megatron arguments do not give the vocabulary (the script's tokenizer does): "
                                "give --vocab N");
    } else if (r->layers && r->hidden && r->heads && r->vocab && r->seq) {
        /* An inline model: all shape flags given, GPT defaults for the rest. */
        pp_model_init(&w->model);
        snprintf(w->model.name, sizeof w->model.name, "inline");
        w->model.bias = true;
        w->model.tied = true;
    } else {
        return pp_error_set(err, PP_ERR_INPUT, 0, 0, 0,
                            "--model is required (or all of --layers --hidden --heads --vocab --seq, or --megatron-args)");
    }
    /* A config.json's max_position_embeddings is the longest context the model serves (DeepSeek-V3:
     * 163840, after YaRN extension), rarely the length it is trained at; the loader takes it since
     * the file gives no other, and a silent 160K sequence would read as out of memory everywhere. */
    if (r->model && !r->seq && w->model.seq > 8192 && !strncmp(w->model.source, "Hugging Face config.json", 24))
        warn(out, quiet,
             "sequence length %lld is the config.json's longest context (max_position_embeddings), not a "
             "training length: --seq N sets the one you train at",
             (long long)w->model.seq);
    if (any_override(r)) {
        apply_overrides(r, &w->model);
        st = pp_model_validate(&w->model, err);
        if (st != PP_OK) {
            err->file[0] = 0; /* about the flags, not the file */
            err->line = err->col = 0;
            return st;
        }
    }
    if (!pp_model_is_moe(&w->model) &&
        (g[PP_RQ_DISPATCHER] || g[PP_RQ_FLEX_BACKEND] || g[PP_RQ_GROUPED_GEMM] || g[PP_RQ_CAPACITY] ||
         g[PP_RQ_IMBALANCE] || g[PP_RQ_EP_OVERLAP]))
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s needs a model with experts (model %s has none)",
                            g[PP_RQ_DISPATCHER] ? "--moe-dispatcher" : g[PP_RQ_FLEX_BACKEND] ? "--moe-flex-backend"
                            : g[PP_RQ_GROUPED_GEMM] ? "--moe-grouped-gemm"
                            : g[PP_RQ_CAPACITY] ? "--capacity-factor" : g[PP_RQ_EP_OVERLAP] ? "--ep-overlap"
                            : "--moe-imbalance", w->model.name);
    if (!r->gpu) return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--gpu is required (see parplan models)");
    st = pp_gpu_resolve(&w->gpu, cat, r->gpu, err);
    if (st != PP_OK) return st;
    w->gpu.entry_memory_bytes = w->gpu.memory_bytes;
    if (g[PP_RQ_GPU_MEM]) w->gpu.memory_bytes = w->gpu.given_memory_bytes = r->gpu_mem_gib * 1073741824.0;
    if (g[PP_RQ_GPU_POWER]) {
        st = pp_gpu_power_check(&w->gpu, r->gpu_power_w, "--gpu-power-w", err);
        if (st != PP_OK) return st;
        w->gpu.power_w = r->gpu_power_w;
        w->gpu.power_given = true;
    }
    /* --max-mem-frac: room the user keeps (another process, fragmentation the model does not
     * track); every fits verdict, the search's pruning and the printed capacity use the reduced
     * figure. */
    if (r->max_mem_frac > 0) w->gpu.memory_bytes *= r->max_mem_frac;
    /* Without it, plan keeps the measured default margin free (pp_memory.h); a fraction given is
     * the whole margin. */
    w->mem_margin_frac = r->max_mem_frac > 0 ? 0 : PP_MEM_MARGIN_DEFAULT;
    pp_layout *l = &out->layout;
    if (mc) margs_layout(r, mc, l);
    w->gpus = r->gpus;
    if (!w->gpus && mc) {
        /* the log's world size, the launcher's GPU count, or the log's data-parallel size */
        if (mc->has & PP_MARGS_HAS_WORLD) w->gpus = mc->world_size;
        else if (mc->has & PP_MARGS_HAS_DP) w->gpus = l->tp * l->pp * l->cp * mc->dp;
    }
    if (!w->gpus)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, mc ? "--gpus is required: the Megatron arguments do not say "
                                                                "how many GPUs (no world size, no torchrun --nproc-per-node)"
                                                              : "--gpus is required");
    w->gpus_per_node = r->gpus_per_node ? r->gpus_per_node
                       : mc && (mc->has & PP_MARGS_HAS_GPN) ? mc->gpus_per_node : w->gpu.gpus_per_node;
    if (w->gpus_per_node < 1) w->gpus_per_node = 8;
    if (w->gpus > w->gpus_per_node && w->gpus % w->gpus_per_node)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "--gpus %lld is not a whole number of nodes of %lld (--gpus-per-node)",
                            (long long)w->gpus, (long long)w->gpus_per_node);
    if (w->gpus < w->gpus_per_node) w->gpus_per_node = w->gpus;
    int64_t mp = l->tp * l->pp * l->cp;
    int64_t dp = l->dp > 0 ? l->dp : mp > 0 && w->gpus % mp == 0 ? w->gpus / mp : 0;
    w->gbs = r->gbs;
    if (!w->gbs && mc) w->gbs = mc->gbs > 0 ? mc->gbs : l->mbs * (dp > 0 ? dp : 1); /* Megatron's default */
    if (!w->gbs) w->gbs = w->model.gbs ? w->model.gbs : 1024;
    if (mc) {
        if (!g[PP_RQ_FRAMEWORK] && !out->have_recipe) w->framework = mc->framework;
        if (!g[PP_RQ_ATTENTION]) w->attention = mc->attention;
        w->stack = mc->stack;
        if (out->have_recipe) {
            /* the recipe's fields that Megatron's arguments do not say */
            pp_recipe only = out->recipe;
            only.set &= ~MARGS_FIELDS;
            pp_recipe_apply(&only, w);
        }
        stack_merge(r, &w->stack, true, w->framework);
        if (!g[PP_RQ_NO_OVERLAP]) {
            pp_layout t = *l;
            t.dp = dp;
            pp_margs_config_overlap(mc, &t);
            w->stack.no_overlap = mc->stack.no_overlap;
        }
    } else {
        stack_merge(r, &w->stack, false, w->framework);
    }
    /* dropout: the specific flags over --dropout over the file's (or the model's) */
    if (g[PP_RQ_DROPOUT] || g[PP_RQ_ATTN_DROPOUT] || g[PP_RQ_HIDDEN_DROPOUT]) {
        double a = 0, h = 0;
        pp_work_dropout(w, &a, &h);
        if (g[PP_RQ_DROPOUT]) a = h = r->dropout;
        if (g[PP_RQ_ATTN_DROPOUT]) a = r->attention_dropout;
        if (g[PP_RQ_HIDDEN_DROPOUT]) h = r->hidden_dropout;
        w->stack.attention_dropout = a;
        w->stack.hidden_dropout = h;
        w->stack.dropout_given = true;
    }
    recipe_sources(r, out);
    st = pp_stack_check(w, err);
    if (st != PP_OK) return st;
    if (g[PP_RQ_OPTIMIZER_IMPL] && w->framework != PP_FW_FSDP)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "--optimizer-impl is torch AdamW's implementation under --framework fsdp, not %s",
                            pp_framework_names[w->framework]);
    /* a recipe's fp8_param_gather applies to its FP8 runs; the flag asks for FP8 parameters */
    if (g[PP_RQ_FP8_PARAM_GATHER] && !pp_precision_fp8_params(w->stack.precision))
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "--fp8-param-gather keeps the parameters quantized: it needs --precision fp8, mxfp8 or nvfp4 "
                            "(Megatron's --fp4-param-gather), not %s",
                            pp_precision_names[w->stack.precision]);
    pp_stack_resolve(w);
    if (r->profile) {
        st = pp_profile_load_file(&out->profile, r->profile, err);
        if (st != PP_OK) return st;
        out->have_profile = true;
        w->profile = &out->profile;
    }
    if (g[PP_RQ_PIPELINE_LAYOUT] || g[PP_RQ_FIRST_STAGE] || g[PP_RQ_LAST_STAGE]) {
        st = split_from_flags(r, w, l, out, err);
        if (st != PP_OK) return st;
    }
    pp_layout_canonical(w, l);
    if (needs_layout) {
        st = pp_layout_validate(w, l, err);
        if (st != PP_OK) return st;
    }
    /* what the file sets that parplan does not model: one line, never dropped */
    if (mc && (mc->unmodelled[0] || mc->overlap_note[0]))
        warn(out, quiet, "%s: not modelled (they change memory or time): %s%s%s", r->megatron_args,
             mc->unmodelled, mc->unmodelled[0] && mc->overlap_note[0] ? "; " : "", mc->overlap_note);
    return PP_OK;
}

void pp_resolved_free(pp_resolved *res)
{
    if (!res) return;
    if (res->have_profile) pp_profile_free(&res->profile);
    res->have_profile = false;
    res->work.profile = NULL;
    free(res->margs);
    res->margs = NULL;
    free(res->split);
    res->split = NULL;
}

pp_status pp_request_parse(pp_request *r, int argc, char **argv, pp_error *err)
{
    pp_option_set set = {pp_request_options, pp_request_n_options, r, r->given};
    char **pos = NULL;
    int npos = 0;
    pp_status st = pp_options_parse(&set, 1, "check", argc, argv, &pos, &npos, err);
    if (st == PP_OK && npos)
        st = pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "unexpected argument '%s'", pos[0]);
    free(pos);
    return st;
}

pp_status pp_request_parse_line(pp_request *r, const char *line, pp_error *err)
{
    free(r->owned);
    r->owned = strdup(line);
    if (!r->owned) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    char *argv[256];
    int argc = 0;
    for (char *save = NULL, *tok = strtok_r(r->owned, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
        if (argc == (int)(sizeof argv / sizeof argv[0]))
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "too many arguments in '%.60s'", line);
        argv[argc++] = tok;
    }
    return pp_request_parse(r, argc, argv, err);
}
