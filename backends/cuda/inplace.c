/* The CUDA backend's may_alias (plugin ABI 1.5): which kernels stay correct with an output in an input's bytes.
 * elementwise.cu's kernels compute y[i] from a[i], b[i] in the thread that writes y[i] (four of them per
 * thread in the float4 paths), and its variadic ops already run with y == x; a conv with a fused "+ Z" either
 * passes Z to cudnnConvolutionBiasActivationForward (z, alpha2 = 1: a per-element epilogue) or, unfused, copies
 * Z into Y (skipped when z == y, conv.c) and blends with beta = 1, which reads Y before it writes it. */
#include <string.h>

#include "cuda_internal.h"
#include "../common/alias_util.h"

int cuda_may_alias(const netrun_backend_config *config, const netrun_node_desc *node, int output, int input);

int cuda_may_alias(const netrun_backend_config *config, const netrun_node_desc *node, int output, int input) {
    (void)config;
    static const char *const unary[] = {
        "Relu", "Neg", "Abs", "Sign", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Sqrt", "Reciprocal", "Floor",
        "Ceil", "Round", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
        "Softplus", "Softsign", "HardSwish", "Mish", "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid",
        "ThresholdedRelu", "Gelu", "Shrink", "Clip", "Swish", "Not", "BitwiseNot", NULL};
    /* binary (and two-input variadic) ops: one launch, y[i] from a and b at i's broadcast offsets */
    static const char *const binary[] = {"Add", "Sub", "Mul", "Div", "And", "Or", "Xor", "BitwiseAnd",
                                         "BitwiseOr", "BitwiseXor", "Max", "Min", "Sum", NULL};
    if (!node || output != 0 || input < 0 || input >= node->n_inputs || node->n_outputs < 1) return 0;
    if (node->domain && *node->domain && strcmp(node->domain, "ai.onnx")) return 0;
    const char *op = node->op_type;
    const netrun_value_desc *y = &node->outputs[0], *x = &node->inputs[input];
    if (!nr_alias_same_shape(x, y)) return 0;
    if (nr_alias_listed(op, unary)) return input == 0; /* Clip's min/max inputs are scalars, never aliased */
    if (nr_alias_listed(op, binary)) return node->n_inputs == 2;
    if (!strcmp(op, "PRelu")) return input == 0;
    /* Conv + Z: float32 tensors only (the float16 NHWC region's convs are left out until checked) */
    if (!strcmp(op, "Conv") && node->params && node->params_size >= sizeof(netrun_conv_params)) {
        const netrun_conv_params *p = node->params;
        return p->has_sum && input == node->n_inputs - 1 && y->dtype == NETRUN_DTYPE_FLOAT;
    }
    return 0;
}
