/* --image NAME=FILE: decode with stb_image (Debian libstb-dev), resize with stb_image_resize, optional center
 * crop (OpenCV blobFromImage's crop=true), mean/scale, RGB->BGR, NCHW or NHWC, copied over the batch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#ifdef NETRUN_CLI_HAVE_STB
#include <stb/stb_image.h>
#include <stb/stb_image_resize.h>

int cli_image_supported(void)
{
    return 1;
}

static int fixed_dim(const netrun_tensor_info *ti, int d)
{
    if (!ti->dims || (ti->dim_names && ti->dim_names[d]) || ti->dims[d] <= 0 || ti->dims[d] > 65536)
        return 0;
    return (int)ti->dims[d];
}

static int is_channels(int c)
{
    return c == 1 || c == 3 || c == 4;
}

int cli_image_load(const cli_opts *o, const netrun_tensor_info *ti, const char *path, int64_t batch,
                   cli_image *out)
{
    memset(out, 0, sizeof(*out));
    if (ti->rank != 4) {
        cli_error("--image %s: the input has rank %d; images fill rank-4 inputs (NCHW or NHWC)", ti->name,
                  ti->rank);
        return CLI_EXIT_USAGE;
    }
    if (ti->dtype != NETRUN_DTYPE_FLOAT && ti->dtype != NETRUN_DTYPE_UINT8 && ti->dtype != NETRUN_DTYPE_DOUBLE) {
        cli_error("--image %s: the input is %s; images fill float32, float64 or uint8 inputs", ti->name,
                  netrun_dtype_name(ti->dtype));
        return CLI_EXIT_USAGE;
    }
    int layout = o->layout;
    if (layout == CLI_LAYOUT_AUTO) {
        /* Where a fixed 1/3/4 sits tells the layout; NCHW is the ONNX habit when nothing does. */
        if (is_channels(fixed_dim(ti, 1)))
            layout = CLI_LAYOUT_NCHW;
        else if (is_channels(fixed_dim(ti, 3)))
            layout = CLI_LAYOUT_NHWC;
        else
            layout = CLI_LAYOUT_NCHW;
    }
    int cd = layout == CLI_LAYOUT_NCHW ? 1 : 3, hd = layout == CLI_LAYOUT_NCHW ? 2 : 1, wd = hd + 1;
    int C = fixed_dim(ti, cd);
    if (C == 0)
        C = 3;
    if (!is_channels(C)) {
        cli_error("--image %s: dimension %d (channels in %s) is %d; images have 1, 3 or 4 channels", ti->name, cd,
                  layout == CLI_LAYOUT_NCHW ? "NCHW" : "NHWC", C);
        return CLI_EXIT_USAGE;
    }
    int W = o->size_w, H = o->size_h;
    int mw = fixed_dim(ti, wd), mh = fixed_dim(ti, hd);
    if (!W) {
        W = mw;
        H = mh;
    }
    if (!W || !H) {
        cli_error("--image %s: the input's height and width are not fixed: give --size WxH", ti->name);
        return CLI_EXIT_USAGE;
    }
    if ((mw && mw != W) || (mh && mh != H)) {
        cli_error("--image %s: --size %dx%d but the input is fixed at %dx%d (WxH)", ti->name, W, H, mw, mh);
        return CLI_EXIT_USAGE;
    }

    int w, h, comp;
    unsigned char *px = stbi_load(path, &w, &h, &comp, C);
    if (!px) {
        cli_error("--image %s: cannot decode %s: %s", ti->name, path, stbi_failure_reason());
        return CLI_EXIT_USAGE;
    }
    /* Resize to cover W x H keeping the aspect (crop) or to exactly W x H (stretch). */
    int rw = W, rh = H;
    if (o->crop) {
        double f = fmax((double)W / w, (double)H / h);
        rw = (int)lround(w * f);
        rh = (int)lround(h * f);
        if (rw < W)
            rw = W;
        if (rh < H)
            rh = H;
    }
    unsigned char *rs = px;
    if (rw != w || rh != h) {
        size_t n = (size_t)rw * (size_t)rh * (size_t)C;
        rs = malloc(n);
        if (!rs || !stbir_resize_uint8(px, w, h, 0, rs, rw, rh, 0, C)) {
            free(rs);
            stbi_image_free(px);
            cli_error("--image %s: cannot resize %s from %dx%d to %dx%d", ti->name, path, w, h, rw, rh);
            return CLI_EXIT_RUNTIME;
        }
    }
    int x0 = (rw - W) / 2, y0 = (rh - H) / 2;

    size_t es = netrun_dtype_size(ti->dtype), per = (size_t)W * (size_t)H * (size_t)C;
    if (batch < 1 || (uint64_t)batch > SIZE_MAX / per / es) {
        if (rs != px)
            free(rs);
        stbi_image_free(px);
        cli_error("--image %s: batch %lld too large", ti->name, (long long)batch);
        return CLI_EXIT_USAGE;
    }
    out->nbytes = (size_t)batch * per * es;
    out->data = malloc(out->nbytes);
    if (!out->data) {
        if (rs != px)
            free(rs);
        stbi_image_free(px);
        cli_error("out of memory for image input '%s'", ti->name);
        return CLI_EXIT_RUNTIME;
    }
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < C; c++) {
                /* --swap-rb feeds B,G,R: channel c of the tensor reads channel 2-c of the RGB pixel. */
                int src = o->swap_rb && C >= 3 && c < 3 ? 2 - c : c;
                double v = rs[((size_t)(y + y0) * (size_t)rw + (size_t)(x + x0)) * (size_t)C + (size_t)src];
                double mean = C == 1 ? o->mean[0] : c < 3 ? o->mean[c] : 0.0;
                v = (v - mean) * o->scale;
                size_t idx = layout == CLI_LAYOUT_NCHW ? ((size_t)c * H + (size_t)y) * W + (size_t)x
                                                       : ((size_t)y * W + (size_t)x) * C + (size_t)c;
                if (ti->dtype == NETRUN_DTYPE_FLOAT) {
                    ((float *)out->data)[idx] = (float)v;
                } else if (ti->dtype == NETRUN_DTYPE_DOUBLE) {
                    ((double *)out->data)[idx] = v;
                } else {
                    double r = nearbyint(v);
                    ((uint8_t *)out->data)[idx] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
                }
            }
    for (int64_t b = 1; b < batch; b++)
        memcpy((char *)out->data + (size_t)b * per * es, out->data, per * es);
    if (rs != px)
        free(rs);
    stbi_image_free(px);
    out->dtype = ti->dtype;
    out->rank = 4;
    out->dims[0] = batch;
    out->dims[cd] = C;
    out->dims[hd] = H;
    out->dims[wd] = W;
    return 0;
}

