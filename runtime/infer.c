/*
 * Shapes at prepare (plan layer): bind the inputs' shapes, infer every node in order with value propagation, fold
 * nodes whose inputs are all constant on the backend that folds constants, and give nodes inferred at run time the
 * element types placement needs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "micro_batch.h"
#include "op_inputs.h"
#include "plan.h"
#include "subgraphs.h"


netrun_status nr_bind_inputs(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    for (int i = 0; i < g->n_inputs; i++) {
        int v = g->inputs[i];
        const nr_value *val = &g->values[v];
        nr_svalue *sv = &s->values[v];
        if (sv->is_const) continue; /* left at its default value: a constant (graph_input stays -1) */
        sv->graph_input = i;
        netrun_value_desc *d = &sv->desc;
        d->dtype = val->dtype;
        nr_input *in = &s->inputs[i];
        if (in->set) {
            d->dtype = in->dtype; /* equal to the declared one, or the only one known (subgraph inputs) */
            d->rank = in->rank;
            memcpy(d->dims, in->dims, sizeof d->dims);
            in->plan_rank = in->rank;
            memcpy(in->plan_dims, in->dims, sizeof in->plan_dims);
            /* dims that change between runs: unknown to the plan, so the nodes they reach are inferred and
             * allocated at run time (nr_session_execute gives the value the run's dims) */
            for (int k = 0; k < in->rank; k++)
                if (in->run_time_dims & (1u << k)) d->dims[k] = -1;
            if (in->run_time_dims) sv->dynamic = 1;
        } else {
            if (val->rank < 0)
                return nr_error(NETRUN_ERR_STATE, "input '%s' has no declared shape: set it before prepare",
                                val->name);
            d->rank = val->rank;
            for (int k = 0; k < val->rank; k++) {
                d->dims[k] = val->dims[k];
                for (int j = 0; val->dim_names[k] && j < s->n_dims; j++)
                    if (!strcmp(s->dim_names[j], val->dim_names[k])) d->dims[k] = s->dim_values[j];
                if (d->dims[k] < 0)
                    return nr_error(NETRUN_ERR_STATE,
                                    "input '%s': dim %d%s%s%s is not known: set it with netrun_session_set_dim "
                                    "(CLI: --shape) or set the input before prepare",
                                    val->name, k, val->dim_names[k] ? " ('" : "",
                                    val->dim_names[k] ? val->dim_names[k] : "", val->dim_names[k] ? "')" : "");
            }
        }
        if (d->dtype == NETRUN_DTYPE_UNDEFINED)
            return nr_error(NETRUN_ERR_INVALID_MODEL, "input '%s' has no declared element type", val->name);
        /* declared dims whose element count overflows (found by the fuzzer: Size then overflowed too) */
        for (int k = 0; k < d->rank; k++)
            if (d->dims[k] > NR_MAX_DIM)
                return nr_error(NETRUN_ERR_INVALID_MODEL, "input '%s': dim %d is %lld, over the limit of %lld", val->name,
                                k, (long long)d->dims[k], (long long)NR_MAX_DIM);
        int64_t count = nr_shape_count(d->rank, d->dims);
        size_t bytes;
        if (count == INT64_MAX || (count > 0 && (!nr_mul_size((size_t)count, netrun_dtype_size(d->dtype) ? netrun_dtype_size(d->dtype) : 8, &bytes) ||
                                                 bytes > NR_MAX_VALUE_BYTES)))
            return nr_error(NETRUN_ERR_INVALID_MODEL, "input '%s' would have %lld elements, over the limit of %llu bytes",
                            val->name, (long long)count, (unsigned long long)NR_MAX_VALUE_BYTES);
        if (!in->set) {
            in->plan_rank = d->rank;
            memcpy(in->plan_dims, d->dims, sizeof in->plan_dims);
        }
        if (s->mb) d->dims[0] = s->mb; /* micro-batching: the plan is built for mb images */
        sv->nbytes = nr_desc_bytes(d);
    }
    return NETRUN_OK;
}

