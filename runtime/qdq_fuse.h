/* QDQ fusion: the QuantizeLinear / DequantizeLinear groups a QDQ-quantized model carries around each Conv and
 * MatMul, rewritten into the standard ONNX quantized ops that compute the same thing in integers:
 *
 *   DequantizeLinear(x), DequantizeLinear(w) [, DequantizeLinear(b)] -> Conv [-> Relu | Clip] -> QuantizeLinear
 *       => QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp [, b as int32])
 *   DequantizeLinear(a), DequantizeLinear(b) -> MatMul -> QuantizeLinear  => QLinearMatMul
 *
 * See docs/design.md, "Graph passes", for what is exact and what is left alone. */
#ifndef NR_QDQ_FUSE_H
#define NR_QDQ_FUSE_H

#include "session.h"

/* Called by nr_optimize_session before its own passes. When a group can be fused (the Conv or MatMul, its DQs
 * and its Q placed on one backend whose supports() takes the quantized op), builds a private copy of the
 * session's model with the groups rewritten and returns it in *out (the copy holds a reference on the
 * original; prepare then plans the copy, on which the other passes run). *out = NULL when nothing applies or
 * the model is such a copy already. *n_fused: groups rewritten. */
netrun_status nr_qdq_fuse_session(netrun_session *s, const netrun_backend_config *cfg, netrun_model **out,
                                  int *n_fused);

#endif
