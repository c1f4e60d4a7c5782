/*
 * embed.c — the netrun C API from a program of your own: load a model, create a session, set its inputs, run
 * it, read its outputs, and handle errors. Built against an installed netrun only (see README.md).
 *
 *   embed MODEL.onnx [BACKENDS]      e.g. embed tiny_cnn.onnx cpu
 *
 * Every float32 input gets a fixed ramp of values (symbolic dims are set to 1); each output is printed with
 * its shape, a few values, its sum and the index of its largest element.
 */
#include <netrun.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Print the message of a failed call and say which call it was. The message belongs to the library. */
static int fail(const char *what, netrun_status st, const char *message) {
    fprintf(stderr, "embed: %s failed: %s: %s\n", what, netrun_status_string(st), message);
    return 1;
}

/* Elements in a shape, or -1 when a dim is unknown or the product overflows. */
static int64_t element_count(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0 || (dims[d] > 0 && n > INT64_MAX / dims[d])) return -1;
        n *= dims[d];
    }
    return n;
}

/* Fill every float32 input with a deterministic ramp in [-1, 1). */
static int set_inputs(netrun_session *s) {
    for (int i = 0; i < netrun_session_input_count(s); i++) {
        netrun_tensor_info info;
        netrun_status st = netrun_session_input_info(s, i, &info);
        if (st != NETRUN_OK) return fail("netrun_session_input_info", st, netrun_session_error(s));
        if (info.dtype != NETRUN_DTYPE_FLOAT || info.rank < 0 || info.rank > NETRUN_MAX_RANK) {
            fprintf(stderr, "embed: input %s is %s of rank %d; this example feeds float32 tensors only\n",
                    info.name, netrun_dtype_name(info.dtype), info.rank);
            return 1;
        }
        int64_t dims[NETRUN_MAX_RANK];
        for (int d = 0; d < info.rank; d++) dims[d] = info.dims[d] < 0 ? 1 : info.dims[d]; /* symbolic -> 1 */
        int64_t n = element_count(info.rank, dims);
        if (n < 0 || (uint64_t)n > SIZE_MAX / sizeof(float)) {
            fprintf(stderr, "embed: input %s is too large\n", info.name);
            return 1;
        }
        float *data = malloc(n ? (size_t)n * sizeof(float) : 1);
        if (!data) {
            fprintf(stderr, "embed: out of memory for input %s\n", info.name);
            return 1;
        }
        for (int64_t k = 0; k < n; k++) data[k] = (float)(k % 200) / 100.0f - 1.0f;
        printf("input  %-16s float32 [", info.name);
        for (int d = 0; d < info.rank; d++) printf("%s%lld", d ? ", " : "", (long long)dims[d]);
        printf("]\n");
        /* The session copies the data: it may be freed right after. */
        st = netrun_session_set_input(s, info.name, NETRUN_DTYPE_FLOAT, info.rank, dims, data,
                                      (size_t)n * sizeof(float));
        free(data);
        if (st != NETRUN_OK) return fail("netrun_session_set_input", st, netrun_session_error(s));
    }
    return 0;
}

static void print_output(const netrun_tensor_view *y) {
    printf("output %-16s %s [", y->name, netrun_dtype_name(y->dtype));
    for (int d = 0; d < y->rank; d++) printf("%s%lld", d ? ", " : "", (long long)y->dims[d]);
    printf("]");
    if (y->dtype != NETRUN_DTYPE_FLOAT) {
        printf(" (%zu bytes)\n", y->nbytes);
        return;
    }
    const float *v = y->data;
    size_t n = y->nbytes / sizeof(float), best = 0;
    double sum = 0;
    for (size_t k = 0; k < n; k++) {
        sum += v[k];
        if (v[k] > v[best]) best = k;
    }
    printf(" sum=%.4f", sum);
    if (n) printf(" argmax=%zu max=%.4f", best, v[best]);
    printf(" first:");
    for (size_t k = 0; k < n && k < 4; k++) printf(" %.4f", v[k]);
    printf("\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s MODEL.onnx [BACKENDS]   (netrun %s)\n", argv[0], netrun_version());
        return 2;
    }
    printf("netrun %s, %d backend plugin(s) found\n", netrun_version(), netrun_backend_count());

    /* Load. Before a handle exists, the message of a failure is netrun_last_error(). */
    netrun_model *model = NULL;
    netrun_status st = netrun_model_load(argv[1], &model);
    if (st != NETRUN_OK) return fail("netrun_model_load", st, netrun_last_error());

    /* Options: a backend preference list ("hello,cpu"); the CPU stays the fallback. */
    netrun_options *opts = NULL;
    netrun_session *s = NULL;
    int rc = 1;
    st = netrun_options_create(&opts);
    if (st != NETRUN_OK) {
        fail("netrun_options_create", st, netrun_last_error());
        goto done;
    }
    if (argc == 3 && (st = netrun_options_set_backends(opts, argv[2])) != NETRUN_OK) {
        fail("netrun_options_set_backends", st, netrun_last_error());
        goto done;
    }

    /* A session is cheap to create: devices are touched at prepare or at the first run. */
    st = netrun_session_create(model, opts, &s);
    if (st != NETRUN_OK) {
        fail("netrun_session_create", st, netrun_last_error());
        goto done;
    }

    /* Errors are values, not crashes: a misspelt input name fails with a message on the session. */
    float one = 1.0f;
    int64_t dim1 = 1;
    st = netrun_session_set_input(s, "no-such-input", NETRUN_DTYPE_FLOAT, 1, &dim1, &one, sizeof one);
    printf("expected error: %s: %s\n", netrun_status_string(st), netrun_session_error(s));
    if (st == NETRUN_OK) {
        fprintf(stderr, "embed: an unknown input name was accepted\n");
        goto done;
    }

    if (set_inputs(s)) goto done;
    st = netrun_session_run(s); /* the first run also prepares: placement, memory plan, kernels */
    if (st != NETRUN_OK) {
        fail("netrun_session_run", st, netrun_session_error(s));
        goto done;
    }

    /* Where each node ran. */
    for (int i = 0; i < netrun_session_node_count(s); i++) {
        netrun_node_info ni;
        if (netrun_session_node_info(s, i, &ni) == NETRUN_OK)
            printf("node   %-24s %-20s on %s\n", ni.name, ni.op_type, ni.backend);
    }
    /* Outputs live in the session until its next run or its destruction. */
    for (int i = 0; i < netrun_session_output_count(s); i++) {
        netrun_tensor_view y;
        st = netrun_session_output(s, i, &y);
        if (st != NETRUN_OK) {
            fail("netrun_session_output", st, netrun_session_error(s));
            goto done;
        }
        print_output(&y);
    }
    rc = 0;

done:
    netrun_session_destroy(s); /* all three accept NULL */
    netrun_options_destroy(opts);
    netrun_model_release(model);
    return rc;
}
