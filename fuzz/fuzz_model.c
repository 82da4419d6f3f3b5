/* libFuzzer harness: our model YAML schema (pp_model_load_string, planner/model/loader.c).
 * Accepted models must validate, count parameters without overflow and go through the memory
 * and time models with finite results (fuzz_common.h). Build: fuzz/README.md. */
#include "fuzz_common.h"
#include "pp_load.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pp_model m;
    pp_error err = {0};
    pp_status st = pp_model_load_string(&m, (const char *)data, size, "fuzz.yaml", &err);
    if (st != PP_OK) {
        fuzz_check_error(st, &err, "pp_model_load_string");
        return 0;
    }
    fuzz_check_model(&m);
    pp_gpu g;
    fuzz_gpu_default(&g);
    fuzz_exercise_work(&m, &g, NULL);
    return 0;
}
