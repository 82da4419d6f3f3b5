/* A torchtitan run's saved config (pp_tt_config.h): the JSON Trainer.Config.to_dict writes
 * (torchtitan/trainer.py:201, config/configurable.py:47 at torchtitan main b5bcd76c), read with
 * libyaml (JSON is YAML's flow style), every key by its meaning in torchtitan's sources:
 * config/configs.py (TrainingConfig, ParallelismConfig, CompileConfig, CommConfig, DebugConfig),
 * distributed/activation_checkpoint.py, components/optimizer/optimizer.py, components/loss.py.
 * A key whose value changes memory or time and which parplan does not model is named (in one
 * warning); keys that change neither are passed over; keys Trainer.Config does not define are
 * named as unknown. The open-ended component configs (model_spec.model, dataloader, tokenizer,
 * checkpoint, metrics, profiler, validator, lr_scheduler) are read only where said below.
 *
 * What the file cannot say: the model converters. Float8Linear.Config keeps its torchao config in
 * _torchao_config (components/quantization/float8.py:38), which to_dict leaves out
 * (configurable.py:72), and MXFP8Linear / NVFP4Linear.Config add no field: a float8 run's saved
 * config is a bf16 run's, so --precision is left to the flags (or --recipe). Only the MoE
 * grouped-GEMM converters leave a trace (recipe_name, mx.py:122; the padded token dispatcher,
 * quantization/utils.py:33), and those are named as not modelled. */
#include "pp_tt_config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pp_yaml.h"

typedef enum { K_READ, K_PASS, K_IF_TRUE, K_IF_FALSE } key_kind;
typedef struct {
    const char *key;
    key_kind kind;
    const char *why; /* K_IF_TRUE / K_IF_FALSE: what the value turns on */
} tt_key;

/* Trainer.Config's fields (trainer.py:72-121). */
static const tt_key top_keys[] = {
    {"model_spec", K_READ, NULL}, {"training", K_READ, NULL}, {"parallelism", K_READ, NULL},
    {"activation_checkpoint", K_READ, NULL}, {"compile", K_READ, NULL}, {"optimizer", K_READ, NULL},
    {"loss", K_READ, NULL}, {"debug", K_READ, NULL}, {"comm", K_READ, NULL},
    /* no effect on a training step's memory or time */
    {"hf_assets_path", K_PASS, NULL}, {"dump_folder", K_PASS, NULL}, {"profiler", K_PASS, NULL},
    {"metrics", K_PASS, NULL}, {"tokenizer", K_PASS, NULL}, {"dataloader", K_PASS, NULL},
    {"lr_scheduler", K_PASS, NULL}, {"checkpoint", K_PASS, NULL}, {"validator", K_PASS, NULL},
    {"override", K_PASS, NULL},
};

/* TrainingConfig (configs.py:36-120) */
static const tt_key training_keys[] = {
    {"num_tokens_per_microbatch_per_dp_rank", K_READ, NULL}, {"num_tokens_per_train_step", K_READ, NULL},
    {"max_context_length", K_READ, NULL}, {"enable_cpu_offload", K_READ, NULL}, {"dtype", K_READ, NULL},
    {"mixed_precision_param", K_READ, NULL}, {"mixed_precision_reduce", K_READ, NULL},
    {"max_norm", K_PASS, NULL}, {"steps", K_PASS, NULL}, {"gc_freq", K_PASS, NULL},
    /* configs.py:75: CUDA graphs are on unless disabled */
    {"disable_cuda_graphs", K_IF_FALSE, "CUDA graphs of the forward and backward"},
    {"gc_debug", K_IF_TRUE, "gc.collect() every step"},
};

/* ParallelismConfig (configs.py:123-290) */
static const tt_key parallelism_keys[] = {
    {"data_parallel_replicate_degree", K_READ, NULL}, {"data_parallel_shard_degree", K_READ, NULL},
    {"fsdp_reshard_after_forward", K_READ, NULL}, {"tensor_parallel_degree", K_READ, NULL},
    {"enable_sequence_parallel", K_READ, NULL}, {"pipeline_parallel_degree", K_READ, NULL},
    {"module_fqns_per_model_part", K_READ, NULL}, {"pipeline_parallel_first_stage_less_layers", K_READ, NULL},
    {"pipeline_parallel_last_stage_less_layers", K_READ, NULL}, {"pipeline_parallel_layers_per_stage", K_READ, NULL},
    {"pipeline_parallel_schedule", K_READ, NULL}, {"pipeline_parallel_schedule_csv", K_READ, NULL},
    {"num_pp_microbatches", K_READ, NULL}, {"context_parallel_degree", K_READ, NULL},
    {"expert_parallel_degree", K_READ, NULL},
    {"spmd_backend", K_PASS, NULL}, {"context_parallel_load_balancer", K_PASS, NULL},
    {"context_parallel_ptrr_mask_key", K_PASS, NULL},
    {"enable_fsdp_symm_mem", K_IF_TRUE, "FSDP2 symmetric-memory collectives"},
};

/* CompileConfig (configs.py:294-318) */
static const tt_key compile_keys[] = {
    {"enable", K_READ, NULL}, {"enable_async_tensor_parallel", K_READ, NULL}, {"components", K_READ, NULL},
    {"backend", K_READ, NULL},
};

/* the activation-checkpoint policies (activation_checkpoint.py:120-330): the base fields, then
 * SelectiveAC's and MemoryBudgetAC's */
static const tt_key ac_keys[] = {
    {"preserve_rng_state", K_PASS, NULL}, {"determinism_check", K_PASS, NULL},
    {"debug", K_IF_TRUE, "checkpoint debug capture"},
    {"force_recompute_mm_shapes_by_fqns", K_READ, NULL}, {"memory_budget", K_READ, NULL},
    {"visualize_memory_budget_pareto", K_PASS, NULL},
};

