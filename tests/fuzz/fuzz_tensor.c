/* libFuzzer harness: the .npy and TensorProto (.pb) readers behind netrun_tensor_read_memory. */
#include <stdint.h>
#include <string.h>

#include "netrun.h"
#include "sanitizer_defaults.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    netrun_tensor_view *t = NULL;
    if (netrun_tensor_read_memory(data, size, &t) != NETRUN_OK) return 0;
    /* A successful read must describe memory that is really there: touch every byte. */
    size_t elems = 1;
    for (int i = 0; i < t->rank; i++) elems *= (size_t)t->dims[i];
    size_t es = netrun_dtype_size(t->dtype);
    if (t->rank < 0 || t->rank > NETRUN_MAX_RANK || (es && elems * es != t->nbytes)) __builtin_trap();
    uint8_t sum = 0;
    const uint8_t *p = t->data;
    for (size_t i = 0; i < t->nbytes; i++) sum ^= p[i];
    __asm__ volatile("" : : "r"(sum)); /* keep the reads */
    (void)strlen(t->name ? t->name : "");
    netrun_tensor_free(t);
    return 0;
}
