/* Test plugin "fakedev": a device backend for machines without one (CI). Its memory is host memory behind
 * opaque handles (not NETRUN_BACKEND_HOST_MEMORY), so the runtime gives it its own memory domain, border copies
 * and a weights buffer, as for a GPU. It runs float32 MatMul (2-D), Add (same shapes, or a bias along the last dim),
 * Relu and the graph passes'
 * MatMulBias (2-D A, none or Relu, or a residual R as 4th input), has page-locked
 * host memory (host_alloc: blocks it remembers) and graph capture that records the queued work and replays it
 * as CUDA Graphs do: a copy replays from the same source address, so a capture that copies from memory other
 * than host_alloc's fails (with CUDA such a copy goes through a staging buffer whose contents change).
 * Prefetches (ABI 1.6) happen at the earliest moment their contract allows (at prefetch_from_host; option
 * fakedev.prefetch=late: at the latest, in prefetch_wait), so a runtime that overwrites a lane still being read,
 * or reads one it has not waited for, gets wrong results in one of the two. Tests of the runtime's device paths
 * (streamed weights, tests/memory/test_stream_weights.py) use it. fakedev.crash=kernel_create|kernel_run raises
 * SIGSEGV there, as a backend that crashes would (the CLI's crash report, tests/cli/test_cli.py crash_report).
 * Device memory of the caller (ABI 1.11): it stands in for a CUDA device (memory_type NETRUN_MEMORY_CUDA, one
 * device). Its "device memory" is host memory handed out by the exported fakedev_alloc/fakedev_free, so that
 * memory_check can tell a host pointer (any other) from device memory, and a test can read and write it
 * (tests/device_io/test_device_io.py). set_stream records the caller's stream; fakedev_last_stream tells it.
 * NonZero (float32) sizes its output at run time (args->alloc_output), as CUDA's does: a device segment with it
 * cannot be replayed whole (tests/device_io/test_dynamic_graphs.py); captured, it invalidates the capture. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netrun_backend.h"
#include "netrun_ops.h"
#include "../../backends/common/dtype_convert.h" /* float <-> IEEE half for the float16 kernels */

static const netrun_host_api *host;

enum { FD_MATMUL, FD_ADD, FD_RELU, FD_CAST, FD_NONZERO, FD_MMBIAS, FD_GATHER };
#define FD_MAX_IN 4

#define FD_DTYPES (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16))
static const netrun_op_support op_table[] = {
    {"", "MatMul", FD_DTYPES, "2-D only"},
    {"", "Add", FD_DTYPES, "identical shapes"},
    {"", "Relu", FD_DTYPES, ""},
    {"", "Cast", FD_DTYPES, "float32 <-> float16"},
    {"", "NonZero", NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT), "float32; output sized at run time"},
    {"com.netrun", "MatMulBias", FD_DTYPES, "2-D A; none or Relu, or + residual R (the graph passes' MatMul + bias)"},
    {"", "Gather", NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT), "rows of a 2-D float32 tensor by int64 indices; checks them "
                                                         "on the host, so a graph capture refuses it (as CUDA's)"},
};

/* A plain float16 region (NETRUN_REGION_FP16) across its three ops under --precision fp16, so that CI tests the
 * region planner (runtime/opt_half.c) without a GPU; fakedev.fp16_plain=0 turns it off. */
static const char *const fd_half_ops[] = {"MatMul", "Add", "Relu", NULL};
static int fd_supports(const netrun_backend_config *config, const netrun_node_desc *node, char *reason,
                       size_t reason_size);
static int fd_half_keeps(const netrun_backend_config *config, const netrun_node_desc *node) {
    char why[128]; /* as supports(); a MatMulBias the passes made is asked without params */
    return fd_supports(config, node, why, sizeof why);
}
static const netrun_region_spec fd_regions[] = {
    {.kind = NETRUN_REGION_FP16, .conditions = NETRUN_REGION_IF_FP16, .option = "fakedev.fp16_plain", .ops = fd_half_ops,
     .keeps = fd_half_keeps},
    {.kind = NETRUN_REGION_END},
};

typedef struct fd_buffer {
    size_t bytes;
    unsigned char *data;
    int wrapped; /* the caller's memory (buffer_wrap): buffer_free frees the handle only */
} fd_buffer;

/* "Device memory" for tests: blocks of host memory this plugin hands out and remembers (process-wide, no lock:
 * the tests allocate from one thread). */
#define FD_MAX_DEV_BLOCKS 4096
static void *dev_block[FD_MAX_DEV_BLOCKS];
static size_t dev_block_size[FD_MAX_DEV_BLOCKS];
static void *last_stream;

/* Every block of "device memory", the caller's (fakedev_alloc) and the backend's own (buffer_alloc), so that
 * memory_check takes a session's device output handed to another session (DLPack) as device memory. */
