/* launch --format torchtitan: a torchtitan TOML job config and the script that runs it.
 *
 * The keys are those of torchtitan 0.2.x's JobConfig (torchtitan/config/job_config.py, the last
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
 *   --compile              compile.enable (torch.compile of each block; the time model prices it) */
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

/* ------------------------------------------------------------------ checks */

static pp_status tt_check(const pp_launch_params *p, pp_error *err)
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
    /* torchtitan builds its model in fp32 and keeps fp32 sharded parameters (MixedPrecisionPolicy
     * casts the gathered copies); its loss is cross_entropy on pred.float() */
    if (w->stack.param_bf16)
        return BAD("--param-dtype bf16 is NeMo AutoModel's bf16 storage; torchtitan keeps fp32 sharded parameters "
                   "(the launch would not be the stack predicted)");
    if (w->stack.loss >= PP_LOSS_TORCH && w->stack.loss != PP_LOSS_TORCH)
        return BAD("--loss %s is not torchtitan's loss (cross_entropy on logits.float(): --loss upcast)",
                   pp_loss_names[w->stack.loss]);
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

static void tt_header(tt_buf *b, const pp_launch_params *p)
{
    const pp_work *w = p->work;
    const pp_model *m = &w->model;
    const pp_layout *l = p->layout;
    char name[96], gpu[96];
    tt_clean(m->name, name, sizeof name);
    tt_clean(w->gpu.name, gpu, sizeof gpu);
    tt_printf(b, "# Generated by parplan %s: launch --format torchtitan (torchtitan 0.2.x JobConfig)\n", PP_VERSION);
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
}

/* The module names of model part s (pipeline split): torchtitan's Llama/Qwen3 modules
 * tok_embeddings, layers.<i>, norm, output. */
static void tt_parts(tt_buf *b, const pp_work *w, const pp_layout *l)
{
    int64_t segs = l->pp * l->vpp, at = 0;
    tt_printf(b, "module_fqns_per_model_part = [\n");
    for (int64_t s = 0; s < segs; s++) {
        int64_t chunk = pp_layout_vstage_layers(w, l, s % l->pp, s / l->pp);
        tt_printf(b, "    [");
        bool first = true;
        if (s == 0) {
            tt_printf(b, "\"tok_embeddings\"");
            first = false;
        }
        for (int64_t i = 0; i < chunk; i++, at++) {
            tt_printf(b, "%s\"layers.%lld\"", first ? "" : ", ", (long long)at);
            first = false;
        }
        if (s == segs - 1) tt_printf(b, "%s\"norm\", \"output\"", first ? "" : ", ");
        tt_printf(b, "],\n");
    }
    tt_printf(b, "]\n");
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

    tt_header(b, p);
    tt_printf(b, "\n[job]\n");
    tt_printf(b, "dump_folder = \"./outputs\"\n");
    tt_printf(b, "description = \"parplan: %s, tp %lld pp %lld dp %lld cp %lld, micro-batch %lld\"\n", name,
              (long long)l->tp, (long long)l->pp, (long long)l->dp, (long long)l->cp, (long long)l->mbs);

    tt_printf(b, "\n[model]\n");
    const tt_flavor *f = tt_flavor_find(m);
    const char *hf_dir = p->hf_config_path;
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
    if (hf_dir) {
        char dir[600];
        tt_clean(hf_dir, dir, sizeof dir);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        else snprintf(dir, sizeof dir, ".");
        tt_printf(b, "hf_assets_path = \"%s\"  # the folder of the config.json the model was read from\n", dir);
    } else {
        tt_printf(b, "hf_assets_path = \"%s\"  # tokenizer (and weights): scripts/download_hf_assets.py\n",
                  f ? f->assets : "./assets/hf/tokenizer");
    }
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
        tt_parts(b, w, l);
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

    if (fp8) {
        /* torchao tensorwise float8 with the fp8 all-gather (the memory model prices the fp8
         * unsharded copies); the output layer stays bf16. */
        tt_printf(b, "\n[quantize.linear.float8]\n");
        tt_printf(b, "enable_fsdp_float8_all_gather = %s\n", S > 1 ? "true" : "false");
        tt_printf(b, "precompute_float8_dynamic_scale_for_fsdp = %s\n", S > 1 ? "true" : "false");
        tt_printf(b, "filter_fqns = [\"output\"]\n");
    }
    tt_printf(b, "\n[compile]\nenable = %s\n", w->stack.compile ? "true" : "false");
    tt_printf(b, "\n[checkpoint]\nenable = false\n");
    tt_printf(b, "\n[metrics]\nlog_freq = 10\n");
    return PP_OK;
}

