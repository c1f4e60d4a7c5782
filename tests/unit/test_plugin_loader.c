/* Plugin loader tests: discovery order and dedupe, every way a plugin can be broken (each listed unavailable
 * with its reason while the rest load), the host service table, and the template backend run directly
 * through its api and through a session. Folders come from tests/plugins/tests.cmake (or argv[1..3]). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend_registry.h"
#include "layer.h"
#include "netrun.h"
#include "onnx.pb-c.h"
#include "status.h"

#ifndef NR_TEST_PLUGIN_DIR
#define NR_TEST_PLUGIN_DIR ""
#endif
#ifndef NR_TEST_SHADOW_DIR
#define NR_TEST_SHADOW_DIR ""
#endif
#ifndef NR_TEST_BACKEND_DIR
#define NR_TEST_BACKEND_DIR ""
#endif

static int failures, checks;

#define CHECK(cond, ...)                                                                                         \
    do {                                                                                                         \
        checks++;                                                                                                \
        if (!(cond)) {                                                                                           \
            failures++;                                                                                          \
            fprintf(stderr, "%s:%d: FAILED: %s: ", __FILE__, __LINE__, #cond);                                 \
            fprintf(stderr, __VA_ARGS__);                                                                        \
            fputc('\n', stderr);                                                                                 \
        }                                                                                                        \
    } while (0)

static int contains(const char *s, const char *part) { return s && part && strstr(s, part) != NULL; }

static int ends_with(const char *s, const char *suffix) {
    if (!s) return 0;
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* Index of the first listed backend of that name (available or not), and how many share the name. */
static int find_index(const char *name, int *count) {
    int first = -1, n = 0;
    for (int i = 0; i < netrun_backend_count(); i++) {
        netrun_backend_info info;
        if (netrun_backend_get_info(i, &info) != NETRUN_OK) continue;
        if (!strcmp(info.name, name)) {
            if (first < 0) first = i;
            n++;
        }
    }
    if (count) *count = n;
    return first;
}

static void expect_unavailable(const char *name, const char *file, const char *reason_part) {
    int n = 0;
    int i = find_index(name, &n);
    CHECK(i >= 0, "plugin '%s' is not listed", name);
    if (i < 0) return;
    CHECK(n == 1, "plugin '%s' listed %d times", name, n);
    netrun_backend_info info;
    CHECK(netrun_backend_get_info(i, &info) == NETRUN_OK, "get_info(%d)", i);
    CHECK(!info.available, "plugin '%s' should be unavailable", name);
    CHECK(ends_with(info.path, file), "plugin '%s' path %s should end with %s", name, info.path, file);
    CHECK(contains(info.reason, reason_part), "plugin '%s' reason \"%s\" should contain \"%s\"", name,
          info.reason ? info.reason : "(null)", reason_part);
    CHECK(info.device_count == 0, "unavailable plugin '%s' reports %d devices", name, info.device_count);
    CHECK(nr_backends_find(name) == NULL, "nr_backends_find('%s') must not return an unavailable plugin", name);
}

/* Discovery runs once per process, so each allocation failure is tried in a child: whatever fails, the
 * loader must neither crash nor list a half-made entry. Runs before the parent's own discovery. */
static void test_allocation_failures(void) {
    int crashed = 0, bad = 0, covered = 0;
    long nth;
    for (nth = 1; nth <= 400 && !covered; nth++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            CHECK(0, "fork failed");
            return;
        }
        if (pid == 0) {
            /* The loader logs each failure; keep the test's output readable. */
            if (!getenv("NR_TEST_VERBOSE_FAULTS") && !freopen("/dev/null", "w", stderr)) _exit(4);
            nr_fault_fail_allocation(nth);
            int n = netrun_backend_count();
            /* If the countdown is still running, discovery made fewer than nth allocations: say so. */
            for (int k = 0; k < 400; k++) {
                void *p = nr_malloc(1);
                if (!p) _exit(3);
                nr_free(p);
            }
            nr_fault_fail_allocation(0);
            for (int i = 0; i < n; i++) {
                const nr_backend *b = nr_backends_get(i);
                if (!b || !b->name || !b->path) _exit(1);
                if (b->available && (!b->api || !b->summary)) _exit(1);
                if (!b->available && !b->reason) _exit(1);
            }
            _exit(0);
        }
        int status = 0;
        if (waitpid(pid, &status, 0) != pid) {
            CHECK(0, "waitpid");
            return;
        }
        if (!WIFEXITED(status)) {
            crashed++;
            fprintf(stderr, "allocation failure #%ld: discovery crashed (signal %d)\n", nth,
                    WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        } else if (WEXITSTATUS(status) == 3) {
            covered = 1; /* every allocation of discovery has been failed once */
        } else if (WEXITSTATUS(status) != 0) {
            bad++;
            fprintf(stderr, "allocation failure #%ld: an entry was left incomplete\n", nth);
        }
    }
    CHECK(covered, "discovery still allocating after %ld injected failures", nth - 1);
    CHECK(crashed == 0 && bad == 0, "allocation failures: %d crashed, %d incomplete", crashed, bad);
    printf("  discovery survived each of its %ld allocations failing\n", nth - 2);
}

