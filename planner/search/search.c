/* Layout search. See pp_search.h for the contract.
 *
 * Loop nest, outermost first, with the rules checked at each level:
 *   tp   tp_shape (tp | heads, KV heads, FFN), tp_cross_node, gpus (tp | gpus)
 *   cp   gpus (tp cp | gpus), cp (2 cp | seq, flash attention)
 *   ep   ep (ep | experts)
 *   etp  moe (etp | expert FFN, etp inside a node); etp is 1 or tp for an MoE model (the two
 *        settings Megatron-Core recipes use: experts split like the dense layers, or whole)
 *   mbs  (mbs | gbs by construction of its list)
 *   sp   redundant (sp needs tp > 1), moe (Megatron-Core's MoE with tp > 1 needs sp)
 *   pp   gpus (tp cp pp | gpus, fixed dp), pp_layers, ep (ep etp | tp cp dp), gbs (dp mbs | gbs)
 *   vpp  vpp (pp >= 2, pp | micro-batches; pp vpp | L, or the balanced split of
 *        pp_layout_vstage_layers for a fixed vpp and, with vpp 2, 4 or 8, for a pp that has no
 *        uniform interleaving; a fixed split by virtual stage as given)
 *   recompute
 *   zero / dist-opt   redundant (sharding over one rank), framework (DeepSpeed ZeRO-2/3 + PP)
 *   leaf memory (oom), then time
 * The layer times depend only on (tp, cp, ep, etp, mbs, sp): they are computed once per block, the
 * first time a leaf of the block fits in memory. */
#include "pp_search.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pp_memory.h"

const char *const pp_prune_names[PP_PRUNE_COUNT] = {
    "tp_shape", "tp_cross_node", "gpus", "cp", "ep", "moe", "sp", "redundant", "pp_layers", "gbs", "vpp",
    "framework", "oom", "margin",
};

const char *const pp_prune_help[PP_PRUNE_COUNT] = {
    "tp does not divide the attention heads, KV heads or FFN",
    "the TP group would span nodes (--allow-cross-node-tp to search it)",
    "tp x pp x cp does not divide the GPUs (or misses the fixed --dp)",
    "context parallel: sequence not divisible by 2 cp, or attention not flash",
    "expert parallel: ep does not divide the experts, or ep x etp the tp x cp x dp ranks of a stage",
    "MoE: TP > 1 without sequence parallelism (Megatron-Core refuses it), expert TP across nodes, "
    "or etp not dividing the expert FFN",
    "sequence parallel: sequence / cp not divisible by tp, or Megatron's local norms (--impl local)",
    "the same run as another candidate (sp with tp 1, optimizer sharding over 1 rank)",
    "more pipeline stages (or recomputed layers) than layers",
    "global batch not divisible by dp x micro-batch",
    "interleaving needs pp >= 2, micro-batches a multiple of pp, and pp x vpp dividing the layers or (where pp "
    "has no uniform interleaving, vpp 2, 4 or 8) at most the layers + 2",
    "the framework cannot run it (DeepSpeed ZeRO-2/3 with pipeline parallelism; nanotron: interleaving, selective recompute)",
    "does not fit in GPU memory (memory model: peak + reserved > capacity)",
    "fits, but inside the memory margin plan keeps free (--max-mem-frac sets it)",
};

void pp_search_params_init(pp_search_params *p)
{
    memset(p, 0, sizeof *p);
    pp_layout_init(&p->fixed_layout);
    p->top = 5;
}

/* ------------------------------------------------------------------ value lists */

typedef struct {
    int64_t *v;
    int64_t n;
} vlist;

