/* Megatron-LM's pipeline split (pp_pipeline.h): its layout string, read and written, and the
 * split of its first/last-stage and account-for flags.
 *
 * Sources (the Megatron-LM snapshot of tests/data/megatron_flags.txt):
 *  - megatron/core/transformer/pipeline_parallel_layer_layout.py: parse_str_to_list (commas
 *    removed, then re.sub of r'\(([^)]+)\)\*(\d+)' and then of r'(.)\*(\d+)', then the characters
 *    E t m L split at '|'), __init__ (the list is pp x vpp long, entry v * pp + r is virtual stage v
 *    of rank r) and validate_layer_layout;
 *  - megatron/core/transformer/transformer_config.py __post_init__ and transformer_block.py
 *    get_num_layers_to_build: the first/last-stage split and the account-for flags. */
#include "pp_pipeline.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest unrolled layout (characters): far beyond any model, small enough to unroll in memory. */
#define LAYOUT_MAX_CHARS (1 << 22)

/* A character of the layout as unrolled so far and the column it was written at. */
typedef struct {
    char *c;
    int *col;
    size_t n, cap;
} lbuf;

static void lbuf_free(lbuf *b)
{
    free(b->c);
    free(b->col);
    b->c = NULL;
    b->col = NULL;
    b->n = b->cap = 0;
}

static bool lbuf_push(lbuf *b, char c, int col)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        char *nc = realloc(b->c, cap);
        if (!nc) return false;
        b->c = nc;
        int *ncol = realloc(b->col, cap * sizeof *ncol);
        if (!ncol) return false;
        b->col = ncol;
        b->cap = cap;
    }
    b->c[b->n] = c;
    b->col[b->n++] = col;
    return true;
}

/* The count after a '*' at in->c[i] (digits from i + 1): its value (capped) and the index after it;
 * false when no digit follows. */
static bool count_at(const lbuf *in, size_t i, long long *cnt, size_t *end)
{
    if (i >= in->n || in->c[i] != '*' || i + 1 >= in->n || !isdigit((unsigned char)in->c[i + 1])) return false;
    long long v = 0;
    size_t k = i + 1;
    for (; k < in->n && isdigit((unsigned char)in->c[k]); k++)
        if (v <= LAYOUT_MAX_CHARS) v = v * 10 + (in->c[k] - '0');
    *cnt = v;
    *end = k;
    return true;
}

#define LBAD(col, ...) pp_error_set(err, PP_ERR_INPUT, NULL, 0, (col), __VA_ARGS__)

/* Append in[from, to) cnt times. */
static pp_status repeat(lbuf *out, const lbuf *in, size_t from, size_t to, long long cnt, int col, pp_error *err)
{
    if ((double)out->n + (double)(to - from) * (double)cnt > LAYOUT_MAX_CHARS)
        return LBAD(col, "the repeat at column %d unrolls the layout to more than %d characters", col,
                    LAYOUT_MAX_CHARS);
    for (long long r = 0; r < cnt; r++)
        for (size_t k = from; k < to; k++)
            if (!lbuf_push(out, in->c[k], in->col[k])) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    return PP_OK;
}

/* Megatron's two substitutions, in its order: every "(content)*N" (content: one or more
 * characters up to the first ')'), then every "x*N". What neither matches stays as written. */
static pp_status unroll(const lbuf *in, lbuf *out, bool groups, pp_error *err)
{
    pp_status st = PP_OK;
    for (size_t i = 0; i < in->n && st == PP_OK;) {
        long long cnt;
        size_t end;
        if (groups && in->c[i] == '(') {
            size_t j = i + 1;
            while (j < in->n && in->c[j] != ')') j++;
            if (j < in->n && j > i + 1 && count_at(in, j + 1, &cnt, &end)) {
                st = repeat(out, in, i + 1, j, cnt, in->col[i], err);
                i = end;
                continue;
            }
        } else if (!groups && count_at(in, i + 1, &cnt, &end)) {
            st = repeat(out, in, i, i + 1, cnt, in->col[i], err);
            i = end;
            continue;
        }
        if (!lbuf_push(out, in->c[i], in->col[i])) st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        i++;
    }
    return st;
}

