/* The OpenCL backend plugin: entry point, probe and device list (all platforms' devices, GPUs first), context
 * (cl_context + in-order command queue), buffers, copies, the program build with its on-disk binary cache,
 * launch helpers and dispatch to the op family tables. Nothing is compiled before a node needs it. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "opencl_internal.h"

/* The op families: each file defines ocl_ops_<name>[] (see opencl_internal.h). */
#define FAMILIES(X) X(gemm) X(conv) X(pool) X(softmax) X(norm) \
    X(elementwise) X(reduce) X(data_movement) X(shape_ops) X(resize)

#define DECLARE(f) extern const ocl_op ocl_ops_##f[];
FAMILIES(DECLARE)
#undef DECLARE
#define LIST(f) ocl_ops_##f,
static const ocl_op *const families[] = {FAMILIES(LIST)};
#undef LIST

const netrun_host_api *ocl_host;

/* ---- errors and small helpers ---- */

const char *ocl_error_name(cl_int e) {
    switch (e) {
#define E(x) case x: return #x;
    E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
    E(CL_BUILD_PROGRAM_FAILURE) E(CL_INVALID_VALUE) E(CL_INVALID_DEVICE) E(CL_INVALID_BINARY)
    E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM) E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL)
    E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE) E(CL_INVALID_KERNEL_ARGS)
    E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE) E(CL_INVALID_WORK_ITEM_SIZE)
    E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_BUFFER_SIZE) E(CL_INVALID_COMMAND_QUEUE)
    E(CL_INVALID_CONTEXT) E(CL_INVALID_PLATFORM) E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_INVALID_OPERATION)
    E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_EVENT_WAIT_LIST)
#undef E
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "unknown OpenCL error";
    }
}

netrun_status ocl_fail(cl_int e, const char *what) {
    netrun_status code = e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_HOST_MEMORY ||
                                 e == CL_OUT_OF_RESOURCES
                             ? NETRUN_ERR_OUT_OF_MEMORY
                             : NETRUN_ERR_BACKEND;
    return ocl_host->error(code, "opencl: %s failed: %s (%d)", what, ocl_error_name(e), (int)e);
}

int ocl_refuse(char *reason, size_t size, const char *fmt, ...) {
    if (reason && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, size, fmt, ap);
        va_end(ap);
    }
    return 0;
}

netrun_dtype ocl_main_dtype(const netrun_node_desc *node) {
    if (node->n_inputs > 0 && node->inputs[0].rank >= 0) return node->inputs[0].dtype;
    if (node->n_outputs > 0) return node->outputs[0].dtype;
    return NETRUN_DTYPE_UNDEFINED;
}

const char *ocl_dtype_name(netrun_dtype t) {
    static const char *const names[NETRUN_DTYPE_COUNT_] = {
        "undefined", "float32", "uint8", "int8", "uint16", "int16", "int32", "int64", "string", "bool", "float16",
        "float64", "uint32", "uint64", "complex64", "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz",
        "float8e5m2", "float8e5m2fnuz", "uint4", "int4", "float4e2m1", "float8e8m0", "uint2", "int2"};
    return (unsigned)t < NETRUN_DTYPE_COUNT_ ? names[t] : "unknown";
}

const char *ocl_cl_type(netrun_dtype t) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: return "float";
    case NETRUN_DTYPE_FLOAT16: return "half";
    case NETRUN_DTYPE_DOUBLE: return "double";
    case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_BOOL: return "uchar";
    case NETRUN_DTYPE_INT8: return "char";
    case NETRUN_DTYPE_UINT16: case NETRUN_DTYPE_BFLOAT16: return "ushort";
    case NETRUN_DTYPE_INT16: return "short";
    case NETRUN_DTYPE_INT32: return "int";
    case NETRUN_DTYPE_UINT32: return "uint";
    case NETRUN_DTYPE_INT64: return "long";
    case NETRUN_DTYPE_UINT64: return "ulong";
    default: return NULL;
    }
}

void ocl_broadcast_strides(int r, const int64_t *d, int out_rank, const int64_t *out_dims, int64_t *strides) {
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

static int default_domain(const char *d) { return !d || !*d || !strcmp(d, "ai.onnx"); }

extern const ocl_op ocl_ops_preprocess[]; /* ImagePreprocess, domain com.netrun (preprocess.c) */

static const ocl_op *find_op(const char *domain, const char *op_type) {
    if (domain && !strcmp(domain, "com.netrun")) {
        for (const ocl_op *o = ocl_ops_preprocess; o->op_type; o++)
            if (!strcmp(o->op_type, op_type)) return o;
        return NULL;
    }
    if (!default_domain(domain)) return NULL;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const ocl_op *o = families[f]; o->op_type; o++)
            if (!strcmp(o->op_type, op_type)) return o;
    return NULL;
}

/* ---- devices: every platform's devices, GPUs (and accelerators) first so that device 0 is the best guess.
 * Enumerated once per process; read-only after. ---- */

#define MAX_DEVICES 32

typedef struct ocl_device_info {
    cl_platform_id platform;
    cl_device_id device;
    char platform_name[128], name[128], driver[64], version[128];
    cl_device_type type;
    cl_ulong mem;
    int fp16;
} ocl_device_info;

static ocl_device_info devices[MAX_DEVICES];
static int n_devices;
static cl_int enum_error = CL_SUCCESS;
static char enum_what[96];
static pthread_once_t enum_once = PTHREAD_ONCE_INIT;

static int has_extension(cl_device_id d, const char *ext) {
    size_t n = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &n) != CL_SUCCESS || !n) return 0;
    char *s = malloc(n + 1);
    if (!s) return 0;
    int found = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, n, s, NULL) == CL_SUCCESS) {
        s[n] = 0;
        size_t l = strlen(ext);
        for (char *p = strstr(s, ext); p && !found; p = strstr(p + 1, ext))
            found = (p == s || p[-1] == ' ') && (p[l] == ' ' || p[l] == 0);
    }
    free(s);
    return found;
}