NETRUN_BACKEND_EXPORT void *fakedev_alloc(size_t bytes) {
    for (int i = 0; i < FD_MAX_DEV_BLOCKS; i++)
        if (!dev_block[i]) {
            void *p = NULL; /* not host->alloc: a test may call this before netrun loaded the plugin */
            if (posix_memalign(&p, 256, bytes ? bytes : 1)) return NULL;
            dev_block[i] = p;
            dev_block_size[i] = bytes;
            return p;
        }
    return NULL;
}

NETRUN_BACKEND_EXPORT void fakedev_free(void *p) {
    for (int i = 0; p && i < FD_MAX_DEV_BLOCKS; i++)
        if (dev_block[i] == p) {
            free(p);
            dev_block[i] = NULL;
        }
}

NETRUN_BACKEND_EXPORT void *fakedev_last_stream(void) { return last_stream; }

typedef struct fd_kernel {
    int op;
    netrun_dtype in_type, out_type; /* float32 or float16 (computed in float) */
    int finite;                     /* Cast to float16 keeping finite values finite (netrun_cast_params.saturate 2) */
    int relu;                       /* MatMulBias with Relu */
    int n_in;                       /* inputs it reads (MatMulBias: 3, or 4 with the residual R) */
} fd_kernel;

/* One recorded step of a captured graph. */
typedef struct fd_step {
    int is_copy;
    void *dst;
    const void *src;
    size_t bytes;
    const fd_kernel *kernel;
    netrun_tensor in[FD_MAX_IN], out;
    int n_in;
} fd_step;

typedef struct fd_graph {
    fd_step *steps;
    int n;
} fd_graph;

#define FD_MAX_PINNED 64
#define FD_MAX_PENDING 16

typedef struct fd_copy {
    void *dst;
    const void *src;
    size_t bytes;
} fd_copy;

typedef struct fd_context {
    int late;                          /* fakedev.prefetch=late */
    int crash;                         /* fakedev.crash: 1 = in kernel_create, 2 = in kernel_run (SIGSEGV) */
    fd_copy pending[2][FD_MAX_PENDING]; /* late prefetches per lane, done at prefetch_wait */
    int n_pending[2];
    size_t in_use, peak;
    void *pinned[FD_MAX_PINNED];
    size_t pinned_size[FD_MAX_PINNED];
    int capturing, capture_failed;
    fd_step *rec;
    int n_rec, cap_rec;
} fd_context;

static int default_domain(const char *d) { return !d || !*d || !strcmp(d, "ai.onnx"); }

static int op_of(const char *domain, const char *op) {
    if (domain && op && !strcmp(domain, "com.netrun") && !strcmp(op, "MatMulBias")) return FD_MMBIAS;
    if (!default_domain(domain) || !op) return -1;
    if (!strcmp(op, "MatMul")) return FD_MATMUL;
    if (!strcmp(op, "Add")) return FD_ADD;
    if (!strcmp(op, "Relu")) return FD_RELU;
    if (!strcmp(op, "Cast")) return FD_CAST;
    if (!strcmp(op, "NonZero")) return FD_NONZERO;
    if (!strcmp(op, "Gather")) return FD_GATHER;
    return -1;
}

static netrun_status fd_probe(char *msg, size_t msg_size) {
    snprintf(msg, msg_size, "test device: host memory behind handles");
    return NETRUN_OK;
}

static int fd_device_count(void) { return 1; }

static int n_inputs_of(int op) {
    return op == FD_RELU || op == FD_CAST || op == FD_NONZERO ? 1 : op == FD_MMBIAS ? 3 : 2;
}

