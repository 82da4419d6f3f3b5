/* Recipes (pp_recipe.h): recipes.d/NAME.yaml through libyaml's document API and key tables, as the
 * model and GPU files are read (loader.c): unknown keys, wrong types and values are errors at their
 * file:line:col. */
#include "pp_recipe.h"

#include <dirent.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pp_yaml.h"

const char *const pp_recipe_field_names[PP_RF_COUNT] = {
    "framework", "impl", "attention", "precision", "bias_act_fusion", "cross_entropy_fusion",
    "expandable_segments", "compile", "grad_reduce_bf16", "dataloader_attention_mask", "overlap",
    "tp_comm_overlap", "optimizer_dtype", "optimizer_impl", "moe_dispatcher", "moe_grouped_gemm",
    "param_dtype", "loss", "fp8_param_gather", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype",
    "precision_aware_optimizer", "distributed_fused_adam", "cuda_graphs", "sdpa_backend", "moe_flex_backend",
    "vocab_divisible_by", "no_sync_accumulation", "fp8_scaling", "eager_norm", "te_attention",
    "tp_vocab", "keep_logits", "compile_loss", "router_holds_recompute", "expert_pad_loop",
    "repeat_kv",
};
const char *const pp_recipe_src_names[PP_SRC_COUNT] = {"default", "recipe", "megatron-args", "flag"};

static const char *const dtype_names[] = {"fp32", "bf16"};
/* the torch losses, pp_loss from PP_LOSS_TORCH on */
static const char *const torch_loss_names[] = {"upcast", "bf16", "cut"};

/* The file's values, before they are put into the stack. */
typedef struct {
    char name[64], source[1024], release[256], checked_by[512];
    int framework;
    int impl, attention, precision, ce_fusion, optimizer_dtype, optimizer_impl, dispatcher, param_dtype, loss;
    int main_params_dtype, exp_avg_dtype, exp_avg_sq_dtype;
    bool fp8_param_gather, precision_aware, dist_fused_adam;
    char cuda_graphs[128];
    int sdpa_backend, flex_backend, fp8_scaling, eager_norm, te_attention, tp_vocab;
    int64_t vocab_divisible_by;
    bool no_sync_accum;
    bool keep_logits;
    bool compile_loss;
    bool repeat_kv;
    bool router_holds_recompute;
    bool expert_pad_loop;
    bool bias_act_fusion, expandable, compile, grad_bf16, mask, overlap, tp_comm_overlap, grouped_gemm;
} recipe_file;

static const pp_key top_keys[] = {
    PP_KSTR(recipe_file, "name", name, true),
    PP_KENUM(recipe_file, "framework", framework, pp_framework_names, PP_FW_COUNT, true),
    PP_KSTR(recipe_file, "source", source, true),
    PP_KSTR(recipe_file, "release", release, false),
    PP_KSTR(recipe_file, "checked_by", checked_by, false),
    {"stack", PP_KEY_ANY, 0, 0, 0, 0, 0, NULL, 0, false, NULL, 0, 0},
};
#define N_TOP ((int)(sizeof top_keys / sizeof top_keys[0]))

