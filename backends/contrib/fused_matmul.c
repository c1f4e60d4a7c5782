/* FusedMatMul on host memory: y = alpha * op(A) x op(B) with numpy batch broadcasting. Each batch's matrices are
 * gathered through their strides (trans and trans_batch are only strides) into contiguous float, multiplied by
 * OpenBLAS, and stored (float16 converted back). */
#include <cblas.h>
#include <stdio.h>
#include <string.h>

#include "contrib.h"

void nrc_matmul_view(int rank, const int64_t *dims, int is_b, int trans_batch, int trans, nrc_mat_view *v) {
    memset(v, 0, sizeof *v);
    if (rank == 1) { /* A: [1, K]; B: [K, 1]; trans does not apply */
        v->rank = 2;
        v->dims[is_b ? 0 : 1] = dims[0], v->strides[is_b ? 0 : 1] = 1;
        v->dims[is_b ? 1 : 0] = 1, v->strides[is_b ? 1 : 0] = 0;
        return;
    }
    int64_t strides[NETRUN_MAX_RANK];
    int perm[NETRUN_MAX_RANK];
    int64_t step = 1;
    for (int d = rank - 1; d >= 0; d--) strides[d] = step, step *= dims[d] > 0 ? dims[d] : 1;
    for (int d = 0; d < rank; d++) perm[d] = d;
    if (trans_batch && rank >= 3) { /* [d0, d1 .. dn-2, dn-1] read as [d1 .. dn-2, d0, dn-1] */
        for (int d = 0; d < rank - 2; d++) perm[d] = d + 1;
        perm[rank - 2] = 0;
    }
    if (trans) {
        int t = perm[rank - 2];
        perm[rank - 2] = perm[rank - 1], perm[rank - 1] = t;
    }
    v->rank = rank;
    for (int d = 0; d < rank; d++) v->dims[d] = dims[perm[d]], v->strides[d] = strides[perm[d]];
}

int nrc_matmul_out(const nrc_mat_view *a, const nrc_mat_view *b, int a_1d, int b_1d, int *rank, int64_t *dims,
                   char *why, size_t why_size) {
    int64_t k = a->dims[a->rank - 1], kb = b->dims[b->rank - 2];
    if (k != kb) {
        snprintf(why, why_size, "A's K (%lld) differs from B's (%lld) after the transposes", (long long)k, (long long)kb);
        return 0;
    }
    int ba = a->rank - 2, bb = b->rank - 2, nb = ba > bb ? ba : bb, r = 0;
    for (int d = 0; d < nb; d++) {
        int64_t x = d - (nb - ba) >= 0 ? a->dims[d - (nb - ba)] : 1, y = d - (nb - bb) >= 0 ? b->dims[d - (nb - bb)] : 1;
        if (x != y && x != 1 && y != 1) {
            snprintf(why, why_size, "batch dims %lld and %lld do not broadcast", (long long)x, (long long)y);
            return 0;
        }
        dims[r++] = x == 1 ? y : x;
    }
    if (!a_1d) dims[r++] = a->dims[a->rank - 2];
    if (!b_1d) dims[r++] = b->dims[b->rank - 1];
    *rank = r;
    return 1;
}

/* Gather rows x cols of a matrix at src + off with strides (rs, cs) into contiguous float. */
static void gather(const void *src, int f16, int64_t off, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                   float *dst) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) dst[i * cols + j] = nrc_load(src, f16, (size_t)(off + i * rs + j * cs));
}

netrun_status nrc_run_fused_matmul(const nrc_fused_matmul_params *p, const netrun_kernel_args *args, float **scratch,
                                   size_t *scratch_n) {
    const netrun_tensor *ta = &args->inputs[0], *tb = &args->inputs[1];
    netrun_tensor *ty = &args->outputs[0];
    int f16 = ta->dtype == NETRUN_DTYPE_FLOAT16;
    nrc_mat_view a, b;
    nrc_matmul_view(ta->rank, ta->dims, 0, p->trans_batch_a, p->trans_a, &a);
    nrc_matmul_view(tb->rank, tb->dims, 1, p->trans_batch_b, p->trans_b, &b);
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    char why[160];
    if (!nrc_matmul_out(&a, &b, ta->rank == 1, tb->rank == 1, &rank, dims, why, sizeof why))
        return nrc_host->error(NETRUN_ERR_INTERNAL, NRC_NAME ": FusedMatMul: %s", why);
    int64_t m = a.dims[a.rank - 2], k = a.dims[a.rank - 1], n = b.dims[b.rank - 1];
    int nb = rank - (ta->rank == 1 ? 0 : 1) - (tb->rank == 1 ? 0 : 1), ba = a.rank - 2, bb = b.rank - 2;
    int64_t batches = 1;
    for (int d = 0; d < nb; d++) batches *= dims[d];
    if (!batches || !m || !n) return NETRUN_OK;
    size_t need = (size_t)(m * k + k * n + m * n);
    if (need > *scratch_n) {
        float *s = nrc_host->alloc(need * sizeof(float), 64);
        if (!s) return nrc_host->error(NETRUN_ERR_OUT_OF_MEMORY, NRC_NAME ": FusedMatMul: out of memory (%zu floats)", need);
        nrc_host->free(*scratch);
        *scratch = s, *scratch_n = need;
    }
    float *pa = *scratch, *pb = pa + m * k, *pc = pb + k * n;
    int64_t idx[NETRUN_MAX_RANK] = {0};
    for (int64_t t = 0; t < batches; t++) {
        int64_t oa = 0, ob = 0;
        for (int d = 0; d < nb; d++) { /* right-aligned broadcasting of the batch dims */
            int da = d - (nb - ba), db = d - (nb - bb);
            if (da >= 0 && a.dims[da] != 1) oa += idx[d] * a.strides[da];
            if (db >= 0 && b.dims[db] != 1) ob += idx[d] * b.strides[db];
        }
        gather(ta->data, f16, oa, m, k, a.strides[a.rank - 2], a.strides[a.rank - 1], pa);
        gather(tb->data, f16, ob, k, n, b.strides[b.rank - 2], b.strides[b.rank - 1], pb);
        if (k)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, p->alpha, pa, (int)k, pb,
                        (int)n, 0.0f, pc, (int)n);
        else
            memset(pc, 0, (size_t)(m * n) * sizeof(float));
        for (int64_t i = 0; i < m * n; i++) nrc_store(ty->data, f16, (size_t)(t * m * n + i), pc[i]);
        for (int d = nb - 1; d >= 0 && ++idx[d] == dims[d]; d--) idx[d] = 0;
    }
    return NETRUN_OK;
}
