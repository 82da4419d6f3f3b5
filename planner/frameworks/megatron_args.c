/* Megatron-LM arguments from command lines, launch scripts and training logs (see pp_margs.h).
 *
 * Sources for what the arguments mean (the Megatron-LM snapshot whose option list is
 * tests/data/megatron_flags.txt):
 *  - megatron/training/arguments.py: the defaults (--attention-dropout/--hidden-dropout 0.1,
 *    --overlap-grad-reduce and --overlap-param-gather off unless given, --overlap-p2p-communication
 *    on), validate_args (bf16 accumulates and reduces gradients in fp32, --ffn-hidden-size
 *    defaults, kv_channels = hidden / heads, sequence parallelism switched off at tp 1,
 *    overlap_p2p_comm only with the interleaved schedule), moe_freq_type / tuple_type (the list
 *    expressions and "W,0" windows), _print_args (the dump);
 *  - megatron/training/argument_utils.py ArgumentGroupFactory: a dataclass bool that defaults to
 *    True becomes --no-X / --disable-X with dest X;
 *  - megatron/core/transformer/transformer_config.py: MoE and MLA fields and defaults
 *    (moe_router_topk 2, moe_token_dispatcher_type allgather);
 *  - megatron/core/transformer/pipeline_parallel_layer_layout.py: the layout string;
 *  - megatron/core/transformer/utils.py is_layer_window_attention: window_attn_skip_freq;
 *  - megatron/core/models/backends.py LocalSpecProvider: the local implementation runs experts
 *    one by one (SequentialMLP) whatever --moe-grouped-gemm says. */
#include "pp_margs.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pp_yaml.h"

#define MARGS_MAX_BYTES (64 * 1024 * 1024) /* a log of a long run; larger inputs are refused */
#define MARGS_MAX_WORDS 100000             /* words of one command after expansion */
#define MARGS_MAX_VARS 4096
#define MARGS_MAX_LIST 100000              /* entries of a list expression */

/* ------------------------------------------------------------------ the table of arguments */

void pp_margs_init(pp_margs *a, const char *path)
{
    memset(a, 0, sizeof *a);
    snprintf(a->path, sizeof a->path, "%s", path ? path : "");
}

void pp_margs_free(pp_margs *a)
{
    if (!a) return;
    for (int i = 0; i < a->n; i++) free(a->kv[i].value);
    free(a->kv);
    a->kv = NULL;
    a->n = a->cap = 0;
}

static pp_margs_kv *kv_find(const pp_margs *a, const char *key)
{
    for (int i = 0; i < a->n; i++)
        if (!strcmp(a->kv[i].key, key)) return &a->kv[i];
    return NULL;
}

const char *pp_margs_get(const pp_margs *a, const char *key)
{
    const pp_margs_kv *k = kv_find(a, key);
    if (!k || !k->value || !k->value[0] || !strcmp(k->value, "None")) return NULL;
    return k->value;
}

/* Set key (replace = false: only when absent). */
static pp_status kv_set(pp_margs *a, const char *key, const char *flag, const char *value, bool unresolved,
                        int line, int col, bool replace, pp_error *err)
{
    pp_margs_kv *k = kv_find(a, key);
    if (k && !replace) return PP_OK;
    char *v = strdup(value ? value : "");
    if (!v) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (!k) {
        if (a->n == a->cap) {
            int nc = a->cap ? 2 * a->cap : 64;
            pp_margs_kv *p = realloc(a->kv, (size_t)nc * sizeof *p);
            if (!p) {
                free(v);
                return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            }
            a->kv = p;
            a->cap = nc;
        }
        k = &a->kv[a->n++];
        memset(k, 0, sizeof *k);
        snprintf(k->key, sizeof k->key, "%s", key);
    } else {
        free(k->value);
    }
    snprintf(k->flag, sizeof k->flag, "%s", flag ? flag : key);
    k->value = v;
    k->unresolved = unresolved;
    k->line = line;
    k->col = col;
    return PP_OK;
}

pp_status pp_margs_add(pp_margs *a, const char *key, const char *value, int line, pp_error *err)
{
    return kv_set(a, key, key, value, false, line, 0, false, err);
}

/* ------------------------------------------------------------------ list expressions */

/* moe_freq_type's language: expr = term ('+' term)*, term = factor ('*' factor)*,
 * factor = INT | '[' [expr (',' expr)*] ']' | '(' expr ')'. A value is an integer or a list. */
typedef struct {
    const char *s;
    size_t p;
    int64_t *buf; /* list storage: values are [off, off+n) slices of buf */
    size_t n, cap;
    char *msg;
    size_t msg_n;
    int depth;
} lx;

typedef struct {
    bool list;
    int64_t v;        /* the integer */
    size_t off, len;  /* the list: buf[off .. off+len) */
} lx_val;

static bool lx_fail(lx *x, const char *m)
{
    if (x->msg && !x->msg[0]) snprintf(x->msg, x->msg_n, "%s", m);
    return false;
}

static void lx_ws(lx *x)
{
    while (x->s[x->p] == ' ' || x->s[x->p] == '\t') x->p++;
}

static bool lx_push(lx *x, int64_t v)
{
    if (x->n >= 8 * (size_t)MARGS_MAX_LIST) return lx_fail(x, "the expression builds more than 800000 entries");
    if (x->n == x->cap) {
        size_t nc = x->cap ? 2 * x->cap : 64;
        int64_t *b = realloc(x->buf, nc * sizeof *b);
        if (!b) return lx_fail(x, "out of memory");
        x->buf = b;
        x->cap = nc;
    }
    x->buf[x->n++] = v;
    return true;
}

static bool lx_expr(lx *x, lx_val *out);

static bool lx_factor(lx *x, lx_val *out)
{
    lx_ws(x);
    if (++x->depth > 64) return lx_fail(x, "nested too deep");
    char c = x->s[x->p];
    bool ok = true;
    if (isdigit((unsigned char)c) || c == '-') {
        char *end = NULL;
        errno = 0;
        long long v = strtoll(x->s + x->p, &end, 10);
        if (end == x->s + x->p || errno == ERANGE || v < -1000000000LL || v > 1000000000LL) {
            x->depth--;
            return lx_fail(x, "expected an integer");
        }
        x->p = (size_t)(end - x->s);
        *out = (lx_val){false, v, 0, 0};
    } else if (c == '(') {
        x->p++;
        ok = lx_expr(x, out);
        lx_ws(x);
        if (ok && x->s[x->p] != ')') ok = lx_fail(x, "expected ')'");
        if (ok) x->p++;
    } else if (c == '[') {
        x->p++;
        /* The elements are evaluated first (an element may itself be an expression), then copied
         * in order to the end of buf as the list's slice. */
        size_t start = x->n;
        int64_t tmp[256];
        size_t nt = 0;
        lx_ws(x);
        if (x->s[x->p] != ']') {
            for (;;) {
                lx_val e;
                if (!lx_expr(x, &e)) {
                    x->depth--;
                    return false;
                }
                if (e.list) {
                    x->depth--;
                    return lx_fail(x, "a list inside a list");
                }
                if (nt < sizeof tmp / sizeof tmp[0]) {
                    tmp[nt++] = e.v;
                } else {
                    x->depth--;
                    return lx_fail(x, "more than 256 literal entries (write a repetition: [1]*N)");
                }
                lx_ws(x);
                if (x->s[x->p] == ',') {
                    x->p++;
                    lx_ws(x);
                    if (x->s[x->p] == ']') break; /* Python's trailing comma */
                    continue;
                }
                break;
            }
        }
        if (x->s[x->p] != ']') {
            x->depth--;
            return lx_fail(x, "expected ',' or ']'");
        }
        x->p++;
        start = x->n;
        for (size_t i = 0; i < nt; i++)
            if (!lx_push(x, tmp[i])) {
                x->depth--;
                return false;
            }
        *out = (lx_val){true, 0, start, nt};
    } else {
        ok = lx_fail(x, c ? "unexpected character" : "unexpected end");
    }
    x->depth--;
    return ok;
}

static bool lx_term(lx *x, lx_val *out)
{
    if (!lx_factor(x, out)) return false;
    for (;;) {
        lx_ws(x);
        if (x->s[x->p] != '*') return true;
        x->p++;
        lx_val r;
        if (!lx_factor(x, &r)) return false;
        if (!out->list && !r.list) {
            double v = (double)out->v * (double)r.v;
            if (fabs(v) > 1e15) return lx_fail(x, "number too large");
            out->v *= r.v;
            continue;
        }
        if (out->list && r.list) return lx_fail(x, "a list times a list");
        lx_val l = out->list ? *out : r;
        int64_t k = out->list ? r.v : out->v;
        if (k < 0) k = 0;
        if ((double)l.len * (double)k > MARGS_MAX_LIST) return lx_fail(x, "the list is longer than 100000 entries");
        size_t start = x->n;
        for (int64_t i = 0; i < k; i++)
            for (size_t j = 0; j < l.len; j++)
                if (!lx_push(x, x->buf[l.off + j])) return false;
        *out = (lx_val){true, 0, start, (size_t)k * l.len};
    }
}

static bool lx_expr(lx *x, lx_val *out)
{
    if (!lx_term(x, out)) return false;
    for (;;) {
        lx_ws(x);
        if (x->s[x->p] != '+') return true;
        x->p++;
        lx_val r;
        if (!lx_term(x, &r)) return false;
        if (out->list != r.list) return lx_fail(x, "a list plus an integer");
        if (!out->list) {
            out->v += r.v;
            continue;
        }
        size_t start = x->n;
        for (size_t j = 0; j < out->len; j++)
            if (!lx_push(x, x->buf[out->off + j])) return false;
        for (size_t j = 0; j < r.len; j++)
            if (!lx_push(x, x->buf[r.off + j])) return false;
        *out = (lx_val){true, 0, start, out->len + r.len};
    }
}

pp_status pp_margs_list_expr(const char *s, int64_t *out, int max, int *n, int64_t *value, int *col,
                             char *msg, size_t msg_n)
{
    lx x = {s ? s : "", 0, NULL, 0, 0, msg, msg_n, 0};
    if (msg && msg_n) msg[0] = 0;
    *n = 0;
    *value = 0;
    if (col) *col = 0;
    lx_val v;
    bool ok = lx_expr(&x, &v);
    lx_ws(&x);
    if (ok && x.s[x.p]) ok = lx_fail(&x, "unexpected text after the expression");
    if (ok && v.list && v.len > (size_t)max) {
        snprintf(msg, msg_n, "the list has %zu entries, more than %d", v.len, max);
        ok = false;
    }
    if (!ok) {
        if (col) *col = (int)x.p + 1;
        free(x.buf);
        return PP_ERR_INPUT;
    }
    if (v.list) {
        for (size_t i = 0; i < v.len; i++) out[i] = x.buf[v.off + i];
        *n = (int)v.len;
    } else {
        *value = v.v;
    }
    free(x.buf);
    return PP_OK;
}

/* ------------------------------------------------------------------ reading the input */

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

/* ------------------------------------------------------------------ a small reading of bash */

/* One word after expansion, with where its text was written (an array element keeps the line of
 * its definition, so an error points there). */
typedef struct {
    char *s;
    bool unresolved; /* holds a variable, command or arithmetic the script does not define */
    int line, col;
} sh_word;

typedef struct {
    sh_word *w;
    int n, cap;
} sh_words;

typedef struct {
    char name[64];
    sh_words v; /* a scalar has one value */
} sh_var;

/* A token of the input: a word as written (quotes kept), a separator, or an array assignment
 * NAME=( words ). */
enum { T_WORD, T_SEP, T_END, T_ARRAY };
typedef struct sh_tok {
    int type;
    char *s;
    int line, col;
    char name[64];
    bool append;          /* NAME+=( ... ) */
    struct sh_tok *el;    /* T_ARRAY: the element words */
    int nel;
} sh_tok;

typedef struct {
    const char *t;
    size_t len, p;
    int line, col;
    const char *path;
    pp_error *err;
    char heredoc[8][128]; /* delimiters waiting for the end of the line */
    bool heredoc_tabs[8];
    int n_heredoc;
    sh_var *vars;
    int nv, capv;
    /* the best Megatron command so far */
    sh_words args;
    int args_score, args_line;
    char program[64];
    int64_t nproc, nnodes; /* the launcher's, 0 unknown */
} sh_ctx;

static void words_free(sh_words *w)
{
    for (int i = 0; i < w->n; i++) free(w->w[i].s);
    free(w->w);
    memset(w, 0, sizeof *w);
}

static bool words_push(sh_words *w, const char *s, size_t n, bool unres, int line, int col)
{
    if (w->n >= MARGS_MAX_WORDS) return false;
    if (w->n == w->cap) {
        int nc = w->cap ? 2 * w->cap : 16;
        sh_word *p = realloc(w->w, (size_t)nc * sizeof *p);
        if (!p) return false;
        w->w = p;
        w->cap = nc;
    }
    char *c = malloc(n + 1);
    if (!c) return false;
    memcpy(c, s, n);
    c[n] = 0;
    w->w[w->n++] = (sh_word){c, unres, line, col};
    return true;
}

static void tok_free(sh_tok *t)
{
    free(t->s);
    for (int i = 0; i < t->nel; i++) tok_free(&t->el[i]);
    free(t->el);
    memset(t, 0, sizeof *t);
}

#define SH_BAD(line, col, ...) pp_error_set(c->err, PP_ERR_INPUT, c->path, line, col, __VA_ARGS__)
#define SH_NOMEM() pp_error_set(c->err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory")

static int sh_peek(const sh_ctx *c, size_t k) { return c->p + k < c->len ? (unsigned char)c->t[c->p + k] : -1; }

static void sh_adv(sh_ctx *c, size_t k)
{
    for (size_t i = 0; i < k && c->p < c->len; i++, c->p++) {
        if (c->t[c->p] == '\n') {
            c->line++;
            c->col = 1;
        } else {
            c->col++;
        }
    }
}

