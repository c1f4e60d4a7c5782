/* Backend plugin discovery: done once per process (pthread_once), read-only afterwards.
 *
 * Every library found is listed, loaded or not, so that `netrun --list-backends` can say why a backend is
 * missing. A plugin never crashes the loader by being wrong: each check below turns a bad plugin into an
 * unavailable entry with a reason. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend_registry.h"
#include "plugin_ops.h"
#include "status.h"

#ifndef NETRUN_BACKEND_RELDIR
#define NETRUN_BACKEND_RELDIR "netrun/backends"
#endif

#define PLUGIN_PREFIX "libnetrun-"
#define PLUGIN_SUFFIX ".so"

static pthread_once_t discover_once = PTHREAD_ONCE_INIT;
static nr_backend *backends;
static int n_backends;
static int cap_backends;

/* Paths already seen (realpath), so that one library reached through two folders is loaded once. */
static char **seen_paths;
static int n_seen, cap_seen;

#define LOG(level, ...) nr_host_api()->log(level, "loader", __VA_ARGS__)

/* ---- small helpers ---- */

static int grow(void **array, int *cap, int need, size_t elem) {
    if (need <= *cap) return 1;
    int ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > INT_MAX / 2) return 0;
        ncap *= 2;
    }
    size_t bytes;
    if (!nr_mul_size((size_t)ncap, elem, &bytes)) return 0;
    void *p = nr_realloc(*array, bytes);
    if (!p) return 0;
    *array = p;
    *cap = ncap;
    return 1;
}

/* malloc'ed "dir/name", or NULL. */
static char *join_path(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name), n;
    if (!nr_add_size(a, b, &n) || !nr_add_size(n, 2, &n)) return NULL;
    char *p = nr_malloc(n);
    if (!p) return NULL;
    snprintf(p, n, "%s%s%s", dir, (a && dir[a - 1] == '/') ? "" : "/", name);
    return p;
}

/* NAME of libnetrun-NAME.so (malloc'ed), or NULL when the file name does not follow the pattern. */
static char *plugin_name_of(const char *file) {
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t lp = strlen(PLUGIN_PREFIX), ls = strlen(PLUGIN_SUFFIX), n = strlen(base);
    if (n <= lp + ls || strncmp(base, PLUGIN_PREFIX, lp) || strcmp(base + n - ls, PLUGIN_SUFFIX)) return NULL;
    size_t len = n - lp - ls;
    char *name = nr_malloc(len + 1);
    if (!name) return NULL;
    memcpy(name, base + lp, len);
    name[len] = 0;
    return name;
}

/* A name for a library given explicitly that does not follow the pattern: its file name. */
static char *fallback_name_of(const char *file) {
    char *n = plugin_name_of(file);
    if (n) return n;
    const char *base = strrchr(file, '/');
    return nr_strdup(base ? base + 1 : file);
}

static int already_seen(const char *real) {
    for (int i = 0; i < n_seen; i++)
        if (!strcmp(seen_paths[i], real)) return 1;
    return 0;
}

static void remember_seen(const char *real) {
    char *copy = nr_strdup(real);
    if (!copy) return; /* only costs a possible second listing of the same file */
    if (!grow((void **)&seen_paths, &cap_seen, n_seen + 1, sizeof *seen_paths)) {
        nr_free(copy);
        return;
    }
    seen_paths[n_seen++] = copy;
}

static const nr_backend *find_any(const char *name) {
    for (int i = 0; i < n_backends; i++)
        if (backends[i].name && !strcmp(backends[i].name, name)) return &backends[i];
    return NULL;
}

/* Append an entry; takes ownership of name/path/reason/summary (freed if the list cannot grow). */
static nr_backend *add_entry(char *name, char *path, char *reason) {
    if (!grow((void **)&backends, &cap_backends, n_backends + 1, sizeof *backends)) {
        nr_free(name);
        nr_free(path);
        nr_free(reason);
        LOG(NETRUN_LOG_ERROR, "out of memory listing backend plugins");
        return NULL;
    }
    nr_backend *b = &backends[n_backends++];
    memset(b, 0, sizeof *b);
    b->name = name;
    b->path = path;
    b->reason = reason;
    return b;
}

