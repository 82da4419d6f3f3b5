/* Extreme sizes through the whole CLI: a 1e15-parameter model on 1e6 GPUs through
 * check, plan and estimate, plus the largest and smallest shapes the flags accept. Every output
 * must be finite: the JSON parses strictly (no NaN/Infinity tokens, no number overflowing a
 * double, no null standing in for one), the text output has no nan/inf word, and the figures
 * are the right size (an int64 overflow shows up as a negative or tiny value, not as a crash).
 *
 * The 1e15 model: L = 8192, h = 102400, a = 800, V = 256000, s = 4096:
 *   12 L h^2 = 12 * 8192 * 102400^2 = 1.0308e15 parameters in the layers (GPT, 4h MLP).
 * The cluster: 1,000,000 GPUs, 8 per node; layout tp 8 x pp 125 -> dp 1000, gbs 1,000,000. */
#include "jscan.h"
#include "proc.h"
#include "tap.h"

#define MODEL_1E15 "--layers", "8192", "--hidden", "102400", "--heads", "800", "--vocab", "256000", \
                   "--seq", "4096"
#define CLUSTER_1E6 "--gpu", "a100-80gb", "--gpus", "1000000", "--gpus-per-node", "8", "--gbs", "1000000"
#define LAYOUT_1E6 "--tp", "8", "--pp", "125", "--mbs", "1"

static const char *parplan;

/* Run parplan with the NULL-terminated args. */
static void run(tc_proc *r, const char *const *args)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = parplan;
    for (int i = 0; args[i] && n < 63; i++) argv[n++] = args[i];
    argv[n] = NULL;
    tc_run((char *const *)argv, r);
}

static void show_fail(const tc_proc *r)
{
    tap_diag("exit %d%s, %.2f s, %ld MiB", r->status, r->timed_out ? " (timed out)" : "", r->wall_s,
             r->maxrss_kib / 1024);
    if (r->err_len) tap_diag("stderr: %.600s", r->err);
    if (r->out_len) tap_diag("stdout: %.600s", r->out);
}

/* A null is fine for an absent value ("why": null when it fits, no price given), never for a
 * figure the run computed: those keys end in _bytes, _s, _per_s, _per_gpu, or are mfu. */
static int is_figure_key(const char *path)
{
    const char *k = strrchr(path, '.');
    k = k ? k + 1 : path;
    static const char *const ends[] = {"_bytes", "_s", "_per_s", "_per_gpu", "mfu", "weights", "grads",
                                       "optimizer", "activations", "transient", "reserved", "evaluated"};
    size_t n = strlen(k);
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        size_t e = strlen(ends[i]);
        if (n >= e && !strcmp(k + n - e, ends[i])) return 1;
    }
    return 0;
}

/* Nulls at figure keys anywhere in v; the first one's path goes to where. */
static int figure_nulls(const js_val *v, const char *path, char *where, size_t wn)
{
    if (!v) return 0;
    if (v->type == JS_NULL) {
        if (!is_figure_key(path)) return 0;
        if (!where[0]) snprintf(where, wn, "%s", path);
        return 1;
    }
    int n = 0;
    for (int i = 0; i < v->n; i++) {
        char sub[512];
        if (v->type == JS_OBJ) snprintf(sub, sizeof sub, "%s.%s", path, v->keys[i]);
        else snprintf(sub, sizeof sub, "%s[%d]", path, i);
        n += figure_nulls(v->items[i], sub, where, wn);
    }
    return n;
}

/* stderr is empty, or (with exit 1) one "parplan: " line: a result, not a crash report. */
static int err_is_clean(const tc_proc *r)
{
    if (r->err_len == 0) return 1;
    const char *nl = memchr(r->err, '\n', r->err_len);
    return nl && (size_t)(nl - r->err) + 1 == r->err_len && !strncmp(r->err, "parplan: ", 9) &&
           !tc_proc_find_nonfinite_msg(r->err);
}

/* Common checks of one --json run; returns the parsed document. allow_1: exit 1 is a valid
 * answer too (plan: "no layout fits", with the JSON of the closest layouts on stdout). */
static js_val *check_json_run(const char *name, tc_proc *r, int allow_1)
{
    int rc_ok = !r->timed_out && (r->status == 0 || (allow_1 && r->status == 1));
    if (!tap_ok(rc_ok, "%s: exit %s in bounded time (got %d)", name, allow_1 ? "0 or 1" : "0", r->status))
        show_fail(r);
    tap_ok(err_is_clean(r), "%s: stderr empty or one 'parplan: ' line, no nan/inf", name);
    char err[256] = "";
    js_val *doc = js_parse(r->out, err, sizeof err);
    if (!tap_ok(doc != NULL, "%s: stdout is one strict JSON document, every number finite", name))
        tap_diag("%s", err);
    char where[512] = "";
    int nulls = figure_nulls(doc, "$", where, sizeof where);
    if (!tap_ok(doc && nulls == 0, "%s: no null standing in for a computed figure", name))
        tap_diag("%d nulls, first at %s", nulls, where);
    return doc;
}

