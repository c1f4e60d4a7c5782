/* Op family: rnn (definitions: attribute parsing, validation, shape inference).
 * LSTM (4 gates i,o,f,c), GRU (3 gates z,r,h), RNN (1 gate).
 * Inputs: X, W, R, B, sequence_lens, initial_h, initial_c (LSTM), P (LSTM).
 * Outputs: Y, Y_h, Y_c (LSTM). layout 1 (opset 14) puts batch first in X, Y, initial/final states. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "layer.h"
#include "netrun_ops.h"

enum { K_LSTM, K_GRU, K_RNN };

static int n_gates(int kind) { return kind == K_LSTM ? 4 : kind == K_GRU ? 3 : 1; }
static int n_acts(int kind) { return kind == K_LSTM ? 3 : kind == K_GRU ? 2 : 1; }

static int same_ci(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    return *a == *b;
}

/* Activation names and how many alpha/beta values each consumes, with the ONNX defaults. */
typedef struct act_def {
    const char *name;
    netrun_activation kind;
    int n_alpha, n_beta;
    float alpha, beta;
} act_def;

static const act_def act_defs[] = {
    {"Relu", NETRUN_ACT_RELU, 0, 0, 0.f, 0.f},
    {"Tanh", NETRUN_ACT_TANH, 0, 0, 0.f, 0.f},
    {"Sigmoid", NETRUN_ACT_SIGMOID, 0, 0, 0.f, 0.f},
    {"Affine", NETRUN_ACT_AFFINE, 1, 1, 1.f, 0.f},
    {"LeakyRelu", NETRUN_ACT_LEAKY_RELU, 1, 0, 0.01f, 0.f},
    {"ThresholdedRelu", NETRUN_ACT_THRESHOLDED_RELU, 1, 0, 1.f, 0.f},
    {"ScaledTanh", NETRUN_ACT_SCALED_TANH, 1, 1, 1.f, 1.f},
    {"HardSigmoid", NETRUN_ACT_HARD_SIGMOID, 1, 1, 0.2f, 0.5f},
    {"Elu", NETRUN_ACT_ELU, 1, 0, 1.f, 0.f},
    {"Softsign", NETRUN_ACT_SOFTSIGN, 0, 0, 0.f, 0.f},
    {"Softplus", NETRUN_ACT_SOFTPLUS, 0, 0, 0.f, 0.f},
};

