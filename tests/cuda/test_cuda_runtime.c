/* CUDA runtime features (docs/cuda.md): CUDA Graphs give the same bits as eager runs; the device memory budget
 * fails early with the numbers or degrades the workspace; an injected cudaMalloc failure (cuda.fail_alloc_after)
 * makes that run fail cleanly and the next one correct; streamed weights give the same bits as resident ones. Exit 77 (skipped) without a usable CUDA backend.
 * usage: test_cuda_runtime TINY_CNN.onnx DYN_GATHER.onnx (tests/cuda/make_models.py writes the second) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netrun.h"

static int passed, failed;
#define CHECK(cond)                                                                                            \
    do {                                                                                                       \
        if (cond) passed++;                                                                                    \
        else {                                                                                                 \
            failed++;                                                                                          \
            fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond, netrun_last_error()); \
        }                                                                                                      \
    } while (0)

static void fill(float *x, size_t n, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        x[i] = (float)(s >> 8) / (float)(1u << 23) - 1.0f;
    }
}

/* A session on cuda (strict unless fallback) with optional key/value settings (NULL-terminated pairs). */
static netrun_status session(netrun_model *m, int strict, size_t budget, const char *const *kv, netrun_session **out) {
    netrun_options *o = NULL;
    netrun_status st = netrun_options_create(&o);
    if (st == NETRUN_OK) st = netrun_options_set_backends(o, strict ? "cuda" : "cuda,cpu");
    if (st == NETRUN_OK) st = netrun_options_set_strict(o, strict);
    if (st == NETRUN_OK) st = netrun_options_set_workspace(o, NETRUN_WORKSPACE_BALANCED, (size_t)64 << 20);
    if (st == NETRUN_OK && budget) st = netrun_options_set_device_memory_budget(o, budget);
    for (int i = 0; kv && kv[i] && st == NETRUN_OK; i += 2) st = netrun_options_set(o, kv[i], kv[i + 1]);
    if (st == NETRUN_OK) st = netrun_session_create(m, o, out);
    netrun_options_destroy(o);
    return st;
}

#define CNN_N (3 * 32 * 32)
static const int64_t cnn_dims[4] = {1, 3, 32, 32};

/* Run tiny_cnn on input k; copy the 10 outputs to y. */
static netrun_status run_cnn(netrun_session *s, const float *x, float *y) {
    netrun_tensor_view v;
    netrun_status st = netrun_session_set_input(s, "image", NETRUN_DTYPE_FLOAT, 4, cnn_dims, x, CNN_N * sizeof(float));
    if (st == NETRUN_OK) st = netrun_session_run(s);
    if (st == NETRUN_OK) st = netrun_session_output(s, 0, &v);
    if (st == NETRUN_OK && v.nbytes != 10 * sizeof(float)) st = NETRUN_ERR_INTERNAL;
    if (st == NETRUN_OK) memcpy(y, v.data, 10 * sizeof(float));
    return st;
}

static void test_graphs(netrun_model *m) {
    static float x[3][CNN_N];
    for (int k = 0; k < 3; k++) fill(x[k], CNN_N, 7 + (uint32_t)k);
    const char *off[] = {"cuda.graphs", "0", NULL};
    netrun_session *g = NULL, *e = NULL;
    CHECK(session(m, 1, 0, NULL, &g) == NETRUN_OK);
    CHECK(session(m, 1, 0, off, &e) == NETRUN_OK);
    if (!g || !e) return;
    int same = 1, ok = 1;
    for (int r = 0; r < 9; r++) {
        float yg[10], ye[10];
        if (r == 6) CHECK(netrun_session_set_profiling(g, 1) == NETRUN_OK); /* profiling runs eagerly */
        ok &= run_cnn(g, x[r % 3], yg) == NETRUN_OK && run_cnn(e, x[r % 3], ye) == NETRUN_OK;
        same &= memcmp(yg, ye, sizeof yg) == 0;
    }
    CHECK(ok);
    CHECK(same);
    netrun_session_stats sg, se;
    CHECK(netrun_session_get_stats(g, &sg) == NETRUN_OK && sg.n_segments > 0 && sg.n_graphs > 0);
    CHECK(netrun_session_get_stats(e, &se) == NETRUN_OK && se.n_graphs == 0);
    CHECK(sg.device_peak_bytes >= sg.arena_bytes + sg.weight_bytes);
    printf("graphs: %d graphs of %d segments, outputs %s; peak device memory %zu bytes (arena %zu, weights %zu, "
           "workspace %zu)\n", sg.n_graphs, sg.n_segments, same ? "identical" : "DIFFER", sg.device_peak_bytes,
           sg.arena_bytes, sg.weight_bytes, sg.workspace_bytes);
    netrun_session_destroy(g);
    netrun_session_destroy(e);
}

