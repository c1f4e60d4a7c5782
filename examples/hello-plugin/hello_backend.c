/*
 * hello_backend.c — a netrun backend plugin built outside netrun's source tree, against the installed
 * headers only. On host memory it runs two float32 ops:
 *   - Relu, an op netrun knows: the plugin only brings a kernel. With `--backend hello,cpu` every Relu of a
 *     model runs here and the rest on the CPU.
 *   - com.example.hello.ScaledRelu (y = alpha * max(x, 0), attribute alpha, default 1), an op netrun does not
 *     know: the plugin defines it (ABI 1.9 op_defs: arity, attribute parsing into a params struct, shape and
 *     type inference) and brings its kernel. Any model using it then loads and runs, on hello.
 *
 *     NETRUN_BACKEND_PATH=$PWD/build netrun model.onnx --backend hello,cpu -v
 *
 * It names its kernels through the ABI 1.1 slot kernel_describe. docs/writing-a-backend.md explains every slot.
 */
#include <netrun_backend.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define BACKEND_NAME "hello"

/* The host's services, saved by the entry point; a plugin is loaded once per process. */
static const netrun_host_api *host;

/* Shown by `netrun --support-matrix`; placement asks supports(), never this table. */
static const netrun_op_support op_table[] = {
    {"", "Relu", NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT), "any shape"},
    {"com.example.hello", "ScaledRelu", NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT), "any shape"},
};

/* ---- an op of our own: com.example.hello.ScaledRelu (ABI 1.9) ----
 * netrun parses and infers every node before it places it, so a new op starts with its definition: parse turns
 * the node's attributes into a params struct (once, at model load), infer gives the outputs' types and shapes
 * (whenever the inputs' shapes are known). The same params reach supports(), kernel_create and kernel_run as
 * node->params and args->params. */
#define HELLO_DOMAIN "com.example.hello"

typedef struct scaled_relu_params {
    float alpha;
} scaled_relu_params;

static netrun_status scaled_relu_parse(netrun_op_ctx *c, void *params) {
    scaled_relu_params *p = params;
    netrun_status st = host->op_attr_float(c, "alpha", 1.0f, &p->alpha);
    if (st == NETRUN_OK && !(p->alpha >= 0.0f)) return host->op_error(c, "alpha must be >= 0, not %g", p->alpha);
    return st;
}

static netrun_status scaled_relu_infer(netrun_op_ctx *c, void *params) {
    const netrun_value_desc *x = host->op_input(c, 0);
    if (x->dtype != NETRUN_DTYPE_FLOAT) return host->op_error(c, "ScaledRelu takes float32 (input is type %d)", (int)x->dtype);
    host->op_output_set(c, 0, x->dtype, x->rank, x->dims); /* y has x's type and shape */
    return NETRUN_OK;
}

static const netrun_op_def scaled_relu_def = {
    .struct_size = sizeof(netrun_op_def),
    .domain = HELLO_DOMAIN,
    .op_type = "ScaledRelu",
    .since_version = 1,                 /* opset 1 of com.example.hello, and every later one (until_version 0) */
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .params_size = sizeof(scaled_relu_params),
    .parse = scaled_relu_parse,
    .infer = scaled_relu_infer,
};

static const netrun_op_def *const op_defs[] = {&scaled_relu_def, NULL};

/* ---- discovery: cheap, no lasting state ---- */

static netrun_status hello_probe(char *msg, size_t msg_size) {
    snprintf(msg, msg_size, "hello: float32 Relu and ScaledRelu on host memory (an out-of-tree example plugin)");
    return NETRUN_OK;
}

static int hello_device_count(void) { return 1; }

/* ---- placement ---- */

static int is_relu(const netrun_node_desc *node) {
    int default_domain = !node->domain || !*node->domain || !strcmp(node->domain, "ai.onnx");
    return default_domain && node->op_type && !strcmp(node->op_type, "Relu");
}

static int is_scaled_relu(const netrun_node_desc *node) {
    return node->domain && !strcmp(node->domain, HELLO_DOMAIN) && node->op_type && !strcmp(node->op_type, "ScaledRelu");
}

