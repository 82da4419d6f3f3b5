/* attn.cu: causal attention forward and backward for the attention, layer and mla probes
 * (attn.cuh): fused through cuDNN's flash attention graphs (built with the backend C API), or
 * unfused through cuBLASLt batched GEMMs and softmax kernels. The attention probe that times it
 * is attention.cu. */
#include "attn.cuh"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if PP_HAVE_CUDNN
#include <cudnn.h>
#endif

double pp_attn_fwd_flops(const pp_attn_shape *sh)
{
    const double dv = (double)(sh->dv ? sh->dv : sh->d);
    return 2.0 * (double)sh->b * (double)sh->s * (double)sh->s * (double)sh->heads * ((double)sh->d + dv);
}

/* ================================================================ unfused: softmax kernels */

__device__ __forceinline__ float pp_block_max(float v, float *red)
{
    for (int off = 16; off; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    float r = -INFINITY;
    for (int i = 0; i < (int)(blockDim.x / 32); i++) r = fmaxf(r, red[i]);
    __syncthreads();
    return r;
}

__device__ __forceinline__ float pp_block_sum(float v, float *red)
{
    for (int off = 16; off; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    float r = 0;
    for (int i = 0; i < (int)(blockDim.x / 32); i++) r += red[i];
    __syncthreads();
    return r;
}

/* Rows of s scores (already scaled by the GEMM's alpha), row r is query r % s: keys j > query are
 * masked (causal). In place: S becomes P. One block per row, the row staged in shared memory. */
__global__ void pp_softmax_fwd_kernel(__nv_bfloat16 *S, int64_t s)
{
    extern __shared__ float row[];
    __shared__ float red[32];
    __nv_bfloat16 *p = S + (int64_t)blockIdx.x * s;
    int64_t qi = (int64_t)blockIdx.x % s;
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < s; j += blockDim.x) {
        float v = j <= qi ? __bfloat162float(p[j]) : -INFINITY;
        row[j] = v;
        mx = fmaxf(mx, v);
    }
    mx = pp_block_max(mx, red);
    float sum = 0;
    for (int64_t j = threadIdx.x; j < s; j += blockDim.x) {
        float e = j <= qi ? __expf(row[j] - mx) : 0.0f;
        row[j] = e;
        sum += e;
    }
    sum = pp_block_sum(sum, red);
    float inv = 1.0f / sum;
    for (int64_t j = threadIdx.x; j < s; j += blockDim.x) p[j] = __float2bfloat16_rn(row[j] * inv);
}

/* dS = P (dP - sum_j P dP), in place into dP (the scale goes into the next GEMMs' alpha). */
__global__ void pp_softmax_bwd_kernel(const __nv_bfloat16 *P, __nv_bfloat16 *dP, int64_t s)
{
    __shared__ float red[32];
    const __nv_bfloat16 *p = P + (int64_t)blockIdx.x * s;
    __nv_bfloat16 *dp = dP + (int64_t)blockIdx.x * s;
    int64_t qi = (int64_t)blockIdx.x % s;
    float dot = 0;
    for (int64_t j = threadIdx.x; j <= qi; j += blockDim.x) dot += __bfloat162float(p[j]) * __bfloat162float(dp[j]);
    dot = pp_block_sum(dot, red);
    for (int64_t j = threadIdx.x; j < s; j += blockDim.x) {
        float v = j <= qi ? __bfloat162float(p[j]) * (__bfloat162float(dp[j]) - dot) : 0.0f;
        dp[j] = __float2bfloat16_rn(v);
    }
}

/* ================================================================ the plan object */

#define PP_DNN_MAX_DESC 400

struct pp_attn {
    pp_attn_shape sh;
    pp_attn_io io;
    bool flash;
    char backend[16];
    float scale;
    /* unfused */
    __nv_bfloat16 *P, *dP;
    pp_gemm_plan g_s, g_o, g_dv, g_dp, g_dq, g_dk;
#if PP_HAVE_CUDNN
    cudnnHandle_t dnn;
    cudnnBackendDescriptor_t desc[PP_DNN_MAX_DESC];
    int n_desc;
    cudnnBackendDescriptor_t fwd_plan, fwd_vp, bwd_plan, bwd_vp;
    void *fwd_ws, *bwd_ws;
    float *ssum, *dq_acc;
    float ninf, one;
#endif
};

const char *pp_attn_backend(const pp_attn *a) { return a->backend; }

/* ================================================================ flash: cuDNN backend graphs */
#if PP_HAVE_CUDNN

/* A graph under construction. Errors are sticky: the first failing call is remembered in msg and
 * later calls do nothing, so a builder reads as a straight list of operations. */
typedef struct {
    pp_attn *a;
    cudnnBackendDescriptor_t ops[48];
    int n_ops;
    int64_t next_uid;
    bool bad;
    bool oom;        /* the failure was cuDNN's device allocation (an OOM at this size) */
    char msg[400];
} dnn_g;

/* cuDNN 9 splits allocation failures; the device one is an OOM of this size */
static bool dnn_is_oom(cudnnStatus_t s)
{
#if CUDNN_MAJOR >= 9
    return s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
#else
    return s == CUDNN_STATUS_ALLOC_FAILED;
#endif
}

typedef struct {
    cudnnBackendDescriptor_t d;
    int64_t uid;
} dnn_t;

static void dnn_err(dnn_g *g, cudnnStatus_t s, const char *what)
{
    if (g->bad) return;
    char last[256] = "";
    cudnnGetLastErrorString(last, sizeof last);
    g->bad = true;
    g->oom = dnn_is_oom(s);
    snprintf(g->msg, sizeof g->msg, "cuDNN %s: %s%s%s", what, cudnnGetErrorString(s), last[0] ? ": " : "", last);
}

static cudnnBackendDescriptor_t dnn_new(dnn_g *g, cudnnBackendDescriptorType_t t)
{
    cudnnBackendDescriptor_t d = NULL;
    if (g->bad) return NULL;
    if (g->a->n_desc >= PP_DNN_MAX_DESC) {
        g->bad = true;
        snprintf(g->msg, sizeof g->msg, "cuDNN graph: too many descriptors");
        return NULL;
    }
    cudnnStatus_t s = cudnnBackendCreateDescriptor(t, &d);
    if (s != CUDNN_STATUS_SUCCESS) {
        dnn_err(g, s, "create descriptor");
        return NULL;
    }
    g->a->desc[g->a->n_desc++] = d;
    return d;
}

static void dnn_set(dnn_g *g, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n,
                    cudnnBackendAttributeType_t t, int64_t count, const void *v)
{
    if (g->bad) return;
    cudnnStatus_t s = cudnnBackendSetAttribute(d, n, t, count, v);
    if (s != CUDNN_STATUS_SUCCESS) {
        char what[64];
        snprintf(what, sizeof what, "set attribute %d", (int)n);
        dnn_err(g, s, what);
    }
}

static void dnn_fin(dnn_g *g, cudnnBackendDescriptor_t d, const char *what)
{
    if (g->bad) return;
    cudnnStatus_t s = cudnnBackendFinalize(d);
    if (s != CUDNN_STATUS_SUCCESS) dnn_err(g, s, what);
}

/* uid 0: a virtual tensor with a fresh uid */
static dnn_t dnn_tensor(dnn_g *g, int64_t uid, cudnnDataType_t dt, const int64_t dim[4], const int64_t str[4],
                        bool by_value)
{
    dnn_t t = {NULL, uid ? uid : g->next_uid++};
    bool virt = uid == 0;
    int64_t align = 16;
    t.d = dnn_new(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    dnn_set(g, t.d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &t.uid);
    dnn_set(g, t.d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    dnn_set(g, t.d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    dnn_set(g, t.d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim);
    dnn_set(g, t.d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, str);
    if (virt) dnn_set(g, t.d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt);
    if (by_value) dnn_set(g, t.d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    dnn_fin(g, t.d, "tensor");
    return t;
}

static void dnn_op(dnn_g *g, cudnnBackendDescriptor_t op)
{
    if (g->bad) return;
    if (g->n_ops >= (int)(sizeof g->ops / sizeof g->ops[0])) {
        g->bad = true;
        snprintf(g->msg, sizeof g->msg, "cuDNN graph: too many operations");
        return;
    }
    g->ops[g->n_ops++] = op;
}

static void dnn_matmul(dnn_g *g, dnn_t a, dnn_t b, dnn_t c)
{
    cudnnDataType_t ct = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t md = dnn_new(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    dnn_set(g, md, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct);
    dnn_fin(g, md, "matmul descriptor");
    cudnnBackendDescriptor_t op = dnn_new(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    dnn_set(g, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a.d);
    dnn_set(g, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b.d);
    dnn_set(g, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c.d);
    dnn_set(g, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &md);
    dnn_fin(g, op, "matmul");
    dnn_op(g, op);
}

/* y = mode(x [, b [, t]]); axis >= 0 for GEN_INDEX */
static void dnn_pw(dnn_g *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec, dnn_t x, const dnn_t *b,
                   const dnn_t *t, dnn_t y, int64_t axis)
{
    float alpha = 1.0f;
    cudnnBackendDescriptor_t pd = dnn_new(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    dnn_set(g, pd, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    dnn_set(g, pd, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (axis >= 0) dnn_set(g, pd, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    dnn_fin(g, pd, "pointwise descriptor");
    cudnnBackendDescriptor_t op = dnn_new(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    dnn_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pd);
    dnn_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x.d);
    if (b) dnn_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b->d);
    if (t) dnn_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t->d);
    dnn_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y.d);
    dnn_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &alpha);
    dnn_set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &alpha);
    dnn_fin(g, op, "pointwise");
    dnn_op(g, op);
}

static void dnn_reduce(dnn_g *g, cudnnReduceTensorOp_t mode, dnn_t x, dnn_t y)
{
    cudnnDataType_t ct = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t rd = dnn_new(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    dnn_set(g, rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct);
    dnn_set(g, rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
    dnn_fin(g, rd, "reduction descriptor");
    cudnnBackendDescriptor_t op = dnn_new(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    dnn_set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd);
    dnn_set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x.d);
    dnn_set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y.d);
    dnn_fin(g, op, "reduction");
    dnn_op(g, op);
}

static void dnn_reshape(dnn_g *g, dnn_t x, dnn_t y)
{
    cudnnBackendDescriptor_t op = dnn_new(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    dnn_set(g, op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x.d);
    dnn_set(g, op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y.d);
    dnn_fin(g, op, "reshape");
    dnn_op(g, op);
}

/* Operation graph -> heuristics (mode A) -> the first engine configuration that finalizes. */
static cudnnBackendDescriptor_t dnn_plan(dnn_g *g, int64_t *ws_bytes)
{
    cudnnHandle_t h = g->a->dnn;
    cudnnBackendHeurMode_t modes[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_B};
    cudnnBackendDescriptor_t og, heur, plan = NULL;
    cudnnBackendDescriptor_t cfg[16];
    int64_t n_cfg = 0;
    og = dnn_new(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    dnn_set(g, og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->n_ops, g->ops);
    dnn_set(g, og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    dnn_fin(g, og, "operation graph");
    /* heuristics mode A (what cudnn-frontend's samples ask), then B */
    for (int mi = 0; mi < 2 && n_cfg < 1 && !g->bad; mi++) {
        heur = dnn_new(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
        dnn_set(g, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &og);
        dnn_set(g, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &modes[mi]);
        dnn_fin(g, heur, "heuristics");
        for (int i = 0; i < 16 && !g->bad; i++) cfg[i] = dnn_new(g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
        if (g->bad) return NULL;
        cudnnStatus_t s = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                                   16, &n_cfg, cfg);
        if (s != CUDNN_STATUS_SUCCESS) {
            dnn_err(g, s, "heuristics results");
            return NULL;
        }
    }
    if (g->bad) return NULL;
    if (n_cfg < 1) {
        g->bad = true;
        snprintf(g->msg, sizeof g->msg, "cuDNN has no engine for this attention graph");
        return NULL;
    }
    for (int64_t i = 0; i < n_cfg; i++) {
        cudnnBackendDescriptor_t p = dnn_new(g, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        if (g->bad) return NULL;
        cudnnStatus_t s1 = cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
        cudnnStatus_t s2 = cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]);
        cudnnStatus_t s3 = s1 == CUDNN_STATUS_SUCCESS && s2 == CUDNN_STATUS_SUCCESS ? cudnnBackendFinalize(p) : s1;
        if (s1 == CUDNN_STATUS_SUCCESS && s2 == CUDNN_STATUS_SUCCESS && s3 == CUDNN_STATUS_SUCCESS) {
            plan = p;
            break;
        }
        if (i == n_cfg - 1) dnn_err(g, s3 != CUDNN_STATUS_SUCCESS ? s3 : s2, "execution plan");
    }
    if (!plan) return NULL;
    {
        int64_t got = 0;
        cudnnStatus_t s = cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                                                   1, &got, ws_bytes);
        if (s != CUDNN_STATUS_SUCCESS) {
            dnn_err(g, s, "workspace size");
            return NULL;
        }
    }
    return plan;
}

static cudnnBackendDescriptor_t dnn_varpack(dnn_g *g, const int64_t *uids, void *const *ptrs, int n, void *ws)
{
    cudnnBackendDescriptor_t vp = dnn_new(g, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    dnn_set(g, vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    dnn_set(g, vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
    dnn_set(g, vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    dnn_fin(g, vp, "variant pack");
    return vp;
}

enum { U_Q = 1, U_K, U_V, U_O, U_STATS, U_SCALE, U_NINF, U_DO, U_DQ, U_DK, U_DV, U_SSUM, U_DQACC, U_ONE };

/* The causal mask of cuDNN frontend's diagonal_band_mask (right bound 0, top-left): keep row >= col. */
static dnn_t dnn_causal(dnn_g *g, dnn_t x, dnn_t ninf, const int64_t ss[4], const int64_t ss_str[4])
{
    dnn_t row = dnn_tensor(g, 0, CUDNN_DATA_INT32, ss, ss_str, false);
    dnn_pw(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, x, NULL, NULL, row, 2);
    dnn_t col = dnn_tensor(g, 0, CUDNN_DATA_INT32, ss, ss_str, false);
    dnn_pw(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, x, NULL, NULL, col, 3);
    dnn_t keep = dnn_tensor(g, 0, CUDNN_DATA_BOOLEAN, ss, ss_str, false);
    dnn_pw(g, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, &col, NULL, keep, -1);
    dnn_t y = dnn_tensor(g, 0, CUDNN_DATA_FLOAT, ss, ss_str, false);
    dnn_pw(g, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, x, &ninf, &keep, y, -1);
    return y;
}

/* Forward and backward graphs, after cudnn-frontend's CompositeSDPANode / CompositeSDPABackwardNode
 * (scaled_dot_product_flash_attention.h): the pattern its fused flash engines recognise. */
static int dnn_build(pp_probe_ctx *c, pp_attn *a, char *why, size_t why_n)
{
    const pp_attn_shape *sh = &a->sh;
    const int64_t b = sh->b, H = sh->heads, s = sh->s, d = sh->d, ld = sh->ld_qkv, ldo = sh->ld_o;
    const int64_t dv = sh->dv, ldk = sh->ld_k, ldv = sh->ld_v;
    /* q, dq [b, H, s, d]; k, dk with k's row stride; v, o, do, dv [b, H, s, dv] (MLA: dv < d) */
    const int64_t dq[4] = {b, H, s, d}, sq[4] = {s * ld, d, ld, 1}, sk[4] = {s * ldk, d, ldk, 1};
    const int64_t dvo[4] = {b, H, s, dv}, sv[4] = {s * ldv, dv, ldv, 1}, so[4] = {s * ldo, dv, ldo, 1};
    const int64_t dkt[4] = {b, H, d, s}, skt[4] = {s * ldk, d, 1, ldk};
    const int64_t dvt[4] = {b, H, dv, s}, svt[4] = {s * ldv, dv, 1, ldv};
    const int64_t dst[4] = {b, H, s, 1}, sst[4] = {H * s, s, 1, 1};
    const int64_t dss[4] = {b, H, s, s}, sss[4] = {H * s * s, s * s, s, 1};
    const int64_t sssT[4] = {H * s * s, s * s, 1, s};
    const int64_t one4[4] = {1, 1, 1, 1};
    const int64_t sacc[4] = {H * s * d, s * d, d, 1};
    const int64_t sdoo[4] = {H * s * dv, s * dv, H * dv, 1}; /* as the frontend gives dO*O (virtual) */
    int64_t ws_f = 0, ws_b = 0;
    dnn_g g;
    memset(&g, 0, sizeof g);
    g.a = a;
    g.next_uid = 100;
    a->ninf = -INFINITY;
    a->one = 1.0f;

    /* ---- forward: S = Q K^T * scale; causal; softmax with stats; O = P V */
    {
        dnn_t Q = dnn_tensor(&g, U_Q, CUDNN_DATA_BFLOAT16, dq, sq, false);
        dnn_t KT = dnn_tensor(&g, U_K, CUDNN_DATA_BFLOAT16, dkt, skt, false);
        dnn_t V = dnn_tensor(&g, U_V, CUDNN_DATA_BFLOAT16, dvo, sv, false);
        dnn_t O = dnn_tensor(&g, U_O, CUDNN_DATA_BFLOAT16, dvo, so, false);
        dnn_t ST = dnn_tensor(&g, U_STATS, CUDNN_DATA_FLOAT, dst, sst, false);
        dnn_t SC = dnn_tensor(&g, U_SCALE, CUDNN_DATA_FLOAT, one4, one4, true);
        dnn_t NI = dnn_tensor(&g, U_NINF, CUDNN_DATA_FLOAT, one4, one4, true);
        dnn_t s1 = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dss, sss, false);
        dnn_matmul(&g, Q, KT, s1);
        dnn_t s2 = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dss, sss, false);
        dnn_pw(&g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, s1, &SC, NULL, s2, -1);
        dnn_t s3 = dnn_causal(&g, s2, NI, dss, sss);
        dnn_t mx = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dst, sst, false);
        dnn_reduce(&g, CUDNN_REDUCE_TENSOR_MAX, s3, mx);
        dnn_t s4 = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dss, sss, false);
        dnn_pw(&g, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, s3, &mx, NULL, s4, -1);
        dnn_t s5 = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dss, sss, false);
        dnn_pw(&g, CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, s4, NULL, NULL, s5, -1);
        dnn_t sum = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dst, sst, false);
        dnn_reduce(&g, CUDNN_REDUCE_TENSOR_ADD, s5, sum);
        dnn_t lg = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dst, sst, false);
        dnn_pw(&g, CUDNN_POINTWISE_LOG, CUDNN_DATA_FLOAT, sum, NULL, NULL, lg, -1);
        dnn_pw(&g, CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, mx, &lg, NULL, ST, -1);
        dnn_t P = dnn_tensor(&g, 0, CUDNN_DATA_BFLOAT16, dss, sss, false);
        dnn_pw(&g, CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, s5, &sum, NULL, P, -1);
        dnn_matmul(&g, P, V, O);
        a->fwd_plan = dnn_plan(&g, &ws_f);
    }
    if (g.bad) goto unsupported;
    if (ws_f > 0 && pp_alloc(&a->fwd_ws, (size_t)ws_f)) return -1;
    {
        int64_t uids[7] = {U_Q, U_K, U_V, U_O, U_STATS, U_SCALE, U_NINF};
        void *ptrs[7] = {(void *)a->io.q, (void *)a->io.k, (void *)a->io.v, a->io.o, a->io.stats, &a->scale, &a->ninf};
        a->fwd_vp = dnn_varpack(&g, uids, ptrs, 7, a->fwd_ws);
    }
    if (g.bad) goto unsupported;

    /* ---- backward */
    g.n_ops = 0;
    {
        dnn_t Q = dnn_tensor(&g, U_Q, CUDNN_DATA_BFLOAT16, dq, sq, false);
        dnn_t KT = dnn_tensor(&g, U_K, CUDNN_DATA_BFLOAT16, dkt, skt, false);
        dnn_t VT = dnn_tensor(&g, U_V, CUDNN_DATA_BFLOAT16, dvt, svt, false);
        dnn_t O = dnn_tensor(&g, U_O, CUDNN_DATA_BFLOAT16, dvo, so, false);
        dnn_t ST = dnn_tensor(&g, U_STATS, CUDNN_DATA_FLOAT, dst, sst, false);
        dnn_t SC = dnn_tensor(&g, U_SCALE, CUDNN_DATA_FLOAT, one4, one4, true);
        dnn_t NI = dnn_tensor(&g, U_NINF, CUDNN_DATA_FLOAT, one4, one4, true);
        dnn_t ONE = dnn_tensor(&g, U_ONE, CUDNN_DATA_FLOAT, one4, one4, true);
        dnn_t DO = dnn_tensor(&g, U_DO, CUDNN_DATA_BFLOAT16, dvo, so, false);
        dnn_t DQ = dnn_tensor(&g, U_DQ, CUDNN_DATA_BFLOAT16, dq, sq, false);
        dnn_t DK = dnn_tensor(&g, U_DK, CUDNN_DATA_BFLOAT16, dq, sk, false);
        dnn_t DV = dnn_tensor(&g, U_DV, CUDNN_DATA_BFLOAT16, dvo, sv, false);
        dnn_t SS = dnn_tensor(&g, U_SSUM, CUDNN_DATA_FLOAT, dst, sst, false);
        dnn_t ACC = dnn_tensor(&g, U_DQACC, CUDNN_DATA_FLOAT, dq, sacc, false);
        /* softmax_sum = rowsum(dO * O) */
        dnn_t t1 = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dvo, sdoo, false);
        dnn_pw(&g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, DO, &O, NULL, t1, -1);
        dnn_t t2 = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dst, sst, false);
        dnn_reduce(&g, CUDNN_REDUCE_TENSOR_ADD, t1, t2);
        dnn_pw(&g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, t2, &ONE, NULL, SS, -1);
        /* P = exp(scale Q K^T - stats), masked */
        dnn_t s1 = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dss, sss, false);
        dnn_matmul(&g, Q, KT, s1);
        dnn_t s2 = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dss, sss, false);
        dnn_pw(&g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, s1, &SC, NULL, s2, -1);
        dnn_t s3 = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dss, sss, false);
        dnn_pw(&g, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, s2, &ST, NULL, s3, -1);
        dnn_t s4 = dnn_causal(&g, s3, NI, dss, sss);
        dnn_t P = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dss, sss, false);
        dnn_pw(&g, CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, s4, NULL, NULL, P, -1);
        /* dV = P^T dO */
        dnn_t PT = dnn_tensor(&g, 0, CUDNN_DATA_BFLOAT16, dss, sssT, false);
        dnn_reshape(&g, P, PT);
        dnn_matmul(&g, PT, DO, DV);
        /* dS = P (dO V^T - softmax_sum) scale */
        dnn_t dP = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dss, sss, false);
        dnn_matmul(&g, DO, VT, dP);
        dnn_t t3 = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dss, sss, false);
        dnn_pw(&g, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, dP, &SS, NULL, t3, -1);
        dnn_t t4 = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dss, sss, false);
        dnn_pw(&g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, t3, &P, NULL, t4, -1);
        dnn_t dS = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dss, sss, false);
        dnn_pw(&g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, t4, &SC, NULL, dS, -1);
        /* dK = dS^T Q */
        dnn_t dST = dnn_tensor(&g, 0, CUDNN_DATA_BFLOAT16, dss, sssT, false);
        dnn_reshape(&g, dS, dST);
        dnn_matmul(&g, dST, Q, DK);
        /* dQ = dS K (fp32 accumulator, then converted) */
        dnn_t K = dnn_tensor(&g, 0, CUDNN_DATA_FLOAT, dq, sk, false);
        dnn_reshape(&g, KT, K);
        dnn_matmul(&g, dS, K, ACC);
        dnn_pw(&g, CUDNN_POINTWISE_IDENTITY, CUDNN_DATA_FLOAT, ACC, NULL, NULL, DQ, -1);
        a->bwd_plan = dnn_plan(&g, &ws_b);
    }
    if (g.bad) goto unsupported;
    if (ws_b > 0 && pp_alloc(&a->bwd_ws, (size_t)ws_b)) return -1;
    if (pp_alloc((void **)&a->ssum, (size_t)(b * H * s) * sizeof(float))) return -1;
    if (pp_alloc((void **)&a->dq_acc, (size_t)(b * H * s * d) * sizeof(float))) return -1;
    {
        int64_t uids[14] = {U_Q, U_K, U_V, U_O, U_STATS, U_SCALE, U_NINF, U_ONE, U_DO, U_DQ, U_DK, U_DV, U_SSUM, U_DQACC};
        void *ptrs[14] = {(void *)a->io.q, (void *)a->io.k, (void *)a->io.v, a->io.o, a->io.stats, &a->scale,
                          &a->ninf, &a->one, (void *)a->io.dout, a->io.dq, a->io.dk, a->io.dv, a->ssum, a->dq_acc};
        a->bwd_vp = dnn_varpack(&g, uids, ptrs, 14, a->bwd_ws);
    }
    if (g.bad) goto unsupported;
    (void)c;
    return 0;