/* ------------------------------------------------------------------ the script */

static void tt_script(tt_buf *b, const pp_launch_params *p, const char *toml)
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
    tt_printf(b, "#!/usr/bin/env bash\n");
    tt_printf(b, "#SBATCH --job-name=parplan-%s\n#SBATCH --nodes=%lld\n#SBATCH --ntasks-per-node=1\n"
                 "#SBATCH --gpus-per-node=%lld\n#SBATCH --exclusive\n",
              job[0] ? job : "train", (long long)nodes, (long long)gpn);
    tt_header(b, p);
    tt_printf(b, "# torchtitan (pip install torchtitan, 0.2.x) with the job config %s. Run it with bash on\n"
                 "# every node (the c10d rendezvous at MASTER_ADDR:MASTER_PORT gathers the %lld node%s), or submit\n"
                 "# it with sbatch (srun starts one torchrun per node).\n",
              toml ? "below" : "torchtitan.toml beside this script", (long long)nodes, nodes > 1 ? "s" : "");
    tt_printf(b, "set -euo pipefail\n\n");
    if (toml) {
        tt_printf(b, "CONFIG_FILE=${CONFIG_FILE:-torchtitan.toml}\n");
        tt_printf(b, "cat > \"$CONFIG_FILE\" <<'PARPLAN_TORCHTITAN_TOML'\n%sPARPLAN_TORCHTITAN_TOML\n\n", toml);
    } else {
        /* sbatch runs a copy of the script: the config is beside the submitted one */
        tt_printf(b, "CONFIG_FILE=${CONFIG_FILE:-\"${SLURM_SUBMIT_DIR:-$(dirname \"$0\")}/torchtitan.toml\"}\n");
    }
    tt_printf(b, "# torchtitan's run_train.sh: the caching allocator's expandable segments\n");
    tt_printf(b, "export PYTORCH_ALLOC_CONF=${PYTORCH_ALLOC_CONF:-expandable_segments:True}\n");
    tt_printf(b, "NNODES=%lld\nGPUS_PER_NODE=%lld\nMASTER_PORT=${MASTER_PORT:-29500}\n", (long long)nodes,
              (long long)gpn);
    tt_printf(b, "if [ -n \"${SLURM_JOB_ID:-}\" ]; then\n"
                 "    MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
                 "    RDZV_ID=$SLURM_JOB_ID\n"
                 "    LAUNCHER=(srun --kill-on-bad-exit=1 --ntasks-per-node=1)\n"
                 "else\n");
    if (nodes > 1)
        tt_printf(b, "    MASTER_ADDR=${MASTER_ADDR:?set MASTER_ADDR to the rendezvous host}\n");
    else
        tt_printf(b, "    MASTER_ADDR=${MASTER_ADDR:-localhost}\n");
    tt_printf(b, "    RDZV_ID=${RDZV_ID:-parplan-%s}\n    LAUNCHER=()\nfi\n\n", job[0] ? job : "train");
    tt_printf(b, "${LAUNCHER[@]+\"${LAUNCHER[@]}\"} torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" \\\n"
                 "    --rdzv-id \"$RDZV_ID\" --rdzv-backend c10d --rdzv-endpoint \"$MASTER_ADDR:$MASTER_PORT\" \\\n"
                 "    --local-ranks-filter 0 --role rank --tee 3 \\\n"
                 "    -m torchtitan.train --job.config_file \"$CONFIG_FILE\" \"$@\"\n");
}

pp_status pp_launch_torchtitan(const pp_launch_params *p, bool joined, char **first, char **second,
                               pp_error *err)
{
    *first = NULL;
    if (second) *second = NULL;
    tt_buf toml = {0}, script = {0};
    toml.f = open_memstream(&toml.s, &toml.len);
    script.f = open_memstream(&script.s, &script.len);
    pp_status st = tt_check(p, err);
    if (st == PP_OK) st = tt_toml(&toml, p, err);
    bool toml_ok = tt_close(&toml);
    if (st == PP_OK && toml_ok) tt_script(&script, p, joined ? toml.s : NULL);
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
