/* Measured hardware profiles (`parplan probe -o FILE`, read by --profile) and the queries the
 * time model asks of them (GEMM rate, bus bandwidth, optimizer step: issue 8).
 * Schema: docs/cli.md "Hardware profile".
 *
 * Records are strict (unknown keys inside a gemm/attention/layer/nccl/optimizer/moe/mla record or in
 * `bandwidth` are errors); the top level also allows a few documented free-form keys
 * (env, notes, host, ...) because the contract welcomes more keys there. */
#include "pp_profile.h"
#include "pp_yaml.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

const char *const pp_coll_names[PP_COLL_COUNT] = {"all_reduce", "all_gather", "reduce_scatter",
                                                  "sendrecv", "all_to_all"};
static const char *const attn_impl_names[2] = {"unfused", "flash"}; /* index = flash */

/* Records as read: the public struct plus informational keys that are allowed, typed, and
 * not kept (op/label name the transformer GEMM, us/ms/algbw are what busbw came from). */
typedef struct { pp_prof_gemm r; int dtype; char label[64]; int64_t tp; double scratch; } gemm_rec;
typedef struct { pp_prof_attn r; int impl; bool causal; char dtype[16]; double scratch; } attn_rec;
typedef struct { pp_prof_layer r; char dtype[16], act[16]; double scratch; } layer_rec;
typedef struct { pp_prof_nccl r; int op; double scratch; } nccl_rec;

#define RINT(T, k, f, lo, hi) {k, PP_KEY_INT, offsetof(T, f), lo, hi, 0, 0, NULL, 0, true, NULL, 0, 0}
#define RNUM(T, k, f, lo, hi, req) {k, PP_KEY_NUM, offsetof(T, f), lo, hi, 1, 0, NULL, 0, req, NULL, 0, 0}
#define RENUM(T, k, f, nm, n) {k, PP_KEY_ENUM, offsetof(T, f), 0, 0, 0, 0, nm, n, true, NULL, 0, 0}
#define RSTR(T, k, f) {k, PP_KEY_STR, offsetof(T, f), 0, 0, 0, sizeof(((T *)0)->f), NULL, 0, false, NULL, 0, 0}
#define NKEYS(t) ((int)(sizeof t / sizeof t[0]))

static const pp_key gemm_keys[] = {
    RENUM(gemm_rec, "dtype", dtype, pp_dtype_names, PP_DT_COUNT),
    RINT(gemm_rec, "m", r.m, 1, 1e9), RINT(gemm_rec, "n", r.n, 1, 1e9), RINT(gemm_rec, "k", r.k, 1, 1e9),
    RNUM(gemm_rec, "tflops", r.tflops, 0, 1e6, true),
    RSTR(gemm_rec, "op", label), RSTR(gemm_rec, "label", label),
    {"tp", PP_KEY_INT, offsetof(gemm_rec, tp), 1, 1e6, 0, 0, NULL, 0, false, NULL, 0, 0},
    RNUM(gemm_rec, "us", scratch, 0, 1e12, false), RNUM(gemm_rec, "ms", scratch, 0, 1e12, false),
};
static const pp_key attn_keys[] = {
    RENUM(attn_rec, "impl", impl, attn_impl_names, 2),
    RINT(attn_rec, "b", r.b, 1, 1e9), RINT(attn_rec, "s", r.s, 1, 1e9),
    RINT(attn_rec, "heads", r.heads, 1, 1e9), RINT(attn_rec, "head_dim", r.head_dim, 1, 1e9),
    RNUM(attn_rec, "fwd_tflops", r.fwd_tflops, 0, 1e6, true),
    RNUM(attn_rec, "fwdbwd_tflops", r.fwdbwd_tflops, 0, 1e6, true),
    {"causal", PP_KEY_BOOL, offsetof(attn_rec, causal), 0, 0, 0, 0, NULL, 0, false, NULL, 0, 0},
    RSTR(attn_rec, "dtype", dtype),
    RNUM(attn_rec, "fwd_ms", scratch, 0, 1e12, false), RNUM(attn_rec, "fwdbwd_ms", scratch, 0, 1e12, false),
};
static const pp_key layer_keys[] = {
    RINT(layer_rec, "hidden", r.hidden, 1, 1e9), RINT(layer_rec, "heads", r.heads, 1, 1e9),
    RINT(layer_rec, "seq", r.seq, 1, 1e9), RINT(layer_rec, "mbs", r.mbs, 1, 1e9),
    RINT(layer_rec, "tp", r.tp, 1, 1e6),
    /* grouped-query attention only (absent: kv_heads = heads); 1..heads dividing heads, checked below */
    {"kv_heads", PP_KEY_INT, offsetof(layer_rec, r.kv_heads), 1, 1e9, 0, 0, NULL, 0, false, NULL, 0, 0},
    RNUM(layer_rec, "fwd_ms", r.fwd_ms, 0, 1e9, true),
    RNUM(layer_rec, "fwdbwd_ms", r.fwdbwd_ms, 0, 1e9, true),
    RSTR(layer_rec, "dtype", dtype), RSTR(layer_rec, "activation", act),
    RNUM(layer_rec, "fwd_tflops", scratch, 0, 1e6, false),
    RNUM(layer_rec, "fwdbwd_tflops", scratch, 0, 1e6, false),
};
static const pp_key nccl_keys[] = {
    RENUM(nccl_rec, "op", op, pp_coll_names, PP_COLL_COUNT),
    RINT(nccl_rec, "ranks", r.ranks, 1, 1e7),
    RNUM(nccl_rec, "bytes", r.bytes, 1, 1e15, true),
    RNUM(nccl_rec, "busbw_gbs", r.busbw_gbs, 0, 1e6, true),
    RNUM(nccl_rec, "algbw_gbs", scratch, 0, 1e6, false),
    RNUM(nccl_rec, "us", scratch, 0, 1e12, false),
};

