/* Every real Megatron-LM log read back: for each launch of tests/data/megatron/runs*.csv,
 *   parplan check --megatron-args LOG --gpu h200 --json
 * (the model, layout and stack as the log's argument dump says, the GPU count from its world
 * size) must predict the reporting rank's peak within 5% of its measured max_memory_allocated,
 * and the launches that ran out of memory must be called out of memory. A user reproduces each
 * row with the printed command on the log of tests/data/megatron/logs*.tar.xz.
 * argv: the binary, then pairs of (runs CSV, directory the matching logs were extracted to). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "jscan.h"
#include "tap.h"
#include "csv_cols.h"

#define MIB (1024.0 * 1024.0)
#define MAXCOL 40

static char out[1 << 20];

/* `parplan check --megatron-args LOG --gpu h200 --json` into out; the exit status. */
static int check_log(const char *parplan, const char *log)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' check --megatron-args '%s' --gpu h200 --json 2>/dev/null", parplan, log);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc % 2) {
        fprintf(stderr, "usage: %s PARPLAN RUNS.csv LOGDIR [RUNS.csv LOGDIR]...\n", argv[0]);
        return 2;
    }
    const char *parplan = argv[1];
    int rows = 0, fitted = 0, ooms = 0;
    double sum = 0, worst = 0;
    char worst_name[160] = "";
    for (int a = 2; a + 1 < argc; a += 2) {
        FILE *f = fopen(argv[a], "r");
        if (!tap_ok(f != NULL, "open %s", argv[a])) continue;
        char line[4096], hdrline[4096], *hdr[MAXCOL];
        int nh = 0;
        while (fgets(hdrline, sizeof hdrline, f))
            if (hdrline[0] != '#') {
                nh = split_csv(hdrline, hdr, MAXCOL);
                break;
            }
        int iname = col_index(hdr, nh, "name"), istage = col_index(hdr, nh, "pp_stage");
        int ioom = col_index(hdr, nh, "oom"), imax = col_index(hdr, nh, "max_alloc_mib");
        if (!tap_ok(iname >= 0 && istage >= 0 && ioom >= 0 && imax >= 0, "%s has the columns", argv[a])) {
            fclose(f);
            continue;
        }
        tap_diag("%s", argv[a]);
        while (fgets(line, sizeof line, f)) {
            if (line[0] == '#' || line[0] == '\n') continue;
            char *col[MAXCOL];
            if (split_csv(line, col, MAXCOL) < nh) continue;
            char log[1024];
            snprintf(log, sizeof log, "%s/%s.log", argv[a + 1], col[iname]);
            rows++;
            int rc = check_log(parplan, log);
            char e[256];
            js_val *v = rc == 0 || rc == 1 ? js_parse(out, e, sizeof e) : NULL; /* 1: predicted not to fit */
            if (!tap_ok(v != NULL, "%s: parplan check --megatron-args %s.log --gpu h200 (exit %d)", col[iname],
                        col[iname], rc))
                continue;
            int stage = atoi(col[istage]);
            const js_val *stages = js_get(v, "stages");
            const js_val *st = stages && stage < stages->n ? stages->items[stage] : NULL;
            double peak = st ? js_num(st, "peak_bytes") / MIB : NAN;
            const js_val *fits = js_get(v, "fits");
            bool pred_fits = fits && fits->type == JS_BOOL && fits->b;
            if (atoi(col[ioom])) {
                ooms++;
                tap_diag("  %-16s stage %d  ran out of memory; predicted peak %.0f MiB, %s", col[iname], stage,
                         peak, pred_fits ? "FITS" : "out of memory");
                tap_ok(!pred_fits, "%s: out of memory, as it ran", col[iname]);
            } else {
                fitted++;
                double meas = atof(col[imax]), err = 100 * (peak / meas - 1);
                sum += fabs(err);
                if (fabs(err) > worst) {
                    worst = fabs(err);
                    snprintf(worst_name, sizeof worst_name, "%s stage %d (%+.2f%%)", col[iname], stage, err);
                }
                tap_diag("  %-16s stage %d  measured %8.0f MiB  predicted %8.0f MiB  %+6.2f%%", col[iname], stage,
                         meas, peak, err);
                tap_ok(fabs(err) <= 5.0 && pred_fits, "%s stage %d: within 5%% (%+.2f%%) and fits", col[iname],
                       stage, err);
            }
            js_free(v);
        }
        fclose(f);
    }
    if (fitted) tap_diag("all logs: MAPE %.2f%% over %d rank rows (worst %s), %d OOM launches", sum / fitted,
                         fitted, worst_name, ooms);
    tap_ok(rows >= 40, "every log read (%d rank rows)", rows);
    return tap_done();
}
