/* Op family: control flow (If, Loop, Scan). The runtime runs them on their subgraphs (runtime/control_flow.c);
 * here: attribute checks and output types. Output shapes are known only after the subgraph ran, so every dim
 * is -1 and the runtime allocates the outputs. */
#include <string.h>

#include "subgraphs.h"
#include "layer.h"

/* dtype of output k of a subgraph as declared (UNDEFINED when not declared) */
static netrun_dtype graph_out_dtype(const nr_graph *g, int k, int *rank) {
    if (!g || k >= g->n_outputs) return NETRUN_DTYPE_UNDEFINED;
    const nr_value *v = &g->values[g->outputs[k]];
    *rank = v->rank;
    return v->dtype;
}

/* dtype of input k of a subgraph as declared (its formal inputs only; UNDEFINED when not declared) */
static netrun_dtype graph_in_dtype(const nr_graph *g, int k) {
    if (!g || k >= g->n_inputs) return NETRUN_DTYPE_UNDEFINED;
    return g->values[g->inputs[k]].dtype;
}

static int formal_inputs(const nr_graph *g) { return g->n_formal_inputs >= 0 ? g->n_formal_inputs : g->n_inputs; }

/* The ONNX rule that a value keeps its type: two declared types must agree (UNDEFINED agrees with anything). */
static int agree(netrun_dtype a, netrun_dtype b) { return !a || !b || a == b; }

static void set_unknown(nr_layer_ctx *c, int o, netrun_dtype dtype, int rank) {
    int64_t dims[NETRUN_MAX_RANK];
    if (rank < 0 || rank > NETRUN_MAX_RANK) rank = 1;
    for (int d = 0; d < NETRUN_MAX_RANK; d++) dims[d] = -1;
    if (rank == 0) { /* a scalar is fully known: keep it dynamic anyway through a rank-1 placeholder */
        rank = 1;
    }
    nr_out_set(c, o, dtype, rank, dims); /* UNDEFINED: the runtime takes the model's declaration */
}

static netrun_status parse_if(nr_layer_ctx *c, void *pv) {
    const nr_graph *t, *e;
    netrun_status st = nr_attr_graph(c, "then_branch", &t);
    if (st == NETRUN_OK) st = nr_attr_graph(c, "else_branch", &e);
    if (st != NETRUN_OK) return st;
    if (!t || !e) return nr_layer_error(c, "then_branch and else_branch are required");
    if (t->n_outputs != nr_out_count(c) || e->n_outputs != nr_out_count(c))
        return nr_layer_error(c, "the branches have %d and %d outputs, the node %d", t->n_outputs, e->n_outputs,
                              nr_out_count(c));
    if (formal_inputs(t) || formal_inputs(e))
        return nr_layer_error(c, "If branches take no inputs (then_branch declares %d, else_branch %d)",
                              formal_inputs(t), formal_inputs(e));
    for (int o = 0; o < nr_out_count(c); o++) { /* an output has one type whichever branch runs */
        int r;
        netrun_dtype a = graph_out_dtype(t, o, &r), b = graph_out_dtype(e, o, &r);
        if (!agree(a, b))
            return nr_layer_error(c, "output %d is %s in then_branch but %s in else_branch: both branches must "
                                  "produce the same types", o, netrun_dtype_name(a), netrun_dtype_name(b));
    }
    return NETRUN_OK;
}

static netrun_status infer_if(nr_layer_ctx *c, void *pv) {
    const nr_graph *t, *e;
    nr_attr_graph(c, "then_branch", &t);
    nr_attr_graph(c, "else_branch", &e);
    if (nr_in(c, 0)->dtype != NETRUN_DTYPE_BOOL) return nr_layer_error(c, "the condition must be bool");
    for (int o = 0; o < nr_out_count(c); o++) {
        int rank = -1;
        netrun_dtype dt = graph_out_dtype(t, o, &rank);
        if (!dt) dt = graph_out_dtype(e, o, &rank);
        set_unknown(c, o, dt, rank);
    }
    return NETRUN_OK;
}

