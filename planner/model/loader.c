/* Loaders: models.d YAML (models and GPUs), the catalog; Hugging Face config.json is hf_config.c.
 *
 * Everything goes through libyaml's document API (yaml_parser_load) and key tables: one row
 * per key with its type, field offset and range. A pre-pass over the event stream bounds the
 * nesting depth and the node count and refuses aliases and multiple documents, so no input
 * can make the loader recurse deeply, loop or allocate without bound. Every error is
 * PP_ERR_INPUT with file:line:col (1-based, the start of the offending node) and names the key.
 *
 * JSON is a subset of YAML 1.2 (in the flow style), so config.json files take the same path;
 * they are told apart from our schema by their keys (model_type, architectures, hidden_size...).
 */
#include "pp_load.h"
#include "pp_yaml.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* ================================================================== our model schema */

#define KINT(k, f, lo, hi, req) {k, PP_KEY_INT, offsetof(pp_model, f), lo, hi, 0, 0, NULL, 0, req, NULL, 0, 0}
#define KSTR PP_KSTR
#define KENUM PP_KENUM
#define KBOOL PP_KBOOL
#define KNUM(T, k, f, lo, hi, scale, req) {k, PP_KEY_NUM, offsetof(T, f), lo, hi, scale, 0, NULL, 0, req, NULL, 0, 0}

/* The bounds here are the loader's "absurd value" limits; pp_model_validate checks the
 * relations between fields (divisibility, top-k <= experts, total size). */
