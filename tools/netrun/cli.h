/* Shared declarations of the netrun command-line tool (tools/netrun). Uses only the public API. */
#ifndef NETRUN_CLI_H
#define NETRUN_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "netrun.h"
#include "json.h"

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
    int allow_fallback;    /* --allow-fallback: a listed backend that is unavailable is skipped */
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
    /* --duration: timed runs until this many seconds passed (< 0 = use --iterations). */
    double duration_s;
    int iterations_set;
    long batch;              /* --batch: value of every input's first symbolic dim (-1 = not set) */
    size_t max_tensor_bytes; /* --max-tensor-bytes (0 = library default) */
    long max_graph_depth;    /* --max-graph-depth (0 = library default) */
    /* Profiling and graph views. */
    int profile;             /* --profile: per-node table */
    const char *profile_json;/* --profile-json FILE: Chrome trace */
    const char *dot_path;    /* --dot FILE */
    int explain;             /* --explain: placement reasons per node */
    int support_matrix;      /* --support-matrix */
    const char *format;      /* --format text|md|csv (support matrix) */
    const char *compare;     /* --compare A,B */
    /* Image inputs (--image NAME=FILE and its preprocessing). */
    cli_kv *images;
    int n_images;
    int size_w, size_h;      /* --size WxH (0 = from the model) */
    double mean[3];          /* --mean R,G,B: subtracted before scaling */
    double scale;            /* --scale S (default 1) */
    int swap_rb, crop;
    int device_preprocess;   /* --device-preprocess: --image feeds uint8 frames, converted in the graph */
    int outputs_on_device;   /* --outputs-on-device: the timed runs leave the outputs in device memory */
    int layout;              /* CLI_LAYOUT_* */
    int color_out, color_err; /* colour on stdout / stderr (TTY and no NO_COLOR) */
    int progress;            /* progress line on stderr (TTY and not quiet) */
} cli_opts;

enum { CLI_LAYOUT_AUTO = 0, CLI_LAYOUT_NCHW = 1, CLI_LAYOUT_NHWC = 2 };

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
    char prepare_note[256];  /* netrun_session_prepare_note: why the last re-prepare happened */
    cli_latency latency;
    size_t peak_rss_bytes;
    int n_outputs;
    netrun_tensor_view *outputs;    /* views owned by the session (valid until the next run) */
    cli_check *checks;              /* n_outputs entries when --check was given, else NULL */
    char (*output_files)[1024];     /* n_outputs paths written by --output-dir, else NULL */
    long timed_runs;                /* runs timed (--iterations, or as many as --duration allowed) */
    const struct cli_profile_runs *profile; /* profiled runs, or NULL without --profile/--profile-json */
} cli_result;

/* ---- util (main.c) ---- */
/* Load the model honouring --max-tensor-bytes / --max-graph-depth. Returns 0 or an exit code. */
int cli_load_model(const cli_opts *o, netrun_model **out, double *load_ms);
/* Compare got with want as --check does (NumPy isclose; integers exactly); fills c. */
void cli_compare_views(double rtol, double atol, const netrun_tensor_view *got, const netrun_tensor_view *want,
                       cli_check *c);
/* Print "netrun: error: ..." to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* crash.c: on a fatal signal, say what the watched session was doing (node, backend), then die of the signal. */
void cli_crash_report_install(void);
void cli_crash_report_watch(netrun_session *session);
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

/* ---- image.c ---- */
/* An image decoded and preprocessed into a tensor for input ti (float32, or uint8 when the input is uint8).
 * batch copies of the image fill dim 0. data is malloc'ed. Returns 0, or an exit code after a message. */
typedef struct cli_image {
    netrun_dtype dtype;
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    void *data;
    size_t nbytes;
} cli_image;
int cli_image_load(const cli_opts *o, const netrun_tensor_info *ti, const char *path, int64_t batch,
                   cli_image *out);
/* --device-preprocess: the decoded image as uint8 [batch, H, W, 3] RGB frames, unresized (the session converts). */
int cli_image_load_frame(const cli_opts *o, const netrun_tensor_info *ti, const char *path, int64_t batch,
                         cli_image *out);
/* Whether this build can decode images. */
int cli_image_supported(void);

/* ---- progress.c: progress line on stderr, colours ---- */
typedef struct cli_progress {
    const cli_opts *o;
    const char *what;        /* "warmup", "timed" */
    long total;              /* runs planned, or 0 with a duration */
    double duration_ms;      /* > 0: planned by time */
    double start_ms, last_draw_ms;
    int drawn;
} cli_progress;
void cli_progress_begin(cli_progress *p, const cli_opts *o, const char *what, long total, double duration_ms);
void cli_progress_step(cli_progress *p, long done);
void cli_progress_end(cli_progress *p);
/* ANSI sequence or "" when colour is off for that stream. */
const char *cli_color(int on, const char *code);

/* ---- profile.c ---- */
/* Per-run wall times of the profiled runs (for the trace timeline and the sum check). */
typedef struct cli_profile_runs { /* struct tag used by cli_result */
    double *wall_ms;
    long n;
} cli_profile_runs;
/* Print the --profile table. Returns 0 or an exit code. */
int cli_profile_print(FILE *f, const cli_opts *o, netrun_session *s, const cli_profile_runs *runs);
/* Write the Chrome trace of the recorded events to path. Returns 0 or an exit code. */
int cli_profile_trace(const char *path, const cli_opts *o, netrun_session *s, const cli_profile_runs *runs);
/* Add a "profile" member to a JSON report. */
void cli_profile_json(cli_json *j, netrun_session *s, const cli_profile_runs *runs);

/* ---- support.c ---- */
int cli_support_matrix(FILE *f, const char *format);
/* Per-node placement with reasons, kernels, and which backends' tables list the op. */
void cli_explain(FILE *f, const cli_opts *o, netrun_session *s);

/* ---- dot.c ---- */
int cli_write_dot(const char *path, const cli_opts *o, netrun_session *s);

/* ---- compare.c ---- */
/* --compare A,B: returns an exit code (3 when the outputs diverge). */
int cli_compare(const cli_opts *o, const netrun_options *base_a, const netrun_options *base_b);

/* ---- report.c ---- */
void cli_report_text(FILE *f, const cli_result *r);
/* Write the JSON report to path ("-" = stdout). Returns 0 on success. */
int cli_report_json(const char *path, const cli_result *r);
/* "[batch=2, 3]" style shape text of a tensor info (declared dims, with session values when known). */
void cli_format_info_shape(char *buf, size_t size, const netrun_tensor_info *declared,
                           const netrun_tensor_info *actual);
void cli_format_dims(char *buf, size_t size, int rank, const int64_t *dims);
/* s clipped to width characters by cutting its middle (both ends stay readable). */
void cli_clip_middle(char *buf, size_t size, const char *s, int width);


#endif
