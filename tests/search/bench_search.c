/* Search speed (suite bench: reports rates, asserts no wall-clock figure).
 *   1. pp_search_run on a few works, repeated: layouts in the space per second and candidates
 *      checked one by one (memory model + time model) per second, on one core;
 *   2. the per-candidate cost alone: memory fast path + step time over a fixed list of layouts;
 *   3. whole-process time of `parplan plan` (fork + exec + catalog + search + output) for
 *      GPT-3 13B on 16 A100s and a 1T GPT on 3072 A100s, median of several runs.
 * Targets: >= 1e6 candidates/s, 13B/16 < 20 ms, 1T/3072 < 1 s. */
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pp_load.h"
#include "pp_memory.h"
#include "pp_search.h"
#include "pp_time.h"
#include "tap.h"
#include "time_test.h"

extern char **environ;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    const char *name;
    int64_t L, h, a, seq, V, gpus, gbs, experts, topk;
    const char *gpu;
    const char *catalog_model; /* a models.d model instead of the GPT shape above */
} bench_work;

static int make(const bench_work *b, pp_work *w)
{
    memset(w, 0, sizeof *w);
    if (tt_gpu(b->gpu, &w->gpu)) return 1;
    if (b->catalog_model) {
        const char *src = getenv("PARPLAN_SOURCE_DIR");
        char path[1024];
        snprintf(path, sizeof path, "%s/models.d/models/%s.yaml", src ? src : ".", b->catalog_model);
        pp_error err;
        if (pp_model_load_file(&w->model, path, &err) != PP_OK) return 1;
    } else if (tt_gpt(&w->model, b->L, b->h, b->a, b->seq, b->V)) {
        return 1;
    }
    if (b->experts > 1) {
        w->model.experts = b->experts;
        w->model.topk = b->topk;
        pp_error err;
        if (pp_model_validate(&w->model, &err) != PP_OK) return 1;
    }
    w->gpus = b->gpus;
    w->gpus_per_node = 8;
    w->gbs = b->gbs;
    w->attention = PP_ATTN_FLASH;
    return 0;
}

static void bench_search(const bench_work *b)
{
    pp_work w;
    if (!tap_ok(make(b, &w) == 0, "%s: work", b->name)) return;
    pp_search_params p;
    pp_search_params_init(&p);
    pp_search_candidate out[5];
    pp_search_result r;
    pp_error err = {0};
    double times[64];
    int n = 0;
    double t_end = now_s() + 1.0;
    pp_status st = PP_OK;
    do {
        st = pp_search_run(&w, &p, out, &r, &err);
        times[n++] = r.search_time_s;
    } while (st == PP_OK && n < 64 && now_s() < t_end);
    qsort(times, (size_t)n, sizeof times[0], cmp_double);
    double med = times[n / 2];
    tap_ok(st == PP_OK && r.n > 0, "%s: search ran (%d runs)", b->name, n);
    printf("# %-34s space %11lld  checked %8lld  fit %7lld  search %8.2f ms  %8.1f M layouts/s  "
           "%6.2f M checked/s\n",
           b->name, (long long)r.evaluated, (long long)r.leaves, (long long)r.fitting, med * 1e3,
           (double)r.evaluated / med / 1e6, (double)r.leaves / med / 1e6);
}

/* The per-candidate work of the search's leaves: memory fast path + step time. */
static void bench_leaf(const bench_work *b)
{
    pp_work w;
    if (make(b, &w)) return;
    pp_search_params p;
    pp_search_params_init(&p);
    p.top = 2000;
    pp_search_candidate *out = calloc((size_t)p.top, sizeof *out);
    pp_search_result r;
    pp_error err = {0};
    pp_search_run(&w, &p, out, &r, &err);
    pp_time_ctx c;
    pp_time_ctx_init(&c, &w, NULL);
    int64_t n = r.n;
    pp_time_layer *ly = calloc((size_t)n, sizeof *ly);
    for (int64_t i = 0; i < n; i++) pp_time_layer_get(&c, &out[i].layout, &ly[i]);
    double sink = 0;
    int64_t evals = 0;
    double t0 = now_s(), t1;
    do {
        for (int64_t i = 0; i < n; i++) {
            double peak;
            sink += pp_memory_worst_bytes(&w, &out[i].layout, &peak);
            pp_time_result t;
            pp_time_step(&c, &out[i].layout, &ly[i], &t);
            sink += t.step_time_s;
        }
        evals += n;
        t1 = now_s();
    } while (t1 - t0 < 0.5);
    tap_ok(n > 0 && isfinite(sink), "%s: per-candidate loop over %lld layouts", b->name, (long long)n);
    printf("# %-34s memory + step time per candidate: %.0f ns, %.2f M candidates/s (one core)\n", b->name,
           (t1 - t0) / (double)evals * 1e9, (double)evals / (t1 - t0) / 1e6);
    free(ly);
    free(out);
}

