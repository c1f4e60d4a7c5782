/* CUDA kernels: conv. Conv (cudnnConvolutionForward) and ConvTranspose (cudnnConvolutionBackwardData, whose
 * filter layout [C, M/group, k...] is ONNX's) in 1-3 spatial dims, float32/float16.
 *
 * Algorithm: chosen at kernel creation by cuDNN's heuristic (cudnnGet*_v7, default) or by timing the
 * candidates (cudnnFind*: option cuda.algo_search=timed, or the `fastest` workspace policy), under the
 * workspace cap of the policy (fastest: 3/4 of free memory; balanced: 1/8; min-memory: the fastest-listed
 * algorithm whose workspace is at most 1 MiB, or the smallest when none is) and --workspace-limit. Choices
 * are cached per process by (shape, dtype, layout, math, search, policy, fusion), so repeated layers and later
 * sessions skip the search. A timed search measures its first candidates again as the node runs them (fused
 * bias/ReLU/sum included, time_as_run) and keeps the fastest.
 *
 * Fusion: bias + ReLU (+ Z from a fused Add) run inside cuDNN with cudnnConvolutionBiasActivationForward
 * when the activation is ReLU (or none with the IMPLICIT_PRECOMP_GEMM algorithm, the only one cuDNN allows
 * for identity); other activations run after cuDNN in our bias/activation kernel.
 *
 * --precision fp16 on a float32 Conv with constant weights (and bias): the weights are converted to float16
 * once, and three paths are timed on the real shapes -- float32 (TF32 tensor cores), float16 NCHW and float16
 * NHWC (2-D only) with the float32 input converted on the way in and the output on the way out, conversions
 * included in the time -- and the fastest is kept, so float16 is never chosen when it is slower here.
 * Inside a float16 NHWC region (params src_nhwc = dst_nhwc = 1, set by the region pass of runtime/optimize.c)
 * X, Y, Z, W and B are float16 already: cuDNN on the NHWC tensors, one cuBLAS GEMM for pointwise Convs (also
 * through cuBLASLt with bias/ReLU/Z in the epilogue, conv_lt.c), our own depthwise kernel (precision.cu), and
 * float32 between conversions are timed instead and the fastest kept (docs/cuda.md, "float16 NHWC regions").
 *
 * 1-D convolutions run as 2-D with height 1. Asymmetric Conv pads are applied by copying the input into a
 * zero-padded workspace area first (float32/native path only). When shapes change at run time the
 * descriptors of the native path are rebuilt and the heuristic's best that fits the workspace is taken. */
#include <pthread.h>
#include <stdlib.h>

#include "cuda_internal.h"
#include "../common/dtype_convert.h"

#define MAXD 5
/* V_LT: region pointwise Convs only, one cuBLASLt GEMM with the bias/ReLU/Z epilogue fused (conv_lt.c) */
enum { V_NATIVE = 0, V_F16 = 1, V_F16_NHWC = 2, V_LT = 3, N_VARIANTS = 4 };
static const char *const variant_name[N_VARIANTS] = {"native", "fp16 NCHW", "fp16 NHWC", "fp16 GEMM+epilogue"};

/* Algorithm cache key (below). fused: what the node fuses (activation, bias, sum), which decides the measured
 * choice of a timed search. */
typedef struct algo_key {
    int device, type, nhwc, transpose, nd, math, timed, policy, fused;
    int x[MAXD], w[MAXD], pads[3], strides[3], dil[3], group;
} algo_key;

#define N_CAND 4

typedef struct conv_variant {
    int ok;                        /* descriptors built and an algorithm found */
    cudnnDataType_t type;
    int nhwc;
    cudnnTensorDescriptor_t xd, yd, bd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    int algo;
    size_t algo_ws;
    int fuse;                      /* cudnnConvolutionBiasActivationForward usable (cleared when cuDNN refuses) */
    double ms;                     /* measured under --precision fp16 (0: not measured) */
    /* timed search: the candidates to time as the node runs them (time_as_run), first = cudnnFind's pick */
    int cand[N_CAND];
    size_t cand_ws[N_CAND];
    int n_cand;
    algo_key key;                  /* its cache entry, updated with the measured choice */
} conv_variant;

typedef struct conv_state {
    int transpose;
    netrun_dtype dt;
    netrun_conv_params p;
    int prepad;                    /* Conv with asymmetric pads: pad into the workspace first */
    conv_variant v[N_VARIANTS];
    int use;                       /* the variant kernel_run takes */
    int region;                    /* float16 NHWC X/Y/Z (params src_nhwc = dst_nhwc = 1, the region pass):
                                    * V_F16_NHWC runs cuDNN on them directly, V_F16 (pointwise convs only) is
                                    * one cuBLAS GEMM on them, V_NATIVE is float32 NCHW between conversions
                                    * (w32, b32, x32/y32 in the workspace) */
    int dw;                        /* region depthwise Conv (group = C = M): V_F16 is our own NHWC kernel */
    void *w16_dw;                  /* its float16 weights as [kh*kw, C] */
    cuda_lt_gemm *lt;              /* V_LT's plan (pointwise region Convs, bias/ReLU/Z fused) */
    void *w32, *b32;
    size_t x32_bytes, y32_bytes;
    cudnnActivationDescriptor_t act;
    int nd;                        /* cuDNN rank (4 or 5) */
    int64_t xdims[NETRUN_MAX_RANK], wdims[NETRUN_MAX_RANK], ydims[NETRUN_MAX_RANK];
    int xrank;
    int ready;
    size_t pad_bytes;
    size_t x16_bytes, y16_bytes;   /* float16 copies of X and Y in the workspace (fp16 variants) */
    void *w16, *w16_nhwc, *b16;    /* float16 weights [M, C/g, k...], [M, k..., C/g], bias */
    void *zero_bias;               /* M zeros for the fused call when the node has no bias */
    void *scratch;                 /* own workspace when the shared one is too small (run-time shapes) */
    size_t scratch_size;
    char desc[160];
} conv_state;

static size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

static const char *fwd_algo_name(int a) {
    static const char *const n[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT",
                                    "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    return a >= 0 && a < (int)(sizeof n / sizeof n[0]) ? n[a] : "?";
}

static int conv_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_conv_params *p = node->params;
    netrun_dtype t = cuda_main_dtype(node);
    if (t != NETRUN_DTYPE_FLOAT && t != NETRUN_DTYPE_FLOAT16)
        return cuda_refuse(reason, size, "dtype %s not supported by the CUDA %s kernel", cuda_dtype_name(t), node->op_type);
    if (!p) return cuda_refuse(reason, size, "no params");
    if (p->n_spatial < 1 || p->n_spatial > 3) return cuda_refuse(reason, size, "%d spatial dims", p->n_spatial);
    for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i].rank >= 0 && node->inputs[i].dtype != t) return cuda_refuse(reason, size, "mixed dtypes");
    if (node->n_inputs < 2 || node->inputs[1].rank != p->n_spatial + 2)
        return cuda_refuse(reason, size, "weights of unknown shape");
    int transpose = !strcmp(node->op_type, "ConvTranspose");
    for (int d = 0; d < p->n_spatial; d++) {
        if (p->pads_begin[d] < 0 || p->pads_end[d] < 0) return cuda_refuse(reason, size, "negative pads");
        if (transpose && p->pads_begin[d] != p->pads_end[d])
            return cuda_refuse(reason, size, "asymmetric ConvTranspose pads");
        if (p->strides[d] < 1 || p->dilations[d] < 1) return cuda_refuse(reason, size, "bad strides or dilations");
        if (p->kernel[d] > INT32_MAX || p->pads_begin[d] > INT32_MAX) return cuda_refuse(reason, size, "huge kernel");
    }
    if (p->group < 1 || p->group > INT32_MAX) return cuda_refuse(reason, size, "bad group");
    if (p->has_sum && transpose) return cuda_refuse(reason, size, "fused sum on ConvTranspose");
    if (node->params_size >= sizeof *p && (p->src_nhwc || p->dst_nhwc)) { /* the float16 region pass */
        if (!p->src_nhwc || !p->dst_nhwc || transpose || t != NETRUN_DTYPE_FLOAT16 || p->n_spatial != 2)
            return cuda_refuse(reason, size, "NHWC Conv needs float16 2-D Conv with X and Y both NHWC");
        for (int d = 0; d < 2; d++)
            if (p->pads_begin[d] != p->pads_end[d]) return cuda_refuse(reason, size, "NHWC Conv with asymmetric pads");
        const netrun_value_desc *w = &node->inputs[1], *b = node->n_inputs > 2 ? &node->inputs[2] : NULL;
        if (!w->const_data || w->const_nbytes != (size_t)cuda_desc_count(w) * 2)
            return cuda_refuse(reason, size, "NHWC Conv needs constant weights");
        if (p->has_bias && b && b->rank >= 0 && (!b->const_data || b->const_nbytes != (size_t)cuda_desc_count(b) * 2))
            return cuda_refuse(reason, size, "NHWC Conv needs a constant bias");
        for (int i = 0; i < node->n_inputs; i++)
            if (node->inputs[i].rank >= 0 && cuda_desc_count(&node->inputs[i]) < 0)
                return cuda_refuse(reason, size, "NHWC Conv needs known shapes");
    }
    /* apply_act (cuda_kernels.cuh) knows kinds up to SWISH; a newer kind would silently be the identity */
    if ((int)p->activation.kind < 0 || p->activation.kind > NETRUN_ACT_SWISH)
        return cuda_refuse(reason, size, "fused activation kind %d not implemented", (int)p->activation.kind);
    return 1;
}

