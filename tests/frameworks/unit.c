/* Unit tests of the launch configs: the pipeline layout string, the recompute mapping, the
 * combinations a format cannot express (errors, never a silent change), predictions that are
 * missing (no NaN), the DeepSpeed and NeMo values, and the atomic -o writes. */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "tap.h"
#include "fixtures.h"
#include "readfile.h"

static pp_work W;
static pp_layout Lay;
static pp_launch_params P;

static void setup(const char *model, int64_t gpus, int64_t gpn, int64_t gbs)
{
    W = fx_work(model, gpus, gpn, gbs);
    pp_layout_init(&Lay);
    pp_launch_params_init(&P);
    P.work = &W;
    P.layout = &Lay;
}

static pp_status validate(void)
{
    pp_error e = {0};
    pp_status st = pp_layout_validate(&W, &Lay, &e);
    if (st) tap_diag("layout invalid: %s", e.msg);
    return st;
}

/* Render, return the text (static buffer); status and error message out. */
static char text[1 << 17];
static pp_status render(pp_launch_format fmt, pp_error *err)
{
    pp_status st = PP_ERR_RUNTIME;
    memset(err, 0, sizeof *err);
    char *s = fx_render(fmt, &P, err, &st);
    snprintf(text, sizeof text, "%s", s ? s : "");
    free(s);
    return st;
}

static const char *arg_value(const char *flag)
{
    static char bufs[4][512];
    static int next;
    char *v = bufs[next++ % 4];
    fx_args a;
    fx_parse(text, &a);
    const char *x = fx_value(&a, flag);
    if (x) snprintf(v, 512, "%s", x);
    fx_args_free(&a);
    return x ? v : NULL;
}

static bool yaml_parses(const char *s, size_t n)
{
    yaml_parser_t p;
    yaml_document_t d;
    if (!yaml_parser_initialize(&p)) return false;
    yaml_parser_set_input_string(&p, (const unsigned char *)s, n);
    bool ok = yaml_parser_load(&p, &d) && yaml_document_get_root_node(&d) != NULL;
    if (ok) yaml_document_delete(&d);
    yaml_parser_delete(&p);
    return ok;
}

static void test_names(void)
{
    tap_ok(PP_LAUNCH_COUNT == 8 && !strcmp(pp_launch_format_names[PP_LAUNCH_DEEPSPEED], "deepspeed") &&
               !strcmp(pp_launch_format_names[PP_LAUNCH_TORCHTITAN], "torchtitan") &&
               pp_name_lookup(pp_launch_format_names, PP_LAUNCH_COUNT, "slurm") == PP_LAUNCH_SLURM,
           "format name table");
    tap_ok(!strcmp(pp_launch_target_names[PP_TARGET_DEVICE_LOCAL], "device-local"), "target names");
    bool versions = true;
    for (int i = 0; i < PP_LAUNCH_COUNT; i++)
        versions &= strcmp(pp_launch_format_target((pp_launch_format)i), "?") != 0 &&
                    strpbrk(pp_launch_format_target((pp_launch_format)i), "0123456789") != NULL;
    tap_ok(versions && !strcmp(pp_launch_format_target(PP_LAUNCH_COUNT), "?"), "every format names the version it targets");
    const char *const *f = pp_launch_files(PP_LAUNCH_DEEPSPEED);
    tap_ok(f && !strcmp(f[0], "ds_config.json") && !strcmp(f[1], "launch_deepspeed.sh") && !f[2],
           "deepspeed writes ds_config.json and launch_deepspeed.sh");
    f = pp_launch_files(PP_LAUNCH_TORCHTITAN);
    tap_ok(f && !strcmp(f[0], "parplan_torchtitan.py") && !strcmp(f[1], "launch_torchtitan.sh") && !f[2],
           "torchtitan writes parplan_torchtitan.py and launch_torchtitan.sh");
    f = pp_launch_files(PP_LAUNCH_TORCHTITAN_TOML);
    tap_ok(f && !strcmp(f[0], "torchtitan.toml") && !strcmp(f[1], "launch_torchtitan.sh") && !f[2],
           "torchtitan-toml writes torchtitan.toml and launch_torchtitan.sh");
}