/* In pp_recipe_field order from PP_RF_IMPL on: row i sets field i + 1. */
static const pp_key stack_keys[] = {
    PP_KENUM(recipe_file, "impl", impl, pp_impl_names, PP_IMPL_COUNT, false),
    PP_KENUM(recipe_file, "attention", attention, pp_attention_names, PP_ATTN_COUNT, false),
    PP_KENUM(recipe_file, "precision", precision, pp_precision_names, PP_PREC_COUNT, false),
    PP_KBOOL(recipe_file, "bias_act_fusion", bias_act_fusion, false),
    PP_KENUM(recipe_file, "cross_entropy_fusion", ce_fusion, pp_ce_fusion_names, PP_CE_COUNT, false),
    PP_KBOOL(recipe_file, "expandable_segments", expandable, false),
    PP_KBOOL(recipe_file, "compile", compile, false),
    PP_KBOOL(recipe_file, "grad_reduce_bf16", grad_bf16, false),
    PP_KBOOL(recipe_file, "dataloader_attention_mask", mask, false),
    PP_KBOOL(recipe_file, "overlap", overlap, false),
    PP_KBOOL(recipe_file, "tp_comm_overlap", tp_comm_overlap, false),
    PP_KENUM(recipe_file, "optimizer_dtype", optimizer_dtype, dtype_names, 2, false),
    PP_KENUM(recipe_file, "optimizer_impl", optimizer_impl, pp_adam_impl_names, PP_ADAM_COUNT, false),
    PP_KENUM(recipe_file, "moe_dispatcher", dispatcher, pp_dispatch_names, PP_DISPATCH_COUNT, false),
    PP_KBOOL(recipe_file, "moe_grouped_gemm", grouped_gemm, false),
    PP_KENUM(recipe_file, "param_dtype", param_dtype, dtype_names, 2, false),
    PP_KENUM(recipe_file, "loss", loss, torch_loss_names, 3, false),
    PP_KBOOL(recipe_file, "fp8_param_gather", fp8_param_gather, false),
    PP_KENUM(recipe_file, "main_params_dtype", main_params_dtype, pp_opt_dtype_names, 2, false),
    PP_KENUM(recipe_file, "exp_avg_dtype", exp_avg_dtype, pp_opt_dtype_names, PP_OPT_DTYPE_COUNT, false),
    PP_KENUM(recipe_file, "exp_avg_sq_dtype", exp_avg_sq_dtype, pp_opt_dtype_names, PP_OPT_DTYPE_COUNT, false),
    PP_KBOOL(recipe_file, "precision_aware_optimizer", precision_aware, false),
    PP_KBOOL(recipe_file, "distributed_fused_adam", dist_fused_adam, false),
    PP_KSTR(recipe_file, "cuda_graphs", cuda_graphs, false),
    PP_KENUM(recipe_file, "sdpa_backend", sdpa_backend, pp_sdpa_backend_names, PP_SDPA_COUNT, false),
    PP_KENUM(recipe_file, "moe_flex_backend", flex_backend, pp_flex_backend_names, PP_FLEX_COUNT, false),
    {"vocab_divisible_by", PP_KEY_INT, offsetof(recipe_file, vocab_divisible_by), 1, 1000000, 0, 0, NULL, 0, false,
     NULL, 0, 0},
    PP_KBOOL(recipe_file, "no_sync_accumulation", no_sync_accum, false),
    PP_KENUM(recipe_file, "fp8_scaling", fp8_scaling, pp_fp8_scaling_names, PP_FP8_SCALING_COUNT, false),
    PP_KENUM(recipe_file, "eager_norm", eager_norm, pp_eager_norm_names, PP_ENORM_COUNT, false),
    PP_KENUM(recipe_file, "te_attention", te_attention, pp_te_attention_names, PP_TEATTN_COUNT, false),
    PP_KENUM(recipe_file, "tp_vocab", tp_vocab, pp_tp_vocab_names, PP_TPV_COUNT, false),
    PP_KBOOL(recipe_file, "keep_logits", keep_logits, false),
    PP_KBOOL(recipe_file, "compile_loss", compile_loss, false),
    PP_KBOOL(recipe_file, "router_holds_recompute", router_holds_recompute, false),
    PP_KBOOL(recipe_file, "expert_pad_loop", expert_pad_loop, false),
    PP_KBOOL(recipe_file, "repeat_kv", repeat_kv, false), /* in pp_recipe_field's order: field i + 1 */
};
#define N_STACK ((int)(sizeof stack_keys / sizeof stack_keys[0]))
_Static_assert(N_STACK == PP_RF_COUNT - 1, "one stack key per recipe field after framework");

