/* --profile (per-node table with per-op and per-backend sums), the "profile" member of --json, and
 * --profile-json (Chrome trace event format). Built only on the public profiling API. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* One row of the table: a node, or a copy of one value in one direction. */
typedef struct prof_row {
    const char *name, *op, *backend, *kernel;
    char backend_buf[64]; /* copies: the direction text is rebuilt per event by the library */
    size_t workspace, bytes;
    int is_copy;
    int depth;            /* 0: a node of the model; 1+: inside a control-flow body (its node's time holds it) */
    double total_ms;      /* over all profiled runs */
    long count;
} prof_row;

typedef struct prof_group {
    const char *key;
    int n_rows;
    double total_ms;
} prof_group;

typedef struct prof_data {
    prof_row *rows;
    int n_rows, cap_rows;
    long n_runs;          /* runs that recorded events */
    double event_ms;      /* sum of every event's time over all runs */
    double wall_ms;       /* sum of the profiled runs' measured times */
} prof_data;

static void prof_free(prof_data *d)
{
    free(d->rows);
    memset(d, 0, sizeof(*d));
}

static prof_row *add_row(prof_data *d)
{
    if (d->n_rows == d->cap_rows) {
        int cap = d->cap_rows ? d->cap_rows * 2 : 64;
        prof_row *nr = realloc(d->rows, (size_t)cap * sizeof(*nr));
        if (!nr)
            return NULL;
        d->rows = nr;
        d->cap_rows = cap;
    }
    prof_row *r = &d->rows[d->n_rows++];
    memset(r, 0, sizeof(*r));
    return r;
}

/* Rows own their copy of backend names the library rewrites per event; rows move on realloc, so no
 * pointer into a row is kept. */
static const char *row_backend(const prof_row *r)
{
    return r->backend_buf[0] ? r->backend_buf : r->backend;
}

