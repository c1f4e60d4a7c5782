/* Helpers shared by the gemm, conv and norm families: CLBlast GEMM calls (float32 / float16), the fused bias +
 * activation pass, zero fills. */
#include <clblast_c.h>

#include "opencl_internal.h"

OCL_SOURCE(common);

const char *ocl_float_options(netrun_dtype t) {
    return t == NETRUN_DTYPE_FLOAT16 ? "-DT=half -DIS_HALF" : "-DT=float";
}

static netrun_status clblast_fail(CLBlastStatusCode s, const char *what) {
    if (s > -1000) return ocl_fail((cl_int)s, what); /* an OpenCL error code passed through */
    netrun_status code = NETRUN_ERR_BACKEND;
    return ocl_host->error(code, "opencl: %s failed: CLBlast status %d", what, (int)s);
}

uint16_t ocl_float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* overflow to inf */
    if (absx < 0x38800000u) {                                    /* subnormal or zero */
        if (absx < 0x33000000u) return (uint16_t)sign;
        uint32_t m = (absx & 0x7fffffu) | 0x800000u;
        int shift = 113 - (int)(absx >> 23) + 13;
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = absx - 0x38000000u, bits = r >> 13, rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (bits & 1))) bits++;
    return (uint16_t)(sign | bits);
}

netrun_status ocl_gemm_batched(ocl_context *ctx, netrun_dtype dt, int trans_a, int trans_b, size_t m, size_t n,
                               size_t k, float alpha, cl_mem a, size_t a_off, size_t lda, size_t a_stride, cl_mem b,
                               size_t b_off, size_t ldb, size_t b_stride, float beta, cl_mem c, size_t c_off,
                               size_t ldc, size_t c_stride, size_t batch) {
    if (!m || !n || !batch) return NETRUN_OK;
    CLBlastTranspose ta = trans_a ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose tb = trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastStatusCode s;
    if (dt == NETRUN_DTYPE_FLOAT16) {
        cl_half ha = ocl_float_to_half(alpha), hb = ocl_float_to_half(beta);
        s = batch == 1 ? CLBlastHgemm(CLBlastLayoutRowMajor, ta, tb, m, n, k, ha, a, a_off, lda, b, b_off, ldb, hb, c,
                                      c_off, ldc, &ctx->queue, NULL)
                       : CLBlastHgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, m, n, k, ha, a, a_off, lda,
                                                    a_stride, b, b_off, ldb, b_stride, hb, c, c_off, ldc, c_stride,
                                                    batch, &ctx->queue, NULL);
    } else {
        s = batch == 1 ? CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, m, n, k, alpha, a, a_off, lda, b, b_off, ldb,
                                      beta, c, c_off, ldc, &ctx->queue, NULL)
                       : CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, m, n, k, alpha, a, a_off, lda,
                                                    a_stride, b, b_off, ldb, b_stride, beta, c, c_off, ldc, c_stride,
                                                    batch, &ctx->queue, NULL);
    }
    return s == CLBlastSuccess ? NETRUN_OK : clblast_fail(s, batch == 1 ? "CLBlast gemm" : "CLBlast batched gemm");
}

netrun_status ocl_gemm(ocl_context *ctx, netrun_dtype dt, int trans_a, int trans_b, size_t m, size_t n, size_t k,
                       float alpha, cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb, float beta,
                       cl_mem c, size_t c_off, size_t ldc) {
    return ocl_gemm_batched(ctx, dt, trans_a, trans_b, m, n, k, alpha, a, a_off, lda, 0, b, b_off, ldb, 0, beta, c,
                            c_off, ldc, 0, 1);
}

netrun_status ocl_fill_zero(ocl_context *ctx, cl_mem mem, size_t offset, size_t bytes) {
    if (!bytes) return NETRUN_OK;
    cl_uchar zero = 0;
    cl_int e = clEnqueueFillBuffer(ctx->queue, mem, &zero, 1, offset, bytes, 0, NULL, NULL);
    return e == CL_SUCCESS ? NETRUN_OK : ocl_fail(e, "clEnqueueFillBuffer");
}

netrun_status ocl_bias_activation(ocl_context *ctx, netrun_dtype dt, cl_mem y, size_t y_off, cl_mem bias,
                                  size_t bias_off, cl_mem z, size_t z_off, size_t n, size_t c, size_t inner,
                                  const netrun_fused_activation *act) {
    int kind = act ? (int)act->kind : 0;
    if ((!bias && !z && !kind) || !n) return NETRUN_OK;
    cl_kernel k;
    netrun_status st = ocl_kernel_get(ctx, "common", ocl_src_common, ocl_float_options(dt), "bias_act", &k);
    if (st != NETRUN_OK) return st;
    ocl_arg a[] = {OCL_CLMEM(y), OCL_ULONG(y_off), OCL_CLMEM(bias ? bias : y), OCL_ULONG(bias_off),
                   OCL_INT(bias != NULL), OCL_CLMEM(z ? z : y), OCL_ULONG(z_off), OCL_INT(z != NULL), OCL_ULONG(c ? c : 1), OCL_ULONG(inner ? inner : 1), OCL_ULONG(n),
                   OCL_INT(kind), OCL_FLOAT(act ? act->alpha : 0), OCL_FLOAT(act ? act->beta : 0)};
    return ocl_launch1d(ctx, k, "bias + activation", n, OCL_NARGS(a), a);
}

netrun_status ocl_float_kernel_for(ocl_context *ctx, netrun_dtype t, const char *name, const char *source,
                                   const char *kernel, cl_kernel *out) {
    if (t != NETRUN_DTYPE_FLOAT && t != NETRUN_DTYPE_FLOAT16)
        return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl %s: dtype %s at run time (float32/float16 only)", kernel,
                               ocl_dtype_name(t));
    return ocl_kernel_get(ctx, name, source, ocl_float_options(t), kernel, out);
}

netrun_status ocl_common_kernel(ocl_context *ctx, netrun_dtype dt, const char *name, cl_kernel *out) {
    return ocl_kernel_get(ctx, "common", ocl_src_common, ocl_float_options(dt), name, out);
}
