/*
 * execute.c — TRITONBACKEND_ModelInstanceExecute: check every request against the configuration, gather the
 * requests that Triton's dynamic batcher handed over together into one netrun run per group of equal shapes
 * (requests whose non-batch dims differ run apart), and scatter each run's outputs back to the requests.
 * A bad request gets an error response of its own; the others of the batch still run. Nothing here ends the
 * server: every failure becomes a TRITONSERVER_Error sent with the response.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "netrun_triton.h"

typedef struct nt_req {
    TRITONBACKEND_Request *r;
    TRITONBACKEND_Response *resp;
    TRITONSERVER_Error *err;  /* sent with the response when set */
    int64_t batch;            /* dim 0 when the model batches, else 1 */
    int group;                /* index of its run, -1 when it failed before */
    int64_t offset;           /* its first row in the group's run */
} nt_req;

typedef struct nt_in {        /* one input of one request */
    TRITONBACKEND_Input *in;
    const int64_t *shape;
    uint32_t rank;
    uint32_t n_buffers;
    uint64_t bytes;
} nt_in;

static int64_t count_of(const int64_t *dims, int rank) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= dims[d];
    return n;
}

static TRITONSERVER_Error *check_request(const nt_model *m, nt_req *q, nt_in *ins) {
    TRITONSERVER_Error *e;
    uint32_t n = 0;
    if ((e = TRITONBACKEND_RequestInputCount(q->r, &n))) return e;
    for (uint32_t k = 0; k < n; k++) {
        const char *name = NULL;
        if ((e = TRITONBACKEND_RequestInputName(q->r, k, &name))) return e;
        int known = 0;
        for (int i = 0; i < m->n_inputs; i++) known |= !strcmp(name, m->inputs[i].name);
        if (!known)
            return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': unknown input '%s'", m->name, name);
    }
    int b = m->max_batch > 0;
    q->batch = 1;
    for (int i = 0; i < m->n_inputs; i++) {
        const nt_tensor *t = &m->inputs[i];
        nt_in *x = &ins[i];
        if ((e = TRITONBACKEND_RequestInput(q->r, t->name, &x->in))) {
            TRITONSERVER_ErrorDelete(e);
            return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': input '%s' is missing", m->name, t->name);
        }
        TRITONSERVER_DataType dt;
        if ((e = TRITONBACKEND_InputProperties(x->in, NULL, &dt, &x->shape, &x->rank, &x->bytes, &x->n_buffers)))
            return e;
        if (dt != t->ttype)
            return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': input '%s' must be %s, not %s", m->name,
                            t->name, TRITONSERVER_DataTypeString(t->ttype), TRITONSERVER_DataTypeString(dt));
        if ((int)x->rank != t->rank + b)
            return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': input '%s' must have %d dims, not %u", m->name,
                            t->name, t->rank + b, x->rank);
        for (int d = 0; d < t->rank; d++)
            if (x->shape[d + b] < 0 || (t->dims[d] >= 0 && x->shape[d + b] != t->dims[d]))
                return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': input '%s': dim %d must be %" PRId64
                                ", not %" PRId64, m->name, t->name, d + b, t->dims[d], x->shape[d + b]);
        if (b) {
            if (x->shape[0] < 1 || x->shape[0] > m->max_batch)
                return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': input '%s': batch %" PRId64 " is not in "
                                "1..%d (max_batch_size)", m->name, t->name, x->shape[0], m->max_batch);
            if (i > 0 && x->shape[0] != q->batch)
                return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': input '%s' has batch %" PRId64 ", input "
                                "'%s' %" PRId64, m->name, t->name, x->shape[0], m->inputs[0].name, q->batch);
            q->batch = x->shape[0];
        }
        uint64_t want = (uint64_t)count_of(x->shape, (int)x->rank) * netrun_dtype_size(t->dtype);
        if (x->bytes != want)
            return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': input '%s': %" PRIu64 " bytes for a shape "
                            "that needs %" PRIu64, m->name, t->name, x->bytes, want);
        if (t->reshape_rank >= 0 && count_of(t->reshape, t->reshape_rank) != count_of(x->shape + b, t->rank))
            return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': input '%s': the reshape does not hold its "
                            "elements", m->name, t->name);
    }
    return NULL;
}

