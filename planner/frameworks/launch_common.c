/* What the launch writers share (launch_common.h): the names of the formats and targets, a
 * growable string, the cluster and stage arithmetic, and the header comment every format opens
 * with (parplan version, model, cluster, stack, layout, predicted memory and throughput). */
#include "launch_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD(...) pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, __VA_ARGS__)

#define NAME_(id, name, sep) [PP_LAUNCH_##id] = name,
const char *const pp_launch_format_names[PP_LAUNCH_COUNT] = {PP_LAUNCH_FORMATS(NAME_)};

/* The framework version each format targets, as its header says: every key it writes is checked
 * against that version's definitions (tests/frameworks: megatron_flags.txt, config_names.txt, ...). */
#define MEGATRON_LM "Megatron-LM d98e8a64 (2026-08-22)"
static const char *const format_targets[PP_LAUNCH_COUNT] = {
    [PP_LAUNCH_MEGATRON] = MEGATRON_LM,
    [PP_LAUNCH_TORCHRUN] = MEGATRON_LM,
    [PP_LAUNCH_SLURM] = MEGATRON_LM,
    [PP_LAUNCH_DEEPSPEED] = "DeepSpeed 0.16.4+ (38327e07, 2025-02-21)",
    [PP_LAUNCH_NEMO] = "legacy: NeMo 1.23.0 with Megatron-Core 0.5.0",
    [PP_LAUNCH_TORCHTITAN] = "torchtitan main b5bcd76c (2026-08-21): a Trainer.Config function",
    [PP_LAUNCH_TORCHTITAN_TOML] = "legacy: torchtitan 0.2.x JobConfig",
    [PP_LAUNCH_MEGATRON_BRIDGE] = "Megatron-Bridge 067f987d (2026-08-22) with Megatron-LM 2a75ac12",
};

const char *pp_launch_format_target(pp_launch_format fmt)
{
    return (int)fmt >= 0 && fmt < PP_LAUNCH_COUNT && format_targets[fmt] ? format_targets[fmt] : "?";
}
#undef NAME_
const char *const pp_launch_target_names[PP_TARGET_COUNT] = {"standard", "device-local"};

/* ------------------------------------------------------------------ a growable string */

static void sb_vprintf(pp_sbuf *b, const char *fmt, va_list ap)
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

