/* Test backend "faulty": runs float32 Relu on host memory, and fails on purpose at the stage named by the
 * environment variable NETRUN_FAULTY_FAIL:
 *   probe   - the probe fails (the backend is listed as unavailable with the message)
 *   init    - context_create fails (its nodes must be re-placed on the remaining backends)
 *   prepare - kernel_create fails (same)
 *   run     - kernel_run fails (the run must fail with this message)
 * Anything else (or unset): no failure. Built into its own folder so no other test sees it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netrun_backend.h"

static const netrun_host_api *host;

static int fail_at(const char *stage) {
    const char *v = getenv("NETRUN_FAULTY_FAIL");
    return v && !strcmp(v, stage);
}

static const netrun_op_support op_table[] = {{"", "Relu", NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT), ""}};

static netrun_status f_probe(char *msg, size_t msg_size) {
    if (fail_at("probe")) return host->error(NETRUN_ERR_BACKEND, "faulty: probe failed on purpose (no device)");
    snprintf(msg, msg_size, "test backend that fails on purpose (NETRUN_FAULTY_FAIL)");
    return NETRUN_OK;
}

static int f_device_count(void) { return 1; }

static netrun_status f_device_describe(int device, char *buf, size_t buf_size) {
    snprintf(buf, buf_size, "faulty device %d", device);
    return NETRUN_OK;
}

static int f_supports(const netrun_backend_config *config, const netrun_node_desc *node, char *reason,
                      size_t reason_size) {
    (void)config;
    if ((node->domain && *node->domain) || strcmp(node->op_type, "Relu") || node->n_inputs != 1 ||
        node->n_outputs != 1 || node->inputs[0].dtype != NETRUN_DTYPE_FLOAT || node->inputs[0].rank < 0) {
        snprintf(reason, reason_size, "faulty runs float32 Relu only");
        return 0;
    }
    return 1;
}

typedef struct f_ctx {
    int unused;
} f_ctx;

static netrun_status f_context_create(const netrun_backend_config *config, netrun_backend_context **out) {
    (void)config;
    if (fail_at("init")) return host->error(NETRUN_ERR_BACKEND, "faulty: context_create failed on purpose");
    f_ctx *c = host->alloc(sizeof *c, sizeof(void *));
    if (!c) return host->error(NETRUN_ERR_OUT_OF_MEMORY, "faulty: out of memory");
    *out = (netrun_backend_context *)c;
    return NETRUN_OK;
}

static void f_context_destroy(netrun_backend_context *ctx) { host->free(ctx); }

static netrun_status f_buffer_alloc(netrun_backend_context *ctx, size_t bytes, void **buffer) {
    (void)ctx;
    *buffer = host->alloc(bytes ? bytes : 1, 64);
    return *buffer ? NETRUN_OK : host->error(NETRUN_ERR_OUT_OF_MEMORY, "faulty: cannot allocate %zu bytes", bytes);
}

static void f_buffer_free(netrun_backend_context *ctx, void *buffer) {
    (void)ctx;
    if (buffer) host->free(buffer);
}

static void *f_buffer_address(netrun_backend_context *ctx, void *buffer) {
    (void)ctx;
    return buffer;
}

static netrun_status f_copy_from_host(netrun_backend_context *ctx, void *buffer, size_t offset, const void *src,
                                      size_t bytes) {
    (void)ctx;
    if (bytes) memcpy((char *)buffer + offset, src, bytes);
    return NETRUN_OK;
}

static netrun_status f_copy_to_host(netrun_backend_context *ctx, void *dst, const void *buffer, size_t offset,
                                    size_t bytes) {
    (void)ctx;
    if (bytes) memcpy(dst, (const char *)buffer + offset, bytes);
    return NETRUN_OK;
}

static netrun_status f_kernel_create(netrun_backend_context *ctx, const netrun_node_desc *node, netrun_kernel **out,
                                     size_t *workspace_bytes) {
    (void)ctx;
    if (fail_at("prepare"))
        return host->error(NETRUN_ERR_BACKEND, "faulty: kernel_create failed on purpose for %s", node->op_type);
    int *k = host->alloc(sizeof *k, sizeof(void *));
    if (!k) return host->error(NETRUN_ERR_OUT_OF_MEMORY, "faulty: out of memory");
    *k = 1;
    *out = (netrun_kernel *)k;
    *workspace_bytes = 0;
    return NETRUN_OK;
}

static netrun_status f_kernel_run(netrun_backend_context *ctx, netrun_kernel *kernel, const netrun_kernel_args *args) {
    (void)ctx;
    (void)kernel;
    if (fail_at("run")) return host->error(NETRUN_ERR_BACKEND, "faulty: kernel_run failed on purpose");
    if (args->n_inputs < 1 || args->n_outputs < 1) return host->error(NETRUN_ERR_INTERNAL, "faulty: bad arity");
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    size_t n = x->nbytes / sizeof(float);
    if (y->nbytes < x->nbytes || (n && (!x->data || !y->data)))
        return host->error(NETRUN_ERR_INTERNAL, "faulty: output holds %zu bytes, input %zu", y->nbytes, x->nbytes);
    const float *xs = x->data;
    float *ys = y->data;
    for (size_t i = 0; i < n; i++) ys[i] = xs[i] > 0.0f ? xs[i] : 0.0f;
    return NETRUN_OK;
}

static void f_kernel_destroy(netrun_backend_context *ctx, netrun_kernel *kernel) {
    (void)ctx;
    host->free(kernel);
}

static const netrun_backend_api api = {
    .abi_version = NETRUN_ABI_VERSION,
    .struct_size = sizeof(netrun_backend_api),
    .name = "faulty",
    .description = "test backend failing on purpose at the stage named by NETRUN_FAULTY_FAIL",
    .flags = NETRUN_BACKEND_HOST_MEMORY,
    .op_table = op_table,
    .op_table_len = sizeof op_table / sizeof op_table[0],
    .probe = f_probe,
    .device_count = f_device_count,
    .device_describe = f_device_describe,
    .supports = f_supports,
    .context_create = f_context_create,
    .context_destroy = f_context_destroy,
    .buffer_alloc = f_buffer_alloc,
    .buffer_free = f_buffer_free,
    .buffer_address = f_buffer_address,
    .copy_from_host = f_copy_from_host,
    .copy_to_host = f_copy_to_host,
    .kernel_create = f_kernel_create,
    .kernel_run = f_kernel_run,
    .kernel_destroy = f_kernel_destroy,
    .synchronize = NULL,
    .kernel_describe = NULL,
};

NETRUN_BACKEND_EXPORT const netrun_backend_api *netrun_backend_entry(const netrun_host_api *h) {
    if (!h || NETRUN_ABI_MAJOR_OF(h->abi_version) != NETRUN_ABI_MAJOR) return NULL;
    host = h;
    return &api;
}
