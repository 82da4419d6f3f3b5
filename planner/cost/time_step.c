/* Step-time model, part 2: a pipeline stage from its layers' terms (time.c), the pipeline
 * schedule and its bubble, the DP gradient reduction with overlap, ZeRO-3 / FSDP2 gathers and
 * copies, the optimizer step; the public estimate. The constants below are software facts or
 * published figures with their sources; the model-form constants are in time.c. */
#include "pp_time.h"

#include <math.h>
#include <string.h>

#include "memory_fsdp.h"
#include "pp_layer.h"
#include "pp_profile.h"

/* Adam's step per parameter on the rank, memory-bound, over the state memory prices
 * (pp_work_optimizer_bytes: S bytes, its parameter part pp_work_optimizer_master_bytes): read the
 * state and the gradient, write the state and the 16-bit model parameter, read the gradient once
 * more for the norm and clip. Where the state keeps no full fp32 master (16-bit remainders, or no
 * copy) the bf16 parameter is read too, as the master's high half. Megatron's fp32 state (S 12):
 * 16 + 14 + 4 = 34; remainders (S 10; NeMo's distributed_fused_adam, Megatron's precision-aware
 * optimizer): 16 + 12 + 4 = 32; NeMo's dtype bf16 (S 4, bf16 gradients): 8 + 6 + 2 = 16. */
/* ZeRO's own copies around the reduction and the step (the row's zero_copy_*: DeepSpeed's
 * buckets, flat copies and casts), at the GPU's copy rate: per parameter of the rank at each
 * reduction (ZeRO 1: the step's last backward; 2 and 3: every micro-batch's), per element of the
 * rank's partition once a step. */
static double zero_copies_s(const pp_time_ctx *c, const pp_layout *l, double m, double rank_params,
                            double partition)
{
    const pp_fw_row *fr = pp_work_fw(c->w);
    double reduce = l->zero == 1 ? fr->zero_copy_reduce_bytes_1 : fr->zero_copy_reduce_bytes * m;
    double step = l->zero == 1 ? fr->zero_copy_step_bytes : fr->zero_copy_step_bytes_2;
    return (reduce * rank_params + step * partition) / c->mem_rate;
}

/* ZeRO-3's host work per module fetch (the row's zero3_fetch_host_s): the forward, the backward
 * and a recomputed forward each fetch every module once, and the GPU waits for it. A recomputed
 * layer's modules are fetched a third time (the output layer and the embedding, up to three
 * modules outside the layers, are not recomputed). */
static double zero3_fetch_s(const pp_work *w, double modules, double layers, double rc_layers)
{
    double layer_mods = modules > 3.0 ? modules - 3.0 : 0.0;
    double fetches = 2.0 * modules + (layers > 0 ? rc_layers / layers : 0.0) * layer_mods;
    return fetches * pp_work_fw(w)->zero3_fetch_host_s;
}

static double opt_step_bytes(const pp_work *w)
{
    double S = pp_work_optimizer_bytes(w), g = w->stack.optimizer_bf16 ? 2.0 : 4.0;
    double master = pp_work_optimizer_master_bytes(w);
    bool remainders = master == 2.0 && w->stack.main_params_dtype == PP_OPT_FP32;
    double high_half = master == 0.0 || remainders ? 2.0 : 0.0;
    return (S + g + high_half) + (S + 2.0) + g;
}

/* FSDP2's parameter and gradient copies (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py
 * and _fsdp_param_group.py), bytes per parameter: an unshard casts the fp32 shard to bf16 (4/S
 * read, 2/S written) into the all-gather input and copies the gathered output into the unsharded
 * parameters (2 + 2; on one rank the cast is the whole unshard, 6); a reduction casts the bf16
 * gradient into the fp32 reduce-scatter input (2 + 4) and, on one rank, copies it to the output
 * (4 + 4), else adds a later micro-batch's shard into the gradient (4 + 4 + 4, / S). */
#define FSDP_CAST_BYTES 6.0
#define FSDP_COPY_OUT_BYTES 4.0
#define FSDP_RS_COPY_BYTES 8.0
#define FSDP_ACCUM_BYTES 12.0
/* torch.optim.AdamW per parameter of the shard: fused (torch._fused_adamw_) reads parameter,
 * gradient, m, v and writes parameter, m, v: 28; foreach (_multi_tensor_adam) runs one kernel
 * per step of the update: weight decay 8, lerp of m 12, v *= beta2 8, addcmul into v 14 (the
 * gradient read once for both factors), sqrt 8, / bias correction 8, + eps 8, addcdiv into the
 * parameter 16: 82. Measured on one H200: foreach - fused = 48.0 ms for 3.607e9 parameters
 * (tests/data/fsdp/runs.csv, l3b_s4k_b1_full*), 54 B at 4.06 TB/s, the copy bandwidth the
 * anchors measured there (4.10-4.18 TB/s). No gradient clipping (torchtitan's max_norm adds a
 * norm pass and a scale: not in the runs, not modelled). */
#define OPT_FSDP_FUSED_BYTES 28.0
#define OPT_FSDP_FOREACH_BYTES 82.0

/* FSDP2's Python host. Every block's forward and backward passes through FSDP2's hooks (unshard:
 * the all-gather's copy-in, collective and copy-out; post-backward: the reduce-scatter's) and the
 * module's own Python, and where the GPU's work per block is short the host sets the pace: at
 * 512-2048 tokens a step of a 3B model took 178-211 ms on one H200 with the GPU busy 88-143 ms of
 * it. The host's time for a step is
 *   FSDP_HOST_STEP_S + m x (FSDP_HOST_MB_S + n x FSDP_HOST_BLOCK_S + r x FSDP_HOST_RECOMPUTE_S)
 * (m micro-batches, n blocks of the stage, r of them recomputed), and the step the soft maximum
 * (G^k + H^k)^(1/k) of the GPU's time G and the host's H (k = FSDP_HOST_K: the two overlap, and
 * where they are close neither hides the other). Fitted (tools/fsdp/fit_host.py) on the looked-at
 * rows of tests/data/fsdp/runs_host.csv (one H200, PyTorch 2.11, the lent machine's Xeon host;
 * predictions and held-out rows committed first in tools/fsdp/configs_host.csv): the step (the
 * optimizer and zero_grad's Python) 28.0 ms, a micro-batch (loss, embedding, output layer, the
 * root's hooks) 38.6 ms, a block 4.58 ms (3B and Llama-3-8B blocks alike; compiled blocks as eager:
 * the hooks, not the ops, take the time), a recomputed block's forward again 3.33 ms. Held out:
 * -6.1%, +4.4%, +0.4% (the GPU's time alone: -36.4%, -30.7%, -43.6%); node4-runs prints them.
 * Selective recompute re-runs the block's Python forward as full recompute does (not measured).
 * The host's speed is the machine's: the same 3B runs took 163-232 ms step to step. */
