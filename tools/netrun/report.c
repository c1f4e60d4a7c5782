/* The text report (stdout) and the JSON report (--json) of a run. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define SHOW_VALUES_TEXT 8
#define SHOW_VALUES_JSON 16
#define MAX_BACKEND_GROUPS 32

/* ---- formatting helpers ---- */

/* Append to buf, never overflowing (truncates). */
static void appendf(char *buf, size_t size, size_t *used, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void appendf(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
    if (*used >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *used, size - *used, fmt, ap);
    va_end(ap);
    if (w < 0)
        return;
    *used += (size_t)w;
    if (*used >= size)
        *used = size - 1;
}

void cli_format_dims(char *buf, size_t size, int rank, const int64_t *dims)
{
    size_t used = 0;
    buf[0] = '\0';
    appendf(buf, size, &used, "[");
    for (int i = 0; i < rank; i++)
        appendf(buf, size, &used, "%s%" PRId64, i ? ", " : "", dims[i]);
    appendf(buf, size, &used, "]");
}

void cli_format_info_shape(char *buf, size_t size, const netrun_tensor_info *decl, const netrun_tensor_info *act)
{
    size_t used = 0;
    buf[0] = '\0';
    int rank = decl->rank;
    if (rank < 0 && act && act->rank >= 0)
        rank = act->rank;
    if (rank < 0) {
        appendf(buf, size, &used, "(unknown shape)");
        return;
    }
    appendf(buf, size, &used, "[");
    for (int d = 0; d < rank; d++) {
        const char *sym = decl->rank == rank && decl->dim_names ? decl->dim_names[d] : NULL;
        int64_t dv = decl->rank == rank && decl->dims ? decl->dims[d] : -1;
        int64_t av = act && act->rank == rank && act->dims ? act->dims[d] : -1;
        appendf(buf, size, &used, "%s", d ? ", " : "");
        if (sym && av >= 0)
            appendf(buf, size, &used, "%s=%" PRId64, sym, av);
        else if (sym)
            appendf(buf, size, &used, "%s", sym);
        else if (dv >= 0)
            appendf(buf, size, &used, "%" PRId64, dv);
        else if (av >= 0)
            appendf(buf, size, &used, "?=%" PRId64, av);
        else
            appendf(buf, size, &used, "?");
    }
    appendf(buf, size, &used, "]");
}

static void format_bytes(char *buf, size_t size, double b)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%.0f B", b);
    else
        snprintf(buf, size, "%.1f %s", b, units[u]);
}

static int is_int_dtype(netrun_dtype t)
{
    switch (t) {
    case NETRUN_DTYPE_INT8: case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_INT16: case NETRUN_DTYPE_UINT16:
    case NETRUN_DTYPE_INT32: case NETRUN_DTYPE_UINT32: case NETRUN_DTYPE_INT64: case NETRUN_DTYPE_UINT64:
    case NETRUN_DTYPE_BOOL:
        return 1;
    default:
        return 0;
    }
}

/* Elements a view holds, bounded by its bytes (0 when unreadable). */
static size_t view_count(const netrun_tensor_view *v)
{
    size_t n, es = netrun_dtype_size(v->dtype);
    if (!cli_dtype_readable(v->dtype) || es == 0 || !v->data || cli_numel(v->rank, v->dims, &n) != 0)
        return 0;
    return n < v->nbytes / es ? n : v->nbytes / es;
}

static void format_value(char *buf, size_t size, const netrun_tensor_view *v, size_t i)
{
    if (v->dtype == NETRUN_DTYPE_INT64) {
        int64_t x;
        memcpy(&x, (const char *)v->data + i * 8, 8);
        snprintf(buf, size, "%" PRId64, x);
    } else if (v->dtype == NETRUN_DTYPE_UINT64) {
        uint64_t x;
        memcpy(&x, (const char *)v->data + i * 8, 8);
        snprintf(buf, size, "%" PRIu64, x);
    } else if (v->dtype == NETRUN_DTYPE_BOOL) {
        snprintf(buf, size, "%s", cli_element(v->dtype, v->data, i) != 0 ? "true" : "false");
    } else if (is_int_dtype(v->dtype)) {
        snprintf(buf, size, "%.0f", cli_element(v->dtype, v->data, i));
    } else {
        snprintf(buf, size, "%.6g", cli_element(v->dtype, v->data, i));
    }
}

