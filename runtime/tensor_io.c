/* Tensor files: NumPy .npy (read/write) and ONNX TensorProto .pb (read), chosen by content. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ir.h"
#include "netrun.h"
#include "onnx_import.h"
#include "status.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define DATA_ALIGN 64

/* ---- the returned view: one allocation holding view, name and data ---- */

static size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

static netrun_status view_alloc(const char *source, const char *name, netrun_dtype dtype, int rank,
                                const int64_t *dims, size_t nbytes, netrun_tensor_view **out, void **data) {
    size_t name_len = strlen(name), head = align_up(sizeof(netrun_tensor_view), 16), total;
    size_t data_off;
    if (!nr_add_size(head, name_len + 1, &data_off)) goto too_big;
    data_off = align_up(data_off, DATA_ALIGN);
    if (!nr_add_size(data_off, nbytes ? nbytes : 1, &total)) goto too_big;
    char *block = nr_aligned_alloc(total, DATA_ALIGN);
    if (!block)
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "%s: out of memory for a %zu-byte tensor", source, nbytes);
    netrun_tensor_view *v = (netrun_tensor_view *)(void *)block;
    memset(v, 0, sizeof *v);
    char *nm = block + head;
    memcpy(nm, name, name_len + 1);
    v->name = nm;
    v->dtype = dtype;
    v->rank = rank;
    for (int i = 0; i < rank; i++) v->dims[i] = dims[i];
    v->data = block + data_off;
    v->nbytes = nbytes;
    *data = block + data_off;
    *out = v;
    return NETRUN_OK;
too_big:
    return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: tensor too large", source);
}

void netrun_tensor_free(netrun_tensor_view *tensor) { nr_aligned_free(tensor); }

/* ---- .npy ---- */

typedef struct npy_type {
    const char *code; /* without the byte-order character */
    netrun_dtype dtype;
    size_t size;
} npy_type;

static const npy_type npy_types[] = {
    {"f2", NETRUN_DTYPE_FLOAT16, 2}, {"f4", NETRUN_DTYPE_FLOAT, 4},  {"f8", NETRUN_DTYPE_DOUBLE, 8},
    {"i1", NETRUN_DTYPE_INT8, 1},    {"i2", NETRUN_DTYPE_INT16, 2},  {"i4", NETRUN_DTYPE_INT32, 4},
    {"i8", NETRUN_DTYPE_INT64, 8},   {"u1", NETRUN_DTYPE_UINT8, 1},  {"u2", NETRUN_DTYPE_UINT16, 2},
    {"u4", NETRUN_DTYPE_UINT32, 4},  {"u8", NETRUN_DTYPE_UINT64, 8}, {"b1", NETRUN_DTYPE_BOOL, 1},
};

static const npy_type *npy_by_dtype(netrun_dtype dt) {
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (npy_types[i].dtype == dt) return &npy_types[i];
    return NULL;
}

/* A cursor over the header dict, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } */
typedef struct hcur {
    const char *p, *end;
} hcur;

static void skip_ws(hcur *h) {
    while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r')) h->p++;
}

static int accept(hcur *h, char c) {
    skip_ws(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return 1;
    }
    return 0;
}

/* A quoted Python string without escapes; copies at most cap-1 chars. */
static int parse_pystr(hcur *h, char *buf, size_t cap) {
    skip_ws(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return 0;
    char q = *h->p++;
    size_t n = 0;
    while (h->p < h->end && *h->p != q) {
        if (*h->p == '\\') return 0;
        if (n + 1 >= cap) return 0;
        buf[n++] = *h->p++;
    }
    if (h->p >= h->end) return 0;
    h->p++;
    buf[n] = '\0';
    return 1;
}

static int parse_word(hcur *h, const char *w) {
    skip_ws(h);
    size_t n = strlen(w);
    if ((size_t)(h->end - h->p) >= n && memcmp(h->p, w, n) == 0) {
        h->p += n;
        return 1;
    }
    return 0;
}

/* (d0, d1, ...) with an optional trailing comma; non-negative decimal ints only. */
static int parse_shape(hcur *h, int *rank, int64_t *dims, const char **why) {
    if (!accept(h, '(')) return (*why = "shape is not a tuple", 0);
    *rank = 0;
    skip_ws(h);
    if (accept(h, ')')) return 1;
    for (;;) {
        skip_ws(h);
        if (h->p >= h->end || *h->p < '0' || *h->p > '9') return (*why = "shape has a non-integer entry", 0);
        int64_t v = 0;
        while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
            int d = *h->p++ - '0';
            if (v > (INT64_MAX - d) / 10) return (*why = "shape entry overflows", 0);
            v = v * 10 + d;
        }
        if (h->p < h->end && (*h->p == 'L')) h->p++; /* Python 2 longs */
        if (*rank >= NETRUN_MAX_RANK) return (*why = "shape has more dims than netrun supports (8)", 0);
        dims[(*rank)++] = v;
        if (accept(h, ')')) return 1;
        if (!accept(h, ',')) return (*why = "shape tuple is malformed", 0);
        if (accept(h, ')')) return 1;
    }
}

