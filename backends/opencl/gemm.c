/* Gemm and MatMul through CLBlast (float32; float16 with cl_khr_fp16). MatMul: one GEMM when B has no batch
 * (A's batch folds into M), one strided-batched GEMM when each side's batch is either full or absent, else one
 * GEMM per output batch (mixed broadcasting). Gemm's C is broadcast into Y first (beta * C), then GEMM adds. */
#include "opencl_internal.h"

static int float_supports(const netrun_node_desc *node, char *reason, size_t size) {
    for (int i = 0; i < node->n_inputs && i < 3; i++) {
        const netrun_value_desc *d = &node->inputs[i];
        if (d->rank < 0) continue;
        if (d->dtype != NETRUN_DTYPE_FLOAT && d->dtype != NETRUN_DTYPE_FLOAT16)
            return ocl_refuse(reason, size, "dtype %s (float32/float16 only)", ocl_dtype_name(d->dtype));
    }
    return 1;
}

static int gemm_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!float_supports(node, reason, size)) return 0;
    /* activate() (common.cl) knows kinds up to SWISH; a newer kind would silently be the identity */
    const netrun_gemm_params *p = node->params;
    if (p && node->params_size >= sizeof *p && ((int)p->activation.kind < 0 || p->activation.kind > NETRUN_ACT_SWISH))
        return ocl_refuse(reason, size, "fused activation kind %d not implemented", (int)p->activation.kind);
    if (node->n_inputs < 2 || node->inputs[0].rank != 2 || node->inputs[1].rank != 2)
        return ocl_refuse(reason, size, "Gemm needs 2-D A and B");
    if (node->n_inputs > 2 && node->inputs[2].rank > 2) return ocl_refuse(reason, size, "C of rank above 2");
    return 1;
}

static netrun_status gemm_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_gemm_params *p = args->params;
    const netrun_tensor *A = &args->inputs[0], *B = &args->inputs[1];
    const netrun_tensor *C = args->n_inputs > 2 && args->inputs[2].rank >= 0 ? &args->inputs[2] : NULL;
    netrun_tensor *Y = &args->outputs[0];
    netrun_dtype dt = Y->dtype;
    if ((dt != NETRUN_DTYPE_FLOAT && dt != NETRUN_DTYPE_FLOAT16) || A->dtype != dt || B->dtype != dt || (C && C->dtype != dt))
        return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl Gemm: dtypes at run time differ from float32/float16");
    size_t M = (size_t)(p->trans_a ? A->dims[1] : A->dims[0]), K = (size_t)(p->trans_a ? A->dims[0] : A->dims[1]);
    size_t N = (size_t)(p->trans_b ? B->dims[0] : B->dims[1]);
    if (!M || !N) return NETRUN_OK;
    float beta = 0.0f;
    netrun_status st;
    if (C && p->beta != 0.0f && ocl_count(C) > 0) {
        size_t sm = 0, sn = 0;
        if (C->rank == 2) {
            sm = C->dims[0] == 1 ? 0 : (size_t)C->dims[1];
            sn = C->dims[1] == 1 ? 0 : 1;
        } else if (C->rank == 1) {
            sn = C->dims[0] == 1 ? 0 : 1;
        }
        cl_kernel k;
        if ((st = ocl_common_kernel(ctx, dt, "gemm_c_init", &k)) != NETRUN_OK) return st;
        ocl_arg a[] = {OCL_TENSOR(Y), OCL_TENSOR(C), OCL_ULONG(N), OCL_ULONG(sm), OCL_ULONG(sn), OCL_ULONG(M * N),
                       OCL_FLOAT(p->beta)};
        if ((st = ocl_launch1d(ctx, k, "Gemm C", M * N, OCL_NARGS(a), a)) != NETRUN_OK) return st;
        beta = 1.0f;
    } else if (!K) {
        if ((st = ocl_fill_zero(ctx, ocl_mem(Y), Y->offset, Y->nbytes)) != NETRUN_OK) return st;
    }
    if (K) {
        st = ocl_gemm(ctx, dt, p->trans_a, p->trans_b, M, N, K, p->alpha, ocl_mem(A), ocl_eoff(A),
                      (size_t)A->dims[1], ocl_mem(B), ocl_eoff(B), (size_t)B->dims[1], beta, ocl_mem(Y), ocl_eoff(Y), N);
        if (st != NETRUN_OK) return st;
    }
    return ocl_bias_activation(ctx, dt, ocl_mem(Y), ocl_eoff(Y), NULL, 0, NULL, 0, M * N, 1, 1, &p->activation);
}

