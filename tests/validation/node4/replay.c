/* The 4-GPU node runs (tests/data/node4, 4 x H200) read back as a user would, through the binary:
 *   Megatron-LM: parplan check --megatron-args tests/data/node4/logs/NAME.log --gpu h200
 *                --profile tests/data/profiles/h200-megatron-local.yaml --json
 *   FSDP2:       parplan check --framework fsdp --gpu h200 --gpus G --model llama3-8b|3B file
 *                --seq S --gbs G/tp x B --mbs B --zero 3|2 [--replicate R] [--tp T] --recompute AC --json
 * Printed per run: the predicted and measured allocator peak of every reporting rank's stage, the
 * step time, and the verdict; then MAPE and the worst row per group, every OOM verdict, and the
 * pairs of runs measured more than 5% apart that the model ranks the other way. The bounds asserted
 * are the figures this tree reaches (with a margin of a fifth for the noise of one device call);
 * the targets are printed beside them and marked when not met.
 *   replay PARPLAN SOURCE_DIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv_cols.h"
#include "replay.h"
#include "tap.h"

typedef struct {
    char name[64];
    double meas_ms, pred_ms;
    bool moe, balanced;
} timed_run;

static js_val *check_json(char **args, int n, int *status) { return rp_json("check", args, n, status); }

/* Pairs of runs measured more than 5% apart, ranked the other way by the model. */
static int misranked(const timed_run *t, int n, bool moe, int *pairs)
{
    int bad = 0;
    *pairs = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (t[i].moe != moe || t[j].moe != moe || !t[i].balanced || !t[j].balanced) continue;
            if (fabs(t[i].meas_ms / t[j].meas_ms - 1) <= 0.05) continue;
            (*pairs)++;
            if ((t[i].meas_ms < t[j].meas_ms) != (t[i].pred_ms < t[j].pred_ms)) {
                bad++;
                tap_diag("  misranked: %s (measured %.0f ms, predicted %.0f) vs %s (%.0f, %.0f)", t[i].name,
                         t[i].meas_ms, t[i].pred_ms, t[j].name, t[j].meas_ms, t[j].pred_ms);
            }
        }
    return bad;
}

