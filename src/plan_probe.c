/* plan --probe K (issue 8): probe-ranked tuning. See plan_probe.h.
 *
 * For each of the K best candidates of the search:
 *   - its transformer layer, sharded by its TP size, at its micro-batch: forward and
 *     forward+backward on one local GPU (`parplan-probe layer --hidden .. --tp T --mbs B`);
 *   - the collectives of its groups that fit on the local GPUs (TP, DP, the PP pair):
 *     `parplan-probe nccl --gpus N` measures all_reduce / all_gather / reduce_scatter / sendrecv
 *     over a sweep of sizes; the time model then reads the bus bandwidth at the candidate's own
 *     message sizes (the TP all-reduce of s b h, the DP reduction of its gradients, the PP
 *     activations) from those measurements;
 * then the step is composed by the time model's schedule (pp_time_step: pipeline bubble, overlap
 * of the DP reduction, optimizer) with the measured layer times in place of the modelled ones.
 * What cannot be measured here is modelled and listed per candidate: groups larger than the
 * local GPUs or spanning nodes (the profile's / catalog's network figures), the optimizer step,
 * the embedding and output layer, CP/MoE layers.
 *
 * Measurements are cached per (GPU, shape) (planner/probe_cache.c), saved atomically after every
 * parplan-probe call: an interrupted plan resumes, a repeated one measures nothing. SIGINT and
 * SIGTERM while probing (issue 9) are caught: the running parplan-probe is stopped and waited for,
 * its temporary profile removed, the cache left as the last completed call saved it (a save under
 * way completes first), "interrupted; N measurements cached, rerun resumes" printed, exit 128 +
 * the signal (130 for SIGINT). */
#include "plan_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pp_calibrate.h"
#include "pp_config.h"
#include "pp_probe_cache.h"
#include "pp_profile.h"
#include "pp_time.h"
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

/* ------------------------------------------------------------------ shapes and keys */

static bool layer_probeable(const pp_work *w, const pp_layout *l, char *why, size_t n)
{
    const pp_model *m = &w->model;
    if (m->experts > 1) return snprintf(why, n, "MoE layer"), false;
    if (l->cp > 1) return snprintf(why, n, "context-parallel layer"), false;
    if (m->act == PP_ACT_RELU) return snprintf(why, n, "ReLU MLP"), false;
    if (m->head_dim * m->heads != m->hidden || m->head_dim % 8) return snprintf(why, n, "head size"), false;
    if (m->hidden > 32768) return snprintf(why, n, "hidden above 32768"), false;
    return true;
}

static void append(char *dst, size_t n, const char *what)
{
    if (strstr(dst, what)) return;
    size_t k = strlen(dst);
    snprintf(dst + k, n - k, "%s%s", k ? "; " : "", what);
}

/* The collective group sizes the candidate needs measured, and notes for what stays modelled. */
static int groups_of(const pp_work *w, const pp_layout *l, int local, int *sizes, char *modelled, size_t mn)
{
    int k = 0;
    const int64_t gpn = w->gpus_per_node > 0 ? w->gpus_per_node : 1;
    int64_t want[3] = {l->tp, l->dp * l->cp, l->pp > 1 ? 2 : 1};
    const char *what[3] = {"TP", "DP", "PP send/recv"};
    for (int i = 0; i < 3; i++) {
        int64_t g = want[i];
        if (g <= 1) continue;
        char note[160];
        /* the DP group strides over tp ranks: inside a node only when tp x dp x cp fits in it */
        bool intra = i == 0 ? g <= gpn : i == 1 ? l->tp * g <= gpn : w->gpus <= gpn;
        if (!intra) {
            snprintf(note, sizeof note, "%s across nodes (network figures)", what[i]);
            append(modelled, mn, note);
        } else if (g > local) {
            snprintf(note, sizeof note, "%s group of %lld > %d local GPUs", what[i], (long long)g, local);
            append(modelled, mn, note);
        } else {
            bool dup = false;
            for (int j = 0; j < k; j++) dup |= sizes[j] == (int)g;
            if (!dup) sizes[k++] = (int)g;
        }
    }
    return k;
}

/* ------------------------------------------------------------------ measuring */

