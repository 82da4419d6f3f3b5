/* Step-time validation against published MoE and FP8 training throughput (tests/data/validation).
 *
 * How close does the UNCALIBRATED model come (catalog GPUs, the model-form constants of
 * planner/cost/time.c, no --profile)? Every row is the `parplan check` command line a user would type
 * for the published run (model from the catalog, or a YAML under tests/data/ where the benchmark
 * ran a proxy shape; --gpu, --gpus, --gpus-per-node 8, --gbs, --seq, the layout, --precision
 * bf16|fp8, the recipe's --dist-opt, --sp, --tp-comm-overlap, --recompute/--recompute-modules,
 * --moe-grouped-gemm, --ep-overlap, --capacity-factor where the recipe drops tokens), parsed by the
 * CLI's own option table (src/cli.c is compiled in). Per row it prints the command, predicted and
 * published tokens/s/GPU, the error, predicted and published model TFLOP/s/GPU (with each side's
 * FLOPs per token: the publications count FLOPs their own way) and the largest terms of the
 * predicted step; per table the MAPE of tokens/s/GPU. Then, for the published BF16/FP8 pairs (same
 * model and layout), the predicted against the published FP8 speed-up.
 *
 * Tables (each CSV's first comment line names its source; the comments say what was assumed):
 *   moe_megatron_bridge.csv      NeMo Megatron-Bridge performance summary, MoE rows, H100 + B200
 *   dgxc_benchmarking_h100.csv   NVIDIA/dgxc-benchmarking READMEs, BF16/FP8 pairs on H100 (dense + MoE)
 *   fp8_nemo_2502.csv            NeMo 25.02 performance summary, FP8, B200 (+ one H100 row)
 *   moe_megatron_core_readme.csv Megatron-Core MoE README (r0.8): Mixtral 8x7B, H100, BF16
 *   moe_deepseek_v3_report.csv   DeepSeek-V3 technical report: 2048 H800, FP8 (derived rate)
 *
 * What is asserted: the mechanics (every row parses, gives a finite positive prediction; rows
 * marked `blocked` are still refused with the reason the CSV gives, so that fixing the gap fails
 * this test until the row is turned on), the count of rows the memory model calls OUT OF MEMORY
 * where the published run ran (memory-model findings, printed; the count may only fall), and a
 * loose MAPE bound per table, chosen from what the uncalibrated model is known to leave out for
 * that table (see `tables` below), not a target. No model constant is tuned to these tables. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_memory.h"
#include "pp_time.h"
#include "tap.h"
#include "time_test.h"
#include "validation_cli.h"

/* DGX H100 / DGX B200 / H800 nodes of every source */
#define GPUS_PER_NODE 8
#define MAX_RESULTS 64

typedef struct {
    const char *file;    /* tests/data/validation/ */
    const char *name;
    double mape_bound;   /* loose: the model's known omissions for this table, not a target */
    int max_oom;         /* rows the memory model calls OOM although they ran (may only fall) */
    const char *why;     /* why this bound */
} table_spec;

