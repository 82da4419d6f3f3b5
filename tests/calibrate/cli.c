/* Through the CLI: `parplan calibrate` (errors, the fit, the profile it writes and its use
 * by check), and `plan --probe` without a GPU and with a stand-in parplan-probe (fake-probe.sh):
 * measured figures, the cache reused by a repeated plan, and an interrupted plan that resumes.
 * argv[1]: the megatron log directory; argv[2]: fake-probe.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jscan.h"
#include "proc.h"
#include "pp_calibrate.h"
#include "pp_load.h"
#include "pp_probe_cache.h"
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

/* The text of path into buf (n bytes, NUL-terminated; "" when it cannot be read). */
static size_t read_text(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    size_t k = f ? fread(buf, 1, n - 1, f) : 0;
    buf[k] = 0;
    if (f) fclose(f);
    return k;
}

/* newlines to ';': a file's lines in one TAP line */
static char *one_tap_line(char *s)
{
    for (char *q = s; *q; q++) *q = *q == '\n' ? ';' : *q;
    return s;
}

static void run(tc_proc *r, char **argv) { tc_run(argv, r); }

static void test_calibrate(const char *logdir)
{
    tc_proc r;
    char *a0[] = {(char *)parplan, "calibrate", "--gpu", "h200", NULL};
    run(&r, a0);
    tap_ok(r.status == 2 && one_line(r.err) == 1 && !r.out[0], "calibrate without logs: exit 2, one line (%s)", r.err);
    tc_proc_result_free(&r);

    char lg[1024];
    snprintf(lg, sizeof lg, "%s/g27_b1.log", logdir);
    char *a1[] = {(char *)parplan, "calibrate", lg, NULL};
    run(&r, a1);
    tap_ok(r.status == 2 && strstr(r.err, "--gpu") && one_line(r.err) == 1, "calibrate without --gpu: exit 2 (%s)",
           r.err);
    tc_proc_result_free(&r);

    char *a2[] = {(char *)parplan, "calibrate", "--gpu", "h200", "--fit", "gemm,warp", lg, NULL};
    run(&r, a2);
    tap_ok(r.status == 2 && strstr(r.err, "warp"), "--fit warp: exit 2 naming it (%s)", r.err);
    tc_proc_result_free(&r);

    char *a3[] = {(char *)parplan, "calibrate", "--gpu", "h200", "/nonexistent/x.log", NULL};
    run(&r, a3);
    tap_ok(r.status != 0 && one_line(r.err) == 1 && strstr(r.err, "/nonexistent/x.log"),
           "a missing log: one line naming it (%s)", r.err);
    tc_proc_result_free(&r);

    char *a4[] = {(char *)parplan, "calibrate", "--gpu", "h200", lg, NULL};
    run(&r, a4);
    tap_ok(r.status == 2 && strstr(r.err, "at least"), "one log cannot determine 4 factors: exit 2 (%s)", r.err);
    tc_proc_result_free(&r);

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
    tc_proc_result_free(&r);
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
    tc_proc_result_free(&r);
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
    tc_proc_result_free(&r);

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
        tc_proc_result_free(&r);
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
        tc_proc_result_free(&r);
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
    tc_proc_result_free(&r);
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
            tc_proc_result_free(&r);
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
    tc_proc r;
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
    tc_proc_result_free(&r);
}

/* Run argv (a plan with --json): its exit status, its JSON (NULL unless exit 0), its stderr (err_out:
 * the caller frees it) */
static js_val *run_json(char **argv, int *status, char **err_out)
{
    tc_proc r;
    run(&r, argv);
    *status = r.status;
    char jerr[256];
    js_val *d = r.status == 0 ? js_parse(r.out, jerr, sizeof jerr) : NULL;
    if (err_out) *err_out = strdup(r.err);
    tc_proc_result_free(&r);
    return d;
}

