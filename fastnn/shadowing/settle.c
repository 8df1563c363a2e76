/* A batch's calls checked in one call (fastnn.shadowing.batch's _settle_batch), part of
 * bulk.c (included there: it uses bulk.c's judge()). For each pending call read to the
 * host, the NumPy reference runs on the host copies of its arguments (an in-place call's
 * copies read before it ran, a device index made the reference's), each output is judged
 * where it lies against the backend's host copy ({id(array): host copy} ``fetched``)
 * and, where every output passes, the report's rows count it as Row.passed and
 * _settle_batch do. What is left comes back, in the order given, for Python's path,
 * which (once batch.py has put it back in call order) blames the first wrong call:
 * another kind of call (a to_numpy, a hook writing its arguments with no result, a read
 * that went wrong), an output that fails or that judge() leaves to Python; a call whose
 * reference already ran comes back as (entry, the reference's result), so that Python
 * does not run it again (an optimizer's reference updates its host copies in place). A
 * reference that raises an Exception is counted as unchecked by the session's
 * _unchecked, as in Python; any other error (a KeyboardInterrupt) propagates. */

#define MOST_OUTPUTS 256  /* a call with more outputs is left to Python */

static PyObject *s_host, *s_spec, *s_args, *s_out, *s_hook, *s_rtol, *s_atol, *s_max_abs,
    *s_of_tolerance, *s_equal_first, *s_calls, *s_checked, *s_row_of, *s_unchecked, *s_dtype,
    *s_kinds, *s_sync, *s_returns_none, *s_many, *s_session_many, *s_shape, *s_arrays,
    *s_originals;

static int interned(void) {
    if (s_originals)
        return 0;
    const char *names[] = {"host", "spec", "args", "out", "hook", "rtol", "atol", "max_abs",
                           "of_tolerance", "equal_first", "calls", "checked", "_row_of",
                           "_unchecked", "dtype", "kinds", "sync", "returns_none", "many",
                           "_many", "shape", "arrays", "originals"};
    PyObject **slots[] = {&s_host, &s_spec, &s_args, &s_out, &s_hook, &s_rtol, &s_atol,
                          &s_max_abs, &s_of_tolerance, &s_equal_first, &s_calls, &s_checked,
                          &s_row_of, &s_unchecked, &s_dtype, &s_kinds, &s_sync,
                          &s_returns_none, &s_many, &s_session_many, &s_shape, &s_arrays,
                          &s_originals};
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

/* Row.passed(max_abs, ratio) */
static int passed(PyObject *row, double max_abs, double ratio) {
    if (PyObject_SetAttr(row, s_equal_first, max_abs == 0.0 ? Py_True : Py_False) < 0
        || raise_to(row, s_max_abs, max_abs) < 0 || raise_to(row, s_of_tolerance, ratio) < 0)
        return -1;
    return 0;
}

/* the call counted on ``row``: calls and checked */
static int counted(PyObject *row) {
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

/* The verdict of one output: its host copy ``got`` against the reference's ``want`` (an
 * ndarray made of it if it is not one); 1 passing, with its row and errors set, 0 left to
 * Python, -1 an error raised */
static int judge_output(PyObject *session, PyObject *hook, PyObject *got, PyObject *want,
                        PyObject *by_dtype, PyObject *ndarray, PyObject *asarray,
                        PyObject **row_out, double *max_abs, double *ratio) {
    int result = -1;
    PyObject *array = NULL, *got_dtype = NULL, *want_dtype = NULL, *key = NULL, *row = NULL,
             *found = NULL;
    if (Py_TYPE(want) != (PyTypeObject *)ndarray) {
        if (!(array = PyObject_CallOneArg(asarray, want)))
            goto done;
        want = array;
    }
    if (!(got_dtype = PyObject_GetAttr(got, s_dtype))
        || !(want_dtype = PyObject_GetAttr(want, s_dtype)))
        goto done;
    int same = PyObject_RichCompareBool(got_dtype, want_dtype, Py_EQ);
    if (same < 0)
        goto done;
    if (!(key = PyTuple_Pack(2, hook, same ? got_dtype : want_dtype)))
        goto done;
    row = PyDict_GetItemWithError(by_dtype, key);
    if (row)
        Py_INCREF(row);
    else if (PyErr_Occurred()
             || !(row = PyObject_CallMethodObjArgs(session, s_row_of, hook,
                                                   same ? got_dtype : want_dtype, NULL)))
        goto done;
    double rtol = attr_double(row, s_rtol);
    if (PyErr_Occurred())
        goto done;
    double atol = attr_double(row, s_atol);
    if (PyErr_Occurred())
        goto done;
    if (!(found = judge_objects(got, want, rtol, atol)))
        goto done;
    if (found == Py_None) {
        result = 0;
    } else {
        *max_abs = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(found, 0));
        *ratio = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(found, 1));
        *row_out = Py_NewRef(row);
        result = 1;
    }
done:
    Py_XDECREF(array);
    Py_XDECREF(got_dtype);
    Py_XDECREF(want_dtype);
    Py_XDECREF(key);
    Py_XDECREF(row);
    Py_XDECREF(found);
    return result;
}