static void test_discovery(const char *plugin_dir, const char *shadow_dir, const char *backend_dir) {
    /* Before discovery, nothing is recorded; discovery (with a failing probe) must not leave an error. */
    nr_error_clear();
    int n = netrun_backend_count();
    CHECK(n >= 9, "expected at least 9 plugins (6 broken + cpu + template + shadow), found %d", n);
    CHECK(nr_error_message() && nr_error_message()[0] == 0,
          "discovery left an error message on the thread: \"%s\"", nr_error_message());
    for (int i = 0; i < n; i++) {
        netrun_backend_info info;
        if (netrun_backend_get_info(i, &info) == NETRUN_OK)
            printf("  %-12s %-11s %s\n      %s\n", info.name, info.available ? "available" : "unavailable",
                   info.reason, info.path);
    }

    /* The real backends are available. */
    const char *good[] = {"cpu", "template"};
    for (int g = 0; g < 2; g++) {
        int i = find_index(good[g], NULL);
        CHECK(i >= 0, "backend '%s' not found", good[g]);
        if (i < 0) continue;
        netrun_backend_info info;
        CHECK(netrun_backend_get_info(i, &info) == NETRUN_OK, "get_info");
        CHECK(info.available, "backend '%s' unavailable: %s", good[g], info.reason);
        CHECK(info.device_count == 1, "backend '%s' has %d devices", good[g], info.device_count);
        CHECK(info.reason && info.reason[0], "backend '%s' has an empty summary", good[g]);
        CHECK(contains(info.path, backend_dir), "backend '%s' loaded from %s, not from %s", good[g], info.path,
              backend_dir);
        const nr_backend *b = nr_backends_find(good[g]);
        CHECK(b && b->available && b->api && b->dl, "nr_backends_find('%s')", good[g]);
        char desc[256];
        CHECK(netrun_backend_device_describe(i, 0, desc, sizeof desc) == NETRUN_OK && desc[0],
              "device_describe(%s, 0): %s", good[g], netrun_last_error());
        CHECK(netrun_backend_device_describe(i, 1, desc, sizeof desc) == NETRUN_ERR_INVALID_ARGUMENT,
              "device_describe(%s, 1) must fail", good[g]);
        CHECK(contains(netrun_last_error(), "device 1"), "message \"%s\"", netrun_last_error());
    }
    CHECK(find_index("template", NULL) > find_index("cpu", NULL), "backends of one folder sorted by name");

    /* Each broken plugin is listed, unavailable, with the reason; loading went on past each of them. */
    char mismatch[128];
    snprintf(mismatch, sizeof mismatch,
             "ABI mismatch: plugin built for ABI %d.3, host has %d.%d; rebuild the plugin", NETRUN_ABI_MAJOR + 1,
             NETRUN_ABI_MAJOR, NETRUN_ABI_MINOR);
    expect_unavailable("abimismatch", "test-plugins/libnetrun-abimismatch.so", mismatch);
    expect_unavailable("noentry", "test-plugins/libnetrun-noentry.so", "no netrun_backend_entry symbol");
    char refused[64];
    snprintf(refused, sizeof refused, "entry refused the host (ABI %d.%d)", NETRUN_ABI_MAJOR, NETRUN_ABI_MINOR);
    expect_unavailable("refuse", "test-plugins/libnetrun-refuse.so", refused);
    expect_unavailable("shortapi", "test-plugins/libnetrun-shortapi.so", "struct_size");
    expect_unavailable("nodevice", "test-plugins/libnetrun-nodevice.so", "no device found");
    /* dlerror's text names the file. */
    expect_unavailable("garbage", "test-plugins/libnetrun-garbage.so", "libnetrun-garbage.so");

    /* NETRUN_BACKEND_PATH order: the test folder first, sorted by name within it. */
    const char *order[] = {"abimismatch", "garbage", "nodevice", "noentry", "refuse", "shortapi", "cpu"};
    for (int k = 0; k + 1 < (int)(sizeof order / sizeof order[0]); k++)
        CHECK(find_index(order[k], NULL) < find_index(order[k + 1], NULL), "'%s' should be listed before '%s'",
              order[k], order[k + 1]);

    /* The second template (found later) is listed as shadowed; the first one wins. */
    int n_template = 0;
    find_index("template", &n_template);
    CHECK(n_template == 2, "template listed %d times, expected the real one and the shadowed copy", n_template);
    int shadowed = 0;
    for (int i = 0; i < n; i++) {
        netrun_backend_info info;
        if (netrun_backend_get_info(i, &info) != NETRUN_OK || strcmp(info.name, "template")) continue;
        if (contains(info.path, shadow_dir)) {
            shadowed++;
            CHECK(!info.available, "shadowed template must be unavailable");
            CHECK(contains(info.reason, "shadowed"), "reason \"%s\"", info.reason);
        }
    }
    CHECK(shadowed == 1, "the copy in %s is listed %d times", shadow_dir, shadowed);
    const nr_backend *t = nr_backends_find("template");
    CHECK(t && !contains(t->path, shadow_dir), "nr_backends_find must return the first template");
    (void)plugin_dir;

    /* Optional slots. */
    if (t && t->api) {
        CHECK(NR_API_HAS(t->api, device_describe), "template has device_describe");
        CHECK(!NR_API_HAS(t->api, synchronize), "template's synchronize is NULL");
        CHECK(t->api->op_table_len == 2 && t->api->op_table, "template op table has 2 rows");
    }

    /* Bad arguments fail with a message, never crash. */
    netrun_backend_info info;
    CHECK(netrun_backend_get_info(-1, &info) == NETRUN_ERR_INVALID_ARGUMENT, "get_info(-1)");
    CHECK(contains(netrun_last_error(), "out of range"), "message \"%s\"", netrun_last_error());
    CHECK(netrun_backend_get_info(n, &info) == NETRUN_ERR_INVALID_ARGUMENT, "get_info(count)");
    CHECK(netrun_backend_get_info(0, NULL) == NETRUN_ERR_INVALID_ARGUMENT, "get_info(NULL)");
    char buf[64];
    int nd = find_index("nodevice", NULL);
    CHECK(netrun_backend_device_describe(nd, 0, buf, sizeof buf) == NETRUN_ERR_STATE,
          "describing an unavailable backend");
    CHECK(contains(netrun_last_error(), "no device found"), "message \"%s\"", netrun_last_error());
    CHECK(netrun_backend_device_describe(0, 0, NULL, 0) == NETRUN_ERR_INVALID_ARGUMENT, "NULL buffer");
    CHECK(nr_backends_find(NULL) == NULL && nr_backends_find("no-such-backend") == NULL, "find unknown");
    CHECK(nr_backends_get(-1) == NULL && nr_backends_get(n) == NULL, "get out of range");
}

