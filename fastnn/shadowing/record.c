/* Shadow mode's wrapper of a device backend's hook, for its common call (fastnn.shadowing.
 * record): a callable object, called with the hook's arguments, that does in C what
 * session.py's Python wrapper does for a call that writes nothing, returns no host array
 * and is checked (sample 1, the hook among ``ops``): it numbers the call, runs the hook,
 * holds the call for the next batch (batch.Pending, its fields set through their slot
 * descriptors, the user's line found by walking the stack as blame.walk does), notes
 * which call made the output (through blame.Producers) and runs the lagging checks. Any
 * other call (keyword arguments, shadowing paused) goes to the Python wrapper or to the
 * hook itself, as the Python wrapper would send it. Loaded with ctypes.PyDLL: it runs
 * holding the GIL, and an error raises, never crashes. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <structmember.h>

#include "attrs.c"

/* set once by fastnn_record_init */
static PyObject *pending_type;   /* batch.Pending */
static PyObject *fields;         /* its slot descriptors, in the order of FIELD below */
static PyObject *frozen_fn;      /* batch.frozen */
static PyObject *kind_fn;        /* blame._kind */
static PyObject *inside;         /* blame._inside: id(code) -> 0, 1 or 2 */
static PyObject *node_fn;        /* the tape's current node, from a _backward_pass frame */
static PyObject *batch_module;   /* fastnn.shadowing.batch: its BATCH and LAG_ELEMENTS, read
                                  * at each call (a test may change them) */

enum { F_BACKEND, F_SPEC, F_ARGS, F_OUT, F_HOST, F_ORIGINALS, F_MANY, F_CALL, F_STEP,
       F_OP_IN_STEP, F_PRODUCERS, F_CODE, F_OFFSET, F_NODE, N_FIELDS };

static PyObject *s_on, *s_calls, *s_pending, *s_step, *s_step_start, *s_producers, *s_ready,
    *s_flush, *s_settle_ready, *s_put, *s_note, *s_shape, *s_batch, *s_lag;

typedef struct {
    PyObject_HEAD
    PyObject *session, *backend, *spec, *fn, *originals, *slow, *hook;
    int simple;  /* spec.simple: only single arrays and plain values among the arguments */
    vectorcallfunc vectorcall;
} Recorder;

static int set_field(PyObject *obj, int field, PyObject *value) {
    PyObject *descr = PyTuple_GET_ITEM(fields, field);
    return Py_TYPE(descr)->tp_descr_set(descr, obj, value);
}

/* frame.f_lasti: the offset in bytes of the instruction the frame runs (blame.line_at makes
 * it a line when a mismatch asks; PyFrame_GetLineNumber scans the code's line table from
 * its start at each call); -2 with an error raised */
static int last_offset(PyFrameObject *frame) {
#if PY_VERSION_HEX >= 0x030B0000
    return PyFrame_GetLasti(frame);
#else
    PyObject *value = PyObject_GetAttrString((PyObject *)frame, "f_lasti");
    if (!value)
        return -2;
    long offset = PyLong_AsLong(value);
    Py_DECREF(value);
    return offset == -1 && PyErr_Occurred() ? -2 : (int)offset;
#endif
}

/* (code, offset, node) of the first frame outside fastnn above ``frame`` and the tape's node
 * (blame.walk): a new tuple */