static netrun_status parse_loop(nr_layer_ctx *c, void *pv) {
    const nr_graph *b;
    netrun_status st = nr_attr_graph(c, "body", &b);
    if (st != NETRUN_OK) return st;
    if (!b) return nr_layer_error(c, "attribute body is required");
    int n_carried = nr_in_count(c) - 2;
    if (n_carried < 0) return nr_layer_error(c, "Loop needs the inputs M and cond (possibly empty names)");
    for (int k = 0; k < n_carried; k++)
        if (!nr_in_present(c, 2 + k)) return nr_layer_error(c, "loop-carried input %d is empty", 2 + k);
    if (b->n_outputs < 1 + n_carried || nr_out_count(c) != b->n_outputs - 1)
        return nr_layer_error(c, "the body has %d outputs; the node has %d loop-carried inputs and %d outputs",
                              b->n_outputs, n_carried, nr_out_count(c));
    /* the body's signature (ONNX Loop): (iteration_num: int64, condition: bool, carried...) ->
     * (condition: bool, carried..., scan outputs...), each carried value keeping its type */
    if (formal_inputs(b) != 2 + n_carried)
        return nr_layer_error(c, "the body takes %d inputs; it must take the iteration number, the condition and the "
                              "%d loop-carried values (%d)", formal_inputs(b), n_carried, 2 + n_carried);
    int r;
    if (!agree(graph_in_dtype(b, 0), NETRUN_DTYPE_INT64))
        return nr_layer_error(c, "body input 0 (the iteration number) must be int64, not %s",
                              netrun_dtype_name(graph_in_dtype(b, 0)));
    if (!agree(graph_in_dtype(b, 1), NETRUN_DTYPE_BOOL))
        return nr_layer_error(c, "body input 1 (the condition) must be bool, not %s",
                              netrun_dtype_name(graph_in_dtype(b, 1)));
    if (!agree(graph_out_dtype(b, 0, &r), NETRUN_DTYPE_BOOL))
        return nr_layer_error(c, "body output 0 (the condition) must be bool, not %s",
                              netrun_dtype_name(graph_out_dtype(b, 0, &r)));
    for (int k = 0; k < n_carried; k++)
        if (!agree(graph_in_dtype(b, 2 + k), graph_out_dtype(b, 1 + k, &r)))
            return nr_layer_error(c, "loop-carried value %d enters the body as %s but leaves it as %s", k,
                                  netrun_dtype_name(graph_in_dtype(b, 2 + k)),
                                  netrun_dtype_name(graph_out_dtype(b, 1 + k, &r)));
    return NETRUN_OK;
}

static netrun_status infer_loop(nr_layer_ctx *c, void *pv) {
    const nr_graph *b;
    nr_attr_graph(c, "body", &b);
    int n_carried = nr_in_count(c) - 2;
    if (nr_in_present(c, 0) && nr_in(c, 0)->dtype != NETRUN_DTYPE_INT64)
        return nr_layer_error(c, "the trip count M must be int64, not %s", netrun_dtype_name(nr_in(c, 0)->dtype));
    if (nr_in_count(c) > 1 && nr_in_present(c, 1) && nr_in(c, 1)->dtype != NETRUN_DTYPE_BOOL)
        return nr_layer_error(c, "the condition must be bool, not %s", netrun_dtype_name(nr_in(c, 1)->dtype));
    for (int k = 0; k < n_carried; k++)
        if (!agree(nr_in(c, 2 + k)->dtype, graph_in_dtype(b, 2 + k)))
            return nr_layer_error(c, "loop-carried input %d is %s but the body takes %s", k,
                                  netrun_dtype_name(nr_in(c, 2 + k)->dtype), netrun_dtype_name(graph_in_dtype(b, 2 + k)));
    for (int o = 0; o < nr_out_count(c); o++) {
        int rank = -1;
        netrun_dtype dt = graph_out_dtype(b, 1 + o, &rank);
        if (o < n_carried) {
            dt = nr_in(c, 2 + o)->dtype;
            rank = nr_in(c, 2 + o)->rank;
        } else if (rank >= 0)
            rank++;
        set_unknown(c, o, dt, rank);
    }
    return NETRUN_OK;
}

static netrun_status read_axes(nr_layer_ctx *c, const char *name, int n, int64_t *out) {
    const int64_t *v;
    int64_t k;
    netrun_status st = nr_attr_ints(c, name, &v, &k);
    if (st != NETRUN_OK) return st;
    if (k && k != n) return nr_layer_error(c, "attribute %s has %lld entries, expected %d", name, (long long)k, n);
    for (int i = 0; i < n; i++) out[i] = k ? v[i] : 0;
    return NETRUN_OK;
}

