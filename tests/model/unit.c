/* Loader unit tests: good model/GPU/profile files, defaults, Hugging Face detection, catalog
 * search and resolution, profile queries, strict numbers. Suite: unit. */
#include <math.h>
#include <stdbool.h>
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
    snprintf(path, sizeof path, "%s/tests/model/data/hf/llama-2-7b.json", src_dir);
    st = pp_model_load_file(&m, path, &err);
    if (!tap_ok(st == PP_OK, "llama-2-7b.json loads")) show(&err);
    tap_ok(!strcmp(m.name, "Llama-2-7b-hf"), "HF name from _name_or_path ('%s')", m.name);
    tap_ok(m.act == PP_ACT_SWIGLU && m.norm == PP_NORM_RMSNORM && m.pos == PP_POS_ROPE && !m.bias && !m.tied &&
               m.seq == 4096, "llama: swiglu rmsnorm rope no-bias untied seq 4096");
    snprintf(path, sizeof path, "%s/tests/model/data/hf/falcon-7b.json", src_dir);
    st = pp_model_load_file(&m, path, &err);
    tap_ok(st == PP_OK && m.kv_heads == 1 && m.head_dim == 64 && !m.bias && m.seq == 2048,
           "falcon-7b: multi-query kv=1, head_dim 64, no bias, seq 2048");
    tap_ok(!strcmp(m.name, "falcon-7b"), "HF name from file stem ('%s')", m.name);
    snprintf(path, sizeof path, "%s/tests/model/data/hf/mixtral-8x7b.json", src_dir);
    st = pp_model_load_file(&m, path, &err);
    tap_ok(st == PP_OK && m.experts == 8 && m.topk == 2 && m.kv_heads == 8, "mixtral: 8 experts, top-2, 8 KV heads");
}

/* Every field each config of tests/data/hf determines, as transformers reads it. */
typedef struct {
    const char *file;
    int64_t layers, hidden, heads, kv_heads, head_dim, ffn, vocab, seq;
    int64_t experts, topk, moe_ffn, shared_experts, shared_ffn, moe_first_dense, moe_every, moe_phase;
    int64_t q_lora, kv_lora, nope, rope, v, mtp;
    int64_t window, full_every, full_phase;
    pp_qk_norm qk_norm;
    int64_t norms;
    bool qkv_bias, out_bias, mlp_bias, sinks, router_bias, shared_gate, tied, dropout_set;
} hf_expect;

