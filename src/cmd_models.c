/* parplan models [--json]: the catalog of models (with their parameter counts) and GPUs. */
#include <stdio.h>

#include "cli.h"
#include "pp_json.h"

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
        pp_json_kint(&j, "layers", m->layers);
        pp_json_kint(&j, "hidden", m->hidden);
        pp_json_kint(&j, "heads", m->heads);
        pp_json_kint(&j, "kv_heads", m->kv_heads);
        pp_json_kint(&j, "head_dim", m->head_dim);
        pp_json_kint(&j, "ffn", m->ffn);
        pp_json_kint(&j, "vocab", m->vocab);
        pp_json_kint(&j, "seq", m->seq);
        pp_json_kstr(&j, "activation", pp_act_names[m->act]);
        pp_json_kstr(&j, "norm", pp_norm_names[m->norm]);
        pp_json_kstr(&j, "position", pp_pos_names[m->pos]);
        pp_json_kbool(&j, "bias", m->bias);
        pp_json_kbool(&j, "tied", m->tied);
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
        pp_json_knum(&j, "internode_gbs", g->internode_gbs);
        pp_json_knum(&j, "gemm_eff", g->gemm_eff);
        pp_json_knum(&j, "intra_latency_s", g->intra_latency_s);
        pp_json_knum(&j, "inter_latency_s", g->inter_latency_s);
        pp_json_kstr(&j, "source", g->source);
        pp_json_obj_end(&j);
    }
    pp_json_arr_end(&j);
    pp_json_obj_end(&j);
    pp_json_end(&j);
}

static void models_table(const pp_catalog *cat)
{
    printf("# models (%s/models)\n", cat->dir);
    printf("%-14s %6s %6s %5s %4s %6s %7s %6s %10s %10s\n", "name", "layers", "hidden", "heads",
           "kv", "ffn", "vocab", "seq", "params(B)", "active(B)");
    for (int i = 0; i < cat->n_models; i++) {
        const pp_model *m = &cat->models[i];
        pp_param_count pc;
        pp_model_params(m, &pc);
        printf("%-14s %6lld %6lld %5lld %4lld %6lld %7lld %6lld %10.3f %10.3f\n", m->name,
               (long long)m->layers, (long long)m->hidden, (long long)m->heads,
               (long long)m->kv_heads, (long long)m->ffn, (long long)m->vocab, (long long)m->seq,
               (double)pc.total / 1e9, (double)pc.active / 1e9);
    }
    printf("\n# GPUs (%s/gpus)\n", cat->dir);
    printf("%-10s %10s %10s %8s %8s %8s %11s\n", "name", "memory GiB", "bf16 TFLOPs", "HBM GB/s",
           "NVLink", "per node", "network GB/s");
    for (int i = 0; i < cat->n_gpus; i++) {
        const pp_gpu *g = &cat->gpus[i];
        char bf16[32];
        if (g->peak_flops[PP_DT_BF16] > 0)
            snprintf(bf16, sizeof bf16, "%.1f", g->peak_flops[PP_DT_BF16] / 1e12);
        else
            snprintf(bf16, sizeof bf16, "-"); /* no bf16 units (V100): see --json for fp16 */
        printf("%-10s %10.1f %11s %8.0f %8.0f %8lld %12.2f\n", g->name, g->memory_bytes / 1073741824.0,
               bf16, g->mem_bw_gbs, g->nvlink_gbs, (long long)g->gpus_per_node, g->internode_gbs);
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
    if (c->json)
        models_json(&c->cat);
    else
        models_table(&c->cat);
    return 0;
}