unsupported:
    if (g.oom) {
        cudaGetLastError();
        pp_probe_error_oom(__FILE__, __LINE__, 0, -1, false, "%s", g.msg);
        return -1;
    }
    snprintf(why, why_n, "%s", g.msg);
    return 1;
}

static int dnn_handle(pp_probe_ctx *c, cudnnHandle_t *h, char *why, size_t why_n)
{
    if (!c->dnn) {
        cudnnHandle_t nh = NULL;
        cudnnStatus_t s = cudnnCreate(&nh);
        if (s != CUDNN_STATUS_SUCCESS) {
            snprintf(why, why_n, "cudnnCreate: %s", cudnnGetErrorString(s));
            return 1;
        }
        c->dnn = nh;
    }
    *h = (cudnnHandle_t)c->dnn;
    if (cudnnSetStream(*h, c->stream) != CUDNN_STATUS_SUCCESS) {
        snprintf(why, why_n, "cudnnSetStream failed");
        return 1;
    }
    return 0;
}

static int dnn_exec(pp_probe_ctx *c, pp_attn *a, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t vp)
{
    cudnnStatus_t s = cudnnBackendExecute(a->dnn, plan, vp);
    if (s != CUDNN_STATUS_SUCCESS) {
        char last[256] = "";
        cudnnGetLastErrorString(last, sizeof last);
        if (dnn_is_oom(s)) {
            cudaGetLastError();
            pp_probe_error_oom(__FILE__, __LINE__, 0, -1, false, "cudnnBackendExecute: %s %s", cudnnGetErrorString(s), last);
        } else {
            pp_probe_error(__FILE__, __LINE__, "cudnnBackendExecute: %s %s", cudnnGetErrorString(s), last);
        }
        return -1;
    }
    (void)c;
    return 0;
}
#endif /* PP_HAVE_CUDNN */

