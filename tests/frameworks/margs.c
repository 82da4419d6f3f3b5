/* Unit tests of the reader of Megatron-LM arguments (planner/frameworks/megatron_args.c and the files
 * it reads with: pylist.c, shell.c, shell_lex.c, megatron_log.c, megatron_config.c): Megatron's list
 * expressions, the reading of bash (variables, arrays, continuations, quotes, arithmetic,
 * here-documents, which command is Megatron's), dest names, the argument dumps of real logs
 * (tests/data/megatron/args.tar.xz, extracted into argv[1]), the model, layout and stack read
 * from them, the unmodelled-argument line, and every kind of bad input with its line:col. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "pp_margs.h"

static const char *logdir = ".";

/* ------------------------------------------------------------------ list expressions */

static bool list_is(const char *expr, const char *want)
{
    int64_t v[256], iv = 0;
    int n = 0, col = 0;
    char msg[160], got[1024] = "";
    if (pp_margs_list_expr(expr, v, 256, &n, &iv, &col, msg, sizeof msg) != PP_OK) {
        tap_diag("'%s': %s at %d", expr, msg, col);
        return false;
    }
    size_t k = 0;
    if (!n) snprintf(got, sizeof got, "%lld", (long long)iv);
    for (int i = 0; i < n; i++) k += (size_t)snprintf(got + k, sizeof got - k, "%s%lld", i ? "," : "", (long long)v[i]);
    if (strcmp(got, want)) tap_diag("'%s' gave %s, want %s", expr, got, want);
    return !strcmp(got, want);
}

static bool list_bad(const char *expr, int want_col)
{
    int64_t v[64], iv = 0;
    int n = 0, col = 0;
    char msg[160];
    bool bad = pp_margs_list_expr(expr, v, 64, &n, &iv, &col, msg, sizeof msg) == PP_ERR_INPUT;
    if (bad && want_col && col != want_col) tap_diag("'%s': column %d, want %d (%s)", expr, col, want_col, msg);
    return bad && (!want_col || col == want_col);
}

static void test_list_expr(void)
{
    tap_ok(list_is("([0]*1+[1]*7)", "0,1,1,1,1,1,1,1"), "([0]*1+[1]*7): one dense layer, seven MoE");
    tap_ok(list_is("([1]*3+[0]*2)*2", "1,1,1,0,0,1,1,1,0,0"), "([1]*3+[0]*2)*2 (arguments.py's own example)");
    tap_ok(list_is("[1,1,1,0]*3", "1,1,1,0,1,1,1,0,1,1,1,0"), "[1,1,1,0]*3");
    tap_ok(list_is("[0, 1, 1, 1]", "0,1,1,1"), "the dump's printed list [0, 1, 1, 1]");
    tap_ok(list_is("2*[1,0]+[1]", "1,0,1,0,1"), "int * list, then +");
    tap_ok(list_is("4", "4") && list_is(" 3*2+1 ", "7"), "integers: 4, 3*2+1 = 7");
    tap_ok(list_is("[0,1,]", "0,1"), "Python's trailing comma");
    tap_ok(list_bad("[0,1", 5), "[0,1 without ']': column 5");
    tap_ok(list_bad("__import__('os')", 1), "a name is not the language (no eval): column 1");
    tap_ok(list_bad("[[1]]", 0) && list_bad("[1]*[2]", 0) && list_bad("[1]+2", 0), "nested lists, list*list, list+int refused");
    tap_ok(list_bad("[1]*1000000", 0), "a million entries refused");
    tap_ok(list_bad("[1]*99999999999999999999", 0), "a count that overflows refused");
    tap_ok(list_bad("", 0) && list_bad("()", 0), "empty input refused");
}

/* ------------------------------------------------------------------ scripts */

static pp_status script(pp_margs *a, const char *text, pp_error *err)
{
    pp_margs_init(a, "s.sh");
    memset(err, 0, sizeof *err);
    return pp_margs_parse_script(a, text, strlen(text), err);
}

static bool val_is(const pp_margs *a, const char *key, const char *want)
{
    const char *v = pp_margs_get(a, key);
    if (!v || strcmp(v, want)) tap_diag("%s = %s, want %s", key, v ? v : "(absent)", want ? want : "(absent)");
    return v && !strcmp(v, want);
}

static const pp_margs_kv *kv(const pp_margs *a, const char *key)
{
    for (int i = 0; i < a->n; i++)
        if (!strcmp(a->kv[i].key, key)) return &a->kv[i];
    return NULL;
}

