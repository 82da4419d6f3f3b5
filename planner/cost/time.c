/* Step-time model.
 *
 * A step is built bottom-up, as a Megatron expert would estimate it on paper:
 *   1. one transformer layer, one micro-batch, one rank (this file): the layer description's
 *      (layer.c) GEMMs at their sharded shapes with a shape-dependent efficiency, the attention
 *      core (flash or unfused), the elementwise kernels from memory bandwidth, and the exposed
 *      part of the TP / CP / EP collectives; the embedding and the output layer;
 *   2. (time_step.c) a pipeline stage = its layers (+ embedding or output layer + loss), recompute included;
 *   3. the pipeline: (m - 1) x slowest stage + sum of stages for 1F1B (Narayanan et al. SC'21
 *      sec. 2.2: bubble fraction (p-1)/m), (p-1)/v of a stage for the interleaved schedule;
 *   4. the DP gradient reduction (all-reduce, or reduce-scatter + all-gather when sharded), of
 *      which only what does not fit behind the last backward is exposed, ZeRO-3 gathers, and
 *      the optimizer step (memory-bound).
 * Collectives use the nccl-tests bus-bandwidth convention (all-reduce moves 2(n-1)/n of the
 * buffer per rank, all-gather / reduce-scatter (n-1)/n) with NVLink bandwidth inside a node and
 * the per-GPU network bandwidth across nodes.
 *
 * The only constants that are not a GPU's catalog entry, a published formula or a software
 * fact (pp_time_opts) are the few model-form constants below, shared by every GPU: measured on
 * the anchors of the lent H100 (tests/data/anchors/h100_torch.jsonl), one of them fitted there,
 * one an estimate. tests/cost/time/unit.c checks them against those anchors;
 * tests/cost/time/validation.c checks whole steps against published tables (docs/time-model.md).
 */
#include "pp_time.h"

#include <math.h>
#include <string.h>

#include "pp_layer.h"
#include "pp_memory.h"
#include "pp_profile.h"

/* ------------------------------------------------------------------ model-form constants */

/* GEMM efficiency against shape. A GEMM (m x k)(k x n) does 2mnk FLOPs and moves at least
 * 2(mk + kn + mn) bytes; charging both, at the compute rate R and the memory bandwidth BW
 * (a roofline without overlap),
 *   time = 2mnk/R (1 + c (1/m + 1/n + 1/k)),   c = R / BW   (elements; H100: 235, A100: 133).
 * There is no fitted shape constant: with c = R/BW exactly, the form fits the 61 usable bf16
 * gemm_shape rows of the H100 anchors with a MAPE of 5.9% (max 16%), once its scale is set to
 * GEMM_SUSTAINED x the catalog's 8192^3 figure (gemm_eff): the transformer shapes, measured in
 * one ~2-minute sweep, ran at 0.95 of what the short 8192^3 run reached (clocks under sustained
 * load). Three rows (h 2048, tp 8: proj, fc1, fc2 at 26-132 TFLOP/s while the twice larger
 * tp 4 GEMMs ran at 700) are measurement outliers and are left out of the fit.
 * A GPU entry's gemm_sustained replaces GEMM_SUSTAINED where it is stated: the fraction of the
 * gemm_eff rate that large GEMMs hold in a training run, with the GPU at its power limit (the
 * H100 SXM and the GPUs of its die at 700 W: 0.88, from the h 8192 rows, measured last, of four
 * sweeps on the lent H100 and H200; models.d/gpus/h100-sxm.yaml and docs/time-model.md,
 * "Sustained GEMM rate"). GEMM_SUSTAINED stays the short sweep's figure, for the entries that
 * state none. */
#define GEMM_SUSTAINED 0.95
#define GEMM_REF_DIM 8192.0

/* Elementwise kernels (LayerNorm, bias-GELU, bias-dropout-add, softmax, cross-entropy) stream
 * at the bandwidth the anchors measured for a plain copy and multiply on H100: 3003 and 3044 of
 * 3350 GB/s, 0.90. */
#define ELEM_EFF 0.90

/* Backward GEMMs (dgrad: dY W^T, wgrad: X^T dY) do twice the forward FLOPs but run slower
 * than the forward GEMMs (transposed operands, wgrad's long reduction over the tokens): the
 * anchors' GPT layers take 2.4-2.8x their forward time in the backward, not 2x. Least-squares
 * fit (log error) on the anchors' 5 layer rows, with ELEM_EFF as measured and the anchors'
 * FlashAttention-2 at its published H100 efficiency (tests/cost/time/unit.c: 5.3% MAPE). */
#define BWD_GEMM_EFF 0.88

/* Overlap is not free: NCCL runs its collectives on SMs of its own (one per channel, up to 16-32
 * of the 108-132) and streams every byte through HBM, so a GEMM that runs beside a collective
 * loses about a fifth of its speed for as long as the collective lasts (0.2 of the hidden time is
 * charged to the critical path). It also makes ZeRO-3's per-micro-batch gathers cost something
 * when they hide behind the compute. An estimate of the SM share, not a fit. */
#define OVERLAP_COST 0.2

/* Collectives: achieved bus bandwidth as a fraction of the link bandwidth. NVLink: the
 * anchors' 2 x H200 all-reduce reaches 330 GB/s of NV18's 450 (0.73) at 1 GiB; nccl-tests on
 * 8 x A100 report ~235 of 300 (0.78). Network: InfiniBand reaches ~92% of the line rate. */
#define NCCL_NVLINK_EFF 0.75
#define NCCL_NET_EFF 0.90

/* Bytes moved by the elementwise kernels of one layer, per token, with 16-bit activations and
 * Megatron's fused kernels (bias-GELU, bias-dropout-add, scale-mask-softmax), counted pass by
 * pass (read + write; a dropout mask is 1 byte). h-wide rows are divided by t with SP. */
#define EW_NORM_FWD 4.0     /* LayerNorm: read x, write y */
#define EW_NORM_BWD 8.0     /* read x, dy, write dx, + the residual-gradient add */
#define EW_BDA_FWD 7.0      /* bias-dropout-add: read out, residual; write y, mask */
#define EW_BDA_BWD 8.0      /* read dy, mask; write dx; residual-gradient accumulation */
#define EW_MASK 1.0         /* the dropout mask's byte in each of the two above */
#define EW_GELU_FWD 4.0     /* per f-wide element: read, write */
#define EW_GELU_BWD 6.0     /* read x, dy; write dx */
#define EW_SWIGLU_FWD 6.0   /* per f-wide element: read gate, up; write out */
#define EW_SWIGLU_BWD 10.0  /* read gate, up, dy; write dgate, dup */
#define EW_ROPE 4.0         /* per q/k element, forward and backward */
#define EW_SCORE_FWD 9.0    /* unfused attention, per score: softmax r/w 4, dropout r/w + mask 5 */
#define EW_SCORE_BWD 11.0   /* dropout bwd 5 (read grad, mask; write), softmax bwd 6 */
#define EW_SCORE_DROPOUT 5.0 /* the dropout's share of each of the two above */
#define EW_MOE_PERMUTE 8.0  /* MoE token permute + unpermute: two copies of h per routed token */
#define EW_ROUTER_FWD 14.0  /* per router logit: write 2, softmax r/w 2+4 (fp32), top-k read 4, map 2 */
#define EW_ROUTER_BWD 14.0  /* softmax and gather backward over the same elements */
#define EW_PROB_SCALE 8.0   /* eager expert MLP: activation x router probability, fp32 product and
                               its cast back (read 2, write 4, read 4... per element of f: 8 net) */
#define EW_CE_FWD 38.0      /* vocab-parallel cross-entropy per logit (megatron/core/tensor_parallel/
                             cross_entropy.py): to fp32 6, max 4, -= max 8, exp 8, sum 4, /= sum 8 */
#define EW_CE_BWD 14.0      /* grad = softmax (in place) x dloss 8, back to 16-bit 6 */
#define EW_FP8_CAST_FWD 4.0 /* FP8: a linear input cast to 8 bits, row-wise and transposed (read 2,
                               write 1 + 1; TE's cast-transpose kernel) */
#define EW_FP8_CAST_BWD 3.0 /* FP8: the output gradient cast to 8 bits (read 2, write 1) */
/* torchao's float8 under FSDP2 (--framework fsdp --precision fp8), end to end on two H200s with
 * torch 2.11 and torchao 0.18 (tests/data/fsdp/runs_float8.csv: torchtitan's float8 converter on
 * Llama-3-8B's shape at 8 layers, compiled blocks and loss, 16k-32k tokens, with bf16 twins). Its
 * casts are more work than TransformerEngine's cast-transpose (EW_FP8_CAST_*, which they are priced
 * as, times these): an amax reduction before each cast, the output gradient cast twice (as is and
 * transposed), the saved input cast again for the weight gradient, all as Inductor kernels. The
 * tensorwise recipe's casts take FP8_TORCHAO_CAST_X times the TE bytes, fitted on the looked-at
 * f8t_s16k_full and f8t_s16k_sel (their steps were priced -7.7% and -6.1% with TE's bytes; the
 * profiled steps' copy and elementwise kernels 46 ms over the bf16 twin's, priced 10); the rowwise
 * recipe's FP8_ROWWISE_CAST_X times that, fitted on f8r_s16k_full (-9.1% before; its kernels 93 ms
 * over the twin's, twice tensorwise's). Held out: f8t_s16k_none, f8t_s32k_full, f8r_s16k_sel,
 * f8r_s16k_none -14.5 / -7.6 / -8.1 / -13.1% -> -9.5 / -2.2 / +1.9 / -5.9% (and under TP, below).
 * On one H200's seven linears of a block alone (tests/data/fp8/fp8_linear.jsonl,
 * tools/fp8/fp8_linear.py) the rowwise casts took 3.53-4.47x the tensorwise ones: in a whole
 * compiled block Inductor fuses part of them with the norms and SwiGLU around the linears. Their GEMMs (torch._scaled_mm with per-row x
 * per-column fp32 scales, fast accumulation in the forward as torchao sets it) took 1.115x, 1.009x
 * and 1.040x the per-tensor-scaled ones there; end to end the two recipes' GEMM kernels summed to
 * within 0.5%. The cast work follows the GPU's memory bandwidth. */