/* OptimizersContainer.Config (components/optimizer/optimizer.py:103-136) */
static const tt_key optimizer_keys[] = {
    {"param_groups", K_READ, NULL}, {"implementation", K_READ, NULL},
    {"optimizer_factory_kwargs_by_name", K_PASS, NULL},
};

/* CrossEntropyLoss.Config, ChunkedLossWrapper.Config (components/loss.py:279, 544) */
static const tt_key loss_keys[] = {
    {"global_vocab_size", K_READ, NULL}, {"num_chunks", K_READ, NULL}, {"loss_fn", K_READ, NULL},
};

/* DebugConfig (configs.py:370-420) */
static const tt_key debug_keys[] = {
    {"seed", K_PASS, NULL}, {"spmd_typechecking", K_PASS, NULL}, {"deterministic_warn_only", K_PASS, NULL},
    {"print_config", K_PASS, NULL}, {"save_config_file", K_PASS, NULL}, {"enable_structured_logging", K_PASS, NULL},
    {"deterministic", K_IF_TRUE, "deterministic algorithms"},
    {"moe_force_load_balance", K_IF_TRUE, "round-robin expert load balance"},
    {"detect_anomaly", K_IF_TRUE, "autograd anomaly detection"},
    {"batch_invariant", K_IF_TRUE, "batch-invariant ops"},
};

/* CommConfig (configs.py:321-365) */
static const tt_key comm_keys[] = {
    {"init_timeout_seconds", K_PASS, NULL}, {"train_timeout_seconds", K_PASS, NULL}, {"trace_buf_size", K_PASS, NULL},
    {"save_traces_folder", K_PASS, NULL}, {"save_traces_file_prefix", K_PASS, NULL}, {"mode", K_READ, NULL},
};

#define N(t) (sizeof t / sizeof t[0])

/* torchtitan's registered flavors (models/llama3/__init__.py llama3_configs, qwen3/__init__.py
 * qwen3_configs) that the catalog holds. */
static const struct {
    const char *name, *flavor, *catalog;
} flavors[] = {
    {"llama3", "8B", "llama3-8b"}, {"llama3", "70B", "llama3-70b"}, {"llama3", "405B", "llama3-405b"},
    {"qwen3", "8B", "qwen3-8b"}, {"qwen3", "32B", "qwen3-32b"}, {"qwen3", "30B-A3B", "qwen3-30b-a3b"},
    {"qwen3", "235B-A22B", "qwen3-235b-a22b"},
};

static const tt_key *key_find(const tt_key *t, size_t n, const char *k)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].key, k)) return &t[i];
    return NULL;
}


static bool is_null(const yaml_node_t *v) { return v && v->type == YAML_SCALAR_NODE && pp_yaml_is_null(v); }

/* An integer in [lo, hi] (a JSON number). */
static pp_status get_int(pp_yaml *y, yaml_node_t *v, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    const char *s = pp_yaml_scalar(v);
    double d;
    if (!s || !pp_yaml_parse_double(s, &d) || d != (double)(int64_t)d || d < (double)lo || d > (double)hi)
        return pp_yaml_error(y, v, "torchtitan config: '%s' must be an integer from %lld to %lld", key, (long long)lo,
                             (long long)hi);
    *out = (int64_t)d;
    return PP_OK;
}

static pp_status get_bool(pp_yaml *y, yaml_node_t *v, const char *key, bool *out)
{
    const char *s = pp_yaml_scalar(v);
    if (s && (!strcmp(s, "true") || !strcmp(s, "false"))) {
        *out = s[0] == 't';
        return PP_OK;
    }
    return pp_yaml_error(y, v, "torchtitan config: '%s' must be true or false", key);
}

static pp_status get_str(pp_yaml *y, yaml_node_t *v, const char *key, const char **out)
{
    const char *s = pp_yaml_scalar(v);
    if (s && !is_null(v)) {
        *out = s;
        return PP_OK;
    }
    return pp_yaml_error(y, v, "torchtitan config: '%s' must be a string", key);
}

/* One of names[] (exactly as torchtitan's Literal spells it). */
static pp_status get_choice(pp_yaml *y, yaml_node_t *v, const char *key, const char *const *names, int n, int *out)
{
    const char *s = pp_yaml_scalar(v);
    for (int i = 0; s && !is_null(v) && i < n; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return PP_OK;
        }
    char list[160] = "";
    for (int i = 0; i < n; i++) pp_strlistf(list, sizeof list, "%s", names[i]);
    return pp_yaml_error(y, v, "torchtitan config: '%s' must be one of %s%s%s%s", key, list, s ? ", got '" : "",
                         s ? s : "", s ? "'" : "");
}

static pp_status want_map(pp_yaml *y, yaml_node_t *v, const char *key)
{
    if (v->type == YAML_MAPPING_NODE) return PP_OK;
    return pp_yaml_error(y, v, "torchtitan config: '%s' is %s, expected an object", key, pp_yaml_node_kind(v));
}

/* The walk over one section: each key's table row; unknown keys listed, K_IF_* named when set.
 * Returns the row to read (NULL: done with this key). */