static int matmul_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!float_supports(node, reason, size)) return 0;
    if (node->inputs[0].rank < 1 || node->inputs[1].rank < 1) return ocl_refuse(reason, size, "MatMul of a scalar");
    return 1;
}

static netrun_status matmul_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_tensor *A = &args->inputs[0], *B = &args->inputs[1];
    netrun_tensor *Y = &args->outputs[0];
    netrun_dtype dt = Y->dtype;
    if ((dt != NETRUN_DTYPE_FLOAT && dt != NETRUN_DTYPE_FLOAT16) || A->dtype != dt || B->dtype != dt)
        return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl MatMul: dtypes at run time differ from float32/float16");
    int ra = A->rank, rb = B->rank;
    size_t M = ra >= 2 ? (size_t)A->dims[ra - 2] : 1, K = (size_t)A->dims[ra - 1];
    size_t N = rb >= 2 ? (size_t)B->dims[rb - 1] : 1;
    if (ocl_count(Y) == 0) return NETRUN_OK;
    if (!K) return ocl_fill_zero(ctx, ocl_mem(Y), Y->offset, Y->nbytes);
    /* batch dims of the output and of each side (right-aligned, broadcast) */
    int nb = Y->rank - (ra >= 2) - (rb >= 2);
    if (nb < 0) nb = 0;
    int64_t bdims[NETRUN_MAX_RANK], sa[NETRUN_MAX_RANK], sb[NETRUN_MAX_RANK];
    size_t batch = 1;
    for (int i = 0; i < nb; i++) {
        bdims[i] = Y->dims[i];
        batch *= (size_t)Y->dims[i];
    }
    int na = ra > 2 ? ra - 2 : 0, nbb = rb > 2 ? rb - 2 : 0;
    ocl_broadcast_strides(na, A->dims, nb, bdims, sa);
    ocl_broadcast_strides(nbb, B->dims, nb, bdims, sb);
    size_t a_full = 1, b_full = 1; /* batch element counts of each side */
    for (int i = 0; i < na; i++) a_full *= (size_t)A->dims[i];
    for (int i = 0; i < nbb; i++) b_full *= (size_t)B->dims[i];
    size_t lda = K, ldb = N, mk = M * K, kn = K * N, mn = M * N;
    if (b_full == 1 && a_full == batch)
        return ocl_gemm(ctx, dt, 0, 0, batch * M, N, K, 1.0f, ocl_mem(A), ocl_eoff(A), lda, ocl_mem(B), ocl_eoff(B),
                        ldb, 0.0f, ocl_mem(Y), ocl_eoff(Y), N);
    if ((a_full == batch || a_full == 1) && (b_full == batch || b_full == 1))
        return ocl_gemm_batched(ctx, dt, 0, 0, M, N, K, 1.0f, ocl_mem(A), ocl_eoff(A), lda, a_full == 1 ? 0 : mk,
                                ocl_mem(B), ocl_eoff(B), ldb, b_full == 1 ? 0 : kn, 0.0f, ocl_mem(Y), ocl_eoff(Y), N,
                                mn, batch);
    for (size_t bi = 0; bi < batch; bi++) {
        size_t rem = bi, ao = 0, bo = 0;
        for (int i = nb - 1; i >= 0; i--) {
            size_t idx = rem % (size_t)bdims[i];
            rem /= (size_t)bdims[i];
            ao += idx * (size_t)sa[i];
            bo += idx * (size_t)sb[i];
        }
        netrun_status st = ocl_gemm(ctx, dt, 0, 0, M, N, K, 1.0f, ocl_mem(A), ocl_eoff(A) + ao * mk, lda, ocl_mem(B),
                                    ocl_eoff(B) + bo * kn, ldb, 0.0f, ocl_mem(Y), ocl_eoff(Y) + bi * mn, N);
        if (st != NETRUN_OK) return st;
    }
    return NETRUN_OK;
}

static void clblast_describe(void *state, char *buf, size_t size) { snprintf(buf, size, "clblast gemm"); }

const ocl_op ocl_ops_gemm[] = {
    {"Gemm", OCL_FLOAT_DTYPES, "2-D A, B; C rank <= 2; fused activation", gemm_supports, NULL, gemm_run, NULL,
     clblast_describe},
    {"MatMul", OCL_FLOAT_DTYPES, "numpy broadcasting of batch dims", matmul_supports, NULL, matmul_run, NULL,
     clblast_describe},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
