/*
 * The time series of report / stats --chart / --timeline, binned in C during a kernel's one pass: what
 * engine/series.py's SeriesCollector (the reference) collects, format-neutral. Shared by both kernels
 * (workq/_kernel.c through workq/kernel/series.c, kestrel/_kernel.c): each includes it once and feeds it its own
 * events — sa_tick / sa_untimed for each record (its kind and time), sa_move for a queue's live items, sa_hist_add
 * for a wait or run time, sa_finding for each finding — and defines the Python type SeriesAccType with its own
 * record step (SA_COMMON_METHODS: finding, result, memory).
 *
 * The binning follows SeriesCollector: records per bin by kind, bins widened along the widths given (neighbours
 * merged) whenever the records span more than max_bins (the empty bins between them included), the depth sampled
 * per bin on a clock that never goes back (a later sample wins when bins merge), every error / warning counted in
 * the bin of the last timed record before it and the first max_marks kept as marks; records without a time
 * counted by kind (in order of their first).
 *
 * The includer defines before it: SA_KINDS (record kinds 0..SA_KINDS-1), SA_BYTES_HASH(s, n) (a uint64_t hash of
 * a queue name), SA_EXT (its own fields of SeriesAcc, may be empty), SA_EXT_FREE(a) and SA_EXT_MEMORY(a) (their
 * release and bytes), the types i128 / u128 (__int128), and includes <Python.h> and _cgrow.h.
 *
 * Memory: at most max_bins + 1 bins, one entry per queue, the depth samples (deduplicated at each widening),
 * max_marks marks, and what SA_EXT holds. Times are int64 ns within +-2**62 (the years 1824..2116): a caller
 * that meets a time outside sets `overflow` and its caller runs the reference.
 */
#ifndef WQTOOL_SERIES_H
#define WQTOOL_SERIES_H

#define SA_TMAX ((int64_t)1 << 62)
#define SA_MAXW 32                      /* widths and edges the constructor takes at most */
#define SA_NS 1000000000LL

typedef struct {
    int64_t idx;                        /* bin number: [origin + idx * width, origin + (idx + 1) * width) */
    uint64_t n[SA_KINDS];               /* records by kind */
    uint64_t damage;                    /* findings (error, warning) */
} SBin;

typedef struct {
    int64_t bin;
    uint32_t q;
    int64_t v;
} SDepth;

typedef struct {
    uint64_t hash;                      /* first: sa_qindex reads it there */
    uint32_t off, len;                  /* the name in the arena */
    int64_t now, peak;
    uint8_t dirty;
    uint64_t stamp;                     /* dedupe of the depth samples */
    size_t pos;
} SQueue;

typedef struct {
    uint64_t b[SA_MAXW + 1];
    uint64_t count;
    i128 total, min, max;
} SHist;

typedef struct {
    PyObject_HEAD
    Py_ssize_t max_bins, max_marks;
    int64_t widths[SA_MAXW];            /* s */
    int nwidths;
    i128 edges[SA_MAXW];                /* ns */
    int nedges;
    int have_origin, have_last, have_first, have_clock, have_cur, overflow;
    int64_t origin, width, last_t, first, newest, clock, cur;
    SBin *bins;
    size_t nbins, bins_cap, hit;        /* hit: the slot of the last record's bin (< nbins), or (size_t)-1 */
    int64_t hit_lo, hit_hi;
    uint8_t seen[SA_KINDS];
    int kinds[SA_KINDS], nkinds;
    uint64_t untimed[SA_KINDS];         /* records without a time, by kind */
    int untimed_order[SA_KINDS], nuntimed;
    SDepth *dep;
    size_t ndep, dep_cap;
    uint64_t stamp;
    SQueue *qs;
    size_t nq, q_cap;
    uint32_t *qslots;                   /* 0 empty, else queue + 1 */
    size_t qmask;
    char *qarena;
    size_t qa_n, qa_cap;
    uint32_t *dirty;
    size_t ndirty, dirty_cap;
    SHist wait, run;
    PyObject *marks;                    /* [(time_ns | None, code, severity, path, offset)] */
    SA_EXT
} SeriesAcc;

static PyTypeObject SeriesAccType;