void nr_desc_from_tensor(netrun_value_desc *d, const char *name, const nr_tensor *t) {
    d->name = name;
    d->dtype = t->dtype;
    d->rank = t->rank;
    memcpy(d->dims, t->dims, sizeof d->dims);
    d->const_data = t->data;
    d->const_nbytes = t->nbytes;
}

/* Build a node's input/output descs from the current values; with host_values (at run time), inputs carry
 * their data when it is readable on the host (host-domain tensors in place, device ones through host_copy). */
void nr_gather_descs(netrun_session *s, nr_snode *sn, int with_host_values) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    for (int i = 0; i < nd->n_inputs; i++) {
        int v = nd->inputs[i];
        netrun_value_desc *d = &sn->in_desc[i];
        if (v < 0) {
            memset(d, 0, sizeof *d);
            d->name = "";
            d->rank = -1;
            continue;
        }
        nr_svalue *sv = &s->values[v];
        *d = sv->desc;
        if (nr_mb_sliced(s, sn, v)) d->dims[0] = s->mb;
        if (sv->is_const) continue;
        d->const_data = NULL;
        d->const_nbytes = 0;
        if (!with_host_values) continue;
        if (sv->home == NR_HOST_DOMAIN) {
            netrun_tensor t;
            nr_value_tensor(s, v, NR_HOST_DOMAIN, &t);
            d->const_data = t.data;
        } else if (with_host_values == 1)
            d->const_data = sv->host_copy;
        else
            continue; /* 2: host values only; a device one stays unknown */
        d->const_nbytes = sv->nbytes;
    }
    for (int o = 0; o < nd->n_outputs; o++) {
        netrun_value_desc *d = &sn->out_desc[o];
        memset(d, 0, sizeof *d);
        d->rank = -1;
        d->name = nd->outputs[o] >= 0 ? s->model->ir->graph->values[nd->outputs[o]].name : NULL;
    }
}

void nr_gather_out_descs(netrun_session *s, nr_snode *sn) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    for (int o = 0; o < nd->n_outputs; o++) {
        int v = nd->outputs[o];
        if (v < 0) continue;
        sn->out_desc[o] = s->values[v].desc;
        if (nr_mb_sliced(s, sn, v)) sn->out_desc[o].dims[0] = s->mb;
    }
}

netrun_status nr_infer_node(netrun_session *s, nr_snode *sn) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    const nr_layer *l = nd->layer;
    if (l->params_size) memcpy(sn->params, nd->params, l->params_size);
    nr_alloc_list_free(&sn->allocs);
    nr_layer_ctx c = {.node = nd, .opset = nd->opset, .n_in = nd->n_inputs, .in = sn->in_desc,
                      .n_out = nd->n_outputs, .out = sn->out_desc, .allocs = &sn->allocs};
    netrun_status st = l->infer(&c, sn->params);
    if (st != NETRUN_OK) return st;
    for (int o = 0; o < nd->n_outputs; o++) {
        netrun_value_desc *d = &sn->out_desc[o];
        if (!d->name) continue;
        /* ops whose output type comes from a subgraph that does not declare it: the model's declaration */
        if (d->dtype == NETRUN_DTYPE_UNDEFINED && nd->outputs[o] >= 0)
            d->dtype = s->model->ir->graph->values[nd->outputs[o]].dtype;
        /* still unknown, and known only after the run (control flow): a placeholder until the node ran */
        if (d->dtype == NETRUN_DTYPE_UNDEFINED && d->rank >= 0 && nr_shape_count(d->rank, d->dims) < 0)
            d->dtype = NETRUN_DTYPE_FLOAT;
        if (d->rank < 0 || d->rank > NETRUN_MAX_RANK || d->dtype == NETRUN_DTYPE_UNDEFINED)
            return nr_error(NETRUN_ERR_INTERNAL, "node '%s' (%s): output %d was not inferred", nd->name,
                            nd->op_type, o);
        /* a shape whose size overflows or is absurd (hostile pads, huge Expand) stops here, before any kernel */
        for (int k = 0; k < d->rank; k++)
            if (d->dims[k] > NR_MAX_DIM)
                return nr_error(NETRUN_ERR_INVALID_MODEL, "node '%s' (%s): output %d would have a dim of %lld, over "
                                "the limit of %lld", nd->name, nd->op_type, o, (long long)d->dims[k], (long long)NR_MAX_DIM);
        int64_t count = nr_shape_count(d->rank, d->dims);
        size_t bytes;
        if (count == INT64_MAX || (count > 0 && (!nr_mul_size((size_t)count, netrun_dtype_size(d->dtype) ? netrun_dtype_size(d->dtype) : 8, &bytes) ||
                                                 bytes > NR_MAX_VALUE_BYTES)))
            return nr_error(NETRUN_ERR_INVALID_MODEL, "node '%s' (%s): output %d would have %lld elements, over the "
                            "limit of %llu bytes", nd->name, nd->op_type, o, (long long)count,
                            (unsigned long long)NR_MAX_VALUE_BYTES);
    }
    return NETRUN_OK;
}

