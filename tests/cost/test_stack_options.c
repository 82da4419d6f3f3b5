/* The stack options the published runs needed (tests/data/published/README.md), each against the
 * figure its source gives, through the request a user's flags build (pp_request_parse_line,
 * pp_request_resolve):
 *   --megatron-fsdp --zero 1|2|3   Megatron-FSDP's sharding strategies: bytes per parameter of the
 *                                  weights, fp32 gradients and optimizer state over dp
 *   --optimizer-dtype bf16         Apex DistributedFusedAdam with dtype bf16 (NeMo's
 *                                  distributed_fused_adam): m and v, no parameter copy, 4 optimizer
 *                                  bytes per parameter of the shard instead of 12
 *   --distributed-fused-adam       the same with fp32 state: m, v and the 16-bit remainders, 10
 *   --precision-aware-optimizer    Megatron's: fp32 main parameters as remainders, 10; with FP8
 *                                  parameters of the delayed recipe the same
 *   --no-attention-mask            Megatron's dataloader mask, b x s x s bytes per micro-batch held
 *   --compile                      SwiGLU and RoPE at the fused kernels' bytes (time.c's EW_* counts
 *                                  at the elementwise rate, 0.9 of the GPU's memory bandwidth), and
 *                                  no DTensor host pace under TP
 *   --tp-comm-overlap (fsdp)       torchtitan's async TP hides TP collectives behind the GEMMs
 *   --fp8-param-gather             FP8 linear weights (TE fp8_model_init): 1 byte and the Hopper
 *                                  transpose, no bf16 copy beside its two casts: 2 bytes a linear
 *                                  parameter instead of 4
 *   nvlink_domain (GPU entry)      GB200 NVL72: trays of 4 in one NVLink network of 72: the
 *                                  communication of 72 GPUs as one node's, not InfiniBand's
 *   --main-params-dtype, --exp-avg-dtype, --exp-avg-sq-dtype
 *                                  Megatron's precision-aware optimizer: the state in those dtypes
 *   --moe-dispatcher flex          DeepEP's NVLink and RDMA buffers in the reserve, as its size hints
 *                                  give them (hand-computed from DeepEP's config.hpp below)
 *   --cuda-graphs                  the MoE layer's host time (time.c MOE_TE_HOST_LAYER_S, 8.6 ms a
 *                                  layer and micro-batch): the attention's share (0.25) off where attn
 *                                  is captured, all of it under full_iteration
 *   --cpu-offload-layers N         Megatron's activation offloading (TransformerEngine cpu_offload.py):
 *                                  the first N layers' stored bytes (the layer table's) out of the
 *                                  peak, and the compute's stall where the host link is slower than
 *                                  the layers it has to hide behind, from the stage's per-layer times
 *   --vocab-divisible-by N         Megatron's --make-vocab-size-divisible-by: the vocabulary padded to a
 *                                  multiple of N x tp (vocab_utils.py calculate_padded_vocab_size), the
 *                                  padded rows of the embedding and the output layer held
 *   --tp-vocab gathered|replicated FSDP2 + TP without torchtitan's vocab-parallel loss: the logits whole
 *                                  on every TP rank for the loss (bf16: 6 bytes a logit at its backward,
 *                                  against 8 a logit of the shard), and, replicated (KempnerForge), the
 *                                  embedding's bf16 state (2 + 2 + 4 bytes a parameter) sharded over
 *                                  FSDP alone */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "pp_remedy.h"

#define L8B "--model llama3-8b --gpu h100-sxm --gpus 8 --gpus-per-node 8 --gbs 64 --seq 4096 --mbs 1 --framework megatron"

