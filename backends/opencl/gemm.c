/* gemm ops. */
#include "opencl_internal.h"

const ocl_op ocl_ops_gemm[] = {
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
