/* ONNX ModelProto / TensorProto -> netrun IR.
 *
 * The serialized bytes are first walked with a small wire-format scanner (bounded nesting, so hostile
 * inputs cannot exhaust the stack inside protobuf-c, and truncation gets a message with a byte offset),
 * then unpacked by protobuf-c, converted into IR, and the protobuf structs are freed before returning. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "onnx_import.h"
#include "status.h"

/* ------------------------------------------------------------------------------------------------ */
/* context and errors                                                                               */

typedef struct ext_file {
    char *real;  /* realpath of the data file */
    int mapping; /* index into model->mappings, -1 for an empty file */
    size_t size;
} ext_file;

/* A call of a model-local function being expanded (FunctionProto): its nodes are imported into the caller's
 * graph with the function's names renamed (formal inputs and outputs to the call's, the rest prefixed with the
 * call's node name) and attributes referring to the function's (ref_attr_name) resolved from the call. */
typedef struct fn_frame {
    const Onnx__FunctionProto *fn;
    const Onnx__NodeProto *call;
    struct fn_frame *outer;    /* the frame the call itself was in, or NULL */
    int depth;                 /* graph depth of the caller's graph: names below it belong to subgraphs */
    char *prefix;              /* "<call>/" (outer prefixes included) for node and value names */
    char **from, **to;         /* function name -> caller's name */
    int n_names, cap_names;
    nr_strmap names;           /* from -> index */
    const Onnx__AttributeProto **attr_value; /* per call attribute: its value (a reference resolved), or NULL */
} fn_frame;

typedef struct imp_ctx {
    const char *source;
    const char *base_dir;
    char *base_real;        /* realpath(base_dir), computed on first use */
    nr_import_limits limits;
    nr_model_ir *model;     /* NULL when parsing a lone tensor */
    ext_file *files;
    int n_files;
    char where[8192];       /* "node 'x' (Op): attribute 'body': " prefixes, nested */
    size_t node_at;         /* where the innermost node's part of `where` starts */
    int pb_aligned;         /* protobuf unpacked with pb_alloc: big blocks are nr_aligned_alloc'd */
    int pb_oom;             /* pb_alloc failed: report out of memory rather than a bad file */
    void *map_base;         /* limits.data_is_file_mapping: the mapping whose pages pb_alloc drops */
    size_t map_size;
    size_t where_len;
    Onnx__FunctionProto **functions; /* the model's local functions */
    size_t n_functions;
    fn_frame *frame;        /* the function call being expanded, or NULL */
    int depth;              /* subgraph depth of the graph being imported */
    size_t fn_at;           /* inside calls: where the outermost call's part of `where` begins */
    int frames;             /* its nesting */
    long expanded_nodes;    /* nodes made by expanding calls: bounded (a call of a call of... can multiply) */
    long *fn_nodes;         /* per function: nodes once fully expanded (0: not known yet, -1: being counted) */
} imp_ctx;

#define NR_MAX_FUNCTION_NESTING 64
#define NR_MAX_EXPANDED_NODES nr_import_max_expanded_nodes

/* Nodes a model's function calls may expand to in all (a call of a call of... multiplies). Internal, not
 * exported: the fuzz harness lowers it so that inputs stay within its time bound under the sanitizers. */
long nr_import_max_expanded_nodes = 200000L;

static netrun_status imp_err(imp_ctx *c, netrun_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static netrun_status imp_err(imp_ctx *c, netrun_status code, const char *fmt, ...) {
    char msg[NR_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return nr_error(code, "%s: %.*s%s", c->source, (int)c->where_len, c->where, msg);
}

/* Push a context prefix; returns the previous length to restore with where_pop. */
static size_t where_push(imp_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t where_push(imp_ctx *c, const char *fmt, ...) {
    size_t old = c->where_len;
    if (old < sizeof c->where - 1) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(c->where + old, sizeof c->where - old, fmt, ap);
        va_end(ap);
        if (n > 0) {
            size_t add = (size_t)n;
            c->where_len = old + add < sizeof c->where - 1 ? old + add : sizeof c->where - 1;
        }
    }
    return old;
}

static void where_pop(imp_ctx *c, size_t old) {
    c->where_len = old;
    c->where[old] = '\0';
}

static const char *str_or_empty(const char *s) { return s ? s : ""; }

static char *dup_bytes(const void *p, size_t n) {
    char *s = nr_malloc(n + 1);
    if (!s) return NULL;
    if (n) memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

/* ------------------------------------------------------------------------------------------------ */
/* wire-format pre-scan: nesting depth and structural validity                                     */

typedef struct scan_state {
    const uint8_t *base;
    int max_depth;
    const char *problem;
    size_t at;
} scan_state;

static int read_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*pos >= len) return 0;
        uint8_t b = p[(*pos)++];
        if (shift == 63 && (b & 0x7e)) return 0; /* more than 64 bits */
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

static int scan_message(scan_state *s, const uint8_t *p, size_t len, const ProtobufCMessageDescriptor *desc,
                        int depth) {
    size_t pos = 0;
    while (pos < len) {
        size_t field_start = pos;
        uint64_t key, n;
        if (!read_varint(p, len, &pos, &key)) {
            s->problem = "truncated or invalid field key";
            s->at = (size_t)(p - s->base) + field_start;
            return 0;
        }
        uint32_t wire = (uint32_t)(key & 7);
        uint64_t number = key >> 3;
        if (number == 0 || number > 536870911u) {
            s->problem = "invalid field number";
            s->at = (size_t)(p - s->base) + field_start;
            return 0;
        }
        switch (wire) {
        case 0:
            if (!read_varint(p, len, &pos, &n)) goto truncated;
            break;
        case 1:
            if (len - pos < 8) goto truncated;
            pos += 8;
            break;
        case 5:
            if (len - pos < 4) goto truncated;
            pos += 4;
            break;
        case 2: {
            if (!read_varint(p, len, &pos, &n)) goto truncated;
            if (n > len - pos) goto truncated;
            const ProtobufCFieldDescriptor *f =
                desc ? protobuf_c_message_descriptor_get_field(desc, (unsigned)number) : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                if (depth + 1 > s->max_depth) {
                    s->problem = "messages nested too deeply";
                    s->at = (size_t)(p - s->base) + field_start;
                    return 0;
                }
                if (!scan_message(s, p + pos, (size_t)n, f->descriptor, depth + 1)) return 0;
            }
            pos += (size_t)n;
            break;
        }
        default:
            s->problem = "unsupported wire type (groups or garbage)";
            s->at = (size_t)(p - s->base) + field_start;
            return 0;
        }
        continue;
    truncated:
        s->problem = "truncated field";
        s->at = (size_t)(p - s->base) + field_start;
        return 0;
    }
    return 1;
}

/* protobuf-c allocations: blocks of PB_BIG bytes or more are 64-byte aligned through nr_aligned_alloc, so
 * raw_data buffers can become tensor data without a second copy (nr_tensor_free uses nr_aligned_free). */
#define PB_BIG 4096

/* A block this large is a tensor's raw_data about to be copied out of the input: the moment to drop the pages of a
 * file mapping read so far (see nr_import_limits.data_is_file_mapping). */
#define PB_DROP ((size_t)1 << 20)

static void *pb_alloc(void *data, size_t size) {
    imp_ctx *c = data;
    /* Dropping the whole mapping is correct whatever protobuf-c reads next (a private, unwritten file mapping is
     * read again from the file), and cheap: only pages still mapped are touched. The copy that follows faults in
     * just its own source pages. */
    if (c->map_base && size >= PB_DROP) madvise(c->map_base, c->map_size, MADV_DONTNEED);
    void *p = nr_aligned_alloc(size ? size : 1, size >= PB_BIG ? 64 : 16);
    if (!p) c->pb_oom = 1;
    return p;
}

static void pb_free(void *data, void *p) {
    (void)data;
    nr_aligned_free(p);
}

/* Scan, then unpack with protobuf-c. what: "ONNX model" / "ONNX TensorProto". */
static ProtobufCMessage *checked_unpack(imp_ctx *c, const ProtobufCMessageDescriptor *desc, const void *data,
                                       size_t size, const char *what) {
    if (!data && size) {
        imp_err(c, NETRUN_ERR_INVALID_ARGUMENT, "no data");
        return NULL;
    }
    scan_state s = {data, 3 * (c->limits.max_graph_depth > 0 ? c->limits.max_graph_depth : 1) + 64, NULL, 0};
    if (!scan_message(&s, data, size, desc, 0)) {
        imp_err(c, NETRUN_ERR_INVALID_MODEL, "not a valid %s: %s at byte %zu of %zu", what, s.problem, s.at,
                size);
        return NULL;
    }
    ProtobufCAllocator alloc = {pb_alloc, pb_free, c};
    c->pb_oom = 0;
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, &alloc, size, data);
    c->pb_aligned = 1;
    if (!m && c->pb_oom) {
        imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory decoding %s (%zu bytes)", what, size);
        return NULL;
    }
    if (!m) {
        imp_err(c, NETRUN_ERR_INVALID_MODEL, "not a valid %s: protobuf decoding failed (%zu bytes; a field "
                "has the wrong wire type)", what, size);
        return NULL;
    }
    return m;
}

static void pb_free_message(imp_ctx *c, ProtobufCMessage *m) {
    ProtobufCAllocator alloc = {pb_alloc, pb_free, c};
    protobuf_c_message_free_unpacked(m, &alloc);
}

/* ------------------------------------------------------------------------------------------------ */
/* tensors                                                                                          */

