/* The hardware profile's schema (docs/cli.md "Hardware profile"): its sections, and the keys of each
 * record, listed once. The probes' writer (probes/report.c) writes from these lists, the planner's
 * reader (planner/model/profile.c) makes its key tables from them, and `parplan calibrate` names
 * the calibration's factors from them (calibrate.c pp_cal_names).
 *
 * X-macros: a user defines a macro X of the list's columns and expands the list with it. The file
 * has macros and enumerations only, no types and no includes: it compiles as the probes' C (and
 * CUDA C++) and as the planner's C.
 *
 * Record keys (PP_PROFILE_REC_<section>, PP_PROFILE_MAP_bandwidth):
 *   X(key, type, lo, hi, use, sub, rd, wr, when)
 *   key   the YAML key
 *   type  INT, NUM, STR, BOOL; ENUM: one of the names of PP_PROFILE_ENUM_<sub>; MAP: a mapping of
 *         part times, one number per name of PP_PROFILE_PARTS_<sub> (each 0 to PP_PROFILE_PART_MS_MAX)
 *   lo hi the reader's bounds of an INT or NUM (a value outside them is refused)
 *   use   REQ: a record without it is refused; OPT: it may be absent
 *   rd    where the reader keeps it: a member of profile.c's record of the section (its public
 *         record is `r`; what is read and not kept goes to informational members)
 *   wr    what the writer writes: an expression of the probe's row `r` (probes/probe.h; for
 *         bandwidth, of the writer's figures copy_gbs and mul_gbs)
 *   when  whether the writer writes it (an expression of `r`; 0: read only, written by no probe)
 * Calibration keys (PP_PROFILE_CAL_FACTORS, PP_PROFILE_MAP_calibration): X(key, type, lo, hi, use, rd)
 *   with type USEC too (microseconds in the file, seconds in rd); rd a member of pp_calibration.
 *   Written by `parplan calibrate` (src/cmd_calibrate.c), not by the probes. */
#ifndef PP_PROFILE_SCHEMA_H
#define PP_PROFILE_SCHEMA_H

/* Helpers: a list's names as strings, a list's length. */
#define PP_PROFILE_STR(name) #name,
#define PP_PROFILE_KEY_STR(key, ...) #key,
#define PP_PROFILE_ONE(...) +1
#define PP_PROFILE_COUNT(LIST) (0 LIST(PP_PROFILE_ONE))
#define PP_PROFILE_REQUIRED_REQ 1
#define PP_PROFILE_REQUIRED_OPT 0

/* ------------------------------------------------------------------ the sections */

/* X(key, kind, use): kind STR (a string), LIST (a sequence of records: PP_PROFILE_REC_<key>), MAP
 * (a mapping: PP_PROFILE_MAP_<key>), ANY (free-form: where and how the profile was measured; the
 * contract welcomes more keys there). */
#define PP_PROFILE_SECTIONS(X)                                                                          \
    X(gpu, STR, REQ)                                                                                   \
    X(measured, STR, REQ)                                                                              \
    X(gemm, LIST, OPT)                                                                                 \
    X(bandwidth, MAP, OPT)                                                                             \
    X(attention, LIST, OPT)                                                                            \
    X(layer, LIST, OPT)                                                                                \
    X(nccl, LIST, OPT)                                                                                 \
    X(calibration, MAP, OPT)                                                                           \
    X(oom, LIST, OPT)                                                                                  \
    X(optimizer, LIST, OPT)                                                                            \
    X(probe_calibration, MAP, OPT) /* the keys of calibration */                                       \
    X(moe, LIST, OPT)                                                                                  \
    X(mla, LIST, OPT)                                                                                  \
    X(env, ANY, OPT)                                                                                   \
    X(notes, ANY, OPT)                                                                                 \
    X(host, ANY, OPT)                                                                                  \
    X(driver, ANY, OPT)                                                                                \
    X(cuda, ANY, OPT)                                                                                  \
    X(tool, ANY, OPT)                                                                                  \
    X(version, ANY, OPT)                                                                               \
    X(gpus, ANY, OPT)                                                                                  \
    X(command, ANY, OPT)

