/* CUDA int8 kernels: QLinearConv and QLinearMatMul (what the QDQ pass, runtime/qdq_fuse.c, makes of a QDQ
 * model's DQ -> Conv/MatMul/Gemm -> Q groups), on the integer Tensor Cores through cuBLASLt.
 *
 * A convolution is a GEMM over 8-bit operands: rows = output pixels (n, oh, ow), columns = output channels,
 * K = (kh, kw, c) with c innermost, padded to a multiple of 16. cuBLASLt's int8 GEMM (int32 sums, the "TN" form
 * its integer kernels take) multiplies the weights [OC, K] by the pixels' patches [rows, K]; a 1x1 stride-1
 * convolution over channels-last int8 X with C % 16 == 0 reads X itself, others gather the patches first
 * (im2col, channels-last, 4 bytes a thread where C % 4 == 0). The sums come out [rows, OC]: channels last.
 * Convolutions between channels-last int8 tensors with C % 32 == 0 that would need patches (3x3, strided 1x1)
 * skip both: an implicit-GEMM kernel of our own (ql_igemm_k, mma.sync) reads the patches in place and
 * requantises from its registers.
 *
 * Zero points: the Tensor Cores take signed 8-bit operands, so a uint8 X is moved to int8 on the way in
 * (x - 128, and its zero point with it: the same differences), and a uint8 W with zero point 128 likewise; W's
 * zero points must be 0 after that (symmetric weights, what quantizers write). The patches are padded with X's
 * zero point zx (padding is zero in the real domain), so sum (x - zx) w = sum x w - zx * sum w over every tap,
 * and zx * sum w joins the bias: one constant per output channel.
 *
 * Requantisation, where the output is channels last with 4-byte aligned rows: in cuBLASLt's epilogue, which
 * writes int8 directly: alpha[oc] * acc + beta[oc], alpha = x_scale * w_scale / y_scale (float32, as the CPU
 * backend and the reference compute it) and beta = (bias - zx * sum w) * alpha + y's zero point, rounded to
 * nearest and saturated; a uint8 Y is the int8 result + 128 (its zero point - 128 in beta). A short pass then
 * moves the bytes to uint8 and/or adds the residual Z (inputs 9 to 13, onnxruntime's QLinearAdd arithmetic in
 * float32 without contraction); alpha per channel is cuBLASLt's device-vector alpha with a host beta (its
 * beta-zero variant is refused for int8 on Hopper). Elsewhere (NCHW output, no such algorithm) the int32 sums go
 * to a buffer and one kernel applies the CPU backend's arithmetic in double (backends/cpu/quantize.c, the direct
 * loops), four channels a thread: bit for bit the CPU's direct loops; the int8 epilogue's float rounding may
 * differ from them by one unit at ties, as oneDNN's does.
 *
 * Depthwise convolutions (group = C = OC) run a direct kernel (int32 sums of (x - zx) w, the same epilogue);
 * other grouped ones, 1-D and 3-D ones and non-constant parameters are refused in supports(), so the QDQ pass
 * leaves those groups in float and the model's answer does not change. Where cuBLASLt has no int8 algorithm a
 * plain dp4a kernel computes the same sums. Big batches go through in chunks of images so that the patches and
 * the sums fit the workspace cap. */
#include "cuda_kernels.cuh"

#define QL_INT8_MASK (CUDA_DT(INT8) | CUDA_DT(UINT8))

static int is8(netrun_dtype t) { return t == NETRUN_DTYPE_INT8 || t == NETRUN_DTYPE_UINT8; }
static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

static int64_t desc_count(const netrun_value_desc *d) { return cuda_desc_count(d); }

/* A constant input of `count` values (count -1: any), else NULL. */
static const void *const_of(const netrun_node_desc *nd, int i, int64_t *count) {
    if (i >= nd->n_inputs || nd->inputs[i].rank < 0 || !nd->inputs[i].const_data) return NULL;
    int64_t c = desc_count(&nd->inputs[i]);
    if (c < 1 || nd->inputs[i].const_nbytes < (size_t)c * cuda_esize(nd->inputs[i].dtype)) return NULL;
    *count = c;
    return nd->inputs[i].const_data;
}

static int32_t zp8(const void *p, netrun_dtype t, int64_t i) {
    return t == NETRUN_DTYPE_INT8 ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
}

/* ---- kernels ---- */

struct ql_epi {
    const int32_t *acc; /* [rows, ld] sums of this chunk (NULL: the depthwise kernel passes its own) */
    int64_t ld, m0;     /* acc's row stride; the chunk's first row (global pixel index) */
    const int32_t *bias; /* per output channel: the bias minus zx * sum w (GEMM), or the bias (depthwise); or NULL */
    const double *mult;
    int64_t OHW, OC;
    double yzp, lo, hi; /* of q's type */
    int y8, dst_nhwc;
    void *y;
    /* residual form */
    int res, z8;
    const void *z;
    int32_t qzp, zz, zy;
    float ra, rb, rlo, rhi;
};

/* The residual form's Add (onnxruntime's QLinearAdd): q in q's type, zb Z's byte at the same index. */
__device__ __forceinline__ int32_t ql_add(const ql_epi &e, int32_t q, uint32_t zb) {
    int32_t zv = e.z8 ? (int32_t)(int8_t)(zb & 0xffu) : (int32_t)(zb & 0xffu);
    float f = __fadd_rn(__fmul_rn((float)(q - e.qzp), e.ra), __fmul_rn((float)(zv - e.zz), e.rb));
    f = f < e.rlo ? e.rlo : f > e.rhi ? e.rhi : f;
    return (int32_t)rintf(f) + e.zy;
}

__device__ __forceinline__ void ql_finish(const ql_epi &e, int64_t g, int64_t oc, int32_t acc) {
    int64_t n = g / e.OHW, pix = g - n * e.OHW;
    uint32_t a = (uint32_t)acc;
    if (e.bias) a += (uint32_t)e.bias[oc];
    double v = nr_sat_round(__dadd_rn(__dmul_rn((double)(int32_t)a, e.mult[oc]), e.yzp), e.lo, e.hi);
    int64_t yi = e.dst_nhwc ? g * e.OC + oc : (n * e.OC + oc) * e.OHW + pix;
    int32_t q = (int32_t)v;
    if (e.res) q = ql_add(e, q, ((const uint8_t *)e.z)[yi]);
    if (e.y8) ((int8_t *)e.y)[yi] = (int8_t)q;
    else ((uint8_t *)e.y)[yi] = (uint8_t)q;
}

/* After cuBLASLt's int8 epilogue: the chunk's bytes y[n0 ..] (channels last, n0 and the count multiples of 4)
 * hold q as int8, or q - 128 for a uint8 q: four a thread, in place. */
__global__ void ql_post4_k(ql_epi e, int64_t n0, uint32_t n4, int q_u8) {
    uint32_t *y = (uint32_t *)((uint8_t *)e.y + n0);
    const uint32_t *z = e.res ? (const uint32_t *)((const uint8_t *)e.z + n0) : NULL;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += blockDim.x * gridDim.x) {
        uint32_t w = y[i], zw = z ? z[i] : 0, out = 0;
        for (int j = 0; j < 4; j++) {
            int32_t q = (int32_t)(int8_t)((w >> (8 * j)) & 0xffu) + (q_u8 ? 128 : 0);
            if (z) q = ql_add(e, q, zw >> (8 * j));
            out |= ((uint32_t)q & 0xffu) << (8 * j);
        }
        y[i] = out;
    }
}

