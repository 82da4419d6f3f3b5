/* The transformer model: defaults, range checks and the per-tensor parameter table.
 *
 * Parameters are counted tensor by tensor (as llm.c's ParameterTensors does) rather than
 * with a closed form, so that every architectural variant (GQA, SwiGLU, MoE, untied output,
 * RMSNorm, no biases) is one row of a table. For the classic GPT shape (4h GELU MLP, biases,
 * LayerNorm, learned positions, tied output) the sum is exactly Narayanan et al., SC'21,
 * eq. 2: N = 12 L h^2 (1 + 13/(12h) + (V + s)/(12 L h)), plus the 2h of the final LayerNorm
 * that eq. 2 leaves out. tests/loader checks both against published counts.
 */
#include "pp.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void pp_model_init(pp_model *m)
{
    memset(m, 0, sizeof *m);
    m->act = PP_ACT_GELU;
    m->norm = PP_NORM_LAYERNORM;
    m->pos = PP_POS_LEARNED;
    m->bias = true;
    m->tied = true;
}

/* Where a tensor lives: how many copies of it the model holds. */
typedef enum {
    T_EMBED,  /* once, on the first pipeline stage */
    T_LAYER,  /* once per layer */
    T_EXPERT, /* once per expert per layer (dense model: experts = 1) */
    T_FINAL,  /* once, after the last layer */
    T_OUTPUT, /* once, the untied output projection */
} tensor_scope;

typedef struct {
    const char *name;
    const char *shape; /* formula, for documentation and debugging */
    int64_t count;     /* elements of one copy */
    tensor_scope scope;
} model_tensor;

#define MODEL_MAX_TENSORS 24

/* Fill the table; returns the number of rows. m must be validated (derived fields set). */
static int model_tensors(const pp_model *m, model_tensor *t)
{
    const int64_t h = m->hidden, V = m->vocab, s = m->seq, f = m->ffn;
    const int64_t q = m->heads * m->head_dim;    /* query width (= h for the usual shapes) */
    const int64_t kv = m->kv_heads * m->head_dim; /* key and value width each (GQA: g * d) */
    const int64_t E = m->experts > 1 ? m->experts : 1;
    const bool ln = m->norm == PP_NORM_LAYERNORM; /* LayerNorm has a bias, RMSNorm has not */
    int n = 0;
#define ROW(nm, sh, c, sc) (t[n++] = (model_tensor){nm, sh, (c), sc})
    ROW("wte", "V*h", V * h, T_EMBED);
    if (m->pos == PP_POS_LEARNED) ROW("wpe", "s*h", s * h, T_EMBED);
    /* Pre-norm (or post-norm: same count) before attention. */
    ROW("ln1.weight", "h", h, T_LAYER);
    if (ln) ROW("ln1.bias", "h", h, T_LAYER);
    ROW("qkv.weight", "h*(a*d + 2*g*d)", h * (q + 2 * kv), T_LAYER);
    if (m->bias) ROW("qkv.bias", "a*d + 2*g*d", q + 2 * kv, T_LAYER);
    ROW("proj.weight", "a*d*h", q * h, T_LAYER);
    if (m->bias) ROW("proj.bias", "h", h, T_LAYER);
    ROW("ln2.weight", "h", h, T_LAYER);
    if (ln) ROW("ln2.bias", "h", h, T_LAYER);
    if (E > 1) ROW("router.weight", "h*E", h * E, T_LAYER); /* Mixtral gate: no bias */
    if (m->act == PP_ACT_SWIGLU) {
        /* Gated MLP (Shazeer 2020): gate and up h->f, down f->h. */
        ROW("fc_gate_up.weight", "2*h*f", 2 * h * f, T_EXPERT);
        if (m->bias) ROW("fc_gate_up.bias", "2*f", 2 * f, T_EXPERT);
    } else {
        ROW("fc1.weight", "h*f", h * f, T_EXPERT);
        if (m->bias) ROW("fc1.bias", "f", f, T_EXPERT);
    }
    ROW("fc2.weight", "f*h", f * h, T_EXPERT);
    if (m->bias) ROW("fc2.bias", "h", h, T_EXPERT);
    ROW("ln_f.weight", "h", h, T_FINAL);
    if (ln) ROW("ln_f.bias", "h", h, T_FINAL);
    if (!m->tied) ROW("lm_head.weight", "V*h", V * h, T_OUTPUT);
#undef ROW
    return n;
}