/* What a character the unrolling left over is not. */
static pp_status bad_char(const char *s, char ch, int col, pp_error *err)
{
    const char *what = ch == '(' ? "opens a group that is not '(...)*N' (groups hold one or more characters, do not "
                                   "nest and need a count)"
                       : ch == ')' ? "closes no group followed by '*N'"
                       : ch == '*' ? "needs one character or a group before it and a count after it"
                       : isdigit((unsigned char)ch) ? "is a count without '*' before it"
                       : ch == ' ' ? "is a space (Megatron's layout has none)"
                                   : "is not E (embedding), t (decoder layer), m (MTP layer), L (loss) or '|'";
    if (isprint((unsigned char)ch))
        return LBAD(col, "'%c' at column %d of '%.80s' %s", ch, col, s, what);
    return LBAD(col, "the character 0x%02x at column %d of '%.80s' %s", (unsigned char)ch, col, s, what);
}

pp_status pp_pipeline_layout_parse(const char *s, int64_t pp, int64_t layers, int64_t mtp, int *counts,
                                   int64_t cap, int64_t *vpp, pp_error *err)
{
    if (!s || !*s) return LBAD(0, "the pipeline layout is empty");
    if (pp < 1) return LBAD(0, "the pipeline layout needs a pipeline size of at least 1");
    lbuf a = {0}, b = {0}, c = {0};
    pp_status st = PP_OK;
    /* commas are cosmetic */
    for (int i = 0; s[i] && st == PP_OK; i++)
        if (s[i] != ',' && !lbuf_push(&a, s[i], i + 1)) st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (st == PP_OK) st = unroll(&a, &b, true, err);
    if (st == PP_OK) st = unroll(&b, &c, false, err);
    lbuf_free(&a);
    lbuf_free(&b);
    if (st != PP_OK) {
        lbuf_free(&c);
        return st;
    }
    /* the characters, and where the layers are */
    int64_t stages = 1, n_e = 0, n_l = 0, n_t = 0, n_m = 0;
    int first_m_col = 0;
    size_t first_item = c.n, last_item = c.n;
    for (size_t i = 0; i < c.n; i++) {
        char ch = c.c[i];
        if (ch == '|') {
            stages++;
            continue;
        }
        if (!strchr("EtmL", ch) || !ch) {
            st = bad_char(s, ch, c.col[i], err);
            break;
        }
        if (first_item == c.n) first_item = i;
        last_item = i;
        if (ch == 'E' && n_e++) {
            st = LBAD(c.col[i], "a second embedding 'E' at column %d of '%.80s': Megatron takes exactly one", c.col[i], s);
            break;
        }
        if (ch == 'L' && n_l++) {
            st = LBAD(c.col[i], "a second loss 'L' at column %d of '%.80s': Megatron takes exactly one", c.col[i], s);
            break;
        }
        if (ch == 'm' && !n_m++) first_m_col = c.col[i];
        if (ch == 't') {
            if (n_m) {
                st = LBAD(c.col[i], "a decoder layer 't' at column %d of '%.80s' after the MTP layer at column %d: the "
                                    "decoder layers come first", c.col[i], s, first_m_col);
                break;
            }
            n_t++;
        }
    }
    if (st == PP_OK && (first_item == c.n || c.c[first_item] != 'E'))
        st = first_item == c.n ? LBAD(0, "the pipeline layout '%.80s' holds no layer", s)
                               : LBAD(c.col[first_item], "the layout '%.80s' must begin with the embedding 'E'; column %d "
                                                         "holds '%c'", s, c.col[first_item], c.c[first_item]);
    if (st == PP_OK && c.c[last_item] != 'L')
        st = LBAD(c.col[last_item], "the layout '%.80s' must end with the loss 'L'; column %d holds '%c'", s,
                  c.col[last_item], c.c[last_item]);
    if (st == PP_OK && stages % pp)
        st = LBAD(0, "the layout '%.80s' has %lld stages, not a multiple of the %lld pipeline stages", s,
                  (long long)stages, (long long)pp);
    if (st == PP_OK && stages > cap)
        st = LBAD(0, "the layout '%.80s' has %lld stages: at most %lld", s, (long long)stages, (long long)cap);
    if (st == PP_OK && n_t != layers)
        st = LBAD(0, "the layout '%.80s' holds %lld decoder layers 't', the model has %lld", s, (long long)n_t,
                  (long long)layers);
    if (st == PP_OK && n_m != mtp)
        st = LBAD(n_m ? first_m_col : 0, "the layout '%.80s' holds %lld MTP layers 'm', the model has %lld", s,
                  (long long)n_m, (long long)mtp);
    if (st != PP_OK) {
        lbuf_free(&c);
        return st;
    }
    /* per virtual stage */
    int64_t k = 0;
    for (int64_t i = 0; i < stages; i++) counts[i] = 0;
    for (size_t i = 0; i < c.n; i++) {
        if (c.c[i] == '|') {
            k++;
        } else if (c.c[i] == 't') {
            counts[k]++;
        } else if (c.c[i] == 'm' && k != stages - 1) {
            st = LBAD(c.col[i], "the MTP layer 'm' at column %d of '%.80s' is in virtual stage %lld of rank %lld: parplan "
                                "prices the MTP layers in the last virtual stage, with the loss", c.col[i], s,
                      (long long)(k / pp), (long long)(k % pp));
            break;
        }
    }
    lbuf_free(&c);
    if (st == PP_OK) *vpp = stages / pp;
    return st;
}