/* Channels-last Y, OC % 4 == 0: four channels a thread (one 16-byte load of sums, one 4-byte store). */
__global__ void ql_epilogue4_k(ql_epi e, uint32_t n, fdiv32 oc4) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        uint32_t r = fdiv_q(oc4, i), oc = (i - r * oc4.d) * 4;
        int4 a4 = *(const int4 *)(e.acc + (int64_t)r * e.ld + oc);
        int32_t acc[4] = {a4.x, a4.y, a4.z, a4.w};
        int64_t yi = (e.m0 + r) * e.OC + oc;
        uint32_t zw = e.res ? *(const uint32_t *)((const uint8_t *)e.z + yi) : 0, out = 0;
        for (int j = 0; j < 4; j++) {
            uint32_t a = (uint32_t)acc[j] + (uint32_t)e.bias[oc + j];
            int32_t q = (int32_t)nr_sat_round(__dadd_rn(__dmul_rn((double)(int32_t)a, e.mult[oc + j]), e.yzp), e.lo, e.hi);
            if (e.res) q = ql_add(e, q, zw >> (8 * j));
            out |= ((uint32_t)q & 0xffu) << (8 * j);
        }
        *(uint32_t *)((uint8_t *)e.y + yi) = out;
    }
}

__global__ void ql_epilogue_k(ql_epi e, int64_t rows) {
    int64_t n = rows * e.OC;
    GRID_LOOP(i, n) {
        int64_t r = i / e.OC, oc = i - r * e.OC;
        ql_finish(e, e.m0 + r, oc, e.acc[r * e.ld + oc]);
    }
}

/* NCHW Y with OH * OW % 16 == 0 (the chunk starts at a whole image): a thread takes one channel of 16
 * consecutive pixels, so that a warp reads 32 neighbouring channels of each row's sums (coalesced) and writes
 * 16 bytes where ql_epilogue_k wrote one byte per 32-byte sector (ResNet-50's int8 stem spent 6.8 of its 23 ms
 * at batch 256 there). */
__global__ void ql_epilogue_nchw16_k(ql_epi e, uint32_t n, fdiv32 oc, fdiv32 ohw16) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        const uint32_t r16 = fdiv_q(oc, i), c = i - r16 * oc.d;
        const int64_t g0 = e.m0 + (int64_t)r16 * 16; /* global pixel index: img * OHW + pix */
        const uint32_t gi16 = (uint32_t)(g0 / 16), img = fdiv_q(ohw16, gi16), pix0 = (gi16 - img * ohw16.d) * 16;
        const int64_t yi = ((int64_t)img * e.OC + c) * e.OHW + pix0;
        const uint32_t b = (uint32_t)e.bias[c];
        const double m = e.mult[c];
        uint4 zv = e.res ? *(const uint4 *)((const uint8_t *)e.z + yi) : make_uint4(0, 0, 0, 0);
        const uint32_t *zw = (const uint32_t *)&zv;
        uint32_t out[4] = {0, 0, 0, 0};
#pragma unroll
        for (int j = 0; j < 16; j++) {
            const uint32_t a = (uint32_t)e.acc[((int64_t)r16 * 16 + j) * e.ld + c] + b;
            int32_t q = (int32_t)nr_sat_round(__dadd_rn(__dmul_rn((double)(int32_t)a, m), e.yzp), e.lo, e.hi);
            if (e.res) q = ql_add(e, q, zw[j >> 2] >> (8 * (j & 3)));
            out[j >> 2] |= ((uint32_t)q & 0xffu) << (8 * (j & 3));
        }
        *(uint4 *)((uint8_t *)e.y + yi) = make_uint4(out[0], out[1], out[2], out[3]);
    }
}

/* Patches of images [n0, n0 + imgs): cols[r, Kp] int8, k = (kh * KW + kw) * C + c, X's zero point (int8
 * domain) outside the image, zero past K; a uint8 X is moved to int8 (x ^ 0x80 = x - 128). X NHWC or NCHW. */
struct ql_cols {
    const uint8_t *x;
    int8_t *cols;
    int64_t n0, C, H, W, OH, OW, K, Kp, s0, s1, d0, d1, p0, p1;
    int KW, nhwc, flip;
    uint32_t pad; /* the zero point's byte */
};

/* Index math of the patch kernels, 32-bit (a chunk's patches stay below 2^31 bytes). */
struct ql_divs {
    fdiv32 item, c16, ohw, ow, kw, c, kp;
};

/* The chunk's images [n0, n0 + imgs) of an NCHW X, channels last: each byte read once here, and the patches then
 * read contiguous channels and neighbouring pixels (gathered from NCHW, a warp's 32 bytes touch 32 planes). */
__global__ void ql_to_nhwc_k(const uint8_t *x, uint8_t *y, int64_t n0, uint32_t n, fdiv32 c, fdiv32 hw) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        uint32_t pix_all = fdiv_q(c, i), ch = i - pix_all * c.d, img = fdiv_q(hw, pix_all), p = pix_all - img * hw.d;
        y[i] = x[((n0 + img) * c.d + ch) * (int64_t)hw.d + p];
    }
}

/* Channels-last X, C % 16 == 0: one tap's 16 channels a thread (16-byte loads and stores). */
__global__ void ql_im2col16_k(ql_cols c, ql_divs dv, uint32_t n) {
    uint32_t c16 = dv.c16.d, taps_c16 = dv.item.d;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        uint32_t r = fdiv_q(dv.item, i), rem = i - r * taps_c16, tap = fdiv_q(dv.c16, rem), cb = rem - tap * c16;
        uint32_t nl = fdiv_q(dv.ohw, r), pix = r - nl * dv.ohw.d, oh = fdiv_q(dv.ow, pix), ow = pix - oh * dv.ow.d;
        uint32_t kh = fdiv_q(dv.kw, tap), kw = tap - kh * dv.kw.d;
        int64_t ih = (int64_t)oh * c.s0 - c.p0 + kh * c.d0, iw = (int64_t)ow * c.s1 - c.p1 + kw * c.d1;
        uint4 v;
        if (ih >= 0 && ih < c.H && iw >= 0 && iw < c.W) {
            v = *(const uint4 *)(c.x + (((c.n0 + nl) * c.H + ih) * c.W + iw) * c.C + cb * 16);
            if (c.flip) v.x ^= 0x80808080u, v.y ^= 0x80808080u, v.z ^= 0x80808080u, v.w ^= 0x80808080u;
        } else {
            uint32_t p = c.pad * 0x01010101u;
            v = make_uint4(p, p, p, p);
        }
        *(uint4 *)(c.cols + (int64_t)r * c.Kp + tap * c.C + cb * 16) = v;
    }
}

/* Any layout and channel count: one byte a thread. */
__global__ void ql_im2col_k(ql_cols c, ql_divs dv, uint32_t n) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        uint32_t r = fdiv_q(dv.kp, i), k = i - r * dv.kp.d, v = 0;
        if (k < (uint32_t)c.K) {
            uint32_t tap = fdiv_q(dv.c, k), ch = k - tap * dv.c.d, kh = fdiv_q(dv.kw, tap), kw = tap - kh * dv.kw.d;
            uint32_t nl = fdiv_q(dv.ohw, r), pix = r - nl * dv.ohw.d, oh = fdiv_q(dv.ow, pix), ow = pix - oh * dv.ow.d;
            int64_t ih = (int64_t)oh * c.s0 - c.p0 + kh * c.d0, iw = (int64_t)ow * c.s1 - c.p1 + kw * c.d1, n = c.n0 + nl;
            if (ih >= 0 && ih < c.H && iw >= 0 && iw < c.W) {
                v = c.x[c.nhwc ? ((n * c.H + ih) * c.W + iw) * c.C + ch : ((n * c.C + ch) * c.H + ih) * c.W + iw];
                if (c.flip) v ^= 0x80u;
            } else {
                v = c.pad;
            }
        }
        c.cols[i] = (int8_t)(uint8_t)v;
    }
}

