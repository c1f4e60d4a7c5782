/* Device element conversions shared by cast.cu and quantize.cu (and vision.cu's generic loads). Each one is a
 * copy of the CPU backend's (backends/cpu/cast.c, cpu_internal.h) so that CPU and CUDA agree bit for bit:
 * half and bfloat16 with the CPU's NaN payloads, float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ) with saturate,
 * float4e2m1, float8e8m0 with its round modes, and the x86-like float -> integer rules.
 * Sub-byte types (int4/uint4, int2/uint2, float4e2m1) are stored unpacked, one element per byte, the signed
 * ones sign-extended (include/netrun.h). */
#ifndef CAST_DEV_CUH
#define CAST_DEV_CUH

#include "cuda_kernels.cuh"

#define CAST_F8_MASK                                                                                          \
    (CUDA_DT(FLOAT8E4M3FN) | CUDA_DT(FLOAT8E4M3FNUZ) | CUDA_DT(FLOAT8E5M2) | CUDA_DT(FLOAT8E5M2FNUZ))
#define CAST_SUBBYTE_MASK (CUDA_DT(INT4) | CUDA_DT(UINT4) | CUDA_DT(INT2) | CUDA_DT(UINT2) | CUDA_DT(FLOAT4E2M1))
/* The 23 element types Cast converts between (the CPU's matrix: no string, no complex). */
#define CAST_ALL_DTYPES (CUDA_ALL_DTYPES | CAST_F8_MASK | CAST_SUBBYTE_MASK | CUDA_DT(FLOAT8E8M0))

/* Bytes per stored element of every type above (sub-byte types take one byte each); 0 for others. */
static inline size_t cast_esize(netrun_dtype t) {
    if (!((CAST_ALL_DTYPES >> t) & 1)) return 0;
    size_t es = cuda_esize(t);
    return es ? es : 1;
}

/* ---- IEEE half, bfloat16 ---- */
__device__ __forceinline__ float dev_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, bits;
    if (exp == 0) {
        if (mant == 0) bits = sign;
        else { /* subnormal */
            exp = 127 - 15 + 1;
            while (!(mant & 0x400u)) { mant <<= 1; exp--; }
            mant &= 0x3ffu;
            bits = sign | (exp << 23) | (mant << 13);
        }
    } else if (exp == 31) bits = sign | 0x7f800000u | (mant << 13);
    else bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    return __uint_as_float(bits);
}

__device__ __forceinline__ uint16_t dev_float_to_half(float f) {
    uint32_t x = __float_as_uint(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* overflow to inf */
    if (absx < 0x38800000u) /* subnormal or zero: round(|f| * 2^24) units of 2^-24 (exact product) */
        return (uint16_t)(sign | (uint32_t)rintf(__uint_as_float(absx) * 16777216.0f));
    uint32_t r = ((absx - 0x38000000u) >> 13);
    uint32_t rem = absx & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) r++;
    return (uint16_t)(sign | r);
}

__device__ __forceinline__ float dev_bf16_to_float(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }

