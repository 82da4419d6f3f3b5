/* The keys of a Hugging Face config.json that parplan reads (see hf_config.c): the key table built
 * from the HF_KEYS list of hf_keys.h, reading a mapping through it, and the two ways a
 * key's value fails or is taken (an error at the key's file:line:col; the first of a key's
 * spellings, the others agreeing). The families' readers, in hf_config.c and
 * hf_config_layers.c, read every key through these.
 */
#include "hf_keys.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define HSTR(k, f) {k, PP_KEY_STR, offsetof(pp_hf_cfg, f), 0, 0, 0, sizeof(((pp_hf_cfg *)0)->f), NULL, 0, false, NULL, 0, 0}
#define HSTRSEQ(k, f) {k, PP_KEY_STRSEQ, offsetof(pp_hf_cfg, f), 0, 0, 0, sizeof(((pp_hf_cfg *)0)->f), NULL, 0, false, NULL, 0, 0}
#define HINT(k, lo) {#k, PP_KEY_INT, offsetof(pp_hf_cfg, k), lo, 1e9, 0, 0, NULL, 0, false, NULL, 0, 0}
#define HNUM(k) {#k, PP_KEY_NUM, offsetof(pp_hf_cfg, k), 0, 1e9, 1, 0, NULL, 0, false, NULL, 0, 0}
/* A probability: [0, 1) (the schema's own bound for attention_dropout, hidden_dropout). */
#define HDROP(k) {#k, PP_KEY_NUM, offsetof(pp_hf_cfg, k), 0, 0.999, 1, 0, NULL, 0, false, NULL, 0, 0}
#define HBOOL(k) {#k, PP_KEY_BOOL, offsetof(pp_hf_cfg, k), 0, 0, 0, 0, NULL, 0, false, NULL, 0, 0}
#define HSEQ(k, hi, cap) {#k, PP_KEY_INTSEQ, offsetof(pp_hf_cfg, k), 0, hi, 0, cap, NULL, 0, false, NULL, 0, offsetof(pp_hf_cfg, n_##k)}
#define HANY(k) {#k, PP_KEY_ANY, 0, 0, 0, 0, 0, NULL, 0, false, NULL, 0, 0} /* read from its node */
#define HRS(k, f, t, hi) {k, t, offsetof(pp_hf_cfg, f), 0, hi, 1, t == PP_KEY_STR ? sizeof(((pp_hf_cfg *)0)->f) : 0, NULL, 0, false, NULL, 0, 0}

#define HMAP(k, sub) {#k, PP_KEY_MAP, 0, 0, 0, 0, 0, NULL, 0, false, sub, (int)(sizeof sub / sizeof sub[0]), 0}

/* rope_scaling's keys (transformers modeling_rope_utils.py: "type" is the older spelling). */
static const pp_key hf_rope_keys[] = {
    HRS("type", rs_type, PP_KEY_STR, 0), HRS("rope_type", rs_rope_type, PP_KEY_STR, 0),
    HRS("factor", rs_factor, PP_KEY_NUM, 1e6), HRS("original_max_position_embeddings", rs_original, PP_KEY_INT, 1e9),
    HRS("low_freq_factor", rs_low, PP_KEY_NUM, 1e6), HRS("high_freq_factor", rs_high, PP_KEY_NUM, 1e6),
    HRS("beta_fast", rs_beta_fast, PP_KEY_NUM, 1e6), HRS("beta_slow", rs_beta_slow, PP_KEY_NUM, 1e6),
    HRS("mscale", rs_mscale, PP_KEY_NUM, 1e6), HRS("mscale_all_dim", rs_mscale_all_dim, PP_KEY_NUM, 1e6),
    HRS("truncate", rs_truncate, PP_KEY_BOOL, 0),
};

/* The HF_KEYS list (hf_keys.h) as a key table. */
#define HF_KEY_DEF(id, def) def,
const pp_key pp_hf_keys[H_COUNT] = {HF_KEYS(HF_KEY_DEF)};
_Static_assert(H_COUNT <= PP_YAML_MAX_KEYS, "pp_hf_keys is longer than a key table may be");

/* An error about the value of key id (at its value node). */
pp_status pp_hf_fail(const pp_hf_ctx *h, int id, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pp_yaml_error(h->y, h->found[id] ? h->found[id] : h->root, "key '%s': %s", pp_hf_keys[id].key, msg);
}

/* The first of the alias keys given (hidden_size | n_embd | n_embed). Aliases given together
 * must agree (num_experts_per_tok and gpt-oss's experts_per_token). A required key that is
 * absent is an error at the mapping; one that is null, an error at the null. */
pp_status pp_hf_int(const pp_hf_ctx *h, const int *ids, int n, bool required, int64_t *out)
{
    int first = -1;
    for (int i = 0; i < n; i++) {
        if (!pp_hf_has(h, ids[i])) continue;
        if (first < 0) {
            first = ids[i];
            *out = pp_hf_i64(h, first);
        } else if (pp_hf_i64(h, ids[i]) != *out) {
            return pp_hf_fail(h, ids[i], "%lld disagrees with '%s' %lld", (long long)pp_hf_i64(h, ids[i]),
                              pp_hf_keys[first].key, (long long)*out);
        }
    }
    if (first >= 0 || !required) return PP_OK;
    char names[200] = "";
    for (int i = 0; i < n; i++) {
        yaml_node_t *v = pp_yaml_lookup(h->y, h->root, pp_hf_keys[ids[i]].key, false);
        if (v && pp_yaml_is_null(v))
            return pp_yaml_error(h->y, v, "key '%s': null where a number is needed (model_type '%s')",
                                 pp_hf_keys[ids[i]].key, h->type);
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s'%s'", i ? " or " : "", pp_hf_keys[ids[i]].key);
    }
    return pp_yaml_error(h->y, h->root, "config.json (model_type '%s'): missing required key %s",
                         h->type, names);
}

pp_status pp_hf_read(pp_yaml *y, yaml_node_t *map, pp_hf_cfg *c, pp_hf_ctx *h, const char *what)
{
    memset(c, 0, sizeof *c);
    h->y = y;
    h->root = map;
    h->c = c;
    return pp_yaml_map(y, map, pp_hf_keys, H_COUNT, c, PP_YAML_IGNORE_UNKNOWN | PP_YAML_NULL_ABSENT,
                       h->found, what);
}
