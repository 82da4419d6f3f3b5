/* Launch configs (issue 6): Megatron-LM command lines (plain, torchrun rendezvous, Slurm),
 * DeepSpeed ds_config.json + launcher, NeMo YAML overrides. See pp_launch.h.
 *
 * Sources for the flag semantics (all checked against the Megatron-LM snapshot whose parser's
 * option list is tests/data/megatron_flags.txt):
 *  - megatron/training/arguments.py validate_args(): --num-layers must divide by pp unless a
 *    --pipeline-model-parallel-layout is given; --num-layers-per-virtual-pipeline-stage for the
 *    interleaved schedule; --overlap-param-gather needs --use-distributed-optimizer and
 *    --overlap-grad-reduce; --recompute-granularity selective takes no method; TP or CP on
 *    pre-Blackwell GPUs needs CUDA_DEVICE_MAX_CONNECTIONS=1; --optimizer-cpu-offload needs
 *    --use-precision-aware-optimizer.
 *  - megatron/core/transformer/pipeline_parallel_layer_layout.py: the layout string, stages
 *    separated by '|', 'E' embedding, 't' a decoder layer, 'L' the loss, "t*5" repeats; the
 *    list is pp*vpp long, virtual stage v of rank p at index v*pp + p.
 *  - megatron/core/transformer/transformer_config.py: recompute_method block recomputes the
 *    first recompute_num_layers layers of each pipeline stage (each model chunk under vpp),
 *    uniform with 1 checkpoints every layer.
 *  - megatron/core/transformer/torch_norm.py: the torch LayerNorm/RMSNorm used without TE/apex
 *    asserts not sequence_parallel; dot_product_attention.py (local) asserts cp == 1.
 *  - DeepSpeed config JSON (deepspeed.ai/docs/config-json): train_batch_size =
 *    train_micro_batch_size_per_gpu x gradient_accumulation_steps x data-parallel size;
 *    zero_optimization.{stage, reduce_bucket_size, allgather_bucket_size, offload_*,
 *    stage3_prefetch_bucket_size, stage3_param_persistence_threshold}. Bucket sizes follow the
 *    Hugging Face Trainer's "auto" rule: reduce_bucket_size = h^2, stage3 prefetch = 0.9 h^2,
 *    persistence threshold = 10 h (transformers/integrations/deepspeed.py).
 *  - NeMo 1.x examples/nlp/language_modeling/conf/megatron_gpt_config.yaml keys. */
#include "pp_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const pp_launch_format_names[PP_LAUNCH_COUNT] = {"megatron", "torchrun", "slurm",
                                                             "deepspeed", "nemo", "torchtitan"};
const char *const pp_launch_target_names[PP_TARGET_COUNT] = {"standard", "device-local"};

static const char *const files_megatron[] = {"pretrain_gpt.sh", NULL};
static const char *const files_torchrun[] = {"launch_torchrun.sh", NULL};
static const char *const files_slurm[] = {"launch.sbatch", NULL};
static const char *const files_deepspeed[] = {"ds_config.json", "launch_deepspeed.sh", NULL};
static const char *const files_nemo[] = {"nemo_overrides.yaml", NULL};
static const char *const files_torchtitan[] = {"torchtitan.toml", "launch_torchtitan.sh", NULL};

const char *const *pp_launch_files(pp_launch_format fmt)
{
    switch (fmt) {
    case PP_LAUNCH_MEGATRON: return files_megatron;
    case PP_LAUNCH_TORCHRUN: return files_torchrun;
    case PP_LAUNCH_SLURM: return files_slurm;
    case PP_LAUNCH_DEEPSPEED: return files_deepspeed;
    case PP_LAUNCH_NEMO: return files_nemo;
    case PP_LAUNCH_TORCHTITAN: return files_torchtitan;
    default: return NULL;
    }
}

void pp_launch_params_init(pp_launch_params *p)
{
    memset(p, 0, sizeof *p);
    p->target = PP_TARGET_STANDARD;
    p->peak_bytes = p->reserved_bytes = p->capacity_bytes = -1;
    p->step_time_s = p->samples_per_s = -1;
}

/* ------------------------------------------------------------------ a growable string */

typedef struct {
    char *s;
    size_t len, cap;
    bool oom;
} sbuf;

static void sb_vprintf(sbuf *b, const char *fmt, va_list ap)
{
    if (b->oom) return;
    va_list ap2;
    va_copy(ap2, ap);
    int need = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (need < 0) {
        b->oom = true;
        return;
    }
    if (b->len + (size_t)need + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + (size_t)need + 1) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    b->len += (size_t)need;
}

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

