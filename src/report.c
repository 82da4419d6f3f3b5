/* The HTML/SVG report. See report.h.
 *
 * This file holds the page: opening, the head and style sheet, closing (fsync and rename), the
 * simple sections (summary, note, text, launch command) and the whole pages of `check --report`
 * and `plan --report`. The charts are in report_charts.c; the drawing kit and the design choices
 * (no script, Okabe-Ito colours, text width) in report_draw.c.
 */
#include "report_draw.h"
#include "pp_run.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ page */

static const char page_css[] =
    "*{box-sizing:border-box}"
    "body{margin:0;background:#F5F5F2;color:#1B1B1B;"
    "font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans','Liberation Sans',Arial,sans-serif}"
    "main{max-width:1060px;margin:0 auto;padding:20px 20px 40px}"
    "header h1{font-size:1.45em;margin:4px 0 2px;overflow-wrap:anywhere}"
    "header p{margin:0 0 14px;color:#555}"
    "section{background:#fff;border:1px solid #DDDDD8;border-radius:6px;padding:14px 18px 16px;margin:0 0 18px}"
    "h2{font-size:1.12em;margin:0 0 6px}"
    "p{margin:4px 0 8px}"
    ".verdict-ok{color:#006B4F;font-weight:600}"
    ".verdict-bad{color:#B34700;font-weight:600}"
    "svg.chart{display:block;width:100%;height:auto;margin:6px 0 2px;font-size:12px}"
    "svg.chart text{fill:#1B1B1B}"
    "svg .grid{stroke:#E6E6E6;stroke-width:1}"
    "svg .frame{stroke:#777;stroke-width:1;fill:none}"
    "svg .tick{fill:#444}"
    "svg .axis-title{font-size:13px;fill:#222}"
    "svg .val{font-size:11px;fill:#333}"
    "svg .halo{paint-order:stroke;stroke:#fff;stroke-width:3.5px;stroke-linejoin:round}"
    "svg .oom{fill:#B34700;font-weight:700}"
    "pre{background:#F7F7F4;border:1px solid #E2E2DC;border-radius:4px;padding:10px 12px;margin:6px 0 0;"
    "max-height:36em;overflow:auto;"
    "white-space:pre-wrap;overflow-wrap:anywhere;font:13px/1.45 ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace}"
    "table{border-collapse:collapse;font-size:13px;margin:6px 0 0}"
    "th,td{padding:3px 10px 3px 0;text-align:right;border-bottom:1px solid #EEE;vertical-align:top}"
    "th:first-child,td:first-child{text-align:left}"
    /* Key/value pairs two to a row on a laptop, one below 760 px. */
    "dl.kv{display:grid;grid-template-columns:max-content minmax(0,1fr) max-content minmax(0,1fr);"
    "gap:4px 14px;margin:6px 0 0;font-size:14px}"
    "dl.kv dt{color:#5A5A5A}dl.kv dd{margin:0 0 0 0;overflow-wrap:anywhere}"
    "@media (max-width:760px){dl.kv{grid-template-columns:max-content minmax(0,1fr)}}"
    ".scroll{overflow-x:auto}"
    "details{margin-top:6px}summary{cursor:pointer;color:#333}"
    "footer{color:#777;font-size:12px;text-align:center}";

static void page_head(pp_report *r, const char *title)
{
    pp_html_out(r, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
                   "<meta name=\"generator\" content=\"parplan %s\"/>\n<title>",
                PP_VERSION);
    pp_html_esc(r, title ? title : "parplan report");
    pp_html_out(r, "</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n<header><h1>", page_css);
    pp_html_esc(r, title ? title : "parplan report");
    pp_html_out(r, "</h1><p>parplan %s: predicted by the analytic memory and step-time models unless marked "
                   "as measured.</p></header>\n",
                PP_VERSION);
}