#define FP8_TORCHAO_CAST_X 5.49
#define FP8_ROWWISE_CAST_X 2.37
#define FP8_ROWWISE_GEMM_X 1.054
#define EW_EMBED 4.0        /* embedding lookup: read row, write */
#define EW_EMBED_GRAD 8.0   /* per embedding element: fp32 main-grad read + write per micro-batch */
/* Weight gradients are accumulated over the micro-batches into the gradient buffer: every
 * weight element costs pp_time_opts.grad_accum_bytes of HBM traffic per micro-batch on top of
 * the GEMM's own (see pp_time_opts_default). */

/* A kernel's launch as the GPU sees it when the host keeps up: the gap between two dependent
 * kernels of a stream (~4 us on Hopper with CUDA graphs off). Megatron's SequentialMLP runs one
 * GEMM chain per local expert (megatron/core/transformer/moe/experts.py): about 8 kernels forward
 * (fc1, gate/linear split, SiLU, product, probability scale and cast, fc2) and 16 backward, so a
 * looped expert costs at least 24 launches per micro-batch however few tokens it gets; a grouped
 * GEMM (TE GroupedLinear, --moe-grouped-gemm) runs all local experts in each of those steps at
 * once. What the Python host adds on top (the local stack) is the calibration's
 * expert_overhead_s (pp_calibrate.h). */
#define KERNEL_GAP_S 4e-6
#define EXPERT_LOOP_KERNELS 24.0
/* Router, permutation and dispatch of one MoE layer: softmax, top-k, the routing map, the
 * token sort and its inverse, the host sync for the tokens-per-expert counts (.tolist() in
 * SequentialMLP and the alltoall dispatcher): about 30 kernels forward and backward. */
#define MOE_LAYER_KERNELS 30.0
/* --expert-pad-loop (KempnerForge's packed experts, kempnerforge/model/moe.py:119-142 at 5666d0d1):
 * after `.tolist()` syncs the tokens-per-expert counts to the host (:288-290), the tokens are
 * copied into an (experts x busiest) buffer and back out one expert at a time in Python, and the
 * backward runs the copies' gradients one by one; the GPU has drained at the sync, so the host's
 * time is the step's. Seconds per local expert per MoE layer per pass (the forward, its recompute,
 * the backward), fitted on the looked-at 8-expert runs of tests/data/kf (two H200: 12 and 24
 * layers, their step 11.7% and 11.9% above the GPU's time alone); the 16-expert run was held out.
 * The kf-runs test refits it. */
#define EXPERT_PAD_HOST_S 0.243e-3
/* Megatron-Core's MoE layer on the TransformerEngine stack (grouped experts, dropless: the
 * dispatcher syncs the tokens-per-expert counts to the host every layer and micro-batch), as the
 * NeMo Megatron-Bridge releases of 2025-26 run it without CUDA graphs of the whole layer: the
 * host's time to issue one layer for one micro-batch, forward and backward. Where the GPU work is
 * small the host sets the pace: Qwen3-30B-A3B at micro-batch 1 ran 9299 and 9691 tokens/s/GPU on
 * 8 B200 with EP 8 (25.11, 26.02) and 9058 and 8960 on 16 H100 (26.02.01 with PP 2 x VP 12,
 * 26.04.01 with EP 16), the same pace on GPUs 2.3x apart in FP8 throughput, while the B200 ran
 * 27136 at micro-batch 4 (NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md). The
 * figure is the 26.02 B200 row's, a row none of the validation tables holds: 27.05 s for 64
 * micro-batches of 48 layers, less the rest of the step as this model prices it (the output layer
 * and loss, the embedding and the optimizer: 0.69 s), 8.6 ms per layer and micro-batch. */
#define MOE_TE_HOST_LAYER_S 8.6e-3
/* Of that, what the GPU waits whatever its own work: the dispatcher's host sync (the tokens-per-
 * expert counts, every layer and micro-batch) drains the GPU's queue, and the kernels after it run
 * only as the host issues them again. Without it a layer takes max(GPU, host); Qwen3-30B-A3B at
 * micro-batch 4 and 8 ran 3-3.6 ms per layer and micro-batch over its GPU time on B200, B300, GB200
 * and GB300 alike, where that rule adds nothing. A layer takes max(GPU, host pace) + the stall, the
 * host pace being MOE_TE_HOST_LAYER_S less the stall (so the micro-batch-1 row above stays as it
 * ran). The stall fitted on the calibrate half of tests/data/published/blackwell_moe.csv (grid
 * 0-5 ms, step 0.5 ms; split chosen before): step MAPE 18.9% -> 15.1% (calibrate), 22.0% -> 17.3%
 * (holdout). No stall where the whole MoE part or the whole iteration is captured (a captured
 * dispatcher cannot sync). */
#define MOE_SYNC_STALL_S 3.5e-3
/* What CUDA graphs take off that host time (--cuda-graphs; Megatron --cuda-graph-impl and
 * --cuda-graph-modules). The figure above is a run's with its router and preprocess captured
 * (Megatron-Bridge v0.3.0 scripts/performance/configs/qwen/qwen3_workload_base_configs.py,
 * QWEN3_30B_A3B_PRETRAIN_CONFIG_B200_FP8_MX_V1: transformer_engine, moe_router + moe_preprocess),
 * and no published run without graphs separates from it, so none and those parts price the same.
 * Capturing the attention replays its kernels without the host: MOE_HOST_ATTN_SHARE of the
 * layer's host time, fitted (grid 0.05-0.95, step 0.05) on the calibrate rows of
 * tests/data/published/blackwell_moe.csv that capture attn, moe_router and moe_preprocess.
 * Capturing the whole MoE part (moe) leaves the rest of the layer's host time to the attention;
 * one graph of the whole iteration (full_iteration) leaves none. Fitted before the sync stall
 * (MOE_SYNC_STALL_S) took 3.5 ms of the host time: since then no row of that table moves with it
 * (grid 0-1: calibrate 15.1%, holdout 17.3% throughout), the rows' GPU time being above the
 * smaller host pace; it still sets the pace where the GPU work is smaller (micro-batch 1). */
#define MOE_HOST_ATTN_SHARE 0.25


/* --framework fsdp: PyTorch FSDP2 training as torchtitan runs it (eager modules, no fusions but
 * the fused rms_norm, SDPA flash, fp32 master parameters). Bytes per token of one Llama block's
 * elementwise kernels, counted op by op (torchtitan/models/llama3/model/model.py; reads +
 * writes, 16-bit activations):
 *   forward: rms_norm 4 (x2), residual add 6 (x2), per f element SiLU 4 + product 6, per q/k
 *   element RoPE in fp32 on complex numbers 20 (.float() 2+4, complex multiply 4+4, back to
 *   bf16 4+2), per repeated k/v element repeat_kv's copy 2 + 2 of the narrower input;
 *   backward: the two residual-gradient accumulations 6 (x2), rms_norm backward 8 (x2, input
 *   gradient and the weight-gradient partial sums), the input-gradient accumulations of the
 *   linears that share an input (wq/wk/wv: two, w1/w3: one) 6 each on the gathered width, per f
 *   element the product's two gradients 6 + 6 and SiLU's 6, RoPE's backward 20, repeat_kv's sum. */
#define EW_FSDP_NORM_FWD 4.0
#define EW_FSDP_NORM_BWD 8.0
/* --eager-norm composite: RMSNorm as the ops PyTorch 2.4-2.7's F.rms_norm decomposed into (and
 * torchtitan's 2024 RMSNorm, ibm-fms's LayerNormParameterized): x.float(), pow, mean, + eps, rsqrt,
 * the product, type_as, the product by the weight, and autograd's backward of each. Measured on one
 * H200 with PyTorch 2.11 (tests/data/fsdp/rmsnorm.jsonl, tools/fsdp/rmsnorm.py: 8192-16384 tokens
 * of 4096-8192): forward 46-52 and backward 100-112 bytes an element at the GPU's copy rate, the
 * means below; F.rms_norm's fused kernels took 4.7-6.3 and 11.9-15.6 there (the 4 and 8 above
 * count its reads and writes). */
#define EW_FSDP_NORM_COMPOSITE_FWD 49.5
#define EW_FSDP_NORM_COMPOSITE_BWD 106.9
#define EW_FSDP_ADD 6.0
#define EW_FSDP_SWIGLU_FWD 10.0
#define EW_FSDP_SWIGLU_BWD 18.0
#define EW_FSDP_GELU_FWD 4.0
#define EW_FSDP_GELU_BWD 6.0
#define EW_FSDP_ROPE 20.0
#define EW_FSDP_REPEAT 2.0
/* torchao's tensorwise float8 in a compiled block without AC (layer.c, fp8.norm_backward): the
 * backward's kernels that recompute each norm's output and fuse it with the norm's backward and
 * the float8 casts are persistent reductions that took 66.3 and 69.0 ps an element of the norms'
 * outputs (two per layer) on two H200s, 35.6 ms over 8 Llama-3-8B layers of 16k tokens and 27.8 ms
 * over 12 of 8k (profiles of f8t_s16k_none, tests/data/fsdp/float8/float8_runs.jsonl, and
 * e8_f8t_none_l12_p, tests/data/fsdp/f8cast): their mean at the elementwise rate (ELEM_EFF x 4.8
 * TB/s), in bytes an element. Neither rowwise nor AC gets these kernels (the same profiles), nor
 * micro-batch 2 (tests/data/fsdp/f8held h3_f8t_none_b2_p). */