/* cuDNN dims of a tensor: 1-D spatial gets a height of 1. */
static int to_cudnn_dims(int n_spatial, const int64_t *dims, int *out) {
    int r = n_spatial + 2;
    for (int i = 0; i < r; i++)
        if (dims[i] < 0 || dims[i] > INT32_MAX) return -1;
    if (n_spatial == 1) {
        out[0] = (int)dims[0];
        out[1] = (int)dims[1];
        out[2] = 1;
        out[3] = (int)dims[2];
        return 4;
    }
    for (int i = 0; i < r; i++) out[i] = (int)dims[i];
    return r;
}

/* Packed strides of [N, C, spatial...] dims, NCHW or NHWC (channels last). */
static netrun_status set_tensor(cudnnTensorDescriptor_t d, cudnnDataType_t t, int nd, const int *dims, int nhwc) {
    int strides[MAXD];
    if (!nhwc) {
        strides[nd - 1] = 1;
        for (int i = nd - 2; i >= 0; i--) strides[i] = strides[i + 1] * (dims[i + 1] > 0 ? dims[i + 1] : 1);
    } else {
        int c = dims[1] > 0 ? dims[1] : 1;
        strides[1] = 1;
        strides[nd - 1] = c;
        for (int i = nd - 2; i >= 2; i--) strides[i] = strides[i + 1] * (dims[i + 1] > 0 ? dims[i + 1] : 1);
        strides[0] = strides[2] * (dims[2] > 0 ? dims[2] : 1);
    }
    cudnnStatus_t s = cudnnSetTensorNdDescriptor(d, t, nd, dims, strides);
    return s == CUDNN_STATUS_SUCCESS ? NETRUN_OK : cudnn_fail(s, "cudnnSetTensorNdDescriptor");
}

/* ---- algorithm cache (process-wide: a choice holds for a device and shape whatever the session) ---- */

#define ALGO_CACHE_SIZE 1024
static struct {
    algo_key key;
    int algo;
    size_t ws;
} algo_cache[ALGO_CACHE_SIZE];
static int algo_cache_n;
static pthread_mutex_t algo_cache_lock = PTHREAD_MUTEX_INITIALIZER;

static int cache_find(const algo_key *k, size_t cap, int *algo, size_t *ws) {
    int hit = 0;
    pthread_mutex_lock(&algo_cache_lock);
    for (int i = 0; i < algo_cache_n && !hit; i++)
        if (!memcmp(&algo_cache[i].key, k, sizeof *k) && algo_cache[i].ws <= cap) {
            *algo = algo_cache[i].algo;
            *ws = algo_cache[i].ws;
            hit = 1;
        }
    pthread_mutex_unlock(&algo_cache_lock);
    return hit;
}

static void cache_put(const algo_key *k, int algo, size_t ws) {
    pthread_mutex_lock(&algo_cache_lock);
    int i = 0;
    while (i < algo_cache_n && memcmp(&algo_cache[i].key, k, sizeof *k)) i++;
    if (i < ALGO_CACHE_SIZE) { /* full: no longer cached, still correct */
        algo_cache[i].key = *k;
        algo_cache[i].algo = algo;
        algo_cache[i].ws = ws;
        if (i == algo_cache_n) algo_cache_n++;
    }
    pthread_mutex_unlock(&algo_cache_lock);
}

/* Pick an algorithm from a perf list: the first (best ranked / fastest) fitting the cap, or the smallest
 * workspace. */
/* min-memory: the first candidate (cuDNN lists the fastest expected first) whose workspace is at most the
 * smallest one or MINMEM_SLACK: the shared workspace grows by at most 1 MiB, and the zero-workspace
 * IMPLICIT_GEMM no longer displaces IMPLICIT_PRECOMP_GEMM (a few KiB), the only algorithm cuDNN fuses bias
 * without ReLU into (ResNet-50 b32 fp32 on an H200: 1.46x fastest's latency with the strict minimum). */
#define MINMEM_SLACK ((size_t)1 << 20)
#define PICK(perf, n, cap, minmem, algo_out, ws_out)                                                             \
    do {                                                                                                        \
        int best = -1;                                                                                          \
        size_t least_ = SIZE_MAX;                                                                               \
        for (int i_ = 0; i_ < (n); i_++)                                                                        \
            if ((perf)[i_].status == CUDNN_STATUS_SUCCESS && (perf)[i_].memory <= (cap) &&                      \
                (perf)[i_].memory < least_)                                                                     \
                least_ = (perf)[i_].memory;                                                                     \
        size_t allow_ = (minmem) ? (least_ > MINMEM_SLACK ? least_ : MINMEM_SLACK) : (cap);                     \
        for (int i_ = 0; i_ < (n) && best < 0; i_++) {                                                          \
            if ((perf)[i_].status != CUDNN_STATUS_SUCCESS || (perf)[i_].memory > (cap)) continue;               \
            if ((perf)[i_].memory <= allow_) best = i_;                                                         \
        }                                                                                                       \
        if (best >= 0) {                                                                                        \
            (algo_out) = (int)(perf)[best].algo;                                                                \
            (ws_out) = (perf)[best].memory;                                                                     \
        }                                                                                                       \
        found = best >= 0;                                                                                      \
    } while (0)

/* cuDNN fuses bias + activation for ReLU with any algorithm, for identity only with PRECOMP_GEMM */
static void set_fuse(const conv_state *st, conv_variant *v) {
    v->fuse = !st->transpose && (st->p.activation.kind == NETRUN_ACT_RELU ||
                                 (st->p.activation.kind == NETRUN_ACT_NONE &&
                                  v->algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM));
}

static int timed_search(const cuda_context *ctx) {
    return ctx->algo_search == CUDA_ALGO_TIMED || ctx->config.workspace_policy == NETRUN_WORKSPACE_FASTEST;
}

