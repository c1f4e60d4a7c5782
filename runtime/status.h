/* Error recording inside the runtime: each thread keeps the message of its last failure. */
#ifndef NR_STATUS_H
#define NR_STATUS_H

#include <stddef.h>

#include "netrun.h"

/* Internal status returned by a layer's infer when it needs the value of an input that is not known yet
 * (e.g. Reshape's shape computed at run time): the node is then inferred at run time. */
#define NR_STATUS_NEED_VALUE ((netrun_status)100)

#define NR_ERROR_MAX 2048

/* Record a message for this thread and return code: `return nr_error(NETRUN_ERR_..., "...", ...)`. */
netrun_status nr_error(netrun_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix the current message ("node 'conv1' (Conv): " + message). */
void nr_error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* This thread's last message. */
const char *nr_error_message(void);
void nr_error_clear(void);

/* Largest single dim a value may have (2^40), whatever its other dims: a zero-size value may carry any dims, and
 * layers compute output dims from input dims and attributes in int64 (the fuzzer found Pool's overflowing). */
#define NR_MAX_DIM ((int64_t)1 << 40)

/* Checked size arithmetic: return 0 on overflow. */
int nr_mul_size(size_t a, size_t b, size_t *out);
int nr_add_size(size_t a, size_t b, size_t *out);

/* Host allocation through the runtime (fault injection hooks in here). */
void *nr_malloc(size_t n);
void *nr_calloc(size_t n, size_t size);
void *nr_realloc(void *p, size_t n);
void nr_free(void *p);
char *nr_strdup(const char *s);
void *nr_aligned_alloc(size_t bytes, size_t alignment);
void nr_aligned_free(void *p);

/* Fault injection for tests: fail the nth allocation from now (1 = next); 0 disables. Process-wide. */
void nr_fault_fail_allocation(long nth);

/* "a FIFO", "a directory", "a socket"...: what a stat() mode is, for messages refusing non-regular files. */
const char *nr_file_kind(unsigned mode);

/* Milliseconds from a monotonic clock. */
double nr_now_ms(void);

#endif
