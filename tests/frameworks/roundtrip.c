/* A launch script read back gives the model and the prediction it was written from.
 *
 * Every field of pp_model: for a catalog model of each family (Llama 3 and 3.1, Qwen3 dense and MoE,
 * Mixtral, DeepSeek-V3, gpt-oss, Gemma 2), the Megatron script pp_launch_write writes, read back
 * by pp_margs_parse_script and pp_margs_read, gives a model equal field by field (the whole struct
 * compared, so that a field added later and not carried fails here; moe_ffn 0 and = ffn, moe_every
 * 0 and 1 are one model) except what a script does not
 * hold by design - the name, family, source and published counts (metadata), the dropout (the
 * script's is the stack's: compared with it), the model's default batch (the script's
 * --global-batch-size: compared) - and what the script names in a note as not expressible (Gemma
 * 2's post-norms).
 *
 * The prediction: for each layout below,
 *   parplan check FLAGS --json                                       (the prediction)
 *   parplan launch FLAGS --format megatron -o DIR                    (the script)
 *   parplan check --megatron-args DIR/pretrain_gpt.sh --gpu G --json (the script read back)
 * and the two checks must agree on peak_bytes and step_time_s (and the layout and stack they
 * print). Scripts for the standard target name a tokenizer, not a vocabulary: those read-backs add
 * --vocab (the one thing such a script does not say). Also: standard input, flags beside
 * --megatron-args overriding it, plan and estimate on a script, and no warning for what parplan
 * itself writes. $PARPLAN is the binary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jscan.h"
#include "pp_launch.h"
#include "pp_load.h"
#include "pp_margs.h"
#include "tap.h"

static char tmpdir[256];
static char out[1 << 20], err[1 << 14];

static void slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    size_t k = f ? fread(buf, 1, n - 1, f) : 0;
    buf[k] = 0;
    if (f) fclose(f);
}

/* Run "parplan ARGS" (ARGS: shell words), capture stdout and stderr; the exit status. */
static int run(const char *args)
{
    char cmd[4096], op[300], ep[300];
    snprintf(op, sizeof op, "%s/out", tmpdir);
    snprintf(ep, sizeof ep, "%s/err", tmpdir);
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", getenv("PARPLAN"), args, op, ep);
    int rc = system(cmd);
    slurp(op, out, sizeof out);
    slurp(ep, err, sizeof err);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static js_val *run_json(const char *args)
{
    if (run(args) != 0) {
        tap_diag("parplan %s: %s", args, err);
        return NULL;
    }
    char e[256];
    js_val *v = js_parse(out, e, sizeof e);
    if (!v) tap_diag("parplan %s: bad JSON: %s", args, e);
    return v;
}

static bool near(double a, double b) { return isfinite(a) && isfinite(b) && fabs(a - b) <= 1e-9 * fmax(fabs(a), 1e-12); }

static const char *jstr(const js_val *v, const char *k1, const char *k2)
{
    const js_val *x = js_get(js_get(v, k1), k2);
    return x && x->type == JS_STR ? x->str : "";
}

static double jnum(const js_val *v, const char *k1, const char *k2) { return js_num(js_get(v, k1), k2); }

typedef struct {
    const char *name;
    const char *flags;   /* WORK LAYOUT STACK flags of the original */
    const char *gpu;     /* --gpu for the read-back */
    const char *extra;   /* read-back flags the script cannot carry ("" or --vocab N) */
} rt_case;

static const rt_case cases[] = {
    {"dense GPT-3 1.3B: tp2 pp2 dist-opt sp selective",
     "--model gpt3-1.3b --gpu a100-80gb --gpus 16 --tp 2 --pp 2 --mbs 2 --dist-opt --sp --recompute selective",
     "a100-80gb", "--vocab 50257"},
    {"Llama-3 8B (GQA): tp2 pp2 vpp4 dist-opt sp",
     "--model llama3-8b --gpu h100-sxm --gpus 16 --tp 2 --pp 2 --vpp 4 --mbs 1 --gbs 64 --dist-opt --sp",
     "h100-sxm", "--vocab 128256"},
    {"Mixtral 8x7B (MoE): tp2 sp ep8 pp2, full recompute, seq 4096",
     "--model mixtral-8x7b --gpu h100-sxm --gpus 32 --tp 2 --sp --ep 8 --pp 2 --mbs 1 --gbs 64 --seq 4096 "
     "--recompute full --dist-opt",
     "h100-sxm", "--vocab 32000"},
    {"DeepSeek-V2-Lite (MLA, MoE, dense first layer): fp8, grouped GEMM, capacity 1.25, etp 1",
     "--model @SRC@/tests/frameworks/data/deepseek-v2-lite.yaml --gpu h100-sxm --gpus 16 --tp 2 --sp --ep 8 --etp 1 "
     "--mbs 1 --gbs 64 --precision fp8 --moe-grouped-gemm --capacity-factor 1.25 --moe-dispatcher allgather",
     "h100-sxm", "--vocab 102400"},
    {"Qwen3-like MoE with windows and QK-norm: ep8, every other layer MoE",
     "--model @SRC@/tests/frameworks/data/qwen3-moe-window.yaml --gpu h200 --gpus 8 --ep 8 --mbs 1 --gbs 32 --dropout 0.1",
     "h200", "--vocab 151936"},
    {"uneven stages: a TinyLlama shape, 22 layers on pp 4 (6/6/5/5), device-local",
     "--model llama2-7b --layers 22 --hidden 2048 --heads 32 --kv-heads 4 --ffn 5632 --seq 2048 --gpu h200 --gpus 4 "
     "--pp 4 --mbs 2 --gbs 16 --attention unfused --launch-target device-local",
     "h200", ""},
    {"uneven stages from the ILP: Llama-2 7B pp 3, device-local",
     "--model llama2-7b --gpu h200 --gpus 3 --pp 3 --mbs 1 --gbs 12 --attention unfused --stages ilp --launch-target device-local",
     "h200", ""},
    {"GPT-3 13B as in 2021: fp16, no overlap, unfused attention, tp4 pp4 vpp2, full recompute",
     "--model gpt3-13b --gpu a100-80gb --gpus 32 --tp 4 --pp 4 --vpp 2 --mbs 1 --gbs 256 --precision fp16 --no-overlap "
     "--attention unfused --recompute full",
     "a100-80gb", "--vocab 50257"},
    {"GPT-3 13B with --tp-comm-overlap and dropout 0.05/0.1",
     "--model gpt3-13b --gpu h100-sxm --gpus 16 --tp 8 --sp --mbs 1 --gbs 128 --dist-opt --tp-comm-overlap "
     "--attention-dropout 0.05 --hidden-dropout 0.1",
     "h100-sxm", "--vocab 50257"},
    {"DeepSeek-V2-Lite as DeepSeek trained V3: bf16 gradients, EP overlap, vpp 2, recompute of the norms, "
     "MLA up-projections and the experts' activation (grouped experts)",
     "--model @SRC@/tests/frameworks/data/deepseek-v2-lite.yaml --gpu h100-sxm --gpus 32 --pp 2 --vpp 2 --ep 16 --etp 1 "
     "--mbs 1 --gbs 64 --grad-reduce-bf16 --ep-overlap --recompute selective "
     "--recompute-modules layernorm,mla_up_proj,moe_act --moe-grouped-gemm --layers 28",
     "h100-sxm", "--vocab 102400"},
    /* splits by virtual stage (pp_pipeline.h): the script says each as Megatron does, the read-back
     * prices the same split */
    {"30 layers on pp 4 x vpp 2, the balanced split (written as the account-for flags)",
     "--model llama3-8b --layers 30 --gpu h100-sxm --gpus 16 --tp 2 --sp --pp 4 --vpp 2 --mbs 1 --gbs 16 --dist-opt",
     "h100-sxm", "--vocab 128256"},
    {"30 layers on pp 4 x vpp 2, first stage 6 (written as --decoder-first-pipeline-num-layers)",
     "--model llama3-8b --layers 30 --gpu h100-sxm --gpus 16 --tp 2 --sp --pp 4 --vpp 2 --first-stage-layers 6 --mbs 1 "
     "--gbs 16 --dist-opt "
     "--recompute full --recompute-layers 2",
     "h100-sxm", "--vocab 128256"},
    {"30 layers on pp 4, a given layout string (no interleaving)",
     "--model llama3-8b --layers 30 --gpu h100-sxm --gpus 16 --tp 2 --sp --pp 4 --pipeline-layout 'Et*6|t*8|t*9|t*7L' --mbs 1 "
     "--gbs 16 --dist-opt",
     "h100-sxm", "--vocab 128256"},
    {"30 layers on pp 4 x vpp 2, a given layout string",
     "--model llama3-8b --layers 30 --gpu h100-sxm --gpus 16 --tp 2 --sp --pp 4 --pipeline-layout 'Et*2|(t*4|)*6t*4L' "
     "--mbs 1 --gbs 16 --dist-opt",
     "h100-sxm", "--vocab 128256"},
    {"DeepSeek-V3 on pp 8 x vpp 4: the balanced split, Megatron-Bridge's 'Et|(tt|)*30mL' (the MTP layer with the loss)",
     "--model deepseek-v3 --gpu h100-sxm --gpus 1024 --tp 2 --sp --pp 8 --vpp 4 --ep 64 --etp 1 --mbs 1 --gbs 8192 "
     "--seq 4096 --dist-opt --moe-grouped-gemm --precision fp8 --recompute selective --recompute-modules mla_up_proj,mlp "
     "--grad-reduce-bf16 --ep-overlap",
     "h100-sxm", "--vocab 129280"},
    {"Qwen3-30B-A3B as Megatron-Bridge ran it on 16 H100: the flex dispatcher (DeepEP/HybridEP) over EP 16",
     "--model qwen3-30b-a3b --gpu h100-sxm --gpus 16 --ep 16 --etp 1 --mbs 1 --gbs 64 --precision fp8 "
     "--moe-grouped-gemm --moe-dispatcher flex --dist-opt --grad-reduce-bf16",
     "h100-sxm", "--vocab 151936"},
    {"Qwen3-30B-A3B with Transformer Engine's CUDA graphs of the attention, router and preprocess",
     "--model qwen3-30b-a3b --gpu b200 --gpus 8 --ep 8 --etp 1 --mbs 1 --gbs 64 --precision mxfp8 "
     "--moe-grouped-gemm --moe-dispatcher flex --dist-opt --grad-reduce-bf16 --cuda-graphs attn,moe_router,moe_preprocess",
     "b200", "--vocab 151936"},
    {"Qwen3-30B-A3B with one CUDA graph of the whole iteration and HybridEP",
     "--model qwen3-30b-a3b --gpu b200 --gpus 8 --ep 8 --etp 1 --mbs 4 --gbs 64 --precision mxfp8 "
     "--moe-grouped-gemm --moe-dispatcher flex --moe-flex-backend hybridep --dist-opt --grad-reduce-bf16 "
     "--cuda-graphs full_iteration",
     "b200", "--vocab 151936"},
    {"Llama 3 8B with 16 layers' activations offloaded to the host (the offload stalls on PCIe)",
     "--model llama3-8b --gpu h100-sxm --gpus 8 --tp 1 --pp 1 --mbs 1 --gbs 64 --seq 4096 --dist-opt "
     "--recompute none --cpu-offload-layers 16",
     "h100-sxm", "--vocab 128256"},
    {"Llama 3 8B's shape with GPT-2's 50257 tokens padded to a multiple of 64 x tp (50304 at TP 2, not 50432)",
     "--model llama3-8b --gpu h100-sxm --gpus 8 --tp 2 --sp --pp 1 --mbs 1 --gbs 64 --seq 4096 --dist-opt "
     "--vocab 50257 --vocab-divisible-by 64",
     "h100-sxm", "--vocab 50257"},
    {"Llama 3 70B under Megatron-FSDP with its double buffer and an 800M communication unit (Megatron-Bridge's GB200 "
     "configs' buffers)",
     "--model llama3-70b --gpu gb200 --gpus 64 --tp 1 --pp 1 --mbs 2 --gbs 256 --seq 8192 --megatron-fsdp --zero 3 "
     "--fsdp-double-buffer --fsdp-unit-size 800000000 --precision fp8 --fp8-param-gather --no-attention-mask "
     "--cpu-offload-layers 60 --grad-reduce-bf16 --recompute none",
     "gb200", "--vocab 128256"},
    {"Llama 3 8B under Megatron-FSDP optim_grads with fp32 main gradients",
     "--model llama3-8b --gpu h100-sxm --gpus 8 --tp 1 --pp 1 --mbs 1 --gbs 64 --seq 4096 --megatron-fsdp --zero 2 "
     "--fsdp-grads-fp32",
     "h100-sxm", "--vocab 128256"},
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* "@SRC@" -> the source tree */
static void expand(const char *in, char *outb, size_t n)
{
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    size_t k = 0;
    for (const char *p = in; *p && k + 1 < n;) {
        if (!strncmp(p, "@SRC@", 5)) {
            k += (size_t)snprintf(outb + k, n - k, "%s", src ? src : ".");
            p += 5;
        } else {
            outb[k++] = *p++;
        }
    }
    outb[k < n ? k : n - 1] = 0;
}

/* The --launch-target/--stages flags belong to launch (and --stages to check too) */
static void strip_launch_only(const char *in, char *outb, size_t n)
{
    snprintf(outb, n, "%s", in);
    char *p = strstr(outb, " --launch-target ");
    if (p) {
        char *e = strchr(p + 17, ' ');
        if (e) memmove(p, e, strlen(e) + 1);
        else *p = 0;
    }
}

static void test_case(const rt_case *c, int idx)
{
    char flags[2048], chk[2048], cmd[4096], dir[400], script[500];
    expand(c->flags, flags, sizeof flags);
    strip_launch_only(flags, chk, sizeof chk);
    snprintf(dir, sizeof dir, "%s/case%d", tmpdir, idx);
    snprintf(script, sizeof script, "%s/pretrain_gpt.sh", dir);

    snprintf(cmd, sizeof cmd, "check %s --json", chk);
    js_val *a = run_json(cmd);
    snprintf(cmd, sizeof cmd, "launch %s --format megatron -o '%s' -q", flags, dir);
    int rc = run(cmd);
    tap_ok(rc == 0, "%s: launch writes the script (%s)", c->name, rc ? err : "ok");
    if (strstr(flags, "full_iteration")) {
        /* Megatron's validate_args refuses the NaN check under a full-iteration graph */
        static char text[1 << 16];
        slurp(script, text, sizeof text);
        tap_ok(strstr(text, "--cuda-graph-impl full_iteration") && strstr(text, "--no-check-for-nan-in-loss-and-grad"),
               "%s: the script turns the NaN check off beside --cuda-graph-impl full_iteration", c->name);
    }
    /* the read-back: the script, the GPU, and what a script cannot say; --stages only when the
     * original was checked with the ILP (its split is in the script's layout string) */
    snprintf(cmd, sizeof cmd, "check --megatron-args '%s' --gpu %s %s --json", script, c->gpu, c->extra);
    js_val *b = run_json(cmd);
    bool warned = strstr(err, "not modelled") != NULL; /* the unmodelled-arguments warning */
    if (!tap_ok(a && b, "%s: both checks run", c->name)) {
        js_free(a);
        js_free(b);
        return;
    }
    double pa = js_num(a, "peak_bytes"), pb = js_num(b, "peak_bytes");
    double ta = js_num(a, "step_time_s"), tb = js_num(b, "step_time_s");
    tap_ok(near(pa, pb), "%s: peak_bytes %.0f = %.0f read back", c->name, pa, pb);
    tap_ok(near(ta, tb), "%s: step_time_s %.9g = %.9g read back", c->name, ta, tb);
    static const char *const lay[] = {"tp", "pp", "dp", "vpp", "cp", "ep", "mbs", "gbs"};
    bool same = true;
    for (size_t k = 0; k < sizeof lay / sizeof lay[0]; k++) same &= jnum(a, "layout", lay[k]) == jnum(b, "layout", lay[k]);
    same &= !strcmp(jstr(a, "layout", "recompute"), jstr(b, "layout", "recompute")) &&
            !strcmp(jstr(a, "layout", "attention"), jstr(b, "layout", "attention"));
    tap_ok(same && js_num(a, "gpus") == js_num(b, "gpus"), "%s: the same layout, batch and GPU count", c->name);
    /* a split by virtual stage: the same one read back (the stage split itself may be named by
     * its origin: flags, megatron-args, balanced) */
    const char *la = jstr(a, "layout", "pipeline_layout"), *lb = jstr(b, "layout", "pipeline_layout");
    if (la[0] || lb[0]) tap_ok(!strcmp(la, lb), "%s: the same split by virtual stage '%s' = '%s'", c->name, la, lb);
    const js_val *sa = js_get(a, "stages"), *sb = js_get(b, "stages");
    bool ss = sa && sb && sa->type == JS_ARR && sb->type == JS_ARR && sa->n == sb->n;
    for (int k = 0; ss && k < sa->n; k++)
        ss = js_num(sa->items[k], "layers") == js_num(sb->items[k], "layers") &&
             js_num(sa->items[k], "recompute_layers") == js_num(sb->items[k], "recompute_layers");
    tap_ok(ss, "%s: the same layers (and fully recomputed layers) per stage read back", c->name);
    static const char *const stk[] = {"precision", "attention", "moe_dispatcher", "moe_flex_backend"};
    bool sstack = true;
    for (size_t k = 0; k < sizeof stk / sizeof stk[0]; k++) sstack &= !strcmp(jstr(a, "stack", stk[k]), jstr(b, "stack", stk[k]));
    static const char *const nums[] = {"attention_dropout", "hidden_dropout", "capacity_factor", "vocab_divisible_by"};
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
        double x = jnum(a, "stack", nums[k]), y = jnum(b, "stack", nums[k]);
        sstack &= (isnan(x) && isnan(y)) || x == y;
    }
    const js_val *oa = js_get(js_get(a, "stack"), "overlap"), *ob = js_get(js_get(b, "stack"), "overlap");
    const js_val *ca = js_get(js_get(a, "stack"), "tp_comm_overlap"), *cb = js_get(js_get(b, "stack"), "tp_comm_overlap");
    sstack &= oa && ob && oa->b == ob->b && ca && cb && ca->b == cb->b;
    tap_ok(sstack, "%s: the same stack (%s)", c->name, jstr(b, "stack", "describe"));
    tap_ok(!warned && !strcmp(jstr(b, "megatron_args", "unmodelled"), ""),
           "%s: nothing parplan writes is reported as unmodelled (%s)", c->name, jstr(b, "megatron_args", "unmodelled"));
    js_free(a);
    js_free(b);
}


/* ------------------------------------------------------------------ every field of pp_model */

typedef struct {
    const char *model;
    int64_t gpus, tp, pp, ep, etp;
    bool sp;
    const char *not_carried; /* a field the script cannot carry ("" none), and a word of its note */
    const char *note;
} field_case;

static const field_case field_cases[] = {
    {"llama3-8b", 8, 2, 1, 1, 0, true, "", ""},
    {"llama3-405b", 64, 8, 8, 1, 0, true, "", ""},        /* llama3 RoPE scaling */
    {"qwen3-8b", 8, 2, 1, 1, 0, true, "", ""},
    {"qwen3-30b-a3b", 16, 1, 2, 8, 0, false, "", ""},
    {"mixtral-8x7b", 16, 2, 1, 8, 1, true, "", ""},
    {"mixtral-8x22b", 64, 4, 2, 8, 1, true, "", ""},
    {"deepseek-v3", 64, 1, 4, 16, 0, false, "", ""},      /* MLA YaRN, sigmoid, groups, expert bias, MTP */
    {"gpt-oss-20b", 8, 1, 1, 8, 1, false, "", ""},        /* YaRN, sinks, windows, linear biases */
    {"gemma2-9b", 8, 2, 1, 1, 0, true, "norms_per_layer", "post-norms"},
};

/* Name the first fields of a and b that differ (every field of pp.h's pp_model); count them. */
static int model_diff(const pp_model *a, const pp_model *b, char *out, size_t n)
{
    int k = 0;
    out[0] = 0;
#define I(f) if (a->f != b->f && k++ < 6) pp_strcatf(out, n, " " #f " %lld/%lld", (long long)a->f, (long long)b->f)
#define D(f) if (a->f != b->f && k++ < 6) pp_strcatf(out, n, " " #f " %.17g/%.17g", (double)a->f, (double)b->f)
    I(layers); I(hidden); I(heads); I(kv_heads); I(head_dim); I(ffn); I(vocab); I(seq); I(max_context);
    I(act); I(norm); I(pos); I(bias); I(tied); I(experts); I(topk); I(gbs);
    I(qkv_bias); I(out_bias); I(mlp_bias); I(qk_norm); I(attn_sinks); I(norms_per_layer); I(window);
    I(window_full_every); I(window_full_phase); I(q_lora_rank); I(kv_lora_rank); I(qk_nope_dim); I(qk_rope_dim);
    I(v_head_dim); I(moe_ffn); I(shared_experts); I(shared_ffn); I(shared_gate); I(router_bias);
    I(moe_first_dense); I(moe_every); I(moe_phase); I(n_dense_layers); I(mtp_layers); I(dropout_set);
    D(attention_dropout); D(hidden_dropout); D(published_params); D(published_active);
    D(norm_eps); D(rope_theta); D(rope_local_theta); I(rope_scaling); D(rope_factor); I(rope_original_context);
    D(rope_low_freq); D(rope_high_freq); D(yarn_beta_fast); D(yarn_beta_slow); D(yarn_mscale);
    D(yarn_mscale_all_dim); I(yarn_no_truncate); I(router_score); I(router_raw_topk); D(router_scale);
    I(router_groups); I(router_group_topk); I(router_expert_bias); I(router_balance); D(router_aux_coef);
    D(router_z_coef);
#undef I
#undef D
    for (int64_t i = 0; i < a->n_dense_layers && i < PP_MODEL_MAX_LIST; i++)
        if (a->dense_layers[i] != b->dense_layers[i] && k++ < 6) pp_strcatf(out, n, " dense_layers[%lld]", (long long)i);
    /* the whole struct: a field missing from the list above differs here */
    if (!k && memcmp(a, b, sizeof *a)) k++, pp_strcatf(out, n, " (a field not listed here)");
    return k;
}

static void field_roundtrip(const pp_catalog *cat, const field_case *fc)
{
    const pp_model *orig = pp_catalog_model(cat, fc->model);
    const pp_gpu *gpu = pp_catalog_gpu(cat, "h100-sxm");
    if (!tap_ok(orig && gpu, "%s and h100-sxm in the catalog", fc->model)) return;
    static pp_work w;
    memset(&w, 0, sizeof w);
    w.model = *orig;
    w.gpu = *gpu;
    w.gpus = fc->gpus, w.gpus_per_node = 8, w.gbs = orig->gbs ? orig->gbs : 256;
    w.framework = PP_FW_MEGATRON, w.attention = PP_ATTN_FLASH;
    pp_stack_init(&w.stack);
    pp_layout l;
    pp_layout_init(&l);
    l.tp = fc->tp, l.pp = fc->pp, l.ep = fc->ep, l.etp = fc->etp, l.sp = fc->sp, l.mbs = 1, l.dist_opt = true;
    pp_error err = {0};
    if (!tap_ok(pp_layout_validate(&w, &l, &err) == PP_OK, "%s: layout (%s)", fc->model, err.msg)) return;
    pp_launch_params p;
    pp_launch_params_init(&p);
    p.work = &w, p.layout = &l;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    pp_status st = f ? pp_launch_write(PP_LAUNCH_MEGATRON, &p, f, NULL, &err) : PP_ERR_RUNTIME;
    if (f) fclose(f);
    static pp_margs_config c;
    pp_margs a;
    pp_margs_init(&a, "pretrain_gpt.sh");
    if (st == PP_OK) st = pp_margs_parse_script(&a, text, len, &err);
    if (st == PP_OK) st = pp_margs_read(&a, &c, &err);
    pp_margs_free(&a);
    if (st == PP_OK && c.need_vocab) { /* a standard script takes the vocabulary from its tokenizer */
        c.model.vocab = orig->vocab;
        st = pp_model_validate(&c.model, &err);
    }
    if (!tap_ok(st == PP_OK, "%s: the script written and read back (%s)", fc->model, err.msg)) {
        free(text);
        return;
    }
    pp_model back = c.model, want = *orig;
    /* by design: metadata; the dropout and the batch are the script's stack and work (compared) */
    double att, hid;
    pp_model_dropout(orig, &att, &hid);
    bool carried = c.stack.attention_dropout == att && c.stack.hidden_dropout == hid && c.gbs == w.gbs;
    memcpy(back.name, want.name, sizeof want.name);
    memcpy(back.family, want.family, sizeof want.family);
    memcpy(back.source, want.source, sizeof want.source);
    back.published_params = want.published_params, back.published_active = want.published_active;
    back.gbs = want.gbs;
    back.dropout_set = want.dropout_set, back.attention_dropout = want.attention_dropout;
    back.hidden_dropout = want.hidden_dropout;
    /* one model, two spellings (pp.h): moe_ffn 0 is "= ffn", moe_every 0 is 1 (every layer from the first) */
    if (want.experts > 1) want.moe_ffn = pp_model_expert_ffn(&want), back.moe_ffn = pp_model_expert_ffn(&back);
    if (want.moe_every == 0 && back.moe_every == 1 && back.moe_phase == 0) back.moe_every = 0;
    /* what the script says it cannot carry */
    bool noted = true;
    if (!strcmp(fc->not_carried, "norms_per_layer")) {
        noted = strstr(text, fc->note) != NULL && back.norms_per_layer == 2;
        back.norms_per_layer = want.norms_per_layer;
    }
    char why[600];
    int ndiff = model_diff(&want, &back, why, sizeof why);
    tap_ok(ndiff == 0 && carried && noted, "%s: every field of the model read back equal%s%s%s (%d differ:%s)", fc->model,
           carried ? "" : "; dropout or batch differ", fc->not_carried[0] ? " but " : "", fc->not_carried, ndiff, why);
    free(text);
}

int main(void)
{
    if (!getenv("PARPLAN")) {
        tap_ok(0, "PARPLAN is set");
        return tap_done();
    }
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/parplan-roundtrip-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        tap_ok(0, "temporary directory");
        return tap_done();
    }
    for (size_t i = 0; i < N_CASES; i++) test_case(&cases[i], (int)i);

    pp_catalog cat;
    pp_error cerr = {0};
    const char *mdir = getenv("PARPLAN_MODELS_DIR");
    if (tap_ok(mdir && pp_catalog_load(&cat, mdir, &cerr) == PP_OK, "the catalog loads (%s)", cerr.msg)) {
        for (size_t i = 0; i < sizeof field_cases / sizeof field_cases[0]; i++) field_roundtrip(&cat, &field_cases[i]);
        pp_catalog_free(&cat);
    }

    /* standard input, and flags beside the file override it */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "check --megatron-args - --gpu h100-sxm --vocab 128256 --json < '%s/case1/pretrain_gpt.sh'",
             tmpdir);
    js_val *v = run_json(cmd);
    tap_ok(v && jnum(v, "layout", "vpp") == 4 && jnum(v, "layout", "tp") == 2, "--megatron-args - reads standard input");
    js_free(v);
    snprintf(cmd, sizeof cmd, "check --megatron-args '%s/case1/pretrain_gpt.sh' --gpu h100-sxm --vocab 128256 --tp 4 --vpp 2 "
                              "--gpus 32 --precision fp16 --no-overlap --json", tmpdir);
    v = run_json(cmd);
    tap_ok(v && jnum(v, "layout", "tp") == 4 && jnum(v, "layout", "vpp") == 2 && js_num(v, "gpus") == 32 &&
               jnum(v, "layout", "dp") == 4 && !strcmp(jstr(v, "stack", "precision"), "fp16"),
           "flags beside --megatron-args override it (--tp 4 --vpp 2 --gpus 32 --precision fp16)");
    js_free(v);
    snprintf(cmd, sizeof cmd, "plan --megatron-args '%s/case0/pretrain_gpt.sh' --gpu a100-80gb --vocab 50257 --top 3 --json",
             tmpdir);
    v = run_json(cmd);
    const js_val *cand = js_get(v, "candidates");
    tap_ok(v && cand && cand->type == JS_ARR && cand->n >= 1 && js_get(v, "stack") &&
               !strcmp(jstr(v, "megatron_args", "file") + strlen(jstr(v, "megatron_args", "file")) - 15, "pretrain_gpt.sh"),
           "plan searches the layouts of the script's model, batch, cluster and stack");
    js_free(v);
    snprintf(cmd, sizeof cmd, "estimate --megatron-args '%s/case5/pretrain_gpt.sh' --gpu h200 --tokens 1e9 --json", tmpdir);
    v = run_json(cmd);
    tap_ok(v && js_num(v, "gpus") == 4 && js_num(v, "step_time_s") > 0, "estimate on a device-local script (4 GPUs)");
    js_free(v);
    /* a standard script without --vocab: the one thing it cannot say, asked for */
    snprintf(cmd, sizeof cmd, "check --megatron-args '%s/case0/pretrain_gpt.sh' --gpu a100-80gb", tmpdir);
    int rc = run(cmd);
    tap_ok(rc == 2 && strstr(err, "--vocab") && !strchr(err, '\n')[1], "a standard script without --vocab: exit 2 asking for it (%s)",
           err);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) tap_diag("could not remove %s", tmpdir);
    return tap_done();
}