static int in_range(double v, double lo, double hi) { return isfinite(v) && v >= lo && v <= hi; }

static void test_check_1e15(void)
{
    const char *args[] = {"check", MODEL_1E15, CLUSTER_1E6, LAYOUT_1E6, "--json", NULL};
    tc_proc r;
    run(&r, args);
    js_val *doc = check_json_run("check 1e15 params / 1e6 GPUs", &r, 1); /* check exits 1: does not fit */
    const js_val *fits = js_get(doc, "fits");
    tap_ok(fits && fits->type == JS_BOOL && !fits->b, "check 1e15: does not fit an 80 GB GPU");
    double cap = js_num(doc, "capacity_bytes");
    if (!tap_ok(in_range(cap, 7e10, 9e10), "check 1e15: capacity_bytes of an A100-80GB")) tap_diag("%g", cap);
    /* The weights alone of one rank: 1.03e15 params / (tp 8 x pp 125) x 2 bytes = 2.06e12. */
    double peak = js_num(doc, "peak_bytes");
    if (!tap_ok(in_range(peak, 2.0e12, 1e15), "check 1e15: peak_bytes %.4g is at least the bf16 weights of a rank", peak))
        tap_diag("%g", peak);
    const js_val *stages = js_get(doc, "stages");
    int n = stages && stages->type == JS_ARR ? stages->n : -1;
    tap_ok(n == 125, "check 1e15: 125 stages (got %d)", n);
    double layers = 0;
    int bad_stage = -1;
    for (int i = 0; i < n; i++) {
        const js_val *s = stages->items[i];
        double k = js_num(s, "layers");
        layers += k;
        const js_val *b = js_get(s, "breakdown");
        /* One layer's weights per TP rank: 12 h^2 / 8 params; the stage holds k of them. Any
         * byte-per-parameter convention lies in [1.9, 6.1] (bf16 .. bf16 + fp32). */
        double per_layer = 12.0 * 102400.0 * 102400.0 / 8;
        double w = js_num(b, "weights");
        bool ok = in_range(k, 65, 66) && in_range(w, 1.9 * per_layer * k, 6.1 * per_layer * k + 2e11);
        const char *parts[] = {"grads", "optimizer", "activations", "transient", "reserved"};
        double sum = w;
        for (int p = 0; p < 5; p++) {
            double x = js_num(b, parts[p]);
            ok = ok && in_range(x, 0, 1e16);
            if (p < 4) sum += x;
        }
        double sp = js_num(s, "peak_bytes");
        /* pp_memory.h: a stage's allocator peak = weights + grads + optimizer + activations +
         * transient; no stage above the reported maximum. */
        ok = ok && in_range(sp, w, 1e16) && fabs(sp - sum) <= 1e-6 * sum && sp <= peak * 1.000001;
        if (!ok && bad_stage < 0) bad_stage = i;
    }
    if (!tap_ok(n > 0 && bad_stage < 0, "check 1e15: every stage's breakdown is finite, sized like its layers"))
        tap_diag("first bad stage %d", bad_stage);
    tap_ok(layers == 8192, "check 1e15: the stages hold the 8192 layers (got %.0f)", layers);
    double step = js_num(doc, "step_time_s"), sps = js_num(doc, "samples_per_s"),
           tps = js_num(doc, "tokens_per_s"), mfu = js_num(doc, "mfu"),
           tflops = js_num(doc, "model_tflops_per_gpu");
    tap_ok(in_range(step, 1e-3, 1e12), "check 1e15: step_time_s %.4g finite and positive", step);
    tap_near(sps * step, 1e6, 1e-3, "check 1e15: samples_per_s x step_time_s = gbs");
    tap_near(tps, sps * 4096, 1e-5, "check 1e15: tokens_per_s = samples_per_s x seq"); /* 6 digits printed */
    tap_ok(in_range(mfu, 1e-9, 1.0), "check 1e15: 0 < mfu %.4g <= 1", mfu);
    tap_ok(in_range(tflops, 1e-6, 1e4), "check 1e15: model_tflops_per_gpu %.4g finite", tflops);
    js_free(doc);
    tc_proc_result_free(&r);

    /* The same as a table. */
    const char *targs[] = {"check", MODEL_1E15, CLUSTER_1E6, LAYOUT_1E6, NULL};
    run(&r, targs);
    if (!tap_ok(!r.timed_out && r.status == 1 && r.out_len > 0, "check 1e15 (table): exit 1 (does not fit) with output"))
        show_fail(&r);
    const char *bad = tc_proc_find_nonfinite(r.out);
    if (!tap_ok(!bad && !tc_proc_find_nonfinite(r.err), "check 1e15 (table): no nan/inf printed"))
        tap_diag("at: %.60s", bad ? bad : "stderr");
    tc_proc_result_free(&r);
}

