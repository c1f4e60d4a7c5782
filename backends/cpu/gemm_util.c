/* Shared helpers of the conv/gemm/norm/pool kernels (see gemm_util.h). */
#include <pthread.h>

#include "gemm_util.h"

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_init(void) { openblas_set_num_threads(1); }
void gu_blas_single_thread(void) { pthread_once(&blas_once, blas_init); }

/* As elementwise.c: the float loops are compiled for AVX-512, AVX2+FMA and baseline and the loader picks one
 * (target_clones), so the default build still uses the whole vector unit (cpu_expf vectorizes). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(NETRUN_NO_CLONES)
#define GU_SIMD __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#else
#define GU_SIMD
#endif

GU_SIMD void gu_swish_n(float *y, int64_t n, float bias, float alpha) {
    for (int64_t i = 0; i < n; i++) {
        float v = y[i] + bias;
        y[i] = v / (1.0f + cpu_expf(-alpha * v));
    }
}

GU_SIMD void gu_sigmoid_n(float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = 1.0f / (1.0f + cpu_expf(-y[i]));
}

typedef struct slot_job {
    int64_t tasks, slots;
    gu_slot_fn fn;
    void *arg;
} slot_job;

static void slot_range(void *arg, int64_t b, int64_t e) {
    slot_job *j = arg;
    for (int64_t s = b; s < e; s++) {
        int64_t t0 = j->tasks * s / j->slots, t1 = j->tasks * (s + 1) / j->slots;
        if (t1 > t0) j->fn(j->arg, s, t0, t1);
    }
}

void gu_run_slots(cpu_context *ctx, int64_t tasks, int64_t slots, gu_slot_fn fn, void *arg) {
    if (tasks <= 0) return;
    if (slots < 1) slots = 1;
    if (slots > tasks) slots = tasks;
    slot_job j = {tasks, slots, fn, arg};
    if (slots == 1) {
        fn(arg, 0, 0, tasks);
        return;
    }
    cpu_parallel_for(ctx, slots, 1, slot_range, &j);
}
