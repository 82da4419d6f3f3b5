/* `parplan plan` and `parplan estimate` through the binary ($PARPLAN): the JSON fields of
 * docs/cli.md, the human table's funnel and explanation, fixed flags, errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"
#include "proc.h"
#include "tap.h"

static const char *exe;

static bool run(tc_proc *r, char **args)
{
    char *argv[64];
    int n = 0;
    argv[n++] = (char *)exe;
    for (int i = 0; args[i] && n < 63; i++) argv[n++] = args[i];
    argv[n] = NULL;
    tc_run(argv, r);
    return r->status == 0;
}

static void test_plan_json(void)
{
    char *args[] = {"plan", "--model", "gpt3-13b", "--gpu", "a100-80gb", "--gpus", "16", "--gpus-per-node", "8",
                    "--json", "--top", "3", NULL};
    tc_proc r;
    bool ok = run(&r, args);
    char err[256] = "";
    js_val *doc = ok ? js_parse(r.out, err, sizeof err) : NULL;
    if (!tap_ok(ok && doc, "plan --json: exit 0 and one JSON document (%s%s)", err, ok ? "" : r.err)) {
        tc_proc_result_free(&r);
        return;
    }
    double evaluated = js_num(doc, "evaluated");
    const js_val *pruned = js_get(doc, "pruned");
    const js_val *cands = js_get(doc, "candidates");
    tap_ok(evaluated > 0 && pruned && pruned->type == JS_OBJ && !isnan(js_num(doc, "search_time_s")) && cands &&
               cands->type == JS_ARR && cands->n == 3,
           "plan --json: evaluated, pruned{}, search_time_s, 3 candidates");
    double sum = js_num(doc, "fitting");
    for (int i = 0; pruned && i < pruned->n; i++) sum += pruned->items[i]->num;
    tap_ok(sum == evaluated && !isnan(js_num(pruned, "oom")) && !isnan(js_num(pruned, "tp_shape")),
           "plan --json: pruned counts (each reason named) + fitting = evaluated");
    static const char *const fields[] = {"tp", "pp", "dp", "vpp", "cp", "ep", "mbs", "zero", "dist_opt", "sp",
                                         "recompute", "peak_bytes", "fits", "step_time_s", "samples_per_s",
                                         "model_tflops_per_gpu", "source"};
    int missing = 0;
    double prev = 0;
    bool sorted = true;
    for (int i = 0; cands && i < cands->n; i++) {
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
            if (!js_get(cands->items[i], fields[f])) {
                missing++;
                printf("# candidate %d lacks %s\n", i, fields[f]);
            }
        double t = js_num(cands->items[i], "step_time_s");
        if (i && t < prev) sorted = false;
        prev = t;
    }
    tap_ok(missing == 0, "plan --json: every candidate has the cli.md fields");
    tap_ok(sorted, "plan --json: best first");
    const js_val *src = cands && cands->n ? js_get(cands->items[0], "source") : NULL;
    const js_val *rc = cands && cands->n ? js_get(cands->items[0], "recompute") : NULL;
    tap_ok(src && src->type == JS_STR && !strcmp(src->str, "model") && rc && rc->type == JS_STR,
           "plan --json: source \"model\", recompute a name");
    double mtf = cands && cands->n ? js_num(cands->items[0], "model_tflops_per_gpu") : NAN;
    double sps = cands && cands->n ? js_num(cands->items[0], "samples_per_s") : NAN;
    double st = cands && cands->n ? js_num(cands->items[0], "step_time_s") : NAN;
    /* each printed with 6 significant digits (json.c): the product within 1e-5 */
    tap_near(sps * st, 1024, 1e-5, "samples_per_s x step_time_s = global batch");
    tap_ok(mtf > 100 && mtf < 312, "model TFLOP/s per GPU %.1f below the A100's 312 peak", mtf);
    js_free(doc);
    tc_proc_result_free(&r);
}

