/* Shadow mode's batch of comparisons in one call (fastnn.shadowing.vector): a list of
 * outputs [got, want, rtol, atol, got, want, ...] (host arrays, read through the buffer
 * protocol) judged where they lie, each in one pass of close.c's loop, without laying
 * them end to end first. Per output: (max |got - want|, the largest ratio to the
 * tolerance) where it passes, or None where Python is to judge it (it fails, holds a
 * NaN or an Inf, is laid out unlike its pair or is not whole past its broadcast axes,
 * or has a dtype other than float32 and float64 and is not equal bit for bit). Loaded
 * with ctypes.PyDLL: it runs holding the GIL, and a bad argument raises, never crashes. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "close.c"

/* How many elements a and b hold past their broadcast axes (stride 0), when they hold
 * the same dtype, shape and strides and, those axes dropped, are whole (C- or
 * F-contiguous): both are then read as that many elements in memory order; else -1 */
static Py_ssize_t alike(const Py_buffer *a, const Py_buffer *b) {
    if (a->ndim != b->ndim || a->itemsize != b->itemsize || strcmp(a->format, b->format))
        return -1;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d] || (a->shape[d] > 1 && a->strides[d] != b->strides[d]))
            return -1;
    Py_ssize_t c_order = a->itemsize, f_order = a->itemsize, n = 1;
    int c_whole = 1, f_whole = 1;
    for (int d = a->ndim - 1; d >= 0; d--) {  /* C order: the last axis moves fastest */
        if (a->shape[d] == 0)
            return 0;
        if (a->shape[d] == 1 || a->strides[d] == 0)
            continue;
        c_whole &= a->strides[d] == c_order;
        c_order *= a->shape[d];
        n *= a->shape[d];
    }
    for (int d = 0; d < a->ndim; d++) {  /* F order: the first axis moves fastest */
        if (a->shape[d] == 1 || a->strides[d] == 0)
            continue;
        f_whole &= a->strides[d] == f_order;
        f_order *= a->shape[d];
    }
    return c_whole || f_whole ? n : -1;
}

static PyObject *verdict(double max_abs, double ratio) {
    PyObject *a = PyFloat_FromDouble(max_abs), *r = PyFloat_FromDouble(ratio), *pair = NULL;
    if (a && r)
        pair = PyTuple_Pack(2, a, r);
    Py_XDECREF(a);
    Py_XDECREF(r);
    return pair;
}

/* the verdict of one output (a new reference; Py_None to be judged in Python) */
/* the verdict of one output (a new reference; Py_None to be judged in Python) */
static PyObject *judge(const Py_buffer *g, const Py_buffer *w, double rtol, double atol) {
    Py_ssize_t n = alike(g, w);
    if (n < 0)
        Py_RETURN_NONE;
    if (n == 0 || g->buf == w->buf || !memcmp(g->buf, w->buf, (size_t)(n * g->itemsize)))
        return verdict(0.0, 0.0);  /* the same bits: the same values, NaN included */
    double out[2];
    int special;
    if (!strcmp(g->format, "f"))
        special = fastnn_close_f32(g->buf, w->buf, n, (float)rtol, (float)atol, out);
    else if (!strcmp(g->format, "d"))
        special = fastnn_close_f64(g->buf, w->buf, n, rtol, atol, out);
    else
        Py_RETURN_NONE;  /* integers, bool, float16: not equal, so Python finds how */
    if (special || !(out[1] <= 1.0))
        Py_RETURN_NONE;
    return verdict(out[0], out[1]);
}

