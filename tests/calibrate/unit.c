/* Calibration: Megatron-LM log parsing on the committed real logs (exact values), rebuilding the
 * runs from their arguments, the calibration's effect on the time model, and the probe cache
 * (atomic saves, merge, resume, malformed files).
 * argv[1]: the directory the megatron logs were extracted to (meson: tests/data/megatron/logs.tar.xz). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pp_calibrate.h"
#include "pp_load.h"
#include "pp_probe_cache.h"
#include "tap.h"

static const char *src_dir(void)
{
    const char *s = getenv("PARPLAN_SOURCE_DIR");
    return s && *s ? s : ".";
}

static pp_gpu h200;

static void load_gpu(void)
{
    char path[1024];
    pp_error err = {0};
    snprintf(path, sizeof path, "%s/models.d/gpus/h200.yaml", src_dir());
    pp_status st = pp_gpu_load_file(&h200, path, &err);
    tap_ok(st == PP_OK, "catalog h200 loads (%s)", err.msg);
}

static void test_megatron_block(const char *dir)
{
    char path[1024];
    pp_mlog log;
    pp_error err = {0};
    /* g67_pp2_b1: GPT 6.7B, PP 2, three iterations */
    snprintf(path, sizeof path, "%s/g67_pp2_b1.log", dir);
    pp_status st = pp_mlog_load(&log, path, NULL, &err);
    tap_ok(st == PP_OK, "g67_pp2_b1.log parses (%s)", err.msg);
    if (st) return;
    tap_ok(log.args_block, "g67_pp2_b1: arguments from the printed block");
    tap_ok(log.n_iter == 3, "g67_pp2_b1: 3 iterations (got %d)", log.n_iter);
    tap_ok(log.n_iter == 3 && log.iter_ms[0] == 1826.5 && log.iter_ms[1] == 1309.9 && log.iter_ms[2] == 786.7,
           "g67_pp2_b1: iteration times 1826.5 1309.9 786.7 ms");
    int used = 0;
    tap_ok(pp_mlog_step_ms(&log, 2, &used) == 786.7 && used == 1, "g67_pp2_b1: step = iteration 3 = 786.7 ms");
    tap_ok(pp_mlog_max_alloc_mib(&log, 0) == 88762.42 && pp_mlog_max_alloc_mib(&log, 1) == 74419.59,
           "g67_pp2_b1: last max allocated rank 0 88762.42, rank 1 74419.59 MiB");
    const char *v = pp_mlog_arg(&log, "ffn_hidden_size");
    tap_ok(v && !strcmp(v, "16384"), "g67_pp2_b1: ffn_hidden_size 16384 (got %s)", v ? v : "none");
    tap_ok(pp_mlog_arg(&log, "recompute_granularity") == NULL, "g67_pp2_b1: recompute_granularity None is absent");
    v = pp_mlog_arg(&log, "ddp_param_name_patterns_for_fp32_local_accumulation");
    tap_ok(v && !strcmp(v, "[]"), "a long name without dots parses (got %s)", v ? v : "none");
    pp_calib_run run;
    st = pp_calib_run_init(&run, &log, &h200, &err);
    tap_ok(st == PP_OK, "g67_pp2_b1: run rebuilt (%s)", err.msg);
    if (st == PP_OK) {
        const pp_model *m = &run.work.model;
        tap_ok(m->layers == 32 && m->hidden == 4096 && m->heads == 32 && m->kv_heads == 32 && m->ffn == 16384 &&
                   m->vocab == 50257 && m->seq == 2048 && m->act == PP_ACT_GELU && m->norm == PP_NORM_LAYERNORM &&
                   m->pos == PP_POS_LEARNED && m->bias && m->tied,
               "g67_pp2_b1: GPT shape (num_query_groups 1 ignored without group_query_attention)");
        tap_ok(run.layout.tp == 1 && run.layout.pp == 2 && run.layout.dp == 1 && run.layout.mbs == 1 &&
                   run.work.gbs == 4 && run.work.gpus == 2 && !run.layout.dist_opt && run.layout.recompute == PP_RC_NONE,
               "g67_pp2_b1: layout tp1 pp2 dp1 mbs1 gbs4 on 2 GPUs");
        tap_ok(run.work.attention == PP_ATTN_UNFUSED && !run.opts.overlap_grad_reduce && run.opts.dropout &&
                   run.opts.grad_accum_bytes == 12.0 && run.opts.grad_reduce_bytes == 4.0,
               "g67_pp2_b1: local impl = unfused attention, no overlap, dropout, unfused grad accumulation");
        tap_ok(fabs(run.measured_step_s - 0.7867) < 1e-12 && run.stage_max_alloc_mib[0] == 88762.42 &&
                   run.stage_max_alloc_mib[1] == 74419.59,
               "g67_pp2_b1: measured 0.7867 s, stage peaks 88762.42 / 74419.59 MiB");
    }
    pp_mlog_free(&log);

    /* l3_s4k_tp2_b2_sel: Llama-3.2-3B shape, TP 2, selective recompute */
    snprintf(path, sizeof path, "%s/l3_s4k_tp2_b2_sel.log", dir);
    st = pp_mlog_load(&log, path, NULL, &err);
    tap_ok(st == PP_OK, "l3_s4k_tp2_b2_sel.log parses (%s)", err.msg);
    if (st) return;
    st = pp_calib_run_init(&run, &log, &h200, &err);
    tap_ok(st == PP_OK, "l3_s4k_tp2_b2_sel: run rebuilt (%s)", err.msg);
    if (st == PP_OK) {
        const pp_model *m = &run.work.model;
        tap_ok(m->layers == 28 && m->hidden == 3072 && m->heads == 24 && m->kv_heads == 8 && m->ffn == 8192 &&
                   m->vocab == 128256 && m->seq == 4096 && m->act == PP_ACT_SWIGLU && m->norm == PP_NORM_RMSNORM &&
                   m->pos == PP_POS_ROPE && !m->bias && !m->tied,
               "l3_s4k_tp2_b2_sel: Llama shape (GQA 8, SwiGLU 8192, RMSNorm, RoPE, untied, no bias)");
        tap_ok(run.layout.tp == 2 && run.layout.mbs == 2 && run.layout.recompute == PP_RC_SELECTIVE &&
                   !run.opts.dropout && fabs(run.measured_step_s - 1.1023) < 1e-12,
               "l3_s4k_tp2_b2_sel: tp2 mbs2 selective, no dropout (0.0), 1102.3 ms");
        tap_ok(pp_mlog_max_alloc_mib(&log, 0) == 52102.70 && pp_mlog_max_alloc_mib(&log, 1) == 52099.95,
               "l3_s4k_tp2_b2_sel: max allocated 52102.70 / 52099.95 MiB");
    }
    pp_mlog_free(&log);

    /* a run that ran out of memory: arguments, no timed iteration after the warm-up */
    snprintf(path, sizeof path, "%s/g27_b4.log", dir);
    st = pp_mlog_load(&log, path, NULL, &err);
    tap_ok(st == PP_OK && log.n_iter == 1, "g27_b4.log (OOM) parses with 1 iteration (%s)", err.msg);
    if (st == PP_OK) {
        st = pp_calib_run_init(&run, &log, &h200, &err);
        tap_ok(st == PP_ERR_INPUT && strstr(err.msg, "warm-up"), "g27_b4: no timed iteration is an error: %s",
               err.msg);
        pp_mlog_free(&log);
    }
}

