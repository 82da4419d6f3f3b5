/* parplan-probe: the measuring half of `parplan probe` (which execs it). Parses the command line,
 * finds a GPU, runs the probes in order with a progress line each on a terminal, prints the
 * '#'-headed table (or JSON) and writes the profile. Exit 0; 1 on a runtime failure, a wrong result
 * or no GPU (one line on stderr); 2 on bad input. */
#include "probe.h"
#include "probe_config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: parplan-probe [gemm|bandwidth|attention|layer|optimizer|nccl|all|moe|mla]... [options]\n"
            "measures this machine's GPUs into a hardware profile (default: all probes; `all` leaves out moe and\n"
            "mla, which measure a model's layer: name them)\n\n"
            "  -o, --output FILE   write the profile: YAML, or JSON when FILE ends in .json\n"
            "  --json              one JSON document on stdout instead of the table\n"
            "  -q, --quiet         no progress lines\n"
            "  --quick             small sizes and few repeats (tests)\n"
            "  --gpu-index N       the GPU of the single-GPU probes (default 0; also --device N)\n"
            "  --gpus N            GPUs the nccl probe drives in this process (default: all)\n"
            "  --timeout-s S       abort a collective (ncclCommAbort) that has not completed in S seconds and\n"
            "                      report it (default 30, or $PARPLAN_PROBE_TIMEOUT_S)\n"
            "  --mem-limit-gib G   leave only G GiB of each GPU to the probes after their set-up (tests: a size\n"
            "                      that does not fit is reported as 'OOM at this size' and skipped)\n"
            "  --hidden H --heads A [--kv-heads G] [--ffn F] [--seq S] [--mbs B] [--tp 1,2,4,8] [--swiglu]\n"
            "                      a model's shapes instead of the default ones (gemm, attention, layer)\n"
            "  --head-dim D        the layer's head size when heads x D is not the hidden size (Qwen3)\n"
            "  --no-mlp            the layer probe without its MLP (norms, attention, projection, residual: the\n"
            "                      attention part of an MoE layer, whose MLP the moe probe measures)\n"
            "  --attention auto|flash|unfused\n"
            "                      the layer's and mla's attention (default auto: flash where cuDNN builds it, else\n"
            "                      unfused)\n"
            "  --params N[,N...]   the optimizer probe's sizes in parameters (default 1e8,1e9; --quick 1e7,1e8)\n"
            "  --dtype T[,T...]    the gemm probe's types: bf16 fp16 tf32 fp32 fp8 (default all; fp8: e4m3 inputs with\n"
            "                      per-tensor scales, bf16 out, the same shapes as bf16 and the ratio to it)\n"
            "moe: one Mixture-of-Experts MLP layer (Megatron-Core: router, permute, SwiGLU experts, unpermute)\n"
            "  --hidden H --experts E --topk K --moe-ffn F [--shared-ffn S] [--tokens T[,T...]] (default 4096)\n"
            "  --ep N[,N...]       the rank holds E/N experts and gets the T*K token copies balanced routing\n"
            "                      sends it (the local part of an EP layout; no all-to-all)\n"
            "  --imbalance X       the busiest local expert gets X times the mean (default 1: balanced)\n"
            "  --moe-impl loop|grouped|both  one GEMM chain per expert (SequentialMLP) or a grouped GEMM\n"
            "                      (TEGroupedMLP); default both\n"
            "  --router softmax|sigmoid      the router's score function (default softmax; DeepSeek-V3: sigmoid)\n"
            "mla: DeepSeek-V2/V3 multi-head latent attention of a TP shard\n"
            "  --hidden H --heads A [--q-lora-rank R] (0: a plain q projection, the default) [--kv-lora-rank R]\n"
            "  (default 512) [--qk-nope-dim D] (128) [--qk-rope-dim D] (64) [--v-head-dim D] (128)\n"
            "  [--seq S] (4096) [--mbs B] (1) [--tp 1,2,...] (heads split evenly; default those up to 8)\n"
            "  --count             print the number of visible GPUs and exit\n"
            "  --version, -h, --help\n\n"
            "mpirun -np N parplan-probe nccl  spans nodes (one GPU per rank) when built with MPI.\n"
            "Test knobs: PARPLAN_PROBE_MAX_BYTES=N (a buffer above N bytes fails as out of memory),\n"
            "PARPLAN_PROBE_INJECT_HANG=1|OP|connect (the last rank skips one collective launch).\n");
}

