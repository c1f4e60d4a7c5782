/* Op family: data_movement (definitions: attribute parsing, validation, shape inference).
 * Concat, Split, Slice, Gather, GatherElements, GatherND, ScatterElements (and Scatter), ScatterND, Transpose,
 * Pad, DepthToSpace, SpaceToDepth. */
#include <string.h>

#include "layer.h"

static const netrun_value_desc *in0(const nr_layer_ctx *c) { return nr_in(c, 0); }

/* ---------------- Concat ---------------- */

static netrun_status concat_infer(nr_layer_ctx *c, void *params) {
    netrun_axis_params *p = params;
    if (!nr_attr_has(c, "axis")) return nr_layer_error(c, "Concat needs the axis attribute");
    int64_t axis;
    netrun_status st = nr_attr_int(c, "axis", 0, &axis);
    if (st) return st;
    const netrun_value_desc *x = NULL;
    int n = nr_in_count(c);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (!nr_in_present(c, i)) continue;
        const netrun_value_desc *v = nr_in(c, i);
        if (!x) {
            x = v;
            if ((st = nr_resolve_axis(c, axis, x->rank, 0, &p->axis))) return st;
        } else {
            if ((st = nr_check_same_dtype(c, 0, i))) return st;
            if (v->rank != x->rank)
                return nr_layer_error(c, "input %d has rank %d, input 0 rank %d", i, v->rank, x->rank);
            for (int d = 0; d < x->rank; d++)
                if (d != p->axis && v->dims[d] != x->dims[d])
                    return nr_layer_error(c, "input %d dim %d is %lld, input 0 has %lld", i, d, (long long)v->dims[d],
                                          (long long)x->dims[d]);
        }
        total += v->dims[p->axis];
    }
    if (!x) return nr_layer_error(c, "Concat has no inputs");
    int64_t d[NETRUN_MAX_RANK];
    memcpy(d, x->dims, sizeof(int64_t) * (size_t)x->rank);
    d[p->axis] = total;
    nr_out_set(c, 0, x->dtype, x->rank, d);
    return NETRUN_OK;
}

/* ---------------- Split ---------------- */

static netrun_status split_infer(nr_layer_ctx *c, void *params) {
    netrun_split_params *p = params;
    const netrun_value_desc *x = in0(c);
    int64_t axis;
    netrun_status st = nr_attr_int(c, "axis", 0, &axis);
    if (st) return st;
    if ((st = nr_resolve_axis(c, axis, x->rank, 0, &p->axis))) return st;
    int n = nr_out_count(c);
    if (n < 1) return nr_layer_error(c, "Split has no outputs");
    if (!p->sizes || p->n_outputs != n) {
        p->sizes = nr_layer_alloc(c, sizeof(int64_t) * (size_t)n);
        if (!p->sizes) return NETRUN_ERR_OUT_OF_MEMORY;
    }
    p->n_outputs = n;
    int64_t *sizes = (int64_t *)p->sizes; /* ours: allocated above */
    int64_t dim = x->dims[p->axis], nsplit = -1;
    int64_t num_outputs = 0;
    if (nr_opset(c) >= 18 && nr_attr_has(c, "num_outputs")) {
        if ((st = nr_attr_int(c, "num_outputs", 0, &num_outputs))) return st;
        if (num_outputs != n)
            return nr_layer_error(c, "num_outputs is %lld but the node has %d outputs", (long long)num_outputs, n);
    }
    if (nr_opset(c) < 13) {
        const int64_t *s;
        if ((st = nr_attr_ints(c, "split", &s, &nsplit))) return st;
        if (!nr_attr_has(c, "split")) nsplit = -1;
        else if (nsplit != n) return nr_layer_error(c, "split has %lld entries for %d outputs", (long long)nsplit, n);
        else memcpy(sizes, s, sizeof(int64_t) * (size_t)n);
    } else if (nr_in_count(c) > 1 && nr_in_present(c, 1)) {
        if (num_outputs) return nr_layer_error(c, "give either the split input or num_outputs, not both");
        if ((st = nr_in_ints(c, 1, sizes, n, &nsplit))) return st;
        if (nsplit != n) return nr_layer_error(c, "split has %lld entries for %d outputs", (long long)nsplit, n);
    }
    if (nsplit < 0) {
        if (num_outputs) { /* ceil-sized chunks, the last one smaller */
            int64_t chunk = (dim + n - 1) / n;
            for (int i = 0; i < n; i++) {
                int64_t left = dim - chunk * i;
                sizes[i] = left < 0 ? 0 : left < chunk ? left : chunk;
            }
        } else {
            if (dim % n)
                return nr_layer_error(c, "axis dim %lld does not split equally into %d outputs", (long long)dim, n);
            for (int i = 0; i < n; i++) sizes[i] = dim / n;
        }
    }
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 0) return nr_layer_error(c, "split[%d] is negative (%lld)", i, (long long)sizes[i]);
        if (__builtin_add_overflow(sum, sizes[i], &sum)) return nr_layer_error(c, "split sizes overflow");
    }
    if (sum != dim) return nr_layer_error(c, "split sizes sum to %lld, the axis dim is %lld", (long long)sum, (long long)dim);
    int64_t d[NETRUN_MAX_RANK];
    memcpy(d, x->dims, sizeof(int64_t) * (size_t)x->rank);
    for (int i = 0; i < n; i++) {
        d[p->axis] = sizes[i];
        nr_out_set(c, i, x->dtype, x->rank, d);
    }
    return NETRUN_OK;
}

