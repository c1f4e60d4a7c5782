/* Op family: loss and small math ops (definitions: attribute parsing, validation, shape inference).
 * NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, Einsum, Det, Swish. */
#include <string.h>

#include "layer.h"

#define TRY(x)                                   \
    do {                                         \
        netrun_status st_ = (x);                 \
        if (st_ != NETRUN_OK) return st_;        \
    } while (0)

/* ---- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ---- */

static netrun_status loss_parse(nr_layer_ctx *c, void *params) {
    netrun_loss_params *p = params;
    const char *r;
    TRY(nr_attr_string(c, "reduction", "mean", &r));
    if (!strcmp(r, "none")) p->reduction = NETRUN_LOSS_NONE;
    else if (!strcmp(r, "sum")) p->reduction = NETRUN_LOSS_SUM;
    else if (!strcmp(r, "mean")) p->reduction = NETRUN_LOSS_MEAN;
    else return nr_layer_error(c, "reduction '%s' is not one of none, sum, mean", r);
    p->has_ignore_index = nr_attr_has(c, "ignore_index");
    TRY(nr_attr_int(c, "ignore_index", 0, &p->ignore_index));
    return NETRUN_OK;
}

/* Input 0 is [N, C, d1...] (scores or log-probabilities), input 1 the labels [N, d1...], input 2 an optional
 * weight [C]. Output 0 is the loss (labels' shape for reduction none, else a scalar); SoftmaxCrossEntropyLoss
 * may have output 1, the log-probabilities shaped like input 0. */
