/* Op family: signal (definitions: attribute parsing, validation, shape inference). */
#include "layer.h"

const nr_layer nr_layers_signal[] = {
    {0},
};
