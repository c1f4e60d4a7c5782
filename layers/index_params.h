/* Params of the index_ops family (and the leftover ops it hosts); to move into netrun_ops.h later. */
#ifndef NR_INDEX_PARAMS_H
#define NR_INDEX_PARAMS_H

#include <stdint.h>

/* Unique: over the flattened input (has_axis 0) or over slices along axis. */
typedef struct netrun_unique_params {
    int sorted;
    int has_axis;
    int axis;            /* non-negative when has_axis */
    int present[4];      /* which of Y, indices, inverse_indices, counts the node asks for */
} netrun_unique_params;

/* OneHot: output inserts a dim of size depth at axis. */
typedef struct netrun_onehot_params {
    int axis;            /* non-negative, in the output's rank */
    int64_t depth;
} netrun_onehot_params;

/* Compress: along axis, or over the flattened input when has_axis is 0. */
typedef struct netrun_compress_params {
    int has_axis;
    int axis;
} netrun_compress_params;

/* ReverseSequence. */
typedef struct netrun_reverse_sequence_params {
    int time_axis, batch_axis; /* 0 and 1 in some order */
} netrun_reverse_sequence_params;

/* TensorScatter: write update into a copy of past_cache along axis at write_indices[batch]. */
typedef struct netrun_tensor_scatter_params {
    int axis;            /* non-negative, >= 1 */
    int circular;
} netrun_tensor_scatter_params;

/* TfIdfVectorizer over integer tokens: the pool's n-grams (lengths in [min_gram, max_gram]) as a table. */
typedef struct netrun_tfidf_params {
    int mode;            /* 0 TF, 1 IDF, 2 TFIDF */
    int64_t min_gram, max_gram, max_skip;
    int64_t output_size;
    int64_t n_grams;
    const int64_t *grams; /* n_grams rows of (length, first item in pool, output column) */
    const int64_t *pool;  /* pool_int64s */
    const float *weights; /* output_size weights, or NULL */
} netrun_tfidf_params;

/* ai.onnx.preview.training Adagrad, Adam, Momentum over n tensors: inputs R, T, then groups of n. */
typedef enum netrun_optimizer_kind { NETRUN_OPT_ADAGRAD = 0, NETRUN_OPT_ADAM = 1, NETRUN_OPT_MOMENTUM = 2 }
    netrun_optimizer_kind;
typedef struct netrun_optimizer_params {
    int kind;            /* netrun_optimizer_kind */
    int n;               /* tensors optimized */
    int nesterov;        /* Momentum mode "nesterov" */
    float alpha, beta, epsilon, decay_factor, norm_coefficient, norm_coefficient_post;
} netrun_optimizer_params;

#endif
