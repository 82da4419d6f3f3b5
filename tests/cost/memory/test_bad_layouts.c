/* Bad layouts through the CLI: `parplan check` must reject each with exit 2, one stderr line
 * "parplan: <reason>" naming what is wrong, and nothing on stdout (the rules live in
 * planner/common.c pp_layout_validate). Runs $PARPLAN. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"
#include "tap.h"

typedef struct {
    const char *why;     /* must appear in the message */
    const char *args[24];
} bad_case;

#define W13 "--model", "gpt3-13b", "--gpu", "a100-80gb"
static const bad_case cases[] = {
    {"does not divide the 40 attention heads", {W13, "--gpus", "24", "--tp", "3"}},
    {"does not divide --gpus", {W13, "--gpus", "16", "--tp", "2", "--pp", "3"}},
    {"must equal --gpus", {W13, "--gpus", "16", "--tp", "2", "--dp", "3"}},
    {"not divisible by dp x mbs", {W13, "--gpus", "8", "--gbs", "1000", "--mbs", "3"}},
    {"needs a model with experts", {W13, "--gpus", "8", "--ep", "2"}},
    {"does not divide the 8 experts", {"--model", "mixtral-8x7b", "--gpu", "a100-80gb", "--gpus", "24",
                                        "--ep", "3"}},
    {"--sp needs --tp", {W13, "--gpus", "8", "--sp"}},
    {"use --dist-opt", {W13, "--gpus", "8", "--zero", "2"}},
    {"--dist-opt is Megatron", {W13, "--gpus", "8", "--framework", "deepspeed", "--dist-opt"}},
    {"does not combine ZeRO stage 2 with pipeline",
     {W13, "--gpus", "8", "--framework", "deepspeed", "--zero", "2", "--pp", "2"}},
    {"--vpp 2 needs --pp", {W13, "--gpus", "8", "--vpp", "2"}},
    /* pp x vpp need not divide the layers (the balanced split), but every virtual stage needs a
     * slot: 4 x 11 = 44 virtual stages for 40 layers + the embedding + the loss */
    {"44 virtual stages: more than the 40 layers", {W13, "--gpus", "8", "--pp", "4", "--vpp", "11"}},
    {"needs --recompute full", {W13, "--gpus", "8", "--recompute-layers", "2"}},
    {"more than the 20 layers of a stage",
     {W13, "--gpus", "8", "--pp", "2", "--recompute", "full", "--recompute-layers", "30"}},
    {"more than the 40 layers", {W13, "--gpus", "64", "--pp", "64"}},
    {"not divisible by 2*cp", {W13, "--gpus", "24", "--cp", "3"}},
    {"does not divide the FFN size", {"--layers", "4", "--hidden", "512", "--heads", "8", "--ffn", "1002",
                                      "--vocab", "1000", "--seq", "128", "--gpu", "a100-80gb",
                                      "--gpus", "4", "--tp", "4"}},
    {"divisible by --pp", {W13, "--gpus", "16", "--pp", "4", "--vpp", "2", "--gbs", "12", "--dp", "4",
                           "--mbs", "1"}},
    /* FSDP2 options (memory_fsdp.c): HSDP and the AdamW implementation are FSDP's */
    {"only with --framework fsdp", {W13, "--gpus", "8", "--replicate", "2"}},
    {"needs --zero 2 or 3", {W13, "--gpus", "8", "--framework", "fsdp", "--replicate", "2"}},
    {"does not divide the 8 data-parallel", {W13, "--gpus", "8", "--framework", "fsdp", "--zero", "3",
                                             "--replicate", "3"}},
    {"--optimizer-impl is torch AdamW", {W13, "--gpus", "8", "--optimizer-impl", "foreach"}},
    {"expects fused|foreach", {W13, "--gpus", "8", "--framework", "fsdp", "--optimizer-impl", "for-loop"}},
};

int main(void)
{
    const char *exe = getenv("PARPLAN");
    if (!exe || !*exe) return tap_skip_all("PARPLAN not set");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *argv[32];
        int n = 0;
        argv[n++] = (char *)exe;
        argv[n++] = "check";
        char cmd[512] = "check";
        for (int k = 0; cases[i].args[k]; k++) {
            argv[n++] = (char *)cases[i].args[k];
            strncat(cmd, " ", sizeof cmd - strlen(cmd) - 1);
            strncat(cmd, cases[i].args[k], sizeof cmd - strlen(cmd) - 1);
        }
        argv[n] = NULL;
        tc_proc r;
        tc_run(argv, &r);
        const char *nl = strchr(r.err, '\n');
        bool one_line = nl && nl[1] == 0;
        bool ok = r.status == 2 && one_line && strncmp(r.err, "parplan: ", 9) == 0 &&
                  strstr(r.err, cases[i].why) && r.out_len == 0;
        tap_ok(ok, "exit 2 \"%s\": %s", cases[i].why, cmd);
        if (!ok) tap_diag("status %d, stderr: %s, stdout %zu bytes", r.status, r.err, r.out_len);
        tc_proc_result_free(&r);
    }
    return tap_done();
}