/* Bytes per stored element in nr_tensor (sub-byte types unpacked to one byte); 0 when unsupported. */
static size_t storage_size(int dt) {
    switch (dt) {
    case NETRUN_DTYPE_FLOAT: case NETRUN_DTYPE_INT32: case NETRUN_DTYPE_UINT32: return 4;
    case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_INT8: case NETRUN_DTYPE_BOOL:
    case NETRUN_DTYPE_FLOAT8E4M3FN: case NETRUN_DTYPE_FLOAT8E4M3FNUZ: case NETRUN_DTYPE_FLOAT8E5M2:
    case NETRUN_DTYPE_FLOAT8E5M2FNUZ: case NETRUN_DTYPE_UINT4: case NETRUN_DTYPE_INT4:
    case NETRUN_DTYPE_FLOAT4E2M1: case NETRUN_DTYPE_FLOAT8E8M0: case NETRUN_DTYPE_UINT2: case NETRUN_DTYPE_INT2:
        return 1;
    case NETRUN_DTYPE_UINT16: case NETRUN_DTYPE_INT16: case NETRUN_DTYPE_FLOAT16: case NETRUN_DTYPE_BFLOAT16:
        return 2;
    case NETRUN_DTYPE_INT64: case NETRUN_DTYPE_DOUBLE: case NETRUN_DTYPE_UINT64: case NETRUN_DTYPE_COMPLEX64:
        return 8;
    case NETRUN_DTYPE_COMPLEX128: return 16;
    case NETRUN_DTYPE_STRING: return sizeof(char *);
    default: return 0;
    }
}

static const char *dtype_label(int dt) {
    static const char *names[] = {"undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64",
                                  "string", "bool", "float16", "double", "uint32", "uint64", "complex64",
                                  "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
                                  "float8e5m2fnuz", "uint4", "int4", "float4e2m1", "float8e8m0", "uint2", "int2"};
    if (dt >= 0 && dt < (int)(sizeof names / sizeof names[0])) return names[dt];
    return "unknown";
}

/* Bits per element where the file packs it (raw_data, external data, int32_data entries): the 4-bit types
 * two per byte, the 2-bit types four per byte, low bits first; 8 for everything else. */
static int packed_bits(int dt) {
    switch (dt) {
    case NETRUN_DTYPE_INT4: case NETRUN_DTYPE_UINT4: case NETRUN_DTYPE_FLOAT4E2M1: return 4;
    case NETRUN_DTYPE_INT2: case NETRUN_DTYPE_UINT2: return 2;
    default: return 8;
    }
}

static int is_sub_byte(int dt) { return packed_bits(dt) < 8; }

/* Bytes that count packed elements of a sub-byte type take (the last byte may be partly padding). */
static size_t packed_bytes(int dt, size_t count) {
    size_t per = (size_t)(8 / packed_bits(dt));
    return count / per + (count % per != 0);
}

static void format_dims(char *buf, size_t cap, size_t n, const int64_t *dims) {
    size_t len = 0;
    buf[0] = '\0';
    len += (size_t)snprintf(buf, cap, "[");
    for (size_t i = 0; i < n && len < cap; i++) {
        if (i == 16 && n > 17) {
            len += (size_t)snprintf(buf + len, cap - len, ",...");
            break;
        }
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? "," : "", (long long)dims[i]);
    }
    if (len < cap) snprintf(buf + len, cap - len, "]");
}

static nr_tensor *tensor_alloc(imp_ctx *c, int dt, int rank, const int64_t *dims, size_t nbytes, int alloc_data) {
    nr_tensor *t = nr_calloc(1, sizeof *t);
    if (!t) {
        imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    t->dtype = (netrun_dtype)dt;
    t->rank = rank;
    for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
    t->nbytes = nbytes;
    t->owns_data = 1;
    if (alloc_data) {
        /* same allocator as nr_tensor_new (nr_tensor_free uses nr_aligned_free); zeroed so string tensors
         * start with NULL pointers and a partial fill frees cleanly. Never NULL, even for 0 bytes. */
        t->data = nr_aligned_alloc(nbytes ? nbytes : 1, 64);
        if (t->data) memset(t->data, 0, nbytes ? nbytes : 1);
        if (!t->data) {
            nr_free(t);
            imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory allocating %zu bytes", nbytes);
            return NULL;
        }
    }
    return t;
}

/* Element i of a sub-byte type out of the packed byte b that holds it, as netrun stores it (one per byte):
 * int4/int2 sign-extended, uint4/uint2 and float4e2m1 (its 4-bit code) zero-extended. */
static uint8_t unpack_elem(uint8_t b, size_t i, int dt) {
    int bits = packed_bits(dt);
    unsigned per = (unsigned)(8 / bits), shift = (unsigned)(i % per) * (unsigned)bits;
    uint8_t mask = (uint8_t)((1u << bits) - 1u);
    uint8_t v = (uint8_t)((b >> shift) & mask);
    if ((dt == NETRUN_DTYPE_INT4 || dt == NETRUN_DTYPE_INT2) && (v >> (bits - 1)))
        v = (uint8_t)(v | (uint8_t)~mask);
    return v;
}

static void unpack_sub_byte(uint8_t *dst, const uint8_t *src, size_t count, int dt) {
    size_t per = (size_t)(8 / packed_bits(dt));
    for (size_t i = 0; i < count; i++) dst[i] = unpack_elem(src[i / per], i, dt);
}

static int host_is_little_endian(void) {
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static void byteswap_elems(uint8_t *p, size_t nbytes, int dt) {
    size_t unit = storage_size(dt);
    if (dt == NETRUN_DTYPE_COMPLEX64 || dt == NETRUN_DTYPE_COMPLEX128) unit /= 2; /* (re, im) pairs */
    if (unit <= 1) return;
    for (size_t off = 0; off + unit <= nbytes; off += unit)
        for (size_t i = 0; i < unit / 2; i++) {
            uint8_t tmp = p[off + i];
            p[off + i] = p[off + unit - 1 - i];
            p[off + unit - 1 - i] = tmp;
        }
}

static int parse_u64_string(const char *s, uint64_t *out) {
    if (!s || !*s) return 0;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return 0;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

static netrun_status add_mapping(imp_ctx *c, void *addr, size_t size, int *index) {
    nr_model_ir *m = c->model;
    nr_mapping *nm = nr_realloc(m->mappings, (size_t)(m->n_mappings + 1) * sizeof *nm);
    if (!nm) return imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    m->mappings = nm;
    nm[m->n_mappings].addr = addr;
    nm[m->n_mappings].size = size;
    *index = m->n_mappings++;
    return NETRUN_OK;
}

/* Open (or reuse) the mapping of an external data file confined to base_dir. */
static netrun_status open_external(imp_ctx *c, const char *tname, const char *location, ext_file **out) {
    if (!c->model || !c->base_dir)
        return imp_err(c, NETRUN_ERR_INVALID_MODEL,
                       "%s: external data ('%s') is not allowed here (no base folder for external "
                       "data: load the model from a file)", tname, location);
    if (!location || !*location)
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: external data has no 'location'", tname);
    if (location[0] == '/')
        return imp_err(c, NETRUN_ERR_INVALID_MODEL,
                       "%s: external data location '%s' is an absolute path; only paths inside the "
                       "model's folder are allowed", tname, location);
    if (!c->base_real) {
        c->base_real = realpath(c->base_dir, NULL);
        if (!c->base_real)
            return imp_err(c, NETRUN_ERR_IO, "%s: cannot resolve the model folder '%s': %s", tname,
                           c->base_dir, strerror(errno));
    }
    size_t bl = strlen(c->base_dir), ll = strlen(location), plen;
    if (!nr_add_size(bl, ll, &plen) || !nr_add_size(plen, 2, &plen))
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: external data path too long", tname);
    char *path = nr_malloc(plen);
    if (!path) return imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    snprintf(path, plen, "%s/%s", c->base_dir, location);
    char *real = realpath(path, NULL);
    int err = errno;
    nr_free(path);
    if (!real)
        return imp_err(c, NETRUN_ERR_IO, "%s: external data file '%s' (in '%s'): %s", tname, location,
                       c->base_dir, strerror(err));
    size_t rl = strlen(c->base_real);
    /* "/" as the base folder contains everything; otherwise require base + '/' as a prefix */
    int inside = strcmp(c->base_real, "/") == 0 ||
                 (strncmp(real, c->base_real, rl) == 0 && real[rl] == '/');
    if (!inside) {
        imp_err(c, NETRUN_ERR_INVALID_MODEL,
                "%s: external data location '%s' resolves to '%s', outside the model's folder '%s'; "
                "refused", tname, location, real, c->base_real);
        free(real);
        return NETRUN_ERR_INVALID_MODEL;
    }
    for (int i = 0; i < c->n_files; i++)
        if (strcmp(c->files[i].real, real) == 0) {
            free(real);
            *out = &c->files[i];
            return NETRUN_OK;
        }
    /* Never open what is not a regular file: a FIFO would block the open (forever, without a writer) and a
     * device may act on open. Checked on the path first, then on the descriptor opened without blocking. */
    struct stat st;
    if (stat(real, &st) == 0 && !S_ISREG(st.st_mode)) {
        imp_err(c, NETRUN_ERR_IO, "%s: external data '%s' is %s, not a regular file", tname, location,
                nr_file_kind(st.st_mode));
        free(real);
        return NETRUN_ERR_IO;
    }
    int fd = open(real, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        err = errno;
        imp_err(c, NETRUN_ERR_IO, "%s: cannot open external data file '%s': %s", tname, location,
                strerror(err));
        free(real);
        return NETRUN_ERR_IO;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        imp_err(c, NETRUN_ERR_IO, "%s: external data '%s' is not a regular file", tname, location);
        free(real);
        return NETRUN_ERR_IO;
    }
    size_t fsize = (size_t)st.st_size;
    int mi = -1;
    if (fsize > 0) {
        void *addr = mmap(NULL, fsize, PROT_READ, MAP_PRIVATE, fd, 0);
        if (addr == MAP_FAILED) {
            err = errno;
            close(fd);
            imp_err(c, NETRUN_ERR_IO, "%s: cannot map external data file '%s': %s", tname, location,
                    strerror(err));
            free(real);
            return NETRUN_ERR_IO;
        }
        netrun_status st2 = add_mapping(c, addr, fsize, &mi);
        if (st2) {
            munmap(addr, fsize);
            close(fd);
            free(real);
            return st2;
        }
    }
    close(fd);
    ext_file *nf = nr_realloc(c->files, (size_t)(c->n_files + 1) * sizeof *nf);
    if (!nf) {
        free(real);
        return imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    }
    c->files = nf;
    char *owned = nr_strdup(real);
    free(real);
    if (!owned) return imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    nf[c->n_files].real = owned;
    nf[c->n_files].mapping = mi;
    nf[c->n_files].size = fsize;
    *out = &nf[c->n_files++];
    return NETRUN_OK;
}

static netrun_status load_external(imp_ctx *c, const Onnx__TensorProto *tp, const char *tname, nr_tensor *t,
                                   size_t count, size_t file_bytes) {
    const char *location = NULL;
    uint64_t offset = 0, length = 0;
    int has_length = 0;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        const char *k = str_or_empty(e->key), *v = str_or_empty(e->value);
        if (strcmp(k, "location") == 0) {
            location = v;
        } else if (strcmp(k, "offset") == 0) {
            if (!parse_u64_string(v, &offset))
                return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: external data offset '%s' is not a "
                               "non-negative integer", tname, v);
        } else if (strcmp(k, "length") == 0) {
            if (!parse_u64_string(v, &length))
                return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: external data length '%s' is not a "
                               "non-negative integer", tname, v);
            has_length = 1;
        }
    }
    if (!location)
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: external data has no 'location'", tname);
    if (has_length && length != file_bytes)
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: external data length %llu does not match the "
                       "%zu bytes its dims and type need", tname, (unsigned long long)length, file_bytes);
    ext_file *f = NULL;
    netrun_status st = open_external(c, tname, location, &f);
    if (st) return st;
    if (offset > f->size || file_bytes > f->size - offset)
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: external data [%llu, +%zu) lies past the end "
                       "of '%s' (%zu bytes)", tname, (unsigned long long)offset, file_bytes, location, f->size);
    if (file_bytes == 0) return NETRUN_OK;
    const uint8_t *src = (const uint8_t *)c->model->mappings[f->mapping].addr + offset;
    size_t elem = storage_size(t->dtype);
    if (!is_sub_byte(t->dtype) && host_is_little_endian() && (uintptr_t)src % elem == 0) {
        t->data = (void *)src; /* read-only mapping owned by the model */
        t->owns_data = 0;
        return NETRUN_OK;
    }
    t->data = nr_aligned_alloc(t->nbytes, 64);
    if (!t->data) return imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "%s: out of memory", tname);
    t->owns_data = 1;
    if (is_sub_byte(t->dtype)) {
        unpack_sub_byte(t->data, src, count, t->dtype);
    } else {
        memcpy(t->data, src, t->nbytes);
        if (!host_is_little_endian()) byteswap_elems(t->data, t->nbytes, t->dtype);
    }
    return NETRUN_OK;
}