/* ---------------- Slice ---------------- */

/* Read an int list from an attribute (opset < 10) or input (opset >= 10). *n = -1 when absent. */
static netrun_status slice_list(nr_layer_ctx *c, const char *attr, int input, int64_t *out, int64_t *n) {
    *n = -1;
    if (nr_opset(c) < 10) {
        if (!attr || !nr_attr_has(c, attr)) return NETRUN_OK;
        const int64_t *v;
        netrun_status st = nr_attr_ints(c, attr, &v, n);
        if (st) return st;
        if (*n > NETRUN_MAX_RANK) return nr_layer_error(c, "%s has %lld entries (at most %d)", attr, (long long)*n, NETRUN_MAX_RANK);
        if (*n) memcpy(out, v, sizeof(int64_t) * (size_t)*n);
        return NETRUN_OK;
    }
    if (input >= nr_in_count(c) || !nr_in_present(c, input)) return NETRUN_OK;
    netrun_status st = nr_check_dtype(c, input, NR_DTYPES_INDEX);
    if (st) return st;
    if ((st = nr_in_ints(c, input, out, NETRUN_MAX_RANK + 1, n))) return st;
    if (*n > NETRUN_MAX_RANK) return nr_layer_error(c, "input %d has %lld entries (at most %d)", input, (long long)*n, NETRUN_MAX_RANK);
    return NETRUN_OK;
}

