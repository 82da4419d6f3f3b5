/* The HTML/SVG report (issue 10). See report.h.
 *
 * Design choices, and why:
 *   - No script, no remote resource: the page must open offline, in a mail attachment or a CI
 *     artefact viewer, and must be safe when a model name is hostile. Inline SVG is drawn with
 *     integer-free user units in a fixed viewBox (960 wide) and scales with the page width.
 *   - The markup is also well-formed XML (void elements self-closed, only numeric character
 *     references besides &amp; &lt; &gt; &quot;), so a strict XML parser can check it in tests.
 *   - Colours: the Okabe-Ito palette (Okabe & Ito 2008, "Color Universal Design"), distinct for
 *     the common colour-vision deficiencies; "reserved" and "other" are grey and hatched so that
 *     they do not read as allocator memory / modelled time. Segments are separated by a thin
 *     white stroke so adjacent colours never touch.
 *   - Text width is estimated as 0.6 em per character (an upper bound for the sans-serif fonts
 *     a browser falls back to), which decides label thinning, truncation and placement so that
 *     labels do not overlap.
 *   - Sizes are in GiB (2^30 bytes) like the text tables of the CLI.
 */
#include "report.h"

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

#define GIB 1073741824.0
#define SVG_W 960.0

/* Okabe-Ito. */
#define C_BLUE "#0072B2"
#define C_SKY "#56B4E9"
#define C_GREEN "#009E73"
#define C_ORANGE "#E69F00"
#define C_YELLOW "#F0E442"
#define C_VERMILLION "#D55E00"
#define C_PURPLE "#CC79A7"
#define C_BLACK "#222222"
#define C_GREY "#9A9A9A"

/* ------------------------------------------------------------------ output */

static void rep_check(pp_report *r)
{
    if (!r->write_errno && r->f && ferror(r->f)) r->write_errno = errno ? errno : EIO;
}

static void out(pp_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(pp_report *r, const char *fmt, ...)
{
    if (!r->f) return;
    va_list ap;
    va_start(ap, fmt);
    if (vfprintf(r->f, fmt, ap) < 0 && !r->write_errno) r->write_errno = errno ? errno : EIO;
    va_end(ap);
}

/* Length of the valid UTF-8 sequence at s, 0 when it is not one (overlong, surrogate, > U+10FFFF,
 * truncated). Reads no further than a NUL. */
static int utf8_seq_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    int n;
    unsigned min;
    if (c >= 0xC2 && c <= 0xDF) n = 2, min = 0x80;
    else if ((c & 0xF0) == 0xE0) n = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, min = 0x10000;
    else return 0;
    unsigned cp = c & (0x3Fu >> (n - 1));
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

/* Code points in s (invalid bytes count as one, they become U+FFFD). */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        int k = utf8_seq_len(p);
        p += k ? k : 1;
        n++;
    }
    return n;
}

/* Write s escaped for HTML text and attribute values, at most max_chars code points (0: all;
 * a cut string ends with an ellipsis). Invalid UTF-8 and control characters other than newline
 * and tab become U+FFFD: they are parse errors in HTML and illegal in XML. */
static void esc_n(pp_report *r, const char *s, size_t max_chars)
{
    if (!s || !r->f) return;
    size_t total = utf8_chars(s);
    size_t limit = (max_chars && total > max_chars) ? max_chars - 1 : total;
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < limit && *p; i++) {
        int k = utf8_seq_len(p);
        unsigned c = *p;
        if (!k) {
            fputs("\xEF\xBF\xBD", r->f);
            p++;
            continue;
        }
        if (k == 1) {
            switch (c) {
            case '&': fputs("&amp;", r->f); break;
            case '<': fputs("&lt;", r->f); break;
            case '>': fputs("&gt;", r->f); break;
            case '"': fputs("&quot;", r->f); break;
            case '\'': fputs("&#39;", r->f); break;
            default:
                if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) fputs("\xEF\xBF\xBD", r->f);
                else fputc((int)c, r->f);
            }
        } else {
            fwrite(p, 1, (size_t)k, r->f);
        }
        p += k;
    }
    if (limit < total) fputs("\xE2\x80\xA6", r->f); /* … */
}

static void esc(pp_report *r, const char *s) { esc_n(r, s, 0); }

/* A coordinate or size: finite, one decimal. */
static double fin(double v) { return isfinite(v) ? v : 0; }

/* Estimated width in SVG units of n characters at font size fs. */
static double text_w(size_t n, double fs) { return 0.6 * fs * (double)n; }

/* "1,234,567" */
static const char *fmt_count(int64_t v, char *buf, size_t n)
{
    char tmp[32];
    unsigned long long u = v < 0 ? (unsigned long long)(-(v + 1)) + 1 : (unsigned long long)v;
    snprintf(tmp, sizeof tmp, "%llu", u);
    size_t len = strlen(tmp), o = 0;
    if (v < 0 && o + 1 < n) buf[o++] = '-';
    for (size_t i = 0; i < len && o + 1 < n; i++) {
        if (i && (len - i) % 3 == 0 && o + 1 < n) buf[o++] = ',';
        if (o + 1 < n) buf[o++] = tmp[i];
    }
    buf[o] = 0;
    return buf;
}

/* A number with about 3 significant digits, never NaN/inf. */
static const char *fmt_sig(double v, char *buf, size_t n)
{
    if (!isfinite(v)) snprintf(buf, n, "n/a");
    else if (fabs(v) >= 100 || v == 0) snprintf(buf, n, "%.0f", v);
    else if (fabs(v) >= 10) snprintf(buf, n, "%.1f", v);
    else if (fabs(v) >= 1) snprintf(buf, n, "%.2f", v);
    else snprintf(buf, n, "%.3g", v);
    return buf;
}

static const char *fmt_gib(double bytes, char *buf, size_t n)
{
    if (!isfinite(bytes)) snprintf(buf, n, "n/a");
    else snprintf(buf, n, "%.1f", bytes / GIB);
    return buf;
}

/* ------------------------------------------------------------------ axes */

typedef struct {
    double lo, hi, step;
    int decimals;
} pp_axis;