/* Divisors of n in increasing order, those <= cap. */
static pp_status divisors(int64_t n, int64_t cap, vlist *out, pp_error *err)
{
    out->n = 0;
    out->v = NULL;
    int64_t count = 0;
    for (int64_t d = 1; d <= n / d; d++)
        if (n % d == 0) count += (d == n / d) ? 1 : 2;
    out->v = malloc((size_t)(count > 0 ? count : 1) * sizeof *out->v);
    if (!out->v) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    int64_t lo = 0, hi = count;
    for (int64_t d = 1; d <= n / d; d++) {
        if (n % d) continue;
        out->v[lo++] = d;
        if (d != n / d) out->v[--hi] = n / d;
    }
    int64_t k = 0;
    for (int64_t i = 0; i < count; i++)
        if (out->v[i] <= cap) out->v[k++] = out->v[i];
    out->n = k;
    return PP_OK;
}

static pp_status single(int64_t value, vlist *out, pp_error *err)
{
    out->v = malloc(sizeof *out->v);
    if (!out->v) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    out->v[0] = value;
    out->n = 1;
    return PP_OK;
}

/* ------------------------------------------------------------------ ordering and heaps */

static int layout_cmp(const pp_layout *a, const pp_layout *b)
{
    int64_t ka[] = {a->tp, a->pp, a->cp, a->ep, a->etp, a->vpp, a->mbs, a->recompute, a->zero, a->dist_opt, a->sp};
    int64_t kb[] = {b->tp, b->pp, b->cp, b->ep, b->etp, b->vpp, b->mbs, b->recompute, b->zero, b->dist_opt, b->sp};
    for (size_t i = 0; i < sizeof ka / sizeof ka[0]; i++)
        if (ka[i] != kb[i]) return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

bool pp_search_better(const pp_search_candidate *a, const pp_search_candidate *b)
{
    double ta = a->time.step_time_s, tb = b->time.step_time_s;
    /* Equal within rounding (e.g. recompute choices that cost nothing): more headroom wins. */
    double tol = 1e-9 * (ta > tb ? ta : tb);
    if (ta < tb - tol) return true;
    if (ta > tb + tol) return false;
    if (a->headroom_bytes != b->headroom_bytes) return a->headroom_bytes > b->headroom_bytes;
    return layout_cmp(&a->layout, &b->layout) < 0;
}

/* Closer to fitting: less memory first. */
static bool oom_better(const pp_search_candidate *a, const pp_search_candidate *b)
{
    if (a->worst_bytes != b->worst_bytes) return a->worst_bytes < b->worst_bytes;
    return pp_search_better(a, b);
}

typedef bool (*cand_less)(const pp_search_candidate *, const pp_search_candidate *);

/* A bounded heap of the best `cap` candidates; the root is the worst kept (a max-heap under
 * `better`), so a newcomer only has to beat the root. */
typedef struct {
    pp_search_candidate *a;
    int64_t n, cap;
    cand_less better;
} top_heap;

static void heap_down(top_heap *h, int64_t i)
{
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < h->n && h->better(&h->a[w], &h->a[l])) w = l;
        if (r < h->n && h->better(&h->a[w], &h->a[r])) w = r;
        if (w == i) return;
        pp_search_candidate t = h->a[i];
        h->a[i] = h->a[w];
        h->a[w] = t;
        i = w;
    }
}

static void heap_up(top_heap *h, int64_t i)
{
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!h->better(&h->a[p], &h->a[i])) return;
        pp_search_candidate t = h->a[i];
        h->a[i] = h->a[p];
        h->a[p] = t;
        i = p;
    }
}

/* Would c enter the heap? */
static bool heap_wants(const top_heap *h, const pp_search_candidate *c)
{
    return h->n < h->cap || h->better(c, &h->a[0]);
}

static void heap_push(top_heap *h, const pp_search_candidate *c)
{
    if (h->n < h->cap) {
        h->a[h->n] = *c;
        heap_up(h, h->n++);
    } else if (h->better(c, &h->a[0])) {
        h->a[0] = *c;
        heap_down(h, 0);
    }
}

