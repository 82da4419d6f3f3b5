/* The layer pattern of a model (pp_model, pp.h) and the model's own dropout: which decoder layers
 * are MoE and which attend within a window, the kinds they make, how many of each a range of
 * layers holds, and the dropout a model file implies. Every room reads these, the layout rules of
 * common.c included, so they stand in the root beside the type they read; the parameter table and
 * the range checks of a model are model/model.c's. */
#include "pp.h"

const char *const pp_layer_kind_names[PP_LAYER_KINDS] = {"dense", "moe", "dense+window", "moe+window"};


/* ------------------------------------------------------------------ layer kinds */

bool pp_model_layer_is_moe(const pp_model *m, int64_t i)
{
    if (m->experts <= 1 || i < m->moe_first_dense) return false;
    int64_t every = m->moe_every > 0 ? m->moe_every : 1;
    if (i % every != m->moe_phase % every) return false;
    for (int64_t k = 0; k < m->n_dense_layers && k < PP_MODEL_MAX_LIST; k++)
        if (m->dense_layers[k] == i) return false;
    return true;
}

bool pp_model_layer_is_window(const pp_model *m, int64_t i)
{
    if (m->window <= 0) return false;
    if (m->window_full_every <= 0) return true;
    return i % m->window_full_every != m->window_full_phase % m->window_full_every;
}

int pp_model_layer_kind(const pp_model *m, int64_t i)
{
    return (pp_model_layer_is_moe(m, i) ? PP_LAYER_MOE : 0) |
           (pp_model_layer_is_window(m, i) ? PP_LAYER_WINDOW : 0);
}

/* Layers of each kind among [a, b), all of them at or past moe_first_dense or all before it:
 * the pattern is periodic there with period P = lcm(moe_every, window_full_every), so whole
 * periods are counted at once and at most P - 1 layers one by one. */
static void layer_counts_periodic(const pp_model *m, int64_t a, int64_t b, int64_t out[PP_LAYER_KINDS])
{
    int64_t e = m->experts > 1 && a >= m->moe_first_dense ? (m->moe_every > 0 ? m->moe_every : 1) : 1;
    int64_t wf = m->window > 0 && m->window_full_every > 0 ? m->window_full_every : 1;
    int64_t g = e, r = wf;
    while (r) { int64_t t = g % r; g = r; r = t; }
    int64_t P = e / g * wf;
    int64_t n = b - a;
    if (n <= 0) return;
    if (P == 1) { /* one kind throughout (DeepSeek's MoE layers after the dense ones) */
        out[pp_model_layer_kind(m, a)] += n;
        return;
    }
    int64_t full = n / P;
    if (full > 0) {
        int64_t per[PP_LAYER_KINDS] = {0};
        for (int64_t i = a; i < a + P; i++) per[pp_model_layer_kind(m, i)]++;
        for (int k = 0; k < PP_LAYER_KINDS; k++) out[k] += full * per[k];
    }
    for (int64_t i = a + full * P; i < b; i++) out[pp_model_layer_kind(m, i)]++;
}

void pp_model_layer_counts(const pp_model *m, int64_t first, int64_t n, int64_t out[PP_LAYER_KINDS])
{
    for (int k = 0; k < PP_LAYER_KINDS; k++) out[k] = 0;
    if (n <= 0) return;
    /* Dense models without windows (the common case, and the search's hot path): one kind. */
    if (m->experts <= 1 && m->window <= 0) {
        out[0] = n;
        return;
    }
    int64_t end = first + n;
    if (m->n_dense_layers > 0) {
        /* An explicit list of dense layers: one by one. */
        for (int64_t i = first; i < end; i++) out[pp_model_layer_kind(m, i)]++;
        return;
    }
    /* The dense-first layers, then the periodic rest (the search prices every stage of every
     * candidate this way: O(period), not O(layers)). */
    int64_t split = m->experts > 1 ? m->moe_first_dense : 0;
    if (split < first) split = first;
    if (split > end) split = end;
    layer_counts_periodic(m, first, split, out);
    layer_counts_periodic(m, split, end, out);
}

bool pp_model_one_kind_from(const pp_model *m, int64_t first)
{
    if (m->window > 0 && m->window_full_every > 0) return false;
    if (m->experts <= 1) return true;
    return m->moe_every <= 1 && m->n_dense_layers == 0 && first >= m->moe_first_dense;
}

int pp_model_mtp_kind(const pp_model *m)
{
    return m->layers > 0 && pp_model_layer_is_moe(m, m->layers - 1) ? PP_LAYER_MOE : 0;
}

int64_t pp_model_moe_layers(const pp_model *m)
{
    int64_t cnt[PP_LAYER_KINDS];
    pp_model_layer_counts(m, 0, m->layers, cnt);
    return cnt[PP_LAYER_MOE] + cnt[PP_LAYER_MOE | PP_LAYER_WINDOW];
}

void pp_model_dropout(const pp_model *m, double *attention, double *hidden)
{
    if (m->dropout_set) {
        *attention = m->attention_dropout;
        *hidden = m->hidden_dropout;
        return;
    }
    /* A file that says nothing: Megatron's defaults (--attention-dropout / --hidden-dropout 0.1)
     * were kept by the GPT-2/3 and BLOOM lineage, which has linear biases; the Llama lineage
     * trains without dropout (its HF configs say attention_dropout 0.0). */
    *attention = *hidden = m->bias ? 0.1 : 0.0;
}