#define FSDP_HOST_STEP_S 28.0e-3
#define FSDP_HOST_MB_S 38.6e-3
#define FSDP_HOST_BLOCK_S 4.58e-3
#define FSDP_HOST_RECOMPUTE_S 3.33e-3
#define FSDP_HOST_K 6.0
/* Eager TP (torchtitan's apply_tp without compile): every linear, norm and redistribution of the
 * block is a DTensor op dispatched by Python, a block's host time and its recomputed forward's
 * instead of the two above, the step's and micro-batch's kept. Fitted (grid 0.5 ms, log error;
 * tools/fsdp/fit_host.py) on the looked-at eager TP 2 runs of two machines: two H200s
 * (tests/data/fsdp/runs_tp_host.csv, 2048-8192 tokens, 3B and 8B blocks, full AC; runs_2gpu.csv)
 * and the 4 x H200 node (tests/data/node4/fsdp_runs.csv): 18.5 ms a block, 8.0 ms a recomputed
 * block. The hosts differ: the node's 8B TP 2 run took 963 ms where this prices 682 (-29%), the
 * two-GPU machine's 3B runs 539-585 ms against 585; the same 3B run took 489 ms in an earlier call.
 * Held out (runs_tp_host.csv, runs_2gpu.csv): -9.5%, +0.6%, +1.2%, where the per-block floor read
 * off the node's run (27.5 ms, applied to each layer's compute) had been +27%, +28%, +34%. */
#define FSDP_TP_HOST_BLOCK_S 18.5e-3
#define FSDP_TP_HOST_RECOMPUTE_S 8.0e-3
/* Compiled TP (torchtitan's apply_tp with compile): the compiled block's graph is one call, but its
 * DTensor inputs and outputs are redistributed around it, about twice FSDP2's host time a block
 * without TP. Fitted the same way on the looked-at compiled TP 2 runs (tests/data/fsdp/
 * runs_ctp_host.csv, two H200s, 1024-4096 tokens; runs_2gpu.csv): 8.0 ms a block, 4.0 ms a
 * recomputed one. Held out -14.5%, -7.8% (runs_ctp_host.csv) and -2.7% (runs_tp_host.csv's
 * compiled run, -34.8% with FSDP2's figures). */
#define FSDP_CTP_HOST_BLOCK_S 8.0e-3
#define FSDP_CTP_HOST_RECOMPUTE_S 4.0e-3
/* Compiled TP with torchao's float8 (torchtitan's float8 converter; tensorwise with torchao's float8
 * TP styles): more of the block's work is dispatched around its graph. Fitted on the profiled TP 2
 * step of 12 Llama-3-8B blocks of 8k tokens without AC, where the GPU was busy 165 ms of a 207 ms
 * step (e8_f8t_tp2_none_l12_p, tests/data/fsdp/f8cast): -14.4% with compiled TP's 8.0 ms, -0.9%
 * with 11.0 (grid 0.5 ms). Held out: both recipes under selective AC, -1.8% and -1.5%
 * (runs_f8held.csv); not fitted on, though seen before the fit: the other float8 TP 2 runs
 * (runs_float8.csv, runs_shape3b.csv, runs_f8none.csv, runs_f8cast.csv; the fsdp-float8-noac test).
 * A recomputed block as compiled TP's (not measured). */
#define FSDP_CTP_F8_HOST_BLOCK_S 11.0e-3

/* Megatron's DDP bucket (megatron/core/distributed: bucket_size = max(40M, 1M x dp)): the last
 * bucket cannot overlap with anything. */
#define DP_BUCKET_PARAMS 40e6
/* CPU Adam (optimizer offload): parameters updated per second per GPU process, on a host
 * shared by 8 GPUs. An order-of-magnitude assumption, not measured here (ZeRO-Offload, Ren et
 * al. 2021, is the reference design); only used when --offload is given. */
#define CPU_ADAM_PARAMS_PER_S 1e9

static double max2(double a, double b) { return a > b ? a : b; }
static double pos(double a) { return a > 0 ? a : 0; }

/* ------------------------------------------------------------------ the step */

/* The share of the catalog's host-link rate (pcie_gbs) pinned copies reach: 55.3-55.5 GB/s each
 * way of PCIe 5.0 x16's 63 on the lent H200, 1-4 GiB copies, either direction, with or without a
 * GEMM loop beside them (tools/hostlink/copy_bw.py, tests/data/profiles/h200.hostlink.jsonl);
 * NVLink-C2C (Grace) is assumed to reach the same share of its figure (not measured here). */
#define HOST_LINK_EFF 0.879
/* Bytes per second one way between the GPU and host memory: every host copy the model prices
 * (activation offloading, ZeRO-Infinity's parameters, CPU Adam's gradients and parameters) */
static double host_link_bps(const pp_work *w) { return HOST_LINK_EFF * w->gpu.pcie_gbs * 1e9; }

/* Megatron's CPU offloading (--cpu-offload-layers N of L layers, pp 1), on one side of the
 * micro-batch: TransformerEngine (cpu_offload.py DefaultOffloadSynchronizer, v2.10) copies layer i
 * out on one stream once layer i + 1 starts its forward and waits for it before layer L - N + i
 * runs; in the backward it starts bringing layer i back at layer L - 1 - N + i and waits for it at
 * layer i. With x seconds per layer on the host link and `per` seconds of compute per layer, the
 * copies end (i + 1) x in when x >= per (i per + x otherwise) and are due after L - N + i - 1
 * layers: the compute stalls by the largest shortfall, N x - (L - 2) per or x - (L - N - 1) per. */
static double offload_stall_s(double N, double L, double x, double per)
{
    double a = N * x - (L - 2.0) * per, b = x - (L - N - 1.0) * per;
    return a > b ? (a > 0 ? a : 0) : (b > 0 ? b : 0);
}

typedef struct {
    double n[PP_LAYER_KINDS], r[PP_LAYER_KINDS]; /* layers and fully recomputed layers by kind */
    double mtp;      /* MTP layers (last stage) */
    bool first, last;
} stage_desc;

typedef struct {
    double fwd, bwd;     /* per micro-batch, all included */
    double compute, recompute, tp, cp, ep;
    double params;       /* parameters on one rank of the stage (elements) */
    double expert_params;
    double layers, rc_layers; /* decoder layers, and those fully recomputed */
    double hf_modules;   /* Hugging Face modules holding parameters (zero3_fetch_s; 0 where the
                            row prices no fetch) */
} stage_time;

/* Modules holding parameters in one Hugging Face decoder layer of kind k (LlamaDecoderLayer:
 * q_proj, k_proj, v_proj, o_proj, the MLP's gate_proj, up_proj and down_proj (two without a gate),
 * two RMSNorms, and Qwen3's q_norm and k_norm; an MoE layer's router and each expert's MLP,
 * Mixtral-style, and the shared expert's). */