/* ================================================================ unfused: cuBLASLt plans */

/* One batched GEMM over the heads of one batch element (stride d between heads in a row); the
 * batch elements are separate calls at offsets of s rows. */
static int mk_gemm(pp_probe_ctx *c, pp_gemm_plan *p, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                   int64_t n, int64_t k, const void *A, int64_t lda, int64_t sa, const void *B, int64_t ldb, int64_t sb,
                   void *D, int64_t ldd, int64_t sd, int batch, float alpha)
{
    pp_gemm_desc g = pp_desc_bf16(ta, tb, m, n, k, A, lda, B, ldb, D, ldd);
    g.alpha = alpha;
    g.batch = batch;
    g.stride_a = sa;
    g.stride_b = sb;
    g.stride_c = sd;
    int st = pp_gemm_plan_make(c, &g, 1, p);
    if (st) pp_probe_error(__FILE__, __LINE__, "no cuBLASLt plan for an attention GEMM (%lldx%lldx%lld): %s",
                           (long long)m, (long long)n, (long long)k, pp_gemm_plan_why());
    return st ? -1 : 0;
}

static int unfused_build(pp_probe_ctx *c, pp_attn *a)
{
    const pp_attn_shape *sh = &a->sh;
    const int64_t H = sh->heads, s = sh->s, d = sh->d, ld = sh->ld_qkv, ldo = sh->ld_o;
    const int64_t dv = sh->dv, ldk = sh->ld_k, ldv = sh->ld_v;
    const int64_t ss = s * s;
    const int hb = (int)H;
    const pp_attn_io *io = &a->io;
    if (pp_alloc((void **)&a->P, (size_t)(sh->b * H * ss) * 2)) return -1;
    if (pp_alloc((void **)&a->dP, (size_t)(sh->b * H * ss) * 2)) return -1;
    /* S(keys x queries, col-major) = scale K^T Q      TN m=s n=s k=d */
    PP_TRY(mk_gemm(c, &a->g_s, CUBLAS_OP_T, CUBLAS_OP_N, s, s, d, io->k, ldk, d, io->q, ld, d, a->P, s, ss, hb, a->scale));
    /* O(dv x queries) = V(dv x keys) P(keys x queries) NN m=dv n=s k=s */
    PP_TRY(mk_gemm(c, &a->g_o, CUBLAS_OP_N, CUBLAS_OP_N, dv, s, s, io->v, ldv, dv, a->P, s, ss, io->o, ldo, dv, hb, 1.0f));
    /* dV(dv x keys) = dO(dv x queries) P^T              NT m=dv n=s k=s */
    PP_TRY(mk_gemm(c, &a->g_dv, CUBLAS_OP_N, CUBLAS_OP_T, dv, s, s, io->dout, ldo, dv, a->P, s, ss, io->dv, ldv, dv, hb,
                   1.0f));
    /* dP(keys x queries) = V^T dO                       TN m=s n=s k=dv */
    PP_TRY(mk_gemm(c, &a->g_dp, CUBLAS_OP_T, CUBLAS_OP_N, s, s, dv, io->v, ldv, dv, io->dout, ldo, dv, a->dP, s, ss, hb,
                   1.0f));
    /* dQ(d x queries) = scale K dS                      NN m=d n=s k=s */
    PP_TRY(mk_gemm(c, &a->g_dq, CUBLAS_OP_N, CUBLAS_OP_N, d, s, s, io->k, ldk, d, a->dP, s, ss, io->dq, ld, d, hb, a->scale));
    /* dK(d x keys) = scale Q dS^T                       NT m=d n=s k=s */
    PP_TRY(mk_gemm(c, &a->g_dk, CUBLAS_OP_N, CUBLAS_OP_T, d, s, s, io->q, ld, d, a->dP, s, ss, io->dk, ldk, d, hb, a->scale));
    return 0;
fail:
    return -1;
}

