/* parplan: plan the parallel layout of transformer training. Dispatch and help. */
#include <stdio.h>
#include <stdbool.h>
#include <string.h>

#include "cli.h"
#include "pp_launch.h"

typedef struct {
    const char *name;
    int (*run)(pp_cli *c);
    const char *args;
    const char *summary;
    const char *example;
    const char *own_option, *own_help; /* an option the command parses itself, or NULL */
} pp_subcommand;

static const pp_subcommand subcommands[] = {
    {"models", pp_cmd_models, "[--model NAME|FILE] [--json]",
     "list known models (with parameter counts) and GPUs, or describe one model",
     "parplan models --model deepseek-v3 --json",
     "--model", "NAME|FILE: describe one model (fields, layer pattern, parameters per part and per tensor)"},
    {"check", pp_cmd_check, "WORK LAYOUT",
     "per-stage memory breakdown, fits or OOM, predicted step time (exit 0: fits, 1: does not, 2: bad input)",
     "parplan check --model gpt3-13b --gpu a100-80gb --gpus 16 --tp 2 --pp 2 --mbs 1", NULL, NULL},
    {"plan", pp_cmd_plan, "WORK [--top K] [--probe K] | --gpu A,B --gpus N,M --tokens T [--prices FILE]",
     "search the layouts, prune (with reasons), rank; over GPU types and counts: what to rent by days and cost",
     "parplan plan --model gpt3-13b --gpu a100-80gb --gpus 16 --gpus-per-node 8", NULL, NULL},
    {"launch", pp_cmd_launch, "WORK LAYOUT --format F",
     "launch config for " PP_LAUNCH_FORMAT_LIST,
     "parplan launch --model llama3-8b --gpu h100-sxm --gpus 8 --tp 2 --mbs 1 --format megatron", NULL, NULL},
    {"probe", pp_cmd_probe, "[gemm|bandwidth|attention|layer|optimizer|nccl|all|moe|mla] [--model NAME|FILE] [-o FILE]",
     "measure this machine's GPUs into a hardware profile (moe, mla: a model's own layer at a layout)",
     "parplan probe all -o h100.yaml", NULL, NULL},
    {"estimate", pp_cmd_estimate, "WORK LAYOUT --tokens T [--price-per-gpu-hour P]",
     "time and cost to train on a token budget",
     "parplan estimate --model gpt3-175b --gpu a100-80gb --gpus 1024 --tp 8 --pp 8 --dist-opt --sp --tokens 300e9", NULL, NULL},
    {"calibrate", pp_cmd_calibrate, "LOG[:ARGS]... --gpu NAME [--profile BASE] [-o FILE]",
     "fit the time model's efficiency factors to real Megatron-LM logs",
     "parplan calibrate --gpu h200 run1.log run2.log -o h200-calibrated.yaml", NULL, NULL},
};
#define N_SUB (sizeof subcommands / sizeof subcommands[0])

static void usage(FILE *f)
{
    fprintf(f, "parplan %s: the fastest parallel layout of a transformer on your GPUs\n\n", PP_VERSION);
    fprintf(f, "usage: parplan <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < N_SUB; i++)
        fprintf(f, "  %-9s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(f, "\nWORK:   --model NAME|FILE --gpu NAME|FILE --gpus N [--gpus-per-node N] [--gbs N]\n"
               "        or --megatron-args FILE|- (a Megatron-LM command line, script or log) --gpu NAME\n"
               "STACK:  [--precision bf16|fp16|fp8|mxfp8|nvfp4] [--dropout P] [--no-overlap] [--tp-comm-overlap]\n"
               "        [--impl te|local] [--moe-dispatcher D] [--moe-grouped-gemm] [--capacity-factor X]\n"
               "LAYOUT: --tp --pp --dp --vpp --cp --ep --etp --mbs [--zero S|--dist-opt] [--sp]\n"
               "        [--recompute none|selective|full] [--offload none|optimizer|params]\n"
               "\n`parplan <command> --help` lists a command's options. Example:\n"
               "  parplan plan --model gpt3-13b --gpu a100-80gb --gpus 16 --gpus-per-node 8\n");
}

static void sub_usage(const pp_subcommand *s)
{
    printf("usage: parplan %s %s\n%s\n\noptions:\n", s->name, s->args, s->summary);
    if (s->own_option) printf("      %-24s %s\n", s->own_option, s->own_help); /* as cli.c's lines */
    pp_cli_usage_options(stdout, s->name);
    printf("\nexample:\n  %s\n", s->example);
}

int pp_cli_main(int argc, char **argv)
{
    /* -q / --quiet and --json may also come before the command: "parplan -q plan ..." */
    int first = 1;
    bool pre_quiet = false, pre_json = false;
    while (first < argc && (!strcmp(argv[first], "-q") || !strcmp(argv[first], "--quiet") || !strcmp(argv[first], "--json"))) {
        if (argv[first][2] == 'j') pre_json = true;
        else pre_quiet = true;
        first++;
    }
    if (argc <= first) {
        fprintf(stderr, "parplan: missing command: models, check, plan, launch, probe, estimate or "
                        "calibrate (try parplan --help)\n");
        return 2;
    }
    const char *cmd = argv[first];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("parplan %s\n", PP_VERSION);
        return 0;
    }
    const pp_subcommand *sub = NULL;
    for (size_t i = 0; i < N_SUB; i++)
        if (!strcmp(subcommands[i].name, cmd)) sub = &subcommands[i];
    if (!sub) {
        const char *names[N_SUB];
        for (size_t i = 0; i < N_SUB; i++) names[i] = subcommands[i].name;
        char near[128];
        pp_did_you_mean(cmd, names, (int)N_SUB, near, sizeof near);
        fprintf(stderr, "parplan: unknown command '%s'%s%s%s (try parplan --help)\n", cmd,
                near[0] ? ": did you mean " : "", near, near[0] ? "?" : "");
        return 2;
    }
    if (sub->run == pp_cmd_plan && pp_rent_wanted(argc - first - 1, argv + first + 1))
        return pp_cmd_rent(argv[0], argc - first - 1, argv + first + 1, pre_quiet, pre_json);
    pp_cli c = {.argv0 = argv[0]};
    pp_error err = {0};
    int rc;
    if (pp_cli_parse(&c, cmd, argc - first - 1, argv + first + 1, &err) != PP_OK) {
        rc = pp_cli_fail(&err);
        goto done;
    }
    c.quiet |= pre_quiet;
    c.json |= pre_json;
    if (c.help) {
        sub_usage(sub);
        rc = 0;
        goto done;
    }
    rc = sub->run(&c);
done:
    pp_cli_free(&c);
    return rc;
}
