/* The bad-input suite: a data-driven TAP test. Each case in bad_input.txt runs
 * $PARPLAN once and must end with
 *   - exit status 2 (bad input), within PARPLAN_TEST_TIMEOUT_S seconds, under the RSS bound;
 *   - nothing at all on stdout (no partial result);
 *   - exactly one line on stderr, starting "parplan: ", matching every expected pattern
 *     (the field or flag named, and for files file:line:col), with no nan/inf in it.
 *
 * Case file syntax, one case a line ('#' comments and blank lines skipped):
 *     PATTERN [&& PATTERN ...] | ARG ARG ...
 * PATTERN is a POSIX extended regular expression, matched case-insensitively against the stderr
 * line (so "neg_layers.yaml:3:[0-9]+:" checks the location); it must not contain " | " or " && ".
 * ARGs are split on blanks; '...' and "..." quote (an empty '' is an empty argument), and inside
 * "..." \xHH gives any byte. @DATA@ is tests/cli/data, @TMP@ a directory of files generated at
 * start (see gen_files: very deep nesting, very large, FIFO), @MODELS@ the models.d catalog.
 *
 * usage: bad_input CASES_FILE DATA_DIR      (PARPLAN and PARPLAN_MODELS_DIR from the env)
 */
#include <regex.h>

#include "proc.h"
#include "tap.h"

#define MAX_ARGS 128
#define MAX_PATTERNS 8

static char tmp_dir[512];

/* ------------------------------------------------------------------ generated inputs */

static int write_file(const char *name, const char *head, const char *unit, size_t repeat,
                      const char *mid, const char *unit2, size_t repeat2, const char *tail)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fputs(head, f);
    for (size_t i = 0; i < repeat; i++) fputs(unit, f);
    fputs(mid, f);
    for (size_t i = 0; i < repeat2; i++) fputs(unit2, f);
    fputs(tail, f);
    return fclose(f);
}

/* Inputs too large to commit, written fresh each run. */
static int gen_files(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/parplan-bad-input-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmp_dir)) return -1;
    const size_t deep = 100000; /* far past any recursion limit a loader might have */
    int rc = 0;
    /* flow sequences nested 100k deep as a model field's value */
    rc |= write_file("deep_flow.yaml", "name: deep\nlayers: ", "[", deep, "1", "]", deep, "\n");
    /* flow mappings nested 100k deep, as a GPU */
    rc |= write_file("deep_map.yaml", "name: deep\nmemory_bytes: ", "{a: ", deep, "1", "}", deep, "\n");
    /* a JSON object nested 100k deep (HF config.json) */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/deep", tmp_dir);
    if (mkdir(dir, 0700)) return -1;
    rc |= write_file("deep/config.json", "{\"model_type\": \"llama\", \"x\": ", "{\"a\": ", deep, "1",
                     "}", deep, "}\n");
    /* a profile whose gemm list nests 100k deep */
    rc |= write_file("deep_profile.yaml", "gpu: x\nmeasured: '2024-01-01'\ngemm: ", "[", deep, "",
                     "]", deep, "\n");
    /* block mappings nested by indentation, 2000 deep (quadratic size: ~4 MB) */
    {
        char path[1024];
        snprintf(path, sizeof path, "%s/deep_block.yaml", tmp_dir);
        FILE *f = fopen(path, "wb");
        if (!f) return -1;
        fputs("name: deep\nsource:\n", f);
        for (int d = 1; d <= 2000; d++) {
            for (int s = 0; s < d; s++) fputc(' ', f);
            fputs("a:\n", f);
        }
        rc |= fclose(f);
    }
    /* 40 MiB: a model whose source string is huge (time and memory must stay bounded) */
    rc |= write_file("huge.yaml", "name: huge\nlayers: 2\nsource: \"", "0123456789abcdef", 40u << 16,
                     "", "", 0, "\"\n");
    /* 200k anchors and aliases: the billion-laughs shape, kept finite */
    rc |= write_file("aliases.yaml", "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                     "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                     "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                     "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
                     "layers: *h\n", "", 0, "", "", 0, "");
    /* a name far longer than any field */
    rc |= write_file("long_name.yaml", "name: ", "x", 100000, "\nlayers: 2\n", "", 0, "");
    /* a FIFO nobody writes to: opening it for reading blocks forever unless checked first */
    char fifo[1024];
    snprintf(fifo, sizeof fifo, "%s/fifo.yaml", tmp_dir);
    if (mkfifo(fifo, 0600)) rc = -1;
    return rc;
}