/* Descriptors of one variant for these (padded) dims and an algorithm whose workspace is at most cap. */
static netrun_status variant_setup(cuda_context *ctx, conv_state *st, conv_variant *v, int nd, const int *xd,
                                   const int *wd, const int *yd, const int *pads, const int *strides, const int *dil,
                                   size_t cap, int timed) {
    netrun_status s;
    v->ok = 0;
    if ((s = set_tensor(v->xd, v->type, nd, xd, v->nhwc)) != NETRUN_OK ||
        (s = set_tensor(v->yd, v->type, nd, yd, v->nhwc)) != NETRUN_OK)
        return s;
    int bd[MAXD];
    for (int i = 0; i < nd; i++) bd[i] = 1;
    bd[1] = yd[1];
    if ((s = set_tensor(v->bd, v->type, nd, bd, 0)) != NETRUN_OK) return s;
    cudnnStatus_t cs = cudnnSetFilterNdDescriptor(v->wd, v->type, v->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, nd, wd);
    if (cs != CUDNN_STATUS_SUCCESS) return cudnn_fail(cs, "cudnnSetFilterNdDescriptor");
    cs = cudnnSetConvolutionNdDescriptor(v->cd, nd - 2, pads, strides, dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    if (cs != CUDNN_STATUS_SUCCESS) return cudnn_fail(cs, "cudnnSetConvolutionNdDescriptor");
    if ((cs = cudnnSetConvolutionGroupCount(v->cd, (int)st->p.group)) != CUDNN_STATUS_SUCCESS)
        return cudnn_fail(cs, "cudnnSetConvolutionGroupCount");
    /* exact float32 unless TF32 (or lower) was allowed; float16 data may always use tensor cores */
    cudnnMathType_t mt = v->type == CUDNN_DATA_HALF || ctx->config.precision != NETRUN_PRECISION_FP32
                             ? CUDNN_TENSOR_OP_MATH
                             : CUDNN_FMA_MATH;
    if ((cs = cudnnSetConvolutionMathType(v->cd, mt)) != CUDNN_STATUS_SUCCESS)
        return cudnn_fail(cs, "cudnnSetConvolutionMathType");
    if (!st->transpose) { /* the output shape must agree with cuDNN's */
        int od[MAXD];
        cs = cudnnGetConvolutionNdForwardOutputDim(v->cd, v->xd, v->wd, nd, od);
        if (cs != CUDNN_STATUS_SUCCESS) return cudnn_fail(cs, "cudnnGetConvolutionNdForwardOutputDim");
        for (int i = 0; i < nd; i++)
            if (od[i] != yd[i])
                return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda conv: cuDNN output dim %d is %d, expected %d", i, od[i], yd[i]);
    }
    int minmem = ctx->config.workspace_policy == NETRUN_WORKSPACE_MIN_MEMORY, found = 0, n = 0;
    algo_key key;
    memset(&key, 0, sizeof key);
    key.device = ctx->device;
    key.type = (int)v->type;
    key.nhwc = v->nhwc;
    key.transpose = st->transpose;
    key.nd = nd;
    key.math = (int)mt;
    key.timed = timed;
    key.policy = (int)ctx->config.workspace_policy;
    for (int i = 0; i < nd; i++) {
        key.x[i] = xd[i];
        key.w[i] = wd[i];
    }
    for (int i = 0; i < nd - 2; i++) {
        key.pads[i] = pads[i];
        key.strides[i] = strides[i];
        key.dil[i] = dil[i];
    }
    key.group = (int)st->p.group;
    key.fused = (int)st->p.activation.kind * 4 + st->p.has_sum * 2 + st->p.has_bias;
    v->key = key;
    v->n_cand = 0;
    if (!cache_find(&key, cap, &v->algo, &v->algo_ws)) {
        if (!st->transpose) {
            cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
            if (timed)
                cs = cudnnFindConvolutionForwardAlgorithm(ctx->cudnn, v->xd, v->wd, v->cd, v->yd,
                                                          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf);
            else
                cs = cudnnGetConvolutionForwardAlgorithm_v7(ctx->cudnn, v->xd, v->wd, v->cd, v->yd,
                                                            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf);
            if (cs != CUDNN_STATUS_SUCCESS) return cudnn_fail(cs, "choosing a convolution algorithm");
            PICK(perf, n, cap, minmem, v->algo, v->algo_ws);
            if (timed && found) { /* what time_as_run measures: cudnnFind's first candidates, the heuristic's pick */
                size_t allow = !minmem ? cap : v->algo_ws > MINMEM_SLACK ? v->algo_ws : MINMEM_SLACK;
                for (int i = 0; i < n && v->n_cand < N_CAND - 1; i++)
                    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= allow) {
                        v->cand[v->n_cand] = (int)perf[i].algo;
                        v->cand_ws[v->n_cand++] = perf[i].memory;
                    }
                int hn = 0, have = 0;
                if (cudnnGetConvolutionForwardAlgorithm_v7(ctx->cudnn, v->xd, v->wd, v->cd, v->yd,
                                                           CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &hn, perf) == CUDNN_STATUS_SUCCESS)
                    for (int i = 0; i < hn && !have; i++) {
                        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > allow) continue;
                        have = 1;
                        int dup = 0;
                        for (int j = 0; j < v->n_cand; j++) dup |= v->cand[j] == (int)perf[i].algo;
                        if (!dup) {
                            v->cand[v->n_cand] = (int)perf[i].algo;
                            v->cand_ws[v->n_cand++] = perf[i].memory;
                        }
                    }
            }
        } else {
            cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
            if (timed)
                cs = cudnnFindConvolutionBackwardDataAlgorithm(ctx->cudnn, v->wd, v->xd, v->cd, v->yd,
                                                               CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf);
            else
                cs = cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx->cudnn, v->wd, v->xd, v->cd, v->yd,
                                                                 CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf);
            if (cs != CUDNN_STATUS_SUCCESS) return cudnn_fail(cs, "choosing a transposed convolution algorithm");
            PICK(perf, n, cap, minmem, v->algo, v->algo_ws);
        }
        if (!found)
            return cuda_host->error(NETRUN_ERR_UNSUPPORTED,
                                    "cuda conv: no cuDNN algorithm fits a workspace of %zu bytes (%d candidates)", cap, n);
        cache_put(&key, v->algo, v->algo_ws);
    }
    set_fuse(st, v);
    v->ok = 1;
    return NETRUN_OK;
}

/* Build the native variant for these shapes (and, when fp16 is on, the float16 ones) under cap. */
static netrun_status conv_setup(cuda_context *ctx, conv_state *st, int xrank, const int64_t *xdims,
                                const int64_t *wdims, const int64_t *ydims, size_t cap, int timed, int with_f16) {
    const netrun_conv_params *p = &st->p;
    int ns = p->n_spatial;
    int xd[MAXD], wd[MAXD], yd[MAXD];
    int64_t xpad[NETRUN_MAX_RANK];
    memcpy(xpad, xdims, sizeof(int64_t) * (size_t)xrank);
    st->prepad = 0;
    if (!st->transpose)
        for (int d = 0; d < ns; d++)
            if (p->pads_begin[d] != p->pads_end[d]) st->prepad = 1;
    if (st->prepad)
        for (int d = 0; d < ns; d++) xpad[2 + d] = xdims[2 + d] + p->pads_begin[d] + p->pads_end[d];
    int nd = to_cudnn_dims(ns, xpad, xd);
    if (nd < 0 || to_cudnn_dims(ns, wdims, wd) < 0 || to_cudnn_dims(ns, ydims, yd) < 0)
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda conv: dims beyond int32");
    int pads[3], strides[3], dil[3], k = 0;
    if (ns == 1) {
        pads[0] = 0;
        strides[0] = 1;
        dil[0] = 1;
        k = 1;
    }
    for (int d = 0; d < ns; d++, k++) {
        pads[k] = st->prepad ? 0 : (int)p->pads_begin[d];
        strides[k] = (int)p->strides[d];
        dil[k] = (int)p->dilations[d];
    }
    st->pad_bytes = 0;
    if (st->prepad) {
        size_t n = cuda_esize(st->dt);
        for (int i = 0; i < xrank; i++) n *= (size_t)xpad[i];
        st->pad_bytes = align256(n);
    }
    st->ready = 0;
    for (int i = 0; i < N_VARIANTS; i++) st->v[i].ok = 0;
    st->use = V_NATIVE;
    conv_variant *v = &st->v[V_NATIVE];
    v->type = st->dt == NETRUN_DTYPE_FLOAT16 && !st->region ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    v->nhwc = 0;
    netrun_status s = variant_setup(ctx, st, v, nd, xd, wd, yd, pads, strides, dil,
                                    cap > st->pad_bytes ? cap - st->pad_bytes : 0, timed);
    if (s != NETRUN_OK && !st->region) return s;
    if (s != NETRUN_OK) cuda_host->log(NETRUN_LOG_DEBUG, "cuda", "conv: float32 path unavailable in a region");
    st->x16_bytes = st->y16_bytes = st->x32_bytes = st->y32_bytes = 0;
    if (st->region) { /* float32 copies of X and Y for V_NATIVE; V_F16_NHWC reads and writes the tensors */
        size_t nx = 4, ny = 4;
        for (int i = 0; i < nd; i++) {
            nx *= (size_t)xd[i];
            ny *= (size_t)yd[i];
        }
        st->x32_bytes = align256(nx);
        st->y32_bytes = align256(ny);
        conv_variant *h = &st->v[V_F16_NHWC];
        h->type = CUDNN_DATA_HALF;
        h->nhwc = 1;
        if (variant_setup(ctx, st, h, nd, xd, wd, yd, pads, strides, dil, cap, timed) != NETRUN_OK) {
            h->ok = 0;
            cuda_host->log(NETRUN_LOG_DEBUG, "cuda", "conv: float16 NHWC path unavailable in a region");
        }
        /* pointwise (1x1, stride 1, no pads, group 1): in NHWC it is Y[NHW, M] = X[NHW, C] W[M, C]^T, one GEMM */
        conv_variant *gm = &st->v[V_F16];
        gm->ok = gm->fuse = 0;
        gm->algo_ws = 0;
        gm->ms = 0;
        int pw = nd == 4 && p->group == 1 && wd[2] == 1 && wd[3] == 1 && xd[2] == yd[2] && xd[3] == yd[3] &&
                 (int64_t)xd[0] * xd[2] * xd[3] <= INT32_MAX;
        for (int i = 0; pw && i < 2; i++) pw = pads[i] == 0 && strides[i] == 1;
        if (pw && cuda_cublas_handle(ctx) == NETRUN_OK) gm->ok = 1; /* the gemm family may have made it */
        else if (pw) cuda_host->log(NETRUN_LOG_DEBUG, "cuda", "conv: cuBLAS unavailable for a pointwise region Conv");
        /* the same GEMM through cuBLASLt with bias + ReLU + Z in its epilogue (option cuda.fp16_lt=0: off) */
        conv_variant *lv = &st->v[V_LT];
        lv->ok = lv->fuse = 0;
        lv->algo_ws = 0;
        lv->ms = 0;
        if (st->lt) cuda_lt_gemm_destroy(st->lt);
        st->lt = NULL;
        const char *lo = ctx->config.get_option ? ctx->config.get_option(ctx->config.opaque, "cuda.fp16_lt") : NULL;
        int relu = p->activation.kind == NETRUN_ACT_RELU;
        if (gm->ok && (!lo || strcmp(lo, "0") != 0) && (relu || p->activation.kind == NETRUN_ACT_NONE)) {
            size_t lcap = cap < ((size_t)32 << 20) ? cap : ((size_t)32 << 20);
            st->lt = cuda_lt_gemm_create(yd[1], (int64_t)xd[0] * xd[2] * xd[3], xd[1], p->has_bias, relu, p->has_sum, lcap);
            if (st->lt) {
                lv->ok = 1;
                lv->algo_ws = cuda_lt_gemm_workspace(st->lt);
            }
        }
        /* depthwise (group = C = M, one filter per channel): our own float16 NHWC kernel in the same slot */
        const char *dwo = ctx->config.get_option ? ctx->config.get_option(ctx->config.opaque, "cuda.fp16_dw") : NULL;
        st->dw = !pw && (!dwo || strcmp(dwo, "0") != 0) && nd == 4 && !st->prepad && p->group > 1 && p->group == xd[1] && yd[1] == xd[1] && wd[1] == 1 &&
                 cuda_dw_nhwc_fits(xd[0], xd[1], xd[2], xd[3], yd[2], yd[3]);
        if (st->dw) gm->ok = 1;
    } else if (with_f16) {
        size_t nx = 2, ny = 2;
        for (int i = 0; i < nd; i++) {
            nx *= (size_t)xd[i];
            ny *= (size_t)yd[i];
        }
        st->x16_bytes = align256(nx);
        st->y16_bytes = align256(ny);
        size_t used = st->x16_bytes + st->y16_bytes, c16 = cap > used ? cap - used : 0;
        /* option cuda.fp16_paths: which float16 paths may be timed ("nchw,nhwc" by default, "none") */
        const char *paths = ctx->config.get_option ? ctx->config.get_option(ctx->config.opaque, "cuda.fp16_paths") : NULL;
        for (int vi = V_F16; vi <= V_F16_NHWC; vi++) {
            conv_variant *h = &st->v[vi];
            h->type = CUDNN_DATA_HALF;
            h->nhwc = vi == V_F16_NHWC;
            if (h->nhwc && nd != 4) continue; /* channels-last float16 kernels: 2-D convolutions */
            if (paths && !strstr(paths, h->nhwc ? "nhwc" : "nchw")) continue;
            if (variant_setup(ctx, st, h, nd, xd, wd, yd, pads, strides, dil, c16, timed) != NETRUN_OK) {
                h->ok = 0; /* a float16 path cuDNN refuses: the native one stays */
                cuda_host->log(NETRUN_LOG_DEBUG, "cuda", "conv: %s path unavailable", variant_name[vi]);
            }
        }
    }
    if (st->region && !st->v[V_NATIVE].ok && !st->v[V_F16_NHWC].ok && !st->v[V_F16].ok && !st->v[V_LT].ok)
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda conv: no float16 NHWC, GEMM or float32 path is available "
                                                        "for a region Conv");
    if (st->region && !st->v[V_NATIVE].ok) st->use = st->v[V_F16_NHWC].ok ? V_F16_NHWC : V_F16;
    st->nd = nd;
    st->xrank = xrank;
    memcpy(st->xdims, xdims, sizeof(int64_t) * (size_t)xrank);
    memcpy(st->wdims, wdims, sizeof(int64_t) * (size_t)xrank);
    memcpy(st->ydims, ydims, sizeof(int64_t) * (size_t)xrank);
    st->ready = 1;
    return NETRUN_OK;
}

