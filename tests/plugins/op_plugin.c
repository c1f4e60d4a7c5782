/* Test plugin defining an op (ABI 1.9): com.example.test.Twice (y = 2 x, float32), with its kernel on host memory.
 * Built three times: as "opdefa" and "opdefb" (the same op from two plugins: a model using it must fail to load,
 * naming both), and with OP_SHADOW as "opshadow", which also defines ai.onnx Relu (netrun's own: the loader must
 * list the plugin as unavailable, naming Relu), and with OLD_ABI as "oldabi": a plugin built for ABI 1.8, whose
 * struct_size ends before op_defs, running ai.onnx Relu (it must load and run; the op_defs beyond its struct_size
 * must not be read), and with OP_BAD as "opbad", whose Twice has no infer function (unavailable, the row named).
 * PLUGIN_NAME is set by tests.cmake. */
#include <stdio.h>
#include <string.h>

#include "netrun_backend.h"

static const netrun_host_api *host;

__attribute__((unused)) static netrun_status twice_infer(netrun_op_ctx *c, void *params) {
    (void)params;
    const netrun_value_desc *x = host->op_input(c, 0);
    if (x->dtype != NETRUN_DTYPE_FLOAT) return host->op_error(c, PLUGIN_NAME ": Twice takes float32");
    host->op_output_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

#ifdef OP_BAD
#define INFER NULL
#else
#define INFER twice_infer
#endif
static const netrun_op_def twice = {sizeof(netrun_op_def), "com.example.test", "Twice", 1, 0, 1, 1, 1, 1, 0, NULL,
                                    INFER, 0};
#ifdef OP_SHADOW
static const netrun_op_def relu = {sizeof(netrun_op_def), "", "Relu", 1, 0, 1, 1, 1, 1, 0, NULL, twice_infer, 0};
static const netrun_op_def *const defs[] = {&twice, &relu, NULL};
#else
static const netrun_op_def *const defs[] = {&twice, NULL};
#endif

static netrun_status probe(char *msg, size_t n) {
    snprintf(msg, n, PLUGIN_NAME ": test op Twice");
    return NETRUN_OK;
}
static int device_count(void) { return 1; }
static int supports(const netrun_backend_config *cfg, const netrun_node_desc *node, char *why, size_t n) {
    (void)cfg;
#ifdef OLD_ABI
    if (node->domain && !*node->domain && !strcmp(node->op_type, "Relu")) return 1;
#else
    if (node->domain && !strcmp(node->domain, "com.example.test") && !strcmp(node->op_type, "Twice")) return 1;
#endif
    snprintf(why, n, PLUGIN_NAME " runs Twice only");
    return 0;
}
static netrun_status ctx_create(const netrun_backend_config *cfg, netrun_backend_context **out) {
    (void)cfg;
    static int token;
    *out = (netrun_backend_context *)(void *)&token;
    return NETRUN_OK;
}
static void ctx_destroy(netrun_backend_context *ctx) { (void)ctx; }
static netrun_status buf_alloc(netrun_backend_context *ctx, size_t bytes, void **b) {
    (void)ctx;
    *b = host->alloc(bytes ? bytes : 1, 64);
    return *b ? NETRUN_OK : host->error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
}
static void buf_free(netrun_backend_context *ctx, void *b) { (void)ctx; host->free(b); }
static void *buf_addr(netrun_backend_context *ctx, void *b) { (void)ctx; return b; }
static netrun_status from_host(netrun_backend_context *ctx, void *b, size_t off, const void *src, size_t n) {
    (void)ctx;
    if (n) memcpy((char *)b + off, src, n);
    return NETRUN_OK;
}
static netrun_status to_host(netrun_backend_context *ctx, void *dst, const void *b, size_t off, size_t n) {
    (void)ctx;
    if (n) memcpy(dst, (const char *)b + off, n);
    return NETRUN_OK;
}
static netrun_status k_create(netrun_backend_context *ctx, const netrun_node_desc *node, netrun_kernel **out, size_t *ws) {
    (void)ctx, (void)node;
    static int token;
    *out = (netrun_kernel *)(void *)&token;
    *ws = 0;
    return NETRUN_OK;
}
static netrun_status k_run(netrun_backend_context *ctx, netrun_kernel *k, const netrun_kernel_args *a) {
    (void)ctx, (void)k;
    const float *x = a->inputs[0].data;
    float *y = a->outputs[0].data;
#ifdef OLD_ABI
    for (size_t i = 0; i < a->inputs[0].nbytes / 4; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
#else
    for (size_t i = 0; i < a->inputs[0].nbytes / 4; i++) y[i] = 2.0f * x[i];
#endif
    return NETRUN_OK;
}
static void k_destroy(netrun_backend_context *ctx, netrun_kernel *k) { (void)ctx, (void)k; }

#ifdef OLD_ABI /* what a plugin built against 1.8 hands the host */
#define API_VERSION ((uint32_t)((1 << 16) | 8))
#define API_SIZE offsetof(netrun_backend_api, op_defs)
#else
#define API_VERSION NETRUN_ABI_VERSION
#define API_SIZE sizeof(netrun_backend_api)
#endif

static const netrun_backend_api api = {
    .abi_version = API_VERSION, .struct_size = API_SIZE, .name = PLUGIN_NAME,
    .description = "test plugin defining an op", .flags = NETRUN_BACKEND_HOST_MEMORY, .probe = probe,
    .device_count = device_count, .supports = supports, .context_create = ctx_create, .context_destroy = ctx_destroy,
    .buffer_alloc = buf_alloc, .buffer_free = buf_free, .buffer_address = buf_addr, .copy_from_host = from_host,
    .copy_to_host = to_host, .kernel_create = k_create, .kernel_run = k_run, .kernel_destroy = k_destroy,
    .op_defs = defs,
};

NETRUN_BACKEND_EXPORT const netrun_backend_api *netrun_backend_entry(const netrun_host_api *h) {
    if (!h || h->struct_size < offsetof(netrun_host_api, free) + sizeof h->free) return NULL;
    host = h;
    return &api;
}
