/* OpenCL kernels: data movement. Transpose, Slice, Tile, Concat, Split, DepthToSpace and SpaceToDepth are
 * all one strided-copy kernel (dm_copy_nd) with different strides; Pad, Gather, GatherElements, GatherND,
 * ScatterElements / ScatterND (no reduction) and Trilu have their own. They move elements by size
 * (data_movement.cl built per element size), so every fixed-size dtype works; Pad converts its fill value to
 * the dtype's bits here. */
#include <math.h>

#include "opencl_internal.h"
#include "oclops_shared.h"

OCL_SOURCE(data_movement);
OCL_SOURCE(elementwise);


enum { DM_TRANSPOSE, DM_SLICE, DM_TILE, DM_CONCAT, DM_SPLIT, DM_D2S, DM_S2D, DM_PAD, DM_GATHER, DM_GATHER_ELEMENTS,
       DM_GATHER_ND, DM_SCATTER_ELEMENTS, DM_SCATTER_ND, DM_TRILU, DM_ONEHOT,
       DM_CENTER_CROP_PAD };

typedef struct dm_state {
    int kind;
    int red;     /* scatter reduction (netrun_scatter_reduction): typed kernels of elementwise.cl when not none */
    cl_kernel k;
    netrun_dtype t[3]; /* dtypes of inputs 0..2 the kernel is built for */
    cl_mem flag; /* index out of range (gathers, scatters) */
} dm_state;

static void strides_of(int rank, const int64_t *dims, int64_t *s) {
    int64_t v = 1;
    for (int i = rank - 1; i >= 0; i--) {
        s[i] = v;
        v *= dims[i];
    }
}

/* y[base_y + sum c_d ys_d] = x[base_x + sum (c_d mod xmod_d) xs_d] over dims (xmod, ys may be NULL: no
 * modulo, y contiguous over dims). */
netrun_status oclops_copy_nd(ocl_context *ctx, cl_kernel k, const netrun_tensor *x, int64_t base_x, netrun_tensor *y,
                             int64_t base_y, int rank, const int64_t *dims, const int64_t *xs, const int64_t *xmod,
                             const int64_t *ys, const char *what) {
    oclops_meta m;
    memset(&m, 0, sizeof m);
    if (rank < 0 || rank > NETRUN_MAX_RANK)
        return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl %s: rank %d out of range", what, rank);
    int64_t n = 1;
    m.rank = rank;
    for (int d = 0; d < rank; d++) {
        m.dims[d] = dims[d];
        m.s0[d] = xs[d];
        m.s1[d] = xmod ? xmod[d] : 0;
        n *= dims[d];
    }
    if (ys) memcpy(m.s2, ys, sizeof(int64_t) * (size_t)rank);
    else strides_of(rank, dims, m.s2);
    if (n <= 0) return NETRUN_OK;
    ocl_arg a[] = {OCL_TENSOR(x), OCL_TENSOR(y), OCL_LONG(n), OCL_LONG(base_x), OCL_LONG(base_y),
                   OCL_CONST(&m, sizeof m)};
    return ocl_launch1d(ctx, k, what, (size_t)n, (int)(sizeof a / sizeof a[0]), a);
}

/* float32 -> float16 bits, round to nearest even (Pad's fill value). */
static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to infinity */
    if (ax < 0x38800000u) {                                    /* subnormal or zero */
        float a;
        memcpy(&a, &ax, 4);
        return (uint16_t)(sign | (uint32_t)rintf(a * 16777216.0f));
    }
    uint32_t m = ax + 0xc8000fffu + ((ax >> 13) & 1u); /* rebias exponent (-112 << 23) and round to even */
    return (uint16_t)(sign | (m >> 13));
}

/* The bits of v converted to dtype t (the low bytes of the result), for fills and pads. */
uint64_t oclops_value_bits(netrun_dtype t, double v) {
    uint64_t b = 0;
    switch (t) {
    case NETRUN_DTYPE_FLOAT: { float f = (float)v; uint32_t u; memcpy(&u, &f, 4); b = u; break; }
    case NETRUN_DTYPE_DOUBLE: memcpy(&b, &v, 8); break;
    case NETRUN_DTYPE_FLOAT16: b = f32_to_f16((float)v); break;
    case NETRUN_DTYPE_BOOL: b = v != 0; break;
    case NETRUN_DTYPE_UINT64: b = v >= 0 && v < 18446744073709551616.0 ? (uint64_t)v : 0; break;
    default: { /* integers: through int64 (saturated), then truncated to the element's size by the kernel */
        int64_t i = isnan(v) ? 0 : v >= 9.2233720368547758e18 ? INT64_MAX : v <= -9.2233720368547758e18 ? INT64_MIN : (int64_t)v;
        b = (uint64_t)i;
        break;
    }
    }
    return b;
}

