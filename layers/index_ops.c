/* Op family: index_ops (definitions: attribute parsing, validation, shape inference).
 * NonZero, Unique, OneHot, Compress, ReverseSequence, TensorScatter, and ops no other family hosts yet
 (none at the moment). NonZero, Unique and Compress have data-dependent output dims: infer sets them to -1
 * and the kernel allocates the output. */
#include <string.h>

#include "layer.h"
#include "netrun_ops.h"

/* ---- NonZero ---- */

static netrun_status nonzero_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    const netrun_value_desc *x = nr_in(c, 0);
    if (netrun_dtype_size(x->dtype) == 0 || x->dtype == NETRUN_DTYPE_INT4 || x->dtype == NETRUN_DTYPE_UINT4)
        return nr_layer_error(c, "input dtype %s is not supported", netrun_dtype_name(x->dtype));
    int64_t dims[2] = {x->rank > 0 ? x->rank : 1, -1}; /* a scalar reads as one element of a 1-D tensor */
    nr_out_set(c, 0, NETRUN_DTYPE_INT64, 2, dims);
    return NETRUN_OK;
}

/* ---- Unique ---- */

static netrun_status unique_parse(nr_layer_ctx *c, void *params) {
    netrun_unique_params *p = params;
    int64_t sorted, axis = 0;
    netrun_status st = nr_attr_int(c, "sorted", 1, &sorted);
    if (st == NETRUN_OK) st = nr_attr_int(c, "axis", 0, &axis);
    if (st != NETRUN_OK) return st;
    if (axis < -NETRUN_MAX_RANK || axis >= NETRUN_MAX_RANK)
        return nr_layer_error(c, "attribute 'axis' = %lld is out of range", (long long)axis);
    p->sorted = sorted != 0;
    p->has_axis = nr_attr_has(c, "axis");
    p->axis = (int)axis;
    return NETRUN_OK;
}

static netrun_status unique_infer(nr_layer_ctx *c, void *params) {
    netrun_unique_params *p = params;
    const netrun_value_desc *x = nr_in(c, 0);
    netrun_status st = nr_check_dtype(c, 0, NR_DTYPES_NUMERIC | NETRUN_DTYPE_BIT(NETRUN_DTYPE_BOOL));
    if (st != NETRUN_OK) return st;
    int64_t m = 1;
    int64_t ydims[NETRUN_MAX_RANK];
    int yrank = 1;
    if (p->has_axis) {
        if (x->rank < 1) return nr_layer_error(c, "attribute 'axis' needs an input of rank >= 1");
        int axis;
        st = nr_resolve_axis(c, p->axis, x->rank, 0, &axis);
        if (st != NETRUN_OK) return st;
        p->axis = axis;
        m = x->dims[axis];
        yrank = x->rank;
        memcpy(ydims, x->dims, sizeof(int64_t) * (size_t)x->rank);
        ydims[axis] = -1;
    } else {
        for (int d = 0; d < x->rank; d++) m *= x->dims[d];
        ydims[0] = -1;
    }
    int64_t dyn = -1;
    for (int i = 0; i < 4; i++) p->present[i] = nr_out_present(c, i);
    nr_out_set(c, 0, x->dtype, yrank, ydims);
    nr_out_set(c, 1, NETRUN_DTYPE_INT64, 1, &dyn);
    nr_out_set(c, 2, NETRUN_DTYPE_INT64, 1, &m);
    nr_out_set(c, 3, NETRUN_DTYPE_INT64, 1, &dyn);
    return NETRUN_OK;
}

/* ---- OneHot ---- */

static netrun_status onehot_parse(nr_layer_ctx *c, void *params) {
    netrun_onehot_params *p = params;
    int64_t axis;
    netrun_status st = nr_attr_int(c, "axis", -1, &axis);
    if (st != NETRUN_OK) return st;
    if (axis < -NETRUN_MAX_RANK - 1 || axis > NETRUN_MAX_RANK)
        return nr_layer_error(c, "attribute 'axis' = %lld is out of range", (long long)axis);
    p->axis = (int)axis;
    return NETRUN_OK;
}