/* What a field means for a framework it does not belong to: a recipe that sets it is wrong. */
static const char *field_misfit(pp_recipe_field f, pp_framework fw)
{
    switch (f) {
    case PP_RF_IMPL: case PP_RF_BIAS_ACT_FUSION: case PP_RF_CE_FUSION: case PP_RF_GRAD_BF16:
    case PP_RF_ATTN_MASK: case PP_RF_OPTIMIZER_DTYPE: case PP_RF_FP8_PARAM_GATHER: case PP_RF_MAIN_PARAMS_DTYPE:
    case PP_RF_EXP_AVG_DTYPE: case PP_RF_EXP_AVG_SQ_DTYPE: case PP_RF_PRECISION_AWARE: case PP_RF_DIST_FUSED_ADAM:
    case PP_RF_CUDA_GRAPHS: case PP_RF_VOCAB_DIVISIBLE_BY: case PP_RF_TE_ATTENTION:
        return fw != PP_FW_MEGATRON ? "a Megatron field (framework: megatron)" : NULL;
    case PP_RF_COMPILE: case PP_RF_OPTIMIZER_IMPL: case PP_RF_PARAM_DTYPE: case PP_RF_LOSS: case PP_RF_SDPA_BACKEND:
    case PP_RF_NO_SYNC_ACCUM: case PP_RF_FP8_SCALING: case PP_RF_EAGER_NORM: case PP_RF_TP_VOCAB:
    case PP_RF_KEEP_LOGITS: case PP_RF_COMPILE_LOSS: case PP_RF_ROUTER_HOLDS_RECOMPUTE: case PP_RF_EXPERT_PAD_LOOP:
    case PP_RF_REPEAT_KV:
        return fw != PP_FW_FSDP ? "a PyTorch FSDP2 field (framework: fsdp)" : NULL;
    default:
        return NULL;
    }
}

pp_status pp_recipe_load_string(pp_recipe *r, const char *text, size_t len, const char *path, pp_error *err)
{
    memset(r, 0, sizeof *r);
    pp_stack_init(&r->stack);
    recipe_file f;
    memset(&f, 0, sizeof f);
    pp_yaml y;
    pp_status st = pp_yaml_load(&y, text, len, path, err);
    if (st) return st;
    yaml_node_t *root = pp_yaml_root(&y);
    yaml_node_t *found[N_TOP], *sfound[N_STACK];
    memset(sfound, 0, sizeof sfound);
    if ((st = pp_yaml_map(&y, root, top_keys, N_TOP, &f, 0, found, "recipe"))) goto done;
    yaml_node_t *stack = found[N_TOP - 1];
    if (stack) {
        if (stack->type != YAML_MAPPING_NODE) {
            st = pp_yaml_error(&y, stack, "recipe: 'stack' is %s, expected a mapping", pp_yaml_node_kind(stack));
            goto done;
        }
        if ((st = pp_yaml_map(&y, stack, stack_keys, N_STACK, &f, 0, sfound, "recipe stack"))) goto done;
    }
    /* the name is what --recipe NAME finds the file by: NAME.yaml */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t bl = strlen(base);
    if (bl > 5 && !strcmp(base + bl - 5, ".yaml") && (bl - 5 != strlen(f.name) || strncmp(base, f.name, bl - 5))) {
        st = pp_yaml_error(&y, pp_yaml_lookup(&y, root, "name", false), "recipe: name '%s' is not the file's (%s)",
                           f.name, base);
        goto done;
    }
    snprintf(r->name, sizeof r->name, "%s", f.name);
    snprintf(r->path, sizeof r->path, "%s", path);
    snprintf(r->source, sizeof r->source, "%s", f.source);
    snprintf(r->release, sizeof r->release, "%s", f.release);
    snprintf(r->checked_by, sizeof r->checked_by, "%s", f.checked_by);
    r->framework = (pp_framework)f.framework;
    r->set = UINT64_C(1) << PP_RF_FRAMEWORK;
    for (int i = 0; i < N_STACK; i++) {
        if (!sfound[i]) continue;
        pp_recipe_field fld = (pp_recipe_field)(i + 1);
        const char *why = field_misfit(fld, r->framework);
        if (why) {
            st = pp_yaml_error(&y, pp_yaml_lookup(&y, stack, pp_recipe_field_names[fld], true),
                               "recipe: '%s' is %s, not %s's", pp_recipe_field_names[fld], why,
                               pp_framework_names[r->framework]);
            goto done;
        }
        r->set |= UINT64_C(1) << fld;
    }
    pp_stack *s = &r->stack;
    r->attention = (pp_attention)f.attention;
    s->impl = (pp_impl)f.impl;
    s->impl_given = (r->set >> PP_RF_IMPL) & 1;
    s->precision = (pp_precision)f.precision;
    s->act_unfused = !f.bias_act_fusion;
    s->ce_fusion = (pp_ce_fusion)f.ce_fusion;
    s->expandable_segments = f.expandable;
    s->compile = f.compile;
    s->grad_bf16 = f.grad_bf16;
    s->no_attention_mask = !f.mask;
    s->no_overlap = !f.overlap;
    s->tp_comm_overlap = f.tp_comm_overlap;
    s->optimizer_bf16 = f.optimizer_dtype == 1;
    s->optimizer_impl = (pp_adam_impl)f.optimizer_impl;
    s->dispatcher = (pp_dispatch)f.dispatcher;
    s->grouped_gemm = f.grouped_gemm;
    s->param_bf16 = f.param_dtype == 1;
    s->fp8_param_gather = f.fp8_param_gather;
    s->main_params_dtype = (pp_opt_dtype)f.main_params_dtype;
    s->precision_aware_opt = f.precision_aware;
    s->dist_fused_adam = f.dist_fused_adam;
    s->exp_avg_dtype = (pp_opt_dtype)f.exp_avg_dtype;
    s->exp_avg_sq_dtype = (pp_opt_dtype)f.exp_avg_sq_dtype;
    s->loss = (r->set >> PP_RF_LOSS) & 1u ? PP_LOSS_TORCH + f.loss : -1;
    s->sdpa_backend = (pp_sdpa_backend)f.sdpa_backend;
    s->flex_backend = (pp_flex_backend)f.flex_backend;
    s->vocab_divisible_by = f.vocab_divisible_by;
    s->no_sync_accum = f.no_sync_accum;
    s->keep_logits = f.keep_logits;
    s->compile_loss = f.compile_loss;
    s->repeat_kv = f.repeat_kv;
    s->router_holds_recompute = f.router_holds_recompute;
    s->expert_pad_loop = f.expert_pad_loop;
    s->fp8_scaling = (pp_fp8_scaling)f.fp8_scaling;
    s->eager_norm = (pp_eager_norm)f.eager_norm;
    s->te_attention = (pp_te_attention)f.te_attention;
    s->tp_vocab = (pp_tp_vocab)f.tp_vocab;
    if ((r->set >> PP_RF_CUDA_GRAPHS) & 1u) {
        char why[160];
        if (pp_cuda_graphs_parse(f.cuda_graphs, &s->cuda_graphs, why, sizeof why) != PP_OK) {
            st = pp_yaml_error(&y, pp_yaml_lookup(&y, stack, "cuda_graphs", true), "recipe: cuda_graphs: %s", why);
            goto done;
        }
    }
done:
    pp_yaml_free(&y);
    return st;
}