static void megatron_fsdp(void)
{
    static run d, z[4], b[4];
    if (!run_args(&d, L8B " --dist-opt")) return;
    const pp_mem_stage *sd = &d.mem.stages[0];
    for (int k = 1; k <= 3; k++) {
        /* its bf16 main gradients by default (the weights' dtype since Megatron-LM b969f764): half
         * the distributed optimizer's fp32 ones */
        if (run_argsf(&b[k], "%s --megatron-fsdp --zero %d", L8B, k))
            tap_near(b[k].mem.stages[0].grads_bytes / sd->grads_bytes, (k >= 2 ? 1.0 / 8 : 1.0) / 2, 1e-9,
                     "--megatron-fsdp --zero %d: bf16 main gradients, %s dp 8", k, k >= 2 ? "sharded over" : "not sharded by");
        run_free(&b[k]);
        if (!run_argsf(&z[k], "%s --megatron-fsdp --fsdp-grads-fp32 --zero %d", L8B, k)) continue;
        const pp_mem_stage *s = &z[k].mem.stages[0];
        /* dist-opt: 2 + 4 + 12/8 bytes per parameter; optim: the same; optim_grads: 4/8 gradient
         * bytes; optim_grads_params: 2/8 weight bytes too */
        tap_near(s->weights_bytes / sd->weights_bytes, k >= 3 ? 1.0 / 8 : 1.0, 1e-9,
                 "--megatron-fsdp --zero %d: weights %s dp 8", k, k >= 3 ? "sharded over" : "not sharded by");
        tap_near(s->grads_bytes / sd->grads_bytes, k >= 2 ? 1.0 / 8 : 1.0, 1e-9,
                 "--megatron-fsdp --zero %d: fp32 gradients %s dp 8", k, k >= 2 ? "sharded over" : "not sharded by");
        tap_near(s->optimizer_bytes / sd->optimizer_bytes, 1.0, 1e-9,
                 "--megatron-fsdp --zero %d: optimizer state sharded as the distributed optimizer's", k);
        run_free(&z[k]);
    }
    run_free(&d);
    /* Its buffers at dp 8, one unit a layer of U = 218112000 parameters (Llama 3 8B at tp 1), bf16
     * weights and gradients (mem_mfsdp_buffers): the default unit S = max(1e9, 2 U) prefetches
     * ceil(S / 2 / U) = 3 units (4 gathered) and one unit's gradient bucket fills at the backward's
     * start; S = 2e8 prefetches 1 (2 gathered); the double buffer holds 2 + 2. */
    static run s0, s1, db, z2;
    const double U2 = 218112000.0 * 2;
    if (run_args(&s0, L8B " --megatron-fsdp --zero 3") && run_args(&s1, L8B " --megatron-fsdp --zero 3 --fsdp-unit-size 200000000") &&
        run_args(&db, L8B " --megatron-fsdp --zero 3 --fsdp-double-buffer") && run_args(&z2, L8B " --megatron-fsdp --zero 2")) {
        tap_near(s0.mem.stages[0].transient_bytes - s1.mem.stages[0].transient_bytes, 2 * U2, 1e-9,
                 "Megatron-FSDP: the default unit gathers 2 layers more than a unit of 2e8 (%.0f bytes)", 2 * U2);
        tap_near(db.mem.stages[0].transient_bytes - s1.mem.stages[0].transient_bytes, U2, 1e-9,
                 "--fsdp-double-buffer: 2 layers' weights and 2 layers' gradients, one gradient bucket more than "
                 "the unit of 2e8's");
        tap_near(s0.mem.stages[0].transient_bytes - z2.mem.stages[0].transient_bytes, 4 * U2, 1e-9,
                 "--zero 2 gathers no weights: 4 layers' fewer than --zero 3 (its gradient bucket alike)");
    }
    run_free(&s0);
    run_free(&s1);
    run_free(&db);
    run_free(&z2);
}

static void optimizer_bf16(void)
{
    /* NeMo megatron_base_model.py setup_optimization (r2.0.0, lines 790-812): store_params False
     * where the optimizer dtype is the model's, store_param_remainders for fp32 over bf16 */
    /* step: the optimizer step's HBM bytes a parameter (time_step.c opt_step_bytes), of the 34 of
     * Megatron's fp32 state: read state + gradient (+ the bf16 high half beside remainders or no
     * copy), write state + the 16-bit parameter, the gradient again for the norm */
    static const struct {
        const char *flags;
        double bytes, step;
        const char *why;
    } c[] = {
        {" --optimizer-dtype bf16", 4.0, 16.0, "--optimizer-dtype bf16: m, v in bf16, no parameter copy"},
        {" --distributed-fused-adam", 10.0, 32.0, "--distributed-fused-adam: m, v in fp32 and 16-bit remainders"},
        {" --distributed-fused-adam --optimizer-dtype bf16", 4.0, 16.0, "--distributed-fused-adam --optimizer-dtype bf16"},
        {" --distributed-fused-adam --precision fp8 --fp8-param-gather", 12.0, 34.0,
         "--distributed-fused-adam with FP8 parameters: a full fp32 parameter copy (store_params)"},
        {" --precision-aware-optimizer", 10.0, 32.0, "--precision-aware-optimizer: fp32 main parameters as remainders"},
        {" --precision-aware-optimizer --precision fp8 --fp8-param-gather", 10.0, 32.0,
         "--precision-aware-optimizer, FP8 parameters of the delayed recipe: remainders (TE's FusedAdam)"},
        {" --precision-aware-optimizer --precision fp16", 12.0, 34.0,
         "--precision-aware-optimizer --precision fp16: fp32 main parameters whole (remainders are bf16's)"},
    };
    static run a, b;
    if (!run_args(&a, L8B " --dist-opt")) return;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        if (run_argsf(&b, "%s --dist-opt%s", L8B, c[i].flags)) {
            tap_near(b.mem.stages[0].optimizer_bytes / a.mem.stages[0].optimizer_bytes, c[i].bytes / 12.0, 1e-9,
                     "%s: %.0f of the 12 optimizer bytes per parameter", c[i].why, c[i].bytes);
            tap_near(b.time.optimizer_s / a.time.optimizer_s, c[i].step / 34.0, 1e-9,
                     "%s: the step moves %.0f of the 34 bytes per parameter", c[i].why, c[i].step);
        }
        run_free(&b);
    }
    run_free(&a);
}