static void test_host_api(void) {
    const netrun_host_api *h = nr_host_api();
    CHECK(h && h->abi_version == NETRUN_ABI_VERSION && h->struct_size == sizeof(netrun_host_api), "host table");
    if (!h) return;
    CHECK(h->log && h->error && h->alloc && h->free, "host slots");
    nr_error_clear();
    netrun_status st = h->error(NETRUN_ERR_BACKEND, "kernel %s failed with %d", "conv", 42);
    CHECK(st == NETRUN_ERR_BACKEND, "error returns its code");
    CHECK(contains(nr_error_message(), "kernel conv failed with 42"), "message \"%s\"", nr_error_message());
    /* A plugin passing NETRUN_OK as an error code must not read as success. */
    CHECK(h->error(NETRUN_OK, "oops") != NETRUN_OK, "error(OK) is turned into a failure");
    for (size_t align = 1; align <= 4096; align *= 2) {
        void *p = h->alloc(100, align);
        CHECK(p != NULL, "alloc(100, %zu)", align);
        CHECK(((uintptr_t)p % align) == 0, "alloc(100, %zu) returned %p", align, p);
        if (p) memset(p, 0xab, 100);
        h->free(p);
    }
    CHECK(h->alloc(16, 48) == NULL, "alignment 48 is not a power of two");
    h->free(NULL);
    /* Filtered out at the default level (warn): must not crash, and writes nothing. */
    h->log(NETRUN_LOG_DEBUG, "test", "debug line %d", 1);
}