static void test_script(void)
{
    pp_margs a;
    pp_error e;
    const char *s =
        "#!/bin/bash\n"
        "# a hand-written launcher\n"
        "set -euo pipefail\n"
        "export CUDA_DEVICE_MAX_CONNECTIONS=1 NODES=2\n"
        "GPUS_PER_NODE=${GPUS_PER_NODE:-8}\n"
        "TP=2 PP=4; LAYERS=32\n"
        "MBS=1\n"
        "GBS=$(( MBS * 8 * (NODES + 62) ))\n"
        "SHAPE=\"--num-layers ${LAYERS} --hidden-size 4096 \\\n"
        "   --num-attention-heads 32\"\n"
        "ARGS=(\n"
        "    --tensor-model-parallel-size $TP   # tensor parallel\n"
        "    --pipeline-model-parallel-size \"$PP\"\n"
        "    --micro-batch-size $MBS --global-batch-size \"$GBS\"\n"
        ")\n"
        "ARGS+=(--bf16 --seq-length=4096)\n"
        "cat > cfg.json <<'EOF'\n"
        "{\"x\": \"it's --num-layers 99 \\\"\n"
        "EOF\n"
        "python tools/preprocess_data.py --input x --output-prefix y --workers 8\n"
        "torchrun --nproc_per_node \"$GPUS_PER_NODE\" --nnodes=$NODES --node_rank ${NODE_RANK:-0} \\\n"
        "    pretrain_gpt.py $SHAPE \"${ARGS[@]}\" \\\n"
        "    --vocab-size 32000 --data-path 0.5 a 0.5 b --save \"$CKPT\" --lr 1e-4 \\\n"
        "    --no-gradient-accumulation-fusion --disable-bias-linear --num-layers 24 \"$@\" 2>&1 | tee log\n";
    pp_status st = script(&a, s, &e);
    tap_ok(st == PP_OK && a.source == PP_MARGS_SCRIPT, "a hand-written script reads (%s)", e.msg);
    tap_ok(val_is(&a, "hidden_size", "4096") && val_is(&a, "num_attention_heads", "32"),
           "an unquoted $VAR splits into words; a line continuation inside quotes joins");
    tap_ok(val_is(&a, "num_layers", "24"), "the last --num-layers wins, as in argparse");
    tap_ok(val_is(&a, "tensor_model_parallel_size", "2") && val_is(&a, "pipeline_model_parallel_size", "4"),
           "array elements, comments inside the array, quoted expansions");
    tap_ok(val_is(&a, "global_batch_size", "512"), "$(( MBS * 8 * (NODES + 62) )) = 512");
    tap_ok(val_is(&a, "bf16", "True") && val_is(&a, "seq_length", "4096"), "ARGS+=( ... ), a switch, --flag=value");
    tap_ok(val_is(&a, "data_path", "0.5 a 0.5 b"), "a flag's several values (nargs='+')");
    tap_ok(val_is(&a, "gradient_accumulation_fusion", "False") && val_is(&a, "add_bias_linear", "False"),
           "--no-X sets X False; --disable-bias-linear is add_bias_linear False");
    tap_ok(val_is(&a, "world_size", "16") && val_is(&a, "gpus_per_node", "8"),
           "torchrun --nproc_per_node ${GPUS_PER_NODE:-8} x --nnodes=$NODES = 16 GPUs");
    tap_ok(!pp_margs_get(&a, "input") && !pp_margs_get(&a, "workers"), "the preprocessing command is not Megatron's");
    const pp_margs_kv *k = kv(&a, "save");
    tap_ok(k && k->unresolved, "\"$CKPT\" (not set in the script) is marked unresolved");
    k = kv(&a, "tensor_model_parallel_size");
    tap_ok(k && k->line == 12 && k->col == 5, "an array element keeps its line and column (12:5, got %d:%d)",
           k ? k->line : 0, k ? k->col : 0);
    pp_margs_free(&a);

    /* a bare flag list, one per line, and the launch scripts parplan wrote for real runs */
    st = script(&a, "--num-layers 2\n--hidden-size 64 --num-attention-heads 4\n# x\n--seq-length 16 --micro-batch-size 1\n", &e);
    tap_ok(st == PP_OK && val_is(&a, "num_layers", "2") && val_is(&a, "micro_batch_size", "1"), "a bare flag list");
    pp_margs_free(&a);
    /* the command as text in a variable, run by bash -c inside an sbatch here-document (Megatron-LM's
     * examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh), and the same text after srun bash -c */
    static const char *const as_text =
        "ARGS=(\n  --num-layers 4\n  --hidden-size 256 --num-attention-heads 8\n)\n"
        "ARGS=(\"${ARGS[@]}\" --micro-batch-size 2)\n"
        "TRAINING_CMD=\"\ncd ${MEGATRON_PATH};\nexport PYTHONPATH=${MEGATRON_PATH};\n"
        "python ${MEGATRON_PATH}/pretrain_gpt.py ${ARGS[@]}\"\n"
        "sbatch <<EOF\n#!/bin/bash\nsrun bash -x -c \"${TRAINING_CMD}\"\nEOF\n";
    st = script(&a, as_text, &e);
    k = kv(&a, "micro_batch_size");
    tap_ok(st == PP_OK && a.source == PP_MARGS_SCRIPT && val_is(&a, "num_layers", "4") && val_is(&a, "hidden_size", "256") &&
               val_is(&a, "micro_batch_size", "2") && !strcmp(a.program, "pretrain_gpt.py") && k && k->line == 6,
           "a command held as text in a variable (X=\"... pretrain_gpt.py ${ARGS[@]}\"): read, at the assignment's line (%s)",
           e.msg);
    pp_margs_free(&a);
    st = script(&a, "CMD='python pretrain_gpt.py --num-layers 6 --hidden-size 64'\nsrun bash -c \"$CMD --seq-length 32\"\n", &e);
    tap_ok(st == PP_OK && val_is(&a, "num_layers", "6") && val_is(&a, "seq_length", "32"),
           "srun bash -c \"$CMD --seq-length 32\": the -c word read as a command (%s)", e.msg);
    pp_margs_free(&a);
    st = script(&a, "CMD=\"python pretrain_gpt.py --num-layers 6 --hidden-size 64\"\n$CMD --seq-length 48\n", &e);
    tap_ok(st == PP_OK && val_is(&a, "num_layers", "6") && val_is(&a, "seq_length", "48"),
           "CMD=\"python pretrain_gpt.py ...\" then $CMD --seq-length 48: the command that runs wins (%s)", e.msg);
    pp_margs_free(&a);
    st = script(&a, "MSG=\"run x.py --help 'oops\"\necho \"$MSG\"\n", &e);
    tap_ok(st == PP_OK && a.source == PP_MARGS_NONE, "text in a variable that does not read as shell is no command (%s)", e.msg);
    pp_margs_free(&a);
    st = script(&a, "echo hello\nls -la\n", &e);
    tap_ok(st == PP_OK && a.source == PP_MARGS_NONE && a.n == 0, "a script without Megatron flags reads nothing");
    pp_margs_free(&a);
    st = script(&a, "X='unterminated\n--num-layers 2\n", &e);
    tap_ok(st == PP_ERR_INPUT && e.line == 1 && e.col == 3 && strstr(e.msg, "unterminated"),
           "an unterminated quote: 1:3 (%d:%d %s)", e.line, e.col, e.msg);
    pp_margs_free(&a);
    st = script(&a, "A=(\n --num-layers 2\n", &e);
    tap_ok(st == PP_ERR_INPUT && e.line == 1 && strstr(e.msg, "never closed"), "an array never closed: %s", e.msg);
    pp_margs_free(&a);

    char path[1200];
    pp_margs b;
    snprintf(path, sizeof path, "%s/tests/data/launch/scripts/r4-tinyllama-pp2-uneven-rc.sh",
             getenv("PARPLAN_SOURCE_DIR") ? getenv("PARPLAN_SOURCE_DIR") : ".");
    st = pp_margs_load(&b, path, &e);
    tap_ok(st == PP_OK && val_is(&b, "pipeline_model_parallel_layout", "Et*12|t*10L") && val_is(&b, "world_size", "2") &&
               val_is(&b, "lr", "3.0e-4"),
           "the r4 launch script: the layout string, world 2, \"${LR:-3.0e-4}\" (%s)", e.msg);
    pp_margs_config c;
    if (st == PP_OK) {
        st = pp_margs_read(&b, &c, &e);
        tap_ok(st == PP_OK && c.uneven && c.stage_layers[0] == 12 && c.stage_layers[1] == 10 && c.layout.recompute == PP_RC_FULL &&
                   c.stage_recompute[0] == 2 && c.stage_recompute[1] == 2 && c.stack.impl == PP_IMPL_LOCAL &&
                   c.attention == PP_ATTN_UNFUSED && c.stack.attention_dropout == 0.1 && !c.unmodelled[0],
               "r4: stages 12/10, block recompute 2, local, dropout 0.1 (Megatron's default: the script says none), "
               "nothing unmodelled ('%s')", c.unmodelled);
        pp_margs_free(&b);
    }
}