static int fd_supports(const netrun_backend_config *config, const netrun_node_desc *node, char *reason,
                       size_t reason_size) {
    (void)config;
    int op = op_of(node->domain, node->op_type);
    int want = n_inputs_of(op);
    if (op == FD_MMBIAS && node->n_inputs == 4) want = 4; /* + the residual R */
    if (op < 0 || node->n_inputs != want || node->n_outputs != 1) {
        snprintf(reason, reason_size, "fakedev runs MatMul, Add, Relu, Cast, NonZero, Gather and MatMulBias only");
        return 0;
    }
    if (op == FD_GATHER) {
        const netrun_axis_params *ap = node->params;
        if (node->inputs[0].dtype != NETRUN_DTYPE_FLOAT || node->inputs[0].rank != 2 ||
            node->inputs[1].dtype != NETRUN_DTYPE_INT64 || node->inputs[1].rank != 1 || (ap && ap->axis != 0)) {
            snprintf(reason, reason_size, "Gather of rows (axis 0) of a 2-D float32 tensor by 1-D int64 indices only");
            return 0;
        }
        return 1;
    }
    if (op == FD_NONZERO) {
        if (node->inputs[0].dtype != NETRUN_DTYPE_FLOAT || node->inputs[0].rank < 1) {
            snprintf(reason, reason_size, "NonZero of float32 tensors only");
            return 0;
        }
        return 1;
    }
    netrun_dtype t = node->inputs[0].dtype, to = node->outputs[0].dtype;
    for (int i = 0; i < node->n_inputs; i++)
        if ((node->inputs[i].dtype != NETRUN_DTYPE_FLOAT && node->inputs[i].dtype != NETRUN_DTYPE_FLOAT16) ||
            node->inputs[i].dtype != t || node->inputs[i].rank < 0) {
            snprintf(reason, reason_size, "float32 or float16 inputs of one type only");
            return 0;
        }
    if (op == FD_CAST ? (to != NETRUN_DTYPE_FLOAT && to != NETRUN_DTYPE_FLOAT16) || to == t : to != t) {
        snprintf(reason, reason_size, op == FD_CAST ? "Cast between float32 and float16 only" : "output type differs");
        return 0;
    }
    const netrun_value_desc *a = &node->inputs[0], *b = &node->inputs[op == FD_MMBIAS ? 1 : want - 1];
    const netrun_gemm_params *gp = op == FD_MMBIAS ? node->params : NULL;
    if (op == FD_MMBIAS && (a->rank != 2 || b->rank != 2 || node->inputs[2].rank != 1 ||
                            (gp && gp->activation.kind != NETRUN_ACT_NONE && gp->activation.kind != NETRUN_ACT_RELU))) {
        snprintf(reason, reason_size, "MatMulBias of a 2-D A, none or Relu only");
        return 0;
    }
    if (op == FD_MMBIAS && want == 4) { /* R: Y's shape, no activation (the Add came after the product and bias) */
        const netrun_value_desc *r = &node->inputs[3], *y = &node->outputs[0];
        if (r->rank != 2 || y->rank != 2 || r->dims[0] != y->dims[0] || r->dims[1] != y->dims[1] ||
            (gp && gp->activation.kind != NETRUN_ACT_NONE)) {
            snprintf(reason, reason_size, "MatMulBias's residual R of Y's shape, without an activation, only");
            return 0;
        }
    }
    if (op == FD_MATMUL && (a->rank != 2 || b->rank != 2)) {
        snprintf(reason, reason_size, "MatMul of 2-D tensors only");
        return 0;
    }
    /* Add: identical shapes, or a bias [N] along the other's last dim (either side), as Linear layers add it */
    const netrun_value_desc *full = a->rank >= b->rank ? a : b, *part = a->rank >= b->rank ? b : a;
    int bias_add = part->rank == 1 && full->rank >= 1 && part->dims[0] == full->dims[full->rank - 1];
    if (op == FD_ADD && !bias_add &&
        (a->rank != b->rank || memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank))) {
        snprintf(reason, reason_size, "Add of identical shapes or of a bias along the last dim only");
        return 0;
    }
    return 1;
}

static netrun_status fd_context_create(const netrun_backend_config *config, netrun_backend_context **out) {
    fd_context *ctx = host->alloc(sizeof *ctx, sizeof(void *));
    if (!ctx) return host->error(NETRUN_ERR_OUT_OF_MEMORY, "fakedev: out of memory");
    memset(ctx, 0, sizeof *ctx);
    const char *mode = config->get_option ? config->get_option(config->opaque, "fakedev.prefetch") : NULL;
    ctx->late = mode && !strcmp(mode, "late");
    const char *crash = config->get_option ? config->get_option(config->opaque, "fakedev.crash") : NULL;
    ctx->crash = !crash ? 0 : !strcmp(crash, "kernel_create") ? 1 : !strcmp(crash, "kernel_run") ? 2 : 0;
    *out = (netrun_backend_context *)ctx;
    return NETRUN_OK;
}

static void fd_context_destroy(netrun_backend_context *c) {
    fd_context *ctx = (fd_context *)c;
    if (!ctx) return;
    host->free(ctx->rec);
    host->free(ctx);
}

static netrun_status fd_buffer_alloc(netrun_backend_context *c, size_t bytes, void **buffer) {
    fd_context *ctx = (fd_context *)c;
    fd_buffer *b = host->alloc(sizeof *b, sizeof(void *));
    unsigned char *d = fakedev_alloc(bytes);
    if (!b || !d) {
        host->free(b);
        fakedev_free(d);
        return host->error(NETRUN_ERR_OUT_OF_MEMORY, "fakedev: cannot allocate %zu bytes", bytes);
    }
    memset(d, 0xA5, bytes ? bytes : 1); /* garbage, as device memory: nothing may rely on zeros */
    b->bytes = bytes;
    b->data = d;
    b->wrapped = 0;
    ctx->in_use += bytes;
    if (ctx->in_use > ctx->peak) ctx->peak = ctx->in_use;
    *buffer = b;
    return NETRUN_OK;
}