/* `optimizer:` (parplan-probe optimizer, issue 8): one fused AdamW step per size. Bounds: up to
 * 1e15 parameters (the planner's range), 1..1000 bytes per parameter (30 in practice; fp64 states
 * with a master copy stay far below 1000), a step of 1 ns to a day: a zero time is no measurement. */
typedef struct { pp_prof_optimizer r; } opt_rec;
static const pp_key opt_keys[] = {
    RNUM(opt_rec, "params", r.params, 1, 1e15, true),
    RNUM(opt_rec, "bytes_per_param", r.bytes_per_param, 1, 1000, true),
    RNUM(opt_rec, "ms", r.ms, 1e-6, 86400e3, true),
    RNUM(opt_rec, "gbs", r.gbs, 1e-6, 1e6, true),
};

/* `moe:` and `mla:` (parplan-probe moe / mla): one model layer per record. Shapes are integers from
 * 1 (shared_ffn and q_lora_rank: 0 means none); times from 1 ns to a day; the part times are nested
 * mappings of the parts' own medians. The cross-field rules (topk <= experts, ep dividing experts,
 * tp dividing heads, an even rope size) are checked after reading, naming the record. */
const char *const pp_prof_moe_part_names[PP_PROF_MOE_PARTS] = {"router", "permute",   "fc1",   "act",
                                                               "fc2",    "unpermute", "shared"};
const char *const pp_prof_mla_part_names[PP_PROF_MLA_PARTS] = {"q", "kv", "rope", "attn", "proj"};
static const char *const moe_impl_names[2] = {"loop", "grouped"};
static const char *const moe_router_names[2] = {"softmax", "sigmoid"};
typedef struct { pp_prof_moe r; char backend[32], dtype[16]; } moe_rec;
typedef struct { pp_prof_mla r; char dtype[16]; } mla_rec;
#define ROPT(T, k, f, lo, hi) {k, PP_KEY_INT, offsetof(T, f), lo, hi, 0, 0, NULL, 0, false, NULL, 0, 0}
#define PARTS(T, arr, i, nm) RNUM(T, nm, arr[i], 0, 86400e3, false)
#define MOE_PART_KEYS(arr)                                                                              \
    {PARTS(moe_rec, arr, 0, "router"), PARTS(moe_rec, arr, 1, "permute"), PARTS(moe_rec, arr, 2, "fc1"),       \
     PARTS(moe_rec, arr, 3, "act"), PARTS(moe_rec, arr, 4, "fc2"), PARTS(moe_rec, arr, 5, "unpermute"),       \
     PARTS(moe_rec, arr, 6, "shared")}
