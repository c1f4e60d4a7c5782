/* netrun-conformance: runs ONNX backend node tests (model.onnx + test_data_set_N/{input,output}_K.pb) in forked
 * children (a batch of tests each), and reports a status per test. Uses only the public API (netrun.h). */
#ifndef NETRUN_CONFORMANCE_H
#define NETRUN_CONFORMANCE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "netrun.h"

enum { CONF_EXIT_OK = 0, CONF_EXIT_REGRESSION = 1, CONF_EXIT_USAGE = 2 };

typedef enum conf_status {
    CONF_PASSED = 0,      /* right values, every node on the first backend (or folded: "const") */
    CONF_PASSED_FALLBACK, /* right values, some node ran on a later backend of the list */
    CONF_FAILED,          /* wrong values, shape or dtype */
    CONF_UNSUPPORTED,     /* NETRUN_ERR_UNSUPPORTED: an op/dtype/attribute no backend takes */
    CONF_ERROR,           /* any other failure: refused model, kernel failure, crash, timeout, unreadable file */
    CONF_SKIPPED,         /* listed in the skip file */
    CONF_STATUS_COUNT
} conf_status;

#define CONF_RESULT_MAGIC 0x6e72636eu

/* The result of one test. The child writes it to its pipe as raw bytes (same binary, so same layout). */
typedef struct conf_result {
    uint32_t magic;
    int status;                /* conf_status */
    char detail[1024];         /* why it is not passed ("" when passed) */
    char backends[256];        /* distinct backends the nodes ran on, comma-separated, first-seen order */
    char ops[512];             /* distinct op types of the prepared graph, comma-separated */
    char missing_op[96];       /* unsupported: the op the error names, "" if none */
    char first_backend[64];    /* the backend counted as native */
} conf_result;

typedef struct conf_opts {
    const char *backends;       /* NULL = library default */
    const char *json_path;
    const char *filter;         /* extended regex on the test name, NULL = all */
    const char *skip_path;
    const char *expected_path;  /* ratchet: tests that must pass */
    const char *write_expected; /* write the passing tests here */
    const char *table;          /* "all", "failing" or "none" */
    const char *node_dir;
    int jobs;
    int timeout_s;
    int batch;                  /* tests per child process */
    int threads;
    int verbose;
} conf_opts;

typedef struct conf_test {
    char *name;   /* folder name, e.g. test_abs */
    char *dir;    /* full path */
    conf_result res;
    char group[128]; /* the op it is counted under in the table */
} conf_test;

extern const char *const conf_status_names[CONF_STATUS_COUNT];

/* ---- runner.c: runs in the child ---- */
void conf_run_test(const conf_opts *o, const char *dir, conf_result *r);
/* Append s to the comma-separated list buf unless already there. */
void conf_list_add(char *buf, size_t size, const char *s);

/* ---- compare.c ---- */
/* Compare got with want (ONNX backend-test tolerances). Returns 1 when they match; otherwise 0 with a
 * description (worst element, its flat index) in why. */
int conf_compare(const char *output_name, const netrun_tensor_view *got, const netrun_tensor_view *want,
                 char *why, size_t why_size);

/* ---- report.c ---- */
void conf_group_name(const char *test_name, const conf_result *r, char *buf, size_t size);
void conf_print_table(FILE *f, const conf_test *tests, int n, const char *mode);
int conf_write_json(const char *path, const conf_test *tests, int n, const int *counts);

/* ---- opnames.c ---- */
extern const char *const conf_onnx_op_names[];
extern const int conf_onnx_op_count;

#endif
