/* libFuzzer harness: Hugging Face config.json (pp_model_load_string with a config.json path;
 * the loader recognises the format by its keys). Seeds are real configs of public models.
 * Accepted models go through the same checks as fuzz_model (fuzz_common.h). */
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
    pp_status st = pp_model_load_string(&m, (const char *)data, size, "config.json", &err);
    if (st != PP_OK) {
        fuzz_check_error(st, &err, "pp_model_load_string(config.json)");
        return 0;
    }
    fuzz_check_model(&m);
    pp_gpu g;
    fuzz_gpu_default(&g);
    fuzz_exercise_work(&m, &g, NULL);
    return 0;
}