static const pp_key model_keys[] = {
    KSTR(pp_model, "name", name, false),
    KSTR(pp_model, "family", family, false),
    KINT("layers", layers, 1, 1e7, true),
    KINT("hidden", hidden, 1, 1e7, true),
    KINT("heads", heads, 1, 1e7, true),
    KINT("kv_heads", kv_heads, 1, 1e7, false),
    KINT("head_dim", head_dim, 1, 1e7, false),
    KINT("ffn", ffn, 1, 1e7, false),
    KINT("vocab", vocab, 1, 1e8, true),
    KINT("seq", seq, 1, 1e8, true),          /* the training sequence length */
    KINT("max_context", max_context, 1, 1e8, false), /* the longest context served; default seq */
    KENUM(pp_model, "activation", act, pp_act_names, PP_ACT_COUNT, false),
    KENUM(pp_model, "norm", norm, pp_norm_names, PP_NORM_COUNT, false),
    KENUM(pp_model, "position", pos, pp_pos_names, PP_POS_COUNT, false),
    KBOOL(pp_model, "bias", bias, false),
    KBOOL(pp_model, "tied", tied, false),
    KINT("experts", experts, 0, 1e5, false),
    KINT("topk", topk, 0, 1e5, false),
    KINT("gbs", gbs, 1, PP_MAX_GBS, false),
    KNUM(pp_model, "published_params", published_params, 0, 1e16, 1, false),
    KNUM(pp_model, "published_active", published_active, 0, 1e16, 1, false),
    KSTR(pp_model, "source", source, false),
    /* attention details */
    KBOOL(pp_model, "qkv_bias", qkv_bias, false),
    KBOOL(pp_model, "out_bias", out_bias, false),
    KBOOL(pp_model, "mlp_bias", mlp_bias, false),
    KENUM(pp_model, "qk_norm", qk_norm, pp_qk_norm_names, PP_QKNORM_COUNT, false),
    KBOOL(pp_model, "attn_sinks", attn_sinks, false),
    KINT("norms_per_layer", norms_per_layer, 2, 4, false),
    KINT("window", window, 0, 1e8, false),
    KINT("window_full_every", window_full_every, 0, 1e7, false),
    KINT("window_full_phase", window_full_phase, 0, 1e7, false),
    KINT("q_lora_rank", q_lora_rank, 0, 1e7, false),
    KINT("kv_lora_rank", kv_lora_rank, 0, 1e7, false),
    KINT("qk_nope_dim", qk_nope_dim, 0, 1e7, false),
    KINT("qk_rope_dim", qk_rope_dim, 0, 1e7, false),
    KINT("v_head_dim", v_head_dim, 0, 1e7, false),
    /* Mixture of Experts */
    KINT("moe_ffn", moe_ffn, 0, 1e7, false),
    KINT("shared_experts", shared_experts, 0, 1e5, false),
    KINT("shared_ffn", shared_ffn, 0, 1e7, false),
    KBOOL(pp_model, "shared_gate", shared_gate, false),
    KBOOL(pp_model, "router_bias", router_bias, false),
    KINT("moe_first_dense", moe_first_dense, 0, 1e7, false),
    KINT("moe_every", moe_every, 0, 1e7, false),
    KINT("moe_phase", moe_phase, 0, 1e7, false),
    {"dense_layers", PP_KEY_INTSEQ, offsetof(pp_model, dense_layers), 0, 1e7, 0, PP_MODEL_MAX_LIST,
     NULL, 0, false, NULL, 0, offsetof(pp_model, n_dense_layers)},
    KINT("mtp_layers", mtp_layers, 0, 64, false),
    /* training defaults (dropout_set follows from either key, model_from_ours) */
    KNUM(pp_model, "attention_dropout", attention_dropout, 0, 0.999, 1, false),
    KNUM(pp_model, "hidden_dropout", hidden_dropout, 0, 0.999, 1, false),
    /* what else defines the model (pp.h; defaults: pp_model_validate) */
    KNUM(pp_model, "norm_eps", norm_eps, 1e-30, 0.5, 1, false),
    KNUM(pp_model, "rope_theta", rope_theta, 1, 1e12, 1, false),
    KNUM(pp_model, "rope_local_theta", rope_local_theta, 1, 1e12, 1, false),
    KENUM(pp_model, "rope_scaling", rope_scaling, pp_rope_scaling_names, PP_ROPE_SCALING_COUNT, false),
    KNUM(pp_model, "rope_factor", rope_factor, 1e-6, 1e6, 1, false),
    KINT("rope_original_context", rope_original_context, 1, 1e8, false),
    KNUM(pp_model, "rope_low_freq", rope_low_freq, 1e-6, 1e6, 1, false),
    KNUM(pp_model, "rope_high_freq", rope_high_freq, 1e-6, 1e6, 1, false),
    KNUM(pp_model, "yarn_beta_fast", yarn_beta_fast, 1e-6, 1e6, 1, false),
    KNUM(pp_model, "yarn_beta_slow", yarn_beta_slow, 1e-6, 1e6, 1, false),
    KNUM(pp_model, "yarn_mscale", yarn_mscale, 1e-6, 1e6, 1, false),
    KNUM(pp_model, "yarn_mscale_all_dim", yarn_mscale_all_dim, 0, 1e6, 1, false),
    KBOOL(pp_model, "yarn_no_truncate", yarn_no_truncate, false),
    KENUM(pp_model, "router_score", router_score, pp_router_score_names, PP_ROUTER_SCORE_COUNT, false),
    KBOOL(pp_model, "router_raw_topk", router_raw_topk, false),
    KNUM(pp_model, "router_scale", router_scale, 1e-6, 1e6, 1, false),
    KINT("router_groups", router_groups, 1, 1e5, false),
    KINT("router_group_topk", router_group_topk, 1, 1e5, false),
    KBOOL(pp_model, "router_expert_bias", router_expert_bias, false),
    KENUM(pp_model, "router_balance", router_balance, pp_router_balance_names, PP_BALANCE_COUNT, false),
    KNUM(pp_model, "router_aux_coef", router_aux_coef, 0, 1e6, 1, false),
    KNUM(pp_model, "router_z_coef", router_z_coef, 0, 1e6, 1, false),
};
#define N_MODEL_KEYS ((int)(sizeof model_keys / sizeof model_keys[0]))

