/* Shared by the fuzz harnesses: the invariants every loader result must keep, and a
 * pass of whatever loaded through the memory and time models, where a weird-but-accepted input
 * would turn into an overflow or a NaN. A broken invariant aborts, which libFuzzer reports as a
 * crash and the replay test (fuzz/replay.c, suite 'fuzz') as a failure.
 *
 * Included by exactly one .c per executable (all functions are static). */
#ifndef PP_FUZZ_COMMON_H
#define PP_FUZZ_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp.h"
#include "pp_memory.h"
#include "pp_time.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond, ...)                                                                  \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "fuzz invariant broken at %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fprintf(stderr, "\n");                                                             \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

/* A failed load: the status is an input error (a string or file of any content is bad input,
 * never a runtime failure), and the pp_error is filled, terminated and consistent. */
static inline void fuzz_check_error(pp_status st, const pp_error *err, const char *what)
{
    FUZZ_CHECK(st == PP_ERR_INPUT, "%s: status %d, want PP_ERR_INPUT (%s)", what, (int)st, err->msg);
    FUZZ_CHECK(err->status == st, "%s: err.status %d != returned %d", what, (int)err->status, (int)st);
    FUZZ_CHECK(memchr(err->msg, 0, sizeof err->msg) != NULL, "%s: message not terminated", what);
    FUZZ_CHECK(memchr(err->file, 0, sizeof err->file) != NULL, "%s: file not terminated", what);
    FUZZ_CHECK(err->msg[0] != 0, "%s: empty error message", what);
    FUZZ_CHECK(strchr(err->msg, '\n') == NULL, "%s: message spans lines: %s", what, err->msg);
    FUZZ_CHECK(err->line >= 0 && err->col >= 0, "%s: negative location %d:%d", what, err->line, err->col);
    FUZZ_CHECK(err->line == 0 || err->file[0], "%s: a line number without a file", what);
}

static inline int fuzz_finite_nonneg(double x) { return isfinite(x) && x >= 0; }

/* An A100-SXM4-80GB written out, so the harnesses need no catalog (NVIDIA A100 datasheet:
 * 312 TFLOP/s bf16/fp16 dense, 156 tf32, 19.5 fp32, 2039 GB/s HBM2e, NVLink3 300 GB/s/dir). */
static inline void fuzz_gpu_default(pp_gpu *g)
{
    pp_gpu_init(g);
    snprintf(g->name, sizeof g->name, "a100-80gb");
    snprintf(g->full_name, sizeof g->full_name, "NVIDIA A100-SXM4-80GB");
    g->memory_bytes = 85899345920.0;
    g->mem_bw_gbs = 2039;
    g->peak_flops[PP_DT_FP32] = 19.5e12;
    g->peak_flops[PP_DT_TF32] = 156e12;
    g->peak_flops[PP_DT_FP16] = 312e12;
    g->peak_flops[PP_DT_BF16] = 312e12;
    g->nvlink_gbs = 300;
    g->pcie_gbs = 32;
    g->gpus_per_node = 8;
    g->internode_gbs = 25;
    g->gemm_eff = 0.7;
    g->intra_latency_s = 5e-6;
    g->inter_latency_s = 1e-5;
    pp_error err = {0};
    FUZZ_CHECK(pp_gpu_validate(g, &err) == PP_OK, "the default GPU does not validate: %s", err.msg);
}

/* GPT-3 1.3B (Brown et al. 2020, table 2.1): 24 layers, h 2048, 16 heads, s 2048, V 50257. */
static inline void fuzz_model_default(pp_model *m)
{
    pp_model_init(m);
    snprintf(m->name, sizeof m->name, "gpt3-1.3b");
    m->layers = 24;
    m->hidden = 2048;
    m->heads = 16;
    m->vocab = 50257;
    m->seq = 2048;
    m->act = PP_ACT_GELU;
    m->norm = PP_NORM_LAYERNORM;
    m->pos = PP_POS_LEARNED;
    m->bias = true;
    m->tied = true;
    pp_error err = {0};
    FUZZ_CHECK(pp_model_validate(m, &err) == PP_OK, "the default model does not validate: %s", err.msg);
}