/* Round [lo, hi] out to a 1-2-5 step giving about target intervals. */
static void axis_nice(double lo, double hi, int target, pp_axis *a)
{
    if (!isfinite(lo)) lo = 0;
    if (!isfinite(hi)) hi = lo + 1;
    if (hi < lo) {
        double t = lo;
        lo = hi;
        hi = t;
    }
    if (hi - lo < 1e-12 * (fabs(hi) + 1)) {
        double pad = fabs(hi) > 0 ? fabs(hi) * 0.1 : 1;
        lo -= pad;
        hi += pad;
    }
    double raw = (hi - lo) / target;
    double mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    double step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
    a->lo = floor(lo / step + 1e-9) * step;
    a->hi = ceil(hi / step - 1e-9) * step;
    if (a->hi <= a->lo) a->hi = a->lo + step;
    a->step = step;
    int d = (int)-floor(log10(step) + 1e-9);
    a->decimals = d > 0 ? (d < 6 ? d : 6) : 0;
}

static double axis_map(const pp_axis *a, double v, double p0, double p1)
{
    double t = (fin(v) - a->lo) / (a->hi - a->lo);
    return p0 + t * (p1 - p0);
}

/* Horizontal grid lines and tick labels on the left of [x0, x1] for a vertical axis. */
static void axis_y_draw(pp_report *r, const pp_axis *a, double x0, double x1, double y_bottom,
                        double y_top, const char *title)
{
    int nt = (int)floor((a->hi - a->lo) / a->step + 0.5);
    out(r, "<g class=\"axis axis-y\">\n");
    for (int i = 0; i <= nt; i++) {
        double v = a->lo + i * a->step;
        double y = axis_map(a, v, y_bottom, y_top);
        if (fabs(v) < a->step * 1e-9) v = 0;
        out(r, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x0, y, x1, y);
        out(r, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n", x0 - 6,
            y + 4, a->decimals, v);
    }
    double yc = (y_bottom + y_top) / 2;
    out(r, "<text class=\"axis-title\" transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\">",
        yc);
    esc(r, title);
    out(r, "</text>\n</g>\n");
}

/* Vertical grid lines and tick labels below [y_top, y_bottom] for a horizontal axis, thinned so
 * that labels keep a gap of one character. */
static void axis_x_draw(pp_report *r, const pp_axis *a, double x0, double x1, double y_top,
                        double y_bottom, const char *title)
{
    int nt = (int)floor((a->hi - a->lo) / a->step + 0.5);
    double label_w = 0;
    for (int i = 0; i <= nt; i++) {
        char b[48];
        snprintf(b, sizeof b, "%.*f", a->decimals, a->lo + i * a->step);
        label_w = fmax(label_w, text_w(strlen(b), 12));
    }
    double slot = nt > 0 ? (x1 - x0) / nt : (x1 - x0);
    int every = 1;
    while (every < nt && slot * every < label_w + 8) every++;
    out(r, "<g class=\"axis axis-x\">\n");
    for (int i = 0; i <= nt; i++) {
        double v = a->lo + i * a->step;
        double x = axis_map(a, v, x0, x1);
        if (fabs(v) < a->step * 1e-9) v = 0;
        out(r, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x, y_top, x, y_bottom);
        if (i % every == 0)
            out(r, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.*f</text>", x,
                y_bottom + 16, a->decimals, v);
        out(r, "\n");
    }
    out(r, "<text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (x0 + x1) / 2,
        y_bottom + 38);
    esc(r, title);
    out(r, "</text>\n</g>\n");
}

/* ------------------------------------------------------------------ legend and defs */

typedef struct {
    const char *label;
    const char *fill;  /* colour, or NULL for the hatch pattern */
    int shape;         /* 0 square, 1 line (dashed), 2 circle, 3 ring, 4 step line */
} pp_legend_item;

/* A grey hatch for "reserved"/"other", id unique per chart. */
static void defs_hatch(pp_report *r)
{
    out(r,
        "<defs><pattern id=\"pp-hatch-%d\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
        "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#E4E4E4\"/>"
        "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"" C_GREY "\" stroke-width=\"2.5\"/></pattern></defs>\n",
        r->n_svg);
}

static void fill_attr(pp_report *r, const char *fill)
{
    if (fill) out(r, "fill=\"%s\"", fill);
    else out(r, "fill=\"url(#pp-hatch-%d)\"", r->n_svg);
}

/* Width of one legend entry: swatch, gap, label, gap. */
static double legend_item_w(const pp_legend_item *it) { return 18 + 6 + text_w(utf8_chars(it->label), 12) + 18; }

/* Height legend_draw will use for these items within width. */
static double legend_h(const pp_legend_item *it, int n, double width)
{
    double cx = 0, rows = 1;
    for (int i = 0; i < n; i++) {
        double w = legend_item_w(&it[i]);
        if (cx > 0 && cx + w > width) cx = 0, rows++;
        cx += w;
    }
    return rows * 20;
}

/* Legend rows from (x, y) within width; returns the height used. */
static double legend_draw(pp_report *r, const pp_legend_item *it, int n, double x, double y, double width)
{
    double cx = x, cy = y;
    out(r, "<g class=\"legend\">\n");
    for (int i = 0; i < n; i++) {
        double w = legend_item_w(&it[i]);
        if (cx > x && cx + w > x + width) {
            cx = x;
            cy += 20;
        }
        switch (it[i].shape) {
        case 1:
            out(r, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\" "
                   "stroke-dasharray=\"6 3\"/>",
                cx, cy + 6, cx + 18, cy + 6, it[i].fill);
            break;
        case 4:
            out(r, "<path d=\"M%.1f %.1fh6v6h6v6\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>", cx + 2,
                cy, it[i].fill);
            break;
        case 2:
            out(r, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\" fill-opacity=\"0.55\"/>", cx + 9,
                cy + 6, it[i].fill);
            break;
        case 3:
            out(r, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\"/>",
                cx + 9, cy + 6, it[i].fill);
            break;
        default:
            out(r, "<rect x=\"%.1f\" y=\"%.1f\" width=\"18\" height=\"12\" ", cx, cy);
            fill_attr(r, it[i].fill);
            out(r, " stroke=\"#fff\"/>");
        }
        out(r, "<text x=\"%.1f\" y=\"%.1f\">", cx + 24, cy + 10.5);
        esc(r, it[i].label);
        out(r, "</text>\n");
        cx += w;
    }
    out(r, "</g>\n");
    return cy - y + 20;
}