/* --device-preprocess: the decoded RGB pixels as uint8 [batch, h, w, 3] frames, not resized; the session's
 * ImagePreprocess node (preprocess.* options set from --size, --crop, --mean, --scale, --swap-rb) converts them. */
int cli_image_load_frame(const cli_opts *o, const netrun_tensor_info *ti, const char *path, int64_t batch,
                         cli_image *out)
{
    (void)o;
    memset(out, 0, sizeof(*out));
    int w, h, comp;
    unsigned char *px = stbi_load(path, &w, &h, &comp, 3);
    if (!px) {
        cli_error("--image %s: cannot decode %s: %s", ti->name, path, stbi_failure_reason());
        return CLI_EXIT_USAGE;
    }
    size_t per = (size_t)w * (size_t)h * 3;
    if (batch < 1 || (uint64_t)batch > SIZE_MAX / per) {
        stbi_image_free(px);
        cli_error("--image %s: batch %lld too large", ti->name, (long long)batch);
        return CLI_EXIT_USAGE;
    }
    out->nbytes = (size_t)batch * per;
    out->data = malloc(out->nbytes);
    if (!out->data) {
        stbi_image_free(px);
        cli_error("out of memory for image input '%s'", ti->name);
        return CLI_EXIT_RUNTIME;
    }
    for (int64_t b = 0; b < batch; b++)
        memcpy((char *)out->data + (size_t)b * per, px, per);
    stbi_image_free(px);
    out->dtype = NETRUN_DTYPE_UINT8;
    out->rank = 4;
    out->dims[0] = batch;
    out->dims[1] = h;
    out->dims[2] = w;
    out->dims[3] = 3;
    return 0;
}

#else

int cli_image_load_frame(const cli_opts *o, const netrun_tensor_info *ti, const char *path, int64_t batch,
                         cli_image *out)
{
    return cli_image_load(o, ti, path, batch, out);
}

int cli_image_supported(void)
{
    return 0;
}

int cli_image_load(const cli_opts *o, const netrun_tensor_info *ti, const char *path, int64_t batch,
                   cli_image *out)
{
    (void)o;
    (void)path;
    (void)batch;
    memset(out, 0, sizeof(*out));
    cli_error("--image %s: this netrun was built without stb_image (install libstb-dev and rebuild)", ti->name);
    return CLI_EXIT_USAGE;
}

#endif
