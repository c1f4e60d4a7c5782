/* The CUDA backend plugin: entry point, probe, context (stream, cuBLAS and cuDNN handles), device buffers and
 * dispatch to the op family tables. Nothing touches the GPU before context_create except the probe's
 * cudaGetDeviceCount / property queries, which create no context. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include "cuda_internal.h"

/* Searched in this order: the first table naming an op serves it (cast before elementwise's older Cast). */
#define FAMILIES(X) X(cast) X(quantize) X(qlinear) X(index_ops) X(attention) X(loss) X(vision) X(conv) X(gemm) X(norm) \
    X(pool) X(elementwise) X(shape_ops) X(data_movement) X(resize) X(reduce) X(softmax)

#define DECLARE(f) extern const cuda_op cuda_ops_##f[];
FAMILIES(DECLARE)
#undef DECLARE
#define LIST(f) cuda_ops_##f,
static const cuda_op *const families[] = {FAMILIES(LIST)};
#undef LIST

const netrun_host_api *cuda_host;

typedef struct cuda_kernel {
    const cuda_op *op;
    void *state;
} cuda_kernel;

/* ---- helpers shared by the families ---- */

int cuda_refuse(char *reason, size_t size, const char *fmt, ...) {
    if (reason && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, size, fmt, ap);
        va_end(ap);
    }
    return 0;
}

netrun_status cuda_fail(cudaError_t e, const char *what) {
    netrun_status code = e == cudaErrorMemoryAllocation ? NETRUN_ERR_OUT_OF_MEMORY : NETRUN_ERR_BACKEND;
    return cuda_host->error(code, "cuda: %s failed: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

netrun_status cuda_check_launch(const char *what) {
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, what);
}

netrun_status cublas_fail(cublasStatus_t s, const char *what) {
    netrun_status code = s == CUBLAS_STATUS_ALLOC_FAILED ? NETRUN_ERR_OUT_OF_MEMORY : NETRUN_ERR_BACKEND;
    if (!cuda_cublas_loaded()) return cuda_host->error(code, "cuda: %s failed: cuBLAS status %d", what, (int)s);
    return cuda_host->error(code, "cuda: %s failed: %s", what, cublasGetStatusString(s));
}

netrun_status cudnn_fail(cudnnStatus_t s, const char *what) {
    netrun_status code = s == CUDNN_STATUS_ALLOC_FAILED ? NETRUN_ERR_OUT_OF_MEMORY
                         : s == CUDNN_STATUS_NOT_SUPPORTED ? NETRUN_ERR_UNSUPPORTED
                                                           : NETRUN_ERR_BACKEND;
    if (!cuda_cudnn_loaded()) return cuda_host->error(code, "cuda: %s failed: cuDNN status %d", what, (int)s);
    return cuda_host->error(code, "cuda: %s failed: %s", what, cudnnGetErrorString(s));
}

netrun_dtype cuda_main_dtype(const netrun_node_desc *node) {
    if (node->n_inputs > 0 && node->inputs[0].rank >= 0) return node->inputs[0].dtype;
    if (node->n_outputs > 0) return node->outputs[0].dtype;
    return NETRUN_DTYPE_UNDEFINED;
}

void cuda_broadcast_strides(int r, const int64_t *d, int out_rank, const int64_t *out_dims, int64_t *strides) {
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

const char *cuda_dtype_name(netrun_dtype t) {
    static const char *const names[NETRUN_DTYPE_COUNT_] = {
        "undefined", "float32", "uint8", "int8", "uint16", "int16", "int32", "int64", "string", "bool", "float16",
        "float64", "uint32", "uint64", "complex64", "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz",
        "float8e5m2", "float8e5m2fnuz", "uint4", "int4", "float4e2m1", "float8e8m0", "uint2", "int2"};
    return (unsigned)t < NETRUN_DTYPE_COUNT_ ? names[t] : "unknown";
}

static int default_domain(const char *d) { return !d || !*d || !strcmp(d, "ai.onnx"); }

static const cuda_op *find_op(const char *domain, const char *op_type) {
    if (domain && !strcmp(domain, "com.netrun")) { /* the float16 region pass's (conv.c), ImagePreprocess */
        for (const cuda_op *o = cuda_ops_internal; o->op_type; o++)
            if (!strcmp(o->op_type, op_type)) return o;
        for (const cuda_op *o = cuda_ops_preprocess; o->op_type; o++)
            if (!strcmp(o->op_type, op_type)) return o;
        for (const cuda_op *o = cuda_ops_matmul_bias; o->op_type; o++) /* the graph passes' MatMul + bias */
            if (!strcmp(o->op_type, op_type)) return o;
        return NULL;
    }
    if (!default_domain(domain)) return NULL;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const cuda_op *o = families[f]; o->op_type; o++)
            if (!strcmp(o->op_type, op_type)) return o;
    return NULL;
}

/* ---- device flags (cuda_internal.h) ---- */

netrun_status cuda_flag_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    (void)workspace;
    cuda_flag *f = cuda_host->alloc(sizeof *f, 16);
    if (!f) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda %s: out of memory", node->op_type);
    f->bad = NULL;
    f->checked = 0;
    cudaError_t e = cudaMalloc((void **)&f->bad, sizeof(int));
    if (e == cudaSuccess) e = cudaMemsetAsync(f->bad, 0, sizeof(int), ctx->stream);
    if (e != cudaSuccess) {
        if (f->bad) cudaFree(f->bad);
        cuda_host->free(f);
        return cuda_fail(e, "index flag");
    }
    *state = f;
    return NETRUN_OK;
}

void cuda_flag_destroy(cuda_context *ctx, void *state) {
    (void)ctx;
    cuda_flag *f = state;
    if (!f) return;
    cudaFree(f->bad);
    cuda_host->free(f);
}

netrun_status cuda_flag_check(cuda_context *ctx, cuda_flag *f, const char *op, const char *msg) {
    int bad = 0;
    cudaError_t e = cudaMemcpyAsync(&bad, f->bad, sizeof(int), cudaMemcpyDeviceToHost, ctx->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->stream);
    if (e != cudaSuccess) return cuda_fail(e, op);
    if (bad) {
        cudaMemsetAsync(f->bad, 0, sizeof(int), ctx->stream);
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda %s: %s", op, msg);
    }
    return NETRUN_OK;
}

