/* Loader unit tests: good model/GPU/profile files, defaults, Hugging Face detection, catalog
 * search and resolution, profile queries, strict numbers. Suite: unit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pp.h"
#include "pp_load.h"
#include "pp_profile.h"
#include "pp_yaml.h"
#include "tap.h"

static const char *src_dir, *models_dir;

static pp_status load_model_str(pp_model *m, const char *text, pp_error *err)
{
    memset(err, 0, sizeof *err);
    return pp_model_load_string(m, text, strlen(text), "mem.yaml", err);
}

static void show(const pp_error *err)
{
    char buf[1200];
    pp_error_format(err, buf, sizeof buf);
    tap_diag("error: %s", buf);
}

static void test_model_defaults(void)
{
    pp_model m;
    pp_error err;
    /* Minimal GPT: kv_heads, head_dim and ffn derived; GPT defaults for the rest. */
    pp_status st = load_model_str(&m, "layers: 2\nhidden: 64\nheads: 4\nvocab: 100\nseq: 16\n", &err);
    if (!tap_ok(st == PP_OK, "minimal model loads")) show(&err);
    tap_ok(m.kv_heads == 4 && m.head_dim == 16 && m.ffn == 256, "defaults kv=4 head_dim=16 ffn=4h=256 (%lld %lld %lld)",
           (long long)m.kv_heads, (long long)m.head_dim, (long long)m.ffn);
    tap_ok(m.act == PP_ACT_GELU && m.norm == PP_NORM_LAYERNORM && m.pos == PP_POS_LEARNED && m.bias && m.tied,
           "GPT defaults: gelu, layernorm, learned, bias, tied");
    tap_ok(!strcmp(m.name, "mem"), "name from the path stem ('%s')", m.name);
    /* Exact count by hand: emb (100+16)*64 = 7424; layer 12h^2+13h = 49152+832 = 49984;
     * final norm 128 -> 7424 + 2*49984 + 128 = 107520. */
    pp_param_count pc;
    pp_model_params(&m, &pc);
    tap_ok(pc.total == 107520, "tiny GPT count by hand: %lld == 107520", (long long)pc.total);
    tap_ok(pc.embedding == 7424 && pc.per_layer == 49984 && pc.final_norm == 128 && pc.output == 0,
           "tiny GPT parts: emb %lld layer %lld final %lld out %lld", (long long)pc.embedding,
           (long long)pc.per_layer, (long long)pc.final_norm, (long long)pc.output);

    /* SwiGLU default ffn: LLaMA's 2/3*4h rounded up to 256: 11008 for h = 4096. */
    st = load_model_str(&m, "layers: 1\nhidden: 4096\nheads: 32\nvocab: 32000\nseq: 4096\nactivation: swiglu\n"
                            "norm: rmsnorm\nposition: rope\nbias: false\ntied: false\n", &err);
    if (!tap_ok(st == PP_OK, "swiglu model loads")) show(&err);
    tap_ok(m.ffn == 11008, "swiglu default ffn 11008 (%lld)", (long long)m.ffn);

    /* GQA + untied + no bias: hand count for h=8, a=4, g=2, d=2, f=16, V=10, s=4, L=1.
     * qkv 8*(8+2*4)=128, proj 64, mlp 3*8*16=384, norms 2*8 -> layer 592; emb 80; final 8;
     * output 80 -> 760. */
    st = load_model_str(&m, "{layers: 1, hidden: 8, heads: 4, kv_heads: 2, ffn: 16, vocab: 10, seq: 4,"
                            " activation: swiglu, norm: rmsnorm, position: rope, bias: false, tied: false}", &err);
    if (!tap_ok(st == PP_OK, "flow-style GQA model loads")) show(&err);
    pp_model_params(&m, &pc);
    tap_ok(pc.total == 760 && pc.per_layer == 592, "GQA/SwiGLU/untied hand count %lld == 760 (layer %lld == 592)",
           (long long)pc.total, (long long)pc.per_layer);

    /* MoE: E=4, k=2; expert 3*8*16 = 384 each, router 8*4 = 32. */
    st = load_model_str(&m, "{layers: 2, hidden: 8, heads: 4, ffn: 16, vocab: 10, seq: 4, activation: swiglu,"
                            " norm: rmsnorm, position: rope, bias: false, tied: false, experts: 4, topk: 2}", &err);
    if (!tap_ok(st == PP_OK, "MoE model loads")) show(&err);
    pp_model_params(&m, &pc);
    /* shared: qkv 8*24=192, proj 64, norms 16, router 32 -> 304 */
    tap_ok(pc.per_layer == 304 + 4 * 384 && pc.layer_active == 304 + 2 * 384,
           "MoE per layer %lld == 1840, active %lld == 1072", (long long)pc.per_layer, (long long)pc.layer_active);
    tap_ok(pc.active == 2 * 1072 + 80 + 8 + 80, "MoE active total %lld", (long long)pc.active);

    /* Explicit head_dim when hidden is not a multiple of heads (GPT-3 13B: 5140, 40 x 128). */
    st = load_model_str(&m, "{layers: 1, hidden: 5140, heads: 40, head_dim: 128, vocab: 10, seq: 4}", &err);
    tap_ok(st == PP_OK && m.head_dim == 128, "explicit head_dim accepted with hidden %% heads != 0");

    /* Large but legal: ~1e15 parameters do not overflow (house rule). */
    st = load_model_str(&m, "{layers: 1000, hidden: 262144, heads: 1024, vocab: 100000, seq: 8192}", &err);
    if (!tap_ok(st == PP_OK, "a 1e15-parameter model validates")) show(&err);
    pp_model_params(&m, &pc);
    double h = 262144.0, want = 1000 * (12 * h * h + 13 * h) + (100000.0 + 8192.0) * h + 2 * h;
    tap_ok((double)pc.total == want, "1e15 model: exact count %lld (%.0f)", (long long)pc.total, want);
}

