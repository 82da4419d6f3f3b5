/* The MoE / Qwen3 launch scripts that `parplan launch` wrote (tests/data/launch/scripts_moe,
 * commands.csv) and that ran on one H200 (real_runs_moe.csv, logs_moe.tar.xz): each script read
 * back with
 *   parplan check --megatron-args SCRIPT --gpu h200 [--profile tests/data/profiles/h200-megatron-local-moe.yaml]
 * predicts its run's peak within 5% of max_memory_allocated (and fits), and, with the MoE
 * calibration, its step time: these runs were in no calibration (held out). Prints each row.
 * argv[1]: the parplan binary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../cli/pp_jscan.h"
#include "../tap.h"

static char out[1 << 20];

static js_val *check(const char *parplan, const char *script, const char *extra)
{
    char cmd[2048], e[256];
    snprintf(cmd, sizeof cmd, "'%s' check --megatron-args '%s' --gpu h200 %s --json 2>/dev/null", parplan, script,
             extra);
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int rc = pclose(p);
    return WIFEXITED(rc) && WEXITSTATUS(rc) == 0 ? js_parse(out, e, sizeof e) : NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PARPLAN\n", argv[0]);
        return 2;
    }
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    if (!src) src = ".";
    char path[1024], prof[1100], line[1024];
    snprintf(path, sizeof path, "%s/tests/data/launch/real_runs_moe.csv", src);
    snprintf(prof, sizeof prof, "--profile '%s/tests/data/profiles/h200-megatron-local-moe.yaml'", src);
    FILE *f = fopen(path, "r");
    if (!tap_ok(f != NULL, "open %s", path)) return tap_done();
    int n = 0;
    double mem_sum = 0, t_sum = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || !strncmp(line, "name,", 5)) continue;
        char name[128];
        double meas_mib = 0, meas_ms = 0;
        if (sscanf(line, "%127[^,],%lf,%lf", name, &meas_mib, &meas_ms) != 3) continue;
        char script[1024];
        snprintf(script, sizeof script, "%s/tests/data/launch/scripts_moe/%s.sh", src, name);
        js_val *a = check(argv[1], script, ""), *b = check(argv[1], script, prof);
        if (!tap_ok(a && b, "%s: the script reads back", name)) {
            js_free(a);
            js_free(b);
            continue;
        }
        double peak = js_num(a, "peak_bytes") / (1024.0 * 1024.0), t0 = js_num(a, "step_time_s") * 1e3;
        double t1 = js_num(b, "step_time_s") * 1e3;
        const js_val *fits = js_get(a, "fits");
        double em = 100 * (peak / meas_mib - 1), et = 100 * (t1 / meas_ms - 1);
        tap_diag("%-18s peak measured %8.0f MiB, predicted %8.0f (%+.2f%%); step measured %7.1f ms, "
                 "uncalibrated %7.1f (%+.1f%%), MoE-calibrated %7.1f (%+.1f%%)", name, meas_mib, peak, em, meas_ms,
                 t0, 100 * (t0 / meas_ms - 1), t1, et);
        tap_ok(fabs(em) <= 5.0 && fits && fits->type == JS_BOOL && fits->b, "%s: peak within 5%% (%+.2f%%), fits",
               name, em);
        mem_sum += fabs(em);
        t_sum += fabs(et);
        n++;
        js_free(a);
        js_free(b);
    }
    fclose(f);
    tap_ok(n == 5, "the five launched scripts (%d)", n);
    if (n) {
        tap_diag("peak MAPE %.2f%%; held-out step-time MAPE with the MoE calibration %.1f%%", mem_sum / n, t_sum / n);
        tap_ok(t_sum / n <= 15.0, "held-out step-time MAPE %.1f%% <= 15%% (issue target)", t_sum / n);
    }
    return tap_done();
}
