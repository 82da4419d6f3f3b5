/* plan --probe K: probe-ranked tuning, the process side. See plan_probe.h.
 *
 * What each of the K best candidates measures, and how the measurements compose its step, is
 * decided by the planner (planner/calibrate/pp_probe_plan.h); this file runs the parplan-probe calls
 * it asks for, reads their profiles back, keeps the cache file and prints.
 *
 * Measurements are cached per (GPU, shape) (planner/calibrate/probe_cache.c), saved atomically after every
 * parplan-probe call: an interrupted plan resumes, a repeated one measures nothing. SIGINT and
 * SIGTERM while probing are caught: the running parplan-probe is stopped and waited for,
 * its temporary profile removed, the cache left as the last completed call saved it (a save under
 * way completes first), "interrupted; N measurements cached, rerun resumes" printed, exit 128 +
 * the signal (130 for SIGINT). */
#include "plan_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pp_config.h"
#include "pp_probe_cache.h"
#include "pp_profile.h"
#include "pp_yaml.h"

/* Default --probe-budget: K = 8 candidates of distinct shapes take about a minute on one H200. */
#define PROBE_BUDGET_DEFAULT_S 300.0

/* The signal that asked plan --probe to stop (0: none). Set by the handlers installed for the
 * duration of pp_plan_probe_run; everything else reads it between steps. */
static volatile sig_atomic_t interrupted;
static void on_signal(int sig)
{
    if (!interrupted) interrupted = sig;
}

/* measure_*: the run was interrupted (nothing of the interrupted call is kept) */
#define MEASURE_INTERRUPTED (-2)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Run argv; stdout into out (n bytes, NUL-terminated) when out, else to /dev/null; stderr is the
 * user's. Returns the exit status, 128 + signal, or -1 when it could not start. */
static int run_probe(char *const argv[], char *out, size_t n)
{
    int pfd[2] = {-1, -1};
    if (out && pipe(pfd)) return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        if (out) {
            close(pfd[0]);
            close(pfd[1]);
        }
        return -1;
    }
    if (pid == 0) {
        int fd = out ? pfd[1] : open("/dev/null", O_WRONLY);
        if (fd >= 0) dup2(fd, STDOUT_FILENO);
        if (out) close(pfd[0]);
        execv(argv[0], argv);
        _exit(127);
    }
    size_t got = 0;
    if (out) {
        close(pfd[1]);
        for (;;) {
            ssize_t k = read(pfd[0], out + got, n - 1 - got);
            if (k < 0 && errno == EINTR && !interrupted) continue;
            if (k <= 0) break;
            got += (size_t)k;
            if (got >= n - 1) break;
        }
        out[got] = 0;
        close(pfd[0]);
    }
    /* Wait for it. Interrupted (SIGINT from the terminal reaches it too; SIGTERM or a signal sent to
     * this process alone does not): pass the signal on, and kill it if it has not ended 10 s later. */
    int status = 0;
    double t_sig = 0;
    bool passed = false;
    for (;;) {
        pid_t w = waitpid(pid, &status, interrupted ? WNOHANG : 0);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) return -1;
        if (!interrupted) continue;
        if (!passed) {
            kill(pid, interrupted);
            passed = true;
            t_sig = now_s();
        } else if (now_s() - t_sig > 10) {
            kill(pid, SIGKILL);
        }
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    if (WIFSIGNALED(status)) {
        /* the user interrupted it (Ctrl-C reached it): the whole plan stops */
        if (WTERMSIG(status) == SIGINT && !interrupted) interrupted = SIGINT;
        return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
}

int pp_plan_probe_check(pp_cli *c, pp_plan_probe_env *env)
{
    char tried[8192];
    memset(env, 0, sizeof *env);
    const char *forced = getenv("PARPLAN_PROBE");
#if !PP_HAVE_CUDA
    if (!forced || !*forced) {
        fprintf(stderr, "parplan: plan --probe needs the GPU probes, and this parplan was built without them "
                        "(reconfigure with -Dcuda=enabled, or set PARPLAN_PROBE) (plan --probe)\n");
        return 1;
    }
#endif
    (void)forced;
    if (!pp_probe_find(c->argv0, env->path, sizeof env->path, tried, sizeof tried)) {
        fprintf(stderr, "parplan: plan --probe needs parplan-probe, not found at %s (plan --probe)\n", tried);
        return 1;
    }
    char out[256];
    char *argv[] = {env->path, "--count", NULL};
    int rc = run_probe(argv, out, sizeof out);
    long n = rc == 0 ? strtol(out, NULL, 10) : 0;
    if (rc != 0 || n < 1) {
        /* parplan-probe printed why (no driver, no device) on stderr when it could */
        fprintf(stderr, "parplan: plan --probe found no CUDA GPU on this machine%s; plan without --probe to rank "
                        "by the model (plan --probe)\n",
                rc == 0 ? "" : " (parplan-probe --count failed)");
        return 1;
    }
    env->gpus = (int)n;
    return 0;
}

