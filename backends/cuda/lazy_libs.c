/* cuBLAS and cuDNN, loaded on first use (probe on a machine with a device, or context_create) instead of at
 * plugin load: a machine without a GPU then never maps them (they are ~150 MiB and ~170 ms of relocation).
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

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char load_error[768];

/* dlopen by soname, then from the build-time folder; on failure the loader's message is kept in why. */
static void *open_lib(const char *soname, const char *dir, char *why, size_t why_size) {
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
    const char *e = dlerror();
    snprintf(why, why_size, "%s", e ? e : "not found");
    if (dir && *dir) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, soname);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
        dlerror();
    }
    return NULL;
}

static void load_once(void) {
    char why[512];
    const char *cublas_so = "libcublas.so." STR(CUBLAS_VER_MAJOR);
    const char *cudnn_so = "libcudnn.so." STR(CUDNN_MAJOR);
    void *blas = open_lib(cublas_so, NR_CUBLAS_DIR, why, sizeof why);
    if (!blas) {
        snprintf(load_error, sizeof load_error,
                 "cuBLAS %d not found (%s): install the CUDA %d cuBLAS libraries or add their folder to "
                 "LD_LIBRARY_PATH",
                 CUBLAS_VER_MAJOR, why, CUBLAS_VER_MAJOR);
        return;
    }
    void *dnn = open_lib(cudnn_so, NR_CUDNN_DIR, why, sizeof why);
    if (!dnn) {
        snprintf(load_error, sizeof load_error,
                 "cuDNN %d not found (%s): install cuDNN %d (e.g. the nvidia-cudnn-cu%d pip package) and add its "
                 "lib folder to LD_LIBRARY_PATH",
                 CUDNN_MAJOR, why, CUDNN_MAJOR, CUDART_VERSION / 1000);
        return;
    }
    const char *missing = NULL;
#define CUDA_LAZY_RESOLVE(f)                                                                                     \
    if (!missing && !(*(void **)&cuda_p_##f = dlsym(lib, #f))) missing = #f;
    void *lib = blas;
    CUDA_CUBLAS_FUNCS(CUDA_LAZY_RESOLVE)
    if (missing) {
        snprintf(load_error, sizeof load_error,
                 "%s has no %s: the plugin was built against cuBLAS %d.%d; install a matching cuBLAS or rebuild",
                 cublas_so, missing, CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR);
        return;
    }
    lib = dnn;
    CUDA_CUDNN_FUNCS(CUDA_LAZY_RESOLVE)
#undef CUDA_LAZY_RESOLVE
    if (missing) {
        snprintf(load_error, sizeof load_error,
                 "%s has no %s: the plugin was built against cuDNN %d.%d; install a matching cuDNN or rebuild",
                 cudnn_so, missing, CUDNN_MAJOR, CUDNN_MINOR);
        return;
    }
    size_t v = cuda_p_cudnnGetVersion();
    if (v / 10000 != CUDNN_MAJOR) {
        snprintf(load_error, sizeof load_error,
                 "cuDNN %zu.%zu found, the plugin was built for cuDNN %d: install cuDNN %d or rebuild against "
                 "the installed one (-DCUDNN_ROOT=...)",
                 v / 10000, v / 100 % 100, CUDNN_MAJOR, CUDNN_MAJOR);
        return;
    }
    /* the libraries stay mapped for the life of the process */
    loaded = 1;
}

netrun_status cuda_load_libs(void) {
    pthread_once(&once, load_once);
    if (loaded) return NETRUN_OK;
    return cuda_host->error(NETRUN_ERR_BACKEND, "cuda: %s", load_error[0] ? load_error : "cuBLAS/cuDNN not loaded");
}

int cuda_libs_loaded(void) { return loaded; }
