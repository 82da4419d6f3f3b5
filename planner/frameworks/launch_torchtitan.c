/* launch --format torchtitan: a torchtitan config function (a Python module) and the script that
 * runs it; --format torchtitan-toml: the legacy TOML job config of the 0.2.x releases.
 *
 * torchtitan (format torchtitan): main at commit b5bcd76c66d0acb1a08b176d9639425bc55e0b2a
 * (2026-08-21), whose configs are Python functions returning a Trainer.Config (pytorch/torchtitan
 * PR #2386, "Config System Refactor: TOML to Python Dataclass Registry"; torchtitan/config/README.md:
 * the --section.option flags are frozen, a run is `--module M --config F`). The module uses a
 * registered flavor's model_registry(flavor) (torchtitan/models/llama3/__init__.py,
 * qwen3/__init__.py), or registers the model's shape as a llama3 flavor the way that file builds
 * its own. tests/data/torchtitan/config_names.txt is that commit's table of modules, config fields
 * and parameters (tests/frameworks/pyconfig_names.py extract); launch-torchtitan-config-names
 * checks every import, keyword and parameter of the written module against it. How each field maps:
 *   --dp, --replicate, --zero  ParallelismConfig data_parallel_shard_degree / _replicate_degree,
 *                          fsdp_reshard_after_forward, as below
 *   --tp, --pp, --cp, --ep tensor_ / pipeline_ / context_ / expert_parallel_degree
 *   --pp stages            module_fqns_per_model_part (tok_embeddings, layers.<i>, norm, lm_head)
 *   --mbs, --gbs, --seq    TrainingConfig num_tokens_per_microbatch_per_dp_rank = mbs x seq,
 *                          num_tokens_per_train_step = gbs x seq, max_context_length = seq;
 *                          with PP ParallelismConfig num_pp_microbatches = gbs / (dp x mbs)
 *                          (torchtitan/trainer.py: the gradient-accumulation steps are the rest)
 *   --recompute            activation_checkpoint SelectiveAC.Config() (op-level SAC) | FullAC.Config()
 *                          | None (torchtitan/distributed/activation_checkpoint.py)
 *   --loss upcast | cut    CrossEntropyLoss (cross_entropy on the fp32 logits) | ChunkedLossWrapper
 *                          around it (the lm_head and loss per chunk of tokens: no whole logits)
 *   --offload              TrainingConfig.enable_cpu_offload
 *   --optimizer-impl       OptimizersContainer.Config.implementation
 *   --compile, --compile-loss, --tp-comm-overlap  CompileConfig enable, components, enable_async_tensor_parallel
 *   --precision fp8 --fp8-scaling rowwise  model_registry(..., converters=[Float8LinearConverter.Config(
 *                          recipe_name="rowwise")]) (its default recipe, bf16 all-gathers)
 * Not written (refused with the reason): --precision fp8 with tensorwise scaling (this commit's
 * Float8LinearConverter has no float8 all-gather, which the FSDP2 model prices for tensorwise),
 * --recompute-layers below the stage's layers (FullAC wraps every block), expert TP.
 *
 * torchtitan-toml: the keys are those of torchtitan 0.2.x's JobConfig (torchtitan/config/job_config.py, the last
 * release series that reads a TOML file through `--job.config_file`; 0.3 replaced it with
 * Python config registries): tests/data/torchtitan/job_config_keys.txt lists them, extracted from
 * the released package by tests/frameworks/torchtitan_keys.py, and tests/frameworks checks every key this
 * writer emits against that list and, where torchtitan imports, parses the file with its own
 * ConfigManager. How each layout field maps (torchtitan/models/llama3/infra/parallelize.py,
 * torchtitan/distributed/parallel_dims.py, activation_checkpoint.py):
 *   --dp, --replicate      data_parallel_shard_degree = dp / replicate, data_parallel_replicate_degree
 *                          (--zero 0/1: no sharding, DDP over dp)
 *   --zero 3 / 2           fsdp_reshard_after_forward "default" ("always" with PP) / "never"
 *   --tp, --pp, --cp, --ep tensor_ / pipeline_ / context_ / expert_parallel_degree; torchtitan's TP
 *                          is always sequence parallel
 *   --pp stages            module_fqns_per_model_part (the split of the prediction, remainder first
 *                          or the ILP's), 1F1B or Interleaved1F1B for --vpp
 *   --mbs, --gbs           local_batch_size (mbs; with PP the rank's whole batch, split into
 *                          pipeline_parallel_microbatch_size = mbs), global_batch_size
 *   --recompute            activation_checkpoint.mode none | full | selective with
 *                          selective_ac_option "op" (torchtitan's op-level SAC, what the memory
 *                          model prices); --recompute-layers K as every (layers / K)-th block
 *   --offload              training.enable_cpu_offload (FSDP2's CPUOffloadPolicy)
 *   --precision fp8        model.converters = ["quantize.linear.float8"] with tensorwise scaling
 *                          and the float8 all-gather (output layer left in bf16)
 *   --optimizer-impl       optimizer.implementation
 *   --tp-comm-overlap      parallelism.enable_async_tensor_parallel (with --compile, as torchtitan needs)
 *   --compile, --compile-loss  compile.enable with compile.components ["model"], ["loss"] or both
 *                          (torchtitan's default is both: the loss is compiled unless the plan says not) */
#include "pp_launch.h"
#include "launch_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD(...) pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, __VA_ARGS__)

/* ------------------------------------------------------------------ text */

/* A text written through a memory stream (POSIX open_memstream). */
typedef struct {
    FILE *f;
    char *s;
    size_t len;
} tt_buf;

static void tt_printf(tt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tt_printf(tt_buf *b, const char *fmt, ...)
{
    if (!b->f) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(b->f, fmt, ap);
    va_end(ap);
}

/* Close the stream: true when the whole text is in b->s. */
static bool tt_close(tt_buf *b)
{
    if (!b->f) return false;
    bool ok = !ferror(b->f);
    ok = fclose(b->f) == 0 && ok;
    b->f = NULL;
    return ok && b->s;
}

/* Characters safe inside a TOML basic string and a shell comment. */
static void tt_clean(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; s && *s && k + 1 < n; s++) {
        unsigned char c = (unsigned char)*s;
        out[k++] = (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '`' && c != '$') ? (char)c : '_';
    }
    out[k] = 0;
}

/* ------------------------------------------------------------------ the model */