static void svg_open(pp_report *r, const char *cls, double h, const char *aria)
{
    r->n_svg++;
    out(r, "<svg class=\"chart %s\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"", cls, SVG_W, h);
    esc(r, aria);
    out(r, "\">\n");
}

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
    out(r, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
           "<meta name=\"generator\" content=\"parplan %s\"/>\n<title>",
        PP_VERSION);
    esc(r, title ? title : "parplan report");
    out(r, "</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n<header><h1>", page_css);
    esc(r, title ? title : "parplan report");
    out(r, "</h1><p>parplan %s: predicted by the analytic memory and step-time models unless marked "
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
    out(r, "<footer>parplan %s</footer>\n</main>\n</body>\n</html>\n", PP_VERSION);
    if (fflush(r->f) != 0 && !r->write_errno) r->write_errno = errno ? errno : EIO;
    rep_check(r);
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
    out(r, "<section class=\"summary\">\n<h2>");
    esc(r, heading ? heading : "Summary");
    out(r, "</h2>\n<dl class=\"kv\">\n");
    for (int i = 0; i < n; i++) {
        out(r, "<dt>");
        esc(r, keys[i]);
        out(r, "</dt><dd>");
        esc(r, values[i]);
        out(r, "</dd>\n");
    }
    out(r, "</dl>\n</section>\n");
}

void pp_report_note(pp_report *r, const char *text)
{
    out(r, "<p class=\"note\">");
    esc(r, text);
    out(r, "</p>\n");
}

static void text_section(pp_report *r, const char *heading, const char *text, const char *note)
{
    out(r, "<section class=\"text\">\n<h2>");
    esc(r, heading ? heading : "");
    out(r, "</h2>\n");
    if (note) {
        out(r, "<p>");
        esc(r, note);
        out(r, "</p>\n");
    }
    if (text) {
        out(r, "<pre>");
        esc(r, text);
        out(r, "</pre>\n");
    }
    out(r, "</section>\n");
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

/* ------------------------------------------------------------------ memory per stage */

enum { MEM_WEIGHTS, MEM_GRADS, MEM_OPT, MEM_ACT, MEM_TRANSIENT, MEM_RESERVED, MEM_N };
static const char *const mem_names[MEM_N] = {"weights", "grads", "optimizer", "activations",
                                              "transient", "reserved"};
static const char *const mem_fill[MEM_N] = {C_BLUE, C_SKY, C_GREEN, C_ORANGE, C_YELLOW, NULL};

static void mem_parts(const pp_mem_stage *s, double v[MEM_N])
{
    v[MEM_WEIGHTS] = fmax(0, fin(s->weights_bytes));
    v[MEM_GRADS] = fmax(0, fin(s->grads_bytes));
    v[MEM_OPT] = fmax(0, fin(s->optimizer_bytes));
    v[MEM_ACT] = fmax(0, fin(s->activations_bytes));
    v[MEM_TRANSIENT] = fmax(0, fin(s->transient_bytes));
    v[MEM_RESERVED] = fmax(0, fin(s->reserved_bytes));
}

void pp_report_memory_stages(pp_report *r, const pp_mem_result *m, const char *gpu_name)
{
    char b1[64], b2[64], b3[64];
    int64_t n = m->n_stages;
    if (n < 0) n = 0;
    if (n > PP_MAX_STAGES) n = PP_MAX_STAGES;
    double cap = fmax(0, fin(m->capacity_bytes));
    out(r, "<section class=\"memory\">\n<h2>Memory per pipeline stage</h2>\n");
    if (n == 0) {
        out(r, "<p>No stages.</p>\n</section>\n");
        return;
    }
    int n_oom = 0;
    for (int64_t i = 0; i < n; i++) {
        double v[MEM_N], t = 0;
        mem_parts(&m->stages[i], v);
        for (int k = 0; k < MEM_N; k++) t += v[k];
        n_oom += cap > 0 && t > cap;
    }
    /* Verdict line: the fullest stage and what is left. */
    double worst = 0;
    int64_t worst_i = 0;
    for (int64_t i = 0; i < n; i++) {
        double v[MEM_N], t = 0;
        mem_parts(&m->stages[i], v);
        for (int k = 0; k < MEM_N; k++) t += v[k];
        if (t > worst) worst = t, worst_i = i;
    }
    out(r, "<p><span class=\"%s\">%s</span>: ", m->fits ? "verdict-ok" : "verdict-bad",
        m->fits ? "Fits" : "Does not fit");
    if (n_oom) out(r, "%d of %lld stage%s over capacity; ", n_oom, (long long)n, n == 1 ? "" : "s");
    out(r, "the fullest GPU is on stage %lld and needs %s GiB of %s GiB", (long long)worst_i,
        fmt_gib(worst, b1, sizeof b1), fmt_gib(cap, b2, sizeof b2));
    if (gpu_name && *gpu_name) {
        out(r, " (");
        esc(r, gpu_name);
        out(r, ")");
    }
    if (cap > 0) {
        if (worst <= cap) out(r, ", %s GiB to spare.", fmt_gib(cap - worst, b3, sizeof b3));
        else out(r, ", %s GiB too much.", fmt_gib(worst - cap, b3, sizeof b3));
    } else {
        out(r, ".");
    }
    if (!m->fits && m->why[0]) {
        out(r, " ");
        esc(r, m->why);
    }
    out(r, "</p>\n");

    /* Geometry. */
    pp_legend_item leg[MEM_N + 2];
    int nl = 0;
    for (int k = 0; k < MEM_N; k++) leg[nl++] = (pp_legend_item){mem_names[k], mem_fill[k], 0};
    leg[nl++] = (pp_legend_item){"GPU capacity", C_VERMILLION, 1};
    if (n_oom) leg[nl++] = (pp_legend_item){"over capacity (OOM)", C_VERMILLION, 0};
    const double left = 70, right = SVG_W - 118, legend_y = 8;
    double slot = (right - left) / (double)n;
    /* Stage labels: index, and "N layers" under it when there is room. */
    char lbl[32];
    snprintf(lbl, sizeof lbl, "%lld", (long long)(n - 1));
    double idx_w = text_w(strlen(lbl), 12);
    int every = 1;
    static const int steps[] = {1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 200, 256, 512};
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        every = steps[s];
        if (slot * every >= idx_w + 8) break;
    }
    bool layer_line = slot >= text_w(strlen("88 layers"), 11) + 8;
    bool totals = slot >= text_w(4, 11) + 6; /* "71.2" above each bar */

    double plot_top_pad = totals ? 34 : 18; /* room for totals and OOM marks above the tallest bar */
    double top = legend_y + legend_h(leg, nl, SVG_W - left - 8) + plot_top_pad;
    double bottom = top + 270;
    double h = bottom + (layer_line ? 30 : 16) + 34;

    double ymax = cap;
    for (int64_t i = 0; i < n; i++) {
        double v[MEM_N], t = 0;
        mem_parts(&m->stages[i], v);
        for (int k = 0; k < MEM_N; k++) t += v[k];
        ymax = fmax(ymax, t);
    }
    pp_axis ay;
    axis_nice(0, ymax / GIB * 1.02, 6, &ay);

    svg_open(r, "memory-chart", h, "memory per pipeline stage against the GPU capacity");
    defs_hatch(r);
    legend_draw(r, leg, nl, left, legend_y, SVG_W - left - 8);
    axis_y_draw(r, &ay, left, right, bottom, top, "memory per GPU (GiB)");

    double bar_w = fmin(slot * 0.72, 70);
    for (int64_t i = 0; i < n; i++) {
        const pp_mem_stage *s = &m->stages[i];
        double v[MEM_N], t = 0;
        mem_parts(s, v);
        double cx = left + slot * ((double)i + 0.5);
        double x = cx - bar_w / 2;
        out(r, "<g class=\"bar\" data-stage=\"%lld\">", (long long)i);
        double acc = 0;
        for (int k = 0; k < MEM_N; k++) {
            double y0 = axis_map(&ay, (acc) / GIB, bottom, top);
            double y1 = axis_map(&ay, (acc + v[k]) / GIB, bottom, top);
            out(r, "<rect class=\"seg seg-%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" ",
                mem_names[k], x, y1, bar_w, fmax(0, y0 - y1));
            fill_attr(r, mem_fill[k]);
            out(r, " stroke=\"#fff\" stroke-width=\"%.1f\"><title>stage %lld %s: %s GiB</title></rect>",
                bar_w > 6 ? 0.8 : 0.0, (long long)i, mem_names[k], fmt_gib(v[k], b1, sizeof b1));
            acc += v[k];
        }
        t = acc;
        bool oom = cap > 0 && t > cap;
        double ytop = axis_map(&ay, t / GIB, bottom, top);
        if (totals)
            out(r, "<text class=\"val halo\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", cx, ytop - 4,
                fmt_gib(t, b1, sizeof b1));
        /* Over capacity: a strip under the bar, and the word when it fits. */
        if (oom) {
            out(r, "<rect class=\"oom-mark\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"4\" fill=\"%s\"/>", x,
                bottom + 1.5, bar_w, C_VERMILLION);
            if (totals && slot >= text_w(3, 11) + 4)
                out(r, "<text class=\"oom halo\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">OOM</text>",
                    cx, ytop - 17);
        }
        out(r, "</g>\n");
        if (i % every == 0 || (i == n - 1 && slot * (double)(i % every) >= idx_w + 8)) {
            out(r, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%lld</text>", cx,
                bottom + 16, (long long)i);
            if (layer_line)
                out(r, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">%lld "
                       "layer%s</text>",
                    cx, bottom + 30, (long long)s->layers, s->layers == 1 ? "" : "s");
            out(r, "\n");
        }
    }
    out(r, "<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", left, bottom, right, bottom);
    if (cap > 0) {
        double yc = axis_map(&ay, cap / GIB, bottom, top);
        out(r, "<line class=\"capacity\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
               "stroke-width=\"2\" stroke-dasharray=\"7 4\"/>\n",
            left, yc, right + 6, yc, C_VERMILLION);
        out(r, "<text class=\"halo\" x=\"%.1f\" y=\"%.1f\" font-weight=\"600\">capacity</text>", right + 10, yc - 3);
        out(r, "<text class=\"halo\" x=\"%.1f\" y=\"%.1f\">%s GiB</text>\n", right + 10, yc + 12,
            fmt_gib(cap, b1, sizeof b1));
    }
    out(r, "<text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">pipeline stage%s</text>\n",
        (left + right) / 2, h - 8, layer_line ? " (transformer layers on it)" : "");
    out(r, "</svg>\n");

    /* The figures. */
    out(r, "<details><summary>Figures per stage (GiB)</summary><div class=\"scroll\"><table>\n"
           "<tr><th>stage</th><th>layers</th><th>recomputed</th><th>in flight</th>");
    for (int k = 0; k < MEM_N; k++) out(r, "<th>%s</th>", mem_names[k]);
    out(r, "<th>peak</th><th>peak + reserved</th><th>fits</th></tr>\n");
    for (int64_t i = 0; i < n; i++) {
        const pp_mem_stage *s = &m->stages[i];
        double v[MEM_N];
        mem_parts(s, v);
        out(r, "<tr><td>%lld</td><td>%lld</td><td>%lld</td><td>%lld</td>", (long long)i, (long long)s->layers,
            (long long)s->recompute_layers, (long long)s->inflight);
        for (int k = 0; k < MEM_N; k++) out(r, "<td>%s</td>", fmt_gib(v[k], b1, sizeof b1));
        out(r, "<td>%s</td><td>%s</td><td>%s</td></tr>\n", fmt_gib(s->peak_bytes, b1, sizeof b1),
            fmt_gib(fin(s->peak_bytes) + v[MEM_RESERVED], b2, sizeof b2), s->fits ? "yes" : "no");
    }
    out(r, "</table></div>\n<p>peak: the allocator peak (weights + grads + optimizer + activations + transient), "
           "the figure torch.cuda.max_memory_allocated reports; reserved: what the GPU needs beyond it "
           "(CUDA context, NCCL and cuBLAS workspaces, allocator slack).</p></details>\n</section>\n");
    rep_check(r);
}

/* ------------------------------------------------------------------ candidates */

typedef struct {
    double x, y; /* GiB, samples/s */
    int i;
} pp_pt;

static int pt_cmp_front(const void *a, const void *b)
{
    const pp_pt *p = a, *q = b;
    /* x descending, then y descending: a sweep keeps the points whose y beats all to their right. */
    if (p->x != q->x) return p->x < q->x ? 1 : -1;
    if (p->y != q->y) return p->y < q->y ? 1 : -1;
    return p->i - q->i;
}

void pp_report_candidates(pp_report *r, const pp_report_point *pts, int n, int chosen)
{
    char b1[64], b2[64];
    out(r, "<section class=\"candidates\">\n<h2>Candidates: throughput against memory headroom</h2>\n");
    int valid = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(pts[i].headroom_bytes) && isfinite(pts[i].samples_per_s)) valid++;
    if (n <= 0 || !valid) {
        out(r, "<p>No candidate layout survived the search.</p>\n</section>\n");
        return;
    }
    if (chosen >= n || (chosen >= 0 && !(isfinite(pts[chosen].headroom_bytes) && isfinite(pts[chosen].samples_per_s))))
        chosen = -1;
    pp_pt *p = malloc(sizeof *p * (size_t)valid);
    bool *front = calloc((size_t)n, sizeof *front);
    if (!p || !front) {
        free(p);
        free(front);
        r->write_errno = r->write_errno ? r->write_errno : ENOMEM;
        out(r, "</section>\n");
        return;
    }
    int m = 0;
    double xmin = 0, xmax = 0, ymin = INFINITY, ymax = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (!(isfinite(pts[i].headroom_bytes) && isfinite(pts[i].samples_per_s))) continue;
        p[m] = (pp_pt){pts[i].headroom_bytes / GIB, pts[i].samples_per_s, i};
        xmin = fmin(xmin, p[m].x);
        xmax = fmax(xmax, p[m].x);
        ymin = fmin(ymin, p[m].y);
        ymax = fmax(ymax, p[m].y);
        m++;
    }
    /* Pareto front (maximise both): sweep from the roomiest, keep each point faster than all
     * roomier ones. Ties in both coordinates: the first one only. */
    qsort(p, (size_t)m, sizeof *p, pt_cmp_front);
    double best_y = -INFINITY;
    int n_front = 0;
    for (int k = 0; k < m; k++) {
        if (p[k].y > best_y) {
            front[p[k].i] = true;
            best_y = p[k].y;
            n_front++;
        }
    }
    int n_oom = 0;
    for (int k = 0; k < m; k++) n_oom += p[k].x < 0;

    out(r, "<p>%d layout%s; upper right is better. The staircase is the Pareto front: %d layout%s that no "
           "other beats on both throughput and headroom.",
        m, m == 1 ? "" : "s", n_front, n_front == 1 ? "" : "s");
    if (chosen >= 0) {
        out(r, " Chosen: <strong>");
        esc(r, pts[chosen].label ? pts[chosen].label : "?");
        out(r, "</strong>, %s samples/s with %s GiB to spare.", fmt_sig(pts[chosen].samples_per_s, b1, sizeof b1),
            fmt_gib(pts[chosen].headroom_bytes, b2, sizeof b2));
    }
    out(r, "</p>\n");

    pp_legend_item leg[4];
    int nl = 0;
    leg[nl++] = (pp_legend_item){"candidate layout", C_BLUE, 2};
    leg[nl++] = (pp_legend_item){"Pareto front", C_ORANGE, 4};
    if (chosen >= 0) leg[nl++] = (pp_legend_item){"chosen", C_VERMILLION, 3};
    if (n_oom) leg[nl++] = (pp_legend_item){"no headroom (x < 0): OOM", C_BLACK, 1};

    const double left = 78, right = SVG_W - 24, top = 40, bottom = top + 330, h = bottom + 52;
    pp_axis ax, ay;
    axis_nice(fmin(0, xmin), xmax + 0.02 * (xmax - xmin), 8, &ax);
    double ypad = 0.06 * (ymax - ymin);
    if (ypad <= 0) ypad = fabs(ymax) * 0.05 + 1e-9;
    axis_nice(fmax(0, ymin - ypad), ymax + ypad, 6, &ay);

    svg_open(r, "candidates-chart", h, "candidate layouts: throughput against memory headroom");
    legend_draw(r, leg, nl, left, 8, right - left);
    axis_y_draw(r, &ay, left, right, bottom, top, "throughput (samples/s)");
    axis_x_draw(r, &ax, left, right, top, bottom, "memory headroom on the fullest GPU (GiB)");
    out(r, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", left, top,
        right - left, bottom - top);
    if (ax.lo < 0) {
        double x0 = axis_map(&ax, 0, left, right);
        out(r, "<line class=\"zero\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
               "stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n",
            x0, top, x0, bottom, C_BLACK);
    }

    /* Points, one per 3x3 cell (r = 4: the rest would be drawn over each other). */
    const double cell = 3;
    int gw = (int)((right - left) / cell) + 2, gh = (int)((bottom - top) / cell) + 2;
    unsigned char *seen = calloc((size_t)gw * (size_t)gh, 1);
    out(r, "<g class=\"points\">\n");
    for (int k = 0; k < m; k++) {
        if (front[p[k].i] || p[k].i == chosen) continue;
        double x = axis_map(&ax, p[k].x, left, right), y = axis_map(&ay, p[k].y, bottom, top);
        if (seen) {
            int cx = (int)((x - left) / cell), cy = (int)((y - top) / cell);
            if (cx < 0) cx = 0;
            if (cy < 0) cy = 0;
            if (cx >= gw) cx = gw - 1;
            if (cy >= gh) cy = gh - 1;
            if (seen[(size_t)cy * (size_t)gw + (size_t)cx]) continue;
            seen[(size_t)cy * (size_t)gw + (size_t)cx] = 1;
        }
        out(r, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" fill-opacity=\"0.45\"><title>", x, y,
            C_BLUE);
        esc(r, pts[p[k].i].label);
        out(r, ": %s samples/s, %s GiB headroom</title></circle>\n", fmt_sig(p[k].y, b1, sizeof b1),
            fmt_gib(pts[p[k].i].headroom_bytes, b2, sizeof b2));
    }
    out(r, "</g>\n");
    free(seen);

    /* The front as the boundary of the region it dominates: from the fastest (left) point down and
     * right to the roomiest. p is sorted by x descending, so walk it backwards. */
    out(r, "<path class=\"pareto\" fill=\"none\" stroke=\"%s\" stroke-width=\"2.2\" d=\"", C_ORANGE);
    bool first = true;
    for (int k = m - 1; k >= 0; k--) {
        if (!front[p[k].i]) continue;
        double x = axis_map(&ax, p[k].x, left, right), y = axis_map(&ay, p[k].y, bottom, top);
        if (first) out(r, "M%.1f %.1f", x, y);
        else out(r, "V%.1fH%.1f", y, x);
        first = false;
    }
    out(r, "\"/>\n<g class=\"front\">\n");
    for (int k = 0; k < m; k++) {
        if (!front[p[k].i] || p[k].i == chosen) continue;
        double x = axis_map(&ax, p[k].x, left, right), y = axis_map(&ay, p[k].y, bottom, top);
        out(r, "<circle class=\"pt pareto-pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\" stroke=\"%s\" "
               "stroke-width=\"1.5\"><title>",
            x, y, C_BLUE, C_ORANGE);
        esc(r, pts[p[k].i].label);
        out(r, " (Pareto): %s samples/s, %s GiB headroom</title></circle>\n", fmt_sig(p[k].y, b1, sizeof b1),
            fmt_gib(pts[p[k].i].headroom_bytes, b2, sizeof b2));
    }
    out(r, "</g>\n");

    if (chosen >= 0) {
        const pp_report_point *c = &pts[chosen];
        double x = axis_map(&ax, c->headroom_bytes / GIB, left, right);
        double y = axis_map(&ay, c->samples_per_s, bottom, top);
        out(r, "<g class=\"chosen\"><circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"/>"
               "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"9\" fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\"><title>",
            x, y, C_VERMILLION, x, y, C_VERMILLION);
        esc(r, c->label);
        out(r, " (chosen)</title></circle>");
        /* Label: two lines, at the candidate place that covers the fewest points and front
         * segments and stays inside the plot. */
        size_t nch = utf8_chars(c->label ? c->label : "?") + 8;
        if (nch > 60) nch = 60;
        char line2[96];
        snprintf(line2, sizeof line2, "%s samples/s, %s GiB free", fmt_sig(c->samples_per_s, b1, sizeof b1),
                 fmt_gib(c->headroom_bytes, b2, sizeof b2));
        double tw = fmax(1.1 * text_w(nch, 12), text_w(strlen(line2), 12)), th = 34; /* bold: wider */
        /* Candidate places: around the point, then a grid over the plot (with a leader line).
         * Cost: points under the label (front points more), the front's staircase through it
         * (a line through text reads worst), and the distance from the point. */
        double *qx = malloc(sizeof *qx * (size_t)(m ? m : 1)), *qy = malloc(sizeof *qy * (size_t)(m ? m : 1));
        double best_score = INFINITY, tx = left + 4, ty = top + 16;
        if (qx && qy) {
            for (int k = 0; k < m; k++) {
                qx[k] = axis_map(&ax, p[k].x, left, right);
                qy[k] = axis_map(&ay, p[k].y, bottom, top);
            }
            static const double dist[] = {16, 40};
            static const int dir[4][2] = {{1, -1}, {1, 1}, {-1, -1}, {-1, 1}};
            int n_near = 8;
            int gx = (int)((right - left) / 24), gy = (int)((bottom - top) / 16);
            for (int cidx = 0; cidx < n_near + (gx + 1) * (gy + 1); cidx++) {
                double bx0, by0;
                if (cidx < n_near) {
                    int d = cidx / 4, q = cidx % 4;
                    bx0 = dir[q][0] > 0 ? x + dist[d] : x - dist[d] - tw;
                    by0 = dir[q][1] < 0 ? y - dist[d] - th : y + dist[d];
                } else {
                    int g = cidx - n_near;
                    bx0 = left + 4 + (g % (gx + 1)) * 24.0;
                    by0 = top + 4 + (g / (gx + 1)) * 16.0;
                }
                double bx1 = bx0 + tw, by1 = by0 + th;
                if (bx0 < left + 2 || bx1 > right - 2 || by0 < top + 2 || by1 > bottom - 2) continue;
                if (x >= bx0 - 12 && x <= bx1 + 12 && y >= by0 - 12 && y <= by1 + 12) continue; /* hides the ring */
                double ddx = x < bx0 ? bx0 - x : x > bx1 ? x - bx1 : 0;
                double ddy = y < by0 ? by0 - y : y > by1 ? y - by1 : 0;
                double score = 0.015 * sqrt(ddx * ddx + ddy * ddy) + (cidx < n_near ? 0.05 * cidx : 0.2);
                for (int k = 0; k < m && score < best_score; k++)
                    if (qx[k] >= bx0 - 4 && qx[k] <= bx1 + 4 && qy[k] >= by0 - 4 && qy[k] <= by1 + 4)
                        score += front[p[k].i] ? 3 : 1;
                /* Front staircase segments (vertical then horizontal, see the path above). */
                double fx = NAN, fy = NAN;
                for (int k = m - 1; k >= 0 && score < best_score; k--) {
                    if (!front[p[k].i]) continue;
                    if (isfinite(fx)) {
                        if (fx >= bx0 - 2 && fx <= bx1 + 2 && fmax(fy, qy[k]) >= by0 && fmin(fy, qy[k]) <= by1) score += 25;
                        if (qy[k] >= by0 - 2 && qy[k] <= by1 + 2 && fmax(fx, qx[k]) >= bx0 && fmin(fx, qx[k]) <= bx1)
                            score += 25;
                    }
                    fx = qx[k];
                    fy = qy[k];
                }
                if (score < best_score) {
                    best_score = score;
                    tx = bx0;
                    ty = by0 + 13;
                }
            }
        }
        free(qx);
        free(qy);
        /* Leader from the ring to the nearest corner of the label. */
        double lx = tx + tw / 2 < x ? tx + tw : tx, ly = ty - 13 + th / 2 < y ? ty - 13 + th : ty - 13;
        double dx = lx - x, dy = ly - y, dl = sqrt(dx * dx + dy * dy);
        if (dl > 12)
            out(r, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.2\"/>",
                x + dx / dl * 9, y + dy / dl * 9, lx, ly, C_VERMILLION);
        out(r, "<text class=\"halo\" x=\"%.1f\" y=\"%.1f\" font-weight=\"600\">chosen: ", tx, ty);
        esc_n(r, c->label ? c->label : "?", 52);
        out(r, "</text><text class=\"halo\" x=\"%.1f\" y=\"%.1f\">%s</text></g>\n", tx, ty + 15, line2);
    }
    out(r, "</svg>\n</section>\n");
    free(p);
    free(front);
    rep_check(r);
}

