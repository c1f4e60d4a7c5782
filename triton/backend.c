/*
 * backend.c — life cycle of the netrun backend inside Triton: API version check, model configuration (parsed,
 * auto-completed from the ONNX model, checked against it), parameters -> netrun options, instances and their
 * sessions. Requests are in execute.c.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "netrun_triton.h"

#define NT_DEFAULT_SESSION_CACHE 4

TRITONSERVER_Error *nt_error(TRITONSERVER_Error_Code code, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return TRITONSERVER_ErrorNew(code, msg);
}

void nt_log(TRITONSERVER_LogLevel level, int line, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    TRITONSERVER_Error *e = TRITONSERVER_LogMessage(level, __FILE__, line, msg);
    if (e) TRITONSERVER_ErrorDelete(e);
}

uint64_t nt_now_ns(void) {
    struct timespec ts; /* CLOCK_MONOTONIC is what std::chrono::steady_clock reads on Linux, as Triton asks */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- data types: config.pbtxt name, Triton enum, netrun (ONNX) dtype, Triton's own name for the enum ---- */
static const struct {
    const char *cfg;
    TRITONSERVER_DataType t;
    netrun_dtype n;
    const char *tname;
} DTYPES[] = {
    {"TYPE_BOOL", TRITONSERVER_TYPE_BOOL, NETRUN_DTYPE_BOOL, "BOOL"},
    {"TYPE_UINT8", TRITONSERVER_TYPE_UINT8, NETRUN_DTYPE_UINT8, "UINT8"},
    {"TYPE_UINT16", TRITONSERVER_TYPE_UINT16, NETRUN_DTYPE_UINT16, "UINT16"},
    {"TYPE_UINT32", TRITONSERVER_TYPE_UINT32, NETRUN_DTYPE_UINT32, "UINT32"},
    {"TYPE_UINT64", TRITONSERVER_TYPE_UINT64, NETRUN_DTYPE_UINT64, "UINT64"},
    {"TYPE_INT8", TRITONSERVER_TYPE_INT8, NETRUN_DTYPE_INT8, "INT8"},
    {"TYPE_INT16", TRITONSERVER_TYPE_INT16, NETRUN_DTYPE_INT16, "INT16"},
    {"TYPE_INT32", TRITONSERVER_TYPE_INT32, NETRUN_DTYPE_INT32, "INT32"},
    {"TYPE_INT64", TRITONSERVER_TYPE_INT64, NETRUN_DTYPE_INT64, "INT64"},
    {"TYPE_FP16", TRITONSERVER_TYPE_FP16, NETRUN_DTYPE_FLOAT16, "FP16"},
    {"TYPE_FP32", TRITONSERVER_TYPE_FP32, NETRUN_DTYPE_FLOAT, "FP32"},
    {"TYPE_FP64", TRITONSERVER_TYPE_FP64, NETRUN_DTYPE_DOUBLE, "FP64"},
    {"TYPE_BF16", TRITONSERVER_TYPE_BF16, NETRUN_DTYPE_BFLOAT16, "BF16"},
};
#define N_DTYPES (int)(sizeof DTYPES / sizeof DTYPES[0])

TRITONSERVER_DataType nt_triton_dtype(netrun_dtype d) {
    for (int i = 0; i < N_DTYPES; i++)
        if (DTYPES[i].n == d) return DTYPES[i].t;
    return TRITONSERVER_TYPE_INVALID;
}

static const char *cfg_dtype_name(netrun_dtype d) {
    for (int i = 0; i < N_DTYPES; i++)
        if (DTYPES[i].n == d) return DTYPES[i].cfg;
    return NULL;
}

/* ---- backend ---- */

/* The enums above are this file's copy of Triton's; compare them with the server's names for them, so that a
 * server whose enums moved refuses the backend instead of reading tensors with the wrong type. */