static netrun_status loss_infer(nr_layer_ctx *c, void *params) {
    const netrun_loss_params *p = params;
    if (nr_in_count(c) < 2 || !nr_in_present(c, 1)) return nr_layer_error(c, "needs inputs scores and labels");
    TRY(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    TRY(nr_check_dtype(c, 1, NR_DTYPES_INDEX));
    const netrun_value_desc *x = nr_in(c, 0), *t = nr_in(c, 1);
    if (x->rank < 2) return nr_layer_error(c, "input 0 has rank %d; expected [N, C, d1...] (rank >= 2)", x->rank);
    int ok = t->rank == x->rank - 1 && t->dims[0] == x->dims[0];
    for (int i = 1; ok && i < t->rank; i++) ok = t->dims[i] == x->dims[i + 1];
    if (!ok) return nr_layer_error(c, "labels (rank %d) must have the shape of input 0 without its dim 1 (C)", t->rank);
    if (nr_in_count(c) > 2 && nr_in_present(c, 2)) {
        TRY(nr_check_same_dtype(c, 0, 2));
        const netrun_value_desc *w = nr_in(c, 2);
        if (w->rank != 1 || w->dims[0] != x->dims[1])
            return nr_layer_error(c, "weight must be 1-D with C = %lld values", (long long)x->dims[1]);
    }
    if (p->reduction == NETRUN_LOSS_NONE) nr_out_set(c, 0, x->dtype, t->rank, t->dims);
    else nr_out_set(c, 0, x->dtype, 0, NULL);
    if (nr_out_count(c) > 1) nr_out_set(c, 1, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

static netrun_status nll_infer(nr_layer_ctx *c, void *params) {
    if (nr_out_count(c) > 1) return nr_layer_error(c, "has %d outputs; expected 1", nr_out_count(c));
    return loss_infer(c, params);
}

/* ---- Einsum ---- */

/* Label ids before compaction: 'a'-'z' -> 0..25, 'A'-'Z' -> 26..51, ellipsis dim k (of the widest
 * ellipsis, right aligned) -> 52 + k. */
static int letter_id(char ch) {
    if (ch >= 'a' && ch <= 'z') return ch - 'a';
    if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
    return -1;
}

/* Parse one term into raw label ids; the ellipsis expands to `ell` dims (the operand's share of them) that
 * take the last `ell` of the `max_ell` ellipsis ids. *n_letters / *has_ell report what was seen. */
static netrun_status einsum_term(const nr_layer_ctx *c, const char *s, size_t len, int ell, int max_ell, int *ids,
                                 int *n_ids, int *n_letters, int *has_ell) {
    int n = 0, letters = 0, he = 0;
    for (size_t i = 0; i < len;) {
        if (s[i] == '.') {
            if (i + 3 > len || s[i + 1] != '.' || s[i + 2] != '.')
                return nr_layer_error(c, "equation: a '.' that is not part of '...'");
            if (he) return nr_layer_error(c, "equation: a term has two ellipses");
            he = 1;
            for (int k = 0; k < ell; k++) {
                if (n >= NETRUN_MAX_RANK) return nr_layer_error(c, "equation: a term has more than %d dims", NETRUN_MAX_RANK);
                ids[n++] = 52 + max_ell - ell + k;
            }
            i += 3;
            continue;
        }
        int id = letter_id(s[i]);
        if (id < 0) return nr_layer_error(c, "equation: unexpected character '%c'", s[i]);
        if (n >= NETRUN_MAX_RANK) return nr_layer_error(c, "equation: a term has more than %d dims", NETRUN_MAX_RANK);
        ids[n++] = id;
        letters++;
        i++;
    }
    *n_ids = n;
    *n_letters = letters;
    *has_ell = he;
    return NETRUN_OK;
}

static netrun_status einsum_infer(nr_layer_ctx *c, void *params) {
    netrun_einsum_params *p = params;
    const char *eq;
    TRY(nr_attr_string(c, "equation", NULL, &eq));
    if (!eq) return nr_layer_error(c, "attribute equation is required");
    int n_in = nr_in_count(c);
    if (n_in < 1 || n_in > NETRUN_EINSUM_MAX_INPUTS)
        return nr_layer_error(c, "has %d inputs; 1 to %d are supported", n_in, NETRUN_EINSUM_MAX_INPUTS);
    for (int i = 0; i < n_in; i++) {
        if (!nr_in_present(c, i)) return nr_layer_error(c, "input %d is missing", i);
        TRY(nr_check_dtype(c, i, NR_DTYPES_NUMERIC));
        TRY(nr_check_same_dtype(c, 0, i));
    }
    /* strip spaces */
    char buf[512];
    size_t len = 0;
    for (const char *s = eq; *s; s++) {
        if (*s == ' ' || *s == '\t') continue;
        if (len + 1 >= sizeof buf) return nr_layer_error(c, "equation is longer than %zu characters", sizeof buf - 1);
        buf[len++] = *s;
    }
    buf[len] = 0;
    const char *arrow = strstr(buf, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - buf) : len;
    /* split the left-hand side into terms */
    const char *term[NETRUN_EINSUM_MAX_INPUTS];
    size_t term_len[NETRUN_EINSUM_MAX_INPUTS];
    int n_terms = 0;
    for (size_t i = 0, start = 0; i <= lhs_len; i++) {
        if (i == lhs_len || buf[i] == ',') {
            if (n_terms >= n_in) return nr_layer_error(c, "equation has more terms than the %d inputs", n_in);
            term[n_terms] = buf + start;
            term_len[n_terms++] = i - start;
            start = i + 1;
        }
    }
    if (n_terms != n_in) return nr_layer_error(c, "equation has %d terms for %d inputs", n_terms, n_in);
    /* first pass: letters per term give each operand's ellipsis width */
    int ell[NETRUN_EINSUM_MAX_INPUTS], max_ell = 0;
    int raw[NETRUN_EINSUM_MAX_INPUTS][NETRUN_MAX_RANK];
    for (int i = 0; i < n_in; i++) {
        int ids[NETRUN_MAX_RANK], n = 0, letters = 0, he = 0;
        TRY(einsum_term(c, term[i], term_len[i], 0, 0, ids, &n, &letters, &he));
        int rank = nr_in(c, i)->rank;
        ell[i] = rank - letters;
        if (ell[i] < 0 || (!he && ell[i] != 0))
            return nr_layer_error(c, "term %d of the equation has %d labels for input %d of rank %d", i, letters, i,
                                  rank);
        if (ell[i] > max_ell) max_ell = ell[i];
    }
    int64_t dim_of[52 + NETRUN_MAX_RANK];
    int count[52 + NETRUN_MAX_RANK] = {0};
    for (int k = 0; k < 52 + NETRUN_MAX_RANK; k++) dim_of[k] = -1;
    for (int i = 0; i < n_in; i++) {
        int n, letters, he;
        TRY(einsum_term(c, term[i], term_len[i], ell[i], max_ell, raw[i], &n, &letters, &he));
        const netrun_value_desc *v = nr_in(c, i);
        for (int d = 0; d < n; d++) {
            int id = raw[i][d];
            int64_t dim = v->dims[d];
            count[id]++;
            if (dim_of[id] < 0 || dim_of[id] == 1) dim_of[id] = dim;
            else if (dim != dim_of[id] && !(id >= 52 && dim == 1)) /* ellipsis dims broadcast */
                return nr_layer_error(c, "label '%c' has sizes %lld and %lld", id < 26 ? 'a' + id : id < 52 ? 'A' + id - 26 : '.',
                                      (long long)dim_of[id], (long long)dim);
        }
    }
    /* output labels */
    int out_raw[NETRUN_MAX_RANK], n_out = 0;
    if (arrow) {
        int n, letters, he;
        const char *rhs = arrow + 2;
        if (strstr(rhs, "->")) return nr_layer_error(c, "equation has two '->'");
        TRY(einsum_term(c, rhs, strlen(rhs), max_ell, max_ell, out_raw, &n, &letters, &he));
        for (int d = 0; d < n; d++) {
            if (out_raw[d] < 52 && !count[out_raw[d]])
                return nr_layer_error(c, "output label '%c' is not in any input term",
                                      out_raw[d] < 26 ? 'a' + out_raw[d] : 'A' + out_raw[d] - 26);
            for (int e = 0; e < d; e++)
                if (out_raw[e] == out_raw[d]) return nr_layer_error(c, "an output label appears twice");
        }
        n_out = n;
    } else { /* implicit: ellipsis dims, then labels seen once in ASCII order (upper case first) */
        for (int k = 0; k < max_ell; k++) out_raw[n_out++] = 52 + k;
        for (int pass = 0; pass < 2; pass++)
            for (int id = pass ? 0 : 26; id < (pass ? 26 : 52); id++)
                if (count[id] == 1) {
                    if (n_out >= NETRUN_MAX_RANK)
                        return nr_layer_error(c, "the output would have more than %d dims", NETRUN_MAX_RANK);
                    out_raw[n_out++] = id;
                }
    }
    /* compact ids: output labels first, then summed ones */
    int map[52 + NETRUN_MAX_RANK];
    for (int k = 0; k < 52 + NETRUN_MAX_RANK; k++) map[k] = -1;
    memset(p, 0, sizeof *p);
    int nl = 0;
    int64_t out_dims[NETRUN_MAX_RANK];
    for (int d = 0; d < n_out; d++) {
        map[out_raw[d]] = nl;
        p->label_dim[nl++] = dim_of[out_raw[d]] < 0 ? 1 : dim_of[out_raw[d]];
        p->out_label[d] = map[out_raw[d]];
        out_dims[d] = p->label_dim[map[out_raw[d]]];
    }
    for (int i = 0; i < n_in; i++) {
        p->in_rank[i] = nr_in(c, i)->rank;
        for (int d = 0; d < p->in_rank[i]; d++) {
            int id = raw[i][d];
            if (map[id] < 0) {
                map[id] = nl;
                p->label_dim[nl++] = dim_of[id];
            }
            p->in_label[i][d] = map[id];
        }
    }
    p->n_inputs = n_in;
    p->n_labels = nl;
    p->out_rank = n_out;
    nr_out_set(c, 0, nr_in(c, 0)->dtype, n_out, out_dims);
    return NETRUN_OK;
}

/* ---- Det: [*, M, M] -> [*] ---- */

static netrun_status det_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    TRY(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->rank < 2) return nr_layer_error(c, "input has rank %d; expected [*, M, M]", x->rank);
    if (x->dims[x->rank - 1] != x->dims[x->rank - 2])
        return nr_layer_error(c, "the last two dims (%lld, %lld) are not a square matrix", (long long)x->dims[x->rank - 2],
                              (long long)x->dims[x->rank - 1]);
    nr_out_set(c, 0, x->dtype, x->rank - 2, x->dims);
    return NETRUN_OK;
}

/* ---- Swish: x * sigmoid(alpha * x) ---- */

static netrun_status swish_parse(nr_layer_ctx *c, void *params) {
    netrun_unary_params *p = params;
    return nr_attr_float(c, "alpha", 1.0f, &p->alpha);
}

static netrun_status same_float_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    TRY(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    const netrun_value_desc *x = nr_in(c, 0);
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* ---- SwiGLU (opset 28): Swish_alpha(A) * B, A and B of one shape (no broadcasting) ---- */

static netrun_status swiglu_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    TRY(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    TRY(nr_check_same_dtype(c, 0, 1));
    const netrun_value_desc *a = nr_in(c, 0), *b = nr_in(c, 1);
    if (a->rank != b->rank || memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)(a->rank > 0 ? a->rank : 0)))
        return nr_layer_error(c, "A and B must have the same shape (SwiGLU does not broadcast)");
    nr_out_set(c, 0, a->dtype, a->rank, a->dims);
    return NETRUN_OK;
}

const nr_layer nr_layers_loss[] = {
    {"NegativeLogLikelihoodLoss", "", 12, sizeof(netrun_loss_params), loss_parse, nll_infer, 0},
    {"SoftmaxCrossEntropyLoss", "", 12, sizeof(netrun_loss_params), loss_parse, loss_infer, 0},
    {"Einsum", "", 12, sizeof(netrun_einsum_params), NULL, einsum_infer, 0},
    {"Det", "", 11, 0, NULL, det_infer, 0},
    {"Swish", "", 24, sizeof(netrun_unary_params), swish_parse, same_float_infer, 0},
    {"SwiGLU", "", 28, sizeof(netrun_unary_params), swish_parse, swiglu_infer, 0},
    {0},
};
