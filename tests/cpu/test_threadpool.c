/* The CPU plugin's thread pool (backends/cpu/threadpool.c) on its own: many short parallel regions of changing
 * sizes, 2-4 threads, with and without spinning; every index must be visited exactly once per region. Catches
 * a lost wake-up (hangs: ctest's timeout), a chunk run twice or skipped, or a region returning before workers
 * finish (the totals come out wrong). Run it under ThreadSanitizer too when touching the pool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

static void *host_alloc(size_t bytes, size_t align) {
    void *p = NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    return posix_memalign(&p, align, bytes ? bytes : 1) ? NULL : p;
}
static void host_free(void *p) { free(p); }
static netrun_host_api host;
const netrun_host_api *cpu_host = &host;

typedef struct {
    int64_t *v;
} job;

static void add_index(void *arg, int64_t b, int64_t e) {
    job *j = arg;
    for (int64_t i = b; i < e; i++) j->v[i] += i + 1;
}

enum { N = 1000, REGIONS = 20000 };

static int64_t region_size(int r) { return (r % 7) * 150 + 1; }

int main(void) {
    host.alloc = host_alloc;
    host.free = host_free;
    static const int spins[] = {0, 5, 100};
    for (int t = 2; t <= 4; t++)
        for (int s = 0; s < 3; s++) {
            cpu_context ctx;
            memset(&ctx, 0, sizeof ctx);
            ctx.pool = cpu_pool_create(t, spins[s]);
            if (!ctx.pool) {
                fprintf(stderr, "FAIL: cpu_pool_create(%d, %d)\n", t, spins[s]);
                return 1;
            }
            int64_t *v = calloc(N, sizeof *v);
            if (!v) return 1;
            job j = {v};
            for (int r = 0; r < REGIONS; r++) cpu_parallel_for(&ctx, region_size(r), 1, add_index, &j);
            cpu_pool_destroy(ctx.pool);
            for (int64_t i = 0; i < N; i++) {
                int64_t visits = 0;
                for (int r = 0; r < REGIONS; r++) visits += i < region_size(r);
                if (v[i] != visits * (i + 1)) {
                    fprintf(stderr, "FAIL: %d threads, spin %d us: index %lld visited %lld times, expected %lld\n", t,
                            spins[s], (long long)i, (long long)(v[i] / (i + 1)), (long long)visits);
                    return 1;
                }
            }
            free(v);
            printf("ok: %d threads, spin %d us, %d regions\n", t, spins[s], REGIONS);
        }
    return 0;
}