static void enumerate_devices(void) {
    cl_uint np = 0;
    cl_int e = clGetPlatformIDs(0, NULL, &np);
    if (e != CL_SUCCESS || np == 0) {
        enum_error = e != CL_SUCCESS ? e : CL_DEVICE_NOT_FOUND;
        snprintf(enum_what, sizeof enum_what, "clGetPlatformIDs found no OpenCL platform (ICD)");
        return;
    }
    cl_platform_id plats[16];
    if (np > 16) np = 16;
    if ((e = clGetPlatformIDs(np, plats, NULL)) != CL_SUCCESS) {
        enum_error = e;
        snprintf(enum_what, sizeof enum_what, "clGetPlatformIDs");
        return;
    }
    ocl_device_info found[MAX_DEVICES];
    int nf = 0;
    for (cl_uint p = 0; p < np; p++) {
        cl_device_id ids[MAX_DEVICES];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES, ids, &nd) != CL_SUCCESS) continue;
        if (nd > MAX_DEVICES) nd = MAX_DEVICES;
        for (cl_uint d = 0; d < nd && nf < MAX_DEVICES; d++) {
            ocl_device_info *di = &found[nf];
            memset(di, 0, sizeof *di);
            di->platform = plats[p];
            di->device = ids[d];
            clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof di->platform_name - 1, di->platform_name, NULL);
            clGetDeviceInfo(ids[d], CL_DEVICE_NAME, sizeof di->name - 1, di->name, NULL);
            clGetDeviceInfo(ids[d], CL_DRIVER_VERSION, sizeof di->driver - 1, di->driver, NULL);
            clGetDeviceInfo(ids[d], CL_DEVICE_VERSION, sizeof di->version - 1, di->version, NULL);
            clGetDeviceInfo(ids[d], CL_DEVICE_TYPE, sizeof di->type, &di->type, NULL);
            clGetDeviceInfo(ids[d], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof di->mem, &di->mem, NULL);
            cl_bool avail = CL_TRUE;
            clGetDeviceInfo(ids[d], CL_DEVICE_AVAILABLE, sizeof avail, &avail, NULL);
            if (!avail) continue;
            di->fp16 = has_extension(ids[d], "cl_khr_fp16");
            nf++;
        }
    }
    for (int pass = 0; pass < 2; pass++) /* GPUs and accelerators first, then the rest, in platform order */
        for (int i = 0; i < nf; i++) {
            int gpu = (found[i].type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR)) != 0;
            if (gpu == (pass == 0)) devices[n_devices++] = found[i];
        }
    if (!n_devices) {
        enum_error = CL_DEVICE_NOT_FOUND;
        snprintf(enum_what, sizeof enum_what, "%u OpenCL platform%s but no available device", np, np == 1 ? "" : "s");
    }
}

static int device_is_gpu(const ocl_device_info *d) {
    return (d->type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR)) != 0;
}

static const char *device_type_name(const ocl_device_info *d) {
    return d->type & CL_DEVICE_TYPE_GPU ? "GPU" : d->type & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator"
           : d->type & CL_DEVICE_TYPE_CPU ? "CPU" : "other";
}

static netrun_backend_api api;

static netrun_status ocl_probe(char *msg, size_t size) {
    pthread_once(&enum_once, enumerate_devices);
    if (!n_devices) {
        if (enum_error == -1001 || enum_error == CL_DEVICE_NOT_FOUND)
            return ocl_host->error(NETRUN_ERR_BACKEND, "no OpenCL device: %s (%s)", enum_what,
                                   ocl_error_name(enum_error));
        return ocl_host->error(NETRUN_ERR_BACKEND, "no OpenCL device: %s failed: %s (%d)", enum_what,
                               ocl_error_name(enum_error), (int)enum_error);
    }
    /* Default placement puts GPU backends first: only say GPU when device 0 (what a plain session uses) is one,
     * so that on a CPU-only OpenCL (PoCL) default runs stay on the cpu backend. */
    if (device_is_gpu(&devices[0])) api.flags |= NETRUN_BACKEND_GPU;
    else api.flags &= ~(uint32_t)NETRUN_BACKEND_GPU;
    const ocl_device_info *d = &devices[0];
    snprintf(msg, size, "%d device%s: %s (%s, %s, %.1f GiB%s)%s", n_devices, n_devices == 1 ? "" : "s", d->name,
             d->platform_name, device_type_name(d), (double)d->mem / (1024.0 * 1024.0 * 1024.0),
             d->fp16 ? ", fp16" : "", n_devices > 1 ? "; --device N picks another" : "");
    return NETRUN_OK;
}

static int ocl_device_count(void) {
    pthread_once(&enum_once, enumerate_devices);
    return n_devices;
}

static netrun_status ocl_device_describe(int device, char *buf, size_t size) {
    int n = ocl_device_count();
    if (device < 0 || device >= n)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl: device %d does not exist (%d found)", device, n);
    const ocl_device_info *d = &devices[device];
    snprintf(buf, size, "%s: %s, %s, %.1f GiB, fp16 %s, driver %s, %s", d->platform_name, d->name,
             device_type_name(d), (double)d->mem / (1024.0 * 1024.0 * 1024.0), d->fp16 ? "yes" : "no", d->driver,
             d->version);
    return NETRUN_OK;
}

static int value_has_dtype(const netrun_node_desc *node, netrun_dtype t) {
    for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i].rank >= 0 && node->inputs[i].dtype == t) return 1;
    for (int i = 0; i < node->n_outputs; i++)
        if (node->outputs[i].rank >= 0 && node->outputs[i].dtype == t) return 1;
    return 0;
}