static void fp8_params(void)
{
    static run a, b;
    /* Llama 3 8B (HF config): 8.030e9 parameters, of which the embedding and the untied output
     * layer are 2 x 128256 x 4096 = 1.0507e9; the 6.98e9 of the layers are TE linears (and norms) */
    if (run_args(&a, L8B " --dist-opt --precision fp8") && run_args(&b, L8B " --dist-opt --precision fp8 --fp8-param-gather")) {
        double total = 8.030e9, layers = total - 2.0 * 128256.0 * 4096.0;
        tap_near(b.mem.stages[0].weights_bytes / (2.0 * total), 1.0, 2e-3,
                 "--fp8-param-gather: 2 bytes a parameter (FP8 data and transpose, or the bf16 embedding and head)");
        tap_near((a.mem.stages[0].weights_bytes - b.mem.stages[0].weights_bytes) / (2.0 * layers), 1.0, 2e-3,
                 "--fp8-param-gather: the bf16 copy's 2 bytes a layer parameter gone");
        tap_ok(a.mem.stages[0].grads_bytes == b.mem.stages[0].grads_bytes &&
                   a.mem.stages[0].optimizer_bytes == b.mem.stages[0].optimizer_bytes,
               "--fp8-param-gather: gradients and fp32 main parameters as before");
    }
    run_free(&a);
    run_free(&b);
    static run c, d;
    if (run_args(&c, L8B " --dist-opt") &&
        run_args(&d, L8B " --dist-opt --main-params-dtype fp16 --exp-avg-dtype bf16 --exp-avg-sq-dtype fp8"))
        tap_near(d.mem.stages[0].optimizer_bytes / c.mem.stages[0].optimizer_bytes, (2.0 + 2.0 + 1.0) / 12.0, 1e-9,
                 "precision-aware optimizer fp16/bf16/fp8: 5 of the 12 optimizer bytes per parameter");
    run_free(&c);
    run_free(&d);
    /* NVFP4 parameters (Megatron's --fp4-param-gather): a linear weight is its two NVFP4 copies,
     * 2 x (0.5 + 1/16) bytes, where the bf16 weight and its two casts were 2 + 2 x (0.5 + 1/16) */
    static run e, f;
    const char *b8 = "--model llama3-8b --gpu b200 --gpus 8 --gpus-per-node 8 --gbs 64 --seq 4096 --mbs 1 "
                     "--framework megatron --dist-opt --precision nvfp4";
    if (run_args(&e, b8) && run_argsf(&f, "%s --fp8-param-gather", b8)) {
        double total = 8.030e9, layers = total - 2.0 * 128256.0 * 4096.0;
        tap_near((e.mem.stages[0].weights_bytes - f.mem.stages[0].weights_bytes) / (2.0 * layers), 1.0, 2e-3,
                 "NVFP4 parameters: the bf16 copy's 2 bytes a layer parameter gone");
        tap_near(f.mem.stages[0].weights_bytes / (2.0 * (total - layers) + 1.125 * layers), 1.0, 2e-3,
                 "NVFP4 parameters: 1.125 bytes a layer parameter (the bf16 embedding and head at 2)");
    }
    run_free(&e);
    run_free(&f);
}