static TRITONSERVER_Error *check_enums(void) {
    for (int i = 0; i < N_DTYPES; i++) {
        const char *s = TRITONSERVER_DataTypeString(DTYPES[i].t);
        if (!s || strcmp(s, DTYPES[i].tname))
            return nt_error(TRITONSERVER_ERROR_UNSUPPORTED,
                            "netrun backend: the server names data type %d '%s', this backend expects '%s': "
                            "built for another Triton API", (int)DTYPES[i].t, s ? s : "(null)", DTYPES[i].tname);
    }
    static const struct { int v; const char *name; } MEM[] = {
        {TRITONSERVER_MEMORY_CPU, "CPU"}, {TRITONSERVER_MEMORY_CPU_PINNED, "CPU_PINNED"},
        {TRITONSERVER_MEMORY_GPU, "GPU"}};
    for (size_t i = 0; i < sizeof MEM / sizeof MEM[0]; i++) {
        const char *s = TRITONSERVER_MemoryTypeString((TRITONSERVER_MemoryType)MEM[i].v);
        if (!s || strcmp(s, MEM[i].name))
            return nt_error(TRITONSERVER_ERROR_UNSUPPORTED, "netrun backend: memory type %d is '%s' here, not '%s'",
                            MEM[i].v, s ? s : "(null)", MEM[i].name);
    }
    static const struct { int v; const char *name; } KIND[] = {
        {TRITONSERVER_INSTANCEGROUPKIND_AUTO, "AUTO"}, {TRITONSERVER_INSTANCEGROUPKIND_CPU, "CPU"},
        {TRITONSERVER_INSTANCEGROUPKIND_GPU, "GPU"}, {TRITONSERVER_INSTANCEGROUPKIND_MODEL, "MODEL"}};
    for (size_t i = 0; i < sizeof KIND / sizeof KIND[0]; i++) {
        const char *s = TRITONSERVER_InstanceGroupKindString((TRITONSERVER_InstanceGroupKind)KIND[i].v);
        if (!s || strcmp(s, KIND[i].name))
            return nt_error(TRITONSERVER_ERROR_UNSUPPORTED, "netrun backend: instance kind %d is '%s' here, not '%s'",
                            KIND[i].v, s ? s : "(null)", KIND[i].name);
    }
    return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
    uint32_t major = 0, minor = 0;
    TRITONSERVER_Error *e = TRITONBACKEND_ApiVersion(&major, &minor);
    if (e) return e;
    if (major != TRITONBACKEND_API_VERSION_MAJOR || minor < TRITONBACKEND_API_VERSION_MINOR)
        return nt_error(TRITONSERVER_ERROR_UNSUPPORTED,
                        "netrun backend: the server's TRITONBACKEND API is %u.%u; this backend needs %d.%d or a "
                        "later %d.x (tested with Triton 2.51)", major, minor, TRITONBACKEND_API_VERSION_MAJOR,
                        TRITONBACKEND_API_VERSION_MINOR, TRITONBACKEND_API_VERSION_MAJOR);
    if ((e = check_enums())) return e;
    const char *name = "netrun";
    TRITONBACKEND_BackendName(backend, &name);
    int n = netrun_backend_count();
    char list[512] = "";
    for (int i = 0; i < n; i++) {
        netrun_backend_info bi;
        if (netrun_backend_get_info(i, &bi) != NETRUN_OK) continue;
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s%s", l ? ", " : "", bi.name, bi.available ? "" : " (unavailable)");
    }
    nt_log(TRITONSERVER_LOG_INFO, __LINE__, "backend '%s': netrun %s, Triton backend API %u.%u; netrun backends: %s",
           name, netrun_version(), major, minor, n ? list : "none found");
    return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_Finalize(TRITONBACKEND_Backend *backend) {
    (void)backend;
    return NULL;
}

/* ---- model configuration ---- */

static TRITONSERVER_Error *read_config(TRITONBACKEND_Model *m, json_t **out) {
    TRITONSERVER_Message *msg = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelConfig(m, 1, &msg);
    if (e) return e;
    const char *base = NULL;
    size_t size = 0;
    e = TRITONSERVER_MessageSerializeToJson(msg, &base, &size);
    if (!e) {
        json_error_t je;
        *out = json_loadb(base, size, 0, &je);
        if (!*out) e = nt_error(TRITONSERVER_ERROR_INTERNAL, "netrun backend: model configuration: %s", je.text);
    }
    TRITONSERVER_Error *e2 = TRITONSERVER_MessageDelete(msg);
    if (e2) TRITONSERVER_ErrorDelete(e2);
    return e;
}

/* Triton writes int64 fields as numbers; protobuf's JSON writes them as strings: take both. */
static int json_int(const json_t *v, int64_t *out) {
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 1;
    }
    if (json_is_string(v)) {
        char *end;
        errno = 0;
        long long x = strtoll(json_string_value(v), &end, 10);
        if (errno || end == json_string_value(v) || *end) return 0;
        *out = x;
        return 1;
    }
    return 0;
}

static TRITONSERVER_Error *parse_dims(const char *model, const char *what, const char *tname, const json_t *arr,
                                      int *rank, int64_t *dims) {
    if (!json_is_array(arr) || json_array_size(arr) > NETRUN_MAX_RANK - 1)
        return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': %s '%s': dims must be a list of at most %d "
                        "numbers", model, what, tname, NETRUN_MAX_RANK - 1);
    *rank = (int)json_array_size(arr);
    for (int d = 0; d < *rank; d++)
        if (!json_int(json_array_get(arr, (size_t)d), &dims[d]) || dims[d] < -1)
            return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': %s '%s': dim %d is not a size or -1", model,
                            what, tname, d);
    return NULL;
}

