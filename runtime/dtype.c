/* Element types: names and sizes. */
#include "netrun.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[NETRUN_DTYPE_COUNT_] = {
    [NETRUN_DTYPE_UNDEFINED] = {"undefined", 0}, [NETRUN_DTYPE_FLOAT] = {"float32", 4},
    [NETRUN_DTYPE_UINT8] = {"uint8", 1},         [NETRUN_DTYPE_INT8] = {"int8", 1},
    [NETRUN_DTYPE_UINT16] = {"uint16", 2},       [NETRUN_DTYPE_INT16] = {"int16", 2},
    [NETRUN_DTYPE_INT32] = {"int32", 4},         [NETRUN_DTYPE_INT64] = {"int64", 8},
    [NETRUN_DTYPE_STRING] = {"string", 0},       [NETRUN_DTYPE_BOOL] = {"bool", 1},
    [NETRUN_DTYPE_FLOAT16] = {"float16", 2},     [NETRUN_DTYPE_DOUBLE] = {"float64", 8},
    [NETRUN_DTYPE_UINT32] = {"uint32", 4},       [NETRUN_DTYPE_UINT64] = {"uint64", 8},
    [NETRUN_DTYPE_COMPLEX64] = {"complex64", 8}, [NETRUN_DTYPE_COMPLEX128] = {"complex128", 16},
    [NETRUN_DTYPE_BFLOAT16] = {"bfloat16", 2},   [NETRUN_DTYPE_FLOAT8E4M3FN] = {"float8e4m3fn", 1},
    [NETRUN_DTYPE_FLOAT8E4M3FNUZ] = {"float8e4m3fnuz", 1}, [NETRUN_DTYPE_FLOAT8E5M2] = {"float8e5m2", 1},
    [NETRUN_DTYPE_FLOAT8E5M2FNUZ] = {"float8e5m2fnuz", 1}, [NETRUN_DTYPE_UINT4] = {"uint4", 1},
    [NETRUN_DTYPE_INT4] = {"int4", 1},
    [NETRUN_DTYPE_FLOAT4E2M1] = {"float4e2m1", 1}, [NETRUN_DTYPE_FLOAT8E8M0] = {"float8e8m0", 1},
    [NETRUN_DTYPE_UINT2] = {"uint2", 1},         [NETRUN_DTYPE_INT2] = {"int2", 1},
};

const char *netrun_dtype_name(netrun_dtype t) {
    return (unsigned)t < NETRUN_DTYPE_COUNT_ ? dtypes[t].name : "invalid";
}

size_t netrun_dtype_size(netrun_dtype t) { return (unsigned)t < NETRUN_DTYPE_COUNT_ ? dtypes[t].size : 0; }
