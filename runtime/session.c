/* The session API: create, inputs, run, outputs, placement and stats. Prepare and execute live apart. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_flow.h"
#include "optimize.h"
#include "place.h"
#include "preprocess.h"
#include "session.h"

#define FAIL(s, code) nr_record((s)->error, (code))

static netrun_status arg_error(netrun_session *s, const char *fmt, const char *what) {
    nr_error(NETRUN_ERR_INVALID_ARGUMENT, fmt, what);
    return s ? FAIL(s, NETRUN_ERR_INVALID_ARGUMENT) : NETRUN_ERR_INVALID_ARGUMENT;
}

static const nr_body_ops body_ops; /* below: how control flow drives a body's session */

netrun_status netrun_session_create(netrun_model *model, const netrun_options *options, netrun_session **out) {
    if (!out) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_session_create: out is NULL");
    *out = NULL;
    if (!model) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_session_create: model is NULL");
    netrun_session *s = nr_calloc(1, sizeof *s);
    if (!s) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory creating a session");
    netrun_status st = nr_options_copy(&s->opts, options);
    if (st != NETRUN_OK) {
        nr_free(s);
        return st;
    }
    nr_graph *g = model->ir->graph;
    s->inputs = nr_calloc((size_t)g->n_inputs + 1, sizeof(nr_input));
    s->outputs = nr_calloc((size_t)g->n_outputs + 1, sizeof(nr_output));
    s->in_info = nr_calloc((size_t)g->n_inputs + 1, sizeof(netrun_tensor_info));
    s->out_info = nr_calloc((size_t)g->n_outputs + 1, sizeof(netrun_tensor_info));
    s->io_dims = nr_calloc((size_t)(g->n_inputs + g->n_outputs) + 1, sizeof *s->io_dims);
    if (!s->inputs || !s->outputs || !s->in_info || !s->out_info || !s->io_dims) {
        s->model = NULL;
        netrun_session_destroy(s);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory creating a session");
    }
    nr_model_retain(model);
    s->model = model;
    s->body = &body_ops;
    /* Check the backend list now so that a typo fails early; devices are touched only at prepare. */
    st = nr_session_choose_backends(s);
    if (st == NETRUN_OK) st = nr_options_check_keys(s);
    netrun_model *pm = NULL; /* preprocess.*: the model with its frame input (the original kept alive by it) */
    if (st == NETRUN_OK) st = nr_preprocess_model(model, &s->opts, &pm);
    if (pm) {
        netrun_model_release(s->model);
        s->model = pm;
    }
    if (st != NETRUN_OK) {
        netrun_session_destroy(s);
        return st;
    }
    *out = s;
    return NETRUN_OK;
}

void netrun_session_destroy(netrun_session *s) {
    if (!s) return;
    for (int i = 0; s->pending && i < s->n_slots; i++) /* an asynchronous run nobody waited for: its work ends first */
        if (s->slots[i].ctx && s->slots[i].api->synchronize) s->slots[i].api->synchronize(s->slots[i].ctx);
    nr_session_unprepare(s);
    for (int i = 0; i < s->n_slots; i++)
        if (s->slots[i].ctx) s->slots[i].api->context_destroy(s->slots[i].ctx);
    nr_graph *g = s->model ? s->model->ir->graph : NULL;
    if (g) {
        for (int i = 0; i < g->n_inputs; i++) nr_input_free_data(s, &s->inputs[i]);
        for (int i = 0; i < g->n_outputs; i++) nr_host_free(s, s->outputs[i].host, s->outputs[i].cap);
    }
    for (int i = 0; i < s->n_dims; i++) nr_free(s->dim_names[i]);
    nr_free(s->dim_names);
    nr_free(s->dim_values);
    nr_free(s->inputs);
    nr_free(s->outputs);
    nr_free(s->in_info);
    nr_free(s->out_info);
    nr_free(s->io_dims);
    nr_options_clear(&s->opts);
    nr_free(s->prof);
    nr_free(s->avoid);
    if (s->model) netrun_model_release(s->model);
    nr_free(s);
}

const char *netrun_session_error(const netrun_session *s) { return s ? s->error : nr_error_message(); }

int netrun_session_input_count(const netrun_session *s) { return s ? s->model->ir->graph->n_inputs : 0; }
int netrun_session_output_count(const netrun_session *s) { return s ? s->model->ir->graph->n_outputs : 0; }

/* The session's view of an io value: declared shape with set dims / prepared shapes filled in. */
static void fill_info(netrun_session *s, int value, netrun_tensor_info *info, int64_t *dims,
                      const netrun_tensor_info *declared) {
    *info = *declared;
    const nr_value *v = &s->model->ir->graph->values[value];
    int rank = v->rank;
    netrun_dtype dtype = v->dtype;
    if (s->prepared && s->values) {
        rank = s->values[value].desc.rank;
        dtype = s->values[value].desc.dtype;
        for (int d = 0; d < rank; d++) dims[d] = s->values[value].dynamic ? -1 : s->values[value].desc.dims[d];
        if (s->mb && rank > 0) dims[0] = s->mb_n; /* micro-batching: io keeps the whole batch */
    } else {
        for (int d = 0; d < rank && d < NETRUN_MAX_RANK; d++) {
            dims[d] = v->dims[d];
            for (int k = 0; v->dim_names[d] && k < s->n_dims; k++)
                if (!strcmp(s->dim_names[k], v->dim_names[d])) dims[d] = s->dim_values[k];
        }
    }
    info->rank = rank;
    info->dtype = dtype;
    info->dims = dims;
}