static double hf_layer_modules(const pp_work *w, int k)
{
    const pp_model *m = &w->model;
    const bool glu = pp_activations[m->act].gated;
    const double mlp = glu ? 3.0 : 2.0;
    const double norms = 2.0 + (m->qk_norm != PP_QKNORM_NONE ? 2.0 : 0.0); /* Qwen3's q_norm, k_norm */
    if (!(k & PP_LAYER_MOE)) return 4.0 + mlp + norms;
    return 4.0 + norms + 1.0 + mlp * ((double)m->experts + (m->shared_ffn > 0 ? 1.0 : 0.0));
}

static void stage_eval(const pp_time_ctx *c, const pp_layout *l, const pp_time_layer *ly,
                       const stage_desc *sd, stage_time *st)
{
    memset(st, 0, sizeof *st);
    double t = (double)l->tp, et = (double)pp_layout_etp(l) * (double)l->ep;
    int mtp_kind = pp_model_mtp_kind(&c->w->model);
    /* the modules a ZeRO-3 step fetches, counted only where the row prices their fetch */
    const bool fetch_host = l->zero >= 3 && pp_work_fw(c->w)->zero3_fetch_host_s > 0;
    for (int k = 0; k < PP_LAYER_KINDS; k++) {
        double n = sd->n[k] + (k == mtp_kind && sd->last ? sd->mtp : 0.0), r = sd->r[k];
        if (n <= 0) continue;
        pp_time_terms y;
        pp_time_layer_terms(ly, k, &y);
        double fwd_layer = y.fwd_compute_s + y.fwd_tp_s + y.fwd_cp_s + y.fwd_ep_s;
        double sel = l->recompute == PP_RC_SELECTIVE ? n * y.sel_recompute_s : 0;
        st->compute += n * (y.fwd_compute_s + y.bwd_compute_s);
        st->tp += n * (y.fwd_tp_s + y.bwd_tp_s) + r * y.fwd_tp_s;
        st->cp += n * (y.fwd_cp_s + y.bwd_cp_s) + r * y.fwd_cp_s;
        st->ep += n * (y.fwd_ep_s + y.bwd_ep_s) + r * y.fwd_ep_s;
        st->recompute += r * (y.fwd_compute_s - y.recompute_less_s) + sel;
        st->fwd += n * fwd_layer;
        st->bwd += n * (y.bwd_compute_s + y.bwd_tp_s + y.bwd_cp_s + y.bwd_ep_s) + r * (fwd_layer - y.recompute_less_s) + sel;
        st->params += n * (pp_work_lora(c->w) ? c->lora_layer_params : c->kind_dense_params[k]) / t;
        st->expert_params += n * c->kind_expert_params[k] / et;
        st->layers += n;
        st->rc_layers += r;
        if (fetch_host) st->hf_modules += n * hf_layer_modules(c->w, k);
    }
    /* the embedding; the final norm and the output layer */
    if (fetch_host) st->hf_modules += (sd->first ? 1.0 : 0.0) + (sd->last ? 2.0 : 0.0);
    /* LoRA: the embedding, final norm and output layer are frozen (no gradients, no optimizer) */
    const double trained = pp_work_lora(c->w) ? 0.0 : 1.0;
    if (sd->first) {
        st->fwd += ly->embed_fwd_s;
        st->bwd += ly->embed_bwd_s;
        st->compute += ly->embed_fwd_s + ly->embed_bwd_s - ly->embed_tp_s;
        st->tp += ly->embed_tp_s;
        st->params += trained * c->embed_params / pp_layer_embed_tp(c->w, l);
    }
    if (sd->last) {
        /* Each MTP layer ends in its own pass through the shared output layer and loss. */
        double heads = 1.0 + sd->mtp;
        st->fwd += heads * ly->output_fwd_s;
        st->bwd += heads * ly->output_bwd_s;
        st->compute += heads * (ly->output_fwd_s + ly->output_bwd_s - ly->output_tp_s);
        st->tp += heads * ly->output_tp_s;
        st->params += trained * (c->final_params + sd->mtp * c->mtp_extra_params / t);
        /* Untied output layer, or Megatron's copy of the tied embedding on the last stage. */
        if (c->output_params > 0) st->params += trained * c->output_params / t;
        else if (l->pp > 1) st->params += trained * c->embed_params / pp_layer_embed_tp(c->w, l);
    }
}

/* Middle stages (or model chunks) of the same make-up cost the same: stage_eval, reusing the last
 * middle one's figures when sd is the same. */
typedef struct {
    stage_desc sd;
    stage_time st;
    bool have;
    int64_t n, r;  /* its layers and recomputed layers */
    bool one_kind; /* all its layers (and all after them) of one kind: pp_model_one_kind_from */
} stage_memo;

static void stage_eval_memo(const pp_time_ctx *c, const pp_layout *l, const pp_time_layer *ly, const stage_desc *sd,
                            stage_time *st, stage_memo *memo)
{
    if (memo->have && !sd->first && !sd->last && !memcmp(sd, &memo->sd, sizeof *sd)) {
        *st = memo->st;
        return;
    }
    stage_eval(c, l, ly, sd, st);
    if (!sd->first && !sd->last) {
        memo->sd = *sd;
        memo->st = *st;
        memo->have = true;
    }
}

static void stage_time_add(stage_time *acc, const stage_time *x)
{
    acc->fwd += x->fwd;
    acc->bwd += x->bwd;
    acc->compute += x->compute;
    acc->recompute += x->recompute;
    acc->tp += x->tp;
    acc->cp += x->cp;
    acc->ep += x->ep;
    acc->params += x->params;
    acc->expert_params += x->expert_params;
}

static double recomputed(const pp_layout *l, double n)
{
    if (l->recompute != PP_RC_FULL) return 0;
    if (l->recompute_layers > 0 && (double)l->recompute_layers < n) return (double)l->recompute_layers;
    return n;
}

/* Stage i holding decoder layers [first, first + n), the first r of them fully recomputed. */
static void stage_desc_range(const pp_model *m, int64_t first, int64_t n, int64_t r, bool is_first,
                             bool is_last, stage_desc *sd)
{
    int64_t cn[PP_LAYER_KINDS], cr[PP_LAYER_KINDS];
    pp_model_layer_counts(m, first, n, cn);
    pp_model_layer_counts(m, first, r, cr);
    for (int k = 0; k < PP_LAYER_KINDS; k++) {
        sd->n[k] = (double)cn[k];
        sd->r[k] = (double)cr[k];
    }
    sd->mtp = is_last ? (double)m->mtp_layers : 0.0;
    sd->first = is_first;
    sd->last = is_last;
}

/* Decoder layers [first, first + n) with the first r fully recomputed, on the first and/or last
 * stage (or model chunk), priced through the memo. */