/* Which typed field a dtype's data lives in. */
enum { F_FLOAT, F_INT32, F_INT64, F_DOUBLE, F_UINT64, F_STRING };

static int typed_field(int dt) {
    switch (dt) {
    case NETRUN_DTYPE_FLOAT: case NETRUN_DTYPE_COMPLEX64: return F_FLOAT;
    case NETRUN_DTYPE_INT64: return F_INT64;
    case NETRUN_DTYPE_DOUBLE: case NETRUN_DTYPE_COMPLEX128: return F_DOUBLE;
    case NETRUN_DTYPE_UINT32: case NETRUN_DTYPE_UINT64: return F_UINT64;
    case NETRUN_DTYPE_STRING: return F_STRING;
    default: return F_INT32;
    }
}

static const char *field_label(int f) {
    static const char *n[] = {"float_data", "int32_data", "int64_data", "double_data", "uint64_data",
                              "string_data"};
    return n[f];
}

static size_t typed_count(const Onnx__TensorProto *tp, int f) {
    switch (f) {
    case F_FLOAT: return tp->n_float_data;
    case F_INT32: return tp->n_int32_data;
    case F_INT64: return tp->n_int64_data;
    case F_DOUBLE: return tp->n_double_data;
    case F_UINT64: return tp->n_uint64_data;
    default: return tp->n_string_data;
    }
}

/* The typed field of dtype dt holds exactly the entries `count` elements need (checked before any allocation
 * so that a few bytes of protobuf cannot make the importer reserve gigabytes). */
static netrun_status check_typed(imp_ctx *c, const Onnx__TensorProto *tp, const char *tname, int dt, size_t count,
                                 const char *dimstr) {
    int f = typed_field(dt);
    for (int g = F_FLOAT; g <= F_STRING; g++)
        if (g != f && typed_count(tp, g))
            return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: has %zu %s entries, but a %s tensor keeps "
                           "its data in %s", tname, typed_count(tp, g), field_label(g), dtype_label(dt),
                           field_label(f));
    size_t have = typed_count(tp, f), need = count;
    if (dt == NETRUN_DTYPE_COMPLEX64 || dt == NETRUN_DTYPE_COMPLEX128) need = count * 2; /* count*16 fits */
    if (is_sub_byte(dt)) need = packed_bytes(dt, count);
    if (have != need)
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: %s has %zu entries, dims %s of %s need %zu",
                       tname, field_label(f), have, dimstr, dtype_label(dt), need);
    return NETRUN_OK;
}

static netrun_status fill_typed(imp_ctx *c, const Onnx__TensorProto *tp, const char *tname, nr_tensor *t,
                                size_t count, const char *dimstr) {
    int dt = t->dtype;
    netrun_status cst = check_typed(c, tp, tname, dt, count, dimstr);
    if (cst != NETRUN_OK) return cst;
    if (count == 0) return NETRUN_OK;
    uint8_t *d = t->data;
    switch (dt) {
    case NETRUN_DTYPE_FLOAT: case NETRUN_DTYPE_COMPLEX64: memcpy(d, tp->float_data, t->nbytes); break;
    case NETRUN_DTYPE_DOUBLE: case NETRUN_DTYPE_COMPLEX128: memcpy(d, tp->double_data, t->nbytes); break;
    case NETRUN_DTYPE_INT64: memcpy(d, tp->int64_data, t->nbytes); break;
    case NETRUN_DTYPE_UINT64: memcpy(d, tp->uint64_data, t->nbytes); break;
    case NETRUN_DTYPE_UINT32:
        for (size_t i = 0; i < count; i++) ((uint32_t *)(void *)d)[i] = (uint32_t)tp->uint64_data[i];
        break;
    case NETRUN_DTYPE_INT32: memcpy(d, tp->int32_data, t->nbytes); break;
    case NETRUN_DTYPE_INT16: case NETRUN_DTYPE_UINT16: case NETRUN_DTYPE_FLOAT16: case NETRUN_DTYPE_BFLOAT16:
        for (size_t i = 0; i < count; i++) {
            uint16_t v = (uint16_t)(uint32_t)tp->int32_data[i];
            memcpy(d + 2 * i, &v, 2);
        }
        break;
    case NETRUN_DTYPE_BOOL:
        for (size_t i = 0; i < count; i++) d[i] = tp->int32_data[i] != 0;
        break;
    case NETRUN_DTYPE_INT4: case NETRUN_DTYPE_UINT4: case NETRUN_DTYPE_FLOAT4E2M1: case NETRUN_DTYPE_INT2:
    case NETRUN_DTYPE_UINT2: {
        /* each int32 entry carries one packed byte (two 4-bit or four 2-bit elements) */
        size_t per = (size_t)(8 / packed_bits(dt));
        for (size_t i = 0; i < count; i++) d[i] = unpack_elem((uint8_t)(uint32_t)tp->int32_data[i / per], i, dt);
        break;
    }
    case NETRUN_DTYPE_STRING: {
        char **s = (char **)t->data;
        for (size_t i = 0; i < count; i++) {
            s[i] = dup_bytes(tp->string_data[i].data, tp->string_data[i].len);
            if (!s[i]) return imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "%s: out of memory", tname);
        }
        break;
    }
    default: /* 1-byte types: int8, uint8, float8 variants (float8e8m0 included) */
        for (size_t i = 0; i < count; i++) d[i] = (uint8_t)(uint32_t)tp->int32_data[i];
        break;
    }
    return NETRUN_OK;
}

