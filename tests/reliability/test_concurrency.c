/* Concurrency: 8 threads, each with its own CPU session (1 thread each) on one shared model, run
 * examples/tiny_cnn.onnx 1,000 times each on inputs that change from run to run. Every output must equal
 * the single-threaded reference bit for bit, and the process RSS after 1,000 runs per thread must stay
 * within a small slack of the RSS after 100 (no per-run leak). Environment: REL_THREADS, REL_RUNS.
 * `--backend NAME` runs the same on another backend (e.g. cuda: each thread its own context and stream, a fixed
 * workspace cap so every session picks the same algorithms); exit 77 (skipped) when NAME is unavailable. */
#include <pthread.h>
#include <unistd.h>

#include "rel_common.h"

#ifndef NR_SOURCE_DIR
#define NR_SOURCE_DIR "."
#endif

#if defined(__SANITIZE_ADDRESS__)
#define REL_ASAN 1 /* ASan's quarantine keeps freed memory: RSS says nothing there */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REL_ASAN 1
#endif
#endif
#ifndef REL_ASAN
#define REL_ASAN 0
#endif

#define N_INPUTS 4
static float inputs[N_INPUTS][CNN_ELEMS];
static float refs[N_INPUTS][10];
static netrun_model *model;
static int runs = 1000;
static pthread_barrier_t at_100, at_end, measured_100;
static long rss_100, rss_end;
static const char *backend = "cpu";

/* A session on `backend` alone (strict), one CPU thread. */
static netrun_status make_session(netrun_model *m, netrun_session **out) {
    if (!strcmp(backend, "cpu")) return cpu_session(m, out);
    netrun_options *o = NULL;
    netrun_status st = netrun_options_create(&o);
    if (st == NETRUN_OK) st = netrun_options_set_backends(o, backend);
    if (st == NETRUN_OK) st = netrun_options_set_strict(o, 1);
    if (st == NETRUN_OK) st = netrun_options_set_threads(o, 1);
    if (st == NETRUN_OK) st = netrun_options_set_workspace(o, NETRUN_WORKSPACE_BALANCED, (size_t)64 << 20);
    if (st == NETRUN_OK) st = netrun_session_create(m, o, out);
    netrun_options_destroy(o);
    return st;
}

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (!f) return 0;
    if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
    fclose(f);
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

typedef struct worker {
    int id;
    long mismatches, errors;
    char first_error[256];
} worker;

static void *work(void *arg) {
    worker *w = arg;
    netrun_session *s = NULL;
    if (make_session(model, &s) != NETRUN_OK) {
        w->errors = runs;
        snprintf(w->first_error, sizeof w->first_error, "%s", netrun_last_error());
    }
    for (int r = 0; r < runs; r++) {
        if (s) {
            int k = (r + w->id) % N_INPUTS;
            netrun_tensor_view y;
            netrun_status st = netrun_session_set_input(s, "image", NETRUN_DTYPE_FLOAT, 4, cnn_dims, inputs[k],
                                                        sizeof inputs[k]);
            if (st == NETRUN_OK) st = netrun_session_run(s);
            if (st == NETRUN_OK) st = netrun_session_output(s, 0, &y);
            if (st != NETRUN_OK) {
                if (!w->errors++) snprintf(w->first_error, sizeof w->first_error, "%s", netrun_session_error(s));
            } else if (y.nbytes != sizeof refs[k] || memcmp(y.data, refs[k], sizeof refs[k]) != 0) {
                w->mismatches++;
            }
        }
        if (r == 99) { /* everyone has run 100 times: measure, then go on */
            pthread_barrier_wait(&at_100);
            if (w->id == 0) rss_100 = rss_kb();
            pthread_barrier_wait(&measured_100);
        }
    }
    pthread_barrier_wait(&at_end);
    if (w->id == 0) rss_end = rss_kb();
    pthread_barrier_wait(&at_end); /* sessions stay alive until measured */
    netrun_session_destroy(s);
    return NULL;
}

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--backend")) backend = argv[i + 1];
    if (strcmp(backend, "cpu")) {
        netrun_backend_info bi;
        int found = 0;
        for (int i = 0; i < netrun_backend_count(); i++)
            if (netrun_backend_get_info(i, &bi) == NETRUN_OK && bi.name && !strcmp(bi.name, backend) && bi.available)
                found = 1;
        if (!found) {
            printf("test_concurrency: backend %s unavailable: skipped\n", backend);
            return 77;
        }
    }
    int threads = getenv("REL_THREADS") ? atoi(getenv("REL_THREADS")) : 8;
    if (getenv("REL_RUNS")) runs = atoi(getenv("REL_RUNS"));
    if (threads < 1 || threads > 64) threads = 8;
    if (runs < 100) runs = 100;
    CHECK(netrun_model_load(NR_SOURCE_DIR "/examples/tiny_cnn.onnx", &model) == NETRUN_OK);
    if (!model) return finish("test_concurrency");

    /* single-threaded references */
    netrun_session *s = NULL;
    CHECK(make_session(model, &s) == NETRUN_OK);
    for (int k = 0; k < N_INPUTS && s; k++) {
        fill_input(inputs[k], CNN_ELEMS, 100 + (uint32_t)k);
        netrun_tensor_view y;
        CHECK(netrun_session_set_input(s, "image", NETRUN_DTYPE_FLOAT, 4, cnn_dims, inputs[k], sizeof inputs[k]) ==
              NETRUN_OK);
        CHECK(netrun_session_run(s) == NETRUN_OK);
        CHECK(netrun_session_output(s, 0, &y) == NETRUN_OK && y.nbytes == sizeof refs[k]);
        if (y.nbytes == sizeof refs[k]) memcpy(refs[k], y.data, sizeof refs[k]);
    }
    netrun_session_destroy(s);
    CHECK(memcmp(refs[0], refs[1], sizeof refs[0]) != 0); /* the inputs really differ */

    pthread_barrier_init(&at_100, NULL, (unsigned)threads);
    pthread_barrier_init(&measured_100, NULL, (unsigned)threads);
    pthread_barrier_init(&at_end, NULL, (unsigned)threads);
    pthread_t tid[64];
    worker ws[64];
    memset(ws, 0, sizeof ws);
    for (int t = 0; t < threads; t++) {
        ws[t].id = t;
        CHECK(pthread_create(&tid[t], NULL, work, &ws[t]) == 0);
    }
    long mismatches = 0, errors = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        mismatches += ws[t].mismatches;
        errors += ws[t].errors;
        if (ws[t].errors) fprintf(stderr, "thread %d: %ld errors, first: %s\n", t, ws[t].errors, ws[t].first_error);
    }
    printf("%s: %d threads x %d runs: %ld mismatches, %ld errors; RSS %ld kB after 100 runs, %ld kB after %d\n",
           backend, threads, runs, mismatches, errors, rss_100, rss_end, runs);
    CHECK(mismatches == 0);
    CHECK(errors == 0);
    if (!REL_ASAN) {
        /* slack: 4 MB plus 5% for allocator fragmentation; a leak of 1 kB per run (8 x 900 runs, 7 MB)
         * fails it */
        CHECK(rss_end <= rss_100 + 4096 + rss_100 / 20);
    }
    pthread_barrier_destroy(&at_100);
    pthread_barrier_destroy(&measured_100);
    pthread_barrier_destroy(&at_end);
    netrun_model_release(model);
    return finish("test_concurrency");
}
