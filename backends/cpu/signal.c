/* CPU kernels: signal (DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix).
 * Every transform runs in double on a complex line of dft_length points: an iterative radix-2 FFT when the
 * length is a power of two, else a direct O(n^2) sum on a shared twiddle table. The three DFT modes (forward,
 * inverse, inverse one-sided = irfft) differ only in how the line is filled and read back. Lines are
 * spread over threads; float16/bfloat16 are converted through float. */
#include <stdlib.h>

#include "cpu_internal.h"

static const double PI = 3.14159265358979323846;

/* ---- transform of one complex line ---- */

typedef struct fft_plan {
    int64_t L;
    int pow2;
    double *cs; /* cos(2*pi*j/L), sin(2*pi*j/L) interleaved, j < L */
} fft_plan;

static netrun_status plan_init(fft_plan *pl, int64_t L) {
    pl->L = L;
    pl->pow2 = (L & (L - 1)) == 0;
    if ((uint64_t)L > SIZE_MAX / (2 * sizeof(double)))
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "dft: length %lld too large", (long long)L);
    pl->cs = cpu_alloc((size_t)L * 2 * sizeof(double));
    if (!pl->cs) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "dft: out of memory for %lld twiddles", (long long)L);
    for (int64_t j = 0; j < L; j++) {
        double a = 2.0 * PI * (double)j / (double)L;
        pl->cs[2 * j] = cos(a);
        pl->cs[2 * j + 1] = sin(a);
    }
    return NETRUN_OK;
}

/* buf (L complex) <- sum_t buf[t] * exp(sign * 2*pi*i*k*t/L); tmp is L complex of scratch. */
static void transform(const fft_plan *pl, double *buf, double *tmp, int sign) {
    const int64_t L = pl->L;
    const double *cs = pl->cs;
    const double sg = sign < 0 ? -1.0 : 1.0;
    if (pl->pow2) {
        for (int64_t i = 1, j = 0; i < L; i++) { /* bit-reversal permutation */
            int64_t bit = L >> 1;
            for (; j & bit; bit >>= 1) j ^= bit;
            j ^= bit;
            if (i < j) {
                double r = buf[2 * i], im = buf[2 * i + 1];
                buf[2 * i] = buf[2 * j], buf[2 * i + 1] = buf[2 * j + 1];
                buf[2 * j] = r, buf[2 * j + 1] = im;
            }
        }
        for (int64_t m = 2; m <= L; m <<= 1) {
            int64_t half = m / 2, step = L / m;
            for (int64_t s = 0; s < L; s += m)
                for (int64_t j = 0; j < half; j++) {
                    double wr = cs[2 * j * step], wi = sg * cs[2 * j * step + 1];
                    double *u = buf + 2 * (s + j), *v = buf + 2 * (s + j + half);
                    double vr = v[0] * wr - v[1] * wi, vi = v[0] * wi + v[1] * wr;
                    v[0] = u[0] - vr, v[1] = u[1] - vi;
                    u[0] += vr, u[1] += vi;
                }
        }
        return;
    }
    for (int64_t k = 0; k < L; k++) {
        double sr = 0, si = 0;
        int64_t idx = 0;
        for (int64_t t = 0; t < L; t++) {
            double wr = cs[2 * idx], wi = sg * cs[2 * idx + 1];
            sr += buf[2 * t] * wr - buf[2 * t + 1] * wi;
            si += buf[2 * t] * wi + buf[2 * t + 1] * wr;
            idx += k;
            if (idx >= L) idx -= L;
        }
        tmp[2 * k] = sr, tmp[2 * k + 1] = si;
    }
    memcpy(buf, tmp, (size_t)L * 2 * sizeof(double));
}

/* ---- DFT ---- */

typedef struct dft_job {
    const netrun_dft_params *p;
    fft_plan plan;
    const void *x;
    void *y;
    netrun_dtype dt;
    int64_t n_in, n_out, inner, c_in, c_out;
    int failed;
} dft_job;

