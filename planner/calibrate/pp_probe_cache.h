/* The measurement cache of `plan --probe`: what the local GPUs measured, keyed by the
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
/* The same with an MLP of `ffn` (the model's own: the key above); ffn 0: the layer without its MLP
 * (parplan-probe layer --no-mlp, the attention part of an MoE layer), activation "none":
 * "layer h2048 a16 g4 f0 s4096 b1 t1 none unfused". A head size other than hidden / heads ends the
 * key: " d128". */
void pp_probe_cache_layer_key_ffn(const pp_work *w, const pp_layout *l, int64_t ffn, char *buf, size_t n);

/* ------------------------------------------------------------------ MoE and MLA shapes */

/* What `parplan-probe moe` runs for one rank of a layout's MoE layer (plan --probe, parplan probe moe
 * --model): the router and the rank's local experts (experts / ep) over the token copies the rank
 * gets, at the expert-TP shard of the expert FFN, and the shared experts (their TP shard) when they
 * run on the probe's tokens. Megatron's alltoall dispatcher (megatron/core/transformer/moe/
 * token_dispatcher.py): the router sees the rank's tokens, micro-batch x seq / cp, / tp under
 * sequence parallelism (MoE with TP needs SP: pp_layout_validate); the expert-TP group gathers its
 * etp ranks' tokens, so the experts get tokens x topk x etp copies; the time model prices the
 * busiest rank at the imbalance (or capacity factor) times that (time.c layer_terms), and the probe
 * is asked for the same count. The shared experts (shared_experts.py, in the TP region) run on
 * micro-batch x seq / cp tokens: measured here when that is the probe's token count (tp = etp, or no
 * TP), else left out (shared_ffn 0, shared_modelled) for the time model to price. */
typedef struct {
    int64_t hidden, experts, topk, moe_ffn, shared_ffn, tokens, ep;
    bool grouped;             /* TEGroupedMLP (--moe-grouped-gemm); else the loop, SequentialMLP */
    bool shared_modelled;     /* the model has shared experts that this shape leaves out */
} pp_probe_moe_shape;
/* The shape, or false with why ("expert FFN 1408 does not split over etp 3", ...) when the moe probe
 * cannot run it (or the model has no MoE layers). */
bool pp_probe_moe_shape_of(const pp_work *w, const pp_layout *l, pp_probe_moe_shape *s, char *why, size_t n);
/* "moe h2048 e64 k6 f1408 s2816 T4096 ep1 loop": fwd_ms, fwdbwd_ms; note the backend. The routed
 * experts' own share (the fc1, activation and fc2 parts: what runs at the host's pace when the host
 * issues one GEMM chain per expert) under the same key + " experts": fwd_ms, bwd_ms. */
void pp_probe_cache_moe_key(const pp_probe_moe_shape *s, char *buf, size_t n);

/* What `parplan-probe mla` runs for a layout's multi-head latent attention: the TP shard's heads at
 * the micro-batch and sequence (CP is not probed). */
typedef struct {
    int64_t hidden, heads, q_lora_rank, kv_lora_rank, qk_nope_dim, qk_rope_dim, v_head_dim, seq, mbs, tp;
} pp_probe_mla_shape;
bool pp_probe_mla_shape_of(const pp_work *w, const pp_layout *l, pp_probe_mla_shape *s, char *why, size_t n);
/* "mla h7168 a128 q1536 c512 n128 r64 v128 s4096 b1 t8 unfused" (the attention the work asks):
 * fwd_ms, fwdbwd_ms; note the attention the probe ran. */
void pp_probe_cache_mla_key(const pp_work *w, const pp_probe_mla_shape *s, char *buf, size_t n);

/* The optimizer sweep gpu's entries hold ("optimizer pN": ms, bytes per parameter) as profile
 * records, for pp_profile_optimizer_s: *rows (the caller frees it; none: *n 0). PP_ERR_NOMEM. */
pp_status pp_probe_cache_optimizer_rows(const pp_probe_cache *c, const char *gpu, pp_prof_optimizer **rows, int *n,
                                        pp_error *err);

#endif
