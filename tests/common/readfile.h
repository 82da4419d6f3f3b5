/* A file read whole for the tests (goldens, generated scripts, tables). Header-only. */
#ifndef TC_READFILE_H
#define TC_READFILE_H

#include <stdio.h>
#include <stdlib.h>

/* The file at path, NUL-terminated (malloc'd: the caller frees it), its length in *len where len is
 * not NULL; NULL where it cannot be opened or read whole. */
static inline char *tc_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    size_t got = text ? fread(text, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!text || got != (size_t)n) {
        free(text);
        return NULL;
    }
    text[n] = 0;
    if (len) *len = (size_t)n;
    return text;
}

#endif