/* ---- probe and devices ---- */

#ifndef NR_CUDA_ARCHS
#define NR_CUDA_ARCHS ""
#endif

/* Does the binary hold code for compute capability cc (e.g. 86)? Machine code for sm_XY runs on the same
 * major with an equal or higher minor; PTX (compute_XY) is compiled by the driver for any cc >= XY. Unknown
 * lists ("all", "native") count as yes. */
static int arch_in_binary(int cc) {
    const char *p = NR_CUDA_ARCHS;
    if (!*p) return 1;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10);
        if (end == p) return 1; /* "all", "native"...: trust the build */
        int real = 1, virt = 1;
        if (!strncmp(end, "-real", 5)) virt = 0;
        else if (!strncmp(end, "-virtual", 8)) real = 0;
        if (real && a / 10 == cc / 10 && a % 10 <= cc % 10) return 1;
        if (virt && a <= cc) return 1;
        p = strchr(end, ','); /* CMake's list, joined by commas (backends/cuda/CMakeLists.txt) */
        if (!p) break;
        p++;
    }
    return 0;
}

static netrun_status cuda_probe(char *msg, size_t size) {
    /* Fail fast without a driver: the static runtime's own search for it costs ~170 ms per process. */
    void *drv_lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!drv_lib) {
        const char *why = dlerror();
        return cuda_host->error(NETRUN_ERR_BACKEND, "no NVIDIA driver: %s", why ? why : "libcuda.so.1 not found");
    }
    dlclose(drv_lib);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
        return cuda_host->error(NETRUN_ERR_BACKEND, "no usable CUDA driver or device: cudaGetDeviceCount: %s (%s)",
                                cudaGetErrorString(e), cudaGetErrorName(e));
    if (n <= 0) return cuda_host->error(NETRUN_ERR_BACKEND, "no CUDA device found");
    struct cudaDeviceProp p;
    char first[320] = "";
    if (cudaGetDeviceProperties(&p, 0) == cudaSuccess) {
        snprintf(first, sizeof first, "%s (sm_%d%d)", p.name, p.major, p.minor);
        if (!arch_in_binary(p.major * 10 + p.minor))
            return cuda_host->error(NETRUN_ERR_BACKEND,
                                    "this plugin has no code for sm_%d%d (%s); it was built for %s: rebuild with "
                                    "-DCMAKE_CUDA_ARCHITECTURES=%d%d",
                                    p.major, p.minor, p.name, NR_CUDA_ARCHS, p.major, p.minor);
    }
    /* a device is there: load cuDNN's front library (small; checks its version). cuBLAS waits for the first
     * Gemm/MatMul kernel. */
    netrun_status lst = cuda_load_cudnn();
    if (lst != NETRUN_OK) return lst;
    size_t v = cudnnGetVersion();
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    snprintf(msg, size, "%d device%s: %s; CUDA runtime %d.%d, driver %d.%d, cuDNN %zu.%zu.%zu, cuBLAS %d.%d (loaded on "
             "first use)", n, n == 1 ? "" : "s", first, rt / 1000, rt % 1000 / 10, drv / 1000, drv % 1000 / 10,
             v / 10000, v / 100 % 100, v % 100, CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR);
    return NETRUN_OK;
}

static int cuda_device_count(void) {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

static netrun_status cuda_device_describe(int device, char *buf, size_t size) {
    int n = cuda_device_count();
    if (device < 0 || device >= n)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda: device %d does not exist (%d found)", device, n);
    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, device);
    if (e != cudaSuccess) return cuda_fail(e, "cudaGetDeviceProperties");
    snprintf(buf, size, "%s, sm_%d%d, %d SMs, %.1f GiB", p.name, p.major, p.minor, p.multiProcessorCount,
             (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    return NETRUN_OK;
}

static int cuda_supports(const netrun_backend_config *config, const netrun_node_desc *node, char *reason,
                         size_t size) {
    const cuda_op *op = find_op(node->domain, node->op_type);
    if (!op)
        return cuda_refuse(reason, size, "no CUDA kernel for %s%s%s",
                           node->domain && *node->domain ? node->domain : "",
                           node->domain && *node->domain ? "." : "", node->op_type);
    for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i].rank > NETRUN_MAX_RANK) return cuda_refuse(reason, size, "rank above %d", NETRUN_MAX_RANK);
    if (op->supports) return op->supports(node, reason, size);
    netrun_dtype t = cuda_main_dtype(node);
    if (!(op->dtypes & NETRUN_DTYPE_BIT(t)))
        return cuda_refuse(reason, size, "dtype %s not supported by the CUDA %s kernel", cuda_dtype_name(t),
                           node->op_type);
    return 1;
}

/* ---- context ---- */

static const char *get_opt(const netrun_backend_config *c, const char *key) {
    if (c->struct_size < offsetof(netrun_backend_config, opaque) + sizeof c->opaque || !c->get_option) return NULL;
    return c->get_option(c->opaque, key);
}

/* Backend options: cuda.algo_search (heuristic|timed), cuda.pinned, cuda.fp16_regions, cuda.fp16_lt, cuda.fp16_dw
 * (0|1), cuda.int8_igemm (0|1|always), cuda.attention_workspace_mb (MiB), cuda.fail_alloc_after (test hook). */
static netrun_status read_options(cuda_context *ctx, const netrun_backend_config *c) {
    const char *v = get_opt(c, "cuda.algo_search");
    ctx->algo_search = CUDA_ALGO_HEURISTIC;
    if (v && !strcmp(v, "timed")) ctx->algo_search = CUDA_ALGO_TIMED;
    else if (v && strcmp(v, "heuristic"))
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda.algo_search: '%s' is not heuristic or timed", v);
    v = get_opt(c, "cuda.pinned");
    ctx->pinned = !v || strcmp(v, "0") != 0;
    v = get_opt(c, "cuda.flash_attention");
    ctx->flash_attention = !v || strcmp(v, "0") != 0;
    ctx->fail_alloc_after = -1;
    v = get_opt(c, "cuda.fail_alloc_after");
    if (v) {
        char *end;
        long n = strtol(v, &end, 10);
        if (end == v || *end || n < 0)
            return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda.fail_alloc_after: '%s' is not a count", v);
        ctx->fail_alloc_after = n;
    }
    ctx->attn_ws_cap = (size_t)256 << 20;
    v = get_opt(c, "cuda.attention_workspace_mb");
    if (v) {
        char *end;
        long n = strtol(v, &end, 10);
        if (end == v || *end || n < 0 || n > (1L << 20))
            return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT,
                                    "cuda.attention_workspace_mb: '%s' is not a size in MiB (0 to 1048576)", v);
        ctx->attn_ws_cap = (size_t)n << 20;
    }
    return NETRUN_OK;
}

