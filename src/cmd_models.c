/* parplan models [--json]: the catalog of models (with their parameter counts) and GPUs.
 * parplan models --model NAME|FILE [--json]: one model as read, its layer pattern and its
 * parameters per part (pp_model_params) and per tensor (pp_model_tensors). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "pp_json.h"

/* The fields every model has, in the order of both JSON documents. */
static void model_json_shape(pp_json *j, const pp_model *m)
{
    pp_json_kint(j, "layers", m->layers);
    pp_json_kint(j, "hidden", m->hidden);
    pp_json_kint(j, "heads", m->heads);
    pp_json_kint(j, "kv_heads", m->kv_heads);
    pp_json_kint(j, "head_dim", m->head_dim);
    pp_json_kint(j, "ffn", m->ffn);
    pp_json_kint(j, "vocab", m->vocab);
    pp_json_kint(j, "seq", m->seq);
    pp_json_kint(j, "max_context", m->max_context);
    pp_json_kstr(j, "activation", pp_act_names[m->act]);
    pp_json_kstr(j, "norm", pp_norm_names[m->norm]);
    pp_json_kstr(j, "position", pp_pos_names[m->pos]);
    pp_json_kbool(j, "bias", m->bias);
    pp_json_kbool(j, "tied", m->tied);
}

static void models_json(const pp_catalog *cat)
{
    pp_json j;
    pp_json_init(&j, stdout, true);
    pp_json_obj_begin(&j);
    pp_json_key(&j, "models");
    pp_json_arr_begin(&j);
    for (int i = 0; i < cat->n_models; i++) {
        const pp_model *m = &cat->models[i];
        pp_param_count pc;
        pp_model_params(m, &pc);
        pp_json_obj_begin(&j);
        pp_json_kstr(&j, "name", m->name);
        pp_json_kstr(&j, "family", m->family);
        model_json_shape(&j, m);
        pp_json_kint(&j, "experts", m->experts);
        pp_json_kint(&j, "topk", m->topk);
        pp_json_kint(&j, "gbs", m->gbs);
        pp_json_kint(&j, "params", pc.total);
        pp_json_kint(&j, "active_params", pc.active);
        pp_json_kint(&j, "embedding_params", pc.embedding);
        pp_json_kint(&j, "layer_params", pc.per_layer);
        pp_json_kint(&j, "output_params", pc.output);
        pp_json_knum(&j, "published_params", m->published_params);
        pp_json_kstr(&j, "source", m->source);
        pp_json_obj_end(&j);
    }
    pp_json_arr_end(&j);
    pp_json_key(&j, "gpus");
    pp_json_arr_begin(&j);
    for (int i = 0; i < cat->n_gpus; i++) {
        const pp_gpu *g = &cat->gpus[i];
        pp_json_obj_begin(&j);
        pp_json_kstr(&j, "name", g->name);
        pp_json_kstr(&j, "full_name", g->full_name);
        pp_json_knum(&j, "memory_bytes", g->memory_bytes);
        pp_json_knum(&j, "mem_bw_gbs", g->mem_bw_gbs);
        pp_json_key(&j, "peak_flops");
        pp_json_obj_begin(&j);
        for (int d = 0; d < PP_DT_COUNT; d++) pp_json_knum(&j, pp_dtype_names[d], g->peak_flops[d]);
        pp_json_obj_end(&j);
        pp_json_knum(&j, "nvlink_gbs", g->nvlink_gbs);
        pp_json_knum(&j, "pcie_gbs", g->pcie_gbs);
        pp_json_kint(&j, "gpus_per_node", g->gpus_per_node);
        pp_json_kint(&j, "nvlink_domain", g->nvlink_domain > g->gpus_per_node ? g->nvlink_domain : g->gpus_per_node);
        pp_json_knum(&j, "internode_gbs", g->internode_gbs);
        pp_json_knum(&j, "gemm_eff", g->gemm_eff);
        if (g->gemm_sustained > 0) pp_json_knum(&j, "gemm_sustained", g->gemm_sustained);
        if (g->fp4_eff > 0) pp_json_knum(&j, "fp4_eff", g->fp4_eff);
        if (g->mxfp8_eff > 0) pp_json_knum(&j, "mxfp8_eff", g->mxfp8_eff);
        if (g->fp8_eff > 0) pp_json_knum(&j, "fp8_eff", g->fp8_eff);
        pp_json_knum(&j, "intra_latency_s", g->intra_latency_s);
        pp_json_knum(&j, "inter_latency_s", g->inter_latency_s);
        pp_json_knum(&j, "max_power_w", g->max_power_w);
        pp_json_knum(&j, "gpu_power_w", g->power_w > 0 ? g->power_w : g->max_power_w);
        pp_json_kstr(&j, "source", g->source);
        pp_json_obj_end(&j);
    }
    pp_json_arr_end(&j);
    pp_json_obj_end(&j);
    pp_json_end(&j);
}

