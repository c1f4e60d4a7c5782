/* CUDA kernels: resize. Resize / Upsample, nearest (any dtype), linear and cubic (float32/float16), any
 * coordinate transformation, N-D. As in the CPU backend, each dim gets a table of taps (source offsets and
 * weights) computed on the host by the same code (backends/common/resize_taps.h); the tables are uploaded when
 * the shapes change and one thread per output element combines the taps of all dims. No antialias downsampling. */
#include <math.h>
#include <stdlib.h>

#include "cuda_kernels.cuh"
#include "../common/resize_taps.h"

#define MAX_COMBOS 4096

struct resize_geo {
    int rank;
    int64_t out[NETRUN_MAX_RANK];
    int k[NETRUN_MAX_RANK];
    int64_t tap_off[NETRUN_MAX_RANK]; /* start of dim d's taps in idx / w */
    int64_t out_off[NETRUN_MAX_RANK]; /* start of dim d's outside flags */
    int tf;
    float extrapolation;
};

typedef struct resize_state {
    int rank;
    int64_t in[NETRUN_MAX_RANK], out[NETRUN_MAX_RANK];
    int ready;
    resize_geo g;
    int64_t *d_idx;
    float *d_w;
    unsigned char *d_outside;
    int64_t *h_idx;
    float *h_w;
    unsigned char *h_outside;
} resize_state;

/* Taps of dim d (backends/common/resize_taps.h, the code the CPU and OpenCL backends use), offsets scaled by the
 * input stride. */
static int build_taps(const netrun_resize_params *p, int d, int64_t in_n, int64_t out_n, int64_t stride,
                      int64_t *idx, float *w, unsigned char *outside) {
    int k = nr_resize_taps(p, d, in_n, out_n, idx, w, outside);
    for (int64_t i = 0; i < out_n * k; i++) idx[i] *= stride;
    return k;
}

template <typename T, bool NEAREST>
__global__ void resize_k(const T *x, T *y, int64_t n, resize_geo g, const int64_t *idx, const float *w,
                         const unsigned char *outside) {
    GRID_LOOP(i, n) {
        int64_t o[NETRUN_MAX_RANK], r = i, combos = 1;
        bool out = false;
        for (int d = g.rank - 1; d >= 0; d--) {
            o[d] = r % g.out[d];
            r /= g.out[d];
            if (g.tf && outside[g.out_off[d] + o[d]]) out = true;
            combos *= g.k[d];
        }
        if (out) {
            y[i] = from_f<T>(g.extrapolation);
            continue;
        }
        if (NEAREST) {
            int64_t off = 0;
            for (int d = 0; d < g.rank; d++) off += idx[g.tap_off[d] + o[d]];
            y[i] = x[off];
            continue;
        }
        float acc = 0;
        for (int64_t c = 0; c < combos; c++) {
            int64_t cc = c, off = 0;
            float wt = 1;
            for (int d = g.rank - 1; d >= 0; d--) {
                int j = (int)(cc % g.k[d]);
                cc /= g.k[d];
                int64_t t = g.tap_off[d] + o[d] * g.k[d] + j;
                off += idx[t];
                wt *= w[t];
            }
            if (wt != 0) acc += wt * to_f(x[off]);
        }
        y[i] = from_f<T>(acc);
    }
}