static netrun_status onehot_infer(nr_layer_ctx *c, void *params) {
    netrun_onehot_params *p = params;
    const netrun_value_desc *ind = nr_in(c, 0), *val = nr_in(c, 2);
    netrun_status st = nr_check_dtype(c, 0, NR_DTYPES_NUMERIC);
    if (st == NETRUN_OK) st = nr_check_dtype(c, 1, NR_DTYPES_NUMERIC);
    if (st != NETRUN_OK) return st;
    if (ind->rank + 1 > NETRUN_MAX_RANK) return nr_layer_error(c, "indices rank %d is too large", ind->rank);
    if (val->rank != 1 || val->dims[0] != 2)
        return nr_layer_error(c, "values must be a 1-D tensor of 2 elements [off, on]");
    if (netrun_dtype_size(val->dtype) == 0) return nr_layer_error(c, "values dtype is not supported");
    int64_t cnt = 1;
    for (int d = 0; d < nr_in(c, 1)->rank; d++) cnt *= nr_in(c, 1)->dims[d];
    if (cnt != 1) return nr_layer_error(c, "depth must hold one value, got %lld", (long long)cnt);
    double depth;
    st = nr_in_scalar(c, 1, &depth);
    if (st != NETRUN_OK) return st;
    if (!(depth >= 1 && depth < 9.0e15)) return nr_layer_error(c, "depth %g must be >= 1", depth);
    int axis;
    st = nr_resolve_axis(c, p->axis, ind->rank, 1, &axis);
    if (st != NETRUN_OK) return st;
    p->axis = axis;
    p->depth = (int64_t)depth;
    int64_t dims[NETRUN_MAX_RANK];
    for (int d = 0, s = 0; d <= ind->rank; d++) dims[d] = d == axis ? p->depth : ind->dims[s++];
    nr_out_set(c, 0, val->dtype, ind->rank + 1, dims);
    return NETRUN_OK;
}

/* ---- Compress ---- */

static netrun_status compress_parse(nr_layer_ctx *c, void *params) {
    netrun_compress_params *p = params;
    int64_t axis;
    netrun_status st = nr_attr_int(c, "axis", 0, &axis);
    if (st != NETRUN_OK) return st;
    if (axis < -NETRUN_MAX_RANK || axis >= NETRUN_MAX_RANK)
        return nr_layer_error(c, "attribute 'axis' = %lld is out of range", (long long)axis);
    p->has_axis = nr_attr_has(c, "axis");
    p->axis = (int)axis;
    return NETRUN_OK;
}

static netrun_status compress_infer(nr_layer_ctx *c, void *params) {
    netrun_compress_params *p = params;
    const netrun_value_desc *x = nr_in(c, 0), *cond = nr_in(c, 1);
    netrun_status st = nr_check_dtype(c, 1, NETRUN_DTYPE_BIT(NETRUN_DTYPE_BOOL));
    if (st != NETRUN_OK) return st;
    if (netrun_dtype_size(x->dtype) == 0) return nr_layer_error(c, "input dtype is not supported");
    if (cond->rank != 1) return nr_layer_error(c, "condition must be 1-D, got rank %d", cond->rank);
    if (p->has_axis) {
        int axis;
        if (x->rank < 1) return nr_layer_error(c, "attribute 'axis' needs an input of rank >= 1");
        st = nr_resolve_axis(c, p->axis, x->rank, 0, &axis);
        if (st != NETRUN_OK) return st;
        p->axis = axis;
        int64_t dims[NETRUN_MAX_RANK];
        memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
        dims[axis] = -1;
        nr_out_set(c, 0, x->dtype, x->rank, dims);
    } else {
        int64_t d = -1;
        nr_out_set(c, 0, x->dtype, 1, &d);
    }
    return NETRUN_OK;
}

/* ---- ReverseSequence ---- */

