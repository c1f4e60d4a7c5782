/*
 * kserve_floor.c — the floor under a Python client: the requests of tools/bench/kserve_client.py sent from C, one at
 * a time on one keep-alive connection, for tools/bench/triton_client_bench.py's slice_add_N model (float32 x of
 * 1 x N in, y = x[:, :K] + 1 out). What this costs per request is the server and the kernel without Python.
 *
 *   cc -O2 -o kserve_floor tools/bench/kserve_floor.c
 *   kserve_floor HOST PORT MODEL N K REQUESTS [SHM_REGION]    (SHM_REGION: x is in that registered region, which
 *                                                              the caller filled with x[i] = i % 97 * 0.25)
 * Prints each timed request's latency (us, one a line, after 20 warm-up requests), then "cpu" and the process's CPU
 * time per timed request (us), and exits 0 when every response was 200 with the right output, else 1.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double clock_us(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static double now_us(void) { return clock_us(CLOCK_MONOTONIC); }

static int send_all(int fd, struct iovec *iov, int n) {
    while (n > 0) {
        ssize_t w = writev(fd, iov, n);
        if (w < 0) return -1;
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

/* One response into buf (cap bytes): returns the body's offset and sets *status, *body, *jlen; -1 on failure. */
static long read_response(int fd, char *buf, size_t cap, int *status, long *body, long *jlen) {
    size_t n = 0;
    char *end = NULL;
    while (!end) {
        if (n == cap) return -1;
        ssize_t r = read(fd, buf + n, cap - n);
        if (r <= 0) return -1;
        n += (size_t)r;
        buf[n < cap ? n : cap - 1] = 0;
        end = strstr(buf, "\r\n\r\n");
    }
    *status = atoi(buf + 9);
    *body = -1;
    *jlen = -1;
    for (char *line = strstr(buf, "\r\n") + 2; line < end; line = strstr(line, "\r\n") + 2) {
        if (!strncasecmp(line, "Content-Length:", 15)) *body = atol(line + 15);
        if (!strncasecmp(line, "Inference-Header-Content-Length:", 32)) *jlen = atol(line + 32);
    }
    long start = end + 4 - buf;
    if (*body < 0 || (size_t)(start + *body) > cap) return -1;
    while (n < (size_t)(start + *body)) {
        ssize_t r = read(fd, buf + n, (size_t)(start + *body) - n);
        if (r <= 0) return -1;
        n += (size_t)r;
    }
    if (*jlen < 0) *jlen = *body;
    return start;
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: %s HOST PORT MODEL N K REQUESTS [SHM_REGION]\n", argv[0]);
        return 2;
    }
    const char *host = argv[1], *model = argv[3], *region = argc > 7 ? argv[7] : NULL;
    int port = atoi(argv[2]), reqs = atoi(argv[6]);
    long nx = atol(argv[4]), k = atol(argv[5]);
    if (nx < 1 || k < 1 || k > nx || reqs < 1) return 2;
    float *x = malloc((size_t)nx * sizeof *x);
    double *lat = malloc((size_t)reqs * sizeof *lat);
    size_t cap = (size_t)k * 4 + 65536;
    char *buf = malloc(cap);
    if (!x || !lat || !buf) return 1;
    for (long i = 0; i < nx; i++) x[i] = (float)(i % 97) * 0.25f;
    char js[1024], head[1400];
    int jl = region
        ? snprintf(js, sizeof js, "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,%ld],\"datatype\":\"FP32\",\"parameters\":"
                   "{\"shared_memory_region\":\"%s\",\"shared_memory_byte_size\":%ld,\"shared_memory_offset\":0}}],"
                   "\"outputs\":[{\"name\":\"y\",\"parameters\":{\"binary_data\":true}}]}", nx, region, nx * 4)
        : snprintf(js, sizeof js, "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,%ld],\"datatype\":\"FP32\",\"parameters\":"
                   "{\"binary_data_size\":%ld}}],\"outputs\":[{\"name\":\"y\",\"parameters\":{\"binary_data\":true}}]}",
                   nx, nx * 4);
    while (jl % 8) js[jl++] = ' '; /* the tensor after it aligned, as kserve_client.py does */
    js[jl] = 0;
    long body = jl + (region ? 0 : nx * 4);
    int hl = snprintf(head, sizeof head, "POST /v2/models/%s/infer HTTP/1.1\r\nHost: %s\r\n"
                      "Content-Type: application/octet-stream\r\nInference-Header-Content-Length: %d\r\n"
                      "Content-Length: %ld\r\n\r\n%s", model, host, jl, body, js);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int one = 1;
    if (fd < 0 || inet_pton(AF_INET, host, &sa.sin_addr) != 1 || connect(fd, (struct sockaddr *)&sa, sizeof sa) ||
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one)) {
        perror("kserve_floor: connect");
        return 1;
    }
    int bad = 0;
    double cpu0 = 0;
    for (int r = 0; r < reqs + 20; r++) { /* 20 warm-up requests */
        if (r == 20) cpu0 = clock_us(CLOCK_PROCESS_CPUTIME_ID);
        struct iovec iov[2] = {{head, (size_t)hl}, {x, region ? 0 : (size_t)nx * 4}};
        double t0 = now_us();
        int status;
        long blen, jlen, start;
        if (send_all(fd, iov, region ? 1 : 2) || (start = read_response(fd, buf, cap, &status, &blen, &jlen)) < 0) {
            fprintf(stderr, "kserve_floor: request %d: broken connection or response\n", r);
            return 1;
        }
        if (r >= 20) lat[r - 20] = now_us() - t0;
        if (status != 200 || blen - jlen != k * 4) {
            if (!bad++) fprintf(stderr, "kserve_floor: status %d, %ld output bytes: %.200s\n", status, blen - jlen,
                                buf + start);
            continue;
        }
        const float *y = (const float *)(void *)(buf + start + jlen); /* read by memcpy: the body may be unaligned */
        for (long i = 0; i < k; i++) {
            float v;
            memcpy(&v, (const char *)y + i * 4, 4);
            if (v != x[i] + 1.0f) {
                if (!bad++) fprintf(stderr, "kserve_floor: y[%ld] = %g, not %g\n", i, v, x[i] + 1.0f);
                break;
            }
        }
    }
    double cpu = (clock_us(CLOCK_PROCESS_CPUTIME_ID) - cpu0) / reqs;
    close(fd);
    for (int r = 0; r < reqs; r++) printf("%.1f\n", lat[r]);
    printf("cpu %.1f\n", cpu);
    free(x);
    free(lat);
    free(buf);
    return bad ? 1 : 0;
}