/* A loaded (valid) model: parameter counts and FLOPs are positive, consistent and finite. */
static inline void fuzz_check_model(const pp_model *m)
{
    pp_model copy = *m;
    pp_error err = {0};
    FUZZ_CHECK(pp_model_validate(&copy, &err) == PP_OK, "a loaded model fails validation: %s", err.msg);
    FUZZ_CHECK(memchr(m->name, 0, sizeof m->name) != NULL, "name not terminated");
    pp_param_count pc;
    memset(&pc, 0, sizeof pc);
    pp_model_params(m, &pc);
    FUZZ_CHECK(pc.total > 0 && pc.embedding >= 0 && pc.per_layer > 0 && pc.output >= 0 && pc.final_norm >= 0,
               "parameter counts total %lld embedding %lld per_layer %lld", (long long)pc.total,
               (long long)pc.embedding, (long long)pc.per_layer);
    FUZZ_CHECK(pc.active > 0 && pc.active <= pc.total, "active %lld total %lld", (long long)pc.active,
               (long long)pc.total);
    FUZZ_CHECK(pc.layer_active > 0 && pc.layer_active <= pc.per_layer, "layer_active %lld per_layer %lld",
               (long long)pc.layer_active, (long long)pc.per_layer);
    double f = pp_model_flops_per_step(m, 8);
    FUZZ_CHECK(isfinite(f) && f > 0, "model FLOPs per step %g", f);
}

/* The layouts tried on every accepted input: plain, TP+SP, PP (+interleaving), full recompute
 * of some layers, ZeRO-3, CP, EP. Each is validated first; only valid ones are estimated. */
typedef struct {
    int64_t tp, pp, vpp, cp, ep, mbs;
    pp_framework fw;
    int zero;
    bool dist_opt, sp;
    pp_recompute rc;
    int64_t rc_layers;
} fuzz_layout;

static const fuzz_layout fuzz_layouts[] = {
    {1, 1, 1, 1, 1, 1, PP_FW_MEGATRON, 0, false, false, PP_RC_NONE, 0},
    {2, 2, 1, 1, 1, 2, PP_FW_MEGATRON, 0, true, true, PP_RC_SELECTIVE, 0},
    {1, 4, 2, 1, 1, 1, PP_FW_MEGATRON, 0, false, false, PP_RC_FULL, 1},
    {8, 1, 1, 1, 1, 1, PP_FW_MEGATRON, 0, true, true, PP_RC_FULL, 0},
    {1, 1, 1, 1, 1, 4, PP_FW_DEEPSPEED, 3, false, false, PP_RC_NONE, 0},
    {1, 1, 1, 2, 1, 1, PP_FW_FSDP, 2, false, false, PP_RC_SELECTIVE, 0},
    {1, 1, 1, 1, 8, 1, PP_FW_MEGATRON, 0, true, false, PP_RC_NONE, 0},
};