static int ocl_supports(const netrun_backend_config *config, const netrun_node_desc *node, char *reason,
                        size_t size) {
    const ocl_op *op = find_op(node->domain, node->op_type);
    if (!op)
        return ocl_refuse(reason, size, "no OpenCL kernel for %s%s%s", node->domain && *node->domain ? node->domain : "",
                          node->domain && *node->domain ? "." : "", node->op_type);
    for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i].rank > NETRUN_MAX_RANK) return ocl_refuse(reason, size, "rank above %d", NETRUN_MAX_RANK);
    int dev = config ? config->device : 0;
    if (ocl_device_count() > 0 && dev >= 0 && dev < n_devices && !devices[dev].fp16 &&
        value_has_dtype(node, NETRUN_DTYPE_FLOAT16))
        return ocl_refuse(reason, size, "float16: the OpenCL device has no cl_khr_fp16");
    if (op->supports) return op->supports(node, reason, size);
    netrun_dtype t = ocl_main_dtype(node);
    if (!(op->dtypes & NETRUN_DTYPE_BIT(t)))
        return ocl_refuse(reason, size, "dtype %s not supported by the OpenCL %s kernel", ocl_dtype_name(t),
                          node->op_type);
    return 1;
}

/* ---- programs: build with an on-disk binary cache ---- */

/* Prepended to every program. */
static const char ocl_prelude[] =
    "#ifdef cl_khr_fp16\n"
    "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
    "#define OCL_HAS_FP16 1\n"
    "#endif\n";

typedef struct ocl_program_entry {
    const char *source;   /* identity: the embedded array's address */
    char *options;
    cl_program program;
} ocl_program_entry;

struct ocl_kernel_entry {
    cl_program program;
    char *name;
    cl_kernel kernel;
};

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

static char *dup_str(const char *s) { /* context-owned strings */
    size_t n = strlen(s) + 1;
    char *d = ocl_host->alloc(n, 8);
    if (d) memcpy(d, s, n);
    return d;
}

static int mkdir_p(const char *path) {
    char tmp[1024];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return -1;
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static void *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    void *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n > 0 && n < (1L << 30) && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n))) {
            if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            } else {
                *size = (size_t)n;
            }
        }
    }
    fclose(f);
    return buf;
}

/* Write atomically (temp file + rename) so that concurrent processes never read half a binary. */
static void write_file(const char *path, const void *data, size_t size) {
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.%ld.%ld.tmp", path, (long)getpid(), (long)clock());
    FILE *f = fopen(tmp, "wb");
    if (!f) return;
    int ok = fwrite(data, 1, size, f) == size;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) remove(tmp);
}

static netrun_status build_log_error(ocl_context *ctx, cl_program prog, const char *name, const char *options,
                                     cl_int e) {
    size_t n = 0;
    char log[2048] = "";
    if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS && n) {
        char *full = malloc(n + 1);
        if (full && clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, n, full, NULL) == CL_SUCCESS) {
            full[n] = 0;
            snprintf(log, sizeof log, "%s", full);
        }
        free(full);
    }
    return ocl_host->error(NETRUN_ERR_BACKEND, "opencl: building program '%s' (%s) failed: %s (%d): %s", name,
                           options && *options ? options : "no options", ocl_error_name(e), (int)e, log);
}

static cl_program build_from_binary(ocl_context *ctx, const char *path, const char *options) {
    size_t n = 0;
    unsigned char *bin = read_file(path, &n);
    if (!bin) return NULL;
    cl_int e, bs = CL_SUCCESS;
    const unsigned char *bins[1] = {bin};
    cl_program p = clCreateProgramWithBinary(ctx->cl, 1, &ctx->device, &n, bins, &bs, &e);
    free(bin);
    if (e != CL_SUCCESS || bs != CL_SUCCESS) {
        if (p) clReleaseProgram(p);
        return NULL;
    }
    if (clBuildProgram(p, 1, &ctx->device, options, NULL, NULL) != CL_SUCCESS) {
        clReleaseProgram(p); /* a stale or foreign binary: rebuild from source */
        return NULL;
    }
    return p;
}

static void save_binary(ocl_context *ctx, cl_program p, const char *path) {
    size_t n = 0;
    if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) != CL_SUCCESS || !n) return;
    unsigned char *bin = malloc(n);
    if (!bin) return;
    unsigned char *bins[1] = {bin};
    if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS) write_file(path, bin, n);
    free(bin);
}

/* Programs are shared by every context of the process on a device (one cl_context per device, see
 * shared_dev): a second session on the same device reuses what the first built. */
typedef struct shared_dev {
    pthread_mutex_t mu;
    cl_context cl;
    ocl_program_entry *programs;
    int n_programs, cap_programs;
} shared_dev;

static shared_dev shared[MAX_DEVICES];
static pthread_once_t shared_once = PTHREAD_ONCE_INIT;

static void shared_init(void) {
    for (int i = 0; i < MAX_DEVICES; i++) pthread_mutex_init(&shared[i].mu, NULL);
}