/* torchtitan's registered flavors (torchtitan/models/llama3/__init__.py llama3_args,
 * qwen3/__init__.py qwen3_args) by shape. */
typedef struct {
    const char *name, *flavor, *assets;
    int64_t layers, hidden, heads, kv_heads, ffn, vocab;
} tt_flavor;
static const tt_flavor tt_flavors[] = {
    {"llama3", "8B", "./assets/hf/Llama-3.1-8B", 32, 4096, 32, 8, 14336, 128256},
    {"llama3", "70B", "./assets/hf/Llama-3.1-70B", 80, 8192, 64, 8, 28672, 128256},
    {"llama3", "405B", "./assets/hf/Llama-3.1-405B", 126, 16384, 128, 8, 53248, 128256},
    {"qwen3", "0.6B", "./assets/hf/Qwen3-0.6B", 28, 1024, 16, 8, 3072, 151936},
    {"qwen3", "1.7B", "./assets/hf/Qwen3-1.7B", 28, 2048, 16, 8, 6144, 151936},
    {"qwen3", "4B", "./assets/hf/Qwen3-4B", 36, 2560, 32, 8, 9728, 151936},
    {"qwen3", "8B", "./assets/hf/Qwen3-8B", 36, 4096, 32, 8, 12288, 151936},
    {"qwen3", "14B", "./assets/hf/Qwen3-14B", 40, 5120, 40, 8, 17408, 151936},
    {"qwen3", "32B", "./assets/hf/Qwen3-32B", 64, 5120, 64, 8, 25600, 151936},
};

static const tt_flavor *tt_flavor_find(const pp_model *m)
{
    for (size_t i = 0; i < sizeof tt_flavors / sizeof tt_flavors[0]; i++) {
        const tt_flavor *f = &tt_flavors[i];
        if (f->layers == m->layers && f->hidden == m->hidden && f->heads == m->heads &&
            f->kv_heads == m->kv_heads && f->ffn == m->ffn && f->vocab == m->vocab && m->experts <= 1)
            return f;
    }
    return NULL;
}

/* torchtitan's Llama FFN size: int(2 * 4 * dim / 3), times ffn_dim_multiplier, rounded up to a
 * multiple_of. A multiplier and multiple_of that give this model's ffn. */
static void tt_ffn_args(const pp_model *m, double *mult, int64_t *multiple_of)
{
    int64_t base = 8 * m->hidden / 3, mo = 1;
    while (mo < 1024 && m->ffn % (mo * 2) == 0) mo *= 2;
    *multiple_of = mo;
    *mult = (base + mo - 1) / mo * mo == m->ffn ? 0.0 : (double)m->ffn / (double)base;
}

/* hf_assets_path (tokenizer and weights) into out, and why that folder: the folder of the
 * config.json the model was read from, else the registered flavor's download folder. */
static const char *tt_assets(const pp_launch_params *p, const tt_flavor *f, char *out, size_t n)
{
    if (!p->hf_config_path) {
        snprintf(out, n, "%s", f ? f->assets : "./assets/hf/tokenizer");
        return "tokenizer (and weights): scripts/download_hf_assets.py";
    }
    tt_clean(p->hf_config_path, out, n);
    char *slash = strrchr(out, '/');
    if (slash) *slash = 0;
    else snprintf(out, n, ".");
    return "the folder of the config.json the model was read from";
}

/* ------------------------------------------------------------------ checks */

/* compile.components for the plan's stack: torchtitan compiles the blocks ("model") and the loss
 * function ("loss") by default when compile is enabled (CompileConfig, configs.py), so each is
 * written as the plan has it. */
static const char *tt_compile_components(const pp_stack *s)
{
    if (s->compile && s->compile_loss) return "[\"model\", \"loss\"]";
    if (s->compile_loss) return "[\"loss\"]";
    return "[\"model\"]";
}

static pp_status tt_check(const pp_launch_params *p, bool py, pp_error *err)
{
    const pp_work *w = p->work;
    const pp_layout *l = p->layout;
    const pp_model *m = &w->model;
    if (p->target != PP_TARGET_STANDARD)
        return BAD("--launch-target %s applies to the Megatron formats, not torchtitan",
                   pp_launch_target_names[p->target]);
    if (w->framework != PP_FW_FSDP)
        return BAD("--format torchtitan trains with PyTorch FSDP2: give --framework fsdp (the predictions in "
                   "the config are that framework's)");
    if (w->stack.precision == PP_PREC_FP16)
        return BAD("torchtitan trains in bf16 (training.mixed_precision_param bfloat16|float32), not fp16");
    /* torchtitan's train step reduce-scatters every micro-batch (train.py forward_backward_step):
     * it has no setting that turns the gradient sync off */
    if (w->stack.no_sync_accum)
        return BAD("--no-sync-accumulation: torchtitan reduces the gradients every micro-batch and has no setting for "
                   "it; its config cannot say this stack");
    /* torchtitan builds its model in fp32 and keeps fp32 sharded parameters (MixedPrecisionPolicy
     * casts the gathered copies); its loss is cross_entropy on pred.float() */
    if (w->stack.param_bf16)
        return BAD("--param-dtype bf16 is NeMo AutoModel's bf16 storage; torchtitan keeps fp32 sharded parameters "
                   "(the launch would not be the stack predicted)");
    /* torchtitan's TP plan splits the embedding and keeps the loss vocab-parallel; the switch that
     * gathered the logits instead (parallelism.disable_loss_parallel) is gone since b3b60dab
     * (2026-06, "delete --disable_loss_parallel flag") */
    if (l->tp > 1 && w->stack.tp_vocab != PP_TPV_SHARDED)
        return BAD("--tp-vocab %s: torchtitan splits the embedding over TP and keeps the loss vocab-parallel "
                   "(disable_loss_parallel was removed in 2026-06); its config cannot say this stack",
                   pp_tp_vocab_names[w->stack.tp_vocab]);
    if (!py && w->stack.loss >= PP_LOSS_TORCH && w->stack.loss != PP_LOSS_TORCH)
        return BAD("--loss %s is not torchtitan 0.2.x's loss (cross_entropy on logits.float(): --loss upcast)",
                   pp_loss_names[w->stack.loss]);
    /* torchtitan's train step deletes the logits before the backward (train.py forward_backward_step:
     * "need to free pred before bwd to avoid peaking memory") */
    if (w->stack.keep_logits)
        return BAD("--keep-logits: torchtitan frees the logits before the backward and has no setting to keep "
                   "them; its config cannot say this stack");
    if (w->stack.eager_norm == PP_ENORM_COMPOSITE_FP32)
        return BAD("--eager-norm composite-fp32 is KempnerForge's RMSNorm; torchtitan's is F.rms_norm (composite on "
                   "PyTorch 2.4-2.7, --eager-norm composite)");
    /* torchtitan's MoE returns its load-balancing statistics from the forward (moe.py
     * tokens_per_expert buffers, no loss tensor on the module) */
    if (w->stack.router_holds_recompute)
        return BAD("--router-holds-recompute: torchtitan's router keeps no loss tensor on its module; its config "
                   "cannot say this stack");
    if (w->stack.expert_pad_loop)
        return BAD("--expert-pad-loop: torchtitan's experts take their tokens in one grouped GEMM (or its own "
                   "padding kernel); its config cannot say this stack");
    if (!pp_activations[m->act].torchtitan || m->norm != PP_NORM_RMSNORM || m->pos != PP_POS_ROPE || m->bias)
        return BAD("torchtitan's models are SwiGLU, RMSNorm, RoPE, no bias: model %s is %s, %s, %s%s", m->name,
                   pp_act_names[m->act], pp_norm_names[m->norm], pp_pos_names[m->pos], m->bias ? ", biased" : "");
    if (l->vpp > 1 && l->pp < 2) return BAD("--vpp %lld needs --pp of at least 2", (long long)l->vpp);
    if (l->pp > 1 && l->stage_recompute && l->recompute == PP_RC_FULL) {
        int64_t r0 = l->stage_recompute[0];
        for (int64_t i = 1; i < l->pp; i++)
            if ((l->stage_recompute[i] > 0) != (r0 > 0) ||
                (r0 > 0 && l->stage_recompute[i] != pp_layout_stage_layers(w, l, i) &&
                 l->stage_recompute[i] != r0))
                return BAD("torchtitan applies one activation-checkpoint setting to every stage: the ILP's "
                           "per-stage recompute cannot be written (use --stages uniform)");
    }
    return PP_OK;
}

