/* Which arrays a batch of pending calls needs read (fastnn.shadowing.batch's _read_batch),
 * part of bulk.c (included there, after settle.c, whose interned names and shape test it
 * uses). For each pending call: the arrays among its arguments (unless its inputs were
 * read before it ran, ``host``), then those it made (its first argument for a hook with
 * no result; none for a to_numpy, whose output is on the host); each list or tuple
 * flattened, and a value counted as an array where it has a ``shape``. The arrays are
 * kept per hook table (``originals``, by identity, in the order first met), ``extra``
 * (originals, arrays) last, then looked up by identity: {id: host copy from ``cached``,
 * or None}, and each array not cached goes once to its table's list to read. Python's
 * loop cost about 1 us a call. */

/* ``value`` appended to ``into`` where it is an array (settle.c's has_shape) */
static int one_array(PyObject *value, PyObject *into) {
    if (value == Py_None)
        return 0;
    int array = has_shape(value);
    return array <= 0 ? array : PyList_Append(into, value);
}

/* ``value``'s arrays appended to ``into``: its leaves where it is a list or tuple */
static int arrays_in(PyObject *value, PyObject *into) {
    if (PyList_Check(value) || PyTuple_Check(value)) {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(value); i++)
            if (arrays_in(PySequence_Fast_GET_ITEM(value, i), into) < 0)
                return -1;
        return 0;
    }
    return one_array(value, into);
}

/* the list of arrays kept for ``originals`` in ``tables`` (a list of [originals, list]),
 * borrowed; a new pair appended where it is not there yet */
static PyObject *table_of(PyObject *tables, PyObject *originals) {
    Py_ssize_t n = PyList_GET_SIZE(tables);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyList_GET_ITEM(tables, i);
        if (PyList_GET_ITEM(pair, 0) == originals)
            return PyList_GET_ITEM(pair, 1);
    }
    PyObject *arrays = PyList_New(0), *pair = arrays ? PyList_New(2) : NULL;
    if (!pair) {
        Py_XDECREF(arrays);
        return NULL;
    }
    PyList_SET_ITEM(pair, 0, Py_NewRef(originals));
    PyList_SET_ITEM(pair, 1, arrays);
    int failed = PyList_Append(tables, pair);
    Py_DECREF(pair);
    return failed ? NULL : arrays;
}

/* one pending call's arrays appended to its table's list */
static int collect_entry(PyObject *entry, PyObject *tables) {
    int done = -1;
    PyObject *spec = NULL, *originals = NULL, *host = NULL, *args = NULL, *flag = NULL,
             *made = NULL, *positions = NULL;
    if (!(spec = PyObject_GetAttr(entry, s_spec))
        || !(originals = PyObject_GetAttr(entry, s_originals))
        || !(host = PyObject_GetAttr(entry, s_host)) || !(args = PyObject_GetAttr(entry, s_args)))
        goto out;
    PyObject *into = table_of(tables, originals);
    if (!into)
        goto out;
    if (!PyTuple_Check(args) && !PyList_Check(args)) {
        PyErr_SetString(PyExc_TypeError, "shadow: a pending call's args that are not a tuple");
        goto out;
    }
    if (host == Py_None) {  /* (i, kind) of the arguments that hold arrays */
        if (!(positions = PyObject_GetAttr(spec, s_arrays)))
            goto out;
        if (!PyTuple_Check(positions)) {
            PyErr_SetString(PyExc_TypeError, "shadow: a spec whose arrays are not a tuple");
            goto out;
        }
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(positions); k++) {
            PyObject *position = PyTuple_GET_ITEM(positions, k);
            if (!PyTuple_Check(position) || PyTuple_GET_SIZE(position) != 2
                || !PyUnicode_Check(PyTuple_GET_ITEM(position, 1))) {
                PyErr_SetString(PyExc_TypeError, "shadow: a spec's array position that is "
                                                 "not (index, kind)");
                goto out;
            }
            Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(position, 0));
            if (i == -1 && PyErr_Occurred())
                goto out;
            if (i < 0 || i >= PySequence_Fast_GET_SIZE(args)) {
                PyErr_SetString(PyExc_IndexError, "shadow: a spec's array position past the "
                                                  "call's arguments");
                goto out;
            }
            PyObject *value = PySequence_Fast_GET_ITEM(args, i);
            int list = !PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(position, 1), "list");
            if ((list ? arrays_in(value, into) : one_array(value, into)) < 0)
                goto out;
        }
    }
    if (!(flag = PyObject_GetAttr(spec, s_sync)))
        goto out;
    int sync = PyObject_IsTrue(flag);
    Py_CLEAR(flag);
    if (sync < 0)
        goto out;
    if (!sync) {  /* (to_numpy's output is on the host already) */
        if (!(flag = PyObject_GetAttr(spec, s_returns_none)))
            goto out;
        int none = PyObject_IsTrue(flag);
        if (none < 0)
            goto out;
        if (none && PySequence_Fast_GET_SIZE(args) == 0) {
            PyErr_SetString(PyExc_TypeError, "shadow: a write with no arguments");
            goto out;
        }
        made = none ? Py_NewRef(PySequence_Fast_GET_ITEM(args, 0))
                    : PyObject_GetAttr(entry, s_out);
        if (!made || arrays_in(made, into) < 0)
            goto out;
    }
    done = 0;
