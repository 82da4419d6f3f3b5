/* The shared option table and parser. Every flag of docs/cli.md is here, once;
 * each subcommand reads the fields it needs from pp_cli. Unknown flags, missing values and
 * malformed numbers are errors naming the flag (exit 2), never silently ignored. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pp_config.h"
#include "pp_json.h"
#include "pp_margs.h"

typedef enum {
    OPT_FLAG,   /* no value */
    OPT_INT,    /* int64 > 0 unless min says otherwise */
    OPT_NUM,    /* finite double */
    OPT_STR,
} opt_kind;

/* Which subcommands take an option (bit per command). */
enum {
    C_MODELS = 1 << 0, C_CHECK = 1 << 1, C_PLAN = 1 << 2, C_LAUNCH = 1 << 3,
    C_PROBE = 1 << 4, C_ESTIMATE = 1 << 5, C_CALIBRATE = 1 << 6,
    C_WORK = C_CHECK | C_PLAN | C_LAUNCH | C_ESTIMATE,
    C_LAYOUT = C_CHECK | C_PLAN | C_LAUNCH | C_ESTIMATE,
    C_ALL = 0xff,
};

typedef enum {
    K_JSON, K_HELP, K_QUIET, K_MODEL, K_GPU, K_PROFILE, K_GPUS, K_GPN, K_GBS, K_FRAMEWORK,
    K_ATTENTION, K_LAYERS, K_HIDDEN, K_HEADS, K_KV_HEADS, K_FFN, K_VOCAB, K_SEQ, K_SWIGLU, K_GELU,
    K_UNTIED, K_TIED, K_RMSNORM, K_LAYERNORM, K_NO_BIAS, K_EXPERTS, K_TOPK, K_TP, K_PP, K_DP,
    K_VPP, K_CP, K_EP, K_ETP, K_MBS, K_ZERO, K_DIST_OPT, K_SP, K_RECOMPUTE, K_RECOMPUTE_LAYERS,
    K_OFFLOAD, K_RECOMPUTE_MODULES, K_TOP, K_PROBE, K_PROBE_BUDGET, K_FORMAT, K_EMIT, K_OUTPUT, K_REPORT, K_STAGES,
    K_DUMP_ILP, K_TOKENS, K_PRICE, K_CROSS_NODE_TP, K_LAUNCH_TARGET, K_TRAIN_ITERS, K_FIT, K_PROBE_CACHE,
    K_PRECISION, K_DROPOUT, K_ATTN_DROPOUT, K_HIDDEN_DROPOUT, K_NO_OVERLAP, K_TP_COMM_OVERLAP, K_IMPL,
    K_MOE_DISPATCHER, K_MOE_GROUPED_GEMM, K_CAPACITY_FACTOR, K_MOE_IMBALANCE, K_EP_OVERLAP, K_GRAD_BF16, K_MAX_MEM_FRAC, K_MEGATRON_ARGS,
    K_OPTIMIZER_IMPL, K_REPLICATE,
} opt_key;

typedef struct {
    const char *name;   /* long form, with dashes */
    char short_name;    /* 0 if none */
    opt_key key;
    opt_kind kind;
    unsigned cmds;
    const char *help;
} opt_def;

