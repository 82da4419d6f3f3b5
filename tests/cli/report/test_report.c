/* Unit tests of the HTML report writer (src/report*.c): a page from synthetic memory,
 * candidate, funnel and step-time data is checked for well-formed markup (a small tag checker),
 * no external reference, the expected SVG elements and geometry (bars per stage, segment
 * heights proportional to the bytes, the capacity line on the axis, the Pareto front), escaping
 * of hostile names, the atomic write, and the error paths. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "report.h"
#include "readfile.h"
#include "tap.h"

#define GIB 1073741824.0

static int count_str(const char *hay, const char *needle)
{
    int n = 0;
    size_t k = strlen(needle);
    for (const char *p = strstr(hay, needle); p; p = strstr(p + k, needle)) n++;
    return n;
}

static const char *strcasestr_(const char *hay, const char *needle)
{
    size_t k = strlen(needle);
    for (const char *p = hay; *p; p++)
        if (strncasecmp(p, needle, k) == 0) return p;
    return NULL;
}

/* Whether any tag (between '<' and '>') contains needle, case-insensitively. */
static bool tag_has(const char *s, const char *needle)
{
    size_t k = strlen(needle);
    for (const char *p = strchr(s, '<'); p; p = strchr(p + 1, '<')) {
        const char *e = strchr(p, '>');
        if (!e) break;
        for (const char *q = p; q + k <= e; q++)
            if (strncasecmp(q, needle, k) == 0) return true;
    }
    return false;
}

/* A small checker for the markup the writer produces: every start tag is closed by its end tag or
 * self-closed, in order; <style> content is skipped; attribute values are double-quoted; the only
 * '&' are entity references. Returns NULL when well-formed, else a message. */
