/* The validation of plan --probe against real Megatron-LM on 2 x H200, re-checked without a
 * GPU: tests/calibrate/device_probe.sh ran `plan --probe 1` for every layout of
 * tests/data/calibrate/probe/layouts.tsv on the lent machine and kept its measurements
 * (tests/data/calibrate/probe/probe-cache.yaml). Here each layout is planned again from that cache
 * (a stand-in parplan-probe that must not be asked to measure anything), with the committed
 * calibrated profile; the measured step is compared with Megatron's, and so is the analytic one.
 *   - the layouts whose run matches what plan assumes (held): the scripts `parplan launch` wrote
 *     (source "launch"), and the memory helper's 2-GPU runs without data parallelism (alone on the
 *     machine, no gradient reduction whose overlap differs): probe within 10% of Megatron,
 *     analytic within 15% (the targets), and the probe orders the layouts of each workload
 *     (model, sequence, global batch) as Megatron does;
 *   - every layout: the error per row and the MAPE are printed. The memory helper's runs with DP 2
 *     ran without --overlap-grad-reduce (plan's layouts overlap it), and its 1-GPU runs shared the
 *     machine with a second run: reported, not held.
 *   - ranking: every pair of held layouts of one workload is printed; a pair more than 5% apart in
 *     Megatron's time (twice the probe's MAPE on them, 2.4%) must be ordered as Megatron orders it.
 *     Closer pairs are within what the probe's errors can separate: reported, not held.
 *   - MoE (tests/data/calibrate/probe-moe, source "moe"): the one-H200 runs held out of the fit of
 *     the profile's MoE host factors: the MAPE within 10% (probe) and 15% (analytic), each row within
 *     20% (launch-to-launch spread, below), a row above 10% named; those in that fit ("moe-fit") are
 *     printed. Model paths in that table are relative to the source tree (the test's workdir).
 *   - the logs of the runs launched for this (logdir/r6..r13.log): `calibrate --fit none
 *     --probe-cache` rebuilds each run from its own printed arguments and must find the step time
 *     the table says (median of iterations 3-5) and predict it within 10% from the measurements.
 * argv: layouts.tsv probe-cache.yaml fake-probe.sh profile.yaml [logdir] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jscan.h"
#include "proc.h"
#include "tap.h"

#define MAX_ROWS 64
#define MAX_ARGS 64

typedef struct {
    char name[64], src[64], line[2048];
    double megatron_ms, probe_ms, model_ms;
    int gpus;
    bool held;                /* held to the targets (see the top) */
    char group[128];          /* model and global batch: layouts ranked against each other */
    char *argv[MAX_ARGS];
    int argc;
} row;

static const char *parplan;

static bool copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    bool ok = a && b;
    char buf[65536];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, a)) > 0) ok = fwrite(buf, 1, n, b) == n;
    if (a) fclose(a);
    if (b && fclose(b)) ok = false;
    return ok;
}

static const char *arg_after(const row *r, const char *flag)
{
    for (int i = 0; i + 1 < r->argc; i++)
        if (!strcmp(r->argv[i], flag)) return r->argv[i + 1];
    return NULL;
}

static int load_rows(const char *path, row *rows)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[2048];
    int n = 0;
    while (n < MAX_ROWS && fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        line[strcspn(line, "\n")] = 0;
        row *r = &rows[n];
        memset(r, 0, sizeof *r);
        char ms[32], *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL,
                     *t3 = t2 ? strchr(t2 + 1, '\t') : NULL;
        if (!t3) continue;
        *t1 = *t2 = *t3 = 0;
        snprintf(r->name, sizeof r->name, "%.63s", line);
        snprintf(ms, sizeof ms, "%s", t1 + 1);
        snprintf(r->src, sizeof r->src, "%s", t2 + 1);
        snprintf(r->line, sizeof r->line, "%s", t3 + 1);
        r->megatron_ms = strcmp(ms, "-") ? atof(ms) : 0;
        for (char *tok = strtok(r->line, " "); tok && r->argc < MAX_ARGS; tok = strtok(NULL, " ")) r->argv[r->argc++] = tok;
        const char *tp = arg_after(r, "--tp"), *pp = arg_after(r, "--pp"), *dp = arg_after(r, "--dp");
        r->gpus = (tp ? atoi(tp) : 1) * (pp ? atoi(pp) : 1) * (dp ? atoi(dp) : 1);
        r->held = !strcmp(r->src, "launch") || (!strcmp(r->src, "memory") && r->gpus == 2 && dp && atoi(dp) == 1) ||
                  !strcmp(r->src, "moe");
        const char *m = arg_after(r, "--model"), *h = arg_after(r, "--hidden"), *s = arg_after(r, "--seq"),
                   *g = arg_after(r, "--gbs");
        snprintf(r->group, sizeof r->group, "%s%s%s seq %s gbs %s", m ? m : "?", h ? " h" : "", h ? h : "",
                 s ? s : "?", g ? g : "?");
        n++;
    }
    fclose(f);
    return n;
}