static pp_status section_key(pp_yaml *y, pp_tt_config *c, const char *sec, const tt_key *t, size_t n,
                             yaml_node_pair_t *p, const char **name, yaml_node_t **val, const tt_key **row)
{
    yaml_node_t *k = yaml_document_get_node(&y->doc, p->key);
    *val = yaml_document_get_node(&y->doc, p->value);
    *row = NULL;
    *name = pp_yaml_scalar(k);
    if (!*name) return pp_yaml_error(y, k, "torchtitan config: a key must be a string");
    const tt_key *r = key_find(t, n, *name);
    if (!r) {
        pp_strlistf(c->unknown, sizeof c->unknown, "%s%s%s", sec, sec[0] ? "." : "", *name);
        return PP_OK;
    }
    if (r->kind == K_PASS) return PP_OK;
    if (r->kind == K_IF_TRUE || r->kind == K_IF_FALSE) {
        char full[128];
        snprintf(full, sizeof full, "%s.%s", sec, *name);
        bool on;
        pp_status st = get_bool(y, *val, full, &on);
        if (st) return st;
        if (on == (r->kind == K_IF_TRUE)) pp_strlistf(c->unmodelled, sizeof c->unmodelled, "%s %s (%s)", full, on ? "true" : "false", r->why);
        return PP_OK;
    }
    *row = r;
    return PP_OK;
}

#define FOR_PAIRS(map, p) for (yaml_node_pair_t *p = (map)->data.mapping.pairs.start; p < (map)->data.mapping.pairs.top; p++)

/* ------------------------------------------------------------------ model_spec */

/* A trace of the MoE grouped-GEMM converters anywhere in the model's tree: MXFP8 grouped experts
 * carry recipe_name (quantization/mx.py:122); FP8 and MXFP8 ones swap in a token dispatcher with
 * pad_multiple (quantization/utils.py:33). */
static void scan_converters(pp_yaml *y, yaml_node_t *v, int depth, bool *mx, bool *padded)
{
    if (!v || depth > PP_YAML_MAX_DEPTH) return;
    if (v->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++)
            scan_converters(y, yaml_document_get_node(&y->doc, *i), depth + 1, mx, padded);
        return;
    }
    if (v->type != YAML_MAPPING_NODE) return;
    FOR_PAIRS(v, p) {
        const char *k = pp_yaml_scalar(yaml_document_get_node(&y->doc, p->key));
        yaml_node_t *val = yaml_document_get_node(&y->doc, p->value);
        const char *s = pp_yaml_scalar(val);
        if (k && s && !strcmp(k, "recipe_name") && !strncmp(s, "mxfp8", 5)) *mx = true;
        if (k && s && !strcmp(k, "pad_multiple") && !is_null(val)) *padded = true;
        scan_converters(y, val, depth + 1, mx, padded);
    }
}

static pp_status read_model_spec(pp_yaml *y, yaml_node_t *map, pp_tt_config *c)
{
    pp_status st = want_map(y, map, "model_spec");
    if (st) return st;
    FOR_PAIRS(map, p) {
        const char *name = pp_yaml_scalar(yaml_document_get_node(&y->doc, p->key));
        yaml_node_t *v = yaml_document_get_node(&y->doc, p->value);
        const char *s = NULL;
        if (!name) return pp_yaml_error(y, yaml_document_get_node(&y->doc, p->key), "torchtitan config: a key must be a string");
        if (!strcmp(name, "name") || !strcmp(name, "flavor")) {
            if ((st = get_str(y, v, !strcmp(name, "name") ? "model_spec.name" : "model_spec.flavor", &s))) return st;
            snprintf(name[0] == 'n' ? c->name : c->flavor, sizeof c->name, "%s", s);
        } else if (!strcmp(name, "model")) {
            /* the model's config tree (Decoder.Config, models/common/decoder.py:70): its size, for
             * the check against the flavor's catalog entry and the pipeline split */
            if ((st = want_map(y, v, "model_spec.model"))) return st;
            yaml_node_t *d = pp_yaml_lookup(y, v, "dim", false), *vs = pp_yaml_lookup(y, v, "vocab_size", false);
            yaml_node_t *ls = pp_yaml_lookup(y, v, "layers", false);
            if (d && (st = get_int(y, d, "model_spec.model.dim", 1, 100000000, &c->dim))) return st;
            if (vs && (st = get_int(y, vs, "model_spec.model.vocab_size", 1, 100000000, &c->vocab))) return st;
            if (ls && ls->type != YAML_SEQUENCE_NODE && !is_null(ls))
                return pp_yaml_error(y, ls, "torchtitan config: 'model_spec.model.layers' is %s, expected a list",
                                     pp_yaml_node_kind(ls));
            if (ls && ls->type == YAML_SEQUENCE_NODE)
                c->layers = ls->data.sequence.items.top - ls->data.sequence.items.start;
            bool mx = false, padded = false;
            scan_converters(y, v, 0, &mx, &padded);
            if (mx) pp_strlistf(c->unmodelled, sizeof c->unmodelled, "MXFP8 grouped experts (model_spec.model ... recipe_name mxfp8)");
            else if (padded) pp_strlistf(c->unmodelled, sizeof c->unmodelled, "FP8 grouped experts (model_spec.model ... "
                                 "token_dispatcher.pad_multiple)");
        } else {
            pp_strlistf(c->unknown, sizeof c->unknown, "model_spec.%s", name);
        }
    }
    for (size_t i = 0; i < N(flavors); i++)
        if (!strcmp(c->name, flavors[i].name) && !strcmp(c->flavor, flavors[i].flavor)) c->catalog = flavors[i].catalog;
    return PP_OK;
}

/* ------------------------------------------------------------------ training */

