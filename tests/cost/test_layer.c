/* The layer description (planner/cost/layer.c) against hand-computed shapes: the GEMMs, the
 * attention core and the collectives of a GPT (GPT-3 175B), a Llama with GQA (Llama-3-70B, KV
 * heads replicated past tp = 8), an MoE with shared experts and a dense first layer (moe-64fg of
 * the Megatron runs) and an MLA model (DeepSeek-V2-Lite); the saved tensors against Korthikanti
 * et al. 2022 table 2, a per-token count written out here, and memory.c's activation table; the
 * MoE token count with and without imbalance at ep 1 and ep > 1; the GEMM list a caller reads;
 * the MTP layer; torchtitan's block (the titan variant) against the measured FSDP figure;
 * the backward's working sets (one record per operation) by hand;
 * and for every catalog model (models.d, tests/data/megatron/models, tests/data/fsdp/models) the
 * per-rank parameters of each layer kind summed over the ranks that split them = model.c's
 * counts, and the search's one-pass sums = the description's rows. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_layer.h"
#include "pp_load.h"
#include "pp_memory.h"
#include "tap.h"

static bool load(pp_model *m, const char *dir_env, const char *sub, const char *name)
{
    const char *root = getenv(dir_env);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s.yaml", root ? root : ".", sub, name);
    pp_error err = {0};
    if (pp_model_load_file(m, path, &err) != PP_OK) {
        tap_diag("%s: %s", path, err.msg);
        return false;
    }
    return true;
}

static void work_init(pp_work *w, pp_framework fw, pp_attention attn)
{
    memset(w, 0, sizeof *w);
    pp_gpu_init(&w->gpu);
    w->gpus = 64;
    w->gpus_per_node = 8;
    w->gbs = 64;
    w->framework = fw;
    w->attention = attn;
    pp_stack_init(&w->stack);
}

static pp_layout layout_of(int64_t tp, int64_t dp, int64_t ep, int64_t etp, bool sp)
{
    pp_layout l;
    pp_layout_init(&l);
    l.tp = tp, l.dp = dp, l.ep = ep, l.etp = etp, l.sp = sp;
    return l;
}

static const pp_layer_gemm *gemm(const pp_layer *ly, const char *name)
{
    for (int i = 0; i < ly->n_gemm; i++)
        if (!strcmp(ly->gemm[i].name, name)) return &ly->gemm[i];
    return NULL;
}

static const pp_layer_saved *saved(const pp_layer *ly, const char *name)
{
    for (int i = 0; i < ly->n_saved; i++)
        if (!strcmp(ly->saved[i].name, name)) return &ly->saved[i];
    return NULL;
}

static const pp_layer_param *param(const pp_layer *ly, const char *name)
{
    for (int i = 0; i < ly->n_param; i++)
        if (!strcmp(ly->param[i].name, name)) return &ly->param[i];
    return NULL;
}

/* A GEMM with exactly this shape. */
static void check_gemm(const pp_layer *ly, const char *what, const char *name, double m, double n,
                       double k, double count)
{
    const pp_layer_gemm *g = gemm(ly, name);
    tap_ok(g && g->m == m && g->n == n && g->k == k && g->count == count,
           "%s: %s is (%g x %g)(%g x %g) x %g (got %g, %g, %g, %g)", what, name, m, k, k, n, count,
           g ? g->m : -1, g ? g->n : -1, g ? g->k : -1, g ? g->count : -1);
}

/* The description's saved bytes and memory.c's table agree for recompute mode rc. */
static void check_table(const pp_work *w, const pp_layout *l, int kind, const pp_layer *ly,
                        pp_recompute rc, const char *what)
{
    pp_act_table tb;
    pp_memory_layer_table_kind(w, l, kind, rc, &tb);
    double paper, bytes = pp_layer_saved_bytes(ly, rc, ly->saved_sel_mods, &paper);
    tap_ok(tb.bytes == bytes && tb.paper_bytes == paper,
           "%s, %s: memory.c's table %.0f bytes (paper %.0f) = the description's %.0f (%.0f)", what,
           pp_recompute_names[rc], tb.bytes, tb.paper_bytes, bytes, paper);
}

/* ------------------------------------------------------------------ GPT */

