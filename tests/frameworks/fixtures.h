/* Shared by the launch tests: model shapes written out here (so that the launch tests do not
 * depend on the loader), a GPU, and a parser for the generated scripts' Megatron arguments. */
#ifndef PP_LAUNCH_FIXTURES_H
#define PP_LAUNCH_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp.h"
#include "pp_launch.h"

/* Published shapes: GPT-3 (Brown et al. 2020, table 2.1), Llama 2 (Touvron et al. 2023, HF
 * config.json), Llama 3 8B (HF config.json), Mixtral 8x7B, TinyLlama 1.1B, BLOOM (HF config.json
 * files); DeepSeek-V2-Lite (MLA, 64 routed + 2 shared experts, first layer dense: its HF
 * config.json), Qwen3-30B-A3B (128 experts top-8, QK-norm, head_dim 128: HF config.json), and a
 * sliding-window shape (Mistral-7B's window 4096, every 4th layer full as in Gemma 3's 5:1 idea,
 * here 3:1 so that the phase differs from Megatron's integer form). What else defines them (pp.h:
 * norm epsilon, RoPE base and scaling, the router) as their config.json files give it; Llama 3.1 8B
 * (Llama 3 8B's shape, llama3 RoPE scaling), DeepSeek-V3 (sigmoid router in groups, expert bias,
 * MLA YaRN) and gpt-oss-20b (YaRN, sinks, windows, biases) from theirs; and an invented small MoE
 * with a Switch-style top-1 router, z-loss, a gated shared expert and linear RoPE scaling, for the
 * flags no published model here needs. Fields left zero are "not given" (launch writes nothing). */
