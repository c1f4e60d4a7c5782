/* Op family: transformer (definitions: attribute parsing, validation, shape inference). */
#include "layer.h"

const nr_layer nr_layers_transformer[] = {
    {0},
};