static void test_layout_string(void)
{
    pp_error e;
    setup("gpt3-13b", 12, 4, 32);
    Lay.tp = 4, Lay.pp = 3;
    validate();
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK, "40 layers on pp 3 written (%s)", e.msg);
    const char *v = arg_value("--pipeline-model-parallel-layout");
    tap_ok(v && !strcmp(v, "'Et*14|t*13|t*13L'"), "remainder first: %s", v ? v : "(none)");

    static int sl[2] = {12, 10}, sr[2] = {2, 0};
    setup("tinyllama-1.1b", 2, 2, 16);
    Lay.pp = 2, Lay.recompute = PP_RC_FULL, Lay.stage_layers = sl, Lay.stage_recompute = sr;
    validate();
    render(PP_LAUNCH_MEGATRON, &e);
    v = arg_value("--pipeline-model-parallel-layout");
    tap_ok(v && !strcmp(v, "'Et*12|t*10L'"), "ILP stages 12,10: %s", v ? v : "(none)");
    v = arg_value("--recompute-method");
    const char *k = arg_value("--recompute-num-layers");
    tap_ok(v && !strcmp(v, "block") && k && !strcmp(k, "2"), "per-stage recompute 2,0 -> block 2 (max)");
    tap_ok(strstr(text, "# note: Megatron recomputes the same number of layers on every stage") != NULL,
           "the per-stage recompute difference is said, not hidden");

    static int sl2[2] = {42, 38}, sr2[2] = {6, 2};
    setup("llama2-70b", 16, 8, 64);
    Lay.tp = 8, Lay.pp = 2, Lay.vpp = 2, Lay.recompute = PP_RC_FULL;
    Lay.stage_layers = sl2, Lay.stage_recompute = sr2;
    validate();
    render(PP_LAUNCH_MEGATRON, &e);
    v = arg_value("--pipeline-model-parallel-layout");
    /* index v*pp + p: rank 0 chunk 0, rank 1 chunk 0, rank 0 chunk 1, rank 1 chunk 1 */
    tap_ok(v && !strcmp(v, "'Et*21|t*19|t*21|t*19L'"), "ILP + vpp 2 interleaves the chunks: %s", v ? v : "-");
    k = arg_value("--recompute-num-layers");
    tap_ok(k && !strcmp(k, "3"), "block recompute per model chunk: ceil(6/2) = 3 (%s)", k ? k : "-");
    tap_ok(!arg_value("--num-layers-per-virtual-pipeline-stage"), "no vpp flag next to a layout string");

    static int sl3[2] = {1, 23}, sr3[2] = {0, 0};
    setup("gpt3-1.3b", 2, 2, 16);
    Lay.pp = 2, Lay.vpp = 2, Lay.stage_layers = sl3, Lay.stage_recompute = sr3;
    Lay.mbs = 1;
    validate();
    /* Megatron's layout takes empty virtual stages (pipeline_parallel_layer_layout.py prints
     * "(empty stage)"): rank 0's one layer in its first chunk, nothing in its second */
    render(PP_LAUNCH_MEGATRON, &e);
    v = arg_value("--pipeline-model-parallel-layout");
    tap_ok(v && !strcmp(v, "'Et|t*12||t*11L'"), "a stage with fewer layers than vpp chunks: an empty virtual stage: %s",
           v ? v : e.msg);

    setup("gpt3-1.3b", 2, 2, 8);
    Lay.pp = 2, Lay.vpp = 2, Lay.mbs = 1;
    validate();
    render(PP_LAUNCH_MEGATRON, &e);
    k = arg_value("--num-layers-per-virtual-pipeline-stage");
    tap_ok(k && !strcmp(k, "6") && !arg_value("--pipeline-model-parallel-layout"),
           "even interleaved: 24 / (2 x 2) = 6 layers per virtual stage");
}

static void test_recompute(void)
{
    pp_error e;
    setup("gpt3-13b", 16, 8, 256);
    Lay.tp = 4, Lay.pp = 2, Lay.mbs = 2, Lay.recompute = PP_RC_FULL;
    validate();
    render(PP_LAUNCH_MEGATRON, &e);
    tap_ok(!strcmp(arg_value("--recompute-method"), "uniform") && !strcmp(arg_value("--recompute-num-layers"), "1"),
           "full recompute of every layer: uniform, 1 layer per unit");
    Lay.recompute_layers = 5;
    render(PP_LAUNCH_MEGATRON, &e);
    tap_ok(!strcmp(arg_value("--recompute-method"), "block") && !strcmp(arg_value("--recompute-num-layers"), "5") &&
               !strstr(text, "# note: Megatron recomputes"),
           "full recompute of 5 layers per stage: block 5, no note");
    Lay.recompute = PP_RC_SELECTIVE, Lay.recompute_layers = 0;
    render(PP_LAUNCH_MEGATRON, &e);
    tap_ok(!strcmp(arg_value("--recompute-granularity"), "selective") && !arg_value("--recompute-method"),
           "selective: granularity only (Megatron refuses a method with selective)");
    static int sl[2] = {20, 20}, sr[2] = {0, 0};
    Lay.recompute = PP_RC_FULL, Lay.stage_layers = sl, Lay.stage_recompute = sr;
    render(PP_LAUNCH_MEGATRON, &e);
    tap_ok(!arg_value("--recompute-granularity") && strstr(text, "no recompute flags emitted"),
           "ILP chose no recompute anywhere: no recompute flags, said in a note");
}

static void test_megatron_values(void)
{
    pp_error e;
    setup("llama3-8b", 16, 8, 64);
    Lay.tp = 2, Lay.cp = 2, Lay.dist_opt = true, Lay.sp = true;
    validate();
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK, "llama3-8b tp2 cp2 written");
    tap_ok(!strcmp(arg_value("--num-query-groups"), "8") && arg_value("--group-query-attention") &&
               !strcmp(arg_value("--normalization"), "RMSNorm") &&
               !strcmp(arg_value("--position-embedding-type"), "rope") && arg_value("--swiglu") &&
               arg_value("--untie-embeddings-and-output-weights") && arg_value("--disable-bias-linear"),
           "GQA, RMSNorm, RoPE, SwiGLU, untied, no bias");
    tap_ok(!strcmp(arg_value("--attention-dropout"), "0.0") && !strcmp(arg_value("--hidden-dropout"), "0.0"),
           "bias-free model: no dropout (pp_work_dropout: the Llama lineage trains without)");
    tap_ok(arg_value("--overlap-grad-reduce") && arg_value("--overlap-param-gather"),
           "dist-opt with dp > 1: grad-reduce and param-gather overlap");
    tap_ok(strstr(text, "128 x tp = 256 (128256)") != NULL, "the vocabulary padding is noted");
    tap_ok(!arg_value("--kv-channels"), "no --kv-channels when head_dim = h/a");
    W.model.head_dim = 256; /* Gemma-like: head_dim differs from h/a */
    render(PP_LAUNCH_MEGATRON, &e);
    tap_ok(arg_value("--kv-channels") && !strcmp(arg_value("--kv-channels"), "256"), "--kv-channels for head_dim != h/a");

    setup("gpt3-1.3b", 8, 8, 256);
    Lay.mbs = 4;
    W.attention = PP_ATTN_UNFUSED;
    validate();
    render(PP_LAUNCH_MEGATRON, &e);
    tap_ok(arg_value("--transformer-impl") && !strcmp(arg_value("--transformer-impl"), "local"),
           "unfused attention without --impl: Megatron's local modules, as the prediction assumed");
    W.stack.impl = PP_IMPL_TE, W.stack.impl_given = true; /* --impl te --attention unfused */
    render(PP_LAUNCH_MEGATRON, &e);
    tap_ok(arg_value("--attention-backend") && !strcmp(arg_value("--attention-backend"), "unfused") &&
               !strcmp(arg_value("--position-embedding-type"), "learned_absolute") && !arg_value("--swiglu") &&
               !arg_value("--overlap-param-gather") && arg_value("--overlap-grad-reduce"),
           "GPT-3: learned positions, GELU, unfused attention backend, grad overlap only");
    tap_ok(!strcmp(arg_value("--attention-dropout"), "0.1") && !strcmp(arg_value("--hidden-dropout"), "0.1"),
           "GPT-3: dropout 0.1 written (pp_work_dropout; a script read back must not fall to another default)");
    P.target = PP_TARGET_DEVICE_LOCAL;
    W.stack.impl_given = false; /* device-local refuses --impl te */
    render(PP_LAUNCH_MEGATRON, &e);
    tap_ok(!arg_value("--attention-backend") && !arg_value("--no-rope-fusion") &&
               !strcmp(arg_value("--transformer-impl"), "local") && !strcmp(arg_value("--vocab-size"), "50257") &&
               !strcmp(arg_value("--train-iters"), "5") && strstr(text, "export NCCL_NVLS_ENABLE=0"),
           "device-local: local impl, mock data with the vocabulary, 5 iterations, NVLS off");
    P.train_iters = 12;
    render(PP_LAUNCH_MEGATRON, &e);
    tap_ok(!strcmp(arg_value("--train-iters"), "12"), "--train-iters given");

    setup("mixtral-8x7b", 16, 8, 64);
    Lay.tp = 2, Lay.pp = 2, Lay.ep = 4, Lay.dist_opt = true, Lay.sp = true;
    validate();
    render(PP_LAUNCH_SLURM, &e);
    tap_ok(!strcmp(arg_value("--num-experts"), "8") && !strcmp(arg_value("--moe-router-topk"), "2") &&
               !strcmp(arg_value("--expert-model-parallel-size"), "4") &&
               !strcmp(arg_value("--moe-token-dispatcher-type"), "alltoall"),
           "MoE: experts, top-k, EP, all-to-all dispatch");
    tap_ok(strstr(text, "#SBATCH --nodes=2\n") && strstr(text, "#SBATCH --gpus-per-node=8\n") &&
               strstr(text, "srun --kill-on-bad-exit=1") && strstr(text, "--rdzv-backend c10d"),
           "slurm: 2 nodes x 8 GPUs, srun + torchrun rendezvous");
}

