/* Ops defined by backend plugins (netrun_op_def, ABI 1.9): checked when a plugin loads, gathered once every plugin
 * is loaded, and then found like the built-in layers of layers/registry.c. */
#ifndef NR_PLUGIN_OPS_H
#define NR_PLUGIN_OPS_H

#include "backend_registry.h"
#include "layer.h"

/* At load: NULL when the plugin's op_defs are well formed and redefine no op of netrun's own, else the reason
 * (malloc'ed) the plugin is unavailable. */
char *nr_plugin_ops_check(const netrun_backend_api *api);

/* The definition a plugin gives of (domain, op_type) at `opset` (any version when opset <= 0): NETRUN_OK with
 * *out set, or NULL when no available plugin defines it; an error naming both plugins when two define it. Loads
 * every plugin the first time. */
netrun_status nr_plugin_op_find(const char *domain, const char *op_type, int opset, const nr_layer **out);

/* The plugin that defines a layer, or NULL for netrun's own layers. */
const nr_backend *nr_plugin_op_definer(const nr_layer *layer);

/* The node's inputs and outputs against the definition's counts (source: the model's path, for messages). */
netrun_status nr_plugin_op_check_node(const nr_layer *layer, const nr_node *nd, const char *source);

/* The plugins' op definitions, index 0.. until NULL (netrun_op_count, --support-matrix). */
const nr_layer *nr_plugin_op_at(int index);

#endif
