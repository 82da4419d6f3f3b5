/* What a framework can run as written (pp_express.h). */
#include "pp_express.h"

#include <math.h>
#include <stdio.h>

#include "pp_memory.h"
#include "pp_time.h"

/* Megatron's block recompute of K layers per model chunk on stage s: the first K of each of the
 * vpp chunks (megatron/core/transformer/transformer_block.py, _checkpointed_forward). */
static int block_layers(int64_t k_chunk, int64_t vpp, int stage_layers)
{
    int64_t r = k_chunk * (vpp > 0 ? vpp : 1);
    return r < stage_layers ? (int)r : stage_layers;
}

bool pp_framework_express(const pp_work *w, pp_layout *l, int *rec, char *note, size_t n)
{
    if (n) note[0] = 0;
    if (w->framework != PP_FW_MEGATRON || !l->stage_layers || !rec || l->recompute != PP_RC_FULL) return false;
    const int64_t vpp = l->vpp > 0 ? l->vpp : 1;
    int max_layers = 0, max_rec = 0;
    bool expressible = false;
    for (int64_t i = 0; i < l->pp; i++) {
        if (l->stage_layers[i] > max_layers) max_layers = l->stage_layers[i];
        if (rec[i] > max_rec) max_rec = rec[i];
    }
    /* already one count K for every stage? */
    for (int64_t k = 0; k * vpp <= max_layers + vpp && !expressible; k++) {
        bool same = true;
        for (int64_t i = 0; i < l->pp && same; i++) same = rec[i] == block_layers(k, vpp, l->stage_layers[i]);
        expressible = same;
    }
    if (expressible) return false;
    int planned[PP_MAX_STAGES];
    for (int64_t i = 0; i < l->pp; i++) planned[i] = rec[i];
    /* every count Megatron can say, priced by the models */
    int64_t best_k = -1, least_k = 0;
    double best_s = INFINITY, least_bytes = INFINITY;
    const double cap = w->gpu.memory_bytes;
    for (int64_t k = 0; (k - 1) * vpp < max_layers; k++) {
        for (int64_t i = 0; i < l->pp; i++) rec[i] = block_layers(k, vpp, l->stage_layers[i]);
        double need = pp_memory_worst_bytes(w, l, NULL);
        pp_time_result t;
        pp_error e = {0};
        if (pp_time_estimate(w, l, &t, &e) != PP_OK) continue;
        if (need <= cap && t.step_time_s < best_s) best_s = t.step_time_s, best_k = k;
        if (need < least_bytes) least_bytes = need, least_k = k;
    }
    int64_t k = best_k >= 0 ? best_k : least_k;
    for (int64_t i = 0; i < l->pp; i++) rec[i] = block_layers(k, vpp, l->stage_layers[i]);
    if (n) {
        char a[256] = "", b[256] = "";
        for (int64_t i = 0; i < l->pp; i++) {
            pp_strcatf(a, sizeof a, "%s%d", i ? "/" : "", planned[i]);
            pp_strcatf(b, sizeof b, "%s%d", i ? "/" : "", rec[i]);
        }
        snprintf(note, n,
                 "Megatron recomputes the same number of layers on every stage (--recompute-num-layers%s): "
                 "the per-stage counts %s became %s (%lld per %s), the fastest such count that fits",
                 vpp > 1 ? ", per model chunk" : "", a, b, (long long)k, vpp > 1 ? "chunk" : "stage");
        if (best_k < 0) pp_strcatf(note, n, " (none fits: the one that needs least memory)");
    }
    return true;
}