static netrun_status cuda_context_create(const netrun_backend_config *config, netrun_backend_context **out) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) return cuda_fail(e, "cudaGetDeviceCount");
    if (config->device < 0 || config->device >= n)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda: device %d does not exist (%d found)",
                                config->device, n);
    netrun_status st = NETRUN_OK;
    cuda_context *ctx = cuda_host->alloc(sizeof *ctx, 64);
    if (!ctx) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda: out of memory creating a context");
    memset(ctx, 0, sizeof *ctx);
    ctx->config = *config;
    ctx->device = config->device;
    st = read_options(ctx, config);
    if (st != NETRUN_OK) {
        cuda_host->free(ctx);
        return st;
    }
    struct cudaDeviceProp p;
    if ((e = cudaSetDevice(ctx->device)) != cudaSuccess) st = cuda_fail(e, "cudaSetDevice");
    else if ((e = cudaGetDeviceProperties(&p, ctx->device)) != cudaSuccess) st = cuda_fail(e, "cudaGetDeviceProperties");
    else if ((e = cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking)) != cudaSuccess)
        st = cuda_fail(e, "cudaStreamCreate");
    if (st == NETRUN_OK) {
        ctx->own_stream = ctx->stream;
        ctx->total_memory = p.totalGlobalMem;
        ctx->sm_count = p.multiProcessorCount;
        /* cuBLAS/cuDNN handles come with the first kernel that needs them (ensure_handles): creating them costs
         * most of a context's start, and most models or conformance tests need one or neither */
    }
    if (st != NETRUN_OK) {
        if (ctx->cudnn) cudnnDestroy(ctx->cudnn);
        if (ctx->cublas) cublasDestroy(ctx->cublas);
        if (ctx->stream) cudaStreamDestroy(ctx->stream);
        cuda_host->free(ctx);
        return st;
    }
    *out = (netrun_backend_context *)ctx;
    return NETRUN_OK;
}

static void cuda_context_destroy(netrun_backend_context *c) {
    cuda_context *ctx = (cuda_context *)c;
    if (!ctx) return;
    cudaSetDevice(ctx->device);
    cudaStreamSynchronize(ctx->stream);
    if (ctx->copy_stream) {
        cudaStreamSynchronize(ctx->copy_stream);
        cudaStreamDestroy(ctx->copy_stream);
        cudaEventDestroy(ctx->fork_ev);
        cudaEventDestroy(ctx->lane_ev[0]);
        cudaEventDestroy(ctx->lane_ev[1]);
    }
    if (ctx->stage) cudaFreeHost(ctx->stage);
    if (ctx->cudnn) cudnnDestroy(ctx->cudnn);
    if (ctx->cublas) cublasDestroy(ctx->cublas);
    if (ctx->switch_ev) cudaEventDestroy(ctx->switch_ev);
    if (ctx->own_stream) cudaStreamDestroy(ctx->own_stream); /* never the caller's */
    cuda_host->free(ctx);
}

/* ---- memory: a buffer handle is a small host record of the cudaMalloc pointer and its size (for bounds
 * checks and the device memory budget) ---- */

typedef struct cuda_buffer {
    void *ptr;
    size_t bytes;
    int wrapped; /* the caller's memory (buffer_wrap): never freed here, not counted in `allocated` */
} cuda_buffer;

void *cuda_workspace_address(void *workspace) {
    if (!workspace) return NULL;
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, workspace) == cudaSuccess && a.type == cudaMemoryTypeDevice) return workspace;
    cudaGetLastError(); /* host memory is not an error to keep */
    return ((cuda_buffer *)workspace)->ptr;
}

cudaError_t cuda_scratch_alloc(cuda_context *ctx, void **p, size_t bytes) {
    if (ctx->capturing) return cudaErrorStreamCaptureUnsupported;
    cudaError_t e = cudaMallocAsync(p, bytes ? bytes : 1, ctx->stream);
    if (e == cudaErrorNotSupported) { /* no memory pools on this device */
        cudaGetLastError();
        e = cudaMalloc(p, bytes ? bytes : 1);
    }
    return e;
}

void cuda_scratch_free(cuda_context *ctx, void *p) {
    if (!p) return;
    if (cudaFreeAsync(p, ctx->stream) != cudaSuccess) { /* memory from cudaMalloc (no pools), or an error */
        cudaGetLastError();
        cudaStreamSynchronize(ctx->stream);
        cudaFree(p);
    }
}

netrun_status cuda_scratch_parts(cuda_context *ctx, void **buf, size_t *cap, const size_t *part, int n, size_t *off,
                                 double slack, const char *what) {
    size_t total = 0;
    for (int i = 0; i < n; i++) off[i] = total, total += (part[i] + 255) & ~(size_t)255;
    if (*buf && total <= *cap) return NETRUN_OK;
    cuda_scratch_free(ctx, *buf); /* stream-ordered: after the kernels that used it */
    *buf = NULL;
    *cap = 0;
    size_t want = total + (size_t)((double)total * slack);
    if (cuda_scratch_alloc(ctx, buf, want) != cudaSuccess) {
        *buf = NULL;
        cudaGetLastError();
        return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda %s: no device memory for %zu bytes of scratch", what,
                                total);
    }
    *cap = want;
    return NETRUN_OK;
}

