/*
 * Subgraphs of control flow (If, Loop, Scan) at load: each GRAPH attribute is compiled into a model of its own, and
 * the values a subgraph reads from enclosing graphs ("captures") become extra inputs of that model. The executor
 * runs them (control_flow.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "subgraphs.h"

/* ---- load: captures and sub-models ---- */

static int defined_in(const nr_graph *g, int v, const char *produced) {
    return produced[v] || g->values[v].constant || g->values[v].is_graph_input;
}

/* Make every name a graph reads but does not define an input of that graph (recursively, deepest first), so
 * that each subgraph can be checked and run as a model of its own. The main graph keeps its undefined names:
 * the graph checks report them. */
netrun_status nr_resolve_captures(nr_graph *g, const char *source, int depth) {
    if (depth > 64) return nr_error(NETRUN_ERR_INVALID_MODEL, "%s: subgraphs nested too deeply", source);
    for (int n = 0; n < g->n_nodes; n++)
        for (int a = 0; a < g->nodes[n].n_attrs; a++) {
            nr_attr *at = &g->nodes[n].attrs[a];
            if (at->type == NR_ATTR_GRAPH && at->g) {
                netrun_status st = nr_resolve_captures(at->g, source, depth + 1);
                if (st != NETRUN_OK) return st;
            }
        }
    if (!g->parent) return NETRUN_OK;
    if (g->n_formal_inputs < 0) g->n_formal_inputs = g->n_inputs;
    /* names that nested subgraphs capture become values here first (they may pass through this graph) */
    for (int n = 0; n < g->n_nodes; n++)
        for (int a = 0; a < g->nodes[n].n_attrs; a++) {
            const nr_graph *sub = g->nodes[n].attrs[a].type == NR_ATTR_GRAPH ? g->nodes[n].attrs[a].g : NULL;
            for (int k = sub ? sub->n_formal_inputs : 0; sub && k < sub->n_inputs; k++)
                if (nr_graph_value(g, sub->values[sub->inputs[k]].name) < 0)
                    return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        }
    char *produced = nr_calloc((size_t)g->n_values + 1, 1);
    if (!produced) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    for (int n = 0; n < g->n_nodes; n++)
        for (int o = 0; o < g->nodes[n].n_outputs; o++)
            if (g->nodes[n].outputs[o] >= 0) produced[g->nodes[n].outputs[o]] = 1;
    netrun_status st = NETRUN_OK;
    /* names read by nodes, graph outputs, and captures of nested subgraphs */
    int n_values = g->n_values;
    for (int v = 0; v < n_values && st == NETRUN_OK; v++) {
        if (defined_in(g, v, produced)) continue;
        int used = 0;
        for (int n = 0; n < g->n_nodes && !used; n++) {
            for (int i = 0; i < g->nodes[n].n_inputs; i++)
                if (g->nodes[n].inputs[i] == v) used = 1;
            for (int a = 0; a < g->nodes[n].n_attrs && !used; a++) {
                const nr_graph *sub = g->nodes[n].attrs[a].type == NR_ATTR_GRAPH ? g->nodes[n].attrs[a].g : NULL;
                for (int k = sub ? sub->n_formal_inputs : 0; sub && k < sub->n_inputs; k++)
                    if (!strcmp(sub->values[sub->inputs[k]].name, g->values[v].name)) used = 1;
            }
        }
        for (int k = 0; k < g->n_outputs; k++)
            if (g->outputs[k] == v) used = 1;
        if (!used) continue;
        /* the enclosing graphs must know it */
        const nr_graph *p = g->parent;
        while (p && nr_graph_find_value(p, g->values[v].name) < 0) p = p->parent;
        if (!p) {
            st = nr_error(NETRUN_ERR_INVALID_MODEL,
                          "%s: subgraph '%s' reads '%s', which neither it nor an enclosing graph defines", source,
                          g->name, g->values[v].name);
            break;
        }
        st = nr_graph_add_input(g, v);
    }
    nr_free(produced);
    return st;
}

int nr_node_captures(const nr_graph *g, const nr_node *nd, int *out, int max) {
    int n = 0;
    for (int a = 0; a < nd->n_attrs; a++) {
        const nr_graph *sub = nd->attrs[a].type == NR_ATTR_GRAPH ? nd->attrs[a].g : NULL;
        for (int k = sub && sub->n_formal_inputs >= 0 ? sub->n_formal_inputs : 0; sub && k < sub->n_inputs; k++) {
            int v = nr_graph_find_value(g, sub->values[sub->inputs[k]].name);
            if (v < 0) continue;
            int dup = 0;
            for (int j = 0; j < n; j++) dup |= out[j] == v;
            if (!dup && n < max) out[n++] = v;
        }
    }
    return n;
}

/* Compile each GRAPH attribute of the model's nodes into a sub-model. */
netrun_status nr_compile_subgraphs(netrun_model *m) {
    nr_graph *g = m->ir->graph;
    for (int n = 0; n < g->n_nodes; n++)
        for (int a = 0; a < g->nodes[n].n_attrs; a++) {
            nr_attr *at = &g->nodes[n].attrs[a];
            if (at->type != NR_ATTR_GRAPH || !at->g || at->sub_model) continue;
            nr_model_ir *ir = nr_calloc(1, sizeof *ir);
            if (!ir) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
            ir->graph = at->g;
            ir->borrowed_graph = 1;
            ir->ir_version = m->ir->ir_version;
            ir->opsets = nr_calloc((size_t)m->ir->n_opsets + 1, sizeof *ir->opsets);
            if (!ir->opsets) {
                nr_free(ir);
                return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
            }
            for (int k = 0; k < m->ir->n_opsets; k++) {
                ir->opsets[k].version = m->ir->opsets[k].version;
                ir->opsets[k].domain = nr_strdup(m->ir->opsets[k].domain);
                ir->n_opsets++;
                if (!ir->opsets[k].domain) {
                    nr_model_ir_free(ir);
                    return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
                }
            }
            char source[512];
            snprintf(source, sizeof source, "%s: node '%s' (%s) attribute '%s'", m->source, g->nodes[n].name,
                     g->nodes[n].op_type, at->name);
            netrun_status st = nr_model_from_ir(ir, source, &at->sub_model);
            if (st != NETRUN_OK) return st;
            at->sub_model->n_formal_inputs = at->g->n_formal_inputs >= 0 ? at->g->n_formal_inputs : at->g->n_inputs;
        }
    return NETRUN_OK;
}

