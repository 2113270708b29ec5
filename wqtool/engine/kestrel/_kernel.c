/*
 * wqtool.engine.kestrel._kernel — optional C implementation of the Kestrel fast path's loop (fastreplay.py).
 *
 * KQueue.scan(data, pos, end, path, fno, index, out) -> (index, pos) applies the records of data[pos:end] as
 * KestrelReplay (replay.py, the reference) does — the same queue / open transactions / xid counter / op counts /
 * applied, the same findings (built by calling the constructors of kestrel/replay.py and appended through
 * out.append) — and returns at the first record it does not take (damage, a legacy opcode, a reused open xid),
 * untouched, for fastreplay.fast_run to hand to the reference reader. Items are fixed-size C records (times, xid, where the data lies: file number,
 * offset, length) in a pool with a free list; the queue is a ring of item numbers, the open transactions an
 * int32 -> item map that remembers insertion order: memory follows the items still there, never the records.
 * KQueue.export(views, paths, Item) hands them back as Item objects, their data read from the files' views.
 * tests/engine/kestrel/test_fastreplay.py holds it equal to the reference path, damaged journals included.
 *
 * With a SeriesAcc (../_series.h, the binning shared with the workq kernel) scan also feeds report / stats --chart
 * / --timeline during the same pass: each record's opcode and add time (untimed when it has none: removes, confirms,
 * an add at 0), the change of the queue's and the open transactions' sizes it made (engine/series.py's SizeProbe
 * around KestrelReplay.apply, the reference: "queued" first, then "open") and the findings it builds.
 * tests/engine/kestrel/test_series_c.py holds the Series equal to the reference's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "../_cgrow.h"
#include "consts.h"   /* the opcodes, generated from wqtool/formats/kestrel.py */
#include <stdint.h>
#include <string.h>

#ifndef __SIZEOF_INT128__
#error "wqtool.engine.kestrel._kernel needs __int128 (the series' histograms); the reference path is used instead"
#endif
typedef __int128 i128;
typedef unsigned __int128 u128;

/* ---- the time series (../_series.h): kinds are the opcodes; two queues, "queued" and "open" */
static uint64_t fnv_hash(const uint8_t *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ULL;
    return h ^ (h >> 29);
}
#define SA_KINDS 10
#define SA_BYTES_HASH(s, n) fnv_hash(s, n)
#define SA_EXT
#define SA_EXT_FREE(a) ((void)(a))
#define SA_EXT_MEMORY(a) ((size_t)0)
#include "../_series.h"

static PyMethodDef sa_methods[] = {
    SA_COMMON_METHODS,
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SeriesAccType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "wqtool.engine.kestrel._kernel.SeriesAcc",
    .tp_basicsize = sizeof(SeriesAcc),
    .tp_dealloc = (destructor)sa_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SeriesAcc(max_bins, max_marks, widths_s, edges_ns): the time series of one pass, binned in C\n"
              "(engine/series.py's SeriesCollector), fed by KQueue.scan (the step of a record: SizeProbe's).",
    .tp_methods = sa_methods,
    .tp_new = sa_new,
};

typedef struct {
    int64_t add, exp;
    uint64_t off;       /* the record's offset in file fno; its data starts hdr bytes further */
    int32_t xid;
    uint32_t fno, len;
    uint32_t next_free;
    uint8_t hdr;
} KItem;

typedef struct {
    int32_t key;
    uint32_t item;      /* item number + 1; 0: empty */
    uint64_t seq;       /* insertion order */
} OpenSlot;

typedef struct {
    PyObject_HEAD
    KItem *items;
    size_t nitems, cap_items;
    uint32_t free_head;         /* item number + 1 of a free item; 0: none */
    uint32_t *ring;             /* the queue: item numbers, head .. head + count - 1 (mod cap) */
    size_t cap, head, count;
    OpenSlot *open;
    size_t omask, ocount;
    uint64_t oseq;
    int32_t counter;
    uint64_t ops[10];
    uint64_t bytes[10];         /* bytes of the records by opcode */
    uint64_t applied;
    SeriesAcc *acc;             /* during a scan given one: the series it feeds (borrowed), else NULL */
} KQueue;