static void test_launch_script(void)
{
    char logp[1024], argp[1024];
    pp_mlog log;
    pp_error err = {0};
    snprintf(logp, sizeof logp, "%s/tests/data/launch/logs/r4-tinyllama-pp2-uneven-rc.log", src_dir());
    snprintf(argp, sizeof argp, "%s/tests/data/launch/scripts/r4-tinyllama-pp2-uneven-rc.sh", src_dir());
    pp_status st = pp_mlog_load(&log, logp, argp, &err);
    tap_ok(st == PP_OK, "r4 log + launch script parse (%s)", err.msg);
    if (st) return;
    tap_ok(!log.args_block && log.n_iter == 5, "r4: no printed block, 5 iterations");
    int used = 0;
    tap_ok(pp_mlog_step_ms(&log, 2, &used) == 1055.7 && used == 3, "r4: median of 1046.4 1059.0 1055.7 = 1055.7 ms");
    tap_ok(pp_mlog_max_alloc_mib(&log, 0) == 44290.93 && pp_mlog_max_alloc_mib(&log, 1) == 23277.62,
           "r4: max allocated 44290.93 / 23277.62 MiB (two reports on one line)");
    const char *v = pp_mlog_arg(&log, "pipeline_model_parallel_layout");
    tap_ok(v && !strcmp(v, "Et*12|t*10L"), "r4: quoted layout 'Et*12|t*10L' (got %s)", v ? v : "none");
    pp_calib_run run;
    st = pp_calib_run_init(&run, &log, &h200, &err);
    tap_ok(st == PP_OK, "r4: run rebuilt (%s)", err.msg);
    if (st == PP_OK) {
        const pp_model *m = &run.work.model;
        tap_ok(m->layers == 22 && m->hidden == 2048 && m->heads == 32 && m->kv_heads == 4 && m->ffn == 5632 &&
                   m->vocab == 32000 && !m->bias && !m->tied && m->act == PP_ACT_SWIGLU,
               "r4: TinyLlama shape from the script's flags (GQA 4, no bias, untied)");
        tap_ok(run.work.gpus == 2 && run.work.gpus_per_node == 2, "r4: GPUS_PER_NODE=2 x NNODES=1 = 2 GPUs");
        tap_ok(run.uneven && run.stage_layers[0] == 12 && run.stage_layers[1] == 10 && run.stage_recompute[0] == 2 &&
                   run.stage_recompute[1] == 2 && run.layout.recompute == PP_RC_FULL && run.layout.dist_opt,
               "r4: stages 12/10, block recompute 2 on each, dist-opt");
        tap_ok(run.opts.dropout && run.opts.grad_accum_bytes == 12.0,
               "r4: Megatron's default dropout 0.1, --no-gradient-accumulation-fusion");
    }
    pp_mlog_free(&log);
}

