/* A DeepSpeed config (ds_config.json) as a run states it (pp_ds_config.h): the ZeRO stage and
 * offload, the batch sizes and the precision, read with libyaml (JSON is YAML's flow style), every
 * key by its meaning in DeepSpeed's config docs (deepspeed.ai/docs/config-json, runtime/config.py,
 * runtime/zero/config.py). A key whose value changes memory or time and which parplan does not
 * model is named (in one warning); keys that change neither are passed over; keys DeepSpeed does
 * not define are named as unknown. "auto" (the Hugging Face Trainer fills it in) is "not given". */
#include "pp_ds_config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_yaml.h"

typedef enum { K_READ, K_PASS, K_UNMODELLED } key_kind;
typedef struct {
    const char *key;
    key_kind kind;
} ds_key;

/* Top level. */
static const ds_key top_keys[] = {
    {"train_batch_size", K_READ}, {"train_micro_batch_size_per_gpu", K_READ}, {"gradient_accumulation_steps", K_READ},
    {"zero_optimization", K_READ}, {"bf16", K_READ}, {"fp16", K_READ}, {"optimizer", K_READ},
    {"activation_checkpointing", K_READ},
    /* no effect on memory or step time */
    {"scheduler", K_PASS}, {"gradient_clipping", K_PASS}, {"steps_per_print", K_PASS}, {"wall_clock_breakdown", K_PASS},
    {"tensorboard", K_PASS}, {"wandb", K_PASS}, {"csv_monitor", K_PASS}, {"comet", K_PASS}, {"comms_logger", K_PASS},
    {"flops_profiler", K_PASS}, {"zero_allow_untested_optimizer", K_PASS}, {"zero_force_ds_cpu_optimizer", K_PASS},
    {"dump_state", K_PASS}, {"checkpoint", K_PASS}, {"memory_breakdown", K_PASS}, {"prescale_gradients", K_PASS},
    {"gradient_predivide_factor", K_PASS}, {"sparse_gradients", K_PASS}, {"elasticity", K_PASS}, {"seed", K_PASS},
    {"load_universal_checkpoint", K_PASS}, {"use_node_local_storage", K_PASS},
    /* they change memory or time; not modelled */
    {"communication_data_type", K_UNMODELLED}, {"data_types", K_UNMODELLED}, {"amp", K_UNMODELLED},
    {"compression_training", K_UNMODELLED}, {"curriculum_learning", K_UNMODELLED}, {"data_efficiency", K_UNMODELLED},
    {"pipeline", K_UNMODELLED}, {"aio", K_UNMODELLED}, {"sequence_parallel_size", K_UNMODELLED},
    {"torch_autocast", K_UNMODELLED}, {"compile", K_UNMODELLED},
};

/* zero_optimization: the stage, offload and overlap_comm are read (overlap_comm not given: DeepSpeed's
 * default, on for stage 3 only, request.c); the bucket sizes parplan prices are DeepSpeed's defaults
 * (runtime/zero/config.py: reduce_bucket_size and allgather_bucket_size 5e8, memory.c). */
static const ds_key zero_keys[] = {
    {"stage", K_READ}, {"offload_optimizer", K_READ}, {"offload_param", K_READ},
    {"reduce_bucket_size", K_READ}, {"allgather_bucket_size", K_READ},
    {"overlap_comm", K_READ}, {"contiguous_gradients", K_PASS}, {"reduce_scatter", K_PASS},
    {"allgather_partitions", K_PASS}, {"stage3_gather_16bit_weights_on_model_save", K_PASS},
    {"gather_16bit_weights_on_model_save", K_PASS}, {"load_from_fp32_weights", K_PASS},
    {"elastic_checkpoint", K_PASS}, {"ignore_unused_parameters", K_PASS}, {"round_robin_gradients", K_PASS},
    {"stage3_prefetch_bucket_size", K_UNMODELLED}, {"stage3_param_persistence_threshold", K_UNMODELLED},
    {"stage3_max_live_parameters", K_UNMODELLED}, {"stage3_max_reuse_distance", K_UNMODELLED},
    {"sub_group_size", K_UNMODELLED}, {"zero_quantized_weights", K_UNMODELLED},
    {"zero_quantized_gradients", K_UNMODELLED}, {"zero_hpz_partition_size", K_UNMODELLED},
    {"mics_shard_size", K_UNMODELLED}, {"mics_hierarchical_params_gather", K_UNMODELLED},
    {"cpu_offload", K_UNMODELLED}, {"cpu_offload_params", K_UNMODELLED},
};