/* Convert one TensorProto. label names it in messages ("initializer 'w'", "tensor 'x'"). */
static netrun_status convert_tensor(imp_ctx *c, const Onnx__TensorProto *tp, const char *label, nr_tensor **out) {
    char lbuf[200];
    if (!label) {
        if (tp->name && *tp->name) snprintf(lbuf, sizeof lbuf, "tensor '%.160s'", tp->name);
        else snprintf(lbuf, sizeof lbuf, "tensor");
        label = lbuf;
    }
    const char *tname = label;
    *out = NULL;
    int dt = tp->has_data_type ? tp->data_type : 0;
    if (dt <= 0 || dt >= NETRUN_DTYPE_COUNT_ || storage_size(dt) == 0) {
        if (dt == 0)
            return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: data_type is not set", tname);
        return imp_err(c, NETRUN_ERR_UNSUPPORTED, "%s: data_type %d is not supported", tname, dt);
    }
    if (tp->n_dims > NETRUN_MAX_RANK)
        return imp_err(c, NETRUN_ERR_UNSUPPORTED, "%s: rank %zu exceeds the maximum of %d", tname,
                       tp->n_dims, NETRUN_MAX_RANK);
    char dimstr[200];
    format_dims(dimstr, sizeof dimstr, tp->n_dims, tp->dims);
    size_t count = 1;
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0)
            return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: dims %s: dimension %zu is negative", tname,
                           dimstr, i);
        if ((uint64_t)tp->dims[i] > SIZE_MAX || !nr_mul_size(count, (size_t)tp->dims[i], &count))
            return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: dims %s: element count overflows", tname,
                           dimstr);
    }
    size_t nbytes;
    if (!nr_mul_size(count, storage_size(dt), &nbytes) || count > (size_t)INT64_MAX / 16)
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: dims %s of %s: byte size overflows", tname,
                       dimstr, dtype_label(dt));
    if (nbytes > c->limits.max_tensor_bytes)
        return imp_err(c, NETRUN_ERR_UNSUPPORTED, "%s: dims %s of %s need %zu bytes, over the limit of "
                       "%zu bytes", tname, dimstr, dtype_label(dt), nbytes, c->limits.max_tensor_bytes);
    if (tp->segment)
        return imp_err(c, NETRUN_ERR_UNSUPPORTED, "%s: segmented tensors are not supported", tname);
    /* size of the data as stored in raw_data / files: sub-byte types are packed (see packed_bits) */
    size_t file_bytes = is_sub_byte(dt) ? packed_bytes(dt, count) : nbytes;
    int external = tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (tp->has_data_location && !external && tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT)
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: unknown data_location %d", tname,
                       (int)tp->data_location);

    int64_t dims[NETRUN_MAX_RANK];
    for (size_t i = 0; i < tp->n_dims; i++) dims[i] = tp->dims[i];
    netrun_status st;
    nr_tensor *t;
    if (external) {
        if (dt == NETRUN_DTYPE_STRING)
            return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: string tensors cannot use external data",
                           tname);
        t = tensor_alloc(c, dt, (int)tp->n_dims, dims, nbytes, file_bytes == 0); /* empty: never NULL */
        if (!t) return NETRUN_ERR_OUT_OF_MEMORY;
        st = load_external(c, tp, tname, t, count, file_bytes);
    } else if (tp->has_raw_data && (tp->raw_data.len || dt == NETRUN_DTYPE_STRING || count == 0 ||
                                    !typed_count(tp, typed_field(dt)))) {
        if (dt == NETRUN_DTYPE_STRING)
            return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: string tensors cannot use raw_data "
                           "(string_data is required)", tname);
        if (tp->raw_data.len != file_bytes)
            return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s: raw_data has %zu bytes, dims %s of %s "
                           "need %zu", tname, tp->raw_data.len, dimstr, dtype_label(dt), file_bytes);
        st = NETRUN_OK;
        /* Large raw_data was allocated 64-byte aligned by pb_alloc: take it over instead of copying. */
        int steal = !is_sub_byte(dt) && nbytes >= PB_BIG && host_is_little_endian() &&
                    ((uintptr_t)tp->raw_data.data % 64) == 0 && c->pb_aligned;
        t = tensor_alloc(c, dt, (int)tp->n_dims, dims, nbytes, !steal);
        if (!t) return NETRUN_ERR_OUT_OF_MEMORY;
        if (steal) {
            t->data = tp->raw_data.data;
            ((Onnx__TensorProto *)tp)->raw_data.data = NULL; /* free_unpacked skips NULL bytes */
            ((Onnx__TensorProto *)tp)->raw_data.len = 0;
        } else if (is_sub_byte(dt)) {
            unpack_sub_byte(t->data, tp->raw_data.data, count, dt);
        } else if (nbytes) {
            memcpy(t->data, tp->raw_data.data, nbytes);
            if (!host_is_little_endian()) byteswap_elems(t->data, nbytes, dt);
        }
    } else {
        if ((st = check_typed(c, tp, tname, dt, count, dimstr)) != NETRUN_OK) return st;
        t = tensor_alloc(c, dt, (int)tp->n_dims, dims, nbytes, 1);
        if (!t) return NETRUN_ERR_OUT_OF_MEMORY;
        st = fill_typed(c, tp, tname, t, count, dimstr);
    }
    if (st) {
        nr_tensor_free(t);
        return st;
    }
    *out = t;
    return NETRUN_OK;
}

/* ------------------------------------------------------------------------------------------------ */
/* graphs                                                                                           */

static netrun_status import_graph(imp_ctx *c, const Onnx__GraphProto *gp, nr_graph *parent, int depth,
                                  nr_graph **out);
static netrun_status import_graph_body_at(imp_ctx *c, const Onnx__GraphProto *gp, nr_graph *g, int depth);

static netrun_status set_value_type(imp_ctx *c, nr_value *v, const Onnx__TypeProto *type, const char *kind,
                                    int strict) {
    v->dtype = NETRUN_DTYPE_UNDEFINED;
    v->rank = -1;
    if (!type || type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !type->tensor_type)
        return NETRUN_OK; /* sequence/map/optional/sparse: not modelled yet */
    const Onnx__TypeProto__Tensor *tt = type->tensor_type;
    int dt = tt->has_elem_type ? tt->elem_type : 0;
    if (dt < 0 || dt >= NETRUN_DTYPE_COUNT_) {
        if (strict)
            return imp_err(c, NETRUN_ERR_UNSUPPORTED, "%s '%s': element type %d is not supported", kind, v->name,
                           dt);
        dt = 0;
    }
    v->dtype = (netrun_dtype)dt;
    if (!tt->shape) return NETRUN_OK;
    const Onnx__TensorShapeProto *sp = tt->shape;
    if (sp->n_dim > NETRUN_MAX_RANK) {
        if (!strict) return NETRUN_OK;
        return imp_err(c, NETRUN_ERR_UNSUPPORTED, "%s '%s': rank %zu exceeds the maximum of %d", kind, v->name,
                       sp->n_dim, NETRUN_MAX_RANK);
    }
    for (size_t i = 0; i < sp->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value < 0 && strict)
            return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s '%s': dimension %zu is negative (%lld)", kind,
                           v->name, i, (long long)d->dim_value);
    }
    for (int i = 0; i < NETRUN_MAX_RANK; i++) {
        nr_free(v->dim_names[i]);
        v->dim_names[i] = NULL;
        v->dims[i] = -1;
    }
    v->rank = (int)sp->n_dim;
    for (size_t i = 0; i < sp->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            v->dims[i] = d->dim_value < 0 ? -1 : d->dim_value; /* value_info only: negative = unknown */
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param &&
                   *d->dim_param) {
            v->dim_names[i] = nr_strdup(d->dim_param);
            if (!v->dim_names[i]) return imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        }
    }
    return NETRUN_OK;
}

static void set_value_from_tensor(nr_value *v, const nr_tensor *t) {
    v->dtype = t->dtype;
    v->rank = t->rank;
    for (int i = 0; i < NETRUN_MAX_RANK; i++) {
        nr_free(v->dim_names[i]);
        v->dim_names[i] = NULL;
        v->dims[i] = i < t->rank ? t->dims[i] : -1;
    }
}

static const char *fn_name(imp_ctx *c, const char *name);
static netrun_status resolve_attr(imp_ctx *c, const Onnx__AttributeProto *ap, Onnx__AttributeProto *tmp,
                                  const Onnx__AttributeProto **out);

/* Id of the value `name` in g (created when new). Names read from the file go through fn_name first (once). */
static netrun_status value_id(imp_ctx *c, nr_graph *g, const char *name, int *id) {
    *id = nr_graph_value(g, name);
    if (*id < 0) return imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory adding value '%s'", name);
    return NETRUN_OK;
}

