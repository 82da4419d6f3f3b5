/* Parameter counts: every catalog model against its published count, the per-tensor table
 * against Narayanan et al. (SC21) eq. 2, and Hugging Face config.json files of each family
 * against the counts of the released checkpoints. Suite: unit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp.h"
#include "pp_load.h"
#include "tap.h"

/* Published counts are usually exact (checkpoint counts) and must agree within 0.5%. A few
 * are printed with two significant digits (GPT-3 Table 2.1, SC21 Table 1): there the figure's
 * own rounding, half a unit of its last digit, is the tolerance. gpt3-350m is a nominal
 * label: the exact count of that shape is 355.9M (eq. 2), 1.7% above "350M". */
static double tolerance(const char *name, double published)
{
    static const struct { const char *name; double tol; } wide[] = {
        {"gpt3-350m", 0.02},
        {"gpt3-1.3b", -1}, {"gpt3-2.7b", -1}, {"gpt3-6.7b", -1},
        {"sc21-1.7b", -1}, {"sc21-3.6b", -1},
    };
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
        if (!strcmp(wide[i].name, name)) {
            if (wide[i].tol > 0) return wide[i].tol;
            double unit = pow(10, floor(log10(published)) - 1); /* 2 significant digits */
            return 0.5 * unit / published;
        }
    return 0.005;
}

/* Narayanan et al. SC21 eq. 2 for GPT: 12 L h^2 (1 + 13/(12h) + (V+s)/(12 L h)). */
static double eq2(const pp_model *m)
{
    double L = (double)m->layers, h = (double)m->hidden, V = (double)m->vocab, s = (double)m->seq;
    return 12 * L * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * L * h));
}

static void catalog_tests(const char *dir)
{
    pp_catalog cat;
    pp_error err = {0};
    pp_status st = pp_catalog_load(&cat, dir, &err);
    char buf[1200];
    pp_error_format(&err, buf, sizeof buf);
    if (!tap_ok(st == PP_OK, "catalog %s loads", dir)) {
        tap_diag("%s", buf);
        return;
    }
    tap_ok(cat.n_models >= 15, "at least 15 models (%d)", cat.n_models);
    tap_ok(cat.n_gpus >= 9, "at least 9 GPUs (%d)", cat.n_gpus);
    for (int i = 0; i < cat.n_models; i++) {
        const pp_model *m = &cat.models[i];
        pp_param_count pc;
        pp_model_params(m, &pc);
        if (!tap_ok(m->published_params > 0, "%s has published_params", m->name)) continue;
        tap_near((double)pc.total, m->published_params, tolerance(m->name, m->published_params),
                 "%s parameters vs published (%s)", m->name, m->source);
        /* Classic GPT shapes: the table equals eq. 2 plus the final LayerNorm (2h), exactly. */
        if (m->act == PP_ACT_GELU && m->bias && m->tied && m->pos == PP_POS_LEARNED &&
            m->ffn == 4 * m->hidden && m->heads * m->head_dim == m->hidden && m->experts <= 1)
            tap_ok(fabs((double)pc.total - eq2(m) - 2.0 * (double)m->hidden) < 0.5,
                   "%s table = SC21 eq. 2 + 2h (%lld vs %.0f)", m->name, (long long)pc.total,
                   eq2(m) + 2.0 * (double)m->hidden);
        tap_ok(pc.active <= pc.total && pc.total > 0, "%s active <= total", m->name);
    }
    /* Specific figures. Mixtral: 46.7B total, 12.9B active (Jiang et al. 2024, sec. 2). */
    const pp_model *mx = pp_catalog_model(&cat, "mixtral-8x7b");
    if (tap_ok(mx != NULL, "mixtral-8x7b in the catalog")) {
        pp_param_count pc;
        pp_model_params(mx, &pc);
        tap_near((double)pc.active, 12.879e9, 0.005, "mixtral-8x7b active parameters (12.9B)");
        /* router h*E per layer: 32 * 4096 * 8 */
        tap_ok(pc.per_layer - pc.layer_active == 6 * 3 * 4096LL * 14336LL,
               "mixtral: inactive experts per layer = 6 x 3hf");
    }
    /* GPT-3 175B with Megatron's padded V = 51200 gives the 174.6B the brief quotes. */
    const pp_model *g3 = pp_catalog_model(&cat, "gpt3-175b");
    if (tap_ok(g3 != NULL, "gpt3-175b in the catalog")) {
        pp_model m = *g3;
        m.vocab = 51200;
        pp_param_count pc;
        pp_model_params(&m, &pc);
        tap_near((double)pc.total, 174.6e9, 0.0005, "gpt3-175b with V=51200: 174.6B (SC21 eq. 2)");
    }
    /* Llama-2-7B exact: 6,738,415,616 in the released checkpoint. */
    const pp_model *l7 = pp_catalog_model(&cat, "llama2-7b");
    if (l7) {
        pp_param_count pc;
        pp_model_params(l7, &pc);
        tap_ok(pc.total == 6738415616LL, "llama2-7b exact count %lld == 6738415616", (long long)pc.total);
    }
    const pp_model *l3 = pp_catalog_model(&cat, "llama3-8b");
    if (l3) {
        pp_param_count pc;
        pp_model_params(l3, &pc);
        tap_ok(pc.total == 8030261248LL, "llama3-8b exact count %lld == 8030261248", (long long)pc.total);
    }
    /* The SC21 table rows in ../shared/validation agree with the catalog's sc21-* files. */
    const char *shared = getenv("PARPLAN_SHARED_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/validation/megatron_sc21_table1.csv", shared ? shared : "../shared");
    FILE *f = fopen(path, "r");
    if (tap_ok(f != NULL, "read %s", path)) {
        char line[512];
        int rows = 0;
        while (fgets(line, sizeof line, f)) {
            double pb;
            long long heads, hidden, layers;
            if (line[0] == '#' || sscanf(line, "%lf,%lld,%lld,%lld", &pb, &heads, &hidden, &layers) != 4) continue;
            pp_model m;
            pp_model_init(&m);
            m.layers = layers; m.hidden = hidden; m.heads = heads; m.vocab = 51200; m.seq = 2048;
            if (pp_model_validate(&m, &err) != PP_OK) { tap_ok(0, "validate SC21 row %g", pb); continue; }
            pp_param_count pc;
            pp_model_params(&m, &pc);
            tap_near((double)pc.total, pb * 1e9, tolerance(pb < 2 ? "sc21-1.7b" : pb < 4 ? "sc21-3.6b" : "", pb * 1e9),
                     "SC21 Table 1 row %gB (L=%lld h=%lld a=%lld)", pb, layers, hidden, heads);
            rows++;
        }
        fclose(f);
        tap_ok(rows == 10, "10 SC21 rows (%d)", rows);
    }
    pp_catalog_free(&cat);
}

