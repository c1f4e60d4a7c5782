/*
 * test_triton_backend.c — the netrun Triton backend (triton/ backend.c, execute.c) driven by a fake Triton: this file implements
 * the part of Triton's C API the backend calls, so that every path runs here without a server, under the
 * sanitizers with leak checking (the real-server test, test_triton.py, cannot check the backend's leaks inside an
 * uninstrumented tritonserver). Cases: API version and enum checks, parameters good and bad, a model netrun
 * cannot load, auto-complete from the model, configs that contradict the model, requests good and bad (every
 * request gets exactly one response and is released once), only the requested outputs.
 *
 * usage: test_triton_backend MODEL_REPO_PARENT   (a folder with tiny/1/model.onnx = examples/tiny_cnn.onnx)
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netrun.h"
#include "triton_api.h"

/* ---------------------------------------------------------------- the fake server */
struct TRITONSERVER_Error {
    TRITONSERVER_Error_Code code;
    char *msg;
};
struct TRITONSERVER_Message {
    char *json;
};
struct TRITONBACKEND_Backend {
    TRITONSERVER_Message config;
};
struct TRITONBACKEND_Model {
    const char *name;
    uint64_t version;
    const char *repo;
    char *config;          /* JSON */
    bool autocomplete;
    int set_config_calls;
    void *state;
    TRITONBACKEND_Backend *backend;
};
struct TRITONBACKEND_ModelInstance {
    const char *name;
    TRITONSERVER_InstanceGroupKind kind;
    int32_t device;
    TRITONBACKEND_Model *model;
    void *state;
};
struct TRITONBACKEND_Input {
    const char *name;
    TRITONSERVER_DataType dtype;
    int64_t shape[8];
    uint32_t rank;
    const void *data;
    uint64_t bytes;
};
struct TRITONBACKEND_Output {
    char name[64];
    TRITONSERVER_DataType dtype;
    int64_t shape[8];
    uint32_t rank;
    void *buf;
    uint64_t bytes;
};
struct TRITONBACKEND_Response {
    struct TRITONBACKEND_Request *req;
    TRITONBACKEND_Output outputs[4];
    int n_outputs;
};
struct TRITONBACKEND_Request {
    TRITONBACKEND_Input inputs[4];
    int n_inputs;
    const char *outputs[4];
    int n_outputs;
    int released, responses_created, responses_sent;
    TRITONSERVER_Error_Code err_code;
    char err_msg[512];
    int ok;               /* sent without an error */
    TRITONBACKEND_Output got[4];
    int n_got;
};

static uint32_t g_api_minor = 19;
static int g_bad_enum_names;

static char *dup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