/* acc[r, o] = sum_k A[r, k] W[o, k] with dp4a: the path where cuBLASLt has no int8 algorithm. Kp % 16 == 0. */
#define QL_TILE 16
__global__ void ql_gemm_dp4a_k(const int8_t *A, const int8_t *Wt, int32_t *acc, int64_t rows, int64_t ocp, int64_t kp) {
    __shared__ int sa[QL_TILE][QL_TILE + 1], sw[QL_TILE][QL_TILE + 1];
    int64_t r = (int64_t)blockIdx.y * QL_TILE + threadIdx.y, o = (int64_t)blockIdx.x * QL_TILE + threadIdx.y;
    int64_t words = kp / 4;
    int sum = 0;
    for (int64_t k0 = 0; k0 < words; k0 += QL_TILE) {
        int64_t kw = k0 + threadIdx.x;
        sa[threadIdx.y][threadIdx.x] = r < rows && kw < words ? ((const int *)(A + r * kp))[kw] : 0;
        sw[threadIdx.y][threadIdx.x] = o < ocp && kw < words ? ((const int *)(Wt + o * kp))[kw] : 0;
        __syncthreads();
        for (int t = 0; t < QL_TILE; t++) sum = __dp4a(sa[threadIdx.y][t], sw[threadIdx.x][t], sum);
        __syncthreads();
    }
    int64_t oc = (int64_t)blockIdx.x * QL_TILE + threadIdx.x;
    if (r < rows && oc < ocp) acc[r * ocp + oc] = sum;
}

/* Depthwise (group = C = OC): one output a thread, sums of (x - zx) w over the taps inside the image. */
struct ql_dw {
    const uint8_t *x;
    const int8_t *w; /* [C][KH*KW] */
    int64_t N, C, H, W, OH, OW, s0, s1, d0, d1, p0, p1;
    int KH, KW, x8, nhwc;
    int32_t zx;
};

__global__ void ql_dw_k(ql_dw d, ql_epi e) {
    int64_t total = d.N * d.C * d.OH * d.OW;
    GRID_LOOP(i, total) {
        int64_t c, n, oh, ow, rest;
        if (e.dst_nhwc) {
            c = i % d.C;
            rest = i / d.C;
            ow = rest % d.OW;
            rest /= d.OW;
            oh = rest % d.OH;
            n = rest / d.OH;
        } else {
            ow = i % d.OW;
            rest = i / d.OW;
            oh = rest % d.OH;
            rest /= d.OH;
            c = rest % d.C;
            n = rest / d.C;
        }
        int32_t acc = 0;
        const int8_t *wc = d.w + c * d.KH * d.KW;
        for (int kh = 0; kh < d.KH; kh++) {
            int64_t ih = oh * d.s0 - d.p0 + kh * d.d0;
            if (ih < 0 || ih >= d.H) continue;
            for (int kw = 0; kw < d.KW; kw++) {
                int64_t iw = ow * d.s1 - d.p1 + kw * d.d1;
                if (iw < 0 || iw >= d.W) continue;
                int64_t xi = d.nhwc ? ((n * d.H + ih) * d.W + iw) * d.C + c : ((n * d.C + c) * d.H + ih) * d.W + iw;
                int32_t xv = d.x8 ? (int32_t)(int8_t)d.x[xi] : (int32_t)d.x[xi];
                acc += (xv - d.zx) * wc[kh * d.KW + kw];
            }
        }
        ql_finish(e, (n * d.OH + oh) * d.OW + ow, c, acc);
    }
}

/* ---- implicit GEMM: the patches read in place ----
 * Convolutions whose patches would be gathered (3x3, strided 1x1) over channels-last int8 X with C % 32 == 0:
 * a block computes a 128-pixel x 128-channel tile of the sums with the integer Tensor Cores (mma.sync m16n8k32,
 * int8 x int8 -> int32), K walked 64 bytes at a time through a three-stage cp.async pipeline. The A tile is loaded
 * straight from X: pixel m's 16-byte chunk at k is X[n, oh*s - p + r*d, ow*s - p + s*d, c] for (r, s, c) = k's
 * position, or 16 bytes of X's zero point where the tap falls in the padding (so that the zx * sum w in the bias
 * stays right, as with the gathered patches). B is the weights [OCp][Kp] as uploaded. Eight warps, 32 x 64 each;
 * shared rows of 64 + 16 bytes so that the fragments' 32-bit loads hit 32 banks. The epilogue is the int32
 * path's (ql_finish: the CPU's double arithmetic, the residual Add, uint8 or int8 Y), written straight from the
 * registers: no patch matrix and no int32 sums in memory. */
#define IG_BM 128
#define IG_BN 128
#define IG_BK 64
#define IG_LD 80
#define IG_STAGES 3
#define IG_STAGE_BYTES ((IG_BM + IG_BN) * IG_LD)

struct ig_args {
    const int8_t *x, *w;
    int64_t rows;
    int H, W, C, OH, OW, OCp, K, Kp, KW, sh, sw, dh, dw, ph, pw;
    uint32_t zx4; /* X's zero point in all four bytes */
    fdiv32 ohw, ow, c, kw;
};

__device__ __forceinline__ void ig_cp16(uint32_t dst, const void *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void ig_st16(uint32_t dst, uint32_t v) {
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(dst), "r"(v));
}

/* Stage `slot` <- K tile kt: two 16-byte chunks of A and two of B per thread (256 threads). */
__device__ __forceinline__ void ig_load(const ig_args &a, uint32_t sbase, int slot, int kt, const int *pn,
                                        const int *pih, const int *piw, const bool *pvalid, int64_t oc0) {
    const int tid = threadIdx.x, col = tid & 3;
    const uint32_t st = sbase + slot * IG_STAGE_BYTES;
    const int k = kt * IG_BK + col * 16;
    /* k's tap (r, s) and channel c: k < K, C % 32 == 0, so a chunk never straddles two taps */
    const uint32_t rs = fdiv_q(a.c, (uint32_t)k), c = (uint32_t)k - rs * (uint32_t)a.C;
    const uint32_t r = fdiv_q(a.kw, rs), sx = rs - r * (uint32_t)a.KW;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int row = (tid >> 2) + 64 * h;
        const uint32_t dst = st + row * IG_LD + col * 16;
        if (k >= a.K) {
            ig_st16(dst, 0u);
            continue;
        }
        const int ih = pih[h] + (int)r * a.dh, iw = piw[h] + (int)sx * a.dw;
        if (pvalid[h] && (unsigned)ih < (unsigned)a.H && (unsigned)iw < (unsigned)a.W)
            ig_cp16(dst, a.x + ((((int64_t)pn[h] * a.H + ih) * a.W + iw) * a.C + c));
        else
            ig_st16(dst, a.zx4);
    }
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int row = (tid >> 2) + 64 * h;
        const uint32_t dst = st + (IG_BM + row) * IG_LD + col * 16;
        const int64_t oc = oc0 + row;
        if (k < a.K && oc < a.OCp) ig_cp16(dst, a.w + oc * a.Kp + k);
        else ig_st16(dst, 0u);
    }
}

__global__ void __launch_bounds__(256, 2) ql_igemm_k(ig_args a, ql_epi e) {
    extern __shared__ __align__(16) uint8_t ig_smem[];
    const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(ig_smem);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp & 3, wn = warp >> 2;
    const int g = lane >> 2, t = lane & 3;
    const int64_t m0 = (int64_t)blockIdx.x * IG_BM, oc0 = (int64_t)blockIdx.y * IG_BN;
    /* this thread's two A rows: image, top-left input position, validity */
    int pn[2], pih[2], piw[2];
    bool pvalid[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int64_t m = m0 + (tid >> 2) + 64 * h;
        pvalid[h] = m < a.rows;
        const uint32_t mm = pvalid[h] ? (uint32_t)m : 0u;
        const uint32_t n = fdiv_q(a.ohw, mm), pix = mm - n * a.ohw.d, oh = fdiv_q(a.ow, pix), ow = pix - oh * a.ow.d;
        pn[h] = (int)n;
        pih[h] = (int)oh * a.sh - a.ph;
        piw[h] = (int)ow * a.sw - a.pw;
    }
    int32_t acc[2][8][4];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int q = 0; q < 4; q++) acc[i][j][q] = 0;
    const int KT = (a.K + IG_BK - 1) / IG_BK;
