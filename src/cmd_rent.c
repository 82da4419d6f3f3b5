/* parplan plan --gpu A,B,... --gpus N,M,... --tokens T [--price-per-gpu-hour SPEC | --prices FILE]:
 * what to rent. Every GPU type x count is one plan (pp_run_plan_best, the search and stage split
 * plan's #1 comes from, then check's run of it), priced to train T tokens (pp_train_cost_get, what
 * estimate prints): days, GPU-hours, cost. Rows are ranked by cost where every row has a price,
 * else by days; the rows no other row beats on both days and cost are the Pareto front. Text, JSON
 * and --report FILE.html (days against cost). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "pp_json.h"
#include "pp_load.h"
#include "pp_prices.h"
#include "pp_run.h"
#include "report.h"
#include "report_draw.h"

#define RENT_MAX_GPUS 16
#define RENT_MAX_COUNTS 32

typedef struct {
    char gpu[64];
    int64_t gpus;
    bool ok;                 /* a layout was found and priced */
    bool fits;
    char why[512];           /* when not ok: the request's error, or why nothing fits */
    char label[256];         /* plan's #1 */
    char model[64];
    double step_s, tokens_per_s, need_bytes, capacity_bytes, price;
    double band_lo, band_hi;   /* the step time's band (planner/run/band.c) as factors */
    char band[32];
    pp_train_cost cost;
    bool pareto;
} rent_row;

/* The value of --NAME (as "--NAME V" or "--NAME=V") in argv, and where: *at is the index of the
 * value's argument, *eq whether it is the "=" form. NULL when absent. */
static const char *arg_value(int argc, char **argv, const char *name, int *at, bool *eq)
{
    size_t n = strlen(name);
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], name) && i + 1 < argc) {
            *at = i + 1;
            *eq = false;
            return argv[i + 1];
        }
        if (!strncmp(argv[i], name, n) && argv[i][n] == '=') {
            *at = i;
            *eq = true;
            return argv[i] + n + 1;
        }
    }
    return NULL;
}

bool pp_rent_wanted(int argc, char **argv)
{
    int at;
    bool eq;
    const char *g = arg_value(argc, argv, "--gpu", &at, &eq), *n = arg_value(argc, argv, "--gpus", &at, &eq);
    return (g && strchr(g, ',')) || (n && strchr(n, ',')) || arg_value(argc, argv, "--tokens", &at, &eq) ||
           arg_value(argc, argv, "--prices", &at, &eq) || arg_value(argc, argv, "--price-per-gpu-hour", &at, &eq);
}

/* Split a comma list into up to max items of size sz; the count, or -1 (empty item, too many). */
static int split_list(const char *s, char *items, size_t sz, int max)
{
    int k = 0;
    const char *p = s;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (!len || len >= sz || k >= max) return -1;
        memcpy(items + (size_t)k * sz, p, len);
        items[(size_t)k * sz + len] = 0;
        k++;
        if (!e) return k;
        p = e + 1;
    }
}

static int row_cmp_cost(const void *a, const void *b)
{
    const rent_row *x = a, *y = b;
    if (x->ok != y->ok) return x->ok ? -1 : 1;
    if (!x->ok) return 0;
    if (x->cost.cost != y->cost.cost) return x->cost.cost < y->cost.cost ? -1 : 1;
    return x->cost.days < y->cost.days ? -1 : x->cost.days > y->cost.days;
}

static int row_cmp_days(const void *a, const void *b)
{
    const rent_row *x = a, *y = b;
    if (x->ok != y->ok) return x->ok ? -1 : 1;
    if (!x->ok) return 0;
    if (x->cost.days != y->cost.days) return x->cost.days < y->cost.days ? -1 : 1;
    return x->cost.gpu_hours < y->cost.gpu_hours ? -1 : x->cost.gpu_hours > y->cost.gpu_hours;
}

/* One GPU type x count: plan's #1 and its price. Bad input for this combination (a count that
 * is not whole nodes, an unknown GPU) is the row's why; *fatal for errors that are not. */
