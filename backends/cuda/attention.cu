/* CUDA kernels: Attention (opset 23/24), RotaryEmbedding, LinearAttention and CausalConvWithState, float32 and
 * float16 computed in float, after the CPU kernels in backends/cpu/transformer.c.
 * Attention runs through cuBLAS (see "the cuBLAS path" below: batched GEMMs for Q K^T and P V around a softmax
 * kernel, scores in the workspace). attn_k is the general fallback for what that path does not take (mixed
 * Q/K/V/Y dtypes, past K/V without present outputs, option cuda.attention_workspace_mb=0, a workspace too small
 * for one head): one block per (query row, q head, batch) keeps the scaled query row and the row of scores in
 * shared memory: scores (one thread per key), softmax (block max / sum), then the weighted sum of V (one thread
 * per output column). Straightforward rather than fast: no tiling over keys. */
#include "nlp_common.cuh"

/* ================================ Attention ================================ */

struct attn_args {
    const void *q, *k, *v, *mask, *pk, *pv;
    const int64_t *nonpad;
    void *y, *qk;
    int qt, kt, vt, mt, yt, qkt;        /* dtypes */
    int mask_kind, is_causal, mode, has_nonpad;
    float sq, softcap;                  /* sqrt(scale) applied to Q and K, as the reference does */
    int64_t Hq, group, Hk, Lq, Lk, Lp, Lt, E, Ev;
    int64_t qs[3], ks[3], vs[3], ys[3]; /* element strides (batch, head, seq) */
    int64_t ms[4], mlast;               /* mask strides over [B, Hq, Lq, Lm], Lm */
};

/* Score x of key c for query row i of pair (b, h) after softcap, mask, causal and nonpad, writing the
 * qk_matmul_output of modes 0-2 on the way (A: attn_args or attn_sm_args, which name these fields alike). */
template <typename A>
__device__ __forceinline__ float attn_bias_score(const A &a, float x, int64_t b, int64_t h, int64_t i,
                                                 int64_t c, int64_t qk0) {
    if (a.qk && a.mode == 0) stx(a.qkt, a.qk, qk0 + c, x);
    if (a.softcap > 0) x = a.softcap * tanhf(x / a.softcap);
    if (a.qk && a.mode == 1) stx(a.qkt, a.qk, qk0 + c, x);
    float bias = 0;
    if (a.mask_kind) {
        if (c >= a.mlast) bias = -INFINITY;
        else {
            int64_t off = b * a.ms[0] + h * a.ms[1] + i * a.ms[2] + c * a.ms[3];
            if (a.mask_kind == 1) { if (!((const uint8_t *)a.mask)[off]) bias = -INFINITY; }
            else bias = ldx(a.mt, a.mask, off);
        }
    }
    if (bias != -INFINITY) {
        if (a.is_causal && c > i + a.Lp) bias = -INFINITY;
        if (a.has_nonpad && c >= a.nonpad[b]) bias = -INFINITY;
    }
    x += bias;
    if (a.qk && a.mode == 2) stx(a.qkt, a.qk, qk0 + c, x);
    return x;
}

__global__ void attn_k(attn_args a) {
    extern __shared__ float smem[];
    __shared__ float red[32];
    float *qr = smem, *sc = smem + a.E;
    const int64_t i = blockIdx.x, h = blockIdx.y, b = blockIdx.z, hk = h / a.group;
    const int64_t qbase = b * a.qs[0] + h * a.qs[1] + i * a.qs[2];
    for (int64_t e = threadIdx.x; e < a.E; e += blockDim.x) qr[e] = ldx(a.qt, a.q, qbase + e) * a.sq;
    __syncthreads();
    const int64_t qk0 = ((b * a.Hq + h) * a.Lq + i) * a.Lt;
    float mx = -INFINITY;
    for (int64_t c = threadIdx.x; c < a.Lt; c += blockDim.x) {
        const void *kp;
        int64_t kb;
        if (c < a.Lp) { kp = a.pk; kb = ((b * a.Hk + hk) * a.Lp + c) * a.E; }
        else { kp = a.k; kb = b * a.ks[0] + hk * a.ks[1] + (c - a.Lp) * a.ks[2]; }
        float x = 0;
        for (int64_t e = 0; e < a.E; e++) x += qr[e] * (ldx(a.kt, kp, kb + e) * a.sq);
        x = attn_bias_score(a, x, b, h, i, c, qk0);
        sc[c] = x;
        mx = fmaxf(mx, x);
    }
    mx = block_max(mx, red);
    float s = 0;
    for (int64_t c = threadIdx.x; c < a.Lt; c += blockDim.x) {
        float ev = expf(sc[c] - mx);
        sc[c] = ev;
        s += ev;
    }
    s = block_sum(s, red); /* ends with __syncthreads: every sc[c] is written */
    const float inv = 1.0f / s;
    for (int64_t c = threadIdx.x; c < a.Lt; c += blockDim.x) {
        sc[c] *= inv;
        if (a.qk && a.mode == 3) stx(a.qkt, a.qk, qk0 + c, sc[c]);
    }
    __syncthreads();
    const int64_t ybase = b * a.ys[0] + h * a.ys[1] + i * a.ys[2];
    for (int64_t e = threadIdx.x; e < a.Ev; e += blockDim.x) {
        float o = 0;
        for (int64_t c = 0; c < a.Lt; c++) {
            float v = c < a.Lp ? ldx(a.vt, a.pv, ((b * a.Hk + hk) * a.Lp + c) * a.Ev + e)
                               : ldx(a.vt, a.v, b * a.vs[0] + hk * a.vs[1] + (c - a.Lp) * a.vs[2] + e);
            o += sc[c] * v;
        }
        stx(a.yt, a.y, ybase + e, o);
    }
}

/* present = concat(past, cur) along the sequence, 4-D [B, Hk, Lt, E]; cur in its own layout (strides cs). */
template <typename T>
__global__ void attn_present_k(T *out, const T *past, const T *cur, int64_t B, int64_t Hk, int64_t Lp, int64_t Lt,
                               int64_t E, int64_t cs0, int64_t cs1, int64_t cs2) {
    GRID_LOOP(x, B * Hk * Lt * E) {
        int64_t e = x % E, c = (x / E) % Lt, bh = x / (E * Lt), h = bh % Hk, b = bh / Hk;
        out[x] = c < Lp ? past[(bh * Lp + c) * E + e] : cur[b * cs0 + h * cs1 + (c - Lp) * cs2 + e];
    }
}

static void layout_strides(int is3d, int64_t heads, int64_t len, int64_t e, int64_t s[3]) {
    if (is3d) { s[0] = len * heads * e; s[1] = e; s[2] = heads * e; }
    else { s[0] = heads * len * e; s[1] = len * e; s[2] = e; }
}

/* ---- the cuBLAS path ----
 * Per chunk of (batch, q head) pairs: S = scale * Q K^T (batched GEMM, float32 scores in the workspace), one warp
 * per score row for softcap, mask, causal, nonpad and the softmax (float32; P in V's dtype: in place over S for
 * float32, a float16 copy beside it for float16), then Y = P V (batched GEMM into Y's own layout). The batching
 * follows the layouts: one strided call when every operand steps evenly over the pairs (4-D without GQA), else
 * one pointer-array call (3-D, GQA) when every address is 16-byte aligned, else a strided call per run of evenly
 * stepping pairs. attn_k stays for what this does not cover (see attn_fast_refusal). */

/* Scores of a chunk: pair j's matrix starts at j * sps floats (P16 at j * pps halves), padded to 16 bytes. */
static int64_t attn_sps(int64_t Lq, int64_t Lt) { return (Lq * Lt + 3) / 4 * 4; }
static int64_t attn_pps(int64_t Lq, int64_t Lt) { return (Lq * Lt + 7) / 8 * 8; }
static size_t al256(size_t x) { return (x + 255) & ~(size_t)255; }

/* Workspace bytes for a chunk of n pairs (SIZE_MAX when beyond size_t): 3n GEMM pointers, scores, float16 P. */
static size_t attn_ws_bytes(int64_t n, int64_t Lq, int64_t Lt, int p16) {
    double d = 24.0 * n + 4.0 * n * attn_sps(Lq, Lt) + (p16 ? 2.0 * n * attn_pps(Lq, Lt) : 0.0) + 768.0;
    if (d > (double)(SIZE_MAX / 2)) return SIZE_MAX;
    return al256((size_t)n * 24) + al256((size_t)n * attn_sps(Lq, Lt) * 4) +
           (p16 ? al256((size_t)n * attn_pps(Lq, Lt) * 2) : 0);
}

