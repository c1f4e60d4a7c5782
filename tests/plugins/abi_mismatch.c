/* Test plugin: built for a future ABI major. The host must list it unavailable with "ABI mismatch". */
#include "netrun_backend.h"

static const netrun_backend_api api = {
    .abi_version = (uint32_t)(((NETRUN_ABI_MAJOR + 1) << 16) | 3),
    .struct_size = sizeof(netrun_backend_api),
    .name = "abimismatch",
};

NETRUN_BACKEND_EXPORT const netrun_backend_api *netrun_backend_entry(const netrun_host_api *host) {
    (void)host;
    return &api;
}
