/* CPU kernels: norm. Rows or planes are processed in fixed chunks loaded into double scratch on the stack,
 * so float, float16, bfloat16 and double share one code path without extra buffers; statistics are summed
 * in double. Work is split over rows / planes. */
/* gu_act_n's compare-and-select activations (gemm_util.h) vectorize only without trapping math: netrun never
 * enables FP traps. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <stdio.h>

#include "gemm_util.h"

#define CHUNK 256

static void load_chunk(netrun_dtype dt, const void *base, int64_t off, int64_t n, double *dst) {
    switch (dt) {
    case NETRUN_DTYPE_FLOAT: {
        const float *s = (const float *)base + off;
        for (int64_t i = 0; i < n; i++) dst[i] = s[i];
        break;
    }
    case NETRUN_DTYPE_DOUBLE: memcpy(dst, (const double *)base + off, (size_t)n * sizeof(double)); break;
    case NETRUN_DTYPE_FLOAT16: {
        const uint16_t *s = (const uint16_t *)base + off;
        for (int64_t i = 0; i < n; i++) dst[i] = cpu_half_to_float(s[i]);
        break;
    }
    default: {
        const uint16_t *s = (const uint16_t *)base + off;
        for (int64_t i = 0; i < n; i++) dst[i] = cpu_bf16_to_float(s[i]);
        break;
    }
    }
}

static void store_chunk(netrun_dtype dt, void *base, int64_t off, int64_t n, const double *src) {
    switch (dt) {
    case NETRUN_DTYPE_FLOAT: {
        float *d = (float *)base + off;
        for (int64_t i = 0; i < n; i++) d[i] = (float)src[i];
        break;
    }
    case NETRUN_DTYPE_DOUBLE: memcpy((double *)base + off, src, (size_t)n * sizeof(double)); break;
    case NETRUN_DTYPE_FLOAT16: {
        uint16_t *d = (uint16_t *)base + off;
        for (int64_t i = 0; i < n; i++) d[i] = cpu_float_to_half((float)src[i]);
        break;
    }
    default: {
        uint16_t *d = (uint16_t *)base + off;
        for (int64_t i = 0; i < n; i++) d[i] = cpu_float_to_bf16((float)src[i]);
        break;
    }
    }
}

static int is_norm_dtype(netrun_dtype t) {
    return t == NETRUN_DTYPE_FLOAT || t == NETRUN_DTYPE_FLOAT16 || t == NETRUN_DTYPE_DOUBLE || t == NETRUN_DTYPE_BFLOAT16;
}

/* Load a whole small tensor (per-channel parameters) as double; NULL when out of memory. */
static double *load_all(const netrun_tensor *t, int64_t n) {
    double *d = cpu_alloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (!d) return NULL;
    for (int64_t i = 0; i < n; i += CHUNK) load_chunk(t->dtype, t->data, i, n - i < CHUNK ? n - i : CHUNK, d + i);
    return d;
}

static void act_chunk(double *v, int64_t n, const netrun_fused_activation *a) {
    if (a->kind == NETRUN_ACT_NONE) return;
    for (int64_t i = 0; i < n; i++) v[i] = gu_act((float)v[i], a);
}

/* ---- BatchNormalization: y = x * a + b per channel (or per activation when spatial=0) ---- */

typedef struct bn_job {
    netrun_dtype dt;
    const void *x;
    void *y;
    const double *a, *b;
    int64_t c, plane;
    int per_activation;
    netrun_fused_activation act;
} bn_job;

