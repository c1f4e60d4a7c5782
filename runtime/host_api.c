/* The service table handed to backend plugins: logging, error recording and host memory, so that plugins
 * never link libnetrun itself. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend_registry.h"
#include "layer.h"
#include "status.h"

/* NETRUN_LOG_LEVEL, read once: the environment is not expected to change while plugins log. */
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static netrun_log_level log_threshold = NETRUN_LOG_WARN;

static void read_log_level(void) {
    const char *v = getenv("NETRUN_LOG_LEVEL");
    if (!v || !*v) return;
    static const struct { const char *name; netrun_log_level level; } names[] = {
        {"error", NETRUN_LOG_ERROR}, {"warn", NETRUN_LOG_WARN}, {"warning", NETRUN_LOG_WARN},
        {"info", NETRUN_LOG_INFO},   {"debug", NETRUN_LOG_DEBUG},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcasecmp(v, names[i].name)) {
            log_threshold = names[i].level;
            return;
        }
    /* An unknown value keeps the default; say so once rather than silently ignoring the setting. */
    fprintf(stderr, "netrun: warning: NETRUN_LOG_LEVEL=%s is not one of error|warn|info|debug; using warn\n", v);
}

static const char *level_name(netrun_log_level level) {
    switch (level) {
    case NETRUN_LOG_ERROR: return "error";
    case NETRUN_LOG_WARN: return "warning";
    case NETRUN_LOG_INFO: return "info";
    case NETRUN_LOG_DEBUG: return "debug";
    }
    return "log";
}

/* netrun_set_log_callback: the embedder's sink, or NULL for stderr. Read under a lock so that a callback is never
 * called with another's user pointer while it is being replaced. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static netrun_log_fn log_fn;
static void *log_user;

NETRUN_API void netrun_set_log_callback(netrun_log_fn fn, void *user, netrun_log_level max_level) {
    pthread_once(&log_once, read_log_level);
    pthread_mutex_lock(&log_mu);
    log_fn = fn;
    log_user = user;
    if ((int)max_level >= (int)NETRUN_LOG_ERROR && (int)max_level <= (int)NETRUN_LOG_DEBUG) log_threshold = max_level;
    pthread_mutex_unlock(&log_mu);
}

static void host_log(netrun_log_level level, const char *backend, const char *fmt, ...) {
    pthread_once(&log_once, read_log_level);
    pthread_mutex_lock(&log_mu);
    netrun_log_fn fn = log_fn;
    void *user = log_user;
    netrun_log_level threshold = log_threshold;
    pthread_mutex_unlock(&log_mu);
    if ((int)level > (int)threshold || !fmt) return;
    /* Format the whole line first so that concurrent threads do not interleave pieces of lines. */
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t n = strlen(line);
    while (n > 0 && line[n - 1] == '\n') line[--n] = 0;
    if (fn) {
        fn(user, level, backend && *backend ? backend : "?", line);
        return;
    }
    fprintf(stderr, "netrun[%s] %s: %s\n", backend && *backend ? backend : "?", level_name(level), line);
}

static netrun_status host_error(netrun_status code, const char *fmt, ...) {
    /* nr_error has no va_list form: format here, then hand it over as one string. */
    char buf[NR_ERROR_MAX];
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
    } else {
        snprintf(buf, sizeof buf, "backend failed (status %d) without a message", (int)code);
    }
    /* A plugin that reports NETRUN_OK as an error would make the caller think it succeeded. */
    if (code == NETRUN_OK) code = NETRUN_ERR_BACKEND;
    return nr_error(code, "%s", buf);
}

static void *host_alloc(size_t bytes, size_t alignment) {
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    if (alignment & (alignment - 1)) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "host alloc: alignment %zu is not a power of two", alignment);
        return NULL;
    }
    return nr_aligned_alloc(bytes, alignment);
}

static void host_free(void *ptr) {
    if (ptr) nr_aligned_free(ptr);
}

static const netrun_host_api host_api = {
    .abi_version = NETRUN_ABI_VERSION,
    .struct_size = sizeof(netrun_host_api),
    .log = host_log,
    .error = host_error,
    .alloc = host_alloc,
    .free = host_free,
    /* ABI 1.9: a plugin op's parse and infer get what the built-in layers get (netrun_op_ctx is nr_layer_ctx) */
    .op_opset = nr_opset,
    .op_node_name = nr_node_name,
    .op_attr_has = nr_attr_has,
    .op_attr_int = nr_attr_int,
    .op_attr_float = nr_attr_float,
    .op_attr_string = nr_attr_string,
    .op_attr_ints = nr_attr_ints,
    .op_attr_floats = nr_attr_floats,
    .op_input_count = nr_in_count,
    .op_input = nr_in,
    .op_input_value = nr_in_value,
    .op_output_count = nr_out_count,
    .op_output_present = nr_out_present,
    .op_output_set = nr_out_set,
    .op_error = nr_layer_error,
};

const netrun_host_api *nr_host_api(void) { return &host_api; }
