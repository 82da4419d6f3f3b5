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
    double layer_fwd_ms, layer_fwdbwd_ms;
    double stack_layer_fwd_ms;  /* added per layer forward / backward for the software stack (the */
    double stack_layer_bwd_ms;  /* profile's calibration; 0 without one) */
    double optimizer_ms;        /* measured optimizer step over the rank's shard (0: modelled) */
    char attention[16];       /* what the probe's layer ran: flash|unfused */
    char device[128];         /* the GPU that measured, as the driver names it */
    char modelled[320];       /* the parts that come from the model, "; "-separated */
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