static void test_plan_table(void)
{
    char *args[] = {"plan", "--model", "gpt3-13b", "--gpu", "a100-80gb", "--gpus", "16", "--gpus-per-node", "8",
                    NULL};
    tc_proc r;
    bool ok = run(&r, args);
    tap_ok(ok && strstr(r.out, "pruning funnel") && strstr(r.out, "fit and were ranked") &&
               strstr(r.out, "why #1 wins") && strstr(r.out, "#2 (") && strstr(r.out, "#3 ("),
           "plan: table, funnel and why #1 beats #2 and #3");
    tap_ok(r.err_len == 0, "plan: nothing on stderr (%s)", r.err);
    tc_proc_result_free(&r);

    char *fixed[] = {"plan", "--model", "gpt3-13b", "--gpu", "a100-80gb", "--gpus", "16", "--tp", "4", "--pp",
                     "1", "--json", "--top", "2", NULL};
    ok = run(&r, fixed);
    char err[256] = "";
    js_val *doc = ok ? js_parse(r.out, err, sizeof err) : NULL;
    const js_val *c = doc ? js_get(doc, "candidates") : NULL;
    bool all = c && c->n > 0;
    for (int i = 0; c && i < c->n; i++)
        all = all && js_num(c->items[i], "tp") == 4 && js_num(c->items[i], "pp") == 1 && js_num(c->items[i], "dp") == 4;
    tap_ok(all, "plan --tp 4 --pp 1: every candidate keeps them (dp 4)");
    js_free(doc);
    tc_proc_result_free(&r);

    char *bad[] = {"plan", "--model", "gpt3-13b", "--gpu", "a100-80gb", "--gpus", "16", "--zero", "2", NULL};
    run(&r, bad);
    tap_ok(r.status == 2 && strstr(r.err, "parplan: ") && strstr(r.err, "--zero") && r.out_len == 0,
           "plan --zero 2 with megatron: exit 2, one line naming --zero");
    tc_proc_result_free(&r);

    char *nofit[] = {"plan", "--model", "gpt3-175b", "--gpu", "a100-80gb", "--gpus", "8", "--top", "2", NULL};
    run(&r, nofit);
    tap_ok(r.status == 1 && strstr(r.err, "no layout fits") && strstr(r.out, "OOM"),
           "plan 175B on 8 GPUs: exit 1, closest OOM layouts shown, reason on stderr");
    tc_proc_result_free(&r);
}

static void test_estimate(void)
{
    /* GPT-3 175B on 1024 A100s, 300B tokens (Narayanan et al. SC'21 sec. 5.1: ~34 days at
     * 140 TFLOP/s per GPU with the 2021 software: unfused attention, full recompute). */
    char *args[] = {"estimate", "--model", "gpt3-175b", "--gpu", "a100-80gb", "--gpus", "1024", "--gbs", "1536",
                    "--tp", "8", "--pp", "8", "--mbs", "1", "--attention", "unfused", "--recompute", "full",
                    "--tokens", "300e9", "--price-per-gpu-hour", "2", "--json", NULL};
    tc_proc r;
    bool ok = run(&r, args);
    char err[256] = "";
    js_val *doc = ok ? js_parse(r.out, err, sizeof err) : NULL;
    double days = doc ? js_num(doc, "days") : NAN, gh = doc ? js_num(doc, "gpu_hours") : NAN;
    double cost = doc ? js_num(doc, "cost") : NAN, steps = doc ? js_num(doc, "steps") : NAN;
    printf("# 175B / 300B tokens / 1024 A100: %.1f days, %.3g GPU-hours, cost %.3g at 2 per GPU-hour\n", days, gh,
           cost);
    tap_ok(ok && doc, "estimate --json ran (%s)", ok ? err : r.err);
    tap_near(steps, ceil(300e9 / (1536.0 * 2048)), 1e-12, "steps = tokens / (gbs x seq)");
    tap_near(gh, days * 24 * 1024, 1e-5, "GPU-hours = days x 24 x GPUs (JSON keeps 6 digits)");
    tap_near(cost, 2 * gh, 1e-5, "cost = GPU-hours x price");
    tap_near(days, 34, 0.15, "about the 34 days of SC'21 sec. 5.1");
    js_free(doc);
    tc_proc_result_free(&r);

    char *notok[] = {"estimate", "--model", "gpt3-13b", "--gpu", "a100-80gb", "--gpus", "16", NULL};
    run(&r, notok);
    tap_ok(r.status == 2 && strstr(r.err, "--tokens"), "estimate without --tokens: exit 2 naming --tokens");
    tc_proc_result_free(&r);
}

