/* The lexer of the shell reader: the internal interface between shell_lex.c, which cuts a script
 * into tokens, and shell.c, which expands them and finds the command that runs Megatron-LM.
 * Not installed. */
#ifndef PP_SHELL_LEX_H
#define PP_SHELL_LEX_H

#include "pp.h"

/* The text being read and the position in it. */
typedef struct {
    const char *t;
    size_t len, p;
    int line, col;
    const char *path;
    pp_error *err;
    char heredoc[8][128]; /* delimiters waiting for the end of the line */
    bool heredoc_tabs[8];
    int n_heredoc;
} pp_sh_lexer;

/* A token of the input: a word as written (quotes kept), a separator, or an array assignment
 * NAME=( words ). */
enum { PP_SH_WORD, PP_SH_SEP, PP_SH_END, PP_SH_ARRAY };
typedef struct pp_sh_tok {
    int type;
    char *s;
    int line, col;
    char name[64];
    bool append;          /* NAME+=( ... ) */
    struct pp_sh_tok *el; /* PP_SH_ARRAY: the element words */
    int nel;
} pp_sh_tok;

/* The next token from c->p: comments, blanks, line continuations, redirections (with their target
 * word) and here-document bodies are skipped; a newline or an operator is a separator. PP_ERR_INPUT
 * with line:col for an unterminated quote, $( or array; on an error *t holds what was built of it
 * (free it). */
pp_status pp_sh_lex(pp_sh_lexer *c, pp_sh_tok *t);
void pp_sh_tok_free(pp_sh_tok *t);

/* The characters of a variable name. */
static inline bool pp_sh_is_name_start(int ch) { return ch == '_' || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z'); }
static inline bool pp_sh_is_name_char(int ch) { return pp_sh_is_name_start(ch) || (ch >= '0' && ch <= '9'); }

#endif