pp_status pp_report_open(pp_report *r, const char *path, const char *title, pp_error *err)
{
    memset(r, 0, sizeof *r);
    if (!path || !*path) return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--report needs a file name");
    if (strcmp(path, "-") == 0) {
        pp_report_begin(r, stdout, title);
        return PP_OK;
    }
    if (strlen(path) >= sizeof r->path)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--report path is too long (%zu bytes)", strlen(path));
    snprintf(r->path, sizeof r->path, "%s", path);
    snprintf(r->tmp_path, sizeof r->tmp_path, "%s.XXXXXX", path);
    int fd = mkstemp(r->tmp_path);
    if (fd < 0) {
        int e = errno;
        r->tmp_path[0] = 0;
        return pp_error_set(err, (e == ENOENT || e == ENOTDIR) ? PP_ERR_INPUT : PP_ERR_RUNTIME, path, 0, 0,
                            "cannot write the report: %s", strerror(e));
    }
    /* mkstemp creates 0600; a report is an ordinary file: 0666 less the umask. */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0) { /* not fatal: the file is still readable by its owner */
    }
    r->f = fdopen(fd, "w");
    if (!r->f) {
        int e = errno;
        close(fd);
        unlink(r->tmp_path);
        r->tmp_path[0] = 0;
        return pp_error_set(err, PP_ERR_RUNTIME, path, 0, 0, "cannot write the report: %s", strerror(e));
    }
    r->own = true;
    page_head(r, title);
    return PP_OK;
}

void pp_report_begin(pp_report *r, FILE *f, const char *title)
{
    memset(r, 0, sizeof *r);
    r->f = f;
    page_head(r, title);
}

pp_status pp_report_close(pp_report *r, pp_error *err)
{
    if (!r->f) return pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0, "report is not open");
    pp_html_out(r, "<footer>parplan %s</footer>\n</main>\n</body>\n</html>\n", PP_VERSION);
    if (fflush(r->f) != 0 && !r->write_errno) r->write_errno = errno ? errno : EIO;
    pp_html_check(r);
    if (!r->own) {
        r->f = NULL;
        if (r->write_errno)
            return pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0, "cannot write the report: %s",
                                strerror(r->write_errno));
        return PP_OK;
    }
    if (!r->write_errno && fsync(fileno(r->f)) != 0 && errno != EINVAL) r->write_errno = errno;
    if (fclose(r->f) != 0 && !r->write_errno) r->write_errno = errno ? errno : EIO;
    r->f = NULL;
    if (!r->write_errno && rename(r->tmp_path, r->path) != 0) r->write_errno = errno;
    if (r->write_errno) {
        unlink(r->tmp_path);
        r->tmp_path[0] = 0;
        return pp_error_set(err, PP_ERR_RUNTIME, r->path, 0, 0, "cannot write the report: %s",
                            strerror(r->write_errno));
    }
    r->tmp_path[0] = 0;
    return PP_OK;
}

void pp_report_free(pp_report *r)
{
    if (!r) return;
    if (r->f && r->own) {
        fclose(r->f);
        if (r->tmp_path[0]) unlink(r->tmp_path);
    }
    r->f = NULL;
    r->tmp_path[0] = 0;
}

/* ------------------------------------------------------------------ simple sections */

void pp_report_summary(pp_report *r, const char *heading, const char *const *keys,
                       const char *const *values, int n)
{
    pp_html_out(r, "<section class=\"summary\">\n<h2>");
    pp_html_esc(r, heading ? heading : "Summary");
    pp_html_out(r, "</h2>\n<dl class=\"kv\">\n");
    for (int i = 0; i < n; i++) {
        pp_html_out(r, "<dt>");
        pp_html_esc(r, keys[i]);
        pp_html_out(r, "</dt><dd>");
        pp_html_esc(r, values[i]);
        pp_html_out(r, "</dd>\n");
    }
    pp_html_out(r, "</dl>\n</section>\n");
}

void pp_report_note(pp_report *r, const char *text)
{
    pp_html_out(r, "<p class=\"note\">");
    pp_html_esc(r, text);
    pp_html_out(r, "</p>\n");
}