/* Same non-batch dims for every input: the requests can share one run. */
static int same_shapes(const nt_model *m, const nt_in *a, const nt_in *b) {
    int s = m->max_batch > 0;
    for (int i = 0; i < m->n_inputs; i++) {
        if (a[i].rank != b[i].rank) return 0;
        for (uint32_t d = (uint32_t)s; d < a[i].rank; d++)
            if (a[i].shape[d] != b[i].shape[d]) return 0;
    }
    return 1;
}

/* Copy one request's input (all its buffers, wherever Triton keeps them) to dst. */
static TRITONSERVER_Error *read_input(const nt_in *x, char *dst) {
    uint64_t done = 0;
    for (uint32_t k = 0; k < x->n_buffers; k++) {
        const void *buf = NULL;
        uint64_t size = 0;
        TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
        int64_t mid = 0;
        TRITONSERVER_Error *e = TRITONBACKEND_InputBuffer(x->in, k, &buf, &size, &mt, &mid);
        if (e) return e;
        if (done + size > x->bytes) return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "input buffers exceed the input");
        /* a GPU buffer that is not read in place (batched requests, several buffers, another device): copied to
         * the host and gathered */
        if ((e = nt_copy(dst + done, 0, buf, mt == TRITONSERVER_MEMORY_GPU, (size_t)size))) return e;
        done += size;
    }
    if (done != x->bytes) return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "input buffers hold less than the input");
    return NULL;
}

static TRITONSERVER_Error_Code code_of(netrun_status st) {
    switch (st) {
    case NETRUN_ERR_INVALID_ARGUMENT:
    case NETRUN_ERR_INVALID_MODEL: return TRITONSERVER_ERROR_INVALID_ARG;
    case NETRUN_ERR_UNSUPPORTED: return TRITONSERVER_ERROR_UNSUPPORTED;
    case NETRUN_ERR_OUT_OF_MEMORY: return TRITONSERVER_ERROR_UNAVAILABLE;
    default: return TRITONSERVER_ERROR_INTERNAL;
    }
}