static void nvlink_domain(void)
{
    static run a, b, c;
    const char *work = "--model llama3-70b --gpus 144 --gbs 576 --tp 8 --pp 2 --dist-opt --sp";
    const char *src = getenv("PARPLAN_SOURCE_DIR") ? getenv("PARPLAN_SOURCE_DIR") : ".";
    if (run_argsf(&a, "%s --gpu gb200", work) &&
        run_argsf(&b, "%s --gpu %s/tests/data/gpus/gb200-no-nvlink-domain.yaml --gpus-per-node 72", work, src) &&
        run_argsf(&c, "%s --gpu %s/tests/data/gpus/gb200-no-nvlink-domain.yaml", work, src)) {
        tap_near(a.time.step_time_s / b.time.step_time_s, 1.0, 1e-12,
                 "gb200 (trays of 4, NVLink across 72): the step of 72-GPU nodes (%.3f s)", a.time.step_time_s);
        tap_ok(c.time.tp_comm_s > 2.0 * a.time.tp_comm_s,
               "without the NVLink domain TP 8 crosses trays over InfiniBand: TP time %.2f s against %.2f s",
               c.time.tp_comm_s, a.time.tp_comm_s);
    }
    run_free(&a);
    run_free(&b);
    run_free(&c);
}

static void attention_mask(void)
{
    static run a, b;
    if (run_args(&a, L8B " --dist-opt") && run_args(&b, L8B " --dist-opt --no-attention-mask")) {
        double mask = 1.0 * 4096.0 * 4096.0; /* b x s x s bool, one micro-batch in flight */
        tap_near(a.mem.stages[0].activations_bytes - b.mem.stages[0].activations_bytes, mask, 1e-9,
                 "--no-attention-mask: the stage holds b x s x s = %.0f bytes less", mask);
        tap_near(a.time.step_time_s, b.time.step_time_s, 1e-12, "--no-attention-mask: the step time does not move");
    }
    run_free(&a);
    run_free(&b);
    pp_error err = {0};
    pp_request rq;
    pp_request_init(&rq);
    pp_resolved res;
    memset(&res, 0, sizeof res);
    bool refused = pp_request_parse_line(&rq, "--model llama3-8b --gpu h100-sxm --gpus 8 --framework fsdp --zero 3 "
                                              "--no-attention-mask", &err) == PP_OK &&
                   pp_request_resolve(&rq, &cat, true, true, &res, &err) != PP_OK;
    tap_ok(refused && strstr(err.msg, "--no-attention-mask"), "--no-attention-mask under --framework fsdp is refused (%s)",
           err.msg);
    pp_resolved_free(&res);
    pp_request_free(&rq);
}

#define T8B "--model llama3-8b --gpu h200 --gpus 8 --gpus-per-node 8 --seq 8192 --mbs 1 --framework fsdp --zero 3 " \
            "--recompute none"

static void compile(void)
{
    static run e, c;
    /* TP 1: no host pace either way; the difference is SwiGLU (f = 14336 per token: 10 + 18 eager,
     * 6 + 10 fused) and RoPE (q + k = 4096 + 1024 per token: 20 + 20 eager, 4 + 4 fused), 32 layers,
     * one micro-batch of 8192 tokens per rank, at 0.9 of the H200's memory bandwidth */
    if (run_args(&e, T8B " --gbs 8") && run_args(&c, T8B " --gbs 8 --compile")) {
        double T = 8192.0, bytes = 32.0 * T * (14336.0 * ((10 - 6) + (18 - 10)) + 5120.0 * ((20 - 4) + (20 - 4)));
        double want = bytes / (0.9 * e.res.work.gpu.mem_bw_gbs * 1e9);
        tap_near(e.time.compute_s - c.time.compute_s, want, 1e-6,
                 "--compile: SwiGLU and RoPE fused save %.1f ms of a step's elementwise time", 1e3 * want);
    }
    run_free(&e);
    run_free(&c);
    /* TP 2 at one 8192-token micro-batch: eager, the DTensor blocks' host time (time_step.c
     * FSDP_TP_HOST_*: 28 + 38.6 + 32 x 18.5 ms = 658.6 ms) sets the step; compiled, its blocks'
     * 8.0 ms (FSDP_CTP_HOST_*) leave the GPU's pace */
    static run et, ct, at;
    if (run_args(&et, T8B " --gbs 4 --tp 2") && run_args(&ct, T8B " --gbs 4 --tp 2 --compile") &&
        run_args(&at, T8B " --gbs 4 --tp 2 --compile --tp-comm-overlap")) {
        tap_ok(et.time.host_s > 0 && et.time.step_time_s >= (0.0280 + 0.0386 + 32 * 0.0185) * 0.999,
               "eager FSDP2 + TP 2: the step at least the DTensor blocks' host time (%.0f ms >= 659; the wait %.0f ms)",
               1e3 * et.time.step_time_s, 1e3 * et.time.host_s);
        tap_ok(ct.time.host_s < 0.2 * et.time.host_s, "--compile: the compiled blocks' host time (the wait %.0f ms against %.0f eager)",
               1e3 * ct.time.host_s, 1e3 * et.time.host_s);
        tap_ok(at.time.tp_comm_s < ct.time.tp_comm_s && at.time.compute_s == ct.time.compute_s,
               "--tp-comm-overlap (async TP): exposed TP collectives %.1f ms, %.1f ms without", 1e3 * at.time.tp_comm_s,
               1e3 * ct.time.tp_comm_s);
    }
    run_free(&et);
    run_free(&ct);
    run_free(&at);
}