/* Compute a node at prepare on the backend that folds constants (a host-memory backend declaring
 * NETRUN_BACKEND_FOLDS_CONSTANTS) because all its inputs are constant. Returns 1 when folded. */
static int try_fold(netrun_session *s, nr_snode *sn, const nr_backend *folder, netrun_backend_context **fold_ctx) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    if (!folder || (nd->layer->flags & NR_LAYER_NO_FOLD)) return 0;
    for (int o = 0; o < nd->n_outputs; o++)
        if (nd->outputs[o] >= 0 && nr_shape_count(sn->out_desc[o].rank, sn->out_desc[o].dims) < 0) return 0;
    netrun_node_desc desc = {.struct_size = sizeof desc, .name = nd->name, .op_type = nd->op_type,
                             .domain = nd->domain, .opset = nd->opset, .params = sn->params,
                             .params_size = nd->layer->params_size, .n_inputs = nd->n_inputs,
                             .inputs = sn->in_desc, .n_outputs = nd->n_outputs, .outputs = sn->out_desc};
    netrun_backend_config cfg = nr_backend_config_of(s);
    cfg.threads = 1;
    char why[256];
    if (!folder->api->supports(&cfg, &desc, why, sizeof why)) return 0;
    nr_activity_set(s, NR_ACT_FOLD, sn->node, -1);
    if (!*fold_ctx && folder->api->context_create(&cfg, fold_ctx) != NETRUN_OK) return 0;
    netrun_kernel *k = NULL;
    size_t ws = 0;
    if (folder->api->kernel_create(*fold_ctx, &desc, &k, &ws) != NETRUN_OK) return 0;
    nr_tensor *outs[16] = {0};
    netrun_tensor in_t[64], out_t[16];
    int ok = nd->n_outputs <= 16 && nd->n_inputs <= 64;
    void *wsbuf = ok && ws ? nr_aligned_alloc(ws, 64) : NULL;
    if (ws && !wsbuf) ok = 0;
    for (int i = 0; ok && i < nd->n_inputs; i++) {
        memset(&in_t[i], 0, sizeof in_t[i]);
        const netrun_value_desc *d = &sn->in_desc[i];
        in_t[i].dtype = d->dtype;
        in_t[i].rank = d->rank;
        memcpy(in_t[i].dims, d->dims, sizeof in_t[i].dims);
        in_t[i].data = in_t[i].buffer = (void *)d->const_data;
        in_t[i].nbytes = d->const_nbytes;
    }
    for (int o = 0; ok && o < nd->n_outputs; o++) {
        memset(&out_t[o], 0, sizeof out_t[o]);
        out_t[o].rank = -1;
        if (nd->outputs[o] < 0) continue;
        const netrun_value_desc *d = &sn->out_desc[o];
        size_t want = nr_desc_bytes(d); /* folded values count against the host budget (host_memory.c) */
        if (nr_host_reserve(s, want, "a value folded at prepare") != NETRUN_OK) {
            ok = 0;
            break;
        }
        outs[o] = nr_tensor_new(d->dtype, d->rank, d->dims);
        if (!outs[o]) {
            nr_host_unreserve(s, want);
            ok = 0;
            break;
        }
        if (outs[o]->nbytes != want) { /* strings: pointers */
            nr_host_unreserve(s, want);
            nr_host_charge(s, outs[o]->nbytes);
        }
        out_t[o].dtype = d->dtype;
        out_t[o].rank = d->rank;
        memcpy(out_t[o].dims, d->dims, sizeof out_t[o].dims);
        out_t[o].data = out_t[o].buffer = outs[o]->data;
        out_t[o].nbytes = outs[o]->nbytes;
    }
    if (ok) {
        netrun_kernel_args args = {.struct_size = sizeof args, .params = sn->params, .n_inputs = nd->n_inputs,
                                   .inputs = in_t, .n_outputs = nd->n_outputs, .outputs = out_t,
                                   .workspace = wsbuf, .workspace_size = ws};
        ok = folder->api->kernel_run(*fold_ctx, k, &args) == NETRUN_OK;
    }
    folder->api->kernel_destroy(*fold_ctx, k);
    nr_aligned_free(wsbuf);
    if (!ok) {
        for (int o = 0; o < 16; o++) {
            if (outs[o]) nr_host_unreserve(s, outs[o]->nbytes);
            nr_tensor_free(outs[o]);
        }
        nr_error_clear();
        return 0;
    }
    for (int o = 0; o < nd->n_outputs; o++) {
        int v = nd->outputs[o];
        if (v < 0) continue;
        nr_svalue *sv = &s->values[v];
        sv->folded = outs[o];
        sv->is_const = 1;
        nr_desc_from_tensor(&sv->desc, s->model->ir->graph->values[v].name, outs[o]);
        sv->nbytes = outs[o]->nbytes;
    }
    return 1;
}

