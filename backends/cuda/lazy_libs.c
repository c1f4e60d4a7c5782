/* cuBLAS and cuDNN, loaded on first use instead of at plugin load: a machine without a GPU never maps them
 * (they are ~150 MiB and ~170 ms of relocation), and a process that runs no Conv/Gemm/MatMul on the GPU never
 * loads cuBLAS (cuda_backend.c: cuDNN's small front library at the probe, for its version; cuBLAS and the
 * handles at the first kernel that needs them).
 * The names and the redirecting macros live in cuda_internal.h. The libraries are looked up by soname (the
 * loader's usual search: LD_LIBRARY_PATH, the plugin's RUNPATH, ldconfig), then in the folders CMake found them
 * in at build time. */
#include <dlfcn.h>
#include <pthread.h>

#include "cuda_internal.h"

#define CUDA_LAZY_DEFINE(f) __typeof__(f) *cuda_p_##f;
CUDA_CUDNN_FUNCS(CUDA_LAZY_DEFINE)
CUDA_CUBLAS_FUNCS(CUDA_LAZY_DEFINE)
#undef CUDA_LAZY_DEFINE

#define STR2(x) #x
#define STR(x) STR2(x)

#ifndef NR_CUDNN_DIR
#define NR_CUDNN_DIR ""
#endif
#ifndef NR_CUBLAS_DIR
#define NR_CUBLAS_DIR ""
#endif

static pthread_once_t once_blas = PTHREAD_ONCE_INIT, once_dnn = PTHREAD_ONCE_INIT;
static int blas_loaded, dnn_loaded;
static char blas_error[768], dnn_error[768];

/* dlopen by soname, then from the build-time folder; on failure the loader's message is kept in why. Lazy
 * binding: only the functions called get resolved. */
static void *open_lib(const char *soname, const char *dir, char *why, size_t why_size) {
    void *h = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
    if (h) return h;
    const char *e = dlerror();
    snprintf(why, why_size, "%s", e ? e : "not found");
    if (dir && *dir) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, soname);
        h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
        if (h) return h;
        dlerror();
    }
    return NULL;
}

#define CUDA_LAZY_RESOLVE(f)                                                                                     \
    if (!missing && !(*(void **)&cuda_p_##f = dlsym(lib, #f))) missing = #f;

static void load_blas(void) {
    char why[512];
    const char *so = "libcublas.so." STR(CUBLAS_VER_MAJOR);
    void *lib = open_lib(so, NR_CUBLAS_DIR, why, sizeof why);
    if (!lib) {
        snprintf(blas_error, sizeof blas_error,
                 "cuBLAS %d not found (%s): install the CUDA %d cuBLAS libraries or add their folder to "
                 "LD_LIBRARY_PATH",
                 CUBLAS_VER_MAJOR, why, CUBLAS_VER_MAJOR);
        return;
    }
    const char *missing = NULL;
    CUDA_CUBLAS_FUNCS(CUDA_LAZY_RESOLVE)
    if (missing) {
        snprintf(blas_error, sizeof blas_error,
                 "%s has no %s: the plugin was built against cuBLAS %d.%d; install a matching cuBLAS or rebuild", so,
                 missing, CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR);
        return;
    }
    blas_loaded = 1; /* stays mapped for the life of the process */
}

static void load_dnn(void) {
    char why[512];
    const char *so = "libcudnn.so." STR(CUDNN_MAJOR);
    void *lib = open_lib(so, NR_CUDNN_DIR, why, sizeof why);
    if (!lib) {
        snprintf(dnn_error, sizeof dnn_error,
                 "cuDNN %d not found (%s): install cuDNN %d (e.g. the nvidia-cudnn-cu%d pip package) and add its "
                 "lib folder to LD_LIBRARY_PATH",
                 CUDNN_MAJOR, why, CUDNN_MAJOR, CUDART_VERSION / 1000);
        return;
    }
    const char *missing = NULL;
    CUDA_CUDNN_FUNCS(CUDA_LAZY_RESOLVE)
    if (missing) {
        snprintf(dnn_error, sizeof dnn_error,
                 "%s has no %s: the plugin was built against cuDNN %d.%d; install a matching cuDNN or rebuild", so,
                 missing, CUDNN_MAJOR, CUDNN_MINOR);
        return;
    }
    size_t v = cuda_p_cudnnGetVersion();
    if (v / 10000 != CUDNN_MAJOR) {
        snprintf(dnn_error, sizeof dnn_error,
                 "cuDNN %zu.%zu found, the plugin was built for cuDNN %d: install cuDNN %d or rebuild against "
                 "the installed one (-DCUDNN_ROOT=...)",
                 v / 10000, v / 100 % 100, CUDNN_MAJOR, CUDNN_MAJOR);
        return;
    }
    dnn_loaded = 1;
}
#undef CUDA_LAZY_RESOLVE

netrun_status cuda_load_cublas(void) {
    pthread_once(&once_blas, load_blas);
    return blas_loaded ? NETRUN_OK : cuda_host->error(NETRUN_ERR_BACKEND, "cuda: %s", blas_error);
}

netrun_status cuda_load_cudnn(void) {
    pthread_once(&once_dnn, load_dnn);
    return dnn_loaded ? NETRUN_OK : cuda_host->error(NETRUN_ERR_BACKEND, "cuda: %s", dnn_error);
}

netrun_status cuda_load_libs(void) {
    netrun_status st = cuda_load_cudnn();
    return st == NETRUN_OK ? cuda_load_cublas() : st;
}

int cuda_cublas_loaded(void) { return blas_loaded; }
int cuda_cudnn_loaded(void) { return dnn_loaded; }
int cuda_libs_loaded(void) { return blas_loaded && dnn_loaded; }
