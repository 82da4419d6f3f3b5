/* The YAML machinery every loader uses (pp_yaml.h): libyaml's document API behind a pre-pass that
 * bounds nesting and node counts and refuses aliases and multiple documents, key tables (one row
 * per key: type, field offset, range) and errors at file:line:col. JSON is a subset of YAML 1.2,
 * so config.json files take the same path. */
#include "pp_yaml.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ================================================================== YAML machinery */

pp_status pp_yaml_read_file(const char *path, char **text, size_t *len, pp_error *err)
{
    *text = NULL;
    *len = 0;
    pp_status st = PP_OK;
    char *buf = NULL;
    FILE *f = NULL;
    /* O_NONBLOCK: opening a FIFO (or a device) must not wait for a writer; only regular files
     * are read, and the flag is cleared before reading. */
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) {
        st = pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "cannot open: %s", strerror(errno));
        goto done;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        st = pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "not a regular file");
        goto done;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl != -1) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        st = pp_error_set(err, PP_ERR_RUNTIME, path, 0, 0, "cannot open: %s", strerror(errno));
        goto done;
    }
    if (sb.st_size > PP_YAML_MAX_BYTES) {
        st = pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "file is larger than %d bytes",
                          PP_YAML_MAX_BYTES);
        goto done;
    }
    buf = malloc((size_t)sb.st_size + 1);
    if (!buf) {
        st = pp_error_set(err, PP_ERR_NOMEM, path, 0, 0, "out of memory");
        goto done;
    }
    size_t n = fread(buf, 1, (size_t)sb.st_size, f);
    if (ferror(f)) {
        st = pp_error_set(err, PP_ERR_RUNTIME, path, 0, 0, "read error: %s", strerror(errno));
        goto done;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    buf = NULL;
done:
    free(buf);
    if (f) fclose(f);
    return st;
}

static pp_status yaml_error_at(pp_yaml *y, yaml_mark_t mark, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static pp_status yaml_error_at(pp_yaml *y, yaml_mark_t mark, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pp_error_set(y->err, PP_ERR_INPUT, y->path, (int)mark.line + 1, (int)mark.column + 1,
                        "%s", msg);
}

pp_status pp_yaml_error(pp_yaml *y, const yaml_node_t *node, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    yaml_mark_t mark = {0, 0, 0};
    if (node) mark = node->start_mark;
    return pp_error_set(y->err, PP_ERR_INPUT, y->path, (int)mark.line + 1, (int)mark.column + 1,
                        "%s", msg);
}

/* libyaml's own error: reader errors carry a byte offset, the others a mark. */
static pp_status yaml_parser_fail(pp_yaml *y, const yaml_parser_t *p, const char *text, size_t len)
{
    yaml_mark_t mark = p->problem_mark;
    if (p->error == YAML_READER_ERROR) {
        mark.line = mark.column = 0;
        for (size_t i = 0; i < p->problem_offset && i < len; i++) {
            if (text[i] == '\n') {
                mark.line++;
                mark.column = 0;
            } else {
                mark.column++;
            }
        }
    }
    if (p->error == YAML_MEMORY_ERROR)
        return pp_error_set(y->err, PP_ERR_NOMEM, y->path, 0, 0, "out of memory parsing YAML");
    const char *problem = p->problem ? p->problem : "malformed YAML";
    /* A Hugging Face config.json is read by this same parser (JSON is YAML's flow style); say
     * what is wrong in JSON's words, not libyaml's: a file cut short is the usual fault. */
    size_t first = 0;
    while (first < len && isspace((unsigned char)text[first])) first++;
    if (first < len && (text[first] == '{' || text[first] == '[')) {
        size_t end = len;
        while (end > first && isspace((unsigned char)text[end - 1])) end--;
        if (p->problem_mark.index >= end || strstr(problem, "end of stream"))
            return yaml_error_at(y, mark, "invalid JSON: unexpected end of file (the file is cut short: "
                                          "an object, array or string is not closed)");
        static const struct { const char *yaml, *json; } words[] = {
            {"did not find expected ',' or '}'", "expected ',' or '}' after an object member"},
            {"did not find expected ',' or ']'", "expected ',' or ']' after an array element"},
            {"did not find expected node content", "expected a value"},
            {"found unknown escape character", "invalid escape in a string"},
            {"did not find expected key", "expected a member name"},
        };
        for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
            if (!strcmp(problem, words[i].yaml)) return yaml_error_at(y, mark, "invalid JSON: %s", words[i].json);
        return yaml_error_at(y, mark, "invalid JSON: %s", problem);
    }
    if (p->context)
        return yaml_error_at(y, mark, "invalid YAML: %s %s", p->context, problem);
    return yaml_error_at(y, mark, "invalid YAML: %s", problem);
}

/* Walk the events once: bound depth and size, refuse aliases and extra documents. */
static pp_status yaml_prescan(pp_yaml *y, const char *text, size_t len)
{
    yaml_parser_t p;
    pp_status st = PP_OK;
    if (!yaml_parser_initialize(&p))
        return pp_error_set(y->err, PP_ERR_NOMEM, y->path, 0, 0, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int depth = 0, docs = 0;
    long nodes = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            st = yaml_parser_fail(y, &p, text, len);
            break;
        }
        yaml_event_type_t type = ev.type;
        yaml_mark_t mark = ev.start_mark;
        yaml_event_delete(&ev);
        if (type == YAML_STREAM_END_EVENT) break;
        if (type == YAML_DOCUMENT_START_EVENT && ++docs > 1) {
            st = yaml_error_at(y, mark, "more than one YAML document in the file");
            break;
        }
        if (type == YAML_ALIAS_EVENT) {
            st = yaml_error_at(y, mark, "YAML aliases (*name) are not supported");
            break;
        }
        if (++nodes > PP_YAML_MAX_NODES) {
            st = yaml_error_at(y, mark, "document has more than %d nodes", PP_YAML_MAX_NODES);
            break;
        }
        if (type == YAML_MAPPING_START_EVENT || type == YAML_SEQUENCE_START_EVENT) {
            if (++depth > PP_YAML_MAX_DEPTH) {
                st = yaml_error_at(y, mark, "nesting deeper than %d levels", PP_YAML_MAX_DEPTH);
                break;
            }
        } else if (type == YAML_MAPPING_END_EVENT || type == YAML_SEQUENCE_END_EVENT) {
            depth--;
        }
    }
    yaml_parser_delete(&p);
    return st;
}