static void test_flags_and_errors(void)
{
    pp_mlog log;
    pp_error err = {0};
    const char *cmd = "torchrun --nproc_per_node 4 --nnodes 2 pretrain_gpt.py --num-layers 4 --hidden-size 512 "
                      "--num-attention-heads 8 --seq-length 1024 --micro-batch-size 2 --global-batch-size 64 "
                      "--vocab-size 1000 --bf16 --tensor-model-parallel-size 2 --no-gradient-accumulation-fusion "
                      "--overlap-grad-reduce --recompute-granularity=full --recompute-method uniform";
    pp_status st = pp_mlog_parse(&log, "", 0, "cmd", &err);
    tap_ok(st == PP_OK && log.n_iter == 0 && log.args.n == 0, "an empty text is an empty log");
    st = pp_mlog_add_flags(&log, cmd, strlen(cmd), "cmd", &err);
    const char *ws = pp_mlog_arg(&log, "world_size");
    tap_ok(st == PP_OK && ws && !strcmp(ws, "8"), "torchrun 4 per node x 2 nodes = world 8 (got %s)", ws ? ws : "none");
    const char *g = pp_mlog_arg(&log, "gradient_accumulation_fusion"), *o = pp_mlog_arg(&log, "overlap_grad_reduce"),
               *r = pp_mlog_arg(&log, "recompute_granularity");
    tap_ok(g && !strcmp(g, "False") && o && !strcmp(o, "True") && r && !strcmp(r, "full"),
           "--no-X sets X False, a switch is True, --flag=value");
    pp_mlog_free(&log);

    /* malformed numbers in recognised lines: errors with line and column */
    const char *bad = "line one\n [x] iteration        3/       5 | elapsed time per iteration (ms): abc |\n";
    st = pp_mlog_parse(&log, bad, strlen(bad), "bad.log", &err);
    tap_ok(st == PP_ERR_INPUT && err.line == 2 && err.col > 1, "a malformed elapsed time is an error at 2:%d (%s)",
           err.col, err.msg);
    const char *trunc = "------------------------ arguments ------------------------\n  hidden_size ... 4\n";
    st = pp_mlog_parse(&log, trunc, strlen(trunc), "t.log", &err);
    tap_ok(st == PP_ERR_INPUT && strstr(err.msg, "no end"), "an arguments block without its end is an error");
    const char *nomem = "[Rank 0] (after 1 iterations) memory (MB) | allocated: 1.0 | max allocated: x1 | reserved: 2 | "
                        "max reserved: 2\n";
    st = pp_mlog_parse(&log, nomem, strlen(nomem), "m.log", &err);
    tap_ok(st == PP_ERR_INPUT && err.line == 1, "a malformed memory report is an error (%s)", err.msg);
    /* a log whose arguments lack the model's shape */
    const char *noshape = " iteration 3/ 3 | elapsed time per iteration (ms): 10.0 |\n";
    st = pp_mlog_parse(&log, noshape, strlen(noshape), "n.log", &err);
    tap_ok(st == PP_OK && log.n_iter == 1, "iteration line without arguments parses");
    pp_calib_run run;
    st = pp_calib_run_init(&run, &log, &h200, &err);
    tap_ok(st == PP_ERR_INPUT && strstr(err.msg, "num_layers"), "no arguments: the error names num_layers (%s)",
           err.msg);
    pp_mlog_free(&log);
}

/* The calibration terms act as documented on one layer and one step. */
/* g27_b1 (GPT 2.7B, 32 layers, tp1 pp1 dp1, mbs 1, gbs 2) rebuilt from its log; false (reported)
 * when it cannot be */
static bool load_g27_b1(const char *dir, pp_calib_run *run)
{
    char path[1024];
    pp_mlog log;
    pp_error err = {0};
    snprintf(path, sizeof path, "%s/g27_b1.log", dir);
    if (pp_mlog_load(&log, path, NULL, &err)) {
        tap_ok(0, "g27_b1.log loads (%s)", err.msg);
        return false;
    }
    pp_status st = pp_calib_run_init(run, &log, &h200, &err);
    pp_mlog_free(&log);
    if (st) tap_ok(0, "g27_b1 rebuilt (%s)", err.msg);
    return st == PP_OK;
}

static void test_apply(const char *dir)
{
    pp_error err = {0};
    pp_calib_run run;
    if (!load_g27_b1(dir, &run)) return;
    double base = 0, s1 = 0;
    pp_calibration cal;
    pp_calibration_init(&cal);
    pp_calib_predict(&run, NULL, NULL, &base, &err);
    pp_calib_predict(&run, NULL, &cal, &s1, &err);
    tap_ok(base > 0 && s1 == base, "a neutral calibration (present = false) changes nothing: %.6g s", base);
    cal.present = true;
    pp_calib_predict(&run, NULL, &cal, &s1, &err);
    tap_near(s1, base, 1e-12, "present with neutral factors changes nothing");
    /* layer overhead: 32 layers x 2 micro-batches x (1 + 2) x 100 us = 19.2 ms exactly */
    cal.layer_overhead_s = 100e-6;
    pp_calib_predict(&run, NULL, &cal, &s1, &err);
    tap_near(s1 - base, 32 * 2 * 3 * 100e-6, 1e-9, "layer_overhead 100 us adds 32 x 2 x 3 x 100 us");
    /* score bytes: per layer and micro-batch, fwd + bwd = 2 x 10 B x (32 heads x 2048^2) / rate */
    cal.layer_overhead_s = 0;
    cal.score_bytes = 10;
    pp_calib_predict(&run, NULL, &cal, &s1, &err);
    pp_time_ctx ctx;
    pp_work w = run.work;
    pp_time_ctx_init(&ctx, &w, &run.opts);
    double want = 32 * 2 * 2 * 10.0 * 32 * 2048.0 * 2048.0 / ctx.mem_rate;
    tap_near(s1 - base, want, 1e-9, "score_bytes 10 adds 2 passes x 10 B x scores / bandwidth (%.4g s)", want);
    /* optimizer x2 adds exactly one optimizer step */
    cal.score_bytes = 0;
    cal.optimizer_scale = 2;
    pp_time_result r0;
    pp_layout l = pp_calib_run_layout(&run);
    w.profile = NULL;
    pp_time_estimate_opts(&w, &l, &run.opts, &r0, &err);
    pp_calib_predict(&run, NULL, &cal, &s1, &err);
    tap_near(s1 - base, r0.optimizer_s, 1e-9, "optimizer_scale 2 adds one optimizer step (%.4g s)", r0.optimizer_s);
    /* gemm x2: the step gets shorter, never longer */
    cal.optimizer_scale = 1;
    cal.gemm_scale = 2;
    pp_calib_predict(&run, NULL, &cal, &s1, &err);
    tap_ok(s1 < base, "gemm_scale 2 shortens the step (%.4g < %.4g s)", s1, base);
}