static void fd_buffer_free(netrun_backend_context *c, void *buffer) {
    fd_context *ctx = (fd_context *)c;
    fd_buffer *b = buffer;
    if (!b) return;
    if (b->wrapped) {
        host->free(b);
        return;
    }
    ctx->in_use -= b->bytes;
    fakedev_free(b->data);
    host->free(b);
}

static void *fd_buffer_address(netrun_backend_context *c, void *buffer) {
    (void)c;
    return buffer ? ((fd_buffer *)buffer)->data : NULL;
}

static int is_pinned(const fd_context *ctx, const void *p, size_t bytes) {
    for (int i = 0; i < FD_MAX_PINNED; i++) {
        const char *b = ctx->pinned[i];
        if (b && (const char *)p >= b && (const char *)p + bytes <= b + ctx->pinned_size[i]) return 1;
    }
    return 0;
}

static netrun_status record(fd_context *ctx, const fd_step *step) {
    if (ctx->n_rec == ctx->cap_rec) {
        int nc = ctx->cap_rec ? ctx->cap_rec * 2 : 32;
        fd_step *p = host->alloc(sizeof *p * (size_t)nc, sizeof(void *));
        if (!p) return host->error(NETRUN_ERR_OUT_OF_MEMORY, "fakedev: out of memory recording a graph");
        if (ctx->n_rec) memcpy(p, ctx->rec, sizeof *p * (size_t)ctx->n_rec);
        host->free(ctx->rec);
        ctx->rec = p;
        ctx->cap_rec = nc;
    }
    ctx->rec[ctx->n_rec++] = *step;
    return NETRUN_OK;
}

static netrun_status fd_copy_from_host(netrun_backend_context *c, void *buffer, size_t offset, const void *src,
                                       size_t bytes) {
    fd_context *ctx = (fd_context *)c;
    fd_buffer *b = buffer;
    if (!b || offset > b->bytes || bytes > b->bytes - offset)
        return host->error(NETRUN_ERR_INTERNAL, "fakedev: copy of %zu bytes at %zu outside a buffer", bytes, offset);
    if (ctx->capturing) {
        if (!is_pinned(ctx, src, bytes)) {
            ctx->capture_failed = 1;
            return host->error(NETRUN_ERR_UNSUPPORTED, "fakedev: a copy from pageable host memory cannot be captured");
        }
        fd_step step = {.is_copy = 1, .dst = b->data + offset, .src = src, .bytes = bytes};
        return record(ctx, &step);
    }
    if (bytes) memcpy(b->data + offset, src, bytes);
    return NETRUN_OK;
}

/* A copy now, or recorded when a graph is being captured. */
static netrun_status do_copy(fd_context *ctx, void *dst, const void *src, size_t bytes) {
    if (ctx->capturing) {
        fd_step step = {.is_copy = 1, .dst = dst, .src = src, .bytes = bytes};
        return record(ctx, &step);
    }
    if (bytes) memcpy(dst, src, bytes);
    return NETRUN_OK;
}

static netrun_status fd_prefetch_from_host(netrun_backend_context *c, void *buffer, size_t offset, const void *src,
                                           size_t bytes, int lane) {
    fd_context *ctx = (fd_context *)c;
    fd_buffer *b = buffer;
    if (lane < 0 || lane > 1) return host->error(NETRUN_ERR_INTERNAL, "fakedev: prefetch lane %d", lane);
    if (!b || offset > b->bytes || bytes > b->bytes - offset)
        return host->error(NETRUN_ERR_INTERNAL, "fakedev: prefetch of %zu bytes at %zu outside a buffer", bytes, offset);
    if (!is_pinned(ctx, src, bytes))
        return host->error(NETRUN_ERR_INTERNAL, "fakedev: prefetch from memory host_alloc did not give");
    if (!ctx->late) return do_copy(ctx, b->data + offset, src, bytes);
    if (ctx->n_pending[lane] == FD_MAX_PENDING)
        return host->error(NETRUN_ERR_INTERNAL, "fakedev: more than %d prefetches on lane %d without a wait",
                           FD_MAX_PENDING, lane);
    ctx->pending[lane][ctx->n_pending[lane]++] = (fd_copy){b->data + offset, src, bytes};
    return NETRUN_OK;
}

