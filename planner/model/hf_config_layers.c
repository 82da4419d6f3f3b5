/* The parts of a Hugging Face config.json (hf_config.c) that vary layer by layer or inside a
 * layer: multi-head latent attention, routed and shared experts with the pattern of MoE and dense
 * layers, the router, and sliding or chunked attention with the pattern of windowed and full
 * layers. Each reads the keys its family's transformers code reads (modeling_<type>.py, cited per
 * rule) and makes a pattern pp_model cannot represent an error at the key, never a default.
 */
#include "hf_config_layers.h"

#include <string.h>

/* ================================================================== layer patterns */

/* Full attention at layers i % every == phase, windowed elsewhere: fit a per-layer list to that
 * (every 0: all windowed). Returns false when no (every, phase) gives the list; *window_on is
 * false when no layer is windowed. */
static bool window_fit(const bool *windowed, int64_t n, int64_t *every, int64_t *phase, bool *window_on)
{
    int64_t first_full = -1, n_full = 0;
    for (int64_t i = 0; i < n; i++)
        if (!windowed[i]) {
            if (first_full < 0) first_full = i;
            n_full++;
        }
    *window_on = n_full < n;
    *every = *phase = 0;
    if (n_full == 0 || n_full == n) return true;
    for (int64_t p = first_full + 1; p <= n; p++) {
        bool ok = p >= 2;
        for (int64_t i = 0; i < n && ok; i++) ok = windowed[i] == (i % p != first_full);
        if (ok) {
            *every = p;
            *phase = first_full;
            return true;
        }
    }
    return false;
}

static pp_status window_set(const pp_hf_ctx *h, int id, const bool *windowed, int64_t n, int64_t window,
                            pp_model *m)
{
    bool on;
    if (!window_fit(windowed, n, &m->window_full_every, &m->window_full_phase, &on))
        return pp_hf_fail(h, id, "this mix of full and windowed layers is not modelled (full attention "
                                 "on every n-th layer, windowed elsewhere, is)");
    m->window = on ? window : 0;
    return PP_OK;
}

/* layer_types (transformers >= 4.53 writes it into every config with mixed attention): one of
 * full_attention, sliding_attention, chunked_attention per layer; its length is
 * num_hidden_layers (configuration_utils.layer_type_validation). */
static pp_status hf_layer_types(const pp_hf_ctx *h, int64_t layers, bool *windowed)
{
    const yaml_node_t *v = h->found[H_LAYER_TYPES];
    if (v->type != YAML_SEQUENCE_NODE)
        return pp_hf_fail(h, H_LAYER_TYPES, "expected a sequence of strings, got %s", pp_yaml_node_kind(v));
    int64_t n = v->data.sequence.items.top - v->data.sequence.items.start;
    if (n != layers)
        return pp_hf_fail(h, H_LAYER_TYPES, "%lld entries for %lld layers (num_hidden_layers)", (long long)n,
                          (long long)layers);
    for (int64_t i = 0; i < n; i++) {
        yaml_node_t *e = yaml_document_get_node(&h->y->doc, v->data.sequence.items.start[i]);
        const char *s = e && e->type == YAML_SCALAR_NODE && !pp_yaml_is_null(e) ? (const char *)e->data.scalar.value : NULL;
        if (s && !strcmp(s, "full_attention")) windowed[i] = false;
        else if (s && (!strcmp(s, "sliding_attention") || !strcmp(s, "chunked_attention"))) windowed[i] = true;
        else
            return pp_yaml_error(h->y, e ? e : v, "key 'layer_types': entry %lld is not one of "
                                 "full_attention, sliding_attention, chunked_attention (other kinds "
                                 "of layer are not modelled)", (long long)i);
    }
    return PP_OK;
}

/* Layers that are MoE as a list (Llama 4's moe_layers): fit moe_first_dense, moe_every,
 * moe_phase and the exceptions (dense_layers), fewest exceptions first. */
