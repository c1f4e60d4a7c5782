/* Conv and ConvTranspose, float32 (float16 with cl_khr_fp16), 1-3 spatial dims (run as 3-D).
 *
 * Conv paths, chosen per node at kernel_create:
 *   1x1 GEMM:       1x1 kernel, stride 1, no pads, group 1: Y[n] = W [M, C] x X[n] [C, P] through CLBlast, all
 *                   images in one strided-batched call; no workspace.
 *   direct:         depthwise (one input channel per group), or any conv whose im2col buffer does not fit the
 *                   workspace cap (min-memory policy, --workspace-limit): our conv_direct kernel, no workspace.
 *   im2col + GEMM:  the rest: per image and group, im2col into the workspace ([Cg*K, P]) then W_g x col.
 * ConvTranspose: per image and group col = W_g^T X_g (CLBlast, trans A) into the workspace, then col2im.
 * Bias, the fused "+ Z" and the fused activation run after, in one pass (ocl_bias_activation). Shapes known only
 * at run time: the workspace need is computed then and a private buffer is grown when the shared one is short. */
#include "opencl_internal.h"

OCL_SOURCE(conv);

/* Must match conv_geom in conv.cl. */
typedef struct conv_geom {
    cl_int C, M, group, Cg, Mg;
    cl_int in[3], out[3], k[3], s[3], d[3], pb[3];
} conv_geom;

enum { PATH_IM2COL = 0, PATH_1X1 = 1, PATH_DIRECT = 2, PATH_COL2IM = 3 };
static const char *const path_names[] = {"im2col + clblast sgemm", "1x1 clblast sgemm", "direct kernel",
                                         "clblast sgemm + col2im"};

typedef struct conv_state {
    int transpose, path, path_fixed;
    netrun_dtype dt;
    size_t ws_limit;           /* the cap the im2col/col buffer must fit (SIZE_MAX = none) */
    cl_kernel k_im2col, k_direct, k_col2im;
    cl_mem scratch;            /* own buffer when the shared workspace is short (run-time shapes) */
    size_t scratch_size;
} conv_state;

static int conv_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_conv_params *p = node->params;
    netrun_dtype t = ocl_main_dtype(node);
    if (t != NETRUN_DTYPE_FLOAT && t != NETRUN_DTYPE_FLOAT16)
        return ocl_refuse(reason, size, "dtype %s not supported by the OpenCL %s kernel", ocl_dtype_name(t),
                          node->op_type);
    if (!p) return ocl_refuse(reason, size, "no params");
    if (p->n_spatial < 1 || p->n_spatial > 3) return ocl_refuse(reason, size, "%d spatial dims", p->n_spatial);
    if (p->src_blocked || p->dst_blocked || p->src_nhwc || p->dst_nhwc)
        return ocl_refuse(reason, size, "blocked or NHWC activations (CPU/CUDA layout passes) not supported");
    for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i].rank >= 0 && node->inputs[i].dtype != t) return ocl_refuse(reason, size, "mixed dtypes");
    if (node->n_inputs < 2 || node->inputs[1].rank != p->n_spatial + 2)
        return ocl_refuse(reason, size, "weights of unknown rank");
    int transpose = !strcmp(node->op_type, "ConvTranspose");
    for (int d = 0; d < p->n_spatial; d++) {
        if (p->pads_begin[d] < 0 || p->pads_end[d] < 0) return ocl_refuse(reason, size, "negative pads");
        if (p->strides[d] < 1 || p->dilations[d] < 1) return ocl_refuse(reason, size, "bad strides or dilations");
        if (p->kernel[d] > 65536 || p->pads_begin[d] > INT32_MAX / 4 || p->strides[d] > 65536 ||
            p->dilations[d] > 65536)
            return ocl_refuse(reason, size, "huge kernel, pads, strides or dilations");
    }
    if (p->group < 1 || p->group > INT32_MAX) return ocl_refuse(reason, size, "bad group");
    if (p->has_sum && transpose) return ocl_refuse(reason, size, "fused sum on ConvTranspose");
    /* activate() (common.cl) knows kinds up to SWISH; a newer kind would silently be the identity */
    if ((int)p->activation.kind < 0 || p->activation.kind > NETRUN_ACT_SWISH)
        return ocl_refuse(reason, size, "fused activation kind %d not implemented", (int)p->activation.kind);
    if (p->has_sum) {
        const netrun_value_desc *z = &node->inputs[node->n_inputs - 1], *y = &node->outputs[0];
        if (z->rank != y->rank) return ocl_refuse(reason, size, "fused sum of another shape");
        for (int i = 0; i < z->rank; i++)
            if (z->dims[i] != y->dims[i]) return ocl_refuse(reason, size, "fused sum of another shape");
    }
    return 1;
}