__device__ __forceinline__ uint16_t dev_float_to_bf16(float f) {
    uint32_t x = __float_as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* ---- float8: FN has no infinity, NaN is S.1111.111; FNUZ has no infinity, no -0, NaN is 0x80 ---- */
struct dev_f8_format {
    int mbits, bias;
    uint32_t max_code; /* largest finite magnitude */
    int fnuz;
};

__device__ __forceinline__ dev_f8_format dev_f8_fmt(int t) {
    dev_f8_format F;
    switch (t) {
    case NETRUN_DTYPE_FLOAT8E4M3FN: F.mbits = 3; F.bias = 7; F.max_code = 0x7e; F.fnuz = 0; break;
    case NETRUN_DTYPE_FLOAT8E4M3FNUZ: F.mbits = 3; F.bias = 8; F.max_code = 0x7f; F.fnuz = 1; break;
    case NETRUN_DTYPE_FLOAT8E5M2: F.mbits = 2; F.bias = 15; F.max_code = 0x7b; F.fnuz = 0; break;
    default: F.mbits = 2; F.bias = 16; F.max_code = 0x7f; F.fnuz = 1; break; /* E5M2FNUZ */
    }
    return F;
}

__device__ __forceinline__ float dev_f8_to_float(uint8_t b, int t) {
    dev_f8_format F = dev_f8_fmt(t);
    int neg = b >> 7, mag = b & 0x7f, e = mag >> F.mbits, m = mag & ((1 << F.mbits) - 1);
    if (F.fnuz) {
        if (b == 0x80) return __uint_as_float(0x7fc00000u);
    } else if (t == NETRUN_DTYPE_FLOAT8E4M3FN) {
        if (mag == 0x7f) return __uint_as_float(neg ? 0xffc00000u : 0x7fc00000u);
    } else if (e == 31) {
        if (m) return __uint_as_float(neg ? 0xffc00000u : 0x7fc00000u);
        return neg ? -INFINITY : INFINITY;
    }
    float v = e ? ldexpf((float)((1 << F.mbits) | m), e - F.bias - F.mbits) : ldexpf((float)m, 1 - F.bias - F.mbits);
    return neg ? -v : v;
}

/* Round to nearest even; out of range gives the largest finite value when saturating, else NaN (Inf for
 * E5M2), as the ONNX Cast table says. */
__device__ __forceinline__ uint8_t dev_float_to_f8(float f, int t, int saturate) {
    dev_f8_format F = dev_f8_fmt(t);
    uint32_t x = __float_as_uint(f);
    uint8_t sign = (uint8_t)((x >> 24) & 0x80u);
    uint32_t ax = x & 0x7fffffffu;
    uint8_t nan = F.fnuz ? 0x80 : (uint8_t)(sign | (t == NETRUN_DTYPE_FLOAT8E5M2 ? 0x7e : 0x7f));
    uint8_t overflow = saturate ? (uint8_t)(sign | F.max_code) : t == NETRUN_DTYPE_FLOAT8E5M2 ? (uint8_t)(sign | 0x7c) : nan;
    if (ax > 0x7f800000u) return nan;
    if (ax == 0x7f800000u) return overflow;
    int e = (int)(ax >> 23) - 127;
    uint32_t code;
    if (e < 1 - F.bias) { /* float8 subnormal (or zero): count units of 2^(1 - bias - mbits) */
        code = (uint32_t)rintf(ldexpf(__uint_as_float(ax), F.bias - 1 + F.mbits));
    } else {
        int shift = 23 - F.mbits;
        uint32_t mant = ax & 0x7fffffu, r = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        if (r >> F.mbits) { r = 0; e++; }
        int be = e + F.bias;
        if (be > 31) return overflow;
        code = ((uint32_t)be << F.mbits) | r;
    }
    if (code > F.max_code) return overflow;
    if (code == 0 && F.fnuz) return 0; /* no negative zero */
    return (uint8_t)(sign | code);
}

/* ---- float4e2m1: sign bit 3, 2 exponent bits (bias 1), 1 mantissa bit; no infinity, no NaN ---- */
__device__ __forceinline__ float dev_f4_value(int k) {
    /* 0, 0.5, 1, 1.5, 2, 3, 4, 6 */
    return k < 4 ? 0.5f * (float)k : (float)(1 << (k / 2 - 1)) * (k & 1 ? 1.5f : 1.0f);
}

__device__ __forceinline__ float dev_f4_to_float(uint8_t b) {
    float v = dev_f4_value(b & 7);
    return (b & 8) ? -v : v;
}

/* Round to nearest even, saturating to +-6 (infinities too); NaN becomes a zero with the opposite sign bit,
 * as ml_dtypes (the ONNX reference) gives. */
__device__ __forceinline__ uint8_t dev_float_to_f4(float f) {
    uint32_t x = __float_as_uint(f);
    uint8_t sign = (uint8_t)((x >> 28) & 8u);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint8_t)(sign ^ 8u);
    float a = fabsf(f);
    if (a >= 6.0f) return (uint8_t)(sign | 7u);
    int k = 0;
    while (k < 6 && a >= dev_f4_value(k + 1)) k++;
    float mid = 0.5f * (dev_f4_value(k) + dev_f4_value(k + 1));
    if (a > mid || (a == mid && (k & 1))) k++;
    return (uint8_t)(sign | (uint8_t)k);
}

/* ---- float8e8m0: an unsigned power of two 2^(code - 127); 0xff is NaN ---- */
__device__ __forceinline__ float dev_e8m0_to_float(uint8_t b) {
    return b == 0xff ? __uint_as_float(0x7fc00000u) : ldexpf(1.0f, (int)b - 127);
}