static void gpt(void)
{
    pp_work w;
    work_init(&w, PP_FW_MEGATRON, PP_ATTN_UNFUSED);
    if (!tap_ok(load(&w.model, "PARPLAN_SOURCE_DIR", "models.d/models", "gpt3-175b"), "gpt3-175b loads")) return;
    const double h = 12288, a = 96, s = 2048, t = 8, sbh = s * h; /* one sequence */
    pp_layout l = layout_of(8, 8, 1, 0, true);
    pp_layer ly;
    pp_layer_build(&w, &l, 0, &ly);
    const char *what = "GPT-3 175B, tp 8, SP";
    check_gemm(&ly, what, "qkv", s, 3 * h / t, h, 1);
    check_gemm(&ly, what, "proj", s, h, h / t, 1);
    check_gemm(&ly, what, "fc1", s, 4 * h / t, h, 1);
    check_gemm(&ly, what, "fc2", s, h, 4 * h / t, 1);
    tap_ok(ly.n_gemm == 4, "%s: four GEMMs (%d)", what, ly.n_gemm);
    tap_ok(ly.attn.batch_heads == a / t && ly.attn.queries == s && ly.attn.keys == s &&
               ly.attn.keys_avg == s / 2 && ly.attn.qk_dim == 128 && ly.attn.v_dim == 128 && !ly.attn.fused,
           "%s: attention core of 12 heads, 2048 queries, 1024 keys on average (causal), unfused", what);
    /* SP: 4 forward (all-gather before QKV and fc1, reduce-scatter after proj and fc2) and 6
     * backward, each of one activation of the sequence shard, 2 s h bytes. */
    int fwd = 0, bwd = 0;
    bool bytes_ok = true;
    for (int i = 0; i < ly.n_coll; i++) {
        if (ly.coll[i].group != PP_LG_TP) continue;
        if (ly.coll[i].bwd) bwd++;
        else fwd++;
        bytes_ok = bytes_ok && ly.coll[i].bytes == 2 * sbh && ly.coll[i].ranks == 8;
    }
    tap_ok(fwd == 4 && bwd == 6 && bytes_ok, "%s: TP collectives 4 forward, 6 backward, 2sbh bytes over 8 ranks (%d, %d)",
           what, fwd, bwd);
    /* Korthikanti et al. 2022 table 2 (per layer): SP + TP sbh/t (34 + 5as/h); selective 34 sbh/t;
     * full 2 sbh/t (the input, split by SP). */
    double paper;
    pp_layer_saved_bytes(&ly, PP_RC_NONE, 0, &paper);
    tap_near(paper, sbh / t * (34 + 5 * a * s / h), 1e-12, "%s: saved (paper) = sbh/t (34 + 5as/h)", what);
    pp_layer_saved_bytes(&ly, PP_RC_SELECTIVE, 1u << PP_RCM_CORE_ATTN, &paper);
    tap_near(paper, 34 * sbh / t, 1e-12, "%s: selective (core_attn) = 34 sbh/t", what);
    tap_near(pp_layer_saved_bytes(&ly, PP_RC_FULL, 0, NULL), 2 * sbh / t, 1e-12, "%s: full = 2 sbh/t", what);
    for (int rc = 0; rc < PP_RC_COUNT; rc++) check_table(&w, &l, 0, &ly, (pp_recompute)rc, what);
    /* Per rank: QKV column-parallel with its bias, proj row-parallel with a replicated bias. */
    const pp_layer_param *qkv = param(&ly, "qkv.weight"), *pb = param(&ly, "proj.bias");
    tap_ok(qkv && qkv->elems == h * 3 * h / t && qkv->split == PP_SPLIT_HEADS && pb && pb->elems == h &&
               pb->split == PP_SPLIT_REPLICATED,
           "%s: qkv.weight h x 3h/t per rank, proj.bias h (replicated)", what);
}

/* ------------------------------------------------------------------ Llama with GQA */