static void stage_eval_range(const pp_time_ctx *c, const pp_layout *l, const pp_time_layer *ly, int64_t first, int64_t n,
                             int64_t r, bool is_first, bool is_last, stage_memo *memo, stage_time *st)
{
    const pp_model *m = &c->w->model;
    bool one_kind = pp_model_one_kind_from(m, first);
    /* past the layers whose kinds differ, the same counts make the same stage: no need to count
     * its layers' kinds again (the search prices every chunk of every candidate) */
    if (memo->have && memo->one_kind && one_kind && !is_first && !is_last && n == memo->n && r == memo->r) {
        *st = memo->st;
        return;
    }
    stage_desc sd;
    memset(&sd, 0, sizeof sd);
    stage_desc_range(m, first, n, r, is_first, is_last, &sd);
    stage_eval_memo(c, l, ly, &sd, st, memo);
    if (!is_first && !is_last) {
        memo->n = n;
        memo->r = r;
        memo->one_kind = one_kind;
    }
}

/* A stage of n layers all of kind k (the uniform fast path of one-kind models). */
static stage_desc stage_desc_one(const pp_model *m, int k, double n, double r, bool is_first, bool is_last)
{
    stage_desc sd;
    memset(&sd, 0, sizeof sd);
    sd.n[k] = n;
    sd.r[k] = r;
    sd.mtp = is_last ? (double)m->mtp_layers : 0.0;
    sd.first = is_first;
    sd.last = is_last;
    return sd;
}

/* --framework fsdp (PyTorch FSDP2 as torchtitan applies it): the time one step of stage st adds
 * for its parameters and gradients, and the parameters the rank's optimizer updates (*opt_params).
 * Groups: the embedding (first stage), each block, [norm, output] (last stage). Per micro-batch:
 *   - unshard: the bf16 cast of the fp32 shard and, across ranks, the all-gather and its
 *     copy-out; blocks and embedding again in the backward with reshard_after_forward (--zero 3);
 *     [norm, output] once (never resharded after forward);
 *   - reduction: the bf16 gradients cast into the fp32 reduce-scatter input, the reduce-scatter
 *     (fp32, torchtitan's reduce_dtype) and under HSDP the all-reduce of the shard over the
 *     replicas; on one rank a copy; later micro-batches add into the sharded gradient;
 *   - PP with several micro-batches: gradients accumulate unsharded in fp32 and are reduced once,
 *     parameters stay unsharded between backwards (torch.distributed.pipelining stage.py).
 * The copies run on the compute stream, except the reduce-scatter stream's (the one-rank copy,
 * the accumulation), which hide behind the backward's compute. Collectives overlap with compute
 * (FSDP2 prefetches the next block's all-gather in the forward and backward, reduces on its own
 * stream): exposed are the first group's gather, the last group's reduction, and whatever the
 * others take beyond the compute they run beside (pp_time_behind()). */
/* FSDP2 with expert parallelism (torchtitan's parallelize for MoE models, apply_fsdp; NeMo
 * AutoModel's the same): a block's routed experts are sharded by EP and wrapped on their own
 * over the expert-FSDP mesh (dp_shard_mod_ep: the edp = dp x cp / ep ranks that hold the same
 * experts), the rest of the block over the whole shard group; each is gathered and reduced over
 * its own group, and an expert group of one rank only casts its parameters (FSDP_CAST_BYTES). */
typedef struct {
    double S, SE, R;          /* shard ranks (dense, experts), HSDP replicas */
    int64_t sn, sen, rn, ren; /* of those on one node */
} fsdp_groups;

static double fsdp_gather_s(const pp_time_ctx *c, const fsdp_groups *g, double dense, double expert, double bytes)
{
    return (g->S > 1 ? pp_time_collective_s(c, PP_TC_ALL_GATHER, (int64_t)g->S, g->sn, dense * bytes) : 0.0) +
           (g->SE > 1 ? pp_time_collective_s(c, PP_TC_ALL_GATHER, (int64_t)g->SE, g->sen, expert * bytes) : 0.0);
}

/* fp32 gradients reduce-scattered over the shard group, and under HSDP the shard all-reduced over
 * the replicas */
static double fsdp_reduce_s(const pp_time_ctx *c, const fsdp_groups *g, double dense, double expert)
{
    return (g->S > 1 ? pp_time_collective_s(c, PP_TC_REDUCE_SCATTER, (int64_t)g->S, g->sn, dense * 4.0) : 0.0) +
           (g->SE > 1 ? pp_time_collective_s(c, PP_TC_REDUCE_SCATTER, (int64_t)g->SE, g->sen, expert * 4.0) : 0.0) +
           (g->R > 1 ? pp_time_collective_s(c, PP_TC_ALL_REDUCE, (int64_t)g->R, g->rn, dense * 4.0 / g->S) +
                           pp_time_collective_s(c, PP_TC_ALL_REDUCE, (int64_t)g->R, g->ren, expert * 4.0 / g->SE)
                     : 0.0);
}