static inline int64_t sa_floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static inline void sa_hist_add(SeriesAcc *a, SHist *h, i128 ns)
{
    if (ns < 0)
        ns = 0;                         /* a clock stepped back: counted as no time at all */
    int i = 0;
    while (i < a->nedges && ns >= a->edges[i])
        i++;
    h->b[i]++;
    if (h->count == 0 || ns < h->min)
        h->min = ns;
    if (h->count == 0 || ns > h->max)
        h->max = ns;
    h->count++;
    h->total += ns;
}


/* ---- queues: interned by name, in order of their first move */

/* an open-addressing index (0 empty, else queue + 1) of the queues, a quarter full at most; NULL and MemoryError */
static uint32_t *sa_qindex(SeriesAcc *a)
{
    size_t cap = 16;
    while (cap < a->nq * 4)
        cap *= 2;
    uint32_t *s = PyMem_Calloc(cap, sizeof(uint32_t));
    if (s == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (size_t k = 0; k < a->nq; k++) {
        size_t i = (size_t)a->qs[k].hash & (cap - 1);
        while (s[i])
            i = (i + 1) & (cap - 1);
        s[i] = (uint32_t)(k + 1);
    }
    a->qmask = cap - 1;
    return s;
}

static int sa_queue(SeriesAcc *a, const uint8_t *s, size_t n, uint32_t *out)
{
    uint64_t h = SA_BYTES_HASH(s, n);
    if (a->qslots != NULL) {
        for (size_t i = (size_t)h & a->qmask;; i = (i + 1) & a->qmask) {
            uint32_t v = a->qslots[i];
            if (v == 0)
                break;
            SQueue *q = &a->qs[v - 1];
            if (q->hash == h && q->len == n && memcmp(a->qarena + q->off, s, n) == 0) {
                *out = v - 1;
                return 0;
            }
        }
    }
    if (a->nq >= 0xFFFFFFF0u || a->qa_n + n > 0xFFFFFFFFu) {
        PyErr_SetString(PyExc_OverflowError, "SeriesAcc: too many queues");
        return -1;
    }
    if (grow((void **)&a->qarena, &a->qa_cap, a->qa_n + n, 1, 256) < 0 ||
        grow((void **)&a->qs, &a->q_cap, a->nq + 1, sizeof(SQueue), 8) < 0)
        return -1;
    memcpy(a->qarena + a->qa_n, s, n);
    SQueue *q = &a->qs[a->nq];
    memset(q, 0, sizeof *q);
    q->hash = h;
    q->off = (uint32_t)a->qa_n;
    q->len = (uint32_t)n;
    a->qa_n += n;
    uint32_t k = (uint32_t)a->nq++;
    if (a->qslots == NULL || a->nq * 2 > a->qmask + 1) {
        uint32_t *sl = sa_qindex(a);
        if (sl == NULL)
            return -1;
        PyMem_Free(a->qslots);
        a->qslots = sl;
    } else {
        size_t i = (size_t)h & a->qmask;
        while (a->qslots[i])
            i = (i + 1) & a->qmask;
        a->qslots[i] = k + 1;
    }
    *out = k;
    return 0;
}

static int sa_move(SeriesAcc *a, const uint8_t *name, size_t n, int d)
{
    uint32_t k;
    if (sa_queue(a, name, n, &k) < 0)
        return -1;
    SQueue *q = &a->qs[k];
    q->now += d;
    if (q->now > q->peak)
        q->peak = q->now;
    if (!q->dirty) {
        if (grow((void **)&a->dirty, &a->dirty_cap, a->ndirty + 1, sizeof(uint32_t), 16) < 0)
            return -1;
        a->dirty[a->ndirty++] = k;
        q->dirty = 1;
    }
    return 0;
}


/* ---- bins */
static void sa_sample(SeriesAcc *a)
{
    if (a->ndirty == 0 || !a->have_cur)
        return;
    if (grow((void **)&a->dep, &a->dep_cap, a->ndep + a->ndirty, sizeof(SDepth), 64) < 0) {
        a->overflow = 2;                /* out of memory: the result is refused (MemoryError set) */
        return;
    }
    for (size_t k = 0; k < a->ndirty; k++) {
        SQueue *q = &a->qs[a->dirty[k]];
        a->dep[a->ndep++] = (SDepth){a->cur, a->dirty[k], q->now};
        q->dirty = 0;
    }
    a->ndirty = 0;
}

/* the samples of one bin: the last value per queue, in order of the queue's first sample (dict.update) */
static void sa_dedupe(SeriesAcc *a)
{
    size_t w = 0, k = 0;
    while (k < a->ndep) {
        int64_t b = a->dep[k].bin;
        uint64_t g = ++a->stamp;
        for (; k < a->ndep && a->dep[k].bin == b; k++) {
            SQueue *q = &a->qs[a->dep[k].q];
            if (q->stamp == g) {
                a->dep[q->pos].v = a->dep[k].v;
            } else {
                q->stamp = g;
                q->pos = w;
                a->dep[w++] = a->dep[k];
            }
        }
    }
    a->ndep = w;
}

/* the last bin holding records less the first (bins are kept in order): a page draws every bin between */
#define SA_SPAN(a) ((a)->bins[(a)->nbins - 1].idx - (a)->bins[0].idx)

static void sa_widen(SeriesAcc *a)
{
    sa_sample(a);
    while (SA_SPAN(a) >= a->max_bins) {
        int64_t w_s = a->width / SA_NS, nxt = 0;
        for (int i = 0; i < a->nwidths; i++)
            if (a->widths[i] > w_s) {
                nxt = a->widths[i];
                break;
            }
        int64_t nw = (nxt ? nxt : 2 * w_s) * SA_NS, old = a->width;
#define SA_TO(i) ((int64_t)(((i128)(i) * old - (((i128)(i) * old % nw) + nw) % nw) / nw))
        size_t w = 0;
        for (size_t k = 0; k < a->nbins; k++) {
            int64_t to = SA_TO(a->bins[k].idx);
            if (w > 0 && a->bins[w - 1].idx == to) {
                for (int c = 0; c < SA_KINDS; c++)
                    a->bins[w - 1].n[c] += a->bins[k].n[c];
                a->bins[w - 1].damage += a->bins[k].damage;
            } else {
                a->bins[w] = a->bins[k];
                a->bins[w++].idx = to;
            }
        }
        a->nbins = w;
        for (size_t k = 0; k < a->ndep; k++)
            a->dep[k].bin = SA_TO(a->dep[k].bin);
        if (a->have_cur)
            a->cur = SA_TO(a->cur);
#undef SA_TO
        a->width = nw;
    }
    sa_dedupe(a);
    a->hit = (size_t)-1;
}

/* the slot of t's bin, made (and the bins widened) when it is new; -1 and MemoryError */
static Py_ssize_t sa_bin(SeriesAcc *a, int64_t t)
{
    if (a->hit != (size_t)-1 && t >= a->hit_lo && t < a->hit_hi)
        return (Py_ssize_t)a->hit;
    if (!a->have_origin) {
        a->origin = t - (t % (86400 * SA_NS) + 86400 * SA_NS) % (86400 * SA_NS);
        a->have_origin = 1;
    }
    int64_t idx = sa_floordiv(t - a->origin, a->width);
    size_t lo = 0, hi = a->nbins;
    if (hi && a->bins[hi - 1].idx < idx)
        lo = hi;                        /* the usual case: a new bin at the end */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (a->bins[mid].idx < idx)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == a->nbins || a->bins[lo].idx != idx) {
        if (grow((void **)&a->bins, &a->bins_cap, a->nbins + 1, sizeof(SBin), 64) < 0)
            return -1;
        memmove(a->bins + lo + 1, a->bins + lo, (a->nbins - lo) * sizeof(SBin));
        memset(&a->bins[lo], 0, sizeof(SBin));
        a->bins[lo].idx = idx;
        a->nbins++;
        if (SA_SPAN(a) >= a->max_bins) {
            sa_widen(a);
            if (a->overflow == 2)
                return -1;
            return sa_bin(a, t);
        }
    }
    a->hit = lo;
    a->hit_lo = a->origin + a->bins[lo].idx * a->width;
    a->hit_hi = a->hit_lo + a->width;
    return (Py_ssize_t)lo;
}