#define MLA_PART_KEYS(arr)                                                                              \
    {PARTS(mla_rec, arr, 0, "q"), PARTS(mla_rec, arr, 1, "kv"), PARTS(mla_rec, arr, 2, "rope"),               \
     PARTS(mla_rec, arr, 3, "attn"), PARTS(mla_rec, arr, 4, "proj")}
static const pp_key moe_fwd_part_keys[] = MOE_PART_KEYS(r.fwd_parts_ms);
static const pp_key moe_bwd_part_keys[] = MOE_PART_KEYS(r.bwd_parts_ms);
static const pp_key mla_fwd_part_keys[] = MLA_PART_KEYS(r.fwd_parts_ms);
static const pp_key mla_bwd_part_keys[] = MLA_PART_KEYS(r.bwd_parts_ms);
static const pp_key moe_keys[] = {
    RINT(moe_rec, "hidden", r.hidden, 1, 1e9), RINT(moe_rec, "experts", r.experts, 1, 1e6),
    RINT(moe_rec, "topk", r.topk, 1, 1e6), RINT(moe_rec, "moe_ffn", r.moe_ffn, 1, 1e9),
    ROPT(moe_rec, "shared_ffn", r.shared_ffn, 0, 1e9), RINT(moe_rec, "tokens", r.tokens, 1, 1e12),
    ROPT(moe_rec, "ep", r.ep, 1, 1e6),
    RNUM(moe_rec, "imbalance", r.imbalance, 1, 1e6, false),
    RENUM(moe_rec, "impl", r.grouped, moe_impl_names, 2),
    {"router", PP_KEY_ENUM, offsetof(moe_rec, r.sigmoid), 0, 0, 0, 0, moe_router_names, 2, false, NULL, 0, 0},
    RSTR(moe_rec, "backend", backend), RSTR(moe_rec, "dtype", dtype),
    RNUM(moe_rec, "fwd_ms", r.fwd_ms, 1e-6, 86400e3, true),
    RNUM(moe_rec, "fwdbwd_ms", r.fwdbwd_ms, 1e-6, 86400e3, true),
    RNUM(moe_rec, "expert_fwd_tflops", r.expert_fwd_tflops, 0, 1e6, false),
    RNUM(moe_rec, "expert_fwdbwd_tflops", r.expert_fwdbwd_tflops, 0, 1e6, false),
    {"fwd_parts_ms", PP_KEY_MAP, 0, 0, 0, 0, 0, NULL, 0, false, moe_fwd_part_keys, NKEYS(moe_fwd_part_keys), 0},
    {"bwd_parts_ms", PP_KEY_MAP, 0, 0, 0, 0, 0, NULL, 0, false, moe_bwd_part_keys, NKEYS(moe_bwd_part_keys), 0},
};
static const pp_key mla_keys[] = {
    RINT(mla_rec, "hidden", r.hidden, 1, 1e9), RINT(mla_rec, "heads", r.heads, 1, 1e6),
    ROPT(mla_rec, "q_lora_rank", r.q_lora_rank, 0, 1e9), RINT(mla_rec, "kv_lora_rank", r.kv_lora_rank, 1, 1e9),
    RINT(mla_rec, "qk_nope_dim", r.qk_nope_dim, 1, 1e6), RINT(mla_rec, "qk_rope_dim", r.qk_rope_dim, 2, 1e6),
    RINT(mla_rec, "v_head_dim", r.v_head_dim, 1, 1e6), RINT(mla_rec, "seq", r.seq, 1, 1e9),
    RINT(mla_rec, "mbs", r.mbs, 1, 1e9), RINT(mla_rec, "tp", r.tp, 1, 1e6),
    RENUM(mla_rec, "attention", r.flash, attn_impl_names, 2),
    RNUM(mla_rec, "fwd_ms", r.fwd_ms, 1e-6, 86400e3, true),
    RNUM(mla_rec, "fwdbwd_ms", r.fwdbwd_ms, 1e-6, 86400e3, true),
    RNUM(mla_rec, "fwd_tflops", r.fwd_tflops, 0, 1e6, false),
    RNUM(mla_rec, "fwdbwd_tflops", r.fwdbwd_tflops, 0, 1e6, false),
    RSTR(mla_rec, "dtype", dtype),
    {"fwd_parts_ms", PP_KEY_MAP, 0, 0, 0, 0, 0, NULL, 0, false, mla_fwd_part_keys, NKEYS(mla_fwd_part_keys), 0},
    {"bwd_parts_ms", PP_KEY_MAP, 0, 0, 0, 0, 0, NULL, 0, false, mla_bwd_part_keys, NKEYS(mla_bwd_part_keys), 0},
};

