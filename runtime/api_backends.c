/* Public API over the backend registry: netrun_backend_count / get_info / device_describe. */
#include <stdio.h>
#include <string.h>

#include "backend_registry.h"
#include "status.h"
#include "layer.h"
#include "plugin_ops.h"

NETRUN_API int netrun_backend_count(void) { return nr_backends_count(); }

static const nr_backend *backend_at(int index, const char *fn) {
    int n = nr_backends_count();
    const nr_backend *b = nr_backends_get(index);
    if (!b)
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: backend index %d out of range (%d backend%s found)", fn, index, n,
                 n == 1 ? "" : "s");
    return b;
}

static void fill_info(const nr_backend *b, netrun_backend_info *info) {
    info->name = b->name;
    info->path = b->path;
    info->available = b->available;
    /* One line either way: the device summary when usable, else why not. */
    info->reason = b->available ? (b->summary ? b->summary : "") : (b->reason ? b->reason : "unavailable");
    info->device_count = b->available ? b->device_count : 0;
    info->is_gpu = b->api && (b->api->flags & NETRUN_BACKEND_GPU) != 0;
}

NETRUN_API netrun_status netrun_backend_get_info(int index, netrun_backend_info *info) {
    if (!info) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_backend_get_info: info is NULL");
    const nr_backend *b = backend_at(index, "netrun_backend_get_info");
    if (!b) return NETRUN_ERR_INVALID_ARGUMENT;
    fill_info(b, info);
    return NETRUN_OK;
}

NETRUN_API int netrun_backend_find(const char *name, netrun_backend_info *info) {
    if (!name || !*name) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_backend_find: empty name");
        return -1;
    }
    const nr_backend *b = nr_backends_lookup(name); /* loads only libnetrun-NAME.so unless no file has the name */
    int index = b ? nr_backends_index_of(b) : -1;
    if (index < 0) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "no backend plugin named '%s' was found", name);
        return -1;
    }
    if (info) fill_info(b, info);
    return index;
}

NETRUN_API netrun_status netrun_backend_device_describe(int index, int device, char *buf, size_t buf_size) {
    if (!buf || buf_size == 0)
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_backend_device_describe: empty output buffer");
    buf[0] = 0;
    const nr_backend *b = backend_at(index, "netrun_backend_device_describe");
    if (!b) return NETRUN_ERR_INVALID_ARGUMENT;
    if (!b->available)
        return nr_error(NETRUN_ERR_STATE, "backend '%s' is unavailable: %s", b->name,
                        b->reason ? b->reason : "unknown reason");
    if (device < 0 || device >= b->device_count)
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "backend '%s' has %d device%s; device %d does not exist", b->name,
                        b->device_count, b->device_count == 1 ? "" : "s", device);
    if (!NR_API_HAS(b->api, device_describe)) {
        /* Optional slot: the probe's summary is the best description there is. */
        snprintf(buf, buf_size, "%s", b->summary ? b->summary : b->name);
        return NETRUN_OK;
    }
    nr_error_clear(); /* so a plugin that fails without a message is not blamed with a stale one */
    netrun_status st = b->api->device_describe(device, buf, buf_size);
    buf[buf_size - 1] = 0;
    if (st != NETRUN_OK) {
        const char *e = nr_error_message();
        if (!e || !*e) return nr_error(st, "backend '%s': device_describe(%d) failed without a message", b->name, device);
        nr_error_prefix("backend '%s' device %d: ", b->name, device);
    }
    return st;
}

NETRUN_API int netrun_backend_op_count(int index) {
    const nr_backend *b = nr_backends_get(index);
    return b && b->api ? (int)b->api->op_table_len : 0;
}

NETRUN_API netrun_status netrun_backend_op_get(int index, int row, netrun_op_support_info *info) {
    if (!info) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_backend_op_get: info is NULL");
    const nr_backend *b = backend_at(index, "netrun_backend_op_get");
    if (!b) return NETRUN_ERR_INVALID_ARGUMENT;
    if (!b->api || row < 0 || (size_t)row >= b->api->op_table_len)
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "backend '%s' has no support-matrix row %d", b->name, row);
    const netrun_op_support *r = &b->api->op_table[row];
    info->domain = r->domain ? r->domain : "";
    info->op_type = r->op_type ? r->op_type : "";
    info->dtypes = r->dtypes;
    info->constraints = r->constraints ? r->constraints : "";
    return NETRUN_OK;
}

/* netrun's own ops, then those the plugins define (ABI 1.9). */
static int core_op_count(void) {
    int n = 0;
    while (nr_layer_at(n)) n++;
    return n;
}

NETRUN_API int netrun_op_count(void) {
    int n = core_op_count(), p = 0;
    while (nr_plugin_op_at(p)) p++;
    return n + p;
}

NETRUN_API netrun_status netrun_op_get(int i, const char **domain, const char **op_type) {
    int core = core_op_count();
    const nr_layer *l = i < core ? nr_layer_at(i) : nr_plugin_op_at(i - core);
    if (!l) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_op_get: op index %d out of range", i);
    if (domain) *domain = l->domain ? l->domain : "";
    if (op_type) *op_type = l->op_type;
    return NETRUN_OK;
}