static inline void fuzz_check_estimates(const pp_work *w, const pp_layout *l)
{
    static pp_mem_result mem; /* ~50 KB: not on the stack */
    pp_error err = {0};
    memset(&mem, 0, sizeof mem);
    pp_status st = pp_memory_estimate(w, l, &mem, &err);
    if (st != PP_OK) {
        /* A validated layout may still be refused, but only as an input error with a message. */
        fuzz_check_error(st, &err, "pp_memory_estimate");
    } else {
        FUZZ_CHECK(mem.n_stages == l->pp, "n_stages %lld pp %lld", (long long)mem.n_stages, (long long)l->pp);
        double max_peak = 0, max_total = 0;
        for (int64_t i = 0; i < mem.n_stages && i < PP_MAX_STAGES; i++) {
            const pp_mem_stage *s = &mem.stages[i];
            FUZZ_CHECK(fuzz_finite_nonneg(s->weights_bytes) && fuzz_finite_nonneg(s->grads_bytes) &&
                           fuzz_finite_nonneg(s->optimizer_bytes) && fuzz_finite_nonneg(s->activations_bytes) &&
                           fuzz_finite_nonneg(s->transient_bytes) && fuzz_finite_nonneg(s->reserved_bytes) &&
                           fuzz_finite_nonneg(s->peak_bytes),
                       "stage %lld: w %g g %g o %g a %g t %g r %g peak %g", (long long)i, s->weights_bytes,
                       s->grads_bytes, s->optimizer_bytes, s->activations_bytes, s->transient_bytes,
                       s->reserved_bytes, s->peak_bytes);
            double sum = s->weights_bytes + s->grads_bytes + s->optimizer_bytes + s->activations_bytes +
                         s->transient_bytes;
            FUZZ_CHECK(fabs(s->peak_bytes - sum) <= 1e-9 * sum + 1, "stage %lld: peak %g != sum of parts %g",
                       (long long)i, s->peak_bytes, sum);
            if (s->peak_bytes > max_peak) max_peak = s->peak_bytes;
            if (s->peak_bytes + s->reserved_bytes > max_total) max_total = s->peak_bytes + s->reserved_bytes;
        }
        FUZZ_CHECK(fuzz_finite_nonneg(mem.peak_bytes) && fabs(mem.peak_bytes - max_peak) <= 1e-9 * max_peak + 1,
                   "peak %g, max over stages %g", mem.peak_bytes, max_peak);
        double peak = 0;
        double worst = pp_memory_worst_bytes(w, l, &peak);
        FUZZ_CHECK(isfinite(worst) && fabs(worst - max_total) <= 1e-6 * max_total + 1,
                   "pp_memory_worst_bytes %g disagrees with pp_memory_estimate %g", worst, max_total);
    }
    pp_time_result t;
    memset(&t, 0, sizeof t);
    err = (pp_error){0};
    st = pp_time_estimate(w, l, &t, &err);
    if (st != PP_OK) {
        fuzz_check_error(st, &err, "pp_time_estimate");
        return;
    }
    const double parts[] = {t.compute_s, t.recompute_s, t.tp_comm_s, t.cp_comm_s, t.ep_comm_s, t.pp_comm_s,
                            t.bubble_s, t.dp_comm_s, t.zero_gather_s, t.optimizer_s, t.model_flops,
                            t.model_tflops_per_gpu, t.mfu};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        FUZZ_CHECK(fuzz_finite_nonneg(parts[i]), "time part %zu is %g", i, parts[i]);
    FUZZ_CHECK(isfinite(t.step_time_s) && t.step_time_s > 0, "step_time_s %g", t.step_time_s);
    FUZZ_CHECK(isfinite(t.samples_per_s) && t.samples_per_s > 0 && isfinite(t.tokens_per_s) && t.tokens_per_s > 0,
               "samples/s %g tokens/s %g", t.samples_per_s, t.tokens_per_s);
}

/* Run the accepted (model, GPU) through every fuzz layout on 8 GPUs. */
static inline void fuzz_exercise_work(const pp_model *m, const pp_gpu *g, const struct pp_profile *prof)
{
    pp_work w;
    memset(&w, 0, sizeof w);
    w.model = *m;
    w.gpu = *g;
    w.gpus = 8;
    w.gpus_per_node = 8;
    w.gbs = 64;
    w.attention = PP_ATTN_FLASH;
    w.profile = prof;
    for (size_t i = 0; i < sizeof fuzz_layouts / sizeof fuzz_layouts[0]; i++) {
        const fuzz_layout *f = &fuzz_layouts[i];
        pp_layout l;
        pp_layout_init(&l);
        l.tp = f->tp;
        l.pp = f->pp;
        l.vpp = f->vpp;
        l.cp = f->cp;
        l.ep = f->ep;
        l.mbs = f->mbs;
        l.zero = f->zero;
        l.dist_opt = f->dist_opt;
        l.sp = f->sp;
        l.recompute = f->rc;
        l.recompute_layers = f->rc_layers;
        w.framework = f->fw;
        pp_error err = {0};
        if (pp_layout_validate(&w, &l, &err) != PP_OK) continue;
        fuzz_check_estimates(&w, &l);
    }
}

#endif