static void dft_range(void *arg, int64_t b, int64_t e) {
    dft_job *j = arg;
    const int64_t L = j->plan.L;
    double *buf = cpu_alloc((size_t)L * 4 * sizeof(double));
    if (!buf) { j->failed = 1; return; }
    double *tmp = buf + 2 * L;
    const netrun_dft_params *p = j->p;
    for (int64_t line = b; line < e; line++) {
        int64_t o = line / j->inner, i = line % j->inner;
        int64_t xbase = o * j->n_in * j->inner + i, xstride = j->inner;
        memset(buf, 0, (size_t)L * 2 * sizeof(double));
        int64_t n = p->inverse && p->onesided ? L / 2 + 1 : L;
        if (n > j->n_in) n = j->n_in;
        for (int64_t t = 0; t < n; t++) {
            int64_t at = (xbase + t * xstride) * j->c_in;
            buf[2 * t] = cpu_load_f(j->x, j->dt, at);
            buf[2 * t + 1] = j->c_in == 2 ? cpu_load_f(j->x, j->dt, at + 1) : 0.0;
        }
        if (p->inverse && p->onesided) { /* rebuild the Hermitian spectrum; DC and Nyquist are real */
            buf[1] = 0;
            if (L % 2 == 0) buf[L + 1] = 0;
            for (int64_t k = L / 2 + 1; k < L; k++) buf[2 * k] = buf[2 * (L - k)], buf[2 * k + 1] = -buf[2 * (L - k) + 1];
        }
        transform(&j->plan, buf, tmp, p->inverse ? 1 : -1);
        double scale = p->inverse ? 1.0 / (double)L : 1.0;
        int64_t ybase = o * j->n_out * j->inner + i;
        for (int64_t k = 0; k < j->n_out; k++) {
            int64_t at = (ybase + k * xstride) * j->c_out;
            cpu_store_f(j->y, j->dt, at, buf[2 * k] * scale);
            if (j->c_out == 2) cpu_store_f(j->y, j->dt, at + 1, buf[2 * k + 1] * scale);
        }
    }
    cpu_free(buf);
}

static netrun_status run_dft(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_dft_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (!p || p->axis < 0 || p->axis >= x->rank - 1 || p->dft_length < 1 || y->rank != x->rank)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "dft: bad params");
    if (cpu_count(y) == 0) return NETRUN_OK;
    dft_job j = {.p = p, .x = x->data, .y = y->data, .dt = x->dtype, .n_in = x->dims[p->axis],
                 .n_out = y->dims[p->axis], .inner = 1, .c_in = x->dims[x->rank - 1], .c_out = y->dims[y->rank - 1]};
    int64_t outer = 1;
    for (int d = 0; d < p->axis; d++) outer *= x->dims[d];
    for (int d = p->axis + 1; d < x->rank - 1; d++) j.inner *= x->dims[d];
    netrun_status st = plan_init(&j.plan, p->dft_length);
    if (st != NETRUN_OK) return st;
    int64_t cost = p->dft_length * (j.plan.pow2 ? 16 : p->dft_length);
    int64_t grain = cost > 0 && cost < 65536 ? 65536 / cost : 1;
    cpu_parallel_for(ctx, outer * j.inner, grain, dft_range, &j);
    cpu_free(j.plan.cs);
    if (j.failed) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "dft: out of memory for line buffers");
    return NETRUN_OK;
}

/* ---- STFT ---- */

typedef struct stft_job {
    const netrun_stft_params *p;
    fft_plan plan;
    const void *x, *w;
    void *y;
    netrun_dtype dt;
    int64_t len, comp, bins;
    int failed;
} stft_job;

