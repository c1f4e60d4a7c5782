/* CPU kernels: rnn (LSTM, GRU, RNN), float32 (float16 converted to float and back).
 *
 * Per direction: the input projection X·W^T (+ biases) of every time step is one sgemm up front (split in
 * row chunks over the thread pool); then each step does H_prev·R^T (sgemm over the batch) and the gates.
 * Directions run in parallel. With sequence_lens, batch entry b runs its own len_b steps (the reverse
 * direction starts at its step len_b - 1); Y is 0 past len_b and Y_h/Y_c hold the state after the last
 * valid step. OpenBLAS is kept single-threaded: netrun's pool owns the parallelism. */
#include <cblas.h>

#include "cpu_internal.h"
#include "gemm_util.h" /* gu_sigmoid_n */

/* Let the branch-free clamps below be if-converted and vectorized: netrun never enables FP traps, so
 * assuming none changes no result. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

void openblas_set_num_threads(int);

enum { K_LSTM, K_GRU, K_RNN };

typedef struct rnn_job {
    int kind;
    const netrun_rnn_params *p;
    int64_t seq, batch, in, H, G, nd;
    const float *X, *W, *R, *B, *init_h, *init_c, *P;
    const int32_t *lens;
    float *Y, *Yh, *Yc;              /* NULL when absent */
    float *work;                     /* per direction: xw [seq*batch*G*H], hr [batch*G*H], h, c, tmp [batch*H] */
    size_t work_per_dir;
    int64_t xw_chunk;                /* rows per task of the input projection */
    int64_t xw_tasks_per_dir;
} rnn_job;

static void act_apply(netrun_activation a, float alpha, float beta, float *v, int64_t n) {
    switch (a) {
    case NETRUN_ACT_RELU: for (int64_t i = 0; i < n; i++) v[i] = v[i] > 0.f ? v[i] : 0.f; break;
    /* sigmoid and tanh through gu_sigmoid_n's AVX-512 loop (gemm_util.c): this file is built for the baseline
     * ISA, where the scalar cpu_expf calls of the gates were two thirds of a small LSTM's time (H = 32, batch 8) */
    case NETRUN_ACT_TANH: /* 2 sigmoid(2x) - 1: absolute error ~1e-7 */
        for (int64_t i = 0; i < n; i++) v[i] *= 2.f;
        gu_sigmoid_n(v, n);
        for (int64_t i = 0; i < n; i++) v[i] = 2.f * v[i] - 1.f;
        break;
    case NETRUN_ACT_SIGMOID: gu_sigmoid_n(v, n); break;
    case NETRUN_ACT_AFFINE: for (int64_t i = 0; i < n; i++) v[i] = alpha * v[i] + beta; break;
    case NETRUN_ACT_LEAKY_RELU: for (int64_t i = 0; i < n; i++) v[i] = v[i] >= 0.f ? v[i] : alpha * v[i]; break;
    case NETRUN_ACT_THRESHOLDED_RELU: for (int64_t i = 0; i < n; i++) v[i] = v[i] > alpha ? v[i] : 0.f; break;
    case NETRUN_ACT_SCALED_TANH: for (int64_t i = 0; i < n; i++) v[i] = alpha * tanhf(beta * v[i]); break;
    case NETRUN_ACT_HARD_SIGMOID:
        for (int64_t i = 0; i < n; i++) {
            float t = alpha * v[i] + beta;
            v[i] = t < 0.f ? 0.f : t > 1.f ? 1.f : t;
        }
        break;
    case NETRUN_ACT_ELU: for (int64_t i = 0; i < n; i++) v[i] = v[i] >= 0.f ? v[i] : alpha * (expf(v[i]) - 1.f); break;
    case NETRUN_ACT_SOFTSIGN: for (int64_t i = 0; i < n; i++) v[i] = v[i] / (1.f + fabsf(v[i])); break;
    case NETRUN_ACT_SOFTPLUS:
        for (int64_t i = 0; i < n; i++) v[i] = v[i] > 20.f ? v[i] : log1pf(expf(v[i]));
        break;
    default: break;
    }
}

static inline void clip_vec(float clip, float *v, int64_t n) {
    if (clip <= 0.f) return;
    for (int64_t i = 0; i < n; i++) v[i] = v[i] < -clip ? -clip : v[i] > clip ? clip : v[i];
}

/* Row of X (and of the projection) for time t, batch b. */
static inline int64_t x_row(const rnn_job *j, int64_t t, int64_t b) {
    return j->p->layout ? b * j->seq + t : t * j->batch + b;
}