/* ------------------------------------------------------------------ measuring */

typedef struct {
    pp_cli *c;
    const pp_plan_probe_env *env;
    pp_probe_cache cache;
    pp_probe_session s;
    bool warned;
    int calls;
} probe_run;

/* After a parplan-probe call: the device name, and a warning if it is not the planned GPU. */
static void note_device(probe_run *pr, const pp_profile *p)
{
    if (!p->gpu[0]) return;
    const pp_gpu *g = &pr->c->work.gpu;
    pp_probe_session_device(&pr->s, p->gpu);
    if (!pr->warned && strcmp(p->gpu, g->full_name[0] ? g->full_name : g->name)) {
        fprintf(stderr, "parplan: warning: planning for %s but probing %s: the measured figures are that GPU's\n",
                g->full_name[0] ? g->full_name : g->name, p->gpu);
        pr->warned = true;
    }
}

static int tmp_profile(char *path, size_t n)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, n, "%s/parplan-probe-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    close(fd);
    return 0;
}

/* Run the call `parplan-probe <probe> -q -o TMP <options>`, read its profile back into the cache
 * (pp_probe_session_absorb) and save the cache: 0, -1 when the probe failed (warned: "parplan-probe
 * <what> failed (exit N)<consequence>"; not fatal, the candidates stay modelled),
 * MEASURE_INTERRUPTED, or an exit status after printing one line. */
static int measure(probe_run *pr, const pp_probe_call *call)
{
    char tmp[1100];
    char *argv[PP_PROBE_CALL_ARGS + 5];
    int a = 0;
    argv[a++] = (char *)pr->env->path;
    argv[a++] = (char *)call->argv[0];
    argv[a++] = "-q";
    argv[a++] = "-o";
    argv[a++] = tmp;
    for (int i = 1; i < call->argc; i++) argv[a++] = (char *)call->argv[i];
    argv[a] = NULL;
    if (tmp_profile(tmp, sizeof tmp)) {
        fprintf(stderr, "parplan: cannot create a temporary file: %s (plan --probe)\n", strerror(errno));
        return 1;
    }
    pr->calls++;
    int rc = run_probe(argv, NULL, 0);
    pp_error err = {0};
    if (interrupted) {
        remove(tmp); /* whatever it wrote is not a whole measurement */
        return MEASURE_INTERRUPTED;
    }
    if (rc != 0) {
        remove(tmp);
        fprintf(stderr, "parplan: warning: parplan-probe %s failed (exit %d)%s\n", call->argv[0], rc,
                call->consequence);
        return -1;
    }
    pp_profile p;
    if (pp_profile_load_file(&p, tmp, &err)) {
        remove(tmp);
        return pp_cli_fail(&err);
    }
    char *text = NULL;
    size_t len = 0;
    if (pp_yaml_read_file(tmp, &text, &len, &err) != PP_OK) text = NULL;
    remove(tmp);
    note_device(pr, &p);
    pp_probe_warnings warn;
    pp_status st = pp_probe_session_absorb(&pr->s, call, &p, text, &pr->cache, &warn, &err);
    for (int i = 0; i < warn.n; i++) fprintf(stderr, "parplan: warning: %s\n", warn.line[i]);
    free(text);
    pp_profile_free(&p);
    if (st || pp_probe_cache_save(&pr->cache, &err)) return pp_cli_fail(&err);
    return 0;
}