/* Geometry of the current shapes; 0 when a size is out of the kernels' int range. */
static int make_geom(const netrun_conv_params *p, int transpose, const int64_t *xd, const int64_t *wd,
                     const int64_t *yd, conv_geom *g) {
    int ns = p->n_spatial;
    int64_t C = xd[1], group = p->group;
    int64_t M = transpose ? wd[1] * group : wd[0];
    if (C <= 0 || M <= 0 || C % group || M % group || C > INT32_MAX || M > INT32_MAX) return 0;
    memset(g, 0, sizeof *g);
    g->C = (cl_int)C;
    g->M = (cl_int)M;
    g->group = (cl_int)group;
    g->Cg = (cl_int)(C / group);
    g->Mg = (cl_int)(M / group);
    for (int i = 0; i < 3; i++) {
        int d = i - (3 - ns); /* leading dims of 1 */
        if (d < 0) {
            g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
            g->pb[i] = 0;
            continue;
        }
        if (xd[2 + d] > INT32_MAX || yd[2 + d] > INT32_MAX || wd[2 + d] > INT32_MAX) return 0;
        g->in[i] = (cl_int)xd[2 + d];
        g->out[i] = (cl_int)yd[2 + d];
        g->k[i] = (cl_int)wd[2 + d];
        g->s[i] = (cl_int)p->strides[d];
        g->d[i] = (cl_int)p->dilations[d];
        g->pb[i] = (cl_int)p->pads_begin[d];
    }
    return 1;
}

static size_t kprod(const conv_geom *g) { return (size_t)g->k[0] * g->k[1] * g->k[2]; }
static size_t pin(const conv_geom *g) { return (size_t)g->in[0] * g->in[1] * g->in[2]; }
static size_t pout(const conv_geom *g) { return (size_t)g->out[0] * g->out[1] * g->out[2]; }

/* Bytes of the column buffer of one (image, group). */
static size_t col_bytes(const conv_geom *g, int transpose, netrun_dtype dt) {
    size_t rows = transpose ? (size_t)g->Mg * kprod(g) : (size_t)g->Cg * kprod(g);
    size_t cols = transpose ? pin(g) : pout(g), es = ocl_esize(dt);
    if (cols && rows > SIZE_MAX / cols / es) return SIZE_MAX;
    return rows * cols * es;
}

static int is_1x1(const netrun_conv_params *p, const conv_geom *g) {
    if (g->group != 1) return 0;
    for (int i = 0; i < 3; i++)
        if (g->k[i] != 1 || g->s[i] != 1 || g->pb[i] != 0 || g->in[i] != g->out[i]) return 0;
    for (int d = 0; d < p->n_spatial; d++)
        if (p->pads_end[d] != 0) return 0;
    return 1;
}

static int choose_path(const conv_state *s, const netrun_conv_params *p, const conv_geom *g) {
    if (s->transpose) return PATH_COL2IM;
    if (is_1x1(p, g)) return PATH_1X1;
    if (g->Cg == 1) return PATH_DIRECT; /* depthwise: a window of one channel is too little for a GEMM */
    if (col_bytes(g, 0, s->dt) > s->ws_limit) return PATH_DIRECT;
    return PATH_IM2COL;
}

static int known(const netrun_value_desc *d) { return d->rank >= 0 && ocl_desc_count(d) >= 0; }