static size_t variant_ws(const conv_state *st, int vi) {
    const conv_variant *v = &st->v[vi];
    if (st->region) return vi == V_NATIVE ? st->x32_bytes + st->y32_bytes + v->algo_ws : vi == V_F16 ? 0 : v->algo_ws;
    if (vi == V_LT) return 0;
    return vi == V_NATIVE ? st->pad_bytes + v->algo_ws : st->x16_bytes + st->y16_bytes + v->algo_ws;
}

static void conv_destroy(cuda_context *ctx, void *state) {
    conv_state *st = state;
    if (!st) return;
    for (int i = 0; i < N_VARIANTS; i++) {
        conv_variant *v = &st->v[i];
        if (v->xd) cudnnDestroyTensorDescriptor(v->xd);
        if (v->yd) cudnnDestroyTensorDescriptor(v->yd);
        if (v->bd) cudnnDestroyTensorDescriptor(v->bd);
        if (v->wd) cudnnDestroyFilterDescriptor(v->wd);
        if (v->cd) cudnnDestroyConvolutionDescriptor(v->cd);
    }
    if (st->act) cudnnDestroyActivationDescriptor(st->act);
    cuda_scratch_free(ctx, st->scratch);
    if (st->w16) cudaFree(st->w16);
    if (st->w16_nhwc) cudaFree(st->w16_nhwc);
    if (st->w16_dw) cudaFree(st->w16_dw);
    if (st->lt) cuda_lt_gemm_destroy(st->lt);
    if (st->b16) cudaFree(st->b16);
    if (st->w32) cudaFree(st->w32);
    if (st->b32) cudaFree(st->b32);
    if (st->zero_bias) cudaFree(st->zero_bias);
    cuda_host->free(st);
}

static int known(const netrun_value_desc *d) { return d->rank >= 0 && cuda_desc_count(d) >= 0; }

/* ---- running one variant ---- */

typedef struct conv_io {
    conv_state *st;
    int vi;
    const void *x, *w, *bias, *z; /* float32/native device data; bias/z may be NULL */
    void *y;
    char *ws;                     /* workspace of variant_ws bytes */
    int64_t n, c, s, m, ys;       /* X as [n, c, s], Y as [n, m, ys] */
} conv_io;

/* The cuDNN call of a variant: fused (bias + ReLU + z inside cuDNN) when allowed, else plain with beta = 1
 * when z was placed in y. Returns 1 in *fused when the fused call ran. */
static netrun_status cudnn_conv(cuda_context *ctx, conv_state *st, conv_variant *v, const void *x, const void *w,
                                const void *bias, const void *z, void *y, void *algo_ws, int *fused) {
    float alpha = 1.0f, beta = 0.0f;
    cudnnStatus_t cs;
    *fused = 0;
    if (v->fuse && st->act) {
        float alpha2 = z ? 1.0f : 0.0f;
        cs = cudnnConvolutionBiasActivationForward(ctx->cudnn, &alpha, v->xd, x, v->wd, w, v->cd,
                                                   (cudnnConvolutionFwdAlgo_t)v->algo, algo_ws, v->algo_ws, &alpha2,
                                                   v->yd, z ? z : y, v->bd, bias ? bias : st->zero_bias, st->act,
                                                   v->yd, y);
        if (cs == CUDNN_STATUS_SUCCESS) {
            *fused = 1;
            return NETRUN_OK;
        }
        if (cs != CUDNN_STATUS_NOT_SUPPORTED && cs != CUDNN_STATUS_BAD_PARAM)
            return cudnn_fail(cs, "cudnnConvolutionBiasActivationForward");
        v->fuse = 0; /* this configuration is not fusable: the separate path from now on */
    }
    if (z) {
        if (z != y) {
            size_t bytes = cuda_esize(v->type == CUDNN_DATA_HALF ? NETRUN_DTYPE_FLOAT16 : NETRUN_DTYPE_FLOAT);
            int64_t cnt = 1;
            for (int i = 0; i < st->xrank; i++) cnt *= st->ydims[i];
            cudaError_t e = cudaMemcpyAsync(y, z, bytes * (size_t)cnt, cudaMemcpyDeviceToDevice, ctx->stream);
            if (e != cudaSuccess) return cuda_fail(e, "conv sum copy");
        }
        beta = 1.0f;
    }
    if (!st->transpose)
        cs = cudnnConvolutionForward(ctx->cudnn, &alpha, v->xd, x, v->wd, w, v->cd, (cudnnConvolutionFwdAlgo_t)v->algo,
                                     algo_ws, v->algo_ws, &beta, v->yd, y);
    else
        cs = cudnnConvolutionBackwardData(ctx->cudnn, &alpha, v->wd, w, v->xd, x, v->cd,
                                          (cudnnConvolutionBwdDataAlgo_t)v->algo, algo_ws, v->algo_ws, &beta, v->yd, y);
    return cs == CUDNN_STATUS_SUCCESS ? NETRUN_OK
                                      : cudnn_fail(cs, st->transpose ? "cudnnConvolutionBackwardData" : "cudnnConvolutionForward");
}

