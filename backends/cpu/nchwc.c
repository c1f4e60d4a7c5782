/* Kernels of the nChw16c pass's internal ops (layers/nchwc.c, domain "com.netrun"): the NCHW <-> nChw16c
 * reorder at the edges of a blocked chain, and GlobalAveragePool reading nChw16c. Per image the blocked data
 * are [C/16][H][W][16]: a block of 16 channels is one 16 x HW transpose, done in 16 x 16 tiles (in AVX-512
 * registers where the CPU has it). The reorder's tasks are (block, run of pixels): a detector's 64 channels at
 * 40 x 40 are 4 blocks, which left 12 of 16 threads idle when tasks were whole blocks (0.09 ms at 16 threads,
 * the same as at 2). */
#include <stdio.h>
#include <string.h>

#include "cpu_internal.h"
#include "netrun_ops.h"

#define REORDER_PIX 256 /* pixels per task: 16 KB of floats */

typedef struct nchwc_job {
    const float *x;
    float *y;
    int64_t hw, runs; /* runs: tasks per block */
    int to_blocked, avx512;
} nchwc_job;

/* pixels [p0, p1) of one block: x and y point at the block's first float (the same 16 * hw floats) */
static void reorder_scalar(const nchwc_job *j, const float *x, float *y, int64_t p0, int64_t p1) {
    const int64_t hw = j->hw;
    if (j->to_blocked) /* y[p][c] = x[c][p] */
        for (int64_t p = p0; p < p1; p++)
            for (int c = 0; c < 16; c++) y[p * 16 + c] = x[c * hw + p];
    else /* y[c][p] = x[p][c] */
        for (int c = 0; c < 16; c++)
            for (int64_t p = p0; p < p1; p++) y[c * hw + p] = x[p * 16 + c];
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "avx512_transpose.h"

/* the same in 16 x 16 tiles; a last tile of n < 16 pixels through masks */
__attribute__((target("avx512f"))) static void reorder_avx512(const nchwc_job *j, const float *x, float *y,
                                                               int64_t p0, int64_t p1) {
    const int64_t hw = j->hw;
    __m512 r[16];
    for (int64_t p = p0; p < p1; p += 16) {
        const int n = p1 - p < 16 ? (int)(p1 - p) : 16;
        const __mmask16 m = (__mmask16)((1u << n) - 1);
        if (j->to_blocked) {
            for (int c = 0; c < 16; c++) r[c] = _mm512_maskz_loadu_ps(m, x + c * hw + p);
            avx512_transpose16(r); /* r[i]: the 16 channels of pixel p + i */
            for (int i = 0; i < n; i++) _mm512_storeu_ps(y + (p + i) * 16, r[i]);
        } else {
            for (int i = 0; i < 16; i++) r[i] = i < n ? _mm512_loadu_ps(x + (p + i) * 16) : _mm512_setzero_ps();
            avx512_transpose16(r); /* r[c]: channel c at pixels p .. p + 15 */
            for (int c = 0; c < 16; c++) _mm512_mask_storeu_ps(y + c * hw + p, m, r[c]);
        }
    }
}
#define HAVE_REORDER_AVX512 1
#endif

static void reorder_range(void *arg, int64_t b, int64_t e) {
    const nchwc_job *j = arg;
    for (int64_t t = b; t < e; t++) {
        const int64_t blk = t / j->runs, p0 = t % j->runs * REORDER_PIX;
        const int64_t p1 = p0 + REORDER_PIX < j->hw ? p0 + REORDER_PIX : j->hw;
        const float *x = j->x + blk * 16 * j->hw; /* one block: the same 16 * hw floats in both layouts */
        float *y = j->y + blk * 16 * j->hw;
#ifdef HAVE_REORDER_AVX512
        if (j->avx512) {
            reorder_avx512(j, x, y, p0, p1);
            continue;
        }
#endif
        reorder_scalar(j, x, y, p0, p1);
    }
}

static int nchwc_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (node->n_inputs != 1 || node->n_outputs != 1 || node->inputs[0].dtype != NETRUN_DTYPE_FLOAT ||
        node->inputs[0].rank != 4 || node->inputs[0].dims[1] < 0 || node->inputs[0].dims[1] % 16) {
        snprintf(reason, size, "%s needs one 4-D float32 input with C a multiple of 16", node->op_type);
        return 0;
    }
    return 1;
}

