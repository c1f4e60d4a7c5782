/* Unit tests of the runtime core: IR, graph checks, inference with folding, placement, memory planning,
 * sessions (shapes, errors, dynamic dims) and concurrent sessions on one model. Graphs are built with the
 * IR builder directly, so these tests do not depend on the ONNX importer. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "netrun.h"

static int passed, failed;
#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (cond) passed++;                                                              \
        else {                                                                           \
            failed++;                                                                    \
            fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
                    netrun_last_error());                                                \
        }                                                                                \
    } while (0)

/* ---- tiny graph builder ---- */

static nr_model_ir *new_ir(void) {
    nr_model_ir *ir = calloc(1, sizeof *ir);
    ir->graph = nr_graph_new("test", NULL);
    ir->opsets = calloc(1, sizeof *ir->opsets);
    ir->opsets[0].domain = nr_strdup("");
    ir->opsets[0].version = 17;
    ir->n_opsets = 1;
    return ir;
}

static int input(nr_model_ir *ir, const char *name, int rank, const int64_t *dims, const char *sym0) {
    int v = nr_graph_value(ir->graph, name);
    nr_value *val = &ir->graph->values[v];
    val->dtype = NETRUN_DTYPE_FLOAT;
    val->rank = rank;
    for (int i = 0; i < rank; i++) val->dims[i] = dims[i];
    if (sym0) {
        val->dims[0] = -1;
        val->dim_names[0] = nr_strdup(sym0);
    }
    nr_graph_add_input(ir->graph, v);
    return v;
}

static void node1(nr_model_ir *ir, const char *op, const char *in0, const char *in1, const char *out) {
    char name[64];
    snprintf(name, sizeof name, "%s_%d", op, ir->graph->n_nodes);
    int n_in = in1 ? 2 : 1;
    int a = nr_graph_value(ir->graph, in0);
    int b = in1 ? nr_graph_value(ir->graph, in1) : -1;
    int o = nr_graph_value(ir->graph, out);
    nr_node *nd = nr_graph_add_node(ir->graph, name, op, "", n_in, 1, 0);
    nd->inputs[0] = a;
    if (in1) nd->inputs[1] = b;
    nd->outputs[0] = o;
}

static void output(nr_model_ir *ir, const char *name) { nr_graph_add_output(ir->graph, nr_graph_value(ir->graph, name)); }

static void constant(nr_model_ir *ir, const char *name, int rank, const int64_t *dims, const float *data) {
    int v = nr_graph_value(ir->graph, name);
    nr_tensor *t = nr_tensor_new(NETRUN_DTYPE_FLOAT, rank, dims);
    memcpy(t->data, data, t->nbytes);
    ir->graph->values[v].constant = t;
}

static netrun_model *load(nr_model_ir *ir) {
    netrun_model *m = NULL;
    if (nr_model_from_ir(ir, "test.onnx", &m) != NETRUN_OK) return NULL;
    return m;
}

static netrun_session *session(netrun_model *m, const char *backends, int strict) {
    netrun_options *o;
    netrun_options_create(&o);
    if (backends) netrun_options_set_backends(o, backends);
    netrun_options_set_strict(o, strict);
    netrun_options_set_threads(o, 1);
    netrun_session *s = NULL;
    netrun_session_create(m, o, &s);
    netrun_options_destroy(o);
    return s;
}

/* ---- tests ---- */

static void test_ir(void) {
    nr_graph *g = nr_graph_new("g", NULL);
    int a = nr_graph_value(g, "a"), b = nr_graph_value(g, "b");
    CHECK(a != b && nr_graph_value(g, "a") == a);
    char name[32];
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof name, "v%d", i);
        nr_graph_value(g, name);
    }
    CHECK(g->n_values == 2002);
    CHECK(nr_graph_find_value(g, "v1999") == 2001);
    CHECK(nr_graph_find_value(g, "missing") == -1);
    nr_graph_free(g);
    int64_t dims[2] = {3, INT64_MAX / 2};
    CHECK(nr_shape_count(2, dims) == INT64_MAX); /* saturates instead of overflowing */
}

