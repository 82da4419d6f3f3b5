/* Megatron-LM arguments from a training log (pp_margs_parse_log, see pp_margs.h): the argument
 * dump Megatron prints (megatron/training/arguments.py _print_args), else the command line the log
 * records ("# cmd ..." of tools/megatron/run_configs.py, or the echoed pretrain_*.py line), and the
 * padded vocabulary the log reports after the dump (vocab_utils.py); and pp_margs_load, which
 * reads a file or standard input as a log or as a script. */
#include "megatron_args.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pp_yaml.h"

#define MARGS_MAX_BYTES (64 * 1024 * 1024) /* a log of a long run; larger inputs are refused */

/* The markers of Megatron's dump (arguments.py _print_args):
 *   "------------------------ arguments ------------------------"
 *   "  name ........................ value"   (names longer than the dots: "name value")
 *   "-------------------- end of arguments ---------------------" */
static bool dump_start(const char *s, size_t n)
{
    const char *m = "-- arguments --";
    size_t ml = strlen(m);
    for (size_t i = 0; i + ml <= n; i++)
        if (!memcmp(s + i, m, ml)) return true;
    return false;
}

static bool dump_end(const char *s, size_t n)
{
    const char *m = "end of arguments";
    size_t ml = strlen(m);
    for (size_t i = 0; i + ml <= n; i++)
        if (!memcmp(s + i, m, ml)) return true;
    return false;
}

static bool line_has(const char *s, size_t n, const char *m)
{
    size_t ml = strlen(m);
    for (size_t i = 0; i + ml <= n; i++)
        if (!memcmp(s + i, m, ml)) return true;
    return false;
}

static pp_status dump_line(pp_margs *a, const char *s, size_t n, int line, pp_error *err)
{
    size_t i = 0;
    while (i < n && isspace((unsigned char)s[i])) i++;
    size_t k0 = i;
    while (i < n && !isspace((unsigned char)s[i])) i++;
    size_t k1 = i;
    if (k1 == k0) return PP_OK;
    if (k1 - k0 >= sizeof a->kv[0].key)
        return pp_error_set(err, PP_ERR_INPUT, a->path, line, (int)k0 + 1, "an argument name of more than 95 characters");
    while (i < n && isspace((unsigned char)s[i])) i++;
    size_t d = i;
    while (i < n && s[i] == '.') i++;
    if (i > d && (i == n || isspace((unsigned char)s[i]))) {
        while (i < n && isspace((unsigned char)s[i])) i++;
    } else {
        i = d; /* no dots: the value starts here */
    }
    size_t v1 = n;
    while (v1 > i && isspace((unsigned char)s[v1 - 1])) v1--;
    char key[96];
    memcpy(key, s + k0, k1 - k0);
    key[k1 - k0] = 0;
    char *v = malloc(v1 - i + 1);
    if (!v) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    memcpy(v, s + i, v1 - i);
    v[v1 - i] = 0;
    pp_status st = pp_margs_kv_set(a, key, key, v, false, line, (int)i + 1, false, err);
    free(v);
    return st;
}

