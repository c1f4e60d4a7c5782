/* --dot FILE: the placed graph in Graphviz DOT. Nodes are filled with their backend's colour; a value copied
 * between memory domains is drawn as a dashed red edge labelled with the copy (direction, bytes), taken from
 * the profiled run's copy events. Edges come from netrun_session_node_io. Constants and weights are left out. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_COLOURS 16

static const char *const palette[MAX_COLOURS] = {
    "#9ecae1", "#a1d99b", "#fdae6b", "#bcbddc", "#fa9fb5", "#d9d9d9", "#fdd0a2", "#c7e9c0",
    "#dadaeb", "#fcbba1", "#c6dbef", "#e5f5e0", "#fee6ce", "#efedf5", "#fde0dd", "#f0f0f0"};

typedef struct dot_copy {
    const char *value;
    char dir[64];
    size_t bytes;
} dot_copy;

static void dot_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if (*s == '\n')
            fputs("\\n", f);
        else if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
    fputc('"', f);
}

/* Colour of a backend: fixed for the well-known ones so pictures look alike across models. */
static const char *colour_of(const char *be, const char **seen, int *n_seen)
{
    if (!be)
        return "#ffffff";
    if (!strcmp(be, "cpu"))
        return "#9ecae1";
    if (!strcmp(be, "cuda"))
        return "#a1d99b";
    if (!strcmp(be, "template"))
        return "#fdae6b";
    if (!strcmp(be, "const"))
        return "#eeeeee";
    if (!strcmp(be, "runtime"))
        return "#bcbddc";
    int k = 0;
    while (k < *n_seen && strcmp(seen[k], be) != 0)
        k++;
    if (k == *n_seen && *n_seen < MAX_COLOURS)
        seen[(*n_seen)++] = be;
    return palette[(k + 3) % MAX_COLOURS];
}

static const dot_copy *find_copy(const dot_copy *c, int n, const char *value)
{
    for (int i = 0; i < n; i++)
        if (strcmp(c[i].value, value) == 0)
            return &c[i];
    return NULL;
}

