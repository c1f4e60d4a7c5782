/* --support-matrix (every op the runtime knows x every backend found, from the plugins' own tables) and
 * --explain (per-node placement with reasons). Nothing here is hand-maintained: it all comes from the API. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct sm_cell {
    uint64_t dtypes;
    char *constraints; /* malloc'ed; rows of one op are joined with "; " */
    int listed;
} sm_cell;

typedef struct sm_op {
    const char *domain, *op;
    int known;         /* the runtime knows it (netrun_op_get) */
} sm_op;

typedef struct sm {
    sm_op *ops;
    int n_ops, cap_ops;
    int n_be;
    netrun_backend_info *be;
    sm_cell *cells;    /* n_ops x n_be, built after the op list is complete */
} sm;

static const char *short_dtype(int t)
{
    switch (t) {
    case NETRUN_DTYPE_FLOAT: return "f32";
    case NETRUN_DTYPE_DOUBLE: return "f64";
    case NETRUN_DTYPE_FLOAT16: return "f16";
    case NETRUN_DTYPE_BFLOAT16: return "bf16";
    case NETRUN_DTYPE_INT8: return "i8";
    case NETRUN_DTYPE_UINT8: return "u8";
    case NETRUN_DTYPE_INT16: return "i16";
    case NETRUN_DTYPE_UINT16: return "u16";
    case NETRUN_DTYPE_INT32: return "i32";
    case NETRUN_DTYPE_UINT32: return "u32";
    case NETRUN_DTYPE_INT64: return "i64";
    case NETRUN_DTYPE_UINT64: return "u64";
    case NETRUN_DTYPE_BOOL: return "bool";
    case NETRUN_DTYPE_STRING: return "str";
    default: return netrun_dtype_name((netrun_dtype)t);
    }
}

/* "f32,f16,i64" (or full names); "-" when none. */
static void dtype_list(char *buf, size_t size, uint64_t mask, int full)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int t = 1; t < 64 && used < size; t++) {
        if (!(mask & ((uint64_t)1 << t)))
            continue;
        const char *nm = full ? netrun_dtype_name((netrun_dtype)t) : short_dtype(t);
        int w = snprintf(buf + used, size - used, "%s%s", used ? (full ? ", " : ",") : "", nm ? nm : "?");
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (used >= size && size > 4)
        memcpy(buf + size - 4, "...", 4);
    if (!buf[0])
        snprintf(buf, size, "-");
}

static int find_op(const sm *m, const char *domain, const char *op)
{
    for (int i = 0; i < m->n_ops; i++)
        if (strcmp(m->ops[i].op, op) == 0 && strcmp(m->ops[i].domain, domain) == 0)
            return i;
    return -1;
}

static int add_op(sm *m, const char *domain, const char *op, int known)
{
    if (m->n_ops == m->cap_ops) {
        int cap = m->cap_ops ? m->cap_ops * 2 : 256;
        sm_op *n = realloc(m->ops, (size_t)cap * sizeof(*n));
        if (!n)
            return -1;
        m->ops = n;
        m->cap_ops = cap;
    }
    m->ops[m->n_ops].domain = domain ? domain : "";
    m->ops[m->n_ops].op = op;
    m->ops[m->n_ops].known = known;
    return m->n_ops++;
}

static int cmp_op(const void *a, const void *b)
{
    const sm_op *x = a, *y = b;
    int c = strcmp(x->domain, y->domain);
    return c ? c : strcmp(x->op, y->op);
}

static void sm_free(sm *m)
{
    if (m->cells)
        for (int i = 0; i < m->n_ops * m->n_be; i++)
            free(m->cells[i].constraints);
    free(m->cells);
    free(m->ops);
    free(m->be);
    memset(m, 0, sizeof(*m));
}

