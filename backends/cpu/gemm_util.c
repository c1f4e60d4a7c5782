/* Shared helpers of the conv/gemm/norm/pool kernels (see gemm_util.h). */
#include <pthread.h>

#include "gemm_util.h"

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_init(void) { openblas_set_num_threads(1); }
void gu_blas_single_thread(void) { pthread_once(&blas_once, blas_init); }

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