static void test_graph_checks(void) {
    int64_t d[2] = {2, 3};
    nr_model_ir *ir = new_ir();
    input(ir, "x", 2, d, NULL);
    node1(ir, "Relu", "nowhere", NULL, "y");
    output(ir, "y");
    CHECK(load(ir) == NULL);
    CHECK(strstr(netrun_last_error(), "nowhere") && strstr(netrun_last_error(), "Relu_0"));

    ir = new_ir();
    input(ir, "x", 2, d, NULL);
    node1(ir, "Relu", "x", NULL, "y");
    node1(ir, "Sigmoid", "x", NULL, "y");
    output(ir, "y");
    CHECK(load(ir) == NULL);
    CHECK(strstr(netrun_last_error(), "produced twice") != NULL);

    ir = new_ir();
    input(ir, "x", 2, d, NULL);
    node1(ir, "Add", "x", "c", "b");
    node1(ir, "Relu", "b", NULL, "c");
    output(ir, "c");
    CHECK(load(ir) == NULL);
    CHECK(strstr(netrun_last_error(), "cycle") != NULL);

    ir = new_ir();
    input(ir, "x", 2, d, NULL);
    output(ir, "ghost");
    CHECK(load(ir) == NULL);
    CHECK(strstr(netrun_last_error(), "ghost") != NULL);

    /* nodes out of order in the file are sorted */
    ir = new_ir();
    input(ir, "x", 2, d, NULL);
    node1(ir, "Sigmoid", "r", NULL, "y");
    node1(ir, "Relu", "x", NULL, "r");
    output(ir, "y");
    netrun_model *m = load(ir);
    CHECK(m != NULL);
    if (m) CHECK(m->order[0] == 1 && m->order[1] == 0);
    netrun_model_release(m);
}

/* y = relu(x) + c, run on the CPU. */
static void test_run_and_placement(void) {
    int64_t d[2] = {2, 3};
    float c[6] = {1, 1, 1, 1, 1, 1};
    nr_model_ir *ir = new_ir();
    input(ir, "x", 2, d, NULL);
    constant(ir, "c", 2, d, c);
    node1(ir, "Relu", "x", NULL, "r");
    node1(ir, "Add", "r", "c", "y");
    output(ir, "y");
    netrun_model *m = load(ir);
    CHECK(m != NULL);
    if (!m) return;
    netrun_session *s = session(m, "cpu", 0);
    CHECK(s != NULL);
    float x[6] = {-1, 2, -3, 4, -5, 6};
    netrun_tensor_view out;
    CHECK(netrun_session_output(s, 0, &out) == NETRUN_ERR_STATE); /* not run yet */
    CHECK(netrun_session_run(s) == NETRUN_ERR_STATE);           /* input missing */
    CHECK(strstr(netrun_session_error(s), "'x'") != NULL);
    CHECK(netrun_session_set_input(s, "x", NETRUN_DTYPE_INT64, 2, d, x, sizeof x) == NETRUN_ERR_INVALID_ARGUMENT);
    CHECK(netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 2, d, x, 5) == NETRUN_ERR_INVALID_ARGUMENT);
    CHECK(netrun_session_set_input(s, "nope", NETRUN_DTYPE_FLOAT, 2, d, x, sizeof x) == NETRUN_ERR_INVALID_ARGUMENT);
    CHECK(netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 2, d, x, sizeof x) == NETRUN_OK);
    CHECK(netrun_session_run(s) == NETRUN_OK);
    CHECK(netrun_session_output(s, 0, &out) == NETRUN_OK);
    const float want[6] = {1, 3, 1, 5, 1, 7};
    CHECK(out.rank == 2 && out.dims[0] == 2 && out.dims[1] == 3 && out.dtype == NETRUN_DTYPE_FLOAT);
    CHECK(out.data && !memcmp(out.data, want, sizeof want));
    CHECK(netrun_session_node_count(s) == 2);
    netrun_node_info info;
    CHECK(netrun_session_node_info(s, 0, &info) == NETRUN_OK && !strcmp(info.backend, "cpu") &&
          !strcmp(info.reason, "first choice"));
    netrun_session_destroy(s);

    /* Placement: the template backend runs Relu and same-shape Add; with Sigmoid it must fall back to the
     * CPU and say why; strict mode refuses. */
    s = session(m, "nosuchbackend", 0);
    CHECK(s == NULL && strstr(netrun_last_error(), "unknown backend 'nosuchbackend'"));
    netrun_model_release(m);

    ir = new_ir();
    input(ir, "x", 2, d, NULL);
    node1(ir, "Relu", "x", NULL, "r");
    node1(ir, "Sigmoid", "r", NULL, "y");
    output(ir, "y");
    m = load(ir);
    s = session(m, "template,cpu", 0);
    CHECK(s != NULL);
    if (s) {
        CHECK(netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 2, d, x, sizeof x) == NETRUN_OK);
        CHECK(netrun_session_run(s) == NETRUN_OK);
        netrun_node_info a, b;
        netrun_session_node_info(s, 0, &a);
        netrun_session_node_info(s, 1, &b);
        CHECK(!strcmp(a.backend, "template"));
        CHECK(!strcmp(b.backend, "cpu") && strstr(b.reason, "template") != NULL);
        netrun_session_output(s, 0, &out);
        CHECK(fabsf(((const float *)out.data)[1] - 1.0f / (1.0f + expf(-2.0f))) < 1e-6f);
        CHECK(fabsf(((const float *)out.data)[0] - 0.5f) < 1e-6f);
    }
    netrun_session_destroy(s);
    s = session(m, "template", 1);
    CHECK(s != NULL);
    if (s) {
        netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 2, d, x, sizeof x);
        CHECK(netrun_session_prepare(s) == NETRUN_ERR_UNSUPPORTED);
        CHECK(strstr(netrun_session_error(s), "strict") || strstr(netrun_session_error(s), "Sigmoid"));
    }
    netrun_session_destroy(s);
    netrun_model_release(m);
}

