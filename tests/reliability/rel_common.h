/* Shared helpers of the reliability tests: a CHECK macro that counts, and a deterministic input. */
#ifndef REL_COMMON_H
#define REL_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netrun.h"

static int passed, failed;
#define CHECK(cond)                                                                                   \
    do {                                                                                              \
        if (cond) passed++;                                                                           \
        else {                                                                                        \
            failed++;                                                                                 \
            fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond,           \
                    netrun_last_error());                                                             \
        }                                                                                             \
    } while (0)

static inline int finish(const char *name) {
    printf("%s: %d passed, %d failed\n", name, passed, failed);
    return failed ? 1 : 0;
}

/* tiny_cnn's input: float32 [1, 3, 32, 32]; values in [-1, 1) from a seed (xorshift). */
#define CNN_ELEMS (3 * 32 * 32)
static const int64_t cnn_dims[4] = {1, 3, 32, 32};

static inline void fill_input(float *x, size_t n, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        x[i] = (float)(s >> 8) / (float)(1u << 23) - 1.0f;
    }
}

/* Session on `model` with the CPU backend and one thread (results independent of the thread count). */
static inline netrun_status cpu_session(netrun_model *model, netrun_session **out) {
    netrun_options *o = NULL;
    netrun_status st = netrun_options_create(&o);
    if (st == NETRUN_OK) st = netrun_options_set_backends(o, "cpu");
    if (st == NETRUN_OK) st = netrun_options_set_threads(o, 1);
    if (st == NETRUN_OK) st = netrun_session_create(model, o, out);
    netrun_options_destroy(o);
    return st;
}

#endif