static int index_dtype_ok(netrun_dtype t) { return t == NETRUN_DTYPE_INT32 || t == NETRUN_DTYPE_INT64; }

static int dm_kind(const char *op) {
    static const char *names[] = {"Transpose", "Slice", "Tile", "Concat", "Split", "DepthToSpace", "SpaceToDepth",
                                  "Pad", "Gather", "GatherElements", "GatherND", "ScatterElements", "ScatterND",
                                  "Trilu", "OneHot", "CenterCropPad"};
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (!strcmp(op, names[i])) return i;
    return -1;
}

static int dm_supports(const netrun_node_desc *node, char *reason, size_t size) {
    int kind = dm_kind(node->op_type);
    if (kind < 0) return ocl_refuse(reason, size, "no OpenCL kernel for %s", node->op_type);
    if (node->n_inputs < 1) return ocl_refuse(reason, size, "%s without inputs", node->op_type);
    netrun_dtype t = node->inputs[0].dtype;
    if (!ocl_esize(t)) return ocl_refuse(reason, size, "dtype %s", ocl_dtype_name(t));
    if (kind == DM_PAD && t == NETRUN_DTYPE_BFLOAT16) return ocl_refuse(reason, size, "Pad: bfloat16 fill value");
    if (kind == DM_GATHER || kind == DM_GATHER_ELEMENTS || kind == DM_GATHER_ND || kind == DM_SCATTER_ELEMENTS ||
        kind == DM_SCATTER_ND) {
        if (node->n_inputs < 2 || !index_dtype_ok(node->inputs[1].dtype))
            return ocl_refuse(reason, size, "indices not int32/int64");
    }
    if (kind == DM_SCATTER_ELEMENTS || kind == DM_SCATTER_ND) {
        const netrun_scatter_params *p = node->params;
        char o[128];
        if (node->n_inputs < 3 || node->inputs[2].dtype != t) return ocl_refuse(reason, size, "updates of another dtype");
        if (p && p->reduction != NETRUN_SCATTER_NONE &&
            (t == NETRUN_DTYPE_BOOL || t == NETRUN_DTYPE_BFLOAT16 || !oclops_type_options(t, o, sizeof o)))
            return ocl_refuse(reason, size, "scatter reduction on %s", ocl_dtype_name(t));
    }
    if (kind == DM_ONEHOT) {
        char o[128];
        if (node->n_inputs < 3 || !oclops_type_options(t, o, sizeof o) || t == NETRUN_DTYPE_BOOL ||
            t == NETRUN_DTYPE_BFLOAT16)
            return ocl_refuse(reason, size, "OneHot indices of %s", ocl_dtype_name(t));
        if (!ocl_esize(node->inputs[2].dtype)) return ocl_refuse(reason, size, "OneHot values of %s", ocl_dtype_name(node->inputs[2].dtype));
        if (!node->params) return ocl_refuse(reason, size, "no params");
    }
    if ((kind == DM_D2S || kind == DM_S2D) && node->inputs[0].rank != 4) return ocl_refuse(reason, size, "4-D only");
    if (kind == DM_TRILU && node->inputs[0].rank < 2) return ocl_refuse(reason, size, "rank below 2");
    return 1;
}

static void dm_destroy(ocl_context *ctx, void *state) {
    (void)ctx;
    dm_state *s = state;
    if (!s) return;
    if (s->flag) clReleaseMemObject(s->flag);
    ocl_host->free(s);
}

/* Get the kernel for dtypes t0 (input 0), t1 (input 1: indices), t2 (input 2: OneHot values). Descs at kernel
 * creation may carry best guesses for nodes inferred at run time, so runs compare and rebuild when needed. */