out:
    Py_XDECREF(spec);
    Py_XDECREF(originals);
    Py_XDECREF(host);
    Py_XDECREF(args);
    Py_XDECREF(flag);
    Py_XDECREF(made);
    Py_XDECREF(positions);
    return done;
}

/* (fetched, [(originals, [arrays to read])], [[every array of each table]]) of the pending
 * calls, with ``extra`` (originals, [arrays]) or None, against the host copies ``cached``
 * ({id: host copy}) */
PyObject *fastnn_collect(PyObject *pending, PyObject *cached, PyObject *extra) {
    if (interned() < 0)
        return NULL;
    if (!PyList_Check(pending) || !PyDict_Check(cached)
        || (extra != Py_None && (!PyTuple_Check(extra) || PyTuple_GET_SIZE(extra) != 2
                                 || !PyList_Check(PyTuple_GET_ITEM(extra, 1))))) {
        PyErr_SetString(PyExc_TypeError, "fastnn_collect: expected (list, dict, None or "
                                         "(originals, list))");
        return NULL;
    }
    PyObject *tables = PyList_New(0), *fetched = NULL, *groups = NULL, *held = NULL,
             *found = NULL;
    if (!tables)
        return NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(pending); k++)
        if (collect_entry(PyList_GET_ITEM(pending, k), tables) < 0)
            goto out;
    if (extra != Py_None) {
        PyObject *into = table_of(tables, PyTuple_GET_ITEM(extra, 0));
        if (!into || PyList_SetSlice(into, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX,
                                     PyTuple_GET_ITEM(extra, 1)) < 0)
            goto out;
    }
    if (!(fetched = PyDict_New()) || !(groups = PyList_New(0))
        || !(held = PyList_New(PyList_GET_SIZE(tables))))
        goto out;
    for (Py_ssize_t t = 0; t < PyList_GET_SIZE(tables); t++) {
        PyObject *pair = PyList_GET_ITEM(tables, t), *arrays = PyList_GET_ITEM(pair, 1);
        PyList_SET_ITEM(held, t, Py_NewRef(arrays));
        PyObject *wanted = PyList_New(0);
        if (!wanted)
            goto out;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(arrays); i++) {
            PyObject *array = PyList_GET_ITEM(arrays, i), *key = PyLong_FromVoidPtr(array);
            if (!key) {
                Py_DECREF(wanted);
                goto out;
            }
            int seen = PyDict_Contains(fetched, key), failed = seen < 0;
            if (!seen) {
                PyObject *host = PyDict_GetItemWithError(cached, key);
                failed = (!host && PyErr_Occurred())
                         || PyDict_SetItem(fetched, key, host ? host : Py_None) < 0
                         || (!host && PyList_Append(wanted, array) < 0);
            }
            Py_DECREF(key);
            if (failed) {
                Py_DECREF(wanted);
                goto out;
            }
        }
        if (PyList_GET_SIZE(wanted)) {
            PyObject *group = PyTuple_Pack(2, PyList_GET_ITEM(pair, 0), wanted);
            int failed = !group || PyList_Append(groups, group) < 0;
            Py_XDECREF(group);
            if (failed) {
                Py_DECREF(wanted);
                goto out;
            }
        }
        Py_DECREF(wanted);
    }
    found = PyTuple_Pack(3, fetched, groups, held);
out:
    Py_DECREF(tables);
    Py_XDECREF(fetched);
    Py_XDECREF(groups);
    Py_XDECREF(held);
    return found;
}
