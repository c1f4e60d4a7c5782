/* Op family: signal (definitions: attribute parsing, validation, shape inference).
 * DFT (opset 17: axis attribute; 20: axis input), STFT, HannWindow, HammingWindow, BlackmanWindow and
 * MelWeightMatrix. Lengths that come from inputs (dft_length, window size...) are needed for the output
 * shape, so infer asks for their values (NR_STATUS_NEED_VALUE defers the node to run time). */
#include <string.h>

#include "layer.h"
#include "netrun_ops.h"

#define MAX_SIGNAL_LEN ((int64_t)1 << 40) /* far beyond any real transform; keeps sizes from overflowing */

/* Read a scalar integer input (one element) into *v. */
static netrun_status scalar_int(nr_layer_ctx *c, int i, const char *what, int64_t *v) {
    netrun_status st = nr_check_dtype(c, i, NR_DTYPES_INDEX);
    if (st != NETRUN_OK) return st;
    int64_t n = 0;
    st = nr_in_ints(c, i, v, 1, &n);
    if (st != NETRUN_OK) return st;
    if (n != 1) return nr_layer_error(c, "input '%s' must hold one value, got %lld", what, (long long)n);
    return NETRUN_OK;
}

static int dtype_is_window_output(int64_t t) {
    switch (t) {
    case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_UINT16: case NETRUN_DTYPE_UINT32: case NETRUN_DTYPE_UINT64:
    case NETRUN_DTYPE_INT8: case NETRUN_DTYPE_INT16: case NETRUN_DTYPE_INT32: case NETRUN_DTYPE_INT64:
    case NETRUN_DTYPE_FLOAT16: case NETRUN_DTYPE_FLOAT: case NETRUN_DTYPE_DOUBLE: case NETRUN_DTYPE_BFLOAT16:
        return 1;
    default: return 0;
    }
}

/* ---- DFT ---- */

static netrun_status dft_parse(nr_layer_ctx *c, void *params) {
    netrun_dft_params *p = params;
    int64_t inverse, onesided, axis = 1;
    netrun_status st = nr_attr_int(c, "inverse", 0, &inverse);
    if (st == NETRUN_OK) st = nr_attr_int(c, "onesided", 0, &onesided);
    if (st == NETRUN_OK && nr_opset(c) < 20) st = nr_attr_int(c, "axis", 1, &axis);
    if (st != NETRUN_OK) return st;
    if (axis < -NETRUN_MAX_RANK || axis >= NETRUN_MAX_RANK)
        return nr_layer_error(c, "attribute 'axis' = %lld is out of range", (long long)axis);
    p->inverse = inverse != 0;
    p->onesided = onesided != 0;
    p->axis = (int)axis; /* opset >= 20: replaced by input 2 in infer */
    return NETRUN_OK;
}

static netrun_status dft_infer(nr_layer_ctx *c, void *params) {
    netrun_dft_params *p = params;
    netrun_status st = nr_check_dtype(c, 0, NR_DTYPES_FLOAT);
    if (st != NETRUN_OK) return st;
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->rank < 2) return nr_layer_error(c, "input must have rank >= 2 ([..., n, 1 or 2]), got %d", x->rank);
    int64_t comp = x->dims[x->rank - 1];
    if (comp != 1 && comp != 2)
        return nr_layer_error(c, "last dim of the input must be 1 (real) or 2 (complex), got %lld", (long long)comp);
    int64_t axis = p->axis;
    if (nr_opset(c) >= 20) {
        axis = -2;
        if (nr_in_count(c) > 2 && nr_in_present(c, 2)) {
            st = scalar_int(c, 2, "axis", &axis);
            if (st != NETRUN_OK) return st;
        }
    }
    if (axis < -x->rank || axis >= x->rank)
        return nr_layer_error(c, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    if (axis < 0) axis += x->rank;
    if (axis == x->rank - 1)
        return nr_layer_error(c, "axis %lld is the real/imaginary dim; it must be another dim", (long long)axis);
    int64_t n = x->dims[axis], len;
    if (nr_in_count(c) > 1 && nr_in_present(c, 1)) {
        st = scalar_int(c, 1, "dft_length", &len);
        if (st != NETRUN_OK) return st;
    } else {
        len = p->inverse && p->onesided ? 2 * (n - 1) : n;
    }
    if (len < 1 || len > MAX_SIGNAL_LEN)
        return nr_layer_error(c, "dft_length %lld is out of range (must be >= 1)", (long long)len);
    p->axis = (int)axis;
    p->dft_length = len;
    int64_t dims[NETRUN_MAX_RANK];
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    dims[axis] = p->onesided && !p->inverse ? len / 2 + 1 : len;
    dims[x->rank - 1] = p->onesided && p->inverse ? 1 : 2;
    nr_out_set(c, 0, x->dtype, x->rank, dims);
    return NETRUN_OK;
}

/* ---- STFT ---- */

static netrun_status stft_parse(nr_layer_ctx *c, void *params) {
    netrun_stft_params *p = params;
    int64_t onesided;
    netrun_status st = nr_attr_int(c, "onesided", 1, &onesided);
    if (st != NETRUN_OK) return st;
    p->onesided = onesided != 0;
    return NETRUN_OK;
}