static double fsdp_stage_comm(const pp_time_ctx *c, const pp_layout *l, const stage_time *st,
                              double n_blocks, bool first, bool last, double m, double *opt_params)
{
    const pp_work *w = c->w;
    const double t = (double)l->tp;
    const double R = l->replicate > 1 ? (double)l->replicate : 1.0;
    const double dpcp = (double)(l->dp * l->cp);
    const double edp = (double)pp_layout_edp(l);
    double S, SE;
    pp_fsdp_shards(l, &S, &SE);
    const bool reshard = l->zero >= 3;
    bool nosync, nosync_g; /* parameters kept unsharded, gradients unsynced (memory_fsdp.c) */
    pp_fsdp_sync(w, l, (int64_t)m, &nosync, &nosync_g);
    const double E = first ? c->embed_params / pp_layer_embed_tp(w, l) : 0.0;
    const double H = last ? c->final_params + (c->output_params > 0 ? c->output_params / t : 0.0) : 0.0;
    const double P = st->params, PE = st->expert_params, Pall = P + PE;
    /* the blocks' parameters, less their routed experts where EP wraps those on their own (without
     * EP they are part of the block's one FSDP unit) */
    const double PEs = l->ep > 1 ? PE : 0.0;
    const double D = max2(0.0, P - E - H) + PE - PEs;
    const double blk = n_blocks > 0 ? D / n_blocks : 0.0, blk_e = n_blocks > 0 ? PEs / n_blocks : 0.0;
    *opt_params = P / S + PE / SE;

    /* gathers per step of the blocks and embedding, and of [norm, output] */
    double g_blocks = nosync ? (reshard ? m + 1.0 : 1.0) : m * (reshard ? 2.0 : 1.0);
    double g_head = nosync ? 1.0 : m;
    double unshard_b = S > 1 ? FSDP_CAST_BYTES / S + FSDP_COPY_OUT_BYTES : FSDP_CAST_BYTES;
    double unshard_e = SE > 1 ? FSDP_CAST_BYTES / SE + FSDP_COPY_OUT_BYTES : FSDP_CAST_BYTES;
    double serial = unshard_b * ((D + E) * g_blocks + H * g_head) + unshard_e * PEs * g_blocks;
    double reductions = nosync_g ? 1.0 : m;
    /* copy-in every micro-batch; without the sync the bf16 gradient is added into the fp32
     * accumulator instead (read 2 + 4, write 4) */
    serial += Pall * (nosync_g ? (m - 1.0) * 10.0 + FSDP_CAST_BYTES : m * FSDP_CAST_BYTES);
    double side = (S > 1 ? P * (reductions - 1.0) * FSDP_ACCUM_BYTES / S : P * reductions * FSDP_RS_COPY_BYTES) +
                  (SE > 1 ? PE * (reductions - 1.0) * FSDP_ACCUM_BYTES / SE : PE * reductions * FSDP_RS_COPY_BYTES);
    double compute = m * (st->fwd + st->bwd);
    double total = serial / c->mem_rate + pp_time_behind(side / c->mem_rate, m * st->bwd);

    const int64_t gpn = pp_work_nvlink_gpus(w);
    if (S > 1 || R > 1) {
        /* torchtitan's mesh is [pp, dp_replicate, dp_shard, cp, tp], tp innermost: the shard
         * group's ranks are tp apart, the replicas tp x shard apart; EP takes the inner ranks of
         * dp_shard x cp, so the expert-FSDP group's ranks are etp x ep apart. */
        int64_t ee = pp_layout_etp(l) * l->ep;
        fsdp_groups g = {S, SE, R, pp_layout_group_per_node((int64_t)S, l->tp, gpn),
                         pp_layout_group_per_node((int64_t)SE, ee, gpn),
                         pp_layout_group_per_node((int64_t)R, l->tp * (int64_t)S, gpn),
                         pp_layout_group_per_node((int64_t)R, ee * (int64_t)SE, gpn)};
        double ab = pp_fsdp_fp8_gather(w, l) ? 1.0 : 2.0; /* torchao's float8 all-gather */
        double ag_b = fsdp_gather_s(c, &g, blk, blk_e, ab), rs_b = fsdp_reduce_s(c, &g, blk, blk_e);
        /* first gathered, last reduced: the embedding on the first stage, else a block */
        double ag_first = first ? fsdp_gather_s(c, &g, E, 0, 2.0) : fsdp_gather_s(c, &g, blk, blk_e, 2.0);
        double rs_last = first ? fsdp_reduce_s(c, &g, E, 0) : rs_b;
        /* all the rest, per step: the blocks' gathers and reductions and the other groups' */
        double ag_all = n_blocks * ag_b * g_blocks + fsdp_gather_s(c, &g, E * g_blocks + H * g_head, 0, 2.0);
        double rs_all = reductions * (n_blocks * rs_b + fsdp_reduce_s(c, &g, E + H, 0));
        double exposed_once = m * ag_first + reductions * rs_last;
        total += exposed_once + pp_time_behind(max2(0.0, ag_all + rs_all - exposed_once), compute);
    }
    if (l->zero < 2 && dpcp > 1) {
        /* no sharding (torchtitan's DDP): fp32 gradients all-reduced in buckets during the last
         * backward (torch DDP bucket_cap_mb, torchtitan 100 MB), the experts' over their edp
         * replicas; the last bucket is exposed. */
        int64_t dn = pp_layout_group_per_node((int64_t)dpcp, l->tp, gpn);
        int64_t en = pp_layout_group_per_node((int64_t)edp, pp_layout_etp(l) * l->ep, gpn);
        double ar = pp_time_collective_s(c, PP_TC_ALL_REDUCE, (int64_t)dpcp, dn, P * 4.0) +
                    pp_time_collective_s(c, PP_TC_ALL_REDUCE, (int64_t)edp, en, PE * 4.0);
        double buckets = max2(1.0, Pall * 4.0 / 100e6);
        total += ar / buckets + pp_time_behind(ar - ar / buckets, st->bwd);
    }
    return total;
}

/* The host's time for an FSDP2 step (FSDP_HOST_*; under TP the blocks' FSDP_TP_HOST_* eager,
 * FSDP_CTP_HOST_* compiled): its slowest pipeline stage's. */
static double fsdp_host_s(const pp_work *w, const pp_layout *l, double m)
{
    const bool tp = l->tp > 1, comp = w->stack.compile;
    const bool f8 = w->stack.precision == PP_PREC_FP8 && pp_work_fw(w)->torchao_float8;
    const double blk = !tp ? FSDP_HOST_BLOCK_S : comp ? (f8 ? FSDP_CTP_F8_HOST_BLOCK_S : FSDP_CTP_HOST_BLOCK_S)
                                                       : FSDP_TP_HOST_BLOCK_S;
    const double rc = !tp ? FSDP_HOST_RECOMPUTE_S : comp ? FSDP_CTP_HOST_RECOMPUTE_S : FSDP_TP_HOST_RECOMPUTE_S;
    double worst = 0;
    for (int64_t i = 0; i < l->pp; i++) {
        double n = (double)pp_layout_stage_layers(w, l, i), r = 0;
        if (l->recompute == PP_RC_FULL) r = l->stage_recompute ? (double)l->stage_recompute[i] : recomputed(l, n);
        else if (l->recompute == PP_RC_SELECTIVE) r = n;
        double h = m * (FSDP_HOST_MB_S + n * blk + r * rc);
        if (h > worst) worst = h;
    }
    return FSDP_HOST_STEP_S + worst;
}