static char *format_reason(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *format_reason(const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return nr_strdup(buf);
}

static void add_unavailable(const char *file, char *name, char *reason) {
    char *path = nr_strdup(file);
    if (!name) name = fallback_name_of(file);
    if (!name || !path || !reason) {
        nr_free(name);
        nr_free(path);
        nr_free(reason);
        LOG(NETRUN_LOG_ERROR, "out of memory listing backend plugin %s", file);
        return;
    }
    LOG(NETRUN_LOG_INFO, "backend '%s' (%s) unavailable: %s", name, file, reason);
    add_entry(name, path, reason);
}

/* ---- loading one library ---- */

/* The slots the host calls without checking; a plugin whose struct ends earlier is too old or broken. */
#define MIN_API_SIZE (offsetof(netrun_backend_api, kernel_destroy) + sizeof(((netrun_backend_api *)0)->kernel_destroy))

static const char *missing_required_slot(const netrun_backend_api *api) {
#define REQUIRE(slot) if (!api->slot) return #slot;
    REQUIRE(probe)
    REQUIRE(device_count)
    REQUIRE(supports)
    REQUIRE(context_create)
    REQUIRE(context_destroy)
    REQUIRE(buffer_alloc)
    REQUIRE(buffer_free)
    REQUIRE(buffer_address)
    REQUIRE(copy_from_host)
    REQUIRE(copy_to_host)
    REQUIRE(kernel_create)
    REQUIRE(kernel_run)
    REQUIRE(kernel_destroy)
#undef REQUIRE
    return NULL;
}

/* Candidates found by discovery, loaded on demand (a session that names "cpu" never maps the CUDA plugin). */
static char **cands;
static char *cand_loaded;
static int n_cands, cap_cands;
static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;

static void add_candidate(const char *file) {
    char real[PATH_MAX];
    if (!realpath(file, real)) return; /* vanished between listing and loading */
    if (already_seen(real)) return;
    remember_seen(real);
    char *copy = nr_strdup(real);
    if (!copy || !grow((void **)&cands, &cap_cands, n_cands + 1, sizeof *cands)) {
        nr_free(copy);
        LOG(NETRUN_LOG_ERROR, "out of memory listing backend plugins");
        return;
    }
    cands[n_cands++] = copy;
}

static void load_plugin(const char *real) {

    /* The first plugin of a name wins: do not even load a later library of the same file name. */
    char *file_name = plugin_name_of(real);
    const nr_backend *earlier = file_name ? find_any(file_name) : NULL;
    if (earlier) {
        add_unavailable(real, file_name, format_reason("shadowed by %s, found first", earlier->path));
        return;
    }

    dlerror();
    void *dl = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *e = dlerror();
        add_unavailable(real, file_name, nr_strdup(e ? e : "dlopen failed"));
        return;
    }
    /* dlsym returns a data pointer; POSIX guarantees it converts to a function pointer. */
    void *sym = dlsym(dl, NETRUN_BACKEND_ENTRY_SYMBOL);
    if (!sym) {
        dlclose(dl);
        add_unavailable(real, file_name, nr_strdup("no " NETRUN_BACKEND_ENTRY_SYMBOL " symbol"));
        return;
    }
    netrun_backend_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    const netrun_backend_api *api = entry(nr_host_api());
    if (!api) {
        dlclose(dl);
        add_unavailable(real, file_name, format_reason("entry refused the host (ABI %u.%u)", (unsigned)NETRUN_ABI_MAJOR,
                                                       (unsigned)NETRUN_ABI_MINOR));
        return;
    }
    /* Only abi_version and struct_size are known to be where we look before the major matches. */
    if (NETRUN_ABI_MAJOR_OF(api->abi_version) != NETRUN_ABI_MAJOR) {
        unsigned pa = NETRUN_ABI_MAJOR_OF(api->abi_version), pb = api->abi_version & 0xffffu;
        dlclose(dl);
        add_unavailable(real, file_name,
                        format_reason("ABI mismatch: plugin built for ABI %u.%u, host has %u.%u; rebuild the plugin",
                                      pa, pb, (unsigned)NETRUN_ABI_MAJOR, (unsigned)NETRUN_ABI_MINOR));
        return;
    }
    if (api->struct_size < MIN_API_SIZE) {
        unsigned size = api->struct_size;
        dlclose(dl);
        add_unavailable(real, file_name,
                        format_reason("backend api struct_size %u is smaller than the %zu bytes ABI %u requires "
                                      "(every slot up to kernel_destroy); the plugin is broken or too old",
                                      size, MIN_API_SIZE, (unsigned)NETRUN_ABI_MAJOR));
        return;
    }
    if (!api->name || !*api->name) {
        dlclose(dl);
        add_unavailable(real, file_name, nr_strdup("backend api has no name"));
        return;
    }
    const char *missing = missing_required_slot(api);
    if (missing) {
        char *r = format_reason("backend api slot %s is NULL but required", missing);
        dlclose(dl);
        add_unavailable(real, file_name, r);
        return;
    }
    if (api->op_table_len > 0 && !api->op_table) {
        char *r = format_reason("op_table is NULL but op_table_len is %zu", api->op_table_len);
        dlclose(dl);
        add_unavailable(real, file_name, r);
        return;
    }
    /* Ops it defines (ABI 1.9) must be well formed and leave netrun's own ops alone. */
    char *bad_ops = nr_plugin_ops_check(api);
    if (bad_ops) {
        dlclose(dl);
        add_unavailable(real, file_name, bad_ops);
        return;
    }
    /* The api may name itself differently from its file: that name is the one that must be unique. */
    char *name = nr_strdup(api->name);
    if (!name) {
        dlclose(dl);
        nr_free(file_name);
        LOG(NETRUN_LOG_ERROR, "out of memory loading %s", real);
        return;
    }
    nr_free(file_name);
    earlier = find_any(name);
    if (earlier) {
        char *r = format_reason("shadowed by %s, found first", earlier->path);
        dlclose(dl);
        add_unavailable(real, name, r);
        return;
    }

    char msg[512];
    msg[0] = 0;
    nr_error_clear();
    netrun_status st = api->probe(msg, sizeof msg);
    msg[sizeof msg - 1] = 0;
    /* Everything the entry needs is allocated before it is added, so no entry is ever half made. */
    char *path = nr_strdup(real), *text = NULL;
    if (st != NETRUN_OK) {
        const char *e = nr_error_message();
        text = (e && *e) ? nr_strdup(e) : format_reason("probe failed (status %d) without a message", (int)st);
        nr_error_clear();
    } else {
        text = nr_strdup(msg);
    }
    if (!path || !text) {
        nr_free(name);
        nr_free(path);
        nr_free(text);
        LOG(NETRUN_LOG_ERROR, "out of memory loading %s", real);
        /* The library stays open: a probe may have left state (threads, handlers) that lives in it. */
        return;
    }
    /* Loaded and ABI-compatible: the api stays referenced from here on, so dl is never closed. */
    nr_backend *b;
    if (st != NETRUN_OK) {
        b = add_entry(name, path, text);
        if (!b) return;
        LOG(NETRUN_LOG_INFO, "backend '%s' (%s) unavailable: %s", b->name, b->path, b->reason);
    } else {
        b = add_entry(name, path, NULL);
        if (!b) {
            nr_free(text);
            return;
        }
        b->available = 1;
        b->summary = text;
        int dc = api->device_count();
        b->device_count = dc > 0 ? dc : 0;
        LOG(NETRUN_LOG_DEBUG, "backend '%s' (%s): %s", b->name, b->path, msg);
    }
    b->dl = dl;
    b->api = api;
}