static netrun_status cuda_buffer_alloc(netrun_backend_context *c, size_t bytes, void **buffer) {
    cuda_context *ctx = (cuda_context *)c;
    size_t budget = ctx->config.device_memory_budget;
    if (budget && (bytes > budget || ctx->allocated > budget - bytes))
        return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY,
                                "cuda: device memory budget exceeded: %zu bytes in use, %zu more asked, budget %zu",
                                ctx->allocated, bytes, budget);
    if (ctx->capturing)
        return cuda_host->error(NETRUN_ERR_STATE, "cuda: buffer allocation during graph capture");
    long call = ctx->n_allocs++;
    cuda_buffer *b = cuda_host->alloc(sizeof *b, 16);
    if (!b) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda: out of host memory");
    b->bytes = bytes ? bytes : 1;
    b->wrapped = 0;
    cudaSetDevice(ctx->device);
    /* test hook: one injected failure, as cudaMalloc reports it */
    cudaError_t e = ctx->fail_alloc_after >= 0 && call == ctx->fail_alloc_after ? cudaErrorMemoryAllocation
                                                                                 : cudaMalloc(&b->ptr, b->bytes);
    if (e != cudaSuccess) {
        cuda_host->free(b);
        cudaGetLastError(); /* clear the error so later launches do not report it */
        size_t free_b = 0, total_b = 0;
        if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
            cudaGetLastError();
            free_b = 0;
        }
        return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY,
                                "cuda: cannot allocate %zu bytes of device memory (%s): this session holds %zu bytes, "
                                "%zu bytes free on the device",
                                bytes, cudaGetErrorString(e), ctx->allocated, free_b);
    }
    ctx->allocated += b->bytes;
    if (ctx->allocated > ctx->peak) ctx->peak = ctx->allocated;
    *buffer = b;
    return NETRUN_OK;
}

static void cuda_buffer_free(netrun_backend_context *c, void *buffer) {
    cuda_context *ctx = (cuda_context *)c;
    cuda_buffer *b = buffer;
    if (!b) return;
    if (b->wrapped) {
        cuda_host->free(b);
        return;
    }
    cudaFree(b->ptr);
    ctx->allocated -= b->bytes < ctx->allocated ? b->bytes : ctx->allocated;
    cuda_host->free(b);
}

static void *cuda_buffer_address(netrun_backend_context *c, void *buffer) {
    return buffer ? ((cuda_buffer *)buffer)->ptr : NULL;
}

/* Pinned staging for host<->device copies: copies of up to CUDA_STAGE_MAX bytes take consecutive slices of one
 * cudaHostAlloc buffer; a slice stays in use until the stream has drained (synchronize, or a full buffer, which
 * waits). *out stays NULL (pageable path) for large copies, with cuda.pinned=0, or when pinned memory fails. */
#define CUDA_STAGE_MAX ((size_t)64 << 20)
static netrun_status stage_take(cuda_context *ctx, size_t bytes, void **out) {
    *out = NULL;
    if (!ctx->pinned || ctx->capturing || bytes > CUDA_STAGE_MAX) return NETRUN_OK;
    size_t need = (bytes + 255) & ~(size_t)255;
    if (ctx->stage && ctx->stage_used + need <= ctx->stage_cap) {
        *out = (char *)ctx->stage + ctx->stage_used;
        ctx->stage_used += need;
        return NETRUN_OK;
    }
    cudaError_t e = cudaStreamSynchronize(ctx->stream); /* earlier slices may still be read by the DMA */
    if (e != cudaSuccess) return cuda_fail(e, "stream synchronize (a kernel failed)");
    ctx->stage_used = 0;
    if (!ctx->stage || need > ctx->stage_cap) {
        size_t cap = ctx->stage_cap ? ctx->stage_cap : (size_t)1 << 20;
        while (cap < need) cap *= 2;
        if (ctx->stage) cudaFreeHost(ctx->stage);
        ctx->stage = NULL;
        ctx->stage_cap = 0;
        if (cudaHostAlloc(&ctx->stage, cap, cudaHostAllocDefault) != cudaSuccess) {
            cudaGetLastError();
            ctx->stage = NULL;
            ctx->pinned = 0; /* no pinned memory: pageable copies from now on */
            return NETRUN_OK;
        }
        ctx->stage_cap = cap;
    }
    *out = ctx->stage;
    ctx->stage_used = need;
    return NETRUN_OK;
}

/* Host memory the caller page-locked (cudaHostAlloc, cudaHostRegister, torch's pin_memory) is copied by DMA
 * straight from / into place: no staging memcpy, no 64 MiB limit (ResNet-50 batch 256's 147 MiB float32
 * input took 17.5 ms from pageable memory on an H200). */
static int host_pinned(const void *p) {
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError(); /* older runtimes answer an error for plain pageable memory */
        return 0;
    }
    return a.type == cudaMemoryTypeHost;
}

static netrun_status cuda_copy_from_host(netrun_backend_context *c, void *buffer, size_t offset, const void *src,
                                         size_t bytes) {
    cuda_context *ctx = (cuda_context *)c;
    cuda_buffer *b = buffer;
    if (!bytes) return NETRUN_OK;
    if (!b || offset > b->bytes || bytes > b->bytes - offset)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda: copy of %zu bytes at %zu outside a buffer", bytes, offset);
    void *stage = NULL;
    /* a page-locked source is read by the DMA in place: only the caller's own buffers can be page-locked (the
     * host arena is not), and the caller's input stays unchanged until the run returns (after a synchronize) */
    netrun_status st = host_pinned(src) ? NETRUN_OK : stage_take(ctx, bytes, &stage);
    if (st != NETRUN_OK) return st;
    if (stage) { /* pinned: a true asynchronous DMA; the caller may reuse src at once */
        memcpy(stage, src, bytes);
        src = stage;
    }
    /* (pageable source: cudaMemcpyAsync returns once the source has been staged) */
    cudaError_t e = cudaMemcpyAsync((char *)b->ptr + offset, src, bytes, cudaMemcpyHostToDevice, ctx->stream);
    return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, "copy to the device");
}

/* Streamed weights, overlapped (ABI 1.6): the copy runs on copy_stream after everything queued on the stream
 * so far (fork_ev) and signals the lane's event, which prefetch_wait makes the stream wait for. Captured into
 * graphs as a fork and a join. A pageable source is copied in the stream's order instead. */
