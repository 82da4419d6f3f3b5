/* Golden outputs: each format for one layout (Llama-2-7B on 2 nodes of 8 H100, tp 2, pp 2,
 * dp 4, sequence parallel, distributed optimizer, selective recompute; torchtitan: FSDP2 ZeRO-3 in
 * place of the distributed optimizer), plus the device-local
 * Megatron script of an ILP layout, compared byte for byte with tests/frameworks/golden/.
 * A change of output must be reviewed: PARPLAN_UPDATE_GOLDEN=1 rewrites the files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "fixtures.h"
#include "readfile.h"

static char golden_dir[1024];

static void compare(const char *name, const char *got)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", golden_dir, name);
    if (getenv("PARPLAN_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "wb");
        if (f) {
            fputs(got, f);
            fclose(f);
        }
        tap_ok(f != NULL, "%s rewritten", name);
        return;
    }
    char *want = tc_read_file(path, NULL);
    if (!want) {
        tap_ok(0, "%s: golden file missing (%s)", name, path);
        return;
    }
    bool same = !strcmp(want, got);
    if (!same) {
        /* first differing line */
        const char *a = want, *b = got;
        int line = 1;
        while (*a && *a == *b) {
            if (*a == '\n') line++;
            a++, b++;
        }
        tap_diag("%s differs from line %d: want '%.80s' got '%.80s'", name, line, a, b);
    }
    tap_ok(same, "%s matches the golden file", name);
    free(want);
}

int main(void)
{
    const char *src = getenv("PARPLAN_SOURCE_DIR");
    snprintf(golden_dir, sizeof golden_dir, "%s/tests/frameworks/golden", src ? src : ".");
    pp_work w = fx_work("llama2-7b", 16, 8, 128);
    pp_layout l;
    pp_layout_init(&l);
    l.tp = 2, l.pp = 2, l.sp = true, l.dist_opt = true, l.recompute = PP_RC_SELECTIVE;
    pp_error err = {0};
    if (!tap_ok(pp_layout_validate(&w, &l, &err) == PP_OK, "layout valid (%s)", err.msg)) return tap_done();
    pp_launch_params p;
    pp_launch_params_init(&p);
    p.work = &w, p.layout = &l;
    p.peak_bytes = 30.5 * 1073741824.0, p.reserved_bytes = 3.25 * 1073741824.0;
    p.step_time_s = 6.125, p.samples_per_s = 128 / 6.125;
    const char *names[PP_LAUNCH_COUNT] = {
        [PP_LAUNCH_MEGATRON] = "megatron.sh", [PP_LAUNCH_TORCHRUN] = "torchrun.sh", [PP_LAUNCH_SLURM] = "slurm.sbatch",
        [PP_LAUNCH_DEEPSPEED] = "deepspeed.sh", [PP_LAUNCH_NEMO] = "nemo.yaml", [PP_LAUNCH_TORCHTITAN] = "torchtitan.sh",
        [PP_LAUNCH_TORCHTITAN_TOML] = "torchtitan-toml.sh", [PP_LAUNCH_MEGATRON_BRIDGE] = "megatron-bridge.sh"};
    for (int fmt = 0; fmt < PP_LAUNCH_COUNT; fmt++) {
        pp_launch_params q = p;
        pp_layout lq = l;
        pp_work wq = w;
        if (fmt == PP_LAUNCH_DEEPSPEED) {
            /* DeepSpeed semantics: ZeRO-1 instead of Megatron's distributed optimizer */
            wq.framework = PP_FW_DEEPSPEED;
            lq.dist_opt = false, lq.zero = 1, lq.pp = 1, lq.dp = 0;
            pp_layout_validate(&wq, &lq, &err);
        }
        if (pp_launch_format_framework((pp_launch_format)fmt) == PP_FW_FSDP) {
            /* FSDP2 semantics: ZeRO-3 (fully_shard with reshard after forward) over the dp ranks */
            wq.framework = PP_FW_FSDP;
            lq.dist_opt = false, lq.zero = 3;
            pp_layout_validate(&wq, &lq, &err);
        }
        q.work = &wq, q.layout = &lq;
        pp_status st;
        char *s = fx_render((pp_launch_format)fmt, &q, &err, &st);
        if (tap_ok(st == PP_OK && s, "%s written (%s)", pp_launch_format_names[fmt], err.msg)) compare(names[fmt], s);
        free(s);
    }
    /* the device-local script of the ILP layout used for a real run */
    static int sl[2] = {12, 10}, sr[2] = {2, 0};
    pp_work t = fx_work("tinyllama-1.1b", 2, 2, 16);
    t.attention = PP_ATTN_UNFUSED;
    pp_layout lt;
    pp_layout_init(&lt);
    lt.pp = 2, lt.mbs = 2, lt.dist_opt = true, lt.recompute = PP_RC_FULL;
    lt.stage_layers = sl, lt.stage_recompute = sr;
    tap_ok(pp_layout_validate(&t, &lt, &err) == PP_OK, "ILP layout valid");
    p.work = &t, p.layout = &lt, p.target = PP_TARGET_DEVICE_LOCAL;
    p.peak_bytes = 20.0 * 1073741824.0, p.reserved_bytes = 2.0 * 1073741824.0;
    p.step_time_s = 0.75, p.samples_per_s = 16 / 0.75;
    p.megatron_dir = ".megatron";
    pp_status st;
    char *s = fx_render(PP_LAUNCH_MEGATRON, &p, &err, &st);
    if (tap_ok(st == PP_OK && s, "device-local megatron written (%s)", err.msg)) compare("megatron-device-local.sh", s);
    free(s);
    return tap_done();
}