/* The most pairs whose chunk fits `bytes` (at most total). */
static int64_t attn_chunk_pairs(size_t bytes, int64_t total, int64_t Lq, int64_t Lt, int p16) {
    if (bytes <= 768 || total <= 0) return 0;
    double per = 24.0 + 4.0 * attn_sps(Lq, Lt) + (p16 ? 2.0 * attn_pps(Lq, Lt) : 0.0);
    double n = (double)(bytes - 768) / per;
    int64_t c = n >= (double)total ? total : (int64_t)n;
    while (c > 0 && attn_ws_bytes(c, Lq, Lt, p16) > bytes) c--;
    return c;
}

/* One GEMM operand: element offset of pair g (chunk index j) = b * s0 + head * s1, head = h or its kv head h /
 * group; local (the chunk's S or P): j * s0. */
struct attn_mat {
    char *base;
    int64_t es, s0, s1;
    int kv, local;
};

__host__ __device__ static inline int64_t attn_off(const attn_mat &m, int64_t g, int64_t j, int64_t Hq, int64_t group) {
    if (m.local) return j * m.s0;
    int64_t b = g / Hq, h = g % Hq;
    return b * m.s0 + (m.kv ? h / group : h) * m.s1;
}

struct attn_ptr_args {
    attn_mat m[3];
    int64_t p0, n, Hq, group;
    void **out; /* {A_j}, {B_j}, {Y_j} */
};

__global__ void attn_ptrs_k(attn_ptr_args a) {
    GRID_LOOP(j, a.n) {
        for (int t = 0; t < 3; t++) a.out[t * a.n + j] = a.m[t].base + attn_off(a.m[t], a.p0 + j, j, a.Hq, a.group) * a.m[t].es;
    }
}

struct attn_sm_args {
    float *s;           /* the chunk's scores, row (j, i) at s + j * sps + i * Lt; P too when p16 is NULL */
    __half *p16;        /* float16 P (V float16), row (j, i) at p16 + j * pps + i * Lt */
    const void *mask;
    const int64_t *nonpad;
    void *qk;
    int mt, qkt, mask_kind, mode, is_causal, has_nonpad;
    float softcap;
    int64_t pair0, Hq, Lq, Lt, Lp, sps, pps, rows;
    int64_t ms[4], mlast;
};

/* One warp per score row. PER > 0: the row (at most 32 * PER keys) stays in registers; 0: worked in place. */
template <int PER> __global__ void attn_softmax_k(attn_sm_args a) {
    const int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= a.rows) return; /* whole warps leave: the shuffles below see full warps */
    const int lane = threadIdx.x & 31;
    const int64_t j = row / a.Lq, i = row % a.Lq, g = a.pair0 + j, b = g / a.Hq, h = g % a.Hq;
    float *sr = a.s + j * a.sps + i * a.Lt;
    __half *pr = a.p16 ? a.p16 + j * a.pps + i * a.Lt : NULL;
    const int64_t qk0 = (g * a.Lq + i) * a.Lt;
    float v[PER > 0 ? PER : 1];
    float mx = -INFINITY;
    if (PER > 0) {
#pragma unroll
        for (int t = 0; t < PER; t++) {
            int64_t c = lane + 32 * t;
            v[t] = c < a.Lt ? attn_bias_score(a, sr[c], b, h, i, c, qk0) : -INFINITY;
            mx = fmaxf(mx, v[t]);
        }
    } else {
        for (int64_t c = lane; c < a.Lt; c += 32) {
            float x = attn_bias_score(a, sr[c], b, h, i, c, qk0);
            sr[c] = x;
            mx = fmaxf(mx, x);
        }
    }
    mx = warp_max(mx);
    float sum = 0;
    if (PER > 0) {
#pragma unroll
        for (int t = 0; t < PER; t++)
            if (lane + 32 * t < a.Lt) {
                v[t] = expf(v[t] - mx);
                sum += v[t];
            }
    } else {
        for (int64_t c = lane; c < a.Lt; c += 32) {
            float e = expf(sr[c] - mx);
            sr[c] = e;
            sum += e;
        }
    }
    sum = warp_sum(sum);
    const float inv = 1.0f / sum;
    if (PER > 0) {
#pragma unroll
        for (int t = 0; t < PER; t++) {
            int64_t c = lane + 32 * t;
            if (c >= a.Lt) continue;
            float pv = v[t] * inv;
            if (a.qk && a.mode == 3) stx(a.qkt, a.qk, qk0 + c, pv);
            if (pr) pr[c] = __float2half_rn(pv);
            else sr[c] = pv;
        }
    } else {
        for (int64_t c = lane; c < a.Lt; c += 32) {
            float pv = sr[c] * inv;
            if (a.qk && a.mode == 3) stx(a.qkt, a.qk, qk0 + c, pv);
            if (pr) pr[c] = __float2half_rn(pv);
            else sr[c] = pv;
        }
    }
}

static netrun_status attn_softmax(cuda_context *ctx, const attn_sm_args &s) {
    const int warps = 4;
    int64_t blocks = (s.rows + warps - 1) / warps;
    if (blocks > INT32_MAX) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda Attention: too many score rows");
    dim3 grid((unsigned)blocks), block(32 * warps);
    if (s.Lt <= 32 * 4) attn_softmax_k<4><<<grid, block, 0, ctx->stream>>>(s);
    else if (s.Lt <= 32 * 16) attn_softmax_k<16><<<grid, block, 0, ctx->stream>>>(s);
    else if (s.Lt <= 32 * 32) attn_softmax_k<32><<<grid, block, 0, ctx->stream>>>(s);
    else attn_softmax_k<0><<<grid, block, 0, ctx->stream>>>(s);
    return cuda_check_launch("Attention softmax");
}

/* The geometry of one GEMM over a chunk [p0, p0 + n) of pairs. */
struct attn_gemm_args {
    attn_mat m[3]; /* A, B, Y */
    netrun_dtype in, out;
    int tb;
    int64_t M, N, K, lda, ldb, ldy;
    float alpha;
};

/* The length of the run of pairs from chunk index j0 whose operands step evenly, and the steps. */
static int64_t attn_even_run(const attn_gemm_args &ga, int64_t p0, int64_t j0, int64_t n, int64_t Hq, int64_t group,
                             int64_t step[3]) {
    for (int t = 0; t < 3; t++) step[t] = 0;
    if (j0 + 1 >= n) return n - j0;
    int64_t prev[3];
    for (int t = 0; t < 3; t++) {
        prev[t] = attn_off(ga.m[t], p0 + j0 + 1, j0 + 1, Hq, group);
        step[t] = prev[t] - attn_off(ga.m[t], p0 + j0, j0, Hq, group);
    }
    int64_t j = j0 + 2;
    for (; j < n; j++) {
        int even = 1;
        for (int t = 0; t < 3 && even; t++) {
            int64_t o = attn_off(ga.m[t], p0 + j, j, Hq, group);
            even = o - prev[t] == step[t];
            prev[t] = o;
        }
        if (!even) break;
    }
    return j - j0;
}

static int attn_aligned(const attn_mat &m) {
    return (uintptr_t)m.base % 16 == 0 && (m.s0 * m.es) % 16 == 0 && (m.local || (m.s1 * m.es) % 16 == 0);
}

static netrun_status attn_gemm(cuda_context *ctx, const attn_gemm_args &ga, int64_t p0, int64_t n, int64_t Hq,
                               int64_t group, void **ptrs) {
    int64_t step[3];
    int64_t len = attn_even_run(ga, p0, 0, n, Hq, group, step);
    const void *a0 = ga.m[0].base + attn_off(ga.m[0], p0, 0, Hq, group) * ga.m[0].es;
    const void *b0 = ga.m[1].base + attn_off(ga.m[1], p0, 0, Hq, group) * ga.m[1].es;
    void *y0 = ga.m[2].base + attn_off(ga.m[2], p0, 0, Hq, group) * ga.m[2].es;
    if (len == n) {
        return cuda_gemm_rows_batched(ctx, ga.in, ga.out, 0, ga.tb, ga.M, ga.N, ga.K, ga.alpha, a0, ga.lda, step[0], b0,
                                      ga.ldb, step[1], y0, ga.ldy, step[2], n, NULL);
    }
    if (attn_aligned(ga.m[0]) && attn_aligned(ga.m[1]) && attn_aligned(ga.m[2])) {
        attn_ptr_args pa;
        for (int t = 0; t < 3; t++) pa.m[t] = ga.m[t];
        pa.p0 = p0; pa.n = n; pa.Hq = Hq; pa.group = group; pa.out = ptrs;
        attn_ptrs_k<<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(pa);
        netrun_status st = cuda_check_launch("Attention pointers");
        if (st != NETRUN_OK) return st;
        return cuda_gemm_rows_batched(ctx, ga.in, ga.out, 0, ga.tb, ga.M, ga.N, ga.K, ga.alpha, NULL, ga.lda, 0, NULL,
                                      ga.ldb, 0, NULL, ga.ldy, 0, n, ptrs);
    }
    for (int64_t j = 0; j < n; j += len) {
        len = attn_even_run(ga, p0, j, n, Hq, group, step);
        const void *a = ga.m[0].base + attn_off(ga.m[0], p0 + j, j, Hq, group) * ga.m[0].es;
        const void *b = ga.m[1].base + attn_off(ga.m[1], p0 + j, j, Hq, group) * ga.m[1].es;
        void *y = ga.m[2].base + attn_off(ga.m[2], p0 + j, j, Hq, group) * ga.m[2].es;
        netrun_status st = cuda_gemm_rows_batched(ctx, ga.in, ga.out, 0, ga.tb, ga.M, ga.N, ga.K, ga.alpha, a, ga.lda,
                                                  step[0], b, ga.ldb, step[1], y, ga.ldy, step[2], len, NULL);
        if (st != NETRUN_OK) return st;
    }
    return NETRUN_OK;
}