static netrun_status cuda_prefetch_from_host(netrun_backend_context *c, void *buffer, size_t offset, const void *src,
                                             size_t bytes, int lane) {
    cuda_context *ctx = (cuda_context *)c;
    cuda_buffer *b = buffer;
    if (lane < 0 || lane > 1) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda: prefetch lane %d (0 or 1)", lane);
    if (!bytes) return NETRUN_OK;
    if (!b || offset > b->bytes || bytes > b->bytes - offset)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda: copy of %zu bytes at %zu outside a buffer", bytes, offset);
    if (!host_pinned(src)) return cuda_copy_from_host(c, buffer, offset, src, bytes);
    cudaError_t e = cudaSuccess;
    if (!ctx->copy_stream) {
        e = cudaStreamCreateWithFlags(&ctx->copy_stream, cudaStreamNonBlocking);
        if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ctx->fork_ev, cudaEventDisableTiming);
        if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ctx->lane_ev[0], cudaEventDisableTiming);
        if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ctx->lane_ev[1], cudaEventDisableTiming);
        if (e != cudaSuccess) { /* never half made: the stream's order then */
            if (ctx->copy_stream) cudaStreamDestroy(ctx->copy_stream);
            ctx->copy_stream = NULL;
            cudaGetLastError();
            return cuda_copy_from_host(c, buffer, offset, src, bytes);
        }
    }
    e = cudaEventRecord(ctx->fork_ev, ctx->stream);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(ctx->copy_stream, ctx->fork_ev, 0);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync((char *)b->ptr + offset, src, bytes, cudaMemcpyHostToDevice, ctx->copy_stream);
    if (e == cudaSuccess) e = cudaEventRecord(ctx->lane_ev[lane], ctx->copy_stream);
    return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, "prefetch to the device");
}

static netrun_status cuda_prefetch_wait(netrun_backend_context *c, int lane) {
    cuda_context *ctx = (cuda_context *)c;
    if (lane < 0 || lane > 1) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda: prefetch lane %d (0 or 1)", lane);
    if (!ctx->copy_stream) return NETRUN_OK; /* nothing was forked: the copies ran in the stream's order */
    cudaError_t e = cudaStreamWaitEvent(ctx->stream, ctx->lane_ev[lane], 0);
    return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, "waiting for a prefetch");
}

static netrun_status cuda_copy_to_host(netrun_backend_context *c, void *dst, const void *buffer, size_t offset,
                                       size_t bytes) {
    cuda_context *ctx = (cuda_context *)c;
    const cuda_buffer *b = buffer;
    if (!bytes) return NETRUN_OK;
    if (!b || offset > b->bytes || bytes > b->bytes - offset)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda: copy of %zu bytes at %zu outside a buffer", bytes, offset);
    void *stage = NULL;
    netrun_status st = host_pinned(dst) ? NETRUN_OK : stage_take(ctx, bytes, &stage);
    if (st != NETRUN_OK) return st;
    cudaError_t e = cudaMemcpyAsync(stage ? stage : dst, (const char *)b->ptr + offset, bytes, cudaMemcpyDeviceToHost,
                                    ctx->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->stream);
    if (e != cudaSuccess) return cuda_fail(e, "copy to the host");
    if (stage) {
        memcpy(dst, stage, bytes);
        ctx->stage_used = 0; /* the stream is idle: all of the staging buffer is free again */
    }
    return NETRUN_OK;
}

static netrun_status cuda_host_alloc(netrun_backend_context *c, size_t bytes, void **out) {
    cuda_context *ctx = (cuda_context *)c;
    *out = NULL;
    if (!ctx->pinned) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda: page-locked memory is off (cuda.pinned=0)");
    cudaSetDevice(ctx->device);
    cudaError_t e = cudaHostAlloc(out, bytes ? bytes : 1, cudaHostAllocDefault);
    if (e != cudaSuccess) {
        *out = NULL;
        return cuda_fail(e, "cudaHostAlloc of page-locked host memory");
    }
    return NETRUN_OK;
}

static void cuda_host_free(netrun_backend_context *c, void *p) {
    (void)c;
    if (p) cudaFreeHost(p);
}

static netrun_status cuda_synchronize(netrun_backend_context *c) {
    cuda_context *ctx = (cuda_context *)c;
    cudaError_t e = cudaStreamSynchronize(ctx->stream);
    if (e == cudaSuccess && ctx->copy_stream) e = cudaStreamSynchronize(ctx->copy_stream); /* after a failed run */
    if (e == cudaSuccess) ctx->stage_used = 0;
    return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, "stream synchronize (a kernel failed)");
}

/* ---- the caller's device memory and stream (ABI 1.11) ---- */

/* cuMemGetAddressRange through the runtime's driver entry points: the plugin does not link libcuda. NULL when the
 * driver does not give it (the size is then not checked). */
typedef int (*cu_mem_range_fn)(unsigned long long *base, size_t *size, unsigned long long ptr);
static cu_mem_range_fn mem_range_fn(void) {
    static cu_mem_range_fn fn;
    static int looked;
    if (!looked) { /* a benign race: every thread finds the same pointer */
        void *p = NULL;
        enum cudaDriverEntryPointQueryResult q;
#if CUDART_VERSION >= 12050
        cudaError_t e = cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &p, 12000, cudaEnableDefault, &q);
#else
        cudaError_t e = cudaGetDriverEntryPoint("cuMemGetAddressRange", &p, cudaEnableDefault, &q);
#endif
        if (e != cudaSuccess || q != cudaDriverEntryPointSuccess) {
            cudaGetLastError();
            p = NULL;
        }
        fn = (cu_mem_range_fn)p;
        looked = 1;
    }
    return fn;
}

static netrun_status cuda_memory_check(const void *ptr, size_t bytes, int device) {
    struct cudaPointerAttributes a;
    memset(&a, 0, sizeof a);
    cudaError_t e = cudaPointerGetAttributes(&a, ptr);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%p is not CUDA memory (%s)", ptr, cudaGetErrorString(e));
    }
    if (a.type == cudaMemoryTypeUnregistered)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%p is a host pointer, not CUDA device memory", ptr);
    if (a.type == cudaMemoryTypeHost)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%p is page-locked host memory, not CUDA device memory",
                                ptr);
    if (a.type == cudaMemoryTypeDevice && a.device != device)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%p is memory of CUDA device %d, the session runs on "
                                "device %d", ptr, a.device, device);
    cu_mem_range_fn range = mem_range_fn();
    unsigned long long base = 0;
    size_t size = 0;
    if (range && range(&base, &size, (unsigned long long)(uintptr_t)ptr) == 0) {
        size_t left = size - (size_t)((unsigned long long)(uintptr_t)ptr - base);
        if (bytes > left)
            return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "the CUDA allocation holds %zu bytes from %p, %zu "
                                    "needed", left, ptr, bytes);
    }
    return NETRUN_OK;
}

