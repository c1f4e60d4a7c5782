/* Option keys: every netrun_options_set key of a session is checked against what the runtime and the session's
 * backends read, so that a typo (cpu.winogard) or a key nothing reads (foo.bar) is an error that names it, and a
 * setting that cannot change this run (a backend the session does not use, --precision on a CPU-only run) is said.
 *
 * Keys are "GROUP.NAME". The runtime's own groups are listed here, with what each key takes: their values are
 * checked when they are set (netrun_options_set), so a bad value never silently removes a limit. Any other group
 * must be the name of a backend plugin found on this machine, whose own table (netrun_backend_api.options, ABI
 * 1.8) lists its keys, checked when a session is created; their values are the backend's to check. A plugin
 * without the table (older than ABI 1.8) has its keys accepted unchecked. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preprocess.h"
#include "session.h"

/* The keys the runtime reads itself (prepare.c, place.c, optimize.c, micro_batch.c, control_flow.c, execute.c). A new
 * runtime setting must be added here, or sessions that set it are refused. */
static const netrun_option_spec runtime_options[] = {
    {"graph.optimize", NETRUN_OPTION_BOOL, NULL, "graph passes: BatchNorm folding, Conv fusions (default 1)"},
    {"graph.fuse_transformer", NETRUN_OPTION_BOOL, NULL, "graph passes: attention, decomposed LayerNormalization, RMSNorm and Gelu subgraphs run as one Attention / LayerNormalization / RMSNormalization / Gelu node (default 1)"},
    {"graph.fuse_matmul_bias", NETRUN_OPTION_BOOL, NULL, "graph passes: MatMul + bias Add (+ Relu / tanh Gelu, or + a residual Add) run as one MatMulBias node where the backend takes it (default 1)"},
    {"graph.merge_siblings", NETRUN_OPTION_BOOL, NULL, "Convs reading one value with one window run as one Conv and a Split (default 1)"},
    {"graph.qdq_fuse", NETRUN_OPTION_BOOL, NULL, "QDQ groups around Conv / MatMul run as QLinearConv / QLinearMatMul (default 1)"},
    {"graph.qdq_residual", NETRUN_OPTION_BOOL, NULL, "a QDQ residual Add joins the QLinearConv that writes one of its inputs (default 1)"},
    {"graph.int8_nhwc", NETRUN_OPTION_BOOL, NULL, "int8 values between fused CPU QLinearConvs stay NHWC (default 1)"},
    {"memory.inplace", NETRUN_OPTION_BOOL, NULL, "in-place outputs and views (default 1)"},
    {"memory.bound_in_place", NETRUN_OPTION_BOOL, NULL,
     "outputs bound to a caller's device buffer are written there by their node (default 1; 0: copied at the end)"},
    {"memory.stream_weights", NETRUN_OPTION_ENUM, "auto|0|1", "stream device weights from host memory (default auto)"},
    {"memory.stream_min", NETRUN_OPTION_SIZE, NULL, "smallest constant that streams, in bytes"},
    {"memory.stream_overlap", NETRUN_OPTION_BOOL, NULL, "prefetch streamed weights during the previous node (default 1)"},
    {"run.micro_batch", NETRUN_OPTION_STRING, "auto|0|N", "auto (default), 0 (off) or images per run"},
    {"limits.max_loop_iterations", NETRUN_OPTION_INT, NULL, "cap on the iterations of a run's Loops"},
    {"limits.host_memory", NETRUN_OPTION_STRING, "auto|none|SIZE", "host memory budget: auto (default), none or a size"},
    {"profile.max_events", NETRUN_OPTION_INT, NULL, "profile events held before the oldest runs' go (default 100000)"},
    {"placement.transfer_aware", NETRUN_OPTION_BOOL, NULL, "move nodes off the greedy placement where that saves copies (default 1)"},
    {"debug.keep_values", NETRUN_OPTION_BOOL, NULL, "keep every intermediate value readable (default 0)"},
    {"preprocess.input", NETRUN_OPTION_STRING, "NAME", "take this float [N,3,H,W] model input as uint8 [N,H,W,C] frames, converted in the graph (ImagePreprocess) by the backend that runs the model"},
    {"preprocess.format", NETRUN_OPTION_ENUM, "rgb|bgr|rgba|bgra", "the frames' channel order (default rgb); a 4th channel is ignored"},
    {"preprocess.order", NETRUN_OPTION_ENUM, "rgb|bgr", "the model's channel order (default rgb): R and B are swapped when it is not the frames'"},
    {"preprocess.resize", NETRUN_OPTION_ENUM, "stretch|letterbox|crop|none", "frame to model size: stretch (default), letterbox (keep the aspect, pad), crop (cover, centre crop: blobFromImage crop=true), none"},
    {"preprocess.interpolation", NETRUN_OPTION_ENUM, "linear|nearest", "cv2.resize INTER_LINEAR (default) or INTER_NEAREST"},
    {"preprocess.size", NETRUN_OPTION_STRING, "WxH", "the model input's size when its height and width are not fixed"},
    {"preprocess.mean", NETRUN_OPTION_STRING, "R,G,B", "subtracted from the pixel values (0-255), in the model's channel order (default 0)"},
    {"preprocess.scale", NETRUN_OPTION_DOUBLE, NULL, "multiplies (pixel - mean) (default 1; 0.00392157 for 1/255)"},
    {"preprocess.std", NETRUN_OPTION_STRING, "R,G,B", "divides (pixel - mean) * scale per channel (default 1)"},
    {"preprocess.pad", NETRUN_OPTION_DOUBLE, NULL, "letterbox fill, as a pixel value before mean and scale (default 0; YOLO uses 114)"},
    {NULL, 0, NULL, NULL},
};

