/* CPU kernels: index_ops. */
#include "cpu_internal.h"

const cpu_op cpu_ops_index_ops[] = {
    {0},
};
