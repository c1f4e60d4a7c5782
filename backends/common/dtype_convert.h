/* Element conversions shared by the CPU plugin (C) and the CUDA plugin (host and device code), so that Cast,
 * QuantizeLinear and the float16 paths agree bit for bit on both: IEEE half and bfloat16 with their NaN
 * payloads, float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ) with saturate, float4e2m1, float8e8m0 with its round
 * modes, the x86-like float -> integer rules, and the quantization helpers. Header-only (plugins link no common
 * library). Sub-byte types (int4/uint4, int2/uint2, float4e2m1) are stored one element per byte, the signed ones
 * sign-extended (include/netrun.h). */
#ifndef NETRUN_DTYPE_CONVERT_H
#define NETRUN_DTYPE_CONVERT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "netrun.h"
#include "netrun_ops.h"

#if defined(__CUDACC__)
#define NR_CONV static __host__ __device__ __forceinline__
#else
#define NR_CONV static inline
#endif

NR_CONV float nr_f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

NR_CONV uint32_t nr_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* ---- IEEE half <-> float (round to nearest even; NaN keeps a quiet payload) ---- */
NR_CONV float nr_half_to_float(uint16_t h) {
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
    return nr_f32_from_bits(bits);
}

NR_CONV uint16_t nr_float_to_half(float f) {
    uint32_t x = nr_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* overflow to inf */
    if (absx < 0x38800000u) /* subnormal or zero: round(|f| * 2^24) units of 2^-24 (the product is exact) */
        return (uint16_t)(sign | (uint32_t)rintf(nr_f32_from_bits(absx) * 16777216.0f));
    uint32_t r = ((absx - 0x38000000u) >> 13);
    uint32_t rem = absx & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) r++;
    return (uint16_t)(sign | r);
}

/* ---- bfloat16 <-> float ---- */
NR_CONV float nr_bf16_to_float(uint16_t h) { return nr_f32_from_bits((uint32_t)h << 16); }