static const ds_key *key_find(const ds_key *t, size_t n, const char *k)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].key, k)) return &t[i];
    return NULL;
}


static bool is_auto(const yaml_node_t *v)
{
    const char *s = pp_yaml_scalar(v);
    return s && !strcmp(s, "auto");
}

/* An integer value in [lo, hi], or "auto" (*given false). */
static pp_status get_int(pp_yaml *y, yaml_node_t *v, const char *key, int64_t lo, int64_t hi, int64_t *out, bool *given)
{
    *given = false;
    if (is_auto(v)) return PP_OK;
    const char *s = pp_yaml_scalar(v);
    double d;
    if (!s || !pp_yaml_parse_double(s, &d) || d != (double)(int64_t)d || d < (double)lo || d > (double)hi)
        return pp_yaml_error(y, v, "deepspeed config: '%s' must be an integer from %lld to %lld (or \"auto\")", key,
                             (long long)lo, (long long)hi);
    *out = (int64_t)d;
    *given = true;
    return PP_OK;
}

/* A boolean value, or "auto" (*given false). */
static pp_status get_bool(pp_yaml *y, yaml_node_t *v, const char *key, bool *out, bool *given)
{
    *given = false;
    if (is_auto(v)) return PP_OK;
    const char *s = pp_yaml_scalar(v);
    if (s && (!strcmp(s, "true") || !strcmp(s, "false"))) {
        *out = s[0] == 't';
        *given = true;
        return PP_OK;
    }
    return pp_yaml_error(y, v, "deepspeed config: '%s' must be true or false (or \"auto\")", key);
}

static pp_status want_map(pp_yaml *y, yaml_node_t *v, const char *key)
{
    if (v->type == YAML_MAPPING_NODE) return PP_OK;
    return pp_yaml_error(y, v, "deepspeed config: '%s' is %s, expected a mapping", key, pp_yaml_node_kind(v));
}

/* offload_optimizer / offload_param: {"device": "cpu" | "nvme" | "none", ...} */
static pp_status read_offload(pp_yaml *y, yaml_node_t *v, const char *key, pp_ds_config *c, int level)
{
    pp_status st = want_map(y, v, key);
    if (st) return st;
    yaml_node_t *d = pp_yaml_lookup(y, v, "device", false);
    const char *dev = d ? pp_yaml_scalar(d) : "none";
    if (!dev) return pp_yaml_error(y, d, "deepspeed config: '%s.device' must be cpu, nvme or none", key);
    if (!strcmp(dev, "none")) return PP_OK;
    if (strcmp(dev, "cpu") && strcmp(dev, "nvme"))
        return pp_yaml_error(y, d, "deepspeed config: '%s.device' must be cpu, nvme or none, got '%s'", key, dev);
    if (!strcmp(dev, "nvme")) pp_strlistf(c->unmodelled, sizeof c->unmodelled, "%s.device nvme (modelled as cpu)", key);
    if (level > c->offload) c->offload = level;
    return PP_OK;
}