/* Run one group (requests q[g0..] with group index g): gather, run, return the session (NULL and *err on failure). */
static netrun_session *run_group(nt_instance *in, nt_req *qs, nt_in *ins, uint32_t n, int g, int64_t total,
                                 uint64_t *t_start, uint64_t *t_end, TRITONSERVER_Error **err) {
    const nt_model *m = in->model;
    int b = m->max_batch > 0;
    uint32_t first = 0;
    int members = 0;
    for (uint32_t r = 0; r < n; r++)
        if (qs[r].group == g) {
            if (!members) first = r;
            members++;
        }
    int64_t key[64 * (NETRUN_MAX_RANK + 1) + 1]; /* + the mask of inputs read in GPU memory */
    int key_len = 0;
    if (m->n_inputs > 64) {
        *err = nt_error(TRITONSERVER_ERROR_UNSUPPORTED, "model '%s': more than 64 inputs", m->name);
        return NULL;
    }
    const nt_in *x0 = &ins[(size_t)first * (size_t)m->n_inputs];
    /* A lone request whose input is one buffer of GPU memory on this instance's device (a client's CUDA shared
     * memory): netrun reads it in place when the session has a backend for CUDA memory. Such sessions are cached
     * apart (a mask of those inputs ends the key), since switching an input between host and device memory
     * prepares a session again. */
    const void *dev_buf[64] = {0};
    int64_t dev_mask = 0;
    for (int i = 0; members == 1 && in->kind == TRITONSERVER_INSTANCEGROUPKIND_GPU && i < m->n_inputs; i++) {
        const void *buf = NULL;
        uint64_t size = 0;
        TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
        int64_t mid = 0;
        if (x0[i].n_buffers != 1) continue;
        if ((*err = TRITONBACKEND_InputBuffer(x0[i].in, 0, &buf, &size, &mt, &mid))) return NULL;
        if (mt == TRITONSERVER_MEMORY_GPU && mid == in->device && size == x0[i].bytes && !(in->no_device_io >> i & 1)) {
            dev_buf[i] = buf;
            dev_mask |= (int64_t)1 << i;
        }
    }
    for (int i = 0; i < m->n_inputs; i++) { /* netrun's shape of input i: [total] + rest, or the reshape */
        const nt_tensor *t = &m->inputs[i];
        int rank = t->reshape_rank >= 0 ? t->reshape_rank + b : (int)x0[i].rank;
        key[key_len++] = rank;
        if (b) key[key_len++] = total;
        if (t->reshape_rank >= 0) for (int d = 0; d < t->reshape_rank; d++) key[key_len++] = t->reshape[d];
        else for (uint32_t d = (uint32_t)b; d < x0[i].rank; d++) key[key_len++] = x0[i].shape[d];
    }
    if (dev_mask) key[key_len++] = dev_mask;
    netrun_session *s = NULL;
    if ((*err = nt_instance_session(in, key, key_len, &s))) return NULL;
    int k = 0;
    for (int i = 0; i < m->n_inputs; i++) {
        const nt_tensor *t = &m->inputs[i];
        int rank = (int)key[k];
        const int64_t *dims = &key[k + 1];
        k += 1 + rank;
        size_t bytes = (size_t)count_of(dims, rank) * netrun_dtype_size(t->dtype);
        if (dev_buf[i]) {
            netrun_status st = netrun_session_bind_input_device(s, t->name, t->dtype, rank, dims, NETRUN_MEMORY_CUDA,
                                                                in->device, (void *)dev_buf[i], bytes);
            if (st == NETRUN_OK) continue;
            if (st != NETRUN_ERR_UNSUPPORTED) {
                *err = nt_error(code_of(st), "model '%s': %s", m->name, netrun_session_error(s));
                nt_instance_drop_session(in, s);
                return NULL;
            }
            /* no backend of the session takes CUDA memory (e.g. backends "cpu" on a GPU instance): copy, as for
             * host requests, and do not try again for this input */
            nt_log(TRITONSERVER_LOG_VERBOSE, __LINE__, "instance '%s': input '%s' in GPU memory is copied: %s",
                   in->name, t->name, netrun_session_error(s));
            in->no_device_io |= (int64_t)1 << i;
        }
        const void *data;
        TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
        const void *buf = NULL;
        uint64_t size = 0;
        int64_t mid = 0;
        if (members == 1 && x0[i].n_buffers == 1 &&
            !(*err = TRITONBACKEND_InputBuffer(x0[i].in, 0, &buf, &size, &mt, &mid)) &&
            mt != TRITONSERVER_MEMORY_GPU && size == bytes) {
            data = buf; /* one request in host memory: netrun reads it where it is */
        } else {
            if (*err) return NULL;
            if (bytes > in->stage_cap[i]) {
                void *p = realloc(in->stage[i], bytes);
                if (!p) {
                    *err = nt_error(TRITONSERVER_ERROR_UNAVAILABLE, "out of memory gathering input '%s'", t->name);
                    return NULL;
                }
                in->stage[i] = p;
                in->stage_cap[i] = bytes;
            }
            size_t off = 0;
            for (uint32_t r = 0; r < n; r++) {
                if (qs[r].group != g) continue;
                const nt_in *x = &ins[(size_t)r * (size_t)m->n_inputs + (size_t)i];
                if ((*err = read_input(x, (char *)in->stage[i] + off))) return NULL;
                off += (size_t)x->bytes;
            }
            data = in->stage[i];
        }
        /* bound, not copied: netrun reads the request's buffer (or the gathered stage) in place during the run,
         * and both stay valid until the outputs are written; every run binds its inputs again. A buffer that is not
         * aligned to its element size (a tensor after a JSON header in an HTTP body) is still copied by netrun. */
        netrun_status st = netrun_session_bind_input(s, t->name, t->dtype, rank, dims, data, bytes);
        if (st != NETRUN_OK) {
            *err = nt_error(code_of(st), "model '%s': %s", m->name, netrun_session_error(s));
            nt_instance_drop_session(in, s);
            return NULL;
        }
    }
    *t_start = nt_now_ns();
    netrun_status st = netrun_session_run(s);
    *t_end = nt_now_ns();
    if (st != NETRUN_OK) {
        *err = nt_error(code_of(st), "model '%s': netrun: %s", m->name, netrun_session_error(s));
        nt_instance_drop_session(in, s);
        return NULL;
    }
    return s;
}

