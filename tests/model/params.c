/* Parameter counts: every catalog model against its published count, the per-tensor table
 * against Narayanan et al. (SC21) eq. 2, and Hugging Face config.json files of each family
 * against the counts of the released checkpoints. Suite: unit. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp.h"
#include "pp_load.h"
#include "tap.h"

/* Published counts are usually exact (checkpoint counts) and must agree within 0.5%. A few
 * are printed with two significant digits (GPT-3 Table 2.1, SC21 Table 1): there the figure's
 * own rounding, half a unit of its last digit, is the tolerance. gpt3-350m is a nominal
 * label: the exact count of that shape is 355.9M (eq. 2), 1.7% above "350M". Today's models
 * have their own rows below (published[]). */
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

/* Today's models: the published total and active counts of each, for its Hugging Face config
 * (tests/data/hf/<file>.config.json) and its catalog entry (models.d/models/<catalog>.yaml,
 * "" when not catalogued).
 *
 * Tolerance: these figures are printed with two to five significant digits ("37B", "30.5B",
 * "116.83B") and some publishers truncate rather than round (Qwen3-30B-A3B's 3.353B is "3.3B"),
 * so a count agrees when it is within one unit of the figure's last digit: `unit` below. Kimi
 * K2's "1T" (one digit) is given 3%, Maverick's "400B" is read as two digits.
 *
 * What the figure counts:
 *   - vision: the published totals of Gemma 3 and Llama 4 are of the multimodal checkpoint. Ours
 *     is the language model; the vision tower is added from the config's vision_config:
 *     Gemma 3's SigLIP (27 layers of width 1152, MLP 4304, 896/14 = 64^2 patches, no head:
 *     patch conv 678,528 + positions 4,718,592 + 27 x 15,239,504 + post-norm 2,304) and the
 *     projector (1152 x 5376 + 1152) = 423,060,336; Llama 4's encoder (34 layers of width
 *     1408 with biases, MLP 5632, 577 positions: 34 x 23,807,872 + embeddings and norms
 *     1,647,360), its adapter MLP (5632 x 4096 + 4096 x 4096) and projector (4096 x 5120) =
 *     871,932,416 (Llama4VisionModel, Llama4MultiModalProjector). Our text-only counts are
 *     27.009B (Gemma 3 27B, 1.5% under the published 27.4B) and 107.77B / 400.71B (Scout /
 *     Maverick, 1.1% / 0.2% under 109B / 400B): that difference is the expected one.
 *   - active without the input embedding: the gpt-oss model card (Table 1) counts the
 *     unembedding but not the embedding table in "active" (a lookup, no FLOPs); DeepSeek's
 *     activated counts agree with the same convention (V2-Lite: 2.45B vs "2.4B"; with the
 *     embedding 2.66B) and so do Kimi K2's. Qwen, Mixtral and Llama 4 count it.
 *   - DeepSeek-V3's 671B leaves out the 11.6B MTP module (ours: mtp_total, apart). */
typedef struct {
    const char *file, *catalog;
    double total, total_unit; /* published total and the unit of its last digit */
    double active, active_unit;
    bool active_no_embedding;
    double non_text;          /* vision tower and projector inside the published total */
    const char *source;
} published_row;

