/* Sessions: per-session shapes, placement, memory plan, kernels and the executor. */
#ifndef NR_SESSION_H
#define NR_SESSION_H

#include <stdatomic.h>

#include "backend_registry.h"
#include "model.h"

#include <stdatomic.h>

struct netrun_options {
    char *backends;
    netrun_precision precision;
    int threads;
    int device;
    netrun_workspace_policy policy;
    size_t workspace_limit;
    int strict;
    int allow_fallback; /* a listed backend that is unavailable is skipped instead of failing the session */
    size_t device_memory_budget;
    size_t host_memory_budget;     /* 0: the machine's default (nr_host_memory_default); SIZE_MAX: none */
    char **keys, **values;
    int n_kv;
    int keys_checked; /* option_keys.c: the keys were checked when the session was created (copied into sub-sessions) */
};

netrun_status nr_options_copy(netrun_options *dst, const netrun_options *src);
/* option_keys.c: every key against the runtime's and the session's backends' tables (at session create); and,
 * after placement, a note for each session-wide setting no backend running a node uses. */
netrun_status nr_options_check_keys(netrun_session *s);
/* A runtime key's value (checked when set: a bad one is an error naming the option), or an unknown key of a runtime
 * group; other groups' keys pass (their backends check them when a session is created). */
netrun_status nr_option_check_value(const char *key, const char *value);
void nr_options_note_unused(netrun_session *s);
void nr_options_clear(netrun_options *o);
const char *nr_options_get(const void *opaque, const char *key);
/* Parse a byte count: digits with an optional K/M/G/T (binary) suffix and an optional "B"/"iB"; 0 when invalid. */
int nr_parse_bytes(const char *text, size_t *out);

#define NR_MAX_SLOTS 8      /* backends one session may use */
#define NR_HOST_DOMAIN 0    /* memory domain of the host; device backends get their own */

/* A backend used by the session. */
typedef struct nr_slot {
    const nr_backend *be;
    const netrun_backend_api *api;
    netrun_backend_context *ctx;   /* created at prepare (lazy init) */
    int domain;                    /* memory domain: NR_HOST_DOMAIN for host-memory backends */
    void *arena;                   /* activation arena buffer of this domain (owned by the first slot of it) */
    size_t arena_size;
    void *weights;                 /* constants uploaded into this domain */
    size_t weights_size;
    /* streamed weights (prepare.c, plan_weights): constants copied in before each node that reads them, from a
     * page-locked host block (host_alloc) into one device buffer that all such nodes share */
    void *stream;                  /* device buffer: one or two lanes, each as large as its largest node's */
    size_t stream_size;
    void *stream_host;             /* page-locked host copies of the streamed constants (host_alloc) */
    size_t stream_bytes;           /* bytes copied per run */
    void *workspace;               /* one shared workspace per device */
    size_t workspace_size;
    int n_nodes;
    char unavailable_reason[256];  /* set when named but unavailable */
    int failed;                    /* context_create failed: not used again by this session */
    void *caller_stream;           /* the caller's stream its context queues on (device_io.c); NULL: its own */
    char failed_reason[256];
} nr_slot;

/* Where a value's bytes are in one memory domain. */
typedef struct nr_place {
    int present;
    int in_arena;                  /* planned into the domain's arena */
    size_t offset;                 /* in the arena or weights buffer */
    int first, last;               /* lifetime in steps */
    void *dyn_buffer;              /* allocated per run (dynamic shapes) */
    const void *stream_src;        /* a streamed constant: its page-locked host copy (offset: in the slot's
                                    * stream buffer); NULL for resident constants */
} nr_place;

#define NR_MAX_DOMAINS 4

