/* conv ops. */
#include "opencl_internal.h"

const ocl_op ocl_ops_conv[] = {
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