static netrun_status dm_kernels(ocl_context *ctx, dm_state *s, netrun_dtype t0, netrun_dtype t1, netrun_dtype t2) {
    int kind = s->kind;
    char opts[192];
    if (!oclops_bytes_options(ocl_esize(t0), opts, sizeof opts))
        return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl data movement: dtype %s", ocl_dtype_name(t0));
    const char *kname = "dm_copy_nd";
    int i64 = t1 == NETRUN_DTYPE_INT64;
    if (kind >= DM_GATHER && kind <= DM_SCATTER_ND && !index_dtype_ok(t1))
        return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl: indices of %s", ocl_dtype_name(t1));
    switch (kind) {
    case DM_PAD: case DM_CENTER_CROP_PAD: kname = "dm_pad"; break;
    case DM_TRILU: kname = "dm_trilu"; break;
    case DM_GATHER: kname = i64 ? "dm_gather_i64" : "dm_gather_i32"; break;
    case DM_GATHER_ELEMENTS: kname = i64 ? "dm_gather_elements_i64" : "dm_gather_elements_i32"; break;
    case DM_GATHER_ND: kname = i64 ? "dm_gather_nd_i64" : "dm_gather_nd_i32"; break;
    case DM_SCATTER_ELEMENTS: kname = i64 ? "dm_scatter_elements_i64" : "dm_scatter_elements_i32"; break;
    case DM_SCATTER_ND: kname = i64 ? "dm_scatter_nd_i64" : "dm_scatter_nd_i32"; break;
    default: break;
    }
    const char *src = ocl_src_data_movement, *sname = "data_movement";
    if (s->red) { /* scatter with a reduction: typed kernels */
        kname = kind == DM_SCATTER_ND ? (i64 ? "ew_scatter_nd_i64" : "ew_scatter_nd_i32")
                                      : (i64 ? "ew_scatter_elements_i64" : "ew_scatter_elements_i32");
        src = ocl_src_elementwise;
        sname = "elementwise";
        if (t0 == NETRUN_DTYPE_BOOL || t0 == NETRUN_DTYPE_BFLOAT16 || !oclops_type_options(t0, opts, sizeof opts))
            return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl scatter reduction on %s", ocl_dtype_name(t0));
    }
    if (kind == DM_ONEHOT) { /* typed by the indices, values moved by size */
        char e[32];
        if (t0 == NETRUN_DTYPE_BOOL || t0 == NETRUN_DTYPE_BFLOAT16 || !oclops_type_options(t0, opts, sizeof opts - 32) ||
            !oclops_bytes_options(ocl_esize(t2), e, sizeof e))
            return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl OneHot: indices %s, values %s", ocl_dtype_name(t0),
                                   ocl_dtype_name(t2));
        strcat(opts, " ");
        strcat(opts, e);
        kname = "ew_onehot";
        src = ocl_src_elementwise;
        sname = "elementwise";
    }
    netrun_status st = ocl_kernel_get(ctx, sname, src, opts, kname, &s->k);
    if (st == NETRUN_OK) {
        s->t[0] = t0;
        s->t[1] = t1;
        s->t[2] = t2;
    }
    return st;
}

static netrun_dtype in_dtype(int n, const netrun_dtype *d, int i) { return i < n ? d[i] : NETRUN_DTYPE_UNDEFINED; }

static netrun_status dm_create(ocl_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    (void)workspace;
    int kind = dm_kind(node->op_type);
    if (kind < 0) return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "no OpenCL kernel for %s", node->op_type);
    dm_state *s = ocl_host->alloc(sizeof *s, 16);
    if (!s) return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl %s: out of memory", node->op_type);
    memset(s, 0, sizeof *s);
    s->kind = kind;
    const netrun_scatter_params *sp = node->params;
    if ((kind == DM_SCATTER_ELEMENTS || kind == DM_SCATTER_ND) && sp && sp->reduction != NETRUN_SCATTER_NONE)
        s->red = sp->reduction;
    netrun_dtype d[3];
    for (int i = 0; i < 3; i++) d[i] = i < node->n_inputs ? node->inputs[i].dtype : NETRUN_DTYPE_UNDEFINED;
    netrun_status st = dm_kernels(ctx, s, d[0], in_dtype(node->n_inputs, d, 1), in_dtype(node->n_inputs, d, 2));
    if (st == NETRUN_OK && kind >= DM_GATHER && kind <= DM_SCATTER_ND) st = oclops_flag_create(ctx, &s->flag);
    if (st != NETRUN_OK) {
        dm_destroy(ctx, s);
        return st;
    }
    *state = s;
    return NETRUN_OK;
}