static const table_spec tables[] = {
    /* Within 60% on average. Qwen3-30B-A3B on the same 8 B200 runs 2.9x faster per GPU at
     * micro-batch 4 (26.04.01) than at micro-batch 1 (25.11): at micro-batch 1 the host sets the
     * pace, which the model prices as a dropless TransformerEngine MoE layer's 8.6 ms per
     * micro-batch (time.c, MOE_TE_HOST_LAYER_S, taken from the 26.02 B200 row, which this table
     * does not hold): the 25.11 B200 row is predicted within 4% and Qwen3-235B on 256 B200 within
     * 18% (they were +252% and +65% at a launch floor of 0.12 ms per layer). What is left: the
     * gpt-oss-120b rows run 1.4-2.2x slower than predicted at micro-batch 1 and 4 alike (so per
     * token, not per micro-batch: not found); the 25.11 Qwen3-30B H100 row ran at 5275 tokens/s/GPU
     * where the same model and PP 2 x VP 12 layout ran 9058 in 26.02.01, a release's regression
     * (performance-summary-archive.md); the DeepEP/HybridEP rows are transcribed with the alltoall
     * dispatcher (parplan now has --moe-dispatcher flex; this table's rows are as first
     * transcribed). The recipes' bf16 gradient reduction is (--grad-reduce-bf16): with it 1 row,
     * not 4, is called out of memory. */
    /* 4 OOM rows. gpt-oss-120b on 64 H100 (r25.11); Qwen3-30B on 16 H100 (r25.11), just above
     * 79.6 GiB since MoE's memory outside the allocator (measured on 1 and 4 x H200: 0.4 GiB of
     * kernels, 0.5 GiB per EP peer) is part of the reserve; and gpt-oss-120b on 64 B200 (r25.11,
     * r26.04.01), whose 201k-token vocabulary makes the fp32 logits block that dropless MoE keeps
     * room for (memory.c, measured as an OOM on 4 x H200) large. The recipes' allocator setting
     * is not in the table: with --expandable-segments these two are not charged. */
    {"moe_megatron_bridge.csv", "megatron-bridge MoE", 0.60, 4,
     "within 60%: gpt-oss-120b 1.4-2.2x slower per token than predicted (not found), the 25.11 "
     "Qwen3-30B H100 release's regression (1.7x the 26.02.01 rate), DeepEP/HybridEP rows as alltoall"},
    /* The dense rows are the Megatron-Core stack that the Megatron README table checks (MAPE 14.6%,
     * bound 16% there); the MoE and FP8 rows add token-dropping dispatch and the FP8 casts, priced
     * from first principles, whose FP8 speed-ups spread by up to 14% on these pairs. */
    /* 7 OOM rows (6 dense, and Grok-1 since MoE's outside-allocator memory is in the reserve):
     * the memory model is conservative for these runs at scale (tests/data/published) */
    {"dgxc_benchmarking_h100.csv", "dgxc-benchmarking H100", 0.25, 7,
     "the README table's 16% for the dense stack plus the FP8 speed-up spread of these pairs"},
    /* B200's catalog constants are datasheet estimates (gemm_eff 0.75 not measured here; FP8 at
     * twice that rate, the H200 measurement's ratio), and 64K-token context parallelism prices
     * the attention at the H100's fused-attention efficiency. */
    /* 2 OOM rows; one of them Llama 3.1 405B on 128 B200 (pp 8 x vpp 8, evaluated since 126 layers
     * take the balanced split by virtual stage): stage 1 needs 194 GiB of 179, 131 GiB of it the
     * FP8 model state of 12.7e9 parameters per rank. */
    {"fp8_nemo_2502.csv", "nemo 25.02 FP8", 0.30, 2,
     "unmeasured B200 GEMM efficiency (bf16 and FP8) and H100 fused-attention efficiency at 64K"},
    /* One row: the TFLOP/s headline paired with the README's mapping table (its CSV says why). */
    {"moe_megatron_core_readme.csv", "megatron-core MoE README", 0.30, 0,
     "one row, the headline paired with the mapping table; the Mixtral stack of the README table"},
    /* One row, an average over the whole pre-training (batch ramp, any downtime). DeepSeek-V3's
     * dispatch sends each token to at most 4 of the 8 EP nodes, once per node (forwarded over
     * NVLink), in FP8 (sec. 2.1.2, 3.2.2, 3.3); each roughly halves the IB bytes that the model
     * prices for the all-to-all (30% of the predicted step). The first two are
     * --moe-dispatcher flex with the model's router groups (tests/data/published, paper-dsv3-01:
     * +68.6% -> +24.8%); this table's row is as first transcribed, with the all-to-all. */
    {"moe_deepseek_v3_report.csv", "deepseek-v3 report", 0.50, 0,
     "node-limited, per-node deduplicated FP8 dispatch (each about halves the modelled IB bytes) "
     "and DualPipe's bubble are not expressible; the rate averages the whole run"},
};

typedef struct {
    char label[96], pair[48], precision[16];
    double pred, meas; /* tokens/s/GPU */
    bool done;
} row_result;

static row_result results[MAX_RESULTS];
static int n_results;

static const char *cli_precision(const char *published)
{
    return strstr(published, "FP8") ? "fp8" : "bf16"; /* FP8, FP8-CS, FP8-MX, MXFP8 */
}