static pp_status moe_fit(const pp_hf_ctx *h, int id, const int64_t *idx, int64_t n, pp_model *m)
{
    bool moe[HF_MAX_LAYER_LIST] = {false};
    int64_t L = m->layers, first = L;
    if (L > HF_MAX_LAYER_LIST) return pp_hf_fail(h, id, "a list of MoE layers for more than %d layers is not supported", HF_MAX_LAYER_LIST);
    for (int64_t i = 0; i < n; i++) {
        if (idx[i] >= L)
            return pp_hf_fail(h, id, "layer %lld is not one of the %lld layers", (long long)idx[i], (long long)L);
        moe[idx[i]] = true;
        if (idx[i] < first) first = idx[i];
    }
    int64_t best = -1, best_exc = PP_MODEL_MAX_LIST + 1;
    for (int64_t every = 1; every <= L && best_exc > 0; every++) {
        int64_t exc = 0;
        bool ok = true;
        for (int64_t i = first; i < L && ok; i++) {
            bool cand = i % every == first % every;
            if (moe[i] && !cand) ok = false;
            if (cand && !moe[i]) exc++;
        }
        if (ok && exc < best_exc) {
            best = every;
            best_exc = exc;
        }
    }
    if (best < 0)
        return pp_hf_fail(h, id, "this set of MoE layers is not modelled (MoE every n-th layer from a "
                                 "first one, with at most %d dense exceptions, is)", PP_MODEL_MAX_LIST);
    m->moe_first_dense = first;
    m->moe_every = best;
    m->moe_phase = first % best;
    m->n_dense_layers = 0;
    for (int64_t i = first; i < L; i++)
        if (i % best == first % best && !moe[i]) m->dense_layers[m->n_dense_layers++] = i;
    return PP_OK;
}

/* ================================================================== latent attention and experts */

pp_status pp_hf_mla(const pp_hf_ctx *h, pp_model *m)
{
    /* DeepseekV3Attention: q_a_proj h -> q_lora_rank (+ q_a_layernorm) -> q_b_proj, or q_proj
     * when q_lora_rank is null (DeepSeek-V2-Lite); kv_a_proj_with_mqa h -> kv_lora_rank +
     * qk_rope_head_dim, kv_a_layernorm, kv_b_proj -> heads (qk_nope + v); o_proj heads v -> h.
     * head_dim is left to pp_model_validate (nope + rope): a config's head_dim is the RoPE
     * width there (qk_rope_head_dim), not the query width. */
    HF_INT(&m->kv_lora_rank, true, H_KV_LORA);
    HF_INT(&m->q_lora_rank, false, H_Q_LORA);
    HF_INT(&m->qk_nope_dim, true, H_QK_NOPE);
    HF_INT(&m->qk_rope_dim, true, H_QK_ROPE);
    HF_INT(&m->v_head_dim, true, H_V_HEAD);
    m->head_dim = 0;
    return PP_OK;
}

/* Routed experts (ids: the spellings of the count); fewer than 2 is not a MoE layer. */
static pp_status hf_experts(const pp_hf_ctx *h, const int *ids, int n, pp_model *m)
{
    pp_status st = pp_hf_int(h, ids, n, true, &m->experts);
    if (st) return st;
    if (m->experts < 2) {
        int id = ids[0];
        for (int i = 0; i < n; i++)
            if (pp_hf_has(h, ids[i])) id = ids[i];
        return pp_hf_fail(h, id, "%lld: a MoE layer needs at least 2 experts", (long long)m->experts);
    }
    HF_INT(&m->topk, true, H_EXPERTS_PER_TOK, H_EXPERTS_PER_TOKEN);
    return PP_OK;
}