#define EW_FSDP_FP8_NORM_BWD 146.0
/* The loss on logits.float() (torch cross_entropy = log_softmax + nll_loss), per logit: forward
 * the fp32 copy 6 and log_softmax's passes (max, sum of exp, write) 16; backward nll_loss's
 * gradient fill 4, log_softmax backward (sum pass and write) 16, the cast to bf16 6. */
#define EW_FSDP_CE_FWD 22.0
#define EW_FSDP_CE_BWD 26.0
/* The same loss compiled (--compile-loss): Inductor's kernels read the bf16 logits twice forward
 * (the row's max, then its sum of exp: 4) and once backward, writing the bf16 gradient (4); the
 * upcast and the log-softmax are never stored (tests/data/fsdp/loss_memory.jsonl). */
#define EW_FSDP_CE_COMPILED_FWD 4.0
#define EW_FSDP_CE_COMPILED_BWD 4.0
/* --compile (torch.compile of each block): Inductor fuses the block's pointwise ops into one kernel
 * per chain, as TransformerEngine's and Megatron's fused kernels do, so SwiGLU and RoPE cost the
 * fused kernels' bytes (EW_SWIGLU_*, EW_ROPE: read the inputs, write the outputs once) instead of
 * eager PyTorch's op-by-op passes (EW_FSDP_SWIGLU_*, EW_FSDP_ROPE's fp32 complex round trip); the
 * norms, residual adds, repeat_kv copies and the input-gradient sums are already one pass each.
 * A compiled block is dispatched as one graph: the DTensor host pace (time_step.c,
 * FSDP_TP_HOST_BLOCK_S, measured eager) does not apply. */
/* FlashAttention-2 (PyTorch SDPA's flash backend, what torchtitan-style code runs) is written for
 * Ampere's mma.sync. On Hopper-class GPUs (catalog dense bf16 peak above this) it reaches 0.36 of
 * the large-GEMM rate forward and 0.25 backward: PyTorch 2.11 on H200, flash backend, b 1, s
 * 8192, 32 heads of 128, causal: 1.915 ms forward, 7.528 ms forward + backward
 * (tests/data/profiles/h200.torch.jsonl). Elsewhere the default FA2 figures (0.72 / 0.50). */
#define FSDP_FA2_HOPPER_PEAK 500e12
#define FSDP_FA2_HOPPER_FWD_EFF 0.363
#define FSDP_FA2_HOPPER_BWD_EFF 0.248
/* FA2's cost per query block that does not scale with the keys it attends (loading Q, the
 * diagonal block's mask, the final rescale and write): time ~ work x (1 + s0 / s). s0 from the
 * same anchors' three flash rows (s 2048, 4096, 8192 at equal work per row): forward 967,
 * backward 2392 tokens (the forward + backward rows then agree within 1.8%); the efficiencies
 * above are those at s = 8192. */
#define FSDP_FA2_S0_FWD 967.0
#define FSDP_FA2_S0_BWD 2392.0
#define FSDP_FA2_S_REF 8192.0
/* The same for SDPA's cuDNN backend (--sdpa-backend cudnn), fitted the same way (log least squares,
 * s0 grid step 25) on the cuDNN rows of h200.torch.jsonl (s 2048-8192): 0.706 forward, 0.381
 * backward at s 8192, s0 2500 / 3550. Checked beyond them on h200.attention_long.jsonl and
 * h200.attention_headdim.jsonl (time-unit). */
/* Per --sdpa-backend on Hopper-class GPUs: forward / backward share of the GEMM rate at
 * FSDP_FA2_S_REF tokens, and the per-query-block cost s0 forward / backward. */
static const struct {
    double fwd_eff, bwd_eff, s0_fwd, s0_bwd;
} fsdp_sdpa[PP_SDPA_COUNT] = {
    [PP_SDPA_FLASH] = {FSDP_FA2_HOPPER_FWD_EFF, FSDP_FA2_HOPPER_BWD_EFF, FSDP_FA2_S0_FWD, FSDP_FA2_S0_BWD},
    [PP_SDPA_CUDNN] = {0.706, 0.381, 2500.0, 3550.0},
};

/* ------------------------------------------------------------------ options */

static double gpu_peak(const pp_gpu *g);

/* The row of fsdp_sdpa a work's attention runs at on a Hopper-class GPU, or -1 for the fused
 * attention's defaults (pp_time_opts_default): torch SDPA's kernel under FSDP2 (--sdpa-backend), and
 * FlashAttention-2 under Megatron where TransformerEngine runs the flash-attn 2 package
 * (--te-attention flash2: the same FA2 kernels PyTorch vendors, measured through SDPA). */
static int hopper_attn_row(const pp_work *w)
{
    if (gpu_peak(&w->gpu) <= FSDP_FA2_HOPPER_PEAK) return -1;
    if (pp_work_fw(w)->titan_kernels) return (int)w->stack.sdpa_backend;
    if (pp_work_te(w) && w->stack.te_attention == PP_TEATTN_FLASH2) return PP_SDPA_FLASH;
    return -1;
}

void pp_time_opts_default(const pp_work *w, pp_time_opts *o)
{
    memset(o, 0, sizeof *o);
    const pp_stack *s = &w->stack;
    /* The training stack (pp_work.stack, filled by the CLI's --no-overlap, --tp-comm-overlap,
     * --precision, --dropout..., or by --megatron-args): current Megatron-Core and DeepSpeed
     * overlap the DP gradient reduction and the parameter gather with compute, and the
     * interleaved schedule's extra send/recv; --no-overlap is the stack that does none of it
     * (Megatron-LM of 2021's local DDP, DeepSpeed's pipeline engine, or a Megatron command line
     * without --overlap-grad-reduce / --overlap-param-gather, which are off unless given:
     * megatron/training/arguments.py). */
    o->overlap_grad_reduce = !s->no_overlap;
    o->overlap_param_gather = !s->no_overlap;
    o->overlap_p2p = !s->no_overlap;
    o->tp_comm_overlap = s->tp_comm_overlap; /* needs Transformer Engine userbuffers: opt-in */
    /* Fused attention of current stacks: FlashAttention-2 on A100 (Dao 2023: 50-73% of peak
     * forward, i.e. ~0.7 of cuBLAS) and cuDNN / FlashAttention-3 on H100 (Shah et al. 2024:
     * ~600 TFLOP/s forward, ~0.75 of cuBLAS); the backward at about 0.5. Checked against cuDNN
     * 9.19's fused attention (what TE runs) on one H200, causal, head dim 128, sequence 4096-65536
     * (tests/data/memopts/attn_rate.csv): 0.68-0.84 of a 8192^3 bf16 GEMM forward, 0.40-0.53
     * backward. */
    o->flash_fwd_eff = 0.72;
    o->flash_bwd_eff = 0.50;
    /* Megatron splits the PP send/recv across the TP ranks (scatter-gather); DeepSpeed's
     * pipeline engine sends the whole tensor from every TP rank. */
    const pp_fw_row *fr = pp_work_fw(w);
    o->p2p_scatter_gather = fr->p2p_scatter_gather;
    /* The dropout kernels run when either dropout is above zero: the stack's --dropout flags,
     * else the model's own (pp_work_dropout; Megatron's default 0.1 for the GPT lineage). */
    double attn_drop = 0, hidden_drop = 0;
    pp_work_dropout(w, &attn_drop, &hidden_drop);
    o->dropout = attn_drop > 0 || hidden_drop > 0;
    /* Gradient bytes by precision and framework.
     * Megatron: with --bf16 (and FP8, whose parameters are bf16) gradients are accumulated and
     * reduced in fp32 main_grads (arguments.py validate_args sets accumulate_allreduce_grads_in_fp32
     * for bf16; training.py passes it as DDP's grad_reduce_in_fp32). With --fp16 that switch stays
     * off and the gradient buffer has the parameters' dtype (megatron/core/distributed/
     * param_and_grad_buffer.py group_params_for_buffers: grad_dtype = param.dtype unless
     * grad_reduce_in_fp32): fp16 gradients are reduced as they are, which is also what the
     * Megatron-LM of 2021 (SC'21, Korthikanti et al.) did with its fp16 main_grad buffer.
     * DeepSpeed and FSDP reduce in the 16-bit training dtype by default. */
    /* --grad-reduce-bf16 (Megatron --grad-reduce-in-bf16): the buffer in bf16, as with fp16. */
    bool fp16 = pp_work_grads_16bit(w);
    o->grad_reduce_bytes = fr->reduce_bytes > 0 ? fr->reduce_bytes : pp_work_grad_bytes(w);
    /* Gradient accumulation per weight element and micro-batch (pp_frameworks: Megatron's fused
     * wgrad GEMM on the main_grad, DeepSpeed's BF16 optimizer's copies; FSDP2's per-micro-batch
     * copies are priced per parameter in the step, fsdp_step_terms). */
    o->grad_accum_bytes = fp16 ? fr->grad_accum_bytes_16 : fr->grad_accum_bytes;
    /* SDPA's FlashAttention-2 or its cuDNN backend under FSDP2; TE's FlashAttention-2 under Megatron */
    const int arow = hopper_attn_row(w);
    if (arow >= 0) {
        o->flash_fwd_eff = fsdp_sdpa[arow].fwd_eff;
        o->flash_bwd_eff = fsdp_sdpa[arow].bwd_eff;
    }
}