static void megatron(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/node4/runs.csv", rp_src);
    FILE *f = fopen(path, "r");
    if (!tap_ok(f != NULL, "read %s", path)) return;
    char line[2048], prev[64] = "";
    int ih = -1;
    const char *const cols[] = {"name", "rank", "pp_stage", "routing", "oom", "max_alloc_mib", "iter_ms_med"};
    int ci[7];
    err_acc mem_dense = {0}, mem_moe = {0}, mem_aux = {0}, t_dense = {0}, t_moe = {0};
    timed_run runs[64];
    int nruns = 0, oom_right = 0, oom_n = 0;
    js_val *doc = NULL;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        char *col[MAXCOL];
        int nc = split_csv(line, col, MAXCOL);
        if (ih < 0) {
            for (int k = 0; k < 7; k++) ci[k] = col_index(col, nc, cols[k]);
            ih = 0;
            continue;
        }
        const char *name = col[ci[0]];
        bool moe = strcmp(col[ci[3]], "-") != 0, aux = !strcmp(col[ci[3]], "aux");
        if (strcmp(name, prev)) {
            /* a new run: read its log back once */
            snprintf(prev, sizeof prev, "%s", name);
            js_free(doc);
            char log[1024], prof[1024];
            snprintf(log, sizeof log, "%s/tests/data/node4/logs/%s.log", rp_src, name);
            snprintf(prof, sizeof prof, "%s/tests/data/profiles/h200-megatron-local.yaml", rp_src);
            char *args[] = {"--megatron-args", log, "--gpu", "h200", "--profile", prof};
            int st;
            doc = check_json(args, 6, &st);
            if (!tap_ok(doc != NULL, "%s: parplan check --megatron-args logs/%s.log --gpu h200 --profile "
                                     "h200-megatron-local.yaml", name, name))
                continue;
            const js_val *fits = js_get(doc, "fits");
            bool pfits = fits && fits->type == JS_BOOL && fits->b;
            bool oom = !strcmp(col[ci[4]], "1");
            if (oom || !pfits) {
                oom_n++;
                oom_right += oom == !pfits;
                tap_ok(oom == !pfits, "%s: %s, predicted %s (need %.1f GiB of %.1f)", name, oom ? "ran out of memory" : "ran",
                       pfits ? "fits" : "out of memory", js_num(doc, "need_bytes") / (1024 * MIB),
                       js_num(doc, "capacity_bytes") / (1024 * MIB));
            }
            if (!oom) {
                double meas = atof(col[ci[6]]), pred = 1e3 * js_num(doc, "step_time_s");
                double e = pred / meas - 1;
                if (!aux) acc(moe ? &t_moe : &t_dense, name, e);
                if (nruns < 64) runs[nruns++] = (timed_run){"", meas, pred, moe, !aux};
                snprintf(runs[nruns - 1].name, sizeof runs[0].name, "%s", name);
                printf("# %-22s step measured %7.1f ms predicted %7.1f ms %+6.1f%%%s\n", name, meas, pred, 100 * e,
                       aux ? " (aux-loss routing: not timed)" : "");
            }
        }
        if (!doc || !strcmp(col[ci[4]], "1")) continue;
        int stage = atoi(col[ci[2]]);
        const js_val *stages = js_get(doc, "stages");
        const js_val *s = stages && stage < stages->n ? stages->items[stage] : NULL;
        double pred = s ? js_num(s, "peak_bytes") / MIB : NAN, meas = atof(col[ci[5]]);
        double e = pred / meas - 1;
        acc(aux ? &mem_aux : moe ? &mem_moe : &mem_dense, name, e);
        printf("# %-22s rank %s stage %d: max allocated %8.0f MiB predicted %8.0f MiB %+6.2f%%%s\n", name,
               col[ci[1]], stage, meas, pred, 100 * e, aux ? " (aux-loss routing)" : "");
    }
    js_free(doc);
    fclose(f);
    tap_diag("memory, dense: MAPE %.2f%% over %d ranks, worst %+.2f%% (%s); target each within 4%%, MAPE <= 2%%",
             mape(&mem_dense), mem_dense.n, 100 * mem_dense.worst, mem_dense.worst_name);
    tap_diag("memory, MoE balanced: MAPE %.2f%% over %d ranks, worst %+.2f%% (%s)", mape(&mem_moe), mem_moe.n,
             100 * mem_moe.worst, mem_moe.worst_name);
    tap_diag("memory, MoE aux-loss routing: MAPE %.2f%% over %d ranks, worst %+.2f%% (%s): the busiest rank's "
             "experts get more than their share (--moe-imbalance)",
             mape(&mem_aux), mem_aux.n, 100 * mem_aux.worst, mem_aux.worst_name);
    if (fabs(mem_dense.worst) > 0.04)
        tap_diag("TARGET NOT MET: dense memory worst %+.2f%% (%s), target within 4%%", 100 * mem_dense.worst,
                 mem_dense.worst_name);
    tap_ok(fabs(mem_dense.worst) <= DENSE_MEM_WORST_BOUND && mape(&mem_dense) <= 2.0,
           "Megatron dense memory: every rank within %.1f%% (this tree's bound; target 4%%), MAPE %.2f%% <= 2%%",
           100 * DENSE_MEM_WORST_BOUND, mape(&mem_dense));
    tap_ok(fabs(mem_moe.worst) <= 0.04 && mape(&mem_moe) <= 2.0, "Megatron MoE memory (balanced): every rank within 4%%, MAPE %.2f%% <= 2%%",
           mape(&mem_moe));
    tap_ok(oom_right == oom_n, "OOM verdicts: %d of %d right (runs that ran out of memory or are predicted to)",
           oom_right, oom_n);
    tap_diag("step, dense: MAPE %.1f%% over %d runs, worst %+.1f%% (%s); target MAPE <= 7%%", mape(&t_dense), t_dense.n,
             100 * t_dense.worst, t_dense.worst_name);
    tap_diag("step, MoE balanced: MAPE %.1f%% over %d runs, worst %+.1f%% (%s); target MAPE <= 12%%", mape(&t_moe),
             t_moe.n, 100 * t_moe.worst, t_moe.worst_name);
    tap_ok(mape(&t_dense) <= 7.0 && fabs(t_dense.worst) <= 0.20, "dense step time: MAPE %.1f%% <= 7%%, each within 20%%",
           mape(&t_dense));
    if (mape(&t_moe) > 12.0 || fabs(t_moe.worst) > 0.20)
        tap_diag("TARGET NOT MET: MoE step MAPE %.1f%% (target 12%%), worst %+.1f%% (target 20%%)", mape(&t_moe),
                 100 * t_moe.worst);
    tap_ok(mape(&t_moe) <= MOE_STEP_MAPE_BOUND, "MoE step time (balanced): MAPE %.1f%% <= %.0f%% (this tree's bound)",
           mape(&t_moe), MOE_STEP_MAPE_BOUND);
    int pd, pm;
    int bd = misranked(runs, nruns, false, &pd), bm = misranked(runs, nruns, true, &pm);
    tap_ok(bd == 0, "dense: %d of %d pairs measured more than 5%% apart ranked the other way", bd, pd);
    if (bm) tap_diag("TARGET NOT MET: MoE: %d of %d pairs measured more than 5%% apart ranked the other way", bm, pm);
    tap_ok(bm <= MOE_MISRANKED_BOUND, "MoE: %d of %d pairs misranked (this tree's bound %d)", bm, pm,
           MOE_MISRANKED_BOUND);
}

