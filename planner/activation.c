/* The MLP activations as a table (pp_act_row in pp.h): what each is to Hugging Face configs,
 * Megatron-LM, NeMo and torchtitan, whether it is gated, and what it keeps for its backward fused
 * and eager. Every loader, reader, launch writer and estimate reads a row here; a new activation is
 * a new row (and its enum value in pp.h). */
#include "pp.h"

#include <string.h>

/* Saved bytes per token and per inner (f) element, fc2's input not counted (layer.c adds it):
 *  - GELU: its input (fc1's output, 2 B); fused (fusions/fused_bias_gelu.py) or eager alike, and
 *    measured so on 4 x H100 (tests/data/node4/h100 g13_def / g13_nogelu: 0 MiB apart).
 *  - SwiGLU: fused (fusions/fused_bias_swiglu.py, SwiGLUFunction saves its input) the fc1 output,
 *    2f wide (4 B); eager (transformer/mlp.py glu()) also silu(gate) and the x_linear +
 *    glu_linear_offset copy, both saved by the product (8 B). Measured: 4f B per token apart
 *    (l1_def / l1_noswi).
 *  - ReLU: torch's relu saves its output (threshold_backward reads the result), which is fc2's
 *    input: nothing besides (0 B). Megatron-LM has no ReLU switch.
 *  - squared ReLU (Nemotron-4, megatron/core/activations.py squared_relu = pow(relu(x), 2)): the
 *    relu output, which pow saves and relu's backward reads (2 B); its square is fc2's input.
 *    Megatron fuses no bias kernel for it (mlp.py: "Only support fusion of gelu and swiglu"), so a
 *    run needs --no-bias-gelu-fusion beside --squared-relu (argument_utils.py takes
 *    bias_gelu_fusion for it). Not measured. */
const pp_act_row pp_activations[PP_ACT_COUNT] = {
    [PP_ACT_GELU] = {false, "gelu*|quick_gelu",
                     "", true, "--no-bias-gelu-fusion", "gelu", NULL, 2.0, 2.0,
                     "Megatron-LM arguments.py (GELU unless --swiglu/--squared-relu), fusions/fused_bias_gelu.py"},
    [PP_ACT_SWIGLU] = {true, "silu|swish", "--swiglu", true, "--no-bias-swiglu-fusion", "fast-swiglu",
                       "swiglu", 4.0, 8.0,
                       "Megatron-LM fusions/fused_bias_swiglu.py, transformer/mlp.py glu(); torchtitan llama3 FeedForward"},
    [PP_ACT_RELU] = {false, "relu", NULL, false, "--no-bias-gelu-fusion", "relu", NULL, 0.0, 0.0,
                     "torch.nn.functional.relu (OPT's activation_function)"},
    [PP_ACT_SQUARED_RELU] = {false, "relu2", "--squared-relu", false, "--no-bias-gelu-fusion",
                             "squared-relu", NULL, 2.0, 2.0,
                             "Megatron-LM core/activations.py squared_relu, arguments.py --squared-relu; HF "
                             "NemotronConfig hidden_act relu2"},
};

const char *const pp_act_names[PP_ACT_COUNT] = {
    [PP_ACT_GELU] = "gelu", [PP_ACT_SWIGLU] = "swiglu", [PP_ACT_RELU] = "relu", [PP_ACT_SQUARED_RELU] = "squared-relu",
};

const pp_act_row *pp_act_info(pp_act a) { return (unsigned)a < PP_ACT_COUNT ? &pp_activations[a] : NULL; }

int pp_act_from_hf(const char *s, bool gated)
{
    if (!s) return -1;
    size_t n = strlen(s);
    for (int i = 0; i < PP_ACT_COUNT; i++) {
        if (pp_activations[i].gated != gated) continue;
        for (const char *p = pp_activations[i].hf; p && *p;) {
            const char *e = strchr(p, '|');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            /* "gelu*": every spelling that starts with gelu (gelu_new, gelu_pytorch_tanh, ...) */
            bool prefix = l > 0 && p[l - 1] == '*';
            if (prefix ? n >= l - 1 && !strncmp(p, s, l - 1) : l == n && !strncmp(p, s, n)) return i;
            p = e ? e + 1 : p + l;
        }
    }
    return -1;
}