typedef struct nr_svalue {
    netrun_value_desc desc;        /* current dtype/shape; const_data when constant */
    nr_tensor *folded;             /* owned constant computed at prepare */
    int is_const;
    int dynamic;                   /* shape known only at run time */
    int home;                      /* domain where it is produced */
    int producer;                  /* snode index or -1 */
    int graph_input;               /* index among the graph inputs, or -1 */
    int graph_output;              /* index among the graph outputs, or -1 */
    size_t nbytes;
    nr_place place[NR_MAX_DOMAINS];
    void *host_copy;               /* run-time host copy for dynamic inference (owned) */
    size_t host_copy_size;
    /* memory plan (prepare.c, plan_aliases): a value sharing another's memory in its home domain. alias_root is
     * the value whose arena item holds it (-1: itself), alias_off its byte offset in that item; a root counts its
     * members and keeps the union of their lifetimes. */
    int alias_root;
    size_t alias_off;
    int alias_members;
    int set_first, set_last;
    /* micro-batching of the first nodes only (micro_batch.c): a value of those nodes that a later node reads. It
     * holds the whole batch; the first nodes read and write it a run's slice at a time (nr_mb_sliced). */
    int mb_cut;
} nr_svalue;

typedef struct nr_snode {
    int node;                      /* index in the graph */
    int slot;                      /* backend slot, or -1 when folded */
    char *reason;
    void *params;                  /* session copy, completed by infer */
    nr_alloc_list allocs;
    netrun_kernel *kernel;
    size_t workspace;
    int dynamic;                   /* infer again at each run */
    netrun_value_desc *in_desc;
    netrun_value_desc *out_desc;
    netrun_tensor *in_t;
    netrun_tensor *out_t;
    void *cf;                      /* control flow: its sub-sessions (control_flow.c) */
    void (*cf_free)(struct netrun_session *s, struct nr_snode *sn); /* frees cf: set by its owner */
    char kernel_name[96];          /* what the backend says it chose (kernel_describe) */
    int view;                      /* its outputs are views of its inputs' memory: no kernel, nothing runs */
    int inplace;                   /* outputs written over inputs (reported in kernel_name) */
    /* streamed weights (prepare.c, plan_weights): the stream buffer lane of its streamed constants (-1: none);
     * whether an earlier node prefetched them (else they are copied in order just before it); the node whose
     * constants it prefetches while it runs (-1: none) */
    int stream_lane;
    int stream_prefetched;
    int stream_next;
} nr_snode;

typedef struct nr_prof_event {
    int snode;                     /* kernel: snode index; copy: -1 */
    int value;                     /* copy: the value */
    int from, to;
    uint64_t run;
    double start_ms, duration_ms;
    size_t bytes;
    /* an event of a control-flow body's run (label set): names interned in the session (prof_labels) */
    const char *label, *op, *backend;
    int depth, is_copy;
} nr_prof_event;

/* A string kept for the profile's lifetime (cleared with it): the names of events inside control-flow bodies. */
typedef struct nr_prof_label {
    struct nr_prof_label *next;
    char text[];
} nr_prof_label;

#define NR_SLOT_FOLDED (-1)        /* computed at prepare */
#define NR_SLOT_RUNTIME (-3)       /* run by the runtime itself (control flow) */

typedef enum { NR_STEP_KERNEL = 0, NR_STEP_COPY = 1 } nr_step_kind;

typedef struct nr_step {
    nr_step_kind kind;
    int snode;                     /* KERNEL */
    int value, from, to;           /* COPY: value between domains */
} nr_step;

/* A run of consecutive kernel steps on one device backend that can capture graphs (execute.c). */
/* A byte record of what a segment's kernels are given (execute.c, segment_sig). */
typedef struct nr_sig {
    unsigned char *p;
    size_t len, cap;
    int oom;
} nr_sig;

typedef struct nr_segment {
    int slot;
    int first, end;                /* steps [first, end) */
    void *graph;                   /* captured graph, owned by the slot's backend */
    int state;                     /* 0: not tried yet, 1: captured, -1: runs eagerly (capture failed) */
    /* dynamic sessions (execute.c, run_segment_dynamic): what the steps were given when the graph was captured
     * (shapes, addresses, params), and the captures in a row that the next run did not replay */
    nr_sig sig, cur;               /* cur: this run's, built in place (its buffer kept between runs) */
    int misses;
} nr_segment;