pp_status pp_hf_moe(const pp_hf_ctx *h, const pp_hf_family *fam, pp_model *m)
{
    static const int local[] = {H_NUM_LOCAL_EXPERTS};
    static const int qwen[] = {H_NUM_EXPERTS, H_NUM_LOCAL_EXPERTS}; /* Qwen3MoeConfig.attribute_map */
    static const int deepseek[] = {H_N_ROUTED};
    pp_status st;
    switch (fam->moe) {
    case MOE_NONE:
        return PP_OK;
    case MOE_MIXTRAL: /* MixtralSparseMoeBlock: num_local_experts experts of intermediate_size */
        return hf_experts(h, local, 1, m);
    case MOE_GPTOSS:
        /* GptOssMLP: router Linear(h, E) with bias; GptOssExperts: gate_up_proj (E, h, 2f) and
         * down_proj (E, f, h), each with a bias; f = intermediate_size. No dense layer. */
        if ((st = hf_experts(h, local, 1, m))) return st;
        m->moe_ffn = m->ffn;
        m->router_bias = m->mlp_bias = true;
        return PP_OK;
    case MOE_QWEN:
    case MOE_QWEN2:
        /* Qwen2MoeDecoderLayer / Qwen3MoeDecoderLayer: layer i is MoE when it is not in
         * mlp_only_layers and num_experts > 0 and (i + 1) % decoder_sparse_step == 0; the
         * others are a dense MLP of intermediate_size. num_experts 0 is a dense model. */
        HF_INT(&m->experts, true, H_NUM_EXPERTS, H_NUM_LOCAL_EXPERTS);
        if (m->experts == 0) {
            m->topk = 0;
            return PP_OK;
        }
        if ((st = hf_experts(h, qwen, 2, m))) return st;
        HF_INT(&m->moe_ffn, true, H_MOE_INTERMEDIATE);
        m->moe_every = 1;
        HF_INT(&m->moe_every, false, H_SPARSE_STEP);
        m->moe_phase = m->moe_every - 1;
        for (int64_t i = 0; i < h->c->n_mlp_only_layers; i++) {
            if (h->c->mlp_only_layers[i] >= m->layers)
                return pp_hf_fail(h, H_MLP_ONLY, "layer %lld is not one of the %lld layers",
                                  (long long)h->c->mlp_only_layers[i], (long long)m->layers);
            m->dense_layers[i] = h->c->mlp_only_layers[i];
        }
        m->n_dense_layers = h->c->n_mlp_only_layers;
        if (fam->moe == MOE_QWEN2) {
            /* Qwen2MoeSparseMoeBlock: one shared expert of shared_expert_intermediate_size with a
             * sigmoid gate Linear(h, 1, bias=False) (shared_expert_gate). */
            HF_INT(&m->shared_ffn, true, H_SHARED_INTERMEDIATE);
            m->shared_experts = m->shared_ffn > 0;
            m->shared_gate = m->shared_ffn > 0;
        }
        return PP_OK;
    case MOE_DEEPSEEK:
        /* DeepseekV2MoE / DeepseekV3MoE: n_routed_experts experts of moe_intermediate_size;
         * shared_experts one MLP of moe_intermediate_size * n_shared_experts; dense layers
         * (intermediate_size) where i < first_k_dense_replace or i % moe_layer_freq != 0
         * (DeepSeek's modeling_deepseek.py DecoderLayer; transformers leaves moe_layer_freq
         * out, every released config has 1). DeepseekV3TopkRouter keeps an
         * e_score_correction_bias per expert (aux-loss-free balancing, DeepSeek-V3 sec. 2.1.2),
         * stored in the checkpoint: the router bias. */
        if ((st = hf_experts(h, deepseek, 1, m))) return st;
        HF_INT(&m->moe_ffn, true, H_MOE_INTERMEDIATE);
        HF_INT(&m->shared_experts, false, H_N_SHARED);
        m->shared_ffn = m->shared_experts * m->moe_ffn;
        HF_INT(&m->moe_first_dense, false, H_FIRST_K_DENSE);
        m->moe_every = 1;
        HF_INT(&m->moe_every, false, H_MOE_LAYER_FREQ);
        m->moe_phase = 0;
        m->router_bias = pp_hf_is_deepseek_v3(fam);
        if (pp_hf_is_deepseek_v3(fam)) HF_INT(&m->mtp_layers, false, H_NEXTN);
        return PP_OK;
    case MOE_LLAMA4:
        /* Llama4TextMoe: num_local_experts experts and one shared expert, both of
         * intermediate_size, router Linear(h, E, bias=False); the other layers are a dense
         * MLP of intermediate_size_mlp. MoE layers: moe_layers, else every
         * interleave_moe_layer_step-th from step - 1 (Llama4TextConfig). */
        if ((st = hf_experts(h, local, 1, m))) return st;
        m->moe_ffn = m->ffn;
        m->shared_experts = 1;
        m->shared_ffn = m->ffn;
        HF_INT(&m->ffn, true, H_INTERMEDIATE_MLP);
        if (pp_hf_has(h, H_MOE_LAYERS) && h->c->n_moe_layers == 0) { /* moe_layers []: every layer dense */
            m->experts = m->topk = m->moe_ffn = m->shared_experts = m->shared_ffn = 0;
            return PP_OK;
        }
        if (pp_hf_has(h, H_MOE_LAYERS)) return moe_fit(h, H_MOE_LAYERS, h->c->moe_layers, h->c->n_moe_layers, m);
        m->moe_every = 1;
        HF_INT(&m->moe_every, false, H_INTERLEAVE);
        m->moe_phase = m->moe_every - 1;
        return PP_OK;
    }
    return PP_OK;
}

/* Qwen2/Qwen3 with use_sliding_window: layer_types, else windowed from max_window_layers on
 * (Qwen2Config, Qwen3Config: i >= max_window_layers, default 28); Qwen2-MoE: even layers below
 * max_window_layers (Qwen2MoeConfig). Representable: none, all, or (Qwen2-MoE) all even. */
