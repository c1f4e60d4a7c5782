/* A persistent thread pool: threads-1 workers sleep on a condition variable; the caller thread works too.
 * Work is handed out in chunks through an atomic counter, so uneven chunks balance themselves.
 * (Running every kernel on oneDNN's OpenMP team instead was tried and measured 5x slower on a loaded
 * machine: OpenMP workers spin between regions, these workers sleep.) */
#include <pthread.h>
#include <stdatomic.h>

#include "cpu_internal.h"

struct cpu_pool {
    int n_workers;
    pthread_t *workers;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    uint64_t generation;     /* bumped for each job */
    int stop;
    int busy;                /* workers still inside the current job */
    /* the current job */
    cpu_range_fn fn;
    void *arg;
    int64_t n, chunk;
    atomic_llong next;
};

static void run_chunks(cpu_pool *p) {
    for (;;) {
        int64_t b = atomic_fetch_add(&p->next, p->chunk);
        if (b >= p->n) break;
        int64_t e = b + p->chunk < p->n ? b + p->chunk : p->n;
        p->fn(p->arg, b, e);
    }
}

static void *worker_main(void *arg) {
    cpu_pool *p = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        run_chunks(p);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static atomic_int last_threads = 1;
int cpu_pool_last_threads(void) { return atomic_load(&last_threads); }

cpu_pool *cpu_pool_create(int threads) {
    atomic_store(&last_threads, threads > 0 ? threads : 1);
    cpu_pool *p = cpu_host->alloc(sizeof *p, 64);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    int want = threads > 1 ? threads - 1 : 0;
    if (want) {
        p->workers = cpu_host->alloc(sizeof(pthread_t) * (size_t)want, 16);
        if (!p->workers) {
            cpu_pool_destroy(p);
            return NULL;
        }
        for (int i = 0; i < want; i++) {
            if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) break;
            p->n_workers++;
        }
    }
    return p;
}

void cpu_pool_destroy(cpu_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_workers; i++) pthread_join(p->workers[i], NULL);
    if (p->workers) cpu_host->free(p->workers);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    cpu_host->free(p);
}

void cpu_parallel_for(cpu_context *ctx, int64_t n, int64_t grain, cpu_range_fn fn, void *arg) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    cpu_pool *p = ctx ? ctx->pool : NULL;
    int threads = p ? p->n_workers + 1 : 1;
    if (threads == 1 || n <= grain) {
        fn(arg, 0, n);
        return;
    }
    /* about 4 chunks per thread for balance, never below grain */
    int64_t chunk = (n + threads * 4 - 1) / (threads * 4);
    if (chunk < grain) chunk = grain;
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = chunk;
    atomic_store(&p->next, 0);
    p->busy = p->n_workers;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_chunks(p);
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
