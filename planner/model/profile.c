/* Measured hardware profiles (`parplan probe -o FILE`, read by --profile) and the queries the
 * time model asks of them (GEMM rate, bus bandwidth, optimizer step).
 * Schema: docs/cli.md "Hardware profile"; its sections and keys: pp_profile_schema.h, from which
 * the key tables below are made.
 *
 * Records are strict (unknown keys inside a gemm/attention/layer/nccl/optimizer/moe/mla record or in
 * `bandwidth` are errors); the top level also allows a few documented free-form keys
 * (env, notes, host, ...) because the contract welcomes more keys there. */
#include "pp_profile.h"
#include "pp_profile_schema.h"
#include "pp_yaml.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

const char *const pp_coll_names[PP_COLL_COUNT] = {PP_PROFILE_ENUM_coll(PP_PROFILE_STR)};
const char *const pp_prof_moe_part_names[PP_PROF_MOE_PARTS] = {PP_PROFILE_PARTS_moe(PP_PROFILE_STR)};
const char *const pp_prof_mla_part_names[PP_PROF_MLA_PARTS] = {PP_PROFILE_PARTS_mla(PP_PROFILE_STR)};
_Static_assert(PP_PROFILE_COUNT(PP_PROFILE_ENUM_coll) == PP_COLL_COUNT, "pp_coll: the schema's collectives");

/* The names of the schema's enumerations (ENUM keys: sub) */
static const char *const enum_dtype[] = {PP_PROFILE_ENUM_dtype(PP_PROFILE_STR)};
static const char *const enum_attn_impl[] = {PP_PROFILE_ENUM_attn_impl(PP_PROFILE_STR)};
static const char *const enum_moe_impl[] = {PP_PROFILE_ENUM_moe_impl(PP_PROFILE_STR)};
static const char *const enum_router[] = {PP_PROFILE_ENUM_router(PP_PROFILE_STR)};
static const char *const enum_probe[] = {PP_PROFILE_ENUM_probe(PP_PROFILE_STR)};
#define enum_coll pp_coll_names /* public: pp_coll */

/* Records as read: the public struct `r` plus what the schema allows and the planner does not keep
 * (op/label name the transformer GEMM, us/ms/algbw are what busbw came from). */
typedef struct { pp_prof_gemm r; int dtype; char label[64]; int64_t tp; double scratch; } gemm_rec;
typedef struct { pp_prof_attn r; int impl; bool causal; char dtype[16]; double scratch; } attn_rec;
typedef struct { pp_prof_layer r; char dtype[16], act[16]; double scratch; } layer_rec;
typedef struct { pp_prof_nccl r; int op; double scratch; } nccl_rec;
typedef struct { pp_prof_optimizer r; } opt_rec;
typedef struct { pp_prof_moe r; char backend[32], dtype[16]; } moe_rec;
typedef struct { pp_prof_mla r; char dtype[16]; } mla_rec;
typedef struct { int probe; char what[160]; bool oom, capped; double need, request, free_b; } oom_rec;
typedef struct { pp_profile p; } prof_file;

#define NKEYS(t) ((int)(sizeof t / sizeof t[0]))

/* One key of the schema (X(key, type, lo, hi, use, sub, rd, ...)) as a row of T's table; a MAP key
 * reads the table sec_key_keys. */