static void test_errors(void)
{
    pp_error e;
    setup("gpt3-1.3b", 8, 8, 64);
    W.framework = PP_FW_DEEPSPEED;
    Lay.zero = 2;
    validate();
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_ERR_INPUT && strstr(e.msg, "ZeRO-2"), "megatron + ZeRO-2: %s", e.msg);
    tap_ok(render(PP_LAUNCH_NEMO, &e) == PP_ERR_INPUT, "nemo + ZeRO-2 refused: %s", e.msg);
    tap_ok(render(PP_LAUNCH_DEEPSPEED, &e) == PP_OK && strstr(text, "\"stage\": 2,"), "deepspeed ZeRO-2 written");
    Lay.offload = PP_OFF_PARAMS;
    tap_ok(render(PP_LAUNCH_DEEPSPEED, &e) == PP_ERR_INPUT && strstr(e.msg, "ZeRO-3"), "param offload needs ZeRO-3: %s", e.msg);
    Lay.zero = 0, Lay.offload = PP_OFF_OPTIMIZER;
    tap_ok(render(PP_LAUNCH_DEEPSPEED, &e) == PP_ERR_INPUT, "optimizer offload needs ZeRO: %s", e.msg);

    setup("gpt3-1.3b", 8, 8, 64);
    W.model.act = PP_ACT_RELU;
    validate();
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_ERR_INPUT && strstr(e.msg, "no relu MLP"), "plain ReLU refused: %s", e.msg);
    /* squared ReLU (pp_activations): Megatron's switch and, since its MLP fuses no bias kernel for
     * it, the GELU fusion's off switch; NeMo's name */
    setup("gpt3-1.3b", 8, 8, 64);
    W.model.act = PP_ACT_SQUARED_RELU;
    validate();
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && strstr(text, "--squared-relu\n") &&
           strstr(text, "--no-bias-gelu-fusion\n") && !strstr(text, "--swiglu"),
           "squared ReLU: --squared-relu and --no-bias-gelu-fusion written");
    tap_ok(render(PP_LAUNCH_NEMO, &e) == PP_OK && strstr(text, "activation: squared-relu"), "NeMo: activation: squared-relu");
    setup("bloom-176b", 8, 8, 64);
    Lay.tp = 8;
    validate();
    tap_ok(render(PP_LAUNCH_TORCHRUN, &e) == PP_ERR_INPUT && strstr(e.msg, "ALiBi"), "ALiBi refused: %s", e.msg);
    tap_ok(render(PP_LAUNCH_NEMO, &e) == PP_OK && strstr(text, "position_embedding_type: alibi"), "NeMo takes ALiBi");

    setup("llama2-7b", 8, 8, 64);
    Lay.offload = PP_OFF_OPTIMIZER;
    validate();
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_ERR_INPUT && strstr(e.msg, "--dist-opt"), "CPU optimizer offload needs --dist-opt");
    Lay.dist_opt = true;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && arg_value("--optimizer-cpu-offload") &&
               arg_value("--use-precision-aware-optimizer"),
           "CPU optimizer offload with the precision-aware optimizer Megatron asserts");
    Lay.offload = PP_OFF_PARAMS;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_ERR_INPUT, "Megatron has no parameter offload: %s", e.msg);

    setup("llama2-7b", 8, 8, 64);
    Lay.tp = 2, Lay.sp = true;
    validate();
    P.target = PP_TARGET_DEVICE_LOCAL;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_ERR_INPUT && strstr(e.msg, "LayerNorm"),
           "device-local refuses --sp (torch LayerNorm): %s", e.msg);
    Lay.sp = false, Lay.tp = 1, Lay.cp = 2;
    Lay.dp = 0;
    validate();
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_ERR_INPUT && strstr(e.msg, "context"), "device-local refuses --cp 2");
    Lay.cp = 1, Lay.dp = 0;
    validate();
    tap_ok(render(PP_LAUNCH_DEEPSPEED, &e) == PP_ERR_INPUT, "device-local is for the Megatron formats: %s", e.msg);

    static int sl[2] = {18, 14}, sr[2] = {0, 0};
    setup("llama2-7b", 8, 8, 64);
    Lay.pp = 2, Lay.stage_layers = sl, Lay.stage_recompute = sr;
    validate();
    tap_ok(render(PP_LAUNCH_NEMO, &e) == PP_ERR_INPUT && strstr(e.msg, "uneven"), "NeMo refuses uneven stages: %s", e.msg);

    setup("llama2-7b", 8, 8, 64);
    validate();
    FILE *f = tmpfile();
    tap_ok(pp_launch_write(PP_LAUNCH_MEGATRON, &P, f, "/tmp", &e) == PP_ERR_INPUT, "stream and directory both given");
    tap_ok(pp_launch_write(PP_LAUNCH_MEGATRON, &P, NULL, NULL, &e) == PP_ERR_INPUT, "neither given");
    fclose(f);
    Lay.dp = 3;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_ERR_INPUT && strstr(e.msg, "--gpus"), "tp*pp*cp*dp != gpus refused");
    setup("llama2-7b", 12, 8, 48);
    Lay.dp = 12;
    tap_ok(render(PP_LAUNCH_SLURM, &e) == PP_ERR_INPUT && strstr(e.msg, "whole number of nodes"),
           "12 GPUs on nodes of 8 refused: %s", e.msg);
}