/* Which key a pp_model_validate message is about (the message starts with the field name). */
static yaml_node_t *validate_where(pp_yaml *y, yaml_node_t *root, const pp_error *err,
                                   const char *const *pp_fields, const char *const *file_keys, int n)
{
    for (int i = 0; i < n; i++) {
        size_t l = strlen(pp_fields[i]);
        if (!strncmp(err->msg, pp_fields[i], l) && (err->msg[l] == ' ' || err->msg[l] == ':')) {
            yaml_node_t *k = pp_yaml_lookup(y, root, file_keys[i], true);
            if (k) return k;
        }
    }
    return root;
}


static pp_status model_from_ours(pp_yaml *y, yaml_node_t *root, pp_model *m)
{
    yaml_node_t *found[N_MODEL_KEYS] = {0};
    pp_status st = pp_yaml_map(y, root, model_keys, N_MODEL_KEYS, m, 0, found, "model");
    if (st) return st;
    for (int i = 0; i < N_MODEL_KEYS; i++)
        if (found[i] && strstr(model_keys[i].key, "_dropout")) m->dropout_set = true;
    pp_error verr;
    st = pp_model_validate(m, &verr);
    if (st) {
        static const char *const fields[] = {
            "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "seq", "experts",
            "topk", "gbs", "published_params", "published_active", "qk_norm", "norms_per_layer",
            "window_full_every", "window_full_phase", "window", "kv_lora_rank", "q_lora_rank",
            "qk_nope_dim", "qk_rope_dim", "v_head_dim", "moe_ffn", "shared_ffn", "shared_experts",
            "moe_first_dense", "moe_every", "moe_phase", "dense_layers", "mtp_layers", "max_context", "norm_eps",
            "rope_theta", "rope_local_theta", "rope_scaling", "rope_factor", "rope_original_context", "rope_low_freq",
            "yarn_beta_fast", "router_score", "router_scale", "router_groups", "router_expert_bias", "router_aux_coef",
            "router_balance"};
        /* "hidden 100 is not divisible by heads 7": point at heads, the divisor */
        const char *const *keys = fields;
        yaml_node_t *at = validate_where(y, root, &verr, fields, keys, (int)(sizeof fields / sizeof *fields));
        if (strstr(verr.msg, "not divisible by heads")) {
            yaml_node_t *h = pp_yaml_lookup(y, root, "heads", true);
            if (h) at = h;
        }
        return pp_yaml_error(y, at, "model: %s", verr.msg);
    }
    return PP_OK;
}

/* ================================================================== public loaders */

pp_status pp_model_load_string(pp_model *m, const char *text, size_t len, const char *path,
                               pp_error *err)
{
    pp_yaml y;
    pp_model_init(m);
    pp_status st = pp_yaml_load(&y, text, len, path, err);
    if (st) return st;
    yaml_node_t *root = pp_yaml_root(&y);
    if (pp_hf_is_config(&y, root))
        st = pp_hf_model_load(&y, root, m);
    else
        st = model_from_ours(&y, root, m);
    if (st == PP_OK && !m->name[0] && path) pp_yaml_name_from_path(path, m->name, sizeof m->name);
    pp_yaml_free(&y);
    return st;
}

pp_status pp_model_load_file(pp_model *m, const char *path, pp_error *err)
{
    char *text;
    size_t len;
    pp_model_init(m);
    pp_status st = pp_yaml_read_file(path, &text, &len, err);
    if (st) return st;
    st = pp_model_load_string(m, text, len, path, err);
    free(text);
    return st;
}

/* GPU schema: dense TFLOP/s per dtype in `flops`, memory in GiB, MiB or bytes (one of them). */
typedef struct {
    pp_gpu g;
    double memory_gib, memory_mib, memory_bytes;
} gpu_file;

