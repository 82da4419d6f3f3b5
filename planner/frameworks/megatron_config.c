/* Megatron-LM arguments in parplan's terms (pp_margs_read, see pp_margs.h): the model, the layout
 * and the training stack the table of arguments (megatron_args.c) gives, and what it sets that
 * parplan does not model.
 *
 * Sources for what the arguments mean (the Megatron-LM snapshot whose option list is
 * tests/data/megatron_flags.txt):
 *  - megatron/training/arguments.py: the defaults (--attention-dropout/--hidden-dropout 0.1,
 *    --overlap-grad-reduce and --overlap-param-gather off unless given, --overlap-p2p-communication
 *    on), validate_args (bf16 accumulates and reduces gradients in fp32, --ffn-hidden-size
 *    defaults, kv_channels = hidden / heads, sequence parallelism switched off at tp 1,
 *    overlap_p2p_comm only with the interleaved schedule), moe_freq_type / tuple_type (the list
 *    expressions and "W,0" windows);
 *  - megatron/core/transformer/transformer_config.py: MoE and MLA fields and defaults
 *    (moe_router_topk 2, moe_token_dispatcher_type allgather);
 *  - megatron/core/transformer/pipeline_parallel_layer_layout.py: the layout string;
 *  - megatron/core/transformer/utils.py is_layer_window_attention: window_attn_skip_freq;
 *  - megatron/core/models/backends.py LocalSpecProvider: the local implementation runs experts
 *    one by one (SequentialMLP) whatever --moe-grouped-gemm says. */
#include "megatron_args.h"
#include "pp_margs.h"
#include "pp_pipeline.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    pp_margs *a;
    pp_margs_config *c;
    pp_error *err;
} rd;

/* "--num-layers" (as written on a command line) or "num_layers" (a dump). */
static const char *kv_name(const pp_margs_kv *k) { return k->flag[0] ? k->flag : k->key; }

static void key_flag(const char *key, char *out, size_t n)
{
    size_t k = 0;
    if (n > 3) out[k++] = '-', out[k++] = '-';
    for (const char *p = key; *p && k + 1 < n; p++) out[k++] = *p == '_' ? '-' : *p;
    out[k] = 0;
}

