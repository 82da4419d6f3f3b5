/* The measurement cache of `plan --probe`. See pp_probe_cache.h. */
#include "pp_probe_cache.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pp_yaml.h"

pp_status pp_probe_cache_path(char *out, size_t n, pp_error *err)
{
    const char *env = getenv("PARPLAN_CACHE");
    if (env && *env) {
        snprintf(out, n, "%s", env);
        return PP_OK;
    }
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && *xdg) {
        snprintf(out, n, "%s/parplan/probe-cache.yaml", xdg);
        return PP_OK;
    }
    const char *home = getenv("HOME");
    if (home && *home) {
        snprintf(out, n, "%s/.cache/parplan/probe-cache.yaml", home);
        return PP_OK;
    }
    return pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0,
                        "no place for the probe cache: set PARPLAN_CACHE (or HOME, XDG_CACHE_HOME)");
}

void pp_probe_cache_free(pp_probe_cache *c)
{
    if (!c) return;
    free(c->e);
    c->e = NULL;
    c->n = c->cap = 0;
}

const pp_probe_cache_entry *pp_probe_cache_get(const pp_probe_cache *c, const char *gpu, const char *key)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->e[i].gpu, gpu) && !strcmp(c->e[i].key, key)) return &c->e[i];
    return NULL;
}

static bool plain_text(const char *s)
{
    for (; *s; s++)
        if (*s == '"' || *s == '\\' || *s == '\n' || *s == '\r' || (unsigned char)*s < 0x20) return false;
    return true;
}

pp_status pp_probe_cache_put(pp_probe_cache *c, const pp_probe_cache_entry *e, pp_error *err)
{
    if (!e->gpu[0] || !e->key[0] || !plain_text(e->gpu) || !plain_text(e->key) || !plain_text(e->note))
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "probe cache: an empty key or one with quotes/newlines");
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->e[i].gpu, e->gpu) && !strcmp(c->e[i].key, e->key)) {
            c->e[i] = *e;
            return PP_OK;
        }
    if (c->n == c->cap) {
        int nc = c->cap ? 2 * c->cap : 32;
        void *p = realloc(c->e, (size_t)nc * sizeof *c->e);
        if (!p) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        c->e = p;
        c->cap = nc;
    }
    c->e[c->n++] = *e;
    return PP_OK;
}

#define NKEYS(t) ((int)(sizeof t / sizeof t[0]))
static const pp_key entry_keys[] = {
    {"gpu", PP_KEY_STR, offsetof(pp_probe_cache_entry, gpu), 0, 0, 0, sizeof(((pp_probe_cache_entry *)0)->gpu), NULL,
     0, true, NULL, 0, 0},
    {"key", PP_KEY_STR, offsetof(pp_probe_cache_entry, key), 0, 0, 0, sizeof(((pp_probe_cache_entry *)0)->key), NULL,
     0, true, NULL, 0, 0},
    {"a", PP_KEY_NUM, offsetof(pp_probe_cache_entry, a), 0, 1e15, 1, 0, NULL, 0, true, NULL, 0, 0},
    {"b", PP_KEY_NUM, offsetof(pp_probe_cache_entry, b), 0, 1e15, 1, 0, NULL, 0, false, NULL, 0, 0},
    {"note", PP_KEY_STR, offsetof(pp_probe_cache_entry, note), 0, 0, 0, sizeof(((pp_probe_cache_entry *)0)->note),
     NULL, 0, false, NULL, 0, 0},
};
typedef struct { int64_t version; } cache_head;
static const pp_key head_keys[] = {
    {"version", PP_KEY_INT, offsetof(cache_head, version), 1, 1, 0, 0, NULL, 0, true, NULL, 0, 0},
    {"entries", PP_KEY_ANY, 0, 0, 0, 0, 0, NULL, 0, false, NULL, 0, 0},
};

pp_status pp_probe_cache_load(pp_probe_cache *c, const char *path, pp_error *err)
{
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", path);
    if (access(path, F_OK) != 0) return PP_OK; /* no cache yet */
    char *text = NULL;
    size_t len = 0;
    pp_yaml y;
    void *arr = NULL;
    int n = 0;
    pp_status st = pp_yaml_read_file(path, &text, &len, err);
    if (st) return st;
    if ((st = pp_yaml_load(&y, text, len, path, err))) goto done_text;
    cache_head h;
    yaml_node_t *found[NKEYS(head_keys)];
    if ((st = pp_yaml_map(&y, pp_yaml_root(&y), head_keys, NKEYS(head_keys), &h, 0, found, "probe cache"))) goto done;
    if (found[1] && (st = pp_yaml_seq(&y, found[1], entry_keys, NKEYS(entry_keys), sizeof(pp_probe_cache_entry), &arr,
                                      &n, "entries")))
        goto done;
    for (int i = 0; i < n; i++)
        if ((st = pp_probe_cache_put(c, (pp_probe_cache_entry *)arr + i, err))) goto done;
done:
    free(arr);
    pp_yaml_free(&y);
done_text:
    free(text);
    if (st) pp_probe_cache_free(c);
    return st;
}

