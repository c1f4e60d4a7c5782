/*
 * gpu_frames.c — frames that stay on the GPU from end to end: netrun reads each frame from device memory and writes
 * its result into device memory, on the caller's CUDA stream, with no copy over PCIe and no device-wide wait.
 *
 *   gpu_frames MODEL.onnx [FRAMES]        e.g. gpu_frames examples/tiny_cnn.onnx 16
 *
 * The model's one float32 input and one float32 output are bound once to device buffers (fixed pointers: captured
 * CUDA Graphs are replayed run after run). Frames come from a ring in device memory, as a decoder would leave them;
 * each is copied on the stream into the bound input (device to device), the run is queued with
 * netrun_session_run_async, the output is copied on the stream into the result ring, and netrun_session_wait ends
 * the frame. At the end the results are compared with the host path (netrun_session_set_input /
 * netrun_session_output on the same frames). The CUDA runtime is loaded with dlopen, so this builds without CUDA
 * headers; without a GPU it prints "SKIP: ..." and exits 0.
 */
#include <netrun.h>

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The few CUDA runtime calls used, by dlsym (cudaError_t is an int; 0 is success). */
typedef void *cuda_stream;
static struct {
    int (*GetDeviceCount)(int *);
    int (*Malloc)(void **, size_t);
    int (*Free)(void *);
    int (*Memcpy)(void *, const void *, size_t, int);
    int (*MemcpyAsync)(void *, const void *, size_t, int, cuda_stream);
    int (*StreamCreate)(cuda_stream *);
    int (*StreamDestroy)(cuda_stream);
    const char *(*GetErrorString)(int);
} cu;
enum { H2D = 1, D2H = 2, D2D = 3 }; /* cudaMemcpyKind */

static int load_cudart(void) {
    static const char *const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) return 0;
#define SYM(field, name) if (!(*(void **)&cu.field = dlsym(h, name))) return 0;
    SYM(GetDeviceCount, "cudaGetDeviceCount") SYM(Malloc, "cudaMalloc") SYM(Free, "cudaFree")
    SYM(Memcpy, "cudaMemcpy") SYM(MemcpyAsync, "cudaMemcpyAsync") SYM(StreamCreate, "cudaStreamCreate")
    SYM(StreamDestroy, "cudaStreamDestroy") SYM(GetErrorString, "cudaGetErrorString")
#undef SYM
    return 1;
}