static netrun_status io_info(netrun_session *s, int index, int outputs, netrun_tensor_info *info) {
    if (!s || !info) return arg_error(s, "%s: NULL argument", "netrun_session_io_info");
    nr_graph *g = s->model->ir->graph;
    int n = outputs ? g->n_outputs : g->n_inputs;
    if (index < 0 || index >= n) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s index %d out of range (the model has %d)",
                 outputs ? "output" : "input", index, n);
        return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    }
    int value = outputs ? g->outputs[index] : g->inputs[index];
    int64_t *dims = s->io_dims[outputs ? g->n_inputs + index : index];
    fill_info(s, value, info, dims, &(outputs ? s->model->outputs : s->model->inputs)[index].info);
    return NETRUN_OK;
}

static netrun_status impl_input_info(netrun_session *s, int index, netrun_tensor_info *info) {
    return io_info(s, index, 0, info);
}
static netrun_status impl_output_info(netrun_session *s, int index, netrun_tensor_info *info) {
    return io_info(s, index, 1, info);
}

static netrun_status impl_set_dim(netrun_session *s, const char *name, int64_t value) {
    if (!s || !name || !*name) return arg_error(s, "%s: NULL session or empty dim name", "netrun_session_set_dim");
    if (value < 0) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "dim '%s' cannot be negative (%lld)", name, (long long)value);
        return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    }
    int used = 0;
    nr_graph *g = s->model->ir->graph;
    for (int i = 0; i < g->n_inputs && !used; i++) {
        const nr_value *v = &g->values[g->inputs[i]];
        for (int d = 0; d < v->rank; d++)
            if (v->dim_names[d] && !strcmp(v->dim_names[d], name)) used = 1;
    }
    if (!used) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "no input of the model has a dimension named '%s'", name);
        return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    }
    for (int k = 0; k < s->n_dims; k++)
        if (!strcmp(s->dim_names[k], name)) {
            if (s->dim_values[k] != value) nr_session_unprepare(s);
            s->dim_values[k] = value;
            return NETRUN_OK;
        }
    char **names = nr_realloc(s->dim_names, sizeof(char *) * (size_t)(s->n_dims + 1));
    if (!names) goto oom;
    s->dim_names = names;
    int64_t *values = nr_realloc(s->dim_values, sizeof(int64_t) * (size_t)(s->n_dims + 1));
    if (!values) goto oom;
    s->dim_values = values;
    if (!(s->dim_names[s->n_dims] = nr_strdup(name))) goto oom;
    s->dim_values[s->n_dims++] = value;
    nr_session_unprepare(s);
    return NETRUN_OK;
oom:
    nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    return FAIL(s, NETRUN_ERR_OUT_OF_MEMORY);
}

/* The caller's device memory for `what` (an input or output): the session's device, and the pointer as the backend
 * serving domain dom sees it (memory_check: a host pointer, another device, a short allocation). */
static netrun_status check_device_memory(netrun_session *s, int dom, const char *what, const void *data, size_t bytes,
                                         int device) {
    if (!data) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: the device pointer is NULL", what);
    if (device != s->opts.device)
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: memory of device %d, but the session runs on device %d "
                        "(netrun_options_set_device)", what, device, s->opts.device);
    const nr_slot *sl = &s->slots[s->domain_slot[dom]];
    if (!NR_API_HAS(sl->api, memory_check)) return NETRUN_OK;
    netrun_status st = sl->api->memory_check(data, bytes, device);
    if (st != NETRUN_OK) nr_error_prefix("%s: ", what);
    return st;
}

/* bind: 0 = copy from the host, 1 = read the caller's host memory in place, 2 = the caller's device memory of type
 * mem on device `device` (device_io.c) */