static netrun_status program_get_locked(ocl_context *ctx, shared_dev *sd, const char *name, const char *source,
                                        const char *options, cl_program *out) {
    for (int i = 0; i < sd->n_programs; i++)
        if (sd->programs[i].source == source && !strcmp(sd->programs[i].options, options)) {
            *out = sd->programs[i].program;
            return NETRUN_OK;
        }
    if (sd->n_programs == sd->cap_programs) {
        int cap = sd->cap_programs ? 2 * sd->cap_programs : 16;
        ocl_program_entry *np = malloc((size_t)cap * sizeof *np); /* process-lifetime: plain malloc */
        if (!np) return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl: out of memory (program table)");
        if (sd->n_programs) memcpy(np, sd->programs, (size_t)sd->n_programs * sizeof *np);
        free(sd->programs);
        sd->programs = np;
        sd->cap_programs = cap;
    }
    char path[1100] = "";
    if (ctx->cache_dir[0]) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        h = fnv1a(h, ctx->device_key, strlen(ctx->device_key) + 1);
        h = fnv1a(h, options, strlen(options) + 1);
        h = fnv1a(h, ocl_prelude, sizeof ocl_prelude);
        h = fnv1a(h, source, strlen(source));
        snprintf(path, sizeof path, "%s/%s-%016llx.bin", ctx->cache_dir, name, (unsigned long long)h);
    }
    cl_program p = path[0] ? build_from_binary(ctx, path, options) : NULL;
    if (p) {
        ctx->builds_from_cache++;
    } else {
        const char *parts[2] = {ocl_prelude, source};
        cl_int e;
        p = clCreateProgramWithSource(ctx->cl, 2, parts, NULL, &e);
        if (e != CL_SUCCESS) return ocl_fail(e, "clCreateProgramWithSource");
        e = clBuildProgram(p, 1, &ctx->device, options, NULL, NULL);
        if (e != CL_SUCCESS) {
            netrun_status st = build_log_error(ctx, p, name, options, e);
            clReleaseProgram(p);
            return st;
        }
        ctx->builds_from_source++;
        if (path[0]) save_binary(ctx, p, path);
    }
    size_t ol = strlen(options) + 1;
    char *opt = malloc(ol);
    if (!opt) {
        clReleaseProgram(p);
        return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl: out of memory");
    }
    memcpy(opt, options, ol);
    sd->programs[sd->n_programs++] = (ocl_program_entry){source, opt, p};
    *out = p;
    return NETRUN_OK;
}

static netrun_status program_get(ocl_context *ctx, const char *name, const char *source, const char *options,
                                 cl_program *out) {
    shared_dev *sd = &shared[ctx->device_index];
    pthread_mutex_lock(&sd->mu);
    netrun_status st = program_get_locked(ctx, sd, name, source, options ? options : "", out);
    pthread_mutex_unlock(&sd->mu);
    return st;
}

netrun_status ocl_kernel_get(ocl_context *ctx, const char *name, const char *source, const char *options,
                             const char *kernel, cl_kernel *out) {
    cl_program prog;
    netrun_status st = program_get(ctx, name, source, options, &prog);
    if (st != NETRUN_OK) return st;
    for (int i = 0; i < ctx->n_kernels; i++)
        if (ctx->kernels[i].program == prog && !strcmp(ctx->kernels[i].name, kernel)) {
            *out = ctx->kernels[i].kernel;
            return NETRUN_OK;
        }
    if (ctx->n_kernels == ctx->cap_kernels) {
        int cap = ctx->cap_kernels ? 2 * ctx->cap_kernels : 32;
        ocl_kernel_entry *nk = ocl_host->alloc((size_t)cap * sizeof *nk, 16);
        if (!nk) return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl: out of memory (kernel table)");
        if (ctx->n_kernels) memcpy(nk, ctx->kernels, (size_t)ctx->n_kernels * sizeof *nk);
        ocl_host->free(ctx->kernels);
        ctx->kernels = nk;
        ctx->cap_kernels = cap;
    }
    cl_int e;
    cl_kernel k = clCreateKernel(prog, kernel, &e);
    if (e != CL_SUCCESS)
        return ocl_host->error(NETRUN_ERR_BACKEND, "opencl: kernel '%s' of program '%s': %s (%d)", kernel, name,
                               ocl_error_name(e), (int)e);
    char *kn = dup_str(kernel);
    if (!kn) {
        clReleaseKernel(k);
        return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl: out of memory");
    }
    ctx->kernels[ctx->n_kernels++] = (ocl_kernel_entry){prog, kn, k};
    *out = k;
    return NETRUN_OK;
}

/* ---- launches ---- */

netrun_status ocl_launch(ocl_context *ctx, cl_kernel k, const char *what, int dims, const size_t *global,
                         const size_t *local, int n_args, const ocl_arg *args) {
    if (dims < 1 || dims > 3) return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl %s: %d launch dimensions", what, dims);
    size_t g[3];
    for (int d = 0; d < dims; d++) {
        if (!global[d]) return NETRUN_OK; /* nothing to do */
        g[d] = global[d];
        if (local && local[d]) {
            size_t l = local[d];
            if (g[d] > SIZE_MAX - l) return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl %s: launch too large", what);
            g[d] = (g[d] + l - 1) / l * l;
        }
    }
    cl_mem consts[4];
    int n_consts = 0;
    netrun_status st = NETRUN_OK;
    for (int i = 0; i < n_args && st == NETRUN_OK; i++) {
        const ocl_arg *a = &args[i];
        const void *v;
        if (a->kind == OCL_ARG_CONST) {
            cl_int e = CL_SUCCESS;
            cl_mem m = n_consts < 4 ? clCreateBuffer(ctx->cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, a->size,
                                                     (void *)a->ptr, &e) : NULL;
            if (!m) {
                st = ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl %s: argument %d: constant buffer of %zu bytes: %s",
                                     what, i, a->size, n_consts < 4 ? ocl_error_name(e) : "more than 4");
                break;
            }
            consts[n_consts++] = m;
            e = clSetKernelArg(k, (cl_uint)i, sizeof m, &m);
            if (e != CL_SUCCESS)
                st = ocl_host->error(NETRUN_ERR_BACKEND, "opencl %s: setting argument %d failed: %s (%d)", what, i,
                                     ocl_error_name(e), (int)e);
            continue;
        }
        switch (a->kind) {
        case OCL_ARG_MEM: v = &a->mem; break;
        case OCL_ARG_ULONG: v = &a->u; break;
        case OCL_ARG_INT: v = &a->i; break;
        case OCL_ARG_FLOAT: v = &a->f; break;
        case OCL_ARG_BYTES: v = a->ptr; break;
        case OCL_ARG_LOCAL: v = NULL; break;
        default:
            st = ocl_host->error(NETRUN_ERR_INTERNAL, "opencl %s: argument %d has no kind", what, i);
            continue;
        }
        cl_int e = clSetKernelArg(k, (cl_uint)i, a->size, v);
        if (e != CL_SUCCESS)
            st = ocl_host->error(NETRUN_ERR_BACKEND, "opencl %s: setting argument %d failed: %s (%d)", what, i,
                                 ocl_error_name(e), (int)e);
    }
    cl_int e = st == NETRUN_OK ? clEnqueueNDRangeKernel(ctx->queue, k, (cl_uint)dims, NULL, g, local, 0, NULL, NULL)
                               : CL_SUCCESS;
    for (int c = 0; c < n_consts; c++) clReleaseMemObject(consts[c]); /* freed once the kernel no longer needs it */
    if (st != NETRUN_OK) return st;
    if (e != CL_SUCCESS)
        return ocl_host->error(e == CL_OUT_OF_RESOURCES || e == CL_MEM_OBJECT_ALLOCATION_FAILURE
                                   ? NETRUN_ERR_OUT_OF_MEMORY : NETRUN_ERR_BACKEND,
                               "opencl %s: enqueue failed: %s (%d)", what, ocl_error_name(e), (int)e);
    return NETRUN_OK;
}

