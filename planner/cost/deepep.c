/* DeepEP's normal-mode (training) communication buffers, which Megatron's flex dispatcher (and
 * NeMo AutoModel's DeepEP dispatch) allocate once per process outside PyTorch's allocator: an
 * NVLink buffer (cudaMalloc + IPC handles) and, past one node's 8 GPUs, an RDMA buffer (NVSHMEM's
 * symmetric heap). Their sizes are the library's own hints, the larger of its dispatch and
 * combine configs (Megatron-LM d98e8a64 megatron/core/transformer/moe/fused_a2a.py get_buffer;
 * hidden_bytes = hidden x max(element size, 2), get_hidden_bytes; 20 SMs unless
 * moe_flex_dispatcher_num_sms, token_dispatcher.py:1287). Formulas: deepseek-ai/DeepEP dd758caf
 * csrc/legacy/config.hpp get_nvl_buffer_size_hint / get_rdma_buffer_size_hint; configs:
 * deep_ep/buffers/legacy.py get_dispatch_config / get_combine_config (one row per EP size here);
 * a SourceMeta of 8 bytes (internode.cu), top-k indices int64 (EP_NUM_TOPK_IDX_BITS 64).
 * HybridEP (--moe-flex-backend hybridep), the backend Megatron-Bridge's Blackwell MoE recipes run,
 * sizes its buffers by the tokens instead: pp_hybridep_buffer_bytes below. */
#include <math.h>

#include "pp_layer.h"
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

double pp_flex_layout_bytes(const pp_work *w, const pp_layout *l)
{
    /* the flex dispatcher's group is expert TP x EP (token_dispatcher.py MoEFlexTokenDispatcher:
     * tp_ep_group); its tokens bf16 */
    if (w->model.experts <= 1 || w->stack.dispatcher != PP_DISPATCH_FLEX) return 0.0;
    const int64_t ranks = l->ep * pp_layout_etp(l);
    if (w->stack.flex_backend == PP_FLEX_HYBRIDEP) {
        /* the dispatcher's input: one micro-batch's routed tokens on the rank, x.shape[-2] at the
         * first dispatch (fused_a2a.py HybridEPDispatch.forward) */
        double tokens = pp_layer_tokens_routed(w, l);
        int64_t domain = pp_work_nvlink_gpus(w);
        return pp_hybridep_buffer_bytes(tokens, ranks, domain < ranks ? domain : ranks,
                                        (double)w->model.experts / (double)l->ep, (double)w->model.hidden);
    }
    return pp_deepep_buffer_bytes(ranks, 2.0 * (double)w->model.hidden, PP_DEEPEP_SMS);
}

/* HybridEP's NVLink-domain buffers (deepseek-ai/DeepEP hybrid-ep 94a9f8f5, csrc/hybrid_ep/buffer/
 * intranode.cu NVLCoordinator::init and allocate_combine_buffers / allocate_dispatch_buffers), made
 * once at the first dispatch for the largest case, every token of the group routed to this rank:
 * max_num_of_tokens = tokens per rank x ranks per NVLink domain x domains. With the shared buffer
 * (hybrid_ep_buffer.py use_shared_buffer=True, Megatron-LM d98e8a64 fused_a2a.py
 * init_hybrid_ep_buffer keeps it) dispatch and combine share the token (16-bit) and probability
 * (fp32, local experts x ranks per domain) buffers; dispatch adds its fp32 scaling factors (one per
 * 128 of hidden), allocated with or without FP8. The flags and preprocessing scratch are bytes.
 * A group that spans NVLink domains adds RDMA staging buffers (internode_doca.cu): not priced. */
double pp_hybridep_buffer_bytes(double tokens, int64_t ranks, int64_t domain_ranks, double local_experts,
                                double hidden)
{
    if (ranks < 2 || tokens <= 0) return 0.0;
    if (domain_ranks < 1) domain_ranks = 1;
    double max_tokens = tokens * (double)ranks;
    double token = max_tokens * hidden * 2.0;
    double prob = max_tokens * local_experts * (double)domain_ranks * 4.0;
    double scale = max_tokens * floor(hidden / 128.0) * 4.0;
    return token + prob + scale;
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
