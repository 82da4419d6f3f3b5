/* Dense tensor-core throughput under a board power limit (pp.h, "power").
 *
 * A power limit below the board's maximum (nvidia-smi -pl; a variant shipped at a lower default
 * limit, such as the 500 W H100 of Meta's Grand Teton hosts) is held by the firmware lowering the
 * SM clock while the GPU draws more than the limit: dense GEMMs, which draw the most, run at the
 * clock the limit sustains. Sweeps that log both clocks see the memory clock stay at its maximum
 * under the cap (github.com/ashalliants/ninfer-3090 pull request 72: an RTX 3090 at a 315 W cap,
 * 9501 MHz in every sample while the SM clock fell), so only the tensor-core rates take this
 * factor (cost/time.c, pp_time_ctx_init) and memory bandwidth is left as the entry gives it. For
 * HBM parts that is an assumption: the abstract of arXiv:2604.11391 (H100 and H200 capped from
 * 200 to 700 W) reports the H200's memory-bound throughput still gaining at high caps.
 *
 * The curve is throughput at P over throughput at the maximum, as a function of P / max. Source:
 * the power traces of Zeus (You, Chung, Chowdhury, "Zeus: Understanding and Optimizing GPU Energy
 * Consumption of DNN Training", NSDI'23; github.com/ml-energy/zeus,
 * examples/research_reproducibility/zeus_nsdi23/trace/summary_power_{v100,a40,rtx6000}.csv):
 * the epoch time of BERT-base fine-tuning on SQuAD, the trace's tensor-core-bound transformer, at
 * every power limit from 100 W to the board's maximum (V100 250 W, A40 300 W, RTX 6000 260 W;
 * 11-14 batch sizes each). Per GPU the median over batch sizes of the speed relative to the
 * maximum, interpolated at P / max; the curve is the mean of the three GPUs:
 *
 *   P / max    V100    A40    RTX 6000   curve
 *     0.4     0.531   0.374    0.445     0.450
 *     0.5     0.689   0.598    0.673     0.653
 *     0.6     0.826   0.800    0.803     0.810
 *     0.7     0.895   0.919    0.877     0.897
 *     0.8     0.939   0.965    0.935     0.946
 *     0.9     0.977   0.991    0.972     0.980
 *     1.0     1       1        1         1
 *
 * (The P100 trace, no tensor cores, loses only 10% at half its power and is left out.) No
 * published sweep of GEMM throughput against the power limit on H100 or A100 with its figures was
 * found; the papers that cap H100s (arXiv:2604.11391, DGEMM 200-700 W; arXiv:2603.16164, LLM
 * continued pre-training) were read only in their abstracts. The check on Hopper is NVIDIA's H100
 * datasheet, which rates the same GH100 die (132 SMs) at 835.5 dense BF16 TFLOP/s as the H100 NVL
 * at 400 W and 989.4 as the SXM at 700 W: 0.844 at 0.571, where the curve gives 0.765. At the
 * Grand Teton H100's 500 of 700 W (0.714) the curve gives 0.904 and the straight line through the
 * two datasheet points 0.896; below about 0.65 of the maximum the curve is likely pessimistic for
 * Hopper. The traces time whole training steps, whose memory-bound kernels a cap slows less than
 * the GEMMs: for GEMMs alone the factor may be a little lower. PP_POWER_MIN_FRAC is the lowest
 * point: a limit below it is refused rather than extrapolated.
 *
 * Checked on Hopper without changing a setting: an H200 at its 700 W limit runs training steps at
 * that limit already (median 672-694 W, SM clock 1635-1838 MHz of its 1980, six one-GPU steps of a
 * Llama block: tests/data/fsdp/longseq_power.csv), so what a lower limit costs is how the
 * tensor cores' power falls with their clock. tools/power/power_curve.py measured that curve on it
 * (tests/data/power/h200_mma.jsonl): a Triton MMA kernel on n of the 132 SMs draws 99.9 + 6.745 n W
 * at 1980 MHz (n <= 80), and from n = 96 on holds the board at its limit by lowering the clock, to
 * 1740 MHz at all 132; per SM that is p(f) ~ f^3.11 over 1740-1980 MHz, and the throughput follows
 * the clock (TFLOP/s per SM per MHz within 1.7%). Extrapolated, a 500 W limit leaves
 * ((490 - 99.9) / (690 - 99.9))^(1 / 3.11) = 0.875 of the 700 W clock, where the curve gives 0.904:
 * within 3%, so the curve is kept (the extrapolation runs 200 MHz below the lowest clock measured).
 * tests/validation/kernels/power.py checks both. So the 500 W limit does not explain the 33
 * published torchtitan rows on the 500 W H100 being predicted fast (mean -11.6%,
 * tests/data/published/runs.csv) beyond those 3%. */
