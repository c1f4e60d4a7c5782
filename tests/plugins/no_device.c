/* Test plugin: a well-formed backend whose probe finds no device, as a GPU backend on a machine without a
 * GPU. Every slot is a stub; only probe is ever called. */
#include "netrun_backend.h"

static const netrun_host_api *host;

static netrun_status probe(char *msg, size_t size) {
    (void)msg;
    (void)size;
    return host->error(NETRUN_ERR_BACKEND, "no device found");
}
static int device_count(void) { return 0; }
static int supports(const netrun_backend_config *c, const netrun_node_desc *n, char *r, size_t s) {
    (void)c;
    (void)n;
    (void)r;
    (void)s;
    return 0;
}
static netrun_status fail(void) { return host->error(NETRUN_ERR_BACKEND, "nodevice: not usable"); }
static netrun_status context_create(const netrun_backend_config *c, netrun_backend_context **o) {
    (void)c;
    (void)o;
    return fail();
}
static void context_destroy(netrun_backend_context *c) { (void)c; }
static netrun_status buffer_alloc(netrun_backend_context *c, size_t b, void **o) {
    (void)c;
    (void)b;
    (void)o;
    return fail();
}
static void buffer_free(netrun_backend_context *c, void *b) {
    (void)c;
    (void)b;
}
static void *buffer_address(netrun_backend_context *c, void *b) {
    (void)c;
    (void)b;
    return NULL;
}
static netrun_status copy_from_host(netrun_backend_context *c, void *b, size_t o, const void *s, size_t n) {
    (void)c, (void)b, (void)o, (void)s, (void)n;
    return fail();
}
static netrun_status copy_to_host(netrun_backend_context *c, void *d, const void *b, size_t o, size_t n) {
    (void)c, (void)d, (void)b, (void)o, (void)n;
    return fail();
}
static netrun_status kernel_create(netrun_backend_context *c, const netrun_node_desc *n, netrun_kernel **o,
                                   size_t *w) {
    (void)c, (void)n, (void)o, (void)w;
    return fail();
}
static netrun_status kernel_run(netrun_backend_context *c, netrun_kernel *k, const netrun_kernel_args *a) {
    (void)c, (void)k, (void)a;
    return fail();
}
static void kernel_destroy(netrun_backend_context *c, netrun_kernel *k) {
    (void)c;
    (void)k;
}

static const netrun_backend_api api = {
    .abi_version = NETRUN_ABI_VERSION,
    .struct_size = sizeof(netrun_backend_api),
    .name = "nodevice",
    .description = "test plugin: probe always fails",
    .probe = probe,
    .device_count = device_count,
    .supports = supports,
    .context_create = context_create,
    .context_destroy = context_destroy,
    .buffer_alloc = buffer_alloc,
    .buffer_free = buffer_free,
    .buffer_address = buffer_address,
    .copy_from_host = copy_from_host,
    .copy_to_host = copy_to_host,
    .kernel_create = kernel_create,
    .kernel_run = kernel_run,
    .kernel_destroy = kernel_destroy,
};

NETRUN_BACKEND_EXPORT const netrun_backend_api *netrun_backend_entry(const netrun_host_api *h) {
    if (!h || NETRUN_ABI_MAJOR_OF(h->abi_version) != NETRUN_ABI_MAJOR) return NULL;
    host = h;
    return &api;
}
