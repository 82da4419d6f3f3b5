/* Helpers of the stage MILP tests: a deterministic xorshift generator (so that a failure
 * reproduces; each test file sets its own RNG_SEED before including this), the validity of a
 * split under the costs' bounds, a split as "layers/recompute,..." for the diagnostics, and
 * glpsol on the LP dump. */
#ifndef PP_TEST_STAGES_UTIL_H
#define PP_TEST_STAGES_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pp_stages.h"
#include "tap.h"

#ifndef RNG_SEED
#define RNG_SEED 0x9E3779B97F4A7C15ull
#endif

static uint64_t rng_state = RNG_SEED;
static inline double rng_u(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}
static inline int64_t rng_int(int64_t lo, int64_t hi) { return lo + (int64_t)(rng_u() * (double)(hi - lo + 1)); }

static inline bool split_valid(const pp_stages_costs *c, const pp_stages_result *r)
{
    int64_t sum = 0;
    for (int64_t j = 0; j < c->n_stages; j++) {
        if (r->stage_layers[j] < c->layers_min[j] || r->stage_layers[j] > c->layers_max[j]) return false;
        if (r->stage_recompute[j] < 0 || r->stage_recompute[j] > r->stage_layers[j]) return false;
        if (!c->allow_recompute && r->stage_recompute[j] != 0) return false;
        sum += r->stage_layers[j];
    }
    return sum == c->layers;
}

static inline void split_str(const pp_stages_result *r, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = 0;
    for (int64_t j = 0; j < r->n_stages && off + 16 < n; j++)
        off += (size_t)snprintf(buf + off, n - off, "%s%d/%d", j ? "," : "", r->stage_layers[j],
                                r->stage_recompute[j]);
}

/* Dump c in CPLEX LP format (pp_stages_dump_lp_costs) and solve the file with glpsol (its path;
 * skipped when it is not there): the status ('o': optimal), the objective (the pipeline time in
 * ms) and the problem's size as glpsol reads them. */
typedef struct {
    bool dumped, ran;
    int rc, rows, cols;
    char status;
    double obj_ms;
} glpsol_run;

static inline void glpsol_check(const char *glpsol, const pp_stages_costs *c, glpsol_run *g,
                                pp_error *err)
{
    memset(g, 0, sizeof *g);
    g->obj_ms = NAN;
    char lp[] = "/tmp/pp_stages_XXXXXX";
    int fd = mkstemp(lp);
    if (fd < 0) return;
    close(fd);
    g->dumped = pp_stages_dump_lp_costs(c, lp, err) == PP_OK;
    if (g->dumped && glpsol && glpsol[0] && access(glpsol, X_OK) == 0) {
        char sol[sizeof lp + 8], cmd[1024], line[512];
        snprintf(sol, sizeof sol, "%s.sol", lp);
        snprintf(cmd, sizeof cmd, "'%s' --lp '%s' -w '%s' >/dev/null 2>&1", glpsol, lp, sol);
        g->ran = true;
        g->rc = system(cmd);
        FILE *f = fopen(sol, "r");
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "s mip %d %d %c %lf", &g->rows, &g->cols, &g->status, &g->obj_ms) == 4)
                break;
        if (f) fclose(f);
        unlink(sol);
    }
    unlink(lp);
}

/* The TAP lines of a glpsol run against the library's optimum want_s (s per step): glpsol
 * solves the dump of `what` to optimality, with the same optimum (the LP objective is the
 * pipeline time in ms, constant included). */
static inline void glpsol_tap(const glpsol_run *g, double want_s, const char *what)
{
    if (!g->ran) {
        printf("ok %d - # SKIP glpsol not found\n", ++tap_n);
        return;
    }
    tap_ok(g->rc == 0 && g->status == 'o', "glpsol --lp solves the %s dump to optimality (rc %d, "
           "status %c, %d rows, %d columns)", what, g->rc, g->status, g->rows, g->cols);
    tap_near(g->obj_ms / 1e3, want_s, 1e-6, "glpsol's optimum == the library's (s/step)");
}

#endif
