/* --compare A,B: the same inputs through two placements (backend lists A and B, both with
 * debug.keep_values=1); per-output max abs/rel error, then the first node, in A's execution order, whose
 * outputs differ beyond --rtol/--atol. B is the reference: relative errors are relative to B's values. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct side {
    char list[512];      /* backend list with ',' separators */
    netrun_session *s;
    cli_input *inputs;
    int n_inputs;
} side;

/* One compared value. */
typedef struct cmp_value {
    int node;            /* index in A's node list, -1 for a graph output */
    const char *value;
    cli_check c;
    int unreadable;
    char why[256];
} cmp_value;

static int run_side(const cli_opts *o, netrun_model *m, netrun_options *no, side *sd, int quiet_feed)
{
    netrun_status st = netrun_options_set_backends(no, sd->list);
    if (st == NETRUN_OK)
        st = netrun_options_set(no, "debug.keep_values", "1");
    if (st != NETRUN_OK) {
        cli_error("--compare: backend list '%s': %s", sd->list, netrun_last_error());
        return CLI_EXIT_USAGE;
    }
    if ((st = netrun_session_create(m, no, &sd->s)) != NETRUN_OK) {
        sd->s = NULL;
        cli_error("--compare: cannot create a session on '%s': %s", sd->list, netrun_last_error());
        return st == NETRUN_ERR_INVALID_ARGUMENT ? CLI_EXIT_USAGE : CLI_EXIT_RUNTIME;
    }
    cli_opts fo = *o;
    fo.quiet = o->quiet || quiet_feed; /* the notes about default dims were said once already */
    int rc = cli_feed_inputs(&fo, m, sd->s, &sd->inputs, &sd->n_inputs);
    if (rc)
        return rc;
    if ((st = netrun_session_run(sd->s)) != NETRUN_OK) {
        cli_error("--compare: run on '%s' failed: %s", sd->list, netrun_session_error(sd->s));
        return CLI_EXIT_RUNTIME;
    }
    return 0;
}

/* Node of session s with this name and op, or -1. */
static int find_node(netrun_session *s, const char *name, const char *op)
{
    int n = netrun_session_node_count(s);
    for (int i = 0; i < n; i++) {
        netrun_node_info ni;
        if (netrun_session_node_info(s, i, &ni) == NETRUN_OK && ni.name && name && !strcmp(ni.name, name) &&
            ni.op_type && op && !strcmp(ni.op_type, op))
            return i;
    }
    return -1;
}

static void compare_value(const cli_opts *o, side *a, side *b, const char *name, cmp_value *cv)
{
    netrun_tensor_view va, vb;
    memset(&cv->c, 0, sizeof(cv->c));
    cv->value = name;
    if (netrun_session_value(a->s, name, &va) != NETRUN_OK) {
        cv->unreadable = 1;
        snprintf(cv->why, sizeof(cv->why), "A: %s", netrun_session_error(a->s));
        return;
    }
    if (netrun_session_value(b->s, name, &vb) != NETRUN_OK) {
        cv->unreadable = 1;
        snprintf(cv->why, sizeof(cv->why), "B: %s", netrun_session_error(b->s));
        return;
    }
    cli_compare_views(o->rtol, o->atol, &va, &vb, &cv->c);
}

static void print_check(FILE *f, const char *label, const cmp_value *cv)
{
    if (cv->unreadable)
        fprintf(f, "  %-32s not compared (%s)\n", label, cv->why);
    else if (cv->c.problem[0])
        fprintf(f, "  %-32s DIFFERENT (%s)\n", label, cv->c.problem);
    else
        fprintf(f, "  %-32s max abs err %-10.3g max rel err %-10.3g %s (%zu of %zu values outside)\n", label,
                cv->c.max_abs, cv->c.max_rel, cv->c.mismatch ? "DIFFERENT" : "ok", cv->c.n_bad, cv->c.n_total);
}

static void json_check(cli_json *j, const cmp_value *cv)
{
    json_string(j, "value", cv->value);
    json_string(j, "status", cv->unreadable ? "not_compared" : cv->c.mismatch ? "different" : "ok");
    if (cv->unreadable) {
        json_string(j, "reason", cv->why);
        return;
    }
    if (cv->c.problem[0])
        json_string(j, "problem", cv->c.problem);
    json_number(j, "max_abs_err", cv->c.max_abs);
    json_number(j, "max_rel_err", cv->c.max_rel);
    json_uint(j, "bad_values", cv->c.n_bad);
    json_uint(j, "values", cv->c.n_total);
}