static netrun_status convert_attr(imp_ctx *c, const Onnx__AttributeProto *ap, nr_graph *g, int depth,
                                  nr_attr *a) {
    const char *an = str_or_empty(ap->name);
    a->name = nr_strdup(an);
    if (!a->name) return imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    if (!*an) return imp_err(c, NETRUN_ERR_INVALID_MODEL, "attribute without a name");
    if (ap->ref_attr_name && *ap->ref_attr_name)
        return imp_err(c, NETRUN_ERR_UNSUPPORTED, "attribute '%s': references to function attributes ('%s') are "
                       "only allowed inside functions", an, ap->ref_attr_name);
    int type = ap->has_type ? (int)ap->type : 0;
    if (type == 0) { /* old models: infer from the field that is set */
        if (ap->has_f) type = NR_ATTR_FLOAT;
        else if (ap->has_i) type = NR_ATTR_INT;
        else if (ap->has_s) type = NR_ATTR_STRING;
        else if (ap->t) type = NR_ATTR_TENSOR;
        else if (ap->g) type = NR_ATTR_GRAPH;
        else if (ap->n_floats) type = NR_ATTR_FLOATS;
        else if (ap->n_ints) type = NR_ATTR_INTS;
        else if (ap->n_strings) type = NR_ATTR_STRINGS;
        else if (ap->n_tensors) type = NR_ATTR_TENSORS;
        else if (ap->n_graphs) type = NR_ATTR_GRAPHS;
        else if (ap->sparse_tensor || ap->n_sparse_tensors) type = 11;
        else return imp_err(c, NETRUN_ERR_INVALID_MODEL, "attribute '%s': has no type and no value", an);
    }
    a->type = (nr_attr_type)type;
    netrun_status st = NETRUN_OK;
    size_t old = where_push(c, "attribute '%.100s': ", an);
    switch (type) {
    case NR_ATTR_FLOAT: a->f = ap->f; break;
    case NR_ATTR_INT: a->i = ap->i; break;
    case NR_ATTR_STRING:
        a->s = dup_bytes(ap->s.data, ap->s.len);
        a->s_len = ap->s.len;
        if (!a->s) st = imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        break;
    case NR_ATTR_TENSOR:
        if (!ap->t) st = imp_err(c, NETRUN_ERR_INVALID_MODEL, "type TENSOR but no tensor 't'");
        else st = convert_tensor(c, ap->t, NULL, &a->t);
        break;
    case NR_ATTR_GRAPH:
        if (!ap->g) st = imp_err(c, NETRUN_ERR_INVALID_MODEL, "type GRAPH but no graph 'g'");
        else st = import_graph(c, ap->g, g, depth + 1, &a->g);
        break;
    case NR_ATTR_FLOATS:
        a->n = (int64_t)ap->n_floats;
        if (ap->n_floats) {
            a->floats = nr_malloc(ap->n_floats * sizeof(float));
            if (!a->floats) st = imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
            else memcpy(a->floats, ap->floats, ap->n_floats * sizeof(float));
        }
        break;
    case NR_ATTR_INTS:
        a->n = (int64_t)ap->n_ints;
        if (ap->n_ints) {
            a->ints = nr_malloc(ap->n_ints * sizeof(int64_t));
            if (!a->ints) st = imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
            else memcpy(a->ints, ap->ints, ap->n_ints * sizeof(int64_t));
        }
        break;
    case NR_ATTR_STRINGS:
        if (ap->n_strings) {
            a->strings = nr_calloc(ap->n_strings, sizeof(char *));
            if (!a->strings) {
                st = imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
                break;
            }
            a->n = (int64_t)ap->n_strings;
            for (size_t i = 0; i < ap->n_strings && !st; i++) {
                a->strings[i] = dup_bytes(ap->strings[i].data, ap->strings[i].len);
                if (!a->strings[i]) st = imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
            }
        }
        break;
    case NR_ATTR_TENSORS:
        if (ap->n_tensors) {
            a->tensors = nr_calloc(ap->n_tensors, sizeof(nr_tensor *));
            if (!a->tensors) {
                st = imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
                break;
            }
            a->n = (int64_t)ap->n_tensors;
            for (size_t i = 0; i < ap->n_tensors && !st; i++) {
                char what[64];
                snprintf(what, sizeof what, "tensors[%zu]", i);
                st = convert_tensor(c, ap->tensors[i], ap->tensors[i]->name && *ap->tensors[i]->name ? NULL : what,
                                    &a->tensors[i]);
            }
        }
        break;
    case NR_ATTR_GRAPHS:
        if (ap->n_graphs) {
            a->graphs = nr_calloc(ap->n_graphs, sizeof(nr_graph *));
            if (!a->graphs) {
                st = imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
                break;
            }
            a->n = (int64_t)ap->n_graphs;
            for (size_t i = 0; i < ap->n_graphs && !st; i++)
                st = import_graph(c, ap->graphs[i], g, depth + 1, &a->graphs[i]);
        }
        break;
    case 11: case 12:
        st = imp_err(c, NETRUN_ERR_UNSUPPORTED, "sparse tensor attributes are not supported");
        break;
    case 13: case 14:
        /* type annotations (e.g. Optional's 'type'): kept by name only; ops that need them reject the node */
        a->type = NR_ATTR_UNDEFINED;
        break;
    default:
        st = imp_err(c, NETRUN_ERR_INVALID_MODEL, "unknown attribute type %d", type);
        break;
    }
    where_pop(c, old);
    return st;
}

/* Make a value hold constant data; refuses a second definition of the same name. */
static netrun_status define_constant(imp_ctx *c, nr_graph *g, const char *name, nr_tensor *t, const char *kind) {
    int id;
    netrun_status st = value_id(c, g, name, &id);
    if (st) {
        nr_tensor_free(t);
        return st;
    }
    nr_value *v = &g->values[id];
    if (v->constant || v->producer >= 0) {
        nr_tensor_free(t);
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "%s '%s' is defined more than once", kind, name);
    }
    v->constant = t;
    v->producer = -1;
    set_value_from_tensor(v, t);
    return NETRUN_OK;
}

/* A Constant node: its single attribute becomes the output's constant data. */
static netrun_status import_constant_node(imp_ctx *c, const Onnx__NodeProto *np, nr_graph *g) {
    if (np->n_output != 1 || !np->output[0] || !*np->output[0])
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "a Constant node needs exactly one named output (has %zu)",
                       np->n_output);
    if (np->n_attribute != 1)
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "a Constant node needs exactly one value attribute (has %zu)",
                       np->n_attribute);
    Onnx__AttributeProto value;
    const Onnx__AttributeProto *ap;
    netrun_status rs = resolve_attr(c, np->attribute[0], &value, &ap);
    if (rs != NETRUN_OK) return rs;
    if (!ap)
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "the Constant's value refers to function attribute '%s', which "
                       "the call does not give and which has no default", np->attribute[0]->ref_attr_name);
    const char *an = str_or_empty(ap->name);
    size_t old = where_push(c, "attribute '%.100s': ", an);
    nr_tensor *t = NULL;
    netrun_status st = NETRUN_OK;
    int64_t n;
    if (strcmp(an, "value") == 0) {
        if (!ap->t) st = imp_err(c, NETRUN_ERR_INVALID_MODEL, "no tensor");
        else st = convert_tensor(c, ap->t, NULL, &t);
    } else if (strcmp(an, "value_float") == 0 || strcmp(an, "value_floats") == 0) {
        int list = an[11] == 's';
        n = list ? (int64_t)ap->n_floats : 1;
        if (!(t = tensor_alloc(c, NETRUN_DTYPE_FLOAT, list, &n, (size_t)n * sizeof(float), 1)))
            st = NETRUN_ERR_OUT_OF_MEMORY;
        else if (list) { if (n) memcpy(t->data, ap->floats, (size_t)n * sizeof(float)); }
        else memcpy(t->data, &ap->f, sizeof(float));
    } else if (strcmp(an, "value_int") == 0 || strcmp(an, "value_ints") == 0) {
        int list = an[9] == 's';
        n = list ? (int64_t)ap->n_ints : 1;
        if (!(t = tensor_alloc(c, NETRUN_DTYPE_INT64, list, &n, (size_t)n * sizeof(int64_t), 1)))
            st = NETRUN_ERR_OUT_OF_MEMORY;
        else if (list) { if (n) memcpy(t->data, ap->ints, (size_t)n * sizeof(int64_t)); }
        else memcpy(t->data, &ap->i, sizeof(int64_t));
    } else if (strcmp(an, "value_string") == 0 || strcmp(an, "value_strings") == 0) {
        int list = an[12] == 's';
        n = list ? (int64_t)ap->n_strings : 1;
        if (!(t = tensor_alloc(c, NETRUN_DTYPE_STRING, list, &n, (size_t)n * sizeof(char *), 1))) {
            st = NETRUN_ERR_OUT_OF_MEMORY;
        } else {
            char **s = t->data;
            for (int64_t i = 0; i < n && !st; i++) {
                const ProtobufCBinaryData *b = list ? &ap->strings[i] : &ap->s;
                s[i] = dup_bytes(b->data, b->len);
                if (!s[i]) st = imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
            }
        }
    } else if (strcmp(an, "sparse_value") == 0) {
        st = imp_err(c, NETRUN_ERR_UNSUPPORTED, "sparse constants are not supported");
    } else {
        st = imp_err(c, NETRUN_ERR_INVALID_MODEL, "unknown Constant attribute");
    }
    where_pop(c, old);
    if (st) {
        nr_tensor_free(t);
        return st;
    }
    return define_constant(c, g, fn_name(c, np->output[0]), t, "value");
}

/* ------------------------------------------------------------------------------------------------ */
/* model-local functions (FunctionProto): expanded at import into the caller's graph                */

/* Inside a call, a name of the function body: renamed to the caller's (formal inputs and outputs) or to a name of
 * this call alone. Names of subgraphs inside the body that the body itself does not know stay as they are. */
static const char *fn_name(imp_ctx *c, const char *name) {
    fn_frame *f = c->frame;
    if (!f || !name) return name;
    int k = nr_strmap_get(&f->names, name);
    if (k >= 0) return f->to[k];
    return name; /* a subgraph's own value (every name of the body itself is in the map: expand_call) */
}

static int frame_add(fn_frame *f, const char *from, const char *to) {
    if (nr_strmap_get(&f->names, from) >= 0) return 1; /* first mapping wins (inputs before outputs) */
    if (f->n_names == f->cap_names) {
        int nc = f->cap_names ? 2 * f->cap_names : 16;
        char **a = nr_realloc(f->from, sizeof(char *) * (size_t)nc);
        if (!a) return 0;
        f->from = a;
        char **b = nr_realloc(f->to, sizeof(char *) * (size_t)nc);
        if (!b) return 0;
        f->to = b;
        f->cap_names = nc;
    }
    char *x = nr_strdup(from), *y = nr_strdup(to);
    if (!x || !y) {
        nr_free(x);
        nr_free(y);
        return 0;
    }
    f->from[f->n_names] = x;
    f->to[f->n_names] = y;
    if (nr_strmap_put(&f->names, x, f->n_names) != 0) {
        nr_free(x);
        nr_free(y);
        return 0;
    }
    f->n_names++;
    return 1;
}

/* A body name that is neither a formal input nor output: "<call prefix><name>". */
static int frame_add_local(fn_frame *f, const char *from) {
    if (!from || !*from || nr_strmap_get(&f->names, from) >= 0) return 1;
    size_t n = strlen(f->prefix) + strlen(from) + 1;
    char *to = nr_malloc(n);
    if (!to) return 0;
    snprintf(to, n, "%s%s", f->prefix, from);
    int ok = frame_add(f, from, to);
    nr_free(to);
    return ok;
}

