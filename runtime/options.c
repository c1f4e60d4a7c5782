/* Session options: a plain settings object, copied into each session. Every value the runtime reads is
 * checked when it is set (a bad value is an error naming the option, never a silent default: a cap given as
 * "abc" must not turn into no cap); backends check their own keys when they create a context. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

netrun_status netrun_options_create(netrun_options **out) {
    if (!out) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_options_create: out is NULL");
    netrun_options *o = nr_calloc(1, sizeof *o);
    if (!o) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    o->policy = NETRUN_WORKSPACE_BALANCED;
    *out = o;
    return NETRUN_OK;
}

void nr_options_clear(netrun_options *o) {
    nr_free(o->backends);
    for (int i = 0; i < o->n_kv; i++) {
        nr_free(o->keys[i]);
        nr_free(o->values[i]);
    }
    nr_free(o->keys);
    nr_free(o->values);
    memset(o, 0, sizeof *o);
}

void netrun_options_destroy(netrun_options *o) {
    if (!o) return;
    nr_options_clear(o);
    nr_free(o);
}

netrun_status nr_options_copy(netrun_options *dst, const netrun_options *src) {
    memset(dst, 0, sizeof *dst);
    if (!src) {
        dst->policy = NETRUN_WORKSPACE_BALANCED;
        return NETRUN_OK;
    }
    *dst = *src;
    dst->backends = NULL;
    dst->keys = dst->values = NULL;
    dst->n_kv = 0;
    if (src->backends && !(dst->backends = nr_strdup(src->backends))) goto oom;
    for (int i = 0; i < src->n_kv; i++)
        if (netrun_options_set(dst, src->keys[i], src->values[i]) != NETRUN_OK) goto oom;
    return NETRUN_OK;
oom:
    nr_options_clear(dst);
    return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying options");
}

#define CHECK_OPTS(o) \
    if (!(o)) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: options is NULL", __func__)

netrun_status netrun_options_set_backends(netrun_options *o, const char *list) {
    CHECK_OPTS(o);
    char *copy = NULL;
    if (list && *list && !(copy = nr_strdup(list))) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    nr_free(o->backends);
    o->backends = copy;
    return NETRUN_OK;
}

netrun_status netrun_options_set_precision(netrun_options *o, netrun_precision p) {
    CHECK_OPTS(o);
    if (p != NETRUN_PRECISION_FP32 && p != NETRUN_PRECISION_TF32 && p != NETRUN_PRECISION_FP16)
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "unknown precision %d", (int)p);
    o->precision = p;
    return NETRUN_OK;
}

netrun_status netrun_options_set_threads(netrun_options *o, int threads) {
    CHECK_OPTS(o);
    if (threads < 0 || threads > 1024)
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "threads must be 0 (all cores) to 1024, not %d", threads);
    o->threads = threads;
    return NETRUN_OK;
}

netrun_status netrun_options_set_device(netrun_options *o, int device) {
    CHECK_OPTS(o);
    if (device < 0) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "device index must be >= 0, not %d", device);
    o->device = device;
    return NETRUN_OK;
}

netrun_status netrun_options_set_workspace(netrun_options *o, netrun_workspace_policy policy, size_t cap) {
    CHECK_OPTS(o);
    if (policy != NETRUN_WORKSPACE_BALANCED && policy != NETRUN_WORKSPACE_FASTEST &&
        policy != NETRUN_WORKSPACE_MIN_MEMORY)
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "unknown workspace policy %d", (int)policy);
    o->policy = policy;
    o->workspace_limit = cap;
    return NETRUN_OK;
}

netrun_status netrun_options_set_strict(netrun_options *o, int strict) {
    CHECK_OPTS(o);
    o->strict = strict != 0;
    return NETRUN_OK;
}

netrun_status netrun_options_set_allow_fallback(netrun_options *o, int allow) {
    CHECK_OPTS(o);
    o->allow_fallback = allow != 0;
    return NETRUN_OK;
}

netrun_status netrun_options_set_device_memory_budget(netrun_options *o, size_t bytes) {
    CHECK_OPTS(o);
    o->device_memory_budget = bytes;
    return NETRUN_OK;
}

int nr_parse_bytes(const char *text, size_t *out) {
    if (!text || !isdigit((unsigned char)text[0])) return 0;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno == ERANGE) return 0;
    unsigned long long mul = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': mul = 1ull << 10; end++; break;
    case 'M': mul = 1ull << 20; end++; break;
    case 'G': mul = 1ull << 30; end++; break;
    case 'T': mul = 1ull << 40; end++; break;
    default: break;
    }
    if (mul != 1 && (end[0] == 'i' || end[0] == 'I') && (end[1] == 'B' || end[1] == 'b')) end += 2;
    else if (*end == 'B' || *end == 'b') end++;
    if (*end || v > SIZE_MAX / mul) return 0;
    *out = (size_t)(v * mul);
    return 1;
}

/* limits.host_memory: "auto" (the machine's default), "none", or a size. */
static netrun_status set_host_memory_text(netrun_options *o, const char *value) {
    size_t bytes = 0;
    if (!strcmp(value, "auto")) o->host_memory_budget = 0;
    else if (!strcmp(value, "none")) o->host_memory_budget = SIZE_MAX;
    else if (nr_parse_bytes(value, &bytes) && bytes > 0) o->host_memory_budget = bytes;
    else
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "option limits.host_memory: '%s' is not auto, none or a size "
                        "in bytes (e.g. 512M, 4G)", value);
    return NETRUN_OK;
}

netrun_status netrun_options_set_host_memory_budget(netrun_options *o, size_t bytes) {
    CHECK_OPTS(o);
    o->host_memory_budget = bytes;
    return NETRUN_OK;
}

netrun_status netrun_options_set(netrun_options *o, const char *key, const char *value) {
    CHECK_OPTS(o);
    if (!key || !*key) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_options_set: empty key");
    if (!value) value = "";
    if (!strcmp(key, "limits.host_memory")) return set_host_memory_text(o, value);
    netrun_status vst = nr_option_check_value(key, value);
    if (vst != NETRUN_OK) return vst;
    for (int i = 0; i < o->n_kv; i++)
        if (!strcmp(o->keys[i], key)) {
            char *v = nr_strdup(value ? value : "");
            if (!v) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
            nr_free(o->values[i]);
            o->values[i] = v;
            return NETRUN_OK;
        }
    char **k = nr_realloc(o->keys, sizeof(char *) * (size_t)(o->n_kv + 1));
    if (!k) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    o->keys = k;
    char **v = nr_realloc(o->values, sizeof(char *) * (size_t)(o->n_kv + 1));
    if (!v) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    o->values = v;
    o->keys[o->n_kv] = nr_strdup(key);
    o->values[o->n_kv] = nr_strdup(value ? value : "");
    if (!o->keys[o->n_kv] || !o->values[o->n_kv]) {
        nr_free(o->keys[o->n_kv]);
        nr_free(o->values[o->n_kv]);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    }
    o->n_kv++;
    return NETRUN_OK;
}

const char *nr_options_get(const void *opaque, const char *key) {
    const netrun_options *o = opaque;
    for (int i = 0; o && i < o->n_kv; i++)
        if (!strcmp(o->keys[i], key)) return o->values[i];
    return NULL;
}
