/* CUDA kernel of ImagePreprocess (layers/preprocess.c, domain "com.netrun"): uint8 NHWC frames to float32/float16
 * NCHW, resized and normalised as include/netrun_ops.h says, in one pass: one thread per output pixel reads its
 * (up to) four source pixels and writes the three channels. The taps are the CPU kernel's
 * (backends/common/image_preprocess.h), so both sample the same coordinates. */
#include "cuda_kernels.cuh"
#include "../common/image_preprocess.h"

template <typename T>
__global__ void image_preprocess_k(const uint8_t *__restrict__ x, T *__restrict__ y, int64_t n_pix,
                                   netrun_image_preprocess_params p) {
    const int nearest = p.interpolation == NETRUN_PREP_NEAREST;
    const int64_t hw = p.out_h * p.out_w;
    GRID_LOOP(t, n_pix) {
        int64_t n = t / hw, r = t - n * hw, i = r / p.out_w, j = r - i * p.out_w;
        float v[3] = {p.pad_value, p.pad_value, p.pad_value};
        if (i >= p.box[0] && i < p.box[2] && j >= p.box[1] && j < p.box[3]) {
            nr_prep_tap ty = nr_prep_tap_at(i, p.step_y, p.off_y, p.in_h, nearest);
            nr_prep_tap tx = nr_prep_tap_at(j, p.step_x, p.off_x, p.in_w, nearest);
            const uint8_t *f = x + (size_t)n * (size_t)p.in_h * (size_t)p.in_w * (size_t)p.channels;
            const uint8_t *a = f + ((size_t)ty.i0 * (size_t)p.in_w + (size_t)tx.i0) * (size_t)p.channels;
            const uint8_t *b = f + ((size_t)ty.i0 * (size_t)p.in_w + (size_t)tx.i1) * (size_t)p.channels;
            const uint8_t *c = f + ((size_t)ty.i1 * (size_t)p.in_w + (size_t)tx.i0) * (size_t)p.channels;
            const uint8_t *d = f + ((size_t)ty.i1 * (size_t)p.in_w + (size_t)tx.i1) * (size_t)p.channels;
            for (int ch = 0; ch < 3; ch++) {
                int s = p.swap_rb ? 2 - ch : ch;
                v[ch] = nr_prep_lerp2((float)__ldg(a + s), (float)__ldg(b + s), (float)__ldg(c + s), (float)__ldg(d + s),
                                      ty.w, tx.w);
            }
        }
        for (int ch = 0; ch < 3; ch++) {
            float o = __fmul_rn(__fsub_rn(v[ch], p.mean[ch]), p.k[ch]); /* no contraction: the CPU's rounding */
            y[((size_t)n * 3 + (size_t)ch) * (size_t)hw + (size_t)r] = from_f<T>(o);
        }
    }
}

static netrun_status prep_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_image_preprocess_params *p = (const netrun_image_preprocess_params *)args->params;
    const netrun_tensor *X = &args->inputs[0], *Y = &args->outputs[0];
    if (!p || X->rank != 4 || X->dims[1] != p->in_h || X->dims[2] != p->in_w || X->dims[3] != p->channels ||
        Y->rank != 4 || Y->dims[2] != p->out_h || Y->dims[3] != p->out_w)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda ImagePreprocess: params do not match the tensors");
    int64_t n_pix = X->dims[0] * p->out_h * p->out_w;
    if (n_pix == 0) return NETRUN_OK;
    unsigned b = cuda_blocks(n_pix);
    if (p->to == NETRUN_DTYPE_FLOAT16)
        image_preprocess_k<__half><<<b, CUDA_THREADS, 0, ctx->stream>>>((const uint8_t *)X->data, (__half *)Y->data, n_pix, *p);
    else
        image_preprocess_k<float><<<b, CUDA_THREADS, 0, ctx->stream>>>((const uint8_t *)X->data, (float *)Y->data, n_pix, *p);
    return cuda_check_launch("ImagePreprocess");
}

/* Searched by find_op for the com.netrun domain, after the float16 region pass's ops (cuda_ops_internal). */
extern "C" const cuda_op cuda_ops_preprocess[] = {
    {"ImagePreprocess", CUDA_DT(UINT8), "uint8 NHWC frames (3 or 4 channels) to float32/float16 NCHW", NULL, NULL,
     prep_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