static netrun_status slice_infer(nr_layer_ctx *c, void *params) {
    netrun_slice_params *p = params;
    const netrun_value_desc *x = in0(c);
    int64_t starts[NETRUN_MAX_RANK + 1], ends[NETRUN_MAX_RANK + 1], axes[NETRUN_MAX_RANK + 1], steps[NETRUN_MAX_RANK + 1];
    int64_t ns, ne, na, nst;
    netrun_status st;
    if ((st = slice_list(c, "starts", 1, starts, &ns))) return st;
    if ((st = slice_list(c, "ends", 2, ends, &ne))) return st;
    if ((st = slice_list(c, "axes", 3, axes, &na))) return st;
    if ((st = slice_list(c, NULL, 4, steps, &nst))) return st;
    if (ns < 0 || ne < 0) return nr_layer_error(c, "Slice needs starts and ends");
    if (ns != ne) return nr_layer_error(c, "starts has %lld entries, ends %lld", (long long)ns, (long long)ne);
    if (na >= 0 && na != ns) return nr_layer_error(c, "axes has %lld entries, starts %lld", (long long)na, (long long)ns);
    if (nst >= 0 && nst != ns) return nr_layer_error(c, "steps has %lld entries, starts %lld", (long long)nst, (long long)ns);
    int64_t d[NETRUN_MAX_RANK];
    int seen[NETRUN_MAX_RANK] = {0};
    for (int i = 0; i < x->rank; i++) {
        p->start[i] = 0;
        p->step[i] = 1;
        d[i] = x->dims[i];
    }
    for (int i = 0; i < ns; i++) {
        int a = i;
        if (na >= 0 && (st = nr_resolve_axis(c, axes[i], x->rank, 0, &a))) return st;
        if (a >= x->rank) return nr_layer_error(c, "%lld starts for an input of rank %d", (long long)ns, x->rank);
        if (seen[a]) return nr_layer_error(c, "axis %d is sliced twice", a);
        seen[a] = 1;
        int64_t step = nst >= 0 ? steps[i] : 1, dim = x->dims[a];
        if (step == 0) return nr_layer_error(c, "step for axis %d is 0", a);
        int64_t s = starts[i], e = ends[i], cnt;
        if (s < 0) s += dim; /* dim >= 0 so these cannot overflow */
        if (e < 0) e += dim;
        /* counts as ceil(span / |step|) without overflow: steps may be +-2^63 (their magnitude as unsigned) */
        if (step > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
            cnt = e > s ? (int64_t)((uint64_t)(e - s - 1) / (uint64_t)step) + 1 : 0;
        } else {
            uint64_t mag = (uint64_t)0 - (uint64_t)step;
            s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            cnt = s > e ? (int64_t)((uint64_t)(s - e - 1) / mag) + 1 : 0;
            if (dim == 0) { s = 0; cnt = 0; }
        }
        if (cnt <= 1) step = 1; /* one element or none: the step no longer matters, and kernels never scale by it */
        p->start[a] = s;
        p->step[a] = step;
        d[a] = cnt;
    }
    nr_out_set(c, 0, x->dtype, x->rank, d);
    return NETRUN_OK;
}

/* ---------------- Gather family ---------------- */

static netrun_status gather_infer(nr_layer_ctx *c, void *params) {
    netrun_axis_params *p = params;
    const netrun_value_desc *x = in0(c), *ix = nr_in(c, 1);
    int64_t axis;
    netrun_status st = nr_attr_int(c, "axis", 0, &axis);
    if (st || (st = nr_check_dtype(c, 1, NR_DTYPES_INDEX))) return st;
    if (x->rank < 1) return nr_layer_error(c, "Gather data must have rank >= 1");
    if ((st = nr_resolve_axis(c, axis, x->rank, 0, &p->axis))) return st;
    int r = x->rank - 1 + ix->rank;
    if (r > NETRUN_MAX_RANK) return nr_layer_error(c, "output rank %d exceeds %d", r, NETRUN_MAX_RANK);
    int64_t d[NETRUN_MAX_RANK];
    int k = 0;
    for (int i = 0; i < p->axis; i++) d[k++] = x->dims[i];
    for (int i = 0; i < ix->rank; i++) d[k++] = ix->dims[i];
    for (int i = p->axis + 1; i < x->rank; i++) d[k++] = x->dims[i];
    nr_out_set(c, 0, x->dtype, r, d);
    return NETRUN_OK;
}

static netrun_status gather_elements_infer(nr_layer_ctx *c, void *params) {
    netrun_axis_params *p = params;
    const netrun_value_desc *x = in0(c), *ix = nr_in(c, 1);
    int64_t axis;
    netrun_status st = nr_attr_int(c, "axis", 0, &axis);
    if (st || (st = nr_check_dtype(c, 1, NR_DTYPES_INDEX))) return st;
    if (x->rank < 1) return nr_layer_error(c, "data must have rank >= 1");
    if ((st = nr_resolve_axis(c, axis, x->rank, 0, &p->axis))) return st;
    if (ix->rank != x->rank) return nr_layer_error(c, "indices rank %d differs from data rank %d", ix->rank, x->rank);
    for (int i = 0; i < x->rank; i++)
        if (i != p->axis && ix->dims[i] > x->dims[i])
            return nr_layer_error(c, "indices dim %d (%lld) exceeds data dim (%lld)", i, (long long)ix->dims[i],
                                  (long long)x->dims[i]);
    nr_out_set(c, 0, x->dtype, ix->rank, ix->dims);
    return NETRUN_OK;
}