static void test_validate_direct(void)
{
    pp_model m;
    pp_error err = {0};
    pp_model_init(&m);
    m.layers = 2; m.hidden = 100; m.heads = 7; m.vocab = 10; m.seq = 4;
    tap_ok(pp_model_validate(&m, &err) == PP_ERR_INPUT && strstr(err.msg, "heads"),
           "validate: hidden not divisible by heads names heads (%s)", err.msg);
    pp_model_init(&m);
    m.layers = 2; m.hidden = 64; m.heads = 8; m.vocab = 10; m.seq = 4; m.experts = 4; m.topk = 5;
    tap_ok(pp_model_validate(&m, &err) == PP_ERR_INPUT && strstr(err.msg, "topk"),
           "validate: topk > experts names topk (%s)", err.msg);
    pp_model_init(&m);
    m.layers = 0; m.hidden = 64; m.heads = 8; m.vocab = 10; m.seq = 4;
    tap_ok(pp_model_validate(&m, &err) == PP_ERR_INPUT && strstr(err.msg, "layers"),
           "validate: layers 0 names layers (%s)", err.msg);
    pp_model_init(&m);
    m.layers = 100000; m.hidden = 1000000; m.heads = 8; m.vocab = 10; m.seq = 4;
    tap_ok(pp_model_validate(&m, &err) == PP_ERR_INPUT && strstr(err.msg, "parameters"),
           "validate: > 1e16 parameters refused (%s)", err.msg);
    pp_model_init(&m);
    m.layers = 2; m.hidden = 64; m.heads = 8; m.kv_heads = 3; m.vocab = 10; m.seq = 4;
    tap_ok(pp_model_validate(&m, &err) == PP_ERR_INPUT && strstr(err.msg, "kv_heads"),
           "validate: kv_heads not dividing heads (%s)", err.msg);
}