static const published_row published[] = {
    {"DeepSeek-V3", "deepseek-v3", 671e9, 1e9, 37e9, 1e9, true, 0, "DeepSeek-V3 report sec. 1"},
    {"DeepSeek-V2-Lite", "deepseek-v2-lite", 15.7e9, 0.1e9, 2.4e9, 0.1e9, true, 0, "DeepSeek-V2 appendix B"},
    {"Kimi-K2", "kimi-k2", 1e12, 0.03e12, 32e9, 1e9, true, 0, "Kimi K2 model card"},
    {"Qwen3-8B", "qwen3-8b", 8.2e9, 0.1e9, 0, 0, false, 0, "Qwen3-8B model card"},
    {"Qwen3-32B", "qwen3-32b", 32.8e9, 0.1e9, 0, 0, false, 0, "Qwen3-32B model card"},
    {"Qwen3-30B-A3B", "qwen3-30b-a3b", 30.5e9, 0.1e9, 3.3e9, 0.1e9, false, 0, "Qwen3-30B-A3B model card"},
    {"Qwen3-235B-A22B", "qwen3-235b-a22b", 235e9, 1e9, 22e9, 1e9, false, 0, "Qwen3-235B-A22B model card"},
    {"Qwen2-57B-A14B", "", 57e9, 1e9, 14e9, 1e9, false, 0, "Qwen2-57B-A14B model card (57B, 14B active)"},
    {"gpt-oss-120b", "gpt-oss-120b", 116.83e9, 0.01e9, 5.13e9, 0.01e9, true, 0, "gpt-oss model card Table 1"},
    {"gpt-oss-20b", "gpt-oss-20b", 20.91e9, 0.01e9, 3.61e9, 0.01e9, true, 0, "gpt-oss model card Table 1"},
    {"Gemma-2-9B", "gemma2-9b", 9.24e9, 0.01e9, 0, 0, false, 0, "google/gemma-2-9b model page"},
    {"Gemma-2-27B", "gemma2-27b", 27.2e9, 0.1e9, 0, 0, false, 0, "google/gemma-2-27b model page"},
    {"Gemma-3-27B", "gemma3-27b", 27.4e9, 0.1e9, 0, 0, false, 423060336.0, "google/gemma-3-27b-pt model page"},
    {"Llama-4-Scout", "llama4-scout", 109e9, 1e9, 17e9, 1e9, false, 871932416.0, "Llama 4 model card"},
    {"Llama-4-Maverick", "llama4-maverick", 400e9, 10e9, 17e9, 1e9, false, 871932416.0, "Llama 4 model card"},
    {"Mixtral-8x22B", "mixtral-8x22b", 141e9, 1e9, 39e9, 1e9, false, 0, "Mixtral 8x22B announcement"},
    {"Phi-3-mini", "", 3.8e9, 0.1e9, 0, 0, false, 0, "Phi-3-mini-4k-instruct model card (3.8B)"},
    /* squared ReLU (hidden_act relu2), LayerNorm1P, GQA 96/8, untied 256000 vocabulary */
    {"Nemotron-4-340B", "", 340e9, 10e9, 0, 0, false, 0, "Nemotron-4 340B report (arXiv:2406.11704): 340B"},
};
#define N_PUBLISHED (sizeof published / sizeof published[0])

static const published_row *published_find(const char *catalog)
{
    for (size_t i = 0; i < N_PUBLISHED; i++)
        if (published[i].catalog[0] && !strcmp(published[i].catalog, catalog)) return &published[i];
    return NULL;
}

