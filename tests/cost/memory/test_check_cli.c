/* `parplan check` through the CLI: the per-stage table, and --json with the fields
 * docs/cli.md fixes for check, consistent with each other. Runs $PARPLAN. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"
#include "tap.h"

/* The number after "key": at or after from; NAN when absent. */
static double json_num(const char *text, const char *key, const char **from)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(from && *from ? *from : text, pat);
    if (!p) return NAN;
    if (from) *from = p + strlen(pat);
    return strtod(p + strlen(pat), NULL);
}

int main(void)
{
    const char *exe = getenv("PARPLAN");
    if (!exe || !*exe) return tap_skip_all("PARPLAN not set");
    char *table_argv[] = {(char *)exe, "check", "--model", "gpt3-13b", "--gpu", "a100-80gb", "--gpus",
                          "16", "--gpus-per-node", "8", "--tp", "2", "--pp", "2", "--mbs", "1", NULL};
    tc_proc r;
    tc_run(table_argv, &r);
    /* 70.6 of 80 GiB: fits (exit 0), above the 70.4 GiB plan fills by default: one warning says so */
    tap_ok(r.status == 0 && strstr(r.err, "needs 70.6 of 80.0 GiB (88%): fits, but inside the 12% plan keeps free") &&
               !strchr(strchr(r.err, '\n') + 1, '\n'),
           "check gpt3-13b tp 2 pp 2 on 16 x a100-80gb: exit 0, one warning: inside plan's margin");
    tap_ok(strstr(r.out, "stage") && strstr(r.out, "weights") && strstr(r.out, "activations") &&
               strstr(r.out, "reserved") && strstr(r.out, "<- largest"),
           "table: per-stage columns and the largest stage named");
    tap_ok(strstr(r.out, "\n    0 ") && strstr(r.out, "\n    1 "), "table: one row per stage (0, 1)");
    tap_ok(strstr(r.out, "step time") != NULL, "table: predicted step time");
    printf("%s", "# ");
    for (const char *p = r.out; *p; p++) printf(*p == '\n' && p[1] ? "\n# " : "%c", *p);
    tc_proc_result_free(&r);

    char *json_argv[] = {(char *)exe, "check", "--model", "gpt3-13b", "--gpu", "a100-80gb", "--gpus",
                         "16", "--gpus-per-node", "8", "--tp", "2", "--pp", "2", "--mbs", "1",
                         "--json", NULL};
    tc_run(json_argv, &r);
    tap_ok(r.status == 0, "check --json: exit 0");
    const char *keys[] = {"fits", "capacity_bytes", "peak_bytes", "stages", "stage", "layers",
                          "breakdown", "weights", "grads", "optimizer", "activations", "transient",
                          "reserved", "step_time_s", "samples_per_s", "tokens_per_s",
                          "model_tflops_per_gpu", "mfu"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char pat[64];
        snprintf(pat, sizeof pat, "\"%s\":", keys[i]);
        tap_ok(strstr(r.out, pat) != NULL, "json has \"%s\"", keys[i]);
    }
    tap_ok(strstr(r.out, "\"fits\": true") != NULL, "fits: true");
    double peak = json_num(r.out, "peak_bytes", NULL);
    const char *cur = strstr(r.out, "\"stages\"");
    double worst = 0, sum_ok = 1;
    for (int st = 0; st < 2; st++) {
        double sp = json_num(r.out, "peak_bytes", &cur);
        double wts = json_num(r.out, "weights", &cur), g = json_num(r.out, "grads", &cur);
        double o = json_num(r.out, "optimizer", &cur), a = json_num(r.out, "activations", &cur);
        double t = json_num(r.out, "transient", &cur);
        if (fabs(wts + g + o + a + t - sp) > 8) sum_ok = 0;
        if (sp > worst) worst = sp;
    }
    tap_ok(sum_ok, "each stage: peak = weights + grads + optimizer + activations + transient");
    tap_ok(peak == worst && peak > 0, "peak_bytes = the largest stage peak (%.0f)", peak);
    double step = json_num(r.out, "step_time_s", NULL);
    tap_ok(isfinite(step) && step > 0, "step_time_s %.3f", step);
    tc_proc_result_free(&r);
    /* DeepSeek-V3's own layout (DeepSeek-AI 2024, arXiv:2412.19437 sec. 3.2-3.3: 2048 H800 of
     * 80 GB, PP 16, EP 64, ZeRO-1-style sharding over the DP ranks, FP8 with linear inputs cached
     * in FP8, RMSNorm, MLA up-projections and the experts' SwiGLU recomputed; grouped experts,
     * which Megatron's moe_act recompute needs) fits in 80 GB;
     * without the recompute or the FP8 caching it does not. */
    char *dsv3[] = {(char *)exe, "check", "--model", "deepseek-v3", "--gpu", "h100-sxm", "--gpus", "2048",
                    "--tp", "1", "--pp", "16", "--ep", "64", "--dist-opt", "--mbs", "1", "--gbs", "15360",
                    "--recompute", "selective", "--recompute-modules", "layernorm,mla_up_proj,moe_act",
                    "--precision", "fp8", "--moe-grouped-gemm", "--json", NULL};
    tc_run(dsv3, &r);
    double dpeak = json_num(r.out, "peak_bytes", NULL), dcap = json_num(r.out, "capacity_bytes", NULL);
    tap_ok(r.status == 0 && strstr(r.out, "\"fits\": true") != NULL && dpeak < dcap,
           "DeepSeek-V3's own layout (tp1 pp16 ep64 dist-opt, fp8, recompute layernorm/mla_up_proj/moe_act) "
           "fits in 80 GB: peak %.1f GiB", dpeak / 1073741824.0);
    tc_proc_result_free(&r);
    dsv3[24] = "bf16";
    tc_run(dsv3, &r);
    tap_ok(r.status == 1 && strstr(r.out, "\"fits\": false") != NULL,
           "the same in bf16 (no FP8 activation caching) does not fit (exit 1)");
    tc_proc_result_free(&r);
    /* --max-mem-frac: the capacity every verdict uses is that fraction of the GPU's; llama3-8b FSDP on
     * one H200 at 4K (124.6 GiB allocator peak, measured: tests/data/fsdp) fits the whole GPU and
     * not 0.85 of it. */
    char *frac[] = {(char *)exe, "check", "--model", "llama3-8b", "--gpu", "h200", "--gpus", "1", "--gbs", "1",
                    "--mbs", "1", "--seq", "4096", "--framework", "fsdp", "--zero", "3", "--recompute", "full",
                    "--json", NULL, NULL, NULL};
    tc_run(frac, &r);
    double cap1 = json_num(r.out, "capacity_bytes", NULL);
    bool fit1 = r.status == 0 && strstr(r.out, "\"fits\": true") != NULL;
    tc_proc_result_free(&r);
    frac[21] = "--max-mem-frac";
    frac[22] = "0.85";
    tc_run(frac, &r);
    double cap2 = json_num(r.out, "capacity_bytes", NULL);
    tap_ok(fit1 && r.status == 1 && strstr(r.out, "\"fits\": false") != NULL && fabs(cap2 - 0.85 * cap1) < 1.0,
           "--max-mem-frac 0.85: capacity %.1f of %.1f GiB, and 8B FSDP at 4K no longer fits", cap2 / 1073741824.0,
           cap1 / 1073741824.0);
    tc_proc_result_free(&r);
    return tap_done();
}