static void sb_free(sbuf *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------------ helpers */

#define BAD(...) pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, __VA_ARGS__)

static bool known(double v) { return isfinite(v) && v >= 0; }

/* A probability as Megatron's dump prints it: "0.0", "0.1". */
static const char *prob(double v, char *buf, size_t n)
{
    snprintf(buf, n, "%.6g", v);
    if (!strpbrk(buf, ".e")) strncat(buf, ".0", n - strlen(buf) - 1);
    return buf;
}

/* Copy s into out keeping only characters safe in a comment / job name. */
static void sanitize(const char *s, char *out, size_t n, bool name_only)
{
    size_t k = 0;
    for (; s && *s && k + 1 < n; s++) {
        unsigned char c = (unsigned char)*s;
        bool ok = name_only ? ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                               (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')
                            : (c >= 0x20 && c < 0x7f);
        out[k++] = ok ? (char)c : '_';
    }
    out[k] = 0;
}

static int64_t layout_nodes(const pp_work *w)
{
    int64_t gpn = w->gpus_per_node > 0 ? w->gpus_per_node : w->gpus;
    if (gpn > w->gpus) gpn = w->gpus;
    return (w->gpus + gpn - 1) / gpn;
}

static int64_t layout_gpn(const pp_work *w)
{
    int64_t gpn = w->gpus_per_node > 0 ? w->gpus_per_node : w->gpus;
    return gpn > w->gpus ? w->gpus : gpn;
}

static pp_status check_cluster(const pp_work *w, pp_error *err)
{
    int64_t gpn = layout_gpn(w);
    if (gpn < 1) return BAD("--gpus must be at least 1");
    if (w->gpus % gpn)
        return BAD("--gpus %lld is not a whole number of nodes of %lld GPUs (--gpus-per-node)",
                   (long long)w->gpus, (long long)gpn);
    return PP_OK;
}

/* Layers of stage i and how many of them are fully recomputed (ILP or the uniform rule). */
static int64_t stage_recompute(const pp_work *w, const pp_layout *l, int64_t i)
{
    int64_t n = pp_layout_stage_layers(w, l, i);
    if (l->recompute != PP_RC_FULL) return 0;
    if (l->stage_recompute) return l->stage_recompute[i] < n ? l->stage_recompute[i] : n;
    if (l->recompute_layers > 0) return l->recompute_layers < n ? l->recompute_layers : n;
    return n;
}

static bool stages_even(const pp_work *w, const pp_layout *l)
{
    int64_t first = pp_layout_stage_layers(w, l, 0);
    for (int64_t i = 1; i < l->pp; i++)
        if (pp_layout_stage_layers(w, l, i) != first) return false;
    return true;
}

static const char *gib(double bytes, char *buf, size_t n)
{
    if (!known(bytes)) snprintf(buf, n, "not predicted");
    else snprintf(buf, n, "%.2f GiB", bytes / 1073741824.0);
    return buf;
}

/* The header comment shared by every format: version, work, layout, predictions. */
static void write_header(sbuf *b, const char *cc, pp_launch_format fmt, const pp_launch_params *p)
{
    const pp_work *w = p->work;
    const pp_model *m = &w->model;
    const pp_layout *l = p->layout;
    char name[96], gpu[96], t1[32], t2[32], t3[32];
    sanitize(m->name, name, sizeof name, false);
    sanitize(w->gpu.name, gpu, sizeof gpu, false);
    sb_printf(b, "%s Generated by parplan %s: launch --format %s (target %s)\n", cc, PP_VERSION,
              pp_launch_format_names[fmt], pp_launch_target_names[p->target]);
    sb_printf(b, "%s model %s: %lld layers, hidden %lld, %lld heads (%lld KV), FFN %lld, vocab %lld, "
                 "sequence %lld, %s, %s, %s, %s, %s",
              cc, name, (long long)m->layers, (long long)m->hidden, (long long)m->heads,
              (long long)m->kv_heads, (long long)m->ffn, (long long)m->vocab, (long long)m->seq,
              pp_act_names[m->act], pp_norm_names[m->norm], pp_pos_names[m->pos],
              m->tied ? "tied embeddings" : "untied embeddings", m->bias ? "bias" : "no bias");
    if (m->experts > 1) sb_printf(b, ", %lld experts top-%lld", (long long)m->experts, (long long)m->topk);
    if (pp_model_is_mla(m)) sb_printf(b, ", multi-latent attention (kv rank %lld)", (long long)m->kv_lora_rank);
    if (m->window > 0) sb_printf(b, ", window %lld", (long long)m->window);
    if (m->mtp_layers > 0) sb_printf(b, ", %lld MTP layers", (long long)m->mtp_layers);
    sb_printf(b, "\n");
    sb_printf(b, "%s cluster: %lld x %s (%lld node%s of %lld), global batch %lld sequences, "
                 "framework %s, attention %s\n",
              cc, (long long)w->gpus, gpu, (long long)layout_nodes(w), layout_nodes(w) > 1 ? "s" : "",
              (long long)layout_gpn(w), (long long)w->gbs, pp_framework_names[w->framework],
              pp_attention_names[w->attention]);
    char stack[400], stack_s[400];
    pp_stack_describe(w, stack, sizeof stack);
    sanitize(stack, stack_s, sizeof stack_s, false);
    sb_printf(b, "%s %s\n", cc, stack_s);
    sb_printf(b, "%s layout: tp %lld, pp %lld, dp %lld, vpp %lld, cp %lld, ep %lld, micro-batch %lld, "
                 "%lld micro-batches per step, ",
              cc, (long long)l->tp, (long long)l->pp, (long long)l->dp, (long long)l->vpp,
              (long long)l->cp, (long long)l->ep, (long long)l->mbs,
              (long long)pp_layout_microbatches(w, l));
    if (l->zero) sb_printf(b, "ZeRO-%d, ", l->zero);
    if (l->dist_opt) sb_printf(b, "distributed optimizer, ");
    if (l->sp) sb_printf(b, "sequence parallel, ");
    sb_printf(b, "recompute %s", pp_recompute_names[l->recompute]);
    if (l->recompute == PP_RC_FULL && !l->stage_recompute && l->recompute_layers > 0)
        sb_printf(b, " (%lld layers per stage)", (long long)l->recompute_layers);
    sb_printf(b, ", offload %s\n", pp_offload_names[l->offload]);
    if (l->pp > 1 && (l->stage_layers || !stages_even(w, l))) {
        sb_printf(b, "%s stages (%s): layers", cc, l->stage_layers ? "ILP" : "uniform, remainder first");
        for (int64_t i = 0; i < l->pp; i++)
            sb_printf(b, "%s%lld", i ? "," : " ", (long long)pp_layout_stage_layers(w, l, i));
        if (l->recompute == PP_RC_FULL) {
            sb_printf(b, "; fully recomputed");
            for (int64_t i = 0; i < l->pp; i++)
                sb_printf(b, "%s%lld", i ? "," : " ", (long long)stage_recompute(w, l, i));
        }
        sb_printf(b, "\n");
    }
    double cap = p->capacity_bytes >= 0 ? p->capacity_bytes : w->gpu.memory_bytes;
    if (known(p->peak_bytes)) {
        sb_printf(b, "%s predicted by parplan %s: peak %s allocated on the largest rank", cc, PP_VERSION,
                  gib(p->peak_bytes, t1, sizeof t1));
        if (known(p->reserved_bytes)) sb_printf(b, " + %s reserved", gib(p->reserved_bytes, t2, sizeof t2));
        sb_printf(b, " of %s", gib(cap, t3, sizeof t3));
    } else {
        sb_printf(b, "%s predicted by parplan %s: peak memory not predicted (capacity %s)", cc, PP_VERSION,
                  gib(cap, t3, sizeof t3));
    }
    if (known(p->peak_bytes) && known(cap))
        sb_printf(b, " (%s)",
                  p->peak_bytes + (known(p->reserved_bytes) ? p->reserved_bytes : 0) <= cap
                      ? "fits" : "PREDICTED OUT OF MEMORY");
    if (known(p->step_time_s)) sb_printf(b, "; step %.3f s", p->step_time_s);
    else sb_printf(b, "; step time not predicted");
    if (known(p->samples_per_s))
        sb_printf(b, ", %.2f samples/s, %.0f tokens/s", p->samples_per_s,
                  p->samples_per_s * (double)m->seq);
    sb_printf(b, "\n");
}

/* ------------------------------------------------------------------ Megatron arguments */

enum {
    G_MODEL, G_PARALLEL, G_BATCH, G_MEMORY, G_PRECISION, G_DATA, G_TRAINING, G_CHECKPOINT,
    G_LOGGING, G_LOCAL, G_COUNT
};
static const char *const group_names[G_COUNT] = {
    "MODEL_ARGS", "PARALLEL_ARGS", "BATCH_ARGS", "MEMORY_ARGS", "PRECISION_ARGS", "DATA_ARGS",
    "TRAINING_ARGS", "CHECKPOINT_ARGS", "LOGGING_ARGS", "LOCAL_ARGS",
};
static const char *const group_titles[G_COUNT] = {
    "model shape",
    "parallel layout",
    "batch",
    "optimizer sharding, activation recompute, offload",
    "precision and communication overlap",
    "data and tokenizer",
    "optimizer and schedule (hyper-parameters: change freely)",
    "checkpoints",
    "logging",
    "Megatron-LM without Transformer Engine or apex (--launch-target device-local)",
};

#define MG_MAX_ARGS 128
#define MG_MAX_NOTES 12

typedef struct {
    int group;
    char flag[64];
    char value[1100]; /* "" for a switch */
    bool raw;         /* value is a shell expression written as is (already quoted) */
} mg_arg;

typedef struct {
    mg_arg a[MG_MAX_ARGS];
    int n;
    char notes[MG_MAX_NOTES][400];
    int nnotes;
    bool overflow;
} mg_list;

static void mg_add(mg_list *g, int group, const char *flag, bool raw, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void mg_add(mg_list *g, int group, const char *flag, bool raw, const char *fmt, ...)
{
    if (g->n >= MG_MAX_ARGS) {
        g->overflow = true;
        return;
    }
    mg_arg *a = &g->a[g->n++];
    a->group = group;
    a->raw = raw;
    snprintf(a->flag, sizeof a->flag, "%s", flag);
    a->value[0] = 0;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(a->value, sizeof a->value, fmt, ap);
        va_end(ap);
        if (k < 0 || (size_t)k >= sizeof a->value) g->overflow = true;
    }
}

static void mg_note(mg_list *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mg_note(mg_list *g, const char *fmt, ...)
{
    if (g->nnotes >= MG_MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->notes[g->nnotes++], sizeof g->notes[0], fmt, ap);
    va_end(ap);
}

#define ARG(grp, flag) mg_add(g, grp, flag, false, NULL)
#define ARGV(grp, flag, ...) mg_add(g, grp, flag, false, __VA_ARGS__)
#define ARGRAW(grp, flag, ...) mg_add(g, grp, flag, true, __VA_ARGS__)

/* The --pipeline-model-parallel-layout string for per-stage layer counts: pp*vpp segments,
 * virtual stage v of rank p at index v*pp + p; a rank's layers are spread over its vpp chunks,
 * the remainder on the first chunks. 'E' opens the first segment, 'L' closes the last. */
static pp_status layout_string(const pp_work *w, const pp_layout *l, char *out, size_t n,
                                  pp_error *err)
{
    size_t k = 0;
    int64_t segs = l->pp * l->vpp;
    for (int64_t s = 0; s < segs; s++) {
        int64_t v = s / l->pp, r = s % l->pp;
        int64_t layers = pp_layout_stage_layers(w, l, r);
        int64_t chunk = layers / l->vpp + (v < layers % l->vpp ? 1 : 0);
        if (chunk < 1)
            return BAD("pipeline stage %lld has %lld layers, fewer than --vpp %lld model chunks",
                       (long long)r, (long long)layers, (long long)l->vpp);
        char seg[64];
        int len = snprintf(seg, sizeof seg, "%s%s", s ? "|" : "", s == 0 ? "E" : "");
        if (chunk == 1) len += snprintf(seg + len, sizeof seg - (size_t)len, "t");
        else if (chunk > 1) len += snprintf(seg + len, sizeof seg - (size_t)len, "t*%lld", (long long)chunk);
        if (s == segs - 1) len += snprintf(seg + len, sizeof seg - (size_t)len, "L");
        if (k + (size_t)len + 1 > n)
            return BAD("the pipeline layout of %lld stages is too long to write", (long long)segs);
        memcpy(out + k, seg, (size_t)len);
        k += (size_t)len;
    }
    out[k] = 0;
    return PP_OK;
}

/* A 0/1 layer pattern as the Python list expression Megatron's --moe-layer-freq and
 * --window-attn-skip-freq evaluate (arguments.py moe_freq_type): a leading run and a repeated
 * period when the pattern has one ("[0]*3+[1]*58", "[1,1,1,0]*12"), else its runs
 * ("[0]*2+[1]*5+[0]*1+..."). The list is as long as the layers. */
static void pattern_expr(const bool *p, int64_t n, char *out, size_t cap)
{
    size_t k = 0;
#define PUT(...) (k += (size_t)snprintf(out + k, k < cap ? cap - k : 0, __VA_ARGS__))
    int64_t lead = 1;
    while (lead < n && p[lead] == p[0]) lead++;
    for (int64_t f = 0; f <= lead && f < n; f += lead ? lead : 1) {
        int64_t rest = n - f;
        for (int64_t per = 1; per <= 16 && per <= rest; per++) {
            bool ok = true;
            for (int64_t i = f; i < n && ok; i++) ok = p[i] == p[f + (i - f) % per];
            if (!ok || rest / per < 2) continue;
            if (f) PUT("[%d]*%lld+", p[0] ? 1 : 0, (long long)f);
            PUT("[");
            for (int64_t i = 0; i < per; i++) PUT("%s%d", i ? "," : "", p[f + i] ? 1 : 0);
            PUT("]*%lld", (long long)(rest / per));
            if (rest % per) {
                PUT("+[");
                for (int64_t i = 0; i < rest % per; i++) PUT("%s%d", i ? "," : "", p[f + i] ? 1 : 0);
                PUT("]");
            }
            return;
        }
        if (!lead) break;
    }
    for (int64_t i = 0; i < n;) {
        int64_t j = i;
        while (j < n && p[j] == p[i]) j++;
        PUT("%s[%d]*%lld", i ? "+" : "", p[i] ? 1 : 0, (long long)(j - i));
        i = j;
    }
#undef PUT
}

/* The model's MoE layers (1) and windowed layers (1), for the two patterns above. */
static bool *layer_pattern(const pp_model *m, bool window)
{
    bool *p = malloc((size_t)(m->layers > 0 ? m->layers : 1) * sizeof *p);
    if (!p) return NULL;
    for (int64_t i = 0; i < m->layers; i++)
        p[i] = window ? pp_model_layer_is_window(m, i) : pp_model_layer_is_moe(m, i);
    return p;
}

/* Can Megatron-LM's command line express the work and layout? Shared by the Megatron-based
 * formats (megatron, torchrun, slurm). */
static pp_status megatron_check(const pp_launch_params *p, pp_error *err)
{
    const pp_work *w = p->work;
    const pp_model *m = &w->model;
    const pp_layout *l = p->layout;
    if (l->zero > 0)
        return BAD("Megatron-LM has no ZeRO-%d option here: use --dist-opt (framework megatron) "
                   "or --format deepspeed", l->zero);
    if (m->act == PP_ACT_RELU)
        return BAD("Megatron-LM's command line has no plain ReLU MLP (only GELU, SwiGLU, "
                   "squared ReLU): model %s", m->name);
    if (m->pos == PP_POS_ALIBI)
        return BAD("Megatron-LM's GPT has no ALiBi position embedding: model %s (use --format nemo "
                   "or deepspeed)", m->name);
    if (l->offload == PP_OFF_PARAMS)
        return BAD("Megatron-LM does not offload parameters: use --offload optimizer, or ZeRO-3 "
                   "with --format deepspeed");
    if (l->offload == PP_OFF_OPTIMIZER && !l->dist_opt)
        return BAD("Megatron's --optimizer-cpu-offload works on the distributed optimizer: add --dist-opt");
    const pp_stack *s = &w->stack;
    /* MoE with TP needs SP: pp_layout_validate says so for every command. */
    if (pp_model_is_moe(m) && m->bias && pp_layout_etp(l) > 1)
        return BAD("MoE with linear biases needs --etp 1: Megatron supports expert biases only without expert "
                   "tensor parallelism (transformer_config.py)");
    if (s->tp_comm_overlap && !l->sp)
        return BAD("--tp-comm-overlap needs --sp (arguments.py validate_args)");
    if (s->ep_overlap && l->pp > 1 && l->vpp < 2)
        return BAD("--ep-overlap with --pp %lld needs --vpp: Megatron overlaps the all-to-alls of interleaved "
                   "micro-batches (transformer_config.py, overlap_moe_expert_parallel_comm)", (long long)l->pp);
    if (s->no_overlap && l->vpp > 1 && l->pp < 3)
        return BAD("--no-overlap with --vpp %lld needs --pp of at least 3: Megatron's interleaved schedule without "
                   "p2p overlap refuses 2 stages (arguments.py validate_args)", (long long)l->vpp);
    if (p->target == PP_TARGET_DEVICE_LOCAL) {
        if (pp_model_is_mla(m))
            return BAD("multi-latent attention needs Transformer Engine (Megatron's local DotProductAttention fails "
                       "with it), which --launch-target device-local lacks");
        if (s->precision == PP_PREC_FP8)
            return BAD("--precision fp8 needs Transformer Engine, which --launch-target device-local lacks");
        if (s->tp_comm_overlap)
            return BAD("--tp-comm-overlap needs Transformer Engine, which --launch-target device-local lacks");
        if (s->grouped_gemm)
            return BAD("--moe-grouped-gemm needs Transformer Engine, which --launch-target device-local lacks");
        if (s->impl_given && s->impl == PP_IMPL_TE)
            return BAD("--impl te: --launch-target device-local runs Megatron's local implementation");
        if (l->sp)
            return BAD("--sp: sequence parallelism fails with the torch LayerNorm of "
                       "--launch-target device-local (needs Transformer Engine or apex)");
        if (l->cp > 1)
            return BAD("--cp %lld: context parallelism needs Transformer Engine attention, which "
                       "--launch-target device-local lacks", (long long)l->cp);
        if (l->offload == PP_OFF_OPTIMIZER)
            return BAD("--offload optimizer: Megatron's CPU optimizer offload needs Transformer "
                       "Engine, which --launch-target device-local lacks");
        /* Megatron's CheckpointWithoutOutput (tensor_parallel/random.py), which the layernorm
         * module's recompute runs through, calls Transformer Engine's FP8GlobalStateManager even in
         * bf16: without TE the first step fails (NameError), as two scripts did on the lent H200. */
        if (l->recompute_modules & (1u << PP_RCM_LAYERNORM))
            return BAD("--recompute-modules layernorm needs Transformer Engine installed (Megatron's "
                       "CheckpointWithoutOutput calls it even in bf16), which --launch-target device-local lacks");
    }
    if (l->vpp > 1 && l->pp < 2) return BAD("--vpp %lld needs --pp of at least 2", (long long)l->vpp);
    return check_cluster(w, err);
}

static pp_status megatron_build(const pp_launch_params *p, mg_list *g, pp_error *err)
{
    const pp_work *w = p->work;
    const pp_model *m = &w->model;
    const pp_layout *l = p->layout;
    bool local = p->target == PP_TARGET_DEVICE_LOCAL;
    memset(g, 0, sizeof *g);
    pp_status st = megatron_check(p, err);
    if (st != PP_OK) return st;

    /* -- model shape */
    ARGV(G_MODEL, "--num-layers", "%lld", (long long)m->layers);
    ARGV(G_MODEL, "--hidden-size", "%lld", (long long)m->hidden);
    ARGV(G_MODEL, "--num-attention-heads", "%lld", (long long)m->heads);
    if (m->kv_heads > 0 && m->kv_heads != m->heads) {
        ARG(G_MODEL, "--group-query-attention");
        ARGV(G_MODEL, "--num-query-groups", "%lld", (long long)m->kv_heads);
    }
    if (!pp_model_is_mla(m) && m->head_dim > 0 && m->heads > 0 && m->head_dim * m->heads != m->hidden)
        ARGV(G_MODEL, "--kv-channels", "%lld", (long long)m->head_dim);
    ARGV(G_MODEL, "--ffn-hidden-size", "%lld", (long long)m->ffn);
    if (m->act == PP_ACT_SWIGLU) ARG(G_MODEL, "--swiglu");
    ARGV(G_MODEL, "--normalization", "%s", m->norm == PP_NORM_RMSNORM ? "RMSNorm" : "LayerNorm");
    ARGV(G_MODEL, "--position-embedding-type", "%s",
         m->pos == PP_POS_ROPE ? "rope" : m->pos == PP_POS_NONE ? "none" : "learned_absolute");
    if (!m->tied) ARG(G_MODEL, "--untie-embeddings-and-output-weights");
    if (!m->bias) ARG(G_MODEL, "--disable-bias-linear");
    if (!m->bias && m->qkv_bias) ARG(G_MODEL, "--add-qkv-bias");
    if (!m->bias && (m->out_bias || m->mlp_bias))
        mg_note(g, "the model has biases on the attention output or the MLPs only: Megatron's command line has "
                   "them on every linear layer or none (--disable-bias-linear written)");
    if (m->qk_norm != PP_QKNORM_NONE) ARG(G_MODEL, "--qk-layernorm");
    if (m->qk_norm == PP_QKNORM_FULL)
        mg_note(g, "the model normalises q and k over their whole width (OLMo 2); Megatron's --qk-layernorm "
                   "normalises per head");
    if (m->attn_sinks) ARGV(G_MODEL, "--softmax-type", "%s", "learnable");
    if (m->norms_per_layer > 2)
        mg_note(g, "the model's extra post-norms (Gemma) have no Megatron GPT flag: not written");
    /* dropout: the stack's, else the model's own (pp_work_dropout); written always, since
     * Megatron's default is 0.1 */
    double attn_drop = 0, hidden_drop = 0;
    pp_work_dropout(w, &attn_drop, &hidden_drop);
    char pa[32], ph[32];
    ARGV(G_MODEL, "--attention-dropout", "%s", prob(attn_drop, pa, sizeof pa));
    ARGV(G_MODEL, "--hidden-dropout", "%s", prob(hidden_drop, ph, sizeof ph));
    ARGV(G_MODEL, "--seq-length", "%lld", (long long)m->seq);
    ARGV(G_MODEL, "--max-position-embeddings", "%lld", (long long)m->seq);
    if (pp_model_is_mla(m)) {
        /* DeepSeek-V2 MLA (Megatron's MLATransformerConfig): qk_head_dim is the no-RoPE part */
        ARG(G_MODEL, "--multi-latent-attention");
        if (m->q_lora_rank > 0) ARGV(G_MODEL, "--q-lora-rank", "%lld", (long long)m->q_lora_rank);
        ARGV(G_MODEL, "--kv-lora-rank", "%lld", (long long)m->kv_lora_rank);
        ARGV(G_MODEL, "--qk-head-dim", "%lld", (long long)m->qk_nope_dim);
        ARGV(G_MODEL, "--qk-pos-emb-head-dim", "%lld", (long long)m->qk_rope_dim);
        ARGV(G_MODEL, "--v-head-dim", "%lld", (long long)m->v_head_dim);
    }
    if (m->mtp_layers > 0) ARGV(G_MODEL, "--mtp-num-layers", "%lld", (long long)m->mtp_layers);
    char pat[4096];
    if (m->window > 0) {
        /* Transformer Engine's (left, right) window: causal, `window` tokens back */
        ARGV(G_MODEL, "--window-size", "%lld,0", (long long)m->window);
        if (m->window_full_every > 0) {
            /* utils.py is_layer_window_attention: an integer N makes 1-based layer n full when
             * n % N == 0, i.e. 0-based phase N - 1; any other phase as the list (1 = windowed) */
            if (m->window_full_phase == m->window_full_every - 1) {
                ARGV(G_MODEL, "--window-attn-skip-freq", "%lld", (long long)m->window_full_every);
            } else {
                bool *pt = layer_pattern(m, true);
                if (!pt) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
                pattern_expr(pt, m->layers, pat, sizeof pat);
                free(pt);
                ARGV(G_MODEL, "--window-attn-skip-freq", "%s", pat);
            }
        }
    }
    if (pp_model_is_moe(m)) {
        const pp_stack *s = &w->stack;
        ARGV(G_MODEL, "--num-experts", "%lld", (long long)m->experts);
        ARGV(G_MODEL, "--moe-router-topk", "%lld", (long long)(m->topk > 0 ? m->topk : 1));
        ARGV(G_MODEL, "--moe-ffn-hidden-size", "%lld", (long long)pp_model_expert_ffn(m));
        if (m->shared_ffn > 0)
            ARGV(G_MODEL, "--moe-shared-expert-intermediate-size", "%lld", (long long)m->shared_ffn);
        if (m->shared_gate) ARG(G_MODEL, "--moe-shared-expert-gate");
        if (m->router_bias) {
            /* DeepSeek-V3's aux-loss-free expert bias; Megatron allows it with sigmoid scores only */
            ARG(G_MODEL, "--moe-router-enable-expert-bias");
            ARGV(G_MODEL, "--moe-router-score-function", "%s", "sigmoid");
        }
        bool *pt = layer_pattern(m, false);
        if (!pt) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        bool all = true;
        for (int64_t i = 0; i < m->layers; i++) all &= pt[i];
        if (!all) {
            pattern_expr(pt, m->layers, pat, sizeof pat);
            ARGV(G_MODEL, "--moe-layer-freq", "%s", pat);
        }
        free(pt);
        ARGV(G_MODEL, "--moe-token-dispatcher-type", "%s", pp_dispatch_names[s->dispatcher]);
        if (s->grouped_gemm) ARG(G_MODEL, "--moe-grouped-gemm");
        if (s->ep_overlap) ARG(G_MODEL, "--overlap-moe-expert-parallel-comm");
        if (s->moe_capacity_factor > 0)
            ARGV(G_MODEL, "--moe-expert-capacity-factor", "%.6g", s->moe_capacity_factor);
    }

    /* -- parallel layout */
    ARGV(G_PARALLEL, "--tensor-model-parallel-size", "%lld", (long long)l->tp);
    ARGV(G_PARALLEL, "--pipeline-model-parallel-size", "%lld", (long long)l->pp);
    bool even = stages_even(w, l);
    if (l->pp > 1 && (!even || (l->vpp > 1 && (m->layers % (l->pp * l->vpp))))) {
        /* uneven stages (the ILP's, or a remainder): Megatron takes the layout string and
         * derives vpp from its length */
        char lay[1024];
        st = layout_string(w, l, lay, sizeof lay, err);
        if (st != PP_OK) return st;
        ARGV(G_PARALLEL, "--pipeline-model-parallel-layout", "%s", lay);
    } else if (l->vpp > 1) {
        ARGV(G_PARALLEL, "--num-layers-per-virtual-pipeline-stage", "%lld",
             (long long)(m->layers / (l->pp * l->vpp)));
    }
    ARGV(G_PARALLEL, "--context-parallel-size", "%lld", (long long)l->cp);
    if (m->experts > 1) {
        ARGV(G_PARALLEL, "--expert-model-parallel-size", "%lld", (long long)l->ep);
        ARGV(G_PARALLEL, "--expert-tensor-parallel-size", "%lld", (long long)pp_layout_etp(l));
    }
    if (l->sp) ARG(G_PARALLEL, "--sequence-parallel");

    /* -- batch */
    ARGV(G_BATCH, "--micro-batch-size", "%lld", (long long)l->mbs);
    ARGV(G_BATCH, "--global-batch-size", "%lld", (long long)w->gbs);

    /* -- optimizer sharding, recompute, offload */
    if (l->dist_opt) ARG(G_MEMORY, "--use-distributed-optimizer");
    if (l->recompute == PP_RC_SELECTIVE) {
        ARGV(G_MEMORY, "--recompute-granularity", "%s", "selective");
        if (l->recompute_modules && l->recompute_modules != 1u << PP_RCM_CORE_ATTN) {
            /* argparse nargs='*': the module names as separate words (plain identifiers) */
            char mods[160] = "";
            for (int i = 0; i < PP_RCM_COUNT; i++)
                if (l->recompute_modules & (1u << i))
                    snprintf(mods + strlen(mods), sizeof mods - strlen(mods), "%s%s", mods[0] ? " " : "",
                             pp_rc_module_names[i]);
            ARGRAW(G_MEMORY, "--recompute-modules", "%s", mods);
        }
    } else if (l->recompute == PP_RC_FULL) {
        int64_t kmax = 0;
        bool all = true, same = true;
        int64_t k0 = stage_recompute(w, l, 0);
        for (int64_t i = 0; i < l->pp; i++) {
            int64_t k = stage_recompute(w, l, i);
            if (k > kmax) kmax = k;
            if (k != pp_layout_stage_layers(w, l, i)) all = false;
            if (k != k0) same = false;
        }
        if (kmax == 0) {
            mg_note(g, "recompute full with 0 layers on every stage: no recompute flags emitted");
        } else if (all) {
            ARGV(G_MEMORY, "--recompute-granularity", "%s", "full");
            ARGV(G_MEMORY, "--recompute-method", "%s", "uniform");
            ARGV(G_MEMORY, "--recompute-num-layers", "%d", 1);
        } else {
            /* block: the first K layers of each stage (of each model chunk under vpp) */
            int64_t per_chunk = (kmax + l->vpp - 1) / l->vpp;
            ARGV(G_MEMORY, "--recompute-granularity", "%s", "full");
            ARGV(G_MEMORY, "--recompute-method", "%s", "block");
            ARGV(G_MEMORY, "--recompute-num-layers", "%lld", (long long)per_chunk);
            if (!same)
                mg_note(g, "Megatron recomputes the same number of layers on every stage: the plan's "
                           "per-stage counts differ, so every stage recomputes %lld (the largest); "
                           "stages planned with fewer use less memory and more time than predicted",
                        (long long)kmax);
            if (l->vpp > 1 && kmax % l->vpp)
                mg_note(g, "with %lld virtual stages, block recompute applies per model chunk: %lld "
                           "per chunk = %lld per stage (planned %lld)",
                        (long long)l->vpp, (long long)per_chunk, (long long)(per_chunk * l->vpp),
                        (long long)kmax);
        }
    }
    if (l->offload == PP_OFF_OPTIMIZER) {
        ARG(G_MEMORY, "--optimizer-cpu-offload");
        ARGV(G_MEMORY, "--optimizer-offload-fraction", "%s", "1.0");
        ARG(G_MEMORY, "--use-precision-aware-optimizer");
    }

    /* -- precision, overlap */
    const pp_stack *s = &w->stack;
    ARG(G_PRECISION, s->precision == PP_PREC_FP16 ? "--fp16" : "--bf16");
    if (s->precision == PP_PREC_FP8) {
        /* Transformer Engine FP8: E4M3 forward, E5M2 gradients ("hybrid"); delayed scaling is
         * Megatron's default recipe (Blackwell GPUs can use --fp8-recipe mxfp8) */
        ARGV(G_PRECISION, "--fp8-format", "%s", "hybrid");
        ARGV(G_PRECISION, "--fp8-recipe", "%s", "delayed");
    }
    /* Megatron overlaps nothing unless asked (arguments.py): --no-overlap writes no overlap flag,
     * and turns the interleaved schedule's send/recv overlap (on by default) off */
    if (!s->no_overlap) {
        if (l->dp * l->cp > 1) ARG(G_PRECISION, "--overlap-grad-reduce");
        if (l->dist_opt && l->dp > 1) ARG(G_PRECISION, "--overlap-param-gather");
    } else if (l->vpp > 1) {
        ARG(G_PRECISION, "--no-overlap-p2p-communication");
    }
    if (s->tp_comm_overlap) ARG(G_PRECISION, "--tp-comm-overlap");
    if (s->grad_bf16) ARG(G_PRECISION, "--grad-reduce-in-bf16");
    /* The implementation the prediction assumed (pp_work_impl: --impl, else local for unfused
     * attention), so that the script read back predicts the same. */
    bool local_impl = pp_work_impl(w) == PP_IMPL_LOCAL;
    if (!local && local_impl) ARGV(G_PRECISION, "--transformer-impl", "%s", "local");
    else if (!local && w->attention == PP_ATTN_UNFUSED) ARGV(G_PRECISION, "--attention-backend", "%s", "unfused");

    /* -- data */
    if (local) {
        ARG(G_DATA, "--mock-data");
        ARGV(G_DATA, "--tokenizer-type", "%s", "NullTokenizer");
        ARGV(G_DATA, "--vocab-size", "%lld", (long long)m->vocab);
    } else {
        ARGRAW(G_DATA, "--data-path", "%s", "\"${DATA_PATH:?set DATA_PATH to a Megatron .bin/.idx prefix}\"");
        ARGV(G_DATA, "--split", "%s", "99,1,0");
        ARGRAW(G_DATA, "--tokenizer-type", "%s", "\"${TOKENIZER_TYPE:-HuggingFaceTokenizer}\"");
        ARGRAW(G_DATA, "--tokenizer-model", "%s", "\"${TOKENIZER_MODEL:?set TOKENIZER_MODEL (a tokenizer with the model vocabulary)}\"");
        int64_t mult = 128 * l->tp;
        mg_note(g, "vocabulary %lld comes from the tokenizer; Megatron pads it to a multiple of "
                   "128 x tp = %lld (%lld)",
                (long long)m->vocab, (long long)mult, (long long)((m->vocab + mult - 1) / mult * mult));
    }

    /* -- optimizer schedule */
    if (p->train_iters > 0) ARGV(G_TRAINING, "--train-iters", "%lld", (long long)p->train_iters);
    else if (local) ARGV(G_TRAINING, "--train-iters", "%d", 5);
    else ARGRAW(G_TRAINING, "--train-iters", "%s", "\"${TRAIN_ITERS:?set TRAIN_ITERS (optimizer steps)}\"");
    ARGRAW(G_TRAINING, "--lr", "%s", "\"${LR:-3.0e-4}\"");
    ARGRAW(G_TRAINING, "--min-lr", "%s", "\"${MIN_LR:-3.0e-5}\"");
    ARGV(G_TRAINING, "--lr-decay-style", "%s", "cosine");
    ARGV(G_TRAINING, "--lr-warmup-fraction", "%s", "0.01");
    ARGV(G_TRAINING, "--weight-decay", "%s", "0.1");
    ARGV(G_TRAINING, "--clip-grad", "%s", "1.0");
    ARGV(G_TRAINING, "--adam-beta1", "%s", "0.9");
    ARGV(G_TRAINING, "--adam-beta2", "%s", "0.95");
    ARGV(G_TRAINING, "--init-method-std", "%s", "0.02");

    /* -- checkpoints */
    if (!local) {
        ARGRAW(G_CHECKPOINT, "--save", "%s", "\"${CHECKPOINT_DIR:-checkpoints}\"");
        ARGRAW(G_CHECKPOINT, "--load", "%s", "\"${CHECKPOINT_DIR:-checkpoints}\"");
        ARGRAW(G_CHECKPOINT, "--save-interval", "%s", "\"${SAVE_INTERVAL:-1000}\"");
        ARGV(G_CHECKPOINT, "--ckpt-format", "%s", "torch_dist");
    }

    /* -- logging */
    ARGV(G_LOGGING, "--log-interval", "%d", local ? 1 : 10);
    ARG(G_LOGGING, "--log-throughput");
    ARGV(G_LOGGING, "--eval-interval", "%d", 1000);
    ARGV(G_LOGGING, "--eval-iters", "%d", local ? 0 : 10);
    /* the allocator figures (max allocated) after every iteration, for comparing with the plan */
    if (local) ARGV(G_LOGGING, "--log-memory-interval", "%d", 1);

    /* -- no Transformer Engine, no apex (megatron-on-device.md) */
    if (local) {
        ARGV(G_LOCAL, "--transformer-impl", "%s", "local");
        ARG(G_LOCAL, "--no-persist-layer-norm");
        ARG(G_LOCAL, "--no-masked-softmax-fusion");
        ARG(G_LOCAL, "--no-gradient-accumulation-fusion");
        if (m->pos == PP_POS_ROPE) ARG(G_LOCAL, "--no-rope-fusion");
        /* the bias-activation and bias-dropout-add fusions go through torch.compile without TE:
         * a slow first iteration, and eager ops keep the saved tensors the memory model counts */
        if (m->act == PP_ACT_SWIGLU) ARG(G_LOCAL, "--no-bias-swiglu-fusion");
        else ARG(G_LOCAL, "--no-bias-gelu-fusion");
        ARG(G_LOCAL, "--no-bias-dropout-fusion");
        if (w->attention == PP_ATTN_FLASH)
            mg_note(g, "device-local runs Megatron's unfused local attention; the prediction above "
                       "assumes flash attention (predict with --attention unfused to compare)");
    }
    if (g->overflow) return pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0, "launch: argument list overflow");
    return PP_OK;
}

/* Shell word: plain when safe, else single-quoted. */
static void sh_word(sbuf *b, const char *s)
{
    bool plain = *s != 0;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              strchr("._/:,=+-@%", *c)))
            plain = false;
    if (plain) {
        sb_printf(b, "%s", s);
        return;
    }
    sb_printf(b, "'");
    for (const char *c = s; *c; c++) {
        if (*c == '\'') sb_printf(b, "'\\''");
        else sb_printf(b, "%c", *c);
    }
    sb_printf(b, "'");
}