/* mkdir -p of the directory holding path */
static pp_status make_parent(const char *path, pp_error *err)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return PP_OK;
    *slash = 0;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(dir, 0777) != 0 && errno != EEXIST)
            return pp_error_set(err, PP_ERR_RUNTIME, dir, 0, 0, "cannot create the cache directory: %s", strerror(errno));
        *p = '/';
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return pp_error_set(err, PP_ERR_RUNTIME, dir, 0, 0, "cannot create the cache directory: %s", strerror(errno));
    return PP_OK;
}

pp_status pp_probe_cache_save(pp_probe_cache *c, pp_error *err)
{
    pp_status st;
    /* entries another process saved since we loaded: keep them, ours win */
    pp_probe_cache disk;
    pp_error e2 = {0};
    if (pp_probe_cache_load(&disk, c->path, &e2) == PP_OK) {
        for (int i = 0; i < disk.n; i++)
            if (!pp_probe_cache_get(c, disk.e[i].gpu, disk.e[i].key) && (st = pp_probe_cache_put(c, &disk.e[i], err))) {
                pp_probe_cache_free(&disk);
                return st;
            }
        pp_probe_cache_free(&disk);
    }
    if ((st = make_parent(c->path, err))) return st;
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", c->path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return pp_error_set(err, PP_ERR_RUNTIME, tmp, 0, 0, "cannot write the probe cache: %s", strerror(errno));
    fprintf(f, "# parplan probe cache: measurements of `plan --probe` on the local GPUs, keyed by GPU and shape.\n"
               "# Safe to delete (they are measured again).\nversion: 1\nentries:%s\n",
            c->n ? "" : " []");
    for (int i = 0; i < c->n; i++) {
        const pp_probe_cache_entry *e = &c->e[i];
        fprintf(f, "  - {gpu: \"%s\", key: \"%s\", a: %.9g, b: %.9g, note: \"%s\"}\n", e->gpu, e->key, e->a, e->b,
                e->note);
    }
    if (fflush(f) || fsync(fileno(f)) || ferror(f)) {
        fclose(f);
        remove(tmp);
        return pp_error_set(err, PP_ERR_RUNTIME, tmp, 0, 0, "cannot write the probe cache: %s", strerror(errno));
    }
    if (fclose(f) || rename(tmp, c->path)) {
        remove(tmp);
        return pp_error_set(err, PP_ERR_RUNTIME, c->path, 0, 0, "cannot write the probe cache: %s", strerror(errno));
    }
    return PP_OK;
}

void pp_probe_cache_layer_key_ffn(const pp_work *w, const pp_layout *l, int64_t ffn, char *buf, size_t n)
{
    const pp_model *m = &w->model;
    int k = snprintf(buf, n, "layer h%lld a%lld g%lld f%lld s%lld b%lld t%lld %s %s", (long long)m->hidden,
                     (long long)m->heads, (long long)m->kv_heads, (long long)ffn, (long long)m->seq, (long long)l->mbs,
                     (long long)l->tp, ffn > 0 ? pp_act_names[m->act] : "none", pp_attention_names[w->attention]);
    /* a head size other than hidden / heads (Qwen3), named: the keys of the usual shapes stay */
    if (m->head_dim * m->heads != m->hidden && k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, " d%lld", (long long)m->head_dim);
}

void pp_probe_cache_layer_key(const pp_work *w, const pp_layout *l, char *buf, size_t n)
{
    pp_probe_cache_layer_key_ffn(w, l, w->model.ffn, buf, n);
}

/* ------------------------------------------------------------------ MoE and MLA shapes */

/* The moe probe's limits (probes/main.c check_moe): 16-byte rows, at least 16 tokens, every expert
 * some token copies. */
