/* libFuzzer harness: hardware profiles (pp_profile_load_file, planner/model/profile.c). The loader
 * takes a path, so each input is written to one scratch file per process first. An accepted
 * profile must answer the time model's queries (GEMM TFLOP/s, NCCL bus bandwidth, at measured
 * and unmeasured shapes) with finite, non-negative numbers, and the time model using it must
 * stay finite. */
#include <unistd.h>

#include "fuzz_common.h"
#include "pp_profile.h"

static char scratch[256];
static pp_model fuzz_model;
static pp_gpu fuzz_gpu;

static void scratch_remove(void)
{
    if (scratch[0]) unlink(scratch);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/parplan-fuzz-profile-%ld.yaml", dir && *dir ? dir : "/tmp",
             (long)getpid());
    atexit(scratch_remove);
    fuzz_model_default(&fuzz_model);
    fuzz_gpu_default(&fuzz_gpu);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!scratch[0]) LLVMFuzzerInitialize(NULL, NULL);
    FILE *f = fopen(scratch, "wb");
    FUZZ_CHECK(f != NULL, "cannot write %s", scratch);
    if (size) FUZZ_CHECK(fwrite(data, 1, size, f) == size, "short write");
    FUZZ_CHECK(fclose(f) == 0, "close");

    pp_profile p;
    memset(&p, 0, sizeof p);
    pp_error err = {0};
    pp_status st = pp_profile_load_file(&p, scratch, &err);
    if (st != PP_OK) {
        fuzz_check_error(st, &err, "pp_profile_load_file");
        FUZZ_CHECK(err.file[0], "a file error without the file name");
        /* Like the CLI (src/cli.c), nothing is freed after a failed load: the loader must not
         * leave anything allocated (LeakSanitizer checks in the fuzz build). */
        return 0;
    }
    FUZZ_CHECK(p.n_gemm >= 0 && p.n_attn >= 0 && p.n_layer >= 0 && p.n_nccl >= 0, "negative counts");
    FUZZ_CHECK(fuzz_finite_nonneg(p.copy_gbs) && fuzz_finite_nonneg(p.mul_gbs), "bandwidth %g %g", p.copy_gbs,
               p.mul_gbs);
    /* Queries at every measured shape and at shapes around and between them. */
    static const int64_t dims[] = {1, 64, 1024, 4096, 8192, 65536, 1 << 20};
    for (int dt = 0; dt < PP_DT_COUNT; dt++)
        for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
            double t = pp_profile_gemm_tflops(&p, (pp_dtype)dt, dims[i], dims[(i + 2) % 7], dims[(i + 4) % 7]);
            FUZZ_CHECK(fuzz_finite_nonneg(t), "gemm_tflops(%d, %lld) = %g", dt, (long long)dims[i], t);
        }
    for (int i = 0; i < p.n_gemm; i++) {
        const pp_prof_gemm *g = &p.gemm[i];
        double t = pp_profile_gemm_tflops(&p, g->dtype, g->m, g->n, g->k);
        FUZZ_CHECK(fuzz_finite_nonneg(t), "gemm_tflops at measured shape %d = %g", i, t);
    }
    static const double bytes[] = {0, 1, 1e3, 1e6, 1e9, 1e12, 1e15};
    static const int64_t ranks[] = {1, 2, 8, 64, 1000000};
    for (int op = 0; op < PP_COLL_COUNT; op++)
        for (size_t r = 0; r < sizeof ranks / sizeof ranks[0]; r++)
            for (size_t b = 0; b < sizeof bytes / sizeof bytes[0]; b++) {
                double bw = pp_profile_busbw_gbs(&p, (pp_coll)op, ranks[r], bytes[b]);
                FUZZ_CHECK(fuzz_finite_nonneg(bw), "busbw(%d, %lld, %g) = %g", op, (long long)ranks[r], bytes[b], bw);
            }
    for (int i = 0; i < p.n_nccl; i++) {
        const pp_prof_nccl *n = &p.nccl[i];
        double bw = pp_profile_busbw_gbs(&p, n->op, n->ranks, n->bytes);
        FUZZ_CHECK(fuzz_finite_nonneg(bw), "busbw at measured point %d = %g", i, bw);
    }
    fuzz_exercise_work(&fuzz_model, &fuzz_gpu, &p);
    pp_profile_free(&p);
    return 0;
}