/* The training stack and the newer model fields: what Megatron's parser and validate_args accept,
 * what each target can run, and the NeMo / DeepSpeed equivalents. */
static void test_stack(void)
{
    pp_error e;
    setup("mixtral-8x7b", 16, 8, 64);
    Lay.tp = 2, Lay.ep = 4;
    /* The layout rule (pp_layout_validate) refuses it for every command, launch and NeMo too. */
    tap_ok(pp_layout_validate(&W, &Lay, &e) == PP_ERR_INPUT && strstr(e.msg, "--sp") &&
               strstr(e.msg, "moe_layer.py"),
           "MoE with tp 2 without --sp refused (MoELayer.forward raises): %s", e.msg);
    Lay.sp = true;
    validate();
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && !strcmp(arg_value("--expert-tensor-parallel-size"), "2") &&
               !strcmp(arg_value("--moe-token-dispatcher-type"), "alltoall") && !arg_value("--moe-layer-freq"),
           "MoE with --sp: etp 2 (= tp), the stack's dispatcher, no --moe-layer-freq when every layer is MoE");
    W.stack.dispatcher = PP_DISPATCH_ALLGATHER;
    W.stack.moe_capacity_factor = 1.5;
    render(PP_LAUNCH_MEGATRON, &e);
    tap_ok(!strcmp(arg_value("--moe-token-dispatcher-type"), "allgather") &&
               !strcmp(arg_value("--moe-expert-capacity-factor"), "1.5"),
           "--moe-dispatcher allgather, --capacity-factor 1.5");
    /* NeMo 1.23's Megatron-Core 0.5.0 has one dropless dispatcher and no capacity factor */
    tap_ok(render(PP_LAUNCH_NEMO, &e) == PP_ERR_INPUT && strstr(e.msg, "expert capacity factor"),
           "NeMo 1.x: a capacity factor refused (%s)", e.msg);
    W.stack.moe_capacity_factor = 0;
    tap_ok(render(PP_LAUNCH_NEMO, &e) == PP_OK && strstr(text, "num_moe_experts: 8") &&
               !strstr(text, "moe_token_dispatcher_type") && !strstr(text, "expert_tensor_parallel_size") &&
               !strstr(text, "moe_layer_freq") && yaml_parses(text, strlen(text)),
           "NeMo 1.x: the MoE keys Megatron-Core 0.5.0 has");
    W.stack.moe_capacity_factor = 1.5;
    tap_ok(render(PP_LAUNCH_DEEPSPEED, &e) == PP_OK && strstr(text, "8 experts, top-2, ep_size 4"),
           "DeepSpeed: the MoE layer's settings in the launcher's comment");
    /* a dense first layer, as Megatron's list expression */
    W.model.moe_first_dense = 1;
    render(PP_LAUNCH_MEGATRON, &e);
    tap_ok(arg_value("--moe-layer-freq") && !strcmp(arg_value("--moe-layer-freq"), "'[0]*1+[1]*31'"),
           "one dense layer first: --moe-layer-freq '[0]*1+[1]*31' (got %s)", arg_value("--moe-layer-freq"));
    W.model.moe_first_dense = 0, W.model.moe_every = 2, W.model.moe_phase = 1;
    render(PP_LAUNCH_MEGATRON, &e);
    tap_ok(arg_value("--moe-layer-freq") && !strcmp(arg_value("--moe-layer-freq"), "'[0,1]*16'"),
           "every other layer MoE: '[0,1]*16' (got %s)", arg_value("--moe-layer-freq"));
    tap_ok(render(PP_LAUNCH_NEMO, &e) == PP_ERR_INPUT && strstr(e.msg, "dense and MoE layers mixed"),
           "NeMo 1.x: dense and MoE layers mixed refused (%s)", e.msg);
    W.model.moe_every = 0, W.model.moe_phase = 0;
    W.model.bias = true;
    Lay.etp = 2;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && arg_value("--disable-bias-linear") && !arg_value("--add-qkv-bias") &&
               strstr(text, "expert biases only at expert TP 1"),
           "MoE with biases at etp 2: Megatron has expert biases only at expert TP 1 (transformer_config.py), "
           "written without them and said so");
    W.model.qkv_bias = true;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && arg_value("--disable-bias-linear") && arg_value("--add-qkv-bias"),
           "... keeping the q/k/v biases (--add-qkv-bias)");
    Lay.etp = 1;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && !arg_value("--disable-bias-linear") &&
               strstr(text, "router has a bias with the linear biases"),
           "MoE with biases at etp 1: Megatron's linear biases, and its router's bias named (the model has none)");
    W.model.router_bias = true;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && !arg_value("--disable-bias-linear") && !strstr(text, "router has a bias"),
           "... a model with a router bias: nothing to say");
    W.model.bias = W.model.qkv_bias = W.model.router_bias = false, Lay.etp = 0;
    P.target = PP_TARGET_DEVICE_LOCAL;
    Lay.tp = 1, Lay.sp = false, Lay.dp = 0, Lay.ep = 8;
    validate();
    W.stack.grouped_gemm = true;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_ERR_INPUT && strstr(e.msg, "grouped"),
           "device-local refuses --moe-grouped-gemm: %s", e.msg);
    W.stack.grouped_gemm = false;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && !strcmp(arg_value("--transformer-impl"), "local"),
           "device-local MoE runs (SequentialMLP)");

    /* MLA: Transformer Engine only */
    setup("deepseek-v2-lite", 8, 8, 64);
    validate();
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && arg_value("--multi-latent-attention") &&
               !strcmp(arg_value("--kv-lora-rank"), "512") && !arg_value("--q-lora-rank") &&
               !strcmp(arg_value("--moe-shared-expert-intermediate-size"), "2816") && !arg_value("--kv-channels") &&
               !arg_value("--group-query-attention"),
           "MLA: --multi-latent-attention --kv-lora-rank 512, no --q-lora-rank (V2-Lite), shared experts 2816");
    tap_ok(render(PP_LAUNCH_NEMO, &e) == PP_ERR_INPUT && strstr(e.msg, "multi-latent attention"),
           "NeMo 1.x: MLA refused (%s)", e.msg);
    P.target = PP_TARGET_DEVICE_LOCAL;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_ERR_INPUT && strstr(e.msg, "multi-latent") &&
               strstr(e.msg, "Transformer Engine"),
           "device-local refuses MLA: %s", e.msg);

    /* precision */
    setup("llama2-7b", 8, 8, 64);
    validate();
    W.stack.precision = PP_PREC_FP8;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && arg_value("--bf16") &&
               !strcmp(arg_value("--fp8-format"), "hybrid") && arg_value("--fp8-recipe"),
           "fp8: --bf16 --fp8-format hybrid --fp8-recipe");
    tap_ok(render(PP_LAUNCH_NEMO, &e) == PP_OK && strstr(text, "fp8: true") && strstr(text, "precision: bf16-mixed"),
           "NeMo fp8");
    tap_ok(render(PP_LAUNCH_DEEPSPEED, &e) == PP_ERR_INPUT && strstr(e.msg, "FP8"), "DeepSpeed refuses fp8: %s", e.msg);
    P.target = PP_TARGET_DEVICE_LOCAL;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_ERR_INPUT && strstr(e.msg, "fp8"), "device-local refuses fp8: %s", e.msg);
    P.target = PP_TARGET_STANDARD;
    W.stack.precision = PP_PREC_FP16;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && arg_value("--fp16") && !arg_value("--bf16"), "fp16: --fp16");
    tap_ok(render(PP_LAUNCH_DEEPSPEED, &e) == PP_OK && strstr(text, "\"fp16\": {") && !strstr(text, "\"bf16\""),
           "DeepSpeed fp16 with dynamic loss scaling");
    tap_ok(render(PP_LAUNCH_NEMO, &e) == PP_OK && strstr(text, "precision: 16-mixed"), "NeMo fp16");

    /* overlap, TP communication overlap, implementation */
    setup("gpt3-13b", 16, 8, 256);
    Lay.tp = 4, Lay.pp = 2, Lay.vpp = 2, Lay.dist_opt = true;
    validate();
    W.stack.tp_comm_overlap = true;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_ERR_INPUT && strstr(e.msg, "--sp"), "--tp-comm-overlap needs --sp: %s", e.msg);
    Lay.sp = true;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && arg_value("--tp-comm-overlap") && arg_value("--overlap-grad-reduce") &&
               arg_value("--overlap-param-gather") && !arg_value("--no-overlap-p2p-communication"),
           "--tp-comm-overlap with --sp; overlap on");
    tap_ok(render(PP_LAUNCH_NEMO, &e) == PP_OK && strstr(text, "ub_tp_comm_overlap: true") &&
               strstr(text, "overlap_grad_sync: true"), "NeMo: ub_tp_comm_overlap");
    W.stack.tp_comm_overlap = false;
    W.stack.no_overlap = true;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_ERR_INPUT && strstr(e.msg, "--pp of at least 3"),
           "--no-overlap with vpp on 2 stages refused (validate_args): %s", e.msg);
    Lay.pp = 4, Lay.dp = 0;
    validate();
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && !arg_value("--overlap-grad-reduce") &&
               !arg_value("--overlap-param-gather") && arg_value("--no-overlap-p2p-communication"),
           "--no-overlap: no overlap flag, p2p overlap off");
    tap_ok(render(PP_LAUNCH_NEMO, &e) == PP_OK && strstr(text, "overlap_grad_sync: false"), "NeMo: no overlap");
    tap_ok(render(PP_LAUNCH_DEEPSPEED, &e) == PP_ERR_INPUT || strstr(text, "\"overlap_comm\": false"),
           "DeepSpeed: overlap_comm false (or the layout refused)");
    W.stack.no_overlap = false;
    W.stack.impl = PP_IMPL_LOCAL, W.stack.impl_given = true;
    W.attention = PP_ATTN_UNFUSED;
    Lay.sp = false;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && !strcmp(arg_value("--transformer-impl"), "local") &&
               !arg_value("--attention-backend"),
           "--impl local on the standard target: --transformer-impl local");
    tap_ok(render(PP_LAUNCH_NEMO, &e) == PP_OK && strstr(text, "transformer_engine: false"), "NeMo: transformer_engine false");
    W.stack.impl = PP_IMPL_TE;
    P.target = PP_TARGET_DEVICE_LOCAL;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_ERR_INPUT && strstr(e.msg, "--impl te"), "device-local refuses --impl te: %s",
           e.msg);

    /* QK-norm, head_dim, windows, dropout */
    setup("qwen3-30b-a3b", 8, 8, 64);
    Lay.ep = 8;
    validate();
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && arg_value("--qk-layernorm") && !strcmp(arg_value("--kv-channels"), "128"),
           "Qwen3: --qk-layernorm, --kv-channels 128");
    setup("window-7b", 8, 8, 64);
    validate();
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && !strcmp(arg_value("--window-size"), "4096,0") &&
               !strcmp(arg_value("--window-attn-skip-freq"), "'[0,1,1,1]*8'"),
           "window 4096, full attention on layers 0, 4, ...: '[0,1,1,1]*8' (got %s)", arg_value("--window-attn-skip-freq"));
    W.model.window_full_phase = 3;
    render(PP_LAUNCH_MEGATRON, &e);
    tap_ok(!strcmp(arg_value("--window-attn-skip-freq"), "4"), "full on layers 3, 7, ...: Megatron's integer form 4");
    tap_ok(render(PP_LAUNCH_NEMO, &e) == PP_ERR_INPUT && strstr(e.msg, "windowed and full-attention layers mixed"),
           "NeMo 1.x: windowed and full layers mixed refused (%s)", e.msg);
    W.stack.dropout_given = true, W.stack.attention_dropout = 0.05, W.stack.hidden_dropout = 0.1;
    render(PP_LAUNCH_MEGATRON, &e);
    tap_ok(!strcmp(arg_value("--attention-dropout"), "0.05") && !strcmp(arg_value("--hidden-dropout"), "0.1"),
           "the stack's dropout (0.05 / 0.1) over the model's");
}

