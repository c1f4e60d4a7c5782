/* Op family: index_ops (definitions: attribute parsing, validation, shape inference). */
#include "layer.h"

const nr_layer nr_layers_index_ops[] = {
    {0},
};