static netrun_status revseq_parse(nr_layer_ctx *c, void *params) {
    netrun_reverse_sequence_params *p = params;
    int64_t t, b;
    netrun_status st = nr_attr_int(c, "time_axis", 0, &t);
    if (st == NETRUN_OK) st = nr_attr_int(c, "batch_axis", 1, &b);
    if (st != NETRUN_OK) return st;
    if (!((t == 0 && b == 1) || (t == 1 && b == 0)))
        return nr_layer_error(c, "time_axis %lld and batch_axis %lld must be 0 and 1 in some order", (long long)t,
                              (long long)b);
    p->time_axis = (int)t;
    p->batch_axis = (int)b;
    return NETRUN_OK;
}

static netrun_status revseq_infer(nr_layer_ctx *c, void *params) {
    netrun_reverse_sequence_params *p = params;
    const netrun_value_desc *x = nr_in(c, 0), *len = nr_in(c, 1);
    netrun_status st = nr_check_dtype(c, 1, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64));
    if (st != NETRUN_OK) return st;
    if (netrun_dtype_size(x->dtype) == 0) return nr_layer_error(c, "input dtype is not supported");
    if (x->rank < 2) return nr_layer_error(c, "input must have rank >= 2, got %d", x->rank);
    if (len->rank != 1 || len->dims[0] != x->dims[p->batch_axis])
        return nr_layer_error(c, "sequence_lens must be 1-D of the batch size %lld", (long long)x->dims[p->batch_axis]);
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* ---- TensorScatter ---- */

static netrun_status tscatter_parse(nr_layer_ctx *c, void *params) {
    netrun_tensor_scatter_params *p = params;
    int64_t axis;
    const char *mode;
    netrun_status st = nr_attr_int(c, "axis", -2, &axis);
    if (st == NETRUN_OK) st = nr_attr_string(c, "mode", "linear", &mode);
    if (st != NETRUN_OK) return st;
    if (strcmp(mode, "linear") && strcmp(mode, "circular"))
        return nr_layer_error(c, "attribute 'mode' = '%s' must be 'linear' or 'circular'", mode);
    if (axis < -NETRUN_MAX_RANK || axis >= NETRUN_MAX_RANK)
        return nr_layer_error(c, "attribute 'axis' = %lld is out of range", (long long)axis);
    p->axis = (int)axis;
    p->circular = !strcmp(mode, "circular");
    return NETRUN_OK;
}

static netrun_status tscatter_infer(nr_layer_ctx *c, void *params) {
    netrun_tensor_scatter_params *p = params;
    const netrun_value_desc *x = nr_in(c, 0), *u = nr_in(c, 1);
    netrun_status st = nr_check_same_dtype(c, 0, 1);
    if (st != NETRUN_OK) return st;
    if (netrun_dtype_size(x->dtype) == 0) return nr_layer_error(c, "input dtype is not supported");
    if (x->rank < 2) return nr_layer_error(c, "past_cache must have rank >= 2, got %d", x->rank);
    int axis;
    st = nr_resolve_axis(c, p->axis, x->rank, 0, &axis);
    if (st != NETRUN_OK) return st;
    if (axis == 0) return nr_layer_error(c, "axis must not be the batch dim 0");
    if (u->rank != x->rank) return nr_layer_error(c, "update rank %d differs from past_cache rank %d", u->rank, x->rank);
    for (int d = 0; d < x->rank; d++)
        if (d == axis ? u->dims[d] > x->dims[d] : u->dims[d] != x->dims[d])
            return nr_layer_error(c, "update dim %d (%lld) does not fit past_cache dim %lld", d, (long long)u->dims[d],
                                  (long long)x->dims[d]);
    if (nr_in_count(c) > 2 && nr_in_present(c, 2)) {
        const netrun_value_desc *w = nr_in(c, 2);
        st = nr_check_dtype(c, 2, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64));
        if (st != NETRUN_OK) return st;
        if (w->rank != 1 || w->dims[0] != x->dims[0])
            return nr_layer_error(c, "write_indices must be 1-D of the batch size %lld", (long long)x->dims[0]);
    }
    p->axis = axis;
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* ---- training optimizers (ai.onnx.preview.training) ---- */

#define TRAINING "ai.onnx.preview.training"