/* ------------------------------------------------------------------ writing */

/* The decoder layers of one virtual stage as written: "", "t", "tt" (compact) or "t*N". */
static void t_run(char *buf, size_t n, int64_t layers, bool compact)
{
    if (layers <= 0) snprintf(buf, n, "%s", "");
    else if (layers == 1) snprintf(buf, n, "t");
    else if (layers == 2 && compact) snprintf(buf, n, "tt");
    else snprintf(buf, n, "t*%lld", (long long)layers);
}

pp_status pp_pipeline_layout_format(const pp_work *w, const pp_layout *l, char *out, size_t n, pp_error *err)
{
    int64_t p = l->pp, v = l->vpp > 1 ? l->vpp : 1, N = p * v, mtp = w->model.mtp_layers;
    bool compact = v > 1;
    if (n == 0) return LBAD(0, "no room for the pipeline layout");
    out[0] = 0;
    /* segment k: 'E' on the first, the layers, the MTP layers and 'L' on the last */
    char seg[96], next[96];
#define SEG(buf, k)                                                                   \
    do {                                                                              \
        char tr[32];                                                                  \
        t_run(tr, sizeof tr, pp_layout_vstage_layers(w, l, (k) % p, (k) / p), compact); \
        snprintf(buf, sizeof buf, "%s%s", (k) == 0 ? "E" : "", tr);                   \
        if ((k) == N - 1) {                                                           \
            for (int64_t q = 0; q < mtp; q++) pp_strcatf(buf, sizeof buf, "m");       \
            pp_strcatf(buf, sizeof buf, "L");                                         \
        }                                                                             \
    } while (0)
    bool sep = false; /* a '|' is due before the next segment */
    for (int64_t k = 0; k < N;) {
        SEG(seg, k);
        /* a run of equal segments each followed by '|' */
        int64_t run = 1;
        while (compact && k + run < N - 1) {
            SEG(next, k + run);
            if (strcmp(next, seg)) break;
            run++;
        }
        if (sep) pp_strcatf(out, n, "|");
        if (run > 1) {
            pp_strcatf(out, n, "(%s|)*%lld", seg, (long long)run);
            sep = false;
        } else {
            pp_strcatf(out, n, "%s", seg);
            sep = true;
        }
        k += run;
        if (strlen(out) + 1 >= n) return LBAD(0, "the pipeline layout of %lld stages is too long to write", (long long)N);
    }
#undef SEG
    return PP_OK;
}

/* ------------------------------------------------------------------ Megatron's flags */

/* The first or the last stage's layers (0: not given) taken from the rest and its stage from the
 * middle ones, with Megatron's checks on it. */
static pp_status end_stage(int64_t layers, const char *flag, int64_t v, int64_t *rest, int64_t *mid, pp_error *err)
{
    if (!layers) return PP_OK;
    if (layers < 1) return LBAD(0, "%s must be at least 1", flag);
    if (layers % v)
        return LBAD(0, "%s %lld is not divisible by the %lld virtual stages", flag, (long long)layers, (long long)v);
    *rest -= layers;
    (*mid)--;
    return PP_OK;
}