static const opt_def opt_table[] = {
    {"--json", 0, K_JSON, OPT_FLAG, C_ALL, "one JSON document on stdout"},
    {"--help", 'h', K_HELP, OPT_FLAG, C_ALL, "this help"},
    {"--quiet", 'q', K_QUIET, OPT_FLAG, C_ALL, "no progress lines"},
    {"--model", 0, K_MODEL, OPT_STR, C_WORK | C_PROBE | C_MODELS, "NAME|FILE: catalog name, model YAML or HF config.json"},
    {"--gpu", 0, K_GPU, OPT_STR, C_WORK | C_CALIBRATE, "NAME|FILE: catalog GPU or GPU YAML"},
    {"--profile", 0, K_PROFILE, OPT_STR, C_WORK | C_CALIBRATE, "FILE: hardware profile from `parplan probe`"},
    {"--gpus", 0, K_GPUS, OPT_INT, C_WORK, "N: total GPUs"},
    {"--gpus-per-node", 0, K_GPN, OPT_INT, C_WORK, "N: GPUs per node (default: the GPU's)"},
    {"--gbs", 0, K_GBS, OPT_INT, C_WORK, "N: global batch in sequences"},
    {"--framework", 0, K_FRAMEWORK, OPT_STR, C_WORK, "megatron|deepspeed|fsdp"},
    {"--attention", 0, K_ATTENTION, OPT_STR, C_WORK | C_PROBE, "flash|unfused"},
    {"--layers", 0, K_LAYERS, OPT_INT, C_WORK, "N: override the model's layers"},
    {"--hidden", 0, K_HIDDEN, OPT_INT, C_WORK, "N: hidden size"},
    {"--heads", 0, K_HEADS, OPT_INT, C_WORK, "N: attention heads"},
    {"--kv-heads", 0, K_KV_HEADS, OPT_INT, C_WORK, "N: KV heads (GQA groups)"},
    {"--ffn", 0, K_FFN, OPT_INT, C_WORK, "N: MLP inner size"},
    {"--vocab", 0, K_VOCAB, OPT_INT, C_WORK, "N: vocabulary"},
    {"--seq", 0, K_SEQ, OPT_INT, C_WORK, "N: sequence length"},
    {"--swiglu", 0, K_SWIGLU, OPT_FLAG, C_WORK, "SwiGLU MLP"},
    {"--gelu", 0, K_GELU, OPT_FLAG, C_WORK, "GELU MLP"},
    {"--untied", 0, K_UNTIED, OPT_FLAG, C_WORK, "separate output layer"},
    {"--tied", 0, K_TIED, OPT_FLAG, C_WORK, "output layer shares the embedding"},
    {"--rmsnorm", 0, K_RMSNORM, OPT_FLAG, C_WORK, "RMSNorm"},
    {"--layernorm", 0, K_LAYERNORM, OPT_FLAG, C_WORK, "LayerNorm"},
    {"--no-bias", 0, K_NO_BIAS, OPT_FLAG, C_WORK, "no linear-layer biases"},
    {"--experts", 0, K_EXPERTS, OPT_INT, C_WORK, "N: MoE experts per layer"},
    {"--topk", 0, K_TOPK, OPT_INT, C_WORK, "N: experts per token"},
    {"--megatron-args", 0, K_MEGATRON_ARGS, OPT_STR, C_WORK, "FILE: model, layout and stack from a Megatron-LM command line, launch script or training log ('-': stdin); the flags given beside it override it"},
    {"--precision", 0, K_PRECISION, OPT_STR, C_WORK, "bf16|fp16|fp8: training precision (default bf16)"},
    {"--dropout", 0, K_DROPOUT, OPT_NUM, C_WORK, "P: attention and hidden dropout (default: the model's)"},
    {"--attention-dropout", 0, K_ATTN_DROPOUT, OPT_NUM, C_WORK, "P: attention dropout (overrides --dropout)"},
    {"--hidden-dropout", 0, K_HIDDEN_DROPOUT, OPT_NUM, C_WORK, "P: hidden dropout (overrides --dropout)"},
    {"--no-overlap", 0, K_NO_OVERLAP, OPT_FLAG, C_WORK, "no DP gradient-reduce, parameter-gather or pipeline overlap (2021 Megatron, DeepSpeed's pipeline engine)"},
    {"--tp-comm-overlap", 0, K_TP_COMM_OVERLAP, OPT_FLAG, C_WORK, "TP collectives hidden behind the GEMMs (TransformerEngine userbuffers, with --sp)"},
    {"--impl", 0, K_IMPL, OPT_STR, C_WORK, "te|local: Megatron-LM transformer implementation (default te; local with --attention unfused)"},
    {"--moe-dispatcher", 0, K_MOE_DISPATCHER, OPT_STR, C_WORK, "alltoall|allgather: MoE token dispatch (default alltoall)"},
    {"--moe-grouped-gemm", 0, K_MOE_GROUPED_GEMM, OPT_FLAG, C_WORK | C_PROBE, "MoE experts as one grouped GEMM (TransformerEngine)"},
    {"--max-mem-frac", 0, K_MAX_MEM_FRAC, OPT_NUM, C_WORK,
     "X: a layout fits when peak + reserved <= X of the GPU's usable memory (default 1)"},
    {"--capacity-factor", 0, K_CAPACITY_FACTOR, OPT_NUM, C_WORK, "X: MoE expert capacity factor (0: dropless, the default)"},
    {"--moe-imbalance", 0, K_MOE_IMBALANCE, OPT_NUM, C_WORK, "X: tokens of the busiest expert over the mean (>= 1, default 1)"},
    {"--grad-reduce-bf16", 0, K_GRAD_BF16, OPT_FLAG, C_WORK, "Megatron's gradient buffer and reduction in bf16 (--grad-reduce-in-bf16), not fp32"},
    {"--ep-overlap", 0, K_EP_OVERLAP, OPT_FLAG, C_WORK, "EP all-to-alls overlapped with another micro-batch's compute (Megatron --overlap-moe-expert-parallel-comm)"},
    {"--tp", 0, K_TP, OPT_INT, C_LAYOUT | C_PROBE, "N: tensor parallel"},
    {"--pp", 0, K_PP, OPT_INT, C_LAYOUT, "N: pipeline parallel"},
    {"--dp", 0, K_DP, OPT_INT, C_LAYOUT, "N: data parallel (default gpus/(tp*pp*cp))"},
    {"--vpp", 0, K_VPP, OPT_INT, C_LAYOUT, "N: virtual stages per rank (interleaved)"},
    {"--cp", 0, K_CP, OPT_INT, C_LAYOUT | C_PROBE, "N: context parallel"},
    {"--ep", 0, K_EP, OPT_INT, C_LAYOUT | C_PROBE, "N: expert parallel"},
    {"--etp", 0, K_ETP, OPT_INT, C_LAYOUT | C_PROBE, "N: expert tensor parallel (default: --tp)"},
    {"--mbs", 0, K_MBS, OPT_INT, C_LAYOUT | C_PROBE, "N: micro-batch size"},
    {"--zero", 0, K_ZERO, OPT_STR, C_LAYOUT, "0|1|2|3: ZeRO stage (deepspeed/fsdp)"},
    {"--dist-opt", 0, K_DIST_OPT, OPT_FLAG, C_LAYOUT, "Megatron's distributed optimizer"},
    {"--sp", 0, K_SP, OPT_FLAG, C_LAYOUT | C_PROBE, "sequence parallel"},
    {"--recompute", 0, K_RECOMPUTE, OPT_STR, C_LAYOUT, "none|selective|full (fsdp: selective is torchtitan's op-level SAC)"},
    {"--recompute-layers", 0, K_RECOMPUTE_LAYERS, OPT_INT, C_LAYOUT, "K: layers per stage fully recomputed"},
    {"--recompute-modules", 0, K_RECOMPUTE_MODULES, OPT_STR, C_LAYOUT,
     "LIST: what selective recompute recomputes: core_attn,layernorm,mla_up_proj,moe_act,mlp,moe,shared_experts (default core_attn)"},
    {"--offload", 0, K_OFFLOAD, OPT_STR, C_LAYOUT, "none|optimizer|params"},
    {"--top", 0, K_TOP, OPT_INT, C_PLAN, "K: candidates to show (default 5)"},
    {"--probe", 0, K_PROBE, OPT_INT, C_PLAN, "K: measure the best K on the local GPUs"},
    {"--probe-budget", 0, K_PROBE_BUDGET, OPT_NUM, C_PLAN, "SECONDS: GPU time for --probe"},
    {"--format", 0, K_FORMAT, OPT_STR, C_LAUNCH, "megatron|deepspeed|nemo|torchrun|slurm|torchtitan"},
    {"--emit", 0, K_EMIT, OPT_STR, C_PLAN, "FORMAT: launch config of the best layout"},
    {"--launch-target", 0, K_LAUNCH_TARGET, OPT_STR, C_LAUNCH | C_PLAN, "standard|device-local: Megatron with TE, or without TE/apex (mock data)"},
    {"--train-iters", 0, K_TRAIN_ITERS, OPT_INT, C_LAUNCH | C_PLAN, "N: Megatron --train-iters (default: device-local 5, else $TRAIN_ITERS)"},
    {"--output", 'o', K_OUTPUT, OPT_STR, C_LAUNCH | C_PLAN | C_PROBE | C_CALIBRATE, "PATH: output file or directory"},
    {"--probe-cache", 0, K_PROBE_CACHE, OPT_STR, C_CALIBRATE, "FILE: plan --probe's cache: fit on the logs' measured layers (writes probe_calibration, for plan --probe)"},
    {"--fit", 0, K_FIT, OPT_STR, C_CALIBRATE, "LIST: factors to fit: gemm,elementwise,score,layer,optimizer, or none to evaluate --profile (default: gemm,layer,optimizer + score with unfused attention, else elementwise)"},
    {"--report", 0, K_REPORT, OPT_STR, C_PLAN | C_CHECK, "FILE.html: self-contained report"},
    {"--stages", 0, K_STAGES, OPT_STR, C_PLAN | C_CHECK | C_LAUNCH, "uniform|ilp|auto: pipeline stage split (plan: auto)"},
    {"--dump-ilp", 0, K_DUMP_ILP, OPT_STR, C_PLAN | C_CHECK, "FILE: write the stage ILP (CPLEX LP)"},
    {"--tokens", 0, K_TOKENS, OPT_NUM, C_ESTIMATE, "T: training tokens (e.g. 300e9)"},
    {"--price-per-gpu-hour", 0, K_PRICE, OPT_NUM, C_ESTIMATE, "P: price of one GPU-hour"},
    {"--allow-cross-node-tp", 0, K_CROSS_NODE_TP, OPT_FLAG, C_PLAN, "let the search place TP across nodes"},
    {"--optimizer-impl", 0, K_OPTIMIZER_IMPL, OPT_STR, C_WORK, "fused|foreach: torch AdamW under --framework fsdp (default fused, torchtitan's)"},
    {"--replicate", 0, K_REPLICATE, OPT_INT, C_CHECK | C_LAUNCH | C_ESTIMATE, "N: HSDP replicas (--framework fsdp): shard over dp/N ranks, replicate N ways"},
};
#define N_OPTS (sizeof opt_table / sizeof opt_table[0])

