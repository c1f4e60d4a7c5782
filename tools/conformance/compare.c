/* Output comparison with the tolerances of the ONNX backend tests (onnx/backend/test/runner):
 *   float32/float64 (and complex parts): |got - want| <= atol + rtol * |want|, rtol 1e-3, atol 1e-7;
 *   float16/bfloat16: rtol 1e-2, atol 1e-3 (their 8-11 bit mantissas cannot meet the float32 bound);
 *   NaN matches NaN, an infinity matches the same infinity; integers, bools and 8-bit floats are exact. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "conformance.h"

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1F, man = h & 0x3FF, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400));
            bits = sign | (uint32_t)(127 - 15 - e) << 23 | (man & 0x3FF) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7F800000u | man << 13;
    } else {
        bits = sign | (exp + 127 - 15) << 23 | man << 13;
    }
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

static double float_at(netrun_dtype t, const void *data, size_t i)
{
    const unsigned char *p = data;
    switch (t) {
    case NETRUN_DTYPE_FLOAT: case NETRUN_DTYPE_COMPLEX64: {
        float v;
        memcpy(&v, p + i * 4, 4);
        return v;
    }
    case NETRUN_DTYPE_DOUBLE: case NETRUN_DTYPE_COMPLEX128: {
        double v;
        memcpy(&v, p + i * 8, 8);
        return v;
    }
    case NETRUN_DTYPE_FLOAT16: {
        uint16_t h;
        memcpy(&h, p + i * 2, 2);
        return half_to_float(h);
    }
    case NETRUN_DTYPE_BFLOAT16: {
        uint16_t h;
        memcpy(&h, p + i * 2, 2);
        uint32_t bits = (uint32_t)h << 16;
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    default: return 0;
    }
}

/* Signed integers widened to int64, unsigned to uint64 (stored in an int64's bits). */
static int64_t int_at(netrun_dtype t, const void *data, size_t i)
{
    const unsigned char *p = data;
    switch (t) {
    case NETRUN_DTYPE_INT8: return (int8_t)p[i];
    case NETRUN_DTYPE_UINT8: return p[i];
    case NETRUN_DTYPE_BOOL: return p[i] != 0;
    case NETRUN_DTYPE_INT16: { int16_t v; memcpy(&v, p + i * 2, 2); return v; }
    case NETRUN_DTYPE_UINT16: { uint16_t v; memcpy(&v, p + i * 2, 2); return v; }
    case NETRUN_DTYPE_INT32: { int32_t v; memcpy(&v, p + i * 4, 4); return v; }
    case NETRUN_DTYPE_UINT32: { uint32_t v; memcpy(&v, p + i * 4, 4); return v; }
    case NETRUN_DTYPE_INT64: { int64_t v; memcpy(&v, p + i * 8, 8); return v; }
    case NETRUN_DTYPE_UINT64: { uint64_t v; memcpy(&v, p + i * 8, 8); return (int64_t)v; }
    default: return 0;
    }
}

static int is_float(netrun_dtype t)
{
    return t == NETRUN_DTYPE_FLOAT || t == NETRUN_DTYPE_DOUBLE || t == NETRUN_DTYPE_FLOAT16 ||
           t == NETRUN_DTYPE_BFLOAT16 || t == NETRUN_DTYPE_COMPLEX64 || t == NETRUN_DTYPE_COMPLEX128;
}

static int is_int(netrun_dtype t)
{
    switch (t) {
    case NETRUN_DTYPE_INT8: case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_BOOL: case NETRUN_DTYPE_INT16:
    case NETRUN_DTYPE_UINT16: case NETRUN_DTYPE_INT32: case NETRUN_DTYPE_UINT32: case NETRUN_DTYPE_INT64:
    case NETRUN_DTYPE_UINT64: return 1;
    default: return 0;
    }
}

static void format_shape(char *buf, size_t size, int rank, const int64_t *dims)
{
    size_t n = 0;
    n += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < rank && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%" PRId64, i ? ", " : "", dims[i]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
}

