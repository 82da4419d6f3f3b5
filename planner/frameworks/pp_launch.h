/* Launch configs: a layout turned into what starts the training run.
 *
 *   megatron   a bash script: torchrun ... pretrain_gpt.py with the full Megatron-LM argument
 *              list (shape, parallel sizes, batch, optimizer, recompute, precision, overlap,
 *              data, training, logging) in *_ARGS arrays, CUDA_DEVICE_MAX_CONNECTIONS=1
 *   torchrun   the same arguments under a torchrun c10d rendezvous, run once per node
 *   slurm      an sbatch script: srun (one task per node) + torchrun rendezvous
 *   deepspeed  ds_config.json (ZeRO stage, micro-batch, accumulation, bf16, offload, buckets)
 *              plus the deepspeed launcher line
 *   nemo       NeMo (1.x, Megatron GPT) YAML overrides: trainer.*, model.*
 *   torchtitan torchtitan.toml (torchtitan 0.2.x JobConfig) + a torchrun / Slurm script
 *              (launch_torchtitan.c; --framework fsdp)
 *
 * Every output names the parplan version and the predicted memory and throughput in a
 * comment. Megatron flags are names that Megatron-LM's parser accepts; the list they are
 * tested against is tests/data/megatron_flags.txt (tests/frameworks/).
 *
 * The writers: launch_megatron.c (megatron, torchrun, slurm), launch_deepspeed.c,
 * launch_nemo.c, launch_torchtitan.c; what they share is launch_common.c, the entry launch.c. */
#ifndef PP_LAUNCH_H
#define PP_LAUNCH_H

#include <stdio.h>

#include "pp.h"

/* The formats, one line each: X(ID, name, separator before it in the list). A new format is a
 * line here, a row of launch.c's table (its files, framework, writer) and its writer's file, as
 * nccl-tests adds a collective. The enum, the names and the "a|b|c" list every message and help
 * line prints all come from this one list. */
#define PP_LAUNCH_FORMATS(X)                                                                         \
    X(MEGATRON, "megatron", "") X(TORCHRUN, "torchrun", "|") X(SLURM, "slurm", "|")                 \
    X(DEEPSPEED, "deepspeed", "|") X(NEMO, "nemo", "|") X(TORCHTITAN, "torchtitan", "|")               \
    X(TORCHTITAN_TOML, "torchtitan-toml", "|") X(MEGATRON_BRIDGE, "megatron-bridge", "|")
#define PP_LAUNCH_ENUM_(id, name, sep) PP_LAUNCH_##id,
typedef enum { PP_LAUNCH_FORMATS(PP_LAUNCH_ENUM_) PP_LAUNCH_COUNT } pp_launch_format;
#undef PP_LAUNCH_ENUM_
#define PP_LAUNCH_LIST_(id, name, sep) sep name
/* "megatron|torchrun|slurm|deepspeed|nemo|torchtitan|torchtitan-toml|megatron-bridge", a string literal */
#define PP_LAUNCH_FORMAT_LIST PP_LAUNCH_FORMATS(PP_LAUNCH_LIST_)
extern const char *const pp_launch_format_names[PP_LAUNCH_COUNT];
/* The framework whose semantics a format's predictions are (megatron for megatron, torchrun,
 * slurm and nemo; deepspeed; fsdp for torchtitan), and the first format of a framework (-1: none). */
pp_framework pp_launch_format_framework(pp_launch_format fmt);
/* The framework version a format targets ("Megatron-LM d98e8a64 (2026-08-22)"), as its header says. */
const char *pp_launch_format_target(pp_launch_format fmt);
int pp_launch_format_for(pp_framework fw);

/* Who runs the Megatron command line:
 *   standard      a normal Megatron-LM install with Transformer Engine (the default);
 *   device-local  Megatron-LM without TE or apex (the lent GPU machines): --transformer-impl
 *                 local and the fusions that need TE/apex off, mock data and NullTokenizer,
 *                 a few iterations; --sequence-parallel and context parallelism are refused
 *                 there (the torch LayerNorm and local attention do not support them). */
typedef enum { PP_TARGET_STANDARD = 0, PP_TARGET_DEVICE_LOCAL, PP_TARGET_COUNT } pp_launch_target;
extern const char *const pp_launch_target_names[PP_TARGET_COUNT]; /* "standard", "device-local" */

/* Everything a launch config is written from. Predictions are optional: a value < 0 (or not
 * finite) is written as "not predicted", never as NaN. The ILP's uneven stages and per-stage
 * recompute come in layout->stage_layers / layout->stage_recompute (NULL: uniform). */
typedef struct {
    const pp_work *work;
    const pp_layout *layout;       /* validated (pp_layout_validate): dp is filled */
    pp_launch_target target;
    double peak_bytes;             /* predicted allocator peak of the largest rank */
    double reserved_bytes;         /* beyond the peak on that rank (context, NCCL, slack); <0: unknown */
    double capacity_bytes;         /* GPU memory; <0: take work->gpu.memory_bytes */
    double step_time_s;            /* one optimizer step */
    double samples_per_s;
    int64_t train_iters;           /* 0: 5 for device-local, a placeholder (TRAIN_ITERS) otherwise */
    const char *megatron_dir;      /* Megatron-LM checkout on the cluster; NULL: $MEGATRON_LM or . */
    const char *hf_config_path;    /* the Hugging Face config.json the model was read from, or NULL */
} pp_launch_params;

void pp_launch_params_init(pp_launch_params *p); /* predictions unknown, standard target */

/* Files one format writes into a directory (NULL-terminated, at most 3). */
const char *const *pp_launch_files(pp_launch_format fmt);

/* Write format fmt for p: to out (a FILE*, several files are joined into one self-contained
 * script) when out is not NULL, else into directory dir (created if missing; each file is
 * written to a temporary file in dir, fsync'ed and renamed over the name, so a reader sees the
 * old file or the whole new one). Bad combinations (a layout the format cannot express) are
 * PP_ERR_INPUT naming what is wrong; I/O failures PP_ERR_RUNTIME. */
pp_status pp_launch_write(pp_launch_format fmt, const pp_launch_params *p, FILE *out,
                          const char *dir, pp_error *err);

/* launch_torchtitan.c: the config (fmt torchtitan: a Python config module; torchtitan-toml: the
 * legacy TOML job config) and the script. joined: *first is one script that writes the config
 * itself; else *first the config and *second the script. malloc'd texts. */
pp_status pp_launch_torchtitan(pp_launch_format fmt, const pp_launch_params *p, bool joined, char **first, char **second,
                               pp_error *err);

/* Lower-level pieces, exposed for tests: the Megatron argument list as one line of
 * "--flag value" tokens separated by spaces (what pretrain_gpt.py receives, bash quoting as in
 * the script), and the atomic file write. */
pp_status pp_launch_megatron_args(const pp_launch_params *p, char *buf, size_t n, pp_error *err);
pp_status pp_launch_write_file_atomic(const char *dir, const char *name, const char *data,
                                      size_t len, int mode, pp_error *err);

#endif