static const struct { const char *name; unsigned bit; } cmd_bits[] = {
    {"models", C_MODELS}, {"check", C_CHECK}, {"plan", C_PLAN}, {"launch", C_LAUNCH},
    {"probe", C_PROBE}, {"estimate", C_ESTIMATE}, {"calibrate", C_CALIBRATE},
};

static unsigned cmd_bit(const char *cmd)
{
    for (size_t i = 0; i < sizeof cmd_bits / sizeof cmd_bits[0]; i++)
        if (strcmp(cmd_bits[i].name, cmd) == 0) return cmd_bits[i].bit;
    return 0;
}

/* Model fields given inline: applied after the model is resolved. */
typedef struct {
    int64_t layers, hidden, heads, kv_heads, ffn, vocab, seq, experts, topk;
    int act, norm, tied, bias; /* -1: not given */
} model_overrides;

/* The parser keeps the overrides beside pp_cli without widening the public struct. */
static model_overrides cli_over;
static int64_t cli_gpus_per_node; /* 0: the GPU's default */
static bool optimizer_impl_given;  /* --optimizer-impl: only --framework fsdp reads it */

/* Work and stack options given on the command line (with --megatron-args they override the file's). */
enum {
    G_FRAMEWORK = 1 << 0, G_ATTENTION = 1 << 1, G_PRECISION = 1 << 2, G_DROPOUT = 1 << 3,
    G_ATTN_DROPOUT = 1 << 4, G_HIDDEN_DROPOUT = 1 << 5, G_NO_OVERLAP = 1 << 6, G_TP_COMM = 1 << 7,
    G_IMPL = 1 << 8, G_DISPATCH = 1 << 9, G_GROUPED = 1 << 10, G_CAPACITY = 1 << 11, G_IMBALANCE = 1 << 12,
    G_RECOMPUTE_LAYERS = 1 << 13, G_EP_OVERLAP = 1 << 14, G_GRAD_BF16 = 1 << 15,
};
static unsigned cli_given;
static double cli_dropout, cli_attn_dropout, cli_hidden_dropout, cli_max_mem_frac;

static pp_status parse_int(const char *flag, const char *s, int64_t min, int64_t max, int64_t *out,
                           pp_error *err)
{
    char *end = NULL;
    errno = 0;
    double d = 0;
    long long v = strtoll(s, &end, 10);
    if (end && *end && (*end == 'e' || *end == 'E' || *end == '.')) {
        /* Allow 1e6-style integers, but only exact ones. */
        d = strtod(s, &end);
        if (*end || !isfinite(d) || d != floor(d) || fabs(d) > 9e18)
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s expects an integer, got '%s'", flag, s);
        v = (long long)d;
    } else if (errno == ERANGE || !end || end == s || *end) {
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s expects an integer, got '%s'", flag, s);
    }
    if (v < min || v > max)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s must be between %lld and %lld, got %lld",
                            flag, (long long)min, (long long)max, v);
    *out = v;
    return PP_OK;
}

static pp_status parse_num(const char *flag, const char *s, double min, double max, double *out,
                           pp_error *err)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno == ERANGE || end == s || *end || !isfinite(v))
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s expects a number, got '%s'", flag, s);
    if (v < min || v > max)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s must be between %g and %g, got %g",
                            flag, min, max, v);
    *out = v;
    return PP_OK;
}

static pp_status parse_enum(const char *flag, const char *s, const char *const *names, int n,
                            int *out, pp_error *err)
{
    int i = pp_name_lookup(names, n, s);
    if (i < 0) {
        char list[256] = "";
        for (int k = 0; k < n; k++) {
            strncat(list, names[k], sizeof list - strlen(list) - 2);
            if (k + 1 < n) strncat(list, "|", sizeof list - strlen(list) - 1);
        }
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s expects %s, got '%s'", flag, list, s);
    }
    *out = i;
    return PP_OK;
}

static const char *const zero_names[] = {"0", "1", "2", "3"};

