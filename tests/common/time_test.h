/* Shared by the time and search tests: GPUs from the catalog, GPT shapes, a tiny CSV reader. */
#ifndef PP_TIME_TEST_H
#define PP_TIME_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp.h"
#include "pp_load.h"

/* The GPU constants come from the catalog (models.d/gpus/NAME.yaml), one set per GPU kind.
 * Returns 0 on success; prints why on failure. */
static inline int tt_gpu(const char *name, pp_gpu *g)
{
    pp_error err = {0};
    char dir[1024];
    pp_catalog cat = {0};
    int rc = 1;
    if (pp_catalog_find_dir(NULL, dir, sizeof dir, &err) != PP_OK ||
        pp_catalog_load(&cat, dir, &err) != PP_OK) {
        printf("# catalog: %s\n", err.msg);
        goto done;
    }
    const pp_gpu *cg = pp_catalog_gpu(&cat, name);
    if (!cg) {
        printf("# catalog %s has no GPU '%s'\n", dir, name);
        goto done;
    }
    *g = *cg;
    rc = 0;
done:
    pp_catalog_free(&cat);
    return rc;
}

/* A GPT (Megatron's GPT-3 shape: 4h GELU MLP, LayerNorm, learned positions, biases, tied). */
static inline int tt_gpt(pp_model *m, int64_t layers, int64_t hidden, int64_t heads, int64_t seq,
                         int64_t vocab)
{
    pp_model_init(m);
    snprintf(m->name, sizeof m->name, "gpt-L%lld-h%lld", (long long)layers, (long long)hidden);
    m->layers = layers;
    m->hidden = hidden;
    m->heads = heads;
    m->seq = seq;
    m->vocab = vocab;
    pp_error err = {0};
    if (pp_model_validate(m, &err) != PP_OK) {
        printf("# model: %s\n", err.msg);
        return 1;
    }
    return 0;
}

/* CSV with '#' comment lines and a header row. Values as strings; tt_csv_num by column name. */
#define TT_CSV_MAX_ROWS 64
#define TT_CSV_MAX_COLS 32
#define TT_CSV_CELL 96
typedef struct {
    int n_rows, n_cols;
    char head[TT_CSV_MAX_COLS][48];
    char cell[TT_CSV_MAX_ROWS][TT_CSV_MAX_COLS][TT_CSV_CELL];
} tt_csv;

/* A CSV by path. */
static inline int tt_csv_load_path(tt_csv *c, const char *path)
{
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("# cannot open %s\n", path);
        return 1;
    }
    char line[2048];
    bool header = true;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n' || line[0] == '\r') continue;
        line[strcspn(line, "\r\n")] = 0;
        int col = 0;
        char *p = line; /* strtok would skip empty fields: walk by hand */
        for (;;) {
            char *comma = strchr(p, ',');
            if (comma) *comma = 0;
            if (col < TT_CSV_MAX_COLS) {
                if (header) snprintf(c->head[col], sizeof c->head[col], "%.47s", p);
                else if (c->n_rows < TT_CSV_MAX_ROWS)
                    snprintf(c->cell[c->n_rows][col], sizeof c->cell[0][0], "%.95s", p);
            }
            col++;
            if (!comma) break;
            p = comma + 1;
        }
        if (header) {
            c->n_cols = col < TT_CSV_MAX_COLS ? col : TT_CSV_MAX_COLS;
            header = false;
        } else if (c->n_rows < TT_CSV_MAX_ROWS) {
            c->n_rows++;
        }
    }
    fclose(f);
    return 0;
}

/* A published table of tests/data/validation (PARPLAN_DATA_DIR). */
static inline int tt_csv_load(tt_csv *c, const char *name)
{
    const char *dir = getenv("PARPLAN_DATA_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/validation/%s", dir ? dir : "tests/data", name);
    return tt_csv_load_path(c, path);
}

static inline const char *tt_csv_str(const tt_csv *c, int row, const char *col)
{
    for (int i = 0; i < c->n_cols; i++)
        if (strcmp(c->head[i], col) == 0) return c->cell[row][i];
    printf("# no column %s\n", col);
    return "";
}
static inline double tt_csv_num(const tt_csv *c, int row, const char *col)
{
    const char *s = tt_csv_str(c, row, col);
    return *s ? atof(s) : 0.0;
}

#endif
