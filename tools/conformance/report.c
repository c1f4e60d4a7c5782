/* Reports: the per-op table on the terminal and the JSON file. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "json.h"

const char *const conf_status_names[CONF_STATUS_COUNT] = {"passed", "passed_fallback", "failed", "unsupported",
                                                          "error", "skipped"};

/* Lower-case letters and digits of s[0..n), underscores dropped. */
static void squash(const char *s, size_t n, char *out, size_t size)
{
    size_t k = 0;
    for (size_t i = 0; i < n && s[i] && k + 1 < size; i++)
        if (s[i] != '_')
            out[k++] = (char)tolower((unsigned char)s[i]);
    out[k] = '\0';
}

/* The ONNX op whose squashed name equals squashed s[0..n), or NULL. */
static const char *op_named(const char *s, size_t n)
{
    char want[128], have[128];
    squash(s, n, want, sizeof(want));
    for (int i = 0; i < conf_onnx_op_count; i++) {
        squash(conf_onnx_op_names[i], strlen(conf_onnx_op_names[i]), have, sizeof(have));
        if (strcmp(want, have) == 0)
            return conf_onnx_op_names[i];
    }
    return NULL;
}

/* Test names are snake_case forms of the op name plus a variant: test_reduce_sum_keepdims_example,
 * test_matmulinteger, test_and2d. Take the longest run of leading words that spells an ONNX op; failing that,
 * the graph's only op, the op a failure named, the longest op name the test name starts with, and last the
 * first word. "_expanded" tests (the function body of an op) form their own row: they test other ops. */
void conf_group_name(const char *test_name, const conf_result *r, char *buf, size_t size)
{
    const char *s = test_name, *op = NULL;
    if (strncmp(s, "test_", 5) == 0)
        s += 5;
    if (strncmp(s, "ai_onnx_ml_", 11) == 0)
        s += 11;
    int expanded = strstr(s, "_expanded") != NULL;
    size_t len = strlen(s);
    /* Abbreviations the ONNX test generators use. */
    static const char *const alias[][2] = {
        {"batchnorm", "BatchNormalization"}, {"mvn", "MeanVarianceNormalization"},
        {"nllloss", "NegativeLogLikelihoodLoss"}, {"sce", "SoftmaxCrossEntropyLoss"},
        {"strnormalizer", "StringNormalizer"}, {"nesterov_momentum", "Momentum"}, {"training_dropout", "Dropout"},
    };
    for (size_t a = 0; !op && a < sizeof(alias) / sizeof(alias[0]); a++) {
        size_t n = strlen(alias[a][0]);
        if (strncmp(s, alias[a][0], n) == 0 && (s[n] == '\0' || s[n] == '_'))
            op = alias[a][1];
    }
    int aliased = op != NULL;
    for (size_t i = 1; !aliased && i <= len; i++) /* longest match wins */
        if (i == len || s[i] == '_') {
            const char *found = op_named(s, i);
            if (found)
                op = found;
        }
    char only[96] = "";
    if (!op && r->ops[0] && !strchr(r->ops, ','))
        snprintf(only, sizeof(only), "%.95s", r->ops);
    if (!op && !only[0] && r->missing_op[0])
        snprintf(only, sizeof(only), "%.95s", r->missing_op);
    if (!op && !only[0]) {
        char squashed[128], have[128];
        size_t best = 0;
        squash(s, len, squashed, sizeof(squashed));
        for (int i = 0; i < conf_onnx_op_count; i++) {
            squash(conf_onnx_op_names[i], strlen(conf_onnx_op_names[i]), have, sizeof(have));
            size_t hl = strlen(have);
            if (hl >= 3 && hl > best && strncmp(squashed, have, hl) == 0) {
                best = hl;
                op = conf_onnx_op_names[i];
            }
        }
    }
    if (!op && !only[0]) {
        size_t n = strcspn(s, "_");
        if (n >= sizeof(only))
            n = sizeof(only) - 1;
        memcpy(only, s, n);
        only[n] = '\0';
    }
    snprintf(buf, size, "%s%s", op ? op : only, expanded ? " (expanded)" : "");
}

typedef struct row {
    const char *group;
    int counts[CONF_STATUS_COUNT];
    int total;
} row;

static int cmp_row(const void *a, const void *b)
{
    return strcmp(((const row *)a)->group, ((const row *)b)->group);
}

void conf_print_table(FILE *f, const conf_test *tests, int n, const char *mode)
{
    if (strcmp(mode, "none") == 0 || n == 0)
        return;
    row *rows = calloc((size_t)n, sizeof(*rows));
    if (!rows) {
        fprintf(f, "(no table: out of memory)\n");
        return;
    }
    int n_rows = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < n_rows && strcmp(rows[k].group, tests[i].group) != 0)
            k++;
        if (k == n_rows)
            rows[n_rows++].group = tests[i].group;
        rows[k].counts[tests[i].res.status]++;
        rows[k].total++;
    }
    qsort(rows, (size_t)n_rows, sizeof(*rows), cmp_row);
    int failing_only = strcmp(mode, "failing") == 0, hidden = 0;
    fprintf(f, "%-36s %5s %6s %8s %6s %6s %6s %6s\n", "op (tests grouped by name)", "tests", "passed", "fallback",
            "failed", "unsup", "error", "skip");
    for (int k = 0; k < n_rows; k++) {
        const row *w = &rows[k];
        if (failing_only && w->counts[CONF_PASSED] + w->counts[CONF_PASSED_FALLBACK] + w->counts[CONF_SKIPPED] ==
                                w->total) {
            hidden++;
            continue;
        }
        fprintf(f, "%-36s %5d %6d %8d %6d %6d %6d %6d\n", w->group, w->total, w->counts[CONF_PASSED],
                w->counts[CONF_PASSED_FALLBACK], w->counts[CONF_FAILED], w->counts[CONF_UNSUPPORTED],
                w->counts[CONF_ERROR], w->counts[CONF_SKIPPED]);
    }
    if (hidden)
        fprintf(f, "(%d ops whose tests all pass are not listed; --table all lists them)\n", hidden);
    free(rows);
}

int conf_write_json(const char *path, const conf_test *tests, int n, const int *counts)
{
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (!f)
        return -1;
    cli_json j;
    json_init(&j, f);
    json_begin_object(&j, NULL);
    json_begin_object(&j, "summary");
    json_int(&j, "total", n);
    for (int s = 0; s < CONF_STATUS_COUNT; s++)
        json_int(&j, conf_status_names[s], counts[s]);
    json_end_object(&j);
    json_begin_array(&j, "tests");
    for (int i = 0; i < n; i++) {
        const conf_result *r = &tests[i].res;
        json_begin_object(&j, NULL);
        json_string(&j, "name", tests[i].name);
        json_string(&j, "status", conf_status_names[r->status]);
        json_string(&j, "detail", r->detail);
        json_string(&j, "op", tests[i].group);
        if (r->missing_op[0])
            json_string(&j, "missing_op", r->missing_op);
        json_begin_inline_array(&j, "backends");
        for (const char *p = r->backends; *p;) {
            char name[64];
            size_t len = strcspn(p, ",");
            snprintf(name, sizeof(name), "%.*s", (int)len, p);
            json_string(&j, NULL, name);
            p += len + (p[len] == ',');
        }
        json_end_array(&j);
        json_end_object(&j);
    }
    json_end_array(&j);
    json_end_object(&j);
    int bad = j.failed || ferror(f);
    if (f != stdout)
        bad |= fclose(f) != 0;
    else
        fflush(f);
    return bad ? -1 : 0;
}
