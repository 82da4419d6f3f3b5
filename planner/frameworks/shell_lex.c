/* The lexer of the shell reader (shell.c): a script cut into tokens - words as written (quotes
 * kept), separators, array assignments NAME=( ... ) - with comments, line continuations,
 * redirections and here-document bodies skipped. */
#include "shell_lex.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

void pp_sh_tok_free(pp_sh_tok *t)
{
    free(t->s);
    for (int i = 0; i < t->nel; i++) pp_sh_tok_free(&t->el[i]);
    free(t->el);
    memset(t, 0, sizeof *t);
}

#define SH_BAD(line, col, ...) pp_error_set(c->err, PP_ERR_INPUT, c->path, line, col, __VA_ARGS__)
#define SH_NOMEM() pp_error_set(c->err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory")

static int sh_peek(const pp_sh_lexer *c, size_t k) { return c->p + k < c->len ? (unsigned char)c->t[c->p + k] : -1; }

static void sh_adv(pp_sh_lexer *c, size_t k)
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

static bool is_op_char(int ch) { return ch == ';' || ch == '&' || ch == '|' || ch == '(' || ch == ')' || ch == '<' || ch == '>'; }

/* Skip a here-document's body: the lines up to its delimiter. */
static void sh_skip_heredocs(pp_sh_lexer *c)
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
static bool sh_skip_construct(pp_sh_lexer *c)
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

/* A raw word from c->p: up to unquoted blank or operator. */
static pp_status sh_lex_word(pp_sh_lexer *c, pp_sh_tok *t)
{
    size_t b = c->p;
    memset(t, 0, sizeof *t);
    t->type = PP_SH_WORD;
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
    if (sh_peek(c, 0) == '(' && k >= 2 && t->s[k - 1] == '=' && pp_sh_is_name_start((unsigned char)t->s[0])) {
        size_t m = 0;
        while (m < k && pp_sh_is_name_char((unsigned char)t->s[m])) m++;
        bool app = m + 2 == k && t->s[m] == '+';
        if ((m + 1 == k || app) && m < sizeof t->name) {
            memcpy(t->name, t->s, m);
            t->name[m] = 0;
            t->append = app;
            t->type = PP_SH_ARRAY;
            sh_adv(c, 1);
            for (;;) {
                pp_sh_tok e;
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
                    pp_sh_tok_free(&e);
                    return st;
                }
                pp_sh_tok *el = realloc(t->el, (size_t)(t->nel + 1) * sizeof *el);
                if (!el) {
                    pp_sh_tok_free(&e);
                    return SH_NOMEM();
                }
                t->el = el;
                t->el[t->nel++] = e;
            }
        }
    }
    return PP_OK;
}

pp_status pp_sh_lex(pp_sh_lexer *c, pp_sh_tok *t)
{
    memset(t, 0, sizeof *t);
    for (;;) {
        int ch = sh_peek(c, 0);
        if (ch < 0) {
            t->type = PP_SH_END;
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
            t->type = PP_SH_SEP;
            return PP_OK;
        }
        if (ch == '<' || ch == '>' || (ch == '&' && sh_peek(c, 1) == '>')) {
            /* a redirection and its target word: not an argument */
            bool here = ch == '<' && sh_peek(c, 1) == '<' && sh_peek(c, 2) != '<';
            bool tabs = here && sh_peek(c, 2) == '-';
            while (c->p < c->len && strchr("<>&-|", c->t[c->p])) sh_adv(c, 1);
            while (sh_peek(c, 0) == ' ' || sh_peek(c, 0) == '\t') sh_adv(c, 1);
            if (c->p >= c->len || sh_peek(c, 0) == '\n') continue;
            pp_sh_tok target;
            memset(&target, 0, sizeof target);
            pp_status st = sh_lex_word(c, &target);
            if (st) {
                pp_sh_tok_free(&target);
                return st;
            }
            if (here && c->n_heredoc < 8) {
                size_t k = 0;
                for (const char *q = target.s; *q && k + 1 < sizeof c->heredoc[0]; q++)
                    if (*q != '\'' && *q != '"' && *q != '\\') c->heredoc[c->n_heredoc][k++] = *q;
                c->heredoc[c->n_heredoc][k] = 0;
                c->heredoc_tabs[c->n_heredoc++] = tabs;
            }
            pp_sh_tok_free(&target);
            continue;
        }
        if (is_op_char(ch)) {
            while (c->p < c->len && (c->t[c->p] == ';' || c->t[c->p] == '&' || c->t[c->p] == '|')) sh_adv(c, 1);
            if (c->p < c->len && (c->t[c->p] == '(' || c->t[c->p] == ')') && t->col == c->col) sh_adv(c, 1);
            t->type = PP_SH_SEP;
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