static int resize_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_resize_params *p = (const netrun_resize_params *)node->params;
    netrun_dtype t = node->inputs[0].dtype;
    if (!p) return cuda_refuse(reason, size, "no params");
    if (p->mode == NETRUN_RESIZE_NEAREST ? !cuda_esize(t) : (t != NETRUN_DTYPE_FLOAT && t != NETRUN_DTYPE_FLOAT16))
        return cuda_refuse(reason, size, "dtype %s not supported for this mode", cuda_dtype_name(t));
    if (p->mode == NETRUN_RESIZE_NEAREST && t == NETRUN_DTYPE_BFLOAT16 && p->coord == NETRUN_COORD_TF_CROP_AND_RESIZE)
        return cuda_refuse(reason, size, "bfloat16 extrapolation");
    int down = 0, resized = 0;
    for (int d = 0; d < node->inputs[0].rank; d++) {
        down |= p->scale[d] < 1.0f;
        resized += p->scale[d] != 1.0f;
    }
    if (p->antialias && p->mode != NETRUN_RESIZE_NEAREST && down) return cuda_refuse(reason, size, "antialias downsampling");
    if (p->mode == NETRUN_RESIZE_CUBIC && resized > 5) return cuda_refuse(reason, size, "cubic over more than 5 dims");
    return 1;
}

static void resize_destroy(cuda_context *ctx, void *state) {
    resize_state *s = (resize_state *)state;
    if (!s) return;
    cuda_scratch_free(ctx, s->d_idx);
    cuda_scratch_free(ctx, s->d_w);
    cuda_scratch_free(ctx, s->d_outside);
    free(s->h_idx);
    free(s->h_w);
    free(s->h_outside);
    cuda_host->free(s);
}

static netrun_status resize_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    resize_state *s = (resize_state *)cuda_host->alloc(sizeof *s, 16);
    if (!s) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda Resize: out of memory");
    memset(s, 0, sizeof *s);
    *state = s;
    return NETRUN_OK;
}

static netrun_status resize_plan(cuda_context *ctx, resize_state *s, const netrun_resize_params *p,
                                 const netrun_tensor *X, const netrun_tensor *Y) {
    int64_t taps = 0, outs = 0;
    for (int d = 0; d < X->rank; d++) {
        taps += Y->dims[d] * 4;
        outs += Y->dims[d];
    }
    /* planned at the first run and when shapes change: stream-ordered, never a device-wide wait in a run */
    netrun_status rc = cuda_refuse_capture(ctx, "Resize planning its tables");
    if (rc != NETRUN_OK) return rc;
    cuda_scratch_free(ctx, s->d_idx);
    cuda_scratch_free(ctx, s->d_w);
    cuda_scratch_free(ctx, s->d_outside);
    s->d_idx = NULL;
    s->d_w = NULL;
    s->d_outside = NULL;
    free(s->h_idx);
    free(s->h_w);
    free(s->h_outside);
    s->ready = 0;
    s->h_idx = (int64_t *)malloc((size_t)(taps + 1) * sizeof(int64_t));
    s->h_w = (float *)malloc((size_t)(taps + 1) * sizeof(float));
    s->h_outside = (unsigned char *)malloc((size_t)(outs + 1));
    if (!s->h_idx || !s->h_w || !s->h_outside) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda Resize: out of memory");
    resize_geo g;
    memset(&g, 0, sizeof g);
    g.rank = X->rank;
    g.tf = p->coord == NETRUN_COORD_TF_CROP_AND_RESIZE;
    g.extrapolation = p->extrapolation_value;
    int64_t stride = 1, t_at = 0, o_at = 0, combos = 1;
    for (int d = X->rank - 1; d >= 0; d--) {
        g.out[d] = Y->dims[d];
        g.tap_off[d] = t_at;
        g.out_off[d] = o_at;
        g.k[d] = build_taps(p, d, X->dims[d], Y->dims[d], stride, s->h_idx + t_at, s->h_w + t_at, s->h_outside + o_at);
        t_at += Y->dims[d] * g.k[d];
        o_at += Y->dims[d];
        stride *= X->dims[d];
        combos *= g.k[d];
    }
    if (combos > MAX_COMBOS) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda Resize: %lld tap combinations", (long long)combos);
    cudaError_t e = cuda_scratch_alloc(ctx, (void **)&s->d_idx, (size_t)(t_at + 1) * sizeof(int64_t));
    if (e == cudaSuccess) e = cuda_scratch_alloc(ctx, (void **)&s->d_w, (size_t)(t_at + 1) * sizeof(float));
    if (e == cudaSuccess) e = cuda_scratch_alloc(ctx, (void **)&s->d_outside, (size_t)(o_at + 1));
    if (e == cudaSuccess) e = cudaMemcpyAsync(s->d_idx, s->h_idx, (size_t)t_at * sizeof(int64_t), cudaMemcpyHostToDevice, ctx->stream);
    if (e == cudaSuccess) e = cudaMemcpyAsync(s->d_w, s->h_w, (size_t)t_at * sizeof(float), cudaMemcpyHostToDevice, ctx->stream);
    if (e == cudaSuccess) e = cudaMemcpyAsync(s->d_outside, s->h_outside, (size_t)o_at, cudaMemcpyHostToDevice, ctx->stream);
    if (e != cudaSuccess) return cuda_fail(e, "Resize tables");
    s->g = g;
    s->rank = X->rank;
    memcpy(s->in, X->dims, sizeof s->in);
    memcpy(s->out, Y->dims, sizeof s->out);
    s->ready = 1;
    return NETRUN_OK;
}