/* `oom:` (parplan-probe, issue 9): the sizes that ran out of GPU memory, reported instead of
 * measured. Checked as strictly as the measurements, then not kept (nothing is timed in them). */
static const char *const oom_probe_names[8] = {"gemm", "bandwidth", "attention", "layer",
                                               "optimizer", "moe", "mla", "nccl"};
typedef struct { int probe; char what[160]; bool oom, capped; double need, request, free_b; } oom_rec;
static const pp_key oom_keys[] = {
    RENUM(oom_rec, "probe", probe, oom_probe_names, 8),
    {"what", PP_KEY_STR, offsetof(oom_rec, what), 0, 0, 0, sizeof(((oom_rec *)0)->what), NULL, 0, true, NULL, 0, 0},
    {"oom", PP_KEY_BOOL, offsetof(oom_rec, oom), 0, 0, 0, 0, NULL, 0, true, NULL, 0, 0},
    RNUM(oom_rec, "need_bytes", need, 0, 1e15, true),
    RNUM(oom_rec, "request_bytes", request, 0, 1e15, false),
    RNUM(oom_rec, "free_bytes", free_b, 0, 1e15, false),
    {"capped", PP_KEY_BOOL, offsetof(oom_rec, capped), 0, 0, 0, 0, NULL, 0, false, NULL, 0, 0},
};

typedef struct {
    pp_profile p;
} prof_file;

static const pp_key bw_keys[] = {
    {"copy_gbs", PP_KEY_NUM, offsetof(prof_file, p.copy_gbs), 0, 1e6, 1, 0, NULL, 0, true, NULL, 0, 0},
    {"mul_gbs", PP_KEY_NUM, offsetof(prof_file, p.mul_gbs), 0, 1e6, 1, 0, NULL, 0, true, NULL, 0, 0},
};
#define PANY(k) {k, PP_KEY_ANY, 0, 0, 0, 0, 0, NULL, 0, false, NULL, 0, 0}
/* `calibration:` written by `parplan calibrate` (calibrate.c): the factors are required when the
 * section is there; the fit's figures are informational. Bounds: what a real stack can be (a
 * GEMM at 5%..20x the model's rate, elementwise traffic 1/20..50x). */
#define CNUM(sec, k, f, lo, hi, req, scale) \
    {k, PP_KEY_NUM, offsetof(prof_file, p.sec.f), lo, hi, scale, 0, NULL, 0, req, NULL, 0, 0}
#define CAL_KEYS(sec)                                                                                           \
    {CNUM(sec, "gemm_scale", gemm_scale, 0.05, 20, true, 1),                                                    \
     CNUM(sec, "elementwise_scale", elementwise_scale, 0.05, 50, true, 1),                                      \
     CNUM(sec, "score_bytes", score_bytes, 0, 1000, true, 1),                                                   \
     CNUM(sec, "layer_overhead_us", layer_overhead_s, 0, 1e6, true, 1e-6),                                      \
     CNUM(sec, "optimizer_scale", optimizer_scale, 0.05, 50, true, 1),                                          \
     CNUM(sec, "moe_layer_overhead_us", moe_layer_overhead_s, 0, 1e6, false, 1e-6),                             \
     CNUM(sec, "expert_overhead_us", expert_overhead_s, 0, 1e6, false, 1e-6),                                   \
     {"runs", PP_KEY_INT, offsetof(prof_file, p.sec.runs), 0, 1e9, 0, 0, NULL, 0, false, NULL, 0, 0},             \
     CNUM(sec, "mape_before_pct", mape_before, -1, 1e6, false, 1),                                              \
     CNUM(sec, "mape_after_pct", mape_after, -1, 1e6, false, 1),                                                \
     CNUM(sec, "mape_loo_pct", mape_loo, -1, 1e6, false, 1),                                                    \
     {"stack", PP_KEY_STR, offsetof(prof_file, p.sec.stack), 0, 0, 0, sizeof(((pp_calibration *)0)->stack),    \
      NULL, 0, false, NULL, 0, 0},                                                                                 \
     {"fitted", PP_KEY_STR, offsetof(prof_file, p.sec.fitted), 0, 0, 0, sizeof(((pp_calibration *)0)->fitted), \
      NULL, 0, false, NULL, 0, 0},                                                                                 \
     PANY("logs"),                                                                                              \
     PANY("notes")}