static void test_plan_1e15(void)
{
    const char *args[] = {"plan", MODEL_1E15, CLUSTER_1E6, "--top", "20", "--json", NULL};
    tc_proc r;
    run(&r, args);
    js_val *doc = check_json_run("plan 1e15 params / 1e6 GPUs", &r, 1);
    double ev = js_num(doc, "evaluated");
    tap_ok(in_range(ev, 1, 1e12), "plan 1e15: evaluated %.0f layouts", ev);
    const js_val *cands = js_get(doc, "candidates");
    int n = cands && cands->type == JS_ARR ? cands->n : -1;
    tap_ok(n >= 0 && n <= 20, "plan 1e15: a candidates array of at most --top 20 (got %d)", n);
    int bad = -1;
    for (int i = 0; i < n; i++) {
        const js_val *c = cands->items[i];
        double prod = js_num(c, "tp") * js_num(c, "pp") * js_num(c, "dp") * js_num(c, "cp");
        bool ok = prod == 1e6 && in_range(js_num(c, "peak_bytes"), 2e9, 1e16) &&
                  in_range(js_num(c, "step_time_s"), 1e-6, 1e12) &&
                  in_range(js_num(c, "samples_per_s"), 1e-9, 1e12) &&
                  in_range(js_num(c, "model_tflops_per_gpu"), 0, 1e4);
        if (!ok && bad < 0) bad = i;
    }
    if (!tap_ok(bad < 0, "plan 1e15: every candidate uses the 1e6 GPUs with finite, positive figures"))
        tap_diag("first bad candidate %d", bad);
    js_free(doc);
    tc_proc_result_free(&r);

    const char *targs[] = {"plan", MODEL_1E15, CLUSTER_1E6, NULL};
    run(&r, targs);
    if (!tap_ok(!r.timed_out && (r.status == 0 || r.status == 1) && err_is_clean(&r) && r.out_len > 0,
                "plan 1e15 (table): a table, exit 0 or 1 (nothing fits)"))
        show_fail(&r);
    tap_ok(!tc_proc_find_nonfinite(r.out) && !tc_proc_find_nonfinite(r.err), "plan 1e15 (table): no nan/inf printed");
    tc_proc_result_free(&r);
}

static void test_estimate_1e15(void)
{
    const char *args[] = {"estimate", MODEL_1E15, CLUSTER_1E6, LAYOUT_1E6, "--tokens", "1e18",
                          "--price-per-gpu-hour", "1e6", "--json", NULL};
    tc_proc r;
    run(&r, args);
    /* it does not fit: exit 1, the verdict and no days or cost as if it ran */
    js_val *doc = check_json_run("estimate 1e15 params / 1e6 GPUs / 1e18 tokens", &r, 1);
    const js_val *days = doc ? js_get(doc, "days") : NULL;
    tap_ok(r.status == 1 && days && days->type == JS_NULL, "estimate 1e15: does not fit, exit 1, days null");
    js_free(doc);
    tc_proc_result_free(&r);
    const char *targs[] = {"estimate", MODEL_1E15, CLUSTER_1E6, LAYOUT_1E6, "--tokens", "1e18",
                           "--price-per-gpu-hour", "1e6", NULL};
    run(&r, targs);
    if (!tap_ok(!r.timed_out && r.status == 1, "estimate 1e15 (table): exit 1 (does not fit)")) show_fail(&r);
    tap_ok(!tc_proc_find_nonfinite(r.out) && !tc_proc_find_nonfinite(r.err), "estimate 1e15 (table): no nan/inf printed");
    tc_proc_result_free(&r);
}

/* Shapes at the flags' limits: the answer may be "bad input" (exit 2), "nothing fits / no
 * layout" (exit 1, plan), or a result (exit 0), but never a crash, a hang, a multi-line error,
 * an overflowed figure or a NaN. */
