/* gemm_rules.c: cuBLASLt's rules for one GEMM's description (gemm_rules.h), pure C. */
#include "gemm_rules.h"

#include <stdio.h>

bool pp_gemm_spec_fp8(const pp_gemm_spec *s) { return s->a_t == PP_E4M3 || s->b_t == PP_E4M3; }

bool pp_gemm_fp8_dims_ok(int64_t m, int64_t n, int64_t k) { return m % 16 == 0 && n % 16 == 0 && k % 16 == 0; }

static const char *elt_name(pp_elt t)
{
    switch (t) {
    case PP_F32: return "fp32";
    case PP_BF16: return "bf16";
    case PP_F16: return "fp16";
    default: return "e4m3";
    }
}

#define REFUSE(...)                                                                               \
    do {                                                                                          \
        if (why && why_n) snprintf(why, why_n, __VA_ARGS__);                                      \
        return 1;                                                                                 \
    } while (0)

/* cuBLAS docs, cublasLtMatmul(), "To use FP8 kernels ...": every rule that the description shows */
static int fp8_rules(const pp_gemm_spec *s, const pp_lt_layout l[4], char *why, size_t why_n)
{
    static const char *const names[4] = {"lda", "ldb", "ldc", "ldd"};
    if (s->a_t != PP_E4M3 || s->b_t != PP_E4M3)
        REFUSE("fp8: A and B must both be e4m3 (A %s, B %s)", elt_name(s->a_t), elt_name(s->b_t));
    if (!s->ta || s->tb) REFUSE("fp8: cuBLASLt wants A transposed and B not (TN) on Ada and Hopper");
    if (s->tf32) REFUSE("fp8: the compute type must be CUBLAS_COMPUTE_32F (not FAST_TF32)");
    if (s->c_t == PP_E4M3)
        REFUSE("fp8: an e4m3 D needs a bf16/fp16 C, a D scale and amax, which this description has not");
    if (s->epilogue) REFUSE("fp8: no epilogue here (bias/GELU epilogues have their own fp8 type rules)");
    if (!pp_gemm_fp8_dims_ok(s->m, s->n, s->k))
        REFUSE("fp8: m, n and k must be multiples of 16 (%lld x %lld x %lld)", (long long)s->m, (long long)s->n,
               (long long)s->k);
    for (int i = 0; i < 4; i++)
        if ((l[i].ld * (int64_t)pp_elt_bytes(l[i].type)) % 16)
            REFUSE("fp8: %s %lld (%s) is not a multiple of 16 bytes", names[i], (long long)l[i].ld,
                   elt_name(l[i].type));
    return 0;
}

int pp_gemm_lt_layouts(const pp_gemm_spec *s, pp_lt_layout out[4], pp_c_arg *c_arg, char *why, size_t why_n)
{
    static const char *const names[4] = {"lda", "ldb", "ldc", "ldd"};
    const bool fp8 = pp_gemm_spec_fp8(s);
    if (why && why_n) why[0] = 0;
    if (s->m < 1 || s->n < 1 || s->k < 1)
        REFUSE("empty GEMM %lld x %lld x %lld", (long long)s->m, (long long)s->n, (long long)s->k);
    /* op(A) is m x k: A itself k x m when transposed; op(B) k x n: B n x k when transposed */
    out[0].rows = s->ta ? s->k : s->m, out[0].cols = s->ta ? s->m : s->k, out[0].ld = s->lda, out[0].type = s->a_t;
    out[1].rows = s->tb ? s->n : s->k, out[1].cols = s->tb ? s->k : s->n, out[1].ld = s->ldb, out[1].type = s->b_t;
    out[2].rows = s->m, out[2].cols = s->n, out[2].ld = s->ldc, out[2].type = s->c_t;
    out[3] = out[2];
    out[3].ld = s->ldd;
    /* column order: ld >= rows (cublasLtMatrixLayoutAttributes_t, CUBLASLT_MATRIX_LAYOUT_LD) */
    for (int i = 0; i < 4; i++)
        if (out[i].ld < out[i].rows)
            REFUSE("%s %lld is under the %lld rows of a column-major %lld x %lld matrix", names[i],
                   (long long)out[i].ld, (long long)out[i].rows, (long long)out[i].rows, (long long)out[i].cols);
    if (!s->has_c && s->beta != 0) REFUSE("beta %g without a C to scale", (double)s->beta);
    /* the scale pointers are read for the types that take them (cublasLtMatmulDescAttributes_t:
     * "If set for an unsupported matrix data, scale, and compute type combination, calling
     * cublasLtMatmul() will return CUBLAS_INVALID_VALUE") */
    if (!fp8 && (s->scale_a || s->scale_b)) REFUSE("A/B scale pointers are for fp8 inputs only");
    if (!fp8 && s->fast_accum) REFUSE("fast accumulation is an fp8 mode");
    if (fp8 && fp8_rules(s, out, why, why_n)) return 1;
    /* In place (C == D) needs C's layout to be D's. For fp8 cuBLASLt 13 refuses C == D in
     * cublasLtMatmul even then (CUBLAS_STATUS_NOT_SUPPORTED after a successful heuristic query:
     * openxla/xla#34912, "since cuda 13.0, cublasLT adds a check that enforce gemm with same C and D
     * pointer to have same descs"; PyTorch's scaled_gemm passes a dummy C that "is not result_ptr
     * or nullptr"): without a C, beta is 0 and C is never read, so another valid pointer goes. */
    if (s->has_c) *c_arg = PP_C_ARG_C;
    else *c_arg = fp8 ? PP_C_ARG_OTHER : PP_C_ARG_D;
    if (*c_arg == PP_C_ARG_D && s->ldc != s->ldd) REFUSE("C is D (in place) but ldc %lld != ldd %lld",
                                                         (long long)s->ldc, (long long)s->ldd);
    return 0;
}