/* A chain of 12 Relus/Sigmoids: lifetimes allow reuse, so the arena is far below the sum of all activations;
 * with in-place outputs (memory.inplace, on by default) each one writes over its dying input: one buffer. */
static void test_memory_plan(void) {
    int64_t d[2] = {64, 64};
    nr_model_ir *ir = new_ir();
    input(ir, "x", 2, d, NULL);
    char a[16], b[16];
    for (int i = 0; i < 12; i++) {
        snprintf(a, sizeof a, i ? "t%d" : "x", i);
        snprintf(b, sizeof b, "t%d", i + 1);
        node1(ir, i % 2 ? "Sigmoid" : "Relu", a, NULL, b);
    }
    output(ir, "t12");
    netrun_model *m = load(ir);
    netrun_session *s = session(m, "cpu", 0);
    static float x[64 * 64];
    for (int i = 0; i < 64 * 64; i++) x[i] = (float)(i % 7) - 3;
    netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 2, d, x, sizeof x);
    CHECK(netrun_session_prepare(s) == NETRUN_OK);
    netrun_session_stats st;
    netrun_session_get_stats(s, &st);
    size_t one = 64 * 64 * 4;
    CHECK(st.arena_bytes == one && st.n_inplace == 11);
    CHECK(netrun_session_run(s) == NETRUN_OK);
    netrun_session_get_stats(s, &st);
    CHECK(st.runs == 1 && st.first_run_ms >= 0);
    /* profiling: one event per kernel per run, in order, with non-negative times */
    CHECK(netrun_session_set_profiling(s, 1) == NETRUN_OK);
    CHECK(netrun_session_run(s) == NETRUN_OK && netrun_session_run(s) == NETRUN_OK);
    CHECK(netrun_session_profile_count(s) == 24);
    netrun_profile_event ev;
    CHECK(netrun_session_profile_get(s, 13, &ev) == NETRUN_OK && ev.run == 1 && !strcmp(ev.op_type, "Sigmoid") &&
          ev.duration_ms >= 0 && ev.start_ms >= 0 && !ev.is_copy && !strcmp(ev.backend, "cpu"));
    CHECK(netrun_session_profile_get(s, 24, &ev) == NETRUN_ERR_INVALID_ARGUMENT);
    netrun_session_destroy(s);
    netrun_model_release(m);
}

