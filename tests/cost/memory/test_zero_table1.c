/* Validation: ZeRO paper (Rajbhandari et al. 2020) table 1, per-GPU model-state memory by DP
 * degree and ZeRO stage (tests/data/validation/zero_table1_memory.csv), within 2% per row.
 * Each row goes through the model-state table the stages use (pp_memory_state_per_param), and
 * once through a whole DeepSpeed stage for a GPT whose parameters are counted by the model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem_shapes.h"
#include "pp_memory.h"
#include "tap.h"

int main(void)
{
    const char *shared = getenv("PARPLAN_DATA_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/validation/zero_table1_memory.csv", shared ? shared : "tests/data");
    FILE *f = fopen(path, "r");
    if (!tap_ok(f != NULL, "open %s", path)) return tap_done();
    char line[512];
    bool header = false;
    int n = 0;
    double sum = 0, worst = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        if (!header) {
            header = true;
            tap_ok(strncmp(line, "params_b,dp,stage,gb_meas", 25) == 0, "header: %.25s", line);
            continue;
        }
        double params_b, gb;
        long dp;
        int stage;
        if (sscanf(line, "%lf,%ld,%d,%lf", &params_b, &dp, &stage, &gb) != 4) {
            tap_ok(0, "parse row: %s", line);
            continue;
        }
        pp_state_bytes s;
        pp_memory_state_per_param(PP_FW_DEEPSPEED, stage, false, PP_OFF_NONE, dp, &s);
        double got = params_b * 1e9 * (s.weights + s.grads + s.optimizer) / 1e9;
        double err = 100.0 * (got - gb) / gb;
        sum += fabs(err);
        if (fabs(err) > worst) worst = fabs(err);
        n++;
        tap_ok(fabs(err) <= 2.0, "%gB, dp %ld, stage %d: %.2f GB vs %.2f GB (%+.2f%%)", params_b, dp,
               stage, got, gb, err);
    }
    fclose(f);
    tap_ok(n >= 14, "%d rows", n);
    if (n) tap_diag("ZeRO table 1: MAPE %.3f%%, worst %.3f%% over %d rows", sum / n, worst, n);

    /* Through a stage: a GPT with DeepSpeed ZeRO-2 on 16 GPUs keeps 2 + 14/16 bytes per
     * parameter of its rank. */
    pp_work w;
    memset(&w, 0, sizeof w);
    mem_shape(&w.model, "gpt-6.7b");
    mem_h200(&w.gpu);
    w.gpus = 16;
    w.gpus_per_node = 8;
    w.gbs = 64;
    w.framework = PP_FW_DEEPSPEED;
    w.attention = PP_ATTN_FLASH;
    pp_layout l;
    pp_layout_init(&l);
    l.zero = 2;
    pp_error err = {0};
    tap_ok(pp_layout_validate(&w, &l, &err) == PP_OK, "ZeRO-2 layout valid (%s)", err.msg);
    static pp_mem_result r;
    tap_ok(pp_memory_estimate(&w, &l, &r, &err) == PP_OK, "estimate");
    const pp_mem_stage *s = &r.stages[0];
    double params = s->weights_bytes / 2.0;
    tap_near(s->weights_bytes + s->grads_bytes + s->optimizer_bytes, params * (2 + 14.0 / 16), 1e-12,
             "stage state = params x (2 + 14/d)");
    pp_param_count pc;
    pp_model_params(&w.model, &pc);
    tap_near(params, (double)pc.total, 0.001, "stage parameters = the model's count (model.c)");
    return tap_done();
}
