/* parplan probe: runs the GPU probes. The measuring code is CUDA and lives in its own executable,
 * parplan-probe (probes/), so that parplan itself never needs CUDA; this command checks the
 * arguments, turns --model (+ --tp, --mbs) into the model's shapes, finds parplan-probe and
 * execs it. parplan-probe is looked for in $PARPLAN_PROBE, beside this executable, in ../probes/
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

static const char *const probe_names[] = {"gemm", "bandwidth", "attention", "layer", "optimizer", "nccl", "all"};

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

int pp_cmd_probe(pp_cli *c)
{
    enum { MAX_ARGS = 64 };
    char *args[MAX_ARGS];
    char nums[8][32];
    char path[PATH_MAX], tried[2 * PATH_MAX];
    int na = 0;
    pp_error err = {0};
    pp_model m;

    for (int i = 0; i < c->npos; i++) {
        bool known = false;
        for (size_t k = 0; k < sizeof probe_names / sizeof probe_names[0]; k++)
            if (!strcmp(c->pos[i], probe_names[k])) known = true;
        if (!known) {
            fprintf(stderr, "parplan: unknown probe '%s': expected gemm|bandwidth|attention|layer|optimizer|nccl|all "
                            "(parplan probe)\n", c->pos[i]);
            return 2;
        }
    }
    if ((c->fixed & (PP_FIX_TP | PP_FIX_MBS)) && !c->model_arg) {
        fprintf(stderr, "parplan: --tp and --mbs choose a model's shard and micro-batch: give --model too "
                        "(parplan probe)\n");
        return 2;
    }
    if (c->npos + 24 > MAX_ARGS) {
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
    if (c->model_arg) {
        if (pp_cli_catalog(c, &err) != PP_OK) return pp_cli_fail(&err);
        if (pp_model_resolve(&m, &c->cat, c->model_arg, &err) != PP_OK) return pp_cli_fail(&err);
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