/* Task: rows [r0, r1) of direction d's projection xw = X·W^T + biases. */
static void xw_task(void *arg, int64_t begin, int64_t end) {
    const rnn_job *j = arg;
    int64_t GH = j->G * j->H, rows = j->seq * j->batch;
    for (int64_t t = begin; t < end; t++) {
        int64_t d = t / j->xw_tasks_per_dir, r0 = (t % j->xw_tasks_per_dir) * j->xw_chunk;
        int64_t r1 = r0 + j->xw_chunk < rows ? r0 + j->xw_chunk : rows;
        float *xw = j->work + (size_t)d * j->work_per_dir;
        const float *W = j->W + d * GH * j->in;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(r1 - r0), (int)GH, (int)j->in, 1.f,
                    j->X + r0 * j->in, (int)j->in, W, (int)j->in, 0.f, xw + r0 * GH, (int)GH);
        if (!j->B) continue;
        const float *wb = j->B + d * 2 * GH, *rb = wb + GH;
        /* GRU with linear_before_reset adds Rb_h inside the reset product, in the step */
        int64_t rb_upto = j->kind == K_GRU && j->p->linear_before_reset ? 2 * j->H : GH;
        for (int64_t r = r0; r < r1; r++) {
            float *row = xw + r * GH;
            for (int64_t k = 0; k < GH; k++) row[k] += wb[k];
            for (int64_t k = 0; k < rb_upto; k++) row[k] += rb[k];
        }
    }
}

/* Step t of batch entry b in direction d, or -1 when b has finished. */
static inline int64_t step_time(const rnn_job *j, int reverse, int64_t s, int64_t b) {
    int64_t len = j->lens ? j->lens[b] : j->seq;
    if (s >= len) return -1;
    return reverse ? len - 1 - s : s;
}

/* Pointers of direction d. */
typedef struct dir_view {
    int reverse;
    float *xw, *hr, *h, *c, *tmp;
    const float *R, *P, *rb, *al, *be;
    const netrun_activation *act;
} dir_view;

static dir_view view_of(const rnn_job *j, int64_t d) {
    const netrun_rnn_params *p = j->p;
    int64_t H = j->H, GH = j->G * H, batch = j->batch;
    dir_view v;
    v.reverse = p->direction == NETRUN_RNN_REVERSE || (p->direction == NETRUN_RNN_BIDIRECTIONAL && d == 1);
    v.xw = j->work + (size_t)d * j->work_per_dir;
    v.hr = v.xw + j->seq * batch * GH;
    v.h = v.hr + batch * GH;
    v.c = v.h + batch * H;
    v.tmp = v.c + batch * H;
    v.R = j->R + d * GH * H;
    v.P = j->P ? j->P + d * 3 * H : NULL;
    v.rb = j->B ? j->B + d * 2 * GH + GH : NULL;
    int na = j->kind == K_LSTM ? 3 : j->kind == K_GRU ? 2 : 1;
    v.act = p->activations + d * na;
    v.al = p->activation_alpha + d * na;
    v.be = p->activation_beta + d * na;
    return v;
}

/* Initial states of direction d; layout 1 stores them [batch, nd, H]. */
static void dir_init(const rnn_job *j, int64_t d) {
    dir_view v = view_of(j, d);
    int64_t H = j->H;
    for (int64_t b = 0; b < j->batch; b++) {
        int64_t si = j->p->layout ? (b * j->nd + d) * H : (d * j->batch + b) * H;
        if (j->init_h) memcpy(v.h + b * H, j->init_h + si, sizeof(float) * (size_t)H);
        else memset(v.h + b * H, 0, sizeof(float) * (size_t)H);
        if (j->kind == K_LSTM) {
            if (j->init_c) memcpy(v.c + b * H, j->init_c + si, sizeof(float) * (size_t)H);
            else memset(v.c + b * H, 0, sizeof(float) * (size_t)H);
        }
    }
}