static netrun_status run_transpose(ocl_context *ctx, dm_state *s, const netrun_kernel_args *args) {
    const netrun_transpose_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    int64_t xs[NETRUN_MAX_RANK], st[NETRUN_MAX_RANK];
    strides_of(x->rank, x->dims, xs);
    if (y->rank != x->rank) return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl Transpose: rank mismatch");
    for (int i = 0; i < y->rank; i++) {
        int a = p ? p->perm[i] : y->rank - 1 - i;
        if (a < 0 || a >= x->rank) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl Transpose: bad perm");
        st[i] = xs[a];
    }
    return oclops_copy_nd(ctx, s->k, x, 0, y, 0, y->rank, y->dims, st, NULL, NULL, "Transpose");
}

static netrun_status run_slice(ocl_context *ctx, dm_state *s, const netrun_kernel_args *args) {
    const netrun_slice_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (!p || y->rank != x->rank) return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl Slice: bad params");
    int64_t xs[NETRUN_MAX_RANK], st[NETRUN_MAX_RANK], base = 0;
    strides_of(x->rank, x->dims, xs);
    for (int i = 0; i < x->rank; i++) {
        if (y->dims[i] > 0) {
            int64_t last = p->start[i] + (y->dims[i] - 1) * p->step[i];
            if (p->start[i] < 0 || p->start[i] >= x->dims[i] || last < 0 || last >= x->dims[i])
                return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl Slice: dim %d out of range", i);
        }
        base += p->start[i] * xs[i];
        st[i] = p->step[i] * xs[i];
    }
    return oclops_copy_nd(ctx, s->k, x, base, y, 0, y->rank, y->dims, st, NULL, NULL, "Slice");
}

static netrun_status run_tile(ocl_context *ctx, dm_state *s, const netrun_kernel_args *args) {
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (y->rank != x->rank) return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl Tile: rank mismatch");
    if (ocl_count(x) == 0) return NETRUN_OK;
    int64_t xs[NETRUN_MAX_RANK];
    strides_of(x->rank, x->dims, xs);
    return oclops_copy_nd(ctx, s->k, x, 0, y, 0, y->rank, y->dims, xs, x->dims, NULL, "Tile");
}

/* Concat / Split: each input (output) is a 2-D block [outer, len * inner] of the joined tensor. */
static netrun_status run_concat_split(ocl_context *ctx, dm_state *s, const netrun_kernel_args *args, int split) {
    const netrun_tensor *whole = split ? &args->inputs[0] : &args->outputs[0];
    int axis;
    const netrun_split_params *sp = split ? args->params : NULL;
    const netrun_axis_params *ap = split ? NULL : args->params;
    axis = split ? (sp ? sp->axis : 0) : (ap ? ap->axis : 0);
    if (axis < 0 || axis >= whole->rank) return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl Concat/Split: bad axis");
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= whole->dims[i];
    for (int i = axis + 1; i < whole->rank; i++) inner *= whole->dims[i];
    int64_t row = whole->dims[axis] * inner, at = 0;
    int n = split ? args->n_outputs : args->n_inputs;
    for (int k = 0; k < n; k++) {
        const netrun_tensor *part = split ? &args->outputs[k] : &args->inputs[k];
        int64_t len = part->rank > axis ? part->dims[axis] : 0;
        if (split && sp && sp->sizes && k < sp->n_outputs) len = sp->sizes[k];
        if (part->rank < 0) { /* an absent output of Split still takes its share */
            at += len * inner;
            continue;
        }
        int64_t w = len * inner, dims[2] = {outer, w}, ps[2] = {w, 1}, ws[2] = {row, 1};
        if (at + w > row) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl Concat/Split: parts exceed the whole");
        netrun_status st;
        if (split)
            st = oclops_copy_nd(ctx, s->k, whole, at, &args->outputs[k], 0, 2, dims, ws, NULL, ps, "Split");
        else
            st = oclops_copy_nd(ctx, s->k, part, 0, &args->outputs[0], at, 2, dims, ps, NULL, ws, "Concat");
        if (st != NETRUN_OK) return st;
        at += w;
    }
    return NETRUN_OK;
}

