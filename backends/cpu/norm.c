/* CPU kernels: norm. Rows or planes are processed in fixed chunks loaded into double scratch on the stack,
 * so float, float16, bfloat16 and double share one code path without extra buffers; statistics are summed
 * in double. Work is split over rows / planes. */
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
} rows_job;

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
                      p->epsilon, p->activation};
        if (args->n_outputs > 1 && args->outputs[1].rank >= 0) {
            j.mean = args->outputs[1].data;
            j.st_dt = args->outputs[1].dtype;
        }
        if (args->n_outputs > 2 && args->outputs[2].rank >= 0) {
            j.inv = args->outputs[2].data;
            j.st_dt = args->outputs[2].dtype;
        }
        cpu_parallel_for(ctx, total / d, d >= 4096 ? 1 : 4096 / d + 1, rows_range, &j);
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
                      p->epsilon, p->activation};
        cpu_parallel_for(ctx, total / d, d >= 4096 ? 1 : 4096 / d + 1, rows_range, &j);
    }
    gu_free(sc);
    gu_free(bi);
    return rc;
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
    {0},
};