/* ------------------------------------------------------------------ context */

static double gpu_peak(const pp_gpu *g)
{
    return g->peak_flops[PP_DT_BF16] > 0 ? g->peak_flops[PP_DT_BF16] : g->peak_flops[PP_DT_FP16];
}

void pp_time_ctx_init(pp_time_ctx *c, const pp_work *w, const pp_time_opts *o)
{
    memset(c, 0, sizeof *c);
    c->w = w;
    if (o) c->opts = *o;
    else pp_time_opts_default(w, &c->opts);
    const pp_gpu *g = &w->gpu;
    c->peak_flops = gpu_peak(g);
    /* peak x gemm_eff x the power limit's factor (a limit below the board's maximum lowers the
     * tensor-core clock: planner/model/gpu_power.c); the datasheet peak stays the MFU's reference */
    c->gemm_rate = pp_gpu_gemm_flops(g, PP_DT_BF16);
    double bw = g->mem_bw_gbs * 1e9;
    c->gemm_shape_c = bw > 0 ? c->gemm_rate / bw : 0;
    /* the training rate of the entry's large GEMMs (its gemm_sustained), else the short sweep's */
    double sustained = g->gemm_sustained > 0 ? g->gemm_sustained : GEMM_SUSTAINED;
    c->gemm_norm = sustained * (1.0 + 3.0 * c->gemm_shape_c / GEMM_REF_DIM);
    c->mem_rate = ELEM_EFF * bw;
    /* fp8 and mxfp8 run their linear GEMMs at the FP8 rate, nvfp4 at the FP4 rate
     * (common.c pp_precision_info) */
    const pp_dtype qdt = pp_precision_info[w->stack.precision].gemm_dt;
    c->fp8 = pp_precision_quantized(w->stack.precision) && g->peak_flops[qdt] > 0;
    if (c->fp8) {
        /* The catalog's large-GEMM efficiency applied to the FP8 peak: measured on one H200
         * (tests/data/probes, torch._scaled_mm, per-tensor scales, bf16 out) 1479 TFLOP/s at
         * 8192^3 against 788 for bf16, 1.88x, where the peaks are 2x apart. */
        c->gemm_rate_fp8 = pp_gpu_gemm_flops(g, qdt);
        /* NVFP4: the entry's fitted share of the FP4 rate (its amax, Hadamard-transform and
         * 16-element scaling work in the GEMM's operand path; fp4_eff, models.d/README.md) */
        if (qdt == PP_DT_FP4 && g->fp4_eff > 0) c->gemm_rate_fp8 *= g->fp4_eff;
        /* MXFP8: the same, its E8M0 scaling of 32-element blocks (mxfp8_eff) */
        if (w->stack.precision == PP_PREC_MXFP8 && g->mxfp8_eff > 0) c->gemm_rate_fp8 *= g->mxfp8_eff;
        /* per-tensor FP8 (delayed or current scaling): the entry's fitted share (fp8_eff) */
        if (w->stack.precision == PP_PREC_FP8 && g->fp8_eff > 0) c->gemm_rate_fp8 *= g->fp8_eff;
        /* torchao's rowwise scaling: its row-scaled kernels (FP8_ROWWISE_GEMM_X) */
        if (w->stack.precision == PP_PREC_FP8 && w->stack.fp8_scaling == PP_FP8_ROWWISE)
            c->gemm_rate_fp8 /= FP8_ROWWISE_GEMM_X;
        c->gemm_shape_c_fp8 = bw > 0 ? c->gemm_rate_fp8 / bw : 0;
        c->gemm_norm_fp8 = sustained * (1.0 + 3.0 * c->gemm_shape_c_fp8 / GEMM_REF_DIM);
    }
    c->flash_fwd_rate = c->opts.flash_fwd_eff * c->gemm_rate;
    c->flash_bwd_rate = c->opts.flash_bwd_eff * c->gemm_rate;
    /* No NVLink: peer traffic goes over PCIe. */
    double link = g->nvlink_gbs > 0 ? g->nvlink_gbs : g->pcie_gbs;
    c->nvlink_bw = NCCL_NVLINK_EFF * link * 1e9;
    c->net_bw = NCCL_NET_EFF * g->internode_gbs * 1e9;
    c->lat_intra_s = g->intra_latency_s;
    c->lat_inter_s = g->inter_latency_s;

    const pp_model *m = &w->model;
    pp_param_count pc;
    pp_model_params(m, &pc);
    for (int k = 0; k < PP_LAYER_KINDS; k++) {
        bool moe = (k & PP_LAYER_MOE) && m->experts > 1;
        c->kind_dense_params[k] = (double)(pc.attention + (moe ? pc.moe_shared : pc.dense_mlp));
        c->kind_expert_params[k] = moe ? (double)pc.expert * (double)m->experts : 0.0;
    }
    c->mtp_extra_params = (double)pc.mtp_extra;
    c->embed_params = (double)pc.embedding;
    c->final_params = (double)pc.final_norm;
    c->output_params = (double)pc.output;
    c->lora_layer_params = pp_layer_lora_params(w);
    c->model_flops = pp_work_lora(w) ? pp_lora_model_flops_per_step(m, w->gbs) : pp_model_flops_per_step(m, w->gbs);
    /* a calibrated profile: the fitted factors of its software stack */
    if (w->profile) pp_calibration_apply_ctx(&w->profile->calibration, c);
}

/* ------------------------------------------------------------------ building blocks */

double pp_time_gemm_rate(const pp_time_ctx *c, double m, double n, double k)
{
    const pp_profile *p = c->w->profile;
    if (p) {
        double tf = pp_profile_gemm_tflops(p, PP_DT_BF16, (int64_t)m, (int64_t)n, (int64_t)k);
        /* the measured rate x the calibrated stack's gemm_scale */
        if (tf > 0) return tf * 1e12 * (p->calibration.present ? p->calibration.gemm_scale : 1.0);
    }
    return c->gemm_rate * c->gemm_norm / (1.0 + c->gemm_shape_c * (1.0 / m + 1.0 / n + 1.0 / k));
}

/* The logits GEMMs' time over an aligned shard's, forward and backward (data and weight gradients),
 * by the 16-bit vocabulary shard's alignment: a multiple of 8 (16 bytes), even, odd. Measured on one
 * H200 with torch 2.11's matmul (cuBLAS), 4096 tokens x 4096 hidden (tests/data/memopts/gemm_align.csv):
 * 50258 and 128260 run 2.3-2.8x the time per FLOP of 50304 and 128256, 50257, 128257 and 151937
 * 6.7-7.8x forward and 4.6-5.1x backward; a Megatron run at 50257 (tests/data/memopts v1_pad1) is
 * 17% slower a step than at 50304. */
static const double LOGITS_MISALIGNED[3][2] = {{1.0, 1.0}, {2.5, 2.65}, {7.0, 4.8}};

int64_t pp_time_logits_misaligned(const pp_work *w, const pp_layout *l, double *fwd_x, double *bwd_x)
{
    const int64_t vshard = (int64_t)(pp_layer_vocab(w, l) / (double)l->tp + 0.5);
    const int va = vshard % 8 == 0 ? 0 : vshard % 2 == 0 ? 1 : 2;
    *fwd_x = LOGITS_MISALIGNED[va][0];
    *bwd_x = LOGITS_MISALIGNED[va][1];
    return vshard;
}

/* Time of `count` GEMMs of one shape. */
static double gemm_s(const pp_time_ctx *c, double m, double n, double k, double count)
{
    if (m <= 0 || n <= 0 || k <= 0 || count <= 0) return 0;
    return count * 2.0 * m * n * k / pp_time_gemm_rate(c, m, n, k);
}

/* A transformer layer's linear GEMM: FP8 under --precision fp8 (TransformerEngine's fp8
 * autocast covers the layers' linear modules, not the attention core or the output layer), from
 * the profile's fp8 rows where it has them, else the GEMM curve at the FP8 rate. */
static double lin_s(const pp_time_ctx *c, double m, double n, double k, double count)
{
    if (!c->fp8) return gemm_s(c, m, n, k, count);
    if (m <= 0 || n <= 0 || k <= 0 || count <= 0) return 0;
    const pp_profile *p = c->w->profile;
    double scale = p && p->calibration.present ? p->calibration.gemm_scale : 1.0;
    double tf = p ? pp_profile_gemm_tflops(p, PP_DT_FP8, (int64_t)m, (int64_t)n, (int64_t)k) : 0;
    double rate = tf > 0 ? tf * 1e12 * scale
                         : scale * c->gemm_rate_fp8 * c->gemm_norm_fp8 /
                               (1.0 + c->gemm_shape_c_fp8 * (1.0 / m + 1.0 / n + 1.0 / k));
    return count * 2.0 * m * n * k / rate;
}

static int ceil_log2(int64_t n)
{
    return n <= 1 ? 0 : 64 - __builtin_clzll((unsigned long long)(n - 1));
}

static pp_coll coll_profile_op(pp_time_coll op)
{
    switch (op) {
    case PP_TC_ALL_REDUCE: return PP_COLL_ALL_REDUCE;
    case PP_TC_ALL_GATHER: return PP_COLL_ALL_GATHER;
    case PP_TC_REDUCE_SCATTER: return PP_COLL_REDUCE_SCATTER;
    case PP_TC_ALL_TO_ALL:
    case PP_TC_DISPATCH: return PP_COLL_ALL_TO_ALL;
    case PP_TC_SENDRECV: break;
    }
    return PP_COLL_SENDRECV;
}

