/* Writes the launch scripts of the real runs on the lent 2 x H200 machine into
 * DIR: parplan's Megatron format, target device-local, 5 iterations each. Run by hand:
 *     build/tests/frameworks/gen_real_runs tests/data/launch/scripts
 * then on the device: bash tools/launch/real_runs.sh (results: tests/data/launch/).
 * The same scripts come from the CLI, e.g. for r1:
 *     parplan launch --model gpt3-1.3b --gpu h200 --gpus 2 --gpus-per-node 2 --gbs 16 --mbs 4
 *        --dist-opt --attention unfused --format megatron --launch-target device-local
 * (r4's uneven stages are the kind the stage ILP writes into the layout; given here by hand).
 *     gen_real_runs --predict     prints parplan's predictions (memory and time models) as CSV:
 * for r4 both for the plan (recompute 2;0) and for what Megatron runs (block 2 on every stage).
 *     gen_real_runs --check tests/data/launch/real_runs.csv     (the launch-real-runs test)
 * recomputes the predictions with the current models and compares them with the measurements:
 * per launched rank the peak within 10%, the step time printed with its error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "fixtures.h"
#include "pp_load.h"
#include "pp_memory.h"
#include "pp_time.h"

typedef struct {
    const char *name, *model;
    int64_t tp, pp, mbs;
    bool dist_opt;
    pp_recompute rc;
    int stages[2], stage_rc[2];
} run;

static const run runs[] = {
    {"r1-gpt1.3b-dp2", "gpt3-1.3b", 1, 1, 4, true, PP_RC_NONE, {0}, {0}},
    {"r2-gpt1.3b-tp2", "gpt3-1.3b", 2, 1, 4, false, PP_RC_NONE, {0}, {0}},
    {"r3-gpt1.3b-pp2", "gpt3-1.3b", 1, 2, 2, false, PP_RC_NONE, {0}, {0}},
    {"r5-tinyllama-tp2-distopt", "tinyllama-1.1b", 2, 1, 4, true, PP_RC_NONE, {0}, {0}},
    {"r4-tinyllama-pp2-uneven-rc", "tinyllama-1.1b", 1, 2, 2, true, PP_RC_FULL, {12, 10}, {2, 0}},
};

/* --check: the measured rows of real_runs.csv, matched by (name, predicted_for). */
#define MAX_ROWS 32
typedef struct {
    char name[64], what[96];
    double step_ms, alloc_mib[2]; /* < 0: not measured (rank does not print) */
    bool ran;
} measured;
static measured rows[MAX_ROWS];
static int n_rows;
static int mode_check;
static double sum_mem_err, sum_time_err;
static int n_mem, n_time;

static int load_csv(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[4096];
    int col_name = -1, col_what = -1, col_ran = -1, col_step = -1, col_a0 = -1, col_a1 = -1;
    bool header = false;
    while (fgets(line, sizeof line, f) && n_rows < MAX_ROWS) {
        if (line[0] == '#') continue;
        line[strcspn(line, "\r\n")] = 0;
        char *cells[32];
        int n = 0;
        for (char *c = line; n < 32;) {
            cells[n++] = c;
            char *comma = strchr(c, ',');
            if (!comma) break;
            *comma = 0;
            c = comma + 1;
        }
        if (!header) {
            for (int i = 0; i < n; i++) {
                if (!strcmp(cells[i], "name")) col_name = i;
                if (!strcmp(cells[i], "predicted_for")) col_what = i;
                if (!strcmp(cells[i], "ran")) col_ran = i;
                if (!strcmp(cells[i], "step_ms_median_3_5")) col_step = i;
                if (!strcmp(cells[i], "max_allocated_mib_rank0")) col_a0 = i;
                if (!strcmp(cells[i], "max_allocated_mib_rank1")) col_a1 = i;
            }
            header = true;
            if (col_name < 0 || col_what < 0 || col_ran < 0 || col_step < 0 || col_a0 < 0 || col_a1 < 0) break;
            continue;
        }
        if (n <= col_a1) continue;
        measured *m = &rows[n_rows++];
        snprintf(m->name, sizeof m->name, "%s", cells[col_name]);
        snprintf(m->what, sizeof m->what, "%s", cells[col_what]);
        m->ran = !strcmp(cells[col_ran], "yes");
        m->step_ms = *cells[col_step] ? atof(cells[col_step]) : -1;
        m->alloc_mib[0] = *cells[col_a0] ? atof(cells[col_a0]) : -1;
        m->alloc_mib[1] = *cells[col_a1] ? atof(cells[col_a1]) : -1;
    }
    fclose(f);
    return header && col_a1 >= 0 ? 0 : -1;
}