/* One timed record of kind 0..SA_KINDS-1 at t (ns, within +-SA_TMAX: the caller checks): its bin, the clock of
   the depth samples (SeriesCollector.record before the step). 0, or -1 and an exception. */
static int sa_tick(SeriesAcc *a, int kind, int64_t t64)
{
    if (!a->seen[kind]) {
        a->seen[kind] = 1;
        a->kinds[a->nkinds++] = kind;
    }
    a->have_last = 1;
    a->last_t = t64;
    if (!a->have_first || t64 < a->first)
        a->first = t64;
    if (!a->have_first || t64 > a->newest)
        a->newest = t64;
    a->have_first = 1;
    Py_ssize_t slot = sa_bin(a, t64);
    if (slot < 0)
        return -1;
    a->bins[slot].n[kind]++;
    if (!a->have_clock || t64 > a->clock) {
        a->clock = t64;
        a->have_clock = 1;
        int64_t ci = a->bins[slot].idx;
        if (!a->have_cur || ci != a->cur) {
            sa_sample(a);
            if (a->overflow == 2)
                return -1;
            a->cur = ci;
            a->have_cur = 1;
        }
    }
    return 0;
}

/* One record of kind 0..SA_KINDS-1 without a time (SeriesCollector.record with t None) */
static inline void sa_untimed(SeriesAcc *a, int kind)
{
    if (!a->seen[kind]) {
        a->seen[kind] = 1;
        a->kinds[a->nkinds++] = kind;
    }
    if (a->untimed[kind]++ == 0)
        a->untimed_order[a->nuntimed++] = kind;
}

