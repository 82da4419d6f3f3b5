/* gemm_rules.h: what cuBLASLt asks of one GEMM's description, in plain C (gemm_rules.c) so that
 * probes-unit checks it without a GPU. harness.cu builds its matrix layouts and picks the C operand
 * with these; gemm.cu leaves out the fp8 shapes they refuse.
 *
 * References (cuBLAS docs, "cuBLASLt API"):
 *   cublasLtMatrixLayoutAttributes_t: column order, ld >= rows (CUBLASLT_MATRIX_LAYOUT_LD);
 *   cublasLtMatmul(), "To use FP8 kernels, the following set of requirements must be satisfied":
 *     16-byte aligned pointers and leading dimensions ("Tensor Core Usage"), A transposed and B not
 *     ("TN") on Ada and Hopper, compute type CUBLAS_COMPUTE_32F, scale type CUDA_R_32F; the type
 *     table (A, B e4m3: C and D both bf16, both fp16 or both fp32);
 *   cublasLtMatmulDescAttributes_t: A/B_SCALE_POINTER only for the data types that take a scale
 *     (else CUBLAS_INVALID_VALUE), FAST_ACCUM "fp8 fast accumulation mode". */
#ifndef PP_GEMM_RULES_H
#define PP_GEMM_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types of probe buffers. */
typedef enum { PP_F32 = 0, PP_BF16, PP_F16, PP_E4M3 } pp_elt;
static inline size_t pp_elt_bytes(pp_elt t) { return t == PP_F32 ? 4 : t == PP_E4M3 ? 1 : 2; }

/* What cublasLtMatmul is handed as C. */
typedef enum {
    PP_C_ARG_D = 0, /* no C of its own: D (in place, C's layout is D's): every type but fp8 */
    PP_C_ARG_C,     /* the description's C */
    PP_C_ARG_OTHER, /* fp8 without C (beta 0): a valid pointer that is not D and is never read, as
                     * PyTorch's scaled_gemm passes (cuBLASLt 13 refuses C == D there: see
                     * pp_gemm_lt_layouts) */
    PP_C_ARG_NULL,  /* fp8 without C: NULL (XLA's choice; the fallback when OTHER is refused) */
} pp_c_arg;

/* One GEMM D[m x n] = alpha op(A)[m x k] op(B)[k x n] + beta C, column-major, as cuBLASLt sees it
 * (the plain-C image of harness.cuh's pp_gemm_desc). */
typedef struct {
    bool ta, tb;              /* op(A) = A^T, op(B) = B^T */
    int64_t m, n, k, lda, ldb, ldc, ldd;
    pp_elt a_t, b_t, c_t;     /* D has C's type */
    bool tf32;                /* CUBLAS_COMPUTE_32F_FAST_TF32 */
    bool fast_accum;          /* CUBLASLT_MATMUL_DESC_FAST_ACCUM */
    bool scale_a, scale_b;    /* A/B_SCALE_POINTER set */
    bool epilogue;            /* an epilogue other than CUBLASLT_EPILOGUE_DEFAULT (bias, GELU, ...) */
    bool has_c;               /* a C of its own */
    float beta;
} pp_gemm_spec;

/* One matrix layout: `rows` x `cols` stored column-major with leading dimension `ld`. */
typedef struct {
    int64_t rows, cols, ld;
    pp_elt type;
} pp_lt_layout;

/* true when either input is e4m3 (cuBLASLt's FP8 kernels) */
bool pp_gemm_spec_fp8(const pp_gemm_spec *s);

/* The layouts of A, B, C, D (out[0..3]; A stored k x m when transposed, else m x k; B k x n or
 * n x k; C and D m x n) and the C operand to pass. 0, or 1 with the rule the description breaks in
 * `why` (a leading dimension under the rows, a missing C with beta != 0, a scale or fast
 * accumulation without fp8, and for fp8: both inputs e4m3, TN, fp32 compute (no TF32), C/D bf16,
 * fp16 or fp32, no epilogue, m, n, k multiples of 16 and every leading dimension 16 bytes). */
int pp_gemm_lt_layouts(const pp_gemm_spec *s, pp_lt_layout out[4], pp_c_arg *c_arg, char *why, size_t why_n);

/* The fp8 rule on the shape alone: m, n and k multiples of 16 (16-byte rows of e4m3). */
bool pp_gemm_fp8_dims_ok(int64_t m, int64_t n, int64_t k);

#ifdef __cplusplus
}
#endif
#endif