#pragma unroll
    for (int sidx = 0; sidx < IG_STAGES - 1; sidx++) {
        if (sidx < KT) ig_load(a, sbase, sidx, sidx, pn, pih, piw, pvalid, oc0);
        asm volatile("cp.async.commit_group;\n" ::);
    }
    for (int kt = 0; kt < KT; kt++) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(IG_STAGES - 2));
        __syncthreads();
        const int nk = kt + IG_STAGES - 1;
        if (nk < KT) ig_load(a, sbase, nk % IG_STAGES, nk, pn, pih, piw, pvalid, oc0);
        asm volatile("cp.async.commit_group;\n" ::);
        const uint8_t *As = ig_smem + (kt % IG_STAGES) * IG_STAGE_BYTES, *Bs = As + IG_BM * IG_LD;
#pragma unroll
        for (int kk = 0; kk < IG_BK; kk += 32) {
            uint32_t af[2][4], bf[8][2];
#pragma unroll
            for (int i = 0; i < 2; i++) {
                const uint8_t *r0 = As + (wm * 32 + i * 16 + g) * IG_LD + kk + t * 4, *r8 = r0 + 8 * IG_LD;
                af[i][0] = *(const uint32_t *)r0;
                af[i][1] = *(const uint32_t *)r8;
                af[i][2] = *(const uint32_t *)(r0 + 16);
                af[i][3] = *(const uint32_t *)(r8 + 16);
            }
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const uint8_t *c0 = Bs + (wn * 64 + j * 8 + g) * IG_LD + kk + t * 4;
                bf[j][0] = *(const uint32_t *)c0;
                bf[j][1] = *(const uint32_t *)(c0 + 16);
            }
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < 8; j++)
                    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                                 "{%8,%9}, {%0,%1,%2,%3};\n"
                                 : "+r"(acc[i][j][0]), "+r"(acc[i][j][1]), "+r"(acc[i][j][2]), "+r"(acc[i][j][3])
                                 : "r"(af[i][0]), "r"(af[i][1]), "r"(af[i][2]), "r"(af[i][3]), "r"(bf[j][0]),
                                   "r"(bf[j][1]));
        }
    }
    asm volatile("cp.async.wait_group 0;\n" ::);
    /* c0, c1: row g, columns 2t, 2t + 1; c2, c3: row g + 8. The int32 path's arithmetic (ql_finish) with the
     * channels-last index computed once a row; a pair of channels stored as one 16-bit word where OC is even. */
    const int64_t ocb = oc0 + wn * 64 + 2 * t;
    const bool pairs = (e.OC & 1) == 0;
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            const int64_t row = m0 + wm * 32 + i * 16 + g + 8 * hr;
            if (row >= a.rows) continue;
            uint8_t *yrow = (uint8_t *)e.y + row * e.OC;
            const uint8_t *zrow = e.res ? (const uint8_t *)e.z + row * e.OC : NULL;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const int64_t oc = ocb + j * 8;
                if (oc >= e.OC) continue;
                uint32_t b2[2];
#pragma unroll
                for (int q = 0; q < 2; q++) {
                    const int64_t c = oc + q < e.OC ? oc + q : oc;
                    const uint32_t av = (uint32_t)acc[i][j][2 * hr + q] + (uint32_t)__ldg(&e.bias[c]);
                    int32_t v = (int32_t)nr_sat_round(__dadd_rn(__dmul_rn((double)(int32_t)av, __ldg(&e.mult[c])), e.yzp),
                                                      e.lo, e.hi);
                    if (zrow && oc + q < e.OC) v = ql_add(e, v, zrow[oc + q]);
                    b2[q] = (uint32_t)v & 0xffu;
                }
                if (pairs) *(uint16_t *)(yrow + oc) = (uint16_t)(b2[0] | (b2[1] << 8));
                else {
                    yrow[oc] = (uint8_t)b2[0];
                    if (oc + 1 < e.OC) yrow[oc + 1] = (uint8_t)b2[1];
                }
            }
        }
}

/* ---- host side ---- */

typedef struct ql_state {
    int matmul, dw, res, direct;
    int igemm;           /* the implicit-GEMM kernel (ql_igemm_k) may replace patches + cuBLASLt */
    int ig_now;          /* ... and does at the planned shape (enough 128 x 128 tiles to fill the GPU) */
    int ig_always;       /* option cuda.int8_igemm=always: whatever the shape (tests) */
    netrun_dtype xt, yt, qt;
    int64_t C, OC, OCp, KH, KW, K, Kp;
    int64_t s[2], d[2], pb[2];
    int src_nhwc, dst_nhwc;
    int32_t zx_raw, zx;  /* x's zero point as stored; in the GEMM's int8 domain */
    double yzp, lo, hi;
    int32_t qzp, zz, zy;
    float ra, rb, rlo, rhi;
    int8_t *w;           /* device: [OCp][Kp] (GEMM) or [C][KH*KW] (depthwise) */
    double *mult;        /* device [OC] */
    int32_t *bias_eff;   /* device [OC]: bias - zx * sum w (GEMM paths) */
    float *beta_f;       /* device [OC]: cuBLASLt's int8 epilogue's bias (beta above) */
    float *alpha_f;      /* device [OC]: its scales (per-channel weights), or NULL */
    float alpha;         /* its scale (per-tensor weights) */
    int nhwc_out;        /* Y channels last (or 1x1 planes): the int8 epilogue can write it */
    /* planned shapes */
    int planned, lt8;    /* lt8: cuBLASLt writes int8 Y (no int32 sums) */
    int64_t N, H, W, OH, OW, ipc;
    cuda_lt_gemm *lt_full, *lt_tail;
    size_t off[4], part[4], need; /* patches, int32 sums, cuBLASLt's workspace, X channels last */
    void *scratch;
    size_t scratch_cap;
    char what[96];
} ql_state;