static netrun_status check_x(const netrun_kernel_args *args, const char *op) {
    if (args->n_inputs != 1 || args->n_outputs != 1)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: needs one input and one output", op);
    const netrun_tensor *X = &args->inputs[0];
    if (X->dtype != NETRUN_DTYPE_FLOAT || X->rank != 4 || X->dims[1] % 16)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: X must be 4-D float32 with C %% 16 == 0", op);
    return NETRUN_OK;
}

static netrun_status reorder_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_reorder_nchwc_params *p = args->params;
    netrun_status rc = check_x(args, "ReorderNCHWc");
    if (rc != NETRUN_OK) return rc;
    if (!p) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "ReorderNCHWc: missing params");
    const netrun_tensor *X = &args->inputs[0];
    if (cpu_count(&args->outputs[0]) != cpu_count(X))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "ReorderNCHWc: Y and X differ in size");
    if (X->data == args->outputs[0].data)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "ReorderNCHWc: cannot run in place");
    const int64_t hw = X->dims[2] * X->dims[3], blocks = X->dims[0] * (X->dims[1] / 16);
    if (blocks <= 0 || hw <= 0) return NETRUN_OK;
    nchwc_job j = {X->data, args->outputs[0].data, hw, (hw + REORDER_PIX - 1) / REORDER_PIX, p->to_blocked,
                   cpu_has_avx512f()};
    /* a task reorders at most REORDER_PIX x 16 floats; fewer than 16K floats are not worth a thread */
    const int64_t task = (hw < REORDER_PIX ? hw : REORDER_PIX) * 16;
    cpu_parallel_for(ctx, blocks * j.runs, (16384 + task - 1) / task, reorder_range, &j);
    return NETRUN_OK;
}

static void gap_range(void *arg, int64_t b, int64_t e) {
    const nchwc_job *j = arg;
    const int64_t hw = j->hw;
    const float inv = 1.0f / (float)hw;
    for (int64_t blk = b; blk < e; blk++) {
        const float *x = j->x + blk * 16 * hw;
        float acc[16] = {0};
        for (int64_t p = 0; p < hw; p++)
            for (int c = 0; c < 16; c++) acc[c] += x[p * 16 + c];
        for (int c = 0; c < 16; c++) j->y[blk * 16 + c] = acc[c] * inv;
    }
}

static netrun_status gap_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    netrun_status rc = check_x(args, "GlobalAveragePoolNCHWc");
    if (rc != NETRUN_OK) return rc;
    const netrun_tensor *X = &args->inputs[0];
    if (cpu_count(&args->outputs[0]) != X->dims[0] * X->dims[1])
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "GlobalAveragePoolNCHWc: Y must be [N, C, 1, 1]");
    nchwc_job j = {X->data, args->outputs[0].data, X->dims[2] * X->dims[3], 1};
    int64_t blocks = X->dims[0] * (X->dims[1] / 16);
    if (blocks > 0 && j.hw > 0) cpu_parallel_for(ctx, blocks, 1, gap_range, &j);
    return NETRUN_OK;
}

typedef struct mulch_job {
    const float *x, *s;
    float *y;
    int64_t hw, cb, s_batch; /* cb: channel blocks per image; s_batch: S has N rows (else 1) */
} mulch_job;

static void mulch_range(void *arg, int64_t b, int64_t e) {
    const mulch_job *j = arg;
    for (int64_t blk = b; blk < e; blk++) {
        const float *s = j->s + (j->s_batch ? blk : blk % j->cb) * 16;
        float sc[16]; /* a local copy: the compiler need not fear that Y overwrites S */
        memcpy(sc, s, sizeof sc);
        const float *x = j->x + blk * 16 * j->hw;
        float *y = j->y + blk * 16 * j->hw;
        for (int64_t p = 0; p < j->hw; p++, x += 16, y += 16)
            for (int c = 0; c < 16; c++) y[c] = x[c] * sc[c];
    }
}

static int mulch_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (node->n_inputs != 2 || node->inputs[0].dtype != NETRUN_DTYPE_FLOAT || node->inputs[1].dtype != NETRUN_DTYPE_FLOAT ||
        node->inputs[0].rank != 4 || node->inputs[0].dims[1] % 16) {
        snprintf(reason, size, "MulChannelNCHWc needs 4-D float32 X with C a multiple of 16 and float32 S");
        return 0;
    }
    return 1;
}