bool pp_probe_moe_shape_of(const pp_work *w, const pp_layout *l, pp_probe_moe_shape *s, char *why, size_t n)
{
    const pp_model *m = &w->model;
    memset(s, 0, sizeof *s);
    if (!pp_model_is_moe(m)) return snprintf(why, n, "no MoE layers"), false;
    if (m->act != PP_ACT_SWIGLU) return snprintf(why, n, "%s experts (the moe probe runs SwiGLU)", pp_act_names[m->act]), false;
    const int64_t tp = l->tp > 0 ? l->tp : 1, cp = l->cp > 0 ? l->cp : 1, ep = l->ep > 0 ? l->ep : 1;
    const int64_t etp = pp_layout_etp(l), fe = pp_model_expert_ffn(m);
    const int64_t T = l->mbs * m->seq / cp;
    if (l->mbs * m->seq % cp) return snprintf(why, n, "sequence does not split over cp %lld", (long long)cp), false;
    if (fe % etp) return snprintf(why, n, "expert FFN %lld does not split over etp %lld", (long long)fe, (long long)etp), false;
    if (m->experts % ep) return snprintf(why, n, "%lld experts over ep %lld", (long long)m->experts, (long long)ep), false;
    int64_t Tl = T;
    if (l->sp && tp > 1) {
        if (T % tp) return snprintf(why, n, "tokens do not split over tp %lld", (long long)tp), false;
        Tl = T / tp;
    }
    double imb = w->stack.moe_capacity_factor > 0 ? w->stack.moe_capacity_factor
                 : w->stack.moe_imbalance > 1.0  ? w->stack.moe_imbalance
                                                 : 1.0;
    s->hidden = m->hidden;
    s->experts = m->experts;
    s->topk = m->topk > 0 ? m->topk : 1;
    s->moe_ffn = fe / etp;
    s->tokens = (int64_t)llround((double)(Tl * etp) * imb);
    s->ep = ep;
    s->grouped = w->stack.grouped_gemm;
    if (m->shared_ffn > 0) {
        if (s->tokens == T && m->shared_ffn % tp == 0) s->shared_ffn = m->shared_ffn / tp;
        else s->shared_modelled = true;
    }
    if (s->hidden % 8 || s->moe_ffn % 8 || s->shared_ffn % 8)
        return snprintf(why, n, "hidden or expert FFN shard not a multiple of 8"), false;
    if (s->topk > s->experts) return snprintf(why, n, "top-k above the experts"), false;
    if (s->tokens < 16 || s->tokens * s->topk < s->experts)
        return snprintf(why, n, "%lld tokens per rank leave experts without tokens", (long long)s->tokens), false;
    return true;
}

void pp_probe_cache_moe_key(const pp_probe_moe_shape *s, char *buf, size_t n)
{
    snprintf(buf, n, "moe h%lld e%lld k%lld f%lld s%lld T%lld ep%lld %s", (long long)s->hidden, (long long)s->experts,
             (long long)s->topk, (long long)s->moe_ffn, (long long)s->shared_ffn, (long long)s->tokens,
             (long long)s->ep, s->grouped ? "grouped" : "loop");
}

/* The mla probe's limits (probes/main.c check_mla): heads split evenly, 16-byte rows. */
bool pp_probe_mla_shape_of(const pp_work *w, const pp_layout *l, pp_probe_mla_shape *s, char *why, size_t n)
{
    const pp_model *m = &w->model;
    memset(s, 0, sizeof *s);
    if (!pp_model_is_mla(m)) return snprintf(why, n, "no latent attention"), false;
    if (l->cp > 1) return snprintf(why, n, "context-parallel layer"), false;
    *s = (pp_probe_mla_shape){m->hidden, m->heads, m->q_lora_rank, m->kv_lora_rank, m->qk_nope_dim, m->qk_rope_dim,
                              pp_model_v_head_dim(m), m->seq, l->mbs, l->tp};
    if (m->heads % l->tp) return snprintf(why, n, "%lld heads over tp %lld", (long long)m->heads, (long long)l->tp), false;
    if (s->hidden % 8 || s->q_lora_rank % 8 || s->kv_lora_rank % 8 || s->qk_nope_dim % 8 || s->qk_rope_dim % 8 ||
        s->v_head_dim % 8)
        return snprintf(why, n, "latent ranks or head dims not multiples of 8"), false;
    return true;
}

void pp_probe_cache_mla_key(const pp_work *w, const pp_probe_mla_shape *s, char *buf, size_t n)
{
    snprintf(buf, n, "mla h%lld a%lld q%lld c%lld n%lld r%lld v%lld s%lld b%lld t%lld %s", (long long)s->hidden,
             (long long)s->heads, (long long)s->q_lora_rank, (long long)s->kv_lora_rank, (long long)s->qk_nope_dim,
             (long long)s->qk_rope_dim, (long long)s->v_head_dim, (long long)s->seq, (long long)s->mbs,
             (long long)s->tp, pp_attention_names[w->attention]);
}

pp_status pp_probe_cache_optimizer_rows(const pp_probe_cache *c, const char *gpu, pp_prof_optimizer **rows, int *n,
                                        pp_error *err)
{
    *n = 0;
    *rows = calloc((size_t)c->n + 1, sizeof **rows);
    if (!*rows) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (int i = 0; i < c->n; i++) {
        const pp_probe_cache_entry *e = &c->e[i];
        double params;
        if (strcmp(e->gpu, gpu) || sscanf(e->key, "optimizer p%lf", &params) != 1 || !(e->a > 0)) continue;
        (*rows)[(*n)++] = (pp_prof_optimizer){.params = params, .bytes_per_param = e->b, .ms = e->a,
                                              .gbs = e->b * params / (e->a * 1e-3) / 1e9};
    }
    return PP_OK;
}