static bool is_name_start(int ch) { return ch == '_' || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z'); }
static bool is_name_char(int ch) { return is_name_start(ch) || (ch >= '0' && ch <= '9'); }
static bool is_op_char(int ch) { return ch == ';' || ch == '&' || ch == '|' || ch == '(' || ch == ')' || ch == '<' || ch == '>'; }

/* Skip a here-document's body: the lines up to its delimiter. */
static void sh_skip_heredocs(sh_ctx *c)
{
    for (int h = 0; h < c->n_heredoc; h++) {
        while (c->p < c->len) {
            size_t e = c->p;
            while (e < c->len && c->t[e] != '\n') e++;
            size_t b = c->p;
            if (c->heredoc_tabs[h])
                while (b < e && c->t[b] == '\t') b++;
            bool end = e - b == strlen(c->heredoc[h]) && !memcmp(c->t + b, c->heredoc[h], e - b);
            sh_adv(c, e - c->p + (e < c->len ? 1 : 0));
            if (end) break;
        }
    }
    c->n_heredoc = 0;
}

/* Past a quoted or nested construct starting at c->p (the opening character): '...', "...",
 * `...`, $(...), $((...)), ${...}. false: unterminated (the error is set). */
static bool sh_skip_construct(sh_ctx *c)
{
    int line = c->line, col = c->col;
    int ch = sh_peek(c, 0);
    if (ch == '\'') {
        sh_adv(c, 1);
        while (c->p < c->len && c->t[c->p] != '\'') sh_adv(c, 1);
        if (c->p >= c->len) return SH_BAD(line, col, "unterminated quote ' (a string opened here is never closed)"), false;
        sh_adv(c, 1);
        return true;
    }
    if (ch == '"' || ch == '`') {
        sh_adv(c, 1);
        while (c->p < c->len && c->t[c->p] != ch) {
            if (c->t[c->p] == '\\') sh_adv(c, 2);
            else if (ch == '"' && c->t[c->p] == '$' && (sh_peek(c, 1) == '(' || sh_peek(c, 1) == '{')) {
                if (!sh_skip_construct(c)) return false;
            } else if (ch == '"' && c->t[c->p] == '`') {
                if (!sh_skip_construct(c)) return false;
            } else sh_adv(c, 1);
        }
        if (c->p >= c->len)
            return SH_BAD(line, col, "unterminated quote %c (a string opened here is never closed)", ch), false;
        sh_adv(c, 1);
        return true;
    }
    /* $( $(( ${ */
    sh_adv(c, 1);
    int open = sh_peek(c, 0), close = open == '{' ? '}' : ')';
    int depth = 0;
    while (c->p < c->len) {
        int k = sh_peek(c, 0);
        if (k == '\'' || k == '"' || k == '`') {
            if (!sh_skip_construct(c)) return false;
            continue;
        }
        if (k == '\\') {
            sh_adv(c, 2);
            continue;
        }
        if (k == '$' && (sh_peek(c, 1) == '(' || sh_peek(c, 1) == '{')) {
            if (!sh_skip_construct(c)) return false;
            continue;
        }
        if (k == open) depth++;
        else if (k == close && --depth == 0) {
            sh_adv(c, 1);
            return true;
        }
        sh_adv(c, 1);
    }
    return SH_BAD(line, col, "unterminated $%c (never closed)", open), false;
}

static pp_status sh_lex(sh_ctx *c, sh_tok *t);

/* A raw word from c->p: up to unquoted blank or operator. */
static pp_status sh_lex_word(sh_ctx *c, sh_tok *t)
{
    size_t b = c->p;
    memset(t, 0, sizeof *t);
    t->type = T_WORD;
    t->line = c->line;
    t->col = c->col;
    while (c->p < c->len) {
        int ch = sh_peek(c, 0);
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') break;
        if (is_op_char(ch)) break;
        if (ch == '\\') {
            sh_adv(c, 2);
            continue;
        }
        if (ch == '\'' || ch == '"' || ch == '`' || (ch == '$' && (sh_peek(c, 1) == '(' || sh_peek(c, 1) == '{'))) {
            if (!sh_skip_construct(c)) return c->err->status;
            continue;
        }
        sh_adv(c, 1);
    }
    size_t n = c->p - b;
    t->s = malloc(n + 1);
    if (!t->s) return SH_NOMEM();
    /* line continuations inside a word vanish */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (c->t[b + i] == '\\' && i + 1 < n && c->t[b + i + 1] == '\n') {
            i++;
            continue;
        }
        t->s[k++] = c->t[b + i];
    }
    t->s[k] = 0;
    /* NAME=( or NAME+=( : an array assignment */
    if (sh_peek(c, 0) == '(' && k >= 2 && t->s[k - 1] == '=' && is_name_start((unsigned char)t->s[0])) {
        size_t m = 0;
        while (m < k && is_name_char((unsigned char)t->s[m])) m++;
        bool app = m + 2 == k && t->s[m] == '+';
        if ((m + 1 == k || app) && m < sizeof t->name) {
            memcpy(t->name, t->s, m);
            t->name[m] = 0;
            t->append = app;
            t->type = T_ARRAY;
            sh_adv(c, 1);
            for (;;) {
                sh_tok e;
                memset(&e, 0, sizeof e);
                /* newlines and comments are blanks inside the parentheses */
                for (;;) {
                    int ch = sh_peek(c, 0);
                    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') sh_adv(c, 1);
                    else if (ch == '\\' && sh_peek(c, 1) == '\n') sh_adv(c, 2);
                    else if (ch == '#') {
                        while (c->p < c->len && c->t[c->p] != '\n') sh_adv(c, 1);
                    } else break;
                }
                if (c->p >= c->len) return SH_BAD(t->line, t->col, "the array %s=( is never closed with ')'", t->name);
                if (sh_peek(c, 0) == ')') {
                    sh_adv(c, 1);
                    break;
                }
                if (is_op_char(sh_peek(c, 0)))
                    return SH_BAD(c->line, c->col, "unexpected '%c' inside the array %s=( ... )", sh_peek(c, 0), t->name);
                pp_status st = sh_lex_word(c, &e);
                if (st) {
                    tok_free(&e);
                    return st;
                }
                sh_tok *el = realloc(t->el, (size_t)(t->nel + 1) * sizeof *el);
                if (!el) {
                    tok_free(&e);
                    return SH_NOMEM();
                }
                t->el = el;
                t->el[t->nel++] = e;
            }
        }
    }
    return PP_OK;
}

static pp_status sh_lex(sh_ctx *c, sh_tok *t)
{
    memset(t, 0, sizeof *t);
    for (;;) {
        int ch = sh_peek(c, 0);
        if (ch < 0) {
            t->type = T_END;
            t->line = c->line;
            return PP_OK;
        }
        if (ch == ' ' || ch == '\t' || ch == '\r') {
            sh_adv(c, 1);
            continue;
        }
        if (ch == '\\' && sh_peek(c, 1) == '\n') {
            sh_adv(c, 2);
            continue;
        }
        if (ch == '#') {
            while (c->p < c->len && c->t[c->p] != '\n') sh_adv(c, 1);
            continue;
        }
        t->line = c->line;
        t->col = c->col;
        if (ch == '\n') {
            sh_adv(c, 1);
            sh_skip_heredocs(c);
            t->type = T_SEP;
            return PP_OK;
        }
        if (ch == '<' || ch == '>' || (ch == '&' && sh_peek(c, 1) == '>')) {
            /* a redirection and its target word: not an argument */
            bool here = ch == '<' && sh_peek(c, 1) == '<' && sh_peek(c, 2) != '<';
            bool tabs = here && sh_peek(c, 2) == '-';
            while (c->p < c->len && strchr("<>&-|", c->t[c->p])) sh_adv(c, 1);
            while (sh_peek(c, 0) == ' ' || sh_peek(c, 0) == '\t') sh_adv(c, 1);
            if (c->p >= c->len || sh_peek(c, 0) == '\n') continue;
            sh_tok target;
            memset(&target, 0, sizeof target);
            pp_status st = sh_lex_word(c, &target);
            if (st) {
                tok_free(&target);
                return st;
            }
            if (here && c->n_heredoc < 8) {
                size_t k = 0;
                for (const char *q = target.s; *q && k + 1 < sizeof c->heredoc[0]; q++)
                    if (*q != '\'' && *q != '"' && *q != '\\') c->heredoc[c->n_heredoc][k++] = *q;
                c->heredoc[c->n_heredoc][k] = 0;
                c->heredoc_tabs[c->n_heredoc++] = tabs;
            }
            tok_free(&target);
            continue;
        }
        if (is_op_char(ch)) {
            while (c->p < c->len && (c->t[c->p] == ';' || c->t[c->p] == '&' || c->t[c->p] == '|')) sh_adv(c, 1);
            if (c->p < c->len && (c->t[c->p] == '(' || c->t[c->p] == ')') && t->col == c->col) sh_adv(c, 1);
            t->type = T_SEP;
            return PP_OK;
        }
        /* fd digits right before a redirection ("2>&1") are part of it */
        if (isdigit(ch)) {
            size_t k = 0;
            while (isdigit(sh_peek(c, k))) k++;
            if (sh_peek(c, k) == '<' || sh_peek(c, k) == '>') {
                sh_adv(c, k);
                continue;
            }
        }
        return sh_lex_word(c, t);
    }
}

/* ---- expansion */

static sh_var *var_find(sh_ctx *c, const char *name, size_t n)
{
    for (int i = c->nv - 1; i >= 0; i--)
        if (strlen(c->vars[i].name) == n && !memcmp(c->vars[i].name, name, n)) return &c->vars[i];
    return NULL;
}

/* Set (or append to) a variable; takes the words. */
static pp_status var_set(sh_ctx *c, const char *name, sh_words *v, bool append)
{
    sh_var *x = var_find(c, name, strlen(name));
    if (!x) {
        if (c->nv >= MARGS_MAX_VARS) return SH_BAD(c->line, 1, "more than %d variables", MARGS_MAX_VARS);
        if (c->nv == c->capv) {
            int nc = c->capv ? 2 * c->capv : 32;
            sh_var *p = realloc(c->vars, (size_t)nc * sizeof *p);
            if (!p) return SH_NOMEM();
            c->vars = p;
            c->capv = nc;
        }
        x = &c->vars[c->nv++];
        memset(x, 0, sizeof *x);
        snprintf(x->name, sizeof x->name, "%s", name);
    }
    if (!append) {
        words_free(&x->v);
        x->v = *v;
        memset(v, 0, sizeof *v);
        return PP_OK;
    }
    for (int i = 0; i < v->n; i++)
        if (!words_push(&x->v, v->w[i].s, strlen(v->w[i].s), v->w[i].unresolved, v->w[i].line, v->w[i].col))
            return SH_NOMEM();
    words_free(v);
    return PP_OK;
}

/* The word being built. */
typedef struct {
    sh_words *out;
    char *s;
    size_t n, cap;
    bool have;       /* a word exists (text, or quotes that make an empty word) */
    bool unres;
    int line, col;   /* of the word */
    bool split;      /* unquoted expansions split on blanks */
    bool oom;
} sh_build;

static void b_put(sh_build *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 64;
        while (nc < b->n + n + 1) nc *= 2;
        char *p = realloc(b->s, nc);
        if (!p) {
            b->oom = true;
            return;
        }
        b->s = p;
        b->cap = nc;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
    b->have = true;
}

static void b_end(sh_build *b)
{
    if (b->oom) return;
    if (b->have && !words_push(b->out, b->s ? b->s : "", b->n, b->unres, b->line, b->col)) b->oom = true;
    b->n = 0;
    b->have = false;
    b->unres = false;
}

