/* Preprocessing in the graph (the session's preprocess.* options): a model input taken as uint8 frames, converted by
 * an ImagePreprocess node (layers/preprocess.c) on whichever backend runs its consumers. */
#ifndef NR_PREPROCESS_H
#define NR_PREPROCESS_H

#include "model.h"

/* A copy of m whose float input named by preprocess.input is a uint8 [N, H, W, C] frame input of the same name
 * (H and W symbolic: "<name>_height", "<name>_width"; the float value is renamed "<name>/preprocessed"), read by an
 * ImagePreprocess node from the other preprocess.* options. *out = NULL when the option is not set or m is a
 * control-flow body. Errors name the option. */
netrun_status nr_preprocess_model(netrun_model *m, const netrun_options *o, netrun_model **out);
/* Whether a preprocess.* key's free-text value parses (mean, std, size); *says: what it takes. */
int nr_preprocess_value_ok(const char *key, const char *value, const char **says);

#endif