/* The same parallel shape: tp, pp, dp, cp, ep, etp. */
static bool same_shape(const pp_layout *a, const pp_layout *b)
{
    return a->tp == b->tp && a->pp == b->pp && a->dp == b->dp && a->cp == b->cp && a->ep == b->ep &&
           pp_layout_etp(a) == pp_layout_etp(b);
}

/* The shapes heap keeps one candidate per shape: a newcomer replaces its shape's entry when
 * better, or enters as a new shape. O(cap) per newcomer, and only newcomers that beat the
 * heap's worst (rare once it is full) get that far. */
static void shapes_push(top_heap *h, const pp_search_candidate *c)
{
    for (int64_t i = 0; i < h->n; i++) {
        if (!same_shape(&h->a[i].layout, &c->layout)) continue;
        if (h->better(c, &h->a[i])) {
            h->a[i] = *c;
            heap_down(h, i); /* better: it can only sink (the root is the worst kept) */
        }
        return;
    }
    heap_push(h, c);
}

/* Empty the heap into out[] best first. */
static int64_t heap_drain(top_heap *h, pp_search_candidate *out)
{
    int64_t n = h->n;
    for (int64_t k = n - 1; k >= 0; k--) {
        out[k] = h->a[0];
        h->a[0] = h->a[--h->n];
        heap_down(h, 0);
    }
    return n;
}

/* ------------------------------------------------------------------ the search */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { D_TP, D_CP, D_EP, D_ETP, D_MBS, D_SP, D_PP, D_VPP, D_RC, D_OPT, D_COUNT };

/* The virtual stages per rank the search tries where they do not divide the layers: 2, 4 and 8,
 * what the published runs with uneven interleaving use but one (tests/data/published/runs.csv:
 * Llama 3.1 405B pp 8 x vpp 8, DeepSeek-V3 and Qwen3-235B pp 8 x vpp 4, Kimi K2 and DeepSeek-V3
 * pp 4 x vpp 8; Qwen3-235B pp 32 x vpp 3, which check prices as given). Each one more value
 * widens the space of such a pp by a vpp value, and every layout of an uneven split is priced
 * stage by stage: three keep the search of a 61-layer model within a few times its uniform
 * one. */
#define UNEVEN_VPP_MAX 8
static bool uneven_vpp(int64_t v) { return v == 2 || v == 4 || v == 8; }

/* One optimizer-sharding choice. */
typedef struct { int zero; bool dist_opt; } opt_choice;