static void test_predictions_missing(void)
{
    pp_error e;
    setup("llama2-7b", 8, 8, 64);
    Lay.tp = 2;
    validate();
    for (int fmt = 0; fmt < PP_LAUNCH_COUNT; fmt++) {
        /* torchtitan is PyTorch FSDP2's: --framework fsdp */
        W.framework = pp_launch_format_framework((pp_launch_format)fmt) == PP_FW_FSDP ? PP_FW_FSDP : PP_FW_MEGATRON;
        P.peak_bytes = NAN, P.step_time_s = -1, P.samples_per_s = INFINITY, P.reserved_bytes = NAN;
        pp_status st = render((pp_launch_format)fmt, &e);
        bool clean = !strstr(text, "nan") && !strstr(text, "inf ") && !strstr(text, "NaN") && !strstr(text, "-1.");
        tap_ok(st == PP_OK && clean && strstr(text, "not predicted") && strstr(text, "parplan " PP_VERSION),
               "%s: unknown predictions written as 'not predicted', never NaN", pp_launch_format_names[fmt]);
        P.peak_bytes = 85.0 * 1073741824.0, P.step_time_s = 2.25, P.samples_per_s = 28.44;
        P.reserved_bytes = 2.0 * 1073741824.0;
        render((pp_launch_format)fmt, &e);
        if (fmt != PP_LAUNCH_DEEPSPEED || 1)
            tap_ok(strstr(text, "85.00 GiB") && strstr(text, "2.25 s") && strstr(text, "28.44 samples/s"),
                   "%s: predicted peak, step and samples/s in a comment", pp_launch_format_names[fmt]);
        if (fmt != PP_LAUNCH_DEEPSPEED)
            tap_ok(strstr(text, "PREDICTED OUT OF MEMORY") != NULL, "%s: an OOM prediction is said",
                   pp_launch_format_names[fmt]);
    }
}

