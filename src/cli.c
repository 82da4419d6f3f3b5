/* The command line: each subcommand's option table (its own options and the request options it
 * takes, the library's pp_request_options), parsed by pp_options_parse into pp_cli; and
 * pp_cli_work, which hands the request to the library's one merge (pp_request_resolve). Every
 * flag of docs/cli.md is in one of these tables, once. Unknown flags, missing values and
 * malformed numbers are errors naming the flag (exit 2), never silently ignored. */
#include "cli.h"
#include "pp_launch.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pp_config.h"
#include "pp_json.h"
#include "pp_layer.h"
#include "pp_margs.h"
#include "pp_options.h"

#define C(f) offsetof(pp_cli, f)

/* Every command's own. */
static const pp_option common_opts[] = {
    {"--json", 0, PP_OPT_FLAG, C(json), -1, 0, 0, NULL, 0, 0, "one JSON document on stdout"},
    {"--help", 'h', PP_OPT_FLAG, C(help), -1, 0, 0, NULL, 0, 0, "this help"},
    {"--quiet", 'q', PP_OPT_FLAG, C(quiet), -1, 0, 0, NULL, 0, 0, "no progress lines"},
};
#define OUTPUT_OPT {"--output", 'o', PP_OPT_STR, C(output), -1, 0, 0, NULL, 0, 0, "PATH: output file or directory"}
#define TARGET_OPT {"--launch-target", 0, PP_OPT_STR, C(launch_target), -1, 0, 0, NULL, 0, 0, \
                    "standard|device-local: Megatron with TE, or without TE/apex (mock data)"}
#define ITERS_OPT {"--train-iters", 0, PP_OPT_INT, C(train_iters), -1, 1, 1000000000, NULL, 0, 0, \
                   "N: Megatron --train-iters (default: device-local 5, else $TRAIN_ITERS)"}
#define REPORT_OPT {"--report", 0, PP_OPT_STR, C(report), -1, 0, 0, NULL, 0, 0, "FILE.html: self-contained report"}
#define DUMP_ILP_OPT {"--dump-ilp", 0, PP_OPT_STR, C(dump_ilp), -1, 0, 0, NULL, 0, 0, "FILE: write the stage ILP (CPLEX LP)"}

#define SEQ_CHANGE_OPT {"--allow-seq-change", 0, PP_OPT_FLAG, C(allow_seq_change), -1, 0, 0, NULL, 0, 0, \
                        "remedies may also shorten --seq (halving, down to 1/16 and 512)"}