static pp_status read_training(pp_yaml *y, yaml_node_t *map, pp_tt_config *c, int *dtype, int *mp_param)
{
    static const char *const dtypes[] = {"bfloat16", "float32"};
    pp_status st = want_map(y, map, "training");
    if (st) return st;
    FOR_PAIRS(map, p) {
        const char *name;
        yaml_node_t *v;
        const tt_key *row;
        if ((st = section_key(y, c, "training", training_keys, N(training_keys), p, &name, &v, &row))) return st;
        if (!row) continue;
        char full[96];
        snprintf(full, sizeof full, "training.%s", name);
        if (!strcmp(name, "num_tokens_per_microbatch_per_dp_rank")) {
            if ((st = get_int(y, v, full, 1, (int64_t)1e12, &c->mb_tokens))) return st;
            c->mb_line = (int)v->start_mark.line + 1, c->mb_col = (int)v->start_mark.column + 1;
        } else if (!strcmp(name, "num_tokens_per_train_step")) {
            if ((st = get_int(y, v, full, -1, (int64_t)1e15, &c->step_tokens))) return st;
            if (c->step_tokens == 0) return pp_yaml_error(y, v, "torchtitan config: '%s' must be -1 or positive", full);
            c->step_line = (int)v->start_mark.line + 1, c->step_col = (int)v->start_mark.column + 1;
        } else if (!strcmp(name, "max_context_length")) {
            if ((st = get_int(y, v, full, 1, 100000000, &c->seq))) return st;
        } else if (!strcmp(name, "enable_cpu_offload")) {
            if ((st = get_bool(y, v, full, &c->offload))) return st;
        } else if (!strcmp(name, "dtype")) {
            if ((st = get_choice(y, v, full, dtypes, 2, dtype))) return st;
        } else if (!strcmp(name, "mixed_precision_param")) {
            if ((st = get_choice(y, v, full, dtypes, 2, mp_param))) return st;
        } else if (!strcmp(name, "mixed_precision_reduce")) {
            int r;
            if ((st = get_choice(y, v, full, dtypes + 1, 1, &r))) return st; /* configs.py: Literal["float32"] */
        }
    }
    return PP_OK;
}

/* ------------------------------------------------------------------ parallelism */

/* torch.distributed.pipelining's schedules (schedules.py get_schedule_class, case-insensitive):
 * single-stage ones hold one model chunk per rank, multi-stage ones several. parplan prices 1F1B
 * and interleaved 1F1B. */
static const struct {
    const char *name;
    bool multi, modelled;
} schedules[] = {
    {"1F1B", false, true}, {"Interleaved1F1B", true, true}, {"GPipe", false, false}, {"LoopedBFS", true, false},
    {"InterleavedZeroBubble", true, false}, {"ZBVZeroBubble", true, false}, {"DualPipeV", true, false},
    {"PipelineScheduleSingle", false, false}, {"PipelineScheduleMulti", true, false},
};

typedef struct {
    int schedule;           /* index into schedules[] */
    int64_t first_less, last_less, layers_per_stage; /* layers_per_stage 0: null */
    int64_t *parts;         /* module_fqns_per_model_part: layers per part (malloc'd), or NULL */
    int64_t n_parts;
    bool parts_plain;       /* every name a Decoder module (tok_embeddings, layers.N, norm, lm_head) */
    bool csv;
    yaml_node_t *sched_node, *parts_node;
} tt_pipe;

