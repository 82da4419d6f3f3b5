/* Validation against real Megatron-LM runs (made by tools/megatron/run_configs.py +
 * parse_logs.py): tests/data/megatron/runs.csv (2 x H200, GPT and Llama shapes) or the file given
 * as the first argument, e.g. runs_moe.csv (one H200: MoE with 8 to 128 experts, a dense first
 * layer and shared experts, Qwen3's head_dim and QK-norm, dropout). Models not built in
 * (mem_shapes.h) are read from tests/data/megatron/models/<model>.yaml, so every row is what
 *   parplan check --model tests/data/megatron/models/<model>.yaml --gpu h200 --gpus N
 *       --attention unfused --mbs B --gbs G --seq S [--recompute R] ...
 * computes (printed per row). For every run that fitted: the predicted allocator peak of the
 * reporting rank's stage is within 5% of torch.cuda.max_memory_allocated, and the model says it
 * fits; for every run that ran out of memory, the model says it does not. Prints the error per
 * row, MAPE and the worst row, and Megatron's own estimate beside ours. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem_shapes.h"
#include "pp_load.h"
#include "pp_memory.h"
#include "tap.h"
#include "csv_cols.h"

#define MIB (1024.0 * 1024.0)
#define MAXCOL 32

/* The model of a run: built in, or tests/data/megatron/models/<name>.yaml. */
static bool run_model(pp_model *m, const char *src, const char *name, char *how, size_t n)
{
    if (mem_shape(m, name)) {
        snprintf(how, n, "(built-in shape %s)", name);
        return true;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/megatron/models/%s.yaml", src, name);
    pp_error err;
    if (pp_model_load_file(m, path, &err) != PP_OK) {
        char b[800];
        pp_error_format(&err, b, sizeof b);
        tap_diag("%s", b);
        return false;
    }
    snprintf(how, n, "--model tests/data/megatron/models/%s.yaml", name);
    return true;
}

int main(int argc, char **argv)
{
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    if (!src) src = ".";
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/megatron/%s", src, argc > 1 ? argv[1] : "runs.csv");
    FILE *f = fopen(path, "r");
    if (!f) {
        tap_ok(0, "open %s", path);
        return tap_done();
    }
    char line[4096], hdrline[4096];
    char *hdr[MAXCOL];
    int nh = 0;
    while (fgets(hdrline, sizeof hdrline, f)) {
        if (hdrline[0] == '#') continue;
        nh = split_csv(hdrline, hdr, MAXCOL);
        break;
    }
    const char *need[] = {"name", "model", "gpus", "tp", "pp", "dp", "vpp", "mbs", "gbs", "seq",
                          "dist_opt", "recompute", "rank", "pp_stage", "oom", "max_alloc_mib",
                          "megatron_est_mib", "smi_peak_mib"};
    int ix[sizeof need / sizeof need[0]];
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        ix[i] = col_index(hdr, nh, need[i]);
        if (ix[i] < 0) {
            tap_ok(0, "runs.csv has column %s", need[i]);
            fclose(f);
            return tap_done();
        }
    }
    enum { NAME, MODEL, GPUS, TP, PP, DP, VPP, MBS, GBS, SEQ, DISTOPT, RC, RANK, STAGE, OOM, MAXA, EST,
           SMI };
    int fitted = 0, ooms = 0, nest = 0;
    double sum_ape = 0, worst = -1, sum_est_ape = 0, worst_est = -1;
    char worst_name[200] = "", worst_est_name[200] = "";
    tap_diag("%-24s %4s %5s %10s %10s %7s %10s %7s", "run", "rank", "stage", "meas MiB",
             "ours MiB", "err", "megatron", "err");
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        char *col[MAXCOL];
        int n = split_csv(line, col, MAXCOL);
        if (n < nh) continue;
        pp_work w;
        memset(&w, 0, sizeof w);
        char how[256];
        if (!tap_ok(run_model(&w.model, src, col[ix[MODEL]], how, sizeof how), "%s: known model %s",
                    col[ix[NAME]], col[ix[MODEL]]))
            continue;
        w.model.seq = atoll(col[ix[SEQ]]);
        mem_h200(&w.gpu);
        w.gpus = atoll(col[ix[GPUS]]);
        w.gpus_per_node = 2;
        w.gbs = atoll(col[ix[GBS]]);
        w.framework = PP_FW_MEGATRON;
        w.attention = PP_ATTN_UNFUSED; /* Megatron local implementation, no TE */
        /* run_configs.py switched Megatron's bias-activation fusion off (--no-bias-swiglu-fusion,
         * --no-bias-gelu-fusion) */
        w.stack.act_unfused = true;
        pp_layout l;
        pp_layout_init(&l);
        l.tp = atoll(col[ix[TP]]);
        l.pp = atoll(col[ix[PP]]);
        l.dp = atoll(col[ix[DP]]);
        l.vpp = atoll(col[ix[VPP]]);
        l.mbs = atoll(col[ix[MBS]]);
        l.dist_opt = atoi(col[ix[DISTOPT]]) != 0;
        int rc = pp_name_lookup(pp_recompute_names, PP_RC_COUNT, col[ix[RC]]);
        l.recompute = rc < 0 ? PP_RC_NONE : (pp_recompute)rc;
        pp_error err;
        if (!tap_ok(pp_layout_validate(&w, &l, &err) == PP_OK, "%s: layout valid (%s)",
                    col[ix[NAME]], err.msg))
            continue;
        static pp_mem_result r;
        if (!tap_ok(pp_memory_estimate(&w, &l, &r, &err) == PP_OK, "%s: estimate", col[ix[NAME]]))
            continue;
        int stage = atoi(col[ix[STAGE]]);
        const pp_mem_stage *s = &r.stages[stage];
        bool oom = atoi(col[ix[OOM]]) != 0;
        char label[160];
        snprintf(label, sizeof label, "%s rank %s", col[ix[NAME]], col[ix[RANK]]);
        if (oom) {
            ooms++;
            tap_diag("%-24s %4s %5d %10s %10.0f %7s   (ran out of memory; ours: peak + reserve "
                     "%.0f MiB of %.0f)", col[ix[NAME]], col[ix[RANK]], stage, "OOM",
                     s->peak_bytes / MIB, "", (s->peak_bytes + s->reserved_bytes) / MIB,
                     r.capacity_bytes / MIB);
            tap_ok(!r.fits, "%s: OOM predicted (measured OOM)", label);
            continue;
        }
        fitted++;
        double meas = atof(col[ix[MAXA]]) * MIB;
        double err_pct = 100.0 * (s->peak_bytes - meas) / meas;
        sum_ape += fabs(err_pct);
        if (fabs(err_pct) > worst) {
            worst = fabs(err_pct);
            snprintf(worst_name, sizeof worst_name, "%s (%+.2f%%)", label, err_pct);
        }
        char est_txt[64] = "         -       -";
        if (col[ix[EST]][0]) {
            double est = atof(col[ix[EST]]) * MIB;
            double e = 100.0 * (est - meas) / meas;
            snprintf(est_txt, sizeof est_txt, "%10.0f %+6.1f%%", est / MIB, e);
            sum_est_ape += fabs(e);
            nest++;
            if (fabs(e) > worst_est) {
                worst_est = fabs(e);
                snprintf(worst_est_name, sizeof worst_est_name, "%s (%+.1f%%)", label, e);
            }
        }
        tap_diag("%-24s %4s %5d %10.0f %10.0f %+6.2f%% %s", col[ix[NAME]], col[ix[RANK]], stage,
                 meas / MIB, s->peak_bytes / MIB, err_pct, est_txt);
        tap_diag("%-24s parplan check %s --gpu h200 --gpus %s --attention unfused --no-bias-act-fusion --tp %s --pp %s "
                 "--mbs %s --gbs %s --seq %s --recompute %s%s --vpp %lld", "", how, col[ix[GPUS]],
                 col[ix[TP]], col[ix[PP]], col[ix[MBS]], col[ix[GBS]], col[ix[SEQ]], col[ix[RC]],
                 l.dist_opt ? " --dist-opt" : "", (long long)l.vpp);
        if (col[ix[SMI]][0])
            tap_diag("%-24s reserve: ours %.0f MiB, measured %.0f MiB beyond max allocated "
                     "(nvidia-smi peak) + 616 MiB the driver keeps back", "",
                     s->reserved_bytes / MIB, atof(col[ix[SMI]]) - meas / MIB);
        tap_ok(fabs(err_pct) <= 5.0, "%s: peak within 5%% (%+.2f%%)", label, err_pct);
        tap_ok(r.fits, "%s: fits predicted (measured: fitted)", label);
    }
    fclose(f);
    tap_ok(fitted >= 12, "at least 12 fitted rank rows (%d)", fitted);
    tap_ok(ooms >= 2, "at least 2 OOM runs (%d)", ooms);
    if (fitted) {
        tap_diag("ours:     MAPE %.2f%% over %d rank rows, worst %s", sum_ape / fitted, fitted,
                 worst_name);
        tap_ok(sum_ape / fitted <= 5.0, "MAPE %.2f%% <= 5%%", sum_ape / fitted);
    }
    if (nest)
        tap_diag("megatron: MAPE %.1f%% over %d rows (its estimate, rank 0 only), worst %s",
                 sum_est_ape / nest, nest, worst_est_name);
    return tap_done();
}