static TRITONSERVER_Error *parse_tensor(const char *model, const char *what, const json_t *j, nt_tensor *t) {
    const char *name = json_string_value(json_object_get(j, "name"));
    if (!name || !*name) return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': an %s has no name", model, what);
    if (!(t->name = strdup(name))) return nt_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    const char *dt = json_string_value(json_object_get(j, "data_type"));
    t->dtype = NETRUN_DTYPE_UNDEFINED;
    for (int i = 0; dt && i < N_DTYPES; i++)
        if (!strcmp(dt, DTYPES[i].cfg)) {
            t->dtype = DTYPES[i].n;
            t->ttype = DTYPES[i].t;
        }
    if (t->dtype == NETRUN_DTYPE_UNDEFINED)
        return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': %s '%s': data_type %s is not supported by the "
                        "netrun backend (numeric types only, no TYPE_STRING)", model, what, name, dt ? dt : "(none)");
    TRITONSERVER_Error *e = parse_dims(model, what, name, json_object_get(j, "dims"), &t->rank, t->dims);
    if (e) return e;
    t->reshape_rank = -1;
    const json_t *rs = json_object_get(json_object_get(j, "reshape"), "shape");
    if (rs && json_array_size(rs) > 0) {
        if ((e = parse_dims(model, what, name, rs, &t->reshape_rank, t->reshape))) return e;
    }
    return NULL;
}

static void free_tensors(nt_tensor *t, int n) {
    for (int i = 0; t && i < n; i++) free(t[i].name);
    free(t);
}

/* ---- parameters ---- */

static int parse_size(const char *s, size_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-') return 0;
    unsigned long long mul = 1;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K': mul = 1ull << 10; break;
        case 'M': mul = 1ull << 20; break;
        case 'G': mul = 1ull << 30; break;
        default: return 0;
        }
        end++;
        if (!strcmp(end, "iB") || !strcmp(end, "B") || !strcmp(end, "ib") || !strcmp(end, "b")) end += strlen(end);
        if (*end) return 0;
    }
    if (v > SIZE_MAX / mul) return 0;
    *out = (size_t)(v * mul);
    return 1;
}

static int parse_int(const char *s, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return 0;
    *out = (int)v;
    return 1;
}

static int parse_bool(const char *s, int *out) {
    if (!strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "on") || !strcasecmp(s, "yes")) *out = 1;
    else if (!strcmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "off") || !strcasecmp(s, "no")) *out = 0;
    else return 0;
    return 1;
}

static void free_params(nt_params *p) {
    free(p->backends);
    for (int i = 0; i < p->n_set; i++) {
        free(p->set_keys[i]);
        free(p->set_values[i]);
    }
    free(p->set_keys);
    free(p->set_values);
    memset(p, 0, sizeof *p);
}

#define BAD_PARAM(key, val, want)                                                                                   \
    nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': parameter '%s' = '%s': %s", model, key, val, want)

/* config.pbtxt's parameters {key: "K" value: {string_value: "V"}}: every value checked here, so a bad one stops
 * the model loading with a message in its status. */
static TRITONSERVER_Error *parse_params(const char *model, const json_t *params, nt_params *p) {
    p->precision = p->threads = p->ws_policy = -1;
    p->session_cache = 0; /* 0: not set */
    p->warmup = NT_WARMUP_ONE;
    const char *key;
    const json_t *jv;
    json_object_foreach((json_t *)params, key, jv) {
        const char *val = json_string_value(json_object_get(jv, "string_value"));
        if (!val)
            return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': parameter '%s' has no string_value", model,
                            key);
        if (!strcmp(key, "backends")) {
            free(p->backends);
            if (!(p->backends = strdup(val))) return nt_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
        } else if (!strcmp(key, "precision")) {
            if (!strcmp(val, "fp32")) p->precision = NETRUN_PRECISION_FP32;
            else if (!strcmp(val, "tf32")) p->precision = NETRUN_PRECISION_TF32;
            else if (!strcmp(val, "fp16")) p->precision = NETRUN_PRECISION_FP16;
            else return BAD_PARAM(key, val, "expected fp32, tf32 or fp16");
        } else if (!strcmp(key, "threads")) {
            if (!parse_int(val, 0, 1024, &p->threads)) return BAD_PARAM(key, val, "expected 0 (all cores) to 1024");
        } else if (!strcmp(key, "workspace_policy")) {
            if (!strcmp(val, "balanced")) p->ws_policy = NETRUN_WORKSPACE_BALANCED;
            else if (!strcmp(val, "fastest")) p->ws_policy = NETRUN_WORKSPACE_FASTEST;
            else if (!strcmp(val, "min-memory") || !strcmp(val, "min_memory")) p->ws_policy = NETRUN_WORKSPACE_MIN_MEMORY;
            else return BAD_PARAM(key, val, "expected balanced, fastest or min-memory");
        } else if (!strcmp(key, "workspace_limit")) {
            if (!parse_size(val, &p->ws_cap)) return BAD_PARAM(key, val, "expected bytes, or a number with K/M/G");
        } else if (!strcmp(key, "memory_budget")) {
            if (!parse_size(val, &p->memory_budget))
                return BAD_PARAM(key, val, "expected bytes, or a number with K/M/G");
        } else if (!strcmp(key, "strict")) {
            if (!parse_bool(val, &p->strict)) return BAD_PARAM(key, val, "expected 0 or 1");
        } else if (!strcmp(key, "warmup")) {
            if (!strcmp(val, "0") || !strcmp(val, "none")) p->warmup = NT_WARMUP_NONE;
            else if (!strcmp(val, "1")) p->warmup = NT_WARMUP_ONE;
            else if (!strcmp(val, "all")) p->warmup = NT_WARMUP_ALL;
            else return BAD_PARAM(key, val, "expected 0, 1 or all");
        } else if (!strcmp(key, "session_cache")) {
            if (!parse_int(val, 1, 64, &p->session_cache)) return BAD_PARAM(key, val, "expected 1 to 64");
        } else if (strchr(key, '.')) { /* a netrun setting, as `netrun --set KEY=VALUE` */
            char **k = realloc(p->set_keys, sizeof(char *) * (size_t)(p->n_set + 1));
            if (k) p->set_keys = k;
            char **v = realloc(p->set_values, sizeof(char *) * (size_t)(p->n_set + 1));
            if (v) p->set_values = v;
            if (!k || !v) return nt_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
            p->set_keys[p->n_set] = strdup(key);
            p->set_values[p->n_set] = strdup(val);
            p->n_set++;
            if (!p->set_keys[p->n_set - 1] || !p->set_values[p->n_set - 1])
                return nt_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
        } else {
            return nt_error(TRITONSERVER_ERROR_INVALID_ARG,
                            "model '%s': unknown parameter '%s' (known: backends, precision, threads, "
                            "workspace_policy, workspace_limit, memory_budget, strict, session_cache, warmup, and netrun "
                            "settings with a dot such as cpu.nchwc or graph.optimize)", model, key);
        }
    }
    return NULL;
}

