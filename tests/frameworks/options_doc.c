/* docs/megatron-options.md is the argument table of planner/frameworks/megatron_args.c, written
 * out: every Megatron-LM argument parplan reads, passes over, names as not modelled, or names as a
 * fused kernel switched off. The test fails when the page and the table differ
 * (PARPLAN_UPDATE_DOCS=1 rewrites the page).
 *   options_doc SOURCE_DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "megatron_args.h"
#include "tap.h"

static const char *const classes[] = {"read", "not modelled", "fused kernel", "ignored"};
static const char *const what[] = {
    "read: the model, the layout or the stack (a recipe field or a flag of parplan's)",
    "not modelled: it changes memory or step time; `--megatron-args` names it in one warning when it is "
    "set off the value(s) that change nothing",
    "fused kernel: TransformerEngine runs it by default, and the time model assumes it with TE; named when "
    "switched off with TE",
    "ignored: it changes neither memory nor step time (logging, paths, data, schedule, seeds, checkpoints)",
};

static void page(FILE *f)
{
    fprintf(f, "# Megatron-LM's arguments in parplan\n\n"
               "What `--megatron-args` (a command line, a launch script or a training log's argument dump)\n"
               "does with each argument of Megatron-LM (NVIDIA/Megatron-LM@d98e8a64, megatron/training/arguments.py;\n"
               "its flags: tests/data/megatron_flags.txt). Written from the table in\n"
               "planner/frameworks/megatron_args.c by the test `launch-options-doc`\n"
               "(`PARPLAN_UPDATE_DOCS=1 meson test -C build launch-options-doc` rewrites it). A name ending in `*`\n"
               "stands for every argument that starts so. An argument in no row is named when it is set.\n");
    for (int c = 0; c < 4; c++) {
        fprintf(f, "\n## %s\n\n%s.\n\n| argument | values that change nothing |\n| --- | --- |\n", classes[c], what[c]);
        for (int i = 0; i < pp_margs_table_n(); i++) {
            const char *key, *cls, *neutral;
            pp_margs_table_row(i, &key, &cls, &neutral);
            if (strcmp(cls, classes[c]) || !strncmp(key, "env:", 4)) continue;
            char flag[128];
            snprintf(flag, sizeof flag, "--%s", key);
            for (char *p = flag; *p; p++)
                if (*p == '_') *p = '-';
            fprintf(f, "| `%s` | %s |\n", flag, neutral ? neutral : "");
        }
    }
    fprintf(f, "\n## the launch script's environment\n\n"
               "A launch script's variables of these families are read with its command line: TransformerEngine's\n"
               "`NVTE_*` (NVIDIA/TransformerEngine@d0067d0d) and userbuffers' `UB_*`, NCCL's `NCCL_*` and\n"
               "PyTorch's `TORCH_NCCL_*`, `TORCH_SYMM_MEM_*`, NVSHMEM's `NVSHMEM_*`, `PYTORCH_CUDA_ALLOC_CONF`\n"
               "(`PYTORCH_ALLOC_CONF`) and `CUDA_DEVICE_MAX_CONNECTIONS`. One of these in no row is named when set.\n"
               "Why each is where it is: the comment above these rows in planner/frameworks/megatron_args.c.\n\n"
               "| variable | what parplan does | values that change nothing |\n| --- | --- | --- |\n");
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < pp_margs_table_n(); i++) {
            const char *key, *cls, *neutral;
            pp_margs_table_row(i, &key, &cls, &neutral);
            if (strcmp(cls, classes[c]) || strncmp(key, "env:", 4)) continue;
            fprintf(f, "| `%s` | %s | %s |\n", key + 4, cls, neutral ? neutral : "");
        }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s SOURCE_DIR\n", argv[0]);
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/megatron-options.md", argv[1]);
    char *want = NULL;
    size_t wn = 0;
    FILE *m = open_memstream(&want, &wn);
    if (!tap_ok(m != NULL, "memory stream")) return tap_done();
    page(m);
    fclose(m);
    if (getenv("PARPLAN_UPDATE_DOCS")) {
        FILE *o = fopen(path, "w");
        tap_ok(o && fwrite(want, 1, wn, o) == wn && fclose(o) == 0, "rewrote %s", path);
    }
    FILE *f = fopen(path, "rb");
    static char have[1 << 20];
    size_t hn = f ? fread(have, 1, sizeof have, f) : 0;
    if (f) fclose(f);
    tap_ok(f && hn == wn && !memcmp(have, want, wn), "%s is the argument table of megatron_args.c (%d rows)", path,
           pp_margs_table_n());
    int counts[4] = {0};
    for (int i = 0; i < pp_margs_table_n(); i++) {
        const char *key, *cls, *neutral;
        pp_margs_table_row(i, &key, &cls, &neutral);
        for (int c = 0; c < 4; c++) counts[c] += !strcmp(cls, classes[c]);
    }
    tap_ok(counts[0] > 50 && counts[1] > 20, "read %d, not modelled %d, fused kernels %d, ignored %d", counts[0],
           counts[1], counts[2], counts[3]);
    free(want);
    return tap_done();
}