#define GNUM(k, f, lo, hi, scale, req) {k, PP_KEY_NUM, offsetof(gpu_file, f), lo, hi, scale, 0, NULL, 0, req, NULL, 0, 0}
static const pp_key gpu_flops_keys[] = {
    GNUM("fp32", g.peak_flops[PP_DT_FP32], 0, 1e6, 1e12, false),
    GNUM("tf32", g.peak_flops[PP_DT_TF32], 0, 1e6, 1e12, false),
    GNUM("fp16", g.peak_flops[PP_DT_FP16], 0, 1e6, 1e12, false),
    GNUM("bf16", g.peak_flops[PP_DT_BF16], 0, 1e6, 1e12, false),
    GNUM("fp8", g.peak_flops[PP_DT_FP8], 0, 1e6, 1e12, false),
    GNUM("fp4", g.peak_flops[PP_DT_FP4], 0, 1e6, 1e12, false),
};
static const pp_key gpu_keys[] = {
    KSTR(gpu_file, "name", g.name, true),
    KSTR(gpu_file, "full_name", g.full_name, false),
    GNUM("memory_gib", memory_gib, 1, 1048576, 1, false),
    GNUM("memory_mib", memory_mib, 1024, 1073741824.0, 1, false),
    GNUM("memory_bytes", memory_bytes, 1073741824.0, 1125899906842624.0, 1, false),
    GNUM("mem_bw_gbs", g.mem_bw_gbs, 1, 1e6, 1, true),
    {"flops", PP_KEY_MAP, 0, 0, 0, 0, 0, NULL, 0, true, gpu_flops_keys,
     (int)(sizeof gpu_flops_keys / sizeof gpu_flops_keys[0]), 0},
    GNUM("nvlink_gbs", g.nvlink_gbs, 0, 1e6, 1, true),
    GNUM("pcie_gbs", g.pcie_gbs, 0.1, 1e5, 1, true),
    {"gpus_per_node", PP_KEY_INT, offsetof(gpu_file, g.gpus_per_node), 1, 1e6, 0, 0, NULL, 0, true, NULL, 0, 0},
    {"nvlink_domain", PP_KEY_INT, offsetof(gpu_file, g.nvlink_domain), 1, 1e6, 0, 0, NULL, 0, false, NULL, 0, 0},
    GNUM("internode_gbs", g.internode_gbs, 0, 1e6, 1, true),
    GNUM("gemm_eff", g.gemm_eff, 0.01, 1, 1, true),
    GNUM("gemm_sustained", g.gemm_sustained, 0.5, 1, 1, false),
    GNUM("fp4_eff", g.fp4_eff, 0.05, 1, 1, false),
    GNUM("mxfp8_eff", g.mxfp8_eff, 0.05, 1, 1, false),
    GNUM("fp8_eff", g.fp8_eff, 0.05, 1, 1, false),
    GNUM("intra_latency_us", g.intra_latency_s, 0, 1e6, 1e-6, true),
    GNUM("inter_latency_us", g.inter_latency_s, 0, 1e6, 1e-6, true),
    GNUM("max_power_w", g.max_power_w, 1, 1e5, 1, false),
    GNUM("gpu_power_w", g.power_w, 1, 1e5, 1, false),
    KSTR(gpu_file, "source", g.source, false),
};
#define N_GPU_KEYS ((int)(sizeof gpu_keys / sizeof gpu_keys[0]))