/* ---- the template backend through its api, no session ---- */

static void test_template_direct(void) {
    const nr_backend *b = nr_backends_find("template");
    CHECK(b != NULL, "template not found");
    if (!b) return;
    const netrun_backend_api *api = b->api;
    netrun_backend_config cfg = {.struct_size = sizeof cfg, .device = 0, .threads = 1};

    netrun_value_desc x = {.name = "x", .dtype = NETRUN_DTYPE_FLOAT, .rank = 2, .dims = {2, 3}};
    netrun_value_desc y = x;
    y.name = "y";
    netrun_value_desc bias = {.name = "b", .dtype = NETRUN_DTYPE_FLOAT, .rank = 1, .dims = {3}};
    netrun_value_desc xi = x;
    xi.dtype = NETRUN_DTYPE_INT64;
    netrun_value_desc dyn = x;
    dyn.dims[0] = -1;

    char reason[256];
    netrun_node_desc relu = {.struct_size = sizeof relu, .name = "r", .op_type = "Relu", .domain = "",
                             .opset = 17, .n_inputs = 1, .inputs = &x, .n_outputs = 1, .outputs = &y};
    CHECK(api->supports(&cfg, &relu, reason, sizeof reason) == 1, "template supports Relu");
    netrun_node_desc relu_i = relu;
    relu_i.inputs = &xi;
    reason[0] = 0;
    CHECK(api->supports(&cfg, &relu_i, reason, sizeof reason) == 0 && contains(reason, "dtype"),
          "int64 Relu refused: \"%s\"", reason);
    netrun_node_desc conv = relu;
    conv.op_type = "Conv";
    reason[0] = 0;
    CHECK(api->supports(&cfg, &conv, reason, sizeof reason) == 0 && contains(reason, "Conv"),
          "Conv refused: \"%s\"", reason);
    netrun_value_desc same[2] = {x, x}, bcast[2] = {x, bias}, dyn2[2] = {dyn, dyn};
    netrun_node_desc add = relu;
    add.op_type = "Add";
    add.n_inputs = 2;
    add.inputs = same;
    CHECK(api->supports(&cfg, &add, reason, sizeof reason) == 1, "Add of identical shapes: %s", reason);
    add.inputs = bcast;
    reason[0] = 0;
    CHECK(api->supports(&cfg, &add, reason, sizeof reason) == 0 && contains(reason, "broadcasting"),
          "broadcast Add refused: \"%s\"", reason);
    add.inputs = dyn2;
    reason[0] = 0;
    CHECK(api->supports(&cfg, &add, reason, sizeof reason) == 0 && contains(reason, "dynamic"),
          "dynamic Add refused: \"%s\"", reason);
    add.inputs = same;

    netrun_backend_context *ctx = NULL;
    CHECK(api->context_create(&cfg, &ctx) == NETRUN_OK && ctx, "context_create: %s", nr_error_message());
    if (!ctx) return;
    const size_t n = 6, bytes = n * sizeof(float);
    void *bx = NULL, *bb = NULL, *by = NULL;
    CHECK(api->buffer_alloc(ctx, bytes, &bx) == NETRUN_OK, "alloc");
    CHECK(api->buffer_alloc(ctx, bytes, &bb) == NETRUN_OK, "alloc");
    CHECK(api->buffer_alloc(ctx, bytes, &by) == NETRUN_OK, "alloc");
    if (bx && bb && by) {
        float xv[6] = {-2.5f, -0.0f, 0.0f, 1.25f, 3.0f, -7.0f}, bv[6] = {1, 2, 3, 4, 5, 6}, out[6];
        CHECK(api->copy_from_host(ctx, bx, 0, xv, bytes) == NETRUN_OK, "copy in");
        CHECK(api->copy_from_host(ctx, bb, 0, bv, bytes) == NETRUN_OK, "copy in");
        netrun_tensor tx = {.dtype = NETRUN_DTYPE_FLOAT, .rank = 2, .dims = {2, 3},
                            .data = api->buffer_address(ctx, bx), .buffer = bx, .nbytes = bytes};
        netrun_tensor tb = tx, ty = tx;
        tb.data = api->buffer_address(ctx, bb);
        tb.buffer = bb;
        ty.data = api->buffer_address(ctx, by);
        ty.buffer = by;

        netrun_kernel *k = NULL;
        size_t ws = 99;
        CHECK(api->kernel_create(ctx, &relu, &k, &ws) == NETRUN_OK && k && ws == 0, "kernel_create Relu");
        netrun_kernel_args args = {.struct_size = sizeof args, .n_inputs = 1, .inputs = &tx, .n_outputs = 1,
                                   .outputs = &ty};
        if (k) {
            CHECK(api->kernel_run(ctx, k, &args) == NETRUN_OK, "Relu run: %s", nr_error_message());
            CHECK(api->copy_to_host(ctx, out, by, 0, bytes) == NETRUN_OK, "copy out");
            for (size_t i = 0; i < n; i++)
                CHECK(out[i] == (xv[i] > 0 ? xv[i] : 0.0f), "Relu[%zu] = %g for %g", i, out[i], xv[i]);
            /* A short output buffer is reported, not overrun. */
            netrun_tensor short_y = ty;
            short_y.nbytes = bytes - 1;
            args.outputs = &short_y;
            CHECK(api->kernel_run(ctx, k, &args) != NETRUN_OK, "short output must fail");
            CHECK(contains(nr_error_message(), "template"), "message \"%s\"", nr_error_message());
            api->kernel_destroy(ctx, k);
        }

        k = NULL;
        CHECK(api->kernel_create(ctx, &add, &k, &ws) == NETRUN_OK && k, "kernel_create Add");
        netrun_tensor ins[2] = {tx, tb};
        args.n_inputs = 2;
        args.inputs = ins;
        args.outputs = &ty;
        if (k) {
            CHECK(api->kernel_run(ctx, k, &args) == NETRUN_OK, "Add run: %s", nr_error_message());
            CHECK(api->copy_to_host(ctx, out, by, 0, bytes) == NETRUN_OK, "copy out");
            for (size_t i = 0; i < n; i++) CHECK(out[i] == xv[i] + bv[i], "Add[%zu] = %g", i, out[i]);
            /* Shapes that changed since supports(): refused at run time. */
            ins[1].rank = 1;
            ins[1].dims[0] = 6;
            CHECK(api->kernel_run(ctx, k, &args) == NETRUN_ERR_UNSUPPORTED, "Add of different shapes at run");
            api->kernel_destroy(ctx, k);
        }
        CHECK(api->kernel_create(ctx, &conv, &k, &ws) == NETRUN_ERR_UNSUPPORTED, "no Conv kernel");
    }
    api->buffer_free(ctx, bx);
    api->buffer_free(ctx, bb);
    api->buffer_free(ctx, by);
    api->context_destroy(ctx);
}