static void deepep_buffers(void)
{
    /* csrc/legacy/config.hpp by hand, 20 SMs = 10 channels, per received token 8 (SourceMeta) +
     * 128 x (8 + 4) (top-k indices, weights) + 128 x 4 (scales) = 2056 bytes beside the hidden:
     * EP 64 (8 NVLink x 8 RDMA ranks, hidden 7168 x 2 bytes, receive 288 NVLink / 128 RDMA tokens):
     *   NVLink 10 x 8 x 19 x 4 + 10 x 8 x 288 x (14336 + 2056) = 377677760 -> 377677824 (128-aligned)
     *   RDMA   10 x 8 x 18 x 2 x 4 + 10 x 8 x 128 x 2 x (14336 + 2056 + 16) = 336047360
     * EP 8 (one node, no RDMA), hidden 2048: 10 x 8 x 5 x 4 + 10 x 8 x 256 x (4096 + 2056)
     *   = 125994560 -> 125994624 */
    tap_near(pp_deepep_buffer_bytes(64, 2.0 * 7168, 20), 377677824.0 + 336047360.0, 1e-12,
             "DeepEP at EP 64, hidden 7168 (DeepSeek-V3): %.0f bytes", pp_deepep_buffer_bytes(64, 2.0 * 7168, 20));
    tap_near(pp_deepep_buffer_bytes(8, 2.0 * 2048, 20), 125994624.0, 1e-12, "DeepEP at EP 8, hidden 2048: NVLink only");
    tap_ok(pp_deepep_buffer_bytes(1, 2.0 * 2048, 20) == 0.0, "no buffers without expert parallelism");
    static run a, f;
    const char *q = "--model qwen3-30b-a3b --gpu h100-sxm --gpus 8 --gpus-per-node 8 --gbs 64 --seq 4096 --mbs 1 "
                    "--ep 8 --dist-opt --moe-grouped-gemm --moe-dispatcher";
    if (run_argsf(&a, "%s alltoall", q) && run_argsf(&f, "%s flex", q)) {
        double d = f.mem.stages[0].reserved_bytes - a.mem.stages[0].reserved_bytes;
        /* the reserve's 4% slack moves with the activations the two dispatchers keep */
        double slack = 0.04 * fabs((f.mem.stages[0].activations_bytes + f.mem.stages[0].transient_bytes) -
                                   (a.mem.stages[0].activations_bytes + a.mem.stages[0].transient_bytes));
        tap_ok(fabs(d - 125994624.0) <= slack + 1.0, "--moe-dispatcher flex: the reserve holds DeepEP's 125994624 bytes "
               "(%.0f more than alltoall's, slack difference %.0f)", d, slack);
    }
    run_free(&a);
    run_free(&f);
}

static void hybridep_buffers(void)
{
    /* deepseek-ai/DeepEP hybrid-ep csrc/hybrid_ep/buffer/intranode.cu by hand: max tokens = tokens per
     * rank x ranks; 16-bit tokens, fp32 probabilities of local experts x domain ranks, fp32 scales per
     * 128 of hidden (dispatch and combine share the first two).
     * Qwen3-30B-A3B, EP 8, micro-batch 4 of 4096 (16384 tokens), hidden 2048, 16 local experts:
     *   131072 x 2048 x 2 + 131072 x 16 x 8 x 4 + 131072 x 16 x 4 = 536870912 + 67108864 + 8388608
     * DeepSeek-V3, EP 64 in one NVL72 domain, micro-batch 1 (4096 tokens), hidden 7168, 4 local:
     *   262144 x 7168 x 2 + 262144 x 4 x 64 x 4 + 262144 x 56 x 4 = 3758096384 + 268435456 + 58720256 */
    tap_near(pp_hybridep_buffer_bytes(16384, 8, 8, 16, 2048), 612368384.0, 1e-12, "HybridEP at EP 8, Qwen3-30B-A3B "
             "micro-batch 4: %.0f bytes", pp_hybridep_buffer_bytes(16384, 8, 8, 16, 2048));
    tap_near(pp_hybridep_buffer_bytes(4096, 64, 64, 4, 7168), 4085252096.0, 1e-12,
             "HybridEP at EP 64, DeepSeek-V3 micro-batch 1: %.0f bytes", pp_hybridep_buffer_bytes(4096, 64, 64, 4, 7168));
    tap_ok(pp_hybridep_buffer_bytes(16384, 1, 1, 128, 2048) == 0.0, "no buffers without expert parallelism");
    /* through the work: the same Qwen3-30B-A3B on 8 GB200; the two backends differ in the reserve only */
    static run d, h;
    const char *q = "--model qwen3-30b-a3b --gpu gb200 --gpus 8 --gbs 512 --seq 4096 --mbs 4 --ep 8 --dist-opt "
                    "--moe-grouped-gemm --moe-dispatcher flex --moe-flex-backend";
    if (run_argsf(&d, "%s deepep", q) && run_argsf(&h, "%s hybridep", q)) {
        double dd = h.mem.stages[0].reserved_bytes - d.mem.stages[0].reserved_bytes;
        double want = 612368384.0 - pp_deepep_buffer_bytes(8, 2.0 * 2048, 20);
        tap_near(dd, want, 1e-9, "--moe-flex-backend hybridep: the reserve holds HybridEP's bytes in place of DeepEP's "
                 "(%.0f more)", dd);
        tap_ok(h.mem.stages[0].peak_bytes == d.mem.stages[0].peak_bytes && h.time.step_time_s == d.time.step_time_s,
               "the peak and the step are the backend's alike");
    }
    run_free(&d);
    run_free(&h);
}

