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
 *   - an MoE or MLA layout's layer in parts, as the layout runs it: the attention with its norms and
 *     residual adds (`parplan-probe layer --no-mlp`, or `parplan-probe mla` for latent attention,
 *     at the candidate's TP), the MoE MLP (`parplan-probe moe` at the rank's tokens, local experts,
 *     expert-TP shard, shared experts; looped or grouped as the stack says: pp_probe_moe_shape_of),
 *     and the model's dense layers whole (`layer` at the dense FFN); the parts replace the time
 *     model's figures of the same parts (pp_time_layer_compose); the EP all-to-all and expert-TP
 *     collectives are priced from the nccl probe's rows of their group sizes where they are local;
 * then the step is composed by the time model's schedule (pp_time_step: pipeline bubble, overlap
 * of the DP reduction, optimizer) with the measured layer times in place of the modelled ones
 * (pp_time_step_measured_kinds: a figure per layer kind).
 * What cannot be measured here is modelled and listed per candidate: groups larger than the
 * local GPUs or spanning nodes (the profile's / catalog's network figures), the optimizer step,
 * the embedding and output layer, CP layers, the parts of a layer a probe could not run.
 *
 * Measurements are cached per (GPU, shape) (planner/calibrate/probe_cache.c), saved atomically after every
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

/* The attention of the layer probe: heads of the model's head size (--head-dim where heads x head
 * size is not the hidden size), no CP. */
static bool heads_probeable(const pp_work *w, const pp_layout *l, char *why, size_t n)
{
    const pp_model *m = &w->model;
    if (l->cp > 1) return snprintf(why, n, "context-parallel layer"), false;
    if (m->head_dim < 8 || m->head_dim % 8) return snprintf(why, n, "head size"), false;
    if (m->hidden > 32768) return snprintf(why, n, "hidden above 32768"), false;
    return true;
}

/* The whole layer at the model's dense MLP (a dense model's layer, an MoE model's dense layers). */
static bool dense_probeable(const pp_work *w, const pp_layout *l, char *why, size_t n)
{
    const pp_model *m = &w->model;
    if (l->cp > 1) return snprintf(why, n, "context-parallel layer"), false;
    if (m->act == PP_ACT_RELU) return snprintf(why, n, "ReLU MLP"), false;
    return heads_probeable(w, l, why, n);
}

