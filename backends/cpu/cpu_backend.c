/* The CPU backend plugin: entry point, context, host buffers, and dispatch to the op family tables. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cpu_internal.h"

#define FAMILIES(X) X(conv) X(gemm) X(norm) X(pool) X(elementwise) X(shape_ops) X(data_movement) \
    X(resize) X(reduce) X(softmax) X(rnn) X(transformer) X(loss) X(quantize) X(vision) X(signal) X(index_ops) X(nchwc) X(preprocess)

#define DECLARE(f) extern const cpu_op cpu_ops_##f[];
FAMILIES(DECLARE)
#undef DECLARE
#define LIST(f) cpu_ops_##f,
static const cpu_op *const families[] = {FAMILIES(LIST)};
#undef LIST

const netrun_host_api *cpu_host;

typedef struct cpu_kernel {
    const cpu_op *op;
    void *state;
    char name[64];           /* kernel_describe's answer, fixed at creation */
} cpu_kernel;

static int default_domain(const char *d) { return !d || !*d || !strcmp(d, "ai.onnx"); }

static const cpu_op *find_op(const char *domain, const char *op_type) {
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const cpu_op *o = families[f]; o->op_type; o++) {
            int dom_ok = default_domain(o->domain) ? default_domain(domain) : (domain && !strcmp(o->domain, domain));
            if (dom_ok && !strcmp(o->op_type, op_type)) return o;
        }
    return NULL;
}

static int online_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static netrun_status cpu_probe(char *msg, size_t size) {
    snprintf(msg, size, "host CPU, %d cores", online_cores());
    return NETRUN_OK;
}

static int cpu_device_count(void) { return 1; }

static netrun_status cpu_device_describe(int device, char *buf, size_t size) {
    if (device != 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cpu has one device (0), not %d", device);
    char model[128] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            if (!strncmp(line, "model name", 10)) {
                char *p = strchr(line, ':');
                if (p) {
                    p += 1 + (p[1] == ' ');
                    p[strcspn(p, "\n")] = 0;
                    snprintf(model, sizeof model, "%s", p);
                }
                break;
            }
        }
        fclose(f);
    }
    snprintf(buf, size, "%s, %d cores", model, online_cores());
    return NETRUN_OK;
}

static int cpu_supports(const netrun_backend_config *config, const netrun_node_desc *node, char *reason,
                        size_t size) {
    const cpu_op *op = find_op(node->domain, node->op_type);
    if (!op) {
        snprintf(reason, size, "no CPU kernel for %s%s%s", node->domain && *node->domain ? node->domain : "",
                 node->domain && *node->domain ? "." : "", node->op_type);
        return 0;
    }
    if (op->supports) {
        if (!op->supports(node, reason, size)) return 0;
    } else {
        netrun_dtype t = node->n_inputs > 0 && node->inputs[0].rank >= 0 ? node->inputs[0].dtype
                         : node->n_outputs > 0                           ? node->outputs[0].dtype
                                                                         : NETRUN_DTYPE_UNDEFINED;
        if (!(op->dtypes & NETRUN_DTYPE_BIT(t))) {
            snprintf(reason, size, "dtype %d not supported by the CPU %s kernel", (int)t, node->op_type);
            return 0;
        }
    }
    return op->supports_config ? op->supports_config(config, node, reason, size) : 1;
}

/* A setting of the context, or NULL (also from a host too old to pass settings). */
static const char *context_option(const netrun_backend_config *config, const char *key) {
    return config->struct_size >= offsetof(netrun_backend_config, opaque) + sizeof config->opaque &&
                   config->get_option
               ? config->get_option(config->opaque, key)
               : NULL;
}

/* A 0/1 setting defaulting to 1; 0 with the error recorded when the value is neither. */
static int flag_option(const netrun_backend_config *config, const char *key, int *out) {
    const char *v = context_option(config, key);
    *out = !v || !strcmp(v, "1");
    if (v && strcmp(v, "0") && strcmp(v, "1")) {
        cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: '%s' is not 0 or 1", key, v);
        return 0;
    }
    return 1;
}