/* PP_PROFILE_SECTION_<key>: a section's index in the list */
#define PP_PROFILE_SECTION_ENUM(key, ...) PP_PROFILE_SECTION_##key,
enum { PP_PROFILE_SECTIONS(PP_PROFILE_SECTION_ENUM) PP_PROFILE_SECTION_COUNT };
/* "gemm": a section's key, refused at compile time when the schema has no such section */
#define PP_PROFILE_SECTION_KEY(key) ((void)PP_PROFILE_SECTION_##key, #key)

/* ------------------------------------------------------------------ names */

#define PP_PROFILE_ENUM_dtype(X) X(bf16) X(fp16) X(tf32) X(fp32) X(fp8)        /* the gemm probe's types */
#define PP_PROFILE_ENUM_attn_impl(X) X(unfused) X(flash)                       /* index: flash */
#define PP_PROFILE_ENUM_coll(X) X(all_reduce) X(all_gather) X(reduce_scatter) X(sendrecv) X(all_to_all)
#define PP_PROFILE_ENUM_moe_impl(X) X(loop) X(grouped)                         /* index: grouped */
#define PP_PROFILE_ENUM_router(X) X(softmax) X(sigmoid)                        /* index: sigmoid */
/* the probes, in the order parplan-probe runs them (an `oom` record's `probe`) */
#define PP_PROFILE_ENUM_probe(X) X(gemm) X(bandwidth) X(attention) X(layer) X(optimizer) X(moe) X(mla) X(nccl)

/* The parts of an MoE MLP layer (Megatron-Core's order) and of an MLA block, timed apart. */
#define PP_PROFILE_PARTS_moe(X) X(router) X(permute) X(fc1) X(act) X(fc2) X(unpermute) X(shared)
#define PP_PROFILE_PARTS_mla(X) X(q) X(kv) X(rope) X(attn) X(proj)
#define PP_PROFILE_PART_ENUM(name) PP_PROFILE_PART_##name,
enum { PP_PROFILE_PARTS_moe(PP_PROFILE_PART_ENUM) PP_PROFILE_MOE_PARTS };
enum { PP_PROFILE_PARTS_mla(PP_PROFILE_PART_ENUM) PP_PROFILE_MLA_PARTS };
#define PP_PROFILE_PART_MS_MAX 86400e3 /* a day */

/* ------------------------------------------------------------------ records */

/* gemm: D[m,n] = X[m,k] W[n,k]^T, TFLOP/s = 2mnk / time; op: square or the transformer GEMM it is
 * (label: the same, older profiles), tp: the TP size of that layer */
#define PP_PROFILE_REC_gemm(X)                                                                          \
    X(dtype, ENUM, 0, 0, REQ, dtype, dtype, r->dtype, 1)                                               \
    X(m, INT, 1, 1e9, REQ, _, r.m, r->m, 1)                                                            \
    X(n, INT, 1, 1e9, REQ, _, r.n, r->n, 1)                                                            \
    X(k, INT, 1, 1e9, REQ, _, r.k, r->k, 1)                                                            \
    X(tflops, NUM, 0, 1e6, REQ, _, r.tflops, r->tflops, 1)                                             \
    X(us, NUM, 0, 1e12, OPT, _, scratch, r->us, 1)                                                     \
    X(op, STR, 0, 0, OPT, _, label, r->op, 1)                                                          \
    X(tp, INT, 1, 1e6, OPT, _, tp, r->tp, r->tp)                                                       \
    X(label, STR, 0, 0, OPT, _, label, "", 0)                                                          \
    X(ms, NUM, 0, 1e12, OPT, _, scratch, 0, 0)