pp_status pp_search_run(const pp_work *w, const pp_search_params *params, pp_search_candidate *out,
                        pp_search_result *res, pp_error *err)
{
    double t0 = now_s();
    memset(res, 0, sizeof *res);
    const pp_model *m = &w->model;
    const pp_layout *fx = &params->fixed_layout;
    const unsigned fix = params->fixed;
    pp_status st = PP_OK;
    vlist L[D_COUNT];
    memset(L, 0, sizeof L);
    pp_search_candidate *heap_mem = NULL, *oom_mem = NULL, *shape_mem = NULL;
    opt_choice opts[4];
    int n_opts = 0;

    if (params->top < 1 || params->top > PP_SEARCH_MAX_TOP) {
        st = pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--top must be between 1 and %d",
                          PP_SEARCH_MAX_TOP);
        goto done;
    }
    if (w->gpus < 1 || w->gbs < 1 || m->layers < 1) {
        st = pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "search: the work has no GPUs, batch or layers");
        goto done;
    }
    if (w->gpu.memory_bytes <= 0) {
        st = pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "GPU '%s' has no memory size", w->gpu.name);
        goto done;
    }
    /* Fixed optimizer sharding must suit the framework (the search never proposes otherwise). */
    if ((fix & PP_SEARCH_FIX_ZERO) && fx->zero > 0 && w->framework == PP_FW_MEGATRON && !w->stack.megatron_fsdp) {
        st = pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                          "--zero %d is DeepSpeed/FSDP; with --framework megatron use --dist-opt", fx->zero);
        goto done;
    }
    if ((fix & PP_SEARCH_FIX_DIST_OPT) && fx->dist_opt && w->framework != PP_FW_MEGATRON) {
        st = pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--dist-opt is Megatron's; with --framework %s use --zero 1",
                          pp_framework_names[w->framework]);
        goto done;
    }
    {
        /* the fixed fields against the framework's row; the search never proposes the rest */
        pp_layout fl;
        pp_layout_init(&fl);
        fl.zero = (fix & PP_SEARCH_FIX_ZERO) ? fx->zero : 0;
        fl.vpp = (fix & PP_SEARCH_FIX_VPP) ? fx->vpp : 1;
        fl.recompute = (fix & PP_SEARCH_FIX_RECOMPUTE) ? fx->recompute : PP_RC_NONE;
        fl.recompute_layers = fx->recompute_layers;
        fl.offload = (fix & PP_SEARCH_FIX_OFFLOAD) ? fx->offload : PP_OFF_NONE;
        if ((st = pp_layout_framework_check(w, &fl, err)) != PP_OK) goto done;
    }
    if ((fix & PP_SEARCH_FIX_ZERO) && (fix & PP_SEARCH_FIX_DIST_OPT) && fx->zero > 0 && fx->dist_opt) {
        st = pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--zero and --dist-opt exclude each other");
        goto done;
    }
    if (fx->recompute_layers > 0 && (!(fix & PP_SEARCH_FIX_RECOMPUTE) || fx->recompute != PP_RC_FULL)) {
        st = pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--recompute-layers needs --recompute full");
        goto done;
    }

    /* Value lists. Sizes are divisors of the GPU count (tp, cp, pp), of the experts (ep), of the
     * layers (vpp) and of the global batch (mbs); the rules prune the rest. */
    const int64_t G = w->gpus;
#define LIST(d, bit, val, gen)                                         \
    do {                                                               \
        st = (fix & (bit)) ? single((val), &L[d], err) : (gen);        \
        if (st != PP_OK) goto done;                                    \
    } while (0)
    LIST(D_TP, PP_SEARCH_FIX_TP, fx->tp, divisors(G, G, &L[D_TP], err));
    LIST(D_CP, PP_SEARCH_FIX_CP, fx->cp, divisors(G, G, &L[D_CP], err));
    LIST(D_EP, PP_SEARCH_FIX_EP, fx->ep,
         m->experts > 1 ? divisors(m->experts, G, &L[D_EP], err) : single(1, &L[D_EP], err));
    /* Expert TP: 0 stands for "= tp"; an MoE model also tries 1 (whole experts per rank, as
     * DeepSeek-V3's recipe runs them). */
    if (fix & PP_SEARCH_FIX_ETP) {
        LIST(D_ETP, PP_SEARCH_FIX_ETP, fx->etp, PP_OK);
    } else if (m->experts > 1) {
        L[D_ETP].v = malloc(2 * sizeof(int64_t));
        if (!L[D_ETP].v) {
            st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            goto done;
        }
        L[D_ETP].v[0] = 0;
        L[D_ETP].v[1] = 1;
        L[D_ETP].n = 2;
    } else {
        LIST(D_ETP, 0, 0, single(0, &L[D_ETP], err));
    }
    LIST(D_MBS, PP_SEARCH_FIX_MBS, fx->mbs, divisors(w->gbs, w->gbs, &L[D_MBS], err));
    LIST(D_PP, PP_SEARCH_FIX_PP, fx->pp, divisors(G, G, &L[D_PP], err));
    LIST(D_VPP, PP_SEARCH_FIX_VPP, fx->vpp, divisors(m->layers, m->layers, &L[D_VPP], err));