/* Symbolic batch: prepare needs it; set_dim and a new input shape re-prepare; Shape folds to a constant. */
static void test_dynamic_dims(void) {
    int64_t d[2] = {1, 4};
    nr_model_ir *ir = new_ir();
    input(ir, "x", 2, d, "batch");
    node1(ir, "Relu", "x", NULL, "r");
    node1(ir, "Shape", "r", NULL, "shape");
    node1(ir, "Reshape", "r", "shape", "y");
    output(ir, "y");
    netrun_model *m = load(ir);
    CHECK(m != NULL);
    if (!m) return;
    netrun_tensor_info info;
    CHECK(netrun_model_input_info(m, 0, &info) == NETRUN_OK && info.dims[0] == -1 &&
          info.dim_names[0] && !strcmp(info.dim_names[0], "batch"));
    netrun_session *s = session(m, "cpu", 0);
    CHECK(netrun_session_prepare(s) == NETRUN_ERR_STATE);
    CHECK(strstr(netrun_session_error(s), "batch") != NULL);
    CHECK(netrun_session_set_dim(s, "nosuch", 3) == NETRUN_ERR_INVALID_ARGUMENT);
    CHECK(netrun_session_set_dim(s, "batch", 3) == NETRUN_OK);
    CHECK(netrun_session_prepare(s) == NETRUN_OK);
    netrun_session_stats st;
    netrun_session_get_stats(s, &st);
    CHECK(st.n_folded == 1);
    CHECK(netrun_session_input_info(s, 0, &info) == NETRUN_OK && info.dims[0] == 3);
    float x[8] = {-1, 1, -2, 2, -3, 3, -4, 4};
    for (int batch = 1; batch <= 2; batch++) {
        int64_t dims[2] = {batch, 4};
        CHECK(netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 2, dims, x, sizeof(float) * 4 * batch) == NETRUN_OK);
        CHECK(netrun_session_run(s) == NETRUN_OK);
        netrun_tensor_view out;
        CHECK(netrun_session_output(s, 0, &out) == NETRUN_OK && out.dims[0] == batch && out.dims[1] == 4);
        CHECK(out.data && ((const float *)out.data)[4 * batch - 1] == 2.0f * batch);
    }
    netrun_session_destroy(s);
    netrun_model_release(m);
}

/* Sessions on different threads over one model give identical results. */
typedef struct worker {
    netrun_model *m;
    float out[256];
    int ok;
} worker;

static void *worker_main(void *arg) {
    worker *w = arg;
    netrun_session *s = session(w->m, "cpu", 0);
    int64_t d[2] = {16, 16};
    float x[256];
    for (int i = 0; i < 256; i++) x[i] = (float)((i * 37) % 11) - 5;
    w->ok = s != NULL;
    for (int r = 0; r < 50 && w->ok; r++) {
        w->ok = netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 2, d, x, sizeof x) == NETRUN_OK &&
                netrun_session_run(s) == NETRUN_OK;
        netrun_tensor_view out;
        if (w->ok && netrun_session_output(s, 0, &out) == NETRUN_OK) memcpy(w->out, out.data, sizeof w->out);
    }
    netrun_session_destroy(s);
    return NULL;
}

static void test_concurrency(void) {
    int64_t d[2] = {16, 16};
    nr_model_ir *ir = new_ir();
    input(ir, "x", 2, d, NULL);
    node1(ir, "Sigmoid", "x", NULL, "a");
    node1(ir, "Mul", "a", "x", "b");
    node1(ir, "Relu", "b", NULL, "y");
    output(ir, "y");
    netrun_model *m = load(ir);
    if (!m) {
        CHECK(m != NULL);
        return;
    }
    worker w[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        w[i].m = m;
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 4; i++) CHECK(w[i].ok);
    for (int i = 1; i < 4; i++) CHECK(!memcmp(w[0].out, w[i].out, sizeof w[0].out));
    netrun_model_release(m);
}

/* netrun_session_cancel: a cancel with no run in progress cancels the next run, the session then runs again; a cancel
 * from another thread during a long run stops it (or, when the run won, the next one). */
typedef struct canceller {
    netrun_session *s;
} canceller;

static void *cancel_main(void *arg) {
    canceller *c = arg;
    char act[256];
    for (int i = 0; i < 200000; i++) { /* wait until the run is under way, then cancel */
        netrun_session_activity(c->s, act, sizeof act);
        if (!strncmp(act, "running", 7)) break;
    }
    netrun_session_cancel(c->s);
    return NULL;
}