/* The group (NAME) of a key ("NAME.key") into buf; 0 when the key has no '.'. */
static int key_group(const char *key, char *buf, size_t size) {
    const char *dot = strchr(key, '.');
    if (!dot || dot == key || !dot[1]) return 0;
    size_t n = (size_t)(dot - key);
    if (n >= size) n = size - 1;
    memcpy(buf, key, n);
    buf[n] = 0;
    return 1;
}

static int listed(const netrun_option_spec *t, const char *key) {
    for (; t && t->key; t++)
        if (!strcmp(t->key, key)) return 1;
    return 0;
}

/* Optimal string alignment distance (edits, adjacent swaps counted as one), capped: enough for typos. */
static int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < c) c = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < c) c = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < c)
                c = d[i - 2][j - 2] + 1;
            d[i][j] = c;
        }
    return d[la][lb];
}

typedef struct suggestion {
    const char *best;
    int dist;
} suggestion;

static void consider(suggestion *sg, const char *key, const char *cand) {
    int d = edit_distance(key, cand);
    if (d < sg->dist) {
        sg->dist = d;
        sg->best = cand;
    }
}

static void consider_table(suggestion *sg, const char *key, const netrun_option_spec *t) {
    for (; t && t->key; t++) consider(sg, key, t->key);
}

/* The runtime group of a key ("limits" of "limits.foo"): 1 when the runtime owns its keys. */
static int runtime_group(const char *group) {
    for (const netrun_option_spec *t = runtime_options; t->key; t++) {
        char g[64];
        if (key_group(t->key, g, sizeof g) && !strcmp(g, group)) return 1;
    }
    return 0;
}

static int positive(const char *v, long long max) {
    if (!v || !isdigit((unsigned char)v[0])) return 0;
    errno = 0;
    char *end = NULL;
    long long n = strtoll(v, &end, 10);
    return !errno && !*end && n > 0 && n <= max;
}

/* Whether v is one of the '|'-separated words of list. */
static int enum_has(const char *list, const char *v) {
    size_t n = strlen(v);
    for (const char *p = list; p && *p;) {
        const char *bar = strchr(p, '|');
        size_t l = bar ? (size_t)(bar - p) : strlen(p);
        if (l == n && !strncmp(p, v, n)) return 1;
        p = bar ? bar + 1 : NULL;
    }
    return 0;
}

static void list_keys(const netrun_option_spec *t, const char *group, char *buf, size_t size);

/* A value against what its key's row says it takes. The runtime's integers are counts (positive); a backend's are
 * any decimal integer here, their ranges being the backend's to check. */
