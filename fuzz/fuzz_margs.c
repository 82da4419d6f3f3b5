/* libFuzzer harness: the reader of Megatron-LM arguments (planner/frameworks/megatron_args.c) on any text, as
 * --megatron-args reads it: a log (argument dump, recorded command line) or a launch script (the
 * small reading of bash). Rejected input must be a well-formed PP_ERR_INPUT; accepted arguments
 * go through pp_margs_read, and a model that validates through the memory and time models with
 * finite results (fuzz_common.h). Build: fuzz/README.md. */
#include <string.h>

#include "fuzz_common.h"
#include "pp_margs.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    pp_margs a;
    pp_error err = {0};
    /* both readers, as pp_margs_load picks one of them */
    for (int as_log = 0; as_log < 2; as_log++) {
        pp_margs_init(&a, "fuzz.sh");
        pp_status st = as_log ? pp_margs_parse_log(&a, text, size, &err) : pp_margs_parse_script(&a, text, size, &err);
        if (st != PP_OK) {
            fuzz_check_error(st, &err, as_log ? "pp_margs_parse_log" : "pp_margs_parse_script");
            pp_margs_free(&a);
            continue;
        }
        if (a.source != PP_MARGS_NONE) {
            static pp_margs_config c; /* ~6 KB of stage arrays: not on the stack */
            st = pp_margs_read(&a, &c, &err);
            if (st != PP_OK) {
                fuzz_check_error(st, &err, "pp_margs_read");
            } else {
                if (strlen(c.unmodelled) >= sizeof c.unmodelled) abort();
                if (!c.need_vocab) {
                    fuzz_check_model(&c.model);
                    pp_gpu g;
                    fuzz_gpu_default(&g);
                    fuzz_exercise_work(&c.model, &g, NULL);
                }
            }
        }
        pp_margs_free(&a);
    }
    return 0;
}