static void test_gpu(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/gpus/h100-sxm.yaml", models_dir);
    pp_gpu g;
    pp_error err = {0};
    pp_status st = pp_gpu_load_file(&g, path, &err);
    if (!tap_ok(st == PP_OK, "h100-sxm.yaml loads")) show(&err);
    tap_ok(g.memory_bytes == 81559.0 * 1048576.0, "h100 memory 81559 MiB = %.0f bytes", g.memory_bytes);
    tap_ok(g.peak_flops[PP_DT_BF16] == 989.4e12 && g.peak_flops[PP_DT_FP8] == 1978.9e12,
           "h100 bf16 989.4, fp8 1978.9 TFLOP/s");
    tap_ok(fabs(g.intra_latency_s - 5e-6) < 1e-15 && g.gpus_per_node == 8 && g.nvlink_gbs == 450,
           "h100 latency 5 us, 8 per node, NVLink 450 GB/s");
    const char *gib = "name: x\nmemory_gib: 80\nmem_bw_gbs: 2000\nflops: {bf16: 312}\nnvlink_gbs: 0\n"
                      "pcie_gbs: 32\ngpus_per_node: 4\ninternode_gbs: 0\ngemm_eff: 0.8\n"
                      "intra_latency_us: 10\ninter_latency_us: 20\n";
    st = pp_gpu_load_string(&g, gib, strlen(gib), "x.yaml", &err);
    if (!tap_ok(st == PP_OK, "GPU with memory_gib loads")) show(&err);
    tap_ok(g.memory_bytes == 80.0 * 1073741824.0 && g.peak_flops[PP_DT_FP32] == 0,
           "memory_gib scaled; missing dtypes are 0 (unsupported)");
}

static void test_hf(void)
{
    pp_model m;
    pp_error err;
    /* Unknown keys ignored, null is absent (n_inner -> 4h), nested unrelated objects skipped. */
    const char *gpt2 = "{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4,"
                       " \"n_positions\": 32, \"vocab_size\": 100, \"n_inner\": null,"
                       " \"task_specific_params\": {\"x\": {\"y\": [1, 2, {\"z\": null}]}}, \"whatever\": [true]}";
    pp_status st = load_model_str(&m, gpt2, &err);
    if (!tap_ok(st == PP_OK, "HF gpt2 string loads")) show(&err);
    tap_ok(m.ffn == 256 && m.seq == 32 && m.tied && m.act == PP_ACT_GELU, "gpt2: ffn 4h, seq from n_positions, tied, gelu");
    tap_ok(!strcmp(m.family, "gpt2"), "family = model_type");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/loader/data/hf/llama-2-7b.json", src_dir);
    st = pp_model_load_file(&m, path, &err);
    if (!tap_ok(st == PP_OK, "llama-2-7b.json loads")) show(&err);
    tap_ok(!strcmp(m.name, "Llama-2-7b-hf"), "HF name from _name_or_path ('%s')", m.name);
    tap_ok(m.act == PP_ACT_SWIGLU && m.norm == PP_NORM_RMSNORM && m.pos == PP_POS_ROPE && !m.bias && !m.tied &&
               m.seq == 4096, "llama: swiglu rmsnorm rope no-bias untied seq 4096");
    snprintf(path, sizeof path, "%s/tests/loader/data/hf/falcon-7b.json", src_dir);
    st = pp_model_load_file(&m, path, &err);
    tap_ok(st == PP_OK && m.kv_heads == 1 && m.head_dim == 64 && !m.bias && m.seq == 2048,
           "falcon-7b: multi-query kv=1, head_dim 64, no bias, seq 2048");
    tap_ok(!strcmp(m.name, "falcon-7b"), "HF name from file stem ('%s')", m.name);
    snprintf(path, sizeof path, "%s/tests/loader/data/hf/mixtral-8x7b.json", src_dir);
    st = pp_model_load_file(&m, path, &err);
    tap_ok(st == PP_OK && m.experts == 8 && m.topk == 2 && m.kv_heads == 8, "mixtral: 8 experts, top-2, 8 KV heads");
}

