/* What `plan --probe K` measures of each of the K best candidates, and the step it composes of
 * the measurements (probe_plan.c). Pure: no I/O, no processes, no printing; src/plan_probe.c runs
 * parplan-probe for the calls asked here, reads and writes the cache file, and prints.
 *
 * For each candidate layout:
 *   - its transformer layer, sharded by its TP size, at its micro-batch: forward and
 *     forward+backward on one local GPU (`parplan-probe layer --hidden .. --tp T --mbs B`);
 *   - the collectives of its groups that fit on the local GPUs (TP, DP, the PP pair):
 *     `parplan-probe nccl --gpus N` measures all_reduce / all_gather / reduce_scatter / sendrecv
 *     over a sweep of sizes; the time model then reads the bus bandwidth at the candidate's own
 *     message sizes (the TP all-reduce of s b h, the DP reduction of its gradients, the PP
 *     activations) from those measurements;
 *   - an MoE or MLA layout's layer in parts, as the layout runs it: the attention with its norms and
 *     residual adds (`parplan-probe layer --no-mlp`, or `parplan-probe mla` for latent attention,
 *     at the candidate's TP), the MoE MLP (`parplan-probe moe` at the rank's tokens, local experts,
 *     expert-TP shard, shared experts; looped or grouped as the stack says: pp_probe_moe_shape_of),
 *     and the model's dense layers whole (`layer` at the dense FFN); the parts replace the time
 *     model's figures of the same parts (pp_time_layer_compose); the EP all-to-all and expert-TP
 *     collectives are priced from the nccl probe's rows of their group sizes where they are local;
 *   - the optimizer step (`parplan-probe optimizer`, one sweep of sizes per GPU);
 * then the step is composed by the time model's schedule (pp_time_step: pipeline bubble, overlap
 * of the DP reduction, optimizer) with the measured layer times in place of the modelled ones
 * (pp_time_step_measured_kinds: a figure per layer kind).
 * What cannot be measured here is modelled and listed per candidate: groups larger than the
 * local GPUs or spanning nodes (the profile's / catalog's network figures), the optimizer step,
 * the embedding and output layer, CP layers, the parts of a layer a probe could not run.
 *
 * Use: pp_probe_plan_make for each candidate; pp_probe_session_start; per candidate
 * pp_probe_session_begin, then pp_probe_session_next until false, running each call it asks for
 * and answering with pp_probe_session_absorb (its profile), pp_probe_session_failed (it failed) or
 * out_of_budget = true (not run); then pp_probe_profile_make and pp_probe_compose per candidate. */
#ifndef PP_PROBE_PLAN_H
#define PP_PROBE_PLAN_H

#include "pp.h"
#include "pp_probe_cache.h"
#include "pp_profile.h"
#include "pp_time.h"

/* The parts of a candidate's layers that parplan-probe measures apart: the whole layer at the
 * model's dense MLP (a dense model's layer; an MoE model's dense layers), the layer without its MLP
 * (an MoE layer's attention, norms and residual adds), the MLA block, the MoE MLP. */
enum { PP_PROBE_PART_LAYER = 0, PP_PROBE_PART_ATTN, PP_PROBE_PART_MLA, PP_PROBE_PART_MOE, PP_PROBE_PARTS };

#define PP_PROBE_GROUPS 5        /* TP, DP, the PP pair, the EP all-to-all, expert-TP */
#define PP_PROBE_NOTES 768       /* the "; "-separated list of what is modelled */
#define PP_PROBE_KEY 192         /* a cache key (pp_probe_cache_entry.key) */

/* What plan --probe measures of one layout. */
typedef struct {
    int64_t tp, mbs;                  /* the layout's (calls measure candidates of one mbs together) */
    bool offloaded;                   /* the optimizer runs off the GPU: its step is not measured */
    int n_groups;
    int groups[PP_PROBE_GROUPS];      /* collective group sizes to measure (nccl --gpus N), distinct */
    bool need[PP_PROBE_PARTS];        /* the parts to measure, under these cache keys */
    char key[PP_PROBE_PARTS][PP_PROBE_KEY];
    pp_probe_moe_shape moe;           /* need[PP_PROBE_PART_MOE]: the moe probe's shape */
    pp_probe_mla_shape mla;           /* need[PP_PROBE_PART_MLA]: the mla probe's shape */
    int kind_main;                    /* the layer kind the parts compose (that of the last layer) */
    int kind_dense;                   /* an MoE model's dense layers of the same attention span; -1: none */
    char modelled[PP_PROBE_NOTES];    /* what stays modelled whatever the probes answer */
} pp_probe_plan;