/* netrun options of one instance: the model's parameters plus the instance's kind and device. */
static TRITONSERVER_Error *make_options(const nt_model *m, TRITONSERVER_InstanceGroupKind kind, int device,
                                        netrun_options **out) {
    const nt_params *p = &m->params;
    netrun_options *o = NULL;
    if (netrun_options_create(&o) != NETRUN_OK)
        return nt_error(TRITONSERVER_ERROR_INTERNAL, "netrun: %s", netrun_last_error());
    const char *backends = p->backends;
    if (!backends) backends = kind == TRITONSERVER_INSTANCEGROUPKIND_GPU ? "cuda,cpu"
                              : kind == TRITONSERVER_INSTANCEGROUPKIND_CPU ? "cpu" : NULL;
    int ok = netrun_options_set_backends(o, backends) == NETRUN_OK &&
             netrun_options_set_device(o, kind == TRITONSERVER_INSTANCEGROUPKIND_GPU ? device : 0) == NETRUN_OK &&
             (p->precision < 0 || netrun_options_set_precision(o, (netrun_precision)p->precision) == NETRUN_OK) &&
             (p->threads < 0 || netrun_options_set_threads(o, p->threads) == NETRUN_OK) &&
             netrun_options_set_workspace(o, p->ws_policy < 0 ? NETRUN_WORKSPACE_BALANCED
                                                                : (netrun_workspace_policy)p->ws_policy,
                                          p->ws_cap) == NETRUN_OK &&
             netrun_options_set_device_memory_budget(o, p->memory_budget) == NETRUN_OK &&
             netrun_options_set_strict(o, p->strict) == NETRUN_OK;
    for (int i = 0; ok && i < p->n_set; i++) ok = netrun_options_set(o, p->set_keys[i], p->set_values[i]) == NETRUN_OK;
    if (!ok) {
        TRITONSERVER_Error *e = nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': netrun options: %s", m->name,
                                         netrun_last_error());
        netrun_options_destroy(o);
        return e;
    }
    *out = o;
    return NULL;
}

/* ---- auto-complete and checks against the ONNX model ---- */

static int dim0_free(const netrun_tensor_info *ti) {
    return ti->rank >= 1 && (ti->dims[0] < 0 || (ti->dim_names && ti->dim_names[0]));
}

static json_t *tensor_json(const netrun_tensor_info *ti, int skip_batch) {
    json_t *dims = json_array();
    for (int d = skip_batch; d < ti->rank; d++) json_array_append_new(dims, json_integer(ti->dims[d] < 0 ? -1 : ti->dims[d]));
    return json_pack("{s:s, s:s, s:o}", "name", ti->name, "data_type", cfg_dtype_name(ti->dtype), "dims", dims);
}

/* Fill what config.pbtxt left out (inputs, outputs, max_batch_size) from the ONNX model, as Triton's own
 * backends do when auto-complete is on. Returns 1 in *changed when the configuration must be sent back. */