static void bn_range(void *arg, int64_t p0, int64_t p1) {
    const bn_job *j = arg;
    double buf[CHUNK];
    for (int64_t pl = p0; pl < p1; pl++) {
        int64_t ch = pl % j->c;
        if (j->dt == NETRUN_DTYPE_FLOAT && !j->per_activation) {
            /* float planes in one vectorized pass, as onnxruntime computes them (models whose BatchNorms the graph
             * passes leave, e.g. those with If / Loop subgraphs: SSD's 16x160x160 BN 0.32 -> 0.08 ms) */
            const float *x = (const float *)j->x + pl * j->plane;
            float *y = (float *)j->y + pl * j->plane;
            const float a = (float)j->a[ch], b = (float)j->b[ch];
            for (int64_t k = 0; k < j->plane; k++) y[k] = x[k] * a + b;
            if (j->act.kind != NETRUN_ACT_NONE) gu_act_n(y, j->plane, &j->act);
            continue;
        }
        for (int64_t i = 0; i < j->plane; i += CHUNK) {
            int64_t n = j->plane - i < CHUNK ? j->plane - i : CHUNK;
            load_chunk(j->dt, j->x, pl * j->plane + i, n, buf);
            if (j->per_activation) {
                const double *a = j->a + ch * j->plane + i, *b = j->b + ch * j->plane + i;
                for (int64_t k = 0; k < n; k++) buf[k] = buf[k] * a[k] + b[k];
            } else {
                double a = j->a[ch], b = j->b[ch];
                for (int64_t k = 0; k < n; k++) buf[k] = buf[k] * a + b;
            }
            act_chunk(buf, n, &j->act);
            store_chunk(j->dt, j->y, pl * j->plane + i, n, buf);
        }
    }
}

static netrun_status bn_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_norm_params *p = args->params;
    if (!p || args->n_inputs < 5 || args->n_outputs < 1)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "BatchNormalization: needs 5 inputs");
    const netrun_tensor *X = &args->inputs[0];
    if (X->rank < 2) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "BatchNormalization: X rank < 2");
    int64_t n = X->dims[0], c = X->dims[1], total = gu_count(X);
    if (total < 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "BatchNormalization: X too large");
    if (total == 0) return NETRUN_OK;
    int64_t plane = total / (n * c);
    int64_t pc = gu_count(&args->inputs[1]);
    int per_act = pc != c;
    if (pc != c && pc != c * plane)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "BatchNormalization: scale has %lld values for %lld channels",
                               (long long)pc, (long long)c);
    for (int i = 2; i < 5; i++)
        if (gu_count(&args->inputs[i]) != pc)
            return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "BatchNormalization: input %d size differs from scale", i);
    double *v[4] = {0};
    netrun_status rc = NETRUN_OK;
    for (int i = 0; i < 4; i++)
        if (!(v[i] = load_all(&args->inputs[1 + i], pc))) {
            rc = cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "BatchNormalization: out of memory");
            goto done;
        }
    /* fold into y = x * a + b: a = scale / sqrt(var + eps), b = B - mean * a (v[0] and v[1] become a and b) */
    for (int64_t i = 0; i < pc; i++) {
        double a = v[0][i] / sqrt(v[3][i] + (double)p->epsilon);
        v[1][i] = v[1][i] - v[2][i] * a;
        v[0][i] = a;
    }
    bn_job j = {X->dtype, X->data, args->outputs[0].data, v[0], v[1], c, plane, per_act, p->activation};
    cpu_parallel_for(ctx, n * c, plane >= 4096 ? 1 : 4096 / plane + 1, bn_range, &j);
done:
    for (int i = 0; i < 4; i++) gu_free(v[i]);
    return rc;
}

/* ---- LayerNormalization and InstanceNormalization: normalize rows of length d ---- */

typedef struct rows_job {
    netrun_dtype dt, st_dt;
    const void *x;
    void *y, *mean, *inv;
    int64_t d, c;                 /* row length; channels (InstanceNorm: row r uses scale[r % c]) */
    const double *scale, *bias;   /* LayerNorm: d values (bias may be NULL); InstanceNorm: c values */
    int per_row;                  /* InstanceNorm */
    double eps;
    netrun_fused_activation act;
    const float *scale_f, *bias_f; /* LayerNorm on float X: scale and bias as floats (ln_row_f32), else NULL */
} rows_job;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(NETRUN_NO_CLONES)
#define NORM_SIMD __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#else
#define NORM_SIMD
#endif

