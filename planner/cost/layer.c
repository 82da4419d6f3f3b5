/* One transformer layer of one kind as one rank of a layout runs it for one micro-batch
 * (pp_layer.h): the one description that the memory model, the step-time model and the model
 * FLOPs read. Shapes follow Megatron-Core (megatron/core/transformer: attention.py, mlp.py,
 * multi_latent_attention.py, moe/), the titan variant torchtitan's Llama block
 * (torchtitan/models/llama3/model/model.py). What each reader makes of the description (bytes
 * per element of a kernel, a GEMM's rate, which tensors a framework keeps) stays with that
 * reader. */
#include "pp_layer.h"

#include <math.h>
#include <string.h>

#define BIT(x) (1u << (x))

static inline double max2(double a, double b) { return a > b ? a : b; }

/* ------------------------------------------------------------------ the MoE token count */

double pp_layer_expert_tokens(const pp_work *w, const pp_layout *l, double T, double *mean)
{
    /* Megatron's alltoall dispatcher (megatron/core/transformer/moe/token_dispatcher.py): the
     * router sees the rank's tokens (T / tp under sequence parallelism, which Megatron requires
     * for MoE with TP; without it the TP ranks hold the same T tokens and share their dispatch),
     * each goes to topk experts, and the expert-TP group of etp ranks gathers its tokens, so a
     * rank's experts receive T topk etp / tp copies on average. With EP > 1 a dropless router
     * gives the busiest rank `imbalance` x that; with EP = 1 every expert is on the rank and the
     * sum of its experts' tokens does not depend on how they are spread. A capacity factor pads
     * (or caps) each expert to cf x its mean share. */
    const pp_model *m = &w->model;
    double k = (double)(m->topk > 0 ? m->topk : 1);
    double avg = T * k * (double)pp_layout_etp(l) / (double)l->tp;
    double imb = l->ep > 1 && w->stack.moe_imbalance > 1.0 ? w->stack.moe_imbalance : 1.0;
    if (w->stack.moe_capacity_factor > 0) imb = w->stack.moe_capacity_factor;
    if (mean) *mean = avg;
    return avg * imb;
}

/* ------------------------------------------------------------------ the flex dispatcher's fan-out */

/* C(a, k) / C(b, k): the chance that k of b items drawn without replacement all avoid b - a of them */
static double choose_ratio(double a, double b, double k)
{
    if (a < k) return 0.0;
    double r = 1.0;
    for (double i = 0; i < k; i++) r *= (a - i) / (b - i);
    return r;
}

/* The chance that a unit holding u of the E experts (contiguous, as Megatron places a rank's local
 * experts) gets at least one of a token's k experts. Routing spread uniformly: Megatron's forced
 * balance draws random logits (router.py, moe_router_force_load_balancing), the balanced
 * state an aux loss aims at. Group-limited routing (DeepSeek-V3 sec. 2.1.2; Megatron
 * --moe-router-num-groups / --moe-router-group-topk) first picks M of the G groups of E / G
 * experts, then the k experts among those M groups. */
static double unit_hit(const pp_model *m, double E, double k, double u)
{
    double G = (double)m->router_groups, M = (double)m->router_group_topk;
    if (!(G > 1 && M > 0 && M < G)) return 1.0 - choose_ratio(E - u, E, k);
    double g = E / G, pool = M * g;
    if (u <= g && fmod(g, u) == 0) /* the unit inside one group: hit only if its group is picked */
        return M / G * (1.0 - choose_ratio(pool - u, pool, k));
    if (u > g && fmod(u, g) == 0) {
        /* the unit holds u / g groups, j of them picked (hypergeometric over the G groups) */
        double a = u / g, p = 0;
        for (double j = 1; j <= a && j <= M; j++) {
            double pj = 1;
            for (double i = 0; i < M; i++) /* C(a, j) C(G - a, M - j) / C(G, M), as a product */
                pj *= (i < j ? (a - i) / (j - i) : (G - a - (i - j)) / (M - i)) / ((G - i) / (M - i));
            p += pj * (1.0 - choose_ratio(pool - j * g, pool, k));
        }
        return p;
    }
    return 1.0 - choose_ratio(E - u, E, k); /* groups and units not nested: as ungrouped */
}

void pp_layer_dispatch_fanout(const pp_work *w, const pp_layout *l, int64_t per_node, double *ranks,
                              double *other_nodes)
{
    /* Megatron's flex dispatcher (megatron/core/transformer/moe/token_dispatcher.py,
     * MoEFlexTokenDispatcher) runs over the tp x ep ranks of the expert grid, each expert split
     * over the etp ranks of its EP position; DeepEP's layout (get_dispatch_layout:
     * num_tokens_per_rank, num_tokens_per_rdma_rank) sends a token once to every rank that holds
     * one of its experts and once to every other node holding one, where the node's receiving GPU
     * forwards it over NVLink (DeepSeek-V3 report sec. 3.2.2; DeepEP's normal kernels). */
    const pp_model *m = &w->model;
    double E = (double)m->experts, k = (double)(m->topk > 0 ? m->topk : 1);
    double ep = (double)l->ep, etp = (double)pp_layout_etp(l), n = ep * etp;
    double pn = per_node < 1 ? 1.0 : per_node > (int64_t)n ? n : (double)per_node;
    *ranks = etp * ep * unit_hit(m, E, k, E / ep);
    double nodes = n / pn;
    *other_nodes = nodes > 1 ? (nodes - 1.0) * unit_hit(m, E, k, E / nodes) : 0.0;
}

/* ------------------------------------------------------------------ parameters */

double pp_layer_vocab(const pp_work *w, const pp_layout *l)
{
    int64_t v = w->model.vocab;
    /* Megatron pads to div x tp even at div 1 (--vocab-divisible-by 1 at tp 2: a multiple of 2) */
    const int64_t div = pp_work_vocab_divisible_by(w);
    if (div > 1 || w->stack.vocab_divisible_by > 0) {
        int64_t mul = div * l->tp;
        v = (v + mul - 1) / mul * mul;
    }
    return (double)v;
}

double pp_layer_embed_tp(const pp_work *w, const pp_layout *l)
{
    /* the stack check keeps --tp-vocab to FSDP2 (common.c) */
    return w->stack.tp_vocab == PP_TPV_REPLICATED ? 1.0 : (double)l->tp;
}

bool pp_layer_loss_parallel(const pp_work *w, const pp_layout *l)
{
    return l->tp > 1 && w->stack.tp_vocab == PP_TPV_SHARDED;
}

/* KV heads on one TP rank: Megatron replicates the KV heads when tp exceeds them
 * (megatron/core/transformer/attention.py: num_query_groups_per_partition, at least 1). */
static double kv_heads_rank(const pp_model *m, int64_t tp)
{
    return m->kv_heads >= tp ? (double)m->kv_heads / (double)tp : 1.0;
}

/* What one rank holds of a row, per split: the factors of a layout, computed once. */
typedef struct {
    double tp_inv, kv_rank, vocab, vocab_embed, local_etp, local;
} rank_split;

static void rank_split_get(const pp_work *w, const pp_layout *l, rank_split *r)
{
    const pp_model *m = &w->model;
    r->tp_inv = 1.0 / (double)l->tp;
    r->kv_rank = kv_heads_rank(m, l->tp) / (double)m->kv_heads;
    r->vocab = pp_layer_vocab(w, l) / (double)m->vocab * r->tp_inv;
    r->vocab_embed = r->vocab * (double)l->tp / pp_layer_embed_tp(w, l);
    r->local = m->experts > 1 ? (double)m->experts / (double)l->ep : 1.0;
    r->local_etp = r->local / (double)pp_layout_etp(l);
}

static double rank_elems(const rank_split *r, const pp_model_tensor *t)
{
    double c = (double)t->count;
    switch (t->split) {
    case PP_SPLIT_REPLICATED: return c;
    case PP_SPLIT_COLUMN:
    case PP_SPLIT_ROW: return c * r->tp_inv;
    case PP_SPLIT_HEADS: return (c - (double)t->kv) * r->tp_inv + (double)t->kv * r->kv_rank;
    case PP_SPLIT_VOCAB: return c * (t->scope == PP_TS_EMBED ? r->vocab_embed : r->vocab);
    case PP_SPLIT_EXPERT_TP: return c * r->local_etp;
    case PP_SPLIT_EXPERT: return c * r->local;
    case PP_SPLIT_COUNT: break;
    }
    return c;
}

void pp_layer_rank_params_get(const pp_work *w, const pp_layout *l, bool rows, pp_layer_rank_params *out)
{
    const pp_model *m = &w->model;
    rank_split r;
    rank_split_get(w, l, &r);
    const double E = m->experts > 1 ? (double)m->experts : 1.0;
    /* The sums, from the table summed by (scope, split) in one pass: a HEADS row holds
     * (count - kv) / tp + kv x kv_rank = count / tp + kv (kv_rank - 1 / tp). */
    pp_model_tensor_sums sm;
    pp_model_tensor_sums_get(m, &sm);
    const double kvr = r.kv_rank, tpi = r.tp_inv;
    for (int k = 0; k < PP_TS_COUNT; k++) {
        const double *c = sm.count[k];
        double split_tp = c[PP_SPLIT_COLUMN] + c[PP_SPLIT_ROW] + c[PP_SPLIT_HEADS];
        double vocab = k == PP_TS_EMBED ? r.vocab_embed : r.vocab;
        out->scope[k] = c[PP_SPLIT_REPLICATED] + split_tp * tpi + sm.kv[k] * kvr + c[PP_SPLIT_VOCAB] * vocab +
                        c[PP_SPLIT_EXPERT_TP] * r.local_etp + c[PP_SPLIT_EXPERT] * r.local;
    }
    const double *g = sm.layer_largest;
    double hk = sm.layer_largest_kv;
    double heads = (g[PP_SPLIT_HEADS] - hk) * tpi + hk * kvr;
    double expert = g[PP_SPLIT_EXPERT_TP] * r.local_etp / r.local;
    out->layer_largest = max2(max2(g[PP_SPLIT_REPLICATED], g[PP_SPLIT_EXPERT]),
                              max2(max2(g[PP_SPLIT_COLUMN], g[PP_SPLIT_ROW]) * tpi, max2(expert, heads)));
    const double *ex = sm.count[PP_TS_EXPERT];
    out->expert_global = (ex[PP_SPLIT_EXPERT_TP] + ex[PP_SPLIT_EXPERT]) * E;
    /* Tied with pp > 1: Megatron keeps a copy of the word embedding on the last stage
     * (megatron/core/models/common/language_module); tied with pp = 1 it is shared. */
    out->word = sm.count[PP_TS_EMBED][PP_SPLIT_VOCAB] * r.vocab_embed;
    out->tied_copy = m->tied && l->pp > 1 ? out->word : 0.0;
    out->n = 0;
    if (!rows) return;
    pp_model_tensor t[PP_MODEL_MAX_TENSORS];
    out->n = pp_model_tensors(m, t);
    for (int i = 0; i < out->n; i++) {
        bool expert = t[i].scope == PP_TS_EXPERT;
        out->row[i] = (pp_layer_param){t[i].name, rank_elems(&r, &t[i]),
                                       expert ? (double)t[i].count * E : (double)t[i].count,
                                       t[i].scope, t[i].split, expert};
    }
}