pp_status pp_yaml_load(pp_yaml *y, const char *text, size_t len, const char *path, pp_error *err)
{
    memset(y, 0, sizeof *y);
    y->path = path ? path : "<string>";
    y->err = err;
    if (len > PP_YAML_MAX_BYTES)
        return pp_error_set(err, PP_ERR_INPUT, y->path, 0, 0, "input is larger than %d bytes",
                            PP_YAML_MAX_BYTES);
    pp_status st = yaml_prescan(y, text, len);
    if (st != PP_OK) return st;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return pp_error_set(err, PP_ERR_NOMEM, y->path, 0, 0, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    if (!yaml_parser_load(&p, &y->doc)) {
        st = yaml_parser_fail(y, &p, text, len);
        yaml_parser_delete(&p);
        return st;
    }
    yaml_parser_delete(&p);
    y->loaded = true;
    yaml_node_t *root = yaml_document_get_root_node(&y->doc);
    if (!root) {
        yaml_mark_t start = {0, 0, 0};
        st = yaml_error_at(y, start, "empty document: expected a mapping of keys");
    } else if (root->type != YAML_MAPPING_NODE) {
        st = pp_yaml_error(y, root, "expected a mapping of keys at the top level, got a %s",
                           root->type == YAML_SEQUENCE_NODE ? "sequence" : "scalar");
    }
    if (st != PP_OK) pp_yaml_free(y);
    return st;
}

void pp_yaml_free(pp_yaml *y)
{
    if (y && y->loaded) {
        yaml_document_delete(&y->doc);
        y->loaded = false;
    }
}

yaml_node_t *pp_yaml_root(pp_yaml *y) { return y->loaded ? yaml_document_get_root_node(&y->doc) : NULL; }

const char *pp_yaml_node_kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a sequence";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

static const char *scalar_str(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }
static bool scalar_plain(const yaml_node_t *n) { return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE; }
const char *pp_yaml_scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

bool pp_yaml_is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || !scalar_plain(n)) return false;
    const char *s = scalar_str(n);
    return !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL") || !strcmp(s, "~") ||
           !s[0];
}

/* Explicit tags other than the YAML core ones (!foo, !!binary) are refused. */
static bool tag_ok(const yaml_node_t *n)
{
    const char *tag = (const char *)n->tag;
    if (!tag) return true;
    static const char *const ok[] = {YAML_STR_TAG, YAML_INT_TAG, YAML_FLOAT_TAG, YAML_BOOL_TAG,
                                     YAML_NULL_TAG, YAML_SEQ_TAG, YAML_MAP_TAG};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!strcmp(tag, ok[i])) return true;
    return false;
}