/* Step s of direction d for batch entries [b0, b1). */
static void dir_step(const rnn_job *j, int64_t d, int64_t s, int64_t b0, int64_t b1) {
    const netrun_rnn_params *p = j->p;
    int64_t H = j->H, GH = j->G * H, batch = j->batch, nd = j->nd;
    dir_view v = view_of(j, d);
    float *xw = v.xw, *hr = v.hr, *h = v.h, *c = v.c, *tmp = v.tmp;
    const float *R = v.R, *P = v.P, *rb = v.rb, *al = v.al, *be = v.be;
    const netrun_activation *act = v.act;
    int reverse = v.reverse;
    /* hr = h·R^T for all gates (GRU without linear_before_reset: z and r only, h after the reset) */
    int64_t ng = j->kind == K_GRU && !p->linear_before_reset ? 2 * H : GH;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(b1 - b0), (int)ng, (int)H, 1.f, h + b0 * H, (int)H,
                R, (int)H, 0.f, hr + b0 * GH, (int)GH);
    for (int64_t b = b0; b < b1; b++) {
        int64_t t = step_time(j, reverse, s, b);
        if (t < 0) continue;
        float *g = hr + b * GH, *hb = h + b * H;
        const float *xr = xw + x_row(j, t, b) * GH;
        if (j->kind == K_LSTM) {
            /* gates i, o, f, c; peepholes P = [Pi, Po, Pf] */
            float *cb = c + b * H;
            float *gi = g, *go = g + H, *gf = g + 2 * H, *gc = g + 3 * H;
            for (int64_t k = 0; k < GH; k++) g[k] += xr[k];
            if (P)
                for (int64_t k = 0; k < H; k++) {
                    gi[k] += P[k] * cb[k];
                    gf[k] += P[2 * H + k] * cb[k];
                }
            clip_vec(p->clip, gi, H);
            act_apply(act[0], al[0], be[0], gi, H);
            if (p->input_forget) {
                for (int64_t k = 0; k < H; k++) gf[k] = 1.f - gi[k];
            } else {
                clip_vec(p->clip, gf, H);
                act_apply(act[0], al[0], be[0], gf, H);
            }
            clip_vec(p->clip, gc, H);
            act_apply(act[1], al[1], be[1], gc, H);
            for (int64_t k = 0; k < H; k++) cb[k] = gf[k] * cb[k] + gi[k] * gc[k];
            if (P)
                for (int64_t k = 0; k < H; k++) go[k] += P[H + k] * cb[k];
            clip_vec(p->clip, go, H);
            act_apply(act[0], al[0], be[0], go, H);
            memcpy(tmp + b * H, cb, sizeof(float) * (size_t)H);
            act_apply(act[2], al[2], be[2], tmp + b * H, H);
            for (int64_t k = 0; k < H; k++) hb[k] = go[k] * tmp[b * H + k];
        } else if (j->kind == K_GRU) {
            float *gz = g, *gr = g + H, *gh = g + 2 * H;
            for (int64_t k = 0; k < 2 * H; k++) g[k] += xr[k];
            clip_vec(p->clip, g, 2 * H);
            act_apply(act[0], al[0], be[0], g, 2 * H);
            if (p->linear_before_reset) {
                for (int64_t k = 0; k < H; k++) gh[k] = xr[2 * H + k] + gr[k] * (gh[k] + (rb ? rb[2 * H + k] : 0.f));
            } else {
                /* (r ⊙ h_prev)·Rh^T for this entry */
                float *rh = tmp + b * H;
                for (int64_t k = 0; k < H; k++) rh[k] = gr[k] * hb[k];
                cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)H, (int)H, 1.f, R + 2 * H * H, (int)H, rh, 1,
                            0.f, gh, 1);
                for (int64_t k = 0; k < H; k++) gh[k] += xr[2 * H + k];
            }
            clip_vec(p->clip, gh, H);
            act_apply(act[1], al[1], be[1], gh, H);
            for (int64_t k = 0; k < H; k++) hb[k] = (1.f - gz[k]) * gh[k] + gz[k] * hb[k];
        } else {
            for (int64_t k = 0; k < H; k++) g[k] += xr[k];
            clip_vec(p->clip, g, H);
            act_apply(act[0], al[0], be[0], g, H);
            memcpy(hb, g, sizeof(float) * (size_t)H);
        }
        if (j->Y) {
            int64_t yi = p->layout ? ((b * j->seq + t) * nd + d) * H : ((t * nd + d) * batch + b) * H;
            memcpy(j->Y + yi, hb, sizeof(float) * (size_t)H);
        }
    }
}

static void dir_finish(const rnn_job *j, int64_t d) {
    dir_view v = view_of(j, d);
    int64_t H = j->H;
    for (int64_t b = 0; b < j->batch; b++) {
        int64_t si = j->p->layout ? (b * j->nd + d) * H : (d * j->batch + b) * H;
        if (j->Yh) memcpy(j->Yh + si, v.h + b * H, sizeof(float) * (size_t)H);
        if (j->Yc) memcpy(j->Yc + si, v.c + b * H, sizeof(float) * (size_t)H);
    }
}