pp_status pp_recipe_load_file(pp_recipe *r, const char *path, pp_error *err)
{
    char *text;
    size_t len;
    memset(r, 0, sizeof *r);
    pp_status st = pp_yaml_read_file(path, &text, &len, err);
    if (st) return st;
    st = pp_recipe_load_string(r, text, len, path, err);
    free(text);
    return st;
}

static bool is_dir(const char *p)
{
    struct stat sb;
    return p && stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

pp_status pp_recipe_find_dir(const char *models_dir, char *out, size_t n, pp_error *err)
{
    const char *env = getenv("PARPLAN_RECIPES_DIR");
    if (env && env[0]) {
        if (!is_dir(env))
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "PARPLAN_RECIPES_DIR is not a directory: %s", env);
        snprintf(out, n, "%s", env);
        return PP_OK;
    }
    /* beside the models.d directory: the source tree's and the installed datadir's layout */
    char p[PATH_MAX + 32], real[PATH_MAX];
    snprintf(p, sizeof p, "%s/../recipes.d", models_dir ? models_dir : ".");
    if (!is_dir(p))
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "no recipes.d beside the catalog %s (set PARPLAN_RECIPES_DIR, or give --recipe FILE)",
                            models_dir ? models_dir : "(none)");
    snprintf(out, n, "%s", realpath(p, real) ? real : p);
    return PP_OK;
}