/* The layer's rows of the model's parameter table on this rank (model.c is the one formula). */
static void build_params(const pp_work *w, const pp_layout *l, pp_layer *ly)
{
    pp_layer_rank_params rp;
    pp_layer_rank_params_get(w, l, true, &rp);
    ly->n_param = 0;
    ly->largest_weight = 0;
    for (int i = 0; i < rp.n && ly->n_param < PP_LAYER_MAX_PARAMS; i++) {
        const pp_layer_param *p = &rp.row[i];
        pp_tensor_scope sc = p->scope;
        bool take = sc == PP_TS_LAYER || (sc == PP_TS_DENSE && !ly->moe) ||
                    ((sc == PP_TS_MOE || sc == PP_TS_EXPERT) && ly->moe) || (sc == PP_TS_MTP && ly->mtp);
        if (!take) continue;
        ly->param[ly->n_param++] = *p;
        double one = p->expert_dp ? p->elems / ly->local_experts : p->elems; /* one expert's */
        if (sc != PP_TS_MTP && one > ly->largest_weight) ly->largest_weight = one;
    }
    ly->params_attn = rp.scope[PP_TS_LAYER];
    ly->params_mlp = ly->moe ? rp.scope[PP_TS_MOE] : rp.scope[PP_TS_DENSE];
    ly->params_expert = ly->moe ? rp.scope[PP_TS_EXPERT] : 0.0;
    ly->params_expert_global = ly->moe ? rp.expert_global : 0.0;
    ly->params_mtp = ly->mtp ? rp.scope[PP_TS_MTP] : 0.0;
}

/* ------------------------------------------------------------------ GEMMs */

static void gemm_add(pp_layer *ly, const char *name, double m, double n, double k, double count,
                     pp_layer_block block, unsigned mods, bool fp8, bool bias)
{
    if (ly->n_gemm >= PP_LAYER_MAX_GEMMS || m <= 0 || n <= 0 || k <= 0 || count <= 0) return;
    pp_layer_gemm *g = &ly->gemm[ly->n_gemm++];
    *g = (pp_layer_gemm){name, m, n, k, count, block, mods, fp8, bias, false, false, false};
}

/* Whether --lora-targets puts an adapter on the linears of block b. */
static bool lora_targets_block(const pp_work *w, pp_layer_block b)
{
    pp_lora_targets t = w->stack.lora_targets;
    switch (b) {
    case PP_LB_ATTN_IN: return t != PP_LORA_MLP;
    case PP_LB_ATTN_OUT: return t == PP_LORA_ALL || t == PP_LORA_ATTN;
    case PP_LB_MLP_IN:
    case PP_LB_MLP_OUT: return t == PP_LORA_ALL || t == PP_LORA_MLP;
    default: return false;
    }
}

/* B's output rows on this rank beside a row-parallel linear: its full output over tp. */
static double h_out_rank(const pp_layer *ly, pp_layer_gemm g) { return g.n / ly->tp; }

/* LoRA (--finetune lora): every base GEMM is frozen, and each targeted linear gets its adapter,
 * as Megatron-Bridge builds it (peft/utils.py ParallelLinearAdapter at 067f987d): beside a
 * column-parallel linear (qkv, fc1) A is a ColumnParallelLinear h -> r with its output gathered
 * (r / tp rows here) and B a ColumnParallelLinear r -> n at the base's output split; beside a
 * row-parallel linear (proj, fc2) A is a RowParallelLinear over the base's split input and B a
 * ColumnParallelLinear r -> n / tp. Megatron-Core's own linears, not TransformerEngine's: 16-bit
 * GEMMs outside the FP8 autocast. The adapters' small TP collectives (T x r) are not counted. */
static void build_lora_gemms(const pp_work *w, pp_layer *ly)
{
    const double r = pp_work_lora_rank(w), T = ly->tokens;
    int n_base = ly->n_gemm;
    for (int i = 0; i < n_base; i++) {
        pp_layer_gemm g = ly->gemm[i];
        ly->gemm[i].frozen = true;
        if (!lora_targets_block(w, g.block)) continue;
        bool column = g.block == PP_LB_ATTN_IN || g.block == PP_LB_MLP_IN;
        double a_n = column ? r / ly->tp : r, b_n = column ? g.n : h_out_rank(ly, g);
        static const char *const names[PP_LB_COUNT][2] = {
            [PP_LB_ATTN_IN] = {"qkv.lora_a", "qkv.lora_b"}, [PP_LB_ATTN_OUT] = {"proj.lora_a", "proj.lora_b"},
            [PP_LB_MLP_IN] = {"fc1.lora_a", "fc1.lora_b"}, [PP_LB_MLP_OUT] = {"fc2.lora_a", "fc2.lora_b"}};
        const char *an = names[g.block][0], *bn = names[g.block][1];
        gemm_add(ly, an, T, a_n, g.k, 1, g.block, g.mods, false, false);
        if (ly->n_gemm > n_base) ly->gemm[ly->n_gemm - 1].adapter = true;
        gemm_add(ly, bn, T, b_n, r, 1, g.block, g.mods, false, false);
        if (ly->n_gemm > n_base) ly->gemm[ly->n_gemm - 1].adapter = true;
    }
}

double pp_layer_lora_params(const pp_work *w)
{
    if (!pp_work_lora(w)) return 0.0;
    const pp_model *m = &w->model;
    double r = pp_work_lora_rank(w), h = (double)m->hidden;
    double d = (double)m->head_dim, q = (double)m->heads * d, kv = (double)m->kv_heads * d;
    double f = (double)m->ffn, gate = pp_activations[m->act].gated ? 2.0 : 1.0, p = 0;
    if (lora_targets_block(w, PP_LB_ATTN_IN)) p += r * (h + q + 2.0 * kv);
    if (lora_targets_block(w, PP_LB_ATTN_OUT)) p += r * (q + h);
    if (lora_targets_block(w, PP_LB_MLP_IN)) p += r * (h + gate * f);
    if (lora_targets_block(w, PP_LB_MLP_OUT)) p += r * (f + h);
    return p;
}

