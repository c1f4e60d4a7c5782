/* Inputs of a run: --shape/--dim parsing, --input files, seeded random data for the rest. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---- parsing ---- */

int cli_parse_shape(const char *text, int *rank, int64_t *dims, char *err, size_t err_size)
{
    int r = 0;
    const char *p = text;
    if (*p == '\0' || strcmp(p, "scalar") == 0) { /* rank-0 tensor */
        *rank = 0;
        return 0;
    }
    for (;;) {
        if (!isdigit((unsigned char)*p)) {
            snprintf(err, err_size, "bad shape '%s': expected dims like 1x3x224x224", text);
            return -1;
        }
        errno = 0;
        char *end;
        long long v = strtoll(p, &end, 10);
        if (errno == ERANGE || v > INT64_MAX / 2) {
            snprintf(err, err_size, "bad shape '%s': dimension too large", text);
            return -1;
        }
        if (r >= NETRUN_MAX_RANK) {
            snprintf(err, err_size, "bad shape '%s': more than %d dimensions", text, NETRUN_MAX_RANK);
            return -1;
        }
        dims[r++] = (int64_t)v;
        p = end;
        if (*p == '\0')
            break;
        if (*p != 'x' && *p != 'X' && *p != ',') {
            snprintf(err, err_size, "bad shape '%s': unexpected '%c'", text, *p);
            return -1;
        }
        p++;
    }
    *rank = r;
    return 0;
}

int cli_parse_bytes(const char *text, size_t *out)
{
    if (!isdigit((unsigned char)text[0]))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno == ERANGE)
        return -1;
    unsigned long long mul = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': mul = 1ull << 10; end++; break;
    case 'M': mul = 1ull << 20; end++; break;
    case 'G': mul = 1ull << 30; end++; break;
    case 'T': mul = 1ull << 40; end++; break;
    default: break;
    }
    /* Allow "256M", "256MB", "256MiB", "1024B". */
    if (mul != 1 && (end[0] == 'i' || end[0] == 'I') && (end[1] == 'B' || end[1] == 'b'))
        end += 2;
    else if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0')
        return -1;
    if (v > SIZE_MAX / mul)
        return -1;
    *out = (size_t)(v * mul);
    return 0;
}

int cli_numel(int rank, const int64_t *dims, size_t *out)
{
    size_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return -1;
        if (dims[i] != 0 && n > SIZE_MAX / (uint64_t)dims[i])
            return -1;
        n *= (size_t)dims[i];
    }
    *out = n;
    return 0;
}

