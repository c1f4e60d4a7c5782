/* Test plugin: a valid shared library that exports no netrun_backend_entry. */
#include "netrun_backend.h"

NETRUN_BACKEND_EXPORT int netrun_backend_entry_misspelled(void) { return 42; }
