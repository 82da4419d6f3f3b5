/* One run, one answer: random (model, GPU, layout, stack) cases drawn from the catalog, with every
 * knob the search would choose given, in both stage modes (uniform and the stage ILP). For each,
 * the binary ($PARPLAN) answers five ways and they must agree within 0.1% on the memory need
 * (peak + reserved of the fullest stage), the allocator peak and the step time, with the same
 * verdict:
 *   plan --json (its one candidate), check --json, estimate --json,
 *   the header of the script `launch --format megatron` writes ("peak P GiB ... + R GiB reserved
 *   ... (fits|PREDICTED OUT OF MEMORY); step S s"),
 *   and (Megatron cases) check --megatron-args on that script: the script read back.
 * Some cases split the pipeline by virtual stage: --vpp 2-4 whether or not pp x vpp divides the
 * layers (the balanced split), a given --pipeline-layout, or --first-stage-layers.
 * TAP: one test per case and mode; a summary with the worst disagreement per pair.
 *   consistency [CASES] [SEED]     (default 520 cases, seed 1) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jscan.h"
#include "pp.h"
#include "proc.h"
#include "tap.h"

static const char *parplan;

typedef struct {
    const char *name;
    int heads, kv_heads, layers, experts; /* what the layout's divisibility needs */
    bool moe;
} cmodel;

/* Catalog models of every family (dense GPT/Llama/Qwen/Gemma, MoE coarse and fine-grained, MLA). */
static const cmodel models[] = {
    {"gpt3-1.3b", 32, 32, 24, 0, false},    {"gpt3-6.7b", 32, 32, 32, 0, false},
    {"gpt3-13b", 40, 40, 40, 0, false},     {"llama3-8b", 32, 8, 32, 0, false},
    {"llama2-13b", 40, 40, 40, 0, false},   {"llama3-70b", 64, 8, 80, 0, false},
    {"qwen3-8b", 32, 8, 36, 0, false},      {"qwen3-32b", 64, 8, 64, 0, false},
    {"gemma2-9b", 16, 8, 42, 0, false},     {"mixtral-8x7b", 32, 8, 32, 8, true},
    {"qwen3-30b-a3b", 32, 4, 48, 128, true}, {"deepseek-v2-lite", 16, 16, 27, 64, true},
    {"gpt-oss-20b", 64, 8, 24, 32, true},
};
static const char *const gpus[] = {"a100-80gb", "h100-sxm", "h200"};

static unsigned long long rng_state, rng_split;
static unsigned rnd(unsigned n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)((rng_state >> 33) % n);
}
/* The pipeline split's draws have a stream of their own: the cases' other draws stay those of
 * the same seed before splits were drawn. */
static unsigned rnd_split(unsigned n)
{
    rng_split = rng_split * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)((rng_split >> 33) % n);
}

typedef struct {
    bool ok;
    double need, peak, step;
    bool fits;
    char err[1024];
} answer;

static void answer_json(const tc_proc *r, const char *what, const char *path_in, answer *a)
{
    memset(a, 0, sizeof *a);
    if (r->status != 0 && r->status != 1) {
        snprintf(a->err, sizeof a->err, "%s: exit %d: %.200s", what, r->status, r->err);
        return;
    }
    char perr[128];
    js_val *doc = js_parse(r->out, perr, sizeof perr);
    if (!doc) {
        snprintf(a->err, sizeof a->err, "%s: no JSON (%s)", what, perr);
        return;
    }
    const js_val *v = doc;
    if (path_in) { /* plan: the first candidate */
        const js_val *c = js_get(doc, path_in);
        if (!c || c->type != JS_ARR || c->n < 1) {
            snprintf(a->err, sizeof a->err, "%s: no candidate (%.200s)", what, r->err);
            js_free(doc);
            return;
        }
        v = c->items[0];
    }
    a->need = js_num(v, "need_bytes");
    a->peak = js_num(v, "peak_bytes");
    a->step = js_num(v, "step_time_s");
    const js_val *f = js_get(v, "fits");
    a->fits = f && f->type == JS_BOOL && f->b;
    a->ok = isfinite(a->need) && isfinite(a->step) && a->need > 0 && a->step > 0;
    if (!a->ok) snprintf(a->err, sizeof a->err, "%s: figures missing", what);
    js_free(doc);
}

/* The script's header: "# predicted by parplan ...: peak P GiB allocated on the largest rank + R GiB
 * reserved of C GiB (fits|PREDICTED OUT OF MEMORY); step S s, ..." (2 decimals of GiB, 3 of s). */
