/* CPU kernels: vision. */
#include "cpu_internal.h"

const cpu_op cpu_ops_vision[] = {
    {0},
};
