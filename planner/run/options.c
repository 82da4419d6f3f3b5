/* Table-driven option parsing (pp_options.h). */
#include "pp_options.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static pp_status parse_int(const char *flag, const char *s, int64_t min, int64_t max, int64_t *out,
                           pp_error *err)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end && *end && (*end == 'e' || *end == 'E' || *end == '.')) {
        /* 1e6-style integers, but only exact ones */
        double d = strtod(s, &end);
        if (*end || !isfinite(d) || d != floor(d) || fabs(d) > 9e18)
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s expects an integer, got '%s'", flag, s);
        v = (long long)d;
    } else if (errno == ERANGE || !end || end == s || *end) {
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s expects an integer, got '%s'", flag, s);
    }
    if (v < min || v > max)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s must be between %lld and %lld, got %lld",
                            flag, (long long)min, (long long)max, v);
    *out = v;
    return PP_OK;
}

static pp_status parse_num(const char *flag, const char *s, double min, double max, double *out,
                           pp_error *err)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno == ERANGE || end == s || *end || !isfinite(v))
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s expects a number, got '%s'", flag, s);
    if (v < min || v > max)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s must be between %g and %g, got %g",
                            flag, min, max, v);
    *out = v;
    return PP_OK;
}

static pp_status parse_enum(const char *flag, const char *s, const char *const *names, int n,
                            int *out, pp_error *err)
{
    int i = pp_name_lookup(names, n, s);
    if (i < 0) {
        char list[256] = "";
        for (int k = 0; k < n; k++) {
            strncat(list, names[k], sizeof list - strlen(list) - 2);
            if (k + 1 < n) strncat(list, "|", sizeof list - strlen(list) - 1);
        }
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s expects %s, got '%s'", flag, list, s);
    }
    *out = i;
    return PP_OK;
}

static pp_status apply(const pp_option *o, void *base, const char *v, pp_error *err)
{
    char *field = (char *)base + o->offset;
    switch (o->kind) {
    case PP_OPT_FLAG: *(bool *)field = true; return PP_OK;
    case PP_OPT_CLEAR: *(bool *)field = false; return PP_OK;
    case PP_OPT_SET: *(int *)field = o->set; return PP_OK;
    case PP_OPT_INT: return parse_int(o->name, v, (int64_t)o->min, (int64_t)o->max, (int64_t *)field, err);
    case PP_OPT_NUM: return parse_num(o->name, v, o->min, o->max, (double *)field, err);
    case PP_OPT_STR:
        if (!*v) return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s needs a non-empty value", o->name);
        *(const char **)field = v;
        return PP_OK;
    case PP_OPT_ENUM: return parse_enum(o->name, v, o->names, o->n_names, (int *)field, err);
    case PP_OPT_MODULES: {
        char buf[256];
        if (strlen(v) >= sizeof buf || !v[0])
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s expects a list of modules", o->name);
        snprintf(buf, sizeof buf, "%s", v);
        unsigned bits = 0;
        pp_status st = PP_OK;
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && !st; tok = strtok_r(NULL, ",", &save)) {
            int e = 0;
            st = parse_enum(o->name, tok, o->names, o->n_names, &e, err);
            if (!st) bits |= 1u << e;
        }
        if (!st) *(unsigned *)field = bits;
        return st;
    }
    }
    return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s: bad option table entry", o->name);
}

static bool takes_value(const pp_option *o)
{
    return o->kind != PP_OPT_FLAG && o->kind != PP_OPT_CLEAR && o->kind != PP_OPT_SET;
}

/* The option named name (long, or -c short) in the sets, and its set. */
static const pp_option *find(const pp_option_set *sets, int n_sets, const char *name, const pp_option_set **set)
{
    for (int s = 0; s < n_sets; s++)
        for (size_t k = 0; k < sets[s].n; k++) {
            const pp_option *d = &sets[s].opts[k];
            if (strcmp(d->name, name) == 0 ||
                (d->short_name && name[0] == '-' && name[1] == d->short_name && name[2] == 0)) {
                if (set) *set = &sets[s];
                return d;
            }
        }
    return NULL;
}

pp_status pp_options_parse(const pp_option_set *sets, int n_sets, const char *cmd, int argc,
                           char **argv, char ***pos_out, int *npos, pp_error *err)
{
    return pp_options_parse_cmd(sets, n_sets, NULL, 0, cmd, argc, argv, pos_out, npos, err);
}