static pp_status hf_window_qwen(const pp_hf_ctx *h, const pp_hf_family *fam, pp_model *m)
{
    if (!pp_hf_bool(h, H_USE_SLIDING, false)) return PP_OK;
    int64_t window = 0;
    HF_INT(&window, true, H_SLIDING_WINDOW);
    if (fam->win == WIN_QWEN3_MOE) { /* Qwen3MoeAttention: config.sliding_window on every layer */
        m->window = window;
        return PP_OK;
    }
    bool windowed[HF_MAX_LAYER_LIST];
    if (pp_hf_has(h, H_LAYER_TYPES)) {
        if (m->layers > HF_MAX_LAYER_LIST) return pp_hf_fail(h, H_LAYER_TYPES, "more than %d layers", HF_MAX_LAYER_LIST);
        pp_status st = hf_layer_types(h, m->layers, windowed);
        return st ? st : window_set(h, H_LAYER_TYPES, windowed, m->layers, window, m);
    }
    int64_t mwl = 28;
    HF_INT(&mwl, false, H_MAX_WINDOW_LAYERS);
    if (fam->win == WIN_QWEN2_MOE) {
        int64_t last_even = (m->layers - 1) / 2 * 2;
        if (mwl == 0) return PP_OK;
        if (mwl <= last_even)
            return pp_hf_fail(h, H_MAX_WINDOW_LAYERS, "%lld: sliding window on the even layers below it "
                              "and not above is not modelled (all or none are)", (long long)mwl);
        m->window = window;
        m->window_full_every = m->layers > 1 ? 2 : 0;
        m->window_full_phase = m->layers > 1 ? 1 : 0;
        return PP_OK;
    }
    if (mwl >= m->layers) return PP_OK;
    if (mwl > 0)
        return pp_hf_fail(h, H_MAX_WINDOW_LAYERS, "%lld: full attention on the first %lld layers and a "
                          "sliding window above is not modelled (all or none windowed are)",
                          (long long)mwl, (long long)mwl);
    m->window = window;
    return PP_OK;
}

pp_status pp_hf_window(const pp_hf_ctx *h, const pp_hf_family *fam, pp_model *m)
{
    bool windowed[HF_MAX_LAYER_LIST];
    int64_t window = fam->window;
    pp_status st;
    switch (fam->win) {
    case WIN_NONE:
        return PP_OK;
    case WIN_ALL: /* sliding_window null: full attention */
        HF_INT(&m->window, false, H_SLIDING_WINDOW);
        return PP_OK;
    case WIN_QWEN:
    case WIN_QWEN2_MOE:
    case WIN_QWEN3_MOE:
        return hf_window_qwen(h, fam, m);
    case WIN_TYPES:
        HF_INT(&window, false, H_SLIDING_WINDOW);
        if (pp_hf_has(h, H_LAYER_TYPES)) break;
        m->window = window;
        m->window_full_every = fam->every;
        m->window_full_phase = fam->phase;
        if (fam->f & HF_WINDOW_PATTERN) {
            int64_t p = fam->every;
            HF_INT(&p, false, H_WINDOW_PATTERN);
            m->window_full_every = p > 1 ? p : 0;
            m->window_full_phase = p > 1 ? p - 1 : 0;
            if (p == 1) m->window = 0; /* (i + 1) % 1 == 0: every layer is global */
        }
        return PP_OK;
    case WIN_LLAMA4: {
        /* Llama4TextAttention: the RoPE layers (no_rope_layers[i] == 1) attend within chunks of
         * attention_chunk_size (null: no chunking); the NoPE layers, one in
         * no_rope_layer_interval (default 4: i % 4 == 3), attend to everything. A chunk is
         * modelled as a window of its size. */
        yaml_node_t *chunk = pp_yaml_lookup(h->y, h->root, "attention_chunk_size", false);
        if (chunk && pp_yaml_is_null(chunk)) return PP_OK;
        window = 8192;
        HF_INT(&window, false, H_CHUNK);
        if (pp_hf_has(h, H_LAYER_TYPES)) break;
        if (pp_hf_has(h, H_NO_ROPE_LAYERS)) {
            if (h->c->n_no_rope_layers < m->layers)
                return pp_hf_fail(h, H_NO_ROPE_LAYERS, "%lld entries for %lld layers",
                                  (long long)h->c->n_no_rope_layers, (long long)m->layers);
            for (int64_t i = 0; i < m->layers; i++) windowed[i] = h->c->no_rope_layers[i] == 1;
            return window_set(h, H_NO_ROPE_LAYERS, windowed, m->layers, window, m);
        }
        int64_t every = 4;
        HF_INT(&every, false, H_NO_ROPE_INTERVAL);
        m->window = every > 1 ? window : 0;
        m->window_full_every = every > 1 ? every : 0;
        m->window_full_phase = every > 1 ? every - 1 : 0;
        return PP_OK;
    }
    }
    /* layer_types given (WIN_TYPES, WIN_LLAMA4) */
    if (m->layers > HF_MAX_LAYER_LIST) return pp_hf_fail(h, H_LAYER_TYPES, "more than %d layers", HF_MAX_LAYER_LIST);
    if ((st = hf_layer_types(h, m->layers, windowed))) return st;
    return window_set(h, H_LAYER_TYPES, windowed, m->layers, window, m);
}