typedef struct attn_state {
    int flash;         /* the fused float16 kernel takes the node (flash_refusal) */
    int fast;          /* cuBLAS is there and the cap is not 0 */
    size_t cap;        /* bytes of workspace the path may use */
    char desc[160];
} attn_state;

/* Why the cuBLAS path does not take these tensors (NULL: it does). */
static const char *attn_fast_refusal(const attn_state *st, int qt, int kt, int vt, int yt, int has_past,
                                     int has_present, int64_t E, int64_t Ev, int64_t Lt) {
    if (!st || !st->fast) return "cuBLAS path off";
    if (qt != kt || qt != vt || qt != yt) return "mixed Q/K/V/Y dtypes";
    if (has_past && !has_present) return "past K/V without present outputs";
    if (E == 0 || Ev == 0 || Lt == 0) return "empty head or sequence";
    return NULL;
}

/* Runs Attention through cuBLAS when attn_fast_refusal lets it and the workspace holds at least one pair (*done
 * = 1); otherwise leaves it to attn_k (*done = 0). Present outputs are already written. */
static netrun_status attn_fast(cuda_context *ctx, const attn_state *st, const netrun_kernel_args *args,
                               const netrun_attention_params *p, const attn_args &a, const netrun_tensor *PRK,
                               const netrun_tensor *PRV, int *done) {
    *done = 0;
    if (attn_fast_refusal(st, a.qt, a.kt, a.vt, a.yt, p->has_past, PRK && PRV, a.E, a.Ev, a.Lt)) return NETRUN_OK;
    const int p16 = a.vt == NETRUN_DTYPE_FLOAT16;
    const int64_t total = p->batch * a.Hq;
    size_t bytes = args->workspace_size < st->cap ? args->workspace_size : st->cap;
    char *ws = (char *)cuda_workspace_address(args->workspace);
    int64_t nc = ws ? attn_chunk_pairs(bytes, total, a.Lq, a.Lt, p16) : 0;
    if (nc < 1) return NETRUN_OK;
    const int64_t sps = attn_sps(a.Lq, a.Lt), pps = attn_pps(a.Lq, a.Lt), es = (int64_t)cuda_esize((netrun_dtype)a.qt);
    void **ptrs = (void **)ws;
    float *S = (float *)(ws + al256((size_t)nc * 24));
    __half *P16 = p16 ? (__half *)((char *)S + al256((size_t)nc * sps * 4)) : NULL;
    /* K and V: the present buffers [B, Hk, Lt, E] when there is a past, else the inputs in their layout */
    const char *kb = (const char *)a.k, *vb = (const char *)a.v;
    int64_t ks[3] = {a.ks[0], a.ks[1], a.ks[2]}, vs[3] = {a.vs[0], a.vs[1], a.vs[2]};
    if (p->has_past) {
        kb = (const char *)PRK->data;
        vb = (const char *)PRV->data;
        layout_strides(0, a.Hk, a.Lt, a.E, ks);
        layout_strides(0, a.Hk, a.Lt, a.Ev, vs);
    }
    attn_gemm_args g1, g2;
    memset(&g1, 0, sizeof g1);
    memset(&g2, 0, sizeof g2);
    /* S[Lq, Lt] = scale * Q[Lq, E] K[Lt, E]^T */
    g1.m[0] = {(char *)a.q, es, a.qs[0], a.qs[1], 0, 0};
    g1.m[1] = {(char *)kb, es, ks[0], ks[1], 1, 0};
    g1.m[2] = {(char *)S, 4, sps, 0, 0, 1};
    g1.in = (netrun_dtype)a.qt; g1.out = NETRUN_DTYPE_FLOAT; g1.tb = 1;
    g1.M = a.Lq; g1.N = a.Lt; g1.K = a.E; g1.lda = a.qs[2]; g1.ldb = ks[2]; g1.ldy = a.Lt;
    g1.alpha = p->scale;
    /* Y[Lq, Ev] = P[Lq, Lt] V[Lt, Ev] */
    g2.m[0] = p16 ? attn_mat{(char *)P16, 2, pps, 0, 0, 1} : attn_mat{(char *)S, 4, sps, 0, 0, 1};
    g2.m[1] = {(char *)vb, es, vs[0], vs[1], 1, 0};
    g2.m[2] = {(char *)a.y, es, a.ys[0], a.ys[1], 0, 0};
    g2.in = (netrun_dtype)a.vt; g2.out = (netrun_dtype)a.yt; g2.tb = 0;
    g2.M = a.Lq; g2.N = a.Ev; g2.K = a.Lt; g2.lda = a.Lt; g2.ldb = vs[2]; g2.ldy = a.ys[2];
    g2.alpha = 1.0f;
    attn_sm_args sm;
    memset(&sm, 0, sizeof sm);
    sm.s = S; sm.p16 = P16;
    sm.mask = a.mask; sm.mt = a.mt; sm.mask_kind = a.mask_kind;
    for (int d = 0; d < 4; d++) sm.ms[d] = a.ms[d];
    sm.mlast = a.mlast;
    sm.nonpad = a.nonpad; sm.has_nonpad = a.has_nonpad;
    sm.qk = a.qk; sm.qkt = a.qkt; sm.mode = a.mode;
    sm.is_causal = a.is_causal; sm.softcap = a.softcap;
    sm.Hq = a.Hq; sm.Lq = a.Lq; sm.Lt = a.Lt; sm.Lp = a.Lp; sm.sps = sps; sm.pps = pps;
    for (int64_t p0 = 0; p0 < total; p0 += nc) {
        int64_t n = total - p0 < nc ? total - p0 : nc;
        netrun_status s = attn_gemm(ctx, g1, p0, n, a.Hq, a.group, ptrs);
        if (s != NETRUN_OK) return s;
        sm.pair0 = p0;
        sm.rows = n * a.Lq;
        if ((s = attn_softmax(ctx, sm)) != NETRUN_OK) return s;
        if ((s = attn_gemm(ctx, g2, p0, n, a.Hq, a.group, ptrs)) != NETRUN_OK) return s;
    }
    *done = 1;
    return NETRUN_OK;
}

/* ---- the fused float16 path (flash attention) ----
 * Q, K, V and Y float16, one head size E = Ev of 32, 64 or 128, no past K/V, present or qk outputs, no softcap:
 * one kernel per node, no scores in memory (FlashAttention-2's scheme). A block takes 16 * W query rows of one
 * (batch, q head) pair, 16 a warp, and walks the keys in tiles of 64, double-buffered in shared memory (cp.async).
 * Per tile each warp computes its 16 x 64 scores with mma.sync on tensor cores (float32 accumulation), applies
 * scale, mask, causal and nonpad, updates each row's running max and sum (online softmax, float32) and adds P V
 * to its output rows; scores, probabilities and outputs stay in registers. A row whose keys are all masked ends
 * as NaN, as the cuBLAS path and the reference give. */
#include <cuda_pipeline.h>

#define FA_BN 64 /* keys per tile */

struct flash_args {
    const __half *q, *k, *v;
    __half *y;
    const void *mask;
    const int64_t *nonpad;
    int mt, mask_kind, is_causal, has_nonpad;
    float scale;
    int64_t Hq, group, Lq, Lt, Lp;
    int64_t qs[3], ks[3], vs[3], ys[3]; /* element strides (batch, head, seq); the head dim is contiguous */
    int64_t ms[4], mlast;
};