static void test_edges(void)
{
    static const char *const cases[][40] = {
        {"check", "--layers", "1000000", "--hidden", "100000000", "--heads", "1000000", "--vocab",
         "100000000", "--seq", "100000000", "--gpu", "a100-80gb", "--gpus", "10000000", "--json", NULL},
        {"check", "--layers", "1000000", "--hidden", "100000000", "--heads", "1", "--vocab", "100000000",
         "--seq", "100000000", "--ffn", "100000000", "--experts", "100000", "--topk", "100000", "--gpu",
         "h100-sxm", "--gpus", "1000000", "--gbs", "100000000", "--json", NULL},
        {"plan", "--layers", "1000000", "--hidden", "100000000", "--heads", "1000000", "--vocab",
         "100000000", "--seq", "100000000", "--gpu", "a100-80gb", "--gpus", "10000000", "--json", NULL},
        {"estimate", "--layers", "1000000", "--hidden", "100000000", "--heads", "1000000", "--vocab",
         "100000000", "--seq", "100000000", "--gpu", "a100-80gb", "--gpus", "10000000", "--tokens", "1e18",
         "--price-per-gpu-hour", "1e6", "--json", NULL},
        /* the most layers the flag accepts: 1e6 layers of h 1000 (1.2e13 parameters in the layers) */
        {"check", "--layers", "1000000", "--hidden", "1000", "--heads", "8", "--vocab", "100000000",
         "--seq", "100000000", "--gpu", "b200", "--gpus", "8", "--gbs", "8", "--json", NULL},
        {"check", "--layers", "1", "--hidden", "1", "--heads", "1", "--vocab", "1", "--seq", "1",
         "--gpu", "a100-80gb", "--gpus", "1", "--gbs", "1", "--json", NULL},
        {"plan", "--layers", "1", "--hidden", "1", "--heads", "1", "--vocab", "1", "--seq", "1",
         "--gpu", "a100-80gb", "--gpus", "1", "--gbs", "1", "--json", NULL},
        {"estimate", "--layers", "1", "--hidden", "1", "--heads", "1", "--vocab", "1", "--seq", "1",
         "--gpu", "a100-80gb", "--gpus", "1", "--gbs", "1", "--tokens", "1", "--json", NULL},
        /* 2^23 GPUs and the largest global batch, 1e8 sequences: 2e11 tokens a step */
        {"check", "--model", "gpt3-175b", "--gpu", "a100-80gb", "--gpus", "8388608", "--gpus-per-node",
         "1024", "--tp", "8", "--pp", "32", "--gbs", "100000000", "--json", NULL},
        {"estimate", "--model", "gpt3-175b", "--gpu", "a100-80gb", "--gpus", "8388608", "--gpus-per-node",
         "1024", "--tp", "8", "--pp", "32", "--gbs", "100000000", "--tokens", "1e18",
         "--price-per-gpu-hour", "1e6", "--json", NULL},
        {"plan", "--model", "gpt3-175b", "--gpu", "a100-80gb", "--gpus", "1000000", "--gbs",
         "100000000", "--json", NULL},
        {"plan", "--model", "llama3-405b", "--gpu", "h100-sxm", "--gpus", "1000000", "--json", NULL},
        {"plan", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--gpus", "1048576", "--json", NULL},
        {"estimate", "--model", "gpt3-175b", "--gpu", "a100-80gb", "--gpus", "8", "--tokens", "1e18",
         "--price-per-gpu-hour", "1e6", "--json", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tc_proc r;
        run(&r, cases[i]);
        char err[256] = "", where[512] = "";
        bool ok;
        const char *why = "";
        if (r.timed_out || r.status < 0 || r.status > 2) {
            ok = false;
            why = "exit status not 0, 1 or 2 (a crash or a hang)";
        } else if (!err_is_clean(&r) || (r.status != 0 && r.err_len == 0 && strcmp(cases[i][0], "check"))) {
            /* (check's exit 1 is its verdict, "does not fit", with the answer on stdout) */
            ok = false;
            why = "stderr is not empty or one 'parplan: ' line (an error needs one)";
        } else if (r.status == 2 && r.out_len) {
            ok = false;
            why = "bad input, yet something on stdout";
        } else if (r.out_len) {
            js_val *doc = js_parse(r.out, err, sizeof err);
            ok = doc && figure_nulls(doc, "$", where, sizeof where) == 0;
            why = doc ? "a null where a figure belongs" : err;
            js_free(doc);
        } else {
            ok = r.status != 0;
            why = "exit 0 with nothing on stdout";
        }
        char label[160] = "";
        size_t ll = 0;
        for (int k = 0; cases[i][k] && ll < sizeof label - 24; k++)
            ll += (size_t)snprintf(label + ll, sizeof label - ll, "%s ", cases[i][k]);
        if (!tap_ok(ok, "edge %zu: %s-> exit %d", i, label, r.status)) {
            tap_diag("%s %s", why, where);
            show_fail(&r);
        } else if (r.status) {
            tap_diag("%.300s", r.err);
        }
        tc_proc_result_free(&r);
    }
}

int main(void)
{
    parplan = getenv("PARPLAN");
    if (!parplan || !*parplan) {
        printf("Bail out! PARPLAN is not set\n");
        return 1;
    }
    test_check_1e15();
    test_plan_1e15();
    test_estimate_1e15();
    test_edges();
    return tap_done();
}