void pp_sbuf_printf(pp_sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

void pp_sbuf_free(pp_sbuf *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------------ helpers */

const char *pp_launch_prob(double v, char *buf, size_t n)
{
    snprintf(buf, n, "%.6g", v);
    if (!strpbrk(buf, ".e")) strncat(buf, ".0", n - strlen(buf) - 1);
    return buf;
}

void pp_launch_sanitize(const char *s, char *out, size_t n, bool name_only)
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

int64_t pp_launch_nodes(const pp_work *w)
{
    int64_t gpn = w->gpus_per_node > 0 ? w->gpus_per_node : w->gpus;
    if (gpn > w->gpus) gpn = w->gpus;
    return (w->gpus + gpn - 1) / gpn;
}

int64_t pp_launch_gpus_per_node(const pp_work *w)
{
    int64_t gpn = w->gpus_per_node > 0 ? w->gpus_per_node : w->gpus;
    return gpn > w->gpus ? w->gpus : gpn;
}

void pp_launch_sbatch(const pp_work *w, const char *job, char *buf, size_t n)
{
    snprintf(buf, n,
             "#!/usr/bin/env bash\n#SBATCH --job-name=parplan-%s\n#SBATCH --nodes=%lld\n#SBATCH --ntasks-per-node=1\n"
             "#SBATCH --gpus-per-node=%lld\n#SBATCH --exclusive\n",
             job[0] ? job : "train", (long long)pp_launch_nodes(w), (long long)pp_launch_gpus_per_node(w));
}

void pp_launch_rdzv(const pp_work *w, const char *job, char *buf, size_t n)
{
    int64_t nodes = pp_launch_nodes(w);
    snprintf(buf, n,
             "NNODES=%lld\nGPUS_PER_NODE=%lld\nMASTER_PORT=${MASTER_PORT:-29500}\n"
             "if [ -n \"${SLURM_JOB_ID:-}\" ]; then\n"
             "    MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
             "    RDZV_ID=$SLURM_JOB_ID\n"
             "    LAUNCHER=(srun --kill-on-bad-exit=1 --ntasks-per-node=1)\n"
             "else\n"
             "%s"
             "    RDZV_ID=${RDZV_ID:-parplan-%s}\n    LAUNCHER=()\nfi\n\n",
             (long long)nodes, (long long)pp_launch_gpus_per_node(w),
             nodes > 1 ? "    MASTER_ADDR=${MASTER_ADDR:?set MASTER_ADDR to the rendezvous host}\n"
                       : "    MASTER_ADDR=${MASTER_ADDR:-localhost}\n",
             job[0] ? job : "train");
}

pp_status pp_launch_cluster_check(const pp_work *w, pp_error *err)
{
    int64_t gpn = pp_launch_gpus_per_node(w);
    if (gpn < 1) return BAD("--gpus must be at least 1");
    if (w->gpus % gpn)
        return BAD("--gpus %lld is not a whole number of nodes of %lld GPUs (--gpus-per-node)",
                   (long long)w->gpus, (long long)gpn);
    return PP_OK;
}

int64_t pp_launch_stage_recompute(const pp_work *w, const pp_layout *l, int64_t i)
{
    int64_t n = pp_layout_stage_layers(w, l, i);
    if (l->recompute != PP_RC_FULL) return 0;
    if (l->stage_recompute) return l->stage_recompute[i] < n ? l->stage_recompute[i] : n;
    if (l->recompute_layers > 0) return l->recompute_layers < n ? l->recompute_layers : n;
    return n;
}

bool pp_launch_stages_even(const pp_work *w, const pp_layout *l)
{
    int64_t first = pp_layout_stage_layers(w, l, 0);
    for (int64_t i = 1; i < l->pp; i++)
        if (pp_layout_stage_layers(w, l, i) != first) return false;
    return true;
}

const char *pp_launch_gib(double bytes, char *buf, size_t n)
{
    if (!pp_launch_known(bytes)) snprintf(buf, n, "not predicted");
    else snprintf(buf, n, "%.2f GiB", bytes / 1073741824.0);
    return buf;
}

void pp_launch_header_write(pp_sbuf *b, const char *cc, pp_launch_format fmt, const pp_launch_params *p)
{
    const pp_work *w = p->work;
    const pp_model *m = &w->model;
    const pp_layout *l = p->layout;
    char name[96], gpu[96];
    pp_launch_sanitize(m->name, name, sizeof name, false);
    pp_launch_sanitize(w->gpu.name, gpu, sizeof gpu, false);
    pp_sbuf_printf(b, "%s Generated by parplan %s: launch --format %s (target %s) for %s\n", cc, PP_VERSION,
              pp_launch_format_names[fmt], pp_launch_target_names[p->target], pp_launch_format_target(fmt));
    pp_sbuf_printf(b, "%s model %s: %lld layers, hidden %lld, %lld heads (%lld KV), FFN %lld, vocab %lld, "
                 "sequence %lld (context %lld), %s, %s, %s, %s, %s",
              cc, name, (long long)m->layers, (long long)m->hidden, (long long)m->heads,
              (long long)m->kv_heads, (long long)m->ffn, (long long)m->vocab, (long long)m->seq,
              (long long)(m->max_context > 0 ? m->max_context : m->seq),
              pp_act_names[m->act], pp_norm_names[m->norm], pp_pos_names[m->pos],
              m->tied ? "tied embeddings" : "untied embeddings", m->bias ? "bias" : "no bias");
    if (m->experts > 1) pp_sbuf_printf(b, ", %lld experts top-%lld", (long long)m->experts, (long long)m->topk);
    if (pp_model_is_mla(m)) pp_sbuf_printf(b, ", multi-latent attention (kv rank %lld)", (long long)m->kv_lora_rank);
    if (m->window > 0) pp_sbuf_printf(b, ", window %lld", (long long)m->window);
    if (m->mtp_layers > 0) pp_sbuf_printf(b, ", %lld MTP layers", (long long)m->mtp_layers);
    pp_sbuf_printf(b, "\n");
    pp_sbuf_printf(b, "%s cluster: %lld x %s (%lld node%s of %lld), global batch %lld sequences, "
                 "framework %s, attention %s\n",
              cc, (long long)w->gpus, gpu, (long long)pp_launch_nodes(w), pp_launch_nodes(w) > 1 ? "s" : "",
              (long long)pp_launch_gpus_per_node(w), (long long)w->gbs, pp_framework_names[w->framework],
              pp_attention_names[w->attention]);
    char stack[400], stack_s[400];
    pp_stack_describe(w, stack, sizeof stack);
    pp_launch_sanitize(stack, stack_s, sizeof stack_s, false);
    pp_sbuf_printf(b, "%s %s\n", cc, stack_s);
    pp_sbuf_printf(b, "%s layout: tp %lld, pp %lld, dp %lld, vpp %lld, cp %lld, ep %lld, micro-batch %lld, "
                 "%lld micro-batches per step, ",
              cc, (long long)l->tp, (long long)l->pp, (long long)l->dp, (long long)l->vpp,
              (long long)l->cp, (long long)l->ep, (long long)l->mbs,
              (long long)pp_layout_microbatches(w, l));
    if (l->zero) pp_sbuf_printf(b, "ZeRO-%d, ", l->zero);
    if (l->dist_opt) pp_sbuf_printf(b, "distributed optimizer, ");
    if (l->sp) pp_sbuf_printf(b, "sequence parallel, ");
    pp_sbuf_printf(b, "recompute %s", pp_recompute_names[l->recompute]);
    if (l->recompute == PP_RC_FULL && !l->stage_recompute && l->recompute_layers > 0)
        pp_sbuf_printf(b, " (%lld layers per stage)", (long long)l->recompute_layers);
    /* the optimizer's host offload, said only where there is one (activation offloading, a stack
     * field, is on the stack line: "offload none" beside it read as if it were off) */
    if (l->offload == PP_OFF_OPTIMIZER) pp_sbuf_printf(b, ", optimizer state on the host");
    else if (l->offload == PP_OFF_PARAMS) pp_sbuf_printf(b, ", parameters and optimizer state on the host");
    pp_sbuf_printf(b, "\n");
    if (l->pp > 1 && pp_layout_vstages_uneven(w, l)) {
        /* by virtual stage, in model order (pp_layout_vstage_layers) */
        pp_sbuf_printf(b, "%s virtual stages (%s): layers", cc, l->vstage_layers ? "as given" : "balanced");
        for (int64_t k = 0; k < l->pp * l->vpp; k++)
            pp_sbuf_printf(b, "%s%lld", k ? "," : " ", (long long)pp_layout_vstage_layers(w, l, k % l->pp, k / l->pp));
        pp_sbuf_printf(b, " (model order: virtual stage k on pipeline stage k mod %lld)\n", (long long)l->pp);
    } else if (l->pp > 1 && (l->stage_layers || l->vstage_layers || !pp_launch_stages_even(w, l))) {
        pp_sbuf_printf(b, "%s stages (%s): layers", cc, l->stage_layers ? "ILP" : l->vstage_layers ? "as given"
                                                                                   : "uniform, remainder first");
        for (int64_t i = 0; i < l->pp; i++)
            pp_sbuf_printf(b, "%s%lld", i ? "," : " ", (long long)pp_layout_stage_layers(w, l, i));
        if (l->recompute == PP_RC_FULL) {
            pp_sbuf_printf(b, "; fully recomputed");
            for (int64_t i = 0; i < l->pp; i++)
                pp_sbuf_printf(b, "%s%lld", i ? "," : " ", (long long)pp_launch_stage_recompute(w, l, i));
        }
        pp_sbuf_printf(b, "\n");
    }
    char line[512];
    pp_launch_prediction(p, line, sizeof line);
    pp_sbuf_printf(b, "%s %s", cc, line);
    pp_sbuf_printf(b, "\n");
}

void pp_launch_prediction(const pp_launch_params *p, char *buf, size_t n)
{
    const pp_work *w = p->work;
    char t1[32], t2[32], t3[32];
    double cap = p->capacity_bytes >= 0 ? p->capacity_bytes : w->gpu.memory_bytes;
    buf[0] = 0;
    if (pp_launch_known(p->peak_bytes)) {
        pp_strcatf(buf, n, "predicted by parplan %s: peak %s allocated on the largest rank", PP_VERSION,
                   pp_launch_gib(p->peak_bytes, t1, sizeof t1));
        if (pp_launch_known(p->reserved_bytes)) pp_strcatf(buf, n, " + %s reserved", pp_launch_gib(p->reserved_bytes, t2, sizeof t2));
        pp_strcatf(buf, n, " of %s", pp_launch_gib(cap, t3, sizeof t3));
    } else {
        pp_strcatf(buf, n, "predicted by parplan %s: peak memory not predicted (capacity %s)", PP_VERSION,
                   pp_launch_gib(cap, t3, sizeof t3));
    }
    if (pp_launch_known(p->peak_bytes) && pp_launch_known(cap))
        pp_strcatf(buf, n, " (%s)",
                   p->peak_bytes + (pp_launch_known(p->reserved_bytes) ? p->reserved_bytes : 0) <= cap
                       ? "fits" : "PREDICTED OUT OF MEMORY");
    if (pp_launch_known(p->step_time_s)) pp_strcatf(buf, n, "; step %.4g s", p->step_time_s);
    else pp_strcatf(buf, n, "; step time not predicted");
    if (pp_launch_known(p->samples_per_s))
        pp_strcatf(buf, n, ", %.2f samples/s, %.0f tokens/s", p->samples_per_s, p->samples_per_s * (double)w->model.seq);
}