typedef struct nr_input {
    void *data;                    /* session-owned host copy */
    size_t nbytes, cap;
    int pinned_by;                 /* 1 + the slot whose host_alloc gave data (page-locked while prepared); 0: none */
    int external;                  /* data is the caller's (netrun_session_bind_input): never freed, cap 0 */
    int set;
    netrun_dtype dtype;
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    /* The shape the prepared plan was built for, and the dims it leaves to run time (bit d). A control-flow body's
     * inputs change size with the data (the boxes a threshold kept): once one of its dims changes, the body is
     * prepared once more with that dim known only at run time, and then never again for it. */
    int plan_rank;
    int64_t plan_dims[NETRUN_MAX_RANK];
    unsigned run_time_dims;
    /* device_io.c: bound to device memory of this type (0: host). The plan reads it in place in the domain of the
     * backend serving the type (dev_dom); wrapped is that backend's handle for dev_ptr, made at the run (wrapped_ptr:
     * the pointer it wraps, to see a change) */
    netrun_memory_type mem;
    int mem_device;
    void *dev_ptr;
    int dev_dom;
    void *wrapped, *wrapped_ptr;
} nr_input;

typedef struct nr_output {
    void *host;                    /* staging copy when the value lives on a device */
    size_t cap;
    /* device_io.c: delivered in memory of this type (0: host): into the caller's dev_ptr of dev_cap bytes, or left
     * in the session's device memory (dev_ptr NULL). in_place: this run's producer writes straight into it */
    netrun_memory_type mem;
    int mem_device;
    void *dev_ptr;
    size_t dev_cap;
    int dev_dom;
    void *wrapped, *wrapped_ptr;
    int in_place;
} nr_output;

