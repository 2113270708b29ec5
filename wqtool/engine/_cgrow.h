/* Shared by the C kernels (workq/_kernel.c, kestrel/_kernel.c): grow a PyMem array to hold `need` elements of
 * `elem` bytes, doubling from `first` (overflow-checked). 0, or -1 with MemoryError set. And a walk's pick and stop. */
#ifndef WQTOOL_CGROW_H
#define WQTOOL_CGROW_H

#include <Python.h>

static int grow(void **p, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : first;
    while (c < need) {
        if (c > ((size_t)-1) / 4 / elem) {
            PyErr_NoMemory();
            return -1;
        }
        c *= 2;
    }
    void *q = PyMem_Realloc(*p, c * elem);
    if (q == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *p = q;
    *cap = c;
    return 0;
}

/* A walk's pick: (offset, record number) appended to `picked`; 1 when it now holds `npick` (the walk stops), 0 when
 * not, -1 with an exception set. */
static int pick(PyObject *picked, Py_ssize_t pos, long long index, Py_ssize_t npick)
{
    PyObject *t = Py_BuildValue("(nL)", pos, index);
    if (t == NULL || PyList_Append(picked, t) < 0) {
        Py_XDECREF(t);
        return -1;
    }
    Py_DECREF(t);
    return PyList_GET_SIZE(picked) == npick;
}

/* A walk's pick, then its stop, inside the walk's record loop: the record at `pos` (number `index`, the next at
 * `nxt`) is picked; on an error the walk jumps to its `done` label; once it holds `npick` records the walk steps past
 * this one and leaves the loop (a plain block, not do-while: its `break` is the loop's). */
#define PICK_THEN_STOP(picked, pos, index, nxt, npick)                                                             \
    {                                                                                                              \
        int full_ = pick(picked, pos, index, npick);                                                               \
        if (full_ < 0)                                                                                             \
            goto done;                                                                                             \
        if (full_) {                                                                                               \
            index++;                                                                                               \
            pos = nxt;                                                                                             \
            break;                                                                                                 \
        }                                                                                                          \
    }

#endif