static void build_gemms(const pp_work *w, pp_layer *ly)
{
    const pp_model *m = &w->model;
    const double T = ly->tokens, h = ly->hidden;
    const bool qb = m->qkv_bias || m->bias, ob = m->out_bias || m->bias, mb = m->mlp_bias || m->bias;
    const double gate = ly->glu ? 2.0 : 1.0;
    ly->n_gemm = 0;
    if (ly->mla) {
        /* MLA (DeepSeek-V2 eq. 9-13; multi_latent_attention.py): the down-projections replicated
         * over TP (every rank computes them for its tokens), the up-projections column-parallel,
         * the output projection row-parallel. */
        double ql = (double)m->q_lora_rank, kvl = (double)m->kv_lora_rank;
        double nope = (double)m->qk_nope_dim, rope = (double)m->qk_rope_dim;
        double a = ly->heads, up = BIT(PP_RCM_MLA_UP_PROJ);
        if (ql > 0) {
            gemm_add(ly, "q_down", T, ql, h, 1, PP_LB_ATTN_IN, 0, true, false);
            gemm_add(ly, "q_up", T, a * (nope + rope), ql, 1, PP_LB_ATTN_IN, up, true, false);
        } else {
            gemm_add(ly, "q_proj", T, a * (nope + rope), h, 1, PP_LB_ATTN_IN, 0, true, false);
        }
        gemm_add(ly, "kv_down", T, kvl + rope, h, 1, PP_LB_ATTN_IN, 0, true, false);
        gemm_add(ly, "kv_up", T, a * (nope + ly->v_head_dim), kvl, 1, PP_LB_ATTN_IN, up, true, false);
        gemm_add(ly, "proj", T, h, ly->v_width, 1, PP_LB_ATTN_OUT, 0, true, ob);
    } else if (ly->titan) {
        /* torchtitan's Attention: wq, wk and wv are three nn.Linear. */
        gemm_add(ly, "wq", T, ly->q_width, h, 1, PP_LB_ATTN_IN, 0, true, qb);
        gemm_add(ly, "wk", T, ly->kv_width, h, 1, PP_LB_ATTN_IN, 0, true, qb);
        gemm_add(ly, "wv", T, ly->kv_width, h, 1, PP_LB_ATTN_IN, 0, true, qb);
        gemm_add(ly, "wo", T, h, ly->q_width, 1, PP_LB_ATTN_OUT, 0, true, ob);
    } else {
        gemm_add(ly, "qkv", T, ly->q_width + 2 * ly->kv_width, h, 1, PP_LB_ATTN_IN, 0, true, qb);
        gemm_add(ly, "proj", T, h, ly->q_width, 1, PP_LB_ATTN_OUT, 0, true, ob);
    }
    if (!ly->moe) {
        unsigned mlp = BIT(PP_RCM_MLP);
        if (ly->titan) {
            /* torchtitan's FeedForward: w1 (gate), w3 (up), w2 */
            gemm_add(ly, "w1", T, ly->ffn, h, 1, PP_LB_MLP_IN, mlp, true, mb);
            if (ly->glu) gemm_add(ly, "w3", T, ly->ffn, h, 1, PP_LB_MLP_IN, mlp, true, mb);
            gemm_add(ly, "w2", T, h, ly->ffn, 1, PP_LB_MLP_OUT, mlp, true, mb);
        } else {
            gemm_add(ly, "fc1", T, gate * ly->ffn, h, 1, PP_LB_MLP_IN, mlp, true, mb);
            gemm_add(ly, "fc2", T, h, ly->ffn, 1, PP_LB_MLP_OUT, mlp, true, mb);
        }
    } else {
        /* The router on the rank's tokens (16-bit: outside the FP8 autocast); each local expert
         * runs its GEMMs at its share of the received token copies (balanced over the local
         * experts; one chain per expert when looped); the shared experts as a dense MLP on every
         * token (moe/shared_experts.py). */
        unsigned moe = BIT(PP_RCM_MOE), shared = BIT(PP_RCM_MOE) | BIT(PP_RCM_SHARED_EXPERTS);
        double Me = ly->expert_tokens / ly->local_experts;
        gemm_add(ly, "router", ly->tokens_routed, ly->experts, h, 1, PP_LB_ROUTER, moe, false, false);
        double fe = ly->expert_ffn, local = ly->local_experts;
        gemm_add(ly, "expert.fc1", Me, gate * fe, h, local, PP_LB_EXPERT, moe, true, mb);
        gemm_add(ly, "expert.fc2", Me, h, fe, local, PP_LB_EXPERT, moe, true, mb);
        if (ly->shared_ffn > 0) {
            gemm_add(ly, "shared.fc1", T, gate * ly->shared_ffn, h, 1, PP_LB_SHARED, shared, true, false);
            gemm_add(ly, "shared.fc2", T, h, ly->shared_ffn, 1, PP_LB_SHARED, shared, true, false);
        }
    }
    if (ly->mtp) /* the 2h -> h projection, column-parallel (the parameter table's split) */
        gemm_add(ly, "mtp.eh_proj", T, h / ly->tp, 2 * h, 1, PP_LB_MTP, 0, true, false);
    if (pp_work_lora(w)) build_lora_gemms(w, ly);
    if (ly->titan) {
        /* torchtitan's op-level selective AC (torchtitan/distributed/activation_checkpoint.py,
         * _apply_op_sac with _op_sac_save_list): every second aten.mm output is recomputed, the
         * others saved (mm_count % 2 == 0 recomputes); a biased linear runs addmm, which the
         * policy neither counts nor saves. */
        int mm = 0;
        for (int i = 0; i < ly->n_gemm; i++) {
            pp_layer_gemm *g = &ly->gemm[i];
            g->sac_saved = !g->bias && (++mm % 2 == 1);
        }
    }
}

/* ------------------------------------------------------------------ elementwise kernels */

static void ew_add(pp_layer *ly, const char *name, pp_layer_ew_class cls, double elems,
                   pp_layer_block block, unsigned mods)
{
    if (ly->n_ew >= PP_LAYER_MAX_EW || elems <= 0) return;
    ly->ew[ly->n_ew++] = (pp_layer_ew){name, cls, elems, block, mods};
}

/* torchao's float8 (the framework row's torchao_float8) in torchtitan's compiled block: what it keeps
 * (build_saved_titan) and its backward's norm kernels (build_ew) differ from bf16's. */
static bool titan_float8_compiled(const pp_work *w)
{
    return w->stack.compile && w->stack.precision == PP_PREC_FP8 && pp_work_fw(w)->torchao_float8;
}

static void build_ew(const pp_work *w, const pp_layout *l, pp_layer *ly)
{
    const pp_model *m = &w->model;
    const double T = ly->tokens, h = ly->hidden;
    const double hq = ly->q_width, hkv = ly->kv_width;
    bool norm_in, norm_mlp;
    pp_work_norm_modules(w, ly->moe, &norm_in, &norm_mlp);
    const unsigned ln1 = norm_in ? BIT(PP_RCM_LAYERNORM) : 0, ln2 = norm_mlp ? BIT(PP_RCM_LAYERNORM) : 0;
    const unsigned moe = BIT(PP_RCM_MOE), shared = BIT(PP_RCM_MOE) | BIT(PP_RCM_SHARED_EXPERTS);
    const unsigned act_mods = ly->moe ? BIT(PP_RCM_MOE_ACT) | moe : BIT(PP_RCM_MLP);
    const bool t = ly->titan;
    /* Hugging Face's modules (DeepSpeed's row): LlamaRMSNorm and its kin, q_norm and k_norm
     * included, run op by op in fp32 (transformers/models/llama/modeling_llama.py: to(float32),
     * pow, mean, rsqrt, the product, to(input_dtype), the weight's product); a LayerNorm is
     * torch's one kernel */
    const bool hf = pp_work_fw(w)->hf_modules;
    const bool hf_rms = hf && m->norm == PP_NORM_RMSNORM;
    const pp_layer_ew_class act = t ? (ly->glu ? PP_EW_T_SWIGLU : PP_EW_T_GELU)
                                    : (ly->glu ? PP_EW_SWIGLU : PP_EW_GELU);
    ly->n_ew = 0;
    if (t) {
        /* torchtitan's eager block: rms_norm and the residual add on the residual stream (split
         * t ways by its sequence parallelism), the backward's input-gradient sums of the linears
         * that share an input (wq/wk/wv: two, w1/w3: one) at the gathered width. */
        double hs = h * ly->rep_titan;
        ew_add(ly, "attention_norm", PP_EW_T_NORM, T * hs, PP_LB_ATTN_IN, ln1);
        ew_add(ly, "ffn_norm", PP_EW_T_NORM, T * hs, PP_LB_MLP_IN, ln2);
        ew_add(ly, "residual_add", PP_EW_T_ADD, 2 * T * hs, PP_LB_ATTN_OUT, 0);
        ew_add(ly, "grad_sum", PP_EW_T_GRAD_SUM, (ly->glu && !ly->moe ? 3.0 : 2.0) * T * h, PP_LB_ATTN_IN, 0);
        /* torchao's tensorwise float8 in a compiled block without TP, micro-batch 1: without AC the
         * backward recomputes both norms' outputs (build_saved_titan) in kernels Inductor fuses
         * with the norms' backward and the float8 casts as persistent reductions (triton_per_fused_
         * _fused_rms_norm_ _fused_rms_norm_backward_ _scaled_mm ...), far slower than the kernels
         * AC's recompute gets (time.c, EW_FSDP_FP8_NORM_BWD; a recomputed layer is spared them,
         * time.c's recompute_less_s, so the description stays the same for every recompute). At
         * micro-batch 2 Inductor generated other kernels: none of those ran in the profiled step of
         * Llama-3.2-3B's shape at 2 x 8k tokens (tests/data/fsdp/f8held h3_f8t_none_b2_p), whose
         * held-out run was priced +11.5% with them and is +0.2% without. */
        if (titan_float8_compiled(w) && w->stack.fp8_scaling == PP_FP8_TENSORWISE && l->tp == 1 && l->mbs == 1 &&
            !ly->moe)
            ew_add(ly, "fp8.norm_backward", PP_EW_T_FP8_NORM_BWD, 2 * T * h, PP_LB_ATTN_IN, 0);
    } else {
        double hs = h * ly->rep;
        const pp_layer_ew_class norm = hf_rms ? PP_EW_HF_NORM : PP_EW_NORM;
        ew_add(ly, "ln1", norm, T * hs, PP_LB_ATTN_IN, ln1);
        ew_add(ly, "ln2", norm, T * hs, PP_LB_MLP_IN, ln2);
        ew_add(ly, "bda", PP_EW_BDA, 2 * T * hs, PP_LB_ATTN_OUT, 0);
    }
    /* Hugging Face's gated MLP is act_fn(gate_proj(x)) * up_proj(x), two eager kernels as
     * torchtitan's (LlamaMLP.forward) */
    if (!t && hf && ly->glu && !ly->moe) {
        ew_add(ly, "act", PP_EW_T_SWIGLU, T * ly->ffn, PP_LB_MLP_IN, act_mods);
    } else if (!ly->moe) {
        ew_add(ly, "act", act, T * ly->ffn, PP_LB_MLP_IN, act_mods);
    } else {
        ew_add(ly, "expert.act", act, ly->expert_tokens * ly->expert_ffn, PP_LB_EXPERT, act_mods);
        ew_add(ly, "shared.act", act, T * ly->shared_ffn, PP_LB_SHARED, shared);
    }
    if (m->pos == PP_POS_ROPE) {
        /* MLA rotates only the decoupled RoPE part: per head of q and of the shared k */
        double rw = ly->mla ? ly->heads * (double)m->qk_rope_dim * 2 : hq + hkv;
        /* eager RoPE: torchtitan's in fp32 on complex numbers, Hugging Face's by rotate_half (q
         * cos + rotate_half(q) sin: four bf16 passes and a concatenation, about the same bytes) */
        ew_add(ly, "rope", t || hf ? PP_EW_T_ROPE : PP_EW_ROPE, T * rw, PP_LB_ATTN_IN, 0);
    }
    /* --repeat-kv: torchtitan's repeat_kv (to v0.2.1) materialises k and v at the query heads; with
     * enable_gqa (v0.2.2 on) no copy runs, and the flash backward's own sum of the key and value
     * gradients over a group stands where repeat_kv's backward sum did. Measured on two H200s
     * (tests/data/fsdp/runs_gqa.csv, 8 layers at 16k tokens, profiled): copy kernels 35.8 -> 32.9 ms,
     * attention 223.1 -> 223.6 ms, the step 637.1 -> 635.7 ms. */
    if (t && hkv < hq && w->stack.repeat_kv)
        ew_add(ly, "repeat_kv", PP_EW_T_REPEAT, 2 * T * (hq + hkv), PP_LB_ATTN_IN, 0);
    if (m->qk_norm != PP_QKNORM_NONE)
        ew_add(ly, "qk_norm", t ? PP_EW_T_QK_NORM : hf_rms ? PP_EW_HF_NORM : PP_EW_QK_NORM, T * (hq + hkv),
               PP_LB_ATTN_IN, 0);
    if (ly->moe) {
        ew_add(ly, "router", PP_EW_ROUTER, ly->tokens_routed * ly->experts, PP_LB_ROUTER, moe);
        ew_add(ly, "permute", PP_EW_PERMUTE, ly->expert_tokens_mean * h, PP_LB_EXPERT, moe);
        /* Eager experts (Megatron's local SequentialMLP, the other frameworks) scale the
         * activation by the router probability in an fp32 product of its own. */
        if (!pp_work_te(w))
            ew_add(ly, "prob_scale", PP_EW_PROB_SCALE, ly->expert_tokens * ly->expert_ffn, PP_LB_EXPERT, moe);
    }
    if (pp_precision_quantized(w->stack.precision)) {
        /* FP8 GEMMs cast their input (forward) and their output gradient (backward). Counted as
         * the time model was calibrated: the attention's input and output projections at the
         * QKV widths (MLA's five projections too) and the MLP's two GEMMs (the routed experts'
         * per received token copy); the shared experts' casts are left out. */
        double tok = ly->moe ? ly->expert_tokens : T, f = ly->moe ? ly->expert_ffn : ly->ffn;
        /* torchao's tensorwise float8 under TP runs torchtitan's float8 TP plans
         * (Float8ColwiseParallel, Float8RowwiseParallel, PrepareFloat8ModuleInput): the
         * column-parallel layers' inputs are cast on the sequence shard before their all-gather,
         * and the row-parallel layers' output gradients on the shard before theirs */
        const double hs = pp_work_fw(w)->torchao_float8 && w->stack.fp8_scaling == PP_FP8_TENSORWISE && ly->tp > 1
                              ? h / ly->tp : h;
        double in = T * hs + T * hq + tok * (hs + f);
        double out = T * (hq + 2 * hkv) + T * hs + tok * ((ly->glu ? 2 : 1) * f + hs);
        ew_add(ly, "fp8.cast_input", PP_EW_FP8_CAST_IN, in, PP_LB_ATTN_IN, 0);
        ew_add(ly, "fp8.cast_grad", PP_EW_FP8_CAST_GRAD, out, PP_LB_ATTN_IN, 0);
    }
}

