/* ImagePreprocess (domain "com.netrun"): camera frames (uint8 NHWC) to a model's float NCHW input, OpenCV
 * blobFromImage's arithmetic; the formula and the resize geometry are in include/netrun_ops.h. The session's
 * preprocess.* options insert it in front of a model input (runtime/preprocess.c); a model may also use it. */
#include <math.h>
#include <string.h>

#include "layer.h"
#include "netrun_ops.h"

static netrun_status floats3(nr_layer_ctx *c, const char *name, float def, float out[3]) {
    const float *v;
    int64_t n;
    netrun_status st = nr_attr_floats(c, name, &v, &n);
    if (st != NETRUN_OK) return st;
    if (n != 0 && n != 1 && n != 3) return nr_layer_error(c, "%s takes 1 or 3 values, not %lld", name, (long long)n);
    for (int i = 0; i < 3; i++) out[i] = n == 0 ? def : v[n == 1 ? 0 : i];
    return NETRUN_OK;
}

static netrun_status prep_parse(nr_layer_ctx *c, void *params) {
    netrun_image_preprocess_params *p = params;
    const char *resize, *interp;
    int64_t swap, to;
    const int64_t *size;
    int64_t n_size;
    netrun_status st;
    if ((st = nr_attr_string(c, "resize", "stretch", &resize)) != NETRUN_OK ||
        (st = nr_attr_string(c, "interpolation", "linear", &interp)) != NETRUN_OK ||
        (st = nr_attr_int(c, "swap_rb", 0, &swap)) != NETRUN_OK || (st = nr_attr_int(c, "to", 1, &to)) != NETRUN_OK ||
        (st = nr_attr_ints(c, "size", &size, &n_size)) != NETRUN_OK ||
        (st = nr_attr_float(c, "scale", 1.0f, &p->scale)) != NETRUN_OK ||
        (st = nr_attr_float(c, "pad_value", 0.0f, &p->pad_value)) != NETRUN_OK ||
        (st = floats3(c, "mean", 0.0f, p->mean)) != NETRUN_OK || (st = floats3(c, "std", 1.0f, p->std)) != NETRUN_OK)
        return st;
    if (!strcmp(resize, "stretch")) p->resize = NETRUN_PREP_STRETCH;
    else if (!strcmp(resize, "letterbox")) p->resize = NETRUN_PREP_LETTERBOX;
    else if (!strcmp(resize, "crop")) p->resize = NETRUN_PREP_CROP;
    else if (!strcmp(resize, "none")) p->resize = NETRUN_PREP_NONE;
    else return nr_layer_error(c, "resize '%s' is not stretch, letterbox, crop or none", resize);
    if (!strcmp(interp, "linear")) p->interpolation = NETRUN_PREP_LINEAR;
    else if (!strcmp(interp, "nearest")) p->interpolation = NETRUN_PREP_NEAREST;
    else return nr_layer_error(c, "interpolation '%s' is not linear or nearest", interp);
    if (swap != 0 && swap != 1) return nr_layer_error(c, "swap_rb must be 0 or 1");
    p->swap_rb = (int)swap;
    if (to != NETRUN_DTYPE_FLOAT && to != NETRUN_DTYPE_FLOAT16)
        return nr_layer_error(c, "to must be 1 (float32) or 10 (float16), not %lld", (long long)to);
    p->to = (netrun_dtype)to;
    if (p->resize == NETRUN_PREP_NONE) {
        if (n_size) return nr_layer_error(c, "resize none takes no size (the output has the frame's size)");
    } else {
        if (n_size != 2 || size[0] < 1 || size[1] < 1 || size[0] > 65536 || size[1] > 65536)
            return nr_layer_error(c, "size must be [height, width] of 1 to 65536 each");
        p->size[0] = size[0];
        p->size[1] = size[1];
    }
    for (int i = 0; i < 3; i++) {
        if (!(p->std[i] != 0.0f) || !isfinite(p->std[i])) return nr_layer_error(c, "std[%d] must be finite and not 0", i);
        if (!isfinite(p->mean[i])) return nr_layer_error(c, "mean[%d] must be finite", i);
    }
    if (!isfinite(p->scale) || !isfinite(p->pad_value)) return nr_layer_error(c, "scale and pad_value must be finite");
    return NETRUN_OK;
}