/* Build the matrix. Returns 0, or -1 after a message. */
static int sm_build(sm *m)
{
    memset(m, 0, sizeof(*m));
    int n = netrun_op_count();
    for (int i = 0; i < n; i++) {
        const char *dom = NULL, *op = NULL;
        if (netrun_op_get(i, &dom, &op) != NETRUN_OK || !op)
            continue;
        if (find_op(m, dom ? dom : "", op) < 0 && add_op(m, dom, op, 1) < 0)
            goto oom;
    }
    m->n_be = netrun_backend_count();
    if (m->n_be < 0)
        m->n_be = 0;
    m->be = calloc((size_t)m->n_be + 1, sizeof(*m->be));
    if (!m->be)
        goto oom;
    /* Ops a plugin lists but the runtime does not know still get a row (marked), so nothing is hidden. */
    for (int b = 0; b < m->n_be; b++) {
        if (netrun_backend_get_info(b, &m->be[b]) != NETRUN_OK)
            m->be[b].name = "?";
        int rows = netrun_backend_op_count(b);
        for (int r = 0; r < rows; r++) {
            netrun_op_support_info si;
            if (netrun_backend_op_get(b, r, &si) != NETRUN_OK || !si.op_type)
                continue;
            if (find_op(m, si.domain ? si.domain : "", si.op_type) < 0 && add_op(m, si.domain, si.op_type, 0) < 0)
                goto oom;
        }
    }
    qsort(m->ops, (size_t)m->n_ops, sizeof(*m->ops), cmp_op);
    m->cells = calloc((size_t)m->n_ops * (size_t)(m->n_be ? m->n_be : 1), sizeof(*m->cells));
    if (!m->cells)
        goto oom;
    for (int b = 0; b < m->n_be; b++) {
        int rows = netrun_backend_op_count(b);
        for (int r = 0; r < rows; r++) {
            netrun_op_support_info si;
            if (netrun_backend_op_get(b, r, &si) != NETRUN_OK || !si.op_type)
                continue;
            int i = find_op(m, si.domain ? si.domain : "", si.op_type);
            if (i < 0)
                continue;
            sm_cell *c = &m->cells[(size_t)i * (size_t)m->n_be + (size_t)b];
            c->listed = 1;
            c->dtypes |= si.dtypes;
            if (si.constraints && si.constraints[0]) {
                size_t old = c->constraints ? strlen(c->constraints) : 0, add = strlen(si.constraints);
                if (c->constraints && strstr(c->constraints, si.constraints))
                    continue;
                char *nc = realloc(c->constraints, old + add + 3);
                if (!nc)
                    goto oom;
                if (old)
                    memcpy(nc + old, "; ", 2), old += 2;
                memcpy(nc + old, si.constraints, add + 1);
                c->constraints = nc;
            }
        }
    }
    return 0;
oom:
    sm_free(m);
    cli_error("out of memory building the support matrix");
    return -1;
}

static const sm_cell *cell(const sm *m, int op, int be)
{
    return &m->cells[(size_t)op * (size_t)m->n_be + (size_t)be];
}

static void op_label(char *buf, size_t size, const sm_op *op)
{
    if (op->domain[0])
        snprintf(buf, size, "%s:%s%s", op->domain, op->op, op->known ? "" : " *");
    else
        snprintf(buf, size, "%s%s", op->op, op->known ? "" : " *");
}

/* CSV field: quoted when it holds a separator, quote or newline (RFC 4180). */
static void csv_field(FILE *f, const char *s)
{
    if (!s)
        s = "";
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* Markdown cell: '|' escaped, newlines as spaces. */
static void md_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '|')
            fputs("\\|", f);
        else if (*s == '\n' || *s == '\r')
            fputc(' ', f);
        else
            fputc(*s, f);
    }
}