static const pp_key cal_keys[] = CAL_KEYS(calibration);
/* `probe_calibration:` has the keys of `calibration:` (same bounds, same meaning) */
static const pp_key probe_cal_keys[] = CAL_KEYS(probe_calibration);
enum { P_GPU, P_MEASURED, P_GEMM, P_BW, P_ATTN, P_LAYER, P_NCCL, P_CAL, P_OOM, P_OPT, P_PCAL, P_MOE, P_MLA };
static const pp_key prof_keys[] = {
    {"gpu", PP_KEY_STR, offsetof(prof_file, p.gpu), 0, 0, 0, sizeof(((pp_profile *)0)->gpu), NULL, 0, true, NULL, 0, 0},
    {"measured", PP_KEY_STR, offsetof(prof_file, p.measured), 0, 0, 0, sizeof(((pp_profile *)0)->measured),
     NULL, 0, true, NULL, 0, 0},
    PANY("gemm"), /* the record lists are read below with their own tables */
    {"bandwidth", PP_KEY_MAP, 0, 0, 0, 0, 0, NULL, 0, false, bw_keys, NKEYS(bw_keys), 0},
    PANY("attention"), PANY("layer"), PANY("nccl"),
    {"calibration", PP_KEY_MAP, 0, 0, 0, 0, 0, NULL, 0, false, cal_keys, NKEYS(cal_keys), 0},
    PANY("oom"), /* read below with oom_keys */
    PANY("optimizer"), /* read below with opt_keys */
    {"probe_calibration", PP_KEY_MAP, 0, 0, 0, 0, 0, NULL, 0, false, probe_cal_keys, NKEYS(probe_cal_keys), 0},
    PANY("moe"), PANY("mla"), /* read below with moe_keys, mla_keys */
    /* Free-form, documented extras: where and how the profile was measured. */
    PANY("env"), PANY("notes"), PANY("host"), PANY("driver"), PANY("cuda"), PANY("tool"),
    PANY("version"), PANY("gpus"), PANY("command"),
};

void pp_profile_free(pp_profile *p)
{
    if (!p) return;
    free(p->gemm);
    free(p->attn);
    free(p->layer);
    free(p->nccl);
    free(p->optimizer);
    free(p->moe);
    free(p->mla);
    p->gemm = NULL;
    p->attn = NULL;
    p->layer = NULL;
    p->nccl = NULL;
    p->optimizer = NULL;
    p->moe = NULL;
    p->mla = NULL;
    p->n_gemm = p->n_attn = p->n_layer = p->n_nccl = p->n_optimizer = p->n_moe = p->n_mla = 0;
}

/* The value node of `key` in mapping `map` (NULL when absent), for a message about it. */
static yaml_node_t *map_value(pp_yaml *y, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE) return NULL;
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = yaml_document_get_node(&y->doc, pr->key);
        if (k && k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, key))
            return yaml_document_get_node(&y->doc, pr->value);
    }
    return NULL;
}