static PyTypeObject KQueueType;

/* grow(): ../_cgrow.h */

/* ---- items */
static int64_t item_new(KQueue *k)
{
    if (k->free_head) {
        uint32_t i = k->free_head - 1;
        k->free_head = k->items[i].next_free;
        return i;
    }
    if (k->nitems >= 0xFFFFFFF0u) {
        PyErr_SetString(PyExc_OverflowError, "KQueue: too many items");
        return -1;
    }
    if (grow((void **)&k->items, &k->cap_items, k->nitems + 1, sizeof(KItem), 1024) < 0)
        return -1;
    return (int64_t)k->nitems++;
}

static void item_free(KQueue *k, uint32_t i)
{
    k->items[i].next_free = k->free_head;
    k->free_head = i + 1;
}

/* ---- the queue (a ring) */
static int ring_room(KQueue *k)
{
    if (k->count < k->cap)
        return 0;
    size_t nc = k->cap ? k->cap * 2 : 1024;
    uint32_t *r = PyMem_Malloc(nc * sizeof(uint32_t));
    if (r == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < k->count; i++)
        r[i] = k->ring[(k->head + i) & (k->cap - 1)];
    PyMem_Free(k->ring);
    k->ring = r;
    k->cap = nc;
    k->head = 0;
    return 0;
}

static int push_back(KQueue *k, uint32_t i)
{
    if (ring_room(k) < 0)
        return -1;
    k->ring[(k->head + k->count) & (k->cap - 1)] = i;
    k->count++;
    return 0;
}

static int push_front(KQueue *k, uint32_t i)
{
    if (ring_room(k) < 0)
        return -1;
    k->head = (k->head + k->cap - 1) & (k->cap - 1);
    k->ring[k->head] = i;
    k->count++;
    return 0;
}

static uint32_t pop_front(KQueue *k)
{
    uint32_t i = k->ring[k->head];
    k->head = (k->head + 1) & (k->cap - 1);
    k->count--;
    return i;
}

/* ---- the open transactions: int32 xid -> item, linear probing with backward-shift deletion */
static inline size_t xhash(int32_t x, size_t mask)
{
    uint64_t h = (uint64_t)(uint32_t)x * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h >> 32) & mask;
}

static OpenSlot *open_find(KQueue *k, int32_t x)
{
    if (k->open == NULL)
        return NULL;
    size_t i = xhash(x, k->omask);
    while (k->open[i].item) {
        if (k->open[i].key == x)
            return &k->open[i];
        i = (i + 1) & k->omask;
    }
    return NULL;
}

