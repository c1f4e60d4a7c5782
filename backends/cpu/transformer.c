/* CPU kernels: transformer. */
#include "cpu_internal.h"

const cpu_op cpu_ops_transformer[] = {
    {0},
};