/* Ring algorithms for bandwidth (what nccl-tests' bus bandwidth measures), tree-like step
 * counts for latency (NCCL switches to trees / LL protocols for small messages):
 *   all-reduce      2(n-1)/n x bytes / busbw + 2 ceil(log2 n) steps
 *   all-gather, RS   (n-1)/n x bytes / busbw +   ceil(log2 n) steps
 *   all-to-all      (n-1)/n of the buffer leaves each rank; the off-node part over the NIC
 *   send/recv        bytes / bw + 1 step
 * Across nodes, a group with k ranks per node drives k NICs in parallel (NCCL builds one ring
 * per NIC on rail-optimised fabrics), so busbw = min(NVLink, k x per-GPU network bandwidth):
 * TP of 8 spread one rank per node gets 1/8 of what it would get if the node's 8 ranks shared
 * the ring, and TP that leaves the node is slow. */
double pp_time_collective_s(const pp_time_ctx *c, pp_time_coll op, int64_t n, int64_t per_node,
                            double bytes)
{
    if (n <= 1 || bytes <= 0) return 0;
    if (per_node < 1) per_node = 1;
    if (per_node > n) per_node = n;
    bool intra = per_node >= n;
    double frac = (double)(n - 1) / (double)n;
    double factor = op == PP_TC_ALL_REDUCE ? 2.0 * frac : op == PP_TC_SENDRECV ? 1.0 : frac;
    int mult = op == PP_TC_ALL_REDUCE ? 2 : 1;

    const pp_profile *p = c->w->profile;
    if (p && intra) {
        double bus = pp_profile_busbw_gbs(p, coll_profile_op(op), n, bytes);
        if (bus > 0) return factor * bytes / (bus * 1e9);
    }
    if (intra) {
        int steps = op == PP_TC_SENDRECV ? 1 : mult * ceil_log2(n);
        return factor * bytes / c->nvlink_bw + steps * c->lat_intra_s;
    }
    int64_t nodes = (n + per_node - 1) / per_node;
    double lat = op == PP_TC_SENDRECV
                     ? c->lat_inter_s
                     : mult * (ceil_log2(per_node) * c->lat_intra_s + ceil_log2(nodes) * c->lat_inter_s);
    double net = (double)per_node * c->net_bw;
    if (op == PP_TC_ALL_TO_ALL) {
        /* (k-1)/n of the buffer stays in the node, (n-k)/n crosses it on this rank's NIC. */
        double in = (double)(per_node - 1) / (double)n, out = (double)(n - per_node) / (double)n;
        return bytes * (in / c->nvlink_bw + out / c->net_bw) + lat;
    }
    if (op == PP_TC_SENDRECV) return bytes / c->net_bw + lat;
    double bus = net < c->nvlink_bw ? net : c->nvlink_bw;
    return factor * bytes / bus + lat;
}

/* Megatron's flex dispatcher (DeepEP's normal kernels, HybridEP): a dispatch (or combine) sends
 * each token once to every other node that holds one of its experts, over the rank's own NIC, and
 * the receiving GPU of that node forwards it over NVLink to every rank there that holds one (the
 * sending node's ranks get theirs over NVLink directly); the RDMA and NVLink warps run as one
 * pipeline (DeepEP's internode.cu), so the slower of the two paces it. DeepEP's own measurements on
 * H800 with CX7 400 Gb/s, ~50 GB/s (docs/legacy.md, normal kernels, DeepSeek-V3's setting with its
 * top-4 node groups): 58 and 51 GB/s of RDMA "bottleneck bandwidth" per GPU at EP 32 and 64, which
 * counts a token once per node it goes to, its own node included (tests/test_internode.py,
 * num_rdma_token_sent); without the own node's share (1/4 and 1/2 of the 4 nodes) that is 43.5 and
 * 44.6 GB/s, 0.87-0.89 of the line rate: NCCL_NET_EFF's 0.90. */
double pp_time_dispatch_s(const pp_time_ctx *c, int64_t n, int64_t per_node, double nvl_bytes, double net_bytes)
{
    if (n <= 1 || nvl_bytes + net_bytes <= 0) return 0;
    if (per_node < 1) per_node = 1;
    if (per_node > n) per_node = n;
    int64_t nodes = (n + per_node - 1) / per_node;
    double nvl = nvl_bytes / c->nvlink_bw;
    const pp_profile *p = c->w->profile;
    if (p && nodes == 1 && nvl_bytes > 0) {
        /* the measured all-to-all bus bandwidth of the group (nccl-tests: the buffer's (n-1)/n
         * leaves each rank), at the buffer that sends these bytes */
        double bus = pp_profile_busbw_gbs(p, PP_COLL_ALL_TO_ALL, n, nvl_bytes * (double)n / (double)(n - 1));
        if (bus > 0) nvl = nvl_bytes / (bus * 1e9);
    }
    double net = nodes > 1 ? net_bytes / c->net_bw : 0.0;
    double lat = ceil_log2(per_node) * c->lat_intra_s + ceil_log2(nodes) * c->lat_inter_s;
    return (nvl > net ? nvl : net) + lat;
}

static double max2(double a, double b) { return a > b ? a : b; }

/* A collective of `comm` seconds run behind `window` seconds of compute: what is not hidden is
 * exposed, and the hidden part still slows the compute it runs beside (OVERLAP_COST). */
double pp_time_behind(double comm, double window)
{
    if (comm <= 0) return 0;
    if (window <= 0) return comm;
    double hidden = comm < window ? comm : window;
    return comm - hidden + OVERLAP_COST * hidden;
}

/* ------------------------------------------------------------------ one layer */

/* Bytes an element of an eager FSDP stack's RMSNorm, forward and backward (--eager-norm). */
static void fsdp_norm_bytes(const pp_work *w, double *f, double *b)
{
    /* composite-fp32's order (the weight product in fp32) is priced as the composite: not measured */
    const bool composite = w->stack.eager_norm != PP_ENORM_FUSED && !w->stack.compile;
    *f = composite ? EW_FSDP_NORM_COMPOSITE_FWD : EW_FSDP_NORM_FWD;
    *b = composite ? EW_FSDP_NORM_COMPOSITE_BWD : EW_FSDP_NORM_BWD;
}

/* Bytes per element of an elementwise class of the layer description, forward and backward
 * (the EW_* constants above; the bias-dropout-add's mask byte only with dropout). */
static void ew_bytes(const pp_time_ctx *c, pp_layer_ew_class cls, double *f, double *b)
{
    double mask = c->opts.dropout ? 0 : EW_MASK;
    if (c->w->stack.compile && (cls == PP_EW_T_SWIGLU || cls == PP_EW_T_ROPE)) /* fused by Inductor */
        cls = cls == PP_EW_T_SWIGLU ? PP_EW_SWIGLU : PP_EW_ROPE;
    switch (cls) {
    case PP_EW_NORM:
    case PP_EW_QK_NORM: *f = EW_NORM_FWD, *b = EW_NORM_BWD; return;
    case PP_EW_BDA: *f = EW_BDA_FWD - mask, *b = EW_BDA_BWD - mask; return;
    case PP_EW_GELU: *f = EW_GELU_FWD, *b = EW_GELU_BWD; return;
    case PP_EW_SWIGLU: *f = EW_SWIGLU_FWD, *b = EW_SWIGLU_BWD; return;
    case PP_EW_ROPE: *f = *b = EW_ROPE; return;
    case PP_EW_ROUTER: *f = EW_ROUTER_FWD, *b = EW_ROUTER_BWD; return;
    case PP_EW_PERMUTE: *f = *b = EW_MOE_PERMUTE; return;
    case PP_EW_PROB_SCALE: *f = EW_PROB_SCALE, *b = 2.0 * EW_PROB_SCALE; return;
    case PP_EW_FP8_CAST_IN:
    case PP_EW_FP8_CAST_GRAD: {
        /* torchao's casts (the framework row's torchao_float8: torchtitan's converter), TE's under
         * Megatron. Under TP the same, on the elements layer.c counts: the rowwise recipe keeps
         * torchtitan's standard TP plans (casts on the gathered inputs), the tensorwise one its
         * float8 TP plans (on the sequence shard). Measured on two H200s at TP 2 (runs_float8.csv):
         * f8r_tp2_sel and f8t_tp2_sel looked at, -14.1 / -10.0% -> -3.6 / -4.4%; f8r_tp2_full and
         * f8t_tp2_full held out, -12.8 / -10.0% -> -3.0 / -4.8%. */
        double x = !pp_work_fw(c->w)->torchao_float8 ? 1.0
                   : FP8_TORCHAO_CAST_X * (c->w->stack.fp8_scaling == PP_FP8_ROWWISE ? FP8_ROWWISE_CAST_X : 1.0);
        *f = cls == PP_EW_FP8_CAST_IN ? x * EW_FP8_CAST_FWD : 0;
        *b = cls == PP_EW_FP8_CAST_GRAD ? x * EW_FP8_CAST_BWD : 0;
        return;
    }
    case PP_EW_T_NORM:
    case PP_EW_T_QK_NORM: fsdp_norm_bytes(c->w, f, b); return;
    case PP_EW_T_ADD: *f = *b = EW_FSDP_ADD; return;
    case PP_EW_T_GRAD_SUM: *f = 0, *b = EW_FSDP_ADD; return;
    case PP_EW_T_GELU: *f = EW_FSDP_GELU_FWD, *b = EW_FSDP_GELU_BWD; return;
    case PP_EW_T_SWIGLU: *f = EW_FSDP_SWIGLU_FWD, *b = EW_FSDP_SWIGLU_BWD; return;
    case PP_EW_T_ROPE: *f = *b = EW_FSDP_ROPE; return;
    case PP_EW_T_REPEAT: *f = *b = EW_FSDP_REPEAT; return;
    case PP_EW_T_FP8_NORM_BWD: *f = 0, *b = EW_FSDP_FP8_NORM_BWD; return;
    case PP_EW_HF_NORM: *f = EW_FSDP_NORM_COMPOSITE_FWD, *b = EW_FSDP_NORM_COMPOSITE_BWD; return;
    case PP_EW_CLASS_COUNT: break;
    }
    *f = *b = 0;
}