static void test_catalog(void)
{
    char dir[1024];
    pp_error err = {0};
    setenv("PARPLAN_MODELS_DIR", models_dir, 1);
    pp_status st = pp_catalog_find_dir(NULL, dir, sizeof dir, &err);
    tap_ok(st == PP_OK && !strcmp(dir, models_dir), "find_dir honours PARPLAN_MODELS_DIR");
    setenv("PARPLAN_MODELS_DIR", "/nonexistent/models.d", 1);
    st = pp_catalog_find_dir(NULL, dir, sizeof dir, &err);
    tap_ok(st == PP_ERR_INPUT && strstr(err.msg, "PARPLAN_MODELS_DIR"), "bad PARPLAN_MODELS_DIR is an error (%s)", err.msg);
    setenv("PARPLAN_MODELS_DIR", models_dir, 1);

    pp_catalog cat;
    st = pp_catalog_load(&cat, models_dir, &err);
    if (!tap_ok(st == PP_OK, "catalog loads")) { show(&err); return; }
    for (int i = 1; i < cat.n_models; i++)
        if (strcmp(cat.models[i - 1].name, cat.models[i].name) >= 0) tap_ok(0, "models sorted at %d", i);
    tap_ok(pp_catalog_gpu(&cat, "a100-80gb") && pp_catalog_gpu(&cat, "h200") && pp_catalog_gpu(&cat, "b200"),
           "a100-80gb, h200, b200 in the catalog");
    static const char *const need[] = {"gpt3-125m", "gpt3-350m", "gpt3-1.3b", "gpt3-2.7b", "gpt3-6.7b", "gpt3-13b",
                                       "gpt3-175b", "sc21-1.7b", "sc21-1t", "bloom-176b", "opt-13b", "opt-175b",
                                       "gpt-neox-20b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b",
                                       "llama3-70b", "llama3-405b", "mixtral-8x7b", "bert-large"};
    int missing = 0;
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!pp_catalog_model(&cat, need[i])) { tap_diag("missing %s", need[i]); missing++; }
    tap_ok(missing == 0, "every required model is in the catalog");
    static const char *const gneed[] = {"v100-32gb", "a100-40gb", "a100-80gb", "h100-sxm", "h200", "rtx3090",
                                        "rtx4090", "a6000", "b200"};
    missing = 0;
    for (size_t i = 0; i < sizeof gneed / sizeof gneed[0]; i++)
        if (!pp_catalog_gpu(&cat, gneed[i])) { tap_diag("missing %s", gneed[i]); missing++; }
    tap_ok(missing == 0, "every required GPU is in the catalog");

    pp_model m;
    st = pp_model_resolve(&m, &cat, "llama3-8b", &err);
    tap_ok(st == PP_OK && m.vocab == 128256, "resolve by catalog name");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/loader/data/hf/gpt2.json", src_dir);
    st = pp_model_resolve(&m, &cat, path, &err);
    tap_ok(st == PP_OK && m.hidden == 768, "resolve by file path (HF config)");
    st = pp_model_resolve(&m, &cat, "gpt5-10t", &err);
    tap_ok(st == PP_ERR_INPUT && !strcmp(err.msg, "unknown model 'gpt5-10t' (see parplan models)"),
           "unknown model message: %s", err.msg);
    st = pp_model_resolve(&m, &cat, "no/such/file.yaml", &err);
    tap_ok(st == PP_ERR_INPUT && !strcmp(err.file, "no/such/file.yaml") && strstr(err.msg, "cannot open"),
           "missing model file: %s: %s", err.file, err.msg);
    pp_gpu g;
    st = pp_gpu_resolve(&g, &cat, "h100", &err);
    tap_ok(st == PP_ERR_INPUT && !strcmp(err.msg, "unknown GPU 'h100' (see parplan models)"), "unknown GPU message: %s", err.msg);
    st = pp_gpu_resolve(&g, &cat, "h200", &err);
    tap_ok(st == PP_OK && g.memory_bytes == 143771.0 * 1048576.0, "resolve h200: 143771 MiB");
    pp_catalog_free(&cat);
    pp_catalog_free(&cat); /* twice is harmless */
    pp_catalog_free(NULL);

    /* A catalog whose file name and name disagree is refused (names stay unique). */
    char tmp[] = "/tmp/pp-cat-XXXXXX";
    if (tap_ok(mkdtemp(tmp) != NULL, "temp catalog dir")) {
        char p[1200];
        snprintf(p, sizeof p, "%s/models", tmp); mkdir(p, 0700);
        snprintf(p, sizeof p, "%s/gpus", tmp); mkdir(p, 0700);
        snprintf(p, sizeof p, "%s/models/a.yaml", tmp);
        FILE *f = fopen(p, "w");
        fputs("name: b\nlayers: 1\nhidden: 8\nheads: 2\nvocab: 10\nseq: 4\n", f);
        fclose(f);
        st = pp_catalog_load(&cat, tmp, &err);
        tap_ok(st == PP_ERR_INPUT && strstr(err.msg, "differs from the file name"), "name/file mismatch refused: %s", err.msg);
        tap_ok(cat.n_models == 0 && cat.models == NULL, "failed catalog is empty");
        remove(p);
        snprintf(p, sizeof p, "%s/models", tmp); rmdir(p);
        snprintf(p, sizeof p, "%s/gpus", tmp); rmdir(p);
        rmdir(tmp);
    }
}

