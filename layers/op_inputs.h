/* Which inputs and outputs each ONNX op version requires (generated table, layers/op_inputs.c). */
#ifndef NR_OP_INPUTS_H
#define NR_OP_INPUTS_H

#include <stdint.h>

typedef struct nr_op_inputs {
    const char *domain;
    const char *op_type;
    int since_version;
    uint32_t required;       /* bit i: input i must be present */
    uint32_t required_out;   /* bit i: output i must be present */
    uint64_t output_types;   /* byte o (o < 8): 0 unknown, 1 + i the type of input i, 0x80 | dtype a fixed type */
} nr_op_inputs;

extern const nr_op_inputs nr_op_inputs_table[];
extern const int nr_op_inputs_count;

/* The newest default-domain (ai.onnx) opset of the schemas, and the onnx version they come from. */
extern const int nr_onnx_opset_max;
extern const char nr_onnx_schema_version[];

/* The newest opset of each ONNX domain ("" = ai.onnx, ai.onnx.ml, ai.onnx.preview.training...): an opset past it
 * does not exist in the schemas netrun was built against. */
typedef struct nr_opset_domain {
    const char *domain;
    int newest;
} nr_opset_domain;
extern const nr_opset_domain nr_opset_domains[];
extern const int nr_opset_domains_count;

/* Required-input and required-output masks of an op at an opset (0 when unknown: nothing checked). */
uint32_t nr_op_required_inputs(const char *domain, const char *op_type, int opset);
uint32_t nr_op_required_outputs(const char *domain, const char *op_type, int opset);
/* What the schema says of output `o`'s element type: a fixed dtype (> 0), the type of input i (-1 - i), or 0 when
 * something else decides it (an attribute) or the op is unknown. */
int nr_op_output_type(const char *domain, const char *op_type, int opset, int o);

#endif