template <int E> struct fa_smem {
    static const int LDH = E + 8; /* float16 rows of Q, K, V: 16-byte aligned, and ldmatrix reads them conflict-free */
    static size_t bytes(int W) { return (size_t)16 * W * LDH * 2 + (size_t)4 * FA_BN * LDH * 2; } /* Q; K, V x2 */
};

/* ROWS rows of a float16 matrix (row stride ld elements, E contiguous) into shared rows of LDH; rows past `valid`
 * are zeros. 16-byte copies by the block's THREADS threads, 8 loads in flight per thread before their stores. */
template <int E, int LDH, int ROWS, int THREADS>
__device__ __forceinline__ void fa_load_rows(__half *dst, const __half *src, int64_t ld, int64_t valid) {
    const int per_row = E / 8, total = ROWS * per_row;
    for (int base = 0; base < total; base += 8 * THREADS) {
        uint4 v[8];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int t = base + j * THREADS + (int)threadIdx.x, r = t / per_row, c = (t % per_row) * 8;
            v[j] = t < total && r < valid ? *(const uint4 *)(src + (int64_t)r * ld + c) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int t = base + j * THREADS + (int)threadIdx.x, r = t / per_row, c = (t % per_row) * 8;
            if (t < total) *(uint4 *)(dst + r * LDH + c) = v[j];
        }
    }
}

/* The same for a tile of keys, asynchronously (cp.async): it lands while the block works on the previous tile. */
template <int E, int LDH, int ROWS, int THREADS>
__device__ __forceinline__ void fa_load_rows_async(__half *dst, const __half *src, int64_t ld, int64_t valid) {
    const int per_row = E / 8, total = ROWS * per_row;
    for (int t = threadIdx.x; t < total; t += THREADS) {
        int r = t / per_row, c = (t % per_row) * 8;
        if (r < valid) __pipeline_memcpy_async(dst + r * LDH + c, src + (int64_t)r * ld + c, 16);
        else *(uint4 *)(dst + r * LDH + c) = make_uint4(0, 0, 0, 0);
    }
}

/* Tensor-core steps on registers (PTX mma.sync m16n8k16, float16 in, float32 accumulate). Fragment layouts (PTX ISA,
 * "Matrix fragments for mma.m16n8k16"), g = lane / 4, t = lane % 4: A (16 x 16, row major) a0: (g, 2t..2t+1),
 * a1: (g + 8, 2t..), a2: (g, 8 + 2t..), a3: (g + 8, 8 + 2t..); B (16 x 8) b0: (2t..2t+1, g), b1: (8 + 2t.., g);
 * C (16 x 8) c0, c1: (g, 2t..2t+1), c2, c3: (g + 8, 2t..). */
__device__ __forceinline__ void fa_mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Four 8 x 8 float16 matrices from shared memory, lane i giving the address of row i % 8 of matrix i / 8. */
__device__ __forceinline__ void fa_ldm4(uint32_t r[4], const __half *p) {
    uint32_t s = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}
__device__ __forceinline__ void fa_ldm4_t(uint32_t r[4], const __half *p) { /* transposed */
    uint32_t s = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}

__device__ __forceinline__ uint32_t fa_pack(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *(uint32_t *)&h;
}

/* Score x of key c for query row i after scale, mask, causal and nonpad (-inf: masked). */
__device__ __forceinline__ float fa_score(const flash_args &a, float x, int64_t b, int64_t h, int64_t i, int64_t c) {
    if (c >= a.Lt || i >= a.Lq || (a.is_causal && c > i + a.Lp) || (a.has_nonpad && c >= a.nonpad[b])) return -INFINITY;
    x *= a.scale;
    if (a.mask_kind) {
        if (c >= a.mlast) return -INFINITY;
        int64_t off = b * a.ms[0] + h * a.ms[1] + i * a.ms[2] + c * a.ms[3];
        if (a.mask_kind == 1) return ((const uint8_t *)a.mask)[off] ? x : -INFINITY;
        x += ldx(a.mt, a.mask, off);
    }
    return x;
}

/* One block: 16 * W query rows of one (batch, q head), 16 a warp. Scores (8 tiles of 8 keys: 32 floats a thread),
 * the running max and sum of the thread's two rows, and the output rows (E / 8 tiles: E / 2 floats) stay in
 * registers; the probabilities become the A operand of P V without leaving them (the C layout of two neighbouring
 * key tiles is the A layout of their 16 keys). */
template <int E, int W>
__global__ void __launch_bounds__(32 * W) flash_attn_k(flash_args a) {
    typedef fa_smem<E> S;
    const int LD = S::LDH;
    extern __shared__ __align__(128) unsigned char fa_buf[];
    __half *Qs = (__half *)fa_buf;
    __half *Kb = Qs + 16 * W * LD, *Vb = Kb + 2 * FA_BN * LD; /* two tiles each: loading one, reading one */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    const int64_t h = blockIdx.y, b = blockIdx.z, hk = h / a.group, i0 = (int64_t)blockIdx.x * 16 * W;
    const __half *kp = a.k + b * a.ks[0] + hk * a.ks[1];
    const __half *vp = a.v + b * a.vs[0] + hk * a.vs[1];
    fa_load_rows<E, LD, 16 * W, 32 * W>(Qs, a.q + b * a.qs[0] + h * a.qs[1] + i0 * a.qs[2], a.qs[2], a.Lq - i0);
    int64_t kend = a.Lt;
    if (a.is_causal) { /* no key past the block's last row (+ the past length) is seen */
        int64_t last = (i0 + 16 * W < a.Lq ? i0 + 16 * W : a.Lq) + a.Lp;
        if (last < kend) kend = last;
    }
    const int64_t ntiles = (kend + FA_BN - 1) / FA_BN;
    fa_load_rows_async<E, LD, FA_BN, 32 * W>(Kb, kp, a.ks[2], a.Lt);
    fa_load_rows_async<E, LD, FA_BN, 32 * W>(Vb, vp, a.vs[2], a.Lt);
    __pipeline_commit();
    __syncthreads(); /* Q is in */
    uint32_t qf[E / 16][4];
#pragma unroll
    for (int kk = 0; kk < E / 16; kk++)
        fa_ldm4(qf[kk], Qs + (warp * 16 + (lane & 15)) * LD + kk * 16 + (lane >> 4) * 8);
    const int64_t ir[2] = {i0 + warp * 16 + g, i0 + warp * 16 + g + 8}; /* this thread's two rows */
    float o[E / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < E / 8; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    for (int64_t t = 0; t < ntiles; t++) {
        const int64_t c0 = t * FA_BN;
        if (t + 1 < ntiles) { /* the next tile into the other buffers, freed by the last iteration's barrier */
            const int64_t n0 = c0 + FA_BN;
            const int nb = (int)((t + 1) & 1);
            fa_load_rows_async<E, LD, FA_BN, 32 * W>(Kb + nb * FA_BN * LD, kp + n0 * a.ks[2], a.ks[2], a.Lt - n0);
            fa_load_rows_async<E, LD, FA_BN, 32 * W>(Vb + nb * FA_BN * LD, vp + n0 * a.vs[2], a.vs[2], a.Lt - n0);
        }
        __pipeline_commit();      /* (an empty group on the last tile keeps the count below right) */
        __pipeline_wait_prior(1); /* this tile's copies are done (this thread's) ... */
        __syncthreads();          /* ... and everyone's */
        const __half *Ks = Kb + (t & 1) * FA_BN * LD, *Vs = Vb + (t & 1) * FA_BN * LD;
        /* S = Q K^T: 8 tiles of 8 keys; B (k = head dim, n = key) from K's rows, two 16-wide k steps per ldmatrix */
        float s[FA_BN / 8][4];
#pragma unroll
        for (int n = 0; n < FA_BN / 8; n++) {
            s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < E / 16; kk += 2) {
                uint32_t kb[4];
                fa_ldm4(kb, Ks + (n * 8 + (lane & 7)) * LD + kk * 16 + (lane >> 3) * 8);
                fa_mma(s[n], qf[kk], kb[0], kb[1]);
                fa_mma(s[n], qf[kk + 1], kb[2], kb[3]);
            }
        }
        /* online softmax of rows g and g + 8: each thread has 16 keys of each, its group of 4 the row's 64 */
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int n = 0; n < FA_BN / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                s[n][e] = fa_score(a, s[n][e], b, h, ir[e >> 1], c0 + n * 8 + 2 * t4 + (e & 1));
                mx[e >> 1] = fmaxf(mx[e >> 1], s[n][e]);
            }
        float alpha[2], sum[2] = {0.0f, 0.0f}, mu[2];
#pragma unroll
        for (int rr = 0; rr < 2; rr++) {
            mx[rr] = fmaxf(mx[rr], __shfl_xor_sync(0xffffffffu, mx[rr], 1));
            mx[rr] = fmaxf(mx[rr], __shfl_xor_sync(0xffffffffu, mx[rr], 2));
            const float mn = fmaxf(m[rr], mx[rr]);
            mu[rr] = mn == -INFINITY ? 0.0f : mn; /* a row with nothing unmasked yet: exp(-inf) = 0 everywhere */
            alpha[rr] = __expf(m[rr] - mu[rr]);
            m[rr] = mn;
        }
#pragma unroll
        for (int n = 0; n < FA_BN / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                s[n][e] = __expf(s[n][e] - mu[e >> 1]);
                sum[e >> 1] += s[n][e];
            }
#pragma unroll
        for (int rr = 0; rr < 2; rr++) {
            sum[rr] += __shfl_xor_sync(0xffffffffu, sum[rr], 1);
            sum[rr] += __shfl_xor_sync(0xffffffffu, sum[rr], 2);
            l[rr] = l[rr] * alpha[rr] + sum[rr];
        }
#pragma unroll
        for (int n = 0; n < E / 8; n++) {
            o[n][0] *= alpha[0]; o[n][1] *= alpha[0];
            o[n][2] *= alpha[1]; o[n][3] *= alpha[1];
        }
        /* O += P V: P's 16-key chunk kc is key tiles 2kc and 2kc + 1; B (k = key, n = head dim) from V's rows,
         * transposed by ldmatrix, two 8-wide n tiles per call */
#pragma unroll
        for (int kc = 0; kc < FA_BN / 16; kc++) {
            uint32_t pa[4] = {fa_pack(s[2 * kc][0], s[2 * kc][1]), fa_pack(s[2 * kc][2], s[2 * kc][3]),
                              fa_pack(s[2 * kc + 1][0], s[2 * kc + 1][1]), fa_pack(s[2 * kc + 1][2], s[2 * kc + 1][3])};
#pragma unroll
            for (int dn = 0; dn < E / 8; dn += 2) {
                uint32_t vb[4];
                fa_ldm4_t(vb, Vs + (kc * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LD + dn * 8 + (lane >> 4) * 8);
                fa_mma(o[dn], pa, vb[0], vb[1]);
                fa_mma(o[dn + 1], pa, vb[2], vb[3]);
            }
        }
        __syncthreads(); /* this tile's K and V are read: the next iteration may load the one after into them */
    }
    const float nan = __int_as_float(0x7fc00000); /* all keys masked: NaN, as the reference */
#pragma unroll
    for (int rr = 0; rr < 2; rr++) {
        if (ir[rr] >= a.Lq) continue;
        const float inv = 1.0f / l[rr];
        __half *yp = a.y + b * a.ys[0] + h * a.ys[1] + ir[rr] * a.ys[2] + 2 * t4;
#pragma unroll
        for (int n = 0; n < E / 8; n++) {
            float v0 = l[rr] > 0.0f ? o[n][2 * rr] * inv : nan, v1 = l[rr] > 0.0f ? o[n][2 * rr + 1] * inv : nan;
            *(__half2 *)(yp + n * 8) = __floats2half2_rn(v0, v1);
        }
    }
}