/* attention (bf16): TFLOP/s count the full 4 b s^2 heads head_dim (x3 forward + backward) */
#define PP_PROFILE_REC_attention(X)                                                                     \
    X(impl, ENUM, 0, 0, REQ, attn_impl, impl, r->impl, 1)                                              \
    X(b, INT, 1, 1e9, REQ, _, r.b, r->b, 1)                                                            \
    X(s, INT, 1, 1e9, REQ, _, r.s, r->s, 1)                                                            \
    X(heads, INT, 1, 1e9, REQ, _, r.heads, r->heads, 1)                                                \
    X(head_dim, INT, 1, 1e9, REQ, _, r.head_dim, r->head_dim, 1)                                       \
    X(fwd_tflops, NUM, 0, 1e6, REQ, _, r.fwd_tflops, r->fwd_tflops, 1)                                 \
    X(fwdbwd_tflops, NUM, 0, 1e6, REQ, _, r.fwdbwd_tflops, r->fwdbwd_tflops, 1)                        \
    X(fwd_ms, NUM, 0, 1e12, OPT, _, scratch, r->fwd_ms, 1)                                             \
    X(fwdbwd_ms, NUM, 0, 1e12, OPT, _, scratch, r->fwdbwd_ms, 1)                                       \
    X(causal, BOOL, 0, 0, OPT, _, causal, r->causal, 1)                                                \
    X(dtype, STR, 0, 0, OPT, _, dtype, "bf16", 1)

/* layer: one transformer block of a TP shard; kv_heads only for grouped-query attention (absent:
 * = heads); activation none: the layer without its MLP */
#define PP_PROFILE_REC_layer(X)                                                                         \
    X(hidden, INT, 1, 1e9, REQ, _, r.hidden, r->hidden, 1)                                             \
    X(heads, INT, 1, 1e9, REQ, _, r.heads, r->heads, 1)                                                \
    X(kv_heads, INT, 1, 1e9, OPT, _, r.kv_heads, r->kv_heads, r->kv_heads && r->kv_heads != r->heads)   \
    X(seq, INT, 1, 1e9, REQ, _, r.seq, r->seq, 1)                                                      \
    X(mbs, INT, 1, 1e9, REQ, _, r.mbs, r->mbs, 1)                                                      \
    X(tp, INT, 1, 1e6, REQ, _, r.tp, r->tp, 1)                                                         \
    X(fwd_ms, NUM, 0, 1e9, REQ, _, r.fwd_ms, r->fwd_ms, 1)                                             \
    X(fwdbwd_ms, NUM, 0, 1e9, REQ, _, r.fwdbwd_ms, r->fwdbwd_ms, 1)                                    \
    X(fwd_tflops, NUM, 0, 1e6, OPT, _, scratch, r->fwd_tflops, 1)                                      \
    X(fwdbwd_tflops, NUM, 0, 1e6, OPT, _, scratch, r->fwdbwd_tflops, 1)                                \
    X(activation, STR, 0, 0, OPT, _, act, r->act, 1)                                                   \
    X(dtype, STR, 0, 0, OPT, _, dtype, "bf16", 1)

/* nccl: bytes as nccl-tests count them; busbw = algbw x nccl-tests' factor */
#define PP_PROFILE_REC_nccl(X)                                                                          \
    X(op, ENUM, 0, 0, REQ, coll, op, r->op, 1)                                                         \
    X(ranks, INT, 1, 1e7, REQ, _, r.ranks, r->ranks, 1)                                                \
    X(bytes, NUM, 1, 1e15, REQ, _, r.bytes, r->bytes, 1)                                               \
    X(busbw_gbs, NUM, 0, 1e6, REQ, _, r.busbw_gbs, r->busbw_gbs, 1)                                    \
    X(algbw_gbs, NUM, 0, 1e6, OPT, _, scratch, r->algbw_gbs, 1)                                        \
    X(us, NUM, 0, 1e12, OPT, _, scratch, r->us, 1)

/* optimizer: one fused AdamW step; up to 1e15 parameters (the planner's range), 1..1000 bytes per
 * parameter (30 in practice; fp64 states with a master copy stay far below 1000), a step of 1 ns to
 * a day: a zero time is no measurement */
#define PP_PROFILE_REC_optimizer(X)                                                                     \
    X(params, NUM, 1, 1e15, REQ, _, r.params, r->params, 1)                                            \
    X(bytes_per_param, NUM, 1, 1000, REQ, _, r.bytes_per_param, r->bytes_per_param, 1)                 \
    X(ms, NUM, 1e-6, 86400e3, REQ, _, r.ms, r->ms, 1)                                                  \
    X(gbs, NUM, 1e-6, 1e6, REQ, _, r.gbs, r->gbs, 1)