static const pp_option check_opts[] = {REPORT_OPT, DUMP_ILP_OPT, SEQ_CHANGE_OPT};
static const pp_option plan_opts[] = {
    {"--top", 0, PP_OPT_INT, C(top), -1, 1, 100000, NULL, 0, 0, "K: candidates to show (default 5)"},
    {"--probe", 0, PP_OPT_INT, C(probe_k), -1, 1, 1000, NULL, 0, 0, "K: measure the best K on the local GPUs"},
    {"--probe-budget", 0, PP_OPT_NUM, C(probe_budget_s), -1, 1, 86400, NULL, 0, 0, "SECONDS: GPU time for --probe"},
    {"--emit", 0, PP_OPT_STR, C(emit), -1, 0, 0, NULL, 0, 0, "FORMAT: launch config of the best layout"},
    TARGET_OPT, ITERS_OPT, OUTPUT_OPT, REPORT_OPT, DUMP_ILP_OPT,
    {"--allow-cross-node-tp", 0, PP_OPT_FLAG, C(allow_cross_node_tp), -1, 0, 0, NULL, 0, 0,
     "let the search place TP across nodes"},
    {"--no-fold", 0, PP_OPT_FLAG, C(no_fold), -1, 0, 0, NULL, 0, 0,
     "show VPP variants within the model's band as rows of their own (default: folded into one)"},
    {"--tokens", 0, PP_OPT_NUM, C(tokens), -1, 1, 1e18, NULL, 0, 0,
     "T: training tokens: with --gpu A,B,... and/or --gpus N,M,... rank what to rent by days and cost"},
    {"--price-per-gpu-hour", 0, PP_OPT_STR, C(price_spec), -1, 0, 0, NULL, 0, 0,
     "P|GPU=P,GPU=P: price of one GPU-hour, for what to rent"},
    {"--prices", 0, PP_OPT_STR, C(prices_file), -1, 0, 0, NULL, 0, 0,
     "FILE: prices per GPU-hour for what to rent (examples/prices.yaml: example prices, with date and source)"},
};
static const pp_option launch_opts[] = {
    {"--format", 0, PP_OPT_STR, C(format), -1, 0, 0, NULL, 0, 0, PP_LAUNCH_FORMAT_LIST},
    TARGET_OPT, ITERS_OPT, OUTPUT_OPT,
};
static const pp_option estimate_opts[] = {
    {"--tokens", 0, PP_OPT_NUM, C(tokens), -1, 1, 1e18, NULL, 0, 0, "T: training tokens (e.g. 300e9)"},
    {"--price-per-gpu-hour", 0, PP_OPT_NUM, C(price_per_gpu_hour), -1, 0, 1e6, NULL, 0, 0, "P: price of one GPU-hour"},
    SEQ_CHANGE_OPT,
};
static const pp_option probe_opts[] = {OUTPUT_OPT};
static const pp_option calibrate_opts[] = {
    OUTPUT_OPT,
    {"--probe-cache", 0, PP_OPT_STR, C(probe_cache), -1, 0, 0, NULL, 0, 0,
     "FILE: plan --probe's cache: fit on the logs' measured layers (writes probe_calibration, for plan --probe)"},
    {"--fit", 0, PP_OPT_STR, C(fit), -1, 0, 0, NULL, 0, 0,
     "LIST: factors to fit: gemm,elementwise,score,layer,optimizer, or none to evaluate --profile (default: "
     "gemm,layer,optimizer + score with unfused attention, else elementwise)"},
};
static const pp_option no_opts[] = {{0}};

/* Which request options a command takes: all of them but `except`, or only `only`. */
typedef struct {
    const char *name;
    const pp_option *own;
    size_t n_own;
    const char *const *only;   /* NULL-terminated, or NULL */
    const char *const *except; /* NULL-terminated, or NULL */
} cmd_spec;

static const char *const models_only[] = {"--model", NULL};
static const char *const probe_only[] = {"--model", "--attention", "--moe-grouped-gemm", "--tp", "--cp", "--ep",
                                         "--etp", "--mbs", "--sp", NULL};
static const char *const calibrate_only[] = {"--gpu", "--profile", NULL};
static const char *const plan_except[] = {"--replicate", NULL};

static const cmd_spec cmd_specs[] = {
    {"models", no_opts, 0, models_only, NULL},
    {"check", check_opts, sizeof check_opts / sizeof check_opts[0], NULL, NULL},
    {"plan", plan_opts, sizeof plan_opts / sizeof plan_opts[0], NULL, plan_except},
    {"launch", launch_opts, sizeof launch_opts / sizeof launch_opts[0], NULL, NULL},
    {"probe", probe_opts, sizeof probe_opts / sizeof probe_opts[0], probe_only, NULL},
    {"estimate", estimate_opts, sizeof estimate_opts / sizeof estimate_opts[0], NULL, NULL},
    {"calibrate", calibrate_opts, sizeof calibrate_opts / sizeof calibrate_opts[0], calibrate_only, NULL},
};

static const cmd_spec *spec_of(const char *cmd)
{
    for (size_t i = 0; i < sizeof cmd_specs / sizeof cmd_specs[0]; i++)
        if (!strcmp(cmd_specs[i].name, cmd)) return &cmd_specs[i];
    return NULL;
}

static bool listed(const char *const *list, const char *name)
{
    for (; list && *list; list++)
        if (!strcmp(*list, name)) return true;
    return false;
}

/* The request options cmd takes, into out (room for pp_request_n_options). */
static size_t request_opts(const cmd_spec *sp, pp_option *out)
{
    size_t n = 0;
    for (size_t i = 0; i < pp_request_n_options; i++) {
        const char *name = pp_request_options[i].name;
        if (sp->only ? listed(sp->only, name) : !listed(sp->except, name)) out[n++] = pp_request_options[i];
    }
    return n;
}