static netrun_status impl_set_input(netrun_session *s, const char *name, netrun_dtype dtype, int rank,
                                       const int64_t *dims, const void *data, size_t nbytes, int bind,
                                       netrun_memory_type mem, int device) {
    if (!s || !name) return arg_error(s, "%s: NULL session or name", "netrun_session_set_input");
    nr_graph *g = s->model->ir->graph;
    int index = -1;
    for (int i = 0; i < g->n_inputs; i++)
        if (!strcmp(g->values[g->inputs[i]].name, name)) index = i;
    if (index < 0) {
        char names[512] = "";
        for (int i = 0; i < g->n_inputs; i++) {
            size_t l = strlen(names);
            snprintf(names + l, sizeof names - l, "%s'%s'", i ? ", " : "", g->values[g->inputs[i]].name);
        }
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "the model has no input '%s' (inputs: %s)", name, names);
        return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    }
    const nr_value *v = &g->values[g->inputs[index]];
    if (rank < 0 || rank > NETRUN_MAX_RANK || (rank && !dims)) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "input '%s': invalid rank %d", name, rank);
        return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    }
    if (v->dtype != NETRUN_DTYPE_UNDEFINED && dtype != v->dtype) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "input '%s' takes %s, not %s", name, netrun_dtype_name(v->dtype),
                 netrun_dtype_name(dtype));
        return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    }
    if (v->rank >= 0 && rank != v->rank) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "input '%s' has rank %d, not %d", name, v->rank, rank);
        return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    }
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0 || dims[d] > NR_MAX_DIM) {
            nr_error(NETRUN_ERR_INVALID_ARGUMENT, "input '%s': dim %d is %s", name, d,
                     dims[d] < 0 ? "negative" : "over the limit of 2^40");
            return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
        }
        if (v->rank >= 0 && v->dims[d] >= 0 && v->dims[d] != dims[d]) {
            nr_error(NETRUN_ERR_INVALID_ARGUMENT, "input '%s': dim %d must be %lld, not %lld", name, d,
                     (long long)v->dims[d], (long long)dims[d]);
            return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
        }
    }
    size_t esize = netrun_dtype_size(dtype);
    int64_t count = nr_shape_count(rank, dims);
    size_t need;
    if (!esize || count < 0 || count == INT64_MAX || !nr_mul_size((size_t)count, esize, &need)) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "input '%s': dtype %s with this shape is not supported", name,
                 netrun_dtype_name(dtype));
        return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    }
    if (nbytes != need || (need && !data)) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "input '%s': %zu bytes given, the shape and dtype need %zu", name,
                 nbytes, need);
        return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    }
    nr_input *in = &s->inputs[index];
    int dev_dom = -1;
    if (bind == 2) { /* checked before anything changes: a refused binding leaves the input as it was */
        char what[160];
        snprintf(what, sizeof what, "input '%.120s'", name);
        if (mem != NETRUN_MEMORY_CUDA && mem != NETRUN_MEMORY_OPENCL) {
            nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: memory type %d is not a device memory type (host memory: "
                     "netrun_session_set_input or netrun_session_bind_input)", what, (int)mem);
            return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
        }
        if ((dev_dom = nr_devio_domain(s, mem, what)) < 0) return FAIL(s, NETRUN_ERR_UNSUPPORTED);
        netrun_status st = check_device_memory(s, dev_dom, what, data, need, device);
        if (st != NETRUN_OK) return FAIL(s, st);
    }
    /* host <-> device memory moves the input's home domain: plan again */
    if (s->prepared && (in->mem != NETRUN_MEMORY_HOST) != (bind == 2)) nr_session_unprepare(s);
    if (bind != 2 && in->mem != NETRUN_MEMORY_HOST) {
        nr_devio_release_input(s, index);
        in->mem = NETRUN_MEMORY_HOST;
        in->dev_ptr = NULL;
        in->dev_dom = -1;
    }
    /* A shape the plan was not built for invalidates it (shapes, memory, algorithms), unless the dims that differ
     * are left to run time. A control-flow body, whose inputs follow the data, leaves them to run time from now
     * on: it is prepared once more, and then not again for those dims. */
    int new_dtype = in->set && in->dtype != dtype;
    if (s->n_prepares) { /* also while unprepared by another input's change: every body input is marked */
        unsigned differ = 0;
        for (int d = 0; d < rank && in->plan_rank == rank; d++)
            if (dims[d] != in->plan_dims[d] && !(in->run_time_dims & (1u << d))) differ |= 1u << d;
        if (in->plan_rank != rank || differ) {
            if (s->root) in->run_time_dims |= in->plan_rank == rank ? differ : (1u << rank) - 1u;
            if (s->prepared) {
                snprintf(s->prepare_note, sizeof s->prepare_note, "%s: input '%s' changed shape%s", s->model->source,
                         name, s->root ? "; its changing dims are left to run time from now on" : "");
                if (s->root) memcpy(s->root->prepare_note, s->prepare_note, sizeof s->prepare_note);
                nr_session_unprepare(s);
            }
        }
    }
    if (!in->set && v->default_value) {
        /* the plan took the default as a constant, and graph passes may have folded it into other constants:
         * plan again from the model as loaded */
        if (s->prepared) nr_session_unprepare(s);
        netrun_model *orig = nr_optimize_original(s->model);
        if (orig) {
            nr_model_retain(orig);
            netrun_model_release(s->model);
            s->model = orig;
            g = orig->ir->graph;
            v = &g->values[g->inputs[index]];
        }
    }
    if (bind == 2) { /* the caller's device memory: no host copy at all */
        nr_input_free_data(s, in);
        in->cap = 0;
        in->external = 0;
        in->mem = mem;
        in->mem_device = device;
        in->dev_dom = dev_dom;
        in->dev_ptr = (void *)data;
    }
    /* read in place: no copy, nothing charged to the budget. Kernels read activations with unaligned vector loads
     * (aligned ones only on their own packed weights), so the element's alignment is all that is asked. */
    else if (bind && need && !((uintptr_t)data % esize)) {
        nr_input_free_data(s, in);
        in->data = (void *)data;
        in->cap = 0;
        in->external = 1;
    } else if (need > in->cap || !in->data) { /* never NULL, even for empty tensors: a zero-size value is known */
        nr_input_free_data(s, in); /* first: the old copy does not count against the budget for the new one */
        in->cap = 0;
        in->set = 0;
        char what[160];
        snprintf(what, sizeof what, "input '%.120s'", name);
        void *p = nr_host_alloc(s, need ? need : 1, what);
        if (!p) return FAIL(s, NETRUN_ERR_OUT_OF_MEMORY);
        in->data = p;
        in->cap = need ? need : 1;
    }
    if (need && !in->external && bind != 2) memcpy(in->data, data, need);
    in->nbytes = need;
    if (new_dtype && s->prepared) nr_session_unprepare(s);
    in->dtype = dtype;
    in->rank = rank;
    memcpy(in->dims, dims, sizeof(int64_t) * (size_t)rank);
    in->set = 1;
    return NETRUN_OK;
}

static netrun_status impl_prepare(netrun_session *s) {
    if (s->prepared) return NETRUN_OK;
    netrun_status st = nr_session_prepare(s);
    nr_activity_set(s, NR_ACT_IDLE, -1, -1);
    return st == NETRUN_OK ? NETRUN_OK : FAIL(s, st);
}

static netrun_status run_done(netrun_session *s, netrun_status st, double t0) {
    double ms = nr_now_ms() - t0;
    if (st != NETRUN_OK) return FAIL(s, st);
    if (!s->ran_since_prepare) s->stats.first_run_ms = ms;
    s->ran_since_prepare = 1;
    s->stats.last_run_ms = ms;
    s->stats.runs++;
    return NETRUN_OK;
}

/* A run: everything (async 0), or up to the point where its device work is queued (async 1: finished by
 * impl_wait). */