/* DepthToSpace / SpaceToDepth as 6-D transposes of the 4-D input. */
static netrun_status run_d2s(ocl_context *ctx, dm_state *s, const netrun_kernel_args *args) {
    const netrun_space_depth_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (x->rank != 4 || !p || p->blocksize < 1)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl DepthToSpace: 4-D input and blocksize needed");
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], b = p->blocksize;
    int64_t dims[6], st[6];
    if (s->kind == DM_D2S) { /* y [N, C/b^2, H, b, W, b] */
        int64_t c2 = C / (b * b);
        int64_t d[6] = {N, c2, H, b, W, b};
        int64_t crd[6] = {C * H * W, b * b * H * W, W, b * H * W, 1, H * W};
        int64_t dcr[6] = {C * H * W, H * W, W, b * c2 * H * W, 1, c2 * H * W};
        memcpy(dims, d, sizeof d);
        memcpy(st, p->crd ? crd : dcr, sizeof st);
    } else if (!p->crd) { /* y [N, b, b, C, H/b, W/b] */
        int64_t d[6] = {N, b, b, C, H / b, W / b};
        int64_t t[6] = {C * H * W, W, 1, H * W, b * W, b};
        memcpy(dims, d, sizeof d);
        memcpy(st, t, sizeof st);
    } else { /* CRD (opset 28): y [N, C, b, b, H/b, W/b] */
        int64_t d[6] = {N, C, b, b, H / b, W / b};
        int64_t t[6] = {C * H * W, H * W, W, 1, b * W, b};
        memcpy(dims, d, sizeof d);
        memcpy(st, t, sizeof st);
    }
    return oclops_copy_nd(ctx, s->k, x, 0, y, 0, 6, dims, st, NULL, NULL, s->kind == DM_D2S ? "DepthToSpace" : "SpaceToDepth");
}

static netrun_status run_pad(ocl_context *ctx, dm_state *s, const netrun_kernel_args *args) {
    const netrun_pad_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    int64_t n = ocl_count(y);
    if (!p) return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl Pad: no params");
    if (n == 0) return NETRUN_OK;
    if (ocl_count(x) == 0 && p->mode != NETRUN_PAD_CONSTANT)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl Pad: cannot pad an empty tensor in this mode");
    oclops_meta m;
    memset(&m, 0, sizeof m);
    m.rank = y->rank;
    for (int d = 0; d < y->rank; d++) {
        m.dims[d] = y->dims[d];
        m.s0[d] = x->dims[d];
        m.s1[d] = p->pads_begin[d];
    }
    ocl_arg a[] = {OCL_TENSOR(x), OCL_TENSOR(y), OCL_LONG(n), OCL_INT((int)p->mode),
                   OCL_ULONG(oclops_value_bits(x->dtype, p->value)), OCL_CONST(&m, sizeof m)};
    return ocl_launch1d(ctx, s->k, "Pad", (size_t)n, (int)(sizeof a / sizeof a[0]), a);
}

/* CenterCropPad: a constant zero Pad whose begin pads are minus the crop offsets. */
static netrun_status run_center_crop_pad(ocl_context *ctx, dm_state *s, const netrun_kernel_args *args) {
    const netrun_center_crop_pad_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    int64_t n = ocl_count(y);
    if (!p || p->rank != x->rank || y->rank != x->rank)
        return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl CenterCropPad: bad params");
    if (n == 0) return NETRUN_OK;
    oclops_meta m;
    memset(&m, 0, sizeof m);
    m.rank = y->rank;
    for (int d = 0; d < y->rank; d++) {
        m.dims[d] = y->dims[d];
        m.s0[d] = x->dims[d];
        m.s1[d] = -p->offset[d];
    }
    ocl_arg a[] = {OCL_TENSOR(x), OCL_TENSOR(y), OCL_LONG(n), OCL_INT(0), OCL_ULONG(0), OCL_CONST(&m, sizeof m)};
    return ocl_launch1d(ctx, s->k, "CenterCropPad", (size_t)n, (int)(sizeof a / sizeof a[0]), a);
}

static netrun_status run_trilu(ocl_context *ctx, dm_state *s, const netrun_kernel_args *args) {
    const netrun_trilu_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    int64_t n = ocl_count(y);
    if (n == 0) return NETRUN_OK;
    if (x->rank < 2) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl Trilu: rank below 2");
    ocl_arg a[] = {OCL_TENSOR(x), OCL_TENSOR(y), OCL_LONG(n), OCL_LONG(x->dims[x->rank - 2]),
                   OCL_LONG(x->dims[x->rank - 1]), OCL_LONG(p ? p->k : 0), OCL_INT(p ? p->upper : 1)};
    return ocl_launch1d(ctx, s->k, "Trilu", (size_t)n, (int)(sizeof a / sizeof a[0]), a);
}