static void fmt_size(char *buf, size_t size, size_t b)
{
    if (b < 1024)
        snprintf(buf, size, "%zu B", b);
    else if (b < (size_t)1 << 20)
        snprintf(buf, size, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(buf, size, "%.1f MiB", (double)b / 1048576.0);
}

/* Edge from `from` (a DOT id) carrying value v; dashed and labelled when v was copied. */
static void edge(FILE *f, const char *from, const char *to, const char *value, const dot_copy *cp)
{
    fprintf(f, "  %s -> %s [", from, to);
    if (cp) {
        char sz[32], lab[160];
        fmt_size(sz, sizeof(sz), cp->bytes);
        snprintf(lab, sizeof(lab), "copy %s\\n%s", cp->dir, sz);
        fputs("style=dashed, color=\"#d62728\", fontcolor=\"#d62728\", penwidth=1.6, label=", f);
        fprintf(f, "\"%s\"", lab); /* direction text is backend names: no quotes to escape */
        (void)value;
    } else {
        fputs("tooltip=", f);
        dot_str(f, value);
    }
    fputs("];\n", f);
}

int cli_write_dot(const char *path, const cli_opts *o, netrun_session *s)
{
    int nodes = netrun_session_node_count(s);
    if (nodes < 0 || (nodes > 0 && netrun_session_node_io(s, 0, 0, -1, NULL) < 0)) {
        cli_error("--dot: the session has no prepared graph");
        return CLI_EXIT_RUNTIME;
    }
    int n_ev = netrun_session_profile_count(s);
    dot_copy *copies = calloc((size_t)n_ev + 1, sizeof(*copies));
    if (!copies) {
        cli_error("out of memory");
        return CLI_EXIT_RUNTIME;
    }
    int n_copies = 0;
    for (int e = 0; e < n_ev; e++) {
        netrun_profile_event ev;
        if (netrun_session_profile_get(s, e, &ev) != NETRUN_OK || !ev.is_copy || !ev.name)
            continue;
        if (find_copy(copies, n_copies, ev.name))
            continue; /* one run is enough: later runs repeat it */
        copies[n_copies].value = ev.name;
        snprintf(copies[n_copies].dir, sizeof(copies[n_copies].dir), "%s", ev.backend ? ev.backend : "?");
        copies[n_copies].bytes = ev.bytes;
        n_copies++;
    }

    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (!f) {
        free(copies);
        cli_error("cannot write %s: %s", path, strerror(errno));
        return CLI_EXIT_RUNTIME;
    }
    const char *seen[MAX_COLOURS];
    int n_seen = 0;
    const char *backends[MAX_COLOURS];
    int n_backends = 0;
    fputs("digraph netrun {\n  rankdir=TB;\n  graph [fontname=\"Helvetica\", fontsize=11, labelloc=t, label=", f);
    char title[1200];
    snprintf(title, sizeof(title), "%s — placed by netrun %s (backends: %s)", o->model_path, netrun_version(),
             o->backends ? o->backends : "default");
    dot_str(f, title);
    fputs("];\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
          "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\"];\n",
          f);

    /* Graph inputs and outputs. */
    int n_in = netrun_session_input_count(s), n_out = netrun_session_output_count(s);
    for (int i = 0; i < n_in; i++) {
        netrun_tensor_info ti;
        if (netrun_session_input_info(s, i, &ti) != NETRUN_OK)
            continue;
        fprintf(f, "  in%d [shape=ellipse, style=filled, fillcolor=\"#ffffff\", label=", i);
        dot_str(f, ti.name);
        fputs("];\n", f);
    }
    for (int i = 0; i < n_out; i++) {
        netrun_tensor_info ti;
        if (netrun_session_output_info(s, i, &ti) != NETRUN_OK)
            continue;
        fprintf(f, "  out%d [shape=ellipse, style=filled, fillcolor=\"#ffffff\", label=", i);
        dot_str(f, ti.name);
        fputs("];\n", f);
    }
    for (int i = 0; i < nodes; i++) {
        netrun_node_info ni;
        if (netrun_session_node_info(s, i, &ni) != NETRUN_OK)
            continue;
        const char *col = colour_of(ni.backend, seen, &n_seen);
        int k = 0;
        while (k < n_backends && strcmp(backends[k], ni.backend ? ni.backend : "?") != 0)
            k++;
        if (k == n_backends && n_backends < MAX_COLOURS)
            backends[n_backends++] = ni.backend ? ni.backend : "?";
        char label[768];
        snprintf(label, sizeof(label), "%s\n%s @ %s%s%s", ni.name && ni.name[0] ? ni.name : "(unnamed)",
                 ni.op_type ? ni.op_type : "?", ni.backend ? ni.backend : "?",
                 ni.kernel && ni.kernel[0] ? "\n" : "", ni.kernel ? ni.kernel : "");
        fprintf(f, "  n%d [fillcolor=\"%s\", label=", i, col);
        dot_str(f, label);
        fputs(", tooltip=", f);
        dot_str(f, ni.reason ? ni.reason : "");
        fputs("];\n", f);
    }

    /* Edges: each node input from its producer (a node or a graph input). */
    for (int i = 0; i < nodes; i++) {
        int nin = netrun_session_node_io(s, i, 0, -1, NULL);
        for (int k = 0; k < nin; k++) {
            const char *v = NULL;
            if (netrun_session_node_io(s, i, 0, k, &v) < 0 || !v || !v[0])
                continue;
            char from[32] = "", to[32];
            int prod = -1;
            snprintf(to, sizeof(to), "n%d", i);
            for (int p = 0; p < nodes && !from[0]; p++) {
                int nout = netrun_session_node_io(s, p, 1, -1, NULL);
                for (int q = 0; q < nout; q++) {
                    const char *w = NULL;
                    if (netrun_session_node_io(s, p, 1, q, &w) >= 0 && w && strcmp(w, v) == 0) {
                        snprintf(from, sizeof(from), "n%d", p);
                        prod = p;
                        break;
                    }
                }
            }
            for (int g = 0; g < n_in && !from[0]; g++) {
                netrun_tensor_info ti;
                if (netrun_session_input_info(s, g, &ti) == NETRUN_OK && ti.name && strcmp(ti.name, v) == 0)
                    snprintf(from, sizeof(from), "in%d", g);
            }
            /* A copy belongs on this edge only when the two ends run on different backends (or it feeds a
             * graph input to a device). */
            const dot_copy *cp = find_copy(copies, n_copies, v);
            if (cp && prod >= 0) {
                netrun_node_info a, b;
                if (netrun_session_node_info(s, prod, &a) == NETRUN_OK && netrun_session_node_info(s, i, &b) ==
                    NETRUN_OK && a.backend && b.backend && strcmp(a.backend, b.backend) == 0)
                    cp = NULL;
            }
            if (from[0])
                edge(f, from, to, v, cp);
        }
    }
    /* Graph outputs from their producers. */
    for (int g = 0; g < n_out; g++) {
        netrun_tensor_info ti;
        if (netrun_session_output_info(s, g, &ti) != NETRUN_OK || !ti.name)
            continue;
        char from[32] = "", to[32];
        snprintf(to, sizeof(to), "out%d", g);
        for (int p = 0; p < nodes && !from[0]; p++) {
            int nout = netrun_session_node_io(s, p, 1, -1, NULL);
            for (int q = 0; q < nout; q++) {
                const char *w = NULL;
                if (netrun_session_node_io(s, p, 1, q, &w) >= 0 && w && strcmp(w, ti.name) == 0) {
                    snprintf(from, sizeof(from), "n%d", p);
                    break;
                }
            }
        }
        const dot_copy *cp = find_copy(copies, n_copies, ti.name);
        size_t dl = cp ? strlen(cp->dir) : 0;
        if (cp && (dl < 6 || strcmp(cp->dir + dl - 6, "->host") != 0))
            cp = NULL; /* only the read-back of an output belongs on the output's edge */
        if (from[0])
            edge(f, from, to, ti.name, cp);
    }

    /* Legend: one swatch per backend used. */
    fputs("  subgraph cluster_legend {\n    label=\"backends\"; fontsize=10; style=dashed; color=\"#999999\";\n", f);
    for (int k = 0; k < n_backends; k++) {
        fprintf(f, "    legend%d [fillcolor=\"%s\", label=", k, colour_of(backends[k], seen, &n_seen));
        dot_str(f, backends[k]);
        fputs("];\n", f);
    }
    fputs("  }\n}\n", f);
    free(copies);
    int bad = ferror(f);
    bad |= f == stdout ? fflush(f) != 0 : fclose(f) != 0;
    if (bad) {
        cli_error("writing %s failed", path);
        return CLI_EXIT_RUNTIME;
    }
    return 0;
}
