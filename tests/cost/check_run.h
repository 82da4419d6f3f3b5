/* Shared by the cost tests: `parplan check ARGS` as a user's flags build it (pp_request_parse_line,
 * pp_request_resolve over the catalog), with its memory and time results. */
#ifndef PP_CHECK_RUN_H
#define PP_CHECK_RUN_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pp_load.h"
#include "pp_memory.h"
#include "pp_request.h"
#include "pp_time.h"
#include "tap.h"

static pp_catalog cat;

/* The catalog the runs resolve against; false (and a failed TAP line) when it cannot be read. */
static inline bool catalog_open(void)
{
    char dir[1024];
    pp_error err = {0};
    if (pp_catalog_find_dir(NULL, dir, sizeof dir, &err) != PP_OK || pp_catalog_load(&cat, dir, &err) != PP_OK) {
        tap_ok(0, "catalog: %s", err.msg);
        return false;
    }
    return true;
}

typedef struct {
    pp_request rq;
    pp_resolved res;
    pp_mem_result mem;
    pp_time_result time;
} run;

/* parplan check ARGS: the memory and time results; false (and a failed TAP line) when refused */
static inline bool run_args(run *r, const char *args)
{
    pp_error err = {0};
    pp_request_init(&r->rq);
    memset(&r->res, 0, sizeof r->res);
    bool ok = pp_request_parse_line(&r->rq, args, &err) == PP_OK &&
              pp_request_resolve(&r->rq, &cat, true, true, &r->res, &err) == PP_OK &&
              pp_memory_estimate(&r->res.work, &r->res.layout, &r->mem, &err) == PP_OK &&
              pp_time_estimate(&r->res.work, &r->res.layout, &r->time, &err) == PP_OK;
    if (!ok) tap_ok(0, "parplan check %s: %s", args, err.msg);
    return ok;
}

/* run_args over a command line built printf-style (a base line and what one run adds to it) */
static inline bool run_argsf(run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline bool run_argsf(run *r, const char *fmt, ...)
{
    char args[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof args) {
        tap_ok(0, "parplan check: command line over %zu characters", sizeof args);
        return false;
    }
    return run_args(r, args);
}

static inline void run_free(run *r)
{
    pp_resolved_free(&r->res);
    pp_request_free(&r->rq);
}

#endif
