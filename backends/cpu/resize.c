/* CPU kernels: resize. */
#include "cpu_internal.h"

const cpu_op cpu_ops_resize[] = {
    {0},
};