static inline pp_model fx_model(const char *name)
{
    pp_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "%s", name);
    m.act = PP_ACT_GELU, m.norm = PP_NORM_LAYERNORM, m.pos = PP_POS_LEARNED;
    m.bias = true, m.tied = true, m.vocab = 50257, m.seq = 2048;
    if (!strcmp(name, "gpt3-1.3b")) m.layers = 24, m.hidden = 2048, m.heads = 16;
    else if (!strcmp(name, "gpt3-13b")) m.layers = 40, m.hidden = 5120, m.heads = 40;
    else if (!strcmp(name, "gpt3-175b")) m.layers = 96, m.hidden = 12288, m.heads = 96;
    else if (!strcmp(name, "gpt-tiny")) m.layers = 6, m.hidden = 512, m.heads = 8, m.seq = 1024;
    else {
        m.act = PP_ACT_SWIGLU, m.norm = PP_NORM_RMSNORM, m.pos = PP_POS_ROPE;
        m.bias = false, m.tied = false, m.vocab = 32000, m.seq = 4096;
        if (!strcmp(name, "llama2-7b")) m.layers = 32, m.hidden = 4096, m.heads = 32, m.ffn = 11008;
        else if (!strcmp(name, "llama2-70b"))
            m.layers = 80, m.hidden = 8192, m.heads = 64, m.kv_heads = 8, m.ffn = 28672;
        else if (!strcmp(name, "llama3-8b") || !strcmp(name, "llama3.1-8b")) {
            m.layers = 32, m.hidden = 4096, m.heads = 32, m.kv_heads = 8, m.ffn = 14336,
            m.vocab = 128256, m.seq = 8192, m.max_context = 8192, m.norm_eps = 1e-5, m.rope_theta = 500000;
            if (name[6] == '.')
                m.max_context = 131072, m.rope_scaling = PP_ROPE_SCALING_LLAMA3, m.rope_factor = 8,
                m.rope_original_context = 8192, m.rope_low_freq = 1, m.rope_high_freq = 4;
        }
        else if (!strcmp(name, "tinyllama-1.1b"))
            m.layers = 22, m.hidden = 2048, m.heads = 32, m.kv_heads = 4, m.ffn = 5632, m.seq = 2048;
        else if (!strcmp(name, "mixtral-8x7b"))
            m.layers = 32, m.hidden = 4096, m.heads = 32, m.kv_heads = 8, m.ffn = 14336,
            m.experts = 8, m.topk = 2, m.max_context = 32768, m.norm_eps = 1e-5, m.rope_theta = 1e6,
            m.router_balance = PP_BALANCE_AUX_LOSS, m.router_aux_coef = 0.02;
        else if (!strcmp(name, "deepseek-v2-lite"))
            m.layers = 27, m.hidden = 2048, m.heads = 16, m.ffn = 10944, m.vocab = 102400, m.seq = 4096,
            m.kv_lora_rank = 512, m.qk_nope_dim = 128, m.qk_rope_dim = 64, m.v_head_dim = 128,
            m.experts = 64, m.topk = 6, m.moe_ffn = 1408, m.shared_experts = 2, m.shared_ffn = 2816,
            m.moe_first_dense = 1, m.max_context = 163840, m.norm_eps = 1e-6, m.rope_theta = 10000,
            m.rope_scaling = PP_ROPE_SCALING_YARN, m.rope_factor = 40, m.rope_original_context = 4096,
            m.yarn_beta_fast = 32, m.yarn_beta_slow = 1, m.yarn_mscale = 0.707, m.yarn_mscale_all_dim = 0.707,
            m.router_raw_topk = true, m.router_balance = PP_BALANCE_SEQ_AUX_LOSS, m.router_aux_coef = 0.001;
        else if (!strcmp(name, "deepseek-v3"))
            m.layers = 61, m.hidden = 7168, m.heads = 128, m.ffn = 18432, m.vocab = 129280, m.seq = 4096,
            m.q_lora_rank = 1536, m.kv_lora_rank = 512, m.qk_nope_dim = 128, m.qk_rope_dim = 64, m.v_head_dim = 128,
            m.experts = 256, m.topk = 8, m.moe_ffn = 2048, m.shared_experts = 1, m.shared_ffn = 2048,
            m.moe_first_dense = 3, m.mtp_layers = 1, m.router_bias = true, m.max_context = 163840, m.norm_eps = 1e-6,
            m.rope_theta = 10000, m.rope_scaling = PP_ROPE_SCALING_YARN, m.rope_factor = 40,
            m.rope_original_context = 4096, m.yarn_beta_fast = 32, m.yarn_beta_slow = 1, m.yarn_mscale = 1,
            m.yarn_mscale_all_dim = 1, m.router_score = PP_ROUTER_SIGMOID, m.router_scale = 2.5, m.router_groups = 8,
            m.router_group_topk = 4, m.router_expert_bias = true, m.router_balance = PP_BALANCE_SEQ_AUX_LOSS,
            m.router_aux_coef = 1e-4;
        else if (!strcmp(name, "gpt-oss-20b"))
            m.layers = 24, m.hidden = 2880, m.heads = 64, m.kv_heads = 8, m.head_dim = 64, m.ffn = 2880,
            m.vocab = 201088, m.bias = m.qkv_bias = m.out_bias = m.mlp_bias = true, m.attn_sinks = true,
            m.window = 128, m.window_full_every = 2, m.window_full_phase = 1, m.experts = 32, m.topk = 4,
            m.moe_ffn = 2880, m.router_bias = true, m.max_context = 131072, m.norm_eps = 1e-5, m.rope_theta = 150000,
            m.rope_scaling = PP_ROPE_SCALING_YARN, m.rope_factor = 32, m.rope_original_context = 4096,
            m.yarn_beta_fast = 32, m.yarn_beta_slow = 1, m.yarn_mscale = 1, m.yarn_no_truncate = true,
            m.router_balance = PP_BALANCE_AUX_LOSS, m.router_aux_coef = 0.9;
        else if (!strcmp(name, "moe-zloss-1b"))
            m.layers = 16, m.hidden = 2048, m.heads = 16, m.ffn = 5632, m.experts = 16, m.topk = 1, m.moe_ffn = 1408,
            m.shared_experts = 1, m.shared_ffn = 2816, m.shared_gate = true, m.rope_theta = 10000,
            m.rope_scaling = PP_ROPE_SCALING_LINEAR, m.rope_factor = 4, m.max_context = 16384, m.norm_eps = 1e-6,
            m.router_raw_topk = true, m.router_balance = PP_BALANCE_AUX_LOSS, m.router_aux_coef = 0.01,
            m.router_z_coef = 0.001;
        else if (!strcmp(name, "qwen3-30b-a3b"))
            m.layers = 48, m.hidden = 2048, m.heads = 32, m.kv_heads = 4, m.head_dim = 128, m.ffn = 6144,
            m.vocab = 151936, m.experts = 128, m.topk = 8, m.moe_ffn = 768, m.qk_norm = PP_QKNORM_HEAD,
            m.max_context = 40960, m.norm_eps = 1e-6, m.rope_theta = 1e6, m.router_balance = PP_BALANCE_GLOBAL_AUX_LOSS,
            m.router_aux_coef = 0.001;
        else if (!strcmp(name, "window-7b"))
            m.layers = 32, m.hidden = 4096, m.heads = 32, m.kv_heads = 8, m.ffn = 14336, m.window = 4096,
            m.window_full_every = 4, m.window_full_phase = 0;
        else if (!strcmp(name, "bloom-176b")) {
            m.layers = 70, m.hidden = 14336, m.heads = 112, m.vocab = 250880, m.seq = 2048;
            m.act = PP_ACT_GELU, m.norm = PP_NORM_LAYERNORM, m.pos = PP_POS_ALIBI;
            m.bias = true, m.tied = true;
        } else {
            fprintf(stderr, "fixtures: unknown model %s\n", name);
            exit(99);
        }
    }
    if (!m.kv_heads) m.kv_heads = m.heads;
    if (!m.ffn) m.ffn = 4 * m.hidden;
    if (m.kv_lora_rank) m.head_dim = m.qk_nope_dim + m.qk_rope_dim;
    else if (!m.head_dim) m.head_dim = m.hidden / m.heads;
    return m;
}