/* Why the fused path does not take this node (NULL: it does), from what kernel creation knows. */
static const char *flash_refusal(const cuda_context *ctx, const netrun_attention_params *p, int qt, int kt, int vt,
                                 int yt, int has_present, int has_qk) {
    if (!ctx->flash_attention) return "cuda.flash_attention=0";
    if (qt != NETRUN_DTYPE_FLOAT16 || kt != qt || vt != qt || yt != qt) return "not all float16";
    if (p->has_past || has_present) return "past or present K/V";
    if (has_qk) return "qk_matmul_output";
    if (p->softcap > 0) return "softcap";
    if (p->head_size != p->v_head_size || (p->head_size != 32 && p->head_size != 64 && p->head_size != 128))
        return "head size not 32, 64 or 128";
    return NULL;
}

template <int E> static netrun_status flash_launch_e(cuda_context *ctx, const flash_args &a, int64_t batch) {
    /* enough blocks to fill the device: 4 warps (64 rows) a block where that still gives two blocks an SM */
    int64_t pairs = batch * a.Hq;
    int W = (a.Lq + 63) / 64 * pairs >= 2 * (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132) ? 4
            : (a.Lq + 31) / 32 * pairs >= 2 * (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132) ? 2 : 1;
    int64_t tiles = (a.Lq + 16 * W - 1) / (16 * W);
    if (tiles > INT32_MAX || a.Hq > 65535 || batch > 65535)
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda Attention: grid too large");
    size_t smem = fa_smem<E>::bytes(W);
    const void *fn = W == 4 ? (const void *)flash_attn_k<E, 4> : W == 2 ? (const void *)flash_attn_k<E, 2>
                                                                        : (const void *)flash_attn_k<E, 1>;
    netrun_status st = nlp_smem(fn, smem, "Attention");
    if (st != NETRUN_OK) return st;
    dim3 grid((unsigned)tiles, (unsigned)a.Hq, (unsigned)batch);
    if (W == 4) flash_attn_k<E, 4><<<grid, 128, smem, ctx->stream>>>(a);
    else if (W == 2) flash_attn_k<E, 2><<<grid, 64, smem, ctx->stream>>>(a);
    else flash_attn_k<E, 1><<<grid, 32, smem, ctx->stream>>>(a);
    return cuda_check_launch("Attention (fused)");
}

static int fa_aligned(const void *p, const int64_t s[3]) {
    return (uintptr_t)p % 16 == 0 && s[0] % 8 == 0 && s[1] % 8 == 0 && s[2] % 8 == 0;
}

/* Runs the node through the fused kernel when it takes these tensors (*done = 1). */
static netrun_status flash_run(cuda_context *ctx, const netrun_attention_params *p, const attn_args &a, int *done) {
    *done = 0;
    if (!fa_aligned(a.q, a.qs) || !fa_aligned(a.k, a.ks) || !fa_aligned(a.v, a.vs) || !fa_aligned(a.y, a.ys) ||
        a.Lt == 0)
        return NETRUN_OK;
    flash_args f;
    memset(&f, 0, sizeof f);
    f.q = (const __half *)a.q; f.k = (const __half *)a.k; f.v = (const __half *)a.v; f.y = (__half *)a.y;
    f.mask = a.mask; f.mt = a.mt; f.mask_kind = a.mask_kind;
    for (int d = 0; d < 4; d++) f.ms[d] = a.ms[d];
    f.mlast = a.mlast;
    f.nonpad = a.nonpad; f.has_nonpad = a.has_nonpad;
    f.is_causal = a.is_causal;
    f.scale = p->scale;
    f.Hq = a.Hq; f.group = a.group; f.Lq = a.Lq; f.Lt = a.Lt; f.Lp = a.Lp;
    for (int d = 0; d < 3; d++) { f.qs[d] = a.qs[d]; f.ks[d] = a.ks[d]; f.vs[d] = a.vs[d]; f.ys[d] = a.ys[d]; }
    *done = 1;
    return a.E == 32 ? flash_launch_e<32>(ctx, f, p->batch)
           : a.E == 64 ? flash_launch_e<64>(ctx, f, p->batch) : flash_launch_e<128>(ctx, f, p->batch);
}