static pp_status read_zero(pp_yaml *y, yaml_node_t *map, pp_ds_config *c)
{
    pp_status st = want_map(y, map, "zero_optimization");
    if (st) return st;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&y->doc, p->key), *v = yaml_document_get_node(&y->doc, p->value);
        const char *name = pp_yaml_scalar(k);
        if (!name) return pp_yaml_error(y, k, "deepspeed config: a key must be a string");
        const ds_key *dk = key_find(zero_keys, sizeof zero_keys / sizeof zero_keys[0], name);
        if (!dk) {
            pp_strlistf(c->unknown, sizeof c->unknown, "zero_optimization.%s", name);
            continue;
        }
        if (dk->kind == K_PASS) continue;
        if (dk->kind == K_UNMODELLED) {
            pp_strlistf(c->unmodelled, sizeof c->unmodelled, "zero_optimization.%s", name);
            continue;
        }
        bool given;
        if (!strcmp(name, "stage")) {
            int64_t s;
            if ((st = get_int(y, v, "zero_optimization.stage", 0, 3, &s, &given))) return st;
            if (given) c->zero = (int)s;
        } else if (!strcmp(name, "overlap_comm")) {
            bool b;
            if ((st = get_bool(y, v, "zero_optimization.overlap_comm", &b, &given))) return st;
            if (given) c->overlap_comm = b ? 1 : 0;
        } else if (!strcmp(name, "offload_optimizer")) {
            if ((st = read_offload(y, v, "zero_optimization.offload_optimizer", c, PP_OFF_OPTIMIZER))) return st;
        } else if (!strcmp(name, "offload_param")) {
            if ((st = read_offload(y, v, "zero_optimization.offload_param", c, PP_OFF_PARAMS))) return st;
        } else {
            /* the bucket sizes: DeepSpeed's defaults (5e8 elements) are what memory.c prices */
            int64_t b;
            if ((st = get_int(y, v, name, 1, (int64_t)1e15, &b, &given))) return st;
            if (given && b != 500000000) pp_strlistf(c->unmodelled, sizeof c->unmodelled, "zero_optimization.%s %lld (priced at "
                                             "the default 5e8)", name, (long long)b);
        }
    }
    return PP_OK;
}

/* bf16 / fp16: {"enabled": true | false | "auto", ...} */
static pp_status read_precision(pp_yaml *y, yaml_node_t *map, const char *key, bool *enabled, bool *given)
{
    pp_status st = want_map(y, map, key);
    if (st) return st;
    *given = false;
    yaml_node_t *e = pp_yaml_lookup(y, map, "enabled", false);
    if (!e) return PP_OK; /* DeepSpeed: a bf16 or fp16 block without "enabled" is disabled */
    char k[32];
    snprintf(k, sizeof k, "%s.enabled", key);
    return get_bool(y, e, k, enabled, given);
}

