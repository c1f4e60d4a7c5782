/* netrun: run an ONNX model, time it, report placement/timings/memory/outputs. Public API only. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static int g_quiet;
static int g_color_err;

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%snetrun: error:%s ", cli_color(g_color_err, "\033[1;31m"), cli_color(g_color_err, "\033[0m"));
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void cli_note(const cli_opts *o, const char *fmt, ...)
{
    if ((o && o->quiet) || g_quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("netrun: note: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

double cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Lines the library logs (warnings such as "option 'x' has no effect") go to stderr like the CLI's own notes, and
 * like them are silenced by -q; errors always show. */
static void cli_log(void *user, netrun_log_level level, const char *source, const char *message)
{
    (void)user;
    if (g_quiet && level != NETRUN_LOG_ERROR)
        return;
    static const char *const names[] = {"error", "warning", "info", "debug"};
    fprintf(stderr, "netrun: %s: %s%s%s\n", names[level <= NETRUN_LOG_DEBUG ? level : NETRUN_LOG_DEBUG],
            strcmp(source, "runtime") ? source : "", strcmp(source, "runtime") ? ": " : "", message);
}

/* ---- help ---- */

/* --image and its companions exist only when the CLI was built with stb_image (Debian libstb-dev). */
static const char help_image[] =
        "Image inputs (decoded with stb_image: JPEG, PNG, BMP, GIF, PNM, TGA, PSD, HDR):\n"
        "  --image NAME=FILE         fill input NAME (rank 4) from an image, copied over the batch\n"
        "  --size WxH                resize to W x H (default: the input's fixed H and W)\n"
        "  --crop                    keep the aspect ratio: resize so the image covers WxH, then center crop\n"
        "                            (OpenCV blobFromImage's crop=true); without it the image is stretched\n"
        "  --mean R,G,B              subtracted from each channel (0-255 scale) before --scale\n"
        "  --scale S                 multiply after the mean (default 1; e.g. 0.00392 for [0, 1])\n"
        "  --swap-rb                 feed BGR instead of RGB\n"
        "  --layout nchw|nhwc        layout of the input (default: guessed from where the 1/3/4 channels are)\n"
        "  --device-preprocess       feed the image as uint8 frames and convert them in the graph, on the backend\n"
        "                            that runs the model (--size, --crop, --mean, --scale, --swap-rb become the\n"
        "                            preprocess.* options; bilinear as cv2.resize, NCHW only)\n"
        "\n";

static void print_help(FILE *f)
{
    fputs(
        "usage: netrun MODEL.onnx [options]\n"
        "       netrun MODEL.onnx --profile [--profile-json trace.json] [--dot graph.dot]\n"
        "       netrun MODEL.onnx --explain | --compare A,B\n"
        "       netrun --support-matrix [--format text|md|csv]\n"
        "       netrun --backends | --version | --help\n"
        "\n"
        "Run an ONNX model with netrun; report where each node runs, how long loading, preparing and\n"
        "running take, the memory used, and the outputs. Inputs not given get seeded random data.\n"
        "\n"
        "Backends:\n"
        "  --backend LIST            backend preference, comma-separated (e.g. cuda,cpu); default: every\n"
        "                            available backend, GPU first. cpu is the fallback unless --strict\n"
        "  --strict                  fail if any node cannot run on the first backend of the list\n"
        "  --allow-fallback          run on the rest of the list (or the cpu) when a listed backend is\n"
        "                            unavailable; without it that is an error unless the list names another\n"
        "                            available backend (cuda,cpu runs on the cpu where there is no GPU)\n"
        "  --precision P             fp32 (default), tf32 or fp16\n"
        "  --device N                device index within each backend (default 0)\n"
        "  --threads N               CPU threads (default 0 = all cores)\n"
        "  --workspace-policy P      balanced (default), fastest or min-memory\n"
        "  --workspace-limit SIZE    cap on workspace memory: bytes, or with a K/M/G suffix (256M)\n"
        "  --set KEY=VALUE           backend-specific setting (e.g. cuda.graphs=0); repeatable\n"
        "  --no-cuda-graph           run CUDA segments eagerly (same as --set cuda.graphs=0)\n"
        "  --no-optimize             no graph passes (BatchNorm folding, Conv fusions; same as --set graph.optimize=0)\n"
        "  --algo-search M           cuDNN algorithm choice: heuristic (default) or timed (cuda.algo_search)\n"
        "  --device-memory SIZE      device memory budget of the session (e.g. 2G); the plan must fit it\n"
        "  --host-memory SIZE        host memory budget of the session: a size (512M), auto (default: half of\n"
        "                            this machine's memory) or none (same as --set limits.host_memory=SIZE)\n"
        "  --backends                list the backend plugins found, then exit\n"
        "\n"
        "Inputs:\n"
        "  --input NAME=FILE         read input NAME from a .npy or ONNX TensorProto .pb file; repeatable\n"
        "  --shape NAME=DIMS         shape of input NAME, e.g. 1x3x224x224; sets its symbolic dims\n"
        "  --dim SYMBOL=N            set a symbolic dimension by name (e.g. batch=8)\n"
        "  --batch N                 set the first dimension of every input whose first dim is symbolic\n"
        "  --seed N                  seed of the random inputs (default 0). Random data: floats uniform\n"
        "                            in [-1, 1), integers in [0, 10), bool 0/1. Symbolic dims not set\n"
        "                            default to 1 (with a note on stderr)\n"
        "\n",
        f);
    if (cli_image_supported())
        fputs(help_image, f);
    fputs(
        "Outputs and checks:\n"
        "  --output-dir DIR          write each output as DIR/NAME.npy ('/' in names becomes '_')\n"
        "  --outputs-on-device       the timed runs leave the outputs in the device memory of the backend that\n"
        "                            made them (no copy to the host: as a GPU pipeline reading them there);\n"
        "                            one more, untimed run reads them for the report\n"
        "  --check DIR               compare outputs with DIR/NAME.npy or DIR/output_K.pb (K = output index)\n"
        "  --compare A,B             run the same inputs on backend lists A and B (use '+' inside a list:\n"
        "                            template+cpu), report per-output errors and the first node whose\n"
        "                            outputs differ beyond --rtol/--atol; exit 3 when they do\n"
        "  --rtol X                  relative tolerance of --check/--compare (default 1e-3)\n"
        "  --atol X                  absolute tolerance of --check/--compare (default 1e-5); integer outputs\n"
        "                            must match exactly\n"
        "\n"
        "Timing:\n"
        "  --warmup N                untimed runs after the first run (default 3)\n"
        "  --iterations N            timed runs (default 20)\n"
        "  --duration SECONDS        run timed runs for this long instead (at least one run)\n"
        "\n"
        "Profiling and debugging:\n"
        "  --profile                 profile the timed runs: per-node table (op, backend, kernel, workspace,\n"
        "                            mean time, share) sorted by time, with per-op and per-backend sums\n"
        "  --profile-json FILE       write the profiled runs as a Chrome trace (Perfetto, chrome://tracing)\n"
        "  --dot FILE                write the placed graph as Graphviz DOT (colour = backend, copies dashed)\n"
        "  --explain                 print every node's placement, kernel and reason, then exit (no runs)\n"
        "  --support-matrix          print every op the runtime knows x every backend found, then exit\n"
        "  --format F                text (default), md or csv: format of --support-matrix\n"
        "\n"
        "Model limits:\n"
        "  --max-tensor-bytes SIZE   refuse models with a larger tensor (K/M/G suffixes; default 16G)\n"
        "  --max-graph-depth N       refuse models with deeper subgraph nesting (default 32)\n"
        "\n"
        "Reports:\n"
        "  --json FILE|-             write a JSON report to FILE ('-' = stdout, replacing the text report)\n"
        "  -q, --quiet               no text report, no notes, no progress (errors still go to stderr)\n"
        "  -v, --verbose             add a per-node placement table (node, op, backend, kernel, reason)\n"
        "  --version                 print the versions and exit\n"
        "  -h, --help                print this help and exit\n"
        "  Progress (runs, elapsed, ETA) shows on stderr only when it is a terminal; colours only on a\n"
        "  terminal and never when NO_COLOR is set.\n"
        "\n"
        "Exit codes: 0 ok, 1 runtime error, 2 usage or model error, 3 --check mismatch or --compare divergence.\n"
        "\n"
        "Examples:\n"
        "  netrun resnet50.onnx\n"
        "  netrun resnet50.onnx --backend cuda --strict --precision fp16 --iterations 100\n"
        "  netrun resnet50.onnx --profile --profile-json trace.json --duration 10\n"
        "  netrun bert.onnx --batch 8 --dim seq=128 --json report.json\n"
        "  netrun net.onnx --backend cpu --input x=x.npy --output-dir out/\n"
        "  netrun net.onnx --input x=test_data_set_0/input_0.pb --check test_data_set_0\n"
        "  netrun net.onnx --compare cuda,cpu --atol 1e-4\n"
        "  netrun net.onnx --backend template,cpu --dot placed.dot && dot -Tsvg placed.dot -o placed.svg\n"
        "  netrun --support-matrix --format md > support.md\n",
        f);
    if (cli_image_supported())
        fputs("  netrun resnet50.onnx --image data=cat.jpg --size 224x224 --crop --mean 123.7,116.3,103.5 \\\n"
              "         --scale 0.0171 --output-dir out/\n",
              f);
}