/* ---- folders ---- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Load every libnetrun-*.so of a folder, in name order so the listing is stable. */
static void scan_folder(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *pn = plugin_name_of(e->d_name);
        if (!pn) continue;
        nr_free(pn);
        char *copy = nr_strdup(e->d_name);
        if (!copy || !grow((void **)&names, &cap, n + 1, sizeof *names)) {
            nr_free(copy);
            LOG(NETRUN_LOG_ERROR, "out of memory listing %s", dir);
            break;
        }
        names[n++] = copy;
    }
    closedir(d);
    if (n > 1) qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        char *full = join_path(dir, names[i]);
        if (full) {
            struct stat sb;
            if (stat(full, &sb) == 0 && S_ISREG(sb.st_mode)) add_candidate(full);
            nr_free(full);
        }
        nr_free(names[i]);
    }
    nr_free(names);
}

/* An entry of NETRUN_BACKEND_PATH, or a default folder: a folder is scanned, a file loaded as given. A missing
 * entry the user named (from_env) is a warning: a typo there would otherwise quietly leave a plugin out. */
static void scan_entry(const char *entry, int from_env) {
    struct stat sb;
    if (!*entry || stat(entry, &sb) != 0) {
        if (*entry) LOG(from_env ? NETRUN_LOG_WARN : NETRUN_LOG_DEBUG, "%s entry %s does not exist",
                        from_env ? "NETRUN_BACKEND_PATH" : "backend folder", entry);
        return;
    }
    if (S_ISDIR(sb.st_mode))
        scan_folder(entry);
    else if (S_ISREG(sb.st_mode))
        add_candidate(entry);
}

/* The folder part of a path (malloc'ed), or NULL. */
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return NULL;
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = nr_malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, path, n);
    d[n] = 0;
    return d;
}

static void scan_joined(const char *dir, const char *rel) {
    char *p = join_path(dir, rel);
    if (!p) return;
    scan_entry(p, 0);
    nr_free(p);
}

