/* A persistent thread pool: threads-1 workers; the caller thread works too. Work is handed out in chunks
 * through an atomic counter, so uneven chunks balance themselves.
 *
 * Between jobs a worker spins for a while (cpu.spin_us, default 20 ms) watching for the next job before it
 * sleeps on a condition variable, and the caller spins the same way for the workers to finish. A run is a
 * train of short parallel regions (one or more per node): waking a sleeping thread costs 30-200 us on a VM, as
 * much as a whole small node. The spin covers the gaps inside a run and the caller's usual work between two
 * runs (reading outputs, preparing the next input: 0.1-1 ms): with 100 us, a Python loop that reads the
 * outputs found the worker asleep at the start of most runs (6% of SqueezeNet's parallel regions ran on the
 * caller alone), with 2 ms at none. Runs that come after an idle gap (a camera's frames, requests) were still
 * slow with 2 ms: on the 2-vCPU VM, 60 ms after the last run, MobileNetV2 at batch 1 took 11.6-11.9 ms instead
 * of 3.9 back to back (onnxruntime 6.5-9.3), SqueezeNet 8.9-9.3 (onnxruntime 4.7-6.1), ShuffleNetV2 10-11
 * (6.2-8.1). The time goes to the parallel regions themselves, not to waiting for a worker (timed per region):
 * both vCPUs compute slowly after the worker's had been halted most of the gap. A worker spinning 20 ms of the
 * 60 gives 5.1-9.5, 4.2-7.1 and 6.2-7.1 ms, level with onnxruntime; 5 or 10 ms did not help, 50 ms little more;
 * back-to-back runs and ResNet-50 are unchanged. The spin is bounded so idle or oversubscribed machines get
 * their cores back (onnxruntime's workers spin about 50 ms); cpu.spin_us=0 sleeps at once (a laptop that
 * infers now and then).
 *
 * Spinning is wrong while another busy process shares the cores: a spinning thread looks CPU-hungry to the
 * kernel, which then runs it in turn with the other process in slices of milliseconds, and a region waits a
 * whole slice for a preempted worker; the caller spinning on the other core also keeps the kernel from moving
 * the preempted worker there. So each thread of a region checks, at most every 10 ms, how long it waited for a
 * core: over a tenth of the time marks the pool contended, and for a while nobody spins (workers sleep between
 * regions, the caller sleeps while it waits). A sleeping thread is woken ahead of a busy one, and an idle core
 * pulls a preempted worker over. With a busy loop on one of 2 cores, ResNet-50 at 2 threads took 54.6 ms with
 * the fixed spin and 37.6 ms with the watch (onnxruntime 45.1); on a quiet machine the spin stays (sleeping at
 * once doubled MobileNetV2's 2.6 ms). Time a hypervisor gives the VM's cores to other guests is no run-queue
 * wait inside the guest, so the watch does not react to it (cpu.spin_watch=0 turns it off).
 *
 * Pools are shared: the CPU contexts of a process with the same thread count, spin time and watch use one pool
 * (counted references). With a pool per session, an application running two sessions in turn (a detector, then
 * a classifier) had N threads per session on its cores, and the first session's spinning worker took a core
 * from the second: SqueezeNet then MobileNetV2 at 2 threads, 5.3 ms a pair with 100 us spins, 6.4 with 2 ms.
 * A region runs on the pool when no other caller holds it; a caller that finds it taken (another application
 * thread running a session at the same moment, or a region opened inside a region) runs its region itself,
 * since the pool's cores are busy anyway. (Running every kernel on oneDNN's OpenMP team instead was measured 5x
 * slower on a loaded machine: OpenMP workers spin for 200 ms between regions.) */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cpu_internal.h"

/* The job state, one atomic word: generation << 17 | CLOSED | workers inside the job (16 bits). A worker joins
 * the current job only while it is open; the caller closes it once every chunk is handed out and then waits only
 * for the workers that joined. A worker still asleep or descheduled (a loaded machine) is never waited for. */
#define ACTIVE_MASK 0xffffull
#define CLOSED 0x10000ull
#define GEN_SHIFT 17

