/* CPU kernels: signal. */
#include "cpu_internal.h"

const cpu_op cpu_ops_signal[] = {
    {0},
};