/* pp_time_step_measured (plan --probe and calibrate --probe-cache): the measured layer replaces the
 * model's exactly, the stack's terms add exactly what they say, the measured optimizer step
 * replaces the model's. g27_b1: GPT 2.7B, 32 layers, tp1 pp1 dp1, mbs 1, gbs 2 (2 micro-batches). */
static void test_measured(const char *dir)
{
    pp_error err = {0};
    pp_calib_run run;
    if (!load_g27_b1(dir, &run)) return;
    pp_work w = run.work;
    w.profile = NULL;
    pp_layout l = pp_calib_run_layout(&run);
    pp_time_result r0, r1;
    pp_time_measured mi;
    pp_time_estimate_opts(&w, &l, &run.opts, &r0, &err);
    /* the model's own layer, as if measured: the same step */
    pp_time_ctx ctx;
    pp_time_ctx_init(&ctx, &w, &run.opts);
    pp_time_layer ly;
    pp_time_layer_get(&ctx, &l, &ly);
    pp_time_step_measured(&w, &l, &run.opts, NULL, ly.fwd_compute_s, ly.fwd_compute_s + ly.bwd_compute_s, &r1, &mi);
    tap_near(r1.step_time_s, r0.step_time_s, 1e-12, "the model's layer given as measured: the model's step (%.6g s)",
             r0.step_time_s);
    /* 1 ms more forward and 2 ms more backward per layer: 32 layers x 2 micro-batches x 3 ms */
    pp_time_step_measured(&w, &l, &run.opts, NULL, ly.fwd_compute_s + 1e-3,
                          ly.fwd_compute_s + ly.bwd_compute_s + 3e-3, &r1, &mi);
    tap_near(r1.step_time_s - r0.step_time_s, 32 * 2 * 3e-3, 1e-9, "+1 ms fwd, +2 ms bwd measured: +%.3g s",
             32 * 2 * 3e-3);
    /* the stack's layer overhead on top: 32 x 2 x (1 + 2) x 100 us */
    pp_calibration cal;
    pp_calibration_init(&cal);
    cal.present = true;
    cal.layer_overhead_s = 100e-6;
    pp_time_step_measured(&w, &l, &run.opts, &cal, ly.fwd_compute_s, ly.fwd_compute_s + ly.bwd_compute_s, &r1, &mi);
    tap_near(r1.step_time_s - r0.step_time_s, 32 * 2 * 3 * 100e-6, 1e-9,
             "a calibration's layer overhead adds 32 x 2 x 3 x 100 us on top of the measured layer");
    tap_near(mi.stack_fwd_s, 100e-6, 1e-12, "and says so (%.3g ms per layer forward)", mi.stack_fwd_s * 1e3);
    /* gemm_scale does not touch the measured layer: only the modelled output layer gets faster */
    cal.layer_overhead_s = 0;
    cal.gemm_scale = 2;
    pp_time_step_measured(&w, &l, &run.opts, &cal, ly.fwd_compute_s, ly.fwd_compute_s + ly.bwd_compute_s, &r1, &mi);
    double out_s = 2 * (ly.output_fwd_s + ly.output_bwd_s + ly.embed_fwd_s + ly.embed_bwd_s);
    tap_ok(r1.step_time_s < r0.step_time_s && r0.step_time_s - r1.step_time_s <= out_s,
           "gemm_scale 2 shortens only the modelled layers: -%.3g ms of at most %.3g ms",
           (r0.step_time_s - r1.step_time_s) * 1e3, out_s * 1e3);
    /* a measured optimizer sweep (3 TB/s at 30 B/param) x optimizer_scale 2 replaces the model's */
    pp_profile prof;
    memset(&prof, 0, sizeof prof);
    pp_prof_optimizer rows[2] = {{1e8, 30, 1.0, 3000}, {1e9, 30, 10.0, 3000}};
    prof.optimizer = rows;
    prof.n_optimizer = 2;
    w.profile = &prof;
    cal.gemm_scale = 1;
    cal.optimizer_scale = 2;
    pp_time_step_measured(&w, &l, &run.opts, &cal, ly.fwd_compute_s, ly.fwd_compute_s + ly.bwd_compute_s, &r1, &mi);
    double want_opt = r0.optimizer_params / 1e8 * 1e-3; /* 1 ms per 1e8 parameters */
    tap_near(mi.optimizer_meas_s, want_opt, 1e-9, "the optimizer step of %.4g params read from the sweep: %.4g ms",
             r0.optimizer_params, want_opt * 1e3);
    tap_near(r1.step_time_s, r0.step_time_s - r0.optimizer_s + 2 * want_opt, 1e-9,
             "and x optimizer_scale 2 in place of the model's %.4g ms", r0.optimizer_s * 1e3);
}

static bool file_exists(const char *p) { return access(p, F_OK) == 0; }