/* Say yes only to what kernel_run can do, and say why not otherwise (`netrun -v` shows the reason). */
static int hello_supports(const netrun_backend_config *config, const netrun_node_desc *node, char *reason,
                          size_t reason_size) {
    if (!is_relu(node) && !is_scaled_relu(node)) {
        snprintf(reason, reason_size, "hello runs Relu and ScaledRelu only, not %s", node->op_type ? node->op_type : "?");
        return 0;
    }
    if (node->n_inputs != 1 || node->n_outputs != 1 || node->inputs[0].rank < 0) {
        snprintf(reason, reason_size, "%s needs one input and one output", node->op_type);
        return 0;
    }
    if (node->inputs[0].dtype != NETRUN_DTYPE_FLOAT) {
        /* A plugin never links libnetrun, so no netrun_dtype_name() here: the ONNX number will do. */
        snprintf(reason, reason_size, "hello runs float32 only (input dtype is %d)", (int)node->inputs[0].dtype);
        return 0;
    }
    return 1;
}

/* ---- context: per session and device; this one holds nothing ---- */

typedef struct hello_context {
    int runs; /* kernels run in this context: a context is used by one thread at a time, no lock needed */
} hello_context;

static netrun_status hello_context_create(const netrun_backend_config *config, netrun_backend_context **out) {
    if (config && config->device != 0)
        return host->error(NETRUN_ERR_INVALID_ARGUMENT, BACKEND_NAME ": device %d does not exist (only 0)",
                           config->device);
    hello_context *ctx = host->alloc(sizeof *ctx, sizeof(void *));
    if (!ctx) return host->error(NETRUN_ERR_OUT_OF_MEMORY, BACKEND_NAME ": out of memory creating a context");
    ctx->runs = 0;
    *out = (netrun_backend_context *)ctx;
    return NETRUN_OK;
}

static void hello_context_destroy(netrun_backend_context *ctx) {
    if (ctx) host->free(ctx);
}

/* ---- memory: NETRUN_BACKEND_HOST_MEMORY, so buffers are host pointers ---- */

static netrun_status hello_buffer_alloc(netrun_backend_context *ctx, size_t bytes, void **buffer) {
    *buffer = host->alloc(bytes ? bytes : 1, 64);
    if (!*buffer) return host->error(NETRUN_ERR_OUT_OF_MEMORY, BACKEND_NAME ": cannot allocate %zu bytes", bytes);
    return NETRUN_OK;
}

static void hello_buffer_free(netrun_backend_context *ctx, void *buffer) {
    if (buffer) host->free(buffer);
}

static void *hello_buffer_address(netrun_backend_context *ctx, void *buffer) { return buffer; }

static netrun_status hello_copy_from_host(netrun_backend_context *ctx, void *buffer, size_t offset, const void *src,
                                          size_t bytes) {
    if (bytes) memcpy((char *)buffer + offset, src, bytes);
    return NETRUN_OK;
}

static netrun_status hello_copy_to_host(netrun_backend_context *ctx, void *dst, const void *buffer, size_t offset,
                                        size_t bytes) {
    if (bytes) memcpy(dst, (const char *)buffer + offset, bytes);
    return NETRUN_OK;
}

/* ---- kernels ---- */

typedef struct hello_kernel {
    char node_name[64]; /* for error messages; the host's node_desc does not outlive kernel_create */
    int scaled;         /* ScaledRelu (alpha from args->params at each run), else Relu */
} hello_kernel;

static netrun_status hello_kernel_create(netrun_backend_context *ctx, const netrun_node_desc *node,
                                         netrun_kernel **out, size_t *workspace_bytes) {
    if (!is_relu(node) && !is_scaled_relu(node))
        return host->error(NETRUN_ERR_UNSUPPORTED, BACKEND_NAME ": no kernel for %s", node->op_type ? node->op_type : "?");
    hello_kernel *k = host->alloc(sizeof *k, sizeof(void *));
    if (!k) return host->error(NETRUN_ERR_OUT_OF_MEMORY, BACKEND_NAME ": out of memory creating a kernel");
    snprintf(k->node_name, sizeof k->node_name, "%s", node->name ? node->name : "");
    k->scaled = is_scaled_relu(node);
    *workspace_bytes = 0;
    *out = (netrun_kernel *)k;
    return NETRUN_OK;
}

