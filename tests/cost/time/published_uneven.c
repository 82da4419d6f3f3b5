/* The published runs that parplan used to refuse because pp x vpp does not divide the layers
 * (tests/data/published/first_look.csv: "does not divide", 22 rows): each must now be accepted
 * when stated with the flags a user gives (runs.csv's parplan_args: `parplan check ARGS` exits 0
 * or 1, never 2), and where the row states the split (--pipeline-layout, added where the source
 * states it: the row's notes say so) check must price that split (its "pipeline_layout" is the one
 * given). Per row it prints the predicted step time against the published one (runs.csv step_s)
 * and whether the memory model says it fits; these are figures to read, not bounds: nothing here
 * is fitted to them. $PARPLAN is the binary, run from the source tree. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "csv_cols.h"
#include "jscan.h"
#include "readfile.h"
#include "tap.h"

#define MAX_ROWS 256
#define MAX_COLS 64

/* One CSV file, read with the tests' RFC 4180 record reader (csv_cols.h). */
typedef struct {
    char *text;
    int n_rows, n_cols;
    char *hdr[MAX_COLS];
    char *cell[MAX_ROWS][MAX_COLS];
} csv_file;

static bool csv_load(csv_file *c, const char *path)
{
    memset(c, 0, sizeof *c);
    c->text = tc_read_file(path, NULL);
    if (!c->text) return false;
    char *p = c->text;
    c->n_cols = csv_record(&p, c->hdr, MAX_COLS);
    int k;
    while (c->n_rows < MAX_ROWS && (k = csv_record(&p, c->cell[c->n_rows], MAX_COLS)) > 0) {
        for (; k < MAX_COLS; k++) c->cell[c->n_rows][k] = "";
        c->n_rows++;
    }
    return c->n_cols > 0;
}

static const char *csv_get(const csv_file *c, int row, const char *col)
{
    for (int k = 0; k < c->n_cols; k++)
        if (!strcmp(c->hdr[k], col)) return c->cell[row][k];
    return "";
}

static int csv_find(const csv_file *c, const char *id)
{
    for (int i = 0; i < c->n_rows; i++)
        if (!strcmp(csv_get(c, i, "id"), id)) return i;
    return -1;
}

/* `parplan check ARGS --json` through the shell (ARGS as a user types them, quotes included):
 * the exit status, stdout in out. */
static int check(const char *src, const char *args, char *out, size_t n)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' check %s --json -q 2>/dev/null", src, getenv("PARPLAN"), args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t k = fread(out, 1, n - 1, p);
    out[k] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The --pipeline-layout value of ARGS ('...' quoted), or "" */
static void given_layout(const char *args, char *lay, size_t n)
{
    lay[0] = 0;
    const char *p = strstr(args, "--pipeline-layout '");
    if (!p) return;
    p += strlen("--pipeline-layout '");
    const char *e = strchr(p, '\'');
    if (e) snprintf(lay, n, "%.*s", (int)(e - p), p);
}

int main(void)
{
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    if (!getenv("PARPLAN") || !src) return tap_skip_all("PARPLAN or PARPLAN_SOURCE_DIR not set");
    static csv_file runs, look;
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/published/runs.csv", src);
    bool ok_runs = csv_load(&runs, path);
    snprintf(path, sizeof path, "%s/tests/data/published/first_look.csv", src);
    bool ok_look = csv_load(&look, path);
    if (!tap_ok(ok_runs && ok_look, "read runs.csv (%d rows) and first_look.csv (%d rows)", runs.n_rows, look.n_rows))
        return tap_done();
    static char out[1 << 20];
    int refused = 0, accepted = 0, fit = 0, with_layout = 0;
    double sum_abs = 0;
    for (int i = 0; i < look.n_rows; i++) {
        if (!strstr(csv_get(&look, i, "error"), "does not divide")) continue;
        refused++;
        const char *id = csv_get(&look, i, "id");
        int r = csv_find(&runs, id);
        if (!tap_ok(r >= 0, "%s: in runs.csv", id)) continue;
        const char *args = csv_get(&runs, r, "parplan_args");
        int st = check(src, args, out, sizeof out);
        char perr[128] = "";
        js_val *doc = st == 0 || st == 1 ? js_parse(out, perr, sizeof perr) : NULL;
        double step = doc ? js_num(doc, "step_time_s") : NAN;
        double pub = atof(csv_get(&runs, r, "step_s"));
        const js_val *jf = doc ? js_get(doc, "fits") : NULL;
        bool fits = jf && jf->type == JS_BOOL && jf->b;
        const js_val *jl = doc ? js_get(js_get(doc, "layout"), "pipeline_layout") : NULL;
        const char *lay = jl && jl->type == JS_STR ? jl->str : "";
        bool good = (st == 0 || st == 1) && doc && isfinite(step) && step > 0 && lay[0];
        accepted += good;
        tap_ok(good, "%s: accepted (exit %d), split by virtual stage %s", id, st, lay[0] ? lay : "(none)");
        if (!good) {
            js_free(doc);
            continue;
        }
        fit += fits;
        char given[512];
        given_layout(args, given, sizeof given);
        if (given[0]) {
            with_layout++;
            tap_ok(!strcmp(given, lay), "%s: priced with the layout the row states (%s = %s)", id, given, lay);
        }
        double e = pub > 0 ? (step - pub) / pub : NAN;
        if (isfinite(e)) sum_abs += fabs(e);
        printf("# %-8s %-26s predicted %8.3f s, published %8.3f s (%+6.1f%%), %s, need %.1f of %.1f GiB\n", id,
               csv_get(&runs, r, "model"), step, pub, 100 * e, fits ? "fits" : "OUT OF MEMORY",
               js_num(doc, "need_bytes") / 1073741824.0, js_num(doc, "capacity_bytes") / 1073741824.0);
        printf("#          parplan check %s\n", args);
        js_free(doc);
    }
    printf("# %d formerly refused rows, %d accepted, %d fit in memory, %d state their layout; step MAPE %.1f%%\n",
           refused, accepted, fit, with_layout, accepted ? 100 * sum_abs / accepted : NAN);
    /* the 22 rows of first_look.csv, and the 9 whose split the source states */
    tap_ok(refused == 22 && accepted == refused, "all %d formerly refused rows accepted (%d)", refused, accepted);
    tap_ok(with_layout == 9, "%d rows state their layout with --pipeline-layout (9 expected)", with_layout);
    return tap_done();
}