/* One finding (counted when severity is error or warning): in the bin of the last timed record; the first
   max_marks kept as marks. path: a str or None. 0, or -1 and an exception. */
static int sa_finding(SeriesAcc *a, const char *code, const char *severity, PyObject *path, Py_ssize_t offset,
                      int have_offset)
{
    if (a->overflow || (strcmp(severity, "error") != 0 && strcmp(severity, "warning") != 0))
        return 0;
    if (a->have_last) {
        Py_ssize_t slot = sa_bin(a, a->last_t);
        if (slot < 0)
            return -1;
        a->bins[slot].damage++;
    }
    if (PyList_GET_SIZE(a->marks) < a->max_marks) {
        PyObject *m = Py_BuildValue("(NssOO)", a->have_last ? PyLong_FromLongLong(a->last_t) : Py_NewRef(Py_None),
                                    code, severity, path,
                                    have_offset ? PyLong_FromSsize_t(offset) : Py_NewRef(Py_None));
        if (m == NULL)
            return -1;
        int r = PyList_Append(a->marks, m);
        Py_DECREF(m);
        return r;
    }
    return 0;
}

/* ---- the Python type */
static int sa_i64_seq(PyObject *seq, int64_t *out, int *n, const char *what)
{
    PyObject *f = PySequence_Fast(seq, what);
    if (f == NULL)
        return -1;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(f);
    if (k > SA_MAXW) {
        Py_DECREF(f);
        PyErr_Format(PyExc_ValueError, "SeriesAcc: at most %d %s", SA_MAXW, what);
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(f, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(f);
            return -1;
        }
        out[i] = v;
    }
    *n = (int)k;
    Py_DECREF(f);
    return 0;
}

static PyObject *sa_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"max_bins", "max_marks", "widths_s", "edges_ns", NULL};
    Py_ssize_t max_bins, max_marks;
    PyObject *widths, *edges;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "nnOO:SeriesAcc", kwlist, &max_bins, &max_marks, &widths, &edges))
        return NULL;
    if (max_bins < 2 || max_marks < 0) {   /* (bins -1 and 0, either side of the origin, never merge) */
        PyErr_SetString(PyExc_ValueError, "SeriesAcc: max_bins >= 2, max_marks >= 0");
        return NULL;
    }
    SeriesAcc *a = (SeriesAcc *)type->tp_alloc(type, 0);
    if (a == NULL)
        return NULL;
    int64_t e[SA_MAXW];
    if (sa_i64_seq(widths, a->widths, &a->nwidths, "widths") < 0 || sa_i64_seq(edges, e, &a->nedges, "edges") < 0 ||
        (a->marks = PyList_New(0)) == NULL) {
        Py_DECREF(a);
        return NULL;
    }
    for (int i = 0; i < a->nedges; i++)
        a->edges[i] = e[i];
    a->max_bins = max_bins;
    a->max_marks = max_marks;
    a->width = SA_NS;
    a->hit = (size_t)-1;
    return (PyObject *)a;
}