static pp_status profile_from_doc(pp_yaml *y, pp_profile *out)
{
    prof_file pf;
    memset(&pf, 0, sizeof pf);
    /* neutral factors until a calibration section says otherwise */
    pf.p.calibration.gemm_scale = pf.p.calibration.elementwise_scale = pf.p.calibration.optimizer_scale = 1;
    pf.p.calibration.mape_before = pf.p.calibration.mape_after = pf.p.calibration.mape_loo = -1;
    pf.p.probe_calibration = pf.p.calibration;
    yaml_node_t *root = pp_yaml_root(y);
    yaml_node_t *found[NKEYS(prof_keys)];
    void *arr = NULL;
    int n = 0;
    pp_status st = pp_yaml_map(y, root, prof_keys, NKEYS(prof_keys), &pf, 0, found, "profile");
    if (st) goto fail;
    pp_profile *p = &pf.p;
    p->calibration.present = found[P_CAL] != NULL;
    p->probe_calibration.present = found[P_PCAL] != NULL;
    if (found[P_GEMM]) {
        if ((st = pp_yaml_seq(y, found[P_GEMM], gemm_keys, NKEYS(gemm_keys), sizeof(gemm_rec), &arr, &n, "gemm")))
            goto fail;
        if (n && !(p->gemm = calloc((size_t)n, sizeof *p->gemm))) goto nomem;
        for (int i = 0; i < n; i++) {
            gemm_rec *r = (gemm_rec *)arr + i;
            p->gemm[i] = r->r;
            p->gemm[i].dtype = (pp_dtype)r->dtype;
        }
        p->n_gemm = n;
        free(arr);
        arr = NULL;
    }
    if (found[P_ATTN]) {
        if ((st = pp_yaml_seq(y, found[P_ATTN], attn_keys, NKEYS(attn_keys), sizeof(attn_rec), &arr, &n, "attention")))
            goto fail;
        if (n && !(p->attn = calloc((size_t)n, sizeof *p->attn))) goto nomem;
        for (int i = 0; i < n; i++) {
            attn_rec *r = (attn_rec *)arr + i;
            p->attn[i] = r->r;
            p->attn[i].flash = r->impl;
        }
        p->n_attn = n;
        free(arr);
        arr = NULL;
    }
    if (found[P_LAYER]) {
        if ((st = pp_yaml_seq(y, found[P_LAYER], layer_keys, NKEYS(layer_keys), sizeof(layer_rec), &arr, &n, "layer")))
            goto fail;
        if (n && !(p->layer = calloc((size_t)n, sizeof *p->layer))) goto nomem;
        for (int i = 0; i < n; i++) {
            pp_prof_layer *l = &p->layer[i];
            *l = ((layer_rec *)arr)[i].r;
            l->no_mlp = !strcmp(((layer_rec *)arr)[i].act, "none");
            if (!l->kv_heads) {
                l->kv_heads = l->heads; /* multi-head attention: the key is written only for GQA */
            } else if (l->kv_heads > l->heads || l->heads % l->kv_heads) {
                yaml_node_t *item = yaml_document_get_node(&y->doc, found[P_LAYER]->data.sequence.items.start[i]);
                yaml_node_t *v = map_value(y, item, "kv_heads");
                st = pp_yaml_error(y, v ? v : item ? item : found[P_LAYER],
                                   "layer[%d]: 'kv_heads': %lld must divide heads (%lld) and be at most heads", i,
                                   (long long)l->kv_heads, (long long)l->heads);
                goto fail;
            }
        }
        p->n_layer = n;
        free(arr);
        arr = NULL;
    }
    if (found[P_NCCL]) {
        if ((st = pp_yaml_seq(y, found[P_NCCL], nccl_keys, NKEYS(nccl_keys), sizeof(nccl_rec), &arr, &n, "nccl")))
            goto fail;
        if (n && !(p->nccl = calloc((size_t)n, sizeof *p->nccl))) goto nomem;
        for (int i = 0; i < n; i++) {
            nccl_rec *r = (nccl_rec *)arr + i;
            p->nccl[i] = r->r;
            p->nccl[i].op = (pp_coll)r->op;
        }
        p->n_nccl = n;
        free(arr);
        arr = NULL;
    }
    if (found[P_OPT]) {
        if ((st = pp_yaml_seq(y, found[P_OPT], opt_keys, NKEYS(opt_keys), sizeof(opt_rec), &arr, &n, "optimizer")))
            goto fail;
        if (n && !(p->optimizer = calloc((size_t)n, sizeof *p->optimizer))) goto nomem;
        for (int i = 0; i < n; i++) p->optimizer[i] = ((opt_rec *)arr)[i].r;
        p->n_optimizer = n;
        free(arr);
        arr = NULL;
    }
    if (found[P_MOE]) {
        if ((st = pp_yaml_seq(y, found[P_MOE], moe_keys, NKEYS(moe_keys), sizeof(moe_rec), &arr, &n, "moe"))) goto fail;
        if (n && !(p->moe = calloc((size_t)n, sizeof *p->moe))) goto nomem;
        for (int i = 0; i < n; i++) {
            pp_prof_moe *m = &p->moe[i];
            *m = ((moe_rec *)arr)[i].r;
            if (!m->ep) m->ep = 1;
            if (!m->imbalance) m->imbalance = 1;
            if (m->topk > m->experts || m->experts % m->ep) {
                bool tk = m->topk > m->experts;
                yaml_node_t *item = yaml_document_get_node(&y->doc, found[P_MOE]->data.sequence.items.start[i]);
                yaml_node_t *v = map_value(y, item, tk ? "topk" : "ep");
                yaml_node_t *at = v ? v : item ? item : found[P_MOE];
                st = tk ? pp_yaml_error(y, at, "moe[%d]: 'topk' %lld is more than 'experts' (%lld)", i,
                                        (long long)m->topk, (long long)m->experts)
                        : pp_yaml_error(y, at, "moe[%d]: 'ep' %lld does not divide 'experts' (%lld)", i,
                                        (long long)m->ep, (long long)m->experts);
                goto fail;
            }
        }
        p->n_moe = n;
        free(arr);
        arr = NULL;
    }
    if (found[P_MLA]) {
        if ((st = pp_yaml_seq(y, found[P_MLA], mla_keys, NKEYS(mla_keys), sizeof(mla_rec), &arr, &n, "mla"))) goto fail;
        if (n && !(p->mla = calloc((size_t)n, sizeof *p->mla))) goto nomem;
        for (int i = 0; i < n; i++) {
            pp_prof_mla *m = &p->mla[i];
            *m = ((mla_rec *)arr)[i].r;
            if (m->heads % m->tp || m->qk_rope_dim % 2) {
                bool tp = m->heads % m->tp != 0;
                yaml_node_t *item = yaml_document_get_node(&y->doc, found[P_MLA]->data.sequence.items.start[i]);
                yaml_node_t *v = map_value(y, item, tp ? "tp" : "qk_rope_dim");
                yaml_node_t *at = v ? v : item ? item : found[P_MLA];
                st = tp ? pp_yaml_error(y, at, "mla[%d]: 'tp' %lld does not split %lld heads evenly", i,
                                        (long long)m->tp, (long long)m->heads)
                        : pp_yaml_error(y, at, "mla[%d]: 'qk_rope_dim' %lld is odd (RoPE rotates pairs)", i,
                                        (long long)m->qk_rope_dim);
                goto fail;
            }
        }
        p->n_mla = n;
        free(arr);
        arr = NULL;
    }
    if (found[P_OOM]) {
        if ((st = pp_yaml_seq(y, found[P_OOM], oom_keys, NKEYS(oom_keys), sizeof(oom_rec), &arr, &n, "oom")))
            goto fail;
        for (int i = 0; i < n; i++)
            if (!((oom_rec *)arr)[i].oom) {
                yaml_node_t *item = yaml_document_get_node(&y->doc, found[P_OOM]->data.sequence.items.start[i]);
                st = pp_yaml_error(y, item ? item : found[P_OOM], "oom[%d]: a record of a size that ran out of "
                                                                  "memory says `oom: true`", i);
                goto fail;
            }
        free(arr);
        arr = NULL;
    }
    *out = pf.p;
    return PP_OK;
nomem:
    st = pp_error_set(y->err, PP_ERR_NOMEM, y->path, 0, 0, "out of memory");
fail:
    free(arr);
    pp_profile_free(&pf.p);
    return st;
}