static void answer_header(const char *path, answer *a)
{
    memset(a, 0, sizeof *a);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(a->err, sizeof a->err, "no script %s", path);
        return;
    }
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "# predicted by parplan");
        if (!p) continue;
        double pk, rs, cap, st;
        const char *q = strstr(p, ": peak ");
        if (q && sscanf(q, ": peak %lf GiB allocated on the largest rank + %lf GiB reserved of %lf GiB", &pk, &rs, &cap) == 3) {
            const char *s = strstr(q, "; step ");
            if (s && sscanf(s, "; step %lf s", &st) == 1) { /* 4 significant digits */
                a->need = (pk + rs) * 1073741824.0;
                a->peak = NAN; /* the header states the fullest stage's peak, not the largest */
                a->step = st;
                a->fits = strstr(q, "(fits)") != NULL;
                a->ok = true;
            }
        }
        break;
    }
    fclose(f);
    if (!a->ok) snprintf(a->err, sizeof a->err, "no prediction line in %s", path);
}

typedef struct {
    const char *name;
    double worst_need, worst_step;
    int verdicts, compared;
} pair_stat;

/* a against the reference (check): need within tol_need (relative), step within tol_step. */
static bool agree(pair_stat *ps, const answer *ref, const answer *a, double tol_need, double tol_step,
                  char *why, size_t n)
{
    double en = fabs(a->need / ref->need - 1), es = fabs(a->step / ref->step - 1);
    ps->compared++;
    if (en > ps->worst_need) ps->worst_need = en;
    if (es > ps->worst_step) ps->worst_step = es;
    bool same_verdict = a->fits == ref->fits;
    if (!same_verdict) ps->verdicts++;
    bool peak_ok = !isfinite(a->peak) || fabs(a->peak / ref->peak - 1) <= tol_need;
    if (en <= tol_need && es <= tol_step && same_verdict && peak_ok) return true;
    pp_strcatf(why, n, " %s: need %+.3f%% step %+.3f%% fits %d/%d%s;", ps->name, 100 * (a->need / ref->need - 1),
               100 * (a->step / ref->step - 1), a->fits, ref->fits, peak_ok ? "" : " peak differs");
    return false;
}

static char *const *argv_of(char **v, int *n, const char *s)
{
    static char buf[64][4096];
    static int k;
    snprintf(buf[k % 64], sizeof buf[0], "%s", s);
    v[(*n)++] = buf[k++ % 64];
    v[*n] = NULL;
    return v;
}

