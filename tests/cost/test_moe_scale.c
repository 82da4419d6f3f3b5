/* MoE at scale: the terms the published MoE runs needed (tests/data/published/RESULTS.md, "MoE"),
 * through the request a user's flags build (pp_request_parse_line, pp_request_resolve):
 *   --moe-dispatcher flex   Megatron's flex dispatcher (DeepEP, HybridEP): a token goes once to
 *                           every rank and every other node that holds one of its experts. The
 *                           expected counts (layer.c, pp_layer_dispatch_fanout) against a
 *                           simulation of the routing they assume (uniform top-k, within
 *                           group-limited routing's groups), and the dispatch's time against the
 *                           bytes over the NIC and NVLink at the catalog's bandwidths (time.c);
 *   the host's pace         a dropless Megatron-Core MoE layer on the TransformerEngine stack takes
 *                           at least MOE_TE_HOST_LAYER_S (8.6 ms) per micro-batch, forward and
 *                           backward, where its GPU work is shorter; not with a capacity factor,
 *                           not on the local stack, not where the GPU work is longer. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check_run.h"
#include "pp_layer.h"

/* ------------------------------------------------------------------ the fan-out, simulated */

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void) /* xorshift64 */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* k distinct integers of [0, n) into out (partial Fisher-Yates over pool[]) */
static void draw(int *pool, int n, int k, int *out)
{
    for (int i = 0; i < k; i++) {
        int j = i + (int)(rng() % (uint64_t)(n - i));
        int t = pool[i];
        pool[i] = pool[j], pool[j] = t;
        out[i] = pool[i];
    }
}

/* Distinct ranks and other nodes per token, averaged over `samples` tokens routed uniformly (within
 * G groups of which M are picked, when G > 1), for E experts on ep EP positions of etp ranks each,
 * per_node ranks to a node, the sender on a random rank. */
static void simulate(int E, int k, int G, int M, int ep, int etp, int per_node, int samples, double *ranks,
                     double *other_nodes)
{
    static int experts[1024], groups[64], chosen[64], cand[1024];
    int n = ep * etp, nodes = n / per_node, gsize = G > 1 ? E / G : E;
    double sr = 0, sn = 0;
    for (int s = 0; s < samples; s++) {
        int pool = 0;
        if (G > 1) {
            for (int g = 0; g < G; g++) groups[g] = g;
            draw(groups, G, M, chosen);
            for (int i = 0; i < M; i++)
                for (int e = 0; e < gsize; e++) cand[pool++] = chosen[i] * gsize + e;
        } else {
            for (int e = 0; e < E; e++) cand[pool++] = e;
        }
        draw(cand, pool, k, experts);
        bool pos_hit[512] = {0}, node_hit[128] = {0};
        for (int i = 0; i < k; i++) {
            int p = experts[i] / (E / ep);
            pos_hit[p] = true;
            node_hit[p * etp / per_node] = true;
        }
        int src_node = (int)(rng() % (uint64_t)nodes), np = 0, nn = 0;
        for (int p = 0; p < ep; p++) np += pos_hit[p];
        for (int d = 0; d < nodes; d++) nn += node_hit[d] && d != src_node;
        sr += (double)(np * etp);
        sn += nn;
    }
    *ranks = sr / samples;
    *other_nodes = sn / samples;
}