pp_status pp_gpu_load_string(pp_gpu *g, const char *text, size_t len, const char *path, pp_error *err)
{
    pp_yaml y;
    gpu_file gf;
    memset(&gf, 0, sizeof gf);
    pp_gpu_init(g);
    pp_status st = pp_yaml_load(&y, text, len, path, err);
    if (st) return st;
    yaml_node_t *root = pp_yaml_root(&y);
    yaml_node_t *found[N_GPU_KEYS];
    st = pp_yaml_map(&y, root, gpu_keys, N_GPU_KEYS, &gf, 0, found, "gpu");
    if (st) goto done;
    int n_mem = (found[2] != NULL) + (found[3] != NULL) + (found[4] != NULL);
    if (n_mem != 1) {
        /* point at the memory key that comes last in the file (the extra one) */
        yaml_node_t *at = root;
        static const char *const mem_keys[] = {"memory_gib", "memory_mib", "memory_bytes"};
        for (int i = 0; i < 3; i++) {
            yaml_node_t *k = found[2 + i] ? pp_yaml_lookup(&y, root, mem_keys[i], true) : NULL;
            if (k && (at == root || k->start_mark.index > at->start_mark.index)) at = k;
        }
        st = pp_yaml_error(&y, n_mem ? at : root,
                           "gpu: give exactly one of 'memory_gib', 'memory_mib', 'memory_bytes'");
        goto done;
    }
    gf.g.memory_bytes = found[2] ? gf.memory_gib * 1073741824.0
                      : found[3] ? gf.memory_mib * 1048576.0 : gf.memory_bytes;
    pp_error verr;
    if ((st = pp_gpu_validate(&gf.g, &verr))) {
        /* point at the key the message is about, where it is one of these */
        static const char *const at_keys[] = {"flops", "gpu_power_w", "max_power_w"};
        yaml_node_t *at = NULL;
        for (size_t i = 0; i < sizeof at_keys / sizeof at_keys[0] && !at; i++)
            if (!strncmp(verr.msg, at_keys[i], strlen(at_keys[i]))) at = pp_yaml_lookup(&y, root, at_keys[i], true);
        st = pp_yaml_error(&y, at ? at : root, "gpu: %s", verr.msg);
        goto done;
    }
    *g = gf.g;
done:
    pp_yaml_free(&y);
    return st;
}

pp_status pp_gpu_load_file(pp_gpu *g, const char *path, pp_error *err)
{
    char *text;
    size_t len;
    pp_gpu_init(g);
    pp_status st = pp_yaml_read_file(path, &text, &len, err);
    if (st) return st;
    st = pp_gpu_load_string(g, text, len, path, err);
    free(text);
    return st;
}

/* ================================================================== catalog */

static bool is_dir(const char *p)
{
    struct stat sb;
    return p && stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool is_catalog(const char *dir)
{
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/models", dir);
    return is_dir(p);
}

/* Search order (documented in models.d/README.md):
 *   1. $PARPLAN_MODELS_DIR (an error if set but not a catalog);
 *   2. the executable's directory and its parents up to 3 levels, each with models.d/ beside it
 *      (a build directory inside the source tree: build/src/parplan -> ./models.d);
 *   3. <exe>/../share/parplan/models.d (the installed layout, meson's datadir). */
pp_status pp_catalog_find_dir(const char *argv0, char *out, size_t n, pp_error *err)
{
    const char *env = getenv("PARPLAN_MODELS_DIR");
    if (env && env[0]) {
        if (!is_catalog(env))
            return pp_error_set(err, PP_ERR_INPUT, env, 0, 0,
                                "PARPLAN_MODELS_DIR is not a models.d directory (no models/ in it)");
        snprintf(out, n, "%s", env);
        return PP_OK;
    }
    char exe[PATH_MAX] = "";
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l > 0) {
        exe[l] = '\0';
    } else if (argv0 && strchr(argv0, '/')) {
        if (!realpath(argv0, exe)) exe[0] = '\0';
    }
    char dir[PATH_MAX], cand[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s", exe);
    for (int up = 0; up < 4 && dir[0]; up++) {
        char *slash = strrchr(dir, '/');
        if (!slash) break;
        *slash = '\0';
        snprintf(cand, sizeof cand, "%s/models.d", dir[0] ? dir : "");
        if (is_catalog(cand)) {
            snprintf(out, n, "%s", cand);
            return PP_OK;
        }
        snprintf(cand, sizeof cand, "%s/share/parplan/models.d", dir[0] ? dir : "");
        if (up == 1 && is_catalog(cand)) {
            snprintf(out, n, "%s", cand);
            return PP_OK;
        }
    }
    return pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0,
                        "cannot find the models.d catalog; set PARPLAN_MODELS_DIR");
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted *.yaml names of dir; *names is a NULL-terminated array to free with free_names. */
static void free_names(char **names)
{
    if (!names) return;
    for (char **p = names; *p; p++) free(*p);
    free(names);
}

static pp_status list_yaml(const char *dir, char ***names, int *count, pp_error *err)
{
    *names = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) return pp_error_set(err, PP_ERR_RUNTIME, dir, 0, 0, "cannot open directory: %s", strerror(errno));
    int n = 0, cap = 16;
    bool oom = false;
    char **v = calloc((size_t)cap + 1, sizeof *v);
    struct dirent *e;
    oom = !v;
    while (!oom && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".yaml") || e->d_name[0] == '.') continue;
        if (n == cap) {
            char **nv = realloc(v, ((size_t)cap * 2 + 1) * sizeof *v);
            if (!nv) { oom = true; break; }
            v = nv;
            cap *= 2;
        }
        if (!(v[n] = strdup(e->d_name))) { oom = true; break; }
        v[++n] = NULL;
    }
    closedir(d);
    if (oom) {
        free_names(v);
        return pp_error_set(err, PP_ERR_NOMEM, dir, 0, 0, "out of memory");
    }
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    *names = v;
    *count = n;
    return PP_OK;
}