/* ---- element conversion ---- */

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1F;
    uint32_t man = h & 0x3FF;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: value = man * 2^-24 */
            float f = (float)man * 5.9604644775390625e-8f;
            return sign ? -f : f;
        }
    } else if (exp == 31) {
        bits = sign | 0x7F800000u | (man << 13);
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

static uint16_t float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t exp = (x >> 23) & 0xFF;
    uint32_t man = x & 0x7FFFFF;
    if (exp == 0xFF)
        return (uint16_t)(sign | 0x7C00 | (man ? 0x200 : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7C00);
    if (e <= 0) {
        if (e < -10)
            return sign;
        man |= 0x800000;
        int shift = 14 - e;
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1FFF;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
        half++; /* may carry into the exponent, which is the correct rounding */
    return (uint16_t)(sign | half);
}

static float bf16_to_float(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

static uint16_t float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    if ((x & 0x7FFFFFFF) > 0x7F800000)
        return (uint16_t)((x >> 16) | 0x40); /* keep NaN a NaN */
    x += 0x7FFF + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

int cli_dtype_readable(netrun_dtype t)
{
    switch (t) {
    case NETRUN_DTYPE_FLOAT: case NETRUN_DTYPE_DOUBLE: case NETRUN_DTYPE_FLOAT16: case NETRUN_DTYPE_BFLOAT16:
    case NETRUN_DTYPE_INT8: case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_INT16: case NETRUN_DTYPE_UINT16:
    case NETRUN_DTYPE_INT32: case NETRUN_DTYPE_UINT32: case NETRUN_DTYPE_INT64: case NETRUN_DTYPE_UINT64:
    case NETRUN_DTYPE_BOOL:
        return 1;
    default:
        return 0;
    }
}

/* memcpy reads: output buffers need not be aligned for every type. */
#define READ_AS(type) do { type v; memcpy(&v, (const char *)data + i * sizeof(type), sizeof(v)); \
                           return (double)v; } while (0)

double cli_element(netrun_dtype t, const void *data, size_t i)
{
    switch (t) {
    case NETRUN_DTYPE_FLOAT: READ_AS(float);
    case NETRUN_DTYPE_DOUBLE: READ_AS(double);
    case NETRUN_DTYPE_INT8: READ_AS(int8_t);
    case NETRUN_DTYPE_UINT8: READ_AS(uint8_t);
    case NETRUN_DTYPE_INT16: READ_AS(int16_t);
    case NETRUN_DTYPE_UINT16: READ_AS(uint16_t);
    case NETRUN_DTYPE_INT32: READ_AS(int32_t);
    case NETRUN_DTYPE_UINT32: READ_AS(uint32_t);
    case NETRUN_DTYPE_INT64: READ_AS(int64_t);
    case NETRUN_DTYPE_UINT64: READ_AS(uint64_t);
    case NETRUN_DTYPE_BOOL: return ((const uint8_t *)data)[i] ? 1.0 : 0.0;
    case NETRUN_DTYPE_FLOAT16: {
        uint16_t h;
        memcpy(&h, (const char *)data + i * 2, 2);
        return half_to_float(h);
    }
    case NETRUN_DTYPE_BFLOAT16: {
        uint16_t h;
        memcpy(&h, (const char *)data + i * 2, 2);
        return bf16_to_float(h);
    }
    default:
        return NAN;
    }
}

/* ---- random data ---- */

/* splitmix64: tiny, seedable, good enough for test inputs. */
static uint64_t rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static double rng_sym(uint64_t *state)
{
    return (double)(rng_next(state) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
}

/* Fill n elements of dtype t. Floats: uniform [-1, 1); integers: [0, 10); bool: 0 or 1. */
static int fill_random(netrun_dtype t, void *data, size_t n, uint64_t *st)
{
    for (size_t i = 0; i < n; i++) {
        unsigned iv = (unsigned)(rng_next(st) % 10);
        switch (t) {
        case NETRUN_DTYPE_FLOAT: ((float *)data)[i] = (float)rng_sym(st); break;
        case NETRUN_DTYPE_DOUBLE: ((double *)data)[i] = rng_sym(st); break;
        case NETRUN_DTYPE_FLOAT16: ((uint16_t *)data)[i] = float_to_half((float)rng_sym(st)); break;
        case NETRUN_DTYPE_BFLOAT16: ((uint16_t *)data)[i] = float_to_bf16((float)rng_sym(st)); break;
        case NETRUN_DTYPE_INT8: ((int8_t *)data)[i] = (int8_t)iv; break;
        case NETRUN_DTYPE_UINT8: ((uint8_t *)data)[i] = (uint8_t)iv; break;
        case NETRUN_DTYPE_INT16: ((int16_t *)data)[i] = (int16_t)iv; break;
        case NETRUN_DTYPE_UINT16: ((uint16_t *)data)[i] = (uint16_t)iv; break;
        case NETRUN_DTYPE_INT32: ((int32_t *)data)[i] = (int32_t)iv; break;
        case NETRUN_DTYPE_UINT32: ((uint32_t *)data)[i] = (uint32_t)iv; break;
        case NETRUN_DTYPE_INT64: ((int64_t *)data)[i] = (int64_t)iv; break;
        case NETRUN_DTYPE_UINT64: ((uint64_t *)data)[i] = (uint64_t)iv; break;
        case NETRUN_DTYPE_BOOL: ((uint8_t *)data)[i] = (uint8_t)(iv & 1); break;
        default: return -1;
        }
    }
    return 0;
}

/* ---- feeding the session ---- */

/* A symbolic dimension's value and where it came from (for conflict messages). */
typedef struct dim_binding {
    const char *name;
    int64_t value;
    char origin[96];
} dim_binding;

typedef struct feed_state {
    const cli_opts *o;
    dim_binding *dims;
    int n_dims, cap_dims;
} feed_state;

static dim_binding *find_dim(feed_state *fs, const char *name)
{
    for (int i = 0; i < fs->n_dims; i++)
        if (strcmp(fs->dims[i].name, name) == 0)
            return &fs->dims[i];
    return NULL;
}

/* Bind a symbolic dim; fails when an earlier source gave it another value. */
static int bind_dim(feed_state *fs, const char *name, int64_t value, const char *origin)
{
    dim_binding *b = find_dim(fs, name);
    if (b) {
        if (b->value != value) {
            cli_error("dimension '%s' is %" PRId64 " from %s but %" PRId64 " from %s", name, b->value,
                      b->origin, value, origin);
            return -1;
        }
        return 0;
    }
    if (fs->n_dims == fs->cap_dims) {
        int cap = fs->cap_dims ? fs->cap_dims * 2 : 8;
        dim_binding *nd = realloc(fs->dims, (size_t)cap * sizeof(*nd));
        if (!nd) {
            cli_error("out of memory");
            return -1;
        }
        fs->dims = nd;
        fs->cap_dims = cap;
    }
    b = &fs->dims[fs->n_dims++];
    b->name = name;
    b->value = value;
    snprintf(b->origin, sizeof(b->origin), "%s", origin);
    return 0;
}

/* An input as the session takes it (with preprocess.*, uint8 frames where the model declares floats), else as the
 * model declares it. */
static netrun_status in_info(netrun_model *m, netrun_session *s, int i, netrun_tensor_info *ti)
{
    return s ? netrun_session_input_info(s, i, ti) : netrun_model_input_info(m, i, ti);
}

static int find_input(netrun_model *m, netrun_session *s, const char *name, netrun_tensor_info *info)
{
    int n = netrun_model_input_count(m);
    for (int i = 0; i < n; i++) {
        netrun_tensor_info ti;
        if (in_info(m, s, i, &ti) == NETRUN_OK && ti.name && strcmp(ti.name, name) == 0) {
            if (info)
                *info = ti;
            return i;
        }
    }
    return -1;
}

static void list_inputs(netrun_model *m, netrun_session *s, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    int n = netrun_model_input_count(m);
    for (int i = 0; i < n && used < size; i++) {
        netrun_tensor_info ti;
        if (in_info(m, s, i, &ti) != NETRUN_OK)
            continue;
        int w = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", ti.name ? ti.name : "?");
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (n == 0)
        snprintf(buf, size, "(none)");
}

/* Check a given shape against the declared one and bind its symbolic dims. */
static int match_declared(feed_state *fs, const netrun_tensor_info *ti, int rank, const int64_t *dims,
                          const char *origin)
{
    if (ti->rank >= 0 && ti->rank != rank) {
        cli_error("input '%s' has rank %d in the model but %s gives rank %d", ti->name, ti->rank, origin, rank);
        return -1;
    }
    if (ti->rank < 0)
        return 0;
    for (int d = 0; d < rank; d++) {
        const char *sym = ti->dim_names ? ti->dim_names[d] : NULL;
        if (sym) {
            if (bind_dim(fs, sym, dims[d], origin) != 0)
                return -1;
        } else if (ti->dims && ti->dims[d] >= 0 && ti->dims[d] != dims[d]) {
            cli_error("input '%s' dimension %d is fixed at %" PRId64 " in the model but %s gives %" PRId64,
                      ti->name, d, ti->dims[d], origin, dims[d]);
            return -1;
        }
    }
    return 0;
}

static int status_exit(netrun_status st)
{
    return (st == NETRUN_ERR_INVALID_ARGUMENT || st == NETRUN_ERR_INVALID_MODEL || st == NETRUN_ERR_IO)
               ? CLI_EXIT_USAGE
               : CLI_EXIT_RUNTIME;
}

int cli_feed_inputs(const cli_opts *o, netrun_model *m, netrun_session *s, cli_input **out_inputs, int *out_n)
{
    feed_state fs = {.o = o};
    int rc = CLI_EXIT_USAGE;
    int n = netrun_model_input_count(m);
    cli_input *in = NULL;
    netrun_tensor_view **files = NULL;
    cli_image *images = NULL;
    int *shape_of = NULL; /* index+1 of the --shape given for each input, 0 if none */
    char names[1024];
    *out_inputs = NULL;
    *out_n = 0;
    if (n < 0)
        n = 0;
    in = calloc((size_t)n + 1, sizeof(*in));
    files = calloc((size_t)n + 1, sizeof(*files));
    shape_of = calloc((size_t)n + 1, sizeof(*shape_of));
    images = calloc((size_t)n + 1, sizeof(*images));
    if (!in || !files || !shape_of || !images) {
        cli_error("out of memory");
        rc = CLI_EXIT_RUNTIME;
        goto done;
    }
    for (int i = 0; i < n; i++) {
        netrun_tensor_info ti;
        if (in_info(m, s, i, &ti) != NETRUN_OK) {
            cli_error("cannot describe input %d: %s", i, netrun_model_error(m));
            goto done;
        }
        in[i].name = ti.name;
        in[i].dtype = ti.dtype;
        in[i].rank = ti.rank;
    }

    /* --dim NAME=N first: the most explicit source. */
    for (int k = 0; k < o->n_dims; k++) {
        char *end;
        errno = 0;
        long long v = strtoll(o->dims[k].value, &end, 10);
        if (errno || *end || end == o->dims[k].value || v < 0) {
            cli_error("bad --dim '%s=%s': expected a non-negative integer", o->dims[k].name, o->dims[k].value);
            goto done;
        }
        if (bind_dim(&fs, o->dims[k].name, v, "--dim") != 0)
            goto done;
    }

    /* --batch N: every input whose first dim is symbolic takes N through its symbol. */
    if (o->batch > 0) {
        int bound = 0, fixed_ok = 0;
        for (int i = 0; i < n; i++) {
            netrun_tensor_info ti;
            if (in_info(m, s, i, &ti) != NETRUN_OK || ti.rank < 1)
                continue;
            if (ti.dim_names && ti.dim_names[0]) {
                if (bind_dim(&fs, ti.dim_names[0], o->batch, "--batch") != 0)
                    goto done;
                bound++;
            } else if (ti.dims && ti.dims[0] == o->batch) {
                fixed_ok++;
            }
        }
        if (!bound && !fixed_ok) {
            cli_error("--batch %ld: no input has a symbolic first dimension to set", o->batch);
            goto done;
        }
    }

    /* --shape NAME=AxBxC */
    for (int k = 0; k < o->n_shapes; k++) {
        netrun_tensor_info ti;
        int idx = find_input(m, s, o->shapes[k].name, &ti);
        if (idx < 0) {
            list_inputs(m, s, names, sizeof(names));
            cli_error("--shape: the model has no input '%s' (inputs: %s)", o->shapes[k].name, names);
            goto done;
        }
        if (shape_of[idx]) {
            cli_error("--shape given twice for input '%s'", o->shapes[k].name);
            goto done;
        }
        char err[256];
        int rank;
        int64_t dims[NETRUN_MAX_RANK];
        if (cli_parse_shape(o->shapes[k].value, &rank, dims, err, sizeof(err)) != 0) {
            cli_error("--shape %s: %s", o->shapes[k].name, err);
            goto done;
        }
        char origin[96];
        snprintf(origin, sizeof(origin), "--shape %.60s", ti.name);
        if (match_declared(&fs, &ti, rank, dims, origin) != 0)
            goto done;
        shape_of[idx] = k + 1;
        in[idx].rank = rank;
        memcpy(in[idx].dims, dims, sizeof(dims));
    }

    /* --input NAME=FILE */
    for (int k = 0; k < o->n_inputs; k++) {
        netrun_tensor_info ti;
        int idx = find_input(m, s, o->inputs[k].name, &ti);
        if (idx < 0) {
            list_inputs(m, s, names, sizeof(names));
            cli_error("--input: the model has no input '%s' (inputs: %s)", o->inputs[k].name, names);
            goto done;
        }
        if (files[idx]) {
            cli_error("--input given twice for input '%s'", o->inputs[k].name);
            goto done;
        }
        netrun_status st = netrun_tensor_read_file(o->inputs[k].value, &files[idx]);
        if (st != NETRUN_OK) {
            cli_error("cannot read input '%s' from %s: %s", ti.name, o->inputs[k].value, netrun_last_error());
            files[idx] = NULL;
            goto done;
        }
        netrun_tensor_view *t = files[idx];
        if (ti.dtype != NETRUN_DTYPE_UNDEFINED && t->dtype != ti.dtype) {
            cli_error("input '%s' is %s in the model but %s holds %s", ti.name, netrun_dtype_name(ti.dtype),
                      o->inputs[k].value, netrun_dtype_name(t->dtype));
            goto done;
        }
        char origin[96];
        snprintf(origin, sizeof(origin), "file %.80s", o->inputs[k].value);
        if (match_declared(&fs, &ti, t->rank, t->dims, origin) != 0)
            goto done;
        if (shape_of[idx] && (in[idx].rank != t->rank ||
                              memcmp(in[idx].dims, t->dims, (size_t)t->rank * sizeof(int64_t)) != 0)) {
            cli_error("--shape %s disagrees with the shape of %s", ti.name, o->inputs[k].value);
            goto done;
        }
        in[idx].dtype = t->dtype;
        in[idx].rank = t->rank;
        memcpy(in[idx].dims, t->dims, sizeof(in[idx].dims));
        in[idx].source = o->inputs[k].value;
    }

    /* --image NAME=FILE: after the files, so that a batch they set is the image's batch too. */
    for (int k = 0; k < o->n_images; k++) {
        netrun_tensor_info ti;
        int idx = find_input(m, s, o->images[k].name, &ti);
        if (idx < 0) {
            list_inputs(m, s, names, sizeof(names));
            cli_error("--image: the model has no input '%s' (inputs: %s)", o->images[k].name, names);
            goto done;
        }
        if (files[idx] || images[idx].data) {
            cli_error("input '%s' is given twice (--input/--image)", o->images[k].name);
            goto done;
        }
        int64_t batch = 1;
        if (ti.rank >= 1 && ti.dim_names && ti.dim_names[0]) {
            dim_binding *b = find_dim(&fs, ti.dim_names[0]);
            if (b)
                batch = b->value;
        } else if (ti.rank >= 1 && ti.dims && ti.dims[0] > 0) {
            batch = ti.dims[0];
        }
        if (shape_of[idx] && in[idx].rank >= 1)
            batch = in[idx].dims[0];
        int irc = o->device_preprocess ? cli_image_load_frame(o, &ti, o->images[k].value, batch, &images[idx])
                                       : cli_image_load(o, &ti, o->images[k].value, batch, &images[idx]);
        if (irc) {
            rc = irc;
            goto done;
        }
        char origin[96];
        snprintf(origin, sizeof(origin), "image %.80s", o->images[k].value);
        /* a frame is not the model's declared input: the session's preprocessing checks it */
        if (!o->device_preprocess && match_declared(&fs, &ti, images[idx].rank, images[idx].dims, origin) != 0)
            goto done;
        if (shape_of[idx] && !o->device_preprocess && (in[idx].rank != images[idx].rank ||
                              memcmp(in[idx].dims, images[idx].dims, (size_t)in[idx].rank * sizeof(int64_t)) != 0)) {
            cli_error("--shape %s disagrees with the image's shape (check --size and --layout)", ti.name);
            goto done;
        }
        in[idx].dtype = images[idx].dtype;
        in[idx].rank = images[idx].rank;
        memcpy(in[idx].dims, images[idx].dims, sizeof(in[idx].dims));
        in[idx].source = o->images[k].value;
    }

    /* Shapes of the inputs left to random data: declared dims, bound symbols, else 1 with a note. */
    for (int i = 0; i < n; i++) {
        if (files[i] || shape_of[i] || images[i].data)
            continue;
        if (netrun_model_input_has_default(m, i)) { /* an initializer listed as an input: its value, not random */
            in[i].source = "default";
            continue;
        }
        netrun_tensor_info ti;
        if (in_info(m, s, i, &ti) != NETRUN_OK)
            continue;
        if (ti.rank < 0) {
            cli_error("input '%s' has no declared shape: give --shape %s=... or --input %s=FILE", ti.name,
                      ti.name, ti.name);
            goto done;
        }
        if (ti.rank > NETRUN_MAX_RANK) {
            cli_error("input '%s' has rank %d (at most %d supported)", ti.name, ti.rank, NETRUN_MAX_RANK);
            goto done;
        }
        in[i].rank = ti.rank;
        for (int d = 0; d < ti.rank; d++) {
            const char *sym = ti.dim_names ? ti.dim_names[d] : NULL;
            int64_t v = ti.dims ? ti.dims[d] : -1;
            if (sym) {
                dim_binding *b = find_dim(&fs, sym);
                if (!b) {
                    cli_note(o, "dimension '%s' of input '%s' not set: using 1 (set it with --shape %s=... "
                             "or --dim %s=N)", sym, ti.name, ti.name, sym);
                    if (bind_dim(&fs, sym, 1, "the default") != 0)
                        goto done;
                    b = find_dim(&fs, sym);
                }
                v = b->value;
            } else if (v < 0) {
                cli_note(o, "dimension %d of input '%s' is unknown: using 1 (set it with --shape)", d, ti.name);
                v = 1;
            }
            in[i].dims[d] = v;
        }
    }

    /* Symbolic dims first, so that every input agrees on them; then the data. */
    for (int k = 0; k < fs.n_dims; k++) {
        netrun_status st = netrun_session_set_dim(s, fs.dims[k].name, fs.dims[k].value);
        if (st != NETRUN_OK) {
            cli_error("cannot set dimension '%s' = %" PRId64 ": %s", fs.dims[k].name, fs.dims[k].value,
                      netrun_session_error(s));
            rc = status_exit(st);
            goto done;
        }
    }
    uint64_t rng = o->seed;
    for (int i = 0; i < n; i++) {
        netrun_status st;
        if (files[i]) {
            const netrun_tensor_view *t = files[i];
            st = netrun_session_set_input(s, in[i].name, t->dtype, t->rank, t->dims, t->data, t->nbytes);
        } else if (images[i].data) {
            const cli_image *t = &images[i];
            st = netrun_session_set_input(s, in[i].name, t->dtype, t->rank, t->dims, t->data, t->nbytes);
        } else if (in[i].source && !strcmp(in[i].source, "default")) {
            netrun_tensor_info ti; /* the default's shape, for the report */
            if (in_info(m, s, i, &ti) == NETRUN_OK && ti.rank >= 0 && ti.rank <= NETRUN_MAX_RANK) {
                in[i].rank = ti.rank;
                for (int d = 0; d < ti.rank; d++)
                    in[i].dims[d] = ti.dims[d];
            }
            continue;
        } else {
            size_t count, esize = netrun_dtype_size(in[i].dtype);
            if (!cli_dtype_readable(in[i].dtype) || esize == 0) {
                cli_error("cannot make random data for input '%s' of type %s: give --input %s=FILE", in[i].name,
                          netrun_dtype_name(in[i].dtype), in[i].name);
                goto done;
            }
            if (cli_numel(in[i].rank, in[i].dims, &count) != 0 || count > SIZE_MAX / esize) {
                cli_error("input '%s': shape too large", in[i].name);
                goto done;
            }
            void *buf = malloc(count * esize > 0 ? count * esize : 1);
            if (!buf) {
                cli_error("out of memory for input '%s' (%zu bytes)", in[i].name, count * esize);
                rc = CLI_EXIT_RUNTIME;
                goto done;
            }
            /* Each input gets its own stream so adding --input for one keeps the others' data. */
            uint64_t st_rng = rng + (uint64_t)i * 0x632BE59BD9B4E019ull;
            fill_random(in[i].dtype, buf, count, &st_rng);
            st = netrun_session_set_input(s, in[i].name, in[i].dtype, in[i].rank, in[i].dims, buf, count * esize);
            free(buf);
        }
        if (st != NETRUN_OK) {
            cli_error("cannot set input '%s': %s", in[i].name, netrun_session_error(s));
            rc = status_exit(st);
            goto done;
        }
    }
    rc = CLI_EXIT_OK;
    *out_inputs = in;
    *out_n = n;
    in = NULL;
done:
    free(shape_of);
    if (files)
        for (int i = 0; i < n; i++)
            netrun_tensor_free(files[i]);
    free(files);
    if (images)
        for (int i = 0; i < n; i++)
            free(images[i].data);
    free(images);
    free(in);
    free(fs.dims);
    return rc;
}