static TRITONSERVER_Error *auto_complete(nt_model *m, json_t *cfg, int default_max_batch, int *changed) {
    netrun_model *net = m->net;
    json_t *ins = json_object_get(cfg, "input"), *outs = json_object_get(cfg, "output");
    int have_in = json_array_size(ins) > 0, have_out = json_array_size(outs) > 0;
    int64_t mb = 0;
    json_int(json_object_get(cfg, "max_batch_size"), &mb);
    *changed = 0;
    if (have_in && have_out) return NULL;
    int ni = netrun_model_input_count(net), no = netrun_model_output_count(net);
    netrun_tensor_info ti;
    for (int i = 0; i < ni + no; i++) { /* every tensor the config will state needs a dtype Triton knows */
        (i < ni ? netrun_model_input_info(net, i, &ti) : netrun_model_output_info(net, i - ni, &ti));
        if (!cfg_dtype_name(ti.dtype) || ti.rank < 0)
            return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': cannot auto-complete: %s '%s' is %s%s; state "
                            "the inputs and outputs in config.pbtxt", m->name, i < ni ? "input" : "output", ti.name,
                            netrun_dtype_name(ti.dtype), ti.rank < 0 ? " of unknown rank" : "");
    }
    if (mb == 0 && !have_in && !have_out && default_max_batch > 0) {
        /* batching when every input and output has a free first dim */
        int batchable = 1;
        for (int i = 0; i < ni + no && batchable; i++) {
            (i < ni ? netrun_model_input_info(net, i, &ti) : netrun_model_output_info(net, i - ni, &ti));
            batchable = dim0_free(&ti);
        }
        if (batchable) {
            mb = default_max_batch;
            json_object_set_new(cfg, "max_batch_size", json_integer(mb));
            if (!json_object_get(cfg, "dynamic_batching") && !json_object_get(cfg, "sequence_batching") &&
                !json_object_get(cfg, "ensemble_scheduling"))
                json_object_set_new(cfg, "dynamic_batching", json_object());
        }
    }
    if (!have_in) {
        json_t *arr = json_array();
        for (int i = 0; i < ni; i++) {
            netrun_model_input_info(net, i, &ti);
            json_array_append_new(arr, tensor_json(&ti, mb > 0));
        }
        json_object_set_new(cfg, "input", arr);
    }
    if (!have_out) {
        json_t *arr = json_array();
        for (int i = 0; i < no; i++) {
            netrun_model_output_info(net, i, &ti);
            json_array_append_new(arr, tensor_json(&ti, mb > 0));
        }
        json_object_set_new(cfg, "output", arr);
    }
    *changed = 1;
    return NULL;
}

/* The configuration's tensor t against the model's tensor ti: same dtype, compatible dims. */
static TRITONSERVER_Error *check_tensor(const nt_model *m, const char *what, const nt_tensor *t,
                                        const netrun_tensor_info *ti) {
    if (ti->dtype != NETRUN_DTYPE_UNDEFINED && ti->dtype != t->dtype)
        return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': %s '%s' is %s in config.pbtxt but %s (%s) in the "
                        "model", m->name, what, t->name, cfg_dtype_name(t->dtype) ? cfg_dtype_name(t->dtype) : "?",
                        cfg_dtype_name(ti->dtype) ? cfg_dtype_name(ti->dtype) : "unsupported",
                        netrun_dtype_name(ti->dtype));
    if (ti->rank < 0) return NULL;
    int rank = t->reshape_rank >= 0 ? t->reshape_rank : t->rank;
    const int64_t *dims = t->reshape_rank >= 0 ? t->reshape : t->dims;
    int b = m->max_batch > 0;
    if (ti->rank != rank + b)
        return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': %s '%s' has rank %d in the model; config.pbtxt "
                        "gives %d dims%s", m->name, what, t->name, ti->rank, rank,
                        b ? " plus the batch dim (max_batch_size > 0)" : "");
    if (b && !dim0_free(ti))
        return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': max_batch_size is %d but %s '%s' has a fixed first "
                        "dim %" PRId64 " in the model: set max_batch_size: 0", m->name, m->max_batch, what, t->name,
                        ti->dims[0]);
    for (int d = 0; d < rank; d++) {
        int64_t md = ti->dims[d + b];
        if (md >= 0 && !(ti->dim_names && ti->dim_names[d + b]) && dims[d] >= 0 && dims[d] != md)
            return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': %s '%s': dim %d is %" PRId64 " in config.pbtxt, "
                            "%" PRId64 " in the model", m->name, what, t->name, d, dims[d], md);
    }
    return NULL;
}

static TRITONSERVER_Error *check_against_model(nt_model *m) {
    netrun_tensor_info ti;
    int ni = netrun_model_input_count(m->net), no = netrun_model_output_count(m->net);
    for (int i = 0; i < m->n_inputs; i++) {
        int found = 0;
        for (int k = 0; k < ni && !found; k++) {
            netrun_model_input_info(m->net, k, &ti);
            if (!strcmp(ti.name, m->inputs[i].name)) {
                found = 1;
                TRITONSERVER_Error *e = check_tensor(m, "input", &m->inputs[i], &ti);
                if (e) return e;
            }
        }
        if (!found) {
            char names[512] = "";
            for (int k = 0; k < ni; k++) {
                netrun_model_input_info(m->net, k, &ti);
                size_t l = strlen(names);
                snprintf(names + l, sizeof names - l, "%s'%s'", k ? ", " : "", ti.name);
            }
            return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': config.pbtxt input '%s' is not an input of "
                            "the model (its inputs: %s)", m->name, m->inputs[i].name, names);
        }
    }
    for (int k = 0; k < ni; k++) {
        netrun_model_input_info(m->net, k, &ti);
        int found = 0;
        for (int i = 0; i < m->n_inputs; i++) found |= !strcmp(ti.name, m->inputs[i].name);
        if (!found)
            return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': the model's input '%s' is missing from "
                            "config.pbtxt (netrun needs every input)", m->name, ti.name);
    }
    for (int i = 0; i < m->n_outputs; i++) {
        int found = 0;
        for (int k = 0; k < no && !found; k++) {
            netrun_model_output_info(m->net, k, &ti);
            if (!strcmp(ti.name, m->outputs[i].name)) {
                found = 1;
                TRITONSERVER_Error *e = check_tensor(m, "output", &m->outputs[i], &ti);
                if (e) return e;
            }
        }
        if (!found)
            return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': config.pbtxt output '%s' is not an output of "
                            "the model", m->name, m->outputs[i].name);
    }
    return NULL;
}

