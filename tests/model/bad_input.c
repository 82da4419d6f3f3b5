/* Bad input to the loaders: every case must be PP_ERR_INPUT at the exact line:col with a
 * message that names the key, and nothing may crash (a mutation loop at the end).
 * Suite: bad-input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pp.h"
#include "pp_load.h"
#include "pp_profile.h"
#include "tap.h"

typedef enum { MODEL, GPU, PROFILE } kind;

typedef struct {
    kind k;
    const char *what;
    const char *text;
    int line, col;
    const char *needle; /* must occur in the message */
} bad_case;

#define OKM "layers: 2\nhidden: 64\nheads: 4\nvocab: 100\nseq: 16\n"
#define OKG "name: g\nmemory_gib: 80\nmem_bw_gbs: 2000\nflops: {bf16: 312}\nnvlink_gbs: 0\npcie_gbs: 32\n" \
            "gpus_per_node: 4\ninternode_gbs: 0\ngemm_eff: 0.8\nintra_latency_us: 10\ninter_latency_us: 20\n"
#define OKP "gpu: x\nmeasured: today\n"
/* the shape keys of a small decoder config, on the first line */
#define HFB "\"hidden_size\": 64, \"intermediate_size\": 128, \"num_attention_heads\": 4, \"num_hidden_layers\": 8, " \
            "\"vocab_size\": 100, \"max_position_embeddings\": 32"

