/* libFuzzer harness: the ONNX importer, then session creation and prepare on the CPU backend.
 * Any crash, sanitizer report or leak is a bug; an error status is the expected answer to garbage. */
#define _POSIX_C_SOURCE 200809L /* setenv/unsetenv */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netrun.h"
#include "onnx_mutator.h"
#include "sanitizer_defaults.h"

extern long nr_import_max_expanded_nodes; /* importers/onnx/onnx_import.c: internal, linked statically here */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    /* 50,000 expanded nodes load in well under the 10 s an input may take under ASan (a million took ~8 s) */
    nr_import_max_expanded_nodes = 50000;
    /* Only the CPU plugin built with this harness (same compiler, same sanitizers) may load: the runtime
     * finds it in ../lib/netrun/backends next to the executable; a gcc-built one from the environment
     * would mix two ASan runtimes. */
    unsetenv("NETRUN_BACKEND_PATH");
    int cpu = 0; /* discover plugins once, outside the measured inputs */
    for (int i = 0; i < netrun_backend_count(); i++) {
        netrun_backend_info bi;
        if (netrun_backend_get_info(i, &bi) == NETRUN_OK && bi.available && !strcmp(bi.name, "cpu")) cpu = 1;
    }
    if (!cpu) { /* without it every prepare fails early and the fuzzer explores little */
        fprintf(stderr, "fuzz_importer: no CPU backend in ../lib/netrun/backends next to the executable\n");
        exit(1);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    netrun_model *m = NULL;
    /* base_dir NULL: external data is refused, so the fuzzer never reads files named by the input */
    if (netrun_model_load_memory(data, size, NULL, &m) != NETRUN_OK) return 0;
    netrun_options *o = NULL;
    netrun_session *s = NULL;
    /* limits low enough for the fuzzer's time and memory bounds (10 s, 4 GB): a run that reaches them must
     * stop with an error, never exceed them. 64 MiB: at 256 MiB a ConvInteger writing 50 million int32 outputs
     * (200 MB, allowed) took 27 s in this instrumented build (about 0.5 us an output) and timed out; the work
     * itself was due, so the harness bounds it */
    if (netrun_options_create(&o) == NETRUN_OK && netrun_options_set_backends(o, "cpu") == NETRUN_OK &&
        netrun_options_set_threads(o, 1) == NETRUN_OK && netrun_options_set_host_memory_budget(o, (size_t)64 << 20) == NETRUN_OK &&
        netrun_options_set(o, "limits.max_loop_iterations", "10000") == NETRUN_OK &&
        netrun_session_create(m, o, &s) == NETRUN_OK) {
        /* Symbolic dims stay unset: prepare must either pick them up later or say why it cannot. */
        if (netrun_session_prepare(s) == NETRUN_OK) {
            netrun_session_stats st;
            netrun_session_get_stats(s, &st);
            for (int i = 0; i < netrun_session_node_count(s); i++) {
                netrun_node_info ni;
                netrun_session_node_info(s, i, &ni);
            }
            /* then run it on zeros (inputs of a known shape up to 1 MiB), so the kernels see the graph too */
            int ok = 1;
            static uint8_t zeros[1 << 20];
            for (int i = 0; ok && i < netrun_session_input_count(s); i++) {
                netrun_tensor_info ti;
                ok = netrun_session_input_info(s, i, &ti) == NETRUN_OK && ti.rank >= 0;
                size_t bytes = netrun_dtype_size(ti.dtype);
                for (int d = 0; ok && d < ti.rank; d++) {
                    ok = ti.dims[d] >= 0 && (ti.dims[d] == 0 || bytes <= sizeof zeros / (size_t)ti.dims[d]);
                    if (ok) bytes *= (size_t)ti.dims[d];
                }
                ok = ok && bytes && bytes <= sizeof zeros &&
                     netrun_session_set_input(s, ti.name, ti.dtype, ti.rank, ti.dims, zeros, bytes) == NETRUN_OK;
            }
            if (ok && netrun_session_run(s) == NETRUN_OK) {
                netrun_tensor_view y;
                for (int i = 0; i < netrun_session_output_count(s); i++) netrun_session_output(s, i, &y);
            }
        }
    }
    netrun_session_destroy(s);
    netrun_options_destroy(o);
    netrun_model_release(m);
    return 0;
}