static netrun_status cuda_buffer_wrap(netrun_backend_context *c, void *ptr, size_t bytes, void **buffer) {
    (void)c;
    cuda_buffer *b = cuda_host->alloc(sizeof *b, 16);
    if (!b) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda: out of host memory");
    b->ptr = ptr;
    b->bytes = bytes;
    b->wrapped = 1;
    *buffer = b;
    return NETRUN_OK;
}

/* The new stream waits for what was queued on the old one (an event, no host wait); cuDNN and cuBLAS follow. */
static netrun_status cuda_set_stream(netrun_backend_context *c, void *stream) {
    cuda_context *ctx = (cuda_context *)c;
    cudaStream_t next = stream ? (cudaStream_t)stream : ctx->own_stream;
    if (next == ctx->stream) return NETRUN_OK;
    if (ctx->capturing) return cuda_host->error(NETRUN_ERR_STATE, "cuda: stream change during graph capture");
    cudaSetDevice(ctx->device);
    cudaError_t e = ctx->switch_ev ? cudaSuccess : cudaEventCreateWithFlags(&ctx->switch_ev, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventRecord(ctx->switch_ev, ctx->stream);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(next, ctx->switch_ev, 0);
    if (e != cudaSuccess) return cuda_fail(e, "switching to the caller's stream");
    ctx->stream = next;
    if (ctx->cudnn) {
        cudnnStatus_t ds = cudnnSetStream(ctx->cudnn, next);
        if (ds != CUDNN_STATUS_SUCCESS) return cudnn_fail(ds, "cudnnSetStream");
    }
    if (ctx->cublas) {
        cublasStatus_t bs = cublasSetStream(ctx->cublas, next);
        if (bs != CUBLAS_STATUS_SUCCESS) return cublas_fail(bs, "cublasSetStream");
    }
    return NETRUN_OK;
}

static netrun_status cuda_copy_device(netrun_backend_context *c, void *dst, size_t dst_offset, const void *src,
                                      size_t src_offset, size_t bytes) {
    cuda_context *ctx = (cuda_context *)c;
    cuda_buffer *d = dst;
    const cuda_buffer *sb = src;
    if (!bytes) return NETRUN_OK;
    if (!d || !sb || dst_offset > d->bytes || bytes > d->bytes - dst_offset || src_offset > sb->bytes ||
        bytes > sb->bytes - src_offset)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda: device copy of %zu bytes outside a buffer", bytes);
    cudaError_t e = cudaMemcpyAsync((char *)d->ptr + dst_offset, (const char *)sb->ptr + src_offset, bytes,
                                    cudaMemcpyDeviceToDevice, ctx->stream);
    return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, "device to device copy");
}

/* ---- CUDA Graphs: the runtime captures a segment of kernel_run calls on the context's stream ---- */

static netrun_status cuda_graph_capture_begin(netrun_backend_context *c) {
    cuda_context *ctx = (cuda_context *)c;
    cudaSetDevice(ctx->device);
    /* thread-local mode: other threads' sessions may allocate or synchronize meanwhile */
    cudaError_t e = cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) { /* e.g. the caller's stream is the legacy default stream: the segment runs eagerly */
        cudaGetLastError(); /* not sticky: clear it, or the next launch check would report it */
        return cuda_fail(e, "cudaStreamBeginCapture");
    }
    ctx->capturing = 1;
    return NETRUN_OK;
}

static netrun_status cuda_graph_capture_end(netrun_backend_context *c, void **graph) {
    cuda_context *ctx = (cuda_context *)c;
    *graph = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    ctx->capturing = 0;
    cudaError_t e = cudaStreamEndCapture(ctx->stream, &g);
    if (e == cudaSuccess) e = cudaGraphInstantiate(&x, g, 0);
    if (g) cudaGraphDestroy(g);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* a capture error is not sticky: clear it for the eager rerun */
        return cuda_fail(e, "CUDA graph capture");
    }
    *graph = x;
    return NETRUN_OK;
}

static netrun_status cuda_graph_launch(netrun_backend_context *c, void *graph) {
    cuda_context *ctx = (cuda_context *)c;
    cudaError_t e = cudaGraphLaunch((cudaGraphExec_t)graph, ctx->stream);
    return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, "cudaGraphLaunch");
}

static void cuda_graph_destroy(netrun_backend_context *c, void *graph) {
    (void)c;
    if (graph) cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

static netrun_status cuda_memory_info(netrun_backend_context *c, size_t *in_use, size_t *peak, size_t *free_bytes) {
    cuda_context *ctx = (cuda_context *)c;
    size_t f = 0, t = 0;
    cudaSetDevice(ctx->device);
    if (free_bytes && cudaMemGetInfo(&f, &t) != cudaSuccess) {
        cudaGetLastError();
        f = 0;
    }
    if (in_use) *in_use = ctx->allocated;
    if (peak) *peak = ctx->peak;
    if (free_bytes) *free_bytes = f;
    return NETRUN_OK;
}

/* ---- kernels ---- */

static int op_in(const cuda_op *op, const cuda_op *table) {
    for (const cuda_op *o = table; o->op_type; o++)
        if (o == op) return 1;
    return 0;
}

netrun_status cuda_cublas_handle(cuda_context *ctx) {
    if (ctx->cublas) return NETRUN_OK;
    netrun_status st = cuda_load_cublas();
    if (st != NETRUN_OK) return st;
    cublasStatus_t bs = cublasCreate(&ctx->cublas);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        ctx->cublas = NULL;
        return cublas_fail(bs, "cublasCreate");
    }
    if ((bs = cublasSetStream(ctx->cublas, ctx->stream)) != CUBLAS_STATUS_SUCCESS) return cublas_fail(bs, "cublasSetStream");
    return NETRUN_OK;
}