/* Blocks checkpointed per stage out of `layers` under --recompute full: every n-th one
 * (selective_ac_option n) when --recompute-layers K has layers / K integral. */
static pp_status tt_every_nth(const pp_work *w, const pp_layout *l, int64_t *nth, pp_error *err)
{
    *nth = 0;
    int64_t k = l->recompute_layers;
    if (l->stage_recompute) k = l->stage_recompute[0];
    int64_t n = pp_layout_stage_layers(w, l, 0);
    if (l->recompute != PP_RC_FULL || k <= 0 || k >= n) return PP_OK;
    if (n % k)
        return BAD("--recompute-layers %lld: torchtitan checkpoints every n-th block (selective_ac_option n); "
                   "%lld layers per stage is not a multiple of it", (long long)k, (long long)n);
    *nth = n / k;
    return PP_OK;
}

/* ------------------------------------------------------------------ the TOML */

/* What each format targets, in its header and the script's. */
static const char *tt_target(bool py)
{
    return pp_launch_format_target(py ? PP_LAUNCH_TORCHTITAN : PP_LAUNCH_TORCHTITAN_TOML);
}

static void tt_header(tt_buf *b, const pp_launch_params *p, bool py)
{
    const pp_work *w = p->work;
    const pp_model *m = &w->model;
    const pp_layout *l = p->layout;
    char name[96], gpu[96];
    tt_clean(m->name, name, sizeof name);
    tt_clean(w->gpu.name, gpu, sizeof gpu);
    tt_printf(b, "# Generated by parplan %s: launch --format %s for %s\n", PP_VERSION,
              pp_launch_format_names[py ? PP_LAUNCH_TORCHTITAN : PP_LAUNCH_TORCHTITAN_TOML], tt_target(py));
    tt_printf(b, "# model %s: %lld layers, hidden %lld, %lld heads (%lld KV), FFN %lld, vocab %lld, sequence %lld\n",
              name, (long long)m->layers, (long long)m->hidden, (long long)m->heads, (long long)m->kv_heads,
              (long long)m->ffn, (long long)m->vocab, (long long)m->seq);
    int64_t gpn = w->gpus_per_node > 0 && w->gpus_per_node < w->gpus ? w->gpus_per_node : w->gpus;
    tt_printf(b, "# cluster: %lld x %s (%lld node%s of %lld), global batch %lld sequences\n", (long long)w->gpus, gpu,
              (long long)((w->gpus + gpn - 1) / gpn), w->gpus > gpn ? "s" : "", (long long)gpn, (long long)w->gbs);
    tt_printf(b, "# layout: tp %lld, pp %lld, dp %lld (replicate %lld), vpp %lld, cp %lld, ep %lld, micro-batch %lld, "
                 "ZeRO-%d, recompute %s, offload %s, AdamW %s\n",
              (long long)l->tp, (long long)l->pp, (long long)l->dp, (long long)(l->replicate > 1 ? l->replicate : 1),
              (long long)l->vpp, (long long)l->cp, (long long)l->ep, (long long)l->mbs, l->zero,
              pp_recompute_names[l->recompute], pp_offload_names[l->offload],
              pp_adam_impl_names[w->stack.optimizer_impl]);
    char line[512];
    pp_launch_prediction(p, line, sizeof line);
    tt_printf(b, "# %s\n", line);
    /* torchtitan picks SDPA's kernel itself (models/common/attention.py: cuDNN first since 6a3a9da95,
     * 2025-10-09, in every 0.2.x release); no config key pins it, so say what the time was priced with */
    if (w->stack.sdpa_backend == PP_SDPA_FLASH)
        tt_printf(b, "# attention priced as FlashAttention-2 (--sdpa-backend flash); torchtitan 0.2.x runs SDPA's cuDNN\n"
                     "# kernel first, about 2x faster on Hopper: --sdpa-backend cudnn (or --recipe torchtitan) prices that\n");
    else
        tt_printf(b, "# attention priced as SDPA's cuDNN kernel, which torchtitan 0.2.x runs first\n");
    /* torchtitan's norm is F.rms_norm: fused from PyTorch 2.8, the composite before; no key sets it */
    if (w->stack.eager_norm == PP_ENORM_COMPOSITE)
        tt_printf(b, "# RMSNorm priced as PyTorch 2.4-2.7 runs F.rms_norm eagerly (--eager-norm composite); on PyTorch\n"
                     "# 2.8 or later it is one fused kernel each way and the step shorter\n");
}

