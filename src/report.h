/* The HTML report of `plan --report` and `check --report`: one self-contained page
 * (inline CSS and SVG, no script, no remote font or image) with charts drawn here:
 *   - memory per pipeline stage: stacked bars against the GPU's capacity line;
 *   - candidates: throughput against memory headroom, the Pareto front drawn, the chosen marked;
 *   - the pruning funnel;
 *   - the step-time breakdown of the best layouts;
 *   - text blocks (the launch command) and key/value tables.
 *
 * The writer takes plain data (pp_mem_result, pp_time_result, arrays) so that any command can
 * call it. Every string is escaped: names come from user YAML. The file is written to a temporary
 * file beside PATH and renamed over it on pp_report_close, so a failed run never leaves half a
 * page behind.
 *
 *     pp_report r;
 *     if (pp_report_open(&r, "plan.html", "parplan plan: gpt3-13b on 16 x a100-80gb", &err)) fail;
 *     pp_report_memory_stages(&r, &mem, "a100-80gb");
 *     ...
 *     if (pp_report_close(&r, &err)) fail;   // or pp_report_free(&r) to abandon it
 *
 * Section calls never fail on their own: the first write error is kept and returned by
 * pp_report_close, which then removes the temporary file.
 */
#ifndef PP_REPORT_H
#define PP_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "pp.h"
#include "pp_launch.h"
#include "pp_memory.h"
#include "pp_search.h"
#include "pp_time.h"

typedef struct {
    FILE *f;
    bool own;            /* f is our temporary file (pp_report_open), renamed on close */
    char path[1024];     /* final path */
    char tmp_path[1040]; /* PATH.XXXXXX while writing */
    int n_svg;           /* charts written, for unique element ids */
    int write_errno;     /* first failed write (0: none) */
} pp_report;

/* One layout of the search, for the candidates chart. */
typedef struct {
    const char *label;      /* e.g. "tp2 pp4 dp2 mbs1 selective" (escaped; may be NULL) */
    double headroom_bytes;  /* capacity - (peak + reserved) on the fullest GPU; < 0: OOM */
    double samples_per_s;   /* predicted (or measured) throughput */
} pp_report_point;

/* Start a report at path ("-": stdout). The page is built in PATH.XXXXXX and renamed on close.
 * A missing directory is PP_ERR_INPUT, other I/O failures PP_ERR_RUNTIME. */
pp_status pp_report_open(pp_report *r, const char *path, const char *title, pp_error *err);
/* The same into a stream the caller owns (tests): close flushes it but neither closes nor renames. */
void pp_report_begin(pp_report *r, FILE *f, const char *title);

/* A two-column table: keys[i] | values[i] (the work, the layout, the verdict). */
void pp_report_summary(pp_report *r, const char *heading, const char *const *keys,
                       const char *const *values, int n);
/* A paragraph of plain text. */
void pp_report_note(pp_report *r, const char *text);
/* Memory per pipeline stage: weights, grads, optimizer, activations, transient and reserved
 * stacked per stage against m->capacity_bytes; gpu_name labels the capacity line (may be NULL).
 * A table of the figures follows in a <details> block. */
void pp_report_memory_stages(pp_report *r, const pp_mem_result *m, const char *gpu_name);
/* Candidates as throughput (y, samples/s) against memory headroom (x, GiB); the Pareto front
 * (no other candidate both faster and roomier) drawn as a staircase; pts[chosen] marked
 * (chosen < 0: none). Points that fall on the same pixel are drawn once. */
void pp_report_candidates(pp_report *r, const pp_report_point *pts, int n, int chosen);
/* The pruning funnel: counts[i] layouts left after step names[i] (counts[0]: all enumerated).
 * Bars switch to a log scale when the counts span more than two decades. notes (NULL, or n
 * entries that may be NULL) say why each step removes what it does: tooltips, and a table of
 * removed counts under the chart. */
void pp_report_funnel(pp_report *r, const char *const *names, const char *const *notes,
                      const int64_t *counts, int n);
/* Step time of n layouts as stacked bars: compute, recompute, TP/CP/EP collectives, PP send/recv,
 * PP bubble, DP reduction (+ ZeRO gathers), optimizer; then a table with samples/s and MFU. */
void pp_report_step_breakdown(pp_report *r, const char *const *labels, const pp_time_result *t,
                              int n);
/* A heading and preformatted text. */
void pp_report_text(pp_report *r, const char *heading, const char *text);
/* "Launch command (FORMAT)": what `parplan launch --format FORMAT` writes to stdout for p (the
 * files of a format joined into one script); when the format cannot express the layout, the
 * reason instead. */
void pp_report_launch(pp_report *r, pp_launch_format fmt, const pp_launch_params *p);

/* Finish the page; for pp_report_open, flush, fsync and rename into place. */
pp_status pp_report_close(pp_report *r, pp_error *err);
/* Abandon an unfinished report (removes the temporary file). Accepts NULL and a closed report. */
void pp_report_free(pp_report *r);

/* ------------------------------------------------------------------ whole pages */

/* What `check --report` and `plan --report` show; unused fields stay zero / NULL. */
typedef struct {
    const pp_work *work;                 /* required */
    /* check: the layout and its predictions. */
    const pp_layout *layout;
    const pp_time_result *time;
    /* plan: the candidates best first (cand[0] is the chosen one) and the search's counts.
     * The more candidates (the search's top), the fuller the throughput/headroom chart. */
    const pp_search_candidate *cand;
    int64_t n_cand;
    const pp_search_result *search;
    int64_t top;                         /* --top: rows of the step-time chart (at most 10) */
    /* Memory per stage of the layout (check) or of cand[0] (plan); NULL: no memory chart. */
    const pp_mem_result *mem;
    /* Launch command: a pp_launch_format, or -1 for the framework's own (megatron: megatron,
     * deepspeed: deepspeed, fsdp: none). */
    int launch_format;
    pp_launch_target launch_target;
    int64_t train_iters;
} pp_report_page;

/* Write the whole page of `parplan <command> --report path` ("check" or "plan"): summary,
 * memory per stage, (plan: candidates, funnel), step-time breakdown, launch command. */
pp_status pp_report_write_page(const char *path, const char *command, const pp_report_page *p,
                               pp_error *err);


#endif