/* An integer setting in [lo, hi] (`def` when unset); 0 with the error recorded when the value is not one. */
static int int_option(const netrun_backend_config *config, const char *key, long lo, long hi, long def,
                      const char *unit, long *out) {
    const char *v = context_option(config, key);
    *out = def;
    if (!v) return 1;
    char *end = NULL;
    long l = strtol(v, &end, 10);
    if (end == v || *end || l < lo || l > hi) {
        cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: '%s' is not a number of %s from %ld to %ld", key, v, unit,
                        lo, hi);
        return 0;
    }
    *out = l;
    return 1;
}

static netrun_status cpu_context_create(const netrun_backend_config *config, netrun_backend_context **out) {
    cpu_context *ctx = cpu_host->alloc(sizeof *ctx, 64);
    if (!ctx) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cpu: out of memory creating a context");
    memset(ctx, 0, sizeof *ctx);
    ctx->config = *config;
    ctx->threads = config->threads > 0 ? config->threads : online_cores();
    /* cpu.spin_us: how long idle workers spin before sleeping (threadpool.c says why; default 20000) */
    /* cpu.winograd: 0 keeps every conv on oneDNN's direct kernels (conv_dnnl.c says why 1 is the default) */
    /* cpu.spin_watch: 0 keeps the spin even while another process takes the cores (threadpool.c) */
    /* cpu.wino_min_tiles: Winograd tiles a thread below which a big-weight 3x3 runs direct (conv.c, want_cdir) */
    int watch = 1;
    long spin_us = 20000, min_tiles = 16;
    if (!int_option(config, "cpu.spin_us", 0, 1000000, 20000, "microseconds", &spin_us) ||
        !int_option(config, "cpu.wino_min_tiles", 0, 1 << 20, 16, "tiles", &min_tiles) ||
        !flag_option(config, "cpu.winograd", &ctx->winograd) || !flag_option(config, "cpu.spin_watch", &watch)) {
        cpu_host->free(ctx);
        return NETRUN_ERR_INVALID_ARGUMENT;
    }
    ctx->wino_min_tiles = min_tiles;
    ctx->pool = cpu_pool_create(ctx->threads, (int)spin_us, watch);
    if (!ctx->pool) {
        int threads = ctx->threads;
        cpu_host->free(ctx);
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cpu: cannot start %d threads", threads);
    }
    *out = (netrun_backend_context *)ctx;
    return NETRUN_OK;
}

static void cpu_context_destroy(netrun_backend_context *c) {
    cpu_context *ctx = (cpu_context *)c;
    if (!ctx) return;
    cpu_pool_destroy(ctx->pool);
    cpu_host->free(ctx);
}

static netrun_status cpu_buffer_alloc(netrun_backend_context *c, size_t bytes, void **buffer) {
    *buffer = cpu_host->alloc(bytes ? bytes : 1, 64);
    if (!*buffer) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cpu: cannot allocate %zu bytes", bytes);
    return NETRUN_OK;
}

static void cpu_buffer_free(netrun_backend_context *c, void *buffer) { cpu_host->free(buffer); }

static void *cpu_buffer_address(netrun_backend_context *c, void *buffer) { return buffer; }

static netrun_status cpu_copy_from_host(netrun_backend_context *c, void *buffer, size_t offset, const void *src,
                                        size_t bytes) {
    if (bytes) memcpy((char *)buffer + offset, src, bytes);
    return NETRUN_OK;
}

static netrun_status cpu_copy_to_host(netrun_backend_context *c, void *dst, const void *buffer, size_t offset,
                                      size_t bytes) {
    if (bytes) memcpy(dst, (const char *)buffer + offset, bytes);
    return NETRUN_OK;
}

static netrun_status cpu_kernel_create(netrun_backend_context *c, const netrun_node_desc *node,
                                       netrun_kernel **out, size_t *workspace) {
    cpu_context *ctx = (cpu_context *)c;
    const cpu_op *op = find_op(node->domain, node->op_type);
    if (!op) return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "no CPU kernel for %s", node->op_type);
    cpu_kernel *k = cpu_host->alloc(sizeof *k, 16);
    if (!k) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    k->op = op;
    k->state = NULL;
    k->name[0] = 0;
    if (op->describe) op->describe(node, k->name, sizeof k->name);
    *workspace = 0;
    if (op->create) {
        netrun_status st = op->create(ctx, node, &k->state, workspace);
        if (st != NETRUN_OK) {
            cpu_host->free(k);
            return st;
        }
        if (op->describe_state && k->state) op->describe_state(k->state, k->name, sizeof k->name);
    }
    *out = (netrun_kernel *)k;
    return NETRUN_OK;
}