#define OFF(p, elems) ((void *)((char *)(p) + (size_t)(elems) * 2))

static int unfused_fwd(pp_probe_ctx *c, pp_attn *a)
{
    const pp_attn_shape *sh = &a->sh;
    const int64_t s = sh->s, ld = sh->ld_qkv, ldo = sh->ld_o, ss = s * s, H = sh->heads;
    const int64_t ldk = sh->ld_k, ldv = sh->ld_v;
    size_t smem = (size_t)s * sizeof(float);
    for (int64_t bi = 0; bi < sh->b; bi++) {
        void *P = OFF(a->P, bi * H * ss);
        PP_TRY(pp_gemm_plan_run_on(c, &a->g_s, OFF(a->io.k, bi * s * ldk), OFF(a->io.q, bi * s * ld), NULL, P));
    }
    pp_softmax_fwd_kernel<<<(unsigned)(sh->b * H * s), 256, smem, c->stream>>>(a->P, s);
    PP_LAUNCHED();
    for (int64_t bi = 0; bi < sh->b; bi++)
        PP_TRY(pp_gemm_plan_run_on(c, &a->g_o, OFF(a->io.v, bi * s * ldv), OFF(a->P, bi * H * ss), NULL,
                                   OFF(a->io.o, bi * s * ldo)));
    return 0;
fail:
    return -1;
}