/* pp_time_layer_compose and pp_time_step_measured_kinds (plan --probe on MoE and MLA layouts):
 * measured parts replace the model's figures of the same parts, exactly; what was not measured keeps
 * the model's figure; a calibrated stack's host pace is added to measured experts where it is slower.
 * moe-64fg (tests/data/megatron/models): 8 layers, the first dense, 64 experts top-6, shared experts
 * of 2816, on one H200, tp1 pp1 dp1 mbs1, unfused attention (Megatron's local modules). */
static bool moe_work(const char *file, pp_work *w, pp_layout *l, int64_t mbs)
{
    char path[1024];
    pp_error err = {0};
    memset(w, 0, sizeof *w);
    snprintf(path, sizeof path, "%s/tests/data/megatron/models/%s", src_dir(), file);
    if (pp_model_load_file(&w->model, path, &err) != PP_OK) return tap_ok(false, "%s loads (%s)", file, err.msg), false;
    w->gpu = h200;
    w->gpus = 1;
    w->gpus_per_node = 1;
    w->gbs = 2 * mbs;
    w->framework = PP_FW_MEGATRON;
    w->attention = PP_ATTN_UNFUSED;
    pp_stack_init(&w->stack);
    pp_stack_resolve(w);
    pp_layout_init(l);
    l->mbs = mbs;
    if (pp_layout_validate(w, l, &err) != PP_OK) return tap_ok(false, "%s tp1 mbs%lld (%s)", file, (long long)mbs, err.msg), false;
    return true;
}

