/* Recipes (recipes.d, planner/model/recipe.c).
 *   recipes unit:  every file of recipes.d loads and names itself; bad files are errors at their
 *                  line:col; through the binary: a recipe's fields over the defaults, a flag over a
 *                  recipe field, --megatron-args over the recipe, the JSON's sources, the errors.
 *   recipes check: every recipe checked against a measured or published run
 *                  (tests/data/recipes/checks.csv), and every recipe of recipes.d has one.
 *   recipes table FILE: the rows of FILE (checks.csv's columns; a published table of one
 *                  stack), each within its tolerance, and the median error per metric printed.
 *   recipes PARPLAN SOURCE_DIR unit|check|table FILE */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "csv_cols.h"
#include "jscan.h"
#include "pp_recipe.h"
#include "proc.h"
#include "tap.h"

static const char *parplan, *src;

/* parplan check ARGS... --json -q: its JSON, or NULL; *status, *errtext (static) */
static js_val *check(const char *line, int *status, char *errtext, size_t en)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s", line);
    char *argv[128];
    int k = 0;
    argv[k++] = (char *)parplan;
    argv[k++] = "check";
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && k < 120; t = strtok_r(NULL, " ", &save)) argv[k++] = t;
    argv[k++] = "--json";
    argv[k++] = "-q";
    argv[k] = NULL;
    tc_proc r;
    tc_run(argv, &r);
    *status = r.status;
    if (errtext) {
        snprintf(errtext, en, "%s", r.err);
        errtext[strcspn(errtext, "\n")] = 0;
    }
    char e[128];
    js_val *v = r.status == 0 || r.status == 1 ? js_parse(r.out, e, sizeof e) : NULL;
    tc_proc_result_free(&r);
    return v;
}

static const char *field_from(const js_val *doc, const char *field, const char **value)
{
    const js_val *rc = js_get(doc, "recipe"), *fs = rc ? js_get(rc, "fields") : NULL, *f = fs ? js_get(fs, field) : NULL;
    const js_val *v = f ? js_get(f, "value") : NULL, *from = f ? js_get(f, "from") : NULL;
    if (value) *value = v && v->type == JS_STR ? v->str : "";
    return from && from->type == JS_STR ? from->str : "";
}