static void models_table(const pp_catalog *cat)
{
    int w = 14; /* the name column: as wide as the longest name */
    for (int i = 0; i < cat->n_models; i++)
        if ((int)strlen(cat->models[i].name) > w) w = (int)strlen(cat->models[i].name);
    printf("# models (%s/models)\n", cat->dir);
    printf("%-*s %6s %6s %5s %4s %6s %7s %6s %10s %10s\n", w, "name", "layers", "hidden", "heads",
           "kv", "ffn", "vocab", "seq", "params(B)", "active(B)");
    for (int i = 0; i < cat->n_models; i++) {
        const pp_model *m = &cat->models[i];
        pp_param_count pc;
        pp_model_params(m, &pc);
        printf("%-*s %6lld %6lld %5lld %4lld %6lld %7lld %6lld %10.3f %10.3f\n", w, m->name,
               (long long)m->layers, (long long)m->hidden, (long long)m->heads,
               (long long)m->kv_heads, (long long)m->ffn, (long long)m->vocab, (long long)m->seq,
               (double)pc.total / 1e9, (double)pc.active / 1e9);
    }
    int gw = 10;
    for (int i = 0; i < cat->n_gpus; i++)
        if ((int)strlen(cat->gpus[i].name) > gw) gw = (int)strlen(cat->gpus[i].name);
    printf("\n# GPUs (%s/gpus)\n", cat->dir);
    printf("%-*s %10s %10s %8s %8s %8s %11s %9s\n", gw, "name", "memory GiB", "bf16 TFLOPs", "HBM GB/s",
           "NVLink", "per node", "network GB/s", "power W");
    for (int i = 0; i < cat->n_gpus; i++) {
        const pp_gpu *g = &cat->gpus[i];
        char bf16[32], power[32];
        if (g->peak_flops[PP_DT_BF16] > 0)
            snprintf(bf16, sizeof bf16, "%.1f", g->peak_flops[PP_DT_BF16] / 1e12);
        else
            snprintf(bf16, sizeof bf16, "-"); /* no bf16 units (V100): see --json for fp16 */
        /* the board's maximum, or the limit it runs at "of" the maximum (a lower default limit) */
        if (g->power_w > 0 && g->power_w < g->max_power_w)
            snprintf(power, sizeof power, "%.0f/%.0f", g->power_w, g->max_power_w);
        else if (g->max_power_w > 0)
            snprintf(power, sizeof power, "%.0f", g->max_power_w);
        else
            snprintf(power, sizeof power, "-");
        printf("%-*s %10.1f %11s %8.0f %8.0f %8lld %12.2f %9s\n", gw, g->name, g->memory_bytes / 1073741824.0,
               bf16, g->mem_bw_gbs, g->nvlink_gbs, (long long)g->gpus_per_node, g->internode_gbs, power);
    }
}

/* ------------------------------------------------------------------ models --model */

typedef bool (*layer_pred)(const pp_model *m, int64_t i);
static bool layer_is_dense(const pp_model *m, int64_t i) { return !pp_model_layer_is_moe(m, i); }
static bool layer_is_full(const pp_model *m, int64_t i) { return !pp_model_layer_is_window(m, i); }

/* Layers where pred holds, as runs: "0-2, 3-60, 1-47/2, 7" (a-b/s: every s-th from a to b). */
static void layers_run_flush(char *buf, size_t n, size_t *used, int64_t a, int64_t last, int64_t step, int64_t len)
{
    const char *sep = *used ? ", " : "";
    size_t room = *used < n ? n - *used : 0;
    int w;
    if (len >= 3 && step == 1)
        w = snprintf(buf + *used, room, "%s%lld-%lld", sep, (long long)a, (long long)last);
    else if (len >= 3)
        w = snprintf(buf + *used, room, "%s%lld-%lld/%lld", sep, (long long)a, (long long)last, (long long)step);
    else if (len == 2)
        w = snprintf(buf + *used, room, "%s%lld, %lld", sep, (long long)a, (long long)last);
    else
        w = snprintf(buf + *used, room, "%s%lld", sep, (long long)a);
    if (w > 0) *used += (size_t)w;
}