/* s clipped to width characters by cutting its middle ("encoder.layers.1...attention.out"), so both the start and
 * the end of a long node name stay readable. */
void cli_clip_middle(char *buf, size_t size, const char *s, int width)
{
    int len = (int)strlen(s);
    if (len <= width || width < 8) {
        snprintf(buf, size, "%s", s);
        return;
    }
    int head = (width - 3) / 2, tail = width - 3 - head;
    snprintf(buf, size, "%.*s...%s", head, s, s + len - tail);
}

/* ---- placement ---- */

typedef struct backend_group {
    const char *name;
    int count;
} backend_group;

static int group_nodes(netrun_session *s, backend_group *g, int max)
{
    int n = 0, nodes = netrun_session_node_count(s);
    for (int i = 0; i < nodes; i++) {
        netrun_node_info ni;
        if (netrun_session_node_info(s, i, &ni) != NETRUN_OK)
            continue;
        const char *b = ni.backend ? ni.backend : "?";
        int k = 0;
        while (k < n && strcmp(g[k].name, b) != 0)
            k++;
        if (k == n) {
            if (n == max)
                continue;
            g[n].name = b;
            g[n].count = 0;
            n++;
        }
        g[k].count++;
    }
    return n;
}

static const char *str_or(const char *s, const char *dflt)
{
    return s && s[0] ? s : dflt;
}

/* ---- text ---- */

/* Nodes not on the primary backend, one line each (-v). */
static void text_off_primary_all(FILE *f, netrun_session *s, const char *primary)
{
    int nodes = netrun_session_node_count(s), off = 0;
    for (int i = 0; i < nodes; i++) {
        netrun_node_info ni;
        if (netrun_session_node_info(s, i, &ni) != NETRUN_OK || (ni.backend && strcmp(ni.backend, primary) == 0))
            continue;
        if (!off++)
            fprintf(f, "  not on %s:\n", primary);
        fprintf(f, "    %s (%s) -> %s: %s\n", str_or(ni.name, "(unnamed)"), str_or(ni.op_type, "?"),
                str_or(ni.backend, "?"), str_or(ni.reason, "no reason given"));
    }
}

#define MAX_KINDS 24

/* The default: nodes not on the primary backend grouped by (op, backend, reason), one line per kind with its
 * count; constants folded at prepare as one count. A model zoo network folds hundreds of Shape/Gather nodes, and a
 * line each buried the placement that matters. */
static void text_off_primary_summary(FILE *f, netrun_session *s, const char *primary)
{
    struct kind {
        const char *op, *backend, *reason;
        int count;
    } kinds[MAX_KINDS];
    int n_kinds = 0, other = 0, folded = 0, folded_ops = 0, off = 0;
    const char *fold_op[4];
    int nodes = netrun_session_node_count(s);
    for (int i = 0; i < nodes; i++) {
        netrun_node_info ni;
        if (netrun_session_node_info(s, i, &ni) != NETRUN_OK || (ni.backend && strcmp(ni.backend, primary) == 0))
            continue;
        off++;
        const char *op = str_or(ni.op_type, "?"), *be = str_or(ni.backend, "?"), *why = str_or(ni.reason, "");
        if (!strcmp(be, "const")) {
            folded++;
            int k = 0;
            while (k < folded_ops && k < 4 && strcmp(fold_op[k], op))
                k++;
            if (k == folded_ops && k < 4)
                fold_op[folded_ops++] = op;
            continue;
        }
        int k = 0;
        while (k < n_kinds && (strcmp(kinds[k].op, op) || strcmp(kinds[k].backend, be) || strcmp(kinds[k].reason, why)))
            k++;
        if (k == n_kinds) {
            if (n_kinds == MAX_KINDS) {
                other++;
                continue;
            }
            kinds[n_kinds++] = (struct kind){op, be, why, 0};
        }
        kinds[k].count++;
    }
    if (!off)
        return;
    fprintf(f, "  not on %s (-v lists every node):\n", primary);
    if (folded) {
        fprintf(f, "    %5d folded to constants at prepare (", folded);
        for (int k = 0; k < folded_ops; k++)
            fprintf(f, "%s%s", k ? ", " : "", fold_op[k]);
        fprintf(f, "%s)\n", folded_ops == 4 ? ", ..." : "");
    }
    for (int k = 0; k < n_kinds; k++)
        fprintf(f, "    %5d x %s -> %s%s%s\n", kinds[k].count, kinds[k].op, kinds[k].backend,
                kinds[k].reason[0] ? ": " : "", kinds[k].reason);
    if (other)
        fprintf(f, "    %5d more nodes of other kinds (-v)\n", other);
}