static const hf_expect hf_today[] = {
    /* file                layers hidden heads kv  hd   ffn    vocab   seq
     *                     E    k  moe_ffn sh sh_ffn first every phase  MLA (q kv nope rope v) mtp
     *                     window every phase  qk_norm norms  qkv out mlp sinks rbias sgate tied dropout */
    {"Qwen3-8B", 36, 4096, 32, 8, 128, 12288, 151936, 40960,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, PP_QKNORM_HEAD, 2,
     false, false, false, false, false, false, false, true},
    {"Qwen3-32B", 64, 5120, 64, 8, 128, 25600, 151936, 40960,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, PP_QKNORM_HEAD, 2,
     false, false, false, false, false, false, false, true},
    {"Qwen3-30B-A3B", 48, 2048, 32, 4, 128, 6144, 151936, 40960,
     128, 8, 768, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, PP_QKNORM_HEAD, 2,
     false, false, false, false, false, false, false, true},
    {"Qwen3-235B-A22B", 94, 4096, 64, 4, 128, 12288, 151936, 40960,
     128, 8, 1536, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, PP_QKNORM_HEAD, 2,
     false, false, false, false, false, false, false, true},
    /* Qwen2-MoE: q/k/v biases (qkv_bias default), one gated shared expert of 20480 */
    {"Qwen2-57B-A14B", 28, 3584, 28, 4, 128, 18944, 151936, 131072,
     64, 8, 2560, 1, 20480, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, PP_QKNORM_NONE, 2,
     true, false, false, false, false, true, false, true},
    /* DeepSeek-V2-Lite: q_lora_rank null, 2 shared experts of 1408, first layer dense, no router bias */
    {"DeepSeek-V2-Lite", 27, 2048, 16, 16, 192, 10944, 102400, 163840,
     64, 6, 1408, 2, 2816, 1, 1, 0, 0, 512, 128, 64, 128, 0, 0, 0, 0, PP_QKNORM_NONE, 2,
     false, false, false, false, false, false, false, true},
    {"DeepSeek-V3", 61, 7168, 128, 128, 192, 18432, 129280, 163840,
     256, 8, 2048, 1, 2048, 3, 1, 0, 1536, 512, 128, 64, 128, 1, 0, 0, 0, PP_QKNORM_NONE, 2,
     false, false, false, false, true, false, false, true},
    {"Kimi-K2", 61, 7168, 64, 64, 192, 18432, 163840, 131072,
     384, 8, 2048, 1, 2048, 1, 1, 0, 1536, 512, 128, 64, 128, 0, 0, 0, 0, PP_QKNORM_NONE, 2,
     false, false, false, false, true, false, false, true},
    /* gpt-oss: window 128 on even layers, biases, sinks, router bias */
    {"gpt-oss-20b", 24, 2880, 64, 8, 64, 2880, 201088, 131072,
     32, 4, 2880, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 128, 2, 1, PP_QKNORM_NONE, 2,
     true, true, true, true, true, false, false, true},
    {"gpt-oss-120b", 36, 2880, 64, 8, 64, 2880, 201088, 131072,
     128, 4, 2880, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 128, 2, 1, PP_QKNORM_NONE, 2,
     true, true, true, true, true, false, false, true},
    /* Gemma 2: 4 norms, window 4096 on even layers, tied */
    {"Gemma-2-9B", 42, 3584, 16, 8, 256, 14336, 256000, 8192,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4096, 2, 1, PP_QKNORM_NONE, 4,
     false, false, false, false, false, false, true, true},
    {"Gemma-2-27B", 46, 4608, 32, 16, 128, 36864, 256000, 8192,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4096, 2, 1, PP_QKNORM_NONE, 4,
     false, false, false, false, false, false, true, true},
    /* Gemma 3: text_config; vocab and positions from Gemma3TextConfig; global every 6th */
    {"Gemma-3-27B", 62, 5376, 32, 16, 128, 21504, 262208, 131072,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1024, 6, 5, PP_QKNORM_HEAD, 4,
     false, false, false, false, false, false, true, false},
    /* Llama 4: text_config; chunked on 3 of 4 layers; Maverick MoE on odd layers, dense 16384 */
    {"Llama-4-Scout", 48, 5120, 40, 8, 128, 16384, 202048, 262144,
     16, 1, 8192, 1, 8192, 0, 1, 0, 0, 0, 0, 0, 0, 0, 8192, 4, 3, PP_QKNORM_NONE, 2,
     false, false, false, false, false, false, false, true},
    {"Llama-4-Maverick", 48, 5120, 40, 8, 128, 16384, 202048, 1048576,
     128, 1, 8192, 1, 8192, 1, 2, 1, 0, 0, 0, 0, 0, 0, 8192, 4, 3, PP_QKNORM_NONE, 2,
     false, false, false, false, false, false, false, true},
    /* Phi-3: window 2047 on every layer */
    {"Phi-3-mini", 32, 3072, 32, 32, 96, 8192, 32064, 4096,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2047, 0, 0, PP_QKNORM_NONE, 2,
     false, false, false, false, false, false, false, true},
    /* OLMo 2: QK-norm over the whole width */
    {"OLMo-2-7B", 32, 4096, 32, 32, 128, 11008, 100352, 4096,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, PP_QKNORM_FULL, 2,
     false, false, false, false, false, false, false, true},
    {"Mixtral-8x22B", 56, 6144, 48, 8, 128, 16384, 32000, 65536,
     8, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, PP_QKNORM_NONE, 2,
     false, false, false, false, false, false, false, true},
};