static netrun_status check_declared(netrun_session *s, const nr_node *nd, int o) {
    int v = nd->outputs[o];
    const nr_value *val = &s->model->ir->graph->values[v];
    const netrun_value_desc *d = &s->values[v].desc;
    if (val->dtype != NETRUN_DTYPE_UNDEFINED && val->dtype != d->dtype)
        return nr_error(NETRUN_ERR_INVALID_MODEL, "node '%s' (%s): the model declares '%s' as %s but the op produces %s",
                        nd->name, nd->op_type, val->name, netrun_dtype_name(val->dtype), netrun_dtype_name(d->dtype));
    return NETRUN_OK;
}

/* The dtype of an output whose node can only be inferred at run time, for placement decisions before the
 * first run (kernels always see the real dtype): most ops keep their first input's type. */
static netrun_dtype guess_dtype(netrun_session *s, const nr_node *nd, int o) {
    if (nd->layer && (nd->layer->flags & NR_LAYER_CONTROL_FLOW)) { /* what the subgraphs declare, not the condition's */
        int loop = !strcmp(nd->op_type, "Loop"), carried = loop ? nd->n_inputs - 2 : nd->n_inputs;
        if (!strcmp(nd->op_type, "Scan")) {
            const nr_cf_params *p = nd->params;
            carried = p ? nd->n_inputs - p->n_scan_inputs : 0;
        }
        if (strcmp(nd->op_type, "If") && o < carried && nd->inputs[(loop ? 2 : 0) + o] >= 0)
            return s->values[nd->inputs[(loop ? 2 : 0) + o]].desc.dtype;
        for (int a = 0; a < nd->n_attrs; a++) {
            const nr_graph *b = nd->attrs[a].type == NR_ATTR_GRAPH ? nd->attrs[a].g : NULL;
            int k = o + (loop ? 1 : 0);
            if (b && k < b->n_outputs && b->values[b->outputs[k]].dtype) return b->values[b->outputs[k]].dtype;
        }
    }
    /* the schema's type rule for this output: a fixed type, or the type of one of the inputs */
    int rule = nr_op_output_type(nd->domain, nd->op_type, nd->opset, o);
    if (rule > 0) return (netrun_dtype)rule;
    if (rule < 0 && -1 - rule < nd->n_inputs && nd->inputs[-1 - rule] >= 0 &&
        s->values[nd->inputs[-1 - rule]].desc.dtype != NETRUN_DTYPE_UNDEFINED)
        return s->values[nd->inputs[-1 - rule]].desc.dtype;
    static const char *const int64_ops[] = {"Shape", "Size", "NonZero", "ArgMax", "ArgMin", NULL};
    static const char *const bool_ops[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not",
                                           "And", "Or", "Xor", "IsNaN", "IsInf", NULL};
    for (int i = 0; int64_ops[i]; i++)
        if (!strcmp(nd->op_type, int64_ops[i])) return NETRUN_DTYPE_INT64;
    for (int i = 0; bool_ops[i]; i++)
        if (!strcmp(nd->op_type, bool_ops[i])) return NETRUN_DTYPE_BOOL;
    for (int a = 0; a < nd->n_attrs; a++) {
        const nr_attr *at = &nd->attrs[a];
        if (!strcmp(nd->op_type, "Cast") && !strcmp(at->name, "to") && at->type == NR_ATTR_INT) return (netrun_dtype)at->i;
        if (!strcmp(nd->op_type, "ConstantOfShape") && !strcmp(at->name, "value") && at->t) return at->t->dtype;
    }
    if (!strcmp(nd->op_type, "ConstantOfShape")) return NETRUN_DTYPE_FLOAT;
    /* CastLike takes the type of its second input, Where that of X (its first input is the bool condition) */
    if ((!strcmp(nd->op_type, "CastLike") || !strcmp(nd->op_type, "Where")) && nd->n_inputs > 1 && nd->inputs[1] >= 0)
        return s->values[nd->inputs[1]].desc.dtype;
    for (int i = 0; i < nd->n_inputs; i++)
        if (nd->inputs[i] >= 0) return s->values[nd->inputs[i]].desc.dtype;
    return NETRUN_DTYPE_FLOAT;
}