/* A printable excerpt of a scalar for messages. */
static const char *excerpt(const char *s, char *buf, size_t n)
{
    size_t j = 0;
    for (size_t i = 0; s[i] && j + 4 < n; i++)
        buf[j++] = isprint((unsigned char)s[i]) ? s[i] : '?';
    if (s[j] && j + 4 >= n) {
        buf[j++] = '.';
        buf[j++] = '.';
        buf[j++] = '.';
    }
    buf[j] = '\0';
    return buf;
}

/* Strict decimal number: no junk, no hex, no NaN/inf, no overflow. */
bool pp_yaml_parse_double(const char *s, double *out)
{
    if (!s || !*s || isspace((unsigned char)*s)) return false;
    for (const char *p = s; *p; p++)
        if (!strchr("0123456789+-.eE", *p)) return false;
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(v)) return false;
    *out = v;
    return true;
}

static pp_status key_number(pp_yaml *y, const yaml_node_t *v, const pp_key *k, double *out)
{
    char ex[48];
    if (v->type != YAML_SCALAR_NODE)
        return pp_yaml_error(y, v, "key '%s': expected a number, got %s", k->key, pp_yaml_node_kind(v));
    const char *s = scalar_str(v);
    if (!scalar_plain(v))
        return pp_yaml_error(y, v, "key '%s': expected a number, got the string \"%s\"", k->key,
                             excerpt(s, ex, sizeof ex));
    double d;
    if (!pp_yaml_parse_double(s, &d))
        return pp_yaml_error(y, v, "key '%s': '%s' is not a finite decimal number", k->key,
                             excerpt(s, ex, sizeof ex));
    if (k->type == PP_KEY_INT && fabs(d) > 9007199254740992.0)
        return pp_yaml_error(y, v, "key '%s': %s is out of range (%.10g to %.10g)", k->key,
                             excerpt(s, ex, sizeof ex), k->min, k->max);
    if (k->type == PP_KEY_INT) {
        /* Integers: digits, or an exactly integral float such as 1e9 (below 2^53). */
        if (d != floor(d))
            return pp_yaml_error(y, v, "key '%s': expected an integer, got '%s'", k->key,
                                 excerpt(s, ex, sizeof ex));
        if (!strpbrk(s, ".eE")) {
            errno = 0;
            char *end;
            long long ll = strtoll(s, &end, 10);
            if (errno == ERANGE || *end)
                return pp_yaml_error(y, v, "key '%s': integer '%s' is out of range", k->key,
                                     excerpt(s, ex, sizeof ex));
            d = (double)ll;
        }
    }
    if (d < k->min || d > k->max)
        return pp_yaml_error(y, v, "key '%s': %s is out of range (%.10g to %.10g)", k->key,
                             excerpt(s, ex, sizeof ex), k->min, k->max);
    *out = d;
    return PP_OK;
}

static pp_status key_string(pp_yaml *y, const yaml_node_t *v, const pp_key *k, const char **out)
{
    if (v->type != YAML_SCALAR_NODE)
        return pp_yaml_error(y, v, "key '%s': expected a string, got %s", k->key, pp_yaml_node_kind(v));
    const char *s = scalar_str(v);
    if (pp_yaml_is_null(v))
        return pp_yaml_error(y, v, "key '%s': expected a string, got null", k->key);
    if (strlen(s) != v->data.scalar.length)
        return pp_yaml_error(y, v, "key '%s': string contains a NUL character", k->key);
    *out = s;
    return PP_OK;
}