static netrun_status run_gather(ocl_context *ctx, dm_state *s, const netrun_kernel_args *args) {
    const netrun_axis_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0], *idx = &args->inputs[1];
    netrun_tensor *y = &args->outputs[0];
    int64_t n = ocl_count(y);
    if (n == 0) return NETRUN_OK;
    int axis = p ? p->axis : 0;
    if (axis < 0 || axis >= x->rank) return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl Gather: bad axis");
    int64_t inner = 1;
    for (int i = axis + 1; i < x->rank; i++) inner *= x->dims[i];
    ocl_arg a[] = {OCL_TENSOR(x), OCL_TENSOR(idx), OCL_TENSOR(y), OCL_LONG(n), OCL_LONG(ocl_count(idx)),
                   OCL_LONG(x->dims[axis]), OCL_LONG(inner), OCL_CLMEM(s->flag)};
    netrun_status st = ocl_launch1d(ctx, s->k, "Gather", (size_t)n, (int)(sizeof a / sizeof a[0]), a);
    return st != NETRUN_OK ? st : oclops_flag_check(ctx, s->flag, "Gather", "index out of range");
}

static netrun_status run_gather_elements(ocl_context *ctx, dm_state *s, const netrun_kernel_args *args) {
    const netrun_axis_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0], *idx = &args->inputs[1];
    netrun_tensor *y = &args->outputs[0];
    int64_t n = ocl_count(y);
    if (n == 0) return NETRUN_OK;
    int axis = p ? p->axis : 0;
    if (axis < 0 || axis >= x->rank || idx->rank != x->rank)
        return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl GatherElements: bad axis or rank");
    oclops_meta m;
    memset(&m, 0, sizeof m);
    m.rank = idx->rank;
    memcpy(m.dims, idx->dims, sizeof(int64_t) * (size_t)idx->rank);
    strides_of(x->rank, x->dims, m.s0);
    ocl_arg a[] = {OCL_TENSOR(x), OCL_TENSOR(idx), OCL_TENSOR(y), OCL_LONG(n), OCL_INT(axis),
                   OCL_LONG(x->dims[axis]), OCL_CONST(&m, sizeof m), OCL_CLMEM(s->flag)};
    netrun_status st = ocl_launch1d(ctx, s->k, "GatherElements", (size_t)n, (int)(sizeof a / sizeof a[0]), a);
    return st != NETRUN_OK ? st : oclops_flag_check(ctx, s->flag, "GatherElements", "index out of range");
}

static netrun_status run_gather_nd(ocl_context *ctx, dm_state *s, const netrun_kernel_args *args) {
    const netrun_axis_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0], *idx = &args->inputs[1];
    netrun_tensor *y = &args->outputs[0];
    int64_t n = ocl_count(y);
    if (n == 0) return NETRUN_OK;
    int bd = p ? p->axis : 0;
    if (idx->rank < 1) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl GatherND: scalar indices");
    int64_t q = idx->dims[idx->rank - 1];
    if (bd < 0 || q < 0 || bd + q > x->rank || bd >= idx->rank)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl GatherND: batch_dims %d, tuples of %lld", bd, (long long)q);
    int64_t xs[NETRUN_MAX_RANK], batches = 1, slice = 1;
    strides_of(x->rank, x->dims, xs);
    for (int i = 0; i < bd; i++) batches *= x->dims[i];
    for (int i = bd + (int)q; i < x->rank; i++) slice *= x->dims[i];
    int64_t tuples = 1;
    for (int i = 0; i < idx->rank - 1; i++) tuples *= idx->dims[i];
    int64_t bstride = bd ? xs[bd - 1] : 0;
    int64_t nper = batches ? tuples / batches : 1;
    if (nper < 1) nper = 1;
    oclops_meta m;
    memset(&m, 0, sizeof m);
    m.rank = q;
    for (int d = 0; d < q; d++) {
        m.dims[d] = x->dims[bd + d];
        m.s0[d] = xs[bd + d];
    }
    ocl_arg a[] = {OCL_TENSOR(x), OCL_TENSOR(idx), OCL_TENSOR(y), OCL_LONG(n), OCL_LONG(q), OCL_LONG(slice),
                   OCL_LONG(bstride), OCL_LONG(nper), OCL_CONST(&m, sizeof m), OCL_CLMEM(s->flag)};
    netrun_status st = ocl_launch1d(ctx, s->k, "GatherND", (size_t)n, (int)(sizeof a / sizeof a[0]), a);
    return st != NETRUN_OK ? st : oclops_flag_check(ctx, s->flag, "GatherND", "index out of range");
}

