/* Issue 8, through the CLI: `parplan calibrate` (errors, the fit, the profile it writes and its use
 * by check), and `plan --probe` without a GPU and with a stand-in parplan-probe (fake-probe.sh):
 * measured figures, the cache reused by a repeated plan, and an interrupted plan that resumes.
 * argv[1]: the megatron log directory; argv[2]: fake-probe.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cli/pp_jscan.h"
#include "../cli/pp_run.h"
#include "pp_calibrate.h"
#include "pp_profile.h"
#include "tap.h"

static const char *parplan;
static char tmpdir[] = "/tmp/pp-cal-cli-XXXXXX";

static int one_line(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0, ch;
    while ((ch = fgetc(f)) != EOF) n += ch == '\n';
    fclose(f);
    return n;
}

static void run(pp_run_result *r, char **argv) { pp_run(argv, r); }

static void test_calibrate(const char *logdir)
{
    pp_run_result r;
    char *a0[] = {(char *)parplan, "calibrate", "--gpu", "h200", NULL};
    run(&r, a0);
    tap_ok(r.status == 2 && one_line(r.err) == 1 && !r.out[0], "calibrate without logs: exit 2, one line (%s)", r.err);
    pp_run_result_free(&r);

    char lg[1024];
    snprintf(lg, sizeof lg, "%s/g27_b1.log", logdir);
    char *a1[] = {(char *)parplan, "calibrate", lg, NULL};
    run(&r, a1);
    tap_ok(r.status == 2 && strstr(r.err, "--gpu") && one_line(r.err) == 1, "calibrate without --gpu: exit 2 (%s)",
           r.err);
    pp_run_result_free(&r);

    char *a2[] = {(char *)parplan, "calibrate", "--gpu", "h200", "--fit", "gemm,warp", lg, NULL};
    run(&r, a2);
    tap_ok(r.status == 2 && strstr(r.err, "warp"), "--fit warp: exit 2 naming it (%s)", r.err);
    pp_run_result_free(&r);

    char *a3[] = {(char *)parplan, "calibrate", "--gpu", "h200", "/nonexistent/x.log", NULL};
    run(&r, a3);
    tap_ok(r.status != 0 && one_line(r.err) == 1 && strstr(r.err, "/nonexistent/x.log"),
           "a missing log: one line naming it (%s)", r.err);
    pp_run_result_free(&r);

    char *a4[] = {(char *)parplan, "calibrate", "--gpu", "h200", lg, NULL};
    run(&r, a4);
    tap_ok(r.status == 2 && strstr(r.err, "at least"), "one log cannot determine 4 factors: exit 2 (%s)", r.err);
    pp_run_result_free(&r);

    /* FSDP2 runs tables (pp_calib_fsdp_csv_load): a table without a needed column, a bad value */
    char csv[] = "/tmp/pp-cal-fsdp-XXXXXX.csv";
    int fd = mkstemps(csv, 4);
    FILE *fc = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (fc) {
        fputs("# not all columns\nname,status,gpus\nx,ok,1\n", fc);
        fclose(fc);
    }
    char *a5[] = {(char *)parplan, "calibrate", "--gpu", "h200", csv, NULL};
    run(&r, a5);
    tap_ok(r.status == 2 && one_line(r.err) == 1 && strstr(r.err, "not an FSDP runs table") && strstr(r.err, "replicate"),
           "an FSDP runs table without a column: exit 2 naming it (%s)", r.err);
    pp_run_result_free(&r);
    char src_csv[1024];
    const char *srcdir = getenv("PARPLAN_SOURCE_DIR");
    snprintf(src_csv, sizeof src_csv, "%s/tests/data/fsdp/runs.csv", srcdir ? srcdir : ".");
    FILE *in = fopen(src_csv, "r");
    fc = fopen(csv, "w");
    if (in && fc) {
        char line[4096];
        int k = 0;
        while (fgets(line, sizeof line, in)) {
            char *ac = strstr(line, ",none,true,");
            if (ac && k++ == 0) memcpy(ac + 1, "nope", 4); /* the first run's ac column */
            fputs(line, fc);
        }
    }
    if (in) fclose(in);
    if (fc) fclose(fc);
    run(&r, a5);
    tap_ok(r.status == 2 && one_line(r.err) == 1 && strstr(r.err, "'nope'") && strstr(r.err, ".csv:3:"),
           "an FSDP runs table with a bad ac value: exit 2 naming the line (%s)", r.err);
    pp_run_result_free(&r);
    unlink(csv);

    /* the fit on 16 + 5 logs (a glob of the extracted directory with non-training files in it) */
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    char *args[64];
    static char paths[40][1200];
    int na = 0, np = 0;
    args[na++] = (char *)parplan;
    args[na++] = "calibrate";
    args[na++] = "--gpu";
    args[na++] = "h200";
    args[na++] = "--json";
    args[na++] = "-o";
    char prof[256];
    snprintf(prof, sizeof prof, "%s/h200-cal.yaml", tmpdir);
    args[na++] = prof;
    const char *meg[] = {"g27_b1", "g27_b2", "g27_b3", "g27_b4", "g27_b8_full", "g27_b8_sel", "g27_dp2_b2",
                         "g67_dp2_do_b1", "g67_pp2_b1", "g67_tp2_b1", "l3_s2k_b1", "l3_s2k_b4", "l3_s2k_b8",
                         "l3_s4k_b1", "l3_s4k_b2", "l3_s4k_b2_sel", "l3_s4k_dp2_do_b2_full", "l3_s4k_pp2_b1",
                         "l3_s4k_tp2_b2_sel"};
    for (size_t i = 0; i < sizeof meg / sizeof meg[0]; i++) {
        snprintf(paths[np], sizeof paths[np], "%s/%s.log", logdir, meg[i]);
        args[na++] = paths[np++];
    }
    const char *lr[] = {"r1-gpt1.3b-dp2", "r2-gpt1.3b-tp2", "r3-gpt1.3b-pp2", "r4-tinyllama-pp2-uneven-rc",
                        "r5-tinyllama-tp2-distopt"};
    for (int i = 0; i < 5; i++) {
        snprintf(paths[np], sizeof paths[np], "%s/tests/data/launch/logs/%s.log:%s/tests/data/launch/scripts/%s.sh",
                 src, lr[i], src, lr[i]);
        args[na++] = paths[np++];
    }
    args[na] = NULL;
    run(&r, args);
    char jerr[256] = "";
    js_val *doc = r.status == 0 ? js_parse(r.out, jerr, sizeof jerr) : NULL;
    tap_ok(r.status == 0 && doc, "calibrate on 24 logs: exit 0, valid JSON (%s%s)", jerr, r.status ? r.err : "");
    tap_ok(one_line(r.err) == 3 && strstr(r.err, "g27_b4") && strstr(r.err, "l3_s2k_b8") && strstr(r.err, "l3_s4k_b2"),
           "the 3 runs that ran out of memory are skipped with one warning line each");
    tap_ok(js_num(doc, "runs") == 21, "21 timed runs fitted (%g)", js_num(doc, "runs"));
    double before = js_num(doc, "mape_before_pct"), after = js_num(doc, "mape_after_pct"),
           loo = js_num(doc, "mape_loo_pct");
    tap_ok(before > 40 && after < 3 && loo < 3.5, "MAPE %.1f%% -> %.2f%% (leave-one-out %.2f%%)", before, after, loo);
    js_free(doc);
    pp_run_result_free(&r);

    /* --probe-cache: the same logs on their layers as plan --probe measured them on the lent 2 x H200
     * (tests/data/calibrate/probe): the 16 memory-helper runs that timed and r1-r3 (r4, r5: TinyLlama
     * shapes, never probed) */
    {
        char cache[1200], pprof[256], *pa[64];
        int k = 0;
        snprintf(cache, sizeof cache, "%s/tests/data/calibrate/probe/probe-cache.yaml", src);
        snprintf(pprof, sizeof pprof, "%s/h200-probecal.yaml", tmpdir);
        pa[k++] = (char *)parplan;
        pa[k++] = "calibrate";
        pa[k++] = "--gpu";
        pa[k++] = "h200";
        pa[k++] = "--json";
        pa[k++] = "--profile";
        pa[k++] = prof;
        pa[k++] = "--probe-cache";
        pa[k++] = cache;
        pa[k++] = "-o";
        pa[k++] = pprof;
        for (int i = 0; i < np - 2; i++) pa[k++] = paths[i]; /* all but r4, r5 */
        pa[k] = NULL;
        run(&r, pa);
        doc = r.status == 0 ? js_parse(r.out, jerr, sizeof jerr) : NULL;
        tap_ok(r.status == 0 && doc && js_num(doc, "runs") == 19, "calibrate --probe-cache on 19 logs: exit 0 (%s)",
               r.status ? r.err : jerr);
        const js_val *fitted = js_get(js_get(doc, "calibration"), "fitted");
        bool gemm = false;
        for (int i = 0; fitted && i < fitted->n; i++) gemm |= !strcmp(fitted->items[i]->str, "gemm");
        before = js_num(doc, "mape_before_pct");
        after = js_num(doc, "mape_after_pct");
        loo = js_num(doc, "mape_loo_pct");
        tap_ok(fitted && fitted->n == 3 && !gemm, "on measured layers: score, layer and optimizer fitted, not gemm");
        /* before: the measured layers alone (no stack terms) miss the local stack by ~45% */
        tap_ok(before > 35 && after < 4 && loo < 4, "measured layers: MAPE %.1f%% -> %.2f%% (leave-one-out %.2f%%)",
               before, after, loo);
        js_free(doc);
        pp_run_result_free(&r);
        pp_profile pq;
        pp_error eq = {0};
        pp_status sq = pp_profile_load_file(&pq, pprof, &eq);
        tap_ok(sq == PP_OK && pq.probe_calibration.present && pq.probe_calibration.runs == 19 &&
                   pq.calibration.present && pq.calibration.runs == 21 && pq.probe_calibration.gemm_scale == 1.0,
               "the written profile keeps the model's calibration and adds probe_calibration (%s)", eq.msg);
        if (sq == PP_OK) pp_profile_free(&pq);
        /* a log whose layer was never measured: exit 2 naming it */
        pa[k++] = paths[np - 1]; /* r5: TinyLlama */
        pa[k] = NULL;
        run(&r, pa);
        const char *last = strstr(r.err, "parplan: no measured layer");
        tap_ok(r.status == 2 && last && one_line(last) == 1 && strstr(last, "r5-tinyllama") &&
                   strstr(last, "plan --probe"),
               "a log whose layer is not in the cache: exit 2, one line naming it (after the 3 skipped logs' warnings)");
        pp_run_result_free(&r);
    }

    /* two software stacks in one fit: refused */
    char te[256];
    snprintf(te, sizeof te, "%s/te.log", tmpdir);
    FILE *tf = fopen(te, "w");
    if (tf) {
        fputs("------------------------ arguments ------------------------\n"
              "  num_layers ...... 2\n  hidden_size ..... 256\n  num_attention_heads ... 4\n  seq_length .... 128\n"
              "  vocab_size ..... 1000\n  micro_batch_size ... 1\n  world_size .... 1\n  bf16 .... True\n"
              "  transformer_impl ..... transformer_engine\n"
              "-------------------- end of arguments ---------------------\n",
              tf);
        for (int i = 1; i <= 4; i++)
            fprintf(tf, " [t] iteration        %d/       4 | elapsed time per iteration (ms): %d.0 |\n", i, 10 + i);
        fclose(tf);
    }
    char *am[] = {(char *)parplan, "calibrate", "--gpu", "h200", paths[0], te, NULL};
    run(&r, am);
    tap_ok(r.status == 2 && one_line(r.err) == 1 && strstr(r.err, "one software stack"),
           "a Transformer Engine log with a local one: exit 2 (%s)", r.err);
    pp_run_result_free(&r);
    remove(te);

    /* the profile it wrote loads, and check --profile applies it */
    pp_profile p;
    pp_error err = {0};
    pp_status st = pp_profile_load_file(&p, prof, &err);
    tap_ok(st == PP_OK && p.calibration.present && p.calibration.runs == 21 && !strcmp(p.gpu, "NVIDIA H200") &&
               p.calibration.elementwise_scale == 1.0 && p.calibration.score_bytes > 0,
           "the written profile loads with its calibration (%s)", err.msg);
    if (st == PP_OK) pp_profile_free(&p);
    struct { const char *name; const char *tp, *pp, *mbs; bool dist_opt; double ms; } lay[3] = {
        {"r1 DP2", "1", "1", "4", true, 618.6}, {"r2 TP2", "2", "1", "4", false, 703.4}, {"r3 PP2", "1", "2", "2", false, 739.7}};
    for (int i = 0; i < 3; i++) {
        for (int cal = 0; cal < 2; cal++) {
            char *ca[32];
            int k = 0;
            ca[k++] = (char *)parplan;
            ca[k++] = "check";
            ca[k++] = "--model";
            ca[k++] = "gpt3-1.3b";
            ca[k++] = "--gpu";
            ca[k++] = "h200";
            ca[k++] = "--gpus";
            ca[k++] = "2";
            ca[k++] = "--gbs";
            ca[k++] = "16";
            ca[k++] = "--attention";
            ca[k++] = "unfused";
            ca[k++] = "--tp";
            ca[k++] = (char *)lay[i].tp;
            ca[k++] = "--pp";
            ca[k++] = (char *)lay[i].pp;
            ca[k++] = "--mbs";
            ca[k++] = (char *)lay[i].mbs;
            if (lay[i].dist_opt) ca[k++] = "--dist-opt";
            ca[k++] = "--json";
            if (cal) {
                ca[k++] = "--profile";
                ca[k++] = prof;
            }
            ca[k] = NULL;
            run(&r, ca);
            js_val *d = r.status == 0 ? js_parse(r.out, jerr, sizeof jerr) : NULL;
            double s = js_num(d, "step_time_s") * 1e3;
            double e = s / lay[i].ms - 1;
            if (cal)
                tap_ok(fabs(e) < 0.15, "check %s with the calibrated profile: %.1f ms vs Megatron %.1f (%+.1f%%)",
                       lay[i].name, s, lay[i].ms, 100 * e);
            else
                tap_ok(e < -0.3, "check %s uncalibrated: %.1f ms vs %.1f (%+.1f%%): the fused-stack model is fast",
                       lay[i].name, s, lay[i].ms, 100 * e);
            js_free(d);
            pp_run_result_free(&r);
        }
    }
}