static netrun_status stft_infer(nr_layer_ctx *c, void *params) {
    netrun_stft_params *p = params;
    netrun_status st = nr_check_dtype(c, 0, NR_DTYPES_FLOAT);
    if (st != NETRUN_OK) return st;
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
        return nr_layer_error(c, "signal must be [batch, length, 1 or 2], got rank %d", x->rank);
    int64_t step, flen = -1;
    st = scalar_int(c, 1, "frame_step", &step);
    if (st != NETRUN_OK) return st;
    if (step < 1) return nr_layer_error(c, "frame_step must be >= 1, got %lld", (long long)step);
    p->has_window = nr_in_count(c) > 2 && nr_in_present(c, 2);
    if (p->has_window) {
        const netrun_value_desc *w = nr_in(c, 2);
        if (w->rank != 1) return nr_layer_error(c, "window must be 1-D, got rank %d", w->rank);
        st = nr_check_same_dtype(c, 0, 2);
        if (st != NETRUN_OK) return st;
        flen = w->dims[0];
    }
    if (nr_in_count(c) > 3 && nr_in_present(c, 3)) {
        int64_t fl;
        st = scalar_int(c, 3, "frame_length", &fl);
        if (st != NETRUN_OK) return st;
        if (flen >= 0 && fl != flen)
            return nr_layer_error(c, "frame_length %lld differs from the window length %lld", (long long)fl,
                                  (long long)flen);
        flen = fl;
    }
    if (flen < 0) flen = x->dims[1]; /* neither window nor frame_length: one frame of the whole signal */
    if (flen < 1 || flen > x->dims[1])
        return nr_layer_error(c, "frame_length %lld must be in [1, signal length %lld]", (long long)flen,
                              (long long)x->dims[1]);
    p->frame_step = step;
    p->frame_length = flen;
    p->n_frames = 1 + (x->dims[1] - flen) / step;
    int64_t dims[4] = {x->dims[0], p->n_frames, p->onesided ? flen / 2 + 1 : flen, 2};
    nr_out_set(c, 0, x->dtype, 4, dims);
    return NETRUN_OK;
}

/* ---- windows ---- */

static netrun_status window_parse(nr_layer_ctx *c, void *params) {
    netrun_window_params *p = params;
    int64_t periodic = 1, dt;
    netrun_status st = nr_attr_int(c, "periodic", 1, &periodic);
    if (st == NETRUN_OK) st = nr_attr_int(c, "output_datatype", NETRUN_DTYPE_FLOAT, &dt);
    if (st != NETRUN_OK) return st;
    if (!dtype_is_window_output(dt))
        return nr_layer_error(c, "attribute 'output_datatype' = %lld is not a supported numeric type", (long long)dt);
    p->periodic = periodic != 0;
    p->output_datatype = (int)dt;
    return NETRUN_OK;
}

static netrun_status window_infer(nr_layer_ctx *c, void *params) {
    netrun_window_params *p = params;
    int64_t size;
    netrun_status st = scalar_int(c, 0, "size", &size);
    if (st != NETRUN_OK) return st;
    if (size < 0 || size > MAX_SIGNAL_LEN)
        return nr_layer_error(c, "window size %lld is out of range", (long long)size);
    nr_out_set(c, 0, (netrun_dtype)p->output_datatype, 1, &size);
    return NETRUN_OK;
}

static netrun_status mel_infer(nr_layer_ctx *c, void *params) {
    netrun_window_params *p = params;
    int64_t bins, len;
    netrun_status st = scalar_int(c, 0, "num_mel_bins", &bins);
    if (st == NETRUN_OK) st = scalar_int(c, 1, "dft_length", &len);
    if (st == NETRUN_OK) st = nr_check_dtype(c, 2, NR_DTYPES_INDEX);
    if (st == NETRUN_OK) st = nr_check_dtype(c, 3, NR_DTYPES_FLOAT);
    if (st == NETRUN_OK) st = nr_check_dtype(c, 4, NR_DTYPES_FLOAT);
    if (st != NETRUN_OK) return st;
    if (bins < 1 || bins > MAX_SIGNAL_LEN)
        return nr_layer_error(c, "num_mel_bins %lld must be >= 1", (long long)bins);
    if (len < 1 || len > MAX_SIGNAL_LEN) return nr_layer_error(c, "dft_length %lld must be >= 1", (long long)len);
    for (int i = 2; i < 5; i++)
        if (nr_in(c, i)->rank > 1 || (nr_in(c, i)->rank == 1 && nr_in(c, i)->dims[0] != 1))
            return nr_layer_error(c, "input %d must be a scalar", i);
    int64_t dims[2] = {len / 2 + 1, bins};
    nr_out_set(c, 0, (netrun_dtype)p->output_datatype, 2, dims);
    return NETRUN_OK;
}

const nr_layer nr_layers_signal[] = {
    {"DFT", "", 17, sizeof(netrun_dft_params), dft_parse, dft_infer, 0},
    {"STFT", "", 17, sizeof(netrun_stft_params), stft_parse, stft_infer, 0},
    {"HannWindow", "", 17, sizeof(netrun_window_params), window_parse, window_infer, 0},
    {"HammingWindow", "", 17, sizeof(netrun_window_params), window_parse, window_infer, 0},
    {"BlackmanWindow", "", 17, sizeof(netrun_window_params), window_parse, window_infer, 0},
    {"MelWeightMatrix", "", 17, sizeof(netrun_window_params), window_parse, mel_infer, 0},
    {0},
};