/* Text that came from an expansion: split on blanks when unquoted and splitting. */
static void b_expanded(sh_build *b, const char *s, size_t n, bool quoted)
{
    if (quoted || !b->split) {
        b_put(b, s, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') b_end(b);
        else b_put(b, s + i, 1);
    }
}

static pp_status sh_expand_text(sh_ctx *c, const char *s, size_t n, bool dq, sh_build *b);

/* $(( expression )): integers, variables, + - * / % and parentheses. */
typedef struct {
    sh_ctx *c;
    const char *s;
    size_t p, n;
    bool ok;
    int depth;
} arith;

static int64_t ar_expr(arith *a);

static void ar_ws(arith *a)
{
    while (a->p < a->n && (a->s[a->p] == ' ' || a->s[a->p] == '\t' || a->s[a->p] == '\n')) a->p++;
}

static int64_t ar_atom(arith *a)
{
    ar_ws(a);
    if (a->p >= a->n || ++a->depth > 64) {
        a->ok = false;
        return 0;
    }
    char ch = a->s[a->p];
    int64_t v = 0;
    if (ch == '(') {
        a->p++;
        v = ar_expr(a);
        ar_ws(a);
        if (a->p < a->n && a->s[a->p] == ')') a->p++;
        else a->ok = false;
    } else if (ch == '-' || ch == '+') {
        a->p++;
        v = ar_atom(a);
        if (ch == '-') v = -v;
    } else if (isdigit((unsigned char)ch)) {
        char buf[32];
        size_t k = 0;
        while (a->p < a->n && isdigit((unsigned char)a->s[a->p]) && k < sizeof buf - 1) buf[k++] = a->s[a->p++];
        buf[k] = 0;
        errno = 0;
        v = strtoll(buf, NULL, 10);
        if (errno || k >= 18) a->ok = false;
    } else if (ch == '$' || is_name_start((unsigned char)ch)) {
        if (ch == '$') a->p++;
        bool brace = a->p < a->n && a->s[a->p] == '{';
        if (brace) a->p++;
        size_t b = a->p;
        while (a->p < a->n && is_name_char((unsigned char)a->s[a->p])) a->p++;
        sh_var *x = var_find(a->c, a->s + b, a->p - b);
        if (brace) {
            if (a->p < a->n && a->s[a->p] == '}') a->p++;
            else a->ok = false;
        }
        char *end = NULL;
        if (!x || x->v.n < 1 || x->v.w[0].unresolved) {
            a->ok = false;
        } else {
            errno = 0;
            v = strtoll(x->v.w[0].s, &end, 10);
            if (errno || end == x->v.w[0].s || *end) a->ok = false;
        }
    } else {
        a->ok = false;
    }
    a->depth--;
    return v;
}

static int64_t ar_term(arith *a)
{
    int64_t v = ar_atom(a);
    for (;;) {
        ar_ws(a);
        if (a->p >= a->n || !strchr("*/%", a->s[a->p])) return v;
        char op = a->s[a->p++];
        int64_t r = ar_atom(a);
        if (op == '*') {
            if (fabs((double)v * (double)r) > 9e18) a->ok = false;
            else v *= r;
        } else if (r == 0) {
            a->ok = false;
        } else {
            v = op == '/' ? v / r : v % r;
        }
    }
}

static int64_t ar_expr(arith *a)
{
    int64_t v = ar_term(a);
    for (;;) {
        ar_ws(a);
        if (a->p >= a->n || (a->s[a->p] != '+' && a->s[a->p] != '-')) return v;
        char op = a->s[a->p++];
        int64_t r = ar_term(a);
        if (fabs((double)v + (op == '+' ? 1.0 : -1.0) * (double)r) > 9e18) a->ok = false;
        else v = op == '+' ? v + r : v - r;
    }
}

/* Index of the character closing the construct that opens at s[i] ('(' or '{'), honouring
 * quotes and nesting; n when there is none. */
static size_t match_close(const char *s, size_t n, size_t i)
{
    char open = s[i], close = open == '{' ? '}' : ')';
    int depth = 0;
    for (size_t k = i; k < n; k++) {
        char ch = s[k];
        if (ch == '\\') {
            k++;
            continue;
        }
        if (ch == '\'') {
            while (++k < n && s[k] != '\'') {}
            continue;
        }
        if (ch == open) depth++;
        else if (ch == close && --depth == 0) return k;
    }
    return n;
}

/* One $-expansion at s[0] (s[0] == '$'); *used: characters consumed. */
static pp_status sh_dollar(sh_ctx *c, const char *s, size_t n, bool dq, sh_build *b, size_t *used)
{
    bool quoted = dq;
    if (n < 2) {
        b_put(b, "$", 1);
        *used = 1;
        return PP_OK;
    }
    char ch = s[1];
    /* $(( arithmetic )) and $( command ) */
    if (ch == '(') {
        size_t e = match_close(s, n, 1);
        *used = e < n ? e + 1 : n;
        if (n > 2 && s[2] == '(' && e < n && e >= 3 && s[e - 1] == ')') {
            arith a = {c, s + 3, 0, e - 4, true, 0};
            int64_t v = ar_expr(&a);
            ar_ws(&a);
            if (a.ok && a.p == a.n) {
                char num[32];
                int k = snprintf(num, sizeof num, "%lld", (long long)v);
                b_expanded(b, num, (size_t)k, quoted);
                return PP_OK;
            }
        }
        b_put(b, s, *used); /* a command is not run: its output is unknown */
        b->unres = true;
        return PP_OK;
    }
    if (ch == '{') {
        size_t e = match_close(s, n, 1);
        *used = e < n ? e + 1 : n;
        const char *in = s + 2;
        size_t inn = e < n ? e - 2 : n - 2;
        bool len_of = inn > 0 && in[0] == '#' && inn > 1;
        size_t k = len_of ? 1 : 0;
        size_t nb = k;
        if (k < inn && (in[k] == '@' || in[k] == '*' || isdigit((unsigned char)in[k]))) k++;
        else
            while (k < inn && is_name_char((unsigned char)in[k])) k++;
        size_t ne = k;
        int index = -1; /* -1 scalar, -2 all ([@] / [*]), >= 0 one element */
        if (k < inn && in[k] == '[') {
            size_t r = k + 1;
            while (r < inn && in[r] != ']') r++;
            if (r - k - 1 == 1 && (in[k + 1] == '@' || in[k + 1] == '*')) index = -2;
            else {
                char *end = NULL;
                long v = strtol(in + k + 1, &end, 10);
                if (end == in + r && v >= 0) index = (int)v;
                else index = -3;
            }
            k = r + 1;
        }
        sh_var *x = ne > nb ? var_find(c, in + nb, ne - nb) : NULL;
        bool special = ne - nb == 1 && (in[nb] == '@' || in[nb] == '*');
        bool set = x && x->v.n > 0 && !(x->v.n == 1 && !x->v.w[0].s[0]);
        if (len_of) {
            if (k != inn || !x) {
                b_put(b, s, *used);
                b->unres = true;
                return PP_OK;
            }
            char num[32];
            int m = snprintf(num, sizeof num, "%zu", index == -2 ? (size_t)x->v.n : strlen(x->v.n ? x->v.w[0].s : ""));
            b_expanded(b, num, (size_t)m, quoted);
            return PP_OK;
        }
        if (k < inn) {
            /* ${X:-w} ${X-w} ${X:=w} ${X=w} ${X:?m} ${X?m} ${X:+w} ${X+w} */
            bool colon = in[k] == ':';
            size_t o = k + (colon ? 1 : 0);
            char op = o < inn ? in[o] : 0;
            if (op != '-' && op != '=' && op != '?' && op != '+') {
                b_put(b, s, *used); /* ${X%...}, ${X/...}, ${X:1:2}: not evaluated */
                b->unres = true;
                return PP_OK;
            }
            bool use_default = colon ? !set : !x;
            const char *w = in + o + 1;
            size_t wn = inn - o - 1;
            if (op == '+') {
                if (!use_default) return sh_expand_text(c, w, wn, quoted, b);
                return PP_OK;
            }
            if (!use_default) goto value;
            if (op == '?') {
                b_put(b, s, *used);
                b->unres = true;
                return PP_OK;
            }
            if (op == '=' && ne > nb && !special) {
                sh_words tmp = {0};
                sh_build bb = {&tmp, NULL, 0, 0, false, false, b->line, b->col, false, false};
                pp_status st = sh_expand_text(c, w, wn, true, &bb);
                if (st == PP_OK) b_end(&bb);
                free(bb.s);
                if (st || bb.oom) {
                    words_free(&tmp);
                    return st ? st : SH_NOMEM();
                }
                char name[64];
                snprintf(name, sizeof name, "%.*s", (int)(ne - nb), in + nb);
                st = var_set(c, name, &tmp, false);
                words_free(&tmp);
                if (st) return st;
            }
            return sh_expand_text(c, w, wn, quoted, b);
        }
    value:
        if (special) {
            *used = e < n ? e + 1 : n; /* "$@": the script's own arguments, none here */
            return PP_OK;
        }
        if (!x || index == -3) {
            b_put(b, s, *used);
            b->unres = true;
            return PP_OK;
        }
        if (index == -2) {
            for (int i = 0; i < x->v.n; i++) {
                if (i && quoted) b_end(b);
                else if (i) b_expanded(b, " ", 1, quoted);
                if (!b->n) b->line = x->v.w[i].line, b->col = x->v.w[i].col;
                b_expanded(b, x->v.w[i].s, strlen(x->v.w[i].s), quoted);
                if (x->v.w[i].unresolved) b->unres = true;
            }
            return PP_OK;
        }
        int i = index < 0 ? 0 : index;
        if (i < x->v.n) {
            b_expanded(b, x->v.w[i].s, strlen(x->v.w[i].s), quoted);
            if (x->v.w[i].unresolved) b->unres = true;
        }
        return PP_OK;
    }
    /* $NAME, $@, $*, $#, $0..$9, $$, $?, $! */
    if (ch == '@' || ch == '*') {
        *used = 2;
        return PP_OK;
    }
    if (ch == '#') {
        *used = 2;
        b_expanded(b, "0", 1, quoted);
        return PP_OK;
    }
    if (isdigit((unsigned char)ch) || ch == '$' || ch == '?' || ch == '!' || ch == '-') {
        *used = 2;
        b_put(b, s, 2);
        b->unres = true;
        return PP_OK;
    }
    if (!is_name_start((unsigned char)ch)) {
        *used = 1;
        b_put(b, "$", 1);
        return PP_OK;
    }
    size_t k = 1;
    while (k < n && is_name_char((unsigned char)s[k])) k++;
    *used = k;
    sh_var *x = var_find(c, s + 1, k - 1);
    if (!x) {
        b_put(b, s, k);
        b->unres = true;
        return PP_OK;
    }
    if (x->v.n > 0) {
        b_expanded(b, x->v.w[0].s, strlen(x->v.w[0].s), quoted);
        if (x->v.w[0].unresolved) b->unres = true;
    }
    return PP_OK;
}

/* Expand text (quotes removed, $ expansions done) into b. dq: inside double quotes. */
static pp_status sh_expand_text(sh_ctx *c, const char *s, size_t n, bool dq, sh_build *b)
{
    for (size_t i = 0; i < n;) {
        char ch = s[i];
        if (ch == '\\') {
            if (i + 1 < n) {
                if (!dq || strchr("$`\"\\\n", s[i + 1])) {
                    if (s[i + 1] != '\n') b_put(b, s + i + 1, 1);
                } else {
                    b_put(b, s + i, 2);
                }
            }
            i += 2;
            continue;
        }
        if (!dq && ch == '\'') {
            size_t e = i + 1;
            while (e < n && s[e] != '\'') e++;
            b->have = true;
            b_put(b, s + i + 1, e - i - 1);
            i = e + 1;
            continue;
        }
        if (!dq && ch == '"') {
            size_t e = i + 1;
            while (e < n && s[e] != '"') {
                if (s[e] == '\\') e++;
                else if (s[e] == '$' && e + 1 < n && (s[e + 1] == '(' || s[e + 1] == '{')) e = match_close(s, n, e + 1);
                else if (s[e] == '`') {
                    while (++e < n && s[e] != '`') {}
                }
                e++;
            }
            if (e > n) e = n;
            /* "${ARR[@]}" of an empty array makes no word; "" makes an empty one */
            bool had = b->have;
            size_t before = b->n;
            sh_words *o = b->out;
            int nout = o->n;
            pp_status st = sh_expand_text(c, s + i + 1, e - i - 1, true, b);
            if (st) return st;
            bool only_all = e - i - 1 >= 4 && !memcmp(s + i + 1, "${", 2) && strstr(s + i + 1, "[@]}") &&
                            match_close(s, n, i + 2) == e - 1;
            bool only_at = e - i - 1 == 2 && !memcmp(s + i + 1, "$@", 2);
            if ((only_all || only_at) && b->n == before && o->n == nout) b->have = had;
            else if (b->n == before && o->n == nout) b->have = true;
            i = e + 1;
            continue;
        }
        if (ch == '`') {
            size_t e = i + 1;
            while (e < n && s[e] != '`') e++;
            b_put(b, s + i, e < n ? e - i + 1 : n - i);
            b->unres = true;
            i = e + 1;
            continue;
        }
        if (ch == '$') {
            size_t used = 1;
            pp_status st = sh_dollar(c, s + i, n - i, dq, b, &used);
            if (st) return st;
            i += used;
            continue;
        }
        b_put(b, s + i, 1);
        i++;
    }
    return b->oom ? SH_NOMEM() : PP_OK;
}

/* A token into words (split: unquoted expansions split on blanks). */
static pp_status sh_expand(sh_ctx *c, const sh_tok *t, bool split, sh_words *out)
{
    sh_build b = {out, NULL, 0, 0, false, false, t->line, t->col, split, false};
    pp_status st = sh_expand_text(c, t->s, strlen(t->s), false, &b);
    if (st == PP_OK) b_end(&b);
    free(b.s);
    if (st == PP_OK && b.oom) st = SH_NOMEM();
    return st;
}

/* NAME=value (NAME+=value) as written, not quoted: the length of NAME, else 0. */
static size_t assignment_name(const char *s, bool *append)
{
    size_t k = 0;
    if (!is_name_start((unsigned char)s[0])) return 0;
    while (is_name_char((unsigned char)s[k])) k++;
    *append = s[k] == '+' && s[k + 1] == '=';
    if (s[k] == '=' || *append) return k;
    return 0;
}

static pp_status sh_assign_word(sh_ctx *c, const sh_tok *t)
{
    bool app = false;
    size_t k = assignment_name(t->s, &app);
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(k < 63 ? k : 63), t->s);
    sh_tok v = *t;
    v.s = t->s + k + (app ? 2 : 1);
    v.col = t->col + (int)(k + (app ? 2 : 1));
    sh_words w = {0};
    sh_build b = {&w, NULL, 0, 0, true, false, v.line, v.col, false, false};
    pp_status st = sh_expand_text(c, v.s, strlen(v.s), false, &b);
    if (st == PP_OK) b_end(&b);
    free(b.s);
    if (st == PP_OK && b.oom) st = SH_NOMEM();
    if (st == PP_OK && app) {
        sh_var *x = var_find(c, name, strlen(name));
        if (x && x->v.n > 0 && w.n == 1) {
            /* NAME+=text appends to the first value */
            size_t l0 = strlen(x->v.w[0].s), l1 = strlen(w.w[0].s);
            char *s = realloc(x->v.w[0].s, l0 + l1 + 1);
            if (!s) st = SH_NOMEM();
            else {
                memcpy(s + l0, w.w[0].s, l1 + 1);
                x->v.w[0].s = s;
                x->v.w[0].unresolved |= w.w[0].unresolved;
            }
            words_free(&w);
            return st;
        }
    }
    if (st == PP_OK) st = var_set(c, name, &w, false);
    words_free(&w);
    return st;
}

static pp_status sh_assign_array(sh_ctx *c, const sh_tok *t)
{
    sh_words w = {0};
    pp_status st = PP_OK;
    for (int i = 0; i < t->nel && st == PP_OK; i++) st = sh_expand(c, &t->el[i], true, &w);
    if (st == PP_OK) st = var_set(c, t->name, &w, t->append);
    words_free(&w);
    return st;
}

static const char *base_name(const char *s)
{
    const char *b = strrchr(s, '/');
    return b ? b + 1 : s;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* The launcher's GPU count: torchrun / python -m torch.distributed.run --nproc-per-node N
 * --nnodes M (also --nproc_per_node, --flag=value), deepspeed --num_gpus N --num_nodes M. */
static void launcher_gpus(const sh_words *w, int upto, int64_t *nproc, int64_t *nnodes)
{
    *nproc = *nnodes = 0;
    for (int i = 0; i < upto; i++) {
        const char *f = w->w[i].s, *v = NULL;
        char name[64];
        const char *eq = strchr(f, '=');
        size_t l = eq ? (size_t)(eq - f) : strlen(f);
        if (l >= sizeof name) continue;
        memcpy(name, f, l);
        name[l] = 0;
        if (eq) v = eq + 1;
        else if (i + 1 < upto) v = w->w[i + 1].s;
        if (!v || (!eq && w->w[i + 1].unresolved) || (eq && w->w[i].unresolved)) continue;
        char *end = NULL;
        long long x = strtoll(v, &end, 10);
        if (end == v || *end || x < 1 || x > 10000000) continue;
        if (!strcmp(name, "--nproc-per-node") || !strcmp(name, "--nproc_per_node") || !strcmp(name, "--num_gpus") ||
            !strcmp(name, "--num-gpus"))
            *nproc = x;
        else if (!strcmp(name, "--nnodes") || !strcmp(name, "--num_nodes") || !strcmp(name, "--num-nodes"))
            *nnodes = x;
    }
}

/* A command after its assignments: is it the one that runs Megatron? */
static pp_status sh_command(sh_ctx *c, sh_words *w, int line)
{
    int py = -1;
    for (int i = 0; i < w->n; i++)
        if (ends_with(w->w[i].s, ".py")) {
            py = i;
            break;
        }
    int first = py >= 0 ? py + 1 : 0;
    if (py < 0 && (w->n == 0 || strncmp(w->w[0].s, "--", 2))) return PP_OK;
    int flags = 0;
    bool shape = false;
    for (int i = first; i < w->n; i++)
        if (!strncmp(w->w[i].s, "--", 2)) {
            flags++;
            if (!strcmp(w->w[i].s, "--num-layers") || !strncmp(w->w[i].s, "--num-layers=", 13)) shape = true;
        }
    if (!flags) return PP_OK;
    /* A script may run other Python tools (data preprocessing) before training: the command that
     * runs a pretrain_*.py script, or gives --num-layers, wins over the first one. */
    int score = py < 0 ? 1 : 2;
    if (py >= 0 && (!strncmp(base_name(w->w[py].s), "pretrain", 8) || shape)) score = 3;
    if (py < 0 && c->args_score == 1) score = 1; /* bare flag lines add up */
    else if (score <= c->args_score) return PP_OK;
    if (score != 1 || c->args_score != 1) {
        words_free(&c->args);
        c->args_line = line;
    }
    c->args_score = score;
    snprintf(c->program, sizeof c->program, "%s", py >= 0 ? base_name(w->w[py].s) : "");
    for (int i = first; i < w->n; i++)
        if (!words_push(&c->args, w->w[i].s, strlen(w->w[i].s), w->w[i].unresolved, w->w[i].line, w->w[i].col))
            return SH_NOMEM();
    if (py >= 0) launcher_gpus(w, py, &c->nproc, &c->nnodes);
    return PP_OK;
}

static bool tok_is(const sh_tok *t, const char *s) { return t->type == T_WORD && !strcmp(t->s, s); }

static pp_status sh_process(sh_ctx *c, sh_tok *toks, int n)
{
    int i = 0;
    static const char *const skip[] = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until",
                                       "{", "}", "!", "time", "function", "exec", "nohup", "env"};
    for (;;) {
        bool any = false;
        for (size_t k = 0; i < n && k < sizeof skip / sizeof skip[0]; k++)
            if (tok_is(&toks[i], skip[k])) {
                i++;
                any = true;
                break;
            }
        if (!any) break;
    }
    if (i < n && (tok_is(&toks[i], "for") || tok_is(&toks[i], "case") || tok_is(&toks[i], "select") ||
                  tok_is(&toks[i], "esac")))
        return PP_OK;
    pp_status st = PP_OK;
    for (; i < n; i++) {
        bool app;
        if (toks[i].type == T_ARRAY) st = sh_assign_array(c, &toks[i]);
        else if (assignment_name(toks[i].s, &app)) st = sh_assign_word(c, &toks[i]);
        else break;
        if (st) return st;
    }
    if (i >= n) return PP_OK;
    const char *cmd = toks[i].type == T_WORD ? toks[i].s : "";
    if (!strcmp(cmd, "export") || !strcmp(cmd, "declare") || !strcmp(cmd, "typeset") || !strcmp(cmd, "local") ||
        !strcmp(cmd, "readonly")) {
        for (int j = i + 1; j < n && st == PP_OK; j++) {
            bool app;
            if (toks[j].type == T_ARRAY) st = sh_assign_array(c, &toks[j]);
            else if (assignment_name(toks[j].s, &app)) st = sh_assign_word(c, &toks[j]);
        }
        return st;
    }
    sh_words w = {0};
    for (int j = i; j < n && st == PP_OK; j++)
        if (toks[j].type == T_WORD) st = sh_expand(c, &toks[j], true, &w);
    if (st == PP_OK) st = sh_command(c, &w, toks[i].line);
    words_free(&w);
    return st;
}

/* Run the reading over the whole text; the Megatron words end in c->args. */
static pp_status sh_read(sh_ctx *c)
{
    sh_tok *toks = NULL;
    int n = 0, cap = 0;
    pp_status st = PP_OK;
    for (;;) {
        sh_tok t;
        st = sh_lex(c, &t);
        if (st) {
            tok_free(&t); /* what the lexer had built of it */
            break;
        }
        if (t.type == T_WORD || t.type == T_ARRAY) {
            if (n == cap) {
                int nc = cap ? 2 * cap : 32;
                sh_tok *p = realloc(toks, (size_t)nc * sizeof *p);
                if (!p) {
                    tok_free(&t);
                    st = SH_NOMEM();
                    break;
                }
                toks = p;
                cap = nc;
            }
            toks[n++] = t;
            if (n > MARGS_MAX_WORDS) {
                st = SH_BAD(t.line, t.col, "a command of more than %d words", MARGS_MAX_WORDS);
                break;
            }
            continue;
        }
        st = sh_process(c, toks, n);
        for (int i = 0; i < n; i++) tok_free(&toks[i]);
        n = 0;
        if (st || t.type == T_END) break;
    }
    for (int i = 0; i < n; i++) tok_free(&toks[i]);
    free(toks);
    return st;
}

