/* Device helpers of the attention, loss and norm families: dtype-generic element loads and stores through
 * float (the dtype travels as a kernel argument, so one kernel serves float32/float16 mixes such as a float16
 * Q with a float32 mask), and the optional-tensor accessors of kernel args. */
#ifndef NLP_COMMON_CUH
#define NLP_COMMON_CUH

#include "cuda_kernels.cuh"

__device__ __forceinline__ float ldx(int dt, const void *p, int64_t i) {
    if (dt == NETRUN_DTYPE_FLOAT16) return __half2float(((const __half *)p)[i]);
    if (dt == NETRUN_DTYPE_DOUBLE) return (float)((const double *)p)[i];
    return ((const float *)p)[i];
}
__device__ __forceinline__ void stx(int dt, void *p, int64_t i, float v) {
    if (dt == NETRUN_DTYPE_FLOAT16) ((__half *)p)[i] = __float2half_rn(v);
    else if (dt == NETRUN_DTYPE_DOUBLE) ((double *)p)[i] = (double)v;
    else ((float *)p)[i] = v;
}
/* v rounded to dtype dt's precision (float16 intermediates of the reference). */
__device__ __forceinline__ float round_dt(int dt, float v) {
    return dt == NETRUN_DTYPE_FLOAT16 ? __half2float(__float2half_rn(v)) : v;
}
__device__ __forceinline__ int64_t ldi64(int dt, const void *p, int64_t i) {
    return dt == NETRUN_DTYPE_INT32 ? (int64_t)((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

static inline int nlp_float_dtype(netrun_dtype t) { return t == NETRUN_DTYPE_FLOAT || t == NETRUN_DTYPE_FLOAT16; }

/* Optional input / output i of kernel args, NULL when absent. */
static inline const netrun_tensor *nlp_opt_in(const netrun_kernel_args *a, int i) {
    return a->n_inputs > i && a->inputs[i].rank >= 0 ? &a->inputs[i] : NULL;
}
static inline netrun_tensor *nlp_opt_out(const netrun_kernel_args *a, int i) {
    return a->n_outputs > i && a->outputs[i].rank >= 0 && a->outputs[i].data ? &a->outputs[i] : NULL;
}
/* Optional input / output i of a node desc at placement. */
static inline const netrun_value_desc *nlp_desc_in(const netrun_node_desc *n, int i) {
    return n->n_inputs > i && n->inputs[i].rank >= 0 ? &n->inputs[i] : NULL;
}
static inline const netrun_value_desc *nlp_desc_out(const netrun_node_desc *n, int i) {
    return n->n_outputs > i && n->outputs[i].rank >= 0 && n->outputs[i].name && *n->outputs[i].name ? &n->outputs[i]
                                                                                                        : NULL;
}

/* Dynamic shared memory above the default 48 KiB needs an opt-in per kernel; fails when the device has less. */
static inline netrun_status nlp_smem(const void *kernel, size_t bytes, const char *what) {
    if (bytes <= 48 * 1024) return NETRUN_OK;
    int dev = 0, cap = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&cap, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (bytes > (size_t)cap)
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda %s: needs %zu bytes of shared memory, the device has %d",
                                what, bytes, cap);
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, what);
}

#endif