static void vocab_padding(void)
{
    /* GPT-2's 50257 tokens at TP 2: Megatron's 128 x 2 pads to 197 x 256 = 50432; a divisor of 1 pads to
     * 50258 (a multiple of tp). The untied embedding and output layer each hold the 174 padded rows'
     * 4096 / 2 bf16 weights a rank. */
    static run d, one, big;
    const char *q = L8B " --tp 2 --vocab 50257 --dist-opt";
    if (run_args(&d, q) && run_argsf(&one, "%s --vocab-divisible-by 1", q) &&
        run_argsf(&big, "%s --vocab-divisible-by 1000", q)) {
        double want = 174.0 * 4096 / 2 * 2 * 2;
        tap_near(d.mem.stages[0].weights_bytes - one.mem.stages[0].weights_bytes, want, 1e-9,
                 "--vocab-divisible-by 1: 174 fewer rows than Megatron's default 128 x tp (%.0f bytes)", want);
        /* 1000 x 2 = 2000: 26 x 2000 = 52000 rows, 1742 over 50258 */
        want = 1742.0 * 4096 / 2 * 2 * 2;
        tap_near(big.mem.stages[0].weights_bytes - one.mem.stages[0].weights_bytes, want, 1e-9,
                 "--vocab-divisible-by 1000 at tp 2: 52000 rows (%.0f bytes over 50258)", want);
        tap_ok(big.time.step_time_s > d.time.step_time_s, "the padded rows' logits are computed too (%.4f > %.4f s)",
               big.time.step_time_s, d.time.step_time_s);
        /* 50257 at tp 2 pads to 50258: 25129 rows a rank, odd, where cuBLAS runs its slow kernels */
        tap_ok(one.time.step_time_s > big.time.step_time_s,
               "--vocab-divisible-by 1: an odd vocabulary shard is slower than 1743 rows more (%.4f > %.4f s)",
               one.time.step_time_s, big.time.step_time_s);
    }
    run_free(&d);
    run_free(&one);
    run_free(&big);
}