/* ------------------------------------------------------------------ flags to dest names */

static bool key_known(const char *key); /* the tables below */

/* Flags whose dest is not their name (arguments.py dest=, deprecated spellings). value: the
 * stored value, NULL to keep the one given. */
static const struct { const char *flag, *key, *value; } flag_alias[] = {
    {"--disable-bias-linear", "add_bias_linear", "False"},
    {"--no-overlap-p2p-communication", "overlap_p2p_comm", "False"},
    {"--no-rope-fusion", "apply_rope_fusion", "False"},
    {"--no-position-embedding", "add_position_embedding", "False"},
    {"--no-async-tensor-model-parallel-allreduce", "async_tensor_model_parallel_allreduce", "False"},
    {"--fp8-format", "fp8", NULL},
    {"--fp4-format", "fp4", NULL},
    {"--norm-epsilon", "layernorm_epsilon", NULL},
    {"--output-logit-dtype", "logit_dtype", NULL},
    {"--apply-layernorm-1p", "layernorm_zero_centered_gamma", "True"},
    {"--recompute-activations", "recompute_granularity", "selective"},
    {"--checkpoint-activations", "recompute_granularity", "full"},
    {"--model-parallel-size", "tensor_model_parallel_size", NULL},
    {"--microbatch-group-size-per-virtual-pipeline-stage", "microbatch_group_size_per_vp_stage", NULL},
    {"--virtual-pipeline-model-parallel-size", "virtual_pipeline_model_parallel_size", NULL},
};

/* "--num-layers" -> "num_layers"; "--no-X" / "--disable-X" -> X = False when X is a dest parplan
 * knows (ArgumentGroupFactory's store_false flags), else no_X = True. */
static void flag_dest(const char *flag, char *key, size_t kn, const char **value)
{
    for (size_t i = 0; i < sizeof flag_alias / sizeof flag_alias[0]; i++)
        if (!strcmp(flag, flag_alias[i].flag)) {
            snprintf(key, kn, "%s", flag_alias[i].key);
            if (flag_alias[i].value) *value = flag_alias[i].value;
            return;
        }
    size_t k = 0;
    for (const char *p = flag + 2; *p && k + 1 < kn; p++) key[k++] = *p == '-' ? '_' : *p;
    key[k] = 0;
    const char *rest = !strncmp(key, "no_", 3) ? key + 3 : !strncmp(key, "disable_", 8) ? key + 8 : NULL;
    if (rest && !key_known(key) && key_known(rest) && !strcmp(*value, "True")) {
        memmove(key, rest, strlen(rest) + 1);
        *value = "False";
    }
}

/* The words after pretrain_*.py into the table: --flag value..., --flag=value, switches. */
static pp_status args_to_table(pp_margs *a, const sh_words *w, pp_error *err)
{
    for (int i = 0; i < w->n;) {
        const sh_word *f = &w->w[i];
        if (strncmp(f->s, "--", 2) || !f->s[2]) {
            i++; /* a stray word before any flag: argparse would refuse it; nothing to read */
            continue;
        }
        char flag[96];
        const char *eq = strchr(f->s, '=');
        size_t fl = eq ? (size_t)(eq - f->s) : strlen(f->s);
        if (fl >= sizeof flag)
            return pp_error_set(err, PP_ERR_INPUT, a->path, f->line, f->col, "a flag of more than 95 characters: '%.40s...'",
                                f->s);
        memcpy(flag, f->s, fl);
        flag[fl] = 0;
        /* the value: after '=', or the next words up to the next flag (nargs='+' options) */
        char *val = NULL;
        size_t vn = 0;
        bool unres = eq ? f->unresolved : false;
        int j = i + 1;
        if (eq) {
            val = strdup(eq + 1);
            vn = val ? strlen(val) : 0;
        } else {
            for (; j < w->n && (strncmp(w->w[j].s, "--", 2) || !w->w[j].s[2]); j++) {
                size_t l = strlen(w->w[j].s);
                char *p = realloc(val, vn + l + 2);
                if (!p) {
                    free(val);
                    return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
                }
                val = p;
                if (vn) val[vn++] = ' ';
                memcpy(val + vn, w->w[j].s, l + 1);
                vn += l;
                unres |= w->w[j].unresolved;
            }
        }
        if (eq && !val) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        const char *v = val ? val : "True";
        char key[96];
        flag_dest(flag, key, sizeof key, &v);
        /* argparse: the last occurrence of a flag wins */
        pp_status st = kv_set(a, key, flag, v, unres, f->line, f->col, true, err);
        free(val);
        if (st) return st;
        i = eq ? i + 1 : j;
    }
    return PP_OK;
}

/* ------------------------------------------------------------------ inputs */

static void sh_ctx_free(sh_ctx *c)
{
    for (int i = 0; i < c->nv; i++) words_free(&c->vars[i].v);
    free(c->vars);
    words_free(&c->args);
}

/* A script (or one command line) at line offset line0 of the file. */
static pp_status script_parse(pp_margs *a, const char *text, size_t len, int line0, pp_error *err)
{
    sh_ctx c;
    memset(&c, 0, sizeof c);
    c.t = text;
    c.len = len;
    c.line = line0;
    c.col = 1;
    c.path = a->path;
    c.err = err;
    pp_status st = sh_read(&c);
    if (st == PP_OK && c.args_score > 0) {
        /* Keys already in the table (a dump read first) win: read into a scratch table. */
        pp_margs t;
        pp_margs_init(&t, a->path);
        st = args_to_table(&t, &c.args, err);
        for (int i = 0; st == PP_OK && i < t.n; i++) {
            pp_margs_kv *k = &t.kv[i];
            st = kv_set(a, k->key, k->flag, k->value, k->unresolved, k->line, k->col, false, err);
        }
        pp_margs_free(&t);
        if (st == PP_OK && c.nproc > 0) {
            char v[32];
            snprintf(v, sizeof v, "%lld", (long long)(c.nproc * (c.nnodes > 0 ? c.nnodes : 1)));
            st = kv_set(a, "world_size", "--nproc-per-node x --nnodes", v, false, c.args_line, 0, false, err);
            snprintf(v, sizeof v, "%lld", (long long)c.nproc);
            if (st == PP_OK) st = kv_set(a, "gpus_per_node", "--nproc-per-node", v, false, c.args_line, 0, false, err);
        }
        if (st == PP_OK && a->source == PP_MARGS_NONE) {
            a->source = PP_MARGS_SCRIPT;
            a->line = c.args_line;
            snprintf(a->program, sizeof a->program, "%s", c.program);
        }
    }
    sh_ctx_free(&c);
    return st;
}

pp_status pp_margs_parse_script(pp_margs *a, const char *text, size_t len, pp_error *err)
{
    return script_parse(a, text, len, 1, err);
}

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
    pp_status st = kv_set(a, key, key, v, false, line, (int)i + 1, false, err);
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
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && text[j] != '\n') j++;
        const char *s = text + i;
        size_t n = j - i;
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
        i = j + 1;
    }
    if (in)
        return pp_error_set(err, PP_ERR_INPUT, a->path, line, 1,
                            "the argument dump that starts at line %d has no end (no 'end of arguments' line: the log is cut?)",
                            start);
    if (!done && cmd) {
        /* the recorded command line: one line of shell */
        pp_margs_source before = a->source;
        pp_status st = script_parse(a, cmd, cmd_n, cmd_line, err);
        if (st) return st;
        if (a->source != before) a->line = cmd_line;
    }
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

/* ------------------------------------------------------------------ what parplan reads, ignores, cannot model */

typedef enum {
    K_READ,        /* read by pp_margs_read (the model, layout and stack) */
    K_IGNORE,      /* does not change memory or step time: logging, paths, data, schedule, seeds */
    K_UNMODELLED,  /* changes memory or time, not modelled: named unless it has its neutral value */
    K_FUSION,      /* a fused kernel TransformerEngine runs by default: named when off with TE */
} key_class;

typedef struct {
    const char *key;   /* a dest name; "prefix*" matches every key that starts with prefix */
    key_class cls;
    const char *neutral; /* K_UNMODELLED: the value(s) that change nothing, '|'-separated */
} key_def;

/* The documented table. A dump lists all ~850 arguments with their values: an argument in none
 * of these rows is named when its value is set (not None/False/0/[]); on a command line every
 * flag in none of these rows is named (parplan does not know what it does). */