void pp_catalog_free(pp_catalog *cat)
{
    if (!cat) return;
    free(cat->models);
    free(cat->gpus);
    cat->models = NULL;
    cat->gpus = NULL;
    cat->n_models = cat->n_gpus = 0;
}

/* The catalog's own rule: the file a.yaml declares name: a (so `parplan models` and the
 * file system agree); names are unique. */
static pp_status catalog_check_name(const char *path, const char *file, const char *name, pp_error *err)
{
    char stem[256];
    snprintf(stem, sizeof stem, "%s", file);
    stem[strlen(stem) - 5] = '\0';
    if (strcmp(stem, name))
        return pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "name '%s' differs from the file name '%s'",
                            name, stem);
    return PP_OK;
}

pp_status pp_catalog_load(pp_catalog *cat, const char *dir, pp_error *err)
{
    memset(cat, 0, sizeof *cat);
    snprintf(cat->dir, sizeof cat->dir, "%s", dir);
    char sub[PATH_MAX], path[PATH_MAX + 256];
    char **names = NULL;
    int n = 0;
    pp_status st;

    snprintf(sub, sizeof sub, "%s/models", dir);
    if ((st = list_yaml(sub, &names, &n, err))) goto fail;
    cat->models = calloc((size_t)n + 1, sizeof *cat->models);
    if (!cat->models) { st = pp_error_set(err, PP_ERR_NOMEM, sub, 0, 0, "out of memory"); goto fail; }
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", sub, names[i]);
        pp_model *m = &cat->models[cat->n_models];
        if ((st = pp_model_load_file(m, path, err))) goto fail;
        if ((st = catalog_check_name(path, names[i], m->name, err))) goto fail;
        cat->n_models++;
    }
    free_names(names);
    names = NULL;

    snprintf(sub, sizeof sub, "%s/gpus", dir);
    if ((st = list_yaml(sub, &names, &n, err))) goto fail;
    cat->gpus = calloc((size_t)n + 1, sizeof *cat->gpus);
    if (!cat->gpus) { st = pp_error_set(err, PP_ERR_NOMEM, sub, 0, 0, "out of memory"); goto fail; }
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", sub, names[i]);
        pp_gpu *g = &cat->gpus[cat->n_gpus];
        if ((st = pp_gpu_load_file(g, path, err))) goto fail;
        if ((st = catalog_check_name(path, names[i], g->name, err))) goto fail;
        cat->n_gpus++;
    }
    free_names(names);
    names = NULL;
    /* File names are unique in a directory and equal the names: a model and a GPU may not
     * share one either, so that NAME arguments are never ambiguous in messages. */
    for (int i = 0; i < cat->n_models; i++)
        for (int j = 0; j < cat->n_gpus; j++)
            if (!strcmp(cat->models[i].name, cat->gpus[j].name)) {
                st = pp_error_set(err, PP_ERR_INPUT, dir, 0, 0, "'%s' is both a model and a GPU",
                                  cat->models[i].name);
                goto fail;
            }
    return PP_OK;