/* ------------------------------------------------------------------ dumps of real logs */

static bool load_log(const char *name, pp_margs *a, pp_margs_config *c)
{
    char path[1200];
    pp_error e = {0};
    snprintf(path, sizeof path, "%s/%s.log", logdir, name);
    if (pp_margs_load(a, path, &e) != PP_OK) {
        tap_ok(0, "%s loads (%s)", name, e.msg);
        return false;
    }
    if (pp_margs_read(a, c, &e) != PP_OK) {
        tap_ok(0, "%s reads (%s:%d: %s)", name, e.file, e.line, e.msg);
        pp_margs_free(a);
        return false;
    }
    return true;
}

static void test_dumps(void)
{
    pp_margs a;
    static pp_margs_config c;
    if (load_log("m8_b4", &a, &c)) {
        const pp_model *m = &c.model;
        tap_ok(a.source == PP_MARGS_DUMP && a.line == 31 && a.n > 800, "m8_b4: the dump at line 31, %d arguments", a.n);
        tap_ok(m->layers == 12 && m->hidden == 2048 && m->heads == 16 && m->kv_heads == 4 && m->ffn == 5632 &&
                   m->experts == 8 && m->topk == 2 && m->moe_ffn == 5632 && m->vocab == 32000 && m->seq == 4096 &&
                   !m->bias && !m->tied && m->act == PP_ACT_SWIGLU && m->norm == PP_NORM_RMSNORM && m->pos == PP_POS_ROPE,
               "m8_b4: 12 layers, GQA 4, 8 experts top-2 of 5632, untied, no bias");
        tap_ok(c.layout.mbs == 4 && c.gbs == 8 && c.world_size == 1 && c.dp == 1 && c.stack.dispatcher == PP_DISPATCH_ALLTOALL &&
                   c.stack.impl == PP_IMPL_LOCAL && c.stack.attention_dropout == 0 && c.stack.hidden_dropout == 0 &&
                   c.stack.precision == PP_PREC_BF16 && c.grad_reduce_fp32 && !c.grad_accum_fusion,
               "m8_b4: mbs 4, gbs 8, one GPU, alltoall, local, no dropout, bf16 with fp32 reduction, no fused wgrad");
        tap_ok(!c.unmodelled[0], "m8_b4: none of the 846 printed arguments is reported ('%s')", c.unmodelled);
        pp_margs_free(&a);
    }
    if (load_log("fg_b1", &a, &c)) {
        const pp_model *m = &c.model;
        tap_ok(m->experts == 64 && m->topk == 6 && m->moe_ffn == 1408 && m->shared_ffn == 2816 && m->moe_first_dense == 1 &&
                   m->moe_every == 1 && m->n_dense_layers == 0 && m->vocab == 102400 && m->ffn == 10944,
               "fg_b1: 64 experts top-6 of 1408, shared 2816, moe_layer_freq [0, 1, ...] = first layer dense");
        tap_ok(pp_model_layer_is_moe(m, 1) && !pp_model_layer_is_moe(m, 0), "fg_b1: layer 0 dense, layer 1 MoE");
        pp_margs_free(&a);
    }
    if (load_log("q_b1", &a, &c)) {
        const pp_model *m = &c.model;
        tap_ok(m->heads == 32 && m->head_dim == 128 && m->hidden == 2048 && m->qk_norm == PP_QKNORM_HEAD && m->experts == 128 &&
                   m->topk == 8 && m->moe_ffn == 768 && m->vocab == 151936,
               "q_b1: head_dim 128 apart from hidden/heads (--kv-channels), QK-norm, 128 experts top-8");
        pp_margs_free(&a);
    }
    if (load_log("d_s2k_b1", &a, &c)) {
        tap_ok(c.stack.attention_dropout == 0.1 && c.stack.hidden_dropout == 0.1 && c.stack.dropout_given &&
                   c.model.experts == 0 && c.model.kv_heads == 8,
               "d_s2k_b1: a dense GQA model with dropout 0.1/0.1");
        pp_margs_free(&a);
    }
}

/* ------------------------------------------------------------------ reading: model, layout, stack */

static pp_status read_text(const char *text, pp_margs *a, pp_margs_config *c, pp_error *e)
{
    pp_status st = script(a, text, e);
    if (st == PP_OK) st = pp_margs_read(a, c, e);
    pp_margs_free(a);
    return st;
}

#define BASE "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 --micro-batch-size 1 --vocab-size 1000 "