#include "pp.h"

#include <math.h>
#include <stdio.h>

static const double curve_frac[] = {0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};
static const double curve_speed[] = {0.450, 0.653, 0.810, 0.897, 0.946, 0.980, 1.0};
#define CURVE_N ((int)(sizeof curve_frac / sizeof curve_frac[0]))

double pp_power_gemm_factor(double frac)
{
    if (!(frac < 1.0)) return 1.0;
    if (frac <= curve_frac[0]) return curve_speed[0];
    for (int i = 1; i < CURVE_N; i++)
        if (frac <= curve_frac[i]) {
            double t = (frac - curve_frac[i - 1]) / (curve_frac[i] - curve_frac[i - 1]);
            return curve_speed[i - 1] + t * (curve_speed[i] - curve_speed[i - 1]);
        }
    return 1.0;
}

double pp_gpu_gemm_power_factor(const pp_gpu *g)
{
    if (!(g->power_w > 0) || !(g->max_power_w > 0)) return 1.0;
    return pp_power_gemm_factor(g->power_w / g->max_power_w);
}

double pp_gpu_gemm_flops(const pp_gpu *g, pp_dtype dt)
{
    double peak = g->peak_flops[dt];
    if (dt == PP_DT_BF16 && !(peak > 0)) peak = g->peak_flops[PP_DT_FP16];
    return peak * g->gemm_eff * pp_gpu_gemm_power_factor(g);
}

pp_status pp_gpu_power_check(const pp_gpu *g, double power_w, const char *what, pp_error *err)
{
    const char *name = g->name[0] ? g->name : "the GPU";
    if (!isfinite(power_w) || power_w <= 0)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s must be a power limit in W above 0, got %g", what,
                            power_w);
    if (!(g->max_power_w > 0))
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "%s needs the GPU's max_power_w (the power its FLOP/s are rated at), which %s does "
                            "not state",
                            what, name);
    if (power_w > g->max_power_w)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "%s %g W is above %s's maximum power limit of %g W",
                            what, power_w, name, g->max_power_w);
    if (power_w < PP_POWER_MIN_FRAC * g->max_power_w - 1e-9)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "%s %g W is %.0f%% of %s's %g W; the power curve (planner/model/gpu_power.c) is "
                            "measured from %.0f%% (%g W) up",
                            what, power_w, 100.0 * power_w / g->max_power_w, name, g->max_power_w,
                            100.0 * PP_POWER_MIN_FRAC, PP_POWER_MIN_FRAC * g->max_power_w);
    return PP_OK;
}

void pp_gpu_power_describe(const pp_gpu *g, const char *from, char *buf, size_t n)
{
    snprintf(buf, n,
             "GPU at %g W of %g W (%s): dense GEMM throughput x%.2f (power curve of planner/model/gpu_power.c, "
             "from the Zeus NSDI'23 power traces); memory bandwidth as at full power",
             g->power_w, g->max_power_w, from, pp_gpu_gemm_power_factor(g));
}