static void test_hf_today(void)
{
    for (size_t i = 0; i < sizeof hf_today / sizeof hf_today[0]; i++) {
        const hf_expect *e = &hf_today[i];
        char path[1024];
        snprintf(path, sizeof path, "%s/tests/data/hf/%s.config.json", src_dir, e->file);
        pp_model m;
        pp_error err;
        if (!tap_ok(pp_model_load_file(&m, path, &err) == PP_OK, "%s.config.json loads", e->file)) {
            show(&err);
            continue;
        }
        int64_t got[] = {m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn, m.vocab, m.seq,
                         m.experts, m.topk, m.moe_ffn, m.shared_experts, m.shared_ffn, m.moe_first_dense,
                         m.moe_every, m.moe_phase, m.q_lora_rank, m.kv_lora_rank, m.qk_nope_dim,
                         m.qk_rope_dim, m.v_head_dim, m.mtp_layers, m.window, m.window_full_every,
                         m.window_full_phase, m.qk_norm, m.norms_per_layer};
        int64_t want[] = {e->layers, e->hidden, e->heads, e->kv_heads, e->head_dim, e->ffn, e->vocab, e->seq,
                          e->experts, e->topk, e->moe_ffn, e->shared_experts, e->shared_ffn,
                          e->moe_first_dense, e->moe_every, e->moe_phase, e->q_lora, e->kv_lora, e->nope,
                          e->rope, e->v, e->mtp, e->window, e->full_every, e->full_phase, e->qk_norm, e->norms};
        static const char *const names[] = {"layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab",
                                            "seq", "experts", "topk", "moe_ffn", "shared_experts", "shared_ffn",
                                            "moe_first_dense", "moe_every", "moe_phase", "q_lora_rank",
                                            "kv_lora_rank", "qk_nope_dim", "qk_rope_dim", "v_head_dim",
                                            "mtp_layers", "window", "window_full_every", "window_full_phase",
                                            "qk_norm", "norms_per_layer"};
        int bad = 0;
        for (size_t k = 0; k < sizeof got / sizeof got[0]; k++)
            if (got[k] != want[k] && bad++ < 4)
                tap_diag("%s: %s = %lld, want %lld", e->file, names[k], (long long)got[k], (long long)want[k]);
        bool flags = m.qkv_bias == e->qkv_bias && m.out_bias == e->out_bias && m.mlp_bias == e->mlp_bias &&
                     m.attn_sinks == e->sinks && m.router_bias == e->router_bias && m.shared_gate == e->shared_gate &&
                     m.tied == e->tied && m.dropout_set == e->dropout_set &&
                     m.bias == (e->qkv_bias && e->out_bias && e->mlp_bias) &&
                     m.act == PP_ACT_SWIGLU && m.norm == PP_NORM_RMSNORM && m.pos == PP_POS_ROPE;
        if (!flags)
            tap_diag("%s: qkv %d out %d mlp %d sinks %d router %d gate %d tied %d dropout_set %d bias %d", e->file,
                     m.qkv_bias, m.out_bias, m.mlp_bias, m.attn_sinks, m.router_bias, m.shared_gate, m.tied,
                     m.dropout_set, m.bias);
        tap_ok(bad == 0 && flags, "%s: every field as transformers reads the config", e->file);
        /* every config here that states a dropout states 0 (their config classes' default) */
        tap_ok(m.attention_dropout == 0 && m.hidden_dropout == 0, "%s: dropout 0/0", e->file);
    }

    /* The layer patterns, layer by layer. */
    char path[1024];
    pp_model m;
    pp_error err;
    snprintf(path, sizeof path, "%s/tests/data/hf/DeepSeek-V3.config.json", src_dir);
    if (pp_model_load_file(&m, path, &err) == PP_OK)
        tap_ok(!pp_model_layer_is_moe(&m, 2) && pp_model_layer_is_moe(&m, 3) && pp_model_layer_is_moe(&m, 60) &&
                   pp_model_mtp_kind(&m) == PP_LAYER_MOE, "DeepSeek-V3: layers 0-2 dense, 3-60 MoE, MTP MoE");
    snprintf(path, sizeof path, "%s/tests/data/hf/Llama-4-Maverick.config.json", src_dir);
    if (pp_model_load_file(&m, path, &err) == PP_OK) {
        int ok = m.n_dense_layers == 0;
        for (int64_t i = 0; i < 48; i++)
            ok &= pp_model_layer_is_moe(&m, i) == (i % 2 == 1) && pp_model_layer_is_window(&m, i) == (i % 4 != 3);
        tap_ok(ok, "Llama-4-Maverick: moe_layers 1, 3, ..., 47; chunked except the NoPE layers 3, 7, ...");
    }
    snprintf(path, sizeof path, "%s/tests/data/hf/Gemma-3-27B.config.json", src_dir);
    if (pp_model_load_file(&m, path, &err) == PP_OK) {
        int64_t cnt[PP_LAYER_KINDS];
        pp_model_layer_counts(&m, 0, m.layers, cnt);
        tap_ok(cnt[PP_LAYER_WINDOW] == 52 && cnt[0] == 10 && !pp_model_layer_is_window(&m, 5) &&
                   pp_model_layer_is_window(&m, 6), "Gemma-3-27B: 52 local and 10 global layers (5, 11, ..., 59)");
        tap_ok(!strcmp(m.family, "gemma3") && !strcmp(m.name, "Gemma-3-27B"), "Gemma-3-27B: family gemma3, name from the file");
    }
    snprintf(path, sizeof path, "%s/tests/data/hf/Phi-3-mini.config.json", src_dir);
    if (pp_model_load_file(&m, path, &err) == PP_OK)
        tap_ok(!strcmp(m.name, "Phi-3-mini-4k-instruct"), "Phi-3-mini: name from _name_or_path (%s)", m.name);

    /* Per-part counts by hand. OLMo 2 7B: q_norm 4096 + k_norm 4096 on top of Llama's layer. */
    snprintf(path, sizeof path, "%s/tests/data/hf/OLMo-2-7B.config.json", src_dir);
    if (pp_model_load_file(&m, path, &err) == PP_OK) {
        pp_param_count pc;
        pp_model_params(&m, &pc);
        tap_ok(pc.attention == 4LL * 4096 * 4096 + 4096 + 2 * 4096 && pc.total == 7298617344LL,
               "OLMo-2-7B: attention block %lld = 4 h^2 + norm + q/k norms; total %lld", (long long)pc.attention,
               (long long)pc.total);
    }
    /* Qwen2-57B-A14B: q/k/v biases (3584 + 2 x 512), gate h -> 1 on the shared expert. */
    snprintf(path, sizeof path, "%s/tests/data/hf/Qwen2-57B-A14B.config.json", src_dir);
    if (pp_model_load_file(&m, path, &err) == PP_OK) {
        pp_param_count pc;
        pp_model_params(&m, &pc);
        int64_t attn = 3584LL * (3584 + 1024) + (3584 + 1024) + 3584LL * 3584 + 3584;
        int64_t shared = 3584LL * 64 + 3LL * 3584 * 20480 + 3584 + 3584;
        tap_ok(pc.attention == attn && pc.moe_shared == shared, "Qwen2-57B-A14B: attention %lld == %lld, router + "
               "shared expert + gate + norm %lld == %lld", (long long)pc.attention, (long long)attn,
               (long long)pc.moe_shared, (long long)shared);
    }
    /* gpt-oss-20b: sinks (64), q/k/v/o biases, router bias, expert biases. */
    snprintf(path, sizeof path, "%s/tests/data/hf/gpt-oss-20b.config.json", src_dir);
    if (pp_model_load_file(&m, path, &err) == PP_OK) {
        pp_param_count pc;
        pp_model_params(&m, &pc);
        int64_t attn = 2880LL * (4096 + 1024) + (4096 + 1024) + 4096LL * 2880 + 2880 + 64 + 2880;
        int64_t expert = 2LL * 2880 * 2880 + 2 * 2880 + 2880LL * 2880 + 2880;
        tap_ok(pc.attention == attn && pc.expert == expert && pc.moe_shared == 2880LL * 32 + 32 + 2880,
               "gpt-oss-20b: attention %lld, expert %lld, router %lld by hand", (long long)pc.attention,
               (long long)pc.expert, (long long)pc.moe_shared);
    }
}