static netrun_status prep_infer(nr_layer_ctx *c, void *params) {
    netrun_image_preprocess_params *p = params;
    if (nr_in_count(c) != 1 || !nr_in_present(c, 0)) return nr_layer_error(c, "needs one input (the frames)");
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->dtype != NETRUN_DTYPE_UINT8)
        return nr_layer_error(c, "the frames must be uint8 [N, H, W, C], not %s", netrun_dtype_name(x->dtype));
    if (x->rank != 4) return nr_layer_error(c, "the frames must be uint8 [N, H, W, C] (rank 4), not rank %d", x->rank);
    if (x->dims[3] != 3 && x->dims[3] != 4)
        return nr_layer_error(c, "the frames have %lld channels (last dim of [N, H, W, C]); 3 (RGB, BGR) or 4 (RGBA, "
                              "BGRA) are taken", (long long)x->dims[3]);
    int64_t H = x->dims[1], W = x->dims[2];
    if (H < 1 || W < 1) return nr_layer_error(c, "empty frames (%lldx%lld)", (long long)W, (long long)H);
    p->in_h = H, p->in_w = W, p->channels = x->dims[3];
    int64_t h = p->resize == NETRUN_PREP_NONE ? H : p->size[0], w = p->resize == NETRUN_PREP_NONE ? W : p->size[1];
    p->out_h = h, p->out_w = w;
    p->box[0] = 0, p->box[1] = 0, p->box[2] = h, p->box[3] = w;
    p->off_y = p->off_x = 0.0;
    switch (p->resize) {
    case NETRUN_PREP_LETTERBOX: {
        double f = fmin((double)h / (double)H, (double)w / (double)W);
        int64_t rh = (int64_t)nearbyint((double)H * f), rw = (int64_t)nearbyint((double)W * f);
        rh = rh < 1 ? 1 : rh > h ? h : rh;
        rw = rw < 1 ? 1 : rw > w ? w : rw;
        p->box[0] = (h - rh) / 2, p->box[1] = (w - rw) / 2, p->box[2] = p->box[0] + rh, p->box[3] = p->box[1] + rw;
        p->step_y = (double)H / (double)rh, p->step_x = (double)W / (double)rw;
        p->off_y = -(double)p->box[0], p->off_x = -(double)p->box[1];
        break;
    }
    case NETRUN_PREP_CROP: { /* blobFromImage crop=true: the factor in float32, cv::resize by it, centre crop */
        float f = fmaxf((float)w / (float)W, (float)h / (float)H);
        int64_t rh = (int64_t)nearbyint((double)H * (double)f), rw = (int64_t)nearbyint((double)W * (double)f);
        if (rh < h) rh = h;
        if (rw < w) rw = w;
        p->step_y = p->step_x = 1.0 / (double)f;
        p->off_y = (double)((rh - h) / 2), p->off_x = (double)((rw - w) / 2);
        break;
    }
    case NETRUN_PREP_NONE: p->step_y = p->step_x = 1.0; break;
    default: p->step_y = (double)H / (double)h, p->step_x = (double)W / (double)w; break;
    }
    for (int i = 0; i < 3; i++) p->k[i] = p->scale / p->std[i];
    int64_t dims[4] = {x->dims[0], 3, h, w};
    nr_out_set(c, 0, p->to, 4, dims);
    return NETRUN_OK;
}

const nr_layer nr_layers_preprocess[] = {
    {"ImagePreprocess", "com.netrun", 1, sizeof(netrun_image_preprocess_params), prep_parse, prep_infer, 0},
    {0},
};