pp_status pp_profile_load_file(pp_profile *p, const char *path, pp_error *err)
{
    memset(p, 0, sizeof *p);
    char *text;
    size_t len;
    pp_yaml y;
    pp_status st = pp_yaml_read_file(path, &text, &len, err);
    if (st) return st;
    if ((st = pp_yaml_load(&y, text, len, path, err)) == PP_OK) {
        st = profile_from_doc(&y, p);
        pp_yaml_free(&y);
    }
    free(text);
    return st;
}

/* ------------------------------------------------------------------ queries */

/* Piecewise-linear interpolation of y over x (both as given; callers pass logs), clamped to
 * the end values outside [x_min, x_max]. Points with equal x are averaged. n >= 1. */
typedef struct { double x, y; } xy;
static int cmp_xy(const void *a, const void *b)
{
    double d = ((const xy *)a)->x - ((const xy *)b)->x;
    return d < 0 ? -1 : d > 0;
}

static double interp_clamped(xy *pt, int n, double x)
{
    qsort(pt, (size_t)n, sizeof *pt, cmp_xy);
    /* merge equal x (average y) */
    int m = 0;
    for (int i = 0; i < n;) {
        int j = i;
        double sum = 0;
        while (j < n && pt[j].x == pt[i].x) sum += pt[j++].y;
        pt[m].x = pt[i].x;
        pt[m].y = sum / (j - i);
        m++;
        i = j;
    }
    if (x <= pt[0].x) return pt[0].y;
    if (x >= pt[m - 1].x) return pt[m - 1].y;
    for (int i = 1; i < m; i++)
        if (x <= pt[i].x) {
            double t = (x - pt[i - 1].x) / (pt[i].x - pt[i - 1].x);
            return pt[i - 1].y + t * (pt[i].y - pt[i - 1].y);
        }
    return pt[m - 1].y;
}