static int bad_input(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_input(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("parplan: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (parplan probe --help)\n", stderr);
    va_end(ap);
    return 2;
}

static int parse_i64(const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || !end || end == s || *end || v < lo || v > hi)
        return bad_input("%s expects an integer in %lld..%lld, got '%s'", flag, (long long)lo, (long long)hi, s);
    *out = v;
    return 0;
}

static int parse_num(const char *flag, const char *s, double lo, double hi, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || !end || end == s || *end || !isfinite(v) || v < lo || v > hi)
        return bad_input("%s expects a number in %g..%g, got '%s'", flag, lo, hi, s);
    *out = v;
    return 0;
}

/* The test knobs and defaults read from the environment (documented in --help and NOTES.md). */
static int parse_env(pp_probe_opts *o)
{
    const char *v = getenv("PARPLAN_PROBE_MAX_BYTES");
    if (v && *v && pp_parse_bytes(v, &o->max_alloc_bytes))
        return bad_input("PARPLAN_PROBE_MAX_BYTES expects a byte count such as 4194304 or 4M, got '%s'", v);
    v = getenv("PARPLAN_PROBE_INJECT_HANG");
    if (v && pp_parse_hang(v, o->inject_hang, sizeof o->inject_hang))
        return bad_input("PARPLAN_PROBE_INJECT_HANG expects 1, any, connect or a collective (all_reduce, all_gather, "
                         "reduce_scatter, sendrecv, all_to_all), got '%s'", v);
    v = getenv("PARPLAN_PROBE_TIMEOUT_S");
    if (!o->timeout_s && v && *v && parse_num("PARPLAN_PROBE_TIMEOUT_S", v, 0.1, 86400, &o->timeout_s)) return 2;
    if (!o->timeout_s) o->timeout_s = 30;
    return 0;
}

static int parse_tp_list(const char *s, pp_probe_opts *o)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    o->n_tp = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int64_t v = 0;
        if (o->n_tp >= PP_PROBE_MAX_TP) return bad_input("--tp takes at most %d sizes", PP_PROBE_MAX_TP);
        if (parse_i64("--tp", tok, 1, 4096, &v)) return 2;
        o->tp[o->n_tp++] = v;
    }
    if (!o->n_tp) return bad_input("--tp expects a list such as 1,2,4,8");
    return 0;
}

/* --tokens 4096,8192 and --ep 8,16: up to PP_PROBE_MAX_LIST integers in lo..hi */
static int parse_int_list(const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out, int *n)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n >= PP_PROBE_MAX_LIST) return bad_input("%s takes at most %d values", flag, PP_PROBE_MAX_LIST);
        if (parse_i64(flag, tok, lo, hi, &out[*n])) return 2;
        (*n)++;
    }
    if (!*n) return bad_input("%s expects a list such as %lld,%lld", flag, (long long)lo, (long long)(2 * lo));
    return 0;
}

/* --dtype bf16,fp8: the gemm probe's types */
static int parse_dtypes(const char *s, pp_probe_opts *o)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    o->gemm_dtypes = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int t;
        for (t = 0; t < PP_GEMM_TYPES; t++)
            if (!strcmp(tok, pp_gemm_dtype_names[t])) break;
        if (t == PP_GEMM_TYPES) return bad_input("--dtype '%s': expected bf16, fp16, tf32, fp32 or fp8", tok);
        o->gemm_dtypes |= 1u << t;
    }
    if (!o->gemm_dtypes) return bad_input("--dtype expects a list such as bf16,fp8");
    return 0;
}

/* --params 1e8,1e9: whole numbers of parameters (decimal or exponent form) */
static int parse_params_list(const char *s, pp_probe_opts *o)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    o->n_params = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        double v = 0;
        if (o->n_params >= PP_PROBE_MAX_PARAMS) return bad_input("--params takes at most %d sizes", PP_PROBE_MAX_PARAMS);
        if (parse_num("--params", tok, 1024, 1e12, &v)) return 2;
        if (v != floor(v)) return bad_input("--params expects whole numbers of parameters, got '%s'", tok);
        o->params[o->n_params++] = v;
    }
    if (!o->n_params) return bad_input("--params expects a list such as 100000000,1000000000");
    return 0;
}