netrun_status ocl_launch1d(ocl_context *ctx, cl_kernel k, const char *what, size_t n, int n_args,
                           const ocl_arg *args) {
    /* the kernel's own limit can be below the device's (register use on GPUs) */
    size_t kmax = 0, local = ctx->max_wg < 256 ? ctx->max_wg : 256;
    if (clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax, NULL) == CL_SUCCESS &&
        kmax && kmax < local)
        local = kmax;
    if (local == 0) local = 1;
    return ocl_launch(ctx, k, what, 1, &n, &local, n_args, args);
}

/* ---- context ---- */

static void default_cache_dir(const netrun_backend_config *config, char *out, size_t size) {
    const char *opt = config->get_option ? config->get_option(config->opaque, "opencl.cache_dir") : NULL;
    const char *env = getenv("NETRUN_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    out[0] = 0;
    if (opt && *opt) {
        if (!strcmp(opt, "off") || !strcmp(opt, "none")) return;
        snprintf(out, size, "%s", opt);
    } else if (env && *env) {
        if (!strcmp(env, "off") || !strcmp(env, "none")) return;
        snprintf(out, size, "%s/opencl", env);
    } else if (xdg && *xdg) {
        snprintf(out, size, "%s/netrun/opencl", xdg);
    } else if (home && *home) {
        snprintf(out, size, "%s/.cache/netrun/opencl", home);
    }
}

static netrun_status ocl_context_create(const netrun_backend_config *config, netrun_backend_context **out) {
    int n = ocl_device_count();
    if (config->device < 0 || config->device >= n)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl: device %d does not exist (%d found)",
                               config->device, n);
    const ocl_device_info *di = &devices[config->device];
    ocl_context *ctx = ocl_host->alloc(sizeof *ctx, 64);
    if (!ctx) return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl: out of memory creating a context");
    memset(ctx, 0, sizeof *ctx);
    ctx->config = *config;
    ctx->platform = di->platform;
    ctx->device = di->device;
    ctx->is_gpu = device_is_gpu(di);
    ctx->fp16 = di->fp16;
    ctx->global_mem = di->mem;
    clGetDeviceInfo(ctx->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof ctx->max_wg, &ctx->max_wg, NULL);
    clGetDeviceInfo(ctx->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ctx->max_alloc, &ctx->max_alloc, NULL);
    cl_uint align_bits = 1024;
    clGetDeviceInfo(ctx->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    ctx->mem_align = align_bits / 8 ? align_bits / 8 : 128;
    char pver[128] = "";
    clGetPlatformInfo(ctx->platform, CL_PLATFORM_VERSION, sizeof pver - 1, pver, NULL);
    snprintf(ctx->device_key, sizeof ctx->device_key, "%s|%s|%s|%s|%s", di->platform_name, pver, di->name,
             di->driver, di->version);
    default_cache_dir(config, ctx->cache_dir, sizeof ctx->cache_dir);
    if (ctx->cache_dir[0] && mkdir_p(ctx->cache_dir) != 0) {
        ocl_host->log(NETRUN_LOG_WARN, "opencl", "binary cache off: cannot create %s: %s", ctx->cache_dir,
                      strerror(errno));
        ctx->cache_dir[0] = 0;
    }
    /* One cl_context per device for the whole process, kept to the end: programs (ours and CLBlast's, which
     * caches per cl_context) are built once however many sessions come and go. */
    cl_int e = CL_SUCCESS;
    pthread_once(&shared_once, shared_init);
    ctx->device_index = config->device;
    shared_dev *sd = &shared[config->device];
    pthread_mutex_lock(&sd->mu);
    if (!sd->cl) {
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)ctx->platform, 0};
        sd->cl = clCreateContext(props, 1, &ctx->device, NULL, NULL, &e);
        if (e != CL_SUCCESS) sd->cl = NULL;
    }
    ctx->cl = sd->cl;
    pthread_mutex_unlock(&sd->mu);
    if (!ctx->cl) {
        ocl_host->free(ctx);
        return ocl_fail(e, "clCreateContext");
    }
    ctx->queue = clCreateCommandQueue(ctx->cl, ctx->device, 0, &e);
    if (e != CL_SUCCESS) {
        ocl_host->free(ctx);
        return ocl_fail(e, "clCreateCommandQueue");
    }
    ctx->own_queue = ctx->queue;
    *out = (netrun_backend_context *)ctx;
    return NETRUN_OK;
}

static void ocl_context_destroy(netrun_backend_context *c) {
    ocl_context *ctx = (ocl_context *)c;
    if (!ctx) return;
    if (ctx->queue) clFinish(ctx->queue);
    if (ctx->builds_from_source || ctx->builds_from_cache)
        ocl_host->log(NETRUN_LOG_INFO, "opencl", "programs: %d built from source, %d from the binary cache (%s)",
                      ctx->builds_from_source, ctx->builds_from_cache, ctx->cache_dir[0] ? ctx->cache_dir : "off");
    for (int i = 0; i < ctx->n_kernels; i++) {
        clReleaseKernel(ctx->kernels[i].kernel);
        ocl_host->free(ctx->kernels[i].name);
    }
    ocl_host->free(ctx->kernels);
    if (ctx->own_queue) clReleaseCommandQueue(ctx->own_queue); /* the cl_context is the process's (shared_dev) */
    ocl_host->free(ctx);
}

