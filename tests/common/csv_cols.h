/* The tests' readers of comma-separated tables: split_csv for those without quoting, one header
 * line (tests/data/megatron runs*.csv); csv_record for RFC 4180 tables whose fields may be quoted
 * (tests/data/published runs.csv). */
#ifndef PP_TEST_CSV_COLS_H
#define PP_TEST_CSV_COLS_H

#include <string.h>

/* Split `line` in place at its commas into at most `max` columns (the last loses its newline). */
static inline int split_csv(char *line, char **col, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        col[n++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
    char *nl = strpbrk(col[n - 1], "\r\n");
    if (nl) *nl = 0;
    return n;
}

/* Split one record of text at *p into fields (quoted fields may hold commas, "" and newlines);
 * the fields point into the text, which is modified in place. Returns the field count, 0 at
 * the end of the text. */
static inline int csv_record(char **p, char **f, int max)
{
    char *s = *p;
    if (!*s) return 0;
    int n = 0;
    for (;;) {
        char *out = s, *start = s;
        if (*s == '"') {
            s++;
            for (;;) {
                if (!*s) break;
                if (*s == '"' && s[1] == '"') { *out++ = '"'; s += 2; continue; }
                if (*s == '"') { s++; break; }
                *out++ = *s++;
            }
            while (*s && *s != ',' && *s != '\n') s++; /* nothing belongs after a closing quote */
        } else {
            while (*s && *s != ',' && *s != '\n' && *s != '\r') *out++ = *s++;
            while (*s == '\r') s++;
        }
        char c = *s;
        *out = 0;
        if (n < max) f[n++] = start;
        if (c == ',') { s++; continue; }
        if (c == '\n') s++;
        break;
    }
    *p = s;
    return n;
}

/* The index of column `name` in the header, or -1. */
static inline int col_index(char **hdr, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(hdr[i], name)) return i;
    return -1;
}

#endif