static void test_budget(netrun_model *m) {
    static float x[CNN_N];
    float ref[10], y[10];
    fill(x, CNN_N, 3);
    netrun_session *s = NULL;
    CHECK(session(m, 1, 0, NULL, &s) == NETRUN_OK);
    netrun_session_stats st0;
    memset(&st0, 0, sizeof st0);
    CHECK(s && run_cnn(s, x, ref) == NETRUN_OK && netrun_session_get_stats(s, &st0) == NETRUN_OK);
    netrun_session_destroy(s);

    /* far too small: fails before allocating, with the numbers */
    s = NULL;
    CHECK(session(m, 1, 4096, NULL, &s) == NETRUN_OK);
    netrun_status st = s ? run_cnn(s, x, y) : NETRUN_ERR_INTERNAL;
    const char *msg = s ? netrun_session_error(s) : "";
    CHECK(st == NETRUN_ERR_OUT_OF_MEMORY);
    CHECK(msg && strstr(msg, "does not fit") && strstr(msg, "budget 4096"));
    printf("budget 4096: %s\n", msg ? msg : "");
    netrun_session_destroy(s);

    /* weights and activations fit, the chosen workspace does not: smaller workspace, or a clear error */
    size_t fixed = st0.arena_bytes + st0.weight_bytes;
    size_t budget = fixed + st0.workspace_bytes / 2 + 4096;
    s = NULL;
    CHECK(session(m, 1, budget, NULL, &s) == NETRUN_OK);
    st = s ? run_cnn(s, x, y) : NETRUN_ERR_INTERNAL;
    if (st == NETRUN_OK) {
        netrun_session_stats st1;
        CHECK(netrun_session_get_stats(s, &st1) == NETRUN_OK);
        CHECK(st1.arena_bytes + st1.weight_bytes + st1.workspace_bytes <= budget);
        float diff = 0;
        for (int i = 0; i < 10; i++) diff = fabsf(y[i] - ref[i]) > diff ? fabsf(y[i] - ref[i]) : diff;
        CHECK(diff < 1e-4f);
        printf("budget %zu (workspace was %zu): ran with workspace %zu, max diff %g\n", budget, st0.workspace_bytes,
               st1.workspace_bytes, (double)diff);
    } else {
        msg = netrun_session_error(s);
        CHECK(st == NETRUN_ERR_OUT_OF_MEMORY && msg && strstr(msg, "min-memory policy"));
        printf("budget %zu: %s\n", budget, msg ? msg : "");
    }
    netrun_session_destroy(s);
}

/* Streamed weights (memory.stream_weights=1, every constant streamed): the same bits as resident weights, with
 * prefetches on the copy stream inside CUDA graphs and with in-order copies in eager runs, and less device
 * memory for the weights. */
static void test_stream_weights(netrun_model *m) {
    static float x[3][CNN_N];
    for (int k = 0; k < 3; k++) fill(x[k], CNN_N, 21 + (uint32_t)k);
    const char *on[] = {"memory.stream_weights", "1", "memory.stream_min", "1", NULL};
    const char *on_eager[] = {"memory.stream_weights", "1", "memory.stream_min", "1", "cuda.graphs", "0",
                              "memory.stream_overlap", "0", NULL};
    netrun_session *r = NULL, *g = NULL, *e = NULL;
    CHECK(session(m, 1, 0, NULL, &r) == NETRUN_OK);
    CHECK(session(m, 1, 0, on, &g) == NETRUN_OK);
    CHECK(session(m, 1, 0, on_eager, &e) == NETRUN_OK);
    if (!r || !g || !e) return;
    int same = 1, ok = 1;
    for (int i = 0; i < 6; i++) {
        float yr[10], yg[10], ye[10];
        ok &= run_cnn(r, x[i % 3], yr) == NETRUN_OK && run_cnn(g, x[i % 3], yg) == NETRUN_OK &&
              run_cnn(e, x[i % 3], ye) == NETRUN_OK;
        same &= memcmp(yr, yg, sizeof yr) == 0 && memcmp(yr, ye, sizeof yr) == 0;
    }
    CHECK(ok);
    CHECK(same);
    netrun_session_stats sr, sg;
    CHECK(netrun_session_get_stats(r, &sr) == NETRUN_OK && netrun_session_get_stats(g, &sg) == NETRUN_OK);
    CHECK(sr.stream_bytes == 0 && sg.stream_bytes > 0);
    CHECK(sg.weight_bytes < sr.weight_bytes);
    CHECK(sg.n_graphs > 0 && sg.n_graphs == sr.n_graphs);
    printf("streamed weights: outputs %s; %zu bytes copied per run; device weights %zu -> %zu bytes; graphs %d\n",
           same ? "identical" : "DIFFER", sg.stream_bytes, sr.weight_bytes, sg.weight_bytes, sg.n_graphs);
    netrun_session_destroy(r);
    netrun_session_destroy(g);
    netrun_session_destroy(e);
}

/* cuda.fail_alloc_after=N for N = 0..11: every run either matches the reference or fails with an out-of-memory
 * error; the run after a failure is correct; at least one failure happens during a run (not at prepare). */
