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

#include "attrs.c"
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

/* judge() of two arrays of one shape, dtype and format laid out differently (a slice's
 * host copy against the reference's view of its input, a transpose of more than two
 * axes): the axes taken in the order of got's strides, largest first (got read as it
 * lies), those along which both arrays run on merged, and row by row of the last one,
 * each row in one pass (close.c's contiguous loop where both rows are dense, its strided
 * one else; integers and bool compared element by element for equality). A new
 * reference; Py_None to be judged in Python. */
static PyObject *judge_strided(const Py_buffer *g, const Py_buffer *w, double rtol,
                               double atol) {
    int nd = 0, is_f32 = !strcmp(g->format, "f"), is_f64 = !strcmp(g->format, "d");
    Py_ssize_t itemsize = g->itemsize, shape[64], gs[64], ws[64], index[64] = {0};
    for (int d = 0; d < g->ndim; d++) {
        if (g->shape[d] == 0)
            return verdict(0.0, 0.0);
        if (g->shape[d] == 1)
            continue;
        int at = nd++;  /* (insertion by got's stride, largest first) */
        Py_ssize_t size = g->strides[d] < 0 ? -g->strides[d] : g->strides[d];
        while (at > 0 && (gs[at - 1] < 0 ? -gs[at - 1] : gs[at - 1]) < size) {
            shape[at] = shape[at - 1], gs[at] = gs[at - 1], ws[at] = ws[at - 1];
            at--;
        }
        shape[at] = g->shape[d], gs[at] = g->strides[d], ws[at] = w->strides[d];
    }
    int kept = nd ? 1 : 0;  /* merge axis d into the last kept one where both run on */
    for (int d = 1; d < nd; d++) {
        int last = kept - 1;
        if (gs[last] == gs[d] * shape[d] && ws[last] == ws[d] * shape[d]) {
            shape[last] *= shape[d], gs[last] = gs[d], ws[last] = ws[d];
        } else {
            shape[kept] = shape[d], gs[kept] = gs[d], ws[kept] = ws[d];
            kept++;
        }
    }
    nd = kept;
    Py_ssize_t row = nd ? shape[nd - 1] : 1, g_step = nd ? gs[nd - 1] : 0,
               w_step = nd ? ws[nd - 1] : 0;
    int dense = g_step == itemsize && w_step == itemsize, special = 0;
    double out[2] = {0.0, 0.0}, one[2];
    for (;;) {
        const char *gp = g->buf, *wp = w->buf;
        for (int d = 0; d < nd - 1; d++) {
            gp += index[d] * gs[d];
            wp += index[d] * ws[d];
        }
        if (is_f32 && dense) {
            special |= fastnn_close_f32((const float *)gp, (const float *)wp, row, (float)rtol,
                                        (float)atol, one);
        } else if (is_f64 && dense) {
            special |= fastnn_close_f64((const double *)gp, (const double *)wp, row, rtol, atol,
                                        one);
        } else if (is_f32) {
            one[0] = one[1] = 0.0;
            special |= fastnn_close_f32_strided(gp, g_step, wp, w_step, row, (float)rtol,
                                                (float)atol, one);
        } else if (is_f64) {
            one[0] = one[1] = 0.0;
            special |= fastnn_close_f64_strided(gp, g_step, wp, w_step, row, rtol, atol, one);
        } else {
            for (Py_ssize_t j = 0; j < row; j++)
                if (memcmp(gp + j * g_step, wp + j * w_step, (size_t)itemsize))
                    Py_RETURN_NONE;  /* (not equal: Python finds how) */
            one[0] = one[1] = 0.0;
        }
        if (special)
            Py_RETURN_NONE;
        out[0] = one[0] > out[0] ? one[0] : out[0];
        out[1] = one[1] > out[1] ? one[1] : out[1];
        int d = nd - 2;
        while (d >= 0 && ++index[d] == shape[d])
            index[d--] = 0;
        if (d < 0)
            break;
    }
    if (!(out[1] <= 1.0))
        Py_RETURN_NONE;
    return verdict(out[0], out[1]);
}

/* the verdict of one output (a new reference; Py_None to be judged in Python) */
static PyObject *judge(const Py_buffer *g, const Py_buffer *w, double rtol, double atol) {
    Py_ssize_t n = alike(g, w);
    if (n < 0) {  /* laid out differently: row by row, where shape and dtype agree */
        if (g->ndim != w->ndim || g->ndim > 64 || g->itemsize != w->itemsize
            || strcmp(g->format, w->format))
            Py_RETURN_NONE;
        int same = g->buf == w->buf;  /* (one memory, read alike: a view of a shared copy) */
        for (int d = 0; d < g->ndim; d++) {
            if (g->shape[d] != w->shape[d])
                Py_RETURN_NONE;
            same &= g->shape[d] == 1 || g->strides[d] == w->strides[d];
        }
        return same ? verdict(0.0, 0.0) : judge_strided(g, w, rtol, atol);
    }
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

/* judge() of two objects read through the buffer protocol: a new reference to the
 * verdict, Py_None also where one is not a buffer (a device array, a scalar: Python
 * judges it), NULL with another error raised */
static PyObject *judge_objects(PyObject *got, PyObject *want, double rtol, double atol) {
    PyObject *one = NULL;
    Py_buffer g, w;
    if (PyObject_GetBuffer(got, &g, PyBUF_RECORDS_RO) == 0) {
        if (PyObject_GetBuffer(want, &w, PyBUF_RECORDS_RO) == 0) {
            one = judge(&g, &w, rtol, atol);
            PyBuffer_Release(&w);
        }
        PyBuffer_Release(&g);
    }
    if (!one) {
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError)
            && !PyErr_ExceptionMatches(PyExc_BufferError))
            return NULL;
        PyErr_Clear();
        one = Py_NewRef(Py_None);
    }
    return one;
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
        PyObject *one = judge_objects(got, want, rtol, atol);
        if (!one) {
            Py_DECREF(found);
            return NULL;
        }
        PyList_SET_ITEM(found, i, one);
    }
    return found;
}

/* a batch's calls checked in one call (fastnn_settle): settle.c, which uses judge() */
#include "settle.c"
/* the arrays a batch needs read (fastnn_collect), with settle.c's names */
#include "collect.c"