static void test_deepspeed_nemo(void)
{
    pp_error e;
    setup("llama2-7b", 16, 8, 128);
    W.framework = PP_FW_DEEPSPEED;
    Lay.tp = 2, Lay.zero = 1, Lay.offload = PP_OFF_OPTIMIZER, Lay.mbs = 2, Lay.recompute = PP_RC_FULL;
    validate();
    tap_ok(render(PP_LAUNCH_DEEPSPEED, &e) == PP_OK, "deepspeed written (%s)", e.msg);
    /* the JSON between the heredoc markers */
    char *a = strstr(text, "<<'PARPLAN_DS_CONFIG'\n"), *b = a ? strstr(a, "\nPARPLAN_DS_CONFIG\n") : NULL;
    bool parsed = a && b && yaml_parses(a + 22, (size_t)(b - a - 21));
    tap_ok(parsed, "ds_config.json embedded in the script parses");
    tap_ok(strstr(text, "\"train_batch_size\": 128,") && strstr(text, "\"train_micro_batch_size_per_gpu\": 2,") &&
               strstr(text, "\"gradient_accumulation_steps\": 8,") && strstr(text, "\"stage\": 1,") &&
               strstr(text, "\"offload_optimizer\"") && !strstr(text, "\"offload_param\"") &&
               strstr(text, "\"reduce_bucket_size\": 16777216,") && strstr(text, "\"activation_checkpointing\""),
           "train batch 128 = 2 micro x 8 accumulation x dp 8, ZeRO-1, optimizer offload, buckets h^2");
    tap_ok(strstr(text, "deepspeed --num_nodes 2 --num_gpus 8 --hostfile \"$HOSTFILE\"") != NULL,
           "launcher for 2 nodes of 8");
    tap_ok(strstr(text, "--tensor-model-parallel-size 2") != NULL, "tp > 1 is told to the training script");

    setup("llama2-7b", 8, 8, 64);
    W.framework = PP_FW_DEEPSPEED;
    Lay.zero = 3, Lay.offload = PP_OFF_PARAMS;
    validate();
    render(PP_LAUNCH_DEEPSPEED, &e);
    tap_ok(strstr(text, "\"stage3_prefetch_bucket_size\": 15099494,") &&
               strstr(text, "\"stage3_param_persistence_threshold\": 40960,") && strstr(text, "\"offload_param\""),
           "ZeRO-3: prefetch 0.9 h^2, persistence 10 h, parameter offload");

    setup("llama2-70b", 64, 8, 128);
    Lay.tp = 8, Lay.pp = 4, Lay.vpp = 5, Lay.dist_opt = true, Lay.sp = true, Lay.recompute = PP_RC_FULL;
    Lay.recompute_layers = 10;
    validate();
    tap_ok(render(PP_LAUNCH_NEMO, &e) == PP_OK && yaml_parses(text, strlen(text)), "NeMo overrides parse as YAML");
    tap_ok(strstr(text, "  devices: 8\n") && strstr(text, "  num_nodes: 8\n") &&
               strstr(text, "  tensor_model_parallel_size: 8\n") && strstr(text, "  pipeline_model_parallel_size: 4\n") &&
               strstr(text, "  virtual_pipeline_model_parallel_size: 5\n") && strstr(text, "  sequence_parallel: true\n") &&
               strstr(text, "  num_query_groups: 8\n") && strstr(text, "  activations_checkpoint_granularity: full\n") &&
               strstr(text, "  activations_checkpoint_method: block\n") &&
               strstr(text, "  activations_checkpoint_num_layers: 2\n") && strstr(text, "    name: distributed_fused_adam\n") &&
               strstr(text, "  share_embeddings_and_output_weights: false\n"),
           "NeMo: devices, nodes, tp/pp/vpp, sp, GQA, block recompute 10/5 per chunk, distributed Adam");
}