static void stft_range(void *arg, int64_t b, int64_t e) {
    stft_job *j = arg;
    const int64_t L = j->plan.L;
    double *buf = cpu_alloc((size_t)L * 4 * sizeof(double));
    if (!buf) { j->failed = 1; return; }
    double *tmp = buf + 2 * L;
    for (int64_t line = b; line < e; line++) {
        int64_t bt = line / j->p->n_frames, f = line % j->p->n_frames;
        int64_t start = bt * j->len + f * j->p->frame_step;
        for (int64_t t = 0; t < L; t++) {
            double w = j->w ? cpu_load_f(j->w, j->dt, t) : 1.0;
            int64_t at = (start + t) * j->comp;
            buf[2 * t] = cpu_load_f(j->x, j->dt, at) * w;
            buf[2 * t + 1] = j->comp == 2 ? cpu_load_f(j->x, j->dt, at + 1) * w : 0.0;
        }
        transform(&j->plan, buf, tmp, -1);
        for (int64_t k = 0; k < j->bins; k++) {
            cpu_store_f(j->y, j->dt, (line * j->bins + k) * 2, buf[2 * k]);
            cpu_store_f(j->y, j->dt, (line * j->bins + k) * 2 + 1, buf[2 * k + 1]);
        }
    }
    cpu_free(buf);
}

static netrun_status run_stft(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_stft_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (!p || x->rank != 3 || y->rank != 4 || p->frame_length < 1 || p->frame_length > x->dims[1] ||
        y->dims[1] != p->n_frames || (p->n_frames - 1) * p->frame_step + p->frame_length > x->dims[1])
        return cpu_host->error(NETRUN_ERR_INTERNAL, "stft: bad params");
    const netrun_tensor *w = p->has_window && args->n_inputs > 2 && args->inputs[2].rank == 1 ? &args->inputs[2] : NULL;
    if (w && w->dims[0] != p->frame_length) return cpu_host->error(NETRUN_ERR_INTERNAL, "stft: window length");
    if (cpu_count(y) == 0) return NETRUN_OK;
    stft_job j = {.p = p, .x = x->data, .w = w ? w->data : NULL, .y = y->data, .dt = x->dtype, .len = x->dims[1],
                  .comp = x->dims[2], .bins = y->dims[2]};
    netrun_status st = plan_init(&j.plan, p->frame_length);
    if (st != NETRUN_OK) return st;
    int64_t cost = p->frame_length * (j.plan.pow2 ? 16 : p->frame_length);
    int64_t grain = cost > 0 && cost < 65536 ? 65536 / cost : 1;
    cpu_parallel_for(ctx, x->dims[0] * p->n_frames, grain, stft_range, &j);
    cpu_free(j.plan.cs);
    if (j.failed) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "stft: out of memory for frame buffers");
    return NETRUN_OK;
}

/* ---- windows ---- */

enum { WIN_HANN, WIN_HAMMING, WIN_BLACKMAN };

static netrun_status run_window(const netrun_kernel_args *args, int kind) {
    const netrun_window_params *p = args->params;
    netrun_tensor *y = &args->outputs[0];
    if (!p || y->rank != 1) return cpu_host->error(NETRUN_ERR_INTERNAL, "window: bad params");
    int64_t size = y->dims[0];
    double N = (double)(p->periodic ? size : size - 1);
    for (int64_t n = 0; n < size; n++) {
        double v, a = N > 0 ? 2.0 * PI * (double)n / N : 0.0; /* size 1 symmetric: the single weight is 1 */
        switch (kind) {
        case WIN_HANN: { double s = sin(a / 2); v = s * s; break; }
        case WIN_HAMMING: v = 25.0 / 46.0 - (21.0 / 46.0) * cos(a); break;
        default: v = 0.42 - 0.5 * cos(a) + 0.08 * cos(2 * a); break;
        }
        cpu_store_f(y->data, y->dtype, n, v);
    }
    return NETRUN_OK;
}

static netrun_status run_hann(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    return run_window(args, WIN_HANN);
}
static netrun_status run_hamming(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    return run_window(args, WIN_HAMMING);
}
static netrun_status run_blackman(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    return run_window(args, WIN_BLACKMAN);
}

/* MelWeightMatrix: triangular filters between mel-spaced edges, following the ONNX reference (edges in
 * float precision for float inputs, bins by floor division). */