static void fsdp(void)
{
    const char *rel = "tests/data/node4/fsdp_runs.csv";
    table t;
    if (!tap_ok(table_read(&t, rel), "read %s", rel)) {
        table_free(&t);
        return;
    }
    err_acc mem = {0}, tim = {0}, mem4 = {0};
    for (int r = 0; r < t.nrows; r++) {
        if (strcmp(cell(&t, r, "status"), "ok")) continue; /* skipped for the deadline */
        const char *name = cell(&t, r, "name");
        rp_fsdp_run run = fsdp_run_of(&t, r, "h200");
        char cmd[1024];
        js_val *doc = rp_fsdp_check(&run, cmd, sizeof cmd);
        if (!tap_ok(doc != NULL, "%s: %s", name, cmd)) continue;
        double pm = js_num(doc, "peak_bytes") / MIB, mm = atof(cell(&t, r, "max_alloc_mib"));
        double pt = 1e3 * js_num(doc, "step_time_s"), mt = atof(cell(&t, r, "step_ms_median"));
        int retries = atoi(cell(&t, r, "alloc_retries"));
        double em = pm / mm - 1, et = pt / mt - 1;
        printf("# %-26s peak measured %8.0f MiB predicted %8.0f %+6.2f%% | step %7.1f ms predicted %7.1f %+6.1f%%%s\n",
               name, mm, pm, 100 * em, mt, pt, 100 * et, retries ? " (allocator retried: not timed)" : "");
        acc(&mem, name, em);
        if (run.gpus == 4) acc(&mem4, name, em);
        if (!retries && run.gpus == 4) acc(&tim, name, et);
        js_free(doc);
    }
    table_free(&t);
    tap_diag("FSDP2 4-way memory: MAPE %.2f%% over %d runs, worst %+.2f%% (%s); target MAPE <= 4%%, each within 8%%",
             mape(&mem4), mem4.n, 100 * mem4.worst, mem4.worst_name);
    tap_diag("FSDP2 4-way step (runs without allocator retries): MAPE %.1f%% over %d, worst %+.1f%% (%s); target MAPE <= 10%%",
             mape(&tim), tim.n, 100 * tim.worst, tim.worst_name);
    tap_ok(mape(&mem4) <= 4.0 && fabs(mem4.worst) <= 0.08, "FSDP2 4-way memory: MAPE %.2f%% <= 4%%, each within 8%%",
           mape(&mem4));
    tap_ok(fabs(mem.worst) <= 0.08, "FSDP2 2-GPU rows too: every run within 8%% (worst %+.2f%%, %s)", 100 * mem.worst,
           mem.worst_name);
    if (mape(&tim) > 10.0) tap_diag("TARGET NOT MET: FSDP2 4-way step MAPE %.1f%% > 10%%", mape(&tim));
    tap_ok(mape(&tim) <= FSDP_STEP_MAPE_BOUND, "FSDP2 4-way step: MAPE %.1f%% <= %.0f%% (this tree's bound)", mape(&tim),
           FSDP_STEP_MAPE_BOUND);
}