void pp_time_flash_s(const pp_time_ctx *c, double batch_heads, double queries, double keys_avg, double qk_dim,
                     double v_dim, double *fwd_s, double *bwd_s)
{
    /* Causal: fused kernels skip the masked scores, a query attends keys_avg keys. */
    double fl = 2.0 * batch_heads * queries * keys_avg * (qk_dim + v_dim);
    *fwd_s = fl / c->flash_fwd_rate;
    *bwd_s = 2.0 * fl / c->flash_bwd_rate;
    const int arow = hopper_attn_row(c->w);
    if (arow >= 0) {
        /* the kernel's per-query-block cost (fsdp_sdpa's s0) over the keys a causal kernel walks,
         * relative to the reference length */
        double s0f = fsdp_sdpa[arow].s0_fwd, s0b = fsdp_sdpa[arow].s0_bwd;
        double span = 2.0 * keys_avg;
        *fwd_s *= (1.0 + s0f / span) / (1.0 + s0f / FSDP_FA2_S_REF);
        *bwd_s *= (1.0 + s0b / span) / (1.0 + s0b / FSDP_FA2_S_REF);
    }
}

/* The host's time for one MoE layer and micro-batch under the stack's CUDA graphs
 * (MOE_TE_HOST_LAYER_S less what the captured parts take off, MOE_HOST_ATTN_SHARE). */
static double moe_host_layer_s(const pp_work *w)
{
    const unsigned cg = pp_stack_cuda_graphs(&w->stack);
    if (cg & (1u << PP_CG_FULL_ITERATION)) return 0;
    const double pace = MOE_TE_HOST_LAYER_S - MOE_SYNC_STALL_S;
    const double attn = MOE_HOST_ATTN_SHARE;
    double left = 1.0;
    if (cg & (1u << PP_CG_ATTN)) left -= attn;
    if (cg & (1u << PP_CG_MOE)) left -= 1.0 - attn;
    return pace * (left > 0 ? left : 0);
}

/* The dispatcher's host sync per MoE layer and micro-batch (MOE_SYNC_STALL_S), none where the
 * dispatcher is captured. */
static double moe_sync_stall_s(const pp_work *w)
{
    const unsigned cg = pp_stack_cuda_graphs(&w->stack);
    return cg & ((1u << PP_CG_FULL_ITERATION) | (1u << PP_CG_MOE)) ? 0.0 : MOE_SYNC_STALL_S;
}

/* Whether an MoE layer runs at the host's pace (moe_host_layer_s): Megatron's TransformerEngine
 * stack, dropless, without a profile calibration of its own (a calibrated stack's host figures,
 * moe_layer_overhead_s and expert_overhead_s, are fitted to its own logs and replace it). */
static bool moe_te_host_paced(const pp_work *w)
{
    const pp_calibration *cal = w->profile && w->profile->calibration.present ? &w->profile->calibration : NULL;
    if (cal && (cal->moe_layer_overhead_s > 0 || cal->expert_overhead_s > 0)) return false;
    return pp_work_te(w) && !(w->stack.moe_capacity_factor > 0);
}

/* The terms of one layer of kind `kind` for one micro-batch: the layer description's GEMMs,
 * attention core, elementwise kernels and collectives (layer.c) through this file's rates. */
