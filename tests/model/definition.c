/* What defines a model beyond its shapes (pp.h: the training sequence apart from the longest
 * context, the norm epsilon, RoPE's base and scaling, the MoE router), as the loaders read it:
 *   - our YAML schema: the keys, their defaults (pp_model_validate) and the errors, at file:line:col;
 *   - Hugging Face config.json: each config under tests/data/hf, field by field against what the
 *     file (or its config class, for keys it leaves out) says; the rope_scaling kinds and the
 *     router spellings of each family on small configs;
 *   - the catalog: every model's training sequence is at most its context, the training lengths
 *     the pretraining recipes used (Qwen3 report sec. 3.2: 4,096; NeMo's Mixtral 8x22B recipe:
 *     4,096; Llama 3: 8,192; DeepSeek-V3: 4,096) and, for each model with a config.json copy here,
 *     the same definition as its config (but the balancing loss, which the catalog takes from the
 *     paper where there is one: DeepSeek-V3's sequence-wise alpha 0.0001, Qwen3's global batch);
 *   - `parplan models --model X` prints both lengths. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp.h"
#include "pp_load.h"
#include "tap.h"

static const char *src_dir, *models_dir;

static pp_status load_str(pp_model *m, const char *text, pp_error *err)
{
    memset(err, 0, sizeof *err);
    return pp_model_load_string(m, text, strlen(text), "def.yaml", err);
}

#define BASE "layers: 2\nhidden: 64\nheads: 4\nvocab: 100\nseq: 16\n"
#define ROPE BASE "activation: swiglu\nnorm: rmsnorm\nposition: rope\nbias: false\n"
#define MOE ROPE "experts: 8\ntopk: 2\n"

static void test_yaml(void)
{
    pp_model m;
    pp_error err;
    /* defaults */
    tap_ok(load_str(&m, BASE, &err) == PP_OK && m.max_context == 16 && m.norm_eps == 1e-5 && m.rope_theta == 0 &&
               m.rope_scaling == PP_ROPE_SCALING_NONE && m.router_scale == 1,
           "no key given: context = seq 16, norm_eps 1e-5, no RoPE base (learned positions), router factor 1");
    tap_ok(load_str(&m, ROPE, &err) == PP_OK && m.rope_theta == 10000, "position rope: base 10000 by default");
    tap_ok(load_str(&m, MOE, &err) == PP_OK && m.router_score == PP_ROUTER_SOFTMAX && !m.router_raw_topk &&
               m.router_scale == 1 && m.router_balance == PP_BALANCE_NONE && m.router_aux_coef == 0 && m.router_groups == 0,
           "a MoE model without router keys: softmax, renormalised top-k, no factor, groups or balancing loss");
    /* every key */
    pp_status st = load_str(&m, MOE "max_context: 4096\nnorm_eps: 1.0e-6\nrope_theta: 500000\nrope_scaling: yarn\n"
                                    "rope_factor: 32\nrope_original_context: 2048\nyarn_beta_fast: 16\nyarn_beta_slow: 2\n"
                                    "yarn_mscale: 0.707\nyarn_mscale_all_dim: 0.5\nyarn_no_truncate: true\n"
                                    "router_score: sigmoid\nrouter_raw_topk: false\nrouter_scale: 2.5\nrouter_groups: 4\n"
                                    "router_group_topk: 2\nrouter_expert_bias: true\nrouter_bias: true\n"
                                    "router_balance: seq_aux_loss\nrouter_aux_coef: 0.0001\nrouter_z_coef: 0.001\n", &err);
    tap_ok(st == PP_OK && m.seq == 16 && m.max_context == 4096 && m.norm_eps == 1e-6 && m.rope_theta == 500000 &&
               m.rope_scaling == PP_ROPE_SCALING_YARN && m.rope_factor == 32 && m.rope_original_context == 2048 &&
               m.yarn_beta_fast == 16 && m.yarn_beta_slow == 2 && m.yarn_mscale == 0.707 && m.yarn_mscale_all_dim == 0.5 &&
               m.yarn_no_truncate && m.router_score == PP_ROUTER_SIGMOID && m.router_scale == 2.5 && m.router_groups == 4 &&
               m.router_group_topk == 2 && m.router_expert_bias && m.router_balance == PP_BALANCE_SEQ_AUX_LOSS &&
               m.router_aux_coef == 0.0001 && m.router_z_coef == 0.001,
           "every definition key read as given (training seq 16 apart from the context 4096)");
    st = load_str(&m, ROPE "rope_scaling: yarn\nrope_factor: 40\nrope_original_context: 4096\n", &err);
    tap_ok(st == PP_OK && m.yarn_beta_fast == 32 && m.yarn_beta_slow == 1 && m.yarn_mscale == 1 && m.yarn_mscale_all_dim == 0 &&
               !m.yarn_no_truncate, "yarn defaults: betas 32 and 1, mscale 1, mscale_all_dim 0, truncated");
    st = load_str(&m, ROPE "rope_scaling: llama3\nrope_factor: 8\nrope_original_context: 8192\n", &err);
    tap_ok(st == PP_OK && m.rope_low_freq == 1 && m.rope_high_freq == 4, "llama3 defaults: bands 1 and 4");

    /* errors, at the key they are about */
    static const struct {
        const char *text, *want, *what;
        int line;
    } bad[] = {
        {BASE "rope_theta: 10000\n", "need position rope", "a RoPE base on learned positions", 1},
        {ROPE "rope_factor: 8\n", "need rope_scaling", "rope_factor without rope_scaling", 10},
        {ROPE "rope_scaling: yarn\nrope_factor: 8\n", "rope_original_context must be given", "yarn without its original length", 1},
        {ROPE "rope_scaling: llama3\nrope_factor: 8\nrope_original_context: 8192\nyarn_beta_fast: 3\n",
         "need rope_scaling yarn", "a yarn key with llama3", 1},
        {ROPE "rope_scaling: dynamic\n", "rope_scaling", "an unknown scaling", 10},
        {ROPE "norm_eps: 0\n", "norm_eps", "norm_eps 0", 10},
        {ROPE "max_context: 0\n", "max_context", "max_context 0", 10},
        {ROPE "router_score: sigmoid\n", "need experts > 1", "router keys on a dense model", 1},
        {MOE "router_expert_bias: true\nrouter_bias: true\n", "router_expert_bias needs router_score sigmoid",
         "an expert bias with softmax scores", 12},
        {MOE "router_groups: 3\nrouter_group_topk: 1\n", "must divide the 8 experts", "3 groups of 8 experts", 12},
        {MOE "router_groups: 4\n", "given together", "groups without group_topk", 12},
        {MOE "router_aux_coef: 0.01\n", "needs router_balance", "a coefficient without a loss", 12},
        {MOE "router_balance: switch\n", "router_balance", "an unknown balancing loss", 12},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        st = load_str(&m, bad[i].text, &err);
        char buf[1200];
        pp_error_format(&err, buf, sizeof buf);
        tap_ok(st == PP_ERR_INPUT && strstr(err.msg, bad[i].want) && err.line == bad[i].line, "%s refused at line %d: %s",
               bad[i].what, bad[i].line, buf);
    }
}

