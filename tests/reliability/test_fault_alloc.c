/* Fault injection: for N = 1, 2, ... fail the Nth host allocation from the start of an attempt that loads
 * examples/tiny_cnn.onnx, prepares a CPU session, runs it and reads the output. Every attempt must either
 * fail with a status and a message, or succeed with the reference output bit for bit; never crash or leak
 * (run under the ASan build, LeakSanitizer checks the leaks). Stops at the first N whose fault is never
 * reached: that attempt ran the whole path. Plugin discovery is done once before the loop (it is cached
 * process-wide; a fault there is covered by tests/plugins). */
#include "rel_common.h"
#include "status.h"

#ifndef NR_SOURCE_DIR
#define NR_SOURCE_DIR "."
#endif

static float input[CNN_ELEMS];

/* A model to sweep: its one float32 input and the element count of output 0. */
typedef struct fa_case {
    const char *path, *input;
    int rank;
    int64_t dims[4];
    size_t in_elems, out_elems;
} fa_case;

/* One attempt. Returns the status; on success copies output 0 into out (c->out_elems floats). */
static netrun_status attempt(const fa_case *c, float *out, const char **msg_out) {
    static char msg[NR_ERROR_MAX];
    msg[0] = 0;
    netrun_model *m = NULL;
    netrun_session *s = NULL;
    netrun_status st = netrun_model_load(c->path, &m);
    if (st != NETRUN_OK) snprintf(msg, sizeof msg, "%s", netrun_last_error());
    if (st == NETRUN_OK && (st = cpu_session(m, &s)) != NETRUN_OK) snprintf(msg, sizeof msg, "%s", netrun_last_error());
    if (st == NETRUN_OK) {
        st = netrun_session_set_input(s, c->input, NETRUN_DTYPE_FLOAT, c->rank, c->dims, input,
                                      c->in_elems * sizeof(float));
        if (st == NETRUN_OK) st = netrun_session_prepare(s);
        if (st == NETRUN_OK) st = netrun_session_run(s);
        netrun_tensor_view y;
        if (st == NETRUN_OK) st = netrun_session_output(s, 0, &y);
        if (st == NETRUN_OK) {
            if (y.nbytes != c->out_elems * sizeof(float)) st = NETRUN_ERR_INTERNAL;
            else memcpy(out, y.data, y.nbytes);
        }
        if (st != NETRUN_OK) snprintf(msg, sizeof msg, "%s", netrun_session_error(s));
    }
    netrun_session_destroy(s);
    netrun_model_release(m);
    *msg_out = msg;
    return st;
}

/* Was the armed fault still pending after the attempt? Drain at most `n` allocations to find out. */
static int fault_pending(long n) {
    int pending = 0;
    for (long i = 0; i < n && !pending; i++) {
        void *p = nr_malloc(1);
        if (!p) pending = 1;
        nr_free(p);
    }
    nr_fault_fail_allocation(0);
    return pending;
}

static void sweep(const fa_case *c) {
    float ref[16], got[16];
    const char *msg;
    netrun_status st = attempt(c, ref, &msg);
    CHECK(st == NETRUN_OK);
    if (st != NETRUN_OK) {
        fprintf(stderr, "%s: reference run failed: %s\n", c->path, msg);
        return;
    }
    long n, failures = 0, successes = 0, bad = 0;
    const long max_n = 200000;
    for (n = 1; n <= max_n; n++) {
        nr_fault_fail_allocation(n);
        st = attempt(c, got, &msg);
        int pending = fault_pending(n);
        if (st == NETRUN_OK) {
            successes++;
            if (memcmp(got, ref, c->out_elems * sizeof(float)) != 0) {
                bad++;
                fprintf(stderr, "FAIL: allocation %ld failed, the run succeeded with a different output\n", n);
            }
            if (pending) break; /* the whole path ran without reaching allocation n */
        } else {
            failures++;
            if (!msg[0]) {
                bad++;
                fprintf(stderr, "FAIL: allocation %ld failed: status %d without a message\n", n, (int)st);
            }
            if (pending) {
                bad++;
                fprintf(stderr, "FAIL: attempt %ld failed (%s) without reaching the injected fault\n", n, msg);
                break;
            }
        }
    }
    printf("%s: %ld allocations on the path, %ld attempts failed cleanly, %ld succeeded\n", c->path, n - 1,
           failures, successes);
    CHECK(n <= max_n);
    CHECK(failures > 50); /* load, prepare and run really allocate through the runtime */
    CHECK(bad == 0);
}

int main(void) {
    fill_input(input, CNN_ELEMS, 7);
    CHECK(netrun_backend_count() > 0);
    /* a CNN, and a Loop (control flow runs subgraph sessions: more allocation paths) */
    const fa_case cases[] = {
        {NR_SOURCE_DIR "/examples/tiny_cnn.onnx", "image", 4, {1, 3, 32, 32}, CNN_ELEMS, 10},
        {NR_SOURCE_DIR "/tests/corpus/models/loop_cond_true_with_trip_count.onnx", "x", 1, {2, 0, 0, 0}, 2, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) sweep(&cases[i]);
    return finish("test_fault_alloc");
}