void pp_model_params(const pp_model *m, pp_param_count *out)
{
    memset(out, 0, sizeof *out);
    model_tensor t[MODEL_MAX_TENSORS];
    int n = model_tensors(m, t);
    const int64_t E = m->experts > 1 ? m->experts : 1;
    const int64_t k = m->experts > 1 ? m->topk : 1;
    int64_t layer_shared = 0, expert = 0;
    for (int i = 0; i < n; i++) {
        switch (t[i].scope) {
        case T_EMBED: out->embedding += t[i].count; break;
        case T_LAYER: layer_shared += t[i].count; break;
        case T_EXPERT: expert += t[i].count; break;
        case T_FINAL: out->final_norm += t[i].count; break;
        case T_OUTPUT: out->output += t[i].count; break;
        }
    }
    out->per_layer = layer_shared + E * expert;
    out->layer_active = layer_shared + k * expert;
    int64_t rest = out->embedding + out->final_norm + out->output;
    out->total = m->layers * out->per_layer + rest;
    out->active = m->layers * out->layer_active + rest;
}

/* Upper bounds: far beyond any real model, low enough that no product overflows int64
 * once the total (checked in double below) is under PP_MODEL_MAX_PARAMS. */
#define PP_MODEL_MAX_DIM 10000000.0     /* hidden, heads, head_dim, ffn, layers */
#define PP_MODEL_MAX_VOCAB 100000000.0
#define PP_MODEL_MAX_SEQ 100000000.0
#define PP_MODEL_MAX_EXPERTS 100000.0
#define PP_MODEL_MAX_PARAMS 1e16        /* house rule: no overflow up to 1e15 parameters */

#define BAD(...) pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, __VA_ARGS__)

static pp_status check_range(const char *field, int64_t v, double lo, double hi, pp_error *err)
{
    if ((double)v < lo || (double)v > hi)
        return BAD("%s must be between %.0f and %.0f, got %lld", field, lo, hi, (long long)v);
    return PP_OK;
}