/* A GEMM's achieved rate depends mostly on its size (small GEMMs cannot fill the GPU): an
 * exact shape match wins; otherwise interpolate TFLOP/s linearly in log(2mnk) between the
 * measured shapes of that dtype, clamped to the smallest/largest measured size. */
double pp_profile_gemm_tflops(const pp_profile *p, pp_dtype dt, int64_t m, int64_t n, int64_t k)
{
    if (!p || p->n_gemm <= 0 || m <= 0 || n <= 0 || k <= 0) return 0;
    xy *pt = malloc((size_t)p->n_gemm * sizeof *pt);
    if (!pt) return 0;
    int c = 0;
    double result = 0;
    for (int i = 0; i < p->n_gemm; i++) {
        const pp_prof_gemm *g = &p->gemm[i];
        if (g->dtype != dt || g->tflops <= 0) continue;
        if (g->m == m && g->n == n && g->k == k) {
            result = g->tflops;
            goto done;
        }
        pt[c].x = log(2.0 * (double)g->m * (double)g->n * (double)g->k);
        pt[c].y = g->tflops;
        c++;
    }
    if (c) result = interp_clamped(pt, c, log(2.0 * (double)m * (double)n * (double)k));
done:
    free(pt);
    return result;
}

/* Bus bandwidth of a collective: only measurements with the same op and the same number of
 * ranks are used (busbw across a node boundary differs from busbw inside it, and the caller
 * knows the topology); interpolated linearly in log(bytes), clamped at the measured ends. */
double pp_profile_busbw_gbs(const pp_profile *p, pp_coll op, int64_t ranks, double bytes)
{
    if (!p || p->n_nccl <= 0 || !(bytes > 0) || !isfinite(bytes)) return 0;
    xy *pt = malloc((size_t)p->n_nccl * sizeof *pt);
    if (!pt) return 0;
    int c = 0;
    for (int i = 0; i < p->n_nccl; i++) {
        const pp_prof_nccl *r = &p->nccl[i];
        if (r->op != op || r->ranks != ranks || !(r->bytes > 0) || !(r->busbw_gbs > 0)) continue;
        pt[c].x = log(r->bytes);
        pt[c].y = r->busbw_gbs;
        c++;
    }
    double result = c ? interp_clamped(pt, c, log(bytes)) : 0;
    free(pt);
    return result;
}

/* One optimizer step over `params` parameters (see pp_profile.h for why linear in params with the
 * nearest record's rate beyond the ends). */
double pp_profile_optimizer_s(const pp_profile *p, double params)
{
    if (!p || p->n_optimizer <= 0 || !(params > 0) || !isfinite(params)) return -1;
    xy *pt = malloc((size_t)p->n_optimizer * sizeof *pt);
    if (!pt) return -1;
    int c = 0;
    for (int i = 0; i < p->n_optimizer; i++) {
        const pp_prof_optimizer *r = &p->optimizer[i];
        if (!(r->params > 0) || !(r->ms > 0)) continue; /* the loader refuses these; a profile built in memory may not */
        pt[c].x = r->params;
        pt[c].y = r->ms * 1e-3;
        c++;
    }
    double result = -1;
    if (c) {
        double lo = pt[0].x, hi = pt[0].x;
        for (int i = 1; i < c; i++) {
            lo = fmin(lo, pt[i].x);
            hi = fmax(hi, pt[i].x);
        }
        /* interp_clamped answers inside the range and gives the (averaged) end times outside it */
        if (params < lo) result = params / lo * interp_clamped(pt, c, lo);
        else if (params > hi) result = params / hi * interp_clamped(pt, c, hi);
        else result = interp_clamped(pt, c, params);
    }
    free(pt);
    return result;
}