static void test_read(void)
{
    pp_margs a;
    pp_error e;
    static pp_margs_config c;
    pp_status st = read_text("torchrun --nproc-per-node 8 --nnodes 2 pretrain_gpt.py " BASE "--bf16", &a, &c, &e);
    tap_ok(st == PP_OK && c.layout.tp == 1 && c.model.ffn == 2048 && c.stack.attention_dropout == 0.1 &&
               c.stack.impl == PP_IMPL_TE && c.attention == PP_ATTN_FLASH && c.world_size == 16 &&
               c.stack.dispatcher == PP_DISPATCH_ALLGATHER && c.stack.no_overlap,
           "Megatron's defaults: ffn 4h, dropout 0.1, TE flash, allgather, no overlap (dp 16 without "
           "--overlap-grad-reduce) (%s)", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --swiglu --tensor-model-parallel-size 2 --sequence-parallel "
                   "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather", &a, &c, &e);
    tap_ok(st == PP_OK && c.model.ffn == 1344 && c.layout.sp && c.layout.dist_opt && !c.stack.no_overlap &&
               !c.overlap_note[0],
           "SwiGLU's default ffn (2/3 of 4h, down to 64: 1344); both overlaps given: overlap on");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --use-distributed-optimizer --overlap-grad-reduce", &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.no_overlap && strstr(c.overlap_note, "parameter gather (off)"),
           "grad reduce overlapped, param gather not: no overlap, said (%s)", c.overlap_note);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --sequence-parallel --pipeline-model-parallel-size 2 "
                   "--num-layers-per-virtual-pipeline-stage 2 --recompute-granularity full --recompute-method block "
                   "--recompute-num-layers 1 --fp8-format hybrid --tp-comm-overlap", &a, &c, &e);
    tap_ok(st == PP_OK && !c.layout.sp && c.layout.vpp == 2 && c.layout.recompute == PP_RC_FULL &&
               c.layout.recompute_layers == 2 && c.stack.precision == PP_PREC_FP8 && c.stack.tp_comm_overlap,
           "--sequence-parallel off at tp 1 (validate_args); 2 layers per virtual stage = vpp 2; block 1 per chunk = "
           "2 per stage; fp8; tp-comm-overlap");
    st = read_text("python pretrain_gpt.py " BASE "--fp16 --transformer-impl local --moe-grouped-gemm --num-experts 4 "
                   "--moe-layer-freq 2 --multi-latent-attention --kv-lora-rank 64 --q-lora-rank 96 --qk-head-dim 32 "
                   "--qk-pos-emb-head-dim 16 --v-head-dim 32 --mtp-num-layers 1", &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.precision == PP_PREC_FP16 && !c.stack.grouped_gemm && strstr(c.unmodelled, "grouped") &&
               c.model.moe_every == 2 && c.model.kv_lora_rank == 64 && c.model.q_lora_rank == 96 &&
               c.model.qk_nope_dim == 32 && c.model.qk_rope_dim == 16 && c.model.head_dim == 48 && c.model.mtp_layers == 1 &&
               c.attention == PP_ATTN_UNFUSED,
           "fp16; local runs experts one by one (grouped GEMM off, said); every 2nd layer MoE; MLA; MTP (%s)", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --window-size 256,0 --window-attn-skip-freq 4", &a, &c, &e);
    tap_ok(st == PP_OK && c.model.window == 256 && c.model.window_full_every == 4 && c.model.window_full_phase == 3,
           "--window-size 256,0 --window-attn-skip-freq 4: full on 1-based layers 4, 8 (0-based phase 3)");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --window-size '(256, 0)' --window-attn-skip-freq '[0,1,1,1]*2'",
                   &a, &c, &e);
    tap_ok(st == PP_OK && c.model.window_full_every == 4 && c.model.window_full_phase == 0, "a window list: full on 0, 4");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --num-experts 4 --moe-layer-freq '[1,0,1,1,1,1,0,1]'", &a, &c, &e);
    tap_ok(st == PP_OK && c.model.moe_every == 1 && c.model.n_dense_layers == 2 && c.model.dense_layers[0] == 1 &&
               c.model.dense_layers[1] == 6,
           "an irregular MoE pattern: every layer but 1 and 6 (the model's exception list)");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --lr 3e-4 --data-path x --save y --log-interval 1 --seed 7 "
                   "--tokenizer-type NullTokenizer --eval-iters 0 --wandb-project p --first-last-layers-bf16 "
                   "--moe-layer-recompute --fine-grained-activation-offloading --frobnicate 3 --optimizer sgd", &a, &c, &e);
    tap_ok(st == PP_OK && strstr(c.unmodelled, "--first-last-layers-bf16") && strstr(c.unmodelled, "--moe-layer-recompute") &&
               strstr(c.unmodelled, "--fine-grained-activation-offloading") && strstr(c.unmodelled, "--frobnicate 3") &&
               strstr(c.unmodelled, "--optimizer sgd") && !strstr(c.unmodelled, "--lr") && !strstr(c.unmodelled, "data") &&
               !strstr(c.unmodelled, "seed") && !strstr(c.unmodelled, "wandb"),
           "unmodelled and unknown flags named, logging/data/schedule skipped: %s", c.unmodelled);
    /* activation offloading is read (arguments.py validate_args: cpu_offloading for N > 0) */
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --cpu-offloading-num-layers 2", &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.cpu_offload_layers == 2 && !strstr(c.unmodelled, "offloading"),
           "--cpu-offloading-num-layers 2: two layers' activations offloaded, read (%s)", c.unmodelled);
    /* FP8 parameters and the precision-aware optimizer are read (arguments.py 2016, 3667-3680) */
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --fp8-format hybrid --fp8-param-gather --use-distributed-optimizer "
                   "--use-precision-aware-optimizer --main-grads-dtype bf16 --exp-avg-dtype bf16 --exp-avg-sq-dtype fp8",
                   &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.fp8_param_gather && c.stack.precision == PP_PREC_FP8 &&
               c.stack.main_params_dtype == PP_OPT_FP32 && c.stack.exp_avg_dtype == PP_OPT_BF16 &&
               c.stack.exp_avg_sq_dtype == PP_OPT_FP8 && c.stack.grad_bf16 && !strstr(c.unmodelled, "fp8-param") &&
               !strstr(c.unmodelled, "dtype"),
           "FP8 parameters and the precision-aware optimizer's dtypes read (main grads bf16: a bf16 gradient buffer): %s",
           c.unmodelled);
    /* --use-precision-aware-optimizer alone: the flag with fp32 dtypes (16-bit remainders); under
     * --optimizer-cpu-offload it is Megatron's requirement (arguments.py), the state the host's */
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --use-distributed-optimizer --use-precision-aware-optimizer",
                   &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.precision_aware_opt && c.stack.main_params_dtype == PP_OPT_FP32 &&
               !strstr(c.unmodelled, "precision-aware"),
           "--use-precision-aware-optimizer read with its default dtypes: %s", c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --use-distributed-optimizer --use-precision-aware-optimizer "
                   "--optimizer-cpu-offload --optimizer-offload-fraction 1.0", &a, &c, &e);
    tap_ok(st == PP_OK && !c.stack.precision_aware_opt, "--use-precision-aware-optimizer beside --optimizer-cpu-offload: "
           "the offload's requirement, not a GPU state");
    /* the FP8/FP4 recipes (transformer_config.py fp8_recipe, fp4, fp4_recipe) */
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --fp8-format e4m3 --fp8-recipe mxfp8", &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.precision == PP_PREC_MXFP8 && !strstr(c.unmodelled, "recipe"),
           "--fp8-recipe mxfp8 read as --precision mxfp8: %s", c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --fp8-format hybrid --fp8-recipe tensorwise", &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.precision == PP_PREC_FP8, "--fp8-recipe tensorwise read as fp8");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --fp4-format e2m1 --fp4-recipe nvfp4", &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.precision == PP_PREC_NVFP4 && !strstr(c.unmodelled, "fp4"),
           "--fp4-format e2m1 --fp4-recipe nvfp4 read as --precision nvfp4: %s", c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --fp4-format e2m1 --fp4-recipe nvfp4 --fp4-param-gather "
                   "--use-distributed-optimizer", &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.precision == PP_PREC_NVFP4 && c.stack.fp8_param_gather && !strstr(c.unmodelled, "fp4"),
           "--fp4-param-gather read as NVFP4 parameters: %s", c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --fp8-format e4m3 --fp8-recipe custom", &a, &c, &e);
    tap_ok(st != PP_OK && strstr(e.msg, "custom") && strstr(e.msg, "not modelled"), "--fp8-recipe custom refused: %s",
           e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --fp8-format e4m3 --fp4-format e2m1", &a, &c, &e);
    tap_ok(st != PP_OK && strstr(e.msg, "exclude"), "--fp4-format with --fp8-format refused: %s", e.msg);
    /* without --use-precision-aware-optimizer the dtypes are not used (Megatron reads them only then) */
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --exp-avg-dtype bf16 --main-grads-dtype bf16", &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.exp_avg_dtype == PP_OPT_FP32 && !c.stack.grad_bf16,
           "the optimizer dtypes without --use-precision-aware-optimizer: fp32 state and gradients");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --use-precision-aware-optimizer --exp-avg-dtype fp64", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "fp64"), "an unknown optimizer dtype is an error: %s", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --no-gradient-accumulation-fusion --no-bias-dropout-fusion", &a, &c,
                   &e);
    tap_ok(st == PP_OK && strstr(c.unmodelled, "gradient-accumulation-fusion") && strstr(c.unmodelled, "bias-dropout"),
           "TE with fusions off: named (%s)", c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --transformer-impl local --no-gradient-accumulation-fusion", &a, &c,
                   &e);
    tap_ok(st == PP_OK && !c.unmodelled[0], "the local implementation without fusions: nothing to say");
    /* The script's environment (megatron_args.c's env rows): TE's attention backends both off read as
     * unfused attention, the allocator's expandable segments read, SM margins, NCCL transport and
     * the script's own variables passed over, NVLink SHARP on and an NVTE_ variable parplan does not
     * know named as NAME=value */
    st = read_text("export CUDA_DEVICE_MAX_CONNECTIONS=1 NVTE_FWD_LAYERNORM_SM_MARGIN=16 NCCL_IB_TIMEOUT=19\n"
                   "export NVTE_FLASH_ATTN=0\nNVTE_FUSED_ATTN=0\nMODEL=x\nexport NCCL_NVLS_ENABLE=1 NVTE_FROBNICATE=2\n"
                   "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"
                   "python pretrain_gpt.py " BASE "--bf16", &a, &c, &e);
    tap_ok(st == PP_OK && c.attention == PP_ATTN_UNFUSED && c.stack.expandable_segments &&
               strstr(c.unmodelled, "NCCL_NVLS_ENABLE=1") && strstr(c.unmodelled, "NVTE_FROBNICATE=2") &&
               !strstr(c.unmodelled, "MARGIN") && !strstr(c.unmodelled, "IB_TIMEOUT") && !strstr(c.unmodelled, "MODEL") &&
               !strstr(c.unmodelled, "CONNECTIONS"),
           "the script's environment: TE's backends off = unfused, expandable segments, NVLS and an unknown NVTE_ "
           "named (%s)", c.unmodelled);
    st = read_text("export NVTE_FLASH_ATTN=0 NCCL_NVLS_ENABLE=0\npython pretrain_gpt.py " BASE "--bf16", &a, &c, &e);
    tap_ok(st == PP_OK && c.attention == PP_ATTN_FLASH && c.stack.te_attention == PP_TEATTN_CUDNN && !c.unmodelled[0],
           "flash off alone leaves TE's fused attention; NVLS off changes nothing (%s)", c.unmodelled);
    /* TE's flash-attn path: NVTE_FUSED_ATTN=0 alone (NeMo-Framework-Launcher 24.01-24.07), or
     * --attention-backend flash (which sets it); --attention-backend fused keeps cuDNN */
    st = read_text("export NVTE_FUSED_ATTN=0\npython pretrain_gpt.py " BASE "--bf16", &a, &c, &e);
    tap_ok(st == PP_OK && c.attention == PP_ATTN_FLASH && c.stack.te_attention == PP_TEATTN_FLASH2,
           "NVTE_FUSED_ATTN=0 alone: TE's FlashAttention-2 (--te-attention flash2)");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --attention-backend flash", &a, &c, &e);
    tap_ok(st == PP_OK && c.attention == PP_ATTN_FLASH && c.stack.te_attention == PP_TEATTN_FLASH2,
           "--attention-backend flash: TE's FlashAttention-2");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --attention-backend fused", &a, &c, &e);
    tap_ok(st == PP_OK && c.attention == PP_ATTN_FLASH && c.stack.te_attention == PP_TEATTN_CUDNN,
           "--attention-backend fused: TE's cuDNN attention");
    st = read_text("python pretrain_gpt.py --num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
                   "--micro-batch-size 1 --bf16 --tokenizer-type HuggingFaceTokenizer", &a, &c, &e);
    tap_ok(st == PP_OK && c.need_vocab, "a real tokenizer: the vocabulary is the caller's to give");
}

