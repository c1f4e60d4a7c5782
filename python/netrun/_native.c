/*
 * netrun._native: the per-call path of the Python package in C (set inputs, run, read outputs), and the owner of
 * each session handle. Everything else (models, options, placement, stats) goes through ctypes in _capi.py: it
 * is called once per session, while run() is called per inference, where ctypes' argument conversion alone
 * cost more than onnxruntime's whole InferenceSession.run (docs/python.md, "Overhead").
 *
 * No numpy C API: arrays are read through the buffer protocol and made by calling numpy.empty / numpy.ndarray,
 * so the module builds against Python's headers only. The GIL is released while inputs are copied and the
 * graph runs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <string.h>

#include "netrun.h"

/* Set once by init() from _api.py. */
static PyObject *np_empty;   /* numpy.empty */
static PyObject *np_ndarray; /* numpy.ndarray (type) */
static PyObject *dtype_of;   /* tuple: netrun dtype -> numpy dtype, or None when numpy has none */
static PyObject *code_of;    /* dict: numpy dtype -> netrun dtype code */
static PyObject *errors;     /* tuple: netrun_status -> exception class */

static PyObject *raise_status(int status, const char *message) {
    PyObject *cls = NULL;
    if (errors && status > 0 && status < PyTuple_GET_SIZE(errors)) cls = PyTuple_GET_ITEM(errors, status);
    if (!cls) cls = PyExc_RuntimeError;
    PyObject *msg = PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace");
    if (msg) {
        PyErr_SetObject(cls, msg);
        Py_DECREF(msg);
    }
    return NULL;
}

/* ---- OutputBuffer: read-only bytes of a session's output, keeping the session alive (copy=False views) ---- */

typedef struct {
    PyObject_HEAD
    PyObject *owner;
    void *data;
    Py_ssize_t len;
} OutputBuffer;

static int outbuf_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    OutputBuffer *b = (OutputBuffer *)self;
    return PyBuffer_FillInfo(view, self, b->data, b->len, 1, flags);
}

static void outbuf_dealloc(PyObject *self) {
    Py_XDECREF(((OutputBuffer *)self)->owner);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs outbuf_as_buffer = {outbuf_getbuffer, NULL};

static PyTypeObject OutputBufferType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "netrun._native.OutputBuffer",
    .tp_basicsize = sizeof(OutputBuffer),
    .tp_dealloc = outbuf_dealloc,
    .tp_as_buffer = &outbuf_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Output memory of a session (read-only); keeps the session alive while an array uses it.",
};

/* ---- SessionHandle: owns one netrun_session ---- */

typedef struct {
    PyObject_HEAD
    netrun_session *s;
    PyObject *bound; /* input name -> the array the session reads in place (netrun_session_bind_input) */
} SessionHandle;

static PyObject *handle_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    unsigned long long ptr;
    if (!PyArg_ParseTuple(args, "K", &ptr)) return NULL;
    if (!ptr) return raise_status(NETRUN_ERR_INVALID_ARGUMENT, "SessionHandle: NULL session");
    SessionHandle *h = (SessionHandle *)type->tp_alloc(type, 0);
    if (h) h->s = (netrun_session *)(uintptr_t)ptr;
    return (PyObject *)h;
}

/* Destroyed when the last reference goes: the Session object, and every view (OutputBuffer) of its outputs. */
static void handle_dealloc(PyObject *self) {
    SessionHandle *h = (SessionHandle *)self;
    if (h->s) {
        netrun_session *s = h->s;
        h->s = NULL;
        Py_BEGIN_ALLOW_THREADS netrun_session_destroy(s);
        Py_END_ALLOW_THREADS
    }
    Py_CLEAR(h->bound); /* after the session: it no longer reads them */
    Py_TYPE(self)->tp_free(self);
}

static PyObject *handle_ptr(PyObject *self, void *closure) {
    return PyLong_FromVoidPtr(((SessionHandle *)self)->s);
}

/* One input, ready for netrun_session_set_input. */
typedef struct {
    const char *name;
    int dtype;
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    Py_buffer buf;
    PyObject *array; /* owned: the array read (the caller's, or normalize's result) */
    PyObject *key;   /* owned: keeps name valid even if normalize's callbacks change the dict */
} feed;