/* ---- option parsing ---- */

static int parse_long(const char *opt, const char *v, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < min || x > max) {
        cli_error("%s expects an integer in [%ld, %ld], got '%s'", opt, min, max, v);
        return -1;
    }
    *out = x;
    return 0;
}

static int parse_double(const char *opt, const char *v, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x < 0) {
        cli_error("%s expects a non-negative number, got '%s'", opt, v);
        return -1;
    }
    *out = x;
    return 0;
}

static int add_kv(const char *opt, const char *arg, cli_kv **list, int *n)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) {
        cli_error("%s expects NAME=VALUE, got '%s'", opt, arg);
        return -1;
    }
    cli_kv *nl = realloc(*list, (size_t)(*n + 1) * sizeof(**list));
    if (!nl) {
        cli_error("out of memory");
        return -1;
    }
    *list = nl;
    char *buf = strdup(arg);
    if (!buf) {
        cli_error("out of memory");
        return -1;
    }
    size_t k = (size_t)(eq - arg);
    buf[k] = '\0';
    nl[*n].buf = buf;
    nl[*n].name = buf;
    nl[*n].value = buf + k + 1;
    (*n)++;
    return 0;
}

static void free_kvs(cli_kv *l, int n)
{
    for (int i = 0; i < n; i++)
        free(l[i].buf);
    free(l);
}

typedef struct extra_opts {
    int show_help, show_version, list_backends;
    cli_kv *settings;
    int n_settings;
    size_t device_memory; /* --device-memory (0 = none) */
} extra_opts;

/* The CUDA shorthands (--no-cuda-graph, --algo-search) set a cuda.* key; on a machine without the CUDA plugin that
 * key would be refused, so they say they have no effect instead. */
static int add_cuda_kv(const char *opt, const char *kv, extra_opts *x)
{
    if (netrun_backend_find("cuda", NULL) < 0) {
        cli_note(NULL, "%s has no effect: no cuda backend was found (netrun --backends)", opt);
        return 0;
    }
    return add_kv(opt, kv, &x->settings, &x->n_settings);
}