/* Whole directions, one per task (bidirectional runs both at once). */
static void direction_task(void *arg, int64_t begin, int64_t end) {
    const rnn_job *j = arg;
    for (int64_t d = begin; d < end; d++) {
        dir_init(j, d);
        for (int64_t s = 0; s < j->seq; s++) dir_step(j, d, s, 0, j->batch);
        dir_finish(j, d);
    }
}

/* One step of one direction, batch entries split over the pool (single direction, large steps). */
typedef struct step_arg {
    const rnn_job *j;
    int64_t d, s;
} step_arg;

static void step_task(void *arg, int64_t b0, int64_t b1) {
    const step_arg *a = arg;
    dir_step(a->j, a->d, a->s, b0, b1);
}

static int present(const netrun_kernel_args *a, int i) {
    return i < a->n_inputs && a->inputs[i].rank >= 0 && a->inputs[i].data;
}
static int out_present(const netrun_kernel_args *a, int i) {
    return i < a->n_outputs && a->outputs[i].rank >= 0 && a->outputs[i].data;
}

/* float16: inputs converted into float copies, outputs computed in float and converted back. */
static float *to_float(const netrun_tensor *t, int is_half, float **owned) {
    *owned = NULL;
    if (!is_half) return t->data;
    int64_t n = cpu_count(t);
    float *f = cpu_alloc(sizeof(float) * (size_t)n);
    if (!f) return NULL;
    const uint16_t *s = t->data;
    for (int64_t i = 0; i < n; i++) f[i] = cpu_half_to_float(s[i]);
    *owned = f;
    return f;
}