static pp_status key_store(pp_yaml *y, yaml_node_t *v, const pp_key *k, void *obj, unsigned flags)
{
    char *field = (char *)obj + k->off;
    char ex[48];
    pp_status st;
    if (!tag_ok(v)) return pp_yaml_error(y, v, "key '%s': unsupported tag '%s'", k->key, (const char *)v->tag);
    switch (k->type) {
    case PP_KEY_INT:
    case PP_KEY_NUM: {
        double d = 0;
        if ((st = key_number(y, v, k, &d))) return st;
        if (k->type == PP_KEY_INT)
            *(int64_t *)field = (int64_t)d;
        else
            *(double *)field = d * (k->scale != 0 ? k->scale : 1.0);
        return PP_OK;
    }
    case PP_KEY_BOOL: {
        if (v->type != YAML_SCALAR_NODE)
            return pp_yaml_error(y, v, "key '%s': expected true or false, got %s", k->key, pp_yaml_node_kind(v));
        const char *s = scalar_str(v);
        bool t = !strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE");
        bool f = !strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE");
        if (!scalar_plain(v) || (!t && !f))
            return pp_yaml_error(y, v, "key '%s': expected true or false, got '%s'", k->key,
                                 excerpt(s, ex, sizeof ex));
        *(bool *)field = t;
        return PP_OK;
    }
    case PP_KEY_STR: {
        const char *s;
        if ((st = key_string(y, v, k, &s))) return st;
        if (strlen(s) >= k->size)
            return pp_yaml_error(y, v, "key '%s': string longer than %zu characters", k->key, k->size - 1);
        memcpy(field, s, strlen(s) + 1);
        return PP_OK;
    }
    case PP_KEY_ENUM: {
        const char *s;
        if ((st = key_string(y, v, k, &s))) return st;
        int i = pp_name_lookup(k->names, k->n_names, s);
        if (i < 0) {
            char allowed[256] = "";
            for (int j = 0; j < k->n_names; j++) {
                size_t used = strlen(allowed);
                snprintf(allowed + used, sizeof allowed - used, "%s%s", j ? "|" : "", k->names[j]);
            }
            return pp_yaml_error(y, v, "key '%s': '%s' is not one of %s", k->key,
                                 excerpt(s, ex, sizeof ex), allowed);
        }
        *(int *)field = i;
        return PP_OK;
    }
    case PP_KEY_MAP:
        if (v->type != YAML_MAPPING_NODE)
            return pp_yaml_error(y, v, "key '%s': expected a mapping, got %s", k->key, pp_yaml_node_kind(v));
        return pp_yaml_map(y, v, k->sub, k->n_sub, obj, flags, NULL, k->key);
    case PP_KEY_STRSEQ: {
        if (v->type != YAML_SEQUENCE_NODE)
            return pp_yaml_error(y, v, "key '%s': expected a sequence of strings, got %s", k->key,
                                 pp_yaml_node_kind(v));
        field[0] = '\0';
        bool first = true;
        for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
            yaml_node_t *e = yaml_document_get_node(&y->doc, *it);
            if (!e) return pp_yaml_error(y, v, "key '%s': broken sequence", k->key);
            const char *s;
            if ((st = key_string(y, e, k, &s))) return st;
            if (first) snprintf(field, k->size, "%s", s);
            first = false;
        }
        return PP_OK;
    }
    case PP_KEY_ANY:
        return PP_OK;
    case PP_KEY_INTSEQ: {
        if (v->type != YAML_SEQUENCE_NODE)
            return pp_yaml_error(y, v, "key '%s': expected a sequence of integers, got %s", k->key,
                                 pp_yaml_node_kind(v));
        int64_t *arr = (int64_t *)field, *count = (int64_t *)((char *)obj + k->off2);
        *count = 0;
        pp_key elem = *k;
        elem.type = PP_KEY_INT;
        for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
            yaml_node_t *e = yaml_document_get_node(&y->doc, *it);
            if (!e) return pp_yaml_error(y, v, "key '%s': broken sequence", k->key);
            if ((size_t)*count >= k->size)
                return pp_yaml_error(y, e, "key '%s': more than %zu entries", k->key, k->size);
            double d;
            if ((st = key_number(y, e, &elem, &d))) return st;
            arr[(*count)++] = (int64_t)d;
        }
        return PP_OK;
    }
    }
    return pp_yaml_error(y, v, "key '%s': internal error (key type)", k->key);
}