static void test_cancel(void) {
    int64_t d[2] = {512, 512};
    nr_model_ir *ir = new_ir();
    input(ir, "x", 2, d, NULL);
    char prev[32] = "x", cur[32];
    for (int i = 0; i < 400; i++) { /* a long chain: many steps between which the run looks at the flag */
        snprintf(cur, sizeof cur, "v%d", i);
        node1(ir, i % 2 ? "Sigmoid" : "Neg", prev, NULL, cur);
        memcpy(prev, cur, sizeof prev);
    }
    output(ir, prev);
    netrun_model *m = load(ir);
    netrun_session *s = m ? session(m, "cpu", 0) : NULL;
    CHECK(s != NULL);
    if (!s) {
        netrun_model_release(m);
        return;
    }
    float *x = calloc(512 * 512, sizeof *x);
    CHECK(netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 2, d, x, 512 * 512 * sizeof *x) == NETRUN_OK);
    CHECK(netrun_session_prepare(s) == NETRUN_OK);
    CHECK(netrun_session_cancel(s) == NETRUN_OK);
    CHECK(netrun_session_run(s) == NETRUN_ERR_CANCELLED);
    CHECK(strstr(netrun_session_error(s), "cancelled") != NULL);
    CHECK(netrun_session_run(s) == NETRUN_OK); /* the request was taken: the session runs again */
    netrun_tensor_view out;
    CHECK(netrun_session_output(s, 0, &out) == NETRUN_OK);
    canceller c = {s};
    pthread_t t;
    pthread_create(&t, NULL, cancel_main, &c);
    netrun_status first = netrun_session_run(s);
    pthread_join(t, NULL);
    CHECK(first == NETRUN_ERR_CANCELLED || (first == NETRUN_OK && netrun_session_run(s) == NETRUN_ERR_CANCELLED));
    CHECK(netrun_session_run(s) == NETRUN_OK);
    CHECK(netrun_session_cancel(NULL) == NETRUN_ERR_INVALID_ARGUMENT);
    free(x);
    netrun_session_destroy(s);
    netrun_model_release(m);
}

/* netrun_set_log_callback receives the runtime's warnings (a setting without effect), with level and source. */
typedef struct log_seen {
    int n_warn;
    char last[512];
} log_seen;

static void log_cb(void *user, netrun_log_level level, const char *source, const char *message) {
    log_seen *ls = user;
    if (level == NETRUN_LOG_WARN && !strcmp(source, "runtime")) {
        ls->n_warn++;
        snprintf(ls->last, sizeof ls->last, "%s", message);
    }
}

static void test_log_and_option_keys(void) {
    int64_t d[2] = {4, 4};
    nr_model_ir *ir = new_ir();
    input(ir, "x", 2, d, NULL);
    node1(ir, "Relu", "x", NULL, "y");
    output(ir, "y");
    netrun_model *m = load(ir);
    CHECK(m != NULL);
    if (!m) return;
    log_seen seen = {0, ""};
    netrun_set_log_callback(log_cb, &seen, NETRUN_LOG_WARN);
    netrun_options *o;
    netrun_options_create(&o);
    netrun_options_set_backends(o, "cpu");
    netrun_options_set_precision(o, NETRUN_PRECISION_FP16);
    netrun_session *s = NULL;
    CHECK(netrun_session_create(m, o, &s) == NETRUN_OK);
    CHECK(s && netrun_session_prepare(s) == NETRUN_OK);
    CHECK(seen.n_warn == 1 && strstr(seen.last, "precision fp16 has no effect"));
    netrun_session_destroy(s);
    /* keys: a typo of a runtime key is refused when set, with a suggestion; an unknown group when the session is
     * created (a backend's keys are known only then); a runtime key is accepted */
    s = NULL;
    CHECK(netrun_options_set(o, "memory.inplce", "0") == NETRUN_ERR_INVALID_ARGUMENT);
    CHECK(strstr(netrun_last_error(), "did you mean 'memory.inplace'") != NULL);
    netrun_options_destroy(o);
    netrun_options_create(&o);
    netrun_options_set_backends(o, "cpu");
    CHECK(netrun_options_set(o, "nosuchgroup.key", "1") == NETRUN_OK);
    CHECK(netrun_session_create(m, o, &s) == NETRUN_ERR_INVALID_ARGUMENT);
    CHECK(strstr(netrun_last_error(), "unknown option 'nosuchgroup.key'") != NULL);
    netrun_options_destroy(o);
    netrun_options_create(&o);
    netrun_options_set_backends(o, "cpu");
    CHECK(netrun_options_set(o, "memory.inplace", "0") == NETRUN_OK && netrun_options_set(o, "cpu.winograd", "1") == NETRUN_OK);
    CHECK(netrun_session_create(m, o, &s) == NETRUN_OK);
    netrun_session_destroy(s);
    netrun_options_destroy(o);
    netrun_set_log_callback(NULL, NULL, NETRUN_LOG_WARN);
    netrun_model_release(m);
    /* backends by name: found and described without listing (loading) the others; an unknown name is -1 */
    netrun_backend_info bi;
    int k = netrun_backend_find("cpu", &bi);
    CHECK(k >= 0 && bi.available && !strcmp(bi.name, "cpu"));
    CHECK(netrun_backend_find("no-such-backend", NULL) == -1 && strstr(netrun_last_error(), "no-such-backend"));
    netrun_backend_info bj;
    CHECK(k >= 0 && netrun_backend_get_info(k, &bj) == NETRUN_OK && !strcmp(bj.name, "cpu"));
}