static int count_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (strstr(de->d_name, ".tmp.")) n++;
    if (d) closedir(d);
    return n;
}

static void test_atomic(void)
{
    pp_error e = {0};
    char dir[] = "/tmp/parplan_launch_dir_XXXXXX";
    if (!mkdtemp(dir)) {
        tap_ok(0, "mkdtemp");
        return;
    }
    char sub[256], path[512];
    snprintf(sub, sizeof sub, "%s/out", dir);
    setup("llama2-7b", 16, 8, 128);
    Lay.tp = 2, Lay.dist_opt = true;
    validate();
    tap_ok(pp_launch_write(PP_LAUNCH_MEGATRON, &P, NULL, sub, &e) == PP_OK, "-o DIR created and written (%s)", e.msg);
    snprintf(path, sizeof path, "%s/pretrain_gpt.sh", sub);
    struct stat st;
    /* stat first: the arguments of tap_ok are evaluated in no fixed order */
    bool stat_ok = stat(path, &st) == 0;
    unsigned mode = stat_ok ? (unsigned)(st.st_mode & 0777) : 0;
    tap_ok(stat_ok && mode == 0755, "script is executable (mode %o)", mode);
    size_t n;
    char *first = tc_read_file(path, &n);
    tap_ok(first && strstr(first, "--tensor-model-parallel-size 2") && count_tmp(sub) == 0,
           "content written, no temporary file left");
    /* a reader holding the old file keeps reading it whole: the new one is renamed over */
    int fd = open(path, O_RDONLY);
    Lay.tp = 4, Lay.dp = 0;
    validate();
    tap_ok(pp_launch_write(PP_LAUNCH_MEGATRON, &P, NULL, sub, &e) == PP_OK, "rewritten");
    char old[64] = {0};
    ssize_t k = pread(fd, old, sizeof old - 1, 0);
    struct stat st_old, st_new;
    fstat(fd, &st_old);
    stat(path, &st_new);
    tap_ok(k > 0 && !strncmp(old, "#!/usr/bin/env bash", 19) && st_old.st_ino != st_new.st_ino &&
               (size_t)st_old.st_size == n,
           "the old file was replaced by rename (new inode), not truncated in place");
    close(fd);
    char *second = tc_read_file(path, NULL);
    tap_ok(second && strstr(second, "--tensor-model-parallel-size 4") && count_tmp(sub) == 0, "new content in place");
    free(first);
    free(second);

    W.framework = PP_FW_DEEPSPEED;
    Lay.dist_opt = false, Lay.zero = 1, Lay.tp = 1, Lay.dp = 0;
    validate();
    tap_ok(pp_launch_write(PP_LAUNCH_DEEPSPEED, &P, NULL, sub, &e) == PP_OK, "deepspeed -o DIR");
    snprintf(path, sizeof path, "%s/ds_config.json", sub);
    char *js = tc_read_file(path, &n);
    tap_ok(js && yaml_parses(js, n) && js[0] == '{' && strstr(js, "\"_comment\": \"Generated by parplan"),
           "ds_config.json is a JSON document with the version comment");
    stat(path, &st);
    tap_ok((st.st_mode & 0777) == 0644, "ds_config.json mode 644");
    snprintf(path, sizeof path, "%s/launch_deepspeed.sh", sub);
    char *sh = tc_read_file(path, NULL);
    tap_ok(sh && strstr(sh, "dirname \"$0\")/ds_config.json") && !strstr(sh, "PARPLAN_DS_CONFIG"),
           "launcher refers to the ds_config.json beside it");
    free(js);
    free(sh);

    /* -o naming a file, and an uncreatable directory */
    W.framework = PP_FW_MEGATRON;
    Lay.zero = 0;
    validate();
    snprintf(path, sizeof path, "%s/pretrain_gpt.sh", sub);
    tap_ok(pp_launch_write(PP_LAUNCH_NEMO, &P, NULL, path, &e) == PP_ERR_INPUT && strstr(e.msg, "directory"),
           "-o naming a file is refused: %s", e.msg);
    tap_ok(pp_launch_write(PP_LAUNCH_MEGATRON, &P, NULL, "/nonexistent-parplan/a/b", &e) == PP_ERR_RUNTIME,
           "an uncreatable directory is a runtime error: %s", e.msg);
    tap_ok(pp_launch_write_file_atomic(sub, "x.txt", "abc", 3, 0644, &e) == PP_OK, "atomic write helper");
    snprintf(path, sizeof path, "%s/x.txt", sub);
    char *x = tc_read_file(path, &n);
    tap_ok(x && n == 3 && !memcmp(x, "abc", 3), "helper wrote 3 bytes");
    free(x);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) tap_diag("could not remove %s", dir);
}