static void sa_dealloc(SeriesAcc *a)
{
    PyMem_Free(a->bins);
    PyMem_Free(a->dep);
    PyMem_Free(a->qs);
    PyMem_Free(a->qslots);
    PyMem_Free(a->qarena);
    PyMem_Free(a->dirty);
    SA_EXT_FREE(a);
    Py_XDECREF(a->marks);
    Py_TYPE(a)->tp_free((PyObject *)a);
}

static PyObject *sa_finding_m(SeriesAcc *a, PyObject *args)
{
    const char *code, *severity;
    PyObject *path, *off;
    if (!PyArg_ParseTuple(args, "ssOO:finding", &code, &severity, &path, &off))
        return NULL;
    Py_ssize_t o = 0;
    if (off != Py_None && (o = PyLong_AsSsize_t(off)) == -1 && PyErr_Occurred())
        return NULL;
    if (sa_finding(a, code, severity, path, o, off != Py_None) < 0)
        return NULL;
    Py_RETURN_NONE;
}


static PyObject *sa_u64list(const uint64_t *v, int n)
{
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *o = PyLong_FromUnsignedLongLong(v[i]);
        if (o == NULL) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, o);
    }
    return l;
}

/* a Python int of an i128 (a histogram's sum, min, max) */
static PyObject *sa_pylong_i128(i128 x)
{
    if (x >= (i128)INT64_MIN && x <= (i128)INT64_MAX)
        return PyLong_FromLongLong((long long)x);
    int neg = x < 0;
    u128 u = neg ? (u128)0 - (u128)x : (u128)x;
    PyObject *hi = PyLong_FromUnsignedLongLong((unsigned long long)(u >> 64));
    PyObject *lo = PyLong_FromUnsignedLongLong((unsigned long long)u);
    PyObject *sh = PyLong_FromLong(64);
    PyObject *t = NULL, *r = NULL;
    if (hi && lo && sh && (t = PyNumber_Lshift(hi, sh)) != NULL)
        r = PyNumber_Or(t, lo);
    Py_XDECREF(hi);
    Py_XDECREF(lo);
    Py_XDECREF(sh);
    Py_XDECREF(t);
    if (r && neg) {
        PyObject *m = PyNumber_Negative(r);
        Py_DECREF(r);
        r = m;
    }
    return r;
}

static PyObject *sa_hist_obj(SHist *h, int nb)
{
    PyObject *bl = sa_u64list(h->b, nb);
    if (bl == NULL)
        return NULL;
    if (h->count == 0)
        return Py_BuildValue("(NKNOO)", bl, (unsigned long long)0, PyLong_FromLong(0), Py_None, Py_None);
    return Py_BuildValue("(NKNNN)", bl, (unsigned long long)h->count, sa_pylong_i128(h->total), sa_pylong_i128(h->min),
                         sa_pylong_i128(h->max));
}

PyDoc_STRVAR(sa_result_doc,
"result() -> None when a time was beyond what it bins (the caller runs the reference), else (origin_ns | None,\n"
"width_ns, [(bin, [records by kind], findings)] by bin, [kinds in order of first appearance],\n"
"[(bin, queue, live jobs)] the depth samples in order, [(queue name, peak)] in order of the first move,\n"
"wait, run: ([buckets], count, sum_ns, min_ns | None, max_ns | None), first_ns | None, last_ns | None,\n"
"[marks], [(kind, records without a time)] in order of the first). The open depth samples are taken first\n"
"(SeriesCollector.close).");