static pp_status read_parts(pp_yaml *y, yaml_node_t *v, tt_pipe *pp)
{
    if (is_null(v)) return PP_OK;
    if (v->type != YAML_SEQUENCE_NODE)
        return pp_yaml_error(y, v, "torchtitan config: 'parallelism.module_fqns_per_model_part' must be a list of lists "
                             "of module names, or null");
    int64_t n = v->data.sequence.items.top - v->data.sequence.items.start;
    if (n < 1) return pp_yaml_error(y, v, "torchtitan config: 'parallelism.module_fqns_per_model_part' is empty");
    pp->parts = calloc((size_t)n, sizeof *pp->parts);
    if (!pp->parts) return pp_error_set(y->err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    pp->n_parts = n;
    pp->parts_plain = true;
    pp->parts_node = v;
    for (int64_t i = 0; i < n; i++) {
        yaml_node_t *part = yaml_document_get_node(&y->doc, v->data.sequence.items.start[i]);
        if (!part || part->type != YAML_SEQUENCE_NODE)
            return pp_yaml_error(y, part ? part : v, "torchtitan config: 'parallelism.module_fqns_per_model_part' "
                                 "must be a list of lists of module names");
        for (yaml_node_item_t *it = part->data.sequence.items.start; it < part->data.sequence.items.top; it++) {
            yaml_node_t *m = yaml_document_get_node(&y->doc, *it);
            const char *s = pp_yaml_scalar(m);
            if (!s || is_null(m))
                return pp_yaml_error(y, m, "torchtitan config: a module name in 'parallelism.module_fqns_per_model_part' "
                                     "must be a string");
            if (!strncmp(s, "layers.", 7)) pp->parts[i]++;
            else if (strcmp(s, "tok_embeddings") && strcmp(s, "norm") && strcmp(s, "lm_head") && strcmp(s, "output"))
                pp->parts_plain = false;
        }
    }
    return PP_OK;
}

static pp_status read_parallelism(pp_yaml *y, yaml_node_t *map, pp_tt_config *c, tt_pipe *pp)
{
    static const char *const reshard[] = {"default", "always", "never"};
    pp_status st = want_map(y, map, "parallelism");
    if (st) return st;
    FOR_PAIRS(map, p) {
        const char *name;
        yaml_node_t *v;
        const tt_key *row;
        if ((st = section_key(y, c, "parallelism", parallelism_keys, N(parallelism_keys), p, &name, &v, &row))) return st;
        if (!row) continue;
        char full[96];
        snprintf(full, sizeof full, "parallelism.%s", name);
        const int64_t big = 10000000;
        if (!strcmp(name, "data_parallel_shard_degree")) {
            if ((st = get_int(y, v, full, -1, big, &c->shard))) return st;
            if (c->shard == 0) return pp_yaml_error(y, v, "torchtitan config: '%s' must be -1 (the rest) or positive", full);
        } else if (!strcmp(name, "data_parallel_replicate_degree")) {
            if ((st = get_int(y, v, full, 1, big, &c->replicate))) return st;
        } else if (!strcmp(name, "tensor_parallel_degree")) {
            if ((st = get_int(y, v, full, 1, 1000000, &c->tp))) return st;
        } else if (!strcmp(name, "pipeline_parallel_degree")) {
            if ((st = get_int(y, v, full, 1, 1000000, &c->pp))) return st;
        } else if (!strcmp(name, "context_parallel_degree")) {
            if ((st = get_int(y, v, full, 1, 1000000, &c->cp))) return st;
        } else if (!strcmp(name, "expert_parallel_degree")) {
            if ((st = get_int(y, v, full, 1, 1000000, &c->ep))) return st;
        } else if (!strcmp(name, "num_pp_microbatches")) {
            if ((st = get_int(y, v, full, 1, 100000000, &c->microbatches))) return st;
        } else if (!strcmp(name, "enable_sequence_parallel")) {
            if ((st = get_bool(y, v, full, &c->sp))) return st;
        } else if (!strcmp(name, "fsdp_reshard_after_forward")) {
            if ((st = get_choice(y, v, full, reshard, 3, &c->reshard))) return st;
        } else if (!strcmp(name, "pipeline_parallel_first_stage_less_layers")) {
            if ((st = get_int(y, v, full, 0, 1000000, &pp->first_less))) return st;
        } else if (!strcmp(name, "pipeline_parallel_last_stage_less_layers")) {
            if ((st = get_int(y, v, full, 0, 1000000, &pp->last_less))) return st;
        } else if (!strcmp(name, "pipeline_parallel_layers_per_stage")) {
            if (!is_null(v) && (st = get_int(y, v, full, 1, 1000000, &pp->layers_per_stage))) return st;
        } else if (!strcmp(name, "pipeline_parallel_schedule")) {
            const char *s = NULL;
            if ((st = get_str(y, v, full, &s))) return st;
            pp->schedule = -1;
            for (size_t i = 0; i < N(schedules); i++)
                if (!strcasecmp(s, schedules[i].name)) pp->schedule = (int)i;
            if (pp->schedule < 0)
                return pp_yaml_error(y, v, "torchtitan config: '%s' '%s' is not one of torch's pipeline schedules "
                                     "(1F1B, Interleaved1F1B, GPipe, LoopedBFS, InterleavedZeroBubble, ZBVZeroBubble, "
                                     "DualPipeV)", full, s);
            pp->sched_node = v;
        } else if (!strcmp(name, "pipeline_parallel_schedule_csv")) {
            const char *s = pp_yaml_scalar(v);
            if (v->type != YAML_SCALAR_NODE) return pp_yaml_error(y, v, "torchtitan config: '%s' must be a path or null", full);
            pp->csv = s && !is_null(v) && s[0];
        } else if (!strcmp(name, "module_fqns_per_model_part")) {
            if ((st = read_parts(y, v, pp))) return st;
        }
    }
    return PP_OK;
}

/* The pipeline: virtual stages per rank and the split as a --pipeline-layout string, the way
 * torchtitan makes them (distributed/pipeline_parallel.py): the model parts given, else
 * ceil((layers + first_less + last_less) / layers_per_stage) stages (:223), else 1 stage per rank
 * for a single-stage schedule and 2 for a multi-stage one (:262); the layers of generated parts
 * spread as _generate_llm_fqn_per_model_part does (:357): the embedding and the output count as
 * first_less and last_less layers, the remainder to the first stages. */
static pp_status pipeline(pp_yaml *y, pp_tt_config *c, tt_pipe *pp)
{
    if (c->pp < 2) return PP_OK;
    const char *sname = schedules[pp->schedule].name;
    bool multi = schedules[pp->schedule].multi;
    if (!schedules[pp->schedule].modelled)
        pp_strlistf(c->unmodelled, sizeof c->unmodelled, "parallelism.pipeline_parallel_schedule %s (priced as %s)", sname,
            multi ? "interleaved 1F1B" : "1F1B");
    if (pp->csv) pp_strlistf(c->unmodelled, sizeof c->unmodelled, "parallelism.pipeline_parallel_schedule_csv");
    int64_t stages, *counts = NULL;
    if (pp->parts) {
        stages = pp->n_parts;
        if (stages % c->pp)
            return pp_yaml_error(y, pp->parts_node, "torchtitan config: 'parallelism.module_fqns_per_model_part' has %lld "
                                 "parts, not a multiple of pipeline_parallel_degree %lld", (long long)stages, (long long)c->pp);
        if (!pp->parts_plain) {
            pp_strlistf(c->unmodelled, sizeof c->unmodelled, "parallelism.module_fqns_per_model_part with modules other than "
                "tok_embeddings, layers.N, norm, lm_head (priced as an even split)");
            c->vpp = stages / c->pp;
            return PP_OK;
        }
        counts = pp->parts;
    } else if (pp->layers_per_stage) {
        if (!c->layers) {
            pp_strlistf(c->unmodelled, sizeof c->unmodelled, "parallelism.pipeline_parallel_layers_per_stage %lld (the stages "
                "cannot be counted without model_spec.model.layers; priced as %s)", (long long)pp->layers_per_stage,
                multi ? "2 per rank" : "1 per rank");
            c->vpp = multi ? 2 : 1;
            return PP_OK;
        }
        int64_t eff = c->layers + pp->first_less + pp->last_less;
        stages = (eff + pp->layers_per_stage - 1) / pp->layers_per_stage;
    } else {
        stages = c->pp * (multi ? 2 : 1);
    }
    if (stages % c->pp)
        return pp_yaml_error(y, pp->sched_node ? pp->sched_node : pp->parts_node, "torchtitan config: %lld pipeline "
                             "stages are not a multiple of pipeline_parallel_degree %lld", (long long)stages, (long long)c->pp);
    if ((!multi && stages != c->pp) || (multi && stages / c->pp < 2))
        return pp_yaml_error(y, pp->sched_node ? pp->sched_node : pp->parts_node,
                             "torchtitan config: %lld pipeline stages over pipeline_parallel_degree %lld do not suit "
                             "schedule %s (%s)", (long long)stages, (long long)c->pp, sname,
                             multi ? "a multi-stage schedule needs at least 2 per rank" : "one per rank");
    c->vpp = stages / c->pp;
    int64_t *gen = NULL;
    if (!counts) {
        if (!c->layers) return PP_OK; /* the split needs the layer count: parplan's even split */
        int64_t eff = c->layers + pp->first_less + pp->last_less, per = eff / stages, extra = eff % stages;
        if (per < 1 || pp->first_less > per || pp->last_less > per)
            return pp_yaml_error(y, pp->sched_node ? pp->sched_node : yaml_document_get_root_node(&y->doc),
                                 "torchtitan config: %lld layers (with first/last_stage_less_layers %lld, %lld) do not "
                                 "split into %lld pipeline stages", (long long)c->layers, (long long)pp->first_less,
                                 (long long)pp->last_less, (long long)stages);
        gen = calloc((size_t)stages, sizeof *gen);
        if (!gen) return pp_error_set(y->err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        int64_t left = c->layers;
        for (int64_t s = 0; s < stages; s++) {
            int64_t n = per + (s < extra) - (s == 0 ? pp->first_less : 0) - (s == stages - 1 ? pp->last_less : 0);
            if (n > left) n = left;
            gen[s] = n, left -= n;
        }
        counts = gen;
    }
    /* 'E' opens the first stage, 'L' closes the last, "t*N" its N layers (pp_pipeline.h) */
    size_t cap = (size_t)stages * 24 + 8;
    c->pipeline_layout = malloc(cap);
    pp_status st = PP_OK;
    if (!c->pipeline_layout) {
        st = pp_error_set(y->err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        goto done;
    }
    size_t k = 0;
    for (int64_t s = 0; s < stages; s++) {
        k += (size_t)snprintf(c->pipeline_layout + k, cap - k, "%s%s", s ? "|" : "", s == 0 ? "E" : "");
        if (counts[s] == 1) k += (size_t)snprintf(c->pipeline_layout + k, cap - k, "t");
        else if (counts[s] > 1) k += (size_t)snprintf(c->pipeline_layout + k, cap - k, "t*%lld", (long long)counts[s]);
        if (s == stages - 1) k += (size_t)snprintf(c->pipeline_layout + k, cap - k, "L");
    }
done:
    free(gen);
    return st;
}

/* ------------------------------------------------------------------ the stack */

static pp_status read_compile(pp_yaml *y, yaml_node_t *map, pp_tt_config *c)
{
    pp_status st = want_map(y, map, "compile");
    if (st) return st;
    bool enable = false, async_tp = false, model = true, loss = true; /* components default ["model", "loss"] */
    FOR_PAIRS(map, p) {
        const char *name;
        yaml_node_t *v;
        const tt_key *row;
        if ((st = section_key(y, c, "compile", compile_keys, N(compile_keys), p, &name, &v, &row))) return st;
        if (!row) continue;
        if (!strcmp(name, "enable")) {
            if ((st = get_bool(y, v, "compile.enable", &enable))) return st;
        } else if (!strcmp(name, "enable_async_tensor_parallel")) {
            if ((st = get_bool(y, v, "compile.enable_async_tensor_parallel", &async_tp))) return st;
        } else if (!strcmp(name, "components")) {
            if (v->type != YAML_SEQUENCE_NODE)
                return pp_yaml_error(y, v, "torchtitan config: 'compile.components' must be a list of strings");
            model = loss = false;
            for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
                const char *s = pp_yaml_scalar(yaml_document_get_node(&y->doc, *it));
                if (s && !strcmp(s, "model")) model = true;
                if (s && !strcmp(s, "loss")) loss = true;
            }
        } else if (!strcmp(name, "backend")) {
            const char *s = NULL;
            if ((st = get_str(y, v, "compile.backend", &s))) return st;
            if (strcmp(s, "inductor")) pp_strlistf(c->unmodelled, sizeof c->unmodelled, "compile.backend %s (priced as inductor)", s);
        }
    }
    /* parplan's --compile is torch.compile of each block: the "model" component (trainer.py,
     * parallelize's apply_compile); --compile-loss the "loss" component (components/loss.py) */
    c->compile = enable && model;
    c->compile_loss = enable && loss;
    c->async_tp = c->compile && async_tp;
    return PP_OK;
}

/* activation_checkpoint: null (none) or one policy's Config, whose class to_dict does not record:
 * FullAC.Config has the base fields only, SelectiveAC.Config adds
 * force_recompute_mm_shapes_by_fqns, MemoryBudgetAC.Config memory_budget
 * (activation_checkpoint.py:166, 185, 290). */
static pp_status read_ac(pp_yaml *y, yaml_node_t *v, pp_tt_config *c)
{
    if (is_null(v)) {
        c->recompute = PP_RC_NONE;
        return PP_OK;
    }
    pp_status st = want_map(y, v, "activation_checkpoint");
    if (st) return st;
    bool selective = false, budget = false, base = false;
    double mb = 0;
    FOR_PAIRS(v, p) {
        const char *name;
        yaml_node_t *val;
        const tt_key *row;
        if ((st = section_key(y, c, "activation_checkpoint", ac_keys, N(ac_keys), p, &name, &val, &row))) return st;
        if (!strcmp(name, "preserve_rng_state") || !strcmp(name, "determinism_check") || !strcmp(name, "debug")) base = true;
        if (!row) continue;
        if (!strcmp(name, "force_recompute_mm_shapes_by_fqns")) {
            if (val->type != YAML_SEQUENCE_NODE)
                return pp_yaml_error(y, val, "torchtitan config: 'activation_checkpoint.force_recompute_mm_shapes_by_fqns' "
                                     "must be a list of strings");
            selective = true;
        } else if (!strcmp(name, "memory_budget")) {
            const char *s = pp_yaml_scalar(val);
            if (!s || !pp_yaml_parse_double(s, &mb) || mb < 0 || mb > 1)
                return pp_yaml_error(y, val, "torchtitan config: 'activation_checkpoint.memory_budget' must be a number "
                                     "from 0 to 1");
            budget = true;
        }
    }
    if (selective && budget)
        return pp_yaml_error(y, v, "torchtitan config: 'activation_checkpoint' has both SelectiveAC's "
                             "force_recompute_mm_shapes_by_fqns and MemoryBudgetAC's memory_budget");
    c->recompute = -1;
    if (selective) c->recompute = PP_RC_SELECTIVE; /* op-level SAC: what parplan's selective prices under fsdp */
    else if (budget)
        pp_strlistf(c->unmodelled, sizeof c->unmodelled, "activation_checkpoint memory_budget %g (the compiler's budgeted "
            "recompute; --recompute left to the flags)", mb);
    else if (base) c->recompute = PP_RC_FULL;
    else
        pp_strlistf(c->unmodelled, sizeof c->unmodelled, "activation_checkpoint {} (no field says the policy: full, selective "
            "or memory-budget is ambiguous; --recompute left to the flags)");
    return PP_OK;
}

static pp_status read_optimizer(pp_yaml *y, yaml_node_t *map, pp_tt_config *c)
{
    static const char *const impls[] = {"fused", "foreach", "for-loop", "fused_opt_states_bf16"};
    pp_status st = want_map(y, map, "optimizer");
    if (st) return st;
    FOR_PAIRS(map, p) {
        const char *name;
        yaml_node_t *v;
        const tt_key *row;
        if ((st = section_key(y, c, "optimizer", optimizer_keys, N(optimizer_keys), p, &name, &v, &row))) return st;
        if (!row) continue;
        if (!strcmp(name, "implementation")) {
            int i;
            if ((st = get_choice(y, v, "optimizer.implementation", impls, 4, &i))) return st;
            if (i == 0) c->optimizer_impl = PP_ADAM_FUSED;
            else if (i == 1) c->optimizer_impl = PP_ADAM_FOREACH;
            else if (i == 2) pp_strlistf(c->unmodelled, sizeof c->unmodelled, "optimizer.implementation for-loop (priced as foreach)");
            else pp_strlistf(c->unmodelled, sizeof c->unmodelled, "optimizer.implementation fused_opt_states_bf16 (bf16 Adam "
                     "state; priced as fp32)");
        } else if (!strcmp(name, "param_groups")) {
            if (v->type != YAML_SEQUENCE_NODE)
                return pp_yaml_error(y, v, "torchtitan config: 'optimizer.param_groups' must be a list");
            /* AdamW's state is what parplan prices (optimizer.py:143: Adam, AdamW, DistMuon) */
            for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
                yaml_node_t *g = yaml_document_get_node(&y->doc, *it);
                if ((st = want_map(y, g, "optimizer.param_groups[]"))) return st;
                yaml_node_t *o = pp_yaml_lookup(y, g, "optimizer_name", false);
                const char *s = o ? pp_yaml_scalar(o) : NULL;
                if (s && strcmp(s, "Adam") && strcmp(s, "AdamW"))
                    pp_strlistf(c->unmodelled, sizeof c->unmodelled, "optimizer.param_groups optimizer_name %s (priced as AdamW)", s);
            }
        }
    }
    return PP_OK;
}

/* loss: {} (BaseLoss / MSELoss), CrossEntropyLoss.Config {global_vocab_size} (cross_entropy on
 * pred.float(), loss.py: parplan's --loss upcast), or ChunkedLossWrapper.Config {num_chunks,
 * loss_fn} (loss.py:501: lm_head and loss a chunk of tokens at a time). */
static pp_status read_loss(pp_yaml *y, yaml_node_t *map, pp_tt_config *c, const char *sec, int depth)
{
    pp_status st = want_map(y, map, sec);
    if (st) return st;
    bool ce = false;
    int64_t chunks = 0;
    FOR_PAIRS(map, p) {
        const char *name;
        yaml_node_t *v;
        const tt_key *row;
        if ((st = section_key(y, c, sec, loss_keys, N(loss_keys), p, &name, &v, &row))) return st;
        if (!row) continue;
        char full[96];
        snprintf(full, sizeof full, "%s.%s", sec, name);
        if (!strcmp(name, "global_vocab_size")) {
            int64_t g;
            if (!is_null(v) && (st = get_int(y, v, full, 1, 100000000, &g))) return st;
            ce = true;
        } else if (!strcmp(name, "num_chunks")) {
            if ((st = get_int(y, v, full, 1, 1000000, &chunks))) return st;
        } else if (!strcmp(name, "loss_fn")) {
            if (depth > 2) return pp_yaml_error(y, v, "torchtitan config: '%s' nests too deep", full);
            if ((st = read_loss(y, v, c, "loss.loss_fn", depth + 1))) return st;
        }
    }
    if (chunks) {
        /* the whole logits never exist: --loss cut (cut cross-entropy keeps none), which is what
         * launch --format torchtitan writes as ChunkedLossWrapper; one chunk's logits (1/num_chunks
         * of them) are a transient the cut loss does not price */
        c->loss = PP_LOSS_CUT - PP_LOSS_TORCH;
        return PP_OK;
    }
    if (ce) c->loss = 0;
    else if (depth == 0) pp_strlistf(c->unmodelled, sizeof c->unmodelled, "%s without global_vocab_size (not cross-entropy)", sec);
    return PP_OK;
}

static pp_status read_simple(pp_yaml *y, yaml_node_t *map, pp_tt_config *c, const char *sec, const tt_key *t, size_t n)
{
    pp_status st = want_map(y, map, sec);
    if (st) return st;
    FOR_PAIRS(map, p) {
        const char *name;
        yaml_node_t *v;
        const tt_key *row;
        if ((st = section_key(y, c, sec, t, n, p, &name, &v, &row))) return st;
        if (!row) continue;
        if (!strcmp(sec, "comm") && !strcmp(name, "mode")) {
            static const char *const modes[] = {"default", "fake_backend", "local_tensor", "torchcomms"};
            int m;
            if ((st = get_choice(y, v, "comm.mode", modes, 4, &m))) return st;
            if (m) pp_strlistf(c->unmodelled, sizeof c->unmodelled, "comm.mode %s", modes[m]);
        }
    }
    return PP_OK;
}

/* ------------------------------------------------------------------ the file */

pp_status pp_tt_config_load_string(pp_tt_config *c, const char *text, size_t len, const char *path, pp_error *err)
{
    memset(c, 0, sizeof *c);
    /* torchtitan's defaults (configs.py): what a key left out means */
    c->shard = -1, c->replicate = c->tp = c->pp = c->cp = c->ep = c->microbatches = 1;
    c->sp = true;
    c->seq = 2048, c->mb_tokens = 16384, c->step_tokens = -1;
    c->recompute = PP_RC_SELECTIVE; /* trainer.py:108: SelectiveAC.Config */
    c->optimizer_impl = PP_ADAM_FUSED, c->loss = -1, c->vpp = 1;
    snprintf(c->path, sizeof c->path, "%s", path);
    tt_pipe pipe = {0};
    pipe.first_less = pipe.last_less = 1;
    int dtype = 1, mp_param = 0; /* float32 storage, bfloat16 mixed precision */
    pp_yaml y;
    pp_status st = pp_yaml_load(&y, text, len, path, err);
    if (st) return st;
    yaml_node_t *root = pp_yaml_root(&y);
    if (!root || root->type != YAML_MAPPING_NODE) {
        st = pp_yaml_error(&y, root, "torchtitan config: expected a JSON object (Trainer.Config.to_dict)");
        goto done;
    }
    FOR_PAIRS(root, p) {
        const char *name;
        yaml_node_t *v;
        const tt_key *row;
        if ((st = section_key(&y, c, "", top_keys, N(top_keys), p, &name, &v, &row))) goto done;
        if (!row) continue;
        if (!strcmp(name, "model_spec")) st = is_null(v) ? PP_OK : read_model_spec(&y, v, c);
        else if (!strcmp(name, "training")) st = read_training(&y, v, c, &dtype, &mp_param);
        else if (!strcmp(name, "parallelism")) st = read_parallelism(&y, v, c, &pipe);
        else if (!strcmp(name, "activation_checkpoint")) st = read_ac(&y, v, c);
        else if (!strcmp(name, "compile")) st = read_compile(&y, v, c);
        else if (!strcmp(name, "optimizer")) st = read_optimizer(&y, v, c);
        else if (!strcmp(name, "loss")) st = read_loss(&y, v, c, "loss", 0);
        else if (!strcmp(name, "debug")) st = read_simple(&y, v, c, "debug", debug_keys, N(debug_keys));
        else if (!strcmp(name, "comm")) st = read_simple(&y, v, c, "comm", comm_keys, N(comm_keys));
        if (st) goto done;
    }
    /* training.dtype bfloat16: everything in bf16 (configs.py:87), parplan's --param-dtype bf16;
     * else fp32 parameters with bf16 compute unless mixed_precision_param is float32 too */
    c->param_bf16 = dtype == 0;
    if (dtype == 1 && mp_param == 1) {
        st = pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "torchtitan config: training.dtype and "
                          "training.mixed_precision_param are both float32: the run trains in fp32, and parplan models "
                          "16-bit training");
        goto done;
    }
    if (!pipe.sched_node && c->pp > 1) pipe.schedule = 0; /* configs.py: "1F1B" */
    st = pipeline(&y, c, &pipe);
done:
    free(pipe.parts);
    pp_yaml_free(&y);
    return st;
}

pp_status pp_tt_config_load_file(pp_tt_config *c, const char *path, pp_error *err)
{
    char *text;
    size_t len;
    memset(c, 0, sizeof *c);
    pp_status st = pp_yaml_read_file(path, &text, &len, err);
    if (st) return st;
    st = pp_tt_config_load_string(c, text, len, path, err);
    free(text);
    return st;
}

void pp_tt_config_free(pp_tt_config *c)
{
    if (!c) return;
    free(c->pipeline_layout);
    c->pipeline_layout = NULL;
}