/* Two H200s of one host (tests/data/fsdp/runs_2gpu.csv, tools/fsdp/configs_2gpu.csv, where the
 * predictions were written before the runs and the held-out half chosen). Three kinds of run: the
 * GPU-bound ones (FSDP2 at 4096 tokens a rank or more, TP 2 with compiled blocks); FSDP2 at 1-2k
 * tokens a rank, where FSDP2's Python host sets the pace (time_step.c FSDP_HOST_*, fitted on the
 * one-GPU runs of runs_host.csv, not on these); and eager TP 2, where the DTensor blocks' host sets
 * it (FSDP_TP_HOST_*, fitted on runs_tp_host.csv, the looked-at one here and the node's). */

/* Whether the configs file marks the run held out: its comment line above the row starts with
 * "# held out" (the split as it was committed before the runs). */
static bool held_out(const char *configs, const char *name)
{
    char path[1024], line[4096];
    snprintf(path, sizeof path, "%s/%s", rp_src, configs);
    FILE *f = fopen(path, "r");
    bool marked = false, held = false;
    while (f && fgets(line, sizeof line, f)) {
        if (line[0] == '#') {
            marked = !strncmp(line, "# held out", 10);
            continue;
        }
        size_t n = strlen(name);
        if (!strncmp(line, name, n) && line[n] == ',') {
            held = marked;
            break;
        }
        marked = false;
    }
    if (f) fclose(f);
    return held;
}

/* An FSDP2 runs table of tools/fsdp/parse_runs.py read whole, with the columns a test reads; false
 * (nothing left to free) when it cannot be read or lacks one. */
static bool fsdp_table(table *t, const char *rel, const char *const *cols, size_t ncols)
{
    if (!tap_ok(table_read(t, rel), "read %s", rel)) {
        table_free(t);
        return false;
    }
    bool all = true;
    for (size_t k = 0; k < ncols; k++) all = all && col_index(t->hdr, t->nh, cols[k]) >= 0;
    if (!tap_ok(all, "%s has the columns this test reads", rel)) table_free(t);
    return all;
}

/* One run of such a table that ran, as `parplan check` predicts it (and its command): measured
 * and predicted peak (MiB) and step (ms), and whether the configs file holds it out. */
typedef struct {
    const char *name;
    rp_fsdp_run run;
    double peak_meas, peak_pred, step_meas, step_pred;
    double host_pred; /* of step_pred, the GPU's wait for FSDP2's host (breakdown host_s; 0 where none) */
    bool held;
    char cmd[1024];
} fsdp_row;

/* Row r of t: false where it did not run, or (a TAP failure) where check refused it. */
static bool fsdp_row_of(const table *t, int r, const char *configs, fsdp_row *o)
{
    if (strcmp(cell(t, r, "status"), "ok")) return false;
    o->name = cell(t, r, "name");
    o->run = fsdp_run_of(t, r, "h200");
    js_val *doc = rp_fsdp_check(&o->run, o->cmd, sizeof o->cmd);
    if (!tap_ok(doc != NULL, "%s: %s", o->name, o->cmd)) return false;
    o->peak_pred = js_num(doc, "peak_bytes") / MIB, o->peak_meas = atof(cell(t, r, "max_alloc_mib"));
    o->step_pred = 1e3 * js_num(doc, "step_time_s"), o->step_meas = atof(cell(t, r, "step_ms_median"));
    double host = js_num(js_get(doc, "breakdown"), "host_s");
    o->host_pred = isnan(host) ? 0 : 1e3 * host;
    o->held = held_out(configs, o->name);
    js_free(doc);
    return true;
}