static void mg_arg_write(sbuf *b, const mg_arg *a)
{
    sb_printf(b, "%s", a->flag);
    if (a->value[0]) {
        sb_printf(b, " ");
        if (a->raw) sb_printf(b, "%s", a->value);
        else sh_word(b, a->value);
    }
}

pp_status pp_launch_megatron_args(const pp_launch_params *p, char *buf, size_t n, pp_error *err)
{
    mg_list *g = malloc(sizeof *g);
    if (!g) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    sbuf b = {0};
    pp_status st = megatron_build(p, g, err);
    if (st == PP_OK) {
        for (int i = 0; i < g->n; i++) {
            if (i) sb_printf(&b, " ");
            mg_arg_write(&b, &g->a[i]);
        }
        if (b.oom) st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        else if (b.len + 1 > n)
            st = pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0, "launch: buffer of %zu bytes too small", n);
        else memcpy(buf, b.s ? b.s : "", b.len + 1);
    }
    sb_free(&b);
    free(g);
    return st;
}

static void write_arrays(sbuf *b, const mg_list *g)
{
    for (int grp = 0; grp < G_COUNT; grp++) {
        int count = 0;
        for (int i = 0; i < g->n; i++) count += g->a[i].group == grp;
        if (!count) continue;
        sb_printf(b, "# %s\n%s=(\n", group_titles[grp], group_names[grp]);
        for (int i = 0; i < g->n; i++) {
            if (g->a[i].group != grp) continue;
            sb_printf(b, "    ");
            mg_arg_write(b, &g->a[i]);
            sb_printf(b, "\n");
        }
        sb_printf(b, ")\n");
    }
}