static void tp_vocab(void)
{
    /* KempnerForge's 7B at TP 4 x FSDP 2 on H200 nodes of 4 (tests/data/published/runs.csv kf-01) */
    static run s, g, r, one[3];
    const char *q = "--model llama3-8b --gpu h200 --gpus 8 --gpus-per-node 4 --framework fsdp --zero 3 --tp 4 --mbs 4 "
                    "--seq 4096 --gbs 16 --recompute full --compile --param-dtype bf16 --loss bf16";
    if (run_argsf(&s, "%s --tp-vocab sharded", q) && run_argsf(&g, "%s --tp-vocab gathered", q) &&
        run_argsf(&r, "%s --tp-vocab replicated", q)) {
        const double T = 4.0 * 4096, V = 128256, h = 4096, t = 4, S = 2;
        tap_ok(!strcmp(s.mem.stages[0].peak_moment, "loss backward") && !strcmp(g.mem.stages[0].peak_moment, "loss backward"),
               "the peak is the loss backward's (%s, %s)", s.mem.stages[0].peak_moment, g.mem.stages[0].peak_moment);
        double want = (6.0 - 8.0 / t) * T * V;
        tap_near(g.mem.stages[0].peak_bytes - s.mem.stages[0].peak_bytes, want, 1e-9,
                 "gathered: the loss on the whole logits, 6 bytes a logit against 8 a logit of the shard (%.0f bytes)", want);
        want = (1.0 - 1.0 / t) * V * h / S * 8.0;
        tap_near(r.mem.stages[0].peak_bytes - g.mem.stages[0].peak_bytes, want, 1e-9,
                 "replicated: the embedding's bf16 parameters, gradients and AdamW state over FSDP 2 alone (%.0f bytes)", want);
        tap_ok(g.time.step_time_s > s.time.step_time_s, "gathered: the logits' all-gather and the whole loss cost time "
               "(%.4f > %.4f s)", g.time.step_time_s, s.time.step_time_s);
        tap_ok(s.res.work.stack.tp_vocab == PP_TPV_SHARDED && r.res.work.stack.tp_vocab == PP_TPV_REPLICATED,
               "the flag sets the stack's field");
    }
    /* without TP there is nothing to split: the three alike */
    const char *names[3] = {"sharded", "gathered", "replicated"};
    bool alike = true;
    for (int i = 0; i < 3; i++) {
        if (!run_argsf(&one[i], "--model llama3-8b --gpu h200 --gpus 8 --framework fsdp --zero 3 --mbs 2 --seq 4096 "
                                "--gbs 16 --tp-vocab %s", names[i]))
            alike = false;
        else if (i > 0)
            alike = alike && one[i].mem.stages[0].peak_bytes == one[0].mem.stages[0].peak_bytes &&
                    one[i].time.step_time_s == one[0].time.step_time_s;
    }
    tap_ok(alike, "without TP the three price alike");
    run_free(&s);
    run_free(&g);
    run_free(&r);
    for (int i = 0; i < 3; i++) run_free(&one[i]);
}

static void cuda_graphs(void)
{
    /* Qwen3-30B-A3B on 8 B200 at micro-batch 1 (Megatron-Bridge's 26.02 row): each of the 48 MoE
     * layers runs at the host's pace (time.c: 8.6 ms less the dispatcher's 3.5 ms sync stall, which
     * stays; its GPU work is under the pace), 8 micro-batches per rank */
    static run n, a, f;
    const char *q = "--model qwen3-30b-a3b --gpu b200 --gpus 8 --gpus-per-node 8 --gbs 64 --seq 4096 --mbs 1 "
                    "--ep 8 --dist-opt --moe-grouped-gemm --precision mxfp8 --cuda-graphs";
    if (run_argsf(&n, "%s none", q) && run_argsf(&a, "%s attn,moe_router,moe_preprocess", q) &&
        run_argsf(&f, "%s full_iteration", q)) {
        double want = 48.0 * 8.0 * 0.25 * (8.6e-3 - 3.5e-3);
        tap_near(n.time.compute_s - a.time.compute_s, want, 1e-6,
                 "--cuda-graphs attn,moe_router,moe_preprocess: the attention's share of the host time off, %.0f ms",
                 1e3 * want);
        tap_ok(f.time.compute_s < 0.5 * a.time.compute_s,
               "--cuda-graphs full_iteration: no host pace (%.0f ms against %.0f with per-layer graphs)",
               1e3 * f.time.compute_s, 1e3 * a.time.compute_s);
    }
    run_free(&n);
    run_free(&a);
    run_free(&f);
}

/* The mean GB/s of the measured copies of 1 GiB and more (tests/data/profiles/h200.hostlink.jsonl) */
static double hostlink_measured_gbs(void)
{
    char path[1024];
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/data/profiles/h200.hostlink.jsonl", src ? src : ".");
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[1024];
    double sum = 0;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        const char *c = strstr(line, "\"case\": \"copy\""), *b = strstr(line, "\"bytes\": "), *g = strstr(line, "\"gbs\": ");
        if (!c || !b || !g || atof(b + 9) < 1073741824.0) continue;
        sum += atof(g + 7);
        n++;
    }
    fclose(f);
    return n ? sum / n : 0;
}

/* TE's synchronizer (cpu_offload.py DefaultOffloadSynchronizer): copies of x seconds a layer are due
 * after L - N + i - 1 of `per`-second layers; the largest shortfall, written out by hand */
static double stall_by_hand(int N, int L, double x, double per)
{
    double worst = 0, end = 0;
    for (int i = 0; i < N; i++) {
        double start = (double)i * per; /* layer i + 1 starts */
        end = (end > start ? end : start) + x;
        double due = (double)(L - N + i - 1) * per;
        if (end - due > worst) worst = end - due;
    }
    return worst;
}