static netrun_status conv_create(ocl_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    const netrun_conv_params *p = node->params;
    conv_state *s = ocl_host->alloc(sizeof *s, 16);
    if (!s) return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl conv: out of memory");
    memset(s, 0, sizeof *s);
    s->transpose = !strcmp(node->op_type, "ConvTranspose");
    s->dt = ocl_main_dtype(node);
    s->ws_limit = ctx->config.workspace_limit ? ctx->config.workspace_limit : SIZE_MAX;
    if (ctx->config.workspace_policy == NETRUN_WORKSPACE_MIN_MEMORY && !s->transpose) s->ws_limit = 0;
    /* balanced: the column buffer may take an eighth of the device's memory */
    if (ctx->config.workspace_policy == NETRUN_WORKSPACE_BALANCED && ctx->global_mem / 8 < s->ws_limit)
        s->ws_limit = (size_t)(ctx->global_mem / 8);
    const char *opts = ocl_float_options(s->dt);
    netrun_status st = ocl_kernel_get(ctx, "conv", ocl_src_conv, opts, s->transpose ? "col2im" : "im2col",
                                      s->transpose ? &s->k_col2im : &s->k_im2col);
    if (st == NETRUN_OK && !s->transpose) st = ocl_kernel_get(ctx, "conv", ocl_src_conv, opts, "conv_direct", &s->k_direct);
    if (st != NETRUN_OK) {
        ocl_host->free(s);
        return st;
    }
    conv_geom g;
    if (known(&node->inputs[0]) && known(&node->inputs[1]) && known(&node->outputs[0]) &&
        make_geom(p, s->transpose, node->inputs[0].dims, node->inputs[1].dims, node->outputs[0].dims, &g)) {
        s->path = choose_path(s, p, &g);
        s->path_fixed = 1;
        if (s->path == PATH_IM2COL || s->path == PATH_COL2IM) {
            size_t need = col_bytes(&g, s->transpose, s->dt);
            if (s->transpose && need > s->ws_limit) {
                ocl_host->free(s);
                return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY,
                                       "opencl ConvTranspose: needs %zu bytes of workspace, the cap is %zu", need,
                                       s->ws_limit);
            }
            *workspace = need;
        }
    }
    *state = s;
    return NETRUN_OK;
}

static void conv_destroy(ocl_context *ctx, void *state) {
    conv_state *s = state;
    if (s->scratch) clReleaseMemObject(s->scratch);
    ocl_host->free(s);
}

static void conv_describe(void *state, char *buf, size_t size) {
    const conv_state *s = state;
    snprintf(buf, size, "%s%s", s->path_fixed ? path_names[s->path] : "chosen at run time",
             s->dt == NETRUN_DTYPE_FLOAT16 ? " (fp16)" : "");
}

/* The column buffer for this run: the shared workspace, or our own grown one. */
static netrun_status get_col(ocl_context *ctx, conv_state *s, const netrun_kernel_args *args, size_t need,
                             cl_mem *out) {
    if (need <= args->workspace_size && ocl_workspace_mem(args)) {
        *out = ocl_workspace_mem(args);
        return NETRUN_OK;
    }
    if (need > s->scratch_size) {
        if (s->scratch) clReleaseMemObject(s->scratch);
        s->scratch = NULL;
        s->scratch_size = 0;
        netrun_status st = ocl_temp_alloc(ctx, need, &s->scratch);
        if (st != NETRUN_OK) return st;
        s->scratch_size = need;
    }
    *out = s->scratch;
    return NETRUN_OK;
}