typedef struct {
    pp_cli *c;
    const pp_plan_probe_env *env;
    pp_probe_cache cache;
    char gpu[128];             /* the cache's GPU key: the device once a probe named it */
    bool device_known, warned;
    double t0, budget;
    int calls;
    bool progress;
    char failed[64][192];      /* layer keys whose probe failed: not asked again */
    bool failed_oom[64];       /* ... because the shape ran out of GPU memory there (issue 9) */
    int n_failed;
} probe_run;

static bool failed_key(const probe_run *pr, const char *key)
{
    for (int i = 0; i < pr->n_failed; i++)
        if (!strcmp(pr->failed[i], key)) return true;
    return false;
}

static bool failed_oom(const probe_run *pr, const char *key)
{
    for (int i = 0; i < pr->n_failed; i++)
        if (!strcmp(pr->failed[i], key)) return pr->failed_oom[i];
    return false;
}

/* After a parplan-probe call: the device name, and a warning if it is not the planned GPU. */
static void note_device(probe_run *pr, const pp_profile *p)
{
    if (!p->gpu[0]) return;
    const pp_gpu *g = &pr->c->work.gpu;
    if (!pr->device_known) {
        snprintf(pr->gpu, sizeof pr->gpu, "%s", p->gpu);
        pr->device_known = true;
    }
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

/* One parplan-probe call whose profile (-o, argv[4], filled in here) is read back: 0 with *p loaded
 * (and the file's text in *text when text is not NULL: the caller frees it), -1 when the probe
 * failed (warned: "parplan-probe <what> failed (exit N)<consequence>"; not fatal, the candidates
 * stay modelled), MEASURE_INTERRUPTED, or an exit status after printing one line. argv: {path,
 * probe, "-q", "-o", NULL, ...}. */
static int probe_call(probe_run *pr, char **argv, const char *consequence, pp_profile *p, char **text)
{
    char tmp[1100];
    if (tmp_profile(tmp, sizeof tmp)) {
        fprintf(stderr, "parplan: cannot create a temporary file: %s (plan --probe)\n", strerror(errno));
        return 1;
    }
    argv[4] = tmp;
    pr->calls++;
    int rc = run_probe(argv, NULL, 0);
    pp_error err = {0};
    if (interrupted) {
        remove(tmp); /* whatever it wrote is not a whole measurement */
        return MEASURE_INTERRUPTED;
    }
    if (rc != 0) {
        remove(tmp);
        fprintf(stderr, "parplan: warning: parplan-probe %s failed (exit %d)%s\n", argv[1], rc, consequence);
        return -1;
    }
    if (pp_profile_load_file(p, tmp, &err)) {
        remove(tmp);
        return pp_cli_fail(&err);
    }
    size_t len = 0;
    if (text && pp_yaml_read_file(tmp, text, &len, &err) != PP_OK) *text = NULL;
    remove(tmp);
    note_device(pr, p);
    return 0;
}

/* Measure the layers of `keys` that share everything but tp (one parplan-probe call). */
static int measure_layers(probe_run *pr, const pp_work *w, int64_t mbs, const int64_t *tps, int ntp)
{
    const pp_model *m = &w->model;
    char nums[8][32], tplist[128] = "", consequence[192];
    for (int i = 0; i < ntp; i++) {
        size_t k = strlen(tplist);
        snprintf(tplist + k, sizeof tplist - k, "%s%lld", i ? "," : "", (long long)tps[i]);
    }
    snprintf(nums[0], 32, "%lld", (long long)m->hidden);
    snprintf(nums[1], 32, "%lld", (long long)m->heads);
    snprintf(nums[2], 32, "%lld", (long long)m->kv_heads);
    snprintf(nums[3], 32, "%lld", (long long)m->ffn);
    snprintf(nums[4], 32, "%lld", (long long)m->seq);
    snprintf(nums[5], 32, "%lld", (long long)mbs);
    char *argv[32];
    int a = 0;
    argv[a++] = (char *)pr->env->path;
    argv[a++] = "layer";
    argv[a++] = "-q";
    argv[a++] = "-o";
    argv[a++] = NULL; /* probe_call's temporary profile */
    argv[a++] = "--hidden";
    argv[a++] = nums[0];
    argv[a++] = "--heads";
    argv[a++] = nums[1];
    argv[a++] = "--kv-heads";
    argv[a++] = nums[2];
    argv[a++] = "--ffn";
    argv[a++] = nums[3];
    argv[a++] = "--seq";
    argv[a++] = nums[4];
    argv[a++] = "--mbs";
    argv[a++] = nums[5];
    argv[a++] = "--tp";
    argv[a++] = tplist;
    /* the attention the work asks: unfused (Megatron's local implementation) is measured as such;
     * flash where cuDNN builds it, else the unfused path (noted below) */
    argv[a++] = "--attention";
    argv[a++] = w->attention == PP_ATTN_UNFUSED ? "unfused" : "auto";
    if (m->act == PP_ACT_SWIGLU) argv[a++] = "--swiglu";
    argv[a] = NULL;
    snprintf(consequence, sizeof consequence, " for mbs %lld, tp %s: those candidates keep the model's figures",
             (long long)mbs, tplist);
    pp_profile p;
    pp_error err = {0};
    char *text = NULL;
    int rc = probe_call(pr, argv, consequence, &p, &text);
    if (rc) return rc;
    /* which attention the probe's layer ran: flash unless it noted that cuDNN had none */
    const char *attn = w->attention == PP_ATTN_UNFUSED ? "unfused" : "flash";
    if (text && strstr(text, "flash attention unavailable")) attn = "unfused";
    /* a TP size whose layer ran out of GPU memory in the probe (its `oom` record, issue 9): a
     * warning, and not asked again in this plan */
    for (int t = 0; text && t < ntp && pr->n_failed < 64; t++) {
        char what[160];
        snprintf(what, sizeof what, "what: \"hidden=%lld heads=%lld seq=%lld mbs=%lld tp=%lld ", (long long)m->hidden,
                 (long long)m->heads, (long long)m->seq, (long long)mbs, (long long)tps[t]);
        if (!strstr(text, what)) continue;
        pp_layout lt;
        pp_layout_init(&lt);
        lt.tp = tps[t];
        lt.mbs = mbs;
        pr->failed_oom[pr->n_failed] = true;
        pp_probe_cache_layer_key(w, &lt, pr->failed[pr->n_failed++], sizeof pr->failed[0]);
        fprintf(stderr, "parplan: warning: the layer at tp %lld, mbs %lld ran out of GPU memory on %s in the probe: "
                        "those candidates keep the model's figures\n",
                (long long)tps[t], (long long)mbs, p.gpu[0] ? p.gpu : "this GPU");
    }
    free(text);
    int rcode = 0;
    for (int i = 0; i < p.n_layer; i++) {
        const pp_prof_layer *r = &p.layer[i];
        if (r->hidden != m->hidden || r->heads != m->heads || r->seq != m->seq || r->mbs != mbs) continue;
        pp_layout l;
        pp_layout_init(&l);
        l.tp = r->tp;
        l.mbs = mbs;
        pp_probe_cache_entry e;
        memset(&e, 0, sizeof e);
        snprintf(e.gpu, sizeof e.gpu, "%s", pr->gpu);
        pp_probe_cache_layer_key(w, &l, e.key, sizeof e.key);
        e.a = r->fwd_ms;
        e.b = r->fwdbwd_ms;
        snprintf(e.note, sizeof e.note, "%s", attn);
        if (pp_probe_cache_put(&pr->cache, &e, &err)) {
            rcode = pp_cli_fail(&err);
            break;
        }
    }
    pp_profile_free(&p);
    if (!rcode && pp_probe_cache_save(&pr->cache, &err)) rcode = pp_cli_fail(&err);
    return rcode;
}

static int measure_nccl(probe_run *pr, int ranks)
{
    char num[32], consequence[96];
    snprintf(num, sizeof num, "%d", ranks);
    snprintf(consequence, sizeof consequence, " on %d GPUs: its collectives keep the model's figures", ranks);
    char *argv[] = {(char *)pr->env->path, "nccl", "-q", "-o", NULL, "--gpus", num, NULL};
    pp_profile p;
    pp_error err = {0};
    int rc = probe_call(pr, argv, consequence, &p, NULL);
    if (rc) return rc;
    int rcode = 0;
    pp_probe_cache_entry e;
    for (int i = 0; i < p.n_nccl && !rcode; i++) {
        const pp_prof_nccl *r = &p.nccl[i];
        memset(&e, 0, sizeof e);
        snprintf(e.gpu, sizeof e.gpu, "%s", pr->gpu);
        snprintf(e.key, sizeof e.key, "nccl %s n%lld b%.0f", pp_coll_names[r->op], (long long)r->ranks, r->bytes);
        e.a = r->busbw_gbs;
        if (pp_probe_cache_put(&pr->cache, &e, &err)) rcode = pp_cli_fail(&err);
    }
    /* the sweep of this size is complete (even if NCCL measured nothing usable) */
    memset(&e, 0, sizeof e);
    snprintf(e.gpu, sizeof e.gpu, "%s", pr->gpu);
    snprintf(e.key, sizeof e.key, "nccl n%d", ranks);
    e.a = p.n_nccl;
    if (!rcode && pp_probe_cache_put(&pr->cache, &e, &err)) rcode = pp_cli_fail(&err);
    pp_profile_free(&p);
    if (!rcode && pp_probe_cache_save(&pr->cache, &err)) rcode = pp_cli_fail(&err);
    return rcode;
}

/* The optimizer step: one parplan-probe call times a fused mixed-precision AdamW step (fp32 master
 * weights, grads and moments, the bf16 copy written back: Megatron's Float16Optimizer) at these
 * sizes; a candidate's step over its shard of the parameters is read from them
 * (pp_profile_optimizer_s: interpolated, the rate of the largest beyond it). */
#define OPT_SWEEP "10000000,100000000,1000000000"

static int measure_optimizer(probe_run *pr)
{
    char *argv[] = {(char *)pr->env->path, "optimizer", "-q", "-o", NULL, "--params", OPT_SWEEP, NULL};
    pp_profile p;
    pp_error err = {0};
    int rc = probe_call(pr, argv, ": the optimizer step keeps the model's figure", &p, NULL);
    if (rc) return rc;
    int rcode = 0;
    pp_probe_cache_entry e;
    for (int i = 0; i < p.n_optimizer && !rcode; i++) {
        memset(&e, 0, sizeof e);
        snprintf(e.gpu, sizeof e.gpu, "%s", pr->gpu);
        snprintf(e.key, sizeof e.key, "optimizer p%.0f", p.optimizer[i].params);
        e.a = p.optimizer[i].ms;
        e.b = p.optimizer[i].bytes_per_param;
        if (pp_probe_cache_put(&pr->cache, &e, &err)) rcode = pp_cli_fail(&err);
    }
    memset(&e, 0, sizeof e);
    snprintf(e.gpu, sizeof e.gpu, "%s", pr->gpu);
    snprintf(e.key, sizeof e.key, "optimizer sweep");
    e.a = p.n_optimizer;
    if (!rcode && pp_probe_cache_put(&pr->cache, &e, &err)) rcode = pp_cli_fail(&err);
    pp_profile_free(&p);
    if (!rcode && pp_probe_cache_save(&pr->cache, &err)) rcode = pp_cli_fail(&err);
    return rcode;
}

/* The measured collectives of the cache as profile records (plus the base profile's records of
 * the (op, ranks) pairs not measured here). *owned: the array to free. */
static pp_status probe_profile(const probe_run *pr, const pp_profile *base, pp_profile *out, pp_prof_nccl **owned,
                               pp_prof_optimizer **owned_opt, pp_error *err)
{
    if (base) *out = *base;
    else memset(out, 0, sizeof *out);
    int nb = base ? base->n_nccl : 0;
    pp_prof_nccl *arr = calloc((size_t)(pr->cache.n + nb + 1), sizeof *arr);
    if (!arr) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    int n = 0;
    for (int i = 0; i < pr->cache.n; i++) {
        const pp_probe_cache_entry *e = &pr->cache.e[i];
        char op[32];
        long long ranks;
        double bytes;
        if (strcmp(e->gpu, pr->gpu) || sscanf(e->key, "nccl %31s n%lld b%lf", op, &ranks, &bytes) != 3) continue;
        int o = pp_name_lookup(pp_coll_names, PP_COLL_COUNT, op);
        if (o < 0 || !(e->a > 0)) continue;
        arr[n++] = (pp_prof_nccl){(pp_coll)o, ranks, bytes, e->a};
    }
    int measured = n;
    for (int i = 0; i < nb; i++) {
        bool have = false;
        for (int j = 0; j < measured; j++) have |= arr[j].op == base->nccl[i].op && arr[j].ranks == base->nccl[i].ranks;
        if (!have) arr[n++] = base->nccl[i];
    }
    out->nccl = arr;
    out->n_nccl = n;
    *owned = arr;
    /* the measured optimizer steps (only these: the base profile's would describe another run) */
    pp_status st = pp_probe_cache_optimizer_rows(&pr->cache, pr->gpu, owned_opt, &out->n_optimizer, err);
    out->optimizer = *owned_opt;
    return st;
}

int pp_plan_probe_run(pp_cli *c, const pp_plan_probe_env *env, pp_search_candidate *cand, int64_t n,
                      pp_plan_probe_info *info)
{
    pp_error err = {0};
    probe_run pr;
    memset(&pr, 0, sizeof pr);
    pr.c = c;
    pr.env = env;
    pr.t0 = now_s();
    pr.budget = c->probe_budget_s > 0 ? c->probe_budget_s : PROBE_BUDGET_DEFAULT_S;
    pr.progress = !c->quiet && isatty(STDERR_FILENO);
    const pp_work *w = &c->work;
    snprintf(pr.gpu, sizeof pr.gpu, "%s", w->gpu.full_name[0] ? w->gpu.full_name : w->gpu.name);
    char cpath[1024];
    int rc = 0;
    pp_prof_nccl *owned = NULL;
    pp_prof_optimizer *owned_opt = NULL;
    bool opt_failed = false;
    struct sigaction sa, old_int, old_term;
    if (pp_probe_cache_path(cpath, sizeof cpath, &err) || pp_probe_cache_load(&pr.cache, cpath, &err))
        return pp_cli_fail(&err);
    /* SIGINT / SIGTERM from here on: finish the step under way (a cache save completes, a running
     * probe is stopped), then stop (see the top of this file). No SA_RESTART: waitpid returns. */
    interrupted = 0;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    int64_t K = c->probe_k < n ? c->probe_k : n;
    bool out_of_budget = false;

    for (int64_t k = 0; k < K; k++) {
        pp_plan_probe_info *in = &info[k];
        if (interrupted) goto stopped;
        memset(in, 0, sizeof *in);
        in->model_step_s = cand[k].time.step_time_s;
        const pp_layout *l = &cand[k].layout;
        char lab[64];
        snprintf(lab, sizeof lab, "tp%lld pp%lld dp%lld mbs%lld", (long long)l->tp, (long long)l->pp, (long long)l->dp,
                 (long long)l->mbs);
        int sizes[3];
        int ns = groups_of(w, l, env->gpus, sizes, in->modelled, sizeof in->modelled);
        char why[64], key[192];
        bool can_layer = layer_probeable(w, l, why, sizeof why);
        int before = pr.calls;
        if (pr.progress)
            fprintf(stderr, "parplan: probe [%lld/%lld] %s ...\n", (long long)(k + 1), (long long)K, lab);
        /* collectives */
        for (int i = 0; i < ns && !out_of_budget; i++) {
            char mk[32];
            snprintf(mk, sizeof mk, "nccl n%d", sizes[i]);
            if (pp_probe_cache_get(&pr.cache, pr.gpu, mk)) continue;
            if (now_s() - pr.t0 > pr.budget) {
                out_of_budget = true;
                break;
            }
            int m = measure_nccl(&pr, sizes[i]);
            if (m == MEASURE_INTERRUPTED || interrupted) goto stopped;
            if (m > 0) {
                rc = m;
                goto done;
            }
            if (m < 0) {
                char note[96];
                snprintf(note, sizeof note, "collectives over %d GPUs (the probe failed)", sizes[i]);
                append(in->modelled, sizeof in->modelled, note);
            }
        }
        /* the optimizer step (one sweep per GPU, cached) */
        if (l->offload == PP_OFF_NONE && !opt_failed && !out_of_budget &&
            !pp_probe_cache_get(&pr.cache, pr.gpu, "optimizer sweep")) {
            if (now_s() - pr.t0 > pr.budget) {
                out_of_budget = true;
            } else {
                int m = measure_optimizer(&pr);
                if (m == MEASURE_INTERRUPTED || interrupted) goto stopped;
                if (m > 0) {
                    rc = m;
                    goto done;
                }
                opt_failed = m < 0;
            }
        }
        /* the layer: this candidate's tp, and those of the later candidates of the same shape and
         * micro-batch, in one call */
        if (can_layer) {
            pp_probe_cache_layer_key(w, l, key, sizeof key);
            if (!pp_probe_cache_get(&pr.cache, pr.gpu, key) && !out_of_budget && !failed_key(&pr, key)) {
                if (now_s() - pr.t0 > pr.budget) {
                    out_of_budget = true;
                } else {
                    int64_t tps[8];
                    int ntp = 0;
                    for (int64_t j = k; j < K && ntp < 8; j++) {
                        const pp_layout *lj = &cand[j].layout;
                        char kj[192];
                        if (lj->mbs != l->mbs || !layer_probeable(w, lj, why, sizeof why)) continue;
                        pp_probe_cache_layer_key(w, lj, kj, sizeof kj);
                        bool dup = false;
                        for (int t = 0; t < ntp; t++) dup |= tps[t] == lj->tp;
                        if (!dup && !pp_probe_cache_get(&pr.cache, pr.gpu, kj) && !failed_key(&pr, kj))
                            tps[ntp++] = lj->tp;
                    }
                    int m = measure_layers(&pr, w, l->mbs, tps, ntp);
                    if (m == MEASURE_INTERRUPTED || interrupted) goto stopped;
                    if (m > 0) {
                        rc = m;
                        goto done;
                    }
                    if (m < 0)
                        for (int t = 0; t < ntp && pr.n_failed < 64; t++) {
                            pp_layout lt = *l;
                            lt.tp = tps[t];
                            pp_probe_cache_layer_key(w, &lt, pr.failed[pr.n_failed++], sizeof pr.failed[0]);
                        }
                    pp_probe_cache_layer_key(w, l, key, sizeof key); /* the cache key may have moved to the device */
                }
            }
            const pp_probe_cache_entry *e = pp_probe_cache_get(&pr.cache, pr.gpu, key);
            if (e) {
                in->probed = true;
                in->layer_fwd_ms = e->a;
                in->layer_fwdbwd_ms = e->b;
                snprintf(in->attention, sizeof in->attention, "%.15s", e->note);
                snprintf(in->device, sizeof in->device, "%s", e->gpu);
            } else if (failed_oom(&pr, key)) {
                append(in->modelled, sizeof in->modelled, "layer (out of GPU memory in the probe at this size)");
            } else if (failed_key(&pr, key)) {
                append(in->modelled, sizeof in->modelled, "layer (the probe failed)");
            } else if (out_of_budget) {
                append(in->modelled, sizeof in->modelled, "layer (--probe-budget spent)");
            } else {
                append(in->modelled, sizeof in->modelled, "layer (the probe returned no figure for this shape)");
            }
        } else {
            char note[96];
            snprintf(note, sizeof note, "layer (%s: no layer probe)", why);
            append(in->modelled, sizeof in->modelled, note);
        }
        in->cached = in->probed && pr.calls == before;
        if (pr.progress)
            fprintf(stderr, "parplan: probe [%lld/%lld] %s: %s (%.0f s so far)\n", (long long)(k + 1), (long long)K, lab,
                    !in->probed ? "modelled" : in->cached ? "from the cache" : "measured", now_s() - pr.t0);
    }
    if (interrupted) goto stopped;
    if (out_of_budget)
        fprintf(stderr, "parplan: warning: --probe-budget of %.0f s spent: the rest keep the model's figures\n",
                pr.budget);

    /* compose: the time model's schedule with the measured layer and collectives */
    pp_profile prof;
    if ((rc = probe_profile(&pr, c->have_profile ? &c->profile : NULL, &prof, &owned, &owned_opt, &err)
                  ? pp_cli_fail(&err)
                  : 0))
        goto done;
    /* The software stack's own costs, which a CUDA probe does not run (kernel launches, Python
     * dispatch, an unfused attention's separate kernels), come from the profile's calibration
     * fitted on top of measured layers (`calibrate --probe-cache`: probe_calibration), else from
     * its calibration of the model (whose GEMM and elementwise factors also absorbed the model's
     * own errors: about +5% on the H200 logs of tests/data/calibrate/probe). */
    const pp_calibration *cal = prof.probe_calibration.present ? &prof.probe_calibration
                                : prof.calibration.present     ? &prof.calibration
                                                               : NULL;
    pp_work wp = *w;
    wp.profile = &prof;
    pp_time_opts o;
    pp_time_opts_default(&wp, &o);
    for (int64_t k = 0; k < K; k++) {
        pp_plan_probe_info *in = &info[k];
        if (!in->probed) continue;
        pp_time_result t;
        pp_time_measured mi;
        pp_time_step_measured(&wp, &cand[k].layout, &o, cal, in->layer_fwd_ms * 1e-3, in->layer_fwdbwd_ms * 1e-3, &t,
                              &mi);
        if (!isfinite(t.step_time_s) || t.step_time_s <= 0) {
            in->probed = false;
            append(in->modelled, sizeof in->modelled, "step (the measured figures gave no finite time)");
            continue;
        }
        in->stack_layer_fwd_ms = mi.stack_fwd_s * 1e3;
        in->stack_layer_bwd_ms = mi.stack_bwd_s * 1e3;
        in->optimizer_ms = mi.optimizer_meas_s * 1e3;
        cand[k].time = t;
        if (!(mi.optimizer_meas_s > 0)) append(in->modelled, sizeof in->modelled, "optimizer");
        append(in->modelled, sizeof in->modelled, "embedding and output layer");
        if (cal)
            append(in->modelled, sizeof in->modelled,
                   cal == &prof.probe_calibration
                       ? "the stack's per-layer overhead and optimizer scale (probe calibration)"
                       : "the stack's per-layer overhead and optimizer scale (the model's calibration)");
        if (strcmp(in->attention, pp_attention_names[w->attention])) {
            char note[96];
            snprintf(note, sizeof note, "the probe's layer ran %s attention, the work asks %s", in->attention,
                     pp_attention_names[w->attention]);
            append(in->modelled, sizeof in->modelled, note);
        }
    }
    /* re-rank the probed head of the list (insertion sort; info follows) */
    for (int64_t i = 1; i < K; i++)
        for (int64_t j = i; j > 0 && pp_search_better(&cand[j], &cand[j - 1]); j--) {
            pp_search_candidate t = cand[j];
            cand[j] = cand[j - 1];
            cand[j - 1] = t;
            pp_plan_probe_info ti = info[j];
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
        for (int i = 0; i < disk.n; i++) cached += !strcmp(disk.e[i].gpu, pr.gpu);
        pp_probe_cache_free(&disk);
    }
    fprintf(stderr, "parplan: interrupted; %d measurements cached, rerun resumes (plan --probe, %s)\n", cached,
            cpath);
    rc = 128 + interrupted;
}
done:
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    free(owned);
    free(owned_opt);
    pp_probe_cache_free(&pr.cache);
    return rc;
}