/* The router as each family's modeling code runs it. Score function: DeepseekV2MoEGate's
 * scoring_func (softmax), DeepseekV3TopkRouter's and Llama4Router's sigmoid, softmax elsewhere.
 * Top-k weights renormalised: always in MixtralSparseMoeBlock and GptOssTopKRouter (a softmax over
 * the top-k logits), by norm_topk_prob in Qwen2-MoE, Qwen3-MoE and DeepSeek (config defaults false,
 * false, V2 false, V3 true), never in Llama4Router (the sigmoid of the top-k logits). DeepSeek:
 * routed_scaling_factor (V2 1.0, V3 2.5), groups n_group / topk_group (V3: 8 / 4; V2 only with
 * topk_method group_limited_greedy; one group is no limit), the e_score_correction_bias of V3
 * (aux-loss-free balancing), aux_loss_alpha with seq_aux (V2 0.001, true; V3's class has neither).
 * The others: transformers' load_balancing_loss_func (Switch's) with router_aux_loss_coef (0.001;
 * GptOssConfig 0.9). router_z_loss_coef where a config gives it. */
pp_status pp_hf_router(const pp_hf_ctx *h, const pp_hf_family *fam, pp_model *m)
{
    const pp_hf_cfg *c = h->c;
    bool ds = fam->moe == MOE_DEEPSEEK, v3 = pp_hf_is_deepseek_v3(fam);
    if (m->experts <= 1) return PP_OK;
    const char *sf = ds && pp_hf_has(h, H_SCORING) ? c->scoring_func : v3 || fam->moe == MOE_LLAMA4 ? "sigmoid" : "softmax";
    int score = pp_name_lookup(pp_router_score_names, PP_ROUTER_SCORE_COUNT, sf);
    if (score < 0) return pp_hf_fail(h, H_SCORING, "'%s' is not supported (softmax, sigmoid)", sf);
    m->router_score = (pp_router_score)score;
    bool norm = fam->moe == MOE_MIXTRAL || fam->moe == MOE_GPTOSS || v3;
    if (fam->moe == MOE_QWEN || fam->moe == MOE_QWEN2 || ds) norm = pp_hf_bool(h, H_NORM_TOPK, norm);
    m->router_raw_topk = !norm;
    m->router_z_coef = pp_hf_has(h, H_Z_COEF) ? pp_hf_num(h, H_Z_COEF) : 0;
    if (!ds) {
        m->router_balance = PP_BALANCE_AUX_LOSS;
        m->router_aux_coef = pp_hf_has(h, H_AUX_COEF) ? pp_hf_num(h, H_AUX_COEF) : fam->moe == MOE_GPTOSS ? 0.9 : 0.001;
        return PP_OK;
    }
    m->router_scale = pp_hf_has(h, H_ROUTED_SCALE) ? pp_hf_num(h, H_ROUTED_SCALE) : v3 ? 2.5 : 1.0;
    int64_t ng = v3 ? 8 : 0, tg = v3 ? 4 : 0;
    HF_INT(&ng, false, H_N_GROUP);
    HF_INT(&tg, false, H_TOPK_GROUP);
    if ((!v3 && (!pp_hf_has(h, H_TOPK_METHOD) || strcmp(c->topk_method, "group_limited_greedy"))) || ng <= 1) ng = tg = 0;
    m->router_groups = ng;
    m->router_group_topk = tg;
    m->router_expert_bias = v3;
    if (!v3 || pp_hf_has(h, H_AUX_ALPHA)) {
        m->router_balance = pp_hf_bool(h, H_SEQ_AUX, true) ? PP_BALANCE_SEQ_AUX_LOSS : PP_BALANCE_AUX_LOSS;
        m->router_aux_coef = pp_hf_has(h, H_AUX_ALPHA) ? pp_hf_num(h, H_AUX_ALPHA) : 0.001;
    }
    return PP_OK;
}