/* The moe probe's shape (--hidden given): what the layer needs to hold together. */
static int check_moe(const pp_probe_opts *o)
{
    if (!o->experts || !o->topk || !o->moe_ffn)
        return bad_input("moe --hidden needs --experts, --topk and --moe-ffn");
    if (o->topk > o->experts)
        return bad_input("--topk %lld is more than --experts %lld", (long long)o->topk, (long long)o->experts);
    if (o->hidden % 8 || o->moe_ffn % 8 || o->shared_ffn % 8)
        return bad_input("moe: --hidden, --moe-ffn and --shared-ffn must be multiples of 8 (16-byte rows)");
    for (int i = 0; i < o->n_ep; i++) {
        int64_t ep = o->ep[i], local = o->experts / ep;
        if (o->experts % ep)
            return bad_input("--ep %lld does not divide --experts %lld", (long long)ep, (long long)o->experts);
        /* the hot experts (one per rank) get X times the mean; the others must still get >= 0 */
        if (o->imbalance > (double)local)
            return bad_input("--imbalance %g: with %lld local experts the busiest gets at most %lld times the mean",
                             o->imbalance, (long long)local, (long long)local);
    }
    for (int i = 0; i < o->n_tokens; i++) {
        int64_t t = o->tokens[i];
        if (t * o->topk < o->experts)
            return bad_input("--tokens %lld: %lld token copies leave some of the %lld experts without tokens",
                             (long long)t, (long long)(t * o->topk), (long long)o->experts);
    }
    /* a token's k experts are distinct: the busiest expert gets at most every token once */
    if (o->imbalance * (double)o->topk > (double)o->experts)
        return bad_input("--imbalance %g: the busiest expert would get more than every token (at most %g with "
                         "--topk %lld of %lld experts)", o->imbalance, (double)o->experts / (double)o->topk,
                         (long long)o->topk, (long long)o->experts);
    return 0;
}

/* The mla probe's shape (--hidden given). */
static int check_mla(pp_probe_opts *o)
{
    if (!o->heads) return bad_input("mla --hidden needs --heads");
    if (!o->kv_lora_rank) o->kv_lora_rank = 512;
    if (!o->qk_nope_dim) o->qk_nope_dim = 128;
    if (!o->qk_rope_dim) o->qk_rope_dim = 64;
    if (!o->v_head_dim) o->v_head_dim = 128;
    if (o->hidden % 8 || o->q_lora_rank % 8 || o->kv_lora_rank % 8 || o->qk_nope_dim % 8 || o->qk_rope_dim % 8 ||
        o->v_head_dim % 8)
        return bad_input("mla: --hidden, the lora ranks and the head dims must be multiples of 8 (16-byte rows)");
    if (!o->n_tp)
        for (int64_t t = 1; t <= 8; t *= 2)
            if (o->heads % t == 0) o->tp[o->n_tp++] = t;
    for (int i = 0; i < o->n_tp; i++)
        if (o->heads % o->tp[i])
            return bad_input("--tp %lld does not split %lld heads evenly", (long long)o->tp[i], (long long)o->heads);
    return 0;
}