static void fsdp_2gpu(void)
{
    const char *rel = "tests/data/fsdp/runs_2gpu.csv", *configs = "tools/fsdp/configs_2gpu.csv";
    static const char *const cols[] = {"name", "status", "gpus", "replicate", "flavor", "mbs", "seq", "ac",
                                       "reshard_after_forward", "max_alloc_mib", "step_ms_median", "tp", "compile",
                                       "accum", "alloc"};
    table t;
    if (!fsdp_table(&t, rel, cols, sizeof cols / sizeof *cols)) return;
    int rows = 0, held_n = 0;
    err_acc mem = {0}, in_look = {0}, in_held = {0}, host_look = {0}, host_held = {0}, out_look = {0}, out_held = {0};
    for (int r = 0; r < t.nrows; r++) {
        fsdp_row x;
        if (!fsdp_row_of(&t, r, configs, &x)) continue;
        rows++;
        double em = x.peak_pred / x.peak_meas - 1, et = x.step_pred / x.step_meas - 1;
        /* GPU-bound FSDP2 (4096 tokens a rank or more) or compiled TP; FSDP2 at the host's pace; eager TP */
        bool eager_tp = x.run.tp > 1 && !x.run.compile, regime = !eager_tp && (x.run.tp > 1 || x.run.seq >= 4096);
        const char *kind = regime ? "regime" : eager_tp ? "eager-tp" : "host";
        held_n += x.held;
        printf("# %-26s %-8s %-9s peak measured %7.0f MiB predicted %7.0f %+6.2f%% | step %7.1f ms predicted %7.1f %+6.1f%%"
               " (host's wait %.1f)\n", x.name, x.held ? "held out" : "looked", kind, x.peak_meas, x.peak_pred, 100 * em,
               x.step_meas, x.step_pred, 100 * et, x.host_pred);
        printf("#     %s\n", x.cmd);
        acc(&mem, x.name, em);
        err_acc *look = regime ? &in_look : eager_tp ? &out_look : &host_look;
        err_acc *hold = regime ? &in_held : eager_tp ? &out_held : &host_held;
        acc(x.held ? hold : look, x.name, et);
    }
    table_free(&t);
    tap_ok(rows == 16 && held_n == 8, "16 runs on two H200s read (%d), 8 held out in %s (%d)", rows, configs, held_n);
    tap_diag("2 x H200 memory: MAPE %.2f%% over %d runs, worst %+.2f%% (%s)", mape(&mem), mem.n, 100 * mem.worst,
             mem.worst_name);
    tap_ok(fabs(mem.worst) <= 0.04, "2 x H200: every run's allocator peak within 4%% (worst %+.2f%%, %s)",
           100 * mem.worst, mem.worst_name);
    tap_diag("2 x H200 step, the model's regime: looked-at MAPE %.1f%% over %d (worst %+.1f%%, %s), held out %.1f%% over %d "
             "(worst %+.1f%%, %s)", mape(&in_look), in_look.n, 100 * in_look.worst, in_look.worst_name, mape(&in_held),
             in_held.n, 100 * in_held.worst, in_held.worst_name);
    tap_ok(in_look.n + in_held.n >= 9 && fabs(in_look.worst) <= 0.08 && fabs(in_held.worst) <= 0.08,
           "2 x H200 step, the model's regime (FSDP2 at 4096-8192 tokens a rank, compiled TP 2): every run within 8%%");
    tap_diag("2 x H200 step at FSDP2's host pace (1-2k tokens a rank): looked-at MAPE %.1f%% over %d (worst %+.1f%%, %s), "
             "held out %.1f%% over %d (worst %+.1f%%, %s)", mape(&host_look), host_look.n, 100 * host_look.worst,
             host_look.worst_name, mape(&host_held), host_held.n, 100 * host_held.worst, host_held.worst_name);
    tap_ok(host_look.n + host_held.n == 5 && fabs(host_look.worst) <= 0.22 && fabs(host_held.worst) <= 0.22,
           "2 x H200 step at FSDP2's host pace (the host fitted on one-GPU runs only): every run within 22%% (the same 3B run took 211 and 247 ms in two calls)");
    tap_diag("2 x H200 eager TP 2 (the DTensor host's pace, fitted on runs_tp_host.csv, this run and the node's): "
             "looked-at %+.1f%% (%s), held out %+.1f%% (%s)", 100 * out_look.worst, out_look.worst_name,
             100 * out_held.worst, out_held.worst_name);
    tap_ok(out_look.n == 1 && out_held.n == 1 && fabs(out_look.worst) <= 0.25 && fabs(out_held.worst) <= 0.25,
           "2 x H200 eager TP 2: within 25%% (the same run took 489 ms here and 585 ms in a later call)");
}