static int unfused_bwd(pp_probe_ctx *c, pp_attn *a)
{
    const pp_attn_shape *sh = &a->sh;
    const int64_t s = sh->s, ld = sh->ld_qkv, ldo = sh->ld_o, ss = s * s, H = sh->heads;
    const int64_t ldk = sh->ld_k, ldv = sh->ld_v;
    for (int64_t bi = 0; bi < sh->b; bi++) {
        void *P = OFF(a->P, bi * H * ss), *dP = OFF(a->dP, bi * H * ss);
        PP_TRY(pp_gemm_plan_run_on(c, &a->g_dv, OFF(a->io.dout, bi * s * ldo), P, NULL, OFF(a->io.dv, bi * s * ldv)));
        PP_TRY(pp_gemm_plan_run_on(c, &a->g_dp, OFF(a->io.v, bi * s * ldv), OFF(a->io.dout, bi * s * ldo), NULL, dP));
    }
    pp_softmax_bwd_kernel<<<(unsigned)(sh->b * H * s), 256, 0, c->stream>>>(a->P, a->dP, s);
    PP_LAUNCHED();
    for (int64_t bi = 0; bi < sh->b; bi++) {
        void *dP = OFF(a->dP, bi * H * ss);
        PP_TRY(pp_gemm_plan_run_on(c, &a->g_dq, OFF(a->io.k, bi * s * ldk), dP, NULL, OFF(a->io.dq, bi * s * ld)));
        PP_TRY(pp_gemm_plan_run_on(c, &a->g_dk, OFF(a->io.q, bi * s * ld), dP, NULL, OFF(a->io.dk, bi * s * ldk)));
    }
    return 0;
fail:
    return -1;
}