/* One float LayerNorm row in float vectors (16 independent partial sums, so the loops vectorize without
 * -ffast-math): onnxruntime's arithmetic; the double chunks of rows_range took 0.30 ms on ViT's 197 x 768 at
 * 1 thread, onnxruntime 0.08. Returns the mean and 1 / std for the optional outputs. */
NORM_SIMD static void ln_row_f32(const float *x, float *y, int64_t d, const float *s, const float *b, float eps,
                                 float *mean_out, float *inv_out) {
    float a[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= d; i += 16)
        for (int l = 0; l < 16; l++) a[l] += x[i + l];
    double sum = 0;
    for (int l = 0; l < 16; l++) sum += a[l];
    for (; i < d; i++) sum += x[i];
    const float mean = (float)(sum / (double)d);
    for (int l = 0; l < 16; l++) a[l] = 0;
    for (i = 0; i + 16 <= d; i += 16)
        for (int l = 0; l < 16; l++) {
            const float t = x[i + l] - mean;
            a[l] += t * t;
        }
    double sq = 0;
    for (int l = 0; l < 16; l++) sq += a[l];
    for (; i < d; i++) sq += (double)(x[i] - mean) * (x[i] - mean);
    const float inv = (float)(1.0 / sqrt(sq / (double)d + eps));
    if (b)
        for (i = 0; i < d; i++) y[i] = (x[i] - mean) * inv * s[i] + b[i];
    else
        for (i = 0; i < d; i++) y[i] = (x[i] - mean) * inv * s[i];
    *mean_out = mean;
    *inv_out = inv;
}

static void store_stat(netrun_dtype dt, void *base, int64_t i, double v) {
    if (!base) return;
    if (dt == NETRUN_DTYPE_DOUBLE) ((double *)base)[i] = v;
    else ((float *)base)[i] = (float)v;
}

static void rows_range(void *arg, int64_t r0, int64_t r1) {
    const rows_job *j = arg;
    double buf[CHUNK];
    for (int64_t r = r0; r < r1; r++) {
        int64_t off = r * j->d;
        if (j->scale_f && j->d > 0) {
            float mean, inv;
            float *y = (float *)j->y + off;
            ln_row_f32((const float *)j->x + off, y, j->d, j->scale_f, j->bias_f, (float)j->eps, &mean, &inv);
            if (j->act.kind != NETRUN_ACT_NONE) gu_act_n(y, j->d, &j->act);
            store_stat(j->st_dt, j->mean, r, mean);
            store_stat(j->st_dt, j->inv, r, inv);
            continue;
        }
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < j->d; i += CHUNK) {
            int64_t n = j->d - i < CHUNK ? j->d - i : CHUNK;
            load_chunk(j->dt, j->x, off + i, n, buf);
            for (int64_t k = 0; k < n; k++) sum += buf[k];
        }
        double mean = j->d ? sum / (double)j->d : 0.0;
        for (int64_t i = 0; i < j->d; i += CHUNK) {
            int64_t n = j->d - i < CHUNK ? j->d - i : CHUNK;
            load_chunk(j->dt, j->x, off + i, n, buf);
            for (int64_t k = 0; k < n; k++) sq += (buf[k] - mean) * (buf[k] - mean);
        }
        double inv = 1.0 / sqrt((j->d ? sq / (double)j->d : 0.0) + j->eps);
        store_stat(j->st_dt, j->mean, r, mean);
        store_stat(j->st_dt, j->inv, r, inv);
        double rs = 1, rb = 0;
        if (j->per_row) {
            rs = j->scale[r % j->c];
            rb = j->bias[r % j->c];
        }
        for (int64_t i = 0; i < j->d; i += CHUNK) {
            int64_t n = j->d - i < CHUNK ? j->d - i : CHUNK;
            load_chunk(j->dt, j->x, off + i, n, buf);
            if (j->per_row) {
                for (int64_t k = 0; k < n; k++) buf[k] = (buf[k] - mean) * inv * rs + rb;
            } else {
                const double *s = j->scale + i, *b = j->bias ? j->bias + i : NULL;
                for (int64_t k = 0; k < n; k++) buf[k] = (buf[k] - mean) * inv * s[k] + (b ? b[k] : 0.0);
            }
            act_chunk(buf, n, &j->act);
            store_chunk(j->dt, j->y, off + i, n, buf);
        }
    }
}