static netrun_status resize_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    resize_state *s = (resize_state *)state;
    const netrun_resize_params *p = (const netrun_resize_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    if (cuda_count(X) == 0) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda Resize: empty input");
    /* the tables depend on params too, which only change with shapes (scales/sizes are inputs folded at
     * inference): re-plan whenever the shapes differ */
    if (!s->ready || s->rank != X->rank || memcmp(s->in, X->dims, sizeof s->in) || memcmp(s->out, Y->dims, sizeof s->out)) {
        netrun_status st = resize_plan(ctx, s, p, X, Y);
        if (st != NETRUN_OK) return st;
    }
    unsigned b = cuda_blocks(n);
    if (p->mode == NETRUN_RESIZE_NEAREST) {
        int tf = s->g.tf;
        if (tf && X->dtype == NETRUN_DTYPE_FLOAT)
            resize_k<float, true><<<b, CUDA_THREADS, 0, ctx->stream>>>((const float *)X->data, (float *)Y->data, n, s->g, s->d_idx, s->d_w, s->d_outside);
        else if (tf && X->dtype == NETRUN_DTYPE_FLOAT16)
            resize_k<__half, true><<<b, CUDA_THREADS, 0, ctx->stream>>>((const __half *)X->data, (__half *)Y->data, n, s->g, s->d_idx, s->d_w, s->d_outside);
        else if (tf && X->dtype != NETRUN_DTYPE_FLOAT && X->dtype != NETRUN_DTYPE_FLOAT16)
            return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda Resize: tf_crop_and_resize extrapolation for %s", cuda_dtype_name(X->dtype));
        else {
            DISPATCH_ES(cuda_esize(X->dtype), (resize_k<E, true><<<b, CUDA_THREADS, 0, ctx->stream>>>(
                                                  (const E *)X->data, (E *)Y->data, n, s->g, s->d_idx, s->d_w, s->d_outside)));
        }
    } else if (X->dtype == NETRUN_DTYPE_FLOAT)
        resize_k<float, false><<<b, CUDA_THREADS, 0, ctx->stream>>>((const float *)X->data, (float *)Y->data, n, s->g, s->d_idx, s->d_w, s->d_outside);
    else
        resize_k<__half, false><<<b, CUDA_THREADS, 0, ctx->stream>>>((const __half *)X->data, (__half *)Y->data, n, s->g, s->d_idx, s->d_w, s->d_outside);
    return cuda_check_launch("Resize");
}

extern "C" const cuda_op cuda_ops_resize[] = {
    {"Resize", CUDA_ALL_DTYPES, "nearest: any dtype; linear/cubic: float32/float16; no antialias downsampling",
     resize_supports, resize_create, resize_run, resize_destroy},
    {"Upsample", CUDA_ALL_DTYPES, "nearest: any dtype; linear: float32/float16", resize_supports, resize_create,
     resize_run, resize_destroy},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
