/* The list of op families. A family is one file of layers/ exporting nr_layers_<family>[]. */
#include <string.h>

#include "layer.h"

#define FAMILIES(X) X(conv) X(gemm) X(norm) X(pool) X(elementwise) X(shape_ops) X(data_movement) \
    X(resize) X(reduce) X(softmax) X(rnn) X(transformer) X(loss) X(quantize) X(vision) X(signal) X(index_ops) \
    X(control_flow) X(nchwc) X(preprocess)

#define DECLARE(f) extern const nr_layer nr_layers_##f[];
FAMILIES(DECLARE)
#undef DECLARE

#define LIST(f) nr_layers_##f,
static const nr_layer *const families[] = {FAMILIES(LIST)};
#undef LIST

static int is_default_domain(const char *d) { return !d || !*d || !strcmp(d, "ai.onnx"); }

static int same_domain(const char *a, const char *b) {
    if (is_default_domain(a)) return is_default_domain(b);
    return b && !strcmp(a, b);
}

const nr_layer *nr_layer_find(const char *domain, const char *op_type) {
    if (!op_type) return NULL;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const nr_layer *l = families[f]; l->op_type; l++)
            if (!strcmp(l->op_type, op_type) && same_domain(l->domain, domain)) return l;
    return NULL;
}

const nr_layer *nr_layer_at(int index) {
    if (index < 0) return NULL;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const nr_layer *l = families[f]; l->op_type; l++)
            if (index-- == 0) return l;
    return NULL;
}

#include "op_inputs.h"

/* The table row of an op at an opset: the newest version at or below the model's opset (any version when the
 * opset is unknown); NULL when the schemas do not know the op. */
static int row_cmp(const nr_op_inputs *r, const char *d, const char *op_type) {
    int c = strcmp(r->domain, d);
    return c ? c : strcmp(r->op_type, op_type);
}

static const nr_op_inputs *op_row(const char *domain, const char *op_type, int opset) {
    const char *d = domain && strcmp(domain, "ai.onnx") ? domain : "";
    if (!op_type) return NULL;
    /* the table is sorted by (domain, op, version): binary search for the op's first row (a model of a
     * hundred thousand nodes, which a call of a call of functions can make, spent seconds in a linear scan) */
    int lo = 0, hi = nr_op_inputs_count;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (row_cmp(&nr_op_inputs_table[mid], d, op_type) < 0) lo = mid + 1;
        else hi = mid;
    }
    const nr_op_inputs *row = NULL;
    for (int i = lo; i < nr_op_inputs_count && !row_cmp(&nr_op_inputs_table[i], d, op_type); i++) {
        const nr_op_inputs *r = &nr_op_inputs_table[i];
        if ((opset <= 0 || r->since_version <= opset) && (!row || r->since_version > row->since_version)) row = r;
    }
    return row;
}

uint32_t nr_op_required_inputs(const char *domain, const char *op_type, int opset) {
    const nr_op_inputs *r = op_row(domain, op_type, opset);
    return r ? r->required : 0;
}

uint32_t nr_op_required_outputs(const char *domain, const char *op_type, int opset) {
    const nr_op_inputs *r = op_row(domain, op_type, opset);
    return r ? r->required_out : 0;
}

int nr_op_output_type(const char *domain, const char *op_type, int opset, int o) {
    const nr_op_inputs *r = op_row(domain, op_type, opset);
    if (!r || o < 0 || o >= 8) return 0;
    unsigned rule = (unsigned)(r->output_types >> (8 * o)) & 0xffu;
    return rule & 0x80u ? (int)(rule & 0x7fu) : rule ? -(int)rule : 0;
}