/* ------------------------------------------------------------------ collectives */

static void coll_add(pp_layer *ly, const char *name, pp_layer_group g, pp_time_coll op, double bytes,
                     double count, int64_t ranks, int64_t stride, bool bwd, pp_layer_block beside,
                     bool async, bool regather)
{
    if (ly->n_coll >= PP_LAYER_MAX_COLLS || ranks <= 1 || bytes <= 0 || count <= 0) return;
    ly->coll[ly->n_coll++] = (pp_layer_coll){name, g, op, bytes, count, ranks, stride, bwd, beside,
                                             async, regather, 0.0};
}

/* One TP collective of a layer: around which GEMM, in which pass. */
typedef struct {
    const char *name;
    pp_time_coll op;
    bool bwd;
    pp_layer_block beside;
    bool async, regather;
} tp_coll;

static void build_colls(const pp_work *w, const pp_layout *l, pp_layer *ly)
{
    const double M = ly->tokens * ly->hidden * 2.0; /* one 16-bit activation of the shard */
    const int64_t tp = l->tp;
    ly->n_coll = 0;
    /* TP (Megatron's f/g operators around the column/row-parallel pairs; an MoE layer's pair is
     * its router and shared experts, the experts' tokens move in the dispatcher). Without SP:
     * forward, the all-reduce after proj and after fc2; backward, the all-reduce of the column
     * layers' input gradient, asynchronous beside their weight gradient. SP (Korthikanti et al.
     * 2022 sec. 4.2.2): forward, the all-gather before QKV and fc1 and the reduce-scatter after
     * proj and fc2; backward, the all-gather of the row layers' output gradient, the
     * reduce-scatter of the column layers' input gradient beside their wgrad, and the re-gather
     * of their input beside their dgrad. */
    static const tp_coll tp_ar[] = {
        {"proj.all_reduce", PP_TC_ALL_REDUCE, false, PP_LB_ATTN_OUT, false, false},
        {"fc2.all_reduce", PP_TC_ALL_REDUCE, false, PP_LB_MLP_OUT, false, false},
        {"qkv.dgrad_all_reduce", PP_TC_ALL_REDUCE, true, PP_LB_ATTN_IN, true, false},
        {"fc1.dgrad_all_reduce", PP_TC_ALL_REDUCE, true, PP_LB_MLP_IN, true, false},
    }, tp_sp[] = {
        {"qkv.all_gather", PP_TC_ALL_GATHER, false, PP_LB_ATTN_IN, false, false},
        {"proj.reduce_scatter", PP_TC_REDUCE_SCATTER, false, PP_LB_ATTN_OUT, false, false},
        {"fc1.all_gather", PP_TC_ALL_GATHER, false, PP_LB_MLP_IN, false, false},
        {"fc2.reduce_scatter", PP_TC_REDUCE_SCATTER, false, PP_LB_MLP_OUT, false, false},
        {"proj.grad_all_gather", PP_TC_ALL_GATHER, true, PP_LB_ATTN_OUT, false, false},
        {"fc2.grad_all_gather", PP_TC_ALL_GATHER, true, PP_LB_MLP_OUT, false, false},
        {"qkv.dgrad_reduce_scatter", PP_TC_REDUCE_SCATTER, true, PP_LB_ATTN_IN, true, false},
        {"fc1.dgrad_reduce_scatter", PP_TC_REDUCE_SCATTER, true, PP_LB_MLP_IN, true, false},
        {"qkv.input_regather", PP_TC_ALL_GATHER, true, PP_LB_ATTN_IN, true, true},
        {"fc1.input_regather", PP_TC_ALL_GATHER, true, PP_LB_MLP_IN, true, true},
    };
    int n_tp = l->sp ? (int)(sizeof tp_sp / sizeof tp_sp[0]) : (int)(sizeof tp_ar / sizeof tp_ar[0]);
    for (int i = 0; i < n_tp; i++) {
        const tp_coll *c = l->sp ? &tp_sp[i] : &tp_ar[i];
        coll_add(ly, c->name, PP_LG_TP, c->op, M, 1, tp, 1, c->bwd, c->beside, c->async, c->regather);
    }
    /* CP: ring exchange of the K and V blocks (Megatron/TE context parallelism), cp - 1 hops
     * forward; the backward moves K, V and their gradients. MLA sends its per-head k and v.
     * PyTorch's ring (--cp-comm torch, the fsdp default: torch.distributed.tensor.experimental) exchanges
     * K and V as SDPA sees them and passes the key and value gradients round in fp32 (its
     * _cp_options.convert_to_f32 accumulators): the backward's hops carry 4-byte gradients. Under
     * --repeat-kv SDPA sees them repeated to the query heads: on two H200s that exposes about 14 ms a
     * layer at 32k tokens a rank where the GQA-width bf16 hops priced 1.6 (the profiled CP steps
     * of tests/data/fsdp/cp and cp_cudnn: NCCL alone on the GPU 113 and 109 ms of 8 layers). With
     * enable_gqa (torchtitan v0.2.2) they go at the KV heads' width: the same 64k-token CP 2 step
     * took 2998 ms against the repeated run's 3107 (tests/data/fsdp/runs_gqa.csv g_cp2_s64k_c). */
    if (l->cp > 1) {
        const bool torch_ring = pp_work_cp_comm(w) == PP_CPC_TORCH;
        double sq = ly->attn.queries, b = ly->mbs;
        double kv_width = ly->mla ? ly->heads * (ly->attn.qk_dim + ly->attn.v_dim)
                                  : 2.0 * (torch_ring && w->stack.repeat_kv ? ly->q_width : ly->kv_width);
        double kv = b * sq * kv_width * 2.0, hops = (double)(l->cp - 1);
        coll_add(ly, "kv.ring", PP_LG_CP, PP_TC_SENDRECV, kv, hops, l->cp, tp, false, PP_LB_ATTN_IN, false,
                 false);
        coll_add(ly, "kv.ring_grad", PP_LG_CP, PP_TC_SENDRECV, torch_ring ? 2.0 * kv : kv, 2 * hops, l->cp, tp, true,
                 PP_LB_ATTN_IN, false, false);
    }
    /* EP: the dispatch and combine all-to-alls of the token copies over the EP group (its ranks
     * etp apart in Megatron's expert grid tp x cp x dp = etp x ep x edp); with expert TP the
     * all-gather of the expert-TP group's tokens before the experts and the reduce-scatter after
     * them. */
    if (ly->moe && w->stack.dispatcher == PP_DISPATCH_FLEX) {
        /* The flex dispatcher: one group of etp x ep ranks (Megatron's tp_ep group, consecutive in
         * the expert grid), a token's 16-bit row sent once per rank and node it goes to
         * (pp_layer_dispatch_fanout); the experts' tensor-parallel ranks get it in the same pass. */
        int64_t n = pp_layout_etp(l) * l->ep;
        int64_t gpn = pp_work_nvlink_gpus(w);
        int64_t per_node = pp_layout_group_per_node(n, 1, gpn);
        double ranks = 0, nodes = 0, row = ly->tokens_routed * ly->hidden * 2.0;
        pp_layer_dispatch_fanout(w, l, per_node, &ranks, &nodes);
        double pn = (double)(per_node < n ? per_node : n);
        /* the busiest rank receives its experts' share (imbalance, capacity) over the mean */
        double busy = ly->expert_tokens_mean > 0 ? ly->expert_tokens / ly->expert_tokens_mean : 1.0;
        double nvl = row * ranks * (pn - 1.0) / pn * busy, net = row * nodes * busy;
        for (int bwd = 0; bwd < 2 && n > 1 && nvl + net > 0 && ly->n_coll < PP_LAYER_MAX_COLLS; bwd++)
            ly->coll[ly->n_coll++] = (pp_layer_coll){bwd ? "moe.flex_grad" : "moe.flex_dispatch_combine",
                                                     PP_LG_EP, PP_TC_DISPATCH, nvl, 2, n, 1, bwd != 0,
                                                     PP_LB_EXPERT, false, false, net};
    } else if (ly->moe) {
        int64_t etp = pp_layout_etp(l);
        double a2a = ly->expert_tokens / ly->etp * ly->hidden * 2.0, g = ly->expert_tokens * ly->hidden * 2.0;
        for (int bwd = 0; bwd < 2; bwd++) {
            coll_add(ly, bwd ? "moe.a2a_grad" : "moe.dispatch_combine", PP_LG_EP, PP_TC_ALL_TO_ALL, a2a, 2,
                     l->ep, etp, bwd, PP_LB_EXPERT, false, false);
            coll_add(ly, bwd ? "expert.all_gather_grad" : "expert.all_gather", PP_LG_ETP, PP_TC_ALL_GATHER, g,
                     1, etp, 1, bwd, PP_LB_EXPERT, false, false);
            coll_add(ly, bwd ? "expert.reduce_scatter_grad" : "expert.reduce_scatter", PP_LG_ETP,
                     PP_TC_REDUCE_SCATTER, g, 1, etp, 1, bwd, PP_LB_EXPERT, false, false);
        }
    }
}