PyObject *fastnn_bulk(PyObject *items) {
    if (!PyList_Check(items) || PyList_GET_SIZE(items) % 4) {
        PyErr_SetString(PyExc_TypeError,
                        "fastnn_bulk: expected a list [got, want, rtol, atol, ...]");
        return NULL;
    }
    Py_ssize_t k = PyList_GET_SIZE(items) / 4;
    PyObject *found = PyList_New(k);
    if (!found)
        return NULL;
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *got = PyList_GET_ITEM(items, 4 * i), *want = PyList_GET_ITEM(items, 4 * i + 1);
        double rtol = PyFloat_AsDouble(PyList_GET_ITEM(items, 4 * i + 2));
        double atol = PyFloat_AsDouble(PyList_GET_ITEM(items, 4 * i + 3));
        if (PyErr_Occurred()) {
            Py_DECREF(found);
            return NULL;
        }
        PyObject *one = NULL;
        Py_buffer g, w;
        if (PyObject_GetBuffer(got, &g, PyBUF_RECORDS_RO) == 0) {
            if (PyObject_GetBuffer(want, &w, PyBUF_RECORDS_RO) == 0) {
                one = judge(&g, &w, rtol, atol);
                PyBuffer_Release(&w);
            }
            PyBuffer_Release(&g);
        }
        if (one == NULL) {  /* not a buffer (a device array, a scalar): Python judges it */
            if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError)
                && !PyErr_ExceptionMatches(PyExc_BufferError)) {
                Py_DECREF(found);
                return NULL;
            }
            PyErr_Clear();
            one = Py_NewRef(Py_None);
        }
        PyList_SET_ITEM(found, i, one);
    }
    return found;
}

/* ------------------------------------------------------------------------------------
 * A batch's plain calls checked in one call (fastnn.shadowing.batch's _settle_batch):
 * for each pending call of a Spec.plain hook read to the host (its output in
 * ``fetched``, {id(array): host copy}), the NumPy reference runs on the host copies of
 * its array arguments, its one output is judged where it lies, and, where it passes,
 * the report's row counts it. What is left (another kind of call, an output that fails
 * or that judge() leaves to Python) comes back, in call order, for Python's
 * path, which runs it again and blames the first wrong call. A reference that raises
 * an Exception is counted as unchecked by the session's _unchecked, as in Python; any
 * other error (a KeyboardInterrupt) propagates. */

static PyObject *s_host, *s_spec, *s_args, *s_out, *s_plain, *s_hook, *s_positions, *s_rtol,
    *s_atol, *s_max_abs, *s_of_tolerance, *s_equal_first, *s_calls, *s_checked, *s_row_of,
    *s_unchecked, *s_dtype;

static int interned(void) {
    if (s_dtype)
        return 0;
    const char *names[] = {"host", "spec", "args", "out", "plain", "hook", "array_positions",
                           "rtol", "atol", "max_abs", "of_tolerance", "equal_first", "calls",
                           "checked", "_row_of", "_unchecked", "dtype"};
    PyObject **slots[] = {&s_host, &s_spec, &s_args, &s_out, &s_plain, &s_hook, &s_positions,
                          &s_rtol, &s_atol, &s_max_abs, &s_of_tolerance, &s_equal_first,
                          &s_calls, &s_checked, &s_row_of, &s_unchecked, &s_dtype};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!(*slots[i] = PyUnicode_InternFromString(names[i])))
            return -1;
    return 0;
}

/* fetched[id(value)] (borrowed), or NULL with no error when absent */
static PyObject *fetched_of(PyObject *fetched, PyObject *value) {
    PyObject *key = PyLong_FromVoidPtr(value);
    if (!key)
        return NULL;
    PyObject *found = PyDict_GetItemWithError(fetched, key);
    Py_DECREF(key);
    return found;
}

/* row.name += 1 */
static int bump(PyObject *row, PyObject *name) {
    PyObject *value = PyObject_GetAttr(row, name);
    if (!value)
        return -1;
    PyObject *one = PyLong_FromLong(1), *sum = one ? PyNumber_Add(value, one) : NULL;
    Py_DECREF(value);
    Py_XDECREF(one);
    if (!sum)
        return -1;
    int done = PyObject_SetAttr(row, name, sum);
    Py_DECREF(sum);
    return done;
}