static netrun_status conv_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    conv_state *s = state;
    const netrun_conv_params *p = args->params;
    const netrun_tensor *X = &args->inputs[0], *W = &args->inputs[1];
    const netrun_tensor *B = p->has_bias && args->n_inputs > 2 && args->inputs[2].rank >= 0 ? &args->inputs[2] : NULL;
    const netrun_tensor *Z = p->has_sum ? &args->inputs[args->n_inputs - 1] : NULL;
    netrun_tensor *Y = &args->outputs[0];
    netrun_dtype dt = Y->dtype;
    size_t ny = (size_t)ocl_count(Y);
    if (!ny) return NETRUN_OK;
    if (dt != s->dt || X->dtype != dt || W->dtype != dt) { /* guessed descs (Loop/Scan bodies): rebuild for these */
        const char *opts = ocl_float_options(dt);
        netrun_status st0 = dt == NETRUN_DTYPE_FLOAT || dt == NETRUN_DTYPE_FLOAT16
                                ? NETRUN_OK
                                : ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl conv: dtype %s at run time",
                                                  ocl_dtype_name(dt));
        if (st0 == NETRUN_OK && (X->dtype != dt || W->dtype != dt))
            st0 = ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl conv: mixed dtypes at run time");
        if (st0 == NETRUN_OK)
            st0 = ocl_kernel_get(ctx, "conv", ocl_src_conv, opts, s->transpose ? "col2im" : "im2col",
                                 s->transpose ? &s->k_col2im : &s->k_im2col);
        if (st0 == NETRUN_OK && !s->transpose)
            st0 = ocl_kernel_get(ctx, "conv", ocl_src_conv, opts, "conv_direct", &s->k_direct);
        if (st0 != NETRUN_OK) return st0;
        s->dt = dt;
    }
    conv_geom g;
    if (!make_geom(p, s->transpose, X->dims, W->dims, Y->dims, &g))
        return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl %s: sizes beyond the kernels' 32-bit range",
                               s->transpose ? "ConvTranspose" : "Conv");
    int path = s->path_fixed ? s->path : choose_path(s, p, &g);
    size_t N = (size_t)X->dims[0], K = kprod(&g), P = pout(&g), Pi = pin(&g);
    netrun_status st = NETRUN_OK;
    cl_mem x = ocl_mem(X), w = ocl_mem(W), y = ocl_mem(Y);
    size_t xo = ocl_eoff(X), wo = ocl_eoff(W), yo = ocl_eoff(Y);
    if (path == PATH_1X1) {
        st = ocl_gemm_batched(ctx, dt, 0, 0, (size_t)g.M, P, (size_t)g.C, 1.0f, w, wo, (size_t)g.C, 0, x, xo, P,
                              (size_t)g.C * P, 0.0f, y, yo, P, (size_t)g.M * P, N);
    } else if (path == PATH_DIRECT) {
        ocl_arg a[] = {OCL_MEM(X), OCL_ULONG(xo), OCL_MEM(W), OCL_ULONG(wo), OCL_MEM(Y), OCL_ULONG(yo),
                       OCL_BYTES(&g, sizeof g), OCL_ULONG(ny)};
        st = ocl_launch1d(ctx, s->k_direct, "Conv direct", ny, OCL_NARGS(a), a);
    } else if (path == PATH_IM2COL) {
        size_t rows = (size_t)g.Cg * K, total = rows * P;
        cl_mem col;
        if ((st = get_col(ctx, s, args, col_bytes(&g, 0, dt), &col)) != NETRUN_OK) return st;
        for (size_t n = 0; n < N && st == NETRUN_OK; n++)
            for (int gr = 0; gr < g.group && st == NETRUN_OK; gr++) {
                ocl_arg a[] = {OCL_MEM(X), OCL_ULONG(xo), OCL_CLMEM(col), OCL_ULONG(0), OCL_BYTES(&g, sizeof g),
                               OCL_INT(n), OCL_INT(gr), OCL_ULONG(total)};
                st = ocl_launch1d(ctx, s->k_im2col, "Conv im2col", total, OCL_NARGS(a), a);
                if (st == NETRUN_OK)
                    st = ocl_gemm(ctx, dt, 0, 0, (size_t)g.Mg, P, rows, 1.0f, w, wo + (size_t)gr * g.Mg * rows, rows,
                                  col, 0, P, 0.0f, y, yo + (n * g.M + (size_t)gr * g.Mg) * P, P);
            }
    } else { /* ConvTranspose */
        size_t rows = (size_t)g.Mg * K, total = (size_t)g.Mg * P;
        cl_mem col;
        if ((st = get_col(ctx, s, args, col_bytes(&g, 1, dt), &col)) != NETRUN_OK) return st;
        for (size_t n = 0; n < N && st == NETRUN_OK; n++)
            for (int gr = 0; gr < g.group && st == NETRUN_OK; gr++) {
                st = ocl_gemm(ctx, dt, 1, 0, rows, Pi, (size_t)g.Cg, 1.0f, w, wo + (size_t)gr * g.Cg * rows, rows, x,
                              xo + (n * g.C + (size_t)gr * g.Cg) * Pi, Pi, 0.0f, col, 0, Pi);
                if (st != NETRUN_OK) break;
                ocl_arg a[] = {OCL_CLMEM(col), OCL_ULONG(0), OCL_MEM(Y), OCL_ULONG(yo), OCL_BYTES(&g, sizeof g),
                               OCL_INT(n), OCL_INT(gr), OCL_ULONG(total)};
                st = ocl_launch1d(ctx, s->k_col2im, "ConvTranspose col2im", total, OCL_NARGS(a), a);
            }
    }
    if (st != NETRUN_OK) return st;
    return ocl_bias_activation(ctx, dt, y, yo, B ? ocl_mem(B) : NULL, B ? ocl_eoff(B) : 0, Z ? ocl_mem(Z) : NULL,
                               Z ? ocl_eoff(Z) : 0, ny, (size_t)g.M, P, &p->activation);
}

const ocl_op ocl_ops_conv[] = {
    {"Conv", OCL_FLOAT_DTYPES, "1-3 spatial dims; im2col + CLBlast, 1x1 GEMM, direct depthwise", conv_supports,
     conv_create, conv_run, conv_destroy, conv_describe},
    {"ConvTranspose", OCL_FLOAT_DTYPES, "1-3 spatial dims; CLBlast + col2im", conv_supports, conv_create, conv_run,
     conv_destroy, conv_describe},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
