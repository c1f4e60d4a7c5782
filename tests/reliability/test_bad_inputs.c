/* Inputs a caller gets wrong, or that are legal but unusual, through the API: wrong dtype, shape, byte
 * count or name, NULL data, negative dims, output before run (clear errors that name the input), and
 * NaN/Inf values and zero-size dims (correct results). Models: examples/tiny_cnn.onnx and
 * tests/corpus/valid/relu_add_dynamic.onnx (y = Relu(x), z = x + x, x float32 [n, 3]). */
#include <math.h>
#include <unistd.h>

#include "rel_common.h"

#ifndef NR_SOURCE_DIR
#define NR_SOURCE_DIR "."
#endif

static int contains(const char *s, const char *w) { return s && strstr(s, w) != NULL; }

static void wrong_inputs(void) {
    netrun_model *m = NULL;
    netrun_session *s = NULL;
    CHECK(netrun_model_load(NR_SOURCE_DIR "/examples/tiny_cnn.onnx", &m) == NETRUN_OK);
    if (!m) return;
    CHECK(cpu_session(m, &s) == NETRUN_OK);
    if (!s) {
        netrun_model_release(m);
        return;
    }
    static float x[CNN_ELEMS];
    static int32_t xi[CNN_ELEMS];
    fill_input(x, CNN_ELEMS, 1);
    netrun_tensor_view y;

    CHECK(netrun_session_output(s, 0, &y) == NETRUN_ERR_STATE); /* before any run */

    netrun_status st = netrun_session_set_input(s, "image", NETRUN_DTYPE_INT32, 4, cnn_dims, xi, sizeof xi);
    CHECK(st != NETRUN_OK);
    CHECK(contains(netrun_session_error(s), "image"));
    printf("wrong dtype: %s\n", netrun_session_error(s));

    int64_t small[4] = {1, 3, 16, 16};
    st = netrun_session_set_input(s, "image", NETRUN_DTYPE_FLOAT, 4, small, x, 3 * 16 * 16 * sizeof(float));
    CHECK(st != NETRUN_OK);
    CHECK(contains(netrun_session_error(s), "image"));
    printf("wrong shape: %s\n", netrun_session_error(s));

    int64_t rank3[3] = {3, 32, 32};
    CHECK(netrun_session_set_input(s, "image", NETRUN_DTYPE_FLOAT, 3, rank3, x, sizeof x) != NETRUN_OK);
    CHECK(contains(netrun_session_error(s), "image"));

    CHECK(netrun_session_set_input(s, "image", NETRUN_DTYPE_FLOAT, 4, cnn_dims, x, sizeof x - 4) != NETRUN_OK);
    CHECK(contains(netrun_session_error(s), "image"));
    printf("short buffer: %s\n", netrun_session_error(s));

    CHECK(netrun_session_set_input(s, "image", NETRUN_DTYPE_FLOAT, 4, cnn_dims, NULL, sizeof x) != NETRUN_OK);
    CHECK(netrun_session_set_input(s, "imagez", NETRUN_DTYPE_FLOAT, 4, cnn_dims, x, sizeof x) != NETRUN_OK);
    CHECK(contains(netrun_session_error(s), "imagez"));
    int64_t neg[4] = {1, 3, -32, 32};
    CHECK(netrun_session_set_input(s, "image", NETRUN_DTYPE_FLOAT, 4, neg, x, sizeof x) != NETRUN_OK);
    CHECK(netrun_session_set_input(s, "image", NETRUN_DTYPE_FLOAT, 99, cnn_dims, x, sizeof x) != NETRUN_OK);
    CHECK(netrun_session_set_input(s, "image", (netrun_dtype)1000, 4, cnn_dims, x, sizeof x) != NETRUN_OK);

    /* after all those errors the session still runs normally */
    CHECK(netrun_session_set_input(s, "image", NETRUN_DTYPE_FLOAT, 4, cnn_dims, x, sizeof x) == NETRUN_OK);
    CHECK(netrun_session_run(s) == NETRUN_OK);
    CHECK(netrun_session_output(s, 0, &y) == NETRUN_OK && y.nbytes == 10 * sizeof(float));
    CHECK(netrun_session_output(s, 1, &y) != NETRUN_OK);
    CHECK(netrun_session_output(s, -1, &y) != NETRUN_OK);
    CHECK(netrun_session_output_by_name(s, "nope", &y) != NETRUN_OK);

    /* NaN and Inf through conv, pooling and softmax: no crash; a NaN anywhere in the image reaches the
     * probabilities (softmax mixes all classes) */
    x[5] = NAN;
    x[100] = INFINITY;
    x[200] = -INFINITY;
    CHECK(netrun_session_set_input(s, "image", NETRUN_DTYPE_FLOAT, 4, cnn_dims, x, sizeof x) == NETRUN_OK);
    CHECK(netrun_session_run(s) == NETRUN_OK);
    CHECK(netrun_session_output(s, 0, &y) == NETRUN_OK && y.nbytes == 10 * sizeof(float));
    if (y.nbytes == 10 * sizeof(float)) {
        int nonfinite = 0;
        for (int i = 0; i < 10; i++) nonfinite += !isfinite(((const float *)y.data)[i]);
        CHECK(nonfinite > 0);
    }
    netrun_session_destroy(s);
    netrun_model_release(m);
}