/* Upper bounds: no count beyond these is meaningful, and they keep products within int64. */
#define MAX_GPUS 10000000LL
#define MAX_DIM 100000000LL

static pp_status apply_opt(pp_cli *c, const opt_def *o, const char *v, pp_error *err)
{
    pp_layout *l = &c->layout;
    model_overrides *mo = &cli_over;
    pp_status st = PP_OK;
    int e = 0;
    switch (o->key) {
    case K_JSON: c->json = true; break;
    case K_HELP: c->help = true; break;
    case K_QUIET: c->quiet = true; break;
    case K_MODEL: c->model_arg = v; break;
    case K_GPU: c->gpu_arg = v; break;
    case K_PROFILE: c->profile_arg = v; break;
    case K_GPUS: st = parse_int(o->name, v, 1, MAX_GPUS, &c->work.gpus, err); break;
    case K_GPN: st = parse_int(o->name, v, 1, 1024, &cli_gpus_per_node, err); break;
    case K_GBS: st = parse_int(o->name, v, 1, 1LL << 40, &c->work.gbs, err); break;
    case K_FRAMEWORK:
        st = parse_enum(o->name, v, pp_framework_names, PP_FW_COUNT, &e, err);
        c->work.framework = (pp_framework)e;
        cli_given |= G_FRAMEWORK;
        break;
    case K_ATTENTION:
        st = parse_enum(o->name, v, pp_attention_names, PP_ATTN_COUNT, &e, err);
        c->work.attention = (pp_attention)e;
        cli_given |= G_ATTENTION;
        break;
    case K_MEGATRON_ARGS: c->megatron_args = v; break;
    case K_PRECISION:
        st = parse_enum(o->name, v, pp_precision_names, PP_PREC_COUNT, &e, err);
        c->work.stack.precision = (pp_precision)e;
        cli_given |= G_PRECISION;
        break;
    /* dropout is a probability: [0, 1) as in torch.nn.Dropout (p = 1 zeroes everything) */
    case K_DROPOUT: st = parse_num(o->name, v, 0, 0.999, &cli_dropout, err); cli_given |= G_DROPOUT; break;
    case K_ATTN_DROPOUT: st = parse_num(o->name, v, 0, 0.999, &cli_attn_dropout, err); cli_given |= G_ATTN_DROPOUT; break;
    case K_HIDDEN_DROPOUT: st = parse_num(o->name, v, 0, 0.999, &cli_hidden_dropout, err); cli_given |= G_HIDDEN_DROPOUT; break;
    case K_NO_OVERLAP: c->work.stack.no_overlap = true; cli_given |= G_NO_OVERLAP; break;
    case K_TP_COMM_OVERLAP: c->work.stack.tp_comm_overlap = true; cli_given |= G_TP_COMM; break;
    case K_IMPL:
        st = parse_enum(o->name, v, pp_impl_names, PP_IMPL_COUNT, &e, err);
        c->work.stack.impl = (pp_impl)e;
        c->work.stack.impl_given = true;
        cli_given |= G_IMPL;
        break;
    case K_MOE_DISPATCHER:
        st = parse_enum(o->name, v, pp_dispatch_names, PP_DISPATCH_COUNT, &e, err);
        c->work.stack.dispatcher = (pp_dispatch)e;
        cli_given |= G_DISPATCH;
        break;
    case K_MOE_GROUPED_GEMM: c->work.stack.grouped_gemm = true; cli_given |= G_GROUPED; break;
    case K_EP_OVERLAP: c->work.stack.ep_overlap = true; cli_given |= G_EP_OVERLAP; break;
    case K_GRAD_BF16: c->work.stack.grad_bf16 = true; cli_given |= G_GRAD_BF16; break;
    case K_CAPACITY_FACTOR:
        /* 0 is dropless; a factor caps each expert at factor x its fair share of the tokens */
        st = parse_num(o->name, v, 0, 1000, &c->work.stack.moe_capacity_factor, err);
        cli_given |= G_CAPACITY;
        break;
    case K_MAX_MEM_FRAC: st = parse_num(o->name, v, 0.05, 1, &cli_max_mem_frac, err); break;
    case K_MOE_IMBALANCE:
        st = parse_num(o->name, v, 1, 100000, &c->work.stack.moe_imbalance, err);
        cli_given |= G_IMBALANCE;
        break;
    case K_LAYERS: st = parse_int(o->name, v, 1, 1000000, &mo->layers, err); break;
    case K_HIDDEN: st = parse_int(o->name, v, 1, MAX_DIM, &mo->hidden, err); break;
    case K_HEADS: st = parse_int(o->name, v, 1, 1000000, &mo->heads, err); break;
    case K_KV_HEADS: st = parse_int(o->name, v, 1, 1000000, &mo->kv_heads, err); break;
    case K_FFN: st = parse_int(o->name, v, 1, MAX_DIM, &mo->ffn, err); break;
    case K_VOCAB: st = parse_int(o->name, v, 1, MAX_DIM, &mo->vocab, err); break;
    case K_SEQ: st = parse_int(o->name, v, 1, MAX_DIM, &mo->seq, err); break;
    case K_SWIGLU: mo->act = PP_ACT_SWIGLU; break;
    case K_GELU: mo->act = PP_ACT_GELU; break;
    case K_UNTIED: mo->tied = 0; break;
    case K_TIED: mo->tied = 1; break;
    case K_RMSNORM: mo->norm = PP_NORM_RMSNORM; break;
    case K_LAYERNORM: mo->norm = PP_NORM_LAYERNORM; break;
    case K_NO_BIAS: mo->bias = 0; break;
    case K_EXPERTS: st = parse_int(o->name, v, 1, 100000, &mo->experts, err); break;
    case K_TOPK: st = parse_int(o->name, v, 1, 100000, &mo->topk, err); break;
    case K_TP: st = parse_int(o->name, v, 1, 1000000, &l->tp, err); c->fixed |= PP_FIX_TP; break;
    case K_PP: st = parse_int(o->name, v, 1, 1000000, &l->pp, err); c->fixed |= PP_FIX_PP; break;
    case K_DP: st = parse_int(o->name, v, 1, MAX_GPUS, &l->dp, err); c->fixed |= PP_FIX_DP; break;
    case K_VPP: st = parse_int(o->name, v, 1, 1000000, &l->vpp, err); c->fixed |= PP_FIX_VPP; break;
    case K_CP: st = parse_int(o->name, v, 1, 1000000, &l->cp, err); c->fixed |= PP_FIX_CP; break;
    case K_EP: st = parse_int(o->name, v, 1, 1000000, &l->ep, err); c->fixed |= PP_FIX_EP; break;
    case K_ETP: st = parse_int(o->name, v, 1, 1000000, &l->etp, err); c->fixed |= PP_FIX_ETP; break;
    case K_MBS: st = parse_int(o->name, v, 1, 1000000, &l->mbs, err); c->fixed |= PP_FIX_MBS; break;
    case K_ZERO:
        st = parse_enum(o->name, v, zero_names, 4, &l->zero, err);
        c->fixed |= PP_FIX_ZERO;
        break;
    case K_DIST_OPT: l->dist_opt = true; c->fixed |= PP_FIX_DIST_OPT; break;
    case K_SP: l->sp = true; c->fixed |= PP_FIX_SP; break;
    case K_RECOMPUTE:
        st = parse_enum(o->name, v, pp_recompute_names, PP_RC_COUNT, &e, err);
        l->recompute = (pp_recompute)e;
        c->fixed |= PP_FIX_RECOMPUTE;
        break;
    case K_RECOMPUTE_LAYERS:
        st = parse_int(o->name, v, 0, 1000000, &l->recompute_layers, err);
        cli_given |= G_RECOMPUTE_LAYERS;
        break;
    case K_RECOMPUTE_MODULES: {
        /* A comma-separated list of Megatron's --recompute-modules names. */
        char buf[256];
        if (strlen(v) >= sizeof buf || !v[0]) {
            st = pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s expects a list of modules", o->name);
            break;
        }
        snprintf(buf, sizeof buf, "%s", v);
        l->recompute_modules = 0;
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && !st; tok = strtok_r(NULL, ",", &save)) {
            st = parse_enum(o->name, tok, pp_rc_module_names, PP_RCM_COUNT, &e, err);
            if (!st) l->recompute_modules |= 1u << e;
        }
        break;
    }
    case K_OFFLOAD:
        st = parse_enum(o->name, v, pp_offload_names, PP_OFF_COUNT, &e, err);
        l->offload = (pp_offload)e;
        c->fixed |= PP_FIX_OFFLOAD;
        break;
    case K_TOP: st = parse_int(o->name, v, 1, 100000, &c->top, err); break;
    case K_PROBE: st = parse_int(o->name, v, 1, 1000, &c->probe_k, err); break;
    case K_PROBE_BUDGET: st = parse_num(o->name, v, 1, 86400, &c->probe_budget_s, err); break;
    case K_FORMAT: c->format = v; break;
    case K_EMIT: c->emit = v; break;
    case K_OUTPUT: c->output = v; break;
    case K_REPORT: c->report = v; break;
    case K_STAGES:
        if (strcmp(v, "uniform") && strcmp(v, "ilp") && strcmp(v, "auto"))
            st = pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--stages expects uniform|ilp|auto, got '%s'", v);
        c->stages = v;
        break;
    case K_DUMP_ILP: c->dump_ilp = v; break;
    case K_TOKENS: st = parse_num(o->name, v, 1, 1e18, &c->tokens, err); break;
    case K_PRICE: st = parse_num(o->name, v, 0, 1e6, &c->price_per_gpu_hour, err); break;
    case K_CROSS_NODE_TP: c->allow_cross_node_tp = true; break;
    case K_LAUNCH_TARGET: c->launch_target = v; break;
    case K_TRAIN_ITERS: st = parse_int(o->name, v, 1, 1000000000, &c->train_iters, err); break;
    case K_FIT: c->fit = v; break;
    case K_PROBE_CACHE: c->probe_cache = v; break;
    case K_OPTIMIZER_IMPL:
        st = parse_enum(o->name, v, pp_adam_impl_names, PP_ADAM_COUNT, &e, err);
        c->work.stack.optimizer_impl = (pp_adam_impl)e;
        optimizer_impl_given = true;
        break;
    case K_REPLICATE: st = parse_int(o->name, v, 1, MAX_GPUS, &l->replicate, err); break;
    }
    if (st == PP_OK && o->kind == OPT_STR && (!v || !*v))
        st = pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s needs a non-empty value", o->name);
    return st;
}