static PyObject *walk(PyFrameObject *frame) {
    PyObject *node = Py_NewRef(Py_None), *found = NULL;
    Py_XINCREF(frame);
    while (frame) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        PyObject *key = PyLong_FromVoidPtr(code), *kind = NULL;
        if (key) {
            kind = PyDict_GetItemWithError(inside, key);
            if (kind)
                Py_INCREF(kind);
            else if (!PyErr_Occurred())
                kind = PyObject_CallOneArg(kind_fn, (PyObject *)code);
            Py_DECREF(key);
        }
        long k = kind ? PyLong_AsLong(kind) : -1;
        Py_XDECREF(kind);
        if (k == -1 && PyErr_Occurred()) {
            Py_DECREF(code);
            goto failed;
        }
        if (k == 0) {
            int offset = last_offset(frame);
            found = offset == -2 ? NULL : Py_BuildValue("(OiO)", code, offset, node);
            Py_DECREF(code);
            Py_DECREF(frame);
            Py_DECREF(node);
            return found;
        }
        Py_DECREF(code);
        if (k == 2 && node == Py_None) {
            PyObject *got = PyObject_CallOneArg(node_fn, (PyObject *)frame);
            if (!got)
                goto failed;
            Py_SETREF(node, got);
        }
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    found = Py_BuildValue("(OiO)", Py_None, 0, node);
    Py_DECREF(node);
    return found;
failed:
    Py_DECREF(frame);
    Py_DECREF(node);
    return NULL;
}

static Py_ssize_t attr_index(PyObject *o, PyObject *name) {
    PyObject *value = PyObject_GetAttr(o, name);
    if (!value)
        return -1;
    Py_ssize_t i = PyLong_AsSsize_t(value);
    Py_DECREF(value);
    return i;
}

/* session._defer and session._after of a checked call whose hook returned ``out`` */
static int record(Recorder *self, PyObject *const *argv, Py_ssize_t n, PyObject *out,
                  Py_ssize_t index) {
    int done = -1;
    PyObject *args = NULL, *kept = NULL, *pending = NULL, *producers = NULL, *place = NULL,
             *entry = NULL, *number = NULL, *in_step = NULL, *payload = NULL, *ready = NULL;
    if (!(args = PyTuple_New(n)))
        goto out;
    int lists = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(args, i, Py_NewRef(argv[i]));
        lists |= PyList_CheckExact(argv[i]);
    }
    if (!self->simple || lists) {  /* lists the core may reuse are copied */
        PyObject *copied = PyObject_CallOneArg(frozen_fn, args);
        if (!copied)
            goto out;
        Py_SETREF(args, copied);
    }
    int shaped = has_attr(out, s_shape);
    if (shaped < 0)
        goto out;
    kept = shaped ? Py_NewRef(out) : PyObject_CallOneArg(frozen_fn, out);
    if (!kept)
        goto out;
    Py_ssize_t step = attr_index(self->session, s_step), start;
    if ((step == -1 && PyErr_Occurred())
        || ((start = attr_index(self->session, s_step_start)) == -1 && PyErr_Occurred()))
        goto out;
    if (!(pending = PyObject_GetAttr(self->session, s_pending))
        || !(producers = PyObject_GetAttr(self->session, s_producers))
        || !(place = walk(PyEval_GetFrame())))
        goto out;
    if (!PyList_Check(pending)) {
        PyErr_SetString(PyExc_TypeError, "shadow: a pending list that is not a list");
        goto out;
    }
    if (!(number = PyLong_FromSsize_t(index)) || !(in_step = PyLong_FromSsize_t(index - start)))
        goto out;
    PyObject *step_number = PyLong_FromSsize_t(step);
    if (!step_number)
        goto out;
    entry = ((PyTypeObject *)pending_type)->tp_alloc((PyTypeObject *)pending_type, 0);
    if (!entry) {
        Py_DECREF(step_number);
        goto out;
    }
    PyObject *values[N_FIELDS] = {self->backend, self->spec, args, kept, Py_None,
                                  self->originals, Py_False, number, step_number, in_step,
                                  producers, PyTuple_GET_ITEM(place, 0),
                                  PyTuple_GET_ITEM(place, 1), PyTuple_GET_ITEM(place, 2)};
    int failed = 0;
    for (int f = 0; f < N_FIELDS && !failed; f++)
        failed = set_field(entry, f, values[f]) < 0;
    Py_DECREF(step_number);
    if (failed || PyList_Append(pending, entry) < 0)
        goto out;
    Py_ssize_t most = attr_index(batch_module, s_batch);
    if (most == -1 && PyErr_Occurred())
        goto out;
    if (PyList_GET_SIZE(pending) >= most) {
        PyObject *flushed = PyObject_CallMethodNoArgs(self->session, s_flush);
        if (!flushed)
            goto out;
        Py_DECREF(flushed);
    }
    /* _after: the arrays it made, then the lagging checks while the device runs it */
    PyObject *noted = NULL;
    if (!shaped)
        noted = PyObject_CallMethodObjArgs(producers, s_note, out, number, self->hook, NULL);
    else if ((payload = PyTuple_Pack(2, number, self->hook)))
        noted = PyObject_CallMethodObjArgs(producers, s_put, out, payload, NULL);
    if (!noted)
        goto out;
    Py_DECREF(noted);
    if (!(ready = PyObject_GetAttr(self->session, s_ready)))
        goto out;
    int waiting = PyObject_IsTrue(ready);
    if (waiting < 0)
        goto out;
    if (waiting) {
        PyObject *lag = PyObject_GetAttr(batch_module, s_lag), *ran = NULL;
        if (lag)
            ran = PyObject_CallMethodOneArg(self->session, s_settle_ready, lag);
        Py_XDECREF(lag);
        if (!ran)
            goto out;
        Py_DECREF(ran);
    }
    done = 0;
