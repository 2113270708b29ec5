/* the time series of report / stats --chart / --timeline, binned during the scan (SeriesAcc; part of
   wqtool.engine.workq._kernel: a unity build, included by ../_kernel.c in order, before scan.c) */

/*
 * SeriesAcc: what engine/series.py's SeriesCollector collects from one pass — the binning is ../../_series.h,
 * shared with the Kestrel kernel — fed by the scan (sa_record for each record it takes, sa_finding for each
 * finding it builds) and by fastreplay.FastReplay for the records and findings the reference handles (the methods
 * record / finding). The step of a record — queue depth moves, a wait time, a run time — follows
 * engine/workq/series.py's WorkqProbe (the reference) from the job's state before and after the record.
 * tests/engine/workq/test_series_c.py holds the Series made from it (workq/series.py: series_of) equal to the
 * reference's on random and damaged logs.
 *
 * Memory beyond the shared part: one entry per leased job (id -> lease start: the run time's start).
 */

#define SA_KINDS (CMD_MAX + 1)          /* 0: an undecodable record, else the command */
#define SA_BYTES_HASH(s, n) bytes_hash(s, n)   /* jobtable.c */

typedef struct {
    uint8_t id[JOB_ID_SIZE];
    int64_t start;
    uint8_t used;
} SLease;

#define SA_EXT                                                                                                     \
    SLease *ls;                         /* leased jobs: id -> lease start */                                       \
    size_t lmask, lused;
#define SA_EXT_FREE(a) PyMem_Free((a)->ls)
#define SA_EXT_MEMORY(a) ((a)->ls ? ((a)->lmask + 1) * sizeof(SLease) : 0)

#include "../../_series.h"

/* ---- leased jobs: id -> lease start (linear probing, deletion by backward shift: no tombstones) */
static int sa_lease_grow(SeriesAcc *a)
{
    size_t cap = a->ls ? 2 * (a->lmask + 1) : 64;
    SLease *n = PyMem_Calloc(cap, sizeof(SLease));
    if (n == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (a->ls) {
        for (size_t k = 0; k <= a->lmask; k++)
            if (a->ls[k].used) {
                size_t i = (size_t)id_hash(a->ls[k].id) & (cap - 1);
                while (n[i].used)
                    i = (i + 1) & (cap - 1);
                n[i] = a->ls[k];
            }
        PyMem_Free(a->ls);
    }
    a->ls = n;
    a->lmask = cap - 1;
    return 0;
}

static int sa_lease_put(SeriesAcc *a, const uint8_t *id, int64_t start)
{
    if (a->ls == NULL || (a->lused + 1) * 2 > a->lmask + 1) {
        if (sa_lease_grow(a) < 0)
            return -1;
    }
    size_t i = (size_t)id_hash(id) & a->lmask;
    while (a->ls[i].used) {
        if (memcmp(a->ls[i].id, id, JOB_ID_SIZE) == 0) {
            a->ls[i].start = start;
            return 0;
        }
        i = (i + 1) & a->lmask;
    }
    memcpy(a->ls[i].id, id, JOB_ID_SIZE);
    a->ls[i].start = start;
    a->ls[i].used = 1;
    a->lused++;
    return 0;
}

/* remove the id's entry; 1 and its start in *start if it was there */
static int sa_lease_pop(SeriesAcc *a, const uint8_t *id, int64_t *start)
{
    if (a->ls == NULL)
        return 0;
    size_t m = a->lmask, i = (size_t)id_hash(id) & m;
    while (a->ls[i].used) {
        if (memcmp(a->ls[i].id, id, JOB_ID_SIZE) == 0) {
            *start = a->ls[i].start;
            size_t j = i;
            for (;;) {                  /* backward shift */
                j = (j + 1) & m;
                if (!a->ls[j].used)
                    break;
                size_t home = (size_t)id_hash(a->ls[j].id) & m;
                if (((j - home) & m) >= ((j - i) & m)) {
                    a->ls[i] = a->ls[j];
                    i = j;
                }
            }
            a->ls[i].used = 0;
            a->lused--;
            return 1;
        }
        i = (i + 1) & m;
    }
    return 0;
}


static inline int sa_done(int st) { return st == ST_COMPLETED || st == ST_FAILED; }

/* One record: kind 0..CMD_MAX (0 undecodable), time t; its job's state before and after (-1: not live), the
   attempts after, its queue name, its wait base (scheduled, else created), its id (NULL: none). 0, or -1 and
   an exception. WorkqProbe.after (engine/workq/series.py) is the reference of the step. */
static int sa_record(SeriesAcc *a, int kind, i128 t, int b, int s, uint32_t attempts, const uint8_t *name,
                     size_t nlen, int64_t base, const uint8_t *jid)
{
    if (a->overflow)
        return 0;
    if (t < -SA_TMAX || t > SA_TMAX) {
        a->overflow = 1;
        return 0;
    }
    int64_t t64 = (int64_t)t;
    if (sa_tick(a, kind, t64) < 0)                /* ../../_series.h */
        return -1;
    if (kind == 0 || jid == NULL)
        return 0;
    if (b < 0) {                        /* a new job (or none) */
        if (s >= 0 && !sa_done(s))
            return sa_move(a, name, nlen, 1);
        return 0;
    }
    if (s < 0) {                        /* gone: deleted, expired */
        int64_t st;
        sa_lease_pop(a, jid, &st);
        return sa_done(b) ? 0 : sa_move(a, name, nlen, -1);
    }
    if (s == b)
        return 0;
    if (s == ST_LEASED) {
        if (sa_lease_put(a, jid, t64) < 0)
            return -1;
        if (attempts == 1)
            sa_hist_add(a, &a->wait, (i128)t64 - base);
        return 0;
    }
    int64_t start = 0;
    int have_start = b == ST_LEASED && sa_lease_pop(a, jid, &start);
    int was = !sa_done(b), now = !sa_done(s);
    if (was && !now && sa_move(a, name, nlen, -1) < 0)
        return -1;
    if (now && !was && sa_move(a, name, nlen, 1) < 0)
        return -1;
    if (have_start && !now)
        sa_hist_add(a, &a->run, (i128)t64 - start);
    return 0;
}

static int sa_state_arg(PyObject *o, int *st)
{
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < -1 || v > ST_LEASED) {
        PyErr_SetString(PyExc_ValueError, "SeriesAcc.record: a job state is -1 (none) or 0..4");
        return -1;
    }
    *st = (int)v;
    return 0;
}

