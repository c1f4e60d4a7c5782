/* LayerNormalization, SimplifiedLayerNormalization (RMS) and their Skip forms on host memory: every row of N
 * normalized elements (the dims from axis on) is normalized in float with double sums. Skip forms first add
 * skip (broadcast over leading dims) and the bias, and may output that sum. */
#include <math.h>

#include "contrib.h"

/* The rows, for one element type (f16 is a constant where it is called: no test per element). */
static inline void norm_rows(int f16, int rms, size_t rows, size_t cols, float epsilon, const void *xd,
                             const void *skipd, size_t skip_n, const void *biasd, const void *scaled, const void *betad,
                             void *yd, void *sumd, float *mean, float *inv) {
    for (size_t r = 0; r < rows; r++) {
        size_t base = r * cols;
        size_t skip_base = skipd && skip_n ? base % skip_n : 0; /* skip's rows repeat over the leading dims */
        /* the row's values (with skip and bias) are read again in each pass: no row buffer, and two passes
         * for the variance keep it exact where the mean is large */
#define VALUE(j) (nrc_load(xd, f16, base + (j)) + (skipd ? nrc_load(skipd, f16, skip_base + (j)) : 0.0f) + \
                  (biasd ? nrc_load(biasd, f16, (j)) : 0.0f))
        double s = 0.0;
        for (size_t j = 0; j < cols; j++) {
            float v = VALUE(j);
            if (sumd) nrc_store(sumd, f16, base + j, v);
            s += v;
        }
        double mu = rms ? 0.0 : s / (double)cols, sq = 0.0;
        for (size_t j = 0; j < cols; j++) {
            double d = (double)VALUE(j) - mu;
            sq += d * d;
        }
        float inv_std = (float)(1.0 / sqrt(sq / (double)cols + (double)epsilon)), fmu = (float)mu;
        for (size_t j = 0; j < cols; j++) {
            float o = (VALUE(j) - fmu) * inv_std * nrc_load(scaled, f16, j);
            if (betad) o += nrc_load(betad, f16, j);
            nrc_store(yd, f16, base + j, o);
        }
#undef VALUE
        if (mean) mean[r] = fmu;
        if (inv) inv[r] = inv_std;
    }
}

netrun_status nrc_run_norm(nrc_op op, const nrc_norm_params *p, const netrun_kernel_args *a) {
    const netrun_tensor *x = &a->inputs[0];
    int f16 = x->dtype == NETRUN_DTYPE_FLOAT16, skip_form = op == NRC_SKIP_LAYER_NORM || op == NRC_SKIP_SIMPLIFIED_LAYER_NORM;
    int rms = op == NRC_SIMPLIFIED_LAYER_NORM || op == NRC_SKIP_SIMPLIFIED_LAYER_NORM;
    size_t es = f16 ? 2 : 4, n = x->nbytes / es, cols = 1;
    if (p->axis < 0 || p->axis >= x->rank)
        return nrc_host->error(NETRUN_ERR_INTERNAL, NRC_NAME ": axis %d for a tensor of rank %d", (int)p->axis, x->rank);
    size_t rows = 1;
    for (int d = 0; d < x->rank; d++) {
        if (d < p->axis) rows *= (size_t)x->dims[d];
        else cols *= (size_t)x->dims[d];
    }
    /* no rows: nothing to write. Rows of no elements still have statistics (mean 0/0 and inv_std NaN, as numpy
     * gives them), written by norm_rows: they were left unwritten (found by the fuzz sweep) */
    if (!rows) return NETRUN_OK;
#define INPUT(i) (a->n_inputs > (i) && a->inputs[i].rank >= 0 ? &a->inputs[i] : NULL)
    /* inputs: LayerNorm (X, scale, B?), Simplified (X, scale), SkipLayerNorm (x, skip, gamma, beta?, bias?),
     * SkipSimplified (x, skip, gamma, bias?) */
    const netrun_tensor *skip = skip_form ? INPUT(1) : NULL, *scale = INPUT(skip_form ? 2 : 1);
    const netrun_tensor *beta = rms ? NULL : INPUT(skip_form ? 3 : 2);
    const netrun_tensor *bias = op == NRC_SKIP_LAYER_NORM ? INPUT(4) : op == NRC_SKIP_SIMPLIFIED_LAYER_NORM ? INPUT(3) : NULL;
#undef INPUT
    size_t skip_n = skip ? skip->nbytes / es : 0;
    if (!scale || scale->nbytes / es != cols || (beta && beta->nbytes / es != cols) ||
        (bias && bias->nbytes / es != cols) || (skip && cols && (!skip_n || n % skip_n || skip_n % cols)))
        return nrc_host->error(NETRUN_ERR_INTERNAL, NRC_NAME ": scale, bias or skip do not fit %zu rows of %zu", rows,
                               cols);
    /* outputs: Y; then LayerNorm (mean, inv_std), Simplified (inv_std), Skip forms (mean, inv_std, sum) */
    netrun_tensor *y = &a->outputs[0], *mean = NULL, *inv = NULL, *sum = NULL;
#define OUTPUT(i) (a->n_outputs > (i) && a->outputs[i].data ? &a->outputs[i] : NULL)
    if (op == NRC_SIMPLIFIED_LAYER_NORM) inv = OUTPUT(1);
    else mean = OUTPUT(1), inv = OUTPUT(2);
    if (skip_form) sum = OUTPUT(3);
#undef OUTPUT
    if (y->nbytes != x->nbytes || (sum && sum->nbytes != x->nbytes) || (mean && mean->nbytes < rows * 4) ||
        (inv && inv->nbytes < rows * 4))
        return nrc_host->error(NETRUN_ERR_INTERNAL, NRC_NAME ": outputs do not fit %zu rows of %zu", rows, cols);
    float *mean_p = mean ? mean->data : NULL, *inv_p = inv ? inv->data : NULL;
    const void *sk = skip ? skip->data : NULL, *bi = bias ? bias->data : NULL, *be = beta ? beta->data : NULL;
    void *su = sum ? sum->data : NULL;
    if (f16) norm_rows(1, rms, rows, cols, p->epsilon, x->data, sk, skip_n, bi, scale->data, be, y->data, su, mean_p, inv_p);
    else norm_rows(0, rms, rows, cols, p->epsilon, x->data, sk, skip_n, bi, scale->data, be, y->data, su, mean_p, inv_p);
    return NETRUN_OK;
}