/* Median wall time of `parplan plan ARGS` over `runs` runs (stdout to /dev/null). */
static double whole_process(char *const argv[], int runs, int *status)
{
    double t[32];
    *status = 0;
    for (int i = 0; i < runs; i++) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1 /* O_WRONLY */, 0);
        pid_t pid;
        double t0 = now_s();
        if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
            posix_spawn_file_actions_destroy(&fa);
            *status = -1;
            return NAN;
        }
        int ws = 0;
        waitpid(pid, &ws, 0);
        t[i] = now_s() - t0;
        posix_spawn_file_actions_destroy(&fa);
        if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) *status = ws;
    }
    qsort(t, (size_t)runs, sizeof t[0], cmp_double);
    return t[runs / 2];
}

int main(void)
{
    static const bench_work works[] = {
        {"GPT-3 13B on 16 A100", 40, 5120, 40, 2048, 51200, 16, 1024, 0, 0, "a100-80gb", NULL},
        {"GPT-3 175B on 1024 A100", 96, 12288, 96, 2048, 51200, 1024, 1536, 0, 0, "a100-80gb", NULL},
        {"GPT 1T on 3072 A100", 128, 25600, 160, 2048, 51200, 3072, 3072, 0, 0, "a100-80gb", NULL},
        {"Llama-like 70B on 512 H100", 80, 8192, 64, 4096, 128256, 512, 1024, 0, 0, "h100-sxm", NULL},
        {"MoE 8x7B-like on 64 H100", 32, 4096, 32, 4096, 32000, 64, 512, 8, 2, "h100-sxm", NULL},
        /* dense first layers, MLA, 256 experts, MTP: every stage priced by its layer kinds */
        {"DeepSeek-V3 on 2048 H100", 0, 0, 0, 0, 0, 2048, 15360, 0, 0, "h100-sxm", "deepseek-v3"},
    };
    size_t nw = sizeof works / sizeof works[0];
    for (size_t i = 0; i < nw; i++) bench_search(&works[i]);
    for (size_t i = 0; i < nw; i++) bench_leaf(&works[i]);

    const char *exe = getenv("PARPLAN");
    if (!exe || access(exe, X_OK)) {
        printf("# PARPLAN not set or not executable: no whole-process timing\n");
        return tap_done();
    }
    char *a13[] = {(char *)exe, "plan", "--model", "gpt3-13b", "--gpu", "a100-80gb", "--gpus", "16",
                   "--gpus-per-node", "8", NULL};
    char *a1t[] = {(char *)exe, "plan", "--model", "sc21-1t", "--gpu", "a100-80gb", "--gpus", "3072",
                   "--gpus-per-node", "8", NULL};
    int s13 = 0, s1t = 0;
    double w13 = whole_process(a13, 21, &s13), w1t = whole_process(a1t, 11, &s1t);
    tap_ok(s13 == 0, "parplan plan gpt3-13b on 16 a100-80gb ran");
    tap_ok(s1t == 0, "parplan plan sc21-1t on 3072 a100-80gb ran");
    printf("# whole process, median: 13B on 16 GPUs %.1f ms (target < 20 ms); 1T on 3072 GPUs %.1f ms "
           "(target < 1000 ms)\n",
           w13 * 1e3, w1t * 1e3);
    return tap_done();
}