/* ------------------------------------------------------------------ saved tensors */

/* Inlined: the memory model's fast path builds every candidate's table. */
static inline __attribute__((always_inline)) void saved_add(pp_layer *ly, const char *name, double elems,
                                                            double bytes, bool paper, unsigned drop)
{
    if (elems <= 0 || ly->n_saved >= PP_LAYER_MAX_SAVED) return;
    pp_layer_saved *t = &ly->saved[ly->n_saved++];
    t->name = name;
    t->elems = elems;
    t->bytes_per_elem = bytes;
    t->paper = paper;
    t->drop_mods = drop;
    double x = elems * bytes;
    ly->saved_bytes += x;
    if (paper) ly->saved_paper_bytes += x;
    if (!(drop & ly->saved_sel_mods)) ly->saved_sel_bytes += x;
}

/* An MLP block: a gated or plain MLP of inner size f_r per rank on `tokens` tokens, as
 * Megatron's MLP saves it (megatron/core/transformer/mlp.py), with what its activation keeps from
 * the table (pp_activations: fused or eager). `scaled`: the experts' output is multiplied by the
 * router probabilities inside the MLP (per_token_scale), which in the eager path keeps the
 * activation's output for that product. `drop`: the modules whose recompute drops the whole
 * block; `act`: the module that recomputes the activation (Megatron's moe_act: only its input,
 * the fc1 output, is kept). names: the activation's input it keeps, the eager path's further
 * tensors, the scaled product's input, fc2's input. */
static inline __attribute__((always_inline)) void saved_mlp(pp_layer *ly, const pp_act_row *ar, bool eager,
                                                            double tokens, double f_r, double lin, bool scaled,
                                                            unsigned drop, unsigned act,
                                                            const char *const names[4])
{
    /* bytes per token and f: fc1's output (the activation's input: gate and linear halves when
     * gated) and what the activation keeps of it or beyond it */
    const double in_b = ar->gated ? 4.0 : 2.0, keep = eager ? ar->saved_eager : ar->saved_fused;
    saved_add(ly, names[0], tokens * f_r * (keep < in_b ? keep : in_b) / 2.0, 2, true, drop); /* GeLU: 8sbh, f = 4h */
    if (keep > in_b) saved_add(ly, names[1], tokens * f_r * (keep - in_b) / 2.0, 2, true, drop | act);
    if (scaled && eager) saved_add(ly, names[2], tokens * f_r, 2, false, drop | act);
    saved_add(ly, names[3], tokens * f_r, lin, true, drop | act);
}

/* Megatron's unfused attention over `ss` scores: scores -> masked_fill_ (in place) -> softmax
 * (saves its output) -> dropout (mask, 1 byte) -> bmm (saves the dropped probabilities); 5 as^2 b
 * in Korthikanti et al.'s table 2. Selective recompute of core_attn drops them. */
static void saved_scores(pp_layer *ly, double ss, bool dropout)
{
    const unsigned core = BIT(PP_RCM_CORE_ATTN);
    saved_add(ly, "attn.softmax", ss, 2, true, core);
    if (dropout) {
        saved_add(ly, "attn.dropout_mask", ss, 1, true, core);
        saved_add(ly, "attn.dropout_out", ss, 2, true, core);
    }
}

/* torchtitan's block without activation checkpointing (the titan variant; memory_fsdp.c prices
 * it and its checkpointing policies): the block input (saved by the fused rms_norm with its
 * rstd), the normalised input all-gathered for the column-parallel wq/wk/wv (one tensor, saved by
 * all three), q and k after RoPE and k, v repeated to the query heads as SDPA saves them
 * (torchtitan's repeat_kv materialises the copies), SDPA's output (also wo's input: the flash
 * kernel writes it [b, s, heads, d], so .transpose(1, 2).contiguous() is a view) and its fp32
 * log-sum-exp, the residual sum and ffn_norm's output; SwiGLU keeps w1's output (SiLU's input),
 * SiLU's output and w3's output (the product's inputs) and the product (w2's input); a plain MLP
 * its input to the activation and the activation. Measured: 16h + 8f + 4a + 8 bytes per token
 * for the Llama shapes, to 0.0006% (tests/data/fsdp/runs.csv, l3b_s8k_b1_none). torchtitan's TP
 * shards the norms' rows (SequenceParallel on attention_norm and ffn_norm, apply_tp). */
static void build_saved_titan(const pp_work *w, const pp_layout *l, pp_layer *ly)
{
    const pp_model *m = &w->model;
    const double T = ly->tokens, h = ly->hidden, hr = h * ly->rep_titan, hq = ly->q_width, f = ly->ffn;
    const double stats = (m->norm == PP_NORM_LAYERNORM ? 2.0 : 1.0) * ly->rep_titan; /* fp32 rstd (+ mean) */
    /* torchao float8 (the framework row's torchao_float8) in a compiled block: what the graph keeps
     * (torch/_functorch/partitioners.py's min-cut) differs from bf16's. Read tensor by tensor from
     * a compiled Llama-3-8B block on two H200s (torch 2.11, torchao 0.18 Float8Linear, torchtitan's
     * TP plans: tools/fsdp/saved_tensors.py, tests/data/fsdp/float8/saved.jsonl), per token:
     *   - without TP: neither norm's output nor w2's input (the SwiGLU product) is kept, the
     *     backward recomputes them from the block input, the residual sum and their rstd and from
     *     w1's and w3's outputs (2 x 2h + 2f bytes less); with the FSDP float8 all-gather
     *     (tensorwise, sharded) the float8 weights of w1, w3 and w2 are kept (1 byte an element);
     *   - under TP the norms' all-gathered outputs are kept cast to float8 (h bytes each); rowwise
     *     (torchtitan's standard plans) drops w2's input and keeps the float8 weight shards of the
     *     row-parallel wo and w2; tensorwise (torchao's float8 TP styles) also keeps the norms'
     *     sequence-shard casts (h/tp each), w2's and wo's inputs in float8 (f/tp, hq/tp) and the
     *     float8 shards of wq, wo, w1, w3 and w2 (its weight scales and amaxes are a few KB).
     * Checked end to end on two H200s: 8 layers of 16k tokens without AC, rowwise 5,630 MiB
     * (tensorwise 4,286) below the bf16 twin where this says 5,632 (4,288) (runs_float8.csv
     * f8r_s16k_none, f8t_s16k_none against bf_s16k_none). */
    const bool f8c = titan_float8_compiled(w);
    const bool f8tp = f8c && l->tp > 1, f8tw = f8c && w->stack.fp8_scaling == PP_FP8_TENSORWISE;
    const double norm_b = !f8c ? 2.0 : f8tp ? 1.0 : 0.0; /* bytes an element of the norms' outputs kept */
    const double w2in_b = !f8c ? 2.0 : f8tp && f8tw ? 1.0 : 0.0;
    double weights = 0; /* float8 weight elements kept to the backward */
    if (f8tp) weights = f8tw ? (ly->glu ? 3.0 : 2.0) * h * f + 2.0 * h * hq : h * f + h * hq;
    else if (f8c && pp_fsdp_fp8_gather(w, l)) weights = (ly->glu ? 3.0 : 2.0) * h * f;
    ly->full_input = (pp_layer_saved){"block.input", T * hr, 2, false, 0};
    saved_add(ly, "block.input", T * hr, 2, false, 0);
    saved_add(ly, "attention_norm.rstd", T * stats, 4, false, 0);
    saved_add(ly, "attention_norm.output", T * h, norm_b, false, 0);
    if (f8tp && f8tw) saved_add(ly, "attention_norm.fp8_shard", T * hr, 1, false, 0);
    saved_add(ly, "attn.q", T * hq, 2, false, 0);
    /* --repeat-kv: SDPA saves the repeated copies; with enable_gqa it saves k and v at their own
     * heads (v is wv's output itself). Measured: 1,536 MiB apart over 8 layers of 16k tokens, the
     * 2 x (4096 - 1024) x 2 bytes a token and layer of Llama-3-8B's shape (runs_gqa.csv
     * r_s16k_none_e / g_s16k_none_e); the selective and full AC peaks the same in both. */
    const double kvw = w->stack.repeat_kv ? hq : ly->kv_width;
    saved_add(ly, "attn.k", T * kvw, 2, false, 0);
    saved_add(ly, "attn.v", T * kvw, 2, false, 0);
    saved_add(ly, "attn.out", T * hq, 2, false, 0);
    if (f8tp && f8tw) saved_add(ly, "wo.fp8_input", T * hq, 1, false, 0);
    saved_add(ly, "attn.lse", T * ly->heads, 4, false, 0);
    if (!ly->attn.fused) saved_add(ly, "attn.softmax", ly->attn.scores, 2, false, 0); /* math SDPA */
    if (m->qk_norm != PP_QKNORM_NONE) {
        saved_add(ly, "qk_norm.input", T * (hq + ly->kv_width), 2, false, 0);
        saved_add(ly, "qk_norm.rstd", T * (ly->heads + ly->kv_heads), 4, false, 0);
    }
    saved_add(ly, "ffn_norm.input", T * hr, 2, false, 0);
    saved_add(ly, "ffn_norm.rstd", T * stats, 4, false, 0);
    saved_add(ly, "ffn_norm.output", T * h, norm_b, false, 0);
    if (f8tp && f8tw) saved_add(ly, "ffn_norm.fp8_shard", T * hr, 1, false, 0);
    saved_add(ly, "w1.output", T * f, 2, false, 0);
    /* --compile (torchtitan's per-block torch.compile): Inductor fuses silu(w1 x) * w3 x and
     * recomputes SiLU from w1's output in the backward kernel, so SiLU's output is not kept:
     * 2f bytes per token less, measured exactly on 4 x H100 (tests/data/node4/h100 fsdp_runs.csv,
     * e8_b1_cmp against e8_b1_def: 3,584 MiB over 32 layers of 4096 tokens). A plain MLP's
     * activation output is w2's input and stays. */
    if (!(w->stack.compile && ly->glu)) saved_add(ly, "act.output", T * f, 2, false, 0);
    if (ly->glu) {
        saved_add(ly, "w3.output", T * f, 2, false, 0);
        if (w2in_b > 0) saved_add(ly, "w2.input", T * f, w2in_b, false, 0);
    }
    saved_add(ly, "fp8_weights", weights, 1, false, 0);
    /* The block's own backward recomputes what it did not keep and has its weights gathered
     * again: there (and under full AC, where the recomputed forward is all of it) it holds what
     * the bf16 block keeps, the reading the float8 AC peaks were checked against (within 1.7%). */
    if (f8c) {
        const double casts = f8tp && f8tw ? T * (2.0 * hr + hq) : 0.0;
        ly->bwd_resident_extra_bytes = T * (2.0 * h * (2.0 - norm_b) + (ly->glu ? f * (2.0 - w2in_b) : 0.0)) -
                                       casts - weights;
    }
}