/* ---- memory ---- */

static netrun_status ocl_buffer_alloc(netrun_backend_context *c, size_t bytes, void **buffer) {
    ocl_context *ctx = (ocl_context *)c;
    size_t budget = ctx->config.device_memory_budget;
    if (budget && (bytes > budget || ctx->allocated > budget - bytes))
        return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY,
                               "opencl: device memory budget exceeded: %zu bytes in use, %zu more asked, budget %zu",
                               ctx->allocated, bytes, budget);
    if (ctx->max_alloc && bytes > ctx->max_alloc)
        return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY,
                               "opencl: %zu bytes asked in one buffer, the device allows %llu", bytes,
                               (unsigned long long)ctx->max_alloc);
    ocl_buffer *b = ocl_host->alloc(sizeof *b, 16);
    if (!b) return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl: out of host memory");
    b->bytes = bytes ? bytes : 1;
    b->wrapped = 0;
    cl_int e;
    b->mem = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, b->bytes, NULL, &e);
    if (e != CL_SUCCESS) {
        ocl_host->free(b);
        return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl: cannot allocate %zu bytes of device memory: %s",
                               bytes, ocl_error_name(e));
    }
    ctx->allocated += b->bytes;
    *buffer = b;
    return NETRUN_OK;
}

static void ocl_buffer_free(netrun_backend_context *c, void *buffer) {
    ocl_context *ctx = (ocl_context *)c;
    ocl_buffer *b = buffer;
    if (!b) return;
    clReleaseMemObject(b->mem); /* a wrapped cl_mem: our reference only (the caller keeps its own) */
    if (!b->wrapped) ctx->allocated -= b->bytes < ctx->allocated ? b->bytes : ctx->allocated;
    ocl_host->free(b);
}

/* OpenCL memory has no address: hand back the handle itself, so that the runtime passes the workspace handle
 * through to kernel_run (args->workspace) and never sees NULL. tensor->data is therefore not a pointer to the
 * elements; kernels use ocl_mem(t) + offset. */
static void *ocl_buffer_address(netrun_backend_context *c, void *buffer) { return buffer; }

static netrun_status ocl_copy_from_host(netrun_backend_context *c, void *buffer, size_t offset, const void *src,
                                        size_t bytes) {
    ocl_context *ctx = (ocl_context *)c;
    ocl_buffer *b = buffer;
    if (!bytes) return NETRUN_OK;
    if (!b || offset > b->bytes || bytes > b->bytes - offset)
        return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl: copy of %zu bytes at %zu outside a buffer", bytes, offset);
    /* blocking: the caller may reuse src as soon as this returns */
    cl_int e = clEnqueueWriteBuffer(ctx->queue, b->mem, CL_TRUE, offset, bytes, src, 0, NULL, NULL);
    return e == CL_SUCCESS ? NETRUN_OK : ocl_fail(e, "copy to the device");
}

static netrun_status ocl_copy_to_host(netrun_backend_context *c, void *dst, const void *buffer, size_t offset,
                                      size_t bytes) {
    ocl_context *ctx = (ocl_context *)c;
    const ocl_buffer *b = buffer;
    if (!bytes) return NETRUN_OK;
    if (!b || offset > b->bytes || bytes > b->bytes - offset)
        return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl: copy of %zu bytes at %zu outside a buffer", bytes, offset);
    cl_int e = clEnqueueReadBuffer(ctx->queue, b->mem, CL_TRUE, offset, bytes, dst, 0, NULL, NULL);
    return e == CL_SUCCESS ? NETRUN_OK : ocl_fail(e, "copy to the host (or a kernel before it failed)");
}

static netrun_status ocl_synchronize(netrun_backend_context *c) {
    ocl_context *ctx = (ocl_context *)c;
    cl_int e = clFinish(ctx->queue);
    return e == CL_SUCCESS ? NETRUN_OK : ocl_fail(e, "clFinish (a kernel failed)");
}

netrun_status ocl_temp_alloc(ocl_context *ctx, size_t bytes, cl_mem *out) {
    cl_int e;
    *out = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &e);
    if (e != CL_SUCCESS)
        return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl: cannot allocate %zu bytes of device memory: %s",
                               bytes, ocl_error_name(e));
    return NETRUN_OK;
}

netrun_status ocl_upload(ocl_context *ctx, const void *src, size_t bytes, cl_mem *out) {
    netrun_status st = ocl_temp_alloc(ctx, bytes, out);
    if (st != NETRUN_OK || !bytes) return st;
    cl_int e = clEnqueueWriteBuffer(ctx->queue, *out, CL_TRUE, 0, bytes, src, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        clReleaseMemObject(*out);
        *out = NULL;
        return ocl_fail(e, "upload of constants");
    }
    return NETRUN_OK;
}

netrun_status ocl_copy(ocl_context *ctx, cl_mem dst, size_t dst_off, cl_mem src, size_t src_off, size_t bytes) {
    if (!bytes) return NETRUN_OK;
    cl_int e = clEnqueueCopyBuffer(ctx->queue, src, dst, src_off, dst_off, bytes, 0, NULL, NULL);
    return e == CL_SUCCESS ? NETRUN_OK : ocl_fail(e, "clEnqueueCopyBuffer");
}

/* ---- the caller's cl_mem and command queue (ABI 1.11) ----
 * OpenCL memory belongs to a cl_context: the caller's buffers and queue must be of netrun's context for the
 * device (one per process and device, see shared_dev), which a caller gets from a cl_mem netrun hands out
 * (netrun_session_output_device, then clGetMemObjectInfo(CL_MEM_CONTEXT)). docs/device-io.md. */