static js_val *plan_json(const char *extra_env_kill, int *status, char **err_out)
{
    if (extra_env_kill) setenv("FAKE_PROBE_KILL_AT", extra_env_kill, 1);
    else unsetenv("FAKE_PROBE_KILL_AT");
    char *a[] = {(char *)parplan, "plan", "--model", "gpt3-1.3b", "--gpu", "h200", "--gpus", "2", "--gbs", "16",
                 "--probe", "4", "--top", "6", "--json", NULL};
    return run_json(a, status, err_out);
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
    tc_proc r;
    char *a[] = {(char *)parplan, "plan", "--model", "gpt3-1.3b", "--gpu", "h200", "--gpus", "2", "--probe", "4", NULL};
    run(&r, a);
    tap_ok(r.status == 1 && one_line(r.err) == 1 && !r.out[0] && strstr(r.err, "no CUDA GPU"),
           "plan --probe without a GPU: exit 1, one line, no table (%s)", r.err);
    tc_proc_result_free(&r);
    setenv("FAKE_PROBE_GPUS", "2", 1);
    /* bad input still comes first (exit 2) */
    char *ab[] = {(char *)parplan, "plan", "--model", "nosuchmodel", "--gpu", "h200", "--gpus", "2", "--probe", "4", NULL};
    run(&r, ab);
    tap_ok(r.status == 2, "plan --probe with a bad model: exit 2 before probing");
    tc_proc_result_free(&r);

    /* the real parplan-probe on this machine: without a GPU (or a GPU build) it must say so */
    if (access("/dev/nvidia0", F_OK) != 0) {
        unsetenv("PARPLAN_PROBE");
        run(&r, a);
        tap_ok(r.status == 1 && one_line(r.err) == 1 && !r.out[0], "no GPU here, real probes: exit 1, one line (%s)",
               r.err);
        tc_proc_result_free(&r);
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
    char buf[8192];
    read_text(cache, buf, sizeof buf);
    tap_ok(strstr(buf, "version: 1") && strstr(buf, "nccl n2") && !strstr(buf, "layer h"),
           "the cache holds the first call's collectives, whole, and no layer");
    remove(flog);
    d = plan_json(NULL, &st, NULL);
    char lbuf[1024];
    read_text(flog, lbuf, sizeof lbuf);
    tap_ok(st == 0 && !strstr(lbuf, "nccl") && strstr(lbuf, "layer"), "the resumed plan measures the layers only (%s)",
           one_tap_line(lbuf));
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
    FILE *lf = fopen(flog, "r");
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
    tc_proc_result_free(&r);

    remove(cache);
    remove(flog);
    char cdir[300];
    snprintf(cdir, sizeof cdir, "%s/cache", tmpdir);
    rmdir(cdir);
}

/* plan --probe on an MoE layout (moe-64fg: the first of 8 layers dense, 64 experts top-6, shared
 * experts of 2816; one H200, tp1 pp1 dp1 ep1 mbs2, Megatron's local modules): the stand-in probe is
 * asked for the dense layer, the layer without its MLP and the MoE MLP at the rank's shapes; the step
 * is the time model's with those parts in place of its own (recomputed here from the stand-in's
 * formulas, not from the plan's output); the cache makes a repeated plan measure nothing; a failing
 * moe probe leaves the MoE MLP to the model. */
static js_val *moe_plan(const char *extra, int *status, char **err_out)
{
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    static char model[1200], prof[1200];
    snprintf(model, sizeof model, "%s/tests/data/megatron/models/moe-64fg.yaml", src ? src : ".");
    snprintf(prof, sizeof prof, "%s/tests/data/profiles/h200x2-megatron-local.yaml", src ? src : ".");
    char *a[40] = {(char *)parplan, "plan", "--model", model, "--gpu", "h200", "--gpus", "1", "--tp", "1", "--pp", "1",
                   "--dp", "1", "--ep", "1", "--mbs", "2", "--gbs", "4", "--attention", "unfused", "--impl", "local",
                   "--profile", prof, "--probe", "1", "--top", "1", "--json", NULL};
    int n = 0;
    while (a[n]) n++;
    if (extra) {
        /* grouped experts need TransformerEngine (Megatron's local modules loop over them) */
        for (int i = 0; a[i] && a[i + 1]; i++)
            if (!strcmp(a[i], "--impl")) a[i + 1] = "te";
        a[n++] = (char *)extra, a[n] = NULL;
    }
    return run_json(a, status, err_out);
}

static void test_probe_moe(void)
{
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    char cache[256], flog[256], path[1200];
    snprintf(cache, sizeof cache, "%s/cache-moe/probe-cache.yaml", tmpdir);
    snprintf(flog, sizeof flog, "%s/fake-moe.log", tmpdir);
    setenv("PARPLAN_CACHE", cache, 1);
    setenv("FAKE_PROBE_LOG", flog, 1);
    setenv("FAKE_PROBE_GPUS", "1", 1);
    remove(cache);
    remove(flog);
    int st;
    char *errs = NULL;
    js_val *d = moe_plan(NULL, &st, &errs);
    const js_val *c0 = js_get(d, "candidates");
    c0 = c0 && c0->n ? c0->items[0] : NULL;
    const js_val *src_v = js_get(c0, "source"), *pi = js_get(c0, "probe"), *parts = js_get(pi, "parts");
    tap_ok(st == 0 && src_v && !strcmp(src_v->str, "probe") && parts, "moe-64fg plan --probe 1: exit 0, source probe, "
           "the layer in parts (%s)", errs);
    free(errs);
    /* the calls, in order: optimizer sweep, dense layer, the layer without its MLP, the MoE MLP */
    char lbuf[2048];
    read_text(flog, lbuf, sizeof lbuf);
    const char *want_calls = "optimizer params=10000000,100000000,1000000000\n"
                             "layer mbs=2 tp=1 ffn=10944\n"
                             "layer mbs=2 tp=1 no-mlp\n"
                             "moe hidden=2048 experts=64 topk=6 moe_ffn=1408 shared_ffn=2816 tokens=8192 ep=1 impl=loop\n";
    bool calls_ok = !strcmp(lbuf, want_calls);
    tap_ok(calls_ok, "the probes asked: the dense layer at ffn 10944, the layer without its MLP, the MoE MLP at 8192 "
           "tokens, 64 local experts of 1408, shared 2816, looped (%s)", one_tap_line(lbuf));
    /* the stand-in's figures (fake-probe.sh), b 2, s 4096, h 2048 */
    const double b = 2, sq = 4096, h = 2048, T = 8192, K = 6, F = 1408, S = 2816, E = 64;
    double attn_f = 8 * b * sq * h * h / 400e12 * 1e3 + 0.05, dense_f = 24 * b * sq * h * h / 400e12 * 1e3 + 0.1;
    double x = 6 * T * K * h * F / 400e12 * 1e3 + 0.004 * E, moe_f = x + 6 * T * h * S / 400e12 * 1e3 + 0.03;
    tap_near(js_num(parts, "attention_fwd_ms"), attn_f, 1e-5, "the attention part is the layer probe's --no-mlp figure");
    tap_near(js_num(parts, "moe_fwdbwd_ms"), 3 * moe_f, 1e-5, "the MoE part is the moe probe's");
    tap_near(js_num(parts, "dense_layer_fwd_ms"), dense_f, 1e-5, "the dense layer is the layer probe's at ffn 10944");
    tap_near(js_num(pi, "layer_fwd_ms"), attn_f + moe_f, 1e-5, "the MoE layer forward = attention + MoE MLP (%.4g ms)",
             attn_f + moe_f);
    /* the step: the time model's, with those parts in place of its own */
    pp_work w;
    pp_layout l;
    pp_profile prof;
    pp_probe_cache pc;
    pp_prof_optimizer *rows = NULL;
    pp_error err = {0};
    memset(&w, 0, sizeof w);
    memset(&prof, 0, sizeof prof);
    bool ok = true;
    snprintf(path, sizeof path, "%s/tests/data/megatron/models/moe-64fg.yaml", src ? src : ".");
    ok = ok && pp_model_load_file(&w.model, path, &err) == PP_OK;
    snprintf(path, sizeof path, "%s/models.d/gpus/h200.yaml", src ? src : ".");
    ok = ok && pp_gpu_load_file(&w.gpu, path, &err) == PP_OK;
    snprintf(path, sizeof path, "%s/tests/data/profiles/h200x2-megatron-local.yaml", src ? src : ".");
    ok = ok && pp_profile_load_file(&prof, path, &err) == PP_OK;
    ok = ok && pp_probe_cache_load(&pc, cache, &err) == PP_OK;
    if (ok) {
        /* the probe's profile: the base one with the optimizer steps measured here (no collectives
         * on one GPU) */
        pp_prof_optimizer *base_opt = prof.optimizer;
        int base_n = prof.n_optimizer;
        ok = pp_probe_cache_optimizer_rows(&pc, "NVIDIA H200", &rows, &prof.n_optimizer, &err) == PP_OK;
        prof.optimizer = rows;
        w.gpus = w.gpus_per_node = 1;
        w.gbs = 4;
        w.framework = PP_FW_MEGATRON;
        w.attention = PP_ATTN_UNFUSED;
        pp_stack_init(&w.stack);
        w.stack.impl = PP_IMPL_LOCAL;
        w.stack.impl_given = true;
        pp_stack_resolve(&w);
        w.profile = &prof;
        pp_layout_init(&l);
        l.mbs = 2;
        ok = ok && pp_layout_validate(&w, &l, &err) == PP_OK;
        pp_time_opts o;
        pp_time_opts_default(&w, &o);
        double f[PP_LAYER_KINDS] = {0}, fb[PP_LAYER_KINDS] = {0};
        f[PP_LAYER_MOE] = (attn_f + moe_f) * 1e-3, fb[PP_LAYER_MOE] = 3 * f[PP_LAYER_MOE];
        f[0] = dense_f * 1e-3, fb[0] = 3 * f[0];
        pp_time_result r;
        pp_time_measured mi;
        pp_time_step_measured_kinds(&w, &l, &o, &prof.probe_calibration, f, fb, &r, &mi);
        tap_near(js_num(c0, "step_time_s"), r.step_time_s, 1e-6,
                 "the step is the time model's with the measured layers in place (%.6g s; model %.6g s)", r.step_time_s,
                 js_num(pi, "model_step_time_s"));
        free(rows);
        prof.optimizer = base_opt;
        prof.n_optimizer = base_n;
        char key[192];
        snprintf(key, sizeof key, "moe h2048 e64 k6 f1408 s2816 T8192 ep1 loop");
        tap_ok(pp_probe_cache_get(&pc, "NVIDIA H200", key) && pp_probe_cache_get(&pc, "NVIDIA H200", "layer h2048 a16 g16 "
               "f0 s4096 b2 t1 none unfused") && pp_probe_cache_get(&pc, "NVIDIA H200", "moe h2048 e64 k6 f1408 s2816 "
               "T8192 ep1 loop experts"), "the cache holds the attention, the MoE MLP and its experts' share");
        pp_probe_cache_free(&pc);
        pp_profile_free(&prof);
    }
    tap_ok(ok, "the work rebuilt for the check (%s)", err.msg);
    double step1 = js_num(c0, "step_time_s");
    js_free(d);

    /* again: everything from the cache */
    remove(flog);
    d = moe_plan(NULL, &st, NULL);
    c0 = js_get(d, "candidates");
    c0 = c0 && c0->n ? c0->items[0] : NULL;
    const js_val *cached = js_get(js_get(c0, "probe"), "cached");
    tap_ok(st == 0 && count_lines(flog) == 0 && cached && cached->b && js_num(c0, "step_time_s") == step1,
           "a repeated MoE plan measures nothing: %d calls, the same step", count_lines(flog));
    js_free(d);

    /* grouped experts: only the MoE MLP is measured again, grouped */
    remove(flog);
    d = moe_plan("--moe-grouped-gemm", &st, NULL);
    read_text(flog, lbuf, sizeof lbuf);
    bool grouped = strstr(lbuf, "impl=grouped") && !strstr(lbuf, "impl=loop");
    tap_ok(st == 0 && grouped, "--impl te --moe-grouped-gemm: the MoE MLP measured grouped (%s)", one_tap_line(lbuf));
    js_free(d);

    /* a moe probe that fails: a warning, the attention still measured, the MoE MLP the model's */
    remove(cache);
    remove(flog);
    setenv("FAKE_PROBE_FAIL_MOE", "1", 1);
    errs = NULL;
    d = moe_plan(NULL, &st, &errs);
    unsetenv("FAKE_PROBE_FAIL_MOE");
    c0 = js_get(d, "candidates");
    c0 = c0 && c0->n ? c0->items[0] : NULL;
    src_v = js_get(c0, "source");
    const js_val *mod = js_get(js_get(c0, "probe"), "modelled");
    tap_ok(st == 0 && src_v && !strcmp(src_v->str, "probe") && mod && strstr(mod->str, "MoE MLP (the probe failed)") &&
               errs && strstr(errs, "warning: parplan-probe moe failed"),
           "a failing moe probe: exit 0, a warning, the MoE MLP left to the model (%s)", mod ? mod->str : "-");
    free(errs);
    js_free(d);
    remove(cache);
    remove(flog);
    snprintf(path, sizeof path, "%s/cache-moe", tmpdir);
    rmdir(path);
    setenv("FAKE_PROBE_GPUS", "2", 1);
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
    test_probe_moe();
    char prof[300];
    snprintf(prof, sizeof prof, "%s/h200-cal.yaml", tmpdir);
    remove(prof);
    rmdir(tmpdir);
    return tap_done();
}