static void llama_gqa(void)
{
    pp_work w;
    work_init(&w, PP_FW_MEGATRON, PP_ATTN_FLASH);
    if (!tap_ok(load(&w.model, "PARPLAN_SOURCE_DIR", "models.d/models", "llama3-70b"), "llama3-70b loads")) return;
    const double h = 8192, d = 128, f = 28672, s = 8192;
    pp_layer ly;
    pp_layout l = layout_of(8, 8, 1, 0, false);
    pp_layer_build(&w, &l, 0, &ly);
    const char *what = "Llama-3-70B, tp 8";
    tap_ok(ly.heads == 8 && ly.kv_heads == 1, "%s: 8 query heads and 1 KV head per rank", what);
    check_gemm(&ly, what, "qkv", s, (8 + 2) * d, h, 1);
    check_gemm(&ly, what, "proj", s, h, 8 * d, 1);
    check_gemm(&ly, what, "fc1", s, 2 * f / 8, h, 1);
    check_gemm(&ly, what, "fc2", s, h, f / 8, 1);
    /* TE, flash, no dropout, no SP, per token: the four h-wide inputs (ln1, qkv, ln2, fc1) 2h
     * each, two rstd 4, q 2 x 8d, k and v 2d each, the fp32 lse of 8 heads, proj's input 2 x 8d,
     * fused SwiGLU's input (2f/t wide) and fc2's input (f/t). */
    double per_token = 4 * 2 * h + 2 * 4 + 2 * 8 * d + 2 * 2 * d + 4 * 8 + 2 * 8 * d + 2 * 2 * f / 8 + 2 * f / 8;
    tap_near(pp_layer_saved_bytes(&ly, PP_RC_NONE, 0, NULL), per_token * s, 1e-12,
             "%s: saved %.0f bytes per token", what, per_token);
    for (int rc = 0; rc < PP_RC_COUNT; rc++) check_table(&w, &l, 0, &ly, (pp_recompute)rc, what);
    /* tp 16 > 8 KV heads: Megatron replicates them, one per rank. */
    l = layout_of(16, 4, 1, 0, true);
    pp_layer_build(&w, &l, 0, &ly);
    what = "Llama-3-70B, tp 16";
    tap_ok(ly.heads == 4 && ly.kv_heads == 1, "%s: 4 query heads and a replicated KV head per rank", what);
    check_gemm(&ly, what, "qkv", s, (4 + 2) * d, h, 1);
    const pp_layer_param *qkv = param(&ly, "qkv.weight");
    tap_ok(qkv && qkv->elems == h * (4 + 2) * d, "%s: qkv.weight h x 6d per rank (%g)", what, qkv ? qkv->elems : -1);
    const pp_layer_saved *k = saved(&ly, "attn.k");
    tap_ok(k && k->elems == s * d, "%s: flash saves k at one KV head (%g)", what, k ? k->elems : -1);
}

/* ------------------------------------------------------------------ MoE: tokens, shared experts, dense first layer */

static void moe(void)
{
    pp_work w;
    work_init(&w, PP_FW_MEGATRON, PP_ATTN_FLASH);
    if (!tap_ok(load(&w.model, "PARPLAN_DATA_DIR", "megatron/models", "moe-64fg"), "moe-64fg loads")) return;
    const double h = 2048, T = 4096, K = 6, E = 64, fe = 1408, fs = 2816, f = 10944;
    pp_layer ly;
    /* tp 2 (SP), expert TP 1: a rank routes its T/2 tokens and its experts get T K / 2 copies. */
    for (int ep = 1; ep <= 4; ep *= 4) {
        for (int c = 0; c < 3; c++) {
            w.stack.moe_imbalance = c == 0 ? 1.0 : 1.5;
            w.stack.moe_capacity_factor = c == 2 ? 1.25 : 0.0;
            pp_layout l = layout_of(2, 4, ep, 1, true);
            pp_layer_build(&w, &l, PP_LAYER_MOE, &ly);
            double mean = T * K / 2, want = mean * (c == 2 ? 1.25 : ep > 1 && c == 1 ? 1.5 : 1.0);
            const pp_layer_gemm *g = gemm(&ly, "expert.fc1");
            const pp_layer_saved *in = saved(&ly, "moe.expert_input");
            tap_ok(ly.expert_tokens == want && ly.expert_tokens_mean == mean && g && g->m * g->count == want &&
                       g->count == E / ep && in && in->elems == want * h &&
                       pp_layer_expert_tokens(&w, &l, T, NULL) == want,
                   "moe-64fg ep %d, imbalance %g%s: the experts receive %.0f token copies (%s), the GEMMs "
                   "and the saved input alike",
                   ep, w.stack.moe_imbalance, c == 2 ? ", capacity 1.25" : "", want,
                   c == 1 ? (ep > 1 ? "the busiest rank's" : "imbalance ignored: every expert on the rank") : "the mean");
            if (ep > 1) {
                const pp_layer_coll *a2a = NULL;
                for (int i = 0; i < ly.n_coll; i++)
                    if (ly.coll[i].group == PP_LG_EP && !ly.coll[i].bwd) a2a = &ly.coll[i];
                tap_ok(a2a && a2a->bytes == want * h * 2 && a2a->count == 2 && a2a->ranks == 4,
                       "moe-64fg ep 4: dispatch and combine all-to-alls of the received copies (%g bytes)",
                       a2a ? a2a->bytes : -1);
            }
        }
    }
    w.stack.moe_imbalance = 1.0;
    w.stack.moe_capacity_factor = 0;
    pp_layout l = layout_of(2, 4, 4, 2, true);
    pp_layer_build(&w, &l, PP_LAYER_MOE, &ly);
    const char *what = "moe-64fg, tp 2, ep 4, etp 2";
    double Tr = T * K; /* T K etp / tp */
    check_gemm(&ly, what, "router", T / 2, E, h, 1);
    check_gemm(&ly, what, "expert.fc1", Tr / 16, 2 * fe / 2, h, 16);
    check_gemm(&ly, what, "expert.fc2", Tr / 16, h, fe / 2, 16);
    check_gemm(&ly, what, "shared.fc1", T, 2 * fs / 2, h, 1);
    check_gemm(&ly, what, "shared.fc2", T, h, fs / 2, 1);
    tap_ok(!gemm(&ly, "router")->fp8 && gemm(&ly, "shared.fc1")->fp8 &&
               gemm(&ly, "shared.fc1")->mods == ((1u << PP_RCM_MOE) | (1u << PP_RCM_SHARED_EXPERTS)),
           "%s: the router is not FP8-eligible; the shared experts are, recomputed by moe and shared_experts", what);
    const pp_layer_param *ex = param(&ly, "expert.fc1");
    tap_ok(ex && ex->elems == 16 * 2 * h * fe / 2 && ex->expert_dp && ex->global == E * 2 * h * fe,
           "%s: 16 local experts' fc1 at half width, reduced over the expert data-parallel group", what);
    for (int rc = 0; rc < PP_RC_COUNT; rc++) check_table(&w, &l, PP_LAYER_MOE, &ly, (pp_recompute)rc, what);
    /* Selective recompute of moe_act keeps the experts' fc1 output only; of shared_experts drops
     * the shared experts' tensors. */
    l.recompute_modules = 1u << PP_RCM_MOE_ACT;
    pp_layer_build(&w, &l, PP_LAYER_MOE, &ly);
    check_table(&w, &l, PP_LAYER_MOE, &ly, PP_RC_SELECTIVE, "moe-64fg, selective moe_act");
    double none = pp_layer_saved_bytes(&ly, PP_RC_NONE, 0, NULL);
    double sel = pp_layer_saved_bytes(&ly, PP_RC_SELECTIVE, ly.saved_sel_mods, NULL);
    tap_near(none - sel, Tr * (fe / 2) * 2, 1e-12, "moe-64fg, selective moe_act: drops fc2's input (TE: %g bytes)", none - sel);
    /* The dense first layer. */
    l = layout_of(2, 4, 4, 2, true);
    pp_layer_build(&w, &l, 0, &ly);
    check_gemm(&ly, "moe-64fg dense layer", "fc1", T, 2 * f / 2, h, 1);
    check_gemm(&ly, "moe-64fg dense layer", "fc2", T, h, f / 2, 1);
    tap_ok(!gemm(&ly, "router") && ly.expert_tokens == 0, "moe-64fg dense layer: no router, no experts");
}