/* Expand a Scale/B tensor broadcast over the normalized dims (rank nr, dims nd) into d doubles. */
static double *expand_param(const netrun_tensor *t, int nr, const int64_t *nd, int64_t d) {
    int64_t cnt = gu_count(t);
    if (cnt < 0) return NULL;
    double *src = load_all(t, cnt);
    double *dst = cpu_alloc((size_t)(d > 0 ? d : 1) * sizeof(double));
    if (!src || !dst) {
        gu_free(src);
        gu_free(dst);
        return NULL;
    }
    /* drop leading dims of size 1 beyond the normalized rank (checked by the layer) */
    int r = t->rank;
    const int64_t *td = t->dims;
    while (r > nr) {
        td++;
        r--;
    }
    int64_t strides[NETRUN_MAX_RANK], idx[NETRUN_MAX_RANK] = {0};
    cpu_broadcast_strides(r, td, nr, nd, strides);
    for (int64_t i = 0; i < d; i++) {
        int64_t o = 0;
        for (int k = 0; k < nr; k++) o += idx[k] * strides[k];
        dst[i] = src[o];
        for (int k = nr - 1; k >= 0; k--) {
            if (++idx[k] < nd[k]) break;
            idx[k] = 0;
        }
    }
    gu_free(src);
    return dst;
}

static netrun_status ln_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_norm_params *p = args->params;
    if (!p || args->n_inputs < 2 || args->n_outputs < 1)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "LayerNormalization: needs X and Scale");
    const netrun_tensor *X = &args->inputs[0], *S = &args->inputs[1];
    const netrun_tensor *B = args->n_inputs > 2 && args->inputs[2].rank >= 0 ? &args->inputs[2] : NULL;
    if (p->axis < 0 || p->axis >= X->rank)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "LayerNormalization: axis %d out of range", p->axis);
    int64_t total = gu_count(X), d = 1;
    if (total < 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "LayerNormalization: X too large");
    for (int i = p->axis; i < X->rank; i++) d *= X->dims[i];
    if (total == 0) return NETRUN_OK;
    int nr = X->rank - p->axis;
    double *sc = expand_param(S, nr, X->dims + p->axis, d);
    double *bi = B ? expand_param(B, nr, X->dims + p->axis, d) : NULL;
    netrun_status rc = NETRUN_OK;
    if (!sc || (B && !bi)) {
        rc = cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "LayerNormalization: out of memory");
    } else {
        rows_job j = {X->dtype, NETRUN_DTYPE_FLOAT, X->data, args->outputs[0].data, NULL, NULL, d, 1, sc, bi, 0,
                      p->epsilon, p->activation, NULL, NULL};
        float *sf = NULL;
        if (X->dtype == NETRUN_DTYPE_FLOAT && (sf = cpu_alloc((size_t)(2 * d) * sizeof(float)))) {
            for (int64_t i = 0; i < d; i++) {
                sf[i] = (float)sc[i];
                sf[d + i] = bi ? (float)bi[i] : 0.0f;
            }
            j.scale_f = sf;
            j.bias_f = bi ? sf + d : NULL;
        }
        if (args->n_outputs > 1 && args->outputs[1].rank >= 0) {
            j.mean = args->outputs[1].data;
            j.st_dt = args->outputs[1].dtype;
        }
        if (args->n_outputs > 2 && args->outputs[2].rank >= 0) {
            j.inv = args->outputs[2].data;
            j.st_dt = args->outputs[2].dtype;
        }
        cpu_parallel_for(ctx, total / d, d >= 4096 ? 1 : 4096 / d + 1, rows_range, &j);
        gu_free(sf);
    }
    gu_free(sc);
    gu_free(bi);
    return rc;
}