/* What defines the model beyond its shapes (pp.h): context, norm epsilon, RoPE, router. */
static void test_definition(void)
{
    pp_margs a;
    pp_error e;
    static pp_margs_config c;
    const pp_model *m = &c.model;
    pp_status st = read_text("python pretrain_gpt.py " BASE "--bf16", &a, &c, &e);
    tap_ok(st == PP_OK && m->max_context == 1024 && m->norm_eps == 1e-5 && m->rope_theta == 0, "no flags: the context is "
           "--seq-length, --norm-epsilon 1e-5 (Megatron's default), learned positions have no RoPE base (%s)", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --max-position-embeddings 8192 --norm-epsilon 1e-6 "
                   "--position-embedding-type rope --rotary-base 500000 --use-rope-scaling --rope-scaling-factor 8", &a, &c, &e);
    tap_ok(st == PP_OK && m->seq == 1024 && m->max_context == 8192 && m->norm_eps == 1e-6 && m->rope_theta == 500000 &&
               m->rope_scaling == PP_ROPE_SCALING_LLAMA3 && m->rope_factor == 8 && m->rope_original_context == 8192 &&
               m->rope_low_freq == 1 && m->rope_high_freq == 4 && !c.unmodelled[0],
           "context 8192 apart from the training 1024; eps; base; llama3 scaling x8 (Megatron's fixed bands 1-4 of 8192)");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --position-embedding-type yarn --rotary-scaling-factor 32 "
                   "--yarn-original-max-position-embeddings 4096 --yarn-beta-fast 16 --no-yarn-correction-range-round-to-int "
                   "--mscale 0.9", &a, &c, &e);
    tap_ok(st == PP_OK && m->pos == PP_POS_ROPE && m->rope_scaling == PP_ROPE_SCALING_YARN && m->rope_factor == 32 &&
               m->rope_original_context == 4096 && m->yarn_beta_fast == 16 && m->yarn_beta_slow == 1 && m->yarn_mscale == 0.9 &&
               m->yarn_mscale_all_dim == 0 && m->yarn_no_truncate && m->rope_theta == 10000,
           "--position-embedding-type yarn: factor, original length, betas, mscale, not truncated; base 10000 (%s)", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --position-embedding-type rope --rotary-seq-len-interpolation-factor 4",
                   &a, &c, &e);
    tap_ok(st == PP_OK && m->rope_scaling == PP_ROPE_SCALING_LINEAR && m->rope_factor == 4, "linear interpolation x4");
