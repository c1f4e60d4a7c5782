/* A persistent thread pool: threads-1 workers; the caller thread works too. Work is handed out in chunks
 * through an atomic counter, so uneven chunks balance themselves.
 *
 * Between jobs a worker spins for a short while (cpu.spin_us, default 100 us) watching for the next job before
 * it sleeps on a condition variable, and the caller spins the same way for the workers to finish. A run is a
 * train of short parallel regions (one or more per node): waking a sleeping thread costs 10-50 us on a VM, as
 * much as a whole small node, and was a large part of the gap to onnxruntime (whose workers spin) on small
 * models. The spin is bounded so idle or oversubscribed machines still get their cores back; cpu.spin_us=0
 * sleeps at once. (Running every kernel on oneDNN's OpenMP team instead was measured 5x slower on a loaded
 * machine: OpenMP workers spin for 200 ms between regions.) */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "cpu_internal.h"

/* The job state, one atomic word: generation << 17 | CLOSED | workers inside the job (16 bits). A worker joins
 * the current job only while it is open; the caller closes it once every chunk is handed out and then waits only
 * for the workers that joined. A worker still asleep or descheduled (a loaded machine) is never waited for. */
#define ACTIVE_MASK 0xffffull
#define CLOSED 0x10000ull
#define GEN_SHIFT 17

struct cpu_pool {
    int n_workers;
    pthread_t *workers;
    int64_t spin_ns;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    atomic_ullong state; /* generation bumped under mu for each job */
    atomic_int stop;
    /* the current job, written before the generation is bumped, read only by workers that joined it */
    cpu_range_fn fn;
    void *arg;
    int64_t n, chunk;
    atomic_llong next;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Spin while cond holds, for at most the pool's spin time. */
#define SPIN_WHILE(p, cond)                                                                                      \
    do {                                                                                                       \
        if ((p)->spin_ns <= 0) break;                                                                          \
        int64_t t_end_ = now_ns() + (p)->spin_ns;                                                              \
        for (unsigned k_ = 1; (cond); k_++) {                                                                  \
            cpu_relax();                                                                                       \
            if (!(k_ & 63) && now_ns() > t_end_) break;                                                        \
        }                                                                                                      \
    } while (0)

static void run_chunks(cpu_pool *p) {
    for (;;) {
        int64_t b = atomic_fetch_add(&p->next, p->chunk);
        if (b >= p->n) break;
        int64_t e = b + p->chunk < p->n ? b + p->chunk : p->n;
        p->fn(p->arg, b, e);
    }
}

static inline unsigned long long gen_of(unsigned long long s) { return s >> GEN_SHIFT; }

static void *worker_main(void *arg) {
    cpu_pool *p = arg;
    unsigned long long seen = 0;
    for (;;) {
        SPIN_WHILE(p, gen_of(atomic_load_explicit(&p->state, memory_order_relaxed)) == seen &&
                          !atomic_load_explicit(&p->stop, memory_order_relaxed));
        if (gen_of(atomic_load(&p->state)) == seen && !atomic_load(&p->stop)) {
            /* the generation is bumped under mu, so checking it under mu cannot miss a wake-up */
            pthread_mutex_lock(&p->mu);
            while (!atomic_load(&p->stop) && gen_of(atomic_load(&p->state)) == seen)
                pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) break;
        unsigned long long s = atomic_load_explicit(&p->state, memory_order_acquire);
        seen = gen_of(s);
        /* join while the job is open and still the one seen */
        int joined = 0;
        while (!(s & CLOSED) && gen_of(s) == seen) {
            if (atomic_compare_exchange_weak_explicit(&p->state, &s, s + 1, memory_order_acq_rel,
                                                      memory_order_acquire)) {
                joined = 1;
                break;
            }
        }
        if (!joined) continue;
        run_chunks(p);
        unsigned long long before = atomic_fetch_sub_explicit(&p->state, 1, memory_order_acq_rel);
        if ((before & ACTIVE_MASK) == 1 && (before & CLOSED)) {
            pthread_mutex_lock(&p->mu); /* the caller checks the count under mu before it sleeps */
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

static atomic_int last_threads = 1;
int cpu_pool_last_threads(void) { return atomic_load(&last_threads); }

cpu_pool *cpu_pool_create(int threads, int spin_us) {
    atomic_store(&last_threads, threads > 0 ? threads : 1);
    cpu_pool *p = cpu_host->alloc(sizeof *p, 64);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->spin_ns = spin_us > 0 ? (int64_t)spin_us * 1000 : 0;
    atomic_init(&p->state, 0);
    atomic_init(&p->stop, 0);
    atomic_init(&p->next, 0);
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
    atomic_store(&p->stop, 1);
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
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = chunk;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    pthread_mutex_lock(&p->mu);
    unsigned long long g = gen_of(atomic_load(&p->state)) + 1;
    atomic_store_explicit(&p->state, g << GEN_SHIFT, memory_order_release); /* open, nobody inside */
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_chunks(p);
    /* every chunk is handed out: close the job, then wait for the workers inside it */
    unsigned long long st = atomic_fetch_or_explicit(&p->state, CLOSED, memory_order_acq_rel);
    if (!(st & ACTIVE_MASK)) return;
    SPIN_WHILE(p, atomic_load_explicit(&p->state, memory_order_acquire) & ACTIVE_MASK);
    if (atomic_load_explicit(&p->state, memory_order_acquire) & ACTIVE_MASK) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->state) & ACTIVE_MASK) pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}
