/* A strict little JSON reader for the CLI tests: parses one document into a tree, checks the
 * grammar (RFC 8259: no NaN, Infinity, trailing commas or comments) and that every number is
 * finite as a double. Header-only; the tests only read small documents. */
#ifndef PP_JSCAN_H
#define PP_JSCAN_H

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { JS_NULL, JS_BOOL, JS_NUM, JS_STR, JS_ARR, JS_OBJ } js_type;

typedef struct js_val {
    js_type type;
    double num;
    bool b;
    char *str;               /* JS_STR (escapes kept as written: tests only compare ASCII) */
    int n;                   /* children of JS_ARR / JS_OBJ */
    char **keys;             /* JS_OBJ */
    struct js_val **items;
} js_val;

typedef struct {
    const char *start, *p, *end;
    char err[256];
    int depth;
} js_parser;

static void js_free(js_val *v)
{
    if (!v) return;
    for (int i = 0; i < v->n; i++) {
        js_free(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

static void js_ws(js_parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

static js_val *js_fail(js_parser *ps, const char *what)
{
    if (!ps->err[0])
        snprintf(ps->err, sizeof ps->err, "%s at offset %ld near '%.20s'", what,
                 (long)(ps->p - ps->start), ps->p);
    return NULL;
}

static char *js_string(js_parser *ps)
{
    if (ps->p >= ps->end || *ps->p != '"') return NULL;
    const char *s = ++ps->p;
    while (ps->p < ps->end && *ps->p != '"') {
        if ((unsigned char)*ps->p < 0x20) return NULL;
        if (*ps->p == '\\') {
            ps->p++;
            if (ps->p >= ps->end || !strchr("\"\\/bfnrtu", *ps->p)) return NULL;
        }
        ps->p++;
    }
    if (ps->p >= ps->end) return NULL;
    char *out = strndup(s, (size_t)(ps->p - s));
    ps->p++;
    return out;
}

static js_val *js_value(js_parser *ps);

static js_val *js_add(js_val *v, char *key, js_val *item)
{
    v->items = realloc(v->items, (size_t)(v->n + 1) * sizeof *v->items);
    if (v->type == JS_OBJ) {
        v->keys = realloc(v->keys, (size_t)(v->n + 1) * sizeof *v->keys);
        v->keys[v->n] = key;
    }
    v->items[v->n++] = item;
    return v;
}

static js_val *js_value(js_parser *ps)
{
    js_ws(ps);
    if (ps->p >= ps->end) return js_fail(ps, "unexpected end");
    if (++ps->depth > 256) return js_fail(ps, "nested too deep");
    js_val *v = calloc(1, sizeof *v);
    char c = *ps->p;
    if (c == '{' || c == '[') {
        v->type = c == '{' ? JS_OBJ : JS_ARR;
        char close = c == '{' ? '}' : ']';
        ps->p++;
        js_ws(ps);
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            ps->depth--;
            return v;
        }
        for (;;) {
            char *key = NULL;
            js_ws(ps);
            if (v->type == JS_OBJ) {
                key = js_string(ps);
                if (!key) { js_free(v); return js_fail(ps, "expected a key string"); }
                js_ws(ps);
                if (ps->p >= ps->end || *ps->p != ':') { free(key); js_free(v); return js_fail(ps, "expected ':'"); }
                ps->p++;
            }
            js_val *item = js_value(ps);
            if (!item) { free(key); js_free(v); return NULL; }
            js_add(v, key, item);
            js_ws(ps);
            if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
            if (ps->p < ps->end && *ps->p == close) { ps->p++; break; }
            js_free(v);
            return js_fail(ps, "expected ',' or a closing bracket");
        }
    } else if (c == '"') {
        v->type = JS_STR;
        v->str = js_string(ps);
        if (!v->str) { js_free(v); return js_fail(ps, "bad string"); }
    } else if (!strncmp(ps->p, "true", 4) || !strncmp(ps->p, "false", 5)) {
        v->type = JS_BOOL;
        v->b = *ps->p == 't';
        ps->p += v->b ? 4 : 5;
    } else if (!strncmp(ps->p, "null", 4)) {
        v->type = JS_NULL;
        ps->p += 4;
    } else if (c == '-' || isdigit((unsigned char)c)) {
        /* JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
        const char *s = ps->p;
        if (*ps->p == '-') ps->p++;
        if (ps->p < ps->end && *ps->p == '0') ps->p++;
        else if (ps->p < ps->end && isdigit((unsigned char)*ps->p)) while (ps->p < ps->end && isdigit((unsigned char)*ps->p)) ps->p++;
        else { js_free(v); return js_fail(ps, "bad number"); }
        if (ps->p < ps->end && *ps->p == '.') {
            ps->p++;
            if (ps->p >= ps->end || !isdigit((unsigned char)*ps->p)) { js_free(v); return js_fail(ps, "bad fraction"); }
            while (ps->p < ps->end && isdigit((unsigned char)*ps->p)) ps->p++;
        }
        if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
            ps->p++;
            if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-')) ps->p++;
            if (ps->p >= ps->end || !isdigit((unsigned char)*ps->p)) { js_free(v); return js_fail(ps, "bad exponent"); }
            while (ps->p < ps->end && isdigit((unsigned char)*ps->p)) ps->p++;
        }
        char buf[64];
        size_t n = (size_t)(ps->p - s);
        if (n >= sizeof buf) n = sizeof buf - 1;
        memcpy(buf, s, n);
        buf[n] = 0;
        v->type = JS_NUM;
        v->num = strtod(buf, NULL);
        if (!isfinite(v->num)) { js_free(v); return js_fail(ps, "number overflows a double"); }
    } else {
        js_free(v);
        return js_fail(ps, "unexpected character (NaN/Infinity are not JSON)");
    }
    ps->depth--;
    return v;
}

/* Parse text as exactly one JSON document (whitespace around it allowed). NULL + err on error. */
static js_val *js_parse(const char *text, char *err, size_t errn)
{
    js_parser ps = {.start = text, .p = text, .end = text + strlen(text)};
    js_val *v = js_value(&ps);
    if (v) {
        js_ws(&ps);
        if (ps.p != ps.end) {
            js_free(v);
            v = NULL;
            snprintf(ps.err, sizeof ps.err, "trailing text after the document: '%.20s'", ps.p);
        }
    }
    if (!v) snprintf(err, errn, "%.*s", (int)(errn > 0 ? errn - 1 : 0), ps.err);
    return v;
}

static js_val *js_get(const js_val *v, const char *key)
{
    if (!v || v->type != JS_OBJ) return NULL;
    for (int i = 0; i < v->n; i++)
        if (!strcmp(v->keys[i], key)) return v->items[i];
    return NULL;
}

/* The number at key, or NAN when absent or not a number. */
static double js_num(const js_val *v, const char *key)
{
    const js_val *x = js_get(v, key);
    return x && x->type == JS_NUM ? x->num : NAN;
}

#endif