/* tests/data/hf: the definition as the file (or its config class) says. */
typedef struct {
    const char *file;
    int64_t max_context;
    double eps, theta, local;
    pp_rope_scaling scaling;
    double factor;
    int64_t original;
    double beta_fast, beta_slow, mscale, mscale_all; /* yarn; llama3: low, high in beta_fast, beta_slow */
    bool no_truncate;
    /* router (experts > 1) */
    pp_router_score score;
    bool raw;
    double scale;
    int64_t groups, group_topk;
    bool expert_bias;
    pp_router_balance balance;
    double aux;
} hf_def;

#define NOR PP_ROPE_SCALING_NONE
#define SM PP_ROUTER_SOFTMAX
#define SG PP_ROUTER_SIGMOID
static const hf_def hf_defs[] = {
    /* file              context  eps   theta  local scaling                factor orig  b_fast b_slow mscale all trunc */
    {"Qwen3-8B", 40960, 1e-6, 1e6, 0, NOR, 0, 0, 0, 0, 0, 0, false, SM, false, 1, 0, 0, false, PP_BALANCE_NONE, 0},
    {"Qwen3-32B", 40960, 1e-6, 1e6, 0, NOR, 0, 0, 0, 0, 0, 0, false, SM, false, 1, 0, 0, false, PP_BALANCE_NONE, 0},
    /* Qwen MoE: softmax, norm_topk_prob true (Qwen2-57B: false), router_aux_loss_coef 0.001 */
    {"Qwen3-30B-A3B", 40960, 1e-6, 1e6, 0, NOR, 0, 0, 0, 0, 0, 0, false, SM, false, 1, 0, 0, false, PP_BALANCE_AUX_LOSS, 0.001},
    {"Qwen3-235B-A22B", 40960, 1e-6, 1e6, 0, NOR, 0, 0, 0, 0, 0, 0, false, SM, false, 1, 0, 0, false, PP_BALANCE_AUX_LOSS, 0.001},
    {"Qwen2-57B-A14B", 131072, 1e-6, 1e6, 0, NOR, 0, 0, 0, 0, 0, 0, false, SM, true, 1, 0, 0, false, PP_BALANCE_AUX_LOSS, 0.001},
    /* DeepSeek: YaRN 40 over 4096; V2-Lite softmax unnormalised, one group (no limit), seq_aux 0.001;
     * V3 sigmoid x2.5 in 8 groups (top 4), the expert bias, no aux_loss_alpha in the file */
    {"DeepSeek-V2-Lite", 163840, 1e-6, 1e4, 0, PP_ROPE_SCALING_YARN, 40, 4096, 32, 1, 0.707, 0.707, false,
     SM, true, 1, 0, 0, false, PP_BALANCE_SEQ_AUX_LOSS, 0.001},
    {"DeepSeek-V3", 163840, 1e-6, 1e4, 0, PP_ROPE_SCALING_YARN, 40, 4096, 32, 1, 1, 1, false,
     SG, false, 2.5, 8, 4, true, PP_BALANCE_NONE, 0},
    {"Kimi-K2", 131072, 1e-6, 5e4, 0, PP_ROPE_SCALING_YARN, 32, 4096, 1, 1, 1, 1, false,
     SG, false, 2.827, 0, 0, true, PP_BALANCE_SEQ_AUX_LOSS, 0.001},
    /* gpt-oss: YaRN 32 over 4096, truncate false; softmax over the top-4; router_aux_loss_coef 0.9 */
    {"gpt-oss-20b", 131072, 1e-5, 1.5e5, 0, PP_ROPE_SCALING_YARN, 32, 4096, 32, 1, 1, 0, true,
     SM, false, 1, 0, 0, false, PP_BALANCE_AUX_LOSS, 0.9},
    {"gpt-oss-120b", 131072, 1e-5, 1.5e5, 0, PP_ROPE_SCALING_YARN, 32, 4096, 32, 1, 1, 0, true,
     SM, false, 1, 0, 0, false, PP_BALANCE_AUX_LOSS, 0.9},
    {"Gemma-2-9B", 8192, 1e-6, 1e4, 0, NOR, 0, 0, 0, 0, 0, 0, false, SM, false, 1, 0, 0, false, PP_BALANCE_NONE, 0},
    {"Gemma-2-27B", 8192, 1e-6, 1e4, 0, NOR, 0, 0, 0, 0, 0, 0, false, SM, false, 1, 0, 0, false, PP_BALANCE_NONE, 0},
    /* Gemma 3: Gemma3TextConfig's eps, base 1M and local 10k (the file gives neither); linear x8 */
    {"Gemma-3-27B", 131072, 1e-6, 1e6, 1e4, PP_ROPE_SCALING_LINEAR, 8, 0, 0, 0, 0, 0, false,
     SM, false, 1, 0, 0, false, PP_BALANCE_NONE, 0},
    /* Llama 4: sigmoid of the top-1 logit, not renormalised; Scout llama3 x8 of 8192, bands 1-4 */
    {"Llama-4-Scout", 262144, 1e-5, 5e5, 0, PP_ROPE_SCALING_LLAMA3, 8, 8192, 1, 4, 0, 0, false,
     SG, true, 1, 0, 0, false, PP_BALANCE_AUX_LOSS, 0.001},
    {"Llama-4-Maverick", 1048576, 1e-5, 5e5, 0, NOR, 0, 0, 0, 0, 0, 0, false, SG, true, 1, 0, 0, false, PP_BALANCE_AUX_LOSS, 0.001},
    {"Phi-3-mini", 4096, 1e-5, 1e4, 0, NOR, 0, 0, 0, 0, 0, 0, false, SM, false, 1, 0, 0, false, PP_BALANCE_NONE, 0},
    {"OLMo-2-7B", 4096, 1e-6, 5e5, 0, NOR, 0, 0, 0, 0, 0, 0, false, SM, false, 1, 0, 0, false, PP_BALANCE_NONE, 0},
    {"Mixtral-8x22B", 65536, 1e-5, 1e6, 0, NOR, 0, 0, 0, 0, 0, 0, false, SM, false, 1, 0, 0, false, PP_BALANCE_AUX_LOSS, 0.001},
};