static netrun_status conv_exec(cuda_context *ctx, void *arg) {
    conv_io *io = arg;
    conv_state *st = io->st;
    conv_variant *v = &st->v[io->vi];
    const netrun_conv_params *p = &st->p;
    netrun_status s;
    int fused = 0;
    if (st->region && io->vi == V_LT) /* one cuBLASLt call: GEMM, bias, ReLU and Z */
        return cuda_lt_gemm_run(ctx, st->lt, st->w16_nhwc, io->x, io->bias, io->z, io->y, io->ws);
    if (st->region && io->vi == V_F16 && st->dw) { /* depthwise: our own NHWC kernel, everything fused */
        int64_t k[2] = {st->wdims[2], st->wdims[3]};
        return cuda_dw_nhwc_f16(ctx, io->x, st->w16_dw, io->bias, io->z, io->y, io->n, io->c, st->xdims[2], st->xdims[3],
                                st->ydims[2], st->ydims[3], k, p->strides, p->pads_begin, p->dilations, &p->activation);
    }
    if (st->region && io->vi == V_F16) { /* pointwise: one cuBLAS GEMM, float32 accumulation, then the epilogue */
        int64_t rows = io->n * io->ys;
        float alpha = 1.0f, beta = 0.0f;
        if (io->z) {
            if (io->z != io->y) {
                cudaError_t e = cudaMemcpyAsync(io->y, io->z, (size_t)(rows * io->m) * 2, cudaMemcpyDeviceToDevice, ctx->stream);
                if (e != cudaSuccess) return cuda_fail(e, "conv sum copy");
            }
            beta = 1.0f;
        }
        cublasStatus_t bs = cublasGemmStridedBatchedEx(ctx->cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)io->m, (int)rows, (int)io->c,
                                                       &alpha, st->w16_nhwc, CUDA_R_16F, (int)io->c, 0, io->x, CUDA_R_16F,
                                                       (int)io->c, 0, &beta, io->y, CUDA_R_16F, (int)io->m, 0, 1,
                                                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (bs != CUBLAS_STATUS_SUCCESS) return cublas_fail(bs, "cublasGemmStridedBatchedEx (pointwise Conv)");
        return cuda_f16_nsc_bias_act(ctx, io->y, io->bias, rows, io->m, &p->activation);
    }
    if (st->region && io->vi == V_F16_NHWC) { /* float16 NHWC tensors straight into cuDNN */
        s = cudnn_conv(ctx, st, v, io->x, st->w16_nhwc, io->bias, io->z, io->y, io->ws, &fused);
        if (s != NETRUN_OK || fused) return s;
        return cuda_f16_nsc_bias_act(ctx, io->y, io->bias, io->n * io->ys, io->m, &p->activation);
    }
    if (st->region) { /* float32 NCHW between conversions (chosen when it is faster for this shape) */
        char *x32 = io->ws, *y32 = io->ws + st->x32_bytes, *aws = y32 + st->y32_bytes;
        const void *b32 = io->bias ? st->b32 : NULL;
        if ((s = cuda_f16_to_f32(ctx, io->x, x32, io->n, io->c, io->s, 1)) != NETRUN_OK) return s;
        if (io->z && (s = cuda_f16_to_f32(ctx, io->z, y32, io->n, io->m, io->ys, 1)) != NETRUN_OK) return s;
        if ((s = cudnn_conv(ctx, st, v, x32, st->w32, b32, io->z ? y32 : NULL, y32, aws, &fused)) != NETRUN_OK) return s;
        if (!fused && (s = cuda_conv_bias_act(ctx, y32, b32, io->n, io->m, io->ys, &p->activation)) != NETRUN_OK) return s;
        return cuda_f32_to_f16(ctx, y32, io->y, io->n, io->m, io->ys, 1);
    }
    if (io->vi == V_NATIVE) {
        const void *x = io->x;
        if (st->prepad) {
            int64_t pb[NETRUN_MAX_RANK] = {0}, od[NETRUN_MAX_RANK];
            for (int i = 0; i < st->xrank; i++) od[i] = st->xdims[i];
            for (int d = 0; d < p->n_spatial; d++) {
                pb[2 + d] = p->pads_begin[d];
                od[2 + d] += p->pads_begin[d] + p->pads_end[d];
            }
            if ((s = cuda_zero_pad(ctx, cuda_esize(st->dt), io->ws, io->x, st->xrank, st->xdims, pb, od)) != NETRUN_OK)
                return s;
            x = io->ws;
        }
        s = cudnn_conv(ctx, st, v, x, io->w, io->bias, io->z, io->y, io->ws ? io->ws + st->pad_bytes : NULL, &fused);
        if (s != NETRUN_OK || fused) return s;
        if (st->dt == NETRUN_DTYPE_FLOAT) return cuda_conv_bias_act(ctx, io->y, io->bias, io->n, io->m, io->ys, &p->activation);
        return cuda_bias_activation(ctx, st->dt, io->y, io->bias, io->n, io->m, io->ys, &p->activation);
    }
    /* float16 path: X -> x16, (Z -> y16), conv in float16, y16 -> Y */
    char *x16 = io->ws, *y16 = io->ws + st->x16_bytes, *algo_ws = y16 + st->y16_bytes;
    if ((s = cuda_f32_to_f16(ctx, io->x, x16, io->n, io->c, io->s, v->nhwc)) != NETRUN_OK) return s;
    if (io->z && (s = cuda_f32_to_f16(ctx, io->z, y16, io->n, io->m, io->ys, v->nhwc)) != NETRUN_OK) return s;
    const void *w16 = v->nhwc ? st->w16_nhwc : st->w16;
    const void *b16 = io->bias ? st->b16 : NULL;
    if ((s = cudnn_conv(ctx, st, v, x16, w16, b16, io->z ? y16 : NULL, y16, algo_ws, &fused)) != NETRUN_OK) return s;
    if (fused) return cuda_f16_to_f32(ctx, y16, io->y, io->n, io->m, io->ys, v->nhwc);
    /* one pass: back to float32 NCHW with the bias and activation */
    return cuda_f16_to_f32_bias_act(ctx, y16, io->y, io->bias, io->n, io->m, io->ys, v->nhwc, &p->activation);
}

/* ---- kernel creation ---- */

uint16_t cuda_half_bits(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xffu, man = x & 0x7fffffu;
    if (e == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0)); /* inf / NaN */
    int ex = (int)e - 127 + 15;
    if (ex >= 31) return (uint16_t)(sign | 0x7c00u);                        /* overflow: inf */
    if (ex <= 0) {                                                           /* subnormal or zero */
        if (ex < -10) return (uint16_t)sign;
        man |= 0x800000u;
        int shift = 14 - ex;
        uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)ex << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++; /* may carry into the exponent: still right */
    return (uint16_t)(sign | h);
}

/* Upload float data as float16, optionally reordered [m, c, s] -> [m, s, c]. */
static netrun_status upload_half(const float *src, int64_t m, int64_t c, int64_t s, int to_nsc, void **out) {
    int64_t cnt;
    if (m < 0 || c < 0 || s < 0 || __builtin_mul_overflow(m, c, &cnt) || __builtin_mul_overflow(cnt, s, &cnt) ||
        cnt > INT64_MAX / 4)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda conv: weights too large to convert");
    size_t n = (size_t)cnt;
    uint16_t *h = malloc(n ? n * 2 : 2);
    if (!h) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda conv: out of memory converting weights");
    for (int64_t a = 0; a < m; a++)
        for (int64_t b = 0; b < c; b++)
            for (int64_t k = 0; k < s; k++)
                h[to_nsc ? (a * s + k) * c + b : (a * c + b) * s + k] = cuda_half_bits(src[(a * c + b) * s + k]);
    cudaError_t e = cudaMalloc(out, n ? n * 2 : 2);
    if (e == cudaSuccess) e = cudaMemcpy(*out, h, n * 2, cudaMemcpyHostToDevice);
    free(h);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda conv: cannot upload float16 weights: %s", cudaGetErrorString(e));
    }
    return NETRUN_OK;
}

/* Upload float16 host data [m, c, s]: as float16 reordered to [m, s, c] (NHWC filter), or widened to
 * float32 in the same order (the float32 path of a region Conv). */
static netrun_status upload_from_half(const uint16_t *src, int64_t m, int64_t c, int64_t s, int to_f32, void **out) {
    int64_t cnt;
    if (m < 0 || c < 0 || s < 0 || __builtin_mul_overflow(m, c, &cnt) || __builtin_mul_overflow(cnt, s, &cnt) ||
        cnt > INT64_MAX / 4)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda conv: weights too large to convert");
    size_t n = (size_t)cnt, es = to_f32 ? 4 : 2;
    void *h = malloc(n ? n * es : es);
    if (!h) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda conv: out of memory converting weights");
    for (int64_t a = 0; a < m; a++)
        for (int64_t b = 0; b < c; b++)
            for (int64_t k = 0; k < s; k++) {
                uint16_t v = src[(a * c + b) * s + k];
                if (to_f32) ((float *)h)[(a * c + b) * s + k] = nr_half_to_float(v);
                else ((uint16_t *)h)[(a * s + k) * c + b] = v;
            }
    cudaError_t e = cudaMalloc(out, n ? n * es : es);
    if (e == cudaSuccess) e = cudaMemcpy(*out, h, n * es, cudaMemcpyHostToDevice);
    free(h);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda conv: cannot upload converted weights: %s", cudaGetErrorString(e));
    }
    return NETRUN_OK;
}

double cuda_time_runs(cuda_context *ctx, netrun_status (*fn)(cuda_context *ctx, void *arg), void *arg, int warm,
                      int reps, void *flush, size_t flush_bytes) {
    enum { MAXR = 16 };
    cudaEvent_t ev[2 * MAXR];
    double t[MAXR], res = -1;
    int made = 0;
    if (reps > MAXR) reps = MAXR;
    if (reps < 1) reps = 1;
    for (; made < 2 * reps; made++)
        if (cudaEventCreate(&ev[made]) != cudaSuccess) goto done;
    for (int i = 0; i < warm; i++)
        if (fn(ctx, arg) != NETRUN_OK) goto done;
    for (int i = 0; i < reps; i++) {
        if (flush) cudaMemsetAsync(flush, i & 0xff, flush_bytes, ctx->stream);
        cudaEventRecord(ev[2 * i], ctx->stream);
        if (fn(ctx, arg) != NETRUN_OK) goto done;
        cudaEventRecord(ev[2 * i + 1], ctx->stream);
    }
    if (cudaEventSynchronize(ev[2 * reps - 1]) != cudaSuccess) goto done;
    for (int i = 0; i < reps; i++) { /* insertion sort for the median */
        float ms = 0;
        cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]);
        t[i] = ms;
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    }
    res = t[reps / 2];