static void test_profile(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/profiles/sample.yaml", src_dir);
    pp_profile p;
    pp_error err = {0};
    pp_status st = pp_profile_load_file(&p, path, &err);
    if (!tap_ok(st == PP_OK, "sample profile loads")) { show(&err); return; }
    tap_ok(p.n_gemm == 6 && p.n_attn == 2 && p.n_layer == 1 && p.n_nccl == 5, "record counts 6/2/1/5");
    tap_ok(p.copy_gbs == 2900 && p.mul_gbs == 2800, "bandwidth");
    tap_ok(p.attn[0].flash == 1 && p.attn[1].flash == 0, "attention impl flash/unfused");
    tap_ok(p.nccl[3].op == PP_COLL_ALL_GATHER && p.gemm[5].dtype == PP_DT_FP32, "enum fields");
    tap_near(pp_profile_gemm_tflops(&p, PP_DT_BF16, 4096, 4096, 4096), 700, 1e-12, "gemm exact shape");
    tap_near(pp_profile_gemm_tflops(&p, PP_DT_BF16, 2896, 2896, 2896), 650, 1e-3,
             "gemm interpolated in log(flops) between 2048^3 and 4096^3");
    tap_near(pp_profile_gemm_tflops(&p, PP_DT_BF16, 64, 64, 64), 300, 1e-12, "gemm clamped below");
    tap_near(pp_profile_gemm_tflops(&p, PP_DT_BF16, 65536, 65536, 65536), 789, 1e-12, "gemm clamped above");
    tap_ok(pp_profile_gemm_tflops(&p, PP_DT_FP16, 4096, 4096, 4096) == 0, "gemm: no fp16 data -> 0");
    tap_near(pp_profile_gemm_tflops(&p, PP_DT_FP32, 100, 100, 100), 51, 1e-12, "gemm: single point");
    tap_near(pp_profile_busbw_gbs(&p, PP_COLL_ALL_REDUCE, 2, 4194304), 60, 1e-9, "busbw interpolated in log(bytes)");
    tap_near(pp_profile_busbw_gbs(&p, PP_COLL_ALL_REDUCE, 2, 1024), 20, 1e-12, "busbw clamped below");
    tap_near(pp_profile_busbw_gbs(&p, PP_COLL_ALL_REDUCE, 2, 1e12), 140, 1e-12, "busbw clamped above");
    tap_ok(pp_profile_busbw_gbs(&p, PP_COLL_ALL_REDUCE, 8, 1e6) == 0, "busbw: other rank count -> 0");
    tap_ok(pp_profile_busbw_gbs(&p, PP_COLL_REDUCE_SCATTER, 2, 1e6) == 0, "busbw: unmeasured op -> 0");
    tap_ok(pp_profile_busbw_gbs(NULL, PP_COLL_ALL_REDUCE, 2, 1e6) == 0 && pp_profile_gemm_tflops(NULL, PP_DT_BF16, 1, 1, 1) == 0,
           "NULL profile -> 0");
    pp_profile_free(&p);
    pp_profile_free(&p);
    pp_profile_free(NULL);
    tap_ok(p.gemm == NULL && p.n_gemm == 0, "free resets");
}

