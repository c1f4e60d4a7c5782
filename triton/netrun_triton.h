/*
 * netrun_triton.h — the netrun backend for Triton Inference Server: what backend.c (life cycle, model
 * configuration, options) and execute.c (requests: gather, run, scatter) share.
 *
 * Objects: one nt_model per loaded Triton model version (the netrun_model, loaded once, shared by every
 * instance), one nt_instance per Triton model instance (its own netrun sessions, one per input shape seen,
 * kept in a small LRU cache because netrun prepares a plan per shape).
 */
#ifndef NETRUN_TRITON_H
#define NETRUN_TRITON_H

#include <stddef.h>
#include <stdint.h>

#include "netrun.h"
#include "triton_api.h"

enum { NT_WARMUP_NONE, NT_WARMUP_ONE, NT_WARMUP_ALL };

/* One input or output as the model configuration states it (dims without the batch dim). */
typedef struct nt_tensor {
    char *name;
    netrun_dtype dtype;
    TRITONSERVER_DataType ttype;
    int rank;
    int64_t dims[NETRUN_MAX_RANK];  /* -1: any size */
    int reshape_rank;                /* -1: no reshape; else the shape the ONNX model sees (without batch) */
    int64_t reshape[NETRUN_MAX_RANK];
} nt_tensor;

/* netrun options as config.pbtxt's parameters give them; applied per instance (the device comes from Triton). */
typedef struct nt_params {
    char *backends;           /* NULL: by instance kind (KIND_CPU "cpu", KIND_GPU "cuda,cpu") */
    int precision;            /* -1: netrun's default */
    int threads;              /* -1: netrun's default (all cores) */
    int ws_policy;            /* -1: default */
    size_t ws_cap;
    size_t memory_budget;
    int strict;
    int session_cache;        /* sessions kept per instance, one per distinct input shape (0: max(4, max_batch)) */
    int warmup;               /* NT_WARMUP_*: which batch sizes are prepared when an instance loads */
    int n_set;                /* KEY=VALUE settings passed to netrun_options_set */
    char **set_keys, **set_values;
} nt_params;

typedef struct nt_model {
    char *name;
    uint64_t version;
    char *path;               /* the ONNX file */
    netrun_model *net;        /* shared by all instances (netrun models are immutable and thread safe) */
    int max_batch;            /* 0: the model does not batch */
    int n_inputs, n_outputs;
    nt_tensor *inputs, *outputs;
    nt_params params;
} nt_model;

typedef struct nt_session_slot {
    netrun_session *s;
    int64_t *key;             /* rank + dims of every input, in config order; then, for sessions that read inputs
                               * in GPU memory in place, the mask of those inputs */
    int key_len;
    uint64_t last_use;
} nt_session_slot;

typedef struct nt_instance {
    nt_model *model;
    char *name;
    TRITONSERVER_InstanceGroupKind kind;
    int device;
    netrun_options *opts;
    nt_session_slot *slots;
    int n_slots;
    uint64_t tick;
    int n_stage;
    void **stage;             /* per input: gathered batch (host) */
    size_t *stage_cap;
    int64_t no_device_io;     /* inputs whose GPU buffers are copied: the sessions have no backend for CUDA memory */
} nt_instance;

/* backend.c */
TRITONSERVER_Error *nt_error(TRITONSERVER_Error_Code code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void nt_log(TRITONSERVER_LogLevel level, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
TRITONSERVER_DataType nt_triton_dtype(netrun_dtype d);
/* A session of the instance for these input shapes: from the cache or created (the oldest one evicted). */
TRITONSERVER_Error *nt_instance_session(nt_instance *in, const int64_t *key, int key_len, netrun_session **out);
/* Drop the cached session (after a failed run: its state is not trusted again). */
void nt_instance_drop_session(nt_instance *in, netrun_session *s);
uint64_t nt_now_ns(void);

/* cuda_copy.c: copies to and from Triton's GPU buffers through the CUDA runtime the server has loaded */
TRITONSERVER_Error *nt_copy(void *dst, int dst_gpu, const void *src, int src_gpu, size_t bytes);

#endif /* NETRUN_TRITON_H */