done:
    for (int i = 0; i < made; i++) cudaEventDestroy(ev[i]);
    if (res < 0) cudaGetLastError();
    return res;
}

/* Scratch tensors to time a Conv's paths on its real shapes: X, Y, Z, W and B of es bytes an element (zeros), a
 * workspace of ws_bytes and `extra` bytes after it (*extra_at); io set up for them. NULL when the device has no
 * room (the caller keeps its choice). Free with cudaFree after a stream synchronize. */
static char *timing_scratch(cuda_context *ctx, conv_state *st, const netrun_node_desc *node, size_t es,
                            size_t ws_bytes, size_t extra, conv_io *io, char **extra_at) {
    int64_t n = st->xdims[0], c = st->xdims[1], m = st->ydims[1], s = 1, ys = 1;
    for (int i = 2; i < st->xrank; i++) {
        s *= st->xdims[i];
        ys *= st->ydims[i];
    }
    size_t xb = (size_t)(n * c * s) * es, yb = (size_t)(n * m * ys) * es;
    size_t wb = (size_t)cuda_desc_count(&node->inputs[1]) * es;
    size_t off_y = align256(xb), off_z = off_y + align256(yb), off_w = off_z + (st->p.has_sum ? align256(yb) : 0);
    size_t off_b = off_w + align256(wb), off_ws = off_b + align256((size_t)m * es), off_x = off_ws + align256(ws_bytes);
    char *buf = NULL;
    if (cudaMalloc((void **)&buf, off_x + extra) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    cudaMemsetAsync(buf, 0, off_ws, ctx->stream);
    *io = (conv_io){st, V_NATIVE, buf, buf + off_w, st->p.has_bias ? buf + off_b : NULL,
                    st->p.has_sum ? buf + off_z : NULL, buf + off_y, buf + off_ws, n, c, s, m, ys};
    if (extra_at) *extra_at = buf + off_x;
    return buf;
}

/* --precision fp16: time the ready variants on the real shapes with scratch buffers and keep the fastest. */
static netrun_status choose_variant(cuda_context *ctx, conv_state *st, const netrun_node_desc *node) {
    size_t wsb = 0;
    for (int vi = 0; vi < N_VARIANTS; vi++)
        if (st->v[vi].ok && variant_ws(st, vi) > wsb) wsb = variant_ws(st, vi);
    conv_io io;
    char *buf = timing_scratch(ctx, st, node, 4, wsb, 0, &io, NULL);
    if (!buf) { /* no room to measure: stay native */
        cuda_host->log(NETRUN_LOG_INFO, "cuda", "conv %s: no memory to time the float16 paths; float32 kept", node->name);
        return NETRUN_OK;
    }
    int best = V_NATIVE;
    for (int vi = 0; vi < N_VARIANTS; vi++) {
        if (!st->v[vi].ok) continue;
        io.vi = vi;
        double ms = cuda_time_runs(ctx, conv_exec, &io, 2, 5, NULL, 0);
        if (ms < 0) { /* this path fails here: never take it */
            st->v[vi].ok = vi == V_NATIVE && !st->region;
            cudaGetLastError();
            cuda_host->log(NETRUN_LOG_DEBUG, "cuda", "conv %s: %s path failed when timed", node->name, variant_name[vi]);
            continue;
        }
        st->v[vi].ms = ms;
        /* float16 only when it wins by more than the timing noise (3%) */
        if (vi != V_NATIVE && (st->v[best].ms <= 0 || ms < st->v[best].ms * (best == V_NATIVE ? 0.97 : 1.0))) best = vi;
    }
    cudaStreamSynchronize(ctx->stream);
    cudaFree(buf);
    cudaGetLastError();
    if (st->region) { /* the values are float16 NHWC anyway: simply the faster of the two */
        best = -1;
        for (int vi = 0; vi < N_VARIANTS; vi++)
            if (st->v[vi].ok && st->v[vi].ms > 0 && (best < 0 || st->v[vi].ms < st->v[best].ms)) best = vi;
        if (best < 0)
            return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda conv %s: no path of the float16 region Conv ran", node->name);
        st->use = best;
        cuda_host->log(NETRUN_LOG_INFO, "cuda",
                       "conv %s (fp16 region): fp16 NHWC %.4f ms, fp16 %s %.4f ms, fp16 Lt GEMM+epilogue %.4f ms, "
                       "fp32 with conversions %.4f ms -> %s",
                       node->name, st->v[V_F16_NHWC].ok ? st->v[V_F16_NHWC].ms : -1.0, st->dw ? "depthwise" : "GEMM",
                       st->v[V_F16].ok ? st->v[V_F16].ms : -1.0, st->v[V_LT].ok ? st->v[V_LT].ms : -1.0,
                       st->v[V_NATIVE].ok ? st->v[V_NATIVE].ms : -1.0,
                       best == V_NATIVE ? "fp32" : best == V_F16 ? (st->dw ? "fp16 depthwise" : "fp16 GEMM")
                                        : best == V_LT ? "fp16 Lt GEMM+epilogue" : "fp16 NHWC");
        return NETRUN_OK;
    }
    st->use = best;
    cuda_host->log(NETRUN_LOG_INFO, "cuda", "conv %s: fp32 %.4f ms, fp16 NCHW %.4f ms, fp16 NHWC %.4f ms -> %s",
                   node->name, st->v[0].ms, st->v[1].ok ? st->v[1].ms : -1.0, st->v[2].ok ? st->v[2].ms : -1.0,
                   best == V_NATIVE ? "fp32" : variant_name[best]);
    return NETRUN_OK;
}

static void describe(conv_state *st) {
    const conv_variant *v = &st->v[st->use];
    if (!st->ready) {
        snprintf(st->desc, sizeof st->desc, "cudnn (algorithm chosen at run time)");
        return;
    }
    if (st->region) {
        if (st->use == V_LT)
            snprintf(st->desc, sizeof st->desc, "cublasLt fp16 NHWC GEMM+bias/relu/sum (fp16 region; timed lt %.3f / gemm %.3f / "
                     "nhwc %.3f / fp32+conv %.3f ms)", v->ms, st->v[V_F16].ok ? st->v[V_F16].ms : -1.0,
                     st->v[V_F16_NHWC].ok ? st->v[V_F16_NHWC].ms : -1.0, st->v[V_NATIVE].ok ? st->v[V_NATIVE].ms : -1.0);
        else if (st->use == V_F16)
            snprintf(st->desc, sizeof st->desc, "%s (fp16 region; timed %s %.3f / nhwc %.3f / fp32+conv %.3f ms)",
                     st->dw ? "own fp16 NHWC depthwise" : "cublas fp16 NHWC GEMM", st->dw ? "dw" : "gemm", v->ms, st->v[V_F16_NHWC].ok ? st->v[V_F16_NHWC].ms : -1.0, st->v[V_NATIVE].ok ? st->v[V_NATIVE].ms : -1.0);
        else
            snprintf(st->desc, sizeof st->desc, "cudnn %s %s%s (fp16 region; timed nhwc %.3f / fp32+conv %.3f / gemm %.3f ms)",
                     fwd_algo_name(v->algo), st->use == V_NATIVE ? "fp32 between NHWC<->NCHW conversions" : "fp16 NHWC",
                     v->fuse ? " fused bias+act" : "", st->v[V_F16_NHWC].ok ? st->v[V_F16_NHWC].ms : -1.0,
                     st->v[V_NATIVE].ok ? st->v[V_NATIVE].ms : -1.0, st->v[V_F16].ok ? st->v[V_F16].ms : -1.0);
        return;
    }
    int n = snprintf(st->desc, sizeof st->desc, "cudnn %s %s%s%s",
                     st->transpose ? "bwd-data" : fwd_algo_name(v->algo),
                     st->use == V_NATIVE ? (st->dt == NETRUN_DTYPE_FLOAT16 ? "fp16" : "fp32") : variant_name[st->use],
                     v->fuse ? " fused bias+act" : "", st->prepad ? " prepad" : "");
    if (n > 0 && (size_t)n < sizeof st->desc && st->v[0].ms > 0)
        snprintf(st->desc + n, sizeof st->desc - (size_t)n, " (timed fp32 %.3f / fp16 %.3f / nhwc %.3f ms)", st->v[0].ms,
                 st->v[1].ok ? st->v[1].ms : -1.0, st->v[2].ok ? st->v[2].ms : -1.0);
}

/* Timed search: cudnnFind times the bare convolution, repeatedly on the same data, but the node runs it with its
 * bias, ReLU and sum through cudnnConvolutionBiasActivationForward (one kernel for IMPLICIT_PRECOMP_GEMM, extra
 * passes for the other algorithms), between other layers that evict its weights and workspace from L2. So
 * cudnnFind's first candidates and the heuristic's pick are timed again as the node runs them, each run after
 * the L2 was overwritten (scratch tensors, median of 7), and the fastest is kept and cached.
 * ResNet-50 fp32 on an H200: fastest at b32 10.17 -> 8.19 ms; at b1 cudnnFind's own choices ran 2.5-3.5 ms
 * against the heuristic's 1.95 ms. */
static netrun_status time_as_run(cuda_context *ctx, conv_state *st, const netrun_node_desc *node) {
    conv_variant *v = &st->v[V_NATIVE];
    size_t wsb = 0;
    for (int i = 0; i < v->n_cand; i++)
        if (v->cand_ws[i] > wsb) wsb = v->cand_ws[i];
    int l2 = 0;
    if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ctx->device) != cudaSuccess) l2 = 0;
    size_t flush = l2 > 0 ? (size_t)l2 * 2 : 0;
    conv_io io;
    char *flush_at = NULL;
    char *buf = timing_scratch(ctx, st, node, cuda_esize(st->dt), st->pad_bytes + wsb, flush, &io, &flush_at);
    if (!buf) return NETRUN_OK; /* no room to measure: cudnnFind's pick stays */
    int best = -1;
    double best_ms = 0, ms[N_CAND];
    for (int i = 0; i < v->n_cand; i++) {
        v->algo = v->cand[i];
        v->algo_ws = v->cand_ws[i];
        set_fuse(st, v);
        ms[i] = cuda_time_runs(ctx, conv_exec, &io, 1, 7, flush ? flush_at : NULL, flush);
        if (ms[i] < 0) cudaGetLastError(); /* fails as run: never taken */
        else if (best < 0 || ms[i] < best_ms) best = i, best_ms = ms[i];
    }
    cudaStreamSynchronize(ctx->stream);
    cudaFree(buf);
    cudaGetLastError();
    if (best < 0) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda conv %s: no timed algorithm ran", node->name);
    v->algo = v->cand[best];
    v->algo_ws = v->cand_ws[best];
    set_fuse(st, v);
    cache_put(&v->key, v->algo, v->algo_ws);
    char line[256];
    int k = 0;
    for (int i = 0; i < v->n_cand && k < (int)sizeof line; i++)
        k += snprintf(line + k, sizeof line - (size_t)k, "%s%s %.4f ms", i ? ", " : "", fwd_algo_name(v->cand[i]), ms[i]);
    cuda_host->log(NETRUN_LOG_INFO, "cuda", "conv %s: timed as run: %s -> %s", node->name, line, fwd_algo_name(v->algo));
    return NETRUN_OK;
}

