/* report.c: the probes' results, written as a '#'-headed table, a YAML profile (cli.md
 * "Hardware profile") or JSON. Pure C, no CUDA: unit-tested on machines without a GPU. */
#include "probe.h"

/* the profile's sections and keys, shared with the planner's reader (plain C, macros only) */
#include "../planner/model/pp_profile_schema.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#ifndef PP_PROBE_VERSION
#define PP_PROBE_VERSION "0.1.0"
#endif

const char *const pp_probe_names[PP_PROBE_COUNT] = {PP_PROFILE_ENUM_probe(PP_PROFILE_STR)};
const char *const pp_gemm_dtype_names[PP_GEMM_TYPES] = {PP_PROFILE_ENUM_dtype(PP_PROFILE_STR)};
const char *const pp_moe_part_names[PP_MOE_PARTS] = {PP_PROFILE_PARTS_moe(PP_PROFILE_STR)};
const char *const pp_mla_part_names[PP_MLA_PARTS] = {PP_PROFILE_PARTS_mla(PP_PROFILE_STR)};
_Static_assert(PP_PROFILE_COUNT(PP_PROFILE_ENUM_probe) == PP_PROBE_COUNT, "PP_PROBE_*: the schema's probes");
_Static_assert(PP_PROFILE_COUNT(PP_PROFILE_ENUM_dtype) == PP_GEMM_TYPES, "PP_GEMM_*: the schema's types");
_Static_assert(PP_PROFILE_COUNT(PP_PROFILE_PARTS_moe) == PP_MOE_PARTS && PP_PROFILE_COUNT(PP_PROFILE_PARTS_mla) == PP_MLA_PARTS,
               "PP_MOE_*, PP_MLA_*: the schema's parts");

bool pp_probe_in_all(int probe)
{
    return probe >= 0 && probe < PP_PROBE_COUNT && probe != PP_PROBE_MOE && probe != PP_PROBE_MLA;
}

void pp_report_init(pp_report *r)
{
    memset(r, 0, sizeof *r);
}