static int ql_supports(const netrun_node_desc *nd, char *reason, size_t size) {
    int mm = !strcmp(nd->op_type, "QLinearMatMul");
    const char *op = nd->op_type;
    if (nd->n_inputs < 8 || nd->n_outputs != 1) return cuda_refuse(reason, size, "%s: 8 inputs or more", op);
    const netrun_value_desc *x = &nd->inputs[0], *w = &nd->inputs[3], *y = &nd->outputs[0];
    if (!is8(x->dtype) || !is8(w->dtype) || !is8(y->dtype))
        return cuda_refuse(reason, size, "%s: 8-bit X, W and Y only", op);
    int64_t c = 0;
    if (!const_of(nd, 1, &c) || c != 1 || nd->inputs[1].dtype != NETRUN_DTYPE_FLOAT || !const_of(nd, 6, &c) || c != 1 ||
        nd->inputs[6].dtype != NETRUN_DTYPE_FLOAT)
        return cuda_refuse(reason, size, "%s: x_scale and y_scale must be one constant float32 each", op);
    for (int i = 2; i <= 7; i += 5)
        if (nd->inputs[i].rank >= 0 && (!const_of(nd, i, &c) || c != 1))
            return cuda_refuse(reason, size, "%s: zero points of X and Y must be one constant value each", op);
    if (!const_of(nd, 3, &c)) return cuda_refuse(reason, size, "%s: constant weights only", op);
    int64_t ws_n = 0, oc = mm ? (w->rank == 2 ? w->dims[1] : -1) : w->dims[0];
    if (!const_of(nd, 4, &ws_n) || nd->inputs[4].dtype != NETRUN_DTYPE_FLOAT || (ws_n != 1 && ws_n != oc))
        return cuda_refuse(reason, size, "%s: w_scale must be float32 constants, one or one per output channel", op);
    int64_t zn = 0;
    const void *wz = nd->inputs[5].rank >= 0 ? const_of(nd, 5, &zn) : NULL;
    if (nd->inputs[5].rank >= 0 && (!wz || (zn != 1 && zn != oc) || nd->inputs[5].dtype != w->dtype))
        return cuda_refuse(reason, size, "%s: w_zero_point must be constants of W's type", op);
    for (int64_t i = 0; wz && i < zn; i++)
        if (zp8(wz, w->dtype, i) != (w->dtype == NETRUN_DTYPE_UINT8 ? 128 : 0))
            return cuda_refuse(reason, size, "%s: symmetric weights only (zero point 0, or 128 for uint8)", op);
    if (mm) {
        if (w->rank != 2 || x->rank < 2 || y->rank != x->rank || nd->n_inputs != 8)
            return cuda_refuse(reason, size, "QLinearMatMul: a constant 2-D B and A of rank >= 2 only");
        return 1;
    }
    const netrun_conv_params *p = (const netrun_conv_params *)nd->params;
    if (!p || nd->params_size < sizeof *p || p->n_spatial != 2 || x->rank != 4 || w->rank != 4)
        return cuda_refuse(reason, size, "QLinearConv: 2-D only");
    int64_t C = x->dims[1], M = w->dims[0];
    if (!(p->group == 1 || (p->group == C && M == C && w->dims[1] == 1)))
        return cuda_refuse(reason, size, "QLinearConv: group 1 or depthwise only");
    if (p->has_sum) {
        if (nd->n_inputs != 14 || !is8(nd->inputs[9].dtype))
            return cuda_refuse(reason, size, "QLinearConv: residual form needs 14 inputs and an 8-bit Z");
        for (int i = 10; i <= 13; i++)
            if (!const_of(nd, i, &c) || c != 1 || ((i == 10 || i == 12) && nd->inputs[i].dtype != NETRUN_DTYPE_FLOAT))
                return cuda_refuse(reason, size, "QLinearConv: residual scales and zero points must be constants");
    } else if (nd->n_inputs > 9) {
        return cuda_refuse(reason, size, "QLinearConv: 8 or 9 inputs");
    }
    if (p->has_bias && (nd->n_inputs < 9 || nd->inputs[8].rank < 0 || nd->inputs[8].dtype != NETRUN_DTYPE_INT32 ||
                        !const_of(nd, 8, &c) || c != M))
        return cuda_refuse(reason, size, "QLinearConv: a constant int32 bias only");
    return 1;
}

static void ql_destroy(cuda_context *ctx, void *state) {
    ql_state *st = (ql_state *)state;
    if (!st) return;
    cudaFree(st->w);
    cudaFree(st->mult);
    cudaFree(st->bias_eff);
    cudaFree(st->beta_f);
    cudaFree(st->alpha_f);
    cuda_lt_gemm_destroy(st->lt_full);
    cuda_lt_gemm_destroy(st->lt_tail);
    if (st->scratch) cuda_scratch_free(ctx, st->scratch);
    cuda_host->free(st);
}

static float f32_of(const netrun_node_desc *nd, int i, int64_t k) { return ((const float *)nd->inputs[i].const_data)[k]; }
static int32_t zp_of(const netrun_node_desc *nd, int i) {
    return i < nd->n_inputs && nd->inputs[i].rank >= 0 && nd->inputs[i].const_data
               ? zp8(nd->inputs[i].const_data, nd->inputs[i].dtype, 0)
               : 0;
}

static netrun_status upload(void **dst, const void *src, size_t bytes, const char *what) {
    cudaError_t e = cudaMalloc(dst, bytes ? bytes : 1);
    if (e == cudaSuccess) e = cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice);
    return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, what);
}

/* The workspace cap for patches + sums: the policy's share of what is free, then the user's limit. */
static size_t ql_cap(cuda_context *ctx) {
    size_t cap;
    switch (ctx->config.workspace_policy) {
    case NETRUN_WORKSPACE_FASTEST: cap = (size_t)1 << 30; break;
    case NETRUN_WORKSPACE_MIN_MEMORY: cap = (size_t)32 << 20; break;
    default: cap = (size_t)256 << 20; break;
    }
    if (ctx->config.workspace_limit && cap > ctx->config.workspace_limit) cap = ctx->config.workspace_limit;
    return cap;
}

/* Chunks of ipc images and their cuBLASLt GEMMs (the full chunk's and the last one's): int8 out (lt8) or int32. */
static void ql_plan_chunks(cuda_context *ctx, ql_state *st, int lt8) {
    int64_t N = st->N, ohw = st->OH * st->OW;
    int64_t nhwc_copy = st->direct || st->src_nhwc || st->H * st->W == 1 ? 0 : st->H * st->W * st->C;
    size_t per_img = (size_t)ohw * ((st->direct ? 0 : (size_t)st->Kp) + (lt8 ? 0 : (size_t)st->OCp * 4)) +
                     (size_t)nhwc_copy;
    size_t cap = ql_cap(ctx);
    int64_t ipc = per_img ? (int64_t)(cap / per_img) : N;
    if (ipc < 1) ipc = 1;
    if (ipc > N) ipc = N;
    /* cuBLASLt takes 32-bit dims and the kernels index a chunk's patches and outputs in 32 bits */
    while (ipc > 1 && (ipc * ohw * st->Kp > INT32_MAX || ipc * ohw * st->OCp > INT32_MAX || ipc * nhwc_copy > INT32_MAX))
        ipc /= 2;
    st->ipc = ipc;
    cuda_lt_shape d = {.ab_type = CUDA_R_8I, .cd_type = lt8 ? CUDA_R_8I : CUDA_R_32I,
                       .bias_type = lt8 ? CUDA_R_32F : CUDA_R_32I, .compute = CUBLAS_COMPUTE_32I, .ta = 1, .tb = 0,
                       .m = lt8 ? st->OC : st->OCp, .n = ipc * ohw, .k = st->Kp, .lda = st->Kp, .ldb = st->Kp,
                       .ldc = lt8 ? st->OC : st->OCp, .has_bias = lt8, .act = CUDA_LT_NONE, .has_z = 0,
                       .max_ws = (size_t)32 << 20, .int_scale = !lt8, .alpha_vector = lt8 && st->alpha_f};
    st->lt_full = cuda_lt_gemm_create_ex(&d);
    int64_t tail = N % ipc;
    if (tail) {
        d.n = tail * ohw;
        st->lt_tail = cuda_lt_gemm_create_ex(&d);
    }
}