static netrun_status gather_nd_infer(nr_layer_ctx *c, void *params) {
    netrun_axis_params *p = params;
    const netrun_value_desc *x = in0(c), *ix = nr_in(c, 1);
    int64_t b = 0;
    netrun_status st = nr_attr_int(c, "batch_dims", 0, &b);
    if (st || (st = nr_check_dtype(c, 1, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64)))) return st;
    int r = x->rank, q = ix->rank;
    if (r < 1 || q < 1) return nr_layer_error(c, "data and indices must have rank >= 1");
    if (b < 0 || b >= r || b >= q) return nr_layer_error(c, "batch_dims %lld must be < both ranks (%d, %d)", (long long)b, r, q);
    int64_t k = ix->dims[q - 1];
    if (k < 1 || k > r - b)
        return nr_layer_error(c, "indices last dim %lld must be in [1, %lld]", (long long)k, (long long)(r - b));
    for (int i = 0; i < b; i++)
        if (x->dims[i] != ix->dims[i])
            return nr_layer_error(c, "batch dim %d differs: data %lld, indices %lld", i, (long long)x->dims[i],
                                  (long long)ix->dims[i]);
    int out_r = q - 1 + r - (int)k - (int)b;
    if (out_r > NETRUN_MAX_RANK) return nr_layer_error(c, "output rank %d exceeds %d", out_r, NETRUN_MAX_RANK);
    int64_t d[NETRUN_MAX_RANK];
    int n = 0;
    for (int i = 0; i < q - 1; i++) d[n++] = ix->dims[i];
    for (int i = (int)(b + k); i < r; i++) d[n++] = x->dims[i];
    p->axis = (int)b;
    nr_out_set(c, 0, x->dtype, out_r, d);
    return NETRUN_OK;
}

/* ---------------- Scatter family ---------------- */

static netrun_status scatter_parse(nr_layer_ctx *c, void *params) {
    netrun_scatter_params *p = params;
    const char *red;
    netrun_status st = nr_attr_string(c, "reduction", "none", &red);
    if (st) return st;
    if (!strcmp(red, "none")) p->reduction = NETRUN_SCATTER_NONE;
    else if (!strcmp(red, "add")) p->reduction = NETRUN_SCATTER_ADD;
    else if (!strcmp(red, "mul")) p->reduction = NETRUN_SCATTER_MUL;
    else if (!strcmp(red, "max")) p->reduction = NETRUN_SCATTER_MAX;
    else if (!strcmp(red, "min")) p->reduction = NETRUN_SCATTER_MIN;
    else return nr_layer_error(c, "unknown reduction '%s' (none, add, mul, max, min)", red);
    return NETRUN_OK;
}