/* ------------------------------------------------------------------ MLA */

static void mla(void)
{
    pp_work w;
    work_init(&w, PP_FW_MEGATRON, PP_ATTN_FLASH);
    if (!tap_ok(load(&w.model, "PARPLAN_SOURCE_DIR", "models.d/models", "deepseek-v2-lite"), "deepseek-v2-lite loads"))
        return;
    const double h = 2048, T = 4096, kvl = 512, nope = 128, rope = 64, vd = 128;
    pp_layout l = layout_of(2, 4, 1, 0, true);
    pp_layer ly;
    pp_layer_build(&w, &l, PP_LAYER_MOE, &ly);
    const char *what = "DeepSeek-V2-Lite, tp 2";
    check_gemm(&ly, what, "q_proj", T, 8 * (nope + rope), h, 1);
    check_gemm(&ly, what, "kv_down", T, kvl + rope, h, 1);
    check_gemm(&ly, what, "kv_up", T, 8 * (nope + vd), kvl, 1);
    check_gemm(&ly, what, "proj", T, h, 8 * vd, 1);
    tap_ok(gemm(&ly, "kv_up")->mods == 1u << PP_RCM_MLA_UP_PROJ && gemm(&ly, "kv_down")->mods == 0,
           "%s: mla_up_proj recomputes kv_up, not the down-projection", what);
    tap_ok(ly.attn.qk_dim == nope + rope && ly.attn.v_dim == vd && ly.attn.batch_heads == 8,
           "%s: attention over 8 heads, q/k %g wide, v %g", what, nope + rope, vd);
    /* Down-projections replicated over TP: the same on every rank at any tp. */
    const pp_layer_param *kd = param(&ly, "kv_down");
    tap_ok(kd && kd->elems == h * (kvl + rope) && kd->split == PP_SPLIT_REPLICATED,
           "%s: kv_down h x (kv_lora + rope) on every rank", what);
    for (int i = 0; i < ly.n_ew; i++)
        if (ly.ew[i].cls == PP_EW_ROPE)
            tap_ok(ly.ew[i].elems == T * 8 * rope * 2, "%s: RoPE on the rope part of q and k per head", what);
    for (int rc = 0; rc < PP_RC_COUNT; rc++) check_table(&w, &l, PP_LAYER_MOE, &ly, (pp_recompute)rc, what);
    /* The GEMM list a caller (the probes) reads: the same shapes, truncated at max. */
    pp_layer_gemm g[PP_LAYER_MAX_GEMMS];
    int n = pp_layer_gemm_shapes(&w, &l, PP_LAYER_MOE, g, PP_LAYER_MAX_GEMMS);
    bool same = n == ly.n_gemm;
    for (int i = 0; same && i < n; i++)
        same = g[i].m == ly.gemm[i].m && g[i].n == ly.gemm[i].n && g[i].k == ly.gemm[i].k && g[i].count == ly.gemm[i].count;
    pp_layer_gemm two[2];
    tap_ok(same && pp_layer_gemm_shapes(&w, &l, PP_LAYER_MOE, two, 2) == n && !strcmp(two[1].name, ly.gemm[1].name),
           "%s: pp_layer_gemm_shapes gives the description's %d GEMMs (and their count when it writes 2)", what, n);
}