static void free_lines(char **v, int n)
{
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

void pp_report_free(pp_report *r)
{
    if (!r) return;
    free(r->gemm);
    free(r->bw);
    free(r->attn);
    free(r->layer);
    free(r->nccl);
    free(r->opt);
    free(r->moe);
    free(r->mla);
    free(r->oom);
    free_lines(r->fail, r->n_fail);
    free_lines(r->note, r->n_note);
    memset(r, 0, sizeof *r);
}

/* Grow *v (elements of size sz) to hold n + 1. */
static int grow(void **v, int n, int *cap, size_t sz)
{
    if (n < *cap) return 0;
    int nc = *cap ? 2 * *cap : 16;
    void *p = realloc(*v, (size_t)nc * sz);
    if (!p) return -1;
    *v = p;
    *cap = nc;
    return 0;
}

static bool pos(double x) { return isfinite(x) && x > 0; }
static bool fin(double x) { return isfinite(x); }

#define ADD_ROW(arr, n, cap, row)                                                          \
    do {                                                                                   \
        if (grow((void **)&(arr), (n), &(cap), sizeof *(arr))) return -1;                  \
        (arr)[(n)++] = *(row);                                                             \
        return 0;                                                                          \
    } while (0)

int pp_report_add_gemm(pp_report *r, const pp_gemm_row *row)
{
    if (!pos(row->us) || !pos(row->tflops) || !fin(row->rel_err) || row->m < 1 || row->n < 1 || row->k < 1)
        return -1;
    ADD_ROW(r->gemm, r->n_gemm, r->cap_gemm, row);
}

int pp_report_add_bw(pp_report *r, const pp_bw_row *row)
{
    if (!pos(row->us) || !pos(row->gbs) || !pos(row->bytes)) return -1;
    ADD_ROW(r->bw, r->n_bw, r->cap_bw, row);
}

int pp_report_add_attn(pp_report *r, const pp_attn_row *row)
{
    if (!pos(row->fwd_ms) || !pos(row->fwdbwd_ms) || !pos(row->fwd_tflops) || !pos(row->fwdbwd_tflops) ||
        !fin(row->rel_err))
        return -1;
    ADD_ROW(r->attn, r->n_attn, r->cap_attn, row);
}

int pp_report_add_layer(pp_report *r, const pp_layer_row *row)
{
    if (!pos(row->fwd_ms) || !pos(row->fwdbwd_ms) || !pos(row->fwd_tflops) || !pos(row->fwdbwd_tflops) ||
        !fin(row->check_err))
        return -1;
    /* kv heads (GQA groups): 0 (multi-head), or 1..heads dividing heads */
    if (row->kv_heads < 0 || (row->kv_heads && (row->kv_heads > row->heads || row->heads % row->kv_heads)))
        return -1;
    ADD_ROW(r->layer, r->n_layer, r->cap_layer, row);
}

int pp_report_add_nccl(pp_report *r, const pp_nccl_row *row)
{
    if (!pos(row->us) || !pos(row->algbw_gbs) || !pos(row->busbw_gbs) || !pos(row->bytes) || row->ranks < 2)
        return -1;
    ADD_ROW(r->nccl, r->n_nccl, r->cap_nccl, row);
}

int pp_report_add_opt(pp_report *r, const pp_opt_row *row)
{
    if (!pos(row->params) || !pos(row->bytes_per_param) || !pos(row->ms) || !pos(row->gbs) || !fin(row->check_err))
        return -1;
    ADD_ROW(r->opt, r->n_opt, r->cap_opt, row);
}

/* part times: finite and not negative (a part that does no work here, the shared expert without
 * one, reads 0) */
static bool parts_ok(const double *ms, int n)
{
    for (int i = 0; i < n; i++)
        if (!fin(ms[i]) || ms[i] < 0) return false;
    return true;
}

int pp_report_add_moe(pp_report *r, const pp_moe_row *row)
{
    if (!pos(row->fwd_ms) || !pos(row->fwdbwd_ms) || !pos(row->expert_fwd_tflops) || !pos(row->expert_fwdbwd_tflops) ||
        !fin(row->check_err) || !parts_ok(row->part_fwd_ms, PP_MOE_PARTS) || !parts_ok(row->part_bwd_ms, PP_MOE_PARTS))
        return -1;
    if (row->hidden < 1 || row->experts < 1 || row->topk < 1 || row->topk > row->experts || row->moe_ffn < 1 ||
        row->shared_ffn < 0 || row->tokens < 1 || row->ep < 1 || row->experts % row->ep || !(row->imbalance >= 1) ||
        !fin(row->imbalance) || !row->impl[0])
        return -1;
    ADD_ROW(r->moe, r->n_moe, r->cap_moe, row);
}

int pp_report_add_mla(pp_report *r, const pp_mla_row *row)
{
    if (!pos(row->fwd_ms) || !pos(row->fwdbwd_ms) || !pos(row->fwd_tflops) || !pos(row->fwdbwd_tflops) ||
        !fin(row->check_err) || !parts_ok(row->part_fwd_ms, PP_MLA_PARTS) || !parts_ok(row->part_bwd_ms, PP_MLA_PARTS))
        return -1;
    if (row->hidden < 1 || row->heads < 1 || row->tp < 1 || row->heads % row->tp || row->q_lora_rank < 0 ||
        row->kv_lora_rank < 1 || row->qk_nope_dim < 0 || row->qk_rope_dim < 2 || row->qk_rope_dim % 2 ||
        row->v_head_dim < 1 || row->seq < 1 || row->mbs < 1 || !row->attention[0])
        return -1;
    ADD_ROW(r->mla, r->n_mla, r->cap_mla, row);
}

int pp_report_add_oom(pp_report *r, const pp_oom_row *row)
{
    if (row->probe < 0 || row->probe >= PP_PROBE_COUNT || !row->what[0] || !(row->need_bytes >= 0) ||
        !isfinite(row->need_bytes) || !isfinite(row->request_bytes) || !isfinite(row->free_bytes))
        return -1;
    ADD_ROW(r->oom, r->n_oom, r->cap_oom, row);
}

static void add_line(char ***v, int *n, int *cap, const char *fmt, va_list ap)
{
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    if (grow((void **)v, *n, cap, sizeof **v)) return;
    char *s = strdup(buf);
    if (s) (*v)[(*n)++] = s;
}

void pp_report_fail(pp_report *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_line(&r->fail, &r->n_fail, &r->cap_fail, fmt, ap);
    va_end(ap);
}

void pp_report_note(pp_report *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_line(&r->note, &r->n_note, &r->cap_note, fmt, ap);
    va_end(ap);
}

double pp_nccl_busbw_factor(const char *op, int64_t ranks)
{
    if (ranks < 1) return 0;
    double n = (double)ranks;
    if (!strcmp(op, "all_reduce")) return 2 * (n - 1) / n;
    if (!strcmp(op, "all_gather") || !strcmp(op, "reduce_scatter") || !strcmp(op, "all_to_all"))
        return (n - 1) / n;
    if (!strcmp(op, "sendrecv")) return 1;
    return 0;
}

double pp_rel_l2(const double *a, const double *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) || !isfinite(b[i])) return INFINITY;
        double d = a[i] - b[i];
        num += d * d;
        den += b[i] * b[i];
    }
    if (den == 0) return num == 0 ? 0 : INFINITY;
    return sqrt(num / den);
}

/* ---------------------------------------------------------------- writers */

