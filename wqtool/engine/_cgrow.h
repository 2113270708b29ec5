/* Shared by the C kernels (workq/_kernel.c, kestrel/_kernel.c): grow a PyMem array to hold `need` elements of
 * `elem` bytes, doubling from `first` (overflow-checked). 0, or -1 with MemoryError set. */
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

#endif