static const key_def key_table[] = {
    /* ---- read: model */
    {"num_layers", K_READ, NULL}, {"hidden_size", K_READ, NULL}, {"num_attention_heads", K_READ, NULL},
    {"group_query_attention", K_READ, NULL}, {"num_query_groups", K_READ, NULL}, {"kv_channels", K_READ, NULL},
    {"ffn_hidden_size", K_READ, NULL}, {"vocab_size", K_READ, NULL}, {"padded_vocab_size", K_READ, NULL},
    {"seq_length", K_READ, NULL}, {"swiglu", K_READ, NULL}, {"squared_relu", K_READ, NULL},
    {"normalization", K_READ, NULL}, {"position_embedding_type", K_READ, NULL},
    {"use_rotary_position_embeddings", K_READ, NULL}, {"add_position_embedding", K_READ, NULL},
    {"untie_embeddings_and_output_weights", K_READ, NULL}, {"add_bias_linear", K_READ, NULL},
    {"add_qkv_bias", K_READ, NULL}, {"qk_layernorm", K_READ, NULL}, {"num_experts", K_READ, NULL},
    {"moe_router_topk", K_READ, NULL}, {"moe_ffn_hidden_size", K_READ, NULL},
    {"moe_shared_expert_intermediate_size", K_READ, NULL}, {"moe_shared_expert_gate", K_READ, NULL},
    {"moe_router_enable_expert_bias", K_READ, NULL}, {"moe_layer_freq", K_READ, NULL},
    {"multi_latent_attention", K_READ, NULL}, {"q_lora_rank", K_READ, NULL}, {"kv_lora_rank", K_READ, NULL},
    {"qk_head_dim", K_READ, NULL}, {"qk_pos_emb_head_dim", K_READ, NULL}, {"v_head_dim", K_READ, NULL},
    {"mtp_num_layers", K_READ, NULL}, {"window_size", K_READ, NULL}, {"window_attn_skip_freq", K_READ, NULL},
    {"softmax_type", K_READ, NULL},
    /* ---- read: layout and cluster */
    {"tensor_model_parallel_size", K_READ, NULL}, {"pipeline_model_parallel_size", K_READ, NULL},
    {"context_parallel_size", K_READ, NULL}, {"expert_model_parallel_size", K_READ, NULL},
    {"expert_tensor_parallel_size", K_READ, NULL}, {"micro_batch_size", K_READ, NULL},
    {"global_batch_size", K_READ, NULL}, {"num_virtual_stages_per_pipeline_rank", K_READ, NULL},
    {"virtual_pipeline_model_parallel_size", K_READ, NULL}, {"num_layers_per_virtual_pipeline_stage", K_READ, NULL},
    {"use_distributed_optimizer", K_READ, NULL}, {"sequence_parallel", K_READ, NULL},
    {"recompute_granularity", K_READ, NULL}, {"recompute_method", K_READ, NULL},
    {"recompute_num_layers", K_READ, NULL}, {"recompute_modules", K_READ, NULL},
    {"pipeline_model_parallel_layout", K_READ, NULL}, {"decoder_first_pipeline_num_layers", K_READ, NULL},
    {"decoder_last_pipeline_num_layers", K_READ, NULL}, {"world_size", K_READ, NULL}, {"gpus_per_node", K_READ, NULL},
    {"data_parallel_size", K_READ, NULL}, {"optimizer_cpu_offload", K_READ, NULL},
    {"tensor_parallel_num_weight_shards", K_READ, NULL}, {"expert_tensor_parallel_num_weight_shards", K_READ, NULL},
    {"optimizer_offload_fraction", K_READ, NULL},
    /* ---- read: the stack */
    {"bf16", K_READ, NULL}, {"fp16", K_READ, NULL}, {"fp8", K_READ, NULL}, {"attention_dropout", K_READ, NULL},
    {"hidden_dropout", K_READ, NULL}, {"transformer_impl", K_READ, NULL}, {"attention_backend", K_READ, NULL},
    {"overlap_grad_reduce", K_READ, NULL}, {"overlap_param_gather", K_READ, NULL},
    {"overlap_p2p_comm", K_READ, NULL}, {"tp_comm_overlap", K_READ, NULL},
    {"moe_token_dispatcher_type", K_READ, NULL}, {"moe_grouped_gemm", K_READ, NULL},
    {"moe_expert_capacity_factor", K_READ, NULL}, {"accumulate_allreduce_grads_in_fp32", K_READ, NULL},
    {"grad_reduce_in_bf16", K_READ, NULL},
    /* ---- fused kernels: TransformerEngine's defaults; the time model assumes them with TE */
    {"gradient_accumulation_fusion", K_FUSION, NULL}, {"bias_gelu_fusion", K_FUSION, NULL},
    {"bias_swiglu_fusion", K_FUSION, NULL}, {"bias_dropout_fusion", K_FUSION, NULL},
    {"masked_softmax_fusion", K_FUSION, NULL}, {"apply_rope_fusion", K_FUSION, NULL},
    /* ---- not modelled: they change memory or time */
    {"fp8_param_gather", K_UNMODELLED, "False"}, {"fp4", K_UNMODELLED, "None"},
    {"first_last_layers_bf16", K_UNMODELLED, "False"}, {"fp32_residual_connection", K_UNMODELLED, "False"},
    {"main_grads_dtype", K_UNMODELLED, "torch.float32|fp32"}, {"main_params_dtype", K_UNMODELLED, "torch.float32|fp32"},
    {"exp_avg_dtype", K_UNMODELLED, "torch.float32|fp32"}, {"exp_avg_sq_dtype", K_UNMODELLED, "torch.float32|fp32"},
    {"optimizer", K_UNMODELLED, "adam|adamw"}, {"use_layer_wise_distributed_optimizer", K_UNMODELLED, "False"},
    {"num_distributed_optimizer_instances", K_UNMODELLED, "1"},
    {"overlap_param_gather_with_optimizer_step", K_UNMODELLED, "False"},
    {"ddp_bucket_size", K_UNMODELLED, "None"}, {"ddp_num_buckets", K_UNMODELLED, "None"},
    {"use_torch_fsdp2", K_UNMODELLED, "False"}, {"use_megatron_fsdp", K_UNMODELLED, "False"},
    {"distribute_saved_activations", K_UNMODELLED, "False"}, {"cpu_offloading_num_layers", K_UNMODELLED, "0"},
    {"fine_grained_activation_offloading", K_UNMODELLED, "False"}, {"offload_modules", K_UNMODELLED, "None"},
    {"moe_layer_recompute", K_UNMODELLED, "False"}, {"moe_shared_expert_overlap", K_UNMODELLED, "False"},
    {"overlap_moe_expert_parallel_comm", K_READ, NULL}, {"delay_wgrad_compute", K_UNMODELLED, "False"},
    {"moe_enable_deepep", K_UNMODELLED, "False"}, {"moe_pad_expert_input_to_capacity", K_UNMODELLED, "False"},
    {"moe_router_num_groups", K_UNMODELLED, "None"}, {"moe_router_group_topk", K_UNMODELLED, "None"},
    {"moe_latent_size", K_UNMODELLED, "None"}, {"moe_expert_rank_capacity_factor", K_UNMODELLED, "None"},
    {"cp_comm_type", K_UNMODELLED, "p2p|['p2p']"}, {"hierarchical_context_parallel_sizes", K_UNMODELLED, "None"},
    {"hybrid_context_parallel", K_UNMODELLED, "False"},
    {"account_for_embedding_in_pipeline_split", K_UNMODELLED, "False"},
    {"account_for_loss_in_pipeline_split", K_UNMODELLED, "False"},
    {"enable_cuda_graph", K_UNMODELLED, "False"}, {"cuda_graph_impl", K_UNMODELLED, "none"},
    {"external_cuda_graph", K_UNMODELLED, "False"}, {"empty_unused_memory_level", K_UNMODELLED, "0"},
    {"deterministic_mode", K_UNMODELLED, "False"}, {"variable_seq_lengths", K_UNMODELLED, "False"},
    {"mlp_chunks_for_training", K_UNMODELLED, "1"}, {"make_vocab_size_divisible_by", K_UNMODELLED, "128"},
    {"hybrid_override_pattern", K_UNMODELLED, "None"}, {"hybrid_layer_pattern", K_UNMODELLED, "None"},
    {"is_hybrid_model", K_UNMODELLED, "False"}, {"heterogeneous_layers_config_path", K_UNMODELLED, "None"},
    {"heterogeneous_layers_config_encoded_json", K_UNMODELLED, "None"},
    {"experimental_attention_variant", K_UNMODELLED, "None"}, {"linear_attention_freq", K_UNMODELLED, "None"},
    {"enable_mhc_connections", K_UNMODELLED, "False"}, {"attention_output_gate", K_UNMODELLED, "False"},
    {"qk_l2_norm", K_UNMODELLED, "False"}, {"spec", K_UNMODELLED, "None"}, {"yaml_cfg", K_UNMODELLED, "None"},
    {"use_checkpoint_args", K_UNMODELLED, "False"}, {"rampup_batch_size", K_UNMODELLED, "None"},
    {"gtp_weight_remat_size", K_UNMODELLED, "1"}, {"expert_gtp_weight_remat_size", K_UNMODELLED, "1"},
    /* ---- ignored: no effect on memory or step time (or too small to model) */
    {"max_position_embeddings", K_IGNORE, NULL}, /* learned positions are counted at --seq-length */
    {"no_persist_layer_norm", K_IGNORE, NULL}, {"persist_layer_norm", K_IGNORE, NULL},
    {"use_precision_aware_optimizer", K_IGNORE, NULL}, {"params_dtype", K_IGNORE, NULL},
    {"rotary_percent", K_IGNORE, NULL}, {"rotary_base", K_IGNORE, NULL}, {"rotary_interleaved", K_IGNORE, NULL},
    {"rotary_seq_len_interpolation_factor", K_IGNORE, NULL}, {"rope_type", K_IGNORE, NULL},
    {"rope_scaling_factor", K_IGNORE, NULL}, {"use_rope_scaling", K_IGNORE, NULL}, {"no_rope_freq", K_IGNORE, NULL},
    {"mrope_section", K_IGNORE, NULL}, {"mscale", K_IGNORE, NULL}, {"mscale_all_dim", K_IGNORE, NULL},
    {"rotary_scaling_factor", K_IGNORE, NULL}, {"layernorm_epsilon", K_IGNORE, NULL},
    {"layernorm_zero_centered_gamma", K_IGNORE, NULL}, {"apply_residual_connection_post_layernorm", K_IGNORE, NULL},
    {"attention_softmax_in_fp32", K_IGNORE, NULL}, {"apply_query_key_layer_scaling", K_IGNORE, NULL},
    {"use_flash_attn", K_IGNORE, NULL}, {"openai_gelu", K_IGNORE, NULL}, {"quick_geglu", K_IGNORE, NULL},
    {"init_method_std", K_IGNORE, NULL}, {"init_method_xavier_uniform", K_IGNORE, NULL},
    {"embedding_init_method_std", K_IGNORE, NULL}, {"perform_initialization", K_IGNORE, NULL},
    {"use_cpu_initialization", K_IGNORE, NULL}, {"init_model_with_meta_device", K_IGNORE, NULL},
    {"data_parallel_random_init", K_IGNORE, NULL}, {"use_mcore_models", K_IGNORE, NULL},
    {"deprecated_use_mcore_models", K_IGNORE, NULL}, {"use_legacy_models", K_IGNORE, NULL},
    {"async_tensor_model_parallel_allreduce", K_IGNORE, NULL}, {"gradient_reduce_div_fusion", K_IGNORE, NULL},
    {"ddp_average_in_collective", K_IGNORE, NULL}, {"ddp_pad_buckets_for_high_nccl_busbw", K_IGNORE, NULL},
    {"align_grad_reduce", K_IGNORE, NULL}, {"align_param_gather", K_IGNORE, NULL},
    {"overlap_p2p_comm_warmup_flush", K_IGNORE, NULL}, {"microbatch_group_size_per_vp_stage", K_IGNORE, NULL},
    {"transformer_pipeline_model_parallel_size", K_IGNORE, NULL}, {"encoder_num_layers", K_IGNORE, NULL},
    {"encoder_seq_length", K_IGNORE, NULL}, {"decoder_num_layers", K_IGNORE, NULL},
    {"decoder_seq_length", K_IGNORE, NULL}, {"create_attention_mask_in_dataloader", K_IGNORE, NULL},
    {"clone_scatter_output_in_embedding", K_IGNORE, NULL}, {"cross_entropy_loss_fusion", K_IGNORE, NULL},
    {"cross_entropy_fusion_impl", K_IGNORE, NULL}, {"calculate_per_token_loss", K_IGNORE, NULL},
    {"use_te_activation_func", K_IGNORE, NULL}, {"te_rng_tracker", K_IGNORE, NULL},
    {"moe_router_load_balancing_type", K_IGNORE, NULL}, {"moe_router_score_function", K_IGNORE, NULL},
    {"moe_aux_loss_coeff", K_IGNORE, NULL}, {"moe_z_loss_coeff", K_IGNORE, NULL},
    {"moe_router_topk_scaling_factor", K_IGNORE, NULL}, {"moe_router_pre_softmax", K_IGNORE, NULL},
    {"moe_router_dtype", K_IGNORE, NULL}, {"moe_router_bias_update_rate", K_IGNORE, NULL},
    {"moe_router_force_load_balancing", K_IGNORE, NULL}, {"moe_router_fusion", K_IGNORE, NULL},
    {"moe_permute_fusion", K_IGNORE, NULL}, {"moe_token_drop_policy", K_IGNORE, NULL},
    {"moe_input_jitter_eps", K_IGNORE, NULL}, {"moe_per_layer_logging", K_IGNORE, NULL},
    {"moe_router_padding_for_fp8", K_IGNORE, NULL}, {"moe_router_padding_for_quantization", K_IGNORE, NULL},
    {"moe_use_upcycling", K_IGNORE, NULL}, {"moe_upcycling_granularity", K_IGNORE, NULL},
    {"moe_apply_probs_on_input", K_IGNORE, NULL}, {"moe_use_legacy_grouped_gemm", K_IGNORE, NULL},
    {"moe_dispatch_fwd_dtype", K_IGNORE, NULL}, {"moe_combine_bwd_dtype", K_IGNORE, NULL},
    {"mtp_loss_scaling_factor", K_IGNORE, NULL}, {"use_tp_pp_dp_mapping", K_IGNORE, NULL},
    {"nccl_ub", K_IGNORE, NULL}, {"use_sharp", K_IGNORE, NULL}, {"sharp_enabled_group", K_IGNORE, NULL},
    {"nccl_communicator_config_path", K_IGNORE, NULL}, {"high_priority_stream_groups", K_IGNORE, NULL},
    {"manual_gc", K_IGNORE, NULL}, {"manual_gc_interval", K_IGNORE, NULL}, {"manual_gc_eval", K_IGNORE, NULL},
    {"activation_offload_fraction", K_IGNORE, NULL}, {"data_parallel_sharding_strategy", K_IGNORE, NULL},
    {"outer_dp_sharding_strategy", K_IGNORE, NULL}, {"torch_fsdp2_reshard_after_forward", K_IGNORE, NULL},
    {"_is_global_batch_size_explicitly_specified", K_IGNORE, NULL}, {"rank", K_IGNORE, NULL},
    {"local_rank", K_IGNORE, NULL}, {"consumed_train_samples", K_IGNORE, NULL},
    {"consumed_valid_samples", K_IGNORE, NULL}, {"skipped_train_samples", K_IGNORE, NULL},
    {"iteration", K_IGNORE, NULL}, {"iter_per_epoch", K_IGNORE, NULL}, {"seed", K_IGNORE, NULL},
    {"clip_grad", K_IGNORE, NULL}, {"weight_decay", K_IGNORE, NULL}, {"start_weight_decay", K_IGNORE, NULL},
    {"end_weight_decay", K_IGNORE, NULL}, {"weight_decay_incr_style", K_IGNORE, NULL},
    {"hysteresis", K_IGNORE, NULL}, {"initial_loss_scale", K_IGNORE, NULL}, {"min_loss_scale", K_IGNORE, NULL},
    {"loss_scale", K_IGNORE, NULL}, {"loss_scale_window", K_IGNORE, NULL}, {"head_lr_mult", K_IGNORE, NULL},
    {"mock_data", K_IGNORE, NULL}, {"split", K_IGNORE, NULL}, {"merge_file", K_IGNORE, NULL},
    {"vocab_file", K_IGNORE, NULL}, {"vocab_extra_ids", K_IGNORE, NULL}, {"pad_vocab_size", K_IGNORE, NULL},
    {"no_load_optim", K_IGNORE, NULL}, {"no_load_rng", K_IGNORE, NULL}, {"no_save_optim", K_IGNORE, NULL},
    {"no_save_rng", K_IGNORE, NULL}, {"load", K_IGNORE, NULL}, {"pretrained_checkpoint", K_IGNORE, NULL},
    {"finetune", K_IGNORE, NULL}, {"auto_detect_ckpt_format", K_IGNORE, NULL}, {"use_dist_ckpt", K_IGNORE, NULL},
    {"train_iters", K_IGNORE, NULL}, {"train_samples", K_IGNORE, NULL}, {"num_workers", K_IGNORE, NULL},
    {"eod_mask_loss", K_IGNORE, NULL}, {"reset_position_ids", K_IGNORE, NULL},
    {"reset_attention_mask", K_IGNORE, NULL}, {"short_seq_prob", K_IGNORE, NULL},
    {"distributed_backend", K_IGNORE, NULL}, {"distributed_timeout_minutes", K_IGNORE, NULL},
    {"use_gloo_process_groups", K_IGNORE, NULL}, {"enable_one_logger", K_IGNORE, NULL},
    {"optimizer_cuda_graph", K_IGNORE, NULL}, {"cuda_graph_warmup_steps", K_IGNORE, NULL},
    {"cuda_graph_scope", K_IGNORE, NULL}, {"cuda_graph_modules", K_IGNORE, NULL},
    {"check_for_nan_in_loss_and_grad", K_IGNORE, NULL}, {"barrier_with_L1_time", K_IGNORE, NULL},
    {"use_mup", K_IGNORE, NULL}, {"num_layers_at_start_in_bf16", K_IGNORE, NULL},
    {"num_layers_at_end_in_bf16", K_IGNORE, NULL}, {"recompute_modules_deprecated", K_IGNORE, NULL},
    {"use_pytorch_profiler", K_IGNORE, NULL}, {"timing_log_level", K_IGNORE, NULL},
    {"timing_log_option", K_IGNORE, NULL}, {"decrease_batch_size_if_needed", K_IGNORE, NULL},
    {"use_tokenizer_model_from_checkpoint_args", K_IGNORE, NULL}, {"save_tokenizer_assets", K_IGNORE, NULL},
    {"strict_fsdp_dtensor_load", K_IGNORE, NULL}, {"mmap_bin_files", K_IGNORE, NULL},
    {"offset_sampling_seed_by_dp_rank", K_IGNORE, NULL}, {"pin_cpu_grads", K_IGNORE, NULL},
    {"pin_cpu_params", K_IGNORE, NULL}, {"use_mamba_mem_eff_path", K_IGNORE, NULL},
    {"use_layer_wise_param_layout", K_IGNORE, NULL}, {"megatron_fsdp_version", K_IGNORE, NULL},
    {"kv_channels_deprecated", K_IGNORE, NULL}, {"qk_clip", K_IGNORE, NULL},
    {"tp_comm_overlap_cfg", K_IGNORE, NULL}, {"tp_comm_bootstrap_backend", K_IGNORE, NULL},
    {"replication_factor", K_IGNORE, NULL}, {"max_tokens_to_oom", K_IGNORE, NULL},
    {"memory_snapshot_path", K_IGNORE, NULL}, {"mid_level_dataset_surplus", K_IGNORE, NULL},
    {"classes_fraction", K_IGNORE, NULL}, {"data_per_class_fraction", K_IGNORE, NULL},
    {"dataloader_type", K_IGNORE, NULL}, {"sample_rate", K_IGNORE, NULL}, {"patch_dim", K_IGNORE, NULL},
    {"num_channels", K_IGNORE, NULL}, {"num_classes", K_IGNORE, NULL}, {"mask_factor", K_IGNORE, NULL},
    {"mask_prob", K_IGNORE, NULL}, {"mask_type", K_IGNORE, NULL}, {"query_in_block_prob", K_IGNORE, NULL},
    {"relative_attention_num_buckets", K_IGNORE, NULL}, {"relative_attention_max_distance", K_IGNORE, NULL},
    {"mlp_chunks_for_prefill", K_IGNORE, NULL}, {"min_offloaded_tensor_size", K_IGNORE, NULL},
    {"refit_method", K_IGNORE, NULL}, {"num_dataset_builder_threads", K_IGNORE, NULL}, {"sgd_momentum", K_IGNORE, NULL}, {"swin_backbone_type", K_IGNORE, NULL},
    {"exit_signal", K_IGNORE, NULL}, {"exit_interval", K_IGNORE, NULL}, {"exit_duration_in_mins", K_IGNORE, NULL},
    {"exit_signal_handler", K_IGNORE, NULL}, {"exit_on_missing_checkpoint", K_IGNORE, NULL},
    {"profile", K_IGNORE, NULL}, {"profile_ranks", K_IGNORE, NULL}, {"record_memory_history", K_IGNORE, NULL},
    {"record_shapes", K_IGNORE, NULL}, {"fp8_recipe", K_IGNORE, NULL}, {"fp8_margin", K_IGNORE, NULL},
    {"fp8_interval", K_IGNORE, NULL}, {"fp8_amax_history_len", K_IGNORE, NULL},
    {"fp8_amax_compute_algo", K_IGNORE, NULL}, {"fp8_wgrad", K_IGNORE, NULL}, {"fp4_recipe", K_IGNORE, NULL},
    {"fp16_lm_cross_entropy", K_IGNORE, NULL}, {"logit_dtype", K_IGNORE, NULL},
    {"moe_flex_dispatcher_backend", K_IGNORE, NULL}, {"moe_hybridep_num_sms_preprocessing", K_IGNORE, NULL},
    {"mtp_detach_heads", K_IGNORE, NULL}, {"mtp_standalone", K_IGNORE, NULL},
    /* prefixes: families of arguments about logging, checkpoints, data, tokenizers, inference,
     * other models' options, fault tolerance and profiling */
    {"log_*", K_IGNORE, NULL}, {"tensorboard*", K_IGNORE, NULL}, {"wandb_*", K_IGNORE, NULL},
    {"save*", K_IGNORE, NULL}, {"ckpt_*", K_IGNORE, NULL}, {"dist_ckpt*", K_IGNORE, NULL},
    {"non_persistent_*", K_IGNORE, NULL}, {"async_*", K_IGNORE, NULL}, {"data_*", K_IGNORE, NULL},
    {"train_data_path", K_IGNORE, NULL}, {"valid_data_path", K_IGNORE, NULL}, {"test_data_path", K_IGNORE, NULL},
    {"per_split_data_args_path", K_IGNORE, NULL}, {"dataloader_*", K_IGNORE, NULL},
    {"tokenizer_*", K_IGNORE, NULL}, {"null_tokenizer_*", K_IGNORE, NULL}, {"tiktoken_*", K_IGNORE, NULL},
    {"eval_*", K_IGNORE, NULL}, {"lr*", K_IGNORE, NULL}, {"min_lr", K_IGNORE, NULL}, {"decoupled_*", K_IGNORE, NULL},
    {"override_opt_param_scheduler", K_IGNORE, NULL}, {"use_checkpoint_opt_param_scheduler", K_IGNORE, NULL},
    {"adam_*", K_IGNORE, NULL}, {"lion_*", K_IGNORE, NULL}, {"muon_*", K_IGNORE, NULL}, {"mup_*", K_IGNORE, NULL},
    {"adlr_*", K_IGNORE, NULL}, {"app_tag_*", K_IGNORE, NULL}, {"one_logger*", K_IGNORE, NULL},
    {"straggler_*", K_IGNORE, NULL}, {"rerun_*", K_IGNORE, NULL}, {"fault_injector_*", K_IGNORE, NULL},
    {"error_injection_*", K_IGNORE, NULL}, {"inprocess_*", K_IGNORE, NULL}, {"ft_*", K_IGNORE, NULL},
    {"enable_ft_package", K_IGNORE, NULL}, {"calc_ft_timeouts", K_IGNORE, NULL}, {"flight_recorder_*", K_IGNORE, NULL},
    {"profile_*", K_IGNORE, NULL}, {"pytorch_profiler_*", K_IGNORE, NULL}, {"nvtx_ranges", K_IGNORE, NULL},
    {"inference_*", K_IGNORE, NULL}, {"rl_*", K_IGNORE, NULL}, {"grpo_*", K_IGNORE, NULL}, {"langrl_*", K_IGNORE, NULL},
    {"dino_*", K_IGNORE, NULL}, {"fim_*", K_IGNORE, NULL}, {"bert_*", K_IGNORE, NULL}, {"biencoder_*", K_IGNORE, NULL},
    {"ict_*", K_IGNORE, NULL}, {"retriever_*", K_IGNORE, NULL}, {"vision_*", K_IGNORE, NULL}, {"img_*", K_IGNORE, NULL},
    {"titles_data_path", K_IGNORE, NULL}, {"evidence_data_path", K_IGNORE, NULL}, {"block_data_path", K_IGNORE, NULL},
    {"indexer_*", K_IGNORE, NULL}, {"embedding_path", K_IGNORE, NULL}, {"output_bert_embeddings", K_IGNORE, NULL},
    {"mamba_*", K_IGNORE, NULL}, {"linear_key_*", K_IGNORE, NULL}, {"linear_value_*", K_IGNORE, NULL},
    {"linear_num_*", K_IGNORE, NULL}, {"linear_conv_*", K_IGNORE, NULL}, {"gdp_*", K_IGNORE, NULL},
    {"dsa_*", K_IGNORE, NULL}, {"mhc_*", K_IGNORE, NULL}, {"kitchen_*", K_IGNORE, NULL}, {"batch_invariant*", K_IGNORE, NULL},
    {"logits_*", K_IGNORE, NULL}, {"megatron_fsdp_*", K_IGNORE, NULL}, {"moe_paged_stash*", K_IGNORE, NULL},
    {"moe_hybridep_*", K_IGNORE, NULL}, {"moe_routing_trace_*", K_IGNORE, NULL}, {"qk_clip_*", K_IGNORE, NULL},
    {"yarn_*", K_IGNORE, NULL}, {"tp_comm_bulk_*", K_IGNORE, NULL}, {"tp_comm_overlap_ag", K_IGNORE, NULL},
    {"tp_comm_overlap_rs*", K_IGNORE, NULL}, {"tp_comm_split_*", K_IGNORE, NULL}, {"sft*", K_IGNORE, NULL},
    {"trust_remote_code", K_IGNORE, NULL}, {"use_one_sent_docs", K_IGNORE, NULL}, {"special_tokens", K_IGNORE, NULL},
    {"metadata_path", K_IGNORE, NULL}, {"object_storage_cache_path", K_IGNORE, NULL}, {"otel_*", K_IGNORE, NULL},
    {"config_logger_dir", K_IGNORE, NULL}, {"test_mode", K_IGNORE, NULL}, {"full_validation", K_IGNORE, NULL},
    {"multiple_validation_sets", K_IGNORE, NULL}, {"validation_set_names", K_IGNORE, NULL},
    {"phase_transition_iterations", K_IGNORE, NULL}, {"skip_train", K_IGNORE, NULL},
    {"iterations_to_skip", K_IGNORE, NULL},
};
#define N_KEY_TABLE (sizeof key_table / sizeof key_table[0])