pp_status pp_pipeline_split_megatron(int64_t layers, int64_t pp, int64_t vpp, const pp_pipeline_flags *f,
                                     const char *first_flag, const char *last_flag, int *counts, pp_error *err)
{
    int64_t v = vpp > 1 ? vpp : 1, L = layers;
    bool acc = f->account_embedding || f->account_loss;
    if (pp < 2) return LBAD(0, "%s and %s need --pp of at least 2", first_flag, last_flag);
    if ((f->first || f->last) && acc)
        return LBAD(0, "%s / %s and --account-for-embedding/loss-in-pipeline-split exclude each other "
                       "(Megatron's transformer_config.py)", first_flag, last_flag);
    int64_t rank[PP_MAX_STAGES];
    if (pp > PP_MAX_STAGES) return LBAD(0, "--pp %lld: at most %d stages", (long long)pp, PP_MAX_STAGES);
    if (acc) {
        int64_t num = L + (f->account_embedding ? 1 : 0) + (f->account_loss ? 1 : 0);
        if (num % pp)
            return LBAD(0, "--account-for-embedding/loss-in-pipeline-split: %lld layers%s%s do not divide over %lld "
                           "pipeline stages", (long long)L, f->account_embedding ? " + embedding" : "",
                        f->account_loss ? " + loss" : "", (long long)pp);
        if ((num / pp) % v)
            return LBAD(0, "--account-for-embedding/loss-in-pipeline-split: %lld layers per pipeline stage do not "
                           "divide over %lld virtual stages", (long long)(num / pp), (long long)v);
        for (int64_t k = 0; k < pp * v; k++) counts[k] = (int)(num / pp / v);
        if (f->account_embedding) counts[0]--;
        if (f->account_loss) counts[pp * v - 1]--;
        if (counts[0] < 0 || counts[pp * v - 1] < 0)
            return LBAD(0, "--account-for-embedding/loss-in-pipeline-split: not enough layers in the first or last "
                           "virtual stage");
        return PP_OK;
    }
    int64_t rest = L, mid = pp;
    pp_status st;
    if ((st = end_stage(f->first, first_flag, v, &rest, &mid, err)) ||
        (st = end_stage(f->last, last_flag, v, &rest, &mid, err)))
        return st;
    if (rest < 0 || (rest > 0) != (mid > 0) || (mid > 0 && rest % mid) || (mid > 0 && (rest / mid) % v) ||
        (mid > 0 && rest / mid < 1))
        return LBAD(0, "%s%s%s: the other %lld layers do not split evenly over the %lld middle pipeline stages%s",
                    f->first ? first_flag : "", f->first && f->last ? " and " : "", f->last ? last_flag : "",
                    (long long)rest, (long long)mid, v > 1 ? " (a multiple of the virtual stages each)" : "");
    for (int64_t i = 0; i < pp; i++)
        rank[i] = i == 0 && f->first ? f->first : i == pp - 1 && f->last ? f->last : mid > 0 ? rest / mid : 0;
    for (int64_t k = 0; k < pp * v; k++) counts[k] = (int)(rank[k % pp] / v);
    return PP_OK;
}

bool pp_pipeline_split_flags(const pp_work *w, const pp_layout *l, pp_pipeline_flags *out)
{
    int64_t p = l->pp, v = l->vpp > 1 ? l->vpp : 1, L = w->model.layers;
    if (p < 2 || p > PP_MAX_STAGES || p * v > PP_MAX_VSTAGES) return false;
    int64_t n0 = pp_layout_stage_layers(w, l, 0), nl = pp_layout_stage_layers(w, l, p - 1);
    const pp_pipeline_flags cand[] = {
        {n0, 0, false, false}, {0, nl, false, false}, {n0, nl, false, false},
        {0, 0, true, false},   {0, 0, false, true},   {0, 0, true, true},
    };
    int *got = malloc((size_t)(p * v) * sizeof *got);
    if (!got) return false;
    bool found = false;
    for (size_t c = 0; c < sizeof cand / sizeof cand[0] && !found; c++) {
        pp_error e;
        if (pp_pipeline_split_megatron(L, p, v, &cand[c], "first", "last", got, &e) != PP_OK) continue;
        bool same = true;
        for (int64_t k = 0; k < p * v && same; k++) same = got[k] == pp_layout_vstage_layers(w, l, k % p, k / p);
        if (same) {
            *out = cand[c];
            found = true;
        }
    }
    free(got);
    return found;
}