#define MLA "--position-embedding-type rope --multi-latent-attention --kv-lora-rank 64 --qk-head-dim 32 --qk-pos-emb-head-dim 16 "
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MLA, &a, &c, &e);
    tap_ok(st == PP_OK && m->rope_scaling == PP_ROPE_SCALING_NONE, "MLA without --rope-type: yarn of factor 1, no scaling");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MLA "--rotary-scaling-factor 40 --mscale 0.707 --mscale-all-dim 0.707",
                   &a, &c, &e);
    tap_ok(st == PP_OK && m->rope_scaling == PP_ROPE_SCALING_YARN && m->rope_factor == 40 && m->rope_original_context == 4096 &&
               m->yarn_beta_fast == 32 && m->yarn_beta_slow == 1 && m->yarn_mscale == 0.707 && m->yarn_mscale_all_dim == 0.707,
           "MLA's YaRN x40: 4096 positions, betas 32 and 1 (MLATransformerConfig), the mscales");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MLA "--rope-type rope --rotary-scaling-factor 40", &a, &c, &e);
    tap_ok(st == PP_OK && m->rope_scaling == PP_ROPE_SCALING_NONE, "MLA with --rope-type rope: no scaling");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --position-embedding-type rope \\\n  --rope-type yarn", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "--multi-latent-attention") && e.line == 2,
           "--rope-type yarn without latent attention refused (arguments.py) at 2: %s", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --position-embedding-type rope --rotary-percent 0.25 --rotary-interleaved",
                   &a, &c, &e);
    tap_ok(st == PP_OK && strstr(c.unmodelled, "--rotary-percent 0.25") && strstr(c.unmodelled, "--rotary-interleaved"),
           "partial and interleaved rotary: named as not modelled (%s)", c.unmodelled);
    /* the router */
#define MOE "--num-experts 16 --moe-router-topk 4 "
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --disable-bias-linear " MOE, &a, &c, &e);
    tap_ok(st == PP_OK && m->router_score == PP_ROUTER_SOFTMAX && !m->router_raw_topk && m->router_scale == 1 &&
               m->router_balance == PP_BALANCE_AUX_LOSS && m->router_aux_coef == 0 && m->router_groups == 0 &&
               !m->router_expert_bias && !m->router_bias && m->router_z_coef == 0,
           "Megatron's router: softmax after the top-k (renormalised), aux_loss with coefficient 0");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --disable-bias-linear " MOE "--moe-router-score-function sigmoid "
                   "--moe-router-topk-scaling-factor 2.5 --moe-router-num-groups 4 --moe-router-group-topk 2 "
                   "--moe-router-enable-expert-bias --moe-router-load-balancing-type seq_aux_loss --moe-aux-loss-coeff 0.0001 "
                   "--moe-z-loss-coeff 0.001", &a, &c, &e);
    tap_ok(st == PP_OK && m->router_score == PP_ROUTER_SIGMOID && !m->router_raw_topk && m->router_scale == 2.5 &&
               m->router_groups == 4 && m->router_group_topk == 2 && m->router_expert_bias && m->router_bias &&
               m->router_balance == PP_BALANCE_SEQ_AUX_LOSS && m->router_aux_coef == 0.0001 && m->router_z_coef == 0.001 &&
               !c.unmodelled[0],
           "DeepSeek-V3's router: sigmoid x2.5, 2 of 4 groups, the expert bias (counted as the router's), seq_aux_loss, "
           "z-loss (%s %s)", e.msg, c.unmodelled);
    /* the flex dispatcher's library */
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MOE "--moe-token-dispatcher-type flex "
                   "--moe-flex-dispatcher-backend hybridep", &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.dispatcher == PP_DISPATCH_FLEX && c.stack.flex_backend == PP_FLEX_HYBRIDEP &&
               !c.unmodelled[0], "--moe-flex-dispatcher-backend hybridep: read (%s %s)", e.msg, c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MOE "--moe-token-dispatcher-type flex --moe-enable-deepep",
                   &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.flex_backend == PP_FLEX_DEEPEP && !c.unmodelled[0],
           "--moe-enable-deepep (deprecated): the deepep backend, nothing unmodelled (%s)", c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MOE "--moe-token-dispatcher-type flex "
                   "--moe-flex-dispatcher-backend ncclep", &a, &c, &e);
    tap_ok(st == PP_OK && strstr(c.unmodelled, "ncclep"), "ncclep: named as not modelled (%s)", c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MOE "--moe-token-dispatcher-type flex "
                   "--moe-flex-dispatcher-backend uccl", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "uccl") && strstr(e.msg, "deepep, hybridep or ncclep"),
           "an unknown flex backend is an error naming the value and the choices: %s", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MOE "--moe-token-dispatcher-type flex --moe-enable-deepep "
                   "--moe-flex-dispatcher-backend hybridep", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "--moe-enable-deepep"),
           "hybridep beside --moe-enable-deepep is an error, as Megatron's: %s", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MOE "--moe-flex-dispatcher-backend hybridep", &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.dispatcher != PP_DISPATCH_FLEX && c.stack.flex_backend == PP_FLEX_DEEPEP,
           "a backend beside another dispatcher: no flex, no backend (%s)", e.msg);
    /* the vocabulary's padding base: read (DeepSeek-V3's example sets 3232), absent is the framework's */
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --make-vocab-size-divisible-by 3232", &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.vocab_divisible_by == 3232 && !c.unmodelled[0],
           "--make-vocab-size-divisible-by 3232: read into the stack, nothing unmodelled (%s %s)", e.msg, c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16", &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.vocab_divisible_by == 0, "no --make-vocab-size-divisible-by: the framework's 128");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --make-vocab-size-divisible-by 0", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "--make-vocab-size-divisible-by"),
           "--make-vocab-size-divisible-by 0 is an error naming the flag: %s", e.msg);
    /* Megatron-FSDP: the default strategy, its double buffer (and what turns it on), the unit, the
     * main gradients' dtype; the rest of its memory options named */