static netrun_status attn_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    *workspace = 0;
    *state = NULL;
    attn_state *st = (attn_state *)cuda_host->alloc(sizeof *st, 16);
    if (!st) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda Attention: out of memory");
    memset(st, 0, sizeof *st);
    *state = st;
    const netrun_attention_params *p = (const netrun_attention_params *)node->params;
    st->cap = ctx->attn_ws_cap;
    if (ctx->config.workspace_limit && ctx->config.workspace_limit < st->cap) st->cap = ctx->config.workspace_limit;
    /* no cuBLAS (or no handle): the simple kernel serves every node, as before this path existed */
    st->fast = st->cap > 0 && cuda_cublas_handle(ctx) == NETRUN_OK;
    if (!p || node->n_inputs < 3 || node->n_outputs < 1) {
        snprintf(st->desc, sizeof st->desc, "simple kernel");
        return NETRUN_OK;
    }
    const netrun_value_desc *prk = nlp_desc_out(node, 1), *prv = nlp_desc_out(node, 2);
    const char *fwhy = flash_refusal(ctx, p, node->inputs[0].dtype, node->inputs[1].dtype, node->inputs[2].dtype,
                                     node->outputs[0].dtype, prk || prv, nlp_desc_out(node, 3) != NULL);
    if (!fwhy) { /* no workspace: a run whose tensors it cannot take (unaligned) gets attn_k */
        st->flash = 1;
        snprintf(st->desc, sizeof st->desc, "fused float16 kernel (flash attention on tensor cores, head size %lld)",
                 (long long)p->head_size);
        return NETRUN_OK;
    }
    const char *why = attn_fast_refusal(st, node->inputs[0].dtype, node->inputs[1].dtype, node->inputs[2].dtype,
                                        node->outputs[0].dtype, p->has_past, prk && prv, p->head_size,
                                        p->v_head_size, p->total_len);
    if (why) {
        snprintf(st->desc, sizeof st->desc, "simple kernel (%s)", why);
        return NETRUN_OK;
    }
    int p16 = node->inputs[2].dtype == NETRUN_DTYPE_FLOAT16;
    if (p->batch < 0 || p->q_len < 0 || p->total_len < 0 || p->q_num_heads < 1) { /* shapes known at run only */
        *workspace = st->cap;
        snprintf(st->desc, sizeof st->desc, "cuBLAS batched GEMMs + warp softmax (dynamic shapes: %zu MiB workspace)",
                 st->cap >> 20);
        return NETRUN_OK;
    }
    int64_t total = p->batch * p->q_num_heads;
    int64_t nc = attn_chunk_pairs(st->cap, total, p->q_len, p->total_len, p16);
    if (total == 0 || p->q_len == 0) {
        snprintf(st->desc, sizeof st->desc, "cuBLAS batched GEMMs + warp softmax (empty)");
        return NETRUN_OK;
    }
    if (nc < 1) {
        snprintf(st->desc, sizeof st->desc, "simple kernel (one head's scores exceed the %zu MiB cap)", st->cap >> 20);
        return NETRUN_OK;
    }
    *workspace = attn_ws_bytes(nc, p->q_len, p->total_len, p16);
    snprintf(st->desc, sizeof st->desc, "cuBLAS batched GEMMs + warp softmax (%lld heads per pass of %lld, %.1f MiB)",
             (long long)nc, (long long)total, (double)*workspace / (1 << 20));
    return NETRUN_OK;
}

static void attn_destroy(cuda_context *ctx, void *state) {
    (void)ctx;
    if (state) cuda_host->free(state);
}

extern "C" void cuda_attention_describe(void *state, char *buf, size_t size) {
    const attn_state *st = (const attn_state *)state;
    snprintf(buf, size, "%s", st ? st->desc : "");
}

static size_t attn_smem(int64_t E, int64_t Lt) { return (size_t)(E + Lt) * sizeof(float); }

static int attn_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_attention_params *p = (const netrun_attention_params *)node->params;
    if (!p) return cuda_refuse(reason, size, "no params");
    if (p->is_flex) return cuda_refuse(reason, size, "FlexAttention is not served by the CUDA kernel");
    for (int i = 0; i < 3; i++)
        if (node->n_inputs <= i || !nlp_float_dtype(node->inputs[i].dtype))
            return cuda_refuse(reason, size, "Q/K/V dtype %s (float32/float16 only)",
                               cuda_dtype_name(node->n_inputs > i ? node->inputs[i].dtype : NETRUN_DTYPE_UNDEFINED));
    const netrun_value_desc *m = nlp_desc_in(node, 3);
    if (m && m->dtype != NETRUN_DTYPE_BOOL && !nlp_float_dtype(m->dtype))
        return cuda_refuse(reason, size, "attn_mask dtype %s", cuda_dtype_name(m->dtype));
    for (int o = 3; o < 4; o++) {
        const netrun_value_desc *d = nlp_desc_out(node, o);
        if (d && !nlp_float_dtype(d->dtype)) return cuda_refuse(reason, size, "qk_matmul_output dtype");
    }
    if (p->head_size >= 0 && p->total_len >= 0 && attn_smem(p->head_size, p->total_len) > 200 * 1024)
        return cuda_refuse(reason, size, "a score row of %lld keys does not fit in shared memory",
                           (long long)p->total_len);
    return 1;
}

static netrun_status attn_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_attention_params *p = (const netrun_attention_params *)args->params;
    if (!p || args->n_inputs < 3) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Attention: missing params or inputs");
    const netrun_tensor *Q = &args->inputs[0], *K = &args->inputs[1], *V = &args->inputs[2];
    const netrun_tensor *M = p->mask_kind ? nlp_opt_in(args, 3) : NULL;
    const netrun_tensor *PK = p->has_past ? nlp_opt_in(args, 4) : NULL, *PV = p->has_past ? nlp_opt_in(args, 5) : NULL;
    const netrun_tensor *NP = p->has_nonpad ? nlp_opt_in(args, 6) : NULL;
    netrun_tensor *Y = &args->outputs[0], *PRK = nlp_opt_out(args, 1), *PRV = nlp_opt_out(args, 2),
                  *QK = nlp_opt_out(args, 3);
    if ((p->mask_kind && !M) || (p->has_past && (!PK || !PV)) || (p->has_nonpad && !NP))
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Attention: optional inputs do not match params");
    int lead = p->input_3d ? 3 : 4;
    if (Q->rank != lead || K->rank != lead || V->rank != lead || Q->dims[0] != p->batch ||
        (p->input_3d ? Q->dims[1] != p->q_len || K->dims[1] != p->kv_len || V->dims[1] != p->kv_len
                     : Q->dims[2] != p->q_len || K->dims[2] != p->kv_len || V->dims[2] != p->kv_len))
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Attention: input shapes differ from the inferred ones");
    if (p->kv_num_heads < 1 || p->q_num_heads % p->kv_num_heads)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Attention: bad head counts");
    attn_args a;
    memset(&a, 0, sizeof a);
    a.q = Q->data; a.k = K->data; a.v = V->data;
    a.qt = Q->dtype; a.kt = K->dtype; a.vt = V->dtype; a.yt = Y->dtype;
    a.y = Y->data;
    a.Hq = p->q_num_heads; a.Hk = p->kv_num_heads; a.group = a.Hq / a.Hk;
    a.Lq = p->q_len; a.Lk = p->kv_len; a.Lp = p->past_len; a.Lt = p->total_len;
    a.E = p->head_size; a.Ev = p->v_head_size;
    a.sq = sqrtf(p->scale);
    a.softcap = p->softcap;
    a.is_causal = p->is_causal;
    a.mode = p->qk_matmul_output_mode;
    layout_strides(p->input_3d, a.Hq, a.Lq, a.E, a.qs);
    layout_strides(p->input_3d, a.Hk, a.Lk, a.E, a.ks);
    layout_strides(p->input_3d, a.Hk, a.Lk, a.Ev, a.vs);
    layout_strides(p->input_3d, a.Hq, a.Lq, a.Ev, a.ys);
    if (M) {
        a.mask_kind = p->mask_kind;
        a.mask = M->data;
        a.mt = M->dtype;
        int64_t od[4] = {p->batch, a.Hq, a.Lq, M->dims[M->rank - 1]};
        cuda_broadcast_strides(M->rank, M->dims, 4, od, a.ms);
        a.mlast = od[3];
        if (od[3] > 1 && a.ms[3] != 1) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Attention: unexpected mask layout");
    }
    if (PK) { a.pk = PK->data; a.pv = PV->data; }
    if (NP) { a.nonpad = (const int64_t *)NP->data; a.has_nonpad = 1; }
    if (QK) {
        if (cuda_count(QK) != p->batch * a.Hq * a.Lq * a.Lt)
            return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Attention: qk_matmul_output has the wrong size");
        a.qk = QK->data;
        a.qkt = QK->dtype;
    }
    /* present_key / present_value */
    for (int w = 0; w < 2; w++) {
        netrun_tensor *out = w ? PRV : PRK;
        if (!out) continue;
        const netrun_tensor *past = w ? PV : PK, *cur = w ? V : K;
        const int64_t *cs = w ? a.vs : a.ks;
        int64_t E = w ? a.Ev : a.E, n = p->batch * a.Hk * a.Lt * E;
        if (cuda_count(out) != n || out->dtype != cur->dtype)
            return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Attention: present output %d does not match", w + 1);
        if (n == 0) continue;
        const void *pd = past ? past->data : NULL;
        if (cuda_esize(out->dtype) == 2)
            attn_present_k<uint16_t><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                (uint16_t *)out->data, (const uint16_t *)pd, (const uint16_t *)cur->data, p->batch, a.Hk, a.Lp, a.Lt,
                E, cs[0], cs[1], cs[2]);
        else
            attn_present_k<uint32_t><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                (uint32_t *)out->data, (const uint32_t *)pd, (const uint32_t *)cur->data, p->batch, a.Hk, a.Lp, a.Lt,
                E, cs[0], cs[1], cs[2]);
        netrun_status st = cuda_check_launch("Attention present");
        if (st != NETRUN_OK) return st;
    }
    if (p->batch == 0 || a.Hq == 0 || a.Lq == 0) return NETRUN_OK;
    int done = 0;
    attn_state *ast = (attn_state *)state;
    if (ast && ast->flash && !PRK && !PRV && !QK && !p->has_past) {
        netrun_status fls = flash_run(ctx, p, a, &done);
        if (fls != NETRUN_OK || done) return fls;
    }
    netrun_status fst = attn_fast(ctx, ast, args, p, a, PRK, PRV, &done);
    if (fst == NETRUN_ERR_BACKEND && ast && !ctx->capturing) {
        /* cuBLAS refused a call (a type combination or size this cuBLAS lacks): nothing of it ran, so the simple
         * kernel computes the whole node, now and from now on */
        cuda_host->log(NETRUN_LOG_WARN, "cuda", "Attention: cuBLAS path failed, simple kernel from now on");
        ast->fast = 0;
        snprintf(ast->desc, sizeof ast->desc, "simple kernel (the cuBLAS path failed at run time)");
    } else if (fst != NETRUN_OK || done)
        return fst;
    if (a.Lq > INT32_MAX || a.Hq > 65535 || p->batch > 65535)
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda Attention: grid too large");
    size_t smem = attn_smem(a.E, a.Lt);
    netrun_status st = nlp_smem((const void *)attn_k, smem, "Attention");
    if (st != NETRUN_OK) return st;
    dim3 grid((unsigned)a.Lq, (unsigned)a.Hq, (unsigned)p->batch);
    int threads = a.Lt >= 256 || a.Ev >= 256 ? 256 : 64;
    attn_k<<<grid, threads, smem, ctx->stream>>>(a);
    return cuda_check_launch("Attention");
}