static void frame_free(fn_frame *f) {
    for (int i = 0; i < f->n_names; i++) {
        nr_free(f->from[i]);
        nr_free(f->to[i]);
    }
    nr_free(f->from);
    nr_free(f->to);
    nr_strmap_free(&f->names);
    nr_free(f->prefix);
    nr_free((void *)f->attr_value);
}

static const Onnx__FunctionProto *find_function(const imp_ctx *c, const char *domain, const char *op,
                                                const char *overload) {
    for (size_t i = 0; i < c->n_functions; i++) {
        const Onnx__FunctionProto *f = c->functions[i];
        if (!strcmp(str_or_empty(f->name), op) && !strcmp(str_or_empty(f->domain), domain) &&
            !strcmp(str_or_empty(f->overload), overload))
            return f;
    }
    return NULL;
}

/* The value an attribute of a body node takes. A reference (ref_attr_name) to an attribute of the function takes
 * the call's value, else the function's default, else the attribute is left out (*out = NULL). Inside calls tmp
 * receives a copy of the value under the body node's own attribute name. */
static netrun_status resolve_attr(imp_ctx *c, const Onnx__AttributeProto *ap, Onnx__AttributeProto *tmp,
                                  const Onnx__AttributeProto **out) {
    *out = ap;
    if (!ap->ref_attr_name || !*ap->ref_attr_name) return NETRUN_OK;
    fn_frame *f = c->frame;
    if (!f)
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "attribute '%s': a reference to a function attribute ('%s') "
                       "outside any function", str_or_empty(ap->name), ap->ref_attr_name);
    const Onnx__AttributeProto *v = NULL;
    int declared = 0;
    for (size_t i = 0; i < f->fn->n_attribute; i++) declared |= !strcmp(str_or_empty(f->fn->attribute[i]), ap->ref_attr_name);
    for (size_t i = 0; i < f->fn->n_attribute_proto; i++)
        if (!strcmp(str_or_empty(f->fn->attribute_proto[i]->name), ap->ref_attr_name)) {
            declared = 1;
            v = f->fn->attribute_proto[i]; /* the default */
        }
    if (!declared)
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "attribute '%s' refers to '%s', which function '%s' does not "
                       "declare", str_or_empty(ap->name), ap->ref_attr_name, str_or_empty(f->fn->name));
    for (size_t i = 0; i < f->call->n_attribute; i++)
        if (!strcmp(str_or_empty(f->call->attribute[i]->name), ap->ref_attr_name)) v = f->attr_value[i];
    if (!v) {
        *out = NULL;
        return NETRUN_OK;
    }
    *tmp = *v;
    tmp->name = ap->name;
    tmp->ref_attr_name = NULL;
    *out = tmp;
    return NETRUN_OK;
}

static netrun_status import_node(imp_ctx *c, const Onnx__NodeProto *np, size_t index, nr_graph *g, int depth);

/* The model's functions: named, one per (domain, name, overload). Their bodies are checked where they are called. */
static netrun_status check_functions(imp_ctx *c) {
    for (size_t i = 0; i < c->n_functions; i++) {
        const Onnx__FunctionProto *f = c->functions[i];
        if (!f->name || !*f->name) return imp_err(c, NETRUN_ERR_INVALID_MODEL, "function %zu has no name", i);
        if (find_function(c, str_or_empty(f->domain), f->name, str_or_empty(f->overload)) != f)
                return imp_err(c, NETRUN_ERR_INVALID_MODEL, "function '%s' (domain '%s'%s%s) is defined twice",
                               f->name, str_or_empty(f->domain), f->overload && *f->overload ? ", overload " : "",
                               str_or_empty(f->overload));
        for (size_t k = 0; k < f->n_opset_import; k++)
            if (f->opset_import[k]->has_version &&
                (f->opset_import[k]->version < 0 || f->opset_import[k]->version > INT_MAX))
                return imp_err(c, NETRUN_ERR_INVALID_MODEL, "function '%s': opset_import '%s' version %lld is out of "
                               "range", f->name, str_or_empty(f->opset_import[k]->domain),
                               (long long)f->opset_import[k]->version);
    }
    return NETRUN_OK;
}

/* Nodes function f makes once every call in it is expanded, saturated past the limit; -1 for a recursion (the
 * expansion reports it with its path). Memoized, so a chain of functions each calling the next twice is
 * measured in linear time before anything is built. */
static long fn_node_count(imp_ctx *c, const Onnx__FunctionProto *f) {
    size_t i = 0;
    while (i < c->n_functions && c->functions[i] != f) i++;
    if (c->fn_nodes[i]) return c->fn_nodes[i];
    c->fn_nodes[i] = -1;
    long total = 0;
    for (size_t n = 0; n < f->n_node && total <= NR_MAX_EXPANDED_NODES; n++) {
        const Onnx__NodeProto *b = f->node[n];
        const Onnx__FunctionProto *callee = find_function(c, str_or_empty(b->domain), str_or_empty(b->op_type),
                                                          str_or_empty(b->overload));
        long k = callee ? fn_node_count(c, callee) : 1;
        if (k < 0) return -1; /* left marked: every caller of the cycle sees it */
        total += k;
    }
    if (total > NR_MAX_EXPANDED_NODES) total = NR_MAX_EXPANDED_NODES + 1;
    c->fn_nodes[i] = total ? total : 1;
    return c->fn_nodes[i];
}

/* Map a function's formal inputs or outputs (what: "input" / "output") to the call's names, as the caller's frame
 * names them. An absent optional input stays absent (""); an output the call does not ask for gets a name of this
 * call alone, since the body still computes it. */
static netrun_status map_formals(imp_ctx *c, fn_frame *f, char **formal, size_t n_formal, char **actual,
                                 size_t n_actual, const char *what) {
    for (size_t i = 0; i < n_formal; i++) {
        const char *fo = str_or_empty(formal[i]), *ac = i < n_actual ? str_or_empty(actual[i]) : "";
        if (!*fo)
            return imp_err(c, NETRUN_ERR_INVALID_MODEL, "function '%s': %s %zu has no name",
                           str_or_empty(f->fn->name), what, i);
        const char *mapped = *ac ? fn_name(c, ac) : NULL;
        int ok = *ac ? frame_add(f, fo, mapped) : *what == 'i' ? frame_add(f, fo, "") : frame_add_local(f, fo);
        if (!ok) return imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return NETRUN_OK;
}

/* Expand node np, a call of local function fn, into g: its body's nodes with their names renamed. */
static netrun_status expand_call(imp_ctx *c, const Onnx__NodeProto *np, const char *name,
                                 const Onnx__FunctionProto *fn, nr_graph *g, int depth) {
    const char *fname = str_or_empty(fn->name);
    int nesting = 0;
    for (fn_frame *f = c->frame; f; f = f->outer, nesting++)
        if (f->fn == fn) {
            char chain[512] = "";
            for (fn_frame *k = c->frame; k; k = k->outer) {
                size_t l = strlen(chain);
                snprintf(chain + l, sizeof chain - l, "%s%s", l ? " <- " : "", str_or_empty(k->fn->name));
            }
            return imp_err(c, NETRUN_ERR_INVALID_MODEL, "function '%s' calls itself (%s <- %s): recursive functions "
                           "are not allowed", fname, fname, chain);
        }
    if (nesting >= NR_MAX_FUNCTION_NESTING)
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "function calls nested deeper than %d", NR_MAX_FUNCTION_NESTING);
    if (np->n_input > fn->n_input || np->n_output > fn->n_output)
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "function '%s' takes %zu inputs and %zu outputs; the call gives "
                       "%zu and %zu", fname, fn->n_input, fn->n_output, np->n_input, np->n_output);
    for (size_t i = 0; i < np->n_attribute; i++) {
        const char *an = str_or_empty(np->attribute[i]->name);
        int declared = 0;
        for (size_t k = 0; k < fn->n_attribute; k++) declared |= !strcmp(str_or_empty(fn->attribute[k]), an);
        for (size_t k = 0; k < fn->n_attribute_proto; k++) declared |= !strcmp(str_or_empty(fn->attribute_proto[k]->name), an);
        if (!declared)
            return imp_err(c, NETRUN_ERR_INVALID_MODEL, "attribute '%s' is not an attribute of function '%s'", an, fname);
    }
    long size = fn_node_count(c, fn); /* -1: recursive, found below with its path */
    if (size > 0 && c->expanded_nodes + size > NR_MAX_EXPANDED_NODES)
        return imp_err(c, NETRUN_ERR_INVALID_MODEL, "expanding the model's function calls makes more than %ld nodes "
                       "(function '%s' alone makes %s%ld)", NR_MAX_EXPANDED_NODES, fname,
                       size > NR_MAX_EXPANDED_NODES ? "more than " : "", size > NR_MAX_EXPANDED_NODES ? NR_MAX_EXPANDED_NODES : size);
    c->expanded_nodes += (long)fn->n_node;
    fn_frame f;
    memset(&f, 0, sizeof f);
    f.fn = fn;
    f.call = np;
    f.outer = c->frame;
    f.depth = depth;
    netrun_status st = NETRUN_OK;
    size_t pl = strlen(name) + 2; /* name: the call's, already under its own caller's prefix */
    f.prefix = nr_malloc(pl);
    f.attr_value = nr_calloc(np->n_attribute + 1, sizeof *f.attr_value);
    if (!f.prefix || !f.attr_value) {
        st = imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    snprintf(f.prefix, pl, "%s/", name);
    /* the call's attributes, references to the caller's own function resolved in the caller's frame */
    Onnx__AttributeProto *copies = nr_calloc(np->n_attribute + 1, sizeof *copies);
    if (!copies) {
        st = imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < np->n_attribute && !st; i++) {
        const Onnx__AttributeProto *v;
        st = resolve_attr(c, np->attribute[i], &copies[i], &v);
        f.attr_value[i] = v;
    }
    /* names: formal inputs and outputs to the call's (absent ones to names of this call alone), the rest prefixed */
    if (!st) st = map_formals(c, &f, fn->input, fn->n_input, np->input, np->n_input, "input");
    if (!st) st = map_formals(c, &f, fn->output, fn->n_output, np->output, np->n_output, "output");
    for (size_t n = 0; n < fn->n_node && !st; n++) {
        const Onnx__NodeProto *b = fn->node[n];
        for (size_t i = 0; i < b->n_input && !st; i++)
            if (!frame_add_local(&f, str_or_empty(b->input[i]))) st = imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; i < b->n_output && !st; i++)
            if (!frame_add_local(&f, str_or_empty(b->output[i]))) st = imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (!st) {
        fn_frame *outer = c->frame;
        c->frame = &f;
        /* messages name the innermost call only (its node names hold the whole path of calls): the text from
         * where the outermost call's node began is replaced, and put back afterwards */
        size_t fn_at = outer ? c->fn_at : c->node_at, saved_fn_at = c->fn_at, saved_node_at = c->node_at;
        char *saved = nr_strdup(c->where + fn_at);
        if (!saved) st = imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        c->fn_at = fn_at;
        where_pop(c, fn_at);
        where_push(c, "in function '%.100s' (called by node '%.200s'): ", fname, name);
        c->node_at = c->where_len;
        for (size_t n = 0; n < fn->n_node && !st; n++) st = import_node(c, fn->node[n], n, g, depth);
        where_pop(c, fn_at);
        if (saved) where_push(c, "%s", saved);
        c->node_at = saved_node_at;
        c->fn_at = saved_fn_at;
        nr_free(saved);
        c->frame = outer;
    }
    nr_free(copies);
out:
    frame_free(&f);
    return st;
}