/* Fills f from value when it is a C-contiguous ndarray of a dtype netrun has; returns 1, 0 (not that), -1 (error). */
static int feed_from_array(feed *f, PyObject *value) {
    if (Py_TYPE(value) != (PyTypeObject *)np_ndarray) return 0;
    PyObject *dt = PyObject_GetAttrString(value, "dtype");
    if (!dt) return -1;
    PyObject *code = PyDict_GetItemWithError(code_of, dt);
    Py_DECREF(dt);
    if (!code) return PyErr_Occurred() ? -1 : 0;
    if (PyObject_GetBuffer(value, &f->buf, PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Clear(); /* not contiguous: normalize copies it */
        return 0;
    }
    if (f->buf.ndim > NETRUN_MAX_RANK) {
        PyBuffer_Release(&f->buf);
        PyErr_Format(PyTuple_GET_ITEM(errors, NETRUN_ERR_INVALID_ARGUMENT),
                     "input '%s' has %d dimensions, netrun handles at most %d", f->name, f->buf.ndim, NETRUN_MAX_RANK);
        return -1;
    }
    f->dtype = (int)PyLong_AsLong(code);
    f->rank = f->buf.ndim;
    for (int d = 0; d < f->rank; d++) f->dims[d] = (int64_t)f->buf.shape[d];
    Py_INCREF(value);
    f->array = value;
    return 1;
}

/* Output index -> numpy array (a copy, or a read-only view of the session's memory). */
static PyObject *output_array(SessionHandle *h, int index, int copy) {
    netrun_tensor_view v;
    netrun_status st = netrun_session_output(h->s, index, &v);
    if (st != NETRUN_OK) return raise_status(st, netrun_session_error(h->s));
    PyObject *dt = v.dtype > 0 && v.dtype < PyTuple_GET_SIZE(dtype_of) ? PyTuple_GET_ITEM(dtype_of, v.dtype) : Py_None;
    if (dt == Py_None) {
        PyErr_Format(PyTuple_GET_ITEM(errors, NETRUN_ERR_UNSUPPORTED),
                     "output '%s' is %s, which numpy has no type for (pip install ml_dtypes gives it one)", v.name,
                     netrun_dtype_name(v.dtype));
        return NULL;
    }
    PyObject *shape = PyTuple_New(v.rank);
    if (!shape) return NULL;
    for (int d = 0; d < v.rank; d++) PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(v.dims[d]));
    PyObject *arr = NULL;
    if (copy) {
        arr = PyObject_CallFunctionObjArgs(np_empty, shape, dt, NULL);
        Py_buffer b;
        if (arr && PyObject_GetBuffer(arr, &b, PyBUF_SIMPLE | PyBUF_WRITABLE) == 0) {
            if ((size_t)b.len == v.nbytes) {
                if (v.nbytes) memcpy(b.buf, v.data, v.nbytes);
            } else {
                PyErr_Format(PyTuple_GET_ITEM(errors, NETRUN_ERR_INTERNAL),
                             "output '%s': %zu bytes, numpy made %zd for that shape", v.name, v.nbytes, b.len);
                Py_CLEAR(arr);
            }
            PyBuffer_Release(&b);
        } else
            Py_CLEAR(arr);
    } else {
        OutputBuffer *ob = PyObject_New(OutputBuffer, &OutputBufferType);
        if (ob) {
            Py_INCREF(h);
            ob->owner = (PyObject *)h;
            ob->data = (void *)v.data;
            ob->len = (Py_ssize_t)v.nbytes;
            arr = PyObject_CallFunctionObjArgs(np_ndarray, shape, dt, (PyObject *)ob, NULL);
            Py_DECREF(ob);
        }
    }
    Py_DECREF(shape);
    return arr;
}

/* run(feeds: dict, outputs: tuple[int] | None, copy: bool, normalize) -> list of arrays.
 * normalize(name, value) turns anything that is not a C-contiguous ndarray of a netrun dtype into one, or
 * raises the error that says why it cannot. */