static void layer_terms(const pp_time_ctx *c, const pp_layout *l, int kind, pp_time_terms *o)
{
    const pp_work *w = c->w;
    memset(o, 0, sizeof *o);
    pp_layer ly;
    pp_layer_build_parts(w, l, kind, PP_LAYER_GEMMS | PP_LAYER_EW | PP_LAYER_COLLS, &ly);
    const int64_t gpn = pp_work_nvlink_gpus(w);
    /* Selective recompute re-runs the forward of its modules (Megatron --recompute-modules;
     * core_attn alone by default; the ILP prices it on any layout). */
    const unsigned sel = l->recompute_modules ? l->recompute_modules : 1u << PP_RCM_CORE_ATTN;
    /* torchtitan's op-level selective AC recomputes every elementwise op and the mms it does not
     * keep (layer.c, sac_saved), not attention; its MoE layers follow the modules. */
    const bool titan_sac = ly.titan && !ly.moe;

    /* --- GEMMs: forward at their shapes (backward: dgrad + wgrad = 2x, same shapes transposed;
     * the curve is symmetric in m, n, k so their efficiency is the forward's), and the weights
     * whose gradients are accumulated */
    double g[PP_LB_COUNT] = {0}, wg[PP_LB_COUNT] = {0}, gemm_f = 0, gemm_b = 0, sel_s = 0, weights = 0;
    for (int i = 0; i < ly.n_gemm; i++) {
        const pp_layer_gemm *x = &ly.gemm[i];
        double t = x->fp8 ? lin_s(c, x->m, x->n, x->k, x->count) : gemm_s(c, x->m, x->n, x->k, x->count);
        g[x->block] += t;
        gemm_f += t;
        /* a frozen base linear (LoRA) runs its data-gradient GEMM alone: no weight gradient to
         * compute or accumulate */
        gemm_b += x->frozen ? t : 2.0 * t;
        if (!x->frozen) wg[x->block] += t;
        if (!x->frozen) weights += x->n * x->k * x->count;
        if (titan_sac ? !x->sac_saved : (x->mods & sel) != 0)
            sel_s += titan_sac ? gemm_s(c, x->m, x->n, x->k, x->count) : t;
    }

    /* --- attention core */
    const pp_layer_attn *a = &ly.attn;
    double attn_f, attn_b, score_ew_f = 0, score_ew_b = 0;
    if (!a->fused) {
        /* QK^T: (sq x d)(d x s) per head; AV: (sq x s)(s x dv). Full score matrix. */
        attn_f = gemm_s(c, a->queries, a->keys, a->qk_dim, a->batch_heads) +
                 gemm_s(c, a->queries, a->v_dim, a->keys, a->batch_heads);
        double nodrop = c->opts.dropout ? 0 : EW_SCORE_DROPOUT;
        score_ew_f = (EW_SCORE_FWD - nodrop) * a->scores / c->mem_rate;
        score_ew_b = (EW_SCORE_BWD - nodrop) * a->scores / c->mem_rate;
        attn_b = 2.0 * attn_f;
    } else {
        pp_time_flash_s(c, a->batch_heads, a->queries, a->keys_avg, a->qk_dim, a->v_dim, &attn_f, &attn_b);
    }
    if (!titan_sac && (sel & (1u << PP_RCM_CORE_ATTN))) sel_s += attn_f + score_ew_f;

    /* --- elementwise kernels, from memory bandwidth. torchao's float8 casts in a compiled block
     * are not redone by a recompute: their kernels took the same time under full and selective AC
     * as without it (rowwise 93, 93 and 92 ms over the bf16 twins' on two H200s, 8 Llama-3-8B
     * layers of 16k tokens: tests/data/fsdp/float8/float8_runs.jsonl), the recompute's casts fused
     * into the backward's norm and SwiGLU kernels. */
    const bool casts_kept = pp_work_fw(w)->torchao_float8 && w->stack.compile;
    double ew_f = 0, ew_b = 0, sel_ew = 0, exp_ew_f = 0, exp_ew_b = 0, kept = 0, noac = 0;
    for (int i = 0; i < ly.n_ew; i++) {
        const pp_layer_ew *e = &ly.ew[i];
        double bf, bb;
        ew_bytes(c, e->cls, &bf, &bb);
        ew_f += bf * e->elems;
        ew_b += bb * e->elems;
        if (casts_kept && e->cls == PP_EW_FP8_CAST_IN) {
            kept += bf * e->elems;
            continue;
        }
        /* the backward's norm kernels of tensorwise float8 without AC (layer.c): a layer that is
         * recomputed, fully or selectively, does not get them */
        if (e->cls == PP_EW_T_FP8_NORM_BWD) noac += bb * e->elems;
        if (titan_sac || (e->mods & sel)) sel_ew += bf * e->elems;
        if (e->block == PP_LB_EXPERT && e->mods & (1u << PP_RCM_MOE_ACT)) { /* the experts' activation */
            exp_ew_f += bf * e->elems / c->mem_rate;
            exp_ew_b += bb * e->elems / c->mem_rate;
        }
    }
    ew_f /= c->mem_rate;
    ew_b /= c->mem_rate;
    sel_s += (sel_ew - noac) / c->mem_rate;
    o->sel_recompute_s = sel_s;

    /* weight-gradient accumulation: the layer's weights on this rank */
    double accum = c->opts.grad_accum_bytes * weights / c->mem_rate;

    o->fwd_compute_s = gemm_f + attn_f + score_ew_f + ew_f;
    o->recompute_less_s = (kept + noac) / c->mem_rate;
    o->bwd_compute_s = gemm_b / BWD_GEMM_EFF + attn_b + score_ew_b + ew_b + accum;
    if (ly.moe) {
        /* The host's share: the router, the dispatcher and its sync, and one GEMM chain per
         * local expert when looped. Without a calibration, the launch floor of those kernels;
         * a calibrated stack's own figures (parplan calibrate on MoE logs) otherwise. */
        const pp_calibration *cal = w->profile && w->profile->calibration.present ? &w->profile->calibration : NULL;
        double per_layer = cal && cal->moe_layer_overhead_s > 0 ? cal->moe_layer_overhead_s
                                                                 : MOE_LAYER_KERNELS * KERNEL_GAP_S;
        double per_expert = cal && cal->expert_overhead_s > 0 ? cal->expert_overhead_s
                                                               : EXPERT_LOOP_KERNELS * KERNEL_GAP_S;
        double launch = per_layer + (!w->stack.grouped_gemm ? ly.local_experts * per_expert : 0);
        /* The experts run at the GPU's pace or at the pace of the host that issues them,
         * whichever is slower: the dispatcher waits for the tokens-per-expert counts (.tolist(),
         * a host sync) before the experts, so the host cannot run ahead of them, and the GPU
         * idles while a looped expert's kernels are being issued. Measured on one H200 with
         * Megatron's local SequentialMLP (tests/data/megatron/runs_moe_time.csv): 64 and 128
         * experts take the same step time at micro-batch 1 and 2, the host's pace. The host's
         * work is split 1/3 forward, 2/3 backward, as the GEMM work is. */
        double exp_f = g[PP_LB_EXPERT] + exp_ew_f, exp_b = 2.0 * g[PP_LB_EXPERT] / BWD_GEMM_EFF + exp_ew_b;
        o->fwd_compute_s += max2(exp_f, launch / 3.0) - exp_f;
        o->bwd_compute_s += max2(exp_b, 2.0 * launch / 3.0) - exp_b;
        if (w->stack.expert_pad_loop) {
            o->fwd_compute_s += ly.local_experts * EXPERT_PAD_HOST_S;
            o->bwd_compute_s += ly.local_experts * EXPERT_PAD_HOST_S;
        }
    }

    /* --- collectives. TP: beside the GEMM they precede or follow. An MoE layer's pair is its
     * router and shared experts (half of the shared experts' time on each side); its experts'
     * tokens move in the dispatcher. */
    double win[PP_LB_COUNT], wwin[PP_LB_COUNT];
    memcpy(win, g, sizeof win);
    memcpy(wwin, wg, sizeof wwin);
    if (ly.moe) {
        win[PP_LB_MLP_IN] = g[PP_LB_ROUTER] + g[PP_LB_SHARED] / 2;
        win[PP_LB_MLP_OUT] = g[PP_LB_SHARED] / 2;
        memcpy(wwin, win, sizeof wwin); /* no LoRA on MoE layers (pp_stack_check) */
    }
    for (int i = 0; i < ly.n_coll; i++) {
        const pp_layer_coll *x = &ly.coll[i];
        int64_t per_node = pp_layout_group_per_node(x->ranks, x->stride, gpn);
        if (x->group == PP_LG_CP) {
            /* One ring hop (a ring that spans nodes runs at the pace of its network hops); the
             * first hop of a pass (K and V; backward: and their gradients) is exposed, the rest
             * runs behind the attention of the block before. */
            double hop = pp_time_collective_s(c, PP_TC_SENDRECV, 2, per_node >= x->ranks ? 2 : 1, x->bytes);
            if (x->bwd) o->bwd_cp_s += 2 * hop + pp_time_behind((x->count - 2) * hop, attn_b);
            else o->fwd_cp_s += hop + pp_time_behind((x->count - 1) * hop, attn_f);
            continue;
        }
        double t = x->count * (x->op == PP_TC_DISPATCH ? pp_time_dispatch_s(c, x->ranks, per_node, x->bytes, x->net_bytes)
                                                       : pp_time_collective_s(c, x->op, x->ranks, per_node, x->bytes));
        if (x->group != PP_LG_TP) { /* EP and expert TP: on the compute stream, exposed */
            if (x->bwd) o->bwd_ep_s += t;
            else o->fwd_ep_s += t;
            continue;
        }
        /* TP. Megatron's asynchronous input-gradient reduction (and SP's input re-gather) run
         * beside the layer's weight-gradient GEMM; with SP, TE userbuffers (--tp-comm-overlap)
         * pipeline every all-gather and reduce-scatter with its GEMM (the re-gather inside the
         * dgrad GEMM's). */
        double wnd = x->bwd ? win[x->beside] / BWD_GEMM_EFF : win[x->beside];
        /* Megatron's asynchronous input-gradient reduction hides behind the weight-gradient GEMM:
         * beside a frozen linear (LoRA) only the adapters' are left */
        double wnd_w = x->bwd ? wwin[x->beside] / BWD_GEMM_EFF : win[x->beside];
        /* torchtitan's async TP (--tp-comm-overlap under fsdp; its TP is always sequence
         * parallel) decomposes each all-gather + matmul and matmul + reduce-scatter into
         * micro-pipelined steps over symmetric memory (torch/distributed/_symmetric_memory
         * fused_all_gather_matmul, fused_matmul_reduce_scatter): the same overlap as userbuffers. */
        bool tp_overlap = c->opts.tp_comm_overlap && (l->sp || ly.titan);
        double e = tp_overlap                       ? (x->regather ? 0 : pp_time_behind(t, wnd))
                   : x->async                       ? pp_time_behind(t, wnd_w)
                                                    : t;
        if (x->bwd) o->bwd_tp_s += e;
        else o->fwd_tp_s += e;
    }
    if (ly.moe && w->stack.ep_overlap) {
        /* Megatron's --overlap-moe-expert-parallel-comm (and DeepSeek-V3's DualPipe) run one
         * micro-batch's forward beside another's backward, so each all-to-all hides behind the
         * other one's compute of the same layer. */
        o->fwd_ep_s = pp_time_behind(o->fwd_ep_s, o->bwd_compute_s);
        o->bwd_ep_s = pp_time_behind(o->bwd_ep_s, o->fwd_compute_s);
    }
    if (ly.moe && moe_te_host_paced(w)) {
        /* The host issues the whole layer (attention, router, dispatch, experts, combine) and the
         * GPU runs it as it comes: the layer takes the GPU's time, collectives included, or the
         * host's (moe_host_layer_s), whichever is longer, and the GPU waits at the dispatcher's
         * sync on top (moe_sync_stall_s); the waiting is a third in the forward and two thirds in
         * the backward, as the host's work is split. */
        double gpu = o->fwd_compute_s + o->fwd_tp_s + o->fwd_cp_s + o->fwd_ep_s + o->bwd_compute_s + o->bwd_tp_s +
                     o->bwd_cp_s + o->bwd_ep_s;
        const double host = moe_host_layer_s(w);
        const double wait = (gpu < host ? host - gpu : 0.0) + moe_sync_stall_s(w);
        o->fwd_compute_s += wait / 3.0;
        o->bwd_compute_s += 2.0 * wait / 3.0;
    }
}

void pp_time_layer_terms(const pp_time_layer *ly, int k, pp_time_terms *out)
{
    if (k == ly->kind_main) {
        *out = (pp_time_terms){ly->fwd_compute_s, ly->fwd_tp_s, ly->fwd_cp_s, ly->fwd_ep_s,
                               ly->bwd_compute_s, ly->bwd_tp_s, ly->bwd_cp_s, ly->bwd_ep_s,
                               ly->sel_recompute_s, ly->recompute_less_s};
    } else {
        *out = ly->kind[k];
    }
}

void pp_time_layer_rescale_kinds(pp_time_layer *ly, double fwd_ratio, double bwd_ratio)
{
    for (int k = 0; k < PP_LAYER_KINDS; k++) {
        if (k == ly->kind_main || !(ly->kinds_present & (1u << k))) continue;
        ly->kind[k].fwd_compute_s *= fwd_ratio;
        ly->kind[k].sel_recompute_s *= fwd_ratio;
        ly->kind[k].recompute_less_s *= fwd_ratio;
        ly->kind[k].bwd_compute_s *= bwd_ratio;
    }
}