static netrun_status import_node(imp_ctx *c, const Onnx__NodeProto *np, size_t index, nr_graph *g, int depth) {
    const char *op = str_or_empty(np->op_type);
    const char *domain = str_or_empty(np->domain);
    char autoname[400];
    const char *name = np->name;
    if (!name || !*name) {
        snprintf(autoname, sizeof autoname, "%.120s_%zu", *op ? op : "node", index);
        name = autoname;
    }
    if (c->frame && depth == c->frame->depth) { /* a node of a function's body: named after its call */
        char local[400];
        snprintf(local, sizeof local, "%s", name);
        snprintf(autoname, sizeof autoname, "%.250s%.140s", c->frame->prefix, local);
        name = autoname;
    }
    size_t saved_node_at = c->node_at;
    c->node_at = c->where_len;
    size_t old = where_push(c, "node '%.100s' (%.60s): ", name, *op ? op : "?");
    netrun_status st = NETRUN_OK;
    const Onnx__FunctionProto *fn = NULL;
    if (!*op) {
        st = imp_err(c, NETRUN_ERR_INVALID_MODEL, "op_type is empty");
        goto done;
    }
    if ((fn = find_function(c, domain, op, str_or_empty(np->overload)))) { /* a model-local function: expanded */
        st = expand_call(c, np, name, fn, g, depth);
        goto done;
    }
    if ((!*domain || strcmp(domain, "ai.onnx") == 0) && strcmp(op, "Constant") == 0) {
        st = import_constant_node(c, np, g);
        goto done;
    }
    if (np->n_input > INT_MAX / 2 || np->n_output > INT_MAX / 2 || np->n_attribute > INT_MAX / 2) {
        st = imp_err(c, NETRUN_ERR_INVALID_MODEL, "too many inputs, outputs or attributes");
        goto done;
    }
    /* ids first: nr_graph_add_node's pointer is invalidated by later additions to the graph */
    int nin = (int)np->n_input, nout = (int)np->n_output, nattr = (int)np->n_attribute;
    int *ids = nr_malloc(((size_t)nin + (size_t)nout + 1) * sizeof(int));
    if (!ids) {
        st = imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int i = 0; i < nin + nout && !st; i++) {
        const char *vn = fn_name(c, i < nin ? np->input[i] : np->output[i - nin]);
        if (!vn || !*vn) ids[i] = -1;
        else st = value_id(c, g, vn, &ids[i]);
    }
    int node_index = g->n_nodes;
    for (int i = 0; i < nout && !st; i++) {
        int id = ids[nin + i];
        if (id < 0) continue;
        nr_value *v = &g->values[id];
        if (v->constant || v->producer >= 0 || v->is_graph_input)
            st = imp_err(c, NETRUN_ERR_INVALID_MODEL, "output '%s' is already defined %s", v->name,
                         v->constant ? "as a constant" : v->is_graph_input ? "as a graph input"
                                                                           : "by another node");
        for (int j = 0; j < i && !st; j++)
            if (ids[nin + j] == id) st = imp_err(c, NETRUN_ERR_INVALID_MODEL, "output '%s' is listed twice",
                                                 v->name);
    }
    if (st) {
        nr_free(ids);
        goto done;
    }
    nr_node *node = nr_graph_add_node(g, name, op, domain, nin, nout, nattr);
    if (!node) {
        nr_free(ids);
        st = imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory adding the node");
        goto done;
    }
    for (int i = 0; i < nin; i++) node->inputs[i] = ids[i];
    for (int i = 0; i < nout; i++) node->outputs[i] = ids[nin + i];
    nr_free(ids);
    node->opset = c->model ? (int)nr_model_opset(c->model, domain) : 0;
    if (c->frame) /* a function's body: its own opset for the domain, when it has one */
        for (size_t k = 0; k < c->frame->fn->n_opset_import; k++) {
            const Onnx__OperatorSetIdProto *o = c->frame->fn->opset_import[k];
            const char *od = str_or_empty(o->domain);
            if (o->has_version && (!strcmp(od, domain) || ((!*od || !strcmp(od, "ai.onnx")) && (!*domain || !strcmp(domain, "ai.onnx")))))
                node->opset = (int)o->version;
        }
    for (int i = 0; i < nout; i++) {
        int id = g->nodes[node_index].outputs[i];
        if (id < 0) continue;
        g->values[id].producer = node_index;
        g->values[id].producer_output = i;
    }
    int kept = 0;
    g->nodes[node_index].n_attrs = 0;
    for (int i = 0; i < nattr && !st; i++) {
        /* re-fetch: importing a subgraph attribute does not touch this graph's node array, but be safe */
        Onnx__AttributeProto value;
        const Onnx__AttributeProto *ap;
        if ((st = resolve_attr(c, np->attribute[i], &value, &ap)) != NETRUN_OK || !ap) continue; /* !ap: left out */
        nr_attr tmp;
        memset(&tmp, 0, sizeof tmp);
        st = convert_attr(c, ap, g, depth, &tmp);
        g->nodes[node_index].attrs[kept++] = tmp;
        g->nodes[node_index].n_attrs = kept;
        for (int j = 0; j < kept - 1 && !st; j++)
            if (strcmp(g->nodes[node_index].attrs[j].name, tmp.name) == 0)
                st = imp_err(c, NETRUN_ERR_INVALID_MODEL, "attribute '%s' is given twice", tmp.name);
    }
done:
    where_pop(c, old);
    c->node_at = saved_node_at;
    return st;
}

static netrun_status import_graph_body(imp_ctx *c, const Onnx__GraphProto *gp, nr_graph *g, int depth) {
    int outer_depth = c->depth;
    c->depth = depth;
    netrun_status st = import_graph_body_at(c, gp, g, depth);
    c->depth = outer_depth;
    return st;
}

static netrun_status import_graph_body_at(imp_ctx *c, const Onnx__GraphProto *gp, nr_graph *g, int depth) {
    netrun_status st;
    /* initializers: constants */
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !*tp->name)
            return imp_err(c, NETRUN_ERR_INVALID_MODEL, "initializer %zu has no name", i);
        char label[200];
        snprintf(label, sizeof label, "initializer '%.160s'", tp->name);
        nr_tensor *t;
        if ((st = convert_tensor(c, tp, label, &t))) return st;
        if ((st = define_constant(c, g, fn_name(c, tp->name), t, "initializer"))) return st;
    }
    if (gp->n_sparse_initializer)
        return imp_err(c, NETRUN_ERR_UNSUPPORTED, "sparse initializers are not supported (%zu found)",
                       gp->n_sparse_initializer);
    /* inputs. One that also has an initializer is, from IR version 4 on, an input whose default value is the
     * initializer (the caller may override it); before IR 4 every initializer had to be listed as an input, and
     * it stays a constant (onnxruntime draws the same line). Subgraph inputs are fed by their node: constants. */
    int defaults = c->model && c->model->ir_version >= 4 && depth == 0;
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !*vi->name) return imp_err(c, NETRUN_ERR_INVALID_MODEL, "graph input %zu has no name", i);
        int id;
        if ((st = value_id(c, g, fn_name(c, vi->name), &id))) return st;
        nr_value *v = &g->values[id];
        if (v->constant && !defaults) continue;
        if (v->is_graph_input)
            return imp_err(c, NETRUN_ERR_INVALID_MODEL, "graph input '%s' is listed twice", vi->name);
        nr_tensor *def = v->constant;
        v->constant = NULL;
        if ((st = set_value_type(c, v, vi->type, "graph input", 1))) {
            nr_tensor_free(def);
            return st;
        }
        if (def) {
            v->default_value = def;
            if (v->dtype == NETRUN_DTYPE_UNDEFINED || v->rank < 0) set_value_from_tensor(v, def);
            int same = v->dtype == def->dtype && v->rank == def->rank;
            for (int d = 0; same && d < def->rank; d++) same = v->dims[d] < 0 || v->dims[d] == def->dims[d];
            if (!same)
                return imp_err(c, NETRUN_ERR_INVALID_MODEL, "graph input '%s': its initializer (the default value) "
                               "does not have the declared type and shape", vi->name);
        }
        v->producer = -1;
        v->is_graph_input = 1;
        if ((st = nr_graph_add_input(g, id))) return imp_err(c, st, "adding graph input '%s'", vi->name);
    }
    for (size_t i = 0; i < gp->n_node; i++)
        if ((st = import_node(c, gp->node[i], i, g, depth))) return st;
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        if (!vi->name || !*vi->name)
            return imp_err(c, NETRUN_ERR_INVALID_MODEL, "graph output %zu has no name", i);
        int id;
        if ((st = value_id(c, g, fn_name(c, vi->name), &id))) return st;
        nr_value *v = &g->values[id];
        if (!v->constant && (st = set_value_type(c, v, vi->type, "graph output", 1))) return st;
        v->is_graph_output = 1;
        if ((st = nr_graph_add_output(g, id))) return imp_err(c, st, "adding graph output '%s'", vi->name);
    }
    /* value_info: annotations for values that exist; a bad one is ignored rather than fatal */
    for (size_t i = 0; i < gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = gp->value_info[i];
        if (!vi->name) continue;
        int id = nr_graph_find_value(g, fn_name(c, vi->name));
        if (id < 0) continue;
        nr_value *v = &g->values[id];
        if (v->constant || v->is_graph_input || v->is_graph_output) continue;
        if ((st = set_value_type(c, v, vi->type, "value_info", 0))) return st;
    }
    return NETRUN_OK;
}

