/* Minimal TAP producer for meson's `protocol : 'tap'` tests. Header-only.
 *   tap_ok(cond, "name %d", i);  tap_near(got, want, rel_tol, "name");  return tap_done(); */
#ifndef PP_TAP_H
#define PP_TAP_H
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_failed;

/* One TAP line: a newline inside the description (a captured message) becomes " | ", so the
 * harness never reads a stray line as TAP. */
static inline int tap_vok(int cond, const char *fmt, va_list ap)
{
    char buf[4096];
    tap_n++;
    if (!cond) tap_failed++;
    vsnprintf(buf, sizeof buf, fmt, ap);
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r') *p = *(p + 1) ? '|' : ' ';
    printf("%s %d - %s\n", cond ? "ok" : "not ok", tap_n, buf);
    fflush(stdout);
    return cond;
}
static inline int tap_ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int tap_ok(int cond, const char *fmt, ...)
{
    va_list ap; va_start(ap, fmt);
    int r = tap_vok(cond, fmt, ap);
    va_end(ap);
    return r;
}
/* |got - want| <= rel_tol * |want| (or <= rel_tol when want == 0). Prints both values. */
static inline int tap_near(double got, double want, double rel_tol, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int tap_near(double got, double want, double rel_tol, const char *fmt, ...)
{
    double err = want != 0 ? fabs(got - want) / fabs(want) : fabs(got);
    int cond = isfinite(got) && err <= rel_tol;
    va_list ap; va_start(ap, fmt);
    int r = tap_vok(cond, fmt, ap);
    va_end(ap);
    printf("# got %.6g want %.6g err %.3f%% (tol %.3f%%)\n", got, want, 100 * err, 100 * rel_tol);
    return r;
}
static inline void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void tap_diag(const char *fmt, ...)
{
    char buf[8192];
    va_list ap; va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    /* every line of a multi-line diagnostic is a comment */
    printf("# ");
    for (const char *p = buf; *p; p++) {
        putchar(*p);
        if (*p == '\n' && p[1]) printf("# ");
    }
    printf("\n");
}
static inline int tap_skip_all(const char *why) { printf("1..0 # SKIP %s\n", why); return 0; }
static inline int tap_done(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}
#endif
