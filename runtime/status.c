/* Thread-local error messages, checked allocation with fault injection, time. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "status.h"

static _Thread_local char error_buf[NR_ERROR_MAX];

netrun_status nr_error(netrun_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error_buf, sizeof error_buf, fmt, ap);
    va_end(ap);
    return code;
}

void nr_error_prefix(const char *fmt, ...) {
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    if (n <= 0) return;
    size_t plen = strlen(prefix), old = strlen(error_buf);
    if (plen + old >= sizeof error_buf) old = sizeof error_buf - 1 - plen;
    memmove(error_buf + plen, error_buf, old);
    memcpy(error_buf, prefix, plen);
    error_buf[plen + old] = 0;
}

const char *nr_error_message(void) { return error_buf; }
void nr_error_clear(void) { error_buf[0] = 0; }

int nr_mul_size(size_t a, size_t b, size_t *out) { return !__builtin_mul_overflow(a, b, out); }
int nr_add_size(size_t a, size_t b, size_t *out) { return !__builtin_add_overflow(a, b, out); }

/* Fault injection: when > 0, counts down on each allocation and fails the one that reaches 0. */
static atomic_long fail_countdown;

void nr_fault_fail_allocation(long nth) { atomic_store(&fail_countdown, nth); }

static int injected_failure(void) {
    if (atomic_load_explicit(&fail_countdown, memory_order_relaxed) <= 0) return 0;
    return atomic_fetch_sub(&fail_countdown, 1) == 1;
}

void *nr_malloc(size_t n) { return injected_failure() ? NULL : malloc(n ? n : 1); }
void *nr_calloc(size_t n, size_t size) { return injected_failure() ? NULL : calloc(n ? n : 1, size ? size : 1); }
void *nr_realloc(void *p, size_t n) { return injected_failure() ? NULL : realloc(p, n ? n : 1); }
void nr_free(void *p) { free(p); }

char *nr_strdup(const char *s) {
    if (!s) s = "";
    size_t n = strlen(s) + 1;
    char *d = nr_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

void *nr_aligned_alloc(size_t bytes, size_t alignment) {
    if (injected_failure()) return NULL;
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    void *p = NULL;
    if (posix_memalign(&p, alignment, bytes ? bytes : 1) != 0) return NULL;
    return p;
}

void nr_aligned_free(void *p) { free(p); }

double nr_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

const char *nr_file_kind(unsigned mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISREG(mode)) return "a regular file";
    return "not a regular file";
}
