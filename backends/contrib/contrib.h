/* What the contrib plugin's files share: the host table, the op ids, the op definitions and the kernels. */
#ifndef NRC_CONTRIB_H
#define NRC_CONTRIB_H

#include <stddef.h>
#include <stdint.h>

#include "netrun_backend.h"
#include "contrib_ops.h"
#include "../common/dtype_convert.h"

#define NRC_NAME "contrib"
#define NRC_MS "com.microsoft"

extern const netrun_host_api *nrc_host;

typedef enum nrc_op {
    NRC_GELU, NRC_FAST_GELU, NRC_BIAS_GELU, NRC_QUICK_GELU, NRC_BIAS_ADD,
    NRC_LAYER_NORM, NRC_SIMPLIFIED_LAYER_NORM, NRC_SKIP_LAYER_NORM, NRC_SKIP_SIMPLIFIED_LAYER_NORM,
    NRC_FUSED_MATMUL, NRC_ATTENTION, NRC_OP_COUNT
} nrc_op;

/* contrib_defs.c: the definitions (ended by NULL) and which op a node is (-1: none of ours). */
extern const netrun_op_def *const nrc_op_defs[];
int nrc_op_of(const char *domain, const char *op_type, int opset);

/* Element access for the two element types the kernels take (float32, float16); math is in float. Inline, so
 * that a kernel called with a constant f16 has no test per element. */
static inline float nrc_load(const void *p, int f16, size_t i) {
    return f16 ? nr_half_to_float(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static inline void nrc_store(void *p, int f16, size_t i, float v) {
    if (f16) ((uint16_t *)p)[i] = nr_float_to_half(v);
    else ((float *)p)[i] = v;
}

/* Kernels (host memory). scratch: kernel-owned float memory grown on demand (*scratch_n floats). */
netrun_status nrc_run_activation(nrc_op op, const void *params, const netrun_kernel_args *a);
netrun_status nrc_run_norm(nrc_op op, const nrc_norm_params *p, const netrun_kernel_args *a);
netrun_status nrc_run_attention(const nrc_attention_params *p, const netrun_kernel_args *a, float **scratch,
                                size_t *scratch_n);
netrun_status nrc_run_fused_matmul(const nrc_fused_matmul_params *p, const netrun_kernel_args *a, float **scratch,
                                   size_t *scratch_n);



/* FusedMatMul's operands as logical matrices: dims and element strides after trans_batch and trans (a 1-D A is
 * [1, K], a 1-D B is [K, 1]). */
typedef struct nrc_mat_view {
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    int64_t strides[NETRUN_MAX_RANK];
} nrc_mat_view;

void nrc_matmul_view(int rank, const int64_t *dims, int is_b, int trans_batch, int trans, nrc_mat_view *v);
/* The output's dims (numpy batch broadcasting); 0 and a message in why when the shapes do not fit. */
int nrc_matmul_out(const nrc_mat_view *a, const nrc_mat_view *b, int a_1d, int b_1d, int *rank, int64_t *dims,
                   char *why, size_t why_size);
#endif