static void test_job_name(void)
{
    pp_error e;
    setup("llama2-7b", 8, 8, 64);
    snprintf(W.model.name, sizeof W.model.name, "my model's\n$(rm -rf ~)");
    validate();
    render(PP_LAUNCH_SLURM, &e);
    tap_ok(strstr(text, "#SBATCH --job-name=parplan-my_model_s___rm_-rf___\n") && !strstr(text, "\n$(rm"),
           "model names are sanitized in the job name and comments");
}

/* What defines the model beyond its shape (pp.h): the flags, their values, and a note for what
 * Megatron-LM cannot express (not written). */
static void test_definition(void)
{
    pp_error e;
    setup("llama3.1-8b", 8, 8, 64);
    Lay.tp = 2, Lay.sp = true;
    validate();
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && !strcmp(arg_value("--norm-epsilon"), "1e-05") &&
               !strcmp(arg_value("--rotary-base"), "500000") && arg_value("--use-rope-scaling") &&
               !strcmp(arg_value("--rope-scaling-factor"), "8") && !strcmp(arg_value("--seq-length"), "8192") &&
               !strcmp(arg_value("--max-position-embeddings"), "131072") && !strstr(text, "# note: llama3"),
           "Llama 3.1: --norm-epsilon 1e-05, --rotary-base 500000, --use-rope-scaling x8; seq 8192 apart from the context "
           "131072");
    W.model.rope_factor = 16;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && strstr(text, "scales x8 over 1-4 of 8192 whatever"),
           "llama3 x16: pretrain_gpt.py scales x8 whatever --rope-scaling-factor says: said");
    W.model.rope_scaling = PP_ROPE_SCALING_LINEAR, W.model.rope_factor = 2.5, W.model.rope_local_theta = 10000;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && !arg_value("--rotary-seq-len-interpolation-factor") &&
               strstr(text, "linear RoPE scaling x2.5") && strstr(text, "windowed layers' RoPE base 10000"),
           "linear x2.5 (Megatron's factor is an integer) and a windowed layers' base: not written, said");
    W.model.rope_factor = 4, W.model.rope_local_theta = 0, W.model.rope_theta = 1e4 + 0.5;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && !strcmp(arg_value("--rotary-seq-len-interpolation-factor"), "4") &&
               !arg_value("--rotary-base") && strstr(text, "takes an integer: not written"),
           "linear x4: --rotary-seq-len-interpolation-factor 4; a base of 10000.5: not written, said");
    W.model.seq = 262144;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && !strcmp(arg_value("--max-position-embeddings"), "262144") &&
               strstr(text, "past the model's context 131072"),
           "training past the context: --max-position-embeddings at the training length (arguments.py), said");
    setup("deepseek-v3", 256, 8, 1024);
    Lay.pp = 8, Lay.ep = 32;
    validate();
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && !strcmp(arg_value("--rope-type"), "yarn") &&
               !strcmp(arg_value("--rotary-scaling-factor"), "40") && !strcmp(arg_value("--mscale-all-dim"), "1") &&
               !arg_value("--yarn-beta-fast") && !strcmp(arg_value("--moe-router-score-function"), "sigmoid") &&
               !strcmp(arg_value("--moe-router-topk-scaling-factor"), "2.5") && !strcmp(arg_value("--moe-router-num-groups"), "8") &&
               !strcmp(arg_value("--moe-router-group-topk"), "4") && arg_value("--moe-router-enable-expert-bias") &&
               !strcmp(arg_value("--moe-router-load-balancing-type"), "seq_aux_loss") &&
               !strcmp(arg_value("--moe-aux-loss-coeff"), "0.0001") && !arg_value("--moe-router-pre-softmax") &&
               !arg_value("--moe-z-loss-coeff") && !strstr(text, "# note: YaRN"),
           "DeepSeek-V3: MLA's --rope-type yarn x40 with its mscales; sigmoid x2.5, 4 of 8 groups, expert bias, seq_aux_loss");
    W.model.yarn_beta_fast = 1, W.model.rope_original_context = 8192;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && strstr(text, "Megatron fixes 4096 and 32/1"),
           "MLA's YaRN with Kimi K2's beta 1 over 8192 positions: Megatron fixes them, said");
    W.model.rope_scaling = PP_ROPE_SCALING_NONE, W.model.rope_factor = 0, W.model.rope_original_context = 0;
    W.model.router_raw_topk = true;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && !arg_value("--rope-type") && !arg_value("--rotary-scaling-factor") &&
               strstr(text, "sigmoid top-8 weights as scored"),
           "MLA without scaling: no --rope-type (Megatron's yarn of factor 1); sigmoid top-8 unnormalised: said");
    setup("moe-zloss-1b", 16, 8, 128);
    Lay.tp = 2, Lay.sp = true, Lay.ep = 8, Lay.etp = 1;
    validate();
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && arg_value("--moe-router-pre-softmax") &&
               !strcmp(arg_value("--moe-z-loss-coeff"), "0.001") && !strcmp(arg_value("--moe-aux-loss-coeff"), "0.01") &&
               arg_value("--moe-shared-expert-gate") && !strcmp(arg_value("--moe-router-score-function"), "softmax"),
           "top-1 softmax as scored: --moe-router-pre-softmax; z-loss 0.001, aux 0.01, the shared expert's gate");
    W.model.router_raw_topk = false;
    tap_ok(render(PP_LAUNCH_MEGATRON, &e) == PP_OK && arg_value("--moe-router-pre-softmax") && strstr(text, "Megatron refuses it"),
           "top-1 softmax renormalised (weight 1): Megatron refuses it, --moe-router-pre-softmax written and said");
}

int main(void)
{
    test_names();
    test_layout_string();
    test_recompute();
    test_megatron_values();
    test_errors();
    test_stack();
    test_definition();
    test_predictions_missing();
    test_deepspeed_nemo();
    test_atomic();
    test_job_name();
    return tap_done();
}