/* ================================================================ public */

int pp_attn_create(pp_probe_ctx *c, const pp_attn_shape *sh, bool flash, const pp_attn_io *io, pp_attn **out,
                   char *why, size_t why_n)
{
    pp_attn *a = (pp_attn *)calloc(1, sizeof *a);
    int st = -1;
    *out = NULL;
    why[0] = 0;
    if (!a) {
        pp_probe_error(__FILE__, __LINE__, "out of memory");
        return -1;
    }
    a->sh = *sh;
    /* the MLA fields: 0 means "as q" (the packed-QKV callers leave them zero) */
    if (!a->sh.dv) a->sh.dv = sh->d;
    if (!a->sh.ld_k) a->sh.ld_k = sh->ld_qkv;
    if (!a->sh.ld_v) a->sh.ld_v = sh->ld_qkv;
    a->io = *io;
    a->flash = flash;
    /* 1/sqrt(d_qk): the query/key head size, as Megatron's MLA (softmax_scale = 1/sqrt(q_head_dim)
     * without YaRN's mscale) and standard attention */
    a->scale = (float)(1.0 / sqrt((double)sh->d));
    if (flash) {
#if PP_HAVE_CUDNN
        st = dnn_handle(c, &a->dnn, why, why_n);
        if (st == 0) st = dnn_build(c, a, why, why_n);
        snprintf(a->backend, sizeof a->backend, "cudnn");
#else
        snprintf(why, why_n, "built without cuDNN");
        st = 1;
#endif
    } else {
        st = unfused_build(c, a);
        snprintf(a->backend, sizeof a->backend, "cublaslt");
    }
    if (st != 0) {
        pp_attn_free(a);
        return st;
    }
    *out = a;
    return 0;
}

