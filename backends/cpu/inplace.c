/* The CPU backend's may_alias (plugin ABI 1.5): which kernels stay correct with an output in an input's bytes.
 * Each entry was checked against its kernel: the element loops of elementwise.c read x[i] (and a[i], b[i])
 * before they write y[i] at the same index, block by block for float16/bfloat16; oneDNN's sum post-op adds what
 * the destination holds, and conv_dnnl.c skips its Z -> Y copy when z == y. */
#include <string.h>

#include "cpu_internal.h"
#include "../common/alias_util.h"

int cpu_may_alias(const netrun_backend_config *config, const netrun_node_desc *node, int output, int input);

int cpu_may_alias(const netrun_backend_config *config, const netrun_node_desc *node, int output, int input) {
    (void)config;
    /* run_unary: y[i] = f(x[i]) */
    static const char *const unary[] = {
        "Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Erf", "Exp", "Log", "Sqrt", "Neg",
        "Abs", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
        "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Elu", "Selu", "Celu", "Softplus", "Softsign",
        "ThresholdedRelu", "Gelu", "Mish", "Shrink", "Swish", "Not", "BitwiseNot", NULL};
    /* run_binary: y[i] = f(a[i*sa], b[i*sb]); an input of the output's shape has stride 1 */
    static const char *const binary[] = {"Add", "Sub", "Mul", "Div", "And", "Or", "Xor", "BitwiseAnd",
                                         "BitwiseOr", "BitwiseXor", NULL};
    /* run_variadic with two inputs is one binary pass (with more, y is written before input 2 is read) */
    static const char *const variadic[] = {"Max", "Min", "Sum", NULL};
    if (!node || output != 0 || input < 0 || input >= node->n_inputs || node->n_outputs < 1) return 0;
    if (node->domain && *node->domain && strcmp(node->domain, "ai.onnx")) return 0;
    const char *op = node->op_type;
    const netrun_value_desc *y = &node->outputs[0], *x = &node->inputs[input];
    if (!nr_alias_same_shape(x, y)) return 0;
    if (nr_alias_listed(op, unary)) return input == 0 && node->n_inputs == 1;
    if (nr_alias_listed(op, binary)) return node->n_inputs == 2;
    if (nr_alias_listed(op, variadic)) return node->n_inputs == 2;
    if (!strcmp(op, "PRelu")) return input == 0;
    /* rms_rows (transformer.c): a row's sum of squares is taken before any y[i] = x[i] * inv * w[i] of it */
    if (!strcmp(op, "RMSNormalization")) return input == 0;
    /* Conv + Z (a fused Add): only convs reading and writing nChw16c, which always run on oneDNN (conv.c
     * refuses them otherwise) and whose Z and Y share that layout (Z follows X's); the im2col/sgemm path writes
     * Y before its epilogue reads Z. */
    if (!strcmp(op, "Conv") && node->params && node->params_size >= sizeof(netrun_conv_params)) {
        const netrun_conv_params *p = node->params;
        return p->has_sum && input == node->n_inputs - 1 && p->src_blocked && p->dst_blocked &&
               y->dtype == NETRUN_DTYPE_FLOAT;
    }
    return 0;
}
