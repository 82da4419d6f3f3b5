/* The charts of the HTML report (report.h): memory per pipeline stage against the GPU's capacity,
 * candidates as throughput against memory headroom with their Pareto front, the pruning funnel and
 * the step-time breakdown of the best layouts. Each draws with report_draw.h's kit and adds a
 * table of its figures, so that what a chart shows can also be read as numbers.
 */
#include "report_draw.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ memory per stage */

enum { MEM_WEIGHTS, MEM_GRADS, MEM_OPT, MEM_ACT, MEM_TRANSIENT, MEM_RESERVED, MEM_N };
static const char *const mem_names[MEM_N] = {"weights", "grads", "optimizer", "activations",
                                              "transient", "reserved"};
static const char *const mem_fill[MEM_N] = {C_BLUE, C_SKY, C_GREEN, C_ORANGE, C_YELLOW, NULL};

static void mem_parts(const pp_mem_stage *s, double v[MEM_N])
{
    v[MEM_WEIGHTS] = fmax(0, pp_fin(s->weights_bytes));
    v[MEM_GRADS] = fmax(0, pp_fin(s->grads_bytes));
    v[MEM_OPT] = fmax(0, pp_fin(s->optimizer_bytes));
    v[MEM_ACT] = fmax(0, pp_fin(s->activations_bytes));
    v[MEM_TRANSIENT] = fmax(0, pp_fin(s->transient_bytes));
    v[MEM_RESERVED] = fmax(0, pp_fin(s->reserved_bytes));
}

