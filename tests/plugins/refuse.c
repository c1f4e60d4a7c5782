/* Test plugin: its entry point refuses every host (returns NULL). */
#include "netrun_backend.h"

NETRUN_BACKEND_EXPORT const netrun_backend_api *netrun_backend_entry(const netrun_host_api *host) {
    (void)host;
    return NULL;
}