static netrun_status run_mel(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    netrun_tensor *y = &args->outputs[0];
    if (args->n_inputs < 5 || y->rank != 2) return cpu_host->error(NETRUN_ERR_INTERNAL, "mel: bad args");
    const netrun_tensor *in = args->inputs;
    int64_t bins = (int64_t)cpu_load_f(in[0].data, in[0].dtype, 0), dft_len = (int64_t)cpu_load_f(in[1].data, in[1].dtype, 0);
    double rate = cpu_load_f(in[2].data, in[2].dtype, 0);
    if (bins != y->dims[1] || dft_len / 2 + 1 != y->dims[0])
        return cpu_host->error(NETRUN_ERR_INTERNAL, "mel: output shape does not match the inputs");
    if (rate <= 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "mel: sample_rate must be > 0, got %g", rate);
    double lo = cpu_load_f(in[3].data, in[3].dtype, 0), hi = cpu_load_f(in[4].data, in[4].dtype, 0), lo_mel, hi_mel, step;
    if (in[3].dtype == NETRUN_DTYPE_DOUBLE) {
        lo_mel = 2595.0 * log10(1.0 + lo / 700.0);
        hi_mel = 2595.0 * log10(1.0 + hi / 700.0);
        step = (hi_mel - lo_mel) / (double)(bins + 2);
    } else {
        float l = 2595.0f * log10f(1.0f + (float)lo / 700.0f), h = 2595.0f * log10f(1.0f + (float)hi / 700.0f);
        lo_mel = l, hi_mel = h;
        step = (float)(h - l) / (float)(bins + 2);
    }
    int64_t nspec = y->dims[0];
    int64_t *edge = cpu_alloc((size_t)(bins + 2) * sizeof(int64_t));
    double *out = cpu_alloc((size_t)(nspec * bins) * sizeof(double));
    if (!edge || !out) {
        cpu_free(edge), cpu_free(out);
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "mel: out of memory");
    }
    for (int64_t i = 0; i < bins + 2; i++) {
        double f = 700.0 * (pow(10.0, ((double)i * step + lo_mel) / 2595.0) - 1.0);
        edge[i] = (int64_t)floor((double)(dft_len + 1) * f / rate);
    }
    memset(out, 0, (size_t)(nspec * bins) * sizeof(double));
    for (int64_t i = 0; i < bins; i++) {
        int64_t l = edge[i], c = edge[i + 1], r = edge[i + 2];
        if (c == l) {
            if (c >= 0 && c < nspec) out[c * bins + i] = 1;
        } else {
            for (int64_t k = l; k <= c; k++)
                if (k >= 0 && k < nspec) out[k * bins + i] = (double)(k - l) / (double)(c - l);
        }
        if (r > c)
            for (int64_t k = c; k < r; k++)
                if (k >= 0 && k < nspec) out[k * bins + i] = (double)(r - k) / (double)(r - c);
    }
    for (int64_t k = 0; k < nspec * bins; k++) cpu_store_f(y->data, y->dtype, k, out[k]);
    cpu_free(edge), cpu_free(out);
    return NETRUN_OK;
}

#define FLOATS (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) | \
                NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_BFLOAT16))
#define INDEX (NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT32) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64))

const cpu_op cpu_ops_signal[] = {
    {"DFT", NULL, FLOATS, "radix-2 FFT for power-of-two lengths, O(n^2) otherwise", NULL, NULL, run_dft, NULL},
    {"STFT", NULL, FLOATS, "", NULL, NULL, run_stft, NULL},
    {"HannWindow", NULL, INDEX, "", NULL, NULL, run_hann, NULL},
    {"HammingWindow", NULL, INDEX, "", NULL, NULL, run_hamming, NULL},
    {"BlackmanWindow", NULL, INDEX, "", NULL, NULL, run_blackman, NULL},
    {"MelWeightMatrix", NULL, INDEX, "", NULL, NULL, run_mel, NULL},
    {0},
};