/* moe and mla: one model layer per record. Shapes are integers from 1 (shared_ffn and q_lora_rank:
 * 0 means none); times from 1 ns to a day. The cross-field rules (topk <= experts, ep dividing
 * experts, tp dividing heads, an even rope size) are the reader's, checked after reading. */
#define PP_PROFILE_REC_moe(X)                                                                           \
    X(hidden, INT, 1, 1e9, REQ, _, r.hidden, r->hidden, 1)                                             \
    X(experts, INT, 1, 1e6, REQ, _, r.experts, r->experts, 1)                                          \
    X(topk, INT, 1, 1e6, REQ, _, r.topk, r->topk, 1)                                                   \
    X(moe_ffn, INT, 1, 1e9, REQ, _, r.moe_ffn, r->moe_ffn, 1)                                          \
    X(shared_ffn, INT, 0, 1e9, OPT, _, r.shared_ffn, r->shared_ffn, 1)                                 \
    X(tokens, INT, 1, 1e12, REQ, _, r.tokens, r->tokens, 1)                                            \
    X(ep, INT, 1, 1e6, OPT, _, r.ep, r->ep, 1)                                                         \
    X(imbalance, NUM, 1, 1e6, OPT, _, r.imbalance, r->imbalance, 1)                                    \
    X(impl, ENUM, 0, 0, REQ, moe_impl, r.grouped, r->impl, 1)                                          \
    X(backend, STR, 0, 0, OPT, _, backend, r->backend, 1)                                              \
    X(router, ENUM, 0, 0, OPT, router, r.sigmoid, r->router, 1)                                        \
    X(fwd_ms, NUM, 1e-6, 86400e3, REQ, _, r.fwd_ms, r->fwd_ms, 1)                                      \
    X(fwdbwd_ms, NUM, 1e-6, 86400e3, REQ, _, r.fwdbwd_ms, r->fwdbwd_ms, 1)                             \
    X(expert_fwd_tflops, NUM, 0, 1e6, OPT, _, r.expert_fwd_tflops, r->expert_fwd_tflops, 1)            \
    X(expert_fwdbwd_tflops, NUM, 0, 1e6, OPT, _, r.expert_fwdbwd_tflops, r->expert_fwdbwd_tflops, 1)   \
    X(fwd_parts_ms, MAP, 0, 0, OPT, moe, r.fwd_parts_ms, r->part_fwd_ms, 1)                            \
    X(bwd_parts_ms, MAP, 0, 0, OPT, moe, r.bwd_parts_ms, r->part_bwd_ms, 1)                            \
    X(dtype, STR, 0, 0, OPT, _, dtype, "bf16", 1)

#define PP_PROFILE_REC_mla(X)                                                                           \
    X(hidden, INT, 1, 1e9, REQ, _, r.hidden, r->hidden, 1)                                             \
    X(heads, INT, 1, 1e6, REQ, _, r.heads, r->heads, 1)                                                \
    X(q_lora_rank, INT, 0, 1e9, OPT, _, r.q_lora_rank, r->q_lora_rank, 1)                              \
    X(kv_lora_rank, INT, 1, 1e9, REQ, _, r.kv_lora_rank, r->kv_lora_rank, 1)                           \
    X(qk_nope_dim, INT, 1, 1e6, REQ, _, r.qk_nope_dim, r->qk_nope_dim, 1)                              \
    X(qk_rope_dim, INT, 2, 1e6, REQ, _, r.qk_rope_dim, r->qk_rope_dim, 1)                              \
    X(v_head_dim, INT, 1, 1e6, REQ, _, r.v_head_dim, r->v_head_dim, 1)                                 \
    X(seq, INT, 1, 1e9, REQ, _, r.seq, r->seq, 1)                                                      \
    X(mbs, INT, 1, 1e9, REQ, _, r.mbs, r->mbs, 1)                                                      \
    X(tp, INT, 1, 1e6, REQ, _, r.tp, r->tp, 1)                                                         \
    X(attention, ENUM, 0, 0, REQ, attn_impl, r.flash, r->attention, 1)                                 \
    X(fwd_ms, NUM, 1e-6, 86400e3, REQ, _, r.fwd_ms, r->fwd_ms, 1)                                      \
    X(fwdbwd_ms, NUM, 1e-6, 86400e3, REQ, _, r.fwdbwd_ms, r->fwdbwd_ms, 1)                             \
    X(fwd_tflops, NUM, 0, 1e6, OPT, _, r.fwd_tflops, r->fwd_tflops, 1)                                 \
    X(fwdbwd_tflops, NUM, 0, 1e6, OPT, _, r.fwdbwd_tflops, r->fwdbwd_tflops, 1)                        \
    X(fwd_parts_ms, MAP, 0, 0, OPT, mla, r.fwd_parts_ms, r->part_fwd_ms, 1)                            \
    X(bwd_parts_ms, MAP, 0, 0, OPT, mla, r.bwd_parts_ms, r->part_bwd_ms, 1)                            \
    X(dtype, STR, 0, 0, OPT, _, dtype, "bf16", 1)