/* Issue 8: the `optimizer:` section (parplan-probe optimizer) and pp_profile_optimizer_s. Records
 * out of order and two of the same size (averaged: 11 ms at 1e9). */
static void test_profile_optimizer(void)
{
    static const char text[] =
        "gpu: \"SAMPLE\"\nmeasured: \"2026-01-01T00:00:00Z\"\n"
        "optimizer:\n"
        "  - {params: 1000000000, bytes_per_param: 30, ms: 10.5, gbs: 2857.14}\n"
        "  - {params: 100000000, bytes_per_param: 30, ms: 1.5, gbs: 2000}\n"
        "  - {params: 1e9, bytes_per_param: 30, ms: 11.5, gbs: 2608.7}\n";
    char path[] = "/tmp/pp_loader_opt_XXXXXX.yaml";
    int fd = mkstemps(path, 5);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!tap_ok(f && fputs(text, f) >= 0 && fclose(f) == 0, "optimizer profile written")) return;
    pp_profile p;
    pp_error err = {0};
    pp_status st = pp_profile_load_file(&p, path, &err);
    unlink(path);
    if (!tap_ok(st == PP_OK, "a profile with an optimizer section loads")) { show(&err); return; }
    tap_ok(p.n_optimizer == 3, "3 optimizer records (%d)", p.n_optimizer);
    tap_ok(p.optimizer[0].params == 1e9 && p.optimizer[1].params == 1e8 && p.optimizer[2].params == 1e9,
           "params read in file order, 1e9 spelled either way");
    tap_ok(p.optimizer[0].bytes_per_param == 30 && p.optimizer[1].bytes_per_param == 30, "bytes_per_param 30");
    tap_ok(p.optimizer[0].ms == 10.5 && p.optimizer[1].ms == 1.5 && p.optimizer[2].ms == 11.5, "ms read back");
    tap_ok(p.optimizer[0].gbs == 2857.14 && p.optimizer[1].gbs == 2000, "gbs read back");
    tap_near(pp_profile_optimizer_s(&p, 1e8), 1.5e-3, 1e-12, "optimizer step at a record: its time");
    tap_near(pp_profile_optimizer_s(&p, 1e9), 11e-3, 1e-12, "two records of one size: their mean");
    tap_near(pp_profile_optimizer_s(&p, 5.5e8), 6.25e-3, 1e-12, "halfway: linear in params (1.5 + 11) / 2 ms");
    tap_near(pp_profile_optimizer_s(&p, 3.25e8), 3.875e-3, 1e-12, "a quarter of the way: 1.5 + 9.5 / 4 ms");
    tap_near(pp_profile_optimizer_s(&p, 1e7), 1.5e-4, 1e-12, "below: the smallest record's rate (1e8 params / 1.5 ms)");
    tap_near(pp_profile_optimizer_s(&p, 4e9), 44e-3, 1e-12, "above: the largest record's rate (1e9 params / 11 ms)");
    tap_near(pp_profile_optimizer_s(&p, 1e15), 11e3, 1e-12, "1e15 params: finite, 11000 s");
    tap_ok(pp_profile_optimizer_s(&p, 0) == -1 && pp_profile_optimizer_s(&p, -5) == -1 &&
               pp_profile_optimizer_s(&p, NAN) == -1,
           "no size -> -1");
    pp_profile_free(&p);
    tap_ok(p.optimizer == NULL && p.n_optimizer == 0, "free resets the optimizer records");
    tap_ok(pp_profile_optimizer_s(&p, 1e9) == -1 && pp_profile_optimizer_s(NULL, 1e9) == -1,
           "no optimizer records -> -1");
}

