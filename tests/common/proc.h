/* Run the parplan binary as a child process for the CLI tests: capture stdout and stderr, bound
 * its wall time (kill the whole process group past the limit) and measure its peak resident
 * memory (wait4 rusage). Header-only, POSIX.
 *
 * Environment read here (so the same tests run plain, under ASan and under valgrind):
 *   PARPLAN_WRAPPER          a command prefix, split on spaces (tests/cli/valgrind.sh sets
 *                            "valgrind --error-exitcode=1 ..."); empty: run parplan directly.
 *   PARPLAN_TEST_TIMEOUT_S   wall-clock limit of one run, seconds (default 20).
 *   PARPLAN_TEST_RSS_MIB     peak RSS allowed (default 256; valgrind.sh raises it).
 *   PARPLAN_TEST_NO_RLIMIT   set: no address-space limit (valgrind and ASan need a large one).
 */
#ifndef TC_PROC_H
#define TC_PROC_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int status;        /* exit status; 128 + signal when killed by one; -1 when it could not start */
    bool timed_out;
    double wall_s;
    long maxrss_kib;   /* peak resident set of the child */
    char *out, *err;   /* NUL-terminated captures (never NULL after tc_run) */
    size_t out_len, err_len;
} tc_proc;

#define TC_PROC_CAP (4u << 20) /* keep at most 4 MiB of each stream; a flood counts as a failure */

static inline void tc_proc_result_free(tc_proc *r)
{
    if (!r) return;
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

static inline double tc_proc_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double tc_proc_env_num(const char *name, double def)
{
    const char *s = getenv(name);
    if (!s || !*s) return def;
    char *end;
    double v = strtod(s, &end);
    return (*end || v <= 0) ? def : v;
}

/* Append up to n bytes read from fd into *buf (cap TC_PROC_CAP). Returns bytes read, 0 at EOF. */
static inline ssize_t tc_proc_drain(int fd, char **buf, size_t *len, size_t *cap)
{
    char tmp[65536];
    ssize_t k = read(fd, tmp, sizeof tmp);
    if (k <= 0) return k;
    size_t keep = (size_t)k;
    if (*len + keep > TC_PROC_CAP) keep = TC_PROC_CAP - *len;
    if (*len + keep + 1 > *cap) {
        size_t nc = *cap ? *cap : 4096;
        while (nc < *len + keep + 1) nc *= 2;
        char *nb = realloc(*buf, nc);
        if (!nb) return -1;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, tmp, keep);
    *len += keep;
    (*buf)[*len] = 0;
    return k;
}

/* Run argv (argv[0] is a path; PARPLAN_WRAPPER is put in front). stdin is /dev/null. */
static inline void tc_run(char *const *argv, tc_proc *r)
{
    memset(r, 0, sizeof *r);
    r->status = -1;
    size_t out_cap = 0, err_cap = 0;
    r->out = calloc(1, 1);
    r->err = calloc(1, 1);
    out_cap = err_cap = 1;

    /* The full argument vector: wrapper words, then argv. */
    char *wrap = NULL;
    const char *w = getenv("PARPLAN_WRAPPER");
    if (w && *w) wrap = strdup(w);
    size_t n_arg = 0, n_wrap = 0;
    while (argv[n_arg]) n_arg++;
    char **full = calloc(n_arg + 64 + 1, sizeof *full);
    if (wrap) {
        for (char *tok = strtok(wrap, " \t"); tok && n_wrap < 64; tok = strtok(NULL, " \t"))
            full[n_wrap++] = tok;
    }
    for (size_t i = 0; i < n_arg; i++) full[n_wrap + i] = argv[i];
    full[n_wrap + n_arg] = NULL;

    int po[2], pe[2];
    if (pipe(po) || pipe(pe)) {
        perror("pipe");
        free(full);
        free(wrap);
        return;
    }
    bool rlimit = !getenv("PARPLAN_TEST_NO_RLIMIT") && !(w && *w);
#if defined(__SANITIZE_ADDRESS__)
    rlimit = false; /* ASan reserves terabytes of shadow address space */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    rlimit = false;
#endif
#endif
    double t0 = tc_proc_now_s();
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0); /* its own group: a timeout kills wrappers and their children too */
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) dup2(nul, 0);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]); close(po[1]); close(pe[0]); close(pe[1]);
        if (rlimit) {
            /* A safety net so a runaway allocation cannot take the machine down with it; the
             * real bound asserted is the measured peak RSS. */
            struct rlimit rl = {.rlim_cur = 4ull << 30, .rlim_max = 4ull << 30};
            setrlimit(RLIMIT_AS, &rl);
        }
        execvp(full[0], full);
        fprintf(stderr, "exec %s: %s\n", full[0], strerror(errno));
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    if (pid < 0) {
        perror("fork");
        close(po[0]);
        close(pe[0]);
        free(full);
        free(wrap);
        return;
    }
    setpgid(pid, pid);
    double limit_s = tc_proc_env_num("PARPLAN_TEST_TIMEOUT_S", 20);
    struct pollfd fds[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
    int open_fds = 2;
    while (open_fds > 0) {
        double left = limit_s - (tc_proc_now_s() - t0);
        if (left <= 0) {
            r->timed_out = true;
            kill(-pid, SIGKILL);
            break;
        }
        int rc = poll(fds, 2, (int)(left * 1000) + 1);
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0) break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t k = i == 0 ? tc_proc_drain(fds[i].fd, &r->out, &r->out_len, &out_cap)
                               : tc_proc_drain(fds[i].fd, &r->err, &r->err_len, &err_cap);
            if (k <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0) close(fds[i].fd);
    /* Both pipes closed: the child has exited (or closed them); wait, still bounded. */
    int st = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    for (;;) {
        pid_t k = wait4(pid, &st, WNOHANG, &ru);
        if (k == pid) break;
        if (k < 0 && errno != EINTR) break;
        if (tc_proc_now_s() - t0 > limit_s) {
            r->timed_out = true;
            kill(-pid, SIGKILL);
            wait4(pid, &st, 0, &ru);
            break;
        }
        usleep(2000);
    }
    r->wall_s = tc_proc_now_s() - t0;
    r->maxrss_kib = ru.ru_maxrss;
    if (WIFEXITED(st)) r->status = WEXITSTATUS(st);
    else if (WIFSIGNALED(st)) r->status = 128 + WTERMSIG(st);
    free(full);
    free(wrap);
}