/* The library handles an op family uses, created (and the library loaded) on first need. */
static netrun_status ensure_handles(cuda_context *ctx, const cuda_op *op) {
    netrun_status st;
    if (!ctx->cudnn && op_in(op, cuda_ops_conv)) {
        if ((st = cuda_load_cudnn()) != NETRUN_OK) return st;
        cudnnStatus_t ds = cudnnCreate(&ctx->cudnn);
        if (ds != CUDNN_STATUS_SUCCESS) {
            ctx->cudnn = NULL;
            return cudnn_fail(ds, "cudnnCreate");
        }
        if ((ds = cudnnSetStream(ctx->cudnn, ctx->stream)) != CUDNN_STATUS_SUCCESS) return cudnn_fail(ds, "cudnnSetStream");
    }
    if (!ctx->cublas && (op_in(op, cuda_ops_gemm) || op_in(op, cuda_ops_matmul_bias)) &&
        (st = cuda_cublas_handle(ctx)) != NETRUN_OK)
        return st;
    return NETRUN_OK;
}

static netrun_status cuda_kernel_create(netrun_backend_context *c, const netrun_node_desc *node,
                                        netrun_kernel **out, size_t *workspace) {
    cuda_context *ctx = (cuda_context *)c;
    const cuda_op *op = find_op(node->domain, node->op_type);
    if (!op) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "no CUDA kernel for %s", node->op_type);
    cuda_kernel *k = cuda_host->alloc(sizeof *k, 16);
    if (!k) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda: out of memory");
    k->op = op;
    k->state = NULL;
    *workspace = 0;
    cudaSetDevice(ctx->device);
    netrun_status hst = ensure_handles(ctx, op);
    if (hst != NETRUN_OK) {
        cuda_host->free(k);
        return hst;
    }
    if (op->create) {
        netrun_status st = op->create(ctx, node, &k->state, workspace);
        if (st != NETRUN_OK) {
            cuda_host->free(k);
            return st;
        }
    }
    *out = (netrun_kernel *)k;
    return NETRUN_OK;
}

static netrun_status cuda_kernel_run(netrun_backend_context *c, netrun_kernel *kernel,
                                     const netrun_kernel_args *args) {
    cuda_kernel *k = (cuda_kernel *)kernel;
    cuda_context *ctx = (cuda_context *)c;
    /* Shape/Size copy from a host temporary: not replayable (the Gathers refuse in their run functions, unless
     * their indices were checked at creation) */
    if (ctx->capturing && (!strcmp(k->op->op_type, "Shape") || !strcmp(k->op->op_type, "Size")))
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda %s: not capturable in a CUDA graph", k->op->op_type);
    for (int o = 0; o < args->n_outputs; o++)
        if (args->outputs[o].rank >= 0 && !args->outputs[o].data && cuda_count(&args->outputs[o]) > 0)
            return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda %s: output %d has no device memory", k->op->op_type, o);
    return k->op->run((cuda_context *)c, k->state, args);
}

/* The algorithm / precision a kernel chose (conv: cuDNN algorithm, fp16 decision and its timings; gemm), for
 * profiles, netrun_node_info.kernel and `netrun -v`. */
static netrun_status cuda_kernel_describe(netrun_backend_context *c, netrun_kernel *kernel, char *buf, size_t size) {
    (void)c;
    if (!buf || !size) return NETRUN_OK;
    buf[0] = '\0';
    cuda_kernel *k = (cuda_kernel *)kernel;
    if (k && k->op) cuda_op_describe(k->op, k->state, buf, size);
    return NETRUN_OK;
}

static void cuda_kernel_destroy(netrun_backend_context *c, netrun_kernel *kernel) {
    cuda_kernel *k = (cuda_kernel *)kernel;
    if (!k) return;
    if (k->op->destroy && k->state) k->op->destroy((cuda_context *)c, k->state);
    cuda_host->free(k);
}

#define MAX_OPS 512
static netrun_op_support op_table[MAX_OPS];

static size_t build_op_table(void) {
    size_t n = 0;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const cuda_op *o = families[f]; o->op_type && n < MAX_OPS; o++)
            op_table[n++] = (netrun_op_support){"", o->op_type, o->dtypes, o->constraints ? o->constraints : ""};
    for (const cuda_op *o = cuda_ops_preprocess; o->op_type && n < MAX_OPS; o++) /* the com.netrun op users may name */
        op_table[n++] = (netrun_op_support){"com.netrun", o->op_type, o->dtypes, o->constraints ? o->constraints : ""};
    for (const cuda_op *o = cuda_ops_matmul_bias; o->op_type && n < MAX_OPS; o++) /* and the graph passes' MatMulBias */
        op_table[n++] = (netrun_op_support){"com.netrun", o->op_type, o->dtypes, o->constraints ? o->constraints : ""};
    return n;
}

int cuda_may_alias(const netrun_backend_config *config, const netrun_node_desc *node, int output, int input); /* inplace.c */

/* The settings this backend reads (ABI 1.8): any other cuda.* key (but cuda.graphs, the runtime's) is refused.
 * cuda.fp16_regions is named by the float16 region below and read by the runtime when it plans the region. */
static const netrun_option_spec cuda_options[] = {
    {"cuda.algo_search", NETRUN_OPTION_ENUM, "heuristic|timed", "cuDNN algorithm choice (default heuristic)"},
    {"cuda.pinned", NETRUN_OPTION_BOOL, NULL, "page-locked staging and inputs (default 1)"},
    {"cuda.fp16_regions", NETRUN_OPTION_BOOL, NULL, "float16 NHWC regions under --precision fp16 (default 1)"},
    {"cuda.fp16_plain", NETRUN_OPTION_BOOL, NULL,
     "plain float16 regions (transformers: GEMMs, attention, norms) under --precision fp16 (default 1)"},
    {"cuda.fp16_paths", NETRUN_OPTION_STRING, NULL, "float16 conv paths that may be timed (default nchw,nhwc)"},
    {"cuda.fp16_lt", NETRUN_OPTION_BOOL, NULL, "cuBLASLt for float16 1x1 convs (default 1)"},
    {"cuda.fp16_dw", NETRUN_OPTION_BOOL, NULL, "own float16 NHWC depthwise kernel (default 1)"},
    {"cuda.int8_igemm", NETRUN_OPTION_ENUM, "0|1|always",
     "QLinearConv between channels-last int8 tensors (C % 32 == 0) by the own implicit-GEMM kernel, patches read in "
     "place: 1 (default) where its 128 x 128 tiles are at least twice the SM count, always, or 0 (patches gathered, "
     "then cuBLASLt)"},
    {"cuda.attention_workspace_mb", NETRUN_OPTION_INT, NULL,
     "cap on Attention's score buffer in MiB (default 256; 0 = simple kernel only)"},
    {"cuda.flash_attention", NETRUN_OPTION_BOOL, NULL,
     "fused float16 Attention kernel on tensor cores (default 1; 0 = the cuBLAS path)"},
    {"cuda.fail_alloc_after", NETRUN_OPTION_INT, NULL, "test hook: fail device allocations after N"},
    {NULL, 0, NULL, NULL},
};