static netrun_status optimizer_parse_kind(nr_layer_ctx *c, netrun_optimizer_params *p, int kind) {
    netrun_status st = NETRUN_OK;
    p->kind = kind;
    if (kind == NETRUN_OPT_MOMENTUM) {
        static const char *req[] = {"alpha", "beta", "mode", "norm_coefficient"};
        for (int i = 0; i < 4; i++)
            if (!nr_attr_has(c, req[i])) return nr_layer_error(c, "attribute '%s' is required", req[i]);
        const char *mode;
        st = nr_attr_string(c, "mode", "standard", &mode);
        if (st != NETRUN_OK) return st;
        if (strcmp(mode, "standard") && strcmp(mode, "nesterov"))
            return nr_layer_error(c, "attribute 'mode' = '%s' must be 'standard' or 'nesterov'", mode);
        p->nesterov = !strcmp(mode, "nesterov");
    }
    if (st == NETRUN_OK) st = nr_attr_float(c, "alpha", 0.9f, &p->alpha);
    if (st == NETRUN_OK) st = nr_attr_float(c, "beta", 0.999f, &p->beta);
    if (st == NETRUN_OK) st = nr_attr_float(c, "epsilon", 1e-6f, &p->epsilon);
    if (st == NETRUN_OK) st = nr_attr_float(c, "decay_factor", 0.0f, &p->decay_factor);
    if (st == NETRUN_OK) st = nr_attr_float(c, "norm_coefficient", 0.0f, &p->norm_coefficient);
    if (st == NETRUN_OK) st = nr_attr_float(c, "norm_coefficient_post", 0.0f, &p->norm_coefficient_post);
    return st;
}
static netrun_status adagrad_parse(nr_layer_ctx *c, void *p) { return optimizer_parse_kind(c, p, NETRUN_OPT_ADAGRAD); }
static netrun_status adam_parse(nr_layer_ctx *c, void *p) { return optimizer_parse_kind(c, p, NETRUN_OPT_ADAM); }
static netrun_status momentum_parse(nr_layer_ctx *c, void *p) { return optimizer_parse_kind(c, p, NETRUN_OPT_MOMENTUM); }

static netrun_status optimizer_infer(nr_layer_ctx *c, void *params) {
    netrun_optimizer_params *p = params;
    int k_in = p->kind == NETRUN_OPT_ADAM ? 4 : 3, k_out = k_in - 1; /* groups in (X, G, state...) and out */
    int nin = nr_in_count(c);
    if (nin < 2 + k_in || (nin - 2) % k_in)
        return nr_layer_error(c, "expected R, T and %d groups of n tensors, got %d inputs", k_in, nin);
    int n = (nin - 2) / k_in;
    if (nr_out_count(c) > k_out * n)
        return nr_layer_error(c, "expected at most %d outputs, got %d", k_out * n, nr_out_count(c));
    for (int i = 0; i < nin; i++) /* none of them is optional: an empty name is no tensor to update */
        if (!nr_in_present(c, i)) return nr_layer_error(c, "input %d is missing (empty name)", i);
    netrun_status st = nr_check_dtype(c, 0, NR_DTYPES_FLOAT);
    if (st == NETRUN_OK) st = nr_check_dtype(c, 1, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64));
    if (st != NETRUN_OK) return st;
    for (int i = 0; i < 2; i++) {
        int64_t cnt = 1;
        for (int d = 0; d < nr_in(c, i)->rank; d++) cnt *= nr_in(c, i)->dims[d];
        if (nr_in(c, i)->rank < 0 || cnt != 1) return nr_layer_error(c, "input %s must be a scalar", i ? "T" : "R");
    }
    for (int t = 0; t < n; t++) {
        const netrun_value_desc *x = nr_in(c, 2 + t);
        st = nr_check_dtype(c, 2 + t, NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE));
        if (st != NETRUN_OK) return st;
        for (int g = 1; g < k_in; g++) {
            const netrun_value_desc *o = nr_in(c, 2 + g * n + t);
            if (o->dtype != x->dtype || o->rank != x->rank ||
                memcmp(o->dims, x->dims, sizeof(int64_t) * (size_t)(x->rank > 0 ? x->rank : 0)))
                return nr_layer_error(c, "input %d must have the dtype and shape of X input %d", 2 + g * n + t, 2 + t);
        }
        for (int g = 0; g < k_out; g++) nr_out_set(c, g * n + t, x->dtype, x->rank, x->dims);
    }
    p->n = n;
    return NETRUN_OK;
}