static int64_t layers_format(const pp_model *m, layer_pred pred, char *buf, size_t n)
{
    int64_t count = 0, a = 0, last = 0, step = 0, len = 0;
    size_t used = 0;
    buf[0] = '\0';
    for (int64_t i = 0; i < m->layers; i++) {
        if (!pred(m, i)) continue;
        count++;
        if (len == 1) {
            step = i - a;
        } else if (len >= 2 && i - last != step) {
            layers_run_flush(buf, n, &used, a, last, step, len);
            len = 0;
        }
        if (len == 0) a = i;
        last = i;
        len++;
    }
    if (len) layers_run_flush(buf, n, &used, a, last, step, len);
    if (!count) snprintf(buf, n, "none");
    return count;
}

static int64_t tensor_copies(const pp_model *m, const pp_param_count *pc, pp_tensor_scope s)
{
    switch (s) {
    case PP_TS_LAYER: return m->layers;
    case PP_TS_DENSE: return pc->dense_layers;
    case PP_TS_MOE: return pc->moe_layers;
    case PP_TS_EXPERT: return pc->moe_layers * (m->experts > 1 ? m->experts : 0);
    case PP_TS_MTP: return m->mtp_layers;
    default: return 1;
    }
}

static void describe_json_layers(pp_json *j, const char *key, const pp_model *m, layer_pred pred)
{
    pp_json_key(j, key);
    pp_json_arr_begin(j);
    for (int64_t i = 0; i < m->layers; i++)
        if (pred(m, i)) pp_json_int(j, i);
    pp_json_arr_end(j);
}