static void cpu_offload(void)
{
    /* Llama 3 8B (32 layers) on 8 H100 at pp 1, 8 micro-batches of 8192 tokens: 16 layers offloaded */
    static run n, o;
    const char *q = "--model llama3-8b --gpu h100-sxm --gpus 8 --gpus-per-node 8 --gbs 64 --seq 8192 --mbs 1 "
                    "--framework megatron --tp 1 --pp 1 --dist-opt --recompute none";
    if (run_args(&n, q) && run_argsf(&o, "%s --cpu-offload-layers 16", q)) {
        pp_act_table tb;
        pp_memory_layer_table(&o.res.work, &o.res.layout, PP_RC_NONE, &tb);
        tap_near(n.mem.stages[0].activations_bytes - o.mem.stages[0].activations_bytes, 16.0 * tb.bytes,
                 1e-9, "--cpu-offload-layers 16: 16 layers' stored bytes (%.2f GiB each) out of the peak",
                 tb.bytes / 1073741824.0);
        tap_near(pp_memory_offload_bytes(&o.res.work, &o.res.layout), 16.0 * tb.bytes, 1e-9,
                 "pp_memory_offload_bytes: what goes to the host is what left the peak");
        pp_time_parts tp;
        pp_time_parts_get(&o.res.work, &o.res.layout, &tp);
        /* the copy rate measured on the lent H200 (tools/hostlink/copy_bw.py: 1 and 4 GiB copies, each way) */
        double rate = hostlink_measured_gbs();
        tap_ok(rate > 50 && rate < 63, "h200.hostlink.jsonl: pinned copies at %.1f GB/s of PCIe 5.0's 63", rate);
        double L = 32, x = tb.bytes / (rate / 63.0 * o.res.work.gpu.pcie_gbs * 1e9);
        double f = (L * tp.layer_fwd_s + tp.embed_fwd_s + tp.output_fwd_s) / L;
        double b = (L * tp.layer_bwd_s + tp.embed_bwd_s + tp.output_bwd_s) / L;
        double want = 8.0 * (stall_by_hand(16, 32, x, f) + stall_by_hand(16, 32, x, b));
        tap_ok(want > 0, "the case stalls: %.1f ms a layer on PCIe against %.1f ms of forward", 1e3 * x, 1e3 * f);
        tap_near(o.time.offload_s, want, 0.01, "--cpu-offload-layers 16 on PCIe: the stalls, %.0f ms a step",
                 1e3 * want);
        tap_near(o.time.step_time_s - n.time.step_time_s, o.time.offload_s, 1e-6,
                 "the step is longer by the stalls alone");
        tap_ok(n.time.offload_s == 0, "no offloading, no stall");
    }
    run_free(&n);
    run_free(&o);
    /* The remedy for Megatron-Bridge's Llama 3 70B FP8 Megatron-FSDP run on 64 GB200 at micro-batch
     * 2 (blackwell.csv mbbw-47), stated without its offloading: the offloading its config runs,
     * 40 of 80 layers (llama3_workload_base_configs.py:241), first, fitting */
    static run g;
    if (run_args(&g, "--model llama3-70b --gpu gb200 --gpus 64 --gbs 256 --seq 8192 --tp 1 --pp 1 --mbs 2 "
                     "--framework megatron --megatron-fsdp --zero 3 --grad-reduce-bf16 --no-attention-mask "
                     "--precision fp8 --fp8-param-gather --cross-entropy-fusion te")) {
        pp_remedy rem[PP_REMEDY_MAX];
        int nr = pp_remedies_find(&g.res.work, &g.res.layout, NULL, rem);
        tap_ok(!g.mem.fits && nr > 0 && rem[0].changed == (1u << PP_KNOB_ACT_OFFLOAD) &&
                   rem[0].cpu_offload_layers == 40 && rem[0].need_bytes <= g.res.work.gpu.memory_bytes,
               "remedy for the GB200 Megatron-FSDP run at micro-batch 2: --cpu-offload-layers %lld first (%d remedies), "
               "as its config runs it", nr > 0 ? (long long)rem[0].cpu_offload_layers : -1LL, nr);
    }
    run_free(&g);
}

int main(void)
{
    if (!catalog_open()) return tap_done();
    megatron_fsdp();
    optimizer_bf16();
    attention_mask();
    fp8_params();
    nvlink_domain();
    compile();
    deepep_buffers();
    hybridep_buffers();
    vocab_padding();
    tp_vocab();
    cuda_graphs();
    cpu_offload();
    pp_catalog_free(&cat);
    return tap_done();
}