void pp_time_layer_get(const pp_time_ctx *c, const pp_layout *l, pp_time_layer *o)
{
    const pp_work *w = c->w;
    const pp_model *m = &w->model;
    memset(o, 0, sizeof *o);
    const double t = (double)l->tp, cp = (double)l->cp, b = (double)l->mbs;
    const double s = (double)m->seq, h = (double)m->hidden;
    const double V = pp_layer_vocab(w, l); /* the output layer's padded rows compute too */
    const double T = b * s / cp;
    const double h_ew = l->sp ? h / t : h;
    const int64_t gpn = pp_work_nvlink_gpus(w);
    const double M = T * h * 2.0;

    /* Layer kinds present: one for dense models without windows (the search's common case). */
    o->kind_main = m->layers > 0 ? pp_model_layer_kind(m, m->layers - 1) : 0;
    int64_t counts[PP_LAYER_KINDS];
    pp_model_layer_counts(m, 0, m->layers, counts);
    for (int k = 0; k < PP_LAYER_KINDS; k++)
        if (counts[k] > 0) o->kinds_present |= 1u << k;
    if (m->mtp_layers > 0) o->kinds_present |= 1u << pp_model_mtp_kind(m);
    o->kinds_present |= 1u << o->kind_main;
    for (int k = 0; k < PP_LAYER_KINDS; k++)
        if (o->kinds_present & (1u << k)) layer_terms(c, l, k, &o->kind[k]);
    const pp_time_terms *mt = &o->kind[o->kind_main];
    o->fwd_compute_s = mt->fwd_compute_s;
    o->fwd_tp_s = mt->fwd_tp_s;
    o->fwd_cp_s = mt->fwd_cp_s;
    o->fwd_ep_s = mt->fwd_ep_s;
    o->bwd_compute_s = mt->bwd_compute_s;
    o->bwd_tp_s = mt->bwd_tp_s;
    o->bwd_cp_s = mt->bwd_cp_s;
    o->bwd_ep_s = mt->bwd_ep_s;
    o->sel_recompute_s = mt->sel_recompute_s;
    o->recompute_less_s = mt->recompute_less_s;

    /* The vocabulary's ends over TP: vocab-parallel (Megatron, torchtitan), or with --tp-vocab
     * gathered|replicated (FSDP2 + TP) every TP rank runs the loss over the whole vocabulary, on
     * logits all-gathered in the forward (their gradient is sliced back, no collective); replicated,
     * the embedding's whole table on every rank, its output already whole (no forward reduction:
     * the first norm takes its sequence shard locally). */
    const bool loss_parallel = pp_layer_loss_parallel(w, l);
    const double embed_tp = pp_layer_embed_tp(w, l);
    const double v_loss = loss_parallel ? V / t : V, v_embed = V / embed_tp;

    /* --- embedding (first stage): vocab-parallel lookup + all-reduce (SP: reduce-scatter) */
    double emb_ew_f = EW_EMBED * T * h + (m->pos == PP_POS_LEARNED ? 6.0 * T * h : 0) +
                      (c->opts.dropout ? 5.0 * T * h_ew : 0);
    double emb_ew_b = EW_EMBED * T * h + EW_EMBED_GRAD * v_embed * h;
    /* LoRA: the frozen embedding has no backward, the frozen output layer its data gradient alone */
    const bool lora = pp_work_lora(w);
    if (lora) emb_ew_b = 0;
    o->embed_fwd_s = emb_ew_f / c->mem_rate;
    o->embed_bwd_s = emb_ew_b / c->mem_rate;
    /* --- output layer (last stage): final norm, logits GEMM (vocab-parallel), cross-entropy */
    double g_logits = gemm_s(c, T, V / t, h, 1);
    /* a vocabulary shard whose 16-bit rows are not 16-byte aligned leaves cuBLAS's fast kernels */
    double xf = 1, xb = 1;
    pp_time_logits_misaligned(w, l, &xf, &xb);
    const double g_logits_f = g_logits * xf, g_logits_b = g_logits * xb;
    const double logits_b = lora ? 1.0 : 2.0;
    o->output_fwd_s = g_logits_f + (EW_NORM_FWD * T * h_ew + EW_CE_FWD * T * v_loss) / c->mem_rate;
    o->output_bwd_s = logits_b * g_logits_b / BWD_GEMM_EFF + (EW_NORM_BWD * T * h_ew + EW_CE_BWD * T * v_loss) / c->mem_rate;
    if (pp_work_fw(w)->titan_kernels) {
        /* torchtitan: the loss on logits.float() (EW_FSDP_CE_*); the embedding backward zeroes
         * its bf16 weight gradient and sums the token rows (fp32 partial sums, then the write). */
        double h_sp = l->tp > 1 ? h / t : h, nf, nb;
        fsdp_norm_bytes(w, &nf, &nb);
        const bool cl = w->stack.compile_loss;
        const double ce_f = cl ? EW_FSDP_CE_COMPILED_FWD : EW_FSDP_CE_FWD, ce_b = cl ? EW_FSDP_CE_COMPILED_BWD : EW_FSDP_CE_BWD;
        o->output_fwd_s = g_logits_f + (nf * T * h_sp + ce_f * T * v_loss) / c->mem_rate;
        o->output_bwd_s = 2 * g_logits_b / BWD_GEMM_EFF + (nb * T * h_sp + ce_b * T * v_loss) / c->mem_rate;
        o->embed_fwd_s = EW_EMBED * T * h / c->mem_rate;
        o->embed_bwd_s = (2.0 * v_embed * h + 10.0 * T * h) / c->mem_rate;
    }
    if (l->tp > 1) {
        int64_t tpn = pp_layout_group_per_node(l->tp, 1, gpn);
        if (l->sp) {
            double ag = pp_time_collective_s(c, PP_TC_ALL_GATHER, l->tp, tpn, M);
            double rs = pp_time_collective_s(c, PP_TC_REDUCE_SCATTER, l->tp, tpn, M);
            o->embed_tp_s = embed_tp > 1 ? rs : 0.0; /* forward reduce-scatter, none when replicated */
            o->output_tp_s = ag + pp_time_behind(rs, g_logits / BWD_GEMM_EFF); /* bwd RS behind wgrad */
            o->embed_bwd_s += ag;
        } else {
            double ar = pp_time_collective_s(c, PP_TC_ALL_REDUCE, l->tp, tpn, M);
            o->embed_tp_s = embed_tp > 1 ? ar : 0.0;
            o->output_tp_s = pp_time_behind(ar, g_logits / BWD_GEMM_EFF);
        }
        o->embed_fwd_s += o->embed_tp_s;
        o->output_bwd_s += o->output_tp_s;
        if (!loss_parallel) { /* the bf16 logits gathered, forward */
            double gather = pp_time_collective_s(c, PP_TC_ALL_GATHER, l->tp, tpn, 2.0 * T * V);
            o->output_fwd_s += gather;
            o->output_tp_s += gather;
        }
    }

    /* --- PP send/recv: with TP the tensor is split across the TP ranks (Megatron's
     * scatter-gather optimisation; with SP it is already split), each rank sending 1/t. */
    bool split = l->tp > 1 && (l->sp || c->opts.p2p_scatter_gather);
    o->p2p_bytes = split ? M / t : M;
    if (split && !l->sp)
        o->p2p_gather_s = pp_time_collective_s(c, PP_TC_ALL_GATHER, l->tp, pp_layout_group_per_node(l->tp, 1, gpn), M);
    /* activation offloading: what crosses the host link per micro-batch, once per layer shape (the
     * search reuses it over pp, recompute and sharding) rather than in every pp_time_step */
    if (w->stack.cpu_offload_layers > 0) o->offload_bytes = pp_memory_offload_bytes(w, l);
    /* a calibrated profile: the fitted factors of its software stack */
    if (w->profile) pp_calibration_apply_layer(&w->profile->calibration, c, l, o);
}

double pp_model_flops_per_step(const pp_model *m, int64_t gbs)
{
    /* Backward = 2 x forward: 3 x forward in all (Korthikanti et al. 2022 eq. 7). */
    return 3.0 * pp_layer_model_fwd_flops_per_token(m, NULL) * (double)gbs * (double)m->seq;
}

double pp_lora_model_flops_per_step(const pp_model *m, int64_t gbs)
{
    /* Megatron-Bridge's LoRA model FLOPs (training/utils/flop_utils.py at 067f987d, the LoRA branch):
     * the frozen linears' forward and data gradient, 2/3 of their training FLOPs, and the
     * attention core's forward and backward in full; the adapters are not counted. */
    double attn = 0;
    double fwd = pp_layer_model_fwd_flops_per_token(m, &attn);
    return (2.0 * (fwd - attn) + 3.0 * attn) * (double)gbs * (double)m->seq;
}

double pp_hardware_flops_per_step(const pp_model *m, int64_t gbs, pp_recompute rc)
{
    double attn = 0;
    double fwd = pp_layer_model_fwd_flops_per_token(m, &attn);
    double h = (double)m->hidden, V = (double)m->vocab;
    double tokens = (double)gbs * (double)m->seq;
    double extra = 0;
    if (rc == PP_RC_FULL) extra = fwd - 2.0 * h * V;  /* every layer's forward again */
    else if (rc == PP_RC_SELECTIVE) extra = attn;      /* the attention core's forward */
    return (3.0 * fwd + extra) * tokens;
}

/* ------------------------------------------------------------------ a profile's calibration
 * The factors `parplan calibrate` fits (pp_profile.h, calibration) applied to the time model. */

void pp_calibration_apply_ctx(const pp_calibration *cal, pp_time_ctx *c)
{
    if (!cal || !cal->present) return;
    /* The GEMM curve keeps its shape (c = R/BW was set from the catalog rate); only its scale
     * moves. Fused attention kernels are priced as a fraction of the GEMM rate, so they follow. */
    c->gemm_rate *= cal->gemm_scale;
    c->flash_fwd_rate *= cal->gemm_scale;
    c->flash_bwd_rate *= cal->gemm_scale;
    c->mem_rate /= cal->elementwise_scale;
}

void pp_calibration_apply_layer(const pp_calibration *cal, const pp_time_ctx *c, const pp_layout *l,
                                pp_time_layer *ly)
{
    if (!cal || !cal->present) return;
    const pp_work *w = c->w;
    const pp_model *m = &w->model;
    double extra = 0;
    if (w->attention == PP_ATTN_UNFUSED && cal->score_bytes > 0) {
        /* scores of this rank: b x heads/t x (s/cp) x s, each touched score_bytes more per pass */
        double scores = (double)l->mbs * (double)m->heads / (double)l->tp * (double)m->seq / (double)l->cp *
                        (double)m->seq;
        extra = cal->score_bytes * scores / c->mem_rate;
    }
    /* Every layer kind the model has: the main kind's terms are ly's own fields. (The MoE
     * factors are read by time.c's layer terms: an MoE layer runs at the host's pace when that
     * is slower than the GPU's.) */
    for (int k = 0; k < PP_LAYER_KINDS; k++) {
        if (!(ly->kinds_present & (1u << k)) && k != ly->kind_main) continue;
        pp_time_terms y;
        pp_time_layer_terms(ly, k, &y);
        double over = cal->layer_overhead_s;
        y.fwd_compute_s += extra + over;
        y.bwd_compute_s += extra + 2.0 * over;
        y.sel_recompute_s += extra; /* selective recompute redoes the attention core */
        if (k == ly->kind_main) {
            ly->fwd_compute_s = y.fwd_compute_s;
            ly->bwd_compute_s = y.bwd_compute_s;
            ly->sel_recompute_s = y.sel_recompute_s;
        }
        ly->kind[k] = y;
    }
}