#undef LIST
    /* sp and recompute: small enumerations */
    L[D_SP].v = malloc(2 * sizeof(int64_t));
    L[D_RC].v = malloc(3 * sizeof(int64_t));
    if (!L[D_SP].v || !L[D_RC].v) {
        st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        goto done;
    }
    if (fix & PP_SEARCH_FIX_SP) {
        L[D_SP].v[0] = fx->sp;
        L[D_SP].n = 1;
    } else {
        L[D_SP].v[0] = 0;
        L[D_SP].v[1] = 1;
        L[D_SP].n = 2;
    }
    if (fix & PP_SEARCH_FIX_RECOMPUTE) {
        L[D_RC].v[0] = fx->recompute;
        L[D_RC].n = 1;
    } else {
        for (int i = 0; i < PP_RC_COUNT; i++) L[D_RC].v[i] = i;
        L[D_RC].n = PP_RC_COUNT;
    }
    /* Optimizer sharding: Megatron {none, dist-opt} (Megatron-FSDP: --zero 1, 2, 3); DeepSpeed ZeRO {0,1,2,3}; nanotron {0,1}; FSDP {NO_SHARD,
     * SHARD_GRAD_OP (2), FULL_SHARD (3)}. A fixed --zero / --dist-opt narrows it. */
    if (fix & (PP_SEARCH_FIX_ZERO | PP_SEARCH_FIX_DIST_OPT)) {
        opts[n_opts++] = (opt_choice){(fix & PP_SEARCH_FIX_ZERO) ? fx->zero : 0,
                                      (fix & PP_SEARCH_FIX_DIST_OPT) ? fx->dist_opt : false};
    } else if (w->framework == PP_FW_MEGATRON && w->stack.megatron_fsdp) {
        for (int z = 1; z <= 3; z++) opts[n_opts++] = (opt_choice){z, false}; /* Megatron-FSDP's strategies */
    } else if (w->framework == PP_FW_MEGATRON) {
        opts[n_opts++] = (opt_choice){0, false};
        opts[n_opts++] = (opt_choice){0, true};
    } else if (!pp_work_fw(w)->block_sharding) {
        /* DeepSpeed ZeRO 0-3, nanotron's zero_stage 0-1: the row's stages */
        for (int z = 0; z <= pp_work_fw(w)->max_zero; z++) opts[n_opts++] = (opt_choice){z, false};
    } else {
        opts[n_opts++] = (opt_choice){0, false};
        opts[n_opts++] = (opt_choice){2, false};
        opts[n_opts++] = (opt_choice){3, false};
    }
    L[D_OPT].n = n_opts;
    L[D_OPT].v = NULL;

    /* inner[d] = candidates below one value of dimension d (product of the deeper lists). */
    int64_t inner[D_COUNT + 1];
    inner[D_COUNT] = 1;
    for (int d = D_COUNT - 1; d >= 0; d--) inner[d] = inner[d + 1] * L[d].n;
    res->evaluated = inner[0];
    int64_t *pruned = res->pruned;

    heap_mem = malloc((size_t)params->top * sizeof *heap_mem);
    oom_mem = malloc((size_t)params->top * sizeof *oom_mem);
    if (!heap_mem || !oom_mem) {
        st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        goto done;
    }
    top_heap heap = {heap_mem, 0, params->top, pp_search_better};
    top_heap oomh = {oom_mem, 0, params->top, oom_better};
    if (params->shapes && params->shapes_cap > 0) {
        shape_mem = malloc((size_t)params->shapes_cap * sizeof *shape_mem);
        if (!shape_mem) {
            st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            goto done;
        }
    }
    top_heap shapes = {shape_mem, 0, shape_mem ? params->shapes_cap : 0, pp_search_better};

    pp_time_opts topts;
    if (params->opts) topts = *params->opts;
    else pp_time_opts_default(w, &topts);
    pp_time_ctx tctx;
    pp_time_ctx_init(&tctx, w, &topts);
    const double capacity = w->gpu.memory_bytes;
    const double plan_bytes = pp_memory_plan_bytes(w); /* capacity less the margin plan keeps */
    const int64_t gpn = pp_work_nvlink_gpus(w);
    const bool flash = w->attention == PP_ATTN_FLASH;

    int64_t extra_vpp[UNEVEN_VPP_MAX];
    pp_layout l;
    pp_layout_init(&l);
    l.offload = (fix & PP_SEARCH_FIX_OFFLOAD) ? fx->offload : PP_OFF_NONE;
    l.recompute_layers = fx->recompute_layers;
    l.recompute_modules = fx->recompute_modules; /* read only under selective recompute */
    pp_search_candidate cand;
    memset(&cand, 0, sizeof cand);

    pp_param_count pc;
    pp_model_params(m, &pc);
    const bool moe = m->experts > 1;
    for (int64_t i_tp = 0; i_tp < L[D_TP].n; i_tp++) {
        const int64_t tp = L[D_TP].v[i_tp];
        if (m->heads % tp || (pc.dense_layers > 0 && m->ffn % tp) || m->shared_ffn % tp ||
            (m->kv_heads % tp && tp % m->kv_heads)) {
            pruned[PP_PRUNE_TP_SHAPE] += inner[D_TP + 1];
            continue;
        }
        if (!params->allow_cross_node_tp && (tp > gpn || gpn % tp)) {
            pruned[PP_PRUNE_TP_NODE] += inner[D_TP + 1];
            continue;
        }
        if (G % tp) {
            pruned[PP_PRUNE_GPUS] += inner[D_TP + 1];
            continue;
        }
        l.tp = tp;
        for (int64_t i_cp = 0; i_cp < L[D_CP].n; i_cp++) {
            const int64_t cp = L[D_CP].v[i_cp];
            if (G % (tp * cp)) {
                pruned[PP_PRUNE_GPUS] += inner[D_CP + 1];
                continue;
            }
            if (cp > 1 && (m->seq % (2 * cp) || !flash)) {
                pruned[PP_PRUNE_CP] += inner[D_CP + 1];
                continue;
            }
            l.cp = cp;
            for (int64_t i_ep = 0; i_ep < L[D_EP].n; i_ep++) {
                const int64_t ep = L[D_EP].v[i_ep];
                if (ep > 1 && (m->experts <= 1 || m->experts % ep)) {
                    pruned[PP_PRUNE_EP] += inner[D_EP + 1];
                    continue;
                }
                l.ep = ep;
                for (int64_t i_etp = 0; i_etp < L[D_ETP].n; i_etp++) {
                const int64_t etp_v = L[D_ETP].v[i_etp], etp = etp_v > 0 ? etp_v : tp;
                if (i_etp > 0 && etp == (L[D_ETP].v[0] > 0 ? L[D_ETP].v[0] : tp)) {
                    pruned[PP_PRUNE_REDUNDANT] += inner[D_ETP + 1]; /* etp 1 with tp 1: the same run */
                    continue;
                }
                if (moe && (pp_model_expert_ffn(m) % etp || etp > gpn || gpn % etp)) {
                    pruned[PP_PRUNE_MOE] += inner[D_ETP + 1];
                    continue;
                }
                l.etp = etp_v;
                for (int64_t i_mbs = 0; i_mbs < L[D_MBS].n; i_mbs++) {
                    l.mbs = L[D_MBS].v[i_mbs];
                    for (int64_t i_sp = 0; i_sp < L[D_SP].n; i_sp++) {
                        l.sp = L[D_SP].v[i_sp] != 0;
                        if (l.sp && tp < 2) {
                            pruned[PP_PRUNE_REDUNDANT] += inner[D_SP + 1];
                            continue;
                        }
                        /* Megatron splits the [s/cp, b, h] activations along the sequence over
                         * the TP ranks, and its local (torch) norms refuse sequence parallelism
                         * (pp_layout_validate says where each rule comes from). */
                        if (l.sp && ((m->seq / cp) % tp || pp_work_torch_norms(w))) {
                            pruned[PP_PRUNE_SP] += inner[D_SP + 1];
                            continue;
                        }
                        /* Megatron-Core: "During training, performance may degrade if MoE and
                         * tensor parallelism are enabled without also enabling sequence
                         * parallelism" is an error at the first forward (transformer_config.py /
                         * moe_layer.py); the device runs confirmed it. */
                        if (moe && tp > 1 && !l.sp && w->framework == PP_FW_MEGATRON) {
                            pruned[PP_PRUNE_MOE] += inner[D_SP + 1];
                            continue;
                        }
                        bool have_layer = false;
                        pp_time_layer ly;
                        for (int64_t i_pp = 0; i_pp < L[D_PP].n; i_pp++) {
                            const int64_t pp = L[D_PP].v[i_pp];
                            const int64_t mp = tp * cp * pp;
                            if (G % mp || ((fix & PP_SEARCH_FIX_DP) && G / mp != fx->dp)) {
                                pruned[PP_PRUNE_GPUS] += inner[D_PP + 1];
                                continue;
                            }
                            const int64_t dp = G / mp;
                            if (pp > m->layers ||
                                (l.recompute_layers > 0 && l.recompute_layers > (m->layers + pp - 1) / pp)) {
                                pruned[PP_PRUNE_PP_LAYERS] += inner[D_PP + 1];
                                continue;
                            }
                            if (moe && (tp * cp * dp) % (etp * ep)) {
                                pruned[PP_PRUNE_EP] += inner[D_PP + 1];
                                continue;
                            }
                            if (w->gbs % (dp * l.mbs)) {
                                pruned[PP_PRUNE_GBS] += inner[D_PP + 1];
                                continue;
                            }
                            const int64_t micro = w->gbs / (dp * l.mbs);
                            l.pp = pp;
                            l.dp = dp;
                            /* Interleaving where pp x vpp does not divide the layers: the balanced
                             * split (pp_layout_vstage_layers) for a fixed --vpp, as check prices
                             * it; searched where this pp has no uniform interleaving (pp does not
                             * divide the layers, or leaves one per stage), up to vpp
                             * UNEVEN_VPP_MAX. Those values beyond the divisor list are counted
                             * into `evaluated` as they are tried. */
                            const bool uneven_ok = (fix & PP_SEARCH_FIX_VPP) || m->layers % pp || m->layers == pp;
                            int64_t n_vpp = L[D_VPP].n;
                            if (!(fix & PP_SEARCH_FIX_VPP) && uneven_ok)
                                for (int64_t v = 2; v <= UNEVEN_VPP_MAX; v++)
                                    if (uneven_vpp(v) && m->layers % v) {
                                        extra_vpp[n_vpp++ - L[D_VPP].n] = v;
                                        res->evaluated += inner[D_VPP + 1];
                                    }
                            const pp_layout *given = (fx->vstage_layers && pp == fx->pp) ? fx : NULL;
                            for (int64_t i_v = 0; i_v < n_vpp; i_v++) {
                                const int64_t vpp = i_v < L[D_VPP].n ? L[D_VPP].v[i_v] : extra_vpp[i_v - L[D_VPP].n];
                                const bool divides = m->layers % (pp * vpp) == 0;
                                const bool uneven = vpp > 1 && !divides && !given &&
                                                    ((fix & PP_SEARCH_FIX_VPP) || uneven_vpp(vpp));
                                if (vpp > 1 && (pp < 2 || micro % pp ||
                                                (!divides && !given &&
                                                 (!uneven_ok || !uneven || pp * vpp > m->layers + 2 ||
                                                  pp * vpp > PP_MAX_VSTAGES || pp > PP_MAX_STAGES)))) {
                                    pruned[PP_PRUNE_VPP] += inner[D_VPP + 1];
                                    continue;
                                }
                                l.vpp = vpp;
                                l.vstage_layers = given && vpp == fx->vpp ? fx->vstage_layers : NULL;
                                for (int64_t i_rc = 0; i_rc < L[D_RC].n; i_rc++) {
                                    l.recompute = (pp_recompute)L[D_RC].v[i_rc];
                                    for (int i_o = 0; i_o < n_opts; i_o++) {
                                        l.zero = opts[i_o].zero;
                                        l.dist_opt = opts[i_o].dist_opt;
                                        /* the same run as no sharding, unless the user asked for it */
                                        if ((l.zero > 0 || l.dist_opt) && dp * cp == 1 &&
                                            !(fix & (PP_SEARCH_FIX_ZERO | PP_SEARCH_FIX_DIST_OPT))) {
                                            pruned[PP_PRUNE_REDUNDANT]++;
                                            continue;
                                        }
                                        /* what the framework has not (pp_fw_row; pp_layout_validate) */
                                        if ((l.vpp > 1 && pp_work_fw(w)->no_interleave) ||
                                            (l.recompute == PP_RC_SELECTIVE && pp_work_fw(w)->full_recompute_only)) {
                                            pruned[PP_PRUNE_FRAMEWORK]++;
                                            continue;
                                        }
                                        if (w->framework == PP_FW_DEEPSPEED && l.zero >= 2 && pp > 1) {
                                            pruned[PP_PRUNE_FRAMEWORK]++;
                                            continue;
                                        }
                                        /* Megatron's CPU offloading: pp 1, no recompute (pp_layout_validate) */
                                        if (w->stack.cpu_offload_layers > 0 && (pp > 1 || l.recompute != PP_RC_NONE)) {
                                            pruned[PP_PRUNE_FRAMEWORK]++;
                                            continue;
                                        }
                                        /* leaf: memory, then time */
                                        res->leaves++;
                                        double peak = 0;
                                        double worst = pp_memory_worst_bytes(w, &l, &peak);
                                        bool fits = worst <= plan_bytes;
                                        cand.layout = l;
                                        cand.peak_bytes = peak;
                                        cand.worst_bytes = worst;
                                        cand.headroom_bytes = capacity - worst;
                                        cand.fits = fits;
                                        if (!fits) {
                                            pruned[worst <= capacity ? PP_PRUNE_MARGIN : PP_PRUNE_OOM]++;
                                            /* Only needed when nothing fits: keep the closest. */
                                            if (res->fitting == 0 &&
                                                (oomh.n < oomh.cap || worst < oomh.a[0].worst_bytes)) {
                                                if (!have_layer) {
                                                    pp_time_layer_get(&tctx, &l, &ly);
                                                    have_layer = true;
                                                }
                                                pp_time_step(&tctx, &l, &ly, &cand.time);
                                                heap_push(&oomh, &cand);
                                            }
                                            continue;
                                        }
                                        res->fitting++;
                                        if (!have_layer) {
                                            pp_time_layer_get(&tctx, &l, &ly);
                                            have_layer = true;
                                        }
                                        pp_time_step(&tctx, &l, &ly, &cand.time);
                                        if (heap_wants(&heap, &cand)) heap_push(&heap, &cand);
                                        if (shapes.cap && heap_wants(&shapes, &cand))
                                            shapes_push(&shapes, &cand);
                                    }
                                }
                            }
                        }
                    }
                }
                }
            }
        }
    }

    if (res->fitting > 0) {
        res->n = heap_drain(&heap, out);
    } else {
        res->none_fit = true;
        res->n = heap_drain(&oomh, out);
    }
    if (shapes.cap) res->n_shapes = heap_drain(&shapes, params->shapes);

done:
    for (int d = 0; d < D_COUNT; d++) free(L[d].v);
    free(heap_mem);
    free(oom_mem);
    free(shape_mem);
    res->search_time_s = now_s() - t0;
    return st;
}