struct cpu_pool {
    int n_workers;
    int spin_us, watch, refs; /* the sharing key (with n_workers) and the contexts using it, under g_pools_mu */
    cpu_pool *next_shared; /* the process's list of pools */
    atomic_int taken;      /* a caller is running a region on the pool */
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
    atomic_llong calm_at; /* now_ns() from which spinning is right again (contention watch) */
    _Atomic int64_t calm_ns; /* the length of the last quiet period */
    atomic_int contended_seen; /* contended periods so far, for the log */
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

/* The contention watch (see the top): every WATCH_NS at most, a thread of a region reads how long it waited
 * runnable for a core (Linux's /proc/thread-self/schedstat, second field). A quiet machine shows about 1%; a
 * busy loop on the same core, half the time; a short job starting on the machine, one window of 20-30%. Over a
 * tenth in STRIKES windows in a row marks the pool contended (one window alone paid 200 ms of sleeping for a
 * blip) for CALM_MIN_NS, twice as long each time contention is back as soon as the pool spins again (up to
 * CALM_MAX_NS): a lasting busy loop then costs 30 ms of spinning in 1.6 s, a passing one (another library's
 * workers spinning down) 50 ms of sleeping. While the pool is contended nobody samples, so it spins again
 * when that ends and looks anew. */
#define WATCH_NS 10000000ll
#define CALM_MIN_NS 50000000ll
#define CALM_MAX_NS 1600000000ll
#define STRIKES 3
static _Thread_local int64_t tl_watch_at, tl_watch_wait = -1;
static _Thread_local int tl_strikes;

static int64_t runqueue_wait_ns(void) {
    char buf[96];
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0) return -1;
    buf[k] = 0;
    char *end;
    strtoll(buf, &end, 10); /* time on a CPU */
    if (end == buf) return -1;
    char *w = end;
    long long v = strtoll(w, &end, 10);
    return end == w ? -1 : v;
}

static void watch_preemption(cpu_pool *p) {
    if (!p->watch) return;
    int64_t now = now_ns();
    if (now - tl_watch_at < WATCH_NS) return;
    if (now < atomic_load_explicit(&p->calm_at, memory_order_relaxed)) {
        tl_watch_wait = -1; /* start afresh once the pool spins again */
        tl_strikes = 0;
        return;
    }
    int64_t wait = runqueue_wait_ns();
    int busy = wait >= 0 && tl_watch_wait >= 0 && (wait - tl_watch_wait) * 10 > now - tl_watch_at;
    tl_strikes = busy ? tl_strikes + 1 : 0;
    if (tl_strikes >= STRIKES) {
        tl_strikes = 0;
        int k = atomic_fetch_add(&p->contended_seen, 1);
        if (cpu_host->log)
            cpu_host->log(k ? NETRUN_LOG_DEBUG : NETRUN_LOG_INFO, "cpu",
                          "another process is taking CPU time from the thread pool (a thread waited %.1f of %.1f ms "
                          "for a core): threads sleep instead of spinning while that lasts (cpu.spin_watch=0 keeps "
                          "them spinning)",
                          (double)(wait - tl_watch_wait) / 1e6, (double)(now - tl_watch_at) / 1e6);
        /* contention again right after a quiet period: it lasts, so stay quiet twice as long */
        int64_t end = atomic_load_explicit(&p->calm_at, memory_order_relaxed);
        int64_t calm = atomic_load_explicit(&p->calm_ns, memory_order_relaxed);
        calm = end && now - end < 2 * CALM_MIN_NS ? (calm * 2 < CALM_MAX_NS ? calm * 2 : CALM_MAX_NS) : CALM_MIN_NS;
        atomic_store_explicit(&p->calm_ns, calm, memory_order_relaxed); /* a race picks one of two lengths */
        atomic_store_explicit(&p->calm_at, now + calm, memory_order_relaxed);
        wait = -1;
    }
    tl_watch_at = now;
    tl_watch_wait = wait;
}

/* The spin time now: none while the pool is contended. */
static int64_t spin_budget(cpu_pool *p, int64_t *now) {
    *now = now_ns();
    return *now < atomic_load_explicit(&p->calm_at, memory_order_relaxed) ? 0 : p->spin_ns;
}