pp_status pp_options_parse_cmd(const pp_option_set *sets, int n_sets, const pp_option_set *others,
                               int n_others, const char *cmd, int argc, char **argv, char ***pos_out,
                               int *npos, pp_error *err)
{
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    if (!pos) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    *pos_out = pos;
    *npos = 0;
    bool only_pos = false;
    const pp_option *seen[256];
    const pp_option_set *seen_set[256];
    int n_seen = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || strcmp(a, "-") == 0) {
            pos[(*npos)++] = argv[i];
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_pos = true;
            continue;
        }
        /* --flag=value or --flag value; -o value */
        char name[64];
        const char *val = NULL;
        const char *eq = strchr(a, '=');
        size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
        if (nlen >= sizeof name)
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "unknown option '%.40s...'", a);
        memcpy(name, a, nlen);
        name[nlen] = 0;
        if (eq) val = eq + 1;
        const pp_option_set *set = NULL;
        const pp_option *o = find(sets, n_sets, name, &set);
        const pp_option *elsewhere = o ? NULL : find(others, n_others, name, NULL);
        if (elsewhere)
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "option %s does not apply to '%s'", elsewhere->name, cmd);
        if (!o) {
            /* did you mean: the options of this command */
            size_t total = 0;
            for (int s = 0; s < n_sets; s++) total += sets[s].n;
            const char **names = calloc(total + 1, sizeof *names);
            char near[256] = "";
            if (names) {
                size_t k = 0;
                for (int s = 0; s < n_sets; s++)
                    for (size_t j = 0; j < sets[s].n; j++) names[k++] = sets[s].opts[j].name;
                if (name[0] == '-' && name[1] == '-') pp_did_you_mean(name, names, (int)k, near, sizeof near);
                free(names);
            }
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "unknown option '%s' for '%s'%s%s%s (see parplan %s --help)",
                                name, cmd, near[0] ? ": did you mean " : "", near, near[0] ? "?" : "", cmd);
        }
        if (!takes_value(o)) {
            if (val) return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "option %s takes no value", o->name);
        } else if (!val) {
            if (i + 1 >= argc) return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "option %s needs a value", o->name);
            val = argv[++i];
        }
        /* A flag given twice, or two flags of one setting (--sp and --no-sp, --swiglu and --gelu),
         * would silently keep the last: an error that names both. */
        for (int k = 0; k < n_seen; k++)
            if (seen[k] == o || (o->key >= 0 && seen[k]->key == o->key && seen_set[k] == set))
                return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "option %s: %s already given%s", o->name,
                                    seen[k] == o ? "it was" : seen[k]->name, seen[k] == o ? "" : " (they set the same thing)");
        if (n_seen < (int)(sizeof seen / sizeof seen[0])) seen_set[n_seen] = set, seen[n_seen++] = o;
        pp_status st = apply(o, set->base, val, err);
        if (st != PP_OK) return st;
        if (set->given && o->key >= 0) set->given[o->key] = 1;
    }
    return PP_OK;
}

void pp_options_usage(FILE *f, const pp_option_set *sets, int n_sets)
{
    for (int s = 0; s < n_sets; s++)
        for (size_t k = 0; k < sets[s].n; k++) {
            const pp_option *d = &sets[s].opts[k];
            bool seen = false;
            for (int s2 = 0; s2 <= s && !seen; s2++)
                for (size_t k2 = 0; k2 < (s2 == s ? k : sets[s2].n) && !seen; k2++)
                    seen = strcmp(sets[s2].opts[k2].name, d->name) == 0;
            if (seen) continue;
            char left[64];
            if (d->short_name) snprintf(left, sizeof left, "-%c, %s", d->short_name, d->name);
            else snprintf(left, sizeof left, "    %s", d->name);
            if (d->kind == PP_OPT_ENUM) {
                /* the values from the enum's name table, never a copy in the help text: a new row
                 * (an activation, a precision) shows up here, in completions and in errors alike */
                fprintf(f, "  %-26s ", left);
                for (int i = 0, first = 1; i < d->n_names; i++)
                    if (d->names[i]) fprintf(f, "%s%s", first ? "" : "|", d->names[i]), first = 0;
                fprintf(f, "%s%s\n", d->help[0] ? ": " : "", d->help);
            } else {
                fprintf(f, "  %-26s %s\n", left, d->help);
            }
        }
}