/* The module names of each model part (the pipeline split), as torchtitan names its decoders'
 * modules: tok_embeddings, layers.<i>, norm, then output (0.2.x, TOML) or lm_head (main,
 * models/common/decoder.py; py: the Python keyword argument inside ParallelismConfig(...)). */
static void tt_parts(tt_buf *b, const pp_work *w, const pp_layout *l, bool py)
{
    int64_t segs = l->pp * l->vpp, at = 0;
    const char *ind = py ? "            " : "";
    tt_printf(b, "%smodule_fqns_per_model_part%s[\n", ind, py ? "=" : " = ");
    for (int64_t s = 0; s < segs; s++) {
        int64_t chunk = pp_layout_vstage_layers(w, l, s % l->pp, s / l->pp);
        tt_printf(b, "%s    [", ind);
        bool first = true;
        if (s == 0) {
            tt_printf(b, "\"tok_embeddings\"");
            first = false;
        }
        for (int64_t i = 0; i < chunk; i++, at++) {
            tt_printf(b, "%s\"layers.%lld\"", first ? "" : ", ", (long long)at);
            first = false;
        }
        if (s == segs - 1) tt_printf(b, "%s\"norm\", \"%s\"", first ? "" : ", ", py ? "lm_head" : "output");
        tt_printf(b, "],\n");
    }
    tt_printf(b, "%s]%s\n", ind, py ? "," : "");
}

static pp_status tt_toml(tt_buf *b, const pp_launch_params *p, pp_error *err)
{
    const pp_work *w = p->work;
    const pp_model *m = &w->model;
    const pp_layout *l = p->layout;
    int64_t nth = 0;
    pp_status st = tt_every_nth(w, l, &nth, err);
    if (st != PP_OK) return st;
    char name[96];
    tt_clean(m->name, name, sizeof name);
    if (p->hf_config_path) {
        /* a model read from DIR/config.json: the flavor is named after DIR */
        char dir[600];
        tt_clean(p->hf_config_path, dir, sizeof dir);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = 0;
            slash = strrchr(dir, '/');
            snprintf(name, sizeof name, "%.95s", slash ? slash + 1 : dir);
        }
    }
    bool shard = l->zero >= 2;
    int64_t R = shard ? (l->replicate > 1 ? l->replicate : 1) : l->dp;
    int64_t S = shard ? l->dp / (l->replicate > 1 ? l->replicate : 1) : 1;
    bool fp8 = w->stack.precision == PP_PREC_FP8;

    tt_header(b, p, false);
    tt_printf(b, "\n[job]\n");
    tt_printf(b, "dump_folder = \"./outputs\"\n");
    tt_printf(b, "description = \"parplan: %s, tp %lld pp %lld dp %lld cp %lld, micro-batch %lld\"\n", name,
              (long long)l->tp, (long long)l->pp, (long long)l->dp, (long long)l->cp, (long long)l->mbs);

    tt_printf(b, "\n[model]\n");
    const tt_flavor *f = tt_flavor_find(m);
    if (f) {
        tt_printf(b, "name = \"%s\"\nflavor = \"%s\"\n", f->name, f->flavor);
    } else {
        /* Not a registered flavor: torchtitan needs one of that name in its model's args table. */
        double mult;
        int64_t mo;
        tt_ffn_args(m, &mult, &mo);
        tt_printf(b, "# %s is not one of torchtitan's registered flavors: add it to\n"
                     "# torchtitan/models/llama3/__init__.py llama3_args, e.g.\n"
                     "#   \"%s\": TransformerModelArgs(dim=%lld, n_layers=%lld, n_heads=%lld, n_kv_heads=%lld,\n",
                  name, name, (long long)m->hidden, (long long)m->layers, (long long)m->heads, (long long)m->kv_heads);
        if (mult > 0)
            tt_printf(b, "#       ffn_dim_multiplier=%.9g, multiple_of=%lld, vocab_size=%lld, rope_theta=500000),\n", mult,
                      (long long)mo, (long long)m->vocab);
        else
            tt_printf(b, "#       multiple_of=%lld, vocab_size=%lld, rope_theta=500000),\n", (long long)mo,
                      (long long)m->vocab);
        tt_printf(b, "name = \"llama3\"\nflavor = \"%s\"\n", name);
    }
    char assets[600];
    const char *why = tt_assets(p, f, assets, sizeof assets);
    tt_printf(b, "hf_assets_path = \"%s\"  # %s\n", assets, why);
    if (fp8) tt_printf(b, "converters = [\"quantize.linear.float8\"]\n");

    tt_printf(b, "\n[optimizer]\n");
    tt_printf(b, "name = \"AdamW\"\nlr = 3e-4\neps = 1e-8\nweight_decay = 0.1\n");
    tt_printf(b, "implementation = \"%s\"\n", pp_adam_impl_names[w->stack.optimizer_impl]);

    int64_t steps = p->train_iters > 0 ? p->train_iters : 1000;
    tt_printf(b, "\n[lr_scheduler]\nwarmup_steps = %lld\n", (long long)(steps / 10 > 0 ? steps / 10 : 1));

    tt_printf(b, "\n[training]\n");
    int64_t micro = pp_layout_microbatches(w, l);
    if (l->pp > 1)
        tt_printf(b, "local_batch_size = %lld  # the rank's batch, split into %lld pipeline micro-batches of %lld\n",
                  (long long)(w->gbs / l->dp), (long long)micro, (long long)l->mbs);
    else
        tt_printf(b, "local_batch_size = %lld\n", (long long)l->mbs);
    tt_printf(b, "global_batch_size = %lld", (long long)w->gbs);
    if (l->pp == 1 && micro > 1) tt_printf(b, "  # %lld gradient-accumulation steps", (long long)micro);
    tt_printf(b, "\nseq_len = %lld\n", (long long)m->seq);
    tt_printf(b, "steps = %lld%s\n", (long long)steps, p->train_iters > 0 ? "" : "  # set the run's length");
    tt_printf(b, "max_norm = 1.0\n");
    tt_printf(b, "mixed_precision_param = \"bfloat16\"\nmixed_precision_reduce = \"float32\"\n");
    tt_printf(b, "dataset = \"c4\"\n");
    if (l->offload != PP_OFF_NONE) tt_printf(b, "enable_cpu_offload = true\n");

    tt_printf(b, "\n[parallelism]\n");
    tt_printf(b, "data_parallel_replicate_degree = %lld\n", (long long)R);
    tt_printf(b, "data_parallel_shard_degree = %lld\n", (long long)S);
    const char *policy = l->zero >= 3 ? (l->pp > 1 ? "always" : "default") : "never";
    tt_printf(b, "fsdp_reshard_after_forward = \"%s\"  # --zero %d\n", policy, l->zero);
    tt_printf(b, "tensor_parallel_degree = %lld\n", (long long)l->tp);
    if (l->tp > 1 && !l->sp) tt_printf(b, "# torchtitan's tensor parallelism is always sequence parallel\n");
    if (l->tp > 1 && w->stack.tp_comm_overlap) tt_printf(b, "enable_async_tensor_parallel = true  # --tp-comm-overlap\n");
    tt_printf(b, "pipeline_parallel_degree = %lld\n", (long long)l->pp);
    if (l->pp > 1) {
        tt_printf(b, "pipeline_parallel_schedule = \"%s\"\n", l->vpp > 1 ? "Interleaved1F1B" : "1F1B");
        tt_printf(b, "pipeline_parallel_microbatch_size = %lld\n", (long long)l->mbs);
        tt_parts(b, w, l, false);
    }
    tt_printf(b, "context_parallel_degree = %lld\n", (long long)l->cp);
    if (m->experts > 1) {
        tt_printf(b, "expert_parallel_degree = %lld\n", (long long)l->ep);
        if (l->etp > 0) tt_printf(b, "expert_tensor_parallel_degree = %lld\n", (long long)l->etp);
    }

    tt_printf(b, "\n[activation_checkpoint]\n");
    if (l->recompute == PP_RC_SELECTIVE) {
        tt_printf(b, "mode = \"selective\"\nselective_ac_option = \"op\"  # op-level SAC, as planned\n");
    } else if (l->recompute == PP_RC_FULL && nth > 1) {
        tt_printf(b, "mode = \"selective\"\nselective_ac_option = \"%lld\"  # one block in %lld fully checkpointed\n",
                  (long long)nth, (long long)nth);
    } else if (l->recompute == PP_RC_FULL) {
        tt_printf(b, "mode = \"full\"\n");
    } else {
        tt_printf(b, "mode = \"none\"\n");
    }

    if (fp8 && w->stack.fp8_scaling == PP_FP8_ROWWISE) {
        /* torchao rowwise float8 (--fp8-scaling rowwise): bf16 all-gathers, torchtitan refuses the
         * float8 all-gather with a recipe_name (components/quantization/float8.py) */
        tt_printf(b, "\n[quantize.linear.float8]\n");
        tt_printf(b, "recipe_name = \"rowwise\"\n");
        tt_printf(b, "filter_fqns = [\"output\"]\n");
    } else if (fp8) {
        /* torchao tensorwise float8 with the fp8 all-gather (the memory model prices the fp8
         * unsharded copies); the output layer stays bf16. */
        tt_printf(b, "\n[quantize.linear.float8]\n");
        tt_printf(b, "enable_fsdp_float8_all_gather = %s\n", S > 1 ? "true" : "false");
        tt_printf(b, "precompute_float8_dynamic_scale_for_fsdp = %s\n", S > 1 ? "true" : "false");
        tt_printf(b, "filter_fqns = [\"output\"]\n");
    }
    const bool compiled = w->stack.compile || w->stack.compile_loss;
    tt_printf(b, "\n[compile]\nenable = %s\n", compiled ? "true" : "false");
    if (compiled) tt_printf(b, "components = %s\n", tt_compile_components(&w->stack));
    tt_printf(b, "\n[checkpoint]\nenable = false\n");
    tt_printf(b, "\n[metrics]\nlog_freq = 10\n");
    return PP_OK;
}

