/* Params of the vision ops (GridSample, NonMaxSuppression, RoiAlign, MaxRoiPool, MaxUnpool, AffineGrid,
 * Col2Im, CenterCropPad, DeformConv, ImageDecoder). Included by layers/vision.c and backends/cpu/vision.c;
 * meant to move into include/netrun_ops.h. */
#ifndef NETRUN_VISION_PARAMS_H
#define NETRUN_VISION_PARAMS_H

#include <stdint.h>

#include "netrun.h"
#include "netrun_ops.h"

enum { NETRUN_GS_LINEAR = 0, NETRUN_GS_NEAREST = 1, NETRUN_GS_CUBIC = 2 };
enum { NETRUN_GS_PAD_ZEROS = 0, NETRUN_GS_PAD_BORDER = 1, NETRUN_GS_PAD_REFLECTION = 2 };

/* GridSample: X [N, C, D1..Dk], grid [N, O1..Ok, k] (grid[..., 0] indexes the last spatial dim). */
typedef struct netrun_grid_sample_params {
    int mode;           /* NETRUN_GS_* */
    int padding_mode;   /* NETRUN_GS_PAD_* */
    int align_corners;
    int n_spatial;      /* k: 1..3 */
} netrun_grid_sample_params;

/* NonMaxSuppression: the thresholds are inputs 2..4, read by the kernel. */
typedef struct netrun_nms_params {
    int center_point_box;
} netrun_nms_params;

/* RoiAlign. */
typedef struct netrun_roi_align_params {
    int mode_max;       /* 0 avg, 1 max */
    int half_pixel;     /* coordinate_transformation_mode == half_pixel */
    int64_t output_height, output_width, sampling_ratio;
    float spatial_scale;
} netrun_roi_align_params;

/* MaxRoiPool. */
typedef struct netrun_max_roi_pool_params {
    int64_t pooled_h, pooled_w;
    float spatial_scale;
} netrun_max_roi_pool_params;

/* MaxUnpool: indices address the tensor of shape [N, C, inferred...]; that tensor is written at the
 * origin of the (possibly larger) output. */
typedef struct netrun_max_unpool_params {
    int n_spatial;
    int64_t kernel[NETRUN_MAX_SPATIAL];
    int64_t strides[NETRUN_MAX_SPATIAL];
    int64_t pads_begin[NETRUN_MAX_SPATIAL];
    int64_t pads_end[NETRUN_MAX_SPATIAL];
    int64_t inferred[NETRUN_MAX_SPATIAL]; /* spatial dims the indices refer to */
} netrun_max_unpool_params;

/* AffineGrid: output [N, H, W, 2] or [N, D, H, W, 3]. */
typedef struct netrun_affine_grid_params {
    int align_corners;
    int n_spatial;      /* 2 or 3 */
} netrun_affine_grid_params;

/* Col2Im: input [N, C * prod(block), L], output [N, C, image...]. */
typedef struct netrun_col2im_params {
    int n_spatial;
    int64_t image[NETRUN_MAX_RANK];
    int64_t block[NETRUN_MAX_RANK];
    int64_t dilations[NETRUN_MAX_RANK];
    int64_t pads_begin[NETRUN_MAX_RANK];
    int64_t pads_end[NETRUN_MAX_RANK];
    int64_t strides[NETRUN_MAX_RANK];
    int64_t blocks[NETRUN_MAX_RANK];  /* sliding positions per spatial dim (L = their product) */
} netrun_col2im_params;

/* CenterCropPad: out[i] = in[i + offset] along every axis (zero where that falls outside the input). */
typedef struct netrun_center_crop_pad_params {
    int rank;
    int64_t offset[NETRUN_MAX_RANK];
} netrun_center_crop_pad_params;

/* DeformConv (2-D): X [N, C, H, W], W [M, C/group, kH, kW], offset [N, og*kH*kW*2, oH, oW],
 * B [M] (optional), mask [N, og*kH*kW, oH, oW] (optional). */
typedef struct netrun_deform_conv_params {
    int64_t kernel[2], strides[2], dilations[2], pads_begin[2], pads_end[2];
    int64_t group, offset_group;
    int has_bias, has_mask;
} netrun_deform_conv_params;

/* ImageDecoder: output [H, W, 3] (RGB/BGR) or [H, W, 1] (Grayscale), uint8, shaped by the kernel. */
enum { NETRUN_PIXEL_RGB = 0, NETRUN_PIXEL_BGR = 1, NETRUN_PIXEL_GRAY = 2 };
typedef struct netrun_image_decoder_params {
    int pixel_format;
} netrun_image_decoder_params;

#endif