static void fanout(void)
{
    static const struct {
        const char *what, *args;
        int per_node;
    } cases[] = {
        {"Qwen3-235B-A22B, 128 experts top-8, EP 32 over 4 nodes",
         "--model qwen3-235b-a22b --gpu h100-sxm --gpus 256 --tp 2 --pp 8 --ep 32 --etp 1 --sp --mbs 1 --gbs 2048", 8},
        {"Qwen3-30B-A3B, 128 experts top-8, EP 16 over 2 nodes",
         "--model qwen3-30b-a3b --gpu h100-sxm --gpus 16 --ep 16 --mbs 1 --gbs 1024", 8},
        {"Qwen3-30B-A3B, EP 8 within a node",
         "--model qwen3-30b-a3b --gpu h100-sxm --gpus 8 --ep 8 --mbs 1 --gbs 64", 8},
        {"Qwen3-30B-A3B, TP 2 x EP 8 with expert TP 2: 16 ranks over 2 nodes",
         "--model qwen3-30b-a3b --gpu h100-sxm --gpus 16 --tp 2 --sp --ep 8 --etp 2 --mbs 1 --gbs 64", 8},
        {"DeepSeek-V3, 256 experts top-8 in 8 groups of which 4 (node-limited), EP 64 over 8 nodes",
         "--model deepseek-v3 --gpu h800 --gpus 2048 --pp 16 --ep 64 --etp 1 --mbs 1 --gbs 15360", 8},
        {"DeepSeek-V3, EP 32 over 4 nodes: a node holds 2 of the 8 groups",
         "--model deepseek-v3 --gpu h800 --gpus 512 --pp 16 --ep 32 --etp 1 --mbs 1 --gbs 1024", 8},
        {"DeepSeek-V3, EP 8 within a node: a rank holds 32 experts, one group",
         "--model deepseek-v3 --gpu h800 --gpus 128 --pp 16 --ep 8 --etp 1 --mbs 1 --gbs 1024", 8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        static run r;
        if (!run_args(&r, cases[i].args)) continue;
        const pp_model *m = &r.res.work.model;
        const pp_layout *l = &r.res.layout;
        double ranks = 0, nodes = 0, sr = 0, sn = 0;
        pp_layer_dispatch_fanout(&r.res.work, l, cases[i].per_node, &ranks, &nodes);
        int etp = (int)pp_layout_etp(l);
        simulate((int)m->experts, (int)m->topk, (int)m->router_groups, (int)m->router_group_topk, (int)l->ep, etp,
                 cases[i].per_node, 200000, &sr, &sn);
        tap_near(ranks, sr, 0.01, "%s: %.3f distinct ranks per token (simulated %.3f)", cases[i].what, ranks, sr);
        if (sn > 0) tap_near(nodes, sn, 0.01, "%s: %.3f other nodes per token (simulated %.3f)", cases[i].what, nodes, sn);
        else tap_ok(nodes == 0, "%s: no other node (%g)", cases[i].what, nodes);
        run_free(&r);
    }
}

/* ------------------------------------------------------------------ the dispatch's time */

/* C(a, k) / C(b, k) */
static double ratio(double a, double b, double k)
{
    return exp(lgamma(a + 1) - lgamma(a - k + 1) - lgamma(b + 1) + lgamma(b - k + 1));
}

static void dispatch_time(void)
{
    /* Qwen3-235B-A22B as the Model Zoo ran it with DeepEP (EP 32, TP 2 with SP, micro-batch 1 of
     * 4096 tokens): a rank routes 2048 tokens of 4096 x 2 bytes; every other node (3 of 4, each with
     * 32 of the 128 experts) gets a token with probability 1 - C(96,8)/C(128,8); a dispatch takes the
     * NIC's share at 0.9 x 50 GB/s, the NVLink forwarding (C(124,8)/C(128,8) per rank, 7/8 of them
     * off the forwarder) being shorter; with the all-to-all dispatcher 24/32 of the 8 copies cross. */
    const char *base = "--model qwen3-235b-a22b --gpu h100-sxm --gpus 256 --tp 2 --pp 8 --ep 32 --etp 1 --sp --mbs 1 "
                       "--gbs 2048 --moe-grouped-gemm --layers 96";
    static run a, f;
    char args[512];
    snprintf(args, sizeof args, "%s --moe-dispatcher flex", base);
    if (!run_args(&a, base) || !run_args(&f, args)) return;
    const pp_gpu *g = &f.res.work.gpu;
    double row = 2048.0 * 4096 * 2, nodes = 3 * (1 - ratio(96, 128, 8)), ranks = 32 * (1 - ratio(124, 128, 8));
    double net = row * nodes / (0.9 * g->internode_gbs * 1e9), nvl = row * ranks * 7 / 8 / (0.75 * g->nvlink_gbs * 1e9);
    double lat = 3 * g->intra_latency_s + 2 * g->inter_latency_s;
    double want = 2 * ((net > nvl ? net : nvl) + lat);
    pp_time_ctx ca, cf;
    pp_time_layer la, lf;
    pp_time_ctx_init(&ca, &a.res.work, NULL);
    pp_time_ctx_init(&cf, &f.res.work, NULL);
    pp_time_layer_get(&ca, &a.res.layout, &la);
    pp_time_layer_get(&cf, &f.res.layout, &lf);
    tap_ok(net > nvl, "Qwen3-235B EP 32 flex: the NIC's share (%.3f ms) paces the dispatch, not NVLink (%.3f ms)",
           net * 1e3, nvl * 1e3);
    tap_near(lf.fwd_ep_s, want, 1e-9, "Qwen3-235B EP 32 flex: dispatch + combine forward %.3f ms (2 x %.0f MB over the NIC)",
             lf.fwd_ep_s * 1e3, row * nodes / 1e6);
    tap_near(lf.bwd_ep_s, want, 1e-9, "Qwen3-235B EP 32 flex: the same backward");
    double a2a = 2 * (row * 8 * 24 / 32 / (0.9 * g->internode_gbs * 1e9) + row * 8 * 7 / 32 / (0.75 * g->nvlink_gbs * 1e9) +
                      lat);
    tap_near(la.fwd_ep_s, a2a, 1e-9, "Qwen3-235B EP 32 alltoall: 2 x (6 of the 8 copies over the NIC, 7/32 over NVLink) = %.3f ms",
             la.fwd_ep_s * 1e3);
    run_free(&a);
    run_free(&f);
}

/* ------------------------------------------------------------------ the host's pace */

static double layer_total(run *r)
{
    pp_time_ctx c;
    pp_time_layer ly;
    pp_time_ctx_init(&c, &r->res.work, NULL);
    pp_time_layer_get(&c, &r->res.layout, &ly);
    return ly.fwd_compute_s + ly.fwd_tp_s + ly.fwd_cp_s + ly.fwd_ep_s + ly.bwd_compute_s + ly.bwd_tp_s + ly.bwd_cp_s +
           ly.bwd_ep_s;
}

static void host_pace(void)
{
    /* Qwen3-30B-A3B on 8 H100, EP 8, FP8, grouped experts: a capacity factor of 1.0 with balanced
     * routing gives the dropless layer's GPU work exactly (the same token copies), without the pace.
     * The dropless layer takes max(GPU, the host's 8.6 - 3.5 ms) + the dispatcher sync's 3.5 ms
     * (time.c MOE_TE_HOST_LAYER_S, MOE_SYNC_STALL_S). */
    const double pace = 8.6e-3 - 3.5e-3, stall = 3.5e-3;
    const char *q = "--model qwen3-30b-a3b --gpu h100-sxm --gpus 8 --ep 8 --precision fp8 --moe-grouped-gemm --gbs 64";
    for (int mbs = 1; mbs <= 8; mbs *= 8) {
        static run d, cf;
        char a1[512], a2[512];
        snprintf(a1, sizeof a1, "%s --mbs %d", q, mbs);
        snprintf(a2, sizeof a2, "%s --mbs %d --capacity-factor 1.0", q, mbs);
        if (!run_args(&d, a1) || !run_args(&cf, a2)) continue;
        double td = layer_total(&d), tc = layer_total(&cf);
        if (mbs == 1)
            tap_ok(fabs(td - (fmax(tc, pace) + stall)) < 1e-12,
                   "Qwen3-30B EP 8, micro-batch 1: the GPU's %.2f ms, the dropless layer max(it, the host's 5.10 ms) "
                   "+ the sync's 3.50 (%.4f)", tc * 1e3, td * 1e3);
        else
            tap_ok(tc > pace && fabs(td - (tc + stall)) < 1e-12,
                   "Qwen3-30B EP 8, micro-batch 8: the GPU's %.2f ms is longer than the host's, the sync's 3.50 ms on "
                   "top (%.2f)", tc * 1e3, td * 1e3);
        run_free(&d);
        run_free(&cf);
    }
    /* the local stack (SequentialMLP, fitted host figures of its own: calibrate) keeps the launch floor */
    static run loc;
    if (run_args(&loc, "--model qwen3-30b-a3b --gpu h100-sxm --gpus 8 --ep 8 --mbs 1 --gbs 64 --impl local "
                       "--attention unfused")) {
        double t = layer_total(&loc);
        tap_ok(t > 0 && fabs(t - 8.6e-3) > 1e-6, "--impl local: no TransformerEngine host pace (%.2f ms)", t * 1e3);
        run_free(&loc);
    }
}

int main(void)
{
    if (!catalog_open()) return tap_done();
    fanout();
    dispatch_time();
    host_pace();
    pp_catalog_free(&cat);
    return tap_done();
}