static netrun_status run_scatter(ocl_context *ctx, dm_state *s, const netrun_kernel_args *args) {
    const netrun_tensor *x = &args->inputs[0], *idx = &args->inputs[1], *u = &args->inputs[2];
    netrun_tensor *y = &args->outputs[0];
    const char *what = s->kind == DM_SCATTER_ND ? "ScatterND" : "ScatterElements";
    size_t bytes = (size_t)ocl_count(x) * ocl_esize(x->dtype);
    if (bytes > y->nbytes) return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl %s: output too small", what);
    netrun_status st = NETRUN_OK;
    if (bytes && (ocl_mem(x) != ocl_mem(y) || x->offset != y->offset))
        st = ocl_copy(ctx, ocl_mem(y), y->offset, ocl_mem(x), x->offset, bytes);
    int64_t n = ocl_count(u);
    if (st != NETRUN_OK || n == 0) return st;
    int64_t xs[NETRUN_MAX_RANK];
    strides_of(x->rank, x->dims, xs);
    oclops_meta m;
    memset(&m, 0, sizeof m);
    if (s->kind == DM_SCATTER_ND) {
        if (idx->rank < 1) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl ScatterND: scalar indices");
        int64_t q = idx->dims[idx->rank - 1], slice = 1;
        if (q < 1 || q > x->rank) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl ScatterND: tuples of %lld", (long long)q);
        for (int i = (int)q; i < x->rank; i++) slice *= x->dims[i];
        m.rank = q;
        for (int d = 0; d < q; d++) {
            m.dims[d] = x->dims[d];
            m.s0[d] = xs[d];
        }
        if (s->red) { /* a work-item per slice element, tuples in order */
            ocl_arg a[] = {OCL_TENSOR(idx), OCL_TENSOR(u), OCL_TENSOR(y), OCL_LONG(n / slice), OCL_LONG(q),
                           OCL_LONG(slice), OCL_INT(s->red), OCL_CONST(&m, sizeof m), OCL_CLMEM(s->flag)};
            st = ocl_launch1d(ctx, s->k, what, (size_t)slice, (int)(sizeof a / sizeof a[0]), a);
        } else {
            ocl_arg a[] = {OCL_TENSOR(idx), OCL_TENSOR(u), OCL_TENSOR(y), OCL_LONG(n), OCL_LONG(q), OCL_LONG(slice),
                           OCL_CONST(&m, sizeof m), OCL_CLMEM(s->flag)};
            st = ocl_launch1d(ctx, s->k, what, (size_t)n, (int)(sizeof a / sizeof a[0]), a);
        }
    } else {
        const netrun_scatter_params *p = args->params;
        int axis = p ? p->axis : 0;
        if (axis < 0 || axis >= x->rank || idx->rank != x->rank)
            return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl ScatterElements: bad axis or rank");
        m.rank = idx->rank;
        memcpy(m.dims, idx->dims, sizeof(int64_t) * (size_t)idx->rank);
        memcpy(m.s0, xs, sizeof xs);
        if (s->red) { /* a work-item per update position off the axis, the axis walked in order */
            strides_of(u->rank, u->dims, m.s1);
            int64_t nwork = idx->dims[axis] ? n / idx->dims[axis] : 0;
            if (!nwork) return NETRUN_OK;
            ocl_arg a[] = {OCL_TENSOR(idx), OCL_TENSOR(u), OCL_TENSOR(y), OCL_LONG(nwork), OCL_INT(axis),
                           OCL_LONG(x->dims[axis]), OCL_INT(s->red), OCL_CONST(&m, sizeof m), OCL_CLMEM(s->flag)};
            st = ocl_launch1d(ctx, s->k, what, (size_t)nwork, (int)(sizeof a / sizeof a[0]), a);
        } else {
            ocl_arg a[] = {OCL_TENSOR(idx), OCL_TENSOR(u), OCL_TENSOR(y), OCL_LONG(n), OCL_INT(axis),
                           OCL_LONG(x->dims[axis]), OCL_CONST(&m, sizeof m), OCL_CLMEM(s->flag)};
            st = ocl_launch1d(ctx, s->k, what, (size_t)n, (int)(sizeof a / sizeof a[0]), a);
        }
    }
    return st != NETRUN_OK ? st : oclops_flag_check(ctx, s->flag, what, "index out of range");
}

