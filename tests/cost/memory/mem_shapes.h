/* Model shapes and the GPU of the real Megatron-LM runs (tools/megatron/configs.csv and
 * run_configs.py: the Megatron flags there and these fields must say the same thing). */
#ifndef PP_TEST_MEM_SHAPES_H
#define PP_TEST_MEM_SHAPES_H

#include <stdio.h>
#include <string.h>

#include "pp.h"

static void mem_gpt(pp_model *m, const char *name, int64_t layers, int64_t hidden, int64_t heads)
{
    pp_model_init(m);
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->family, sizeof m->family, "gpt");
    m->layers = layers;
    m->hidden = hidden;
    m->heads = heads;
    m->kv_heads = heads;
    m->head_dim = hidden / heads;
    m->ffn = 4 * hidden;
    m->vocab = 50257;
    m->seq = 2048;
    m->act = PP_ACT_GELU;
    m->norm = PP_NORM_LAYERNORM;
    m->pos = PP_POS_LEARNED;
    m->bias = true;
    m->tied = true;
}

/* Llama-3.2-3B dimensions, untied (Megatron --untie-embeddings-and-output-weights). */
static void mem_llama3b(pp_model *m)
{
    pp_model_init(m);
    snprintf(m->name, sizeof m->name, "llama-3b");
    snprintf(m->family, sizeof m->family, "llama");
    m->layers = 28;
    m->hidden = 3072;
    m->heads = 24;
    m->kv_heads = 8;
    m->head_dim = 128;
    m->ffn = 8192;
    m->vocab = 128256;
    m->seq = 4096;
    m->act = PP_ACT_SWIGLU;
    m->norm = PP_NORM_RMSNORM;
    m->pos = PP_POS_ROPE;
    m->bias = false;
    m->tied = false;
}

/* By the names of configs.csv; false for an unknown name. */
static bool mem_shape(pp_model *m, const char *name)
{
    if (strcmp(name, "gpt-2.7b") == 0) mem_gpt(m, name, 32, 2560, 32);
    else if (strcmp(name, "gpt-6.7b") == 0) mem_gpt(m, name, 32, 4096, 32);
    else if (strcmp(name, "llama-3b") == 0) mem_llama3b(m);
    else return false;
    return true;
}

/* The lent H200: nvidia-smi reports 143771 MiB (tests/data/megatron logs, gpus.csv), the
 * figure models.d/gpus/h200.yaml carries. */
static void mem_h200(pp_gpu *g)
{
    pp_gpu_init(g);
    snprintf(g->name, sizeof g->name, "h200");
    g->memory_bytes = 143771.0 * 1024 * 1024;
    g->peak_flops[PP_DT_BF16] = 989.4e12;
    g->mem_bw_gbs = 4800;
    g->nvlink_gbs = 450;
    g->pcie_gbs = 63;
    g->gpus_per_node = 8;
    g->internode_gbs = 50;
    g->gemm_eff = 0.8;
}

#endif