static void model_free(nt_model *m) {
    if (!m) return;
    free(m->name);
    free(m->path);
    netrun_model_release(m->net);
    free_tensors(m->inputs, m->n_inputs);
    free_tensors(m->outputs, m->n_outputs);
    free_params(&m->params);
    free(m);
}

static TRITONSERVER_Error *backend_max_batch(TRITONBACKEND_Model *tm, int *out) {
    *out = 4; /* Triton's default-max-batch-size */
    TRITONBACKEND_Backend *b = NULL;
    TRITONSERVER_Message *msg = NULL;
    if (TRITONBACKEND_ModelBackend(tm, &b) || !b) return NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_BackendConfig(b, &msg);
    if (e) {
        TRITONSERVER_ErrorDelete(e);
        return NULL;
    }
    const char *base;
    size_t size;
    if ((e = TRITONSERVER_MessageSerializeToJson(msg, &base, &size))) { /* owned by Triton: not deleted */
        TRITONSERVER_ErrorDelete(e);
        return NULL;
    }
    json_t *j = json_loadb(base, size, 0, NULL);
    const char *v = json_string_value(json_object_get(json_object_get(j, "cmdline"), "default-max-batch-size"));
    if (v && !parse_int(v, 0, INT32_MAX, out)) {
        json_decref(j);
        return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "netrun backend: default-max-batch-size '%s' is not a number", v);
    }
    json_decref(j);
    return NULL;
}

static TRITONSERVER_Error *model_init(TRITONBACKEND_Model *tm, nt_model *m) {
    const char *name = NULL, *repo = NULL;
    TRITONBACKEND_ArtifactType at;
    TRITONSERVER_Error *e;
    if ((e = TRITONBACKEND_ModelName(tm, &name)) || (e = TRITONBACKEND_ModelVersion(tm, &m->version)) ||
        (e = TRITONBACKEND_ModelRepository(tm, &at, &repo)))
        return e;
    if (!(m->name = strdup(name))) return nt_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    if (at != TRITONBACKEND_ARTIFACT_FILESYSTEM)
        return nt_error(TRITONSERVER_ERROR_UNSUPPORTED, "model '%s': only models on a file system are supported", name);
    json_t *cfg = NULL;
    if ((e = read_config(tm, &cfg))) return e;
    const char *file = json_string_value(json_object_get(cfg, "default_model_filename"));
    if (!file || !*file) file = "model.onnx";
    size_t plen = strlen(repo) + strlen(file) + 32;
    if (!(m->path = malloc(plen))) {
        json_decref(cfg);
        return nt_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    }
    snprintf(m->path, plen, "%s/%" PRIu64 "/%s", repo, m->version, file);
    if ((e = parse_params(name, json_object_get(cfg, "parameters"), &m->params))) goto done;
    if (netrun_model_load(m->path, &m->net) != NETRUN_OK) {
        e = nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': netrun cannot load %s: %s", name, m->path,
                     netrun_last_error());
        goto done;
    }
    bool autocomplete = false;
    if ((e = TRITONBACKEND_ModelAutoCompleteConfig(tm, &autocomplete))) goto done;
    if (autocomplete) {
        int default_mb, changed = 0;
        if ((e = backend_max_batch(tm, &default_mb))) goto done;
        if ((e = auto_complete(m, cfg, default_mb, &changed))) goto done;
        if (changed) {
            char *text = json_dumps(cfg, JSON_COMPACT);
            TRITONSERVER_Message *msg = NULL;
            if (!text) {
                e = nt_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
                goto done;
            }
            e = TRITONSERVER_MessageNewFromSerializedJson(&msg, text, strlen(text));
            free(text);
            if (!e) {
                e = TRITONBACKEND_ModelSetConfig(tm, 1, msg);
                TRITONSERVER_Error *e2 = TRITONSERVER_MessageDelete(msg);
                if (e2) TRITONSERVER_ErrorDelete(e2);
            }
            if (e) goto done;
            json_decref(cfg); /* Triton may have filled more fields: read it back */
            cfg = NULL;
            if ((e = read_config(tm, &cfg))) goto done;
        }
    }
    int64_t mb = 0;
    json_int(json_object_get(cfg, "max_batch_size"), &mb);
    m->max_batch = (int)mb;
    json_t *ins = json_object_get(cfg, "input"), *outs = json_object_get(cfg, "output");
    m->n_inputs = (int)json_array_size(ins);
    m->n_outputs = (int)json_array_size(outs);
    if (!m->n_inputs || !m->n_outputs) {
        e = nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': config.pbtxt states no %s (and auto-complete is off)",
                     name, m->n_inputs ? "outputs" : "inputs");
        goto done;
    }
    m->inputs = calloc((size_t)m->n_inputs, sizeof(nt_tensor));
    m->outputs = calloc((size_t)m->n_outputs, sizeof(nt_tensor));
    if (!m->inputs || !m->outputs) {
        e = nt_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
        goto done;
    }
    for (int i = 0; i < m->n_inputs && !e; i++) e = parse_tensor(name, "input", json_array_get(ins, (size_t)i), &m->inputs[i]);
    for (int i = 0; i < m->n_outputs && !e; i++)
        e = parse_tensor(name, "output", json_array_get(outs, (size_t)i), &m->outputs[i]);
    if (!e) e = check_against_model(m);
    if (!e)
        nt_log(TRITONSERVER_LOG_INFO, __LINE__, "model '%s' version %" PRIu64 ": %s, %d inputs, %d outputs, "
               "max_batch_size %d", name, m->version, m->path, m->n_inputs, m->n_outputs, m->max_batch);
