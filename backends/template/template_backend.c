/*
 * template_backend.c — the smallest complete netrun backend, meant to be copied.
 *
 * It runs two float32 ops on host memory: Relu, and Add of two tensors of identical shape. Every slot of
 * netrun_backend_api is filled in and explained; a real backend replaces the bodies, not the structure.
 * See backends/template/README.md for how to turn a copy into a new backend, and docs/plugins.md for how
 * the host finds and checks plugins.
 *
 * Rules that every backend follows (from netrun_backend.h):
 *   - Export exactly one symbol, netrun_backend_entry; build with hidden visibility for everything else.
 *   - Never link libnetrun: logging, errors and host memory come through the netrun_host_api table.
 *   - Never exit/abort/assert on bad input: return a status after host->error("what went wrong").
 *   - supports() decides placement: anything it accepts, kernel_create/kernel_run must handle.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "netrun_backend.h"

/* The host's services, saved by the entry point. A plugin is loaded once per process, so a global is fine. */
static const netrun_host_api *host;

#define BACKEND_NAME "template"

/* ------------------------------------------------------------------------------------------------------
 * The ops this backend implements. One enum value per op keeps dispatch a switch instead of string
 * compares at run time.
 * ---------------------------------------------------------------------------------------------------- */
typedef enum tpl_op { TPL_RELU, TPL_ADD } tpl_op;

/* The static support matrix (shown by `netrun --support-matrix`; never used for placement). */
static const netrun_op_support op_table[] = {
    {"", "Relu", NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT), ""},
    {"", "Add", NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT), "A and B of identical shape (no broadcasting)"},
};

/* The default ONNX domain is spelled "" or "ai.onnx". */
static int default_domain(const char *d) { return !d || !*d || !strcmp(d, "ai.onnx"); }

/* Which op a node is, or -1. */
static int op_of(const netrun_node_desc *node) {
    if (!default_domain(node->domain) || !node->op_type) return -1;
    if (!strcmp(node->op_type, "Relu")) return TPL_RELU;
    if (!strcmp(node->op_type, "Add")) return TPL_ADD;
    return -1;
}

/* ------------------------------------------------------------------------------------------------------
 * Discovery: probe, device_count, device_describe. Called by the loader once per process; they must be
 * cheap and must not create lasting device state (no contexts, no allocations kept).
 * ---------------------------------------------------------------------------------------------------- */

/* A GPU backend would check its driver here and fail with host->error("no CUDA device found") when the
 * machine cannot run it; the host then lists the backend as unavailable with that message. */
static netrun_status tpl_probe(char *msg, size_t msg_size) {
    snprintf(msg, msg_size, "host memory, reference kernels for Relu and Add (float32)");
    return NETRUN_OK;
}

static int tpl_device_count(void) { return 1; }

/* Optional slot (may be NULL): one line describing a device. */
static netrun_status tpl_device_describe(int device, char *buf, size_t buf_size) {
    if (device != 0)
        return host->error(NETRUN_ERR_INVALID_ARGUMENT, BACKEND_NAME ": one device (0) exists, not %d", device);
    snprintf(buf, buf_size, "host memory, one thread, plain C loops");
    return NETRUN_OK;
}

/* ------------------------------------------------------------------------------------------------------
 * Placement: supports(). Called for every node while the host decides where it runs. Say no with a short
 * reason; the reason shows up in netrun_node_info.reason / `netrun --explain`. Shapes may contain -1 for
 * dimensions known only at run time.
 * ---------------------------------------------------------------------------------------------------- */
