/* Megatron-LM's pipeline split in parplan's terms (pipeline_layout.c): the one parser of its layout
 * string (--pipeline-model-parallel-layout), its writer, and the split Megatron makes from
 * --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers and
 * --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split. The split
 * itself is a pp_layout's vstage_layers (pp.h): the decoder layers of each virtual stage in
 * Megatron's order (entry v * pp + r is virtual stage v of rank r). */
#ifndef PP_PIPELINE_H
#define PP_PIPELINE_H

#include <stddef.h>

#include "pp.h"

/* Parse Megatron's layout string s for pp pipeline ranks of a model with `layers` decoder layers
 * and `mtp` MTP layers. The grammar is Megatron's (pipeline_parallel_layer_layout.py,
 * parse_str_to_list): commas are cosmetic; "(...)*N" repeats a group (groups do not nest), then
 * "x*N" repeats one character; what is left is E (embedding), t (decoder layer), m (MTP layer), L
 * (loss) and '|' between virtual stages. Megatron's checks (validate_layer_layout): a multiple of
 * pp stages, 'E' first and 'L' last, each once, as many 't' as layers and 'm' as MTP layers, no
 * decoder layer after an MTP layer; parplan prices the MTP layers with the loss, so every 'm' must
 * be in the last virtual stage. Fills counts[0 .. pp x vpp) (at most cap entries) and *vpp.
 * PP_ERR_INPUT names the offending character: err->col is its 1-based column in s (0 for what is
 * about the whole string) and the message says "column N". */
pp_status pp_pipeline_layout_parse(const char *s, int64_t pp, int64_t layers, int64_t mtp, int *counts,
                                   int64_t cap, int64_t *vpp, pp_error *err);

/* The layout string of l's split for w's model, as Megatron reads it back to the same split:
 * 'E' opens virtual stage 0, the MTP layers and 'L' close the last one, "t*N" for N layers.
 * Interleaved layouts write a run of equal virtual stages as one group ("Et|(tt|)*30mL"); a
 * pipeline without interleaving is written stage by stage ("Et*12|t*10L"). PP_ERR_INPUT when it
 * does not fit in n bytes. */
pp_status pp_pipeline_layout_format(const pp_work *w, const pp_layout *l, char *out, size_t n, pp_error *err);

/* The split Megatron makes (the one place parplan computes it): from the first and last stage's
 * layer counts (0: not given), or with the embedding and/or the loss counted as one layer of the
 * first / last virtual stage; each rank's layers spread evenly over its vpp model chunks. Megatron's
 * checks, as its errors say them (transformer_config.py __post_init__, transformer_block.py
 * get_num_layers_to_build, arguments.py): first/last and the account flags exclude each other;
 * first and last at least 1 and divisible by vpp; the middle stages share the rest evenly, each a
 * multiple of vpp; with the account flags, layers + 1 (+ 1) divisible by pp and a rank's share
 * by vpp. counts gets pp x vpp entries. PP_ERR_INPUT names the flag (the option names of `flags`:
 * "--first-stage-layers" or Megatron's "--decoder-first-pipeline-num-layers"). */
typedef struct {
    int64_t first, last;          /* decoder layers of the first / last pipeline stage; 0: not given */
    bool account_embedding;       /* --account-for-embedding-in-pipeline-split */
    bool account_loss;            /* --account-for-loss-in-pipeline-split */
} pp_pipeline_flags;
pp_status pp_pipeline_split_megatron(int64_t layers, int64_t pp, int64_t vpp, const pp_pipeline_flags *f,
                                     const char *first_flag, const char *last_flag, int *counts, pp_error *err);

/* The Megatron flags that give l's split (pp_pipeline_split_megatron reproduces it exactly, the
 * fewest flags first: the first or the last stage, both, then the account flags): true and *out
 * filled, or false when only a layout string says it. */
bool pp_pipeline_split_flags(const pp_work *w, const pp_layout *l, pp_pipeline_flags *out);

#endif
