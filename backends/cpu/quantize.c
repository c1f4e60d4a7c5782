/* CPU kernels: quantize. */
#include "cpu_internal.h"

const cpu_op cpu_ops_quantize[] = {
    {0},
};
