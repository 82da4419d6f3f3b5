/* `plan --probe` under faults (suite unit, no GPU: the stand-in probe
 * tests/calibrate/fake-probe.sh).
 * A layer shape that runs out of GPU memory in the probe (its `oom` record, FAKE_PROBE_OOM_TP): a
 * warning, the candidates of that TP size keep the model's figures ("out of GPU memory in the
 * probe"), the others are measured, exit 0.
 * SIGINT / SIGTERM, each measuring call made to take 1 s:
 *   - a cold run gives the list of measuring calls L;
 *   - a run interrupted while call k runs (Ctrl-C: SIGINT to the whole process group; or SIGTERM to
 *     parplan alone, which must pass it on) exits 130 / 143 with one line "interrupted; N
 *     measurements cached, rerun resumes", prints no plan, leaves the cache whole (it loads, holds
 *     what calls 1..k-1 measured) and no temporary file (cache temp or probe profile);
 *   - the rerun exits 0 and makes exactly the calls L[k..]: nothing measured before is measured
 *     again, nothing is lost.
 * argv[1]: fake-probe.sh. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pp_probe_cache.h"
#include "tap.h"

static char dir[] = "/tmp/pp-probe-plan-XXXXXX";
static char cache[512], flog[512], tmpd[512], out_path[512], err_path[512];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 1 << 16);
    if (f && buf) {
        size_t n = fread(buf, 1, (1 << 16) - 1, f);
        buf[n] = 0;
    }
    if (f) fclose(f);
    return buf;
}

static int lines_of(const char *s)
{
    int n = 0;
    for (; s && *s; s++) n += *s == '\n';
    return n;
}

/* Start parplan plan --probe in its own process group, stdout/stderr to files. */
static pid_t start_plan(const char *parplan)
{
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        FILE *o = freopen(out_path, "w", stdout), *e = freopen(err_path, "w", stderr);
        (void)o;
        (void)e;
        execl(parplan, parplan, "plan", "--model", "gpt3-1.3b", "--gpu", "h200", "--gpus", "2", "--probe", "4", "--json",
              (char *)NULL);
        _exit(127);
    }
    if (pid > 0) setpgid(pid, pid);
    return pid;
}

/* exit status; 1000 + signal when killed by one (the plan must exit, not die); -1 past the limit */
static int wait_for(pid_t pid, double limit_s)
{
    double t0 = now_s();
    int st = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) return -1;
        if (now_s() - t0 > limit_s) {
            kill(-pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        usleep(20000);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
}

static int run_plan(const char *parplan)
{
    pid_t pid = start_plan(parplan);
    return pid > 0 ? wait_for(pid, 60) : -1;
}

/* entries of a directory other than . and .. and `keep` (its name); first stray name in stray */
static int strays(const char *path, const char *keep, char *stray, size_t n)
{
    DIR *d = opendir(path);
    int k = 0;
    struct dirent *e;
    stray[0] = 0;
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || (keep && !strcmp(e->d_name, keep))) continue;
        if (!k) snprintf(stray, n, "%s", e->d_name);
        k++;
    }
    if (d) closedir(d);
    return k;
}

static void clear_dir(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    char p[1024];
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        remove(p);
    }
    if (d) closedir(d);
}

/* One interruption: signal sig to the group (Ctrl-C) or to parplan alone, while call k runs. */
static void interrupt_case(const char *parplan, const char *cold_log, int k, int sig, bool group)
{
    const char *how = group ? "SIGINT to the process group (Ctrl-C)" : "SIGTERM to parplan alone";
    char cdir[600], stray[256];
    snprintf(cdir, sizeof cdir, "%s/cache", dir);
    clear_dir(cdir);
    clear_dir(tmpd);
    remove(flog);
    setenv("FAKE_PROBE_SLEEP", "1", 1);
    pid_t pid = start_plan(parplan);
    /* wait until call k has started (the log has k lines), then let it run a little */
    double t0 = now_s();
    char *lg = NULL;
    for (;;) {
        free(lg);
        lg = slurp(flog);
        if (lines_of(lg) >= k || now_s() - t0 > 30) break;
        usleep(20000);
    }
    usleep(300000);
    if (group) kill(-pid, sig);
    else kill(pid, sig);
    double ts = now_s();
    int status = wait_for(pid, 30);
    double stop_s = now_s() - ts;
    unsetenv("FAKE_PROBE_SLEEP");
    char *err = slurp(err_path), *out = slurp(out_path);
    tap_ok(status == 128 + sig, "%s during call %d: exit %d (want %d), %.2f s after the signal", how, k, status,
           128 + sig, stop_s);
    tap_ok(stop_s < 5, "%s: it stops at once, not after the running call (%.2f s)", how, stop_s);
    tap_ok(lines_of(err) == 1 && strstr(err, "parplan: interrupted; ") &&
               strstr(err, " measurements cached, rerun resumes (plan --probe, "),
           "%s: one line 'interrupted; N measurements cached, rerun resumes' (%s)", how, err ? err : "");
    tap_ok(out && !out[0], "%s: no plan printed", how);
    /* the cache: whole, holding calls 1..k-1, and nothing beside it */
    pp_probe_cache c;
    pp_error e = {0};
    pp_status st = pp_probe_cache_load(&c, cache, &e);
    int said = -1;
    const char *p = err ? strstr(err, "interrupted; ") : NULL;
    if (p) said = atoi(p + strlen("interrupted; "));
    tap_ok(st == PP_OK && c.n > 0 && said == c.n, "%s: the cache loads (%s) and holds the %d measurements it said (%d)",
           how, st == PP_OK ? "ok" : e.msg, c.n, said);
    bool nccl_in = st == PP_OK && pp_probe_cache_get(&c, "NVIDIA H200", "nccl n2");
    tap_ok(k < 2 || nccl_in, "%s: the first call's collectives are in it", how);
    pp_probe_cache_free(&c);
    tap_ok(strays(cdir, "probe-cache.yaml", stray, sizeof stray) == 0, "%s: no temporary file beside the cache (%s)",
           how, stray);
    tap_ok(strays(tmpd, NULL, stray, sizeof stray) == 0, "%s: no temporary probe profile left in $TMPDIR (%s)", how,
           stray);
    free(err);
    free(out);
    free(lg);

    /* the rerun makes exactly the calls from the interrupted one on */
    remove(flog);
    int rs = run_plan(parplan);
    char *rlog = slurp(flog), *rout = slurp(out_path);
    const char *want = cold_log;
    for (int i = 0; i < k - 1 && want; i++) {
        want = strchr(want, '\n');
        if (want) want++;
    }
    tap_ok(rs == 0 && rout && strstr(rout, "\"source\": \"probe\""), "%s: the rerun exits 0 with probed candidates (%d)",
           how, rs);
    tap_ok(want && rlog && !strcmp(rlog, want), "%s: the rerun resumes: it makes calls %d.. of the cold run only", how, k);
    if (!(want && rlog && !strcmp(rlog, want))) tap_diag("rerun calls:\n%swanted:\n%s", rlog ? rlog : "", want ? want : "");
    free(rlog);
    free(rout);
}