/* A Hugging Face decoder layer of the Llama family as transformers writes it (the row's
 * hf_modules; RMSNorm, RoPE, a dense MLP, no tensor or context parallelism: Megatron-style
 * parallel modules are Megatron's table). */
static bool hf_llama_block(const pp_work *w, const pp_layout *l, const pp_layer *ly)
{
    const pp_model *m = &w->model;
    return pp_work_fw(w)->hf_modules && !ly->moe && !ly->mla && l->tp == 1 && l->cp == 1 &&
           m->norm == PP_NORM_RMSNORM && m->pos == PP_POS_ROPE && ly->attn.fused;
}

/* What a Hugging Face Llama-family decoder layer keeps for its backward (transformers 5.17,
 * models/llama/modeling_llama.py; Qwen3's q_norm and k_norm the same RMSNorm), per token:
 *   - each RMSNorm (LlamaRMSNorm.forward: to(float32), pow, mean, rsqrt, the product,
 *     to(input_dtype), the weight's product): its fp32 input (4 bytes an element, saved by pow
 *     and the product), the rsqrt (4 a row), the bf16 cast (2, the weight's product) and, for the
 *     two residual norms, its output (2, the projections' input); q_norm and k_norm's output goes
 *     into RoPE, which keeps only cos and sin;
 *   - q and k after RoPE and v (SDPA's inputs; GQA reaches SDPA at the KV heads, enable_gqa),
 *     SDPA's output (also o_proj's input) and its fp32 log-sum-exp;
 *   - the gated MLP's gate_proj output (SiLU's input), SiLU's output, up_proj's output and the
 *     product (down_proj's input); a plain MLP its two.
 * Read tensor by tensor off the allocator's history at the peak of a DeepSpeed step on two H200s
 * (tests/data/deepspeed, Llama-3-8B's shape, 4096 tokens): 200,832 bytes a token and layer, which
 * this gives to the byte (16h + 8 + 4 q + 4 kv + 4 heads + 8f). Gradient checkpointing
 * (gradient_checkpointing_enable, use_reentrant False) keeps each layer's input. */
static void build_saved_hf(const pp_work *w, pp_layer *ly)
{
    const pp_model *m = &w->model;
    const double T = ly->tokens, h = ly->hidden, hq = ly->q_width, hkv = ly->kv_width, f = ly->ffn;
    ly->full_input = (pp_layer_saved){"layer.input", T * h, 2, true, 0};
    static const char *const norm_names[2][4] = {
        {"input_layernorm.fp32_input", "input_layernorm.rsqrt", "input_layernorm.cast", "input_layernorm.output"},
        {"post_attention_layernorm.fp32_input", "post_attention_layernorm.rsqrt", "post_attention_layernorm.cast",
         "post_attention_layernorm.output"}};
    for (int i = 0; i < 2; i++) {
        saved_add(ly, norm_names[i][0], T * h, 4, false, 0);
        saved_add(ly, norm_names[i][1], T, 4, false, 0);
        saved_add(ly, norm_names[i][2], T * h, 2, false, 0);
        saved_add(ly, norm_names[i][3], T * h, 2, false, 0);
    }
    if (m->qk_norm != PP_QKNORM_NONE) {
        saved_add(ly, "q_norm.fp32_input", T * hq, 4, false, 0);
        saved_add(ly, "q_norm.rsqrt", T * ly->heads, 4, false, 0);
        saved_add(ly, "q_norm.cast", T * hq, 2, false, 0);
        saved_add(ly, "k_norm.fp32_input", T * hkv, 4, false, 0);
        saved_add(ly, "k_norm.rsqrt", T * ly->kv_heads, 4, false, 0);
        saved_add(ly, "k_norm.cast", T * hkv, 2, false, 0);
    }
    saved_add(ly, "attn.q", T * hq, 2, false, 0);
    saved_add(ly, "attn.k", T * hkv, 2, false, 0);
    saved_add(ly, "attn.v", T * ly->kv_width * ly->v_head_dim / ly->head_dim, 2, false, 0);
    saved_add(ly, "attn.out", T * ly->v_width, 2, false, 0);
    saved_add(ly, "attn.lse", T * ly->heads, 4, false, 0);
    saved_add(ly, "mlp.gate_or_fc1_out", T * f, 2, false, 0);
    saved_add(ly, "mlp.act_out", T * f, 2, false, 0);
    if (ly->glu) {
        saved_add(ly, "mlp.up_out", T * f, 2, false, 0);
        saved_add(ly, "mlp.product", T * f, 2, false, 0);
    }
}

/* Megatron's table (memory.c prices it): what one layer keeps for its backward, tensor by
 * tensor. It stands in for torchtitan's MLA and MoE layers. The MLP activation is Megatron's fused
 * one (bias_activation_fusion, on by default with TransformerEngine and with the local modules
 * alike: a jit_fuser function) unless --no-bias-act-fusion; the other frameworks' plain PyTorch
 * MLPs save what Megatron's eager glu() does. Measured on 4 x H100 with Megatron's defaults
 * (tests/data/node4/h100): 4f bytes per token and layer less than the eager path, l1_def against
 * l1_noswi (2,048 MiB), d_tp4_b2, and 1,952 MiB in the MoE pair fg_ep2_b1 / fg_ep2_b1_unf. */