void pp_report_memory_stages(pp_report *r, const pp_mem_result *m, const char *gpu_name)
{
    char b1[64], b2[64], b3[64];
    int64_t n = m->n_stages;
    if (n < 0) n = 0;
    if (n > PP_MAX_STAGES) n = PP_MAX_STAGES;
    double cap = fmax(0, pp_fin(m->capacity_bytes));
    pp_html_out(r, "<section class=\"memory\">\n<h2>Memory per pipeline stage</h2>\n");
    if (n == 0) {
        pp_html_out(r, "<p>No stages.</p>\n</section>\n");
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
    pp_html_out(r, "<p><span class=\"%s\">%s</span>: ", m->fits ? "verdict-ok" : "verdict-bad",
                m->fits ? "Fits" : "Does not fit");
    if (n_oom) pp_html_out(r, "%d of %lld stage%s over capacity; ", n_oom, (long long)n, n == 1 ? "" : "s");
    pp_html_out(r, "the fullest GPU is on stage %lld and needs %s GiB of %s GiB", (long long)worst_i,
                pp_fmt_gib(worst, b1, sizeof b1), pp_fmt_gib(cap, b2, sizeof b2));
    if (gpu_name && *gpu_name) {
        pp_html_out(r, " (");
        pp_html_esc(r, gpu_name);
        pp_html_out(r, ")");
    }
    if (cap > 0) {
        if (worst <= cap) pp_html_out(r, ", %s GiB to spare.", pp_fmt_gib(cap - worst, b3, sizeof b3));
        else pp_html_out(r, ", %s GiB too much.", pp_fmt_gib(worst - cap, b3, sizeof b3));
    } else {
        pp_html_out(r, ".");
    }
    if (!m->fits && m->why[0]) {
        pp_html_out(r, " ");
        pp_html_esc(r, m->why);
    }
    pp_html_out(r, "</p>\n");

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
    double idx_w = pp_text_w(strlen(lbl), 12);
    int every = 1;
    static const int steps[] = {1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 200, 256, 512};
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        every = steps[s];
        if (slot * every >= idx_w + 8) break;
    }
    bool layer_line = slot >= pp_text_w(strlen("88 layers"), 11) + 8;
    bool totals = slot >= pp_text_w(4, 11) + 6; /* "71.2" above each bar */

    double plot_top_pad = totals ? 34 : 18; /* room for totals and OOM marks above the tallest bar */
    double top = legend_y + pp_legend_h(leg, nl, SVG_W - left - 8) + plot_top_pad;
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
    pp_axis_nice(0, ymax / GIB * 1.02, 6, &ay);

    pp_svg_open(r, "memory-chart", h, "memory per pipeline stage against the GPU capacity");
    pp_svg_defs_hatch(r);
    pp_legend_draw(r, leg, nl, left, legend_y, SVG_W - left - 8);
    pp_axis_y_draw(r, &ay, left, right, bottom, top, "memory per GPU (GiB)");

    double bar_w = fmin(slot * 0.72, 70);
    for (int64_t i = 0; i < n; i++) {
        const pp_mem_stage *s = &m->stages[i];
        double v[MEM_N], t = 0;
        mem_parts(s, v);
        double cx = left + slot * ((double)i + 0.5);
        double x = cx - bar_w / 2;
        pp_html_out(r, "<g class=\"bar\" data-stage=\"%lld\">", (long long)i);
        double acc = 0;
        for (int k = 0; k < MEM_N; k++) {
            double y0 = pp_axis_map(&ay, (acc) / GIB, bottom, top);
            double y1 = pp_axis_map(&ay, (acc + v[k]) / GIB, bottom, top);
            pp_html_out(r, "<rect class=\"seg seg-%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" ",
                        mem_names[k], x, y1, bar_w, fmax(0, y0 - y1));
            pp_svg_fill_attr(r, mem_fill[k]);
            pp_html_out(r, " stroke=\"#fff\" stroke-width=\"%.1f\"><title>stage %lld %s: %s GiB</title></rect>",
                        bar_w > 6 ? 0.8 : 0.0, (long long)i, mem_names[k], pp_fmt_gib(v[k], b1, sizeof b1));
            acc += v[k];
        }
        t = acc;
        bool oom = cap > 0 && t > cap;
        double ytop = pp_axis_map(&ay, t / GIB, bottom, top);
        if (totals)
            pp_html_out(r, "<text class=\"val halo\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", cx, ytop - 4,
                        pp_fmt_gib(t, b1, sizeof b1));
        /* Over capacity: a strip under the bar, and the word when it fits. */
        if (oom) {
            pp_html_out(r, "<rect class=\"oom-mark\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"4\" fill=\"%s\"/>", x,
                        bottom + 1.5, bar_w, C_VERMILLION);
            if (totals && slot >= pp_text_w(3, 11) + 4)
                pp_html_out(r, "<text class=\"oom halo\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">OOM</text>",
                            cx, ytop - 17);
        }
        pp_html_out(r, "</g>\n");
        if (i % every == 0 || (i == n - 1 && slot * (double)(i % every) >= idx_w + 8)) {
            pp_html_out(r, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%lld</text>", cx,
                        bottom + 16, (long long)i);
            if (layer_line)
                pp_html_out(r, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">%lld "
                               "layer%s</text>",
                            cx, bottom + 30, (long long)s->layers, s->layers == 1 ? "" : "s");
            pp_html_out(r, "\n");
        }
    }
    pp_html_out(r, "<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", left, bottom, right, bottom);
    if (cap > 0) {
        double yc = pp_axis_map(&ay, cap / GIB, bottom, top);
        pp_html_out(r, "<line class=\"capacity\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                       "stroke-width=\"2\" stroke-dasharray=\"7 4\"/>\n",
                    left, yc, right + 6, yc, C_VERMILLION);
        pp_html_out(r, "<text class=\"halo\" x=\"%.1f\" y=\"%.1f\" font-weight=\"600\">capacity</text>", right + 10, yc - 3);
        pp_html_out(r, "<text class=\"halo\" x=\"%.1f\" y=\"%.1f\">%s GiB</text>\n", right + 10, yc + 12,
                    pp_fmt_gib(cap, b1, sizeof b1));
    }
    pp_html_out(r, "<text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">pipeline stage%s</text>\n",
                (left + right) / 2, h - 8, layer_line ? " (transformer layers on it)" : "");
    pp_html_out(r, "</svg>\n");

    /* The figures. */
    pp_html_out(r, "<details><summary>Figures per stage (GiB)</summary><div class=\"scroll\"><table>\n"
                   "<tr><th>stage</th><th>layers</th><th>recomputed</th><th>in flight</th>");
    for (int k = 0; k < MEM_N; k++) pp_html_out(r, "<th>%s</th>", mem_names[k]);
    pp_html_out(r, "<th>peak</th><th>peak + reserved</th><th>fits</th></tr>\n");
    for (int64_t i = 0; i < n; i++) {
        const pp_mem_stage *s = &m->stages[i];
        double v[MEM_N];
        mem_parts(s, v);
        pp_html_out(r, "<tr><td>%lld</td><td>%lld</td><td>%lld</td><td>%lld</td>", (long long)i, (long long)s->layers,
                    (long long)s->recompute_layers, (long long)s->inflight);
        for (int k = 0; k < MEM_N; k++) pp_html_out(r, "<td>%s</td>", pp_fmt_gib(v[k], b1, sizeof b1));
        pp_html_out(r, "<td>%s</td><td>%s</td><td>%s</td></tr>\n", pp_fmt_gib(s->peak_bytes, b1, sizeof b1),
                    pp_fmt_gib(pp_fin(s->peak_bytes) + v[MEM_RESERVED], b2, sizeof b2), s->fits ? "yes" : "no");
    }
    pp_html_out(r, "</table></div>\n<p>peak: the allocator peak (weights + grads + optimizer + activations + transient), "
                   "the figure torch.cuda.max_memory_allocated reports; reserved: what the GPU needs beyond it "
                   "(CUDA context, NCCL and cuBLAS workspaces, allocator slack).</p></details>\n</section>\n");
    pp_html_check(r);
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
    pp_html_out(r, "<section class=\"candidates\">\n<h2>Candidates: throughput against memory headroom</h2>\n");
    int valid = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(pts[i].headroom_bytes) && isfinite(pts[i].samples_per_s)) valid++;
    if (n <= 0 || !valid) {
        pp_html_out(r, "<p>No candidate layout survived the search.</p>\n</section>\n");
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
        pp_html_out(r, "</section>\n");
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

    pp_html_out(r, "<p>%d layout%s; upper right is better. The staircase is the Pareto front: %d layout%s that no "
                   "other beats on both throughput and headroom.",
                m, m == 1 ? "" : "s", n_front, n_front == 1 ? "" : "s");
    if (chosen >= 0) {
        pp_html_out(r, " Chosen: <strong>");
        pp_html_esc(r, pts[chosen].label ? pts[chosen].label : "?");
        pp_html_out(r, "</strong>, %s samples/s with %s GiB to spare.", pp_fmt_sig(pts[chosen].samples_per_s, b1, sizeof b1),
                    pp_fmt_gib(pts[chosen].headroom_bytes, b2, sizeof b2));
    }
    pp_html_out(r, "</p>\n");

    pp_legend_item leg[4];
    int nl = 0;
    leg[nl++] = (pp_legend_item){"candidate layout", C_BLUE, 2};
    leg[nl++] = (pp_legend_item){"Pareto front", C_ORANGE, 4};
    if (chosen >= 0) leg[nl++] = (pp_legend_item){"chosen", C_VERMILLION, 3};
    if (n_oom) leg[nl++] = (pp_legend_item){"no headroom (x < 0): OOM", C_BLACK, 1};

    const double left = 78, right = SVG_W - 24, top = 40, bottom = top + 330, h = bottom + 52;
    pp_axis ax, ay;
    pp_axis_nice(fmin(0, xmin), xmax + 0.02 * (xmax - xmin), 8, &ax);
    double ypad = 0.06 * (ymax - ymin);
    if (ypad <= 0) ypad = fabs(ymax) * 0.05 + 1e-9;
    pp_axis_nice(fmax(0, ymin - ypad), ymax + ypad, 6, &ay);

    pp_svg_open(r, "candidates-chart", h, "candidate layouts: throughput against memory headroom");
    pp_legend_draw(r, leg, nl, left, 8, right - left);
    pp_axis_y_draw(r, &ay, left, right, bottom, top, "throughput (samples/s)");
    pp_axis_x_draw(r, &ax, left, right, top, bottom, "memory headroom on the fullest GPU (GiB)");
    pp_html_out(r, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", left, top,
                right - left, bottom - top);
    if (ax.lo < 0) {
        double x0 = pp_axis_map(&ax, 0, left, right);
        pp_html_out(r, "<line class=\"zero\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                       "stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n",
                    x0, top, x0, bottom, C_BLACK);
    }

    /* Points, one per 3x3 cell (r = 4: the rest would be drawn over each other). */
    const double cell = 3;
    int gw = (int)((right - left) / cell) + 2, gh = (int)((bottom - top) / cell) + 2;
    unsigned char *seen = calloc((size_t)gw * (size_t)gh, 1);
    pp_html_out(r, "<g class=\"points\">\n");
    for (int k = 0; k < m; k++) {
        if (front[p[k].i] || p[k].i == chosen) continue;
        double x = pp_axis_map(&ax, p[k].x, left, right), y = pp_axis_map(&ay, p[k].y, bottom, top);
        if (seen) {
            int cx = (int)((x - left) / cell), cy = (int)((y - top) / cell);
            if (cx < 0) cx = 0;
            if (cy < 0) cy = 0;
            if (cx >= gw) cx = gw - 1;
            if (cy >= gh) cy = gh - 1;
            if (seen[(size_t)cy * (size_t)gw + (size_t)cx]) continue;
            seen[(size_t)cy * (size_t)gw + (size_t)cx] = 1;
        }
        pp_html_out(r, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" fill-opacity=\"0.45\"><title>", x, y,
                    C_BLUE);
        pp_html_esc(r, pts[p[k].i].label);
        pp_html_out(r, ": %s samples/s, %s GiB headroom</title></circle>\n", pp_fmt_sig(p[k].y, b1, sizeof b1),
                    pp_fmt_gib(pts[p[k].i].headroom_bytes, b2, sizeof b2));
    }
    pp_html_out(r, "</g>\n");
    free(seen);

    /* The front as the boundary of the region it dominates: from the fastest (left) point down and
     * right to the roomiest. p is sorted by x descending, so walk it backwards. */
    pp_html_out(r, "<path class=\"pareto\" fill=\"none\" stroke=\"%s\" stroke-width=\"2.2\" d=\"", C_ORANGE);
    bool first = true;
    for (int k = m - 1; k >= 0; k--) {
        if (!front[p[k].i]) continue;
        double x = pp_axis_map(&ax, p[k].x, left, right), y = pp_axis_map(&ay, p[k].y, bottom, top);
        if (first) pp_html_out(r, "M%.1f %.1f", x, y);
        else pp_html_out(r, "V%.1fH%.1f", y, x);
        first = false;
    }
    pp_html_out(r, "\"/>\n<g class=\"front\">\n");
    for (int k = 0; k < m; k++) {
        if (!front[p[k].i] || p[k].i == chosen) continue;
        double x = pp_axis_map(&ax, p[k].x, left, right), y = pp_axis_map(&ay, p[k].y, bottom, top);
        pp_html_out(r, "<circle class=\"pt pareto-pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\" stroke=\"%s\" "
                       "stroke-width=\"1.5\"><title>",
                    x, y, C_BLUE, C_ORANGE);
        pp_html_esc(r, pts[p[k].i].label);
        pp_html_out(r, " (Pareto): %s samples/s, %s GiB headroom</title></circle>\n", pp_fmt_sig(p[k].y, b1, sizeof b1),
                    pp_fmt_gib(pts[p[k].i].headroom_bytes, b2, sizeof b2));
    }
    pp_html_out(r, "</g>\n");

    if (chosen >= 0) {
        const pp_report_point *c = &pts[chosen];
        double x = pp_axis_map(&ax, c->headroom_bytes / GIB, left, right);
        double y = pp_axis_map(&ay, c->samples_per_s, bottom, top);
        pp_html_out(r, "<g class=\"chosen\"><circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"/>"
                       "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"9\" fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\"><title>",
                    x, y, C_VERMILLION, x, y, C_VERMILLION);
        pp_html_esc(r, c->label);
        pp_html_out(r, " (chosen)</title></circle>");
        /* Label: two lines, at the candidate place that covers the fewest points and front
         * segments and stays inside the plot. */
        size_t nch = pp_utf8_chars(c->label ? c->label : "?") + 8;
        if (nch > 60) nch = 60;
        char line2[96];
        snprintf(line2, sizeof line2, "%s samples/s, %s GiB free", pp_fmt_sig(c->samples_per_s, b1, sizeof b1),
                 pp_fmt_gib(c->headroom_bytes, b2, sizeof b2));
        double tw = fmax(1.1 * pp_text_w(nch, 12), pp_text_w(strlen(line2), 12)), th = 34; /* bold: wider */
        /* Candidate places: around the point, then a grid over the plot (with a leader line).
         * Cost: points under the label (front points more), the front's staircase through it
         * (a line through text reads worst), and the distance from the point. */
        double *qx = malloc(sizeof *qx * (size_t)(m ? m : 1)), *qy = malloc(sizeof *qy * (size_t)(m ? m : 1));
        double best_score = INFINITY, tx = left + 4, ty = top + 16;
        if (qx && qy) {
            for (int k = 0; k < m; k++) {
                qx[k] = pp_axis_map(&ax, p[k].x, left, right);
                qy[k] = pp_axis_map(&ay, p[k].y, bottom, top);
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
            pp_html_out(r, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.2\"/>",
                        x + dx / dl * 9, y + dy / dl * 9, lx, ly, C_VERMILLION);
        pp_html_out(r, "<text class=\"halo\" x=\"%.1f\" y=\"%.1f\" font-weight=\"600\">chosen: ", tx, ty);
        pp_html_esc_n(r, c->label ? c->label : "?", 52);
        pp_html_out(r, "</text><text class=\"halo\" x=\"%.1f\" y=\"%.1f\">%s</text></g>\n", tx, ty + 15, line2);
    }
    pp_html_out(r, "</svg>\n</section>\n");
    free(p);
    free(front);
    pp_html_check(r);
}

/* ------------------------------------------------------------------ funnel */

void pp_report_funnel(pp_report *r, const char *const *names, const char *const *notes, const int64_t *counts,
                      int n)
{
    char b1[48], b2[48];
    pp_html_out(r, "<section class=\"funnel\">\n<h2>Pruning funnel</h2>\n");
    if (n <= 0) {
        pp_html_out(r, "<p>No search steps.</p>\n</section>\n");
        return;
    }
    int64_t cmax = 0, cmin_pos = INT64_MAX;
    size_t name_max = 0;
    for (int i = 0; i < n; i++) {
        int64_t c = counts[i] > 0 ? counts[i] : 0;
        if (c > cmax) cmax = c;
        if (c > 0 && c < cmin_pos) cmin_pos = c;
        size_t nc = pp_utf8_chars(names[i]);
        if (nc > name_max) name_max = nc;
    }
    bool logscale = cmax > 0 && cmin_pos != INT64_MAX && (double)cmax / (double)cmin_pos > 100;
    pp_html_out(r, "<p>Layouts left after each step%s.</p>\n",
                logscale ? "; bar length on a logarithmic scale (the counts span more than two decades)" : "");
    if (name_max > 40) name_max = 40;
    const double left = 12 + fmax(pp_text_w(name_max, 13), 80), right = SVG_W - 170, row = 32, top = 8;
    double h = top + row * n + 8;
    pp_svg_open(r, "funnel-chart", h, "pruning funnel");
    for (int i = 0; i < n; i++) {
        int64_t c = counts[i] > 0 ? counts[i] : 0;
        double frac = 0;
        if (cmax > 0) frac = logscale ? log10((double)c + 1) / log10((double)cmax + 1) : (double)c / (double)cmax;
        double w = fmax(c > 0 ? 2 : 0, frac * (right - left));
        double y = top + row * i;
        pp_html_out(r, "<g class=\"step\"><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"13\">", left - 10,
                    y + 18);
        pp_html_esc_n(r, names[i], 40);
        pp_html_out(r, "</text><rect class=\"funnel-bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"22\" fill=\"%s\"><title>",
                    left, y + 3, w, i == n - 1 ? C_ORANGE : C_BLUE);
        pp_html_esc(r, names[i]);
        pp_html_out(r, ": %s", pp_fmt_count(c, b1, sizeof b1));
        if (notes && notes[i]) {
            pp_html_out(r, " (");
            pp_html_esc(r, notes[i]);
            pp_html_out(r, ")");
        }
        pp_html_out(r, "</title></rect>");
        pp_html_out(r, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\">%s", left + w + 8, y + 18, pp_fmt_count(c, b1, sizeof b1));
        if (i > 0 && counts[0] > 0) {
            double pct = 100.0 * (double)c / (double)counts[0];
            pp_html_out(r, " (%s%%)", pp_fmt_sig(pct, b2, sizeof b2));
        }
        pp_html_out(r, "</text></g>\n");
    }
    pp_html_out(r, "</svg>\n");
    /* What each step removed, and why. */
    bool any_note = false;
    for (int i = 1; i < n; i++) any_note |= notes && notes[i] && notes[i][0];
    if (any_note) {
        pp_html_out(r, "<div class=\"scroll\"><table>\n<tr><th>step</th><th>removed</th><th style=\"text-align:left\">why</th></tr>\n");
        for (int i = 1; i < n; i++) {
            pp_html_out(r, "<tr><td>");
            pp_html_esc(r, names[i]);
            pp_html_out(r, "</td><td>%s</td><td style=\"text-align:left\">", pp_fmt_count(counts[i - 1] - counts[i], b1, sizeof b1));
            pp_html_esc(r, notes[i] ? notes[i] : "");
            pp_html_out(r, "</td></tr>\n");
        }
        pp_html_out(r, "</table></div>\n");
    }
    pp_html_out(r, "</section>\n");
    pp_html_check(r);
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
    v[ST_COMPUTE] = pp_fin(t->compute_s);
    v[ST_RECOMPUTE] = pp_fin(t->recompute_s);
    v[ST_TP] = pp_fin(t->tp_comm_s) + pp_fin(t->cp_comm_s) + pp_fin(t->ep_comm_s);
    v[ST_PP] = pp_fin(t->pp_comm_s);
    v[ST_BUBBLE] = pp_fin(t->bubble_s);
    v[ST_DP] = pp_fin(t->dp_comm_s) + pp_fin(t->zero_gather_s);
    v[ST_OPT] = pp_fin(t->optimizer_s);
    double sum = 0;
    for (int k = 0; k < ST_OTHER; k++) {
        v[k] = fmax(0, v[k]);
        sum += v[k];
    }
    double step = fmax(0, pp_fin(t->step_time_s));
    v[ST_OTHER] = step > sum * (1 + 1e-6) ? step - sum : 0;
}

void pp_report_step_breakdown(pp_report *r, const char *const *labels, const pp_time_result *t, int n)
{
    char b1[64], b2[64], b3[64], b4[64];
    pp_html_out(r, "<section class=\"steps\">\n<h2>%s</h2>\n", n == 1 ? "Step time" : "Step time of the best layouts");
    if (n <= 0) {
        pp_html_out(r, "<p>No layout.</p>\n</section>\n");
        return;
    }
    double vmax = 0;
    bool any_other = false, any_overlap = false;
    size_t lab_max = 0;
    for (int i = 0; i < n; i++) {
        double v[ST_N], sum = 0;
        step_parts(&t[i], v);
        for (int k = 0; k < ST_N; k++) sum += v[k];
        vmax = fmax(vmax, fmax(sum, pp_fin(t[i].step_time_s)));
        if (v[ST_OTHER] > 0) any_other = true;
        if (sum - v[ST_OTHER] > pp_fin(t[i].step_time_s) * (1 + 1e-6)) any_overlap = true;
        size_t nc = pp_utf8_chars(labels[i]);
        if (nc > lab_max) lab_max = nc;
    }
    /* Unit: ms below one second. */
    bool ms = vmax < 1;
    double scale = ms ? 1e3 : 1;
    pp_html_out(r, "<p>One optimizer step of the global batch, split by where the time goes on the critical path.");
    if (any_overlap) pp_html_out(r, " A black tick marks the step time where parts overlap.");
    pp_html_out(r, "</p>\n");

    pp_legend_item leg[ST_N + 1];
    int nl = 0;
    for (int k = 0; k < ST_N; k++)
        if (k != ST_OTHER || any_other) leg[nl++] = (pp_legend_item){st_names[k], st_fill[k], 0};
    if (lab_max > 52) lab_max = 52;
    const double left = 14 + fmax(pp_text_w(lab_max, 12), 60), right = SVG_W - 86, row = 30;
    double top = 8 + pp_legend_h(leg, nl, SVG_W - 16) + 10, bottom = top + row * n, h = bottom + 52;
    pp_axis ax;
    pp_axis_nice(0, vmax * scale, 6, &ax);

    pp_svg_open(r, "steps-chart", h, "step-time breakdown of the best layouts");
    pp_svg_defs_hatch(r);
    pp_legend_draw(r, leg, nl, 8, 8, SVG_W - 16);
    pp_axis_x_draw(r, &ax, left, right, top, bottom, ms ? "time per optimizer step (ms)" : "time per optimizer step (s)");
    for (int i = 0; i < n; i++) {
        double v[ST_N];
        step_parts(&t[i], v);
        double y = top + row * i + 5, bh = row - 10;
        pp_html_out(r, "<g class=\"step-bar\"><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", left - 8, y + bh / 2 + 4);
        pp_html_esc_n(r, labels[i], 52);
        pp_html_out(r, "<title>");
        pp_html_esc(r, labels[i]);
        pp_html_out(r, "</title></text>");
        double acc = 0;
        for (int k = 0; k < ST_N; k++) {
            if (k == ST_OTHER && !any_other) continue;
            double x0 = pp_axis_map(&ax, acc * scale, left, right), x1 = pp_axis_map(&ax, (acc + v[k]) * scale, left, right);
            pp_html_out(r, "<rect class=\"seg seg-%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" ", st_class[k], x0,
                        y, fmax(0, x1 - x0), bh);
            pp_svg_fill_attr(r, st_fill[k]);
            pp_html_out(r, " stroke=\"#fff\" stroke-width=\"0.8\"><title>%s: %s %s</title></rect>", st_names[k],
                        pp_fmt_sig(v[k] * scale, b1, sizeof b1), ms ? "ms" : "s");
            acc += v[k];
        }
        double step = pp_fin(t[i].step_time_s);
        double xs = pp_axis_map(&ax, step * scale, left, right);
        if (acc > step * (1 + 1e-6))
            pp_html_out(r, "<line class=\"step-mark\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                           "stroke-width=\"2.5\"/>",
                        xs, y - 3, xs, y + bh + 3, C_BLACK);
        double xend = pp_axis_map(&ax, fmax(acc, step) * scale, left, right);
        pp_html_out(r, "<text class=\"val\" x=\"%.1f\" y=\"%.1f\">%s %s</text></g>\n", xend + 6, y + bh / 2 + 4,
                    pp_fmt_sig(step * scale, b1, sizeof b1), ms ? "ms" : "s");
    }
    pp_html_out(r, "<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", left, top, left, bottom);
    pp_html_out(r, "</svg>\n");

    pp_html_out(r, "<div class=\"scroll\"><table>\n<tr><th>layout</th><th>step (s)</th><th>samples/s</th><th>tokens/s</th>"
                   "<th>TFLOP/s per GPU</th><th>MFU</th></tr>\n");
    for (int i = 0; i < n; i++) {
        pp_html_out(r, "<tr><td>");
        pp_html_esc(r, labels[i]);
        pp_html_out(r, "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%.1f%%</td></tr>\n",
                    pp_fmt_sig(t[i].step_time_s, b1, sizeof b1), pp_fmt_sig(t[i].samples_per_s, b2, sizeof b2),
                    pp_fmt_count((int64_t)llround(fmin(fmax(pp_fin(t[i].tokens_per_s), 0), 9e18)), b3, sizeof b3),
                    pp_fmt_sig(t[i].model_tflops_per_gpu, b4, sizeof b4), 100 * pp_fin(t[i].mfu));
    }
    pp_html_out(r, "</table></div>\n</section>\n");
    pp_html_check(r);
}
