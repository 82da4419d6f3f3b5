/* Build a pp_work from the catalog (models.d) for the stage tests. */
#ifndef PP_TEST_STAGES_WORK_H
#define PP_TEST_STAGES_WORK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp.h"
#include "pp_load.h"

static pp_catalog work_cat;
static bool work_cat_loaded;

static inline bool work_catalog(void)
{
    if (work_cat_loaded) return true;
    char dir[512];
    pp_error err = {0};
    if (pp_catalog_find_dir(NULL, dir, sizeof dir, &err) != PP_OK ||
        pp_catalog_load(&work_cat, dir, &err) != PP_OK) {
        char msg[1100];
        pp_error_format(&err, msg, sizeof msg);
        printf("# catalog: %s\n", msg);
        return false;
    }
    work_cat_loaded = true;
    return true;
}

/* model/gpu from the catalog; layers/vocab/seq overridden when > 0. Returns false (and prints
 * why) on failure. */
static inline bool work_make(pp_work *w, const char *model, const char *gpu, int64_t gpus,
                             int64_t gbs, int64_t layers, int64_t vocab, int64_t seq)
{
    memset(w, 0, sizeof *w);
    if (!work_catalog()) return false;
    const pp_model *m = pp_catalog_model(&work_cat, model);
    const pp_gpu *g = pp_catalog_gpu(&work_cat, gpu);
    if (!m || !g) {
        printf("# no model '%s' or gpu '%s' in the catalog\n", model, gpu);
        return false;
    }
    w->model = *m;
    if (layers > 0) w->model.layers = layers;
    if (vocab > 0) w->model.vocab = vocab;
    if (seq > 0) w->model.seq = seq;
    pp_error err = {0};
    if (pp_model_validate(&w->model, &err) != PP_OK) {
        printf("# model: %s\n", err.msg);
        return false;
    }
    w->gpu = *g;
    w->gpus = gpus;
    w->gpus_per_node = g->gpus_per_node > 0 ? g->gpus_per_node : 8;
    if (w->gpus < w->gpus_per_node) w->gpus_per_node = w->gpus;
    w->gbs = gbs;
    w->framework = PP_FW_MEGATRON;
    w->attention = PP_ATTN_FLASH;
    return true;
}

static inline bool layout_make(const pp_work *w, pp_layout *l, int64_t tp, int64_t pp, int64_t vpp,
                               int64_t mbs, pp_recompute rc, bool dist_opt, bool sp, int zero)
{
    pp_layout_init(l);
    l->tp = tp, l->pp = pp, l->vpp = vpp, l->mbs = mbs, l->recompute = rc;
    l->dist_opt = dist_opt, l->sp = sp, l->zero = zero;
    pp_error err = {0};
    if (pp_layout_validate(w, l, &err) != PP_OK) {
        printf("# layout: %s\n", err.msg);
        return false;
    }
    return true;
}

#endif