/* The precision and layout this backend keeps between its layers (ABI 1.10): under --precision fp16, float16
 * channels-last regions from the Convs cuDNN runs NHWC on tensor cores (conv.c answers supports() with
 * src_nhwc/dst_nhwc), across these ops; each elementwise node is asked through supports() with float16 descs.
 * The border conversions (ReorderNHWC) and the NHWC forms of GlobalAveragePool, Mul by channel and Concat are
 * this backend's kernels (conv.c, pool.cu, precision.cu). docs/cuda.md. */
static const char *const fp16_region_ops[] = {"Relu", "Sigmoid", "Tanh", "Swish", "LeakyRelu", "HardSwish",
                                              "HardSigmoid", "Elu", "Softplus", "Clip", "Add", "Sub", "Mul", "Max",
                                              "Min", "Concat", "MaxPool", "AveragePool", "GlobalAveragePool", NULL};
/* Under --precision fp16, also plain float16 values between the GEMMs of a transformer and the ops around them
 * (runtime/opt_half.c plans them; every kernel below takes float16 and computes in float). Nodes the transformer
 * pass made (Attention, LayerNormalization, RMSNormalization, Gelu) come without params: those ops take float16
 * whole. "MatMul" also lets in the passes' MatMulBias (com.netrun; gemm.c), asked through supports() without
 * params. */
static const char *const fp16_plain_ops[] = {"MatMul", "Gemm", "Attention", "Add", "Sub", "Mul", "Div",
                                             "LayerNormalization", "Gelu", "Softmax", "Reshape", "Transpose",
                                             "Squeeze", "Unsqueeze", "Flatten", "Relu", "Tanh", "Erf", "Sigmoid",
                                             "Concat", "Slice", "Split", "Gather", "Where", "Expand", "Neg", "Conv",
                                             "RMSNormalization", NULL};
static int fp16_plain_keeps(const netrun_backend_config *config, const netrun_node_desc *node) {
    if (!node->params && (!strcmp(node->op_type, "Attention") || !strcmp(node->op_type, "LayerNormalization") ||
                          !strcmp(node->op_type, "RMSNormalization") || !strcmp(node->op_type, "Gelu")))
        return 1; /* made by the transformer pass: its params exist once the copy is loaded */
    char why[256]; /* everything else as placement asks (MatMul, Transpose... have no params at all) */
    return cuda_supports(config, node, why, sizeof why);
}
static const netrun_region_spec cuda_regions[] = {
    {.kind = NETRUN_REGION_FP16_NHWC, .conditions = NETRUN_REGION_IF_FP16, .option = "cuda.fp16_regions",
     .ops = fp16_region_ops},
    {.kind = NETRUN_REGION_FP16, .conditions = NETRUN_REGION_IF_FP16, .option = "cuda.fp16_plain",
     .ops = fp16_plain_ops, .keeps = fp16_plain_keeps},
    {.kind = NETRUN_REGION_END},
};

static netrun_backend_api api = {
    .abi_version = NETRUN_ABI_VERSION,
    .struct_size = sizeof(netrun_backend_api),
    .name = "cuda",
    .description = "NVIDIA GPU: cuDNN convolutions, cuBLAS GEMM, netrun CUDA kernels",
    .flags = NETRUN_BACKEND_GPU,
    .probe = cuda_probe,
    .device_count = cuda_device_count,
    .device_describe = cuda_device_describe,
    .supports = cuda_supports,
    .context_create = cuda_context_create,
    .context_destroy = cuda_context_destroy,
    .buffer_alloc = cuda_buffer_alloc,
    .buffer_free = cuda_buffer_free,
    .buffer_address = cuda_buffer_address,
    .copy_from_host = cuda_copy_from_host,
    .copy_to_host = cuda_copy_to_host,
    .kernel_create = cuda_kernel_create,
    .kernel_run = cuda_kernel_run,
    .kernel_destroy = cuda_kernel_destroy,
    .kernel_describe = cuda_kernel_describe,
    .synchronize = cuda_synchronize,
    .graph_capture_begin = cuda_graph_capture_begin,
    .graph_capture_end = cuda_graph_capture_end,
    .graph_launch = cuda_graph_launch,
    .graph_destroy = cuda_graph_destroy,
    .memory_info = cuda_memory_info,
    .may_alias = cuda_may_alias,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .prefetch_from_host = cuda_prefetch_from_host,
    .prefetch_wait = cuda_prefetch_wait,
    .options = cuda_options,
    .uses = NETRUN_USES_DECLARED | NETRUN_USES_PRECISION | NETRUN_USES_WORKSPACE | NETRUN_USES_DEVICE |
            NETRUN_USES_DEVICE_MEMORY,
    .regions = cuda_regions,
    .memory_type = NETRUN_MEMORY_CUDA,
    .memory_check = cuda_memory_check,
    .buffer_wrap = cuda_buffer_wrap,
    .set_stream = cuda_set_stream,
    .copy_device = cuda_copy_device,
};

NETRUN_BACKEND_EXPORT const netrun_backend_api *netrun_backend_entry(const netrun_host_api *host) {
    if (!host || NETRUN_ABI_MAJOR_OF(host->abi_version) != NETRUN_ABI_MAJOR) return NULL;
    cuda_host = host;
    if (!api.op_table) {
        api.op_table_len = build_op_table();
        api.op_table = op_table;
    }
    return &api;
}
