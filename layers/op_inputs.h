/* Which inputs each ONNX op version requires (generated table, layers/op_inputs.c). */
#ifndef NR_OP_INPUTS_H
#define NR_OP_INPUTS_H

#include <stdint.h>

typedef struct nr_op_inputs {
    const char *domain;
    const char *op_type;
    int since_version;
    uint32_t required;       /* bit i: input i must be present */
} nr_op_inputs;

extern const nr_op_inputs nr_op_inputs_table[];
extern const int nr_op_inputs_count;

/* Required-input mask of an op at an opset (0 when unknown: nothing checked). */
uint32_t nr_op_required_inputs(const char *domain, const char *op_type, int opset);

#endif