/* ================================ RotaryEmbedding ================================ */

struct rope_args {
    const void *x, *cs, *sn, *pid;
    void *y;
    int dt, pdt;
    int interleaved, input_3d;
    int64_t H, S, D, half, max_pos;
};

/* One thread per element of the output: rotated pairs from x and the cos/sin caches, the rest copied. A position
 * id outside [0, max_pos) makes that row NaN (no error can come back from the device without a sync). */
__global__ void rope_k(rope_args a, int64_t total) {
    GRID_LOOP(x, total) {
        int64_t j = x % a.D, r = x / a.D; /* r = (b, s, h) */
        int64_t b = r / (a.S * a.H), s = (r / a.H) % a.S, h = r % a.H;
        int64_t base = a.input_3d ? (b * a.S + s) * a.H * a.D + h * a.D : ((b * a.H + h) * a.S + s) * a.D;
        if (j >= 2 * a.half) {
            stx(a.dt, a.y, base + j, ldx(a.dt, a.x, base + j));
            continue;
        }
        int64_t cb;
        if (a.pid) {
            int64_t pos = ldi64(a.pdt, a.pid, b * a.S + s);
            if (pos < 0 || pos >= a.max_pos) {
                stx(a.dt, a.y, base + j, NAN);
                continue;
            }
            cb = pos * a.half;
        } else cb = (b * a.S + s) * a.half;
        int64_t k, first;
        if (a.interleaved) { k = j / 2; first = (j & 1) == 0; }
        else { k = j < a.half ? j : j - a.half; first = j < a.half; }
        int64_t i1 = a.interleaved ? 2 * k : k, i2 = a.interleaved ? 2 * k + 1 : k + a.half;
        float c = ldx(a.dt, a.cs, cb + k), sv = ldx(a.dt, a.sn, cb + k);
        float x1 = ldx(a.dt, a.x, base + i1), x2 = ldx(a.dt, a.x, base + i2);
        stx(a.dt, a.y, base + j, first ? c * x1 - sv * x2 : sv * x1 + c * x2);
    }
}

static int rope_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!node->params) return cuda_refuse(reason, size, "no params");
    for (int i = 0; i < 3; i++)
        if (node->n_inputs <= i || !nlp_float_dtype(node->inputs[i].dtype) || node->inputs[i].dtype != node->inputs[0].dtype)
            return cuda_refuse(reason, size, "X/cos/sin: one dtype, float32 or float16");
    const netrun_value_desc *pid = nlp_desc_in(node, 3);
    if (pid && pid->dtype != NETRUN_DTYPE_INT64 && pid->dtype != NETRUN_DTYPE_INT32)
        return cuda_refuse(reason, size, "position_ids dtype %s", cuda_dtype_name(pid->dtype));
    return 1;
}

static netrun_status rope_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_rotary_params *p = (const netrun_rotary_params *)args->params;
    if (!p || args->n_inputs < 3) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda RotaryEmbedding: bad params");
    const netrun_tensor *X = &args->inputs[0];
    rope_args a;
    memset(&a, 0, sizeof a);
    a.x = X->data; a.cs = args->inputs[1].data; a.sn = args->inputs[2].data; a.y = args->outputs[0].data;
    a.dt = X->dtype;
    a.interleaved = p->interleaved; a.input_3d = p->input_3d;
    a.H = p->num_heads; a.S = p->seq_len; a.D = p->head_size; a.half = p->rotary_dim / 2;
    if (p->has_position_ids) {
        const netrun_tensor *pid = nlp_opt_in(args, 3);
        if (!pid || pid->rank != 2) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda RotaryEmbedding: position_ids missing");
        a.pid = pid->data;
        a.pdt = pid->dtype;
        a.max_pos = args->inputs[1].dims[0];
    }
    int64_t total = p->batch * a.S * a.H * a.D;
    if (total != cuda_count(X) || 2 * a.half > a.D)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda RotaryEmbedding: input shape differs from the inferred one");
    if (total == 0) return NETRUN_OK;
    rope_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>(a, total);
    return cuda_check_launch("RotaryEmbedding");
}

/* ================================ LinearAttention ================================ */

struct la_args {
    const void *q, *k, *v, *past, *decay, *beta;
    void *y, *state;
    int dt, pdt, sdt;
    int gating, delta, decay_per_key;
    float scale;
    int64_t Hq, Hk, T, dk, dv, beta_heads;
};

/* One block per (batch, kv head), the state S [dk, dv] in shared memory; thread m owns column m of S (and
 * vt[m]), so the recurrence needs no synchronisation inside a step. */
__global__ void la_k(la_args a) {
    extern __shared__ float smem[];
    const int64_t dk = a.dk, dv = a.dv, g = a.Hq / a.Hk;
    float *S = smem, *kt = S + dk * dv, *vt = kt + dk, *qv = vt + dv, *dec = qv + g * dk;
    const int64_t task = blockIdx.x, b = task / a.Hk, h = task % a.Hk;
    for (int64_t x = threadIdx.x; x < dk * dv; x += blockDim.x)
        S[x] = a.past ? ldx(a.pdt, a.past, task * dk * dv + x) : 0.0f;
    for (int64_t t = 0; t < a.T; t++) {
        __syncthreads(); /* the previous step is done with kt, vt, qv, dec */
        int64_t kb = (b * a.T + t) * a.Hk * dk + h * dk, vb = (b * a.T + t) * a.Hk * dv + h * dv;
        for (int64_t d = threadIdx.x; d < dk; d += blockDim.x) {
            kt[d] = ldx(a.dt, a.k, kb + d);
            if (a.gating && a.decay_per_key) dec[d] = expf(ldx(a.dt, a.decay, kb + d));
        }
        for (int64_t m = threadIdx.x; m < dv; m += blockDim.x) vt[m] = ldx(a.dt, a.v, vb + m);
        for (int64_t x = threadIdx.x; x < g * dk; x += blockDim.x) {
            int64_t hq = h * g + x / dk;
            qv[x] = ldx(a.dt, a.q, (b * a.T + t) * a.Hq * dk + hq * dk + x % dk);
        }
        __syncthreads();
        float eh = a.gating && !a.decay_per_key ? expf(ldx(a.dt, a.decay, (b * a.T + t) * a.Hk + h)) : 1.0f;
        float bt = a.delta ? ldx(a.dt, a.beta, (b * a.T + t) * a.beta_heads + (a.beta_heads == 1 ? 0 : h)) : 0.0f;
        for (int64_t m = threadIdx.x; m < dv; m += blockDim.x) {
            if (a.gating)
                for (int64_t d = 0; d < dk; d++) S[d * dv + m] *= a.decay_per_key ? dec[d] : eh;
            float vm = vt[m];
            if (a.delta) {
                float r = 0;
                for (int64_t d = 0; d < dk; d++) r += S[d * dv + m] * kt[d];
                vm = bt * (vm - r);
            }
            for (int64_t d = 0; d < dk; d++) S[d * dv + m] += kt[d] * vm;
            for (int64_t j = 0; j < g; j++) {
                float o = 0;
                for (int64_t d = 0; d < dk; d++) o += qv[j * dk + d] * S[d * dv + m];
                stx(a.dt, a.y, (b * a.T + t) * a.Hq * dv + (h * g + j) * dv + m, a.scale * o);
            }
        }
    }
    if (a.state)
        for (int64_t m = threadIdx.x; m < dv; m += blockDim.x)
            for (int64_t d = 0; d < dk; d++) stx(a.sdt, a.state, task * dk * dv + d * dv + m, S[d * dv + m]);
}

