/* ONNX (protobuf) -> netrun IR. The only code that sees protobuf-c structs. */
#ifndef NR_ONNX_IMPORT_H
#define NR_ONNX_IMPORT_H

#include "ir.h"

typedef struct nr_import_limits {
    size_t max_tensor_bytes;   /* largest single tensor (default 16 GiB) */
    int max_graph_depth;       /* deepest subgraph nesting (default 32) */
    /* The data is a private read-only mmap of the model file: while decoding, its pages are dropped before each
     * large tensor is copied out (they come back from the file if touched again), so that the file's bytes and
     * the decoded weights are not both held in memory. */
    int data_is_file_mapping;
} nr_import_limits;

#define NR_IMPORT_LIMITS_DEFAULT { (size_t)16 << 30, 32, 0 }

/* Parse a serialized ModelProto into IR. `source` names the model in messages (a path or "<memory>").
 * base_dir is the folder external data may be read from (NULL forbids external data); locations that escape
 * it (absolute paths, "..", symlinks out) are refused. On failure returns a status with a message naming
 * the file, the node and the field (nr_error). Nodes get `layer` resolved and `params` parsed by the
 * runtime afterwards, not here. */
netrun_status nr_onnx_import(const void *data, size_t size, const char *source, const char *base_dir,
                             const nr_import_limits *limits, nr_model_ir **out);

/* Most nodes the calls of a model's local functions may expand to (default 200,000; tests lower it). */
extern long nr_import_max_expanded_nodes;

/* Parse one serialized TensorProto into an nr_tensor (for .pb input files). name_out (may be NULL) receives
 * a malloc'd copy of the tensor's name. */
netrun_status nr_onnx_parse_tensor(const void *data, size_t size, const char *source, nr_tensor **out,
                                   char **name_out);

#endif
