/* Helpers shared by the conv, gemm, norm and pool CPU kernels: fused activations, float staging of
 * float16/bfloat16 tensors, checked sizes, and a static split of work over the pool's threads. */
#ifndef CPU_GEMM_UTIL_H
#define CPU_GEMM_UTIL_H

#include <stdint.h>

#include "cpu_internal.h"

/* OpenBLAS runs single-threaded: netrun's pool splits the work so --threads is honoured exactly. */
void openblas_set_num_threads(int);
void gu_blas_single_thread(void);

static inline float gu_act(float x, const netrun_fused_activation *a) {
    switch (a->kind) {
    case NETRUN_ACT_NONE: return x;
    case NETRUN_ACT_RELU: return x > 0 ? x : 0.0f;
    case NETRUN_ACT_LEAKY_RELU: return x < 0 ? a->alpha * x : x;
    case NETRUN_ACT_CLIP: return x < a->alpha ? a->alpha : (x > a->beta ? a->beta : x);
    case NETRUN_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case NETRUN_ACT_HARD_SIGMOID: {
        float v = a->alpha * x + a->beta;
        return v < 0 ? 0.0f : (v > 1 ? 1.0f : v);
    }
    case NETRUN_ACT_HARD_SWISH: {
        float v = x / 6.0f + 0.5f;
        return x * (v < 0 ? 0.0f : (v > 1 ? 1.0f : v));
    }
    case NETRUN_ACT_TANH: return cpu_tanhf(x);
    case NETRUN_ACT_AFFINE: return a->alpha * x + a->beta;
    case NETRUN_ACT_THRESHOLDED_RELU: return x > a->alpha ? x : 0.0f;
    case NETRUN_ACT_SCALED_TANH: return a->alpha * cpu_tanhf(a->beta * x);
    case NETRUN_ACT_ELU: return x < 0 ? a->alpha * (expf(x) - 1.0f) : x;
    case NETRUN_ACT_SOFTSIGN: return x / (1.0f + fabsf(x));
    case NETRUN_ACT_SOFTPLUS: return x > 20.0f ? x : log1pf(expf(x));
    case NETRUN_ACT_SWISH: return x / (1.0f + expf(-a->alpha * x));
    case NETRUN_ACT_GELU_TANH: /* MatMulBias only (gu_act_known stops before it); gu_act_n runs the Gelu loop */
        return 0.5f * x * (1.0f + cpu_tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    }
    return x;
}

/* The activations gu_act knows (a fused kind beyond these must be refused in supports()). */
static inline int gu_act_known(const netrun_fused_activation *a) {
    return (int)a->kind >= (int)NETRUN_ACT_NONE && (int)a->kind <= (int)NETRUN_ACT_SWISH;
}

/* y = v * sigmoid(alpha * v), v = y + bias; y = sigmoid(y): float loops built for AVX-512 / AVX2 / baseline,
 * picked at load (gemm_util.c). */
void gu_swish_n(float *y, int64_t n, float bias, float alpha);
void gu_sigmoid_n(float *y, int64_t n);

/* y[r] = alpha * (W[r, :] . x) + (beta != 0 ? beta * y[r] : 0) for r < rows; W row-major with row stride ldw,
 * x contiguous. A matrix-vector product reads each weight once, so it runs at the speed weights come from
 * memory (a classifier's 5 MB is not in cache at the end of a run): the AVX-512 form prefetches rows ahead
 * into L2, OpenBLAS's sgemv elsewhere. */
void gu_gemv(int64_t rows, int64_t k, float alpha, const float *w, int64_t ldw, const float *x, float beta, float *y);

/* The common activations as branch-free loops the compiler vectorizes (the per-element switch of gu_act
 * cost more than the GEMM on MobileNetV2's 16->96 1x1 conv with a fused Clip: 87 ms at batch 8). */
static inline void gu_act_n(float *y, int64_t n, const netrun_fused_activation *a) {
    switch (a->kind) {
    case NETRUN_ACT_NONE: return;
    case NETRUN_ACT_GELU_TANH: cpu_gelu_tanh_f32(y, y, n); return; /* the Gelu node's own loop: its bits */
    case NETRUN_ACT_RELU:
        for (int64_t i = 0; i < n; i++) y[i] = y[i] > 0 ? y[i] : 0.0f;
        return;
    case NETRUN_ACT_CLIP: {
        const float lo = a->alpha, hi = a->beta;
        for (int64_t i = 0; i < n; i++) {
            float v = y[i] < lo ? lo : y[i];
            y[i] = v > hi ? hi : v;
        }
        return;
    }
    case NETRUN_ACT_LEAKY_RELU: {
        const float s = a->alpha;
        for (int64_t i = 0; i < n; i++) y[i] = y[i] < 0 ? s * y[i] : y[i];
        return;
    }
    case NETRUN_ACT_SIGMOID: gu_sigmoid_n(y, n); return;
    case NETRUN_ACT_SWISH: gu_swish_n(y, n, 0.0f, a->alpha); return;
    case NETRUN_ACT_HARD_SWISH: /* MobileNetV3: x * clamp(x / 6 + 1 / 2, 0, 1) (ONNX's alpha 1/6, beta 1/2) */
        for (int64_t i = 0; i < n; i++) {
            float v = y[i] * (1.0f / 6.0f) + 0.5f;
            v = v < 0 ? 0.0f : v;
            y[i] *= v > 1 ? 1.0f : v;
        }
        return;
    case NETRUN_ACT_HARD_SIGMOID: {
        const float al = a->alpha, be = a->beta;
        for (int64_t i = 0; i < n; i++) {
            float v = al * y[i] + be;
            v = v < 0 ? 0.0f : v;
            y[i] = v > 1 ? 1.0f : v;
        }
        return;
    }
    default:
        for (int64_t i = 0; i < n; i++) y[i] = gu_act(y[i], a);
    }
}

static inline void gu_free(void *p) {
    if (p) cpu_free(p);
}

/* Element count with overflow check; -1 when it does not fit a size_t of floats. */
static inline int64_t gu_count(const netrun_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0) return -1;
        if (t->dims[i] && n > INT64_MAX / 16 / t->dims[i]) return -1;
        n *= t->dims[i];
    }
    return n;
}