static inline pp_work fx_work(const char *model, int64_t gpus, int64_t gpn, int64_t gbs)
{
    pp_work w;
    memset(&w, 0, sizeof w);
    w.model = fx_model(model);
    snprintf(w.gpu.name, sizeof w.gpu.name, "h100-sxm");
    w.gpu.memory_bytes = 80.0 * 1073741824.0;
    w.gpu.gpus_per_node = 8;
    w.gpus = gpus;
    w.gpus_per_node = gpn;
    w.gbs = gbs;
    w.framework = PP_FW_MEGATRON;
    w.attention = PP_ATTN_FLASH;
    return w;
}

/* Run fmt into a string (caller frees). */
static inline char *fx_render(pp_launch_format fmt, const pp_launch_params *p, pp_error *err,
                              pp_status *st)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    *st = pp_launch_write(fmt, p, f, NULL, err);
    fclose(f);
    return buf;
}

/* The Megatron arguments of a generated script: every token of every NAME_ARGS=( ... ) array,
 * in order. Values keep their shell quoting. */
#define FX_MAX_TOK 512
typedef struct {
    char *tok[FX_MAX_TOK];
    int n;
    int arrays;         /* NAME_ARGS arrays defined */
    int arrays_used;    /* "${NAME_ARGS[@]}" references */
    char launcher[2048];/* the torchrun ... line(s), joined */
} fx_args;

static inline void fx_args_free(fx_args *a)
{
    for (int i = 0; i < a->n; i++) free(a->tok[i]);
    a->n = 0;
}

/* Split a line into shell words, honouring '...' and "..." (no expansion). */
static inline void fx_split(const char *line, fx_args *a)
{
    const char *p = line;
    while (*p) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p || *p == '#') break;
        char word[2048];
        size_t k = 0;
        while (*p && *p != ' ' && *p != '\t') {
            if (*p == '\'' || *p == '"') {
                char q = *p;
                word[k++] = *p++;
                while (*p && *p != q && k < sizeof word - 2) word[k++] = *p++;
                if (*p) word[k++] = *p++;
            } else if (k < sizeof word - 1) {
                word[k++] = *p++;
            } else {
                p++;
            }
        }
        word[k] = 0;
        if (a->n < FX_MAX_TOK) a->tok[a->n++] = strdup(word);
    }
}

static inline void fx_parse(const char *script, fx_args *a)
{
    memset(a, 0, sizeof *a);
    const char *p = script;
    bool in_array = false, in_launch = false;
    while (p && *p) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char line[4096];
        if (len >= sizeof line) len = sizeof line - 1;
        memcpy(line, p, len);
        line[len] = 0;
        p = e ? e + 1 : NULL;
        if (in_array) {
            if (!strcmp(line, ")")) in_array = false;
            else fx_split(line, a);
            continue;
        }
        size_t L = strlen(line);
        if (L > 7 && !strcmp(line + L - 7, "_ARGS=(")) {
            in_array = true;
            a->arrays++;
            continue;
        }
        if (!strncmp(line, "torchrun ", 9) || !strncmp(line, "srun ", 5) || in_launch) {
            strncat(a->launcher, line, sizeof a->launcher - strlen(a->launcher) - 2);
            strncat(a->launcher, " ", sizeof a->launcher - strlen(a->launcher) - 1);
            in_launch = L > 0 && line[L - 1] == '\\';
            for (const char *q = line; (q = strstr(q, "_ARGS[@]}")); q++) a->arrays_used++;
        }
    }
}

/* Value after flag (NULL: absent, "" a switch). */
static inline const char *fx_value(const fx_args *a, const char *flag)
{
    for (int i = 0; i < a->n; i++)
        if (!strcmp(a->tok[i], flag))
            return (i + 1 < a->n && strncmp(a->tok[i + 1], "--", 2)) ? a->tok[i + 1] : "";
    return NULL;
}

static inline long long fx_int(const fx_args *a, const char *flag)
{
    const char *v = fx_value(a, flag);
    return v && *v ? atoll(v) : -1;
}

/* The flag list: one option per line, '#' comments. */
typedef struct {
    char **names;
    int n;
} fx_flags;

static inline int fx_flags_load(fx_flags *f, const char *path)
{
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    char line[512];
    int cap = 0;
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\r\n\t ")] = 0;
        if (!line[0] || line[0] == '#') continue;
        if (f->n == cap) {
            cap = cap ? 2 * cap : 1024;
            f->names = realloc(f->names, (size_t)cap * sizeof *f->names);
        }
        f->names[f->n++] = strdup(line);
    }
    fclose(fp);
    return 0;
}

static inline bool fx_flags_has(const fx_flags *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->names[i], name)) return true;
    return false;
}

static inline void fx_flags_free(fx_flags *f)
{
    for (int i = 0; i < f->n; i++) free(f->names[i]);
    free(f->names);
    memset(f, 0, sizeof *f);
}

#endif