/* step time (ms) of the plan's #1, its source, or -1 */
static double plan_ms(const row *r, const char *profile, bool probe, char *source, size_t sn, char *why, size_t wn)
{
    char *a[MAX_ARGS + 32], gpus[16], gpn[16];
    int k = 0;
    a[k++] = (char *)parplan;
    a[k++] = "plan";
    for (int i = 0; i < r->argc; i++) a[k++] = r->argv[i];
    snprintf(gpus, sizeof gpus, "%d", r->gpus);
    snprintf(gpn, sizeof gpn, "%d", r->gpus < 2 ? r->gpus : 2);
    /* every row ran: plan may fill the whole GPU (some sit inside plan's default margin) */
    const char *more[] = {"--gpu", "h200", "--gpus", gpus, "--gpus-per-node", gpn, "--attention", "unfused",
                          "--profile", profile, "--top", "1", "--stages", "uniform", "--max-mem-frac", "1", "--json"};
    for (size_t i = 0; i < sizeof more / sizeof *more; i++) a[k++] = (char *)more[i];
    if (probe) {
        a[k++] = "--probe";
        a[k++] = "1";
    }
    a[k] = NULL;
    tc_proc res;
    tc_run(a, &res);
    double ms = -1;
    char jerr[256];
    js_val *d = res.status == 0 ? js_parse(res.out, jerr, sizeof jerr) : NULL;
    const js_val *c = js_get(d, "candidates");
    if (c && c->type == JS_ARR && c->n >= 1) {
        ms = js_num(c->items[0], "step_time_s") * 1e3;
        const js_val *s = js_get(c->items[0], "source");
        snprintf(source, sn, "%s", s && s->type == JS_STR ? s->str : "?");
        const js_val *p = js_get(js_get(c->items[0], "probe"), "modelled");
        snprintf(why, wn, "%s", p && p->type == JS_STR ? p->str : "");
    } else {
        snprintf(source, sn, "none");
        snprintf(why, wn, "exit %d: %.200s", res.status, res.err);
    }
    js_free(d);
    tc_proc_result_free(&res);
    return ms;
}

