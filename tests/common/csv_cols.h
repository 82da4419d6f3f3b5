/* The comma-separated tables of tests/data/megatron (runs*.csv): no quoting, one header line. */
#ifndef PP_TEST_CSV_COLS_H
#define PP_TEST_CSV_COLS_H

#include <string.h>

/* Split `line` in place at its commas into at most `max` columns (the last loses its newline). */
static int split_csv(char *line, char **col, int max)
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

/* The index of column `name` in the header, or -1. */
static int col_index(char **hdr, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(hdr[i], name)) return i;
    return -1;
}

#endif