/* ------------------------------------------------------------------ funnel */

void pp_report_funnel(pp_report *r, const char *const *names, const char *const *notes, const int64_t *counts,
                      int n)
{
    char b1[48], b2[48];
    out(r, "<section class=\"funnel\">\n<h2>Pruning funnel</h2>\n");
    if (n <= 0) {
        out(r, "<p>No search steps.</p>\n</section>\n");
        return;
    }
    int64_t cmax = 0, cmin_pos = INT64_MAX;
    size_t name_max = 0;
    for (int i = 0; i < n; i++) {
        int64_t c = counts[i] > 0 ? counts[i] : 0;
        if (c > cmax) cmax = c;
        if (c > 0 && c < cmin_pos) cmin_pos = c;
        size_t nc = utf8_chars(names[i]);
        if (nc > name_max) name_max = nc;
    }
    bool logscale = cmax > 0 && cmin_pos != INT64_MAX && (double)cmax / (double)cmin_pos > 100;
    out(r, "<p>Layouts left after each step%s.</p>\n",
        logscale ? "; bar length on a logarithmic scale (the counts span more than two decades)" : "");
    if (name_max > 40) name_max = 40;
    const double left = 12 + fmax(text_w(name_max, 13), 80), right = SVG_W - 170, row = 32, top = 8;
    double h = top + row * n + 8;
    svg_open(r, "funnel-chart", h, "pruning funnel");
    for (int i = 0; i < n; i++) {
        int64_t c = counts[i] > 0 ? counts[i] : 0;
        double frac = 0;
        if (cmax > 0) frac = logscale ? log10((double)c + 1) / log10((double)cmax + 1) : (double)c / (double)cmax;
        double w = fmax(c > 0 ? 2 : 0, frac * (right - left));
        double y = top + row * i;
        out(r, "<g class=\"step\"><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"13\">", left - 10,
            y + 18);
        esc_n(r, names[i], 40);
        out(r, "</text><rect class=\"funnel-bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"22\" fill=\"%s\"><title>",
            left, y + 3, w, i == n - 1 ? C_ORANGE : C_BLUE);
        esc(r, names[i]);
        out(r, ": %s", fmt_count(c, b1, sizeof b1));
        if (notes && notes[i]) {
            out(r, " (");
            esc(r, notes[i]);
            out(r, ")");
        }
        out(r, "</title></rect>");
        out(r, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\">%s", left + w + 8, y + 18, fmt_count(c, b1, sizeof b1));
        if (i > 0 && counts[0] > 0) {
            double pct = 100.0 * (double)c / (double)counts[0];
            out(r, " (%s%%)", fmt_sig(pct, b2, sizeof b2));
        }
        out(r, "</text></g>\n");
    }
    out(r, "</svg>\n");
    /* What each step removed, and why. */
    bool any_note = false;
    for (int i = 1; i < n; i++) any_note |= notes && notes[i] && notes[i][0];
    if (any_note) {
        out(r, "<div class=\"scroll\"><table>\n<tr><th>step</th><th>removed</th><th style=\"text-align:left\">why</th></tr>\n");
        for (int i = 1; i < n; i++) {
            out(r, "<tr><td>");
            esc(r, names[i]);
            out(r, "</td><td>%s</td><td style=\"text-align:left\">", fmt_count(counts[i - 1] - counts[i], b1, sizeof b1));
            esc(r, notes[i] ? notes[i] : "");
            out(r, "</td></tr>\n");
        }
        out(r, "</table></div>\n");
    }
    out(r, "</section>\n");
    rep_check(r);
}