pp_status pp_cli_parse(pp_cli *c, const char *cmd, int argc, char **argv, pp_error *err)
{
    const char *argv0 = c->argv0;
    memset(c, 0, sizeof *c);
    memset(&cli_over, 0, sizeof cli_over);
    cli_over.act = cli_over.norm = cli_over.tied = cli_over.bias = -1;
    cli_gpus_per_node = 0;
    cli_given = 0;
    cli_dropout = cli_attn_dropout = cli_hidden_dropout = 0;
    optimizer_impl_given = false;
    c->argv0 = argv0;
    c->cmd = cmd;
    c->top = 5;
    c->work.framework = PP_FW_MEGATRON;
    c->work.attention = PP_ATTN_FLASH;
    pp_stack_init(&c->work.stack);
    pp_layout_init(&c->layout);
    unsigned bit = cmd_bit(cmd);
    c->pos = calloc((size_t)argc + 1, sizeof *c->pos);
    if (!c->pos) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");

    bool only_pos = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || strcmp(a, "-") == 0) {
            c->pos[c->npos++] = argv[i];
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_pos = true;
            continue;
        }
        /* --flag=value or --flag value; -o value */
        char name[64];
        const char *val = NULL;
        const char *eq = strchr(a, '=');
        size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
        if (nlen >= sizeof name)
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "unknown option '%.40s...'", a);
        memcpy(name, a, nlen);
        name[nlen] = 0;
        if (eq) val = eq + 1;
        const opt_def *o = NULL;
        for (size_t k = 0; k < N_OPTS; k++) {
            const opt_def *d = &opt_table[k];
            if (strcmp(d->name, name) == 0 ||
                (d->short_name && name[0] == '-' && name[1] == d->short_name && name[2] == 0)) {
                o = d;
                break;
            }
        }
        if (!o)
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "unknown option '%s' for '%s' (see parplan %s --help)",
                                name, cmd, cmd);
        if (!(o->cmds & bit))
            return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "option %s does not apply to '%s'", o->name, cmd);
        if (o->kind == OPT_FLAG) {
            if (val)
                return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "option %s takes no value", o->name);
        } else if (!val) {
            if (i + 1 >= argc)
                return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "option %s needs a value", o->name);
            val = argv[++i];
        }
        pp_status st = apply_opt(c, o, val, err);
        if (st != PP_OK) return st;
    }
    return PP_OK;
}

