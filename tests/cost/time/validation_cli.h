/* Shared by the step-time validation tests (validation.c, validation_moe.c): a published row as
 * the `parplan check` command line a user types, parsed by the request's option table and merged
 * by the library's one merge (pp_request_parse, pp_request_resolve: what the CLI calls), and the
 * same command run through the binary ($PARPLAN) to show that the printed command reproduces the
 * figure. */
#ifndef PP_VALIDATION_CLI_H
#define PP_VALIDATION_CLI_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_load.h"
#include "pp_request.h"
#include "tap.h"

/* A work and layout as `parplan check ARGS` builds them. "@SRC@/" in ARGS is the source tree
 * (printed as a path relative to it); words are split at blanks, and '...' quotes a word for the
 * shell (the printed command runs through one). */
typedef struct {
    pp_request rq;
    pp_resolved c; /* .work, .layout */
    char buf[2048];
    char *argv[128];
    char shown[2048]; /* the command line as printed */
} tt_cli;

/* Parse ARGS; on failure the message is in err (the CLI's own words) and nothing is held. */
static inline bool cli_try(tt_cli *t, const char *args, pp_error *err)
{
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    size_t k = 0, m = 0;
    for (const char *p = args; *p && k + 512 < sizeof t->buf;) {
        if (!strncmp(p, "@SRC@/", 6)) {
            k += (size_t)snprintf(t->buf + k, sizeof t->buf - k, "%s/", src ? src : ".");
            p += 6;
        } else {
            t->buf[k++] = *p;
            if (m + 1 < sizeof t->shown) t->shown[m++] = *p;
            p++;
        }
    }
    t->buf[k] = 0;
    t->shown[m] = 0;
    int argc = 0;
    for (char *p = strtok(t->buf, " "); p && argc < 127; p = strtok(NULL, " ")) {
        /* a word quoted for the shell ('Et|(tt|)*30mL', as printed): without its quotes */
        char *o = p;
        for (char *q = p; *q; q++)
            if (*q != '\'') *o++ = *q;
        *o = 0;
        t->argv[argc++] = p;
    }
    static pp_catalog cat;
    memset(err, 0, sizeof *err);
    if (!cat.n_models) {
        char dir[1024];
        if (pp_catalog_find_dir(NULL, dir, sizeof dir, err) != PP_OK || pp_catalog_load(&cat, dir, err) != PP_OK)
            return false;
    }
    pp_request_init(&t->rq);
    memset(&t->c, 0, sizeof t->c);
    if (pp_request_parse(&t->rq, argc, t->argv, err) != PP_OK ||
        pp_request_resolve(&t->rq, &cat, true, true, &t->c, err) != PP_OK) {
        pp_resolved_free(&t->c);
        return false;
    }
    return true;
}

static inline void tt_free(tt_cli *t) { pp_resolved_free(&t->c); }

/* The same, failing a TAP test with the CLI's message when the row does not parse. */
static inline bool cli_load(tt_cli *t, const char *args)
{
    pp_error err;
    if (cli_try(t, args, &err)) return true;
    tap_ok(0, "parplan check %s: %s", t->shown, err.msg);
    return false;
}

/* The same command through the binary: its step_time_s (NAN when it cannot run). */
static inline double binary_step_s(const tt_cli *t)
{
    const char *bin = getenv("PARPLAN"), *src = getenv("PARPLAN_SOURCE_DIR");
    if (!bin) return NAN;
    char cmd[3000];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' check %s --json 2>/dev/null", src ? src : ".", bin, t->shown);
    FILE *f = popen(cmd, "r");
    if (!f) return NAN;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    pclose(f);
    const char *p = strstr(buf, "\"step_time_s\": ");
    if (!p) tap_diag("%s: no step_time_s in: %.200s", cmd, buf);
    return p ? strtod(p + 15, NULL) : NAN;
}

/* Print the command of a row; for the first row of a table, run it through the binary too. */
static inline void reproduce(const tt_cli *t, const char *table, bool first, double step_s)
{
    printf("#   parplan check %s\n", t->shown);
    if (!first) return;
    double b = binary_step_s(t);
    tap_ok(isfinite(b) && fabs(b - step_s) <= 1e-5 * step_s, /* the JSON prints 6 significant digits */
           "%s: the printed command reproduces the row through the binary (%.6g s vs %.6g s)", table, b, step_s);
}

#endif
