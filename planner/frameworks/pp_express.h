/* What a framework can run as written. A plan is only useful if the launch config can say it:
 * Megatron takes one --recompute-num-layers for every pipeline stage (block method: the first K
 * layers of each stage, or of each model chunk under virtual pipelining), so per-stage recompute
 * counts that differ are turned into the one count that does best, and re-priced. */
#ifndef PP_EXPRESS_H
#define PP_EXPRESS_H

#include <stddef.h>

#include "pp.h"

/* Adjust l (validated; its stage_recompute, when set, must be writable: rec) to what w's
 * framework expresses. Writes one line saying what changed into note (n bytes; "" when nothing
 * did). Returns true when l changed. Megatron: uneven per-stage full-recompute counts become
 * min(K x vpp, layers of the stage) for the K that gives the fastest step that fits (else the
 * least memory), judged by the memory and time models. */
bool pp_framework_express(const pp_work *w, pp_layout *l, int *rec, char *note, size_t n);

#endif