static netrun_status import_graph(imp_ctx *c, const Onnx__GraphProto *gp, nr_graph *parent, int depth,
                                  nr_graph **out) {
    *out = NULL;
    if (depth > c->limits.max_graph_depth) /* only the innermost node: the full path would be huge */
        return nr_error(NETRUN_ERR_INVALID_MODEL, "%s: %s%ssubgraphs are nested deeper than the limit of %d",
                        c->source, c->node_at ? "... " : "", c->where + c->node_at, c->limits.max_graph_depth);
    nr_graph *g = nr_graph_new(str_or_empty(gp->name), parent);
    if (!g) return imp_err(c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory creating graph '%s'",
                           str_or_empty(gp->name));
    netrun_status st = import_graph_body(c, gp, g, depth);
    if (st) {
        nr_graph_free(g);
        return st;
    }
    *out = g;
    return NETRUN_OK;
}

/* ------------------------------------------------------------------------------------------------ */
/* entry points                                                                                     */

static void ctx_init(imp_ctx *c, const char *source, const char *base_dir, const nr_import_limits *limits) {
    memset(c, 0, sizeof *c);
    c->source = source && *source ? source : "<memory>";
    c->base_dir = base_dir;
    nr_import_limits def = NR_IMPORT_LIMITS_DEFAULT;
    c->limits = limits ? *limits : def;
    if (c->limits.max_graph_depth < 0) c->limits.max_graph_depth = 0;
    if (c->limits.max_graph_depth > 1000) c->limits.max_graph_depth = 1000; /* stack bound */
}

static void ctx_free(imp_ctx *c) {
    nr_free(c->fn_nodes);
    for (int i = 0; i < c->n_files; i++) nr_free(c->files[i].real);
    nr_free(c->files);
    free(c->base_real); /* from realpath(): libc malloc */
}

netrun_status nr_onnx_import(const void *data, size_t size, const char *source, const char *base_dir,
                             const nr_import_limits *limits, nr_model_ir **out) {
    imp_ctx c;
    ctx_init(&c, source, base_dir, limits);
    if (!out) return imp_err(&c, NETRUN_ERR_INVALID_ARGUMENT, "no output pointer");
    *out = NULL;
    if (size == 0) return imp_err(&c, NETRUN_ERR_INVALID_MODEL, "the model is empty (0 bytes)");
    if (data && size >= 6 && memcmp(data, "\x93NUMPY", 6) == 0)
        return imp_err(&c, NETRUN_ERR_INVALID_MODEL, "this is a NumPy .npy file, not an ONNX model");
    if (c.limits.data_is_file_mapping) {
        c.map_base = (void *)((uintptr_t)data & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1)); /* mmap gives it aligned */
        c.map_size = size + (size_t)((uintptr_t)data - (uintptr_t)c.map_base);
    }
    Onnx__ModelProto *mp =
        (Onnx__ModelProto *)checked_unpack(&c, &onnx__model_proto__descriptor, data, size, "ONNX model");
    if (!mp) return c.pb_oom ? NETRUN_ERR_OUT_OF_MEMORY : NETRUN_ERR_INVALID_MODEL;
    netrun_status st = NETRUN_OK;
    nr_model_ir *m = nr_calloc(1, sizeof *m);
    if (!m) {
        st = imp_err(&c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    c.model = m;
    if (!mp->graph) {
        st = imp_err(&c, NETRUN_ERR_INVALID_MODEL, "not an ONNX model: no graph (field 7 of ModelProto)");
        goto out;
    }
    m->ir_version = mp->has_ir_version ? mp->ir_version : 0;
    m->producer = nr_strdup(str_or_empty(mp->producer_name));
    m->producer_version = nr_strdup(str_or_empty(mp->producer_version));
    m->domain = nr_strdup(str_or_empty(mp->domain));
    m->doc_string = nr_strdup(str_or_empty(mp->doc_string));
    m->graph_doc_string = nr_strdup(str_or_empty(mp->graph->doc_string));
    m->model_version = mp->has_model_version ? mp->model_version : 0;
    if (mp->n_metadata_props && mp->n_metadata_props < INT_MAX / 2) {
        m->prop_keys = nr_calloc(mp->n_metadata_props, sizeof *m->prop_keys);
        m->prop_values = nr_calloc(mp->n_metadata_props, sizeof *m->prop_values);
        for (size_t i = 0; m->prop_keys && m->prop_values && i < mp->n_metadata_props; i++) {
            m->prop_keys[i] = nr_strdup(str_or_empty(mp->metadata_props[i]->key));
            m->prop_values[i] = nr_strdup(str_or_empty(mp->metadata_props[i]->value));
            m->n_props = (int)i + 1;
            if (!m->prop_keys[i] || !m->prop_values[i]) break;
        }
        if (!m->prop_keys || !m->prop_values || m->n_props < (int)mp->n_metadata_props ||
            !m->prop_keys[m->n_props - 1] || !m->prop_values[m->n_props - 1]) {
            st = imp_err(&c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
            goto out;
        }
    }
    if (!m->producer || !m->producer_version || !m->domain || !m->doc_string || !m->graph_doc_string) {
        st = imp_err(&c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    if (mp->n_opset_import) {
        if (mp->n_opset_import > INT_MAX / 2) {
            st = imp_err(&c, NETRUN_ERR_INVALID_MODEL, "too many opset_import entries");
            goto out;
        }
        m->opsets = nr_calloc(mp->n_opset_import, sizeof *m->opsets);
        if (!m->opsets) {
            st = imp_err(&c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < mp->n_opset_import; i++) {
            const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
            m->opsets[i].domain = nr_strdup(str_or_empty(o->domain));
            if (!m->opsets[i].domain) {
                st = imp_err(&c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
                goto out;
            }
            m->opsets[i].version = o->has_version ? o->version : 0;
            m->n_opsets = (int)i + 1;
            if (m->opsets[i].version < 0 || m->opsets[i].version > INT_MAX) {
                st = imp_err(&c, NETRUN_ERR_INVALID_MODEL, "opset_import '%s': version %lld is out of range",
                             m->opsets[i].domain, (long long)m->opsets[i].version);
                goto out;
            }
        }
    } else if (m->ir_version >= 3) {
        st = imp_err(&c, NETRUN_ERR_INVALID_MODEL, "the model has no opset_import (required from IR version 3)");
        goto out;
    }
    c.functions = mp->functions;
    c.n_functions = mp->n_functions;
    if (c.n_functions && !(c.fn_nodes = nr_calloc(c.n_functions, sizeof(long)))) {
        st = imp_err(&c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    if ((st = check_functions(&c)) != NETRUN_OK) goto out;
    st = import_graph(&c, mp->graph, NULL, 0, &m->graph);
out:
    pb_free_message(&c, &mp->base);
    ctx_free(&c);
    if (st) {
        if (m) nr_model_ir_free(m);
        return st;
    }
    *out = m;
    return NETRUN_OK;
}

netrun_status nr_onnx_parse_tensor(const void *data, size_t size, const char *source, nr_tensor **out,
                                   char **name_out) {
    imp_ctx c;
    ctx_init(&c, source, NULL, NULL);
    if (!out) return imp_err(&c, NETRUN_ERR_INVALID_ARGUMENT, "no output pointer");
    *out = NULL;
    if (name_out) *name_out = NULL;
    if (size == 0) return imp_err(&c, NETRUN_ERR_INVALID_MODEL, "empty tensor file (0 bytes)");
    Onnx__TensorProto *tp =
        (Onnx__TensorProto *)checked_unpack(&c, &onnx__tensor_proto__descriptor, data, size, "ONNX TensorProto");
    if (!tp) return c.pb_oom ? NETRUN_ERR_OUT_OF_MEMORY : NETRUN_ERR_INVALID_MODEL;
    netrun_status st;
    if (!tp->has_data_type && !tp->n_dims && !tp->has_raw_data)
        st = imp_err(&c, NETRUN_ERR_INVALID_MODEL, "not a TensorProto: no data_type, dims or raw_data");
    else
        st = convert_tensor(&c, tp, NULL, out);
    if (!st && name_out) {
        *name_out = nr_strdup(str_or_empty(tp->name));
        if (!*name_out) {
            nr_tensor_free(*out);
            *out = NULL;
            st = imp_err(&c, NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        }
    }
    pb_free_message(&c, &tp->base);
    ctx_free(&c);
    return st;
}