static netrun_status conv_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    conv_state *st = cuda_host->alloc(sizeof *st, 16);
    if (!st) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda conv: out of memory");
    memset(st, 0, sizeof *st);
    st->transpose = !strcmp(node->op_type, "ConvTranspose");
    st->dt = cuda_main_dtype(node);
    st->p = *(const netrun_conv_params *)node->params;
    st->region = node->params_size >= sizeof st->p && st->p.src_nhwc && st->p.dst_nhwc;
    int bad = 0;
    for (int i = 0; i < N_VARIANTS; i++) {
        conv_variant *v = &st->v[i];
        bad |= cudnnCreateTensorDescriptor(&v->xd) != CUDNN_STATUS_SUCCESS;
        bad |= cudnnCreateTensorDescriptor(&v->yd) != CUDNN_STATUS_SUCCESS;
        bad |= cudnnCreateTensorDescriptor(&v->bd) != CUDNN_STATUS_SUCCESS;
        bad |= cudnnCreateFilterDescriptor(&v->wd) != CUDNN_STATUS_SUCCESS;
        bad |= cudnnCreateConvolutionDescriptor(&v->cd) != CUDNN_STATUS_SUCCESS;
    }
    if (!bad && !st->transpose && (st->p.activation.kind == NETRUN_ACT_RELU || st->p.activation.kind == NETRUN_ACT_NONE)) {
        bad |= cudnnCreateActivationDescriptor(&st->act) != CUDNN_STATUS_SUCCESS;
        bad |= !bad && cudnnSetActivationDescriptor(st->act, st->p.activation.kind == NETRUN_ACT_RELU
                                                                 ? CUDNN_ACTIVATION_RELU
                                                                 : CUDNN_ACTIVATION_IDENTITY,
                                                    CUDNN_NOT_PROPAGATE_NAN, 0.0) != CUDNN_STATUS_SUCCESS;
    }
    if (bad) {
        conv_destroy(ctx, st);
        return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda conv: cannot create cuDNN descriptors");
    }
    *ws = 0;
    if (node->n_outputs > 0 && known(&node->inputs[0]) && known(&node->inputs[1]) && known(&node->outputs[0]) &&
        cuda_desc_count(&node->inputs[0]) > 0 && cuda_desc_count(&node->outputs[0]) > 0) { /* empty: nothing to plan */
        size_t free_b = 0, total_b = 0;
        if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) free_b = 0;
        size_t limit = ctx->config.workspace_limit ? ctx->config.workspace_limit : SIZE_MAX, cap;
        switch (ctx->config.workspace_policy) {
        case NETRUN_WORKSPACE_FASTEST: cap = free_b / 4 * 3; break;
        case NETRUN_WORKSPACE_MIN_MEMORY: cap = SIZE_MAX; break;
        default: cap = free_b / 8; break;
        }
        if (cap > limit) cap = limit;
        int64_t m = node->outputs[0].dims[1];
        const netrun_value_desc *wv = &node->inputs[1], *bv = node->n_inputs > 2 ? &node->inputs[2] : NULL;
        int has_bias = st->p.has_bias && bv && bv->rank >= 0;
        /* float16 paths: a float32 Conv with constant weights (and bias), no asymmetric pads */
        int f16 = ctx->config.precision == NETRUN_PRECISION_FP16 && !st->transpose && st->dt == NETRUN_DTYPE_FLOAT &&
                  wv->const_data && (size_t)cuda_desc_count(wv) * 4 == wv->const_nbytes &&
                  (!has_bias || (bv->const_data && bv->const_nbytes == (size_t)m * 4));
        for (int d = 0; f16 && d < st->p.n_spatial; d++)
            if (st->p.pads_begin[d] != st->p.pads_end[d]) f16 = 0;
        if (st->region) f16 = 0; /* float16 already: the region's own two paths (conv_setup) */
        netrun_status s = conv_setup(ctx, st, node->inputs[0].rank, node->inputs[0].dims, wv->dims,
                                     node->outputs[0].dims, cap, timed_search(ctx), f16);
        if (s == NETRUN_OK && st->region) { /* supports() checked: W (and B) are float16 constants */
            int64_t cg = wv->dims[1], ks = 1;
            for (int i = 2; i < wv->rank; i++) ks *= wv->dims[i];
            if (st->v[V_F16_NHWC].ok || st->v[V_F16].ok || st->v[V_LT].ok)
                s = upload_from_half(wv->const_data, wv->dims[0], cg, ks, 0, &st->w16_nhwc);
            if (s == NETRUN_OK && st->dw && st->v[V_F16].ok) /* [C, kh*kw] -> [kh*kw, C] */
                s = upload_from_half(wv->const_data, 1, wv->dims[0], ks, 0, &st->w16_dw);
            if (s == NETRUN_OK && st->v[V_NATIVE].ok) {
                s = upload_from_half(wv->const_data, wv->dims[0], cg, ks, 1, &st->w32);
                if (s == NETRUN_OK && has_bias) s = upload_from_half(bv->const_data, 1, 1, m, 1, &st->b32);
            }
        }
        if (s == NETRUN_OK && (st->act || f16 || st->region)) { /* M zeros: the fused call's bias when the node has none */
            cudaError_t e = cudaMalloc(&st->zero_bias, (size_t)m * 4);
            if (e == cudaSuccess) e = cudaMemset(st->zero_bias, 0, (size_t)m * 4);
            if (e != cudaSuccess) s = cuda_fail(e, "conv zero bias");
        }
        if (s == NETRUN_OK && !st->region && !st->transpose && st->v[V_NATIVE].ok && st->v[V_NATIVE].n_cand > 1)
            s = time_as_run(ctx, st, node);
        if (s == NETRUN_OK && f16 && (st->v[V_F16].ok || st->v[V_F16_NHWC].ok)) {
            int64_t cg = wv->dims[1], ks = 1;
            for (int i = 2; i < wv->rank; i++) ks *= wv->dims[i];
            s = upload_half(wv->const_data, wv->dims[0], cg, ks, 0, &st->w16);
            if (s == NETRUN_OK && st->v[V_F16_NHWC].ok) s = upload_half(wv->const_data, wv->dims[0], cg, ks, 1, &st->w16_nhwc);
            if (s == NETRUN_OK && has_bias) s = upload_half(bv->const_data, 1, 1, m, 0, &st->b16);
            if (s == NETRUN_OK) s = choose_variant(ctx, st, node);
        }
        if (s == NETRUN_OK && st->region && st->v[V_NATIVE].ok + st->v[V_F16_NHWC].ok + st->v[V_F16].ok + st->v[V_LT].ok > 1)
            s = choose_variant(ctx, st, node);
        if (s != NETRUN_OK) {
            conv_destroy(ctx, st);
            return s;
        }
        *ws = variant_ws(st, st->use);
    }
    describe(st);
    *state = st;
    return NETRUN_OK;
}

