/* Shared declarations of the netrun command-line tool (tools/netrun). Uses only the public API. */
#ifndef NETRUN_CLI_H
#define NETRUN_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "netrun.h"

/* Exit codes (documented in docs/cli.md). */
enum { CLI_EXIT_OK = 0, CLI_EXIT_RUNTIME = 1, CLI_EXIT_USAGE = 2, CLI_EXIT_MISMATCH = 3 };

/* NAME=VALUE pair from --input, --shape or --dim. */
typedef struct cli_kv {
    const char *name; /* points into argv (before the '=') copy */
    const char *value;
    char *buf;        /* owned copy of the whole argument */
} cli_kv;

typedef struct cli_opts {
    const char *model_path;
    const char *backends;  /* NULL = library default */
    int precision_set;
    netrun_precision precision;
    int threads;           /* -1 = not set */
    int device;            /* -1 = not set */
    int workspace_set;
    netrun_workspace_policy workspace_policy;
    size_t workspace_limit;
    int strict;
    cli_kv *inputs;
    int n_inputs;
    cli_kv *shapes;
    int n_shapes;
    cli_kv *dims;
    int n_dims;
    const char *output_dir;
    const char *check_dir;
    double rtol, atol;
    long warmup, iterations;
    uint64_t seed;
    const char *json_path;
    int quiet, verbose;
} cli_opts;

/* One input as the CLI fed it. */
typedef struct cli_input {
    const char *name;        /* owned by the model */
    netrun_dtype dtype;
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    const char *source;      /* file path, or NULL for random data */
} cli_input;

/* Per-output comparison with a reference. */
typedef struct cli_check {
    int missing;             /* no reference file found */
    int mismatch;            /* shape/dtype differ or values outside tolerance */
    char reference[1024];    /* the file compared with */
    char problem[512];       /* shape/dtype problem, "" if none */
    double max_abs, max_rel;
    size_t n_bad, n_total;
} cli_check;

typedef struct cli_latency {
    int valid;
    double min, median, p90, p99, mean, throughput_per_s;
} cli_latency;

/* Everything the reports need. */
typedef struct cli_result {
    const cli_opts *opts;
    netrun_model *model;
    netrun_session *session;
    char primary_backend[64];       /* first backend of the preference list */
    char requested[512];            /* the preference list as requested (or the default, expanded) */
    cli_input *inputs;
    int n_inputs;
    double load_ms, prepare_ms, first_run_ms;
    netrun_session_stats stats;
    int have_stats;
    cli_latency latency;
    size_t peak_rss_bytes;
    int n_outputs;
    netrun_tensor_view *outputs;    /* views owned by the session (valid until the next run) */
    cli_check *checks;              /* n_outputs entries when --check was given, else NULL */
    char (*output_files)[1024];     /* n_outputs paths written by --output-dir, else NULL */
} cli_result;

/* ---- util (main.c) ---- */
/* Print "netrun: error: ..." to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "netrun: note: ..." to stderr unless quiet. */
void cli_note(const cli_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
double cli_now_ms(void);

/* ---- inputs.c ---- */
/* Parse "1x3x224x224" into dims; returns 0 on success, -1 (with a message in err) otherwise. */
int cli_parse_shape(const char *text, int *rank, int64_t *dims, char *err, size_t err_size);
/* Parse a byte count with an optional K/M/G suffix (powers of 1024). Returns 0 on success. */
int cli_parse_bytes(const char *text, size_t *out);
/* Work out every input's shape, set dims and inputs on the session. Returns an exit code (0 = ok). */
int cli_feed_inputs(const cli_opts *o, netrun_model *m, netrun_session *s, cli_input **inputs, int *n_inputs);
/* Element value as double (for checks and reports); dtype must be numeric or bool. */
double cli_element(netrun_dtype dtype, const void *data, size_t index);
/* Whether cli_element can read this dtype. */
int cli_dtype_readable(netrun_dtype dtype);
/* Number of elements of a shape; returns 0 on success, -1 on overflow. */
int cli_numel(int rank, const int64_t *dims, size_t *out);

/* ---- report.c ---- */
void cli_report_text(FILE *f, const cli_result *r);
/* Write the JSON report to path ("-" = stdout). Returns 0 on success. */
int cli_report_json(const char *path, const cli_result *r);
/* "[batch=2, 3]" style shape text of a tensor info (declared dims, with session values when known). */
void cli_format_info_shape(char *buf, size_t size, const netrun_tensor_info *declared,
                           const netrun_tensor_info *actual);
void cli_format_dims(char *buf, size_t size, int rank, const int64_t *dims);

/* ---- JSON writer: tools/common/json.c (shared with netrun-conformance) ---- */
#include "json.h"

#endif