static netrun_status run_start(netrun_session *s, int async) {
    nr_graph *g = s->model->ir->graph;
    for (int i = 0; i < g->n_inputs; i++)
        if (!s->inputs[i].set && !g->values[g->inputs[i]].default_value) {
            nr_error(NETRUN_ERR_STATE, "input '%s' was not set (netrun_session_set_input)",
                     g->values[g->inputs[i]].name);
            return FAIL(s, NETRUN_ERR_STATE);
        }
    if (!s->prepared) {
        netrun_status st = nr_session_prepare(s);
        nr_activity_set(s, NR_ACT_IDLE, -1, -1);
        if (st != NETRUN_OK) return FAIL(s, st);
    }
    if (!s->root) s->loop_iterations = 0;
    double t0 = nr_now_ms();
    netrun_status st = nr_session_execute(s, async);
    nr_activity_set(s, NR_ACT_IDLE, -1, -1);
    if (async && st == NETRUN_OK) {
        s->pending = 1;
        s->pending_t0 = t0;
        return NETRUN_OK;
    }
    if (async) { /* queued work of a failed start is waited for: the caller may free its buffers after this */
        for (int i = 0; i < s->n_slots; i++)
            if (s->slots[i].ctx && s->slots[i].api->synchronize) s->slots[i].api->synchronize(s->slots[i].ctx);
    }
    return run_done(s, st, t0);
}

static netrun_status impl_run(netrun_session *s) { return run_start(s, 0); }
static netrun_status impl_run_async(netrun_session *s) { return run_start(s, 1); }

static netrun_status impl_wait(netrun_session *s) {
    if (!s->pending) return NETRUN_OK;
    s->pending = 0;
    netrun_status st = nr_session_finish(s);
    nr_activity_set(s, NR_ACT_IDLE, -1, -1);
    return run_done(s, st, s->pending_t0);
}

static int output_index(netrun_session *s, const char *name) {
    nr_graph *g = s->model->ir->graph;
    for (int i = 0; name && i < g->n_outputs; i++)
        if (!strcmp(g->values[g->outputs[i]].name, name)) return i;
    nr_error(NETRUN_ERR_INVALID_ARGUMENT, "the model has no output '%s'", name ? name : "(null)");
    return -1;
}

static netrun_status impl_bind_output_device(netrun_session *s, const char *name, netrun_memory_type mem, int device,
                                             void *data, size_t capacity) {
    int i = output_index(s, name);
    if (i < 0) return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    nr_output *out = &s->outputs[i];
    char what[160];
    snprintf(what, sizeof what, "output '%.120s'", name);
    if (mem == NETRUN_MEMORY_HOST) {
        if (data) {
            nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: host outputs live in the session's memory (data must be NULL "
                     "with NETRUN_MEMORY_HOST)", what);
            return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
        }
        nr_devio_release_output(s, i);
        out->mem = NETRUN_MEMORY_HOST;
        out->dev_ptr = NULL;
        out->dev_cap = 0;
        return NETRUN_OK;
    }
    if (mem != NETRUN_MEMORY_CUDA && mem != NETRUN_MEMORY_OPENCL) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: memory type %d is not known", what, (int)mem);
        return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    }
    int dom = nr_devio_domain(s, mem, what);
    if (dom < 0) return FAIL(s, NETRUN_ERR_UNSUPPORTED);
    if (data) {
        if (!capacity) {
            nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: the buffer bound has a capacity of 0 bytes", what);
            return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
        }
        netrun_status st = check_device_memory(s, dom, what, data, capacity, device);
        if (st != NETRUN_OK) return FAIL(s, st);
        /* a prepared static shape is checked now; others when the run knows the size */
        const nr_svalue *sv = s->prepared ? &s->values[s->model->ir->graph->outputs[i]] : NULL;
        if (sv && !sv->dynamic && sv->nbytes > capacity) {
            nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s needs %zu bytes; the buffer holds %zu", what, sv->nbytes, capacity);
            return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
        }
    } else if (device != s->opts.device) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: device %d, but the session runs on device %d", what, device,
                 s->opts.device);
        return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    }
    if (out->dev_dom != dom) nr_devio_release_output(s, i);
    if (s->prepared && s->mb) nr_session_unprepare(s); /* micro-batching is off with device outputs: plan again */
    out->mem = mem;
    out->mem_device = device;
    out->dev_dom = dom;
    out->dev_ptr = data;
    out->dev_cap = data ? capacity : 0;
    return NETRUN_OK;
}

static netrun_status impl_set_stream(netrun_session *s, netrun_memory_type mem, void *stream) {
    if (mem != NETRUN_MEMORY_CUDA && mem != NETRUN_MEMORY_OPENCL) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_session_set_stream: memory type %d has no streams", (int)mem);
        return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    }
    if (nr_devio_domain(s, mem, "netrun_session_set_stream") < 0) return FAIL(s, NETRUN_ERR_UNSUPPORTED);
    s->streams[mem] = stream;
    netrun_status st = nr_devio_apply_streams(s); /* contexts made already; the others get it when they are made */
    return st == NETRUN_OK ? NETRUN_OK : FAIL(s, st);
}

netrun_status netrun_session_cancel(netrun_session *s) {
    if (!s) return NETRUN_ERR_INVALID_ARGUMENT; /* no message: this may run in a signal handler */
    atomic_store(&s->cancel, 1);
    return NETRUN_OK;
}

/* Output number index exists and a run has produced it. */
static netrun_status output_readable(netrun_session *s, int index) {
    nr_graph *g = s->model->ir->graph;
    if (index < 0 || index >= g->n_outputs) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "output index %d out of range (the model has %d)", index,
                 g->n_outputs);
        return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    }
    if (!s->prepared || !s->ran_since_prepare) {
        nr_error(NETRUN_ERR_STATE, "no outputs yet: run the session first");
        return FAIL(s, NETRUN_ERR_STATE);
    }
    return NETRUN_OK;
}

