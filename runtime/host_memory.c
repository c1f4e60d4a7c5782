/*
 * The host memory budget of a session (option limits.host_memory, netrun_options_set_host_memory_budget,
 * `netrun --host-memory`). A hostile model must not take the machine's memory: a Loop whose carried value
 * doubles, or whose scan outputs grow by a megabyte an iteration, once reached 4-6 GB before anything failed.
 *
 * What counts: every block the runtime allocates for a session and its subgraphs (If/Loop/Scan sub-sessions
 * count into the session that runs them): input copies, the activation arena and workspace of the host domain,
 * values with run-time shapes and kernels' dynamic outputs, values folded at prepare, host copies of device
 * values, output staging buffers, Loop carried values and scan outputs, Scan slices. Not counted: the model
 * (its weights are loaded before any session exists; netrun_load_limits bounds them) and what backends allocate
 * inside their kernels (packed weights).
 *
 * The rules mirror the device budget's: checked before allocating, a failure says the numbers (what was asked,
 * what the session holds, the budget), the session stays usable. Default: half of the machine's memory, or of
 * the cgroup's limit when that is lower (a container), so that one session never takes the whole machine.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "session.h"

/* The cgroup's memory limit (v2 memory.max, else v1 memory.limit_in_bytes), or 0 when none is set. */
static size_t cgroup_limit(void) {
    static const char *const files[] = {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        FILE *f = fopen(files[i], "re");
        if (!f) continue;
        char buf[64] = "";
        int ok = fgets(buf, sizeof buf, f) != NULL;
        fclose(f);
        unsigned long long v = 0;
        if (ok && sscanf(buf, "%llu", &v) == 1 && v > 0 && v < ((unsigned long long)1 << 62)) return (size_t)v;
    }
    return 0;
}

size_t nr_host_memory_default(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t phys = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : (size_t)8 << 30;
    size_t cg = cgroup_limit();
    if (cg && cg < phys) phys = cg;
    return phys / 2;
}

static netrun_session *budget_root(netrun_session *s) { return s->root ? s->root : s; }

size_t nr_host_budget(const netrun_session *s) {
    const netrun_session *r = s->root ? s->root : s;
    size_t b = r->opts.host_memory_budget;
    return b ? b : nr_host_memory_default();
}

netrun_status nr_host_reserve(netrun_session *s, size_t bytes, const char *what) {
    netrun_session *r = budget_root(s);
    size_t budget = nr_host_budget(r), after;
    if (!nr_add_size(r->host_bytes, bytes, &after) || (budget != SIZE_MAX && after > budget))
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY,
                        "host memory budget exceeded: %zu bytes for %s on top of the %zu the session%s holds, "
                        "budget %zu (limits.host_memory%s)", bytes, what, r->host_bytes,
                        r == s ? "" : " with its subgraphs", budget,
                        r->opts.host_memory_budget ? "" : ": half of this machine's memory by default");
    r->host_bytes = after;
    if (after > r->stats.host_peak_bytes) r->stats.host_peak_bytes = after;
    return NETRUN_OK;
}

void nr_host_charge(netrun_session *s, size_t bytes) {
    netrun_session *r = budget_root(s);
    r->host_bytes += bytes;
    if (r->host_bytes > r->stats.host_peak_bytes) r->stats.host_peak_bytes = r->host_bytes;
}

void nr_host_unreserve(netrun_session *s, size_t bytes) {
    netrun_session *r = budget_root(s);
    r->host_bytes = bytes <= r->host_bytes ? r->host_bytes - bytes : 0;
}

void *nr_host_alloc(netrun_session *s, size_t bytes, const char *what) {
    size_t n = bytes ? bytes : 1;
    if (nr_host_reserve(s, n, what) != NETRUN_OK) return NULL;
    void *p = nr_aligned_alloc(n, 64);
    if (!p) {
        nr_host_unreserve(s, n);
        nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory: %s needs %zu bytes of host memory", what, n);
    }
    return p;
}

void nr_host_free(netrun_session *s, void *p, size_t bytes) {
    if (!p) return;
    nr_aligned_free(p);
    nr_host_unreserve(s, bytes ? bytes : 1);
}