static netrun_status in_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_norm_params *p = args->params;
    if (!p || args->n_inputs < 3 || args->n_outputs < 1)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "InstanceNormalization: needs input, scale, B");
    const netrun_tensor *X = &args->inputs[0];
    if (X->rank < 3) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "InstanceNormalization: rank < 3");
    int64_t total = gu_count(X), c = X->dims[1];
    if (total < 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "InstanceNormalization: input too large");
    if (total == 0) return NETRUN_OK;
    if (gu_count(&args->inputs[1]) != c || gu_count(&args->inputs[2]) != c)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "InstanceNormalization: scale/B need C values");
    int64_t d = total / (X->dims[0] * c);
    double *sc = load_all(&args->inputs[1], c), *bi = load_all(&args->inputs[2], c);
    netrun_status rc = NETRUN_OK;
    if (!sc || !bi) {
        rc = cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "InstanceNormalization: out of memory");
    } else {
        rows_job j = {X->dtype, NETRUN_DTYPE_FLOAT, X->data, args->outputs[0].data, NULL, NULL, d, c, sc, bi, 1,
                      p->epsilon, p->activation, NULL, NULL};
        cpu_parallel_for(ctx, total / d, d >= 4096 ? 1 : 4096 / d + 1, rows_range, &j);
    }
    gu_free(sc);
    gu_free(bi);
    return rc;
}

/* ---- element access for the ops below (any norm dtype, one element at a time) ---- */

static inline double ld1(netrun_dtype dt, const void *b, int64_t i) {
    switch (dt) {
    case NETRUN_DTYPE_FLOAT: return ((const float *)b)[i];
    case NETRUN_DTYPE_DOUBLE: return ((const double *)b)[i];
    case NETRUN_DTYPE_FLOAT16: return cpu_half_to_float(((const uint16_t *)b)[i]);
    default: return cpu_bf16_to_float(((const uint16_t *)b)[i]);
    }
}

static inline void st1(netrun_dtype dt, void *b, int64_t i, double v) {
    switch (dt) {
    case NETRUN_DTYPE_FLOAT: ((float *)b)[i] = (float)v; break;
    case NETRUN_DTYPE_DOUBLE: ((double *)b)[i] = v; break;
    case NETRUN_DTYPE_FLOAT16: ((uint16_t *)b)[i] = cpu_float_to_half((float)v); break;
    default: ((uint16_t *)b)[i] = cpu_float_to_bf16((float)v); break;
    }
}

/* ---- GroupNormalization: rows of (C/G) * spatial elements, scale/bias per channel ---- */

typedef struct gn_job {
    netrun_dtype dt;
    const void *x;
    void *y;
    int64_t d, cpg, spatial, groups; /* row length; channels per group; spatial size; groups */
    const double *scale, *bias;      /* per channel */
    double eps;
} gn_job;

static void gn_range(void *arg, int64_t r0, int64_t r1) {
    const gn_job *j = arg;
    double buf[CHUNK];
    for (int64_t r = r0; r < r1; r++) {
        int64_t off = r * j->d, c0 = (r % j->groups) * j->cpg;
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < j->d; i += CHUNK) {
            int64_t n = j->d - i < CHUNK ? j->d - i : CHUNK;
            load_chunk(j->dt, j->x, off + i, n, buf);
            for (int64_t k = 0; k < n; k++) sum += buf[k];
        }
        double mean = j->d ? sum / (double)j->d : 0.0;
        for (int64_t i = 0; i < j->d; i += CHUNK) {
            int64_t n = j->d - i < CHUNK ? j->d - i : CHUNK;
            load_chunk(j->dt, j->x, off + i, n, buf);
            for (int64_t k = 0; k < n; k++) sq += (buf[k] - mean) * (buf[k] - mean);
        }
        double inv = 1.0 / sqrt((j->d ? sq / (double)j->d : 0.0) + j->eps);
        for (int64_t i = 0; i < j->d; i += CHUNK) {
            int64_t n = j->d - i < CHUNK ? j->d - i : CHUNK;
            load_chunk(j->dt, j->x, off + i, n, buf);
            for (int64_t k = 0; k < n; k++) {
                int64_t ch = c0 + (i + k) / j->spatial;
                buf[k] = (buf[k] - mean) * inv * j->scale[ch] + j->bias[ch];
            }
            store_chunk(j->dt, j->y, off + i, n, buf);
        }
    }
}