/* Plan the shapes of one run: the path, images per chunk, workspace parts. */
static netrun_status ql_plan(cuda_context *ctx, ql_state *st, int64_t N, int64_t H, int64_t W, int64_t OH, int64_t OW) {
    st->N = N, st->H = H, st->W = W, st->OH = OH, st->OW = OW;
    cuda_lt_gemm_destroy(st->lt_full);
    cuda_lt_gemm_destroy(st->lt_tail);
    st->lt_full = st->lt_tail = NULL;
    st->part[0] = st->part[1] = st->part[2] = st->part[3] = 0;
    st->need = 0;
    st->planned = 1;
    st->lt8 = 0;
    /* 128 x 128 tiles fill the GPU only with enough pixels: small grids (batch 1's late layers) keep cuBLASLt,
     * which splits K */
    int64_t tiles = (N * OH * OW + IG_BM - 1) / IG_BM * ((st->OCp + IG_BN - 1) / IG_BN);
    st->ig_now = st->igemm && (st->ig_always || tiles >= 2 * (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132));
    if (st->dw || st->ig_now || N == 0 || OH * OW == 0) return NETRUN_OK;
    int64_t ohw = OH * OW;
    /* int8 out where Y is channels last with 4-byte aligned rows; else (or without such an algorithm) int32 sums */
    if (st->beta_f && (st->nhwc_out || ohw == 1) && st->OC % 4 == 0) {
        ql_plan_chunks(ctx, st, 1);
        st->lt8 = st->lt_full && (st->N % st->ipc == 0 || st->lt_tail);
        if (!st->lt8) {
            cuda_lt_gemm_destroy(st->lt_full);
            cuda_lt_gemm_destroy(st->lt_tail);
            st->lt_full = st->lt_tail = NULL;
        }
    }
    if (!st->lt8) ql_plan_chunks(ctx, st, 0);
    size_t lw = cuda_lt_gemm_workspace(st->lt_full), lw2 = cuda_lt_gemm_workspace(st->lt_tail);
    st->part[0] = st->direct ? 0 : (size_t)st->ipc * ohw * (size_t)st->Kp;
    st->part[1] = st->lt8 ? 0 : (size_t)st->ipc * ohw * (size_t)st->OCp * 4;
    st->part[2] = lw > lw2 ? lw : lw2;
    st->part[3] = st->direct || st->src_nhwc || H * W == 1 ? 0 : (size_t)st->ipc * H * W * (size_t)st->C;
    size_t total = 0;
    for (int i = 0; i < 4; i++) st->off[i] = total, total += (st->part[i] + 255) & ~(size_t)255;
    st->need = total;
    return NETRUN_OK;
}

static netrun_status ql_create(cuda_context *ctx, const netrun_node_desc *nd, void **state, size_t *workspace) {
    *workspace = 0;
    ql_state *st = (ql_state *)cuda_host->alloc(sizeof *st, 16);
    if (!st) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda %s: out of memory", nd->op_type);
    memset(st, 0, sizeof *st);
    snprintf(st->what, sizeof st->what, "cuda %s %s", nd->op_type, nd->name ? nd->name : "");
    st->matmul = !strcmp(nd->op_type, "QLinearMatMul");
    const netrun_value_desc *x = &nd->inputs[0], *w = &nd->inputs[3], *y = &nd->outputs[0];
    const netrun_conv_params *p = st->matmul ? NULL : (const netrun_conv_params *)nd->params;
    st->xt = x->dtype;
    st->yt = y->dtype;
    st->res = p && p->has_sum;
    st->qt = nd->inputs[7].rank >= 0 ? nd->inputs[7].dtype : y->dtype; /* q's type (the residual form's own) */
    if (st->matmul) {
        st->C = w->dims[0];
        st->OC = w->dims[1];
        st->KH = st->KW = 1;
        st->s[0] = st->s[1] = st->d[0] = st->d[1] = 1;
        st->src_nhwc = st->dst_nhwc = 1;
    } else {
        st->C = x->dims[1];
        st->OC = w->dims[0];
        st->KH = w->dims[2];
        st->KW = w->dims[3];
        for (int i = 0; i < 2; i++) st->s[i] = p->strides[i], st->d[i] = p->dilations[i], st->pb[i] = p->pads_begin[i];
        st->src_nhwc = p->src_nhwc;
        st->dst_nhwc = p->dst_nhwc;
        st->dw = p->group > 1;
    }
    st->K = st->C * st->KH * st->KW;
    st->Kp = round_up(st->K, 16);
    st->OCp = round_up(st->OC, 16);
    st->zx_raw = zp_of(nd, 2);
    st->zx = st->xt == NETRUN_DTYPE_UINT8 ? st->zx_raw - 128 : st->zx_raw;
    nr_int_range(st->qt, &st->lo, &st->hi);
    st->yzp = zp_of(nd, 7);
    if (st->res) {
        double lo2, hi2;
        nr_int_range(st->yt, &lo2, &hi2);
        st->qzp = zp_of(nd, 7);
        st->zz = zp_of(nd, 11);
        st->zy = zp_of(nd, 13);
        float ys = f32_of(nd, 6, 0), zs = f32_of(nd, 10, 0), ss = f32_of(nd, 12, 0);
        st->ra = ys / ss;
        st->rb = zs / ss;
        st->rlo = (float)lo2 - (float)st->zy;
        st->rhi = (float)hi2 - (float)st->zy;
    }
    /* weights in the int8 domain, zero point taken out (0 or 128 by supports()) */
    const void *wsrc = w->const_data;
    int wu8 = w->dtype == NETRUN_DTYPE_UINT8;
    int64_t nws = desc_count(&nd->inputs[4]);
    const int32_t *bias = p && p->has_bias ? (const int32_t *)nd->inputs[8].const_data : NULL;
    size_t wbytes = st->dw ? (size_t)(st->C * st->KH * st->KW) : (size_t)(st->OCp * st->Kp);
    size_t oc4 = (size_t)st->OC * 4;
    int8_t *hw = (int8_t *)cuda_host->alloc(wbytes, 16);
    double *hm = (double *)cuda_host->alloc((size_t)st->OC * sizeof(double), 16);
    int32_t *hb = (int32_t *)cuda_host->alloc(oc4, 16);
    float *hbeta = (float *)cuda_host->alloc(oc4, 16), *ha = (float *)cuda_host->alloc(oc4, 16);
    netrun_status s = NETRUN_OK;
    if (!hw || !hm || !hb || !hbeta || !ha) s = cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "%s: out of memory", st->what);
    if (s == NETRUN_OK) {
        memset(hw, 0, wbytes);
        int64_t cg = st->dw ? 1 : st->C;
        for (int64_t o = 0; o < st->OC; o++) {
            int32_t sumw = 0;
            for (int64_t kh = 0; kh < st->KH; kh++)
                for (int64_t kw = 0; kw < st->KW; kw++)
                    for (int64_t c = 0; c < cg; c++) {
                        int64_t src = st->matmul ? c * st->OC + o : ((o * cg + c) * st->KH + kh) * st->KW + kw;
                        int32_t v = wu8 ? (int32_t)((const uint8_t *)wsrc)[src] - 128 : ((const int8_t *)wsrc)[src];
                        sumw += v;
                        if (st->dw) hw[o * st->KH * st->KW + kh * st->KW + kw] = (int8_t)v;
                        else hw[o * st->Kp + (kh * st->KW + kw) * st->C + c] = (int8_t)v;
                    }
            float xs = f32_of(nd, 1, 0), ws = f32_of(nd, 4, nws > 1 ? o : 0), ys = f32_of(nd, 6, 0);
            float m = (float)(xs * ws) / ys; /* float32, as the CPU backend and the reference */
            hm[o] = m;
            /* int32 wrapping, as the sums: the bias and X's zero point's share of them */
            hb[o] = (int32_t)((uint32_t)(bias ? bias[o] : 0) - (uint32_t)st->zx * (uint32_t)sumw);
            st->alpha = ha[o] = m;
            hbeta[o] = (float)((double)hb[o] * m + st->yzp - (st->qt == NETRUN_DTYPE_UINT8 ? 128 : 0));
        }
    }
    if (s == NETRUN_OK) s = upload((void **)&st->w, hw, wbytes, "QLinear weights");
    if (s == NETRUN_OK) s = upload((void **)&st->mult, hm, (size_t)st->OC * sizeof(double), "QLinear multipliers");
    if (s == NETRUN_OK && !st->dw) s = upload((void **)&st->bias_eff, hb, oc4, "QLinear bias");
    if (s == NETRUN_OK && !st->dw) s = upload((void **)&st->beta_f, hbeta, oc4, "QLinear offsets");
    if (s == NETRUN_OK && !st->dw && nws > 1) s = upload((void **)&st->alpha_f, ha, oc4, "QLinear scales");
    cuda_host->free(hw);
    cuda_host->free(hm);
    cuda_host->free(hb);
    cuda_host->free(hbeta);
    cuda_host->free(ha);
    st->nhwc_out = st->dst_nhwc;
    /* X itself is the patch matrix: 1x1, stride 1, no padding, channels-last (or 1x1 planes) int8, C % 16 == 0 */
    if (s == NETRUN_OK && !st->dw) {
        int plain = st->KH == 1 && st->KW == 1 && st->s[0] == 1 && st->s[1] == 1 && st->pb[0] == 0 && st->pb[1] == 0 &&
                    (!p || (p->pads_end[0] == 0 && p->pads_end[1] == 0));
        int planes1 = !st->matmul && x->rank == 4 && x->dims[2] == 1 && x->dims[3] == 1;
        st->direct = plain && (st->src_nhwc || st->matmul || planes1) && st->xt == NETRUN_DTYPE_INT8 && st->C % 16 == 0;
        /* the patches read in place (option cuda.int8_igemm=0: gathered as before) */
        const char *ig = ctx->config.get_option ? ctx->config.get_option(ctx->config.opaque, "cuda.int8_igemm") : NULL;
        st->igemm = !st->direct && !st->matmul && st->src_nhwc && st->dst_nhwc && st->xt == NETRUN_DTYPE_INT8 &&
                    st->C % 32 == 0 && st->Kp == st->K && (!ig || strcmp(ig, "0") != 0);
        st->ig_always = st->igemm && ig && !strcmp(ig, "always");
        /* its three stages take 60 KiB of shared memory: past the 48 KiB a launch gets without asking */
        if (st->igemm && cudaFuncSetAttribute(ql_igemm_k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              IG_STAGES * IG_STAGE_BYTES) != cudaSuccess) {
            cudaGetLastError();
            st->igemm = 0;
        }
    }
    if (s == NETRUN_OK && x->rank >= 2 && cuda_desc_count(x) > 0 && cuda_desc_count(y) > 0) {
        if (st->matmul) s = ql_plan(ctx, st, cuda_desc_count(x) / st->C, 1, 1, 1, 1);
        else s = ql_plan(ctx, st, x->dims[0], x->dims[2], x->dims[3], y->dims[2], y->dims[3]);
        *workspace = st->need;
    }
    if (s != NETRUN_OK) {
        ql_destroy(ctx, st);
        return s;
    }
    *state = st;
    return NETRUN_OK;
}

