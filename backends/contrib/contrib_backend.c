/*
 * contrib_backend.c — the contrib plugin: onnxruntime's contrib ops, which its transformer optimizer writes into
 * models: com.microsoft Gelu, FastGelu, BiasGelu, QuickGelu, BiasAdd, SkipLayerNormalization,
 * SkipSimplifiedLayerNormalization, LayerNormalization, SimplifiedLayerNormalization, FusedMatMul and Attention, and
 * onnxruntime's ai.onnx SimplifiedLayerNormalization. It defines the ops (ABI 1.9 op_defs, contrib_defs.c) and
 * runs them on host memory (activation.c, norm.c, fused_matmul.c).
 *
 * It only adds ops: its buffers are host memory (NETRUN_BACKEND_HOST_MEMORY), the memory domain of the CPU backend,
 * so a model's nodes alternate between the two without a copy. Kernels are single-threaded.
 */
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "contrib.h"

const netrun_host_api *nrc_host;

#define F32_F16 (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16))

/* `netrun --support-matrix` shows these; placement asks supports(). */
static const netrun_op_support op_table[] = {
    {NRC_MS, "Gelu", F32_F16, ""},
    {NRC_MS, "FastGelu", F32_F16, "bias 1-D over the last dim"},
    {NRC_MS, "BiasGelu", F32_F16, "bias 1-D over the last dim"},
    {NRC_MS, "QuickGelu", F32_F16, ""},
    {NRC_MS, "BiasAdd", F32_F16, "X and skip (N, S, C), bias (C)"},
    {NRC_MS, "SkipLayerNormalization", F32_F16, "input 2-D or 3-D; skip the input's shape, (1, S, H) or (S, H)"},
    {NRC_MS, "SkipSimplifiedLayerNormalization", F32_F16, "input 2-D or 3-D; skip the input's shape, (1, S, H) or (S, H)"},
    {NRC_MS, "LayerNormalization", F32_F16, "scale and bias: one value per normalized element; stash_type 1"},
    {NRC_MS, "SimplifiedLayerNormalization", F32_F16, "scale: one value per normalized element; stash_type 1"},
    {NRC_MS, "FusedMatMul", F32_F16, "transA/B, transBatchA/B, alpha"},
    {NRC_MS, "Attention", F32_F16, "no past/present, attention_bias or rotary; mask_index (B), (2B), (B, T), (B, S, T)"},
    {"", "SimplifiedLayerNormalization", F32_F16, "onnxruntime's RMS norm"},
};

static netrun_status contrib_probe(char *msg, size_t msg_size) {
    snprintf(msg, msg_size, "onnxruntime contrib ops (com.microsoft) on host memory, float32 and float16");
    return NETRUN_OK;
}

static int contrib_device_count(void) { return 1; }

static int contrib_supports(const netrun_backend_config *config, const netrun_node_desc *node, char *reason,
                            size_t reason_size) {
    (void)config;
    int op = nrc_op_of(node->domain, node->op_type, node->opset);
    if (op < 0) {
        snprintf(reason, reason_size, "contrib runs onnxruntime's contrib ops only");
        return 0;
    }
    if (op == NRC_ATTENTION) { /* what attention.c leaves out */
        const nrc_attention_params *p = node->params;
        const netrun_value_desc *m = node->n_inputs > 3 ? &node->inputs[3] : NULL;
        const char *why = p->do_rotary ? "do_rotary"
                        : node->n_inputs > 4 ? "past, attention_bias and past_sequence_length inputs"
                        : node->n_outputs > 1 && node->outputs[1].name ? "the present output"
                        : m && m->rank >= 0 && (m->rank == 0 || m->rank > 3) ? "this mask_index format" : NULL;
        if (why) {
            snprintf(reason, reason_size, "contrib's Attention has no %s", why);
            return 0;
        }
    }
    for (int i = 0; i < node->n_inputs; i++) {
        netrun_dtype t = node->inputs[i].dtype;
        if (op == NRC_ATTENTION && i == 3) continue; /* mask_index: int32 */
        if (node->inputs[i].rank >= 0 && t != NETRUN_DTYPE_FLOAT && t != NETRUN_DTYPE_FLOAT16) {
            snprintf(reason, reason_size, "contrib kernels take float32 and float16, not element type %d", (int)t);
            return 0;
        }
    }
    return 1;
}

/* OpenBLAS single-threaded, as the CPU backend keeps it (the process has one OpenBLAS): its own threads would
 * compete with the CPU backend's pool. */
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_init(void) { openblas_set_num_threads(1); }

/* A context holds nothing: kernels keep their own scratch. */
static netrun_status contrib_context_create(const netrun_backend_config *config, netrun_backend_context **out) {
    (void)config;
    pthread_once(&blas_once, blas_init);
    static int token;
    *out = (netrun_backend_context *)(void *)&token;
    return NETRUN_OK;
}

static void contrib_context_destroy(netrun_backend_context *ctx) { (void)ctx; }

/* ---- host memory ---- */
static netrun_status contrib_buffer_alloc(netrun_backend_context *ctx, size_t bytes, void **buffer) {
    (void)ctx;
    *buffer = nrc_host->alloc(bytes ? bytes : 1, 64);
    return *buffer ? NETRUN_OK : nrc_host->error(NETRUN_ERR_OUT_OF_MEMORY, NRC_NAME ": cannot allocate %zu bytes", bytes);
}

static void contrib_buffer_free(netrun_backend_context *ctx, void *buffer) {
    (void)ctx;
    nrc_host->free(buffer);
}

