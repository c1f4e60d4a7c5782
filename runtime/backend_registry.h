/* Backend plugins found on this machine: discovered and loaded once per process (dlopen), read-only after. */
#ifndef NR_BACKEND_REGISTRY_H
#define NR_BACKEND_REGISTRY_H

#include "netrun_backend.h"

typedef struct nr_backend {
    char *name;                      /* from the api, or from the file name (libnetrun-NAME.so) if it failed */
    char *path;                      /* the shared library */
    void *dl;                        /* dlopen handle (NULL if it failed) */
    const netrun_backend_api *api;   /* NULL unless loaded and ABI-compatible */
    int available;                   /* loaded and probe passed */
    char *reason;                    /* why not available (dlerror text, ABI mismatch, probe message) */
    char *summary;                   /* probe's device summary when available */
    int device_count;
} nr_backend;

/* Discovery order: each folder (or file) of NETRUN_BACKEND_PATH (':'-separated), then the installed folder
 * <dir of libnetrun.so>/netrun/backends, then the executable's folder and <exe dir>/../lib/netrun/backends.
 * The first plugin of a given name wins; later ones of that name are listed as shadowed. */
int nr_backends_count(void);
const nr_backend *nr_backends_get(int index);
/* The available backend of that name, or NULL. Plugins are loaded lazily: finding a name loads only the
 * libraries whose file carries that name (count/get load them all). */
const nr_backend *nr_backends_find(const char *name);
/* The backend of that name whether available or not (to report why), or NULL when no plugin has that name. */
const nr_backend *nr_backends_lookup(const char *name);
/* The first available backend whose flags hold every bit of `role` (NETRUN_BACKEND_FALLBACK,
 * NETRUN_BACKEND_FOLDS_CONSTANTS...), or NULL. Loads candidates in discovery order only until one is found. */
const nr_backend *nr_backends_find_role(uint32_t role);
/* Index of an entry (for the public API's numbering), or -1. */
int nr_backends_index_of(const nr_backend *b);
/* Whether a plugin of that name was found (loaded or not, available or not), without loading any. */
int nr_backends_name_found(const char *name);
/* True when the api has the slot (it fits inside the plugin's struct_size and is not NULL). */
#define NR_API_FITS(api, field) ((api)->struct_size >= offsetof(netrun_backend_api, field) + sizeof((api)->field))
#define NR_API_HAS(api, slot) \
    ((api)->struct_size >= offsetof(netrun_backend_api, slot) + sizeof((api)->slot) && (api)->slot != NULL)

/* The service table handed to plugins. */
const netrun_host_api *nr_host_api(void);

#endif