static netrun_status read_npy(const unsigned char *b, size_t size, const char *source, netrun_tensor_view **out) {
    if (size < 10) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: truncated .npy file (%zu bytes)", source, size);
    int major = b[6];
    size_t hlen, hstart;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        hstart = 10;
    } else if (major == 2 || major == 3) {
        if (size < 12) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: truncated .npy file", source);
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        hstart = 12;
    } else {
        return nr_error(NETRUN_ERR_UNSUPPORTED, "%s: .npy format version %d.%d is not supported (1, 2, 3 are)",
                        source, major, b[7]);
    }
    if (hlen > size - hstart)
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: .npy header length %zu runs past the end of the file "
                        "(%zu bytes)", source, hlen, size);
    hcur h = {(const char *)b + hstart, (const char *)b + hstart + hlen};
    char descr[32] = "", key[32];
    int have_descr = 0, have_fortran = 0, have_shape = 0, fortran = 0, rank = 0;
    int64_t dims[NETRUN_MAX_RANK];
    const char *why = "header is not a dict";
    if (!accept(&h, '{')) goto bad;
    while (!accept(&h, '}')) {
        why = "header has a malformed key";
        if (!parse_pystr(&h, key, sizeof key)) goto bad;
        why = "header is missing ':'";
        if (!accept(&h, ':')) goto bad;
        if (strcmp(key, "descr") == 0) {
            why = "'descr' is not a simple type string (structured dtypes are not supported)";
            if (!parse_pystr(&h, descr, sizeof descr)) goto bad;
            have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (parse_word(&h, "True")) fortran = 1;
            else if (parse_word(&h, "False")) fortran = 0;
            else {
                why = "'fortran_order' is not True or False";
                goto bad;
            }
            have_fortran = 1;
        } else if (strcmp(key, "shape") == 0) {
            if (!parse_shape(&h, &rank, dims, &why)) goto bad;
            have_shape = 1;
        } else {
            why = "header has an unknown key";
            goto bad;
        }
        if (!accept(&h, ',')) {
            why = "header dict is malformed";
            if (!accept(&h, '}')) goto bad;
            break;
        }
    }
    if (!have_descr || !have_fortran || !have_shape) {
        why = "header lacks 'descr', 'fortran_order' or 'shape'";
        goto bad;
    }
    if (fortran)
        return nr_error(NETRUN_ERR_UNSUPPORTED, "%s: .npy data is in Fortran order; save it C-contiguous "
                        "(np.ascontiguousarray)", source);
    char order = descr[0];
    const npy_type *t = NULL;
    if (order == '<' || order == '|' || order == '=' || order == '>') /* '=' native: hosts are little-endian */
        for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
            if (strcmp(descr + 1, npy_types[i].code) == 0) t = &npy_types[i];
    if (t && order == '>' && t->size > 1)
        return nr_error(NETRUN_ERR_UNSUPPORTED, "%s: big-endian .npy dtype '%s' is not supported", source, descr);
    if (!t)
        return nr_error(NETRUN_ERR_UNSUPPORTED, "%s: .npy dtype '%s' is not supported (f2 f4 f8 i1 i2 i4 i8 u1 "
                        "u2 u4 u8 b1)", source, descr);
    size_t count = 1, nbytes;
    for (int i = 0; i < rank; i++)
        if ((uint64_t)dims[i] > SIZE_MAX || !nr_mul_size(count, (size_t)dims[i], &count))
            return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: .npy shape overflows", source);
    if (!nr_mul_size(count, t->size, &nbytes))
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: .npy shape overflows", source);
    size_t data_off = hstart + hlen, have = size - data_off;
    if (have != nbytes)
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: .npy file has %zu data bytes, shape and dtype '%s' need "
                        "%zu", source, have, descr, nbytes);
    void *data;
    netrun_status st = view_alloc(source, "", t->dtype, rank, dims, nbytes, out, &data);
    if (st) return st;
    if (nbytes) memcpy(data, b + data_off, nbytes);
    return NETRUN_OK;
bad:
    return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: malformed .npy header: %s (near byte %zu)", source, why,
                    (size_t)(h.p - (const char *)b));
}

/* ---- TensorProto ---- */

static netrun_status read_pb(const void *data, size_t size, const char *source, netrun_tensor_view **out) {
    nr_tensor *t = NULL;
    char *name = NULL;
    netrun_status st = nr_onnx_parse_tensor(data, size, source, &t, &name);
    if (st) return st;
    if (t->dtype == NETRUN_DTYPE_STRING) {
        st = nr_error(NETRUN_ERR_UNSUPPORTED, "%s: tensor '%s' holds strings, which tensor views cannot carry",
                      source, name);
    } else {
        void *dst;
        st = view_alloc(source, name, t->dtype, t->rank, t->dims, t->nbytes, out, &dst);
        if (!st && t->nbytes) memcpy(dst, t->data, t->nbytes);
    }
    nr_tensor_free(t);
    nr_free(name);
    return st;
}