int pp_plan_probe_run(pp_cli *c, const pp_plan_probe_env *env, pp_search_candidate *cand, int64_t n,
                      pp_probe_outcome *info)
{
    pp_error err = {0};
    probe_run pr;
    memset(&pr, 0, sizeof pr);
    pr.c = c;
    pr.env = env;
    const double t0 = now_s();
    const double budget = c->probe_budget_s > 0 ? c->probe_budget_s : PROBE_BUDGET_DEFAULT_S;
    const bool progress = !c->quiet && isatty(STDERR_FILENO);
    const pp_work *w = &c->work;
    char cpath[1024];
    int rc = 0;
    pp_probe_profile prof;
    memset(&prof, 0, sizeof prof);
    struct sigaction sa, old_int, old_term;
    int64_t K = c->probe_k < n ? c->probe_k : n;
    pp_probe_plan *plans = calloc((size_t)(K > 0 ? K : 1), sizeof *plans);
    if (!plans) {
        fprintf(stderr, "parplan: out of memory (plan --probe)\n");
        return 1;
    }
    for (int64_t k = 0; k < K; k++) pp_probe_plan_make(w, &cand[k].layout, env->gpus, &plans[k]);
    pp_probe_session_start(&pr.s, w, plans, (int)K, w->gpu.full_name[0] ? w->gpu.full_name : w->gpu.name);
    if (pp_probe_cache_path(cpath, sizeof cpath, &err) || pp_probe_cache_load(&pr.cache, cpath, &err)) {
        free(plans);
        return pp_cli_fail(&err);
    }
    /* SIGINT / SIGTERM from here on: finish the step under way (a cache save completes, a running
     * probe is stopped), then stop (see the top of this file). No SA_RESTART: waitpid returns. */
    interrupted = 0;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);

    for (int64_t k = 0; k < K; k++) {
        pp_probe_outcome *in = &info[k];
        if (interrupted) goto stopped;
        pp_probe_session_begin(&pr.s, (int)k, in);
        in->model_step_s = cand[k].time.step_time_s;
        char lab[96];
        pp_layout_label(&cand[k].layout, lab, sizeof lab);
        int before = pr.calls;
        if (progress) fprintf(stderr, "parplan: probe [%lld/%lld] %s ...\n", (long long)(k + 1), (long long)K, lab);
        pp_probe_call call;
        while (pp_probe_session_next(&pr.s, &pr.cache, &call)) {
            if (now_s() - t0 > budget) {
                pr.s.out_of_budget = true;
                continue;
            }
            int m = measure(&pr, &call);
            if (m == MEASURE_INTERRUPTED || interrupted) goto stopped;
            if (m > 0) {
                rc = m;
                goto done;
            }
            if (m < 0) pp_probe_session_failed(&pr.s, &call);
        }
        in->cached = in->probed && pr.calls == before;
        if (progress)
            fprintf(stderr, "parplan: probe [%lld/%lld] %s: %s (%.0f s so far)\n", (long long)(k + 1), (long long)K, lab,
                    !in->probed ? "modelled" : in->cached ? "from the cache" : "measured", now_s() - t0);
    }
    if (interrupted) goto stopped;
    if (pr.s.out_of_budget)
        fprintf(stderr, "parplan: warning: --probe-budget of %.0f s spent: the rest keep the model's figures\n", budget);

    /* compose: the time model's schedule with the measured layer and collectives */
    if (pp_probe_profile_make(&pr.cache, pr.s.gpu, c->have_profile ? &c->profile : NULL, &prof, &err)) {
        rc = pp_cli_fail(&err);
        goto done;
    }
    for (int64_t k = 0; k < K; k++) pp_probe_compose(w, &prof.p, &cand[k].layout, &plans[k], &info[k], &cand[k].time);
    /* re-rank the probed head of the list (insertion sort; info follows) */
    for (int64_t i = 1; i < K; i++)
        for (int64_t j = i; j > 0 && pp_search_better(&cand[j], &cand[j - 1]); j--) {
            pp_search_candidate t = cand[j];
            cand[j] = cand[j - 1];
            cand[j - 1] = t;
            pp_probe_outcome ti = info[j];
            info[j] = info[j - 1];
            info[j - 1] = ti;
        }
    goto done;
