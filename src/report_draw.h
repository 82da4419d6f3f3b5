/* The drawing kit of the HTML report (report.c, report_charts.c): writing to the page with the
 * first write error kept, HTML escaping of untrusted text (model names come from user YAML),
 * number formats, chart axes on a 1-2-5 grid, legends, the hatch pattern and the <svg> element.
 * Internal to src/: the commands use report.h. See report_draw.c for the design choices.
 */
#ifndef PP_REPORT_DRAW_H
#define PP_REPORT_DRAW_H

#include <stddef.h>
#include <stdint.h>

#include "report.h"

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

/* Write to the page; the first failed write is kept in r->write_errno. */
void pp_html_out(pp_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Record a stream error that a direct fputs/fwrite left behind. */
void pp_html_check(pp_report *r);
/* Write s escaped for HTML text and attribute values, at most max_chars code points (0: all;
 * a cut string ends with an ellipsis). */
void pp_html_esc_n(pp_report *r, const char *s, size_t max_chars);
void pp_html_esc(pp_report *r, const char *s);
/* Code points in s (invalid bytes count as one, they become U+FFFD). */
size_t pp_utf8_chars(const char *s);

/* A coordinate or size: finite, else 0. */
double pp_fin(double v);
/* Estimated width in SVG units of n characters at font size fs. */
double pp_text_w(size_t n, double fs);
/* "1,234,567" */
const char *pp_fmt_count(int64_t v, char *buf, size_t n);
/* A number with about 3 significant digits, never NaN/inf. */
const char *pp_fmt_sig(double v, char *buf, size_t n);
/* Bytes in GiB, one decimal. */
const char *pp_fmt_gib(double bytes, char *buf, size_t n);

typedef struct {
    double lo, hi, step;
    int decimals;
} pp_axis;

/* Round [lo, hi] out to a 1-2-5 step giving about target intervals. */
void pp_axis_nice(double lo, double hi, int target, pp_axis *a);
/* v on the axis mapped linearly onto [p0, p1]. */
double pp_axis_map(const pp_axis *a, double v, double p0, double p1);
/* Horizontal grid lines and tick labels on the left of [x0, x1] for a vertical axis. */
void pp_axis_y_draw(pp_report *r, const pp_axis *a, double x0, double x1, double y_bottom, double y_top,
                    const char *title);
/* Vertical grid lines and tick labels below [y_top, y_bottom] for a horizontal axis, thinned so
 * that labels keep a gap of one character. */
void pp_axis_x_draw(pp_report *r, const pp_axis *a, double x0, double x1, double y_top, double y_bottom,
                    const char *title);

typedef struct {
    const char *label;
    const char *fill;  /* colour, or NULL for the hatch pattern */
    int shape;         /* 0 square, 1 line (dashed), 2 circle, 3 ring, 4 step line */
} pp_legend_item;

/* A grey hatch for "reserved"/"other", id unique per chart. */
void pp_svg_defs_hatch(pp_report *r);
/* fill="colour", or the chart's hatch when fill is NULL. */
void pp_svg_fill_attr(pp_report *r, const char *fill);
/* Height pp_legend_draw will use for these items within width. */
double pp_legend_h(const pp_legend_item *it, int n, double width);
/* Legend rows from (x, y) within width; returns the height used. */
double pp_legend_draw(pp_report *r, const pp_legend_item *it, int n, double x, double y, double width);
/* Open a chart: <svg class="chart CLS"> SVG_W wide and h high, labelled aria for screen readers. */
void pp_svg_open(pp_report *r, const char *cls, double h, const char *aria);

#endif
