/* The committed profiles (tests/data/profiles, measured on the lent GPUs) against PyTorch
 * (suite validation): tests/data/anchors (PyTorch 2.11 on other machines of the same kinds) and the
 * PyTorch figures taken in the same device call as each profile (*.torch.jsonl from
 * probes/torch_ref.py). The probes' floor: each figure at least 95% of PyTorch's. Every
 * comparison prints its ratio, each group its mean absolute deviation (MAPE of the ratio).
 * Rows under 0.95 in groups that NOTES.md explains (transformer-shape GEMMs: the power limit and
 * launch overhead; layer forward on the H200: the power limit) are TAP TODO, but still held to a
 * hard floor of 0.80 and to a group median of 0.95, so a regression fails. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_profile.h"
#include "tap.h"

#define MAXR 320

typedef struct {
    char kind[24], op[24], dtype[8], impl[16];
    double m, n, k, h, hidden, tp, heads, seq, mbs, b, s, head_dim, ranks, bytes;
    double tflops, fwd_ms, fwdbwd_ms, gbs, busbw, algbw;
    bool error;
} rec;

/* the value after `"key": ` (JSON) or `key: ` (our YAML flow maps); quotes removed */
static bool getv(const char *line, const char *key, char *out, size_t n)
{
    char pat[64];
    const char *p;
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    p = strstr(line, pat);
    if (!p) {
        snprintf(pat, sizeof pat, "{%s: ", key);
        p = strstr(line, pat);
    }
    if (!p) {
        snprintf(pat, sizeof pat, " %s: ", key);
        p = strstr(line, pat);
    }
    if (!p) return false;
    p += strlen(pat);
    size_t i = 0;
    if (*p == '"') {
        p++;
        while (*p && *p != '"' && i + 1 < n) out[i++] = *p++;
    } else {
        while (*p && *p != ',' && *p != '}' && *p != '\n' && i + 1 < n) out[i++] = *p++;
    }
    out[i] = 0;
    return true;
}

static double getd(const char *line, const char *key)
{
    char v[64];
    return getv(line, key, v, sizeof v) ? strtod(v, NULL) : NAN;
}

static void parse_rec(const char *line, rec *x)
{
    getv(line, "op", x->op, sizeof x->op);
    getv(line, "dtype", x->dtype, sizeof x->dtype);
    if (!getv(line, "impl", x->impl, sizeof x->impl)) getv(line, "backend", x->impl, sizeof x->impl);
    x->m = getd(line, "m"), x->n = getd(line, "n"), x->k = getd(line, "k"), x->h = getd(line, "h");
    x->hidden = getd(line, "hidden"), x->tp = getd(line, "tp"), x->heads = getd(line, "heads");
    x->seq = getd(line, "seq"), x->mbs = getd(line, "mbs"), x->b = getd(line, "b"), x->s = getd(line, "s");
    x->head_dim = getd(line, "head_dim"), x->ranks = getd(line, "ranks"), x->bytes = getd(line, "bytes");
    x->tflops = getd(line, "tflops"), x->fwd_ms = getd(line, "fwd_ms"), x->fwdbwd_ms = getd(line, "fwdbwd_ms");
    x->gbs = getd(line, "gbs"), x->busbw = getd(line, "busbw_gbs"), x->algbw = getd(line, "algbw_gbs");
    x->error = strstr(line, "\"error\"") != NULL;
}

/* JSON lines (anchors, torch_ref): kind from the line */
static int read_jsonl(const char *path, rec *r, int cap)
{
    FILE *f = fopen(path, "r");
    char line[2048];
    int n = 0;
    if (!f) return -1;
    while (n < cap && fgets(line, sizeof line, f)) {
        rec *x = &r[n];
        memset(x, 0, sizeof *x);
        if (!getv(line, "kind", x->kind, sizeof x->kind)) continue;
        parse_rec(line, x);
        n++;
    }
    fclose(f);
    return n;
}