/* ---- TfIdfVectorizer ---- */

static netrun_status tfidf_infer(nr_layer_ctx *c, void *params) {
    netrun_tfidf_params *p = params;
    const netrun_value_desc *x = nr_in(c, 0);
    netrun_status st = nr_check_dtype(c, 0, NR_DTYPES_INDEX);
    if (st != NETRUN_OK) return st; /* string tokens (pool_strings) are not supported */
    if (x->rank < 1 || x->rank > 2) return nr_layer_error(c, "input must be [C] or [B, C], got rank %d", x->rank);
    const char *mode;
    const int64_t *counts, *indexes, *pool;
    int64_t n_counts, n_indexes, n_pool, n_weights;
    const float *weights;
    char *const *strs;
    int64_t n_strs;
    if ((st = nr_attr_string(c, "mode", "TF", &mode)) || (st = nr_attr_int(c, "min_gram_length", 1, &p->min_gram)) ||
        (st = nr_attr_int(c, "max_gram_length", 1, &p->max_gram)) ||
        (st = nr_attr_int(c, "max_skip_count", 0, &p->max_skip)) || (st = nr_attr_ints(c, "ngram_counts", &counts, &n_counts)) ||
        (st = nr_attr_ints(c, "ngram_indexes", &indexes, &n_indexes)) || (st = nr_attr_ints(c, "pool_int64s", &pool, &n_pool)) ||
        (st = nr_attr_floats(c, "weights", &weights, &n_weights)) || (st = nr_attr_strings(c, "pool_strings", &strs, &n_strs)))
        return st;
    if (n_strs > 0) return nr_layer_error(c, "pool_strings (string tokens) is not supported");
    p->mode = !strcmp(mode, "TF") ? 0 : !strcmp(mode, "IDF") ? 1 : !strcmp(mode, "TFIDF") ? 2 : -1;
    if (p->mode < 0) return nr_layer_error(c, "attribute 'mode' = '%s' must be TF, IDF or TFIDF", mode);
    if (p->min_gram < 1 || p->max_gram < p->min_gram || p->max_skip < 0 || p->max_gram > (int64_t)1 << 20)
        return nr_layer_error(c, "need 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
    if (n_indexes < 1) return nr_layer_error(c, "attribute 'ngram_indexes' is required");
    int64_t out = 0, n_grams = 0;
    for (int64_t i = 0; i < n_indexes; i++) {
        if (indexes[i] < 0 || indexes[i] >= NR_MAX_DIM) /* the output's size: it must stay a dim */
            return nr_layer_error(c, "ngram_indexes[%lld] = %lld is negative or too large", (long long)i,
                                  (long long)indexes[i]);
        if (indexes[i] + 1 > out) out = indexes[i] + 1;
    }
    for (int64_t i = 0; i < n_counts; i++) {
        int64_t end = i + 1 < n_counts ? counts[i + 1] : n_pool;
        if (counts[i] < 0 || end < counts[i] || end > n_pool)
            return nr_layer_error(c, "ngram_counts[%lld] = %lld is out of order or beyond the pool", (long long)i,
                                  (long long)counts[i]);
        n_grams += (end - counts[i]) / (i + 1);
    }
    if (n_grams > n_indexes)
        return nr_layer_error(c, "the pool holds %lld n-grams but ngram_indexes has %lld entries", (long long)n_grams,
                              (long long)n_indexes);
    if (n_weights && n_weights < out)
        return nr_layer_error(c, "weights has %lld entries, fewer than the output size %lld", (long long)n_weights,
                              (long long)out);
    int64_t *grams = nr_layer_alloc(c, sizeof(int64_t) * 3 * (size_t)(n_grams ? n_grams : 1));
    if (!grams) return NETRUN_ERR_OUT_OF_MEMORY;
    int64_t id = 0, k = 0;
    for (int64_t i = 0; i < n_counts; i++) {
        int64_t len = i + 1, end = i + 1 < n_counts ? counts[i + 1] : n_pool;
        for (int64_t s = counts[i]; s + len <= end; s += len, id++) {
            if (len < p->min_gram || len > p->max_gram) continue; /* ids are still consumed */
            grams[3 * k] = len, grams[3 * k + 1] = s, grams[3 * k + 2] = indexes[id];
            k++;
        }
    }
    p->grams = grams;
    p->n_grams = k;
    /* no n-gram longer than the pool's longest (n_counts items) can match: the kernel's loop over lengths stops
     * there instead of at max_gram_length (65535 against a 65536-long row took 22 s, found by the fuzzer) */
    if (p->max_gram > n_counts) p->max_gram = n_counts;
    p->pool = pool;
    p->weights = n_weights ? weights : NULL;
    p->output_size = out;
    int64_t dims[2] = {x->rank == 2 ? x->dims[0] : out, out};
    nr_out_set(c, 0, NETRUN_DTYPE_FLOAT, x->rank, dims);
    return NETRUN_OK;
}

/* ---- ai.onnx.ml Binarizer, ArrayFeatureExtractor ---- */

#define ML "ai.onnx.ml"

static netrun_status binarizer_parse(nr_layer_ctx *c, void *params) {
    netrun_unary_params *p = params;
    return nr_attr_float(c, "threshold", 0.0f, &p->alpha);
}

static netrun_status binarizer_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    netrun_status st = nr_check_dtype(c, 0, NR_DTYPES_NUMERIC);
    if (st != NETRUN_OK) return st;
    const netrun_value_desc *x = nr_in(c, 0);
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* Gathers along the last dim; a 1-D input gives [1, k] as onnxruntime does. */
static netrun_status afe_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    const netrun_value_desc *x = nr_in(c, 0), *ind = nr_in(c, 1);
    netrun_status st = nr_check_dtype(c, 1, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64));
    if (st != NETRUN_OK) return st;
    if (netrun_dtype_size(x->dtype) == 0) return nr_layer_error(c, "input dtype is not supported");
    if (x->rank < 1) return nr_layer_error(c, "input must have rank >= 1");
    int64_t k = 1;
    for (int d = 0; d < ind->rank; d++) k *= ind->dims[d];
    int64_t dims[NETRUN_MAX_RANK];
    int rank = x->rank;
    if (rank == 1) {
        dims[0] = 1, dims[1] = k, rank = 2;
    } else {
        memcpy(dims, x->dims, sizeof(int64_t) * (size_t)rank);
        dims[rank - 1] = k;
    }
    nr_out_set(c, 0, x->dtype, rank, dims);
    return NETRUN_OK;
}

