/* Tensor files: .npy write/read round trips, TensorProto parsing, malformed inputs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "netrun.h"
#include "onnx.pb-c.h"
#include "status.h"

static int g_pass, g_fail;
#define CHECK(cond)                                                                                  \
    do {                                                                                             \
        if (cond) g_pass++;                                                                          \
        else {                                                                                       \
            g_fail++;                                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                 \
        }                                                                                            \
    } while (0)

static void check_err_at(int line, netrun_status st, netrun_tensor_view *v, const char *a, const char *b) {
    const char *msg = nr_error_message();
    int ok = st != NETRUN_OK && v == NULL && msg[0] && (!a || strstr(msg, a)) && (!b || strstr(msg, b));
    if (getenv("TEST_VERBOSE")) fprintf(stderr, "line %d: %s\n", line, msg);
    if (ok) g_pass++;
    else {
        g_fail++;
        fprintf(stderr, "%s:%d: expected an error with '%s' '%s'; got status %d: %s\n", __FILE__, line,
                a ? a : "", b ? b : "", (int)st, st ? msg : "(ok)");
    }
}

static char dir[256];

static void test_roundtrip(void) {
    static const netrun_dtype types[] = {NETRUN_DTYPE_FLOAT,  NETRUN_DTYPE_DOUBLE, NETRUN_DTYPE_FLOAT16,
                                         NETRUN_DTYPE_INT8,   NETRUN_DTYPE_INT16,  NETRUN_DTYPE_INT32,
                                         NETRUN_DTYPE_INT64,  NETRUN_DTYPE_UINT8,  NETRUN_DTYPE_UINT16,
                                         NETRUN_DTYPE_UINT32, NETRUN_DTYPE_UINT64, NETRUN_DTYPE_BOOL};
    static const size_t sizes[] = {4, 8, 2, 1, 2, 4, 8, 1, 2, 4, 8, 1};
    static const int ranks[] = {0, 1, 2, 4, 8, 3};
    static const int64_t shapes[][8] = {{0}, {7}, {3, 5}, {2, 1, 3, 2}, {1, 2, 1, 2, 1, 2, 1, 3}, {2, 0, 3}};
    char path[400];
    snprintf(path, sizeof path, "%s/t.npy", dir);
    int ok_all = 1;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (size_t si = 0; si < sizeof ranks / sizeof ranks[0]; si++) {
            netrun_tensor_view t;
            memset(&t, 0, sizeof t);
            t.dtype = types[ti];
            t.rank = ranks[si];
            size_t count = 1;
            for (int d = 0; d < t.rank; d++) {
                t.dims[d] = shapes[si][d];
                count *= (size_t)shapes[si][d];
            }
            t.nbytes = count * sizes[ti];
            uint8_t *data = malloc(t.nbytes + 1);
            for (size_t i = 0; i < t.nbytes; i++) data[i] = (uint8_t)(i * 37 + ti);
            if (types[ti] == NETRUN_DTYPE_BOOL)
                for (size_t i = 0; i < t.nbytes; i++) data[i] &= 1;
            t.data = data;
            netrun_status st = netrun_tensor_write_npy(path, &t);
            netrun_tensor_view *r = NULL;
            if (st == NETRUN_OK) st = netrun_tensor_read_file(path, &r);
            int ok = st == NETRUN_OK && r && r->dtype == t.dtype && r->rank == t.rank && r->nbytes == t.nbytes &&
                     memcmp(r->dims, t.dims, sizeof(int64_t) * (size_t)t.rank) == 0 &&
                     (t.nbytes == 0 || memcmp(r->data, data, t.nbytes) == 0) && r->name && r->name[0] == '\0' &&
                     (uintptr_t)r->data % 64 == 0;
            if (!ok) {
                fprintf(stderr, "round trip dtype %d rank %d failed: %s\n", (int)t.dtype, t.rank,
                        st ? nr_error_message() : "mismatch");
                ok_all = 0;
            }
            /* the header is what numpy writes: 64-byte aligned, '\n'-terminated */
            FILE *f = fopen(path, "rb");
            uint8_t head[10];
            if (f && fread(head, 1, 10, f) == 10) {
                size_t hl = (size_t)head[8] | (size_t)head[9] << 8;
                if ((10 + hl) % 64 != 0 || head[6] != 1) ok_all = 0;
            }
            if (f) fclose(f);
            netrun_tensor_free(r);
            free(data);
        }
    CHECK(ok_all);
    unlink(path);
}