PyDoc_STRVAR(sa_record_doc,
"record(kind, time_ns, before, after, attempts, name, wait_base_ns, job_id): one record the reference replayed\n"
"(kind: 0 undecodable, else the command; before / after: its job's state before and after the replay applied\n"
"it, -1 when not live; attempts, name, wait base (scheduled, else created): the job's, or 0 / None / 0).");

static PyObject *sa_record_m(SeriesAcc *a, PyObject *args)
{
    int kind;
    PyObject *tobj, *bo, *so, *name, *baseo, *jido;
    unsigned int attempts;
    if (!PyArg_ParseTuple(args, "iOOOIOOO:record", &kind, &tobj, &bo, &so, &attempts, &name, &baseo, &jido))
        return NULL;
    if (kind < 0 || kind > CMD_MAX) {
        PyErr_SetString(PyExc_ValueError, "SeriesAcc.record: kind is 0..8");
        return NULL;
    }
    i128 t, base = 0;
    int b, s;
    if (as_i128(tobj, &t) < 0 || sa_state_arg(bo, &b) < 0 || sa_state_arg(so, &s) < 0 ||
        (baseo != Py_None && as_i128(baseo, &base) < 0))
        return NULL;
    if (base < INT64_MIN || base > INT64_MAX) {
        a->overflow = 1;
        Py_RETURN_NONE;
    }
    const uint8_t *nm = NULL, *jid = NULL;
    Py_ssize_t nlen = 0;
    if (name != Py_None) {
        if (!PyUnicode_Check(name) || PyUnicode_KIND(name) != PyUnicode_1BYTE_KIND) {
            PyErr_SetString(PyExc_TypeError, "SeriesAcc.record: a queue name is a latin-1 str");
            return NULL;
        }
        nm = PyUnicode_1BYTE_DATA(name);
        nlen = PyUnicode_GET_LENGTH(name);
    }
    if (jido != Py_None) {
        if (!PyBytes_Check(jido) || PyBytes_GET_SIZE(jido) != JOB_ID_SIZE) {
            PyErr_SetString(PyExc_TypeError, "a job id is 16 bytes");
            return NULL;
        }
        jid = (const uint8_t *)PyBytes_AS_STRING(jido);
    }
    if ((b >= 0 || s >= 0) && (nm == NULL || jid == NULL)) {
        PyErr_SetString(PyExc_ValueError, "SeriesAcc.record: a live job has a name and an id");
        return NULL;
    }
    if (sa_record(a, kind, t, b, s, attempts, nm, (size_t)nlen, (int64_t)base, jid) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef sa_methods[] = {
    {"record", (PyCFunction)sa_record_m, METH_VARARGS, sa_record_doc},
    SA_COMMON_METHODS,
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SeriesAccType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "wqtool.engine.workq._kernel.SeriesAcc",
    .tp_basicsize = sizeof(SeriesAcc),
    .tp_dealloc = (destructor)sa_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SeriesAcc(max_bins, max_marks, widths_s, edges_ns): the time series of one pass, binned in C\n"
              "(engine/series.py's SeriesCollector; the step of a record: engine/workq/series.py's WorkqProbe).",
    .tp_methods = sa_methods,
    .tp_new = sa_new,
};