/* An output in host memory: the session's staging buffer, the host arena or a constant. */
static void host_output_view(netrun_session *s, int index, netrun_tensor_view *out) {
    nr_graph *g = s->model->ir->graph;
    int v = g->outputs[index];
    nr_svalue *sv = &s->values[v];
    memset(out, 0, sizeof *out);
    out->name = g->values[v].name;
    out->dtype = sv->desc.dtype;
    out->rank = sv->desc.rank;
    memcpy(out->dims, sv->desc.dims, sizeof out->dims);
    out->nbytes = sv->nbytes;
    if (s->mb && !s->mb_head) { /* micro-batching: gathered from the runs into the staging buffer */
        out->dims[0] = s->mb_n;
        out->nbytes = sv->nbytes * (size_t)(s->mb_n / s->mb);
        out->data = s->outputs[index].host;
    } else if (sv->is_const) out->data = sv->desc.const_data;
    else if (sv->home != NR_HOST_DOMAIN) out->data = s->outputs[index].host;
    else {
        netrun_tensor t;
        nr_value_tensor(s, v, NR_HOST_DOMAIN, &t);
        out->data = t.data;
    }
}

static netrun_status impl_output(netrun_session *s, int index, netrun_tensor_view *out) {
    if (!s || !out) return arg_error(s, "%s: NULL argument", "netrun_session_output");
    netrun_status st = output_readable(s, index);
    if (st != NETRUN_OK) return st;
    if (s->outputs[index].mem != NETRUN_MEMORY_HOST) {
        nr_error(NETRUN_ERR_STATE, "output '%s' is delivered in %s (netrun_session_bind_output_device): read it with "
                 "netrun_session_output_device", s->model->ir->graph->values[s->model->ir->graph->outputs[index]].name,
                 nr_memory_type_name(s->outputs[index].mem));
        return FAIL(s, NETRUN_ERR_STATE);
    }
    host_output_view(s, index, out);
    return NETRUN_OK;
}

static netrun_status impl_output_device(netrun_session *s, int index, netrun_device_view *view) {
    if (!view) return arg_error(s, "%s: NULL argument", "netrun_session_output_device");
    netrun_status st = output_readable(s, index);
    if (st != NETRUN_OK) return st;
    nr_graph *g = s->model->ir->graph;
    int v = g->outputs[index];
    nr_svalue *sv = &s->values[v];
    nr_output *out = &s->outputs[index];
    memset(view, 0, sizeof *view);
    view->name = g->values[v].name;
    view->dtype = sv->desc.dtype;
    view->rank = sv->desc.rank;
    memcpy(view->dims, sv->desc.dims, sizeof view->dims);
    view->nbytes = sv->nbytes;
    if (out->mem != NETRUN_MEMORY_HOST && out->dev_ptr) { /* the caller's buffer */
        view->data = out->dev_ptr;
        view->memory_type = out->mem;
        view->device = out->mem_device;
        return NETRUN_OK;
    }
    if (sv->is_const || sv->home == NR_HOST_DOMAIN || s->mb) { /* host memory: what netrun_session_output gives */
        netrun_tensor_view hv;
        host_output_view(s, index, &hv);
        view->data = (void *)hv.data;
        view->rank = hv.rank;
        memcpy(view->dims, hv.dims, sizeof view->dims);
        view->nbytes = hv.nbytes;
        view->memory_type = NETRUN_MEMORY_HOST;
        return NETRUN_OK;
    }
    nr_slot *sl = &s->slots[s->domain_slot[sv->home]];
    uint32_t type = NR_API_FITS(sl->api, memory_type) ? sl->api->memory_type : 0;
    netrun_tensor t;
    nr_value_tensor(s, v, sv->home, &t);
    if (NR_API_HAS(sl->api, buffer_native)) { /* memory without addresses (OpenCL): the object and an offset */
        view->data = sl->api->buffer_native(sl->ctx, t.buffer);
        view->offset = t.offset;
    } else
        view->data = t.data;
    if (!type || !view->data) {
        nr_error(NETRUN_ERR_UNSUPPORTED, "output '%s' is in the memory of backend '%s', which does not expose it "
                 "(read it with netrun_session_output)", view->name, sl->be->name);
        return FAIL(s, NETRUN_ERR_UNSUPPORTED);
    }
    view->memory_type = (netrun_memory_type)type;
    view->device = s->opts.device;
    return NETRUN_OK;
}

static netrun_status impl_output_by_name(netrun_session *s, const char *name, netrun_tensor_view *out) {
    if (!s || !name) return arg_error(s, "%s: NULL argument", "netrun_session_output_by_name");
    nr_graph *g = s->model->ir->graph;
    for (int i = 0; i < g->n_outputs; i++)
        if (!strcmp(g->values[g->outputs[i]].name, name)) return impl_output(s, i, out);
    nr_error(NETRUN_ERR_INVALID_ARGUMENT, "the model has no output '%s'", name);
    return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
}

static int impl_node_count(netrun_session *s) { return s->prepared ? s->n_snodes : 0; }


static netrun_status impl_node_info(netrun_session *s, int index, netrun_node_info *info) {
    if (!info) return arg_error(s, "%s: info is NULL", "netrun_session_node_info");
    if (!s->prepared) {
        nr_error(NETRUN_ERR_STATE, "the session is not prepared yet");
        return FAIL(s, NETRUN_ERR_STATE);
    }
    if (index < 0 || index >= s->n_snodes) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "node index %d out of range (%d nodes)", index, s->n_snodes);
        return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    }
    const nr_snode *sn = &s->snodes[index];
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    info->name = nd->name;
    info->op_type = nr_internal_op_shown(nd);
    info->backend = sn->slot >= 0 ? s->slots[sn->slot].be->name : sn->slot == NR_SLOT_RUNTIME ? "runtime" : "const";
    info->reason = sn->reason ? sn->reason : "";
    info->kernel = sn->kernel_name;
    info->workspace_bytes = sn->workspace;
    return NETRUN_OK;
}

