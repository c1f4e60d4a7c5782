/* reduce ops (owner: oclops): placeholder table so the plugin links; fill it in. */
#include "opencl_internal.h"

const ocl_op ocl_ops_reduce[] = {
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
