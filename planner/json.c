/* Streaming JSON writer. Numbers are finite or null, never NaN/inf. */
#include "pp_json.h"

#include <math.h>
#include <string.h>

void pp_json_init(pp_json *j, FILE *f, bool pretty)
{
    memset(j, 0, sizeof *j);
    j->f = f;
    j->pretty = pretty;
    j->first[0] = true;
}

static void json_indent(pp_json *j)
{
    if (!j->pretty) return;
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++) fputs("  ", j->f);
}

/* Separator before a value or a key. */
static void json_sep(pp_json *j)
{
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (!j->first[j->depth]) fputc(',', j->f);
    j->first[j->depth] = false;
    if (j->depth > 0) json_indent(j);
}

static void json_open(pp_json *j, char c)
{
    json_sep(j);
    fputc(c, j->f);
    if (j->depth < 63) j->depth++;
    j->first[j->depth] = true;
}

static void json_close(pp_json *j, char c)
{
    bool empty = j->first[j->depth];
    if (j->depth > 0) j->depth--;
    if (!empty) json_indent(j);
    fputc(c, j->f);
}

void pp_json_obj_begin(pp_json *j) { json_open(j, '{'); }
void pp_json_obj_end(pp_json *j) { json_close(j, '}'); }
void pp_json_arr_begin(pp_json *j) { json_open(j, '['); }
void pp_json_arr_end(pp_json *j) { json_close(j, ']'); }

static void json_write_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
        }
    }
    fputc('"', f);
}

void pp_json_key(pp_json *j, const char *key)
{
    json_sep(j);
    json_write_str(j->f, key);
    fputs(j->pretty ? ": " : ":", j->f);
    j->after_key = true;
}

void pp_json_str(pp_json *j, const char *s) { json_sep(j); json_write_str(j->f, s); }
void pp_json_int(pp_json *j, int64_t v) { json_sep(j); fprintf(j->f, "%lld", (long long)v); }
void pp_json_bool(pp_json *j, bool v) { json_sep(j); fputs(v ? "true" : "false", j->f); }
void pp_json_null(pp_json *j) { json_sep(j); fputs("null", j->f); }

void pp_json_num(pp_json *j, double v)
{
    json_sep(j);
    if (!isfinite(v)) fputs("null", j->f);
    else if (v == floor(v) && fabs(v) < 9e15) fprintf(j->f, "%.0f", v);
    else fprintf(j->f, "%.6g", v);
}

void pp_json_kstr(pp_json *j, const char *k, const char *s) { pp_json_key(j, k); pp_json_str(j, s); }
void pp_json_kint(pp_json *j, const char *k, int64_t v) { pp_json_key(j, k); pp_json_int(j, v); }
void pp_json_knum(pp_json *j, const char *k, double v) { pp_json_key(j, k); pp_json_num(j, v); }
void pp_json_kbool(pp_json *j, const char *k, bool v) { pp_json_key(j, k); pp_json_bool(j, v); }
void pp_json_end(pp_json *j) { fputc('\n', j->f); fflush(j->f); }
