/* Params of the signal family (DFT, STFT, windows, MelWeightMatrix); to move into netrun_ops.h later. */
#ifndef NR_SIGNAL_PARAMS_H
#define NR_SIGNAL_PARAMS_H

#include <stdint.h>

/* DFT: transform along `axis` of an input [..., n, ..., 1 or 2] (real or interleaved complex). */
typedef struct netrun_dft_params {
    int axis;            /* non-negative, never the last (real/imag) dim */
    int64_t dft_length;  /* transform length (input zero-padded or truncated to it) */
    int inverse;         /* inverse transform, scaled by 1/dft_length */
    int onesided;        /* forward: keep dft_length/2+1 bins; inverse: Hermitian input, real output */
} netrun_dft_params;

/* STFT of a signal [batch, length, 1 or 2] into [batch, frames, bins, 2]. */
typedef struct netrun_stft_params {
    int64_t frame_step, frame_length, n_frames;
    int onesided;
    int has_window;      /* input 2 present (length frame_length) */
} netrun_stft_params;

/* HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix. */
typedef struct netrun_window_params {
    int periodic;
    int output_datatype; /* netrun_dtype of the output */
} netrun_window_params;

#endif