#define KEY(T, sec, key, type, lo, hi, use, sub, rd, ...) KEY_##type(T, sec, key, lo, hi, PP_PROFILE_REQUIRED_##use, sub, rd)
#define KEY_INT(T, sec, key, lo, hi, req, sub, rd) {#key, PP_KEY_INT, offsetof(T, rd), lo, hi, 0, 0, NULL, 0, req, NULL, 0, 0},
#define KEY_NUM(T, sec, key, lo, hi, req, sub, rd) {#key, PP_KEY_NUM, offsetof(T, rd), lo, hi, 1, 0, NULL, 0, req, NULL, 0, 0},
#define KEY_USEC(T, sec, key, lo, hi, req, sub, rd) {#key, PP_KEY_NUM, offsetof(T, rd), lo, hi, 1e-6, 0, NULL, 0, req, NULL, 0, 0},
#define KEY_STR(T, sec, key, lo, hi, req, sub, rd) \
    {#key, PP_KEY_STR, offsetof(T, rd), 0, 0, 0, sizeof(((T *)0)->rd), NULL, 0, req, NULL, 0, 0},
#define KEY_BOOL(T, sec, key, lo, hi, req, sub, rd) {#key, PP_KEY_BOOL, offsetof(T, rd), 0, 0, 0, 0, NULL, 0, req, NULL, 0, 0},
#define KEY_ENUM(T, sec, key, lo, hi, req, sub, rd) \
    {#key, PP_KEY_ENUM, offsetof(T, rd), 0, 0, 0, 0, enum_##sub, NKEYS(enum_##sub), req, NULL, 0, 0},
#define KEY_MAP(T, sec, key, lo, hi, req, sub, rd) \
    {#key, PP_KEY_MAP, 0, 0, 0, 0, 0, NULL, 0, req, sec##_##key##_keys, NKEYS(sec##_##key##_keys), 0},
#define KEY_ANY(T, sec, key, lo, hi, req, sub, rd) {#key, PP_KEY_ANY, 0, 0, 0, 0, 0, NULL, 0, false, NULL, 0, 0},

/* the part times of moe and mla records: nested mappings of each part's own median */
#define PART_KEY(T, arr, name) \
    {#name, PP_KEY_NUM, offsetof(T, arr[PP_PROFILE_PART_##name]), 0, PP_PROFILE_PART_MS_MAX, 1, 0, NULL, 0, false, NULL, 0, 0},
#define MOE_FWD_PART(name) PART_KEY(moe_rec, r.fwd_parts_ms, name)
#define MOE_BWD_PART(name) PART_KEY(moe_rec, r.bwd_parts_ms, name)
#define MLA_FWD_PART(name) PART_KEY(mla_rec, r.fwd_parts_ms, name)
#define MLA_BWD_PART(name) PART_KEY(mla_rec, r.bwd_parts_ms, name)
static const pp_key moe_fwd_parts_ms_keys[] = {PP_PROFILE_PARTS_moe(MOE_FWD_PART)};
static const pp_key moe_bwd_parts_ms_keys[] = {PP_PROFILE_PARTS_moe(MOE_BWD_PART)};
static const pp_key mla_fwd_parts_ms_keys[] = {PP_PROFILE_PARTS_mla(MLA_FWD_PART)};
static const pp_key mla_bwd_parts_ms_keys[] = {PP_PROFILE_PARTS_mla(MLA_BWD_PART)};

#define GEMM_KEY(...) KEY(gemm_rec, gemm, __VA_ARGS__)
#define ATTN_KEY(...) KEY(attn_rec, attention, __VA_ARGS__)
#define LAYER_KEY(...) KEY(layer_rec, layer, __VA_ARGS__)
#define NCCL_KEY(...) KEY(nccl_rec, nccl, __VA_ARGS__)
#define OPT_KEY(...) KEY(opt_rec, optimizer, __VA_ARGS__)
#define MOE_KEY(...) KEY(moe_rec, moe, __VA_ARGS__)
#define MLA_KEY(...) KEY(mla_rec, mla, __VA_ARGS__)
#define OOM_KEY(...) KEY(oom_rec, oom, __VA_ARGS__)
#define BW_KEY(...) KEY(prof_file, bandwidth, __VA_ARGS__)
static const pp_key gemm_keys[] = {PP_PROFILE_REC_gemm(GEMM_KEY)};
static const pp_key attention_keys[] = {PP_PROFILE_REC_attention(ATTN_KEY)};
static const pp_key layer_keys[] = {PP_PROFILE_REC_layer(LAYER_KEY)};
static const pp_key nccl_keys[] = {PP_PROFILE_REC_nccl(NCCL_KEY)};
static const pp_key optimizer_keys[] = {PP_PROFILE_REC_optimizer(OPT_KEY)};
static const pp_key moe_keys[] = {PP_PROFILE_REC_moe(MOE_KEY)};
static const pp_key mla_keys[] = {PP_PROFILE_REC_mla(MLA_KEY)};
/* `oom:` is checked as strictly as the measurements, then not kept */
static const pp_key oom_keys[] = {PP_PROFILE_REC_oom(OOM_KEY)};
static const pp_key bandwidth_keys[] = {PP_PROFILE_MAP_bandwidth(BW_KEY)};

/* `calibration:` written by `parplan calibrate` (calibrate.c), and `probe_calibration:` with the same
 * keys (same bounds, same meaning) */
#define CAL_KEY(key, type, lo, hi, use, rd) KEY(prof_file, calibration, key, type, lo, hi, use, _, p.calibration.rd, _, 0)
#define PCAL_KEY(key, type, lo, hi, use, rd) \
    KEY(prof_file, probe_calibration, key, type, lo, hi, use, _, p.probe_calibration.rd, _, 0)
static const pp_key calibration_keys[] = {PP_PROFILE_MAP_calibration(CAL_KEY)};
static const pp_key probe_calibration_keys[] = {PP_PROFILE_MAP_calibration(PCAL_KEY)};

/* The top level: the strings kept, the mappings read with their tables, the record lists read
 * below with theirs (found[PP_PROFILE_SECTION_*]), the free-form keys ignored. */
#define TOP_KEY(key, kind, use) TOP_##kind(key, PP_PROFILE_REQUIRED_##use)
#define TOP_STR(key, req) \
    {#key, PP_KEY_STR, offsetof(prof_file, p.key), 0, 0, 0, sizeof(((pp_profile *)0)->key), NULL, 0, req, NULL, 0, 0},
#define TOP_MAP(key, req) {#key, PP_KEY_MAP, 0, 0, 0, 0, 0, NULL, 0, req, key##_keys, NKEYS(key##_keys), 0},
#define TOP_LIST(key, req) {#key, PP_KEY_ANY, 0, 0, 0, 0, 0, NULL, 0, req, NULL, 0, 0},
#define TOP_ANY(key, req) {#key, PP_KEY_ANY, 0, 0, 0, 0, 0, NULL, 0, req, NULL, 0, 0},
static const pp_key prof_keys[] = {PP_PROFILE_SECTIONS(TOP_KEY)};

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

/* Where to point at record i of sequence seq for a message: its value of `key`, else the record,
 * else the sequence. */
static yaml_node_t *record_at(pp_yaml *y, yaml_node_t *seq, int i, const char *key)
{
    yaml_node_t *item = yaml_document_get_node(&y->doc, seq->data.sequence.items.start[i]);
    if (!item) return seq;
    if (key && item->type == YAML_MAPPING_NODE)
        for (yaml_node_pair_t *pr = item->data.mapping.pairs.start; pr < item->data.mapping.pairs.top; pr++) {
            yaml_node_t *k = yaml_document_get_node(&y->doc, pr->key);
            yaml_node_t *v = yaml_document_get_node(&y->doc, pr->value);
            if (k && v && k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, key)) return v;
        }
    return item;
}

/* The records of a section (seq; NULL when absent) read with keys into *arr (records of rec_size,
 * what *arr held before freed) and *n, and *dst allocated for n public records of dst_size (none when
 * dst is NULL). */
static pp_status records_of(pp_yaml *y, yaml_node_t *seq, const pp_key *keys, int nk, size_t rec_size, const char *name,
                            void **arr, int *n, void **dst, size_t dst_size)
{
    free(*arr);
    *arr = NULL;
    *n = 0;
    if (!seq) return PP_OK;
    pp_status st = pp_yaml_seq(y, seq, keys, nk, rec_size, arr, n, name);
    if (st) return st;
    if (dst && *n && !(*dst = calloc((size_t)*n, dst_size)))
        return pp_error_set(y->err, PP_ERR_NOMEM, y->path, 0, 0, "out of memory");
    return PP_OK;
}
#define RECORDS(sec, T, dst)                                                                                     \
    records_of(y, found[PP_PROFILE_SECTION_##sec], sec##_keys, NKEYS(sec##_keys), sizeof(T), #sec, &arr, &n,     \
               (void **)&(dst), sizeof *(dst))

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
    pp_profile *p = &pf.p;
    pp_status st = pp_yaml_map(y, root, prof_keys, NKEYS(prof_keys), &pf, 0, found, "profile");
    if (st) goto fail;
    p->calibration.present = found[PP_PROFILE_SECTION_calibration] != NULL;
    p->probe_calibration.present = found[PP_PROFILE_SECTION_probe_calibration] != NULL;

    if ((st = RECORDS(gemm, gemm_rec, p->gemm))) goto fail;
    for (int i = 0; i < n; i++) {
        const gemm_rec *r = (gemm_rec *)arr + i;
        p->gemm[i] = r->r;
        p->gemm[i].dtype = (pp_dtype)pp_name_lookup(pp_dtype_names, PP_DT_COUNT, enum_dtype[r->dtype]);
    }
    p->n_gemm = n;

    if ((st = RECORDS(attention, attn_rec, p->attn))) goto fail;
    for (int i = 0; i < n; i++) {
        const attn_rec *r = (attn_rec *)arr + i;
        p->attn[i] = r->r;
        p->attn[i].flash = r->impl;
    }
    p->n_attn = n;

    if ((st = RECORDS(layer, layer_rec, p->layer))) goto fail;
    for (int i = 0; i < n; i++) {
        pp_prof_layer *l = &p->layer[i];
        *l = ((layer_rec *)arr)[i].r;
        l->no_mlp = !strcmp(((layer_rec *)arr)[i].act, "none");
        if (!l->kv_heads) {
            l->kv_heads = l->heads; /* multi-head attention: the key is written only for GQA */
        } else if (l->kv_heads > l->heads || l->heads % l->kv_heads) {
            st = pp_yaml_error(y, record_at(y, found[PP_PROFILE_SECTION_layer], i, "kv_heads"),
                               "layer[%d]: 'kv_heads': %lld must divide heads (%lld) and be at most heads", i,
                               (long long)l->kv_heads, (long long)l->heads);
            goto fail;
        }
    }
    p->n_layer = n;

    if ((st = RECORDS(nccl, nccl_rec, p->nccl))) goto fail;
    for (int i = 0; i < n; i++) {
        const nccl_rec *r = (nccl_rec *)arr + i;
        p->nccl[i] = r->r;
        p->nccl[i].op = (pp_coll)r->op;
    }
    p->n_nccl = n;

    if ((st = RECORDS(optimizer, opt_rec, p->optimizer))) goto fail;
    for (int i = 0; i < n; i++) p->optimizer[i] = ((opt_rec *)arr)[i].r;
    p->n_optimizer = n;

    if ((st = RECORDS(moe, moe_rec, p->moe))) goto fail;
    for (int i = 0; i < n; i++) {
        pp_prof_moe *m = &p->moe[i];
        *m = ((moe_rec *)arr)[i].r;
        if (!m->ep) m->ep = 1;
        if (!m->imbalance) m->imbalance = 1;
        if (m->topk > m->experts || m->experts % m->ep) {
            bool tk = m->topk > m->experts;
            yaml_node_t *at = record_at(y, found[PP_PROFILE_SECTION_moe], i, tk ? "topk" : "ep");
            st = tk ? pp_yaml_error(y, at, "moe[%d]: 'topk' %lld is more than 'experts' (%lld)", i, (long long)m->topk,
                                    (long long)m->experts)
                    : pp_yaml_error(y, at, "moe[%d]: 'ep' %lld does not divide 'experts' (%lld)", i, (long long)m->ep,
                                    (long long)m->experts);
            goto fail;
        }
    }
    p->n_moe = n;

    if ((st = RECORDS(mla, mla_rec, p->mla))) goto fail;
    for (int i = 0; i < n; i++) {
        pp_prof_mla *m = &p->mla[i];
        *m = ((mla_rec *)arr)[i].r;
        if (m->heads % m->tp || m->qk_rope_dim % 2) {
            bool tp = m->heads % m->tp != 0;
            yaml_node_t *at = record_at(y, found[PP_PROFILE_SECTION_mla], i, tp ? "tp" : "qk_rope_dim");
            st = tp ? pp_yaml_error(y, at, "mla[%d]: 'tp' %lld does not split %lld heads evenly", i, (long long)m->tp,
                                    (long long)m->heads)
                    : pp_yaml_error(y, at, "mla[%d]: 'qk_rope_dim' %lld is odd (RoPE rotates pairs)", i,
                                    (long long)m->qk_rope_dim);
            goto fail;
        }
    }
    p->n_mla = n;

    /* the sizes that ran out of memory: checked, not kept */
    if ((st = records_of(y, found[PP_PROFILE_SECTION_oom], oom_keys, NKEYS(oom_keys), sizeof(oom_rec), "oom", &arr, &n,
                         NULL, 0)))
        goto fail;
    for (int i = 0; i < n; i++)
        if (!((oom_rec *)arr)[i].oom) {
            st = pp_yaml_error(y, record_at(y, found[PP_PROFILE_SECTION_oom], i, NULL),
                               "oom[%d]: a record of a size that ran out of memory says `oom: true`", i);
            goto fail;
        }
    free(arr);
    *out = pf.p;
    return PP_OK;
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