static netrun_status impl_get_stats(netrun_session *s, netrun_session_stats *stats, size_t size) {
    if (!stats || !size) return arg_error(s, "%s: stats is NULL or its size 0", "netrun_session_get_stats");
    netrun_session_stats all = s->stats;
    all.prepares = nr_session_prepares(s);
    all.host_memory_budget = nr_host_budget(s);
    all.profile_dropped = s->prof_dropped;
    memcpy(stats, &all, size < sizeof all ? size : sizeof all); /* a caller of an older header gets what it knows */
    return NETRUN_OK;
}

static netrun_status impl_set_profiling(netrun_session *s, int on) {
    if (on && !s->profiling) nr_profile_clear(s);
    s->profiling = on != 0;
    return NETRUN_OK;
}

static int impl_profile_count(netrun_session *s) { return s->n_prof; }

static const char *domain_name(const netrun_session *s, int dom) {
    if (dom == NR_HOST_DOMAIN) return "host";
    int slot = s->domain_slot[dom];
    return slot >= 0 ? s->slots[slot].be->name : "?";
}

static netrun_status impl_profile_get(netrun_session *s, int index, netrun_profile_event *ev) {
    if (!ev) return arg_error(s, "%s: event is NULL", "netrun_session_profile_get");
    if (index < 0 || index >= s->n_prof) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "profile event %d out of range (%d held)", index, s->n_prof);
        return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    }
    const nr_prof_event *p = &s->prof[(s->prof_head + index) % s->cap_prof]; /* a ring, oldest first */
    const nr_graph *g = s->model->ir->graph;
    memset(ev, 0, sizeof *ev);
    ev->run = p->run;
    ev->start_ms = p->start_ms;
    ev->duration_ms = p->duration_ms;
    ev->bytes = p->bytes;
    ev->node = p->snode;
    ev->depth = p->depth;
    if (p->label) { /* inside a control-flow body */
        ev->name = p->label;
        ev->op_type = p->op;
        ev->backend = p->backend;
        ev->is_copy = p->is_copy;
        ev->node = -1;
    } else if (p->snode >= 0) {
        const nr_snode *sn = &s->snodes[p->snode];
        const nr_node *nd = &g->nodes[sn->node];
        ev->name = nd->name;
        ev->op_type = nr_internal_op_shown(nd);
        ev->backend = sn->slot >= 0 ? s->slots[sn->slot].be->name : sn->slot == NR_SLOT_RUNTIME ? "runtime" : "const";
    } else {
        ev->name = g->values[p->value].name;
        ev->op_type = "Copy";
        ev->is_copy = 1;
        /* "host->cuda": built on demand into the session (events of copies share the text per direction) */
        snprintf(s->prof_backend, sizeof s->prof_backend, "%s->%s", domain_name(s, p->from), domain_name(s, p->to));
        ev->backend = s->prof_backend;
    }
    return NETRUN_OK;
}

static netrun_status impl_value(netrun_session *s, const char *name, netrun_tensor_view *out) {
    if (!name || !out) return arg_error(s, "%s: NULL argument", "netrun_session_value");
    if (!s->prepared || !s->ran_since_prepare) {
        nr_error(NETRUN_ERR_STATE, "no values yet: run the session first");
        return FAIL(s, NETRUN_ERR_STATE);
    }
    const nr_graph *g = s->model->ir->graph;
    int v = nr_graph_find_value(g, name);
    if (v < 0) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "the model has no value '%s'", name);
        return FAIL(s, NETRUN_ERR_INVALID_ARGUMENT);
    }
    nr_svalue *sv = &s->values[v];
    int produced = sv->is_const || sv->graph_input >= 0 || sv->producer >= 0 || sv->graph_output >= 0;
    if (!produced || (!s->keep_values && !sv->is_const && sv->graph_input < 0 && sv->graph_output < 0)) {
        nr_error(NETRUN_ERR_STATE, "value '%s' is not kept after a run: set the option debug.keep_values=1", name);
        return FAIL(s, NETRUN_ERR_STATE);
    }
    if (s->mb && sv->graph_output >= 0) return impl_output(s, sv->graph_output, out);
    memset(out, 0, sizeof *out);
    out->name = g->values[v].name;
    out->dtype = sv->desc.dtype;
    out->rank = sv->desc.rank;
    memcpy(out->dims, sv->desc.dims, sizeof out->dims);
    out->nbytes = sv->nbytes;
    if (s->mb && sv->graph_input >= 0) { /* the whole batch, as set */
        out->dims[0] = s->mb_n;
        out->nbytes = s->inputs[sv->graph_input].nbytes;
        out->data = s->inputs[sv->graph_input].data;
    } else if (sv->is_const) out->data = sv->desc.const_data;
    else if (sv->home == NR_HOST_DOMAIN) {
        netrun_tensor t;
        nr_value_tensor(s, v, NR_HOST_DOMAIN, &t);
        out->data = t.data;
    } else {
        netrun_status st = nr_host_value(s, v);
        if (st != NETRUN_OK) return FAIL(s, st);
        out->data = sv->host_copy;
    }
    return NETRUN_OK;
}

static const char *impl_micro_batch(netrun_session *s, int *images) {
    if (images) *images = s->prepared ? s->mb : 0;
    return s->prepared ? s->mb_note : "";
}

static int impl_node_io(netrun_session *s, int node, int output, int k, const char **value_name) {
    if (!s->prepared || node < 0 || node >= s->n_snodes) return -1;
    const nr_graph *g = s->model->ir->graph;
    const nr_node *nd = &g->nodes[s->snodes[node].node];
    int n = output ? nd->n_outputs : nd->n_inputs;
    if (value_name && k >= 0 && k < n) {
        int v = output ? nd->outputs[k] : nd->inputs[k];
        *value_name = v >= 0 ? g->values[v].name : "";
    }
    return n;
}