out:
    Py_XDECREF(args);
    Py_XDECREF(kept);
    Py_XDECREF(pending);
    Py_XDECREF(producers);
    Py_XDECREF(place);
    Py_XDECREF(entry);
    Py_XDECREF(number);
    Py_XDECREF(in_step);
    Py_XDECREF(payload);
    Py_XDECREF(ready);
    return done;
}

static PyObject *recorder_call(PyObject *callable, PyObject *const *argv, size_t nargsf,
                               PyObject *kwnames) {
    Recorder *self = (Recorder *)callable;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (kwnames && PyTuple_GET_SIZE(kwnames))
        return PyObject_Vectorcall(self->slow, argv, nargsf, kwnames);
    PyObject *on = PyObject_GetAttr(self->session, s_on);
    if (!on)
        return NULL;
    int running = PyObject_IsTrue(on);
    Py_DECREF(on);
    if (running < 0)
        return NULL;
    if (!running)
        return PyObject_Vectorcall(self->fn, argv, n, NULL);
    Py_ssize_t index = attr_index(self->session, s_calls);
    if (index == -1 && PyErr_Occurred())
        return NULL;
    PyObject *next = PyLong_FromSsize_t(index + 1);
    if (!next)
        return NULL;
    int stored = PyObject_SetAttr(self->session, s_calls, next);
    Py_DECREF(next);
    if (stored < 0)
        return NULL;
    PyObject *out = PyObject_Vectorcall(self->fn, argv, n, NULL);
    if (!out)
        return NULL;
    if (record(self, argv, n, out, index) < 0)
        Py_CLEAR(out);
    return out;
}

static int recorder_traverse(Recorder *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->session);
    Py_VISIT(self->backend);
    Py_VISIT(self->spec);
    Py_VISIT(self->fn);
    Py_VISIT(self->originals);
    Py_VISIT(self->slow);
    Py_VISIT(self->hook);
    return 0;
}

static int recorder_clear(Recorder *self) {
    Py_CLEAR(self->session);
    Py_CLEAR(self->backend);
    Py_CLEAR(self->spec);
    Py_CLEAR(self->fn);
    Py_CLEAR(self->originals);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->hook);
    return 0;
}

static void recorder_dealloc(Recorder *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    recorder_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyObject *recorder_wrapped(Recorder *self, void *closure) {
    (void)closure;
    return Py_NewRef(self->fn);
}

static PyObject *recorder_name(Recorder *self, void *closure) {
    (void)closure;
    return Py_NewRef(self->hook);
}

static PyMemberDef recorder_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Recorder, vectorcall), READONLY, NULL},
    {NULL}};

static PyGetSetDef recorder_getset[] = {
    {"__wrapped__", (getter)recorder_wrapped, NULL, "the hook it wraps", NULL},
    {"__name__", (getter)recorder_name, NULL, "the hook's name", NULL},
    {NULL}};