static void test_hf_files(void)
{
    for (size_t i = 0; i < sizeof hf_defs / sizeof hf_defs[0]; i++) {
        const hf_def *e = &hf_defs[i];
        char path[1024];
        snprintf(path, sizeof path, "%s/tests/data/hf/%s.config.json", src_dir, e->file);
        pp_model m;
        pp_error err;
        if (!tap_ok(pp_model_load_file(&m, path, &err) == PP_OK, "%s.config.json loads (%s)", e->file, err.msg)) continue;
        bool llama3 = e->scaling == PP_ROPE_SCALING_LLAMA3, yarn = e->scaling == PP_ROPE_SCALING_YARN;
        double got[] = {(double)m.max_context, (double)m.seq, m.norm_eps, m.rope_theta, m.rope_local_theta,
                        (double)m.rope_scaling, m.rope_factor, (double)m.rope_original_context,
                        llama3 ? m.rope_low_freq : m.yarn_beta_fast, llama3 ? m.rope_high_freq : m.yarn_beta_slow,
                        m.yarn_mscale, m.yarn_mscale_all_dim, m.yarn_no_truncate};
        double want[] = {(double)e->max_context, (double)e->max_context, e->eps, e->theta, e->local, (double)e->scaling,
                         e->factor, (double)e->original, e->beta_fast, e->beta_slow, yarn ? e->mscale : 0,
                         yarn ? e->mscale_all : 0, e->no_truncate};
        static const char *const names[] = {"max_context", "seq (= max_position_embeddings)", "norm_eps", "rope_theta",
                                            "rope_local_theta", "rope_scaling", "rope_factor", "rope_original_context",
                                            "beta_fast/low", "beta_slow/high", "yarn_mscale", "yarn_mscale_all_dim",
                                            "yarn_no_truncate"};
        int bad = 0;
        for (size_t k = 0; k < sizeof got / sizeof got[0]; k++)
            if (got[k] != want[k] && bad++ < 3) tap_diag("%s: %s %.17g, want %.17g", e->file, names[k], got[k], want[k]);
        tap_ok(bad == 0, "%s: the context, norm epsilon and RoPE as the config says", e->file);
        if (m.experts <= 1) continue;
        bool r = m.router_score == e->score && m.router_raw_topk == e->raw && m.router_scale == e->scale &&
                 m.router_groups == e->groups && m.router_group_topk == e->group_topk &&
                 m.router_expert_bias == e->expert_bias && m.router_balance == e->balance && m.router_aux_coef == e->aux &&
                 m.router_z_coef == 0;
        tap_ok(r, "%s: router %s%s x%g, groups %lld/%lld%s, %s %g", e->file, pp_router_score_names[m.router_score],
               m.router_raw_topk ? " as scored" : " renormalised", m.router_scale, (long long)m.router_groups,
               (long long)m.router_group_topk, m.router_expert_bias ? ", expert bias" : "",
               pp_router_balance_names[m.router_balance], m.router_aux_coef);
    }
}

