/* The shell reader (shell.h): a script's words expanded - variables and arrays defined in the
 * script (NAME=v, NAME=( ... ), NAME+=( ... ), export/declare/local), $VAR ${VAR} ${VAR:-default}
 * "${ARR[@]}", $((...)) integer arithmetic, quotes - and the command that runs Megatron-LM found,
 * with the launcher's GPU count. Nothing is run: a command substitution or a variable the script
 * does not define leaves its word unresolved. Conditionals and loops are not evaluated: every
 * assignment counts, in the order written. The tokens come from shell_lex.c. */
#include "shell.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shell_lex.h"

#define MARGS_MAX_WORDS 100000 /* words of one command after expansion */
#define MARGS_MAX_VARS 4096

typedef struct {
    char name[64];
    pp_sh_words v; /* a scalar has one value */
} sh_var;

typedef struct {
    pp_sh_lexer lex; /* the text and the position in it */
    sh_var *vars;
    int nv, capv;
    pp_sh_command best; /* the best Megatron command so far */
    int depth;          /* command text read from a variable's value or a bash -c word (sh_command_text) */
    bool best_from_var; /* best was read from a variable's value: a command that runs it wins at its score */
} sh_ctx;

#define SH_BAD(line, col, ...) pp_error_set(c->lex.err, PP_ERR_INPUT, c->lex.path, line, col, __VA_ARGS__)
#define SH_NOMEM() pp_error_set(c->lex.err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory")

static void words_free(pp_sh_words *w)
{
    for (int i = 0; i < w->n; i++) free(w->w[i].s);
    free(w->w);
    memset(w, 0, sizeof *w);
}

static bool words_push(pp_sh_words *w, const char *s, size_t n, bool unres, int line, int col)
{
    if (w->n >= MARGS_MAX_WORDS) return false;
    if (w->n == w->cap) {
        int nc = w->cap ? 2 * w->cap : 16;
        pp_sh_word *p = realloc(w->w, (size_t)nc * sizeof *p);
        if (!p) return false;
        w->w = p;
        w->cap = nc;
    }
    char *c = malloc(n + 1);
    if (!c) return false;
    memcpy(c, s, n);
    c[n] = 0;
    w->w[w->n++] = (pp_sh_word){c, unres, line, col};
    return true;
}

/* ---- expansion */

static sh_var *var_find(sh_ctx *c, const char *name, size_t n)
{
    for (int i = c->nv - 1; i >= 0; i--)
        if (strlen(c->vars[i].name) == n && !memcmp(c->vars[i].name, name, n)) return &c->vars[i];
    return NULL;
}

/* Set (or append to) a variable; takes the words. */
static pp_status var_set(sh_ctx *c, const char *name, pp_sh_words *v, bool append)
{
    sh_var *x = var_find(c, name, strlen(name));
    if (!x) {
        if (c->nv >= MARGS_MAX_VARS) return SH_BAD(c->lex.line, 1, "more than %d variables", MARGS_MAX_VARS);
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
    pp_sh_words *out;
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
    } else if (ch == '$' || pp_sh_is_name_start((unsigned char)ch)) {
        if (ch == '$') a->p++;
        bool brace = a->p < a->n && a->s[a->p] == '{';
        if (brace) a->p++;
        size_t b = a->p;
        while (a->p < a->n && pp_sh_is_name_char((unsigned char)a->s[a->p])) a->p++;
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
            while (k < inn && pp_sh_is_name_char((unsigned char)in[k])) k++;
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
                pp_sh_words tmp = {0};
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
    if (!pp_sh_is_name_start((unsigned char)ch)) {
        *used = 1;
        b_put(b, "$", 1);
        return PP_OK;
    }
    size_t k = 1;
    while (k < n && pp_sh_is_name_char((unsigned char)s[k])) k++;
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
            pp_sh_words *o = b->out;
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
static pp_status sh_expand(sh_ctx *c, const pp_sh_tok *t, bool split, pp_sh_words *out)
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
    if (!pp_sh_is_name_start((unsigned char)s[0])) return 0;
    while (pp_sh_is_name_char((unsigned char)s[k])) k++;
    *append = s[k] == '+' && s[k + 1] == '=';
    if (s[k] == '=' || *append) return k;
    return 0;
}

/* An environment variable's name as launch scripts write them: upper case, digits, '_'. */
static bool env_name(const char *s)
{
    if (!(*s >= 'A' && *s <= 'Z')) return false;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) return false;
    return true;
}

/* NAME=value into c->best.env, replacing an earlier value of NAME. */
static pp_status env_set(sh_ctx *c, const char *name, const pp_sh_word *v, int line, int col)
{
    pp_sh_words *e = &c->best.env;
    size_t k = strlen(name);
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "%s=%s", name, v ? v->s : "");
    if (n < 0 || (size_t)n >= sizeof buf) return PP_OK; /* a value this long is no setting parplan reads */
    for (int i = 0; i < e->n; i++)
        if (!strncmp(e->w[i].s, name, k) && e->w[i].s[k] == '=') {
            char *d = strdup(buf);
            if (!d) return SH_NOMEM();
            free(e->w[i].s);
            e->w[i] = (pp_sh_word){d, v && v->unresolved, line, col};
            return PP_OK;
        }
    return words_push(e, buf, (size_t)n, v && v->unresolved, line, col) ? PP_OK : SH_NOMEM();
}