static int tpl_supports(const netrun_backend_config *config, const netrun_node_desc *node, char *reason,
                        size_t reason_size) {
    int op = op_of(node);
    if (op < 0) {
        snprintf(reason, reason_size, "the template backend only runs Relu and Add, not %s%s%s",
                 default_domain(node->domain) ? "" : node->domain, default_domain(node->domain) ? "" : ".",
                 node->op_type ? node->op_type : "(no op type)");
        return 0;
    }
    int want_inputs = op == TPL_ADD ? 2 : 1;
    if (node->n_inputs != want_inputs || node->n_outputs != 1) {
        snprintf(reason, reason_size, "%s needs %d input(s) and 1 output, has %d and %d", node->op_type, want_inputs,
                 node->n_inputs, node->n_outputs);
        return 0;
    }
    for (int i = 0; i < node->n_inputs; i++) {
        const netrun_value_desc *v = &node->inputs[i];
        if (v->rank < 0) {
            snprintf(reason, reason_size, "%s input %d is absent", node->op_type, i);
            return 0;
        }
        if (v->dtype != NETRUN_DTYPE_FLOAT) {
            snprintf(reason, reason_size, "dtype %d not supported (float32 only)", (int)v->dtype);
            return 0;
        }
    }
    if (op == TPL_ADD) {
        const netrun_value_desc *a = &node->inputs[0], *b = &node->inputs[1];
        if (a->rank != b->rank) {
            snprintf(reason, reason_size, "Add with broadcasting not supported (ranks %d and %d)", a->rank, b->rank);
            return 0;
        }
        for (int d = 0; d < a->rank; d++) {
            /* An unknown dim cannot be proven equal to the other side's, so refuse rather than fail later. */
            if (a->dims[d] < 0 || b->dims[d] < 0) {
                snprintf(reason, reason_size, "Add needs shapes known at placement (dim %d is dynamic)", d);
                return 0;
            }
            if (a->dims[d] != b->dims[d]) {
                snprintf(reason, reason_size,
                         "Add with broadcasting not supported (dim %d: %lld vs %lld); shapes must be identical", d,
                         (long long)a->dims[d], (long long)b->dims[d]);
                return 0;
            }
        }
    }
    return 1;
}

/* ------------------------------------------------------------------------------------------------------
 * Context: per session (and per device). A GPU backend creates its stream, library handles and memory
 * pools here. This one only keeps the configuration.
 * ---------------------------------------------------------------------------------------------------- */
typedef struct tpl_context {
    netrun_backend_config config; /* copied: the host's struct does not outlive context_create */
} tpl_context;

static netrun_status tpl_context_create(const netrun_backend_config *config, netrun_backend_context **out) {
    if (config && config->device != 0)
        return host->error(NETRUN_ERR_INVALID_ARGUMENT, BACKEND_NAME ": device %d does not exist (only 0)",
                           config->device);
    tpl_context *ctx = host->alloc(sizeof *ctx, _Alignof(tpl_context) > sizeof(void *) ? _Alignof(tpl_context)
                                                                                       : sizeof(void *));
    if (!ctx) return host->error(NETRUN_ERR_OUT_OF_MEMORY, BACKEND_NAME ": out of memory creating a context");
    memset(ctx, 0, sizeof *ctx);
    /* Copy only what the host's struct holds: an older host may pass a shorter config. */
    if (config) {
        size_t n = config->struct_size < sizeof ctx->config ? config->struct_size : sizeof ctx->config;
        memcpy(&ctx->config, config, n);
    }
    *out = (netrun_backend_context *)ctx;
    return NETRUN_OK;
}

static void tpl_context_destroy(netrun_backend_context *ctx) {
    if (ctx) host->free(ctx);
}

/* ------------------------------------------------------------------------------------------------------
 * Memory. Buffers are opaque handles to the host. With NETRUN_BACKEND_HOST_MEMORY they are plain host
 * pointers, so the host can hand CPU tensors over without copies. A device backend returns its own handles
 * (e.g. CUDA pointers) and implements the copies with its driver.
 * ---------------------------------------------------------------------------------------------------- */
static netrun_status tpl_buffer_alloc(netrun_backend_context *ctx, size_t bytes, void **buffer) {
    /* 64-byte alignment suits any vector unit; a 0-byte request still gets a distinct pointer. */
    *buffer = host->alloc(bytes ? bytes : 1, 64);
    if (!*buffer) return host->error(NETRUN_ERR_OUT_OF_MEMORY, BACKEND_NAME ": cannot allocate %zu bytes", bytes);
    return NETRUN_OK;
}

static void tpl_buffer_free(netrun_backend_context *ctx, void *buffer) {
    if (buffer) host->free(buffer);
}

/* The address of the buffer's memory: the buffer itself for host memory. Return NULL when the memory is not
 * addressable (OpenCL buffers, for example). */
static void *tpl_buffer_address(netrun_backend_context *ctx, void *buffer) { return buffer; }

static netrun_status tpl_copy_from_host(netrun_backend_context *ctx, void *buffer, size_t offset, const void *src,
                                        size_t bytes) {
    if (bytes) memcpy((char *)buffer + offset, src, bytes);
    return NETRUN_OK;
}