static void model_describe_json(const pp_model *m)
{
    pp_param_count pc;
    pp_model_params(m, &pc);
    double att = 0, hid = 0;
    pp_model_dropout(m, &att, &hid);
    pp_json j;
    pp_json_init(&j, stdout, true);
    pp_json_obj_begin(&j);
    pp_json_kstr(&j, "name", m->name);
    pp_json_kstr(&j, "family", m->family);
    pp_json_kstr(&j, "source", m->source);
    model_json_shape(&j, m);
    pp_json_kbool(&j, "qkv_bias", m->qkv_bias);
    pp_json_kbool(&j, "out_bias", m->out_bias);
    pp_json_kbool(&j, "mlp_bias", m->mlp_bias);
    pp_json_kstr(&j, "qk_norm", pp_qk_norm_names[m->qk_norm]);
    pp_json_kbool(&j, "attn_sinks", m->attn_sinks);
    pp_json_kint(&j, "norms_per_layer", m->norms_per_layer);
    pp_json_kint(&j, "window", m->window);
    pp_json_kint(&j, "window_full_every", m->window_full_every);
    pp_json_kint(&j, "window_full_phase", m->window_full_phase);
    pp_json_kint(&j, "q_lora_rank", m->q_lora_rank);
    pp_json_kint(&j, "kv_lora_rank", m->kv_lora_rank);
    pp_json_kint(&j, "qk_nope_dim", m->qk_nope_dim);
    pp_json_kint(&j, "qk_rope_dim", m->qk_rope_dim);
    pp_json_kint(&j, "v_head_dim", m->v_head_dim);
    pp_json_kint(&j, "experts", m->experts);
    pp_json_kint(&j, "topk", m->topk);
    pp_json_kint(&j, "moe_ffn", m->moe_ffn);
    pp_json_kint(&j, "shared_experts", m->shared_experts);
    pp_json_kint(&j, "shared_ffn", m->shared_ffn);
    pp_json_kbool(&j, "shared_gate", m->shared_gate);
    pp_json_kbool(&j, "router_bias", m->router_bias);
    pp_json_kint(&j, "moe_first_dense", m->moe_first_dense);
    pp_json_kint(&j, "moe_every", m->moe_every);
    pp_json_kint(&j, "moe_phase", m->moe_phase);
    pp_json_key(&j, "dense_layers");
    pp_json_arr_begin(&j);
    for (int64_t i = 0; i < m->n_dense_layers; i++) pp_json_int(&j, m->dense_layers[i]);
    pp_json_arr_end(&j);
    pp_json_kint(&j, "mtp_layers", m->mtp_layers);
    pp_json_kbool(&j, "dropout_set", m->dropout_set);
    pp_json_knum(&j, "attention_dropout", att);
    pp_json_knum(&j, "hidden_dropout", hid);
    pp_json_kint(&j, "gbs", m->gbs);
    pp_json_knum(&j, "published_params", m->published_params);
    pp_json_knum(&j, "published_active", m->published_active);
    pp_json_knum(&j, "norm_eps", m->norm_eps);
    pp_json_key(&j, "rope");
    pp_json_obj_begin(&j);
    pp_json_knum(&j, "theta", m->rope_theta);
    pp_json_knum(&j, "local_theta", m->rope_local_theta);
    pp_json_kstr(&j, "scaling", pp_rope_scaling_names[m->rope_scaling]);
    pp_json_knum(&j, "factor", m->rope_factor);
    pp_json_kint(&j, "original_context", m->rope_original_context);
    pp_json_knum(&j, "low_freq", m->rope_low_freq);
    pp_json_knum(&j, "high_freq", m->rope_high_freq);
    pp_json_knum(&j, "yarn_beta_fast", m->yarn_beta_fast);
    pp_json_knum(&j, "yarn_beta_slow", m->yarn_beta_slow);
    pp_json_knum(&j, "yarn_mscale", m->yarn_mscale);
    pp_json_knum(&j, "yarn_mscale_all_dim", m->yarn_mscale_all_dim);
    pp_json_kbool(&j, "yarn_truncate", !m->yarn_no_truncate);
    pp_json_obj_end(&j);
    pp_json_key(&j, "router");
    pp_json_obj_begin(&j);
    pp_json_kstr(&j, "score", pp_router_score_names[m->router_score]);
    pp_json_kbool(&j, "raw_topk", m->router_raw_topk);
    pp_json_knum(&j, "scale", m->router_scale);
    pp_json_kint(&j, "groups", m->router_groups);
    pp_json_kint(&j, "group_topk", m->router_group_topk);
    pp_json_kbool(&j, "expert_bias", m->router_expert_bias);
    pp_json_kstr(&j, "balance", pp_router_balance_names[m->router_balance]);
    pp_json_knum(&j, "aux_coef", m->router_aux_coef);
    pp_json_knum(&j, "z_coef", m->router_z_coef);
    pp_json_obj_end(&j);

    int64_t kinds[PP_LAYER_KINDS];
    pp_model_layer_counts(m, 0, m->layers, kinds);
    pp_json_key(&j, "layer_pattern");
    pp_json_obj_begin(&j);
    pp_json_kint(&j, "dense", pc.dense_layers);
    pp_json_kint(&j, "moe", pc.moe_layers);
    pp_json_kint(&j, "windowed", kinds[PP_LAYER_WINDOW] + kinds[PP_LAYER_MOE | PP_LAYER_WINDOW]);
    pp_json_key(&j, "kinds");
    pp_json_obj_begin(&j);
    for (int k = 0; k < PP_LAYER_KINDS; k++) pp_json_kint(&j, pp_layer_kind_names[k], kinds[k]);
    pp_json_obj_end(&j);
    describe_json_layers(&j, "dense_at", m, layer_is_dense);
    describe_json_layers(&j, "moe_at", m, pp_model_layer_is_moe);
    describe_json_layers(&j, "windowed_at", m, pp_model_layer_is_window);
    pp_json_kstr(&j, "mtp_kind", m->mtp_layers > 0 ? pp_layer_kind_names[pp_model_mtp_kind(m)] : "none");
    pp_json_obj_end(&j);

    pp_json_kint(&j, "params_total", pc.total);
    pp_json_kint(&j, "params_active", pc.active);
    /* The parts sum to params_total (mtp and routed_experts_active apart); per_layer: one of each. */
    const struct { const char *key; int64_t v; } parts[] = {
        {"embedding", pc.embedding}, {"attention", pc.attention_total}, {"dense_mlp", pc.dense_mlp_total},
        {"shared_experts_router", pc.moe_shared_total}, {"routed_experts", pc.experts_total},
        {"routed_experts_active", pc.moe_layers * (m->experts > 1 ? m->topk : 0) * pc.expert},
        {"final_norm", pc.final_norm}, {"output", pc.output}, {"mtp", pc.mtp_total},
        {"attention", pc.attention}, {"dense_mlp", pc.dense_mlp}, {"shared_experts_router", pc.moe_shared},
        {"expert", pc.expert}, {"mtp_extra", pc.mtp_extra},
    };
    const size_t n_totals = 9, n_parts = sizeof parts / sizeof parts[0];
    pp_json_key(&j, "params_breakdown");
    pp_json_obj_begin(&j);
    for (size_t i = 0; i < n_parts; i++) {
        if (i == n_totals) {
            pp_json_key(&j, "per_layer");
            pp_json_obj_begin(&j);
        }
        pp_json_kint(&j, parts[i].key, parts[i].v);
    }
    pp_json_obj_end(&j);
    pp_json_obj_end(&j);

    pp_model_tensor t[PP_MODEL_MAX_TENSORS];
    int nt = pp_model_tensors(m, t);
    pp_json_key(&j, "tensors");
    pp_json_arr_begin(&j);
    for (int i = 0; i < nt; i++) {
        int64_t copies = tensor_copies(m, &pc, t[i].scope);
        pp_json_obj_begin(&j);
        pp_json_kstr(&j, "name", t[i].name);
        pp_json_kstr(&j, "shape", t[i].shape);
        pp_json_kint(&j, "elements", t[i].count);
        pp_json_kstr(&j, "scope", pp_tensor_scope_names[t[i].scope]);
        pp_json_kint(&j, "copies", copies);
        pp_json_kint(&j, "total", copies * t[i].count);
        pp_json_obj_end(&j);
    }
    pp_json_arr_end(&j);
    pp_json_obj_end(&j);
    pp_json_end(&j);
}