/* FSDP2's host (time_step.c FSDP_HOST_*, FSDP_TP_HOST_*; fitted on the looked-at rows by
 * tools/fsdp/fit_host.py, predictions and held-out rows committed before the runs in the configs
 * files): tests/data/fsdp/runs_host.csv, one H200 at 512-4096 tokens, eager and compiled, full AC,
 * two micro-batches, 3B and 8B blocks; runs_tp_host.csv, eager TP 2 on two H200s at 2048-8192
 * tokens (and one compiled); runs_ctp_host.csv, compiled TP 2 at 1024-4096 tokens; runs_shard_host.csv, FSDP2 over 2 and 4 H200s of a 4-GPU machine at
 * 512-2048 tokens a rank, none of them fitted on. Every step within the bound (the host's own step-to-step spread is
 * about 10%), and against the GPU's time alone, 27-87% short where the host sets the pace. */
static void fsdp_host(const char *rel, const char *configs, int want_rows, int want_held, double bound)
{
    static const char *const cols[] = {"name", "status", "flavor", "layers", "mbs", "seq", "ac", "max_alloc_mib",
                                       "step_ms_median", "accum", "compile", "tp"};
    table t;
    if (!fsdp_table(&t, rel, cols, sizeof cols / sizeof *cols)) return;
    int rows = 0, held_n = 0, paced = 0;
    err_acc look = {0}, held = {0}, gpu_alone = {0};
    for (int r = 0; r < t.nrows; r++) {
        fsdp_row x;
        if (!fsdp_row_of(&t, r, configs, &x)) continue;
        rows++;
        held_n += x.held;
        double e = x.step_pred / x.step_meas - 1, eg = (x.step_pred - x.host_pred) / x.step_meas - 1;
        printf("# %-18s %-8s step %6.1f ms predicted %6.1f %+6.1f%% (the host's wait %5.1f; the GPU alone %+6.1f%%) | "
               "peak %+.2f%%\n", x.name, x.held ? "held out" : "looked", x.step_meas, x.step_pred, 100 * e, x.host_pred,
               100 * eg, 100 * (x.peak_pred / x.peak_meas - 1));
        printf("#     %s\n", x.cmd);
        acc(x.held ? &held : &look, x.name, e);
        if (x.host_pred > 0.1 * x.step_pred) paced++, acc(&gpu_alone, x.name, eg);
    }
    table_free(&t);
    tap_ok(rows == want_rows && held_n == want_held, "%s: %d runs read (%d), %d held out in %s (%d)", rel, want_rows,
           rows, want_held, configs, held_n);
    tap_diag("%s, the host's pace: step MAPE looked-at %.1f%% over %d (worst %+.1f%%, %s), held out %.1f%% over %d "
             "(worst %+.1f%%, %s); where the host sets the pace (%d runs) the GPU's time alone: MAPE %.1f%%, worst %+.1f%%",
             rel, mape(&look), look.n, 100 * look.worst, look.worst_name, mape(&held), held.n, 100 * held.worst,
             held.worst_name, paced, mape(&gpu_alone), 100 * gpu_alone.worst);
    tap_ok(look.n + held.n == want_rows && fabs(look.worst) <= bound && fabs(held.worst) <= bound,
           "%s: every step within %.0f%%, held out included", rel, 100 * bound);
}

/* The logits a training loop keeps (tests/data/fsdp/runs_logits.csv, tools/fsdp/configs_logits.csv:
 * predictions and the held-out half committed before the runs): one H200, the same run with the
 * logits freed before the backward (torchtitan) and kept through it (KempnerForge, NeMo AutoModel;
 * --keep-logits), on the bf16 loss and on logits.float(). Memory is what these runs test: each
 * peak within 1%, and the kept logits' measured cost (the kept run's peak less the freed one's)
 * within 1% of the 2 bytes a logit priced. */