/* The `parplan check` options of row i. */
static void row_args(const tt_csv *c, int i, char *a, size_t n)
{
    size_t k = (size_t)snprintf(
        a, n,
        "--model %s --gpu %s --gpus %s --gpus-per-node %d --gbs %s --seq %s --tp %s --pp %s --cp %s --vpp %s "
        "--ep %s --mbs %s --precision %s --recompute %s",
        tt_csv_str(c, i, "model"), tt_csv_str(c, i, "gpu"), tt_csv_str(c, i, "gpus"), GPUS_PER_NODE,
        tt_csv_str(c, i, "gbs"), tt_csv_str(c, i, "seq"), tt_csv_str(c, i, "tp"), tt_csv_str(c, i, "pp"),
        tt_csv_str(c, i, "cp"), tt_csv_str(c, i, "vp"), tt_csv_str(c, i, "ep"), tt_csv_str(c, i, "mbs"),
        cli_precision(tt_csv_str(c, i, "precision")), tt_csv_str(c, i, "recompute"));
    const char *etp = tt_csv_str(c, i, "etp");
    if (*etp && k < n) k += (size_t)snprintf(a + k, n - k, " --etp %s", etp);
    const char *mods = tt_csv_str(c, i, "recompute_modules");
    if (*mods && k < n) {
        k += (size_t)snprintf(a + k, n - k, " --recompute-modules ");
        for (const char *p = mods; *p && k + 1 < n; p++) a[k++] = *p == '/' ? ',' : *p; /* '/' in the CSV */
        a[k] = 0;
    }
    if (tt_csv_num(c, i, "capacity_factor") > 0 && k < n)
        k += (size_t)snprintf(a + k, n - k, " --capacity-factor %s", tt_csv_str(c, i, "capacity_factor"));
    char flags[TT_CSV_CELL];
    snprintf(flags, sizeof flags, "%s", tt_csv_str(c, i, "flags"));
    for (char *f = strtok(flags, " "); f && k < n; f = strtok(NULL, " "))
        k += (size_t)snprintf(a + k, n - k, " --%s", f);
}

/* The published rate in tokens/s/GPU: as printed, or from the published step time (seq x GBS /
 * step / GPUs, the dgxc READMEs' formula), or from published model TFLOP/s with the model FLOPs
 * per token (equal to Megatron's count for the README's Mixtral row: see its CSV). */
static double published_tokens(const tt_csv *c, int i, const pp_work *w, const char **how)
{
    double tok = tt_csv_num(c, i, "tokens_per_gpu_meas"), step = tt_csv_num(c, i, "step_s_meas");
    double tf = tt_csv_num(c, i, "tflops_per_gpu_meas");
    double per_token = pp_model_flops_per_step(&w->model, w->gbs) / ((double)w->gbs * (double)w->model.seq);
    if (tok > 0) {
        *how = "published";
        return tok;
    }
    if (step > 0) {
        *how = "seq x GBS / published step / GPUs";
        return (double)w->model.seq * (double)w->gbs / step / (double)w->gpus;
    }
    *how = "published TFLOP/s / model FLOPs per token";
    return tf * 1e12 / per_token;
}

/* The three largest terms of the predicted step. */
typedef struct {
    const char *name;
    double s;
} step_term;

static void largest_terms(const pp_time_result *r)
{
    step_term t[] = {
        {"compute", r->compute_s}, {"recompute", r->recompute_s}, {"tp", r->tp_comm_s},
        {"cp", r->cp_comm_s},      {"ep", r->ep_comm_s},          {"pp", r->pp_comm_s},
        {"bubble", r->bubble_s},   {"dp", r->dp_comm_s},          {"zero", r->zero_gather_s},
        {"optimizer", r->optimizer_s},
    };
    int n = (int)(sizeof t / sizeof t[0]);
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (t[b].s > t[a].s) {
                step_term x = t[a];
                t[a] = t[b];
                t[b] = x;
            }
    printf("#   step %.4g s: %s %.4g s (%.0f%%), %s %.4g s (%.0f%%), %s %.4g s (%.0f%%); MFU %.3f\n",
           r->step_time_s, t[0].name, t[0].s, 100 * t[0].s / r->step_time_s, t[1].name, t[1].s,
           100 * t[1].s / r->step_time_s, t[2].name, t[2].s, 100 * t[2].s / r->step_time_s, r->mfu);
}