static const key_def *key_lookup(const char *key)
{
    for (size_t i = 0; i < N_KEY_TABLE; i++)
        if (!strchr(key_table[i].key, '*') && !strcmp(key_table[i].key, key)) return &key_table[i];
    for (size_t i = 0; i < N_KEY_TABLE; i++) {
        const char *star = strchr(key_table[i].key, '*');
        if (star && !strncmp(key, key_table[i].key, (size_t)(star - key_table[i].key))) return &key_table[i];
    }
    return NULL;
}

static bool key_known(const char *key)
{
    const key_def *d = key_lookup(key);
    return d && !strchr(d->key, '*');
}

/* ------------------------------------------------------------------ the arguments in parplan's terms */

typedef struct {
    pp_margs *a;
    pp_margs_config *c;
    pp_error *err;
} rd;

/* "--num-layers" (as written on a command line) or "num_layers" (a dump). */
static const char *kv_name(const pp_margs_kv *k) { return k->flag[0] ? k->flag : k->key; }

static void key_flag(const char *key, char *out, size_t n)
{
    size_t k = 0;
    if (n > 3) out[k++] = '-', out[k++] = '-';
    for (const char *p = key; *p && k + 1 < n; p++) out[k++] = *p == '_' ? '-' : *p;
    out[k] = 0;
}