/* The sets of cmd over c: its common options, the request's, its own. */
static int cmd_sets(pp_cli *c, const cmd_spec *sp, pp_option *req, pp_option_set sets[3])
{
    size_t nreq = request_opts(sp, req);
    sets[0] = (pp_option_set){common_opts, sizeof common_opts / sizeof common_opts[0], c, NULL};
    sets[1] = (pp_option_set){req, nreq, &c->rq, c->rq.given};
    sets[2] = (pp_option_set){sp->own, sp->n_own, c, NULL};
    return 3;
}

pp_status pp_cli_parse(pp_cli *c, const char *cmd, int argc, char **argv, pp_error *err)
{
    const char *argv0 = c->argv0;
    memset(c, 0, sizeof *c);
    c->argv0 = argv0;
    c->cmd = cmd;
    c->argc = argc;
    c->argv = argv;
    c->top = 5;
    pp_request_init(&c->rq);
    const cmd_spec *sp = spec_of(cmd);
    if (!sp) return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "unknown command '%s'", cmd);
    pp_option *req = calloc(pp_request_n_options, sizeof *req);
    if (!req) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    pp_option_set sets[3];
    int n = cmd_sets(c, sp, req, sets);
    /* every command's options, so that one of another command is named as such */
    enum { N_SPECS = sizeof cmd_specs / sizeof cmd_specs[0] };
    pp_option_set others[N_SPECS + 1];
    others[0] = (pp_option_set){pp_request_options, pp_request_n_options, NULL, NULL};
    for (size_t i = 0; i < N_SPECS; i++)
        others[i + 1] = (pp_option_set){cmd_specs[i].own, cmd_specs[i].n_own, NULL, NULL};
    pp_status st = pp_options_parse_cmd(sets, n, others, N_SPECS + 1, cmd, argc, argv, &c->pos, &c->npos, err);
    free(req);
    /* what the commands that do not resolve a work read as given */
    const pp_request *r = &c->rq;
    c->model_arg = r->model, c->gpu_arg = r->gpu, c->profile_arg = r->profile;
    c->megatron_args = r->megatron_args, c->stages = pp_request_stages(r);
    c->layout = pp_request_layout(r);
    c->fixed = pp_request_fixed(r);
    c->work.framework = (pp_framework)r->framework;
    c->work.attention = (pp_attention)r->attention;
    pp_stack_init(&c->work.stack);
    c->work.stack.grouped_gemm = r->grouped_gemm;
    return st;
}

const pp_option *pp_cli_option(const char *cmd, const char *name, bool *request)
{
    *request = false;
    for (size_t i = 0; i < pp_request_n_options; i++)
        if (!strcmp(pp_request_options[i].name, name)) return *request = true, &pp_request_options[i];
    for (size_t i = 0; i < sizeof common_opts / sizeof common_opts[0]; i++)
        if (!strcmp(common_opts[i].name, name) ||
            (name[0] == '-' && name[1] == common_opts[i].short_name && !name[2] && name[1]))
            return &common_opts[i];
    const cmd_spec *sp = spec_of(cmd);
    for (size_t i = 0; sp && i < sp->n_own; i++)
        if (!strcmp(sp->own[i].name, name) || (name[0] == '-' && name[1] && !name[2] && name[1] == sp->own[i].short_name))
            return &sp->own[i];
    return NULL;
}

void pp_cli_usage_options(FILE *f, const char *cmd)
{
    const cmd_spec *sp = spec_of(cmd);
    if (!sp) return;
    pp_cli c = {0};
    pp_option *req = calloc(pp_request_n_options, sizeof *req);
    if (!req) return;
    pp_option_set sets[3];
    int n = cmd_sets(&c, sp, req, sets);
    pp_options_usage(f, sets, n);
    free(req);
}