NR_CONV uint16_t nr_float_to_bf16(float f) {
    uint32_t x = nr_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* ---- float8: FN has no infinity, NaN is S.1111.111; FNUZ has no infinity, no -0, NaN is 0x80; E5M2 is
 * IEEE-like ---- */
typedef struct nr_f8_format {
    int mbits, bias;
    uint32_t max_code; /* largest finite magnitude */
    int fnuz;
} nr_f8_format;

NR_CONV nr_f8_format nr_f8_fmt(int t) {
    nr_f8_format F;
    switch (t) {
    case NETRUN_DTYPE_FLOAT8E4M3FN: F.mbits = 3; F.bias = 7; F.max_code = 0x7e; F.fnuz = 0; break;
    case NETRUN_DTYPE_FLOAT8E4M3FNUZ: F.mbits = 3; F.bias = 8; F.max_code = 0x7f; F.fnuz = 1; break;
    case NETRUN_DTYPE_FLOAT8E5M2: F.mbits = 2; F.bias = 15; F.max_code = 0x7b; F.fnuz = 0; break;
    default: F.mbits = 2; F.bias = 16; F.max_code = 0x7f; F.fnuz = 1; break; /* E5M2FNUZ */
    }
    return F;
}

NR_CONV float nr_f8_to_float(uint8_t b, int t) {
    nr_f8_format F = nr_f8_fmt(t);
    int neg = b >> 7, mag = b & 0x7f, e = mag >> F.mbits, m = mag & ((1 << F.mbits) - 1);
    if (F.fnuz) {
        if (b == 0x80) return nr_f32_from_bits(0x7fc00000u);
    } else if (t == NETRUN_DTYPE_FLOAT8E4M3FN) {
        if (mag == 0x7f) return nr_f32_from_bits(neg ? 0xffc00000u : 0x7fc00000u);
    } else if (e == 31) {
        if (m) return nr_f32_from_bits(neg ? 0xffc00000u : 0x7fc00000u);
        return nr_f32_from_bits(neg ? 0xff800000u : 0x7f800000u);
    }
    float v = e ? ldexpf((float)((1 << F.mbits) | m), e - F.bias - F.mbits) : ldexpf((float)m, 1 - F.bias - F.mbits);
    return neg ? -v : v;
}

/* Round to nearest even; out of range gives the largest finite value when saturating, else NaN (Inf for
 * E5M2), as the ONNX Cast table says. */
NR_CONV uint8_t nr_float_to_f8(float f, int t, int saturate) {
    nr_f8_format F = nr_f8_fmt(t);
    uint32_t x = nr_f32_bits(f);
    uint8_t sign = (uint8_t)((x >> 24) & 0x80u);
    uint32_t ax = x & 0x7fffffffu;
    uint8_t nan = F.fnuz ? 0x80 : (uint8_t)(sign | (t == NETRUN_DTYPE_FLOAT8E5M2 ? 0x7e : 0x7f));
    uint8_t overflow = saturate ? (uint8_t)(sign | F.max_code) : t == NETRUN_DTYPE_FLOAT8E5M2 ? (uint8_t)(sign | 0x7c) : nan;
    if (ax > 0x7f800000u) return nan;
    if (ax == 0x7f800000u) return overflow;
    int e = (int)(ax >> 23) - 127; /* unbiased exponent of the float (normal floats) */
    uint32_t code;
    if (e < 1 - F.bias) { /* float8 subnormal (or zero): count units of 2^(1 - bias - mbits); may reach the
                           * smallest normal, which is fine */
        code = (uint32_t)rintf(ldexpf(nr_f32_from_bits(ax), F.bias - 1 + F.mbits));
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
/* Magnitude of code k (0..7): 0, 0.5, 1, 1.5, 2, 3, 4, 6. */
NR_CONV float nr_f4_value(int k) { return k < 4 ? 0.5f * (float)k : (float)(1 << (k / 2 - 1)) * (k & 1 ? 1.5f : 1.0f); }

NR_CONV float nr_f4_to_float(uint8_t b) {
    float v = nr_f4_value(b & 7);
    return (b & 8) ? -v : v;
}

/* Round to nearest even, saturating to +-6 (infinities too); NaN has no code: it becomes a zero with the
 * opposite sign bit, as ml_dtypes (the ONNX reference) gives. */
NR_CONV uint8_t nr_float_to_f4(float f) {
    uint32_t x = nr_f32_bits(f);
    uint8_t sign = (uint8_t)((x >> 28) & 8u);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint8_t)(sign ^ 8u);
    float a = fabsf(f);
    if (a >= 6.0f) return (uint8_t)(sign | 7u);
    int k = 0;
    while (k < 6 && a >= nr_f4_value(k + 1)) k++;
    float mid = 0.5f * (nr_f4_value(k) + nr_f4_value(k + 1)); /* exact: all values are short binary fractions */
    if (a > mid || (a == mid && (k & 1))) k++;
    return (uint8_t)(sign | (uint8_t)k);
}

/* ---- float8e8m0: an unsigned power of two 2^(code - 127); 0xff is NaN ---- */
NR_CONV float nr_e8m0_to_float(uint8_t b) { return b == 0xff ? nr_f32_from_bits(0x7fc00000u) : ldexpf(1.0f, (int)b - 127); }

/* The float's exponent field, rounded by its mantissa as onnx.numpy_helper.to_float8e8m0 does (the sign is
 * ignored: negative inputs are undefined by the spec); NaN and infinity give 0xff. With saturate, rounding
 * never carries past the largest power (0xfe); without, it carries into 0xff (NaN). */
NR_CONV uint8_t nr_float_to_e8m0(float f, int saturate, int round_mode) {
    uint32_t x = nr_f32_bits(f);
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

/* ---- float -> integer defined for every input (C leaves NaN and out of range undefined). They follow
 * onnxruntime on x86-64 (cvttss2si): narrow targets convert through int32, wide ones through int64, and NaN /
 * out of range give that intermediate's minimum, then wrap to the target ---- */
NR_CONV int32_t nr_f_to_i32(double v) { return v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN; }
NR_CONV int64_t nr_f_to_i64(double v) {
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
}
NR_CONV uint64_t nr_f_to_u64(double v) {
    if (v >= 9223372036854775808.0 && v < 18446744073709551616.0) return (uint64_t)v;
    return (uint64_t)nr_f_to_i64(v);
}

/* ---- quantization helpers ---- */

/* Element i of any numeric array as double (integers exactly where they fit; 64-bit ones as a C cast rounds). */
NR_CONV double nr_load_as_double(const void *p, int t, int64_t i) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: return ((const float *)p)[i];
    case NETRUN_DTYPE_DOUBLE: return ((const double *)p)[i];
    case NETRUN_DTYPE_FLOAT16: return nr_half_to_float(((const uint16_t *)p)[i]);
    case NETRUN_DTYPE_BFLOAT16: return nr_bf16_to_float(((const uint16_t *)p)[i]);
    case NETRUN_DTYPE_INT8: case NETRUN_DTYPE_INT4: case NETRUN_DTYPE_INT2: return ((const int8_t *)p)[i];
    case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_UINT4: case NETRUN_DTYPE_UINT2: case NETRUN_DTYPE_BOOL:
        return ((const uint8_t *)p)[i];
    case NETRUN_DTYPE_FLOAT4E2M1: return nr_f4_to_float(((const uint8_t *)p)[i]);
    case NETRUN_DTYPE_FLOAT8E8M0: return nr_e8m0_to_float(((const uint8_t *)p)[i]);
    case NETRUN_DTYPE_INT16: return ((const int16_t *)p)[i];
    case NETRUN_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case NETRUN_DTYPE_INT32: return ((const int32_t *)p)[i];
    case NETRUN_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    case NETRUN_DTYPE_INT64: return (double)((const int64_t *)p)[i];
    case NETRUN_DTYPE_UINT64: return (double)((const uint64_t *)p)[i];
    case NETRUN_DTYPE_FLOAT8E4M3FN: case NETRUN_DTYPE_FLOAT8E4M3FNUZ: case NETRUN_DTYPE_FLOAT8E5M2:
    case NETRUN_DTYPE_FLOAT8E5M2FNUZ: return nr_f8_to_float(((const uint8_t *)p)[i], t);
    default: return 0;
    }
}

/* A value rounded to the given float type (the precision an operation is defined in). */
NR_CONV double nr_round_to(double v, int t) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: return (float)v;
    case NETRUN_DTYPE_FLOAT16: return nr_half_to_float(nr_float_to_half((float)v));
    case NETRUN_DTYPE_BFLOAT16: return nr_bf16_to_float(nr_float_to_bf16((float)v));
    default: return v;
    }
}

