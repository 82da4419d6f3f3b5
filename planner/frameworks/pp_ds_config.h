/* A DeepSpeed config file (--deepspeed-config ds.json, deepspeed_config.c): what it says about the
 * layout and the stack. The request applies it under the flags (a flag given beside it wins). */
#ifndef PP_DS_CONFIG_H
#define PP_DS_CONFIG_H

#include "pp.h"

typedef struct {
    char path[512];
    int zero;            /* zero_optimization.stage; -1: not given */
    int offload;         /* pp_offload: offload_optimizer (and offload_param) to cpu or nvme */
    int64_t mbs;         /* train_micro_batch_size_per_gpu; 0: not given (or "auto") */
    int64_t gas;         /* gradient_accumulation_steps; 0: not given */
    int64_t gbs;         /* train_batch_size; 0: not given */
    int precision;       /* pp_precision from bf16 / fp16 .enabled; -1: not given ("auto") */
    int overlap_comm;    /* zero_optimization.overlap_comm: 1 / 0; -1: not given (DeepSpeed's
                            default: on for stage 3 only, runtime/zero/config.py overlap_comm_valid) */
    char unmodelled[1024]; /* what changes memory or time and is not modelled, ", "-separated */
    char unknown[512];   /* keys DeepSpeed's config does not define here */
} pp_ds_config;

/* PP_ERR_INPUT with file:line:col for wrong types and values; unknown keys are listed, not refused
 * (DeepSpeed itself passes over them). */
pp_status pp_ds_config_load_string(pp_ds_config *c, const char *text, size_t len, const char *path, pp_error *err);
pp_status pp_ds_config_load_file(pp_ds_config *c, const char *path, pp_error *err);

#endif