pp_status pp_ds_config_load_string(pp_ds_config *c, const char *text, size_t len, const char *path, pp_error *err)
{
    memset(c, 0, sizeof *c);
    c->zero = c->precision = c->overlap_comm = -1;
    c->offload = PP_OFF_NONE;
    snprintf(c->path, sizeof c->path, "%s", path);
    pp_yaml y;
    pp_status st = pp_yaml_load(&y, text, len, path, err);
    if (st) return st;
    yaml_node_t *root = pp_yaml_root(&y);
    bool bf16 = false, fp16 = false, bf16_given = false, fp16_given = false;
    if (!root || root->type != YAML_MAPPING_NODE) {
        st = pp_yaml_error(&y, root, "deepspeed config: expected a JSON object");
        goto done;
    }
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&y.doc, p->key), *v = yaml_document_get_node(&y.doc, p->value);
        const char *name = pp_yaml_scalar(k);
        if (!name) {
            st = pp_yaml_error(&y, k, "deepspeed config: a key must be a string");
            goto done;
        }
        const ds_key *dk = key_find(top_keys, sizeof top_keys / sizeof top_keys[0], name);
        if (!dk) {
            pp_strlistf(c->unknown, sizeof c->unknown, "%s", name);
            continue;
        }
        if (dk->kind == K_PASS) continue;
        if (dk->kind == K_UNMODELLED) {
            pp_strlistf(c->unmodelled, sizeof c->unmodelled, "%s", name);
            continue;
        }
        bool given = false;
        if (!strcmp(name, "train_batch_size")) {
            if ((st = get_int(&y, v, name, 1, (int64_t)PP_MAX_GBS, &c->gbs, &given))) goto done;
        } else if (!strcmp(name, "train_micro_batch_size_per_gpu")) {
            if ((st = get_int(&y, v, name, 1, 1000000, &c->mbs, &given))) goto done;
        } else if (!strcmp(name, "gradient_accumulation_steps")) {
            if ((st = get_int(&y, v, name, 1, 100000000, &c->gas, &given))) goto done;
        } else if (!strcmp(name, "zero_optimization")) {
            if ((st = read_zero(&y, v, c))) goto done;
        } else if (!strcmp(name, "bf16")) {
            if ((st = read_precision(&y, v, name, &bf16, &bf16_given))) goto done;
        } else if (!strcmp(name, "fp16")) {
            if ((st = read_precision(&y, v, name, &fp16, &fp16_given))) goto done;
        } else if (!strcmp(name, "optimizer")) {
            if ((st = want_map(&y, v, name))) goto done;
            yaml_node_t *t = pp_yaml_lookup(&y, v, "type", false);
            const char *type = t ? pp_yaml_scalar(t) : NULL;
            /* Adam's state is what parplan prices (12 bytes per parameter); DeepSpeed's CPU Adam
             * under offload is the same state on the host */
            if (type && strcasecmp(type, "Adam") && strcasecmp(type, "AdamW") && strcasecmp(type, "FusedAdam") &&
                strcasecmp(type, "CPUAdam") && strcasecmp(type, "DeepSpeedCPUAdam"))
                pp_strlistf(c->unmodelled, sizeof c->unmodelled, "optimizer.type %s (priced as Adam)", type);
        } else if (!strcmp(name, "activation_checkpointing")) {
            if ((st = want_map(&y, v, name))) goto done;
            static const char *const ac[] = {"partition_activations", "cpu_checkpointing",
                                             "contiguous_memory_optimization"};
            for (size_t i = 0; i < sizeof ac / sizeof ac[0]; i++) {
                yaml_node_t *a = pp_yaml_lookup(&y, v, ac[i], false);
                bool on = false, g2 = false;
                if (a && (st = get_bool(&y, a, ac[i], &on, &g2))) goto done;
                if (on) pp_strlistf(c->unmodelled, sizeof c->unmodelled, "activation_checkpointing.%s", ac[i]);
            }
        }
    }
    if (bf16_given && fp16_given && bf16 && fp16) {
        st = pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "deepspeed config: bf16 and fp16 are both enabled");
        goto done;
    }
    if (bf16_given && bf16) c->precision = PP_PREC_BF16;
    else if (fp16_given && fp16) c->precision = PP_PREC_FP16;
    else if ((bf16_given || !pp_yaml_lookup(&y, root, "bf16", false)) && (fp16_given || !pp_yaml_lookup(&y, root, "fp16", false))) {
        /* neither enabled (and neither left to "auto"): DeepSpeed trains in fp32 */
        st = pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "deepspeed config: neither bf16 nor fp16 is enabled: the run "
                          "trains in fp32, and parplan models 16-bit training");
        goto done;
    }
    if (c->offload == PP_OFF_PARAMS && c->zero >= 0 && c->zero < 3) {
        st = pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "deepspeed config: offload_param needs ZeRO stage 3 (stage %d)",
                          c->zero);
        goto done;
    }
done:
    pp_yaml_free(&y);
    return st;
}

pp_status pp_ds_config_load_file(pp_ds_config *c, const char *path, pp_error *err)
{
    char *text;
    size_t len;
    memset(c, 0, sizeof *c);
    pp_status st = pp_yaml_read_file(path, &text, &len, err);
    if (st) return st;
    st = pp_ds_config_load_string(c, text, len, path, err);
    free(text);
    return st;
}
