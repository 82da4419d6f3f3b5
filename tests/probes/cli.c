/* `parplan probe` and parplan-probe without a GPU (suite unit): every probe exits 1 with one clear
 * line on stderr and nothing on stdout; bad input exits 2 with one line. CUDA_VISIBLE_DEVICES=""
 * hides any GPU, so this runs the same on a GPU machine. Without the CUDA build, `parplan probe`
 * must say so in one line. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    /* moe and mla: a model's own layer, so a model with one (bad input before any GPU is looked for) */
    {
        char *argv[] = {(char *)parplan, "probe", "moe", NULL};
        expect("parplan probe moe without --model", argv, no_gpu, 2, "--model");
    }
    {
        char *argv[] = {(char *)parplan, "probe", "mla", "--tp", "2", NULL};
        expect("parplan probe mla without --model", argv, no_gpu, 2, "--model");
    }
    {
        char *argv[] = {(char *)parplan, "probe", "moe", "--model", "gpt3-1.3b", NULL};
        expect("parplan probe moe on a dense model", argv, no_gpu, 2, "no MoE layers");
    }
    {
        char *argv[] = {(char *)parplan, "probe", "mla", "--model", "mixtral-8x7b", NULL};
        expect("parplan probe mla on a model without latent attention", argv, no_gpu, 2, "latent attention");
    }
    {
        char *argv[] = {(char *)parplan, "probe", "moe", "layer", "--model", "mixtral-8x7b", NULL};
        expect("parplan probe moe layer (one --hidden for two layers)", argv, no_gpu, 2, "apart");
    }
    {
        char *argv[] = {(char *)parplan, "probe", "layer", "--model", "mixtral-8x7b", "--ep", "2", NULL};
        expect("parplan probe layer --ep", argv, no_gpu, 2, "moe probe");
    }
    {
        char *argv[] = {(char *)parplan, "probe", "moe", "--model", "mixtral-8x7b", "--tp", "2", NULL};
        expect("parplan probe moe --tp 2 without --sp", argv, no_gpu, 2, "--sp");
    }
    {
        char *argv[] = {(char *)parplan, "probe", "moe", "--model", "mixtral-8x7b", "--ep", "3", NULL};
        expect("parplan probe moe --ep 3 of 8 experts", argv, no_gpu, 2, "ep 3");
    }
    {
        char *argv[] = {(char *)parplan, "probe", "moe", "--model", "mixtral-8x7b", "--experts", "4", NULL};
        expect("parplan probe moe --experts (a WORK override, not a probe option)", argv, no_gpu, 2, "--experts");
    }