static netrun_status cpu_kernel_run(netrun_backend_context *c, netrun_kernel *kernel,
                                    const netrun_kernel_args *args) {
    cpu_kernel *k = (cpu_kernel *)kernel;
    return k->op->run((cpu_context *)c, k->state, args);
}

static void cpu_kernel_destroy(netrun_backend_context *c, netrun_kernel *kernel) {
    cpu_kernel *k = (cpu_kernel *)kernel;
    if (!k) return;
    if (k->op->destroy && k->state) k->op->destroy(k->state);
    cpu_host->free(k);
}

static netrun_status cpu_kernel_describe(netrun_backend_context *c, netrun_kernel *kernel, char *buf, size_t size) {
    const cpu_kernel *k = (const cpu_kernel *)kernel;
    snprintf(buf, size, "%s", k->name);
    return NETRUN_OK;
}

/* The support matrix: one row per op, built once from the family tables. */
#define MAX_OPS 512
static netrun_op_support op_table[MAX_OPS];

static size_t build_op_table(void) {
    size_t n = 0;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const cpu_op *o = families[f]; o->op_type && n < MAX_OPS; o++)
            op_table[n++] = (netrun_op_support){o->domain ? o->domain : "", o->op_type, o->dtypes,
                                                o->constraints ? o->constraints : ""};
    return n;
}

int cpu_may_alias(const netrun_backend_config *config, const netrun_node_desc *node, int output, int input); /* inplace.c */

/* The settings this backend reads (ABI 1.8): any other cpu.* key is refused by the runtime. cpu.nchwc and cpu.se_fold
 * are named by the nChw16c region below and read by the runtime when it plans the region. */
static const netrun_option_spec cpu_options[] = {
    {"cpu.winograd", NETRUN_OPTION_BOOL, NULL, "Winograd F(2x2, 3x3) for 3x3 stride-1 convs (default 1)"},
    {"cpu.wino_min_tiles", NETRUN_OPTION_INT, NULL, "fewest tiles a thread for Winograd past L2 (default 16)"},
    {"cpu.conv_wino", NETRUN_OPTION_BOOL, NULL, "own AVX-512 Winograd on nChw16c (default 1; 0: oneDNN's)"},
    {"cpu.conv_s2", NETRUN_OPTION_BOOL, NULL, "own AVX-512 stride-2 direct convs on nChw16c (default 1)"},
    {"cpu.conv1x1_blk", NETRUN_OPTION_BOOL, NULL, "own AVX-512 1x1 convs between plain and nChw16c (default 1)"},
    {"cpu.conv1x1_plain", NETRUN_OPTION_BOOL, NULL, "own 1x1 convs on plain planes instead of sgemm (default 1)"},
    {"cpu.conv1x1_bb", NETRUN_OPTION_BOOL, NULL, "1x1 blocked convs cut by pixels (default 1; 0: oneDNN)"},
    {"cpu.conv1x1_yp2", NETRUN_OPTION_BOOL, NULL, "two output blocks per tile in 1x1 projections (default 1)"},
    {"cpu.conv_gemv", NETRUN_OPTION_BOOL, NULL, "GEMV for 1x1 convs on 1x1 planes (default 1)"},
    {"cpu.dnnl_images", NETRUN_OPTION_BOOL, NULL, "oneDNN convs handed out by image at large batch (default 1)"},
    {"cpu.dnnl_swish", NETRUN_OPTION_BOOL, NULL, "oneDNN's swish post-op instead of own (default 0)"},
    {"cpu.pack_matmul", NETRUN_OPTION_BOOL, NULL, "constant MatMul/Gemm weights packed once for oneDNN (default 1)"},
    {"cpu.dw_tiled", NETRUN_OPTION_BOOL, NULL, "tiled depthwise kernel (default 1)"},
    {"cpu.dw_split", NETRUN_OPTION_BOOL, NULL, "even/odd split rows for stride-2 depthwise (default 1)"},
    {"cpu.direct_rows", NETRUN_OPTION_BOOL, NULL,
     "direct nChw16c kernel: tasks by output row first (default: 1x1 stride 2 with weights smaller than X)"},
    {"cpu.dw_rows", NETRUN_OPTION_BOOL, NULL, "row-stationary 3x3 / 5x5 depthwise kernel (default 1)"},
    {"cpu.dw_direct", NETRUN_OPTION_BOOL, NULL, "stride-1 row-stationary depthwise reads X without a padded copy (default 1)"},
    {"cpu.pool_avx512", NETRUN_OPTION_BOOL, NULL, "AVX-512 MaxPool on nChw16c (default 1)"},
    {"cpu.nchwc", NETRUN_OPTION_BOOL, NULL, "keep the nChw16c layout between CPU layers (default 1)"},
    {"cpu.se_fold", NETRUN_OPTION_BOOL, NULL, "fold squeeze-excite scales into the next 1x1 conv (default 1)"},
    {"cpu.spin_us", NETRUN_OPTION_INT, NULL, "microseconds idle workers spin before sleeping (default 20000)"},
    {"cpu.spin_watch", NETRUN_OPTION_BOOL, NULL, "stop spinning while another process takes the cores (default 1)"},
    {NULL, 0, NULL, NULL},
};

