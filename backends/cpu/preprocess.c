/* ImagePreprocess (layers/preprocess.c, domain "com.netrun"): uint8 NHWC frames to float32/float16 NCHW, resized and
 * normalised as include/netrun_ops.h says. One task per output row; the column taps are computed once per run
 * (backends/common/image_preprocess.h, the code the CUDA kernel uses). */
#include "cpu_internal.h"
#include "../common/image_preprocess.h"

typedef struct prep_job {
    const netrun_image_preprocess_params *p;
    const uint8_t *x;
    void *y;
    const nr_prep_tap *tx;
} prep_job;

static void prep_rows(void *arg, int64_t begin, int64_t end) {
    const prep_job *j = arg;
    const netrun_image_preprocess_params *p = j->p;
    const int64_t H = p->in_h, W = p->in_w, C = p->channels, h = p->out_h, w = p->out_w;
    const int nearest = p->interpolation == NETRUN_PREP_NEAREST;
    for (int64_t r = begin; r < end; r++) { /* r = n * h + i */
        int64_t n = r / h, i = r % h;
        int inside_y = i >= p->box[0] && i < p->box[2];
        nr_prep_tap ty = nr_prep_tap_at(i, p->step_y, p->off_y, H, nearest);
        const uint8_t *row0 = j->x + ((size_t)n * (size_t)H + (size_t)ty.i0) * (size_t)W * (size_t)C;
        const uint8_t *row1 = j->x + ((size_t)n * (size_t)H + (size_t)ty.i1) * (size_t)W * (size_t)C;
        for (int c = 0; c < 3; c++) {
            int src = p->swap_rb ? 2 - c : c;
            float mean = p->mean[c], k = p->k[c];
            size_t o = (((size_t)n * 3 + (size_t)c) * (size_t)h + (size_t)i) * (size_t)w;
            for (int64_t jx = 0; jx < w; jx++) {
                float v = p->pad_value;
                if (inside_y && jx >= p->box[1] && jx < p->box[3]) {
                    const nr_prep_tap *tx = &j->tx[jx];
                    size_t a = (size_t)tx->i0 * (size_t)C + (size_t)src, b = (size_t)tx->i1 * (size_t)C + (size_t)src;
                    v = nr_prep_lerp2(row0[a], row0[b], row1[a], row1[b], ty.w, tx->w);
                }
                float out = (v - mean) * k;
                if (p->to == NETRUN_DTYPE_FLOAT16) ((uint16_t *)j->y)[o + (size_t)jx] = cpu_float_to_half(out);
                else ((float *)j->y)[o + (size_t)jx] = out;
            }
        }
    }
}

static netrun_status run_image_preprocess(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_image_preprocess_params *p = args->params;
    const netrun_tensor *X = &args->inputs[0], *Y = &args->outputs[0];
    if (!p || X->rank != 4 || X->dims[1] != p->in_h || X->dims[2] != p->in_w || X->dims[3] != p->channels ||
        Y->rank != 4 || Y->dims[2] != p->out_h || Y->dims[3] != p->out_w)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "ImagePreprocess: params do not match the tensors");
    if (cpu_count(Y) == 0) return NETRUN_OK;
    nr_prep_tap *tx = cpu_alloc((size_t)p->out_w * sizeof *tx);
    if (!tx) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "ImagePreprocess: out of memory");
    for (int64_t jx = 0; jx < p->out_w; jx++)
        tx[jx] = nr_prep_tap_at(jx, p->step_x, p->off_x, p->in_w, p->interpolation == NETRUN_PREP_NEAREST);
    prep_job j = {p, X->data, Y->data, tx};
    cpu_parallel_for(ctx, X->dims[0] * p->out_h, 1 + 4096 / (3 * p->out_w + 1), prep_rows, &j);
    cpu_free(tx);
    return NETRUN_OK;
}

const cpu_op cpu_ops_preprocess[] = {
    {"ImagePreprocess", "com.netrun", NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT8),
     "uint8 NHWC frames (3 or 4 channels) to float32/float16 NCHW", NULL, NULL, run_image_preprocess, NULL},
    {0},
};