static int parse_args(int argc, char **argv, pp_probe_opts *o, bool *count_only)
{
    bool any = false, moe_opt = false, moe_shape = false, mla_opt = false;
    int64_t v = 0;
    memset(o, 0, sizeof *o);
    *count_only = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VAL()                                                          \
    do {                                                                    \
        if (!val) return bad_input("option %s needs a value", a);           \
        i++;                                                                \
    } while (0)
        if (!strcmp(a, "all")) {
            for (int k = 0; k < PP_PROBE_COUNT; k++) o->run[k] = o->run[k] || pp_probe_in_all(k);
            any = true;
            continue;
        }
        int k;
        for (k = 0; k < PP_PROBE_COUNT; k++)
            if (!strcmp(a, pp_probe_names[k])) break;
        if (k < PP_PROBE_COUNT) {
            o->run[k] = true;
            any = true;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            NEED_VAL();
            if (!*val) return bad_input("%s needs a non-empty value", a);
            o->output = val;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->quiet = true;
        } else if (!strcmp(a, "--quick")) {
            o->quick = true;
        } else if (!strcmp(a, "--count")) {
            *count_only = true;
        } else if (!strcmp(a, "--device") || !strcmp(a, "--gpu-index")) {
            NEED_VAL();
            if (parse_i64(a, val, 0, 1023, &v)) return 2;
            o->device = (int)v;
        } else if (!strcmp(a, "--timeout-s")) {
            NEED_VAL();
            if (parse_num(a, val, 0.1, 86400, &o->timeout_s)) return 2;
        } else if (!strcmp(a, "--mem-limit-gib")) {
            NEED_VAL();
            if (parse_num(a, val, 0.001, 1e6, &o->mem_limit_bytes)) return 2;
            o->mem_limit_bytes *= 1073741824.0;
        } else if (!strcmp(a, "--gpus")) {
            NEED_VAL();
            if (parse_i64(a, val, 1, 1024, &v)) return 2;
            o->gpus = (int)v;
        } else if (!strcmp(a, "--hidden")) {
            NEED_VAL();
            if (parse_i64(a, val, 8, 1 << 20, &o->hidden)) return 2;
        } else if (!strcmp(a, "--heads")) {
            NEED_VAL();
            if (parse_i64(a, val, 1, 1 << 16, &o->heads)) return 2;
        } else if (!strcmp(a, "--kv-heads")) {
            NEED_VAL();
            if (parse_i64(a, val, 1, 1 << 16, &o->kv_heads)) return 2;
        } else if (!strcmp(a, "--ffn")) {
            NEED_VAL();
            if (parse_i64(a, val, 8, 1 << 22, &o->ffn)) return 2;
        } else if (!strcmp(a, "--seq")) {
            NEED_VAL();
            if (parse_i64(a, val, 8, 1 << 22, &o->seq)) return 2;
        } else if (!strcmp(a, "--mbs")) {
            NEED_VAL();
            if (parse_i64(a, val, 1, 1 << 16, &o->mbs)) return 2;
        } else if (!strcmp(a, "--tp")) {
            NEED_VAL();
            if (parse_tp_list(val, o)) return 2;
        } else if (!strcmp(a, "--swiglu")) {
            o->swiglu = true;
        } else if (!strcmp(a, "--no-mlp")) {
            o->no_mlp = true;
        } else if (!strcmp(a, "--head-dim")) {
            NEED_VAL();
            if (parse_i64(a, val, 8, 1024, &o->head_dim)) return 2;
        } else if (!strcmp(a, "--params")) {
            NEED_VAL();
            if (parse_params_list(val, o)) return 2;
        } else if (!strcmp(a, "--dtype")) {
            NEED_VAL();
            if (parse_dtypes(val, o)) return 2;
        } else if (!strcmp(a, "--experts")) {
            NEED_VAL();
            if (parse_i64(a, val, 1, 4096, &o->experts)) return 2;
            moe_opt = moe_shape = true;
        } else if (!strcmp(a, "--topk")) {
            NEED_VAL();
            if (parse_i64(a, val, 1, 32, &o->topk)) return 2;
            moe_opt = moe_shape = true;
        } else if (!strcmp(a, "--moe-ffn")) {
            NEED_VAL();
            if (parse_i64(a, val, 8, 1 << 20, &o->moe_ffn)) return 2;
            moe_opt = moe_shape = true;
        } else if (!strcmp(a, "--shared-ffn")) {
            NEED_VAL();
            if (parse_i64(a, val, 0, 1 << 20, &o->shared_ffn)) return 2;
            moe_opt = moe_shape = true;
        } else if (!strcmp(a, "--tokens")) {
            NEED_VAL();
            if (parse_int_list(a, val, 16, 1 << 22, o->tokens, &o->n_tokens)) return 2;
            moe_opt = moe_shape = true;
        } else if (!strcmp(a, "--ep")) {
            NEED_VAL();
            if (parse_int_list(a, val, 1, 4096, o->ep, &o->n_ep)) return 2;
            moe_opt = moe_shape = true;
        } else if (!strcmp(a, "--imbalance")) {
            NEED_VAL();
            if (parse_num(a, val, 1, 4096, &o->imbalance)) return 2;
            moe_opt = moe_shape = true;
        } else if (!strcmp(a, "--moe-impl")) {
            NEED_VAL();
            if (!strcmp(val, "loop")) o->moe_impls = 1;
            else if (!strcmp(val, "grouped")) o->moe_impls = 2;
            else if (!strcmp(val, "both")) o->moe_impls = 3;
            else return bad_input("--moe-impl '%s': expected loop, grouped or both", val);
            moe_opt = true;
        } else if (!strcmp(a, "--router")) {
            NEED_VAL();
            if (!strcmp(val, "softmax")) o->router = 0;
            else if (!strcmp(val, "sigmoid")) o->router = 1;
            else return bad_input("--router '%s': expected softmax or sigmoid", val);
            moe_opt = true;
        } else if (!strcmp(a, "--q-lora-rank")) {
            NEED_VAL();
            if (parse_i64(a, val, 0, 1 << 20, &o->q_lora_rank)) return 2;
            mla_opt = true;
        } else if (!strcmp(a, "--kv-lora-rank")) {
            NEED_VAL();
            if (parse_i64(a, val, 8, 1 << 20, &o->kv_lora_rank)) return 2;
            mla_opt = true;
        } else if (!strcmp(a, "--qk-nope-dim")) {
            NEED_VAL();
            if (parse_i64(a, val, 8, 1024, &o->qk_nope_dim)) return 2;
            mla_opt = true;
        } else if (!strcmp(a, "--qk-rope-dim")) {
            NEED_VAL();
            if (parse_i64(a, val, 8, 512, &o->qk_rope_dim)) return 2;
            mla_opt = true;
        } else if (!strcmp(a, "--v-head-dim")) {
            NEED_VAL();
            if (parse_i64(a, val, 8, 1024, &o->v_head_dim)) return 2;
            mla_opt = true;
        } else if (!strcmp(a, "--attention")) {
            NEED_VAL();
            if (!strcmp(val, "auto")) o->attention = 0;
            else if (!strcmp(val, "flash")) o->attention = 1;
            else if (!strcmp(val, "unfused")) o->attention = 2;
            else return bad_input("--attention '%s': expected auto, flash or unfused", val);
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--version")) {
            printf("parplan-probe %s\n", PP_VERSION);
            exit(0);
        } else {
            return bad_input("unknown argument '%s'", a);
        }
#undef NEED_VAL
    }
    if (!any)
        for (int k = 0; k < PP_PROBE_COUNT; k++) o->run[k] = pp_probe_in_all(k);
    if (parse_env(o)) return 2;
    if (o->n_params && !o->run[PP_PROBE_OPTIMIZER]) return bad_input("--params sizes the optimizer probe, which is not asked for");
    if (o->gemm_dtypes && !o->run[PP_PROBE_GEMM]) return bad_input("--dtype picks the gemm probe's types, which is not asked for");
    if (o->no_mlp && !o->run[PP_PROBE_LAYER]) return bad_input("--no-mlp shapes the layer probe, which is not asked for");
    if (o->head_dim && (!o->run[PP_PROBE_LAYER] || o->run[PP_PROBE_GEMM] || o->run[PP_PROBE_ATTENTION] || !o->hidden))
        return bad_input("--head-dim shapes the layer probe of a model (--hidden, --heads): run it apart from gemm "
                         "and attention");
    if (o->head_dim % 8) return bad_input("the head size %lld must be a multiple of 8", (long long)o->head_dim);
    if (o->no_mlp && (o->ffn || o->swiglu))
        return bad_input("--no-mlp leaves the MLP out: --ffn and --swiglu do not apply");
    if (moe_opt && !o->run[PP_PROBE_MOE])
        return bad_input("--experts, --topk, --moe-ffn, --shared-ffn, --tokens, --ep, --imbalance, --moe-impl and "
                         "--router describe the moe probe, which is not asked for");
    if (mla_opt && !o->run[PP_PROBE_MLA])
        return bad_input("--q-lora-rank, --kv-lora-rank, --qk-nope-dim, --qk-rope-dim and --v-head-dim describe the "
                         "mla probe, which is not asked for");
    /* moe and mla read the model options as their own layer's; gemm, attention and layer read them
     * as a dense transformer's: one command measures one of the two */
    bool dense = o->run[PP_PROBE_GEMM] || o->run[PP_PROBE_ATTENTION] || o->run[PP_PROBE_LAYER];
    bool sparse = o->run[PP_PROBE_MOE] || o->run[PP_PROBE_MLA];
    if (sparse && dense && (o->hidden || o->heads))
        return bad_input("moe and mla read --hidden as their own layer's: run them apart from gemm, attention and layer");
    if (sparse) {
        if (!o->hidden && (moe_shape || mla_opt || o->heads || o->n_tp || o->seq || o->mbs))
            return bad_input("moe and mla shapes need --hidden (without it they run their default shapes)");
        if (o->run[PP_PROBE_MOE] && !o->run[PP_PROBE_MLA] && (o->heads || o->n_tp || o->seq || o->mbs))
            return bad_input("moe takes --tokens (micro-batch x sequence) and --ep, not --heads, --tp, --seq or --mbs");
        if (o->ffn || o->kv_heads || o->swiglu)
            return bad_input("--ffn, --kv-heads and --swiglu describe a dense layer: moe takes --moe-ffn, mla its "
                             "latent ranks");
        if (o->hidden && o->run[PP_PROBE_MOE] && check_moe(o)) return 2;
        if (o->hidden && o->run[PP_PROBE_MLA] && check_mla(o)) return 2;
        return 0;
    }
    if (o->hidden && !o->heads) return bad_input("--hidden needs --heads");
    if (o->heads && !o->hidden) return bad_input("--heads needs --hidden");
    if (o->hidden) {
        if (!o->head_dim && o->hidden % o->heads) return bad_input("--hidden %lld is not a multiple of --heads %lld",
                                                                   (long long)o->hidden, (long long)o->heads);
        if (!o->head_dim && (o->hidden / o->heads) % 8)
            return bad_input("the head size %lld must be a multiple of 8", (long long)(o->hidden / o->heads));
        if (o->kv_heads && o->heads % o->kv_heads) return bad_input("--heads must be a multiple of --kv-heads");
        if (!o->n_tp) {
            /* the TP sizes that split the heads evenly, up to 8 (one node) */
            for (int64_t t = 1; t <= 8; t *= 2)
                if (o->heads % t == 0 && (!o->kv_heads || o->kv_heads % t == 0)) o->tp[o->n_tp++] = t;
        }
        for (int i = 0; i < o->n_tp; i++) {
            int64_t ffn = o->ffn ? o->ffn : 4 * o->hidden;
            if (o->heads % o->tp[i] || ffn % o->tp[i])
                return bad_input("--tp %lld does not split %lld heads and an MLP of %lld evenly", (long long)o->tp[i],
                                 (long long)o->heads, (long long)ffn);
        }
    } else if (o->n_tp || o->ffn || o->seq || o->mbs || o->kv_heads || o->swiglu) {
        return bad_input("--tp, --ffn, --seq, --mbs, --kv-heads and --swiglu describe a model: give --hidden and --heads");
    }
    return 0;
}

