/*
 * cuda_copy.c — copies between host memory and the GPU buffers Triton may hand the backend (a client's CUDA
 * shared memory, or GPU memory Triton picked for an output). netrun sessions take and give host memory today, so
 * such buffers are copied here, one cudaMemcpy each. The CUDA runtime is the one the server already loaded (its
 * cudaMemcpy is found in the process), else libcudart.so.12 or libcudart.so; the backend links no CUDA library,
 * so it loads on machines without one and fails only the request that brings device memory.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "netrun_triton.h"

typedef int (*cuda_memcpy_fn)(void *dst, const void *src, size_t count, int kind);
enum { CUDA_MEMCPY_DEFAULT = 4 }; /* cudaMemcpyDefault: the direction from the pointers (unified addressing) */

static cuda_memcpy_fn g_memcpy;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void resolve(void) {
    g_memcpy = (cuda_memcpy_fn)dlsym(RTLD_DEFAULT, "cudaMemcpy");
    static const char *const names[] = {"libcudart.so.12", "libcudart.so.13", "libcudart.so"};
    for (size_t i = 0; !g_memcpy && i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) g_memcpy = (cuda_memcpy_fn)dlsym(h, "cudaMemcpy"); /* kept loaded for the process's life */
    }
}

TRITONSERVER_Error *nt_copy(void *dst, int dst_gpu, const void *src, int src_gpu, size_t bytes) {
    if (!bytes) return NULL;
    if (!dst_gpu && !src_gpu) {
        memcpy(dst, src, bytes);
        return NULL;
    }
    pthread_once(&g_once, resolve);
    if (!g_memcpy)
        return nt_error(TRITONSERVER_ERROR_UNSUPPORTED, "netrun backend: a GPU buffer was given but no CUDA runtime "
                        "(cudaMemcpy) is loaded in the server");
    int rc = g_memcpy(dst, src, bytes, CUDA_MEMCPY_DEFAULT);
    if (rc != 0)
        return nt_error(TRITONSERVER_ERROR_INTERNAL, "netrun backend: cudaMemcpy of %zu bytes %s the GPU failed "
                        "(cudaError %d)", bytes, dst_gpu ? "to" : "from", rc);
    return NULL;
}