static netrun_status scatter_elements_infer(nr_layer_ctx *c, void *params) {
    netrun_scatter_params *p = params;
    const netrun_value_desc *x = in0(c), *ix = nr_in(c, 1), *u = nr_in(c, 2);
    int64_t axis;
    netrun_status st = nr_attr_int(c, "axis", 0, &axis);
    if (st || (st = nr_check_dtype(c, 1, NR_DTYPES_INDEX)) || (st = nr_check_same_dtype(c, 0, 2))) return st;
    if (x->rank < 1) return nr_layer_error(c, "data must have rank >= 1");
    if ((st = nr_resolve_axis(c, axis, x->rank, 0, &p->axis))) return st;
    if (ix->rank != x->rank || u->rank != x->rank)
        return nr_layer_error(c, "data, indices and updates must have the same rank (%d, %d, %d)", x->rank, ix->rank, u->rank);
    for (int i = 0; i < x->rank; i++) {
        if (ix->dims[i] != u->dims[i]) return nr_layer_error(c, "indices and updates differ in dim %d", i);
        if (i != p->axis && ix->dims[i] > x->dims[i])
            return nr_layer_error(c, "indices dim %d (%lld) exceeds data dim (%lld)", i, (long long)ix->dims[i],
                                  (long long)x->dims[i]);
    }
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

static netrun_status scatter_nd_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    const netrun_value_desc *x = in0(c), *ix = nr_in(c, 1), *u = nr_in(c, 2);
    netrun_status st;
    if ((st = nr_check_dtype(c, 1, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64))) || (st = nr_check_same_dtype(c, 0, 2))) return st;
    int r = x->rank, q = ix->rank;
    if (r < 1 || q < 1) return nr_layer_error(c, "data and indices must have rank >= 1");
    int64_t k = ix->dims[q - 1];
    if (k < 1 || k > r) return nr_layer_error(c, "indices last dim %lld must be in [1, %d]", (long long)k, r);
    int ur = q - 1 + r - (int)k;
    int ok = u->rank == ur;
    for (int i = 0; ok && i < q - 1; i++) ok = u->dims[i] == ix->dims[i];
    for (int i = 0; ok && i < r - k; i++) ok = u->dims[q - 1 + i] == x->dims[k + i];
    if (!ok) return nr_layer_error(c, "updates shape must be indices.shape[:-1] + data.shape[%lld:]", (long long)k);
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* ---------------- Transpose ---------------- */

static netrun_status transpose_infer(nr_layer_ctx *c, void *params) {
    netrun_transpose_params *p = params;
    const netrun_value_desc *x = in0(c);
    const int64_t *perm;
    int64_t n;
    netrun_status st = nr_attr_ints(c, "perm", &perm, &n);
    if (st) return st;
    int used[NETRUN_MAX_RANK] = {0};
    if (!nr_attr_has(c, "perm")) {
        for (int i = 0; i < x->rank; i++) p->perm[i] = x->rank - 1 - i;
    } else {
        if (n != x->rank) return nr_layer_error(c, "perm has %lld entries for an input of rank %d", (long long)n, x->rank);
        for (int i = 0; i < n; i++) {
            int a;
            if ((st = nr_resolve_axis(c, perm[i], x->rank, 0, &a))) return st;
            if (used[a]) return nr_layer_error(c, "perm is not a permutation (%d repeats)", a);
            used[a] = 1;
            p->perm[i] = a;
        }
    }
    int64_t d[NETRUN_MAX_RANK];
    for (int i = 0; i < x->rank; i++) d[i] = x->dims[p->perm[i]];
    nr_out_set(c, 0, x->dtype, x->rank, d);
    return NETRUN_OK;
}

/* ---------------- Pad ---------------- */

static netrun_status pad_parse(nr_layer_ctx *c, void *params) {
    netrun_pad_params *p = params;
    const char *mode;
    netrun_status st = nr_attr_string(c, "mode", "constant", &mode);
    if (st) return st;
    if (!strcmp(mode, "constant")) p->mode = NETRUN_PAD_CONSTANT;
    else if (!strcmp(mode, "reflect")) p->mode = NETRUN_PAD_REFLECT;
    else if (!strcmp(mode, "edge")) p->mode = NETRUN_PAD_EDGE;
    else if (!strcmp(mode, "wrap")) p->mode = NETRUN_PAD_WRAP;
    else return nr_layer_error(c, "unknown pad mode '%s' (constant, reflect, edge, wrap)", mode);
    return NETRUN_OK;
}