static void test_compose(void)
{
    pp_work w;
    pp_layout l;
    if (!moe_work("moe-64fg.yaml", &w, &l, 1)) return;
    pp_time_opts o;
    pp_time_opts_default(&w, &o);
    pp_time_ctx ctx;
    pp_time_ctx_init(&ctx, &w, &o);
    pp_time_layer ly;
    pp_time_layer_get(&ctx, &l, &ly);
    const int km = ly.kind_main;
    pp_time_terms mt, dt;
    pp_time_layer_terms(&ly, km, &mt);
    pp_time_layer_terms(&ly, 0, &dt);
    tap_ok(km == PP_LAYER_MOE && (ly.kinds_present & 1u), "moe-64fg: MoE main kind and a dense kind");
    pp_layer_measured me;
    pp_layer_composed c;
    /* nothing measured: the model's layer */
    memset(&me, 0, sizeof me);
    pp_time_layer_compose(&w, &l, &o, NULL, km, &me, &c);
    tap_ok(!c.measured && fabs(c.fwd_s - mt.fwd_compute_s) < 1e-12 &&
               fabs(c.fwdbwd_s - mt.fwd_compute_s - mt.bwd_compute_s) < 1e-12,
           "nothing measured: the model's MoE layer (%.4g / %.4g ms)", c.fwd_s * 1e3, c.fwdbwd_s * 1e3);
    /* attention (layer --no-mlp) and the MoE MLP with its shared experts: their sum, nothing modelled */
    me.attn_fwd_s = 1e-3, me.attn_fwdbwd_s = 3e-3;
    me.moe_fwd_s = 2e-3, me.moe_fwdbwd_s = 7e-3;
    me.expert_fwd_s = 1.5e-3, me.expert_bwd_s = 4e-3;
    me.moe_shared = true;
    pp_time_layer_compose(&w, &l, &o, NULL, km, &me, &c);
    tap_ok(c.measured && fabs(c.fwd_s - 3e-3) < 1e-12 && fabs(c.fwdbwd_s - 10e-3) < 1e-12 &&
               c.modelled_fwd_s < 1e-12 && c.modelled_bwd_s < 1e-12,
           "attention + MoE MLP measured: the layer is their sum (%.6g / %.6g ms), the model's rest 0",
           c.fwd_s * 1e3, c.fwdbwd_s * 1e3);
    /* the MoE MLP alone: a measurement 1 ms longer makes the layer exactly 1 ms longer */
    pp_layer_measured m2 = me;
    m2.attn_fwd_s = m2.attn_fwdbwd_s = 0;
    pp_layer_composed c1, c2;
    pp_time_layer_compose(&w, &l, &o, NULL, km, &m2, &c1);
    m2.moe_fwd_s += 1e-3, m2.moe_fwdbwd_s += 1e-3;
    pp_time_layer_compose(&w, &l, &o, NULL, km, &m2, &c2);
    tap_near(c2.fwd_s - c1.fwd_s, 1e-3, 1e-12, "MoE MLP alone: +1 ms measured is +1 ms in the layer");
    tap_ok(c1.modelled_fwd_s > 0 && fabs(c1.fwd_s - c1.modelled_fwd_s - 2e-3) < 1e-12,
           "and the attention stays the model's (%.4g ms forward)", c1.modelled_fwd_s * 1e3);
    /* the shared experts left out of the measurement: the model prices them as a dense MLP of 2816 */
    m2 = me;
    m2.moe_shared = false;
    pp_time_layer_compose(&w, &l, &o, NULL, km, &m2, &c1);
    double sf = c1.fwd_s - 3e-3, sb = c1.fwdbwd_s - 10e-3 - sf;
    tap_ok(sf > 0 && sb > sf && c1.modelled_fwd_s > 0 && fabs(c1.modelled_fwd_s - sf) < 1e-12,
           "shared experts not measured: the model's figure of them is added (%.4g / %.4g ms)", sf * 1e3, sb * 1e3);
    /* the host's pace of a calibrated stack: 1 ms per MoE layer + 64 looped experts x 50 us = 4.2 ms,
     * a third forward (1.4 ms against 1.5 ms of measured experts: nothing), two thirds backward
     * (2.8 ms against 4 ms: nothing); x3 the per-expert overhead: 10.6 ms, 3.533 - 1.5 forward and
     * 7.067 - 4 backward added */
    pp_calibration cal;
    pp_calibration_init(&cal);
    cal.present = true;
    cal.moe_layer_overhead_s = 1e-3;
    cal.expert_overhead_s = 50e-6;
    pp_time_layer_compose(&w, &l, &o, &cal, km, &me, &c1);
    tap_ok(c1.host_fwd_s == 0 && c1.host_bwd_s == 0 && fabs(c1.fwdbwd_s - 10e-3) < 1e-12,
           "host pace 4.2 ms per layer below the measured experts: nothing added");
    cal.expert_overhead_s = 150e-6;
    pp_time_layer_compose(&w, &l, &o, &cal, km, &me, &c1);
    double host = 1e-3 + 64 * 150e-6;
    tap_near(c1.host_fwd_s, host / 3 - 1.5e-3, 1e-12, "host pace 10.6 ms: forward +%.4g ms", c1.host_fwd_s * 1e3);
    tap_near(c1.host_bwd_s, 2 * host / 3 - 4e-3, 1e-12, "backward +%.4g ms", c1.host_bwd_s * 1e3);
    tap_near(c1.fwdbwd_s, 10e-3 + c1.host_fwd_s + c1.host_bwd_s, 1e-12, "on top of the measured layer");
    w.stack.grouped_gemm = true;
    pp_time_layer_compose(&w, &l, &o, &cal, km, &me, &c1);
    tap_ok(c1.host_fwd_s == 0 && c1.host_bwd_s == 0, "grouped experts: the per-expert overhead does not apply");
    w.stack.grouped_gemm = false;
    /* the stack's per-layer terms are not in the composition (the step adds them once) */
    cal.expert_overhead_s = 0;
    cal.layer_overhead_s = 400e-6;
    cal.score_bytes = 28;
    pp_time_layer_compose(&w, &l, &o, &cal, km, &me, &c1);
    tap_ok(fabs(c1.fwdbwd_s - 10e-3) < 1e-12, "a calibration's layer overhead and score bytes stay out of it");

    /* the step: every kind given the model's own figures is the model's step */
    pp_time_result r0, r1;
    pp_time_measured mi;
    pp_error err = {0};
    pp_time_estimate_opts(&w, &l, &o, &r0, &err);
    double f[PP_LAYER_KINDS] = {0}, fb[PP_LAYER_KINDS] = {0};
    f[km] = mt.fwd_compute_s, fb[km] = mt.fwd_compute_s + mt.bwd_compute_s;
    f[0] = dt.fwd_compute_s, fb[0] = dt.fwd_compute_s + dt.bwd_compute_s;
    pp_time_step_measured_kinds(&w, &l, &o, NULL, f, fb, &r1, &mi);
    tap_near(r1.step_time_s, r0.step_time_s, 1e-12, "both kinds given the model's figures: the model's step (%.6g s)",
             r0.step_time_s);
    /* the dense layer 1 ms longer (fwd + bwd): one layer x 2 micro-batches */
    fb[0] += 1e-3;
    pp_time_step_measured_kinds(&w, &l, &o, NULL, f, fb, &r1, &mi);
    tap_near(r1.step_time_s - r0.step_time_s, 2e-3, 1e-12, "the measured dense layer +1 ms: +2 ms per step");
    /* the MoE layer 1 ms longer, the dense one not measured: it moves by the MoE layer's ratio */
    fb[0] = f[0] = 0;
    fb[km] += 1e-3;
    pp_time_step_measured_kinds(&w, &l, &o, NULL, f, fb, &r1, &mi);
    double ratio = (mt.bwd_compute_s + 1e-3) / mt.bwd_compute_s;
    tap_near(r1.step_time_s - r0.step_time_s, 2 * (7 * 1e-3 + dt.bwd_compute_s * (ratio - 1)), 1e-12,
             "the MoE layers +1 ms, the dense layer by their ratio (%.4f)", ratio);
    /* the old entry point is the kinds one with the main kind alone */
    pp_time_result r2;
    pp_time_step_measured(&w, &l, &o, NULL, f[km], fb[km], &r2, &mi);
    tap_near(r2.step_time_s, r1.step_time_s, 1e-15, "pp_time_step_measured is the main kind alone");

    /* MLA (deepseek-v2-lite's shape, from the catalog): the mla probe's block replaces the model's
     * attention; the norms and residual adds around it stay the model's, a small share */
    char dir[1024];
    pp_catalog cat;
    snprintf(dir, sizeof dir, "%s/models.d", src_dir());
    if (pp_catalog_load(&cat, dir, &err) == PP_OK && pp_model_resolve(&w.model, &cat, "deepseek-v2-lite", &err) == PP_OK) {
        w.model.seq = 4096;
        pp_layout_init(&l);
        l.mbs = 1;
        w.gpus = 8;
        w.gbs = 16;
        l.ep = 8;
        if (pp_layout_validate(&w, &l, &err) == PP_OK) {
            pp_time_opts_default(&w, &o);
            pp_time_ctx_init(&ctx, &w, &o);
            pp_time_layer_get(&ctx, &l, &ly);
            memset(&me, 0, sizeof me);
            me.mla_fwd_s = 2e-3, me.mla_fwdbwd_s = 6e-3;
            pp_time_layer_compose(&w, &l, &o, NULL, ly.kind_main, &me, &c);
            pp_time_layer_terms(&ly, ly.kind_main, &mt);
            double rest = c.fwd_s - 2e-3;
            tap_ok(c.measured && rest > 0 && rest < mt.fwd_compute_s,
                   "MLA block measured: the layer keeps the model's MoE MLP and norms (%.4g of %.4g ms)", rest * 1e3,
                   mt.fwd_compute_s * 1e3);
            me.moe_fwd_s = 3e-3, me.moe_fwdbwd_s = 9e-3, me.moe_shared = true;
            pp_time_layer_compose(&w, &l, &o, NULL, ly.kind_main, &me, &c);
            double norms = c.fwd_s - 5e-3;
            tap_ok(norms > 0 && norms < 0.05 * c.fwd_s && fabs(c.modelled_fwd_s - norms) < 1e-12,
                   "MLA block + MoE MLP measured: only the norms and residual adds are the model's (%.4g ms, %.2f%%)",
                   norms * 1e3, 100 * norms / c.fwd_s);
        } else {
            tap_ok(false, "deepseek-v2-lite layout (%s)", err.msg);
        }
        pp_catalog_free(&cat);
    } else {
        tap_ok(false, "deepseek-v2-lite from the catalog (%s)", err.msg);
    }
}