/* Appends src to buf[*len..size) without overflowing: the crash report below must not call snprintf. */
static void act_put(char *buf, size_t size, size_t *len, const char *src) {
    for (; src && *src && *len + 1 < size; src++) buf[(*len)++] = *src;
    buf[*len] = 0;
}

size_t netrun_session_activity(const netrun_session *s, char *buf, size_t size) {
    if (!buf || !size) return 0;
    size_t n = 0;
    buf[0] = 0;
    if (!s) return 0;
    int phase = s->act_phase, node = s->act_node, slot = s->act_slot;
    if (phase == NR_ACT_IDLE) node = slot = -1;
    const nr_graph *g = s->model && s->model->ir ? s->model->ir->graph : NULL;
    const nr_node *nd = g && node >= 0 && node < g->n_nodes ? &g->nodes[node] : NULL;
    const char *be = slot >= 0 && slot < s->n_slots && s->slots[slot].be ? s->slots[slot].be->name
                     : slot == NR_SLOT_RUNTIME                            ? "the runtime (control flow)"
                                                                          : NULL;
    static const char *const what[] = {
        [NR_ACT_IDLE] = "idle", [NR_ACT_INIT_BACKEND] = "preparing: initialising backend",
        [NR_ACT_FOLD] = "preparing: computing a constant node",
        [NR_ACT_UPLOAD] = "preparing: uploading weights to backend", [NR_ACT_CREATE_KERNEL] = "preparing node",
        [NR_ACT_RUN_KERNEL] = "running node", [NR_ACT_COPY] = "copying a value between devices",
        [NR_ACT_GRAPH] = "launching a device graph on backend"};
    act_put(buf, size, &n, phase >= 0 && phase <= NR_ACT_GRAPH ? what[phase] : "?");
    if (nd) {
        act_put(buf, size, &n, " '");
        act_put(buf, size, &n, nd->name && *nd->name ? nd->name : "(unnamed)");
        act_put(buf, size, &n, "' (");
        act_put(buf, size, &n, nd->op_type);
        act_put(buf, size, &n, ")");
        if (be) act_put(buf, size, &n, " on backend");
    }
    if (be) {
        act_put(buf, size, &n, " '");
        act_put(buf, size, &n, be);
        act_put(buf, size, &n, "'");
    }
    return n;
}

const char *netrun_session_prepare_note(const netrun_session *s) { return s ? s->prepare_note : ""; }

/* ---- the public calls: one thread at a time per session ----
 * A session is used by one thread at a time (netrun.h). Every call below takes the session's busy flag on entry
 * and gives it back on return; a call that finds it taken (another thread is inside a call on this session) is
 * refused with NETRUN_ERR_STATE before it touches anything, so misuse never corrupts a run or its outputs. Its
 * message goes to netrun_last_error() only: the session's error buffer belongs to the thread that is inside.
 * destroy is not guarded: destroying a session another thread uses cannot be made safe by a flag in it. */
static int enter(const netrun_session *s, const char *fn) {
    netrun_session *m = (netrun_session *)s; /* the flag is the only thing a const getter writes */
    int idle = 0;
    if (atomic_compare_exchange_strong(&m->busy, &idle, 1)) return 1;
    nr_error(NETRUN_ERR_STATE, "%s: the session is in use by another thread (a session takes one call at a time; "
             "give each thread its own session)", fn);
    return 0;
}

static void leave(const netrun_session *s) { atomic_store(&((netrun_session *)s)->busy, 0); }

