/* data_movement ops (owner: oclops): placeholder table so the plugin links; fill it in. */
#include "opencl_internal.h"

const ocl_op ocl_ops_data_movement[] = {
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