static netrun_status tpl_copy_to_host(netrun_backend_context *ctx, void *dst, const void *buffer, size_t offset,
                                      size_t bytes) {
    if (bytes) memcpy(dst, (const char *)buffer + offset, bytes);
    return NETRUN_OK;
}

/* ------------------------------------------------------------------------------------------------------
 * Kernels. kernel_create runs once per node at prepare (choose an algorithm, upload weights, say how much
 * workspace kernel_run needs); kernel_run runs on every inference with the actual tensors.
 * ---------------------------------------------------------------------------------------------------- */
typedef struct tpl_kernel {
    tpl_op op;
} tpl_kernel;

static netrun_status tpl_kernel_create(netrun_backend_context *ctx, const netrun_node_desc *node,
                                       netrun_kernel **out, size_t *workspace_bytes) {
    int op = op_of(node);
    /* The host only creates kernels for nodes supports() accepted; check anyway, it costs nothing. */
    if (op < 0)
        return host->error(NETRUN_ERR_UNSUPPORTED, BACKEND_NAME ": no kernel for %s", node->op_type ? node->op_type : "?");
    tpl_kernel *k = host->alloc(sizeof *k, sizeof(void *));
    if (!k) return host->error(NETRUN_ERR_OUT_OF_MEMORY, BACKEND_NAME ": out of memory creating a kernel");
    k->op = (tpl_op)op;
    *workspace_bytes = 0; /* elementwise ops need no scratch memory */
    *out = (netrun_kernel *)k;
    return NETRUN_OK;
}

/* Elements of a tensor, checking for overflow and for a byte size that disagrees with the shape. */
static netrun_status element_count(const netrun_tensor *t, const char *what, size_t *out) {
    if (t->dtype != NETRUN_DTYPE_FLOAT)
        return host->error(NETRUN_ERR_UNSUPPORTED, BACKEND_NAME ": %s has dtype %d, expected float32", what,
                           (int)t->dtype);
    if (t->rank < 0 || t->rank > NETRUN_MAX_RANK)
        return host->error(NETRUN_ERR_INTERNAL, BACKEND_NAME ": %s has rank %d", what, t->rank);
    size_t n = 1;
    for (int d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0) return host->error(NETRUN_ERR_INTERNAL, BACKEND_NAME ": %s dim %d is negative", what, d);
        if (t->dims[d] != 0 && n > SIZE_MAX / sizeof(float) / (size_t)t->dims[d])
            return host->error(NETRUN_ERR_INVALID_ARGUMENT, BACKEND_NAME ": %s is too large", what);
        n *= (size_t)t->dims[d];
    }
    if (t->nbytes < n * sizeof(float))
        return host->error(NETRUN_ERR_INTERNAL, BACKEND_NAME ": %s holds %zu bytes, its shape needs %zu", what,
                           t->nbytes, n * sizeof(float));
    if (n && !t->data)
        return host->error(NETRUN_ERR_INTERNAL, BACKEND_NAME ": %s has no address", what);
    *out = n;
    return NETRUN_OK;
}

static netrun_status tpl_kernel_run(netrun_backend_context *ctx, netrun_kernel *kernel,
                                    const netrun_kernel_args *args) {
    const tpl_kernel *k = (const tpl_kernel *)kernel;
    int want_inputs = k->op == TPL_ADD ? 2 : 1;
    if (args->n_inputs < want_inputs || args->n_outputs < 1)
        return host->error(NETRUN_ERR_INTERNAL, BACKEND_NAME ": got %d inputs and %d outputs", args->n_inputs,
                           args->n_outputs);
    size_t n, n_out;
    netrun_status st = element_count(&args->inputs[0], "input 0", &n);
    if (st != NETRUN_OK) return st;
    st = element_count(&args->outputs[0], "output 0", &n_out);
    if (st != NETRUN_OK) return st;
    if (n_out != n)
        return host->error(NETRUN_ERR_INTERNAL, BACKEND_NAME ": output has %zu elements, input %zu", n_out, n);
    const float *x = args->inputs[0].data;
    float *y = args->outputs[0].data;

    switch (k->op) {
    case TPL_RELU:
        for (size_t i = 0; i < n; i++) y[i] = x[i] < 0.0f ? 0.0f : x[i]; /* NaN stays NaN, as in onnxruntime */
        return NETRUN_OK;
    case TPL_ADD: {
        /* Shapes can change between prepare and run (symbolic dims): recheck what supports() promised. */
        const netrun_tensor *a = &args->inputs[0], *b = &args->inputs[1];
        if (a->rank != b->rank || memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank) != 0)
            return host->error(NETRUN_ERR_UNSUPPORTED, BACKEND_NAME ": Add inputs have different shapes at run time");
        size_t nb;
        st = element_count(b, "input 1", &nb);
        if (st != NETRUN_OK) return st;
        const float *x2 = b->data;
        for (size_t i = 0; i < n; i++) y[i] = x[i] + x2[i];
        return NETRUN_OK;
    }
    }
    return host->error(NETRUN_ERR_INTERNAL, BACKEND_NAME ": unknown kernel kind %d", (int)k->op);
}