static netrun_status ocl_memory_check(const void *ptr, size_t bytes, int device) {
    if (device < 0 || device >= MAX_DEVICES)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl: device %d does not exist", device);
    pthread_once(&shared_once, shared_init);
    pthread_mutex_lock(&shared[device].mu);
    cl_context cl = shared[device].cl;
    pthread_mutex_unlock(&shared[device].mu);
    if (!cl)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "netrun has no OpenCL context on device %d yet, so no "
                               "cl_mem can be of it: prepare a session on the device first, and make your buffers "
                               "in its context", device);
    /* cl_khr_icd: every object of a platform starts with the same dispatch table pointer. A pointer that does not
     * is no OpenCL object of this platform (host memory); reading it is what the ICD loader would do anyway. */
    if (!ptr || *(void *const *)ptr != *(void *const *)cl)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%p is not an OpenCL memory object (host memory?)", ptr);
    cl_context mc = NULL;
    size_t size = 0;
    cl_int e = clGetMemObjectInfo((cl_mem)ptr, CL_MEM_CONTEXT, sizeof mc, &mc, NULL);
    if (e == CL_SUCCESS) e = clGetMemObjectInfo((cl_mem)ptr, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (e != CL_SUCCESS)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%p is not a valid cl_mem: %s", ptr, ocl_error_name(e));
    if (mc != cl)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "the cl_mem belongs to another cl_context than netrun's "
                               "for device %d (get it with clGetMemObjectInfo(CL_MEM_CONTEXT) of a cl_mem from "
                               "netrun_session_output_device)", device);
    if (bytes > size)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "the cl_mem holds %zu bytes, %zu needed", size, bytes);
    return NETRUN_OK;
}

static netrun_status ocl_buffer_wrap(netrun_backend_context *c, void *ptr, size_t bytes, void **buffer) {
    ocl_context *ctx = (ocl_context *)c;
    cl_context mc = NULL;
    cl_int e = clGetMemObjectInfo((cl_mem)ptr, CL_MEM_CONTEXT, sizeof mc, &mc, NULL);
    if (e != CL_SUCCESS || mc != ctx->cl)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl: the cl_mem is not of netrun's context");
    ocl_buffer *b = ocl_host->alloc(sizeof *b, 16);
    if (!b) return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl: out of host memory");
    clRetainMemObject((cl_mem)ptr);
    b->mem = (cl_mem)ptr;
    b->bytes = bytes;
    b->wrapped = 1;
    *buffer = b;
    return NETRUN_OK;
}

/* The caller's in-order queue of netrun's context and device; a marker on the old queue orders it first. */
static netrun_status ocl_set_stream(netrun_backend_context *c, void *stream) {
    ocl_context *ctx = (ocl_context *)c;
    cl_command_queue next = stream ? (cl_command_queue)stream : ctx->own_queue;
    if (next == ctx->queue) return NETRUN_OK;
    if (stream) {
        cl_context qc = NULL;
        cl_device_id qd = NULL;
        cl_command_queue_properties props = 0;
        cl_int e = clGetCommandQueueInfo(next, CL_QUEUE_CONTEXT, sizeof qc, &qc, NULL);
        if (e == CL_SUCCESS) e = clGetCommandQueueInfo(next, CL_QUEUE_DEVICE, sizeof qd, &qd, NULL);
        if (e == CL_SUCCESS) e = clGetCommandQueueInfo(next, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
        if (e != CL_SUCCESS)
            return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl: not a valid cl_command_queue: %s",
                                   ocl_error_name(e));
        if (qc != ctx->cl || qd != ctx->device)
            return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl: the command queue is of another context or "
                                   "device than netrun's for device %d", ctx->device_index);
        if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
            return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl: the command queue runs out of order; "
                                   "netrun needs an in-order queue");
    }
    cl_event ev = NULL;
    cl_int e = clEnqueueMarkerWithWaitList(ctx->queue, 0, NULL, &ev);
    if (e == CL_SUCCESS) e = clEnqueueBarrierWithWaitList(next, 1, &ev, NULL);
    if (ev) clReleaseEvent(ev);
    if (e != CL_SUCCESS) return ocl_fail(e, "ordering the caller's queue after netrun's");
    clFlush(ctx->queue);
    ctx->queue = next;
    return NETRUN_OK;
}

static netrun_status ocl_copy_device(netrun_backend_context *c, void *dst, size_t dst_offset, const void *src,
                                     size_t src_offset, size_t bytes) {
    const ocl_buffer *d = dst, *sb = src;
    if (!d || !sb || dst_offset > d->bytes || bytes > d->bytes - dst_offset || src_offset > sb->bytes ||
        bytes > sb->bytes - src_offset)
        return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl: device copy of %zu bytes outside a buffer", bytes);
    return ocl_copy((ocl_context *)c, d->mem, dst_offset, sb->mem, src_offset, bytes);
}

static void *ocl_buffer_native(netrun_backend_context *c, void *buffer) {
    (void)c;
    return buffer ? ((ocl_buffer *)buffer)->mem : NULL;
}

/* ---- kernels ---- */

typedef struct ocl_kernel {
    const ocl_op *op;
    void *state;
} ocl_kernel;

static netrun_status ocl_kernel_create(netrun_backend_context *c, const netrun_node_desc *node, netrun_kernel **out,
                                       size_t *workspace) {
    ocl_context *ctx = (ocl_context *)c;
    const ocl_op *op = find_op(node->domain, node->op_type);
    if (!op) return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "no OpenCL kernel for %s", node->op_type);
    ocl_kernel *k = ocl_host->alloc(sizeof *k, 16);
    if (!k) return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl: out of memory");
    k->op = op;
    k->state = NULL;
    *workspace = 0;
    if (op->create) {
        netrun_status st = op->create(ctx, node, &k->state, workspace);
        if (st != NETRUN_OK) {
            ocl_host->free(k);
            return st;
        }
    }
    *out = (netrun_kernel *)k;
    return NETRUN_OK;
}