static void discover(void) {
    const char *env = getenv("NETRUN_BACKEND_PATH");
    if (env && *env) {
        char *list = nr_strdup(env);
        if (list) {
            char *save = NULL;
            for (char *tok = strtok_r(list, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) scan_entry(tok, 1);
            nr_free(list);
        }
    }

    /* The installed layout: <libdir>/libnetrun.so and <libdir>/netrun/backends/. */
    Dl_info info;
    memset(&info, 0, sizeof info);
    int (*self)(void) = nr_backends_count;
    void *self_addr;
    memcpy(&self_addr, &self, sizeof self_addr);
    if (dladdr(self_addr, &info) && info.dli_fname && *info.dli_fname) {
        char real[PATH_MAX];
        if (realpath(info.dli_fname, real)) {
            char *d = dir_of(real);
            if (d) {
                scan_joined(d, NETRUN_BACKEND_RELDIR);
                nr_free(d);
            }
        }
    }

    /* Next to the executable, and the build/install tree's <prefix>/lib/netrun/backends. */
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *d = dir_of(exe);
        if (d) {
            scan_entry(d, 0);
            scan_joined(d, "../lib/" NETRUN_BACKEND_RELDIR);
            nr_free(d);
        }
    }

    /* The seen list only matters during discovery. */
    for (int i = 0; i < n_seen; i++) nr_free(seen_paths[i]);
    nr_free(seen_paths);
    seen_paths = NULL;
    n_seen = cap_seen = 0;
    /* Each candidate makes at most one entry: reserve them all now, so that entries never move once handed
     * out (sessions keep pointers to them) however late a plugin is loaded. */
    cand_loaded = nr_calloc((size_t)n_cands + 1, 1);
    if (!cand_loaded || (n_cands && !grow((void **)&backends, &cap_backends, n_cands, sizeof *backends))) {
        LOG(NETRUN_LOG_ERROR, "out of memory listing backend plugins");
        n_cands = 0;
    }
}

/* Load candidate i once (under load_mu). Probes report failures through the thread's error: the caller's
 * message is kept as it was. */
static void load_candidate(int i) {
    if (i < 0 || i >= n_cands || cand_loaded[i]) return;
    cand_loaded[i] = 1;
    char saved[NR_ERROR_MAX];
    snprintf(saved, sizeof saved, "%s", nr_error_message() ? nr_error_message() : "");
    load_plugin(cands[i]);
    if (saved[0])
        nr_error(NETRUN_ERR_INTERNAL, "%s", saved);
    else
        nr_error_clear();
}

static void load_all(void) {
    pthread_once(&discover_once, discover);
    pthread_mutex_lock(&load_mu);
    for (int i = 0; i < n_cands; i++) load_candidate(i);
    pthread_mutex_unlock(&load_mu);
}

/* The entry of that name (loading only the candidates whose file carries the name, then all if needed). */
static const nr_backend *lookup(const char *name, int need_available) {
    pthread_once(&discover_once, discover);
    if (!name) return NULL;
    const nr_backend *found = NULL;
    pthread_mutex_lock(&load_mu);
    for (int pass = 0; pass < 3 && !found; pass++) {
        if (pass == 1)
            for (int i = 0; i < n_cands; i++) {
                char *pn = plugin_name_of(cands[i]);
                if (pn && !strcmp(pn, name)) load_candidate(i);
                nr_free(pn);
            }
        if (pass == 2)
            for (int i = 0; i < n_cands; i++) load_candidate(i);
        for (int i = 0; i < n_backends && !found; i++)
            if (backends[i].name && !strcmp(backends[i].name, name) && (!need_available || backends[i].available))
                found = &backends[i];
    }
    pthread_mutex_unlock(&load_mu);
    return found;
}

/* ---- public (internal) interface ---- */

int nr_backends_count(void) {
    load_all();
    return n_backends;
}

const nr_backend *nr_backends_get(int index) {
    load_all();
    if (index < 0 || index >= n_backends) return NULL;
    return &backends[index];
}

const nr_backend *nr_backends_find(const char *name) { return lookup(name, 1); }

const nr_backend *nr_backends_lookup(const char *name) { return lookup(name, 0); }

int nr_backends_name_found(const char *name) {
    pthread_once(&discover_once, discover);
    int found = 0;
    pthread_mutex_lock(&load_mu);
    for (int i = 0; i < n_backends && !found; i++) found = backends[i].name && !strcmp(backends[i].name, name);
    for (int i = 0; i < n_cands && !found; i++) {
        char *pn = plugin_name_of(cands[i]);
        found = pn && !strcmp(pn, name);
        nr_free(pn);
    }
    pthread_mutex_unlock(&load_mu);
    return found;
}

int nr_backends_index_of(const nr_backend *b) {
    return b && b >= backends && b < backends + n_backends ? (int)(b - backends) : -1;
}
