/* GPU prices per hour (pp_prices.h): a prices file (examples/prices.yaml) read through libyaml's
 * document API and key tables as the model and GPU files are (unknown keys, wrong types and
 * values are errors at file:line:col), or --price-per-gpu-hour's SPEC. */
#include "pp_prices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_yaml.h"

typedef struct {
    char date[64], source[1024], currency[16];
    bool example;
} prices_file;

static const pp_key top_keys[] = {
    PP_KSTR(prices_file, "date", date, true),
    PP_KSTR(prices_file, "source", source, true),
    PP_KBOOL(prices_file, "example", example, true),
    PP_KSTR(prices_file, "currency", currency, false),
    {"prices", PP_KEY_ANY, 0, 0, 0, 0, 0, NULL, 0, true, NULL, 0, 0},
};
#define N_TOP ((int)(sizeof top_keys / sizeof top_keys[0]))

static pp_status prices_add(pp_prices *p, const char *gpu, double v, pp_error *err, const char *where)
{
    if (!(v > 0) || v > 1e6)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s: price of '%s' must be above 0 and at most 1e6, got %g",
                            where, gpu, v);
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->gpu[i], gpu))
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s: '%s' is priced twice", where, gpu);
    if (p->n >= PP_PRICES_MAX)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s: more than %d prices", where, PP_PRICES_MAX);
    if (!gpu[0] || strlen(gpu) >= sizeof p->gpu[0])
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s: a GPU name of 1 to %zu characters, got '%s'", where,
                            sizeof p->gpu[0] - 1, gpu);
    snprintf(p->gpu[p->n], sizeof p->gpu[0], "%s", gpu);
    p->per_gpu_hour[p->n++] = v;
    return PP_OK;
}

pp_status pp_prices_load_string(pp_prices *p, const char *text, size_t len, const char *path, pp_error *err)
{
    memset(p, 0, sizeof *p);
    prices_file f;
    memset(&f, 0, sizeof f);
    pp_yaml y;
    pp_status st = pp_yaml_load(&y, text, len, path, err);
    if (st) return st;
    yaml_node_t *root = pp_yaml_root(&y);
    yaml_node_t *found[N_TOP];
    if ((st = pp_yaml_map(&y, root, top_keys, N_TOP, &f, 0, found, "prices"))) goto done;
    yaml_node_t *map = found[N_TOP - 1];
    if (map->type != YAML_MAPPING_NODE) {
        st = pp_yaml_error(&y, map, "prices: 'prices' is %s, expected a mapping of GPU: price per GPU-hour",
                           pp_yaml_node_kind(map));
        goto done;
    }
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = yaml_document_get_node(&y.doc, pr->key), *v = yaml_document_get_node(&y.doc, pr->value);
        double d;
        if (!k || !v || k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE ||
            !pp_yaml_parse_double((const char *)v->data.scalar.value, &d)) {
            st = pp_yaml_error(&y, v ? v : map, "prices: each entry is GPU: price per GPU-hour (a number)");
            goto done;
        }
        pp_error e2 = {0};
        if (prices_add(p, (const char *)k->data.scalar.value, d, &e2, "prices") != PP_OK) {
            st = pp_yaml_error(&y, v, "%s", e2.msg);
            goto done;
        }
    }
    if (!p->n) {
        st = pp_yaml_error(&y, map, "prices: no price given");
        goto done;
    }
    snprintf(p->path, sizeof p->path, "%s", path);
    snprintf(p->date, sizeof p->date, "%s", f.date);
    snprintf(p->source, sizeof p->source, "%s", f.source);
    snprintf(p->currency, sizeof p->currency, "%s", f.currency[0] ? f.currency : "USD");
    p->example = f.example;
done:
    pp_yaml_free(&y);
    return st;
}

pp_status pp_prices_load_file(pp_prices *p, const char *path, pp_error *err)
{
    char *text;
    size_t len;
    memset(p, 0, sizeof *p);
    pp_status st = pp_yaml_read_file(path, &text, &len, err);
    if (st) return st;
    st = pp_prices_load_string(p, text, len, path, err);
    free(text);
    return st;
}

pp_status pp_prices_parse_spec(pp_prices *p, const char *spec, pp_error *err)
{
    memset(p, 0, sizeof *p);
    snprintf(p->currency, sizeof p->currency, "%s", "USD");
    snprintf(p->source, sizeof p->source, "%s", "--price-per-gpu-hour");
    double one;
    if (pp_yaml_parse_double(spec, &one)) return prices_add(p, "*", one, err, "--price-per-gpu-hour");
    char buf[2048];
    if (strlen(spec) >= sizeof buf)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--price-per-gpu-hour: too long");
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        double v;
        if (!eq || eq == t || !pp_yaml_parse_double(eq + 1, &v))
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                                "--price-per-gpu-hour expects P (every GPU) or GPU=P,GPU=P, got '%s'", t);
        *eq = 0;
        pp_status st = prices_add(p, t, v, err, "--price-per-gpu-hour");
        if (st) return st;
    }
    if (!p->n) return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--price-per-gpu-hour: no price given");
    return PP_OK;
}

double pp_prices_get(const pp_prices *p, const char *gpu)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->gpu[i], gpu)) return p->per_gpu_hour[i];
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->gpu[i], "*")) return p->per_gpu_hour[i];
    return -1;
}