static void note(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(rd *r, const char *fmt, ...)
{
    pp_margs_config *c = r->c;
    size_t k = strlen(c->unmodelled);
    char one[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(one, sizeof one, fmt, ap);
    va_end(ap);
    if (strstr(c->unmodelled, one)) return;
    if (k + strlen(one) + 8 >= sizeof c->unmodelled) {
        if (!strstr(c->unmodelled, ", ...")) snprintf(c->unmodelled + k, sizeof c->unmodelled - k, ", ...");
        c->n_unmodelled++;
        return;
    }
    snprintf(c->unmodelled + k, sizeof c->unmodelled - k, "%s%s", k ? ", " : "", one);
    c->n_unmodelled++;
}

/* The entry of key with a value (NULL: absent or None); marks it read. */
static pp_margs_kv *rd_kv(rd *r, const char *key)
{
    pp_margs_kv *k = pp_margs_kv_find(r->a, key);
    if (k) k->used = true;
    if (!k || !k->value || !k->value[0] || !strcmp(k->value, "None")) return NULL;
    return k;
}

static pp_status rd_bad(rd *r, const pp_margs_kv *k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static pp_status rd_bad(rd *r, const pp_margs_kv *k, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pp_error_set(r->err, PP_ERR_INPUT, r->a->path, k ? k->line : r->a->line, k ? k->col : 0, "%s%s%s",
                        k ? kv_name(k) : "", k ? ": " : "", msg);
}

static pp_status rd_missing(rd *r, const char *key, const char *why)
{
    char f[100];
    key_flag(key, f, sizeof f);
    if (!strcmp(key, "num_layers") && r->a->source == PP_MARGS_SCRIPT && r->a->program[0] &&
        strncmp(r->a->program, "pretrain", 8))
        return pp_error_set(r->err, PP_ERR_INPUT, r->a->path, r->a->line, 0,
                            "no Megatron-LM training command: the only Python command with flags runs %s, without "
                            "--num-layers", r->a->program);
    return pp_error_set(r->err, PP_ERR_INPUT, r->a->path, r->a->line, 0, "the Megatron arguments have no %s (%s)%s%s", f,
                        key, why ? ": " : "", why ? why : "");
}

static pp_status rd_resolved(rd *r, const pp_margs_kv *k)
{
    if (!k->unresolved) return PP_OK;
    return rd_bad(r, k, "the value '%s' uses a variable or command that the script does not define "
                        "(parplan runs nothing and reads no environment)", k->value);
}

/* An integer argument: absent -> def; required (def < 0) -> error. */
static pp_status rd_int(rd *r, const char *key, int64_t def, int64_t lo, int64_t hi, int64_t *out)
{
    pp_margs_kv *k = rd_kv(r, key);
    if (!k) {
        if (def < 0) return rd_missing(r, key, NULL);
        *out = def;
        return PP_OK;
    }
    pp_status st = rd_resolved(r, k);
    if (st) return st;
    const char *s = k->value;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno == ERANGE) return rd_bad(r, k, "expects an integer, got '%s'", s);
    if (v < lo || v > hi) return rd_bad(r, k, "must be between %lld and %lld, got %lld", (long long)lo, (long long)hi, v);
    *out = v;
    return PP_OK;
}

static pp_status rd_num(rd *r, const char *key, double def, double lo, double hi, bool hi_open, double *out)
{
    pp_margs_kv *k = rd_kv(r, key);
    if (!k) {
        *out = def;
        return PP_OK;
    }
    pp_status st = rd_resolved(r, k);
    if (st) return st;
    char *end = NULL;
    errno = 0;
    double v = strtod(k->value, &end);
    if (end == k->value || *end || errno == ERANGE || !isfinite(v))
        return rd_bad(r, k, "expects a number, got '%s'", k->value);
    if (v < lo || (hi_open ? v >= hi : v > hi))
        return rd_bad(r, k, "must be in [%g, %g%s, got %g", lo, hi, hi_open ? ")" : "]", v);
    *out = v;
    return PP_OK;
}

static pp_status rd_bool(rd *r, const char *key, bool def, bool *out)
{
    pp_margs_kv *k = rd_kv(r, key);
    if (!k) {
        *out = def;
        return PP_OK;
    }
    pp_status st = rd_resolved(r, k);
    if (st) return st;
    const char *v = k->value;
    if (!strcmp(v, "True") || !strcmp(v, "true") || !strcmp(v, "1")) *out = true;
    else if (!strcmp(v, "False") || !strcmp(v, "false") || !strcmp(v, "0")) *out = false;
    else return rd_bad(r, k, "is a switch: it takes no value (got '%s')", v);
    return PP_OK;
}

/* A string argument: NULL when absent; its entry in *kv. */
static pp_status rd_str(rd *r, const char *key, const char **out, pp_margs_kv **kv)
{
    pp_margs_kv *k = rd_kv(r, key);
    *out = NULL;
    if (kv) *kv = k;
    if (!k) return PP_OK;
    pp_status st = rd_resolved(r, k);
    if (st) return st;
    *out = k->value;
    return PP_OK;
}

/* The later of two entries (for "X and Y exclude each other": the error points at the second). */
static const pp_margs_kv *later(const pp_margs_kv *x, const pp_margs_kv *y)
{
    if (!x) return y;
    if (!y) return x;
    return (y->line > x->line || (y->line == x->line && y->col > x->col)) ? y : x;
}

/* A list argument (moe_layer_freq, window_attn_skip_freq): an integer (n = 0) or a list. */
static pp_status rd_list(rd *r, pp_margs_kv *k, int64_t *out, int max, int *n, int64_t *value)
{
    char msg[160];
    int col = 0;
    pp_status st = rd_resolved(r, k);
    if (st) return st;
    const char *v = k->value;
    /* the command line quotes it ("([0]*1+[1]*7)"); the dump prints the evaluated list */
    if (pp_margs_list_expr(v, out, max, n, value, &col, msg, sizeof msg) != PP_OK)
        return pp_error_set(r->err, PP_ERR_INPUT, r->a->path, k->line, k->col, "%s: '%s' is not an integer or a list "
                            "expression: %s at character %d", kv_name(k), v, msg, col);
    return PP_OK;
}

/* The MoE layer pattern (1 = MoE) as pp_model's rule: dense layers first, then every E-th layer
 * from the first MoE one, minus at most PP_MODEL_MAX_LIST exceptions. */
static bool fit_moe_pattern(pp_model *m, const int64_t *p, int64_t L)
{
    int64_t first = -1;
    for (int64_t i = 0; i < L; i++)
        if (p[i]) {
            first = i;
            break;
        }
    if (first < 0) return false;
    int64_t best_e = -1, best_d = PP_MODEL_MAX_LIST + 1;
    for (int64_t e = 1; e <= L && best_d > 0; e++) {
        int64_t ph = first % e, d = 0;
        bool ok = true;
        for (int64_t i = first; i < L && ok; i++) {
            bool in = i % e == ph;
            if (p[i] && !in) ok = false;
            if (!p[i] && in) d++;
        }
        if (ok && d < best_d) best_d = d, best_e = e;
    }
    if (best_e < 0) return false;
    m->moe_first_dense = first;
    m->moe_every = best_e;
    m->moe_phase = first % best_e;
    m->n_dense_layers = 0;
    for (int64_t i = first; i < L; i++)
        if (!p[i] && i % best_e == m->moe_phase) m->dense_layers[m->n_dense_layers++] = i;
    return true;
}

pp_layout pp_margs_config_layout(const pp_margs_config *c)
{
    pp_layout l = c->layout;
    l.stage_layers = c->uneven ? c->stage_layers : NULL;
    l.stage_recompute = c->uneven ? c->stage_recompute : NULL;
    l.vstage_layers = c->vsplit ? c->vstage_layers : NULL;
    return l;
}

/* Megatron overlaps the DP gradient reduce and the parameter gather only when asked
 * (--overlap-grad-reduce, --overlap-param-gather: off by default, arguments.py), and the
 * interleaved schedule's send/recv unless --no-overlap-p2p-communication. parplan's stack has one
 * switch: on when everything there is to overlap is overlapped. */
void pp_margs_config_overlap(pp_margs_config *c, const pp_layout *l)
{
    int64_t dp = l->dp > 0 ? l->dp : 2; /* unknown: assume data parallel */
    bool grad = dp * l->cp > 1, gather = l->dist_opt && dp > 1, p2p = l->pp > 1 && l->vpp > 1;
    int on = 0, off = 0;
    if (grad) c->overlap_grad_reduce ? on++ : off++;
    if (gather) c->overlap_param_gather ? on++ : off++;
    if (p2p) c->overlap_p2p_comm ? on++ : off++;
    c->stack.no_overlap = off > 0;
    c->overlap_note[0] = 0;
    if (on && off)
        snprintf(c->overlap_note, sizeof c->overlap_note,
                 "overlap of only some of the gradient reduce (%s), parameter gather (%s) and pipeline send/recv (%s): "
                 "modelled as no overlap",
                 !grad ? "none" : c->overlap_grad_reduce ? "on" : "off", !gather ? "none" : c->overlap_param_gather ? "on" : "off",
                 !p2p ? "none" : c->overlap_p2p_comm ? "on" : "off");
}


/* A value that may be a list (nargs='+': "aux_loss seq_aux_loss" on a command line, "['aux_loss']"
 * in a dump): its first item into out; the number of items. */
static int first_item(const char *v, char *out, size_t n)
{
    int items = 0;
    size_t k = 0;
    out[0] = 0;
    for (const char *p = v; *p;) {
        while (*p && strchr("[]',\" ", *p)) p++;
        if (!*p) break;
        items++;
        for (; *p && !strchr("[]',\" ", *p); p++)
            if (items == 1 && k + 1 < n) out[k++] = *p;
        out[k] = 0;
    }
    return items;
}

/* What else defines the model (pp.h; the flags and their defaults as launch_megatron.c rope_args
 * and router_args write them): --norm-epsilon (dest layernorm_epsilon, default 1e-5),
 * --max-position-embeddings, RoPE's base and scaling (multi-latent attention: --rope-type, default
 * yarn, over 4096 positions with betas 32 and 1, MLATransformerConfig; a YaRN factor of at most 1
 * scales nothing), and the router (moe_utils.py topk_routing_with_score_function). */
static pp_status read_definition(rd *r, bool mla)
{
    pp_model *m = &r->c->model;
    pp_status st;
    if ((st = rd_num(r, "layernorm_epsilon", 1e-5, 1e-30, 0.5, false, &m->norm_eps)) ||
        (st = rd_int(r, "max_position_embeddings", m->seq, 1, 100000000, &m->max_context)))
        return st;
    const char *pos = pp_margs_get(r->a, "position_embedding_type"), *rtype = NULL;
    if (m->pos == PP_POS_ROPE) {
        bool llama3, round;
        double f8, fy;
        int64_t lin;
        pp_margs_kv *kt;
        if ((st = rd_num(r, "rotary_base", 10000, 1, 1e15, false, &m->rope_theta)) ||
            (st = rd_bool(r, "use_rope_scaling", false, &llama3)) ||
            (st = rd_num(r, "rope_scaling_factor", 8, 1e-6, 1e6, false, &f8)) ||
            (st = rd_num(r, "rotary_scaling_factor", 1, 1e-6, 1e6, false, &fy)) ||
            (st = rd_int(r, "rotary_seq_len_interpolation_factor", 0, 0, 1000000, &lin)) || (st = rd_str(r, "rope_type", &rtype, &kt)))
            return st;
        if (rtype && strcmp(rtype, "rope") && strcmp(rtype, "yarn"))
            return rd_bad(r, kt, "unknown value '%s' (rope or yarn)", rtype);
        if (rtype && !mla && strcmp(rtype, "rope"))
            return rd_bad(r, kt, "%s needs --multi-latent-attention (arguments.py)", rtype);
        bool yarn = mla ? !rtype || !strcmp(rtype, "yarn") : pos && !strcmp(pos, "yarn");
        if (yarn && fy > 1) {
            m->rope_scaling = PP_ROPE_SCALING_YARN;
            m->rope_factor = fy;
            m->rope_original_context = 4096;
            m->yarn_beta_fast = 32, m->yarn_beta_slow = 1;
            if (!mla && ((st = rd_int(r, "yarn_original_max_position_embeddings", 4096, 1, 100000000, &m->rope_original_context)) ||
                         (st = rd_num(r, "yarn_beta_fast", 32, 1e-6, 1e6, false, &m->yarn_beta_fast)) ||
                         (st = rd_num(r, "yarn_beta_slow", 1, 1e-6, 1e6, false, &m->yarn_beta_slow)) ||
                         (st = rd_bool(r, "yarn_correction_range_round_to_int", true, &round))))
                return st;
            m->yarn_no_truncate = !mla && !round;
            if ((st = rd_num(r, "mscale", 1, 1e-6, 1e6, false, &m->yarn_mscale)) ||
                (st = rd_num(r, "mscale_all_dim", 0, 0, 1e6, false, &m->yarn_mscale_all_dim)))
                return st;
        } else if (llama3 && !mla) {
            m->rope_scaling = PP_ROPE_SCALING_LLAMA3;
            m->rope_factor = f8;
            m->rope_original_context = 8192, m->rope_low_freq = 1, m->rope_high_freq = 4; /* rotary_pos_embedding.py */
        } else if (lin > 1 && !mla) {
            m->rope_scaling = PP_ROPE_SCALING_LINEAR;
            m->rope_factor = (double)lin;
        }
    }
    if (m->experts <= 1) return PP_OK;
    const char *score = NULL, *bal = NULL, *aux = NULL;
    pp_margs_kv *ks, *kb, *ka;
    bool pre;
    if ((st = rd_str(r, "moe_router_score_function", &score, &ks)) || (st = rd_bool(r, "moe_router_pre_softmax", false, &pre)) ||
        (st = rd_num(r, "moe_router_topk_scaling_factor", 1, 1e-6, 1e6, false, &m->router_scale)) ||
        (st = rd_int(r, "moe_router_num_groups", 0, 1, 100000, &m->router_groups)) ||
        (st = rd_int(r, "moe_router_group_topk", 0, 1, 100000, &m->router_group_topk)) ||
        (st = rd_num(r, "moe_z_loss_coeff", 0, 0, 1e6, false, &m->router_z_coef)) ||
        (st = rd_str(r, "moe_router_load_balancing_type", &bal, &kb)) || (st = rd_str(r, "moe_aux_loss_coeff", &aux, &ka)))
        return st;
    if (score && strcmp(score, "softmax") && strcmp(score, "sigmoid")) {
        note(r, "%s %s (modelled as sigmoid)", kv_name(ks), score);
        score = "sigmoid";
    }
    m->router_score = score && !strcmp(score, "sigmoid") ? PP_ROUTER_SIGMOID : PP_ROUTER_SOFTMAX;
    m->router_raw_topk = m->router_score == PP_ROUTER_SOFTMAX ? pre : m->topk == 1;
    /* the balancing loss: Megatron's default aux_loss with coefficient 0 */
    char word[40], num[40];
    int nb = bal ? first_item(bal, word, sizeof word) : 0;
    int t = nb ? pp_name_lookup(pp_router_balance_names, PP_BALANCE_COUNT, word) : PP_BALANCE_AUX_LOSS;
    if (t < 0) note(r, "%s %s (not modelled: none)", kv_name(kb), word);
    else if (nb > 1) note(r, "%s %s (several losses: modelled as the first)", kv_name(kb), bal);
    m->router_balance = t < 0 ? PP_BALANCE_NONE : (pp_router_balance)t;
    char *end = NULL;
    if (aux && first_item(aux, num, sizeof num) > 0) {
        m->router_aux_coef = strtod(num, &end);
        if (end == num || *end || !(m->router_aux_coef >= 0 && m->router_aux_coef <= 1e6))
            return rd_bad(r, ka, "expects a coefficient in [0, 1e6], got '%s'", aux);
    }
    if (m->router_balance == PP_BALANCE_NONE || m->router_balance == PP_BALANCE_SINKHORN) m->router_aux_coef = 0;
    return PP_OK;
}

static pp_status read_model(rd *r)
{
    pp_margs_config *c = r->c;
    pp_model *m = &c->model;
    pp_status st;
    int64_t v;
    pp_model_init(m);
    const char *base = strrchr(r->a->path, '/');
    base = base ? base + 1 : r->a->path;
    snprintf(m->name, sizeof m->name, "%.63s", !strcmp(r->a->path, "-") ? "stdin" : base);
    char *dot = strrchr(m->name, '.');
    if (dot && dot != m->name) *dot = 0;
    snprintf(m->family, sizeof m->family, "megatron-args");
    snprintf(m->source, sizeof m->source, "%.255s", r->a->path);
#define RI(key, def, lo, hi, dst)                                          \
    do {                                                                   \
        if ((st = rd_int(r, key, def, lo, hi, &v))) return st;             \
        dst = v;                                                           \
    } while (0)
    RI("num_layers", -1, 1, 10000000, m->layers);
    RI("hidden_size", -1, 1, 10000000, m->hidden);
    RI("num_attention_heads", -1, 1, 10000000, m->heads);
    bool gqa, mla;
    if ((st = rd_bool(r, "group_query_attention", false, &gqa)) || (st = rd_bool(r, "multi_latent_attention", false, &mla)))
        return st;
    if (gqa && mla)
        return rd_bad(r, later(pp_margs_kv_find(r->a, "group_query_attention"), pp_margs_kv_find(r->a, "multi_latent_attention")),
                      "group-query attention and multi-latent attention exclude each other (arguments.py validate_args)");
    m->kv_heads = m->heads;
    /* Megatron's --num-query-groups defaults to 1 and counts only with --group-query-attention */
    if (gqa) RI("num_query_groups", 1, 1, 10000000, m->kv_heads);
    if (!mla) {
        if (!rd_kv(r, "kv_channels") && m->hidden % m->heads)
            return rd_missing(r, "kv_channels", "hidden size is not a multiple of the heads (arguments.py)");
        RI("kv_channels", m->hidden / m->heads, 1, 10000000, m->head_dim);
    } else {
        rd_kv(r, "kv_channels"); /* MLA has its own head sizes */
    }
    /* the activation: the row whose Megatron switch is on (pp_activations), else Megatron's GELU */
    m->act = PP_ACT_GELU;
    const char *act_key = NULL;
    for (int a = 0; a < PP_ACT_COUNT; a++) {
        const char *sw = pp_activations[a].megatron;
        if (!sw || !sw[0]) continue;
        char dest[64];
        snprintf(dest, sizeof dest, "%s", sw + 2); /* "--squared-relu" -> squared_relu */
        for (char *c = dest; *c; c++)
            if (*c == '-') *c = '_';
        bool on = false;
        if ((st = rd_bool(r, dest, false, &on))) return st;
        if (!on) continue;
        if (act_key) {
            pp_margs_kv *a1 = pp_margs_kv_find(r->a, act_key), *a2 = pp_margs_kv_find(r->a, dest);
            return rd_bad(r, later(a1, a2), "--%s and %s exclude each other", act_key, sw);
        }
        act_key = pp_margs_kv_find(r->a, dest) ? pp_margs_kv_find(r->a, dest)->key : dest;
        m->act = (pp_act)a;
    }
    const bool swiglu = pp_activations[m->act].gated;
    /* Megatron's default MLP: 4h, or 2/3 of it rounded down to 64 with SwiGLU (validate_args) */
    int64_t ffn_def = swiglu ? (int64_t)((4.0 * (double)m->hidden * 2.0 / 3.0) / 64.0) * 64 : 4 * m->hidden;
    RI("ffn_hidden_size", ffn_def > 0 ? ffn_def : 1, 1, 100000000, m->ffn);
    /* The vocabulary as the tokenizer has it; parplan pads it itself (memory.c, 128 x tp). A dump
     * prints vocab_size (NullTokenizer) or None (a real tokenizer: the log then prints
     * "padded vocab (size: V)" once the tokenizer is built); padded_vocab_size last. */
    if (rd_kv(r, "vocab_size")) RI("vocab_size", 0, 1, 100000000, m->vocab);
    else if (r->a->log_vocab > 0) m->vocab = r->a->log_vocab;
    else if (rd_kv(r, "padded_vocab_size")) RI("padded_vocab_size", 0, 1, 100000000, m->vocab);
    else c->need_vocab = true;
    RI("seq_length", -1, 1, 100000000, m->seq);
    const char *norm = NULL, *pos = NULL, *smax = NULL;
    pp_margs_kv *kn, *kp, *ks;
    if ((st = rd_str(r, "normalization", &norm, &kn))) return st;
    if (!norm || !strcmp(norm, "LayerNorm")) m->norm = PP_NORM_LAYERNORM;
    else if (!strcmp(norm, "RMSNorm")) m->norm = PP_NORM_RMSNORM;
    else return rd_bad(r, kn, "unknown value '%s' (LayerNorm or RMSNorm)", norm);
    if ((st = rd_str(r, "position_embedding_type", &pos, &kp))) return st;
    bool rotary;
    if ((st = rd_bool(r, "use_rotary_position_embeddings", false, &rotary))) return st;
    rd_kv(r, "add_position_embedding");
    if (!pos || !strcmp(pos, "learned_absolute")) m->pos = rotary ? PP_POS_ROPE : PP_POS_LEARNED;
    else if (!strcmp(pos, "rope") || !strcmp(pos, "yarn") || !strcmp(pos, "mrope")) m->pos = PP_POS_ROPE;
    else if (!strcmp(pos, "none")) m->pos = PP_POS_NONE;
    else if (!strcmp(pos, "relative")) {
        m->pos = PP_POS_NONE;
        note(r, "%s relative (T5 attention bias: no position parameters modelled)", kv_name(kp));
    } else
        return rd_bad(r, kp, "unknown value '%s' (learned_absolute, rope, yarn, mrope, relative or none)", pos);
    bool untie, bias, qkv_bias, qkln;
    if ((st = rd_bool(r, "untie_embeddings_and_output_weights", false, &untie)) ||
        (st = rd_bool(r, "add_bias_linear", true, &bias)) || (st = rd_bool(r, "add_qkv_bias", false, &qkv_bias)) ||
        (st = rd_bool(r, "qk_layernorm", false, &qkln)))
        return st;
    m->tied = !untie;
    m->bias = bias;
    m->qkv_bias = bias || qkv_bias;
    m->qk_norm = qkln ? PP_QKNORM_HEAD : PP_QKNORM_NONE;
    if ((st = rd_str(r, "softmax_type", &smax, &ks))) return st;
    if (smax && !strcmp(smax, "learnable")) m->attn_sinks = true;
    else if (smax && strcmp(smax, "vanilla") && strcmp(smax, "off-by-one"))
        return rd_bad(r, ks, "unknown value '%s' (vanilla, off-by-one or learnable)", smax);
    /* Mixture of Experts */
    RI("num_experts", 0, 0, 100000, m->experts);
    if (m->experts > 1) {
        RI("moe_router_topk", 2, 1, m->experts, m->topk);
        RI("moe_ffn_hidden_size", m->ffn, 1, 100000000, m->moe_ffn);
        RI("moe_shared_expert_intermediate_size", 0, 0, 100000000, m->shared_ffn);
        m->shared_experts = m->shared_ffn > 0 ? 1 : 0; /* one shared MLP of the summed size */
        if ((st = rd_bool(r, "moe_shared_expert_gate", false, &m->shared_gate)) ||
            (st = rd_bool(r, "moe_router_enable_expert_bias", false, &m->router_expert_bias)))
            return st;
        /* the expert bias is counted as the router's bias, and so is the router's linear bias that
         * Megatron's linear biases give it (router.py) */
        m->router_bias = m->router_expert_bias || bias;
        pp_margs_kv *kf = rd_kv(r, "moe_layer_freq");
        if (kf) {
            int64_t *pat = malloc((size_t)(m->layers + 1) * sizeof *pat);
            if (!pat) return pp_error_set(r->err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            int n = 0;
            int64_t every = 0;
            st = rd_list(r, kf, pat, (int)(m->layers + 1 > 100000 ? 100000 : m->layers + 1), &n, &every);
            if (st == PP_OK && n == 0) {
                /* an integer N: layer i is MoE when i % N == 0 (gpt_layer_specs.py) */
                if (every < 1 || every > m->layers) st = rd_bad(r, kf, "must be between 1 and %lld, got %lld",
                                                                 (long long)m->layers, (long long)every);
                m->moe_every = every;
            } else if (st == PP_OK) {
                bool bin = true;
                for (int i = 0; i < n; i++) bin &= pat[i] == 0 || pat[i] == 1;
                if (n != m->layers) st = rd_bad(r, kf, "the pattern has %d entries, the model %lld layers", n,
                                                (long long)m->layers);
                else if (!bin) st = rd_bad(r, kf, "the pattern holds values other than 0 and 1");
                else if (!fit_moe_pattern(m, pat, m->layers))
                    st = rd_bad(r, kf, "no MoE layer, or more than %d exceptions to a regular pattern", PP_MODEL_MAX_LIST);
            }
            free(pat);
            if (st) return st;
        }
    } else {
        m->experts = 0;
    }
    /* Multi-latent attention (its own defaults: arguments.py --kv-lora-rank 32, --qk-head-dim 128,
     * --qk-pos-emb-head-dim 64, --v-head-dim 128, --q-lora-rank None) */
    if (mla) {
        RI("q_lora_rank", 0, 0, 10000000, m->q_lora_rank);
        RI("kv_lora_rank", 32, 1, 10000000, m->kv_lora_rank);
        RI("qk_head_dim", 128, 1, 10000000, m->qk_nope_dim);
        RI("qk_pos_emb_head_dim", 64, 1, 10000000, m->qk_rope_dim);
        RI("v_head_dim", 128, 1, 10000000, m->v_head_dim);
        m->kv_heads = m->heads;
        m->head_dim = 0; /* qk_head_dim + qk_pos_emb_head_dim (pp_model_validate) */
    }
    RI("mtp_num_layers", 0, 0, 64, m->mtp_layers);
    /* Sliding windows: --window-size "L,R" (TE's (left, right); -1 is unbounded), and which layers
     * are windowed (utils.py is_layer_window_attention: 1-based layer n is windowed unless
     * n % N == 0 for an integer N; a list marks windowed layers with 1). */
    pp_margs_kv *kw = rd_kv(r, "window_size");
    if (kw) {
        if ((st = rd_resolved(r, kw))) return st;
        long long lft = 0, rgt = 0;
        char tail = 0;
        const char *p = kw->value;
        while (*p == '(' || *p == '[' || *p == ' ') p++;
        if (sscanf(p, "%lld , %lld %c", &lft, &rgt, &tail) < 2 || (tail && tail != ')' && tail != ']'))
            return rd_bad(r, kw, "expects two integers 'left,right', got '%s'", kw->value);
        if (lft > 100000000 || lft < -1 || rgt < -1 || rgt > 100000000)
            return rd_bad(r, kw, "window sizes must be between -1 and 100000000, got '%s'", kw->value);
        if (rgt != 0) note(r, "%s %s (a window that looks ahead: modelled as causal)", kv_name(kw), kw->value);
        if (lft > 0) m->window = lft;
        pp_margs_kv *kk = rd_kv(r, "window_attn_skip_freq");
        if (kk && m->window > 0) {
            int64_t *pat = malloc((size_t)(m->layers + 1) * sizeof *pat);
            if (!pat) return pp_error_set(r->err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            int n = 0;
            int64_t every = 0;
            st = rd_list(r, kk, pat, (int)(m->layers + 1 > 100000 ? 100000 : m->layers + 1), &n, &every);
            if (st == PP_OK && n == 0) {
                if (every < 1) st = rd_bad(r, kk, "must be at least 1, got %lld", (long long)every);
                m->window_full_every = every;
                m->window_full_phase = every - 1;
                if (every == 1) m->window = m->window_full_every = m->window_full_phase = 0;
            } else if (st == PP_OK && n != m->layers) {
                st = rd_bad(r, kk, "the pattern has %d entries, the model %lld layers", n, (long long)m->layers);
            } else if (st == PP_OK) {
                /* the regular pattern closest to the list */
                int64_t best = -1, best_e = 0, best_p = 0;
                for (int64_t e = 0; e <= m->layers && best != 0; e++)
                    for (int64_t ph = 0; ph < (e ? e : 1) && best != 0; ph++) {
                        int64_t miss = 0;
                        for (int64_t i = 0; i < m->layers; i++) {
                            bool win = e == 0 || i % e != ph;
                            miss += win != (pat[i] != 0);
                        }
                        if (best < 0 || miss < best) best = miss, best_e = e, best_p = ph;
                    }
                m->window_full_every = best_e;
                m->window_full_phase = best_p;
                bool any = false;
                for (int i = 0; i < n; i++) any |= pat[i] != 0;
                if (!any) m->window = m->window_full_every = m->window_full_phase = 0;
                else if (best > 0)
                    note(r, "%s (an irregular window pattern: modelled as every %lld-th layer full)", kv_name(kk),
                         (long long)best_e);
            }
            free(pat);
            if (st) return st;
        }
    }
    if ((st = read_definition(r, mla))) return st;
    if (!c->need_vocab && (st = pp_model_validate(m, r->err))) {
        char msg[sizeof r->err->msg];
        snprintf(msg, sizeof msg, "%s", r->err->msg);
        return pp_error_set(r->err, PP_ERR_INPUT, r->a->path, r->a->line, 0, "the model the arguments describe: %s", msg);
    }
#undef RI
    return PP_OK;
}

/* The pipeline split the arguments state: --pipeline-model-parallel-layout, or the first/last
 * stage sizes or the account-for flags (pp_pipeline.h does the arithmetic, with Megatron's own
 * checks). Sets the virtual stages from the layout string; an interleaved split goes to
 * vstage_layers, one without interleaving to stage_layers (its recompute is filled later). */
static pp_status read_pipeline_split(rd *r, const pp_pipeline_flags *acc)
{
    pp_margs_config *c = r->c;
    pp_layout *l = &c->layout;
    const pp_model *m = &c->model;
    pp_status st;
    pp_pipeline_flags pf = *acc;
    if ((st = rd_int(r, "decoder_first_pipeline_num_layers", 0, 1, 1000000, &pf.first)) ||
        (st = rd_int(r, "decoder_last_pipeline_num_layers", 0, 1, 1000000, &pf.last)))
        return st;
    pp_margs_kv *kl = rd_kv(r, "pipeline_model_parallel_layout");
    pp_margs_kv *kf = pp_margs_kv_find(r->a, pf.first ? "decoder_first_pipeline_num_layers"
                                               : pf.last ? "decoder_last_pipeline_num_layers"
                                               : pf.account_embedding ? "account_for_embedding_in_pipeline_split"
                                                                      : "account_for_loss_in_pipeline_split");
    bool flags = pf.first || pf.last || pf.account_embedding || pf.account_loss;
    int *counts = c->vstage_layers;
    int64_t vpp = l->vpp;
    pp_error e = {0};
    if (kl) {
        if ((st = rd_resolved(r, kl))) return st;
        if (flags)
            return rd_bad(r, kl, "the layout string cannot be set with the other pipeline layout arguments (%s): "
                                 "Megatron's transformer_config.py refuses them together", kf ? kv_name(kf) : "");
        if (pp_pipeline_layout_parse(kl->value, l->pp, m->layers, m->mtp_layers, counts, PP_MAX_VSTAGES, &vpp, &e))
            return rd_bad(r, kl, "%s", e.msg);
        /* the layout's length sets the virtual stages (arguments.py); one given beside it must agree */
        if (l->vpp > 1 && vpp != l->vpp)
            return rd_bad(r, kl, "%lld virtual stages per rank conflict with the layout's %lld (transformer_config.py)",
                          (long long)l->vpp, (long long)vpp);
        l->vpp = vpp;
    } else if (flags && l->pp > 1) {
        if (pp_pipeline_split_megatron(m->layers, l->pp, l->vpp, &pf, "--decoder-first-pipeline-num-layers",
                                       "--decoder-last-pipeline-num-layers", counts, &e))
            return rd_bad(r, kf, "%s", e.msg);
    } else {
        return PP_OK;
    }
    if (l->vpp > 1) {
        c->vsplit = true;
    } else {
        for (int64_t i = 0; i < l->pp; i++) c->stage_layers[i] = counts[i];
        c->uneven = true;
    }
    return PP_OK;
}

static pp_status read_layout(rd *r)
{
    pp_margs_config *c = r->c;
    pp_layout *l = &c->layout;
    const pp_model *m = &c->model;
    pp_status st;
    int64_t v;
    pp_layout_init(l);
#define RI(key, def, lo, hi, dst)                                          \
    do {                                                                   \
        if ((st = rd_int(r, key, def, lo, hi, &v))) return st;             \
        dst = v;                                                           \
    } while (0)
    RI("tensor_model_parallel_size", 1, 1, 1000000, l->tp);
    RI("pipeline_model_parallel_size", 1, 1, 1000000, l->pp);
    RI("context_parallel_size", 1, 1, 1000000, l->cp);
    RI("expert_model_parallel_size", 1, 1, 1000000, l->ep);
    RI("expert_tensor_parallel_size", 0, 0, 1000000, l->etp);
    if (m->experts <= 1) l->etp = 0;
    /* Generalized TP weight rematerialisation (arguments.py resolve_tensor_parallel_weight_shards):
     * weights sharded over fewer ranks than the TP group and gathered again; none when the shards
     * are the (expert) TP size, which the dump prints when the flag is not given. */
    int64_t shards = 0, eshards = 0;
    RI("tensor_parallel_num_weight_shards", 0, 1, 1000000, shards);
    RI("expert_tensor_parallel_num_weight_shards", 0, 1, 1000000, eshards);
    if ((shards && shards != l->tp) || (eshards && eshards != (l->etp ? l->etp : l->tp)))
        note(r, "--tensor-parallel-num-weight-shards %lld / --expert-tensor-parallel-num-weight-shards %lld (TP weight "
                "rematerialisation)", (long long)shards, (long long)eshards);
    RI("micro_batch_size", -1, 1, 1000000, l->mbs);
    RI("global_batch_size", 0, 1, (int64_t)1 << 40, c->gbs);
    RI("world_size", 0, 1, 10000000, c->world_size);
    RI("gpus_per_node", 0, 1, 1024, c->gpus_per_node);
    RI("data_parallel_size", 0, 1, 10000000, c->dp);
    if (c->world_size) c->has |= PP_MARGS_HAS_WORLD;
    if (c->gpus_per_node) c->has |= PP_MARGS_HAS_GPN;
    if (c->dp) c->has |= PP_MARGS_HAS_DP;
    if (l->pp > PP_MAX_STAGES)
        return rd_bad(r, pp_margs_kv_find(r->a, "pipeline_model_parallel_size"), "more than %d pipeline stages", PP_MAX_STAGES);
    /* interleaving: virtual stages per rank, or layers per virtual stage (counting the embedding
     * and the loss where the account-for flags say so: arguments.py validate_args) */
    pp_pipeline_flags pf = {0};
    if ((st = rd_bool(r, "account_for_embedding_in_pipeline_split", false, &pf.account_embedding)) ||
        (st = rd_bool(r, "account_for_loss_in_pipeline_split", false, &pf.account_loss)))
        return st;
    int64_t vpp = 1, per = 0;
    RI("num_virtual_stages_per_pipeline_rank", 1, 1, 1000000, vpp);
    if (vpp == 1) RI("virtual_pipeline_model_parallel_size", 1, 1, 1000000, vpp);
    pp_margs_kv *kper = rd_kv(r, "num_layers_per_virtual_pipeline_stage");
    if (vpp == 1 && kper) {
        RI("num_layers_per_virtual_pipeline_stage", 0, 1, 1000000, per);
        int64_t num = m->layers + (pf.account_embedding ? 1 : 0) + (pf.account_loss ? 1 : 0);
        if (num % (per * l->pp))
            return rd_bad(r, kper, "%lld layers per virtual stage x %lld pipeline stages do not divide the %lld layers%s",
                          (long long)per, (long long)l->pp, (long long)m->layers,
                          num > m->layers ? " with the embedding / loss counted" : "");
        vpp = num / (per * l->pp);
    }
    l->vpp = vpp;
    if ((st = read_pipeline_split(r, &pf))) return st;
    bool sp;
    if ((st = rd_bool(r, "use_distributed_optimizer", false, &l->dist_opt)) ||
        (st = rd_bool(r, "sequence_parallel", false, &sp)))
        return st;
    l->sp = sp && l->tp > 1; /* validate_args turns it off at tp 1 */
    /* Megatron-FSDP (--use-megatron-fsdp): its --data-parallel-sharding-strategy no_shard | optim |
     * optim_grads | optim_grads_params is parplan's --megatron-fsdp --zero 0..3; it replaces the
     * distributed optimizer's sharding */
    bool mfsdp;
    if ((st = rd_bool(r, "use_megatron_fsdp", false, &mfsdp))) return st;
    if (mfsdp) {
        const char *strat = NULL;
        pp_margs_kv *kst;
        if ((st = rd_str(r, "data_parallel_sharding_strategy", &strat, &kst))) return st;
        static const char *const strategies[] = {"no_shard", "optim", "optim_grads", "optim_grads_params"};
        /* absent: Megatron's default optim_grads_params (arguments.py --data-parallel-sharding-strategy) */
        int z = strat ? pp_name_lookup(strategies, 4, strat) : 3;
        if (z < 0) return rd_bad(r, kst, "unknown value '%s' (no_shard, optim, optim_grads or optim_grads_params)", strat);
        if (z == 0) {
            note(r, "--use-megatron-fsdp with --data-parallel-sharding-strategy no_shard (modelled as Megatron's DDP)");
        } else {
            l->zero = z; /* read_stack sets the stack's megatron_fsdp from it */
            l->dist_opt = false;
        }
    }
    bool off;
    double frac;
    if ((st = rd_bool(r, "optimizer_cpu_offload", false, &off)) ||
        (st = rd_num(r, "optimizer_offload_fraction", 1.0, 0, 1, false, &frac)))
        return st;
    if (off) {
        l->offload = PP_OFF_OPTIMIZER;
        if (frac < 1.0) note(r, "--optimizer-offload-fraction %g (modelled as the whole optimizer offloaded)", frac);
    }
    /* recompute */
    const char *gran = NULL, *meth = NULL;
    pp_margs_kv *kg, *km;
    if ((st = rd_str(r, "recompute_granularity", &gran, &kg)) || (st = rd_str(r, "recompute_method", &meth, &km)))
        return st;
    int64_t rc_layers = 0;
    if (gran && !strcmp(gran, "full")) {
        l->recompute = PP_RC_FULL;
        if (meth && strcmp(meth, "uniform") && strcmp(meth, "block"))
            return rd_bad(r, km, "unknown value '%s' (uniform or block)", meth);
        int64_t nl = 0;
        RI("recompute_num_layers", 1, 1, 1000000, nl);
        if (meth && !strcmp(meth, "block")) {
            /* block: the first N layers of each model chunk (transformer_config.py) */
            rc_layers = nl * l->vpp;
        } else if (nl > 1) {
            note(r, "--recompute-method uniform --recompute-num-layers %lld (checkpoints of %lld layers: modelled as every "
                    "layer recomputed on its own)", (long long)nl, (long long)nl);
        }
    } else if (gran && !strcmp(gran, "selective")) {
        l->recompute = PP_RC_SELECTIVE;
        const char *mods = NULL;
        pp_margs_kv *kmo;
        if ((st = rd_str(r, "recompute_modules", &mods, &kmo))) return st;
        /* "core_attn mla_up_proj" on a command line, "['core_attn', 'mla_up_proj']" in a dump:
         * Megatron's module names (arguments.py --recompute-modules), one bit each. */
        if (mods) {
            char buf[512];
            snprintf(buf, sizeof buf, "%s", mods);
            for (char *q = buf; *q; q++)
                if (strchr("[]',\"", *q)) *q = ' ';
            unsigned bits = 0;
            for (char *save = NULL, *tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
                int i = pp_name_lookup(pp_rc_module_names, PP_RCM_COUNT, tok);
                if (i < 0) note(r, "%s: module '%s' (not modelled: the other modules are)", kv_name(kmo), tok);
                else bits |= 1u << i;
            }
            l->recompute_modules = bits;
        }
    } else if (gran) {
        return rd_bad(r, kg, "unknown value '%s' (full or selective)", gran);
    }
    int64_t per_stage = (m->layers + l->pp - 1) / l->pp;
    if (c->vsplit) {
        /* by model chunk: a count that reaches the largest chunk recomputes every layer */
        int64_t big = 0;
        for (int64_t k = 0; k < l->pp * l->vpp; k++)
            if (c->vstage_layers[k] > big) big = c->vstage_layers[k];
        per_stage = big * l->vpp;
    }
    l->recompute_layers = rc_layers > 0 && rc_layers < per_stage ? rc_layers : 0;
    if (c->uneven) {
        for (int64_t i = 0; i < l->pp; i++) {
            int n = c->stage_layers[i];
            c->stage_recompute[i] = l->recompute != PP_RC_FULL ? 0 : rc_layers > 0 && rc_layers < n ? (int)rc_layers : n;
        }
        l->recompute_layers = 0;
    }
#undef RI
    return PP_OK;
}

/* CUDA graphs (arguments.py --cuda-graph-impl none|local|transformer_engine|full_iteration; the
 * deprecated --enable-cuda-graph is local and --external-cuda-graph transformer_engine;
 * --cuda-graph-modules, formerly --cuda-graph-scope: the per-layer parts, none or "full" the whole
 * layer, and the deprecated "full_iteration" one graph of the iteration) as --cuda-graphs. */
static pp_status read_cuda_graphs(rd *r)
{
    pp_margs_config *c = r->c;
    const char *impl = NULL, *mods = NULL;
    pp_margs_kv *ki = NULL, *km = NULL;
    bool en = false, ext = false;
    pp_status st;
    if ((st = rd_str(r, "cuda_graph_impl", &impl, &ki)) || (st = rd_bool(r, "enable_cuda_graph", false, &en)) ||
        (st = rd_bool(r, "external_cuda_graph", false, &ext)) || (st = rd_str(r, "cuda_graph_modules", &mods, &km)))
        return st;
    if (!mods && (st = rd_str(r, "cuda_graph_scope", &mods, &km))) return st;
    bool full = false, per_layer = en || ext;
    if (impl && !strcmp(impl, "full_iteration")) full = true;
    else if (impl && (!strcmp(impl, "local") || !strcmp(impl, "transformer_engine"))) per_layer = true;
    else if (impl && strcmp(impl, "none"))
        return rd_bad(r, ki, "unknown value '%s' (none, local, transformer_engine or full_iteration)", impl);
    unsigned bits = 0;
    if (per_layer && mods) {
        /* "attn moe_router" on a command line, "['attn', 'moe_router']" or the enum's repr in a dump */
        char buf[512];
        snprintf(buf, sizeof buf, "%s", mods);
        for (char *q = buf; *q; q++)
            if (strchr("[]',\"<>:()", *q)) *q = ' ';
        for (char *save = NULL, *tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
            const char *name = strrchr(tok, '.') ? strrchr(tok, '.') + 1 : tok;
            int i = pp_name_lookup(pp_cuda_graph_names, PP_CG_COUNT, name);
            if (!strcmp(name, "full_iteration")) full = true;
            else if (i > PP_CG_NONE) bits |= 1u << i;
            else if (strcmp(name, "full") && strcmp(name, "None") && strcmp(name, "CudaGraphModule"))
                note(r, "%s: part '%s' (not modelled: the other parts are)", kv_name(km), name);
        }
    }
    if (full) c->stack.cuda_graphs = 1u << PP_CG_FULL_ITERATION;
    else if (per_layer)
        c->stack.cuda_graphs = bits ? bits : (1u << PP_CG_ATTN) | (1u << (c->model.experts > 1 ? PP_CG_MOE : PP_CG_MLP));
    return PP_OK;
}

/* A Megatron-FSDP dtype argument as written or as a dump prints it: 32, 16, 0 for auto / None,
 * -1 unknown. */
static int mfsdp_dtype_bits(const char *v)
{
    if (!strcmp(v, "fp32") || !strcmp(v, "torch.float32")) return 32;
    if (!strcmp(v, "bf16") || !strcmp(v, "torch.bfloat16") || !strcmp(v, "fp16") || !strcmp(v, "torch.float16"))
        return 16;
    if (!strcmp(v, "auto") || !strcmp(v, "None")) return 0;
    return -1;
}

/* Megatron-FSDP's buffers (arguments.py validate_args: --use-nccl-ub and
 * --megatron-fsdp-max-pool-double-buffer turn on fsdp_double_buffer), its communication unit and its
 * main gradients' dtype (--megatron-fsdp-main-grads-dtype, auto: the weights'); the gradient
 * communication dtype allocates buffers of its own only where it is not the main gradients'
 * (distributed_data_parallel_config.py megatron_fsdp_grad_comm_dtype: "No additional memory is
 * allocated when grad_comm_dtype == main_grads_dtype"), named then. */
static pp_status read_mfsdp(rd *r, pp_stack *s)
{
    pp_status st;
    bool db, ub, maxpool;
    int64_t unit = 0;
    const char *mg = NULL, *gc = NULL;
    pp_margs_kv *kmg, *kgc;
    if ((st = rd_bool(r, "fsdp_double_buffer", false, &db)) || (st = rd_bool(r, "nccl_ub", false, &ub)) ||
        (st = rd_bool(r, "megatron_fsdp_max_pool_double_buffer", false, &maxpool)) ||
        (st = rd_str(r, "megatron_fsdp_main_grads_dtype", &mg, &kmg)) ||
        (st = rd_str(r, "megatron_fsdp_grad_comm_dtype", &gc, &kgc)))
        return st;
    if (rd_kv(r, "suggested_communication_unit_size") &&
        (st = rd_int(r, "suggested_communication_unit_size", 0, 1, 1000000000000LL, &unit)))
        return st;
    const int mbits = mg ? mfsdp_dtype_bits(mg) : 0, cbits = gc ? mfsdp_dtype_bits(gc) : 0;
    if (mbits < 0) return rd_bad(r, kmg, "unknown value '%s' (fp32, bf16, fp16 or auto)", mg);
    if (cbits < 0) return rd_bad(r, kgc, "unknown value '%s' (fp32, bf16, fp16 or auto)", gc);
    const bool fp32 = mbits == 32;
    if (!s->megatron_fsdp) return PP_OK;
    if (cbits && cbits != (fp32 ? 32 : 16))
        note(r, "--megatron-fsdp-grad-comm-dtype %s (communication buffers beside %s main gradients)", gc,
             fp32 ? "fp32" : "16-bit");
    s->fsdp_double_buffer = db || ub || maxpool;
    s->fsdp_unit_size = unit;
    s->fsdp_grads_fp32 = fp32;
    return PP_OK;
}

static pp_status read_stack(rd *r)
{
    pp_margs_config *c = r->c;
    pp_stack *s = &c->stack;
    pp_status st;
    pp_stack_init(s);
    s->megatron_fsdp = c->layout.zero > 0; /* read_layout: --use-megatron-fsdp with a sharding strategy */
    if ((st = read_mfsdp(r, s))) return st;
    bool fp16, bf16;
    const char *fp8 = NULL, *fp8_recipe = NULL, *fp4 = NULL, *fp4_recipe = NULL;
    pp_margs_kv *k8, *k8r, *k4, *k4r;
    if ((st = rd_bool(r, "fp16", false, &fp16)) || (st = rd_bool(r, "bf16", false, &bf16)) ||
        (st = rd_str(r, "fp8", &fp8, &k8)) || (st = rd_str(r, "fp8_recipe", &fp8_recipe, &k8r)) ||
        (st = rd_str(r, "fp4", &fp4, &k4)) || (st = rd_str(r, "fp4_recipe", &fp4_recipe, &k4r)))
        return st;
    if (fp16 && bf16)
        return rd_bad(r, later(pp_margs_kv_find(r->a, "fp16"), pp_margs_kv_find(r->a, "bf16")),
                      "--fp16 and --bf16 exclude each other (arguments.py validate_args)");
    if (!fp16 && !bf16)
        return rd_missing(r, "bf16", "the run trains in fp32 (neither --bf16 nor --fp16); parplan models 16-bit training");
    if (fp8 && strcmp(fp8, "hybrid") && strcmp(fp8, "e4m3"))
        return rd_bad(r, k8, "unknown value '%s' (hybrid or e4m3)", fp8);
    s->precision = fp8 ? PP_PREC_FP8 : fp16 ? PP_PREC_FP16 : PP_PREC_BF16;
    /* The recipes (transformer_config.py fp8_recipe, default 'delayed'; fp4 'e2m1' with fp4_recipe
     * 'nvfp4'; arguments.py refuses --fp4-format with --fp8-format). delayed, tensorwise (current
     * per-tensor scaling) and blockwise (1x128 / 128x128 scales, Hopper) are read as fp8: the same
     * 8-bit operands and row-wise plus transposed weights, the scales' bytes and the amax work left
     * out; mxfp8 as --precision mxfp8; custom quantizers are refused. */
    if (fp8 && fp8_recipe) {
        if (!strcmp(fp8_recipe, "mxfp8")) s->precision = PP_PREC_MXFP8;
        else if (strcmp(fp8_recipe, "delayed") && strcmp(fp8_recipe, "tensorwise") && strcmp(fp8_recipe, "blockwise"))
            return rd_bad(r, k8r, "'%s' is not modelled (delayed, tensorwise, blockwise or mxfp8)", fp8_recipe);
    }
    if (fp4) {
        if (fp8)
            return rd_bad(r, later(k8, k4), "--fp4-format and --fp8-format exclude each other (arguments.py validate_args)");
        if (strcmp(fp4, "e2m1")) return rd_bad(r, k4, "unknown value '%s' (e2m1)", fp4);
        if (fp4_recipe && strcmp(fp4_recipe, "nvfp4"))
            return rd_bad(r, k4r, "'%s' is not modelled (nvfp4)", fp4_recipe);
        s->precision = PP_PREC_NVFP4;
    }
    /* dropout: Megatron's defaults are 0.1 (arguments.py) */
    if ((st = rd_num(r, "attention_dropout", 0.1, 0, 1, true, &s->attention_dropout)) ||
        (st = rd_num(r, "hidden_dropout", 0.1, 0, 1, true, &s->hidden_dropout)))
        return st;
    s->dropout_given = true;
    const char *impl = NULL, *backend = NULL, *disp = NULL;
    pp_margs_kv *ki, *kd;
    if ((st = rd_str(r, "transformer_impl", &impl, &ki)) || (st = rd_str(r, "attention_backend", &backend, NULL)) ||
        (st = rd_str(r, "moe_token_dispatcher_type", &disp, &kd)))
        return st;
    if (!impl || !strcmp(impl, "transformer_engine")) s->impl = PP_IMPL_TE;
    else if (!strcmp(impl, "local")) s->impl = PP_IMPL_LOCAL;
    else return rd_bad(r, ki, "unknown value '%s' (transformer_engine or local)", impl);
    s->impl_given = true;
    snprintf(c->impl_name, sizeof c->impl_name, "%s", impl ? impl : "transformer_engine");
    /* Megatron's local DotProductAttention is unfused; TE runs flash or cuDNN fused attention
     * unless --attention-backend unfused (or local), or the script's environment turns both off
     * (TE attention/dot_product_attention/utils.py get_attention_backend: NVTE_FLASH_ATTN and
     * NVTE_FUSED_ATTN, 1 by default) */
    const char *env_fa = NULL, *env_fu = NULL;
    if ((st = rd_str(r, "env:NVTE_FLASH_ATTN", &env_fa, NULL)) || (st = rd_str(r, "env:NVTE_FUSED_ATTN", &env_fu, NULL)))
        return st;
    bool env_off = env_fa && env_fu && !strcmp(env_fa, "0") && !strcmp(env_fu, "0");
    bool unfused = s->impl == PP_IMPL_LOCAL || env_off ||
                   (backend && (strstr(backend, "unfused") || strstr(backend, "local")));
    c->attention = unfused ? PP_ATTN_UNFUSED : PP_ATTN_FLASH;
    /* TE's flash-attn path instead of its cuDNN attention: --attention-backend flash
     * (language_module.py _set_attention_backend sets NVTE_FUSED_ATTN=0), or NVTE_FUSED_ATTN=0 in
     * the script's environment, as NeMo-Framework-Launcher 24.01-24.07 set it. Priced as the
     * flash-attn 2 package (--te-attention flash2); flash-attn 3, where installed, is not modelled. */
    bool fused_off = env_fu && !strcmp(env_fu, "0");
    if (!unfused && ((backend && !strcmp(backend, "flash")) || fused_off)) s->te_attention = PP_TEATTN_FLASH2;
    c->framework = PP_FW_MEGATRON;
    if ((st = rd_bool(r, "tp_comm_overlap", false, &s->tp_comm_overlap))) return st;
    if (!disp || !strcmp(disp, "allgather")) s->dispatcher = PP_DISPATCH_ALLGATHER;
    else if (!strcmp(disp, "alltoall")) s->dispatcher = PP_DISPATCH_ALLTOALL;
    else if (!strcmp(disp, "flex")) s->dispatcher = PP_DISPATCH_FLEX; /* DeepEP / HybridEP backends */
    else
        return rd_bad(r, kd, "unknown value '%s' (allgather, alltoall or flex)", disp);
    /* the flex dispatcher's library (transformer_config.py moe_flex_dispatcher_backend, default
     * deepep; --moe-enable-deepep, deprecated, sets deepep and refuses hybridep beside it) */
    const char *fb = NULL;
    pp_margs_kv *kb;
    bool enable_deepep = false;
    if ((st = rd_str(r, "moe_flex_dispatcher_backend", &fb, &kb)) ||
        (st = rd_bool(r, "moe_enable_deepep", false, &enable_deepep)))
        return st;
    s->flex_backend = PP_FLEX_DEEPEP;
    if (fb && !strcmp(fb, "hybridep")) {
        if (enable_deepep) return rd_bad(r, kb, "hybridep beside --moe-enable-deepep (Megatron refuses the two together)");
        s->flex_backend = PP_FLEX_HYBRIDEP;
    } else if (fb && !strcmp(fb, "ncclep")) {
        note(r, "--moe-flex-dispatcher-backend ncclep (NCCL EP through TransformerEngine: its buffers are not priced)");
    } else if (fb && strcmp(fb, "deepep")) {
        return rd_bad(r, kb, "unknown value '%s' (deepep, hybridep or ncclep)", fb);
    }
    if (s->dispatcher != PP_DISPATCH_FLEX) s->flex_backend = PP_FLEX_DEEPEP; /* the backend of no flex dispatcher */
    if ((st = rd_bool(r, "moe_grouped_gemm", false, &s->grouped_gemm))) return st;
    if ((st = rd_bool(r, "overlap_moe_expert_parallel_comm", false, &s->ep_overlap))) return st;
    if ((st = read_cuda_graphs(r))) return st;
    /* --cpu-offloading-num-layers N > 0 turns Megatron's activation offloading on (arguments.py
     * validate_args: args.cpu_offloading = True); what it allows is checked with the layout */
    if ((st = rd_int(r, "cpu_offloading_num_layers", 0, 0, 1000000, &s->cpu_offload_layers))) return st;
    /* the vocabulary's padding base (arguments.py --make-vocab-size-divisible-by, default 128;
     * vocab_utils.py): kept only where the run states it, so 0 stays "the framework's" */
    if (rd_kv(r, "make_vocab_size_divisible_by") &&
        (st = rd_int(r, "make_vocab_size_divisible_by", 128, 1, 1000000, &s->vocab_divisible_by)))
        return st;
    if (s->grouped_gemm && s->impl == PP_IMPL_LOCAL) {
        /* LocalSpecProvider.grouped_mlp_modules (megatron/core/models/backends.py): SequentialMLP */
        s->grouped_gemm = false;
        if (c->model.experts > 1)
            note(r, "--moe-grouped-gemm with --transformer-impl local (ignored there: the experts run one by one)");
    }
    double cf = 0;
    if ((st = rd_num(r, "moe_expert_capacity_factor", 0, -1e9, 1e6, false, &cf))) return st;
    s->moe_capacity_factor = cf > 0 ? cf : 0; /* negative: None, dropless (transformer_config.py) */
    /* the finer software facts (calibrate's time options) */
    bool gbf16, acc32;
    if ((st = rd_bool(r, "overlap_grad_reduce", false, &c->overlap_grad_reduce)) ||
        (st = rd_bool(r, "overlap_param_gather", false, &c->overlap_param_gather)) ||
        (st = rd_bool(r, "overlap_p2p_comm", true, &c->overlap_p2p_comm)) ||
        (st = rd_bool(r, "gradient_accumulation_fusion", true, &c->grad_accum_fusion)) ||
        (st = rd_bool(r, "grad_reduce_in_bf16", false, &gbf16)) ||
        (st = rd_bool(r, "expandable_segments", false, &s->expandable_segments)))
        return st;
    /* Megatron's bias-activation fusion: bias_swiglu_fusion for a SwiGLU MLP, bias_gelu_fusion
     * otherwise (training/argument_utils.py: bias_activation_fusion), on by default; it changes
     * what the MLP saves (layer.c). */
    bool actf = true;
    const char *fusion_key = c->model.act == PP_ACT_SWIGLU ? "bias_swiglu_fusion" : "bias_gelu_fusion";
    if ((st = rd_bool(r, fusion_key, true, &actf))) return st;
    /* an activation Megatron has no bias kernel for runs unfused whatever the switch says (mlp.py
     * refuses to fuse it) */
    if (!pp_activations[c->model.act].megatron_fusion) actf = false;
    s->act_unfused = !actf;
    /* --cross-entropy-loss-fusion (off by default) with --cross-entropy-fusion-impl (native by
     * default; te is refused by this Megatron's validate_args, but older ones ran it) */
    bool cef = false;
    const char *cei = NULL;
    pp_margs_kv *kc;
    if ((st = rd_bool(r, "cross_entropy_loss_fusion", false, &cef)) ||
        (st = rd_str(r, "cross_entropy_fusion_impl", &cei, &kc)))
        return st;
    if (cei && strcmp(cei, "native") && strcmp(cei, "te"))
        return rd_bad(r, kc, "unknown value '%s' (native or te)", cei);
    s->ce_fusion = !cef ? PP_CE_NONE : cei && !strcmp(cei, "te") ? PP_CE_TE : PP_CE_NATIVE;
    bool mask = true; /* --no-create-attention-mask-in-dataloader (arguments.py: on by default) */
    if ((st = rd_bool(r, "create_attention_mask_in_dataloader", true, &mask))) return st;
    s->no_attention_mask = !mask;
    /* Megatron's precision-aware optimizer (arguments.py --use-precision-aware-optimizer and its
     * dtypes, which only it reads); a training log prints torch dtypes (torch.bfloat16) */
    bool pao = false, fp8pg = false;
    pp_opt_dtype od[4] = {PP_OPT_FP32, PP_OPT_FP32, PP_OPT_FP32, PP_OPT_FP32};
    static const char *const od_keys[4] = {"main_grads_dtype", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype"};
    bool fp4pg = false; /* --fp4-param-gather (transformer_config.py fp4_param): NVFP4 parameters */
    if ((st = rd_bool(r, "use_precision_aware_optimizer", false, &pao)) ||
        (st = rd_bool(r, "fp8_param_gather", false, &fp8pg)) || (st = rd_bool(r, "fp4_param_gather", false, &fp4pg)))
        return st;
    for (int i = 0; i < 4; i++) {
        const char *v = NULL;
        pp_margs_kv *kv;
        if ((st = rd_str(r, od_keys[i], &v, &kv))) return st;
        if (!v) continue;
        static const char *const torch_names[PP_OPT_DTYPE_COUNT] = {"torch.float32", "torch.float16", "torch.bfloat16",
                                                                     "torch.uint8"};
        int d = pp_name_lookup(pp_opt_dtype_names, PP_OPT_DTYPE_COUNT, v);
        if (d < 0) d = pp_name_lookup(torch_names, PP_OPT_DTYPE_COUNT, v);
        /* arguments.py choices: main grads fp32|bf16, main params fp32|fp16 */
        bool ok = d >= 0 && (i != 0 || d == PP_OPT_FP32 || d == PP_OPT_BF16) && (i != 1 || d <= PP_OPT_FP16);
        if (!ok) return rd_bad(r, kv, "unknown value '%s' for %s", v, od_keys[i]);
        od[i] = (pp_opt_dtype)d;
    }
    bool off = false; /* --optimizer-cpu-offload needs the flag (arguments.py); the state is then the host's */
    if ((st = rd_bool(r, "optimizer_cpu_offload", false, &off))) return st;
    if (pao) {
        s->precision_aware_opt = !off;
        s->main_params_dtype = od[1];
        s->exp_avg_dtype = od[2];
        s->exp_avg_sq_dtype = od[3];
    }
    /* one stack field for both: FP8 and MXFP8 parameters under --fp8-format, NVFP4 under --fp4-format */
    s->fp8_param_gather = fp4 ? fp4pg : fp8pg;
    if (fp8pg && !fp8) note(r, "--fp8-param-gather without --fp8-format (no FP8 parameters)");
    if (fp4pg && !fp4) note(r, "--fp4-param-gather without --fp4-format (no FP4 parameters)");
    /* validate_args: bf16 accumulates and reduces in fp32 unless --grad-reduce-in-bf16, or the
     * precision-aware optimizer's --main-grads-dtype bf16 (arguments.py: accumulate in fp32 only
     * when main_grads_dtype is fp32) */
    bool main_grads_fp32 = !pao || od[0] == PP_OPT_FP32;
    pp_margs_kv *ka = rd_kv(r, "accumulate_allreduce_grads_in_fp32");
    if ((st = rd_bool(r, "accumulate_allreduce_grads_in_fp32", bf16 && !gbf16 && main_grads_fp32, &acc32))) return st;
    c->grad_reduce_fp32 = ka ? acc32 : bf16 && !gbf16 && main_grads_fp32;
    s->grad_bf16 = bf16 && !c->grad_reduce_fp32; /* --grad-reduce-bf16 */
    if (!bf16 && c->grad_reduce_fp32) note(r, "--accumulate-allreduce-grads-in-fp32 with --fp16 (modelled as fp16 gradients)");
    return PP_OK;
}

/* Name what is set and not modelled (the table in megatron_args.c). */
static void classify(rd *r)
{
    const pp_margs *a = r->a;
    bool te = r->c->stack.impl == PP_IMPL_TE;
    for (int i = 0; i < a->n; i++) {
        const pp_margs_kv *k = &a->kv[i];
        bool fusion = false;
        if (!pp_margs_kv_unmodelled(a, k, te, &fusion)) continue;
        char f[100];
        const char *name = k->flag;
        bool env = !strncmp(k->key, "env:", 4); /* the script's environment: NAME=value */
        if (env) {
            note(r, "%s=%.60s", k->key + 4, k->value);
            continue;
        }
        if (a->source == PP_MARGS_DUMP || name[0] != '-') {
            key_flag(k->key, f, sizeof f);
            name = f;
        }
        bool sw = !strcmp(k->value, "True") || fusion;
        if (fusion && name[2] != 'n') note(r, "%s False (a TE run with the fusion off)", name);
        else if (sw) note(r, "%s", name);
        else note(r, "%s %.60s", name, k->value);
    }
}

pp_status pp_margs_read(pp_margs *a, pp_margs_config *c, pp_error *err)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < a->n; i++) a->kv[i].used = false;
    rd r = {a, c, err};
    if (a->source == PP_MARGS_NONE)
        return pp_error_set(err, PP_ERR_INPUT, a->path, 0, 0, "no Megatron-LM arguments were read");
    pp_status st = read_model(&r);
    if (st == PP_OK) st = read_layout(&r);
    if (st == PP_OK) st = read_stack(&r);
    if (st) return st;
    pp_layout l = c->layout;
    if (c->world_size) {
        int64_t mp = l.tp * l.pp * l.cp;
        l.dp = c->world_size % mp ? 0 : c->world_size / mp;
    } else if (c->dp) {
        l.dp = c->dp;
    }
    pp_margs_config_overlap(c, &l);
    classify(&r);
    return PP_OK;
}