done:
    json_decref(cfg);
    return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *tm) {
    nt_model *m = calloc(1, sizeof *m);
    if (!m) return nt_error(TRITONSERVER_ERROR_INTERNAL, "netrun backend: out of memory");
    TRITONSERVER_Error *e = model_init(tm, m);
    if (!e) e = TRITONBACKEND_ModelSetState(tm, m);
    if (e) model_free(m);
    return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *tm) {
    void *state = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelState(tm, &state);
    if (e) return e;
    model_free(state);
    return NULL;
}

/* ---- instances and their sessions ---- */

static void slot_clear(nt_session_slot *sl) {
    netrun_session_destroy(sl->s);
    free(sl->key);
    memset(sl, 0, sizeof *sl);
}

TRITONSERVER_Error *nt_instance_session(nt_instance *in, const int64_t *key, int key_len, netrun_session **out) {
    in->tick++;
    int oldest = 0;
    for (int i = 0; i < in->n_slots; i++) {
        nt_session_slot *sl = &in->slots[i];
        if (sl->s && sl->key_len == key_len && !memcmp(sl->key, key, sizeof(int64_t) * (size_t)key_len)) {
            sl->last_use = in->tick;
            *out = sl->s;
            return NULL;
        }
        if (!sl->s || (in->slots[oldest].s && sl->last_use < in->slots[oldest].last_use)) oldest = i;
    }
    nt_session_slot *sl = &in->slots[oldest];
    if (sl->s)
        nt_log(TRITONSERVER_LOG_VERBOSE, __LINE__, "instance '%s': session cache full (%d), dropping the oldest shape",
               in->name, in->n_slots);
    slot_clear(sl);
    if (!(sl->key = malloc(sizeof(int64_t) * (size_t)(key_len ? key_len : 1))))
        return nt_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    if (netrun_session_create(in->model->net, in->opts, &sl->s) != NETRUN_OK) {
        TRITONSERVER_Error *e = nt_error(TRITONSERVER_ERROR_INTERNAL, "netrun: cannot create a session: %s",
                                         netrun_last_error());
        slot_clear(sl);
        return e;
    }
    memcpy(sl->key, key, sizeof(int64_t) * (size_t)key_len);
    sl->key_len = key_len;
    sl->last_use = in->tick;
    *out = sl->s;
    return NULL;
}

void nt_instance_drop_session(nt_instance *in, netrun_session *s) {
    for (int i = 0; i < in->n_slots; i++)
        if (in->slots[i].s == s) slot_clear(&in->slots[i]);
}

static void instance_free(nt_instance *in) {
    if (!in) return;
    for (int i = 0; in->slots && i < in->n_slots; i++) slot_clear(&in->slots[i]);
    free(in->slots);
    for (int i = 0; in->stage && i < in->n_stage; i++) free(in->stage[i]);
    free(in->stage);
    free(in->stage_cap);
    netrun_options_destroy(in->opts);
    free(in->name);
    free(in);
}