static int same_dims(int r, const int64_t *a, const int64_t *b) {
    for (int i = 0; i < r; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static netrun_status conv_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    conv_state *st = state;
    const netrun_tensor *X = &args->inputs[0], *W = &args->inputs[1];
    netrun_tensor *Y = &args->outputs[0];
    const netrun_conv_params *p = args->params ? (const netrun_conv_params *)args->params : &st->p;
    if (cuda_count(Y) == 0) return NETRUN_OK;
    netrun_status s;
    if (!st->ready || X->rank != st->xrank || !same_dims(X->rank, X->dims, st->xdims) ||
        !same_dims(X->rank, W->dims, st->wdims) || !same_dims(X->rank, Y->dims, st->ydims)) {
        st->p = *p;
        /* shapes known only now: the heuristic's best native path that fits what we can get */
        size_t cap = args->workspace_size > (size_t)256 << 20 ? args->workspace_size : (size_t)256 << 20;
        if (ctx->config.workspace_limit && cap > ctx->config.workspace_limit) cap = ctx->config.workspace_limit;
        if ((s = conv_setup(ctx, st, X->rank, X->dims, W->dims, Y->dims, cap, 0, 0)) != NETRUN_OK) return s;
        if (st->region) { /* only the paths whose weights were uploaded at creation */
            if (st->use == V_NATIVE && !st->w32) st->use = V_F16_NHWC;
            if (((st->use == V_F16_NHWC || st->use == V_F16 || st->use == V_LT) && !st->w16_nhwc) || (st->use == V_F16 && st->dw && !st->w16_dw) ||
                !st->v[st->use].ok)
                return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda conv: region Conv shapes changed at run time");
        }
        describe(st);
    }
    size_t need = variant_ws(st, st->use);
    char *ws = cuda_workspace_address(args->workspace);
    if (need > args->workspace_size) {
        if (need > st->scratch_size) {
            /* stream-ordered: cudaFree/cudaMalloc here would wait for the whole device in the middle of a run */
            netrun_status rc = cuda_refuse_capture(ctx, "Conv growing its workspace");
            if (rc != NETRUN_OK) return rc;
            cuda_scratch_free(ctx, st->scratch);
            st->scratch = NULL;
            st->scratch_size = 0;
            cudaError_t e = cuda_scratch_alloc(ctx, &st->scratch, need);
            if (e != cudaSuccess) {
                cudaGetLastError();
                return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda conv: cannot allocate a %zu-byte workspace", need);
            }
            st->scratch_size = need;
        }
        ws = st->scratch;
    }
    const void *z = NULL;
    if (p->has_sum) {
        const netrun_tensor *Z = &args->inputs[args->n_inputs - 1];
        if (Z->nbytes != Y->nbytes) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda conv: fused sum of another size");
        z = Z->data;
    }
    int64_t inner = 1, xs = 1;
    for (int i = 2; i < Y->rank; i++) inner *= Y->dims[i];
    for (int i = 2; i < X->rank; i++) xs *= X->dims[i];
    const void *bias = p->has_bias && args->n_inputs > 2 && args->inputs[2].rank >= 0 ? args->inputs[2].data : NULL;
    conv_io io = {st, st->use, X->data, W->data, bias, z, Y->data, ws, X->dims[0], X->dims[1], xs, Y->dims[1], inner};
    return conv_exec(ctx, &io);
}

void cuda_op_describe(const cuda_op *op, void *state, char *buf, size_t size) {
    if (!size) return;
    buf[0] = 0;
    if (!op || !state) return;
    if (op->destroy == conv_destroy) snprintf(buf, size, "%s", ((conv_state *)state)->desc);
    else if (!strcmp(op->op_type, "Gemm") || !strcmp(op->op_type, "MatMul")) cuda_gemm_describe(state, buf, size);
    else if (!strcmp(op->op_type, "Attention")) cuda_attention_describe(state, buf, size);
    else if (!strcmp(op->op_type, "MatMulBias")) cuda_matmul_bias_describe(state, buf, size);
    else if (!strcmp(op->op_type, "QLinearConv") || !strcmp(op->op_type, "QLinearMatMul"))
        cuda_qlinear_describe(state, buf, size);
}

/* ---- ReorderNHWC (com.netrun): the float16 region pass's border conversion, one kernel each way ---- */

static int reorder_nhwc_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_reorder_nhwc_params *p = node->params;
    if (!p || node->params_size < sizeof *p || node->n_inputs != 1 || node->n_outputs != 1)
        return cuda_refuse(reason, size, "ReorderNHWC needs its params, one input, one output");
    netrun_dtype want = p->to_nhwc ? NETRUN_DTYPE_FLOAT : NETRUN_DTYPE_FLOAT16;
    if (node->inputs[0].dtype != want || node->inputs[0].rank != 4)
        return cuda_refuse(reason, size, "ReorderNHWC needs a 4-D %s input", p->to_nhwc ? "float32" : "float16");
    return 1;
}

static netrun_status reorder_nhwc_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_reorder_nhwc_params *p = args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    if (!p || X->rank != 4 || cuda_count(Y) != cuda_count(X) || X->data == Y->data)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda ReorderNHWC: needs a 4-D X and a separate Y of its size");
    int64_t hw = X->dims[2] * X->dims[3];
    return p->to_nhwc ? cuda_f32_to_f16(ctx, X->data, Y->data, X->dims[0], X->dims[1], hw, 1)
                      : cuda_f16_to_f32(ctx, X->data, Y->data, X->dims[0], X->dims[1], hw, 1);
}

/* ConcatNHWC (com.netrun): per input one 2-D copy, rows N*H*W of Ci channels into rows of sum Ci. */
static netrun_status concat_nhwc_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_tensor *Y = &args->outputs[0];
    if (args->n_outputs != 1 || Y->rank != 4 || Y->dtype != NETRUN_DTYPE_FLOAT16)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda ConcatNHWC: needs a 4-D float16 Y");
    int64_t rows = Y->dims[0] * Y->dims[2] * Y->dims[3], ct = Y->dims[1], off = 0;
    for (int i = 0; i < args->n_inputs; i++) {
        const netrun_tensor *X = &args->inputs[i];
        if (X->rank != 4 || X->dtype != NETRUN_DTYPE_FLOAT16 || X->dims[0] * X->dims[2] * X->dims[3] != rows ||
            off + X->dims[1] > ct)
            return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda ConcatNHWC: input %d does not match Y", i);
        if (rows > 0 && X->dims[1] > 0) {
            cudaError_t e = cudaMemcpy2DAsync((char *)Y->data + off * 2, (size_t)ct * 2, X->data, (size_t)X->dims[1] * 2,
                                              (size_t)X->dims[1] * 2, (size_t)rows, cudaMemcpyDeviceToDevice, ctx->stream);
            if (e != cudaSuccess) return cuda_fail(e, "ConcatNHWC copy");
        }
        off += X->dims[1];
    }
    if (off != ct) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda ConcatNHWC: channels do not add up");
    return NETRUN_OK;
}

const cuda_op cuda_ops_internal[] = {
    {"ReorderNHWC", CUDA_FLOAT_DTYPES, "4-D float32 NCHW <-> float16 NHWC (internal: float16 region borders)",
     reorder_nhwc_supports, NULL, reorder_nhwc_run, NULL},
    {"GlobalAveragePoolNHWC", CUDA_DT(FLOAT16), "4-D float16 NHWC (internal: float16 regions)", NULL,
     cuda_gap_nhwc_create, cuda_gap_nhwc_run, NULL},
    {"ConcatNHWC", CUDA_DT(FLOAT16), "float16 NHWC inputs joined on channels (internal: float16 regions)", NULL, NULL,
     concat_nhwc_run, NULL},
    {"MulChannelNHWC", CUDA_DT(FLOAT16), "float16 NHWC X times float16 S [N or 1, C, 1, 1] (internal: float16 regions)",
     NULL, NULL, cuda_mulch_nhwc_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};

const cuda_op cuda_ops_conv[] = {
    {"Conv", CUDA_FLOAT_DTYPES,
     "cuDNN; 1-3 spatial dims; groups, dilations; bias+ReLU(+sum) fused in cuDNN, other activations after; "
     "fp16 paths (NCHW/NHWC) timed under --precision fp16",
     conv_supports, conv_create, conv_run, conv_destroy},
    {"ConvTranspose", CUDA_FLOAT_DTYPES, "cuDNN; 1-3 spatial dims; symmetric pads", conv_supports, conv_create,
     conv_run, conv_destroy},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