static const char *check_tags(const char *s, char *msg, size_t n)
{
    char stack[256][32];
    int depth = 0;
    const char *p = s;
    while ((p = strpbrk(p, "<&"))) {
        if (*p == '&') {
            const char *semi = strchr(p, ';');
            if (!semi || semi - p > 10 || semi == p + 1) {
                snprintf(msg, n, "bare '&' at offset %ld", (long)(p - s));
                return msg;
            }
            p = semi + 1;
            continue;
        }
        if (!strncmp(p, "<!--", 4)) {
            const char *e = strstr(p, "-->");
            if (!e) return "unterminated comment";
            p = e + 3;
            continue;
        }
        if (!strncmp(p, "<!DOCTYPE", 9)) {
            p = strchr(p, '>');
            if (!p) return "unterminated doctype";
            p++;
            continue;
        }
        bool end = p[1] == '/';
        const char *nm = p + (end ? 2 : 1);
        size_t k = strspn(nm, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-");
        if (k == 0 || k >= 32) {
            snprintf(msg, n, "bad tag name at offset %ld", (long)(p - s));
            return msg;
        }
        char name[32];
        memcpy(name, nm, k);
        name[k] = 0;
        /* Find the end of the tag, honouring quoted attribute values. */
        const char *q = nm + k;
        bool in_q = false;
        for (; *q && (in_q || *q != '>'); q++) {
            if (*q == '"') in_q = !in_q;
            else if (!in_q && (*q == '<' || *q == '\'')) {
                snprintf(msg, n, "unquoted or broken attribute in <%s> at offset %ld", name, (long)(p - s));
                return msg;
            }
        }
        if (!*q) return "unterminated tag";
        bool self = q[-1] == '/';
        if (end) {
            if (depth == 0 || strcmp(stack[depth - 1], name)) {
                snprintf(msg, n, "</%s> closes <%s> at offset %ld", name, depth ? stack[depth - 1] : "(none)",
                         (long)(p - s));
                return msg;
            }
            depth--;
        } else if (!self) {
            if (depth == 256) return "nesting too deep";
            snprintf(stack[depth++], 32, "%s", name);
            if (!strcmp(name, "style")) { /* raw text */
                const char *e = strstr(q, "</style>");
                if (!e) return "unterminated style";
                q = e - 1;
            }
        }
        p = q + 1;
    }
    if (depth) {
        snprintf(msg, n, "<%s> not closed at the end", stack[depth - 1]);
        return msg;
    }
    return NULL;
}

/* The text between the first occurrence of open (from) and the next close. */
static char *section(const char *s, const char *open, const char *close)
{
    const char *a = strstr(s, open);
    if (!a) return NULL;
    const char *b = strstr(a, close);
    if (!b) return NULL;
    size_t n = (size_t)(b - a);
    char *o = malloc(n + 1);
    memcpy(o, a, n);
    o[n] = 0;
    return o;
}

static double attr(const char *tag, const char *name)
{
    char key[32];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *p = strstr(tag, key);
    return p ? atof(p + strlen(key)) : NAN;
}

static void fill_mem(pp_mem_result *m, int n, double cap_gib)
{
    memset(m, 0, sizeof *m);
    m->n_stages = n;
    m->capacity_bytes = cap_gib * GIB;
    m->fits = true;
    for (int i = 0; i < n; i++) {
        pp_mem_stage *s = &m->stages[i];
        s->stage = i;
        s->layers = 8;
        s->inflight = n - i;
        s->weights_bytes = 10 * GIB;
        s->grads_bytes = 20 * GIB;
        s->optimizer_bytes = 5 * GIB;
        s->activations_bytes = (double)(n - i) * 10 * GIB;
        s->transient_bytes = 2 * GIB;
        s->reserved_bytes = 3 * GIB;
        s->peak_bytes = s->weights_bytes + s->grads_bytes + s->optimizer_bytes + s->activations_bytes +
                        s->transient_bytes;
        s->fits = s->peak_bytes + s->reserved_bytes <= m->capacity_bytes;
        if (!s->fits) m->fits = false;
    }
}

static double mem_total_gib(const pp_mem_stage *s)
{
    return (s->weights_bytes + s->grads_bytes + s->optimizer_bytes + s->activations_bytes + s->transient_bytes +
            s->reserved_bytes) / GIB;
}

int main(void)
{
    char dir[] = "/tmp/pp-report-test-XXXXXX";
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/r.html", dir);

    /* ---------------------------------------------------------------- a full page */
    static pp_mem_result mem;
    fill_mem(&mem, 4, 80); /* stage totals 80, 70, 60, 50 GiB: stage 0 is over (80 > 80? no: equal) */
    mem.stages[0].activations_bytes += 20 * GIB; /* stage 0: 100 GiB > 80 */
    mem.stages[0].fits = false;
    mem.fits = false;
    snprintf(mem.why, sizeof mem.why, "stage 0 needs <b>20 GiB</b> more & --recompute full would fit");

    /* Front (maximise both): G(-2,110) A(1,100) B(5,90) C(10,80) F(20,50); D, E dominated. */
    const char *lbl[] = {"A", "B \"quoted\"", "C", "D", "E", "F", "G"};
    double hx[] = {1, 5, 10, 3, 10, 20, -2}, ty[] = {100, 90, 80, 85, 70, 50, 110};
    pp_report_point pts[7];
    for (int i = 0; i < 7; i++) pts[i] = (pp_report_point){lbl[i], hx[i] * GIB, ty[i]};
    int chosen = 1;

    const char *fnames[] = {"enumerated", "valid", "fits <memory>", "top"};
    int64_t fcounts[] = {100000, 5000, 300, 5};
    const char *fnotes[] = {NULL, "divisibility", "memory <model>", NULL};

    pp_time_result t[3];
    memset(t, 0, sizeof t);
    for (int i = 0; i < 3; i++) {
        t[i].compute_s = 1.0;
        t[i].tp_comm_s = 0.2;
        t[i].bubble_s = 0.3;
        t[i].dp_comm_s = 0.1;
        t[i].optimizer_s = 0.05;
        t[i].step_time_s = 1.65;
        t[i].samples_per_s = 100;
        t[i].mfu = 0.5;
    }
    t[1].step_time_s = 1.5;  /* parts overlap: a step mark */
    t[2].step_time_s = 2.0;  /* 0.35 s unaccounted: "other" */
    t[2].mfu = NAN;          /* never printed as nan */
    const char *tl[] = {"tp1 pp4", "tp2 pp2", "<img src=x onerror=alert(1)>"};

    const char *hostile = "<script>alert('x')</script> & \x01 bad\xff utf8";
    char title[256];
    snprintf(title, sizeof title, "plan: %s", hostile);

    pp_report r;
    pp_error err = {0};
    tap_ok(pp_report_open(&r, path, title, &err) == PP_OK, "open %s", path);
    const char *keys[] = {"model", "GPU"};
    const char *vals[] = {hostile, "a100-80gb"};
    pp_report_summary(&r, "Summary", keys, vals, 2);
    pp_report_memory_stages(&r, &mem, "gpu<1>");
    pp_report_candidates(&r, pts, 7, chosen);
    pp_report_funnel(&r, fnames, fnotes, fcounts, 4);
    pp_report_step_breakdown(&r, tl, t, 3);
    pp_report_text(&r, "Launch command", "torchrun --x 1 \\\n  train.py --name '</pre><script>alert(1)</script>'");
    pp_report_note(&r, "a note with <tags> & ampersands");
    /* Before close only the temporary file exists. */
    struct stat st;
    tap_ok(stat(path, &st) != 0, "the page is not at its path before close");
    tap_ok(pp_report_close(&r, &err) == PP_OK, "close renames the page into place");
    tap_ok(stat(path, &st) == 0 && (st.st_mode & 0444) == 0444 - (0444 & ~(st.st_mode & 0777)),
           "the page exists with mode %o", (unsigned)(st.st_mode & 0777));
    int n_files = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') n_files++;
    if (d) closedir(d);
    tap_ok(n_files == 1, "no temporary file left behind (%d files)", n_files);

    size_t len = 0;
    char *html = tc_read_file(path, &len);
    tap_ok(html != NULL && len > 1000, "page read back (%zu bytes)", len);
    if (!html) return tap_done();

    char msg[256];
    const char *bad = check_tags(html, msg, sizeof msg);
    tap_ok(bad == NULL, "tags balanced, attributes quoted, '&' only in entities%s%s", bad ? ": " : "", bad ? bad : "");
    tap_ok(!strncmp(html, "<!DOCTYPE html>", 15) && strstr(html, "</html>\n") == html + len - 8,
           "doctype first, </html> last");
    tap_ok(!strcasestr_(html, "http:") && !strcasestr_(html, "https:") && !strstr(html, "//"),
           "no http(s) reference, no protocol-relative URL");
    tap_ok(!strcasestr_(html, "<script") && !strcasestr_(html, "<img") && !strcasestr_(html, "@import") &&
               !tag_has(html, "src=") && !tag_has(html, "href=") && !tag_has(html, " on"),
           "no script, image, import, src, href or event handler");
    tap_ok(count_str(html, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; ") == 3,
           "hostile model name escaped in title, h1 and summary (%d)",
           count_str(html, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; "));
    tap_ok(count_str(html, "\xEF\xBF\xBD bad\xEF\xBF\xBD utf8") == 3,
           "control character and invalid UTF-8 replaced by U+FFFD");
    tap_ok(strstr(html, "&lt;b&gt;20 GiB&lt;/b&gt; more &amp; --recompute") != NULL, "why-line escaped");
    tap_ok(strstr(html, "'&lt;/pre&gt;&lt;script&gt;") == NULL &&
               strstr(html, "&#39;&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;&#39;</pre>") != NULL,
           "launch text cannot close its <pre>");
    tap_ok(strstr(html, "B &quot;quoted&quot;") != NULL, "quotes in labels escaped");
    tap_ok(strstr(html, "&lt;img src=x onerror=alert(1)&gt;") != NULL, "layout label escaped");
    tap_ok(strstr(html, "gpu&lt;1&gt;") != NULL, "GPU name escaped");
    tap_ok(!strstr(html, "nan") && !strstr(html, "inf<") && !strstr(html, "\"inf") && !strstr(html, ">inf"),
           "no nan or inf printed");
    tap_ok(strstr(html, "<td>0.0%</td>") != NULL, "NaN MFU printed as 0.0%%");

    /* ---- memory chart */
    char *memsvg = section(html, "<svg class=\"chart memory-chart\"", "</svg>");
    tap_ok(memsvg != NULL, "memory chart present");
    if (memsvg) {
        tap_ok(count_str(memsvg, "<g class=\"bar\"") == 4, "4 stage bars (%d)", count_str(memsvg, "<g class=\"bar\""));
        tap_ok(count_str(memsvg, "<rect class=\"seg seg-") == 24, "6 segments per bar (%d)",
               count_str(memsvg, "<rect class=\"seg seg-"));
        static const char *segs[] = {"weights", "grads", "optimizer", "activations", "transient", "reserved"};
        for (int k = 0; k < 6; k++) {
            char cls[64];
            snprintf(cls, sizeof cls, "class=\"seg seg-%s\"", segs[k]);
            tap_ok(count_str(memsvg, cls) == 4, "%s in every bar", segs[k]);
        }
        tap_ok(count_str(memsvg, "class=\"capacity\"") == 1, "one capacity line");
        tap_ok(count_str(memsvg, "class=\"oom-mark\"") == 1, "one stage marked over capacity");
        tap_ok(strstr(memsvg, "url(#pp-hatch-") != NULL, "reserved drawn with the hatch");
        /* Bar heights: sum of segment heights proportional to the stage totals (100, 70, 60, 50 GiB). */
        double hsum[4] = {0};
        const char *g = memsvg;
        for (int i = 0; i < 4 && (g = strstr(g, "<g class=\"bar\"")); i++) {
            const char *gend = strstr(g, "</g>");
            for (const char *rr = strstr(g, "<rect class=\"seg"); rr && rr < gend; rr = strstr(rr + 1, "<rect class=\"seg"))
                hsum[i] += attr(rr, "height");
            g = gend;
        }
        for (int i = 1; i < 4; i++)
            tap_near(hsum[i] / hsum[0], mem_total_gib(&mem.stages[i]) / mem_total_gib(&mem.stages[0]), 0.01,
                     "bar %d height / bar 0 height = bytes ratio", i);
        /* Capacity line at the "80" tick of the axis; bar 0 (100 GiB) rises above it. */
        const char *cap = strstr(memsvg, "class=\"capacity\"");
        double cap_y = cap ? attr(cap, "y1") : NAN;
        const char *tick80 = strstr(memsvg, "text-anchor=\"end\">80</text>");
        double tick_y = NAN;
        if (tick80) {
            const char *t0 = tick80;
            while (t0 > memsvg && strncmp(t0, "<text", 5)) t0--;
            tick_y = attr(t0, "y") - 4;
        }
        tap_near(cap_y, tick_y, 1e-3, "capacity line y on the 80 GiB tick");
        const char *bar0 = strstr(memsvg, "<g class=\"bar\"");
        const char *seg_top = bar0 ? strstr(bar0, "seg-reserved") : NULL;
        tap_ok(seg_top && attr(seg_top, "y") < cap_y, "stage 0 (100 GiB) rises above the capacity line");
        free(memsvg);
    }
    tap_ok(strstr(html, "Does not fit") != NULL && strstr(html, "1 of 4 stages over capacity") != NULL,
           "verdict names the OOM");

    /* ---- candidates: front G A B C F, chosen B, D and E plain */
    char *cand = section(html, "<svg class=\"chart candidates-chart\"", "</svg>");
    tap_ok(cand != NULL, "candidates chart present");
    if (cand) {
        tap_ok(count_str(cand, "<path class=\"pareto\"") == 1, "one Pareto path");
        const char *pd = strstr(cand, "<path class=\"pareto\"");
        const char *dd = pd ? strstr(pd, " d=\"") : NULL;
        int nm = 0, nv = 0, nh = 0;
        for (const char *c = dd ? dd + 4 : ""; *c && *c != '"'; c++) {
            nm += *c == 'M';
            nv += *c == 'V';
            nh += *c == 'H';
        }
        tap_ok(nm == 1 && nv == 4 && nh == 4, "staircase through 5 front points (M%d V%d H%d)", nm, nv, nh);
        tap_ok(count_str(cand, "class=\"pt pareto-pt\"") == 4, "4 front points besides the chosen (%d)",
               count_str(cand, "class=\"pt pareto-pt\""));
        tap_ok(count_str(cand, "<circle class=\"pt\"") == 2, "2 dominated points (%d)",
               count_str(cand, "<circle class=\"pt\""));
        tap_ok(count_str(cand, "<g class=\"chosen\">") == 1 && strstr(cand, "chosen: B &quot;quoted&quot;"),
               "chosen marked and labelled");
        tap_ok(count_str(cand, "class=\"zero\"") == 1, "zero-headroom line (a point has x < 0)");
        /* The staircase starts at the fastest point (G: x -2, y 110), ends at the roomiest (F). */
        double x0 = 0, y0 = 0;
        if (dd) sscanf(dd + 4, "M%lf %lf", &x0, &y0);
        const char *ptsG = strstr(cand, "<title>G (Pareto)");
        const char *cg = ptsG;
        while (cg && cg > cand && strncmp(cg, "<circle", 7)) cg--;
        tap_ok(cg && fabs(attr(cg, "cx") - x0) < 0.05 && fabs(attr(cg, "cy") - y0) < 0.05,
               "front starts at the fastest point");
        /* The label box stays inside the plot frame. */
        const char *fr = strstr(cand, "<rect class=\"frame\"");
        const char *lab = strstr(cand, "font-weight=\"600\">chosen:");
        const char *lt = lab;
        while (lt && lt > cand && strncmp(lt, "<text", 5)) lt--;
        if (fr && lt) {
            double fx = attr(fr, "x"), fw = attr(fr, "width"), lx = attr(lt, "x");
            tap_ok(lx >= fx && lx + 0.6 * 12 * 21 <= fx + fw, "chosen label inside the plot (x %.0f in %.0f..%.0f)", lx,
                   fx, fx + fw);
        } else {
            tap_ok(0, "chosen label found");
        }
        free(cand);
    }

    /* ---- funnel */
    char *fun = section(html, "<svg class=\"chart funnel-chart\"", "</svg>");
    tap_ok(fun && count_str(fun, "class=\"funnel-bar\"") == 4, "4 funnel bars");
    if (fun) {
        double w[4] = {0};
        const char *b = fun;
        for (int i = 0; i < 4 && (b = strstr(b, "class=\"funnel-bar\"")); i++, b++) w[i] = attr(b, "width");
        tap_ok(w[0] > w[1] && w[1] > w[2] && w[2] > w[3] && w[3] > 0, "funnel bars shrink (%.0f %.0f %.0f %.0f)", w[0],
               w[1], w[2], w[3]);
        /* log scale (100000 / 5 spans four decades): width ~ log10(c + 1). */
        tap_near(w[1] / w[0], log10(5001) / log10(100001), 0.01, "log-scale funnel widths");
        tap_ok(strstr(fun, "100,000") && strstr(fun, "5,000 (5.00%)") && strstr(fun, "fits &lt;memory&gt;"),
               "funnel counts, shares and escaped names");
        free(fun);
    }
    tap_ok(strstr(html, "logarithmic scale") != NULL, "log scale stated");
    tap_ok(strstr(html, "<tr><td>fits &lt;memory&gt;</td><td>4,700</td><td style=\"text-align:left\">memory &lt;model&gt;</td></tr>") != NULL,
           "funnel table: removed count and escaped reason");

    /* ---- steps */
    char *steps = section(html, "<svg class=\"chart steps-chart\"", "</svg>");
    tap_ok(steps && count_str(steps, "<g class=\"step-bar\">") == 3, "3 step bars");
    if (steps) {
        tap_ok(count_str(steps, "class=\"step-mark\"") == 1, "one step mark (layout with overlapping parts)");
        tap_ok(count_str(steps, "seg-other") == 3, "an 'other' segment on each row when any step is unaccounted");
        tap_ok(count_str(steps, "seg-bubble") == 3 && count_str(steps, "seg-compute") == 3, "compute and bubble segments");
        tap_ok(strstr(steps, "time per optimizer step (s)") != NULL, "time axis in seconds");
        /* Segment widths: compute 1.0 s against step 1.65 s on row 0. */
        const char *c0 = strstr(steps, "seg-compute");
        const char *b0 = strstr(steps, "seg-bubble");
        tap_near(attr(b0, "width") / attr(c0, "width"), 0.3, 1e-3, "bubble / compute width");
        free(steps);
    }

    /* ---- many stages: labels thinned so they do not overlap */
    static pp_mem_result big;
    fill_mem(&big, 512, 10000);
    FILE *mf = tmpfile();
    pp_report_begin(&r, mf, "512 stages");
    pp_report_memory_stages(&r, &big, NULL);
    tap_ok(pp_report_close(&r, &err) == PP_OK, "512-stage page written to a stream");
    long bl = ftell(mf);
    char *bhtml = malloc((size_t)bl + 1);
    rewind(mf);
    size_t got = fread(bhtml, 1, (size_t)bl, mf);
    bhtml[got] = 0;
    fclose(mf);
    tap_ok(count_str(bhtml, "<g class=\"bar\"") == 512, "512 bars");
    {
        /* Stage tick labels: the <text class="tick" ... text-anchor="middle"> after the bars. */
        double prev = -1e9, min_gap = 1e9;
        int nlab = 0;
        const char *svg = strstr(bhtml, "memory-chart");
        for (const char *q = strstr(svg, "</g>\n<text class=\"tick\""); q; q = strstr(q + 1, "</g>\n<text class=\"tick\"")) {
            double x = attr(q + 5, "x");
            if (nlab) min_gap = fmin(min_gap, x - prev);
            prev = x;
            nlab++;
        }
        tap_ok(nlab >= 8 && nlab <= 64 && min_gap >= 0.6 * 12 * 3 + 4,
               "stage labels thinned: %d labels, smallest gap %.1f", nlab, min_gap);
    }
    tap_ok(check_tags(bhtml, msg, sizeof msg) == NULL, "512-stage page well-formed");
    free(bhtml);

    /* ---- empty inputs */
    mf = tmpfile();
    pp_report_begin(&r, mf, NULL);
    pp_report_candidates(&r, pts, 0, -1);
    pp_report_funnel(&r, fnames, NULL, fcounts, 0);
    pp_report_step_breakdown(&r, tl, t, 0);
    static pp_mem_result none;
    pp_report_memory_stages(&r, &none, NULL);
    tap_ok(pp_report_close(&r, &err) == PP_OK, "empty sections");
    bl = ftell(mf);
    bhtml = malloc((size_t)bl + 1);
    rewind(mf);
    got = fread(bhtml, 1, (size_t)bl, mf);
    bhtml[got] = 0;
    fclose(mf);
    tap_ok(strstr(bhtml, "No candidate layout") && strstr(bhtml, "No stages.") && !strstr(bhtml, "<svg") &&
               check_tags(bhtml, msg, sizeof msg) == NULL,
           "empty sections say so and draw no chart");
    free(bhtml);

    /* ---- atomic write: an abandoned report leaves the old file untouched */
    FILE *old = fopen(path, "w");
    fputs("old", old);
    fclose(old);
    tap_ok(pp_report_open(&r, path, "x", &err) == PP_OK, "reopen over an existing file");
    pp_report_memory_stages(&r, &mem, NULL);
    pp_report_free(&r);
    pp_report_free(&r);   /* twice: a no-op */
    pp_report_free(NULL); /* accepts NULL */
    char *oldtxt = tc_read_file(path, NULL);
    tap_ok(oldtxt && !strcmp(oldtxt, "old"), "abandoned report: the old file is unchanged");
    free(oldtxt);
    n_files = 0;
    d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') n_files++;
    if (d) closedir(d);
    tap_ok(n_files == 1, "abandoned report: temporary file removed (%d files)", n_files);

    /* ---- errors */
    char nodir[600];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir/r.html", dir);
    pp_error e2 = {0};
    tap_ok(pp_report_open(&r, nodir, "x", &e2) == PP_ERR_INPUT && strstr(e2.file, "no/such/dir"),
           "missing directory is bad input naming the path (%s: %s)", e2.file, e2.msg);
    tap_ok(pp_report_open(&r, "", "x", &e2) == PP_ERR_INPUT, "empty path is bad input");
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        pp_report_begin(&r, full, "x");
        for (int i = 0; i < 50; i++) pp_report_memory_stages(&r, &mem, NULL);
        pp_status sf = pp_report_close(&r, &e2);
        tap_ok(sf == PP_ERR_RUNTIME, "a full disk is a runtime error (%s)", e2.msg);
        fclose(full);
    }

    /* ---- launch section: the Megatron script of a layout, and the reason when there is none */
    {
        pp_work w;
        memset(&w, 0, sizeof w);
        snprintf(w.model.name, sizeof w.model.name, "gpt</pre><script>x");
        w.model.layers = 24, w.model.hidden = 2048, w.model.heads = 16, w.model.kv_heads = 16;
        w.model.head_dim = 128, w.model.ffn = 8192, w.model.vocab = 50257, w.model.seq = 2048;
        w.model.bias = w.model.tied = true;
        snprintf(w.gpu.name, sizeof w.gpu.name, "h100-sxm");
        w.gpu.memory_bytes = 80 * GIB;
        w.gpu.gpus_per_node = 8;
        w.gpus = 8, w.gpus_per_node = 8, w.gbs = 64;
        pp_layout ll;
        pp_layout_init(&ll);
        ll.tp = 2, ll.pp = 2, ll.dp = 2, ll.mbs = 1;
        pp_launch_params lp;
        pp_launch_params_init(&lp);
        lp.work = &w;
        lp.layout = &ll;
        mf = tmpfile();
        pp_report_begin(&r, mf, "launch");
        pp_report_launch(&r, PP_LAUNCH_MEGATRON, &lp);
        ll.dp = 3; /* tp*pp*dp != gpus: no config */
        pp_report_launch(&r, PP_LAUNCH_MEGATRON, &lp);
        tap_ok(pp_report_close(&r, &err) == PP_OK, "launch sections written");
        bl = ftell(mf);
        bhtml = malloc((size_t)bl + 1);
        rewind(mf);
        got = fread(bhtml, 1, (size_t)bl, mf);
        bhtml[got] = 0;
        fclose(mf);
        tap_ok(count_str(bhtml, "Launch command (megatron)") == 2, "two launch sections");
        tap_ok(strstr(bhtml, "pretrain_gpt.py") && strstr(bhtml, "--tensor-model-parallel-size 2"),
               "Megatron script in the page");
        tap_ok(!strstr(bhtml, "</pre><script>") && strstr(bhtml, "gpt&lt;/pre&gt;&lt;script&gt;x") &&
                   check_tags(bhtml, msg, sizeof msg) == NULL,
               "model name inside the script escaped, page well-formed");
        tap_ok(strstr(bhtml, "cannot write a megatron launch config for this layout: tp*pp*cp*dp = 12") != NULL,
               "no config: the reason is shown");
        free(bhtml);
    }

    /* ---- whole pages: plan and check */
    {
        pp_work w;
        memset(&w, 0, sizeof w);
        snprintf(w.model.name, sizeof w.model.name, "gpt-2b");
        w.model.layers = 24, w.model.hidden = 2048, w.model.heads = 16, w.model.kv_heads = 16;
        w.model.head_dim = 128, w.model.ffn = 8192, w.model.vocab = 50257, w.model.seq = 2048;
        w.model.bias = w.model.tied = true;
        snprintf(w.gpu.name, sizeof w.gpu.name, "h100-sxm");
        w.gpu.memory_bytes = 80 * GIB;
        w.gpu.gpus_per_node = 8;
        w.gpus = 8, w.gpus_per_node = 8, w.gbs = 64;
        enum { NC = 6 };
        pp_search_candidate cand[NC];
        memset(cand, 0, sizeof cand);
        for (int i = 0; i < NC; i++) {
            pp_layout_init(&cand[i].layout);
            cand[i].layout.tp = 1 << (i % 3);
            cand[i].layout.pp = 1 << (i / 3);
            cand[i].layout.dp = 8 / (cand[i].layout.tp * cand[i].layout.pp);
            cand[i].layout.mbs = 1;
            cand[i].headroom_bytes = (10.0 + 5 * i) * GIB;
            cand[i].peak_bytes = 80 * GIB - cand[i].headroom_bytes - 3 * GIB;
            cand[i].worst_bytes = cand[i].peak_bytes + 3 * GIB;
            cand[i].fits = true;
            cand[i].time = t[0];
            cand[i].time.step_time_s = 1.65 + 0.1 * i;
            cand[i].time.samples_per_s = 64 / cand[i].time.step_time_s;
        }
        pp_search_result res;
        memset(&res, 0, sizeof res);
        res.evaluated = 5000;
        res.pruned[PP_PRUNE_GPUS] = 3000;
        res.pruned[PP_PRUNE_OOM] = 1900;
        res.fitting = 100;
        res.n = NC;
        res.search_time_s = 0.25;
        static pp_mem_result pm;
        fill_mem(&pm, 2, 80);
        pp_report_page pg = {.work = &w, .cand = cand, .n_cand = NC, .search = &res, .top = 3, .mem = &pm,
                             .launch_format = -1};
        tap_ok(pp_report_write_page(path, "plan", &pg, &err) == PP_OK, "plan page written");
        char *pl = tc_read_file(path, NULL);
        tap_ok(pl && check_tags(pl, msg, sizeof msg) == NULL, "plan page well-formed");
        if (pl) {
            tap_ok(count_str(pl, "<svg class=\"chart") == 4, "plan page: memory, candidates, funnel, steps");
            tap_ok(count_str(pl, "class=\"funnel-bar\"") == 5 && strstr(pl, "after gpus") && strstr(pl, "after oom") &&
                       strstr(pl, "fit and ranked") && strstr(pl, "shown (--top 3)"),
                   "funnel: enumerated, 2 rules, fit, shown");
            tap_ok(strstr(pl, ">100 (2.00%)<") && strstr(pl, ">3 (0.06%)<") && strstr(pl, ">2,000 (40.0%)<"), "funnel counts after the rules");
            tap_ok(count_str(pl, "<g class=\"step-bar\">") == 3, "step chart: --top 3 rows");
            tap_ok(strstr(pl, "chosen: tp1 pp1 dp8 mbs1") != NULL, "chosen = best candidate");
            tap_ok(strstr(pl, "5,000 layouts, 100 fit") && strstr(pl, "<dt>best layout</dt><dd>tp1 pp1 dp8 mbs1</dd>"),
                   "plan summary");
            tap_ok(strstr(pl, "Launch command (megatron)") && strstr(pl, "pretrain_gpt.py"), "plan launch command");
        }
        free(pl);
        pp_layout cl = cand[1].layout;
        pp_report_page pc = {.work = &w, .layout = &cl, .time = &t[0], .mem = &pm, .launch_format = -1};
        tap_ok(pp_report_write_page(path, "check", &pc, &err) == PP_OK, "check page written");
        char *ck = tc_read_file(path, NULL);
        tap_ok(ck && check_tags(ck, msg, sizeof msg) == NULL, "check page well-formed");
        if (ck) {
            tap_ok(count_str(ck, "<svg class=\"chart") == 2 && strstr(ck, "memory-chart") && strstr(ck, "steps-chart"),
                   "check page: memory and steps only");
            tap_ok(strstr(ck, "<dt>layout</dt><dd>tp2 pp1 dp4 mbs1</dd>") && strstr(ck, "--tensor-model-parallel-size 2"),
                   "check page: the layout and its launch command");
        }
        free(ck);
        w.framework = PP_FW_FSDP;
        tap_ok(pp_report_write_page(path, "check", &pc, &err) == PP_OK, "fsdp check page written");
        ck = tc_read_file(path, NULL);
        /* the framework's own format (pp_launch_format_for: torchtitan for fsdp), its config or why not */
        tap_ok(ck && strstr(ck, "Launch command (torchtitan)") && !strstr(ck, "pretrain_gpt"),
               "fsdp: torchtitan's launch section, not Megatron's");
        free(ck);
    }

    /* ---- layout labels */
    pp_layout l;
    pp_layout_init(&l);
    l.tp = 2;
    l.pp = 4;
    l.dp = 8;
    l.vpp = 2;
    l.mbs = 1;
    l.dist_opt = true;
    l.sp = true;
    l.recompute = PP_RC_FULL;
    l.recompute_layers = 3;
    char lb[128];
    pp_layout_label(&l, lb, sizeof lb);
    tap_ok(!strcmp(lb, "tp2 pp4 dp8 vpp2 mbs1 dist-opt sp full(3)"), "layout label '%s'", lb);
    l.zero = 3;
    l.dist_opt = false;
    l.sp = false;
    l.vpp = 1;
    l.cp = 2;
    l.recompute = PP_RC_NONE;
    l.offload = PP_OFF_OPTIMIZER;
    pp_layout_label(&l, lb, sizeof lb);
    tap_ok(!strcmp(lb, "tp2 pp4 dp8 cp2 mbs1 zero3 offload=optimizer"), "layout label '%s'", lb);
    char small[8];
    pp_layout_label(&l, small, sizeof small);
    tap_ok(strlen(small) == 7, "label truncated to its buffer");

    unlink(path);
    rmdir(dir);
    free(html);
    return tap_done();
}