static netrun_status fd_prefetch_wait(netrun_backend_context *c, int lane) {
    fd_context *ctx = (fd_context *)c;
    if (lane < 0 || lane > 1) return host->error(NETRUN_ERR_INTERNAL, "fakedev: prefetch lane %d", lane);
    for (int i = 0; i < ctx->n_pending[lane]; i++) {
        const fd_copy *p = &ctx->pending[lane][i];
        netrun_status st = do_copy(ctx, p->dst, p->src, p->bytes);
        if (st != NETRUN_OK) return st;
    }
    ctx->n_pending[lane] = 0;
    return NETRUN_OK;
}

static netrun_status fd_copy_to_host(netrun_backend_context *c, void *dst, const void *buffer, size_t offset,
                                     size_t bytes) {
    (void)c;
    const fd_buffer *b = buffer;
    if (!b || offset > b->bytes || bytes > b->bytes - offset)
        return host->error(NETRUN_ERR_INTERNAL, "fakedev: copy of %zu bytes at %zu outside a buffer", bytes, offset);
    if (bytes) memcpy(dst, b->data + offset, bytes);
    return NETRUN_OK;
}

static netrun_status fd_kernel_create(netrun_backend_context *c, const netrun_node_desc *node, netrun_kernel **out,
                                      size_t *workspace_bytes) {
    if (((fd_context *)c)->crash == 1) raise(SIGSEGV); /* a backend that crashes while preparing (crash report test) */
    int op = op_of(node->domain, node->op_type);
    if (op < 0) return host->error(NETRUN_ERR_UNSUPPORTED, "fakedev: no kernel for %s", node->op_type);
    fd_kernel *k = host->alloc(sizeof *k, sizeof(void *));
    if (!k) return host->error(NETRUN_ERR_OUT_OF_MEMORY, "fakedev: out of memory");
    k->op = op;
    k->in_type = node->inputs[0].dtype;
    k->out_type = node->outputs[0].dtype;
    const netrun_cast_params *cp = op == FD_CAST ? node->params : NULL;
    k->finite = cp && node->params_size >= sizeof *cp && cp->saturate == 2;
    const netrun_gemm_params *gp = op == FD_MMBIAS ? node->params : NULL;
    k->relu = gp && gp->activation.kind == NETRUN_ACT_RELU;
    k->n_in = op == FD_MMBIAS && node->n_inputs == 4 ? 4 : n_inputs_of(op);
    *workspace_bytes = 0;
    *out = (netrun_kernel *)k;
    return NETRUN_OK;
}

static size_t count(const netrun_tensor *t) {
    size_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= (size_t)t->dims[d];
    return n;
}

static float load(const netrun_tensor *t, size_t i) {
    return t->dtype == NETRUN_DTYPE_FLOAT16 ? nr_half_to_float(((const uint16_t *)t->data)[i]) : ((const float *)t->data)[i];
}

/* float16 kernels: the inputs widened to float32 scratch, the float32 kernel, the result rounded to float16 */
static netrun_status execute_f32(const fd_kernel *k, const netrun_tensor *in, const netrun_tensor *out);

static netrun_status execute(const fd_kernel *k, const netrun_tensor *in, const netrun_tensor *out) {
    if (k->op != FD_CAST && k->in_type == NETRUN_DTYPE_FLOAT) return execute_f32(k, in, out);
    int n_in = k->n_in;
    netrun_tensor w[FD_MAX_IN], wo = *out;
    size_t n_out = count(out);
    netrun_status st = NETRUN_OK;
    float *buf[FD_MAX_IN + 1] = {0};
    for (int i = 0; i < n_in; i++) {
        size_t n = count(&in[i]);
        w[i] = in[i];
        if (!(buf[i] = host->alloc(n * sizeof(float) + 1, 64))) st = NETRUN_ERR_OUT_OF_MEMORY;
        for (size_t j = 0; buf[i] && j < n; j++) buf[i][j] = load(&in[i], j);
        w[i].data = buf[i], w[i].dtype = NETRUN_DTYPE_FLOAT, w[i].nbytes = n * sizeof(float);
    }
    if (!(buf[FD_MAX_IN] = host->alloc(n_out * sizeof(float) + 1, 64))) st = NETRUN_ERR_OUT_OF_MEMORY;
    wo.data = buf[FD_MAX_IN], wo.dtype = NETRUN_DTYPE_FLOAT, wo.nbytes = n_out * sizeof(float);
    if (st == NETRUN_OK && k->op == FD_CAST) memcpy(wo.data, w[0].data, n_out * sizeof(float));
    else if (st == NETRUN_OK) st = execute_f32(k, w, &wo);
    if (st == NETRUN_OK && n_out * (out->dtype == NETRUN_DTYPE_FLOAT16 ? 2 : 4) > out->nbytes)
        st = host->error(NETRUN_ERR_INTERNAL, "fakedev: output too small");
    for (size_t j = 0; st == NETRUN_OK && j < n_out; j++) {
        float v = buf[FD_MAX_IN][j];
        if (k->finite && v - v == 0) /* finite (inf - inf and NaN - NaN are NaN): clamped into float16's range */
            v = v < -65504.0f ? -65504.0f : v > 65504.0f ? 65504.0f : v;
        if (out->dtype == NETRUN_DTYPE_FLOAT16) ((uint16_t *)out->data)[j] = nr_float_to_half(v);
        else ((float *)out->data)[j] = buf[FD_MAX_IN][j];
    }
    for (int i = 0; i <= FD_MAX_IN; i++) host->free(buf[i]);
    return st == NETRUN_ERR_OUT_OF_MEMORY ? host->error(st, "fakedev: out of memory") : st;
}