/* Parse argv into o. Returns 0, or an exit code (usage error). */
static int parse_args(int argc, char **argv, cli_opts *o, extra_opts *x)
{
    int only_positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_positional || a[0] != '-' || strcmp(a, "-") == 0) {
            if (o->model_path) {
                cli_error("more than one model given ('%s' and '%s')", o->model_path, a);
                return CLI_EXIT_USAGE;
            }
            o->model_path = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_positional = 1;
            continue;
        }
        /* Bundled short flags, getopt style: -qv is -q -v. */
        if (a[1] != '-' && a[1] && a[2]) {
            for (const char *c = a + 1; *c; c++) {
                if (*c == 'h')
                    x->show_help = 1;
                else if (*c == 'q')
                    o->quiet = 1;
                else if (*c == 'v')
                    o->verbose = 1;
                else {
                    cli_error("unknown option '-%c' in '%s' (short flags: -h, -q, -v; see netrun --help)", *c, a);
                    return CLI_EXIT_USAGE;
                }
            }
            continue;
        }
        /* Split "--opt=value". */
        char name[64];
        const char *inline_val = NULL;
        const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
        size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
        if (nlen >= sizeof(name)) {
            cli_error("unknown option '%s' (see netrun --help)", a);
            return CLI_EXIT_USAGE;
        }
        memcpy(name, a, nlen);
        name[nlen] = '\0';
        if (eq)
            inline_val = eq + 1;

        /* Flags. */
        static const char *const flags[] = {"-h", "--help", "--version", "--backends", "--strict", "--allow-fallback",
                                            "-q", "--quiet", "-v", "--verbose", "--profile", "--explain",
                                            "--support-matrix", "--swap-rb", "--crop", "--device-preprocess", "--no-cuda-graph",
                                            "--no-optimize", "--outputs-on-device"};
        int is_flag = 0;
        for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++)
            if (strcmp(name, flags[k]) == 0)
                is_flag = 1;
        if (is_flag) {
            if (inline_val) {
                cli_error("option %s takes no value", name);
                return CLI_EXIT_USAGE;
            }
            if (!strcmp(name, "-h") || !strcmp(name, "--help"))
                x->show_help = 1;
            else if (!strcmp(name, "--version"))
                x->show_version = 1;
            else if (!strcmp(name, "--backends"))
                x->list_backends = 1;
            else if (!strcmp(name, "--strict"))
                o->strict = 1;
            else if (!strcmp(name, "--allow-fallback"))
                o->allow_fallback = 1;
            else if (!strcmp(name, "-q") || !strcmp(name, "--quiet"))
                o->quiet = 1;
            else if (!strcmp(name, "--profile"))
                o->profile = 1;
            else if (!strcmp(name, "--explain"))
                o->explain = 1;
            else if (!strcmp(name, "--support-matrix"))
                o->support_matrix = 1;
            else if ((!strcmp(name, "--swap-rb") || !strcmp(name, "--crop") || !strcmp(name, "--device-preprocess")) &&
                     !cli_image_supported()) {
                cli_error("%s: this netrun was built without image support (stb_image, Debian libstb-dev)", name);
                return CLI_EXIT_USAGE;
            } else if (!strcmp(name, "--swap-rb"))
                o->swap_rb = 1;
            else if (!strcmp(name, "--crop"))
                o->crop = 1;
            else if (!strcmp(name, "--device-preprocess"))
                o->device_preprocess = 1;
            else if (!strcmp(name, "--outputs-on-device"))
                o->outputs_on_device = 1;
            else if (!strcmp(name, "--no-cuda-graph")) {
                if (add_cuda_kv(name, "cuda.graphs=0", x))
                    return CLI_EXIT_USAGE;
            }
            else if (!strcmp(name, "--no-optimize")) {
                if (add_kv(name, "graph.optimize=0", &x->settings, &x->n_settings))
                    return CLI_EXIT_USAGE;
            }
            else
                o->verbose = 1;
            continue;
        }

        static const char *const valued[] = {
            "--backend", "--precision", "--threads", "--device", "--workspace-policy", "--workspace-limit",
            "--input", "--shape", "--dim", "--output-dir", "--check", "--rtol", "--atol", "--warmup",
            "--iterations", "--json", "--seed", "--set", "--profile-json", "--dot", "--format", "--compare",
            "--image", "--size", "--mean", "--scale", "--layout", "--duration", "--batch", "--max-tensor-bytes",
            "--max-graph-depth", "--algo-search", "--device-memory", "--host-memory"};
        int known = 0;
        for (size_t k = 0; k < sizeof(valued) / sizeof(valued[0]); k++)
            if (strcmp(name, valued[k]) == 0)
                known = 1;
        if (!known) {
            cli_error("unknown option '%s' (see netrun --help)", name);
            return CLI_EXIT_USAGE;
        }
        const char *v = inline_val;
        if (!cli_image_supported() && (!strcmp(name, "--image") || !strcmp(name, "--size") || !strcmp(name, "--mean") ||
                                       !strcmp(name, "--scale") || !strcmp(name, "--layout"))) {
            cli_error("%s: this netrun was built without image support (stb_image, Debian libstb-dev)", name);
            return CLI_EXIT_USAGE;
        }
        if (!v) {
            if (i + 1 >= argc) {
                cli_error("option %s needs a value (see netrun --help)", name);
                return CLI_EXIT_USAGE;
            }
            v = argv[++i];
        }
        long lv;
        if (!strcmp(name, "--backend")) {
            o->backends = v;
        } else if (!strcmp(name, "--precision")) {
            o->precision_set = 1;
            if (!strcmp(v, "fp32"))
                o->precision = NETRUN_PRECISION_FP32;
            else if (!strcmp(v, "fp16"))
                o->precision = NETRUN_PRECISION_FP16;
            else if (!strcmp(v, "tf32"))
                o->precision = NETRUN_PRECISION_TF32;
            else {
                cli_error("--precision expects fp32, fp16 or tf32, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
        } else if (!strcmp(name, "--threads")) {
            if (parse_long(name, v, 0, 4096, &lv))
                return CLI_EXIT_USAGE;
            o->threads = (int)lv;
        } else if (!strcmp(name, "--device")) {
            if (parse_long(name, v, 0, 1024, &lv))
                return CLI_EXIT_USAGE;
            o->device = (int)lv;
        } else if (!strcmp(name, "--workspace-policy")) {
            o->workspace_set = 1;
            if (!strcmp(v, "balanced"))
                o->workspace_policy = NETRUN_WORKSPACE_BALANCED;
            else if (!strcmp(v, "fastest"))
                o->workspace_policy = NETRUN_WORKSPACE_FASTEST;
            else if (!strcmp(v, "min-memory"))
                o->workspace_policy = NETRUN_WORKSPACE_MIN_MEMORY;
            else {
                cli_error("--workspace-policy expects fastest, balanced or min-memory, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
        } else if (!strcmp(name, "--workspace-limit")) {
            o->workspace_set = 1;
            if (cli_parse_bytes(v, &o->workspace_limit) != 0) {
                cli_error("--workspace-limit expects a size like 1048576, 512K, 256M or 2G, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
        } else if (!strcmp(name, "--input")) {
            if (add_kv(name, v, &o->inputs, &o->n_inputs))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(name, "--shape")) {
            if (add_kv(name, v, &o->shapes, &o->n_shapes))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(name, "--dim")) {
            if (add_kv(name, v, &o->dims, &o->n_dims))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(name, "--algo-search")) {
            if (strcmp(v, "heuristic") && strcmp(v, "timed")) {
                cli_error("--algo-search expects heuristic or timed, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
            char kv[64];
            snprintf(kv, sizeof kv, "cuda.algo_search=%s", v);
            if (add_cuda_kv(name, kv, x))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(name, "--device-memory")) {
            if (cli_parse_bytes(v, &x->device_memory) != 0 || !x->device_memory) {
                cli_error("--device-memory expects a size like 512M or 2G, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
        } else if (!strcmp(name, "--host-memory")) { /* checked by the library (limits.host_memory) */
            char kv[128];
            snprintf(kv, sizeof kv, "limits.host_memory=%s", v);
            if (add_kv(name, kv, &x->settings, &x->n_settings))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(name, "--set")) {
            if (add_kv(name, v, &x->settings, &x->n_settings))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(name, "--output-dir")) {
            o->output_dir = v;
        } else if (!strcmp(name, "--check")) {
            o->check_dir = v;
        } else if (!strcmp(name, "--rtol")) {
            if (parse_double(name, v, &o->rtol))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(name, "--atol")) {
            if (parse_double(name, v, &o->atol))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(name, "--warmup")) {
            if (parse_long(name, v, 0, 100000000L, &o->warmup))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(name, "--iterations")) {
            if (parse_long(name, v, 0, 100000000L, &o->iterations))
                return CLI_EXIT_USAGE;
            o->iterations_set = 1;
        } else if (!strcmp(name, "--duration")) {
            if (parse_double(name, v, &o->duration_s))
                return CLI_EXIT_USAGE;
            if (o->duration_s <= 0 || o->duration_s > 1e7) {
                cli_error("--duration expects seconds in (0, 1e7], got '%s'", v);
                return CLI_EXIT_USAGE;
            }
        } else if (!strcmp(name, "--batch")) {
            if (parse_long(name, v, 1, INT32_MAX, &o->batch))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(name, "--max-tensor-bytes")) {
            if (cli_parse_bytes(v, &o->max_tensor_bytes) != 0 || o->max_tensor_bytes == 0) {
                cli_error("--max-tensor-bytes expects a positive size like 1048576, 512K, 256M or 2G, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
        } else if (!strcmp(name, "--max-graph-depth")) {
            if (parse_long(name, v, 1, 100000, &o->max_graph_depth))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(name, "--profile-json")) {
            o->profile_json = v;
        } else if (!strcmp(name, "--dot")) {
            o->dot_path = v;
        } else if (!strcmp(name, "--format")) {
            if (strcmp(v, "text") && strcmp(v, "md") && strcmp(v, "csv")) {
                cli_error("--format expects text, md or csv, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
            o->format = v;
        } else if (!strcmp(name, "--compare")) {
            const char *c = strchr(v, ',');
            if (!c || c == v || !c[1] || strchr(c + 1, ',')) {
                cli_error("--compare expects two backend lists A,B (e.g. cuda,cpu or template+cpu,cpu), got '%s'",
                          v);
                return CLI_EXIT_USAGE;
            }
            o->compare = v;
        } else if (!strcmp(name, "--image")) {
            if (add_kv(name, v, &o->images, &o->n_images))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(name, "--size")) {
            char *end;
            errno = 0;
            long w = strtol(v, &end, 10), h = -1;
            if (!errno && end != v && (*end == 'x' || *end == 'X')) {
                const char *hp = end + 1;
                h = strtol(hp, &end, 10);
                if (errno || end == hp || *end)
                    h = -1;
            }
            if (w < 1 || w > 65536 || h < 1 || h > 65536) {
                cli_error("--size expects WIDTHxHEIGHT like 224x224 (1 to 65536), got '%s'", v);
                return CLI_EXIT_USAGE;
            }
            o->size_w = (int)w;
            o->size_h = (int)h;
        } else if (!strcmp(name, "--mean")) {
            double m[3];
            int k = 0, bad = 0;
            const char *p = v;
            while (!bad) {
                char *end;
                errno = 0;
                double mv = strtod(p, &end);
                if (errno || end == p || !isfinite(mv) || k == 3) {
                    bad = 1;
                    break;
                }
                m[k++] = mv;
                p = end;
                if (*p == '\0')
                    break;
                if (*p++ != ',')
                    bad = 1;
            }
            if (!bad && k == 1) /* one value: the same mean for every channel */
                m[1] = m[2] = m[0];
            else if (k != 3)
                bad = 1;
            if (bad) {
                cli_error("--mean expects R,G,B (or one value for all channels), got '%s'", v);
                return CLI_EXIT_USAGE;
            }
            memcpy(o->mean, m, sizeof(m));
        } else if (!strcmp(name, "--scale")) {
            char *end;
            errno = 0;
            double sv = strtod(v, &end);
            if (errno || end == v || *end || !isfinite(sv)) {
                cli_error("--scale expects a number, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
            o->scale = sv;
        } else if (!strcmp(name, "--layout")) {
            if (!strcmp(v, "nchw"))
                o->layout = CLI_LAYOUT_NCHW;
            else if (!strcmp(v, "nhwc"))
                o->layout = CLI_LAYOUT_NHWC;
            else {
                cli_error("--layout expects nchw or nhwc, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
        } else if (!strcmp(name, "--json")) {
            o->json_path = v;
        } else if (!strcmp(name, "--seed")) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-') {
                cli_error("--seed expects a non-negative integer, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
            o->seed = s;
        }
    }
    return 0;
}

/* ---- backends ---- */

static int list_backends(void)
{
    int n = netrun_backend_count();
    if (n <= 0) {
        printf("no backend plugins found (set NETRUN_BACKEND_PATH to the folder holding libnetrun-*.so)\n");
        return CLI_EXIT_OK;
    }
    printf("%-12s %-10s %s\n", "BACKEND", "AVAILABLE", "DEVICES / REASON");
    for (int i = 0; i < n; i++) {
        netrun_backend_info bi;
        if (netrun_backend_get_info(i, &bi) != NETRUN_OK) {
            printf("%-12s %-10s %s\n", "?", "no", netrun_last_error());
            continue;
        }
        printf("%-12s %-10s %s\n", bi.name ? bi.name : "?", bi.available ? "yes" : "no",
               bi.reason ? bi.reason : "");
        if (bi.path)
            printf("%-12s %-10s library: %s\n", "", "", bi.path);
        if (bi.available) {
            for (int d = 0; d < bi.device_count; d++) {
                char desc[512];
                if (netrun_backend_device_describe(i, d, desc, sizeof(desc)) == NETRUN_OK)
                    printf("%-12s %-10s device %d: %s\n", "", "", d, desc);
            }
        }
    }
    return CLI_EXIT_OK;
}

/* Find a backend plugin by name; fills info. Returns its index or -1. Only that plugin is loaded and probed. */
static int find_backend(const char *name, size_t len, netrun_backend_info *info)
{
    char buf[128];
    if (len >= sizeof(buf))
        return -1;
    memcpy(buf, name, len);
    buf[len] = '\0';
    return netrun_backend_find(buf, info);
}

/* Check the --backend list and work out the primary backend. Returns 0 or an exit code. */
static int resolve_backends(const cli_opts *o, cli_result *r)
{
    if (!o->backends || !o->backends[0]) {
        /* The library's default order is GPU backends first, then cpu: the report names that first one. */
        size_t used = 0;
        const char *primary = NULL;
        int n = netrun_backend_count();
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < n; i++) {
                netrun_backend_info bi;
                if (netrun_backend_get_info(i, &bi) != NETRUN_OK || !bi.available || !bi.name)
                    continue;
                if ((bi.is_gpu != 0) != (pass == 0))
                    continue;
                if (!primary)
                    primary = bi.name;
                int w = snprintf(r->requested + used, sizeof(r->requested) - used, "%s%s", used ? "," : "",
                                 bi.name);
                if (w > 0 && (size_t)w < sizeof(r->requested) - used)
                    used += (size_t)w;
            }
        }
        snprintf(r->primary_backend, sizeof(r->primary_backend), "%s", primary ? primary : "cpu");
        return 0;
    }
    snprintf(r->requested, sizeof(r->requested), "%s", o->backends);
    const char *p = o->backends;
    int first = 1;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        /* Tolerate spaces around names. */
        while (len && isspace((unsigned char)*p)) {
            p++;
            len--;
        }
        while (len && isspace((unsigned char)p[len - 1]))
            len--;
        if (len == 0) {
            cli_error("--backend '%s': empty backend name in the list", o->backends);
            return CLI_EXIT_USAGE;
        }
        netrun_backend_info bi;
        int idx = find_backend(p, len, &bi);
        if (first)
            snprintf(r->primary_backend, sizeof(r->primary_backend), "%.*s", (int)len, p);
        if (idx < 0) {
            char found[512] = "";
            size_t used = 0;
            for (int i = 0; i < netrun_backend_count(); i++) {
                netrun_backend_info b2;
                if (netrun_backend_get_info(i, &b2) == NETRUN_OK && b2.name) {
                    int w = snprintf(found + used, sizeof(found) - used, "%s%s", used ? ", " : "", b2.name);
                    if (w > 0 && (size_t)w < sizeof(found) - used)
                        used += (size_t)w;
                }
            }
            /* A typo must not silently change where the model runs. */
            cli_error("--backend: unknown backend '%.*s' (backends found: %s; see netrun --backends)", (int)len, p,
                      used ? found : "none");
            return CLI_EXIT_USAGE;
        }
        /* A listed backend that is unavailable: the library decides (an error unless the list names another
         * available backend or --allow-fallback is given) and says why. */
        first = 0;
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
}

/* ---- outputs ---- */

/* File-name-safe version of a tensor name; empty names become output_K. */
static void safe_name(char *buf, size_t size, const char *name, int index)
{
    if (!name || !name[0] || !strcmp(name, ".") || !strcmp(name, "..")) {
        snprintf(buf, size, "output_%d", index);
        return;
    }
    snprintf(buf, size, "%s", name);
    for (char *c = buf; *c; c++)
        if (*c == '/' || *c == '\\')
            *c = '_';
}

/* mkdir -p */
static int make_dirs(const char *path)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *c = tmp + 1; *c; c++) {
        if (*c == '/') {
            *c = '\0';
            if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
                return -1;
            *c = '/';
        }
    }
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

static int write_outputs(const cli_opts *o, cli_result *r)
{
    if (make_dirs(o->output_dir) != 0) {
        cli_error("cannot create output folder %s: %s", o->output_dir, strerror(errno));
        return CLI_EXIT_RUNTIME;
    }
    r->output_files = calloc((size_t)r->n_outputs + 1, sizeof(*r->output_files));
    if (!r->output_files) {
        cli_error("out of memory");
        return CLI_EXIT_RUNTIME;
    }
    for (int i = 0; i < r->n_outputs; i++) {
        char nm[512];
        safe_name(nm, sizeof(nm), r->outputs[i].name, i);
        char *path = r->output_files[i];
        if (snprintf(path, sizeof(r->output_files[i]), "%s/%s.npy", o->output_dir, nm) >=
            (int)sizeof(r->output_files[i])) {
            cli_error("output path too long for '%s'", nm);
            return CLI_EXIT_RUNTIME;
        }
        if (netrun_tensor_write_npy(path, &r->outputs[i]) != NETRUN_OK) {
            cli_error("cannot write output '%s' to %s: %s", r->outputs[i].name, path, netrun_last_error());
            return CLI_EXIT_RUNTIME;
        }
    }
    return CLI_EXIT_OK;
}

static int is_float_dtype(netrun_dtype t)
{
    return t == NETRUN_DTYPE_FLOAT || t == NETRUN_DTYPE_DOUBLE || t == NETRUN_DTYPE_FLOAT16 ||
           t == NETRUN_DTYPE_BFLOAT16;
}

void cli_compare_views(double rtol, double atol, const netrun_tensor_view *got, const netrun_tensor_view *want,
                       cli_check *c)
{
    char a[128], b[128];
    if (got->dtype != want->dtype) {
        snprintf(c->problem, sizeof(c->problem), "dtype %s, reference %s", netrun_dtype_name(got->dtype),
                 netrun_dtype_name(want->dtype));
        c->mismatch = 1;
        return;
    }
    if (got->rank != want->rank || memcmp(got->dims, want->dims, (size_t)got->rank * sizeof(int64_t)) != 0) {
        cli_format_dims(a, sizeof(a), got->rank, got->dims);
        cli_format_dims(b, sizeof(b), want->rank, want->dims);
        snprintf(c->problem, sizeof(c->problem), "shape %s, reference %s", a, b);
        c->mismatch = 1;
        return;
    }
    size_t n;
    if (cli_numel(got->rank, got->dims, &n) != 0 || !cli_dtype_readable(got->dtype)) {
        snprintf(c->problem, sizeof(c->problem), "cannot compare %s tensors", netrun_dtype_name(got->dtype));
        c->mismatch = 1;
        return;
    }
    size_t es = netrun_dtype_size(got->dtype);
    if (n > got->nbytes / es || n > want->nbytes / es) {
        snprintf(c->problem, sizeof(c->problem), "data shorter than its shape");
        c->mismatch = 1;
        return;
    }
    int exact = !is_float_dtype(got->dtype); /* integers and bool must match exactly */
    c->n_total = n;
    for (size_t i = 0; i < n; i++) {
        double g = cli_element(got->dtype, got->data, i);
        double w = cli_element(want->dtype, want->data, i);
        int bad;
        double diff, rel;
        if (isnan(g) || isnan(w)) {
            bad = !(isnan(g) && isnan(w));
            diff = bad ? INFINITY : 0;
            rel = diff;
        } else if (isinf(g) || isinf(w)) {
            bad = g != w;
            diff = bad ? INFINITY : 0;
            rel = diff;
        } else {
            diff = fabs(g - w);
            rel = w != 0 ? diff / fabs(w) : (diff > 0 ? INFINITY : 0);
            bad = exact ? diff != 0 : diff > atol + rtol * fabs(w);
        }
        if (diff > c->max_abs)
            c->max_abs = diff;
        if (rel > c->max_rel)
            c->max_rel = rel;
        if (bad)
            c->n_bad++;
    }
    if (c->n_bad)
        c->mismatch = 1;
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Returns 0, or the exit code the checks call for (2 missing reference, 3 mismatch). */
static int check_outputs(const cli_opts *o, cli_result *r)
{
    r->checks = calloc((size_t)r->n_outputs + 1, sizeof(*r->checks));
    if (!r->checks) {
        cli_error("out of memory");
        return CLI_EXIT_RUNTIME;
    }
    int missing = 0, bad = 0;
    for (int i = 0; i < r->n_outputs; i++) {
        cli_check *c = &r->checks[i];
        char nm[512];
        safe_name(nm, sizeof(nm), r->outputs[i].name, i);
        char cands[3][1024];
        snprintf(cands[0], sizeof(cands[0]), "%s/%s.npy", o->check_dir, nm);
        snprintf(cands[1], sizeof(cands[1]), "%s/output_%d.pb", o->check_dir, i);
        snprintf(cands[2], sizeof(cands[2]), "%s/%s.pb", o->check_dir, nm);
        int found = -1;
        for (int k = 0; k < 3 && found < 0; k++)
            if (file_exists(cands[k]))
                found = k;
        if (found < 0) {
            c->missing = 1;
            missing++;
            cli_error("--check: no reference for output '%s' (looked for %s and %s)", r->outputs[i].name,
                      cands[0], cands[1]);
            continue;
        }
        snprintf(c->reference, sizeof(c->reference), "%s", cands[found]);
        netrun_tensor_view *ref = NULL;
        if (netrun_tensor_read_file(c->reference, &ref) != NETRUN_OK) {
            cli_error("--check: cannot read %s: %s", c->reference, netrun_last_error());
            c->missing = 1;
            missing++;
            continue;
        }
        cli_compare_views(o->rtol, o->atol, &r->outputs[i], ref, c);
        netrun_tensor_free(ref);
        if (c->mismatch) {
            bad++;
            if (c->problem[0])
                cli_error("--check: output '%s' differs from %s: %s", r->outputs[i].name, c->reference,
                          c->problem);
            else
                cli_error("--check: output '%s' differs from %s: %zu of %zu values outside rtol %g atol %g "
                          "(max abs err %.3g, max rel err %.3g)",
                          r->outputs[i].name, c->reference, c->n_bad, c->n_total, o->rtol, o->atol, c->max_abs,
                          c->max_rel);
        }
    }
    if (missing)
        return CLI_EXIT_USAGE;
    if (bad)
        return CLI_EXIT_MISMATCH;
    return CLI_EXIT_OK;
}

/* ---- timing ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const double *v, size_t n, double p)
{
    size_t rank = (size_t)ceil(p * (double)n);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return v[rank - 1];
}

static void compute_latency(double *ms, size_t n, cli_latency *l)
{
    memset(l, 0, sizeof(*l));
    if (n == 0)
        return;
    qsort(ms, n, sizeof(double), cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += ms[i];
    l->valid = 1;
    l->min = ms[0];
    l->median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
    l->p90 = percentile(ms, n, 0.90);
    l->p99 = percentile(ms, n, 0.99);
    l->mean = sum / (double)n;
    l->throughput_per_s = l->mean > 0 ? 1000.0 / l->mean : 0;
}

static int status_exit(netrun_status st)
{
    return (st == NETRUN_ERR_INVALID_ARGUMENT || st == NETRUN_ERR_INVALID_MODEL) ? CLI_EXIT_USAGE
                                                                                : CLI_EXIT_RUNTIME;
}

/* ---- main flow ---- */

static int apply_options(const cli_opts *o, const extra_opts *x, netrun_options *no)
{
    netrun_status st = NETRUN_OK;
    const char *what = "";
#define TRY(call, label) do { if (st == NETRUN_OK) { st = (call); what = label; } } while (0)
    TRY(netrun_options_set_strict(no, o->strict), "--strict");
    TRY(netrun_options_set_allow_fallback(no, o->allow_fallback), "--allow-fallback");
    if (o->backends)
        TRY(netrun_options_set_backends(no, o->backends), "--backend");
    if (o->precision_set)
        TRY(netrun_options_set_precision(no, o->precision), "--precision");
    if (o->threads >= 0)
        TRY(netrun_options_set_threads(no, o->threads), "--threads");
    if (o->device >= 0)
        TRY(netrun_options_set_device(no, o->device), "--device");
    if (o->workspace_set)
        TRY(netrun_options_set_workspace(no, o->workspace_policy, o->workspace_limit), "--workspace-*");
    if (x->device_memory)
        TRY(netrun_options_set_device_memory_budget(no, x->device_memory), "--device-memory");
    if (o->device_preprocess) { /* the --image flags as preprocess.* options (docs/usage.md) */
        if (o->n_images != 1) {
            cli_error("--device-preprocess: give exactly one --image (it converts one input)");
            return CLI_EXIT_USAGE;
        }
        char mean[96], scale[40], size[40];
        snprintf(mean, sizeof mean, "%.9g,%.9g,%.9g", o->mean[0], o->mean[1], o->mean[2]);
        snprintf(scale, sizeof scale, "%.9g", o->scale);
        snprintf(size, sizeof size, "%dx%d", o->size_w, o->size_h);
        TRY(netrun_options_set(no, "preprocess.input", o->images[0].name), "--device-preprocess");
        TRY(netrun_options_set(no, "preprocess.format", "rgb"), "--device-preprocess");
        TRY(netrun_options_set(no, "preprocess.order", o->swap_rb ? "bgr" : "rgb"), "--swap-rb");
        TRY(netrun_options_set(no, "preprocess.resize", o->crop ? "crop" : "stretch"), "--crop");
        TRY(netrun_options_set(no, "preprocess.mean", mean), "--mean");
        TRY(netrun_options_set(no, "preprocess.scale", scale), "--scale");
        if (o->size_w)
            TRY(netrun_options_set(no, "preprocess.size", size), "--size");
        if (o->layout == CLI_LAYOUT_NHWC) {
            cli_error("--device-preprocess: the preprocessing writes NCHW inputs (--layout nhwc is not taken)");
            return CLI_EXIT_USAGE;
        }
    }
    for (int i = 0; i < x->n_settings && st == NETRUN_OK; i++)
        TRY(netrun_options_set(no, x->settings[i].name, x->settings[i].value), "--set");
#undef TRY
    if (st != NETRUN_OK) {
        cli_error("%s: %s", what, netrun_last_error());
        return CLI_EXIT_USAGE;
    }
    return 0;
}

int cli_load_model(const cli_opts *o, netrun_model **out, double *load_ms)
{
    netrun_load_limits lim;
    memset(&lim, 0, sizeof(lim));
    lim.max_tensor_bytes = o->max_tensor_bytes;
    lim.max_graph_depth = (int)o->max_graph_depth;
    double t0 = cli_now_ms();
    netrun_status st = netrun_model_load_ex(o->model_path, &lim, out);
    if (load_ms)
        *load_ms = cli_now_ms() - t0;
    if (st != NETRUN_OK) {
        const char *msg = netrun_last_error();
        cli_error("cannot load model %s: %s", o->model_path, msg && msg[0] ? msg : netrun_status_string(st));
        *out = NULL;
        return st == NETRUN_ERR_OUT_OF_MEMORY ? CLI_EXIT_RUNTIME : CLI_EXIT_USAGE;
    }
    return 0;
}

/* Record copy events for --dot when the timed runs were not profiled: one extra profiled run. */
static int ensure_profile_events(cli_result *r)
{
    if (r->profile)
        return 0;
    if (netrun_session_set_profiling(r->session, 1) != NETRUN_OK || netrun_session_run(r->session) != NETRUN_OK) {
        cli_error("profiled run for --dot failed: %s", netrun_session_error(r->session));
        return CLI_EXIT_RUNTIME;
    }
    return 0;
}

/* Timed runs: --iterations N, or as many as fit in --duration. Fills *times (malloc'ed) and *n. */
static int timed_runs(const cli_opts *o, cli_result *r, double **times_out, long *n_out)
{
    long cap = o->duration_s > 0 ? 1024 : o->iterations + 1, n = 0;
    double *times = malloc((size_t)cap * sizeof(double));
    if (!times) {
        cli_error("out of memory for %ld timings", cap);
        return CLI_EXIT_RUNTIME;
    }
    cli_progress pg;
    double budget_ms = o->duration_s > 0 ? o->duration_s * 1000.0 : 0;
    cli_progress_begin(&pg, o, "timed", o->duration_s > 0 ? 0 : o->iterations, budget_ms);
    double start = cli_now_ms();
    for (;;) {
        if (o->duration_s > 0 ? (n > 0 && cli_now_ms() - start >= budget_ms) : n >= o->iterations)
            break;
        if (n == cap) {
            if (cap > LONG_MAX / 2 || (size_t)cap * 2 > SIZE_MAX / sizeof(double)) {
                cli_error("too many timed runs");
                break;
            }
            double *nt = realloc(times, (size_t)cap * 2 * sizeof(double));
            if (!nt) {
                cli_error("out of memory for %ld timings", cap * 2);
                free(times);
                cli_progress_end(&pg);
                return CLI_EXIT_RUNTIME;
            }
            times = nt;
            cap *= 2;
        }
        double t0 = cli_now_ms();
        netrun_status st = netrun_session_run(r->session);
        times[n] = cli_now_ms() - t0;
        if (st != NETRUN_OK) {
            cli_progress_end(&pg);
            cli_error("run %ld failed: %s", n + 1, netrun_session_error(r->session));
            free(times);
            return CLI_EXIT_RUNTIME;
        }
        n++;
        cli_progress_step(&pg, n);
    }
    cli_progress_end(&pg);
    *times_out = times;
    *n_out = n;
    return 0;
}

/* --outputs-on-device: every output stays in the session's device memory (device 1), or goes to the host again
 * (0). The device is the one whose backend a device memory type names: CUDA, else OpenCL. */
static int bind_outputs(const netrun_model *m, netrun_session *s, int device, int index)
{
    for (int i = 0; i < netrun_model_output_count(m); i++) {
        netrun_tensor_info info;
        if (netrun_model_output_info(m, i, &info) != NETRUN_OK) {
            cli_error("cannot describe output %d: %s", i, netrun_model_error(m));
            return CLI_EXIT_RUNTIME;
        }
        netrun_status st = NETRUN_ERR_UNSUPPORTED;
        if (!device) {
            st = netrun_session_bind_output_device(s, info.name, NETRUN_MEMORY_HOST, 0, NULL, 0);
            if (st != NETRUN_OK) {
                cli_error("--outputs-on-device: %s", netrun_session_error(s));
                return status_exit(st);
            }
            continue;
        }
        /* CUDA first, then OpenCL; when both refuse, say why each did (the last refusal alone would blame
         * OpenCL in a CUDA session) */
        static const netrun_memory_type types[] = {NETRUN_MEMORY_CUDA, NETRUN_MEMORY_OPENCL};
        static const char *const names[] = {"CUDA", "OpenCL"};
        char why[2][512];
        netrun_status first = NETRUN_OK;
        for (size_t k = 0; k < 2 && st != NETRUN_OK; k++) {
            st = netrun_session_bind_output_device(s, info.name, types[k], index, NULL, 0);
            if (st != NETRUN_OK) {
                snprintf(why[k], sizeof why[k], "%s", netrun_session_error(s));
                if (k == 0) first = st;
            }
        }
        if (st != NETRUN_OK) {
            cli_error("--outputs-on-device: %s: %s; %s: %s", names[0], why[0], names[1], why[1]);
            return status_exit(first);
        }
    }
    return 0;
}

static int run_model(const cli_opts *o, const extra_opts *x)
{
    cli_result r;
    memset(&r, 0, sizeof(r));
    r.opts = o;
    netrun_options *no = NULL;
    double *times = NULL;
    cli_profile_runs prof = {NULL, 0};
    int profiling = o->profile || o->profile_json;
    int rc = resolve_backends(o, &r);
    if (rc)
        return rc;
    struct stat sb;
    if (o->check_dir && (stat(o->check_dir, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
        /* Say so before spending time on the runs. */
        cli_error("--check: %s is not a folder", o->check_dir);
        return CLI_EXIT_USAGE;
    }
    if (profiling && o->iterations == 0 && o->duration_s <= 0) {
        cli_error("--profile and --profile-json profile the timed runs: --iterations must be at least 1");
        return CLI_EXIT_USAGE;
    }

    if ((rc = cli_load_model(o, &r.model, &r.load_ms)) != 0)
        return rc;

    double t0;
    netrun_status st;
    if (netrun_options_create(&no) != NETRUN_OK) {
        cli_error("cannot create options: %s", netrun_last_error());
        rc = CLI_EXIT_RUNTIME;
        goto done;
    }
    if ((rc = apply_options(o, x, no)) != 0)
        goto done;
    st = netrun_session_create(r.model, no, &r.session);
    if (st != NETRUN_OK) {
        r.session = NULL;
        cli_error("cannot create a session: %s", netrun_last_error());
        rc = status_exit(st);
        goto done;
    }
    cli_crash_report_watch(r.session);
    if ((rc = cli_feed_inputs(o, r.model, r.session, &r.inputs, &r.n_inputs)) != 0)
        goto done;
    if (o->outputs_on_device && (rc = bind_outputs(r.model, r.session, 1, o->device > 0 ? o->device : 0)) != 0)
        goto done;

    t0 = cli_now_ms();
    st = netrun_session_prepare(r.session);
    r.prepare_ms = cli_now_ms() - t0;
    if (st != NETRUN_OK) {
        cli_error("prepare failed: %s", netrun_session_error(r.session));
        rc = status_exit(st);
        goto done;
    }
    if (o->explain) { /* placement only: no runs */
        if (!o->quiet)
            cli_explain(stdout, o, r.session);
        rc = CLI_EXIT_OK;
        goto done;
    }

    t0 = cli_now_ms();
    st = netrun_session_run(r.session);
    r.first_run_ms = cli_now_ms() - t0;
    if (st != NETRUN_OK) {
        cli_error("run failed: %s", netrun_session_error(r.session));
        rc = CLI_EXIT_RUNTIME;
        goto done;
    }
    cli_progress pg;
    cli_progress_begin(&pg, o, "warmup", o->warmup, 0);
    for (long i = 0; i < o->warmup; i++) {
        if ((st = netrun_session_run(r.session)) != NETRUN_OK) {
            cli_progress_end(&pg);
            cli_error("warmup run %ld failed: %s", i + 1, netrun_session_error(r.session));
            rc = CLI_EXIT_RUNTIME;
            goto done;
        }
        cli_progress_step(&pg, i + 1);
    }
    cli_progress_end(&pg);
    /* Profiling covers exactly the timed runs, so the per-node sums can be set against their wall times. */
    if (profiling && netrun_session_set_profiling(r.session, 1) != NETRUN_OK) {
        cli_error("cannot switch profiling on: %s", netrun_session_error(r.session));
        rc = CLI_EXIT_RUNTIME;
        goto done;
    }
    if ((rc = timed_runs(o, &r, &times, &r.timed_runs)) != 0)
        goto done;
    if (profiling) {
        /* Profiling stays on: switching it off clears the events (runtime/session.c), and no run follows. */
        prof.wall_ms = malloc(((size_t)r.timed_runs + 1) * sizeof(double));
        if (!prof.wall_ms) {
            cli_error("out of memory");
            rc = CLI_EXIT_RUNTIME;
            goto done;
        }
        memcpy(prof.wall_ms, times, (size_t)r.timed_runs * sizeof(double));
        prof.n = r.timed_runs;
        r.profile = &prof;
    }
    compute_latency(times, (size_t)r.timed_runs, &r.latency);

    r.have_stats = netrun_session_get_stats_ex(r.session, &r.stats, sizeof r.stats) == NETRUN_OK;
    snprintf(r.prepare_note, sizeof r.prepare_note, "%s", netrun_session_prepare_note(r.session));
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        r.peak_rss_bytes = (size_t)ru.ru_maxrss * 1024; /* Linux reports KiB */

    if (o->outputs_on_device) { /* back to host memory for the report: one more run, not timed */
        if ((rc = bind_outputs(r.model, r.session, 0, 0)) != 0)
            goto done;
        if ((st = netrun_session_run(r.session)) != NETRUN_OK) {
            cli_error("run reading the outputs failed: %s", netrun_session_error(r.session));
            rc = CLI_EXIT_RUNTIME;
            goto done;
        }
    }
    r.n_outputs = netrun_session_output_count(r.session);
    if (r.n_outputs < 0)
        r.n_outputs = 0;
    r.outputs = calloc((size_t)r.n_outputs + 1, sizeof(*r.outputs));
    if (!r.outputs) {
        cli_error("out of memory");
        rc = CLI_EXIT_RUNTIME;
        goto done;
    }
    for (int i = 0; i < r.n_outputs; i++) {
        if (netrun_session_output(r.session, i, &r.outputs[i]) != NETRUN_OK) {
            cli_error("cannot read output %d: %s", i, netrun_session_error(r.session));
            rc = CLI_EXIT_RUNTIME;
            goto done;
        }
    }
    if (o->output_dir && (rc = write_outputs(o, &r)) != 0)
        goto done;
    int check_rc = o->check_dir ? check_outputs(o, &r) : 0;
    if (check_rc == CLI_EXIT_RUNTIME) {
        rc = check_rc;
        goto done;
    }

    int json_to_stdout = o->json_path && strcmp(o->json_path, "-") == 0;
    if (!o->quiet && !json_to_stdout) {
        cli_report_text(stdout, &r);
        if (o->profile && (rc = cli_profile_print(stdout, o, r.session, &prof)) != 0)
            goto done;
    }
    if (o->json_path && cli_report_json(o->json_path, &r) != 0) {
        rc = CLI_EXIT_RUNTIME;
        goto done;
    }
    if (o->profile_json && (rc = cli_profile_trace(o->profile_json, o, r.session, &prof)) != 0)
        goto done;
    if (o->dot_path) {
        /* Outputs are read; an extra profiled run only finds the copies. */
        if ((rc = ensure_profile_events(&r)) != 0 || (rc = cli_write_dot(o->dot_path, o, r.session)) != 0)
            goto done;
    }
    rc = check_rc;

done:
    free(times);
    free(prof.wall_ms);
    free(r.outputs);
    free(r.checks);
    free(r.output_files);
    free(r.inputs);
    cli_crash_report_watch(NULL);
    netrun_session_destroy(r.session);
    netrun_options_destroy(no);
    netrun_model_release(r.model);
    return rc;
}

/* --compare A,B: both lists get the common options; '+' separates backends inside one list. */
static int compare_mode(const cli_opts *o, const extra_opts *x)
{
    netrun_options *oa = NULL, *ob = NULL;
    int rc = CLI_EXIT_RUNTIME;
    if (netrun_options_create(&oa) != NETRUN_OK || netrun_options_create(&ob) != NETRUN_OK) {
        cli_error("cannot create options: %s", netrun_last_error());
        goto done;
    }
    cli_opts common = *o;
    common.backends = NULL;
    if ((rc = apply_options(&common, x, oa)) != 0 || (rc = apply_options(&common, x, ob)) != 0)
        goto done;
    rc = cli_compare(o, oa, ob);
done:
    netrun_options_destroy(oa);
    netrun_options_destroy(ob);
    return rc;
}

int main(int argc, char **argv)
{
    cli_opts o;
    extra_opts x;
    memset(&o, 0, sizeof(o));
    memset(&x, 0, sizeof(x));
    o.threads = -1;
    o.device = -1;
    o.rtol = 1e-3;
    o.atol = 1e-5;
    o.warmup = 3;
    o.iterations = 20;

    o.duration_s = -1;
    o.batch = -1;
    o.scale = 1.0;

    cli_crash_report_install();
    netrun_set_log_callback(cli_log, NULL, (netrun_log_level)-1);
    int rc = parse_args(argc, argv, &o, &x);
    g_quiet = o.quiet;
    /* Colour and progress only for a person at a terminal (https://no-color.org). */
    const char *nc = getenv("NO_COLOR");
    int colour_ok = !(nc && nc[0]);
    o.color_out = colour_ok && isatty(STDOUT_FILENO);
    o.color_err = colour_ok && isatty(STDERR_FILENO);
    g_color_err = o.color_err;
    o.progress = !o.quiet && isatty(STDERR_FILENO);
    if (!rc && o.duration_s > 0 && o.iterations_set) {
        cli_error("give --iterations or --duration, not both");
        rc = CLI_EXIT_USAGE;
    }
    if (!rc && o.format && !o.support_matrix) {
        cli_error("--format applies to --support-matrix");
        rc = CLI_EXIT_USAGE;
    }
    if (rc) {
        /* fall through to cleanup */
    } else if (x.show_help) {
        print_help(stdout);
    } else if (x.show_version) {
        printf("netrun %d.%d.%d (library %s)\n", NETRUN_VERSION_MAJOR, NETRUN_VERSION_MINOR, NETRUN_VERSION_PATCH,
               netrun_version());
    } else if (x.list_backends) {
        rc = list_backends();
    } else if (o.support_matrix) {
        rc = cli_support_matrix(stdout, o.format ? o.format : "text");
    } else if (!o.model_path) {
        cli_error("no model given (usage: netrun MODEL.onnx [options]; see netrun --help)");
        rc = CLI_EXIT_USAGE;
    } else if (o.compare) {
        if (o.backends) {
            cli_error("--compare A,B chooses the backends itself: drop --backend");
            rc = CLI_EXIT_USAGE;
        } else {
            rc = compare_mode(&o, &x);
        }
    } else {
        rc = run_model(&o, &x);
    }
    free_kvs(o.inputs, o.n_inputs);
    free_kvs(o.shapes, o.n_shapes);
    free_kvs(o.dims, o.n_dims);
    free_kvs(o.images, o.n_images);
    free_kvs(x.settings, x.n_settings);
    fflush(stdout);
    return rc;
}
