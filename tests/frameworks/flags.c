/* Validation: every Megatron-LM flag that parplan emits is one that Megatron-LM's parser
 * accepts. The option list (tests/data/megatron_flags.txt) is extracted from the Megatron-LM
 * snapshot by tools/launch/extract_megatron_flags.py (and cross-checked against the real
 * argparse parser on the GPU machine: tests/data/launch/). For each of the layouts below
 * (models x formats x targets) the generated script is parsed: every --flag of every *_ARGS
 * array must be in the list, appear once, and carry the layout's values; the script must pass
 * `bash -n`. The flags that define the model beyond its shape (norm epsilon, RoPE base and scaling,
 * the router: pp.h) are read back by parplan's reader of Megatron arguments and must give the
 * model's values, and each of them must have been written by some layout. Prints one line per
 * layout and the count of unknown flags (must be 0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pp_pipeline.h"
#include "tap.h"
#include "fixtures.h"
#include "pp_margs.h"

typedef struct {
    const char *model;
    int64_t gpus, gpn, gbs;
    int64_t tp, pp, vpp, cp, ep, mbs;
    bool dist_opt, sp;
    pp_recompute rc;
    int64_t rc_layers;
    pp_offload offload;
    pp_attention attention;
    pp_launch_target target;
    pp_launch_format fmt;
    int stages[8];   /* ILP stage layers (0: uniform) */
    int stage_rc[8]; /* ILP per-stage recompute */
    /* the training stack (zero: bf16, TE, overlap, dropless alltoall) */
    pp_precision prec;
    bool no_overlap, tp_comm_overlap, grouped_gemm;
    double capacity;
    int64_t etp;
} fx_case;

#define STD PP_TARGET_STANDARD
#define LOC PP_TARGET_DEVICE_LOCAL
#define MEG PP_LAUNCH_MEGATRON
#define TRN PP_LAUNCH_TORCHRUN
#define SLM PP_LAUNCH_SLURM
#define FL PP_ATTN_FLASH
#define UN PP_ATTN_UNFUSED