#define GUARDED(fn, call)                                                                                       \
    do {                                                                                                        \
        if (!s) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: session is NULL", fn);                        \
        if (!enter(s, fn)) return NETRUN_ERR_STATE;                                                             \
        netrun_status st_ = (call);                                                                             \
        leave(s);                                                                                               \
        return st_;                                                                                             \
    } while (0)

/* The calls that would touch what an asynchronous run in flight uses (inputs, outputs, the plan): refused until
 * netrun_session_wait. */
#define GUARDED_IDLE(fn, call)                                                                                  \
    do {                                                                                                        \
        if (!s) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s: session is NULL", fn);                        \
        if (!enter(s, fn)) return NETRUN_ERR_STATE;                                                             \
        netrun_status st_;                                                                                      \
        if (s->pending) {                                                                                       \
            nr_error(NETRUN_ERR_STATE, "%s: a run started by netrun_session_run_async is in flight: call "        \
                     "netrun_session_wait first", fn);                                                          \
            st_ = FAIL(s, NETRUN_ERR_STATE);                                                                    \
        } else                                                                                                  \
            st_ = (call);                                                                                       \
        leave(s);                                                                                               \
        return st_;                                                                                             \
    } while (0)

/* For the calls that return a count or a string: the value when the session is NULL or busy. */
#define GUARDED_VALUE(fn, call, none)                                                                          \
    do {                                                                                                        \
        if (!s || !enter(s, fn)) return none;                                                                   \
        __typeof__(call) v_ = (call);                                                                           \
        leave(s);                                                                                               \
        return v_;                                                                                              \
    } while (0)

netrun_status netrun_session_input_info(netrun_session *s, int index, netrun_tensor_info *info) {
    GUARDED("netrun_session_input_info", impl_input_info(s, index, info));
}
netrun_status netrun_session_output_info(netrun_session *s, int index, netrun_tensor_info *info) {
    GUARDED("netrun_session_output_info", impl_output_info(s, index, info));
}
netrun_status netrun_session_set_dim(netrun_session *s, const char *name, int64_t value) {
    GUARDED_IDLE("netrun_session_set_dim", impl_set_dim(s, name, value));
}
netrun_status netrun_session_set_input(netrun_session *s, const char *name, netrun_dtype dtype, int rank,
                                       const int64_t *dims, const void *data, size_t nbytes) {
    GUARDED_IDLE("netrun_session_set_input", impl_set_input(s, name, dtype, rank, dims, data, nbytes, 0, 0, 0));
}
netrun_status netrun_session_bind_input(netrun_session *s, const char *name, netrun_dtype dtype, int rank,
                                        const int64_t *dims, const void *data, size_t nbytes) {
    GUARDED_IDLE("netrun_session_bind_input", impl_set_input(s, name, dtype, rank, dims, data, nbytes, 1, 0, 0));
}
netrun_status netrun_session_prepare(netrun_session *s) { GUARDED_IDLE("netrun_session_prepare", impl_prepare(s)); }
netrun_status netrun_session_run(netrun_session *s) { GUARDED_IDLE("netrun_session_run", impl_run(s)); }
netrun_status netrun_session_output(netrun_session *s, int index, netrun_tensor_view *out) {
    GUARDED_IDLE("netrun_session_output", impl_output(s, index, out));
}
netrun_status netrun_session_output_by_name(netrun_session *s, const char *name, netrun_tensor_view *out) {
    GUARDED_IDLE("netrun_session_output_by_name", impl_output_by_name(s, name, out));
}
netrun_status netrun_session_value(netrun_session *s, const char *name, netrun_tensor_view *out) {
    GUARDED_IDLE("netrun_session_value", impl_value(s, name, out));
}
netrun_status netrun_session_node_info(const netrun_session *cs, int index, netrun_node_info *info) {
    netrun_session *s = (netrun_session *)cs;
    GUARDED("netrun_session_node_info", impl_node_info(s, index, info));
}
netrun_status netrun_session_get_stats(const netrun_session *cs, netrun_session_stats *stats) {
    netrun_session *s = (netrun_session *)cs;
    /* the struct as netrun 0.7 laid it out: callers built against that header pass a smaller one */
    GUARDED("netrun_session_get_stats", impl_get_stats(s, stats, offsetof(netrun_session_stats, h2d_bytes)));
}
netrun_status netrun_session_get_stats_ex(const netrun_session *cs, netrun_session_stats *stats, size_t size) {
    netrun_session *s = (netrun_session *)cs;
    GUARDED("netrun_session_get_stats_ex", impl_get_stats(s, stats, size));
}
netrun_status netrun_session_bind_input_device(netrun_session *s, const char *name, netrun_dtype dtype, int rank,
                                               const int64_t *dims, netrun_memory_type memory_type, int device,
                                               void *data, size_t nbytes) {
    GUARDED_IDLE("netrun_session_bind_input_device",
                 impl_set_input(s, name, dtype, rank, dims, data, nbytes, 2, memory_type, device));
}
netrun_status netrun_session_bind_output_device(netrun_session *s, const char *name, netrun_memory_type memory_type,
                                                int device, void *data, size_t capacity) {
    GUARDED_IDLE("netrun_session_bind_output_device",
                 impl_bind_output_device(s, name, memory_type, device, data, capacity));
}
netrun_status netrun_session_output_device(netrun_session *s, int index, netrun_device_view *out) {
    GUARDED_IDLE("netrun_session_output_device", impl_output_device(s, index, out));
}
netrun_status netrun_session_set_stream(netrun_session *s, netrun_memory_type memory_type, void *stream) {
    GUARDED_IDLE("netrun_session_set_stream", impl_set_stream(s, memory_type, stream));
}
netrun_status netrun_session_run_async(netrun_session *s) { GUARDED_IDLE("netrun_session_run_async", impl_run_async(s)); }
netrun_status netrun_session_wait(netrun_session *s) { GUARDED("netrun_session_wait", impl_wait(s)); }
netrun_status netrun_session_set_profiling(netrun_session *s, int on) {
    GUARDED_IDLE("netrun_session_set_profiling", impl_set_profiling(s, on));
}
netrun_status netrun_session_profile_get(const netrun_session *cs, int index, netrun_profile_event *event) {
    netrun_session *s = (netrun_session *)cs;
    GUARDED("netrun_session_profile_get", impl_profile_get(s, index, event));
}
int netrun_session_node_count(const netrun_session *cs) {
    netrun_session *s = (netrun_session *)cs;
    GUARDED_VALUE("netrun_session_node_count", impl_node_count(s), 0);
}
int netrun_session_profile_count(const netrun_session *cs) {
    netrun_session *s = (netrun_session *)cs;
    GUARDED_VALUE("netrun_session_profile_count", impl_profile_count(s), 0);
}
int netrun_session_node_io(const netrun_session *cs, int node, int output, int k, const char **value_name) {
    netrun_session *s = (netrun_session *)cs;
    GUARDED_VALUE("netrun_session_node_io", impl_node_io(s, node, output, k, value_name), -1);
}
const char *netrun_session_micro_batch(const netrun_session *cs, int *images) {
    netrun_session *s = (netrun_session *)cs;
    if (images) *images = 0;
    GUARDED_VALUE("netrun_session_micro_batch", impl_micro_batch(s, images), "");
}

/* ---- the executor's way into bodies' sessions (control_flow.h): the calls above without the public guard ---- */

static netrun_status body_set_input(netrun_session *s, const char *name, netrun_dtype dtype, int rank,
                                    const int64_t *dims, const void *data, size_t nbytes) {
    return impl_set_input(s, name, dtype, rank, dims, data, nbytes, 0, 0, 0);
}

static const nr_body_ops body_ops = {
    .create = netrun_session_create,
    .destroy = netrun_session_destroy,
    .set_input = body_set_input,
    .run = impl_run,
    .output = impl_output,
    .set_profiling = impl_set_profiling,
    .profile_count = impl_profile_count,
    .profile_get = impl_profile_get,
};