pp_status pp_margs_parse_log(pp_margs *a, const char *text, size_t len, pp_error *err)
{
    bool in = false, done = false;
    int line = 0, start = 0;
    const char *cmd = NULL;
    size_t cmd_n = 0;
    int cmd_line = 0;
    const char *s;
    size_t n;
    for (size_t pos = 0; pp_line_next(text, len, &pos, &s, &n);) {
        line++;
        if (!done && !in && dump_start(s, n) && !dump_end(s, n)) {
            in = true;
            start = line;
        } else if (in && dump_end(s, n)) {
            in = false;
            done = true;
            a->source = PP_MARGS_DUMP;
            a->line = start;
            a->dump_last = line;
        } else if (in) {
            pp_status st = dump_line(a, s, n, line, err);
            if (st) return st;
        } else if (!cmd && n > 6 && !memcmp(s, "# cmd ", 6)) {
            cmd = s + 6, cmd_n = n - 6, cmd_line = line;
        } else if (!cmd && line_has(s, n, "pretrain_") && line_has(s, n, ".py") && line_has(s, n, "--num-layers")) {
            cmd = s, cmd_n = n, cmd_line = line;
        } else if (!a->log_vocab && line_has(s, n, "padded vocab (size: ")) {
            /* " > padded vocab (size: 32000) with 0 dummy tokens (new size: 32000)" (vocab_utils.py) */
            const char *p = s;
            while (p + 20 <= s + n && memcmp(p, "padded vocab (size: ", 20)) p++;
            char num[16];
            size_t k = 0;
            for (const char *q = p + 20; q < s + n && k + 1 < sizeof num && isdigit((unsigned char)*q); q++) num[k++] = *q;
            num[k] = 0;
            long long v = k && k < 10 ? strtoll(num, NULL, 10) : 0; /* the line is not NUL-terminated */
            if (v > 0 && v < 100000000) a->log_vocab = v;
        }
    }
    if (in)
        return pp_error_set(err, PP_ERR_INPUT, a->path, line, 1,
                            "the argument dump that starts at line %d has no end (no 'end of arguments' line: the log is cut?)",
                            start);
    if (!done && cmd) {
        /* the recorded command line: one line of shell */
        pp_margs_source before = a->source;
        pp_status st = pp_margs_parse_script_at(a, cmd, cmd_n, cmd_line, err);
        if (st) return st;
        if (a->source != before) a->line = cmd_line;
    }
    return PP_OK;
}

/* ------------------------------------------------------------------ a file: a log or a script */

static pp_status read_all(const char *path, char **text, size_t *len, pp_error *err)
{
    *text = NULL;
    *len = 0;
    if (strcmp(path, "-") != 0) {
        pp_status st = pp_yaml_read_file(path, text, len, err);
        return st;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (;;) {
        if (n + 1 >= cap) {
            if (cap >= MARGS_MAX_BYTES) {
                free(buf);
                return pp_error_set(err, PP_ERR_INPUT, "-", 0, 0, "standard input is larger than %d bytes",
                                    MARGS_MAX_BYTES);
            }
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            }
            buf = b;
            cap *= 2;
        }
        ssize_t k = read(STDIN_FILENO, buf + n, cap - n - 1);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            free(buf);
            return pp_error_set(err, PP_ERR_RUNTIME, "-", 0, 0, "cannot read standard input: %s", strerror(errno));
        }
        if (k == 0) break;
        n += (size_t)k;
    }
    buf[n] = 0;
    *text = buf;
    *len = n;
    return PP_OK;
}

pp_status pp_margs_load(pp_margs *a, const char *path, pp_error *err)
{
    pp_margs_init(a, path);
    char *text = NULL;
    size_t len = 0;
    pp_status st = read_all(path, &text, &len, err);
    if (st) return st;
    if (memchr(text, 0, len)) {
        free(text);
        return pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "a NUL byte: not a text file (a script or a log)");
    }
    /* a log: an argument dump, or a "# cmd" line; else a script */
    bool log = false;
    for (size_t i = 0; i < len && !log;) {
        size_t j = i;
        while (j < len && text[j] != '\n') j++;
        if (dump_start(text + i, j - i) || (j - i > 6 && !memcmp(text + i, "# cmd ", 6))) log = true;
        i = j + 1;
    }
    st = log ? pp_margs_parse_log(a, text, len, err) : pp_margs_parse_script(a, text, len, err);
    free(text);
    if (st == PP_OK && a->source == PP_MARGS_NONE)
        st = pp_error_set(err, PP_ERR_INPUT, path, 1, 1,
                          "no Megatron-LM arguments: no command runs a pretrain_*.py script with --flags, no line is "
                          "a --flag list, and there is no argument dump");
    if (st) pp_margs_free(a);
    return st;
}