/* ------------------------------------------------------------------ MTP */

static void mtp(void)
{
    pp_work w;
    work_init(&w, PP_FW_MEGATRON, PP_ATTN_FLASH);
    if (!tap_ok(load(&w.model, "PARPLAN_SOURCE_DIR", "models.d/models", "deepseek-v3"), "deepseek-v3 loads")) return;
    pp_layout l = layout_of(8, 8, 8, 1, true);
    pp_layer layer, m;
    pp_layer_build(&w, &l, PP_LAYER_MOE, &layer);
    pp_layer_build(&w, &l, PP_LAYER_MOE | PP_LAYER_MTP, &m);
    double h = 7168, T = 4096;
    tap_ok(m.mtp && gemm(&m, "mtp.eh_proj") && m.n_gemm == layer.n_gemm + 1,
           "DeepSeek-V3 MTP layer: its MoE layer's GEMMs and the 2h -> h projection");
    tap_near(pp_layer_saved_bytes(&m, PP_RC_NONE, 0, NULL) - pp_layer_saved_bytes(&layer, PP_RC_NONE, 0, NULL),
             layer.mtp_saved_bytes, 1e-12, "DeepSeek-V3 MTP layer: saves its layer's tensors and %.0f bytes more", layer.mtp_saved_bytes);
    tap_near(layer.mtp_saved_bytes, 8 * T * h / 8, 1e-12, "DeepSeek-V3 MTP extras: two h-wide norms and the 2h projection input (SP)");
    tap_near(m.params_mtp, 3 * h + 2 * h * h / 8, 1e-12, "DeepSeek-V3 MTP parameters: 3 norms and 2h x h / tp");
}

/* ------------------------------------------------------------------ the titan variant */

static void titan(void)
{
    pp_work w;
    work_init(&w, PP_FW_FSDP, PP_ATTN_FLASH);
    if (!tap_ok(load(&w.model, "PARPLAN_DATA_DIR", "fsdp/models", "llama-3.2-3b"), "llama-3.2-3b loads")) return;
    const double h = 3072, f = 8192, a = 24, d = 128, s = 8192;
    w.model.seq = (int64_t)s;
    pp_layout l = layout_of(1, 1, 1, 0, false);
    pp_layer ly;
    pp_layer_build(&w, &l, 0, &ly);
    const char *what = "Llama-3.2-3B under FSDP (torchtitan)";
    check_gemm(&ly, what, "wq", s, a * d, h, 1);
    check_gemm(&ly, what, "wk", s, 8 * d, h, 1);
    check_gemm(&ly, what, "wv", s, 8 * d, h, 1);
    check_gemm(&ly, what, "wo", s, h, a * d, 1);
    check_gemm(&ly, what, "w1", s, f, h, 1);
    check_gemm(&ly, what, "w3", s, f, h, 1);
    check_gemm(&ly, what, "w2", s, h, f, 1);
    /* torchtitan's op-level selective AC keeps every other aten.mm's output: wq, wv, w1, w2. */
    tap_ok(gemm(&ly, "wq")->sac_saved && !gemm(&ly, "wk")->sac_saved && gemm(&ly, "wv")->sac_saved &&
               !gemm(&ly, "wo")->sac_saved && gemm(&ly, "w1")->sac_saved && !gemm(&ly, "w3")->sac_saved &&
               gemm(&ly, "w2")->sac_saved,
           "%s: selective AC keeps wq, wv, w1 and w2", what);
    /* torchtitan v0.2.2 (enable_gqa): K and V saved at their own 8 heads, 12h + 4kv + 8f + 4a + 8 bytes
     * per token (tests/data/fsdp/runs_gqa.csv: 2 x (h - kv) x 2 bytes a token and layer less than
     * repeated, measured to the MiB on Llama-3-8B's shape); no repeat_kv copy kernel. */
    const double kv = 8 * d;
    tap_near(pp_layer_saved_bytes(&ly, PP_RC_NONE, 0, NULL), s * (12 * h + 4 * kv + 8 * f + 4 * a + 8), 1e-12,
             "%s, enable_gqa: saves 12h + 4kv + 8f + 4a + 8 bytes per token", what);
    bool copy = false;
    for (int i = 0; i < ly.n_ew; i++) copy |= !strcmp(ly.ew[i].name, "repeat_kv");
    tap_ok(!copy, "%s, enable_gqa: no repeat_kv copy kernel", what);
    /* --repeat-kv (torchtitan to v0.2.1; the measured no-AC figure of tests/data/fsdp/runs.csv,
     * l3b_s8k_b1_none): 16h + 8f + 4a + 8 bytes per token, and the copy kernel. */
    w.stack.repeat_kv = true;
    pp_layer_build(&w, &l, 0, &ly);
    tap_near(pp_layer_saved_bytes(&ly, PP_RC_NONE, 0, NULL), s * (16 * h + 8 * f + 4 * a + 8), 1e-12,
             "%s, --repeat-kv: saves 16h + 8f + 4a + 8 bytes per token", what);
    copy = false;
    for (int i = 0; i < ly.n_ew; i++) copy |= !strcmp(ly.ew[i].name, "repeat_kv");
    tap_ok(copy, "%s, --repeat-kv: the repeat_kv copy kernel", what);
    tap_near(pp_layer_saved_bytes(&ly, PP_RC_FULL, 0, NULL), s * 2 * h, 1e-12, "%s: full AC keeps the block input", what);
}