static void run_table(const table_spec *ts)
{
    static tt_csv csv;
    static tt_cli t;
    char path[1024];
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/data/validation/%s", src ? src : ".", ts->file);
    if (tt_csv_load_path(&csv, path) || csv.n_rows == 0) {
        tap_ok(0, "read %s", path);
        return;
    }
    printf("# ---- %s (%s): %d rows\n", ts->name, ts->file, csv.n_rows);
    double sum_abs = 0, sum_abs_tf = 0;
    int n = 0, n_tf = 0, n_oom = 0, n_open = 0;
    bool first = true;
    for (int i = 0; i < csv.n_rows; i++) {
        const char *label = tt_csv_str(&csv, i, "label");
        const char *blocked = tt_csv_str(&csv, i, "blocked");
        char args[1536];
        row_args(&csv, i, args, sizeof args);
        pp_error err;
        bool parsed = cli_try(&t, args, &err);
        if (*blocked) {
            /* pp-vpp: the CSV says why (a pipeline layout parplan cannot express) */
            bool as_said = !parsed && !strcmp(blocked, "pp-vpp") && strstr(err.msg, "does not divide the");
            printf("# %-30s BLOCKED (%s): parplan check %s\n#   -> %s\n", label, blocked, t.shown,
                   parsed ? "now parses" : err.msg);
            tap_ok(as_said, "%s: %s", label,
                   as_said ? "still refused (pipeline layout not expressible); not in the MAPE"
                           : "no longer refused as the CSV says: drop its 'blocked' mark to evaluate it");
            if (parsed) tt_free(&t);
            continue;
        }
        n_open++;
        if (!parsed) {
            tap_ok(0, "%s: parplan check %s: %s", label, t.shown, err.msg);
            continue;
        }
        const pp_work *w = &t.c.work;
        pp_time_result r;
        pp_mem_result mem;
        pp_error terr = {0}, merr = {0};
        bool timed = pp_time_estimate(w, &t.c.layout, &r, &terr) == PP_OK;
        bool memd = pp_memory_estimate(w, &t.c.layout, &mem, &merr) == PP_OK;
        double gpus = (double)w->gpus;
        double pred = timed ? r.tokens_per_s / gpus : NAN;
        const char *how = "";
        double meas = published_tokens(&csv, i, w, &how);
        tap_ok(timed && memd && isfinite(pred) && pred > 0 && meas > 0, "%s: predicts %.0f tokens/s/GPU%s%s", label,
               pred, timed ? "" : terr.msg, memd ? "" : merr.msg);
        if (!timed || !memd) {
            tt_free(&t);
            continue;
        }
        double e = (pred - meas) / meas;
        sum_abs += fabs(e);
        n++;
        printf("# %-30s predicted %9.1f tokens/s/GPU, published %9.1f (%s), error %+6.1f%%\n", label, pred, meas,
               how, 100 * e);
        double tf_pub = tt_csv_num(&csv, i, "tflops_per_gpu_meas");
        double fpt = r.model_flops / ((double)w->gbs * (double)w->model.seq);
        if (tf_pub > 0) {
            double ef = (r.model_tflops_per_gpu - tf_pub) / tf_pub;
            sum_abs_tf += fabs(ef);
            n_tf++;
            printf("#   model TFLOP/s/GPU predicted %.1f published %.1f (error %+.1f%%); FLOPs per token: "
                   "parplan %.4g, the publication's %.4g (ratio %.3f)\n",
                   r.model_tflops_per_gpu, tf_pub, 100 * ef, fpt, tf_pub * 1e12 / meas, tf_pub * 1e12 / meas / fpt);
        } else {
            printf("#   model TFLOP/s/GPU predicted %.1f (none published); parplan's FLOPs per token %.4g\n",
                   r.model_tflops_per_gpu, fpt);
        }
        largest_terms(&r);
        const pp_mem_stage *ls = &mem.stages[mem.largest_stage];
        printf("#   memory: largest stage %lld needs %.1f GiB (peak %.1f + reserved %.1f) of %.1f: %s\n",
               (long long)ls->stage, (ls->peak_bytes + ls->reserved_bytes) / 1073741824.0,
               ls->peak_bytes / 1073741824.0, ls->reserved_bytes / 1073741824.0,
               mem.capacity_bytes / 1073741824.0, mem.fits ? "fits" : "OUT OF MEMORY");
        if (!mem.fits) {
            n_oom++;
            printf("#   MEMORY-MODEL FINDING: the published run ran, parplan calls it OOM: %s\n", mem.why);
        }
        reproduce(&t, ts->name, first, r.step_time_s);
        first = false;
        if (n_results < MAX_RESULTS) {
            row_result *rr = &results[n_results++];
            snprintf(rr->label, sizeof rr->label, "%s", label);
            snprintf(rr->pair, sizeof rr->pair, "%s", tt_csv_str(&csv, i, "pair"));
            snprintf(rr->precision, sizeof rr->precision, "%s", cli_precision(tt_csv_str(&csv, i, "precision")));
            rr->pred = pred;
            rr->meas = meas;
            rr->done = true;
        }
        tt_free(&t);
    }
    double mape = n ? sum_abs / n : NAN;
    printf("# %s: MAPE %.1f%% over %d rows (tokens/s/GPU, uncalibrated)", ts->name, 100 * mape, n);
    if (n_tf) printf("; model TFLOP/s/GPU MAPE %.1f%% over %d rows (FLOP conventions differ)", 100 * sum_abs_tf / n_tf, n_tf);
    printf("\n#   bound %.0f%%: %s\n", 100 * ts->mape_bound, ts->why);
    tap_ok(n == n_open && n > 0 && mape <= ts->mape_bound, "%s: tokens/s/GPU MAPE %.1f%% <= %.0f%% over %d rows",
           ts->name, 100 * mape, 100 * ts->mape_bound, n);
    tap_ok(n_oom <= ts->max_oom, "%s: %d rows predicted OUT OF MEMORY where the published run ran (known: %d)",
           ts->name, n_oom, ts->max_oom);
}