/* our profiles: one record per "  - {...}" line, kind from the enclosing list */
static int read_profile(const char *path, rec *r, int cap, double *copy, double *mul)
{
    FILE *f = fopen(path, "r");
    char line[2048], kind[24] = "";
    int n = 0;
    *copy = *mul = NAN;
    if (!f) return -1;
    while (n < cap && fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        if (line[0] != ' ') {
            char *colon = strchr(line, ':');
            size_t len = colon ? (size_t)(colon - line) : 0;
            snprintf(kind, sizeof kind, "%.*s", (int)(len < sizeof kind ? len : sizeof kind - 1), line);
            if (!strcmp(kind, "bandwidth")) {
                *copy = getd(line, "copy_gbs");
                *mul = getd(line, "mul_gbs");
            }
        } else if (!strncmp(line, "  - {", 5)) {
            rec *x = &r[n++];
            memset(x, 0, sizeof *x);
            snprintf(x->kind, sizeof x->kind, "%s", kind);
            parse_rec(line, x);
        }
    }
    fclose(f);
    return n;
}

/* a pretty-printed profile JSON (parplan-probe -o X.json): each {...} record of its "gemm" list
 * read as one line */
static int read_json_gemm(const char *path, rec *r, int cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    static char buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    char *p = strstr(buf, "\"gemm\": [");
    int n = 0;
    while (p && n < cap) {
        char *a = strchr(p, '{'), *b = a ? strchr(a, '}') : NULL, *end = strchr(p, ']');
        if (!a || !b || (end && a > end)) break;
        char line[2048];
        size_t k = (size_t)(b - a + 1) < sizeof line - 1 ? (size_t)(b - a + 1) : sizeof line - 1;
        memcpy(line, a, k);
        line[k] = 0;
        for (char *c = line; *c; c++)
            if (*c == '\n') *c = ' ';
        rec *x = &r[n++];
        memset(x, 0, sizeof *x);
        snprintf(x->kind, sizeof x->kind, "gemm");
        parse_rec(line, x);
        p = b + 1;
    }
    return n;
}

/* a group of ratios (ours / PyTorch's: higher is better) */
typedef struct {
    const char *name;
    bool todo_ok; /* rows under 0.95 are explained (NOTES.md): TODO above a hard floor */
    double r[MAXR];
    int n;
} group;