void pp_time_step(const pp_time_ctx *c, const pp_layout *l, const pp_time_layer *ly,
                  pp_time_result *out)
{
    const pp_work *w = c->w;
    const pp_model *mdl = &w->model;
    const int64_t p = l->pp, L = w->model.layers;
    const double m = (double)(w->gbs / (l->dp * l->mbs));
    const double v = (double)l->vpp;
    memset(out, 0, sizeof *out);
    /* One layer kind in every decoder layer: stages differ only in their layer counts. */
    const bool one_kind = (ly->kinds_present & ~(1u << ly->kind_main)) == 0;
    const int km = ly->kind_main;

    /* Stages: uniform split of one kind in O(1) (the first L % p stages hold one more layer), or
     * stage by stage (an uneven split, or layers of several kinds). Track the slowest, the first
     * and the last stage and the sum. */
    stage_time worst = {0}, first = {0}, last = {0};
    double sum_work = 0, worst_work = -1;
    /* An interleaved split whose virtual stages differ: each model chunk priced by its own layers
     * (a contiguous range of decoder layers, the embedding in the first, the output layer, loss
     * and MTP layers in the last), a stage the sum of its chunks. */
    const bool by_chunk = pp_layout_vstages_uneven(w, l);
    double max_chunk_work = 0;
    if (by_chunk) {
        stage_time rank[PP_MAX_STAGES]; /* pp_layout_validate: p <= PP_MAX_STAGES here */
        memset(rank, 0, (size_t)p * sizeof rank[0]);
        const int64_t nv = p * l->vpp;
        stage_memo memo = {.have = false};
        for (int64_t k = 0, at = 0; k < nv; k++) {
            int64_t i = k % p, j = k / p;
            int64_t n = pp_layout_vstage_layers(w, l, i, j), r = pp_layout_vstage_recompute(w, l, i, j);
            stage_time st;
            stage_eval_range(c, l, ly, at, n, r, k == 0, k == nv - 1, &memo, &st);
            at += n;
            if (st.fwd + st.bwd > max_chunk_work) max_chunk_work = st.fwd + st.bwd;
            stage_time_add(&rank[i], &st);
        }
        for (int64_t i = 0; i < p; i++) {
            double work = rank[i].fwd + rank[i].bwd;
            sum_work += work;
            if (work > worst_work) { worst_work = work; worst = rank[i]; }
        }
        first = rank[0];
        last = rank[p - 1];
    } else if (l->stage_layers || l->vstage_layers || !one_kind) {
        int64_t at = 0;
        stage_memo memo = {.have = false};
        for (int64_t i = 0; i < p; i++) {
            int64_t n = pp_layout_stage_layers(w, l, i);
            int64_t r = l->stage_recompute ? l->stage_recompute[i] : (int64_t)recomputed(l, (double)n);
            stage_time st;
            stage_eval_range(c, l, ly, at, n, r, i == 0, i == p - 1, &memo, &st);
            at += n;
            double work = st.fwd + st.bwd;
            sum_work += work;
            if (work > worst_work) { worst_work = work; worst = st; }
            if (i == 0) first = st;
            if (i == p - 1) last = st;
        }
    } else {
        int64_t lo = L / p, rem = L % p; /* rem < p: the last stage never gets an extra layer */
        double n0 = (double)(lo + (rem > 0)), nl = (double)lo;
        stage_desc d0 = stage_desc_one(mdl, km, n0, recomputed(l, n0), true, p == 1);
        stage_eval(c, l, ly, &d0, &first);
        worst = first;
        worst_work = first.fwd + first.bwd;
        if (p == 1) {
            last = first;
            sum_work = worst_work;
        } else {
            stage_desc dl = stage_desc_one(mdl, km, nl, recomputed(l, nl), false, true);
            stage_eval(c, l, ly, &dl, &last);
            double wl = last.fwd + last.bwd;
            if (wl > worst_work) { worst_work = wl; worst = last; }
            sum_work = first.fwd + first.bwd + wl;
            if (p > 2) {
                /* Middle stages: rem - 1 of them (if any) with lo + 1 layers, the rest lo. */
                int64_t mid_hi = rem > 1 ? (rem - 1 < p - 2 ? rem - 1 : p - 2) : 0;
                int64_t mid_lo = p - 2 - mid_hi;
                stage_time sh = {0}, sl = {0};
                if (mid_hi > 0) {
                    stage_desc dh = stage_desc_one(mdl, km, (double)(lo + 1),
                                                   recomputed(l, (double)(lo + 1)), false, false);
                    stage_eval(c, l, ly, &dh, &sh);
                    sum_work += (double)mid_hi * (sh.fwd + sh.bwd);
                    if (sh.fwd + sh.bwd > worst_work) { worst_work = sh.fwd + sh.bwd; worst = sh; }
                }
                if (mid_lo > 0) {
                    stage_desc dd = stage_desc_one(mdl, km, (double)lo, recomputed(l, (double)lo),
                                                   false, false);
                    stage_eval(c, l, ly, &dd, &sl);
                    sum_work += (double)mid_lo * (sl.fwd + sl.bwd);
                    if (sl.fwd + sl.bwd > worst_work) { worst_work = sl.fwd + sl.bwd; worst = sl; }
                }
            }
        }
    }

    /* --- pipeline */
    const int64_t gpn = pp_work_nvlink_gpus(w);
    double p2p = 0, per_mb_p2p = 0;
    if (p > 1) {
        /* Stage neighbours are tp*cp*dp ranks apart: on a multi-node job at least one stage
         * boundary crosses nodes, and the pipeline runs at the pace of its slowest link. */
        bool cross = w->gpus > gpn;
        p2p = cross ? pp_time_collective_s(c, PP_TC_SENDRECV, 2, 1, ly->p2p_bytes)
                    : pp_time_collective_s(c, PP_TC_SENDRECV, 2, 2, ly->p2p_bytes);
        p2p += ly->p2p_gather_s;
        /* 1F1B: per micro-batch a stage receives/sends its activations and gradients (two
         * batched exchanges). The interleaved schedule does that once per model chunk: the
         * v - 1 extra exchanges each way are exposed, or, overlapped with the chunk's compute
         * (Megatron-Core --overlap-p2p-communication), cost what overlap costs. */
        per_mb_p2p = 2.0 * p2p;
        if (v > 1) {
            double chunk = worst_work / (2.0 * v);
            per_mb_p2p += 2.0 * (v - 1) * (c->opts.overlap_p2p ? pp_time_behind(p2p, chunk) : p2p);
        }
    }
    double pipe, pp_comm;
    if (p == 1) {
        pipe = m * worst_work;
        pp_comm = 0;
    } else if (v <= 1) {
        /* Flow shop of m identical jobs over p machines: (m-1) max + sum. */
        pipe = (m - 1) * (worst_work + per_mb_p2p) + sum_work + (double)p * per_mb_p2p;
        pp_comm = (m + (double)p - 1) * per_mb_p2p;
    } else if (!by_chunk) {
        /* Interleaved (Narayanan et al. SC'21 sec. 2.2.2): the bubble shrinks to (p-1)/v. */
        double avg = sum_work / (double)p;
        pipe = m * (worst_work + per_mb_p2p) + ((double)p - 1) / v * (avg + per_mb_p2p);
        pp_comm = (m + ((double)p - 1) / v) * per_mb_p2p;
    } else {
        /* Interleaved with virtual stages of different sizes: the steady state runs at the pace
         * of the fullest stage (all its chunks per micro-batch), and the fill and the drain pass
         * p - 1 chunk boundaries at the pace of the slowest virtual stage: the bubble is
         * (p-1) x its time, where equal chunks give the (p-1)/v of a stage above. */
        pipe = m * (worst_work + per_mb_p2p) + ((double)p - 1) * (max_chunk_work + per_mb_p2p / v);
        pp_comm = (m + ((double)p - 1) / v) * per_mb_p2p;
    }
    /* --- activation offloading: the stalls of both passes, per micro-batch (pp 1: the layout's
     * check), the host link at HOST_LINK_EFF of the catalog's pcie_gbs (one direction; NVLink-C2C
     * on Grace) */
    if (w->stack.cpu_offload_layers > 0 && p == 1 && w->gpu.pcie_gbs > 0) {
        const double N = (double)w->stack.cpu_offload_layers, Ls = (double)L;
        const double x = ly->offload_bytes / N / host_link_bps(w);
        out->offload_s = m * (offload_stall_s(N, Ls, x, worst.fwd / Ls) + offload_stall_s(N, Ls, x, worst.bwd / Ls));
        pipe += out->offload_s;
    }
    out->compute_s = m * worst.compute;
    out->recompute_s = m * worst.recompute;
    out->tp_comm_s = m * worst.tp;
    out->cp_comm_s = m * worst.cp;
    out->ep_comm_s = m * worst.ep;
    out->pp_comm_s = pp_comm;
    out->bubble_s = pos(pipe - m * worst_work - pp_comm - out->offload_s);

    /* --- data parallel: gradients over dp*cp ranks (experts over dp*cp/ep) */
    const int64_t dpg = l->dp * l->cp;
    const int64_t edpg = pp_layout_edp(l);
    const bool sharded = l->dist_opt || l->zero >= 1;
    const pp_fw_row *fr = pp_work_fw(w);
    const double gb = c->opts.grad_reduce_bytes;
    double dp_exposed = 0, zero_s = 0;
    /* The reduction of a bucket starts when its gradients are final, i.e. in the last
     * micro-batch's backward (Megatron --overlap-grad-reduce, DeepSpeed overlap_comm). With 1F1B
     * that window is the stage's last backward; the first stage finishes last, the last stage
     * (p-1) stage-backwards earlier, which its reduction can also hide behind. With the
     * interleaved schedule each model chunk finishes at its own time during the cooldown, which
     * lasts as many chunk-backwards as the warm-up had chunk-forwards,
     * (p-1) x 2 + (v-1) x p on the first stage (megatron/core/pipeline_parallel/schedules.py),
     * and only the last chunk's reduction is left at the end. */
    const stage_time *ends[2] = {&first, &last};
    double window[2] = {first.bwd, last.bwd + (double)(p - 1) * (last.bwd + per_mb_p2p)};
    double tail_div = 1.0;
    if (v > 1) {
        double cool = (2.0 * (double)(p - 1) + (v - 1) * (double)p) / v;
        window[0] = first.bwd * (1.0 + cool);
        window[1] = last.bwd * (1.0 + cool);
        tail_div = v;
    }
    double opt_params = 0, rank_params = 0;
    for (int e = 0; e < (p > 1 ? 2 : 1); e++) {
        const stage_time *st = ends[e];
        double P = st->params, PE = st->expert_params;
        int64_t dpn = pp_layout_group_per_node(dpg, l->tp, gpn);
        int64_t edpn = pp_layout_group_per_node(edpg, pp_layout_etp(l) * l->ep, gpn);
        double red, gather = 0;
        /* parameters gathered in FP8 under --fp8-param-gather (arguments.py: "perform the param
         * all-gather in fp8") */
        const double pgb = pp_work_fp8_params(w) ? pp_precision_info[w->stack.precision].elem_bytes : 2.0;
        if (l->zero >= 3) {
            /* ZeRO-3 / FSDP FULL_SHARD: per micro-batch, gather the parameters for the forward
             * and again for the backward, reduce-scatter the gradients; prefetching overlaps
             * them with the micro-batch's compute. */
            double agp = pp_time_collective_s(c, PP_TC_ALL_GATHER, dpg, dpn, P * pgb) +
                         pp_time_collective_s(c, PP_TC_ALL_GATHER, edpg, edpn, PE * pgb);
            double rsg = pp_time_collective_s(c, PP_TC_REDUCE_SCATTER, dpg, dpn, P * gb) +
                         pp_time_collective_s(c, PP_TC_REDUCE_SCATTER, edpg, edpn, PE * gb);
            double z = m * (pp_time_behind(agp, st->fwd) + pp_time_behind(agp + rsg, st->bwd));
            z += m * zero3_fetch_s(w, st->hf_modules, st->layers, st->rc_layers);
            if (z > zero_s) zero_s = z;
            red = 0;
        } else if (l->zero == 2) {
            /* ZeRO-2: gradients reduced during every micro-batch's backward (reduce-scattered, or
             * all-reduced where the row says so: DeepSpeed's average_tensor), on a stream of
             * their own with the overlap (DeepSpeed's overlap_comm), else between the backward's
             * kernels. */
            const pp_time_coll rk = fr->shard_all_reduce ? PP_TC_ALL_REDUCE : PP_TC_REDUCE_SCATTER;
            double rsg = pp_time_collective_s(c, rk, dpg, dpn, P * gb) +
                         pp_time_collective_s(c, rk, edpg, edpn, PE * gb);
            double z = m * (c->opts.overlap_grad_reduce ? pp_time_behind(rsg, st->bwd) : rsg);
            if (z > zero_s) zero_s = z;
            red = 0;
            gather = pp_time_collective_s(c, PP_TC_ALL_GATHER, dpg, dpn, P * pgb) +
                     pp_time_collective_s(c, PP_TC_ALL_GATHER, edpg, edpn, PE * pgb);
        } else if (sharded) {
            /* the framework's row: reduce-scatter (Megatron) or all-reduce (nanotron; DeepSpeed,
             * which all-reduces the whole gradient at the step's last backward) */
            const pp_time_coll rk = fr->shard_all_reduce ? PP_TC_ALL_REDUCE : PP_TC_REDUCE_SCATTER;
            red = pp_time_collective_s(c, rk, dpg, dpn, P * gb) + pp_time_collective_s(c, rk, edpg, edpn, PE * gb);
            gather = pp_time_collective_s(c, PP_TC_ALL_GATHER, dpg, dpn, P * pgb) +
                     pp_time_collective_s(c, PP_TC_ALL_GATHER, edpg, edpn, PE * pgb);
        } else {
            red = pp_time_collective_s(c, PP_TC_ALL_REDUCE, dpg, dpn, P * gb) +
                  pp_time_collective_s(c, PP_TC_ALL_REDUCE, edpg, edpn, PE * gb);
        }
        double buckets = max2(tail_div, (P + PE) / DP_BUCKET_PARAMS);
        double ex = 0;
        /* The last bucket cannot hide behind anything. */
        if (red > 0)
            ex = c->opts.overlap_grad_reduce ? red / buckets + pp_time_behind(red - red / buckets, window[e]) : red;
        /* ZeRO 1/2 that all-gathers the updated partitions after the optimizer step, before the
         * next forward (the row's zero_gather_exposed): nothing to hide behind */
        if (gather > 0)
            ex += c->opts.overlap_param_gather && !fr->zero_gather_exposed
                      ? gather / buckets + pp_time_behind(gather - gather / buckets, st->fwd)
                      : gather;
        if (ex > dp_exposed) dp_exposed = ex;
        double po = sharded ? P / (double)dpg + PE / (double)edpg : P + PE;
        if (po > opt_params) opt_params = po;
        if (P + PE > rank_params) rank_params = P + PE;
    }
    /* Tied embeddings with PP: the first and last stage all-reduce the embedding gradient
     * (Megatron finalize_model_grads), after the backward. */
    if (p > 1 && c->output_params == 0 && w->model.tied && !pp_work_lora(w))
        dp_exposed += pp_time_collective_s(c, PP_TC_ALL_REDUCE, 2, w->gpus > gpn ? 1 : 2,
                                           c->embed_params / pp_layer_embed_tp(w, l) * gb);
    /* Offloaded parameters (ZeRO-Infinity): fetched over PCIe for forward and backward. */
    if (l->offload == PP_OFF_PARAMS) zero_s += m * 2.0 * max2(first.params, last.params) * 2.0 / host_link_bps(w);
    if (pp_work_fw(w)->block_sharding) {
        /* FSDP2: every gather, reduction and copy happens per micro-batch (fsdp_stage_comm). */
        zero_s = dp_exposed = opt_params = 0;
        for (int e = 0; e < (p > 1 ? 2 : 1); e++) {
            double po = 0;
            int64_t n = pp_layout_stage_layers(w, l, e ? p - 1 : 0);
            double z = fsdp_stage_comm(c, l, ends[e], (double)n, e == 0, e == 1 || p == 1, m, &po);
            if (z > zero_s) zero_s = z;
            if (po > opt_params) opt_params = po;
        }
    }
    out->dp_comm_s = dp_exposed;
    out->zero_gather_s = zero_s;

    /* --- optimizer: Adam over the rank's (shard of the) parameters, memory-bound */
    out->optimizer_params = opt_params;
    out->optimizer_measured_s = 0;
    if (l->offload == PP_OFF_NONE) {
        double meas = c->measured_optimizer ? pp_profile_optimizer_s(w->profile, opt_params) : -1;
        if (meas > 0) out->optimizer_measured_s = meas;
        double opt_bytes = opt_step_bytes(w);
        if (pp_work_fw(w)->torch_adam)
            opt_bytes = w->stack.optimizer_impl == PP_ADAM_FOREACH ? OPT_FSDP_FOREACH_BYTES : OPT_FSDP_FUSED_BYTES;
        out->optimizer_s = meas > 0 ? meas : opt_bytes * opt_params / c->mem_rate;
        if (w->profile && w->profile->calibration.present)
            out->optimizer_s *= w->profile->calibration.optimizer_scale;
        if (l->zero >= 1 && !l->dist_opt) out->optimizer_s += zero_copies_s(c, l, m, rank_params, opt_params);
    } else {
        /* CPU Adam: gradients down, 16-bit parameters up over PCIe, update on the host. */
        out->optimizer_s = opt_params * (gb + 2.0) / host_link_bps(w) + opt_params / CPU_ADAM_PARAMS_PER_S;
    }

    out->step_time_s = pipe + out->dp_comm_s + out->zero_gather_s + out->optimizer_s;
    if (pp_work_fw(w)->block_sharding) {
        /* FSDP2's host beside the GPU: the soft maximum of the two (FSDP_HOST_K) */
        const double host = fsdp_host_s(w, l, m), gpu = out->step_time_s;
        const double both = pow(pow(gpu, FSDP_HOST_K) + pow(host, FSDP_HOST_K), 1.0 / FSDP_HOST_K);
        out->host_s = both - gpu;
        out->step_time_s = both;
    }
    double gbs = (double)w->gbs;
    out->samples_per_s = gbs / out->step_time_s;
    out->tokens_per_s = out->samples_per_s * (double)w->model.seq;
    out->model_flops = c->model_flops;
    out->model_tflops_per_gpu = c->model_flops / out->step_time_s / (double)w->gpus / 1e12;
    out->mfu = c->peak_flops > 0 ? c->model_flops / (out->step_time_s * (double)w->gpus * c->peak_flops) : 0;
}

