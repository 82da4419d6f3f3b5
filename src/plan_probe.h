/* plan --probe K [--probe-budget SECONDS]: measure the K best candidates' own work on the local GPUs
 * with parplan-probe, compose it with the time model's schedule and re-rank. What is measured and
 * how it composes is the planner's (planner/calibrate/pp_probe_plan.h); plan_probe.c runs the
 * probes, keeps the cache file and prints. Called by cmd_plan.c. */
#ifndef PP_PLAN_PROBE_H
#define PP_PLAN_PROBE_H

#include <stdio.h>

#include "cli.h"
#include "pp_probe_plan.h"
#include "pp_search.h"

typedef struct {
    char path[4096];          /* parplan-probe */
    int gpus;                 /* visible local GPUs */
} pp_plan_probe_env;

/* Before the search: find parplan-probe and a GPU. Returns 0, or prints one line and returns the
 * exit status (1: no probes or no GPU). */
int pp_plan_probe_check(pp_cli *c, pp_plan_probe_env *env);
/* Measure (or take from the cache) the first min(K, n) candidates, re-time them, re-rank them
 * (info[] follows its candidate). Returns 0 or an exit status after printing one line. */
int pp_plan_probe_run(pp_cli *c, const pp_plan_probe_env *env, pp_search_candidate *cand, int64_t n,
                      pp_probe_outcome *info);
/* Footnote under the table: what was measured, what is modelled. */
void pp_plan_probe_print(FILE *f, const pp_search_candidate *cand, int64_t n, const pp_probe_outcome *info);

#endif