/* Does text start with the lower-case word w, ignoring case? Stops at text's end. */
static inline bool tc_proc_prefix_ci(const char *text, const char *w)
{
    for (; *w; w++, text++)
        if (!*text || (*text | 0x20) != *w) return false;
    return true;
}

/* Case-insensitive: does text contain "nan" or "inf" as a word (inf, -inf, infinity, nan)? */
static inline const char *tc_proc_find_nonfinite(const char *text)
{
    for (const char *p = text; *p; p++) {
        bool start = p == text || !((p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= 'A' && p[-1] <= 'Z') ||
                                    p[-1] == '_');
        if (!start) continue;
        size_t n = 0;
        if (tc_proc_prefix_ci(p, "nan")) n = 3;
        else if (tc_proc_prefix_ci(p, "infinity")) n = 8;
        else if (tc_proc_prefix_ci(p, "inf")) n = 3;
        if (!n) continue;
        char c = p[n];
        bool end = !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_');
        if (end) return p;
    }
    return NULL;
}

/* The same for an error message, skipping '...'-quoted spans: a message may echo the user's
 * own bad value ("--tokens expects a number, got 'inf'"), but never compute one. */
static inline const char *tc_proc_find_nonfinite_msg(const char *msg)
{
    size_t n = strlen(msg);
    char *copy = malloc(n + 1);
    if (!copy) return NULL;
    bool quoted = false;
    for (size_t i = 0; i <= n; i++) {
        char c = msg[i];
        if (c == '\'') quoted = !quoted;
        copy[i] = quoted && c != '\'' && c ? ' ' : c; /* an unclosed quote keeps the NUL */
    }
    const char *hit = tc_proc_find_nonfinite(copy);
    const char *at = hit ? msg + (hit - copy) : NULL;
    free(copy);
    return at;
}

#endif