/* ref_ops.<hook>(*call): the result (a new reference); Py_None-marked NULL with no error
 * when the reference raised an Exception (then counted as unchecked, with ``out``) */
static PyObject *reference(PyObject *session, PyObject *ref_ops, PyObject *hook,
                           PyObject *call, PyObject *out, int *unchecked) {
    *unchecked = 0;
    PyObject *fn = PyObject_GetAttr(ref_ops, hook);
    if (!fn)
        return NULL;
    PyObject *want = PyObject_Call(fn, call, NULL);
    Py_DECREF(fn);
    if (want || !PyErr_ExceptionMatches(PyExc_Exception))
        return want;
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback)
        PyException_SetTraceback(value, traceback);
    PyObject *said = PyObject_CallMethodObjArgs(session, s_unchecked, hook, out, value, NULL);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    if (!said)
        return NULL;
    Py_DECREF(said);
    *unchecked = 1;
    return NULL;
}

/* the leaves of nested lists and tuples, appended to ``into`` */
static int flatten(PyObject *value, PyObject *into) {
    if (PyList_Check(value) || PyTuple_Check(value)) {
        PyObject *items = PySequence_Fast(value, "");
        if (!items)
            return -1;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items); i++)
            if (flatten(PySequence_Fast_GET_ITEM(items, i), into) < 0) {
                Py_DECREF(items);
                return -1;
            }
        Py_DECREF(items);
        return 0;
    }
    return PyList_Append(into, value);
}

/* hasattr(value, "shape") (attrs.c's has_attr), what shadow mode takes for a backend
 * array: 1 or 0, -1 with an error other than AttributeError raised */
static int has_shape(PyObject *value) {
    return has_attr(value, s_shape);
}

/* What calls.host_args puts for one argument: its host copy where it is an array, else
 * the value itself (*made, a new reference): 1, 0 for an array not read (left to
 * Python), -1 with an error raised */
static int host_copy(PyObject *fetched, PyObject *value, PyObject **made) {
    if (value == Py_None) {
        *made = Py_NewRef(value);
        return 1;
    }
    PyObject *copy = fetched_of(fetched, value);
    if (copy) {
        *made = Py_NewRef(copy);
        return 1;
    }
    if (PyErr_Occurred())
        return -1;
    int array = has_shape(value);
    if (array)  /* an array that was not read (0), or an error (-1) */
        return array < 0 ? -1 : 0;
    *made = Py_NewRef(value);
    return 1;
}

/* The reference's arguments of a call: the host copies read before an
 * in-place call (``host``, a list), else the call's arguments with each array (and each
 * array of a list) replaced by its host copy; a device index made ``ref_index``. A new
 * tuple; NULL with no error raised where an array was not read (left to Python). */