int pp_attn_fwd(pp_probe_ctx *c, pp_attn *a)
{
#if PP_HAVE_CUDNN
    if (a->flash) return dnn_exec(c, a, a->fwd_plan, a->fwd_vp);
#endif
    return unfused_fwd(c, a);
}

int pp_attn_bwd(pp_probe_ctx *c, pp_attn *a)
{
#if PP_HAVE_CUDNN
    if (a->flash) {
        /* before cuDNN 9.6 the dQ accumulator had to be zeroed by the caller (cudnn-frontend) */
        if (cudnnGetVersion() < 90600) {
            cudaError_t e = cudaMemsetAsync(a->dq_acc, 0, (size_t)(a->sh.b * a->sh.heads * a->sh.s * a->sh.d) * 4,
                                            c->stream);
            if (e != cudaSuccess) {
                pp_cuda_fail(__FILE__, __LINE__, "cudaMemsetAsync(dq_acc)", e);
                return -1;
            }
        }
        return dnn_exec(c, a, a->bwd_plan, a->bwd_vp);
    }
#endif
    return unfused_bwd(c, a);
}

void pp_attn_free(pp_attn *a)
{
    if (!a) return;
#if PP_HAVE_CUDNN
    for (int i = a->n_desc - 1; i >= 0; i--) cudnnBackendDestroyDescriptor(a->desc[i]);
    cudaFree(a->fwd_ws);
    cudaFree(a->bwd_ws);
    cudaFree(a->ssum);
    cudaFree(a->dq_acc);
#endif
    cudaFree(a->P);
    cudaFree(a->dP);
    pp_gemm_plan_free(&a->g_s);
    pp_gemm_plan_free(&a->g_o);
    pp_gemm_plan_free(&a->g_dv);
    pp_gemm_plan_free(&a->g_dp);
    pp_gemm_plan_free(&a->g_dq);
    pp_gemm_plan_free(&a->g_dk);
    free(a);
}