pp_status pp_recipe_resolve(pp_recipe *r, const char *models_dir, const char *arg, pp_error *err)
{
    size_t n = strlen(arg);
    if (strchr(arg, '/') || (n > 5 && !strcmp(arg + n - 5, ".yaml")) || access(arg, R_OK) == 0)
        return pp_recipe_load_file(r, arg, err);
    char dir[PATH_MAX], path[PATH_MAX + 80];
    pp_status st = pp_recipe_find_dir(models_dir, dir, sizeof dir, err);
    if (st) return st;
    snprintf(path, sizeof path, "%s/%s.yaml", dir, arg);
    if (access(path, R_OK) != 0) {
        char **names = NULL;
        int count = 0;
        char list[512] = "";
        if (pp_recipe_list(models_dir, &names, &count, err) == PP_OK) {
            size_t k = 0;
            for (int i = 0; i < count; i++) {
                if (k < sizeof list) k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", names[i]);
                free(names[i]);
            }
            free(names);
        }
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--recipe %s: no such recipe (recipes: %s; or a FILE)", arg,
                            list[0] ? list : "none");
    }
    return pp_recipe_load_file(r, path, err);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

pp_status pp_recipe_list(const char *models_dir, char ***names, int *count, pp_error *err)
{
    *names = NULL;
    *count = 0;
    char dir[PATH_MAX];
    pp_status st = pp_recipe_find_dir(models_dir, dir, sizeof dir, err);
    if (st) return st;
    DIR *d = opendir(dir);
    if (!d) return pp_error_set(err, PP_ERR_RUNTIME, dir, 0, 0, "cannot read the recipes directory");
    char **v = NULL;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".yaml") || e->d_name[0] == '.') continue;
        char **nv = realloc(v, (size_t)(n + 1) * sizeof *v);
        char *s = strndup(e->d_name, l - 5);
        if (!nv || !s) {
            free(nv ? nv : v);
            free(s);
            closedir(d);
            return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        }
        v = nv;
        v[n++] = s;
    }
    closedir(d);
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    *names = v;
    *count = n;
    return PP_OK;
}

void pp_recipe_apply(const pp_recipe *r, pp_work *w)
{
    const pp_stack *rs = &r->stack;
    pp_stack *s = &w->stack;
#define SET(f) ((r->set >> (f)) & 1u)
    if (SET(PP_RF_FRAMEWORK)) w->framework = r->framework;
    if (SET(PP_RF_ATTENTION)) w->attention = r->attention;
    if (SET(PP_RF_IMPL)) s->impl = rs->impl, s->impl_given = true;
    if (SET(PP_RF_PRECISION)) s->precision = rs->precision;
    if (SET(PP_RF_BIAS_ACT_FUSION)) s->act_unfused = rs->act_unfused;
    if (SET(PP_RF_CE_FUSION)) s->ce_fusion = rs->ce_fusion;
    if (SET(PP_RF_EXPANDABLE)) s->expandable_segments = rs->expandable_segments;
    if (SET(PP_RF_COMPILE)) s->compile = rs->compile;
    if (SET(PP_RF_GRAD_BF16)) s->grad_bf16 = rs->grad_bf16;
    if (SET(PP_RF_ATTN_MASK)) s->no_attention_mask = rs->no_attention_mask;
    if (SET(PP_RF_OVERLAP)) s->no_overlap = rs->no_overlap;
    if (SET(PP_RF_TP_COMM_OVERLAP)) s->tp_comm_overlap = rs->tp_comm_overlap;
    if (SET(PP_RF_OPTIMIZER_DTYPE)) s->optimizer_bf16 = rs->optimizer_bf16;
    if (SET(PP_RF_OPTIMIZER_IMPL)) s->optimizer_impl = rs->optimizer_impl;
    if (SET(PP_RF_DISPATCHER)) s->dispatcher = rs->dispatcher;
    if (SET(PP_RF_GROUPED_GEMM)) s->grouped_gemm = rs->grouped_gemm;
    if (SET(PP_RF_PARAM_DTYPE)) s->param_bf16 = rs->param_bf16;
    if (SET(PP_RF_LOSS)) s->loss = rs->loss;
    if (SET(PP_RF_FP8_PARAM_GATHER)) s->fp8_param_gather = rs->fp8_param_gather;
    if (SET(PP_RF_MAIN_PARAMS_DTYPE)) s->main_params_dtype = rs->main_params_dtype;
    if (SET(PP_RF_EXP_AVG_DTYPE)) s->exp_avg_dtype = rs->exp_avg_dtype;
    if (SET(PP_RF_EXP_AVG_SQ_DTYPE)) s->exp_avg_sq_dtype = rs->exp_avg_sq_dtype;
    if (SET(PP_RF_PRECISION_AWARE)) s->precision_aware_opt = rs->precision_aware_opt;
    if (SET(PP_RF_DIST_FUSED_ADAM)) s->dist_fused_adam = rs->dist_fused_adam;
    if (SET(PP_RF_CUDA_GRAPHS)) s->cuda_graphs = rs->cuda_graphs;
    if (SET(PP_RF_SDPA_BACKEND)) s->sdpa_backend = rs->sdpa_backend;
    if (SET(PP_RF_FLEX_BACKEND)) s->flex_backend = rs->flex_backend;
    if (SET(PP_RF_VOCAB_DIVISIBLE_BY)) s->vocab_divisible_by = rs->vocab_divisible_by;
    if (SET(PP_RF_NO_SYNC_ACCUM)) s->no_sync_accum = rs->no_sync_accum;
    if (SET(PP_RF_KEEP_LOGITS)) s->keep_logits = rs->keep_logits;
    if (SET(PP_RF_COMPILE_LOSS)) s->compile_loss = rs->compile_loss;
    if (SET(PP_RF_REPEAT_KV)) s->repeat_kv = rs->repeat_kv;
    if (SET(PP_RF_ROUTER_HOLDS_RECOMPUTE)) s->router_holds_recompute = rs->router_holds_recompute;
    if (SET(PP_RF_EXPERT_PAD_LOOP)) s->expert_pad_loop = rs->expert_pad_loop;
    if (SET(PP_RF_FP8_SCALING)) s->fp8_scaling = rs->fp8_scaling;
    if (SET(PP_RF_EAGER_NORM)) s->eager_norm = rs->eager_norm;
    if (SET(PP_RF_TE_ATTENTION)) s->te_attention = rs->te_attention;
    if (SET(PP_RF_TP_VOCAB)) s->tp_vocab = rs->tp_vocab;
#undef SET
}