/* The float's exponent field rounded by its mantissa (onnx.numpy_helper.to_float8e8m0); NaN and infinity give
 * 0xff. With saturate, rounding never carries past 0xfe; without, it carries into 0xff (NaN). */
__device__ __forceinline__ uint8_t dev_float_to_e8m0(float f, int saturate, int round_mode) {
    uint32_t x = __float_as_uint(f);
    unsigned e = (x >> 23) & 0xffu;
    if (e == 0xffu) return 0xff;
    int up = 0;
    if (round_mode == NETRUN_CAST_ROUND_UP) {
        up = (x & 0x7fffffu) != 0;
    } else if (round_mode == NETRUN_CAST_ROUND_NEAREST) {
        int g = (x & 0x400000u) != 0, r = (x & 0x200000u) != 0, st = (x & 0x1fffffu) != 0, lsb = e > 0;
        up = g && (r || st || lsb);
    }
    if (up && !(saturate && e == 0xfeu)) e++;
    return (uint8_t)e;
}

/* ---- float -> integer as x86 (cvttsd2si), which the CPU backend and onnxruntime follow: NaN and out of range
 * give the intermediate's minimum ---- */
__device__ __forceinline__ int32_t dev_f_to_i32(double v) {
    return v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN;
}
__device__ __forceinline__ int64_t dev_f_to_i64(double v) {
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
}
__device__ __forceinline__ uint64_t dev_f_to_u64(double v) {
    if (v >= 9223372036854775808.0 && v < 18446744073709551616.0) return (uint64_t)v;
    return (uint64_t)dev_f_to_i64(v);
}

/* Element i of a numeric array as double (integers exactly where they fit; int64 as a C cast rounds). */
__device__ __forceinline__ double dev_load_f(const void *p, int t, int64_t i) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: return ((const float *)p)[i];
    case NETRUN_DTYPE_DOUBLE: return ((const double *)p)[i];
    case NETRUN_DTYPE_FLOAT16: return dev_half_to_float(((const uint16_t *)p)[i]);
    case NETRUN_DTYPE_BFLOAT16: return dev_bf16_to_float(((const uint16_t *)p)[i]);
    case NETRUN_DTYPE_INT8: case NETRUN_DTYPE_INT4: case NETRUN_DTYPE_INT2: return ((const int8_t *)p)[i];
    case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_UINT4: case NETRUN_DTYPE_UINT2: case NETRUN_DTYPE_BOOL:
        return ((const uint8_t *)p)[i];
    case NETRUN_DTYPE_FLOAT4E2M1: return dev_f4_to_float(((const uint8_t *)p)[i]);
    case NETRUN_DTYPE_FLOAT8E8M0: return dev_e8m0_to_float(((const uint8_t *)p)[i]);
    case NETRUN_DTYPE_INT16: return ((const int16_t *)p)[i];
    case NETRUN_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case NETRUN_DTYPE_INT32: return ((const int32_t *)p)[i];
    case NETRUN_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    case NETRUN_DTYPE_INT64: return (double)((const int64_t *)p)[i];
    case NETRUN_DTYPE_UINT64: return (double)((const uint64_t *)p)[i];
    case NETRUN_DTYPE_FLOAT8E4M3FN: case NETRUN_DTYPE_FLOAT8E4M3FNUZ: case NETRUN_DTYPE_FLOAT8E5M2:
    case NETRUN_DTYPE_FLOAT8E5M2FNUZ: return dev_f8_to_float(((const uint8_t *)p)[i], t);
    default: return 0;
    }
}

/* Store v into a float-typed array (float, double, float16, bfloat16), as cpu_store_f. */
__device__ __forceinline__ void dev_store_f(void *p, int t, int64_t i, double v) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case NETRUN_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case NETRUN_DTYPE_FLOAT16: ((uint16_t *)p)[i] = dev_float_to_half((float)v); break;
    case NETRUN_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = dev_float_to_bf16((float)v); break;
    default: break;
    }
}

/* Round a value to the given float type (the precision an operation is defined in). */
__device__ __forceinline__ double dev_round_to(double v, int t) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: return (float)v;
    case NETRUN_DTYPE_FLOAT16: return dev_half_to_float(dev_float_to_half((float)v));
    case NETRUN_DTYPE_BFLOAT16: return dev_bf16_to_float(dev_float_to_bf16((float)v));
    default: return v;
    }
}

#endif