static netrun_status mulch_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    if (args->n_inputs != 2 || args->n_outputs != 1)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "MulChannelNCHWc: needs X, S and Y");
    const netrun_tensor *X = &args->inputs[0], *S = &args->inputs[1];
    if (X->rank != 4 || X->dims[1] % 16 || S->rank != 4 || S->dims[1] != X->dims[1] ||
        (S->dims[0] != X->dims[0] && S->dims[0] != 1) || S->dims[2] != 1 || S->dims[3] != 1 ||
        cpu_count(&args->outputs[0]) != cpu_count(X))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "MulChannelNCHWc: X, S, Y do not match");
    mulch_job j = {X->data, S->data, args->outputs[0].data, X->dims[2] * X->dims[3], X->dims[1] / 16,
                   S->dims[0] == X->dims[0] && X->dims[0] > 1};
    int64_t blocks = X->dims[0] * j.cb;
    int64_t grain = j.hw * 16 >= 4096 ? 1 : 4096 / (j.hw * 16 > 0 ? j.hw * 16 : 1) + 1;
    if (blocks > 0 && j.hw > 0) cpu_parallel_for(ctx, blocks, grain, mulch_range, &j);
    return NETRUN_OK;
}

/* ---- the CUDA float16 region pass's internal ops (netrun_ops.h): reference kernels, so that placement
 * can never strand them (the pass puts them on CUDA) ---- */

static int nhwc_supports(const netrun_node_desc *node, char *reason, size_t size) {
    int gap = !strcmp(node->op_type, "GlobalAveragePoolNHWC");
    const netrun_reorder_nhwc_params *p = node->params;
    netrun_dtype want = gap || (p && !p->to_nhwc) ? NETRUN_DTYPE_FLOAT16 : NETRUN_DTYPE_FLOAT;
    if (node->n_inputs != 1 || node->n_outputs != 1 || node->inputs[0].dtype != want || node->inputs[0].rank != 4 ||
        (!gap && (!p || node->params_size < sizeof *p))) {
        snprintf(reason, size, "%s needs one 4-D %s input", node->op_type, want == NETRUN_DTYPE_FLOAT ? "float32" : "float16");
        return 0;
    }
    return 1;
}

static netrun_status reorder_nhwc_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx;
    (void)state;
    const netrun_reorder_nhwc_params *p = args->params;
    if (!p || args->n_inputs != 1 || args->n_outputs != 1 || args->inputs[0].rank != 4 ||
        cpu_count(&args->outputs[0]) != cpu_count(&args->inputs[0]) ||
        args->inputs[0].dtype != (p->to_nhwc ? NETRUN_DTYPE_FLOAT : NETRUN_DTYPE_FLOAT16))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "ReorderNHWC: needs one 4-D X of the direction's dtype and a Y of its size");
    const netrun_tensor *X = &args->inputs[0];
    int64_t n = X->dims[0], c = X->dims[1], hw = X->dims[2] * X->dims[3];
    for (int64_t b = 0; b < n; b++)
        for (int64_t ci = 0; ci < c; ci++)
            for (int64_t q = 0; q < hw; q++) {
                int64_t nchw = (b * c + ci) * hw + q, nhwc = (b * hw + q) * c + ci;
                if (p->to_nhwc)
                    ((uint16_t *)args->outputs[0].data)[nhwc] = nr_float_to_half(((const float *)X->data)[nchw]);
                else
                    ((float *)args->outputs[0].data)[nchw] = nr_half_to_float(((const uint16_t *)X->data)[nhwc]);
            }
    return NETRUN_OK;
}

static netrun_status gap_nhwc_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx;
    (void)state;
    if (args->n_inputs != 1 || args->n_outputs != 1 || args->inputs[0].rank != 4 ||
        args->inputs[0].dtype != NETRUN_DTYPE_FLOAT16 ||
        cpu_count(&args->outputs[0]) != args->inputs[0].dims[0] * args->inputs[0].dims[1])
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "GlobalAveragePoolNHWC: needs a 4-D float16 X and an [N,C,1,1] Y");
    const netrun_tensor *X = &args->inputs[0];
    const uint16_t *x = X->data;
    uint16_t *y = args->outputs[0].data;
    int64_t n = X->dims[0], c = X->dims[1], hw = X->dims[2] * X->dims[3];
    for (int64_t b = 0; b < n; b++)
        for (int64_t ci = 0; ci < c; ci++) {
            float acc = 0;
            for (int64_t q = 0; q < hw; q++) acc += nr_half_to_float(x[(b * hw + q) * c + ci]);
            y[b * c + ci] = nr_float_to_half(hw > 0 ? acc / (float)hw : 0.0f);
        }
    return NETRUN_OK;
}