static void *contrib_buffer_address(netrun_backend_context *ctx, void *buffer) {
    (void)ctx;
    return buffer;
}

static netrun_status contrib_copy_from_host(netrun_backend_context *ctx, void *buffer, size_t offset, const void *src,
                                            size_t bytes) {
    (void)ctx;
    if (bytes) memcpy((char *)buffer + offset, src, bytes);
    return NETRUN_OK;
}

static netrun_status contrib_copy_to_host(netrun_backend_context *ctx, void *dst, const void *buffer, size_t offset,
                                          size_t bytes) {
    (void)ctx;
    if (bytes) memcpy(dst, (const char *)buffer + offset, bytes);
    return NETRUN_OK;
}

/* ---- kernels ---- */
typedef struct contrib_kernel {
    nrc_op op;
    float *scratch; /* FusedMatMul's gathered matrices, Attention's Q/K/V, grown on demand */
    size_t scratch_n;
} contrib_kernel;

static netrun_status contrib_kernel_create(netrun_backend_context *ctx, const netrun_node_desc *node,
                                           netrun_kernel **out, size_t *workspace_bytes) {
    (void)ctx;
    int op = nrc_op_of(node->domain, node->op_type, node->opset);
    if (op < 0) return nrc_host->error(NETRUN_ERR_UNSUPPORTED, NRC_NAME ": no kernel for %s", node->op_type);
    contrib_kernel *k = nrc_host->alloc(sizeof *k, sizeof(void *));
    if (!k) return nrc_host->error(NETRUN_ERR_OUT_OF_MEMORY, NRC_NAME ": out of memory creating a kernel");
    memset(k, 0, sizeof *k);
    k->op = (nrc_op)op;
    *workspace_bytes = 0;
    *out = (netrun_kernel *)k;
    return NETRUN_OK;
}

static netrun_status contrib_kernel_run(netrun_backend_context *ctx, netrun_kernel *kernel,
                                        const netrun_kernel_args *args) {
    (void)ctx;
    contrib_kernel *k = (contrib_kernel *)kernel;
    switch (k->op) {
    case NRC_GELU: case NRC_FAST_GELU: case NRC_BIAS_GELU: case NRC_QUICK_GELU: case NRC_BIAS_ADD:
        return nrc_run_activation(k->op, args->params, args);
    case NRC_LAYER_NORM: case NRC_SIMPLIFIED_LAYER_NORM: case NRC_SKIP_LAYER_NORM: case NRC_SKIP_SIMPLIFIED_LAYER_NORM:
        return nrc_run_norm(k->op, args->params, args);
    case NRC_FUSED_MATMUL:
        return nrc_run_fused_matmul(args->params, args, &k->scratch, &k->scratch_n);
    case NRC_ATTENTION:
        return nrc_run_attention(args->params, args, &k->scratch, &k->scratch_n);
    default:
        return nrc_host->error(NETRUN_ERR_INTERNAL, NRC_NAME ": unknown op %d", (int)k->op);
    }
}

static void contrib_kernel_destroy(netrun_backend_context *ctx, netrun_kernel *kernel) {
    (void)ctx;
    contrib_kernel *k = (contrib_kernel *)kernel;
    if (!k) return;
    nrc_host->free(k->scratch);
    nrc_host->free(k);
}

/* The activations read x[i] before they write y[i]: y may take x's memory when x dies there. */
static int contrib_may_alias(const netrun_backend_config *config, const netrun_node_desc *node, int output, int input) {
    (void)config;
    int op = nrc_op_of(node->domain, node->op_type, node->opset);
    return output == 0 && input == 0 && op >= NRC_GELU && op <= NRC_BIAS_ADD;
}

static const netrun_option_spec no_options[] = {{NULL, 0, NULL, NULL}};

static const netrun_backend_api api = {
    .abi_version = NETRUN_ABI_VERSION,
    .struct_size = sizeof(netrun_backend_api),
    .name = NRC_NAME,
    .description = "onnxruntime contrib ops (com.microsoft) on host memory",
    .flags = NETRUN_BACKEND_HOST_MEMORY,
    .op_table = op_table,
    .op_table_len = sizeof op_table / sizeof op_table[0],
    .probe = contrib_probe,
    .device_count = contrib_device_count,
    .supports = contrib_supports,
    .context_create = contrib_context_create,
    .context_destroy = contrib_context_destroy,
    .buffer_alloc = contrib_buffer_alloc,
    .buffer_free = contrib_buffer_free,
    .buffer_address = contrib_buffer_address,
    .copy_from_host = contrib_copy_from_host,
    .copy_to_host = contrib_copy_to_host,
    .kernel_create = contrib_kernel_create,
    .kernel_run = contrib_kernel_run,
    .kernel_destroy = contrib_kernel_destroy,
    .may_alias = contrib_may_alias,
    .options = no_options,
    .uses = NETRUN_USES_DECLARED,
    .op_defs = nrc_op_defs,
};

/* A host older than ABI 1.9 has no op services: refuse it rather than define ops it cannot call back for. */
NETRUN_BACKEND_EXPORT const netrun_backend_api *netrun_backend_entry(const netrun_host_api *h) {
    if (!h || NETRUN_ABI_MAJOR_OF(h->abi_version) != NETRUN_ABI_MAJOR) return NULL;
    if (h->struct_size < offsetof(netrun_host_api, op_error) + sizeof h->op_error) return NULL;
    nrc_host = h;
    return &api;
}