static int open_put(KQueue *k, int32_t x, uint32_t item)   /* x is not in the map */
{
    if (k->open == NULL || (k->ocount + 1) * 2 > k->omask + 1) {
        size_t cap = k->open ? (k->omask + 1) * 2 : 64;
        OpenSlot *n = PyMem_Calloc(cap, sizeof(OpenSlot));
        if (n == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (size_t i = 0; k->open && i <= k->omask; i++) {
            if (!k->open[i].item)
                continue;
            size_t j = xhash(k->open[i].key, cap - 1);
            while (n[j].item)
                j = (j + 1) & (cap - 1);
            n[j] = k->open[i];
        }
        PyMem_Free(k->open);
        k->open = n;
        k->omask = cap - 1;
    }
    size_t i = xhash(x, k->omask);
    while (k->open[i].item)
        i = (i + 1) & k->omask;
    k->open[i].key = x;
    k->open[i].item = item + 1;
    k->open[i].seq = k->oseq++;
    k->ocount++;
    return 0;
}

/* remove x; its item number, or -1 when it is not open */
static int64_t open_pop(KQueue *k, int32_t x)
{
    OpenSlot *s = open_find(k, x);
    if (s == NULL)
        return -1;
    uint32_t item = s->item - 1;
    size_t i = (size_t)(s - k->open), j = i;
    for (;;) {                   /* backward shift: keep every later entry reachable from its home slot */
        j = (j + 1) & k->omask;
        if (!k->open[j].item)
            break;
        size_t home = xhash(k->open[j].key, k->omask);
        if (((j - home) & k->omask) >= ((j - i) & k->omask)) {
            k->open[i] = k->open[j];
            i = j;
        }
    }
    k->open[i].item = 0;
    k->ocount--;
    return item;
}

/* ---- findings: the constructors of kestrel/replay.py */
static PyObject *replay_mod;

static int lookups(void)
{
    if (replay_mod == NULL && (replay_mod = PyImport_ImportModule("wqtool.engine.kestrel.replay")) == NULL)
        return -1;
    return 0;
}

/* a finding into the series: its code, severity, path, offset */
static int series_finding(SeriesAcc *a, PyObject *f)
{
    PyObject *code = PyObject_GetAttrString(f, "code"), *sev = code ? PyObject_GetAttrString(f, "severity") : NULL,
             *path = sev ? PyObject_GetAttrString(f, "path") : NULL,
             *off = path ? PyObject_GetAttrString(f, "offset") : NULL;
    int r = -1;
    if (off != NULL) {
        const char *c = PyUnicode_AsUTF8(code), *v = c ? PyUnicode_AsUTF8(sev) : NULL;
        Py_ssize_t o = 0;
        if (v != NULL && (off == Py_None || (o = PyLong_AsSsize_t(off)) != -1 || !PyErr_Occurred()))
            r = sa_finding(a, c, v, path, o, off != Py_None);
    }
    Py_XDECREF(code);
    Py_XDECREF(sev);
    Py_XDECREF(path);
    Py_XDECREF(off);
    return r;
}

static int emit(KQueue *k, PyObject *out, PyObject *f)
{
    if (f == NULL)
        return -1;
    if (k->acc != NULL && series_finding(k->acc, f) < 0) {
        Py_DECREF(f);
        return -1;
    }
    PyObject *r = PyObject_CallMethod(out, "append", "(O)", f);
    Py_DECREF(f);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

static int f_empty(KQueue *k, PyObject *out, PyObject *path, Py_ssize_t pos, long long index, int rt, int32_t xid)
{
    PyObject *what = rt ? PyUnicode_FromFormat("REMOVE_TENTATIVE_XID %d", (int)xid) : PyUnicode_FromString("REMOVE");
    if (what == NULL)
        return -1;
    PyObject *f = PyObject_CallMethod(replay_mod, "empty_finding", "OnLO", path, pos, index, what);
    Py_DECREF(what);
    return emit(k, out, f);
}

static int f_unknown(KQueue *k, PyObject *out, PyObject *path, Py_ssize_t pos, long long index, const char *what,
                     int32_t xid, int cont)
{
    PyObject *f;
    if (cont) {
        PyObject *extra = PyObject_GetAttrString(replay_mod, "_CONTINUE_UNKNOWN");
        if (extra == NULL)
            return -1;
        if (!PyTuple_Check(extra) || PyTuple_GET_SIZE(extra) != 2) {
            Py_DECREF(extra);
            PyErr_SetString(PyExc_TypeError, "replay._CONTINUE_UNKNOWN must be a pair");
            return -1;
        }
        f = PyObject_CallMethod(replay_mod, "unknown_xid_finding", "OnLsiOO", path, pos, index, what, (int)xid,
                                PyTuple_GET_ITEM(extra, 0), PyTuple_GET_ITEM(extra, 1));
        Py_DECREF(extra);
    } else {
        f = PyObject_CallMethod(replay_mod, "unknown_xid_finding", "OnLsi", path, pos, index, what, (int)xid);
    }
    return emit(k, out, f);
}

static int f_xid0(KQueue *k, PyObject *out, PyObject *path, Py_ssize_t pos, long long index)
{
    return emit(k, out, PyObject_CallMethod(replay_mod, "continue_xid0_finding", "OnL", path, pos, index));
}

/* ---- scan */
static inline int32_t le32(const unsigned char *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static inline int64_t le64(const unsigned char *p)      /* one load (the byte loop was not merged into one) */
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return (int64_t)v;
}

/* a new item for the ADDX block ending the `hdr`-byte header of the record at `pos` (ADDX: 21, ADD_XID and
   CONTINUE: 25; the block's add and expiry times are its last 16 header bytes); -1 with an exception set */
static int64_t item_add(KQueue *k, const unsigned char *d, Py_ssize_t pos, uint8_t hdr, int32_t size, int32_t xid,
                        uint32_t fno)
{
    int64_t i = item_new(k);
    if (i < 0)
        return -1;
    KItem *it = &k->items[i];
    it->add = le64(d + pos + hdr - 16);
    it->exp = le64(d + pos + hdr - 8);
    it->off = (uint64_t)pos;
    it->hdr = hdr;
    it->len = (uint32_t)(size - 16);
    it->xid = xid;
    it->fno = fno;
    return i;
}

/* the series' view of a record before it is applied: its opcode and add time (ms, 0: none; as Format.facts:
   add_time * 10**6 ns). 0, or -1 and an exception */
static int series_tick(SeriesAcc *a, int op, int64_t add_ms)
{
    if (a->overflow)
        return 0;
    if (add_ms == 0) {
        sa_untimed(a, op);
        return 0;
    }
    i128 t = (i128)add_ms * 1000000;
    if (t < -SA_TMAX || t > SA_TMAX) {
        a->overflow = 1;                /* beyond the bins: the caller runs the reference */
        return 0;
    }
    return sa_tick(a, op, (int64_t)t);
}

/* ... and after it: what it changed of the queue's and the open transactions' sizes (SizeProbe: "queued" first) */
static int series_moves(SeriesAcc *a, const KQueue *k, size_t q0, size_t o0)
{
    if (a->overflow)
        return 0;
    int dq = (int)((int64_t)k->count - (int64_t)q0), dopen = (int)((int64_t)k->ocount - (int64_t)o0);
    if (dq && sa_move(a, (const uint8_t *)"queued", 6, dq) < 0)
        return -1;
    if (dopen && sa_move(a, (const uint8_t *)"open", 4, dopen) < 0)
        return -1;
    return 0;
}

/* scan's loop over the records of d[*ppos:end]: 0 when it stops (end, or a record it does not take: *ppos, *pindex
   are that record's), -1 with an exception set. SERIES is a constant where it is called: the loop is compiled twice,
   verify's without the series' work (a byte count per opcode, the series' calls) */
static inline __attribute__((always_inline)) int scan_loop(KQueue *k, const unsigned char *d, Py_ssize_t *ppos,
                                                           Py_ssize_t end, PyObject *path, unsigned int fno,
                                                           long long *pindex, PyObject *out, uint64_t *papplied,
                                                           SeriesAcc *acc, const int SERIES)
{
    Py_ssize_t pos = *ppos;
    long long index = *pindex;
    uint64_t applied = 0;
    int r = 0;
/* the series' view of the record once it is taken (before its findings: they follow it in the reference) */
#define TICK(add_ms)                                                                                               \
    do {                                                                                                           \
        if (SERIES && series_tick(acc, c, (add_ms)) < 0)                                                           \
            goto fail;                                                                                             \
    } while (0)
    while (pos < end) {
        int c = d[pos];
        Py_ssize_t rem = end - pos, nxt;
        size_t q0 = SERIES ? k->count : 0, o0 = SERIES ? k->ocount : 0;
        if (c == OP_ADDX) {                                            /* ADDX */
            if (rem < 21)
                goto stop;
            int32_t size = le32(d + pos + 1);
            if (size < 16 || size > rem - 5)
                goto stop;
            nxt = pos + 5 + size;
            TICK(le64(d + pos + 5));
            int64_t i = item_add(k, d, pos, 21, size, 0, fno);
            if (i < 0)
                goto fail;
            if (push_back(k, (uint32_t)i) < 0)
                goto fail;
            applied++;
        } else if (c == OP_REMOVE) {                                     /* REMOVE */
            nxt = pos + 1;
            TICK(0);
            if (k->count) {
                item_free(k, pop_front(k));
                applied++;
            } else if (f_empty(k, out, path, pos, index, 0, 0) < 0) {
                goto fail;
            }
        } else if (c == OP_REMOVE_TENTATIVE_XID || c == OP_CONFIRM_REMOVE || c == OP_UNREMOVE || c == OP_SAVE_XID) {
            if (rem < 5)
                goto stop;
            int32_t xid = le32(d + pos + 1);
            nxt = pos + 5;
            if (c == OP_REMOVE_TENTATIVE_XID) {                                        /* REMOVE_TENTATIVE_XID */
                if (k->count) {
                    if (open_find(k, xid) != NULL)
                        goto stop;                               /* KQ-XID-REUSED: the reference reports it */
                    TICK(0);
                    uint32_t i = pop_front(k);
                    k->items[i].xid = xid;
                    if (open_put(k, xid, i) < 0)
                        goto fail;
                    k->counter = xid;
                    applied++;
                } else {
                    TICK(0);
                    k->counter = xid;
                    if (f_empty(k, out, path, pos, index, 1, xid) < 0)
                        goto fail;
                }
            } else if (c == OP_CONFIRM_REMOVE) {                                 /* CONFIRM_REMOVE */
                TICK(0);
                int64_t i = open_pop(k, xid);
                if (i < 0) {
                    if (f_unknown(k, out, path, pos, index, "CONFIRM_REMOVE", xid, 0) < 0)
                        goto fail;
                } else {
                    item_free(k, (uint32_t)i);
                    applied++;
                }
            } else if (c == OP_UNREMOVE) {                                 /* UNREMOVE */
                TICK(0);
                int64_t i = open_pop(k, xid);
                if (i < 0) {
                    if (f_unknown(k, out, path, pos, index, "UNREMOVE", xid, 0) < 0)
                        goto fail;
                } else {
                    if (push_front(k, (uint32_t)i) < 0)
                        goto fail;
                    applied++;
                }
            } else {                                             /* SAVE_XID */
                TICK(0);
                k->counter = xid;
                applied++;
            }
        } else if (c == OP_CONTINUE || c == OP_ADD_XID) {                           /* CONTINUE, ADD_XID */
            if (rem < 25)
                goto stop;
            int32_t xid = le32(d + pos + 1), size = le32(d + pos + 5);
            if (size < 16 || size > rem - 9)
                goto stop;
            nxt = pos + 9 + size;
            TICK(le64(d + pos + 9));
            if (c == OP_CONTINUE) {
                if (xid == 0 && f_xid0(k, out, path, pos, index) < 0)
                    goto fail;
                int64_t o = open_pop(k, xid);
                if (o < 0) {
                    if (f_unknown(k, out, path, pos, index, "CONTINUE", xid, 1) < 0)
                        goto fail;
                } else {
                    item_free(k, (uint32_t)o);
                }
            }
            int64_t i = item_add(k, d, pos, 25, size, c == OP_CONTINUE ? 0 : xid, fno);
            if (i < 0)
                goto fail;
            if (push_back(k, (uint32_t)i) < 0)
                goto fail;
            applied++;
        } else {                                                 /* legacy opcodes, or not an opcode */
            goto stop;
        }
        if (SERIES) {
            if ((k->count != q0 || k->ocount != o0) && series_moves(acc, k, q0, o0) < 0)
                goto fail;
            k->bytes[c] += (uint64_t)(nxt - pos);
        }
        k->ops[c]++;
        index++;
        pos = nxt;
    }
#undef TICK
    goto stop;
fail:
    r = -1;
stop:
    *ppos = pos;
    *pindex = index;
    *papplied += applied;
    return r;
}

PyDoc_STRVAR(scan_doc,
"scan(data, pos, end, path, fno, index, out, series=None) -> (index, pos)\n\n"
"The fast path's loop in C over data[pos:end] (file number fno of the set). It stops at the first record it\n"
"does not take — damage, a legacy opcode, a reused open xid — and returns (index, pos) of that record, nothing\n"
"of it applied; pos == end: the file is done. fastreplay.fast_run has the reference reader judge that spot (the\n"
"damage finding and where records resume) and calls scan again there. Findings go to out.append. series: a\n"
"SeriesAcc fed each record taken (kind, time, the sizes' moves) and each finding built.");

static PyObject *kq_scan(KQueue *k, PyObject *args)
{
    PyObject *data, *path, *out, *series = Py_None;
    Py_ssize_t end;
    unsigned int fno;
    long long index;
    Py_ssize_t pos;
    if (!PyArg_ParseTuple(args, "OnnOILO|O:scan", &data, &pos, &end, &path, &fno, &index, &out, &series))
        return NULL;
    if (series != Py_None && !PyObject_TypeCheck(series, &SeriesAccType)) {
        PyErr_SetString(PyExc_TypeError, "scan: series must be None or a _kernel.SeriesAcc");
        return NULL;
    }
    if (lookups() < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    SeriesAcc *acc = series == Py_None ? NULL : (SeriesAcc *)series;
    k->acc = acc;
    uint64_t applied = 0;
    PyObject *ret = NULL;
    if (end > view.len || end < 0 || pos < 0) {
        PyErr_SetString(PyExc_ValueError, "scan: pos before the data or end past its end");
        goto done;
    }
    const unsigned char *d = view.buf;
    if ((acc == NULL ? scan_loop(k, d, &pos, end, path, fno, &index, out, &applied, NULL, 0)
                     : scan_loop(k, d, &pos, end, path, fno, &index, out, &applied, acc, 1)) < 0)
        goto done;
    ret = Py_BuildValue("(Ln)", index, pos);
done:
    k->applied += applied;
    k->acc = NULL;
    PyBuffer_Release(&view);
    return ret;
}

/* the item as item_type(add_time, expiry, data, xid, path, offset), its data read from views[fno] */
static PyObject *item_object(KQueue *k, uint32_t i, PyObject *views, PyObject *paths, PyObject *item_type)
{
    KItem *it = &k->items[i];
    if (it->fno >= (uint32_t)PyList_GET_SIZE(views) || it->fno >= (uint32_t)PyList_GET_SIZE(paths)) {
        PyErr_SetString(PyExc_IndexError, "export: no view for an item's file");
        return NULL;
    }
    Py_buffer b;
    if (PyObject_GetBuffer(PyList_GET_ITEM(views, it->fno), &b, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *data = NULL;
    if ((uint64_t)b.len < it->off + it->hdr + it->len)
        PyErr_SetString(PyExc_IndexError, "export: an item's data is past the end of its file's view");
    else
        data = PyBytes_FromStringAndSize((const char *)b.buf + it->off + it->hdr, (Py_ssize_t)it->len);
    PyBuffer_Release(&b);
    if (data == NULL)
        return NULL;
    return PyObject_CallFunction(item_type, "LLNiOK", (long long)it->add, (long long)it->exp, data, (int)it->xid,
                                 PyList_GET_ITEM(paths, it->fno), (unsigned long long)it->off);
}

static int seq_cmp(const void *a, const void *b)
{
    const OpenSlot *x = *(const OpenSlot *const *)a, *y = *(const OpenSlot *const *)b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

PyDoc_STRVAR(export_doc,
"export(views, paths, item_type) -> (queue, open, counter, op_counts, applied): the queue head -> tail and the open\n"
"transactions [(xid, item)] in the order they were opened, each item_type(add_time, expiry, data, xid, path,\n"
"offset) with its data read from views[file number] (the files' buffers, still open).");

static PyObject *kq_export(KQueue *k, PyObject *args)
{
    PyObject *views, *paths, *item_type;
    if (!PyArg_ParseTuple(args, "O!O!O:export", &PyList_Type, &views, &PyList_Type, &paths, &item_type))
        return NULL;
    PyObject *q = PyList_New((Py_ssize_t)k->count), *o = PyList_New(0), *ops = PyList_New(10), *ret = NULL;
    OpenSlot **slots = NULL;
    if (q == NULL || o == NULL || ops == NULL)
        goto done;
    for (size_t i = 0; i < k->count; i++) {
        PyObject *t = item_object(k, k->ring[(k->head + i) & (k->cap - 1)], views, paths, item_type);
        if (t == NULL)
            goto done;
        PyList_SET_ITEM(q, (Py_ssize_t)i, t);
    }
    slots = PyMem_Malloc((k->ocount ? k->ocount : 1) * sizeof(OpenSlot *));
    if (slots == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    size_t n = 0;
    for (size_t i = 0; k->open && i <= k->omask; i++)
        if (k->open[i].item)
            slots[n++] = &k->open[i];
    qsort(slots, n, sizeof(OpenSlot *), seq_cmp);
    for (size_t i = 0; i < n; i++) {
        PyObject *t = item_object(k, slots[i]->item - 1, views, paths, item_type);
        PyObject *pair = t ? Py_BuildValue("(iN)", (int)slots[i]->key, t) : NULL;
        if (pair == NULL || PyList_Append(o, pair) < 0) {
            Py_XDECREF(pair);
            goto done;
        }
        Py_DECREF(pair);
    }
    for (int i = 0; i < 10; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(k->ops[i]);
        if (v == NULL)
            goto done;
        PyList_SET_ITEM(ops, i, v);
    }
    ret = Py_BuildValue("(OOiOK)", q, o, (int)k->counter, ops, (unsigned long long)k->applied);
done:
    PyMem_Free(slots);
    Py_XDECREF(q);
    Py_XDECREF(o);
    Py_XDECREF(ops);
    return ret;
}

static PyObject *kq_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    if (!PyArg_ParseTuple(args, ":KQueue"))
        return NULL;
    return type->tp_alloc(type, 0);
}

static void kq_dealloc(KQueue *k)
{
    PyMem_Free(k->items);
    PyMem_Free(k->ring);
    PyMem_Free(k->open);
    Py_TYPE(k)->tp_free((PyObject *)k);
}

static PyObject *kq_op_bytes(KQueue *k, PyObject *unused)
{
    return sa_u64list(k->bytes, 10);
}

static PyMethodDef kq_methods[] = {
    {"scan", (PyCFunction)kq_scan, METH_VARARGS, scan_doc},
    {"op_bytes", (PyCFunction)kq_op_bytes, METH_NOARGS, "The bytes of the records scanned, by opcode."},
    {"export", (PyCFunction)kq_export, METH_VARARGS, export_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject KQueueType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "wqtool.engine.kestrel._kernel.KQueue",
    .tp_basicsize = sizeof(KQueue),
    .tp_dealloc = (destructor)kq_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A Kestrel queue replayed by the C loop (see fastreplay.py).",
    .tp_methods = kq_methods,
    .tp_new = kq_new,
};


PyDoc_STRVAR(walk_doc,
"walk(data, pos, end, index, stop, kinds, npick) -> (index, pos, picked, first_ms, last_ms)\n\n"
"The records of data[pos:end] framed as scan frames them, not replayed: --as-of first|last (the earliest and latest\n"
"add time, ms, 0 being no time; None, None when no record had one), record numbers up to an offset and dump's\n"
"selection. It stops where scan would (damage, a legacy opcode: the reference reader reads that spot), at the\n"
"first record at or after `stop` (None: no stop) and after `npick` picks (-1: no limit). index: the number of the\n"
"record at pos, counted on; picked: [(offset, index)] of the records whose opcode is in the bit mask `kinds`.");

static PyObject *k_walk(PyObject *self, PyObject *args)
{
    PyObject *data, *stop_o;
    Py_ssize_t pos, end, npick;
    long long index;
    unsigned long kinds;
    if (!PyArg_ParseTuple(args, "OnnLOkn:walk", &data, &pos, &end, &index, &stop_o, &kinds, &npick))
        return NULL;
    Py_ssize_t stop = PY_SSIZE_T_MAX;
    if (stop_o != Py_None && (stop = PyLong_AsSsize_t(stop_o)) == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *picked = PyList_New(0), *ret = NULL;
    if (picked == NULL)
        goto done;
    if (end > view.len || end < 0 || pos < 0) {
        PyErr_SetString(PyExc_ValueError, "walk: pos before the data or end past its end");
        goto done;
    }
    const unsigned char *d = view.buf;
    int64_t lo = 0, hi = 0;
    int have = 0;
    while (pos < end && pos < stop) {
        int c = d[pos];
        Py_ssize_t rem = end - pos, nxt, at = -1;
        if (c == OP_ADDX || c == OP_CONTINUE || c == OP_ADD_XID) {
            int sz = c == OP_ADDX ? 1 : 5;          /* where the block's size lies; the block (times first) after it */
            if (rem < sz + 20)
                break;
            int32_t size = le32(d + pos + sz);
            if (size < 16 || size > rem - sz - 4)
                break;
            at = pos + sz + 4;
            nxt = at + size;
        } else if (c == OP_REMOVE) {
            nxt = pos + 1;
        } else if (c == OP_REMOVE_TENTATIVE_XID || c == OP_CONFIRM_REMOVE || c == OP_UNREMOVE || c == OP_SAVE_XID) {
            if (rem < 5)
                break;
            nxt = pos + 5;
        } else {
            break;
        }
        if (at >= 0) {
            int64_t t = le64(d + at);
            if (t) {
                if (!have || t < lo)
                    lo = t;
                if (!have || t > hi)
                    hi = t;
                have = 1;
            }
        }
        if (kinds & (1ul << c))
            PICK_THEN_STOP(picked, pos, index, nxt, npick);   /* ../_cgrow.h */
        index++;
        pos = nxt;
    }
    if (have)
        ret = Py_BuildValue("(LnOLL)", index, pos, picked, (long long)lo, (long long)hi);
    else
        ret = Py_BuildValue("(LnOOO)", index, pos, picked, Py_None, Py_None);
done:
    Py_XDECREF(picked);
    PyBuffer_Release(&view);
    return ret;
}

static PyMethodDef module_methods[] = {
    {"walk", k_walk, METH_VARARGS, walk_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "wqtool.engine.kestrel._kernel",
    "Optional C implementation of the Kestrel fast path's loop (see fastreplay.py).", -1, module_methods, NULL, NULL,
    NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernel(void)
{
    if (PyType_Ready(&KQueueType) < 0 || PyType_Ready(&SeriesAccType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL)
        return NULL;
    Py_INCREF(&KQueueType);
    if (PyModule_AddObject(m, "KQueue", (PyObject *)&KQueueType) < 0) {
        Py_DECREF(&KQueueType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&SeriesAccType);
    if (PyModule_AddObject(m, "SeriesAcc", (PyObject *)&SeriesAccType) < 0) {
        Py_DECREF(&SeriesAccType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