/* ------------------------------------------------------------------ step-time breakdown */

enum { ST_COMPUTE, ST_RECOMPUTE, ST_TP, ST_PP, ST_BUBBLE, ST_DP, ST_OPT, ST_OTHER, ST_N };
static const char *const st_names[ST_N] = {"compute", "recompute", "TP/CP/EP comm", "PP send/recv",
                                           "PP bubble", "DP comm + ZeRO", "optimizer", "other"};
static const char *const st_class[ST_N] = {"compute", "recompute", "tp", "pp", "bubble", "dp", "optimizer",
                                           "other"};
/* Black is kept for the step-time mark. */
static const char *const st_fill[ST_N] = {C_BLUE, C_SKY, C_ORANGE, C_PURPLE, C_VERMILLION, C_GREEN, C_YELLOW,
                                          NULL};

/* The parts of t; ST_OTHER is the step time the parts do not account for (0 when they sum to it
 * or more: overlap). */
static void step_parts(const pp_time_result *t, double v[ST_N])
{
    v[ST_COMPUTE] = fin(t->compute_s);
    v[ST_RECOMPUTE] = fin(t->recompute_s);
    v[ST_TP] = fin(t->tp_comm_s) + fin(t->cp_comm_s) + fin(t->ep_comm_s);
    v[ST_PP] = fin(t->pp_comm_s);
    v[ST_BUBBLE] = fin(t->bubble_s);
    v[ST_DP] = fin(t->dp_comm_s) + fin(t->zero_gather_s);
    v[ST_OPT] = fin(t->optimizer_s);
    double sum = 0;
    for (int k = 0; k < ST_OTHER; k++) {
        v[k] = fmax(0, v[k]);
        sum += v[k];
    }
    double step = fmax(0, fin(t->step_time_s));
    v[ST_OTHER] = step > sum * (1 + 1e-6) ? step - sum : 0;
}