/* ------------------------------------------------------------------ public API */

void pp_time_parts_get(const pp_work *w, const pp_layout *l, pp_time_parts *out)
{
    pp_time_ctx c;
    pp_time_ctx_init(&c, w, NULL);
    pp_time_layer ly;
    pp_time_layer_get(&c, l, &ly);
    double fwd = ly.fwd_compute_s + ly.fwd_tp_s + ly.fwd_cp_s + ly.fwd_ep_s;
    out->layer_fwd_s = fwd;
    out->layer_bwd_s = ly.bwd_compute_s + ly.bwd_tp_s + ly.bwd_cp_s + ly.bwd_ep_s +
                       (l->recompute == PP_RC_SELECTIVE ? ly.sel_recompute_s : 0);
    out->layer_recompute_s = fwd - ly.recompute_less_s;
    out->embed_fwd_s = ly.embed_fwd_s;
    out->embed_bwd_s = ly.embed_bwd_s;
    out->output_fwd_s = ly.output_fwd_s;
    out->output_bwd_s = ly.output_bwd_s;
    const int64_t gpn = pp_work_nvlink_gpus(w);
    out->p2p_s = l->pp > 1 ? pp_time_collective_s(&c, PP_TC_SENDRECV, 2, w->gpus > gpn ? 1 : 2, ly.p2p_bytes) +
                                 ly.p2p_gather_s
                           : 0;
}

