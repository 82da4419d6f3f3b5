/* Loaders: models and GPUs from models.d YAML, Hugging Face config.json, profiles.
 * All YAML/JSON goes through libyaml's document API with key tables (loader.c);
 * unknown keys, wrong types and out-of-range values are PP_ERR_INPUT with file:line:col. */
#ifndef PP_LOAD_H
#define PP_LOAD_H

#include "pp.h"

/* The catalog: every YAML file in models.d/models and models.d/gpus. */
typedef struct {
    pp_model *models;
    int n_models;
    pp_gpu *gpus;
    int n_gpus;
    char dir[512];
} pp_catalog;

/* Find the models.d directory: $PARPLAN_MODELS_DIR, then next to the executable
 * (build tree: <exe>/../models.d or source dir), then the installed datadir.
 * argv0 may be NULL. Writes the path into out. */
pp_status pp_catalog_find_dir(const char *argv0, char *out, size_t n, pp_error *err);
pp_status pp_catalog_load(pp_catalog *cat, const char *dir, pp_error *err);
void pp_catalog_free(pp_catalog *cat); /* accepts NULL */
const pp_model *pp_catalog_model(const pp_catalog *cat, const char *name);
const pp_gpu *pp_catalog_gpu(const pp_catalog *cat, const char *name);

/* One model file: our YAML schema, or a Hugging Face config.json (detected by its keys). */
pp_status pp_model_load_file(pp_model *m, const char *path, pp_error *err);
/* The same from a string (path is used in messages only). */
pp_status pp_model_load_string(pp_model *m, const char *text, size_t len, const char *path,
                               pp_error *err);
pp_status pp_gpu_load_file(pp_gpu *g, const char *path, pp_error *err);
pp_status pp_gpu_load_string(pp_gpu *g, const char *text, size_t len, const char *path,
                             pp_error *err);
/* --model NAME|FILE: a catalog name, else a file path. */
pp_status pp_model_resolve(pp_model *m, const pp_catalog *cat, const char *arg, pp_error *err);

/* Hugging Face Hub ids (hub.c): ORG/NAME[@REV] (REV a branch, tag or commit; main by default)
 * split into its parts (each under n bytes); false when arg is not one (a path: ./x, x.json). */
bool pp_hub_id_parse(const char *arg, char *org, char *name, char *rev, size_t n);
/* The config.json of Hub id arg in the local Hugging Face cache, offline: PP_ERR_INPUT, naming
 * the caches searched and the command that fetches it, when it is not there. */
pp_status pp_hub_find(const char *arg, char *path, size_t n, pp_error *err);
pp_status pp_gpu_resolve(pp_gpu *g, const pp_catalog *cat, const char *arg, pp_error *err);

#endif