/* Small configs: the rope_scaling kinds, the spellings of the epsilon and the base, and the router
 * keys of each family. */
#define HF_LLAMA "\"hidden_size\": 64, \"intermediate_size\": 128, \"num_attention_heads\": 4, " \
                 "\"num_hidden_layers\": 2, \"vocab_size\": 100, \"max_position_embeddings\": 2048"
static void test_hf_rules(void)
{
    pp_model m;
    pp_error err;
    pp_status st = load_str(&m, "{\"model_type\": \"llama\", " HF_LLAMA "}", &err);
    tap_ok(st == PP_OK && m.norm_eps == 1e-6 && m.rope_theta == 10000 && m.rope_scaling == PP_ROPE_SCALING_NONE &&
               m.max_context == 2048 && m.seq == 2048,
           "llama without the keys: LlamaConfig's rms_norm_eps 1e-6 and rope_theta 10000; context 2048 (and seq, until --seq)");
    st = load_str(&m, "{\"model_type\": \"llama\", " HF_LLAMA ", \"rope_scaling\": {\"type\": \"linear\", \"factor\": 4}}", &err);
    tap_ok(st == PP_OK && m.rope_scaling == PP_ROPE_SCALING_LINEAR && m.rope_factor == 4, "rope_scaling type linear x4");
    st = load_str(&m, "{\"model_type\": \"llama\", " HF_LLAMA ", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4}}",
                  &err);
    tap_ok(st == PP_OK && m.rope_scaling == PP_ROPE_SCALING_YARN && m.rope_original_context == 2048 &&
               m.yarn_beta_fast == 32 && m.yarn_beta_slow == 1 && m.yarn_mscale == 1 && !m.yarn_no_truncate,
           "yarn without original_max_position_embeddings: max_position_embeddings; betas 32, 1; truncated");
    st = load_str(&m, "{\"model_type\": \"llama\", " HF_LLAMA ", \"rope_scaling\": {\"rope_type\": \"default\"}}", &err);
    tap_ok(st == PP_OK && m.rope_scaling == PP_ROPE_SCALING_NONE, "rope_type default: no scaling");
    st = load_str(&m, "{\"model_type\": \"llama\", " HF_LLAMA ", \"rope_scaling\": null}", &err);
    tap_ok(st == PP_OK && m.rope_scaling == PP_ROPE_SCALING_NONE, "rope_scaling null: no scaling");
    st = load_str(&m, "{\"model_type\": \"llama\", " HF_LLAMA ",\n \"rope_scaling\": {\"rope_type\": \"dynamic\", \"factor\": 2}}",
                  &err);
    tap_ok(st == PP_ERR_INPUT && err.line == 2 && strstr(err.msg, "'dynamic' is not modelled"),
           "rope_type dynamic: not modelled, at the key (%s)", err.msg);
    st = load_str(&m, "{\"model_type\": \"llama\", " HF_LLAMA ",\n \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8}}",
                  &err);
    tap_ok(st == PP_ERR_INPUT && err.line == 2 && strstr(err.msg, "low_freq_factor"),
           "llama3 without its bands: an error (%s)", err.msg);
    st = load_str(&m, "{\"model_type\": \"llama\", " HF_LLAMA ",\n \"rms_norm_eps\": 0}", &err);
    tap_ok(st == PP_ERR_INPUT && err.line == 2 && strstr(err.msg, "rms_norm_eps"), "rms_norm_eps 0 refused (%s)", err.msg);
    st = load_str(&m, "{\"model_type\": \"gpt_neox\", " HF_LLAMA ", \"rotary_emb_base\": 20000, \"layer_norm_eps\": 1e-5}", &err);
    tap_ok(st == PP_OK && m.rope_theta == 20000 && m.norm_eps == 1e-5, "gpt_neox: rotary_emb_base, layer_norm_eps");
    st = load_str(&m, "{\"model_type\": \"bert\", " HF_LLAMA "}", &err);
    tap_ok(st == PP_OK && m.norm_eps == 1e-12 && m.rope_theta == 0, "bert: BertConfig's layer_norm_eps 1e-12, no RoPE");
    st = load_str(&m, "{\"model_type\": \"gpt_oss\", " HF_LLAMA ", \"num_local_experts\": 4, \"num_experts_per_tok\": 2}", &err);
    tap_ok(st == PP_OK && m.rope_theta == 150000 && m.norm_eps == 1e-5 && m.rope_scaling == PP_ROPE_SCALING_YARN &&
               m.rope_factor == 32 && m.rope_original_context == 4096 && m.yarn_no_truncate && m.router_aux_coef == 0.9 &&
               m.bias,
           "gpt_oss without the keys: GptOssConfig's YaRN x32 of 4096 (not truncated), base 150000, aux 0.9; biases");
    st = load_str(&m, "{\"model_type\": \"qwen3_moe\", " HF_LLAMA ", \"num_experts\": 4, \"num_experts_per_tok\": 2,"
                      " \"moe_intermediate_size\": 32}", &err);
    tap_ok(st == PP_OK && m.router_raw_topk && m.router_aux_coef == 0.001,
           "qwen3_moe without norm_topk_prob: Qwen3MoeConfig's false (weights as scored), aux 0.001");
    st = load_str(&m, "{\"model_type\": \"deepseek_v2\", " HF_LLAMA ", \"kv_lora_rank\": 16, \"qk_nope_head_dim\": 8,"
                      " \"qk_rope_head_dim\": 8, \"v_head_dim\": 16, \"n_routed_experts\": 8, \"num_experts_per_tok\": 2,"
                      " \"moe_intermediate_size\": 32, \"n_group\": 4, \"topk_group\": 2, \"topk_method\": \"group_limited_greedy\","
                      " \"seq_aux\": false, \"aux_loss_alpha\": 0.003, \"routed_scaling_factor\": 16}", &err);
    tap_ok(st == PP_OK && m.router_groups == 4 && m.router_group_topk == 2 && m.router_balance == PP_BALANCE_AUX_LOSS &&
               m.router_aux_coef == 0.003 && m.router_scale == 16 && !m.router_expert_bias && m.router_score == PP_ROUTER_SOFTMAX,
           "deepseek_v2 group_limited_greedy: 4 groups, top 2; aux_loss 0.003 (seq_aux false); x16");
    st = load_str(&m, "{\"model_type\": \"deepseek_v2\", " HF_LLAMA ", \"kv_lora_rank\": 16, \"qk_nope_head_dim\": 8,"
                      " \"qk_rope_head_dim\": 8, \"v_head_dim\": 16, \"n_routed_experts\": 8, \"num_experts_per_tok\": 2,"
                      " \"moe_intermediate_size\": 32, \"n_group\": 4, \"topk_group\": 2}", &err);
    tap_ok(st == PP_OK && m.router_groups == 0 && m.router_balance == PP_BALANCE_SEQ_AUX_LOSS && m.router_aux_coef == 0.001,
           "deepseek_v2 with topk_method greedy (the default): no group limit; seq_aux 0.001 by default");
    st = load_str(&m, "{\"model_type\": \"deepseek_v2\", " HF_LLAMA ", \"kv_lora_rank\": 16, \"qk_nope_head_dim\": 8,"
                      " \"qk_rope_head_dim\": 8, \"v_head_dim\": 16, \"n_routed_experts\": 8, \"num_experts_per_tok\": 2,"
                      " \"moe_intermediate_size\": 32,\n \"scoring_func\": \"relu\"}", &err);
    tap_ok(st == PP_ERR_INPUT && err.line == 2 && strstr(err.msg, "scoring_func"), "scoring_func relu refused (%s)", err.msg);
    st = load_str(&m, "{\"model_type\": \"mixtral\", " HF_LLAMA ", \"num_local_experts\": 4, \"num_experts_per_tok\": 2,"
                      " \"router_z_loss_coef\": 0.001}", &err);
    tap_ok(st == PP_OK && m.router_z_coef == 0.001 && m.rope_theta == 1e6 && m.norm_eps == 1e-5 && !m.router_raw_topk,
           "mixtral: MixtralConfig's rope_theta 1e6 and eps 1e-5, top-k renormalised, router_z_loss_coef");
}

