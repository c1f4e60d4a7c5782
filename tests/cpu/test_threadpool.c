/* The CPU plugin's thread pool (backends/cpu/threadpool.c) on its own: many short parallel regions of changing
 * sizes, 2-4 threads, with and without spinning; every index must be visited exactly once per region. Catches
 * a lost wake-up (hangs: ctest's timeout), a chunk run twice or skipped, or a region returning before workers
 * finish (the totals come out wrong). Then the sharing: contexts with the same thread count and spin get one
 * pool, and two application threads opening regions on it at the same time (one runs its regions itself while
 * the other holds the pool) still visit every index exactly once. Last the contention watch: with a busy loop on
 * every core, a spinning pool must notice that its threads wait for cores and stop spinning, and still visit
 * every index exactly once. Run it under ThreadSanitizer too when touching the pool. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu_internal.h"

static void *host_alloc(size_t bytes, size_t align) {
    void *p = NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    return posix_memalign(&p, align, bytes ? bytes : 1) ? NULL : p;
}
static void host_free(void *p) { free(p); }
static void host_log(netrun_log_level level, const char *backend, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("log %d %s: ", (int)level, backend);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}
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

/* every index i must hold (regions covering i) * (i + 1) */
static int check(const int64_t *v, const char *what) {
    for (int64_t i = 0; i < N; i++) {
        int64_t visits = 0;
        for (int r = 0; r < REGIONS; r++) visits += i < region_size(r);
        if (v[i] != visits * (i + 1)) {
            fprintf(stderr, "FAIL: %s: index %lld visited %lld times, expected %lld\n", what, (long long)i,
                    (long long)(v[i] / (i + 1)), (long long)visits);
            return 1;
        }
    }
    return 0;
}

typedef struct {
    cpu_context *ctx;
    int64_t *v;
} app_thread;

static void *app_main(void *arg) {
    app_thread *a = arg;
    job j = {a->v};
    for (int r = 0; r < REGIONS; r++) cpu_parallel_for(a->ctx, region_size(r), 1, add_index, &j);
    return NULL;
}

static int shared_pools(void) {
    cpu_context c1, c2;
    memset(&c1, 0, sizeof c1);
    memset(&c2, 0, sizeof c2);
    c1.pool = cpu_pool_create(3, 100, 1);
    c2.pool = cpu_pool_create(3, 100, 1);
    cpu_pool *other = cpu_pool_create(2, 100, 1);
    if (!c1.pool || c1.pool != c2.pool || !other || other == c1.pool) {
        fprintf(stderr, "FAIL: two contexts of 3 threads should share one pool, one of 2 threads get its own\n");
        return 1;
    }
    cpu_pool_destroy(other);
    int64_t *v1 = calloc(N, sizeof *v1), *v2 = calloc(N, sizeof *v2);
    if (!v1 || !v2) return 1;
    app_thread a1 = {&c1, v1}, a2 = {&c2, v2};
    pthread_t t1, t2;
    if (pthread_create(&t1, NULL, app_main, &a1) || pthread_create(&t2, NULL, app_main, &a2)) return 1;
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    cpu_pool_destroy(c1.pool);
    job j = {v1}; /* the pool outlives its first context */
    for (int r = 0; r < REGIONS; r++) cpu_parallel_for(&c2, region_size(r), 1, add_index, &j);
    cpu_pool_destroy(c2.pool);
    int bad = check(v2, "shared pool, second application thread");
    for (int64_t i = 0; i < N; i++) v1[i] /= 2; /* two passes over v1 */
    bad = bad || check(v1, "shared pool, first application thread then the pool's last context");
    free(v1);
    free(v2);
    if (!bad) printf("ok: one pool shared by two contexts, regions from two application threads at once\n");
    return bad;
}

static atomic_int hogs_stop;
static void *hog_main(void *arg) {
    (void)arg;
    volatile double x = 1;
    while (!atomic_load_explicit(&hogs_stop, memory_order_relaxed)) x *= 1.0000001;
    return NULL;
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One busy loop per core plus a 2-thread pool that spins 2 ms: the pool's threads wait for cores half the time,
 * so within a second the watch must have stopped the spinning; the regions stay exact meanwhile. */
static int contention_watch(void) {
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f) {
        printf("skip: contention watch (no /proc/thread-self/schedstat)\n");
        return 0;
    }
    fclose(f);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    if (cores > 64) cores = 64;
    pthread_t hogs[64];
    int n_hogs = 0;
    atomic_store(&hogs_stop, 0);
    for (long i = 0; i < cores; i++)
        if (!pthread_create(&hogs[n_hogs], NULL, hog_main, NULL)) n_hogs++;
    cpu_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.pool = cpu_pool_create(2, 2000, 1);
    int64_t *v = calloc(N, sizeof *v);
    int bad = !ctx.pool || !v;
    int seen = 0, passes = 0;
    job j = {v};
    for (double t0 = seconds(); !bad && !seen && seconds() - t0 < 3.0; passes++) {
        memset(v, 0, N * sizeof *v);
        for (int r = 0; r < REGIONS; r++) cpu_parallel_for(&ctx, region_size(r), 1, add_index, &j);
        bad = check(v, "contention watch");
        seen = cpu_pool_contended_count(ctx.pool);
    }
    atomic_store(&hogs_stop, 1);
    for (int i = 0; i < n_hogs; i++) pthread_join(hogs[i], NULL);
    if (!bad && !seen) {
        fprintf(stderr, "FAIL: %d busy loops on %ld cores for 3 s, and the pool never stopped spinning\n", n_hogs,
                cores);
        bad = 1;
    }
    if (ctx.pool) cpu_pool_destroy(ctx.pool);
    free(v);
    if (!bad) printf("ok: with a busy loop on each of %ld cores the pool stopped spinning (%d passes)\n", cores, passes);
    return bad;
}

int main(void) {
    host.alloc = host_alloc;
    host.free = host_free;
    host.log = host_log;
    static const int spins[] = {0, 5, 100, 2000};
    for (int t = 2; t <= 4; t++)
        for (int s = 0; s < (int)(sizeof spins / sizeof *spins); s++) {
            cpu_context ctx;
            memset(&ctx, 0, sizeof ctx);
            ctx.pool = cpu_pool_create(t, spins[s], 1);
            if (!ctx.pool) {
                fprintf(stderr, "FAIL: cpu_pool_create(%d, %d)\n", t, spins[s]);
                return 1;
            }
            int64_t *v = calloc(N, sizeof *v);
            if (!v) return 1;
            job j = {v};
            for (int r = 0; r < REGIONS; r++) cpu_parallel_for(&ctx, region_size(r), 1, add_index, &j);
            cpu_pool_destroy(ctx.pool);
            char what[64];
            snprintf(what, sizeof what, "%d threads, spin %d us", t, spins[s]);
            if (check(v, what)) return 1;
            free(v);
            printf("ok: %d threads, spin %d us, %d regions\n", t, spins[s], REGIONS);
        }
    return shared_pools() || contention_watch();
}