int cli_support_matrix(FILE *f, const char *format)
{
    sm m;
    if (sm_build(&m) != 0)
        return CLI_EXIT_RUNTIME;
    int known = 0;
    for (int i = 0; i < m.n_ops; i++)
        known += m.ops[i].known;
    char dts[512], label[256];
    if (!strcmp(format, "csv")) {
        fputs("domain,op,known_to_runtime,backend,backend_available,supported,dtypes,constraints\n", f);
        for (int i = 0; i < m.n_ops; i++)
            for (int b = 0; b < m.n_be; b++) {
                const sm_cell *c = cell(&m, i, b);
                dtype_list(dts, sizeof(dts), c->dtypes, 1);
                csv_field(f, m.ops[i].domain);
                fputc(',', f);
                csv_field(f, m.ops[i].op);
                fprintf(f, ",%d,", m.ops[i].known);
                csv_field(f, m.be[b].name);
                fprintf(f, ",%d,%d,", m.be[b].available, c->listed);
                csv_field(f, c->listed ? dts : "");
                fputc(',', f);
                csv_field(f, c->constraints);
                fputc('\n', f);
            }
    } else if (!strcmp(format, "md")) {
        fprintf(f, "%d ops known to the runtime; backends found:", known);
        for (int b = 0; b < m.n_be; b++)
            fprintf(f, "%s `%s`%s", b ? "," : "", m.be[b].name, m.be[b].available ? "" : " (unavailable here)");
        fprintf(f, ".\nEach cell lists the element types the backend's own table states, then its limits; "
                   "ops marked * are listed by a plugin but unknown to the runtime.\n\n| Op |");
        for (int b = 0; b < m.n_be; b++)
            fprintf(f, " %s |", m.be[b].name);
        fputs("\n|---|", f);
        for (int b = 0; b < m.n_be; b++)
            fputs("---|", f);
        fputc('\n', f);
        for (int i = 0; i < m.n_ops; i++) {
            op_label(label, sizeof(label), &m.ops[i]);
            fputs("| ", f);
            md_text(f, label);
            fputs(" |", f);
            for (int b = 0; b < m.n_be; b++) {
                const sm_cell *c = cell(&m, i, b);
                fputc(' ', f);
                if (c->listed) {
                    dtype_list(dts, sizeof(dts), c->dtypes, 0);
                    md_text(f, dts);
                    if (c->constraints) {
                        fputs("<br>", f);
                        md_text(f, c->constraints);
                    }
                } else {
                    fputs("—", f);
                }
                fputs(" |", f);
            }
            fputc('\n', f);
        }
    } else {
        fprintf(f, "Support matrix: %d ops known to the runtime x %d backend%s found\n", known, m.n_be,
                m.n_be == 1 ? "" : "s");
        for (int b = 0; b < m.n_be; b++) {
            int listed = 0;
            for (int i = 0; i < m.n_ops; i++)
                listed += cell(&m, i, b)->listed;
            if (m.be[b].available)
                fprintf(f, "  %-10s %4d ops listed\n", m.be[b].name, listed);
            else
                fprintf(f, "  %-10s %4d ops listed (unavailable: %s)\n", m.be[b].name, listed,
                        m.be[b].reason ? m.be[b].reason : "probe failed");
        }
        fprintf(f, "Cells: element types the backend's table states ('-' = not listed); * = unknown to the "
                   "runtime.\n\n");
        int w = 28; /* the op column fits the longest name (plugins' ops: "com.microsoft:SkipLayerNormalization") */
        for (int i = 0; i < m.n_ops; i++) {
            op_label(label, sizeof(label), &m.ops[i]);
            if ((int)strlen(label) > w)
                w = (int)strlen(label);
        }
        fprintf(f, "%-*s", w, "OP");
        for (int b = 0; b < m.n_be; b++)
            fprintf(f, " %-34s", m.be[b].name);
        fputc('\n', f);
        for (int i = 0; i < m.n_ops; i++) {
            op_label(label, sizeof(label), &m.ops[i]);
            fprintf(f, "%-*s", w, label);
            for (int b = 0; b < m.n_be; b++) {
                const sm_cell *c = cell(&m, i, b);
                char cellbuf[36];
                if (c->listed)
                    dtype_list(cellbuf, sizeof(cellbuf), c->dtypes, 0);
                else
                    snprintf(cellbuf, sizeof(cellbuf), "-");
                fprintf(f, " %-34s", cellbuf);
            }
            fputc('\n', f);
        }
        fprintf(f, "\nConstraints stated by the backends:\n");
        int any = 0;
        for (int i = 0; i < m.n_ops; i++)
            for (int b = 0; b < m.n_be; b++) {
                const sm_cell *c = cell(&m, i, b);
                if (!c->constraints)
                    continue;
                op_label(label, sizeof(label), &m.ops[i]);
                fprintf(f, "  %-24s %-10s %s\n", label, m.be[b].name, c->constraints);
                any = 1;
            }
        if (!any)
            fprintf(f, "  (none)\n");
    }
    sm_free(&m);
    return ferror(f) ? CLI_EXIT_RUNTIME : CLI_EXIT_OK;
}

void cli_explain(FILE *f, const cli_opts *o, netrun_session *s)
{
    sm m;
    int have_sm = sm_build(&m) == 0;
    int nodes = netrun_session_node_count(s);
    const char *B = cli_color(o->color_out, "\033[1m"), *N = cli_color(o->color_out, "\033[0m");
    fprintf(f, "%sPlacement of %s%s (%d nodes, backends: %s)\n", B, o->model_path, N, nodes,
            o->backends ? o->backends : "default");
    for (int i = 0; i < nodes; i++) {
        netrun_node_info ni;
        if (netrun_session_node_info(s, i, &ni) != NETRUN_OK)
            continue;
        fprintf(f, "\n  #%-4d %s%s%s (%s) -> %s%s%s\n", i, B, ni.name && ni.name[0] ? ni.name : "(unnamed)", N,
                ni.op_type ? ni.op_type : "?", B, ni.backend ? ni.backend : "?", N);
        fprintf(f, "         reason:    %s\n", ni.reason && ni.reason[0] ? ni.reason : "(none given)");
        if (ni.kernel && ni.kernel[0])
            fprintf(f, "         kernel:    %s\n", ni.kernel);
        if (ni.workspace_bytes)
            fprintf(f, "         workspace: %zu bytes\n", ni.workspace_bytes);
        if (have_sm && ni.op_type) {
            /* Which plugin tables list this op: tells "no backend has it" from "a limit ruled it out". */
            fputs("         listed by: ", f);
            int any = 0;
            for (int k = 0; k < m.n_ops; k++) {
                if (strcmp(m.ops[k].op, ni.op_type) != 0)
                    continue;
                for (int b = 0; b < m.n_be; b++) {
                    const sm_cell *c = cell(&m, k, b);
                    if (!c->listed)
                        continue;
                    char dts[128];
                    dtype_list(dts, sizeof(dts), c->dtypes, 0);
                    fprintf(f, "%s%s%s [%s]", any ? ", " : "", m.be[b].name, m.be[b].available ? "" : " (unavailable)",
                            dts);
                    if (c->constraints)
                        fprintf(f, " (%s)", c->constraints);
                    any = 1;
                }
            }
            fputs(any ? "\n" : "no backend\n", f);
        }
    }
    if (have_sm)
        sm_free(&m);
}