/* ------------------------------------------------------------------ the Python config */

/* What format torchtitan writes and the legacy TOML does not: refused with the reason. */
static pp_status tt_py_check(const pp_launch_params *p, pp_error *err)
{
    const pp_work *w = p->work;
    const pp_layout *l = p->layout;
    const pp_model *m = &w->model;
    if (w->stack.precision == PP_PREC_FP8 && w->stack.fp8_scaling != PP_FP8_ROWWISE)
        return BAD("--precision fp8: torchtitan's Float8LinearConverter (b5bcd76c, components/quantization/float8.py) "
                   "has no float8 all-gather, which parplan's tensorwise float8 prices; state --fp8-scaling rowwise "
                   "(its default recipe), or use --format torchtitan-toml (torchtitan 0.2.x) for tensorwise");
    if (w->stack.loss >= PP_LOSS_TORCH && w->stack.loss != PP_LOSS_TORCH && w->stack.loss != PP_LOSS_CUT)
        return BAD("--loss %s is not a torchtitan loss (upcast: CrossEntropyLoss; cut: ChunkedLossWrapper)",
                   pp_loss_names[w->stack.loss]);
    int64_t k = l->stage_recompute ? l->stage_recompute[0] : l->recompute_layers;
    if (l->recompute == PP_RC_FULL && k > 0 && k < pp_layout_stage_layers(w, l, 0))
        return BAD("--recompute-layers %lld: torchtitan's FullAC checkpoints every block "
                   "(distributed/activation_checkpoint.py); use --format torchtitan-toml for every n-th block",
                   (long long)k);
    if (m->experts > 1 && pp_layout_etp(l) > 1)
        return BAD("expert tensor parallelism %lld: torchtitan's ParallelismConfig has no expert TP degree",
                   (long long)pp_layout_etp(l));
    if (!tt_flavor_find(m)) {
        if (m->experts > 1)
            return BAD("model %s is not a registered torchtitan flavor, and parplan writes new flavors as dense "
                       "llama3 shapes: register it in torchtitan/models/<model>/__init__.py", m->name);
        if (m->qk_norm != PP_QKNORM_NONE || (m->head_dim > 0 && m->head_dim * m->heads != m->hidden))
            return BAD("model %s is not a registered torchtitan flavor and is not a llama3 shape (QK norm or a head "
                       "size other than hidden / heads): register it in torchtitan/models/qwen3/__init__.py", m->name);
        if (m->rope_scaling != PP_ROPE_SCALING_NONE && m->rope_scaling != PP_ROPE_SCALING_LLAMA3)
            return BAD("model %s: RoPE scaling %s is not written for a new torchtitan flavor (none or llama3)", m->name,
                       pp_rope_scaling_names[m->rope_scaling]);
    }
    return PP_OK;
}

