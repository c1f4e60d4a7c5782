/* CPU kernels: loss. */
#include "cpu_internal.h"

const cpu_op cpu_ops_loss[] = {
    {0},
};
