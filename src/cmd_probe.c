/* parplan probe: runs the GPU probes. The measuring code is CUDA and lives in its own executable,
 * parplan-probe (probes/), so that parplan itself never needs CUDA; this command checks the
 * arguments, turns --model (+ --tp, --mbs; for moe --ep, --etp, --sp, --cp, --moe-grouped-gemm)
 * into the model's shapes, finds parplan-probe and execs it. moe and mla measure a model's own
 * layer: they need --model, one whose layers have experts (moe) or latent attention (mla), and
 * run apart from the machine's probes (gemm, attention, layer: parplan-probe reads --hidden as
 * one or the other). The shapes are those plan --probe measures (planner/calibrate/probe_cache.c
 * pp_probe_moe_shape_of, pp_probe_mla_shape_of): the rank's tokens, local experts and shards. parplan-probe is looked for in $PARPLAN_PROBE, beside this executable, in ../probes/
 * (the build tree: build/src/parplan, build/probes/parplan-probe), in ../libexec/ (an install
 * prefix) and in the configured libexecdir. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "pp_config.h"
#include "pp_probe_cache.h"

static const char *const probe_names[] = {"gemm", "bandwidth", "attention", "layer", "optimizer", "nccl", "all", "moe", "mla"};

static bool executable_file(const char *p) { return access(p, X_OK) == 0; }

/* The directory of the running executable (/proc/self/exe, else argv0). */
static bool self_dir(const char *argv0, char *out, size_t n)
{
    char buf[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (k > 0) {
        buf[k] = 0;
    } else if (argv0 && strchr(argv0, '/') && realpath(argv0, buf)) {
        /* buf holds the resolved path */
    } else {
        return false;
    }
    char *slash = strrchr(buf, '/');
    if (!slash) return false;
    *slash = 0;
    snprintf(out, n, "%s", buf[0] ? buf : "/");
    return true;
}

bool pp_probe_find(const char *argv0, char *out, size_t n, char *tried, size_t tried_n) /* also plan --probe */
{
    const char *env = getenv("PARPLAN_PROBE");
    char dir[PATH_MAX];
    tried[0] = 0;
    if (env && *env) {
        snprintf(out, n, "%s", env);
        snprintf(tried, tried_n, "$PARPLAN_PROBE=%s", env);
        return executable_file(out);
    }
    if (self_dir(argv0, dir, sizeof dir)) {
        const char *rel[] = {"parplan-probe", "../probes/parplan-probe", "../libexec/parplan-probe"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            snprintf(out, n, "%s/%s", dir, rel[i]);
            if (executable_file(out)) return true;
        }
        snprintf(tried, tried_n, "%s/{,../probes/,../libexec/}parplan-probe", dir);
    }
#ifdef PP_PROBE_LIBEXEC
    snprintf(out, n, "%s", PP_PROBE_LIBEXEC);
    if (executable_file(out)) return true;
    size_t used = strlen(tried);
    snprintf(tried + used, tried_n - used, "%s%s", used ? ", " : "", PP_PROBE_LIBEXEC);
#endif
    return false;
}

/* moe / mla flags from the model and the layout flags (nums: room for the numbers). Returns 0, or
 * prints one line and returns 2. */
static int sparse_args(pp_cli *c, const pp_model *m, bool moe, bool mla, char **args, int *na, char nums[][32])
{
    pp_work w;
    memset(&w, 0, sizeof w);
    w.model = *m;
    w.stack = c->work.stack;
    w.attention = c->work.attention;
    pp_layout l = c->layout;
    char why[128];
    int k = 0;
#define ARG(flag, v)                                              \
    do {                                                          \
        snprintf(nums[k], 32, "%lld", (long long)(v));            \
        args[(*na)++] = flag;                                     \
        args[(*na)++] = nums[k++];                                \
    } while (0)
    if (moe) {
        pp_probe_moe_shape s;
        if (l.tp > 1 && !l.sp) {
            fprintf(stderr, "parplan: probe moe with --tp %lld needs --sp (Megatron-Core runs MoE with TP only under "
                            "sequence parallelism) (parplan probe)\n", (long long)l.tp);
            return 2;
        }
        if (!pp_probe_moe_shape_of(&w, &l, &s, why, sizeof why)) {
            fprintf(stderr, "parplan: probe moe cannot run model %s at this layout: %s (parplan probe)\n", m->name, why);
            return 2;
        }
        ARG("--hidden", s.hidden);
        ARG("--experts", s.experts);
        ARG("--topk", s.topk);
        ARG("--moe-ffn", s.moe_ffn);
        if (s.shared_ffn > 0) ARG("--shared-ffn", s.shared_ffn);
        ARG("--tokens", s.tokens);
        ARG("--ep", s.ep);
        args[(*na)++] = "--moe-impl";
        args[(*na)++] = s.grouped ? "grouped" : "loop";
        if (s.shared_modelled && !c->quiet)
            fprintf(stderr, "parplan: note: the shared experts run on other tokens than the probe's %lld (expert TP %lld, "
                            "TP %lld): left out of this measurement\n",
                    (long long)s.tokens, (long long)pp_layout_etp(&l), (long long)l.tp);
    }
    if (mla) {
        pp_probe_mla_shape s;
        if (!pp_probe_mla_shape_of(&w, &l, &s, why, sizeof why)) {
            fprintf(stderr, "parplan: probe mla cannot run model %s at this layout: %s (parplan probe)\n", m->name, why);
            return 2;
        }
        if (!moe) ARG("--hidden", s.hidden); /* one --hidden serves both */
        ARG("--heads", s.heads);
        ARG("--q-lora-rank", s.q_lora_rank);
        ARG("--kv-lora-rank", s.kv_lora_rank);
        ARG("--qk-nope-dim", s.qk_nope_dim);
        ARG("--qk-rope-dim", s.qk_rope_dim);
        ARG("--v-head-dim", s.v_head_dim);
        ARG("--seq", s.seq);
        ARG("--mbs", s.mbs);
        if (c->fixed & PP_FIX_TP) ARG("--tp", s.tp); /* else the TP sizes that split the heads, up to 8 */
    }
#undef ARG
    return 0;
}

int pp_cmd_probe(pp_cli *c)
{
    enum { MAX_ARGS = 64 };
    char *args[MAX_ARGS];
    char nums[24][32];
    char path[PATH_MAX], tried[2 * PATH_MAX];
    int na = 0;
    pp_error err = {0};
    pp_model m;
    bool moe = false, mla = false, machine = c->npos == 0; /* no kind: all (the machine's probes) */

    for (int i = 0; i < c->npos; i++) {
        bool known = false;
        for (size_t k = 0; k < sizeof probe_names / sizeof probe_names[0]; k++)
            if (!strcmp(c->pos[i], probe_names[k])) known = true;
        if (!known) {
            fprintf(stderr, "parplan: unknown probe '%s': expected gemm|bandwidth|attention|layer|optimizer|nccl|all|"
                            "moe|mla (parplan probe)\n", c->pos[i]);
            return 2;
        }
        if (!strcmp(c->pos[i], "moe")) moe = true;
        else if (!strcmp(c->pos[i], "mla")) mla = true;
        else machine |= strcmp(c->pos[i], "optimizer") && strcmp(c->pos[i], "nccl") && strcmp(c->pos[i], "bandwidth");
    }
    const unsigned moe_flags = PP_FIX_EP | PP_FIX_ETP | PP_FIX_CP | PP_FIX_SP;
    if ((moe || mla) && !c->model_arg) {
        fprintf(stderr, "parplan: probe %s measures a model's own layer: give --model NAME|FILE (with %s) (parplan "
                        "probe)\n", moe ? "moe" : "mla", moe ? "experts" : "latent attention");
        return 2;
    }
    if ((moe || mla) && machine) {
        fprintf(stderr, "parplan: moe and mla measure the model's own layers: run them apart from gemm, attention and "
                        "layer (parplan probe)\n");
        return 2;
    }
    if ((c->fixed & moe_flags || c->work.stack.grouped_gemm) && !moe) {
        fprintf(stderr, "parplan: --ep, --etp, --sp, --cp and --moe-grouped-gemm shape the moe probe: ask for moe "
                        "(parplan probe moe --model ...) (parplan probe)\n");
        return 2;
    }
    if ((c->fixed & (PP_FIX_TP | PP_FIX_MBS)) && !c->model_arg) {
        fprintf(stderr, "parplan: --tp and --mbs choose a model's shard and micro-batch: give --model too "
                        "(parplan probe)\n");
        return 2;
    }
    if (c->npos + 40 > MAX_ARGS) {
        fprintf(stderr, "parplan: too many arguments (parplan probe)\n");
        return 2;
    }
    args[na++] = "parplan-probe";
    for (int i = 0; i < c->npos; i++) args[na++] = c->pos[i];
    if (c->output) {
        args[na++] = "-o";
        args[na++] = (char *)c->output;
    }
    if (c->json) args[na++] = "--json";
    if (c->quiet) args[na++] = "-q";
    /* the attention Megatron's local modules run, when asked (default: flash where cuDNN builds it) */
    if (c->work.attention == PP_ATTN_UNFUSED) {
        args[na++] = "--attention";
        args[na++] = "unfused";
    }
    if (c->model_arg) {
        if (pp_cli_catalog(c, &err) != PP_OK) return pp_cli_fail(&err);
        if (pp_model_resolve(&m, &c->cat, c->model_arg, &err) != PP_OK) return pp_cli_fail(&err);
        if ((moe && !pp_model_is_moe(&m)) || (mla && !pp_model_is_mla(&m))) {
            fprintf(stderr, "parplan: probe %s: model %s has no %s (parplan probe)\n", moe && !pp_model_is_moe(&m) ? "moe" : "mla",
                    m.name, moe && !pp_model_is_moe(&m) ? "MoE layers (experts)" : "latent attention (kv_lora_rank)");
            return 2;
        }
        if (moe || mla) {
            int rc = sparse_args(c, &m, moe, mla, args, &na, nums);
            if (rc) return rc;
        } else {
            const struct {
                const char *flag;
                int64_t v;
            } shape[] = {{"--hidden", m.hidden}, {"--heads", m.heads}, {"--kv-heads", m.kv_heads},
                         {"--ffn", m.ffn},       {"--seq", m.seq},     {"--mbs", c->fixed & PP_FIX_MBS ? c->layout.mbs : 1},
                         {"--tp", c->fixed & PP_FIX_TP ? c->layout.tp : 0}};
            for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
                if (shape[i].v <= 0) continue;
                snprintf(nums[i], sizeof nums[i], "%lld", (long long)shape[i].v);
                args[na++] = (char *)shape[i].flag;
                args[na++] = nums[i];
            }
            if (m.act == PP_ACT_SWIGLU) args[na++] = "--swiglu";
        }
    }
    args[na] = NULL;

#if !PP_HAVE_CUDA
    (void)path;
    (void)tried;
    fprintf(stderr, "parplan: this parplan was built without the GPU probes (reconfigure with -Dcuda=enabled "
                    "where nvcc and cuBLASLt are installed) (parplan probe)\n");
    return 1;
#else
    if (!pp_probe_find(c->argv0, path, sizeof path, tried, sizeof tried)) {
        fprintf(stderr, "parplan: the GPU probes are not installed: no parplan-probe at %s (parplan probe)\n", tried);
        return 1;
    }
    fflush(stdout);
    execv(path, args);
    fprintf(stderr, "parplan: cannot run %s: %s (parplan probe)\n", path, strerror(errno));
    return 1;
#endif
}