/* Spin while cond holds, for at most the pool's spin time. */
#define SPIN_WHILE(p, cond)                                                                                      \
    do {                                                                                                       \
        if ((p)->spin_ns <= 0) break;                                                                          \
        int64_t t_now_;                                                                                        \
        int64_t budget_ = spin_budget(p, &t_now_);                                                             \
        if (budget_ <= 0) break;                                                                               \
        int64_t t_end_ = t_now_ + budget_;                                                                     \
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
        watch_preemption(p); /* after leaving the job: its file read must not hold up the caller */
    }
    return NULL;
}

static atomic_int last_threads = 1;
int cpu_pool_last_threads(void) { return atomic_load(&last_threads); }

static pthread_mutex_t g_pools_mu = PTHREAD_MUTEX_INITIALIZER;
static cpu_pool *g_pools;

static void pool_free(cpu_pool *p);

int cpu_pool_contended_count(cpu_pool *p) { return p ? atomic_load(&p->contended_seen) : 0; }

cpu_pool *cpu_pool_create(int threads, int spin_us, int watch) {
    atomic_store(&last_threads, threads > 0 ? threads : 1);
    int want = threads > 1 ? threads - 1 : 0;
    pthread_mutex_lock(&g_pools_mu);
    for (cpu_pool *q = g_pools; q; q = q->next_shared)
        if (q->n_workers == want && q->spin_us == spin_us && q->watch == watch) {
            q->refs++;
            pthread_mutex_unlock(&g_pools_mu);
            return q;
        }
    cpu_pool *p = cpu_host->alloc(sizeof *p, 64);
    if (!p) {
        pthread_mutex_unlock(&g_pools_mu);
        return NULL;
    }
    memset(p, 0, sizeof *p);
    p->spin_us = spin_us;
    p->watch = watch;
    p->refs = 1;
    atomic_init(&p->taken, 0);
    p->spin_ns = spin_us > 0 ? (int64_t)spin_us * 1000 : 0;
    atomic_init(&p->state, 0);
    atomic_init(&p->stop, 0);
    atomic_init(&p->next, 0);
    atomic_init(&p->calm_at, 0);
    atomic_init(&p->calm_ns, CALM_MIN_NS);
    atomic_init(&p->contended_seen, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    if (want) {
        p->workers = cpu_host->alloc(sizeof(pthread_t) * (size_t)want, 16);
        if (!p->workers) {
            pthread_mutex_unlock(&g_pools_mu);
            pool_free(p);
            return NULL;
        }
        for (int i = 0; i < want; i++) {
            if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) break;
            p->n_workers++;
        }
    }
    if (p->n_workers == want) { /* a pool short of threads is this context's alone */
        p->next_shared = g_pools;
        g_pools = p;
    }
    pthread_mutex_unlock(&g_pools_mu);
    return p;
}

void cpu_pool_destroy(cpu_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&g_pools_mu);
    if (--p->refs > 0) {
        pthread_mutex_unlock(&g_pools_mu);
        return;
    }
    for (cpu_pool **q = &g_pools; *q; q = &(*q)->next_shared)
        if (*q == p) {
            *q = p->next_shared;
            break;
        }
    pthread_mutex_unlock(&g_pools_mu);
    pool_free(p);
}

static void pool_free(cpu_pool *p) {
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
    int free_ = 0;
    if (threads == 1 || n <= grain ||
        !atomic_compare_exchange_strong_explicit(&p->taken, &free_, 1, memory_order_acquire, memory_order_relaxed)) {
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
    watch_preemption(p);
    /* every chunk is handed out: close the job, then wait for the workers inside it */
    unsigned long long st = atomic_fetch_or_explicit(&p->state, CLOSED, memory_order_acq_rel);
    if (st & ACTIVE_MASK) {
        SPIN_WHILE(p, atomic_load_explicit(&p->state, memory_order_acquire) & ACTIVE_MASK);
        if (atomic_load_explicit(&p->state, memory_order_acquire) & ACTIVE_MASK) {
            pthread_mutex_lock(&p->mu);
            while (atomic_load(&p->state) & ACTIVE_MASK) pthread_cond_wait(&p->done, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
    }
    atomic_store_explicit(&p->taken, 0, memory_order_release);
}