static void rm_tmp(void)
{
    if (!tmp_dir[0]) return;
    const char *names[] = {"deep_flow.yaml", "deep_map.yaml", "deep/config.json", "deep",
                           "deep_profile.yaml", "deep_block.yaml", "huge.yaml", "aliases.yaml",
                           "long_name.yaml", "fifo.yaml"};
    char path[1024];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmp_dir, names[i]);
        remove(path);
    }
    rmdir(tmp_dir);
}

/* ------------------------------------------------------------------ case parsing */

/* Replace @DATA@, @TMP@ and @MODELS@ in s. Returns a malloc'd string. */
static char *expand(const char *s, const char *data_dir, const char *models_dir)
{
    size_t cap = strlen(s) + 1;
    const char *keys[] = {"@DATA@", "@TMP@", "@MODELS@"};
    const char *vals[] = {data_dir, tmp_dir, models_dir};
    for (const char *p = s; *p; p++)
        if (*p == '@') cap += 1024;
    char *out = malloc(cap), *o = out;
    while (*s) {
        bool hit = false;
        for (int k = 0; k < 3; k++) {
            size_t n = strlen(keys[k]);
            if (strncmp(s, keys[k], n) == 0) {
                o += sprintf(o, "%s", vals[k]);
                s += n;
                hit = true;
                break;
            }
        }
        if (!hit) *o++ = *s++;
    }
    *o = 0;
    return out;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Split s into words (quotes as documented above); words point into buf. */
static int split_args(const char *s, char *buf, char **words, int max)
{
    int n = 0;
    char *o = buf;
    while (*s) {
        while (*s == ' ' || *s == '\t') s++;
        if (!*s) break;
        if (n == max) return -1;
        words[n++] = o;
        while (*s && *s != ' ' && *s != '\t') {
            if (*s == '\'') {
                for (s++; *s && *s != '\''; s++) *o++ = *s;
                if (*s) s++;
            } else if (*s == '"') {
                for (s++; *s && *s != '"'; s++) {
                    if (s[0] == '\\' && s[1] == 'x' && hexval(s[2]) >= 0 && hexval(s[3]) >= 0) {
                        *o++ = (char)(hexval(s[2]) * 16 + hexval(s[3]));
                        s += 3;
                    } else if (s[0] == '\\' && s[1]) {
                        *o++ = *++s;
                    } else {
                        *o++ = *s;
                    }
                }
                if (*s) s++;
            } else {
                *o++ = *s++;
            }
        }
        *o++ = 0;
    }
    return n;
}

/* ------------------------------------------------------------------ one case */

static void show(const char *what, const char *text, size_t len)
{
    if (!len) return;
    tap_diag("%s (%zu bytes):", what, len);
    size_t shown = 0;
    const char *p = text;
    while (*p && shown < 1500) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n > 300) n = 300;
        tap_diag("  | %.*s", (int)n, p);
        shown += n + 1;
        if (!nl) break;
        p = nl + 1;
    }
}