const char *TRITONSERVER_DataTypeString(TRITONSERVER_DataType t) {
    static const char *names[] = {"INVALID", "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16",
                                  "INT32", "INT64", "FP16", "FP32", "FP64", "BYTES", "BF16"};
    if (g_bad_enum_names && t == TRITONSERVER_TYPE_FP32) return "FP64";
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "<invalid>";
}
uint32_t TRITONSERVER_DataTypeByteSize(TRITONSERVER_DataType t) { (void)t; return 0; }
const char *TRITONSERVER_MemoryTypeString(TRITONSERVER_MemoryType m) {
    return m == TRITONSERVER_MEMORY_CPU ? "CPU" : m == TRITONSERVER_MEMORY_CPU_PINNED ? "CPU_PINNED" : "GPU";
}
const char *TRITONSERVER_InstanceGroupKindString(TRITONSERVER_InstanceGroupKind k) {
    static const char *names[] = {"AUTO", "CPU", "GPU", "MODEL"};
    return (unsigned)k < 4 ? names[k] : "<invalid>";
}
TRITONSERVER_Error *TRITONSERVER_LogMessage(TRITONSERVER_LogLevel level, const char *file, const int line,
                                            const char *msg) {
    if (getenv("VERBOSE")) fprintf(stderr, "  [log %d %s:%d] %s\n", (int)level, file, line, msg);
    return NULL;
}
TRITONSERVER_Error *TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char *msg) {
    TRITONSERVER_Error *e = calloc(1, sizeof *e);
    e->code = code;
    e->msg = dup(msg);
    return e;
}
void TRITONSERVER_ErrorDelete(TRITONSERVER_Error *e) {
    if (!e) return;
    free(e->msg);
    free(e);
}
TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error *e) { return e->code; }
const char *TRITONSERVER_ErrorMessage(TRITONSERVER_Error *e) { return e->msg; }
TRITONSERVER_Error *TRITONSERVER_MessageNewFromSerializedJson(TRITONSERVER_Message **m, const char *base, size_t n) {
    *m = calloc(1, sizeof **m);
    (*m)->json = malloc(n + 1);
    memcpy((*m)->json, base, n);
    (*m)->json[n] = 0;
    return NULL;
}
TRITONSERVER_Error *TRITONSERVER_MessageDelete(TRITONSERVER_Message *m) {
    if (m) free(m->json);
    free(m);
    return NULL;
}
TRITONSERVER_Error *TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message *m, const char **base, size_t *n) {
    *base = m->json;
    *n = strlen(m->json);
    return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ApiVersion(uint32_t *major, uint32_t *minor) {
    *major = 1;
    *minor = g_api_minor;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_BackendName(TRITONBACKEND_Backend *b, const char **name) {
    (void)b;
    *name = "netrun";
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_BackendConfig(TRITONBACKEND_Backend *b, TRITONSERVER_Message **c) {
    *c = &b->config;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelName(TRITONBACKEND_Model *m, const char **name) {
    *name = m->name;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelVersion(TRITONBACKEND_Model *m, uint64_t *v) {
    *v = m->version;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelRepository(TRITONBACKEND_Model *m, TRITONBACKEND_ArtifactType *t,
                                                  const char **loc) {
    *t = TRITONBACKEND_ARTIFACT_FILESYSTEM;
    *loc = m->repo;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelConfig(TRITONBACKEND_Model *m, const uint32_t v, TRITONSERVER_Message **c) {
    if (v != 1) return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED, "config version");
    return TRITONSERVER_MessageNewFromSerializedJson(c, m->config, strlen(m->config));
}
TRITONSERVER_Error *TRITONBACKEND_ModelAutoCompleteConfig(TRITONBACKEND_Model *m, bool *a) {
    *a = m->autocomplete;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelSetConfig(TRITONBACKEND_Model *m, const uint32_t v, TRITONSERVER_Message *c) {
    (void)v;
    free(m->config);
    m->config = dup(c->json);
    m->set_config_calls++;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelBackend(TRITONBACKEND_Model *m, TRITONBACKEND_Backend **b) {
    *b = m->backend;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelState(TRITONBACKEND_Model *m, void **s) {
    *s = m->state;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelSetState(TRITONBACKEND_Model *m, void *s) {
    m->state = s;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceName(TRITONBACKEND_ModelInstance *i, const char **n) {
    *n = i->name;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceKind(TRITONBACKEND_ModelInstance *i, TRITONSERVER_InstanceGroupKind *k) {
    *k = i->kind;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceDeviceId(TRITONBACKEND_ModelInstance *i, int32_t *d) {
    *d = i->device;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance *i, TRITONBACKEND_Model **m) {
    *m = i->model;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance *i, void **s) {
    *s = i->state;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance *i, void *s) {
    i->state = s;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportStatistics(TRITONBACKEND_ModelInstance *i,
                                                                TRITONBACKEND_Request *r, const bool ok,
                                                                const uint64_t a, const uint64_t b, const uint64_t c,
                                                                const uint64_t d) {
    (void)i, (void)ok;
    if (r->released || !(a <= b && b <= c && c <= d)) fprintf(stderr, "bad statistics\n"), abort();
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportBatchStatistics(TRITONBACKEND_ModelInstance *i, const uint64_t n,
                                                                     const uint64_t a, const uint64_t b,
                                                                     const uint64_t c, const uint64_t d) {
    (void)i, (void)n, (void)a, (void)b, (void)c, (void)d;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_RequestId(TRITONBACKEND_Request *r, const char **id) {
    (void)r;
    *id = "";
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_RequestInputCount(TRITONBACKEND_Request *r, uint32_t *n) {
    *n = (uint32_t)r->n_inputs;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_RequestInputName(TRITONBACKEND_Request *r, const uint32_t i, const char **n) {
    *n = r->inputs[i].name;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_RequestInput(TRITONBACKEND_Request *r, const char *name, TRITONBACKEND_Input **in) {
    for (int i = 0; i < r->n_inputs; i++)
        if (!strcmp(r->inputs[i].name, name)) {
            *in = &r->inputs[i];
            return NULL;
        }
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_NOT_FOUND, "no such input");
}
TRITONSERVER_Error *TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request *r, uint32_t *n) {
    *n = (uint32_t)r->n_outputs;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_RequestOutputName(TRITONBACKEND_Request *r, const uint32_t i, const char **n) {
    *n = r->outputs[i];
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_RequestRelease(TRITONBACKEND_Request *r, uint32_t flags) {
    if (flags != TRITONSERVER_REQUEST_RELEASE_ALL) abort();
    r->released++;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_InputProperties(TRITONBACKEND_Input *in, const char **name,
                                                  TRITONSERVER_DataType *dt, const int64_t **shape, uint32_t *rank,
                                                  uint64_t *bytes, uint32_t *n_buffers) {
    if (name) *name = in->name;
    if (dt) *dt = in->dtype;
    if (shape) *shape = in->shape;
    if (rank) *rank = in->rank;
    if (bytes) *bytes = in->bytes;
    if (n_buffers) *n_buffers = 2; /* two halves: the backend must join them */
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_InputBuffer(TRITONBACKEND_Input *in, const uint32_t k, const void **buf,
                                              uint64_t *size, TRITONSERVER_MemoryType *mt, int64_t *id) {
    uint64_t half = in->bytes / 2;
    *buf = (const char *)in->data + (k ? half : 0);
    *size = k ? in->bytes - half : half;
    *mt = TRITONSERVER_MEMORY_CPU;
    *id = 0;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ResponseNew(TRITONBACKEND_Response **resp, TRITONBACKEND_Request *r) {
    r->responses_created++;
    *resp = calloc(1, sizeof **resp);
    (*resp)->req = r;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ResponseDelete(TRITONBACKEND_Response *resp) {
    for (int i = 0; i < resp->n_outputs; i++) free(resp->outputs[i].buf);
    free(resp);
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response *resp, TRITONBACKEND_Output **out,
                                                 const char *name, const TRITONSERVER_DataType dt,
                                                 const int64_t *shape, const uint32_t rank) {
    TRITONBACKEND_Output *o = &resp->outputs[resp->n_outputs++];
    snprintf(o->name, sizeof o->name, "%s", name);
    o->dtype = dt;
    o->rank = rank;
    memcpy(o->shape, shape, sizeof(int64_t) * rank);
    *out = o;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output *o, void **buf, const uint64_t bytes,
                                               TRITONSERVER_MemoryType *mt, int64_t *id) {
    o->buf = malloc(bytes ? bytes : 1);
    o->bytes = bytes;
    *buf = o->buf;
    *mt = TRITONSERVER_MEMORY_CPU;
    *id = 0;
    return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ResponseSend(TRITONBACKEND_Response *resp, const uint32_t flags,
                                               TRITONSERVER_Error *err) {
    TRITONBACKEND_Request *r = resp->req;
    if (flags != TRITONSERVER_RESPONSE_COMPLETE_FINAL || r->released || r->responses_sent) abort();
    r->responses_sent++;
    if (err) {
        r->err_code = TRITONSERVER_ErrorCode(err);
        snprintf(r->err_msg, sizeof r->err_msg, "%s", TRITONSERVER_ErrorMessage(err));
    } else {
        r->ok = 1;
    }
    memcpy(r->got, resp->outputs, sizeof r->got); /* the buffers move to the request */
    r->n_got = resp->n_outputs;
    free(resp);
    return NULL;
}

/* ---------------------------------------------------------------- the test */
static int g_failed, g_passed;

static void check(int cond, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (cond) g_passed++;
    else {
        g_failed++;
        fprintf(stderr, "FAIL: ");
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n");
    }
    va_end(ap);
}

static int err_has(TRITONSERVER_Error *e, const char *needle) {
    int ok = e && strstr(TRITONSERVER_ErrorMessage(e), needle) != NULL;
    if (e && !ok) fprintf(stderr, "  (error was: %s)\n", TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
    return ok;
}

static TRITONBACKEND_Backend g_backend = {{(char *)"{\"cmdline\":{\"default-max-batch-size\":\"4\"}}"}};

static TRITONSERVER_Error *load(TRITONBACKEND_Model *m, const char *repo, const char *config, bool autocomplete) {
    memset(m, 0, sizeof *m);
    m->name = "tiny";
    m->version = 1;
    m->repo = repo;
    m->config = dup(config);
    m->autocomplete = autocomplete;
    m->backend = &g_backend;
    return TRITONBACKEND_ModelInitialize(m);
}

static void unload(TRITONBACKEND_Model *m) {
    if (m->state) TRITONSERVER_ErrorDelete(TRITONBACKEND_ModelFinalize(m));
    free(m->config);
    m->config = NULL;
}

static void run(TRITONBACKEND_ModelInstance *inst, TRITONBACKEND_Request **reqs, uint32_t n) {
    TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceExecute(inst, reqs, n);
    check(e == NULL, "execute returned an error");
    TRITONSERVER_ErrorDelete(e);
    for (uint32_t i = 0; i < n; i++)
        check(reqs[i]->released == 1 && reqs[i]->responses_sent == 1, "request %u: released %d times, %d responses",
              i, reqs[i]->released, reqs[i]->responses_sent);
}

/* float outputs equal within 1e-5 (the instance runs 1 thread, the reference netrun's default) */
static int same(const TRITONBACKEND_Output *o, const netrun_tensor_view *ref) {
    if (o->bytes != ref->nbytes || o->dtype != TRITONSERVER_TYPE_FP32) return 0;
    for (size_t i = 0; i < ref->nbytes / 4; i++)
        if (fabsf(((const float *)o->buf)[i] - ((const float *)ref->data)[i]) > 1e-5f) return 0;
    return 1;
}

static void free_request(TRITONBACKEND_Request *r) {
    for (int i = 0; i < r->n_got; i++) free(r->got[i].buf);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s REPO (holding tiny/1/model.onnx)\n", argv[0]);
        return 2;
    }
    char repo[4096];
    snprintf(repo, sizeof repo, "%s/tiny", argv[1]);

    /* ---- backend: API version and enum checks ---- */
    g_api_minor = 18;
    check(err_has(TRITONBACKEND_Initialize(&g_backend), "1.18"), "API 1.18 accepted");
    g_api_minor = 19;
    g_bad_enum_names = 1;
    check(err_has(TRITONBACKEND_Initialize(&g_backend), "data type"), "a server with other enum names accepted");
    g_bad_enum_names = 0;
    check(TRITONBACKEND_Initialize(&g_backend) == NULL, "Initialize failed");

    /* ---- models that must not load ---- */
    const char *io = "\"max_batch_size\":0,\"input\":[{\"name\":\"image\",\"data_type\":\"TYPE_FP32\",\"dims\":[1,3,32,32]}],"
                     "\"output\":[{\"name\":\"probabilities\",\"data_type\":\"TYPE_FP32\",\"dims\":[\"1\",\"10\"]}]";
    char cfg[8192];
    TRITONBACKEND_Model m;
    static const struct { const char *params; const char *needle; } BAD[] = {
        {"\"precision\":{\"string_value\":\"fp64\"}", "precision"},
        {"\"threads\":{\"string_value\":\"-3\"}", "threads"},
        {"\"workspace_limit\":{\"string_value\":\"12X\"}", "workspace_limit"},
        {"\"warmup\":{\"string_value\":\"some\"}", "warmup"},
        {"\"bogus\":{\"string_value\":\"1\"}", "unknown parameter 'bogus'"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        snprintf(cfg, sizeof cfg, "{%s,\"parameters\":{%s}}", io, BAD[i].params);
        check(err_has(load(&m, repo, cfg, false), BAD[i].needle), "bad parameter %s accepted", BAD[i].params);
        unload(&m);
    }
    snprintf(cfg, sizeof cfg, "{%s}", io);
    check(err_has(load(&m, "/nonexistent", cfg, false), "netrun cannot load"), "a missing model loaded");
    unload(&m);
    check(err_has(load(&m, repo, "{\"max_batch_size\":0,\"input\":[{\"name\":\"image\",\"data_type\":\"TYPE_INT64\","
                                 "\"dims\":[1,3,32,32]}],\"output\":[{\"name\":\"probabilities\",\"data_type\":"
                                 "\"TYPE_FP32\",\"dims\":[1,10]}]}", false), "TYPE_INT64 in config.pbtxt"),
          "a wrong input dtype loaded");
    unload(&m);
    check(err_has(load(&m, repo, "{\"max_batch_size\":0,\"input\":[{\"name\":\"image\",\"data_type\":\"TYPE_FP32\","
                                 "\"dims\":[1,3,32,31]}],\"output\":[{\"name\":\"probabilities\",\"data_type\":"
                                 "\"TYPE_FP32\",\"dims\":[1,10]}]}", false), "dim 3 is 31"),
          "a wrong input dim loaded");
    unload(&m);
    check(err_has(load(&m, repo, "{\"max_batch_size\":4,\"input\":[{\"name\":\"image\",\"data_type\":\"TYPE_FP32\","
                                 "\"dims\":[3,32,32]}],\"output\":[{\"name\":\"probabilities\",\"data_type\":"
                                 "\"TYPE_FP32\",\"dims\":[10]}]}", false), "fixed first dim"),
          "batching a model with a fixed batch loaded");
    unload(&m);
    check(err_has(load(&m, repo, "{\"max_batch_size\":0}", false), "states no inputs"),
          "a config without inputs loaded without auto-complete");
    unload(&m);

    /* ---- auto-complete: inputs and outputs from the model, no batching (the model's batch dim is fixed) ---- */
    check(load(&m, repo, "{\"max_batch_size\":0,\"parameters\":{\"threads\":{\"string_value\":\"1\"},"
                         "\"graph.optimize\":{\"string_value\":\"1\"}}}", true) == NULL, "auto-complete load failed");
    check(m.set_config_calls == 1 && strstr(m.config, "\"probabilities\"") && strstr(m.config, "TYPE_FP32") &&
          strstr(m.config, "\"max_batch_size\":0"), "auto-completed config: %s", m.config);

    /* ---- an instance, warmed up at load ---- */
    TRITONBACKEND_ModelInstance inst = {"tiny_0", TRITONSERVER_INSTANCEGROUPKIND_CPU, 0, &m, NULL};
    check(TRITONBACKEND_ModelInstanceInitialize(&inst) == NULL, "instance init failed");

    /* the reference: netrun directly */
    static float image[3 * 32 * 32];
    for (int i = 0; i < 3 * 32 * 32; i++) image[i] = (float)sin(i * 0.37) * 0.5f;
    int64_t dims[4] = {1, 3, 32, 32};
    netrun_model *nm = NULL;
    netrun_session *ns = NULL;
    netrun_tensor_view ref;
    snprintf(cfg, sizeof cfg, "%s/1/model.onnx", repo);
    check(netrun_model_load(cfg, &nm) == NETRUN_OK &&
          netrun_session_create(nm, NULL, &ns) == NETRUN_OK &&
          netrun_session_set_input(ns, "image", NETRUN_DTYPE_FLOAT, 4, dims, image, sizeof image) == NETRUN_OK &&
          netrun_session_run(ns) == NETRUN_OK && netrun_session_output(ns, 0, &ref) == NETRUN_OK,
          "direct netrun run failed: %s", netrun_last_error());

    TRITONBACKEND_Request good = {.inputs = {{"image", TRITONSERVER_TYPE_FP32, {1, 3, 32, 32}, 4, image, sizeof image}},
                                  .n_inputs = 1, .outputs = {"probabilities"}, .n_outputs = 1};
    TRITONBACKEND_Request bad_dtype = good, bad_shape = good, unknown = good, missing = good, none = good;
    bad_dtype.inputs[0].dtype = TRITONSERVER_TYPE_FP16;
    bad_shape.inputs[0].shape[3] = 16;
    bad_shape.inputs[0].bytes = sizeof image / 2;
    unknown.inputs[1] = unknown.inputs[0];
    unknown.inputs[1].name = "extra";
    unknown.n_inputs = 2;
    missing.n_inputs = 0;
    none.n_outputs = 0; /* asks for no output: gets an empty response */
    TRITONBACKEND_Request *batch[] = {&bad_dtype, &good, &bad_shape, &unknown, &missing, &none};
    run(&inst, batch, 6);
    check(good.ok && good.n_got == 1 && good.got[0].bytes == ref.nbytes && good.got[0].rank == 2 &&
          good.got[0].shape[1] == 10 && same(&good.got[0], &ref),
          "the good request's output differs from netrun's");
    check(!bad_dtype.ok && bad_dtype.err_code == TRITONSERVER_ERROR_INVALID_ARG && strstr(bad_dtype.err_msg, "FP16"),
          "wrong dtype: '%s'", bad_dtype.err_msg);
    check(!bad_shape.ok && strstr(bad_shape.err_msg, "dim 3 must be 32"), "wrong shape: '%s'", bad_shape.err_msg);
    check(!unknown.ok && strstr(unknown.err_msg, "unknown input 'extra'"), "unknown input: '%s'", unknown.err_msg);
    check(!missing.ok && strstr(missing.err_msg, "'image' is missing"), "missing input: '%s'", missing.err_msg);
    check(none.ok && none.n_got == 0, "no requested output: ok %d, %d outputs", none.ok, none.n_got);
    for (size_t i = 0; i < sizeof batch / sizeof batch[0]; i++) free_request(batch[i]);

    /* the same instance keeps serving after the bad requests */
    TRITONBACKEND_Request again = good;
    again.ok = again.released = again.responses_created = again.responses_sent = again.n_got = 0;
    TRITONBACKEND_Request *one[] = {&again};
    run(&inst, one, 1);
    check(again.ok && again.n_got == 1 && same(&again.got[0], &ref), "second run differs");
    free_request(&again);

    check(TRITONBACKEND_ModelInstanceFinalize(&inst) == NULL, "instance finalize failed");
    unload(&m);

    /* an unknown netrun backend fails the instance, with its name in the message */
    snprintf(cfg, sizeof cfg, "{%s,\"parameters\":{\"backends\":{\"string_value\":\"nosuch\"}}}", io);
    check(load(&m, repo, cfg, false) == NULL, "model with backends=nosuch failed before its instance");
    TRITONBACKEND_ModelInstance bad_inst = {"tiny_1", TRITONSERVER_INSTANCEGROUPKIND_CPU, 0, &m, NULL};
    check(err_has(TRITONBACKEND_ModelInstanceInitialize(&bad_inst), "nosuch"), "backends=nosuch accepted");
    unload(&m);

    check(TRITONBACKEND_Finalize(&g_backend) == NULL, "Finalize failed");
    netrun_session_destroy(ns);
    netrun_model_release(nm);
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