/* A flavor name from the model's: letters, digits, '-', '.', '_' (a Python string and a key). */
static void tt_flavor_name(const pp_launch_params *p, char *out, size_t n)
{
    char name[96];
    tt_clean(p->work->model.name, name, sizeof name);
    snprintf(out, n, "parplan-%s", name);
    for (char *c = out; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
              *c == '-' || *c == '_'))
            *c = '_';
}

/* A registered model spec for a shape not in torchtitan's registry: a flavor function written as
 * torchtitan/models/llama3/__init__.py writes _8b (its Embedding, RMSNorm, Linear and per-layer
 * builder), added to llama3_configs under the model's name. */
static void tt_py_flavor(tt_buf *b, const pp_model *m, const char *flavor)
{
    long long D = m->hidden, H = m->heads, V = m->vocab;
    long long KV = m->kv_heads > 0 ? m->kv_heads : m->heads;
    tt_printf(b, "\n\n# %s is not one of torchtitan's registered flavors: its shape, registered as a llama3\n"
                 "# flavor the way torchtitan/models/llama3/__init__.py registers _8b.\n", flavor);
    tt_printf(b, "def _parplan_model(attn_backend: str, tp_gemm_backend: str = \"default\") -> Llama3Model.Config:\n");
    tt_printf(b, "    return Llama3Model.Config(\n");
    tt_printf(b, "        dim=%lld,\n        vocab_size=%lld,\n", D, V);
    if (m->tied) tt_printf(b, "        enable_weight_tying=True,\n");
    tt_printf(b, "        tok_embeddings=Embedding.Config(\n"
                 "            num_embeddings=%lld, embedding_dim=%lld, param_init=_llama3._EMBEDDING_INIT\n"
                 "        ),\n", V, D);
    tt_printf(b, "        norm=RMSNorm.Config(normalized_shape=%lld, param_init=_llama3._NORM_INIT),\n", D);
    tt_printf(b, "        lm_head=Linear.Config(\n"
                 "            in_features=%lld, out_features=%lld, param_init=_llama3._output_linear_init(%lld)\n"
                 "        ),\n", D, V, D);
    tt_printf(b, "        layers=_llama3._build_llama3_layers(\n");
    tt_printf(b, "            fuse_qkv=True,\n            n_layers=%lld,\n            dim=%lld,\n            n_heads=%lld,\n"
                 "            n_kv_heads=%lld,\n            hidden_dim=%lld,\n",
              (long long)m->layers, D, H, KV, (long long)m->ffn);
    tt_printf(b, "            rope=ComplexRoPE.Config(\n                dim=%lld,\n                max_context_length=%lld,\n"
                 "                theta=%.9g,\n", D / H, (long long)m->seq, m->rope_theta > 0 ? m->rope_theta : 10000.0);
    if (m->rope_scaling == PP_ROPE_SCALING_LLAMA3)
        tt_printf(b, "                scaling=\"llama\",\n                scaling_factor=%.9g,\n"
                     "                low_freq_factor=%.9g,\n                high_freq_factor=%.9g,\n"
                     "                original_max_position_embeddings=%lld,\n",
                  m->rope_factor, m->rope_low_freq > 0 ? m->rope_low_freq : 1.0,
                  m->rope_high_freq > 0 ? m->rope_high_freq : 4.0, (long long)m->rope_original_context);
    else
        tt_printf(b, "                scaling=\"none\",\n");
    tt_printf(b, "            ),\n            attn_backend=attn_backend,\n            tp_gemm_backend=tp_gemm_backend,\n"
                 "        ),\n    )\n\n\n");
    tt_printf(b, "_llama3.llama3_configs[\"%s\"] = _parplan_model\n", flavor);
}