/* Width of a column: its longest entry, at least the header, at most max. */
static int fit_width(int cur, const char *s, int max)
{
    int n = s ? (int)strlen(s) : 1;
    if (n > max)
        n = max;
    return n > cur ? n : cur;
}

/* The -v table: every node, columns as wide as their entries (node names clipped in the middle past 48 characters;
 * the last column, the reason, is never cut). */
static void text_node_table(FILE *f, netrun_session *s)
{
    int nodes = netrun_session_node_count(s);
    int wn = 4, wo = 2, wb = 7, wk = 6;
    for (int i = 0; i < nodes; i++) {
        netrun_node_info ni;
        if (netrun_session_node_info(s, i, &ni) != NETRUN_OK)
            continue;
        wn = fit_width(wn, str_or(ni.name, "(unnamed)"), 48);
        wo = fit_width(wo, str_or(ni.op_type, "?"), 64);
        wb = fit_width(wb, str_or(ni.backend, "?"), 32);
        wk = fit_width(wk, str_or(ni.kernel, "-"), 96);
    }
    fprintf(f, "\n  %-*s %-*s %-*s %-*s %s\n", wn, "NODE", wo, "OP", wb, "BACKEND", wk, "KERNEL", "REASON");
    for (int i = 0; i < nodes; i++) {
        netrun_node_info ni;
        if (netrun_session_node_info(s, i, &ni) != NETRUN_OK)
            continue;
        char name[64];
        cli_clip_middle(name, sizeof(name), str_or(ni.name, "(unnamed)"), wn);
        fprintf(f, "  %-*s %-*s %-*s %-*s %s\n", wn, name, wo, str_or(ni.op_type, "?"), wb, str_or(ni.backend, "?"),
                wk, str_or(ni.kernel, "-"), str_or(ni.reason, ""));
    }
}

static void text_tensor_infos(FILE *f, const cli_result *r, int outputs)
{
    int n = outputs ? netrun_model_output_count(r->model) : netrun_model_input_count(r->model);
    for (int i = 0; i < n; i++) {
        netrun_tensor_info decl, act;
        netrun_status st = outputs ? netrun_model_output_info(r->model, i, &decl)
                                   : netrun_model_input_info(r->model, i, &decl);
        if (st != NETRUN_OK)
            continue;
        int have_act = (outputs ? netrun_session_output_info(r->session, i, &act)
                                : netrun_session_input_info(r->session, i, &act)) == NETRUN_OK;
        if (have_act && !outputs && act.dtype != decl.dtype)
            decl = act; /* preprocess.*: the session takes uint8 frames where the model declares floats */
        char shape[256];
        cli_format_info_shape(shape, sizeof(shape), &decl, have_act ? &act : NULL);
        fprintf(f, "    %-24s %-9s %s", str_or(decl.name, "?"), netrun_dtype_name(decl.dtype), shape);
        if (!outputs && i < r->n_inputs)
            fprintf(f, "  (%s)", r->inputs[i].source ? r->inputs[i].source : "random");
        fputc('\n', f);
    }
}