static netrun_status execute_f32(const fd_kernel *k, const netrun_tensor *in, const netrun_tensor *out) {
    const float *a = in[0].data;
    float *y = out->data;
    size_t n = count(out);
    if (n * sizeof(float) > out->nbytes) return host->error(NETRUN_ERR_INTERNAL, "fakedev: output too small");
    if (k->op == FD_RELU) {
        for (size_t i = 0; i < n; i++) y[i] = a[i] < 0 ? 0 : a[i];
    } else if (k->op == FD_ADD) {
        const float *b = in[1].data;
        size_t na = count(&in[0]), nb = count(&in[1]); /* the smaller one repeats along the last dim */
        for (size_t i = 0; i < n; i++) y[i] = a[na == n ? i : i % na] + b[nb == n ? i : i % nb];
    } else {
        const float *b = in[1].data, *bias = k->op == FD_MMBIAS ? in[2].data : NULL;
        const float *res = k->n_in == 4 ? in[3].data : NULL;
        int64_t m = in[0].dims[0], kk = in[0].dims[1], nn = in[1].dims[1];
        if (in[1].dims[0] != kk || out->dims[0] != m || out->dims[1] != nn || (bias && in[2].dims[0] != nn) ||
            (res && (in[3].dims[0] != m || in[3].dims[1] != nn)))
            return host->error(NETRUN_ERR_INTERNAL, "fakedev: MatMul shapes disagree");
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < nn; j++) {
                float acc = 0;
                for (int64_t p = 0; p < kk; p++) acc += a[i * kk + p] * b[p * nn + j];
                if (bias) acc += bias[j];
                if (res) acc += res[i * nn + j]; /* read before y is written: R may be Y's memory */
                y[i * nn + j] = k->relu && acc < 0 ? 0.0f : acc;
            }
    }
    return NETRUN_OK;
}

/* NonZero: the count first, then the output of [rank, count] int64 coordinates (row-major order of X) */
static netrun_status run_nonzero(fd_context *ctx, const netrun_kernel_args *args) {
    if (ctx->capturing) { /* its size comes from the data: a graph cannot hold it */
        ctx->capture_failed = 1;
        return NETRUN_OK;
    }
    const netrun_tensor *x = &args->inputs[0];
    const float *v = x->data;
    size_t n = count(x), nnz = 0;
    for (size_t i = 0; i < n; i++) nnz += v[i] != 0;
    int64_t dims[2] = {x->rank, (int64_t)nnz};
    netrun_status st = args->alloc_output(args->exec, 0, 2, dims);
    if (st != NETRUN_OK) return st;
    int64_t *y = args->outputs[0].data;
    for (size_t i = 0, j = 0; i < n; i++) {
        if (v[i] == 0) continue;
        size_t r = i;
        for (int d = x->rank - 1; d >= 0; d--) {
            y[(size_t)d * nnz + j] = (int64_t)(r % (size_t)x->dims[d]);
            r /= (size_t)x->dims[d];
        }
        j++;
    }
    return NETRUN_OK;
}

/* Gather of rows: an index out of range is an error, found by reading the indices on the host, as CUDA's Gather
 * reads its bad-index flag back; a graph capture cannot hold that, so it refuses it at this step
 * (tests/device_io/test_graph_split.py: the runtime then splits the segment there). */
static netrun_status run_gather(fd_context *ctx, const netrun_kernel_args *args) {
    if (ctx->capturing) return host->error(NETRUN_ERR_UNSUPPORTED, "fakedev Gather: reads its indices back, not capturable");
    const netrun_tensor *x = &args->inputs[0], *ix = &args->inputs[1];
    const int64_t rows = x->dims[0], cols = x->dims[1], n = ix->dims[0];
    const int64_t *idx = ix->data;
    if (args->outputs[0].nbytes < (size_t)(n * cols) * sizeof(float))
        return host->error(NETRUN_ERR_INTERNAL, "fakedev Gather: output too small");
    for (int64_t i = 0; i < n; i++) {
        int64_t r = idx[i] < 0 ? idx[i] + rows : idx[i];
        if (r < 0 || r >= rows)
            return host->error(NETRUN_ERR_INVALID_ARGUMENT, "fakedev Gather: index %lld out of range [-%lld, %lld)",
                               (long long)idx[i], (long long)rows, (long long)rows);
        memcpy((float *)args->outputs[0].data + i * cols, (const float *)x->data + r * cols, (size_t)cols * sizeof(float));
    }
    return NETRUN_OK;
}

