/* A small streaming JSON writer (objects, arrays, numbers never NaN/inf). */
#ifndef PP_JSON_H
#define PP_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    FILE *f;
    int depth;
    bool first[64]; /* first element at each depth */
    bool pretty;
    bool after_key;
} pp_json;

void pp_json_init(pp_json *j, FILE *f, bool pretty);
void pp_json_obj_begin(pp_json *j);
void pp_json_obj_end(pp_json *j);
void pp_json_arr_begin(pp_json *j);
void pp_json_arr_end(pp_json *j);
void pp_json_key(pp_json *j, const char *key);
void pp_json_str(pp_json *j, const char *s);
void pp_json_int(pp_json *j, int64_t v);
void pp_json_num(pp_json *j, double v); /* NaN/inf are written as null */
void pp_json_bool(pp_json *j, bool v);
void pp_json_null(pp_json *j);
/* key + value shorthands */
void pp_json_kstr(pp_json *j, const char *k, const char *s);
void pp_json_kint(pp_json *j, const char *k, int64_t v);
void pp_json_knum(pp_json *j, const char *k, double v);
void pp_json_kbool(pp_json *j, const char *k, bool v);
void pp_json_end(pp_json *j); /* final newline */

#endif