/* The shapes plan --probe asks parplan-probe moe / mla for, and their cache keys. */
static void test_probe_shapes(void)
{
    pp_work w;
    pp_layout l;
    if (!moe_work("moe-16x.yaml", &w, &l, 2)) return;
    pp_probe_moe_shape s;
    char why[128] = "", key[192];
    bool ok = pp_probe_moe_shape_of(&w, &l, &s, why, sizeof why);
    pp_probe_cache_moe_key(&s, key, sizeof key);
    tap_ok(ok && s.tokens == 8192 && s.moe_ffn == 1408 && s.shared_ffn == 2816 && s.ep == 1 && !s.grouped &&
               !strcmp(key, "moe h2048 e16 k4 f1408 s2816 T8192 ep1 loop"),
           "moe-16x tp1 mbs2: 8192 tokens, the shared experts in the measurement (%s)", key);
    /* tp 2 with SP and expert TP 2: the rank routes 4096 tokens, the expert-TP group gathers 8192, the
     * experts are split in two, the shared experts are measured at their TP shard */
    l.tp = 2, l.sp = true, l.etp = 0, l.ep = 1;
    ok = pp_probe_moe_shape_of(&w, &l, &s, why, sizeof why);
    tap_ok(ok && s.tokens == 8192 && s.moe_ffn == 704 && s.shared_ffn == 1408 && !s.shared_modelled,
           "tp2 sp etp2: 8192 token copies' tokens, expert FFN 704, shared 1408");
    /* expert TP 1: the rank's own 4096 tokens, whole experts; the shared experts run on 8192 tokens:
     * left to the model */
    l.etp = 1;
    ok = pp_probe_moe_shape_of(&w, &l, &s, why, sizeof why);
    tap_ok(ok && s.tokens == 4096 && s.moe_ffn == 1408 && s.shared_ffn == 0 && s.shared_modelled,
           "tp2 sp etp1: 4096 tokens, whole experts, shared experts modelled");
    l.etp = 3;
    tap_ok(!pp_probe_moe_shape_of(&w, &l, &s, why, sizeof why) && strstr(why, "etp 3"),
           "etp 3 does not split the expert FFN: not probed (%s)", why);
    l.tp = 1, l.sp = false, l.etp = 0, l.ep = 16;
    ok = pp_probe_moe_shape_of(&w, &l, &s, why, sizeof why);
    tap_ok(ok && s.ep == 16 && s.tokens == 8192, "ep 16: the rank's one expert over 8192 tokens' copies");
    w.stack.moe_imbalance = 1.5;
    ok = pp_probe_moe_shape_of(&w, &l, &s, why, sizeof why);
    tap_ok(ok && s.tokens == 12288 && s.shared_modelled, "imbalance 1.5: the busiest rank's 12288 tokens' copies");
    w.model.act = PP_ACT_GELU;
    tap_ok(!pp_probe_moe_shape_of(&w, &l, &s, why, sizeof why) && strstr(why, "SwiGLU"), "GELU experts: %s", why);
    w.model.experts = 0;
    tap_ok(!pp_probe_moe_shape_of(&w, &l, &s, why, sizeof why), "a dense model has no moe shape (%s)", why);
    pp_probe_mla_shape ms;
    tap_ok(!pp_probe_mla_shape_of(&w, &l, &ms, why, sizeof why), "nor an mla one (%s)", why);
    pp_layout_init(&l);
    l.tp = 2, l.mbs = 1;
    pp_probe_cache_layer_key_ffn(&w, &l, 0, key, sizeof key);
    tap_ok(!strcmp(key, "layer h2048 a16 g4 f0 s4096 b1 t2 none unfused"), "the no-MLP layer's key: %s", key);
}