void cli_report_text(FILE *f, const cli_result *r)
{
    const cli_opts *o = r->opts;
    char b1[64], b2[64], b3[64], b4[64];

    fprintf(f, "Model: %s (%d nodes, netrun %s)\n", o->model_path, netrun_model_node_count(r->model),
            netrun_version());
    netrun_model_metadata md;
    if (netrun_model_get_metadata(r->model, &md) == NETRUN_OK && md.producer_name[0]) {
        fprintf(f, "  made by %s%s%s; opsets", md.producer_name, md.producer_version[0] ? " " : "", md.producer_version);
        for (int i = 0; i < netrun_model_opset_count(r->model); i++) {
            const char *dom;
            int64_t ver;
            if (netrun_model_opset_get(r->model, i, &dom, &ver) == NETRUN_OK)
                fprintf(f, "%s %s %" PRId64, i ? "," : "", dom[0] ? dom : "ai.onnx", ver);
        }
        fputc('\n', f);
    }
    fprintf(f, "  inputs:\n");
    text_tensor_infos(f, r, 0);
    fprintf(f, "  outputs:\n");
    text_tensor_infos(f, r, 1);

    /* Placement: counts per backend, then every node not on the primary backend with its reason. */
    backend_group groups[MAX_BACKEND_GROUPS];
    int ng = group_nodes(r->session, groups, MAX_BACKEND_GROUPS);
    int nodes = netrun_session_node_count(r->session);
    fprintf(f, "\nPlacement (backends: %s%s; primary: %s):\n", r->requested[0] ? r->requested : "none",
            o->backends ? "" : " (default)", r->primary_backend);
    for (int k = 0; k < ng; k++)
        fprintf(f, "  %-10s %d node%s\n", groups[k].name, groups[k].count, groups[k].count == 1 ? "" : "s");
    if (o->verbose)
        text_off_primary_all(f, r->session, r->primary_backend);
    else
        text_off_primary_summary(f, r->session, r->primary_backend);
    if (r->have_stats) {
        format_bytes(b1, sizeof(b1), (double)r->stats.copy_bytes);
        fprintf(f, "  copies between backends: %d (%s per run)\n", r->stats.n_copies, b1);
        if (r->stats.h2d_bytes || r->stats.d2h_bytes || r->stats.device_peak_bytes) { /* a device took part */
            format_bytes(b1, sizeof(b1), (double)r->stats.h2d_bytes);
            format_bytes(b2, sizeof(b2), (double)r->stats.d2h_bytes);
            fprintf(f, "  host <-> device (PCIe) per run: %s to the device, %s back\n", b1, b2);
        }
    }
    if (r->have_stats) { /* micro-batching changes what the node shapes and profile times are: always said */
        int images = 0;
        const char *mb = netrun_session_micro_batch(r->session, &images);
        if (images || (o->verbose && *mb)) fprintf(f, "  micro-batching: %s\n", mb);
    }
    if (r->have_stats && o->verbose)
        fprintf(f, "  graph passes: %d BatchNorm folded, %d activations and %d Adds fused into Conv, %d Identity/Dropout/same-type Cast "
                "dropped, %d Mul(x, Sigmoid(x)) made Swish, %d CPU Convs on nChw16c with %d reorders, %d CUDA Convs in "
                "float16 NHWC regions with %d conversions (--no-optimize turns them off)\n", r->stats.n_bn_folded,
                r->stats.n_act_fused, r->stats.n_sum_fused, r->stats.n_nodes_dropped, r->stats.n_swish_fused,
                r->stats.n_nchwc_convs, r->stats.n_nchwc_reorders, r->stats.n_fp16_convs, r->stats.n_fp16_converts);
    if (r->have_stats && o->verbose &&
        (r->stats.n_attention_fused || r->stats.n_layernorm_fused || r->stats.n_gelu_fused))
        fprintf(f, "  transformer fusions: %d Attention, %d LayerNormalization, %d Gelu subgraphs run as one node "
                "(graph.fuse_transformer=0 keeps them)\n", r->stats.n_attention_fused, r->stats.n_layernorm_fused,
                r->stats.n_gelu_fused);
    if (r->have_stats && o->verbose && r->stats.n_fp16_nodes)
        fprintf(f, "  float16 regions: %d nodes kept in float16 between %d Casts (cuda.fp16_plain=0 turns them off)\n",
                r->stats.n_fp16_nodes, r->stats.n_fp16_casts);
    if (o->verbose && nodes > 0)
        text_node_table(f, r->session);

    fprintf(f, "\nTimes:\n");
    fprintf(f, "  load        %10.3f ms\n", r->load_ms);
    fprintf(f, "  prepare     %10.3f ms", r->prepare_ms);
    if (r->have_stats)
        fprintf(f, "  (backend init %.3f ms)", r->stats.init_ms);
    fprintf(f, "\n  first run   %10.3f ms\n", r->first_run_ms);
    /* a session (or a control-flow body) that had to prepare again says so: it costs a prepare each time */
    if (r->have_stats && r->prepare_note[0])
        fprintf(f, "  prepares    %10llu in all, control-flow bodies included; prepared again because %s\n",
                (unsigned long long)r->stats.prepares, r->prepare_note);
    if (r->latency.valid) {
        fprintf(f, "  steady runs: %ld timed after %ld warmup%s\n", r->timed_runs, o->warmup,
                r->profile ? " (profiled: backends synchronised after every node)" : "");
        fprintf(f, "    min %.3f ms, median %.3f ms, p90 %.3f ms, p99 %.3f ms, mean %.3f ms\n", r->latency.min,
                r->latency.median, r->latency.p90, r->latency.p99, r->latency.mean);
        fprintf(f, "    throughput %.1f runs/s\n", r->latency.throughput_per_s);
    } else {
        fprintf(f, "  steady runs: none (--iterations 0)\n");
    }

    fprintf(f, "\nMemory:\n");
    if (r->have_stats) {
        format_bytes(b1, sizeof(b1), (double)r->stats.arena_bytes);
        format_bytes(b2, sizeof(b2), (double)r->stats.weight_bytes);
        format_bytes(b3, sizeof(b3), (double)r->stats.workspace_bytes);
        fprintf(f, "  activations (arena) %s, weights %s, workspace %s\n", b1, b2, b3);
        if (r->stats.stream_bytes) {
            format_bytes(b1, sizeof(b1), (double)r->stats.stream_bytes);
            fprintf(f, "  streamed weights: %s copied from host memory on every run (min-memory; --set "
                    "memory.stream_weights=0 keeps them on the device)\n", b1);
        }
        if (r->stats.n_inplace || r->stats.n_views)
            fprintf(f, "  shared memory: %d outputs written in place, %d views (no copy; --set memory.inplace=0 turns "
                    "both off)\n", r->stats.n_inplace, r->stats.n_views);
        if (r->stats.device_peak_bytes) {
            format_bytes(b1, sizeof(b1), (double)r->stats.device_peak_bytes);
            fprintf(f, "  peak device memory %s; device graphs %d of %d segments\n", b1, r->stats.n_graphs,
                    r->stats.n_segments);
        }
    }
    format_bytes(b4, sizeof(b4), (double)r->peak_rss_bytes);
    fprintf(f, "  peak RSS %s\n", b4);

    fprintf(f, "\nOutputs:\n");
    for (int i = 0; i < r->n_outputs; i++) {
        const netrun_tensor_view *v = &r->outputs[i];
        char shape[256];
        cli_format_dims(shape, sizeof(shape), v->rank, v->dims);
        fprintf(f, "  %s  %s %s", str_or(v->name, "?"), netrun_dtype_name(v->dtype), shape);
        size_t n = view_count(v);
        if (n > 0) {
            fputs(" = [", f);
            size_t show = n < SHOW_VALUES_TEXT ? n : SHOW_VALUES_TEXT;
            for (size_t k = 0; k < show; k++) {
                char val[64];
                format_value(val, sizeof(val), v, k);
                fprintf(f, "%s%s", k ? ", " : "", val);
            }
            fprintf(f, "%s]", n > show ? ", ..." : "");
        }
        fputc('\n', f);
        if (r->output_files)
            fprintf(f, "    written to %s\n", r->output_files[i]);
    }

    if (r->checks) {
        fprintf(f, "\nCheck against %s (rtol %g, atol %g):\n", o->check_dir, o->rtol, o->atol);
        for (int i = 0; i < r->n_outputs; i++) {
            const cli_check *c = &r->checks[i];
            const char *nm = str_or(r->outputs[i].name, "?");
            if (c->missing)
                fprintf(f, "  %s: MISSING reference\n", nm);
            else if (c->problem[0])
                fprintf(f, "  %s: MISMATCH (%s)\n", nm, c->problem);
            else
                fprintf(f, "  %s: max abs err %.3g, max rel err %.3g: %s", nm, c->max_abs, c->max_rel,
                        c->mismatch ? "MISMATCH" : "ok");
            if (!c->missing && !c->problem[0]) {
                if (c->mismatch)
                    fprintf(f, " (%zu of %zu values outside tolerance)", c->n_bad, c->n_total);
                fputc('\n', f);
            }
        }
    }
}