int main(int argc, char **argv)
{
    parplan = getenv("PARPLAN");
    if (!parplan) return tap_skip_all("PARPLAN not set");
    int want = argc > 1 ? atoi(argv[1]) : 520;
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    rng_split = rng_state ^ 0x9e3779b97f4a7c15ULL;
    char dir[] = "/tmp/pp-consistency-XXXXXX";
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    pair_stat st[4] = {{"plan", 0, 0, 0, 0}, {"estimate", 0, 0, 0, 0}, {"launch header", 0, 0, 0, 0},
                       {"script read back", 0, 0, 0, 0}};
    int cases = 0, tries = 0, refused = 0, failed = 0, compared_modes = 0, launch_refused = 0;
    while (cases < want && tries < 20 * want) {
        tries++;
        const cmodel *m = &models[rnd(sizeof models / sizeof models[0])];
        const char *gpu = gpus[rnd(3)];
        int tp = 1 << rnd(4), pp = 1 << rnd(3), dp = 1 << rnd(3), cp = rnd(4) == 0 ? 2 : 1;
        int mbs = 1 + (int)rnd(2), ep = 1;
        if (m->heads % tp || (m->kv_heads % tp && tp % m->kv_heads)) continue;
        if (m->moe) {
            int e = 1 << rnd(4);
            if (m->experts % e || (tp * cp * dp) % e) continue;
            ep = e;
        }
        bool fsdp = !m->moe && rnd(5) == 0;
        if (fsdp && pp > 1) pp = 1;
        bool sp = tp > 1 && (m->moe ? true : rnd(2));
        const char *rc = (const char *[]){"none", "selective", "full"}[rnd(3)];
        bool dist = !fsdp && rnd(2);
        int zero = fsdp ? 2 + (int)rnd(2) : 0;
        int gbs = dp * mbs * (pp > 1 ? pp * (1 + (int)rnd(3)) : 1 << rnd(3));
        int gpus_n = tp * pp * cp * dp;
        /* The pipeline split (pp_pipeline.h): with pp >= 2, now and then an interleaved pipeline
         * whose virtual stages need not divide the layers (the balanced split), a given
         * --pipeline-layout (the balanced split with one layer moved between two virtual stages),
         * or Megatron's --first-stage-layers */
        int vpp = 1;
        char split[768] = "";
        unsigned kind = pp > 1 ? rnd_split(8) : 0;
        if (kind >= 5) vpp = 2 + (int)rnd_split(3);
        if (kind == 6 || kind == 7) {
            int nv = pp * vpp, c[64];
            int S = m->layers + 2, q = S / nv, r = S % nv;
            for (int k = 0; k < nv; k++) c[k] = q + (k < r) - (k == 0) - (k == nv - 1);
            int from = (int)rnd_split((unsigned)nv), to = (int)rnd_split((unsigned)nv);
            if (c[from] > 0) c[from]--, c[to]++;
            if (kind == 6 && nv <= 64) {
                snprintf(split, sizeof split, " --pipeline-layout ");
                for (int k = 0; k < nv; k++) {
                    pp_strcatf(split, sizeof split, "%s%s", k ? "|" : "", k ? "" : "E");
                    if (c[k] > 0) pp_strcatf(split, sizeof split, "t*%d", c[k]);
                }
                pp_strcatf(split, sizeof split, "L");
            } else {
                /* a first stage Megatron's rules allow: a multiple of vpp, the rest even over
                 * the others in multiples of vpp */
                int cand[64], nc = 0;
                for (int f = vpp; f < m->layers && nc < 64; f += vpp) {
                    int rest = m->layers - f;
                    if (rest % (pp - 1) == 0 && (rest / (pp - 1)) % vpp == 0 && rest / (pp - 1) >= vpp) cand[nc++] = f;
                }
                if (nc) snprintf(split, sizeof split, " --first-stage-layers %d", cand[rnd_split((unsigned)nc)]);
            }
        }
        char common[1024];
        snprintf(common, sizeof common,
                 "--model %s --gpu %s --gpus %d --gpus-per-node %d --gbs %d --seq 4096 --tp %d --pp %d --dp %d "
                 "--cp %d --vpp %d --mbs %d --recompute %s %s %s%s%s%s",
                 m->name, gpu, gpus_n, gpus_n < 8 ? gpus_n : 8, gbs, tp, pp, dp, cp, vpp, mbs, rc,
                 sp ? "--sp" : "--no-sp", fsdp ? "--framework fsdp --zero " : dist ? "--dist-opt" : "--zero 0",
                 fsdp ? (zero == 2 ? "2" : "3") : "",
                 m->moe ? " --ep " : "", m->moe ? (char[8]){0} : "");
        if (m->moe) {
            char e[64];
            snprintf(e, sizeof e, "%d --etp %d", ep, tp);
            pp_strcatf(common, sizeof common, "%s", e);
        }
        pp_strcatf(common, sizeof common, "%s", split);
        /* the layout must be one check accepts */
        {
            char *v[128];
            int n = 0;
            argv_of(v, &n, parplan);
            argv_of(v, &n, "check");
            char tmp[1024];
            snprintf(tmp, sizeof tmp, "%s", common);
            for (char *s = NULL, *t = strtok_r(tmp, " ", &s); t; t = strtok_r(NULL, " ", &s)) argv_of(v, &n, t);
            argv_of(v, &n, "--json");
            argv_of(v, &n, "-q");
            tc_proc r;
            tc_run(v, &r);
            int status = r.status;
            tc_proc_result_free(&r);
            if (status == 2) {
                refused++;
                continue;
            }
        }
        cases++;
        for (int mode = 0; mode < (pp > 1 ? 2 : 1); mode++) {
            const char *stages = mode ? "ilp" : "uniform";
            answer a[5];
            const char *cmds[4] = {"plan", "check", "estimate", "launch"};
            char script_dir[512];
            snprintf(script_dir, sizeof script_dir, "%s/c%d_%d", dir, cases, mode);
            for (int k = 0; k < 4; k++) {
                char *v[128];
                int n = 0;
                argv_of(v, &n, parplan);
                argv_of(v, &n, cmds[k]);
                char tmp[1100];
                snprintf(tmp, sizeof tmp, "%s --stages %s", common, stages);
                for (char *s = NULL, *t = strtok_r(tmp, " ", &s); t; t = strtok_r(NULL, " ", &s)) argv_of(v, &n, t);
                argv_of(v, &n, "-q");
                if (k == 0) argv_of(v, &n, "--top"), argv_of(v, &n, "1");
                if (k == 2) argv_of(v, &n, "--tokens"), argv_of(v, &n, "1e9");
                if (k == 3) {
                    argv_of(v, &n, "--format");
                    argv_of(v, &n, fsdp ? "torchtitan" : "megatron");
                    argv_of(v, &n, "-o");
                    argv_of(v, &n, script_dir);
                } else {
                    argv_of(v, &n, "--json");
                }
                tc_proc r;
                tc_run(v, &r);
                if (k == 3) {
                    char path[640];
                    snprintf(path, sizeof path, "%s/%s", script_dir, fsdp ? "launch_torchtitan.sh" : "pretrain_gpt.sh");
                    a[3].ok = false;
                    if (r.status == 2 && fsdp &&
                        (strstr(r.err, "torchtitan's models are") || strstr(r.err, "not a registered torchtitan flavor"))) {
                        /* torchtitan trains its own model families (and registers new shapes only as
                         * llama3 flavors): a refusal with the reason, not a different answer (check
                         * and plan price the run as FSDP2 would) */
                        launch_refused++;
                        a[3].err[0] = 0;
                    } else if (r.status != 0) {
                        snprintf(a[3].err, sizeof a[3].err, "launch: exit %d: %.200s", r.status, r.err);
                    } else {
                        answer_header(path, &a[3]);
                    }
                } else {
                    answer_json(&r, cmds[k], k == 0 ? "candidates" : NULL, &a[k]);
                }
                tc_proc_result_free(&r);
            }
            /* the script read back (Megatron): check --megatron-args SCRIPT --gpu G --vocab V */
            a[4].ok = false;
            a[4].err[0] = 0;
            bool readback = !fsdp && a[3].ok;
            if (readback) {
                char *v[64];
                int n = 0;
                char path[640];
                snprintf(path, sizeof path, "%s/pretrain_gpt.sh", script_dir);
                argv_of(v, &n, parplan);
                argv_of(v, &n, "check");
                argv_of(v, &n, "--megatron-args");
                argv_of(v, &n, path);
                argv_of(v, &n, "--gpu");
                argv_of(v, &n, gpu);
                argv_of(v, &n, "--json");
                argv_of(v, &n, "-q");
                tc_proc r;
                tc_run(v, &r);
                if (r.status == 2 && strstr(r.err, "--vocab")) {
                    /* a standard script takes its vocabulary from the tokenizer: the user gives it */
                    tc_proc_result_free(&r);
                    char vbuf[32];
                    char *w2[64];
                    int n2 = 0;
                    for (int i = 0; i < n; i++) w2[n2++] = v[i];
                    w2[n2] = NULL;
                    (void)vbuf;
                    /* read the model's vocabulary from check's JSON is not needed: the catalog's */
                    char *mv[16];
                    int mn = 0;
                    argv_of(mv, &mn, parplan);
                    argv_of(mv, &mn, "models");
                    argv_of(mv, &mn, "--model");
                    argv_of(mv, &mn, m->name);
                    argv_of(mv, &mn, "--json");
                    tc_proc mr;
                    tc_run(mv, &mr);
                    char perr[64];
                    js_val *md = js_parse(mr.out, perr, sizeof perr);
                    double vocab = md ? js_num(md, "vocab") : NAN;
                    if (md) js_free(md);
                    tc_proc_result_free(&mr);
                    char vs[32];
                    snprintf(vs, sizeof vs, "%.0f", vocab);
                    argv_of(w2, &n2, "--vocab");
                    argv_of(w2, &n2, vs);
                    tc_run(w2, &r);
                }
                answer_json(&r, "check --megatron-args", NULL, &a[4]);
                tc_proc_result_free(&r);
            }
            char why[2048] = "";
            bool ok = a[1].ok;
            if (!a[1].ok) pp_strcatf(why, sizeof why, " %s", a[1].err);
            const int order[4] = {0, 2, 3, 4};
            for (int i = 0; i < 4 && a[1].ok; i++) {
                const answer *x = &a[order[i]];
                if (order[i] == 4 && !readback) continue;
                if (order[i] == 3 && !x->ok && !x->err[0]) continue; /* refused with its reason */
                if (!x->ok) {
                    ok = false;
                    pp_strcatf(why, sizeof why, " %s;", x->err);
                    continue;
                }
                /* the header prints 2 decimals of GiB and 3 of a second */
                double tn = order[i] == 3 ? 0.006 / (a[1].need / 1073741824.0) + 1e-3 : 1e-3;
                double ts = order[i] == 3 ? 6e-4 : 1e-3;
                ok &= agree(&st[i], &a[1], x, tn, ts, why, sizeof why);
            }
            compared_modes++;
            if (!ok) failed++;
            tap_ok(ok, "case %d (%s, %s): %s --stages %s%s", cases, m->name, gpu, common, stages, ok ? "" : why);
        }
    }
    for (int i = 0; i < 4; i++)
        tap_diag("%-17s against check: worst need %.4f%%, worst step %.4f%%, %d verdicts differ, %d compared",
                 st[i].name, 100 * st[i].worst_need, 100 * st[i].worst_step, st[i].verdicts, st[i].compared);
    tap_ok(cases >= want, "%d cases (%d stage modes compared, %d drawn layouts refused by check and redrawn)", cases,
           compared_modes, refused);
    tap_diag("%d of %d disagree; torchtitan refused %d FSDP launches of models it does not train", failed,
             compared_modes, launch_refused);
    char rm[600];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    if (system(rm)) tap_diag("could not remove %s", dir);
    return tap_done();
}