static const bad_case cases[] = {
    /* our model schema */
    {MODEL, "unknown key", "layers: 2\nhiden: 64\n", 2, 1, "unknown key 'hiden'"},
    {MODEL, "string for a number", "layers: \"2\"\n", 1, 9, "'layers': expected a number, got the string"},
    {MODEL, "mapping for a number", "layers: {a: 1}\n", 1, 9, "'layers': expected a number, got a mapping"},
    {MODEL, "sequence for a number", OKM "ffn: [1, 2]\n", 6, 6, "'ffn': expected a number, got a sequence"},
    {MODEL, "negative", "layers: -1\n", 1, 9, "'layers': -1 is out of range"},
    {MODEL, "zero", "layers: 2\nheads: 0\n", 2, 8, "'heads': 0 is out of range"},
    {MODEL, "overflow", "vocab: 99999999999999999999999\n", 1, 8, "'vocab': 99999999999999999999999 is out of range"},
    {MODEL, "int64 overflow", "gbs: 9223372036854775808\n", 1, 6, "'gbs'"},
    {MODEL, "absurd", "hidden: 10000001\n", 1, 9, "'hidden': 10000001 is out of range"},
    {MODEL, "non-numeric", "seq: abc\n", 1, 6, "'seq': 'abc' is not a finite decimal number"},
    {MODEL, "NaN", "seq: .nan\n", 1, 6, "'seq': '.nan' is not a finite"},
    {MODEL, "inf", "seq: .inf\n", 1, 6, "'seq': '.inf' is not a finite"},
    {MODEL, "NaN spelled", "published_params: nan\n", 1, 19, "'published_params': 'nan'"},
    {MODEL, "trailing junk", "seq: 12abc\n", 1, 6, "'seq': '12abc'"},
    {MODEL, "hex", "seq: 0x10\n", 1, 6, "'seq': '0x10'"},
    {MODEL, "fraction for an integer", "layers: 2.5\n", 1, 9, "'layers': expected an integer, got '2.5'"},
    {MODEL, "null for a number", "layers: null\n", 1, 9, "'layers': 'null'"},
    {MODEL, "empty file", "", 1, 1, "empty document"},
    {MODEL, "comments only", "# nothing here\n\n", 1, 1, "empty document"},
    {MODEL, "binary junk", "\x01\x02\xff\xfe", 1, 1, "invalid YAML"},
    {MODEL, "invalid UTF-8 later", "layers: 2\nname: \xc3\x28\n", 2, 8, "invalid YAML"},
    {MODEL, "truncated flow", "layers: [1, 2\n", 2, 1, "invalid YAML"},
    {MODEL, "truncated quote", "name: \"abc\n", 2, 1, "invalid YAML"},
    {MODEL, "tab indentation", "layers: 2\n\thidden: 3\n", 2, 1, "invalid YAML"},
    {MODEL, "deeply nested", "layers: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n", 1, 24, "nesting deeper than 16"},
    {MODEL, "duplicate key", "layers: 2\nhidden: 64\nlayers: 3\n", 3, 1, "duplicate key 'layers' (first at line 1)"},
    {MODEL, "sequence root", "- 1\n- 2\n", 1, 1, "expected a mapping of keys at the top level, got a sequence"},
    {MODEL, "scalar root", "hello\n", 1, 1, "got a scalar"},
    {MODEL, "missing required key", "layers: 2\nhidden: 64\nheads: 4\nvocab: 100\n", 1, 1, "missing required key 'seq'"},
    {MODEL, "hidden not divisible by heads", "layers: 2\nhidden: 64\nheads: 5\nvocab: 100\nseq: 16\n", 3, 1,
     "hidden 64 is not divisible by heads 5"},
    {MODEL, "kv_heads not dividing heads", OKM "kv_heads: 3\n", 6, 1, "kv_heads 3 does not divide heads 4"},
    {MODEL, "kv_heads > heads", OKM "kv_heads: 8\n", 6, 1, "kv_heads must be between 1 and 4"},
    {MODEL, "topk > experts", OKM "experts: 4\ntopk: 5\n", 7, 1, "topk 5 is more than the 4 experts"},
    {MODEL, "experts without topk", OKM "experts: 4\n", 1, 1, "topk must be at least 1"},
    {MODEL, "bad enum", OKM "activation: swish\n", 6, 13, "'activation': 'swish' is not one of gelu|swiglu|relu"},
    {MODEL, "bad position", OKM "position: absolute\n", 6, 11, "'position': 'absolute' is not one of learned|rope|alibi|none"},
    {MODEL, "bool spelled yes", OKM "bias: yes\n", 6, 7, "'bias': expected true or false, got 'yes'"},
    {MODEL, "quoted bool", OKM "tied: \"true\"\n", 6, 7, "'tied': expected true or false"},
    {MODEL, "mapping for a string", OKM "name: {a: b}\n", 6, 7, "'name': expected a string, got a mapping"},
    {MODEL, "string too long", OKM "name: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n", 6, 7,
     "'name': string longer than 63"},
    {MODEL, "NUL in a string", OKM "name: \"a\\0b\"\n", 6, 7, "'name': string contains a NUL"},
    {MODEL, "alias", "layers: &x 2\nheads: *x\n", 2, 8, "aliases"},
    {MODEL, "two documents", "layers: 2\n---\nlayers: 3\n", 2, 1, "more than one YAML document"},
    {MODEL, "unsupported tag", "layers: !!binary AAAA\n", 1, 9, "'layers': unsupported tag"},
    {MODEL, "custom tag", "layers: !big 2\n", 1, 9, "unsupported tag '!big'"},
    {MODEL, "complex key", "? [a, b]\n: 1\n", 1, 3, "keys must be plain strings, got a sequence"},
    {MODEL, "too many parameters", "layers: 100000\nhidden: 1000000\nheads: 8\nvocab: 10\nseq: 4\n", 1, 1,
     "more than the 1e+16 supported"},
    /* GPUs */
    {GPU, "unknown dtype in flops", OKG "x: 1\n", 12, 1, "unknown key 'x'"},
    {GPU, "unknown key in flops", "flops: {bf17: 1}\n", 1, 9, "flops: unknown key 'bf17'"},
    {GPU, "flops not a mapping", "flops: 312\n", 1, 8, "'flops': expected a mapping, got a scalar"},
    {GPU, "two memory keys", "memory_mib: 81920\n" OKG, 3, 1, "give exactly one of"},
    {GPU, "gemm_eff > 1", "name: g\ngemm_eff: 1.5\n", 2, 11, "'gemm_eff': 1.5 is out of range"},
    /* the training fraction of the gemm_eff rate (cost/time.c): 0.5-1, a fraction, not a percentage */
    {GPU, "gemm_sustained > 1", "name: g\ngemm_sustained: 88\n", 2, 17, "'gemm_sustained': 88 is out of range"},
    {GPU, "gemm_sustained zero", "name: g\ngemm_sustained: 0\n", 2, 17, "'gemm_sustained': 0 is out of range"},
    {GPU, "negative bandwidth", "name: g\nmem_bw_gbs: -5\n", 2, 13, "'mem_bw_gbs'"},
    {GPU, "missing flops", "name: g\nmemory_gib: 80\nmem_bw_gbs: 2000\nnvlink_gbs: 0\npcie_gbs: 32\n"
     "gpus_per_node: 4\ninternode_gbs: 0\ngemm_eff: 0.8\nintra_latency_us: 10\ninter_latency_us: 20\n", 1, 1,
     "missing required key 'flops'"},
    {GPU, "no 16-bit flops", "name: g\nmemory_gib: 80\nmem_bw_gbs: 2000\nflops: {fp32: 19.5}\nnvlink_gbs: 0\npcie_gbs: 32\n"
     "gpus_per_node: 4\ninternode_gbs: 0\ngemm_eff: 0.8\nintra_latency_us: 10\ninter_latency_us: 20\n", 4, 1,
     "bf16 or fp16 must be given"},
    {GPU, "gpus_per_node fraction", "name: g\ngpus_per_node: 7.5\n", 2, 16, "'gpus_per_node': expected an integer"},
    /* the power limit (planner/model/gpu_power.c): the error at the key it is about */
    {GPU, "max_power_w zero", "name: g\nmax_power_w: 0\n", 2, 14, "'max_power_w': 0 is out of range"},
    {GPU, "gpu_power_w negative", "name: g\ngpu_power_w: -5\n", 2, 14, "'gpu_power_w': -5 is out of range"},
    {GPU, "gpu_power_w above max_power_w", OKG "max_power_w: 700\ngpu_power_w: 800\n", 13, 1,
     "gpu: gpu_power_w 800 W is above g's maximum power limit of 700 W"},
    {GPU, "gpu_power_w without max_power_w", OKG "gpu_power_w: 500\n", 12, 1, "gpu_power_w needs the GPU's max_power_w"},
    {GPU, "gpu_power_w below the curve", OKG "max_power_w: 700\ngpu_power_w: 200\n", 13, 1,
     "gpu_power_w 200 W is 29% of g's 700 W"},
    /* Hugging Face config.json */
    {MODEL, "HF string for a number", "{\"model_type\": \"llama\",\n \"hidden_size\": \"4096\"}", 2, 17,
     "'hidden_size': expected a number, got the string \"4096\""},
    {MODEL, "HF unsupported model_type", "{\"model_type\": \"t5\", \"d_model\": 512}", 1, 16, "'model_type': 't5' is not supported"},
    {MODEL, "HF no model_type", "{\"hidden_size\": 64}", 1, 1, "missing required key 'model_type'"},
    {MODEL, "HF missing key", "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 4,\n"
     " \"num_hidden_layers\": 2, \"vocab_size\": 100, \"max_position_embeddings\": 16}", 1, 1,
     "missing required key 'intermediate_size'"},
    {MODEL, "HF bad hidden_act", "{\"model_type\": \"llama\", \"hidden_size\": 64, \"intermediate_size\": 128,\n"
     " \"num_attention_heads\": 4, \"num_hidden_layers\": 2, \"vocab_size\": 100,\n"
     " \"max_position_embeddings\": 16, \"hidden_act\": \"tanh\"}", 3, 47, "'hidden_act': 'tanh' is not supported"},
    {MODEL, "HF heads not dividing hidden", "{\"model_type\": \"gpt_neox\", \"hidden_size\": 64, \"intermediate_size\": 256,\n"
     " \"num_attention_heads\": 5, \"num_hidden_layers\": 2, \"vocab_size\": 100,\n"
     " \"max_position_embeddings\": 16}", 2, 2, "hidden 64 is not divisible by heads 5"},
    {MODEL, "HF bool as string", "{\"model_type\": \"gpt2\",\n \"tie_word_embeddings\": \"yes\"}", 2, 25,
     "'tie_word_embeddings': expected true or false"},
    {MODEL, "HF architectures not a list", "{\"model_type\": \"gpt2\", \"architectures\": \"GPT2\"}", 1, 41,
     "'architectures': expected a sequence of strings"},
    {MODEL, "HF duplicate key", "{\"model_type\": \"gpt2\",\n \"n_embd\": 64,\n \"n_embd\": 128}", 3, 2,
     "duplicate key 'n_embd' (first at line 2)"},
    {MODEL, "HF duplicate unknown key", "{\"model_type\": \"gpt2\", \"foo\": 1,\n \"foo\": 2}", 2, 2, "duplicate key 'foo'"},
    {MODEL, "HF OPT projected embeddings", "{\"model_type\": \"opt\", \"hidden_size\": 1024, \"ffn_dim\": 4096,\n"
     " \"num_attention_heads\": 16, \"num_hidden_layers\": 24, \"vocab_size\": 50272,\n"
     " \"max_position_embeddings\": 2048, \"word_embed_proj_dim\": 512}", 3, 58, "'word_embed_proj_dim': 512 differs"},
    {MODEL, "HF mixtral without experts", "{\"model_type\": \"mixtral\", \"hidden_size\": 64, \"intermediate_size\": 128,\n"
     " \"num_attention_heads\": 4, \"num_hidden_layers\": 2, \"vocab_size\": 100, \"max_position_embeddings\": 16}", 1, 1,
     "missing required key 'num_local_experts'"},
    {MODEL, "HF negative", "{\"model_type\": \"gpt2\", \"n_layer\": -2}", 1, 35, "'n_layer': -2 is out of range"},
    {MODEL, "HF truncated JSON", "{\"model_type\": \"gpt2\", \"n_layer\": 2", 2, 1, "invalid JSON: unexpected end of file"},
    /* Hugging Face config.json: today's model types (planner/model/hf_config.c) */
    {MODEL, "HF unsupported model_type: the list", "{\"model_type\": \"rwkv\"}", 1, 16,
     "'model_type': 'rwkv' is not supported (llama, mistral, mixtral, phi3, qwen2, qwen2_moe, qwen3, qwen3_moe, "
     "gemma, gemma2, gemma3_text, olmo2, gpt_oss, llama4_text, deepseek_v2, deepseek_v3, kimi_k2, gemma3, llama4, gpt2"},
    {MODEL, "HF sliding window from layer n on", "{\"model_type\": \"qwen2\", " HFB ",\n"
     " \"use_sliding_window\": true, \"sliding_window\": 16,\n \"max_window_layers\": 3}", 3, 23,
     "'max_window_layers': 3: full attention on the first 3 layers and a sliding window above is not modelled"},
    {MODEL, "HF sliding window without its size", "{\"model_type\": \"qwen3\", " HFB ",\n"
     " \"use_sliding_window\": true, \"sliding_window\": null}", 2, 48, "'sliding_window': null where a number is needed"},
    {MODEL, "HF experts_per_token disagrees", "{\"model_type\": \"gpt_oss\", " HFB ",\n"
     " \"num_local_experts\": 8, \"num_experts_per_tok\": 4,\n \"experts_per_token\": 2}", 3, 23,
     "'experts_per_token': 2 disagrees with 'num_experts_per_tok' 4"},
    {MODEL, "HF num_experts and num_local_experts disagree", "{\"model_type\": \"qwen3_moe\", " HFB ",\n"
     " \"num_experts\": 8, \"num_local_experts\": 16, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32}", 2, 41,
     "'num_local_experts': 16 disagrees with 'num_experts' 8"},
    {MODEL, "HF top-k above the experts", "{\"model_type\": \"qwen3_moe\", " HFB ",\n"
     " \"num_experts\": 4,\n \"num_experts_per_tok\": 8, \"moe_intermediate_size\": 32}", 3, 2,
     "topk 8 is more than the 4 experts"},
    {MODEL, "HF decoder_sparse_step past the layers", "{\"model_type\": \"qwen3_moe\", " HFB ",\n"
     " \"num_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32,\n \"decoder_sparse_step\": 9}",
     3, 2, "the MoE layer pattern leaves no MoE layer"},
    {MODEL, "HF mlp_only_layers past the layers", "{\"model_type\": \"qwen3_moe\", " HFB ",\n"
     " \"num_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32,\n \"mlp_only_layers\": [1, 8]}",
     3, 21, "'mlp_only_layers': layer 8 is not one of the 8 layers"},
    {MODEL, "HF one expert", "{\"model_type\": \"mixtral\", " HFB ",\n \"num_local_experts\": 1, \"num_experts_per_tok\": 1}",
     2, 23, "'num_local_experts': 1: a MoE layer needs at least 2 experts"},
    {MODEL, "HF null where a number is needed", "{\"model_type\": \"qwen3\",\n \"hidden_size\": null, \"intermediate_size\": 128}",
     2, 17, "'hidden_size': null where a number is needed (model_type 'qwen3')"},
    {MODEL, "HF MLA keys without kv_lora_rank", "{\"model_type\": \"deepseek_v3\", " HFB ",\n"
     " \"q_lora_rank\": 16, \"qk_nope_head_dim\": 8, \"qk_rope_head_dim\": 8, \"v_head_dim\": 16}", 1, 1,
     "missing required key 'kv_lora_rank'"},
    {MODEL, "HF kv_lora_rank null", "{\"model_type\": \"deepseek_v2\", " HFB ",\n"
     " \"kv_lora_rank\": null, \"qk_nope_head_dim\": 8, \"qk_rope_head_dim\": 8, \"v_head_dim\": 16}", 2, 18,
     "'kv_lora_rank': null where a number is needed"},
    {MODEL, "HF MLA on a type without it", "{\"model_type\": \"qwen3\", " HFB ",\n \"q_lora_rank\": 16}", 2, 17,
     "'q_lora_rank': multi-head latent attention is not part of model_type 'qwen3'"},
    {MODEL, "HF MTP on a type without it", "{\"model_type\": \"deepseek_v2\", " HFB ",\n \"num_nextn_predict_layers\": 1,"
     " \"kv_lora_rank\": 16, \"qk_nope_head_dim\": 8, \"qk_rope_head_dim\": 8, \"v_head_dim\": 16}", 2, 30,
     "'num_nextn_predict_layers': multi-token prediction is not part of model_type 'deepseek_v2'"},
    {MODEL, "HF experts on a dense type", "{\"model_type\": \"qwen3\", " HFB ",\n \"num_experts\": 8}", 2, 17,
     "'num_experts': model_type 'qwen3' has no experts"},
    {MODEL, "HF MLA projection biases", "{\"model_type\": \"deepseek_v2\", " HFB ",\n \"attention_bias\": true,"
     " \"kv_lora_rank\": 16, \"qk_nope_head_dim\": 8, \"qk_rope_head_dim\": 8, \"v_head_dim\": 16}", 2, 20,
     "'attention_bias': model_type 'deepseek_v2' has no attention biases to turn on (the latent projections'"},
    {MODEL, "HF irregular layer_types", "{\"model_type\": \"gemma2\", " HFB ",\n \"layer_types\": [\"sliding_attention\","
     " \"full_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\", \"sliding_attention\","
     " \"sliding_attention\", \"sliding_attention\"]}", 2, 17, "'layer_types': this mix of full and windowed layers is not modelled"},
    {MODEL, "HF unknown layer type", "{\"model_type\": \"gpt_oss\", " HFB ", \"num_local_experts\": 4,"
     " \"num_experts_per_tok\": 2,\n \"layer_types\": [\"sliding_attention\", \"linear_attention\", \"full_attention\","
     " \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\"]}", 2, 39,
     "'layer_types': entry 1 is not one of full_attention, sliding_attention, chunked_attention"},
    {MODEL, "HF layer_types of another length", "{\"model_type\": \"gemma2\", " HFB ",\n \"layer_types\": [\"full_attention\"]}",
     2, 17, "'layer_types': 1 entries for 8 layers"},
    {MODEL, "HF no_rope_layers too short", "{\"model_type\": \"llama4_text\", " HFB ", \"intermediate_size_mlp\": 256,"
     " \"num_local_experts\": 4, \"num_experts_per_tok\": 1,\n \"no_rope_layers\": [1, 1, 1, 0]}", 2, 20,
     "'no_rope_layers': 4 entries for 8 layers"},
    {MODEL, "HF moe_layers past the layers", "{\"model_type\": \"llama4_text\", " HFB ", \"intermediate_size_mlp\": 256,"
     " \"num_local_experts\": 4, \"num_experts_per_tok\": 1,\n \"moe_layers\": [1, 9]}", 2, 16,
     "'moe_layers': layer 9 is not one of the 8 layers"},
    {MODEL, "HF text_config not a mapping", "{\"model_type\": \"gemma3\",\n \"text_config\": [1]}", 2, 17,
     "'text_config': expected a mapping, got a sequence"},
    {MODEL, "HF text_config missing", "{\"model_type\": \"llama4\", \"vision_config\": {}}", 1, 1,
     "missing required key 'text_config'"},
    {MODEL, "HF text_config of another type", "{\"model_type\": \"gemma3\", \"text_config\": {\n \"model_type\": \"llama4_text\"}}",
     2, 16, "'model_type': 'llama4_text' inside a 'gemma3' config (expected 'gemma3_text')"},
    {MODEL, "HF text_config error position", "{\"model_type\": \"llama4\", \"text_config\": {\n \"hidden_size\": \"5120\"}}",
     2, 17, "'hidden_size': expected a number, got the string"},
    {MODEL, "HF dropout of 1.5", "{\"model_type\": \"llama\", " HFB ",\n \"attention_dropout\": 1.5}", 2, 23,
     "'attention_dropout': 1.5 is out of range"},
    {MODEL, "HF hidden_activation", "{\"model_type\": \"gemma2\", " HFB ",\n \"hidden_activation\": \"relu\"}", 2, 23,
     "'hidden_activation': 'relu' is not supported (silu|swish, gelu*)"},
    /* profiles */
    {PROFILE, "unknown key in a gemm record", OKP "gemm:\n  - {dtype: bf16, m: 1, n: 1, k: 1, tflops: 1, foo: 2}\n", 4, 48,
     "gemm[0]: unknown key 'foo'"},
    {PROFILE, "gemm not a sequence", OKP "gemm: {dtype: bf16}\n", 3, 7, "'gemm': expected a sequence"},
    {PROFILE, "gemm record not a mapping", OKP "gemm: [1]\n", 3, 8, "gemm[0]: expected a mapping"},
    {PROFILE, "bad dtype", OKP "gemm:\n  - {dtype: int4, m: 1, n: 1, k: 1, tflops: 1}\n", 4, 13, "'dtype': 'int4' is not one of"},
    {PROFILE, "missing tflops", OKP "gemm:\n  - {dtype: bf16, m: 1, n: 1, k: 1}\n", 4, 5, "gemm[0]: missing required key 'tflops'"},
    {PROFILE, "bad nccl op", OKP "nccl:\n  - {op: broadcast, ranks: 2, bytes: 1, busbw_gbs: 1}\n", 4, 10, "'op': 'broadcast' is not one of"},
    {PROFILE, "negative busbw", OKP "nccl:\n  - {op: all_reduce, ranks: 2, bytes: 1, busbw_gbs: -1}\n", 4, 53, "'busbw_gbs': -1"},
    {PROFILE, "unknown bandwidth key", OKP "bandwidth: {copy_gbs: 1, mul_gbs: 1, add_gbs: 1}\n", 3, 38, "bandwidth: unknown key 'add_gbs'"},
    {PROFILE, "missing gpu", "measured: today\n", 1, 1, "missing required key 'gpu'"},
    {PROFILE, "unknown top-level key", OKP "gemms: []\n", 3, 1, "unknown key 'gemms'"},
    {PROFILE, "attention impl", OKP "attention:\n  - {impl: xformers, b: 1, s: 1, heads: 1, head_dim: 1, fwd_tflops: 1, fwdbwd_tflops: 1}\n",
     4, 12, "'impl': 'xformers' is not one of unfused|flash"},
    /* kv_heads of a layer record (grouped-query attention) */
    {PROFILE, "layer kv_heads not dividing heads", OKP "layer:\n  - {hidden: 3072, heads: 24, kv_heads: 5, seq: 4096, mbs: 2, tp: 1, fwd_ms: 1, fwdbwd_ms: 3}\n",
     4, 41, "layer[0]: 'kv_heads': 5 must divide heads (24)"},
    {PROFILE, "layer kv_heads above heads", OKP "layer:\n  - {hidden: 3072, heads: 24, kv_heads: 48, seq: 4096, mbs: 2, tp: 1, fwd_ms: 1, fwdbwd_ms: 3}\n",
     4, 41, "'kv_heads': 48 must divide heads (24) and be at most heads"},
    {PROFILE, "layer kv_heads 0", OKP "layer:\n  - {hidden: 3072, heads: 24, kv_heads: 0, seq: 4096, mbs: 2, tp: 1, fwd_ms: 1, fwdbwd_ms: 3}\n",
     4, 41, "'kv_heads': 0 is out of range"},
    {PROFILE, "layer kv_heads fraction", OKP "layer:\n  - {hidden: 3072, heads: 24, kv_heads: 2.5, seq: 4096, mbs: 2, tp: 1, fwd_ms: 1, fwdbwd_ms: 3}\n",
     4, 41, "'kv_heads': expected an integer"},
    /* the optimizer section */
    {PROFILE, "unknown key in an optimizer record", OKP "optimizer:\n  - {params: 1000, bytes_per_param: 30, ms: 1, gbs: 30, foo: 2}\n", 4, 57,
     "optimizer[0]: unknown key 'foo'"},
    {PROFILE, "negative optimizer ms", OKP "optimizer:\n  - {params: 1000, bytes_per_param: 30, ms: -1, gbs: 30}\n", 4, 45,
     "'ms': -1 is out of range"},
    {PROFILE, "zero optimizer ms", OKP "optimizer:\n  - {params: 1000, bytes_per_param: 30, ms: 0, gbs: 30}\n", 4, 45,
     "'ms': 0 is out of range"},
    {PROFILE, "optimizer missing gbs", OKP "optimizer:\n  - {params: 1000, bytes_per_param: 30, ms: 1}\n", 4, 5,
     "optimizer[0]: missing required key 'gbs'"},
    {PROFILE, "optimizer zero params", OKP "optimizer:\n  - {params: 0, bytes_per_param: 30, ms: 1, gbs: 30}\n", 4, 14,
     "'params': 0 is out of range"},
};
#define N_CASES (sizeof cases / sizeof cases[0])