/* ---- JSON ---- */

static void json_info_shape(cli_json *j, const char *key, const netrun_tensor_info *ti)
{
    if (ti->rank < 0) {
        json_null(j, key);
        return;
    }
    json_begin_inline_array(j, key);
    for (int d = 0; d < ti->rank; d++) {
        const char *sym = ti->dim_names ? ti->dim_names[d] : NULL;
        if (sym)
            json_string(j, NULL, sym);
        else if (ti->dims && ti->dims[d] >= 0)
            json_int(j, NULL, ti->dims[d]);
        else
            json_null(j, NULL);
    }
    json_end_array(j);
}

static void json_dims(cli_json *j, const char *key, int rank, const int64_t *dims)
{
    json_begin_inline_array(j, key);
    for (int d = 0; d < rank; d++)
        json_int(j, NULL, dims[d]);
    json_end_array(j);
}

static void json_value(cli_json *j, const netrun_tensor_view *v, size_t i)
{
    if (v->dtype == NETRUN_DTYPE_INT64) {
        int64_t x;
        memcpy(&x, (const char *)v->data + i * 8, 8);
        json_int(j, NULL, x);
    } else if (v->dtype == NETRUN_DTYPE_UINT64) {
        uint64_t x;
        memcpy(&x, (const char *)v->data + i * 8, 8);
        json_uint(j, NULL, x);
    } else if (v->dtype == NETRUN_DTYPE_BOOL) {
        json_bool(j, NULL, cli_element(v->dtype, v->data, i) != 0);
    } else {
        json_number(j, NULL, cli_element(v->dtype, v->data, i));
    }
}