/* The rows that describe what Megatron ran (the others are the plan, for information). */
static bool primary(const char *what) { return !strcmp(what, "run") || !strncmp(what, "as launched", 11); }

static int predict(const char *name, const pp_work *w, const pp_layout *l, const char *what)
{
    static pp_mem_result mem;
    pp_time_result t;
    pp_error err = {0};
    if (pp_memory_estimate(w, l, &mem, &err) != PP_OK || pp_time_estimate(w, l, &t, &err) != PP_OK) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        if (mode_check) tap_ok(0, "%s: predictions (%s)", name, err.msg);
        return 1;
    }
    double peak[2];
    for (int64_t s = 0; s < 2; s++) peak[s] = s < mem.n_stages ? mem.stages[s].peak_bytes : mem.stages[0].peak_bytes;
    if (!mode_check) {
        printf("%s,%s,%.0f,%.0f,%.0f,%.4f,%.3f\n", name, what, peak[0], peak[1],
               mem.stages[mem.largest_stage].reserved_bytes, t.step_time_s, t.samples_per_s);
        return 0;
    }
    const measured *m = NULL;
    for (int i = 0; i < n_rows; i++)
        if (!strcmp(rows[i].name, name) && !strcmp(rows[i].what, what)) m = &rows[i];
    if (!tap_ok(m != NULL, "%s [%s]: measured row in real_runs.csv", name, what)) return 0;
    if (!primary(what)) return 0;
    tap_ok(m->ran && m->step_ms > 0, "%s: ran 5 iterations (%.1f ms per step)", name, m->step_ms);
    for (int r = 0; r < 2; r++) {
        if (m->alloc_mib[r] < 0) continue;
        double pred_mib = peak[r] / 1048576.0, err_pct = 100 * (pred_mib - m->alloc_mib[r]) / m->alloc_mib[r];
        sum_mem_err += fabs(err_pct);
        n_mem++;
        /* 10%: Megatron's own "theoretical memory" was 12-55% off on these GPUs
         * (megatron-on-device.md); the model must beat it on every launched rank. */
        tap_ok(fabs(err_pct) <= 10.0, "%s rank %d: peak predicted %.0f MiB, measured %.0f MiB, error %+.1f%%",
               name, r, pred_mib, m->alloc_mib[r], err_pct);
    }
    double terr = 100 * (1000 * t.step_time_s - m->step_ms) / m->step_ms;
    sum_time_err += fabs(terr);
    n_time++;
    tap_diag("%s: step predicted %.1f ms, measured %.1f ms, error %+.1f%% (time model, not asserted)",
             name, 1000 * t.step_time_s, m->step_ms, terr);
    tap_ok(isfinite(t.step_time_s) && t.step_time_s > 0, "%s: a step time is predicted", name);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (!strcmp(argv[1], "--check") && argc != 3)) {
        fprintf(stderr, "usage: gen_real_runs DIR | --predict | --check real_runs.csv\n");
        return 2;
    }
    mode_check = !strcmp(argv[1], "--check");
    bool pred = mode_check || !strcmp(argv[1], "--predict");
    if (mode_check && load_csv(argv[2]) != 0) {
        tap_ok(0, "read %s", argv[2]);
        return tap_done();
    }
    if (pred && !mode_check)
        printf("name,predicted_for,predicted_peak_bytes_stage0,predicted_peak_bytes_stage1,"
               "predicted_reserved_bytes,predicted_step_s,predicted_samples_per_s\n");
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        const run *r = &runs[i];
        pp_work w = fx_work(r->model, 2, 2, 16);
        pp_error err = {0};
        if (pred) {
            /* the catalog's H200 (and GPT-3 1.3B): what `parplan launch --gpu h200` uses */
            char path[1024];
            const char *dir = getenv("PARPLAN_MODELS_DIR");
            snprintf(path, sizeof path, "%s/gpus/h200.yaml", dir ? dir : "models.d");
            if (pp_gpu_load_file(&w.gpu, path, &err) != PP_OK) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
            }
            snprintf(path, sizeof path, "%s/models/%s.yaml", dir ? dir : "models.d", r->model);
            FILE *probe = fopen(path, "r");
            if (probe) {
                fclose(probe);
                if (pp_model_load_file(&w.model, path, &err) != PP_OK) {
                    fprintf(stderr, "%s\n", err.msg);
                    return 1;
                }
            } else if (pp_model_validate(&w.model, &err) != PP_OK) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
            }
        } else {
            snprintf(w.gpu.name, sizeof w.gpu.name, "h200");
            w.gpu.memory_bytes = 143771.0 * 1048576.0;
        }
        w.attention = PP_ATTN_UNFUSED; /* Megatron's local attention */
        pp_layout l;
        pp_layout_init(&l);
        l.tp = r->tp, l.pp = r->pp, l.mbs = r->mbs, l.dist_opt = r->dist_opt, l.recompute = r->rc;
        if (r->stages[0]) l.stage_layers = r->stages, l.stage_recompute = r->stage_rc;
        if (pp_layout_validate(&w, &l, &err) != PP_OK) {
            fprintf(stderr, "%s: %s\n", r->name, err.msg);
            return 1;
        }
        if (pred) {
            /* per-rank figures: stage 0 and 1 under PP; every rank alike otherwise */
            /* "run" and "as launched" describe what Megatron ran; the others are the plan */
            if (predict(r->name, &w, &l,
                        r->stages[0] ? "plan (recompute 2;0 and no dropout)"
                                     : w.model.bias ? "run" : "plan (no dropout)"))
                return 1;
            static int ran_rc[2] = {2, 2}; /* Megatron's block recompute: 2 on every stage */
            pp_layout ran = l;
            if (r->stages[0]) {
                ran.stage_recompute = ran_rc;
                if (predict(r->name, &w, &ran, "plan with Megatron's block 2 on both stages (no dropout)")) return 1;
            }
            if (!w.model.bias) {
                /* The scripts that ran (before launch_megatron.c emitted --attention-dropout 0.0
                 * --hidden-dropout 0.0 for bias-free models) kept Megatron's dropout 0.1. The
                 * memory model counts dropout for models with biases (memory.c mem_dropout):
                 * bias = true stands in for "with dropout" (the bias parameters add < 0.1%). */
                pp_work wd = w;
                wd.model.bias = true;
                if (predict(r->name, &wd, &ran, "as launched: dropout 0.1 (model with bias=true)")) return 1;
            }
            continue;
        }
        pp_launch_params p;
        pp_launch_params_init(&p);
        p.work = &w, p.layout = &l, p.target = PP_TARGET_DEVICE_LOCAL, p.train_iters = 5;
        p.capacity_bytes = w.gpu.memory_bytes;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.sh", argv[1], r->name);
        FILE *f = fopen(path, "w");
        if (!f || pp_launch_write(PP_LAUNCH_MEGATRON, &p, f, NULL, &err) != PP_OK) {
            fprintf(stderr, "%s: %s\n", r->name, f ? err.msg : "cannot open");
            return 1;
        }
        fclose(f);
        printf("%s\n", path);
    }
    if (mode_check) {
        tap_diag("memory: MAPE %.1f%% over %d launched ranks; step time: MAPE %.1f%% over %d runs",
                 n_mem ? sum_mem_err / n_mem : 0, n_mem, n_time ? sum_time_err / n_time : 0, n_time);
        tap_ok(n_mem >= 8 && n_time >= 4, "at least 4 launches compared (%d runs, %d ranks)", n_time, n_mem);
        return tap_done();
    }
    return 0;
}
