/* CPU kernels: pool. Direct loops over (N*C) planes on the pool's threads, geometry promoted to 3 spatial
 * dims. float, double, int8 and uint8 run natively; float16/bfloat16 are staged through float32. */
#include <float.h>
#include <stdio.h>

#include "gemm_util.h"

typedef struct pool_job {
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
    int64_t in_size, out_size;
    const void *x;
    void *y;
    int64_t *ind;            /* MaxPool Indices, or NULL */
    int is_max, count_include_pad, storage_order;
} pool_job;

static int pool_geom(const netrun_pool_params *p, const netrun_tensor *x, const netrun_tensor *y, pool_job *j) {
    int ns = p->n_spatial;
    if (ns < 1 || ns > 3 || x->rank != ns + 2 || y->rank != x->rank) return 0;
    j->in_size = j->out_size = 1;
    for (int i = 0; i < 3; i++) {
        int s = i - (3 - ns);
        j->in[i] = s >= 0 ? x->dims[2 + s] : 1;
        j->out[i] = s >= 0 ? y->dims[2 + s] : 1;
        j->k[i] = s >= 0 ? p->kernel[s] : 1;
        j->s[i] = s >= 0 ? p->strides[s] : 1;
        j->d[i] = s >= 0 ? p->dilations[s] : 1;
        j->pb[i] = s >= 0 ? p->pads_begin[s] : 0;
        j->pe[i] = s >= 0 ? p->pads_end[s] : 0;
        j->in_size *= j->in[i];
        j->out_size *= j->out[i];
    }
    return 1;
}

/* Taps of the window starting at (d0, h0, w0) that lie inside the padded input. */
static int64_t pool_padded_count(const pool_job *j, int64_t d0, int64_t h0, int64_t w0) {
    int64_t start[3] = {d0, h0, w0}, n = 1;
    for (int i = 0; i < 3; i++) {
        int64_t c = 0, lo = -j->pb[i], hi = j->in[i] + j->pe[i];
        for (int64_t k = 0; k < j->k[i]; k++) {
            int64_t p = start[i] + k * j->d[i];
            if (p >= lo && p < hi) c++;
        }
        n *= c;
    }
    return n;
}

/* Max ignores padded taps; the average divides by the taps inside the input, or with count_include_pad by the
 * taps inside the padded extent [-pads_begin, in + pads_end) (ceil_mode windows are clipped to it). */
#define POOL_PLANES(NAME, T, LOWEST)                                                                          \
    static void NAME(void *arg, int64_t p0, int64_t p1) {                                                     \
        const pool_job *j = arg;                                                                              \
        for (int64_t pl = p0; pl < p1; pl++) {                                                                \
            const T *x = (const T *)j->x + pl * j->in_size;                                                   \
            T *y = (T *)j->y + pl * j->out_size;                                                              \
            int64_t *ind = j->ind ? j->ind + pl * j->out_size : NULL;                                         \
            int64_t oi = 0;                                                                                   \
            for (int64_t od = 0; od < j->out[0]; od++)                                                        \
                for (int64_t oh = 0; oh < j->out[1]; oh++)                                                    \
                    for (int64_t ow = 0; ow < j->out[2]; ow++, oi++) {                                        \
                        int64_t d0 = od * j->s[0] - j->pb[0], h0 = oh * j->s[1] - j->pb[1];                   \
                        int64_t w0 = ow * j->s[2] - j->pb[2];                                                 \
                        T best = LOWEST;                                                                      \
                        int64_t best_i = -1, cnt = 0, cnt_pad = 0;                                            \
                        double sum = 0;                                                                       \
                        for (int64_t kd = 0; kd < j->k[0]; kd++) {                                            \
                            int64_t id = d0 + kd * j->d[0];                                                   \
                            int din = id >= 0 && id < j->in[0];                                               \
                            for (int64_t kh = 0; kh < j->k[1]; kh++) {                                        \
                                int64_t ih = h0 + kh * j->d[1];                                               \
                                int hin = din && ih >= 0 && ih < j->in[1];                                    \
                                for (int64_t kw = 0; kw < j->k[2]; kw++) {                                    \
                                    int64_t iw = w0 + kw * j->d[2];                                           \
                                    if (!hin || iw < 0 || iw >= j->in[2]) continue;                           \
                                    int64_t xi = (id * j->in[1] + ih) * j->in[2] + iw;                        \
                                    T v = x[xi];                                                              \
                                    cnt++;                                                                    \
                                    if (j->is_max) { /* strictly greater: first max wins, NaN skipped */     \
                                        if (v > best) {                                                       \
                                            best = v;                                                         \
                                            best_i = xi;                                                      \
                                        }                                                                     \
                                    } else {                                                                  \
                                        sum += (double)v;                                                     \
                                    }                                                                         \
                                }                                                                             \
                            }                                                                                 \
                        }                                                                                     \
                        if (j->is_max) {                                                                      \
                            y[oi] = best;                                                                     \
                            if (ind) {                                                                        \
                                int64_t bi = best_i < 0 ? 0 : best_i;                                         \
                                if (j->storage_order) { /* column major: first spatial dim fastest */         \
                                    int64_t bw = bi % j->in[2], bh = (bi / j->in[2]) % j->in[1];              \
                                    int64_t bd = bi / (j->in[2] * j->in[1]);                                  \
                                    bi = (bw * j->in[1] + bh) * j->in[0] + bd;                                \
                                }                                                                             \
                                ind[oi] = pl * j->in_size + bi;                                               \
                            }                                                                                 \
                        } else {                                                                              \
                            if (j->count_include_pad) cnt_pad = pool_padded_count(j, d0, h0, w0);             \
                            int64_t div = j->count_include_pad ? cnt_pad : cnt;                               \
                            y[oi] = (T)(div > 0 ? sum / (double)div : 0.0);                                   \
                        }                                                                                     \
                    }                                                                                         \
        }                                                                                                     \
    }

