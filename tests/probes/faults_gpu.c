/* The probes under faults, on a GPU (suite gpu; skipped without one). Plain C with no
 * planner library, so that it also builds with `cc` alone on the lent GPU machines (no libyaml):
 *   cc -std=c11 -D_DEFAULT_SOURCE -Itests -Itests/probes tests/probes/faults_gpu.c -o faults_gpu
 *   PARPLAN_PROBE_EXE=... [PARPLAN_GPU_HOG=pp_gpu_hog] ./faults_gpu
 * Cases:
 *   - OOM by the test cap (PARPLAN_PROBE_MAX_BYTES=4M, gemm --quick): exit 0; every size with a
 *     buffer over 4 MiB is a row "OOM at this size" (in the table and as an `oom: true` record), the
 *     others are measured;
 *   - real OOM (--mem-limit-gib 1, a Llama-like layer at TP 1 and 8): exit 0; TP 1 (~1.4 GB) is OOM,
 *     TP 8 (~0.35 GB) measured after it;
 *   - a hung collective (2+ GPUs; PARPLAN_PROBE_INJECT_HANG=1 on the GPU, =connect in the host;
 *     --timeout-s 5): exit 1 well under 20 s, one line naming the collective, its size, the timeout
 *     and the GPUs; a clean nccl run after it;
 *   - --gpu-index past the last GPU: exit 2, "GPU K is not present (this machine has K)";
 *   - a busy GPU (pp_gpu_hog holds all but 256 MiB of GPU 0): exit 1, one line naming GPU 0, its
 *     name, its free/total memory. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"
#include "tap.h"

static const char *probe;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 1 << 20);
    if (f && buf) buf[fread(buf, 1, (1 << 20) - 1, f)] = 0;
    if (f) fclose(f);
    return buf;
}

static int count_of(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; p && (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

static int parplan_lines(const char *s)
{
    int n = 0;
    for (const char *p = s; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        n += !strncmp(p, "parplan: ", 9);
    return n;
}

static void oom_capped(const char *yaml)
{
    char *argv[] = {(char *)probe, "gemm", "--quick", "-q", "-o", (char *)yaml, NULL};
    const char *const env[] = {"PARPLAN_PROBE_MAX_BYTES=4M", NULL};
    probe_run r = probe_run_cmd(argv, env, 300);
    tap_ok(r.status == 0, "gemm --quick with PARPLAN_PROBE_MAX_BYTES=4M: exit 0 (%d)", r.status);
    if (r.status) tap_diag("stderr: %s", r.err);
    int rows = 0, bad_rows = 0;
    /* measured rows: "  bf16  square      0   0   1024   1024   1024 ..." */
    for (const char *p = r.out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        char dt[8], op[8];
        long long hid, tp, m, n, k;
        if (sscanf(p, " %7s %7s %lld %lld %lld %lld %lld", dt, op, &hid, &tp, &m, &n, &k) == 7 && p[0] == ' ') {
            double in = !strcmp(dt, "fp32") || !strcmp(dt, "tf32") ? 4 : !strcmp(dt, "fp8") ? 1 : 2;
            double out = !strcmp(dt, "fp32") || !strcmp(dt, "tf32") ? 4 : 2;
            double big = m * k * in;
            if (n * k * in > big) big = n * k * in;
            if (m * n * out > big) big = m * n * out;
            rows++;
            bad_rows += big > 4194304.0;
        }
    }
    int ooms = count_of(r.out, ": OOM at this size (");
    tap_ok(rows >= 3 && bad_rows == 0, "%d sizes measured, none with a buffer over 4 MiB (%d)", rows, bad_rows);
    tap_ok(ooms >= 3, "%d rows 'OOM at this size' in the table", ooms);
    tap_ok(strstr(r.out, "  oom   gemm bf16 square m=2048 n=2048 k=2048: OOM at this size (needs >= 24.0 MiB; a 8.0 "
                         "MiB buffer is over PARPLAN_PROBE_MAX_BYTES)") != NULL,
           "bf16 2048^3 (three 8 MiB operands) is one of them, with what it needs");
    tap_ok(!strstr(r.out, "WRONG") && !strstr(r.err, "wrong result"), "no wrong result");
    char *y = slurp(yaml);
    tap_ok(y && count_of(y, "oom: true") == ooms && strstr(y, "{probe: \"gemm\", what: \"bf16 square m=2048 n=2048 "
                                                               "k=2048\", oom: true, need_bytes: 25165824"),
           "the profile has the same %d `oom: true` records", ooms);
    free(y);
    probe_run_free(&r);
    unlink(yaml);
}

static void oom_real(const char *yaml)
{
    char *argv[] = {(char *)probe, "layer", "-q", "-o", (char *)yaml, "--hidden", "4096", "--heads", "32", "--seq",
                    "2048", "--mbs", "1", "--tp", "1,8", "--mem-limit-gib", "1", NULL};
    double t0 = now_s();
    probe_run r = probe_run_cmd(argv, NULL, 300);
    tap_ok(r.status == 0, "layer h4096 --tp 1,8 --mem-limit-gib 1: exit 0 (%d, %.1f s)", r.status, now_s() - t0);
    if (r.status) tap_diag("stderr: %s", r.err);
    tap_ok(strstr(r.out, "  oom   layer hidden=4096 heads=32 seq=2048 mbs=1 tp=1 gelu: OOM at this size (needs >= ") &&
               strstr(r.out, "free on the GPU)"),
           "TP 1 (~1.4 GB of buffers) is 'OOM at this size', with the GPU's free memory");
    int tp8 = 0;
    for (const char *p = r.out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        long long h, a, s, b, t;
        if (sscanf(p, " %lld %lld %lld %lld %lld", &h, &a, &s, &b, &t) == 5 && h == 4096 && t == 8) tp8++;
    }
    tap_ok(tp8 == 1, "TP 8 (~0.35 GB) is measured after it, in what TP 1 freed");
    tap_ok(!strstr(r.out, "WRONG"), "no wrong result");
    char *y = slurp(yaml);
    tap_ok(y && strstr(y, "{probe: \"layer\", what: \"hidden=4096 heads=32 seq=2048 mbs=1 tp=1 gelu\", oom: true") &&
               strstr(y, "--mem-limit-gib 1: "),
           "the profile records it and notes the limit");
    free(y);
    probe_run_free(&r);
    unlink(yaml);
}