/* A one-stage layout whose full recompute the stage ILP turned into no recompute came back as a
 * second candidate, "tp1 pp1 dp2 mbs2 dist-opt" and "... stages 28" (the Llama-3.2-3B shape on
 * 2 x H200, found by plan --probe 8 measuring it twice): every candidate must be a distinct run. */
static void test_plan_no_duplicates(void)
{
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    char prof[1200];
    snprintf(prof, sizeof prof, "%s/tests/data/profiles/h200x2-megatron-local.yaml", src ? src : ".");
    char *a[] = {(char *)parplan, "plan", "--model", "llama3-8b", "--layers", "28", "--hidden", "3072", "--heads", "24",
                 "--kv-heads", "8", "--ffn", "8192", "--vocab", "128256", "--untied", "--seq", "4096", "--gpu", "h200",
                 "--gpus", "2", "--gpus-per-node", "2", "--attention", "unfused", "--profile", prof, "--gbs", "8",
                 "--top", "8", "--json", NULL};
    pp_run_result r;
    run(&r, a);
    char jerr[256] = "";
    js_val *d = r.status == 0 ? js_parse(r.out, jerr, sizeof jerr) : NULL;
    const js_val *c = js_get(d, "candidates");
    static const char *const keys[] = {"tp", "pp", "dp", "vpp", "cp", "ep", "mbs", "zero", "dist_opt", "sp",
                                       "recompute", "offload"};
    int dups = 0;
    for (int i = 0; c && i < c->n; i++)
        for (int j = 0; j < i; j++) {
            bool same = true;
            for (size_t k = 0; same && k < sizeof keys / sizeof *keys; k++) {
                const js_val *x = js_get(c->items[i], keys[k]), *y = js_get(c->items[j], keys[k]);
                same = x && y && x->type == y->type &&
                       (x->type == JS_STR ? !strcmp(x->str, y->str) : x->type == JS_BOOL ? x->b == y->b : x->num == y->num);
            }
            /* the same parallel layout with one stage can only be the same run */
            dups += same && js_num(c->items[i], "pp") == 1;
        }
    tap_ok(c && c->n == 8 && dups == 0, "plan --top 8 on the Llama-3.2-3B shape: 8 distinct runs, %d one-stage duplicates",
           dups);
    js_free(d);
    pp_run_result_free(&r);
}