/* A hand-written .npy in memory. */
static size_t make_npy(uint8_t *buf, int major, const char *dict, const void *data, size_t nbytes) {
    size_t dl = strlen(dict), pre = major == 1 ? 10 : 12, len = 0;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (uint8_t)major;
    buf[7] = 0;
    if (major == 1) {
        buf[8] = (uint8_t)dl;
        buf[9] = (uint8_t)(dl >> 8);
    } else {
        buf[8] = (uint8_t)dl, buf[9] = (uint8_t)(dl >> 8), buf[10] = (uint8_t)(dl >> 16), buf[11] = 0;
    }
    len = pre;
    memcpy(buf + len, dict, dl);
    len += dl;
    if (nbytes) memcpy(buf + len, data, nbytes);
    return len + nbytes;
}

static void test_npy_variants(void) {
    uint8_t buf[1024];
    netrun_tensor_view *v = NULL;
    int32_t d[6] = {1, -2, 3, -4, 5, -6};
    /* version 2 and 3 headers, '=' native, double quotes, no trailing comma, odd spacing */
    size_t n = make_npy(buf, 2, "{\"descr\":\"<i4\",\"fortran_order\":False,\"shape\":(2,3)}\n", d, sizeof d);
    netrun_status st = netrun_tensor_read_memory(buf, n, &v);
    CHECK(st == NETRUN_OK && v && v->dtype == NETRUN_DTYPE_INT32 && v->rank == 2 && v->dims[1] == 3 &&
          ((const int32_t *)v->data)[5] == -6);
    netrun_tensor_free(v);
    n = make_npy(buf, 3, "{'shape': ( 6 , ), 'fortran_order': False, 'descr': '=i4', }      \n", d, sizeof d);
    st = netrun_tensor_read_memory(buf, n, &v);
    CHECK(st == NETRUN_OK && v && v->rank == 1 && v->dims[0] == 6 && ((const int32_t *)v->data)[3] == -4);
    netrun_tensor_free(v);
    /* scalar, one-byte big-endian-marked type is fine */
    uint8_t one = 1;
    n = make_npy(buf, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (), }\n", &one, 1);
    st = netrun_tensor_read_memory(buf, n, &v);
    CHECK(st == NETRUN_OK && v && v->rank == 0 && v->dtype == NETRUN_DTYPE_BOOL && v->nbytes == 1);
    netrun_tensor_free(v);

    /* malformed ones */
    struct {
        int major;
        const char *dict;
        size_t data_bytes;
        const char *expect;
    } bad[] = {
        {1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n", 24, "Fortran order"},
        {1, "{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }\n", 24, "big-endian"},
        {1, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }\n", 24, "'<c8' is not supported"},
        {1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }\n", 24, "structured"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }\n", 24, "non-integer"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, }\n", 24, "malformed"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), \n", 24, "malformed"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,6), }\n", 24, "more dims"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n", 24, "overflows"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n", 24, "overflows"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 20, "need 24"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 28, "need 24"},
        {1, "{'descr': '<f4', 'shape': (2, 3), }\n", 24, "lacks"},
        {1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }\n", 24, "True or False"},
        {1, "{'descr': '<f4', 'extra': 1, 'fortran_order': False, 'shape': (2, 3), }\n", 24, "unknown key"},
        {1, "['descr']\n", 24, "not a dict"},
        {7, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 24, "version 7"},
    };
    uint8_t zeros[32] = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = make_npy(buf, bad[i].major == 7 ? 1 : bad[i].major, bad[i].dict, zeros, bad[i].data_bytes);
        if (bad[i].major == 7) buf[6] = 7;
        v = (netrun_tensor_view *)1;
        st = netrun_tensor_read_memory(buf, n, &v);
        check_err_at(__LINE__ * 1000 + (int)i, st, v, "<memory>", bad[i].expect);
    }
    /* header length past the end; truncated magic-only files */
    n = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", NULL, 0);
    buf[8] = 0xff, buf[9] = 0x7f;
    st = netrun_tensor_read_memory(buf, n, &v);
    check_err_at(__LINE__, st, v, "header length", NULL);
    st = netrun_tensor_read_memory("\x93NUMPY\x01", 7, &v);
    check_err_at(__LINE__, st, v, "truncated", NULL);
    /* every truncation of a good file fails cleanly */
    n = make_npy(buf, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }\n", d, sizeof d);
    int ok = 1;
    for (size_t k = 0; k < n; k++) {
        v = NULL;
        st = netrun_tensor_read_memory(buf, k, &v);
        if (st == NETRUN_OK || v) ok = 0;
        netrun_tensor_free(v);
    }
    CHECK(ok);
}