/* Write the profile file (YAML, or JSON for *.json) with what the report holds now. */
static int write_profile(const pp_probe_opts *o, const pp_report *rep)
{
    size_t n = strlen(o->output);
    bool json = n >= 5 && !strcmp(o->output + n - 5, ".json");
    FILE *f = fopen(o->output, "w");
    if (!f || (json ? pp_report_write_json(rep, f) : pp_report_write_yaml(rep, f)) || fclose(f)) {
        fprintf(stderr, "parplan: cannot write the profile: %s (%s)\n", strerror(errno), o->output);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    pp_probe_opts o;
    pp_report rep;
    pp_probe_ctx *ctx = NULL;
    bool count_only = false, progress, need_ctx = false, root = true;
    char why[256] = "";
    int rc = 0, n_gpu = 0, n_run = 0, done = 0;

    pp_report_init(&rep);
    if (pp_mpi_init(&argc, &argv)) {
        fprintf(stderr, "parplan: MPI_Init failed (parplan-probe)\n");
        return 1;
    }
    rc = parse_args(argc, argv, &o, &count_only);
    if (rc) goto out;
    root = pp_mpi_rank() == 0;
    n_gpu = pp_gpu_count(why, sizeof why);
    if (count_only) {
        printf("%d\n", n_gpu);
        goto out;
    }
    if (n_gpu < 1) {
        /* one line, whatever was asked */
        for (int k = 0; k < PP_PROBE_COUNT; k++)
            if (o.run[k]) {
                fprintf(stderr, "parplan: no CUDA GPU is visible: %s (probe %s)\n", why, pp_probe_names[k]);
                break;
            }
        rc = 1;
        goto out;
    }
    if (o.device >= n_gpu || (o.gpus > n_gpu && o.run[PP_PROBE_NCCL] && !pp_mpi_active())) {
        /* a GPU that is not there: name it (bad input, exit 2) */
        char line[160];
        pp_fmt_gpu_missing(line, sizeof line, o.device >= n_gpu ? o.device : n_gpu, n_gpu);
        fprintf(stderr, "parplan: %s (%s)\n", line, o.device >= n_gpu ? "--gpu-index" : "--gpus");
        rc = 2;
        goto out;
    }
    progress = root && !o.quiet && isatty(STDERR_FILENO);
    for (int k = 0; k < PP_PROBE_COUNT; k++) {
        if (!o.run[k]) continue;
        n_run++;
        if (k != PP_PROBE_NCCL) need_ctx = true;
    }
    /* under mpirun the single-GPU probes run on rank 0 only; rank 0 also fills the machine fields */
    if (root) {
        if (pp_probe_open(&ctx, &o, &rep)) {
            fprintf(stderr, "parplan: %s (probe setup)\n", pp_probe_error_msg());
            rc = 1;
            goto out;
        }
        if (!need_ctx) {
            pp_probe_close(ctx);
            ctx = NULL;
        }
    }
    if (root && !o.json) pp_report_write_section(&rep, stdout, -1);
    for (int k = 0; k < PP_PROBE_COUNT; k++) {
        int st = 0;
        double t0;
        if (!o.run[k]) continue;
        done++;
        if (k != PP_PROBE_NCCL && !root) continue;
        if (k == PP_PROBE_NCCL && ctx) {
            /* free the single-GPU probes' memory and handles first */
            pp_probe_close(ctx);
            ctx = NULL;
        }
        if (progress) fprintf(stderr, "parplan probe [%d/%d] %s ...\n", done, n_run, pp_probe_names[k]);
        t0 = wall_s();
        switch (k) {
        case PP_PROBE_GEMM: st = pp_probe_gemm(ctx); break;
        case PP_PROBE_BANDWIDTH: st = pp_probe_bandwidth(ctx); break;
        case PP_PROBE_ATTENTION: st = pp_probe_attention(ctx); break;
        case PP_PROBE_LAYER: st = pp_probe_layer(ctx); break;
        case PP_PROBE_OPTIMIZER: st = pp_probe_optimizer(ctx); break;
        case PP_PROBE_MOE: st = pp_probe_moe(ctx); break;
        case PP_PROBE_MLA: st = pp_probe_mla(ctx); break;
        default: st = pp_probe_nccl(&o, &rep); break;
        }
        rep.probe_s[k] = wall_s() - t0;
        if (st) {
            fprintf(stderr, "parplan: %s (probe %s)\n", pp_probe_error_msg(), pp_probe_names[k]);
            pp_probe_error_clear();
            rc = 1;
        }
        if (progress) fprintf(stderr, "parplan probe [%d/%d] %s done in %.1f s\n", done, n_run, pp_probe_names[k],
                              rep.probe_s[k]);
        if (root && !o.json) pp_report_write_section(&rep, stdout, k);
        /* the profile so far: a later probe that crashes the process leaves these figures */
        if (root && o.output && write_profile(&o, &rep)) rc = 1;
    }
    pp_probe_close(ctx);
    ctx = NULL;
    if (!root) goto out;
    for (int i = 0; i < rep.n_fail; i++) fprintf(stderr, "parplan: wrong result, not timed: %s\n", rep.fail[i]);
    if (rep.n_fail) rc = 1;
    if (o.json) pp_report_write_json(&rep, stdout);
    else pp_report_write_section(&rep, stdout, PP_PROBE_COUNT);
out:
    pp_probe_close(ctx);
    pp_report_free(&rep);
    pp_mpi_finalize();
    return rc;
}