static void special_values(void) {
    netrun_model *m = NULL;
    netrun_session *s = NULL;
    CHECK(netrun_model_load(NR_SOURCE_DIR "/tests/corpus/valid/relu_add_dynamic.onnx", &m) == NETRUN_OK);
    if (!m) return;
    CHECK(cpu_session(m, &s) == NETRUN_OK);
    if (!s) {
        netrun_model_release(m);
        return;
    }
    const float x[6] = {NAN, INFINITY, -INFINITY, -0.0f, 3e38f, -2.5f};
    int64_t dims[2] = {2, 3};
    netrun_tensor_view y, z;
    CHECK(netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 2, dims, x, sizeof x) == NETRUN_OK);
    CHECK(netrun_session_run(s) == NETRUN_OK);
    CHECK(netrun_session_output_by_name(s, "y", &y) == NETRUN_OK && y.nbytes == sizeof x);
    CHECK(netrun_session_output_by_name(s, "z", &z) == NETRUN_OK && z.nbytes == sizeof x);
    if (y.nbytes == sizeof x && z.nbytes == sizeof x) {
        const float *yv = y.data, *zv = z.data;
        CHECK(isinf(yv[1]) && yv[1] > 0);      /* Relu(+inf) = +inf */
        CHECK(yv[2] == 0.0f);                  /* Relu(-inf) = 0 */
        CHECK(yv[5] == 0.0f && yv[4] == 3e38f);
        CHECK(isnan(zv[0]));                   /* NaN + NaN */
        CHECK(isinf(zv[1]) && zv[1] > 0 && isinf(zv[2]) && zv[2] < 0);
        CHECK(isinf(zv[4]));                   /* 3e38 + 3e38 overflows to inf */
        CHECK(zv[5] == -5.0f);
    }

    /* zero-size batch: a valid run with empty outputs of shape [0, 3] */
    int64_t zero[2] = {0, 3};
    CHECK(netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 2, zero, NULL, 0) == NETRUN_OK ||
          netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 2, zero, x, 0) == NETRUN_OK);
    CHECK(netrun_session_run(s) == NETRUN_OK);
    CHECK(netrun_session_output_by_name(s, "z", &z) == NETRUN_OK);
    CHECK(z.nbytes == 0 && z.rank == 2 && z.dims[0] == 0 && z.dims[1] == 3);

    /* back to a non-empty batch: the session re-plans and gives correct values again */
    const float x1[3] = {-1.0f, 2.0f, 3.0f};
    int64_t one[2] = {1, 3};
    CHECK(netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 2, one, x1, sizeof x1) == NETRUN_OK);
    CHECK(netrun_session_run(s) == NETRUN_OK);
    CHECK(netrun_session_output_by_name(s, "y", &y) == NETRUN_OK && y.nbytes == sizeof x1);
    if (y.nbytes == sizeof x1) CHECK(((const float *)y.data)[0] == 0.0f && ((const float *)y.data)[2] == 3.0f);

    /* the fixed dim must match; symbolic dims cannot be negative */
    int64_t bad[2] = {1, 4};
    CHECK(netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 2, bad, x, 4 * sizeof(float)) != NETRUN_OK);
    CHECK(contains(netrun_session_error(s), "x"));
    CHECK(netrun_session_set_dim(s, "n", -3) != NETRUN_OK);
    CHECK(netrun_session_set_dim(s, "no_such_dim", 3) != NETRUN_OK || 1); /* may be accepted and unused */
    netrun_session_destroy(s);
    netrun_model_release(m);
}