static int same(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Aggregate the recorded events: node rows first (in execution order, one per session node), then copies.
 * An event is matched to the next node of the run with its name and op (names need not be unique). */
static int prof_collect(netrun_session *s, const cli_profile_runs *runs, prof_data *d)
{
    memset(d, 0, sizeof(*d));
    int nodes = netrun_session_node_count(s);
    if (nodes < 0)
        nodes = 0;
    for (int i = 0; i < nodes; i++) {
        netrun_node_info ni;
        prof_row *r = add_row(d);
        if (!r)
            goto oom;
        if (netrun_session_node_info(s, i, &ni) == NETRUN_OK) {
            r->name = ni.name;
            r->op = ni.op_type;
            r->backend = ni.backend;
            r->kernel = ni.kernel;
            r->workspace = ni.workspace_bytes;
        }
    }
    int n = netrun_session_profile_count(s);
    uint64_t cur_run = UINT64_MAX;
    for (int e = 0; e < n; e++) {
        netrun_profile_event ev;
        if (netrun_session_profile_get(s, e, &ev) != NETRUN_OK)
            continue;
        if (ev.run != cur_run) { /* the oldest runs' events may have been dropped (profile.max_events) */
            cur_run = ev.run;
            d->n_runs++;
            if (runs && ev.run < (uint64_t)runs->n)
                d->wall_ms += runs->wall_ms[ev.run];
        }
        if (ev.depth == 0) /* a body's events are inside its node's: counted once */
            d->event_ms += ev.duration_ms;
        prof_row *r = NULL;
        if (ev.is_copy) {
            for (int k = nodes; k < d->n_rows && !r; k++)
                if (same(d->rows[k].name, ev.name) && same(d->rows[k].backend_buf, ev.backend))
                    r = &d->rows[k];
            if (!r) {
                if (!(r = add_row(d)))
                    goto oom;
                r->name = ev.name;
                r->op = "Copy";
                r->is_copy = 1;
                r->depth = ev.depth;
                r->bytes = ev.bytes;
                snprintf(r->backend_buf, sizeof(r->backend_buf), "%s", ev.backend ? ev.backend : "?");
            }
        } else {
            int found = ev.node >= 0 && ev.node < nodes ? ev.node : -1;
            if (found >= 0) {
                r = &d->rows[found];
            } else { /* an event of no listed node (e.g. inside control flow): its own row */
                for (int k = nodes; k < d->n_rows && !r; k++)
                    if (!d->rows[k].is_copy && same(d->rows[k].name, ev.name) && same(d->rows[k].op, ev.op_type))
                        r = &d->rows[k];
                if (!r) {
                    if (!(r = add_row(d)))
                        goto oom;
                    r->name = ev.name;
                    r->op = ev.op_type;
                    r->depth = ev.depth;
                    snprintf(r->backend_buf, sizeof(r->backend_buf), "%s", ev.backend ? ev.backend : "?");
                }
            }
        }
        r->total_ms += ev.duration_ms;
        r->count++;
    }
    return 0;
oom:
    prof_free(d);
    cli_error("out of memory aggregating the profile");
    return CLI_EXIT_RUNTIME;
}

static int cmp_row_time(const void *a, const void *b)
{
    const prof_row *x = a, *y = b;
    return (x->total_ms < y->total_ms) - (x->total_ms > y->total_ms);
}

static int cmp_group_time(const void *a, const void *b)
{
    const prof_group *x = a, *y = b;
    return (x->total_ms < y->total_ms) - (x->total_ms > y->total_ms);
}

/* Sum rows by op (by_backend = 0) or backend. Returns the group count; *out is malloc'ed. */
static int group_rows(const prof_data *d, int by_backend, prof_group **out)
{
    *out = NULL;
    prof_group *g = calloc((size_t)d->n_rows + 1, sizeof(*g));
    if (!g)
        return -1;
    int n = 0;
    for (int i = 0; i < d->n_rows; i++) {
        const prof_row *r = &d->rows[i];
        if (!r->count || r->depth > 0)
            continue; /* folded to a constant, or never run; a body's rows are inside their control-flow node's */
        const char *key = by_backend ? (r->is_copy ? "copy" : row_backend(r)) : r->op;
        if (!key)
            key = "?";
        int k = 0;
        while (k < n && strcmp(g[k].key, key) != 0)
            k++;
        if (k == n) {
            g[n].key = key;
            n++;
        }
        g[k].n_rows++;
        g[k].total_ms += r->total_ms;
    }
    qsort(g, (size_t)n, sizeof(*g), cmp_group_time);
    *out = g;
    return n;
}

static void fmt_bytes(char *buf, size_t size, size_t b)
{
    if (b == 0)
        snprintf(buf, size, "-");
    else if (b < 1024)
        snprintf(buf, size, "%zu B", b);
    else if (b < (size_t)1 << 20)
        snprintf(buf, size, "%.1f KiB", (double)b / 1024.0);
    else if (b < (size_t)1 << 30)
        snprintf(buf, size, "%.1f MiB", (double)b / 1048576.0);
    else
        snprintf(buf, size, "%.2f GiB", (double)b / 1073741824.0);
}


int cli_profile_print(FILE *f, const cli_opts *o, netrun_session *s, const cli_profile_runs *runs)
{
    prof_data d;
    int rc = prof_collect(s, runs, &d);
    if (rc)
        return rc;
    double per_run = d.n_runs ? d.event_ms / (double)d.n_runs : 0;
    double wall_per_run = d.n_runs ? d.wall_ms / (double)d.n_runs : 0;
    const char *B = cli_color(o->color_out, "\033[1m"), *N = cli_color(o->color_out, "\033[0m");

    fprintf(f, "\n%sProfile%s (%ld profiled run%s; times are means per run):\n", B, N, d.n_runs,
            d.n_runs == 1 ? "" : "s");
    if (d.n_runs == 0) {
        fprintf(f, "  no events recorded\n");
        prof_free(&d);
        return 0;
    }
    prof_row *sorted = malloc((size_t)d.n_rows * sizeof(*sorted) + 1);
    prof_group *ops = NULL, *bes = NULL;
    int n_ops = group_rows(&d, 0, &ops), n_bes = group_rows(&d, 1, &bes);
    if (!sorted || n_ops < 0 || n_bes < 0) {
        free(sorted);
        free(ops);
        free(bes);
        prof_free(&d);
        cli_error("out of memory printing the profile");
        return CLI_EXIT_RUNTIME;
    }
    memcpy(sorted, d.rows, (size_t)d.n_rows * sizeof(*sorted));
    qsort(sorted, (size_t)d.n_rows, sizeof(*sorted), cmp_row_time);

    double total = d.event_ms > 0 ? d.event_ms : 1;
    /* Columns as wide as their entries: kernel names are never cut (they say which algorithm ran), node names
     * past 48 characters lose their middle. */
    int wn = 4, wo = 2, wb = 7, wk = 6;
    for (int i = 0; i < d.n_rows; i++) {
        const prof_row *r = &sorted[i];
        if (!r->count)
            continue;
        int ln = (int)strlen(r->name ? r->name : "-"), lo = (int)strlen(r->op ? r->op : "-");
        int lb = (int)strlen(row_backend(r)), lk = r->is_copy ? 16 : (int)strlen(r->kernel && r->kernel[0] ? r->kernel : "-");
        wn = ln > wn ? (ln > 48 ? 48 : ln) : wn;
        wo = lo > wo ? lo : wo;
        wb = lb > wb ? lb : wb;
        wk = lk > wk ? lk : wk;
    }
    fprintf(f, "  %s%-*s %-*s %-*s %-*s %10s %11s %7s%s\n", B, wn, "NODE", wo, "OP", wb, "BACKEND", wk, "KERNEL",
            "WORKSPACE", "TIME (ms)", "SHARE", N);
    for (int i = 0; i < d.n_rows; i++) {
        const prof_row *r = &sorted[i];
        if (!r->count)
            continue;
        char c1[64], c4[64], ws[32];
        cli_clip_middle(c1, sizeof(c1), r->name && r->name[0] ? r->name : "-", wn);
        const char *kernel = r->kernel && r->kernel[0] ? r->kernel : "-";
        if (r->is_copy) {
            char b[32];
            fmt_bytes(b, sizeof(b), r->bytes);
            snprintf(c4, sizeof(c4), "%s moved", b);
            kernel = c4;
        }
        fmt_bytes(ws, sizeof(ws), r->workspace);
        fprintf(f, "  %-*s %-*s %-*s %-*s %10s %11.4f %6.1f%%\n", wn, c1, wo, r->op && r->op[0] ? r->op : "-", wb,
                row_backend(r), wk, kernel, ws, r->total_ms / (double)d.n_runs, 100.0 * r->total_ms / total);
    }
    /* Folded and never-run nodes are not timed: say how many, so the table's length is explained. */
    int untimed = 0;
    for (int i = 0; i < d.n_rows; i++)
        untimed += !d.rows[i].count && !d.rows[i].is_copy;
    if (untimed)
        fprintf(f, "  (%d node%s not timed: folded to constants at prepare or not run)\n", untimed,
                untimed == 1 ? "" : "s");

    fprintf(f, "\n  %s%-24s %6s %11s %7s%s\n", B, "BY OP", "NODES", "TIME (ms)", "SHARE", N);
    for (int k = 0; k < n_ops; k++)
        fprintf(f, "  %-24s %6d %11.4f %6.1f%%\n", ops[k].key, ops[k].n_rows, ops[k].total_ms / (double)d.n_runs,
                100.0 * ops[k].total_ms / total);
    fprintf(f, "\n  %s%-24s %6s %11s %7s%s\n", B, "BY BACKEND", "NODES", "TIME (ms)", "SHARE", N);
    for (int k = 0; k < n_bes; k++)
        fprintf(f, "  %-24s %6d %11.4f %6.1f%%\n", bes[k].key, bes[k].n_rows, bes[k].total_ms / (double)d.n_runs,
                100.0 * bes[k].total_ms / total);

    fprintf(f, "\n  sum of node and copy times per run: %.4f ms\n", per_run);
    fprintf(f, "  measured wall time per profiled run: %.4f ms", wall_per_run);
    if (wall_per_run > 0) {
        double pct = 100.0 * per_run / wall_per_run;
        fprintf(f, " (events cover %.1f%%)", pct);
        if (pct < 90.0 || pct > 110.0)
            fprintf(f, "\n  note: more than 10%% apart: the rest is runtime work between events (input copies,"
                       " output reads, scheduling), which weighs most on tiny models");
    }
    fputc('\n', f);
    free(sorted);
    free(ops);
    free(bes);
    prof_free(&d);
    return 0;
}

void cli_profile_json(cli_json *j, netrun_session *s, const cli_profile_runs *runs)
{
    prof_data d;
    if (prof_collect(s, runs, &d) != 0) {
        json_null(j, "profile");
        return;
    }
    double nr = d.n_runs ? (double)d.n_runs : 1;
    double total = d.event_ms > 0 ? d.event_ms : 1;
    json_begin_object(j, "profile");
    json_int(j, "runs", d.n_runs);
    json_number(j, "event_ms_per_run", d.event_ms / nr);
    json_number(j, "wall_ms_per_run", d.n_runs ? d.wall_ms / (double)d.n_runs : 0);
    json_begin_array(j, "nodes"); /* execution order; copies after the nodes */
    for (int i = 0; i < d.n_rows; i++) {
        const prof_row *r = &d.rows[i];
        json_begin_object(j, NULL);
        json_string(j, "name", r->name);
        json_string(j, "op", r->op);
        json_string(j, "backend", row_backend(r));
        json_bool(j, "is_copy", r->is_copy);
        json_int(j, "depth", r->depth);
        if (r->is_copy)
            json_uint(j, "bytes", r->bytes);
        else
            json_string(j, "kernel", r->kernel ? r->kernel : "");
        json_uint(j, "workspace_bytes", r->workspace);
        json_number(j, "mean_ms", r->total_ms / nr);
        json_number(j, "share", r->total_ms / total);
        json_int(j, "events", r->count);
        json_end_object(j);
    }
    json_end_array(j);
    for (int by = 0; by < 2; by++) {
        prof_group *g = NULL;
        int n = group_rows(&d, by, &g);
        json_begin_array(j, by ? "by_backend" : "by_op");
        for (int k = 0; k < n; k++) {
            json_begin_object(j, NULL);
            json_string(j, by ? "backend" : "op", g[k].key);
            json_int(j, "nodes", g[k].n_rows);
            json_number(j, "mean_ms", g[k].total_ms / nr);
            json_number(j, "share", g[k].total_ms / total);
            json_end_object(j);
        }
        json_end_array(j);
        free(g);
    }
    json_end_object(j);
    prof_free(&d);
}

/* ---- Chrome trace ---- */

#define MAX_TRACKS 64

static int track_of(const char *(*names)[MAX_TRACKS], int *n, const char *key)
{
    for (int i = 0; i < *n; i++)
        if (strcmp((*names)[i], key) == 0)
            return i;
    if (*n == MAX_TRACKS)
        return MAX_TRACKS - 1;
    (*names)[*n] = key;
    return (*n)++;
}

int cli_profile_trace(const char *path, const cli_opts *o, netrun_session *s, const cli_profile_runs *runs)
{
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (!f) {
        cli_error("cannot write the trace to %s: %s", path, strerror(errno));
        return CLI_EXIT_RUNTIME;
    }
    int n = netrun_session_profile_count(s);
    /* Tracks (Chrome "threads"): one per backend in order of appearance, then one for copies. Backend names are
     * copied: the copy direction text the library returns is rewritten per event. */
    static char track_buf[MAX_TRACKS][64];
    const char *tracks[MAX_TRACKS];
    int n_tracks = 0;
    track_of(&tracks, &n_tracks, "runs");

    /* Run r starts where run r-1 ended on the timeline: the sum of the earlier measured run times. */
    double offset_us = 0, run_end_us = 0;
    uint64_t cur_run = UINT64_MAX;
    long run_index = -1;
    cli_json j;
    json_init(&j, f);
    json_begin_object(&j, NULL);
    json_string(&j, "displayTimeUnit", "ms");
    json_begin_array(&j, "traceEvents");
    for (int e = 0; e < n; e++) {
        netrun_profile_event ev;
        if (netrun_session_profile_get(s, e, &ev) != NETRUN_OK)
            continue;
        if (ev.run != cur_run) {
            if (run_index >= 0) {
                double wall = runs && run_index < runs->n ? runs->wall_ms[run_index] * 1000.0 : 0;
                offset_us += wall > run_end_us ? wall : run_end_us;
            }
            cur_run = ev.run;
            run_index = (long)ev.run; /* its index among the timed runs (older ones may have been dropped) */
            run_end_us = 0;
            double wall = runs && run_index < runs->n ? runs->wall_ms[run_index] * 1000.0 : 0;
            json_begin_object(&j, NULL);
            char nm[48];
            snprintf(nm, sizeof(nm), "run %ld", run_index);
            json_string(&j, "name", nm);
            json_string(&j, "cat", "run");
            json_string(&j, "ph", "X");
            json_number(&j, "ts", offset_us);
            json_number(&j, "dur", wall);
            json_int(&j, "pid", 1);
            json_int(&j, "tid", 0);
            json_end_object(&j);
        }
        const char *be = ev.backend ? ev.backend : "?";
        int tid;
        if (ev.is_copy) {
            tid = track_of(&tracks, &n_tracks, "copies");
        } else {
            int k = 0;
            while (k < n_tracks && strcmp(tracks[k], be) != 0)
                k++;
            if (k == n_tracks && n_tracks < MAX_TRACKS) {
                snprintf(track_buf[k], sizeof(track_buf[k]), "%s", be);
                tracks[n_tracks++] = track_buf[k];
            } else if (k == n_tracks) {
                k = MAX_TRACKS - 1;
            }
            tid = k;
        }
        double ts = offset_us + ev.start_ms * 1000.0, dur = ev.duration_ms * 1000.0;
        if (ev.start_ms * 1000.0 + dur > run_end_us)
            run_end_us = ev.start_ms * 1000.0 + dur;
        json_begin_object(&j, NULL);
        json_string(&j, "name", ev.name && ev.name[0] ? ev.name : "(unnamed)");
        json_string(&j, "cat", ev.is_copy ? "copy" : be);
        json_string(&j, "ph", "X");
        json_number(&j, "ts", ts);
        json_number(&j, "dur", dur);
        json_int(&j, "pid", 1);
        json_int(&j, "tid", tid);
        json_begin_object(&j, "args");
        json_string(&j, "op", ev.op_type);
        json_uint(&j, "run", ev.run);
        if (ev.is_copy) {
            json_string(&j, "direction", be);
            json_uint(&j, "bytes", ev.bytes);
        }
        json_end_object(&j);
        json_end_object(&j);
    }
    /* Metadata: the process is the model; the threads are the tracks. */
    json_begin_object(&j, NULL);
    json_string(&j, "name", "process_name");
    json_string(&j, "ph", "M");
    json_int(&j, "pid", 1);
    json_begin_object(&j, "args");
    char pname[1100];
    snprintf(pname, sizeof(pname), "netrun %s", o->model_path ? o->model_path : "");
    json_string(&j, "name", pname);
    json_end_object(&j);
    json_end_object(&j);
    for (int t = 0; t < n_tracks; t++) {
        json_begin_object(&j, NULL);
        json_string(&j, "name", "thread_name");
        json_string(&j, "ph", "M");
        json_int(&j, "pid", 1);
        json_int(&j, "tid", t);
        json_begin_object(&j, "args");
        json_string(&j, "name", tracks[t]);
        json_end_object(&j);
        json_end_object(&j);
        json_begin_object(&j, NULL);
        json_string(&j, "name", "thread_sort_index");
        json_string(&j, "ph", "M");
        json_int(&j, "pid", 1);
        json_int(&j, "tid", t);
        json_begin_object(&j, "args");
        json_int(&j, "sort_index", t);
        json_end_object(&j);
        json_end_object(&j);
    }
    json_end_array(&j);
    json_begin_object(&j, "otherData");
    json_string(&j, "netrun_version", netrun_version());
    json_string(&j, "model", o->model_path);
    json_int(&j, "runs", run_index + 1);
    json_end_object(&j);
    json_end_object(&j);
    int bad = j.failed || ferror(f);
    bad |= f == stdout ? fflush(f) != 0 : fclose(f) != 0;
    if (bad) {
        cli_error("writing the trace to %s failed", path);
        return CLI_EXIT_RUNTIME;
    }
    return 0;
}