/* Our counts against one row: total (+ vision) and active, the error printed per row. */
static void published_check(const published_row *r, const pp_model *m, const char *what)
{
    pp_param_count pc;
    pp_model_params(m, &pc);
    tap_near((double)pc.total + r->non_text, r->total, r->total_unit / r->total,
             "%s %s: total %.3fB%s vs %.5gB published (%s)", r->file, what, (double)pc.total / 1e9,
             r->non_text > 0 ? " + vision tower" : "", r->total / 1e9, r->source);
    if (r->active <= 0) return;
    double active = (double)pc.active - (r->active_no_embedding ? (double)pc.embedding : 0.0);
    tap_near(active, r->active, r->active_unit / r->active, "%s %s: active %.3fB%s vs %.5gB published",
             r->file, what, active / 1e9, r->active_no_embedding ? " without the input embedding" : "",
             r->active / 1e9);
    if (r->active_no_embedding)
        tap_diag("%s: with the input embedding, %.3fB active", r->file, (double)pc.active / 1e9);
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
        const published_row *r = published_find(m->name);
        if (r) {
            tap_ok(r->total == m->published_params && r->active == m->published_active,
                   "%s: published_params and published_active are the figures of tests/model/params.c", m->name);
            published_check(r, m, "(catalog)");
        } else {
            tap_near((double)pc.total, m->published_params, tolerance(m->name, m->published_params),
                     "%s parameters vs published (%s)", m->name, m->source);
        }
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
    /* The SC21 table rows in tests/data/validation agree with the catalog's sc21-* files. */
    const char *shared = getenv("PARPLAN_DATA_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/validation/megatron_sc21_table1.csv", shared ? shared : "tests/data");
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

/* Hugging Face config.json files under tests/model/data/hf, with the parameter count of
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
        snprintf(path, sizeof path, "%s/tests/model/data/hf/%s", src, cases[i].file);
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

/* Same counts, part by part, from two files of one model. */
static void same_counts(const char *what, const pp_model *a, const pp_model *b)
{
    pp_param_count x, y;
    pp_model_params(a, &x);
    pp_model_params(b, &y);
    int64_t ka[PP_LAYER_KINDS], kb[PP_LAYER_KINDS];
    pp_model_layer_counts(a, 0, a->layers, ka);
    pp_model_layer_counts(b, 0, b->layers, kb);
    bool kinds = true;
    for (int k = 0; k < PP_LAYER_KINDS; k++) kinds = kinds && ka[k] == kb[k];
    for (int64_t i = 0; i < a->layers && i < b->layers; i++)
        kinds = kinds && pp_model_layer_kind(a, i) == pp_model_layer_kind(b, i);
    bool same = x.total == y.total && x.active == y.active && x.mtp_total == y.mtp_total &&
                x.embedding == y.embedding && x.attention == y.attention && x.dense_mlp == y.dense_mlp &&
                x.moe_shared == y.moe_shared && x.expert == y.expert && x.output == y.output &&
                x.dense_layers == y.dense_layers && x.moe_layers == y.moe_layers;
    if (!tap_ok(same && kinds && a->window == b->window, "%s: config.json and the catalog give the same counts, "
                "parts and layer kinds (%lld)", what, (long long)x.total))
        tap_diag("total %lld vs %lld, active %lld vs %lld, attention %lld vs %lld, expert %lld vs %lld, "
                 "window %lld vs %lld, kinds %s", (long long)x.total, (long long)y.total, (long long)x.active,
                 (long long)y.active, (long long)x.attention, (long long)y.attention, (long long)x.expert,
                 (long long)y.expert, (long long)a->window, (long long)b->window, kinds ? "same" : "differ");
}

/* tests/data/hf: today's models against their published counts, and against their catalog
 * entries. */
static void today_tests(const char *src, const char *models)
{
    pp_catalog cat;
    pp_error err = {0};
    if (!tap_ok(pp_catalog_load(&cat, models, &err) == PP_OK, "catalog loads")) return;
    char path[1024], buf[1200];
    for (size_t i = 0; i < N_PUBLISHED; i++) {
        const published_row *r = &published[i];
        snprintf(path, sizeof path, "%s/tests/data/hf/%s.config.json", src, r->file);
        pp_model m;
        pp_status st = pp_model_load_file(&m, path, &err);
        pp_error_format(&err, buf, sizeof buf);
        if (!tap_ok(st == PP_OK, "load tests/data/hf/%s.config.json", r->file)) {
            tap_diag("%s", buf);
            continue;
        }
        published_check(r, &m, "(config.json)");
        const pp_model *c = r->catalog[0] ? pp_catalog_model(&cat, r->catalog) : NULL;
        if (r->catalog[0] && tap_ok(c != NULL, "%s in the catalog", r->catalog)) same_counts(r->catalog, &m, c);
    }

    /* The figures worked out by hand from the configs with the per-tensor table (the brief's
     * check of the loaders): DeepSeek-V3 671.03B, 37.55B active, MTP 11.61B; Qwen3-30B-A3B
     * 30.53B, 3.35B. Exact, to the parameter. */
    static const struct { const char *file; int64_t total, active, mtp; } exact[] = {
        {"DeepSeek-V3", 671026419200LL, 37552297472LL, 11610068224LL},
        {"Qwen3-30B-A3B", 30532122624LL, 3353032704LL, 0},
        {"gpt-oss-120b", 116829156672LL, 5711982912LL, 0}, /* model card: 116.83B, 5.13B + 0.58B embedding */
        {"gpt-oss-20b", 20914757184LL, 4187440704LL, 0},
        {"Gemma-2-9B", 9241705984LL, 9241705984LL, 0},
        {"Mixtral-8x22B", 140620634112LL, 39152031744LL, 0},
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        snprintf(path, sizeof path, "%s/tests/data/hf/%s.config.json", src, exact[i].file);
        pp_model m;
        if (pp_model_load_file(&m, path, &err) != PP_OK) continue;
        pp_param_count pc;
        pp_model_params(&m, &pc);
        tap_ok(pc.total == exact[i].total && pc.active == exact[i].active && pc.mtp_total == exact[i].mtp,
               "%s: total %lld, active %lld, MTP %lld (want %lld, %lld, %lld)", exact[i].file,
               (long long)pc.total, (long long)pc.active, (long long)pc.mtp_total, (long long)exact[i].total,
               (long long)exact[i].active, (long long)exact[i].mtp);
    }
    pp_catalog_free(&cat);
}

int main(void)
{
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    const char *models = getenv("PARPLAN_MODELS_DIR");
    if (!src || !models) return tap_skip_all("PARPLAN_SOURCE_DIR / PARPLAN_MODELS_DIR not set (run through meson test)");
    catalog_tests(models);
    hf_tests(src);
    today_tests(src, models);
    return tap_done();
}