static void tpl_kernel_destroy(netrun_backend_context *ctx, netrun_kernel *kernel) {
    if (kernel) host->free(kernel);
}

/* ------------------------------------------------------------------------------------------------------
 * The table. abi_version and struct_size come first and let the host check compatibility: it accepts the
 * same NETRUN_ABI_MAJOR and reads only slots inside struct_size, so new slots appended by later minors are
 * simply absent to an older host, and an older plugin's shorter table is fine for a newer host.
 * ---------------------------------------------------------------------------------------------------- */
/* The settings this backend reads (ABI 1.8, optional): none, so the runtime refuses any template.* key. List yours
 * here ({"NAME.key", NETRUN_OPTION_BOOL, NULL, "what it changes"}) and read them with config->get_option. */
static const netrun_option_spec tpl_options[] = {
    {NULL, 0, NULL, NULL},
};

static const netrun_backend_api api = {
    .abi_version = NETRUN_ABI_VERSION,
    .struct_size = sizeof(netrun_backend_api),
    .name = BACKEND_NAME,
    .description = "template: a minimal host-memory backend to copy (Relu, Add)",
    .flags = NETRUN_BACKEND_HOST_MEMORY,
    .op_table = op_table,
    .op_table_len = sizeof op_table / sizeof op_table[0],
    .probe = tpl_probe,
    .device_count = tpl_device_count,
    .device_describe = tpl_device_describe,
    .supports = tpl_supports,
    .context_create = tpl_context_create,
    .context_destroy = tpl_context_destroy,
    .buffer_alloc = tpl_buffer_alloc,
    .buffer_free = tpl_buffer_free,
    .buffer_address = tpl_buffer_address,
    .copy_from_host = tpl_copy_from_host,
    .copy_to_host = tpl_copy_to_host,
    .kernel_create = tpl_kernel_create,
    .kernel_run = tpl_kernel_run,
    .kernel_destroy = tpl_kernel_destroy,
    .synchronize = NULL, /* optional: everything here finishes before kernel_run returns */
    .options = tpl_options,
    /* the session-wide settings it honours (only the device index: it has device 0) */
    .uses = NETRUN_USES_DECLARED | NETRUN_USES_DEVICE,
    /* ABI 1.10, optional: the layouts and precisions kept across this backend's nodes. A backend that runs float16
     * channels-last convs would declare {.kind = NETRUN_REGION_FP16_NHWC, .conditions = NETRUN_REGION_IF_FP16,
     * .option = "NAME.fp16_regions", .ops = its elementwise ops} (and implement the region's com.netrun ops); the
     * runtime then plans the regions for it as it does for CUDA. Roles are flags: NETRUN_BACKEND_FALLBACK would
     * make it the backend of last resort. */
    .regions = NULL,
};

/* The one exported symbol. Refuse (return NULL) a host of another ABI major: its table layout differs. The
 * host's table, like ours, may be longer or shorter within a major: read only slots inside its struct_size. */
NETRUN_BACKEND_EXPORT const netrun_backend_api *netrun_backend_entry(const netrun_host_api *h) {
    if (!h || NETRUN_ABI_MAJOR_OF(h->abi_version) != NETRUN_ABI_MAJOR) return NULL;
    if (h->struct_size < offsetof(netrun_host_api, free) + sizeof h->free) return NULL;
    host = h;
    return &api;
}
