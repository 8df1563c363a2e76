/* to_numpy_many's reads out of mapped buffers (fastnn_opencl.transfer): where the
 * device's buffers are host memory (host_map.py), each array of a batch that covers its
 * stretch of buffer densely (contiguous, or so in another axis order: a transpose) is
 * copied out of its buffer's mapping after the queue's finish. fastnn_split_mapped picks
 * those arrays, fastnn_copy_mapped copies them: in Python each cost about 3 us (the
 * checks, the view, the copy, attribute reads), a transpose 15, for 60 arrays a step.
 * Loaded with ctypes.PyDLL: it runs holding the GIL, and a bad argument raises, never
 * crashes. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define MAX_AXES 32

static PyObject *s_data, *s_int_ptr, *s_shape, *s_dtype, *s_offset, *s_strides, *s_dev,
    *s_size, *s_flags, *s_writeable, *s_itemsize;

static int interned(void) {
    if (s_itemsize)
        return 0;
    return (s_data = PyUnicode_InternFromString("data"))
                   && (s_int_ptr = PyUnicode_InternFromString("int_ptr"))
                   && (s_shape = PyUnicode_InternFromString("shape"))
                   && (s_dtype = PyUnicode_InternFromString("dtype"))
                   && (s_offset = PyUnicode_InternFromString("offset"))
                   && (s_strides = PyUnicode_InternFromString("strides"))
                   && (s_dev = PyUnicode_InternFromString("dev"))
                   && (s_size = PyUnicode_InternFromString("size"))
                   && (s_flags = PyUnicode_InternFromString("flags"))
                   && (s_writeable = PyUnicode_InternFromString("writeable"))
                   && (s_itemsize = PyUnicode_InternFromString("itemsize"))
               ? 0
               : -1;
}

/* The axes of a tuple of ints into out (at most MAX_AXES): their count, -1 with an error
 * raised, -2 when there are too many */
static int axes(PyObject *tuple, Py_ssize_t *out) {
    if (!PyTuple_Check(tuple)) {
        PyErr_SetString(PyExc_TypeError, "a shape or strides that is not a tuple");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(tuple);
    if (n > MAX_AXES)
        return -2;
    for (Py_ssize_t d = 0; d < n; d++) {
        out[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(tuple, d));
        if (out[d] == -1 && PyErr_Occurred())
            return -1;
    }
    return (int)n;
}

/* 1 when the view covers its stretch of buffer densely in some axis order (each
 * stride, smallest first, the product of the extents below it; axes of one element
 * skipped), 2 when in C order, 0 otherwise (a broadcast, a gap, a negative stride) */
static int dense(int n, const Py_ssize_t *shape, const Py_ssize_t *strides) {
    Py_ssize_t step = 1;
    int c_order = 1, used[MAX_AXES] = {0};
    for (int d = n - 1; d >= 0; d--) {
        if (shape[d] == 1)
            continue;
        c_order &= strides[d] == step;
        step *= shape[d];
    }
    if (c_order)
        return 2;
    step = 1;
    for (int k = 0; k < n; k++) {  /* the axis whose stride is this step, each in turn */
        int found = -1;
        for (int d = 0; d < n && found < 0; d++)
            if (!used[d] && shape[d] != 1 && strides[d] == step)
                found = d;
        if (found < 0) {  /* every axis of more than one element placed: dense */
            for (int d = 0; d < n; d++)
                if (!used[d] && shape[d] != 1)
                    return 0;
            return 1;
        }
        used[found] = 1;
        step *= shape[found];
    }
    return 1;
}

/* host.flags.writeable = False: 0, -1 with an error raised */
static int read_only(PyObject *host) {
    PyObject *flags = PyObject_GetAttr(host, s_flags);
    int done = flags ? PyObject_SetAttr(flags, s_writeable, Py_False) : -1;
    Py_XDECREF(flags);
    return done;
}

/* x viewed on ``base`` from its element ``first`` with x's strides (in elements): the
 * copy of the same stretch of buffer made for an array read before it (a 1-d copy of the
 * stretch, or the C-ordered array it was; first 0), or the buffer's own mapping (a view of
 * the device's memory): ndarray(shape, dtype, base, first * itemsize, strides * itemsize),
 * read-only, as a copy it shares is made too (``copied``; a mapping is left as it is) (a
 * new reference, NULL with an error; past the end of ``base``, the ndarray constructor's
 * error) */
static PyObject *shared_view(PyObject *base, Py_ssize_t first, PyObject *shape,
                             PyObject *dtype, PyObject *ndarray, int n,
                             const Py_ssize_t *strides, int copied) {
    PyObject *size_of = PyObject_GetAttr(dtype, s_itemsize);
    Py_ssize_t itemsize = size_of ? PyLong_AsSsize_t(size_of) : -1;
    Py_XDECREF(size_of);
    if (itemsize <= 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "fastnn_copy_mapped: a dtype without itemsize");
        return NULL;
    }
    PyObject *steps = PyTuple_New(n), *at = PyLong_FromSsize_t(first * itemsize), *host = NULL;
    int ok = steps && at;
    for (int d = 0; d < n && ok; d++) {
        PyObject *b = PyLong_FromSsize_t(strides[d] * itemsize);
        if (!b)
            ok = 0;
        else
            PyTuple_SET_ITEM(steps, d, b);
    }
    if (ok)
        host = PyObject_CallFunctionObjArgs(ndarray, shape, dtype, base, at, steps, NULL);
    Py_XDECREF(steps);
    Py_XDECREF(at);
    if (host && ((copied && read_only(base) < 0) || read_only(host) < 0))
        Py_CLEAR(host);
    return host;
}