static void build_saved(const pp_work *w, const pp_layout *l, pp_layer *ly)
{
    const pp_model *m = &w->model;
    const double b = ly->mbs, s = ly->attn.queries, sk = ly->seq, h = ly->hidden;
    const double d = ly->head_dim, aq = ly->heads, gk = ly->kv_heads, sb = ly->tokens;
    const double rep = ly->rep;
    const bool eager = pp_work_act_eager(w);
    const pp_act_row *ar = &pp_activations[m->act];
    double adr, hdr;
    pp_work_dropout(w, &adr, &hdr);
    const bool adrop = adr > 0, hdrop = hdr > 0, unfused = !ly->attn.fused;
    const double stats = m->norm == PP_NORM_LAYERNORM ? 2.0 : 1.0; /* mean + rstd, or rstd (fp32) */
    /* Megatron recomputes a norm only where it is a module of its own (transformer_layer.py: not
     * an IdentityOp; pp_work_norm_modules). */
    bool norm_in, norm_mlp;
    pp_work_norm_modules(w, ly->moe, &norm_in, &norm_mlp);
    const unsigned rc_norm_in = norm_in ? BIT(PP_RCM_LAYERNORM) : 0;
    const unsigned rc_norm_mlp = norm_mlp ? BIT(PP_RCM_LAYERNORM) : 0;
    /* FP8 (TransformerEngine): the inputs of the FP8 GEMMs are saved cast to 8 bits for the
     * weight gradient (te/pytorch/module/linear.py saves the quantized input); norms, attention
     * and the activation functions keep 16-bit tensors. */
    const double lin = pp_precision_info[w->stack.precision].elem_bytes;
    /* LoRA: a frozen TE linear keeps no input for a weight gradient it does not compute
     * (te/pytorch/module/linear.py saves the input only when the weight requires a gradient);
     * a targeted linear's adapter A (Megatron-Core's linear) saves that input in 16-bit. */
    const bool lora = pp_work_lora(w);
    const double in_qkv = !lora ? lin : lora_targets_block(w, PP_LB_ATTN_IN) ? 2.0 : 0.0;
    const double in_fc1 = !lora ? lin : lora_targets_block(w, PP_LB_MLP_IN) ? 2.0 : 0.0;
    const double in_fc2 = !lora ? lin : lora_targets_block(w, PP_LB_MLP_OUT) ? 2.0 : 0.0;
    const double ss = b * aq * s * sk; /* the score matrix */
    ly->n_saved = 0;
    ly->saved_bytes = ly->saved_paper_bytes = ly->saved_sel_bytes = ly->mtp_saved_bytes = 0;
    ly->bwd_resident_extra_bytes = 0;
    ly->saved_sel_mods = l->recompute_modules ? l->recompute_modules : BIT(PP_RCM_CORE_ATTN);
    if (ly->titan && !ly->moe) {
        build_saved_titan(w, l, ly);
        return;
    }
    if (hf_llama_block(w, l, ly)) {
        build_saved_hf(w, ly);
        return;
    }
    /* Full recompute keeps only the layer input (checkpoint), Korthikanti table 2: 2sbh. */
    ly->full_input = (pp_layer_saved){"layer.input", sb * h * rep, 2, true, 0};

    saved_add(ly, "ln1.input", sb * h * rep, 2, true, 0);
    saved_add(ly, "ln1.stats", sb * rep * stats, 4, false, 0);
    if (ly->mla) {
        /* MLA (Megatron MLASelfAttention): the down-projections see the full hidden state; their
         * outputs are normalised and up-projected per TP rank. Saved: the shared input, the
         * latents (norm inputs) and normalised latents (up-projection inputs), q and k with the
         * RoPE part appended per head, v, and the output. */
        double ql = (double)m->q_lora_rank, kvl = (double)m->kv_lora_rank;
        double rope = (double)m->qk_rope_dim, vd = ly->v_head_dim;
        unsigned up = BIT(PP_RCM_MLA_UP_PROJ);
        saved_add(ly, "mla.input", sb * h * rep, lin, true, rc_norm_in);
        if (ql > 0) {
            saved_add(ly, "mla.q_latent", sb * ql, 2, false, 0);
            saved_add(ly, "mla.q_latent_norm", sb * ql, lin, false, 0);
        }
        saved_add(ly, "mla.kv_latent", sb * (kvl + rope), 2, false, 0);
        saved_add(ly, "mla.kv_latent_norm", sb * kvl, lin, false, 0);
        saved_add(ly, "attn.q", sb * aq * d, 2, true, up);
        saved_add(ly, "attn.k", sb * aq * d, 2, true, up);
        saved_add(ly, "attn.v", sb * aq * vd, 2, true, up);
        if (unfused) saved_scores(ly, ss, adrop);
        else saved_add(ly, "attn.lse", b * aq * s, 4, false, 0);
        saved_add(ly, "proj.input", sb * aq * vd, lin, true, 0);
    } else {
        if (in_qkv > 0) saved_add(ly, "qkv.input", sb * h * rep, in_qkv, true, rc_norm_in);
        /* Q, K, V as the attention kernel saves them. */
        if (unfused) {
            /* Megatron DotProductAttention: the QKV output [s,b,g,(a/g+2)d] is split into views.
             * Q is a new tensor when RoPE rotates it or when grouped heads force a copy in the
             * reshape; K and V are new when GQA repeats them (repeat_interleave) or, for K, RoPE
             * rotates it. baddbmm saves Q and K, bmm saves V; any saved view keeps the whole QKV
             * output alive, and so does QK-norm, which saves the q and k views it normalises. */
            bool rope = m->pos == PP_POS_ROPE, grouped = aq != gk;
            bool q_new = rope || (grouped && gk > 1), k_new = grouped || rope, v_new = grouped;
            saved_add(ly, "attn.q", q_new ? sb * aq * d : 0, 2, true, 0);
            saved_add(ly, "attn.k", k_new ? sb * (grouped ? aq : gk) * d : 0, 2, true, 0);
            saved_add(ly, "attn.v", v_new ? sb * aq * d : 0, 2, true, 0);
            if (!q_new || !k_new || !v_new || m->qk_norm != PP_QKNORM_NONE)
                saved_add(ly, "attn.qkv_out", sb * (aq + 2 * gk) * d, 2, true, 0);
            saved_scores(ly, ss, adrop);
        } else {
            /* Flash attention (TE): saves q, k, v at their own head counts, the output (also the
             * projection input, below) and the fp32 log-sum-exp per row; no s^2 tensor. With
             * QK-norm the normalised q and k are what it saves; the norms keep their inputs. */
            saved_add(ly, "attn.q", sb * aq * d, 2, true, 0);
            saved_add(ly, "attn.k", sb * gk * d, 2, true, 0);
            saved_add(ly, "attn.v", sb * gk * d, 2, true, 0);
            saved_add(ly, "attn.lse", b * aq * s, 4, false, 0);
            if (m->qk_norm != PP_QKNORM_NONE)
                saved_add(ly, "attn.qk_norm_input", sb * (aq + gk) * d, 2, false, 0);
        }
        if (m->qk_norm != PP_QKNORM_NONE) saved_add(ly, "attn.qk_norm_stats", sb * (aq + gk), 4, false, 0);
        saved_add(ly, "proj.input", sb * aq * d, lin, true, 0);
    }
    if (hdrop) saved_add(ly, "attn.bda_mask", sb * h * rep, 1, true, 0);
    saved_add(ly, "ln2.input", sb * h * rep, 2, true, 0);
    saved_add(ly, "ln2.stats", sb * rep * stats, 4, false, 0);
    if (in_fc1 > 0) saved_add(ly, "fc1.input", sb * h * rep, in_fc1, true, rc_norm_mlp); /* the router's input too (MoE) */

    if (!ly->moe) {
        static const char *const dn[4] = {"mlp.fc1_out", "mlp.act_eager", "", "fc2.input"};
        saved_mlp(ly, ar, eager, sb, ly->ffn, in_fc2, false, BIT(PP_RCM_MLP), 0, dn);
    } else {
        /* MoE (megatron/core/transformer/moe): router logits (16-bit) and their fp32 softmax
         * over the experts for the local tokens; the permuted token copies each rank's experts
         * receive (the experts' fc1 input, views of one tensor); per received token the expert
         * MLP's tensors at f/etp, the router probability it is scaled by (fp32), and the int64
         * indices that undo the permutation; shared experts run as a dense MLP on every token. */
        const unsigned moe = BIT(PP_RCM_MOE), shared = moe | BIT(PP_RCM_SHARED_EXPERTS);
        const double Tl = ly->tokens_routed, Tr = ly->expert_tokens;
        saved_add(ly, "moe.router_logits", Tl * ly->experts, 2, false, moe);
        saved_add(ly, "moe.router_probs", Tl * ly->experts, 4, false, moe);
        saved_add(ly, "moe.permute_index", Tl * ly->topk, 8, false, moe);
        saved_add(ly, "moe.expert_input", Tr * h, lin, false, moe);
        saved_add(ly, "moe.token_probs", Tr, 4, false, moe);
        static const char *const en[4] = {"moe.fc1_out", "moe.act_eager", "moe.act_out", "moe.fc2_input"};
        saved_mlp(ly, ar, eager, Tr, ly->expert_ffn, lin, true, moe, BIT(PP_RCM_MOE_ACT), en);
        if (ly->shared_ffn > 0) {
            static const char *const sn[4] = {"shared.fc1_out", "shared.act_eager", "", "shared.fc2_input"};
            saved_mlp(ly, ar, eager, sb, ly->shared_ffn, lin, false, shared, 0, sn);
            if (m->shared_gate) saved_add(ly, "shared.gate", Tl, 2, false, shared);
        }
    }
    if (hdrop) saved_add(ly, "mlp.bda_mask", sb * h * rep, 1, true, 0);
    /* LoRA: each adapter's B keeps its input, A's output, r wide on every token (gathered beside
     * a column-parallel linear, all-reduced beside a row-parallel one), 16-bit */
    if (lora) {
        const double r = pp_work_lora_rank(w);
        static const struct { const char *name; pp_layer_block block; unsigned mods; } ad[4] = {
            {"qkv.lora_a_out", PP_LB_ATTN_IN, 0}, {"proj.lora_a_out", PP_LB_ATTN_OUT, 0},
            {"fc1.lora_a_out", PP_LB_MLP_IN, BIT(PP_RCM_MLP)}, {"fc2.lora_a_out", PP_LB_MLP_OUT, BIT(PP_RCM_MLP)}};
        for (int i = 0; i < 4; i++)
            if (lora_targets_block(w, ad[i].block)) saved_add(ly, ad[i].name, sb * r, 2, false, ad[i].mods);
    }
    /* MTP (DeepSeek-V3 sec. 2.2; megatron/core/transformer/multi_token_prediction.py): the two
     * normalised inputs and the projection input (2h wide), saved by the MTP layer (and their
     * bytes on any layer of the model, what its MTP layer keeps on top of it). */
    static const struct { const char *name; double width; } mtp_in[3] = {
        {"mtp.hidden_norm", 1}, {"mtp.embed_norm", 1}, {"mtp.eh_proj_input", 2}};
    ly->mtp_saved_bytes = 0;
    for (int i = 0; i < 3 && m->mtp_layers > 0; i++) {
        double x = mtp_in[i].width * sb * h * rep;
        ly->mtp_saved_bytes += 2.0 * x;
        if (ly->mtp) saved_add(ly, mtp_in[i].name, x, 2, false, 0);
    }
}

/* ------------------------------------------------------------------ backward working sets */

static void transient_add(pp_layer *ly, const char *name, double bytes, unsigned mods)
{
    if (bytes <= 0 || ly->n_transient >= PP_LAYER_MAX_TRANSIENTS) return;
    ly->transient[ly->n_transient++] = (pp_layer_transient){name, bytes, mods};
    ly->bwd_work_bytes = max2(ly->bwd_work_bytes, bytes);
}