/* Float view of a float/float16/bfloat16 array: returns src itself for float, else converts into a fresh
 * buffer stored in *tmp (freed by the caller with cpu_free). NULL when out of memory. */
static inline const float *gu_to_float(netrun_dtype dt, const void *src, int64_t n, float **tmp) {
    *tmp = NULL;
    if (dt == NETRUN_DTYPE_FLOAT) return src;
    float *f = cpu_alloc((size_t)n * sizeof(float));
    if (!f) return NULL;
    const uint16_t *h = src;
    if (dt == NETRUN_DTYPE_FLOAT16)
        for (int64_t i = 0; i < n; i++) f[i] = cpu_half_to_float(h[i]);
    else
        for (int64_t i = 0; i < n; i++) f[i] = cpu_bf16_to_float(h[i]);
    *tmp = f;
    return f;
}

static inline void gu_from_float(netrun_dtype dt, const float *src, int64_t n, void *dst) {
    uint16_t *h = dst;
    if (dt == NETRUN_DTYPE_FLOAT16)
        for (int64_t i = 0; i < n; i++) h[i] = cpu_float_to_half(src[i]);
    else if (dt == NETRUN_DTYPE_BFLOAT16)
        for (int64_t i = 0; i < n; i++) h[i] = cpu_float_to_bf16(src[i]);
    else if (src != dst)
        memcpy(dst, src, (size_t)n * sizeof(float));
}

/* Split `tasks` work items statically over min(threads, tasks) slots; fn(arg, slot, begin, end) runs once per
 * slot, so a slot index can own a slice of workspace. */
typedef void (*gu_slot_fn)(void *arg, int64_t slot, int64_t begin, int64_t end);
void gu_run_slots(cpu_context *ctx, int64_t tasks, int64_t slots, gu_slot_fn fn, void *arg);

/* Number of slots gu_run_slots uses for this many tasks. */
static inline int64_t gu_slots(const cpu_context *ctx, int64_t tasks) {
    int64_t t = ctx && ctx->threads > 0 ? ctx->threads : 1;
    return tasks < t ? (tasks > 0 ? tasks : 1) : t;
}

#endif