static void version_str(int v, int major_div, char *buf, size_t n)
{
    /* cuBLASLt and NCCL encode major*10000 + minor*100 + patch (NCCL >= 2.9, cuBLAS >= 11);
     * cuDNN 9 encodes major*10000 + minor*100 + patch too; CUDA runtime/driver major*1000 + minor*10. */
    if (v <= 0) snprintf(buf, n, "none");
    else if (major_div == 1000) snprintf(buf, n, "%d.%d", v / 1000, (v % 1000) / 10);
    else snprintf(buf, n, "%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
}

/* The driver's and the libraries' versions as text ("none" when absent). */
typedef struct { char drv[16], rt[16], lt[16], dnn[16], nc[16]; } versions;
static void versions_of(const pp_report *r, versions *v)
{
    version_str(r->driver_version, 1000, v->drv, sizeof v->drv);
    version_str(r->runtime_version, 1000, v->rt, sizeof v->rt);
    version_str(r->cublaslt_version, 10000, v->lt, sizeof v->lt);
    version_str(r->cudnn_version, 10000, v->dnn, sizeof v->dnn);
    version_str(r->nccl_version, 10000, v->nc, sizeof v->nc);
}

static void table_header(const pp_report *r, FILE *f)
{
    versions v;
    versions_of(r, &v);
    fprintf(f, "# parplan probe: %s, %d SMs, %.1f GiB, cc %d.%d, %d GPU(s), measured %s\n", r->gpu, r->sms,
            r->memory_bytes / 1073741824.0, r->cc_major, r->cc_minor, r->gpu_count, r->measured);
    fprintf(f, "# driver CUDA %s, runtime %s, cuBLASLt %s, cuDNN %s, NCCL %s\n", v.drv, v.rt, v.lt, v.dnn, v.nc);
}

static void mib(char *buf, size_t n, double bytes)
{
    if (bytes >= 1024.0 * 1048576.0) snprintf(buf, n, "%.1f GiB", bytes / (1024.0 * 1048576.0));
    else snprintf(buf, n, "%.1f MiB", bytes / 1048576.0);
}

/* "  oom   gemm fp32 square m=2048 n=2048 k=2048: OOM at this size (needs >= 48.0 MiB, 20.3 MiB free)" */
static void put_oom_row(const pp_oom_row *o, FILE *f)
{
    char need[32], req[32], fr[32];
    mib(need, sizeof need, o->need_bytes);
    mib(req, sizeof req, o->request_bytes);
    mib(fr, sizeof fr, o->free_bytes);
    fprintf(f, "  oom   %s %s: OOM at this size (needs >= %s", pp_probe_names[o->probe], o->what, need);
    if (o->capped)
        fprintf(f, "; a %s buffer is over PARPLAN_PROBE_MAX_BYTES", req);
    else if (o->free_bytes >= 0)
        fprintf(f, ", %s free on the GPU", fr);
    fputs(")\n", f);
}

double pp_report_fp8_speedup(const pp_report *r, int i)
{
    const pp_gemm_row *g = i >= 0 && i < r->n_gemm ? &r->gemm[i] : NULL;
    if (!g || strcmp(g->dtype, "fp8")) return 0;
    for (int j = 0; j < r->n_gemm; j++) {
        const pp_gemm_row *b = &r->gemm[j];
        if (!strcmp(b->dtype, "bf16") && !strcmp(b->op, g->op) && b->m == g->m && b->n == g->n && b->k == g->k)
            return g->tflops / b->tflops;
    }
    return 0;
}

int pp_report_write_section(const pp_report *r, FILE *f, int probe)
{
    int n_oom = 0;
    for (int i = 0; i < r->n_oom; i++) n_oom += r->oom[i].probe == probe;
    if (probe < 0) {
        table_header(r, f);
    } else if (probe == PP_PROBE_GEMM && (r->n_gemm || n_oom)) {
        fprintf(f, "#\n# gemm: D[m,n] = X[m,k] W[n,k]^T, cuBLASLt, TFLOP/s = 2mnk/time; x_bf16: an fp8 row's "
                   "rate / the bf16 row's of the same shape\n");
        fprintf(f, "# %-5s %-6s %6s %3s %6s %6s %6s %10s %8s %8s %6s\n", "dtype", "op", "hidden", "tp", "m", "n",
                "k", "us", "tflops", "err", "x_bf16");
        for (int i = 0; i < r->n_gemm; i++) {
            const pp_gemm_row *g = &r->gemm[i];
            char ratio[16] = "-";
            double x = pp_report_fp8_speedup(r, i);
            if (x > 0) snprintf(ratio, sizeof ratio, "%.2f", x);
            fprintf(f, "  %-5s %-6s %6lld %3lld %6lld %6lld %6lld %10.1f %8.1f %8.1e %6s\n", g->dtype, g->op,
                    (long long)g->hidden, (long long)g->tp, (long long)g->m, (long long)g->n, (long long)g->k,
                    g->us, g->tflops, g->rel_err, ratio);
        }
    } else if (probe == PP_PROBE_BANDWIDTH && (r->n_bw || n_oom)) {
        fprintf(f, "#\n# bandwidth: GB/s = (bytes read + bytes written) / time\n");
        fprintf(f, "# %-7s %12s %10s %8s\n", "op", "bytes", "us", "gbs");
        for (int i = 0; i < r->n_bw; i++)
            fprintf(f, "  %-7s %12.0f %10.1f %8.1f\n", r->bw[i].op, r->bw[i].bytes, r->bw[i].us, r->bw[i].gbs);
    } else if (probe == PP_PROBE_ATTENTION && (r->n_attn || n_oom)) {
        fprintf(f, "#\n# attention (bf16, causal): TFLOP/s = 4*b*s^2*heads*head_dim (x3 fwd+bwd) / time\n");
        fprintf(f, "# %-7s %-8s %3s %5s %5s %4s %9s %9s %8s %8s %8s\n", "impl", "backend", "b", "s", "heads",
                "dim", "fwd_ms", "fb_ms", "fwd_tf", "fb_tf", "err");
        for (int i = 0; i < r->n_attn; i++) {
            const pp_attn_row *a = &r->attn[i];
            fprintf(f, "  %-7s %-8s %3lld %5lld %5lld %4lld %9.3f %9.3f %8.1f %8.1f %8.1e\n", a->impl, a->backend,
                    (long long)a->b, (long long)a->s, (long long)a->heads, (long long)a->head_dim, a->fwd_ms,
                    a->fwdbwd_ms, a->fwd_tflops, a->fwdbwd_tflops, a->rel_err);
        }
    } else if (probe == PP_PROBE_LAYER && (r->n_layer || n_oom)) {
        fprintf(f, "#\n# layer (bf16, one transformer block of a TP shard): TFLOP/s = model FLOPs / time\n");
        /* kv (GQA groups) last: readers of the table take the first columns in order */
        fprintf(f, "# %6s %5s %5s %4s %3s %6s %-6s %-7s %9s %9s %8s %8s %8s %4s\n", "hidden", "heads", "seq", "mbs",
                "tp", "ffn", "act", "attn", "fwd_ms", "fb_ms", "fwd_tf", "fb_tf", "err", "kv");
        for (int i = 0; i < r->n_layer; i++) {
            const pp_layer_row *l = &r->layer[i];
            fprintf(f, "  %6lld %5lld %5lld %4lld %3lld %6lld %-6s %-7s %9.3f %9.3f %8.1f %8.1f %8.1e %4lld\n",
                    (long long)l->hidden, (long long)l->heads, (long long)l->seq, (long long)l->mbs,
                    (long long)l->tp, (long long)l->ffn, l->act, l->attention, l->fwd_ms, l->fwdbwd_ms,
                    l->fwd_tflops, l->fwdbwd_tflops, l->check_err, (long long)(l->kv_heads ? l->kv_heads : l->heads));
        }
    } else if (probe == PP_PROBE_OPTIMIZER && (r->n_opt || n_oom)) {
        fprintf(f, "#\n# optimizer (one fused AdamW step, fp32 master weights and states + bf16 copy): "
                   "GB/s = bytes_per_param * params / time\n");
        fprintf(f, "# %14s %5s %10s %9s %8s\n", "params", "B/par", "ms", "gbs", "err");
        for (int i = 0; i < r->n_opt; i++) {
            const pp_opt_row *o = &r->opt[i];
            fprintf(f, "  %14.0f %5.0f %10.3f %9.1f %8.1e\n", o->params, o->bytes_per_param, o->ms, o->gbs,
                    o->check_err);
        }
    } else if (probe == PP_PROBE_MOE && (r->n_moe || n_oom)) {
        fprintf(f, "#\n# moe (bf16, one MoE MLP layer on one GPU, Megatron-Core order): rows = token copies the "
                   "local experts get; exp_tf = expert GEMM FLOPs 6*rows*hidden*moe_ffn (x3 fwd+bwd) / their time\n");
        fprintf(f, "# %6s %4s %4s %6s %6s %6s %3s %4s %-7s %-16s %7s %9s %9s %8s %8s %8s\n", "hidden", "exp", "topk",
                "ffn", "shared", "tokens", "ep", "imb", "impl", "backend", "rows", "fwd_ms", "fb_ms", "exp_tf",
                "exp_fbtf", "err");
        for (int i = 0; i < r->n_moe; i++) {
            const pp_moe_row *m = &r->moe[i];
            fprintf(f, "  %6lld %4lld %4lld %6lld %6lld %6lld %3lld %4.1f %-7s %-16s %7lld %9.3f %9.3f %8.1f %8.1f "
                       "%8.1e\n",
                    (long long)m->hidden, (long long)m->experts, (long long)m->topk, (long long)m->moe_ffn,
                    (long long)m->shared_ffn, (long long)m->tokens, (long long)m->ep, m->imbalance, m->impl,
                    m->backend, (long long)m->rows, m->fwd_ms, m->fwdbwd_ms, m->expert_fwd_tflops,
                    m->expert_fwdbwd_tflops, m->check_err);
            fputs("#   fwd/bwd ms:", f);
            for (int k = 0; k < PP_MOE_PARTS; k++)
                fprintf(f, " %s %.3f/%.3f", pp_moe_part_names[k], m->part_fwd_ms[k], m->part_bwd_ms[k]);
            fprintf(f, " (%s router, %lld local experts)\n", m->router, (long long)m->local_experts);
        }
    } else if (probe == PP_PROBE_MLA && (r->n_mla || n_oom)) {
        fprintf(f, "#\n# mla (bf16, multi-head latent attention of a TP shard): TFLOP/s = model FLOPs / time (see "
                   "NOTES.md)\n");
        fprintf(f, "# %6s %5s %5s %5s %4s %4s %4s %5s %4s %3s %-7s %9s %9s %8s %8s %8s\n", "hidden", "heads", "q_lr",
                "kv_lr", "nope", "rope", "v", "seq", "mbs", "tp", "attn", "fwd_ms", "fb_ms", "fwd_tf", "fb_tf", "err");
        for (int i = 0; i < r->n_mla; i++) {
            const pp_mla_row *m = &r->mla[i];
            fprintf(f, "  %6lld %5lld %5lld %5lld %4lld %4lld %4lld %5lld %4lld %3lld %-7s %9.3f %9.3f %8.1f %8.1f "
                       "%8.1e\n",
                    (long long)m->hidden, (long long)m->heads, (long long)m->q_lora_rank, (long long)m->kv_lora_rank,
                    (long long)m->qk_nope_dim, (long long)m->qk_rope_dim, (long long)m->v_head_dim, (long long)m->seq,
                    (long long)m->mbs, (long long)m->tp, m->attention, m->fwd_ms, m->fwdbwd_ms, m->fwd_tflops,
                    m->fwdbwd_tflops, m->check_err);
            fputs("#   fwd/bwd ms:", f);
            for (int k = 0; k < PP_MLA_PARTS; k++)
                fprintf(f, " %s %.3f/%.3f", pp_mla_part_names[k], m->part_fwd_ms[k], m->part_bwd_ms[k]);
            fputc('\n', f);
        }
    } else if (probe == PP_PROBE_NCCL && (r->n_nccl || n_oom)) {
        fprintf(f, "#\n# nccl (fp32 sum): algbw = bytes / time, busbw = algbw * nccl-tests factor\n");
        fprintf(f, "# %-14s %5s %12s %10s %9s %9s\n", "op", "ranks", "bytes", "us", "algbw", "busbw");
        for (int i = 0; i < r->n_nccl; i++) {
            const pp_nccl_row *c = &r->nccl[i];
            fprintf(f, "  %-14s %5lld %12.0f %10.1f %9.1f %9.1f\n", c->op, (long long)c->ranks, c->bytes, c->us,
                    c->algbw_gbs, c->busbw_gbs);
        }
    }
    /* sizes that ran out of GPU memory: one row each, after the measured rows of their probe */
    for (int i = 0; probe >= 0 && probe < PP_PROBE_COUNT && i < r->n_oom; i++)
        if (r->oom[i].probe == probe) put_oom_row(&r->oom[i], f);
    if (probe == PP_PROBE_COUNT) {
        for (int i = 0; i < r->n_note; i++) fprintf(f, "# note: %s\n", r->note[i]);
        for (int i = 0; i < r->n_fail; i++) fprintf(f, "# WRONG: %s\n", r->fail[i]);
    }
    fflush(f);
    return ferror(f) ? -1 : 0;
}

int pp_report_write_table(const pp_report *r, FILE *f)
{
    int rc = pp_report_write_section(r, f, -1);
    for (int k = 0; k <= PP_PROBE_COUNT; k++) rc |= pp_report_write_section(r, f, k);
    return rc;
}

/* Strings we write come from the driver (device name) or from us; escape quotes and controls. */
static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

/* %.6g would print 1e+06 for a byte count; integers up to 2^53 print exactly with %.0f. */
static void put_num(FILE *f, double v)
{
    if (!isfinite(v)) v = 0; /* never reached: rows are checked when added */
    if (v == floor(v) && fabs(v) < 9e15) fprintf(f, "%.0f", v);
    else fprintf(f, "%.6g", v);
}

/* One writer for both formats: YAML flow mappings are JSON objects with bare keys. */
typedef struct {
    FILE *f;
    bool json;
    bool first; /* first member of the current mapping */
} wr;

static void key(wr *w, const char *k)
{
    if (!w->first) fputs(", ", w->f);
    w->first = false;
    if (w->json) fprintf(w->f, "\"%s\": ", k);
    else fprintf(w->f, "%s: ", k);
}
static void kv_num(wr *w, const char *k, double v) { key(w, k); put_num(w->f, v); }
static void kv_int(wr *w, const char *k, int64_t v) { key(w, k); fprintf(w->f, "%lld", (long long)v); }
static void kv_str(wr *w, const char *k, const char *v) { key(w, k); put_str(w->f, v); }
static void kv_bool(wr *w, const char *k, bool v) { key(w, k); fputs(v ? "true" : "false", w->f); }

/* a nested mapping of part times: `name: {router: 0.1, permute: ...}` */
static void write_parts(wr *w, const char *name, const char *const *names, const double *ms, int n)
{
    key(w, name);
    fputc('{', w->f);
    w->first = true;
    for (int i = 0; i < n; i++) kv_num(w, names[i], ms[i]);
    fputc('}', w->f);
    w->first = false;
}

static void list_begin(wr *w, const char *name, int n)
{
    if (w->json) fprintf(w->f, ",\n  \"%s\": [", name);
    else fprintf(w->f, "%s:%s\n", name, n ? "" : " []");
}
static void item_begin(wr *w, int i)
{
    if (w->json) fprintf(w->f, "%s\n    {", i ? "," : "");
    else fputs("  - {", w->f);
    w->first = true;
}
static void item_end(wr *w)
{
    fputs(w->json ? "}" : "}\n", w->f);
}
static void list_end(wr *w, int n)
{
    if (w->json) fputs(n ? "\n  ]" : "]", w->f);
}

static int write_doc(const pp_report *rep, FILE *f, bool json)
{
    wr w = {f, json, true};
    versions v;
    versions_of(rep, &v);
    if (json) {
        fputs("{\n  ", f);
    } else {
        fputs("# parplan hardware profile, written by `parplan probe` (schema: cli.md \"Hardware profile\").\n"
              "# gemm: m tokens x n out-features x k in-features, TFLOP/s = 2mnk / time.\n"
              "# attention/layer TFLOP/s count the full (not causal-halved) 4*b*s^2*h attention FLOPs.\n"
              "# nccl: bytes as nccl-tests count them; busbw = algbw * nccl-tests factor.\n"
              "# optimizer: one fused AdamW step (Megatron-LM mixed precision), gbs = bytes_per_param * params / ms.\n"
              "# moe/mla: one layer of a model on one GPU (probes/NOTES.md), part times are each part's own median.\n",
              f);
    }
    /* top-level scalars, one per line */
    const char *sep = json ? ",\n  " : "\n";
#define TOP_STR(k, v)                                                            \
    do {                                                                         \
        if (json) fprintf(f, "\"%s\": ", k); else fprintf(f, "%s: ", k);         \
        put_str(f, v);                                                           \
    } while (0)
#define TOP_NUM(k, v)                                                            \
    do {                                                                         \
        if (json) fprintf(f, "\"%s\": ", k); else fprintf(f, "%s: ", k);         \
        put_num(f, v);                                                           \
    } while (0)
    TOP_STR(PP_PROFILE_SECTION_KEY(gpu), rep->gpu); fputs(sep, f);
    TOP_STR(PP_PROFILE_SECTION_KEY(measured), rep->measured); fputs(sep, f);
    TOP_NUM(PP_PROFILE_SECTION_KEY(gpus), rep->gpu_count); fputs(sep, f);
    {
        char tool[64];
        snprintf(tool, sizeof tool, "parplan-probe %s", PP_PROBE_VERSION);
        TOP_STR(PP_PROFILE_SECTION_KEY(tool), tool);
    }
    /* the machine and software: free-form under `env` (the loader's records are strict) */
    if (json) fprintf(f, ",\n  \"%s\": ", PP_PROFILE_SECTION_KEY(env));
    else fprintf(f, "\n%s: ", PP_PROFILE_SECTION_KEY(env));
    w.first = true;
    fputc('{', f);
    {
        char cc[16];
        snprintf(cc, sizeof cc, "%d.%d", rep->cc_major, rep->cc_minor);
        kv_int(&w, "sms", rep->sms);
        kv_num(&w, "memory_bytes", rep->memory_bytes);
        kv_num(&w, "l2_bytes", rep->l2_bytes);
        kv_str(&w, "compute_capability", cc);
    }
    kv_str(&w, "driver_cuda", v.drv);
    kv_str(&w, "cuda_runtime", v.rt);
    kv_str(&w, "cublaslt", v.lt);
    kv_str(&w, "cudnn", v.dnn);
    kv_str(&w, "nccl", v.nc);
    fputc('}', f);
    if (!json) fputc('\n', f);
#undef TOP_STR
#undef TOP_NUM

    /* The records: each key of the schema's list for the section, as its `wr` of the row r,
     * where its `when` holds. gemm, attention, layer and nccl are written even when empty. */
#define W_INT(k, v, sub) kv_int(&w, k, v)
#define W_NUM(k, v, sub) kv_num(&w, k, v)
#define W_STR(k, v, sub) kv_str(&w, k, v)
#define W_ENUM(k, v, sub) kv_str(&w, k, v)
#define W_BOOL(k, v, sub) kv_bool(&w, k, v)
#define W_MAP(k, v, sub)                                                                                 \
    write_parts(&w, k, (const char *const[]){PP_PROFILE_PARTS_##sub(PP_PROFILE_STR)}, v,                \
                PP_PROFILE_COUNT(PP_PROFILE_PARTS_##sub))
#define W_KEY(key, type, lo, hi, use, sub, rd, wr, when) \
    if (when) W_##type(#key, wr, sub);
#define W_RECORDS(sec, T, rows, n, always)                                                               \
    if ((n) || (always)) {                                                                               \
        list_begin(&w, PP_PROFILE_SECTION_KEY(sec), n);                                                  \
        for (int i = 0; i < (n); i++) {                                                                  \
            const T *r = &(rows)[i];                                                                     \
            item_begin(&w, i);                                                                           \
            PP_PROFILE_REC_##sec(W_KEY)                                                                  \
            item_end(&w);                                                                                \
        }                                                                                                \
        list_end(&w, n);                                                                                 \
    }
    W_RECORDS(gemm, pp_gemm_row, rep->gemm, rep->n_gemm, true)
    /* bandwidth is a mapping in the schema, written only when measured: the loader requires both
     * figures in a `bandwidth` mapping, so an empty one made the profile of `parplan-probe layer`
     * (plan --probe's call) unreadable */
    if (rep->n_bw) {
        double copy_gbs = 0, mul_gbs = 0;
        for (int i = 0; i < rep->n_bw; i++) {
            if (!strcmp(rep->bw[i].op, "copy")) copy_gbs = rep->bw[i].gbs;
            else if (!strcmp(rep->bw[i].op, "mul")) mul_gbs = rep->bw[i].gbs;
        }
        if (json) fprintf(f, ",\n  \"%s\": {", PP_PROFILE_SECTION_KEY(bandwidth));
        else fprintf(f, "%s: {", PP_PROFILE_SECTION_KEY(bandwidth));
        w.first = true;
        PP_PROFILE_MAP_bandwidth(W_KEY)
        fputs(json ? "}" : "}\n", f);
    }
    W_RECORDS(attention, pp_attn_row, rep->attn, rep->n_attn, true)
    W_RECORDS(layer, pp_layer_row, rep->layer, rep->n_layer, true)
    W_RECORDS(nccl, pp_nccl_row, rep->nccl, rep->n_nccl, true)
    /* only when measured: profiles of the other probes stay as they were */
    W_RECORDS(optimizer, pp_opt_row, rep->opt, rep->n_opt, false)
    W_RECORDS(moe, pp_moe_row, rep->moe, rep->n_moe, false)
    W_RECORDS(mla, pp_mla_row, rep->mla, rep->n_mla, false)
    /* sizes that ran out of GPU memory ("OOM at this size"), only when there are any */
    W_RECORDS(oom, pp_oom_row, rep->oom, rep->n_oom, false)
#undef W_RECORDS
#undef W_KEY
#undef W_MAP
#undef W_BOOL
#undef W_ENUM
#undef W_STR
#undef W_NUM
#undef W_INT

    /* notes (what was skipped, which backends ran) and wrong results (reported, not timed) */
    if (json) fprintf(f, ",\n  \"%s\": [", PP_PROFILE_SECTION_KEY(notes));
    else fprintf(f, "%s: [", PP_PROFILE_SECTION_KEY(notes));
    for (int i = 0; i < rep->n_note + rep->n_fail; i++) {
        char buf[600];
        if (i < rep->n_note) snprintf(buf, sizeof buf, "%s", rep->note[i]);
        else snprintf(buf, sizeof buf, "WRONG, not timed: %s", rep->fail[i - rep->n_note]);
        fputs(i ? ",\n    " : "\n    ", f);
        put_str(f, buf);
    }
    fputs(json ? "]\n}\n" : "]\n", f);
    return ferror(f) ? -1 : 0;
}

int pp_report_write_yaml(const pp_report *r, FILE *f) { return write_doc(r, f, false); }
int pp_report_write_json(const pp_report *r, FILE *f) { return write_doc(r, f, true); }

/* ---------------------------------------------------------------- error state */

static char err_msg[768];
static bool err_oom, err_capped;
static double err_request_bytes, err_free_bytes = -1;

static void error_set(const char *file, int line, const char *fmt, va_list ap)
{
    char buf[640];
    vsnprintf(buf, sizeof buf, fmt, ap);
    const char *base = file ? strrchr(file, '/') : NULL;
    snprintf(err_msg, sizeof err_msg, "%s (%s:%d)", buf, base ? base + 1 : (file ? file : "?"), line);
}

void pp_probe_error(const char *file, int line, const char *fmt, ...)
{
    if (err_msg[0]) return; /* keep the first: later ones are consequences */
    va_list ap;
    va_start(ap, fmt);
    error_set(file, line, fmt, ap);
    va_end(ap);
    err_oom = false;
}

void pp_probe_error_oom(const char *file, int line, double request_bytes, double free_bytes, bool capped,
                        const char *fmt, ...)
{
    if (err_msg[0]) return;
    va_list ap;
    va_start(ap, fmt);
    error_set(file, line, fmt, ap);
    va_end(ap);
    err_oom = true;
    err_capped = capped;
    err_request_bytes = request_bytes;
    err_free_bytes = free_bytes;
}

bool pp_probe_error_is_oom(double *request_bytes, double *free_bytes, bool *capped)
{
    if (!err_msg[0] || !err_oom) return false;
    if (request_bytes) *request_bytes = err_request_bytes;
    if (free_bytes) *free_bytes = err_free_bytes;
    if (capped) *capped = err_capped;
    return true;
}

const char *pp_probe_error_msg(void) { return err_msg; }
void pp_probe_error_clear(void)
{
    err_msg[0] = 0;
    err_oom = err_capped = false;
    err_request_bytes = 0;
    err_free_bytes = -1;
}

/* ---------------------------------------------------------------- faults: parsing and messages */

int pp_parse_bytes(const char *s, double *out)
{
    char *end = NULL;
    if (!s || *s < '0' || *s > '9') return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return -1;
    double mul = 1;
    if (*end) {
        switch (*end) {
        case 'K': case 'k': mul = 1024.0; break;
        case 'M': case 'm': mul = 1048576.0; break;
        case 'G': case 'g': mul = 1073741824.0; break;
        default: return -1;
        }
        end++;
        if (*end && strcmp(end, "iB") && strcmp(end, "B")) return -1;
    }
    double b = (double)v * mul;
    if (!(b >= 1) || b > 1125899906842624.0) return -1; /* 2^50 */
    *out = b;
    return 0;
}

int pp_parse_hang(const char *s, char *op, size_t n)
{
    static const char *const ops[] = {PP_PROFILE_ENUM_coll(PP_PROFILE_STR)};
    if (n) op[0] = 0;
    if (!s || !*s || !strcmp(s, "0")) return 0;
    if (!strcmp(s, "1") || !strcmp(s, "any")) {
        snprintf(op, n, "any");
        return 0;
    }
    if (!strcmp(s, "connect")) {
        snprintf(op, n, "connect");
        return 0;
    }
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(s, ops[i])) {
            snprintf(op, n, "%s", ops[i]);
            return 0;
        }
    return -1;
}

void pp_fmt_gpu_missing(char *buf, size_t n, int index, int count)
{
    snprintf(buf, n, "GPU %d is not present (this machine has %d)", index, count);
}

static void cat(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t n, const char *fmt, ...)
{
    size_t k = strlen(buf);
    if (k + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + k, n - k, fmt, ap);
    va_end(ap);
}

static void gpu_list(char *buf, size_t n, const int *g, int k)
{
    for (int i = 0; i < k; i++) cat(buf, n, "%s%d", i ? "," : "", g[i]);
}

void pp_fmt_timeout(char *buf, size_t n, const char *what, double bytes, double timeout_s, const int *gpus,
                    int n_gpus, const int *pending, int n_pending)
{
    buf[0] = 0;
    if (bytes > 0) cat(buf, n, "collective %s %.0f bytes", what, bytes);
    else cat(buf, n, "%s", what);
    cat(buf, n, " timed out after %g s on GPU%s ", timeout_s, n_gpus == 1 ? "" : "s");
    gpu_list(buf, n, gpus, n_gpus);
    if (n_pending > 0) {
        cat(buf, n, " (not completed on GPU%s ", n_pending == 1 ? "" : "s");
        gpu_list(buf, n, pending, n_pending);
        cat(buf, n, ")");
    }
}

void pp_fmt_gpu_busy(char *buf, size_t n, int index, const char *name, const char *reason, double free_bytes,
                     double total_bytes, double need_bytes, int compute_mode, const pp_gpu_holder *h, int n_h)
{
    buf[0] = 0;
    cat(buf, n, "GPU %d (%s) is busy", index, name && *name ? name : "unknown");
    if (reason && *reason) cat(buf, n, ": %s", reason);
    if (free_bytes >= 0 && total_bytes > 0)
        cat(buf, n, "; %.0f of %.0f MiB free", free_bytes / 1048576.0, total_bytes / 1048576.0);
    if (need_bytes > 0) cat(buf, n, ", the probes need %.0f MiB", need_bytes / 1048576.0);
    if (compute_mode == 3) cat(buf, n, "; compute mode exclusive-process");
    else if (compute_mode == 2) cat(buf, n, "; compute mode prohibited");
    if (n_h > 0) {
        cat(buf, n, "; held by");
        for (int i = 0; i < n_h; i++) {
            cat(buf, n, "%s pid %u", i ? "," : "", h[i].pid);
            if (h[i].name[0]) cat(buf, n, " (%s)", h[i].name);
            if (h[i].used_bytes >= 0) cat(buf, n, " %.0f MiB", h[i].used_bytes / 1048576.0);
        }
    } else if (n_h == 0) {
        cat(buf, n, "; no process holding it is visible from here");
    }
}