/* What each operation's backward allocates beyond the tensors saved for it, one operation at a
 * time (the memory models add the largest to the saved tensors they hold; memory.c, memory_fsdp.c):
 *   - the attention core with FlashAttention (flash_attn's and SDPA's flash kernel, both FA2:
 *     flash_api.cpp mha_bwd allocates dq, dk, dv, dq_accum and softmax_d): the incoming dO and dQ,
 *     dK, dV at the query heads (GQA's dK, dV are expanded, then summed), 16-bit, the fp32 dQ
 *     accumulator, and the fp32 softmax_d per query row and head: (8 qk + 4 v) bytes per head and
 *     token + 4. Under the MLP's working set in every measured run (dense: 6 f >= 12 hq there);
 *   - the attention core unfused (Megatron's local path; torch's math SDPA), in b (a/t) s^2 16-bit
 *     score tensors: the softmax backward holds the gradients of the probabilities and of the scores
 *     (2) while the saved probabilities are alive; with dropout the bmm backward has released the
 *     dropped probabilities and the mask before (net 1). Measured on Megatron-LM: GPT (dropout)
 *     pipeline stage 0 +0.2% with 1, Llama (none) -1.7% with 1 and -0.6% with 2;
 *   - the MLP: the incoming gradient (under SP all-gathered for fc2's data gradient), the gradient
 *     of fc2's input and of the activation's inputs (two for a gated MLP), 16-bit; the routed
 *     experts the same per received token copy at the expert width, and the gradient of the
 *     received tokens (the permutation / all-to-all backward). Measured on torchtitan's FSDP2
 *     block (tests/data/fsdp/runs.csv) and Megatron-LM's (tests/data/megatron). */
static void build_transients(const pp_work *w, pp_layer *ly)
{
    ly->n_transient = 0;
    ly->bwd_work_bytes = ly->attn_work_bytes = 0;
    const double T = ly->tokens, h = ly->hidden;
    const pp_layer_attn *a = &ly->attn;
    double adr, hdr;
    pp_work_dropout(w, &adr, &hdr);
    double attn = a->fused ? T * ly->heads * (8.0 * a->qk_dim + 4.0 * a->v_dim + 4.0)
                           : 2.0 * a->scores * (adr > 0 ? 1.0 : 2.0);
    transient_add(ly, "attn.core.backward", attn, BIT(PP_RCM_CORE_ATTN));
    ly->attn_work_bytes = attn;
    const double act = ly->glu ? 6.0 : 4.0, dy = 2.0 * T * h;
    if (ly->moe)
        transient_add(ly, "experts.backward", dy + ly->expert_tokens * (act * ly->expert_ffn + 4.0 * h),
                      BIT(PP_RCM_MOE));
    else
        transient_add(ly, "mlp.backward", dy + T * act * ly->ffn, BIT(PP_RCM_MLP));
}

bool pp_layer_saved_kept(const pp_layer *ly, int i, pp_recompute rc, unsigned mods)
{
    if (rc == PP_RC_FULL) return false;
    return rc != PP_RC_SELECTIVE || !(ly->saved[i].drop_mods & mods);
}

double pp_layer_saved_bytes(const pp_layer *ly, pp_recompute rc, unsigned mods, double *paper_bytes)
{
    double bytes = 0, paper = 0;
    if (rc == PP_RC_FULL) {
        bytes = ly->full_input.elems * ly->full_input.bytes_per_elem;
        paper = bytes;
    } else if (rc != PP_RC_SELECTIVE || !mods) {
        bytes = ly->saved_bytes;
        paper = ly->saved_paper_bytes;
    } else if (mods == ly->saved_sel_mods && !paper_bytes) {
        bytes = ly->saved_sel_bytes;
    } else {
        unsigned drop = mods;
        for (int i = 0; i < ly->n_saved; i++) {
            const pp_layer_saved *t = &ly->saved[i];
            if (t->drop_mods & drop) continue;
            double x = t->elems * t->bytes_per_elem;
            bytes += x;
            if (t->paper) paper += x;
        }
    }
    if (paper_bytes) *paper_bytes = paper;
    return bytes;
}

/* ------------------------------------------------------------------ the layer */

double pp_layer_tokens_routed(const pp_work *w, const pp_layout *l)
{
    return (double)l->mbs * (double)w->model.seq / (double)l->cp * (l->sp ? 1.0 / (double)l->tp : 1.0);
}

void pp_layer_build_parts(const pp_work *w, const pp_layout *l, int kind, unsigned parts, pp_layer *ly)
{
    const pp_model *m = &w->model;
    /* No memset: the search builds these for every candidate; every field read is set here. */
    ly->moe = (kind & PP_LAYER_MOE) && m->experts > 1;
    ly->window = (kind & PP_LAYER_WINDOW) && m->window > 0;
    ly->mtp = (kind & PP_LAYER_MTP) && m->mtp_layers > 0;
    ly->kind = (ly->moe ? PP_LAYER_MOE : 0) | (ly->window ? PP_LAYER_WINDOW : 0) | (ly->mtp ? PP_LAYER_MTP : 0);
    ly->mla = m->kv_lora_rank > 0;
    ly->titan = pp_work_fw(w)->titan_block && !ly->mla;
    ly->glu = pp_activations[m->act].gated;

    /* --- geometry */
    const double t = (double)l->tp, s = (double)m->seq;
    ly->tp = t;
    ly->cp = (double)l->cp;
    ly->mbs = (double)l->mbs;
    ly->hidden = (double)m->hidden;
    ly->seq = s;
    ly->tokens = ly->mbs * s / ly->cp;
    ly->rep = l->sp ? 1.0 / t : 1.0;
    ly->rep_titan = l->tp > 1 ? 1.0 / t : 1.0;
    ly->tokens_routed = pp_layer_tokens_routed(w, l);
    ly->heads = (double)m->heads / t;
    ly->kv_heads = kv_heads_rank(m, l->tp);
    ly->head_dim = (double)m->head_dim;
    ly->v_head_dim = (double)pp_model_v_head_dim(m);
    ly->q_width = ly->heads * ly->head_dim;
    ly->kv_width = ly->kv_heads * ly->head_dim;
    ly->v_width = ly->heads * ly->v_head_dim;
    ly->ffn = (double)m->ffn / t;
    ly->ep = (double)l->ep;
    ly->etp = (double)pp_layout_etp(l);
    if (ly->moe) {
        ly->experts = (double)m->experts;
        ly->topk = (double)(m->topk > 0 ? m->topk : 1);
        ly->local_experts = ly->experts / ly->ep;
        ly->expert_ffn = (double)pp_model_expert_ffn(m) / ly->etp;
        ly->shared_ffn = (double)m->shared_ffn / t;
        ly->expert_tokens = pp_layer_expert_tokens(w, l, ly->tokens, &ly->expert_tokens_mean);
    } else {
        ly->experts = ly->topk = ly->local_experts = 0;
        ly->expert_ffn = ly->shared_ffn = ly->expert_tokens = ly->expert_tokens_mean = 0;
    }

    /* --- attention core */
    pp_layer_attn *a = &ly->attn;
    a->batch_heads = ly->mbs * ly->heads;
    a->queries = s / ly->cp;
    a->keys = s;
    a->span = s;
    a->keys_avg = s / 2.0; /* causal: a query attends to the keys before it, s/2 on average */
    if (ly->window && (double)m->window < s) {
        double W = (double)m->window;
        a->span = W;
        a->keys_avg = W * (1.0 - W / (2.0 * s));
    }
    a->qk_dim = ly->mla ? (double)(m->qk_nope_dim + m->qk_rope_dim) : ly->head_dim;
    a->v_dim = ly->v_head_dim;
    a->fused = w->attention != PP_ATTN_UNFUSED;
    a->scores = a->batch_heads * a->queries * a->keys;

    ly->n_gemm = ly->n_ew = ly->n_coll = ly->n_saved = ly->n_param = ly->n_transient = 0;
    if (parts & PP_LAYER_GEMMS) build_gemms(w, ly);
    if (parts & PP_LAYER_EW) build_ew(w, l, ly);
    if (parts & PP_LAYER_COLLS) build_colls(w, l, ly);
    if (parts & PP_LAYER_SAVED) build_saved(w, l, ly);
    if (parts & PP_LAYER_PARAMS) build_params(w, l, ly);
    if (parts & PP_LAYER_TRANSIENTS) build_transients(w, ly);
}

void pp_layer_build(const pp_work *w, const pp_layout *l, int kind, pp_layer *out)
{
    pp_layer_build_parts(w, l, kind, PP_LAYER_ALL, out);
}

int pp_layer_gemm_shapes(const pp_work *w, const pp_layout *l, int kind, pp_layer_gemm *out, int max)
{
    pp_layer ly;
    pp_layer_build_parts(w, l, kind, PP_LAYER_GEMMS, &ly);
    for (int i = 0; i < ly.n_gemm && i < max; i++) out[i] = ly.gemm[i];
    return ly.n_gemm;
}

/* ------------------------------------------------------------------ model FLOPs */

double pp_layer_model_fwd_flops_per_token(const pp_model *m, double *attn_core)
{
    /* The description at one rank's full width (tp = cp = ep = 1, one sequence), Megatron's
     * shapes: 2 m n k per GEMM over the tokens (the router, the shared experts and the top-k
     * experts a token passes through), 2 x span x (q + v) per token for QK^T and AV. For GPT
     * (f = 4h, MHA) this is 24 h^2 + 4 s h per layer, the per-layer term of Narayanan et al.
     * SC'21 eq. 3. */
    pp_work w;
    memset(&w, 0, sizeof w);
    w.model = *m;
    w.framework = PP_FW_MEGATRON;
    pp_layout l;
    pp_layout_init(&l);
    int64_t cnt[PP_LAYER_KINDS];
    pp_model_layer_counts(m, 0, m->layers, cnt);
    double total = 0, core = 0;
    pp_layer ly;
    for (int k = 0; k < PP_LAYER_KINDS; k++) {
        if (!cnt[k]) continue;
        pp_layer_build_parts(&w, &l, k, PP_LAYER_GEMMS, &ly);
        double g = 0;
        for (int i = 0; i < ly.n_gemm; i++) {
            const pp_layer_gemm *x = &ly.gemm[i];
            g += 2.0 * x->m * x->n * x->k * x->count;
        }
        double n = (double)cnt[k];
        total += n * g / ly.tokens;
        core += n * 2.0 * ly.attn.span * ly.heads * (ly.attn.qk_dim + ly.attn.v_dim);
    }
    if (attn_core) *attn_core = core;
    return total + core + 2.0 * (double)m->hidden * (double)m->vocab;
}