void pp_cli_usage_options(FILE *f, const char *cmd)
{
    unsigned bit = cmd_bit(cmd);
    for (size_t k = 0; k < N_OPTS; k++) {
        const opt_def *d = &opt_table[k];
        if (!(d->cmds & bit)) continue;
        char left[64];
        if (d->short_name)
            snprintf(left, sizeof left, "-%c, %s", d->short_name, d->name);
        else
            snprintf(left, sizeof left, "    %s", d->name);
        fprintf(f, "  %-26s %s\n", left, d->help);
    }
}

pp_status pp_cli_catalog(pp_cli *c, pp_error *err)
{
    if (c->cat.n_models || c->cat.n_gpus) return PP_OK;
    char dir[1024];
    pp_status st = pp_catalog_find_dir(c->argv0, dir, sizeof dir, err);
    if (st != PP_OK && !getenv("PARPLAN_MODELS_DIR")) {
        /* Not beside the binary: the configured install datadir, then (for a build tree outside
         * the checkout) the source tree this binary was configured from. */
        const char *fallback[] = {PP_DATADIR "/models.d", PP_SOURCE_DIR "/models.d"};
        for (size_t i = 0; i < sizeof fallback / sizeof fallback[0] && st != PP_OK; i++)
            if (access(fallback[i], R_OK) == 0) {
                snprintf(dir, sizeof dir, "%s", fallback[i]);
                st = PP_OK;
            }
    }
    if (st != PP_OK) return st;
    return pp_catalog_load(&c->cat, dir, err);
}

static void apply_overrides(pp_model *m)
{
    const model_overrides *o = &cli_over;
    if (o->layers) m->layers = o->layers;
    if (o->hidden) {
        m->hidden = o->hidden;
        m->head_dim = 0; /* re-derived from hidden / heads */
    }
    if (o->heads) {
        if (m->kv_heads == m->heads && !o->kv_heads) m->kv_heads = o->heads;
        m->heads = o->heads;
        m->head_dim = 0;
    }
    if (o->kv_heads) m->kv_heads = o->kv_heads;
    if (o->ffn) m->ffn = o->ffn;
    if (o->vocab) m->vocab = o->vocab;
    if (o->seq) m->seq = o->seq;
    if (o->experts) m->experts = o->experts;
    if (o->topk) m->topk = o->topk;
    if (o->act >= 0) {
        if ((pp_act)o->act != m->act && !o->ffn) m->ffn = 0; /* default for the new MLP */
        m->act = (pp_act)o->act;
    }
    if (o->norm >= 0) m->norm = (pp_norm)o->norm;
    if (o->tied >= 0) m->tied = o->tied;
    if (o->bias >= 0) m->bias = o->bias;
}

static bool any_override(void)
{
    const model_overrides *o = &cli_over;
    return o->layers || o->hidden || o->heads || o->kv_heads || o->ffn || o->vocab || o->seq ||
           o->experts || o->topk || o->act >= 0 || o->norm >= 0 || o->tied >= 0 || o->bias >= 0;
}