static void write_array_refs(sbuf *b, const mg_list *g)
{
    for (int grp = 0; grp < G_COUNT; grp++) {
        int count = 0;
        for (int i = 0; i < g->n; i++) count += g->a[i].group == grp;
        if (count) sb_printf(b, " \\\n    \"${%s[@]}\"", group_names[grp]);
    }
    sb_printf(b, " \\\n    \"$@\"\n");
}

static void write_env(sbuf *b, const pp_launch_params *p)
{
    sb_printf(b, "# Megatron-LM needs one CUDA connection per device so that TP/CP communication and\n"
                 "# compute kernels are issued in order (validate_args asserts it for TP or CP > 1).\n");
    sb_printf(b, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n");
    if (p->target == PP_TARGET_DEVICE_LOCAL)
        sb_printf(b, "# NVLink multicast off (not available on the lent machines)\n"
                     "export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1\n");
    char dir[600];
    if (p->megatron_dir) {
        sb_printf(b, "MEGATRON_LM=${MEGATRON_LM:-");
        sanitize(p->megatron_dir, dir, sizeof dir, false);
        sh_word(b, dir);
        sb_printf(b, "}\n");
    } else {
        sb_printf(b, "MEGATRON_LM=${MEGATRON_LM:-.}   # the Megatron-LM checkout holding pretrain_gpt.py\n");
    }
}

static void write_notes(sbuf *b, const mg_list *g)
{
    for (int i = 0; i < g->nnotes; i++) sb_printf(b, "# note: %s\n", g->notes[i]);
}

static pp_status write_megatron_like(pp_launch_format fmt, const pp_launch_params *p, sbuf *b,
                                     pp_error *err)
{
    mg_list *g = malloc(sizeof *g);
    if (!g) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    pp_status st = megatron_build(p, g, err);
    if (st != PP_OK) {
        free(g);
        return st;
    }
    const pp_work *w = p->work;
    int64_t nodes = layout_nodes(w), gpn = layout_gpn(w);
    char job[64];
    if (fmt == PP_LAUNCH_SLURM) {
        sanitize(w->model.name, job, sizeof job, true);
        sb_printf(b, "#!/bin/bash\n");
        sb_printf(b, "#SBATCH --job-name=parplan-%s\n", job[0] ? job : "train");
        sb_printf(b, "#SBATCH --nodes=%lld\n", (long long)nodes);
        sb_printf(b, "#SBATCH --ntasks-per-node=1\n");
        sb_printf(b, "#SBATCH --gpus-per-node=%lld\n", (long long)gpn);
        sb_printf(b, "#SBATCH --exclusive\n");
    } else {
        sb_printf(b, "#!/usr/bin/env bash\n");
    }
    write_header(b, "#", fmt, p);
    write_notes(b, g);
    if (fmt == PP_LAUNCH_MEGATRON && nodes > 1)
        sb_printf(b, "# Run on every node (NODE_RANK 0..%lld); torchrun starts %lld processes per node.\n",
                  (long long)(nodes - 1), (long long)gpn);
    else if (fmt == PP_LAUNCH_MEGATRON)
        sb_printf(b, "# Run on the node; torchrun starts %lld processes.\n", (long long)gpn);
    else if (fmt == PP_LAUNCH_TORCHRUN)
        sb_printf(b, "# Run once on every node; the c10d rendezvous at MASTER_ADDR:MASTER_PORT gathers the "
                     "%lld nodes.\n", (long long)nodes);
    else
        sb_printf(b, "# Submit with sbatch; srun starts one torchrun per node, which rendezvous at the first node.\n");
    sb_printf(b, "set -euo pipefail\n\n");
    write_env(b, p);
    sb_printf(b, "GPUS_PER_NODE=%lld\nNNODES=%lld\n", (long long)gpn, (long long)nodes);
    if (fmt == PP_LAUNCH_MEGATRON) {
        if (nodes > 1)
            sb_printf(b, "NODE_RANK=${NODE_RANK:?set NODE_RANK (0..%lld) on each node}\n"
                         "MASTER_ADDR=${MASTER_ADDR:?set MASTER_ADDR to node 0}\n",
                      (long long)(nodes - 1));
        else
            sb_printf(b, "NODE_RANK=0\nMASTER_ADDR=${MASTER_ADDR:-localhost}\n");
        sb_printf(b, "MASTER_PORT=${MASTER_PORT:-6000}\n\n");
    } else if (fmt == PP_LAUNCH_TORCHRUN) {
        if (nodes > 1) sb_printf(b, "MASTER_ADDR=${MASTER_ADDR:?set MASTER_ADDR to the rendezvous host}\n");
        else sb_printf(b, "MASTER_ADDR=${MASTER_ADDR:-localhost}\n");
        /* the same id on every node (a per-process value would split the rendezvous) */
        sanitize(w->model.name, job, sizeof job, true);
        sb_printf(b, "MASTER_PORT=${MASTER_PORT:-29500}\nRDZV_ID=${RDZV_ID:-parplan-%s}\n\n",
                  job[0] ? job : "train");
    } else {
        sb_printf(b, "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
                     "MASTER_PORT=${MASTER_PORT:-29500}\n\n");
    }
    write_arrays(b, g);
    sb_printf(b, "\n");
    if (fmt == PP_LAUNCH_MEGATRON) {
        sb_printf(b, "torchrun --nproc-per-node \"$GPUS_PER_NODE\" --nnodes \"$NNODES\" --node-rank \"$NODE_RANK\" \\\n"
                     "    --master-addr \"$MASTER_ADDR\" --master-port \"$MASTER_PORT\" \\\n"
                     "    \"$MEGATRON_LM/pretrain_gpt.py\"");
    } else if (fmt == PP_LAUNCH_TORCHRUN) {
        sb_printf(b, "torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" \\\n"
                     "    --rdzv-id \"$RDZV_ID\" --rdzv-backend c10d --rdzv-endpoint \"$MASTER_ADDR:$MASTER_PORT\" \\\n"
                     "    \"$MEGATRON_LM/pretrain_gpt.py\"");
    } else {
        sb_printf(b, "srun --kill-on-bad-exit=1 --ntasks-per-node=1 \\\n"
                     "    torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" \\\n"
                     "    --rdzv-id \"$SLURM_JOB_ID\" --rdzv-backend c10d --rdzv-endpoint \"$MASTER_ADDR:$MASTER_PORT\" \\\n"
                     "    \"$MEGATRON_LM/pretrain_gpt.py\"");
    }
    write_array_refs(b, g);
    free(g);
    return PP_OK;
}

/* ------------------------------------------------------------------ DeepSpeed */

static pp_status deepspeed_stage(const pp_launch_params *p, int *stage, pp_error *err)
{
    const pp_layout *l = p->layout;
    int z = l->zero;
    if (l->dist_opt) z = 1; /* Megatron's distributed optimizer shards optimizer state = ZeRO-1 */
    if (l->offload == PP_OFF_OPTIMIZER && z < 1)
        return BAD("DeepSpeed offloads the optimizer only under ZeRO (stage 1-3): add --zero 1 or more");
    if (l->offload == PP_OFF_PARAMS && z < 3)
        return BAD("DeepSpeed offloads parameters only under ZeRO-3: use --zero 3");
    if (z >= 2 && l->pp > 1)
        return BAD("DeepSpeed does not combine ZeRO stage %d with pipeline parallelism", z);
    if (l->cp > 1)
        return BAD("--cp %lld: DeepSpeed's config has no context parallelism (use --format megatron)",
                   (long long)l->cp);
    if (p->work->stack.precision == PP_PREC_FP8)
        return BAD("--precision fp8: DeepSpeed's config has no FP8 setting (Transformer Engine FP8 is the training "
                   "script's; use --format megatron or nemo)");
    *stage = z;
    return check_cluster(p->work, err);
}

static void write_ds_json(sbuf *b, const pp_launch_params *p, int stage)
{
    const pp_work *w = p->work;
    const pp_layout *l = p->layout;
    double h = (double)w->model.hidden;
    char t1[32], t2[32];
    sb_printf(b, "{\n");
    sb_printf(b, "  \"_comment\": \"Generated by parplan %s (launch --format deepspeed); predicted peak %s "
                 "allocated on the largest rank, step ",
              PP_VERSION, gib(p->peak_bytes, t1, sizeof t1));
    if (known(p->step_time_s)) sb_printf(b, "%.3f s", p->step_time_s);
    else sb_printf(b, "not predicted");
    if (known(p->samples_per_s)) sb_printf(b, ", %.2f samples/s", p->samples_per_s);
    sb_printf(b, "; layout tp %lld pp %lld dp %lld, capacity %s\",\n", (long long)l->tp,
              (long long)l->pp, (long long)l->dp,
              gib(p->capacity_bytes >= 0 ? p->capacity_bytes : w->gpu.memory_bytes, t2, sizeof t2));
    sb_printf(b, "  \"train_batch_size\": %lld,\n", (long long)w->gbs);
    sb_printf(b, "  \"train_micro_batch_size_per_gpu\": %lld,\n", (long long)l->mbs);
    sb_printf(b, "  \"gradient_accumulation_steps\": %lld,\n", (long long)pp_layout_microbatches(w, l));
    sb_printf(b, "  \"gradient_clipping\": 1.0,\n");
    sb_printf(b, "  \"steps_per_print\": 10,\n");
    sb_printf(b, "  \"wall_clock_breakdown\": false,\n");
    if (w->stack.precision == PP_PREC_FP16)
        /* dynamic loss scaling (loss_scale 0), DeepSpeed's default window and start */
        sb_printf(b, "  \"fp16\": {\n    \"enabled\": true,\n    \"loss_scale\": 0,\n    \"loss_scale_window\": 1000,\n"
                     "    \"initial_scale_power\": 16\n  },\n");
    else
        sb_printf(b, "  \"bf16\": {\n    \"enabled\": true\n  },\n");
    sb_printf(b, "  \"zero_optimization\": {\n");
    sb_printf(b, "    \"stage\": %d,\n", stage);
    sb_printf(b, "    \"overlap_comm\": %s,\n", w->stack.no_overlap ? "false" : "true");
    sb_printf(b, "    \"contiguous_gradients\": true,\n");
    sb_printf(b, "    \"reduce_scatter\": true,\n");
    sb_printf(b, "    \"reduce_bucket_size\": %.0f,\n", h * h);
    if (stage <= 2) sb_printf(b, "    \"allgather_bucket_size\": %.0f", h * h);
    if (stage == 3) {
        sb_printf(b, "    \"stage3_prefetch_bucket_size\": %.0f,\n", floor(0.9 * h * h));
        sb_printf(b, "    \"stage3_param_persistence_threshold\": %.0f,\n", 10 * h);
        sb_printf(b, "    \"stage3_max_live_parameters\": 1000000000,\n");
        sb_printf(b, "    \"stage3_gather_16bit_weights_on_model_save\": true");
    }
    if (l->offload >= PP_OFF_OPTIMIZER)
        sb_printf(b, ",\n    \"offload_optimizer\": {\n      \"device\": \"cpu\",\n      \"pin_memory\": true\n    }");
    if (l->offload == PP_OFF_PARAMS)
        sb_printf(b, ",\n    \"offload_param\": {\n      \"device\": \"cpu\",\n      \"pin_memory\": true\n    }");
    sb_printf(b, "\n  }");
    if (l->recompute == PP_RC_FULL) {
        /* used by scripts that checkpoint through deepspeed.checkpointing (Megatron-DeepSpeed) */
        sb_printf(b, ",\n  \"activation_checkpointing\": {\n");
        sb_printf(b, "    \"partition_activations\": %s,\n", l->tp > 1 ? "true" : "false");
        sb_printf(b, "    \"contiguous_memory_optimization\": false,\n");
        sb_printf(b, "    \"cpu_checkpointing\": false,\n");
        sb_printf(b, "    \"synchronize_checkpoint_boundary\": false,\n");
        sb_printf(b, "    \"profile\": false\n  }");
    }
    sb_printf(b, "\n}\n");
}

static void write_ds_launcher(sbuf *b, const pp_launch_params *p, bool embed_json, int stage)
{
    const pp_work *w = p->work;
    const pp_layout *l = p->layout;
    int64_t nodes = layout_nodes(w), gpn = layout_gpn(w);
    sb_printf(b, "#!/usr/bin/env bash\n");
    write_header(b, "#", PP_LAUNCH_DEEPSPEED, p);
    sb_printf(b, "# DeepSpeed ZeRO-%d, %lld micro-batch x %lld accumulation steps x %lld data-parallel "
                 "= %lld sequences per step.\n",
              stage, (long long)l->mbs, (long long)pp_layout_microbatches(w, l), (long long)l->dp,
              (long long)w->gbs);
    if (l->tp > 1 || l->pp > 1 || (w->model.experts > 1 && l->ep > 1))
        sb_printf(b, "# The training script builds the model-parallel groups itself: pass it tensor "
                     "parallel %lld, pipeline parallel %lld%s\n"
                     "# (Megatron-DeepSpeed: --tensor-model-parallel-size %lld "
                     "--pipeline-model-parallel-size %lld).\n",
                  (long long)l->tp, (long long)l->pp, l->ep > 1 ? ", expert parallel as planned" : "",
                  (long long)l->tp, (long long)l->pp);
    sb_printf(b, "# DeepSpeed checks train_batch_size = micro-batch x accumulation x data-parallel size, the\n"
                 "# data-parallel size from the model-parallel unit (mpu) given to deepspeed.initialize.\n");
    if (l->recompute == PP_RC_SELECTIVE)
        sb_printf(b, "# Selective recompute (attention core only) is the training script's to enable.\n");
    double attn_drop = 0, hidden_drop = 0;
    pp_work_dropout(w, &attn_drop, &hidden_drop);
    char pa[32], ph[32];
    sb_printf(b, "# The model (the training script's): attention dropout %s, hidden dropout %s",
              prob(attn_drop, pa, sizeof pa), prob(hidden_drop, ph, sizeof ph));
    if (pp_model_is_moe(&w->model))
        sb_printf(b, "; MoE (deepspeed.moe.layer.MoE): %lld experts, top-%lld, ep_size %lld, capacity factor %s",
                  (long long)w->model.experts, (long long)w->model.topk, (long long)l->ep,
                  w->stack.moe_capacity_factor > 0 ? "as planned" : "none (drop_tokens=False)");
    sb_printf(b, ".\n");
    sb_printf(b, "set -euo pipefail\n\n");
    if (embed_json) {
        sb_printf(b, "DS_CONFIG=${DS_CONFIG:-ds_config.json}\n");
        sb_printf(b, "cat > \"$DS_CONFIG\" <<'PARPLAN_DS_CONFIG'\n");
        write_ds_json(b, p, stage);
        sb_printf(b, "PARPLAN_DS_CONFIG\n\n");
    } else {
        sb_printf(b, "DS_CONFIG=${DS_CONFIG:-\"$(dirname \"$0\")/ds_config.json\"}\n");
    }
    if (nodes > 1)
        sb_printf(b, "# A hostfile lists the %lld nodes, one per line: \"<host> slots=%lld\".\n"
                     "HOSTFILE=${HOSTFILE:?set HOSTFILE (DeepSpeed hostfile of %lld nodes)}\n",
                  (long long)nodes, (long long)gpn, (long long)nodes);
    sb_printf(b, "TRAIN_SCRIPT=${TRAIN_SCRIPT:?set TRAIN_SCRIPT (a script that calls deepspeed.initialize)}\n\n");
    sb_printf(b, "deepspeed --num_nodes %lld --num_gpus %lld", (long long)nodes, (long long)gpn);
    if (nodes > 1) sb_printf(b, " --hostfile \"$HOSTFILE\"");
    sb_printf(b, " --master_port \"${MASTER_PORT:-29500}\" \\\n"
                 "    \"$TRAIN_SCRIPT\" --deepspeed --deepspeed_config \"$DS_CONFIG\" \"$@\"\n");
}

/* ------------------------------------------------------------------ NeMo */

static pp_status write_nemo(const pp_launch_params *p, sbuf *b, pp_error *err)
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
    if (stk->tp_comm_overlap && !l->sp) return BAD("--tp-comm-overlap needs --sp");
    if (l->pp > 1 && !stages_even(w, l))
        return BAD("NeMo's config splits layers evenly over the %lld pipeline stages: uneven stages "
                   "(%s) cannot be written (use --format megatron)",
                   (long long)l->pp, l->stage_layers ? "from the ILP" : "layers not divisible by --pp");
    pp_status st = check_cluster(w, err);
    if (st != PP_OK) return st;
    int64_t nodes = layout_nodes(w), gpn = layout_gpn(w);
    write_header(b, "#", PP_LAUNCH_NEMO, p);
    sb_printf(b, "# NeMo 1.x Megatron GPT (megatron_gpt_config.yaml) overrides: merge into the config, or\n"
                 "# pass each key as a Hydra override, e.g. trainer.devices=%lld model.tensor_model_parallel_size=%lld\n",
              (long long)gpn, (long long)l->tp);
    sb_printf(b, "trainer:\n");
    sb_printf(b, "  devices: %lld\n", (long long)gpn);
    sb_printf(b, "  num_nodes: %lld\n", (long long)nodes);
    sb_printf(b, "  precision: %s\n", stk->precision == PP_PREC_FP16 ? "16-mixed" : "bf16-mixed");
    sb_printf(b, "  accumulate_grad_batches: 1  # NeMo accumulates global_batch_size / (micro x dp) = %lld itself\n",
              (long long)pp_layout_microbatches(w, l));
    sb_printf(b, "model:\n");
    sb_printf(b, "  mcore_gpt: true\n");
    sb_printf(b, "  micro_batch_size: %lld\n", (long long)l->mbs);
    sb_printf(b, "  global_batch_size: %lld\n", (long long)w->gbs);
    sb_printf(b, "  tensor_model_parallel_size: %lld\n", (long long)l->tp);
    sb_printf(b, "  pipeline_model_parallel_size: %lld\n", (long long)l->pp);
    if (l->vpp > 1) sb_printf(b, "  virtual_pipeline_model_parallel_size: %lld\n", (long long)l->vpp);
    else sb_printf(b, "  virtual_pipeline_model_parallel_size: null\n");
    sb_printf(b, "  context_parallel_size: %lld\n", (long long)l->cp);
    if (m->experts > 1) {
        sb_printf(b, "  expert_model_parallel_size: %lld\n", (long long)l->ep);
        sb_printf(b, "  expert_tensor_parallel_size: %lld\n", (long long)pp_layout_etp(l));
    }
    sb_printf(b, "  sequence_parallel: %s\n", l->sp ? "true" : "false");
    sb_printf(b, "  encoder_seq_length: %lld\n", (long long)m->seq);
    sb_printf(b, "  max_position_embeddings: %lld\n", (long long)m->seq);
    sb_printf(b, "  num_layers: %lld\n", (long long)m->layers);
    sb_printf(b, "  hidden_size: %lld\n", (long long)m->hidden);
    sb_printf(b, "  ffn_hidden_size: %lld\n", (long long)m->ffn);
    sb_printf(b, "  num_attention_heads: %lld\n", (long long)m->heads);
    if (m->kv_heads > 0 && m->kv_heads != m->heads)
        sb_printf(b, "  num_query_groups: %lld\n", (long long)m->kv_heads);
    else sb_printf(b, "  num_query_groups: null\n");
    if (!pp_model_is_mla(m) && m->head_dim > 0 && m->head_dim * m->heads != m->hidden)
        sb_printf(b, "  kv_channels: %lld\n", (long long)m->head_dim);
    sb_printf(b, "  normalization: %s\n", m->norm == PP_NORM_RMSNORM ? "rmsnorm" : "layernorm");
    sb_printf(b, "  activation: %s\n",
              m->act == PP_ACT_SWIGLU ? "fast-swiglu" : m->act == PP_ACT_RELU ? "relu" : "gelu");
    sb_printf(b, "  bias: %s\n", m->bias ? "true" : "false");
    if (!m->bias && m->qkv_bias) sb_printf(b, "  add_qkv_bias: true\n");
    if (m->qk_norm != PP_QKNORM_NONE) sb_printf(b, "  qk_layernorm: true\n");
    double attn_drop = 0, hidden_drop = 0;
    pp_work_dropout(w, &attn_drop, &hidden_drop);
    char pa[32], ph[32];
    sb_printf(b, "  hidden_dropout: %s\n  attention_dropout: %s\n", prob(hidden_drop, ph, sizeof ph),
              prob(attn_drop, pa, sizeof pa));
    /* TransformerEngine, FP8 and TP communication overlap (NeMo 1.x model keys) */
    sb_printf(b, "  transformer_engine: %s\n", pp_work_impl(w) == PP_IMPL_TE ? "true" : "false");
    if (stk->precision == PP_PREC_FP8) sb_printf(b, "  fp8: true\n  fp8_hybrid: true\n");
    if (stk->tp_comm_overlap) sb_printf(b, "  ub_tp_comm_overlap: true\n");
    if (pp_model_is_mla(m)) {
        sb_printf(b, "  multi_latent_attention: true\n");
        if (m->q_lora_rank > 0) sb_printf(b, "  q_lora_rank: %lld\n", (long long)m->q_lora_rank);
        sb_printf(b, "  kv_lora_rank: %lld\n  qk_head_dim: %lld\n  qk_pos_emb_head_dim: %lld\n  v_head_dim: %lld\n",
                  (long long)m->kv_lora_rank, (long long)m->qk_nope_dim, (long long)m->qk_rope_dim,
                  (long long)m->v_head_dim);
    }
    if (m->mtp_layers > 0) sb_printf(b, "  mtp_num_layers: %lld\n", (long long)m->mtp_layers);
    if (m->window > 0) {
        sb_printf(b, "  window_size: [%lld, 0]\n", (long long)m->window);
        if (m->window_full_every > 0) {
            /* TransformerConfig.window_attn_skip_freq: the list marks windowed layers with 1 */
            sb_printf(b, "  window_attn_skip_freq: [");
            for (int64_t i = 0; i < m->layers; i++)
                sb_printf(b, "%s%d", i ? ", " : "", pp_model_layer_is_window(m, i) ? 1 : 0);
            sb_printf(b, "]\n");
        }
    }
    sb_printf(b, "  position_embedding_type: %s\n",
              m->pos == PP_POS_ROPE ? "rope" : m->pos == PP_POS_ALIBI ? "alibi"
              : m->pos == PP_POS_NONE ? "none" : "learned_absolute");
    sb_printf(b, "  share_embeddings_and_output_weights: %s\n", m->tied ? "true" : "false");
    if (m->experts > 1) {
        sb_printf(b, "  num_moe_experts: %lld\n", (long long)m->experts);
        sb_printf(b, "  moe_router_topk: %lld\n", (long long)(m->topk > 0 ? m->topk : 1));
        sb_printf(b, "  moe_ffn_hidden_size: %lld\n", (long long)pp_model_expert_ffn(m));
        if (m->shared_ffn > 0)
            sb_printf(b, "  moe_shared_expert_intermediate_size: %lld\n", (long long)m->shared_ffn);
        if (m->shared_gate) sb_printf(b, "  moe_shared_expert_gate: true\n");
        if (m->router_bias) sb_printf(b, "  moe_router_enable_expert_bias: true\n  moe_router_score_function: sigmoid\n");
        /* TransformerConfig.moe_layer_freq: an integer, or the list of MoE (1) and dense (0) layers */
        bool all = true;
        for (int64_t i = 0; i < m->layers; i++) all &= pp_model_layer_is_moe(m, i);
        if (all) {
            sb_printf(b, "  moe_layer_freq: 1\n");
        } else {
            sb_printf(b, "  moe_layer_freq: [");
            for (int64_t i = 0; i < m->layers; i++) sb_printf(b, "%s%d", i ? ", " : "", pp_model_layer_is_moe(m, i) ? 1 : 0);
            sb_printf(b, "]\n");
        }
        sb_printf(b, "  moe_token_dispatcher_type: %s\n", pp_dispatch_names[stk->dispatcher]);
        sb_printf(b, "  moe_grouped_gemm: %s\n", stk->grouped_gemm ? "true" : "false");
        if (stk->moe_capacity_factor > 0) sb_printf(b, "  moe_expert_capacity_factor: %.6g\n", stk->moe_capacity_factor);
    }
    if (l->recompute == PP_RC_SELECTIVE) {
        sb_printf(b, "  activations_checkpoint_granularity: selective\n");
        sb_printf(b, "  activations_checkpoint_method: null\n");
        sb_printf(b, "  activations_checkpoint_num_layers: null\n");
    } else if (l->recompute == PP_RC_FULL) {
        int64_t kmax = 0;
        bool all = true;
        for (int64_t i = 0; i < l->pp; i++) {
            int64_t k = stage_recompute(w, l, i);
            if (k > kmax) kmax = k;
            if (k != pp_layout_stage_layers(w, l, i)) all = false;
        }
        sb_printf(b, "  activations_checkpoint_granularity: full\n");
        if (all) {
            sb_printf(b, "  activations_checkpoint_method: uniform\n");
            sb_printf(b, "  activations_checkpoint_num_layers: 1\n");
        } else {
            sb_printf(b, "  activations_checkpoint_method: block\n");
            sb_printf(b, "  activations_checkpoint_num_layers: %lld\n",
                      (long long)((kmax + l->vpp - 1) / l->vpp));
        }
    } else {
        sb_printf(b, "  activations_checkpoint_granularity: null\n");
        sb_printf(b, "  activations_checkpoint_method: null\n");
        sb_printf(b, "  activations_checkpoint_num_layers: null\n");
    }
    sb_printf(b, "  optim:\n");
    sb_printf(b, "    name: %s\n", l->dist_opt ? "distributed_fused_adam" : "fused_adam");
    if (l->dist_opt) {
        bool ov = l->dp > 1 && !stk->no_overlap;
        sb_printf(b, "    overlap_grad_sync: %s\n", ov ? "true" : "false");
        sb_printf(b, "    overlap_param_sync: %s\n", ov ? "true" : "false");
    }
    return PP_OK;
}