static js_val *plan_json(const char *extra_env_kill, int *status, char **err_out)
{
    if (extra_env_kill) setenv("FAKE_PROBE_KILL_AT", extra_env_kill, 1);
    else unsetenv("FAKE_PROBE_KILL_AT");
    char *a[] = {(char *)parplan, "plan", "--model", "gpt3-1.3b", "--gpu", "h200", "--gpus", "2", "--gbs", "16",
                 "--probe", "4", "--top", "6", "--json", NULL};
    pp_run_result r;
    run(&r, a);
    *status = r.status;
    char jerr[256];
    js_val *d = r.status == 0 ? js_parse(r.out, jerr, sizeof jerr) : NULL;
    if (err_out) *err_out = strdup(r.err);
    pp_run_result_free(&r);
    return d;
}

static void test_probe(const char *fake)
{
    char cache[256], flog[256];
    snprintf(cache, sizeof cache, "%s/cache/probe-cache.yaml", tmpdir);
    snprintf(flog, sizeof flog, "%s/fake.log", tmpdir);
    setenv("PARPLAN_CACHE", cache, 1);
    setenv("FAKE_PROBE_LOG", flog, 1);

    /* no GPU: one line, exit 1, before any search output */
    setenv("PARPLAN_PROBE", fake, 1);
    setenv("FAKE_PROBE_GPUS", "0", 1);
    pp_run_result r;
    char *a[] = {(char *)parplan, "plan", "--model", "gpt3-1.3b", "--gpu", "h200", "--gpus", "2", "--probe", "4", NULL};
    run(&r, a);
    tap_ok(r.status == 1 && one_line(r.err) == 1 && !r.out[0] && strstr(r.err, "no CUDA GPU"),
           "plan --probe without a GPU: exit 1, one line, no table (%s)", r.err);
    pp_run_result_free(&r);
    setenv("FAKE_PROBE_GPUS", "2", 1);
    /* bad input still comes first (exit 2) */
    char *ab[] = {(char *)parplan, "plan", "--model", "nosuchmodel", "--gpu", "h200", "--gpus", "2", "--probe", "4", NULL};
    run(&r, ab);
    tap_ok(r.status == 2, "plan --probe with a bad model: exit 2 before probing");
    pp_run_result_free(&r);

    /* the real parplan-probe on this machine: without a GPU (or a GPU build) it must say so */
    if (access("/dev/nvidia0", F_OK) != 0) {
        unsetenv("PARPLAN_PROBE");
        run(&r, a);
        tap_ok(r.status == 1 && one_line(r.err) == 1 && !r.out[0], "no GPU here, real probes: exit 1, one line (%s)",
               r.err);
        pp_run_result_free(&r);
        setenv("PARPLAN_PROBE", fake, 1);
    }

    /* first plan: measures; second: everything from the cache */
    remove(flog);
    int st;
    char *errs = NULL;
    js_val *d = plan_json(NULL, &st, &errs);
    int calls = count_lines(flog);
    js_val *cands = js_get(d, "candidates");
    tap_ok(st == 0 && cands && cands->n == 6, "plan --probe 4 --top 6: exit 0, 6 candidates (%s)", errs);
    free(errs);
    int probed = 0;
    bool sorted = true;
    double prev = 0;
    for (int i = 0; cands && i < cands->n; i++) {
        const js_val *c = cands->items[i];
        const js_val *s = js_get(c, "source");
        bool pr = s && s->type == JS_STR && !strcmp(s->str, "probe");
        if (i < 4) {
            probed += pr;
            double t = js_num(c, "step_time_s");
            if (i && t < prev) sorted = false;
            prev = t;
        } else if (pr) {
            probed = -100; /* beyond K: never probed */
        }
    }
    tap_ok(probed == 4 && sorted, "the 4 best are measured (source probe) and re-ranked by their measured time");
    const js_val *p0 = cands && cands->n ? js_get(cands->items[0], "probe") : NULL;
    double mbs = cands && cands->n ? js_num(cands->items[0], "mbs") : 0, tp = cands ? js_num(cands->items[0], "tp") : 0;
    /* the fake's formula: 24 b s h^2 / tp / 400e12 s + 0.1 ms, GPT-3 1.3B: h = s = 2048 */
    double want = 24.0 * mbs * 2048 * 2048.0 * 2048 / tp / 400e12 * 1e3 + 0.1;
    tap_near(js_num(p0, "layer_fwd_ms"), want, 1e-5, "#1's measured layer forward is the probe's figure");
    tap_ok(calls >= 2 && calls <= 5, "first plan: %d probe calls (nccl once, layers batched by micro-batch)", calls);
    js_free(d);

    remove(flog);
    d = plan_json(NULL, &st, NULL);
    cands = js_get(d, "candidates");
    int cached = 0;
    for (int i = 0; cands && i < 4 && i < cands->n; i++) {
        const js_val *pi = js_get(cands->items[i], "probe");
        const js_val *cv = js_get(pi, "cached");
        cached += cv && cv->type == JS_BOOL && cv->b;
    }
    tap_ok(st == 0 && count_lines(flog) == 0 && cached == 4, "a repeated plan measures nothing: %d calls, %d cached",
           count_lines(flog), cached);
    js_free(d);

    /* interrupted on the second call (SIGINT to parplan): the first call's figures survive in a
     * whole cache file, and the next plan measures only what is missing */
    remove(cache);
    remove(flog);
    d = plan_json("2", &st, NULL);
    tap_ok(st == 128 + SIGINT && !d, "interrupted plan --probe dies of SIGINT (status %d)", st);
    js_free(d);
    FILE *f = fopen(cache, "r");
    char buf[8192] = "";
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = 0;
    if (f) fclose(f);
    tap_ok(strstr(buf, "version: 1") && strstr(buf, "nccl n2") && !strstr(buf, "layer h"),
           "the cache holds the first call's collectives, whole, and no layer");
    remove(flog);
    d = plan_json(NULL, &st, NULL);
    FILE *lf = fopen(flog, "r");
    char lbuf[1024] = "";
    n = lf ? fread(lbuf, 1, sizeof lbuf - 1, lf) : 0;
    lbuf[n] = 0;
    if (lf) fclose(lf);
    tap_ok(st == 0 && !strstr(lbuf, "nccl") && strstr(lbuf, "layer"), "the resumed plan measures the layers only (%s)",
           lbuf);
    js_free(d);
    /* a layer probe that fails: the plan goes on with the model's figures, asking once per shape */
    remove(cache);
    remove(flog);
    setenv("FAKE_PROBE_FAIL_LAYER", "1", 1);
    char *errs2 = NULL;
    d = plan_json(NULL, &st, &errs2);
    unsetenv("FAKE_PROBE_FAIL_LAYER");
    cands = js_get(d, "candidates");
    int models = 0;
    for (int i = 0; cands && i < 4 && i < cands->n; i++) {
        const js_val *s = js_get(cands->items[i], "source");
        const js_val *m = js_get(js_get(cands->items[i], "probe"), "modelled");
        models += s && !strcmp(s->str, "model") && m && strstr(m->str, "the probe failed");
    }
    tap_ok(st == 0 && models == 4 && errs2 && strstr(errs2, "warning: parplan-probe layer failed"),
           "a failing layer probe: exit 0, a warning, the 4 keep the model's figures (%d)", models);
    free(errs2);
    int layer_calls = 0;
    lf = fopen(flog, "r");
    char line[256];
    while (lf && fgets(line, sizeof line, lf)) layer_calls += !strncmp(line, "layer", 5);
    if (lf) fclose(lf);
    tap_ok(layer_calls == 2, "each failing shape is asked once (%d layer calls for mbs 8 and 4)", layer_calls);
    js_free(d);

    /* --probe-budget: once spent, the rest keep the model's figures */
    remove(cache);
    remove(flog);
    setenv("FAKE_PROBE_SLEEP", "1.2", 1);
    char *ab2[] = {(char *)parplan, "plan", "--model", "gpt3-1.3b", "--gpu", "h200", "--gpus", "2", "--gbs", "16",
                   "--probe", "4", "--probe-budget", "1", "--json", NULL};
    run(&r, ab2);
    unsetenv("FAKE_PROBE_SLEEP");
    char jb[256];
    d = r.status == 0 ? js_parse(r.out, jb, sizeof jb) : NULL;
    cands = js_get(d, "candidates");
    int spent = 0;
    for (int i = 0; cands && i < 4 && i < cands->n; i++) {
        const js_val *m = js_get(js_get(cands->items[i], "probe"), "modelled");
        spent += m && strstr(m->str, "--probe-budget spent") != NULL;
    }
    tap_ok(r.status == 0 && spent >= 1 && strstr(r.err, "--probe-budget of 1 s spent") && count_lines(flog) == 1,
           "--probe-budget 1 with 1.2 s calls: one call, %d candidates left modelled, a warning", spent);
    js_free(d);
    pp_run_result_free(&r);

    remove(cache);
    remove(flog);
    char cdir[300];
    snprintf(cdir, sizeof cdir, "%s/cache", tmpdir);
    rmdir(cdir);
}

int main(int argc, char **argv)
{
    parplan = getenv("PARPLAN");
    if (!parplan || argc < 3) {
        fprintf(stderr, "usage: PARPLAN=... %s LOGDIR fake-probe.sh\n", argv[0]);
        return 2;
    }
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_calibrate(argv[1]);
    test_plan_no_duplicates();
    test_probe(argv[2]);
    char prof[300];
    snprintf(prof, sizeof prof, "%s/h200-cal.yaml", tmpdir);
    remove(prof);
    rmdir(tmpdir);
    return tap_done();
}