static netrun_status pad_infer(nr_layer_ctx *c, void *params) {
    netrun_pad_params *p = params;
    const netrun_value_desc *x = in0(c);
    int r = x->rank;
    int64_t pads[2 * NETRUN_MAX_RANK + 1], np = 0, axes[NETRUN_MAX_RANK + 1], na = -1;
    netrun_status st;
    p->value = 0;
    if (nr_opset(c) < 11) {
        const int64_t *pv;
        const char *pname = nr_attr_has(c, "pads") ? "pads" : "paddings";
        if ((st = nr_attr_ints(c, pname, &pv, &np))) return st;
        if (!nr_attr_has(c, pname)) return nr_layer_error(c, "Pad needs the pads attribute");
        if (np > 2 * NETRUN_MAX_RANK) return nr_layer_error(c, "pads has %lld entries", (long long)np);
        if (np) memcpy(pads, pv, sizeof(int64_t) * (size_t)np);
        float v;
        if ((st = nr_attr_float(c, "value", 0.0f, &v))) return st;
        p->value = v;
    } else {
        if (nr_in_count(c) < 2 || !nr_in_present(c, 1)) return nr_layer_error(c, "Pad needs the pads input");
        if ((st = nr_check_dtype(c, 1, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64)))) return st;
        if ((st = nr_in_ints(c, 1, pads, 2 * NETRUN_MAX_RANK + 1, &np))) return st;
        if (np > 2 * NETRUN_MAX_RANK) return nr_layer_error(c, "pads has %lld entries", (long long)np);
        if (nr_in_count(c) > 2 && nr_in_present(c, 2)) {
            if ((st = nr_check_same_dtype(c, 0, 2))) return st;
            if (nr_shape_count(nr_in(c, 2)->rank, nr_in(c, 2)->dims) > 0 && (st = nr_in_scalar(c, 2, &p->value)))
                return st;
        }
        if (nr_in_count(c) > 3 && nr_in_present(c, 3)) {
            if ((st = nr_check_dtype(c, 3, NR_DTYPES_INDEX))) return st;
            if ((st = nr_in_ints(c, 3, axes, NETRUN_MAX_RANK + 1, &na))) return st;
            if (na > r) return nr_layer_error(c, "axes has %lld entries for rank %d", (long long)na, r);
        }
    }
    int64_t nax = na >= 0 ? na : r;
    if (np != 2 * nax)
        return nr_layer_error(c, "pads has %lld entries, expected %lld (2 per %s)", (long long)np, (long long)(2 * nax),
                              na >= 0 ? "axis" : "dim");
    for (int i = 0; i < r; i++) p->pads_begin[i] = p->pads_end[i] = 0;
    int seen[NETRUN_MAX_RANK] = {0};
    int64_t d[NETRUN_MAX_RANK];
    for (int i = 0; i < nax; i++) {
        int a = i;
        if (na >= 0 && (st = nr_resolve_axis(c, axes[i], r, 0, &a))) return st;
        if (seen[a]) return nr_layer_error(c, "axis %d padded twice", a);
        seen[a] = 1;
        p->pads_begin[a] = pads[i];
        p->pads_end[a] = pads[i + nax];
    }
    for (int i = 0; i < r; i++) {
        int64_t b = p->pads_begin[i], e = p->pads_end[i];
        if (b > INT32_MAX || e > INT32_MAX || b < -x->dims[i] || e < -x->dims[i])
            return nr_layer_error(c, "pads of dim %d (%lld, %lld) out of range", i, (long long)b, (long long)e);
        d[i] = x->dims[i] + b + e;
        if (d[i] < 0) return nr_layer_error(c, "pads make dim %d negative (%lld)", i, (long long)d[i]);
        if (p->mode != NETRUN_PAD_CONSTANT && (b > 0 || e > 0) && x->dims[i] == 0)
            return nr_layer_error(c, "cannot pad an empty dim %d in this mode", i);
        if (p->mode == NETRUN_PAD_REFLECT && (b >= x->dims[i] || e >= x->dims[i]) && (b > 0 || e > 0))
            return nr_layer_error(c, "reflect pads of dim %d (%lld, %lld) must be smaller than the dim (%lld)", i,
                                  (long long)b, (long long)e, (long long)x->dims[i]);
    }
    nr_out_set(c, 0, x->dtype, r, d);
    return NETRUN_OK;
}

/* ---------------- DepthToSpace / SpaceToDepth ---------------- */