/* Issue 8: a layer record's optional kv_heads (grouped-query attention): absent reads as heads,
 * given it is kept; JSON spelling too. */
static void test_profile_layer_kv(void)
{
    static const char text[] =
        "{\"gpu\": \"SAMPLE\", \"measured\": \"2026-01-01T00:00:00Z\",\n"
        " \"layer\": [{\"hidden\": 2048, \"heads\": 16, \"seq\": 2048, \"mbs\": 8, \"tp\": 1, \"fwd_ms\": 2.7,"
        " \"fwdbwd_ms\": 9.5},\n"
        "  {\"hidden\": 3072, \"heads\": 24, \"kv_heads\": 8, \"seq\": 4096, \"mbs\": 2, \"tp\": 2,"
        " \"fwd_ms\": 30.5, \"fwdbwd_ms\": 95.25, \"activation\": \"swiglu\", \"dtype\": \"bf16\"},\n"
        "  {\"hidden\": 4096, \"heads\": 32, \"kv_heads\": 32, \"seq\": 2048, \"mbs\": 1, \"tp\": 1,"
        " \"fwd_ms\": 5, \"fwdbwd_ms\": 15}]}\n";
    char path[] = "/tmp/pp_loader_kv_XXXXXX.json";
    int fd = mkstemps(path, 5);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!tap_ok(f && fputs(text, f) >= 0 && fclose(f) == 0, "GQA layer profile written")) return;
    pp_profile p;
    pp_error err = {0};
    pp_status st = pp_profile_load_file(&p, path, &err);
    unlink(path);
    if (!tap_ok(st == PP_OK && p.n_layer == 3, "a profile with a kv_heads layer record loads (3 records)")) {
        show(&err);
        pp_profile_free(&p);
        return;
    }
    tap_ok(p.layer[0].kv_heads == 16, "absent kv_heads: = heads (16), multi-head");
    tap_ok(p.layer[1].kv_heads == 8 && p.layer[1].heads == 24 && p.layer[1].tp == 2 && p.layer[1].fwdbwd_ms == 95.25,
           "kv_heads 8 of 24 heads read back with the record");
    tap_ok(p.layer[2].kv_heads == 32, "kv_heads equal to heads is accepted (32)");
    pp_profile_free(&p);
}

static void test_numbers(void)
{
    static const struct { const char *s; int ok; double v; } c[] = {
        {"0", 1, 0}, {"42", 1, 42}, {"-3.5", 1, -3.5}, {"1e9", 1, 1e9}, {"6.74E9", 1, 6.74e9},
        {"", 0, 0}, {" 1", 0, 0}, {"1 ", 0, 0}, {"nan", 0, 0}, {"inf", 0, 0}, {".inf", 0, 0},
        {"0x10", 0, 0}, {"1e999", 0, 0}, {"12abc", 0, 0}, {"1,000", 0, 0}, {"1_000", 0, 0},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        double v = -1;
        bool ok = pp_yaml_parse_double(c[i].s, &v);
        tap_ok(ok == (bool)c[i].ok && (!ok || v == c[i].v), "number '%s' -> %s", c[i].s, c[i].ok ? "accepted" : "rejected");
    }
}

int main(void)
{
    src_dir = getenv("PARPLAN_SOURCE_DIR");
    models_dir = getenv("PARPLAN_MODELS_DIR");
    if (!src_dir || !models_dir) return tap_skip_all("PARPLAN_SOURCE_DIR / PARPLAN_MODELS_DIR not set (run through meson test)");
    test_model_defaults();
    test_validate_direct();
    test_gpu();
    test_hf();
    test_catalog();
    test_profile();
    test_profile_optimizer();
    test_profile_layer_kv();
    test_numbers();
    return tap_done();
}
