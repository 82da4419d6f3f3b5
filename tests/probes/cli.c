/* `parplan probe` and parplan-probe without a GPU (suite unit): every probe exits 1 with one clear
 * line on stderr and nothing on stdout; bad input exits 2 with one line. CUDA_VISIBLE_DEVICES=""
 * hides any GPU, so this runs the same on a GPU machine. Without the CUDA build, `parplan probe`
 * must say so in one line. */
#include <stdio.h>
#include <string.h>

#include "pp_config.h"
#include "run.h"
#include "tap.h"

static void expect(const char *what, char *const argv[], const char *const env[], int want_status,
                   const char *want_in_err)
{
    probe_run r = probe_run_cmd(argv, env, 120);
    int lines = probe_count_lines(r.err);
    tap_ok(r.status == want_status, "%s: exit %d (want %d)", what, r.status, want_status);
    tap_ok(lines == 1 && !strncmp(r.err, "parplan: ", 9), "%s: one 'parplan: ' line on stderr", what);
    tap_ok(r.out[0] == 0, "%s: nothing on stdout", what);
    tap_ok(!want_in_err || strstr(r.err, want_in_err), "%s: the line says '%s'", what,
           want_in_err ? want_in_err : "");
    if (lines != 1 || r.status != want_status) tap_diag("stderr: %s", r.err);
    probe_run_free(&r);
}

int main(void)
{
    const char *parplan = getenv("PARPLAN");
    const char *probe = getenv("PARPLAN_PROBE_EXE");
    const char *const no_gpu[] = {"CUDA_VISIBLE_DEVICES=", NULL};
    const char *const no_probe[] = {"CUDA_VISIBLE_DEVICES=", "PARPLAN_PROBE=/nonexistent/parplan-probe", NULL};
    if (!parplan) return tap_skip_all("PARPLAN is not set");
#if PP_HAVE_CUDA
    const char *why = "no CUDA GPU";
#else
    const char *why = "without the GPU probes";
#endif
    {
        char *argv[] = {(char *)parplan, "probe", "gemm", NULL};
        expect("parplan probe gemm", argv, no_gpu, 1, why);
    }
    {
        char *argv[] = {(char *)parplan, "probe", "-o", "/tmp/pp_probe_cli_never.yaml", NULL};
        expect("parplan probe (all)", argv, no_gpu, 1, why);
        tap_ok(access("/tmp/pp_probe_cli_never.yaml", F_OK) != 0, "no profile is written without a GPU");
    }
    {
        char *argv[] = {(char *)parplan, "probe", "warp", NULL};
        expect("parplan probe warp", argv, no_gpu, 2, "unknown probe");
    }
    {
        char *argv[] = {(char *)parplan, "probe", "layer", "--tp", "2", NULL};
        expect("parplan probe --tp without --model", argv, no_gpu, 2, "--model");
    }
#if PP_HAVE_CUDA
    {
        char *argv[] = {(char *)parplan, "probe", "nccl", NULL};
        expect("parplan probe with parplan-probe missing", argv, no_probe, 1, "not installed");
    }
    if (probe) {
        const char *names[] = {"gemm", "bandwidth", "attention", "layer", "optimizer", "nccl", "all"};
        for (int i = 0; i < 7; i++) {
            char *argv[] = {(char *)probe, (char *)names[i], "--quick", NULL};
            char what[64];
            snprintf(what, sizeof what, "parplan-probe %s", names[i]);
            expect(what, argv, no_gpu, 1, "no CUDA GPU");
        }
        {
            char *argv[] = {(char *)probe, "layer", "--hidden", "100", "--heads", "3", NULL};
            expect("parplan-probe --hidden 100 --heads 3", argv, no_gpu, 2, "multiple");
        }
        /* issue 8: the layer's attention and the optimizer's sizes, checked before any GPU */
        {
            char *argv[] = {(char *)probe, "layer", "--hidden", "1024", "--heads", "16", "--attention", "bogus", NULL};
            expect("parplan-probe --attention bogus", argv, no_gpu, 2, "--attention");
        }
        {
            char *argv[] = {(char *)probe, "optimizer", "--params", "5", NULL};
            expect("parplan-probe optimizer --params 5", argv, no_gpu, 2, "--params");
        }
        {
            char *argv[] = {(char *)probe, "gemm", "--params", "100000000", NULL};
            expect("parplan-probe gemm --params", argv, no_gpu, 2, "optimizer probe");
        }
        /* issue 9: the fault flags and knobs are checked before any GPU is looked for */
        {
            char *argv[] = {(char *)probe, "nccl", "--timeout-s", "0", NULL};
            expect("parplan-probe --timeout-s 0", argv, no_gpu, 2, "--timeout-s");
        }
        {
            char *argv[] = {(char *)probe, "gemm", "--mem-limit-gib", "-1", NULL};
            expect("parplan-probe --mem-limit-gib -1", argv, no_gpu, 2, "--mem-limit-gib");
        }
        {
            char *argv[] = {(char *)probe, "gemm", NULL};
            const char *const env[] = {"CUDA_VISIBLE_DEVICES=", "PARPLAN_PROBE_MAX_BYTES=4Q", NULL};
            expect("PARPLAN_PROBE_MAX_BYTES=4Q", argv, env, 2, "PARPLAN_PROBE_MAX_BYTES");
        }
        {
            char *argv[] = {(char *)probe, "nccl", NULL};
            const char *const env[] = {"CUDA_VISIBLE_DEVICES=", "PARPLAN_PROBE_INJECT_HANG=sometimes", NULL};
            expect("PARPLAN_PROBE_INJECT_HANG=sometimes", argv, env, 2, "PARPLAN_PROBE_INJECT_HANG");
        }
        {
            char *argv[] = {(char *)probe, "nccl", NULL};
            const char *const env[] = {"CUDA_VISIBLE_DEVICES=", "PARPLAN_PROBE_TIMEOUT_S=-3", NULL};
            expect("PARPLAN_PROBE_TIMEOUT_S=-3", argv, env, 2, "PARPLAN_PROBE_TIMEOUT_S");
        }
        {
            /* no GPU at all: the existing one-line message, whatever index was asked */
            char *argv[] = {(char *)probe, "gemm", "--gpu-index", "7", NULL};
            expect("parplan-probe --gpu-index 7 without a GPU", argv, no_gpu, 1, "no CUDA GPU");
        }
        {
            char *argv[] = {(char *)probe, "--count", NULL};
            probe_run r = probe_run_cmd(argv, no_gpu, 60);
            tap_ok(r.status == 0 && !strcmp(r.out, "0\n"), "parplan-probe --count without a GPU prints 0 (status %d)", r.status);
            probe_run_free(&r);
        }
    }
#else
    (void)no_probe;
    (void)probe;
#endif
    return tap_done();
}