/* hosts[i] = a copy of x, for one (i, x) of items, or, for a C-ordered x, a read-only
 * view of the copy made for an earlier C-ordered item of the same stretch of the same
 * buffer (``made``: {(handle, first, size, dtype): that copy}); 1 done, 0 its buffer not
 * mapped yet (left to Python), -1 an error raised */
static int copy_one(PyObject *item, PyObject *views, PyObject *np_types, PyObject *empty,
                    PyObject *ndarray, PyObject *hosts, PyObject *made, int view) {
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
        PyErr_SetString(PyExc_TypeError, "fastnn_copy_mapped: an item is not (i, array)");
        return -1;
    }
    Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 0));
    if (i == -1 && PyErr_Occurred())
        return -1;
    if (i < 0 || i >= PyList_GET_SIZE(hosts)) {
        PyErr_SetString(PyExc_IndexError, "fastnn_copy_mapped: a position outside hosts");
        return -1;
    }
    PyObject *x = PyTuple_GET_ITEM(item, 1);
    int result = -1;
    PyObject *data = NULL, *handle = NULL, *shape = NULL, *kind = NULL, *offset = NULL,
             *host = NULL, *strides = NULL, *flat = NULL, *steps = NULL, *key = NULL,
             *count = NULL;
    PyObject *memory, *dtype;  /* borrowed */
    if (!(data = PyObject_GetAttr(x, s_data)) || !(handle = PyObject_GetAttr(data, s_int_ptr)))
        goto done;
    if (!(memory = PyDict_GetItemWithError(views, handle))) {
        result = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    if (!(shape = PyObject_GetAttr(x, s_shape)) || !(kind = PyObject_GetAttr(x, s_dtype))
        || !(offset = PyObject_GetAttr(x, s_offset)))
        goto done;
    if (!(dtype = PyDict_GetItemWithError(np_types, kind))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_KeyError, "fastnn_copy_mapped: an unknown dtype");
        goto done;
    }
    Py_ssize_t first = PyLong_AsSsize_t(offset);
    if (first == -1 && PyErr_Occurred())
        goto done;
    Py_ssize_t extents[MAX_AXES], steps_of[MAX_AXES], size = 1;
    int n, m, layout;
    if (!(strides = PyObject_GetAttr(x, s_strides)) || (n = axes(shape, extents)) == -1
        || (m = axes(strides, steps_of)) == -1)
        goto done;
    if (n < 0 || n != m || !(layout = dense(n, extents, steps_of))) {
        PyErr_SetString(PyExc_ValueError, "fastnn_copy_mapped: an array that does not "
                                          "cover its stretch of buffer densely");
        goto done;
    }
    for (int d = 0; d < n; d++)
        size *= extents[d];
    if (!(count = PyLong_FromSsize_t(size)))
        goto done;
    if (view) {  /* the device's memory itself, viewed (to_numpy_views) */
        if ((host = shared_view(memory, first, shape, dtype, ndarray, n, steps_of, 0)))
            result = PyList_SetItem(hosts, i, Py_NewRef(host)) < 0 ? -1 : 1;
        goto done;
    }
    /* arrays of one stretch share one copy of it (a reshape, a transpose of an array read
     * before it): the first copies the stretch, the others are viewed on that copy, each
     * with its own strides, all read-only. (When the linear hooks did not exist, a weight
     * read with its transpose was shared too, and the optimizer's reference copied it
     * again to write it: the small MLP's step 3% slower so) */
    if (!(key = PyTuple_Pack(4, handle, offset, count, kind)))
        goto done;
    PyObject *earlier = PyDict_GetItemWithError(made, key);  /* (borrowed) */
    if (earlier) {  /* the same bytes as an array copied before it: viewed on its copy */
        if (!PyTuple_Check(earlier) || PyTuple_GET_SIZE(earlier) != 2) {
            PyErr_SetString(PyExc_TypeError, "fastnn_copy_mapped: made holds (copy, array)");
            goto done;
        }
        if (read_only(PyTuple_GET_ITEM(earlier, 1)) < 0)  /* (the array read first) */
            goto done;
        if ((host = shared_view(PyTuple_GET_ITEM(earlier, 0), 0, shape, dtype, ndarray, n,
                                steps_of, 1)))
            result = PyList_SetItem(hosts, i, Py_NewRef(host)) < 0 ? -1 : 1;
        goto done;
    }
    if (PyErr_Occurred())
        goto done;
    if (layout == 2) {
        host = PyObject_CallFunctionObjArgs(empty, shape, dtype, NULL);
    } else {  /* the stretch copied as it lies, viewed with the array's strides */
        flat = PyObject_CallFunctionObjArgs(empty, count, dtype, NULL);
    }
    if (!host && !flat)
        goto done;
    Py_buffer src, dst;
    if (PyObject_GetBuffer(memory, &src, PyBUF_SIMPLE) < 0)
        goto done;
    if (PyObject_GetBuffer(host ? host : flat, &dst, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&src);
        goto done;
    }
    Py_ssize_t start = first * dst.itemsize;
    if (first < 0 || start > src.len || dst.len > src.len - start) {
        PyErr_SetString(PyExc_ValueError,
                        "fastnn_copy_mapped: an array past the end of its buffer");
    } else {
        memcpy(dst.buf, (const char *)src.buf + start, (size_t)dst.len);
        result = 1;
    }
    Py_ssize_t itemsize = dst.itemsize;
    PyBuffer_Release(&dst);
    PyBuffer_Release(&src);
    if (result == 1 && !host) {
        if (!(steps = PyTuple_New(n)))
            result = -1;
        for (int d = 0; d < n && result == 1; d++) {
            PyObject *b = PyLong_FromSsize_t(steps_of[d] * itemsize);
            if (!b)
                result = -1;
            else
                PyTuple_SET_ITEM(steps, d, b);
        }
        PyObject *zero = result == 1 ? PyLong_FromLong(0) : NULL;
        if (zero)
            host = PyObject_CallFunctionObjArgs(ndarray, shape, dtype, flat, zero, steps, NULL);
        Py_XDECREF(zero);
        if (!host)
            result = -1;
    }
    if (result == 1 && PyList_SetItem(hosts, i, Py_NewRef(host)) < 0)
        result = -1;
    if (result == 1) {  /* (the copy of the stretch, and the array viewed on it) */
        PyObject *entry = PyTuple_Pack(2, flat ? flat : host, host);
        if (!entry || PyDict_SetItem(made, key, entry) < 0)
            result = -1;
        Py_XDECREF(entry);
    }