static netrun_status rnn_parse(nr_layer_ctx *c, netrun_rnn_params *p, int kind) {
    netrun_status st;
    int64_t hidden = 0, layout = 0, flag = 0;
    if ((st = nr_attr_int(c, "hidden_size", 0, &hidden))) return st;
    if (nr_attr_has(c, "hidden_size") && hidden <= 0)
        return nr_layer_error(c, "attribute 'hidden_size' must be > 0, got %lld", (long long)hidden);
    p->hidden_size = hidden; /* 0: taken from R's shape in infer */

    const char *dir;
    if ((st = nr_attr_string(c, "direction", "forward", &dir))) return st;
    if (!strcmp(dir, "forward")) p->direction = NETRUN_RNN_FORWARD;
    else if (!strcmp(dir, "reverse")) p->direction = NETRUN_RNN_REVERSE;
    else if (!strcmp(dir, "bidirectional")) p->direction = NETRUN_RNN_BIDIRECTIONAL;
    else return nr_layer_error(c, "attribute 'direction' = \"%s\" is not forward, reverse or bidirectional", dir);
    int n_dir = p->direction == NETRUN_RNN_BIDIRECTIONAL ? 2 : 1;

    if (nr_opset(c) >= 14) {
        if ((st = nr_attr_int(c, "layout", 0, &layout))) return st;
        if (layout != 0 && layout != 1)
            return nr_layer_error(c, "attribute 'layout' must be 0 or 1, got %lld", (long long)layout);
    }
    p->layout = (int)layout;

    float clip = 0.f;
    if ((st = nr_attr_float(c, "clip", 0.f, &clip))) return st;
    if (nr_attr_has(c, "clip") && !(clip > 0.f))
        return nr_layer_error(c, "attribute 'clip' must be > 0, got %g", (double)clip);
    p->clip = clip;

    if (kind == K_LSTM) {
        if ((st = nr_attr_int(c, "input_forget", 0, &flag))) return st;
        p->input_forget = flag != 0;
    }
    if (kind == K_GRU) {
        if ((st = nr_attr_int(c, "linear_before_reset", 0, &flag))) return st;
        p->linear_before_reset = flag != 0;
    }

    /* activations: per direction f, g, h; alpha/beta consumed in order by the activations that take them */
    char *const *names;
    int64_t n_names, n_alpha, n_beta;
    const float *alphas, *betas;
    if ((st = nr_attr_strings(c, "activations", &names, &n_names))) return st;
    if ((st = nr_attr_floats(c, "activation_alpha", &alphas, &n_alpha))) return st;
    if ((st = nr_attr_floats(c, "activation_beta", &betas, &n_beta))) return st;
    int per_dir = n_acts(kind);
    static const char *const defaults[3][3] = {{"Sigmoid", "Tanh", "Tanh"}, {"Sigmoid", "Tanh", NULL},
                                               {"Tanh", NULL, NULL}};
    if (n_names != 0 && n_names != per_dir && n_names != per_dir * n_dir)
        return nr_layer_error(c, "attribute 'activations' has %lld names; expected %d (%d per direction)",
                              (long long)n_names, per_dir * n_dir, per_dir);
    int64_t ia = 0, ib = 0;
    for (int i = 0; i < per_dir * n_dir; i++) {
        /* one set given for two directions: both use it */
        const char *nm = n_names == 0 ? defaults[kind][i % per_dir] : names[i % n_names];
        const act_def *def = NULL;
        for (size_t k = 0; k < sizeof act_defs / sizeof act_defs[0]; k++)
            if (same_ci(nm, act_defs[k].name)) def = &act_defs[k];
        if (!def) return nr_layer_error(c, "activation \"%s\" is not supported for %s", nm,
                                        kind == K_LSTM ? "LSTM" : kind == K_GRU ? "GRU" : "RNN");
        p->activations[i] = def->kind;
        p->activation_alpha[i] = def->alpha;
        p->activation_beta[i] = def->beta;
        if (i < n_names || n_names == 0) { /* a reused set does not consume more values */
            if (def->n_alpha && ia < n_alpha) p->activation_alpha[i] = alphas[ia++];
            if (def->n_beta && ib < n_beta) p->activation_beta[i] = betas[ib++];
        } else {
            p->activation_alpha[i] = p->activation_alpha[i % n_names];
            p->activation_beta[i] = p->activation_beta[i % n_names];
        }
    }
    p->n_activations = per_dir * n_dir;
    return NETRUN_OK;
}

static netrun_status lstm_parse(nr_layer_ctx *c, void *params) { return rnn_parse(c, params, K_LSTM); }
static netrun_status gru_parse(nr_layer_ctx *c, void *params) { return rnn_parse(c, params, K_GRU); }
static netrun_status rnn_parse_plain(nr_layer_ctx *c, void *params) { return rnn_parse(c, params, K_RNN); }

static const char *const input_names[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};

/* Require input i (when present) to have rank 3 dims {a, b, c} or rank 2 {a, b} (c < 0). */
static netrun_status check_shape(nr_layer_ctx *c, int i, int64_t a, int64_t b, int64_t cc) {
    if (nr_in_count(c) <= i || !nr_in_present(c, i)) return NETRUN_OK;
    const netrun_value_desc *v = nr_in(c, i);
    int rank = cc < 0 ? 2 : 3;
    int64_t want[3] = {a, b, cc};
    int ok = v->rank == rank;
    for (int d = 0; ok && d < rank; d++) ok = v->dims[d] == want[d];
    if (!ok) {
        char got[96] = "[";
        for (int d = 0; d < v->rank && d < NETRUN_MAX_RANK; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "", (long long)v->dims[d]);
        snprintf(got + strlen(got), sizeof got - strlen(got), "]");
        if (rank == 2)
            return nr_layer_error(c, "input '%s' must have shape [%lld, %lld], got %s", input_names[i], (long long)a,
                                  (long long)b, got);
        return nr_layer_error(c, "input '%s' must have shape [%lld, %lld, %lld], got %s", input_names[i],
                              (long long)a, (long long)b, (long long)cc, got);
    }
    return nr_check_same_dtype(c, 0, i);
}