static netrun_status read_any(const void *data, size_t size, const char *source, netrun_tensor_view **out) {
    if (size >= NPY_MAGIC_LEN && memcmp(data, NPY_MAGIC, NPY_MAGIC_LEN) == 0)
        return read_npy(data, size, source, out);
    return read_pb(data, size, source, out);
}

netrun_status netrun_tensor_read_memory(const void *data, size_t size, netrun_tensor_view **out) {
    if (!out) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_tensor_read_memory: out is NULL");
    *out = NULL;
    if (!data && size) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_tensor_read_memory: data is NULL");
    return read_any(data, size, "<memory>", out);
}

netrun_status netrun_tensor_read_file(const char *path, netrun_tensor_view **out) {
    if (!out) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_tensor_read_file: out is NULL");
    *out = NULL;
    if (!path) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_tensor_read_file: path is NULL");
    FILE *f = fopen(path, "rb");
    if (!f) return nr_error(NETRUN_ERR_IO, "cannot open tensor file '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return nr_error(NETRUN_ERR_IO, "'%s' is not a regular file", path);
    }
    if ((uint64_t)sb.st_size > (uint64_t)SIZE_MAX / 2) {
        fclose(f);
        return nr_error(NETRUN_ERR_IO, "'%s' is too large", path);
    }
    size_t size = (size_t)sb.st_size;
    void *buf = nr_malloc(size ? size : 1);
    if (!buf) {
        fclose(f);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory reading '%s' (%zu bytes)", path, size);
    }
    size_t got = fread(buf, 1, size, f);
    int err = ferror(f);
    fclose(f);
    netrun_status st;
    if (got != size || err)
        st = nr_error(NETRUN_ERR_IO, "cannot read '%s': got %zu of %zu bytes", path, got, size);
    else if (size == 0)
        st = nr_error(NETRUN_ERR_INVALID_ARGUMENT, "tensor file '%s' is empty", path);
    else
        st = read_any(buf, size, path, out);
    nr_free(buf);
    return st;
}

netrun_status netrun_tensor_write_npy(const char *path, const netrun_tensor_view *t) {
    if (!path || !t) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_tensor_write_npy: NULL argument");
    const npy_type *nt = npy_by_dtype(t->dtype);
    if (!nt)
        return nr_error(NETRUN_ERR_UNSUPPORTED, "%s: dtype %s cannot be written as .npy", path,
                        netrun_dtype_name(t->dtype));
    if (t->rank < 0 || t->rank > NETRUN_MAX_RANK)
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: bad rank %d", path, t->rank);
    size_t count = 1, nbytes;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] < 0 || (uint64_t)t->dims[i] > SIZE_MAX || !nr_mul_size(count, (size_t)t->dims[i], &count))
            return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: bad dimension %d (%lld)", path, i,
                            (long long)t->dims[i]);
    if (!nr_mul_size(count, nt->size, &nbytes) || nbytes != t->nbytes)
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: tensor has %zu bytes, its shape and dtype need %zu",
                        path, t->nbytes, nbytes);
    if (nbytes && !t->data) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: tensor data is NULL", path);

    char dict[512], shape[300];
    size_t sl = 0;
    sl += (size_t)snprintf(shape + sl, sizeof shape - sl, "(");
    for (int i = 0; i < t->rank; i++)
        sl += (size_t)snprintf(shape + sl, sizeof shape - sl, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    snprintf(shape + sl, sizeof shape - sl, t->rank == 1 ? ",)" : ")");
    int dl = snprintf(dict, sizeof dict, "{'descr': '%c%s', 'fortran_order': False, 'shape': %s, }",
                      nt->size == 1 ? '|' : '<', nt->code, shape);
    /* pad with spaces so that magic + version + length + header is a multiple of 64, ending in '\n' */
    size_t header = (size_t)dl + 1, total = align_up(10 + header, 64);
    size_t hlen = total - 10;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    FILE *f = fopen(path, "wb");
    if (!f) return nr_error(NETRUN_ERR_IO, "cannot create '%s': %s", path, strerror(errno));
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)dl, f) == (size_t)dl;
    for (size_t i = header; ok && i < hlen; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    if (ok && nbytes) ok = fwrite(t->data, 1, nbytes, f) == nbytes;
    int err = errno;
    if (fclose(f) != 0) ok = 0;
    if (!ok) return nr_error(NETRUN_ERR_IO, "cannot write '%s': %s", path, strerror(err));
    return NETRUN_OK;
}