/* The plan of layout l with local_gpus GPUs on this machine. */
void pp_probe_plan_make(const pp_work *w, const pp_layout *l, int local_gpus, pp_probe_plan *p);

/* What was measured of one candidate and what its step is composed of. */
typedef struct {
    bool probed;              /* the layer was measured (source "probe") */
    bool cached;              /* every measurement came from the cache (set by the caller) */
    double layer_fwd_ms, layer_fwdbwd_ms; /* the main layer kind's (MoE, MLA: composed of its parts) */
    /* MoE and MLA layouts: the parts measured apart (0: not measured), composed by
     * pp_time_layer_compose into layer_* */
    bool composed;
    bool attn_mla;                          /* attn_* is the MLA block (mla probe), else the layer without
                                             * its MLP (layer --no-mlp) */
    double attn_fwd_ms, attn_fwdbwd_ms;
    double moe_fwd_ms, moe_fwdbwd_ms;       /* the MoE MLP (moe probe) */
    double expert_fwd_ms, expert_bwd_ms;    /* of which its routed experts */
    bool moe_shared;                        /* the shared experts ran in it */
    double dense_fwd_ms, dense_fwdbwd_ms;   /* the model's dense layers (layer probe at the dense FFN) */
    double rest_fwd_ms, rest_bwd_ms;        /* the main layer's part left to the model */
    double host_fwd_ms, host_bwd_ms;        /* added for the host's pace of the experts (calibration) */
    char moe_impl[16];                      /* loop | grouped */
    double stack_layer_fwd_ms;  /* added per layer forward / backward for the software stack (the */
    double stack_layer_bwd_ms;  /* profile's calibration; 0 without one) */
    double optimizer_ms;        /* measured optimizer step over the rank's shard (0: modelled) */
    char attention[16];       /* what the probe's layer ran: flash|unfused */
    char device[128];         /* the GPU that measured, as the driver names it */
    char modelled[PP_PROBE_NOTES]; /* the parts that come from the model, "; "-separated */
    double model_step_s;      /* the model's step time before the measurements (set by the caller) */
} pp_probe_outcome;

/* ------------------------------------------------------------------ the calls */

typedef enum { PP_PROBE_CALL_NCCL = 0, PP_PROBE_CALL_OPTIMIZER, PP_PROBE_CALL_LAYER, PP_PROBE_CALL_MLA,
               PP_PROBE_CALL_MOE } pp_probe_call_kind;

#define PP_PROBE_CALL_ARGS 40
#define PP_PROBE_CALL_ARG 176     /* the longest argument: a list of 8 token counts */
#define PP_PROBE_CALL_BATCH 8     /* sizes measured in one call */

/* One parplan-probe call: `parplan-probe <argv[0]> -q -o PROFILE <argv[1..argc-1]>`. */
typedef struct {
    pp_probe_call_kind kind;
    int part;                 /* PP_PROBE_PART_* of a layer, mla or moe call; -1 otherwise */
    int argc;
    char argv[PP_PROBE_CALL_ARGS][PP_PROBE_CALL_ARG]; /* the probe, then its options */
    int n;                    /* layer, mla: the TP sizes; moe: the token counts per rank */
    int64_t values[PP_PROBE_CALL_BATCH];
    char keys[PP_PROBE_CALL_BATCH][PP_PROBE_KEY]; /* the cache keys they fill */
    int64_t mbs, ffn;         /* layer: the micro-batch, the MLP (0: --no-mlp) */
    pp_probe_moe_shape moe;   /* moe (tokens: values[]) */
    pp_probe_mla_shape mla;   /* mla (tp: values[]) */
    int ranks;                /* nccl: GPUs */
    char consequence[192];    /* what its failure means, after "parplan-probe X failed (exit N)" */
} pp_probe_call;

/* The optimizer probe's sizes in parameters: a candidate's step over its shard of the parameters
 * is read from them (pp_profile_optimizer_s: interpolated, the rate of the largest beyond it). */
#define PP_PROBE_OPTIMIZER_SWEEP "10000000,100000000,1000000000"

/* ------------------------------------------------------------------ the session */

#define PP_PROBE_FAILED 64