static netrun_status ocl_kernel_run(netrun_backend_context *c, netrun_kernel *kernel, const netrun_kernel_args *args) {
    ocl_kernel *k = (ocl_kernel *)kernel;
    for (int o = 0; o < args->n_outputs; o++)
        if (args->outputs[o].rank >= 0 && !args->outputs[o].buffer && ocl_count(&args->outputs[o]) > 0)
            return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl %s: output %d has no device buffer", k->op->op_type, o);
    return k->op->run((ocl_context *)c, k->state, args);
}

static void ocl_kernel_destroy(netrun_backend_context *c, netrun_kernel *kernel) {
    ocl_kernel *k = (ocl_kernel *)kernel;
    if (!k) return;
    if (k->op->destroy && k->state) k->op->destroy((ocl_context *)c, k->state);
    ocl_host->free(k);
}

static netrun_status ocl_kernel_describe(netrun_backend_context *c, netrun_kernel *kernel, char *buf, size_t size) {
    ocl_kernel *k = (ocl_kernel *)kernel;
    if (!k || !k->op->describe) {
        if (size) buf[0] = 0;
        return NETRUN_OK;
    }
    k->op->describe(k->state, buf, size);
    return NETRUN_OK;
}

#define MAX_OPS 512
static netrun_op_support op_table[MAX_OPS];

static size_t build_op_table(void) {
    size_t n = 0;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const ocl_op *o = families[f]; o->op_type && n < MAX_OPS; o++)
            op_table[n++] = (netrun_op_support){"", o->op_type, o->dtypes, o->constraints ? o->constraints : ""};
    for (const ocl_op *o = ocl_ops_preprocess; o->op_type && n < MAX_OPS; o++)
        op_table[n++] = (netrun_op_support){"com.netrun", o->op_type, o->dtypes, o->constraints ? o->constraints : ""};
    return n;
}

/* Plugin ABI 1.5: outputs that may share an input's bytes. Only elementwise.c's ew_unary and ew_binary kernels
 * (one launch; each work item reads x[i] / a[i], b[i] and then writes y[i]; Clip's bounds are scalars); the
 * rest (variadic ops, Conv's fused sum, ...) has not been checked and says no. */
static int ocl_same_shape(const netrun_value_desc *a, const netrun_value_desc *b) {
    if (a->rank < 0 || a->rank != b->rank || a->dtype != b->dtype) return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] < 0 || a->dims[d] != b->dims[d]) return 0;
    return 1;
}

static int ocl_may_alias(const netrun_backend_config *config, const netrun_node_desc *node, int output, int input) {
    static const char *const unary[] = {
        "Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Erf", "Exp", "Log", "Sqrt", "Neg",
        "Abs", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
        "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Elu", "Selu", "Celu", "Softplus", "Softsign",
        "ThresholdedRelu", "Gelu", "Mish", "Shrink", "Swish", "Clip", NULL};
    static const char *const binary[] = {"Add", "Sub", "Mul", "Div", NULL};
    (void)config;
    if (!node || output != 0 || input < 0 || input >= node->n_inputs || node->n_outputs < 1) return 0;
    if (node->domain && *node->domain && strcmp(node->domain, "ai.onnx")) return 0;
    if (!ocl_same_shape(&node->inputs[input], &node->outputs[0])) return 0;
    for (int i = 0; unary[i]; i++)
        if (!strcmp(node->op_type, unary[i])) return input == 0;
    for (int i = 0; binary[i]; i++)
        if (!strcmp(node->op_type, binary[i])) return node->n_inputs == 2;
    return 0;
}

/* The settings this backend reads (ABI 1.8): any other opencl.* key is refused by the runtime. */
static const netrun_option_spec ocl_options[] = {
    {"opencl.cache_dir", NETRUN_OPTION_STRING, NULL, "folder of the compiled-program cache (\"\" turns it off)"},
    {NULL, 0, NULL, NULL},
};

static netrun_backend_api api = {
    .abi_version = NETRUN_ABI_VERSION,
    .struct_size = sizeof(netrun_backend_api),
    .name = "opencl",
    .description = "OpenCL devices (any platform): CLBlast GEMM, netrun OpenCL kernels",
    .flags = 0, /* NETRUN_BACKEND_GPU is set by the probe when device 0 is a GPU */
    .probe = ocl_probe,
    .device_count = ocl_device_count,
    .device_describe = ocl_device_describe,
    .supports = ocl_supports,
    .context_create = ocl_context_create,
    .context_destroy = ocl_context_destroy,
    .buffer_alloc = ocl_buffer_alloc,
    .buffer_free = ocl_buffer_free,
    .buffer_address = ocl_buffer_address,
    .copy_from_host = ocl_copy_from_host,
    .copy_to_host = ocl_copy_to_host,
    .kernel_create = ocl_kernel_create,
    .kernel_run = ocl_kernel_run,
    .kernel_destroy = ocl_kernel_destroy,
    .synchronize = ocl_synchronize,
    .kernel_describe = ocl_kernel_describe,
    .may_alias = ocl_may_alias,
    .options = ocl_options,
    .uses = NETRUN_USES_DECLARED | NETRUN_USES_DEVICE | NETRUN_USES_WORKSPACE | NETRUN_USES_DEVICE_MEMORY,
    .memory_type = NETRUN_MEMORY_OPENCL,
    .memory_check = ocl_memory_check,
    .buffer_wrap = ocl_buffer_wrap,
    .set_stream = ocl_set_stream,
    .copy_device = ocl_copy_device,
    .buffer_native = ocl_buffer_native,
};

NETRUN_BACKEND_EXPORT const netrun_backend_api *netrun_backend_entry(const netrun_host_api *host) {
    if (!host || NETRUN_ABI_MAJOR_OF(host->abi_version) != NETRUN_ABI_MAJOR) return NULL;
    ocl_host = host;
    if (!api.op_table) {
        api.op_table_len = build_op_table();
        api.op_table = op_table;
    }
    return &api;
}