static ql_epi ql_epi_of(const ql_state *st, const netrun_kernel_args *args) {
    ql_epi e;
    memset(&e, 0, sizeof e);
    if (st->dw)
        e.bias = args->n_inputs > 8 && args->inputs[8].rank >= 0 && args->inputs[8].data
                     ? (const int32_t *)args->inputs[8].data
                     : NULL;
    else
        e.bias = st->bias_eff;
    e.mult = st->mult;
    e.OHW = st->OH * st->OW, e.OC = st->OC;
    e.yzp = st->yzp, e.lo = st->lo, e.hi = st->hi;
    e.y8 = st->yt == NETRUN_DTYPE_INT8;
    e.dst_nhwc = st->dst_nhwc || e.OHW == 1;
    e.y = args->outputs[0].data;
    if (st->res) {
        e.res = 1;
        e.z = args->inputs[9].data;
        e.z8 = args->inputs[9].dtype == NETRUN_DTYPE_INT8;
        e.qzp = st->qzp, e.zz = st->zz, e.zy = st->zy, e.ra = st->ra, e.rb = st->rb, e.rlo = st->rlo, e.rhi = st->rhi;
    }
    return e;
}

static netrun_status ql_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    ql_state *st = (ql_state *)state;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    if (cuda_count(Y) == 0) return NETRUN_OK;
    int64_t N, H, W, OH, OW;
    if (st->matmul) {
        if (X->rank < 2 || X->dims[X->rank - 1] != st->C || Y->dims[Y->rank - 1] != st->OC)
            return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: A's last dim %lld, B has %lld rows", st->what,
                                    (long long)X->dims[X->rank - 1], (long long)st->C);
        N = cuda_count(X) / st->C, H = W = OH = OW = 1;
    } else {
        if (X->rank != 4 || Y->rank != 4 || X->dims[1] != st->C || Y->dims[1] != st->OC)
            return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: X or Y of another channel count than W", st->what);
        N = X->dims[0], H = X->dims[2], W = X->dims[3], OH = Y->dims[2], OW = Y->dims[3];
    }
    netrun_status s;
    if (!st->planned || N != st->N || H != st->H || W != st->W || OH != st->OH || OW != st->OW)
        if ((s = ql_plan(ctx, st, N, H, W, OH, OW)) != NETRUN_OK) return s;
    ql_epi e = ql_epi_of(st, args);
    if (st->dw) {
        ql_dw d = {(const uint8_t *)X->data, st->w, N, st->C, H, W, OH, OW, st->s[0], st->s[1], st->d[0], st->d[1],
                   st->pb[0], st->pb[1], (int)st->KH, (int)st->KW, st->xt == NETRUN_DTYPE_INT8, st->src_nhwc, st->zx_raw};
        int64_t n = N * st->C * OH * OW;
        ql_dw_k<<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(d, e);
        return cuda_check_launch("QLinearConv depthwise");
    }
    if (st->ig_now) {
        ig_args a;
        a.x = (const int8_t *)X->data;
        a.w = st->w;
        a.rows = N * OH * OW;
        a.H = (int)H, a.W = (int)W, a.C = (int)st->C, a.OH = (int)OH, a.OW = (int)OW, a.OCp = (int)st->OCp;
        a.K = (int)st->K, a.Kp = (int)st->Kp, a.KW = (int)st->KW;
        a.sh = (int)st->s[0], a.sw = (int)st->s[1], a.dh = (int)st->d[0], a.dw = (int)st->d[1];
        a.ph = (int)st->pb[0], a.pw = (int)st->pb[1];
        a.zx4 = (uint32_t)(uint8_t)st->zx * 0x01010101u;
        a.ohw = make_fdiv((uint32_t)(OH * OW));
        a.ow = make_fdiv((uint32_t)OW);
        a.c = make_fdiv((uint32_t)st->C);
        a.kw = make_fdiv((uint32_t)st->KW);
        if (a.rows >= INT32_MAX || N * H * W * st->C >= ((int64_t)1 << 40))
            return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "%s: %lld output pixels", st->what, (long long)a.rows);
        dim3 grid((unsigned)((a.rows + IG_BM - 1) / IG_BM), (unsigned)((st->OCp + IG_BN - 1) / IG_BN));
        ql_igemm_k<<<grid, 256, IG_STAGES * IG_STAGE_BYTES, ctx->stream>>>(a, e);
        return cuda_check_launch("QLinearConv implicit GEMM");
    }
    char *ws = (char *)(args->workspace_size >= st->need ? cuda_workspace_address(args->workspace) : NULL);
    if (!ws && st->need) {
        void *buf = st->scratch;
        size_t off[4];
        s = cuda_scratch_parts(ctx, &buf, &st->scratch_cap, st->part, 4, off, 0.0, st->what);
        st->scratch = buf;
        if (s != NETRUN_OK) return s;
        ws = (char *)st->scratch;
    }
    int64_t ohw = OH * OW;
    if (ohw * st->Kp > INT32_MAX || ohw * st->OCp > INT32_MAX || H * W * st->C > INT32_MAX)
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "%s: one image's patches exceed 2^31 bytes", st->what);
    for (int64_t n0 = 0; n0 < N; n0 += st->ipc) {
        int64_t imgs = N - n0 < st->ipc ? N - n0 : st->ipc, rows = imgs * ohw;
        const int8_t *B;
        if (st->direct) {
            B = (const int8_t *)X->data + n0 * ohw * st->C;
        } else {
            ql_cols c = {(const uint8_t *)X->data, (int8_t *)(ws + st->off[0]), n0, st->C, H, W, OH, OW, st->K, st->Kp,
                         st->s[0], st->s[1], st->d[0], st->d[1], st->pb[0], st->pb[1], (int)st->KW,
                         st->src_nhwc || (H == 1 && W == 1), st->xt == NETRUN_DTYPE_UINT8, (uint32_t)(uint8_t)st->zx};
            if (st->part[3]) { /* NCHW X: this chunk's images channels last first */
                uint32_t n = (uint32_t)(imgs * H * W * st->C);
                ql_to_nhwc_k<<<cuda_blocks32(n, CUDA_THREADS), CUDA_THREADS, 0, ctx->stream>>>(
                    (const uint8_t *)X->data, (uint8_t *)(ws + st->off[3]), n0, n, make_fdiv((uint32_t)st->C),
                    make_fdiv((uint32_t)(H * W)));
                if ((s = cuda_check_launch("QLinear channels last")) != NETRUN_OK) return s;
                c.x = (const uint8_t *)(ws + st->off[3]);
                c.n0 = 0;
                c.nhwc = 1;
            }
            ql_divs dv;
            dv.c16 = make_fdiv((uint32_t)(st->C / 16));
            dv.item = make_fdiv((uint32_t)(st->KH * st->KW * (st->C / 16)));
            dv.ohw = make_fdiv((uint32_t)ohw);
            dv.ow = make_fdiv((uint32_t)OW);
            dv.kw = make_fdiv((uint32_t)st->KW);
            dv.c = make_fdiv((uint32_t)st->C);
            dv.kp = make_fdiv((uint32_t)st->Kp);
            if (c.nhwc && st->C % 16 == 0) {
                uint32_t n = (uint32_t)(rows * st->KH * st->KW * (st->C / 16));
                ql_im2col16_k<<<cuda_blocks32(n, CUDA_THREADS), CUDA_THREADS, 0, ctx->stream>>>(c, dv, n);
            } else {
                uint32_t n = (uint32_t)(rows * st->Kp);
                ql_im2col_k<<<cuda_blocks32(n, CUDA_THREADS), CUDA_THREADS, 0, ctx->stream>>>(c, dv, n);
            }
            if ((s = cuda_check_launch("QLinear patches")) != NETRUN_OK) return s;
            B = c.cols;
        }
        cuda_lt_gemm *lt = imgs == st->ipc ? st->lt_full : st->lt_tail;
        if (st->lt8) { /* int8 Y from cuBLASLt's epilogue, then the uint8 move / residual Add in place */
            int8_t *yc = (int8_t *)Y->data + n0 * ohw * st->OC;
            if ((s = cuda_lt_gemm_run_scaled(ctx, lt, st->w, B, st->beta_f, st->alpha, st->alpha_f, yc, ws + st->off[2])) != NETRUN_OK)
                return s;
            int q_u8 = st->qt == NETRUN_DTYPE_UINT8;
            if (q_u8 || st->res || st->yt != st->qt) {
                uint32_t n4 = (uint32_t)(rows * st->OC / 4); /* OC % 4 == 0 on this path */
                ql_post4_k<<<cuda_blocks32(n4, CUDA_THREADS), CUDA_THREADS, 0, ctx->stream>>>(e, n0 * ohw * st->OC, n4, q_u8);
                if ((s = cuda_check_launch("QLinear residual")) != NETRUN_OK) return s;
            }
            continue;
        }
        int32_t *acc = (int32_t *)(ws + st->off[1]);
        if (lt) {
            s = cuda_lt_gemm_run(ctx, lt, st->w, B, NULL, NULL, acc, ws + st->off[2]);
        } else {
            dim3 grid((unsigned)((st->OCp + QL_TILE - 1) / QL_TILE), (unsigned)((rows + QL_TILE - 1) / QL_TILE));
            ql_gemm_dp4a_k<<<grid, dim3(QL_TILE, QL_TILE), 0, ctx->stream>>>(B, st->w, acc, rows, st->OCp, st->Kp);
            s = cuda_check_launch("QLinear dp4a GEMM");
        }
        if (s != NETRUN_OK) return s;
        e.acc = acc;
        e.ld = st->OCp;
        e.m0 = n0 * ohw;
        if (e.dst_nhwc && st->OC % 4 == 0) {
            uint32_t n = (uint32_t)(rows * (st->OC / 4));
            ql_epilogue4_k<<<cuda_blocks32(n, CUDA_THREADS), CUDA_THREADS, 0, ctx->stream>>>(e, n, make_fdiv((uint32_t)(st->OC / 4)));
        } else if (!e.dst_nhwc && ohw % 16 == 0 && rows / 16 * st->OC < UINT32_MAX && ((uintptr_t)Y->data & 15) == 0 &&
                   (!e.res || ((uintptr_t)e.z & 15) == 0)) {
            uint32_t n = (uint32_t)(rows / 16 * st->OC);
            ql_epilogue_nchw16_k<<<cuda_blocks32(n, CUDA_THREADS), CUDA_THREADS, 0, ctx->stream>>>(
                e, n, make_fdiv((uint32_t)st->OC), make_fdiv((uint32_t)(ohw / 16)));
        } else {
            ql_epilogue_k<<<cuda_blocks(rows * st->OC), CUDA_THREADS, 0, ctx->stream>>>(e, rows);
        }
        if ((s = cuda_check_launch("QLinear epilogue")) != NETRUN_OK) return s;
    }
    return NETRUN_OK;
}