static pp_status tt_py(tt_buf *b, const pp_launch_params *p, pp_error *err)
{
    const pp_work *w = p->work;
    const pp_model *m = &w->model;
    const pp_layout *l = p->layout;
    pp_status st = tt_py_check(p, err);
    if (st != PP_OK) return st;
    const tt_flavor *f = tt_flavor_find(m);
    char flavor[128];
    if (f) snprintf(flavor, sizeof flavor, "%s", f->flavor);
    else tt_flavor_name(p, flavor, sizeof flavor);
    const char *family = f ? f->name : "llama3";
    bool shard = l->zero >= 2;
    int64_t R = shard ? (l->replicate > 1 ? l->replicate : 1) : l->dp;
    int64_t S = shard ? l->dp / (l->replicate > 1 ? l->replicate : 1) : 1;
    bool cut = w->stack.loss == PP_LOSS_CUT;
    int64_t steps = p->train_iters > 0 ? p->train_iters : 1000;
    int64_t micro = pp_layout_microbatches(w, l);

    tt_header(b, p, true);
    tt_printf(b, "\"\"\"parplan's layout as a torchtitan config function (torchtitan main at b5bcd76c, 2026-08-21).\n\n"
                 "Run it with launch_torchtitan.sh beside it, or from the torchtitan repository root:\n"
                 "    PYTHONPATH=DIR torchrun --nproc-per-node %lld -m torchtitan.train \\\n"
                 "        --module parplan_torchtitan --config parplan_config\n\"\"\"\n",
              (long long)(w->gpus_per_node > 0 && w->gpus_per_node < w->gpus ? w->gpus_per_node : w->gpus));
    tt_printf(b, "from torchtitan.components.data import ConcatThenSplitPackingConfig, GrainDataLoader\n");
    tt_printf(b, "from torchtitan.components.loss import %sCrossEntropyLoss\n", cut ? "ChunkedLossWrapper, " : "");
    tt_printf(b, "from torchtitan.components.metrics import MetricsProcessor\n");
    tt_printf(b, "from torchtitan.components.optimizer import default_adamw, LRSchedulersContainer, OptimizersContainer\n");
    if (w->stack.precision == PP_PREC_FP8)
        tt_printf(b, "from torchtitan.components.quantization import Float8LinearConverter\n");
    tt_printf(b, "from torchtitan.config import CompileConfig, ParallelismConfig, TrainingConfig\n");
    if (l->recompute != PP_RC_NONE)
        tt_printf(b, "from torchtitan.distributed.activation_checkpoint import %s\n",
                  l->recompute == PP_RC_FULL ? "FullAC" : "SelectiveAC");
    tt_printf(b, "from torchtitan.hf_datasets.text_datasets import DATASETS\n");
    if (!f) {
        tt_printf(b, "from torchtitan.models.common import ComplexRoPE, Embedding, Linear, RMSNorm\n");
        tt_printf(b, "from torchtitan.models.common.config_utils import decoder_vocab_size\n");
        tt_printf(b, "from torchtitan.models.llama3.model import Llama3Model\n");
        tt_printf(b, "from torchtitan.trainer import Trainer\n\n");
        tt_printf(b, "import torchtitan.models.llama3 as _llama3\n");
        tt_py_flavor(b, m, flavor);
    } else {
        tt_printf(b, "from torchtitan.models.common.config_utils import decoder_vocab_size\n");
        tt_printf(b, "from torchtitan.models.%s import model_registry\n", family);
        tt_printf(b, "from torchtitan.trainer import Trainer\n");
    }

    tt_printf(b, "\n\ndef parplan_config() -> Trainer.Config:\n");
    const char *registry = f ? "model_registry" : "_llama3.model_registry";
    if (w->stack.precision == PP_PREC_FP8)
        /* torchao rowwise float8 on every linear layer but the output (tt_py_check refuses the rest) */
        tt_printf(b, "    model_spec = %s(\n        \"%s\",\n        converters=[\n"
                     "            Float8LinearConverter.Config(\n                recipe_name=\"rowwise\",\n"
                     "                filter_fqns=[\"lm_head\"],\n                model_compile_enabled=%s,\n"
                     "            ),\n        ],\n    )\n",
                  registry, flavor, w->stack.compile ? "True" : "False");
    else
        tt_printf(b, "    model_spec = %s(\"%s\")\n", registry, flavor);
    if (cut)
        tt_printf(b, "    # --loss cut: the lm_head and the loss per chunk of tokens, never the whole logits\n"
                     "    loss = ChunkedLossWrapper.Config(\n"
                     "        loss_fn=CrossEntropyLoss.Config(global_vocab_size=decoder_vocab_size(model_spec)),\n"
                     "    )\n");
    else
        tt_printf(b, "    # --loss upcast: cross_entropy on the whole fp32 logits, as parplan prices it\n"
                     "    loss = CrossEntropyLoss.Config(global_vocab_size=decoder_vocab_size(model_spec))\n");
    tt_printf(b, "    return Trainer.Config(\n");
    tt_printf(b, "        model_spec=model_spec,\n");
    char assets[600];
    const char *why = tt_assets(p, f, assets, sizeof assets);
    tt_printf(b, "        hf_assets_path=\"%s\",  # %s\n", assets, why);
    tt_printf(b, "        dump_folder=\"./outputs\",\n");
    tt_printf(b, "        loss=loss,\n");
    tt_printf(b, "        optimizer=OptimizersContainer.Config(\n"
                 "            param_groups=default_adamw(lr=3e-4).param_groups,\n"
                 "            implementation=\"%s\",\n        ),\n",
              pp_adam_impl_names[w->stack.optimizer_impl]);
    tt_printf(b, "        lr_scheduler=LRSchedulersContainer.Config(warmup_steps=%lld),\n",
              (long long)(steps / 10 > 0 ? steps / 10 : 1));
    tt_printf(b, "        training=TrainingConfig(\n");
    tt_printf(b, "            num_tokens_per_microbatch_per_dp_rank=%lld * %lld,  # micro-batch x sequence\n",
              (long long)l->mbs, (long long)m->seq);
    tt_printf(b, "            num_tokens_per_train_step=%lld * %lld,  # global batch x sequence", (long long)w->gbs,
              (long long)m->seq);
    if (l->pp == 1 && micro > 1) tt_printf(b, ": %lld gradient-accumulation steps", (long long)micro);
    tt_printf(b, "\n            max_context_length=%lld,\n", (long long)m->seq);
    tt_printf(b, "            steps=%lld,%s\n", (long long)steps, p->train_iters > 0 ? "" : "  # set the run's length");
    tt_printf(b, "            mixed_precision_param=\"bfloat16\",\n");
    if (l->offload != PP_OFF_NONE) tt_printf(b, "            enable_cpu_offload=True,\n");
    /* CUDA graphs of the forward and backward are torchtitan's default (configs.py
     * disable_cuda_graphs False), refused with pipeline parallelism and with the default EP
     * dispatcher (trainer.py Trainer.Config._validate_cuda_graphs) */
    if (l->pp > 1 || (m->experts > 1 && l->ep > 1))
        tt_printf(b, "            disable_cuda_graphs=True,  # torchtitan captures no CUDA graph with %s\n",
                  l->pp > 1 ? "pipeline parallelism" : "the default EP dispatcher");
    else
        tt_printf(b, "            # CUDA graphs of the forward and backward: torchtitan's default, not in parplan's prediction\n");
    tt_printf(b, "        ),\n");
    tt_printf(b, "        dataloader=GrainDataLoader.Config(\n"
                 "            dataset=ConcatThenSplitPackingConfig(dataset=DATASETS[\"c4\"]),\n        ),\n");
    tt_printf(b, "        parallelism=ParallelismConfig(\n");
    tt_printf(b, "            data_parallel_replicate_degree=%lld,\n", (long long)R);
    tt_printf(b, "            data_parallel_shard_degree=%lld,\n", (long long)S);
    const char *policy = l->zero >= 3 ? (l->pp > 1 ? "always" : "default") : "never";
    tt_printf(b, "            fsdp_reshard_after_forward=\"%s\",  # --zero %d\n", policy, l->zero);
    tt_printf(b, "            tensor_parallel_degree=%lld,\n", (long long)l->tp);
    if (l->tp > 1) tt_printf(b, "            enable_sequence_parallel=True,\n");
    tt_printf(b, "            pipeline_parallel_degree=%lld,\n", (long long)l->pp);
    if (l->pp > 1) {
        tt_printf(b, "            pipeline_parallel_schedule=\"%s\",\n", l->vpp > 1 ? "Interleaved1F1B" : "1F1B");
        tt_printf(b, "            num_pp_microbatches=%lld,\n", (long long)micro);
        tt_parts(b, w, l, true);
    }
    tt_printf(b, "            context_parallel_degree=%lld,\n", (long long)l->cp);
    if (m->experts > 1) tt_printf(b, "            expert_parallel_degree=%lld,\n", (long long)l->ep);
    tt_printf(b, "        ),\n");
    if (l->recompute == PP_RC_SELECTIVE)
        tt_printf(b, "        activation_checkpoint=SelectiveAC.Config(),  # op-level SAC, as planned\n");
    else if (l->recompute == PP_RC_FULL)
        tt_printf(b, "        activation_checkpoint=FullAC.Config(),\n");
    else
        tt_printf(b, "        activation_checkpoint=None,\n");
    if (w->stack.compile || w->stack.compile_loss)
        tt_printf(b, "        compile=CompileConfig(enable=True, components=%s", tt_compile_components(&w->stack));
    else
        tt_printf(b, "        compile=CompileConfig(enable=False");
    if (l->tp > 1 && w->stack.tp_comm_overlap) tt_printf(b, ", enable_async_tensor_parallel=True");
    tt_printf(b, "),\n");
    tt_printf(b, "        metrics=MetricsProcessor.Config(log_freq=10),\n");
    tt_printf(b, "    )\n");
    return PP_OK;
}