static PyObject *sa_result(SeriesAcc *a, PyObject *unused)
{
    if (a->overflow == 2)
        return NULL;
    if (a->overflow)
        Py_RETURN_NONE;
    sa_sample(a);
    if (a->overflow == 2)
        return NULL;
    sa_dedupe(a);
    PyObject *bins = PyList_New((Py_ssize_t)a->nbins), *kinds = PyList_New(a->nkinds),
             *dep = PyList_New((Py_ssize_t)a->ndep), *qs = PyList_New((Py_ssize_t)a->nq), *w = NULL, *r = NULL,
             *ut = NULL;
    if (bins == NULL || kinds == NULL || dep == NULL || qs == NULL)
        goto fail;
    for (size_t k = 0; k < a->nbins; k++) {
        SBin *b = &a->bins[k];
        PyObject *n = sa_u64list(b->n, SA_KINDS);
        if (n == NULL)
            goto fail;
        PyObject *t = Py_BuildValue("(LNK)", (long long)b->idx, n, (unsigned long long)b->damage);
        if (t == NULL)
            goto fail;
        PyList_SET_ITEM(bins, (Py_ssize_t)k, t);
    }
    for (int i = 0; i < a->nkinds; i++)
        PyList_SET_ITEM(kinds, i, PyLong_FromLong(a->kinds[i]));
    for (size_t k = 0; k < a->ndep; k++) {
        PyObject *t = Py_BuildValue("(LIL)", (long long)a->dep[k].bin, (unsigned int)a->dep[k].q,
                                    (long long)a->dep[k].v);
        if (t == NULL)
            goto fail;
        PyList_SET_ITEM(dep, (Py_ssize_t)k, t);
    }
    for (size_t k = 0; k < a->nq; k++) {
        SQueue *q = &a->qs[k];
        PyObject *t = Py_BuildValue("(NL)", PyUnicode_DecodeLatin1(a->qarena + q->off, q->len, NULL),
                                    (long long)q->peak);
        if (t == NULL)
            goto fail;
        PyList_SET_ITEM(qs, (Py_ssize_t)k, t);
    }
    if ((w = sa_hist_obj(&a->wait, a->nedges + 1)) == NULL || (r = sa_hist_obj(&a->run, a->nedges + 1)) == NULL)
        goto fail;
    if ((ut = PyList_New(a->nuntimed)) == NULL)
        goto fail;
    for (int i = 0; i < a->nuntimed; i++) {
        int c = a->untimed_order[i];
        PyObject *t = Py_BuildValue("(iK)", c, (unsigned long long)a->untimed[c]);
        if (t == NULL)
            goto fail;
        PyList_SET_ITEM(ut, i, t);
    }
    return Py_BuildValue("(NLNNNNNNNNON)",
                         a->have_origin ? PyLong_FromLongLong(a->origin) : Py_NewRef(Py_None), (long long)a->width,
                         bins, kinds, dep, qs, w, r,
                         a->have_first ? PyLong_FromLongLong(a->first) : Py_NewRef(Py_None),
                         a->have_first ? PyLong_FromLongLong(a->newest) : Py_NewRef(Py_None), a->marks, ut);
fail:
    Py_XDECREF(ut);
    Py_XDECREF(bins);
    Py_XDECREF(kinds);
    Py_XDECREF(dep);
    Py_XDECREF(qs);
    Py_XDECREF(w);
    Py_XDECREF(r);
    return NULL;
}


static PyObject *sa_memory(SeriesAcc *a, PyObject *unused)
{
    size_t n = sizeof *a + a->bins_cap * sizeof(SBin) + a->dep_cap * sizeof(SDepth) + a->q_cap * sizeof(SQueue) +
               (a->qslots ? (a->qmask + 1) * sizeof(uint32_t) : 0) + a->qa_cap + a->dirty_cap * sizeof(uint32_t) +
               SA_EXT_MEMORY(a);
    return PyLong_FromSize_t(n);
}

/* the methods of every SeriesAcc; the includer adds its own record step */
#define SA_COMMON_METHODS \
    {"finding", (PyCFunction)sa_finding_m, METH_VARARGS, \
     "finding(code, severity, path, offset): one finding, in stream order (counted when error or warning)."}, \
    {"result", (PyCFunction)sa_result, METH_NOARGS, sa_result_doc}, \
    {"memory", (PyCFunction)sa_memory, METH_NOARGS, "Bytes allocated (bins, queues, samples, the format's own)."}

#endif