int cli_compare(const cli_opts *o, const netrun_options *base_a, const netrun_options *base_b)
{
    side sd[2];
    memset(sd, 0, sizeof(sd));
    const char *comma = strchr(o->compare, ',');
    snprintf(sd[0].list, sizeof(sd[0].list), "%.*s", (int)(comma - o->compare), o->compare);
    snprintf(sd[1].list, sizeof(sd[1].list), "%s", comma + 1);
    for (int k = 0; k < 2; k++)
        for (char *c = sd[k].list; *c; c++)
            if (*c == '+')
                *c = ',';
    netrun_model *m = NULL;
    cmp_value *outs = NULL, *vals = NULL;
    int n_vals = 0, rc = cli_load_model(o, &m, NULL);
    if (rc)
        return rc;
    /* Options have no copy call: the caller made two with the common settings. */
    if ((rc = run_side(o, m, (netrun_options *)base_a, &sd[0], 0)) != 0 ||
        (rc = run_side(o, m, (netrun_options *)base_b, &sd[1], 1)) != 0)
        goto done;

    int n_out = netrun_session_output_count(sd[0].s);
    int nodes = netrun_session_node_count(sd[0].s);
    outs = calloc((size_t)(n_out > 0 ? n_out : 0) + 1, sizeof(*outs));
    int cap = 16;
    vals = calloc((size_t)cap, sizeof(*vals));
    if (!outs || !vals) {
        cli_error("out of memory");
        rc = CLI_EXIT_RUNTIME;
        goto done;
    }
    int out_bad = 0;
    for (int i = 0; i < n_out; i++) {
        netrun_tensor_info ti;
        if (netrun_session_output_info(sd[0].s, i, &ti) != NETRUN_OK || !ti.name)
            continue;
        outs[i].node = -1;
        compare_value(o, &sd[0], &sd[1], ti.name, &outs[i]);
        out_bad += outs[i].c.mismatch || outs[i].unreadable;
    }
    /* Walk A's nodes in execution order: the first whose outputs diverge is where to look. */
    int first_bad = -1, n_bad_nodes = 0, n_unread = 0;
    for (int i = 0; i < nodes; i++) {
        int no = netrun_session_node_io(sd[0].s, i, 1, -1, NULL);
        int node_bad = 0;
        for (int k = 0; k < no; k++) {
            const char *v = NULL;
            if (netrun_session_node_io(sd[0].s, i, 1, k, &v) < 0 || !v || !v[0])
                continue;
            if (n_vals == cap) {
                cmp_value *nv = realloc(vals, (size_t)cap * 2 * sizeof(*nv));
                if (!nv) {
                    cli_error("out of memory");
                    rc = CLI_EXIT_RUNTIME;
                    goto done;
                }
                vals = nv;
                cap *= 2;
            }
            cmp_value *cv = &vals[n_vals++];
            memset(cv, 0, sizeof(*cv));
            cv->node = i;
            compare_value(o, &sd[0], &sd[1], v, cv);
            n_unread += cv->unreadable;
            if (cv->c.mismatch && !node_bad) {
                node_bad = 1;
                n_bad_nodes++;
                if (first_bad < 0)
                    first_bad = n_vals - 1;
            }
        }
    }

    FILE *f = stdout;
    int json_to_stdout = o->json_path && !strcmp(o->json_path, "-");
    if (!o->quiet && !json_to_stdout) {
        const char *B = cli_color(o->color_out, "\033[1m"), *N = cli_color(o->color_out, "\033[0m");
        fprintf(f, "%sCompare%s %s: A = [%s], B = [%s] (reference), rtol %g, atol %g\n", B, N, o->model_path,
                sd[0].list, sd[1].list, o->rtol, o->atol);
        for (int k = 0; k < 2; k++) {
            fprintf(f, "  placement %c:", k ? 'B' : 'A');
            int n = netrun_session_node_count(sd[k].s);
            /* Counts per backend, in order of first appearance. */
            for (int i = 0; i < n; i++) {
                netrun_node_info ni, nj;
                if (netrun_session_node_info(sd[k].s, i, &ni) != NETRUN_OK)
                    continue;
                int seen = 0, count = 0;
                for (int p = 0; p < n; p++)
                    if (netrun_session_node_info(sd[k].s, p, &nj) == NETRUN_OK && !strcmp(nj.backend, ni.backend)) {
                        if (p < i)
                            seen = 1;
                        count++;
                    }
                if (!seen)
                    fprintf(f, " %s %d", ni.backend, count);
            }
            fputc('\n', f);
        }
        fprintf(f, "\n%sOutputs:%s\n", B, N);
        for (int i = 0; i < n_out; i++)
            if (outs[i].value)
                print_check(f, outs[i].value, &outs[i]);
        fprintf(f, "\n%sIntermediate values:%s %d compared over %d nodes, %d node%s diverged", B, N, n_vals - n_unread,
                nodes, n_bad_nodes, n_bad_nodes == 1 ? "" : "s");
        if (n_unread)
            fprintf(f, ", %d not compared", n_unread);
        fputc('\n', f);
        if (first_bad >= 0) {
            const cmp_value *cv = &vals[first_bad];
            netrun_node_info na, nb;
            netrun_session_node_info(sd[0].s, cv->node, &na);
            int ib = find_node(sd[1].s, na.name, na.op_type);
            int have_b = ib >= 0 && netrun_session_node_info(sd[1].s, ib, &nb) == NETRUN_OK;
            fprintf(f, "  first divergent node: #%d %s (%s) on %s in A, %s in B\n", cv->node, na.name, na.op_type,
                    na.backend, have_b ? nb.backend : "?");
            print_check(f, cv->value, cv);
        } else {
            fprintf(f, "  no node diverged beyond tolerance\n");
        }
        if (o->verbose) {
            fprintf(f, "\n  %-6s %-28s %-14s %-28s %s\n", "NODE", "NAME", "OP", "VALUE", "ERRORS");
            for (int k = 0; k < n_vals; k++) {
                netrun_node_info na;
                if (netrun_session_node_info(sd[0].s, vals[k].node, &na) != NETRUN_OK)
                    continue;
                char lab[128];
                snprintf(lab, sizeof(lab), "#%-5d %-28.28s %-14.14s %.28s", vals[k].node, na.name, na.op_type,
                         vals[k].value);
                print_check(f, lab, &vals[k]);
            }
        }
    }
    if (o->json_path) {
        FILE *jf = json_to_stdout ? stdout : fopen(o->json_path, "w");
        if (!jf) {
            cli_error("cannot write the JSON report to %s: %s", o->json_path, strerror(errno));
            rc = CLI_EXIT_RUNTIME;
            goto done;
        }
        cli_json j;
        json_init(&j, jf);
        json_begin_object(&j, NULL);
        json_string(&j, "netrun_version", netrun_version());
        json_begin_object(&j, "compare");
        json_string(&j, "model", o->model_path);
        json_string(&j, "a", sd[0].list);
        json_string(&j, "b", sd[1].list);
        json_number(&j, "rtol", o->rtol);
        json_number(&j, "atol", o->atol);
        json_begin_array(&j, "outputs");
        for (int i = 0; i < n_out; i++) {
            if (!outs[i].value)
                continue;
            json_begin_object(&j, NULL);
            json_check(&j, &outs[i]);
            json_end_object(&j);
        }
        json_end_array(&j);
        json_int(&j, "values_compared", n_vals - n_unread);
        json_int(&j, "nodes_diverged", n_bad_nodes);
        if (first_bad >= 0) {
            netrun_node_info na;
            netrun_session_node_info(sd[0].s, vals[first_bad].node, &na);
            json_begin_object(&j, "first_divergent_node");
            json_int(&j, "index", vals[first_bad].node);
            json_string(&j, "name", na.name);
            json_string(&j, "op", na.op_type);
            json_string(&j, "backend_a", na.backend);
            json_check(&j, &vals[first_bad]);
            json_end_object(&j);
        } else {
            json_null(&j, "first_divergent_node");
        }
        json_bool(&j, "outputs_match", out_bad == 0);
        json_end_object(&j);
        json_end_object(&j);
        int bad = j.failed || ferror(jf);
        bad |= json_to_stdout ? fflush(jf) != 0 : fclose(jf) != 0;
        if (bad) {
            cli_error("writing the JSON report to %s failed", o->json_path);
            rc = CLI_EXIT_RUNTIME;
            goto done;
        }
    }
    if (out_bad)
        cli_error("--compare: %d output%s differ between [%s] and [%s]", out_bad, out_bad == 1 ? "" : "s",
                  sd[0].list, sd[1].list);
    rc = out_bad ? CLI_EXIT_MISMATCH : CLI_EXIT_OK;
done:
    free(outs);
    free(vals);
    for (int k = 0; k < 2; k++) {
        free(sd[k].inputs);
        netrun_session_destroy(sd[k].s);
    }
    netrun_model_release(m);
    return rc;
}