static pp_status sh_read(sh_ctx *c);
static void sh_ctx_free(sh_ctx *c);

/* Text that holds a command, already expanded: a variable's value (Megatron-LM's sbatch examples,
 * examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh: TRAINING_CMD="...; python
 * ${MEGATRON_PATH}/pretrain_gpt.py ${PRETRAIN_ARGS[@]}", run by bash -c inside a here-document) or
 * the word after bash -c / sh -c (runs). Read as a script of its own, with no variables of its own:
 * a command in it that runs a *.py script competes with the script's commands as they do. Its words
 * keep the position of the text (the assignment or the word) for errors. Text that does not read as
 * shell (an unterminated quote) is not a command: nothing is taken from it. */
static pp_status sh_command_text(sh_ctx *c, const pp_sh_word *v, bool runs)
{
    if (c->depth >= 2 || !strstr(v->s, ".py") || !strstr(v->s, "--")) return PP_OK;
    sh_ctx n;
    memset(&n, 0, sizeof n);
    pp_error scratch = {0};
    n.lex.t = v->s;
    n.lex.len = strlen(v->s);
    n.lex.line = v->line;
    n.lex.col = v->col;
    n.lex.path = c->lex.path;
    n.lex.err = &scratch;
    n.depth = c->depth + 1;
    pp_status st = sh_read(&n);
    if (st == PP_ERR_NOMEM) {
        sh_ctx_free(&n);
        return SH_NOMEM();
    }
    /* the text bash -c runs wins over the same command read from the variable that holds it */
    if (st == PP_OK && n.best.score >= 2 && (n.best.score > c->best.score || (runs && n.best.score == c->best.score))) {
        for (int i = 0; i < n.best.args.n; i++) {
            n.best.args.w[i].line = v->line;
            n.best.args.w[i].col = v->col;
            n.best.args.w[i].unresolved |= v->unresolved && strchr(n.best.args.w[i].s, '$') != NULL;
        }
        words_free(&c->best.args);
        c->best.args = n.best.args;
        memset(&n.best.args, 0, sizeof n.best.args);
        c->best.score = n.best.score;
        c->best.line = v->line;
        snprintf(c->best.program, sizeof c->best.program, "%s", n.best.program);
        c->best.nproc = n.best.nproc;
        c->best.nnodes = n.best.nnodes;
        c->best_from_var = !runs;
    }
    sh_ctx_free(&n);
    return PP_OK;
}

static pp_status sh_assign_word(sh_ctx *c, const pp_sh_tok *t)
{
    bool app = false;
    size_t k = assignment_name(t->s, &app);
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(k < 63 ? k : 63), t->s);
    pp_sh_tok v = *t;
    v.s = t->s + k + (app ? 2 : 1);
    v.col = t->col + (int)(k + (app ? 2 : 1));
    pp_sh_words w = {0};
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
    if (st == PP_OK && w.n > 1) {
        /* a scalar assignment does not split: "${ARR[@]}" in X="..." joins the elements with
         * blanks into one value (bash: expansion in an assignment is not word-split) */
        size_t len = 0;
        for (int i = 0; i < w.n; i++) len += strlen(w.w[i].s) + 1;
        char *j = malloc(len);
        if (!j) st = SH_NOMEM();
        else {
            size_t k = 0;
            bool unres = false;
            for (int i = 0; i < w.n; i++) {
                size_t l = strlen(w.w[i].s);
                if (i) j[k++] = ' ';
                memcpy(j + k, w.w[i].s, l);
                k += l;
                unres |= w.w[i].unresolved;
            }
            j[k] = 0;
            pp_sh_word first = w.w[0];
            for (int i = 1; i < w.n; i++) free(w.w[i].s);
            free(first.s);
            w.w[0] = (pp_sh_word){j, unres, first.line, first.col};
            w.n = 1;
        }
    }
    if (st == PP_OK && w.n <= 1 && env_name(name)) st = env_set(c, name, w.n ? &w.w[0] : NULL, t->line, t->col);
    if (st == PP_OK && w.n == 1) st = sh_command_text(c, &w.w[0], false);
    if (st == PP_OK) st = var_set(c, name, &w, false);
    words_free(&w);
    return st;
}

