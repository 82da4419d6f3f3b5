/* Internal to the planner library (loader.c, profile.c): libyaml document loading with
 * bounded depth and key tables. Not part of the public API. */
#ifndef PP_YAML_H
#define PP_YAML_H

#include <yaml.h>

#include "pp.h"

/* Limits that keep every input cheap: no recursion beyond these, no huge allocations. */
#define PP_YAML_MAX_BYTES (16 * 1024 * 1024)
#define PP_YAML_MAX_DEPTH 16      /* nesting of mappings/sequences */
#define PP_YAML_MAX_NODES 2000000 /* events in one document */
#define PP_YAML_MAX_KEYS 160      /* rows of one key table */
#define PP_YAML_MAX_PAIRS 2000    /* keys in one mapping of a file */
#define PP_YAML_MAX_RECORDS 100000 /* entries of one record list (profiles) */

typedef enum {
    PP_KEY_INT,    /* int64_t; plain scalar; "1e9" accepted when integral */
    PP_KEY_NUM,    /* double (stored as value * scale); finite only */
    PP_KEY_BOOL,   /* bool; true|false (YAML 1.2 core spellings) */
    PP_KEY_STR,    /* char[size] */
    PP_KEY_ENUM,   /* int: index of the value in names[] */
    PP_KEY_MAP,    /* a nested mapping read with sub[] into the same object */
    PP_KEY_STRSEQ, /* a sequence of strings; the first is kept in char[size] */
    PP_KEY_ANY,    /* any value, ignored (documented free-form keys: notes, env) */
    PP_KEY_INTSEQ, /* a sequence of integers into int64_t[size], count into int64_t at off2 */
} pp_key_type;

typedef struct pp_key {
    const char *key;
    pp_key_type type;
    size_t off;                 /* offset of the field in the object */
    double min, max;            /* INT and NUM, in the file's units (before scale) */
    double scale;               /* NUM: stored = value * scale (0 means 1) */
    size_t size;                /* STR, STRSEQ: buffer size */
    const char *const *names;   /* ENUM */
    int n_names;
    bool required;
    const struct pp_key *sub;   /* MAP */
    int n_sub;
    size_t off2;                /* INTSEQ: offset of the int64_t element count */
} pp_key;

/* Key-table rows of a struct T's field f (pp_key's positional layout). */
#define PP_KSTR(T, k, f, req) {k, PP_KEY_STR, offsetof(T, f), 0, 0, 0, sizeof(((T *)0)->f), NULL, 0, req, NULL, 0, 0}
#define PP_KENUM(T, k, f, names, nn, req) {k, PP_KEY_ENUM, offsetof(T, f), 0, 0, 0, 0, names, nn, req, NULL, 0, 0}
#define PP_KBOOL(T, k, f, req) {k, PP_KEY_BOOL, offsetof(T, f), 0, 0, 0, 0, NULL, 0, req, NULL, 0, 0}

enum {
    PP_YAML_IGNORE_UNKNOWN = 1 << 0, /* HF config.json: unrelated keys abound */
    PP_YAML_NULL_ABSENT = 1 << 1,    /* a plain `null` value counts as absent (HF) */
};

typedef struct {
    yaml_document_t doc;
    bool loaded;
    const char *path;
    pp_error *err;
} pp_yaml;

/* Read a whole file (at most PP_YAML_MAX_BYTES); *text is NUL-terminated, free() it. */
pp_status pp_yaml_read_file(const char *path, char **text, size_t *len, pp_error *err);
/* Parse one document; the root must be a mapping. y->path is used in messages. */
pp_status pp_yaml_load(pp_yaml *y, const char *text, size_t len, const char *path, pp_error *err);
void pp_yaml_free(pp_yaml *y); /* accepts a never-loaded y */
yaml_node_t *pp_yaml_root(pp_yaml *y);
/* Error at node's start mark (1-based line:col). */
pp_status pp_yaml_error(pp_yaml *y, const yaml_node_t *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Read mapping `map` with the key table into obj. found (n entries, may be NULL) receives
 * the value node of each key given (NULL when absent), for later messages. */
pp_status pp_yaml_map(pp_yaml *y, yaml_node_t *map, const pp_key *tbl, int n, void *obj,
                      unsigned flags, yaml_node_t **found, const char *what);
/* A sequence of mappings into a calloc'ed array of elem_size records. */
pp_status pp_yaml_seq(pp_yaml *y, yaml_node_t *seq, const pp_key *tbl, int n, size_t elem_size,
                      void **arr, int *count, const char *what);
/* Strict scalar parsing (exposed for tests of the number rules). */
bool pp_yaml_parse_double(const char *s, double *out);
/* The value node of `key` in mapping `map` (or its key node when want_key: error positions of
 * checks made after loading point at the key); NULL when absent. */
yaml_node_t *pp_yaml_lookup(pp_yaml *y, yaml_node_t *map, const char *key, bool want_key);
const char *pp_yaml_node_kind(const yaml_node_t *n); /* "a scalar", "a sequence", "a mapping" */
bool pp_yaml_is_null(const yaml_node_t *n);          /* plain null, Null, NULL, ~ or empty */
const char *pp_yaml_scalar(const yaml_node_t *n);    /* a scalar's text; NULL for anything else */
/* File name without directory and extension(s): "x/llama2-7b.config.json" -> "llama2-7b". */
void pp_yaml_name_from_path(const char *path, char *out, size_t n);

/* Hugging Face config.json (hf_config.c): is root one (it has any of model_type,
 * architectures, hidden_size, ...: none of them is a key of our schema), and read it. */
bool pp_hf_is_config(pp_yaml *y, yaml_node_t *root);
pp_status pp_hf_model_load(pp_yaml *y, yaml_node_t *root, pp_model *m);

#endif