fail:
    free_names(names);
    pp_catalog_free(cat);
    snprintf(cat->dir, sizeof cat->dir, "%s", dir);
    return st;
}

const pp_model *pp_catalog_model(const pp_catalog *cat, const char *name)
{
    if (!cat || !name) return NULL;
    for (int i = 0; i < cat->n_models; i++)
        if (!strcmp(cat->models[i].name, name)) return &cat->models[i];
    return NULL;
}

const pp_gpu *pp_catalog_gpu(const pp_catalog *cat, const char *name)
{
    if (!cat || !name) return NULL;
    for (int i = 0; i < cat->n_gpus; i++)
        if (!strcmp(cat->gpus[i].name, name)) return &cat->gpus[i];
    return NULL;
}

static bool is_file(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Something that looks like a path (a slash or a file extension) is reported as a file. */
static bool looks_like_path(const char *a)
{
    return strchr(a, '/') || strstr(a, ".yaml") || strstr(a, ".yml") || strstr(a, ".json");
}

/* The catalog's names close to arg (pp_did_you_mean). */
static void catalog_near(const pp_catalog *cat, const char *arg, bool gpu, char *buf, size_t n)
{
    int k = gpu ? cat->n_gpus : cat->n_models;
    const char **names = calloc((size_t)(k > 0 ? k : 1), sizeof *names);
    buf[0] = 0;
    if (!names) return;
    for (int i = 0; i < k; i++) names[i] = gpu ? cat->gpus[i].name : cat->models[i].name;
    pp_did_you_mean(arg, names, k, buf, n);
    free(names);
}

pp_status pp_model_resolve(pp_model *m, const pp_catalog *cat, const char *arg, pp_error *err)
{
    if (!arg || !arg[0]) return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--model needs a name or a file");
    const pp_model *c = pp_catalog_model(cat, arg);
    if (c) {
        *m = *c;
        return PP_OK;
    }
    if (is_file(arg)) return pp_model_load_file(m, arg, err);
    char org[256], name[256], rev[256];
    if (pp_hub_id_parse(arg, org, name, rev, sizeof org)) {
        /* ORG/NAME[@REV]: the config.json the local Hugging Face cache holds (hub.c) */
        char path[2048];
        pp_status st = pp_hub_find(arg, path, sizeof path, err);
        if (st == PP_OK) st = pp_model_load_file(m, path, err);
        if (st == PP_OK) snprintf(m->name, sizeof m->name, "%.*s", (int)sizeof m->name - 1, name);
        return st;
    }
    if (looks_like_path(arg)) return pp_model_load_file(m, arg, err);
    char near[256];
    catalog_near(cat, arg, false, near, sizeof near);
    return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "unknown model '%s'%s%s%s (see parplan models)", arg,
                        near[0] ? ": did you mean " : "", near, near[0] ? "?" : "");
}

pp_status pp_gpu_resolve(pp_gpu *g, const pp_catalog *cat, const char *arg, pp_error *err)
{
    if (!arg || !arg[0]) return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--gpu needs a name or a file");
    const pp_gpu *c = pp_catalog_gpu(cat, arg);
    if (c) {
        *g = *c;
        return PP_OK;
    }
    if (is_file(arg) || looks_like_path(arg)) return pp_gpu_load_file(g, arg, err);
    char near[256];
    catalog_near(cat, arg, true, near, sizeof near);
    return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "unknown GPU '%s'%s%s%s (see parplan models)", arg,
                        near[0] ? ": did you mean " : "", near, near[0] ? "?" : "");
}