#if PP_HAVE_CUDA
    /* the shapes parplan probe moe|mla derive from --model and the layout (a stand-in parplan-probe
     * that prints its arguments) */
    {
        char script[] = "/tmp/pp-probe-args-XXXXXX";
        int fd = mkstemp(script);
        const char *body = "#!/bin/sh\necho \"$*\"\n";
        bool made = fd >= 0 && write(fd, body, strlen(body)) == (ssize_t)strlen(body) && close(fd) == 0 &&
                    chmod(script, 0755) == 0;
        char env_probe[300];
        snprintf(env_probe, sizeof env_probe, "PARPLAN_PROBE=%s", script);
        const char *const env[] = {"CUDA_VISIBLE_DEVICES=", env_probe, NULL};
        static const struct {
            const char *what, *want;
            const char *args[16];
        } ok_cases[] = {
            {"moe, mixtral-8x7b at mbs 1", "moe --hidden 4096 --experts 8 --topk 2 --moe-ffn 14336 --tokens 32768 --ep 1 --moe-impl loop",
             {"moe", "--model", "mixtral-8x7b"}},
            {"moe, mixtral-8x7b tp2 sp ep4 mbs2 grouped: 32768 tokens per rank gathered over etp 2, half the expert FFN",
             "moe --hidden 4096 --experts 8 --topk 2 --moe-ffn 7168 --tokens 65536 --ep 4 --moe-impl grouped",
             {"moe", "--model", "mixtral-8x7b", "--tp", "2", "--sp", "--ep", "4", "--mbs", "2", "--moe-grouped-gemm"}},
            {"moe, mixtral-8x7b tp2 sp etp1 cp2: 8192 tokens, whole experts",
             "moe --hidden 4096 --experts 8 --topk 2 --moe-ffn 14336 --tokens 8192 --ep 1 --moe-impl loop",
             {"moe", "--model", "mixtral-8x7b", "--tp", "2", "--sp", "--etp", "1", "--cp", "2"}},
            {"mla, deepseek-v2-lite at tp 2, unfused",
             "mla --attention unfused --hidden 2048 --heads 16 --q-lora-rank 0 --kv-lora-rank 512 --qk-nope-dim 128 "
             "--qk-rope-dim 64 --v-head-dim 128 --seq 4096 --mbs 1 --tp 2",
             {"mla", "--model", "deepseek-v2-lite", "--tp", "2", "--attention", "unfused"}},
            {"moe mla, deepseek-v2-lite: one --hidden for both",
             "moe mla --hidden 2048 --experts 64 --topk 6 --moe-ffn 1408 --shared-ffn 2816 --tokens 4096 --ep 1 "
             "--moe-impl loop --heads 16 --q-lora-rank 0 --kv-lora-rank 512 --qk-nope-dim 128 --qk-rope-dim 64 "
             "--v-head-dim 128 --seq 4096 --mbs 1",
             {"moe", "mla", "--model", "deepseek-v2-lite"}},
        };
        for (size_t i = 0; made && i < sizeof ok_cases / sizeof ok_cases[0]; i++) {
            char *argv[20] = {(char *)parplan, "probe"};
            int n = 2;
            for (int k = 0; k < 16 && ok_cases[i].args[k]; k++) argv[n++] = (char *)ok_cases[i].args[k];
            argv[n] = NULL;
            probe_run r = probe_run_cmd(argv, env, 60);
            size_t ol = strlen(r.out);
            if (ol && r.out[ol - 1] == '\n') r.out[ol - 1] = 0;
            tap_ok(r.status == 0 && !strcmp(r.out, ok_cases[i].want), "parplan probe %s: '%s'", ok_cases[i].what, r.out);
            probe_run_free(&r);
        }
        tap_ok(made, "the stand-in parplan-probe %s", script);
        if (fd >= 0) remove(script);
    }

    {
        char *argv[] = {(char *)parplan, "probe", "nccl", NULL};
        expect("parplan probe with parplan-probe missing", argv, no_probe, 1, "not installed");
    }
    if (probe) {
        const char *names[] = {"gemm", "bandwidth", "attention", "layer", "optimizer", "nccl", "all", "moe", "mla"};
        for (int i = 0; i < 9; i++) {
            char *argv[] = {(char *)probe, (char *)names[i], "--quick", NULL};
            char what[64];
            snprintf(what, sizeof what, "parplan-probe %s", names[i]);
            expect(what, argv, no_gpu, 1, "no CUDA GPU");
        }
        {
            char *argv[] = {(char *)probe, "layer", "--hidden", "100", "--heads", "3", NULL};
            expect("parplan-probe --hidden 100 --heads 3", argv, no_gpu, 2, "multiple");
        }
        /* the layer's attention and the optimizer's sizes, checked before any GPU */
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
        /* fp8 GEMMs, the moe and mla probes: shapes checked before any GPU is looked for */
        {
            char *argv[] = {(char *)probe, "gemm", "--dtype", "fp8,bf16", NULL};
            expect("parplan-probe gemm --dtype fp8,bf16 without a GPU", argv, no_gpu, 1, "no CUDA GPU");
        }
        {
            char *argv[] = {(char *)probe, "moe", "--hidden", "4096", "--experts", "8", "--topk", "2", "--moe-ffn",
                            "14336", "--tokens", "4096,8192", "--ep", "1,2", "--moe-impl", "both", NULL};
            expect("parplan-probe moe (a valid shape) without a GPU", argv, no_gpu, 1, "no CUDA GPU");
        }
        {
            char *argv[] = {(char *)probe, "mla", "--hidden", "7168", "--heads", "128", "--q-lora-rank", "1536", "--tp",
                            "1,2,4,8", NULL};
            expect("parplan-probe mla (a valid shape) without a GPU", argv, no_gpu, 1, "no CUDA GPU");
        }
        {
            /* the expert implementation and the router are not shapes: the default shapes take them */
            char *argv[] = {(char *)probe, "moe", "--moe-impl", "loop", "--router", "sigmoid", "--quick", NULL};
            expect("parplan-probe moe --moe-impl loop --router sigmoid (default shapes) without a GPU", argv, no_gpu, 1,
                   "no CUDA GPU");
        }
        static const struct {
            const char *what, *want;
            const char *args[16];
        } bad[] = {
            {"--dtype fp9", "--dtype", {"gemm", "--dtype", "fp9"}},
            {"--dtype without a value", "needs a value", {"gemm", "--dtype"}},
            {"--dtype without gemm", "gemm probe", {"layer", "--dtype", "bf16"}},
            {"--experts without moe", "moe probe", {"gemm", "--experts", "8"}},
            {"--q-lora-rank without mla", "mla probe", {"moe", "--q-lora-rank", "64"}},
            {"moe --experts without --hidden", "--hidden", {"moe", "--experts", "8"}},
            {"moe --hidden without --experts", "--experts", {"moe", "--hidden", "4096"}},
            {"moe --topk 9 of 8", "--topk 9", {"moe", "--hidden", "4096", "--experts", "8", "--topk", "9", "--moe-ffn", "1024"}},
            {"moe --topk 0", "--topk", {"moe", "--hidden", "4096", "--experts", "8", "--topk", "0", "--moe-ffn", "1024"}},
            {"moe --topk 33", "--topk", {"moe", "--hidden", "4096", "--experts", "64", "--topk", "33", "--moe-ffn", "1024"}},
            {"moe --experts x", "--experts", {"moe", "--hidden", "4096", "--experts", "x", "--topk", "2", "--moe-ffn", "1024"}},
            {"moe --moe-ffn 12", "multiples of 8", {"moe", "--hidden", "4096", "--experts", "8", "--topk", "2", "--moe-ffn", "12"}},
            {"moe --ep 3 of 8 experts", "--ep 3", {"moe", "--hidden", "4096", "--experts", "8", "--topk", "2", "--moe-ffn", "1024", "--ep", "3"}},
            {"moe --ep 0", "--ep", {"moe", "--hidden", "4096", "--experts", "8", "--topk", "2", "--moe-ffn", "1024", "--ep", "0"}},
            {"moe --ep 1,,2", "--ep", {"moe", "--hidden", "4096", "--experts", "8", "--topk", "2", "--moe-ffn", "1024", "--ep", "1,x"}},
            {"moe --tokens 8", "--tokens", {"moe", "--hidden", "4096", "--experts", "8", "--topk", "2", "--moe-ffn", "1024", "--tokens", "8"}},
            {"moe --tokens too few for the experts", "without tokens", {"moe", "--hidden", "4096", "--experts", "256", "--topk", "1", "--moe-ffn", "1024", "--tokens", "128"}},
            {"moe --imbalance 0.5", "--imbalance", {"moe", "--hidden", "4096", "--experts", "8", "--topk", "2", "--moe-ffn", "1024", "--imbalance", "0.5"}},
            {"moe --imbalance 5 (over every token)", "every token", {"moe", "--hidden", "4096", "--experts", "8", "--topk", "2", "--moe-ffn", "1024", "--imbalance", "5"}},
            {"moe --imbalance 3 with one local expert", "local experts", {"moe", "--hidden", "4096", "--experts", "8", "--topk", "1", "--moe-ffn", "1024", "--ep", "8", "--imbalance", "3"}},
            {"moe --moe-impl fast", "--moe-impl", {"moe", "--hidden", "4096", "--experts", "8", "--topk", "2", "--moe-ffn", "1024", "--moe-impl", "fast"}},
            {"moe --router relu", "--router", {"moe", "--hidden", "4096", "--experts", "8", "--topk", "2", "--moe-ffn", "1024", "--router", "relu"}},
            {"moe --tp 2", "--tokens", {"moe", "--hidden", "4096", "--experts", "8", "--topk", "2", "--moe-ffn", "1024", "--tp", "2"}},
            {"moe --ffn (a dense layer's)", "--moe-ffn", {"moe", "--hidden", "4096", "--experts", "8", "--topk", "2", "--moe-ffn", "1024", "--ffn", "4096"}},
            {"moe with gemm and --hidden", "apart from", {"gemm", "moe", "--hidden", "4096", "--heads", "32"}},
            {"mla --hidden without --heads", "--heads", {"mla", "--hidden", "7168"}},
            {"mla --heads without --hidden", "--hidden", {"mla", "--heads", "128"}},
            {"mla --tp 3 of 128 heads", "--tp 3", {"mla", "--hidden", "7168", "--heads", "128", "--tp", "3"}},
            {"mla --qk-rope-dim 65", "multiples of 8", {"mla", "--hidden", "7168", "--heads", "128", "--qk-rope-dim", "65"}},
            {"mla --kv-lora-rank -1", "--kv-lora-rank", {"mla", "--hidden", "7168", "--heads", "128", "--kv-lora-rank", "-1"}},
            {"mla --v-head-dim x", "--v-head-dim", {"mla", "--hidden", "7168", "--heads", "128", "--v-head-dim", "x"}},
            {"mla --qk-nope-dim without a value", "needs a value", {"mla", "--hidden", "7168", "--heads", "128", "--qk-nope-dim"}},
            {"mla --q-lora-rank 12", "multiples of 8", {"mla", "--hidden", "7168", "--heads", "128", "--q-lora-rank", "12"}},
            {"--no-mlp without layer", "layer probe", {"moe", "--no-mlp"}},
            {"layer --no-mlp --ffn", "--no-mlp", {"layer", "--no-mlp", "--hidden", "2048", "--heads", "16", "--ffn", "8192"}},
            {"layer --no-mlp --swiglu", "--no-mlp", {"layer", "--no-mlp", "--hidden", "2048", "--heads", "16", "--swiglu"}},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            char *argv[20] = {(char *)probe};
            int n = 1;
            for (int k = 0; k < 16 && bad[i].args[k]; k++) argv[n++] = (char *)bad[i].args[k];
            argv[n] = NULL;
            char what[96];
            snprintf(what, sizeof what, "parplan-probe %s", bad[i].what);
            expect(what, argv, no_gpu, 2, bad[i].want);
        }
        /* the fault flags and knobs are checked before any GPU is looked for */
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