/* ------------------------------------------------------------------ output */

pp_status pp_launch_write_file_atomic(const char *dir, const char *name, const char *data,
                                      size_t len, int mode, pp_error *err)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path ||
        snprintf(tmp, sizeof tmp, "%s/.%s.tmp.XXXXXX", dir, name) >= (int)sizeof tmp)
        return pp_error_set(err, PP_ERR_INPUT, dir, 0, 0, "output path too long");
    int fd = mkstemp(tmp);
    if (fd < 0)
        return pp_error_set(err, PP_ERR_RUNTIME, dir, 0, 0, "cannot create a file in the directory: %s",
                            strerror(errno));
    pp_status st = PP_OK;
    size_t off = 0;
    while (off < len) {
        ssize_t k = write(fd, data + off, len - off);
        if (k < 0) {
            if (errno == EINTR) continue;
            st = pp_error_set(err, PP_ERR_RUNTIME, tmp, 0, 0, "write failed: %s", strerror(errno));
            goto cleanup;
        }
        off += (size_t)k;
    }
    if (fchmod(fd, (mode_t)mode) != 0 || fsync(fd) != 0) {
        st = pp_error_set(err, PP_ERR_RUNTIME, tmp, 0, 0, "fsync/chmod failed: %s", strerror(errno));
        goto cleanup;
    }
    if (close(fd) != 0) {
        fd = -1;
        st = pp_error_set(err, PP_ERR_RUNTIME, tmp, 0, 0, "close failed: %s", strerror(errno));
        goto cleanup;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        st = pp_error_set(err, PP_ERR_RUNTIME, path, 0, 0, "rename failed: %s", strerror(errno));
        goto cleanup;
    }
    /* make the rename itself durable */
    int dfd = open(dir, O_RDONLY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
cleanup:
    if (fd >= 0) close(fd);
    if (st != PP_OK) unlink(tmp);
    return st;
}