/* --megatron-args: read the file once into c->margs. */
static pp_status margs_load(pp_cli *c, pp_error *err)
{
    pp_margs a;
    pp_status st = pp_margs_load(&a, c->megatron_args, err);
    if (st) return st;
    c->margs = calloc(1, sizeof *c->margs);
    if (!c->margs) {
        pp_margs_free(&a);
        return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    st = pp_margs_read(&a, c->margs, err);
    pp_margs_free(&a);
    return st;
}

/* The file's layout with the layout flags given beside it on top. */
static void margs_layout(pp_cli *c)
{
    pp_margs_config *mc = c->margs;
    pp_layout cl = c->layout;
    pp_layout *l = &c->layout;
    *l = pp_margs_config_layout(mc);
    unsigned f = c->fixed;
    if (f & PP_FIX_TP) l->tp = cl.tp;
    if (f & PP_FIX_PP) l->pp = cl.pp;
    if (f & PP_FIX_DP) l->dp = cl.dp;
    if (f & PP_FIX_VPP) l->vpp = cl.vpp;
    if (f & PP_FIX_CP) l->cp = cl.cp;
    if (f & PP_FIX_EP) l->ep = cl.ep;
    if (f & PP_FIX_ETP) l->etp = cl.etp;
    if (f & PP_FIX_MBS) l->mbs = cl.mbs;
    if (f & PP_FIX_ZERO) l->zero = cl.zero;
    if (f & PP_FIX_DIST_OPT) l->dist_opt = cl.dist_opt;
    if (f & PP_FIX_SP) l->sp = cl.sp;
    if (f & PP_FIX_RECOMPUTE) l->recompute = cl.recompute;
    if (f & PP_FIX_OFFLOAD) l->offload = cl.offload;
    if (cli_given & G_RECOMPUTE_LAYERS) l->recompute_layers = cl.recompute_layers;
    if (l->recompute != PP_RC_FULL) l->recompute_layers = 0;
    /* the file's uneven stages hold while its pipeline and recompute do */
    if (l->stage_layers && (f & (PP_FIX_PP | PP_FIX_VPP | PP_FIX_RECOMPUTE) || (cli_given & G_RECOMPUTE_LAYERS)))
        l->stage_layers = l->stage_recompute = NULL;
}

/* The file's stack with the stack flags given beside it on top. */
static void margs_stack(pp_cli *c)
{
    pp_stack cs = c->work.stack;
    pp_stack *s = &c->work.stack;
    *s = c->margs->stack;
    if (cli_given & G_PRECISION) s->precision = cs.precision;
    if (cli_given & G_NO_OVERLAP) s->no_overlap = true;
    if (cli_given & G_TP_COMM) s->tp_comm_overlap = true;
    if (cli_given & G_IMPL) s->impl = cs.impl, s->impl_given = true;
    if (cli_given & G_DISPATCH) s->dispatcher = cs.dispatcher;
    if (cli_given & G_GROUPED) s->grouped_gemm = true;
    if (cli_given & G_CAPACITY) s->moe_capacity_factor = cs.moe_capacity_factor;
    if (cli_given & G_IMBALANCE) s->moe_imbalance = cs.moe_imbalance;
    if (cli_given & G_EP_OVERLAP) s->ep_overlap = true;
    if (cli_given & G_GRAD_BF16) s->grad_bf16 = true;
    /* --framework deepspeed|fsdp over a Megatron file: Megatron's implementation and its TE
     * userbuffers do not carry over (a conversion, not a contradiction) */
    if ((cli_given & G_FRAMEWORK) && c->work.framework != PP_FW_MEGATRON) {
        if (!(cli_given & G_IMPL)) s->impl_given = false, s->impl = PP_IMPL_TE;
        if (!(cli_given & G_TP_COMM)) s->tp_comm_overlap = false;
    }
}

pp_status pp_cli_work(pp_cli *c, bool needs_layout, pp_error *err)
{
    pp_status st = pp_cli_catalog(c, err);
    if (st != PP_OK) return st;
    pp_work *w = &c->work;
    if (c->megatron_args && !c->margs) {
        st = margs_load(c, err);
        if (st != PP_OK) return st;
    }
    pp_margs_config *mc = c->margs;
    if (c->model_arg) {
        st = pp_model_resolve(&w->model, &c->cat, c->model_arg, err);
        if (st != PP_OK) return st;
    } else if (mc) {
        w->model = mc->model;
        if (mc->need_vocab && !cli_over.vocab)
            return pp_error_set(err, PP_ERR_INPUT, c->megatron_args, 0, 0,
                                "the Megatron arguments do not give the vocabulary (the script's tokenizer does): "
                                "give --vocab N");
    } else if (cli_over.layers && cli_over.hidden && cli_over.heads && cli_over.vocab && cli_over.seq) {
        /* An inline model: all shape flags given, GPT defaults for the rest. */
        pp_model_init(&w->model);
        snprintf(w->model.name, sizeof w->model.name, "inline");
        w->model.bias = true;
        w->model.tied = true;
    } else {
        return pp_error_set(err, PP_ERR_INPUT, 0, 0, 0,
                            "--model is required (or all of --layers --hidden --heads --vocab --seq, or --megatron-args)");
    }
    /* A config.json's max_position_embeddings is the longest context the model serves (DeepSeek-V3:
     * 163840, after YaRN extension), rarely the length it is trained at; the loader takes it since the
     * file gives no other, and a silent 160K sequence would read as out of memory everywhere. */
    if (c->model_arg && !cli_over.seq && !c->quiet && w->model.seq > 8192 &&
        !strncmp(w->model.source, "Hugging Face config.json", 24))
        fprintf(stderr, "parplan: warning: sequence length %lld is the config.json's longest context "
                        "(max_position_embeddings), not a training length: --seq N sets the one you train at\n",
                (long long)w->model.seq);
    if (any_override()) {
        apply_overrides(&w->model);
        st = pp_model_validate(&w->model, err);
        if (st != PP_OK) {
            snprintf(err->file, sizeof err->file, "%s", ""); /* about the flags, not the file */
            err->line = err->col = 0;
            return st;
        }
    }
    if (!pp_model_is_moe(&w->model) && (cli_given & (G_DISPATCH | G_GROUPED | G_CAPACITY | G_IMBALANCE | G_EP_OVERLAP)))
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s needs a model with experts (model %s has none)",
                            cli_given & G_DISPATCH ? "--moe-dispatcher" : cli_given & G_GROUPED ? "--moe-grouped-gemm"
                            : cli_given & G_CAPACITY ? "--capacity-factor" : cli_given & G_EP_OVERLAP ? "--ep-overlap"
                            : "--moe-imbalance", w->model.name);
    if (!c->gpu_arg) return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "--gpu is required (see parplan models)");
    st = pp_gpu_resolve(&w->gpu, &c->cat, c->gpu_arg, err);
    if (st != PP_OK) return st;
    /* --max-mem-frac: room the user keeps (another process, fragmentation the model does not
     * track); every fits verdict, the search's pruning and the printed capacity use the reduced
     * figure. */
    if (cli_max_mem_frac > 0) w->gpu.memory_bytes *= cli_max_mem_frac;
    if (mc) margs_layout(c);
    pp_layout *l = &c->layout;
    if (!w->gpus && mc) {
        /* the log's world size, the launcher's GPU count, or the log's data-parallel size */
        if (mc->has & PP_MARGS_HAS_WORLD) w->gpus = mc->world_size;
        else if (mc->has & PP_MARGS_HAS_DP) w->gpus = l->tp * l->pp * l->cp * mc->dp;
    }
    if (!w->gpus)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, mc ? "--gpus is required: the Megatron arguments do not say "
                                                                "how many GPUs (no world size, no torchrun --nproc-per-node)"
                                                              : "--gpus is required");
    w->gpus_per_node = cli_gpus_per_node ? cli_gpus_per_node
                       : mc && (mc->has & PP_MARGS_HAS_GPN) ? mc->gpus_per_node : w->gpu.gpus_per_node;
    if (w->gpus_per_node < 1) w->gpus_per_node = 8;
    if (w->gpus > w->gpus_per_node && w->gpus % w->gpus_per_node)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "--gpus %lld is not a whole number of nodes of %lld (--gpus-per-node)",
                            (long long)w->gpus, (long long)w->gpus_per_node);
    if (w->gpus < w->gpus_per_node) w->gpus_per_node = w->gpus;
    int64_t mp = l->tp * l->pp * l->cp;
    int64_t dp = l->dp > 0 ? l->dp : mp > 0 && w->gpus % mp == 0 ? w->gpus / mp : 0;
    if (!w->gbs && mc) w->gbs = mc->gbs > 0 ? mc->gbs : l->mbs * (dp > 0 ? dp : 1); /* Megatron's default */
    if (!w->gbs) w->gbs = w->model.gbs ? w->model.gbs : 1024;
    if (mc) {
        if (!(cli_given & G_FRAMEWORK)) w->framework = mc->framework;
        if (!(cli_given & G_ATTENTION)) w->attention = mc->attention;
        margs_stack(c);
        if (!(cli_given & G_NO_OVERLAP)) {
            pp_layout t = *l;
            t.dp = dp;
            pp_margs_config_overlap(mc, &t);
            w->stack.no_overlap = mc->stack.no_overlap;
        }
    }
    /* dropout: the specific flags over --dropout over the file's (or the model's) */
    if (cli_given & (G_DROPOUT | G_ATTN_DROPOUT | G_HIDDEN_DROPOUT)) {
        double a = 0, h = 0;
        pp_work_dropout(w, &a, &h);
        if (cli_given & G_DROPOUT) a = h = cli_dropout;
        if (cli_given & G_ATTN_DROPOUT) a = cli_attn_dropout;
        if (cli_given & G_HIDDEN_DROPOUT) h = cli_hidden_dropout;
        w->stack.attention_dropout = a;
        w->stack.hidden_dropout = h;
        w->stack.dropout_given = true;
    }
    st = pp_stack_check(w, err);
    if (st != PP_OK) return st;
    if (optimizer_impl_given && w->framework != PP_FW_FSDP)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "--optimizer-impl is torch AdamW's implementation under --framework fsdp, not %s",
                            pp_framework_names[w->framework]);
    pp_stack_resolve(w);
    if (c->profile_arg) {
        st = pp_profile_load_file(&c->profile, c->profile_arg, err);
        if (st != PP_OK) return st;
        c->have_profile = true;
        w->profile = &c->profile;
    }
    if (needs_layout) {
        st = pp_layout_validate(w, &c->layout, err);
        if (st != PP_OK) return st;
    }
    /* what the file sets that parplan does not model: one line, never dropped */
    if (mc && !c->quiet && (mc->unmodelled[0] || mc->overlap_note[0]))
        fprintf(stderr, "parplan: warning: %s: not modelled (they change memory or time): %s%s%s\n", c->megatron_args,
                mc->unmodelled, mc->unmodelled[0] && mc->overlap_note[0] ? "; " : "", mc->overlap_note);
    return PP_OK;
}