static netrun_status spec_check_value(const netrun_option_spec *t, const char *value, int runtime) {
    size_t bytes;
    int ok = 1;
    const char *says = "";
    char *end = NULL;
    switch (t->kind) {
    case NETRUN_OPTION_BOOL: ok = !strcmp(value, "0") || !strcmp(value, "1"), says = "0 or 1"; break;
    case NETRUN_OPTION_INT:
        if (runtime) ok = positive(value, INT64_MAX), says = "a positive integer";
        else errno = 0, (void)strtoll(value, &end, 10), ok = *value && !*end && !errno, says = "an integer";
        break;
    case NETRUN_OPTION_SIZE: ok = nr_parse_bytes(value, &bytes), says = "a number of bytes (e.g. 65536 or 64K)"; break;
    case NETRUN_OPTION_ENUM: ok = enum_has(t->values, value), says = t->values; break;
    case NETRUN_OPTION_DOUBLE: (void)strtod(value, &end), ok = *value && !*end, says = "a number"; break;
    default: /* free text; the runtime's two texts of several forms */
        if (runtime && !strcmp(t->key, "run.micro_batch"))
            ok = !strcmp(value, "auto") || !strcmp(value, "0") || positive(value, INT32_MAX),
            says = "auto, 0 (off) or a number of images per run";
        else if (runtime && !strncmp(t->key, "preprocess.", 11))
            ok = nr_preprocess_value_ok(t->key, value, &says);
        else if (runtime && !strcmp(t->key, "limits.host_memory"))
            ok = !strcmp(value, "auto") || !strcmp(value, "none") || (nr_parse_bytes(value, &bytes) && bytes > 0),
            says = "auto, none or a size in bytes (e.g. 512M, 4G)";
    }
    if (ok) return NETRUN_OK;
    return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "option %s: '%s' is not %s", t->key, value, says);
}

netrun_status nr_option_check_value(const char *key, const char *value) {
    char group[64];
    const char *dot = strrchr(key, '.');
    if (dot && !strcmp(dot, ".graphs")) { /* <backend>.graphs: device graphs on or off (execute.c reads it) */
        if (!strcmp(value, "0") || !strcmp(value, "1")) return NETRUN_OK;
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "option %s: '%s' is not 0 or 1", key, value);
    }
    if (!key_group(key, group, sizeof group) || !runtime_group(group)) return NETRUN_OK; /* a backend's key */
    for (const netrun_option_spec *t = runtime_options; t->key; t++)
        if (!strcmp(t->key, key)) return spec_check_value(t, value, 1);
    /* a runtime group's key that is not listed: a typo must not leave a limit unset */
    suggestion sg = {NULL, 99};
    consider_table(&sg, key, runtime_options);
    char keys[512];
    list_keys(runtime_options, group, keys, sizeof keys);
    if (sg.best && sg.dist <= (strlen(key) <= 8 ? 2 : 3))
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "unknown option '%s'; did you mean '%s'? (%s.* keys: %s)", key,
                        sg.best, group, keys);
    return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "unknown option '%s' (%s.* keys: %s)", key, group, keys);
}

/* The slot of the session whose backend is named group, or -1. */
static int slot_named(const netrun_session *s, const char *group) {
    for (int i = 0; i < s->n_slots; i++)
        if (!strcmp(s->slots[i].be->name, group)) return i;
    return -1;
}

static const netrun_option_spec *declared_options(const netrun_backend_api *api) {
    return NR_API_HAS(api, options) ? api->options : NULL;
}

/* "; did you mean 'cpu.winograd'?" when a known key is close enough to be the one meant. */
static void did_you_mean(const netrun_session *s, const char *key, char *buf, size_t size) {
    suggestion sg = {NULL, 99};
    char graphs[NR_MAX_SLOTS][96];
    consider_table(&sg, key, runtime_options);
    for (int i = 0; i < s->n_slots; i++) {
        consider_table(&sg, key, declared_options(s->slots[i].api));
        if (NR_API_HAS(s->slots[i].api, graph_capture_begin)) {
            snprintf(graphs[i], sizeof graphs[i], "%s.graphs", s->slots[i].be->name);
            consider(&sg, key, graphs[i]);
        }
    }
    int allowed = strlen(key) <= 8 ? 2 : 3;
    buf[0] = 0;
    if (sg.best && sg.dist <= allowed) snprintf(buf, size, "; did you mean '%s'?", sg.best);
}

/* The keys a group may take, listed for the error message. */
static void list_keys(const netrun_option_spec *t, const char *group, char *buf, size_t size) {
    size_t used = 0, gl = strlen(group);
    buf[0] = 0;
    for (; t && t->key && used + 1 < size; t++) {
        if (strncmp(t->key, group, gl) || t->key[gl] != '.') continue;
        int w = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", t->key);
        if (w < 0) break;
        used += (size_t)w;
    }
    if (used >= size) memcpy(buf + size - 4, "...", 4);
}