static PyObject *handle_run(PyObject *self, PyObject *args) {
    SessionHandle *h = (SessionHandle *)self;
    PyObject *feeds, *outs, *normalize;
    int copy;
    if (!PyArg_ParseTuple(args, "O!OpO", &PyDict_Type, &feeds, &outs, &copy, &normalize)) return NULL;
    if (!h->s) return raise_status(NETRUN_ERR_STATE, "the session is closed");
    Py_ssize_t n = PyDict_GET_SIZE(feeds);
    feed stack[4], *fs = n <= 4 ? stack : PyMem_Calloc((size_t)n, sizeof(feed));
    if (!fs) return PyErr_NoMemory();
    memset(fs, 0, sizeof(feed) * (size_t)(n <= 4 ? 4 : n));
    PyObject *result = NULL, *key, *value;
    Py_ssize_t pos = 0, got = 0;
    while (PyDict_Next(feeds, &pos, &key, &value)) {
        if (got == n) { /* a __dlpack__ or __array__ of a value added feeds */
            PyErr_SetString(PyExc_RuntimeError, "feeds changed size during run");
            goto done;
        }
        feed *f = &fs[got];
        if (!PyUnicode_Check(key)) {
            PyErr_Format(PyTuple_GET_ITEM(errors, NETRUN_ERR_INVALID_ARGUMENT), "input names are str, not %s",
                         Py_TYPE(key)->tp_name);
            goto done;
        }
        if (!(f->name = PyUnicode_AsUTF8(key))) goto done;
        Py_INCREF(key);
        f->key = key;
        int r = feed_from_array(f, value);
        if (r == 0) {
            PyObject *arr = PyObject_CallFunctionObjArgs(normalize, key, value, NULL);
            if (!arr) goto done;
            r = feed_from_array(f, arr);
            Py_DECREF(arr);
            if (r == 0) {
                PyErr_Format(PyTuple_GET_ITEM(errors, NETRUN_ERR_INTERNAL), "input '%s': normalize gave no array",
                             f->name);
                goto done;
            }
        }
        if (r < 0) goto done;
        got++;
    }
    netrun_status st = NETRUN_OK;
    /* bound, not copied: the session reads the arrays in place (the C library copies those not 64-byte aligned);
     * each stays referenced, by input name, until that input is bound again or the session goes */
    if (!h->bound && !(h->bound = PyDict_New())) goto done;
    for (Py_ssize_t i = 0; i < got; i++)
        if (PyDict_SetItem(h->bound, fs[i].key, fs[i].array) < 0) goto done;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < got && st == NETRUN_OK; i++)
        st = netrun_session_bind_input(h->s, fs[i].name, (netrun_dtype)fs[i].dtype, fs[i].rank, fs[i].dims,
                                       fs[i].buf.buf, (size_t)fs[i].buf.len);
    if (st == NETRUN_OK) st = netrun_session_run(h->s);
    Py_END_ALLOW_THREADS
    if (st != NETRUN_OK) {
        raise_status(st, netrun_session_error(h->s));
        goto done;
    }
    if (outs == Py_None) {
        int no = netrun_session_output_count(h->s);
        if (!(result = PyList_New(no))) goto done;
        for (int i = 0; i < no; i++) {
            PyObject *a = output_array(h, i, copy);
            if (!a) {
                Py_CLEAR(result);
                goto done;
            }
            PyList_SET_ITEM(result, i, a);
        }
    } else {
        PyObject *seq = PySequence_Fast(outs, "outputs must be a sequence of indices");
        if (!seq) goto done;
        Py_ssize_t no = PySequence_Fast_GET_SIZE(seq);
        if ((result = PyList_New(no)))
            for (Py_ssize_t i = 0; i < no; i++) {
                long index = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
                PyObject *a = index == -1 && PyErr_Occurred() ? NULL : output_array(h, (int)index, copy);
                if (!a) {
                    Py_CLEAR(result);
                    break;
                }
                PyList_SET_ITEM(result, i, a);
            }
        Py_DECREF(seq);
    }
done:
    for (Py_ssize_t i = 0; i < n; i++) {
        if (fs[i].array) {
            PyBuffer_Release(&fs[i].buf);
            Py_DECREF(fs[i].array);
        }
        Py_XDECREF(fs[i].key);
    }
    if (fs != stack) PyMem_Free(fs);
    return result;
}

/* output(index, copy) -> array: an output of the last run again (no run). */
static PyObject *handle_output(PyObject *self, PyObject *args) {
    SessionHandle *h = (SessionHandle *)self;
    int index, copy;
    if (!PyArg_ParseTuple(args, "ip", &index, &copy)) return NULL;
    if (!h->s) return raise_status(NETRUN_ERR_STATE, "the session is closed");
    return output_array(h, index, copy);
}

