/* DeepEP's normal-mode (training) communication buffers, which Megatron's flex dispatcher (and
 * NeMo AutoModel's DeepEP dispatch) allocate once per process outside PyTorch's allocator: an
 * NVLink buffer (cudaMalloc + IPC handles) and, past one node's 8 GPUs, an RDMA buffer (NVSHMEM's
 * symmetric heap). Their sizes are the library's own hints, the larger of its dispatch and
 * combine configs (Megatron-LM d98e8a64 megatron/core/transformer/moe/fused_a2a.py get_buffer;
 * hidden_bytes = hidden x max(element size, 2), get_hidden_bytes; 20 SMs unless
 * moe_flex_dispatcher_num_sms, token_dispatcher.py:1287). Formulas: deepseek-ai/DeepEP dd758caf
 * csrc/legacy/config.hpp get_nvl_buffer_size_hint / get_rdma_buffer_size_hint; configs:
 * deep_ep/buffers/legacy.py get_dispatch_config / get_combine_config (one row per EP size here);
 * a SourceMeta of 8 bytes (internode.cu), top-k indices int64 (EP_NUM_TOPK_IDX_BITS 64). HybridEP,
 * the flex dispatcher's other backend, sizes its buffers otherwise: not priced. */
#include <math.h>

#include "pp_memory.h"

#define DEEPEP_NVL_PEERS 8       /* LEGACY_NUM_MAX_NVL_PEERS */
#define DEEPEP_MAX_TOPK 128      /* kNumMaxTopK */
#define DEEPEP_MAX_SCALES 128    /* kNumMaxScales */
#define DEEPEP_SOURCE_META 8.0   /* sizeof(SourceMeta): two ints */
#define DEEPEP_TOPK_IDX 8.0      /* int64 top-k indices */

/* Config(num_sms, nvl send, nvl recv, rdma send, rdma recv) per EP size: [0] dispatch, [1] combine.
 * Only the receive sizes (and the RDMA send size the receive is aligned to) enter the hints. */
typedef struct {
    int ranks;
    int nvl_recv[2], rdma_send[2], rdma_recv[2];
} deepep_config;

static const deepep_config deepep_configs[] = {
    {2, {256, 256}, {6, 6}, {128, 128}},    {4, {256, 256}, {6, 6}, {128, 128}},
    {8, {256, 256}, {6, 6}, {128, 128}},    {16, {288, 288}, {20, 12}, {128, 128}},
    {24, {288, 288}, {8, 8}, {128, 128}},   {32, {288, 288}, {8, 8}, {128, 128}},
    {48, {288, 288}, {8, 8}, {128, 128}},   {64, {288, 288}, {8, 8}, {128, 128}},
    {96, {480, 480}, {12, 8}, {128, 128}},  {128, {560, 560}, {12, 8}, {128, 128}},
    {144, {720, 720}, {12, 8}, {128, 128}}, {160, {720, 720}, {12, 8}, {128, 128}},
};
#define N_DEEPEP_CONFIGS ((int)(sizeof deepep_configs / sizeof deepep_configs[0]))

static double round128(double b)
{
    return 128.0 * ceil(b / 128.0);
}

static const deepep_config *deepep_config_for(int64_t ranks)
{
    /* DeepEP asserts an EP size of its table; another size is priced at the next one up */
    for (int i = 0; i < N_DEEPEP_CONFIGS; i++)
        if (deepep_configs[i].ranks >= ranks) return &deepep_configs[i];
    return &deepep_configs[N_DEEPEP_CONFIGS - 1];
}

double pp_deepep_layout_bytes(const pp_work *w, const pp_layout *l)
{
    /* the flex dispatcher's group is expert TP x EP (token_dispatcher.py MoEFlexTokenDispatcher:
     * tp_ep_group); its tokens bf16 */
    if (w->model.experts <= 1 || w->stack.dispatcher != PP_DISPATCH_FLEX) return 0.0;
    return pp_deepep_buffer_bytes(l->ep * pp_layout_etp(l), 2.0 * (double)w->model.hidden, PP_DEEPEP_SMS);
}

double pp_deepep_buffer_bytes(int64_t ranks, double hidden_bytes, int num_sms)
{
    if (ranks < 2) return 0.0;
    const deepep_config *c = deepep_config_for(ranks);
    double ch = (double)(num_sms / 2);
    double nvl_ranks = (double)(ranks < DEEPEP_NVL_PEERS ? ranks : DEEPEP_NVL_PEERS);
    double rdma_ranks = ranks > DEEPEP_NVL_PEERS ? (double)(ranks / DEEPEP_NVL_PEERS) : 1.0;
    /* what one received token carries: hidden, source meta, top-k indices and weights, scales */
    double per_tok = DEEPEP_SOURCE_META + DEEPEP_MAX_TOPK * (DEEPEP_TOPK_IDX + 4.0) + DEEPEP_MAX_SCALES * 4.0;
    double nvl = 0.0, rdma = 0.0;
    for (int k = 0; k < 2; k++) {
        double n = ch * nvl_ranks * (2.0 * rdma_ranks + 3.0) * 4.0 +
                   ch * nvl_ranks * (double)c->nvl_recv[k] * (hidden_bytes + per_tok);
        nvl = fmax(nvl, round128(n));
        if (ranks > DEEPEP_NVL_PEERS) {
            /* the receive size aligned up to the send size (Config's constructor) */
            double recv = (double)c->rdma_send[k] * ceil((double)c->rdma_recv[k] / (double)c->rdma_send[k]);
            double r = ch * rdma_ranks * (DEEPEP_NVL_PEERS * 2.0 + 2.0) * 2.0 * 4.0 +
                       ch * rdma_ranks * recv * 2.0 * (hidden_bytes + per_tok + 16.0);
            rdma = fmax(rdma, round128(r));
        }
    }
    return nvl + rdma;
}