netrun_status nr_options_check_keys(netrun_session *s) {
    netrun_options *o = &s->opts;
    if (o->keys_checked) return NETRUN_OK; /* a control-flow sub-session: its parent checked the same keys */
    for (int i = 0; i < o->n_kv; i++) {
        const char *key = o->keys[i];
        char group[64], hint[160], keys[512];
        if (!key_group(key, group, sizeof group))
            return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "option '%s': keys are GROUP.NAME (e.g. memory.inplace, or "
                            "BACKEND.KEY for a backend's own settings)", key);
        if (runtime_group(group)) {
            if (listed(runtime_options, key)) continue;
            did_you_mean(s, key, hint, sizeof hint);
            list_keys(runtime_options, group, keys, sizeof keys);
            return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "unknown option '%s'%s (%s.* keys: %s)", key, hint, group, keys);
        }
        int k = slot_named(s, group);
        if (k >= 0) {
            const netrun_backend_api *api = s->slots[k].api;
            const netrun_option_spec *t = declared_options(api);
            if (!t) continue; /* a plugin older than ABI 1.8: its keys are its business */
            const netrun_option_spec *row = NULL;
            for (const netrun_option_spec *r = t; r->key && !row; r++)
                if (!strcmp(r->key, key)) row = r;
            if (row) {
                netrun_status vst = spec_check_value(row, o->values[i], 0);
                if (vst != NETRUN_OK) return vst;
                continue;
            }
            if (!strcmp(key + strlen(group), ".graphs") && NR_API_HAS(api, graph_capture_begin)) continue;
            did_you_mean(s, key, hint, sizeof hint);
            list_keys(t, group, keys, sizeof keys);
            return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "unknown option '%s'%s (backend '%s' reads %s)", key, hint,
                            group, keys[0] ? keys : "no settings");
        }
        if (nr_backends_name_found(group)) {
            /* A backend of this machine that the session does not use: the key may be right, but does nothing. */
            nr_host_api()->log(NETRUN_LOG_WARN, "runtime",
                               "option '%s' has no effect: backend '%s' is not used by this session", key, group);
            continue;
        }
        did_you_mean(s, key, hint, sizeof hint);
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT,
                        "unknown option '%s'%s: '%s' is neither a runtime group (graph, memory, run, limits, debug) "
                        "nor a backend found on this machine (netrun --backends lists them)", key, hint, group);
    }
    o->keys_checked = 1;
    return NETRUN_OK;
}

/* After placement: a session-wide setting that no backend running a node honours says so (once per session). */
void nr_options_note_unused(netrun_session *s) {
    if (s->root || s->noted_unused) return;
    s->noted_unused = 1;
    uint32_t used = 0;
    char backends[256] = "";
    for (int i = 0; i < s->n_slots; i++) {
        const nr_slot *sl = &s->slots[i];
        if (sl->n_nodes <= 0) continue;
        uint32_t u = NR_API_FITS(sl->api, uses) ? sl->api->uses : 0;
        used |= (u & NETRUN_USES_DECLARED) ? u : ~0u;
        size_t l = strlen(backends);
        snprintf(backends + l, sizeof backends - l, "%s%s", l ? ", " : "", sl->be->name);
    }
    if (!backends[0]) return; /* everything folded: nothing ran anywhere */
    const netrun_options *o = &s->opts;
    struct {
        int set;
        uint32_t bit;
        const char *what;
    } checks[] = {
        {o->precision != NETRUN_PRECISION_FP32, NETRUN_USES_PRECISION,
         o->precision == NETRUN_PRECISION_FP16 ? "precision fp16" : "precision tf32"},
        {o->policy != NETRUN_WORKSPACE_BALANCED || o->workspace_limit, NETRUN_USES_WORKSPACE,
         "workspace policy and limit"},
        {o->device != 0, NETRUN_USES_DEVICE, "device index"},
        {o->device_memory_budget != 0, NETRUN_USES_DEVICE_MEMORY, "device memory budget"},
    };
    for (size_t c = 0; c < sizeof checks / sizeof checks[0]; c++)
        if (checks[c].set && !(used & checks[c].bit))
            nr_host_api()->log(NETRUN_LOG_WARN, "runtime", "the %s has no effect on this run: the backends that "
                               "run its nodes (%s) do not use it", checks[c].what, backends);
}