static void test_pb(void) {
    Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;
    int64_t dims[2] = {2, 2};
    float vals[4] = {1.5f, -2.5f, 3.5f, 0};
    t.name = "input_7";
    t.has_data_type = 1;
    t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t.n_dims = 2;
    t.dims = dims;
    t.n_float_data = 4;
    t.float_data = vals;
    size_t n = protobuf_c_message_get_packed_size(&t.base);
    uint8_t *buf = malloc(n);
    protobuf_c_message_pack(&t.base, buf);
    netrun_tensor_view *v = NULL;
    netrun_status st = netrun_tensor_read_memory(buf, n, &v);
    CHECK(st == NETRUN_OK && v && strcmp(v->name, "input_7") == 0 && v->dtype == NETRUN_DTYPE_FLOAT);
    CHECK(v && v->rank == 2 && v->nbytes == 16 && ((const float *)v->data)[1] == -2.5f);
    netrun_tensor_free(v);
    /* via a file */
    char path[400];
    snprintf(path, sizeof path, "%s/t.pb", dir);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(buf, 1, n, f);
        fclose(f);
    }
    v = NULL;
    st = netrun_tensor_read_file(path, &v);
    CHECK(st == NETRUN_OK && v && strcmp(v->name, "input_7") == 0 && ((const float *)v->data)[2] == 3.5f);
    netrun_tensor_free(v);
    /* truncated pb file: the error names the file */
    f = fopen(path, "wb");
    if (f) {
        fwrite(buf, 1, n - 5, f);
        fclose(f);
    }
    st = netrun_tensor_read_file(path, &v);
    check_err_at(__LINE__, st, v, path, "TensorProto");
    unlink(path);
    free(buf);
    /* a data size mismatch */
    t.n_float_data = 3;
    n = protobuf_c_message_get_packed_size(&t.base);
    buf = malloc(n);
    protobuf_c_message_pack(&t.base, buf);
    st = netrun_tensor_read_memory(buf, n, &v);
    check_err_at(__LINE__, st, v, "tensor 'input_7'", "float_data has 3 entries");
    free(buf);
    /* string tensors cannot be views */
    ProtobufCBinaryData s[1] = {{1, (uint8_t *)"x"}};
    Onnx__TensorProto ts = ONNX__TENSOR_PROTO__INIT;
    ts.has_data_type = 1;
    ts.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__STRING;
    ts.n_string_data = 1;
    ts.string_data = s;
    n = protobuf_c_message_get_packed_size(&ts.base);
    buf = malloc(n);
    protobuf_c_message_pack(&ts.base, buf);
    st = netrun_tensor_read_memory(buf, n, &v);
    check_err_at(__LINE__, st, v, "strings", NULL);
    free(buf);
}

static void test_misc(void) {
    netrun_tensor_view *v = NULL;
    netrun_status st = netrun_tensor_read_file("/nonexistent/x.npy", &v);
    check_err_at(__LINE__, st, v, "/nonexistent/x.npy", NULL);
    CHECK(st == NETRUN_ERR_IO);
    st = netrun_tensor_read_memory("", 0, &v);
    check_err_at(__LINE__, st, v, NULL, NULL);
    /* random bytes: errors, never crashes */
    uint64_t x = 12345;
    uint8_t buf[300];
    int ok = 1;
    for (int it = 0; it < 2000; it++) {
        size_t n = (size_t)(x % 300);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[i] = (uint8_t)x;
        }
        if (it % 2 && n >= 10) memcpy(buf, "\x93NUMPY\x01\x00", 8);
        v = NULL;
        st = netrun_tensor_read_memory(buf, n, &v);
        if (st == NETRUN_OK) netrun_tensor_free(v);
        else if (v || !nr_error_message()[0]) ok = 0;
    }
    CHECK(ok);
    /* writing: unsupported dtype, inconsistent size, unwritable path */
    netrun_tensor_view t;
    memset(&t, 0, sizeof t);
    float f4[4] = {0};
    t.dtype = NETRUN_DTYPE_BFLOAT16, t.rank = 1, t.dims[0] = 2, t.nbytes = 4, t.data = f4;
    char path[400];
    snprintf(path, sizeof path, "%s/w.npy", dir);
    CHECK(netrun_tensor_write_npy(path, &t) == NETRUN_ERR_UNSUPPORTED);
    t.dtype = NETRUN_DTYPE_FLOAT, t.nbytes = 12;
    CHECK(netrun_tensor_write_npy(path, &t) == NETRUN_ERR_INVALID_ARGUMENT && strstr(nr_error_message(), "need 8"));
    t.nbytes = 8;
    CHECK(netrun_tensor_write_npy("/nonexistent/dir/w.npy", &t) == NETRUN_ERR_IO);
    t.dims[0] = -2;
    CHECK(netrun_tensor_write_npy(path, &t) == NETRUN_ERR_INVALID_ARGUMENT);
    netrun_tensor_free(NULL);
    unlink(path);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/netrun_tensor_io_%d", (int)getpid());
    if (mkdir(dir, 0700) != 0) return 2;
    test_roundtrip();
    test_npy_variants();
    test_pb();
    test_misc();
    rmdir(dir);
    printf("test_tensor_io: %d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