/* plan's default margin (pp_memory.h PP_MEM_MARGIN_DEFAULT 0.12): 13B on 16 A100-80GB, whose fastest
 * layout in the whole GPU (tp2 dp8 mbs4 dist-opt sp) needs 78.9 GiB. */
static void test_plan_margin(void)
{
    const double gib = 1073741824.0, cap = 80.0 * gib; /* models.d a100-80gb: 81920 MiB */
    char *deflt[] = {"plan", "--model", "gpt3-13b", "--gpu", "a100-80gb", "--gpus", "16", "--gpus-per-node", "8",
                     "--json", "--top", "5", NULL};
    char *whole[] = {"plan", "--model", "gpt3-13b", "--gpu", "a100-80gb", "--gpus", "16", "--gpus-per-node", "8",
                     "--json", "--top", "5", "--max-mem-frac", "1", NULL};
    tc_proc r;
    char err[256] = "";
    double worst = 0, first_whole = 0, margin_pruned = NAN, margin_whole = NAN;
    bool all_within = true;
    run(&r, deflt);
    js_val *d = r.status == 0 ? js_parse(r.out, err, sizeof err) : NULL;
    const js_val *c = js_get(d, "candidates");
    for (int i = 0; c && i < c->n; i++) {
        double need = js_num(c->items[i], "need_bytes");
        if (need > worst) worst = need;
        const js_val *w = js_get(c->items[i], "within_margin");
        all_within &= w && w->type == JS_BOOL && w->b;
    }
    margin_pruned = js_num(js_get(d, "pruned"), "margin");
    js_free(d);
    tc_proc_result_free(&r);
    run(&r, whole);
    d = r.status == 0 ? js_parse(r.out, err, sizeof err) : NULL;
    c = js_get(d, "candidates");
    if (c && c->n) first_whole = js_num(c->items[0], "need_bytes");
    margin_whole = js_num(js_get(d, "pruned"), "margin");
    js_free(d);
    tc_proc_result_free(&r);
    printf("# default: largest need of the top 5 %.2f GiB, %g layouts inside the margin; --max-mem-frac 1: #1 needs "
           "%.2f GiB\n", worst / gib, margin_pruned, first_whole / gib);
    tap_ok(worst > 0 && worst <= 0.88 * cap && all_within, "default plan: every candidate within 0.88 x 80 GiB");
    tap_ok(margin_pruned > 0 && margin_whole == 0, "pruned.margin counts the layouts the margin removed (%g; 0 with "
           "--max-mem-frac 1)", margin_pruned);
    tap_ok(first_whole > 0.88 * cap && first_whole <= cap,
           "--max-mem-frac 1: #1 fills the GPU past the default margin (%.2f GiB)", first_whole / gib);

    /* a fixed layout inside the margin: plan says so and how to plan with all of it (exit 1) */
    char *fixed[] = {"plan", "--model", "gpt3-13b", "--gpu", "a100-80gb", "--gpus", "16", "--gpus-per-node", "8",
                     "--tp", "2", "--pp", "1", "--dp", "8", "--cp", "1", "--mbs", "4", "--dist-opt", "--sp", "--recompute", "none",
                     NULL};
    run(&r, fixed);
    tap_ok(r.status == 1 && strstr(r.err, "(the margin plan keeps)") && strstr(r.err, "--max-mem-frac 1"),
           "a fixed layout at 78.9 of 80 GiB: exit 1, names the margin and --max-mem-frac 1 (%.160s)", r.err);
    tc_proc_result_free(&r);
}

int main(void)
{
    exe = getenv("PARPLAN");
    if (!exe || access(exe, X_OK)) return tap_skip_all("PARPLAN is not set to the parplan binary");
    test_plan_json();
    test_plan_table();
    test_plan_margin();
    test_estimate();
    return tap_done();
}