/* torchao float8 in torchtitan's compiled block: what it keeps without AC, per token, against the
 * reading of the same block on two H200s (tools/fsdp/saved_tensors.py, tests/data/fsdp/float8/
 * saved.jsonl: Llama-3-8B's block, 1024 tokens, torch 2.11, torchao 0.18; rowwise under TP also
 * keeps its weight scales and amaxes, 96 bytes a token there, not priced). */
static void titan_float8(void)
{
    pp_work w;
    work_init(&w, PP_FW_FSDP, PP_ATTN_FLASH);
    if (!tap_ok(load(&w.model, "PARPLAN_SOURCE_DIR", "models.d/models", "llama3-8b"), "llama3-8b loads")) return;
    const double T = 1024;
    w.model.seq = (int64_t)T;
    w.stack.compile = true;
    static const struct {
        const char *what;
        pp_precision prec;
        pp_fp8_scaling scaling;
        int64_t tp;
        double read; /* bytes a token, saved.jsonl */
    } rows[] = {
        {"bf16, FSDP over 2", PP_PREC_BF16, PP_FP8_TENSORWISE, 1, 139400.0},
        {"float8 tensorwise, FSDP over 2 (float8 all-gather)", PP_PREC_FP8, PP_FP8_TENSORWISE, 1, 266376.0},
        {"float8 rowwise, FSDP over 2", PP_PREC_FP8, PP_FP8_ROWWISE, 1, 94344.0},
        {"bf16, TP 2", PP_PREC_BF16, PP_FP8_TENSORWISE, 2, 77892.0},
        {"float8 tensorwise, TP 2 (torchao's float8 TP styles)", PP_PREC_FP8, PP_FP8_TENSORWISE, 2, 171076.1},
        {"float8 rowwise, TP 2", PP_PREC_FP8, PP_FP8_ROWWISE, 2, 92324.0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        w.stack.precision = rows[i].prec;
        w.stack.fp8_scaling = rows[i].scaling;
        pp_layout l = layout_of(rows[i].tp, 2 / rows[i].tp, 1, 0, false);
        l.zero = 3;
        pp_layer ly;
        pp_layer_build(&w, &l, 0, &ly);
        double got = pp_layer_saved_bytes(&ly, PP_RC_NONE, 0, NULL) / T;
        tap_near(got, rows[i].read, 0.002, "Llama-3-8B block compiled, %s: keeps %.0f bytes a token (read %.0f)",
                 rows[i].what, got, rows[i].read);
    }
}

/* ------------------------------------------------------------------ parameters: the catalog */

/* Ranks that hold distinct parts of a row split this way (tp ranks; experts over ep x etp). */
static double split_ranks(pp_tensor_split sp, double tp, double ep, double etp)
{
    switch (sp) {
    case PP_SPLIT_COLUMN:
    case PP_SPLIT_ROW:
    case PP_SPLIT_HEADS:
    case PP_SPLIT_VOCAB: return tp;
    case PP_SPLIT_EXPERT_TP: return ep * etp;
    case PP_SPLIT_EXPERT: return ep;
    default: return 1;
    }
}

static int64_t pow2_divisor(int64_t max, const int64_t *v, int n)
{
    int64_t d = max;
    for (; d > 1; d /= 2) {
        bool ok = true;
        for (int i = 0; i < n; i++) ok = ok && (v[i] == 0 || v[i] % d == 0);
        if (ok) break;
    }
    return d;
}

/* Every layer kind of one model at a tp (and ep, etp) that splits it evenly: the description's
 * per-rank rows summed over the ranks that split them = model.c's per-layer counts. */
static void params_model(const char *file)
{
    pp_work w;
    work_init(&w, PP_FW_DEEPSPEED, PP_ATTN_FLASH); /* no vocabulary padding */
    pp_error err = {0};
    if (!tap_ok(pp_model_load_file(&w.model, file, &err) == PP_OK, "%s loads (%s)", file, err.msg)) return;
    const pp_model *m = &w.model;
    int64_t dims[] = {m->heads, m->kv_heads, m->ffn, m->shared_ffn, pp_model_expert_ffn(m), m->hidden};
    int64_t tp = pow2_divisor(8, dims, 6), ep = m->experts > 1 ? pow2_divisor(8, &m->experts, 1) : 1;
    pp_layout l = layout_of(tp, ep, ep, tp, tp > 1);
    pp_param_count pc;
    pp_model_params(m, &pc);
    int64_t cnt[PP_LAYER_KINDS];
    pp_model_layer_counts(m, 0, m->layers, cnt);
    pp_layer_rank_params rp;
    pp_layer_rank_params_get(&w, &l, false, &rp);
    double E = m->experts > 1 ? (double)m->experts : 0;
    for (int k = 0; k <= PP_LAYER_MOE; k++) {
        if (!cnt[k] && !cnt[k | PP_LAYER_WINDOW]) continue; /* a window changes no parameter */
        int kinds[2] = {k, k | PP_LAYER_MTP};
        for (int j = 0; j < (m->mtp_layers > 0 && k == pp_model_mtp_kind(m) ? 2 : 1); j++) {
            pp_layer ly;
            pp_layer_build(&w, &l, kinds[j], &ly);
            double sum = 0, rows = 0;
            for (int i = 0; i < ly.n_param; i++) {
                sum += ly.param[i].elems * split_ranks(ly.param[i].split, (double)tp, (double)ep, (double)tp);
                rows += ly.param[i].elems;
            }
            bool moe = k & PP_LAYER_MOE;
            double want = (double)pc.attention + (moe ? (double)pc.moe_shared + E * (double)pc.expert : (double)pc.dense_mlp) +
                          (j ? (double)pc.mtp_extra : 0.0);
            double fast = rp.scope[PP_TS_LAYER] + rp.scope[moe ? PP_TS_MOE : PP_TS_DENSE] +
                          (moe ? rp.scope[PP_TS_EXPERT] : 0.0) + (j ? rp.scope[PP_TS_MTP] : 0.0);
            tap_ok(fabs(sum - want) <= 1e-9 * want && fabs(rows - fast) <= 1e-9 * fast &&
                       fabs(rows - ly.params_attn - ly.params_mlp - ly.params_expert - ly.params_mtp) <= 1e-9 * rows,
                   "%s %s%s, tp %lld ep %lld etp %lld: per-rank rows %.0f x ranks = model.c's %.0f; the one-pass "
                   "sums %.0f", m->name, pp_layer_kind_names[k], j ? " MTP" : "", (long long)tp, (long long)ep,
                   (long long)tp, sum, want, fast);
        }
    }
    /* Outside the layers: the embedding and the output layer, vocabulary-parallel. */
    double emb = rp.scope[PP_TS_EMBED] - (m->pos == PP_POS_LEARNED ? (double)m->seq * (double)m->hidden : 0.0);
    double out = rp.scope[PP_TS_OUTPUT];
    double pos = m->pos == PP_POS_LEARNED ? (double)m->seq * (double)m->hidden : 0.0;
    tap_ok(fabs(emb * (double)tp + pos - (double)pc.embedding) <= 1e-9 * (double)pc.embedding &&
               fabs(out * (double)tp - (double)pc.output) <= 1e-9 * ((double)pc.output + 1) &&
               rp.scope[PP_TS_FINAL] == (double)pc.final_norm,
           "%s, tp %lld: embedding, output layer and final norm per rank x ranks = model.c's", m->name, (long long)tp);
}

static int yaml_names(const char *dir, char names[][4400], int max)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t len = strlen(e->d_name);
        if (len > 5 && !strcmp(e->d_name + len - 5, ".yaml")) snprintf(names[n++], 4400, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    return n;
}

static void params_catalog(void)
{
    const char *src = getenv("PARPLAN_SOURCE_DIR"), *data = getenv("PARPLAN_DATA_DIR");
    char dir[3][1024];
    snprintf(dir[0], sizeof dir[0], "%s/models.d/models", src ? src : ".");
    snprintf(dir[1], sizeof dir[1], "%s/megatron/models", data ? data : "tests/data");
    snprintf(dir[2], sizeof dir[2], "%s/fsdp/models", data ? data : "tests/data");
    static char names[128][4400];
    int total = 0;
    for (int i = 0; i < 3; i++) {
        int n = yaml_names(dir[i], names, 128);
        for (int j = 0; j < n; j++) params_model(names[j]);
        total += n;
    }
    tap_ok(total >= 52, "%d catalog models checked (45 + 6 + 1 when written)", total);
    /* Megatron pads the vocabulary to a multiple of 128 x tp. */
    pp_work w;
    work_init(&w, PP_FW_MEGATRON, PP_ATTN_FLASH);
    if (!load(&w.model, "PARPLAN_SOURCE_DIR", "models.d/models", "gpt3-175b")) return;
    pp_layout l = layout_of(8, 1, 1, 0, false);
    pp_layer_rank_params rp;
    pp_layer_rank_params_get(&w, &l, false, &rp);
    tap_near(rp.word, 51200.0 / 8 * 12288, 1e-12, "gpt3-175b, Megatron tp 8: word embedding of 51200 (padded 50257) / 8 rows");
}

/* The backward's working sets (layer.c build_transients), per record by hand: FlashAttention's
 * (dO, dQ, dK, dV at the query heads in 16 bits, the fp32 dQ accumulator and softmax_d), the
 * unfused softmax backward's (4 or, with dropout, 2 bytes per score), the MLP's and the experts'
 * (the incoming h-wide gradient, 6 bytes per gated element); the largest is what both memory
 * models add (bwd_work_bytes). */
static const pp_layer_transient *transient(const pp_layer *ly, const char *name)
{
    for (int i = 0; i < ly->n_transient; i++)
        if (!strcmp(ly->transient[i].name, name)) return &ly->transient[i];
    return NULL;
}

static void transients(void)
{
    pp_work w;
    work_init(&w, PP_FW_MEGATRON, PP_ATTN_FLASH);
    if (!tap_ok(load(&w.model, "PARPLAN_SOURCE_DIR", "models.d/models", "llama3-70b"), "llama3-70b loads")) return;
    const double h = 8192, d = 128, f = 28672, T = 8192;
    pp_layout l = layout_of(8, 8, 1, 0, true);
    pp_layer ly;
    pp_layer_build(&w, &l, 0, &ly);
    const pp_layer_transient *a = transient(&ly, "attn.core.backward"), *m = transient(&ly, "mlp.backward");
    double want_a = T * 8 * (12 * d + 4), want_m = 2 * T * h + 6 * T * f / 8;
    tap_ok(a && a->bytes == want_a && ly.attn_work_bytes == want_a,
           "Llama-3-70B tp 8: flash backward %.0f bytes (want %.0f)", a ? a->bytes : -1, want_a);
    tap_ok(m && m->bytes == want_m, "Llama-3-70B tp 8: MLP backward %.0f bytes (want %.0f)", m ? m->bytes : -1, want_m);
    tap_ok(ly.bwd_work_bytes == (want_a > want_m ? want_a : want_m), "Llama-3-70B tp 8: the larger is the layer's");
    /* Unfused, no dropout (Llama): the gradients of the probabilities and of the scores. */
    w.attention = PP_ATTN_UNFUSED;
    pp_layer_build(&w, &l, 0, &ly);
    a = transient(&ly, "attn.core.backward");
    double scores = 8 * T * T;
    tap_ok(a && a->bytes == 4 * scores && ly.bwd_work_bytes == 4 * scores,
           "Llama-3-70B tp 8 unfused: softmax backward 4 bytes per score, the largest");
    work_init(&w, PP_FW_MEGATRON, PP_ATTN_FLASH);
    if (!tap_ok(load(&w.model, "PARPLAN_DATA_DIR", "megatron/models", "moe-64fg"), "moe-64fg loads")) return;
    l = layout_of(2, 4, 4, 1, true);
    pp_layer_build(&w, &l, PP_LAYER_MOE, &ly);
    m = transient(&ly, "experts.backward");
    double Th = 4096, hh = 2048, Tr = ly.expert_tokens, fe = 1408;
    double want_e = 2 * Th * hh + Tr * (6 * fe + 4 * hh);
    tap_ok(m && m->bytes == want_e && !transient(&ly, "mlp.backward"),
           "moe-64fg tp 2 ep 4: experts backward %.0f bytes (want %.0f) and no dense MLP record",
           m ? m->bytes : -1, want_e);
}

int main(void)
{
    gpt();
    llama_gqa();
    moe();
    mla();
    mtp();
    titan();
    titan_float8();
    transients();
    params_catalog();
    return tap_done();
}