static void hang(int gpus)
{
    if (gpus < 2) {
        tap_ok(1, "# SKIP a hung collective needs 2 GPUs (%d here)", gpus);
        return;
    }
    /* "1": rank 1 skips its first timing launch (connections made): the others wait on the GPU;
     * "connect": it skips the very first launch: the others may wait inside NCCL, in the host */
    const char *modes[2] = {"PARPLAN_PROBE_INJECT_HANG=1", "PARPLAN_PROBE_INJECT_HANG=connect"};
    const char *where[2] = {"on the GPU", "at connection"};
    for (int m = 0; m < 2; m++) {
        char *argv[] = {(char *)probe, "nccl", "--quick", "-q", "--timeout-s", "5", NULL};
        const char *const env[] = {modes[m], NULL};
        double t0 = now_s();
        probe_run r = probe_run_cmd(argv, env, 60);
        double wall = now_s() - t0;
        tap_ok(r.status == 1, "a hang %s (%s): exit 1 (%d)", where[m], modes[m], r.status);
        tap_ok(wall < 20, "a hang %s: ended by the watchdog in %.1f s wall (timeout 5 s, limit 20 s)", where[m], wall);
        tap_ok(parplan_lines(r.err) == 1 && strstr(r.err, "parplan: collective all_reduce 1048576 bytes timed out after 5 "
                                                          "s on GPUs 0,1") && strstr(r.err, "ncclCommAbort"),
               "a hang %s: one line naming the collective, its size, the timeout, the GPUs and the abort", where[m]);
        tap_diag("%s", r.err);
        probe_run_free(&r);
    }
    /* the GPUs are not left wedged: a clean run right after */
    char *argv2[] = {(char *)probe, "nccl", "--quick", "-q", "--timeout-s", "30", NULL};
    probe_run r = probe_run_cmd(argv2, NULL, 120);
    tap_ok(r.status == 0 && strstr(r.out, "all_reduce"), "nccl --quick right after: exit 0 with figures (%d)", r.status);
    if (r.status) tap_diag("stderr: %s", r.err);
    probe_run_free(&r);
}

static void missing(int gpus)
{
    char idx[16], want[96];
    snprintf(idx, sizeof idx, "%d", gpus);
    snprintf(want, sizeof want, "GPU %d is not present (this machine has %d)", gpus, gpus);
    char *argv[] = {(char *)probe, "gemm", "--quick", "--gpu-index", idx, NULL};
    probe_run r = probe_run_cmd(argv, NULL, 60);
    tap_ok(r.status == 2 && probe_count_lines(r.err) == 1 && strstr(r.err, want) && !r.out[0],
           "--gpu-index %d: exit 2, one line '%s' (%s)", gpus, want, r.err);
    probe_run_free(&r);
}

static void busy(const char *hog)
{
    if (!hog || !*hog) {
        tap_ok(1, "# SKIP a busy GPU: no pp_gpu_hog (PARPLAN_GPU_HOG)");
        return;
    }
    int in[2], out[2];
    if (pipe(in) || pipe(out)) return;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execl(hog, hog, "0", "256", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    char line[256] = "";
    ssize_t k = read(out[0], line, sizeof line - 1);
    line[k > 0 ? k : 0] = 0;
    tap_ok(strncmp(line, "held ", 5) == 0, "pp_gpu_hog holds GPU 0: %s", line);
    char *argv[] = {(char *)probe, "gemm", "--quick", "--gpu-index", "0", NULL};
    probe_run r = probe_run_cmd(argv, NULL, 120);
    tap_ok(r.status == 1 && probe_count_lines(r.err) == 1 && strstr(r.err, "parplan: GPU 0 (") &&
               strstr(r.err, ") is busy: ") && strstr(r.err, " MiB free") && !strstr(r.out, "gemm:"),
           "a GPU held by another process: exit 1, one line naming GPU 0, its name and its free memory");
    tap_diag("%s", r.err);
    probe_run_free(&r);
    close(in[1]); /* the hog lets go */
    close(out[0]);
    int st = 0;
    waitpid(pid, &st, 0);
}

int main(void)
{
    probe = getenv("PARPLAN_PROBE_EXE");
    if (!probe || !*probe) return tap_skip_all("the GPU probes were not built (no CUDA toolkit)");
    int gpus = 0;
    {
        char *argv[] = {(char *)probe, "--count", NULL};
        probe_run r = probe_run_cmd(argv, NULL, 60);
        if (r.status == 0) gpus = atoi(r.out);
        probe_run_free(&r);
    }
    if (gpus < 1) return tap_skip_all("no CUDA GPU visible");
    tap_diag("%d GPU(s)", gpus);
    char yaml[] = "/tmp/pp_probe_faults_XXXXXX.yaml";
    int fd = mkstemps(yaml, 5);
    if (fd >= 0) close(fd);
    oom_capped(yaml);
    oom_real(yaml);
    hang(gpus);
    missing(gpus);
    busy(getenv("PARPLAN_GPU_HOG"));
    unlink(yaml);
    return tap_done();
}