/* Infer a node whose input dims are not all known with 1 for each unknown dim: the output types and ranks it
 * gives are those of any run (ONNX types never depend on data); its dims are thrown away. 0 when the inference
 * needs a value known only at run time or refuses the stand-in dims; the error is then cleared. */
static int infer_types(netrun_session *s, nr_snode *sn) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    for (int i = 0; i < nd->n_inputs; i++) {
        netrun_value_desc *d = &sn->in_desc[i];
        if (nd->inputs[i] < 0) continue;
        if (d->rank < 0 || d->rank > NETRUN_MAX_RANK || d->dtype == NETRUN_DTYPE_UNDEFINED) return 0;
        for (int k = 0; k < d->rank; k++)
            if (d->dims[k] < 0) d->dims[k] = 1;
    }
    netrun_status st = nr_infer_node(s, sn);
    for (int i = 0; i < nd->n_inputs; i++) /* the stand-ins must not outlive the call; out_desc keeps the types */
        if (nd->inputs[i] >= 0) {
            const nr_svalue *sv = &s->values[nd->inputs[i]];
            sn->in_desc[i] = sv->desc;
            if (!sv->is_const) sn->in_desc[i].const_data = NULL, sn->in_desc[i].const_nbytes = 0;
        }
    if (st != NETRUN_OK) nr_error_clear();
    return st == NETRUN_OK;
}