/* The requested outputs of request q, its rows [q->offset, + q->batch) of the run's outputs. */
static TRITONSERVER_Error *write_outputs(const nt_model *m, netrun_session *s, const nt_req *q, int64_t total) {
    int b = m->max_batch > 0;
    uint32_t n = 0;
    TRITONSERVER_Error *e = TRITONBACKEND_RequestOutputCount(q->r, &n);
    if (e) return e;
    for (uint32_t k = 0; k < n; k++) {
        const char *name = NULL;
        if ((e = TRITONBACKEND_RequestOutputName(q->r, k, &name))) return e;
        const nt_tensor *t = NULL;
        for (int i = 0; i < m->n_outputs; i++)
            if (!strcmp(m->outputs[i].name, name)) t = &m->outputs[i];
        if (!t) return nt_error(TRITONSERVER_ERROR_INVALID_ARG, "model '%s': unknown output '%s'", m->name, name);
        netrun_tensor_view v;
        if (netrun_session_output_by_name(s, name, &v) != NETRUN_OK)
            return nt_error(TRITONSERVER_ERROR_INTERNAL, "model '%s': %s", m->name, netrun_session_error(s));
        if (v.dtype != t->dtype)
            return nt_error(TRITONSERVER_ERROR_INTERNAL, "model '%s': output '%s' came out %s", m->name, name,
                            netrun_dtype_name(v.dtype));
        if (b && (v.rank < 1 || v.dims[0] != total))
            return nt_error(TRITONSERVER_ERROR_INTERNAL, "model '%s': output '%s' does not keep the batch (dim 0 is "
                            "%" PRId64 " for a batch of %" PRId64 "): set max_batch_size: 0", m->name, name,
                            v.rank ? v.dims[0] : 0, total);
        int64_t shape[NETRUN_MAX_RANK];
        int rank = v.rank;
        memcpy(shape, v.dims, sizeof shape);
        if (b) shape[0] = q->batch;
        /* a reshape in the configuration: the response has the configuration's dims when they hold the data */
        if (t->reshape_rank >= 0 && count_of(t->dims, t->rank) == count_of(v.dims + b, v.rank - b)) {
            rank = t->rank + b;
            for (int d = 0; d < t->rank; d++) shape[d + b] = t->dims[d];
        }
        size_t row = b ? v.nbytes / (size_t)total : v.nbytes;
        size_t bytes = row * (size_t)(b ? q->batch : 1);
        TRITONBACKEND_Output *out = NULL;
        if ((e = TRITONBACKEND_ResponseOutput(q->resp, &out, name, t->ttype, shape, (uint32_t)rank))) return e;
        void *buf = NULL;
        TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
        int64_t mid = 0;
        if ((e = TRITONBACKEND_OutputBuffer(out, &buf, bytes, &mt, &mid))) return e;
        /* Triton may hand GPU memory (the client asked for CUDA shared memory): copied from netrun's host output
         * (outputs are small next to the inputs of the models served; the input side is read in place) */
        if ((e = nt_copy(buf, mt == TRITONSERVER_MEMORY_GPU, (const char *)v.data + row * (size_t)q->offset, 0,
                         bytes)))
            return e;
    }
    return NULL;
}