pp_status pp_yaml_map(pp_yaml *y, yaml_node_t *map, const pp_key *tbl, int n, void *obj,
                      unsigned flags, yaml_node_t **found, const char *what)
{
    yaml_node_t *seen[PP_YAML_MAX_KEYS] = {0};
    if (n > PP_YAML_MAX_KEYS) return pp_error_set(y->err, PP_ERR_RUNTIME, y->path, 0, 0, "key table too large");
    if (!map || map->type != YAML_MAPPING_NODE)
        return pp_yaml_error(y, map, "%s: expected a mapping, got %s", what, map ? pp_yaml_node_kind(map) : "nothing");
    yaml_node_pair_t *start = map->data.mapping.pairs.start, *top = map->data.mapping.pairs.top;
    pp_status st;
    /* The duplicate check below is quadratic: real files have tens of keys (HF configs ~50). */
    if (top - start > PP_YAML_MAX_PAIRS)
        return pp_yaml_error(y, map, "%s: more than %d keys in one mapping", what, PP_YAML_MAX_PAIRS);
    for (yaml_node_pair_t *pr = start; pr < top; pr++) {
        yaml_node_t *kn = yaml_document_get_node(&y->doc, pr->key);
        yaml_node_t *vn = yaml_document_get_node(&y->doc, pr->value);
        if (!kn || !vn) return pp_yaml_error(y, map, "%s: broken mapping", what);
        if (kn->type != YAML_SCALAR_NODE)
            return pp_yaml_error(y, kn, "%s: keys must be plain strings, got %s", what, pp_yaml_node_kind(kn));
        const char *key = scalar_str(kn);
        /* Duplicates are errors for every key, known or not (JSON allows them, we do not). */
        for (yaml_node_pair_t *q = start; q < pr; q++) {
            yaml_node_t *qk = yaml_document_get_node(&y->doc, q->key);
            if (qk && qk->type == YAML_SCALAR_NODE && !strcmp(scalar_str(qk), key))
                return pp_yaml_error(y, kn, "%s: duplicate key '%s' (first at line %d)", what, key,
                                     (int)qk->start_mark.line + 1);
        }
        int i = 0;
        while (i < n && strcmp(tbl[i].key, key)) i++;
        if (i == n) {
            if (flags & PP_YAML_IGNORE_UNKNOWN) continue;
            char ex[48];
            return pp_yaml_error(y, kn, "%s: unknown key '%s'", what, excerpt(key, ex, sizeof ex));
        }
        if ((flags & PP_YAML_NULL_ABSENT) && pp_yaml_is_null(vn)) continue;
        if ((st = key_store(y, vn, &tbl[i], obj, flags))) return st;
        seen[i] = vn;
    }
    for (int i = 0; i < n; i++)
        if (tbl[i].required && !seen[i])
            return pp_yaml_error(y, map, "%s: missing required key '%s'", what, tbl[i].key);
    if (found)
        for (int i = 0; i < n; i++) found[i] = seen[i];
    return PP_OK;
}

pp_status pp_yaml_seq(pp_yaml *y, yaml_node_t *seq, const pp_key *tbl, int n, size_t elem_size,
                      void **arr, int *count, const char *what)
{
    *arr = NULL;
    *count = 0;
    if (seq->type != YAML_SEQUENCE_NODE)
        return pp_yaml_error(y, seq, "key '%s': expected a sequence, got %s", what, pp_yaml_node_kind(seq));
    ptrdiff_t len = seq->data.sequence.items.top - seq->data.sequence.items.start;
    if (len == 0) return PP_OK;
    if (len > PP_YAML_MAX_RECORDS)
        return pp_yaml_error(y, seq, "key '%s': more than %d records", what, PP_YAML_MAX_RECORDS);
    char *a = calloc((size_t)len, elem_size);
    if (!a) return pp_error_set(y->err, PP_ERR_NOMEM, y->path, 0, 0, "out of memory");
    pp_status st = PP_OK;
    char name[96];
    for (ptrdiff_t i = 0; i < len; i++) {
        yaml_node_t *e = yaml_document_get_node(&y->doc, seq->data.sequence.items.start[i]);
        snprintf(name, sizeof name, "%s[%td]", what, i);
        if (!e) {
            st = pp_yaml_error(y, seq, "%s: broken sequence", name);
            break;
        }
        if (e->type != YAML_MAPPING_NODE) {
            st = pp_yaml_error(y, e, "%s: expected a mapping, got %s", name, pp_yaml_node_kind(e));
            break;
        }
        if ((st = pp_yaml_map(y, e, tbl, n, a + (size_t)i * elem_size, 0, NULL, name))) break;
    }
    if (st != PP_OK) {
        free(a);
        return st;
    }
    *arr = a;
    *count = (int)len;
    return PP_OK;
}

yaml_node_t *pp_yaml_lookup(pp_yaml *y, yaml_node_t *map, const char *key, bool want_key)
{
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++) {
        yaml_node_t *kn = yaml_document_get_node(&y->doc, pr->key);
        if (kn && kn->type == YAML_SCALAR_NODE && !strcmp(scalar_str(kn), key))
            return want_key ? kn : yaml_document_get_node(&y->doc, pr->value);
    }
    return NULL;
}

/* File name without directory and extension(s): "x/llama2-7b.config.json" -> "llama2-7b". */
void pp_yaml_name_from_path(const char *path, char *out, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(out, n, "%s", base);
    char *dot = strchr(out, '.');
    if (dot && dot != out) *dot = '\0';
}