void pp_report_step_breakdown(pp_report *r, const char *const *labels, const pp_time_result *t, int n)
{
    char b1[64], b2[64], b3[64], b4[64];
    out(r, "<section class=\"steps\">\n<h2>%s</h2>\n", n == 1 ? "Step time" : "Step time of the best layouts");
    if (n <= 0) {
        out(r, "<p>No layout.</p>\n</section>\n");
        return;
    }
    double vmax = 0;
    bool any_other = false, any_overlap = false;
    size_t lab_max = 0;
    for (int i = 0; i < n; i++) {
        double v[ST_N], sum = 0;
        step_parts(&t[i], v);
        for (int k = 0; k < ST_N; k++) sum += v[k];
        vmax = fmax(vmax, fmax(sum, fin(t[i].step_time_s)));
        if (v[ST_OTHER] > 0) any_other = true;
        if (sum - v[ST_OTHER] > fin(t[i].step_time_s) * (1 + 1e-6)) any_overlap = true;
        size_t nc = utf8_chars(labels[i]);
        if (nc > lab_max) lab_max = nc;
    }
    /* Unit: ms below one second. */
    bool ms = vmax < 1;
    double scale = ms ? 1e3 : 1;
    out(r, "<p>One optimizer step of the global batch, split by where the time goes on the critical path.");
    if (any_overlap) out(r, " A black tick marks the step time where parts overlap.");
    out(r, "</p>\n");

    pp_legend_item leg[ST_N + 1];
    int nl = 0;
    for (int k = 0; k < ST_N; k++)
        if (k != ST_OTHER || any_other) leg[nl++] = (pp_legend_item){st_names[k], st_fill[k], 0};
    if (lab_max > 52) lab_max = 52;
    const double left = 14 + fmax(text_w(lab_max, 12), 60), right = SVG_W - 86, row = 30;
    double top = 8 + legend_h(leg, nl, SVG_W - 16) + 10, bottom = top + row * n, h = bottom + 52;
    pp_axis ax;
    axis_nice(0, vmax * scale, 6, &ax);

    svg_open(r, "steps-chart", h, "step-time breakdown of the best layouts");
    defs_hatch(r);
    legend_draw(r, leg, nl, 8, 8, SVG_W - 16);
    axis_x_draw(r, &ax, left, right, top, bottom, ms ? "time per optimizer step (ms)" : "time per optimizer step (s)");
    for (int i = 0; i < n; i++) {
        double v[ST_N];
        step_parts(&t[i], v);
        double y = top + row * i + 5, bh = row - 10;
        out(r, "<g class=\"step-bar\"><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", left - 8, y + bh / 2 + 4);
        esc_n(r, labels[i], 52);
        out(r, "<title>");
        esc(r, labels[i]);
        out(r, "</title></text>");
        double acc = 0;
        for (int k = 0; k < ST_N; k++) {
            if (k == ST_OTHER && !any_other) continue;
            double x0 = axis_map(&ax, acc * scale, left, right), x1 = axis_map(&ax, (acc + v[k]) * scale, left, right);
            out(r, "<rect class=\"seg seg-%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" ", st_class[k], x0,
                y, fmax(0, x1 - x0), bh);
            fill_attr(r, st_fill[k]);
            out(r, " stroke=\"#fff\" stroke-width=\"0.8\"><title>%s: %s %s</title></rect>", st_names[k],
                fmt_sig(v[k] * scale, b1, sizeof b1), ms ? "ms" : "s");
            acc += v[k];
        }
        double step = fin(t[i].step_time_s);
        double xs = axis_map(&ax, step * scale, left, right);
        if (acc > step * (1 + 1e-6))
            out(r, "<line class=\"step-mark\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"2.5\"/>",
                xs, y - 3, xs, y + bh + 3, C_BLACK);
        double xend = axis_map(&ax, fmax(acc, step) * scale, left, right);
        out(r, "<text class=\"val\" x=\"%.1f\" y=\"%.1f\">%s %s</text></g>\n", xend + 6, y + bh / 2 + 4,
            fmt_sig(step * scale, b1, sizeof b1), ms ? "ms" : "s");
    }
    out(r, "<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", left, top, left, bottom);
    out(r, "</svg>\n");

    out(r, "<div class=\"scroll\"><table>\n<tr><th>layout</th><th>step (s)</th><th>samples/s</th><th>tokens/s</th>"
           "<th>TFLOP/s per GPU</th><th>MFU</th></tr>\n");
    for (int i = 0; i < n; i++) {
        out(r, "<tr><td>");
        esc(r, labels[i]);
        out(r, "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%.1f%%</td></tr>\n",
            fmt_sig(t[i].step_time_s, b1, sizeof b1), fmt_sig(t[i].samples_per_s, b2, sizeof b2),
            fmt_count((int64_t)llround(fmin(fmax(fin(t[i].tokens_per_s), 0), 9e18)), b3, sizeof b3),
            fmt_sig(t[i].model_tflops_per_gpu, b4, sizeof b4), 100 * fin(t[i].mfu));
    }
    out(r, "</table></div>\n</section>\n");
    rep_check(r);
}