int conf_compare(const char *name, const netrun_tensor_view *got, const netrun_tensor_view *want, char *why,
                 size_t why_size)
{
    if (got->dtype != want->dtype) {
        snprintf(why, why_size, "output '%s': dtype %s, expected %s", name, netrun_dtype_name(got->dtype),
                 netrun_dtype_name(want->dtype));
        return 0;
    }
    int same_shape = got->rank == want->rank;
    for (int i = 0; same_shape && i < got->rank; i++)
        same_shape = got->dims[i] == want->dims[i];
    if (!same_shape) {
        char g[160], w[160];
        format_shape(g, sizeof(g), got->rank, got->dims);
        format_shape(w, sizeof(w), want->rank, want->dims);
        snprintf(why, why_size, "output '%s': shape %s, expected %s", name, g, w);
        return 0;
    }
    if (got->nbytes != want->nbytes) {
        snprintf(why, why_size, "output '%s': %zu bytes, expected %zu", name, got->nbytes, want->nbytes);
        return 0;
    }
    netrun_dtype t = want->dtype;
    size_t esize = netrun_dtype_size(t);
    if (esize == 0 || !is_float(t)) {
        /* Exact types. Sub-byte and unknown-size types are compared byte by byte. */
        size_t unit = esize ? esize : 1, n = want->nbytes / unit, bad = 0, first = 0;
        for (size_t i = 0; i < n; i++) {
            int differ = is_int(t) ? int_at(t, got->data, i) != int_at(t, want->data, i)
                                   : memcmp((const char *)got->data + i * unit, (const char *)want->data + i * unit,
                                            unit) != 0;
            if (differ && bad++ == 0)
                first = i;
        }
        if (bad == 0)
            return 1;
        if (is_int(t) && t == NETRUN_DTYPE_UINT64)
            snprintf(why, why_size, "output '%s': %zu of %zu elements differ; first at flat index %zu: got %" PRIu64
                     ", expected %" PRIu64, name, bad, n, first, (uint64_t)int_at(t, got->data, first),
                     (uint64_t)int_at(t, want->data, first));
        else if (is_int(t))
            snprintf(why, why_size, "output '%s': %zu of %zu elements differ; first at flat index %zu: got %" PRId64
                     ", expected %" PRId64, name, bad, n, first, int_at(t, got->data, first),
                     int_at(t, want->data, first));
        else
            snprintf(why, why_size, "output '%s' (%s): %zu of %zu %s differ; first at flat index %zu", name,
                     netrun_dtype_name(t), bad, n, esize ? "elements" : "bytes", first);
        return 0;
    }
    int half = t == NETRUN_DTYPE_FLOAT16 || t == NETRUN_DTYPE_BFLOAT16;
    double rtol = half ? 1e-2 : 1e-3, atol = half ? 1e-3 : 1e-7;
    size_t n = want->nbytes / esize;
    if (t == NETRUN_DTYPE_COMPLEX64 || t == NETRUN_DTYPE_COMPLEX128)
        n *= 2; /* real and imaginary parts compared as floats */
    size_t bad = 0, worst = 0;
    double worst_ratio = -1, worst_err = 0;
    for (size_t i = 0; i < n; i++) {
        double g = float_at(t, got->data, i), w = float_at(t, want->data, i), err, ratio;
        if (isnan(w) || isnan(g)) {
            if (isnan(w) && isnan(g))
                continue;
            err = ratio = INFINITY;
        } else if (isinf(w) || isinf(g)) {
            if (g == w)
                continue;
            err = ratio = INFINITY;
        } else {
            err = fabs(g - w);
            double bound = atol + rtol * fabs(w);
            if (err <= bound)
                continue;
            ratio = err / bound;
        }
        bad++;
        if (ratio > worst_ratio) {
            worst_ratio = ratio;
            worst = i;
            worst_err = err;
        }
    }
    if (bad == 0)
        return 1;
    snprintf(why, why_size, "output '%s': %zu of %zu values outside rtol %g atol %g; worst at flat index %zu: "
             "got %.9g, expected %.9g (abs err %.3g)", name, bad, n, rtol, atol, worst,
             float_at(t, got->data, worst), float_at(t, want->data, worst), worst_err);
    return 0;
}