void pp_cli_stack_line(FILE *f, const pp_cli *c)
{
    char buf[512];
    pp_stack_describe(&c->work, buf, sizeof buf);
    fprintf(f, "%s", buf);
    if (c->margs) fprintf(f, " (from %s%s)", c->megatron_args, c->margs->unmodelled[0] ? ", with unmodelled arguments" : "");
    fprintf(f, "\n");
}

void pp_cli_stack_json(pp_json *j, const pp_cli *c)
{
    const pp_work *w = &c->work;
    const pp_stack *s = &w->stack;
    char buf[512];
    pp_json_key(j, "stack");
    pp_json_obj_begin(j);
    pp_json_kstr(j, "precision", pp_precision_names[s->precision]);
    pp_json_kstr(j, "framework", pp_framework_names[w->framework]);
    pp_json_key(j, "impl");
    if (w->framework == PP_FW_MEGATRON) pp_json_str(j, pp_impl_names[s->impl]);
    else pp_json_null(j);
    pp_json_kstr(j, "attention", pp_attention_names[w->attention]);
    pp_json_knum(j, "attention_dropout", s->attention_dropout);
    pp_json_knum(j, "hidden_dropout", s->hidden_dropout);
    pp_json_kstr(j, "dropout_source", s->dropout_given ? "given" : w->model.dropout_set ? "model" : "assumed");
    pp_json_kbool(j, "overlap", !s->no_overlap);
    pp_json_kbool(j, "tp_comm_overlap", s->tp_comm_overlap);
    pp_json_kbool(j, "grad_reduce_bf16", s->grad_bf16);
    pp_json_kbool(j, "ep_overlap", s->ep_overlap);
    if (pp_model_is_moe(&w->model)) {
        pp_json_kstr(j, "moe_dispatcher", pp_dispatch_names[s->dispatcher]);
        pp_json_kbool(j, "moe_grouped_gemm", s->grouped_gemm);
        pp_json_knum(j, "capacity_factor", s->moe_capacity_factor);
        pp_json_knum(j, "moe_imbalance", s->moe_imbalance);
    }
    pp_stack_describe(w, buf, sizeof buf);
    pp_json_kstr(j, "describe", buf);
    pp_json_obj_end(j);
    if (c->margs) {
        pp_json_key(j, "megatron_args");
        pp_json_obj_begin(j);
        pp_json_kstr(j, "file", c->megatron_args);
        pp_json_kstr(j, "unmodelled", c->margs->unmodelled);
        pp_json_kstr(j, "overlap_note", c->margs->overlap_note);
        pp_json_obj_end(j);
    }
}

void pp_cli_free(pp_cli *c)
{
    if (!c) return;
    pp_catalog_free(&c->cat);
    if (c->have_profile) pp_profile_free(&c->profile);
    free(c->margs);
    c->margs = NULL;
    free(c->pos);
    c->pos = NULL;
}

int pp_cli_fail(const pp_error *err)
{
    char buf[1200];
    if (err->file[0] && err->line > 0) {
        /* file:line:col: message */
        pp_error_format(err, buf, sizeof buf);
        fprintf(stderr, "parplan: %s\n", buf);
    } else if (err->file[0]) {
        fprintf(stderr, "parplan: %s (%s)\n", err->msg, err->file);
    } else {
        fprintf(stderr, "parplan: %s\n", err->msg);
    }
    return err->status == PP_ERR_INPUT ? 2 : 1;
}

const char *pp_fmt_bytes(double bytes, char *buf, size_t n)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int i = 0;
    double v = bytes;
    while (fabs(v) >= 1024 && i < 5) {
        v /= 1024;
        i++;
    }
    if (!isfinite(v)) snprintf(buf, n, "?");
    else snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
    return buf;
}