/* Range of an integer quantized type; 0 (and lo = hi = 0) for the others. */
NR_CONV int nr_int_range(int t, double *lo, double *hi) {
    switch (t) {
    case NETRUN_DTYPE_UINT8: *lo = 0; *hi = 255; return 1;
    case NETRUN_DTYPE_INT8: *lo = -128; *hi = 127; return 1;
    case NETRUN_DTYPE_UINT16: *lo = 0; *hi = 65535; return 1;
    case NETRUN_DTYPE_INT16: *lo = -32768; *hi = 32767; return 1;
    case NETRUN_DTYPE_UINT4: *lo = 0; *hi = 15; return 1;
    case NETRUN_DTYPE_INT4: *lo = -8; *hi = 7; return 1;
    case NETRUN_DTYPE_UINT2: *lo = 0; *hi = 3; return 1;
    case NETRUN_DTYPE_INT2: *lo = -2; *hi = 1; return 1;
    default: *lo = *hi = 0; return 0;
    }
}

/* Store an integer quantized value (already rounded and saturated) into element i of an int8/uint8/int16/uint16
 * or unpacked 4/2-bit array. */
NR_CONV void nr_store_qint(void *p, int t, int64_t i, double v) {
    switch (t) {
    case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_UINT4: case NETRUN_DTYPE_UINT2: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case NETRUN_DTYPE_INT8: case NETRUN_DTYPE_INT4: case NETRUN_DTYPE_INT2: ((int8_t *)p)[i] = (int8_t)v; break;
    case NETRUN_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case NETRUN_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    default: break;
    }
}

/* Index of element e's scale / zero point: x seen as [outer, dim, inner] along the quantization axis; blocked
 * mode has `blocks` scales of block_size elements each along that axis. */
NR_CONV int64_t nr_quant_param_index(int mode, int64_t e, int64_t inner, int64_t dim, int64_t blocks,
                                     int64_t block_size) {
    switch (mode) {
    case NETRUN_QUANT_PER_AXIS: return (e / inner) % dim;
    case NETRUN_QUANT_BLOCKED: {
        int64_t i = e % inner, a = (e / inner) % dim, o = e / (inner * dim);
        return (o * blocks + a / block_size) * inner + i;
    }
    default: return 0;
    }
}

/* Round half to even, then saturate to [lo, hi]; NaN gives lo (as the reference's int32 path does). */
NR_CONV double nr_sat_round(double v, double lo, double hi) {
    v = nearbyint(v);
    if (!(v >= lo)) return lo;
    return v > hi ? hi : v;
}

#endif