/* Per-channel values of a scale/bias given per channel (count C) or per group (count G, opset 18). */
static double *gn_param(const netrun_tensor *t, int64_t ch, int64_t groups) {
    int64_t cnt = gu_count(t);
    if (cnt != ch && cnt != groups) return NULL;
    double *src = load_all(t, cnt), *dst = cpu_alloc((size_t)(ch > 0 ? ch : 1) * sizeof(double));
    if (src && dst)
        for (int64_t c = 0; c < ch; c++) dst[c] = cnt == ch ? src[c] : src[c / (ch / groups)];
    gu_free(src);
    if (!src) {
        gu_free(dst);
        return NULL;
    }
    return dst;
}

static netrun_status gn_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_norm_params *p = args->params;
    if (!p || args->n_inputs < 3 || args->n_outputs < 1)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "GroupNormalization: needs X, scale, bias");
    const netrun_tensor *X = &args->inputs[0];
    if (X->rank < 2 || p->num_groups < 1 || X->dims[1] % p->num_groups)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "GroupNormalization: bad shape or num_groups");
    int64_t total = gu_count(X), ch = X->dims[1], g = p->num_groups;
    if (total < 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "GroupNormalization: X too large");
    if (total == 0) return NETRUN_OK;
    double *sc = gn_param(&args->inputs[1], ch, g), *bi = gn_param(&args->inputs[2], ch, g);
    netrun_status rc = NETRUN_OK;
    if (!sc || !bi) {
        rc = cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "GroupNormalization: scale/bias size mismatch or out of memory");
    } else {
        int64_t spatial = total / (X->dims[0] * ch);
        gn_job j = {X->dtype, X->data, args->outputs[0].data, total / (X->dims[0] * g), ch / g, spatial, g, sc, bi,
                    p->epsilon};
        cpu_parallel_for(ctx, X->dims[0] * g, j.d >= 4096 ? 1 : 4096 / j.d + 1, gn_range, &j);
    }
    gu_free(sc);
    gu_free(bi);
    return rc;
}

/* ---- MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over the given axes ---- */

typedef struct mvn_job {
    netrun_dtype dt;
    const void *x;
    void *y;
    const int64_t *off;              /* offsets of the R reduced elements from a group's base */
    int64_t R;
    int n_kept;
    int64_t kept_dims[NETRUN_MAX_RANK], kept_strides[NETRUN_MAX_RANK];
} mvn_job;

static void mvn_range(void *arg, int64_t k0, int64_t k1) {
    const mvn_job *j = arg;
    for (int64_t k = k0; k < k1; k++) {
        int64_t base = 0, rem = k;
        for (int i = j->n_kept - 1; i >= 0; i--) {
            base += (rem % j->kept_dims[i]) * j->kept_strides[i];
            rem /= j->kept_dims[i];
        }
        double sum = 0, sq = 0;
        for (int64_t r = 0; r < j->R; r++) sum += ld1(j->dt, j->x, base + j->off[r]);
        double mean = sum / (double)j->R;
        for (int64_t r = 0; r < j->R; r++) {
            double v = ld1(j->dt, j->x, base + j->off[r]) - mean;
            sq += v * v;
        }
        double den = sqrt(sq / (double)j->R) + 1e-9;
        for (int64_t r = 0; r < j->R; r++)
            st1(j->dt, j->y, base + j->off[r], (ld1(j->dt, j->x, base + j->off[r]) - mean) / den);
    }
}