static void fsdp_logits(void)
{
    const char *rel = "tests/data/fsdp/runs_logits.csv", *configs = "tools/fsdp/configs_logits.csv";
    static const char *const cols[] = {"name", "status", "flavor", "layers", "mbs", "seq", "ac", "max_alloc_mib",
                                       "step_ms_median", "accum", "loss_kind", "keep_logits"};
    table t;
    if (!fsdp_table(&t, rel, cols, sizeof cols / sizeof *cols)) return;
    int rows = 0, held_n = 0;
    err_acc look = {0}, held = {0};
    double kept_mib = NAN, freed_mib = NAN, kept_pred = NAN, freed_pred = NAN;
    for (int r = 0; r < t.nrows; r++) {
        fsdp_row x;
        if (!fsdp_row_of(&t, r, configs, &x)) continue;
        rows++;
        held_n += x.held;
        printf("# %-28s %-8s peak measured %7.0f MiB predicted %7.0f %+6.2f%% | step %7.1f ms predicted %7.1f %+6.1f%%\n",
               x.name, x.held ? "held out" : "looked", x.peak_meas, x.peak_pred, 100 * (x.peak_pred / x.peak_meas - 1),
               x.step_meas, x.step_pred, 100 * (x.step_pred / x.step_meas - 1));
        printf("#     %s\n", x.cmd);
        acc(x.held ? &held : &look, x.name, x.peak_pred / x.peak_meas - 1);
        /* the pair that differs in the kept logits alone */
        if (!strcmp(x.name, "lg_3b_s4k_b2_bf16")) freed_mib = x.peak_meas, freed_pred = x.peak_pred;
        if (!strcmp(x.name, "lg_3b_s4k_b2_bf16_keep")) kept_mib = x.peak_meas, kept_pred = x.peak_pred;
    }
    table_free(&t);
    tap_ok(rows == 5 && held_n == 2, "5 runs on one H200 read (%d), 2 held out in %s (%d)", rows, configs, held_n);
    tap_diag("logits kept: peak MAPE looked-at %.2f%% over %d (worst %+.2f%%, %s), held out %.2f%% over %d (worst %+.2f%%, %s)",
             mape(&look), look.n, 100 * look.worst, look.worst_name, mape(&held), held.n, 100 * held.worst,
             held.worst_name);
    tap_ok(look.n + held.n == 5 && fabs(look.worst) <= 0.01 && fabs(held.worst) <= 0.01,
           "logits kept or freed, bf16 or upcast loss: every run's allocator peak within 1%%");
    /* 3B at 2 x 4096 tokens: 8192 x 128256 logits, 2 bytes each = 2004 MiB */
    double dm = kept_mib - freed_mib, dp = kept_pred - freed_pred;
    tap_ok(fabs(dp / dm - 1) <= 0.01, "the kept logits cost %.0f MiB measured (the kept run's peak less the freed one's), "
           "%.0f predicted", dm, dp);
}

/* plan --probe 8 as it ran on the node (tests/data/node4/probe/WORKLOAD.json): its #1 against the
 * measured fastest of the launched layouts of that workload (the runs of runs.csv whose layout is
 * one of the plan's candidates). */
static void probe_pick(const char *workload, const char *const *runs, const char *const *labels, int n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/node4/probe/%s.json", rp_src, workload);
    FILE *f = fopen(path, "r");
    if (!tap_ok(f != NULL, "read %s", path)) return;
    static char text[1 << 16];
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = 0;
    fclose(f);
    char err[128];
    js_val *doc = js_parse(text, err, sizeof err);
    const js_val *cand = doc ? js_get(doc, "candidates") : NULL;
    if (!tap_ok(cand && cand->type == JS_ARR && cand->n > 0, "%s: plan --probe's candidates", workload)) {
        js_free(doc);
        return;
    }
    const js_val *c0 = cand->items[0];
    char label[128];
    snprintf(label, sizeof label, "tp%.0f pp%.0f dp%.0f ep%.0f mbs%.0f%s", js_num(c0, "tp"), js_num(c0, "pp"),
             js_num(c0, "dp"), js_num(c0, "ep"), js_num(c0, "mbs"),
             js_get(c0, "dist_opt") && js_get(c0, "dist_opt")->b ? " dist-opt" : "");
    /* the measured steps of the launched layouts */
    snprintf(path, sizeof path, "%s/tests/data/node4/runs.csv", rp_src);
    f = fopen(path, "r");
    double best = INFINITY, pick = NAN;
    const char *best_name = "?";
    char line[2048];
    int ih = -1, in = 0, it = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        char *col[MAXCOL];
        int nc = split_csv(line, col, MAXCOL);
        if (ih < 0) {
            in = col_index(col, nc, "name"), it = col_index(col, nc, "iter_ms_med");
            ih = 0;
            continue;
        }
        for (int i = 0; i < n; i++) {
            if (strcmp(col[in], runs[i]) || !col[it][0]) continue;
            double ms = atof(col[it]);
            if (ms < best) best = ms, best_name = runs[i];
            if (!strcmp(labels[i], label)) pick = ms;
        }
    }
    if (f) fclose(f);
    tap_diag("%s: plan --probe's #1 is %s (probed %.0f ms), measured %.1f ms; the measured fastest of the %d launched "
             "is %s at %.1f ms", workload, label, 1e3 * js_num(c0, "step_time_s"), pick, n, best_name, best);
    tap_ok(isfinite(pick) && pick <= 1.03 * best, "%s: plan --probe's #1 is the measured fastest or within 3%% of it (%+.1f%%)",
           workload, 100 * (pick / best - 1));
    js_free(doc);
}