static void test_cache(void)
{
    char dir[] = "/tmp/pp-cache-test-XXXXXX";
    if (!mkdtemp(dir)) {
        tap_ok(0, "mkdtemp");
        return;
    }
    char path[256];
    snprintf(path, sizeof path, "%s/sub/dir/probe-cache.yaml", dir);
    pp_error err = {0};
    pp_probe_cache c;
    pp_status st = pp_probe_cache_load(&c, path, &err);
    tap_ok(st == PP_OK && c.n == 0, "a missing cache file is an empty cache");
    pp_probe_cache_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.gpu, sizeof e.gpu, "NVIDIA H200");
    snprintf(e.key, sizeof e.key, "layer h4096 a32 g32 f16384 s2048 b1 t1 gelu");
    e.a = 1.25;
    e.b = 3.75;
    snprintf(e.note, sizeof e.note, "flash");
    tap_ok(pp_probe_cache_put(&c, &e, &err) == PP_OK && c.n == 1, "put one entry");
    e.a = 1.5;
    tap_ok(pp_probe_cache_put(&c, &e, &err) == PP_OK && c.n == 1 && c.e[0].a == 1.5, "same key replaces");
    st = pp_probe_cache_save(&c, &err);
    tap_ok(st == PP_OK && file_exists(path), "save creates the directories and the file (%s)", err.msg);
    char tmpname[300];
    snprintf(tmpname, sizeof tmpname, "%s.tmp.%ld", path, (long)getpid());
    tap_ok(!file_exists(tmpname), "no temporary file is left after a save");

    /* another process saved an entry meanwhile: a save merges, ours win */
    pp_probe_cache other;
    pp_probe_cache_load(&other, path, &err);
    pp_probe_cache_entry e2 = e;
    snprintf(e2.key, sizeof e2.key, "nccl all_reduce n2 b1048576");
    e2.a = 300;
    pp_probe_cache_put(&other, &e2, &err);
    pp_probe_cache_save(&other, &err);
    pp_probe_cache_free(&other);
    e.a = 2.0;
    pp_probe_cache_put(&c, &e, &err);
    pp_probe_cache_save(&c, &err);
    pp_probe_cache_free(&c);
    st = pp_probe_cache_load(&c, path, &err);
    const pp_probe_cache_entry *g1 = pp_probe_cache_get(&c, "NVIDIA H200", "layer h4096 a32 g32 f16384 s2048 b1 t1 gelu");
    const pp_probe_cache_entry *g2 = pp_probe_cache_get(&c, "NVIDIA H200", "nccl all_reduce n2 b1048576");
    tap_ok(st == PP_OK && c.n == 2 && g1 && g1->a == 2.0 && g1->b == 3.75 && !strcmp(g1->note, "flash") && g2 &&
               g2->a == 300,
           "reload: both processes' entries, ours won (a %.3g)", g1 ? g1->a : -1);
    tap_ok(!pp_probe_cache_get(&c, "NVIDIA H100 80GB HBM3", "nccl all_reduce n2 b1048576"),
           "entries are per GPU: another GPU's lookup misses");
    pp_probe_cache_free(&c);

    /* an interrupted writer leaves at most a temporary file: the cache itself is whole */
    char stale[300];
    snprintf(stale, sizeof stale, "%s.tmp.99999", path);
    FILE *f = fopen(stale, "w");
    if (f) {
        fputs("version: 1\nentries:\n  - {gpu: \"NVIDIA H200\", key: \"half", f);
        fclose(f);
    }
    st = pp_probe_cache_load(&c, path, &err);
    tap_ok(st == PP_OK && c.n == 2, "a half-written temporary file beside the cache is ignored");
    pp_probe_cache_free(&c);
    remove(stale);

    /* a malformed cache is an error naming the file and line */
    FILE *g = fopen(path, "w");
    if (g) {
        fputs("version: 1\nentries:\n  - {gpu: \"NVIDIA H200\", key: \"k\", a: -3}\n", g);
        fclose(g);
    }
    st = pp_probe_cache_load(&c, path, &err);
    tap_ok(st == PP_ERR_INPUT && err.line == 3, "a negative figure is an error at line 3 (%s)", err.msg);
    g = fopen(path, "w");
    if (g) {
        fputs("version: 2\nentries: []\n", g);
        fclose(g);
    }
    st = pp_probe_cache_load(&c, path, &err);
    tap_ok(st == PP_ERR_INPUT, "an unknown cache version is an error (%s)", err.msg);
    tap_ok(pp_probe_cache_put(&c, &(pp_probe_cache_entry){"NVIDIA H200", "bad\"key", 1, 0, ""}, &err) == PP_ERR_INPUT,
           "a key with a quote is refused");

    /* the path: PARPLAN_CACHE, else XDG_CACHE_HOME, else HOME */
    char got[1024];
    setenv("PARPLAN_CACHE", "/x/c.yaml", 1);
    pp_probe_cache_path(got, sizeof got, &err);
    tap_ok(!strcmp(got, "/x/c.yaml"), "PARPLAN_CACHE wins (%s)", got);
    unsetenv("PARPLAN_CACHE");
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    pp_probe_cache_path(got, sizeof got, &err);
    tap_ok(!strcmp(got, "/xdg/parplan/probe-cache.yaml"), "XDG_CACHE_HOME (%s)", got);
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/u", 1);
    pp_probe_cache_path(got, sizeof got, &err);
    tap_ok(!strcmp(got, "/home/u/.cache/parplan/probe-cache.yaml"), "~/.cache/parplan/probe-cache.yaml (%s)", got);

    remove(path);
    char d1[300], d2[300];
    snprintf(d1, sizeof d1, "%s/sub/dir", dir);
    snprintf(d2, sizeof d2, "%s/sub", dir);
    rmdir(d1);
    rmdir(d2);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MEGATRON_LOG_DIR\n", argv[0]);
        return 2;
    }
    load_gpu();
    test_megatron_block(argv[1]);
    test_launch_script();
    test_flags_and_errors();
    test_apply(argv[1]);
    test_measured(argv[1]);
    test_compose();
    test_probe_shapes();
    test_cache();
    return tap_done();
}