stopped: {
    /* every completed call was saved whole (atomic rename); count what the cache holds for this GPU */
    int cached = 0;
    pp_probe_cache disk;
    pp_error e2 = {0};
    if (pp_probe_cache_load(&disk, cpath, &e2) == PP_OK) {
        for (int i = 0; i < disk.n; i++) cached += !strcmp(disk.e[i].gpu, pr.s.gpu);
        pp_probe_cache_free(&disk);
    }
    fprintf(stderr, "parplan: interrupted; %d measurements cached, rerun resumes (plan --probe, %s)\n", cached,
            cpath);
    rc = 128 + interrupted;
}
done:
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    pp_probe_profile_free(&prof);
    pp_probe_cache_free(&pr.cache);
    free(plans);
    return rc;
}

/* ", + 0.41 ms per layer forward for the stack, optimizer 12 ms" (what was added to the measured
 * layer, and the measured optimizer step), or "" */
static const char *stack_note(const pp_probe_outcome *in, char *buf, size_t n)
{
    buf[0] = 0;
    if (in->stack_layer_fwd_ms > 0)
        snprintf(buf, n, ", + %.3g ms per layer fwd and %.3g ms bwd for the stack", in->stack_layer_fwd_ms,
                 in->stack_layer_bwd_ms);
    if (in->optimizer_ms > 0) {
        size_t k = strlen(buf);
        snprintf(buf + k, n - k, ", optimizer step %.3g ms measured", in->optimizer_ms);
    }
    return buf;
}

/* " = attention 1.2/3.4 ms + MoE MLP (loop) 2.3/6.9 ms + the model's rest 0.05/0.1 ms; dense layers
 * 3.1/9.0 ms" (the parts of a composed layer, forward / forward+backward), or "" */
static const char *parts_note(const pp_probe_outcome *in, char *buf, size_t n)
{
    buf[0] = 0;
    if (!in->composed) return buf;
    pp_strcatf(buf, n, " =");
    if (in->attn_fwdbwd_ms > 0)
        pp_strcatf(buf, n, " %s %.3g/%.3g ms +", in->attn_mla ? "MLA block" : "attention", in->attn_fwd_ms,
             in->attn_fwdbwd_ms);
    if (in->moe_fwdbwd_ms > 0)
        pp_strcatf(buf, n, " MoE MLP (%s) %.3g/%.3g ms +", in->moe_impl, in->moe_fwd_ms, in->moe_fwdbwd_ms);
    if (in->host_fwd_ms + in->host_bwd_ms > 0)
        pp_strcatf(buf, n, " host's pace %.3g/%.3g ms +", in->host_fwd_ms, in->host_fwd_ms + in->host_bwd_ms);
    pp_strcatf(buf, n, " the model's rest %.3g/%.3g ms", in->rest_fwd_ms, in->rest_fwd_ms + in->rest_bwd_ms);
    if (in->dense_fwdbwd_ms > 0) pp_strcatf(buf, n, "; dense layers %.3g/%.3g ms", in->dense_fwd_ms, in->dense_fwdbwd_ms);
    return buf;
}

void pp_plan_probe_print(FILE *f, const pp_search_candidate *cand, int64_t n, const pp_probe_outcome *info)
{
    char note[160], parts[320], lab[96];
    fprintf(f, "\nprobe: #1-#%lld re-ranked by what this machine measured (the rest of each step is the model's; "
               "rows below them keep the model's figures):\n",
            (long long)n);
    for (int64_t k = 0; k < n; k++) {
        const pp_probe_outcome *in = &info[k];
        const pp_layout *l = &cand[k].layout;
        if (in->probed)
            fprintf(f, "  #%lld %s: layer fwd %.3g ms, fwd+bwd %.3g ms%s (%s attention, %s%s)%s; "
                       "step %.4g s (model %.4g s, %+.1f%%); modelled: %s\n",
                    (long long)(k + 1), pp_layout_label(l, lab, sizeof lab), in->layer_fwd_ms, in->layer_fwdbwd_ms, parts_note(in, parts, sizeof parts),
                    in->attention[0] ? in->attention : "no", in->device, in->cached ? ", cached" : "",
                    stack_note(in, note, sizeof note),
                    cand[k].time.step_time_s, in->model_step_s,
                    100 * (cand[k].time.step_time_s / in->model_step_s - 1), in->modelled[0] ? in->modelled : "-");
        else if (in->model_step_s > 0)
            fprintf(f, "  #%lld %s: not measured, modelled: %s\n", (long long)(k + 1), pp_layout_label(l, lab, sizeof lab),
                    in->modelled[0] ? in->modelled : "-");
    }
}