/* Hugging Face config.json files under tests/loader/data/hf, with the parameter count of
 * the released checkpoint (sum of tensor sizes, tied weights once). */
static void hf_tests(const char *src)
{
    static const struct { const char *file; double params; double active; double tol; } cases[] = {
        {"llama-2-7b.json", 6738415616.0, 0, 0.0001},     /* meta-llama/Llama-2-7b-hf */
        {"llama-3-8b.json", 8030261248.0, 0, 0.0001},     /* meta-llama/Meta-Llama-3-8B */
        {"mistral-7b.json", 7241732096.0, 0, 0.0001},     /* mistralai/Mistral-7B-v0.1 */
        {"mixtral-8x7b.json", 46702792704.0, 12879925248.0, 0.0001}, /* mistralai/Mixtral-8x7B-v0.1 */
        {"qwen2-7b.json", 7615616512.0, 0, 0.0005},       /* Qwen/Qwen2-7B; o_proj/MLP biases counted */
        {"gpt2.json", 124439808.0, 0, 0.0001},            /* openai-community/gpt2 */
        {"gpt2-xl.json", 1557611200.0, 0, 0.0001},        /* openai-community/gpt2-xl */
        {"gpt-neox-20b.json", 20554567680.0, 0, 0.0001},  /* EleutherAI/gpt-neox-20b */
        {"pythia-1.4b.json", 1414647808.0, 0, 0.0001},    /* EleutherAI/pythia-1.4b */
        {"opt-1.3b.json", 1315758080.0, 0, 0.0001},       /* facebook/opt-1.3b (2 offset rows of positions not counted) */
        {"bloom-560m.json", 559214592.0, 0, 0.0001},      /* bigscience/bloom-560m (embedding LayerNorm not counted) */
        {"falcon-7b.json", 6921720704.0, 0, 0.0001},      /* tiiuae/falcon-7b: 6.92B unique; HF shows 7.22B counting lm_head twice */
        {"falcon-40b.json", 41303293952.0, 0, 0.0001},    /* tiiuae/falcon-40b */
        {"bert-large-uncased.json", 335141888.0, 0, 0.005}, /* google-bert/bert-large-uncased BertModel; pooler not counted */
    };
    char path[1024];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(path, sizeof path, "%s/tests/loader/data/hf/%s", src, cases[i].file);
        pp_model m;
        pp_error err = {0};
        pp_status st = pp_model_load_file(&m, path, &err);
        char buf[1200];
        pp_error_format(&err, buf, sizeof buf);
        if (!tap_ok(st == PP_OK, "load %s", cases[i].file)) {
            tap_diag("%s", buf);
            continue;
        }
        pp_param_count pc;
        pp_model_params(&m, &pc);
        tap_near((double)pc.total, cases[i].params, cases[i].tol, "%s parameters (%s)", cases[i].file, m.name);
        if (cases[i].active > 0)
            tap_near((double)pc.active, cases[i].active, cases[i].tol, "%s active parameters", cases[i].file);
    }
}

int main(void)
{
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    const char *models = getenv("PARPLAN_MODELS_DIR");
    if (!src || !models) return tap_skip_all("PARPLAN_SOURCE_DIR / PARPLAN_MODELS_DIR not set (run through meson test)");
    catalog_tests(models);
    hf_tests(src);
    return tap_done();
}