static void finish(TRITONBACKEND_ModelInstance *ti, nt_instance *in, nt_req *q, uint64_t exec_start,
                   uint64_t compute_start, uint64_t compute_end) {
    TRITONSERVER_Error *e;
    if (q->resp) {
        uint64_t exec_end = nt_now_ns();
        if ((e = TRITONBACKEND_ModelInstanceReportStatistics(ti, q->r, q->err == NULL, exec_start,
                                                             compute_start ? compute_start : exec_start,
                                                             compute_end ? compute_end : exec_end, exec_end)))
            TRITONSERVER_ErrorDelete(e);
        if ((e = TRITONBACKEND_ResponseSend(q->resp, TRITONSERVER_RESPONSE_COMPLETE_FINAL, q->err))) {
            nt_log(TRITONSERVER_LOG_ERROR, __LINE__, "instance '%s': cannot send a response: %s", in->name,
                   TRITONSERVER_ErrorMessage(e));
            TRITONSERVER_ErrorDelete(e);
        }
    } else if (q->err) {
        nt_log(TRITONSERVER_LOG_ERROR, __LINE__, "instance '%s': request failed with no response to carry it: %s",
               in->name, TRITONSERVER_ErrorMessage(q->err));
    }
    if (q->err) TRITONSERVER_ErrorDelete(q->err);
    q->err = NULL;
    if ((e = TRITONBACKEND_RequestRelease(q->r, TRITONSERVER_REQUEST_RELEASE_ALL))) {
        nt_log(TRITONSERVER_LOG_ERROR, __LINE__, "instance '%s': cannot release a request: %s", in->name,
               TRITONSERVER_ErrorMessage(e));
        TRITONSERVER_ErrorDelete(e);
    }
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance *ti,
                                                       TRITONBACKEND_Request **requests, const uint32_t n) {
    uint64_t exec_start = nt_now_ns();
    void *state = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(ti, &state);
    if (e) return e; /* the requests stay Triton's */
    nt_instance *in = state;
    const nt_model *m = in->model;
    nt_req *qs = calloc(n ? n : 1, sizeof *qs);
    nt_in *ins = calloc((size_t)(n ? n : 1) * (size_t)m->n_inputs, sizeof *ins);
    if (!qs || !ins) {
        free(qs);
        free(ins);
        return nt_error(TRITONSERVER_ERROR_UNAVAILABLE, "netrun backend: out of memory for %u requests", n);
    }
    /* From here on the requests are ours: every one gets a response (or a logged failure) and is released. */
    int n_groups = 0;
    for (uint32_t r = 0; r < n; r++) {
        nt_req *q = &qs[r];
        q->r = requests[r];
        q->group = -1;
        if ((e = TRITONBACKEND_ResponseNew(&q->resp, q->r))) {
            q->resp = NULL;
            q->err = e;
            continue;
        }
        nt_in *x = &ins[(size_t)r * (size_t)m->n_inputs];
        if ((q->err = check_request(m, q, x))) continue;
        /* join the first group with the same shapes and room left, or start one */
        for (uint32_t p = 0; p < r && q->group < 0 && m->max_batch > 0; p++) {
            if (qs[p].group < 0 || !same_shapes(m, &ins[(size_t)p * (size_t)m->n_inputs], x)) continue;
            int64_t rows = 0;
            for (uint32_t o = 0; o < r; o++)
                if (qs[o].group == qs[p].group) rows += qs[o].batch;
            if (rows + q->batch <= m->max_batch) {
                q->group = qs[p].group;
                q->offset = rows;
            }
        }
        if (q->group < 0) {
            q->group = n_groups++;
            q->offset = 0;
        }
    }
    for (int g = 0; g < n_groups; g++) {
        int64_t total = 0;
        for (uint32_t r = 0; r < n; r++)
            if (qs[r].group == g) total += qs[r].batch;
        uint64_t t0 = 0, t1 = 0;
        TRITONSERVER_Error *ge = NULL;
        netrun_session *s = run_group(in, qs, ins, n, g, total, &t0, &t1, &ge);
        for (uint32_t r = 0; r < n; r++) {
            nt_req *q = &qs[r];
            if (q->group != g) continue;
            if (ge) q->err = TRITONSERVER_ErrorNew(TRITONSERVER_ErrorCode(ge), TRITONSERVER_ErrorMessage(ge));
            else q->err = write_outputs(m, s, q, total);
            finish(ti, in, q, exec_start, t0, t1);
            q->r = NULL;
        }
        if (ge) TRITONSERVER_ErrorDelete(ge);
        else if ((e = TRITONBACKEND_ModelInstanceReportBatchStatistics(ti, (uint64_t)total, exec_start, t0, t1,
                                                                       nt_now_ns())))
            TRITONSERVER_ErrorDelete(e);
    }
    for (uint32_t r = 0; r < n; r++) /* the requests that failed their checks */
        if (qs[r].r) finish(ti, in, &qs[r], exec_start, 0, 0);
    free(qs);
    free(ins);
    return NULL;
}