/* oom: a size that ran out of GPU memory, reported instead of measured (nothing timed in it) */
#define PP_PROFILE_REC_oom(X)                                                                           \
    X(probe, ENUM, 0, 0, REQ, probe, probe, pp_probe_names[r->probe], 1)                               \
    X(what, STR, 0, 0, REQ, _, what, r->what, 1)                                                       \
    X(oom, BOOL, 0, 0, REQ, _, oom, 1, 1)                                                              \
    X(need_bytes, NUM, 0, 1e15, REQ, _, need, r->need_bytes, 1)                                        \
    X(request_bytes, NUM, 0, 1e15, OPT, _, request, r->request_bytes, r->request_bytes > 0)            \
    X(free_bytes, NUM, 0, 1e15, OPT, _, free_b, r->free_bytes, r->free_bytes >= 0)                     \
    X(capped, BOOL, 0, 0, OPT, _, capped, 1, r->capped)

/* bandwidth: GB/s = (bytes read + bytes written) / time of a copy and of a multiply by a scalar */
#define PP_PROFILE_MAP_bandwidth(X)                                                                     \
    X(copy_gbs, NUM, 0, 1e6, REQ, _, p.copy_gbs, copy_gbs, 1)                                          \
    X(mul_gbs, NUM, 0, 1e6, REQ, _, p.mul_gbs, mul_gbs, 1)

/* ------------------------------------------------------------------ calibration */

/* The factors `parplan calibrate` fits, in its order (pp_calibrate.h PP_CAL_*): required when the
 * section is there. Bounds: what a real stack can be (a GEMM at 5%..20x the model's rate,
 * elementwise traffic 1/20..50x). */
#define PP_PROFILE_CAL_FACTORS(X)                                                                       \
    X(gemm_scale, NUM, 0.05, 20, REQ, gemm_scale)                                                      \
    X(elementwise_scale, NUM, 0.05, 50, REQ, elementwise_scale)                                        \
    X(score_bytes, NUM, 0, 1000, REQ, score_bytes)                                                     \
    X(layer_overhead_us, USEC, 0, 1e6, REQ, layer_overhead_s)                                          \
    X(optimizer_scale, NUM, 0.05, 50, REQ, optimizer_scale)                                            \
    X(moe_layer_overhead_us, USEC, 0, 1e6, OPT, moe_layer_overhead_s)                                  \
    X(expert_overhead_us, USEC, 0, 1e6, OPT, expert_overhead_s)

/* calibration and probe_calibration: the factors, then what documents the fit */
#define PP_PROFILE_MAP_calibration(X)                                                                   \
    PP_PROFILE_CAL_FACTORS(X)                                                                          \
    X(runs, INT, 0, 1e9, OPT, runs)                                                                    \
    X(mape_before_pct, NUM, -1, 1e6, OPT, mape_before)                                                 \
    X(mape_after_pct, NUM, -1, 1e6, OPT, mape_after)                                                   \
    X(mape_loo_pct, NUM, -1, 1e6, OPT, mape_loo)                                                       \
    X(stack, STR, 0, 0, OPT, stack)                                                                    \
    X(fitted, STR, 0, 0, OPT, fitted)                                                                  \
    X(logs, ANY, 0, 0, OPT, _)                                                                         \
    X(notes, ANY, 0, 0, OPT, _)

#endif