static void bad(const char *text, const char *path, const char *want, const char *what)
{
    pp_recipe r;
    pp_error err;
    memset(&err, 0, sizeof err);
    pp_status st = pp_recipe_load_string(&r, text, strlen(text), path, &err);
    char where[1200];
    snprintf(where, sizeof where, "%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    tap_ok(st == PP_ERR_INPUT && strstr(where, want) != NULL, "%s: an error (%s)", what, where);
}

static void unit(void)
{
    char dir[1024], models[1024];
    snprintf(models, sizeof models, "%s/models.d", src);
    pp_error err;
    char **names = NULL;
    int n = 0;
    pp_status lst = pp_recipe_list(models, &names, &n, &err);
    tap_ok(lst == PP_OK && n >= 6, "recipes.d lists %d recipes", n);
    tap_ok(pp_recipe_find_dir(models, dir, sizeof dir, &err) == PP_OK, "recipes.d beside models.d");
    for (int i = 0; i < n; i++) {
        pp_recipe r;
        pp_status st = pp_recipe_resolve(&r, models, names[i], &err);
        tap_ok(st == PP_OK && !strcmp(r.name, names[i]) && r.source[0] && r.checked_by[0],
               "recipe %s loads, names itself, says its source and its check (%s)", names[i], st ? err.msg : r.release);
        free(names[i]);
    }
    free(names);

    /* bad files, each an error at its place */
    static const char *const good_head = "name: x\nframework: megatron\nsource: 'here'\n";
    char t[512];
    snprintf(t, sizeof t, "%sstack:\n  impl: te\n  colour: blue\n", good_head);
    bad(t, "x.yaml", ":6:3", "an unknown stack key");
    snprintf(t, sizeof t, "%sflavour: 1\n", good_head);
    bad(t, "x.yaml", ":4:1", "an unknown top-level key");
    snprintf(t, sizeof t, "%sstack:\n  cross_entropy_fusion: fast\n", good_head);
    bad(t, "x.yaml", ":5:", "an unknown enum value");
    snprintf(t, sizeof t, "%sstack:\n  bias_act_fusion: maybe\n", good_head);
    bad(t, "x.yaml", ":5:", "a switch that is not true or false");
    bad("name: x\nframework: megatron\n", "x.yaml", "source", "a recipe without its source");
    bad("name: x\nframework: jax\nsource: s\n", "x.yaml", ":2:", "an unknown framework");
    snprintf(t, sizeof t, "%sstack:\n  compile: true\n", good_head);
    bad(t, "x.yaml", "PyTorch FSDP2 field", "an FSDP2 field in a Megatron recipe");
    bad("name: x\nframework: fsdp\nsource: s\nstack:\n  impl: local\n", "x.yaml", "a Megatron field",
        "a Megatron field in an FSDP2 recipe");
    bad(good_head, "y.yaml", "not the file's", "a name that is not the file's");
    snprintf(t, sizeof t, "%sstack: [1, 2]\n", good_head);
    bad(t, "x.yaml", "expected a mapping", "a stack that is not a mapping");
    snprintf(t, sizeof t, "%sstack:\n  cuda_graphs: attn,wings\n", good_head);
    bad(t, "x.yaml", ":5:3: recipe: cuda_graphs: unknown part 'wings'", "an unknown CUDA-graph part");
    bad("name: x\nframework: fsdp\nsource: s\nstack:\n  cuda_graphs: attn\n", "x.yaml", "a Megatron field",
        "CUDA graphs in an FSDP2 recipe");
    snprintf(t, sizeof t, "%sstack:\n  vocab_divisible_by: 0\n", good_head);
    bad(t, "x.yaml", ":5:23: key 'vocab_divisible_by': 0 is out of range", "a vocabulary padding base of 0");
    bad("name: x\nframework: fsdp\nsource: s\nstack:\n  vocab_divisible_by: 64\n", "x.yaml", "a Megatron field",
        "Megatron's vocabulary padding in an FSDP2 recipe");
    /* the FSDP2 stack's switches: a value that is not true or false at its place (line 5, after
     * "  KEY: "), true refused in a Megatron recipe, and true in an FSDP2 recipe setting its own
     * field (stack_keys runs in pp_recipe_field order) and nothing else */
    static const struct {
        const char *key, *bad_value;
        pp_recipe_field field;
        size_t offset; /* the bool in pp_stack */
        const char *what_bad, *what_misfit;
    } fsdp_switches[] = {
        {"no_sync_accumulation", "maybe", PP_RF_NO_SYNC_ACCUM, offsetof(pp_stack, no_sync_accum),
         "an unsynced accumulation that is not true or false", "FSDP2's unsynced accumulation in a Megatron recipe"},
        {"keep_logits", "often", PP_RF_KEEP_LOGITS, offsetof(pp_stack, keep_logits),
         "kept logits that are not true or false", "an FSDP2 loop's kept logits in a Megatron recipe"},
        {"compile_loss", "perhaps", PP_RF_COMPILE_LOSS, offsetof(pp_stack, compile_loss),
         "a compiled loss that is not true or false", "a PyTorch loop's compiled loss in a Megatron recipe"},
        {"router_holds_recompute", "yes", PP_RF_ROUTER_HOLDS_RECOMPUTE, offsetof(pp_stack, router_holds_recompute),
         "a held recompute that is not true or false", "a PyTorch router's held recompute in a Megatron recipe"},
        {"expert_pad_loop", "sometimes", PP_RF_EXPERT_PAD_LOOP, offsetof(pp_stack, expert_pad_loop),
         "a Python expert padding that is not true or false",
         "a PyTorch MoE layer's Python padding in a Megatron recipe"},
        {"repeat_kv", "twice", PP_RF_REPEAT_KV, offsetof(pp_stack, repeat_kv),
         "repeated K and V that are not true or false", "a PyTorch model's repeated K and V in a Megatron recipe"},
    };
    for (size_t i = 0; i < sizeof fsdp_switches / sizeof fsdp_switches[0]; i++) {
        const char *key = fsdp_switches[i].key;
        char want[96];
        snprintf(want, sizeof want, ":5:%d: key '%s': expected true or false", (int)strlen(key) + 5, key);
        snprintf(t, sizeof t, "name: x\nframework: fsdp\nsource: s\nstack:\n  %s: %s\n", key, fsdp_switches[i].bad_value);
        bad(t, "x.yaml", want, fsdp_switches[i].what_bad);
        snprintf(t, sizeof t, "%sstack:\n  %s: true\n", good_head, key);
        bad(t, "x.yaml", "PyTorch FSDP2 field", fsdp_switches[i].what_misfit);
        pp_recipe r;
        snprintf(t, sizeof t, "name: x\nframework: fsdp\nsource: s\nstack:\n  %s: true\n", key);
        pp_status st = pp_recipe_load_string(&r, t, strlen(t), "x.yaml", &err);
        bool on = st == PP_OK && *(const bool *)((const char *)&r.stack + fsdp_switches[i].offset);
        tap_ok(on && r.set == ((UINT64_C(1) << PP_RF_FRAMEWORK) | (UINT64_C(1) << fsdp_switches[i].field)),
               "a recipe's %s: that field set, and only it (%s)", key, st == PP_OK ? "" : err.msg);
    }
    /* the kernel keys: an unknown value at its place (line 5, after "  KEY: "), and a good value in
     * the other framework's recipe refused */
    static const struct {
        const char *key, *bad_value, *good_value, *owner, *other, *refusal, *what_bad, *what_misfit;
    } kernel_keys[] = {
        {"fp8_scaling", "blockwise", "rowwise", "fsdp", "megatron", "PyTorch FSDP2 field",
         "an FP8 scaling torchao has no recipe for", "torchao's float8 scaling in a Megatron recipe"},
        {"eager_norm", "fast", "composite", "fsdp", "megatron", "PyTorch FSDP2 field",
         "an eager norm that is neither fused nor composite", "eager PyTorch's RMSNorm in a Megatron recipe"},
        {"tp_vocab", "split", "replicated", "fsdp", "megatron", "PyTorch FSDP2 field",
         "a TP vocabulary plan that is none of sharded, gathered, replicated",
         "FSDP2 + TP's vocabulary plan in a Megatron recipe"},
        {"te_attention", "fa3", "flash2", "megatron", "fsdp", "a Megatron field",
         "a TE attention kernel that is neither cudnn nor flash2",
         "TransformerEngine's attention kernel in an FSDP2 recipe"},
    };
    for (size_t i = 0; i < sizeof kernel_keys / sizeof kernel_keys[0]; i++) {
        char want[96];
        snprintf(want, sizeof want, ":5:%d: key '%s'", (int)strlen(kernel_keys[i].key) + 5, kernel_keys[i].key);
        snprintf(t, sizeof t, "name: x\nframework: %s\nsource: s\nstack:\n  %s: %s\n", kernel_keys[i].owner,
                 kernel_keys[i].key, kernel_keys[i].bad_value);
        bad(t, "x.yaml", want, kernel_keys[i].what_bad);
        snprintf(t, sizeof t, "name: x\nframework: %s\nsource: s\nstack:\n  %s: %s\n", kernel_keys[i].other,
                 kernel_keys[i].key, kernel_keys[i].good_value);
        bad(t, "x.yaml", kernel_keys[i].refusal, kernel_keys[i].what_misfit);
    }
    {
        pp_recipe r;
        snprintf(t, sizeof t, "%sstack:\n  cuda_graphs: attn,moe_router,moe_preprocess\n", good_head);
        pp_status st = pp_recipe_load_string(&r, t, strlen(t), "x.yaml", &err);
        tap_ok(st == PP_OK && r.stack.cuda_graphs == ((1u << PP_CG_ATTN) | (1u << PP_CG_MOE_ROUTER) |
                                                       (1u << PP_CG_MOE_PREPROCESS)),
               "a recipe's cuda_graphs: the three parts it names");
    }

    /* through the binary */
    int st;
    char et[1200];
    js_val *d = check("--recipe megatron-lm-local --model llama3-8b --gpu h100-sxm --gpus 8 --tp 8", &st, et, sizeof et);
    const char *v = NULL;
    tap_ok(d && !strcmp(field_from(d, "impl", &v), "recipe") && !strcmp(v, "local"), "the recipe sets impl local");
    tap_ok(d && !strcmp(field_from(d, "attention", &v), "recipe") && !strcmp(v, "unfused"),
           "the recipe sets unfused attention");
    tap_ok(d && !strcmp(field_from(d, "expandable_segments", &v), "default"), "a field it leaves: the default");
    js_free(d);
    d = check("--recipe megatron-lm-local --model llama3-8b --gpu h100-sxm --gpus 8 --tp 8 --no-bias-act-fusion "
              "--attention flash --impl te", &st, et, sizeof et);
    tap_ok(d && !strcmp(field_from(d, "bias_act_fusion", &v), "flag") && !strcmp(v, "false"),
           "a flag over the recipe's field (bias_act_fusion false, from the flag)");
    tap_ok(d && !strcmp(field_from(d, "attention", &v), "flag") && !strcmp(v, "flash"), "--attention over the recipe");
    js_free(d);
    char line[1024];
    snprintf(line, sizeof line, "--recipe megatron-core-te --megatron-args %s/tests/data/node4/h100/logs/l1_noswi.log "
             "--gpu h100-sxm", src);
    d = check(line, &st, et, sizeof et);
    tap_ok(d && !strcmp(field_from(d, "impl", &v), "megatron-args") && !strcmp(v, "local"),
           "--megatron-args over the recipe (impl local from the log)");
    tap_ok(d && !strcmp(field_from(d, "bias_act_fusion", &v), "megatron-args") && !strcmp(v, "false"),
           "the log's bias_swiglu_fusion False over the recipe's fusion");
    js_free(d);
    snprintf(line, sizeof line, "--recipe megatron-core-te --megatron-args %s/tests/data/megatron/frontier/llama3_8b_h100_fp8.args "
             "--gpu h100-sxm --gpus 8 --cuda-graphs attn,mlp", src);
    d = check(line, &st, et, sizeof et);
    const char *cg_from = d ? field_from(d, "cuda_graphs", &v) : "";
    tap_ok(d && !strcmp(cg_from, "flag") && !strcmp(v, "attn,mlp"),
           "--cuda-graphs over the recipe and the run's arguments (%s, from %s)", d ? v : "refused", cg_from);
    js_free(d);
    /* a negating flag over a recipe's true (field_negations in request.c) */
    d = check("--recipe kempnerforge --model llama3-8b --gpu h200 --gpus 8 --gbs 8", &st, et, sizeof et);
    tap_ok(d && !strcmp(field_from(d, "repeat_kv", &v), "recipe") && !strcmp(v, "true"),
           "the kempnerforge recipe repeats K and V (repeat_kv true, from the recipe)");
    js_free(d);
    d = check("--recipe kempnerforge --model llama3-8b --gpu h200 --gpus 8 --gbs 8 --no-repeat-kv", &st, et, sizeof et);
    tap_ok(d && !strcmp(field_from(d, "repeat_kv", &v), "flag") && !strcmp(v, "false"),
           "--no-repeat-kv over the recipe (repeat_kv false, from the flag)");
    js_free(d);
    d = check("--model llama3-8b --gpu h100-sxm --gpus 8", &st, et, sizeof et);
    const js_val *rc = d ? js_get(d, "recipe") : NULL;
    tap_ok(rc && rc->type == JS_NULL, "without --recipe: \"recipe\": null");
    js_free(d);
    d = check("--recipe torchtitan --framework megatron --model llama3-8b --gpu h100-sxm --gpus 8", &st, et, sizeof et);
    tap_ok(!d && st == 2 && strstr(et, "recipe torchtitan is fsdp's"), "--framework against the recipe's: an error (%s)",
           et);
    js_free(d);
    d = check("--recipe no-such --model llama3-8b --gpu h100-sxm --gpus 8", &st, et, sizeof et);
    tap_ok(!d && st == 2 && strstr(et, "no such recipe") && strstr(et, "megatron-lm-local"),
           "an unknown recipe: an error naming the recipes");
    js_free(d);
    snprintf(line, sizeof line, "--recipe %s/recipes.d/torchtitan-compile.yaml --model llama3-8b --gpu h100-sxm --gpus 4 "
             "--zero 3", src);
    d = check(line, &st, et, sizeof et);
    tap_ok(d && !strcmp(field_from(d, "compile", &v), "recipe") && !strcmp(v, "true"), "--recipe FILE");
    js_free(d);
    d = check("--recipe kempnerforge --model llama3-8b --gpu h200 --gpus 8 --gbs 16 --mbs 2", &st, et, sizeof et);
    tap_ok(d && !strcmp(field_from(d, "keep_logits", &v), "recipe") && !strcmp(v, "true"),
           "kempnerforge keeps the logits through the backward (keep_logits true, from the recipe)");
    js_free(d);
    d = check("--recipe kempnerforge --model mixtral-8x7b --gpu h200 --gpus 64 --gbs 64 --mbs 1 --recompute full", &st, et,
              sizeof et);
    tap_ok(d && !strcmp(field_from(d, "router_holds_recompute", &v), "recipe") && !strcmp(v, "true"),
           "kempnerforge's router holds the recompute (router_holds_recompute true, from the recipe)");
    tap_ok(d && !strcmp(field_from(d, "expert_pad_loop", &v), "recipe") && !strcmp(v, "true"),
           "kempnerforge pads its experts' tokens in Python (expert_pad_loop true, from the recipe)");
    js_free(d);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* rel: the CSV under the source tree; coverage: every recipe of recipes.d must have a row */
static void validation(const char *rel, bool coverage)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", src, rel);
    FILE *f = fopen(path, "r");
    if (!tap_ok(f != NULL, "read %s", path)) return;
    char models[1024];
    snprintf(models, sizeof models, "%s/models.d", src);
    pp_error err;
    char **names = NULL;
    int nn = 0;
    pp_recipe_list(models, &names, &nn, &err);
    int *covered = calloc((size_t)(nn > 0 ? nn : 1), sizeof *covered);
    char line[4096];
    char *hdr[16];
    int nh = 0;
    /* |error| per metric (peak_mib, step_s) for the medians */
    enum { NERR = 256 };
    static double errs[2][NERR];
    int ne[2] = {0, 0};
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (line[0] == '#' || !line[0]) continue;
        if (!nh) {
            /* the header, kept: the line buffer is read into again */
            static char keep[4096];
            snprintf(keep, sizeof keep, "%s", line);
            nh = split_csv(keep, hdr, 16);
            continue;
        }
        char *col[16];
        int nc = split_csv(line, col, 16);
        int ir = col_index(hdr, nh, "recipe"), irun = col_index(hdr, nh, "run"), im = col_index(hdr, nh, "metric"),
            iv = col_index(hdr, nh, "measured"), it = col_index(hdr, nh, "tol"), ia = col_index(hdr, nh, "args");
        if (ir < 0 || ia < 0 || ia >= nc) continue;
        char args[2048], full[2600];
        /* paths in the table are the source tree's */
        const char *a = col[ia];
        size_t k = 0;
        for (const char *p = a; *p && k + 1 < sizeof args; p++) {
            if ((p == a || p[-1] == ' ') && !strncmp(p, "tests/", 6)) k += (size_t)snprintf(args + k, sizeof args - k, "%s/", src);
            if (k + 1 < sizeof args) args[k++] = *p;
        }
        args[k] = 0;
        snprintf(full, sizeof full, "--recipe %s %s", col[ir], args);
        int st;
        char et[1200];
        js_val *d = check(full, &st, et, sizeof et);
        double meas = atof(col[iv]), tol = atof(col[it]), pred = NAN;
        if (d && !strcmp(col[im], "peak_mib")) {
            const js_val *stages = js_get(d, "stages");
            for (int i = 0; stages && i < stages->n; i++)
                if (!(js_num(stages->items[i], "peak_bytes") / (1024.0 * 1024.0) < pred)) pred = js_num(stages->items[i], "peak_bytes") / (1024.0 * 1024.0);
        } else if (d && !strcmp(col[im], "fits")) {
            /* a run that ran: 1 (it fits), compared exactly */
            const js_val *fv = js_get(d, "fits");
            pred = fv && fv->type == JS_BOOL ? (fv->b ? 1.0 : 0.0) : NAN;
        } else if (d) {
            pred = js_num(d, "step_time_s");
        }
        double e = pred / meas - 1;
        int km = !strcmp(col[im], "peak_mib") ? 0 : !strcmp(col[im], "step_s") ? 1 : -1;
        if (km >= 0 && isfinite(e) && ne[km] < NERR) errs[km][ne[km]++] = fabs(e);
        tap_ok(d && fabs(e) <= tol, "recipe %-18s %-20s %s measured %.6g predicted %.6g (%+.2f%%, within %.0f%%)", col[ir],
               col[irun], col[im], meas, pred, 100 * e, 100 * tol);
        if (!d) tap_diag("  parplan check %s: %s", full, et);
        for (int i = 0; i < nn; i++)
            if (!strcmp(names[i], col[ir])) covered[i]++;
        js_free(d);
    }
    fclose(f);
    for (int k = 0; k < 2; k++)
        if (ne[k]) {
            qsort(errs[k], (size_t)ne[k], sizeof errs[k][0], cmp_double);
            tap_diag("%s: %d rows, median |error| %.1f%%, largest %.1f%%", k ? "step_s" : "peak_mib", ne[k],
                     100 * errs[k][ne[k] / 2], 100 * errs[k][ne[k] - 1]);
        }
    for (int i = 0; i < nn; i++) {
        if (coverage) tap_ok(covered[i] > 0, "recipe %s is checked against a run (%d)", names[i], covered[i]);
        free(names[i]);
    }
    free(names);
    free(covered);
}

int main(int argc, char **argv)
{
    if (argc < 4 || (!strcmp(argv[3], "table") && argc < 5)) {
        fprintf(stderr, "usage: %s PARPLAN SOURCE_DIR unit|check|table FILE\n", argv[0]);
        return 2;
    }
    parplan = argv[1];
    src = argv[2];
    if (!strcmp(argv[3], "unit")) unit();
    else if (!strcmp(argv[3], "table")) validation(argv[4], false);
    else validation("tests/data/recipes/checks.csv", true);
    return tap_done();
}
