/* Test plugin: same ABI major, but its table ends before the slots the host requires (struct_size too
 * small), as a broken or pre-release plugin would. */
#include <stddef.h>

#include "netrun_backend.h"

static const netrun_backend_api api = {
    .abi_version = NETRUN_ABI_VERSION,
    .struct_size = (uint32_t)offsetof(netrun_backend_api, probe),
    .name = "shortapi",
};

NETRUN_BACKEND_EXPORT const netrun_backend_api *netrun_backend_entry(const netrun_host_api *host) {
    (void)host;
    return &api;
}