pp_status pp_cli_catalog(pp_cli *c, pp_error *err)
{
    if (c->cat.n_models || c->cat.n_gpus) return PP_OK;
    char dir[1024];
    pp_status st = pp_catalog_find_dir(c->argv0, dir, sizeof dir, err);
    if (st != PP_OK && !getenv("PARPLAN_MODELS_DIR")) {
        /* Not beside the binary: the configured install datadir, then (for a build tree outside
         * the checkout) the source tree this binary was configured from. */
        const char *fallback[] = {PP_DATADIR "/models.d", PP_SOURCE_DIR "/models.d"};
        for (size_t i = 0; i < sizeof fallback / sizeof fallback[0] && st != PP_OK; i++)
            if (access(fallback[i], R_OK) == 0) {
                snprintf(dir, sizeof dir, "%s", fallback[i]);
                st = PP_OK;
            }
    }
    if (st != PP_OK) return st;
    return pp_catalog_load(&c->cat, dir, err);
}

pp_status pp_cli_work(pp_cli *c, bool needs_layout, pp_error *err)
{
    pp_status st = pp_cli_catalog(c, err);
    if (st != PP_OK) return st;
    pp_resolved res;
    st = pp_request_resolve(&c->rq, &c->cat, needs_layout, c->quiet, &res, err);
    /* the warnings of what was merged, before any error it ran into */
    for (int i = 0; i < res.n_warnings; i++) fprintf(stderr, "parplan: warning: %s\n", res.warnings[i]);
    if (st != PP_OK) {
        pp_resolved_free(&res);
        return st;
    }
    c->work = res.work;
    c->layout = res.layout;
    c->fixed = res.fixed;
    c->margs = res.margs;
    c->split = res.split;
    c->recipe = res.recipe;
    c->have_recipe = res.have_recipe;
    memcpy(c->recipe_src, res.src, sizeof c->recipe_src);
    if (res.have_profile) {
        c->profile = res.profile;
        c->have_profile = true;
        c->work.profile = &c->profile;
    }
    return PP_OK;
}

void pp_cli_work_line(FILE *f, const char *command, const pp_work *w)
{
    int64_t gpn = w->gpus_per_node > 0 ? w->gpus_per_node : 1;
    int64_t nodes = (w->gpus + gpn - 1) / gpn;
    char g[32], b[32], s[32];
    char nvl[64] = "";
    if (pp_work_nvlink_gpus(w) > gpn) snprintf(nvl, sizeof nvl, ", NVLink across %lld", (long long)pp_work_nvlink_gpus(w));
    fprintf(f, "parplan %s: %s on %s x %s (%lld node%s of %lld%s), global batch %s x %s tokens, %s, %s attention\n",
            command, w->model.name, pp_fmt_num((double)w->gpus, 9, g, sizeof g), w->gpu.name, (long long)nodes,
            nodes > 1 ? "s" : "", (long long)gpn, nvl, pp_fmt_num((double)w->gbs, 9, b, sizeof b),
            pp_fmt_num((double)w->model.seq, 9, s, sizeof s), pp_framework_names[w->framework],
            pp_attention_names[w->attention]);
}

void pp_cli_stack_line(FILE *f, const pp_cli *c)
{
    char buf[512];
    pp_stack_describe(&c->work, buf, sizeof buf);
    fprintf(f, "%s", buf);
    if (c->margs) fprintf(f, " (from %s%s)", c->megatron_args, c->margs->unmodelled[0] ? ", with unmodelled arguments" : "");
    fprintf(f, "\n");
    if (c->have_recipe) {
        /* the recipe and where each of its fields' values came from (the fields that apply) */
        fprintf(f, "recipe: %s (%s):", c->recipe.name, c->recipe.path);
        for (int i = 0; i < PP_RF_COUNT; i++) {
            char v[64];
            pp_recipe_field_value(&c->work, (pp_recipe_field)i, v, sizeof v);
            if (!strcmp(v, "-")) continue;
            fprintf(f, "%s %s %s (%s)", i ? "," : "", pp_recipe_field_names[i], v,
                    pp_recipe_src_names[c->recipe_src[i]]);
        }
        fprintf(f, "\n");
    }
}