pp_status pp_time_estimate_opts(const pp_work *w, const pp_layout *l, const pp_time_opts *o,
                                pp_time_result *out, pp_error *err)
{
    memset(out, 0, sizeof *out);
    if (!w || !l) return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "time estimate: no work or layout");
    if ((w->gpu.peak_flops[PP_DT_BF16] <= 0 && w->gpu.peak_flops[PP_DT_FP16] <= 0) || w->gpu.gemm_eff <= 0 || w->gpu.mem_bw_gbs <= 0)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "GPU '%s' lacks bf16/fp16 FLOP/s, gemm_eff or memory bandwidth",
                            w->gpu.name);
    if (w->gpus > w->gpus_per_node && w->gpu.internode_gbs <= 0)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "GPU '%s' has no internode_gbs but the job spans %lld nodes", w->gpu.name,
                            (long long)((w->gpus + w->gpus_per_node - 1) / w->gpus_per_node));
    if (l->tp < 1 || l->pp < 1 || l->dp < 1 || l->cp < 1 || l->ep < 1 || l->mbs < 1 || l->vpp < 1 ||
        w->gbs % (l->dp * l->mbs))
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "time estimate: the layout is not validated");
    pp_time_ctx c;
    pp_time_ctx_init(&c, w, o);
    pp_time_layer ly;
    pp_time_layer_get(&c, l, &ly);
    pp_time_step(&c, l, &ly, out);
    if (!isfinite(out->step_time_s) || out->step_time_s <= 0)
        return pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0, "time estimate is not finite");
    return PP_OK;
}

pp_status pp_time_estimate(const pp_work *w, const pp_layout *l, pp_time_result *out, pp_error *err)
{
    pp_time_opts o;
    pp_time_opts_default(w, &o);
    return pp_time_estimate_opts(w, l, &o, out, err);
}