static pp_status sh_assign_array(sh_ctx *c, const pp_sh_tok *t)
{
    pp_sh_words w = {0};
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
static void launcher_gpus(const pp_sh_words *w, int upto, int64_t *nproc, int64_t *nnodes)
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
static pp_status sh_command(sh_ctx *c, pp_sh_words *w, int line)
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
    if (py < 0 && c->best.score == 1) score = 1; /* bare flag lines add up */
    else if (score < c->best.score || (score == c->best.score && !c->best_from_var)) return PP_OK;
    c->best_from_var = false; /* a command that runs (CMD="python x.py ..." then $CMD --more) */
    if (score != 1 || c->best.score != 1) {
        words_free(&c->best.args);
        c->best.line = line;
    }
    c->best.score = score;
    snprintf(c->best.program, sizeof c->best.program, "%s", py >= 0 ? base_name(w->w[py].s) : "");
    for (int i = first; i < w->n; i++)
        if (!words_push(&c->best.args, w->w[i].s, strlen(w->w[i].s), w->w[i].unresolved, w->w[i].line, w->w[i].col))
            return SH_NOMEM();
    if (py >= 0) launcher_gpus(w, py, &c->best.nproc, &c->best.nnodes);
    return PP_OK;
}

static bool tok_is(const pp_sh_tok *t, const char *s) { return t->type == PP_SH_WORD && !strcmp(t->s, s); }

static pp_status sh_process(sh_ctx *c, pp_sh_tok *toks, int n)
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
        if (toks[i].type == PP_SH_ARRAY) st = sh_assign_array(c, &toks[i]);
        else if (assignment_name(toks[i].s, &app)) st = sh_assign_word(c, &toks[i]);
        else break;
        if (st) return st;
    }
    if (i >= n) return PP_OK;
    const char *cmd = toks[i].type == PP_SH_WORD ? toks[i].s : "";
    if (!strcmp(cmd, "export") || !strcmp(cmd, "declare") || !strcmp(cmd, "typeset") || !strcmp(cmd, "local") ||
        !strcmp(cmd, "readonly")) {
        for (int j = i + 1; j < n && st == PP_OK; j++) {
            bool app;
            if (toks[j].type == PP_SH_ARRAY) st = sh_assign_array(c, &toks[j]);
            else if (assignment_name(toks[j].s, &app)) st = sh_assign_word(c, &toks[j]);
        }
        return st;
    }
    pp_sh_words w = {0};
    for (int j = i; j < n && st == PP_OK; j++)
        if (toks[j].type == PP_SH_WORD) st = sh_expand(c, &toks[j], true, &w);
    if (st == PP_OK) st = sh_command(c, &w, toks[i].line);
    /* bash -c TEXT / sh -c TEXT (after the shell's own options, as srun ... bash -x -c "$CMD") */
    for (int j = 0; st == PP_OK && j + 1 < w.n; j++)
        if (!strcmp(w.w[j].s, "-c") && j > 0) {
            bool shell = false;
            for (int k = 0; k < j && !shell; k++) {
                const char *sh = base_name(w.w[k].s);
                shell = !strcmp(sh, "bash") || !strcmp(sh, "sh");
            }
            if (shell) st = sh_command_text(c, &w.w[j + 1], true);
            break;
        }
    words_free(&w);
    return st;
}

/* Run the reading over the whole text; the Megatron words end in c->best.args. */
static pp_status sh_read(sh_ctx *c)
{
    pp_sh_tok *toks = NULL;
    int n = 0, cap = 0;
    pp_status st = PP_OK;
    for (;;) {
        pp_sh_tok t;
        st = pp_sh_lex(&c->lex, &t);
        if (st) {
            pp_sh_tok_free(&t); /* what the lexer had built of it */
            break;
        }
        if (t.type == PP_SH_WORD || t.type == PP_SH_ARRAY) {
            if (n == cap) {
                int nc = cap ? 2 * cap : 32;
                pp_sh_tok *p = realloc(toks, (size_t)nc * sizeof *p);
                if (!p) {
                    pp_sh_tok_free(&t);
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
        for (int i = 0; i < n; i++) pp_sh_tok_free(&toks[i]);
        n = 0;
        if (st || t.type == PP_SH_END) break;
    }
    for (int i = 0; i < n; i++) pp_sh_tok_free(&toks[i]);
    free(toks);
    return st;
}

static void sh_ctx_free(sh_ctx *c)
{
    for (int i = 0; i < c->nv; i++) words_free(&c->vars[i].v);
    free(c->vars);
    words_free(&c->best.args);
    words_free(&c->best.env);
}

pp_status pp_sh_command_find(const char *text, size_t len, int line0, const char *path, pp_sh_command *cmd,
                             pp_error *err)
{
    sh_ctx c;
    memset(&c, 0, sizeof c);
    memset(cmd, 0, sizeof *cmd);
    c.lex.t = text;
    c.lex.len = len;
    c.lex.line = line0;
    c.lex.col = 1;
    c.lex.path = path;
    c.lex.err = err;
    pp_status st = sh_read(&c);
    if (st == PP_OK) {
        *cmd = c.best; /* the caller's now */
        memset(&c.best, 0, sizeof c.best);
    }
    sh_ctx_free(&c);
    return st;
}

void pp_sh_command_free(pp_sh_command *cmd)
{
    if (!cmd) return;
    words_free(&cmd->args);
    words_free(&cmd->env);
}