static netrun_status parse_scan(nr_layer_ctx *c, void *pv) {
    nr_cf_params *p = pv;
    const nr_graph *b;
    int64_t n_scan;
    netrun_status st = nr_attr_graph(c, "body", &b);
    if (st == NETRUN_OK) st = nr_attr_int(c, "num_scan_inputs", -1, &n_scan);
    if (st != NETRUN_OK) return st;
    if (!b) return nr_layer_error(c, "attribute body is required");
    if (n_scan < 1 || n_scan > NR_CF_MAX_SCAN || n_scan > nr_in_count(c))
        return nr_layer_error(c, "num_scan_inputs = %lld does not fit %d inputs", (long long)n_scan, nr_in_count(c));
    int n_state = nr_in_count(c) - (int)n_scan;
    for (int k = 0; k < nr_in_count(c); k++)
        if (!nr_in_present(c, k)) return nr_layer_error(c, "input %d is empty", k);
    int n_scan_out = nr_out_count(c) - n_state;
    if (n_scan_out < 0 || n_scan_out > NR_CF_MAX_SCAN || b->n_outputs != nr_out_count(c))
        return nr_layer_error(c, "the body has %d outputs, the node %d", b->n_outputs, nr_out_count(c));
    if (formal_inputs(b) != nr_in_count(c))
        return nr_layer_error(c, "the body takes %d inputs, the node gives %d (%d state values and %lld scan inputs)",
                              formal_inputs(b), nr_in_count(c), n_state, (long long)n_scan);
    for (int k = 0; k < n_state; k++) { /* each state value keeps its type through the body */
        int r;
        if (!agree(graph_in_dtype(b, k), graph_out_dtype(b, k, &r)))
            return nr_layer_error(c, "state value %d enters the body as %s but leaves it as %s", k,
                                  netrun_dtype_name(graph_in_dtype(b, k)), netrun_dtype_name(graph_out_dtype(b, k, &r)));
    }
    p->n_scan_inputs = (int)n_scan;
    if ((st = read_axes(c, "scan_input_axes", (int)n_scan, p->scan_input_axes)) != NETRUN_OK) return st;
    if ((st = read_axes(c, "scan_input_directions", (int)n_scan, p->scan_input_directions)) != NETRUN_OK) return st;
    if ((st = read_axes(c, "scan_output_axes", n_scan_out, p->scan_output_axes)) != NETRUN_OK) return st;
    return read_axes(c, "scan_output_directions", n_scan_out, p->scan_output_directions);
}

static netrun_status infer_scan(nr_layer_ctx *c, void *pv) {
    const nr_cf_params *p = pv;
    const nr_graph *b;
    nr_attr_graph(c, "body", &b);
    int n_state = nr_in_count(c) - p->n_scan_inputs;
    for (int k = 0; k < nr_in_count(c); k++)
        if (!agree(nr_in(c, k)->dtype, graph_in_dtype(b, k)))
            return nr_layer_error(c, "input %d is %s but the body takes %s", k, netrun_dtype_name(nr_in(c, k)->dtype),
                                  netrun_dtype_name(graph_in_dtype(b, k)));
    for (int o = 0; o < nr_out_count(c); o++) {
        int rank = -1;
        netrun_dtype dt = graph_out_dtype(b, o, &rank);
        if (o < n_state) {
            dt = nr_in(c, o)->dtype;
            rank = nr_in(c, o)->rank;
        } else if (rank >= 0)
            rank++;
        set_unknown(c, o, dt, rank);
    }
    return NETRUN_OK;
}

const nr_layer nr_layers_control_flow[] = {
    {"If", "", 1, 0, parse_if, infer_if, NR_LAYER_NO_FOLD | NR_LAYER_CONTROL_FLOW},
    {"Loop", "", 1, 0, parse_loop, infer_loop, NR_LAYER_NO_FOLD | NR_LAYER_CONTROL_FLOW},
    {"Scan", "", 9, sizeof(nr_cf_params), parse_scan, infer_scan, NR_LAYER_NO_FOLD | NR_LAYER_CONTROL_FLOW},
    {0},
};
