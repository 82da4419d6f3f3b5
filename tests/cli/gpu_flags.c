/* The GPU as the run had it, through the CLI: --gpu-mem-gib (the capacity every verdict uses),
 * --gpu-power-w and a catalog entry's gpu_power_w (dense GEMM throughput by the power curve of
 * planner/model/gpu_power.c), the notes check and estimate print, the "gpu_effective" JSON, plan
 * searching the effective capacity, and launch writing what it wrote before. Runs $PARPLAN. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"
#include "tap.h"

#define GIB 1073741824.0

/* The number after "key": (the first one at or after from); NAN when absent. */
static double json_num(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

/* Run parplan with the fixed work (Llama 3 8B on 8 GPUs, TP 2, micro-batch 2, distributed
 * optimizer: about 88 GiB per GPU) and the extra arguments, NULL-terminated. */
static void run(tc_proc *r, const char *cmd, const char *gpu, const char *const *extra)
{
    const char *exe = getenv("PARPLAN");
    const char *argv[48] = {exe, cmd, "--model", "llama3-8b", "--gpu", gpu, "--gpus", "8", "--tp", "2", "--mbs", "2",
                            "--dist-opt"};
    int n = 13;
    for (; extra && *extra && n < 46; extra++) argv[n++] = *extra;
    argv[n] = NULL;
    tc_run((char **)argv, r);
}

static void capacity(void)
{
    tc_proc r;
    /* Llama 3 8B, TP 2, micro-batch 2, no sequence parallelism: about 88 GiB on the fullest GPU
     * (activations of 2 x 8192 tokens at TP 2 beside the sharded model state): out of an 80 GiB
     * GPU's memory, inside a 96 GiB one. */
    run(&r, "check", "h100-sxm", (const char *const[]){"--gpu-mem-gib", "80", "--json", NULL});
    double need = json_num(r.out, "need_bytes");
    tap_ok(r.status == 1 && strstr(r.out, "\"fits\": false"), "--gpu-mem-gib 80: out of memory (exit %d)", r.status);
    tap_ok(json_num(r.out, "capacity_bytes") == 80 * GIB, "--gpu-mem-gib 80: capacity_bytes is 80 GiB");
    tap_ok(need > 84 * GIB && need < 92 * GIB, "the run needs %.1f GiB (84 to 92)", need / GIB);
    tc_proc_result_free(&r);

    run(&r, "check", "h100-sxm", (const char *const[]){"--gpu-mem-gib", "96", "--json", NULL});
    tap_ok(r.status == 0 && strstr(r.out, "\"fits\": true"), "--gpu-mem-gib 96: fits (exit %d)", r.status);
    tap_ok(json_num(r.out, "capacity_bytes") == 96 * GIB, "--gpu-mem-gib 96: capacity_bytes is 96 GiB");
    tap_ok(json_num(r.out, "need_bytes") == need, "the need does not depend on the capacity");
    const char *eff = strstr(r.out, "\"gpu_effective\"");
    tap_ok(eff && strstr(eff, "\"memory_from\": \"--gpu-mem-gib\"") && json_num(eff, "memory_bytes") == 96 * GIB &&
               json_num(eff, "entry_memory_bytes") == 81559 * 1048576.0,
           "gpu_effective: memory 96 GiB from --gpu-mem-gib, the entry's 81559 MiB kept");
    tap_ok(strstr(r.err, "parplan: warning: capacity 96.0 GiB from --gpu-mem-gib (h100-sxm's entry has 79.6 GiB)") != NULL,
           "check notes the capacity: %.200s", r.err);
    tc_proc_result_free(&r);

    /* --max-mem-frac takes its share of the given memory */
    run(&r, "check", "h100-sxm", (const char *const[]){"--gpu-mem-gib", "96", "--max-mem-frac", "0.5", "--json", NULL});
    tap_ok(json_num(r.out, "capacity_bytes") == 48 * GIB && r.status == 1, "--gpu-mem-gib 96 --max-mem-frac 0.5: 48 GiB");
    tc_proc_result_free(&r);

    /* plan searches with the effective capacity: with TP 2, micro-batch 2 and the distributed
     * optimizer fixed and sequence parallelism kept out, its #1 at 96 GiB is the 88 GiB layout
     * above (planning with the whole GPU: 88.4 GiB is inside the default 12% margin of 96); at the
     * entry's 79.6 GiB that one is pruned and #1 is another that fits */
    run(&r, "plan", "h100-sxm",
        (const char *const[]){"--no-sp", "--gpu-mem-gib", "96", "--max-mem-frac", "1", "--json", NULL});
    tap_ok(r.status == 0 && json_num(r.out, "capacity_bytes") == 96 * GIB, "plan --gpu-mem-gib 96: capacity_bytes 96 GiB");
    tap_ok(json_num(r.out, "need_bytes") == need, "plan ranks the layout that needs %.1f GiB",
           json_num(r.out, "need_bytes") / GIB);
    tc_proc_result_free(&r);
    run(&r, "plan", "h100-sxm", (const char *const[]){"--no-sp", "--json", NULL});
    tap_ok(r.status == 0 && json_num(r.out, "need_bytes") <= 0.88 * 81559 * 1048576.0,
           "plan at the entry's 79.6 GiB: the best layout needs %.1f GiB", json_num(r.out, "need_bytes") / GIB);
    tc_proc_result_free(&r);
    run(&r, "plan", "h100-sxm", (const char *const[]){"--no-sp", "--gpu-mem-gib", "96", NULL});
    tap_ok(r.status == 0 && strstr(r.out, "gpu: capacity 96.0 GiB from --gpu-mem-gib"), "plan's table names the capacity");
    tc_proc_result_free(&r);

    /* launch writes the config as before: the capacity changes its header's figures only */
    run(&r, "launch", "h100-sxm", (const char *const[]){"--gpu-mem-gib", "80", "--format", "torchrun", NULL});
    tap_ok(r.status == 0 && r.out_len > 0 && strstr(r.err, "predicted not to fit"),
           "launch --gpu-mem-gib 80: writes the config, warns it does not fit (exit %d)", r.status);
    tc_proc_result_free(&r);
}

static void power(void)
{
    tc_proc r;
    run(&r, "check", "h100-sxm", (const char *const[]){"--gpu-mem-gib", "96", "--json", NULL});
    double full = json_num(r.out, "step_time_s"), mfu_full = json_num(r.out, "mfu");
    const char *eff = strstr(r.out, "\"gpu_effective\"");
    tap_ok(eff && json_num(eff, "gemm_power_factor") == 1 && json_num(eff, "power_w") == 700 &&
               json_num(eff, "max_power_w") == 700,
           "h100-sxm: 700 of 700 W, factor 1");
    tc_proc_result_free(&r);

    run(&r, "check", "h100-sxm", (const char *const[]){"--gpu-mem-gib", "96", "--gpu-power-w", "500", "--json", NULL});
    double capped = json_num(r.out, "step_time_s");
    eff = strstr(r.out, "\"gpu_effective\"");
    tap_ok(eff && fabs(json_num(eff, "gemm_power_factor") - 0.904) < 5e-4 && json_num(eff, "power_w") == 500 &&
               strstr(eff, "\"power_from\": \"--gpu-power-w\""),
           "--gpu-power-w 500: factor %.4f (0.904), power_w 500 from the flag", eff ? json_num(eff, "gemm_power_factor") : NAN);
    tap_near(json_num(eff, "gemm_flops"), 989.4e12 * 0.8 * json_num(eff, "gemm_power_factor"), 1e-9,
             "gemm_flops = peak x gemm_eff x factor");
    /* Only the tensor-core time slows: the step grows, by less than 1 / 0.904 */
    tap_ok(capped > 1.03 * full && capped < full / 0.904, "500 W: step %.3f s against %.3f s at 700 W (x%.3f)", capped,
           full, capped / full);
    tap_near(json_num(r.out, "mfu") * capped, mfu_full * full, 1e-5, "MFU against the same datasheet peak");
    tap_ok(strstr(r.err, "parplan: warning: GPU at 500 W of 700 W (--gpu-power-w): dense GEMM throughput x0.90 "
                         "(power curve of planner/model/gpu_power.c") != NULL,
           "check notes the power limit: %.300s", r.err);
    tc_proc_result_free(&r);

    /* The catalog's Grand Teton H100 carries its 500 W limit; the flag overrides it */
    run(&r, "check", "h100-96gb-gt500w", (const char *const[]){"--json", NULL});
    eff = strstr(r.out, "\"gpu_effective\"");
    tap_ok(r.status == 0 && eff && json_num(eff, "power_w") == 500 && strstr(eff, "\"power_from\": \"entry\"") &&
               json_num(eff, "memory_bytes") == 94 * GIB,
           "h100-96gb-gt500w: 500 W from the entry, 94 GiB");
    tap_ok(strstr(r.err, "GPU at 500 W of 700 W (h100-96gb-gt500w's gpu_power_w): dense GEMM throughput x0.90") != NULL,
           "the entry's limit is noted: %.200s", r.err);
    tc_proc_result_free(&r);
    run(&r, "check", "h100-96gb-gt500w", (const char *const[]){"--gpu-power-w", "700", "--json", NULL});
    eff = strstr(r.out, "\"gpu_effective\"");
    tap_ok(r.status == 0 && eff && json_num(eff, "gemm_power_factor") == 1 && !strstr(r.err, "GPU at"),
           "--gpu-power-w 700 lifts the entry's limit: factor 1, no note");
    tc_proc_result_free(&r);

    /* estimate notes it too and carries gpu_effective; launch writes its config unchanged in form */
    run(&r, "estimate", "h100-sxm",
        (const char *const[]){"--gpu-power-w", "500", "--gpu-mem-gib", "96", "--tokens", "1e9", "--json", NULL});
    tap_ok(r.status == 0 && strstr(r.out, "\"gpu_effective\"") && strstr(r.err, "GPU at 500 W of 700 W") &&
               strstr(r.err, "capacity 96.0 GiB from --gpu-mem-gib"),
           "estimate: both notes and gpu_effective");
    tc_proc_result_free(&r);
    run(&r, "launch", "h100-sxm", (const char *const[]){"--gpu-power-w", "500", "--gpu-mem-gib", "96", "--format", "megatron", NULL});
    tap_ok(r.status == 0 && strstr(r.out, "pretrain_gpt.py"), "launch --gpu-power-w 500: the Megatron script (exit %d)",
           r.status);
    tc_proc_result_free(&r);
}

int main(void)
{
    const char *exe = getenv("PARPLAN");
    if (!exe || !*exe) return tap_skip_all("PARPLAN not set");
    capacity();
    power();
    return tap_done();
}