/* The layout this backend keeps between its layers (ABI 1.10): nChw16c, planned by the runtime from oneDNN-style
 * blocked convs (supports() with src_blocked/dst_blocked), across these ops (docs/design.md, "nChw16c"). */
static const char *const nchwc_ops[] = {"Relu", "Sigmoid", "Tanh", "Swish", "LeakyRelu", "HardSwish", "HardSigmoid",
                                        "Clip", "Elu", "Abs", "Neg", "Exp", "Softplus", "Add", "Sub", "Mul", "Max",
                                        "Min", "Concat", "MaxPool", "AveragePool", "GlobalAveragePool", NULL};
static const netrun_region_spec cpu_regions[] = {
    {.kind = NETRUN_REGION_NCHW16C, .option = "cpu.nchwc", .fold_scale_option = "cpu.se_fold", .ops = nchwc_ops},
    {.kind = NETRUN_REGION_END},
};

static netrun_backend_api api = {
    .abi_version = NETRUN_ABI_VERSION,
    .struct_size = sizeof(netrun_backend_api),
    .name = "cpu",
    .description = "host CPU: OpenBLAS GEMM, netrun thread pool",
    .flags = NETRUN_BACKEND_HOST_MEMORY | NETRUN_BACKEND_FOLDS_CONSTANTS | NETRUN_BACKEND_FALLBACK,
    .probe = cpu_probe,
    .device_count = cpu_device_count,
    .device_describe = cpu_device_describe,
    .supports = cpu_supports,
    .context_create = cpu_context_create,
    .context_destroy = cpu_context_destroy,
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_free = cpu_buffer_free,
    .buffer_address = cpu_buffer_address,
    .copy_from_host = cpu_copy_from_host,
    .copy_to_host = cpu_copy_to_host,
    .kernel_create = cpu_kernel_create,
    .kernel_run = cpu_kernel_run,
    .kernel_destroy = cpu_kernel_destroy,
    .synchronize = NULL,
    .kernel_describe = cpu_kernel_describe,
    .may_alias = cpu_may_alias,
    .options = cpu_options,
    .uses = NETRUN_USES_DECLARED | NETRUN_USES_THREADS,
    .regions = cpu_regions,
};

NETRUN_BACKEND_EXPORT const netrun_backend_api *netrun_backend_entry(const netrun_host_api *host) {
    if (!host || NETRUN_ABI_MAJOR_OF(host->abi_version) != NETRUN_ABI_MAJOR) return NULL;
    cpu_host = host;
    if (!api.op_table) {
        api.op_table_len = build_op_table();
        api.op_table = op_table;
    }
    return &api;
}

void cpu_broadcast_strides(int r, const int64_t *d, int out_rank, const int64_t *out_dims, int64_t *strides) {
    int64_t s = 1;
    for (int i = out_rank - 1; i >= 0; i--) {
        int j = i - (out_rank - r);
        if (j < 0) {
            strides[i] = 0;
            continue;
        }
        strides[i] = d[j] == 1 && out_dims[i] != 1 ? 0 : s;
        s *= d[j];
    }
}