static PyObject *general_call(PyObject *entry, PyObject *spec, PyObject *host,
                              PyObject *fetched, PyObject *ref_index) {
    PyObject *kinds = PyObject_GetAttr(spec, s_kinds), *source = NULL, *call = NULL;
    if (!kinds)
        return NULL;
    if (host != Py_None)
        source = Py_NewRef(host);
    else if (!(source = PyObject_GetAttr(entry, s_args)))
        goto failed;
    if (!PyTuple_Check(kinds) || !(PyTuple_Check(source) || PyList_Check(source))
        || PySequence_Fast_GET_SIZE(source) != PyTuple_GET_SIZE(kinds))
        goto left;
    Py_ssize_t n = PyTuple_GET_SIZE(kinds);
    if (!(call = PyTuple_New(n)))
        goto failed;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *kind = PyTuple_GET_ITEM(kinds, i);
        PyObject *value = PySequence_Fast_GET_ITEM(source, i);
        PyObject *made = NULL;
        if (!PyUnicode_Check(kind))
            goto left;
        if (!PyUnicode_CompareWithASCIIString(kind, "device")) {
            made = Py_NewRef(ref_index);
        } else if (host != Py_None || value == Py_None) {
            made = Py_NewRef(value);
        } else if (!PyUnicode_CompareWithASCIIString(kind, "array")) {
            int kept = host_copy(fetched, value, &made);
            if (kept <= 0) {
                if (kept < 0)
                    goto failed;
                goto left;
            }
        } else if (!PyUnicode_CompareWithASCIIString(kind, "list")) {
            if (!PyList_Check(value) && !PyTuple_Check(value))
                goto left;
            Py_ssize_t m = PySequence_Fast_GET_SIZE(value);
            if (!(made = PyList_New(m)))
                goto failed;
            for (Py_ssize_t j = 0; j < m; j++) {
                PyObject *copy = NULL;
                int kept = host_copy(fetched, PySequence_Fast_GET_ITEM(value, j), &copy);
                if (kept <= 0) {
                    Py_DECREF(made);
                    if (kept < 0)
                        goto failed;
                    goto left;
                }
                PyList_SET_ITEM(made, j, copy);
            }
        } else if (!PyUnicode_CompareWithASCIIString(kind, "value")) {
            made = Py_NewRef(value);
        } else {
            goto left;  /* (from_numpy's host array: Python's path copies it) */
        }
        PyTuple_SET_ITEM(call, i, made);
    }
    Py_DECREF(kinds);
    Py_DECREF(source);
    return call;
left:   /* (no error raised: left to Python) */
failed: /* (an error raised) */
    Py_XDECREF(call);
    Py_DECREF(kinds);
    Py_XDECREF(source);
    return NULL;
}

/* A call (its outputs one array or several, in lists; lists, a device index or an
 * in-place write among its arguments): 1 checked and counted, 0 left to Python (*ran
 * set to the reference's result where it ran), -1 an error raised */