static void ratio(group *g, double ours, double theirs, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void ratio(group *g, double ours, double theirs, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    double x = ours / theirs;
    if (g->n < MAXR) g->r[g->n++] = x;
    if (x >= 0.95 || !g->todo_ok || !(x >= 0.80)) {
        tap_ok(x >= 0.95, "%s: %s: %.4g vs %.4g, ratio %.3f", g->name, what, ours, theirs, x);
    } else {
        /* TAP's expected failure: "not ok ... # TODO" (an "ok ... # TODO" would be an unexpected pass) */
        tap_n++;
        printf("not ok %d - %s: %s: %.4g vs %.4g, ratio %.3f # TODO under 0.95, explained in probes/NOTES.md\n", tap_n,
               g->name, what, ours, theirs, x);
    }
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void group_done(group *g)
{
    if (!g->n) {
        tap_ok(0, "%s: nothing compared", g->name);
        return;
    }
    double s = 0;
    for (int i = 0; i < g->n; i++) s += fabs(g->r[i] - 1);
    qsort(g->r, (size_t)g->n, sizeof g->r[0], cmpd);
    double med = g->r[g->n / 2];
    tap_diag("%s: %d figures, ratio min %.3f median %.3f max %.3f, mean |1 - ratio| %.1f%%", g->name, g->n, g->r[0],
             med, g->r[g->n - 1], 100 * s / g->n);
    if (g->todo_ok) tap_ok(med >= 0.95, "%s: median ratio %.3f >= 0.95", g->name, med);
}

static const rec *find(const rec *r, int n, bool (*match)(const rec *, const rec *), const rec *key)
{
    for (int i = 0; i < n; i++)
        if (match(&r[i], key)) return &r[i];
    return NULL;
}

static bool same_gemm_shape(const rec *mine, const rec *a)
{
    /* the anchors name a shape by (h, tp, op, m, n, k); the profile by (op, tp, m, n, k) */
    return !strcmp(mine->kind, "gemm") && !strcmp(mine->dtype, "bf16") && !strcmp(mine->op, a->op) &&
           mine->tp == a->tp && mine->m == a->m && mine->n == a->n && mine->k == a->k;
}
static bool same_square(const rec *mine, const rec *a)
{
    return !strcmp(mine->kind, "gemm") && !strcmp(mine->op, "square") && !strcmp(mine->dtype, a->dtype) &&
           mine->m == a->m;
}
static bool same_layer(const rec *mine, const rec *a)
{
    return !strcmp(mine->kind, "layer") && mine->hidden == a->h && mine->heads == a->heads && mine->seq == a->seq &&
           mine->mbs == a->mbs && mine->tp == 1;
}
static bool same_nccl(const rec *mine, const rec *a)
{
    return !strcmp(mine->kind, "nccl") && !strcmp(mine->op, a->op) && mine->bytes == a->bytes && mine->ranks == 2;
}
static bool same_attn(const rec *mine, const rec *a)
{
    return !strcmp(mine->kind, "attention") && !strcmp(mine->impl, "flash") && mine->b == a->b && mine->s == a->s &&
           mine->heads == a->heads && mine->head_dim == a->head_dim;
}

/* one GPU's profile against a PyTorch jsonl (anchors or same-call) */
static void compare_single(const char *label, const rec *mine, int nm, double copy, double mul, const rec *torch,
                           int nt, bool layer_fwd_todo)
{
    char name[96];
    group gsq = {0}, gsh = {0}, gbw = {0}, gly = {0}, glf = {0}, gat = {0};
    snprintf(name, sizeof name, "%s gemm 8192^3", label), gsq.name = strdup(name);
    snprintf(name, sizeof name, "%s gemm transformer shapes", label), gsh.name = strdup(name), gsh.todo_ok = true;
    snprintf(name, sizeof name, "%s bandwidth", label), gbw.name = strdup(name);
    snprintf(name, sizeof name, "%s layer fwd+bwd", label), gly.name = strdup(name);
    snprintf(name, sizeof name, "%s layer fwd", label), glf.name = strdup(name), glf.todo_ok = layer_fwd_todo;
    snprintf(name, sizeof name, "%s flash attention", label), gat.name = strdup(name);
    for (int i = 0; i < nt; i++) {
        const rec *a = &torch[i], *m;
        if (!strcmp(a->kind, "gemm")) {
            if ((m = find(mine, nm, same_square, a)))
                ratio(&gsq, m->tflops, a->tflops, "%s", a->dtype);
            else
                tap_ok(0, "%s: no %s 8192^3 in the profile", gsq.name, a->dtype);
        } else if (!strcmp(a->kind, "gemm_shape")) {
            if ((m = find(mine, nm, same_gemm_shape, a)))
                ratio(&gsh, m->tflops, a->tflops, "h %g tp %g %s (%gx%gx%g)", a->h, a->tp, a->op, a->m, a->n, a->k);
            else
                tap_ok(0, "%s: no h %g tp %g %s", gsh.name, a->h, a->tp, a->op);
        } else if (!strcmp(a->kind, "bandwidth")) {
            ratio(&gbw, !strcmp(a->op, "copy") ? copy : mul, a->gbs, "%s GB/s", a->op);
        } else if (!strcmp(a->kind, "layer")) {
            if ((m = find(mine, nm, same_layer, a))) {
                /* time ratio: PyTorch's ms over ours (the same FLOPs) */
                ratio(&gly, a->fwdbwd_ms, m->fwdbwd_ms, "h %g heads %g s %g mbs %g (ms, inverted)", a->h, a->heads,
                      a->seq, a->mbs);
                ratio(&glf, a->fwd_ms, m->fwd_ms, "h %g heads %g s %g mbs %g (ms, inverted)", a->h, a->heads, a->seq,
                      a->mbs);
            } else {
                tap_ok(0, "%s: no layer h %g", gly.name, a->h);
            }
        } else if (!strcmp(a->kind, "attention") && !a->error && !strcmp(a->impl, "default")) {
            if ((m = find(mine, nm, same_attn, a))) {
                ratio(&gat, a->fwdbwd_ms, m->fwdbwd_ms, "b %g s %g heads %g d %g fwd+bwd (ms, inverted)", a->b, a->s,
                      a->heads, a->head_dim);
                ratio(&gat, a->fwd_ms, m->fwd_ms, "b %g s %g heads %g d %g fwd (ms, inverted)", a->b, a->s, a->heads,
                      a->head_dim);
            }
        }
    }
    group *all[6] = {&gsq, &gsh, &gbw, &gly, &glf, &gat};
    for (int i = 0; i < 6; i++) {
        if (all[i]->n) group_done(all[i]);
        free((void *)all[i]->name);
    }
}

int main(void)
{
    const char *src = getenv("PARPLAN_SOURCE_DIR"), *shared = getenv("PARPLAN_DATA_DIR");
    char p[1024], q[1024];
    static rec mine[MAXR], torch[MAXR];
    double copy = 0, mul = 0;
    int nm, nt;
    if (!src || !shared) return tap_skip_all("PARPLAN_SOURCE_DIR / PARPLAN_DATA_DIR not set");

    /* every committed profile loads through the planner's loader */
    const char *files[3] = {"h100-sxm.yaml", "h200.yaml", "h200x2-nvlink.yaml"};
    for (int i = 0; i < 3; i++) {
        pp_profile prof;
        pp_error err;
        memset(&prof, 0, sizeof prof);
        memset(&err, 0, sizeof err);
        snprintf(p, sizeof p, "%s/tests/data/profiles/%s", src, files[i]);
        pp_status st = pp_profile_load_file(&prof, p, &err);
        tap_ok(st == PP_OK && prof.n_gemm > 50 && prof.copy_gbs > 0 && prof.n_attn > 0 && prof.n_layer >= 5 &&
                   (i < 2 ? prof.n_nccl == 0 : prof.n_nccl >= 30),
               "%s loads: %d GEMMs, %d attention, %d layer, %d nccl rows (%s)", files[i], prof.n_gemm, prof.n_attn,
               prof.n_layer, prof.n_nccl, st == PP_OK ? prof.gpu : err.msg);
        pp_profile_free(&prof);
    }

    /* H100: the anchors, then PyTorch in the same call */
    snprintf(p, sizeof p, "%s/tests/data/profiles/h100-sxm.yaml", src);
    nm = read_profile(p, mine, MAXR, &copy, &mul);
    snprintf(q, sizeof q, "%s/anchors/h100_torch.jsonl", shared);
    nt = read_jsonl(q, torch, MAXR);
    tap_ok(nm > 0 && nt > 0, "read %s (%d rows) and %s (%d rows)", p, nm, q, nt);
    if (nm > 0 && nt > 0) compare_single("H100 vs anchors", mine, nm, copy, mul, torch, nt, false);
    snprintf(q, sizeof q, "%s/tests/data/profiles/h100-sxm.torch.jsonl", src);
    nt = read_jsonl(q, torch, MAXR);
    tap_ok(nt > 0, "read %s (%d rows)", q, nt);
    if (nm > 0 && nt > 0) compare_single("H100 vs same-call PyTorch", mine, nm, copy, mul, torch, nt, false);

    /* H200: PyTorch in the same call (no single-GPU H200 anchors exist) */
    snprintf(p, sizeof p, "%s/tests/data/profiles/h200.yaml", src);
    nm = read_profile(p, mine, MAXR, &copy, &mul);
    snprintf(q, sizeof q, "%s/tests/data/profiles/h200.torch.jsonl", src);
    nt = read_jsonl(q, torch, MAXR);
    tap_ok(nm > 0 && nt > 0, "read %s (%d rows) and %s (%d rows)", p, nm, q, nt);
    if (nm > 0 && nt > 0) compare_single("H200 vs same-call PyTorch", mine, nm, copy, mul, torch, nt, true);

    /* FP8 GEMMs (e4m3, per-tensor scales, bf16 out) on one H200 against torch._scaled_mm in the same
     * call (tests/data/probes/device_moe_fp8_call2, probes/device_moe_fp8.sh), bf16 beside them; and
     * the FP8 speed-up the time model's --precision fp8 rests on: at least 1.8x bf16 at 8192^3
     * (measured 1.94x; H200's dense FP8 peak is 2x its BF16 peak). */
    snprintf(p, sizeof p, "%s/tests/data/probes/device_moe_fp8_call2/gemm.json", src);
    nm = read_json_gemm(p, mine, MAXR);
    snprintf(q, sizeof q, "%s/tests/data/probes/device_moe_fp8_call2/torch.jsonl", src);
    nt = read_jsonl(q, torch, MAXR);
    tap_ok(nm >= 38 && nt >= 38, "read %s (%d GEMMs) and %s (%d rows)", p, nm, q, nt);
    {
        group g = {"H200 fp8/bf16 GEMM vs same-call PyTorch", false, {0}, 0};
        double f8 = 0, b16 = 0;
        for (int i = 0; i < nt; i++) {
            const rec *a = &torch[i];
            if (strcmp(a->kind, "gemm_fp8")) continue;
            const rec *m = NULL;
            for (int j = 0; j < nm && !m; j++)
                if (!strcmp(mine[j].dtype, a->dtype) && !strcmp(mine[j].op, a->op) && mine[j].m == a->m &&
                    mine[j].n == a->n && mine[j].k == a->k)
                    m = &mine[j];
            if (!m) {
                tap_ok(0, "%s: no %s %.0fx%.0fx%.0f", g.name, a->dtype, a->m, a->n, a->k);
                continue;
            }
            ratio(&g, m->tflops, a->tflops, "%s %s %.0fx%.0fx%.0f TFLOP/s", a->dtype, a->op, a->m, a->n, a->k);
            if (a->m == 8192 && a->n == 8192 && a->k == 8192) {
                if (!strcmp(a->dtype, "fp8")) f8 = m->tflops;
                else if (!strcmp(a->dtype, "bf16")) b16 = m->tflops;
            }
        }
        group_done(&g);
        tap_ok(b16 > 0 && f8 / b16 >= 1.8, "H200 fp8 GEMM 8192^3: %.0f TFLOP/s, %.2fx bf16's %.0f", f8,
               b16 > 0 ? f8 / b16 : 0, b16);
    }

    /* 2 x H200 NCCL against the anchors (busbw; sendrecv has algbw only) */
    snprintf(p, sizeof p, "%s/tests/data/profiles/h200x2-nvlink.yaml", src);
    nm = read_profile(p, mine, MAXR, &copy, &mul);
    snprintf(q, sizeof q, "%s/anchors/h200x2_torch_nccl.jsonl", shared);
    nt = read_jsonl(q, torch, MAXR);
    tap_ok(nm > 0 && nt > 0, "read %s (%d rows) and %s (%d rows)", p, nm, q, nt);
    {
        group g = {"2xH200 nccl vs anchors", false, {0}, 0};
        for (int i = 0; i < nt; i++) {
            const rec *a = &torch[i], *m;
            if (strcmp(a->kind, "nccl")) continue;
            if ((m = find(mine, nm, same_nccl, a))) {
                bool sr = !strcmp(a->op, "sendrecv");
                ratio(&g, sr ? m->algbw : m->busbw, sr ? a->algbw : a->busbw, "%s %.0f bytes %s", a->op, a->bytes,
                      sr ? "algbw" : "busbw");
            } else {
                tap_ok(0, "%s: no %s at %.0f bytes", g.name, a->op, a->bytes);
            }
        }
        group_done(&g);
    }
    return tap_done();
}
