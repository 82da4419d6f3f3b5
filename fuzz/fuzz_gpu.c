/* libFuzzer harness: GPU YAML (pp_gpu_load_string, planner/model/loader.c). An accepted GPU must
 * validate and give finite memory and time estimates for GPT-3 1.3B on 8 of it. */
#include "fuzz_common.h"
#include "pp_load.h"

static pp_model fuzz_model;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_model_default(&fuzz_model);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pp_gpu g;
    pp_error err = {0};
    pp_status st = pp_gpu_load_string(&g, (const char *)data, size, "fuzz-gpu.yaml", &err);
    if (st != PP_OK) {
        fuzz_check_error(st, &err, "pp_gpu_load_string");
        return 0;
    }
    pp_gpu copy = g;
    err = (pp_error){0};
    FUZZ_CHECK(pp_gpu_validate(&copy, &err) == PP_OK, "a loaded GPU fails validation: %s", err.msg);
    FUZZ_CHECK(memchr(g.name, 0, sizeof g.name) && memchr(g.full_name, 0, sizeof g.full_name) &&
                   memchr(g.source, 0, sizeof g.source),
               "strings not terminated");
    FUZZ_CHECK(isfinite(g.memory_bytes) && g.memory_bytes > 0, "memory_bytes %g", g.memory_bytes);
    for (int i = 0; i < PP_DT_COUNT; i++)
        FUZZ_CHECK(fuzz_finite_nonneg(g.peak_flops[i]), "peak_flops[%d] %g", i, g.peak_flops[i]);
    fuzz_exercise_work(&fuzz_model, &g, NULL);
    return 0;
}
