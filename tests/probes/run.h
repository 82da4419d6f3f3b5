/* Run a program with a modified environment and capture its stdout, stderr and exit status
 * (fork/exec, pipes drained with poll). Header-only, POSIX; for the probe tests. */
#ifndef PP_PROBE_RUN_H
#define PP_PROBE_RUN_H

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int status; /* exit status, 128 + signal, or -1 when it could not start */
    char *out, *err;
} probe_run;

static inline void probe_run_free(probe_run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

static inline void probe_append(char **buf, size_t *len, const char *p, size_t n)
{
    char *nb = realloc(*buf, *len + n + 1);
    if (!nb) return;
    memcpy(nb + *len, p, n);
    *len += n;
    nb[*len] = 0;
    *buf = nb;
}

/* argv[0] is the program path; setenv_kv: "NAME=VALUE" strings to set in the child (NULL-ended),
 * timeout_s: the child is killed past it. */
static inline probe_run probe_run_cmd(char *const argv[], const char *const setenv_kv[], double timeout_s)
{
    probe_run r = {-1, calloc(1, 1), calloc(1, 1)};
    size_t lo = 0, le = 0;
    int po[2], pe[2];
    if (pipe(po) || pipe(pe)) return r;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]);
        close(pe[0]);
        for (int i = 0; setenv_kv && setenv_kv[i]; i++) {
            char kv[512];
            snprintf(kv, sizeof kv, "%s", setenv_kv[i]);
            char *eq = strchr(kv, '=');
            if (!eq) continue;
            *eq = 0;
            setenv(kv, eq + 1, 1);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    if (pid < 0) return r;
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    int open_fds = 2;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (open_fds) {
        if (poll(fds, 2, 200) < 0) break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
            char buf[4096];
            ssize_t k = read(fds[i].fd, buf, sizeof buf);
            if (k <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            } else if (i == 0) {
                probe_append(&r.out, &lo, buf, (size_t)k);
            } else {
                probe_append(&r.err, &le, buf, (size_t)k);
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec) > timeout_s) {
            kill(pid, SIGKILL);
            break;
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0) close(fds[i].fd);
    int st = 0;
    waitpid(pid, &st, 0);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return r;
}

static inline int probe_count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

#endif