static int half_float_inputs(const netrun_node_desc *node, char *reason, size_t size) {
    if (!node->params) return cuda_refuse(reason, size, "no params");
    for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i].rank >= 0 && !nlp_float_dtype(node->inputs[i].dtype))
            return cuda_refuse(reason, size, "input %d dtype %s (float32/float16 only)", i,
                               cuda_dtype_name(node->inputs[i].dtype));
    return 1;
}

static size_t la_smem(const netrun_linear_attention_params *p) {
    int64_t g = p->q_num_heads / (p->kv_num_heads > 0 ? p->kv_num_heads : 1);
    return (size_t)(p->d_k * p->d_v + 2 * p->d_k + p->d_v + g * p->d_k) * sizeof(float);
}

static int la_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!half_float_inputs(node, reason, size)) return 0;
    const netrun_linear_attention_params *p = (const netrun_linear_attention_params *)node->params;
    if (p->d_k >= 0 && p->d_v >= 0 && la_smem(p) > 200 * 1024)
        return cuda_refuse(reason, size, "state of %lld x %lld does not fit in shared memory", (long long)p->d_k,
                           (long long)p->d_v);
    return 1;
}

static netrun_status la_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_linear_attention_params *p = (const netrun_linear_attention_params *)args->params;
    if (!p || args->n_inputs < 3) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda LinearAttention: bad params");
    const netrun_tensor *Q = &args->inputs[0];
    const netrun_tensor *past = p->has_past ? nlp_opt_in(args, 3) : NULL, *decay = p->gating ? nlp_opt_in(args, 4) : NULL,
                        *beta = p->delta ? nlp_opt_in(args, 5) : NULL;
    netrun_tensor *st_out = nlp_opt_out(args, 1);
    if ((p->has_past && !past) || (p->gating && !decay) || (p->delta && !beta))
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda LinearAttention: optional inputs do not match params");
    if (Q->rank != 3 || Q->dims[0] != p->batch || Q->dims[1] != p->seq_len || p->kv_num_heads < 1 ||
        p->q_num_heads % p->kv_num_heads)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda LinearAttention: input shapes differ from the inferred ones");
    la_args a;
    memset(&a, 0, sizeof a);
    a.q = Q->data; a.k = args->inputs[1].data; a.v = args->inputs[2].data;
    a.past = past ? past->data : NULL; a.decay = decay ? decay->data : NULL; a.beta = beta ? beta->data : NULL;
    a.y = args->outputs[0].data;
    a.state = st_out ? st_out->data : NULL;
    a.dt = Q->dtype; a.pdt = past ? past->dtype : Q->dtype; a.sdt = st_out ? st_out->dtype : Q->dtype;
    a.gating = p->gating; a.delta = p->delta; a.decay_per_key = p->decay_per_key;
    a.scale = p->scale;
    a.Hq = p->q_num_heads; a.Hk = p->kv_num_heads; a.T = p->seq_len; a.dk = p->d_k; a.dv = p->d_v;
    a.beta_heads = p->beta_heads;
    int64_t tasks = p->batch * a.Hk;
    if (tasks <= 0) return NETRUN_OK;
    if (tasks > INT32_MAX) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda LinearAttention: grid too large");
    size_t smem = la_smem(p);
    netrun_status st = nlp_smem((const void *)la_k, smem, "LinearAttention");
    if (st != NETRUN_OK) return st;
    int threads = a.dv > 128 ? 256 : a.dv > 32 ? 128 : 32;
    la_k<<<(unsigned)tasks, threads, smem, ctx->stream>>>(a);
    return cuda_check_launch("LinearAttention");
}

/* ================================ CausalConvWithState ================================ */

struct cc_args {
    const void *x, *w, *bias, *past;
    void *y, *state;
    int dt, silu;
    int64_t C, L, K;
};

/* Element c of the padded row [past or zeros (K-1), x] of row r = (b, ch). */
__device__ __forceinline__ float cc_pad(const cc_args &a, int64_t r, int64_t c) {
    int64_t K1 = a.K - 1;
    if (c >= K1) return ldx(a.dt, a.x, r * a.L + c - K1);
    return a.past ? ldx(a.dt, a.past, r * K1 + c) : 0.0f;
}

__global__ void cc_k(cc_args a, int64_t rows) {
    const int64_t per = a.L + a.K - 1; /* L outputs, then K-1 state values */
    GRID_LOOP(x, rows * per) {
        int64_t r = x / per, o = x % per, ch = r % a.C;
        if (o < a.L) {
            float acc = a.bias ? ldx(a.dt, a.bias, ch) : 0.0f;
            for (int64_t k = 0; k < a.K; k++) acc += ldx(a.dt, a.w, ch * a.K + k) * cc_pad(a, r, o + k);
            if (a.silu) {
                acc = round_dt(a.dt, acc); /* the reference rounds the conv output to the input type first */
                acc = acc / (1.0f + expf(-acc));
            }
            stx(a.dt, a.y, r * a.L + o, acc);
        } else if (a.state) {
            int64_t c = o - a.L;
            stx(a.dt, a.state, r * (a.K - 1) + c, cc_pad(a, r, a.L + c));
        }
    }
}

static netrun_status cc_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_causal_conv_params *p = (const netrun_causal_conv_params *)args->params;
    if (!p || args->n_inputs < 2) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda CausalConvWithState: bad params");
    const netrun_tensor *X = &args->inputs[0];
    const netrun_tensor *bias = p->has_bias ? nlp_opt_in(args, 2) : NULL, *past = p->has_past ? nlp_opt_in(args, 3) : NULL;
    netrun_tensor *st_out = nlp_opt_out(args, 1);
    if ((p->has_bias && !bias) || (p->has_past && !past) || X->rank != 3 || X->dims[0] != p->batch ||
        X->dims[1] != p->channels || X->dims[2] != p->length || p->kernel < 1)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda CausalConvWithState: inputs differ from the inferred ones");
    cc_args a;
    memset(&a, 0, sizeof a);
    a.x = X->data; a.w = args->inputs[1].data; a.bias = bias ? bias->data : NULL; a.past = past ? past->data : NULL;
    a.y = args->outputs[0].data; a.state = st_out ? st_out->data : NULL;
    a.dt = X->dtype; a.silu = p->silu;
    a.C = p->channels; a.L = p->length; a.K = p->kernel;
    int64_t rows = p->batch * p->channels, n = rows * (a.L + a.K - 1);
    if (n <= 0) return NETRUN_OK;
    cc_k<<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(a, rows);
    return cuda_check_launch("CausalConvWithState");
}

extern "C" const cuda_op cuda_ops_attention[] = {
    {"Attention", CUDA_FLOAT_DTYPES,
     "3-D or 4-D; GQA; bool/float masks; past/present; softcap; qk output modes 0-3; softmax in float; "
     "float16 (head size 32/64/128, no past/present/qk outputs): a fused flash kernel; else "
     "cuBLAS batched GEMMs + softmax with scores in the workspace (cuda.attention_workspace_mb), else (mixed "
     "dtypes, past without present outputs, cap 0) one block per query row with the score row in shared memory",
     attn_supports, attn_create, attn_run, attn_destroy},
    {"RotaryEmbedding", CUDA_FLOAT_DTYPES, "position ids outside the cache give NaN rows", rope_supports, NULL, rope_run,
     NULL},
    {"LinearAttention", CUDA_FLOAT_DTYPES, "computed in float; state in shared memory", la_supports, NULL, la_run, NULL},
    {"CausalConvWithState", CUDA_FLOAT_DTYPES, "", half_float_inputs, NULL, cc_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