/* Small configs: the rules that the files above do not exercise. */
static void test_hf_rules(void)
{
    pp_model m;
    pp_error err;
#define LLAMA_BASE "\"hidden_size\": 64, \"intermediate_size\": 128, \"num_attention_heads\": 4, " \
                   "\"num_hidden_layers\": 8, \"vocab_size\": 100, \"max_position_embeddings\": 32"
    /* Qwen2: use_sliding_window with max_window_layers 0 (every layer) or >= layers (none). */
    pp_status st = load_model_str(&m, "{\"model_type\": \"qwen2\", " LLAMA_BASE ", \"use_sliding_window\": true,"
                                      " \"sliding_window\": 16, \"max_window_layers\": 0}", &err);
    if (!tap_ok(st == PP_OK && m.window == 16 && m.window_full_every == 0, "qwen2: max_window_layers 0 -> window on every layer"))
        show(&err);
    st = load_model_str(&m, "{\"model_type\": \"qwen2\", " LLAMA_BASE ", \"use_sliding_window\": true,"
                            " \"sliding_window\": 16, \"max_window_layers\": 8}", &err);
    tap_ok(st == PP_OK && m.window == 0, "qwen2: max_window_layers = layers -> no window");
    st = load_model_str(&m, "{\"model_type\": \"qwen2\", " LLAMA_BASE ", \"use_sliding_window\": false,"
                            " \"sliding_window\": 16, \"max_window_layers\": 3}", &err);
    tap_ok(st == PP_OK && m.window == 0 && m.qkv_bias && !m.out_bias && !m.mlp_bias && !m.bias,
           "qwen2: use_sliding_window false -> no window; q/k/v biases only");
    /* layer_types: full every 3rd from layer 2 */
    st = load_model_str(&m, "{\"model_type\": \"gemma2\", " LLAMA_BASE ", \"head_dim\": 16, \"sliding_window\": 8,"
                            " \"layer_types\": [\"sliding_attention\", \"sliding_attention\", \"full_attention\","
                            " \"sliding_attention\", \"sliding_attention\", \"full_attention\", \"sliding_attention\","
                            " \"sliding_attention\"]}", &err);
    if (!tap_ok(st == PP_OK && m.window == 8 && m.window_full_every == 3 && m.window_full_phase == 2,
                "gemma2: layer_types fit to full every 3rd layer from 2 (%lld %lld)", (long long)m.window_full_every,
                (long long)m.window_full_phase))
        show(&err);
    st = load_model_str(&m, "{\"model_type\": \"gemma2\", " LLAMA_BASE ", \"head_dim\": 16,"
                            " \"layer_types\": [\"full_attention\", \"full_attention\", \"full_attention\","
                            " \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\","
                            " \"full_attention\"]}", &err);
    tap_ok(st == PP_OK && m.window == 0, "gemma2: all full_attention -> no window");
    /* gemma (1): Gemma-7B's shape (google/gemma-7b config.json); GemmaConfig defaults for the
     * rest (head_dim 256 here, tied, vocab 256000): 8,537,680,896 parameters, the "8.54B" of its
     * model page. */
    st = load_model_str(&m, "{\"model_type\": \"gemma\", \"hidden_size\": 3072, \"intermediate_size\": 24576,"
                            " \"num_attention_heads\": 16, \"num_key_value_heads\": 16, \"num_hidden_layers\": 28,"
                            " \"hidden_act\": \"gelu\"}", &err);
    if (tap_ok(st == PP_OK && m.head_dim == 256 && m.tied && m.vocab == 256000 && m.seq == 8192 &&
                   m.norms_per_layer == 2 && m.act == PP_ACT_SWIGLU, "gemma: GemmaConfig defaults, GeGLU")) {
        pp_param_count pc;
        pp_model_params(&m, &pc);
        tap_ok(pc.total == 8537680896LL, "gemma-7b shape: %lld == 8537680896", (long long)pc.total);
    } else {
        show(&err);
    }
    /* gemma3 text_config: tie from the wrapper when the text config has none; window pattern 1 = all global */
    st = load_model_str(&m, "{\"model_type\": \"gemma3\", \"tie_word_embeddings\": false, \"text_config\": {"
                            LLAMA_BASE ", \"head_dim\": 16, \"sliding_window_pattern\": 1}}", &err);
    if (!tap_ok(st == PP_OK && !m.tied && m.window == 0 && m.qk_norm == PP_QKNORM_HEAD && m.norms_per_layer == 4,
                "gemma3: tie_word_embeddings from the wrapper, pattern 1 -> all global"))
        show(&err);
    st = load_model_str(&m, "{\"model_type\": \"gemma3_text\", " LLAMA_BASE ", \"head_dim\": 16}", &err);
    tap_ok(st == PP_OK && m.tied && m.window == 4096 && m.window_full_every == 6, "gemma3_text on its own: class defaults");
    /* llama4: moe_layers with an exception becomes a pattern plus dense_layers; NoPE interval */
    st = load_model_str(&m, "{\"model_type\": \"llama4_text\", " LLAMA_BASE ", \"head_dim\": 16,"
                            " \"intermediate_size_mlp\": 256, \"num_local_experts\": 4, \"num_experts_per_tok\": 1,"
                            " \"moe_layers\": [1, 3, 7], \"no_rope_layer_interval\": 2}", &err);
    if (!tap_ok(st == PP_OK && m.moe_first_dense == 1 && m.moe_every == 2 && m.moe_phase == 1 &&
                    m.n_dense_layers == 1 && m.dense_layers[0] == 5 && m.ffn == 256 && m.moe_ffn == 128 &&
                    m.shared_ffn == 128 && m.window == 8192 && m.window_full_every == 2 && m.window_full_phase == 1,
                "llama4_text: moe_layers [1, 3, 7] = every 2nd from 1 but 5; NoPE every 2nd"))
        show(&err);
    st = load_model_str(&m, "{\"model_type\": \"llama4_text\", " LLAMA_BASE ", \"head_dim\": 16,"
                            " \"intermediate_size_mlp\": 256, \"num_local_experts\": 4, \"num_experts_per_tok\": 1,"
                            " \"attention_chunk_size\": null}", &err);
    tap_ok(st == PP_OK && m.window == 0 && m.moe_every == 1, "llama4_text: attention_chunk_size null -> no chunking");
    st = load_model_str(&m, "{\"model_type\": \"llama4_text\", " LLAMA_BASE ", \"head_dim\": 16,"
                            " \"intermediate_size_mlp\": 256, \"num_local_experts\": 4, \"num_experts_per_tok\": 1,"
                            " \"moe_layers\": []}", &err);
    tap_ok(st == PP_OK && m.experts == 0 && m.shared_ffn == 0 && m.ffn == 256, "llama4_text: moe_layers [] -> dense, MLP of intermediate_size_mlp");
    /* qwen3_moe: decoder_sparse_step 2 and mlp_only_layers */
    st = load_model_str(&m, "{\"model_type\": \"qwen3_moe\", " LLAMA_BASE ", \"num_experts\": 4,"
                            " \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32, \"decoder_sparse_step\": 2,"
                            " \"mlp_only_layers\": [3]}", &err);
    if (!tap_ok(st == PP_OK && m.moe_every == 2 && m.moe_phase == 1 && m.n_dense_layers == 1 &&
                    !pp_model_layer_is_moe(&m, 0) && pp_model_layer_is_moe(&m, 1) && !pp_model_layer_is_moe(&m, 3) &&
                    pp_model_layer_is_moe(&m, 5) && m.head_dim == 16,
                "qwen3_moe: (i + 1) %% 2 == 0 and not in mlp_only_layers; head_dim hidden / heads"))
        show(&err);
    st = load_model_str(&m, "{\"model_type\": \"qwen3_moe\", " LLAMA_BASE ", \"num_experts\": 0}", &err);
    tap_ok(st == PP_OK && m.experts == 0, "qwen3_moe: num_experts 0 is a dense model");
    /* deepseek_v3: moe_layer_freq 2, no shared experts, no MTP key */
    st = load_model_str(&m, "{\"model_type\": \"deepseek_v3\", " LLAMA_BASE ", \"kv_lora_rank\": 16,"
                            " \"qk_nope_head_dim\": 8, \"qk_rope_head_dim\": 8, \"v_head_dim\": 16, \"q_lora_rank\": null,"
                            " \"n_routed_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32,"
                            " \"first_k_dense_replace\": 1, \"moe_layer_freq\": 2, \"head_dim\": 8, \"n_group\": 2,"
                            " \"topk_group\": 1}", &err);
    if (!tap_ok(st == PP_OK && m.head_dim == 16 && m.q_lora_rank == 0 && m.shared_ffn == 0 && m.mtp_layers == 0 &&
                    !pp_model_layer_is_moe(&m, 0) && !pp_model_layer_is_moe(&m, 1) && pp_model_layer_is_moe(&m, 2) &&
                    !pp_model_layer_is_moe(&m, 3) && m.router_bias && m.router_expert_bias && m.router_groups == 2 &&
                    m.router_group_topk == 1 && m.router_score == PP_ROUTER_SIGMOID && m.router_scale == 2.5,
                "deepseek_v3: MoE where i >= 1 and i %% 2 == 0; head_dim nope + rope (the key ignored)"))
        show(&err);
    /* dropout spellings */
    st = load_model_str(&m, "{\"model_type\": \"opt\", \"hidden_size\": 64, \"ffn_dim\": 256, \"num_attention_heads\": 4,"
                            " \"num_hidden_layers\": 2, \"vocab_size\": 100, \"max_position_embeddings\": 32,"
                            " \"dropout\": 0.2}", &err);
    tap_ok(st == PP_OK && m.dropout_set && m.hidden_dropout == 0.2 && m.attention_dropout == 0.0,
           "opt: dropout 0.2 is the hidden dropout, attention_dropout its class default 0.0");
    st = load_model_str(&m, "{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4,"
                            " \"n_positions\": 32, \"vocab_size\": 100, \"resid_pdrop\": 0.05}", &err);
    tap_ok(st == PP_OK && m.dropout_set && m.hidden_dropout == 0.05 && m.attention_dropout == 0.1,
           "gpt2: resid_pdrop 0.05; attn_pdrop its class default 0.1");
    st = load_model_str(&m, "{\"model_type\": \"bert\", " LLAMA_BASE ", \"hidden_dropout_prob\": 0.1,"
                            " \"attention_probs_dropout_prob\": 0.15}", &err);
    tap_ok(st == PP_OK && m.dropout_set && m.hidden_dropout == 0.1 && m.attention_dropout == 0.15,
           "bert: hidden_dropout_prob, attention_probs_dropout_prob");
    st = load_model_str(&m, "{\"model_type\": \"llama\", " LLAMA_BASE "}", &err);
    tap_ok(st == PP_OK && !m.dropout_set, "llama without a dropout key: the model says nothing");
    st = load_model_str(&m, "{\"model_type\": \"llama\", " LLAMA_BASE ", \"attention_bias\": true, \"mlp_bias\": true}", &err);
    tap_ok(st == PP_OK && m.qkv_bias && m.out_bias && m.mlp_bias && m.bias,
           "llama: attention_bias, mlp_bias: biases on every linear layer but the output (bias)");
#undef LLAMA_BASE
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
    snprintf(path, sizeof path, "%s/tests/model/data/hf/gpt2.json", src_dir);
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
    tap_ok(st == PP_ERR_INPUT && !strcmp(err.msg, "unknown GPU 'h100': did you mean h100-96gb-gt500w, h100-nvl, h100-pcie, h100-sxm? (see parplan models)"), "unknown GPU message: %s", err.msg);
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

/* The `optimizer:` section (parplan-probe optimizer) and pp_profile_optimizer_s. Records
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

/* A layer record's optional kv_heads (grouped-query attention): absent reads as heads,
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

/* pp_model_layer_counts counts whole periods of the layer pattern at once: it must agree with
 * pp_model_layer_kind layer by layer, over every range, for dense-first, interleaved MoE,
 * windowed and explicit-list patterns. */
static void test_layer_counts(void)
{
    struct { int64_t L, E, first, every, phase, window, wfe, wph, ndense; } pat[] = {
        {61, 256, 3, 1, 0, 0, 0, 0, 0},   /* DeepSeek-V3 */
        {48, 128, 0, 2, 1, 8192, 4, 3, 0}, /* Llama 4 Maverick: MoE every other, chunked 3 of 4 */
        {36, 128, 0, 1, 0, 128, 2, 1, 0},  /* gpt-oss: alternating windows */
        {62, 0, 0, 0, 0, 1024, 6, 5, 0},   /* Gemma 3: 5 windowed, 1 full */
        {27, 64, 1, 3, 2, 4096, 0, 0, 0},  /* every layer windowed, MoE every third */
        {24, 60, 0, 1, 0, 0, 0, 0, 3},     /* Qwen mlp_only_layers */
    };
    int bad = 0, checked = 0;
    for (size_t p = 0; p < sizeof pat / sizeof pat[0]; p++) {
        pp_model m;
        pp_model_init(&m);
        m.layers = pat[p].L;
        m.experts = pat[p].E;
        m.topk = pat[p].E > 1 ? 2 : 0;
        m.moe_first_dense = pat[p].first;
        m.moe_every = pat[p].every;
        m.moe_phase = pat[p].phase;
        m.window = pat[p].window;
        m.window_full_every = pat[p].wfe;
        m.window_full_phase = pat[p].wph;
        m.n_dense_layers = pat[p].ndense;
        for (int64_t k = 0; k < m.n_dense_layers; k++) m.dense_layers[k] = 5 * k + 1;
        for (int64_t a = 0; a < m.layers; a++)
            for (int64_t n = 0; a + n <= m.layers; n++) {
                int64_t got[PP_LAYER_KINDS], want[PP_LAYER_KINDS] = {0};
                pp_model_layer_counts(&m, a, n, got);
                for (int64_t i = a; i < a + n; i++) want[pp_model_layer_kind(&m, i)]++;
                checked++;
                if (memcmp(got, want, sizeof got)) bad++;
            }
    }
    tap_ok(bad == 0, "layer counts by period agree with the layer-by-layer kinds (%d of %d ranges differ)",
           bad, checked);
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
    test_hf_today();
    test_hf_rules();
    test_catalog();
    test_profile();
    test_profile_optimizer();
    test_profile_layer_kv();
    test_numbers();
    test_layer_counts();
    return tap_done();
}
