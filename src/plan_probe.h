/* plan --probe K [--probe-budget SECONDS] (issue 8): measure the K best candidates' own work on
 * the local GPUs with parplan-probe, compose it with the time model's schedule and re-rank.
 * plan_probe.c; called by cmd_plan.c. */
#ifndef PP_PLAN_PROBE_H
#define PP_PLAN_PROBE_H

#include <stdio.h>

#include "cli.h"
#include "pp_search.h"

typedef struct {
    char path[4096];          /* parplan-probe */
    int gpus;                 /* visible local GPUs */
} pp_plan_probe_env;

typedef struct {
    bool probed;              /* the layer was measured (source "probe") */
    bool cached;              /* every measurement came from the cache */
    double layer_fwd_ms, layer_fwdbwd_ms; /* the main layer kind's (MoE, MLA: composed of its parts) */
    /* MoE and MLA layouts: the parts measured apart (0: not measured), composed by
     * pp_time_layer_compose into layer_* */
    bool composed;
    bool attn_mla;                          /* attn_* is the MLA block (mla probe), else the layer without
                                             * its MLP (layer --no-mlp) */
    double attn_fwd_ms, attn_fwdbwd_ms;
    double moe_fwd_ms, moe_fwdbwd_ms;       /* the MoE MLP (moe probe) */
    double expert_fwd_ms, expert_bwd_ms;    /* of which its routed experts */
    bool moe_shared;                        /* the shared experts ran in it */
    double dense_fwd_ms, dense_fwdbwd_ms;   /* the model's dense layers (layer probe at the dense FFN) */
    double rest_fwd_ms, rest_bwd_ms;        /* the main layer's part left to the model */
    double host_fwd_ms, host_bwd_ms;        /* added for the host's pace of the experts (calibration) */
    char moe_impl[16];                      /* loop | grouped */
    double stack_layer_fwd_ms;  /* added per layer forward / backward for the software stack (the */
    double stack_layer_bwd_ms;  /* profile's calibration; 0 without one) */
    double optimizer_ms;        /* measured optimizer step over the rank's shard (0: modelled) */
    char attention[16];       /* what the probe's layer ran: flash|unfused */
    char device[128];         /* the GPU that measured, as the driver names it */
    char modelled[768];       /* the parts that come from the model, "; "-separated */
    double model_step_s;      /* the model's step time before the measurements */
} pp_plan_probe_info;

/* Before the search: find parplan-probe and a GPU. Returns 0, or prints one line and returns the
 * exit status (1: no probes or no GPU). */
int pp_plan_probe_check(pp_cli *c, pp_plan_probe_env *env);
/* Measure (or take from the cache) the first min(K, n) candidates, re-time them, re-rank them
 * (info[] follows its candidate). Returns 0 or an exit status after printing one line. */
int pp_plan_probe_run(pp_cli *c, const pp_plan_probe_env *env, pp_search_candidate *cand, int64_t n,
                      pp_plan_probe_info *info);
/* Footnote under the table: what was measured, what is modelled. */
void pp_plan_probe_print(FILE *f, const pp_search_candidate *cand, int64_t n, const pp_plan_probe_info *info);

#endif