static netrun_status mvn_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_reduce_params *p = args->params;
    const netrun_tensor *X = &args->inputs[0];
    if (!p || p->n_axes < 0 || p->n_axes > X->rank)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "MeanVarianceNormalization: bad params");
    int64_t total = gu_count(X);
    if (total < 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "MeanVarianceNormalization: X too large");
    if (total == 0) return NETRUN_OK;
    int64_t strides[NETRUN_MAX_RANK], st = 1;
    for (int i = X->rank - 1; i >= 0; i--) {
        strides[i] = st;
        st *= X->dims[i];
    }
    int red[NETRUN_MAX_RANK] = {0};
    for (int i = 0; i < p->n_axes; i++) {
        if (p->axes[i] < 0 || p->axes[i] >= X->rank)
            return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "MeanVarianceNormalization: axis out of range");
        red[p->axes[i]] = 1;
    }
    mvn_job j = {.dt = X->dtype, .x = X->data, .y = args->outputs[0].data, .R = 1};
    int rd[NETRUN_MAX_RANK], nr = 0;
    for (int i = 0; i < X->rank; i++) {
        if (red[i]) {
            rd[nr++] = i;
            j.R *= X->dims[i];
        } else {
            j.kept_dims[j.n_kept] = X->dims[i];
            j.kept_strides[j.n_kept++] = strides[i];
        }
    }
    int64_t *off = cpu_alloc((size_t)j.R * sizeof(int64_t));
    if (!off) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "MeanVarianceNormalization: out of memory");
    for (int64_t r = 0; r < j.R; r++) {
        int64_t o = 0, rem = r;
        for (int i = nr - 1; i >= 0; i--) {
            o += (rem % X->dims[rd[i]]) * strides[rd[i]];
            rem /= X->dims[rd[i]];
        }
        off[r] = o;
    }
    j.off = off;
    cpu_parallel_for(ctx, total / j.R, j.R >= 4096 ? 1 : 4096 / j.R + 1, mvn_range, &j);
    cpu_free(off);
    return NETRUN_OK;
}

/* ---- LpNormalization: x / ||x||_p along one axis ([outer, R, inner]); a zero norm gives 0 ---- */

typedef struct lpn_job {
    netrun_dtype dt;
    const void *x;
    void *y;
    int64_t R, inner;
    int64_t p;
} lpn_job;

static void lpn_range(void *arg, int64_t t0, int64_t t1) {
    const lpn_job *j = arg;
    for (int64_t t = t0; t < t1; t++) {
        int64_t base = (t / j->inner) * j->R * j->inner + t % j->inner;
        double s = 0;
        for (int64_t r = 0; r < j->R; r++) {
            double v = ld1(j->dt, j->x, base + r * j->inner);
            s += j->p == 1 ? fabs(v) : v * v;
        }
        double norm = j->p == 1 ? s : sqrt(s);
        for (int64_t r = 0; r < j->R; r++) {
            int64_t i = base + r * j->inner;
            st1(j->dt, j->y, i, norm == 0.0 ? 0.0 : ld1(j->dt, j->x, i) / norm);
        }
    }
}

static netrun_status lpn_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_lpnorm_params *p = args->params;
    const netrun_tensor *X = &args->inputs[0];
    if (!p || p->axis < 0 || p->axis >= X->rank || (p->p != 1 && p->p != 2))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "LpNormalization: bad params");
    int64_t total = gu_count(X);
    if (total < 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "LpNormalization: X too large");
    if (total == 0) return NETRUN_OK;
    lpn_job j = {X->dtype, X->data, args->outputs[0].data, X->dims[p->axis], 1, p->p};
    for (int i = p->axis + 1; i < X->rank; i++) j.inner *= X->dims[i];
    cpu_parallel_for(ctx, total / j.R, j.R >= 4096 ? 1 : 4096 / j.R + 1, lpn_range, &j);
    return NETRUN_OK;
}

/* ---- LRN: across channels, window [c - floor((size-1)/2), c + ceil((size-1)/2)] ---- */