static netrun_status hello_kernel_run(netrun_backend_context *ctx, netrun_kernel *kernel,
                                      const netrun_kernel_args *args) {
    const hello_kernel *k = (const hello_kernel *)kernel;
    if (args->n_inputs < 1 || args->n_outputs < 1)
        return host->error(NETRUN_ERR_INTERNAL, BACKEND_NAME ": %s: got %d inputs and %d outputs", k->node_name,
                           args->n_inputs, args->n_outputs);
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (x->dtype != NETRUN_DTYPE_FLOAT || y->dtype != NETRUN_DTYPE_FLOAT)
        return host->error(NETRUN_ERR_UNSUPPORTED, BACKEND_NAME ": %s: float32 only", k->node_name);
    /* Sizes come from the tensors at run time (shapes may differ from prepare's); trust nbytes, not dims. */
    size_t n = x->nbytes / sizeof(float);
    if (y->nbytes / sizeof(float) != n)
        return host->error(NETRUN_ERR_INTERNAL, BACKEND_NAME ": %s: output holds %zu bytes, input %zu", k->node_name,
                           y->nbytes, x->nbytes);
    if (n && (!x->data || !y->data))
        return host->error(NETRUN_ERR_INTERNAL, BACKEND_NAME ": %s: tensor without an address", k->node_name);
    const float *in = x->data;
    float *out = y->data;
    float alpha = k->scaled ? ((const scaled_relu_params *)args->params)->alpha : 1.0f;
    for (size_t i = 0; i < n; i++) out[i] = in[i] < 0.0f ? 0.0f : alpha * in[i]; /* NaN stays NaN */
    ((hello_context *)ctx)->runs++;
    return NETRUN_OK;
}

static void hello_kernel_destroy(netrun_backend_context *ctx, netrun_kernel *kernel) {
    if (kernel) host->free(kernel);
}

/* ABI 1.1: names the kernel in profiles and in netrun_node_info.kernel. */
static netrun_status hello_kernel_describe(netrun_backend_context *ctx, netrun_kernel *kernel, char *buf,
                                           size_t buf_size) {
    snprintf(buf, buf_size, "hello scalar loop");
    return NETRUN_OK;
}

static const netrun_backend_api api = {
    .abi_version = NETRUN_ABI_VERSION,
    .struct_size = sizeof(netrun_backend_api),
    .name = BACKEND_NAME,
    .description = "hello: an out-of-tree example plugin (float32 Relu, and an op of its own)",
    .flags = NETRUN_BACKEND_HOST_MEMORY,
    .op_table = op_table,
    .op_table_len = sizeof op_table / sizeof op_table[0],
    .probe = hello_probe,
    .device_count = hello_device_count,
    .device_describe = NULL, /* optional: the probe's summary stands in */
    .supports = hello_supports,
    .context_create = hello_context_create,
    .context_destroy = hello_context_destroy,
    .buffer_alloc = hello_buffer_alloc,
    .buffer_free = hello_buffer_free,
    .buffer_address = hello_buffer_address,
    .copy_from_host = hello_copy_from_host,
    .copy_to_host = hello_copy_to_host,
    .kernel_create = hello_kernel_create,
    .kernel_run = hello_kernel_run,
    .kernel_destroy = hello_kernel_destroy,
    .synchronize = NULL, /* optional: everything is done when kernel_run returns */
    .kernel_describe = hello_kernel_describe,
    .op_defs = op_defs, /* ABI 1.9: the ops this plugin defines */
};

/* The one exported symbol. Refuse a host of another ABI major, and one whose table lacks what we call (a host
 * older than 1.9 has no op_* services, which ScaledRelu's parse and infer use). */
NETRUN_BACKEND_EXPORT const netrun_backend_api *netrun_backend_entry(const netrun_host_api *h) {
    if (!h || NETRUN_ABI_MAJOR_OF(h->abi_version) != NETRUN_ABI_MAJOR) return NULL;
    if (h->struct_size < offsetof(netrun_host_api, op_error) + sizeof h->op_error) return NULL;
    host = h;
    return &api;
}