/* row.name = max(row.name, x) */
static int raise_to(PyObject *row, PyObject *name, double x) {
    PyObject *value = PyObject_GetAttr(row, name);
    if (!value)
        return -1;
    double now = PyFloat_AsDouble(value);
    Py_DECREF(value);
    if (now == -1.0 && PyErr_Occurred())
        return -1;
    if (!(x > now))
        return 0;
    PyObject *new_value = PyFloat_FromDouble(x);
    if (!new_value)
        return -1;
    int done = PyObject_SetAttr(row, name, new_value);
    Py_DECREF(new_value);
    return done;
}

/* The row's count of a passing output (Row.passed, then calls and checked) */
static int count_pass(PyObject *row, double max_abs, double ratio) {
    if (PyObject_SetAttr(row, s_equal_first, max_abs == 0.0 ? Py_True : Py_False) < 0
        || raise_to(row, s_max_abs, max_abs) < 0 || raise_to(row, s_of_tolerance, ratio) < 0)
        return -1;
    return bump(row, s_calls) < 0 || bump(row, s_checked) < 0 ? -1 : 0;
}

static double attr_double(PyObject *o, PyObject *name) {
    PyObject *value = PyObject_GetAttr(o, name);
    if (!value)
        return -1.0;
    double x = PyFloat_AsDouble(value);
    Py_DECREF(value);
    return x;
}

/* 1: checked and counted; 0: left to Python; -1: an error raised */
static int settle_one(PyObject *session, PyObject *entry, PyObject *spec, PyObject *fetched,
                      PyObject *ref_ops, PyObject *by_dtype, PyObject *ndarray,
                      PyObject *asarray) {
    int result = -1;
    PyObject *out = NULL, *args = NULL, *positions = NULL, *hook = NULL, *fn = NULL,
             *call = NULL, *want = NULL, *got_dtype = NULL, *want_dtype = NULL, *key = NULL,
             *row = NULL;
    if (!(out = PyObject_GetAttr(entry, s_out)))
        goto done;
    PyObject *got = fetched_of(fetched, out);  /* borrowed */
    if (!got) {
        result = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    Py_INCREF(got);
    if (!(args = PyObject_GetAttr(entry, s_args))
        || !(positions = PyObject_GetAttr(spec, s_positions))
        || !(hook = PyObject_GetAttr(spec, s_hook)))
        goto got_done;
    if (!PyTuple_Check(args) || !PyTuple_Check(positions)) {
        result = 0;  /* (frozen lists: Python's path) */
        goto got_done;
    }
    if (!(call = PyTuple_New(PyTuple_GET_SIZE(args))))  /* this call's own arguments */
        goto got_done;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
        PyObject *item = PyTuple_GET_ITEM(args, i);
        Py_INCREF(item);
        PyTuple_SET_ITEM(call, i, item);
    }
    for (Py_ssize_t p = 0; p < PyTuple_GET_SIZE(positions); p++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(positions, p));
        if (i == -1 && PyErr_Occurred())
            goto got_done;
        if (i < 0 || i >= PyTuple_GET_SIZE(call))
            continue;
        PyObject *host = fetched_of(fetched, PyTuple_GET_ITEM(call, i));
        if (!host) {
            if (PyErr_Occurred())
                goto got_done;
            continue;  /* not an array read: the value itself */
        }
        PyObject *value = PyTuple_GET_ITEM(call, i);
        Py_INCREF(host);
        PyTuple_SET_ITEM(call, i, host);  /* (the tuple is this call's own) */
        Py_DECREF(value);
    }
    if (!(fn = PyObject_GetAttr(ref_ops, hook)))
        goto got_done;
    want = PyObject_Call(fn, call, NULL);
    if (!want) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            goto got_done;
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_NormalizeException(&type, &value, &traceback);
        if (traceback)
            PyException_SetTraceback(value, traceback);
        PyObject *said = PyObject_CallMethodObjArgs(session, s_unchecked, hook, out, value,
                                                    NULL);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        if (!said)
            goto got_done;
        Py_DECREF(said);
        result = 1;  /* counted, as unchecked */
        goto got_done;
    }
    if (Py_TYPE(want) != (PyTypeObject *)ndarray) {
        PyObject *array = PyObject_CallOneArg(asarray, want);
        if (!array)
            goto got_done;
        Py_SETREF(want, array);
    }
    if (!(got_dtype = PyObject_GetAttr(got, s_dtype))
        || !(want_dtype = PyObject_GetAttr(want, s_dtype)))
        goto got_done;
    int same = PyObject_RichCompareBool(got_dtype, want_dtype, Py_EQ);
    if (same < 0)
        goto got_done;
    if (!(key = PyTuple_Pack(2, hook, same ? got_dtype : want_dtype)))
        goto got_done;
    row = PyDict_GetItemWithError(by_dtype, key);
    if (row)
        Py_INCREF(row);
    else if (PyErr_Occurred()
             || !(row = PyObject_CallMethodObjArgs(session, s_row_of, hook,
                                                   same ? got_dtype : want_dtype, NULL)))
        goto got_done;
    double rtol = attr_double(row, s_rtol);
    if (PyErr_Occurred())
        goto got_done;
    double atol = attr_double(row, s_atol);
    if (PyErr_Occurred())
        goto got_done;
    Py_buffer g, w;
    PyObject *verdict = NULL;
    if (PyObject_GetBuffer(got, &g, PyBUF_RECORDS_RO) == 0) {
        if (PyObject_GetBuffer(want, &w, PyBUF_RECORDS_RO) == 0) {
            verdict = judge(&g, &w, rtol, atol);
            PyBuffer_Release(&w);
        }
        PyBuffer_Release(&g);
    }
    if (!verdict) {
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_BufferError)
            && !PyErr_ExceptionMatches(PyExc_TypeError))
            goto got_done;
        PyErr_Clear();
        result = 0;
        goto got_done;
    }
    if (verdict == Py_None) {
        result = 0;
    } else {
        double max_abs = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(verdict, 0));
        double ratio = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(verdict, 1));
        result = count_pass(row, max_abs, ratio) < 0 ? -1 : 1;
    }
    Py_DECREF(verdict);
