/* One node test, run inside the forked child: load, bind input_K.pb to graph input K, prepare, run, compare
 * output_K.pb with output K, for every test_data_set_N folder. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "conformance.h"

void conf_list_add(char *buf, size_t size, const char *s)
{
    size_t len = strlen(s), at = 0;
    const char *p = buf;
    while (*p) { /* already listed? */
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == len && strncmp(p, s, n) == 0)
            return;
        p += n + (comma ? 1 : 0);
    }
    at = strlen(buf);
    if (at + (at ? 1 : 0) + len + 1 > size)
        return; /* full: the list is informational */
    if (at)
        buf[at++] = ',';
    memcpy(buf + at, s, len + 1);
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Number of consecutive files dir/prefix_0.pb, prefix_1.pb, ... */
static int count_pb(const char *dir, const char *prefix)
{
    char path[4096 + 64]; /* dir (< 4096) + file name */
    int n = 0;
    for (;;) {
        snprintf(path, sizeof(path), "%s/%s_%d.pb", dir, prefix, n);
        if (!file_exists(path))
            return n;
        n++;
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The op a NETRUN_ERR_UNSUPPORTED message names: "op 'X'" (unknown op) or "node 'n' (X)". */
static void missing_op_from(const char *msg, char *out, size_t size)
{
    const char *p = strstr(msg, "op '"), *end;
    if (p) {
        p += 4;
        end = strchr(p, '\'');
    } else if ((p = strstr(msg, "node '")) && (p = strstr(p + 6, "' (")) != NULL) {
        p += 3;
        end = strchr(p, ')');
    } else {
        return;
    }
    if (!end)
        return;
    size_t n = (size_t)(end - p);
    if (n >= size)
        n = size - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

/* The test folder of this child: messages that start with it are shortened to the part inside it. */
static const char *test_dir = "";

static const char *relative(const char *msg)
{
    size_t n = strlen(test_dir);
    if (msg && n && strncmp(msg, test_dir, n) == 0 && msg[n] == '/')
        return msg + n + 1;
    return msg;
}

static void fail_with(conf_result *r, netrun_status st, const char *what, const char *msg)
{
    msg = relative(msg);
    r->status = st == NETRUN_ERR_UNSUPPORTED ? CONF_UNSUPPORTED : CONF_ERROR;
    snprintf(r->detail, sizeof(r->detail), "%s: %s", what, msg && *msg ? msg : netrun_status_string(st));
    if (st == NETRUN_ERR_UNSUPPORTED && msg)
        missing_op_from(msg, r->missing_op, sizeof(r->missing_op));
}

/* A .pb file could not be read (sequence, optional, map or string data): an error, whatever the status. */
static void read_error(conf_result *r, const char *ds_name, const char *kind, int k)
{
    const char *msg = netrun_last_error(), *rel = relative(msg);
    r->status = CONF_ERROR;
    if (rel != msg) /* the message names the file already */
        snprintf(r->detail, sizeof(r->detail), "read %s", rel);
    else
        snprintf(r->detail, sizeof(r->detail), "read %s/%s_%d.pb: %s", ds_name, kind, k, msg);
}

/* The backend counted as native: the first of --backend, else the first available GPU, else the first
 * available backend (the library's default order). */
static void first_backend(const conf_opts *o, char *out, size_t size)
{
    if (o->backends && *o->backends) {
        const char *p = o->backends;
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, ", ");
        if (n >= size)
            n = size - 1;
        memcpy(out, p, n);
        out[n] = '\0';
        return;
    }
    snprintf(out, size, "cpu");
    int count = netrun_backend_count(), chosen = 0;
    for (int i = 0; i < count; i++) {
        netrun_backend_info bi;
        if (netrun_backend_get_info(i, &bi) != NETRUN_OK || !bi.available)
            continue;
        if (bi.is_gpu || !chosen) {
            snprintf(out, size, "%s", bi.name);
            chosen = 1;
            if (bi.is_gpu)
                return;
        }
    }
}

/* Fill backends/ops and whether every node ran natively. */
static int placement(netrun_session *s, conf_result *r)
{
    int native = 1, n = netrun_session_node_count(s);
    for (int i = 0; i < n; i++) {
        netrun_node_info ni;
        if (netrun_session_node_info(s, i, &ni) != NETRUN_OK)
            continue;
        if (ni.backend) {
            conf_list_add(r->backends, sizeof(r->backends), ni.backend);
            if (strcmp(ni.backend, "const") != 0 && strcmp(ni.backend, "runtime") != 0 && strcmp(ni.backend, r->first_backend) != 0)
                native = 0;
        }
        if (ni.op_type)
            conf_list_add(r->ops, sizeof(r->ops), ni.op_type);
    }
    return native;
}

static int run_data_set(netrun_model *m, netrun_session *s, const char *ds, const char *ds_name, conf_result *r,
                        int *placed, int *native)
{
    char path[4096 + 64], what[512]; /* dir (< 4096) + file name */
    int n_in = count_pb(ds, "input"), n_out = count_pb(ds, "output");
    int model_in = netrun_model_input_count(m);
    if (n_in != model_in) {
        r->status = CONF_ERROR;
        snprintf(r->detail, sizeof(r->detail), "%s: %d input files but the model has %d inputs", ds_name, n_in,
                 model_in);
        return -1;
    }
    for (int k = 0; k < n_in; k++) {
        netrun_tensor_info info;
        netrun_tensor_view *t = NULL;
        netrun_status st = netrun_model_input_info(m, k, &info);
        if (st != NETRUN_OK) {
            snprintf(what, sizeof(what), "input %d", k);
            fail_with(r, st, what, netrun_model_error(m));
            return -1;
        }
        snprintf(path, sizeof(path), "%s/input_%d.pb", ds, k);
        st = netrun_tensor_read_file(path, &t);
        if (st != NETRUN_OK) {
            read_error(r, ds_name, "input", k);
            return -1;
        }
        st = netrun_session_set_input(s, info.name, t->dtype, t->rank, t->dims, t->data, t->nbytes);
        netrun_tensor_free(t);
        if (st != NETRUN_OK) {
            snprintf(what, sizeof(what), "set input '%s'", info.name);
            fail_with(r, st, what, netrun_session_error(s));
            return -1;
        }
    }
    netrun_status st = netrun_session_prepare(s);
    if (st != NETRUN_OK) {
        fail_with(r, st, "prepare", netrun_session_error(s));
        return -1;
    }
    if (!*placed) {
        *native = placement(s, r);
        *placed = 1;
    }
    st = netrun_session_run(s);
    if (st != NETRUN_OK) {
        fail_with(r, st, "run", netrun_session_error(s));
        return -1;
    }
    int got_out = netrun_session_output_count(s);
    if (got_out != n_out) {
        r->status = CONF_ERROR;
        snprintf(r->detail, sizeof(r->detail), "%s: %d output files but the session has %d outputs", ds_name,
                 n_out, got_out);
        return -1;
    }
    for (int k = 0; k < n_out; k++) {
        netrun_tensor_view got, *want = NULL;
        st = netrun_session_output(s, k, &got);
        if (st != NETRUN_OK) {
            snprintf(what, sizeof(what), "output %d", k);
            fail_with(r, st, what, netrun_session_error(s));
            return -1;
        }
        snprintf(path, sizeof(path), "%s/output_%d.pb", ds, k);
        st = netrun_tensor_read_file(path, &want);
        if (st != NETRUN_OK) {
            read_error(r, ds_name, "output", k);
            return -1;
        }
        char why[960];
        int ok = conf_compare(got.name ? got.name : want->name, &got, want, why, sizeof(why));
        netrun_tensor_free(want);
        if (!ok) {
            r->status = CONF_FAILED;
            snprintf(r->detail, sizeof(r->detail), "%s: %s", ds_name, why);
            return -1;
        }
    }
    return 0;
}

void conf_run_test(const conf_opts *o, const char *dir, conf_result *r)
{
    char path[4096 + 64]; /* dir (< 4096) + file name */
    netrun_model *m = NULL;
    netrun_options *opts = NULL;
    netrun_session *s = NULL;
    char **sets = NULL;
    int n_sets = 0, cap = 0;
    DIR *d = NULL;

    r->status = CONF_ERROR;
    test_dir = dir;
    first_backend(o, r->first_backend, sizeof(r->first_backend));
    snprintf(path, sizeof(path), "%s/model.onnx", dir);
    netrun_status st = netrun_model_load(path, &m);
    if (st != NETRUN_OK) {
        fail_with(r, st, "load", netrun_last_error());
        goto done;
    }
    if ((st = netrun_options_create(&opts)) != NETRUN_OK ||
        (o->backends && (st = netrun_options_set_backends(opts, o->backends)) != NETRUN_OK) ||
        (st = netrun_options_set_threads(opts, o->threads)) != NETRUN_OK) {
        fail_with(r, st, "options", netrun_last_error());
        goto done;
    }
    if ((st = netrun_session_create(m, opts, &s)) != NETRUN_OK) {
        fail_with(r, st, "session", netrun_last_error());
        goto done;
    }
    d = opendir(dir);
    if (!d) {
        snprintf(r->detail, sizeof(r->detail), "cannot list %s", dir);
        goto done;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, "test_data_set_", 14) != 0)
            continue;
        if (n_sets == cap) {
            int ncap = cap ? cap * 2 : 4;
            char **grown = realloc(sets, (size_t)ncap * sizeof(*sets));
            if (!grown)
                goto oom;
            sets = grown;
            cap = ncap;
        }
        if (!(sets[n_sets] = strdup(e->d_name)))
            goto oom;
        n_sets++;
    }
    if (n_sets == 0) {
        snprintf(r->detail, sizeof(r->detail), "no test_data_set_* folder");
        goto done;
    }
    qsort(sets, (size_t)n_sets, sizeof(*sets), cmp_str);
    int placed = 0, native = 1;
    for (int i = 0; i < n_sets; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, sets[i]);
        if (run_data_set(m, s, path, sets[i], r, &placed, &native) != 0)
            goto done;
    }
    r->status = native ? CONF_PASSED : CONF_PASSED_FALLBACK;
    r->detail[0] = '\0';
    if (!native)
        snprintf(r->detail, sizeof(r->detail), "some nodes ran on a backend after %s", r->first_backend);
    goto done;
oom:
    r->status = CONF_ERROR;
    snprintf(r->detail, sizeof(r->detail), "out of memory in the test runner");
done:
    if (d)
        closedir(d);
    for (int i = 0; i < n_sets; i++)
        free(sets[i]);
    free(sets);
    netrun_session_destroy(s);
    netrun_options_destroy(opts);
    netrun_model_release(m);
}
