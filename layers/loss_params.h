/* Params of the ops added with the loss family (and of a few norm ops) that include/netrun_ops.h lacks yet.
 * Included by the layers and by the CPU kernels; the lead moves them into netrun_ops.h later. */
#ifndef NETRUN_LOSS_PARAMS_H
#define NETRUN_LOSS_PARAMS_H

#include <stdint.h>

#include "netrun_ops.h"

/* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss. */
typedef enum netrun_loss_reduction { NETRUN_LOSS_NONE = 0, NETRUN_LOSS_SUM = 1, NETRUN_LOSS_MEAN = 2 } netrun_loss_reduction;
typedef struct netrun_loss_params {
    int reduction;                         /* netrun_loss_reduction */
    int has_ignore_index;
    int64_t ignore_index;
} netrun_loss_params;

/* Einsum, resolved against the input shapes: every dim of every operand and of the output carries a label
 * id in [0, n_labels); ellipsis dims get their own ids. Labels of no output dim are summed over. */
#define NETRUN_EINSUM_MAX_INPUTS 8
#define NETRUN_EINSUM_MAX_LABELS (52 + NETRUN_MAX_RANK)
typedef struct netrun_einsum_params {
    int n_inputs;
    int n_labels;
    int64_t label_dim[NETRUN_EINSUM_MAX_LABELS];
    int in_rank[NETRUN_EINSUM_MAX_INPUTS];
    int in_label[NETRUN_EINSUM_MAX_INPUTS][NETRUN_MAX_RANK];
    int out_rank;
    int out_label[NETRUN_MAX_RANK];
} netrun_einsum_params;

/* LpNormalization. */
typedef struct netrun_lpnorm_params {
    int axis;                              /* non-negative */
    int64_t p;                             /* 1 or 2 */
} netrun_lpnorm_params;

/* LRN. */
typedef struct netrun_lrn_params {
    float alpha, beta, bias;
    int64_t size;
} netrun_lrn_params;

/* MeanVarianceNormalization uses netrun_reduce_params (axes sorted, non-negative). Swish uses
 * netrun_unary_params (alpha). */

#endif
