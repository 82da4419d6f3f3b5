/* Recipes: a training stack as data (recipes.d/NAME.yaml, recipes.d/README.md lists the keys). A
 * recipe sets the framework and the stack fields that framework's defaults decide (implementation,
 * attention kernel, fusions, the loss, the allocator, compile, gradient and optimizer dtypes,
 * overlap, MoE dispatch), each with the source it was read from. The request applies it over
 * parplan's defaults; --megatron-args and the flags override it field by field, and the run says
 * where each field came from (pp_recipe_src). */
#ifndef PP_RECIPE_H
#define PP_RECIPE_H

#include "pp.h"

/* The fields a recipe can set, in the order they print; names as the YAML keys under `stack:`
 * (framework at the top level). */
typedef enum {
    PP_RF_FRAMEWORK = 0, PP_RF_IMPL, PP_RF_ATTENTION, PP_RF_PRECISION, PP_RF_BIAS_ACT_FUSION,
    PP_RF_CE_FUSION, PP_RF_EXPANDABLE, PP_RF_COMPILE, PP_RF_GRAD_BF16, PP_RF_ATTN_MASK, PP_RF_OVERLAP,
    PP_RF_TP_COMM_OVERLAP, PP_RF_OPTIMIZER_DTYPE, PP_RF_OPTIMIZER_IMPL, PP_RF_DISPATCHER,
    PP_RF_GROUPED_GEMM, PP_RF_PARAM_DTYPE, PP_RF_LOSS, PP_RF_FP8_PARAM_GATHER, PP_RF_MAIN_PARAMS_DTYPE,
    PP_RF_EXP_AVG_DTYPE, PP_RF_EXP_AVG_SQ_DTYPE, PP_RF_PRECISION_AWARE, PP_RF_DIST_FUSED_ADAM, PP_RF_CUDA_GRAPHS, PP_RF_SDPA_BACKEND,
    PP_RF_FLEX_BACKEND, PP_RF_VOCAB_DIVISIBLE_BY, PP_RF_NO_SYNC_ACCUM, PP_RF_FP8_SCALING, PP_RF_EAGER_NORM, PP_RF_TE_ATTENTION,
    PP_RF_TP_VOCAB, PP_RF_KEEP_LOGITS, PP_RF_COMPILE_LOSS, PP_RF_ROUTER_HOLDS_RECOMPUTE, PP_RF_EXPERT_PAD_LOOP,
    PP_RF_REPEAT_KV, PP_RF_COUNT
} pp_recipe_field;
extern const char *const pp_recipe_field_names[PP_RF_COUNT];

/* Where a field's value came from. */
typedef enum { PP_SRC_DEFAULT = 0, PP_SRC_RECIPE, PP_SRC_MARGS, PP_SRC_FLAG, PP_SRC_COUNT } pp_recipe_src;
extern const char *const pp_recipe_src_names[PP_SRC_COUNT]; /* "default", "recipe", "megatron-args", "flag" */

typedef struct {
    char name[64];
    char path[512];          /* the file it was read from */
    char source[1024];       /* the framework's code or docs the fields come from */
    char release[256];       /* the release or commit */
    char checked_by[512];    /* the run (and test) that checks it */
    pp_framework framework;
    pp_attention attention;
    pp_stack stack;          /* pp_stack_init's, with the recipe's fields set */
    uint64_t set;            /* bit (UINT64_C(1) << pp_recipe_field) per field the file sets */
} pp_recipe;

/* One recipe file (path is used in messages); unknown keys, wrong types and values are
 * PP_ERR_INPUT with file:line:col. */
pp_status pp_recipe_load_string(pp_recipe *r, const char *text, size_t len, const char *path, pp_error *err);
pp_status pp_recipe_load_file(pp_recipe *r, const char *path, pp_error *err);
/* The recipes directory: $PARPLAN_RECIPES_DIR, else recipes.d beside the models.d catalog
 * directory models_dir. PP_ERR_INPUT when there is none. */
pp_status pp_recipe_find_dir(const char *models_dir, char *out, size_t n, pp_error *err);
/* --recipe NAME|FILE: a file path when it names a readable file (or ends in .yaml), else
 * DIR/NAME.yaml in the recipes directory beside models_dir. */
pp_status pp_recipe_resolve(pp_recipe *r, const char *models_dir, const char *arg, pp_error *err);
/* The recipe names in the directory beside models_dir, sorted (free() each and the array). */
pp_status pp_recipe_list(const char *models_dir, char ***names, int *count, pp_error *err);

/* Apply the recipe's fields over w (framework, attention, stack): those it sets. */
void pp_recipe_apply(const pp_recipe *r, pp_work *w);
/* A field's value in w as text ("te", "true", "native", ...), into buf. */
const char *pp_recipe_field_value(const pp_work *w, pp_recipe_field f, char *buf, size_t n);

#endif
