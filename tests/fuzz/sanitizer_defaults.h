/* Sanitizer defaults built into the fuzz harnesses, so that a reproducer replayed by hand runs as under
 * tests/fuzz/run_fuzzer.py (ASAN_OPTIONS from the environment still override them).
 * intercept_tls_get_addr=0: up to LLVM 16 / GCC 13 the sanitizer runtime takes a dynamic TLS block that malloc
 * happened to place 16 bytes into a page for a glibc-2.19 block and records the two words before it as that
 * block's range; LeakSanitizer's exit-time check then scans garbage and its tracer dies ("Tracer caught signal
 * 11", google/sanitizers#1322). Seen in about one 60 s importer run in two here (clang 14, glibc 2.36). Leaks are
 * still reported; dynamic TLS is just not scanned for roots. */
#ifndef NETRUN_FUZZ_SANITIZER_DEFAULTS_H
#define NETRUN_FUZZ_SANITIZER_DEFAULTS_H

const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "intercept_tls_get_addr=0"; }

#endif