/* The state of one plan --probe run over its candidates. */
typedef struct {
    const pp_work *w;
    const pp_probe_plan *plans;   /* the candidates' plans, best first */
    int n;
    char gpu[128];                /* the cache's GPU key: the device once a probe named it */
    bool device_known;
    bool out_of_budget;           /* set by the caller: --probe-budget is spent, nothing more runs */
    bool opt_failed;              /* the optimizer probe failed: not asked again */
    char failed[PP_PROBE_FAILED][PP_PROBE_KEY]; /* part keys whose probe failed: not asked again */
    bool failed_oom[PP_PROBE_FAILED];           /* ... because the shape ran out of GPU memory there */
    int n_failed;
    /* the candidate under way */
    int k, stage, i;
    bool pending;                 /* the part call last asked for is not taken in yet */
    pp_probe_outcome *out;
    bool got[PP_PROBE_PARTS], got_experts;
    pp_probe_cache_entry ent[PP_PROBE_PARTS], ent_experts; /* copies: later calls grow the cache */
} pp_probe_session;

/* gpu: the planned GPU's name (the cache key until a probe names its device). */
void pp_probe_session_start(pp_probe_session *s, const pp_work *w, const pp_probe_plan *plans, int n,
                            const char *gpu);
/* The device a probe named: the cache's GPU key from the first one on. */
void pp_probe_session_device(pp_probe_session *s, const char *device);
/* Start candidate k (plans[k]): out is cleared and gets the plan's notes. */
void pp_probe_session_begin(pp_probe_session *s, int k, pp_probe_outcome *out);
/* The next call candidate k needs, given what cache holds (true); false when it needs no more:
 * out is then filled with what the cache holds and notes for what it does not. A call asked for
 * is answered before the next one is asked: pp_probe_session_absorb, pp_probe_session_failed, or
 * out_of_budget set (the call was not run). Each call measures the part of candidate k with those
 * of the later candidates that differ only in tp (layer, MLA) or in tokens per rank (MoE). */
bool pp_probe_session_next(pp_probe_session *s, const pp_probe_cache *cache, pp_probe_call *call);
/* The call failed (exit status not 0): its part keys are not asked again, a collective's size is
 * noted as modelled, the optimizer step is not asked again. */
void pp_probe_session_failed(pp_probe_session *s, const pp_probe_call *call);

/* What a call's profile said beyond its rows: the sizes that ran out of GPU memory, one line each
 * ("the layer at tp 4, mbs 2 ran out of GPU memory on NVIDIA H200 in the probe: ..."). */
typedef struct {
    int n;
    char line[PP_PROBE_CALL_BATCH][256];
} pp_probe_warnings;

/* Put what the call measured into the cache (in memory; keyed by the session's GPU): p is its
 * profile, text the profile's text (NULL when it could not be read: no OOM records are then seen).
 * The sizes that ran out of GPU memory are not asked again and are described in *warn. PP_ERR_INPUT
 * (a key the cache cannot hold) or PP_ERR_NOMEM. */
pp_status pp_probe_session_absorb(pp_probe_session *s, const pp_probe_call *call, const pp_profile *p,
                                  const char *text, pp_probe_cache *cache, pp_probe_warnings *warn, pp_error *err);

/* ------------------------------------------------------------------ composing */

/* The profile the measured steps are composed with: base's (may be NULL) with the cache's
 * collectives of gpu in place of base's records of the same (op, ranks), and only the cache's
 * optimizer steps (base's would describe another run). */
typedef struct {
    pp_profile p;
    pp_prof_nccl *nccl;           /* the arrays p points to that this owns */
    pp_prof_optimizer *optimizer;
} pp_probe_profile;
pp_status pp_probe_profile_make(const pp_probe_cache *cache, const char *gpu, const pp_profile *base,
                                pp_probe_profile *out, pp_error *err);
void pp_probe_profile_free(pp_probe_profile *p); /* accepts NULL */

/* The step of layout l (planned as plan) with what out says was measured in place of the model's
 * figures, on the time model's schedule with profile prof: true with *t filled, and out's composed
 * figures and notes; false when it keeps the model's step (out->probed cleared). */
bool pp_probe_compose(const pp_work *w, const pp_profile *prof, const pp_layout *l, const pp_probe_plan *plan,
                      pp_probe_outcome *out, pp_time_result *t);

#endif