static int run_case(int lineno, const char *line, const char *parplan, const char *data_dir,
                    const char *models_dir, long rss_limit_kib)
{
    int ok = 0;
    char *exp = NULL, *args_x = NULL, *argbuf = NULL;
    regex_t re[MAX_PATTERNS];
    int n_re = 0;
    char *patterns[MAX_PATTERNS];
    tc_proc r;
    memset(&r, 0, sizeof r);

    const char *bar = strstr(line, " | ");
    size_t ll = strlen(line);
    if (!bar && ll >= 2 && !strcmp(line + ll - 2, " |")) bar = line + ll - 2; /* no arguments */
    if (!bar) {
        tap_ok(0, "line %d: no ' | ' between patterns and arguments", lineno);
        return 0;
    }
    exp = strndup(line, (size_t)(bar - line));
    args_x = expand(bar[2] ? bar + 3 : "", data_dir, models_dir);
    argbuf = malloc(strlen(args_x) + 1);
    char *argv[MAX_ARGS + 2];
    argv[0] = (char *)parplan;
    int argc = split_args(args_x, argbuf, argv + 1, MAX_ARGS);
    if (argc < 0) {
        tap_ok(0, "line %d: too many arguments", lineno);
        goto done;
    }
    argv[argc + 1] = NULL;

    /* patterns */
    for (char *p = exp; p && n_re < MAX_PATTERNS;) {
        char *amp = strstr(p, " && ");
        if (amp) *amp = 0;
        while (*p == ' ') p++;
        size_t n = strlen(p);
        while (n && p[n - 1] == ' ') p[--n] = 0;
        if (*p) {
            char *pat = expand(p, data_dir, models_dir);
            int rc = regcomp(&re[n_re], pat, REG_EXTENDED | REG_ICASE | REG_NOSUB);
            if (rc) {
                tap_ok(0, "line %d: bad pattern '%s'", lineno, pat);
                free(pat);
                goto done;
            }
            patterns[n_re++] = pat;
        }
        p = amp ? amp + 4 : NULL;
    }

    tc_run(argv, &r);

    char why[1024] = "";
    size_t wl = 0;
#define WHY(...) (wl += (size_t)snprintf(why + wl, wl < sizeof why ? sizeof why - wl : 0, __VA_ARGS__))
    if (r.timed_out) WHY(" timed out after %.1f s;", r.wall_s);
    else if (r.status != 2) WHY(" exit status %d, want 2;", r.status);
    if (r.out_len) WHY(" %zu bytes on stdout;", r.out_len);
    const char *nl = memchr(r.err, '\n', r.err_len);
    bool one_line = nl && (size_t)(nl - r.err) + 1 == r.err_len;
    if (!one_line) WHY(" stderr is not exactly one line;");
    if (strncmp(r.err, "parplan: ", 9) != 0) WHY(" stderr does not start with 'parplan: ';");
    if (tc_proc_find_nonfinite_msg(r.err)) WHY(" nan/inf in the message;");
    /* One line means one terminal line: no control characters echoed from the input (a
     * newline, carriage return or escape sequence in a bad name must not reach the terminal). */
    for (size_t i = 0; i + 1 < r.err_len && one_line; i++) {
        unsigned char ch = (unsigned char)r.err[i];
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
            WHY(" control character 0x%02x in the message;", ch);
            break;
        }
    }
    /* Patterns are matched against the first line only. */
    char first[4096];
    size_t fl = nl ? (size_t)(nl - r.err) : r.err_len;
    if (fl >= sizeof first) fl = sizeof first - 1;
    memcpy(first, r.err, fl);
    first[fl] = 0;
    for (int i = 0; i < n_re; i++)
        if (regexec(&re[i], first, 0, NULL, 0) != 0) WHY(" message lacks /%s/;", patterns[i]);
    if (r.maxrss_kib > rss_limit_kib) WHY(" peak RSS %ld MiB over %ld MiB;", r.maxrss_kib / 1024, rss_limit_kib / 1024);
#undef WHY

    ok = tap_ok(why[0] == 0, "line %d: %s", lineno, bar[2] ? bar + 3 : "(no arguments)");
    if (!ok) {
        tap_diag("failed:%s", why);
        show("stderr", r.err, r.err_len);
        show("stdout", r.out, r.out_len);
    }
    tap_diag("%.3f s, %ld MiB: %s", r.wall_s, r.maxrss_kib / 1024, first);

done:
    for (int i = 0; i < n_re; i++) {
        regfree(&re[i]);
        free(patterns[i]);
    }
    tc_proc_result_free(&r);
    free(exp);
    free(args_x);
    free(argbuf);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s CASES_FILE DATA_DIR\n", argv[0]);
        return 2;
    }
    const char *parplan = getenv("PARPLAN");
    const char *models = getenv("PARPLAN_MODELS_DIR");
    if (!parplan || !*parplan) {
        printf("Bail out! PARPLAN is not set\n");
        return 1;
    }
    char data_dir[1024];
    if (!realpath(argv[2], data_dir)) {
        printf("Bail out! no data directory %s\n", argv[2]);
        return 1;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        printf("Bail out! cannot open %s\n", argv[1]);
        return 1;
    }
    if (gen_files()) {
        printf("Bail out! cannot write the generated inputs under %s\n", tmp_dir);
        fclose(f);
        rm_tmp();
        return 1;
    }
    long rss_kib = (long)(tc_proc_env_num("PARPLAN_TEST_RSS_MIB", 256) * 1024);
    const char *only = getenv("PARPLAN_TEST_ONLY"); /* run the cases whose line matches this substring */
    char line[8192];
    int lineno = 0, cases = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (!*p || *p == '#') continue;
        if (only && *only && !strstr(p, only)) continue;
        cases++;
        run_case(lineno, p, parplan, data_dir, models ? models : "", rss_kib);
    }
    fclose(f);
    rm_tmp();
    tap_diag("%d cases", cases);
    return tap_done();
}