/* The catalog: training lengths, and the definition against each config.json copy. */
static void test_catalog(void)
{
    pp_catalog cat;
    pp_error err = {0};
    if (!tap_ok(pp_catalog_load(&cat, models_dir, &err) == PP_OK, "the catalog loads (%s)", err.msg)) return;
    int longer = 0;
    for (int i = 0; i < cat.n_models; i++)
        if (cat.models[i].seq > cat.models[i].max_context && longer++ < 3)
            tap_diag("%s: seq %lld past its context %lld", cat.models[i].name, (long long)cat.models[i].seq,
                     (long long)cat.models[i].max_context);
    tap_ok(longer == 0, "every catalog model trains at most at its context (%d models)", cat.n_models);
    static const struct { const char *name; int64_t seq, ctx; } lengths[] = {
        {"qwen3-8b", 4096, 40960}, {"qwen3-30b-a3b", 4096, 40960}, {"mixtral-8x22b", 4096, 65536},
        {"mixtral-8x7b", 32768, 32768}, {"llama3-8b", 8192, 8192}, {"llama3-405b", 8192, 131072},
        {"deepseek-v3", 4096, 163840}, {"gpt-oss-20b", 4096, 131072}, {"gemma3-27b", 32768, 131072},
        {"gpt3-175b", 2048, 2048},
    };
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        const pp_model *m = pp_catalog_model(&cat, lengths[i].name);
        tap_ok(m && m->seq == lengths[i].seq && m->max_context == lengths[i].ctx, "%s: trains at %lld, serves %lld",
               lengths[i].name, (long long)lengths[i].seq, (long long)lengths[i].ctx);
    }
    static const struct { const char *file, *catalog; } same[] = {
        {"Qwen3-8B", "qwen3-8b"}, {"Qwen3-32B", "qwen3-32b"}, {"Qwen3-30B-A3B", "qwen3-30b-a3b"},
        {"Qwen3-235B-A22B", "qwen3-235b-a22b"}, {"DeepSeek-V2-Lite", "deepseek-v2-lite"}, {"DeepSeek-V3", "deepseek-v3"},
        {"Kimi-K2", "kimi-k2"}, {"gpt-oss-20b", "gpt-oss-20b"}, {"gpt-oss-120b", "gpt-oss-120b"},
        {"Gemma-2-9B", "gemma2-9b"}, {"Gemma-2-27B", "gemma2-27b"}, {"Gemma-3-27B", "gemma3-27b"},
        {"Llama-4-Scout", "llama4-scout"}, {"Llama-4-Maverick", "llama4-maverick"}, {"Mixtral-8x22B", "mixtral-8x22b"},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/tests/data/hf/%s.config.json", src_dir, same[i].file);
        pp_model h;
        const pp_model *c = pp_catalog_model(&cat, same[i].catalog);
        if (!tap_ok(c && pp_model_load_file(&h, path, &err) == PP_OK, "%s and %s load", same[i].file, same[i].catalog))
            continue;
        char why[200] = "";
#define F(f) if (h.f != c->f && !why[0]) snprintf(why, sizeof why, #f " %.17g in the config, %.17g in the catalog", (double)h.f, (double)c->f)
        F(max_context); F(norm_eps); F(rope_theta); F(rope_local_theta); F(rope_scaling); F(rope_factor);
        F(rope_original_context); F(rope_low_freq); F(rope_high_freq); F(yarn_beta_fast); F(yarn_beta_slow);
        F(yarn_mscale); F(yarn_mscale_all_dim); F(yarn_no_truncate); F(router_score); F(router_raw_topk);
        F(router_scale); F(router_groups); F(router_group_topk); F(router_expert_bias); F(router_bias); F(bias);
#undef F
        tap_ok(!why[0], "%s: the catalog's context, epsilon, RoPE and router are its config.json's%s%s", same[i].catalog,
               why[0] ? ": " : "", why);
    }
    pp_catalog_free(&cat);
}