struct netrun_session {
    netrun_model *model;
    netrun_options opts;
    nr_slot slots[NR_MAX_SLOTS];
    /* how control flow drives its bodies' sessions (control_flow.h): set by the session layer at create */
    const struct nr_body_ops *body;
    int n_slots;
    int n_domains;
    int prepared;
    int ran_since_prepare;
    int dynamic;                   /* some shapes are known only at run time */
    /* symbolic dims set by the user */
    char **dim_names;
    int64_t *dim_values;
    int n_dims;
    nr_input *inputs;
    nr_output *outputs;
    nr_svalue *values;
    nr_snode *snodes;
    int n_snodes;
    nr_step *steps;
    int n_steps;
    int domain_slot[NR_MAX_DOMAINS];   /* the slot that owns each device domain's buffers */
    void *host_arena;                   /* activation arena of the host domain */
    size_t host_arena_size;
    void *host_workspace;
    size_t host_workspace_size;
    netrun_session_stats stats;
    uint32_t *avoid;               /* per graph node: slots whose kernel_create failed for it (bit per slot) */
    int fail_slot, fail_node;      /* what the last failed prepare blames (-1: nothing to retry) */
    /* What the session is doing now, for a crash report (netrun_session_activity, read from a signal handler):
     * plain stores of the phase, node and slot, kept as ints so that recording costs nothing on the run path. */
    volatile int act_phase;        /* nr_activity */
    volatile int act_node;         /* graph node, -1: none */
    volatile int act_slot;         /* backend slot, -1: none */
    /* prepares of this session since it was created, of its control-flow bodies that are gone (a re-prepare
     * frees them), and why the last one after the first happened (stats.prepares, netrun_session_prepare_note) */
    uint64_t n_prepares, n_body_prepares_freed;
    int n_moved;                   /* nodes the transfer-aware placement moved off their greedy slot (place.c) */
    char prepare_note[256];
    int keep_values;               /* debug: no memory reuse, every value readable after a run */
    int profiling;
    nr_prof_event *prof;
    int n_prof, cap_prof;          /* a ring of at most prof_max events (option profile.max_events), oldest at
                                    * prof_head; when full, the oldest run's events go (prof_dropped counts them) */
    int prof_head, prof_max;
    uint64_t prof_dropped;
    uint64_t prof_runs;
    double prof_run_start;         /* when the current run started (nr_now_ms): bodies' events are placed from it */
    nr_prof_label *prof_labels;
    char prof_backend[64];         /* scratch for copy event names ("host->cuda") */
    netrun_tensor_info *in_info, *out_info; /* session view of the io (dims filled in) */
    int64_t (*io_dims)[NETRUN_MAX_RANK];
    char error[NR_ERROR_MAX];
    /* Loop iterations of the current run, counted in the top session across nested sub-sessions (the cap
     * limits.max_loop_iterations bounds the whole run, so nested loops cannot multiply it) */
    netrun_session *root;          /* NULL for a top-level session; else the session that runs this one */
    int64_t loop_iterations;
    /* host memory budget (host_memory.c): bytes held by this session and its sub-sessions, counted in the top
     * session; busy: a call is inside the session (concurrent use from another thread is refused) */
    size_t host_bytes;
    atomic_int busy;
    /* device graphs (execute.c): built on the first run after prepare, freed by nr_exec_release */
    nr_segment *segs;
    int n_segs;
    int segs_built;
    int *step_seg;                 /* per step: index of the segment starting there, or -1 */
    int failed_step;               /* the step whose kernel failed in the last run_steps_eager / launch_steps */
    /* device memory fit (prepare.c): weights + activations of the device domains of the last plan, and whether
     * they alone exceed the budget or free memory (no smaller workspace can help then) */
    size_t plan_fixed_bytes;
    int plan_too_big;
    /* micro-batching (micro_batch.c): the plan is built for mb images of the inputs' mb_n, and a run executes it
     * mb_n / mb times, mb_chunk the current one (graph inputs are read at its slice, outputs gathered into the
     * staging buffers of `outputs`). 0: off. Chosen at each prepare; mb_note says what was decided and why. */
    int mb;
    int64_t mb_n;
    int mb_chunk;
    int mb_decided, mb_refused;
    /* mb_head > 0: only snodes [0, mb_head) run in runs of mb images (the steps before mb_head_step), the rest
     * once on the whole batch; the values between them are mb_cut. Chosen for model mb_model. 0: the whole plan. */
    int mb_head, mb_head_step;
    const void *mb_model;
    char mb_note[256];
    int noted_unused;              /* option_keys.c: settings without effect were reported */
    atomic_int cancel;             /* netrun_session_cancel: set by any thread, taken by the run that stops */
    /* device_io.c: the caller's stream per memory type (NULL: the backends' own), an asynchronous run in flight
     * (netrun_session_run_async: its status is given by netrun_session_wait), and when it started */
    void *streams[3];
    int pending;
    double pending_t0;
};



netrun_status nr_session_prepare(netrun_session *s);
void nr_session_unprepare(netrun_session *s);
/* A node's input/output descs from the current values; with_host_values 1: inputs carry their data where it can be
 * read on the host (host values in place, device ones through host_copy, which the caller refreshes); 2: host
 * values only (device ones stay unknown: no copy needed). */
void nr_gather_descs(netrun_session *s, nr_snode *sn, int with_host_values);
/* A node's output descs from the current values (after inference). */
void nr_gather_out_descs(netrun_session *s, nr_snode *sn);
/* Shape/dtype inference of one session node from its input descs; fills out_desc and params. */
netrun_status nr_infer_node(netrun_session *s, nr_snode *sn);
/* Address of a value in a domain for the current run (NULL for non-addressable device memory). */
void nr_value_tensor(netrun_session *s, int value, int domain, netrun_tensor *t);
size_t nr_desc_bytes(const netrun_value_desc *d);
/* The device slot of step k when it is a static-shape kernel step of a device backend with a context, else -1.
 * Device graph segments (execute.c) and streamed-weight prefetch chains (prepare.c) are runs of consecutive
 * steps with the same such slot, so a prefetch is always waited for inside the graph that started it. */