static void text_section(pp_report *r, const char *heading, const char *text, const char *note)
{
    pp_html_out(r, "<section class=\"text\">\n<h2>");
    pp_html_esc(r, heading ? heading : "");
    pp_html_out(r, "</h2>\n");
    if (note) {
        pp_html_out(r, "<p>");
        pp_html_esc(r, note);
        pp_html_out(r, "</p>\n");
    }
    if (text) {
        pp_html_out(r, "<pre>");
        pp_html_esc(r, text);
        pp_html_out(r, "</pre>\n");
    }
    pp_html_out(r, "</section>\n");
}

void pp_report_text(pp_report *r, const char *heading, const char *text)
{
    text_section(r, heading, text ? text : "", NULL);
}

void pp_report_launch(pp_report *r, pp_launch_format fmt, const pp_launch_params *p)
{
    char heading[96];
    const char *name = (int)fmt >= 0 && fmt < PP_LAUNCH_COUNT ? pp_launch_format_names[fmt] : "?";
    snprintf(heading, sizeof heading, "Launch command (%s)", name);
    char *buf = NULL;
    size_t len = 0;
    FILE *ms = open_memstream(&buf, &len);
    if (!ms) {
        if (!r->write_errno) r->write_errno = errno ? errno : ENOMEM;
        return;
    }
    pp_error err = {0};
    pp_status st = pp_launch_write(fmt, p, ms, NULL, &err);
    if (fclose(ms) != 0 && st == PP_OK) st = pp_error_set(&err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (st == PP_OK) {
        text_section(r, heading, buf ? buf : "", NULL);
    } else {
        char msg[700];
        snprintf(msg, sizeof msg, "parplan cannot write a %s launch config for this layout: %s", name, err.msg);
        text_section(r, heading, NULL, msg);
    }
    free(buf);
}

/* ------------------------------------------------------------------ whole pages */

static const char *fmt_kv(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static const char *fmt_kv(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    return buf;
}

pp_status pp_report_write_page(const char *path, const char *command, const pp_report_page *p,
                               pp_error *err)
{
    const pp_work *w = p->work;
    if (!w) return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "report: no work");
    bool plan = p->cand != NULL;
    const pp_layout *best = plan ? (p->n_cand > 0 ? &p->cand[0].layout : NULL) : p->layout;
    const pp_time_result *best_t = plan ? (p->n_cand > 0 ? &p->cand[0].time : NULL) : p->time;
    char title[256];
    snprintf(title, sizeof title, "parplan %s: %s on %lld x %s", command ? command : "", w->model.name,
             (long long)w->gpus, w->gpu.name);

    pp_report r;
    pp_status st = pp_report_open(&r, path, title, err);
    if (st != PP_OK) return st;

    /* Summary. */
    enum { KV_MAX = 16 };
    const char *keys[KV_MAX], *vals[KV_MAX];
    char buf[KV_MAX][160];
    int nk = 0;
    pp_param_count pc;
    pp_model_params(&w->model, &pc);
    char b1[64], b2[64];
#define KV(k, ...) (keys[nk] = (k), vals[nk] = fmt_kv(buf[nk], sizeof buf[nk], __VA_ARGS__), nk++)
    double np_ = (double)pc.total;
    const char *unit = np_ >= 1e12 ? "T" : np_ >= 1e9 ? "B" : np_ >= 1e6 ? "M" : "";
    double div = np_ >= 1e12 ? 1e12 : np_ >= 1e9 ? 1e9 : np_ >= 1e6 ? 1e6 : 1;
    KV("model", "%s (%s%s parameters, %lld layers, hidden %lld, sequence %lld)", w->model.name,
       pp_fmt_sig(np_ / div, b1, sizeof b1), unit, (long long)w->model.layers, (long long)w->model.hidden,
       (long long)w->model.seq);
    KV("GPU", "%s%s%s%s, %s GiB", w->gpu.name, w->gpu.full_name[0] ? " (" : "", w->gpu.full_name,
       w->gpu.full_name[0] ? ")" : "", pp_fmt_gib(w->gpu.memory_bytes, b2, sizeof b2));
    int64_t gpn = w->gpus_per_node > 0 ? w->gpus_per_node : 1;
    KV("cluster", "%lld GPUs, %lld node%s of %lld", (long long)w->gpus, (long long)((w->gpus + gpn - 1) / gpn),
       (w->gpus + gpn - 1) / gpn == 1 ? "" : "s", (long long)gpn);
    KV("global batch", "%lld sequences of %lld tokens", (long long)w->gbs, (long long)w->model.seq);
    KV("framework", "%s, %s attention",
       (int)w->framework >= 0 && w->framework < PP_FW_COUNT ? pp_framework_names[w->framework] : "?",
       (int)w->attention >= 0 && w->attention < PP_ATTN_COUNT ? pp_attention_names[w->attention] : "?");
    if (plan && p->search) {
        KV("search", "%s layouts, %s fit, %.2f s", pp_fmt_count(p->search->evaluated, b1, sizeof b1),
           pp_fmt_count(p->search->fitting, b2, sizeof b2), pp_fin(p->search->search_time_s));
    }
    char lab[160] = "none";
    if (best) pp_layout_label(best, lab, sizeof lab);
    KV(plan ? "best layout" : "layout", "%s", lab);
    if (p->mem) {
        double worst = 0;
        for (int64_t i = 0; i < p->mem->n_stages && i < PP_MAX_STAGES; i++)
            worst = fmax(worst, pp_fin(p->mem->stages[i].peak_bytes) + pp_fin(p->mem->stages[i].reserved_bytes));
        KV("memory", "%s: %s of %s GiB on the fullest GPU", p->mem->fits ? "fits" : "does not fit",
           pp_fmt_gib(worst, b1, sizeof b1), pp_fmt_gib(p->mem->capacity_bytes, b2, sizeof b2));
    } else if (plan && p->n_cand > 0) {
        KV("memory", "%s: %s GiB to spare on the fullest GPU", p->cand[0].fits ? "fits" : "does not fit",
           pp_fmt_gib(p->cand[0].headroom_bytes, b1, sizeof b1));
    }
    if (best_t) {
        {
            /* how sure: the band validation measured for this stack and GPU (planner/run/band.c) */
            const pp_band_row *bd = pp_band_for(p->work);
            double lo, hi;
            char b3[64];
            pp_band_range(bd, best_t->step_time_s, &lo, &hi);
            KV("step time", "%s s (%s-%s s: the %s band, %d published runs)", pp_fmt_sig(best_t->step_time_s, b1, sizeof b1),
               pp_fmt_sig(lo, b2, sizeof b2), pp_fmt_sig(hi, b3, sizeof b3), bd->name, bd->calibrate_rows);
        }
        KV("throughput", "%s samples/s, %s tokens/s", pp_fmt_sig(best_t->samples_per_s, b1, sizeof b1),
           pp_fmt_count((int64_t)llround(fmin(fmax(pp_fin(best_t->tokens_per_s), 0), 9e18)), b2, sizeof b2));
        KV("MFU", "%.1f%% (%s model TFLOP/s per GPU)", 100 * pp_fin(best_t->mfu),
           pp_fmt_sig(best_t->model_tflops_per_gpu, b1, sizeof b1));
    }
#undef KV
    pp_report_summary(&r, "Summary", keys, vals, nk);
    if (plan && p->search && p->search->none_fit)
        pp_report_note(&r, "No layout fits in memory: the candidates below are the ones that came closest.");

    if (p->mem) pp_report_memory_stages(&r, p->mem, w->gpu.name);

    if (plan) {
        int n = p->n_cand > 0 && p->n_cand < INT32_MAX ? (int)p->n_cand : 0;
        pp_report_point *pts = calloc((size_t)(n ? n : 1), sizeof *pts);
        char(*labels)[96] = calloc((size_t)(n ? n : 1), sizeof *labels);
        if (!pts || !labels) {
            free(pts);
            free(labels);
            pp_report_free(&r);
            return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        }
        for (int i = 0; i < n; i++) {
            pp_layout_label(&p->cand[i].layout, labels[i], sizeof labels[i]);
            pts[i] = (pp_report_point){labels[i], p->cand[i].headroom_bytes, p->cand[i].time.samples_per_s};
        }
        pp_report_candidates(&r, pts, n, n > 0 ? 0 : -1);

        if (p->search) {
            /* The funnel: what is left after each rule that pruned something, in the search's order. */
            const char *fn[PP_PRUNE_COUNT + 3], *fnote[PP_PRUNE_COUNT + 3];
            int64_t fc[PP_PRUNE_COUNT + 3];
            char fb[PP_PRUNE_COUNT + 3][64];
            int nf = 0;
            int64_t left = p->search->evaluated;
            fn[nf] = "enumerated";
            fnote[nf] = "every combination of the free dimensions";
            fc[nf++] = left;
            for (int k = 0; k < PP_PRUNE_COUNT; k++) {
                if (p->search->pruned[k] <= 0) continue;
                left -= p->search->pruned[k];
                snprintf(fb[nf], sizeof fb[nf], "after %s", pp_prune_names[k]);
                fn[nf] = fb[nf];
                fnote[nf] = pp_prune_help[k];
                fc[nf++] = left;
            }
            snprintf(fb[nf], sizeof fb[nf], "fit and ranked");
            fn[nf] = fb[nf];
            fnote[nf] = "timed by the step-time model (should remove none)";
            fc[nf++] = p->search->fitting;
            int64_t shown = p->top > 0 && p->top < p->search->fitting ? p->top : p->search->fitting;
            snprintf(fb[nf], sizeof fb[nf], "shown (--top %lld)", (long long)(p->top > 0 ? p->top : shown));
            fn[nf] = fb[nf];
            fnote[nf] = "the best by step time";
            fc[nf++] = shown;
            pp_report_funnel(&r, fn, fnote, fc, nf);
        }

        int ns = n;
        int64_t want = p->top > 0 ? p->top : 5;
        if (want > 10) want = 10;
        if (ns > want) ns = (int)want;
        if (ns > 0) {
            pp_time_result *tt = calloc((size_t)ns, sizeof *tt);
            const char **tl = calloc((size_t)ns, sizeof *tl);
            if (tt && tl) {
                for (int i = 0; i < ns; i++) {
                    tt[i] = p->cand[i].time;
                    tl[i] = labels[i];
                }
                pp_report_step_breakdown(&r, tl, tt, ns);
            } else if (!r.write_errno) {
                r.write_errno = ENOMEM;
            }
            free(tt);
            free(tl);
        }
        free(pts);
        free(labels);
    } else if (best_t) {
        const char *tl[1] = {lab};
        pp_report_step_breakdown(&r, tl, best_t, 1);
    }

    /* Launch command of the (best) layout. */
    int fmt = p->launch_format;
    if (fmt < 0) fmt = pp_launch_format_for(w->framework);
    if (best && fmt >= 0 && fmt < PP_LAUNCH_COUNT) {
        pp_launch_params lp;
        pp_launch_params_init(&lp);
        lp.work = w;
        lp.layout = best;
        lp.target = p->launch_target;
        lp.train_iters = p->train_iters;
        if (p->mem && p->mem->n_stages > 0) {
            int64_t k = p->mem->largest_stage >= 0 && p->mem->largest_stage < p->mem->n_stages ? p->mem->largest_stage : 0;
            lp.peak_bytes = p->mem->stages[k].peak_bytes;
            lp.reserved_bytes = p->mem->stages[k].reserved_bytes;
            lp.capacity_bytes = p->mem->capacity_bytes;
        } else if (plan && p->n_cand > 0) {
            lp.peak_bytes = p->cand[0].peak_bytes;
        }
        if (best_t) {
            lp.step_time_s = best_t->step_time_s;
            lp.samples_per_s = best_t->samples_per_s;
        }
        pp_report_launch(&r, (pp_launch_format)fmt, &lp);
    } else if (best) {
        text_section(&r, "Launch command", NULL, "parplan writes no launch config for this framework.");
    }
    return pp_report_close(&r, err);
}