static void test_fail_alloc(netrun_model *cnn, netrun_model *dyn) {
    float x[16];
    for (int i = 0; i < 16; i++) x[i] = (i % 3 == 0) ? -1.0f - (float)i : 0.5f + (float)i;
    const int64_t xd[1] = {16};
    float ref[16];
    size_t ref_n = 0;
    netrun_session *s = NULL;
    CHECK(session(dyn, 0, 0, NULL, &s) == NETRUN_OK);
    netrun_tensor_view v;
    CHECK(s && netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 1, xd, x, sizeof x) == NETRUN_OK &&
          netrun_session_run(s) == NETRUN_OK && netrun_session_output(s, 0, &v) == NETRUN_OK);
    if (s && v.data && v.nbytes <= sizeof ref) {
        memcpy(ref, v.data, v.nbytes);
        ref_n = v.nbytes;
    }
    CHECK(ref_n == 10 * sizeof(float)); /* 10 of the 16 are positive */
    netrun_session_destroy(s);
    int mid_run = 0, at_prepare = 0, bad = 0, recovered = 0;
    for (int n = 0; n < 12; n++) {
        char nb[16];
        snprintf(nb, sizeof nb, "%d", n);
        const char *kv[] = {"cuda.fail_alloc_after", nb, NULL};
        s = NULL;
        if (session(dyn, 0, 0, kv, &s) != NETRUN_OK) {
            bad++;
            continue;
        }
        netrun_status pst = netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 1, xd, x, sizeof x);
        if (pst == NETRUN_OK) pst = netrun_session_prepare(s);
        if (pst != NETRUN_OK) at_prepare++;
        int failed_before = 0;
        for (int r = 0; r < 3; r++) {
            netrun_status st = netrun_session_run(s);
            if (st == NETRUN_OK) st = netrun_session_output(s, 0, &v);
            if (st == NETRUN_OK) {
                if (v.nbytes != ref_n || memcmp(v.data, ref, ref_n) != 0) bad++;
                if (failed_before) recovered++;
                failed_before = 0;
            } else {
                const char *msg = netrun_session_error(s);
                if (st != NETRUN_ERR_OUT_OF_MEMORY || !msg || !strstr(msg, "cannot allocate")) {
                    bad++;
                    fprintf(stderr, "fail_alloc_after=%d run %d: status %d: %s\n", n, r, (int)st, msg ? msg : "");
                }
                if (failed_before) bad++; /* the injected failure happens once */
                if (pst == NETRUN_OK && r == 0) mid_run++;
                failed_before = 1;
            }
        }
        netrun_session_destroy(s);
    }
    CHECK(bad == 0);
    CHECK(mid_run > 0);
    CHECK(recovered >= mid_run);
    printf("fail_alloc_after 0..11 on dyn_gather: %d failures inside a run, %d at prepare, %d recovered runs, %d bad\n",
           mid_run, at_prepare, recovered, bad);

    /* static model: an allocation failing at prepare degrades and retries, and the run is correct */
    static float xc[CNN_N];
    float ref_c[10], y[10];
    fill(xc, CNN_N, 5);
    s = NULL;
    CHECK(session(cnn, 1, 0, NULL, &s) == NETRUN_OK && run_cnn(s, xc, ref_c) == NETRUN_OK);
    netrun_session_destroy(s);
    for (int n = 0; n < 3; n++) {
        char nb[16];
        snprintf(nb, sizeof nb, "%d", n);
        const char *kv[] = {"cuda.fail_alloc_after", nb, NULL};
        s = NULL;
        CHECK(session(cnn, 1, 0, kv, &s) == NETRUN_OK && run_cnn(s, xc, y) == NETRUN_OK &&
              memcmp(y, ref_c, sizeof y) == 0);
        netrun_session_destroy(s);
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s TINY_CNN.onnx DYN_GATHER.onnx\n", argv[0]);
        return 2;
    }
    netrun_backend_info bi;
    int have = 0;
    for (int i = 0; i < netrun_backend_count(); i++)
        if (netrun_backend_get_info(i, &bi) == NETRUN_OK && bi.name && !strcmp(bi.name, "cuda") && bi.available)
            have = 1;
    if (!have) {
        printf("test_cuda_runtime: no usable CUDA backend: skipped\n");
        return 77;
    }
    netrun_model *cnn = NULL, *dyn = NULL;
    CHECK(netrun_model_load(argv[1], &cnn) == NETRUN_OK);
    CHECK(netrun_model_load(argv[2], &dyn) == NETRUN_OK);
    if (cnn) test_graphs(cnn);
    if (cnn) test_budget(cnn);
    if (cnn) test_stream_weights(cnn);
    if (cnn && dyn) test_fail_alloc(cnn, dyn);
    netrun_model_release(cnn);
    netrun_model_release(dyn);
    printf("test_cuda_runtime: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