int nr_step_device_slot(const netrun_session *s, int k);
/* Destroy the session's device graphs and segments (before the backends' contexts go). */
void nr_exec_release(netrun_session *s);
/* Free an input's host copy, whichever allocator gave it (page-locked by a device backend, or aligned). */
void nr_input_free_data(netrun_session *s, nr_input *in);
/* Grow an output's host staging buffer to at least need bytes (contents not kept); name is for the error. */
netrun_status nr_output_reserve(netrun_session *s, nr_output *out, size_t need, const char *name);
/* Host memory budget (host_memory.c): the budget in bytes (SIZE_MAX: none) and the machine's default; reserve
 * fails with the numbers when bytes would take the session past it; charge counts without checking (memory
 * moved, not added); alloc/free = reserve + 64-byte aligned allocation (NULL with the error recorded). */
size_t nr_host_budget(const netrun_session *s);
size_t nr_host_memory_default(void);
netrun_status nr_host_reserve(netrun_session *s, size_t bytes, const char *what);
void nr_host_charge(netrun_session *s, size_t bytes);
void nr_host_unreserve(netrun_session *s, size_t bytes);
void *nr_host_alloc(netrun_session *s, size_t bytes, const char *what);
void nr_host_free(netrun_session *s, void *p, size_t bytes);
/* Forget the recorded profile events (profiling switched on, or the plan they refer to is gone). */
void nr_profile_clear(netrun_session *s);
/* A new event at the end of the profile ring (the oldest run's dropped when full); NULL: out of memory. */
nr_prof_event *nr_profile_push(netrun_session *s);
/* text kept until the profile is cleared, one copy per distinct text; NULL: out of memory */
const char *nr_profile_label(netrun_session *s, const char *text);

/* device_io.c (plan layer): inputs and outputs in the caller's device memory, and the caller's stream.
 * nr_devio_domain: the memory domain whose backend serves a memory type on the session's device, or -1 (why in the
 * error); nr_devio_apply_streams: hand the streams to the contexts (after they are created); nr_devio_release:
 * free the wrapped handles (before the contexts go); nr_devio_begin_run: wrap this run's pointers, check sizes and
 * drop device graphs that captured changed ones; nr_devio_finish_outputs: queue the copies into bound buffers that
 * were not written in place; nr_devio_bound_buffer: the wrapped buffer a value lives in during a run (graph input
 * or in-place output in its home domain), else NULL. */
int nr_devio_domain(netrun_session *s, netrun_memory_type type, const char *what);
int nr_devio_any(const netrun_session *s);
int nr_devio_uses_domain(const netrun_session *s, int dom);
void nr_devio_release_input(netrun_session *s, int i);
void nr_devio_release_output(netrun_session *s, int i);
netrun_status nr_devio_apply_streams(netrun_session *s);
void nr_devio_release(netrun_session *s);
netrun_status nr_devio_begin_run(netrun_session *s);
netrun_status nr_devio_finish_outputs(netrun_session *s);
void *nr_devio_bound_buffer(const netrun_session *s, int value, int dom);
const char *nr_memory_type_name(netrun_memory_type type);

typedef enum {
    NR_ACT_IDLE = 0,
    NR_ACT_INIT_BACKEND,    /* context_create */
    NR_ACT_FOLD,            /* computing a constant node at prepare */
    NR_ACT_UPLOAD,          /* copying weights to a device */
    NR_ACT_CREATE_KERNEL,   /* kernel_create */
    NR_ACT_RUN_KERNEL,      /* kernel_run */
    NR_ACT_COPY,            /* a copy between memory domains */
    NR_ACT_GRAPH,           /* capturing or launching a device graph */
} nr_activity;

static inline void nr_activity_set(netrun_session *s, nr_activity phase, int node, int slot) {
    s->act_phase = (int)phase;
    s->act_node = node;
    s->act_slot = slot;
}

/* Micro-batching of the first nodes only: whether snode sn, one of them, sees value v a run's slice at a time
 * (v holds the whole batch for the nodes after them). */
static inline int nr_mb_sliced(const netrun_session *s, const nr_snode *sn, int v) {
    return s->mb_head > 0 && v >= 0 && s->values[v].mb_cut && sn - s->snodes < s->mb_head;
}

#endif
