/* The probes on a GPU (suite gpu; skipped without one): every probe in its --quick mode exits 0,
 * checks its results (a wrong GEMM, attention, layer or collective makes it exit 1), and the
 * profile it writes loads through the planner's loader with sane figures. `parplan probe` finds
 * and runs parplan-probe. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pp_profile.h"
#include "run.h"
#include "tap.h"

int main(void)
{
    const char *parplan = getenv("PARPLAN");
    const char *probe = getenv("PARPLAN_PROBE_EXE");
    if (!probe || !*probe) return tap_skip_all("the GPU probes were not built (no CUDA toolkit)");
    int gpus = 0;
    {
        char *argv[] = {(char *)probe, "--count", NULL};
        probe_run r = probe_run_cmd(argv, NULL, 60);
        if (r.status == 0) gpus = atoi(r.out);
        probe_run_free(&r);
    }
    if (gpus < 1) return tap_skip_all("no CUDA GPU visible");
    tap_diag("%d GPU(s)", gpus);

    char path[] = "/tmp/pp_probe_gpu_XXXXXX.yaml";
    int fd = mkstemps(path, 5);
    if (fd >= 0) close(fd);
    {
        char *argv[] = {(char *)probe, "all", "--quick", "-q", "-o", path, NULL};
        probe_run r = probe_run_cmd(argv, NULL, 900);
        tap_ok(r.status == 0, "parplan-probe all --quick exits 0 (%d)", r.status);
        if (r.status) tap_diag("stderr: %s", r.err);
        tap_ok(r.out[0] == '#' && strstr(r.out, "\n# gemm") && strstr(r.out, "\n# bandwidth"),
               "the table is '#'-headed with gemm and bandwidth sections");
        tap_ok(!strstr(r.out, "WRONG"), "no wrong result");
        probe_run_free(&r);
    }
    pp_profile p;
    pp_error err;
    memset(&p, 0, sizeof p);
    memset(&err, 0, sizeof err);
    pp_status st = pp_profile_load_file(&p, path, &err);
    tap_ok(st == PP_OK, "the profile loads (%s)", st == PP_OK ? "ok" : err.msg);
    if (st == PP_OK) {
        tap_ok(p.gpu[0] != 0, "gpu: %s", p.gpu);
        int ok = p.n_gemm > 0;
        for (int i = 0; i < p.n_gemm; i++) ok = ok && p.gemm[i].tflops > 0.5 && p.gemm[i].tflops < 5000;
        tap_ok(ok, "%d GEMMs between 0.5 and 5000 TFLOP/s", p.n_gemm);
        tap_ok(p.copy_gbs > 100 && p.copy_gbs < 20000 && p.mul_gbs > 100 && p.mul_gbs < 20000,
               "copy %.0f and mul %.0f GB/s are plausible", p.copy_gbs, p.mul_gbs);
        tap_ok(p.n_attn > 0, "%d attention rows", p.n_attn);
        tap_ok(p.n_layer > 0 && p.layer[0].fwdbwd_ms > p.layer[0].fwd_ms, "%d layer rows, fwd+bwd slower than fwd",
               p.n_layer);
        tap_ok(gpus < 2 || p.n_nccl > 0, "%d nccl rows (%d GPUs)", p.n_nccl, gpus);
        double bw = pp_profile_gemm_tflops(&p, PP_DT_BF16, 2048, 2048, 2048);
        tap_ok(bw > 0, "the time model's GEMM query answers from the profile (%.0f TFLOP/s)", bw);
    }
    pp_profile_free(&p);
    unlink(path);

    /* the moe and mla probes (not in `all`): both expert implementations, their checks, their records */
    {
        char *argv[] = {(char *)probe, "moe", "mla", "--quick", "-q", "-o", path, NULL};
        probe_run r = probe_run_cmd(argv, NULL, 900);
        tap_ok(r.status == 0, "parplan-probe moe mla --quick exits 0 (%d)", r.status);
        if (r.status) tap_diag("stderr: %s", r.err);
        tap_ok(strstr(r.out, "\n# moe") && strstr(r.out, "\n# mla") && !strstr(r.out, "WRONG"),
               "moe and mla sections, no wrong result");
        probe_run_free(&r);
        memset(&p, 0, sizeof p);
        st = pp_profile_load_file(&p, path, &err);
        tap_ok(st == PP_OK && p.n_moe == 2 && p.n_mla == 1, "the profile loads with 2 moe records (loop, grouped) and "
               "1 mla record (%s)", st == PP_OK ? "ok" : err.msg);
        if (st == PP_OK && p.n_moe == 2 && p.n_mla == 1)
            tap_ok(p.moe[0].fwdbwd_ms > p.moe[0].fwd_ms && p.moe[1].grouped && p.mla[0].fwdbwd_ms > p.mla[0].fwd_ms,
                   "fwd+bwd slower than fwd; the second moe record is the grouped one");
        pp_profile_free(&p);
        unlink(path);
    }
    /* fp8 GEMMs where the GPU has them (cc >= 8.9): their check passes and each has its bf16 twin */
    {
        char *argv[] = {(char *)probe, "gemm", "--quick", "--dtype", "bf16,fp8", "-q", NULL};
        probe_run r = probe_run_cmd(argv, NULL, 300);
        tap_ok(r.status == 0 && !strstr(r.out, "WRONG"), "parplan-probe gemm --dtype bf16,fp8 --quick exits 0 (%d)",
               r.status);
        tap_ok(strstr(r.out, "no fp8 on compute capability") || strstr(r.out, "\n  fp8   qkv"),
               "fp8 rows (with their x_bf16) or the note that this GPU has no fp8");
        probe_run_free(&r);
    }

    if (parplan) {
        char *argv[] = {(char *)parplan, "probe", "bandwidth", "-q", "-o", path, NULL};
        probe_run r = probe_run_cmd(argv, NULL, 300);
        tap_ok(r.status == 0, "parplan probe bandwidth runs parplan-probe (%d)", r.status);
        memset(&p, 0, sizeof p);
        tap_ok(pp_profile_load_file(&p, path, &err) == PP_OK && p.copy_gbs > 0, "and its profile loads");
        pp_profile_free(&p);
        probe_run_free(&r);
        unlink(path);
    }
    {
        char *argv[] = {(char *)probe, "bandwidth", "--quick", "--json", NULL};
        probe_run r = probe_run_cmd(argv, NULL, 300);
        tap_ok(r.status == 0 && r.out[0] == '{' && strstr(r.out, "\"copy_gbs\""), "--json prints one JSON document");
        probe_run_free(&r);
    }
    return tap_done();
}