static bool layer_probeable(const pp_work *w, const pp_layout *l, char *why, size_t n)
{
    if (w->model.experts > 1) return snprintf(why, n, "MoE layer"), false;
    return dense_probeable(w, l, why, n);
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
    /* MoE: the EP all-to-all (ranks etp apart in Megatron's expert grid) and the expert-TP gathers
     * (time.c layer_terms) read the all_to_all / all_gather / reduce_scatter rows of these sizes */
    const bool moe = pp_model_is_moe(&w->model);
    const int64_t etp = pp_layout_etp(l);
    int64_t want[5] = {l->tp, l->dp * l->cp, l->pp > 1 ? 2 : 1, moe ? l->ep : 1, moe ? etp : 1};
    const char *what[5] = {"TP", "DP", "PP send/recv", "EP all-to-all", "expert-TP"};
    for (int i = 0; i < 5; i++) {
        int64_t g = want[i];
        if (g <= 1) continue;
        char note[160];
        /* the DP group strides over tp ranks: inside a node only when tp x dp x cp fits in it */
        bool intra = i == 0 || i == 4 ? g <= gpn : i == 1 ? l->tp * g <= gpn : i == 3 ? etp * g <= gpn : w->gpus <= gpn;
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

/* The parts of a candidate's layers that parplan-probe measures apart: the whole layer at the
 * model's dense MLP (a dense model's layer; an MoE model's dense layers), the layer without its MLP
 * (an MoE layer's attention, norms and residual adds), the MLA block, the MoE MLP. */
enum { PART_LAYER = 0, PART_ATTN, PART_MLA, PART_MOE, PART_COUNT };

typedef struct {
    bool need[PART_COUNT];
    char key[PART_COUNT][192];
    pp_probe_moe_shape moe;
    pp_probe_mla_shape mla;
    int kind_main;            /* the kind the parts compose (that of the last layer) */
    int kind_dense;           /* an MoE model's dense layers of the same attention span; -1: none */
} cand_parts;

static const char *part_name(const pp_work *w, int p)
{
    static const char *const names[PART_COUNT] = {"layer", "attention (the layer without its MLP)", "MLA attention",
                                                  "MoE MLP"};
    return p == PART_LAYER && pp_model_is_moe(&w->model) ? "dense layers" : names[p];
}

/* What to measure of layout l, and notes for what stays modelled (whole-layer notes as before for
 * dense models). */
static void parts_of(const pp_work *w, const pp_layout *l, cand_parts *cp, char *modelled, size_t mn)
{
    const pp_model *m = &w->model;
    char why[128], note[256];
    memset(cp, 0, sizeof *cp);
    cp->kind_main = m->layers > 0 ? pp_model_layer_kind(m, m->layers - 1) : 0;
    cp->kind_dense = -1;
    const bool moe = pp_model_is_moe(m), mla = pp_model_is_mla(m);
    if (moe) {
        int64_t counts[PP_LAYER_KINDS];
        pp_model_layer_counts(m, 0, m->layers, counts);
        int kd = cp->kind_main & ~PP_LAYER_MOE;
        if (counts[kd] > 0) cp->kind_dense = kd;
    }
    if (!moe && !mla) {
        if (layer_probeable(w, l, why, sizeof why)) {
            cp->need[PART_LAYER] = true;
        } else {
            snprintf(note, sizeof note, "layer (%s: no layer probe)", why);
            append(modelled, mn, note);
        }
    } else if (l->cp > 1) {
        append(modelled, mn, "layer (context-parallel layer: no layer probe)");
    } else {
        if (mla) {
            if (pp_probe_mla_shape_of(w, l, &cp->mla, why, sizeof why)) {
                cp->need[PART_MLA] = true;
                append(modelled, mn, "the norms and residual adds around the MLA block");
            } else {
                snprintf(note, sizeof note, "MLA attention (%s: no mla probe)", why);
                append(modelled, mn, note);
            }
        } else if (heads_probeable(w, l, why, sizeof why)) {
            cp->need[PART_ATTN] = true;
        } else {
            snprintf(note, sizeof note, "attention (%s: no layer probe)", why);
            append(modelled, mn, note);
        }
        if (moe) {
            if (pp_probe_moe_shape_of(w, l, &cp->moe, why, sizeof why)) {
                cp->need[PART_MOE] = true;
                if (cp->moe.shared_modelled) {
                    snprintf(note, sizeof note, "shared experts (they run on %lld tokens, the probe's experts on %lld)",
                             (long long)(l->mbs * m->seq / (l->cp > 0 ? l->cp : 1)), (long long)cp->moe.tokens);
                    append(modelled, mn, note);
                }
            } else {
                snprintf(note, sizeof note, "MoE MLP (%s: no moe probe)", why);
                append(modelled, mn, note);
            }
        }
        if (cp->kind_dense >= 0) {
            if (!mla && dense_probeable(w, l, why, sizeof why)) {
                cp->need[PART_LAYER] = true;
            } else if (mla) {
                append(modelled, mn, "the dense layers' MLP");
            } else {
                snprintf(note, sizeof note, "dense layers (%s: no layer probe)", why);
                append(modelled, mn, note);
            }
        }
    }
    if (cp->need[PART_LAYER]) pp_probe_cache_layer_key(w, l, cp->key[PART_LAYER], sizeof cp->key[0]);
    if (cp->need[PART_ATTN]) pp_probe_cache_layer_key_ffn(w, l, 0, cp->key[PART_ATTN], sizeof cp->key[0]);
    if (cp->need[PART_MLA]) pp_probe_cache_mla_key(w, &cp->mla, cp->key[PART_MLA], sizeof cp->key[0]);
    if (cp->need[PART_MOE]) pp_probe_cache_moe_key(&cp->moe, cp->key[PART_MOE], sizeof cp->key[0]);
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

/* "1,2,4": the values of a parplan-probe list option */
static const char *list_of(const int64_t *v, int n, char *buf, size_t bn)
{
    buf[0] = 0;
    for (int i = 0; i < n; i++) pp_strcatf(buf, bn, "%s%lld", i ? "," : "", (long long)v[i]);
    return buf;
}

/* argv = {parplan-probe, probe, -q, -o, NULL (probe_call's temporary profile), flag[i] v[i]...};
 * nums holds the numbers' text. Returns the arguments written. */
static int probe_argv(const probe_run *pr, char **argv, const char *probe, const char *const *flag, const int64_t *v,
                      int nv, char nums[][32])
{
    int a = 0;
    argv[a++] = (char *)pr->env->path;
    argv[a++] = (char *)probe;
    argv[a++] = "-q";
    argv[a++] = "-o";
    argv[a++] = NULL;
    for (int i = 0; i < nv; i++) {
        snprintf(nums[i], 32, "%lld", (long long)v[i]);
        argv[a++] = (char *)flag[i];
        argv[a++] = nums[i];
    }
    return a;
}

/* Measure the layers of the model at micro-batch mbs and the TP sizes tps (one parplan-probe call):
 * with an MLP of ffn (the model's dense one), or without it (ffn 0: --no-mlp). */
static int measure_layers(probe_run *pr, const pp_work *w, int64_t mbs, const int64_t *tps, int ntp, int64_t ffn)
{
    const pp_model *m = &w->model;
    char nums[8][32], tplist[128], consequence[192];
    list_of(tps, ntp, tplist, sizeof tplist);
    int64_t v[7] = {m->hidden, m->heads, m->kv_heads, m->seq, mbs};
    const char *flag[7] = {"--hidden", "--heads", "--kv-heads", "--seq", "--mbs"};
    int nv = 5;
    if (ffn > 0) flag[nv] = "--ffn", v[nv++] = ffn;
    /* heads wider than hidden / heads (Qwen3: 32 x 128 over 2048) */
    if (m->head_dim * m->heads != m->hidden) flag[nv] = "--head-dim", v[nv++] = m->head_dim;
    char *argv[32];
    int a = probe_argv(pr, argv, "layer", flag, v, nv, nums);
    if (ffn <= 0) argv[a++] = "--no-mlp";
    argv[a++] = "--tp";
    argv[a++] = tplist;
    /* the attention the work asks: unfused (Megatron's local implementation) is measured as such;
     * flash where cuDNN builds it, else the unfused path (noted below) */
    argv[a++] = "--attention";
    argv[a++] = w->attention == PP_ATTN_UNFUSED ? "unfused" : "auto";
    if (ffn > 0 && m->act == PP_ACT_SWIGLU) argv[a++] = "--swiglu";
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
        pp_probe_cache_layer_key_ffn(w, &lt, ffn, pr->failed[pr->n_failed++], sizeof pr->failed[0]);
        fprintf(stderr, "parplan: warning: the layer%s at tp %lld, mbs %lld ran out of GPU memory on %s in the probe: "
                        "those candidates keep the model's figures\n",
                ffn > 0 ? "" : " without its MLP", (long long)tps[t], (long long)mbs, p.gpu[0] ? p.gpu : "this GPU");
    }
    free(text);
    int rcode = 0;
    for (int i = 0; i < p.n_layer; i++) {
        const pp_prof_layer *r = &p.layer[i];
        if (r->hidden != m->hidden || r->heads != m->heads || r->seq != m->seq || r->mbs != mbs ||
            r->no_mlp != (ffn <= 0))
            continue;
        pp_layout l;
        pp_layout_init(&l);
        l.tp = r->tp;
        l.mbs = mbs;
        pp_probe_cache_entry e;
        memset(&e, 0, sizeof e);
        snprintf(e.gpu, sizeof e.gpu, "%s", pr->gpu);
        pp_probe_cache_layer_key_ffn(w, &l, ffn, e.key, sizeof e.key);
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

/* The MLA block at micro-batch mbs and the TP sizes tps (one parplan-probe mla call). */
static int measure_mla(probe_run *pr, const pp_work *w, const pp_probe_mla_shape *sh, const int64_t *tps, int ntp)
{
    char nums[10][32], tplist[128], consequence[192];
    list_of(tps, ntp, tplist, sizeof tplist);
    const int64_t v[9] = {sh->hidden,      sh->heads,       sh->q_lora_rank, sh->kv_lora_rank, sh->qk_nope_dim,
                          sh->qk_rope_dim, sh->v_head_dim,  sh->seq,         sh->mbs};
    const char *flag[9] = {"--hidden",      "--heads",      "--q-lora-rank", "--kv-lora-rank", "--qk-nope-dim",
                           "--qk-rope-dim", "--v-head-dim", "--seq",         "--mbs"};
    char *argv[32];
    int a = probe_argv(pr, argv, "mla", flag, v, 9, nums);
    argv[a++] = "--tp";
    argv[a++] = tplist;
    argv[a++] = "--attention";
    argv[a++] = w->attention == PP_ATTN_UNFUSED ? "unfused" : "auto";
    argv[a] = NULL;
    snprintf(consequence, sizeof consequence,
             " for mbs %lld, tp %s: those candidates keep the model's attention figures", (long long)sh->mbs, tplist);
    pp_profile p;
    pp_error err = {0};
    char *text = NULL;
    int rc = probe_call(pr, argv, consequence, &p, &text);
    if (rc) return rc;
    for (int t = 0; text && t < ntp && pr->n_failed < 64; t++) {
        char what[200];
        snprintf(what, sizeof what, "what: \"hidden=%lld heads=%lld q_lora=%lld kv_lora=%lld seq=%lld mbs=%lld tp=%lld\"",
                 (long long)sh->hidden, (long long)sh->heads, (long long)sh->q_lora_rank, (long long)sh->kv_lora_rank,
                 (long long)sh->seq, (long long)sh->mbs, (long long)tps[t]);
        if (!strstr(text, what)) continue;
        pp_probe_mla_shape st = *sh;
        st.tp = tps[t];
        pr->failed_oom[pr->n_failed] = true;
        pp_probe_cache_mla_key(w, &st, pr->failed[pr->n_failed++], sizeof pr->failed[0]);
        fprintf(stderr, "parplan: warning: the MLA block at tp %lld, mbs %lld ran out of GPU memory on %s in the probe: "
                        "those candidates keep the model's figures\n",
                (long long)tps[t], (long long)sh->mbs, p.gpu[0] ? p.gpu : "this GPU");
    }
    free(text);
    int rcode = 0;
    for (int i = 0; i < p.n_mla && !rcode; i++) {
        const pp_prof_mla *r = &p.mla[i];
        if (r->hidden != sh->hidden || r->heads != sh->heads || r->q_lora_rank != sh->q_lora_rank ||
            r->kv_lora_rank != sh->kv_lora_rank || r->seq != sh->seq || r->mbs != sh->mbs)
            continue;
        pp_probe_mla_shape st = *sh;
        st.tp = r->tp;
        pp_probe_cache_entry e;
        memset(&e, 0, sizeof e);
        snprintf(e.gpu, sizeof e.gpu, "%s", pr->gpu);
        pp_probe_cache_mla_key(w, &st, e.key, sizeof e.key);
        e.a = r->fwd_ms;
        e.b = r->fwdbwd_ms;
        snprintf(e.note, sizeof e.note, "%s", r->flash ? "flash" : "unfused");
        if (pp_probe_cache_put(&pr->cache, &e, &err)) rcode = pp_cli_fail(&err);
    }
    pp_profile_free(&p);
    if (!rcode && pp_probe_cache_save(&pr->cache, &err)) rcode = pp_cli_fail(&err);
    return rcode;
}

/* The MoE MLP of shape sh at the token counts toks (one parplan-probe moe call). Cached per token
 * count: the layer, and its routed experts' own parts (fc1, activation, fc2; the whole layer when
 * the probe could not time its parts) for the host's pace. */
static int measure_moe(probe_run *pr, const pp_probe_moe_shape *sh, const int64_t *toks, int ntok)
{
    char nums[6][32], toklist[160], consequence[192];
    list_of(toks, ntok, toklist, sizeof toklist);
    const int64_t v[6] = {sh->hidden, sh->experts, sh->topk, sh->moe_ffn, sh->ep, sh->shared_ffn};
    const char *flag[6] = {"--hidden", "--experts", "--topk", "--moe-ffn", "--ep", "--shared-ffn"};
    char *argv[32];
    int a = probe_argv(pr, argv, "moe", flag, v, sh->shared_ffn > 0 ? 6 : 5, nums);
    argv[a++] = "--tokens";
    argv[a++] = toklist;
    argv[a++] = "--moe-impl";
    argv[a++] = sh->grouped ? "grouped" : "loop";
    argv[a] = NULL;
    snprintf(consequence, sizeof consequence,
             " for %lld tokens per rank (%s): those candidates keep the model's MoE figures", (long long)toks[0],
             toklist);
    pp_profile p;
    pp_error err = {0};
    char *text = NULL;
    int rc = probe_call(pr, argv, consequence, &p, &text);
    if (rc) return rc;
    for (int t = 0; text && t < ntok && pr->n_failed < 64; t++) {
        char what[240];
        snprintf(what, sizeof what, "what: \"hidden=%lld experts=%lld topk=%lld moe_ffn=%lld shared_ffn=%lld tokens=%lld "
                 "ep=%lld %s\"", (long long)sh->hidden, (long long)sh->experts, (long long)sh->topk,
                 (long long)sh->moe_ffn, (long long)sh->shared_ffn, (long long)toks[t], (long long)sh->ep,
                 sh->grouped ? "grouped" : "loop");
        if (!strstr(text, what)) continue;
        pp_probe_moe_shape st = *sh;
        st.tokens = toks[t];
        pr->failed_oom[pr->n_failed] = true;
        pp_probe_cache_moe_key(&st, pr->failed[pr->n_failed++], sizeof pr->failed[0]);
        fprintf(stderr, "parplan: warning: the MoE MLP at %lld tokens per rank ran out of GPU memory on %s in the "
                        "probe: those candidates keep the model's figures\n",
                (long long)toks[t], p.gpu[0] ? p.gpu : "this GPU");
    }
    free(text);
    int rcode = 0;
    for (int i = 0; i < p.n_moe && !rcode; i++) {
        const pp_prof_moe *r = &p.moe[i];
        if (r->hidden != sh->hidden || r->experts != sh->experts || r->topk != sh->topk || r->moe_ffn != sh->moe_ffn ||
            r->shared_ffn != sh->shared_ffn || r->ep != sh->ep || r->grouped != (int)sh->grouped)
            continue;
        pp_probe_moe_shape st = *sh;
        st.tokens = r->tokens;
        pp_probe_cache_entry e;
        memset(&e, 0, sizeof e);
        snprintf(e.gpu, sizeof e.gpu, "%s", pr->gpu);
        pp_probe_cache_moe_key(&st, e.key, sizeof e.key);
        e.a = r->fwd_ms;
        e.b = r->fwdbwd_ms;
        snprintf(e.note, sizeof e.note, "%s", sh->grouped ? "grouped" : "loop");
        if (pp_probe_cache_put(&pr->cache, &e, &err)) {
            rcode = pp_cli_fail(&err);
            break;
        }
        /* the experts' parts: each part's own median (probes/NOTES.md), capped by the whole */
        double ef = r->fwd_parts_ms[2] + r->fwd_parts_ms[3] + r->fwd_parts_ms[4];
        double eb = r->bwd_parts_ms[2] + r->bwd_parts_ms[3] + r->bwd_parts_ms[4];
        double bwd = r->fwdbwd_ms - r->fwd_ms > 0 ? r->fwdbwd_ms - r->fwd_ms : 0;
        size_t kl = strlen(e.key);
        snprintf(e.key + kl, sizeof e.key - kl, " experts");
        e.a = ef > 0 && ef < r->fwd_ms ? ef : r->fwd_ms;
        e.b = eb > 0 && eb < bwd ? eb : bwd;
        if (pp_probe_cache_put(&pr->cache, &e, &err)) rcode = pp_cli_fail(&err);
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
        char lab[96];
        pp_layout_label(l, lab, sizeof lab);
        int sizes[5];
        int ns = groups_of(w, l, env->gpus, sizes, in->modelled, sizeof in->modelled);
        cand_parts cp;
        parts_of(w, l, &cp, in->modelled, sizeof in->modelled);
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
        /* the layer's parts: this candidate's, each with those of the later candidates that differ
         * only in tp (layer, MLA) or in tokens per rank (MoE), in one call */
        /* copies: a later part's measurement grows the cache's array */
        bool got[PART_COUNT] = {false}, got_experts = false;
        pp_probe_cache_entry ent[PART_COUNT], ent_experts;
        memset(ent, 0, sizeof ent);
        memset(&ent_experts, 0, sizeof ent_experts);
        for (int p = 0; p < PART_COUNT; p++) {
            if (!cp.need[p]) continue;
            const char *key = cp.key[p];
            if (!pp_probe_cache_get(&pr.cache, pr.gpu, key) && !out_of_budget && !failed_key(&pr, key)) {
                if (now_s() - pr.t0 > pr.budget) {
                    out_of_budget = true;
                } else {
                    int64_t vals[8];
                    char keys[8][192];
                    int nv = 0;
                    for (int64_t j = k; j < K && nv < 8; j++) {
                        const pp_layout *lj = &cand[j].layout;
                        cand_parts cj;
                        char scratch[320] = "";
                        parts_of(w, lj, &cj, scratch, sizeof scratch);
                        if (!cj.need[p] || pp_probe_cache_get(&pr.cache, pr.gpu, cj.key[p]) || failed_key(&pr, cj.key[p]))
                            continue;
                        int64_t v;
                        if (p == PART_MOE) {
                            const pp_probe_moe_shape *a = &cj.moe, *b = &cp.moe;
                            if (a->hidden != b->hidden || a->experts != b->experts || a->topk != b->topk ||
                                a->moe_ffn != b->moe_ffn || a->shared_ffn != b->shared_ffn || a->ep != b->ep ||
                                a->grouped != b->grouped)
                                continue;
                            v = a->tokens;
                        } else {
                            if (lj->mbs != l->mbs) continue;
                            v = lj->tp;
                        }
                        bool dup = false;
                        for (int t = 0; t < nv; t++) dup |= vals[t] == v;
                        if (dup) continue;
                        snprintf(keys[nv], sizeof keys[0], "%s", cj.key[p]);
                        vals[nv++] = v;
                    }
                    int m = p == PART_MOE   ? measure_moe(&pr, &cp.moe, vals, nv)
                            : p == PART_MLA ? measure_mla(&pr, w, &cp.mla, vals, nv)
                                            : measure_layers(&pr, w, l->mbs, vals, nv, p == PART_LAYER ? w->model.ffn : 0);
                    if (m == MEASURE_INTERRUPTED || interrupted) goto stopped;
                    if (m > 0) {
                        rc = m;
                        goto done;
                    }
                    if (m < 0)
                        for (int t = 0; t < nv && pr.n_failed < 64; t++)
                            snprintf(pr.failed[pr.n_failed++], sizeof pr.failed[0], "%.191s", keys[t]);
                }
            }
            const pp_probe_cache_entry *e = pp_probe_cache_get(&pr.cache, pr.gpu, key);
            if (e) {
                got[p] = true;
                ent[p] = *e;
                if (p == PART_MOE) {
                    char ek[sizeof cp.key[0]];
                    snprintf(ek, sizeof ek, "%.180s experts", key);
                    const pp_probe_cache_entry *x = pp_probe_cache_get(&pr.cache, pr.gpu, ek);
                    if ((got_experts = x != NULL)) ent_experts = *x;
                }
                continue;
            }
            char note[256];
            const char *what = part_name(w, p);
            if (failed_oom(&pr, key)) snprintf(note, sizeof note, "%s (out of GPU memory in the probe at this size)", what);
            else if (failed_key(&pr, key)) snprintf(note, sizeof note, "%s (the probe failed)", what);
            else if (out_of_budget) snprintf(note, sizeof note, "%s (--probe-budget spent)", what);
            else snprintf(note, sizeof note, "%s (the probe returned no figure for this shape)", what);
            append(in->modelled, sizeof in->modelled, note);
        }
        for (int p = PART_COUNT - 1; p >= 0; p--)
            if (got[p]) snprintf(in->device, sizeof in->device, "%s", ent[p].gpu);
        if (!cp.need[PART_ATTN] && !cp.need[PART_MLA] && !cp.need[PART_MOE]) {
            /* a dense model: its layer, measured whole */
            if (got[PART_LAYER]) {
                in->probed = true;
                in->layer_fwd_ms = ent[PART_LAYER].a;
                in->layer_fwdbwd_ms = ent[PART_LAYER].b;
                snprintf(in->attention, sizeof in->attention, "%.15s", ent[PART_LAYER].note);
            }
        } else if (got[PART_ATTN] || got[PART_MLA] || got[PART_MOE]) {
            /* an MoE or MLA layer: its parts, composed below */
            in->probed = in->composed = true;
            const int pa = got[PART_MLA] ? PART_MLA : got[PART_ATTN] ? PART_ATTN : got[PART_LAYER] ? PART_LAYER : -1;
            if (pa >= 0) snprintf(in->attention, sizeof in->attention, "%.15s", ent[pa].note);
            if (pa == PART_MLA || pa == PART_ATTN) {
                in->attn_mla = pa == PART_MLA;
                in->attn_fwd_ms = ent[pa].a;
                in->attn_fwdbwd_ms = ent[pa].b;
            }
            if (got[PART_MOE]) {
                in->moe_fwd_ms = ent[PART_MOE].a;
                in->moe_fwdbwd_ms = ent[PART_MOE].b;
                in->moe_shared = cp.moe.shared_ffn > 0;
                snprintf(in->moe_impl, sizeof in->moe_impl, "%s", cp.moe.grouped ? "grouped" : "loop");
                in->expert_fwd_ms = got_experts ? ent_experts.a : ent[PART_MOE].a;
                in->expert_bwd_ms = got_experts ? ent_experts.b : ent[PART_MOE].b - ent[PART_MOE].a;
            }
            if (got[PART_LAYER]) {
                in->dense_fwd_ms = ent[PART_LAYER].a;
                in->dense_fwdbwd_ms = ent[PART_LAYER].b;
            }
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
    /* The host's pace of looped experts (moe_layer_overhead_s, expert_overhead_s) is Python issuing
     * kernels, which the probe (issuing from C) never sees; a probe calibration fitted on dense
     * layers has none, so the model calibration's figures are taken, as fitted on the stack's MoE
     * logs. Without them plan --probe put tests/data/calibrate/probe-moe's ten one-H200 Megatron
     * runs 15-72% fast. */
    pp_calibration cal_moe;
    bool moe_from_model = false;
    if (cal == &prof.probe_calibration && prof.calibration.present &&
        !(cal->moe_layer_overhead_s > 0) && !(cal->expert_overhead_s > 0) &&
        (prof.calibration.moe_layer_overhead_s > 0 || prof.calibration.expert_overhead_s > 0)) {
        cal_moe = *cal;
        cal_moe.moe_layer_overhead_s = prof.calibration.moe_layer_overhead_s;
        cal_moe.expert_overhead_s = prof.calibration.expert_overhead_s;
        moe_from_model = true;
    }
    pp_work wp = *w;
    wp.profile = &prof;
    pp_time_opts o;
    pp_time_opts_default(&wp, &o);
    for (int64_t k = 0; k < K; k++) {
        pp_plan_probe_info *in = &info[k];
        if (!in->probed) continue;
        pp_time_result t;
        pp_time_measured mi;
        const pp_layout *l = &cand[k].layout;
        double fwd[PP_LAYER_KINDS] = {0}, fwdbwd[PP_LAYER_KINDS] = {0};
        cand_parts cp;
        char scratch[320] = "";
        parts_of(w, l, &cp, scratch, sizeof scratch);
        if (!in->composed) {
            fwd[cp.kind_main] = in->layer_fwd_ms * 1e-3;
            fwdbwd[cp.kind_main] = in->layer_fwdbwd_ms * 1e-3;
        } else {
            /* MoE / MLA: the measured parts in place of the model's (pp_time_layer_compose), for the
             * main kind and for the dense layers of the same attention span */
            pp_layer_measured mm;
            memset(&mm, 0, sizeof mm);
            if (in->attn_mla) mm.mla_fwd_s = in->attn_fwd_ms * 1e-3, mm.mla_fwdbwd_s = in->attn_fwdbwd_ms * 1e-3;
            else mm.attn_fwd_s = in->attn_fwd_ms * 1e-3, mm.attn_fwdbwd_s = in->attn_fwdbwd_ms * 1e-3;
            pp_layer_measured md = mm;
            mm.moe_fwd_s = in->moe_fwd_ms * 1e-3;
            mm.moe_fwdbwd_s = in->moe_fwdbwd_ms * 1e-3;
            mm.expert_fwd_s = in->expert_fwd_ms * 1e-3;
            mm.expert_bwd_s = in->expert_bwd_ms * 1e-3;
            mm.moe_shared = in->moe_shared;
            pp_layer_composed lc;
            pp_time_layer_compose(&wp, l, &o, moe_from_model ? &cal_moe : cal, cp.kind_main, &mm, &lc);
            if (lc.measured) {
                fwd[cp.kind_main] = lc.fwd_s;
                fwdbwd[cp.kind_main] = lc.fwdbwd_s;
            }
            in->layer_fwd_ms = lc.fwd_s * 1e3;
            in->layer_fwdbwd_ms = lc.fwdbwd_s * 1e3;
            in->rest_fwd_ms = lc.modelled_fwd_s * 1e3;
            in->rest_bwd_ms = lc.modelled_bwd_s * 1e3;
            in->host_fwd_ms = lc.host_fwd_s * 1e3;
            in->host_bwd_ms = lc.host_bwd_s * 1e3;
            if (lc.host_fwd_s + lc.host_bwd_s > 0)
                append(in->modelled, sizeof in->modelled,
                       moe_from_model ? "the host's pace of the looped experts (the model's calibration)"
                                      : "the host's pace of the looped experts (calibration)");
            if (cp.kind_dense >= 0) {
                md.layer_fwd_s = in->dense_fwd_ms * 1e-3;
                md.layer_fwdbwd_s = in->dense_fwdbwd_ms * 1e-3;
                pp_time_layer_compose(&wp, l, &o, cal, cp.kind_dense, &md, &lc);
                if (lc.measured) {
                    fwd[cp.kind_dense] = lc.fwd_s;
                    fwdbwd[cp.kind_dense] = lc.fwdbwd_s;
                } else {
                    append(in->modelled, sizeof in->modelled,
                           "dense layers (the MoE layer's measured/modelled ratio)");
                }
            }
            if (!(fwdbwd[cp.kind_main] > 0)) {
                /* no part of the main layer was measured: it keeps the model's figures */
                in->probed = false;
                continue;
            }
        }
        pp_time_step_measured_kinds(&wp, l, &o, cal, fwd, fwdbwd, &t, &mi);
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
        if (in->attention[0] && strcmp(in->attention, pp_attention_names[w->attention])) {
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

/* " = attention 1.2/3.4 ms + MoE MLP (loop) 2.3/6.9 ms + the model's rest 0.05/0.1 ms; dense layers
 * 3.1/9.0 ms" (the parts of a composed layer, forward / forward+backward), or "" */
static const char *parts_note(const pp_plan_probe_info *in, char *buf, size_t n)
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

void pp_plan_probe_print(FILE *f, const pp_search_candidate *cand, int64_t n, const pp_plan_probe_info *info)
{
    char note[160], parts[320], lab[96];
    fprintf(f, "\nprobe: #1-#%lld re-ranked by what this machine measured (the rest of each step is the model's; "
               "rows below them keep the model's figures):\n",
            (long long)n);
    for (int64_t k = 0; k < n; k++) {
        const pp_plan_probe_info *in = &info[k];
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