#define MFSDP "--use-megatron-fsdp --use-distributed-optimizer --ckpt-format fsdp_dtensor "
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MFSDP, &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.megatron_fsdp && c.layout.zero == 3 && !c.stack.fsdp_double_buffer &&
               c.stack.fsdp_unit_size == 0 && !c.stack.fsdp_grads_fp32 && !c.unmodelled[0],
           "--use-megatron-fsdp alone: Megatron's default optim_grads_params (--zero 3), bf16 main gradients (%s %s)",
           e.msg, c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MFSDP "--fsdp-double-buffer "
                   "--suggested-communication-unit-size 800000000 --megatron-fsdp-main-grads-dtype fp32", &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.fsdp_double_buffer && c.stack.fsdp_unit_size == 800000000 && c.stack.fsdp_grads_fp32 &&
               !c.unmodelled[0], "--fsdp-double-buffer, --suggested-communication-unit-size, --megatron-fsdp-main-grads-dtype "
           "fp32: read (%s %s)", e.msg, c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MFSDP "--use-nccl-ub", &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.fsdp_double_buffer && !c.unmodelled[0],
           "--use-nccl-ub under Megatron-FSDP: its double buffer, as validate_args sets it (%s)", c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MFSDP "--megatron-fsdp-max-pool-double-buffer", &a, &c, &e);
    tap_ok(st == PP_OK && c.stack.fsdp_double_buffer, "--megatron-fsdp-max-pool-double-buffer: a double buffer");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --use-distributed-optimizer --use-nccl-ub --fsdp-double-buffer",
                   &a, &c, &e);
    tap_ok(st == PP_OK && !c.stack.megatron_fsdp && !c.stack.fsdp_double_buffer,
           "--use-nccl-ub and --fsdp-double-buffer without Megatron-FSDP: nothing (%s)", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MFSDP "--megatron-fsdp-main-params-dtype bf16 "
                   "--keep-fp8-transpose-cache", &a, &c, &e);
    tap_ok(st == PP_OK && strstr(c.unmodelled, "--megatron-fsdp-main-params-dtype bf16") &&
               strstr(c.unmodelled, "--keep-fp8-transpose-cache"),
           "Megatron-FSDP's main-weight dtype and fp8 transpose cache: named as not modelled (%s)", c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MFSDP "--megatron-fsdp-grad-comm-dtype bf16 "
                   "--megatron-fsdp-main-grads-dtype bf16", &a, &c, &e);
    tap_ok(st == PP_OK && !c.unmodelled[0], "the gradient communication dtype of the main gradients' (Megatron's "
           "DeepSeek-V3 FSDP example): no buffer of its own, nothing unmodelled (%s)", c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MFSDP "--megatron-fsdp-grad-comm-dtype bf16 "
                   "--megatron-fsdp-main-grads-dtype fp32", &a, &c, &e);
    tap_ok(st == PP_OK && strstr(c.unmodelled, "--megatron-fsdp-grad-comm-dtype bf16"),
           "a gradient communication dtype other than the main gradients': named (%s)", c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MFSDP "--megatron-fsdp-main-grads-dtype fp64", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "--megatron-fsdp-main-grads-dtype") && strstr(e.msg, "fp64"),
           "an unknown main-gradient dtype is an error naming the flag and the value: %s", e.msg);
#undef MFSDP
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MOE "--moe-router-pre-softmax", &a, &c, &e);
    tap_ok(st == PP_OK && m->router_raw_topk && m->router_bias, "--moe-router-pre-softmax: the weights as scored; "
           "Megatron's linear biases give the router one");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MOE "--moe-router-load-balancing-type \"['global_aux_loss']\" "
                   "--moe-aux-loss-coeff '[0.001]'", &a, &c, &e);
    tap_ok(st == PP_OK && m->router_balance == PP_BALANCE_GLOBAL_AUX_LOSS && m->router_aux_coef == 0.001,
           "a dump's printed lists ['global_aux_loss'] and [0.001]");
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MOE "--moe-router-load-balancing-type aux_loss seq_aux_loss "
                   "--moe-aux-loss-coeff 0.01 0.001 --moe-router-score-function sqrtsoftplus", &a, &c, &e);
    tap_ok(st == PP_OK && m->router_balance == PP_BALANCE_AUX_LOSS && m->router_aux_coef == 0.01 &&
               m->router_score == PP_ROUTER_SIGMOID && strstr(c.unmodelled, "several losses") &&
               strstr(c.unmodelled, "sqrtsoftplus"),
           "two losses (the first modelled), sqrtsoftplus (as sigmoid): both named (%s)", c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 " MOE "\\\n --moe-aux-loss-coeff x", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && e.line == 2 && strstr(e.msg, "coefficient"), "--moe-aux-loss-coeff x refused at 2: %s", e.msg);
#undef MOE
#undef MLA
}

/* ------------------------------------------------------------------ bad input */