static void row_int(const char *k, int64_t v) { printf("  %-18s %lld\n", k, (long long)v); }

/* 12,345,678 (and "671.03B" beside it in the tables). */
static const char *fmt_count(int64_t v, char *buf, size_t n)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%lld", (long long)v);
    size_t len = strlen(digits), o = 0;
    for (size_t i = 0; i < len && o + 2 < n; i++) {
        if (i && (len - i) % 3 == 0 && digits[0] != '-') buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

static void row_params(const char *k, int64_t v, int64_t total)
{
    char b[40];
    printf("  %-36s %19s %9.3fB %6.2f%%\n", k, fmt_count(v, b, sizeof b), (double)v / 1e9,
           total > 0 ? 100.0 * (double)v / (double)total : 0.0);
}

static void model_describe_table(const pp_model *m)
{
    pp_param_count pc;
    pp_model_params(m, &pc);
    char buf[512], lbl[80];
    printf("# model %s (%s): %s\n", m->name, m->family, m->source);
    row_int("layers", m->layers);
    row_int("hidden", m->hidden);
    printf("  %-18s %lld (kv_heads %lld, head_dim %lld)\n", "heads", (long long)m->heads,
           (long long)m->kv_heads, (long long)m->head_dim);
    row_int(m->experts > 1 ? "ffn (dense layers)" : "ffn", m->ffn);
    row_int("vocab", m->vocab);
    printf("  %-18s %lld (training)\n", "seq", (long long)m->seq);
    printf("  %-18s %lld (the longest context served)\n", "max_context", (long long)m->max_context);
    printf("  %-18s %g\n", "norm_eps", m->norm_eps);
    if (m->pos == PP_POS_ROPE) {
        printf("  %-18s base %g", "rope", m->rope_theta);
        if (m->rope_local_theta > 0) printf(" (windowed layers %g)", m->rope_local_theta);
        if (m->rope_scaling != PP_ROPE_SCALING_NONE) printf(", %s x%g", pp_rope_scaling_names[m->rope_scaling], m->rope_factor);
        if (m->rope_original_context > 0) printf(" of %lld", (long long)m->rope_original_context);
        if (m->rope_scaling == PP_ROPE_SCALING_LLAMA3) printf(", bands %g-%g", m->rope_low_freq, m->rope_high_freq);
        if (m->rope_scaling == PP_ROPE_SCALING_YARN)
            printf(", beta %g/%g, mscale %g/%g%s", m->yarn_beta_fast, m->yarn_beta_slow, m->yarn_mscale,
                   m->yarn_mscale_all_dim, m->yarn_no_truncate ? ", not truncated" : "");
        printf("\n");
    }
    printf("  %-18s %s, %s, %s position, %s embeddings\n", "shape", pp_act_names[m->act],
           pp_norm_names[m->norm], pp_pos_names[m->pos], m->tied ? "tied" : "untied");
    if (m->qkv_bias || m->out_bias || m->mlp_bias)
        printf("  %-18s %s%s%s%s%s\n", "biases", m->qkv_bias ? "q/k/v" : "",
               m->qkv_bias && m->out_bias ? ", " : "", m->out_bias ? "attention output" : "",
               (m->qkv_bias || m->out_bias) && m->mlp_bias ? ", " : "", m->mlp_bias ? "MLP and experts" : "");
    if (m->qk_norm != PP_QKNORM_NONE) printf("  %-18s %s\n", "qk_norm", pp_qk_norm_names[m->qk_norm]);
    if (m->norms_per_layer != 2) row_int("norms_per_layer", m->norms_per_layer);
    if (m->attn_sinks) printf("  %-18s one per head\n", "attention sinks");
    if (m->kv_lora_rank > 0)
        printf("  %-18s q_lora_rank %lld, kv_lora_rank %lld, qk_nope %lld, qk_rope %lld, v_head %lld\n",
               "latent attention", (long long)m->q_lora_rank, (long long)m->kv_lora_rank,
               (long long)m->qk_nope_dim, (long long)m->qk_rope_dim, (long long)m->v_head_dim);
    if (m->window > 0) {
        if (m->window_full_every > 0)
            printf("  %-18s %lld tokens; full attention where layer %% %lld == %lld\n", "window",
                   (long long)m->window, (long long)m->window_full_every, (long long)m->window_full_phase);
        else
            printf("  %-18s %lld tokens on every layer\n", "window", (long long)m->window);
    }
    if (m->experts > 1) {
        printf("  %-18s %lld routed, top-%lld, expert ffn %lld", "experts", (long long)m->experts,
               (long long)m->topk, (long long)pp_model_expert_ffn(m));
        if (m->shared_ffn > 0)
            printf("; %lld shared (ffn %lld%s)", (long long)m->shared_experts, (long long)m->shared_ffn,
                   m->shared_gate ? ", gated" : "");
        printf("%s\n", m->router_bias ? "; router bias" : "");
        printf("  %-18s %s, top-%lld %s", "router", pp_router_score_names[m->router_score], (long long)m->topk,
               m->router_raw_topk ? "weights as scored" : "weights renormalised");
        if (m->router_scale != 1) printf(" x%g", m->router_scale);
        if (m->router_groups > 0)
            printf(", top-%lld of %lld groups", (long long)m->router_group_topk, (long long)m->router_groups);
        if (m->router_expert_bias) printf(", aux-loss-free expert bias");
        printf("; balance %s %g", pp_router_balance_names[m->router_balance], m->router_aux_coef);
        if (m->router_z_coef > 0) printf(", z-loss %g", m->router_z_coef);
        printf("\n");
    }
    if (m->mtp_layers > 0) row_int("mtp_layers", m->mtp_layers);
    if (m->dropout_set) printf("  %-18s attention %.3g, hidden %.3g\n", "dropout", m->attention_dropout, m->hidden_dropout);
    if (m->gbs) row_int("gbs", m->gbs);

    int64_t kinds[PP_LAYER_KINDS];
    pp_model_layer_counts(m, 0, m->layers, kinds);
    printf("\n# layers: %lld dense, %lld moe; %lld windowed, %lld full attention\n",
           (long long)pc.dense_layers, (long long)pc.moe_layers,
           (long long)(kinds[PP_LAYER_WINDOW] + kinds[PP_LAYER_MOE | PP_LAYER_WINDOW]),
           (long long)(kinds[0] + kinds[PP_LAYER_MOE]));
    if (m->experts > 1) {
        layers_format(m, layer_is_dense, buf, sizeof buf);
        printf("  %-18s %s\n", "dense", buf);
        layers_format(m, pp_model_layer_is_moe, buf, sizeof buf);
        printf("  %-18s %s\n", "moe", buf);
    }
    if (m->window > 0) {
        layers_format(m, layer_is_full, buf, sizeof buf);
        printf("  %-18s %s\n", "full attention", buf);
    }
    if (m->mtp_layers > 0)
        printf("  %-18s %lld after the last layer (%s)\n", "mtp", (long long)m->mtp_layers,
               pp_layer_kind_names[pp_model_mtp_kind(m)]);

    int64_t E = m->experts > 1 ? m->experts : 0, k = m->experts > 1 ? m->topk : 0;
    printf("\n%-38s %19s %10s %7s\n", "# parameters", "count", "", "share");
    row_params("embedding", pc.embedding, pc.total);
    snprintf(lbl, sizeof lbl, "attention (%lld layers)", (long long)m->layers);
    row_params(lbl, pc.attention_total, pc.total);
    if (pc.dense_layers) {
        snprintf(lbl, sizeof lbl, "dense MLP (%lld layers)", (long long)pc.dense_layers);
        row_params(lbl, pc.dense_mlp_total, pc.total);
    }
    if (pc.moe_layers) {
        snprintf(lbl, sizeof lbl, "%s (%lld layers)", m->shared_ffn > 0 ? "shared experts + router" : "router",
                 (long long)pc.moe_layers);
        row_params(lbl, pc.moe_shared_total, pc.total);
        snprintf(lbl, sizeof lbl, "routed experts (%lld x %lld)", (long long)pc.moe_layers, (long long)E);
        row_params(lbl, pc.experts_total, pc.total);
    }
    row_params("final norm", pc.final_norm, pc.total);
    row_params(m->tied ? "output layer (tied: 0)" : "output layer", pc.output, pc.total);
    row_params("total", pc.total, pc.total);
    if (E) {
        snprintf(lbl, sizeof lbl, "active per token (top-%lld)", (long long)k);
        row_params(lbl, pc.active, pc.total);
    }
    if (m->mtp_layers > 0) {
        snprintf(lbl, sizeof lbl, "MTP (%lld, not in the total)", (long long)m->mtp_layers);
        row_params(lbl, pc.mtp_total, pc.total);
    }
    char pub[40];
    if (m->published_params > 0)
        printf("  %-36s %19s %9.3fB (ours %+.2f%%)\n", "published", fmt_count((int64_t)m->published_params, pub, sizeof pub),
               m->published_params / 1e9, 100.0 * ((double)pc.total / m->published_params - 1));
    if (m->published_active > 0)
        /* publishers differ on counting the input embedding (a lookup) as active: both */
        printf("  %-36s %19s %9.3fB (ours %+.2f%%, without the embedding %+.2f%%)\n", "published active",
               fmt_count((int64_t)m->published_active, pub, sizeof pub), m->published_active / 1e9,
               100.0 * ((double)pc.active / m->published_active - 1),
               100.0 * ((double)(pc.active - pc.embedding) / m->published_active - 1));

    pp_model_tensor t[PP_MODEL_MAX_TENSORS];
    int nt = pp_model_tensors(m, t);
    printf("\n%-19s %-9s %-24s %15s %6s %19s\n", "# tensors", "scope", "shape", "elements", "copies", "total");
    for (int i = 0; i < nt; i++) {
        char e[40], tot[40];
        int64_t copies = tensor_copies(m, &pc, t[i].scope);
        printf("  %-17s %-9s %-24s %15s %6lld %19s\n", t[i].name, pp_tensor_scope_names[t[i].scope],
               t[i].shape, fmt_count(t[i].count, e, sizeof e), (long long)copies,
               fmt_count(copies * t[i].count, tot, sizeof tot));
    }
}

int pp_cmd_models(pp_cli *c)
{
    pp_error err = {0};
    if (c->npos > 0) {
        pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0, "'models' takes no arguments, got '%s'", c->pos[0]);
        return pp_cli_fail(&err);
    }
    if (pp_cli_catalog(c, &err) != PP_OK) return pp_cli_fail(&err);
    if (c->model_arg) {
        pp_model m;
        if (pp_model_resolve(&m, &c->cat, c->model_arg, &err) != PP_OK) return pp_cli_fail(&err);
        if (c->json)
            model_describe_json(&m);
        else
            model_describe_table(&m);
        return 0;
    }
    if (c->json)
        models_json(&c->cat);
    else
        models_table(&c->cat);
    return 0;
}