got_done:
    Py_DECREF(got);
done:
    Py_XDECREF(out);
    Py_XDECREF(args);
    Py_XDECREF(positions);
    Py_XDECREF(hook);
    Py_XDECREF(fn);
    Py_XDECREF(call);
    Py_XDECREF(want);
    Py_XDECREF(got_dtype);
    Py_XDECREF(want_dtype);
    Py_XDECREF(key);
    Py_XDECREF(row);
    return result;
}

PyObject *fastnn_settle_plain(PyObject *session, PyObject *pending, PyObject *fetched,
                              PyObject *ref_ops, PyObject *by_dtype, PyObject *ndarray,
                              PyObject *asarray) {
    if (interned() < 0)
        return NULL;
    if (!PyList_Check(pending) || !PyDict_Check(fetched) || !PyDict_Check(by_dtype)
        || !PyType_Check(ndarray)) {
        PyErr_SetString(PyExc_TypeError, "fastnn_settle_plain: expected (session, list, dict, "
                                         "ops, dict, ndarray type, asarray)");
        return NULL;
    }
    PyObject *left = PyList_New(0);
    if (!left)
        return NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(pending); k++) {
        PyObject *entry = PyList_GET_ITEM(pending, k);
        Py_INCREF(entry);
        int status = 0;
        PyObject *host = PyObject_GetAttr(entry, s_host), *spec = NULL, *plain = NULL;
        if (!host) {
            status = -1;
        } else if (host == Py_None) {
            if (!(spec = PyObject_GetAttr(entry, s_spec))
                || !(plain = PyObject_GetAttr(spec, s_plain)))
                status = -1;
            else if (plain == Py_True)
                status = settle_one(session, entry, spec, fetched, ref_ops, by_dtype, ndarray,
                                    asarray);
        }
        Py_XDECREF(host);
        Py_XDECREF(spec);
        Py_XDECREF(plain);
        if (status == 0 && PyList_Append(left, entry) < 0)
            status = -1;
        Py_DECREF(entry);
        if (status < 0) {
            Py_DECREF(left);
            return NULL;
        }
    }
    return left;
}
