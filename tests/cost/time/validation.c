/* Step-time validation against the published measurements in tests/data/validation.
 *
 * One set of constants per GPU kind: the catalog entries a100-80gb and h100-sxm plus the
 * model-form constants of planner/cost/time.c; nothing here is tuned per row. What varies per table
 * is the published setup (software and cluster facts), and it is described with the options a
 * user has: each row is a `parplan check` command line, parsed by the CLI's own option table
 * (src/cli.c, linked in) into the work, layout and training stack that `check` predicts from, so
 * that every figure is one a user reproduces with the command printed beside it (the first row of
 * each table is also run through the binary, $PARPLAN, and must give the same step time):
 *   - Megatron-LM 2021/2022 (SC'21, Korthikanti et al.): --precision fp16 (gradients reduced in
 *     16-bit), --attention unfused (fused scale-mask-softmax between two batched GEMMs),
 *     --no-overlap (local DDP after the backward, blocking pipeline send/recv);
 *   - Megatron-Core r0.8 (README table): bf16 (fp32 gradient reduction), Transformer Engine
 *     (flash attention, --sp with --tp-comm-overlap), --dist-opt, overlap on (the default);
 *   - BLOOM (Megatron-DeepSpeed, Jean Zay): --framework deepspeed --zero 1, --recompute full,
 *     --attention unfused, --no-overlap (the pipeline engine: whole-tensor blocking send/recv,
 *     reduction after the backward), and a GPU file with the cluster's network
 *     (tests/data/gpus/a100-80gb-jeanzay.yaml: 4 x 100 Gb/s Omni-Path per node of 8 = 6.25 GB/s
 *     per GPU). What the options cannot say: DeepSpeed's BF16_Optimizer reduces its fp32
 *     gradient buffer (deepspeed/runtime/bf16_optimizer.py get_grads_for_reduction), while the
 *     time model's DeepSpeed default reduces bf16 (the ZeRO optimizer's), and the defaults see no
 *     ZeRO stage to tell the two apart.
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
#include "validation_cli.h"

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

static int estimate(const tt_cli *t, pp_time_result *r, const char *row)
{
    pp_error err = {0};
    if (pp_time_estimate(&t->c.work, &t->c.layout, r, &err) != PP_OK) {
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
    static tt_cli t;
    for (int i = 0; i < csv.n_rows; i++) {
        int64_t layers = (int64_t)tt_csv_num(&csv, i, "layers"), pp = (int64_t)tt_csv_num(&csv, i, "pp");
        double vpl = tt_csv_num(&csv, i, "vp_layers");
        int64_t vpp = vpl > 0 ? (int64_t)((double)layers / (double)pp / vpl) : 1;
        char args[1024];
        /* Megatron-LM of 2021: fp16, unfused attention, no overlap (examples/sc21) */
        snprintf(args, sizeof args,
                 "--layers %lld --hidden %s --heads %s --seq 2048 --vocab 51200 --gpu a100-80gb --gpus %s "
                 "--gpus-per-node 8 --gbs %s --tp %s --pp %lld --dp %s --mbs %s --vpp %lld --recompute full "
                 "--precision fp16 --no-overlap --attention unfused",
                 (long long)layers, tt_csv_str(&csv, i, "hidden"), tt_csv_str(&csv, i, "heads"),
                 tt_csv_str(&csv, i, "gpus"), tt_csv_str(&csv, i, "gbs"), tt_csv_str(&csv, i, "tp"), (long long)pp,
                 tt_csv_str(&csv, i, "dp"), tt_csv_str(&csv, i, "mbs"), (long long)vpp);
        if (!cli_load(&t, args)) continue;
        const pp_work *w = &t.c.work;
        const pp_layout *l = &t.c.layout;
        char row[64];
        snprintf(row, sizeof row, "%sB t%lld p%lld d%lld v%lld", tt_csv_str(&csv, i, "params_b"),
                 (long long)l->tp, (long long)l->pp, (long long)l->dp, (long long)l->vpp);
        pp_time_result r;
        if (!estimate(&t, &r, row)) {
            double hw = pp_hardware_flops_per_step(&w->model, w->gbs, PP_RC_FULL);
            double meas = hw / (tt_csv_num(&csv, i, "tflops_per_gpu_meas") * 1e12 * (double)w->gpus);
            acc_add(&acc, row, r.step_time_s, meas);
            breakdown(&r);
            reproduce(&t, acc.name, i == 0, r.step_time_s);
        }
        tt_free(&t);
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
    static tt_cli t;
    bool first = true;
    for (int i = 0; i < csv.n_rows; i++) {
        for (int present = 0; present < 2; present++) {
            const char *name = tt_csv_str(&csv, i, "model");
            /* "interleaved (v=3) for 175B/530B" */
            int vpp = (!strcmp(name, "175B") || !strcmp(name, "530B")) ? 3 : 1;
            char args[1024];
            snprintf(args, sizeof args,
                     "--layers %s --hidden %s --heads %s --seq 2048 --vocab 51200 --gpu a100-80gb --gpus %s "
                     "--gpus-per-node 8 --gbs %s --tp %s --pp %s --dp 1 --mbs %s --vpp %d --recompute %s%s "
                     "--precision fp16 --no-overlap --attention unfused",
                     tt_csv_str(&csv, i, "layers"), tt_csv_str(&csv, i, "hidden"), tt_csv_str(&csv, i, "heads"),
                     tt_csv_str(&csv, i, "gpus"), tt_csv_str(&csv, i, "gbs"), tt_csv_str(&csv, i, "tp"),
                     tt_csv_str(&csv, i, "pp"), tt_csv_str(&csv, i, "mbs"), vpp, present ? "selective" : "full",
                     present ? " --sp" : "");
            if (!cli_load(&t, args)) continue;
            char row[64];
            snprintf(row, sizeof row, "%s %s", name, present ? "sp+selective" : "full recompute");
            pp_time_result r;
            if (!estimate(&t, &r, row)) {
                double meas = tt_csv_num(&csv, i, present ? "iter_s_sp_selective_meas" : "iter_s_full_recompute_meas");
                acc_add(&acc, row, r.step_time_s, meas);
                breakdown(&r);
                if (present) {
                    double mfu = tt_csv_num(&csv, i, "mfu_meas");
                    printf("#   MFU predicted %.3f published %.3f\n", r.mfu, mfu);
                }
                reproduce(&t, acc.name, first, r.step_time_s);
                first = false;
            }
            tt_free(&t);
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
    static tt_cli t;
    for (int i = 0; i < csv.n_rows; i++) {
        const char *ex = tt_csv_str(&csv, i, "experiment");
        bool sp = strstr(ex, "sequence_parallel") || strstr(ex, "_sp");
        const char *rc = strstr(ex, "full") ? "full" : strstr(ex, "selective") ? "selective" : "none";
        char args[1024];
        /* the 22B model of Table 4 on one node of 8, tp 8, micro-batch 4 */
        snprintf(args, sizeof args,
                 "--layers 48 --hidden 6144 --heads 64 --seq 2048 --vocab 51200 --gpu a100-80gb --gpus 8 "
                 "--gpus-per-node 8 --gbs 4 --tp 8 --mbs 4 --recompute %s%s --precision fp16 --no-overlap "
                 "--attention unfused",
                 rc, sp ? " --sp" : "");
        if (!cli_load(&t, args)) continue;
        const pp_work *w = &t.c.work;
        const pp_layout *l = &t.c.layout;
        /* the layer's own times under the work's options (pp_time_opts_default of the CLI's work) */
        pp_time_ctx c;
        pp_time_ctx_init(&c, w, NULL);
        pp_time_layer ly;
        pp_time_layer_get(&c, l, &ly);
        double fwd = ly.fwd_compute_s + ly.fwd_tp_s;
        double bwd = ly.bwd_compute_s + ly.bwd_tp_s;
        if (l->recompute == PP_RC_FULL) bwd += fwd;
        if (l->recompute == PP_RC_SELECTIVE) bwd += ly.sel_recompute_s;
        char row[80];
        snprintf(row, sizeof row, "%s fwd", ex);
        acc_add(&acc, row, fwd * 1e3, tt_csv_num(&csv, i, "forward_ms_meas"));
        snprintf(row, sizeof row, "%s bwd", ex);
        acc_add(&acc, row, bwd * 1e3, tt_csv_num(&csv, i, "backward_ms_meas"));
        pp_time_result r;
        if (i == 0 && !estimate(&t, &r, ex)) reproduce(&t, acc.name, true, r.step_time_s);
        else printf("#   parplan check %s\n", t.shown);
        tt_free(&t);
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
    static tt_cli t;
    for (int i = 0; i < csv.n_rows; i++) {
        int64_t layers = (int64_t)tt_csv_num(&csv, i, "layers"), tp = (int64_t)tt_csv_num(&csv, i, "tp");
        int64_t pp = (int64_t)tt_csv_num(&csv, i, "pp");
        /* Not in the table: micro-batch 1 and, with PP, the interleaved schedule with the most
         * model chunks (one layer per chunk when that divides; the usual recipe). Megatron-Core
         * with TE: --sp and --tp-comm-overlap with TP, the distributed optimizer, overlap on. */
        char args[1024];
        snprintf(args, sizeof args,
                 "--layers %lld --hidden %s --heads %s --seq 4096 --vocab 131072 --gpu h100-sxm --gpus %s "
                 "--gpus-per-node 8 --gbs %s --tp %lld --pp %lld --dp %s --mbs 1 --vpp %lld --dist-opt%s",
                 (long long)layers, tt_csv_str(&csv, i, "hidden"), tt_csv_str(&csv, i, "heads"),
                 tt_csv_str(&csv, i, "gpus"), tt_csv_str(&csv, i, "gbs"), (long long)tp, (long long)pp,
                 tt_csv_str(&csv, i, "dp"), (long long)(pp > 1 ? layers / pp : 1),
                 tp > 1 ? " --sp --tp-comm-overlap" : "");
        if (!cli_load(&t, args)) continue;
        const pp_work *w = &t.c.work;
        const pp_layout *l = &t.c.layout;
        char row[64];
        snprintf(row, sizeof row, "%sB t%lld p%lld d%lld v%lld", tt_csv_str(&csv, i, "params_b"),
                 (long long)l->tp, (long long)l->pp, (long long)l->dp, (long long)l->vpp);
        pp_time_result r;
        if (!estimate(&t, &r, row)) {
            double meas = r.model_flops / (tt_csv_num(&csv, i, "tflops_per_gpu_meas") * 1e12 * (double)w->gpus);
            acc_add(&acc, row, r.step_time_s, meas);
            breakdown(&r);
            reproduce(&t, acc.name, i == 0, r.step_time_s);
        }
        tt_free(&t);
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
    static tt_cli t;
    for (int i = 0; i < csv.n_rows; i++) {
        /* BLOOM-176B (the catalog's, vocabulary as trained: 250680) on Jean Zay: DeepSpeed ZeRO-1,
         * full recompute, unfused attention, the pipeline engine's blocking schedule */
        char args[1024];
        snprintf(args, sizeof args,
                 "--model bloom-176b --vocab 250680 --gpu @SRC@/tests/data/gpus/a100-80gb-jeanzay.yaml --gpus %s "
                 "--gpus-per-node 8 --gbs %s --tp %s --pp %s --dp %s --mbs %s --framework deepspeed --zero 1 "
                 "--recompute full --attention unfused --no-overlap",
                 tt_csv_str(&csv, i, "gpus"), tt_csv_str(&csv, i, "gbs"), tt_csv_str(&csv, i, "tp"),
                 tt_csv_str(&csv, i, "pp"), tt_csv_str(&csv, i, "dp"), tt_csv_str(&csv, i, "mbs"));
        if (!cli_load(&t, args)) continue;
        const pp_work *w = &t.c.work;
        pp_time_result r;
        if (!estimate(&t, &r, "bloom")) {
            acc_add(&acc, "176B t4 p12 d8 mbs2", r.step_time_s, tt_csv_num(&csv, i, "iter_s_meas"));
            breakdown(&r);
            double hw = pp_hardware_flops_per_step(&w->model, w->gbs, PP_RC_FULL) / r.step_time_s / (double)w->gpus / 1e12;
            printf("#   hardware TFLOP/s per GPU predicted %.1f published %.2f\n", hw,
                   tt_csv_num(&csv, i, "tflops_per_gpu_meas"));
            reproduce(&t, acc.name, i == 0, r.step_time_s);
        }
        tt_free(&t);
    }
    double mape = acc_mape(&acc);
    printf("# %s: MAPE %.1f%% over %d rows (iteration time)\n", acc.name, 100 * mape, acc.n);
    /* Target 10%: with the options a user has the DP reduction is bf16 (the time model's DeepSpeed
     * default, the ZeRO optimizer's); BLOOM's BF16_Optimizer reduced its fp32 buffer
     * (deepspeed/runtime/bf16_optimizer.py get_grads_for_reduction), twice the bytes, which no
     * option says (pp_time_opts_default sees no ZeRO stage). Not tuned away: reported. */
    if (mape > 0.10)
        printf("# TARGET NOT MET: MAPE %.1f%% > 10%% with the CLI's options (DeepSpeed's BF16_Optimizer reduces fp32 "
               "gradients, which the options cannot express; with fp32 reduction the model was at 9.9%%)\n",
               100 * mape);
    tap_ok(acc.n == 1 && mape <= 0.12, "BLOOM-176B (A100): MAPE %.1f%% <= 12%% (target 10%%)", 100 * mape);
}

int main(void)
{
    table_sc21();
    table_korthikanti();
    table_korthikanti_layer();
    table_readme_h100();
    table_bloom();
    return tap_done();
}