netrun_status nr_infer_all(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    const nr_backend *folder = nr_backends_find_role(NETRUN_BACKEND_FOLDS_CONSTANTS | NETRUN_BACKEND_HOST_MEMORY);
    netrun_backend_context *fold_ctx = NULL;
    netrun_status st = NETRUN_OK;
    for (int k = 0; k < s->n_snodes && st == NETRUN_OK; k++) {
        nr_snode *sn = &s->snodes[k];
        const nr_node *nd = &g->nodes[sn->node];
        if (s->mb_head && k == s->mb_head) nr_micro_batch_cut(s); /* the rest of the nodes see the whole batch */
        sn->slot = -2; /* not placed yet */
        if (!nd->layer) {
            st = nr_error(NETRUN_ERR_UNSUPPORTED, "node '%s': op '%s%s%s' is not known to netrun nor defined by a "
                          "plugin", nd->name,
                          *nd->domain ? nd->domain : "", *nd->domain ? "." : "", nd->op_type);
            break;
        }
        if (nd->opset && nd->opset < nd->layer->min_opset) {
            st = nr_error(NETRUN_ERR_UNSUPPORTED, "node '%s' (%s): opset %d is older than netrun supports (%d)",
                          nd->name, nd->op_type, nd->opset, nd->layer->min_opset);
            break;
        }
        int dyn_in = 0;
        for (int i = 0; i < nd->n_inputs; i++)
            if (nd->inputs[i] >= 0 && s->values[nd->inputs[i]].dynamic) dyn_in = 1;
        nr_gather_descs(s, sn, 0);
        if (!dyn_in) {
            st = nr_infer_node(s, sn);
            if (st == NR_STATUS_NEED_VALUE) {
                dyn_in = 1;
                st = NETRUN_OK;
                nr_error_clear();
            } else if (st != NETRUN_OK)
                break;
        }
        /* Shape and Size read only the shape of their input: with static shapes they are constants, which
         * turns the Shape -> Gather -> Concat -> Reshape subgraphs of exported models into constants too. */
        int shape_only = !*nd->domain && (!strcmp(nd->op_type, "Shape") || !strcmp(nd->op_type, "Size"));
        int all_const = !dyn_in;
        for (int i = 0; i < nd->n_inputs && all_const && !shape_only; i++)
            if (nd->inputs[i] >= 0 && !s->values[nd->inputs[i]].is_const) all_const = 0;
        if (all_const && try_fold(s, sn, folder, &fold_ctx)) {
            sn->slot = -1;
            sn->reason = nr_strdup(shape_only ? "folded at prepare: its input's shape is known"
                                              : "folded at prepare: all inputs are constant");
            s->stats.n_folded++;
            for (int o = 0; o < nd->n_outputs && st == NETRUN_OK; o++)
                if (nd->outputs[o] >= 0) st = check_declared(s, nd, o);
            continue;
        }
        sn->dynamic = dyn_in;
        /* Element types and ranks of a node inferred only at run time: its inference on stand-in dims (1 where a
         * dim is unknown), so that placement sees TopK's int64 indices or Gather's index type, not a guess. */
        int typed = dyn_in && infer_types(s, sn);
        /* A node inferred only at run time still gets its parsed attributes for placement (Cast's `to`...). */
        if (dyn_in && nd->layer->params_size) memcpy(sn->params, nd->params, nd->layer->params_size);
        int guess_rank = 1;
        for (int i = 0; i < nd->n_inputs; i++)
            if (nd->inputs[i] >= 0 && s->values[nd->inputs[i]].desc.rank >= 0) {
                guess_rank = s->values[nd->inputs[i]].desc.rank;
                break;
            }
        for (int o = 0; o < nd->n_outputs; o++) {
            int v = nd->outputs[o];
            if (v < 0) continue;
            nr_svalue *sv = &s->values[v];
            sv->producer = k;
            if (dyn_in) {
                sv->dynamic = 1;
                sv->desc.name = g->values[v].name;
                sv->desc.dtype = g->values[v].dtype ? g->values[v].dtype
                                 : typed ? sn->out_desc[o].dtype : guess_dtype(s, nd, o);
                /* rank -1 means "absent" to backends: the declared rank, the stand-in inference's, else a guess
                 * (dims stay -1) */
                sv->desc.rank = g->values[v].rank >= 0 ? g->values[v].rank : typed ? sn->out_desc[o].rank : guess_rank;
                for (int d = 0; d < NETRUN_MAX_RANK; d++) sv->desc.dims[d] = -1;
                continue;
            }
            sv->desc = sn->out_desc[o];
            if (nr_shape_count(sv->desc.rank, sv->desc.dims) < 0) {
                sv->dynamic = 1; /* data-dependent (NonZero...): the kernel allocates it */
                sn->dynamic = 1;
            }
            sv->nbytes = nr_desc_bytes(&sv->desc);
            st = check_declared(s, nd, o);
            if (st != NETRUN_OK) break;
        }
        if (sn->dynamic) s->dynamic = 1;
    }
    if (fold_ctx) folder->api->context_destroy(fold_ctx);
    return st;
}