static pp_status ensure_dir(const char *dir, pp_error *err)
{
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode))
            return pp_error_set(err, PP_ERR_INPUT, dir, 0, 0, "-o expects a directory, this is a file");
        return PP_OK;
    }
    if (mkdir(dir, 0777) != 0)
        return pp_error_set(err, PP_ERR_RUNTIME, dir, 0, 0, "cannot create the directory: %s",
                            strerror(errno));
    return PP_OK;
}

static pp_status check_params(const pp_launch_params *p, pp_error *err)
{
    if (!p || !p->work || !p->layout)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "launch: no work or layout");
    const pp_layout *l = p->layout;
    const pp_work *w = p->work;
    if (l->dp < 1 || l->tp < 1 || l->pp < 1 || l->cp < 1 || l->ep < 1 || l->vpp < 1 || l->mbs < 1)
        return BAD("launch: the layout is not validated (a parallel size below 1)");
    if (l->tp * l->pp * l->cp * l->dp != w->gpus)
        return BAD("tp*pp*cp*dp = %lld must equal --gpus %lld",
                   (long long)(l->tp * l->pp * l->cp * l->dp), (long long)w->gpus);
    if (l->pp > PP_MAX_STAGES) return BAD("--pp %lld is more than %d stages", (long long)l->pp, PP_MAX_STAGES);
    if ((int)p->target < 0 || p->target >= PP_TARGET_COUNT) return BAD("launch: unknown target");
    return PP_OK;
}