static char tmpdir[64];

static pp_status run_case(kind k, const char *text, size_t len, pp_error *err)
{
    pp_model m;
    pp_gpu g;
    pp_profile p;
    switch (k) {
    case MODEL: return pp_model_load_string(&m, text, len, "bad.yaml", err);
    case GPU: return pp_gpu_load_string(&g, text, len, "bad.yaml", err);
    case PROFILE: {
        char path[128];
        snprintf(path, sizeof path, "%s/bad.yaml", tmpdir);
        FILE *f = fopen(path, "wb");
        if (!f) return PP_ERR_RUNTIME;
        fwrite(text, 1, len, f);
        fclose(f);
        pp_status st = pp_profile_load_file(&p, path, err);
        if (st == PP_OK) pp_profile_free(&p);
        /* messages carry the temp path: normalise to bad.yaml for the check */
        if (st != PP_OK && strstr(err->file, "bad.yaml")) snprintf(err->file, sizeof err->file, "bad.yaml");
        return st;
    }
    }
    return PP_ERR_RUNTIME;
}

/* xorshift: reproducible mutations without libc rand() state */
static unsigned long long rng = 0x9E3779B97F4A7C15ULL;
static unsigned rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)rng;
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pp-bad-XXXXXX");
    if (!mkdtemp(tmpdir)) return tap_skip_all("cannot create a temp dir");
    for (size_t i = 0; i < N_CASES; i++) {
        const bad_case *c = &cases[i];
        pp_error err;
        memset(&err, 0, sizeof err);
        pp_status st = run_case(c->k, c->text, strlen(c->text), &err);
        int good = st == PP_ERR_INPUT && err.line == c->line && err.col == c->col && !strcmp(err.file, "bad.yaml") &&
                   strstr(err.msg, c->needle) != NULL;
        tap_ok(good, "%s -> %d:%d %s", c->what, c->line, c->col, c->needle);
        if (!good) tap_diag("got status %d at %s:%d:%d: %s", st, err.file, err.line, err.col, err.msg);
    }
    tap_ok(N_CASES >= 25, "%zu bad-input cases", N_CASES);

    /* Too many keys in one mapping (bounds the quadratic duplicate check). */
    {
        size_t cap = 2100 * 16, n = 0;
        char *big = malloc(cap);
        n += (size_t)snprintf(big + n, cap - n, "{\"model_type\": \"gpt2\"");
        for (int i = 0; i < 2000; i++) n += (size_t)snprintf(big + n, cap - n, ", \"k%d\": %d", i, i);
        snprintf(big + n, cap - n, "}");
        pp_error e = {0};
        pp_status st = run_case(MODEL, big, strlen(big), &e);
        tap_ok(st == PP_ERR_INPUT && e.line == 1 && e.col == 1 && strstr(e.msg, "more than 2000 keys"),
               "2001 keys in a mapping -> 1:1 more than 2000 keys (%s)", e.msg);
        free(big);
    }

    /* A file that does not exist, and a directory given as a file. */
    pp_model m;
    pp_error err = {0};
    tap_ok(pp_model_load_file(&m, "/nonexistent/x.yaml", &err) == PP_ERR_INPUT && strstr(err.msg, "cannot open"),
           "missing file: %s", err.msg);
    tap_ok(pp_model_load_file(&m, "/tmp", &err) == PP_ERR_INPUT && strstr(err.msg, "not a regular file"),
           "directory: %s", err.msg);

    /* No crash, no success on garbage: mutate valid documents byte by byte. Every result
     * is PP_OK or PP_ERR_INPUT, and errors carry a sane position. */
    static const char *const seeds[] = {
        OKM "kv_heads: 2\nactivation: swiglu\nname: x\n", OKG,
        "{\"model_type\": \"llama\", \"hidden_size\": 64, \"intermediate_size\": 128, \"num_attention_heads\": 4,"
        " \"num_hidden_layers\": 2, \"vocab_size\": 100, \"max_position_embeddings\": 16, \"x\": [1, {\"y\": null}]}",
        /* today's families: a wrapper with text_config and layer lists, latent attention + MoE */
        "{\"model_type\": \"llama4\", \"text_config\": {" HFB ", \"intermediate_size_mlp\": 256, \"num_local_experts\": 4,"
        " \"num_experts_per_tok\": 1, \"moe_layers\": [1, 3, 5, 7], \"no_rope_layers\": [1, 1, 1, 0, 1, 1, 1, 0],"
        " \"layer_types\": [\"chunked_attention\", \"full_attention\", \"chunked_attention\", \"full_attention\","
        " \"chunked_attention\", \"full_attention\", \"chunked_attention\", \"full_attention\"]}}",
        "{\"model_type\": \"deepseek_v3\", " HFB ", \"kv_lora_rank\": 16, \"q_lora_rank\": null, \"qk_nope_head_dim\": 8,"
        " \"qk_rope_head_dim\": 8, \"v_head_dim\": 16, \"n_routed_experts\": 4, \"num_experts_per_tok\": 2,"
        " \"moe_intermediate_size\": 32, \"n_shared_experts\": 1, \"first_k_dense_replace\": 1, \"num_nextn_predict_layers\": 1,"
        " \"attention_dropout\": 0.0}",
    };
    const int n_seeds = (int)(sizeof seeds / sizeof seeds[0]);
    static const char alphabet[] = "{}[]:,-\"'#&*!|>%@` \n\t\\0123456789abcxyz.\xff";
    int bad = 0, runs = 0;
    for (int round = 0; round < 5000; round++) {
        int s = round % n_seeds;
        char buf[1024];
        size_t len = strlen(seeds[s]);
        memcpy(buf, seeds[s], len + 1);
        int edits = 1 + (int)(rnd() % 4);
        for (int e = 0; e < edits && len > 1; e++) {
            size_t at = rnd() % len;
            switch (rnd() % 3) {
            case 0: buf[at] = alphabet[rnd() % (sizeof alphabet - 1)]; break;       /* replace */
            case 1: memmove(buf + at, buf + at + 1, len - at); len--; break;        /* delete */
            case 2: if (len < sizeof buf - 2) { memmove(buf + at + 1, buf + at, len - at + 1);
                        buf[at] = alphabet[rnd() % (sizeof alphabet - 1)]; len++; } break; /* insert */
            }
        }
        buf[len] = '\0';
        memset(&err, 0, sizeof err);
        pp_status st = run_case(s == 1 ? GPU : MODEL, buf, len, &err);
        runs++;
        if (!(st == PP_OK || (st == PP_ERR_INPUT && err.line >= 1 && err.col >= 1 && err.msg[0]))) {
            if (bad++ < 5) tap_diag("mutation %d: status %d at %d:%d '%s'", round, st, err.line, err.col, err.msg);
        }
    }
    tap_ok(bad == 0, "%d mutated documents: only OK or positioned input errors (%d bad)", runs, bad);
    char path[128];
    snprintf(path, sizeof path, "%s/bad.yaml", tmpdir);
    unlink(path);
    rmdir(tmpdir);
    return tap_done();
}