/* bind_input reads the caller's memory in place when it is aligned to its element (a change between runs shows in
 * the next run), copies it otherwise, and set_input after a bind copies again (the caller's buffer is let go). */
static void test_bind_input(void) {
    int64_t d[1] = {16};
    nr_model_ir *ir = new_ir();
    input(ir, "x", 1, d, NULL);
    node1(ir, "Relu", "x", NULL, "y");
    output(ir, "y");
    netrun_model *m = load(ir);
    CHECK(m != NULL);
    if (!m) return;
    netrun_session *s = session(m, "cpu", 0);
    float *buf = aligned_alloc(64, 64 * sizeof(float));
    CHECK(s && buf);
    if (!s || !buf) {
        free(buf);
        netrun_session_destroy(s);
        netrun_model_release(m);
        return;
    }
    for (int i = 0; i < 16; i++) buf[i] = (float)(i - 8);
    netrun_tensor_view out;
    CHECK(netrun_session_bind_input(s, "x", NETRUN_DTYPE_FLOAT, 1, d, buf, 16 * sizeof(float)) == NETRUN_OK);
    CHECK(netrun_session_run(s) == NETRUN_OK && netrun_session_output(s, 0, &out) == NETRUN_OK);
    CHECK(out.data && ((const float *)out.data)[15] == 7.0f && ((const float *)out.data)[0] == 0.0f);
    buf[15] = 42.0f; /* in place: the next run sees it without another bind */
    CHECK(netrun_session_run(s) == NETRUN_OK && netrun_session_output(s, 0, &out) == NETRUN_OK);
    CHECK(out.data && ((const float *)out.data)[15] == 42.0f);
    /* not aligned to its element size: copied when bound */
    float *odd = (float *)((char *)buf + 2);
    float ones[16];
    for (int i = 0; i < 16; i++) ones[i] = 1.0f;
    memcpy(odd, ones, sizeof ones);
    CHECK(netrun_session_bind_input(s, "x", NETRUN_DTYPE_FLOAT, 1, d, odd, 16 * sizeof(float)) == NETRUN_OK);
    ones[0] = -5.0f;
    memcpy(odd, ones, sizeof ones);
    CHECK(netrun_session_run(s) == NETRUN_OK && netrun_session_output(s, 0, &out) == NETRUN_OK);
    CHECK(out.data && ((const float *)out.data)[0] == 1.0f);
    /* set_input after a bind: a copy again; the caller's buffer may go */
    CHECK(netrun_session_bind_input(s, "x", NETRUN_DTYPE_FLOAT, 1, d, buf, 16 * sizeof(float)) == NETRUN_OK);
    float x[16] = {0};
    x[3] = 3.0f;
    CHECK(netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 1, d, x, sizeof x) == NETRUN_OK);
    free(buf);
    CHECK(netrun_session_run(s) == NETRUN_OK && netrun_session_output(s, 0, &out) == NETRUN_OK);
    CHECK(out.data && ((const float *)out.data)[3] == 3.0f);
    netrun_session_destroy(s);
    netrun_model_release(m);
}

int main(void) {
    test_bind_input();
    test_cancel();
    test_log_and_option_keys();
    test_ir();
    test_graph_checks();
    test_run_and_placement();
    test_memory_plan();
    test_dynamic_dims();
    test_concurrency();
    printf("test_runtime: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