void pp_cli_stack_json(pp_json *j, const pp_cli *c)
{
    const pp_work *w = &c->work;
    const pp_stack *s = &w->stack;
    char buf[512];
    pp_json_key(j, "stack");
    pp_json_obj_begin(j);
    pp_json_kstr(j, "precision", pp_precision_names[s->precision]);
    pp_json_kstr(j, "framework", pp_framework_names[w->framework]);
    pp_json_key(j, "impl");
    if (w->framework == PP_FW_MEGATRON) pp_json_str(j, pp_impl_names[s->impl]);
    else pp_json_null(j);
    pp_json_kstr(j, "attention", pp_attention_names[w->attention]);
    pp_json_knum(j, "attention_dropout", s->attention_dropout);
    pp_json_knum(j, "hidden_dropout", s->hidden_dropout);
    pp_json_kstr(j, "dropout_source", s->dropout_given ? "given" : w->model.dropout_set ? "model" : "assumed");
    pp_json_kbool(j, "overlap", !s->no_overlap);
    pp_json_kbool(j, "tp_comm_overlap", s->tp_comm_overlap);
    pp_json_kbool(j, "grad_reduce_bf16", s->grad_bf16);
    pp_json_kbool(j, "expandable_segments", s->expandable_segments);
    pp_json_kbool(j, "ep_overlap", s->ep_overlap);
    pp_json_kbool(j, "compile", s->compile);
    if (s->sdpa_backend != PP_SDPA_FLASH) pp_json_kstr(j, "sdpa_backend", pp_sdpa_backend_names[s->sdpa_backend]);
    if (pp_stack_cuda_graphs(s)) { /* only where graphs are stated: the JSON of a run without is unchanged */
        char parts[128];
        pp_cuda_graphs_str(s->cuda_graphs, ",", parts, sizeof parts);
        pp_json_kstr(j, "cuda_graphs", parts);
    }
    if (s->cpu_offload_layers > 0) pp_json_kint(j, "cpu_offload_layers", s->cpu_offload_layers); /* only where stated */
    if (s->vocab_divisible_by > 0) pp_json_kint(j, "vocab_divisible_by", s->vocab_divisible_by); /* only where stated */
    if (s->no_sync_accum) pp_json_kbool(j, "no_sync_accumulation", true); /* only where stated */
    if (s->keep_logits) pp_json_kbool(j, "keep_logits", true);             /* only where stated */
    if (s->compile_loss) pp_json_kbool(j, "compile_loss", true);
    if (s->repeat_kv) pp_json_kbool(j, "repeat_kv", true);           /* only where stated */
    if (s->cp_comm > 0 && s->cp_comm <= PP_CPC_COUNT)
        pp_json_kstr(j, "cp_comm", pp_cp_comm_names[s->cp_comm - 1]); /* only where stated */
    if (s->router_holds_recompute) pp_json_kbool(j, "router_holds_recompute", true); /* only where stated */
    if (s->expert_pad_loop) pp_json_kbool(j, "expert_pad_loop", true);               /* only where stated */
    if (s->fp8_scaling != PP_FP8_TENSORWISE) pp_json_kstr(j, "fp8_scaling", pp_fp8_scaling_names[s->fp8_scaling]);
    if (s->eager_norm != PP_ENORM_FUSED) pp_json_kstr(j, "eager_norm", pp_eager_norm_names[s->eager_norm]);
    if (s->tp_vocab != PP_TPV_SHARDED) pp_json_kstr(j, "tp_vocab", pp_tp_vocab_names[s->tp_vocab]);
    if (s->te_attention != PP_TEATTN_CUDNN) pp_json_kstr(j, "te_attention", pp_te_attention_names[s->te_attention]);
    if (pp_work_lora(w)) { /* only under --finetune lora: full training's JSON is unchanged */
        pp_json_kstr(j, "finetune", pp_finetune_names[s->finetune]);
        pp_json_knum(j, "lora_rank", pp_work_lora_rank(w));
        pp_json_kstr(j, "lora_targets", pp_lora_target_names[s->lora_targets]);
        pp_json_knum(j, "lora_params", pp_layer_lora_params(w) * (double)w->model.layers);
    }
    /* Megatron's bias-activation fusion (on unless --no-bias-act-fusion) and loss implementation */
    pp_json_key(j, "bias_act_fusion");
    if (w->framework == PP_FW_MEGATRON) pp_json_bool(j, !s->act_unfused);
    else pp_json_null(j);
    pp_json_key(j, "cross_entropy_fusion");
    if (w->framework == PP_FW_MEGATRON) pp_json_str(j, pp_ce_fusion_names[s->ce_fusion]);
    else pp_json_null(j);
    pp_json_kstr(j, "optimizer_dtype", s->optimizer_bf16 ? "bf16" : "fp32");
    pp_json_kstr(j, "param_dtype", w->framework == PP_FW_FSDP && !s->param_bf16 ? "fp32" : "bf16");
    pp_json_kstr(j, "loss", pp_loss_names[pp_work_loss(w)]);
    pp_json_kbool(j, "fp8_params", pp_work_fp8_params(w));
    pp_json_kstr(j, "main_params_dtype", pp_opt_dtype_names[s->main_params_dtype]);
    pp_json_kstr(j, "exp_avg_dtype", pp_opt_dtype_names[s->exp_avg_dtype]);
    pp_json_kstr(j, "exp_avg_sq_dtype", pp_opt_dtype_names[s->exp_avg_sq_dtype]);
    pp_json_kbool(j, "precision_aware_optimizer", pp_work_precision_aware(w));
    pp_json_kbool(j, "distributed_fused_adam", pp_work_dist_fused_adam(w));
    /* bytes per parameter of the optimizer state before sharding (pp_work_optimizer_bytes) */
    pp_json_knum(j, "optimizer_bytes_per_param", pp_work_optimizer_bytes(w));
    pp_json_kbool(j, "megatron_fsdp", s->megatron_fsdp);
    if (s->megatron_fsdp) {
        pp_json_kbool(j, "fsdp_double_buffer", s->fsdp_double_buffer);
        if (s->fsdp_unit_size > 0) pp_json_kint(j, "fsdp_unit_size", s->fsdp_unit_size);
        pp_json_kbool(j, "fsdp_grads_fp32", s->fsdp_grads_fp32);
    }
    pp_json_kbool(j, "dataloader_attention_mask", w->framework == PP_FW_MEGATRON && !s->no_attention_mask);
    if (pp_model_is_moe(&w->model)) {
        pp_json_kstr(j, "moe_dispatcher", pp_dispatch_names[s->dispatcher]);
        if (s->dispatcher == PP_DISPATCH_FLEX) pp_json_kstr(j, "moe_flex_backend", pp_flex_backend_names[s->flex_backend]);
        pp_json_kbool(j, "moe_grouped_gemm", s->grouped_gemm);
        pp_json_knum(j, "capacity_factor", s->moe_capacity_factor);
        pp_json_knum(j, "moe_imbalance", s->moe_imbalance);
    }
    pp_stack_describe(w, buf, sizeof buf);
    pp_json_kstr(j, "describe", buf);
    pp_json_obj_end(j);
    /* the recipe (null without --recipe) and where each field's value came from */
    pp_json_key(j, "recipe");
    if (c->have_recipe) {
        pp_json_obj_begin(j);
        pp_json_kstr(j, "name", c->recipe.name);
        pp_json_kstr(j, "file", c->recipe.path);
        pp_json_kstr(j, "source", c->recipe.source);
        pp_json_kstr(j, "release", c->recipe.release);
        pp_json_kstr(j, "checked_by", c->recipe.checked_by);
        pp_json_key(j, "fields");
        pp_json_obj_begin(j);
        for (int i = 0; i < PP_RF_COUNT; i++) {
            char v[64];
            pp_recipe_field_value(w, (pp_recipe_field)i, v, sizeof v);
            if (!strcmp(v, "-")) continue;
            pp_json_key(j, pp_recipe_field_names[i]);
            pp_json_obj_begin(j);
            pp_json_kstr(j, "value", v);
            pp_json_kstr(j, "from", pp_recipe_src_names[c->recipe_src[i]]);
            pp_json_obj_end(j);
        }
        pp_json_obj_end(j);
        pp_json_obj_end(j);
    } else {
        pp_json_null(j);
    }
    if (c->margs) {
        pp_json_key(j, "megatron_args");
        pp_json_obj_begin(j);
        pp_json_kstr(j, "file", c->megatron_args);
        pp_json_kstr(j, "unmodelled", c->margs->unmodelled);
        pp_json_kstr(j, "overlap_note", c->margs->overlap_note);
        pp_json_obj_end(j);
    }
}

