/* The drawing kit of the HTML/SVG report (report.h): output, escaping, number formats, axes,
 * legends (report_draw.h). The sections and charts that use it are in report.c and report_charts.c.
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
#include "report_draw.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ output */

void pp_html_check(pp_report *r)
{
    if (!r->write_errno && r->f && ferror(r->f)) r->write_errno = errno ? errno : EIO;
}

void pp_html_out(pp_report *r, const char *fmt, ...)
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
size_t pp_utf8_chars(const char *s)
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
void pp_html_esc_n(pp_report *r, const char *s, size_t max_chars)
{
    if (!s || !r->f) return;
    size_t total = pp_utf8_chars(s);
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

void pp_html_esc(pp_report *r, const char *s) { pp_html_esc_n(r, s, 0); }

/* A coordinate or size: finite, one decimal. */
double pp_fin(double v) { return isfinite(v) ? v : 0; }

/* Estimated width in SVG units of n characters at font size fs. */
double pp_text_w(size_t n, double fs) { return 0.6 * fs * (double)n; }

/* "1,234,567" */
const char *pp_fmt_count(int64_t v, char *buf, size_t n)
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
const char *pp_fmt_sig(double v, char *buf, size_t n)
{
    if (!isfinite(v)) snprintf(buf, n, "n/a");
    else if (fabs(v) >= 100 || v == 0) snprintf(buf, n, "%.0f", v);
    else if (fabs(v) >= 10) snprintf(buf, n, "%.1f", v);
    else if (fabs(v) >= 1) snprintf(buf, n, "%.2f", v);
    else snprintf(buf, n, "%.3g", v);
    return buf;
}

const char *pp_fmt_gib(double bytes, char *buf, size_t n)
{
    if (!isfinite(bytes)) snprintf(buf, n, "n/a");
    else snprintf(buf, n, "%.1f", bytes / GIB);
    return buf;
}

/* ------------------------------------------------------------------ axes */

/* Round [lo, hi] out to a 1-2-5 step giving about target intervals. */
void pp_axis_nice(double lo, double hi, int target, pp_axis *a)
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

double pp_axis_map(const pp_axis *a, double v, double p0, double p1)
{
    double t = (pp_fin(v) - a->lo) / (a->hi - a->lo);
    return p0 + t * (p1 - p0);
}

/* Horizontal grid lines and tick labels on the left of [x0, x1] for a vertical axis. */
void pp_axis_y_draw(pp_report *r, const pp_axis *a, double x0, double x1, double y_bottom,
                    double y_top, const char *title)
{
    int nt = (int)floor((a->hi - a->lo) / a->step + 0.5);
    pp_html_out(r, "<g class=\"axis axis-y\">\n");
    for (int i = 0; i <= nt; i++) {
        double v = a->lo + i * a->step;
        double y = pp_axis_map(a, v, y_bottom, y_top);
        if (fabs(v) < a->step * 1e-9) v = 0;
        pp_html_out(r, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x0, y, x1, y);
        pp_html_out(r, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n", x0 - 6,
                    y + 4, a->decimals, v);
    }
    double yc = (y_bottom + y_top) / 2;
    pp_html_out(r, "<text class=\"axis-title\" transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\">",
                yc);
    pp_html_esc(r, title);
    pp_html_out(r, "</text>\n</g>\n");
}

/* Vertical grid lines and tick labels below [y_top, y_bottom] for a horizontal axis, thinned so
 * that labels keep a gap of one character. */
void pp_axis_x_draw(pp_report *r, const pp_axis *a, double x0, double x1, double y_top,
                    double y_bottom, const char *title)
{
    int nt = (int)floor((a->hi - a->lo) / a->step + 0.5);
    double label_w = 0;
    for (int i = 0; i <= nt; i++) {
        char b[48];
        snprintf(b, sizeof b, "%.*f", a->decimals, a->lo + i * a->step);
        label_w = fmax(label_w, pp_text_w(strlen(b), 12));
    }
    double slot = nt > 0 ? (x1 - x0) / nt : (x1 - x0);
    int every = 1;
    while (every < nt && slot * every < label_w + 8) every++;
    pp_html_out(r, "<g class=\"axis axis-x\">\n");
    for (int i = 0; i <= nt; i++) {
        double v = a->lo + i * a->step;
        double x = pp_axis_map(a, v, x0, x1);
        if (fabs(v) < a->step * 1e-9) v = 0;
        pp_html_out(r, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x, y_top, x, y_bottom);
        if (i % every == 0)
            pp_html_out(r, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.*f</text>", x,
                        y_bottom + 16, a->decimals, v);
        pp_html_out(r, "\n");
    }
    pp_html_out(r, "<text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (x0 + x1) / 2,
                y_bottom + 38);
    pp_html_esc(r, title);
    pp_html_out(r, "</text>\n</g>\n");
}

/* ------------------------------------------------------------------ legend and defs */


/* A grey hatch for "reserved"/"other", id unique per chart. */
void pp_svg_defs_hatch(pp_report *r)
{
    pp_html_out(r,
                "<defs><pattern id=\"pp-hatch-%d\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
                "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#E4E4E4\"/>"
                "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"" C_GREY "\" stroke-width=\"2.5\"/></pattern></defs>\n",
                r->n_svg);
}

void pp_svg_fill_attr(pp_report *r, const char *fill)
{
    if (fill) pp_html_out(r, "fill=\"%s\"", fill);
    else pp_html_out(r, "fill=\"url(#pp-hatch-%d)\"", r->n_svg);
}

/* Width of one legend entry: swatch, gap, label, gap. */
static double legend_item_w(const pp_legend_item *it) { return 18 + 6 + pp_text_w(pp_utf8_chars(it->label), 12) + 18; }

/* Height legend_draw will use for these items within width. */
double pp_legend_h(const pp_legend_item *it, int n, double width)
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
double pp_legend_draw(pp_report *r, const pp_legend_item *it, int n, double x, double y, double width)
{
    double cx = x, cy = y;
    pp_html_out(r, "<g class=\"legend\">\n");
    for (int i = 0; i < n; i++) {
        double w = legend_item_w(&it[i]);
        if (cx > x && cx + w > x + width) {
            cx = x;
            cy += 20;
        }
        switch (it[i].shape) {
        case 1:
            pp_html_out(r, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\" "
                           "stroke-dasharray=\"6 3\"/>",
                        cx, cy + 6, cx + 18, cy + 6, it[i].fill);
            break;
        case 4:
            pp_html_out(r, "<path d=\"M%.1f %.1fh6v6h6v6\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>", cx + 2,
                        cy, it[i].fill);
            break;
        case 2:
            pp_html_out(r, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\" fill-opacity=\"0.55\"/>", cx + 9,
                        cy + 6, it[i].fill);
            break;
        case 3:
            pp_html_out(r, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\"/>",
                        cx + 9, cy + 6, it[i].fill);
            break;
        default:
            pp_html_out(r, "<rect x=\"%.1f\" y=\"%.1f\" width=\"18\" height=\"12\" ", cx, cy);
            pp_svg_fill_attr(r, it[i].fill);
            pp_html_out(r, " stroke=\"#fff\"/>");
        }
        pp_html_out(r, "<text x=\"%.1f\" y=\"%.1f\">", cx + 24, cy + 10.5);
        pp_html_esc(r, it[i].label);
        pp_html_out(r, "</text>\n");
        cx += w;
    }
    pp_html_out(r, "</g>\n");
    return cy - y + 20;
}

void pp_svg_open(pp_report *r, const char *cls, double h, const char *aria)
{
    r->n_svg++;
    pp_html_out(r, "<svg class=\"chart %s\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"", cls, SVG_W, h);
    pp_html_esc(r, aria);
    pp_html_out(r, "\">\n");
}

