/* norm ops. */
#include "opencl_internal.h"

const ocl_op ocl_ops_norm[] = {
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