/* ---- the template backend through a session ---- */

/* A one-node model: inputs a (and b) float32 of the given shapes, output y of a's shape. */
static uint8_t *make_model(const char *op_type, int n_inputs, const int64_t *const *shapes, const int *ranks,
                           size_t *size) {
    Onnx__TensorShapeProto__Dimension dims[3][4];
    Onnx__TensorShapeProto__Dimension *dimp[3][4];
    Onnx__TensorShapeProto shape[3];
    Onnx__TypeProto__Tensor tt[3];
    Onnx__TypeProto type[3];
    Onnx__ValueInfoProto vi[3];
    Onnx__ValueInfoProto *inputs[2], *outputs[1];
    char *names[3] = {"a", "b", "y"};
    for (int v = 0; v < 3; v++) {
        int src = v < 2 ? v : 0; /* the output has input a's shape */
        onnx__tensor_shape_proto__init(&shape[v]);
        for (int d = 0; d < ranks[src]; d++) {
            onnx__tensor_shape_proto__dimension__init(&dims[v][d]);
            dims[v][d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dims[v][d].dim_value = shapes[src][d];
            dimp[v][d] = &dims[v][d];
        }
        shape[v].n_dim = (size_t)ranks[src];
        shape[v].dim = dimp[v];
        onnx__type_proto__tensor__init(&tt[v]);
        tt[v].has_elem_type = 1;
        tt[v].elem_type = NETRUN_DTYPE_FLOAT;
        tt[v].shape = &shape[v];
        onnx__type_proto__init(&type[v]);
        type[v].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        type[v].tensor_type = &tt[v];
        onnx__value_info_proto__init(&vi[v]);
        vi[v].name = names[v];
        vi[v].type = &type[v];
    }
    inputs[0] = &vi[0];
    inputs[1] = &vi[1];
    outputs[0] = &vi[2];

    Onnx__NodeProto node;
    onnx__node_proto__init(&node);
    node.n_input = (size_t)n_inputs;
    node.input = names;
    node.n_output = 1;
    node.output = &names[2];
    node.name = "node0";
    node.op_type = (char *)op_type;
    node.domain = "";
    Onnx__NodeProto *nodes[1] = {&node};

    Onnx__GraphProto graph;
    onnx__graph_proto__init(&graph);
    graph.name = "plugin_loader_test";
    graph.n_node = 1;
    graph.node = nodes;
    graph.n_input = (size_t)n_inputs;
    graph.input = inputs;
    graph.n_output = 1;
    graph.output = outputs;

    Onnx__OperatorSetIdProto opset;
    onnx__operator_set_id_proto__init(&opset);
    opset.domain = "";
    opset.has_version = 1;
    opset.version = 17;
    Onnx__OperatorSetIdProto *opsets[1] = {&opset};

    Onnx__ModelProto model;
    onnx__model_proto__init(&model);
    model.has_ir_version = 1;
    model.ir_version = 8;
    model.producer_name = "test_plugin_loader";
    model.graph = &graph;
    model.n_opset_import = 1;
    model.opset_import = opsets;

    *size = onnx__model_proto__get_packed_size(&model);
    uint8_t *buf = malloc(*size ? *size : 1);
    if (buf) onnx__model_proto__pack(&model, buf);
    return buf;
}

static void test_template_session(void) {
    const int64_t shape_a[2] = {2, 3}, shape_b[1] = {3};
    const int64_t *shapes[2] = {shape_a, shape_a};
    int ranks[2] = {2, 2};
    size_t size = 0;
    uint8_t *bytes = make_model("Relu", 1, shapes, ranks, &size);
    CHECK(bytes != NULL, "model bytes");
    if (!bytes) return;
    netrun_model *model = NULL;
    netrun_status st = netrun_model_load_memory(bytes, size, NULL, &model);
    free(bytes);
    CHECK(st == NETRUN_OK && model, "load Relu model: %s", netrun_last_error());
    if (!model) return;

    netrun_options *opt = NULL;
    CHECK(netrun_options_create(&opt) == NETRUN_OK, "options");
    CHECK(netrun_options_set_backends(opt, "template") == NETRUN_OK, "set_backends: %s", netrun_last_error());
    CHECK(netrun_options_set_strict(opt, 1) == NETRUN_OK, "strict");
    netrun_session *s = NULL;
    CHECK(netrun_session_create(model, opt, &s) == NETRUN_OK && s, "session_create: %s", netrun_last_error());
    if (s) {
        float x[6] = {-1.5f, 2.0f, -0.25f, 0.0f, 4.5f, -3.0f};
        CHECK(netrun_session_set_input(s, "a", NETRUN_DTYPE_FLOAT, 2, shape_a, x, sizeof x) == NETRUN_OK,
              "set_input: %s", netrun_session_error(s));
        st = netrun_session_run(s);
        CHECK(st == NETRUN_OK, "run on template (strict): %s", netrun_session_error(s));
        netrun_tensor_view y;
        if (st == NETRUN_OK && netrun_session_output(s, 0, &y) == NETRUN_OK) {
            CHECK(y.dtype == NETRUN_DTYPE_FLOAT && y.rank == 2 && y.dims[0] == 2 && y.dims[1] == 3 &&
                      y.nbytes == sizeof x,
                  "output shape");
            const float *yv = y.data;
            for (int i = 0; i < 6 && yv; i++)
                CHECK(yv[i] == fmaxf(x[i], 0.0f), "Relu output %d = %g for %g", i, yv[i], x[i]);
        } else {
            CHECK(0, "no output: %s", netrun_session_error(s));
        }
        CHECK(netrun_session_node_count(s) == 1, "one node placed, got %d", netrun_session_node_count(s));
        netrun_node_info ni;
        if (netrun_session_node_info(s, 0, &ni) == NETRUN_OK)
            CHECK(ni.backend && !strcmp(ni.backend, "template"), "node placed on %s", ni.backend);
        else
            CHECK(0, "node_info: %s", netrun_session_error(s));
        netrun_session_destroy(s);
    }

    /* Add with broadcasting: strict on template must fail at prepare, and say why. */
    const int64_t *shapes2[2] = {shape_a, shape_b};
    int ranks2[2] = {2, 1};
    bytes = make_model("Add", 2, shapes2, ranks2, &size);
    netrun_model *model2 = NULL;
    if (bytes) {
        CHECK(netrun_model_load_memory(bytes, size, NULL, &model2) == NETRUN_OK, "load Add model: %s",
              netrun_last_error());
        free(bytes);
    }
    if (model2) {
        s = NULL;
        CHECK(netrun_session_create(model2, opt, &s) == NETRUN_OK && s, "session_create: %s", netrun_last_error());
        if (s) {
            CHECK(netrun_session_prepare(s) != NETRUN_OK, "strict template prepare of a broadcasting Add must fail");
            const char *e = netrun_session_error(s);
            CHECK(contains(e, "broadcasting"), "strict failure should carry the template's reason: \"%s\"",
                  e ? e : "(null)");
            printf("  strict Add on template: %s\n", e ? e : "(null)");
            netrun_session_destroy(s);
        }
        netrun_model_release(model2);
    }
    netrun_options_destroy(opt);

    /* A listed backend that is unavailable ("nodevice": its probe finds no device) is an error naming it and how
     * to allow fallback, never a silent move to the CPU; naming another available backend or allowing fallback
     * runs the model there. */
    struct { const char *list; int strict, allow; netrun_status want; const char *words[3]; } cases[] = {
        {"nodevice", 0, 0, NETRUN_ERR_INVALID_ARGUMENT, {"nodevice", "no device found", "allow fallback"}},
        {"nodevice", 1, 1, NETRUN_ERR_INVALID_ARGUMENT, {"nodevice", "strict", NULL}},
        {"nodevice,cpu", 0, 0, NETRUN_OK, {NULL}},
        {"nodevice", 0, 1, NETRUN_OK, {NULL}},
        {"nodevice,template", 0, 0, NETRUN_OK, {NULL}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        netrun_options *o = NULL;
        s = NULL;
        if (netrun_options_create(&o) != NETRUN_OK) break;
        netrun_options_set_backends(o, cases[c].list);
        netrun_options_set_strict(o, cases[c].strict);
        CHECK(netrun_options_set_allow_fallback(o, cases[c].allow) == NETRUN_OK, "set_allow_fallback");
        st = netrun_session_create(model, o, &s);
        CHECK(st == cases[c].want, "'%s' strict %d allow %d: status %d, expected %d (%s)", cases[c].list,
              cases[c].strict, cases[c].allow, (int)st, (int)cases[c].want, netrun_last_error());
        for (int w = 0; w < 3 && cases[c].words[w]; w++)
            CHECK(contains(netrun_last_error(), cases[c].words[w]), "'%s': message lacks '%s': \"%s\"",
                  cases[c].list, cases[c].words[w], netrun_last_error());
        if (st == NETRUN_OK && s) {
            float x[6] = {-1, 2, -3, 4, -5, 6};
            CHECK(netrun_session_set_input(s, "a", NETRUN_DTYPE_FLOAT, 2, shape_a, x, sizeof x) == NETRUN_OK &&
                      netrun_session_run(s) == NETRUN_OK,
                  "'%s': run: %s", cases[c].list, netrun_session_error(s));
            netrun_node_info ni;
            if (netrun_session_node_info(s, 0, &ni) == NETRUN_OK)
                CHECK(ni.backend && strcmp(ni.backend, "nodevice"), "'%s': node placed on %s", cases[c].list,
                      ni.backend ? ni.backend : "(null)");
        }
        netrun_session_destroy(s);
        netrun_options_destroy(o);
    }
    netrun_model_release(model);
}


/* ABI 1.10 declarations of the backends built here: the roles are found by flag (the CPU's), and every region a
 * backend declares names options of its own table and ops the runtime knows, so that the runtime's plan of the
 * region reads what the backend documents. */
static void test_declared_roles(void) {
    const nr_backend *fb = nr_backends_find_role(NETRUN_BACKEND_FALLBACK);
    CHECK(fb && !strcmp(fb->name, "cpu"), "fallback role: found %s, want cpu", fb ? fb->name : "none");
    const nr_backend *folder = nr_backends_find_role(NETRUN_BACKEND_FOLDS_CONSTANTS | NETRUN_BACKEND_HOST_MEMORY);
    CHECK(folder && !strcmp(folder->name, "cpu"), "constant folder: found %s, want cpu",
          folder ? folder->name : "none");
    CHECK(!nr_backends_find_role(1u << 30), "no backend declares an unknown role bit");
    int n = netrun_backend_count(), regions = 0;
    for (int i = 0; i < n; i++) {
        const nr_backend *b = nr_backends_get(i);
        if (!b || !b->api || !NR_API_HAS(b->api, regions)) continue;
        for (const netrun_region_spec *r = b->api->regions; r->kind != NETRUN_REGION_END; r++, regions++) {
            CHECK(r->kind == NETRUN_REGION_NCHW16C || r->kind == NETRUN_REGION_FP16_NHWC || r->kind == NETRUN_REGION_FP16,
                  "%s: region kind %d", b->name, (int)r->kind);
            const char *keys[2] = {r->option, r->fold_scale_option};
            for (int k = 0; k < 2; k++) {
                if (!keys[k]) continue;
                int listed = 0;
                for (const netrun_option_spec *o = NR_API_HAS(b->api, options) ? b->api->options : NULL; o && o->key; o++)
                    listed |= !strcmp(o->key, keys[k]);
                CHECK(listed, "%s: region option '%s' is not in its option table", b->name, keys[k]);
            }
            int n_ops = 0;
            for (const char *const *op = r->ops; op && *op; op++, n_ops++)
                CHECK(nr_layer_find("", *op) != NULL, "%s: region op '%s' is unknown to the runtime", b->name, *op);
            CHECK(n_ops > 0, "%s: a region that crosses no op", b->name);
        }
    }
    CHECK(regions >= 1, "the CPU backend declares its nChw16c region (found %d regions)", regions);
}

int main(int argc, char **argv) {
    const char *plugin_dir = argc > 1 ? argv[1] : NR_TEST_PLUGIN_DIR;
    const char *shadow_dir = argc > 2 ? argv[2] : NR_TEST_SHADOW_DIR;
    const char *backend_dir = argc > 3 ? argv[3] : NR_TEST_BACKEND_DIR;
    if (!*plugin_dir || !*shadow_dir || !*backend_dir) {
        fprintf(stderr, "usage: %s TEST_PLUGIN_DIR SHADOW_DIR BACKEND_DIR\n", argv[0]);
        return 2;
    }
    /* The test folder twice (once through ".."), an empty entry and a missing folder: deduped and skipped. */
    char path[8192];
    snprintf(path, sizeof path, "%s:%s/../test-plugins::/nonexistent/netrun:%s:%s", plugin_dir, plugin_dir,
             backend_dir, shadow_dir);
    setenv("NETRUN_BACKEND_PATH", path, 1);

    test_allocation_failures();
    test_discovery(plugin_dir, shadow_dir, backend_dir);
    test_host_api();
    test_declared_roles();
    test_template_direct();
    if (!getenv("NR_TEST_SKIP_SESSION")) test_template_session();

    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