static int settle_general(PyObject *session, PyObject *entry, PyObject *spec, PyObject *host,
                          PyObject *fetched, PyObject *ref_ops, PyObject *by_dtype,
                          PyObject *ndarray, PyObject *asarray, PyObject *ref_index,
                          PyObject **ran) {
    int result = -1, n = 0;
    PyObject *hook = NULL, *out = NULL, *call = NULL, *want = NULL, *got_leaves = NULL,
             *want_leaves = NULL, *rows[MOST_OUTPUTS];
    double errors[MOST_OUTPUTS][2];
    if (!(hook = PyObject_GetAttr(spec, s_hook)) || !(out = PyObject_GetAttr(entry, s_out)))
        goto done;
    if (!(call = general_call(entry, spec, host, fetched, ref_index))) {
        result = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    int unchecked;
    if (!(want = reference(session, ref_ops, hook, call, out, &unchecked))) {
        result = unchecked ? 1 : -1;
        goto done;
    }
    *ran = Py_NewRef(want);  /* (until it is all counted here) */
    result = 0;
    if (!(got_leaves = PyList_New(0)) || !(want_leaves = PyList_New(0))
        || flatten(out, got_leaves) < 0 || flatten(want, want_leaves) < 0) {
        result = -1;
        goto done;
    }
    Py_ssize_t count = PyList_GET_SIZE(got_leaves);
    if (count == 0 || count > MOST_OUTPUTS || PyList_GET_SIZE(want_leaves) != count)
        goto done;  /* (no output, or unlike counts: Python's path says so) */
    for (; n < count; n++) {
        PyObject *g = PyList_GET_ITEM(got_leaves, n), *w = PyList_GET_ITEM(want_leaves, n);
        if (g == Py_None || w == Py_None)
            goto done;
        PyObject *got = fetched_of(fetched, g);
        if (!got) {
            result = PyErr_Occurred() ? -1 : 0;
            goto done;
        }
        int verdict = judge_output(session, hook, got, w, by_dtype, ndarray, asarray, &rows[n],
                                   &errors[n][0], &errors[n][1]);
        if (verdict != 1) {
            result = verdict;
            goto done;
        }
    }
    for (int k = 0; k < n; k++)
        if (passed(rows[k], errors[k][0], errors[k][1]) < 0) {
            result = -1;
            goto done;
        }
    result = counted(rows[n - 1]) < 0 ? -1 : 1;
done:
    if (result != 0)
        Py_CLEAR(*ran);
    for (int k = 0; k < n; k++)
        Py_DECREF(rows[k]);
    Py_XDECREF(hook);
    Py_XDECREF(out);
    Py_XDECREF(call);
    Py_XDECREF(want);
    Py_XDECREF(got_leaves);
    Py_XDECREF(want_leaves);
    return result;
}

/* One pending call: 1 checked and counted, 0 left to Python (*ran: the reference's result
 * where it ran), -1 an error raised */
static int settle_entry(PyObject *session, PyObject *entry, PyObject *fetched,
                        PyObject *ref_ops, PyObject *by_dtype, PyObject *ndarray,
                        PyObject *asarray, PyObject *ref_index, PyObject *uncompared,
                        PyObject **ran) {
    int result = -1;
    PyObject *host = NULL, *spec = NULL, *hook = NULL;
    if (!(host = PyObject_GetAttr(entry, s_host)) || !(spec = PyObject_GetAttr(entry, s_spec))
        || !(hook = PyObject_GetAttr(spec, s_hook)))
        goto done;
    result = 0;
    int skip = PySet_Contains(uncompared, hook);
    if (skip) {  /* (only shapes compare: Python's path) */
        result = skip < 0 ? -1 : 0;
        goto done;
    }
    int flags[2];
    PyObject *names[2] = {s_sync, s_returns_none};
    for (int k = 0; k < 2; k++) {
        PyObject *flag = PyObject_GetAttr(spec, names[k]);
        flags[k] = flag ? PyObject_IsTrue(flag) : -1;
        Py_XDECREF(flag);
        if (flags[k]) {  /* a to_numpy, or a write with no result: Python's path */
            result = flags[k] < 0 ? -1 : 0;
            goto done;
        }
    }
    if (host != Py_None) {  /* read with to_numpy_many, which has since read wrong */
        PyObject *many = PyObject_GetAttr(entry, s_many), *all = NULL;
        int read_many = many ? PyObject_IsTrue(many) : -1, still = 1;
        if (read_many == 1) {
            all = PyObject_GetAttr(session, s_session_many);
            still = all ? PyObject_IsTrue(all) : -1;
        }
        Py_XDECREF(many);
        Py_XDECREF(all);
        if (read_many < 0 || still < 0) {
            result = -1;
            goto done;
        }
        if (!still)
            goto done;
    }
    result = settle_general(session, entry, spec, host, fetched, ref_ops, by_dtype, ndarray,
                            asarray, ref_index, ran);
done:
    Py_XDECREF(host);
    Py_XDECREF(spec);
    Py_XDECREF(hook);
    return result;
}

/* The calls of ``pending`` checked and counted here, in the order given (batch.py gives
 * them grouped by hook); returns what is left to Python, in that order (batch.py puts it
 * back in call order): entries, or (entry, the reference's result). */
PyObject *fastnn_settle(PyObject *session, PyObject *pending, PyObject *fetched,
                        PyObject *ref_ops, PyObject *by_dtype, PyObject *ndarray,
                        PyObject *asarray, PyObject *ref_index, PyObject *uncompared) {
    if (interned() < 0)
        return NULL;
    if (!PyList_Check(pending) || !PyDict_Check(fetched) || !PyDict_Check(by_dtype)
        || !PyType_Check(ndarray) || !PyAnySet_Check(uncompared)) {
        PyErr_SetString(PyExc_TypeError, "fastnn_settle: expected (session, list, dict, ops, "
                                         "dict, ndarray type, asarray, index, set)");
        return NULL;
    }
    PyObject *left = PyList_New(0);
    if (!left)
        return NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(pending); k++) {
        PyObject *entry = PyList_GET_ITEM(pending, k), *ran = NULL;
        Py_INCREF(entry);
        int status = settle_entry(session, entry, fetched, ref_ops, by_dtype, ndarray, asarray,
                                  ref_index, uncompared, &ran);
        if (status == 0) {
            PyObject *item = ran ? PyTuple_Pack(2, entry, ran) : Py_NewRef(entry);
            if (!item || PyList_Append(left, item) < 0)
                status = -1;
            Py_XDECREF(item);
        }
        Py_XDECREF(ran);
        Py_DECREF(entry);
        if (status < 0) {
            Py_DECREF(left);
            return NULL;
        }
    }
    return left;
}