static void note(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(rd *r, const char *fmt, ...)
{
    pp_margs_config *c = r->c;
    size_t k = strlen(c->unmodelled);
    char one[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(one, sizeof one, fmt, ap);
    va_end(ap);
    if (strstr(c->unmodelled, one)) return;
    if (k + strlen(one) + 8 >= sizeof c->unmodelled) {
        if (!strstr(c->unmodelled, ", ...")) snprintf(c->unmodelled + k, sizeof c->unmodelled - k, ", ...");
        c->n_unmodelled++;
        return;
    }
    snprintf(c->unmodelled + k, sizeof c->unmodelled - k, "%s%s", k ? ", " : "", one);
    c->n_unmodelled++;
}

/* The entry of key with a value (NULL: absent or None); marks it read. */
static pp_margs_kv *rd_kv(rd *r, const char *key)
{
    pp_margs_kv *k = kv_find(r->a, key);
    if (k) k->used = true;
    if (!k || !k->value || !k->value[0] || !strcmp(k->value, "None")) return NULL;
    return k;
}

static pp_status rd_bad(rd *r, const pp_margs_kv *k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static pp_status rd_bad(rd *r, const pp_margs_kv *k, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pp_error_set(r->err, PP_ERR_INPUT, r->a->path, k ? k->line : r->a->line, k ? k->col : 0, "%s%s%s",
                        k ? kv_name(k) : "", k ? ": " : "", msg);
}

static pp_status rd_missing(rd *r, const char *key, const char *why)
{
    char f[100];
    key_flag(key, f, sizeof f);
    if (!strcmp(key, "num_layers") && r->a->source == PP_MARGS_SCRIPT && r->a->program[0] &&
        strncmp(r->a->program, "pretrain", 8))
        return pp_error_set(r->err, PP_ERR_INPUT, r->a->path, r->a->line, 0,
                            "no Megatron-LM training command: the only Python command with flags runs %s, without "
                            "--num-layers", r->a->program);
    return pp_error_set(r->err, PP_ERR_INPUT, r->a->path, r->a->line, 0, "the Megatron arguments have no %s (%s)%s%s", f,
                        key, why ? ": " : "", why ? why : "");
}

static pp_status rd_resolved(rd *r, const pp_margs_kv *k)
{
    if (!k->unresolved) return PP_OK;
    return rd_bad(r, k, "the value '%s' uses a variable or command that the script does not define "
                        "(parplan runs nothing and reads no environment)", k->value);
}

/* An integer argument: absent -> def; required (def < 0) -> error. */
static pp_status rd_int(rd *r, const char *key, int64_t def, int64_t lo, int64_t hi, int64_t *out)
{
    pp_margs_kv *k = rd_kv(r, key);
    if (!k) {
        if (def < 0) return rd_missing(r, key, NULL);
        *out = def;
        return PP_OK;
    }
    pp_status st = rd_resolved(r, k);
    if (st) return st;
    const char *s = k->value;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno == ERANGE) return rd_bad(r, k, "expects an integer, got '%s'", s);
    if (v < lo || v > hi) return rd_bad(r, k, "must be between %lld and %lld, got %lld", (long long)lo, (long long)hi, v);
    *out = v;
    return PP_OK;
}

static pp_status rd_num(rd *r, const char *key, double def, double lo, double hi, bool hi_open, double *out)
{
    pp_margs_kv *k = rd_kv(r, key);
    if (!k) {
        *out = def;
        return PP_OK;
    }
    pp_status st = rd_resolved(r, k);
    if (st) return st;
    char *end = NULL;
    errno = 0;
    double v = strtod(k->value, &end);
    if (end == k->value || *end || errno == ERANGE || !isfinite(v))
        return rd_bad(r, k, "expects a number, got '%s'", k->value);
    if (v < lo || (hi_open ? v >= hi : v > hi))
        return rd_bad(r, k, "must be in [%g, %g%s, got %g", lo, hi, hi_open ? ")" : "]", v);
    *out = v;
    return PP_OK;
}

static pp_status rd_bool(rd *r, const char *key, bool def, bool *out)
{
    pp_margs_kv *k = rd_kv(r, key);
    if (!k) {
        *out = def;
        return PP_OK;
    }
    pp_status st = rd_resolved(r, k);
    if (st) return st;
    const char *v = k->value;
    if (!strcmp(v, "True") || !strcmp(v, "true") || !strcmp(v, "1")) *out = true;
    else if (!strcmp(v, "False") || !strcmp(v, "false") || !strcmp(v, "0")) *out = false;
    else return rd_bad(r, k, "is a switch: it takes no value (got '%s')", v);
    return PP_OK;
}

/* A string argument: NULL when absent; its entry in *kv. */
static pp_status rd_str(rd *r, const char *key, const char **out, pp_margs_kv **kv)
{
    pp_margs_kv *k = rd_kv(r, key);
    *out = NULL;
    if (kv) *kv = k;
    if (!k) return PP_OK;
    pp_status st = rd_resolved(r, k);
    if (st) return st;
    *out = k->value;
    return PP_OK;
}

/* The later of two entries (for "X and Y exclude each other": the error points at the second). */
static const pp_margs_kv *later(const pp_margs_kv *x, const pp_margs_kv *y)
{
    if (!x) return y;
    if (!y) return x;
    return (y->line > x->line || (y->line == x->line && y->col > x->col)) ? y : x;
}

/* A list argument (moe_layer_freq, window_attn_skip_freq): an integer (n = 0) or a list. */
static pp_status rd_list(rd *r, pp_margs_kv *k, int64_t *out, int max, int *n, int64_t *value)
{
    char msg[160];
    int col = 0;
    pp_status st = rd_resolved(r, k);
    if (st) return st;
    const char *v = k->value;
    /* the command line quotes it ("([0]*1+[1]*7)"); the dump prints the evaluated list */
    if (pp_margs_list_expr(v, out, max, n, value, &col, msg, sizeof msg) != PP_OK)
        return pp_error_set(r->err, PP_ERR_INPUT, r->a->path, k->line, k->col, "%s: '%s' is not an integer or a list "
                            "expression: %s at character %d", kv_name(k), v, msg, col);
    return PP_OK;
}

/* The MoE layer pattern (1 = MoE) as pp_model's rule: dense layers first, then every E-th layer
 * from the first MoE one, minus at most PP_MODEL_MAX_LIST exceptions. */
static bool fit_moe_pattern(pp_model *m, const int64_t *p, int64_t L)
{
    int64_t first = -1;
    for (int64_t i = 0; i < L; i++)
        if (p[i]) {
            first = i;
            break;
        }
    if (first < 0) return false;
    int64_t best_e = -1, best_d = PP_MODEL_MAX_LIST + 1;
    for (int64_t e = 1; e <= L && best_d > 0; e++) {
        int64_t ph = first % e, d = 0;
        bool ok = true;
        for (int64_t i = first; i < L && ok; i++) {
            bool in = i % e == ph;
            if (p[i] && !in) ok = false;
            if (!p[i] && in) d++;
        }
        if (ok && d < best_d) best_d = d, best_e = e;
    }
    if (best_e < 0) return false;
    m->moe_first_dense = first;
    m->moe_every = best_e;
    m->moe_phase = first % best_e;
    m->n_dense_layers = 0;
    for (int64_t i = first; i < L; i++)
        if (!p[i] && i % best_e == m->moe_phase) m->dense_layers[m->n_dense_layers++] = i;
    return true;
}

/* "--pipeline-model-parallel-layout": E embedding, t decoder layer, m MTP layer, L loss, '|'
 * between stages, "x*N" and "(...)*N" repeat, commas are cosmetic (pipeline_parallel_layer_layout.py
 * parse_str_to_list). Stage v*pp + r is virtual stage v of rank r. */
static pp_status rd_pp_layout(rd *r, pp_margs_kv *k, int64_t pp, int64_t *vpp, int *layers)
{
    const char *s = k->value;
    size_t cap = strlen(s) + 64, n = 0;
    char *u = malloc(cap);
    if (!u) return pp_error_set(r->err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    /* unroll: a small stack machine over groups */
    size_t grp[16];
    int depth = 0;
    pp_status st = PP_OK;
    for (size_t i = 0; s[i] && st == PP_OK; i++) {
        char ch = s[i];
        if (ch == ',' || ch == ' ' || ch == '\'' || ch == '"') continue;
        if (ch == '(') {
            if (depth >= 16) st = rd_bad(r, k, "groups nested more than 16 deep");
            else grp[depth++] = n;
            continue;
        }
        size_t from = n, len = 1;
        if (ch == ')') {
            if (!depth) {
                st = rd_bad(r, k, "')' without '(' in '%s'", s);
                break;
            }
            from = grp[--depth];
            len = n - from;
            if (s[i + 1] != '*') continue; /* (...) without a count: as written */
        } else if (strchr("EtmL|", ch)) {
            u[n++] = ch;
            from = n - 1;
            if (s[i + 1] != '*') continue;
        } else {
            st = rd_bad(r, k, "'%c' is not one of E t m L | in '%s'", ch, s);
            break;
        }
        /* "*N" repeats the last item (a character or a group) N times in all */
        char *end = NULL;
        long cnt = strtol(s + i + 2, &end, 10);
        if (end == s + i + 2 || cnt < 0 || cnt > 100000) {
            st = rd_bad(r, k, "a bad count after '*' in '%s'", s);
            break;
        }
        i = (size_t)(end - s) - 1;
        if (cnt == 0) {
            n = from;
            continue;
        }
        if ((double)n + (double)len * (double)(cnt - 1) > 4e6) {
            st = rd_bad(r, k, "the layout unrolls to more than 4000000 characters");
            break;
        }
        size_t need = n + len * (size_t)(cnt - 1) + 1;
        if (need > cap) {
            while (cap < need) cap *= 2;
            char *p = realloc(u, cap);
            if (!p) {
                st = pp_error_set(r->err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
                break;
            }
            u = p;
        }
        for (long c2 = 1; c2 < cnt; c2++) {
            memmove(u + n, u + from, len);
            n += len;
        }
    }
    if (st == PP_OK && depth) st = rd_bad(r, k, "'(' without ')' in '%s'", s);
    if (st) {
        free(u);
        return st;
    }
    int64_t segs = 1;
    for (size_t i = 0; i < n; i++) segs += u[i] == '|';
    if (segs % pp) {
        free(u);
        return rd_bad(r, k, "%lld stages is not a multiple of --pipeline-model-parallel-size %lld", (long long)segs,
                      (long long)pp);
    }
    *vpp = segs / pp;
    for (int64_t i = 0; i < pp; i++) layers[i] = 0;
    int64_t seg = 0;
    bool e_first = n > 0 && u[0] == 'E', l_last = n > 0 && u[n - 1] == 'L', m_late = true;
    int64_t e_count = 0, l_count = 0;
    for (size_t i = 0; i < n; i++) {
        if (u[i] == '|') seg++;
        else if (u[i] == 't') layers[seg % pp]++;
        else if (u[i] == 'm' && seg < segs - 1 && seg != segs - pp) m_late = false;
        else if (u[i] == 'E') e_count++;
        else if (u[i] == 'L') l_count++;
    }
    free(u);
    if (!e_first || !l_last || e_count != 1 || l_count != 1 || !m_late)
        note(r, "%s '%s' (the embedding, loss or MTP layers placed elsewhere than the first and last stage)", kv_name(k),
             s);
    return PP_OK;
}

pp_layout pp_margs_config_layout(const pp_margs_config *c)
{
    pp_layout l = c->layout;
    l.stage_layers = c->uneven ? c->stage_layers : NULL;
    l.stage_recompute = c->uneven ? c->stage_recompute : NULL;
    return l;
}

/* Megatron overlaps the DP gradient reduce and the parameter gather only when asked
 * (--overlap-grad-reduce, --overlap-param-gather: off by default, arguments.py), and the
 * interleaved schedule's send/recv unless --no-overlap-p2p-communication. parplan's stack has one
 * switch: on when everything there is to overlap is overlapped. */
void pp_margs_config_overlap(pp_margs_config *c, const pp_layout *l)
{
    int64_t dp = l->dp > 0 ? l->dp : 2; /* unknown: assume data parallel */
    bool grad = dp * l->cp > 1, gather = l->dist_opt && dp > 1, p2p = l->pp > 1 && l->vpp > 1;
    int on = 0, off = 0;
    if (grad) c->overlap_grad_reduce ? on++ : off++;
    if (gather) c->overlap_param_gather ? on++ : off++;
    if (p2p) c->overlap_p2p_comm ? on++ : off++;
    c->stack.no_overlap = off > 0;
    c->overlap_note[0] = 0;
    if (on && off)
        snprintf(c->overlap_note, sizeof c->overlap_note,
                 "overlap of only some of the gradient reduce (%s), parameter gather (%s) and pipeline send/recv (%s): "
                 "modelled as no overlap",
                 !grad ? "none" : c->overlap_grad_reduce ? "on" : "off", !gather ? "none" : c->overlap_param_gather ? "on" : "off",
                 !p2p ? "none" : c->overlap_p2p_comm ? "on" : "off");
}

/* The entry's value reads as "unset": None, False, 0, empty. */
static bool value_off(const char *v)
{
    return !v || !v[0] || !strcmp(v, "None") || !strcmp(v, "False") || !strcmp(v, "0") || !strcmp(v, "0.0") ||
           !strcmp(v, "[]") || !strcmp(v, "()") || !strcmp(v, "{}") || !strcmp(v, "''");
}

static bool value_neutral(const char *v, const char *neutral)
{
    if (!neutral) return value_off(v);
    const char *p = neutral;
    while (*p) {
        const char *e = strchr(p, '|');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (strlen(v ? v : "None") == l && !strncmp(v ? v : "None", p, l)) return true;
        if (!e) break;
        p = e + 1;
    }
    return !strcmp(neutral, "None") && value_off(v);
}

static pp_status read_model(rd *r)
{
    pp_margs_config *c = r->c;
    pp_model *m = &c->model;
    pp_status st;
    int64_t v;
    pp_model_init(m);
    const char *base = strrchr(r->a->path, '/');
    base = base ? base + 1 : r->a->path;
    snprintf(m->name, sizeof m->name, "%.63s", !strcmp(r->a->path, "-") ? "stdin" : base);
    char *dot = strrchr(m->name, '.');
    if (dot && dot != m->name) *dot = 0;
    snprintf(m->family, sizeof m->family, "megatron-args");
    snprintf(m->source, sizeof m->source, "%.255s", r->a->path);
#define RI(key, def, lo, hi, dst)                                          \
    do {                                                                   \
        if ((st = rd_int(r, key, def, lo, hi, &v))) return st;             \
        dst = v;                                                           \
    } while (0)
    RI("num_layers", -1, 1, 10000000, m->layers);
    RI("hidden_size", -1, 1, 10000000, m->hidden);
    RI("num_attention_heads", -1, 1, 10000000, m->heads);
    bool gqa, mla;
    if ((st = rd_bool(r, "group_query_attention", false, &gqa)) || (st = rd_bool(r, "multi_latent_attention", false, &mla)))
        return st;
    if (gqa && mla)
        return rd_bad(r, later(kv_find(r->a, "group_query_attention"), kv_find(r->a, "multi_latent_attention")),
                      "group-query attention and multi-latent attention exclude each other (arguments.py validate_args)");
    m->kv_heads = m->heads;
    /* Megatron's --num-query-groups defaults to 1 and counts only with --group-query-attention */
    if (gqa) RI("num_query_groups", 1, 1, 10000000, m->kv_heads);
    if (!mla) {
        if (!rd_kv(r, "kv_channels") && m->hidden % m->heads)
            return rd_missing(r, "kv_channels", "hidden size is not a multiple of the heads (arguments.py)");
        RI("kv_channels", m->hidden / m->heads, 1, 10000000, m->head_dim);
    } else {
        rd_kv(r, "kv_channels"); /* MLA has its own head sizes */
    }
    bool swiglu, sqrelu;
    if ((st = rd_bool(r, "swiglu", false, &swiglu)) || (st = rd_bool(r, "squared_relu", false, &sqrelu))) return st;
    if (swiglu && sqrelu)
        return rd_bad(r, later(kv_find(r->a, "swiglu"), kv_find(r->a, "squared_relu")),
                      "--swiglu and --squared-relu exclude each other");
    /* squared ReLU: a plain (not gated) MLP, like parplan's relu */
    m->act = swiglu ? PP_ACT_SWIGLU : sqrelu ? PP_ACT_RELU : PP_ACT_GELU;
    /* Megatron's default MLP: 4h, or 2/3 of it rounded down to 64 with SwiGLU (validate_args) */
    int64_t ffn_def = swiglu ? (int64_t)((4.0 * (double)m->hidden * 2.0 / 3.0) / 64.0) * 64 : 4 * m->hidden;
    RI("ffn_hidden_size", ffn_def > 0 ? ffn_def : 1, 1, 100000000, m->ffn);
    /* The vocabulary as the tokenizer has it; parplan pads it itself (memory.c, 128 x tp). A dump
     * prints vocab_size (NullTokenizer) or None (a real tokenizer: the log then prints
     * "padded vocab (size: V)" once the tokenizer is built); padded_vocab_size last. */
    if (rd_kv(r, "vocab_size")) RI("vocab_size", 0, 1, 100000000, m->vocab);
    else if (r->a->log_vocab > 0) m->vocab = r->a->log_vocab;
    else if (rd_kv(r, "padded_vocab_size")) RI("padded_vocab_size", 0, 1, 100000000, m->vocab);
    else c->need_vocab = true;
    RI("seq_length", -1, 1, 100000000, m->seq);
    const char *norm = NULL, *pos = NULL, *smax = NULL;
    pp_margs_kv *kn, *kp, *ks;
    if ((st = rd_str(r, "normalization", &norm, &kn))) return st;
    if (!norm || !strcmp(norm, "LayerNorm")) m->norm = PP_NORM_LAYERNORM;
    else if (!strcmp(norm, "RMSNorm")) m->norm = PP_NORM_RMSNORM;
    else return rd_bad(r, kn, "unknown value '%s' (LayerNorm or RMSNorm)", norm);
    if ((st = rd_str(r, "position_embedding_type", &pos, &kp))) return st;
    bool rotary;
    if ((st = rd_bool(r, "use_rotary_position_embeddings", false, &rotary))) return st;
    rd_kv(r, "add_position_embedding");
    if (!pos || !strcmp(pos, "learned_absolute")) m->pos = rotary ? PP_POS_ROPE : PP_POS_LEARNED;
    else if (!strcmp(pos, "rope") || !strcmp(pos, "yarn") || !strcmp(pos, "mrope")) m->pos = PP_POS_ROPE;
    else if (!strcmp(pos, "none")) m->pos = PP_POS_NONE;
    else if (!strcmp(pos, "relative")) {
        m->pos = PP_POS_NONE;
        note(r, "%s relative (T5 attention bias: no position parameters modelled)", kv_name(kp));
    } else
        return rd_bad(r, kp, "unknown value '%s' (learned_absolute, rope, yarn, mrope, relative or none)", pos);
    bool untie, bias, qkv_bias, qkln;
    if ((st = rd_bool(r, "untie_embeddings_and_output_weights", false, &untie)) ||
        (st = rd_bool(r, "add_bias_linear", true, &bias)) || (st = rd_bool(r, "add_qkv_bias", false, &qkv_bias)) ||
        (st = rd_bool(r, "qk_layernorm", false, &qkln)))
        return st;
    m->tied = !untie;
    m->bias = bias;
    m->qkv_bias = bias || qkv_bias;
    m->qk_norm = qkln ? PP_QKNORM_HEAD : PP_QKNORM_NONE;
    if ((st = rd_str(r, "softmax_type", &smax, &ks))) return st;
    if (smax && !strcmp(smax, "learnable")) m->attn_sinks = true;
    else if (smax && strcmp(smax, "vanilla") && strcmp(smax, "off-by-one"))
        return rd_bad(r, ks, "unknown value '%s' (vanilla, off-by-one or learnable)", smax);
    /* Mixture of Experts */
    RI("num_experts", 0, 0, 100000, m->experts);
    if (m->experts > 1) {
        RI("moe_router_topk", 2, 1, m->experts, m->topk);
        RI("moe_ffn_hidden_size", m->ffn, 1, 100000000, m->moe_ffn);
        RI("moe_shared_expert_intermediate_size", 0, 0, 100000000, m->shared_ffn);
        m->shared_experts = m->shared_ffn > 0 ? 1 : 0; /* one shared MLP of the summed size */
        if ((st = rd_bool(r, "moe_shared_expert_gate", false, &m->shared_gate)) ||
            (st = rd_bool(r, "moe_router_enable_expert_bias", false, &m->router_bias)))
            return st;
        pp_margs_kv *kf = rd_kv(r, "moe_layer_freq");
        if (kf) {
            int64_t *pat = malloc((size_t)(m->layers + 1) * sizeof *pat);
            if (!pat) return pp_error_set(r->err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            int n = 0;
            int64_t every = 0;
            st = rd_list(r, kf, pat, (int)(m->layers + 1 > 100000 ? 100000 : m->layers + 1), &n, &every);
            if (st == PP_OK && n == 0) {
                /* an integer N: layer i is MoE when i % N == 0 (gpt_layer_specs.py) */
                if (every < 1 || every > m->layers) st = rd_bad(r, kf, "must be between 1 and %lld, got %lld",
                                                                 (long long)m->layers, (long long)every);
                m->moe_every = every;
            } else if (st == PP_OK) {
                bool bin = true;
                for (int i = 0; i < n; i++) bin &= pat[i] == 0 || pat[i] == 1;
                if (n != m->layers) st = rd_bad(r, kf, "the pattern has %d entries, the model %lld layers", n,
                                                (long long)m->layers);
                else if (!bin) st = rd_bad(r, kf, "the pattern holds values other than 0 and 1");
                else if (!fit_moe_pattern(m, pat, m->layers))
                    st = rd_bad(r, kf, "no MoE layer, or more than %d exceptions to a regular pattern", PP_MODEL_MAX_LIST);
            }
            free(pat);
            if (st) return st;
        }
    } else {
        m->experts = 0;
    }
    /* Multi-latent attention (its own defaults: arguments.py --kv-lora-rank 32, --qk-head-dim 128,
     * --qk-pos-emb-head-dim 64, --v-head-dim 128, --q-lora-rank None) */
    if (mla) {
        RI("q_lora_rank", 0, 0, 10000000, m->q_lora_rank);
        RI("kv_lora_rank", 32, 1, 10000000, m->kv_lora_rank);
        RI("qk_head_dim", 128, 1, 10000000, m->qk_nope_dim);
        RI("qk_pos_emb_head_dim", 64, 1, 10000000, m->qk_rope_dim);
        RI("v_head_dim", 128, 1, 10000000, m->v_head_dim);
        m->kv_heads = m->heads;
        m->head_dim = 0; /* qk_head_dim + qk_pos_emb_head_dim (pp_model_validate) */
    }
    RI("mtp_num_layers", 0, 0, 64, m->mtp_layers);
    /* Sliding windows: --window-size "L,R" (TE's (left, right); -1 is unbounded), and which layers
     * are windowed (utils.py is_layer_window_attention: 1-based layer n is windowed unless
     * n % N == 0 for an integer N; a list marks windowed layers with 1). */
    pp_margs_kv *kw = rd_kv(r, "window_size");
    if (kw) {
        if ((st = rd_resolved(r, kw))) return st;
        long long lft = 0, rgt = 0;
        char tail = 0;
        const char *p = kw->value;
        while (*p == '(' || *p == '[' || *p == ' ') p++;
        if (sscanf(p, "%lld , %lld %c", &lft, &rgt, &tail) < 2 || (tail && tail != ')' && tail != ']'))
            return rd_bad(r, kw, "expects two integers 'left,right', got '%s'", kw->value);
        if (lft > 100000000 || lft < -1 || rgt < -1 || rgt > 100000000)
            return rd_bad(r, kw, "window sizes must be between -1 and 100000000, got '%s'", kw->value);
        if (rgt != 0) note(r, "%s %s (a window that looks ahead: modelled as causal)", kv_name(kw), kw->value);
        if (lft > 0) m->window = lft;
        pp_margs_kv *kk = rd_kv(r, "window_attn_skip_freq");
        if (kk && m->window > 0) {
            int64_t *pat = malloc((size_t)(m->layers + 1) * sizeof *pat);
            if (!pat) return pp_error_set(r->err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
            int n = 0;
            int64_t every = 0;
            st = rd_list(r, kk, pat, (int)(m->layers + 1 > 100000 ? 100000 : m->layers + 1), &n, &every);
            if (st == PP_OK && n == 0) {
                if (every < 1) st = rd_bad(r, kk, "must be at least 1, got %lld", (long long)every);
                m->window_full_every = every;
                m->window_full_phase = every - 1;
                if (every == 1) m->window = m->window_full_every = m->window_full_phase = 0;
            } else if (st == PP_OK && n != m->layers) {
                st = rd_bad(r, kk, "the pattern has %d entries, the model %lld layers", n, (long long)m->layers);
            } else if (st == PP_OK) {
                /* the regular pattern closest to the list */
                int64_t best = -1, best_e = 0, best_p = 0;
                for (int64_t e = 0; e <= m->layers && best != 0; e++)
                    for (int64_t ph = 0; ph < (e ? e : 1) && best != 0; ph++) {
                        int64_t miss = 0;
                        for (int64_t i = 0; i < m->layers; i++) {
                            bool win = e == 0 || i % e != ph;
                            miss += win != (pat[i] != 0);
                        }
                        if (best < 0 || miss < best) best = miss, best_e = e, best_p = ph;
                    }
                m->window_full_every = best_e;
                m->window_full_phase = best_p;
                bool any = false;
                for (int i = 0; i < n; i++) any |= pat[i] != 0;
                if (!any) m->window = m->window_full_every = m->window_full_phase = 0;
                else if (best > 0)
                    note(r, "%s (an irregular window pattern: modelled as every %lld-th layer full)", kv_name(kk),
                         (long long)best_e);
            }
            free(pat);
            if (st) return st;
        }
    }
    if (!c->need_vocab && (st = pp_model_validate(m, r->err))) {
        char msg[sizeof r->err->msg];
        snprintf(msg, sizeof msg, "%s", r->err->msg);
        return pp_error_set(r->err, PP_ERR_INPUT, r->a->path, r->a->line, 0, "the model the arguments describe: %s", msg);
    }
#undef RI
    return PP_OK;
}

static pp_status read_layout(rd *r)
{
    pp_margs_config *c = r->c;
    pp_layout *l = &c->layout;
    const pp_model *m = &c->model;
    pp_status st;
    int64_t v;
    pp_layout_init(l);
#define RI(key, def, lo, hi, dst)                                          \
    do {                                                                   \
        if ((st = rd_int(r, key, def, lo, hi, &v))) return st;             \
        dst = v;                                                           \
    } while (0)
    RI("tensor_model_parallel_size", 1, 1, 1000000, l->tp);
    RI("pipeline_model_parallel_size", 1, 1, 1000000, l->pp);
    RI("context_parallel_size", 1, 1, 1000000, l->cp);
    RI("expert_model_parallel_size", 1, 1, 1000000, l->ep);
    RI("expert_tensor_parallel_size", 0, 0, 1000000, l->etp);
    if (m->experts <= 1) l->etp = 0;
    /* Generalized TP weight rematerialisation (arguments.py resolve_tensor_parallel_weight_shards):
     * weights sharded over fewer ranks than the TP group and gathered again; none when the shards
     * are the (expert) TP size, which the dump prints when the flag is not given. */
    int64_t shards = 0, eshards = 0;
    RI("tensor_parallel_num_weight_shards", 0, 1, 1000000, shards);
    RI("expert_tensor_parallel_num_weight_shards", 0, 1, 1000000, eshards);
    if ((shards && shards != l->tp) || (eshards && eshards != (l->etp ? l->etp : l->tp)))
        note(r, "--tensor-parallel-num-weight-shards %lld / --expert-tensor-parallel-num-weight-shards %lld (TP weight "
                "rematerialisation)", (long long)shards, (long long)eshards);
    RI("micro_batch_size", -1, 1, 1000000, l->mbs);
    RI("global_batch_size", 0, 1, (int64_t)1 << 40, c->gbs);
    RI("world_size", 0, 1, 10000000, c->world_size);
    RI("gpus_per_node", 0, 1, 1024, c->gpus_per_node);
    RI("data_parallel_size", 0, 1, 10000000, c->dp);
    if (c->world_size) c->has |= PP_MARGS_HAS_WORLD;
    if (c->gpus_per_node) c->has |= PP_MARGS_HAS_GPN;
    if (c->dp) c->has |= PP_MARGS_HAS_DP;
    if (l->pp > PP_MAX_STAGES)
        return rd_bad(r, kv_find(r->a, "pipeline_model_parallel_size"), "more than %d pipeline stages", PP_MAX_STAGES);
    /* interleaving: virtual stages per rank, or layers per virtual stage */
    int64_t vpp = 1, per = 0;
    RI("num_virtual_stages_per_pipeline_rank", 1, 1, 1000000, vpp);
    if (vpp == 1) RI("virtual_pipeline_model_parallel_size", 1, 1, 1000000, vpp);
    pp_margs_kv *kper = rd_kv(r, "num_layers_per_virtual_pipeline_stage");
    if (vpp == 1 && kper) {
        RI("num_layers_per_virtual_pipeline_stage", 0, 1, 1000000, per);
        if (m->layers % (per * l->pp))
            return rd_bad(r, kper, "%lld layers per virtual stage x %lld pipeline stages do not divide the %lld layers",
                          (long long)per, (long long)l->pp, (long long)m->layers);
        vpp = m->layers / (per * l->pp);
    }
    l->vpp = vpp;
    bool sp;
    if ((st = rd_bool(r, "use_distributed_optimizer", false, &l->dist_opt)) ||
        (st = rd_bool(r, "sequence_parallel", false, &sp)))
        return st;
    l->sp = sp && l->tp > 1; /* validate_args turns it off at tp 1 */
    bool off;
    double frac;
    if ((st = rd_bool(r, "optimizer_cpu_offload", false, &off)) ||
        (st = rd_num(r, "optimizer_offload_fraction", 1.0, 0, 1, false, &frac)))
        return st;
    if (off) {
        l->offload = PP_OFF_OPTIMIZER;
        if (frac < 1.0) note(r, "--optimizer-offload-fraction %g (modelled as the whole optimizer offloaded)", frac);
    }
    /* recompute */
    const char *gran = NULL, *meth = NULL;
    pp_margs_kv *kg, *km;
    if ((st = rd_str(r, "recompute_granularity", &gran, &kg)) || (st = rd_str(r, "recompute_method", &meth, &km)))
        return st;
    int64_t rc_layers = 0;
    if (gran && !strcmp(gran, "full")) {
        l->recompute = PP_RC_FULL;
        if (meth && strcmp(meth, "uniform") && strcmp(meth, "block"))
            return rd_bad(r, km, "unknown value '%s' (uniform or block)", meth);
        int64_t nl = 0;
        RI("recompute_num_layers", 1, 1, 1000000, nl);
        if (meth && !strcmp(meth, "block")) {
            /* block: the first N layers of each model chunk (transformer_config.py) */
            rc_layers = nl * l->vpp;
        } else if (nl > 1) {
            note(r, "--recompute-method uniform --recompute-num-layers %lld (checkpoints of %lld layers: modelled as every "
                    "layer recomputed on its own)", (long long)nl, (long long)nl);
        }
    } else if (gran && !strcmp(gran, "selective")) {
        l->recompute = PP_RC_SELECTIVE;
        const char *mods = NULL;
        pp_margs_kv *kmo;
        if ((st = rd_str(r, "recompute_modules", &mods, &kmo))) return st;
        /* "core_attn mla_up_proj" on a command line, "['core_attn', 'mla_up_proj']" in a dump:
         * Megatron's module names (arguments.py --recompute-modules), one bit each. */
        if (mods) {
            char buf[512];
            snprintf(buf, sizeof buf, "%s", mods);
            for (char *q = buf; *q; q++)
                if (strchr("[]',\"", *q)) *q = ' ';
            unsigned bits = 0;
            for (char *save = NULL, *tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
                int i = pp_name_lookup(pp_rc_module_names, PP_RCM_COUNT, tok);
                if (i < 0) note(r, "%s: module '%s' (not modelled: the other modules are)", kv_name(kmo), tok);
                else bits |= 1u << i;
            }
            l->recompute_modules = bits;
        }
    } else if (gran) {
        return rd_bad(r, kg, "unknown value '%s' (full or selective)", gran);
    }
    int64_t per_stage = (m->layers + l->pp - 1) / l->pp;
    l->recompute_layers = rc_layers > 0 && rc_layers < per_stage ? rc_layers : 0;
    /* uneven stages */
    pp_margs_kv *kl = rd_kv(r, "pipeline_model_parallel_layout");
    int64_t first = 0, last = 0;
    RI("decoder_first_pipeline_num_layers", 0, 0, 1000000, first);
    RI("decoder_last_pipeline_num_layers", 0, 0, 1000000, last);
    if (kl && l->pp > 1) {
        if ((st = rd_resolved(r, kl))) return st;
        int64_t lvpp = 1;
        if ((st = rd_pp_layout(r, kl, l->pp, &lvpp, c->stage_layers))) return st;
        l->vpp = lvpp; /* the layout string's length sets the virtual stages */
        c->uneven = true;
        int64_t sum = 0;
        for (int64_t i = 0; i < l->pp; i++) sum += c->stage_layers[i];
        if (sum != m->layers)
            return rd_bad(r, kl, "the layout holds %lld decoder layers, --num-layers %lld", (long long)sum,
                          (long long)m->layers);
    } else if ((first || last) && l->pp > 1) {
        int64_t rest = m->layers - first - last, mid = l->pp - (first ? 1 : 0) - (last ? 1 : 0);
        if (rest < 0 || (mid > 0 && rest % mid) || (mid == 0 && rest))
            return rd_bad(r, kv_find(r->a, first ? "decoder_first_pipeline_num_layers" : "decoder_last_pipeline_num_layers"),
                          "the first/last stage sizes do not split %lld layers over %lld stages", (long long)m->layers,
                          (long long)l->pp);
        for (int64_t i = 0; i < l->pp; i++)
            c->stage_layers[i] = (int)(i == 0 && first ? first : i == l->pp - 1 && last ? last : rest / (mid ? mid : 1));
        c->uneven = true;
    }
    if (c->uneven) {
        for (int64_t i = 0; i < l->pp; i++) {
            int n = c->stage_layers[i];
            c->stage_recompute[i] = l->recompute != PP_RC_FULL ? 0 : rc_layers > 0 && rc_layers < n ? (int)rc_layers : n;
        }
        l->recompute_layers = 0;
    }
#undef RI
    return PP_OK;
}

static pp_status read_stack(rd *r)
{
    pp_margs_config *c = r->c;
    pp_stack *s = &c->stack;
    pp_status st;
    pp_stack_init(s);
    bool fp16, bf16;
    const char *fp8 = NULL;
    pp_margs_kv *k8;
    if ((st = rd_bool(r, "fp16", false, &fp16)) || (st = rd_bool(r, "bf16", false, &bf16)) ||
        (st = rd_str(r, "fp8", &fp8, &k8)))
        return st;
    if (fp16 && bf16)
        return rd_bad(r, later(kv_find(r->a, "fp16"), kv_find(r->a, "bf16")),
                      "--fp16 and --bf16 exclude each other (arguments.py validate_args)");
    if (!fp16 && !bf16)
        return rd_missing(r, "bf16", "the run trains in fp32 (neither --bf16 nor --fp16); parplan models 16-bit training");
    if (fp8 && strcmp(fp8, "hybrid") && strcmp(fp8, "e4m3"))
        return rd_bad(r, k8, "unknown value '%s' (hybrid or e4m3)", fp8);
    s->precision = fp8 ? PP_PREC_FP8 : fp16 ? PP_PREC_FP16 : PP_PREC_BF16;
    /* dropout: Megatron's defaults are 0.1 (arguments.py) */
    if ((st = rd_num(r, "attention_dropout", 0.1, 0, 1, true, &s->attention_dropout)) ||
        (st = rd_num(r, "hidden_dropout", 0.1, 0, 1, true, &s->hidden_dropout)))
        return st;
    s->dropout_given = true;
    const char *impl = NULL, *backend = NULL, *disp = NULL;
    pp_margs_kv *ki, *kd;
    if ((st = rd_str(r, "transformer_impl", &impl, &ki)) || (st = rd_str(r, "attention_backend", &backend, NULL)) ||
        (st = rd_str(r, "moe_token_dispatcher_type", &disp, &kd)))
        return st;
    if (!impl || !strcmp(impl, "transformer_engine")) s->impl = PP_IMPL_TE;
    else if (!strcmp(impl, "local")) s->impl = PP_IMPL_LOCAL;
    else return rd_bad(r, ki, "unknown value '%s' (transformer_engine or local)", impl);
    s->impl_given = true;
    snprintf(c->impl_name, sizeof c->impl_name, "%s", impl ? impl : "transformer_engine");
    /* Megatron's local DotProductAttention is unfused; TE runs flash or cuDNN fused attention
     * unless --attention-backend unfused (or local) */
    bool unfused = s->impl == PP_IMPL_LOCAL || (backend && (strstr(backend, "unfused") || strstr(backend, "local")));
    c->attention = unfused ? PP_ATTN_UNFUSED : PP_ATTN_FLASH;
    c->framework = PP_FW_MEGATRON;
    if ((st = rd_bool(r, "tp_comm_overlap", false, &s->tp_comm_overlap))) return st;
    if (!disp || !strcmp(disp, "allgather")) s->dispatcher = PP_DISPATCH_ALLGATHER;
    else if (!strcmp(disp, "alltoall")) s->dispatcher = PP_DISPATCH_ALLTOALL;
    else if (!strcmp(disp, "flex")) {
        s->dispatcher = PP_DISPATCH_ALLTOALL;
        if (c->model.experts > 1) note(r, "%s flex (DeepEP / HybridEP: modelled as all-to-all)", kv_name(kd));
    } else
        return rd_bad(r, kd, "unknown value '%s' (allgather, alltoall or flex)", disp);
    if ((st = rd_bool(r, "moe_grouped_gemm", false, &s->grouped_gemm))) return st;
    if ((st = rd_bool(r, "overlap_moe_expert_parallel_comm", false, &s->ep_overlap))) return st;
    if (s->grouped_gemm && s->impl == PP_IMPL_LOCAL) {
        /* LocalSpecProvider.grouped_mlp_modules (megatron/core/models/backends.py): SequentialMLP */
        s->grouped_gemm = false;
        if (c->model.experts > 1)
            note(r, "--moe-grouped-gemm with --transformer-impl local (ignored there: the experts run one by one)");
    }
    double cf = 0;
    if ((st = rd_num(r, "moe_expert_capacity_factor", 0, -1e9, 1e6, false, &cf))) return st;
    s->moe_capacity_factor = cf > 0 ? cf : 0; /* negative: None, dropless (transformer_config.py) */
    /* the finer software facts (calibrate's time options) */
    bool gbf16, acc32;
    if ((st = rd_bool(r, "overlap_grad_reduce", false, &c->overlap_grad_reduce)) ||
        (st = rd_bool(r, "overlap_param_gather", false, &c->overlap_param_gather)) ||
        (st = rd_bool(r, "overlap_p2p_comm", true, &c->overlap_p2p_comm)) ||
        (st = rd_bool(r, "gradient_accumulation_fusion", true, &c->grad_accum_fusion)) ||
        (st = rd_bool(r, "grad_reduce_in_bf16", false, &gbf16)))
        return st;
    pp_margs_kv *ka = rd_kv(r, "accumulate_allreduce_grads_in_fp32");
    if ((st = rd_bool(r, "accumulate_allreduce_grads_in_fp32", bf16 && !gbf16, &acc32))) return st;
    /* validate_args: bf16 accumulates and reduces in fp32 unless --grad-reduce-in-bf16 */
    c->grad_reduce_fp32 = ka ? acc32 : bf16 && !gbf16;
    s->grad_bf16 = bf16 && !c->grad_reduce_fp32; /* --grad-reduce-bf16 */
    if (!bf16 && c->grad_reduce_fp32) note(r, "--accumulate-allreduce-grads-in-fp32 with --fp16 (modelled as fp16 gradients)");
    return PP_OK;
}

/* Name what is set and not modelled (the table above). */
static void classify(rd *r)
{
    const pp_margs *a = r->a;
    bool te = r->c->stack.impl == PP_IMPL_TE;
    for (int i = 0; i < a->n; i++) {
        const pp_margs_kv *k = &a->kv[i];
        const key_def *d = key_lookup(k->key);
        if (k->used && !(d && d->cls == K_FUSION)) continue;
        bool show = false;
        if (!d) show = a->source == PP_MARGS_DUMP ? !value_off(k->value) : true;
        else if (d->cls == K_UNMODELLED) show = !value_neutral(k->value, d->neutral);
        else if (d->cls == K_FUSION) show = te && !strcmp(k->value ? k->value : "", "False");
        if (!show) continue;
        char f[100];
        const char *name = k->flag;
        if (a->source == PP_MARGS_DUMP || name[0] != '-') {
            key_flag(k->key, f, sizeof f);
            name = f;
        }
        bool sw = !strcmp(k->value, "True") || (d && d->cls == K_FUSION);
        if (d && d->cls == K_FUSION && name[2] != 'n') note(r, "%s False (a TE run with the fusion off)", name);
        else if (sw) note(r, "%s", name);
        else note(r, "%s %.60s", name, k->value);
    }
}

pp_status pp_margs_read(pp_margs *a, pp_margs_config *c, pp_error *err)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < a->n; i++) a->kv[i].used = false;
    rd r = {a, c, err};
    if (a->source == PP_MARGS_NONE)
        return pp_error_set(err, PP_ERR_INPUT, a->path, 0, 0, "no Megatron-LM arguments were read");
    pp_status st = read_model(&r);
    if (st == PP_OK) st = read_layout(&r);
    if (st == PP_OK) st = read_stack(&r);
    if (st) return st;
    pp_layout l = c->layout;
    if (c->world_size) {
        int64_t mp = l.tp * l.pp * l.cp;
        l.dp = c->world_size % mp ? 0 : c->world_size / mp;
    } else if (c->dp) {
        l.dp = c->dp;
    }
    pp_margs_config_overlap(c, &l);
    classify(&r);
    return PP_OK;
}