static netrun_status fd_kernel_run(netrun_backend_context *c, netrun_kernel *kernel, const netrun_kernel_args *args) {
    fd_context *ctx = (fd_context *)c;
    if (ctx->crash == 2) raise(SIGSEGV);
    const fd_kernel *k = (const fd_kernel *)kernel;
    if (k->op == FD_NONZERO) return run_nonzero(ctx, args);
    if (k->op == FD_GATHER) return run_gather(ctx, args);
    int want = k->n_in;
    if (args->n_inputs != want || args->n_outputs != 1)
        return host->error(NETRUN_ERR_INTERNAL, "fakedev: %d inputs, %d outputs", args->n_inputs, args->n_outputs);
    if (ctx->capturing) { /* the tensors (addresses) are recorded; the data is read when the graph replays */
        fd_step step = {.kernel = k, .out = args->outputs[0], .n_in = want};
        memcpy(step.in, args->inputs, sizeof(netrun_tensor) * (size_t)want);
        return record(ctx, &step);
    }
    return execute(k, args->inputs, &args->outputs[0]);
}

static void fd_kernel_destroy(netrun_backend_context *c, netrun_kernel *kernel) {
    (void)c;
    host->free(kernel);
}

static netrun_status fd_capture_begin(netrun_backend_context *c) {
    fd_context *ctx = (fd_context *)c;
    ctx->capturing = 1;
    ctx->capture_failed = 0;
    ctx->n_rec = 0;
    return NETRUN_OK;
}

static netrun_status fd_capture_end(netrun_backend_context *c, void **out) {
    fd_context *ctx = (fd_context *)c;
    ctx->capturing = 0;
    *out = NULL;
    if (ctx->n_pending[0] || ctx->n_pending[1]) { /* as CUDA: a fork not joined before the capture ends */
        ctx->n_pending[0] = ctx->n_pending[1] = 0;
        return host->error(NETRUN_ERR_UNSUPPORTED, "fakedev: capture ended with a prefetch not waited for");
    }
    if (ctx->capture_failed) return host->error(NETRUN_ERR_UNSUPPORTED, "fakedev: capture invalidated");
    fd_graph *g = host->alloc(sizeof *g, sizeof(void *));
    fd_step *steps = host->alloc(sizeof *steps * (size_t)(ctx->n_rec ? ctx->n_rec : 1), sizeof(void *));
    if (!g || !steps) {
        host->free(g);
        host->free(steps);
        return host->error(NETRUN_ERR_OUT_OF_MEMORY, "fakedev: out of memory");
    }
    if (ctx->n_rec) memcpy(steps, ctx->rec, sizeof *steps * (size_t)ctx->n_rec);
    g->steps = steps;
    g->n = ctx->n_rec;
    *out = g;
    return NETRUN_OK;
}

static netrun_status fd_graph_launch(netrun_backend_context *c, void *graph) {
    (void)c;
    const fd_graph *g = graph;
    for (int i = 0; i < g->n; i++) {
        const fd_step *s = &g->steps[i];
        if (s->is_copy) {
            if (s->bytes) memcpy(s->dst, s->src, s->bytes);
            continue;
        }
        netrun_status st = execute(s->kernel, s->in, &s->out);
        if (st != NETRUN_OK) return st;
    }
    return NETRUN_OK;
}

static void fd_graph_destroy(netrun_backend_context *c, void *graph) {
    (void)c;
    fd_graph *g = graph;
    if (!g) return;
    host->free(g->steps);
    host->free(g);
}

static netrun_status fd_memory_info(netrun_backend_context *c, size_t *in_use, size_t *peak, size_t *free_bytes) {
    const fd_context *ctx = (const fd_context *)c;
    *in_use = ctx->in_use;
    *peak = ctx->peak;
    if (free_bytes) *free_bytes = 0; /* unknown: only the session's budget limits it */
    return NETRUN_OK;
}

static netrun_status fd_host_alloc(netrun_backend_context *c, size_t bytes, void **out) {
    fd_context *ctx = (fd_context *)c;
    for (int i = 0; i < FD_MAX_PINNED; i++)
        if (!ctx->pinned[i]) {
            void *p = host->alloc(bytes ? bytes : 1, 64);
            if (!p) return host->error(NETRUN_ERR_OUT_OF_MEMORY, "fakedev: no page-locked memory for %zu bytes", bytes);
            ctx->pinned[i] = p;
            ctx->pinned_size[i] = bytes;
            *out = p;
            return NETRUN_OK;
        }
    return host->error(NETRUN_ERR_OUT_OF_MEMORY, "fakedev: more than %d page-locked blocks", FD_MAX_PINNED);
}