/* The runs launched for this validation, from their own logs (see the top). */
static void check_logs(const char *logdir, row *rows, int n, const char *cache, const char *profile)
{
    char *a[64], paths[16][1100];
    int k = 0, np = 0;
    a[k++] = (char *)parplan;
    a[k++] = "calibrate";
    a[k++] = "--gpu";
    a[k++] = "h200";
    a[k++] = "--fit";
    a[k++] = "none";
    a[k++] = "--profile";
    a[k++] = (char *)profile;
    a[k++] = "--probe-cache";
    a[k++] = (char *)cache;
    a[k++] = "--json";
    for (int i = 0; i < n && np < 16; i++) {
        if (strcmp(rows[i].src, "launch") || !strncmp(rows[i].name, "r1-", 3) || !strncmp(rows[i].name, "r2-", 3) ||
            !strncmp(rows[i].name, "r3-", 3))
            continue; /* r1-r3: their logs (tests/data/launch) are in the probe calibration's fit */
        snprintf(paths[np], sizeof paths[np], "%s/%s.log", logdir, rows[i].name);
        a[k++] = paths[np++];
    }
    a[k] = NULL;
    tc_proc res;
    tc_run(a, &res);
    char jerr[256] = "";
    js_val *d = res.status == 0 ? js_parse(res.out, jerr, sizeof jerr) : NULL;
    const js_val *logs = js_get(d, "logs");
    tap_ok(d && logs && logs->n == np, "calibrate --fit none --probe-cache on the %d launched runs' logs (%s%.200s)", np,
           jerr, res.status ? res.err : "");
    for (int i = 0; logs && i < logs->n; i++) {
        const js_val *l = logs->items[i];
        const js_val *nm = js_get(l, "name");
        const row *r = NULL;
        for (int j = 0; j < n && nm; j++)
            if (!strcmp(rows[j].name, nm->str)) r = &rows[j];
        double meas = js_num(l, "measured_step_s") * 1e3, pred = js_num(l, "predicted_after_s") * 1e3;
        tap_ok(r && fabs(meas - r->megatron_ms) < 0.05, "%s: its log's step time %.1f ms is the table's", nm ? nm->str : "?",
               meas);
        tap_ok(fabs(pred / meas - 1) <= 0.10, "%s: from its own arguments, measured layers + probe calibration %.1f ms "
               "vs %.1f ms (%+.1f%%)", nm ? nm->str : "?", pred, meas, 100 * (pred / meas - 1));
    }
    js_free(d);
    tc_proc_result_free(&res);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s layouts.tsv probe-cache.yaml fake-probe.sh profile.yaml\n", argv[0]);
        return 2;
    }
    parplan = getenv("PARPLAN");
    if (!parplan) {
        printf("1..0 # SKIP PARPLAN not set\n");
        return 0;
    }
    static row rows[MAX_ROWS];
    int n = load_rows(argv[1], rows);
    if (n <= 0) {
        printf("Bail out! cannot read %s\n", argv[1]);
        return 1;
    }
    char dir[] = "/tmp/pp-probe-val-XXXXXX", cache[256], flog[256];
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    snprintf(cache, sizeof cache, "%s/probe-cache.yaml", dir);
    snprintf(flog, sizeof flog, "%s/fake.log", dir);
    if (!copy_file(argv[2], cache)) {
        printf("Bail out! cannot copy %s\n", argv[2]);
        return 1;
    }
    setenv("PARPLAN_CACHE", cache, 1);
    setenv("PARPLAN_PROBE", argv[3], 1);
    setenv("FAKE_PROBE_LOG", flog, 1);
    setenv("FAKE_PROBE_DEVICE", "NVIDIA H200", 1);
    setenv("FAKE_PROBE_GPUS", "2", 1);

    printf("# %-24s %5s %6s %10s %10s %8s %10s %8s\n", "layout", "gpus", "held", "megatron", "probe", "error", "model",
           "error");
    double sum_p = 0, sum_m = 0, sum_p2 = 0, sum_m2 = 0;
    bool moe_held = false;
    int np = 0, np2 = 0;
    for (int i = 0; i < n; i++) {
        row *r = &rows[i];
        if (!(r->megatron_ms > 0)) {
            tap_diag("%s: no Megatron time recorded (not checked)", r->name);
            continue;
        }
        char src[32], why[512], src2[32], why2[512];
        remove(flog);
        r->probe_ms = plan_ms(r, argv[4], true, src, sizeof src, why, sizeof why);
        FILE *fl = fopen(flog, "r");
        bool asked = fl != NULL;
        if (fl) fclose(fl);
        r->model_ms = plan_ms(r, argv[4], false, src2, sizeof src2, why2, sizeof why2);
        double ep = r->probe_ms / r->megatron_ms - 1, em = r->model_ms / r->megatron_ms - 1;
        printf("# %-24s %5d %6s %8.1f ms %8.1f ms %+7.1f%% %8.1f ms %+7.1f%%\n", r->name, r->gpus,
               r->held ? "yes" : "no", r->megatron_ms, r->probe_ms, 100 * ep, r->model_ms, 100 * em);
        tap_ok(!strcmp(src, "probe") && !asked, "%s: composed from the recorded measurements (source %s, %s)", r->name,
               src, asked ? "the probe was asked to measure" : "nothing measured here");
        sum_p += fabs(ep);
        sum_m += fabs(em);
        np++;
        if (r->held) {
            sum_p2 += fabs(ep);
            sum_m2 += fabs(em);
            np2++;
            if (!strcmp(r->src, "moe")) {
                /* One-H200 MoE runs of Megatron's SequentialMLP are host-paced and vary from launch
                 * to launch (t_q_b2 took 1699 and 2145 ms in two launches, 26%): a row is held to
                 * 20%, the 10% target is held on the MAPE below and a row above it is named. */
                if (fabs(ep) > 0.10)
                    tap_diag("%s: probe %+.1f%%: TARGET NOT MET (10%% per row)", r->name, 100 * ep);
                tap_ok(fabs(ep) <= 0.20, "%s: probe-measured step %.1f ms within 20%% of Megatron's %.1f ms (%+.1f%%)",
                       r->name, r->probe_ms, r->megatron_ms, 100 * ep);
                tap_ok(fabs(em) <= 0.20, "%s: analytic step %.1f ms within 20%% of Megatron's %.1f ms (%+.1f%%)",
                       r->name, r->model_ms, r->megatron_ms, 100 * em);
                moe_held = true;
                continue;
            }
            tap_ok(fabs(ep) <= 0.10, "%s: probe-measured step %.1f ms within 10%% of Megatron's %.1f ms (%+.1f%%)",
                   r->name, r->probe_ms, r->megatron_ms, 100 * ep);
            tap_ok(fabs(em) <= 0.15, "%s: analytic step %.1f ms within 15%% of Megatron's %.1f ms (%+.1f%%)", r->name,
                   r->model_ms, r->megatron_ms, 100 * em);
        }
    }
    if (np) printf("# all %d layouts: probe MAPE %.1f%%, model MAPE %.1f%%\n", np, 100 * sum_p / np, 100 * sum_m / np);
    if (np2)
        printf("# the %d held layouts: probe MAPE %.1f%%, model MAPE %.1f%%\n", np2, 100 * sum_p2 / np2,
               100 * sum_m2 / np2);
    if (np2 && moe_held) {
        tap_ok(sum_p2 / np2 <= 0.10, "MoE: probe MAPE %.1f%% over the %d held layouts within 10%%", 100 * sum_p2 / np2, np2);
        tap_ok(sum_m2 / np2 <= 0.15, "MoE: analytic MAPE %.1f%% over the %d held layouts within 15%%", 100 * sum_m2 / np2,
               np2);
    }
    /* ranking: the layouts of one workload (model, sequence, global batch: what plan ranks), by step
     * time, held layouts */
    for (int i = 0; i < n; i++) {
        if (!rows[i].held || !(rows[i].megatron_ms > 0)) continue;
        bool first = true;
        for (int j = 0; j < i; j++) first &= !(rows[j].held && rows[j].megatron_ms > 0 && !strcmp(rows[j].group, rows[i].group));
        if (!first) continue;
        int members = 0, agree = 0, pairs = 0, held_pairs = 0, held_agree = 0;
        char list[512] = "";
        for (int a = 0; a < n; a++) {
            const row *x = &rows[a];
            if (!x->held || !(x->megatron_ms > 0) || strcmp(x->group, rows[i].group)) continue;
            members++;
            size_t k = strlen(list);
            snprintf(list + k, sizeof list - k, "%s%.63s", k ? ", " : "", x->name);
            for (int b = a + 1; b < n; b++) {
                const row *y = &rows[b];
                if (!y->held || !(y->megatron_ms > 0) || strcmp(y->group, rows[i].group)) continue;
                bool same = (x->megatron_ms < y->megatron_ms) == (x->probe_ms < y->probe_ms);
                double gap = fabs(x->megatron_ms / y->megatron_ms - 1);
                pairs++;
                agree += same;
                if (gap > 0.05) {
                    held_pairs++;
                    held_agree += same;
                }
                printf("#   %s %s %s: Megatron %.1f vs %.1f ms (%.1f%% apart), probe %.1f vs %.1f ms: %s\n", x->name,
                       x->megatron_ms < y->megatron_ms ? "<" : ">", y->name, x->megatron_ms, y->megatron_ms,
                       100 * gap, x->probe_ms, y->probe_ms, same ? "same order" : "REVERSED");
            }
        }
        if (members < 2) continue;
        tap_ok(held_agree == held_pairs,
               "%s (%s): the %d pairs more than 5%% apart ordered as Megatron does (%d of %d pairs in all)",
               rows[i].group, list, held_pairs, agree, pairs);
    }
    if (argc > 5) check_logs(argv[5], rows, n, argv[2], argv[4]);
    remove(cache);
    remove(flog);
    rmdir(dir);
    return tap_done();
}