/* ------------------------------------------------------------------ labels */

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
       fmt_sig(np_ / div, b1, sizeof b1), unit, (long long)w->model.layers, (long long)w->model.hidden,
       (long long)w->model.seq);
    KV("GPU", "%s%s%s%s, %s GiB", w->gpu.name, w->gpu.full_name[0] ? " (" : "", w->gpu.full_name,
       w->gpu.full_name[0] ? ")" : "", fmt_gib(w->gpu.memory_bytes, b2, sizeof b2));
    int64_t gpn = w->gpus_per_node > 0 ? w->gpus_per_node : 1;
    KV("cluster", "%lld GPUs, %lld node%s of %lld", (long long)w->gpus, (long long)((w->gpus + gpn - 1) / gpn),
       (w->gpus + gpn - 1) / gpn == 1 ? "" : "s", (long long)gpn);
    KV("global batch", "%lld sequences of %lld tokens", (long long)w->gbs, (long long)w->model.seq);
    KV("framework", "%s, %s attention",
       (int)w->framework >= 0 && w->framework < PP_FW_COUNT ? pp_framework_names[w->framework] : "?",
       (int)w->attention >= 0 && w->attention < PP_ATTN_COUNT ? pp_attention_names[w->attention] : "?");
    if (plan && p->search) {
        KV("search", "%s layouts, %s fit, %.2f s", fmt_count(p->search->evaluated, b1, sizeof b1),
           fmt_count(p->search->fitting, b2, sizeof b2), fin(p->search->search_time_s));
    }
    char lab[160] = "none";
    if (best) pp_layout_label(best, lab, sizeof lab);
    KV(plan ? "best layout" : "layout", "%s", lab);
    if (p->mem) {
        double worst = 0;
        for (int64_t i = 0; i < p->mem->n_stages && i < PP_MAX_STAGES; i++)
            worst = fmax(worst, fin(p->mem->stages[i].peak_bytes) + fin(p->mem->stages[i].reserved_bytes));
        KV("memory", "%s: %s of %s GiB on the fullest GPU", p->mem->fits ? "fits" : "does not fit",
           fmt_gib(worst, b1, sizeof b1), fmt_gib(p->mem->capacity_bytes, b2, sizeof b2));
    } else if (plan && p->n_cand > 0) {
        KV("memory", "%s: %s GiB to spare on the fullest GPU", p->cand[0].fits ? "fits" : "does not fit",
           fmt_gib(p->cand[0].headroom_bytes, b1, sizeof b1));
    }
    if (best_t) {
        KV("step time", "%s s", fmt_sig(best_t->step_time_s, b1, sizeof b1));
        KV("throughput", "%s samples/s, %s tokens/s", fmt_sig(best_t->samples_per_s, b1, sizeof b1),
           fmt_count((int64_t)llround(fmin(fmax(fin(best_t->tokens_per_s), 0), 9e18)), b2, sizeof b2));
        KV("MFU", "%.1f%% (%s model TFLOP/s per GPU)", 100 * fin(best_t->mfu),
           fmt_sig(best_t->model_tflops_per_gpu, b1, sizeof b1));
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
    if (fmt < 0) fmt = w->framework == PP_FW_MEGATRON ? PP_LAUNCH_MEGATRON
                       : w->framework == PP_FW_DEEPSPEED ? PP_LAUNCH_DEEPSPEED
                                                         : -1;
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
