/* Helpers shared by the oclops families (elementwise.c, data_movement.c, shape_ops.c, reduce.c, resize.c), which
 * define them in elementwise.c / data_movement.c. Include after opencl_internal.h. Copied from the local
 * declarations of data_movement.c at the ops engineer's request (/work/briefs/oclops_requests.txt); the ops
 * files own these helpers and this header. */
#ifndef OCLOPS_SHARED_H
#define OCLOPS_SHARED_H

#include "opencl_internal.h"

/* Shapes and strides passed by value to the data movement kernels (64-bit fields: same layout on host and
 * device). */
typedef struct oclops_meta {
    int64_t rank;
    int64_t dims[NETRUN_MAX_RANK];
    int64_t s0[NETRUN_MAX_RANK];
    int64_t s1[NETRUN_MAX_RANK];
    int64_t s2[NETRUN_MAX_RANK];
} oclops_meta;

int oclops_type_options(netrun_dtype t, char *buf, size_t size);
int oclops_bytes_options(size_t es, char *buf, size_t size);
netrun_status oclops_flag_create(ocl_context *ctx, cl_mem *flag);
netrun_status oclops_flag_check(ocl_context *ctx, cl_mem flag, const char *what, const char *problem);
netrun_status oclops_copy_nd(ocl_context *ctx, cl_kernel k, const netrun_tensor *x, int64_t base_x, netrun_tensor *y,
                             int64_t base_y, int rank, const int64_t *dims, const int64_t *xs, const int64_t *xmod,
                             const int64_t *ys, const char *what);
uint64_t oclops_value_bits(netrun_dtype t, double v);

#endif
