/* The measurement cache of `plan --probe` (issue 8): what the local GPUs measured, keyed by the
 * GPU (as the driver names it) and the shape, so that an interrupted plan resumes where it stopped
 * and a repeated plan reuses its measurements.
 *
 * One YAML file, $PARPLAN_CACHE, else $XDG_CACHE_HOME/parplan/probe-cache.yaml, else
 * ~/.cache/parplan/probe-cache.yaml. Every save re-reads the file, merges (this process's entries
 * win) and writes a temporary file renamed over it: a reader sees the old or the new file, never
 * half of one, whatever interrupts the writer. */
#ifndef PP_PROBE_CACHE_H
#define PP_PROBE_CACHE_H

#include "pp.h"
#include "pp_profile.h"

typedef struct {
    char gpu[128];           /* "NVIDIA H200" */
    char key[192];           /* "layer h4096 a32 g32 f16384 s2048 b1 t2 gelu", "nccl all_reduce n2 b16777216" */
    double a, b;             /* layer: fwd_ms, fwdbwd_ms; nccl: busbw_gbs, 0 */
    char note[32];           /* layer: attention the probe ran ("flash", "unfused"); free otherwise */
} pp_probe_cache_entry;

typedef struct {
    char path[1024];
    pp_probe_cache_entry *e;
    int n, cap;
} pp_probe_cache;

/* The cache file's path (see above); PP_ERR_RUNTIME when neither variable nor HOME is set. */
pp_status pp_probe_cache_path(char *out, size_t n, pp_error *err);
/* Load path; a missing file is an empty cache. A malformed file is PP_ERR_INPUT (file:line:col). */
pp_status pp_probe_cache_load(pp_probe_cache *c, const char *path, pp_error *err);
void pp_probe_cache_free(pp_probe_cache *c); /* accepts NULL */
const pp_probe_cache_entry *pp_probe_cache_get(const pp_probe_cache *c, const char *gpu, const char *key);
/* Add or replace (same gpu and key). Keys and GPU names with a quote, backslash or newline are
 * PP_ERR_INPUT (they are written unescaped). */
pp_status pp_probe_cache_put(pp_probe_cache *c, const pp_probe_cache_entry *e, pp_error *err);
/* Merge with what the file holds now and write it atomically (creating its directory). */
pp_status pp_probe_cache_save(pp_probe_cache *c, pp_error *err);
/* The key of a layout's transformer layer as plan --probe measures it: the model's layer shape,
 * the micro-batch, the TP size, the activation and the attention the work asks
 * ("layer h2048 a16 g16 f8192 s2048 b4 t1 gelu unfused"). calibrate --probe-cache looks the logs'
 * layers up with the same key. */
void pp_probe_cache_layer_key(const pp_work *w, const pp_layout *l, char *buf, size_t n);
/* The optimizer sweep gpu's entries hold ("optimizer pN": ms, bytes per parameter) as profile
 * records, for pp_profile_optimizer_s: *rows (the caller frees it; none: *n 0). PP_ERR_NOMEM. */
pp_status pp_probe_cache_optimizer_rows(const pp_probe_cache *c, const char *gpu, pp_prof_optimizer **rows, int *n,
                                        pp_error *err);

#endif