static PyMethodDef handle_methods[] = {
    {"run", handle_run, METH_VARARGS, "run(feeds, outputs, copy, normalize) -> list of arrays"},
    {"output", handle_output, METH_VARARGS, "output(index, copy) -> array of the last run"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef handle_getset[] = {
    {"ptr", handle_ptr, NULL, "the netrun_session pointer, for ctypes calls", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SessionHandleType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "netrun._native.SessionHandle",
    .tp_basicsize = sizeof(SessionHandle),
    .tp_dealloc = handle_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SessionHandle(ptr): takes ownership of a netrun_session; destroys it when the last reference goes.",
    .tp_methods = handle_methods,
    .tp_getset = handle_getset,
    .tp_new = handle_new,
};

/* ---- module functions ---- */

static PyObject *mod_init(PyObject *mod, PyObject *args) {
    PyObject *e, *a, *d, *c, *x;
    if (!PyArg_ParseTuple(args, "OOO!O!O!", &e, &a, &PyTuple_Type, &d, &PyDict_Type, &c, &PyTuple_Type, &x))
        return NULL;
    if (PyTuple_GET_SIZE(x) <= NETRUN_ERR_INTERNAL)
        return PyErr_Format(PyExc_ValueError, "init: %d exception classes needed", NETRUN_ERR_INTERNAL + 1);
    Py_INCREF(e), Py_INCREF(a), Py_INCREF(d), Py_INCREF(c), Py_INCREF(x);
    Py_XSETREF(np_empty, e);
    Py_XSETREF(np_ndarray, a);
    Py_XSETREF(dtype_of, d);
    Py_XSETREF(code_of, c);
    Py_XSETREF(errors, x);
    Py_RETURN_NONE;
}

/* The file libnetrun was loaded from (ctypes opens the same one). */
static PyObject *mod_library_path(PyObject *mod, PyObject *unused) {
    Dl_info info;
    if (!dladdr((void *)netrun_version, &info) || !info.dli_fname)
        return PyErr_Format(PyExc_OSError, "dladdr cannot tell where libnetrun was loaded from");
    return PyUnicode_DecodeFSDefault(info.dli_fname);
}

/* sizeof of the public structs, so that a test can check _capi.py's ctypes layouts against the header. */
static PyObject *mod_struct_sizes(PyObject *mod, PyObject *unused) {
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n}", "tensor_info", (Py_ssize_t)sizeof(netrun_tensor_info),
                         "tensor_view", (Py_ssize_t)sizeof(netrun_tensor_view), "node_info",
                         (Py_ssize_t)sizeof(netrun_node_info), "profile_event", (Py_ssize_t)sizeof(netrun_profile_event),
                         "op_support_info", (Py_ssize_t)sizeof(netrun_op_support_info), "session_stats",
                         (Py_ssize_t)sizeof(netrun_session_stats), "backend_info",
                         (Py_ssize_t)sizeof(netrun_backend_info), "load_limits", (Py_ssize_t)sizeof(netrun_load_limits),
                         "device_view", (Py_ssize_t)sizeof(netrun_device_view));
}

static PyMethodDef mod_methods[] = {
    {"init", mod_init, METH_VARARGS, "init(numpy.empty, numpy.ndarray, dtypes, codes, errors)"},
    {"library_path", mod_library_path, METH_NOARGS, "the path libnetrun was loaded from"},
    {"struct_sizes", mod_struct_sizes, METH_NOARGS, "sizeof of the public structs of netrun.h"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "netrun._native", "The per-call path of the netrun package (see _api.py).", -1,
    mod_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&SessionHandleType) < 0 || PyType_Ready(&OutputBufferType) < 0) return NULL;
    PyObject *m = PyModule_Create(&native_module);
    if (!m) return NULL;
    Py_INCREF(&SessionHandleType);
    if (PyModule_AddObject(m, "SessionHandle", (PyObject *)&SessionHandleType) < 0) {
        Py_DECREF(&SessionHandleType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&OutputBufferType);
    if (PyModule_AddObject(m, "OutputBuffer", (PyObject *)&OutputBufferType) < 0) {
        Py_DECREF(&OutputBufferType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