void pp_cli_free(pp_cli *c)
{
    if (!c) return;
    pp_catalog_free(&c->cat);
    pp_request_free(&c->rq);
    if (c->have_profile) pp_profile_free(&c->profile);
    free(c->margs);
    c->margs = NULL;
    free(c->split);
    c->split = NULL;
    free(c->pos);
    c->pos = NULL;
}

int pp_cli_fail(const pp_error *err)
{
    char buf[1200];
    if (err->file[0] && err->line > 0) {
        /* file:line:col: message */
        pp_error_format(err, buf, sizeof buf);
        fprintf(stderr, "parplan: %s\n", buf);
    } else if (err->file[0]) {
        fprintf(stderr, "parplan: %s (%s)\n", err->msg, err->file);
    } else {
        fprintf(stderr, "parplan: %s\n", err->msg);
    }
    return err->status == PP_ERR_INPUT ? 2 : 1;
}

const char *pp_fmt_num(double v, int sig, char *buf, size_t n)
{
    if (!isfinite(v)) {
        snprintf(buf, n, "?");
        return buf;
    }
    double a = fabs(v);
    if (a != 0 && (a < 1e-4 || a >= 1e15)) {
        snprintf(buf, n, "%.*g", sig, v); /* beyond what people write out */
        return buf;
    }
    /* decimals so that `sig` significant digits show, none for large numbers */
    int mag = a > 0 ? (int)floor(log10(a)) : 0;
    int dec = sig - 1 - mag;
    if (dec < 0) dec = 0;
    char raw[64];
    snprintf(raw, sizeof raw, "%.*f", dec, v);
    if (strchr(raw, '.')) { /* no trailing zeros: "2", "1.5" */
        char *e = raw + strlen(raw) - 1;
        while (*e == '0') *e-- = 0;
        if (*e == '.') *e = 0;
    }
    /* thousands separators in the integer part */
    const char *s = raw;
    char *o = buf;
    size_t left = n;
    if (*s == '-' && left > 1) *o++ = *s++, left--;
    const char *dot = strchr(s, '.');
    size_t ilen = dot ? (size_t)(dot - s) : strlen(s);
    for (size_t i = 0; i < ilen && left > 1; i++) {
        *o++ = s[i], left--;
        if (ilen > 4 && (ilen - 1 - i) % 3 == 0 && i + 1 < ilen && left > 1) *o++ = ',', left--;
    }
    for (const char *p = s + ilen; *p && left > 1; p++) *o++ = *p, left--;
    *o = 0;
    return buf;
}

const char *pp_fmt_duration(double s, char *buf, size_t n)
{
    char a[48];
    if (!isfinite(s)) snprintf(buf, n, "?");
    else if (s < 120) snprintf(buf, n, "%s s", pp_fmt_num(s, 4, a, sizeof a));
    else if (s < 2 * 3600.0) snprintf(buf, n, "%s min", pp_fmt_num(s / 60.0, 3, a, sizeof a));
    else if (s < 3 * 86400.0) snprintf(buf, n, "%s h", pp_fmt_num(s / 3600.0, 3, a, sizeof a));
    else snprintf(buf, n, "%s days", pp_fmt_num(s / 86400.0, 3, a, sizeof a));
    return buf;
}

const char *pp_path_join(const char *dir, const char *file, char *buf, size_t n)
{
    size_t k = strlen(dir);
    while (k > 1 && dir[k - 1] == '/') k--;
    snprintf(buf, n, "%.*s/%s", (int)k, dir, file);
    return buf;
}