done:
    Py_XDECREF(data);
    Py_XDECREF(handle);
    Py_XDECREF(shape);
    Py_XDECREF(kind);
    Py_XDECREF(offset);
    Py_XDECREF(host);
    Py_XDECREF(strides);
    Py_XDECREF(flat);
    Py_XDECREF(steps);
    Py_XDECREF(key);
    Py_XDECREF(count);
    return result;
}

/* For each (i, x) of ``items`` (dense CLArrays of one device whose buffers are host
 * memory, the queue finished): hosts[i] = a copy of x out of ``views`` ({buffer handle:
 * uint8 mapping}), made with ``empty(shape, np_types[x.dtype])`` (a transposed one
 * viewed with ``ndarray`` and its strides), or a read-only view of the copy of the same
 * stretch made before (the array read first made read-only too), found in ``made`` (a
 * dict the caller keeps for one read, filled here: {stretch: (its copy, that array)});
 * with ``as_views`` true, each a read-only view of the mapping itself, no copy
 * (to_numpy_views). Returns the items whose buffer is not mapped yet, for Python to map and copy. */
PyObject *fastnn_copy_mapped(PyObject *items, PyObject *views, PyObject *np_types,
                             PyObject *empty, PyObject *ndarray, PyObject *hosts,
                             PyObject *made, PyObject *as_views) {
    if (interned() < 0)
        return NULL;
    if (!PyList_Check(items) || !PyDict_Check(views) || !PyDict_Check(np_types)
        || !PyList_Check(hosts) || !PyDict_Check(made)) {
        PyErr_SetString(PyExc_TypeError, "fastnn_copy_mapped: expected (list, dict, dict, "
                                         "np.empty, np.ndarray, list, dict)");
        return NULL;
    }
    int view = PyObject_IsTrue(as_views);
    if (view < 0)
        return NULL;
    PyObject *left = PyList_New(0);
    if (!left)
        return NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(items); k++) {
        PyObject *item = PyList_GET_ITEM(items, k);
        Py_INCREF(item);
        int done = copy_one(item, views, np_types, empty, ndarray, hosts, made, view);
        if (done == 0 && PyList_Append(left, item) < 0)
            done = -1;
        Py_DECREF(item);
        if (done < 0) {
            Py_DECREF(left);
            return NULL;
        }
    }
    return left;
}

