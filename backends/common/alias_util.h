/* Helpers of the plugins' may_alias answers (plugin ABI 1.5; backends/cpu/inplace.c, backends/cuda/inplace.c):
 * which op lists apply is each backend's own business (it depends on how its kernels read and write), these
 * two checks are the same everywhere. Header-only: each plugin is its own shared library. */
#ifndef NETRUN_ALIAS_UTIL_H
#define NETRUN_ALIAS_UTIL_H

#include <string.h>

#include "netrun_backend.h"

/* Same dtype and the same fully known dims: an output can take such an input's bytes element for element. */
static inline int nr_alias_same_shape(const netrun_value_desc *a, const netrun_value_desc *b) {
    if (a->rank < 0 || a->rank != b->rank || a->dtype != b->dtype) return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] < 0 || a->dims[d] != b->dims[d]) return 0;
    return 1;
}

/* op is in the NULL-terminated list. */
static inline int nr_alias_listed(const char *op, const char *const *list) {
    for (int i = 0; list[i]; i++)
        if (!strcmp(op, list[i])) return 1;
    return 0;
}

#endif