static void fd_host_free(netrun_backend_context *c, void *p) {
    fd_context *ctx = (fd_context *)c;
    if (!p) return;
    for (int i = 0; i < FD_MAX_PINNED; i++)
        if (ctx->pinned[i] == p) ctx->pinned[i] = NULL;
    host->free(p);
}

/* ---- the caller's device memory (ABI 1.11) ---- */
static netrun_status fd_memory_check(const void *ptr, size_t bytes, int device) {
    if (device != 0) return host->error(NETRUN_ERR_INVALID_ARGUMENT, "fakedev has one device (0), not %d", device);
    for (int i = 0; i < FD_MAX_DEV_BLOCKS; i++) {
        const char *b = dev_block[i];
        if (!b || (const char *)ptr < b || (const char *)ptr >= b + (dev_block_size[i] ? dev_block_size[i] : 1)) continue;
        size_t left = dev_block_size[i] - (size_t)((const char *)ptr - b);
        if (bytes > left)
            return host->error(NETRUN_ERR_INVALID_ARGUMENT, "the allocation holds %zu bytes from this pointer, %zu "
                               "needed", left, bytes);
        return NETRUN_OK;
    }
    return host->error(NETRUN_ERR_INVALID_ARGUMENT, "%p is a host pointer, not device memory", ptr);
}

static netrun_status fd_buffer_wrap(netrun_backend_context *c, void *ptr, size_t bytes, void **buffer) {
    (void)c;
    fd_buffer *b = host->alloc(sizeof *b, sizeof(void *));
    if (!b) return host->error(NETRUN_ERR_OUT_OF_MEMORY, "fakedev: out of memory");
    b->bytes = bytes;
    b->data = ptr;
    b->wrapped = 1;
    *buffer = b;
    return NETRUN_OK;
}

static netrun_status fd_set_stream(netrun_backend_context *c, void *stream) {
    (void)c;
    last_stream = stream;
    return NETRUN_OK;
}

static netrun_status fd_copy_device(netrun_backend_context *c, void *dst, size_t dst_offset, const void *src,
                                    size_t src_offset, size_t bytes) {
    fd_buffer *d = dst;
    const fd_buffer *sb = src;
    if (!d || !sb || dst_offset > d->bytes || bytes > d->bytes - dst_offset || src_offset > sb->bytes ||
        bytes > sb->bytes - src_offset)
        return host->error(NETRUN_ERR_INTERNAL, "fakedev: device copy of %zu bytes outside a buffer", bytes);
    return do_copy((fd_context *)c, d->data + dst_offset, sb->data + src_offset, bytes);
}

static const netrun_backend_api api = {
    .abi_version = NETRUN_ABI_VERSION,
    .struct_size = sizeof(netrun_backend_api),
    .name = "fakedev",
    .description = "test device backend (host memory behind handles)",
    .flags = 0,
    .op_table = op_table,
    .op_table_len = sizeof op_table / sizeof op_table[0],
    .regions = fd_regions,
    .probe = fd_probe,
    .device_count = fd_device_count,
    .supports = fd_supports,
    .context_create = fd_context_create,
    .context_destroy = fd_context_destroy,
    .buffer_alloc = fd_buffer_alloc,
    .buffer_free = fd_buffer_free,
    .buffer_address = fd_buffer_address,
    .copy_from_host = fd_copy_from_host,
    .copy_to_host = fd_copy_to_host,
    .kernel_create = fd_kernel_create,
    .kernel_run = fd_kernel_run,
    .kernel_destroy = fd_kernel_destroy,
    .graph_capture_begin = fd_capture_begin,
    .graph_capture_end = fd_capture_end,
    .graph_launch = fd_graph_launch,
    .graph_destroy = fd_graph_destroy,
    .memory_info = fd_memory_info,
    .host_alloc = fd_host_alloc,
    .host_free = fd_host_free,
    .prefetch_from_host = fd_prefetch_from_host,
    .prefetch_wait = fd_prefetch_wait,
    .memory_type = NETRUN_MEMORY_CUDA,
    .memory_check = fd_memory_check,
    .buffer_wrap = fd_buffer_wrap,
    .set_stream = fd_set_stream,
    .copy_device = fd_copy_device,
};

NETRUN_BACKEND_EXPORT const netrun_backend_api *netrun_backend_entry(const netrun_host_api *h) {
    host = h;
    return &api;
}