/* `parplan models --model X` prints the training length and the context. */
static void test_cli(void)
{
    const char *exe = getenv("PARPLAN");
    if (!exe) return;
    char cmd[1200], line[512];
    snprintf(cmd, sizeof cmd, "'%s' models --model qwen3-8b", exe);
    FILE *p = popen(cmd, "r");
    bool seq = false, ctx = false, rope = false;
    while (p && fgets(line, sizeof line, p)) {
        seq |= strstr(line, "seq") && strstr(line, "4096 (training)");
        ctx |= strstr(line, "max_context") && strstr(line, "40960");
        rope |= strstr(line, "rope") && strstr(line, "base 1e+06");
    }
    if (p) pclose(p);
    tap_ok(seq && ctx && rope, "parplan models --model qwen3-8b: seq 4096 (training), max_context 40960, rope base 1e+06");
}

int main(void)
{
    src_dir = getenv("PARPLAN_SOURCE_DIR");
    models_dir = getenv("PARPLAN_MODELS_DIR");
    if (!src_dir || !models_dir) return tap_skip_all("PARPLAN_SOURCE_DIR / PARPLAN_MODELS_DIR not set (run through meson test)");
    test_yaml();
    test_hf_files();
    test_hf_rules();
    test_catalog();
    test_cli();
    return tap_done();
}