/* When every input's shape is fixed by the configuration, prepare sessions now (batch 1; with warmup "all" every
batch size up to max_batch_size): backend errors (an unknown backend, a bad setting, a device that fails) then stop
the model loading, and requests do not pay for plans (netrun plans per shape: ResNet-50 takes 0.1-0.3 s on a
CPU). Inputs are zeros. */
static TRITONSERVER_Error *warm_up_batch(nt_instance *in, int64_t batch) {
    const nt_model *m = in->model;
    int b = m->max_batch > 0;
    int64_t key[64 * (NETRUN_MAX_RANK + 1)];
    int key_len = 0;
    if (m->n_inputs > 64) return NULL;
    for (int i = 0; i < m->n_inputs; i++) {
        const nt_tensor *t = &m->inputs[i];
        int rank = t->reshape_rank >= 0 ? t->reshape_rank : t->rank;
        const int64_t *dims = t->reshape_rank >= 0 ? t->reshape : t->dims;
        key[key_len++] = rank + b;
        if (b) key[key_len++] = batch;
        for (int d = 0; d < rank; d++) {
            if (dims[d] < 0) return NULL; /* a free dim: nothing to prepare before the first request */
            key[key_len++] = dims[d];
        }
    }
    netrun_session *s = NULL;
    TRITONSERVER_Error *e = nt_instance_session(in, key, key_len, &s);
    if (e) return e;
    int k = 0;
    for (int i = 0; i < m->n_inputs; i++) {
        const nt_tensor *t = &m->inputs[i];
        int rank = (int)key[k];
        const int64_t *dims = &key[k + 1];
        k += 1 + rank;
        size_t bytes = netrun_dtype_size(t->dtype);
        for (int d = 0; d < rank; d++) bytes *= (size_t)dims[d];
        void *zeros = calloc(1, bytes ? bytes : 1);
        if (!zeros) return nt_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
        netrun_status st = netrun_session_set_input(s, t->name, t->dtype, rank, dims, zeros, bytes);
        free(zeros);
        if (st != NETRUN_OK) {
            e = nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': %s", m->name, netrun_session_error(s));
            nt_instance_drop_session(in, s);
            return e;
        }
    }
    if (netrun_session_prepare(s) != NETRUN_OK) {
        e = nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': netrun cannot prepare the model: %s", m->name,
                     netrun_session_error(s));
        nt_instance_drop_session(in, s);
        return e;
    }
    netrun_session_stats st;
    if (netrun_session_get_stats(s, &st) == NETRUN_OK)
        nt_log(TRITONSERVER_LOG_INFO, __LINE__, "instance '%s': batch %" PRId64 " prepared in %.1f ms, weights "
               "%.1f MiB, activations %.1f MiB", in->name, batch, st.prepare_ms, (double)st.weight_bytes / 1048576.0,
               (double)st.arena_bytes / 1048576.0);
    return NULL;
}

static TRITONSERVER_Error *warm_up(nt_instance *in) {
    int last = in->model->params.warmup == NT_WARMUP_ALL && in->model->max_batch > 0 ? in->model->max_batch
               : in->model->params.warmup == NT_WARMUP_NONE ? 0 : 1;
    for (int b = 1; b <= last; b++) {
        TRITONSERVER_Error *e = warm_up_batch(in, b);
        if (e) return e;
    }
    return NULL;
}

static TRITONSERVER_Error *instance_init(TRITONBACKEND_ModelInstance *ti, nt_instance *in) {
    const char *name = NULL;
    TRITONBACKEND_Model *tm = NULL;
    void *state = NULL;
    int32_t device = 0;
    TRITONSERVER_Error *e;
    if ((e = TRITONBACKEND_ModelInstanceName(ti, &name)) || (e = TRITONBACKEND_ModelInstanceKind(ti, &in->kind)) ||
        (e = TRITONBACKEND_ModelInstanceDeviceId(ti, &device)) || (e = TRITONBACKEND_ModelInstanceModel(ti, &tm)) ||
        (e = TRITONBACKEND_ModelState(tm, &state)))
        return e;
    in->model = state;
    in->device = device;
    if (!(in->name = strdup(name))) return nt_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    if ((e = make_options(in->model, in->kind, device, &in->opts))) return e;
    in->n_slots = in->model->params.session_cache;
    if (!in->n_slots) /* by default room for every batch size the batcher may form, at least a few shapes */
        in->n_slots = in->model->max_batch > NT_DEFAULT_SESSION_CACHE ? in->model->max_batch : NT_DEFAULT_SESSION_CACHE;
    if (in->n_slots > 64) in->n_slots = 64;
    in->slots = calloc((size_t)in->n_slots, sizeof(nt_session_slot));
    in->n_stage = in->model->n_inputs;
    in->stage = calloc((size_t)in->n_stage, sizeof(void *));
    in->stage_cap = calloc((size_t)in->model->n_inputs, sizeof(size_t));
    if (!in->slots || !in->stage || !in->stage_cap) return nt_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    nt_log(TRITONSERVER_LOG_INFO, __LINE__, "instance '%s': %s, device %d, netrun backends '%s'", name,
           TRITONSERVER_InstanceGroupKindString(in->kind), (int)device,
           in->model->params.backends ? in->model->params.backends
           : in->kind == TRITONSERVER_INSTANCEGROUPKIND_GPU ? "cuda,cpu"
           : in->kind == TRITONSERVER_INSTANCEGROUPKIND_CPU ? "cpu" : "(netrun's default)");
    return warm_up(in);
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance *ti) {
    nt_instance *in = calloc(1, sizeof *in);
    if (!in) return nt_error(TRITONSERVER_ERROR_INTERNAL, "netrun backend: out of memory");
    TRITONSERVER_Error *e = instance_init(ti, in);
    if (!e) e = TRITONBACKEND_ModelInstanceSetState(ti, in);
    if (e) instance_free(in);
    return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance *ti) {
    void *state = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(ti, &state);
    if (e) return e;
    instance_free(state);
    return NULL;
}