static void rent_one(const char *argv0, int argc, char **argv, const pp_prices *prices, rent_row *row, double tokens,
                     pp_error *fatal)
{
    pp_cli c = {.argv0 = argv0};
    pp_error err = {0};
    pp_run_plan_pick *pick = NULL;
    pp_run *run = NULL;
    if (pp_cli_parse(&c, "plan", argc, argv, &err) != PP_OK) {
        *fatal = err;
        goto done;
    }
    if (pp_cli_work(&c, false, &err) != PP_OK) {
        if (err.status != PP_ERR_INPUT) *fatal = err;
        snprintf(row->why, sizeof row->why, "%s", err.msg);
        goto done;
    }
    const pp_work *w = &c.work;
    snprintf(row->model, sizeof row->model, "%s", w->model.name);
    row->capacity_bytes = w->gpu.memory_bytes;
    pick = calloc(1, sizeof *pick);
    run = calloc(1, sizeof *run);
    if (!pick || !run) {
        pp_error_set(fatal, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        goto done;
    }
    if (pp_run_plan_best(w, pick, &err) != PP_OK) {
        if (err.status != PP_ERR_INPUT) *fatal = err;
        snprintf(row->why, sizeof row->why, "%s", err.msg);
        goto done;
    }
    if (!pick->any || !pick->fits) {
        snprintf(row->why, sizeof row->why, "no layout fits in %.1f GiB per GPU", w->gpu.memory_bytes / GIB);
        goto done;
    }
    pp_run_opts ro = {.stages = NULL, .given_split = "plan"};
    if (pp_run_build(w, &pick->best.layout, &ro, run, &err) != PP_OK) {
        if (err.status != PP_ERR_INPUT) *fatal = err;
        snprintf(row->why, sizeof row->why, "%s", err.msg);
        goto done;
    }
    pp_layout_label(&run->layout, row->label, sizeof row->label);
    row->fits = run->fits;
    row->step_s = run->time.step_time_s;
    row->tokens_per_s = run->time.tokens_per_s;
    row->need_bytes = run->need_bytes;
    row->capacity_bytes = run->capacity_bytes;
    row->price = prices ? pp_prices_get(prices, w->gpu.name) : -1;
    pp_train_cost_get(w, row->step_s, tokens, row->price > 0 ? row->price : 0, &row->cost);
    const pp_band_row *bd = pp_band_for(w);
    pp_band_range(bd, 1.0, &row->band_lo, &row->band_hi);
    snprintf(row->band, sizeof row->band, "%s", bd->name);
    row->ok = run->fits;
    if (!run->fits) snprintf(row->why, sizeof row->why, "plan's #1 does not fit as check prices it");
done:
    free(pick);
    free(run);
    pp_cli_free(&c);
}

static void rent_report(const char *path, const rent_row *rows, int n, bool priced, const char *title, pp_error *err)
{
    pp_report r;
    if (pp_report_open(&r, path, title, err) != PP_OK) return;
    pp_html_out(&r, "<section class=\"rent\">\n<h2>What to rent: %s against days to train</h2>\n",
                priced ? "cost" : "GPU-hours");
    int m = 0;
    double xmax = 0, ymax = 0;
    for (int i = 0; i < n; i++)
        if (rows[i].ok) {
            m++;
            xmax = fmax(xmax, rows[i].cost.days);
            ymax = fmax(ymax, priced ? rows[i].cost.cost : rows[i].cost.gpu_hours);
        }
    if (!m) {
        pp_html_out(&r, "<p>No GPU type and count has a layout that fits.</p>\n</section>\n");
        pp_report_close(&r, err);
        return;
    }
    pp_html_out(&r, "<p>%d option%s that fit; lower left is better. Filled: the Pareto front (no other option both "
                    "faster and cheaper).</p>\n", m, m == 1 ? "" : "s");
    pp_legend_item leg[2] = {{"Pareto front", C_VERMILLION, 2}, {"other option", C_BLUE, 3}};
    const double left = 88, right = SVG_W - 24, top = 40, bottom = top + 330, h = bottom + 52;
    pp_axis ax, ay;
    pp_axis_nice(0, xmax * 1.08, 8, &ax);
    pp_axis_nice(0, ymax * 1.08, 6, &ay);
    pp_svg_open(&r, "rent-chart", h, "what to rent: cost against days");
    pp_legend_draw(&r, leg, 2, left, 8, right - left);
    pp_axis_y_draw(&r, &ay, left, right, bottom, top, priced ? "cost to train" : "GPU-hours");
    pp_axis_x_draw(&r, &ax, left, right, top, bottom, "days to train");
    pp_html_out(&r, "<g class=\"points\">\n");
    for (int i = 0; i < n; i++) {
        if (!rows[i].ok) continue;
        double x = pp_axis_map(&ax, rows[i].cost.days, left, right);
        double y = pp_axis_map(&ay, priced ? rows[i].cost.cost : rows[i].cost.gpu_hours, bottom, top);
        char b1[64], b2[64];
        pp_html_out(&r, "<circle class=\"option%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" stroke=\"%s\" "
                        "stroke-width=\"1.5\"><title>",
                    rows[i].pareto ? " pareto" : "", x, y, rows[i].pareto ? C_VERMILLION : "none",
                    rows[i].pareto ? C_VERMILLION : C_BLUE);
        pp_html_esc(&r, rows[i].gpu);
        pp_html_out(&r, " x %lld: %s days, %s %s; ", (long long)rows[i].gpus, pp_fmt_sig(rows[i].cost.days, b1, sizeof b1),
                    pp_fmt_sig(priced ? rows[i].cost.cost : rows[i].cost.gpu_hours, b2, sizeof b2),
                    priced ? "cost" : "GPU-hours");
        pp_html_esc(&r, rows[i].label);
        pp_html_out(&r, "</title></circle>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">", x + 7, y - 6);
        pp_html_esc(&r, rows[i].gpu);
        pp_html_out(&r, " x%lld</text>\n", (long long)rows[i].gpus);
    }
    pp_html_out(&r, "</g>\n</svg>\n</section>\n");
    pp_report_close(&r, err);
}

int pp_cmd_rent(const char *argv0, int argc, char **argv, bool pre_quiet, bool pre_json)
{
    pp_error err = {0};
    int rc = 2;
    rent_row *rows = NULL;
    char **av = NULL;
    pp_prices *prices = NULL;
    pp_cli c0 = {.argv0 = argv0};
    /* the options as given, checked once (a typo fails here, not once per row) */
    int at_g = -1, at_n = -1;
    bool eq_g = false, eq_n = false;
    const char *gl = arg_value(argc, argv, "--gpu", &at_g, &eq_g), *nl = arg_value(argc, argv, "--gpus", &at_n, &eq_n);
    if (!gl || !nl) {
        pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0, "what to rent needs --gpu NAME[,NAME...] and --gpus N[,N...]");
        goto fail;
    }
    static char gpus[RENT_MAX_GPUS][64], counts[RENT_MAX_COUNTS][24];
    int ng = split_list(gl, &gpus[0][0], sizeof gpus[0], RENT_MAX_GPUS);
    int nn = split_list(nl, &counts[0][0], sizeof counts[0], RENT_MAX_COUNTS);
    if (ng < 0 || nn < 0) {
        pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0, "--gpu A,B,... (at most %d) and --gpus N,M,... (at most %d): no "
                     "empty item", RENT_MAX_GPUS, RENT_MAX_COUNTS);
        goto fail;
    }
    av = calloc((size_t)argc + 1, sizeof *av);
    rows = calloc((size_t)(ng * nn), sizeof *rows);
    prices = calloc(1, sizeof *prices);
    if (!av || !rows || !prices) {
        pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        rc = 1;
        goto fail;
    }
    memcpy(av, argv, sizeof *av * (size_t)argc);
    static char gbuf[96], nbuf[48];
    snprintf(gbuf, sizeof gbuf, eq_g ? "--gpu=%s" : "%s", gpus[0]);
    snprintf(nbuf, sizeof nbuf, eq_n ? "--gpus=%s" : "%s", counts[0]);
    av[at_g] = gbuf;
    av[at_n] = nbuf;
    if (pp_cli_parse(&c0, "plan", argc, av, &err) != PP_OK) goto fail;
    bool json = c0.json || pre_json, quiet = c0.quiet || pre_quiet;
    if (c0.help) {
        pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0, "see parplan plan --help");
        goto fail;
    }
    if (!(c0.tokens > 0)) {
        pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0, "what to rent prices a token budget: give --tokens T (e.g. 1e12)");
        goto fail;
    }
    if (c0.probe_k || c0.emit || c0.dump_ilp || c0.output) {
        pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0, "what to rent takes no --probe, --emit, --dump-ilp or -o: run "
                     "plan on the chosen GPUs for those");
        goto fail;
    }
    if (c0.price_spec && c0.prices_file) {
        pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0, "give --price-per-gpu-hour or --prices, not both");
        goto fail;
    }
    bool priced = false;
    if (c0.prices_file) {
        if (pp_prices_load_file(prices, c0.prices_file, &err) != PP_OK) goto fail;
        priced = true;
    } else if (c0.price_spec) {
        if (pp_prices_parse_spec(prices, c0.price_spec, &err) != PP_OK) goto fail;
        priced = true;
    }
    /* every GPU named is known and priced (a typo is bad input, not a row) */
    if (pp_cli_catalog(&c0, &err) != PP_OK) goto fail;
    for (int i = 0; i < ng; i++) {
        pp_gpu g;
        if (pp_gpu_resolve(&g, &c0.cat, gpus[i], &err) != PP_OK) goto fail;
        if (priced && !(pp_prices_get(prices, g.name) > 0)) {
            pp_error_set(&err, PP_ERR_INPUT, NULL, 0, 0, "no price for %s (%s): add it, or give a price for every GPU",
                         g.name, c0.prices_file ? c0.prices_file : "--price-per-gpu-hour");
            goto fail;
        }
    }
    int n = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < ng; i++) {
        for (int k = 0; k < nn; k++) {
            rent_row *row = &rows[n++];
            snprintf(row->gpu, sizeof row->gpu, "%.63s", gpus[i]);
            row->gpus = strtoll(counts[k], NULL, 10);
            snprintf(gbuf, sizeof gbuf, eq_g ? "--gpu=%s" : "%s", gpus[i]);
            snprintf(nbuf, sizeof nbuf, eq_n ? "--gpus=%s" : "%s", counts[k]);
            if (!quiet) fprintf(stderr, "parplan: planning %s x %s (%d of %d)\n", counts[k], gpus[i], n, ng * nn);
            pp_error fatal = {0};
            rent_one(argv0, argc, av, priced ? prices : NULL, row, c0.tokens, &fatal);
            if (fatal.status != PP_OK) {
                err = fatal;
                rc = pp_cli_fail(&err);
                goto out;
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double elapsed = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    qsort(rows, (size_t)n, sizeof *rows, priced ? row_cmp_cost : row_cmp_days);
    /* the Pareto front over (days, cost) (or GPU-hours without prices): sorted by the second
     * key, a row is on it when it is faster than every row before it */
    double best = INFINITY;
    for (int i = 0; i < n; i++) {
        double v = priced ? rows[i].cost.days : rows[i].cost.gpu_hours;
        if (rows[i].ok && v < best) {
            rows[i].pareto = true;
            best = v;
        }
    }
    const char *model = n ? rows[0].model : "";
    for (int i = 0; i < n && !model[0]; i++) model = rows[i].model;
    if (json) {
        pp_json j;
        pp_json_init(&j, stdout, true);
        pp_json_obj_begin(&j);
        pp_json_kstr(&j, "model", model);
        pp_json_knum(&j, "tokens", c0.tokens);
        pp_json_kstr(&j, "ranked_by", priced ? "cost" : "days");
        pp_json_key(&j, "prices");
        if (priced) {
            pp_json_obj_begin(&j);
            pp_json_kstr(&j, "file", prices->path);
            pp_json_kstr(&j, "date", prices->date);
            pp_json_kstr(&j, "source", prices->source);
            pp_json_kbool(&j, "example", prices->example);
            pp_json_kstr(&j, "currency", prices->currency);
            pp_json_obj_end(&j);
        } else {
            pp_json_null(&j);
        }
        pp_json_knum(&j, "elapsed_s", elapsed);
        pp_json_key(&j, "rows");
        pp_json_arr_begin(&j);
        for (int i = 0; i < n; i++) {
            const rent_row *r = &rows[i];
            pp_json_obj_begin(&j);
            pp_json_kstr(&j, "gpu", r->gpu);
            pp_json_kint(&j, "gpus", r->gpus);
            pp_json_kbool(&j, "fits", r->ok);
            pp_json_key(&j, "why");
            if (r->ok) pp_json_null(&j);
            else pp_json_str(&j, r->why);
            if (r->ok) {
                pp_json_kstr(&j, "layout", r->label);
                pp_json_knum(&j, "step_time_s", r->step_s);
                pp_json_knum(&j, "tokens_per_s", r->tokens_per_s);
                pp_json_knum(&j, "need_bytes", r->need_bytes);
                pp_json_knum(&j, "capacity_bytes", r->capacity_bytes);
                pp_json_knum(&j, "margin_frac", 1.0 - r->need_bytes / r->capacity_bytes);
                pp_json_knum(&j, "steps", r->cost.steps);
                pp_json_knum(&j, "days", r->cost.days);
                pp_json_knum(&j, "gpu_hours", r->cost.gpu_hours);
                pp_json_key(&j, "price_per_gpu_hour");
                if (priced) pp_json_num(&j, r->price);
                else pp_json_null(&j);
                pp_json_key(&j, "cost");
                if (priced) pp_json_num(&j, r->cost.cost);
                else pp_json_null(&j);
                pp_json_kbool(&j, "pareto", r->pareto);
                pp_json_kstr(&j, "band", r->band);
                static const char *const rk[3] = {"step_time_range_s", "days_range", "cost_range"};
                double rv[3] = {r->step_s, r->cost.days, r->cost.cost};
                for (int q = 0; q < (priced ? 3 : 2); q++) {
                    pp_json_key(&j, rk[q]);
                    pp_json_arr_begin(&j);
                    pp_json_num(&j, rv[q] * r->band_lo);
                    pp_json_num(&j, rv[q] * r->band_hi);
                    pp_json_arr_end(&j);
                }
            }
            pp_json_obj_end(&j);
        }
        pp_json_arr_end(&j);
        pp_json_obj_end(&j);
        pp_json_end(&j);
    } else {
        char a[48];
        printf("parplan plan: what to rent for %s, %s tokens: %d GPU type%s x %d count%s in %.2f s, ranked by %s\n", model,
               pp_fmt_num(c0.tokens, 4, a, sizeof a), ng, ng == 1 ? "" : "s", nn, nn == 1 ? "" : "s", elapsed,
               priced ? "cost" : "days");
        if (priced && prices->path[0])
            printf("prices: %s of %s (%s per GPU-hour; %s)%s\n", prices->path, prices->date, prices->currency,
                   prices->source, prices->example ? "\n        EXAMPLE prices, not quotes: give your own" : "");
        else if (priced)
            printf("prices: --price-per-gpu-hour (%s per GPU-hour)\n", prices->currency);
        printf("\n %-18s %6s  %-52s %9s %7s %9s %8s %13s %11s %12s  %s\n", "gpu", "gpus", "plan's #1", "mem/GPU",
               "margin", "step s", "days", "(band)", "GPU-hours", priced ? "cost" : "", "pareto");
        for (int i = 0; i < n; i++) {
            const rent_row *r = &rows[i];
            if (!r->ok) continue;
            char mem[32], gh[48], cost[48];
            char dband[48];
            snprintf(dband, sizeof dband, "(%.1f-%.1f)", r->cost.days * r->band_lo, r->cost.days * r->band_hi);
            printf(" %-18s %6lld  %-52.52s %9s %6.0f%% %9.3f %8.2f %13s %11s %12s  %s\n", r->gpu, (long long)r->gpus,
                   r->label, pp_fmt_bytes(r->need_bytes, mem, sizeof mem), 100.0 * (1.0 - r->need_bytes / r->capacity_bytes),
                   r->step_s, r->cost.days, dband, pp_fmt_num(r->cost.gpu_hours, 4, gh, sizeof gh),
                   priced ? pp_fmt_num(r->cost.cost, 4, cost, sizeof cost) : "", r->pareto ? "*" : "");
        }
        for (int i = 0; i < n; i++)
            if (!rows[i].ok)
                printf(" %-18s %6lld  not an option: %s\n", rows[i].gpu, (long long)rows[i].gpus, rows[i].why);
        printf("(pareto *: no other option is both faster and %s; mem/GPU: peak + reserved, margin: what is left of "
               "the GPU; band: the days the published runs' 5th-95th percentile error allows, per stack and GPU)\n",
               priced ? "cheaper" : "fewer GPU-hours");
    }
    if (c0.report) {
        char title[256];
        snprintf(title, sizeof title, "parplan plan: what to rent for %s", model);
        rent_report(c0.report, rows, n, priced, title, &err);
        if (err.status != PP_OK) {
            rc = pp_cli_fail(&err);
            goto out;
        }
    }
    rc = 0;
    goto out;
fail:
    if (rc == 2 || err.status != PP_OK) rc = pp_cli_fail(&err);
out:
    pp_cli_free(&c0);
    free(rows);
    free(av);
    free(prices);
    return rc;
}