extern "C" void cuda_qlinear_describe(void *state, char *buf, size_t size) {
    const ql_state *st = (const ql_state *)state;
    if (!st) return;
    if (st->dw) {
        snprintf(buf, size, "int8 depthwise (direct)%s%s%s", st->res ? " + residual" : "", st->src_nhwc ? " (NHWC in)" : "",
                 st->dst_nhwc ? " (NHWC out)" : "");
        return;
    }
    if (st->ig_now) {
        snprintf(buf, size, "int8 implicit GEMM (mma.sync, patches in place) %lldx%lld%s (NHWC in/out)", (long long)st->OC,
                 (long long)st->K, st->res ? " + residual" : "");
        return;
    }
    snprintf(buf, size, "int8 %s GEMM %lldx%lld%s%s%s%s", st->lt8 ? "cuBLASLt (int8 out)" : st->lt_full ? "cuBLASLt" : st->planned ? "dp4a" : "",
             (long long)st->OC, (long long)st->K, st->direct ? "" : " (patches)", st->res ? " + residual" : "",
             st->src_nhwc && !st->matmul ? " (NHWC in)" : "", st->dst_nhwc && !st->matmul ? " (NHWC out)" : "");
}

extern "C" const cuda_op cuda_ops_qlinear[] = {
    {"QLinearConv", QL_INT8_MASK,
     "2-D, group 1 or depthwise; constant scales and zero points, symmetric weights (per tensor or channel); "
     "channels-last in/out and the residual form of the QDQ pass: int8 GEMM on cuBLASLt (Tensor Cores)",
     ql_supports, ql_create, ql_run, ql_destroy},
    {"QLinearMatMul", QL_INT8_MASK,
     "constant 2-D B, symmetric (zero point 0, or 128 for uint8; scales per tensor or column); constant scalar "
     "a/y scales and zero points: int8 GEMM on cuBLASLt",
     ql_supports, ql_create, ql_run, ql_destroy},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