const nr_layer nr_layers_index_ops[] = {
    {"NonZero", "", 9, 0, NULL, nonzero_infer, 0},
    {"Unique", "", 11, sizeof(netrun_unique_params), unique_parse, unique_infer, 0},
    {"OneHot", "", 9, sizeof(netrun_onehot_params), onehot_parse, onehot_infer, 0},
    {"Compress", "", 9, sizeof(netrun_compress_params), compress_parse, compress_infer, 0},
    {"ReverseSequence", "", 10, sizeof(netrun_reverse_sequence_params), revseq_parse, revseq_infer, 0},
    {"TensorScatter", "", 24, sizeof(netrun_tensor_scatter_params), tscatter_parse, tscatter_infer, 0},
    {"TfIdfVectorizer", "", 9, sizeof(netrun_tfidf_params), NULL, tfidf_infer, 0},
    {"Binarizer", ML, 1, sizeof(netrun_unary_params), binarizer_parse, binarizer_infer, 0},
    {"ArrayFeatureExtractor", ML, 1, 0, NULL, afe_infer, 0},
    {"Adagrad", TRAINING, 1, sizeof(netrun_optimizer_params), adagrad_parse, optimizer_infer, 0},
    {"Adam", TRAINING, 1, sizeof(netrun_optimizer_params), adam_parse, optimizer_infer, 0},
    {"Momentum", TRAINING, 1, sizeof(netrun_optimizer_params), momentum_parse, optimizer_infer, 0},
    {0},
};