/* ", + 0.41 ms per layer forward for the stack, optimizer 12 ms" (what was added to the measured
 * layer, and the measured optimizer step), or "" */
static const char *stack_note(const pp_plan_probe_info *in, char *buf, size_t n)
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

void pp_plan_probe_print(FILE *f, const pp_search_candidate *cand, int64_t n, const pp_plan_probe_info *info)
{
    char note[160];
    fprintf(f, "\nprobe: #1-#%lld re-ranked by what this machine measured (the rest of each step is the model's; "
               "rows below them keep the model's figures):\n",
            (long long)n);
    for (int64_t k = 0; k < n; k++) {
        const pp_plan_probe_info *in = &info[k];
        const pp_layout *l = &cand[k].layout;
        if (in->probed)
            fprintf(f, "  #%lld tp%lld pp%lld dp%lld mbs%lld: layer fwd %.3g ms, fwd+bwd %.3g ms (%s attention, %s%s)%s; "
                       "step %.4g s (model %.4g s, %+.1f%%); modelled: %s\n",
                    (long long)(k + 1), (long long)l->tp, (long long)l->pp, (long long)l->dp, (long long)l->mbs,
                    in->layer_fwd_ms, in->layer_fwdbwd_ms, in->attention, in->device, in->cached ? ", cached" : "",
                    stack_note(in, note, sizeof note),
                    cand[k].time.step_time_s, in->model_step_s,
                    100 * (cand[k].time.step_time_s / in->model_step_s - 1), in->modelled[0] ? in->modelled : "-");
        else if (in->model_step_s > 0)
            fprintf(f, "  #%lld tp%lld pp%lld dp%lld mbs%lld: not measured, modelled: %s\n", (long long)(k + 1),
                    (long long)l->tp, (long long)l->pp, (long long)l->dp, (long long)l->mbs,
                    in->modelled[0] ? in->modelled : "-");
    }
}