static netrun_status run_onehot(ocl_context *ctx, dm_state *s, const netrun_kernel_args *args) {
    const netrun_onehot_params *p = args->params;
    const netrun_tensor *idx = &args->inputs[0], *vals = &args->inputs[2];
    netrun_tensor *y = &args->outputs[0];
    int64_t n = ocl_count(y);
    if (!p || args->n_inputs < 3) return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl OneHot: bad params");
    if (n == 0) return NETRUN_OK;
    if (ocl_count(vals) < 2) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl OneHot: values needs 2 elements");
    if (p->axis < 0 || p->axis >= y->rank || p->depth < 1)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl OneHot: axis %d, depth %lld", p->axis, (long long)p->depth);
    int64_t inner = 1;
    for (int i = p->axis + 1; i < y->rank; i++) inner *= y->dims[i];
    ocl_arg a[] = {OCL_TENSOR(idx), OCL_TENSOR(vals), OCL_TENSOR(y), OCL_LONG(n), OCL_LONG(p->depth), OCL_LONG(inner)};
    return ocl_launch1d(ctx, s->k, "OneHot", (size_t)n, (int)(sizeof a / sizeof a[0]), a);
}

static netrun_status dm_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    dm_state *s = state;
    if (args->n_inputs < 1 || args->n_outputs < 1)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl data movement: missing input or output");
    netrun_dtype d[3];
    for (int i = 0; i < 3; i++) d[i] = i < args->n_inputs ? args->inputs[i].dtype : NETRUN_DTYPE_UNDEFINED;
    if (d[0] != s->t[0] || d[1] != s->t[1] || d[2] != s->t[2]) {
        netrun_status st = dm_kernels(ctx, s, d[0], d[1], d[2]);
        if (st != NETRUN_OK) return st;
    }
    switch (s->kind) {
    case DM_TRANSPOSE: return run_transpose(ctx, s, args);
    case DM_SLICE: return run_slice(ctx, s, args);
    case DM_TILE: return run_tile(ctx, s, args);
    case DM_CONCAT: return run_concat_split(ctx, s, args, 0);
    case DM_SPLIT: return run_concat_split(ctx, s, args, 1);
    case DM_D2S: case DM_S2D: return run_d2s(ctx, s, args);
    case DM_PAD: return run_pad(ctx, s, args);
    case DM_TRILU: return run_trilu(ctx, s, args);
    case DM_GATHER: return run_gather(ctx, s, args);
    case DM_GATHER_ELEMENTS: return run_gather_elements(ctx, s, args);
    case DM_GATHER_ND: return run_gather_nd(ctx, s, args);
    case DM_SCATTER_ELEMENTS: case DM_SCATTER_ND: return run_scatter(ctx, s, args);
    case DM_ONEHOT: return run_onehot(ctx, s, args);
    case DM_CENTER_CROP_PAD: return run_center_crop_pad(ctx, s, args);
    }
    return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl data movement: unknown kind");
}

#define ANY (OCL_ALL_DTYPES)
#define OP(name, mask, cons) {name, mask, cons, dm_supports, dm_create, dm_run, dm_destroy, NULL},

const ocl_op ocl_ops_data_movement[] = {
    OP("Transpose", ANY, "") OP("Slice", ANY, "") OP("Tile", ANY, "") OP("Concat", ANY, "") OP("Split", ANY, "")
    OP("DepthToSpace", ANY, "4-D; DCR and CRD") OP("SpaceToDepth", ANY, "4-D; DCR and CRD")
    OP("Pad", ANY & ~OCL_DT(BFLOAT16), "constant, reflect, edge, wrap")
    OP("Gather", ANY, "int32/int64 indices") OP("GatherElements", ANY, "int32/int64 indices")
    OP("GatherND", ANY, "int32/int64 indices; batch_dims")
    OP("ScatterElements", ANY, "int32/int64 indices; reductions on numeric dtypes")
    OP("ScatterND", ANY, "int32/int64 indices; reductions on numeric dtypes") OP("Trilu", ANY, "rank >= 2")
    OP("OneHot", ANY & ~OCL_DT(BOOL), "numeric indices; values of any fixed-size dtype")
    OP("CenterCropPad", ANY, "")
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