static void test_errors(void)
{
    pp_margs a;
    pp_error e;
    static pp_margs_config c;
    pp_status st = read_text("python pretrain_gpt.py " BASE "--fp16\n", &a, &c, &e);
    tap_ok(st == PP_OK, "--fp16 alone reads");
    st = read_text("python pretrain_gpt.py " BASE "\\\n  --fp16 --bf16\n", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && e.line == 2 && e.col == 10 && strstr(e.msg, "--fp16 and --bf16"),
           "--fp16 --bf16: at the second, 2:10 (%d:%d %s)", e.line, e.col, e.msg);
    st = read_text("A=(\n --normalization Foo\n)\npython pretrain_gpt.py " BASE "--bf16 \"${A[@]}\"\n", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && e.line == 2 && e.col == 2 && strstr(e.msg, "--normalization") && strstr(e.msg, "Foo"),
           "--normalization Foo inside an array: its own line 2:2 (%d:%d %s)", e.line, e.col, e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --tensor-model-parallel-size 2x", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "--tensor-model-parallel-size") && strstr(e.msg, "'2x'") && e.col > 1,
           "a malformed number: %s", e.msg);
    st = read_text("python pretrain_gpt.py --num-layers $NL --hidden-size 512 --num-attention-heads 8 --seq-length 8 "
                   "--micro-batch-size 1 --bf16 --vocab-size 10", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "$NL") && strstr(e.msg, "does not define"), "an undefined variable used: %s",
           e.msg);
    st = read_text("python pretrain_gpt.py --hidden-size 512 --num-attention-heads 8 --seq-length 8 --micro-batch-size 1 "
                   "--bf16 --vocab-size 10", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "--num-layers"), "no --num-layers: %s", e.msg);
    st = read_text("python pretrain_gpt.py " BASE, &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "fp32"), "neither --bf16 nor --fp16: %s", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --group-query-attention --multi-latent-attention", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "exclude"), "GQA with MLA: %s", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --num-experts 4 --moe-layer-freq '[0]*3'", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "3 entries"), "a pattern of the wrong length: %s", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --num-experts 4 --moe-layer-freq '[0]*8'", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "no MoE layer"), "a pattern without MoE layers: %s", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --attention-dropout 1.5", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "--attention-dropout"), "dropout 1.5: %s", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --pipeline-model-parallel-size 2 "
                   "--pipeline-model-parallel-layout 'Et*3|t*4L'", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "7 decoder layers"), "a layout of 7 layers for 8: %s", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --pipeline-model-parallel-size 2 "
                   "--pipeline-model-parallel-layout 'Et*3|(t*2)*2,tL'", &a, &c, &e);
    tap_ok(st == PP_OK && c.uneven && c.layout.vpp == 1 && c.stage_layers[0] == 3 && c.stage_layers[1] == 5,
           "a layout with a repeated group and a comma: 'Et*3|(t*2)*2,tL' = 3 / 5 layers (%s)", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --pipeline-model-parallel-size 2 "
                   "--pipeline-model-parallel-layout 'Et|t|t*3|t*3L'", &a, &c, &e);
    tap_ok(st == PP_OK && c.vsplit && !c.uneven && c.layout.vpp == 2 && c.vstage_layers[0] == 1 &&
               c.vstage_layers[1] == 1 && c.vstage_layers[2] == 3 && c.vstage_layers[3] == 3,
           "four segments on pp 2: vpp 2, the virtual stages in Megatron's order 1 / 1 / 3 / 3 (rank 0 holds "
           "segments 0 and 2: 1 + 3 layers)");
    /* Megatron's first/last-stage and account-for splits (pp_pipeline.h), and a dump's layout */
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --pipeline-model-parallel-size 2 "
                   "--num-virtual-stages-per-pipeline-rank 2 --decoder-first-pipeline-num-layers 2", &a, &c, &e);
    tap_ok(st == PP_OK && c.vsplit && c.layout.vpp == 2 && c.vstage_layers[0] == 1 && c.vstage_layers[1] == 3 &&
               c.vstage_layers[2] == 1 && c.vstage_layers[3] == 3,
           "--decoder-first-pipeline-num-layers 2 of 8 on pp 2 x vpp 2: chunks 1 / 3 / 1 / 3 (%s)", e.msg);
    st = read_text("python pretrain_gpt.py --num-layers 6 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
                   "--micro-batch-size 1 --vocab-size 1000 --bf16 --pipeline-model-parallel-size 2 "
                   "--num-layers-per-virtual-pipeline-stage 2 --account-for-embedding-in-pipeline-split "
                   "--account-for-loss-in-pipeline-split", &a, &c, &e);
    tap_ok(st == PP_OK && c.vsplit && c.layout.vpp == 2 && c.vstage_layers[0] == 1 && c.vstage_layers[1] == 2 &&
               c.vstage_layers[2] == 2 && c.vstage_layers[3] == 1 && !c.unmodelled[0],
           "6 layers, the embedding and the loss at 2 per virtual stage on pp 2: vpp 2, 1 / 2 / 2 / 1 (%s%s)", e.msg,
           c.unmodelled);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --pipeline-model-parallel-size 2 "
                   "--decoder-first-pipeline-num-layers 3 --account-for-loss-in-pipeline-split", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "exclude each other"), "first/last with an account-for flag: %s", e.msg);
    st = read_text("python pretrain_gpt.py " BASE "--bf16 --pipeline-model-parallel-size 2 "
                   "--pipeline-model-parallel-layout 'Et*3|t*5L' --decoder-last-pipeline-num-layers 5", &a, &c, &e);
    tap_ok(st == PP_ERR_INPUT && strstr(e.msg, "cannot be set with the other pipeline layout arguments"),
           "a layout string with --decoder-last-pipeline-num-layers: %s", e.msg);
    pp_margs_init(&a, "layout.log");
    const char *dump =
        "------------------------ arguments ------------------------\n"
        "  account_for_embedding_in_pipeline_split ......... False\n"
        "  bf16 ............................................ True\n"
        "  decoder_first_pipeline_num_layers ............... None\n"
        "  hidden_size ..................................... 512\n"
        "  micro_batch_size ................................ 1\n"
        "  num_attention_heads ............................. 8\n"
        "  num_layers ...................................... 8\n"
        "  pipeline_model_parallel_layout .................. Et|(tt|)*2t*3L\n"
        "  pipeline_model_parallel_size .................... 2\n"
        "  seq_length ...................................... 1024\n"
        "  virtual_pipeline_model_parallel_size ............ 2\n"
        "  vocab_size ...................................... 1000\n"
        "-------------------- end of arguments ---------------------\n";
    memset(&e, 0, sizeof e);
    st = pp_margs_parse_log(&a, dump, strlen(dump), &e);
    if (st == PP_OK) st = pp_margs_read(&a, &c, &e);
    pp_margs_free(&a);
    tap_ok(st == PP_OK && c.vsplit && c.layout.vpp == 2 && c.vstage_layers[0] == 1 && c.vstage_layers[1] == 2 &&
               c.vstage_layers[2] == 2 && c.vstage_layers[3] == 3,
           "a log's argument dump: pipeline_model_parallel_layout Et|(tt|)*2t*3L = 1 / 2 / 2 / 3 (%s)", e.msg);
    /* a cut dump */
    pp_margs_init(&a, "cut.log");
    const char *cut = "log line\n------------------------ arguments ------------------------\n  num_layers ..... 2\n";
    st = pp_margs_parse_log(&a, cut, strlen(cut), &e);
    tap_ok(st == PP_ERR_INPUT && e.line == 3 && strstr(e.msg, "no end") && strstr(e.msg, "line 2"),
           "a dump cut in the middle: %s:%d %s", e.file, e.line, e.msg);
    pp_margs_free(&a);
}

int main(int argc, char **argv)
{
    if (argc > 1) logdir = argv[1];
    test_list_expr();
    test_script();
    test_dumps();
    test_read();
    test_definition();
    test_errors();
    return tap_done();
}