/* Which of ``arrays`` (CLArrays) fastnn_copy_mapped is to copy: (groups, rest), groups a
 * list of (HostMaps, [(i, x)]) of the nonempty dense arrays of each device whose buffers
 * are host memory (``tables``, {id(device): HostMaps or None}, filled through
 * ``maps(device)`` for a device not in it yet), rest the positions of the others. */
PyObject *fastnn_split_mapped(PyObject *arrays, PyObject *tables, PyObject *maps) {
    if (interned() < 0)
        return NULL;
    if (!PyList_Check(arrays) || !PyDict_Check(tables)) {
        PyErr_SetString(PyExc_TypeError, "fastnn_split_mapped: expected (list, dict, maps)");
        return NULL;
    }
    PyObject *groups = PyDict_New(), *rest = PyList_New(0), *found = NULL;
    if (!groups || !rest)
        goto failed;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(arrays); i++) {
        PyObject *x = PyList_GET_ITEM(arrays, i), *dev = NULL, *key = NULL, *table = NULL,
                 *size = NULL, *shape = NULL, *strides = NULL;
        int pick = 0, failed = 1;
        if (!(dev = PyObject_GetAttr(x, s_dev)) || !(key = PyLong_FromVoidPtr(dev)))
            goto next;
        table = PyDict_GetItemWithError(tables, key);
        if (table) {
            Py_INCREF(table);
        } else if (PyErr_Occurred() || !(table = PyObject_CallOneArg(maps, dev))) {
            goto next;
        }
        if (table != Py_None) {
            Py_ssize_t extents[MAX_AXES], steps[MAX_AXES], count;
            int n, m;
            if (!(size = PyObject_GetAttr(x, s_size))
                || ((count = PyLong_AsSsize_t(size)) == -1 && PyErr_Occurred())
                || !(shape = PyObject_GetAttr(x, s_shape))
                || !(strides = PyObject_GetAttr(x, s_strides))
                || (n = axes(shape, extents)) == -1 || (m = axes(strides, steps)) == -1)
                goto next;
            pick = count > 0 && n >= 0 && n == m && dense(n, extents, steps);
        }
        if (pick) {
            PyObject *group = PyDict_GetItemWithError(groups, key), *item;
            if (!group) {
                PyObject *made;
                if (PyErr_Occurred() || !(made = PyList_New(0)))
                    goto next;
                PyObject *pair = PyTuple_Pack(2, table, made);
                Py_DECREF(made);
                if (!pair || PyDict_SetItem(groups, key, pair) < 0) {
                    Py_XDECREF(pair);
                    goto next;
                }
                Py_DECREF(pair);
                group = PyDict_GetItem(groups, key);
            }
            if (!(item = Py_BuildValue("(nO)", i, x)))
                goto next;
            int added = PyList_Append(PyTuple_GET_ITEM(group, 1), item);
            Py_DECREF(item);
            if (added < 0)
                goto next;
        } else {
            PyObject *position = PyLong_FromSsize_t(i);
            if (!position)
                goto next;
            int added = PyList_Append(rest, position);
            Py_DECREF(position);
            if (added < 0)
                goto next;
        }
        failed = 0;
    next:
        Py_XDECREF(dev);
        Py_XDECREF(key);
        Py_XDECREF(table);
        Py_XDECREF(size);
        Py_XDECREF(shape);
        Py_XDECREF(strides);
        if (failed)
            goto failed;
    }
    PyObject *listed = PyDict_Values(groups);
    if (!listed)
        goto failed;
    found = PyTuple_Pack(2, listed, rest);
    Py_DECREF(listed);
failed:
    Py_XDECREF(groups);
    Py_XDECREF(rest);
    return found;
}