#define CU(call)                                                                                               \
    do {                                                                                                       \
        int e_ = (call);                                                                                       \
        if (e_) {                                                                                              \
            fprintf(stderr, "gpu_frames: %s: %s\n", #call, cu.GetErrorString(e_));                             \
            return 1;                                                                                          \
        }                                                                                                      \
    } while (0)
#define NR(call, s)                                                                                            \
    do {                                                                                                       \
        netrun_status st_ = (call);                                                                            \
        if (st_ != NETRUN_OK) {                                                                                \
            fprintf(stderr, "gpu_frames: %s: %s\n", #call, (s) ? netrun_session_error(s) : netrun_last_error()); \
            return 1;                                                                                          \
        }                                                                                                      \
    } while (0)

/* A deterministic frame: a different pattern per index. */
static void make_frame(float *f, size_t n, int index) {
    for (size_t i = 0; i < n; i++) f[i] = (float)sin(0.01 * (double)i + 0.7 * index) * 0.5f;
}

static int run(const char *model_path, int frames) {
    netrun_model *m = NULL;
    NR(netrun_model_load(model_path, &m), NULL);
    netrun_options *o = NULL;
    NR(netrun_options_create(&o), NULL);
    NR(netrun_options_set_backends(o, "cuda"), NULL);
    netrun_session *dev = NULL, *host = NULL;
    NR(netrun_session_create(m, o, &dev), NULL);
    NR(netrun_session_create(m, o, &host), NULL);
    netrun_options_destroy(o);
    netrun_tensor_info in, out;
    NR(netrun_session_input_info(dev, 0, &in), dev);
    NR(netrun_session_output_info(dev, 0, &out), dev);
    if (netrun_session_input_count(dev) != 1 || netrun_session_output_count(dev) != 1 || in.dtype != NETRUN_DTYPE_FLOAT ||
        out.dtype != NETRUN_DTYPE_FLOAT) {
        fprintf(stderr, "gpu_frames: this example takes a model with one float32 input and one float32 output\n");
        return 1;
    }
    int64_t dims[NETRUN_MAX_RANK];
    size_t n_in = 1;
    for (int d = 0; d < in.rank; d++) {
        dims[d] = in.dims[d] < 0 ? 1 : in.dims[d]; /* symbolic dims (batch) as 1 */
        n_in *= (size_t)dims[d];
    }
    size_t in_bytes = n_in * sizeof(float);
    /* the output's size: from a host run of frame 0 (the reference path below needs it anyway) */
    float *frame = malloc(in_bytes);
    if (!frame) return 1;
    make_frame(frame, n_in, 0);
    NR(netrun_session_set_input(host, in.name, NETRUN_DTYPE_FLOAT, in.rank, dims, frame, in_bytes), host);
    NR(netrun_session_run(host), host);
    netrun_tensor_view hv;
    NR(netrun_session_output(host, 0, &hv), host);
    size_t out_bytes = hv.nbytes;

    /* device memory: the frame ring (what a decoder would fill), the bound input and output, the result ring */
    cuda_stream stream = NULL;
    CU(cu.StreamCreate(&stream));
    void *ring_in = NULL, *ring_out = NULL, *bound_in = NULL, *bound_out = NULL;
    CU(cu.Malloc(&ring_in, in_bytes * (size_t)frames));
    CU(cu.Malloc(&ring_out, out_bytes * (size_t)frames));
    CU(cu.Malloc(&bound_in, in_bytes));
    CU(cu.Malloc(&bound_out, out_bytes));
    for (int f = 0; f < frames; f++) { /* the frames arrive on the GPU (once, before the pipeline) */
        make_frame(frame, n_in, f);
        CU(cu.Memcpy((char *)ring_in + (size_t)f * in_bytes, frame, in_bytes, H2D));
    }

    NR(netrun_session_set_stream(dev, NETRUN_MEMORY_CUDA, stream), dev);
    NR(netrun_session_bind_input_device(dev, in.name, NETRUN_DTYPE_FLOAT, in.rank, dims, NETRUN_MEMORY_CUDA, 0,
                                        bound_in, in_bytes), dev);
    NR(netrun_session_bind_output_device(dev, out.name, NETRUN_MEMORY_CUDA, 0, bound_out, out_bytes), dev);
    size_t pcie = 0;
    netrun_session_stats stats;
    for (int f = 0; f < frames; f++) {
        CU(cu.MemcpyAsync(bound_in, (char *)ring_in + (size_t)f * in_bytes, in_bytes, D2D, stream));
        NR(netrun_session_run_async(dev), dev); /* queued after the copy: same stream */
        CU(cu.MemcpyAsync((char *)ring_out + (size_t)f * out_bytes, bound_out, out_bytes, D2D, stream));
        NR(netrun_session_wait(dev), dev);
        NR(netrun_session_get_stats_ex(dev, &stats, sizeof stats), dev);
        pcie += stats.h2d_bytes + stats.d2h_bytes;
    }
    printf("gpu_frames: %d frames of %zu bytes on %s; host <-> device bytes in the runs: %zu; output written in "
           "place: %s; device graphs: %d; last run %.3f ms\n", frames, in_bytes, "cuda", pcie,
           stats.n_outputs_in_place ? "yes" : "no (one device copy)", stats.n_graphs, stats.last_run_ms);

    /* check: every frame's result against the host path */
    float *got = malloc(out_bytes);
    double worst = 0;
    if (!got) return 1;
    for (int f = 0; f < frames; f++) {
        make_frame(frame, n_in, f);
        NR(netrun_session_set_input(host, in.name, NETRUN_DTYPE_FLOAT, in.rank, dims, frame, in_bytes), host);
        NR(netrun_session_run(host), host);
        NR(netrun_session_output(host, 0, &hv), host);
        CU(cu.Memcpy(got, (char *)ring_out + (size_t)f * out_bytes, out_bytes, D2H));
        const float *want = hv.data;
        for (size_t i = 0; i < out_bytes / sizeof(float); i++) {
            double e = fabs((double)got[i] - want[i]) / (1e-5 + fabs(want[i]));
            if (e > worst) worst = e;
        }
    }
    int ok = worst < 1e-3 && (stats.n_copies > 0 || pcie == 0);
    printf("gpu_frames: results %s the host path (worst relative error %.2e)%s\n", ok ? "match" : "DIFFER FROM", worst,
           stats.n_copies ? "; some nodes ran off the GPU, so some bytes crossed PCIe" : "");
    free(got);
    free(frame);
    cu.Free(ring_in);
    cu.Free(ring_out);
    cu.Free(bound_in);
    cu.Free(bound_out);
    netrun_session_destroy(dev);
    netrun_session_destroy(host);
    cu.StreamDestroy(stream);
    netrun_model_release(m);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: gpu_frames MODEL.onnx [FRAMES]\n");
        return 2;
    }
    int frames = argc > 2 ? atoi(argv[2]) : 16;
    if (frames < 1) frames = 1;
    int n = 0;
    if (!load_cudart() || cu.GetDeviceCount(&n) || n < 1) {
        printf("SKIP: no CUDA runtime or device on this machine\n");
        return 0;
    }
    netrun_backend_info bi;
    if (netrun_backend_find("cuda", &bi) < 0 || !bi.available) {
        printf("SKIP: the cuda backend is not available here\n");
        return 0;
    }
    return run(argv[1], frames);
}