static const fx_case cases[] = {
    /* model            gpus gpn  gbs  tp pp vpp cp ep mbs dopt  sp    recompute    k  offload */
    {"gpt3-1.3b",         2,  2,   16,  1, 1, 1, 1, 1, 4, false, false, PP_RC_NONE, 0, PP_OFF_NONE, UN, LOC, MEG, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"gpt3-1.3b",         2,  2,   16,  2, 1, 1, 1, 1, 4, false, false, PP_RC_NONE, 0, PP_OFF_NONE, UN, LOC, MEG, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"gpt3-1.3b",         2,  2,   16,  1, 2, 1, 1, 1, 2, false, false, PP_RC_NONE, 0, PP_OFF_NONE, UN, LOC, MEG, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"tinyllama-1.1b",    2,  2,   16,  2, 1, 1, 1, 1, 2, true,  false, PP_RC_SELECTIVE, 0, PP_OFF_NONE, UN, LOC, MEG, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"tinyllama-1.1b",    2,  2,   16,  1, 2, 1, 1, 1, 2, true,  false, PP_RC_FULL, 0, PP_OFF_NONE, UN, LOC, MEG, {12, 10}, {2, 0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"llama2-7b",         8,  8,   64,  2, 2, 1, 1, 1, 1, true,  true,  PP_RC_SELECTIVE, 0, PP_OFF_NONE, FL, STD, MEG, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"llama2-70b",       64,  8,  128,  8, 4, 5, 1, 1, 1, true,  true,  PP_RC_FULL, 0, PP_OFF_NONE, FL, STD, SLM, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"llama2-70b",       64,  8,  128,  8, 4, 1, 1, 1, 1, true,  true,  PP_RC_FULL, 0, PP_OFF_NONE, FL, STD, TRN, {22, 20, 20, 18}, {4, 2, 0, 0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"llama3-8b",        16,  8,   64,  2, 1, 1, 2, 1, 1, true,  true,  PP_RC_NONE, 0, PP_OFF_NONE, FL, STD, MEG, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"mixtral-8x7b",     16,  8,   64,  2, 2, 1, 1, 4, 1, true,  true,  PP_RC_SELECTIVE, 0, PP_OFF_NONE, FL, STD, SLM, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"gpt3-175b",      1024,  8, 1536,  8, 16, 2, 1, 1, 1, true, true,  PP_RC_SELECTIVE, 0, PP_OFF_NONE, FL, STD, SLM, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"gpt3-13b",         16,  8,  256,  4, 2, 1, 1, 1, 2, false, true,  PP_RC_FULL, 5, PP_OFF_NONE, FL, STD, MEG, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"gpt3-13b",         12,  4,   32,  4, 3, 1, 1, 1, 1, true,  false, PP_RC_NONE, 0, PP_OFF_NONE, FL, STD, TRN, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"llama2-7b",         8,  8,   64,  1, 1, 1, 1, 1, 1, true,  false, PP_RC_NONE, 0, PP_OFF_OPTIMIZER, FL, STD, MEG, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"gpt3-1.3b",         8,  8,  256,  1, 1, 1, 1, 1, 4, false, false, PP_RC_NONE, 0, PP_OFF_NONE, UN, STD, TRN, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"llama3-8b",         2,  2,    8,  2, 1, 1, 1, 1, 1, true,  false, PP_RC_SELECTIVE, 0, PP_OFF_NONE, UN, LOC, TRN, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"gpt3-1.3b",         2,  2,    8,  1, 2, 2, 1, 1, 1, false, false, PP_RC_NONE, 0, PP_OFF_NONE, UN, LOC, SLM, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"llama2-70b",       16,  8,   64,  8, 2, 2, 1, 1, 1, true,  true,  PP_RC_FULL, 0, PP_OFF_NONE, FL, STD, MEG, {42, 38}, {6, 2}, PP_PREC_BF16, false, false, false, 0, 0},
    {"gpt-tiny",          1,  1,    4,  1, 1, 1, 1, 1, 1, false, false, PP_RC_NONE, 0, PP_OFF_NONE, FL, LOC, MEG, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"mixtral-8x7b",      8,  8,   64,  1, 1, 1, 1, 8, 1, true,  false, PP_RC_NONE, 0, PP_OFF_NONE, FL, STD, TRN, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"llama2-7b",         8,  8,   64,  2, 2, 2, 1, 1, 1, true,  true,  PP_RC_FULL, 8, PP_OFF_NONE, FL, STD, SLM, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"gpt3-175b",       384,  8, 1536,  8, 12, 1, 1, 1, 2, true, true,  PP_RC_FULL, 0, PP_OFF_NONE, FL, STD, MEG, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"llama3-8b",         4,  4,   64,  1, 1, 1, 1, 1, 2, false, false, PP_RC_NONE, 0, PP_OFF_NONE, FL, STD, TRN, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"gpt3-13b",         16,  8,  512,  2, 4, 1, 1, 1, 1, true,  false, PP_RC_NONE, 0, PP_OFF_NONE, UN, LOC, MEG, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    {"tinyllama-1.1b",   32,  8,  256,  1, 2, 1, 4, 1, 1, true,  false, PP_RC_FULL, 3, PP_OFF_NONE, FL, STD, SLM, {0}, {0}, PP_PREC_BF16, false, false, false, 0, 0},
    /* MoE, MLA, QK-norm, windows, FP8, fp16 and the overlap switches (the training stack as input) */
    {"deepseek-v2-lite", 32,  8,  256,  2, 1, 1, 1, 8, 1, true,  true,  PP_RC_SELECTIVE, 0, PP_OFF_NONE, FL, STD, MEG, {0}, {0},
     PP_PREC_FP8, false, true, true, 1.25, 1},
    {"qwen3-30b-a3b",    64,  8,  512,  2, 4, 3, 1, 8, 1, true,  true,  PP_RC_NONE, 0, PP_OFF_NONE, FL, STD, TRN, {0}, {0},
     PP_PREC_BF16, true, false, false, 0, 1},
    /* Blackwell block-scaled recipes: --fp8-recipe mxfp8, --fp4-format e2m1 --fp4-recipe nvfp4 */
    {"llama3-8b",        16,  8,   64,  2, 1, 1, 1, 1, 1, true,  true,  PP_RC_NONE, 0, PP_OFF_NONE, FL, STD, MEG, {0}, {0},
     PP_PREC_MXFP8, false, false, false, 0, 0},
    {"llama3-8b",        16,  8,   64,  2, 1, 1, 1, 1, 1, true,  true,  PP_RC_SELECTIVE, 0, PP_OFF_NONE, FL, STD, SLM, {0}, {0},
     PP_PREC_NVFP4, false, false, false, 0, 0},
    {"mixtral-8x7b",     16,  8,   64,  1, 2, 1, 1, 8, 1, true,  false, PP_RC_FULL, 0, PP_OFF_NONE, UN, LOC, MEG, {0}, {0},
     PP_PREC_BF16, false, false, false, 0, 0},
    {"window-7b",         8,  8,   64,  2, 1, 1, 1, 1, 1, true,  true,  PP_RC_NONE, 0, PP_OFF_NONE, FL, STD, SLM, {0}, {0},
     PP_PREC_FP16, false, false, false, 0, 0},
    {"gpt3-13b",         16,  8,  256,  4, 4, 2, 1, 1, 1, true,  true,  PP_RC_SELECTIVE, 0, PP_OFF_NONE, FL, STD, MEG, {0}, {0},
     PP_PREC_BF16, true, true, false, 0, 0},
    /* what defines the model beyond its shape: llama3 RoPE scaling; MLA YaRN with a sigmoid router in
     * groups and the expert bias (grouped GEMM on the standard target); YaRN, sinks, windows and
     * linear biases (expert TP 1); a top-1 Switch-style router with z-loss, a gated shared expert and
     * linear RoPE scaling */
    {"llama3.1-8b",       8,  8,   64,  2, 1, 1, 1, 1, 1, true,  true,  PP_RC_NONE, 0, PP_OFF_NONE, FL, STD, MEG, {0}, {0},
     PP_PREC_BF16, false, false, false, 0, 0},
    {"deepseek-v3",     256,  8, 1024,  1, 8, 1, 1, 32, 1, true, false, PP_RC_SELECTIVE, 0, PP_OFF_NONE, FL, STD, MEG, {0}, {0},
     PP_PREC_BF16, false, false, true, 0, 1},
    {"gpt-oss-20b",       8,  8,   64,  1, 1, 1, 1, 8, 1, true,  false, PP_RC_NONE, 0, PP_OFF_NONE, FL, STD, TRN, {0}, {0},
     PP_PREC_BF16, false, false, true, 0, 1},
    {"moe-zloss-1b",     16,  8,  128,  2, 1, 1, 1, 8, 1, true,  true,  PP_RC_NONE, 0, PP_OFF_NONE, FL, STD, SLM, {0}, {0},
     PP_PREC_BF16, false, false, false, 0, 1},
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* The flags of pp.h's definition fields; each must be written by some layout above. */
static const char *const definition_flags[] = {
    "--norm-epsilon", "--max-position-embeddings", "--rotary-base", "--use-rope-scaling", "--rope-scaling-factor",
    "--rotary-seq-len-interpolation-factor", "--rope-type", "--rotary-scaling-factor", "--mscale", "--mscale-all-dim",
    "--yarn-original-max-position-embeddings", "--yarn-beta-fast", "--yarn-beta-slow",
    "--no-yarn-correction-range-round-to-int", "--moe-router-score-function", "--moe-router-pre-softmax",
    "--moe-router-topk-scaling-factor", "--moe-router-num-groups", "--moe-router-group-topk",
    "--moe-router-enable-expert-bias", "--moe-router-load-balancing-type", "--moe-aux-loss-coeff", "--moe-z-loss-coeff",
    "--moe-shared-expert-gate", "--moe-grouped-gemm", "--softmax-type", "--window-size", "--window-attn-skip-freq",
};
#define N_DEF_FLAGS (sizeof definition_flags / sizeof definition_flags[0])

/* The definition fields of the model the script gives back (parplan's reader of Megatron arguments)
 * against the model's own, defaults filled (pp_model_validate); the first difference named. */
static bool definition_same(const char *script, const pp_model *model, char *why, size_t n)
{
    pp_model want = *model;
    pp_error err = {0};
    static pp_margs_config c;
    pp_margs a;
    pp_margs_init(&a, "script");
    pp_status st = pp_model_validate(&want, &err);
    if (st == PP_OK) st = pp_margs_parse_script(&a, script, strlen(script), &err);
    if (st == PP_OK) st = pp_margs_read(&a, &c, &err);
    pp_margs_free(&a);
    if (st == PP_OK && c.need_vocab) c.model.vocab = want.vocab, st = pp_model_validate(&c.model, &err);
    if (st != PP_OK) {
        snprintf(why, n, "%s", err.msg);
        return false;
    }
    const pp_model *b = &c.model;
    why[0] = 0;
#define F(f) if (want.f != b->f) { snprintf(why, n, #f " %.17g read back %.17g", (double)want.f, (double)b->f); return false; }
    F(max_context); F(norm_eps); F(rope_theta); F(rope_scaling); F(rope_factor); F(rope_original_context);
    F(rope_low_freq); F(rope_high_freq); F(yarn_beta_fast); F(yarn_beta_slow); F(yarn_mscale); F(yarn_mscale_all_dim);
    F(yarn_no_truncate); F(router_score); F(router_raw_topk); F(router_scale); F(router_groups); F(router_group_topk);
    F(router_expert_bias); F(router_bias); F(router_balance); F(router_aux_coef); F(router_z_coef); F(shared_gate);
    F(attn_sinks); F(window); F(bias); F(mlp_bias);
#undef F
    return true;
}

static bool have_bash(void)
{
    static int have = -1;
    if (have < 0) have = system("bash -c true >/dev/null 2>&1") == 0;
    return have;
}

/* Write the script to a temporary file (and to $PARPLAN_LAUNCH_DUMP_DIR/caseNN.sh when set). */
static bool script_file(const char *script, size_t idx, char *path, size_t n)
{
    snprintf(path, n, "/tmp/parplan_launch_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return false;
    FILE *f = fdopen(fd, "w");
    fputs(script, f);
    fclose(f);
    const char *dump = getenv("PARPLAN_LAUNCH_DUMP_DIR");
    if (dump) {
        char dpath[1024];
        snprintf(dpath, sizeof dpath, "%s/case%02zu.sh", dump, idx);
        FILE *d = fopen(dpath, "w");
        if (d) {
            fputs(script, d);
            fclose(d);
        }
    }
    return true;
}

/* The arguments bash really hands to pretrain_gpt.py (tests/frameworks/capture_args.sh). */
static int capture(const char *src, const char *path, fx_args *a, long *world)
{
    char out[600], cmd[2048];
    snprintf(out, sizeof out, "%s.args", path);
    snprintf(cmd, sizeof cmd, "bash '%s/tests/frameworks/capture_args.sh' '%s' '%s' >/dev/null", src, path, out);
    memset(a, 0, sizeof *a);
    int rc = system(cmd);
    FILE *f = fopen(out, "rb");
    if (rc == 0 && f) {
        char tok[4096];
        size_t k = 0;
        int c;
        while ((c = fgetc(f)) != EOF) {
            if (c == 0) {
                tok[k] = 0;
                if (a->n < FX_MAX_TOK) a->tok[a->n++] = strdup(tok);
                k = 0;
            } else if (k < sizeof tok - 1) {
                tok[k++] = (char)c;
            }
        }
    }
    if (f) fclose(f);
    unlink(out);
    snprintf(cmd, sizeof cmd, "%s.world", out);
    f = fopen(cmd, "r");
    *world = 0;
    if (f) {
        if (fscanf(f, "%ld", world) != 1) *world = 0;
        fclose(f);
    }
    unlink(cmd);
    return rc == 0 && a->n > 0;
}

/* Check --pipeline-model-parallel-layout against the stages: Megatron's grammar and checks (the
 * one parser, pp_pipeline.h: pp*vpp segments, 'E' first, 'L' last, the MTP layers with it), and the
 * layers of every virtual stage are the layout's. */
static bool layout_ok(const char *s, const pp_work *w, const pp_layout *l)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", *s == '\'' ? s + 1 : s);
    size_t n = strlen(buf);
    if (n && buf[n - 1] == '\'') buf[n - 1] = 0;
    static int counts[PP_MAX_VSTAGES];
    int64_t vpp = 0;
    pp_error e;
    if (pp_pipeline_layout_parse(buf, l->pp, w->model.layers, w->model.mtp_layers, counts, PP_MAX_VSTAGES, &vpp, &e))
        return false;
    if (vpp != l->vpp) return false;
    for (int64_t k = 0; k < l->pp * vpp; k++)
        if (counts[k] != pp_layout_vstage_layers(w, l, k % l->pp, k / l->pp)) return false;
    return true;
}

int main(void)
{
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/megatron_flags.txt", src ? src : ".");
    fx_flags flags;
    if (fx_flags_load(&flags, path) != 0) {
        tap_ok(0, "load %s", path);
        return tap_done();
    }
    tap_ok(flags.n > 500, "Megatron flag list has %d options (%s)", flags.n, path);
    /* the list itself must know the flags the device notes say work, and not an invented one */
    const char *must[] = {"--transformer-impl", "--no-persist-layer-norm", "--no-masked-softmax-fusion",
                          "--no-gradient-accumulation-fusion", "--no-rope-fusion", "--mock-data",
                          "--tokenizer-type", "--vocab-size", "--eval-iters", "--eval-interval",
                          "--log-interval", "--log-throughput", "--bf16", "--train-iters",
                          "--sequence-parallel", "--tensor-model-parallel-size"};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        tap_ok(fx_flags_has(&flags, must[i]), "flag list has %s", must[i]);
    tap_ok(!fx_flags_has(&flags, "--tensor-parallel-size-bogus"), "flag list rejects an invented flag");
    /* the static extraction against the option list of Megatron's real parser, dumped on the GPU
     * machine by tools/launch/megatron_parse_check.py (same Megatron-LM commit) */
    fx_flags rt;
    snprintf(path, sizeof path, "%s/tests/data/launch/megatron_flags_runtime.txt", src ? src : ".");
    if (tap_ok(fx_flags_load(&rt, path) == 0, "load %s", path)) {
        int missing = 0, extra = 0;
        for (int i = 0; i < rt.n; i++) missing += !fx_flags_has(&flags, rt.names[i]);
        for (int i = 0; i < flags.n; i++) extra += !fx_flags_has(&rt, flags.names[i]);
        tap_ok(rt.n == flags.n && missing == 0 && extra == 0,
               "static list = the real parser's options (%d vs %d; %d missing, %d extra)", flags.n, rt.n,
               missing, extra);
        fx_flags_free(&rt);
    }

    int unknown_total = 0, checked_total = 0, layouts = 0;
    bool def_seen[N_DEF_FLAGS] = {false};
    bool bash_checked = false;
    for (size_t ci = 0; ci < N_CASES; ci++) {
        const fx_case *c = &cases[ci];
        pp_work w = fx_work(c->model, c->gpus, c->gpn, c->gbs);
        w.attention = c->attention;
        pp_layout l;
        pp_layout_init(&l);
        l.tp = c->tp, l.pp = c->pp, l.vpp = c->vpp, l.cp = c->cp, l.ep = c->ep, l.mbs = c->mbs;
        l.dist_opt = c->dist_opt, l.sp = c->sp, l.recompute = c->rc, l.recompute_layers = c->rc_layers;
        l.offload = c->offload;
        l.etp = c->etp;
        if (c->stages[0]) l.stage_layers = c->stages, l.stage_recompute = c->stage_rc;
        pp_stack_init(&w.stack);
        w.stack.precision = c->prec, w.stack.no_overlap = c->no_overlap, w.stack.tp_comm_overlap = c->tp_comm_overlap;
        w.stack.grouped_gemm = c->grouped_gemm, w.stack.moe_capacity_factor = c->capacity;
        pp_error err = {0};
        char name[160];
        snprintf(name, sizeof name, "#%zu %s %lldx tp%lld pp%lld vpp%lld cp%lld ep%lld %s %s", ci + 1,
                 c->model, (long long)c->gpus, (long long)c->tp, (long long)c->pp, (long long)c->vpp,
                 (long long)c->cp, (long long)c->ep, pp_launch_format_names[c->fmt],
                 pp_launch_target_names[c->target]);
        if (!tap_ok(pp_layout_validate(&w, &l, &err) == PP_OK, "%s: layout valid (%s)", name, err.msg))
            continue;
        pp_launch_params p;
        pp_launch_params_init(&p);
        p.work = &w, p.layout = &l, p.target = c->target;
        p.peak_bytes = 40e9, p.step_time_s = 1.5, p.samples_per_s = (double)c->gbs / 1.5;
        pp_status st;
        char *s = fx_render(c->fmt, &p, &err, &st);
        if (!tap_ok(st == PP_OK && s, "%s: written (%s)", name, err.msg)) {
            free(s);
            continue;
        }
        layouts++;
        fx_args a;
        fx_parse(s, &a);
        int unknown = 0, dup = 0, nflags = 0;
        for (int i = 0; i < a.n; i++) {
            if (strncmp(a.tok[i], "--", 2)) continue;
            nflags++;
            if (!fx_flags_has(&flags, a.tok[i])) {
                unknown++;
                tap_diag("%s: unknown Megatron flag %s", name, a.tok[i]);
            }
            for (int j = 0; j < i; j++)
                if (!strcmp(a.tok[j], a.tok[i])) dup++;
        }
        unknown_total += unknown;
        checked_total += nflags;
        tap_ok(unknown == 0 && nflags >= 25, "%s: %d Megatron flags, %d not in Megatron's parser",
               name, nflags, unknown);
        tap_ok(dup == 0, "%s: no flag given twice", name);
        tap_ok(a.arrays > 0 && a.arrays == a.arrays_used && strstr(a.launcher, "pretrain_gpt.py"),
               "%s: launcher passes all %d argument arrays to pretrain_gpt.py", name, a.arrays);
        tap_ok(strstr(s, "export CUDA_DEVICE_MAX_CONNECTIONS=1") != NULL, "%s: CUDA_DEVICE_MAX_CONNECTIONS=1", name);
        tap_ok(strstr(s, "parplan " PP_VERSION) && strstr(s, "predicted by parplan") &&
                   strstr(s, "37.25 GiB") && strstr(s, "step 1.5 s"),
               "%s: names the version and the predictions", name);
        bool vals = fx_int(&a, "--tensor-model-parallel-size") == l.tp &&
                    fx_int(&a, "--pipeline-model-parallel-size") == l.pp &&
                    fx_int(&a, "--context-parallel-size") == l.cp &&
                    fx_int(&a, "--micro-batch-size") == l.mbs &&
                    fx_int(&a, "--global-batch-size") == w.gbs &&
                    fx_int(&a, "--num-layers") == w.model.layers &&
                    fx_int(&a, "--hidden-size") == w.model.hidden &&
                    fx_int(&a, "--num-attention-heads") == w.model.heads &&
                    fx_int(&a, "--ffn-hidden-size") == w.model.ffn &&
                    fx_int(&a, "--seq-length") == w.model.seq &&
                    (fx_value(&a, "--sequence-parallel") != NULL) == l.sp &&
                    (fx_value(&a, "--use-distributed-optimizer") != NULL) == l.dist_opt &&
                    (fx_value(&a, "--swiglu") != NULL) == (w.model.act == PP_ACT_SWIGLU) &&
                    (fx_value(&a, "--untie-embeddings-and-output-weights") != NULL) == !w.model.tied &&
                    (fx_value(&a, "--disable-bias-linear") != NULL) == !w.model.bias &&
                    fx_value(&a, "--hidden-dropout") != NULL && fx_value(&a, "--attention-dropout") != NULL &&
                    (fx_int(&a, "--num-query-groups") == (w.model.kv_heads != w.model.heads ? w.model.kv_heads : -1));
        if (w.model.experts > 1)
            vals = vals && fx_int(&a, "--expert-model-parallel-size") == l.ep &&
                   fx_int(&a, "--num-experts") == w.model.experts &&
                   fx_int(&a, "--moe-router-topk") == w.model.topk &&
                   fx_int(&a, "--moe-ffn-hidden-size") == pp_model_expert_ffn(&w.model) &&
                   fx_int(&a, "--expert-tensor-parallel-size") == pp_layout_etp(&l) &&
                   fx_int(&a, "--moe-shared-expert-intermediate-size") == (w.model.shared_ffn ? w.model.shared_ffn : -1) &&
                   (fx_value(&a, "--moe-grouped-gemm") != NULL) == c->grouped_gemm &&
                   (fx_value(&a, "--moe-expert-capacity-factor") != NULL) == (c->capacity > 0);
        tap_ok(vals, "%s: shape, parallel sizes and batch carry the layout's values", name);
        /* the stack: precision, overlap, MLA, QK-norm, windows, and the MoE layer pattern as
         * Megatron's list expression (evaluated here by parplan's reader of that language) */
        bool stack_ok = (fx_value(&a, "--fp16") != NULL) == (c->prec == PP_PREC_FP16) &&
                        (fx_value(&a, "--bf16") != NULL) == (c->prec != PP_PREC_FP16) &&
                        (fx_value(&a, "--fp8-format") != NULL) == (c->prec == PP_PREC_FP8 || c->prec == PP_PREC_MXFP8) &&
                        (c->prec != PP_PREC_MXFP8 ||
                         (fx_value(&a, "--fp8-recipe") && !strcmp(fx_value(&a, "--fp8-recipe"), "mxfp8"))) &&
                        (fx_value(&a, "--fp4-format") != NULL) == (c->prec == PP_PREC_NVFP4) &&
                        (c->prec != PP_PREC_NVFP4 ||
                         (fx_value(&a, "--fp4-recipe") && !strcmp(fx_value(&a, "--fp4-recipe"), "nvfp4"))) &&
                        (fx_value(&a, "--tp-comm-overlap") != NULL) == c->tp_comm_overlap &&
                        (fx_value(&a, "--overlap-grad-reduce") != NULL) == (!c->no_overlap && l.dp * l.cp > 1) &&
                        (fx_value(&a, "--no-overlap-p2p-communication") != NULL) == (c->no_overlap && l.vpp > 1) &&
                        (fx_value(&a, "--multi-latent-attention") != NULL) == pp_model_is_mla(&w.model) &&
                        (fx_value(&a, "--qk-layernorm") != NULL) == (w.model.qk_norm != PP_QKNORM_NONE) &&
                        (fx_value(&a, "--window-size") != NULL) == (w.model.window > 0);
        if (pp_model_is_mla(&w.model))
            stack_ok = stack_ok && fx_int(&a, "--kv-lora-rank") == w.model.kv_lora_rank &&
                       fx_int(&a, "--qk-head-dim") == w.model.qk_nope_dim &&
                       fx_int(&a, "--qk-pos-emb-head-dim") == w.model.qk_rope_dim &&
                       fx_int(&a, "--v-head-dim") == w.model.v_head_dim && !fx_value(&a, "--kv-channels");
        const char *pats[2] = {fx_value(&a, "--moe-layer-freq"), fx_value(&a, "--window-attn-skip-freq")};
        for (int k = 0; k < 2; k++) {
            if (!pats[k]) continue;
            char expr[4096];
            snprintf(expr, sizeof expr, "%s", pats[k][0] == '\'' ? pats[k] + 1 : pats[k]);
            size_t el = strlen(expr);
            if (el && expr[el - 1] == '\'') expr[el - 1] = 0;
            int64_t v[1024], iv = 0;
            int nv = 0, col = 0;
            char msg[128];
            bool ok = pp_margs_list_expr(expr, v, 1024, &nv, &iv, &col, msg, sizeof msg) == PP_OK;
            for (int64_t i = 0; ok && i < w.model.layers; i++) {
                bool want = k == 0 ? pp_model_layer_is_moe(&w.model, i) : pp_model_layer_is_window(&w.model, i);
                bool got = nv ? i < nv && v[i] != 0 : k == 0 ? i % iv == 0 : (i + 1) % iv != 0;
                ok = want == got;
            }
            stack_ok = stack_ok && ok && (nv == 0 || nv == w.model.layers);
            if (!ok) tap_diag("%s: %s '%s' does not give the model's layers", name, k ? "--window-attn-skip-freq" : "--moe-layer-freq", expr);
        }
        tap_ok(stack_ok, "%s: the stack (%s%s%s) and the MoE/MLA/window fields as flags", name,
               pp_precision_names[c->prec], c->no_overlap ? ", no overlap" : "", c->tp_comm_overlap ? ", tp-comm-overlap" : "");
        for (size_t k = 0; k < N_DEF_FLAGS; k++) def_seen[k] |= fx_value(&a, definition_flags[k]) != NULL;
        if (c->target == STD) {
            char why[600];
            tap_ok(definition_same(s, &w.model, why, sizeof why),
                   "%s: norm epsilon, context, RoPE and router read back as the model's (%s)", name, why);
        }
        const char *lay = fx_value(&a, "--pipeline-model-parallel-layout");
        bool even = true;
        for (int64_t i = 1; i < l.pp; i++)
            if (pp_layout_stage_layers(&w, &l, i) != pp_layout_stage_layers(&w, &l, 0)) even = false;
        if (!even)
            tap_ok(lay && layout_ok(lay, &w, &l), "%s: uneven stages as --pipeline-model-parallel-layout %s",
                   name, lay ? lay : "(none)");
        else if (l.vpp > 1)
            tap_ok(fx_int(&a, "--num-layers-per-virtual-pipeline-stage") == w.model.layers / (l.pp * l.vpp),
                   "%s: interleaved, %lld layers per virtual stage", name,
                   (long long)(w.model.layers / (l.pp * l.vpp)));
        else
            tap_ok(!lay, "%s: even stages need no layout string", name);
        const char *gran = fx_value(&a, "--recompute-granularity");
        if (l.recompute == PP_RC_NONE) tap_ok(!gran, "%s: no recompute flags", name);
        else if (l.recompute == PP_RC_SELECTIVE)
            tap_ok(gran && !strcmp(gran, "selective") && !fx_value(&a, "--recompute-method"),
                   "%s: selective recompute without a method", name);
        else {
            int64_t kmax = 0;
            bool all = true;
            for (int64_t i = 0; i < l.pp; i++) {
                int64_t n = pp_layout_stage_layers(&w, &l, i);
                int64_t k = l.stage_recompute ? l.stage_recompute[i] : l.recompute_layers ? l.recompute_layers : n;
                if (k > kmax) kmax = k;
                if (k != n) all = false;
            }
            const char *meth = fx_value(&a, "--recompute-method");
            long long num = fx_int(&a, "--recompute-num-layers");
            tap_ok(gran && !strcmp(gran, "full") && meth &&
                       (all ? (!strcmp(meth, "uniform") && num == 1)
                            : (!strcmp(meth, "block") && num == (kmax + l.vpp - 1) / l.vpp)),
                   "%s: full recompute %s %lld (planned max %lld per stage)", name, meth ? meth : "-",
                   num, (long long)kmax);
        }
        bool local = c->target == LOC;
        /* --transformer-impl local on the device-local target, and on the standard one where the
         * prediction assumed Megatron's local modules (unfused attention without --impl te). */
        tap_ok((fx_value(&a, "--transformer-impl") != NULL) == (local || pp_work_impl(&w) == PP_IMPL_LOCAL) &&
                   (fx_value(&a, "--mock-data") != NULL) == local &&
                   (fx_value(&a, "--data-path") != NULL) == !local,
               "%s: %s target flags", name, pp_launch_target_names[c->target]);
        char spath[256];
        if (have_bash() && script_file(s, ci + 1, spath, sizeof spath)) {
            bash_checked = true;
            char cmd[400];
            snprintf(cmd, sizeof cmd, "bash -n '%s'", spath);
            tap_ok(system(cmd) == 0, "%s: bash -n accepts the script", name);
            fx_args r;
            long world = 0;
            int got = capture(src ? src : ".", spath, &r, &world);
            int rflags = 0, runknown = 0;
            for (int i = 0; got && i < r.n; i++) {
                if (strncmp(r.tok[i], "--", 2)) continue;
                rflags++;
                if (!fx_flags_has(&flags, r.tok[i])) runknown++;
            }
            const char *rl = got ? fx_value(&r, "--pipeline-model-parallel-layout") : NULL;
            const char *sl = fx_value(&a, "--pipeline-model-parallel-layout");
            bool lay_same = !sl || (rl && strlen(sl) == strlen(rl) + 2 && !strncmp(sl + 1, rl, strlen(rl)));
            tap_ok(got && rflags == nflags && runknown == 0 && world == w.gpus && lay_same,
                   "%s: bash hands pretrain_gpt.py %d flags (%d unknown), world size %ld", name, rflags,
                   runknown, world);
            fx_args_free(&r);
            unlink(spath);
        }
        /* the one-line argument list must hold the same flags */
        char *line = malloc(1 << 16);
        tap_ok(pp_launch_megatron_args(&p, line, 1 << 16, &err) == PP_OK && strstr(line, "--num-layers ") &&
                   strstr(line, "--global-batch-size "),
               "%s: pp_launch_megatron_args", name);
        free(line);
        fx_args_free(&a);
        free(s);
    }
    /* the scripts that ran on the GPU machine (tests/data/launch/scripts) */
    const char *runs[] = {"r1-gpt1.3b-dp2", "r2-gpt1.3b-tp2", "r3-gpt1.3b-pp2", "r4-tinyllama-pp2-uneven-rc",
                          "r5-tinyllama-tp2-distopt"};
    for (size_t i = 0; have_bash() && i < sizeof runs / sizeof runs[0]; i++) {
        char sp[1200];
        snprintf(sp, sizeof sp, "%s/tests/data/launch/scripts/%s.sh", src ? src : ".", runs[i]);
        fx_args r;
        long world = 0;
        int got = capture(src ? src : ".", sp, &r, &world);
        int nf = 0, unk = 0;
        for (int k = 0; got && k < r.n; k++) {
            if (strncmp(r.tok[k], "--", 2)) continue;
            nf++;
            if (!fx_flags_has(&flags, r.tok[k])) unk++;
        }
        unknown_total += unk;
        tap_ok(got && nf >= 30 && unk == 0 && world == 2 && fx_value(&r, "--transformer-impl"),
               "real run %s: %d flags, %d unknown, world %ld", runs[i], nf, unk, world);
        fx_args_free(&r);
    }
    for (size_t k = 0; k < N_DEF_FLAGS; k++)
        tap_ok(def_seen[k] && fx_flags_has(&flags, definition_flags[k]), "%s: written by a layout, in Megatron's parser",
               definition_flags[k]);
    if (!bash_checked) tap_diag("bash not found: scripts not syntax-checked");
    tap_diag("validation: %d layouts, %d Megatron flags checked, %d unknown to Megatron-LM's parser",
             layouts, checked_total, unknown_total);
    tap_ok(layouts >= 20 && unknown_total == 0, "at least 20 layouts, no unknown flag (%d layouts)", layouts);
    fx_flags_free(&flags);
    return tap_done();
}