static netrun_status space_depth_parse(nr_layer_ctx *c, void *params) {
    netrun_space_depth_params *p = params;
    if (!nr_attr_has(c, "blocksize")) return nr_layer_error(c, "needs the blocksize attribute");
    netrun_status st = nr_attr_int(c, "blocksize", 0, &p->blocksize);
    if (st) return st;
    if (p->blocksize < 1 || p->blocksize > (1 << 20)) return nr_layer_error(c, "blocksize %lld is invalid", (long long)p->blocksize);
    const char *mode;
    if ((st = nr_attr_string(c, "mode", "DCR", &mode))) return st;
    if (!strcmp(mode, "CRD")) p->crd = 1;
    else if (strcmp(mode, "DCR")) return nr_layer_error(c, "unknown mode '%s' (DCR, CRD)", mode);
    return NETRUN_OK;
}

static netrun_status d2s_infer(nr_layer_ctx *c, void *params) {
    netrun_space_depth_params *p = params;
    const netrun_value_desc *x = in0(c);
    if (x->rank != 4) return nr_layer_error(c, "input must be 4-D, it has rank %d", x->rank);
    int64_t b = p->blocksize;
    if (x->dims[1] % (b * b)) return nr_layer_error(c, "channels %lld not divisible by blocksize^2 (%lld)", (long long)x->dims[1], (long long)(b * b));
    int64_t d[4] = {x->dims[0], x->dims[1] / (b * b), x->dims[2] * b, x->dims[3] * b};
    nr_out_set(c, 0, x->dtype, 4, d);
    return NETRUN_OK;
}

static netrun_status s2d_infer(nr_layer_ctx *c, void *params) {
    netrun_space_depth_params *p = params;
    const netrun_value_desc *x = in0(c);
    if (x->rank != 4) return nr_layer_error(c, "input must be 4-D, it has rank %d", x->rank);
    int64_t b = p->blocksize; /* mode (opset 28): DCR or CRD, as DepthToSpace */
    if (x->dims[2] % b || x->dims[3] % b)
        return nr_layer_error(c, "spatial dims %lldx%lld not divisible by blocksize %lld", (long long)x->dims[2],
                              (long long)x->dims[3], (long long)b);
    int64_t d[4] = {x->dims[0], x->dims[1] * b * b, x->dims[2] / b, x->dims[3] / b};
    nr_out_set(c, 0, x->dtype, 4, d);
    return NETRUN_OK;
}

const nr_layer nr_layers_data_movement[] = {
    {"Concat", "", 4, sizeof(netrun_axis_params), NULL, concat_infer, 0},
    {"Split", "", 2, sizeof(netrun_split_params), NULL, split_infer, 0},
    {"Slice", "", 1, sizeof(netrun_slice_params), NULL, slice_infer, 0},
    {"Gather", "", 1, sizeof(netrun_axis_params), NULL, gather_infer, 0},
    {"GatherElements", "", 11, sizeof(netrun_axis_params), NULL, gather_elements_infer, 0},
    {"GatherND", "", 11, sizeof(netrun_axis_params), NULL, gather_nd_infer, 0},
    {"ScatterElements", "", 11, sizeof(netrun_scatter_params), scatter_parse, scatter_elements_infer, 0},
    {"Scatter", "", 9, sizeof(netrun_scatter_params), scatter_parse, scatter_elements_infer, 0},
    {"ScatterND", "", 11, sizeof(netrun_scatter_params), scatter_parse, scatter_nd_infer, 0},
    {"Transpose", "", 1, sizeof(netrun_transpose_params), NULL, transpose_infer, 0},
    {"Pad", "", 2, sizeof(netrun_pad_params), pad_parse, pad_infer, 0},
    {"DepthToSpace", "", 1, sizeof(netrun_space_depth_params), space_depth_parse, d2s_infer, 0},
    {"SpaceToDepth", "", 1, sizeof(netrun_space_depth_params), space_depth_parse, s2d_infer, 0},
    {0},
};