/* Published BF16/FP8 pairs: the same model and layout in both precisions. */
static void fp8_speedups(void)
{
    int pairs = 0;
    double sum_abs = 0;
    bool all_faster = true;
    printf("# ---- FP8 over BF16 speed-up, published pairs (same model and layout)\n");
    for (int a = 0; a < n_results; a++) {
        const row_result *bf = &results[a];
        if (!bf->done || !*bf->pair || strcmp(bf->precision, "bf16")) continue;
        for (int b = 0; b < n_results; b++) {
            const row_result *f8 = &results[b];
            if (!f8->done || strcmp(f8->pair, bf->pair) || strcmp(f8->precision, "fp8")) continue;
            double sp_pred = f8->pred / bf->pred, sp_pub = f8->meas / bf->meas;
            double e = (sp_pred - sp_pub) / sp_pub;
            printf("# %-18s FP8/BF16 speed-up predicted %.3fx published %.3fx (error %+.1f%%)\n", bf->pair, sp_pred,
                   sp_pub, 100 * e);
            sum_abs += fabs(e);
            pairs++;
            if (!(sp_pred > 1.0)) all_faster = false;
        }
    }
    double m = pairs ? sum_abs / pairs : NAN;
    printf("# FP8 speed-up: mean absolute error %.1f%% over %d pairs\n", 100 * m, pairs);
    /* Every published pair is faster in FP8; the model must say so. The speed-up is a ratio in
     * which the GPU's constants cancel: what is left is the share of the step spent in the linear
     * GEMMs (FP8 at twice the rate, plus the casts). 20% leaves room for what it does not price:
     * TE's amax/scaling kernels, FP8 weight transposes, CUDA graphs in one precision only (the
     * Llama 4 FP8 run). */
    tap_ok(pairs == 6 && all_faster && m <= 0.20, "FP8/BF16 speed-up: %d pairs, all predicted faster, mean |error| %.1f%% <= 20%%",
           pairs, 100 * m);
}

int main(void)
{
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) run_table(&tables[i]);
    fp8_speedups();
    return tap_done();
}
