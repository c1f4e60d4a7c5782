/* Op family: quantize (definitions: attribute parsing, validation, shape inference). */
#include "layer.h"

const nr_layer nr_layers_quantize[] = {
    {0},
};