const char *pp_recipe_field_value(const pp_work *w, pp_recipe_field f, char *buf, size_t n)
{
    const pp_stack *s = &w->stack;
    const char *v = "";
    switch (f) {
    case PP_RF_FRAMEWORK: v = pp_framework_names[w->framework]; break;
    case PP_RF_IMPL: v = w->framework == PP_FW_MEGATRON ? pp_impl_names[pp_work_impl(w)] : "-"; break;
    case PP_RF_ATTENTION: v = pp_attention_names[w->attention]; break;
    case PP_RF_PRECISION: v = pp_precision_names[s->precision]; break;
    case PP_RF_BIAS_ACT_FUSION: v = w->framework != PP_FW_MEGATRON ? "-" : s->act_unfused ? "false" : "true"; break;
    case PP_RF_CE_FUSION: v = w->framework == PP_FW_MEGATRON ? pp_ce_fusion_names[s->ce_fusion] : "-"; break;
    case PP_RF_EXPANDABLE: v = s->expandable_segments ? "true" : "false"; break;
    case PP_RF_COMPILE: v = w->framework == PP_FW_FSDP ? (s->compile ? "true" : "false") : "-"; break;
    case PP_RF_GRAD_BF16: v = w->framework == PP_FW_MEGATRON ? (s->grad_bf16 ? "true" : "false") : "-"; break;
    case PP_RF_ATTN_MASK: v = w->framework == PP_FW_MEGATRON ? (s->no_attention_mask ? "false" : "true") : "-"; break;
    case PP_RF_OVERLAP: v = s->no_overlap ? "false" : "true"; break;
    case PP_RF_TP_COMM_OVERLAP:
        v = w->framework == PP_FW_DEEPSPEED ? "-" : s->tp_comm_overlap ? "true" : "false";
        break;
    case PP_RF_OPTIMIZER_DTYPE: v = w->framework != PP_FW_MEGATRON ? "-" : s->optimizer_bf16 ? "bf16" : "fp32"; break;
    case PP_RF_OPTIMIZER_IMPL: v = w->framework == PP_FW_FSDP ? pp_adam_impl_names[s->optimizer_impl] : "-"; break;
    case PP_RF_DISPATCHER: v = pp_model_is_moe(&w->model) ? pp_dispatch_names[s->dispatcher] : "-"; break;
    case PP_RF_GROUPED_GEMM: v = pp_model_is_moe(&w->model) ? (s->grouped_gemm ? "true" : "false") : "-"; break;
    case PP_RF_PARAM_DTYPE: v = w->framework == PP_FW_FSDP ? (s->param_bf16 ? "bf16" : "fp32") : "-"; break;
    case PP_RF_LOSS: v = w->framework == PP_FW_FSDP ? pp_loss_names[pp_work_loss(w)] : "-"; break;
    case PP_RF_FP8_PARAM_GATHER: v = w->framework == PP_FW_MEGATRON ? (s->fp8_param_gather ? "true" : "false") : "-"; break;
    case PP_RF_MAIN_PARAMS_DTYPE: v = w->framework == PP_FW_MEGATRON ? pp_opt_dtype_names[s->main_params_dtype] : "-"; break;
    case PP_RF_EXP_AVG_DTYPE: v = w->framework == PP_FW_MEGATRON ? pp_opt_dtype_names[s->exp_avg_dtype] : "-"; break;
    case PP_RF_EXP_AVG_SQ_DTYPE: v = w->framework == PP_FW_MEGATRON ? pp_opt_dtype_names[s->exp_avg_sq_dtype] : "-"; break;
    case PP_RF_PRECISION_AWARE: v = w->framework == PP_FW_MEGATRON ? (pp_work_precision_aware(w) ? "true" : "false") : "-"; break;
    case PP_RF_DIST_FUSED_ADAM: v = w->framework == PP_FW_MEGATRON ? (pp_work_dist_fused_adam(w) ? "true" : "false") : "-"; break;
    case PP_RF_SDPA_BACKEND: v = w->framework == PP_FW_FSDP ? pp_sdpa_backend_names[s->sdpa_backend] : "-"; break;
    case PP_RF_NO_SYNC_ACCUM: v = w->framework == PP_FW_FSDP ? (s->no_sync_accum ? "true" : "false") : "-"; break;
    case PP_RF_KEEP_LOGITS: v = w->framework == PP_FW_FSDP ? (s->keep_logits ? "true" : "false") : "-"; break;
    case PP_RF_COMPILE_LOSS: v = w->framework == PP_FW_FSDP ? (s->compile_loss ? "true" : "false") : "-"; break;
    case PP_RF_REPEAT_KV: v = w->framework == PP_FW_FSDP ? (s->repeat_kv ? "true" : "false") : "-"; break;
    case PP_RF_ROUTER_HOLDS_RECOMPUTE:
        v = w->framework == PP_FW_FSDP ? (s->router_holds_recompute ? "true" : "false") : "-";
        break;
    case PP_RF_EXPERT_PAD_LOOP: v = w->framework == PP_FW_FSDP ? (s->expert_pad_loop ? "true" : "false") : "-"; break;
    case PP_RF_FP8_SCALING:
        v = w->framework == PP_FW_FSDP && s->precision == PP_PREC_FP8 ? pp_fp8_scaling_names[s->fp8_scaling] : "-";
        break;
    case PP_RF_TE_ATTENTION:
        v = w->framework == PP_FW_MEGATRON && pp_work_te(w) ? pp_te_attention_names[s->te_attention] : "-";
        break;
    case PP_RF_EAGER_NORM:
        v = w->framework == PP_FW_FSDP && !s->compile ? pp_eager_norm_names[s->eager_norm] : "-";
        break;
    case PP_RF_TP_VOCAB: v = w->framework == PP_FW_FSDP ? pp_tp_vocab_names[s->tp_vocab] : "-"; break;
    case PP_RF_FLEX_BACKEND:
        v = pp_model_is_moe(&w->model) && s->dispatcher == PP_DISPATCH_FLEX ? pp_flex_backend_names[s->flex_backend] : "-";
        break;
    case PP_RF_VOCAB_DIVISIBLE_BY:
        if (w->framework != PP_FW_MEGATRON) {
            v = "-";
            break;
        }
        snprintf(buf, n, "%lld", (long long)pp_work_vocab_divisible_by(w));
        return buf;
    case PP_RF_CUDA_GRAPHS:
        if (w->framework != PP_FW_MEGATRON) {
            v = "-";
            break;
        }
        pp_cuda_graphs_str(s->cuda_graphs, ",", buf, n);
        return buf;
    default: break;
    }
    snprintf(buf, n, "%s", v);
    return buf;
}