static const char *precision_name(netrun_precision p)
{
    return p == NETRUN_PRECISION_FP16 ? "fp16" : p == NETRUN_PRECISION_TF32 ? "tf32" : "fp32";
}

static const char *workspace_name(netrun_workspace_policy p)
{
    return p == NETRUN_WORKSPACE_FASTEST ? "fastest" : p == NETRUN_WORKSPACE_MIN_MEMORY ? "min-memory" : "balanced";
}

static void json_report(cli_json *j, const cli_result *r)
{
    const cli_opts *o = r->opts;
    json_begin_object(j, NULL);
    json_string(j, "netrun_version", netrun_version());

    json_begin_object(j, "model");
    json_string(j, "path", o->model_path);
    json_int(j, "node_count", netrun_model_node_count(r->model));
    netrun_model_metadata md;
    if (netrun_model_get_metadata(r->model, &md) == NETRUN_OK) {
        json_string(j, "producer_name", md.producer_name);
        json_string(j, "producer_version", md.producer_version);
        json_string(j, "domain", md.domain);
        json_int(j, "model_version", md.model_version);
        json_int(j, "ir_version", md.ir_version);
        json_string(j, "doc_string", md.doc_string);
        json_string(j, "graph_name", md.graph_name);
        json_string(j, "graph_doc_string", md.graph_doc_string);
    }
    json_begin_object(j, "opsets"); /* {"": 17, "ai.onnx.ml": 3} */
    for (int i = 0; i < netrun_model_opset_count(r->model); i++) {
        const char *dom;
        int64_t ver;
        if (netrun_model_opset_get(r->model, i, &dom, &ver) == NETRUN_OK)
            json_int(j, dom, ver);
    }
    json_end_object(j);
    json_begin_object(j, "metadata_props");
    for (int i = 0; i < netrun_model_metadata_prop_count(r->model); i++) {
        const char *k, *v;
        if (netrun_model_metadata_prop_get(r->model, i, &k, &v) == NETRUN_OK)
            json_string(j, k, v);
    }
    json_end_object(j);
    for (int out = 0; out < 2; out++) {
        json_begin_array(j, out ? "outputs" : "inputs");
        int n = out ? netrun_model_output_count(r->model) : netrun_model_input_count(r->model);
        for (int i = 0; i < n; i++) {
            netrun_tensor_info ti;
            if ((out ? netrun_model_output_info(r->model, i, &ti) : netrun_model_input_info(r->model, i, &ti)) !=
                NETRUN_OK)
                continue;
            json_begin_object(j, NULL);
            json_string(j, "name", ti.name);
            json_string(j, "dtype", netrun_dtype_name(ti.dtype));
            json_info_shape(j, "shape", &ti);
            if (!out && i < r->n_inputs) {
                json_dims(j, "run_shape", r->inputs[i].rank, r->inputs[i].dims);
                json_string(j, "source", r->inputs[i].source ? r->inputs[i].source : "random");
            } else if (out && i < r->n_outputs) {
                json_dims(j, "run_shape", r->outputs[i].rank, r->outputs[i].dims);
            }
            json_end_object(j);
        }
        json_end_array(j);
    }
    json_end_object(j);

    json_begin_object(j, "options");
    json_string(j, "precision", precision_name(o->precision_set ? o->precision : NETRUN_PRECISION_FP32));
    json_int(j, "threads", o->threads < 0 ? 0 : o->threads);
    json_int(j, "device", o->device < 0 ? 0 : o->device);
    json_string(j, "workspace_policy", workspace_name(o->workspace_set ? o->workspace_policy
                                                                      : NETRUN_WORKSPACE_BALANCED));
    json_uint(j, "workspace_limit_bytes", o->workspace_limit);
    json_bool(j, "strict", o->strict);
    json_int(j, "warmup", o->warmup);
    json_int(j, "iterations", o->iterations);
    if (o->duration_s > 0)
        json_number(j, "duration_s", o->duration_s);
    else
        json_null(j, "duration_s");
    if (o->batch > 0)
        json_int(j, "batch", o->batch);
    else
        json_null(j, "batch");
    json_uint(j, "seed", o->seed);
    json_end_object(j);

    /* What was requested: the --backend list, or the default list expanded. */
    json_begin_inline_array(j, "backends");
    {
        const char *p = r->requested;
        while (*p) {
            const char *c = strchr(p, ',');
            size_t len = c ? (size_t)(c - p) : strlen(p);
            char nm[128];
            snprintf(nm, sizeof(nm), "%.*s", (int)(len < sizeof(nm) ? len : sizeof(nm) - 1), p);
            json_string(j, NULL, nm);
            if (!c)
                break;
            p = c + 1;
        }
    }
    json_end_array(j);
    json_bool(j, "backends_default", o->backends == NULL);
    json_string(j, "primary_backend", r->primary_backend);

    backend_group groups[MAX_BACKEND_GROUPS];
    int ng = group_nodes(r->session, groups, MAX_BACKEND_GROUPS);
    json_begin_object(j, "placement");
    for (int k = 0; k < ng; k++)
        json_int(j, groups[k].name, groups[k].count);
    json_end_object(j);

    json_begin_array(j, "nodes");
    int nodes = netrun_session_node_count(r->session);
    for (int i = 0; i < nodes; i++) {
        netrun_node_info ni;
        if (netrun_session_node_info(r->session, i, &ni) != NETRUN_OK)
            continue;
        json_begin_object(j, NULL);
        json_string(j, "name", ni.name);
        json_string(j, "op", ni.op_type);
        json_string(j, "backend", ni.backend);
        json_string(j, "reason", ni.reason);
        json_string(j, "kernel", ni.kernel ? ni.kernel : "");
        json_uint(j, "workspace_bytes", ni.workspace_bytes);
        json_end_object(j);
    }
    json_end_array(j);

    json_begin_object(j, "transfers");
    json_int(j, "copies", r->have_stats ? r->stats.n_copies : 0);
    json_uint(j, "copy_bytes_per_run", r->have_stats ? r->stats.copy_bytes : 0);
    json_uint(j, "h2d_bytes_per_run", r->have_stats ? r->stats.h2d_bytes : 0); /* host <-> device (PCIe) */
    json_uint(j, "d2h_bytes_per_run", r->have_stats ? r->stats.d2h_bytes : 0);
    json_int(j, "folded_nodes", r->have_stats ? r->stats.n_folded : 0);
    json_end_object(j);

    json_begin_object(j, "timings");
    json_number(j, "load_ms", r->load_ms);
    json_number(j, "prepare_ms", r->prepare_ms);
    if (r->have_stats) {
        json_number(j, "init_ms", r->stats.init_ms);
        json_number(j, "library_prepare_ms", r->stats.prepare_ms);
        json_number(j, "library_first_run_ms", r->stats.first_run_ms);
    } else {
        json_null(j, "init_ms");
    }
    json_number(j, "first_run_ms", r->first_run_ms);
    json_int(j, "warmup_runs", o->warmup);
    json_int(j, "timed_runs", r->timed_runs);
    if (r->have_stats) {
        json_int(j, "prepares", (long long)r->stats.prepares);
        json_string(j, "prepare_note", r->prepare_note);
    }
    json_bool(j, "profiled", r->profile != NULL);
    if (r->latency.valid) {
        json_begin_object(j, "latency_ms");
        json_number(j, "min", r->latency.min);
        json_number(j, "median", r->latency.median);
        json_number(j, "p90", r->latency.p90);
        json_number(j, "p99", r->latency.p99);
        json_number(j, "mean", r->latency.mean);
        json_end_object(j);
        json_number(j, "throughput_per_s", r->latency.throughput_per_s);
    } else {
        json_null(j, "latency_ms");
        json_null(j, "throughput_per_s");
    }
    json_end_object(j);

    json_begin_object(j, "memory");
    if (r->have_stats) {
        json_uint(j, "arena_bytes", r->stats.arena_bytes);
        json_uint(j, "weight_bytes", r->stats.weight_bytes);
        json_uint(j, "workspace_bytes", r->stats.workspace_bytes);
        json_uint(j, "device_peak_bytes", r->stats.device_peak_bytes);
        json_uint(j, "device_graphs", (uint64_t)r->stats.n_graphs);
        json_uint(j, "outputs_in_place", (uint64_t)r->stats.n_inplace);
        json_uint(j, "views", (uint64_t)r->stats.n_views);
        json_uint(j, "stream_bytes", r->stats.stream_bytes);
        json_int(j, "micro_batch", r->stats.micro_batch);
    } else {
        json_null(j, "arena_bytes");
        json_null(j, "weight_bytes");
        json_null(j, "workspace_bytes");
    }
    json_uint(j, "peak_rss_bytes", r->peak_rss_bytes);
    json_end_object(j);

    json_begin_array(j, "outputs");
    for (int i = 0; i < r->n_outputs; i++) {
        const netrun_tensor_view *v = &r->outputs[i];
        json_begin_object(j, NULL);
        json_string(j, "name", v->name);
        json_string(j, "dtype", netrun_dtype_name(v->dtype));
        json_dims(j, "shape", v->rank, v->dims);
        json_begin_inline_array(j, "values");
        size_t n = view_count(v);
        for (size_t k = 0; k < n && k < SHOW_VALUES_JSON; k++)
            json_value(j, v, k);
        json_end_array(j);
        json_bool(j, "values_truncated", n > SHOW_VALUES_JSON);
        if (r->output_files)
            json_string(j, "file", r->output_files[i]);
        json_end_object(j);
    }
    json_end_array(j);

    if (r->profile)
        cli_profile_json(j, r->session, r->profile);

    if (r->checks) {
        int all_ok = 1;
        json_begin_object(j, "check");
        json_string(j, "dir", o->check_dir);
        json_number(j, "rtol", o->rtol);
        json_number(j, "atol", o->atol);
        json_begin_array(j, "outputs");
        for (int i = 0; i < r->n_outputs; i++) {
            const cli_check *c = &r->checks[i];
            all_ok &= !c->missing && !c->mismatch;
            json_begin_object(j, NULL);
            json_string(j, "name", r->outputs[i].name);
            json_string(j, "status", c->missing ? "missing" : c->mismatch ? "mismatch" : "ok");
            json_string(j, "reference", c->missing ? NULL : c->reference);
            if (c->problem[0])
                json_string(j, "problem", c->problem);
            if (!c->missing) {
                json_number(j, "max_abs_err", c->max_abs);
                json_number(j, "max_rel_err", c->max_rel);
                json_uint(j, "bad_values", c->n_bad);
                json_uint(j, "values", c->n_total);
            }
            json_end_object(j);
        }
        json_end_array(j);
        json_bool(j, "passed", all_ok);
        json_end_object(j);
    }
    json_end_object(j);
}

int cli_report_json(const char *path, const cli_result *r)
{
    int to_stdout = strcmp(path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(path, "w");
    if (!f) {
        cli_error("cannot write the JSON report to %s: %s", path, strerror(errno));
        return -1;
    }
    cli_json j;
    json_init(&j, f);
    json_report(&j, r);
    int bad = j.failed || ferror(f);
    if (to_stdout)
        bad |= fflush(f) != 0;
    else
        bad |= fclose(f) != 0;
    if (bad) {
        cli_error("writing the JSON report to %s failed", path);
        return -1;
    }
    return 0;
}