static netrun_status rnn_infer(nr_layer_ctx *c, netrun_rnn_params *p, int kind) {
    netrun_status st;
    if (nr_in_count(c) < 3 || !nr_in_present(c, 1) || !nr_in_present(c, 2))
        return nr_layer_error(c, "inputs X, W and R are required");
    if ((st = nr_check_dtype(c, 0, NR_DTYPES_FLOAT))) return st;
    const netrun_value_desc *x = nr_in(c, 0), *w = nr_in(c, 1), *r = nr_in(c, 2);
    if (x->rank != 3) return nr_layer_error(c, "input 'X' must have rank 3, got %d", x->rank);
    if (w->rank != 3) return nr_layer_error(c, "input 'W' must have rank 3, got %d", w->rank);
    if (r->rank != 3) return nr_layer_error(c, "input 'R' must have rank 3, got %d", r->rank);
    int64_t G = n_gates(kind), nd = p->direction == NETRUN_RNN_BIDIRECTIONAL ? 2 : 1;
    int64_t seq = p->layout ? x->dims[1] : x->dims[0], batch = p->layout ? x->dims[0] : x->dims[1];
    int64_t in = x->dims[2];
    if (p->hidden_size == 0) {
        p->hidden_size = r->dims[2];
        if (p->hidden_size <= 0) return nr_layer_error(c, "cannot tell hidden_size from R's shape");
    }
    int64_t H = p->hidden_size;
    if (H > INT64_MAX / 4) return nr_layer_error(c, "hidden_size %lld is too large", (long long)H);
    if ((st = check_shape(c, 1, nd, G * H, in))) return st;
    if ((st = check_shape(c, 2, nd, G * H, H))) return st;
    if ((st = check_shape(c, 3, nd, 2 * G * H, -1))) return st;
    if (nr_in_count(c) > 4 && nr_in_present(c, 4)) {
        const netrun_value_desc *sl = nr_in(c, 4);
        if (sl->dtype != NETRUN_DTYPE_INT32) return nr_layer_error(c, "input 'sequence_lens' must be int32");
        if (sl->rank != 1 || sl->dims[0] != batch)
            return nr_layer_error(c, "input 'sequence_lens' must have shape [%lld]", (long long)batch);
    }
    for (int i = 5; i <= 6; i++) {
        if (i == 6 && kind != K_LSTM) break;
        if ((st = p->layout ? check_shape(c, i, batch, nd, H) : check_shape(c, i, nd, batch, H))) return st;
    }
    if (kind == K_LSTM && (st = check_shape(c, 7, nd, 3 * H, -1))) return st;
    if (kind != K_LSTM && nr_in_count(c) > 6)
        for (int i = 6; i < nr_in_count(c); i++)
            if (nr_in_present(c, i)) return nr_layer_error(c, "unexpected input %d", i);

    int64_t ydims[4], hdims[3];
    if (p->layout) {
        ydims[0] = batch, ydims[1] = seq, ydims[2] = nd, ydims[3] = H;
        hdims[0] = batch, hdims[1] = nd, hdims[2] = H;
    } else {
        ydims[0] = seq, ydims[1] = nd, ydims[2] = batch, ydims[3] = H;
        hdims[0] = nd, hdims[1] = batch, hdims[2] = H;
    }
    nr_out_set(c, 0, x->dtype, 4, ydims);
    nr_out_set(c, 1, x->dtype, 3, hdims);
    if (kind == K_LSTM) nr_out_set(c, 2, x->dtype, 3, hdims);
    return NETRUN_OK;
}

static netrun_status lstm_infer(nr_layer_ctx *c, void *params) { return rnn_infer(c, params, K_LSTM); }
static netrun_status gru_infer(nr_layer_ctx *c, void *params) { return rnn_infer(c, params, K_GRU); }
static netrun_status rnn_infer_plain(nr_layer_ctx *c, void *params) { return rnn_infer(c, params, K_RNN); }

const nr_layer nr_layers_rnn[] = {
    {"LSTM", "", 1, sizeof(netrun_rnn_params), lstm_parse, lstm_infer, 0},
    {"GRU", "", 1, sizeof(netrun_rnn_params), gru_parse, gru_infer, 0},
    {"RNN", "", 1, sizeof(netrun_rnn_params), rnn_parse_plain, rnn_infer_plain, 0},
    {0},
};
