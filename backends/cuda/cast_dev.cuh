/* Element conversions for cast.cu, quantize.cu and vision.cu: the conversions themselves are the CPU
 * backend's, from one shared header (backends/common/dtype_convert.h, compiled for host and device), so that
 * CPU and CUDA agree bit for bit; here only the dtype masks and the float-typed stores. */
#ifndef CAST_DEV_CUH
#define CAST_DEV_CUH

#include "cuda_kernels.cuh"

#define CAST_F8_MASK                                                                                          \
    (CUDA_DT(FLOAT8E4M3FN) | CUDA_DT(FLOAT8E4M3FNUZ) | CUDA_DT(FLOAT8E5M2) | CUDA_DT(FLOAT8E5M2FNUZ))
#define CAST_SUBBYTE_MASK (CUDA_DT(INT4) | CUDA_DT(UINT4) | CUDA_DT(INT2) | CUDA_DT(UINT2) | CUDA_DT(FLOAT4E2M1))
/* The 23 element types Cast converts between (the CPU's matrix: no string, no complex). */
#define CAST_ALL_DTYPES (CUDA_ALL_DTYPES | CAST_F8_MASK | CAST_SUBBYTE_MASK | CUDA_DT(FLOAT8E8M0))

/* Bytes per stored element of every type above (sub-byte types take one byte each); 0 for others. */
static inline size_t cast_esize(netrun_dtype t) {
    if (!((CAST_ALL_DTYPES >> t) & 1)) return 0;
    size_t es = cuda_esize(t);
    return es ? es : 1;
}

/* Store v into a float-typed array (float, double, float16, bfloat16), as cpu_store_f. */
__device__ __forceinline__ void dev_store_f(void *p, int t, int64_t i, double v) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case NETRUN_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case NETRUN_DTYPE_FLOAT16: ((uint16_t *)p)[i] = nr_float_to_half((float)v); break;
    case NETRUN_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = nr_float_to_bf16((float)v); break;
    default: break;
    }
}

#endif