static PyType_Slot recorder_slots[] = {
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_traverse, recorder_traverse},
    {Py_tp_clear, recorder_clear},
    {Py_tp_dealloc, recorder_dealloc},
    {Py_tp_members, recorder_members},
    {Py_tp_getset, recorder_getset},
    {Py_tp_doc, "shadow mode's wrapper of one device hook (fastnn.shadowing.record)"},
    {0, NULL}};

static PyType_Spec recorder_spec = {
    "fastnn.shadowing.record.Recorder", sizeof(Recorder), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, recorder_slots};

static PyObject *recorder_type;

static PyObject *intern(const char *name) { return PyUnicode_InternFromString(name); }

/* Called once: what the wrappers need of batch.py and blame.py; returns None. */
PyObject *fastnn_record_init(PyObject *pending, PyObject *descriptors, PyObject *frozen,
                             PyObject *kind, PyObject *inside_table, PyObject *node,
                             PyObject *batch) {
    if (!PyType_Check(pending) || !PyTuple_Check(descriptors)
        || PyTuple_GET_SIZE(descriptors) != N_FIELDS || !PyDict_Check(inside_table)) {
        PyErr_SetString(PyExc_TypeError, "fastnn_record_init: expected (type, tuple of the "
                                         "14 slot descriptors, fn, fn, dict, fn, module)");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < N_FIELDS; i++)
        if (!Py_TYPE(PyTuple_GET_ITEM(descriptors, i))->tp_descr_set) {
            PyErr_SetString(PyExc_TypeError, "fastnn_record_init: a field is not a slot");
            return NULL;
        }
    if (!s_shape) {
        PyObject **slots[] = {&s_on, &s_calls, &s_pending, &s_step, &s_step_start, &s_producers,
                              &s_ready, &s_flush, &s_settle_ready, &s_put, &s_note, &s_shape,
                              &s_batch, &s_lag};
        const char *names[] = {"_on", "_calls", "_pending", "_step", "_step_start",
                               "_producers", "_ready", "_flush", "_settle_ready", "put",
                               "note", "shape", "BATCH", "LAG_ELEMENTS"};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (!(*slots[i] = intern(names[i])))
                return NULL;
    }
    if (!recorder_type && !(recorder_type = PyType_FromSpec(&recorder_spec)))
        return NULL;
    Py_XSETREF(pending_type, Py_NewRef(pending));
    Py_XSETREF(fields, Py_NewRef(descriptors));
    Py_XSETREF(frozen_fn, Py_NewRef(frozen));
    Py_XSETREF(kind_fn, Py_NewRef(kind));
    Py_XSETREF(inside, Py_NewRef(inside_table));
    Py_XSETREF(node_fn, Py_NewRef(node));
    Py_XSETREF(batch_module, Py_NewRef(batch));
    Py_RETURN_NONE;
}

/* A wrapper of ``fn``, the hook ``hook`` of ``backend`` (its Spec ``spec``), for
 * ``session``; ``slow``: the Python wrapper, for calls with keyword arguments. */
PyObject *fastnn_recorder(PyObject *session, PyObject *backend, PyObject *spec, PyObject *fn,
                          PyObject *originals, PyObject *slow, PyObject *hook,
                          PyObject *simple) {
    if (!recorder_type) {
        PyErr_SetString(PyExc_RuntimeError, "fastnn_recorder: fastnn_record_init not called");
        return NULL;
    }
    int is_simple = PyObject_IsTrue(simple);
    if (is_simple < 0)
        return NULL;
    Recorder *self = PyObject_GC_New(Recorder, (PyTypeObject *)recorder_type);
    if (!self)
        return NULL;
    self->session = Py_NewRef(session);
    self->backend = Py_NewRef(backend);
    self->spec = Py_NewRef(spec);
    self->fn = Py_NewRef(fn);
    self->originals = Py_NewRef(originals);
    self->slow = Py_NewRef(slow);
    self->hook = Py_NewRef(hook);
    self->simple = is_simple;
    self->vectorcall = recorder_call;
    PyObject_GC_Track(self);
    return (PyObject *)self;
}