/* Memory outside PyTorch's allocator (tests/data/node4/probe/mem_outside.txt, mem_outside.py): one
 * NCCL communicator and its first collective. */
static void outside(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/node4/probe/mem_outside.txt", rp_src);
    FILE *f = fopen(path, "r");
    if (!tap_ok(f != NULL, "read %s", path)) return;
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        char err[128];
        const char *j = strchr(line, '{');
        js_val *v = j ? js_parse(j, err, sizeof err) : NULL;
        if (!v) continue;
        const js_val *steps = js_get(v, "steps");
        if (js_num(v, "rank") == 0 && steps && steps->n >= 3)
            tap_diag("world %.0f: context %.0f MiB, + cuBLAS %.0f, + NCCL world communicator %.0f, + groups and "
                     "all-to-all %.0f, final %.0f MiB",
                     js_num(v, "world"), steps->items[0]->items[1]->num / MIB,
                     (steps->items[1]->items[1]->num - steps->items[0]->items[1]->num) / MIB,
                     (steps->items[2]->items[1]->num - steps->items[1]->items[1]->num) / MIB,
                     (steps->items[3]->items[1]->num - steps->items[2]->items[1]->num) / MIB,
                     steps->items[steps->n - 1]->items[1]->num / MIB);
        js_free(v);
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s PARPLAN SOURCE_DIR\n", argv[0]);
        return 2;
    }
    rp_parplan = argv[1];
    rp_src = argv[2];
    megatron();
    fsdp();
    fsdp_2gpu();
    fsdp_host("tests/data/fsdp/runs_host.csv", "tools/fsdp/configs_host.csv", 11, 3, 0.12);
    fsdp_host("tests/data/fsdp/runs_tp_host.csv", "tools/fsdp/configs_tp_host.csv", 8, 3, 0.12);
    fsdp_host("tests/data/fsdp/runs_ctp_host.csv", "tools/fsdp/configs_ctp_host.csv", 6, 2, 0.20);
    /* 2 and 4 ranks on a 4-GPU machine, none fitted on (the host's figures are one GPU's) */
    fsdp_host("tests/data/fsdp/runs_shard_host.csv", "tools/fsdp/configs_shard_host.csv", 10, 4, 0.20);
    fsdp_logits();
    static const char *const dense_runs[] = {"d_dp4_b1_do", "d_tp2dp2_b2_do", "d_pp2dp2v8_b1_do", "d_tp4_b4", "d_tp2pp2v8_b2"};
    static const char *const dense_labels[] = {"tp1 pp1 dp4 ep1 mbs1 dist-opt", "tp2 pp1 dp2 ep1 mbs2 dist-opt",
                                               "tp1 pp2 dp2 ep1 mbs1 dist-opt", "tp4 pp1 dp1 ep1 mbs4",
                                               "tp2 pp2 dp1 ep1 mbs2"};
    probe_pick("dense", dense_runs, dense_labels, 5);
    static const char *const moe_runs[] = {"m8_ep4_b4_do", "m8_ep2dp2_b4_do", "m8_dp4_b4_do", "m8_pp2ep2_b2"};
    static const char *const moe_labels[] = {"tp1 pp1 dp4 ep4 mbs4 dist-opt", "tp1 pp1 dp4 ep2 mbs4 dist-opt",
                                             "tp1 pp1 dp4 ep1 mbs4 dist-opt", "tp1 pp2 dp2 ep2 mbs2"};
    probe_pick("moe", moe_runs, moe_labels, 4);
    outside();
    return tap_done();
}