pp_status pp_model_validate(pp_model *m, pp_error *err)
{
    pp_status st;
    if ((unsigned)m->act >= PP_ACT_COUNT) return BAD("activation is not one of gelu|swiglu|relu");
    if ((unsigned)m->norm >= PP_NORM_COUNT) return BAD("norm is not one of layernorm|rmsnorm");
    if ((unsigned)m->pos >= PP_POS_COUNT) return BAD("position is not one of learned|rope|alibi|none");
    if ((st = check_range("layers", m->layers, 1, PP_MODEL_MAX_DIM, err))) return st;
    if ((st = check_range("hidden", m->hidden, 1, PP_MODEL_MAX_DIM, err))) return st;
    if ((st = check_range("heads", m->heads, 1, PP_MODEL_MAX_DIM, err))) return st;
    if ((st = check_range("vocab", m->vocab, 1, PP_MODEL_MAX_VOCAB, err))) return st;
    if ((st = check_range("seq", m->seq, 1, PP_MODEL_MAX_SEQ, err))) return st;
    if (m->kv_heads == 0) m->kv_heads = m->heads; /* MHA unless told otherwise */
    if ((st = check_range("kv_heads", m->kv_heads, 1, (double)m->heads, err))) return st;
    if (m->heads % m->kv_heads)
        return BAD("kv_heads %lld does not divide heads %lld", (long long)m->kv_heads,
                   (long long)m->heads);
    if (m->head_dim == 0) {
        if (m->hidden % m->heads)
            return BAD("hidden %lld is not divisible by heads %lld (give head_dim explicitly)",
                       (long long)m->hidden, (long long)m->heads);
        m->head_dim = m->hidden / m->heads;
    }
    if ((st = check_range("head_dim", m->head_dim, 1, PP_MODEL_MAX_DIM, err))) return st;
    if (m->ffn == 0) {
        if (m->act == PP_ACT_SWIGLU)
            /* LLaMA (Touvron et al. 2023, sec. 2.2) keeps the MLP's parameters at 8h^2:
             * f = 2/3 * 4h, rounded up to a multiple of 256 (11008 for h = 4096). */
            m->ffn = ((8 * m->hidden / 3 + 255) / 256) * 256;
        else
            m->ffn = 4 * m->hidden; /* GPT-2/3, Megatron: 4h (Vaswani et al. 2017) */
    }
    if ((st = check_range("ffn", m->ffn, 1, PP_MODEL_MAX_DIM, err))) return st;
    if ((st = check_range("experts", m->experts, 0, PP_MODEL_MAX_EXPERTS, err))) return st;
    if (m->experts > 1) {
        if (m->topk < 1) return BAD("topk must be at least 1 for a model with %lld experts",
                                    (long long)m->experts);
        if (m->topk > m->experts)
            return BAD("topk %lld is more than the %lld experts", (long long)m->topk,
                       (long long)m->experts);
    } else if (m->topk > 1) {
        return BAD("topk %lld needs experts > 1", (long long)m->topk);
    }
    if ((st = check_range("topk", m->topk, 0, PP_MODEL_MAX_EXPERTS, err))) return st;
    if ((st = check_range("gbs", m->gbs, 0, 1e12, err))) return st;
    if (!isfinite(m->published_params) || m->published_params < 0 ||
        m->published_params > PP_MODEL_MAX_PARAMS)
        return BAD("published_params must be between 0 and %g", PP_MODEL_MAX_PARAMS);

    /* The total in double first: the int64 table below cannot overflow after this. */
    double h = (double)m->hidden, f = (double)m->ffn, d = (double)m->head_dim;
    double E = m->experts > 1 ? (double)m->experts : 1.0;
    double layer = h * d * (double)(m->heads * 2 + m->kv_heads * 2) + E * 3.0 * h * f + h * E +
                   8.0 * h + 3.0 * f * E;
    double total = (double)m->layers * layer + 2.0 * (double)m->vocab * h + (double)m->seq * h;
    if (total > PP_MODEL_MAX_PARAMS)
        return BAD("the model has about %.3g parameters, more than the %g supported", total,
                   PP_MODEL_MAX_PARAMS);
    return PP_OK;
}

/* ------------------------------------------------------------------ GPU */

void pp_gpu_init(pp_gpu *g) { memset(g, 0, sizeof *g); }

pp_status pp_gpu_validate(pp_gpu *g, pp_error *err)
{
    struct { const char *field; double v, lo, hi; } r[] = {
        /* memory: 1 GiB .. 1 PiB; bandwidths in GB/s; FLOP/s up to 1e18 (1 EFLOP/s) */
        {"memory_bytes", g->memory_bytes, 1073741824.0, 1125899906842624.0},
        {"mem_bw_gbs", g->mem_bw_gbs, 1, 1e6},
        {"nvlink_gbs", g->nvlink_gbs, 0, 1e6},
        {"pcie_gbs", g->pcie_gbs, 0.1, 1e5},
        {"internode_gbs", g->internode_gbs, 0, 1e6},
        {"gemm_eff", g->gemm_eff, 0.01, 1},
        {"intra_latency_us", g->intra_latency_s * 1e6, 0, 1e6},
        {"inter_latency_us", g->inter_latency_s * 1e6, 0, 1e6},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (!isfinite(r[i].v) || r[i].v < r[i].lo || r[i].v > r[i].hi)
            return BAD("%s must be between %g and %g, got %g", r[i].field, r[i].lo, r[i].hi, r[i].v);
    for (int i = 0; i < PP_DT_COUNT; i++)
        if (!isfinite(g->peak_flops[i]) || g->peak_flops[i] < 0 || g->peak_flops[i] > 1e18)
            return BAD("flops.%s must be between 0 and 1e6 TFLOP/s", pp_dtype_names[i]);
    if (g->peak_flops[PP_DT_BF16] <= 0 && g->peak_flops[PP_DT_FP16] <= 0)
        return BAD("flops: bf16 or fp16 must be given (the planner trains in 16-bit)");
    if (g->gpus_per_node < 1 || g->gpus_per_node > 1000000)
        return BAD("gpus_per_node must be between 1 and 1000000, got %lld",
                   (long long)g->gpus_per_node);
    return PP_OK;
}