static void bad_handles(void) {
    netrun_model *m = NULL;
    CHECK(netrun_model_load(NULL, &m) != NETRUN_OK);
    CHECK(netrun_model_load("/nonexistent/model.onnx", &m) == NETRUN_ERR_IO || m == NULL);
    CHECK(contains(netrun_last_error(), "/nonexistent/model.onnx"));
    CHECK(netrun_model_load_memory(NULL, 10, NULL, &m) != NETRUN_OK);
    CHECK(netrun_model_load_memory("xx", 2, NULL, &m) != NETRUN_OK);
    netrun_load_limits lim = {.max_tensor_bytes = 64, .max_graph_depth = 0, .max_model_bytes = 0};
    /* tiny_cnn's conv weights are larger than 64 bytes: the limit refuses them, naming the tensor */
    netrun_status st = netrun_model_load_ex(NR_SOURCE_DIR "/examples/tiny_cnn.onnx", &lim, &m);
    CHECK(st != NETRUN_OK && m == NULL);
    printf("max_tensor_bytes=64: status %d: %s\n", (int)st, netrun_last_error());
    CHECK(contains(netrun_last_error(), "64"));
    lim.max_tensor_bytes = 0;
    lim.max_model_bytes = 100;
    CHECK(netrun_model_load_ex(NR_SOURCE_DIR "/examples/tiny_cnn.onnx", &lim, &m) != NETRUN_OK);
    printf("max_model_bytes=100: %s\n", netrun_last_error());
    netrun_tensor_view *t = NULL;
    CHECK(netrun_tensor_read_memory("\x93NUMPY\x01\x00", 8, &t) != NETRUN_OK);
    CHECK(netrun_tensor_read_memory(NULL, 0, &t) != NETRUN_OK);
    netrun_session_destroy(NULL);
    netrun_model_release(NULL);
    netrun_tensor_free(NULL);
}

/* External data through a symlink that leaves the model's folder must be refused, though the name is plain.
 * The model is the corpus' external_missing_file.onnx (location "no_such_weights.bin"). */
static void symlink_escape(void) {
    char dir[] = "/tmp/netrun-rel-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    char model[512], link[512], outside[512];
    snprintf(model, sizeof model, "%s/m.onnx", dir);
    snprintf(link, sizeof link, "%s/no_such_weights.bin", dir);
    snprintf(outside, sizeof outside, "%s.outside.bin", dir);
    FILE *in = fopen(NR_SOURCE_DIR "/tests/corpus/models/external_missing_file.onnx", "rb");
    FILE *out = fopen(model, "wb");
    FILE *o2 = fopen(outside, "wb");
    CHECK(in && out && o2);
    if (in && out && o2) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
        float w[4] = {1, 2, 3, 4}; /* exactly what the tensor needs: only the location is wrong */
        fwrite(w, sizeof w, 1, o2);
    }
    if (in) fclose(in);
    if (out) fclose(out);
    if (o2) fclose(o2);
    CHECK(symlink(outside, link) == 0);
    netrun_model *m = NULL;
    netrun_status st = netrun_model_load(model, &m);
    printf("symlink out of the folder: status %d: %s\n", (int)st, netrun_last_error());
    CHECK(st != NETRUN_OK && m == NULL);
    CHECK(contains(netrun_last_error(), "outside"));
    netrun_model_release(m);
    /* the same file copied inside the folder is accepted: the refusal was about the location */
    unlink(link);
    CHECK(rename(outside, link) == 0);
    st = netrun_model_load(model, &m);
    CHECK(st == NETRUN_OK);
    netrun_model_release(m);
    unlink(link);
    unlink(model);
    rmdir(dir);
}

int main(void) {
    symlink_escape();
    wrong_inputs();
    special_values();
    bad_handles();
    return finish("test_bad_inputs");
}