/* The layer of TP 1 runs out of memory in the probe. */
static void layer_oom(const char *parplan)
{
    char cdir[600];
    snprintf(cdir, sizeof cdir, "%s/cache", dir);
    clear_dir(cdir);
    remove(flog);
    setenv("FAKE_PROBE_OOM_TP", "1", 1);
    int rs = run_plan(parplan);
    unsetenv("FAKE_PROBE_OOM_TP");
    char *out = slurp(out_path), *err = slurp(err_path);
    tap_ok(rs == 0, "a layer that runs out of GPU memory in the probe: exit 0 (%d)", rs);
    tap_ok(err && strstr(err, "parplan: warning: the layer at tp 1, mbs ") &&
               strstr(err, " ran out of GPU memory on NVIDIA H200 in the probe: those candidates keep the model's "
                           "figures"),
           "a warning names the TP size, the micro-batch and the GPU");
    /* gpt3-1.3b on 2 GPUs: the 4 probed candidates are all TP 1 (data parallel) */
    int oom = 0, k = 0;
    for (const char *p = out; p && k < 4 && (p = strstr(p, "\"tp\": ")); p++, k++) {
        const char *next = strstr(p + 1, "\"tp\": "), *src = strstr(p, "\"source\": \"model\""),
                   *mo = strstr(p, "out of GPU memory in the probe");
        oom += atoi(p + 6) == 1 && src && mo && (!next || (src < next && mo < next));
    }
    tap_ok(k == 4 && oom == 4, "the %d probed TP-1 candidates keep the model's figures, marked 'out of GPU memory in "
                               "the probe' (%d)", k, oom);
    free(out);
    free(err);
}

int main(int argc, char **argv)
{
    const char *parplan = getenv("PARPLAN");
    if (!parplan || argc < 2) return tap_skip_all("PARPLAN or fake-probe.sh not given");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(cache, sizeof cache, "%s/cache/probe-cache.yaml", dir);
    snprintf(flog, sizeof flog, "%s/fake.log", dir);
    snprintf(tmpd, sizeof tmpd, "%s/tmp", dir);
    snprintf(out_path, sizeof out_path, "%s/out.json", dir);
    snprintf(err_path, sizeof err_path, "%s/err.txt", dir);
    char cdir[600];
    snprintf(cdir, sizeof cdir, "%s/cache", dir);
    mkdir(cdir, 0777);
    mkdir(tmpd, 0777);
    setenv("PARPLAN_PROBE", argv[1], 1);
    setenv("PARPLAN_CACHE", cache, 1);
    setenv("FAKE_PROBE_LOG", flog, 1);
    setenv("FAKE_PROBE_GPUS", "2", 1);
    setenv("TMPDIR", tmpd, 1);
    unsetenv("FAKE_PROBE_SLEEP");
    unsetenv("FAKE_PROBE_KILL_AT");

    /* the cold run: every call */
    int rs = run_plan(parplan);
    char *cold = slurp(flog);
    int calls = lines_of(cold);
    tap_ok(rs == 0 && calls >= 2, "cold plan --probe: exit %d, %d measuring calls", rs, calls);
    layer_oom(parplan);
    if (calls >= 2) {
        interrupt_case(parplan, cold, 2, SIGINT, true);
        interrupt_case(parplan, cold, calls >= 3 ? 3 : 2, SIGTERM, false);
    }
    free(cold);
    clear_dir(cdir);
    clear_dir(tmpd);
    rmdir(cdir);
    rmdir(tmpd);
    clear_dir(dir);
    rmdir(dir);
    return tap_done();
}