static netrun_status rnn_run(cpu_context *ctx, const netrun_kernel_args *args, int kind) {
    const netrun_rnn_params *p = args->params;
    if (!p || args->n_inputs < 3) return cpu_host->error(NETRUN_ERR_INTERNAL, "rnn: missing params or inputs");
    const netrun_tensor *x = &args->inputs[0];
    int is_half = x->dtype == NETRUN_DTYPE_FLOAT16;
    if (x->dtype != NETRUN_DTYPE_FLOAT && !is_half)
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "rnn: dtype %d not supported", (int)x->dtype);
    rnn_job j = {.kind = kind, .p = p, .H = p->hidden_size, .G = kind == K_LSTM ? 4 : kind == K_GRU ? 3 : 1,
                 .nd = p->direction == NETRUN_RNN_BIDIRECTIONAL ? 2 : 1};
    j.seq = p->layout ? x->dims[1] : x->dims[0];
    j.batch = p->layout ? x->dims[0] : x->dims[1];
    j.in = x->dims[2];
    int64_t GH = j.G * j.H;
    if (j.seq * j.batch * GH > INT32_MAX || j.in > INT32_MAX || GH > INT32_MAX)
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "rnn: sizes exceed the BLAS int range");
    if (j.seq == 0 || j.batch == 0) {
        for (int i = 0; i < args->n_outputs; i++)
            if (out_present(args, i) && args->outputs[i].nbytes) memset(args->outputs[i].data, 0, args->outputs[i].nbytes);
        return NETRUN_OK;
    }
    if (present(args, 4)) {
        j.lens = args->inputs[4].data;
        for (int64_t b = 0; b < j.batch; b++)
            if (j.lens[b] < 0 || j.lens[b] > j.seq)
                return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "rnn: sequence_lens[%lld] = %d is outside [0, %lld]",
                                       (long long)b, (int)j.lens[b], (long long)j.seq);
    }
    /* inputs as float */
    float *owned[8] = {0}, *out_scratch[3] = {0};
    const float **slots[8] = {&j.X, &j.W, &j.R, &j.B, NULL, &j.init_h, &j.init_c, &j.P};
    netrun_status st = NETRUN_OK;
    for (int i = 0; i < 8 && i < args->n_inputs; i++) {
        if (!slots[i] || !present(args, i)) continue;
        if (kind != K_LSTM && i >= 6) continue;
        *slots[i] = to_float(&args->inputs[i], is_half, &owned[i]);
        if (!*slots[i]) {
            st = cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "rnn: out of memory converting input %d", i);
            goto done;
        }
    }
    /* outputs: float buffers (scratch for float16) */
    float **outs[3] = {&j.Y, &j.Yh, &j.Yc};
    for (int i = 0; i < 3 && i < args->n_outputs; i++) {
        if (!out_present(args, i) || (kind != K_LSTM && i == 2)) continue;
        if (is_half) {
            out_scratch[i] = cpu_alloc(sizeof(float) * (size_t)cpu_count(&args->outputs[i]));
            if (!out_scratch[i]) {
                st = cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "rnn: out of memory");
                goto done;
            }
            *outs[i] = out_scratch[i];
        } else *outs[i] = args->outputs[i].data;
    }
    if (j.Y) memset(j.Y, 0, sizeof(float) * (size_t)cpu_count(&args->outputs[0]));
    /* workspace per direction: xw, hr, h, c, tmp */
    uint64_t per = (uint64_t)j.seq * j.batch * GH + (uint64_t)j.batch * GH + 3 * (uint64_t)j.batch * j.H;
    per = (per + 15) & ~(uint64_t)15; /* keep each direction 64-byte aligned */
    if (per > SIZE_MAX / sizeof(float) / 2) {
        st = cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "rnn: workspace too large");
        goto done;
    }
    j.work_per_dir = (size_t)per;
    j.work = cpu_alloc(sizeof(float) * j.work_per_dir * (size_t)j.nd);
    if (!j.work) {
        st = cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "rnn: cannot allocate the workspace");
        goto done;
    }
    openblas_set_num_threads(1);
    int64_t rows = j.seq * j.batch;
    /* a small RNN runs on the calling thread: handing out its few microseconds of work costs more than it saves
     * (the LSTM tagger of cpu_zoo_bench at batch 8, 2 threads: 0.17 ms on the pool, 0.15 on one thread) */
    cpu_context one = *ctx;
    one.threads = 1;
    one.pool = NULL; /* cpu_parallel_for runs the range inline */
    if (j.nd * rows * GH * (j.in + j.H) < ((int64_t)1 << 21)) ctx = &one;
    int64_t chunks = ctx->threads > 1 ? (int64_t)ctx->threads * 2 / j.nd : 1;
    if (chunks < 1) chunks = 1;
    j.xw_chunk = (rows + chunks - 1) / chunks;
    if (j.xw_chunk < 16) j.xw_chunk = 16;
    j.xw_tasks_per_dir = (rows + j.xw_chunk - 1) / j.xw_chunk;
    cpu_parallel_for(ctx, j.nd * j.xw_tasks_per_dir, 1, xw_task, &j);
    int64_t step_flops = j.batch * GH * j.H;
    if (j.nd == 1 && ctx->threads > 1 && j.batch >= 2 && step_flops >= (1 << 20)) {
        /* one direction: split each step's batch over the threads (a pool round per step pays off here) */
        dir_init(&j, 0);
        int64_t grain = (j.batch + ctx->threads - 1) / ctx->threads;
        for (int64_t s = 0; s < j.seq; s++) {
            step_arg a = {&j, 0, s};
            cpu_parallel_for(ctx, j.batch, grain, step_task, &a);
        }
        dir_finish(&j, 0);
    } else {
        cpu_parallel_for(ctx, j.nd, 1, direction_task, &j);
    }
    cpu_free(j.work);
    for (int i = 0; i < 3; i++)
        if (out_scratch[i]) {
            uint16_t *dst = args->outputs[i].data;
            int64_t n = cpu_count(&args->outputs[i]);
            for (int64_t k = 0; k < n; k++) dst[k] = cpu_float_to_half(out_scratch[i][k]);
        }
done:
    for (int i = 0; i < 3; i++)
        if (out_scratch[i]) cpu_free(out_scratch[i]);
    for (int i = 0; i < 8; i++)
        if (owned[i]) cpu_free(owned[i]);
    return st;
}

static netrun_status run_lstm(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return rnn_run(ctx, args, K_LSTM);
}
static netrun_status run_gru(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return rnn_run(ctx, args, K_GRU);
}
static netrun_status run_rnn(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return rnn_run(ctx, args, K_RNN);
}

#define DT (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16))

const cpu_op cpu_ops_rnn[] = {
    {"LSTM", NULL, DT, "float16 computed in float32", NULL, NULL, run_lstm, NULL},
    {"GRU", NULL, DT, "float16 computed in float32", NULL, NULL, run_gru, NULL},
    {"RNN", NULL, DT, "float16 computed in float32", NULL, NULL, run_rnn, NULL},
    {0},
};