/* ------------------------------------------------------------------ the script */

/* The script: torchrun of torchtitan.train on every node. py: the config module (format
 * torchtitan) as `--module parplan_torchtitan --config parplan_config` on PYTHONPATH; else the TOML
 * (torchtitan-toml) as --job.config_file. cfg: the config's text to embed (one self-contained
 * script), or NULL when it is written beside the script. */
static void tt_script(tt_buf *b, const pp_launch_params *p, const char *cfg, bool py)
{
    const pp_work *w = p->work;
    int64_t gpn = w->gpus_per_node > 0 && w->gpus_per_node < w->gpus ? w->gpus_per_node : w->gpus;
    int64_t nodes = (w->gpus + gpn - 1) / gpn;
    char job[96];
    tt_clean(w->model.name, job, sizeof job);
    for (char *c = job; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
              *c == '-'))
            *c = '_';
    char sbatch[512];
    pp_launch_sbatch(w, job, sbatch, sizeof sbatch);
    tt_printf(b, "%s", sbatch);
    tt_header(b, p, py);
    const char *file = py ? "parplan_torchtitan.py" : "torchtitan.toml";
    if (py)
        tt_printf(b, "# torchtitan at commit b5bcd76c (git clone https://github.com/pytorch/torchtitan; pip install -e .)\n"
                     "# with the config function in %s. Run it from the torchtitan checkout with bash on\n",
                  cfg ? "the module below" : "parplan_torchtitan.py beside this script");
    else
        tt_printf(b, "# torchtitan (pip install torchtitan, 0.2.x) with the job config %s. Run it with bash on\n",
                  cfg ? "below" : "torchtitan.toml beside this script");
    tt_printf(b, "# every node (the c10d rendezvous at MASTER_ADDR:MASTER_PORT gathers the %lld node%s), or submit\n"
                 "# it with sbatch (srun starts one torchrun per node).\n",
              (long long)nodes, nodes > 1 ? "s" : "");
    tt_printf(b, "set -euo pipefail\n\n");
    if (cfg) {
        tt_printf(b, "CONFIG_FILE=${CONFIG_FILE:-%s}\n", file);
        tt_printf(b, "cat > \"$CONFIG_FILE\" <<'PARPLAN_TORCHTITAN_CONFIG'\n%sPARPLAN_TORCHTITAN_CONFIG\n\n", cfg);
    } else {
        /* sbatch runs a copy of the script: the config is beside the submitted one */
        tt_printf(b, "CONFIG_FILE=${CONFIG_FILE:-\"${SLURM_SUBMIT_DIR:-$(dirname \"$0\")}/%s\"}\n", file);
    }
    if (py) {
        /* torchtitan/config/manager.py imports --module by its dotted name: the folder on the path */
        tt_printf(b, "CONFIG_DIR=$(cd \"$(dirname \"$CONFIG_FILE\")\" && pwd)\n"
                     "CONFIG_MODULE=$(basename \"$CONFIG_FILE\" .py)\n"
                     "export PYTHONPATH=\"$CONFIG_DIR${PYTHONPATH:+:$PYTHONPATH}\"\n");
    }
    tt_printf(b, "# torchtitan's run_train.sh: the caching allocator's expandable segments\n");
    tt_printf(b, "export PYTORCH_ALLOC_CONF=${PYTORCH_ALLOC_CONF:-expandable_segments:True}\n");
    char rdzv[1024];
    pp_launch_rdzv(w, job, rdzv, sizeof rdzv);
    tt_printf(b, "%s", rdzv);
    tt_printf(b, "${LAUNCHER[@]+\"${LAUNCHER[@]}\"} torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" \\\n"
                 "    --rdzv-id \"$RDZV_ID\" --rdzv-backend c10d --rdzv-endpoint \"$MASTER_ADDR:$MASTER_PORT\" \\\n"
                 "    --local-ranks-filter 0 --role rank --tee 3 \\\n"
                 "    -m torchtitan.train %s \"$@\"\n",
              py ? "--module \"$CONFIG_MODULE\" --config parplan_config" : "--job.config_file \"$CONFIG_FILE\"");
}

pp_status pp_launch_torchtitan(pp_launch_format fmt, const pp_launch_params *p, bool joined, char **first,
                               char **second, pp_error *err)
{
    bool py = fmt == PP_LAUNCH_TORCHTITAN;
    *first = NULL;
    if (second) *second = NULL;
    tt_buf toml = {0}, script = {0};
    toml.f = open_memstream(&toml.s, &toml.len);
    script.f = open_memstream(&script.s, &script.len);
    pp_status st = tt_check(p, py, err);
    if (st == PP_OK) st = py ? tt_py(&toml, p, err) : tt_toml(&toml, p, err);
    bool toml_ok = tt_close(&toml);
    if (st == PP_OK && toml_ok) tt_script(&script, p, joined ? toml.s : NULL, py);
    bool script_ok = tt_close(&script);
    if (st == PP_OK && !(toml_ok && script_ok)) st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (st != PP_OK) {
        free(toml.s);
        free(script.s);
        return st;
    }
    if (joined) {
        free(toml.s);
        *first = script.s;
    } else {
        *first = toml.s;
        if (second) *second = script.s;
        else free(script.s);
    }
    return PP_OK;
}
