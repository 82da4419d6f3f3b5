/* Remedies: when a layout does not fit, the layouts that do which are nearest to it on the same
 * GPUs (the fewest changed knobs, up to three), ranked by predicted step time; and, where nothing
 * fits on these GPUs, the smallest GPU count at which the search finds a layout. check, estimate
 * and plan read them (run.c), so one question has one answer.
 *
 * The knobs: tensor parallel (with sequence parallelism where the framework runs it), pipeline
 * stages, virtual stages, context parallel, expert parallel, micro-batch, recompute, optimizer
 * sharding (Megatron's distributed optimizer, ZeRO stages), optimizer offload, Megatron's
 * activation offloading (--cpu-offload-layers: a quarter, half or three quarters of the layers),
 * and, only where the caller allows it, a shorter sequence. The data-parallel size follows from the GPUs. */
#ifndef PP_REMEDY_H
#define PP_REMEDY_H

#include "pp.h"

typedef enum {
    PP_KNOB_TP = 0, PP_KNOB_PP, PP_KNOB_VPP, PP_KNOB_CP, PP_KNOB_EP, PP_KNOB_MBS, PP_KNOB_RECOMPUTE,
    PP_KNOB_SHARDING, PP_KNOB_OFFLOAD, PP_KNOB_ACT_OFFLOAD, PP_KNOB_SEQ, PP_KNOB_COUNT
} pp_knob;
/* "tp", "pp", "vpp", "cp", "ep", "mbs", "recompute", "sharding", "offload", "act_offload", "seq" */
extern const char *const pp_knob_names[PP_KNOB_COUNT];

#define PP_REMEDY_MAX 8

typedef struct {
    pp_layout layout;     /* validated, uniform stages; fits */
    int64_t seq;          /* the sequence length it runs (the work's unless PP_KNOB_SEQ changed) */
    int64_t cpu_offload_layers; /* the layers whose activations it offloads (the stack's unless
                                   PP_KNOB_ACT_OFFLOAD changed) */
    unsigned changed;     /* bit (1u << pp_knob) per knob that differs from the layout given */
    int n_changed;
    double need_bytes;    /* peak + reserved of the fullest stage */
    double step_time_s;
} pp_remedy;

typedef struct {
    int max_changes;      /* 1..3 (default 3) */
    int max_out;          /* 1..PP_REMEDY_MAX (default 5) */
    bool allow_seq;       /* a shorter --seq may be one of the changes */
} pp_remedy_opts;
void pp_remedy_opts_init(pp_remedy_opts *o);

/* The nearest fitting layouts to l (which need not fit, nor validate) on w's GPUs, fewest
 * changes first and then fastest; returns how many were written to out (o->max_out at most). */
int pp_remedies_find(const pp_work *w, const pp_layout *l, const pp_remedy_opts *o, pp_remedy *out);

/* The layout flags that state r in full ("--tp 8 --pp 4 --dp 2 --mbs 1 --dist-opt --sp ...", with
 * --seq and --cpu-offload-layers where r changes them),
 * and the changes alone ("--tp 8, --pp 4, --dist-opt"), for the printed remedy. */
void pp_remedy_layout_args(const pp_work *w, const pp_remedy *r, char *buf, size_t n);
/* The same for any layout (no --seq): plan's rows in JSON ("args"). */
void pp_layout_args(const pp_work *w, const pp_layout *l, char *buf, size_t n);
void pp_remedy_changes(const pp_work *w, const pp_remedy *r, char *buf, size_t n);

#endif