static int mulch_nhwc_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (node->n_inputs != 2 || node->n_outputs != 1 || node->inputs[0].dtype != NETRUN_DTYPE_FLOAT16 ||
        node->inputs[1].dtype != NETRUN_DTYPE_FLOAT16 || node->inputs[0].rank != 4 || node->inputs[1].rank != 4) {
        snprintf(reason, size, "MulChannelNHWC needs float16 4-D X and S");
        return 0;
    }
    return 1;
}

static netrun_status mulch_nhwc_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx;
    (void)state;
    if (args->n_inputs != 2 || args->n_outputs != 1)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "MulChannelNHWC: needs X, S and Y");
    const netrun_tensor *X = &args->inputs[0], *S = &args->inputs[1];
    if (X->rank != 4 || S->rank != 4 || X->dtype != NETRUN_DTYPE_FLOAT16 || S->dtype != NETRUN_DTYPE_FLOAT16 ||
        S->dims[1] != X->dims[1] || (S->dims[0] != X->dims[0] && S->dims[0] != 1) || S->dims[2] != 1 ||
        S->dims[3] != 1 || cpu_count(&args->outputs[0]) != cpu_count(X))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "MulChannelNHWC: X, S, Y do not match");
    const uint16_t *x = X->data, *sc = S->data;
    uint16_t *y = args->outputs[0].data;
    int64_t n = X->dims[0], c = X->dims[1], hw = X->dims[2] * X->dims[3];
    for (int64_t b = 0; b < n; b++) {
        const uint16_t *sb = sc + (S->dims[0] == 1 ? 0 : b * c);
        for (int64_t q = 0; q < hw; q++)
            for (int64_t ci = 0; ci < c; ci++) {
                int64_t i = (b * hw + q) * c + ci;
                y[i] = nr_float_to_half(nr_half_to_float(x[i]) * nr_half_to_float(sb[ci]));
            }
    }
    return NETRUN_OK;
}

static netrun_status concat_nhwc_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx;
    (void)state;
    const netrun_tensor *Y = &args->outputs[0];
    if (args->n_outputs != 1 || Y->rank != 4 || Y->dtype != NETRUN_DTYPE_FLOAT16)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "ConcatNHWC: needs a 4-D float16 Y");
    int64_t rows = Y->dims[0] * Y->dims[2] * Y->dims[3], ct = Y->dims[1], off = 0;
    for (int i = 0; i < args->n_inputs; i++) {
        const netrun_tensor *X = &args->inputs[i];
        if (X->rank != 4 || X->dtype != NETRUN_DTYPE_FLOAT16 || X->dims[0] * X->dims[2] * X->dims[3] != rows ||
            off + X->dims[1] > ct)
            return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "ConcatNHWC: input %d does not match Y", i);
        for (int64_t r = 0; r < rows; r++)
            memcpy((uint16_t *)Y->data + r * ct + off, (const uint16_t *)X->data + r * X->dims[1], (size_t)X->dims[1] * 2);
        off += X->dims[1];
    }
    if (off != ct) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "ConcatNHWC: channels do not add up");
    return NETRUN_OK;
}

const cpu_op cpu_ops_nchwc[] = {
    {"ConcatNHWC", "com.netrun", NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16), "float16 NHWC inputs on channels (internal, reference)",
     NULL, NULL, concat_nhwc_run, NULL, NULL},
    {"MulChannelNHWC", "com.netrun", NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16),
     "float16 NHWC X, S [N or 1, C, 1, 1] (internal, reference)", mulch_nhwc_supports, NULL, mulch_nhwc_run, NULL, NULL},
    {"ReorderNHWC", "com.netrun", NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16),
     "4-D float32 NCHW <-> float16 NHWC (internal, reference)", nhwc_supports, NULL, reorder_nhwc_run, NULL, NULL},
    {"GlobalAveragePoolNHWC", "com.netrun", NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16),
     "4-D float16 NHWC (internal, reference)", nhwc_supports, NULL, gap_nhwc_run, NULL, NULL},
    {"MulChannelNCHWc", "com.netrun", NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT), "X 4-D nChw16c, S [N or 1, C, 1, 1] (internal)",
     mulch_supports, NULL, mulch_run, NULL, NULL},
    {"ReorderNCHWc", "com.netrun", NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT), "4-D, C % 16 == 0 (internal)",
     nchwc_supports, NULL, reorder_run, NULL, NULL},
    {"GlobalAveragePoolNCHWc", "com.netrun", NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT), "4-D, C % 16 == 0 (internal)",
     nchwc_supports, NULL, gap_run, NULL, NULL},
    {0},
};