pp_status pp_launch_write(pp_launch_format fmt, const pp_launch_params *p, FILE *out,
                          const char *dir, pp_error *err)
{
    if ((int)fmt < 0 || fmt >= PP_LAUNCH_COUNT) return BAD("launch: unknown format %d", (int)fmt);
    if (!out == !dir) return BAD("launch: give either an output stream or a directory");
    pp_status st = check_params(p, err);
    if (st != PP_OK) return st;
    if (p->target == PP_TARGET_DEVICE_LOCAL && (fmt == PP_LAUNCH_DEEPSPEED || fmt == PP_LAUNCH_NEMO))
        return BAD("--launch-target device-local applies to the Megatron formats (megatron, torchrun, slurm)");

    sbuf files[2] = {{0}, {0}};
    int nfiles = 1;
    int stage = 0;
    switch (fmt) {
    case PP_LAUNCH_MEGATRON:
    case PP_LAUNCH_TORCHRUN:
    case PP_LAUNCH_SLURM:
        st = write_megatron_like(fmt, p, &files[0], err);
        break;
    case PP_LAUNCH_DEEPSPEED:
        st = deepspeed_stage(p, &stage, err);
        if (st != PP_OK) break;
        if (out) {
            write_ds_launcher(&files[0], p, true, stage);
        } else {
            write_ds_json(&files[0], p, stage);
            write_ds_launcher(&files[1], p, false, stage);
            nfiles = 2;
        }
        break;
    case PP_LAUNCH_NEMO:
        st = write_nemo(p, &files[0], err);
        break;
    case PP_LAUNCH_TORCHTITAN: /* launch_torchtitan.c */
        st = pp_launch_torchtitan(p, out != NULL, &files[0].s, &files[1].s, err);
        for (int i = 0; i < 2; i++) files[i].len = files[i].s ? strlen(files[i].s) : 0;
        nfiles = out ? 1 : 2;
        break;
    default:
        st = BAD("launch: unknown format");
    }
    if (st == PP_OK && (files[0].oom || files[1].oom))
        st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (st == PP_OK && out) {
        if (fwrite(files[0].s, 1, files[0].len, out) != files[0].len || fflush(out) != 0)
            st = pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0, "cannot write the output: %s", strerror(errno));
    } else if (st == PP_OK) {
        st = ensure_dir(dir, err);
        const char *const *names = pp_launch_files(fmt);
        for (int i = 0; st == PP_OK && i < nfiles; i++) {
            const char *nm = names[i];
            size_t nl = strlen(nm);
            bool script = (nl > 3 && strcmp(nm + nl - 3, ".sh") == 0) ||
                          (nl > 7 && strcmp(nm + nl - 7, ".sbatch") == 0);
            st = pp_launch_write_file_atomic(dir, nm, files[i].s, files[i].len, script ? 0755 : 0644, err);
        }
    }
    sb_free(&files[0]);
    sb_free(&files[1]);
    return st;
}