typedef struct lrn_job {
    netrun_dtype dt;
    const void *x;
    void *y;
    int64_t ch, plane;
    netrun_lrn_params p;
} lrn_job;

static void lrn_range(void *arg, int64_t q0, int64_t q1) {
    const lrn_job *j = arg;
    int64_t lo = (j->p.size - 1) / 2, hi = j->p.size / 2; /* floor and ceil of (size - 1) / 2 */
    double a = (double)j->p.alpha / (double)j->p.size;
    for (int64_t q = q0; q < q1; q++) { /* q: (n, c) plane */
        int64_t n = q / j->ch, c = q % j->ch;
        int64_t c_lo = c - lo < 0 ? 0 : c - lo, c_hi = c + hi > j->ch - 1 ? j->ch - 1 : c + hi;
        for (int64_t s = 0; s < j->plane; s++) {
            double sq = 0;
            for (int64_t k = c_lo; k <= c_hi; k++) {
                double v = ld1(j->dt, j->x, (n * j->ch + k) * j->plane + s);
                sq += v * v;
            }
            int64_t i = q * j->plane + s;
            st1(j->dt, j->y, i, ld1(j->dt, j->x, i) / pow((double)j->p.bias + a * sq, (double)j->p.beta));
        }
    }
}

static netrun_status lrn_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_lrn_params *p = args->params;
    const netrun_tensor *X = &args->inputs[0];
    if (!p || X->rank < 3 || p->size < 1) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "LRN: bad params");
    int64_t total = gu_count(X);
    if (total < 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "LRN: X too large");
    if (total == 0) return NETRUN_OK;
    lrn_job j = {X->dtype, X->data, args->outputs[0].data, X->dims[1], total / (X->dims[0] * X->dims[1]), *p};
    /* the window never spans more than the channels; size itself may be any positive int64 */
    int64_t work = j.plane * (p->size < j.ch ? p->size : j.ch);
    if (work < 1) work = 1;
    cpu_parallel_for(ctx, X->dims[0] * X->dims[1], work >= 4096 ? 1 : 4096 / work + 1, lrn_range, &j);
    return NETRUN_OK;
}

static int norm_supports(const netrun_node_desc *node, char *reason, size_t size) {
    netrun_dtype t = node->n_inputs > 0 ? node->inputs[0].dtype : NETRUN_DTYPE_UNDEFINED;
    int ok = is_norm_dtype(t);
    for (int i = 1; ok && i < node->n_inputs; i++)
        if (node->inputs[i].rank >= 0 && !is_norm_dtype(node->inputs[i].dtype)) ok = 0;
    if (!ok) {
        snprintf(reason, size, "dtypes not supported by the CPU %s kernel (float, float16, bfloat16, double)",
                 node->op_type);
        return 0;
    }
    return 1;
}

#define NORM_DTYPES (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) | \
                     NETRUN_DTYPE_BIT(NETRUN_DTYPE_BFLOAT16) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE))

const cpu_op cpu_ops_norm[] = {
    {"BatchNormalization", "", NORM_DTYPES, "inference only; mixed scale/B dtypes; spatial=0", norm_supports, NULL,
     bn_run, NULL},
    {"InstanceNormalization", "", NORM_DTYPES, "", norm_supports, NULL, in_run, NULL},
    {"LayerNormalization", "", NORM_DTYPES, "Scale/B broadcast over the normalized dims; Mean/InvStdDev outputs",
     norm_supports, NULL, ln_run, NULL},
    {"GroupNormalization", "", NORM_DTYPES, "scale/bias per channel (opset 21) or per group (opset 18)", norm_supports,
     NULL, gn_run, NULL},
    {"MeanVarianceNormalization", "", NORM_DTYPES, "", norm_supports, NULL, mvn_run, NULL},
    {"LpNormalization", "", NORM_DTYPES, "p = 1 or 2", norm_supports, NULL, lpn_run, NULL},
    {"LRN", "", NORM_DTYPES, "", norm_supports, NULL, lrn_run, NULL},
    {0},
};
