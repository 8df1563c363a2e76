/* hasattr() for shadow mode's C helpers: included by record.c and by bulk.c (for settle.c
 * and collect.c), each built into its own library. */

/* hasattr(o, name): 1 or 0, -1 with an error other than AttributeError raised */
static int has_attr(PyObject *o, PyObject *name) {
    PyObject *value = PyObject_GetAttr(o, name);
    if (value) {
        Py_DECREF(value);
        return 1;
    }
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
    PyErr_Clear();
    return 0;
}
